// SPDX-License-Identifier: MIT
/*
 * Bad params for every compute op and weight-set op: unknown flags,
 * reserved or trailing params non-zero, zero counts, wrong ref counts, refs
 * too short (-ERANGE) or without the access the op needs (-EINVAL),
 * unknown weight sets and tensors (-ENOENT), bad types and shapes, block
 * table entries and sequence lengths out of range, expert ids out of
 * range. Each case is the good job with one thing changed; it completes
 * with the errno syshax_ops.h gives and writes nothing (the output area is
 * filled with a sentinel pattern and checked after). The good job itself
 * succeeds first, and good and bad jobs submitted together: the good ones
 * are computed right.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t.h"

#define HID	64
#define NFF	96
#define NEXP	8

enum { T_W, T_NORM1D, T_B0 = 2, T_B1 = 6, T_B2 = 9, T_B3 = 14, T_B4 = 17,
       T_B5 = 20, T_N = 27 };

static struct tw g_w[T_N];
static uint64_t g_id;

static void make_set(void)
{
	struct trng r;
	int q8 = SYSHAX_DT_Q8_0, f16 = SYSHAX_DT_F16;

	tr_seed(&r, 6);
	tw_rand(&g_w[T_W], &r, "w", SYSHAX_DT_F32, 2, HID, 13, 1, 0.2);
	tw_vec(&g_w[T_NORM1D], &r, "norm1d", HID, 0.5, 1.5);
	/* blk.0: an FFN with its norm (q8_0) */
	tw_rand(&g_w[T_B0], &r, "blk.0.ffn_gate.weight", q8, 2, HID, NFF, 1,
		0.3);
	tw_rand(&g_w[T_B0 + 1], &r, "blk.0.ffn_up.weight", q8, 2, HID, NFF, 1,
		0.3);
	tw_rand(&g_w[T_B0 + 2], &r, "blk.0.ffn_down.weight", q8, 2, NFF, HID, 1,
		0.3);
	tw_vec(&g_w[T_B0 + 3], &r, "blk.0.ffn_norm.weight", HID, 0.5, 1.5);
	/* blk.1: an FFN without a norm (f16) */
	tw_rand(&g_w[T_B1], &r, "blk.1.ffn_gate.weight", f16, 2, HID, NFF, 1,
		0.3);
	tw_rand(&g_w[T_B1 + 1], &r, "blk.1.ffn_up.weight", f16, 2, HID, NFF, 1,
		0.3);
	tw_rand(&g_w[T_B1 + 2], &r, "blk.1.ffn_down.weight", f16, 2, NFF, HID,
		1, 0.3);
	/* blk.2: experts, a router and a norm */
	tw_rand(&g_w[T_B2], &r, "blk.2.ffn_gate_exps.weight", q8, 3, HID, NFF,
		NEXP, 0.3);
	tw_rand(&g_w[T_B2 + 1], &r, "blk.2.ffn_up_exps.weight", q8, 3, HID, NFF,
		NEXP, 0.3);
	tw_rand(&g_w[T_B2 + 2], &r, "blk.2.ffn_down_exps.weight", q8, 3, NFF,
		HID, NEXP, 0.3);
	tw_rand(&g_w[T_B2 + 3], &r, "blk.2.ffn_gate_inp.weight", SYSHAX_DT_F32,
		2, HID, NEXP, 1, 0.3);
	tw_vec(&g_w[T_B2 + 4], &r, "blk.2.ffn_norm.weight", HID, 0.5, 1.5);
	/* blk.3: experts only */
	tw_rand(&g_w[T_B3], &r, "blk.3.ffn_gate_exps.weight", f16, 3, HID, NFF,
		NEXP, 0.3);
	tw_rand(&g_w[T_B3 + 1], &r, "blk.3.ffn_up_exps.weight", f16, 3, HID,
		NFF, NEXP, 0.3);
	tw_rand(&g_w[T_B3 + 2], &r, "blk.3.ffn_down_exps.weight", f16, 3, NFF,
		HID, NEXP, 0.3);
	/* blk.4: shapes that do not chain (up has 64 rows, gate 96) */
	tw_rand(&g_w[T_B4], &r, "blk.4.ffn_gate.weight", f16, 2, HID, NFF, 1,
		0.3);
	tw_rand(&g_w[T_B4 + 1], &r, "blk.4.ffn_up.weight", f16, 2, HID, HID, 1,
		0.3);
	tw_rand(&g_w[T_B4 + 2], &r, "blk.4.ffn_down.weight", f16, 2, NFF, HID,
		1, 0.3);
	/* blk.5: experts, a shared expert, its gate 32 long (not hidden) */
	tw_rand(&g_w[T_B5], &r, "blk.5.ffn_gate_exps.weight", f16, 3, HID, NFF,
		NEXP, 0.3);
	tw_rand(&g_w[T_B5 + 1], &r, "blk.5.ffn_up_exps.weight", f16, 3, HID,
		NFF, NEXP, 0.3);
	tw_rand(&g_w[T_B5 + 2], &r, "blk.5.ffn_down_exps.weight", f16, 3, NFF,
		HID, NEXP, 0.3);
	tw_rand(&g_w[T_B5 + 3], &r, "blk.5.ffn_gate_shexp.weight", f16, 2, HID,
		NFF, 1, 0.3);
	tw_rand(&g_w[T_B5 + 4], &r, "blk.5.ffn_up_shexp.weight", f16, 2, HID,
		NFF, 1, 0.3);
	tw_rand(&g_w[T_B5 + 5], &r, "blk.5.ffn_down_shexp.weight", f16, 2, NFF,
		HID, 1, 0.3);
	tw_vec(&g_w[T_B5 + 6], &r, "blk.5.ffn_gate_inp_shexp.weight", 32, -1,
	       1);
}

static int bad_clean(void)
{
	for (int i = 0; i < T_N; i++)
		tw_free(&g_w[i]);
	return 0;
}

static void t_bad_setup(void)
{
	make_set();
	CU_ASSERT_EQUAL_FATAL(tw_write_gguf("bad.gguf", g_w, T_N), 0);
	CU_ASSERT_EQUAL_FATAL(t_load_file(&g_c, "bad.gguf", SYSHAX_QUANT_NONE,
					  &g_id), 0);
}

/* ---- the driver ---- */

struct tref {
	void *p;
	uint64_t len;
	uint32_t acc;
};

struct bctx {
	uint32_t op;
	union {
		uint8_t raw[SYSHAX_JOB_PARAMS_SIZE];
		struct syshax_gemm_params gemm;
		struct syshax_ffn_params ffn;
		struct syshax_moe_params moe;
		struct syshax_attn_decode_params attn;
		struct syshax_weights_load_params load;
		struct syshax_weights_free_params free;
	} p;
	size_t psz;			/* the params struct's size */
	struct tref r[SYSHAX_JOB_MAX_REFS];
	unsigned int nr;
	void *out;			/* filled with the sentinel */
	size_t out_len;
	void *aux[4];			/* op inputs a case may change */
};

/* Fills b with the good job (buffers already allocated: b->aux etc.). */
typedef void (*good_fn)(struct bctx *b);
/* Applies case i: returns the errno it must complete with, or 1 past the
 * last case. */
typedef int (*case_fn)(int i, struct bctx *b, const char **what);

static void build(const struct bctx *b, struct syshax_job *job)
{
	syshax_job_init(job, b->op, 0);
	memcpy(job->params, b->p.raw, sizeof(job->params));
	for (unsigned int i = 0; i < b->nr; i++)
		tj_ref(job, &g_c, b->r[i].p, b->r[i].len, b->r[i].acc);
}

static void set_ref(struct bctx *b, unsigned int i, void *p, uint64_t len,
		    uint32_t acc)
{
	b->r[i] = (struct tref){ p, len, acc };
	if (b->nr <= i)
		b->nr = i + 1;
}

/* Runs the good job (when it must succeed), then every case. Returns the
 * number of cases. */
static int drive(const char *op, good_fn good, case_fn cases, bool run_good)
{
	struct syshax_job job;
	struct bctx b;
	int i, n = 0;

	if (run_good) {
		memset(&b, 0, sizeof(b));
		good(&b);
		build(&b, &job);
		CU_ASSERT_EQUAL(tc_run1(&g_c, &job, NULL), 0);
	}
	for (i = 0;; i++) {
		const char *what = "?";
		int want, ret;

		memset(&b, 0, sizeof(b));
		good(&b);
		want = cases(i, &b, &what);
		if (want == 1)
			break;
		build(&b, &job);
		if (b.out)
			t_sentinel(b.out, b.out_len);
		ret = tc_run1(&g_c, &job, NULL);
		if (ret != want)
			printf("\n  %s, %s: %s, want %s\n", op, what,
			       syshax_strerror(ret), syshax_strerror(want));
		CU_ASSERT_EQUAL(ret, want);
		if (b.out && !t_sentinel_ok(b.out, b.out_len)) {
			printf("\n  %s, %s: the output was written\n", op, what);
			CU_FAIL("a refused job wrote its output");
		}
		n++;
	}
	return n;
}

/* Buffers the cases share, allocated once per test. */
static void *g_x, *g_y, *g_ids, *g_wts, *g_lg, *g_extra;

static void alloc_io(void)
{
	tc_reset(&g_c);
	g_x = tc_alloc(&g_c, 64 << 10);
	g_y = tc_alloc(&g_c, 64 << 10);
	g_ids = tc_alloc(&g_c, 4096);
	g_wts = tc_alloc(&g_c, 4096);
	g_lg = tc_alloc(&g_c, 4096);
	g_extra = tc_alloc(&g_c, 4096);
	CU_ASSERT_FATAL(g_x && g_y && g_ids && g_wts && g_lg && g_extra);
	for (int i = 0; i < 1024; i++)
		((float *)g_x)[i] = (float)((i % 7) - 3) * 0.25f;
}

static void ff_stats(struct syshax_engine_stats *st)
{
	CU_ASSERT_EQUAL_FATAL(t_engine_stats(&g_c, st), 0);
}

/* ---- GEMM ---- */

static void gemm_good(struct bctx *b)
{
	b->op = SYSHAX_OP_GEMM;
	b->psz = sizeof(b->p.gemm);
	b->p.gemm = (struct syshax_gemm_params){
		.wset = g_id, .m = 3, .x_type = SYSHAX_DT_F32,
		.y_type = SYSHAX_DT_F32, .tensor = "w",
	};
	set_ref(b, 0, g_x, 3 * HID * 4, SYSHAX_ACCESS_READ);
	set_ref(b, 1, g_y, 3 * 13 * 4, SYSHAX_ACCESS_WRITE);
	b->out = g_y;
	b->out_len = 4096;
}

static int gemm_case(int i, struct bctx *b, const char **what)
{
	struct syshax_gemm_params *p = &b->p.gemm;

#define CASE(n, w, e, stmt) case n: *what = w; stmt; return e;
	switch (i) {
	CASE(0, "flags 1", -EINVAL, p->flags = 1)
	CASE(1, "reserved[0]", -EINVAL, p->reserved[0] = 1)
	CASE(2, "reserved[1]", -EINVAL, p->reserved[1] = 1ULL << 63)
	CASE(3, "m 0", -EINVAL, p->m = 0)
	CASE(4, "1 ref", -EINVAL, b->nr = 1)
	CASE(5, "3 refs", -EINVAL,
	     set_ref(b, 2, g_extra, 64, SYSHAX_ACCESS_READ))
	CASE(6, "X short", -ERANGE, b->r[0].len -= 4)
	CASE(7, "Y short", -ERANGE, b->r[1].len -= 1)
	CASE(8, "Y read-only", -EINVAL, b->r[1].acc = SYSHAX_ACCESS_READ)
	CASE(9, "X write-only", -EINVAL, b->r[0].acc = SYSHAX_ACCESS_WRITE)
	CASE(10, "unknown wset", -ENOENT, p->wset = 999999)
	CASE(11, "wset 0", -ENOENT, p->wset = 0)
	CASE(12, "unknown tensor", -ENOENT, strcpy(p->tensor, "nope"))
	CASE(13, "1-D tensor", -EINVAL, strcpy(p->tensor, "norm1d"))
	CASE(14, "3-D tensor", -EINVAL,
	     strcpy(p->tensor, "blk.2.ffn_gate_exps.weight"))
	CASE(15, "x_type q8_0", -EINVAL, p->x_type = SYSHAX_DT_Q8_0)
	CASE(16, "y_type q4_0", -EINVAL, p->y_type = SYSHAX_DT_Q4_0)
	CASE(17, "x_type ~0", -EINVAL, p->x_type = ~0u)
	CASE(18, "tensor name unterminated", -EINVAL,
	     memset(p->tensor, 'w', sizeof(p->tensor)))
	CASE(19, "params tail", -EINVAL, b->p.raw[b->psz] = 1)
	CASE(20, "m 1000", -ERANGE, p->m = 1000)
	CASE(21, "m ~0", -ERANGE, p->m = ~0u)
	CASE(22, "y_type bf16 with Y sized for f32 of fewer rows", -ERANGE,
	     (p->y_type = SYSHAX_DT_BF16, p->m = 7, b->r[0].len = 7 * HID * 4,
	      b->r[1].len = 7 * 13 * 2 - 2))
	default:
		return 1;
	}
}

/* ---- FFN ---- */

static void ffn_good(struct bctx *b)
{
	b->op = SYSHAX_OP_FFN;
	b->psz = sizeof(b->p.ffn);
	b->p.ffn = (struct syshax_ffn_params){
		.wset = g_id, .layer = 0, .m = 2, .x_type = SYSHAX_DT_F32,
		.y_type = SYSHAX_DT_F32,
		.flags = SYSHAX_FFN_NORM | SYSHAX_FFN_RESIDUAL,
	};
	set_ref(b, 0, g_x, 2 * HID * 4, SYSHAX_ACCESS_READ);
	set_ref(b, 1, g_y, 2 * HID * 4, SYSHAX_ACCESS_WRITE);
	b->out = g_y;
	b->out_len = 4096;
}

static int ffn_case(int i, struct bctx *b, const char **what)
{
	struct syshax_ffn_params *p = &b->p.ffn;

	switch (i) {
	CASE(0, "flags 1 << 2", -EINVAL, p->flags |= 1u << 2)
	CASE(1, "flags 1 << 31", -EINVAL, p->flags |= 1u << 31)
	CASE(2, "reserved[3]", -EINVAL, p->reserved[3] = 1)
	CASE(3, "m 0", -EINVAL, p->m = 0)
	CASE(4, "1 ref", -EINVAL, b->nr = 1)
	CASE(5, "3 refs", -EINVAL,
	     set_ref(b, 2, g_extra, 64, SYSHAX_ACCESS_READ))
	CASE(6, "X short", -ERANGE, b->r[0].len -= 4)
	CASE(7, "Y short", -ERANGE, b->r[1].len -= 4)
	CASE(8, "Y read-only", -EINVAL, b->r[1].acc = SYSHAX_ACCESS_READ)
	CASE(9, "unknown wset", -ENOENT, p->wset = 424242)
	CASE(10, "unknown layer", -ENOENT, p->layer = 77)
	CASE(11, "NORM without ffn_norm", -ENOENT, p->layer = 1)
	CASE(12, "x_type 5", -EINVAL, p->x_type = 5)
	CASE(13, "y_type q8_0", -EINVAL, p->y_type = SYSHAX_DT_Q8_0)
	CASE(14, "eps NaN", -EINVAL, p->eps = syshax_f32_bits(NAN))
	CASE(15, "eps -1", -EINVAL, p->eps = syshax_f32_bits(-1.0f))
	CASE(16, "eps inf", -EINVAL, p->eps = syshax_f32_bits(INFINITY))
	CASE(17, "shapes that do not chain", -EINVAL,
	     (p->layer = 4, p->flags = 0))
	CASE(18, "params tail", -EINVAL, b->p.raw[b->psz] = 1)
	CASE(19, "a MoE layer", -ENOENT, p->layer = 2)
	CASE(20, "X write-only", -EINVAL, b->r[0].acc = SYSHAX_ACCESS_WRITE)
	CASE(21, "m 100", -ERANGE, p->m = 100)
	default:
		return 1;
	}
}

/* ---- MOE ---- */

static void moe_good(struct bctx *b)
{
	int32_t *ids = g_ids;
	float *wts = g_wts;

	b->op = SYSHAX_OP_MOE;
	b->psz = sizeof(b->p.moe);
	b->p.moe = (struct syshax_moe_params){
		.wset = g_id, .layer = 2, .m = 2, .x_type = SYSHAX_DT_F32,
		.y_type = SYSHAX_DT_F32,
		.flags = SYSHAX_MOE_NORM | SYSHAX_MOE_RESIDUAL,
		.route = SYSHAX_MOE_ROUTE_IDS, .topk = 2,
	};
	for (int i = 0; i < 4; i++) {
		ids[i] = (i * 3) % NEXP;
		wts[i] = 0.5f;
	}
	for (int i = 0; i < 2 * NEXP; i++)
		((float *)g_lg)[i] = (float)i * 0.1f;
	set_ref(b, 0, g_x, 2 * HID * 4, SYSHAX_ACCESS_READ);
	set_ref(b, 1, g_y, 2 * HID * 4, SYSHAX_ACCESS_WRITE);
	set_ref(b, 2, g_ids, 2 * 2 * 4, SYSHAX_ACCESS_READ);
	set_ref(b, 3, g_wts, 2 * 2 * 4, SYSHAX_ACCESS_READ);
	b->out = g_y;
	b->out_len = 4096;
}

static int moe_case(int i, struct bctx *b, const char **what)
{
	struct syshax_moe_params *p = &b->p.moe;
	int32_t *ids = g_ids;

	switch (i) {
	CASE(0, "flags 1 << 4", -EINVAL, p->flags |= 1u << 4)
	CASE(1, "reserved[0]", -EINVAL, p->reserved[0] = 1)
	CASE(2, "m 0", -EINVAL, p->m = 0)
	CASE(3, "route 3", -EINVAL, p->route = 3)
	CASE(4, "topk 0", -EINVAL, p->topk = 0)
	CASE(5, "topk 9 of 8 experts", -EINVAL,
	     (p->topk = 9, p->route = SYSHAX_MOE_ROUTE_ROUTER, b->nr = 2))
	CASE(6, "topk 65", -EINVAL, p->topk = 65)
	CASE(7, "IDS with 3 refs", -EINVAL, b->nr = 3)
	CASE(8, "ROUTER with 4 refs", -EINVAL,
	     p->route = SYSHAX_MOE_ROUTE_ROUTER)
	CASE(9, "LOGITS with 4 refs", -EINVAL,
	     p->route = SYSHAX_MOE_ROUTE_LOGITS)
	CASE(10, "ids short", -ERANGE, b->r[2].len -= 4)
	CASE(11, "weights short", -ERANGE, b->r[3].len -= 1)
	CASE(12, "expert id 8 of 8", -EINVAL, ids[3] = NEXP)
	CASE(13, "expert id -1", -EINVAL, ids[0] = -1)
	CASE(14, "Y read-only", -EINVAL, b->r[1].acc = SYSHAX_ACCESS_READ)
	CASE(15, "ids write-only", -EINVAL, b->r[2].acc = SYSHAX_ACCESS_WRITE)
	CASE(16, "a layer without experts", -ENOENT, p->layer = 0)
	CASE(17, "unknown wset", -ENOENT, p->wset = 31337)
	CASE(18, "SHARED without a shared expert", -ENOENT,
	     p->flags |= SYSHAX_MOE_SHARED)
	CASE(19, "ROUTER without ffn_gate_inp", -ENOENT,
	     (p->layer = 3, p->flags = 0, p->route = SYSHAX_MOE_ROUTE_ROUTER,
	      b->nr = 2))
	CASE(20, "logits short", -ERANGE,
	     (p->route = SYSHAX_MOE_ROUTE_LOGITS, b->nr = 3,
	      set_ref(b, 2, g_lg, 2 * NEXP * 4 - 4, SYSHAX_ACCESS_READ)))
	CASE(21, "x_type q8_0", -EINVAL, p->x_type = SYSHAX_DT_Q8_0)
	CASE(22, "X short", -ERANGE, b->r[0].len -= 2)
	CASE(23, "params tail", -EINVAL, b->p.raw[b->psz] = 1)
	CASE(24, "NORM without ffn_norm", -ENOENT, p->layer = 3)
	CASE(25, "eps NaN", -EINVAL, p->eps = syshax_f32_bits(NAN))
	CASE(26, "Y short", -ERANGE, b->r[1].len -= 4)
	CASE(27, "an FFN layer", -ENOENT, p->layer = 1)
	CASE(28, "shared expert gate not hidden long", -EINVAL,
	     (p->layer = 5, p->flags = SYSHAX_MOE_SHARED))
	default:
		return 1;
	}
}

/* ---- ATTN_DECODE ---- */

#define A_SEQS	2
#define A_QH	4
#define A_KVH	2
#define A_HD	64
#define A_BS	16
#define A_NB	6
#define A_MAXB	3
#define A_CACHE	(A_NB * A_BS * A_KVH * A_HD * 2)	/* f16 */

static void attn_good(struct bctx *b)
{
	int32_t *bt = g_ids, *lens = g_wts;
	static const int32_t table[A_SEQS * A_MAXB] = { 4, 1, 99, 0, 5, 2 };
	uint16_t *k = (uint16_t *)g_x, *v = k + A_CACHE / 2;

	b->op = SYSHAX_OP_ATTN_DECODE;
	b->psz = sizeof(b->p.attn);
	b->p.attn = (struct syshax_attn_decode_params){
		.num_seqs = A_SEQS, .q_heads = A_QH, .kv_heads = A_KVH,
		.head_dim = A_HD, .block_size = A_BS, .num_blocks = A_NB,
		.max_blocks = A_MAXB, .kv_type = SYSHAX_DT_F16,
		.q_type = SYSHAX_DT_F32, .o_type = SYSHAX_DT_F32,
	};
	memcpy(bt, table, sizeof(table));
	lens[0] = 20;		/* 2 blocks: entry 99 is not used */
	lens[1] = 33;		/* 3 blocks */
	for (int i = 0; i < A_CACHE / 2; i++)
		k[i] = v[i] = t_f32_to_f16((float)((i % 5) - 2) * 0.1f);
	set_ref(b, 0, g_lg, A_SEQS * A_QH * A_HD * 4, SYSHAX_ACCESS_READ);
	set_ref(b, 1, k, A_CACHE, SYSHAX_ACCESS_READ);
	set_ref(b, 2, v, A_CACHE, SYSHAX_ACCESS_READ);
	set_ref(b, 3, bt, A_SEQS * A_MAXB * 4, SYSHAX_ACCESS_READ);
	set_ref(b, 4, lens, A_SEQS * 4, SYSHAX_ACCESS_READ);
	set_ref(b, 5, g_y, A_SEQS * A_QH * A_HD * 4, SYSHAX_ACCESS_WRITE);
	b->out = g_y;
	b->out_len = 8192;
}

static int attn_case(int i, struct bctx *b, const char **what)
{
	struct syshax_attn_decode_params *p = &b->p.attn;
	int32_t *bt = g_ids, *lens = g_wts;

	switch (i) {
	CASE(0, "flags 1", -EINVAL, p->flags = 1)
	CASE(1, "reserved[2]", -EINVAL, p->reserved[2] = 1)
	CASE(2, "num_seqs 0", -EINVAL, p->num_seqs = 0)
	CASE(3, "kv_heads 0", -EINVAL, p->kv_heads = 0)
	CASE(4, "q_heads 0", -EINVAL, p->q_heads = 0)
	CASE(5, "q_heads 5 of kv_heads 2", -EINVAL, p->q_heads = 5)
	CASE(6, "head_dim 0", -EINVAL, p->head_dim = 0)
	CASE(7, "head_dim 1025", -EINVAL, p->head_dim = 1025)
	CASE(8, "block_size 0", -EINVAL, p->block_size = 0)
	CASE(9, "num_blocks 0", -EINVAL, p->num_blocks = 0)
	CASE(10, "max_blocks 0", -EINVAL, p->max_blocks = 0)
	CASE(11, "kv_type q8_0", -EINVAL, p->kv_type = SYSHAX_DT_Q8_0)
	CASE(12, "q_type q4_0", -EINVAL, p->q_type = SYSHAX_DT_Q4_0)
	CASE(13, "o_type 9", -EINVAL, p->o_type = 9)
	CASE(14, "5 refs", -EINVAL, b->nr = 5)
	CASE(15, "7 refs", -EINVAL,
	     set_ref(b, 6, g_extra, 64, SYSHAX_ACCESS_READ))
	CASE(16, "q short", -ERANGE, b->r[0].len -= 4)
	CASE(17, "K short", -ERANGE, b->r[1].len -= 2)
	CASE(18, "V short", -ERANGE, b->r[2].len -= 2)
	CASE(19, "block tables short", -ERANGE, b->r[3].len -= 4)
	CASE(20, "lengths short", -ERANGE, b->r[4].len -= 4)
	CASE(21, "out short", -ERANGE, b->r[5].len -= 4)
	CASE(22, "out read-only", -EINVAL, b->r[5].acc = SYSHAX_ACCESS_READ)
	CASE(23, "block table entry = num_blocks", -EINVAL, bt[4] = A_NB)
	CASE(24, "block table entry -1", -EINVAL, bt[1] = -1)
	CASE(25, "seq_len > max_blocks * block_size", -EINVAL,
	     lens[1] = A_MAXB * A_BS + 1)
	CASE(26, "seq_len -1", -EINVAL, lens[0] = -1)
	CASE(27, "scale NaN", -EINVAL, p->scale = syshax_f32_bits(NAN))
	CASE(28, "scale inf", -EINVAL, p->scale = syshax_f32_bits(INFINITY))
	CASE(29, "params tail", -EINVAL, b->p.raw[b->psz] = 1)
	CASE(30, "K write-only", -EINVAL, b->r[1].acc = SYSHAX_ACCESS_WRITE)
	CASE(31, "num_blocks past the caches", -ERANGE, p->num_blocks = 7)
	CASE(32, "head_dim past the caches", -ERANGE, p->head_dim = 128)
	CASE(33, "kv_type f32 past the caches", -ERANGE,
	     p->kv_type = SYSHAX_DT_F32)
	default:
		return 1;
	}
}

/* ---- WEIGHTS_LOAD, WEIGHTS_FREE, ENGINE_STATS ---- */

static void load_good(struct bctx *b)
{
	b->op = SYSHAX_OP_WEIGHTS_LOAD;
	b->psz = sizeof(b->p.load);
	b->p.load = (struct syshax_weights_load_params){
		.source = SYSHAX_WLOAD_FILE, .quantize = SYSHAX_QUANT_NONE,
		.path = "bad.gguf",
	};
}

static int load_case(int i, struct bctx *b, const char **what)
{
	struct syshax_weights_load_params *p = &b->p.load;

	switch (i) {
	CASE(0, "source 2", -EINVAL, p->source = 2)
	CASE(1, "quantize 4", -EINVAL, p->quantize = 4)
	CASE(2, "flags 1", -EINVAL, p->flags = 1)
	CASE(3, "pad 1", -EINVAL, p->pad = 1)
	CASE(4, "reserved[1]", -EINVAL, p->reserved[1] = 1)
	CASE(5, "FILE with a ref", -EINVAL,
	     set_ref(b, 0, g_extra, 64, SYSHAX_ACCESS_READ))
	CASE(6, "BUFFER with a path", -EINVAL,
	     (p->source = SYSHAX_WLOAD_BUFFER,
	      set_ref(b, 0, g_extra, 64, SYSHAX_ACCESS_READ)))
	CASE(7, "BUFFER without a ref", -EINVAL,
	     (p->source = SYSHAX_WLOAD_BUFFER, memset(p->path, 0, 192)))
	CASE(8, "BUFFER write-only", -EINVAL,
	     (p->source = SYSHAX_WLOAD_BUFFER, memset(p->path, 0, 192),
	      set_ref(b, 0, g_extra, 64, SYSHAX_ACCESS_WRITE)))
	CASE(9, "BUFFER with 2 refs", -EINVAL,
	     (p->source = SYSHAX_WLOAD_BUFFER, memset(p->path, 0, 192),
	      set_ref(b, 0, g_extra, 64, SYSHAX_ACCESS_READ),
	      set_ref(b, 1, g_extra, 64, SYSHAX_ACCESS_READ)))
	CASE(10, "BUFFER of zeros", -EINVAL,
	     (p->source = SYSHAX_WLOAD_BUFFER, memset(p->path, 0, 192),
	      memset(g_extra, 0, 64),
	      set_ref(b, 0, g_extra, 64, SYSHAX_ACCESS_READ)))
	default:
		return 1;
	}
}

static void free_good(struct bctx *b)
{
	b->op = SYSHAX_OP_WEIGHTS_FREE;
	b->psz = sizeof(b->p.free);
	b->p.free.wset = g_id;
}

static int free_case(int i, struct bctx *b, const char **what)
{
	struct syshax_weights_free_params *p = &b->p.free;

	switch (i) {
	CASE(0, "wset 0", -EINVAL, p->wset = 0)
	CASE(1, "reserved[0]", -EINVAL, p->reserved[0] = 1)
	CASE(2, "a ref", -EINVAL,
	     set_ref(b, 0, g_extra, 64, SYSHAX_ACCESS_READ))
	CASE(3, "params tail", -EINVAL, b->p.raw[b->psz] = 1)
	CASE(4, "unknown wset", -ENOENT, p->wset = 777777)
	default:
		return 1;
	}
}

static void stats_good(struct bctx *b)
{
	b->op = SYSHAX_OP_ENGINE_STATS;
	b->psz = 0;
	set_ref(b, 0, g_y, sizeof(struct syshax_engine_stats),
		SYSHAX_ACCESS_WRITE);
	b->out = g_y;
	b->out_len = sizeof(struct syshax_engine_stats) + 64;
}

static int stats_case(int i, struct bctx *b, const char **what)
{
	switch (i) {
	CASE(0, "params non-zero", -EINVAL, b->p.raw[100] = 1)
	CASE(1, "no ref", -EINVAL, b->nr = 0)
	CASE(2, "2 refs", -EINVAL,
	     set_ref(b, 1, g_extra, 64, SYSHAX_ACCESS_WRITE))
	CASE(3, "ref short", -ERANGE, b->r[0].len -= 1)
	CASE(4, "read-only", -EINVAL, b->r[0].acc = SYSHAX_ACCESS_READ)
	default:
		return 1;
	}
}
#undef CASE

/* Failed jobs of op index i counted by the engine (pool 0). */
static uint64_t failed(const struct syshax_engine_stats *st, int i)
{
	return st->op[i][0].failed;
}

static void t_bad_gemm(void)
{
	struct syshax_engine_stats a, b;
	int n;

	CU_ASSERT_FATAL(g_id != 0);
	alloc_io();
	ff_stats(&a);
	n = drive("GEMM", gemm_good, gemm_case, true);
	ff_stats(&b);
	CU_ASSERT_EQUAL(failed(&b, 0) - failed(&a, 0), (uint64_t)n);
}

static void t_bad_ffn(void)
{
	struct syshax_engine_stats a, b;
	int n;

	CU_ASSERT_FATAL(g_id != 0);
	alloc_io();
	ff_stats(&a);
	n = drive("FFN", ffn_good, ffn_case, true);
	ff_stats(&b);
	CU_ASSERT_EQUAL(failed(&b, 1) - failed(&a, 1), (uint64_t)n);
}

static void t_bad_moe(void)
{
	struct syshax_engine_stats a, b;
	int n;

	CU_ASSERT_FATAL(g_id != 0);
	alloc_io();
	ff_stats(&a);
	n = drive("MOE", moe_good, moe_case, true);
	ff_stats(&b);
	CU_ASSERT_EQUAL(failed(&b, 2) - failed(&a, 2), (uint64_t)n);
}

static void t_bad_attn(void)
{
	struct syshax_engine_stats a, b;
	int n;

	alloc_io();
	ff_stats(&a);
	n = drive("ATTN_DECODE", attn_good, attn_case, true);
	ff_stats(&b);
	CU_ASSERT_EQUAL(failed(&b, 3) - failed(&a, 3), (uint64_t)n);
}

static void t_bad_wsets(void)
{
	struct syshax_engine_stats a, b;

	CU_ASSERT_FATAL(g_id != 0);
	alloc_io();
	ff_stats(&a);
	drive("WEIGHTS_LOAD", load_good, load_case, false);
	drive("WEIGHTS_FREE", free_good, free_case, false);
	drive("ENGINE_STATS", stats_good, stats_case, true);
	ff_stats(&b);
	/* Nothing loaded, nothing freed. */
	CU_ASSERT_EQUAL(a.nr_wsets, b.nr_wsets);
}

/* Good and bad GEMMs in one submit: the engine batches the good ones and
 * fails the others alone. */
static void t_bad_mixed(void)
{
	enum { NJ = 6 };
	struct syshax_completion cpl[NJ];
	struct syshax_job jobs[NJ];
	double xd[3 * HID], ref[3 * 13];
	float *x, *y[NJ];
	struct trng r;

	CU_ASSERT_FATAL(g_id != 0);
	tc_reset(&g_c);
	tr_seed(&r, 66);
	x = tc_alloc(&g_c, 3 * HID * 4);
	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	t_act_rand(&r, SYSHAX_DT_F32, 1.0, x, 3 * HID, xd);
	for (int j = 0; j < NJ; j++) {
		struct syshax_gemm_params p = {
			.wset = g_id, .m = 3, .x_type = SYSHAX_DT_F32,
			.y_type = SYSHAX_DT_F32, .tensor = "w",
		};

		y[j] = tc_alloc(&g_c, 3 * 13 * 4);
		CU_ASSERT_PTR_NOT_NULL_FATAL(y[j]);
		t_sentinel(y[j], 3 * 13 * 4);
		if (j == 1)
			p.flags = 2;
		if (j == 3)
			strcpy(p.tensor, "nope");
		if (j == 4)
			p.wset = 999;
		tj_init(&jobs[j], SYSHAX_OP_GEMM, &p, sizeof(p));
		tj_ref(&jobs[j], &g_c, x, 3 * HID * 4, SYSHAX_ACCESS_READ);
		tj_ref(&jobs[j], &g_c, y[j], 3 * 13 * 4 - (j == 5 ? 4 : 0),
		       SYSHAX_ACCESS_WRITE);
	}
	CU_ASSERT_EQUAL_FATAL(tc_run(&g_c, jobs, NJ, cpl), 0);
	ref_gemm(&g_w[T_W], 0, xd, 3, ref);
	for (int j = 0; j < NJ; j++) {
		bool good = j == 0 || j == 2;

		CU_ASSERT_EQUAL(cpl[j].status, j == 1 ? -EINVAL :
				j == 3 || j == 4 ? -ENOENT :
				j == 5 ? -ERANGE : 0);
		if (good)
			t_check("GEMM beside refused jobs", SYSHAX_DT_F32,
				y[j], ref, 3, 13, 1e-4);
		else
			CU_ASSERT(t_sentinel_ok(y[j], 3 * 13 * 4));
	}
}

static void t_bad_free(void)
{
	CU_ASSERT_EQUAL(t_free_wset(&g_c, g_id), 0);
	g_id = 0;
}

int t_add_bad(void)
{
	CU_pSuite s = CU_add_suite("bad params", NULL, bad_clean);

	if (!s || !CU_add_test(s, "load the set", t_bad_setup) ||
	    !CU_add_test(s, "GEMM", t_bad_gemm) ||
	    !CU_add_test(s, "FFN", t_bad_ffn) ||
	    !CU_add_test(s, "MOE", t_bad_moe) ||
	    !CU_add_test(s, "ATTN_DECODE", t_bad_attn) ||
	    !CU_add_test(s, "WEIGHTS_LOAD, WEIGHTS_FREE, ENGINE_STATS",
			 t_bad_wsets) ||
	    !CU_add_test(s, "good and bad jobs in one submit", t_bad_mixed) ||
	    !CU_add_test(s, "free the set", t_bad_free))
		return -1;
	return 0;
}
