// SPDX-License-Identifier: MIT
/*
 * FFN: one layer's SwiGLU block, with and without NORM and RESIDUAL, Y
 * aliasing X or not, m 1 and 17, every x/y type, eps default (1e-6) and
 * 1e-2 (large enough that ignoring it shows: ~1.5 %); q8_0 and f16
 * weights, hidden 96 (n_ff 160) from a client buffer (syshax_wdesc) and
 * hidden 320 (n_ff 416) from a GGUF file. The 16 jobs of a layer are
 * submitted at once (batched where their flags and eps agree).
 *
 * Tolerance: per row, ||Y - ref|| / ||ref|| <= 1e-4 plus the output
 * rounding (measured: <= 4e-7 with f32 output): three GEMMs in f32 and
 * f32 intermediates. With q8_0 weights the normed h and silu(g) * u are
 * quantized to 8-bit blocks again inside the engine; where its f32 value
 * and the reference's sit on either side of a rounding boundary one
 * activation moves by a step, and the row by up to ~0.5 %: there every
 * row must be within 2e-2 and at most 10 % of the rows beyond 1e-4
 * (t_check_q). A missing norm, norm weight, eps, residual or SwiGLU term,
 * or a wrong row, is off by > 0.05.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t.h"

#define FFN_TOL		1e-4
#define FFN_LOOSE	2e-2

/* Layer L's four tensors: gate, up, down, norm. */
struct layer {
	unsigned int idx, hid, nff;
	int dt;
	struct tw w[4];
};

static struct layer g_buf_layers[2] = {
	{ .idx = 0, .hid = 96, .nff = 160, .dt = SYSHAX_DT_Q8_0 },
	{ .idx = 1, .hid = 96, .nff = 160, .dt = SYSHAX_DT_F16 },
};
static struct layer g_file_layers[2] = {
	{ .idx = 3, .hid = 320, .nff = 416, .dt = SYSHAX_DT_Q8_0 },
	{ .idx = 4, .hid = 320, .nff = 416, .dt = SYSHAX_DT_F16 },
};
static uint64_t g_buf_id, g_file_id;

static void make_layer(struct layer *l, struct trng *r)
{
	char n[96];

	snprintf(n, sizeof(n), "blk.%u.ffn_gate.weight", l->idx);
	tw_rand(&l->w[0], r, n, l->dt, 2, l->hid, l->nff, 1,
		2.5 / sqrt(l->hid));
	snprintf(n, sizeof(n), "blk.%u.ffn_up.weight", l->idx);
	tw_rand(&l->w[1], r, n, l->dt, 2, l->hid, l->nff, 1,
		2.5 / sqrt(l->hid));
	snprintf(n, sizeof(n), "blk.%u.ffn_down.weight", l->idx);
	tw_rand(&l->w[2], r, n, l->dt, 2, l->nff, l->hid, 1,
		4.0 / sqrt(l->nff));
	snprintf(n, sizeof(n), "blk.%u.ffn_norm.weight", l->idx);
	tw_vec(&l->w[3], r, n, l->hid, 0.5, 1.5);
}

static int ffn_make(void)
{
	struct tw all[8];
	struct trng r;

	tr_seed(&r, 2);
	for (int i = 0; i < 2; i++) {
		make_layer(&g_buf_layers[i], &r);
		make_layer(&g_file_layers[i], &r);
	}
	for (int i = 0; i < 2; i++)
		memcpy(&all[i * 4], g_file_layers[i].w, sizeof(all[0]) * 4);
	return tw_write_gguf("ffn.gguf", all, 8) ? -1 : 0;
}

static void t_ffn_free(void)
{
	CU_ASSERT_EQUAL(t_free_wset(&g_c, g_buf_id), 0);
	CU_ASSERT_EQUAL(t_free_wset(&g_c, g_file_id), 0);
	g_buf_id = g_file_id = 0;
}

static int ffn_clean(void)
{
	for (int i = 0; i < 2; i++)
		for (int k = 0; k < 4; k++) {
			tw_free(&g_buf_layers[i].w[k]);
			tw_free(&g_file_layers[i].w[k]);
		}
	return 0;
}

static void t_ffn_load(void)
{
	struct tw all[8];

	CU_ASSERT_EQUAL_FATAL(ffn_make(), 0);
	for (int i = 0; i < 2; i++)
		memcpy(&all[i * 4], g_buf_layers[i].w, sizeof(all[0]) * 4);
	tc_reset(&g_c);
	CU_ASSERT_EQUAL(t_load_buffer(&g_c, all, 8, SYSHAX_QUANT_NONE,
				      &g_buf_id), 0);
	CU_ASSERT_EQUAL(t_load_file(&g_c, "ffn.gguf", SYSHAX_QUANT_DEFAULT,
				    &g_file_id), 0);
	CU_ASSERT(g_buf_id >= 1);
	CU_ASSERT(g_file_id >= 1);
	CU_ASSERT_NOT_EQUAL(g_buf_id, g_file_id);
}

void ref_ffn(const struct tw *w, uint32_t flags, double eps,
	     const double *x, size_t m, double *y)
{
	size_t hid = w[0].ne[0];
	double *h = malloc(m * hid * sizeof(*h));

	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	for (size_t r = 0; r < m; r++) {
		if (flags & SYSHAX_FFN_NORM)
			ref_rmsnorm(x + r * hid, w[3].ref, eps, hid,
				    h + r * hid);
		else
			memcpy(h + r * hid, x + r * hid, hid * sizeof(*h));
	}
	ref_swiglu(&w[0], &w[1], &w[2], 0, h, m, y);
	if (flags & SYSHAX_FFN_RESIDUAL)
		for (size_t i = 0; i < m * hid; i++)
			y[i] += x[i];
	free(h);
}

static void ffn_layer(uint64_t id, const struct layer *l, struct trng *r)
{
	enum { NJ = 16 };
	static const uint32_t flags[4] = {
		0, SYSHAX_FFN_NORM, SYSHAX_FFN_RESIDUAL,
		SYSHAX_FFN_NORM | SYSHAX_FFN_RESIDUAL,
	};
	struct syshax_job jobs[NJ];
	struct syshax_completion cpl[NJ];
	size_t hid = l->hid;
	double *xd[NJ];
	void *x[NJ], *y[NJ];
	int xt[NJ], yt[NJ];
	unsigned int m[NJ];
	bool alias[NJ];
	float eps[NJ];

	tc_reset(&g_c);
	t_tally_begin();
	for (int j = 0; j < NJ; j++) {
		struct syshax_ffn_params p = { .wset = id, .layer = l->idx };

		m[j] = j & 1 ? 17 : 1;
		alias[j] = j & 2;
		p.flags = flags[j / 4];
		eps[j] = j & 4 ? 1e-2f : 0.0f;
		xt[j] = j % 3;
		yt[j] = alias[j] ? xt[j] : (j / 3 + j) % 3;
		xd[j] = malloc(m[j] * hid * sizeof(double));
		x[j] = tc_alloc(&g_c, m[j] * hid * t_act_size(xt[j]) + 64);
		y[j] = alias[j] ? x[j] :
		       tc_alloc(&g_c, m[j] * hid * t_act_size(yt[j]) + 64);
		CU_ASSERT_FATAL(xd[j] && x[j] && y[j]);
		t_act_rand(r, xt[j], 1.0, x[j], m[j] * hid, xd[j]);
		t_sentinel((uint8_t *)y[j] + m[j] * hid * t_act_size(yt[j]),
			   64);
		p.m = m[j];
		p.x_type = (uint32_t)xt[j];
		p.y_type = (uint32_t)yt[j];
		p.eps = eps[j] != 0.0f ? syshax_f32_bits(eps[j]) : 0;
		tj_init(&jobs[j], SYSHAX_OP_FFN, &p, sizeof(p));
		tj_ref(&jobs[j], &g_c, x[j], m[j] * hid * t_act_size(xt[j]),
		       SYSHAX_ACCESS_READ);
		tj_ref(&jobs[j], &g_c, y[j], m[j] * hid * t_act_size(yt[j]),
		       SYSHAX_ACCESS_WRITE);
	}
	if (tc_run(&g_c, jobs, NJ, cpl))
		goto out;
	for (int j = 0; j < NJ; j++) {
		double *ref = malloc(m[j] * hid * sizeof(double));
		char what[160];

		CU_ASSERT_PTR_NOT_NULL_FATAL(ref);
		CU_ASSERT_EQUAL(cpl[j].status, 0);
		CU_ASSERT_EQUAL(cpl[j].result, m[j]);
		ref_ffn(l->w, flags[j / 4], eps[j] != 0.0f ? eps[j] : 1e-6,
			xd[j], m[j], ref);
		snprintf(what, sizeof(what), "FFN layer %u (%s, hidden %u) m=%u "
			 "flags=%u%s x=%s y=%s", l->idx, t_dt_name(l->dt), l->hid,
			 m[j], flags[j / 4], alias[j] ? " Y=X" : "",
			 t_dt_name(xt[j]), t_dt_name(yt[j]));
		if (cpl[j].status)
			;
		else if (l->dt == SYSHAX_DT_Q8_0 || l->dt == SYSHAX_DT_Q4_0)
			t_check_q(what, yt[j], y[j], ref, m[j], hid, FFN_TOL,
				  FFN_LOOSE);
		else
			t_check(what, yt[j], y[j], ref, m[j], hid, FFN_TOL);
		CU_ASSERT(t_sentinel_ok((uint8_t *)y[j] +
					m[j] * hid * t_act_size(yt[j]), 64));
		free(ref);
	}
	t_tally_end("FFN rows");
out:
	for (int j = 0; j < NJ; j++)
		free(xd[j]);
}

static void t_ffn_buffer_q8(void)
{
	struct trng r;

	CU_ASSERT_FATAL(g_buf_id != 0);
	tr_seed(&r, 21);
	ffn_layer(g_buf_id, &g_buf_layers[0], &r);
}

static void t_ffn_buffer_f16(void)
{
	struct trng r;

	CU_ASSERT_FATAL(g_buf_id != 0);
	tr_seed(&r, 22);
	ffn_layer(g_buf_id, &g_buf_layers[1], &r);
}

static void t_ffn_file_q8(void)
{
	struct trng r;

	CU_ASSERT_FATAL(g_file_id != 0);
	tr_seed(&r, 23);
	ffn_layer(g_file_id, &g_file_layers[0], &r);
}

static void t_ffn_file_f16(void)
{
	struct trng r;

	CU_ASSERT_FATAL(g_file_id != 0);
	tr_seed(&r, 24);
	ffn_layer(g_file_id, &g_file_layers[1], &r);
}

/* m 300 (more than one kernel call takes), Y = X in bf16. */
static void t_ffn_big(void)
{
	enum { M = 300 };
	const struct layer *l = &g_buf_layers[0];
	struct syshax_ffn_params p = {
		.wset = g_buf_id, .layer = l->idx, .m = M,
		.x_type = SYSHAX_DT_BF16, .y_type = SYSHAX_DT_BF16,
		.flags = SYSHAX_FFN_NORM | SYSHAX_FFN_RESIDUAL,
	};
	size_t hid = l->hid;
	struct syshax_job job;
	double *xd, *ref;
	struct trng r;
	void *x;

	CU_ASSERT_FATAL(g_buf_id != 0);
	tr_seed(&r, 25);
	tc_reset(&g_c);
	xd = malloc(M * hid * sizeof(double));
	ref = malloc(M * hid * sizeof(double));
	x = tc_alloc(&g_c, M * hid * 2);
	CU_ASSERT_FATAL(xd && ref && x);
	t_act_rand(&r, SYSHAX_DT_BF16, 1.0, x, M * hid, xd);
	tj_init(&job, SYSHAX_OP_FFN, &p, sizeof(p));
	tj_ref(&job, &g_c, x, M * hid * 2, SYSHAX_ACCESS_READ);
	tj_ref(&job, &g_c, x, M * hid * 2, SYSHAX_ACCESS_WRITE);
	CU_ASSERT_EQUAL(tc_run1(&g_c, &job, NULL), 0);
	ref_ffn(l->w, p.flags, 1e-6, xd, M, ref);
	t_tally_begin();
	t_check_q("FFN m=300 Y=X bf16", SYSHAX_DT_BF16, x, ref, M, hid,
		  FFN_TOL, FFN_LOOSE);
	t_tally_end("FFN m=300 rows");
	free(xd);
	free(ref);
}

int t_add_ffn(void)
{
	CU_pSuite s = CU_add_suite("FFN", NULL, ffn_clean);

	if (!s || !CU_add_test(s, "load (buffer, GGUF)", t_ffn_load) ||
	    !CU_add_test(s, "q8_0, hidden 96, n_ff 160 (buffer)",
			 t_ffn_buffer_q8) ||
	    !CU_add_test(s, "f16, hidden 96, n_ff 160 (buffer)",
			 t_ffn_buffer_f16) ||
	    !CU_add_test(s, "q8_0, hidden 320, n_ff 416 (GGUF)",
			 t_ffn_file_q8) ||
	    !CU_add_test(s, "f16, hidden 320, n_ff 416 (GGUF)",
			 t_ffn_file_f16) ||
	    !CU_add_test(s, "m 300 (two kernel calls), Y = X",
			 t_ffn_big) ||
	    !CU_add_test(s, "free the sets", t_ffn_free))
		return -1;
	return 0;
}
