// SPDX-License-Identifier: MIT
/*
 * Our kernels (libshxk) under the same conditions as the peers: a rotation
 * set of weight copies (>= 512 MiB) so each call streams from DRAM,
 * pinned threads claiming row-range chunks, activations prepared inside
 * the timed call (ggml quantizes its input inside its call too).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "shxk.h"

static const enum shxk_type shxk_of[BENCH_NWTYPES] = {
	[BENCH_Q4_0] = SHXK_Q4_0, [BENCH_Q8_0] = SHXK_Q8_0,
	[BENCH_BF16] = SHXK_BF16, [BENCH_F16] = SHXK_F16,
	[BENCH_F32] = SHXK_F32,
};

/*
 * Threads claim chunks of output rows (attention: (sequence, kv head)
 * pairs) from a shared counter, as ggml's CPU backend does, so that a
 * thread slowed by other load on its core takes fewer chunks instead of
 * holding up the call. Each chunk is one row-range call of libshxk.
 */
#define CHUNKS_PER_THREAD 8
/*
 * But no chunk under this many weight bytes: each chunk restarts the
 * kernel's prefetch stream, which costs small matrices (the expert
 * shapes) a quarter of their time when cut in 16.
 */
#define MIN_CHUNK_BYTES (512u << 10)
/* Chunks start on this multiple of rows (an X8 group, a cache line). */
#define ROW_ALIGN 16
#define MAX_THREADS 64

struct ours_case {
	struct shxk_weights w;		/* data: the copy in use */
	char *mem;
	size_t stride, copies, mem_bytes;
};

/* One timed configuration: the case, its inputs and the team. */
struct ours_run {
	struct ours_case *c;
	size_t m, use, next;
	const float *x;
	void *act;
	float *y;
	struct bench_team *team;
	size_t chunk;			/* rows per claimed chunk */
	atomic_size_t claimed;		/* chunks handed out this call */
	int err[MAX_THREADS];
};

int ours_init(const char **isa)
{
	int err = shxk_init();

	*isa = shxk_isa_name();
	return err;
}

int ours_case_new(struct ours_case **out, enum bench_wtype t, int k, int n,
		  const float *w, int x8)
{
	enum shxk_type st = shxk_of[t];
	struct ours_case *c;
	size_t rows_bytes = shxk_row_size(st, (size_t)k) * (size_t)n, i;
	void *rows;
	int err;

	if (!rows_bytes)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	rows = malloc(rows_bytes);
	if (!c || !rows) {
		free(c);
		free(rows);
		return -ENOMEM;
	}
	c->w = (struct shxk_weights){ .type = st, .n = (size_t)n,
				      .k = (size_t)k, .data = rows };
	/* The interleaved layout exists for the block formats only. */
	x8 = x8 && (st == SHXK_Q4_0 || st == SHXK_Q8_0);
	c->stride = x8 ? shxk_repack_size(st, SHXK_LAYOUT_X8, c->w.n, c->w.k) :
			 rows_bytes;
	c->stride = (c->stride + 4095) & ~(size_t)4095;
	c->copies = bench_copies(c->stride);
	c->mem_bytes = c->stride * c->copies;
	c->mem = bench_alloc(c->mem_bytes);
	err = c->mem ? shxk_quantize(st, w, rows, c->w.k, 0, c->w.n) : -ENOMEM;
	if (!err && x8)
		err = shxk_repack(&c->w, SHXK_LAYOUT_X8, c->mem, 0,
				  (c->w.n + 7) / 8);
	else if (!err)
		memcpy(c->mem, rows, rows_bytes);
	free(rows);
	if (err) {
		ours_case_free(c);
		return err;
	}
	c->w.layout = x8 ? SHXK_LAYOUT_X8 : SHXK_LAYOUT_ROWS;
	c->w.data = c->mem;
	for (i = 1; i < c->copies; i++)
		memcpy(c->mem + i * c->stride, c->mem, c->stride);
	*out = c;
	return 0;
}

void ours_case_free(struct ours_case *c)
{
	if (!c)
		return;
	bench_free(c->mem, c->mem_bytes);
	free(c);
}

/* A whole number of chunks per thread, each of MIN_CHUNK_BYTES or more. */
static size_t chunk_rows(const struct ours_case *c, int nthr)
{
	size_t n = c->w.n, t = (size_t)nthr;
	size_t chunks = shxk_row_size(c->w.type, c->w.k) * n /
			MIN_CHUNK_BYTES / t * t;
	size_t rows;

	chunks = chunks < t ? t : chunks;
	chunks = chunks > t * CHUNKS_PER_THREAD ? t * CHUNKS_PER_THREAD : chunks;
	rows = (n + chunks - 1) / chunks;
	return (rows + ROW_ALIGN - 1) / ROW_ALIGN * ROW_ALIGN;
}

static void gemm_rows(void *arg, int tid, int nthr)
{
	struct ours_run *r = arg;
	size_t n = r->c->w.n, n0;
	int err = 0;

	(void)nthr;
	while (!err && (n0 = r->chunk * atomic_fetch_add_explicit(
				&r->claimed, 1, memory_order_relaxed)) < n)
		err = shxk_gemm(&r->c->w, r->act, r->m, r->y, SHXK_F32, n,
				n0, n0 + r->chunk < n ? n0 + r->chunk : n);
	r->err[tid] = err;
}

static int first_err(const int *err, int nthr)
{
	for (int i = 0; i < nthr; i++)
		if (err[i])
			return err[i];
	return 0;
}

static int gemm_call(void *arg)
{
	struct ours_run *r = arg;
	struct ours_case *c = r->c;
	int err;

	c->w.data = c->mem + r->next * c->stride;
	r->next = (r->next + 1) % r->use;
	err = shxk_act_prepare(c->w.type, SHXK_F32, r->x, c->w.k, c->w.k,
			       r->act, 0, r->m);
	if (err)
		return err;
	atomic_store_explicit(&r->claimed, 0, memory_order_relaxed);
	bench_team_run(r->team, gemm_rows, r);
	return first_err(r->err, MAX_THREADS);
}

int ours_case_time(struct ours_case *c, int m, int nthr, int warm,
		   double budget_s, double *sec)
{
	struct ours_run *r;
	float *x;
	size_t i;
	int err = -ENOMEM;

	if (nthr > MAX_THREADS)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	x = malloc(c->w.k * (size_t)m * sizeof(*x));
	if (!r || !x)
		goto out;
	r->c = c;
	r->m = (size_t)m;
	r->chunk = chunk_rows(c, nthr);
	r->use = warm ? 1 : c->copies;
	for (i = 0; i < c->w.k * (size_t)m; i++)
		x[i] = (float)((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
	r->x = x;
	r->act = malloc(shxk_act_row_size(c->w.type, c->w.k) * (size_t)m);
	r->y = malloc(c->w.n * (size_t)m * sizeof(float));
	if (!r->act || !r->y)
		goto out;
	err = bench_team_new(&r->team, nthr);
	if (err)
		goto out;
	err = bench_time_calls(gemm_call, r, budget_s, sec);
	bench_team_free(r->team);
out:
	if (r) {
		free(r->act);
		free(r->y);
	}
	free(r);
	free(x);
	return err;
}

/* ---- decode attention ---- */

#define ATTN_BLOCK	16	/* tokens per KV block */

struct attn_run {
	struct shxk_kv_cache kv;
	int32_t *tables;	/* slots x blocks_per_seq block numbers */
	float *q, *out;		/* nseq x q_heads x head_dim */
	float *parts, *ml;	/* split-K partial outputs and max/sums */
	size_t qh, nseq, nparts, slots, use, next, bps;
	atomic_size_t claimed;		/* (sequence, context part) pairs */
	struct bench_team *team;
	int err[MAX_THREADS];
};

/*
 * A chunk is all heads of one sequence over a range of its context: the
 * cache's position rows hold every kv head side by side, so a chunk reads
 * whole blocks in order. With fewer sequences than threads each sequence
 * is split over its context (split-K) and the parts merged after.
 */
static void attn_rows(void *arg, int tid, int nthr)
{
	struct attn_run *r = arg;
	size_t units = r->nseq * r->nparts, u;
	size_t qsz = r->qh * BENCH_ATTN_HEAD_DIM;
	size_t blocks = BENCH_ATTN_CTX / ATTN_BLOCK;
	float scale = 1.0f / 11.3137085f;	/* 1 / sqrt(128) */
	int err = 0;

	(void)nthr;
	while (!err && (u = atomic_fetch_add_explicit(
				&r->claimed, 1, memory_order_relaxed)) < units) {
		size_t s = u / r->nparts, p = u % r->nparts;
		size_t slot = (r->next * r->nseq + s) % r->slots;
		size_t c0 = blocks * p / r->nparts * ATTN_BLOCK;
		size_t c1 = blocks * (p + 1) / r->nparts * ATTN_BLOCK;
		int split = r->nparts > 1;

		err = shxk_attn_decode(&r->kv, r->tables + slot * r->bps,
				       r->q + s * qsz, r->qh, scale, c0, c1,
				       split ? r->parts + u * qsz : r->out + s * qsz,
				       split ? r->ml + u * r->qh * 2 : NULL,
				       0, r->qh);
	}
	r->err[tid] = err;
}

static int attn_call(void *arg)
{
	struct attn_run *r = arg;

	size_t qsz = r->qh * BENCH_ATTN_HEAD_DIM, s;
	int err;

	atomic_store_explicit(&r->claimed, 0, memory_order_relaxed);
	bench_team_run(r->team, attn_rows, r);
	r->next = (r->next + 1) % r->use;
	err = first_err(r->err, MAX_THREADS);
	/* The merge is part of the call: a split sequence needs it. */
	for (s = 0; !err && r->nparts > 1 && s < r->nseq; s++)
		err = shxk_attn_merge(r->parts + s * r->nparts * qsz,
				      r->ml + s * r->nparts * r->qh * 2,
				      r->nparts, r->qh, BENCH_ATTN_HEAD_DIM,
				      r->out + s * qsz, 0, r->qh);
	return err;
}

int ours_attn_time(int q_heads, int kv_heads, int nseq, int nthr, int warm,
		   double budget_s, double *sec, double *kv_bytes)
{
	size_t hd = BENCH_ATTN_HEAD_DIM, qsz = (size_t)q_heads * hd;
	size_t blk = ATTN_BLOCK * (size_t)kv_heads * hd * 2;	/* f16 */
	size_t seq_bytes = 2 * BENCH_ATTN_CTX / ATTN_BLOCK * blk;
	struct attn_run r = { .qh = (size_t)q_heads, .nseq = (size_t)nseq };
	size_t nblocks, i, half;
	char *pool = NULL;
	int err = -ENOMEM;

	if (nthr > MAX_THREADS || nseq < 1 || kv_heads < 1 ||
	    q_heads < kv_heads || q_heads % kv_heads)
		return -EINVAL;
	r.bps = BENCH_ATTN_CTX / ATTN_BLOCK;
	r.nparts = ((size_t)nthr + (size_t)nseq - 1) / (size_t)nseq;
	/* Enough sequence slots for >= 512 MiB of K and V, in whole steps. */
	r.slots = (size_t)nseq * bench_copies(seq_bytes * (size_t)nseq);
	r.use = warm ? 1 : r.slots / (size_t)nseq;
	nblocks = r.slots * r.bps;
	half = nblocks * blk;
	pool = bench_alloc(2 * half);
	r.tables = malloc(nblocks * sizeof(*r.tables));
	r.q = malloc((size_t)nseq * qsz * sizeof(float));
	r.out = malloc((size_t)nseq * qsz * sizeof(float));
	r.parts = malloc((size_t)nseq * r.nparts * qsz * sizeof(float));
	r.ml = malloc((size_t)nseq * r.nparts * r.qh * 2 * sizeof(float));
	if (!pool || !r.tables || !r.q || !r.out || !r.parts || !r.ml)
		goto out;
	/* 0x3030 is a small finite f16: the values do not change the time. */
	memset(pool, 0x30, 2 * half);
	for (i = 0; i < (size_t)nseq * qsz; i++)
		r.q[i] = (float)(i % 17) / 17.0f;
	/* Blocks scattered over the pool, as a paged cache ends up. */
	for (i = 0; i < nblocks; i++)
		r.tables[i] = (int32_t)i;
	for (i = nblocks - 1; i > 0; i--) {
		size_t j = (i * 2654435761u + 12345) % (i + 1);
		int32_t tmp = r.tables[i];

		r.tables[i] = r.tables[j];
		r.tables[j] = tmp;
	}
	r.kv = (struct shxk_kv_cache){
		.type = SHXK_F16, .block_size = ATTN_BLOCK,
		.kv_heads = (size_t)kv_heads, .head_dim = hd,
		.k = pool, .v = pool + half,
	};
	err = bench_team_new(&r.team, nthr);
	if (err)
		goto out;
	err = bench_time_calls(attn_call, &r, budget_s, sec);
	bench_team_free(r.team);
	*kv_bytes = (double)seq_bytes * nseq;
out:
	bench_free(pool, 2 * half);
	free(r.tables);
	free(r.q);
	free(r.out);
	free(r.parts);
	free(r.ml);
	return err;
}
