// SPDX-License-Identifier: MIT
/*
 * ATTN_DECODE: paged decode attention over the client's KV blocks. For
 * each GQA group size 1, 4, 8 (q_heads / kv_heads), head_dim 64 and 128,
 * and KV in f32, f16, bf16: a short job (2 kv heads, sequences of 17, 1,
 * 0 and 40 positions) and a long one (2 kv heads, 4500, 0 and 3
 * positions: the engine cuts the long context in chunks and merges them).
 * block_size 16, block tables scrambled (a random permutation of the
 * cache's blocks; every block, used or not, holds random values; table
 * entries past a sequence's length hold garbage the engine must not
 * read), q/out types rotating over f32/f16/bf16, the default scale and a
 * given one.
 *
 * Tolerance: per (sequence, head) output vector, ||out - ref|| / ||ref||
 * <= 1e-4 plus the output rounding; the f32 scores (head_dim <= 128 terms)
 * and the f32 softmax sums over <= 4500 positions stay below ~1e-5 of the
 * norm. A wrong block, position, head or a missing chunk is off by > 1e-2.
 * A sequence of length 0 must give exact zeros.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t.h"

#define ATTN_TOL	1e-4
#define BS		16

struct ajob {
	unsigned int seqs, qh, kvh, hd, nblocks, maxb;
	int kvt, qt, ot;
	float scale;		/* 0: default */
	const int32_t *lens;
	void *q, *k, *v, *bt, *ln, *out;
	double *qd, *kd, *vd;
	size_t qn, cache_n;
};

static void ajob_make(struct ajob *a, struct trng *r)
{
	unsigned int used = 0, *perm;
	int32_t *bt;

	a->qn = (size_t)a->seqs * a->qh * a->hd;
	for (unsigned int s = 0; s < a->seqs; s++)
		used += ((unsigned int)a->lens[s] + BS - 1) / BS;
	a->nblocks = used + 5;
	a->cache_n = (size_t)a->nblocks * BS * a->kvh * a->hd;
	a->qd = malloc(a->qn * sizeof(double));
	a->kd = malloc(a->cache_n * sizeof(double));
	a->vd = malloc(a->cache_n * sizeof(double));
	perm = malloc(a->nblocks * sizeof(*perm));
	a->q = tc_alloc(&g_c, a->qn * t_act_size(a->qt));
	a->k = tc_alloc(&g_c, a->cache_n * t_act_size(a->kvt));
	a->v = tc_alloc(&g_c, a->cache_n * t_act_size(a->kvt));
	a->bt = tc_alloc(&g_c, (size_t)a->seqs * a->maxb * 4);
	a->ln = tc_alloc(&g_c, a->seqs * 4);
	a->out = tc_alloc(&g_c, a->qn * t_act_size(a->ot) + 64);
	CU_ASSERT_FATAL(a->qd && a->kd && a->vd && perm && a->q && a->k &&
			a->v && a->bt && a->ln && a->out);
	t_act_rand(r, a->qt, 2.0, a->q, a->qn, a->qd);
	t_act_rand(r, a->kvt, 1.0, a->k, a->cache_n, a->kd);
	t_act_rand(r, a->kvt, 1.0, a->v, a->cache_n, a->vd);
	t_sentinel((uint8_t *)a->out + a->qn * t_act_size(a->ot), 64);
	/* A random permutation of the blocks. */
	for (unsigned int i = 0; i < a->nblocks; i++)
		perm[i] = i;
	for (unsigned int i = a->nblocks - 1; i > 0; i--) {
		unsigned int j = tr_u32(r) % (i + 1), t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}
	bt = a->bt;
	used = 0;
	for (unsigned int s = 0; s < a->seqs; s++) {
		unsigned int nb = ((unsigned int)a->lens[s] + BS - 1) / BS;

		for (unsigned int b = 0; b < a->maxb; b++)
			bt[s * a->maxb + b] = b < nb ? (int32_t)perm[used++] :
					      (b & 1 ? -1 : 0x7fffffff);
	}
	memcpy(a->ln, a->lens, a->seqs * 4);
	free(perm);
}

static void ajob_free(struct ajob *a)
{
	free(a->qd);
	free(a->kd);
	free(a->vd);
}

static void ajob_job(const struct ajob *a, struct syshax_job *job)
{
	struct syshax_attn_decode_params p = {
		.num_seqs = a->seqs, .q_heads = a->qh, .kv_heads = a->kvh,
		.head_dim = a->hd, .block_size = BS, .num_blocks = a->nblocks,
		.max_blocks = a->maxb, .kv_type = (uint32_t)a->kvt,
		.q_type = (uint32_t)a->qt, .o_type = (uint32_t)a->ot,
		.scale = a->scale != 0.0f ? syshax_f32_bits(a->scale) : 0,
	};

	tj_init(job, SYSHAX_OP_ATTN_DECODE, &p, sizeof(p));
	tj_ref(job, &g_c, a->q, a->qn * t_act_size(a->qt), SYSHAX_ACCESS_READ);
	tj_ref(job, &g_c, a->k, a->cache_n * t_act_size(a->kvt),
	       SYSHAX_ACCESS_READ);
	tj_ref(job, &g_c, a->v, a->cache_n * t_act_size(a->kvt),
	       SYSHAX_ACCESS_READ);
	tj_ref(job, &g_c, a->bt, (size_t)a->seqs * a->maxb * 4,
	       SYSHAX_ACCESS_READ);
	tj_ref(job, &g_c, a->ln, a->seqs * 4, SYSHAX_ACCESS_READ);
	tj_ref(job, &g_c, a->out, a->qn * t_act_size(a->ot),
	       SYSHAX_ACCESS_WRITE);
}

static void ajob_ref(const struct ajob *a, double *ref)
{
	const int32_t *bt = a->bt;
	unsigned int group = a->qh / a->kvh, maxlen = 0;
	double scale = a->scale != 0.0f ? a->scale :
		       (float)(1.0f / sqrtf((float)a->hd));
	double *sc;

	for (unsigned int s = 0; s < a->seqs; s++)
		maxlen = (unsigned int)a->lens[s] > maxlen ?
			 (unsigned int)a->lens[s] : maxlen;
	sc = malloc((maxlen + 1) * sizeof(*sc));
	CU_ASSERT_PTR_NOT_NULL_FATAL(sc);
	for (unsigned int s = 0; s < a->seqs; s++) {
		for (unsigned int h = 0; h < a->qh; h++) {
			const double *q = a->qd + ((size_t)s * a->qh + h) * a->hd;
			double *o = ref + ((size_t)s * a->qh + h) * a->hd;
			unsigned int kvh = h / group, len = (unsigned int)a->lens[s];
			double mx = -INFINITY, sum = 0.0;

			memset(o, 0, a->hd * sizeof(*o));
			for (unsigned int p = 0; p < len; p++) {
				size_t base = (((size_t)bt[s * a->maxb + p / BS] *
						BS + p % BS) * a->kvh + kvh) *
					      a->hd;
				double d = 0.0;

				for (unsigned int i = 0; i < a->hd; i++)
					d += q[i] * a->kd[base + i];
				sc[p] = d * scale;
				mx = fmax(mx, sc[p]);
			}
			for (unsigned int p = 0; p < len; p++) {
				size_t base = (((size_t)bt[s * a->maxb + p / BS] *
						BS + p % BS) * a->kvh + kvh) *
					      a->hd;
				double w = exp(sc[p] - mx);

				sum += w;
				for (unsigned int i = 0; i < a->hd; i++)
					o[i] += w * a->vd[base + i];
			}
			for (unsigned int i = 0; len && i < a->hd; i++)
				o[i] /= sum;
		}
	}
	free(sc);
}

static void attn_check(const struct ajob *a, const struct syshax_completion *c,
		       const char *what)
{
	double *ref = malloc(a->qn * sizeof(double));

	CU_ASSERT_PTR_NOT_NULL_FATAL(ref);
	CU_ASSERT_EQUAL(c->status, 0);
	CU_ASSERT_EQUAL(c->result, a->seqs);
	ajob_ref(a, ref);
	if (!c->status)
		t_check(what, a->ot, a->out, ref, (size_t)a->seqs * a->qh, a->hd,
			ATTN_TOL);
	CU_ASSERT(t_sentinel_ok((uint8_t *)a->out + a->qn * t_act_size(a->ot),
				64));
	free(ref);
}

static void attn_combo(unsigned int group, unsigned int hd, int kvt,
		       unsigned int idx)
{
	static const int32_t short_lens[] = { 17, 1, 0, 40 };
	static const int32_t long_lens[] = { 4500, 0, 3 };
	struct syshax_completion cpl[2];
	struct syshax_job jobs[2];
	struct ajob a[2] = {
		{ .seqs = 4, .kvh = 2, .qh = 2 * group, .maxb = 4,
		  .lens = short_lens },
		{ .seqs = 3, .kvh = 2, .qh = 2 * group,
		  .maxb = (4500 + BS - 1) / BS,
		  .lens = long_lens },
	};
	struct trng r;
	char what[160];

	tr_seed(&r, 400 + idx);
	tc_reset(&g_c);
	for (int j = 0; j < 2; j++) {
		a[j].hd = hd;
		a[j].kvt = kvt;
		a[j].qt = (int)(idx + (unsigned int)j) % 3;
		a[j].ot = (int)(idx / 3 + (unsigned int)j) % 3;
		a[j].scale = (idx + (unsigned int)j) & 1 ? 0.09f : 0.0f;
		ajob_make(&a[j], &r);
		ajob_job(&a[j], &jobs[j]);
	}
	if (!tc_run(&g_c, jobs, 2, cpl)) {
		for (int j = 0; j < 2; j++) {
			snprintf(what, sizeof(what), "ATTN %s GQA %u hd %u kv %s "
				 "q %s out %s scale %g", j ? "long" : "short",
				 group, hd, t_dt_name(kvt), t_dt_name(a[j].qt),
				 t_dt_name(a[j].ot), a[j].scale);
			attn_check(&a[j], &cpl[j], what);
		}
	}
	for (int j = 0; j < 2; j++)
		ajob_free(&a[j]);
}

static void attn_kv(int kvt)
{
	static const unsigned int groups[] = { 1, 4, 8 }, hds[] = { 64, 128 };
	unsigned int idx = (unsigned int)kvt * 6;

	for (size_t g = 0; g < T_ARRAY_SIZE(groups); g++)
		for (size_t h = 0; h < T_ARRAY_SIZE(hds); h++)
			attn_combo(groups[g], hds[h], kvt, idx++);
}

static void t_attn_f32(void) { attn_kv(SYSHAX_DT_F32); }
static void t_attn_f16(void) { attn_kv(SYSHAX_DT_F16); }
static void t_attn_bf16(void) { attn_kv(SYSHAX_DT_BF16); }

int t_add_attn(void)
{
	CU_pSuite s = CU_add_suite("ATTN_DECODE", NULL, NULL);

	if (!s || !CU_add_test(s, "f32 KV", t_attn_f32) ||
	    !CU_add_test(s, "f16 KV", t_attn_f16) ||
	    !CU_add_test(s, "bf16 KV", t_attn_bf16))
		return -1;
	return 0;
}
