// SPDX-License-Identifier: MIT
/*
 * Whole models: MODEL_LOAD, DECODE and PREFILL steps, REPORT_XPU and the
 * dispatch rule. A step is a list of rows (one token of one sequence
 * each, with that sequence's KV cache in its client's buffers); DECODE
 * jobs fetched together become one list, so their weight reads are shared
 * (continuous batching). Per layer: RMSNorm, Q/K/V on the pools, q/k norm
 * (qwen3), RoPE, the new K/V rows written into the client's blocks, paged
 * attention, the output projection, and the FFN or MoE block through the
 * batched ops of op_linear.c.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_int.h"
#include "engine.h"
#include "log.h"
#include "model.h"
#include "wload.h"

/* Rows one step may carry (scratch grows with them). */
#define STEP_MAX_ROWS	8192

/* One token of one sequence. */
struct row {
	int32_t tok, pos;
	const int32_t *bt;		/* checked copy of its block table */
	uint8_t *k, *v;			/* its K and V caches, all layers */
	size_t layer_bytes;
	enum shxk_type kvt;
	size_t block_size;
	void *out;			/* its output row, or NULL */
	uint32_t out_kind, topk;
};

/* A checked DECODE or PREFILL job. */
struct step {
	unsigned int idx;		/* in the fetched array */
	struct shxd_wset *ws;		/* a reference */
	struct syshax_step_params a;
	int32_t *copy;			/* tokens, positions, block tables */
	struct row *rows;
	size_t n, nout;			/* rows; rows with output */
};

static void step_release(struct step *s)
{
	free(s->copy);
	free(s->rows);
	shxd_wset_put(s->ws);
	memset(s, 0, sizeof(*s));
}

static size_t out_row_bytes(const struct syshax_step_params *a,
			    const struct shxd_model *m)
{
	return a->out == SYSHAX_STEP_OUT_LOGITS ? (size_t)m->n_vocab * 4 :
						  (size_t)a->topk * 8;
}

static int step_params(const struct shxd_xjob *xj, struct syshax_step_params *a,
		       bool prefill)
{
	if (shxd_params(xj, a, sizeof(*a)) || !a->n || a->n > STEP_MAX_ROWS ||
	    a->pad || !shxd_zero(a->reserved, sizeof(a->reserved)) ||
	    xj->job->nr_refs != (prefill ? 5U : 6U) ||
	    (prefill ? a->flags & ~SYSHAX_STEP_ALL_ROWS : a->flags | a->pos) ||
	    !a->block_size || !a->num_blocks || !a->max_blocks ||
	    a->kv_type > SYSHAX_DT_BF16 ||
	    (a->out == SYSHAX_STEP_OUT_LOGITS && a->topk) ||
	    (a->out == SYSHAX_STEP_OUT_TOPK &&
	     (!a->topk || a->topk > SYSHAX_STEP_TOPK_MAX)) ||
	    a->out > SYSHAX_STEP_OUT_TOPK)
		return -EINVAL;
	return 0;
}

/* Bytes of one layer's K (or V) cache; 0 on overflow. */
static uint64_t layer_bytes(const struct syshax_step_params *a,
			    const struct shxd_model *m)
{
	uint64_t b = shxd_act_size((enum shxk_type)a->kv_type);

	if (__builtin_mul_overflow(b, (uint64_t)a->num_blocks, &b) ||
	    __builtin_mul_overflow(b, (uint64_t)a->block_size, &b) ||
	    __builtin_mul_overflow(b, (uint64_t)m->n_head_kv * m->head_dim,
				   &b) ||
	    __builtin_mul_overflow(b, (uint64_t)m->n_layer, &b))
		return 0;
	return b / m->n_layer;
}

/* Every position's block is a block of the cache. */
static bool blocks_ok(const struct syshax_step_params *a, const int32_t *bt,
		      uint64_t last_pos)
{
	if (last_pos >= (uint64_t)a->max_blocks * a->block_size)
		return false;
	for (uint64_t b = 0; b <= last_pos / a->block_size; b++)
		if (bt[b] < 0 || (uint32_t)bt[b] >= a->num_blocks)
			return false;
	return true;
}

/*
 * Checks a DECODE or PREFILL job against its model; s gets its rows.
 * Tokens, positions and block tables are checked on copies: the client
 * may write them while the job runs.
 */
static int step_check(const struct shxd_xjob *xj, struct step *s)
{
	bool prefill = xj->job->op == SYSHAX_OP_PREFILL;
	struct syshax_step_params *a = &s->a;
	const struct shxd_model *m;
	unsigned int r = 0;
	uint64_t lb, n, bt_n, nout;
	const void *tok, *pos = NULL, *bt;
	uint8_t *k, *v, *out;
	int err = 0;

	memset(s, 0, sizeof(*s));
	if (step_params(xj, a, prefill))
		return -EINVAL;
	s->ws = shxd_wreg_get(a->model);
	if (!s->ws)
		return -ENOENT;
	m = s->ws->model;
	lb = m ? layer_bytes(a, m) : 0;
	if (!m || !lb || (a->out == SYSHAX_STEP_OUT_TOPK &&
			  a->topk > m->n_vocab)) {
		step_release(s);
		return -EINVAL;
	}
	n = a->n;
	bt_n = (prefill ? 1 : n) * a->max_blocks;
	nout = prefill && !(a->flags & SYSHAX_STEP_ALL_ROWS) ? 1 : a->n;
	tok = shxd_span(xj, r++, SYSHAX_ACCESS_READ, n * 4, &err);
	if (!prefill)
		pos = shxd_span(xj, r++, SYSHAX_ACCESS_READ, n * 4, &err);
	bt = shxd_span(xj, r++, SYSHAX_ACCESS_READ, bt_n * 4, &err);
	k = shxd_span(xj, r++, SYSHAX_ACCESS_RW, lb * m->n_layer, &err);
	v = shxd_span(xj, r++, SYSHAX_ACCESS_RW, lb * m->n_layer, &err);
	out = shxd_span(xj, r, SYSHAX_ACCESS_WRITE,
			nout * out_row_bytes(a, m), &err);
	s->copy = err ? NULL : malloc((2 * n + bt_n) * sizeof(int32_t));
	s->rows = err ? NULL : calloc(n, sizeof(*s->rows));
	if (err || !s->copy || !s->rows) {
		step_release(s);
		return err ? err : -ENOMEM;
	}
	memcpy(s->copy, tok, n * 4);
	memcpy(s->copy + 2 * n, bt, bt_n * 4);
	if (pos)
		memcpy(s->copy + n, pos, n * 4);
	for (uint64_t i = 0; i < n; i++) {
		struct row *w = &s->rows[i];
		int32_t p = prefill ? (int32_t)(a->pos + i) : s->copy[n + i];
		const int32_t *rbt = s->copy + 2 * n + (prefill ? 0 : i) *
				     a->max_blocks;

		if (s->copy[i] < 0 || (uint32_t)s->copy[i] >= m->n_vocab ||
		    p < 0 || (uint64_t)a->pos + i > INT32_MAX ||
		    !blocks_ok(a, rbt, (uint64_t)p)) {
			step_release(s);
			return -EINVAL;
		}
		*w = (struct row){
			.tok = s->copy[i], .pos = p, .bt = rbt, .k = k, .v = v,
			.layer_bytes = lb, .kvt = (enum shxk_type)a->kv_type,
			.block_size = a->block_size, .out_kind = a->out,
			.topk = a->topk,
		};
		if (i + nout >= n)
			w->out = out + (i + nout - n) * out_row_bytes(a, m);
	}
	s->n = n;
	s->nout = nout;
	return 0;
}

/* ---- the forward pass ---- */

/* Logits a scan tests at once: a fixed count, so that the compiler turns
 * the test into vector compares. */
#define SCAN_BLOCK	16

/* Whether any of l[0 .. SCAN_BLOCK) is above low (NaN is not). */
static bool block_above(const float *l, float low)
{
	unsigned int any = 0;

	for (unsigned int i = 0; i < SCAN_BLOCK; i++)
		any |= l[i] > low;
	return any;
}

/*
 * The k highest of logits [lo, hi) of l into t, as shxd_topk_add keeps
 * them; once t is full, a block of logits is only compared with a local
 * copy of the lowest kept, and looked at one by one when one is above
 * it. A call of shxd_topk_add for each logit, which reloads it, took
 * 250 us for 151,936 logits on Zen 5, and a compare each 42; by blocks,
 * the phase of a 4-layer qwen3-30b-a3b step on 2 threads went from 41-52
 * to 14 us at 1 sequence and from 459 to 228 at 16 (whose 9.7 MB of
 * logits come back from memory).
 */
static void topk_scan(struct shxd_topk *t, uint32_t k, const float *l, size_t lo,
		      size_t hi)
{
	size_t v = lo;
	float low;

	t->have = 0;
	for (; v < hi && t->have < k; v++)
		shxd_topk_add(t, k, (int32_t)v, l[v]);
	low = v < hi ? t->val[k - 1] : 0.0f;	/* t is full where v < hi */
	while (v < hi) {
		size_t end = hi - v >= SCAN_BLOCK ? v + SCAN_BLOCK : hi;

		if (end - v == SCAN_BLOCK && !block_above(l + v, low)) {
			v = end;
			continue;
		}
		for (; v < end; v++) {
			if (!(l[v] > low))
				continue;
			shxd_topk_add(t, k, (int32_t)v, l[v]);
			low = t->val[k - 1];
		}
	}
}

/*
 * A model's step is one run of the pools: every worker goes through
 * the layers phase by phase, with a barrier over all workers between
 * phases (a phase reads what other threads and nodes wrote), so the
 * engine thread does nothing between them. An MoE model's expert blocks
 * are phases of the same run (op_moe.c).
 */
struct fwd {
	struct shxd_cpu *cpu;
	struct shxd_wset *ws;
	const struct shxd_model *m;
	struct row *const *rows;
	size_t n, nout;
	/* scratch, see fwd_scratch */
	float *x, *h, *q, *k, *v, *a, *o, *cs, *logits;
	struct shxd_attn_seq *seq;	/* n_layer x n */
	uint32_t *oidx;			/* the rows that want output */
	struct shxd_attn at;
	float *pout[SHXD_MAX_POOLS];	/* the pools' FFN partial sums */
	struct shxd_moe mo;		/* an MoE model's expert blocks */
	/* Output rows cut into parts of the vocabulary, parts a row, so
	 * that every worker scans or copies logits: nout x parts lists. */
	struct shxd_topk *tk;
	unsigned int parts;
};

static int fwd_scratch(struct fwd *f)
{
	const struct shxd_model *m = f->m;
	size_t e = m->n_embd, qd = (size_t)m->n_head * m->head_dim;
	size_t kd = (size_t)m->n_head_kv * m->head_dim, n = f->n;
	size_t total = n * (3 * e + 2 * qd + 2 * kd + m->head_dim);
	size_t seqb = m->n_layer * n * sizeof(*f->seq);
	float *p = shxd_scratch(&f->cpu->ms[MS_STEP], total * sizeof(float));
	uint8_t *sq = shxd_scratch(&f->cpu->ms[MS_SEQ],
				   seqb + n * sizeof(*f->oidx));

	if (!p || !sq)
		return -ENOMEM;
	f->seq = (struct shxd_attn_seq *)(void *)sq;
	f->oidx = (uint32_t *)(void *)(sq + seqb);
	f->x = p;
	f->h = f->x + n * e;
	f->o = f->h + n * e;
	f->q = f->o + n * e;
	f->a = f->q + n * qd;
	f->k = f->a + n * qd;
	f->v = f->k + n * kd;
	f->cs = f->v + n * kd;	/* per row: head_dim / 2 cos, then sin */
	return 0;
}

static void embed(const struct fwd *f)
{
	const struct shxd_mat *w = f->m->embd;

	for (size_t r = 0; r < f->n; r++) {
		size_t t = (size_t)f->rows[r]->tok;
		unsigned int p = 0;

		while (t >= w->b[p + 1])
			p++;
		shxk_weights_row(&w->part[p], t - w->b[p], f->x + r * w->k);
	}
}

/* cos and sin of each row's angles, as ggml's rope cache computes them
 * (theta multiplied by the scale pair after pair, in float). */
static void rope_cache(const struct fwd *f)
{
	size_t half = f->m->head_dim / 2;
	float scale = powf(f->m->rope_base, -2.0f / (float)f->m->head_dim);

	for (size_t r = 0; r < f->n; r++) {
		float theta = (float)f->rows[r]->pos, *c = f->cs + r * 2 * half;

		for (size_t i = 0; i < half; i++) {
			c[i] = cosf(theta);
			c[half + i] = sinf(theta);
			theta *= scale;
		}
	}
}

/* Each layer's attention inputs for every row: its caches at that layer,
 * its block table, its context. */
static void attn_seqs(const struct fwd *f)
{
	const struct shxd_model *m = f->m;

	for (unsigned int l = 0; l < m->n_layer; l++) {
		for (size_t r = 0; r < f->n; r++) {
			const struct row *w = f->rows[r];

			f->seq[l * f->n + r] = (struct shxd_attn_seq){
				.kv = {
					.type = w->kvt,
					.block_size = w->block_size,
					.kv_heads = m->n_head_kv,
					.head_dim = m->head_dim,
					.k = w->k + l * w->layer_bytes,
					.v = w->v + l * w->layer_bytes,
				},
				.bt = w->bt, .len = (size_t)w->pos + 1,
			};
		}
	}
}

/* RoPE on nh heads of row r of x: adjacent pairs (llama) or halves
 * (NeoX: qwen). */
static void rope(const struct fwd *f, float *x, size_t r, size_t nh)
{
	size_t hd = f->m->head_dim, half = hd / 2;
	const float *c = f->cs + r * 2 * half, *s = c + half;

	for (size_t h = 0; h < nh; h++) {
		float *y = x + h * hd;

		for (size_t i = 0; i < half; i++) {
			size_t a = f->m->neox ? i : 2 * i;
			size_t b = f->m->neox ? i + half : 2 * i + 1;
			float x0 = y[a], x1 = y[b];

			y[a] = x0 * c[i] - x1 * s[i];
			y[b] = x0 * s[i] + x1 * c[i];
		}
	}
}

static void add_bias(float *x, const float *b, size_t d)
{
	for (size_t i = 0; b && i < d; i++)
		x[i] += b[i];
}

/*
 * Heads [u0, u1) of the step's rows after Q/K/V, n_head + n_head_kv a row
 * (query heads, then kv heads): biases, q/k norms, RoPE, and the new K
 * and V rows stored in each row's cache at layer l. By head, not by row:
 * one row's 36 heads on one worker while the other waited took 80 us a
 * step of a 4-layer qwen3-30b-a3b, 53 split (docs/benchmarks.md).
 */
static void qkv_post(const struct fwd *f, unsigned int l, size_t u0,
		     size_t u1)
{
	const struct shxd_model *m = f->m;
	const struct shxd_layer *y = &m->layer[l];
	size_t hd = m->head_dim, qd = m->n_head * hd, kd = m->n_head_kv * hd;
	size_t per = m->n_head + m->n_head_kv;

	for (size_t u = u0; u < u1; u++) {
		size_t r = u / per, h = u % per, j, slot, at;
		const struct row *w = f->rows[r];
		float *q = f->q + r * qd, *k = f->k + r * kd, *v = f->v + r * kd;

		if (h < m->n_head) {
			add_bias(q + h * hd, y->bq ? y->bq + h * hd : NULL, hd);
			if (y->q_norm)
				shxk_rmsnorm(q, y->q_norm, q, hd, m->eps, h, h + 1);
			rope(f, q + h * hd, r, 1);
			continue;
		}
		j = h - m->n_head;
		slot = (size_t)w->bt[(size_t)w->pos / w->block_size] *
		       w->block_size + (size_t)w->pos % w->block_size;
		at = l * w->layer_bytes +
		     (slot * kd + j * hd) * shxd_act_size(w->kvt);
		add_bias(k + j * hd, y->bk ? y->bk + j * hd : NULL, hd);
		add_bias(v + j * hd, y->bv ? y->bv + j * hd : NULL, hd);
		if (y->k_norm)
			shxk_rmsnorm(k, y->k_norm, k, hd, m->eps, j, j + 1);
		rope(f, k + j * hd, r, 1);
		shxd_from_f32(w->kvt, k + j * hd, w->k + at, hd);
		shxd_from_f32(w->kvt, v + j * hd, w->v + at, hd);
	}
}

/*
 * Rows that go on past layer l's attention: all of them, but at the last
 * layer only those that want output; the others leave their K and V rows
 * behind and nothing else (llama.cpp skips them the same way), which
 * takes the output projection and FFN of the last layer off a prompt.
 */
static size_t rows_past_attn(const struct fwd *f, unsigned int l)
{
	return l + 1 == f->m->n_layer ? f->nout : f->n;
}

/* The output rows' residuals and attention outputs moved to the front, in
 * place: oidx ascends, so no row is read after it was written over. */
static void keep_out_rows(const struct fwd *f)
{
	size_t e = f->m->n_embd, qd = (size_t)f->m->n_head * f->m->head_dim;

	for (size_t j = 0; j < f->nout; j++) {
		size_t r = f->oidx[j];

		if (r == j)
			continue;
		memcpy(f->x + j * e, f->x + r * e, e * sizeof(float));
		memcpy(f->a + j * qd, f->a + r * qd, qd * sizeof(float));
	}
}

/* The matrices of layer l's phases, as each worker builds them. */
static void layer_lin(const struct fwd *f, unsigned int l,
		      const struct shxd_mat **qkv, float **qkv_out,
		      struct shxd_lin *lq, struct shxd_lin *lo,
		      struct shxd_seg *sg, struct shxd_lin *lf)
{
	const struct shxd_model *m = f->m;
	const struct shxd_layer *y = &m->layer[l];
	size_t n = rows_past_attn(f, l);

	qkv[0] = y->wq;
	qkv[1] = y->wk;
	qkv[2] = y->wv;
	qkv_out[0] = f->q;
	qkv_out[1] = f->k;
	qkv_out[2] = f->v;
	*lq = (struct shxd_lin){ .cpu = f->cpu, .k = m->n_embd, .w = qkv,
				 .out = qkv_out, .nw = 3, .in = f->h, .m = f->n };
	*lo = (struct shxd_lin){ .cpu = f->cpu, .k = y->wo->k, .w = &y->wo,
				 .out = &f->o, .nw = 1, .in = f->a, .m = n };
	*sg = (struct shxd_seg){ .g = y->gate, .u = y->up, .d = y->down,
				 .in = f->h, .m = n };
	*lf = (struct shxd_lin){ .cpu = f->cpu, .k = m->n_embd, .segs = sg,
				 .nseg = 1 };
	memcpy(lf->pout, f->pout, sizeof(lf->pout));
}

/* Layer l's expert block over m rows of x, as an MOE job (its x and y
 * are the run's x: shxd_moe_work takes it). */
static void moe_job(const struct fwd *f, unsigned int l, size_t m,
		    struct shxd_pjob *p)
{
	const struct shxd_layer *y = &f->m->layer[l];

	*p = (struct shxd_pjob){
		.op = SYSHAX_OP_MOE, .ws = f->ws, .m = (unsigned int)m,
		.layer = l, .eps = f->m->eps, .norm = y->ffn_norm,
		/* Qwen3-MoE: softmax router, top-k renormalized. */
		.flags = SYSHAX_MOE_NORM | SYSHAX_MOE_RESIDUAL |
			 SYSHAX_MOE_NORM_TOPK,
		.route = SYSHAX_MOE_ROUTE_ROUTER, .topk = f->m->n_expert_used,
		.nexp = f->m->n_expert, .router = y->router,
	};
}

static void fwd_layer(struct fwd *f, unsigned int l,
		      const struct shxd_worker *w, size_t a, size_t b)
{
	struct shxd_pool *pool = f->cpu->pool;
	const struct shxd_model *m = f->m;
	const struct shxd_layer *y = &m->layer[l];
	size_t e = m->n_embd, n = f->n, e0, e1;
	const struct shxd_mat *qkv[3];
	float *qkv_out[3];
	struct shxd_lin lq, lo, lf;
	struct shxd_seg sg;
	struct shxd_attn at = f->at;

	layer_lin(f, l, qkv, qkv_out, &lq, &lo, &sg, &lf);
	at.seq = f->seq + l * n;
	shxk_rmsnorm(f->x, y->attn_norm, f->h, e, m->eps, a, b);
	shxd_pool_gbarrier(pool, w);
	shxd_lin_work(&lq, w);
	shxd_pool_gbarrier(pool, w);
	shxd_split(n * (m->n_head + m->n_head_kv), 1, w->gtid, w->gnthr, &e0,
		   &e1);
	qkv_post(f, l, e0, e1);
	shxd_pool_gbarrier(pool, w);
	shxd_attn_work(&at, w);
	shxd_pool_gbarrier(pool, w);
	if (at.chunks > 1) {
		shxd_attn_merge(&at, w);
		shxd_pool_gbarrier(pool, w);
	}
	if (rows_past_attn(f, l) < n) {
		if (!w->gtid)
			keep_out_rows(f);
		n = rows_past_attn(f, l);
		shxd_split(n, 1, w->gtid, w->gnthr, &a, &b);
		shxd_pool_gbarrier(pool, w);
	}
	shxd_lin_work(&lo, w);
	shxd_pool_gbarrier(pool, w);
	for (size_t i = a * e; i < b * e; i++)
		f->x[i] += f->o[i];
	if (m->n_expert) {
		struct shxd_pjob p, *pp = &p;

		/* The block's norm reads the rows this thread just wrote. */
		moe_job(f, l, n, &p);
		shxd_moe_work(&f->mo, &pp, 1, f->x, n, w);
		return;
	}
	shxk_rmsnorm(f->x, y->ffn_norm, f->h, e, m->eps, a, b);
	shxd_pool_gbarrier(pool, w);
	shxd_lin_work(&lf, w);
	shxd_pool_gbarrier(pool, w);
	/* The residual and the pools' partial sums, split by element. */
	shxd_split(n * e, 16, w->gtid, w->gnthr, &e0, &e1);
	for (unsigned int p = 0; p < shxd_pool_count(pool); p++)
		for (size_t i = e0; i < e1; i++)
			f->x[i] += f->pout[p][i];
	shxd_pool_gbarrier(pool, w);
}

/* Part i % parts of output row i / parts: its logits copied out, or its
 * k highest into tk[i] (ids in order: write_out merges the parts). */
static void out_part(const struct fwd *f, size_t i)
{
	size_t nv = f->m->n_vocab, j = i / f->parts, p = i % f->parts;
	size_t lo = nv * p / f->parts, hi = nv * (p + 1) / f->parts;
	const struct row *w = f->rows[f->oidx[j]];
	const float *l = f->logits + j * nv;

	if (w->out_kind == SYSHAX_STEP_OUT_LOGITS) {
		memcpy((float *)w->out + lo, l + lo, (hi - lo) * sizeof(float));
		return;
	}
	topk_scan(&f->tk[i], w->topk, l, lo, hi);
}

static void fwd_worker(void *arg, const struct shxd_worker *w)
{
	struct fwd *f = arg;
	const struct shxd_model *m = f->m;
	size_t a, b, e = m->n_embd;
	struct shxd_lin lout = {
		.cpu = f->cpu, .k = e, .w = &m->output, .out = &f->logits,
		.nw = 1, .in = f->h, .m = f->nout,
	};

	shxd_split(f->n, 1, w->gtid, w->gnthr, &a, &b);
	for (unsigned int l = 0; l < m->n_layer; l++)
		fwd_layer(f, l, w, a, b);
	shxd_split(f->nout, 1, w->gtid, w->gnthr, &a, &b);
	for (size_t j = a; j < b; j++)
		shxk_rmsnorm(f->x + j * e, m->output_norm,
			     f->h + j * e, e, m->eps, 0, 1);
	shxd_pool_gbarrier(f->cpu->pool, w);
	shxd_lin_work(&lout, w);
	shxd_pool_gbarrier(f->cpu->pool, w);
	shxd_split(f->nout * f->parts, 1, w->gtid, w->gnthr, &a, &b);
	for (size_t i = a; i < b; i++)
		out_part(f, i);
}

/* Scratch of this run's phases (the MoE op between runs may move it),
 * then the run. */
static int fwd_run(struct fwd *f)
{
	const struct shxd_model *m = f->m;
	int ret = shxd_attn_setup(&f->at, f->cpu, f->seq, f->n, m->n_head,
				  1.0f / sqrtf((float)m->head_dim), f->q, f->a);

	for (unsigned int l = 0; !ret && l < m->n_layer; l++) {
		const struct shxd_mat *qkv[3];
		float *qkv_out[3];
		struct shxd_lin lq, lo, lf;
		struct shxd_seg sg;
		struct shxd_pjob p, *pp = &p;

		layer_lin(f, l, qkv, qkv_out, &lq, &lo, &sg, &lf);
		ret = shxd_lin_grow(&lq, 0);
		if (!ret)
			ret = shxd_lin_grow(&lo, 0);
		if (!ret && m->n_expert) {
			moe_job(f, l, f->n, &p);
			ret = shxd_moe_setup(&f->mo, f->cpu, &pp, 1, f->n);
		} else if (!ret) {
			ret = shxd_lin_grow(&lf, f->n);
		}
		memcpy(f->pout, lf.pout, sizeof(f->pout));
	}
	if (!ret) {
		struct shxd_lin lout = { .cpu = f->cpu, .k = m->n_embd,
					 .w = &m->output, .nw = 1,
					 .m = f->nout };
		unsigned int nthr = shxd_pool_all_threads(f->cpu->pool);

		f->parts = f->nout && f->nout < nthr ?
			   (unsigned int)((nthr + f->nout - 1) / f->nout) : 1;
		f->logits = shxd_scratch(&f->cpu->ms[MS_LOGITS],
					 f->nout * m->n_vocab * sizeof(float));
		f->tk = shxd_scratch(&f->cpu->ms[MS_TOPK],
				     f->nout * f->parts * sizeof(*f->tk));
		ret = f->logits && f->tk ? shxd_lin_grow(&lout, 0) : -ENOMEM;
	}
	if (!ret)
		shxd_pool_run(f->cpu->pool, fwd_worker, f);
	/* An expert block's error, seen after the run. */
	return ret ? ret : f->mo.err;
}

/* The rows' k highest: each row's parts merged in id order, as one scan
 * over the whole vocabulary would have kept them. */
static void write_out(const struct fwd *f)
{
	for (size_t j = 0; j < f->nout; j++) {
		const struct row *w = f->rows[f->oidx[j]];
		struct shxd_topk *t = &f->tk[j * f->parts];

		if (w->out_kind == SYSHAX_STEP_OUT_LOGITS)
			continue;
		for (unsigned int p = 1; p < f->parts; p++)
			for (uint32_t i = 0; i < t[p].have; i++)
				shxd_topk_add(t, w->topk, t[p].ids[i],
					      t[p].val[i]);
		for (uint32_t i = 0; i < w->topk; i++) {
			memcpy((uint8_t *)w->out + i * 8, &t->ids[i], 4);
			memcpy((uint8_t *)w->out + i * 8 + 4, &t->val[i], 4);
		}
	}
}

static int forward(struct shxd_cpu *cpu, struct shxd_wset *ws,
		   struct row *const *rows, size_t n)
{
	struct fwd f = { .cpu = cpu, .ws = ws, .m = ws->model, .rows = rows,
			 .n = n };
	int ret = fwd_scratch(&f);

	if (ret)
		return ret;
	for (size_t r = 0; r < n; r++)
		if (rows[r]->out)
			f.oidx[f.nout++] = (uint32_t)r;
	embed(&f);
	rope_cache(&f);
	attn_seqs(&f);
	ret = fwd_run(&f);
	if (!ret)
		write_out(&f);
	return ret;
}

/* ---- jobs ---- */

/* Runs checked steps as one list of rows and completes them. */
static void run_steps(struct shxd_cpu *cpu, struct step *s, unsigned int ns,
		      uint32_t op, struct syshax_engine_cpl *cpls)
{
	struct row **rows;
	size_t n = 0;
	uint64_t t0 = shxd_now_ns(), t1;
	int ret = -ENOMEM;

	for (unsigned int i = 0; i < ns; i++)
		n += s[i].n;
	rows = shxd_scratch(&cpu->ms[MS_ROWS], n * sizeof(*rows));
	if (rows) {
		for (unsigned int i = 0, o = 0; i < ns; i++)
			for (size_t r = 0; r < s[i].n; r++)
				rows[o++] = &s[i].rows[r];
		ret = forward(cpu, s[0].ws, rows, n);
	}
	t1 = shxd_now_ns();
	for (unsigned int i = 0; i < ns; i++) {
		struct syshax_engine_cpl *c = &cpls[s[i].idx];

		c->status = ret;
		c->result = ret ? 0 : s[i].nout;
		c->exec_ns = t1 - t0;
		step_release(&s[i]);
	}
	if (!ret && op == SYSHAX_OP_DECODE) {
		pthread_mutex_lock(&cpu->stats_lock);
		shxd_load_add(&cpu->load, t0, t1, (unsigned int)n);
		pthread_mutex_unlock(&cpu->stats_lock);
	}
	for (unsigned int p = 0; p < shxd_pool_count(cpu->pool); p++)
		cpu->pool_ns[p] = t1 - t0;
	shxd_account(cpu, op, ns, n, ret, ns > 1);
}

/* The rule for one MAY_DEFER job, with rows already kept in this batch. */
static bool defer(struct shxd_cpu *cpu, size_t kept)
{
	struct shxd_dispatch_in in;
	enum shxd_why why;
	bool d;

	pthread_mutex_lock(&cpu->stats_lock);
	shxd_load_get(&cpu->load, shxd_now_ns(), &in.cpu_running, &in.cpu_tps);
	if (kept > in.cpu_running)
		in.cpu_running = (unsigned int)kept;
	in.xpu_running = cpu->xpu_running;
	in.xpu_tps = cpu->xpu_tps;
	in.max_batch = cpu->max_batch;
	d = shxd_dispatch(&in, &why) == SHXD_SIDE_XPU;
	if (d)
		cpu->stats.decode_deferred++;
	else
		cpu->stats.decode_kept++;
	pthread_mutex_unlock(&cpu->stats_lock);
	return d;
}

void shxd_op_steps(struct shxd_cpu *cpu, struct shxd_xjob *jobs,
		   unsigned int i, unsigned int n,
		   struct syshax_engine_cpl *cpls, bool *done)
{
	static _Thread_local struct step s[SHXD_ENGINE_BATCH];
	uint32_t op = jobs[i].job->op;
	unsigned int ns = 0;
	size_t rows = 0;
	int ret;

	/* A PREFILL runs alone; DECODE jobs of one model fetched together
	 * run as one batch of up to max_batch rows. */
	for (unsigned int j = i; j < n && (op == SYSHAX_OP_DECODE || j == i);
	     j++) {
		struct step *c = &s[ns];

		if (done[j] || jobs[j].status || jobs[j].job->op != op)
			continue;
		if (ns && rows >= cpu->max_batch)
			break;
		ret = step_check(&jobs[j], c);
		if (ret) {
			done[j] = true;
			cpls[j].status = ret;
			shxd_account(cpu, op, 1, 0, ret, false);
			continue;
		}
		/* Sets of one file loaded twice hold one model: one batch. */
		if (ns && (!shxd_wset_same_tensors(c->ws, s[0].ws) ||
			   rows + c->n > cpu->max_batch)) {
			step_release(c);	/* a later batch takes it */
			continue;
		}
		done[j] = true;
		if ((jobs[j].job->flags & SYSHAX_JOB_MAY_DEFER) &&
		    op == SYSHAX_OP_DECODE && defer(cpu, rows)) {
			cpls[j].flags = SYSHAX_CPL_DEFERRED;
			step_release(c);
			continue;
		}
		c->idx = j;
		rows += c->n;
		ns++;
	}
	if (ns)
		run_steps(cpu, s, ns, op, cpls);
}

static int model_load(struct shxd_cpu *cpu, const struct shxd_xjob *xj,
		      __u64 *id)
{
	struct syshax_model_load_params a;
	struct syshax_model_info mi;
	struct shxd_wset *ws;
	void *info = NULL;
	enum shxk_type q;
	uint64_t t0 = shxd_now_ns();
	char err[512];
	int ret;

	if (shxd_params(xj, &a, sizeof(a)) || a.flags ||
	    !shxd_zero(a.reserved, sizeof(a.reserved)) ||
	    shxd_quant_type(cpu, a.quantize, &q) || xj->job->nr_refs > 1 ||
	    !memchr(a.path, '\0', sizeof(a.path)) || !a.path[0])
		return -EINVAL;
	if (xj->job->nr_refs) {
		ret = shxd_ref_span(xj, 0, SYSHAX_ACCESS_WRITE, sizeof(mi),
				    &info);
		if (ret)
			return ret;
	}
	ret = shxd_wload_model(cpu->model_dir, a.path, q, cpu->pool, &ws, err,
			       sizeof(err));
	if (ret) {
		shxd_log(LOG_WARNING, "model %s: %s", a.path,
			 err[0] ? err : strerror(-ret));
		return ret;
	}
	ret = shxd_wreg_publish(cpu, ws, xj->ctx, a.path, id);
	if (ret)
		return ret;
	shxd_model_info(ws, &mi);
	shxd_log(LOG_INFO, "model %s: %s, %u layers, %u embd, %u heads (%u kv), "
		 "%u vocab%s, %.1f MiB in %.2f s", a.path,
		 shxd_model_arch_name(ws->model->arch), mi.n_layer, mi.n_embd,
		 mi.n_head, mi.n_head_kv, mi.n_vocab,
		 mi.n_expert ? ", experts" : "",
		 (double)mi.weight_bytes / (1 << 20),
		 (double)(shxd_now_ns() - t0) / 1e9);
	if (info)
		memcpy(info, &mi, sizeof(mi));
	return 0;
}

static int report_xpu(struct shxd_cpu *cpu, const struct shxd_xjob *xj)
{
	struct syshax_report_xpu_params a;
	float tps;

	if (shxd_params(xj, &a, sizeof(a)) || xj->job->nr_refs ||
	    !shxd_zero(a.reserved, sizeof(a.reserved)))
		return -EINVAL;
	memcpy(&tps, &a.tokens_per_s, sizeof(tps));
	if (!isfinite(tps) || tps < 0.0f)
		return -EINVAL;
	pthread_mutex_lock(&cpu->stats_lock);
	cpu->xpu_running = a.running;
	cpu->xpu_tps = tps;
	cpu->stats.xpu_reports++;
	pthread_mutex_unlock(&cpu->stats_lock);
	return 0;
}

int shxd_op_model(struct shxd_cpu *cpu, const struct shxd_xjob *xj,
		  __u64 *result)
{
	switch (xj->job->op) {
	case SYSHAX_OP_MODEL_LOAD:
		return model_load(cpu, xj, result);
	case SYSHAX_OP_REPORT_XPU:
		return report_xpu(cpu, xj);
	default:
		return -EINVAL;
	}
}
