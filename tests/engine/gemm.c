// SPDX-License-Identifier: MIT
/*
 * GEMM: Y = X . W^T for W in f32, f16, bf16, q8_0 and q4_0 from a GGUF
 * file; K 96 and 320 (not multiples of 256), N 13 and 37 (not multiples of
 * 8; 37 rows split over two NUMA pools at 32), m 1, 3 and 17, every x/y
 * type pair; the 27 jobs of one tensor are submitted at once, so the
 * engine batches rows of different jobs and types together. Down
 * projections (split by columns over the pools, not rows) too.
 *
 * Tolerance: per output row, ||Y - ref|| / ||ref|| <= 1e-4 plus the output
 * rounding (f16 2^-11, bf16 2^-8). The reference prepares the activations
 * as the kernels do (ref.c), so what is left is f32 summation over K <=
 * 320 terms (about sqrt(K) * 2^-24 ~ 1e-6, measured below 5e-7). A wrong
 * row, a missing block of K (>= 10 % of the terms) or a dropped scale is
 * off by more than 0.1.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t.h"

#define GEMM_TOL	1e-4

static const int g_wdt[] = {
	SYSHAX_DT_F32, SYSHAX_DT_F16, SYSHAX_DT_BF16, SYSHAX_DT_Q8_0,
	SYSHAX_DT_Q4_0,
};
static const unsigned int g_k[] = { 96, 320 }, g_n[] = { 13, 37 };
static const unsigned int g_m[] = { 1, 3, 17 };

#define NW	(T_ARRAY_SIZE(g_wdt) * T_ARRAY_SIZE(g_k) * T_ARRAY_SIZE(g_n))
#define NDOWN	3
#define NT	(NW + NDOWN)

static struct tw g_w[NT];
static uint64_t g_id;

static int gemm_make(void)
{
	static const struct { const char *name; int dt; unsigned int k, n; }
	down[NDOWN] = {
		{ "blk.0.ffn_down.weight", SYSHAX_DT_Q8_0, 320, 37 },
		{ "blk.1.ffn_down.weight", SYSHAX_DT_F32, 96, 13 },
		{ "blk.2.ffn_down.weight", SYSHAX_DT_Q4_0, 96, 37 },
	};
	struct trng r;
	size_t t = 0;
	char name[96];

	tr_seed(&r, 1);
	for (size_t a = 0; a < T_ARRAY_SIZE(g_wdt); a++)
		for (size_t b = 0; b < T_ARRAY_SIZE(g_k); b++)
			for (size_t c = 0; c < T_ARRAY_SIZE(g_n); c++, t++) {
				snprintf(name, sizeof(name),
					 "gemm.%s.k%u.n%u.weight",
					 t_dt_name(g_wdt[a]), g_k[b], g_n[c]);
				tw_rand(&g_w[t], &r, name, g_wdt[a], 2, g_k[b],
					g_n[c], 1, 1.7 / sqrt((double)g_k[b]));
			}
	for (size_t d = 0; d < NDOWN; d++, t++)
		tw_rand(&g_w[t], &r, down[d].name, down[d].dt, 2, down[d].k,
			down[d].n, 1, 1.7 / sqrt((double)down[d].k));
	return tw_write_gguf("gemm.gguf", g_w, NT) ? -1 : 0;
}

static void t_gemm_free(void)
{
	CU_ASSERT_EQUAL(t_free_wset(&g_c, g_id), 0);
	g_id = 0;
}

static int gemm_clean(void)
{
	for (size_t t = 0; t < NT; t++)
		tw_free(&g_w[t]);
	return 0;
}

static void t_gemm_load(void)
{
	CU_ASSERT_EQUAL_FATAL(gemm_make(), 0);
	CU_ASSERT_EQUAL(t_load_file(&g_c, "gemm.gguf", SYSHAX_QUANT_DEFAULT,
				    &g_id), 0);
	CU_ASSERT(g_id >= 1);
}

/* The 27 jobs of one tensor (3 m x 9 type pairs), all submitted at once. */
static void gemm_tensor(const struct tw *w, struct trng *r)
{
	enum { NJ = 27 };
	size_t k = w->ne[0], n = w->ne[1];
	struct syshax_job jobs[NJ];
	struct syshax_completion cpl[NJ];
	void *x[NJ], *y[NJ];
	double *xd[NJ];
	int xt[NJ], yt[NJ];
	unsigned int m[NJ];

	tc_reset(&g_c);
	for (int j = 0; j < NJ; j++) {
		struct syshax_gemm_params p = { .wset = g_id };

		m[j] = g_m[j / 9];
		xt[j] = j % 3;
		yt[j] = j / 3 % 3;
		xd[j] = malloc(m[j] * k * sizeof(double));
		x[j] = tc_alloc(&g_c, m[j] * k * t_act_size(xt[j]));
		y[j] = tc_alloc(&g_c, m[j] * n * t_act_size(yt[j]) + 64);
		CU_ASSERT_FATAL(xd[j] && x[j] && y[j]);
		t_act_rand(r, xt[j], 1.0, x[j], m[j] * k, xd[j]);
		/* Past Y: must stay as it is. */
		t_sentinel((uint8_t *)y[j] + m[j] * n * t_act_size(yt[j]), 64);
		p.m = m[j];
		p.x_type = (uint32_t)xt[j];
		p.y_type = (uint32_t)yt[j];
		snprintf(p.tensor, sizeof(p.tensor), "%s", w->name);
		tj_init(&jobs[j], SYSHAX_OP_GEMM, &p, sizeof(p));
		tj_ref(&jobs[j], &g_c, x[j], m[j] * k * t_act_size(xt[j]),
		       SYSHAX_ACCESS_READ);
		/* A longer ref than Y: nothing past Y may be written. */
		tj_ref(&jobs[j], &g_c, y[j], m[j] * n * t_act_size(yt[j]) + 64,
		       SYSHAX_ACCESS_WRITE);
	}
	if (tc_run(&g_c, jobs, NJ, cpl))
		goto out;
	for (int j = 0; j < NJ; j++) {
		double *ref = malloc(m[j] * n * sizeof(double));
		char what[160];

		CU_ASSERT_PTR_NOT_NULL_FATAL(ref);
		CU_ASSERT_EQUAL(cpl[j].status, 0);
		CU_ASSERT_EQUAL(cpl[j].result, m[j]);
		ref_gemm(w, 0, xd[j], m[j], ref);
		snprintf(what, sizeof(what), "GEMM %s m=%u x=%s y=%s", w->name,
			 m[j], t_dt_name(xt[j]), t_dt_name(yt[j]));
		if (!cpl[j].status)
			t_check(what, yt[j], y[j], ref, m[j], n, GEMM_TOL);
		CU_ASSERT(t_sentinel_ok((uint8_t *)y[j] +
					m[j] * n * t_act_size(yt[j]), 64));
		free(ref);
	}
out:
	for (int j = 0; j < NJ; j++)
		free(xd[j]);
}

static void gemm_dt(int dt)
{
	struct trng r;

	CU_ASSERT_FATAL(g_id != 0);
	tr_seed(&r, 100 + (uint64_t)dt);
	for (size_t t = 0; t < NT; t++)
		if (g_w[t].dt == dt && !strncmp(g_w[t].name, "gemm.", 5))
			gemm_tensor(&g_w[t], &r);
}

static void t_gemm_f32(void) { gemm_dt(SYSHAX_DT_F32); }
static void t_gemm_f16(void) { gemm_dt(SYSHAX_DT_F16); }
static void t_gemm_bf16(void) { gemm_dt(SYSHAX_DT_BF16); }
static void t_gemm_q8_0(void) { gemm_dt(SYSHAX_DT_Q8_0); }
static void t_gemm_q4_0(void) { gemm_dt(SYSHAX_DT_Q4_0); }

static void t_gemm_down(void)
{
	struct trng r;

	CU_ASSERT_FATAL(g_id != 0);
	tr_seed(&r, 200);
	for (size_t t = NW; t < NT; t++)
		gemm_tensor(&g_w[t], &r);
}

/* m 300: more rows than one kernel call takes (SHXK_GEMM_MAX_M 256),
 * above cpu_max_batch_size: run alone, in two chunks. */
static void t_gemm_big(void)
{
	static const char *const names[] = {
		"gemm.q8_0.k320.n37.weight", "gemm.f16.k96.n13.weight",
		"gemm.bf16.k96.n37.weight", "blk.0.ffn_down.weight",
	};
	enum { M = 300 };
	struct trng r;

	CU_ASSERT_FATAL(g_id != 0);
	tr_seed(&r, 300);
	for (size_t i = 0; i < T_ARRAY_SIZE(names); i++) {
		const struct tw *w = NULL;
		struct syshax_gemm_params p = {
			.wset = g_id, .m = M, .x_type = SYSHAX_DT_BF16,
			.y_type = (uint32_t)(i % 2 ? SYSHAX_DT_F32 :
					     SYSHAX_DT_F16),
		};
		struct syshax_job job;
		double *xd, *ref;
		void *x, *y;
		size_t k, n;

		for (size_t t = 0; t < NT; t++)
			if (!strcmp(g_w[t].name, names[i]))
				w = &g_w[t];
		CU_ASSERT_PTR_NOT_NULL_FATAL(w);
		k = w->ne[0];
		n = w->ne[1];
		tc_reset(&g_c);
		xd = malloc(M * k * sizeof(double));
		ref = malloc(M * n * sizeof(double));
		x = tc_alloc(&g_c, M * k * 2);
		y = tc_alloc(&g_c, M * n * 4);
		CU_ASSERT_FATAL(xd && ref && x && y);
		t_act_rand(&r, SYSHAX_DT_BF16, 1.0, x, M * k, xd);
		snprintf(p.tensor, sizeof(p.tensor), "%s", w->name);
		tj_init(&job, SYSHAX_OP_GEMM, &p, sizeof(p));
		tj_ref(&job, &g_c, x, M * k * 2, SYSHAX_ACCESS_READ);
		tj_ref(&job, &g_c, y, M * n * t_act_size((int)p.y_type),
		       SYSHAX_ACCESS_WRITE);
		CU_ASSERT_EQUAL(tc_run1(&g_c, &job, NULL), 0);
		ref_gemm(w, 0, xd, M, ref);
		t_check(w->name, (int)p.y_type, y, ref, M, n, GEMM_TOL);
		free(xd);
		free(ref);
	}
}

int t_add_gemm(void)
{
	CU_pSuite s = CU_add_suite("GEMM", NULL, gemm_clean);

	if (!s || !CU_add_test(s, "load the GGUF", t_gemm_load) ||
	    !CU_add_test(s, "f32 weights", t_gemm_f32) ||
	    !CU_add_test(s, "f16 weights", t_gemm_f16) ||
	    !CU_add_test(s, "bf16 weights", t_gemm_bf16) ||
	    !CU_add_test(s, "q8_0 weights", t_gemm_q8_0) ||
	    !CU_add_test(s, "q4_0 weights", t_gemm_q4_0) ||
	    !CU_add_test(s, "down projections (split by columns)",
			 t_gemm_down) ||
	    !CU_add_test(s, "m 300 (two kernel calls)", t_gemm_big) ||
	    !CU_add_test(s, "free the set", t_gemm_free))
		return -1;
	return 0;
}
