// SPDX-License-Identifier: MIT
/*
 * syshax-bench ffn, part (c): one ATTN_DECODE job (one sequence, a 4,096
 * context, 32 query / 8 KV heads of 128, f16 KV: 16.8 MB of blocks
 * scattered over a 134 MB buffer, as a paged KV cache holds them) against
 * the bare kernel doing the same items (shxk_attn_split) on as many
 * threads in this process, and the same merge. The two outputs are
 * compared, so both did the same work.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "shxk.h"
#include "syshax/rt.h"

#define CTX		4096
#define QH		32
#define KVH		8
#define HD		128
#define BS		16
#define NBLOCKS		2048	/* 8 times the context: 134 MB of K and V */
#define USED		(CTX / BS)

struct attn_bare {
	struct shxk_kv_cache kv;
	const int32_t *bt;
	const float *q;
	float *out, *parts, *ml;
	unsigned int threads;
	size_t ranges, chunks;
};

/* The engine's items (op_attn.c), item j on thread j % nthr. */
static void bare_items(void *arg, int tid, int nthr)
{
	const struct attn_bare *a = arg;
	size_t items = a->ranges * a->chunks;

	for (size_t j = (size_t)tid; j < items; j += (size_t)nthr)
		shxk_attn_decode_item(&a->kv, a->bt, a->q, QH,
				      1.0f / sqrtf((float)HD), CTX, a->ranges,
				      a->chunks, j,
				      a->chunks > 1 ? a->parts : a->out, a->ml);
}

static int bare_rounds(void *arg, unsigned int n, double *lat)
{
	struct attn_bare *a = arg;
	struct bench_team *team;
	int ret = bench_team_new(&team, (int)a->threads);

	for (unsigned int i = 0; !ret && i < n; i++) {
		uint64_t t0 = bench_now_ns();

		bench_team_run(team, bare_items, a);
		if (a->chunks > 1)
			shxk_attn_merge(a->parts, a->ml, a->chunks, QH, HD,
					a->out, 0, QH);
		lat[i] = (double)(bench_now_ns() - t0) / 1e3;
	}
	if (!ret)
		bench_team_free(team);
	return ret;
}

static float urand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return (float)(*s >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
}

/* The used blocks of K and V get values in [-1, 1); the rest of the
 * buffer stays untouched, as a cache's free blocks are. */
static void fill(uint16_t *k, uint16_t *v, int32_t *bt, float *q)
{
	size_t blk = (size_t)BS * KVH * HD;
	uint64_t seed = 0x2545f4914f6cdd1dULL;

	for (unsigned int i = 0; i < USED; i++) {
		bt[i] = (int32_t)((i * 1031u + 7u) % NBLOCKS);
		for (size_t e = 0; e < blk; e++) {
			k[(size_t)bt[i] * blk + e] = shxk_fp32_to_fp16(urand(&seed));
			v[(size_t)bt[i] * blk + e] = shxk_fp32_to_fp16(urand(&seed));
		}
	}
	for (size_t e = 0; e < (size_t)QH * HD; e++)
		q[e] = urand(&seed);
}

int bench_attn_job(struct syshax *sh, unsigned int threads,
		   unsigned int rounds, struct bench_jobtime *r, double *maxdiff)
{
	const uint64_t cache = (uint64_t)NBLOCKS * BS * KVH * HD * 2;
	const uint64_t qb = (uint64_t)QH * HD * 4, btb = USED * 4;
	struct syshax_attn_decode_params p = {
		.num_seqs = 1, .q_heads = QH, .kv_heads = KVH, .head_dim = HD,
		.block_size = BS, .num_blocks = NBLOCKS, .max_blocks = USED,
		.kv_type = SYSHAX_DT_F16, .q_type = SYSHAX_DT_F32,
		.o_type = SYSHAX_DT_F32,
	};
	struct syshax_buffer kv = { 0 }, io = { 0 };
	struct attn_bare a = { .threads = threads };
	struct syshax_job job;
	uint64_t res;
	char *base;
	int ret;

	ret = syshax_buf_alloc(sh, 2 * cache, -1, SYSHAX_BUF_ALLOW_SMALL, &kv);
	if (!ret)
		ret = syshax_buf_map(sh, &kv);
	if (!ret)
		ret = syshax_buf_alloc(sh, 2 * qb + btb + 4, -1, 0, &io);
	if (!ret)
		ret = syshax_buf_map(sh, &io);
	if (ret)
		goto out;
	base = io.addr;
	fill(kv.addr, (uint16_t *)kv.addr + cache / 2, (int32_t *)(base + qb),
	     (float *)base);
	*(int32_t *)(base + qb + btb) = CTX;
	a.kv = (struct shxk_kv_cache){
		.type = SHXK_F16, .block_size = BS, .kv_heads = KVH,
		.head_dim = HD, .k = kv.addr,
		.v = (const char *)kv.addr + cache,
	};
	a.bt = (const int32_t *)(base + qb);
	a.q = (const float *)base;
	shxk_attn_split(&a.kv, 1, CTX, threads, &a.ranges, &a.chunks);
	a.out = malloc(qb);
	a.parts = malloc(qb * a.chunks);
	a.ml = malloc(a.chunks * QH * 2 * sizeof(float));
	if (!a.out || !a.parts || !a.ml) {
		ret = -ENOMEM;
		goto out;
	}
	syshax_job_init(&job, SYSHAX_OP_ATTN_DECODE, 3);
	syshax_job_params(&job, &p, sizeof(p));
	syshax_job_add_ref(&job, &io, 0, qb, SYSHAX_ACCESS_READ);
	syshax_job_add_ref(&job, &kv, 0, cache, SYSHAX_ACCESS_READ);
	syshax_job_add_ref(&job, &kv, cache, cache, SYSHAX_ACCESS_READ);
	syshax_job_add_ref(&job, &io, qb, btb, SYSHAX_ACCESS_READ);
	syshax_job_add_ref(&job, &io, qb + btb, 4, SYSHAX_ACCESS_READ);
	syshax_job_add_ref(&job, &io, qb + btb + 4, qb, SYSHAX_ACCESS_WRITE);
	ret = bench_job_vs_bare(sh, &job, rounds, bare_rounds, &a, r);
	if (!ret)
		ret = bench_job_wait(sh, &job, &res, NULL);
	if (!ret) {
		const float *y = (const float *)(base + qb + btb + 4);
		float d = 0;

		/* A plain max (fmax() on a double through the pointer made
		 * aarch64 gcc 12's vectorizer crash). */
		for (size_t e = 0; e < (size_t)QH * HD; e++) {
			float x = fabsf(y[e] - a.out[e]);

			d = x > d ? x : d;
		}
		*maxdiff = d;
	}
out:
	free(a.out);
	free(a.parts);
	free(a.ml);
	if (io.size)
		syshax_buf_free(sh, &io);
	if (kv.size)
		syshax_buf_free(sh, &kv);
	return ret;
}
