// SPDX-License-Identifier: MIT
/*
 * Paged decode attention on every worker: KV in the client's buffers (the
 * blocks an xPU reads too), one query token per sequence. Work items are
 * (sequence, range of kv heads, context chunk), cut as shxk_attn_split()
 * says; the chunks' parts are merged after the run. ATTN_DECODE and the
 * model steps (op_model.c) both run here.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "cpu_int.h"

void shxd_attn_work(const struct shxd_attn *t, const struct shxd_worker *w)
{
	size_t per = t->ranges * t->chunks, a, b;

	/* Claimed: sequences of a batch differ in length. */
	while (shxd_pool_gclaim(t->pool, w, t->seqs * per, 1, &a, &b))
		for (size_t i = a; i < b; i++) {
			size_t s = i / per, po = s * t->chunks * t->qh;

			shxk_attn_decode_item(&t->seq[s].kv, t->seq[s].bt,
					      t->q + s * t->qh * t->hd, t->qh,
					      t->scale, t->seq[s].len,
					      t->ranges, t->chunks, i % per,
					      t->parts + po * t->hd,
					      t->ml + po * 2);
		}
}

void shxd_attn_merge(const struct shxd_attn *t, const struct shxd_worker *w)
{
	size_t i0, i1;

	/* By head: a lone sequence's merge is not left to one thread. Only
	 * for chunks > 1, which both callers check before their barrier. */
	shxd_split(t->seqs * t->qh, 1, w->gtid, w->gnthr, &i0, &i1);
	for (size_t i = i0; i < i1;) {
		size_t s = i / t->qh, h = i % t->qh, o = s * t->chunks * t->qh;
		size_t he = i1 - i < t->qh - h ? h + (i1 - i) : t->qh;

		shxk_attn_merge(t->parts + o * t->hd, t->ml + o * 2, t->chunks,
				t->qh, t->hd, t->out + s * t->qh * t->hd, h,
				he);
		i += he - h;
	}
}

int shxd_attn_setup(struct shxd_attn *t, struct shxd_cpu *cpu,
		    const struct shxd_attn_seq *seq, size_t n, size_t qh,
		    float scale, const float *q, float *out)
{
	unsigned int threads = shxd_pool_all_threads(cpu->pool);
	size_t maxlen = 0, qn;

	*t = (struct shxd_attn){
		.pool = cpu->pool, .seq = seq, .q = q, .out = out, .seqs = n,
		.qh = qh, .hd = seq[0].kv.head_dim, .scale = scale,
	};
	qn = n * qh * t->hd;
	for (size_t s = 0; s < n; s++)
		maxlen = seq[s].len > maxlen ? seq[s].len : maxlen;
	shxk_attn_split(&seq[0].kv, n, maxlen, threads, &t->ranges,
			&t->chunks);
	/* One chunk: each part, normalised by its own sum, is final. */
	t->parts = t->chunks == 1 ? out :
		   shxd_scratch(&cpu->ms[MS_EO], qn * t->chunks * sizeof(float));
	t->ml = shxd_scratch(&cpu->ms[MS_ATT],
			     n * qh * t->chunks * 2 * sizeof(float));
	return t->parts && t->ml ? 0 : -ENOMEM;
}

struct attn_run {
	struct shxd_cpu *cpu;
	const struct shxd_attn *t;
};

static void attn_worker(void *arg, const struct shxd_worker *w)
{
	const struct attn_run *r = arg;
	uint64_t t0 = shxd_now_ns();

	shxd_attn_work(r->t, w);
	if (r->t->chunks > 1) {
		shxd_pool_gbarrier(r->cpu->pool, w);
		shxd_attn_merge(r->t, w);
	}
	if (!w->tid)
		r->cpu->pool_ns[w->pool] = shxd_now_ns() - t0;
}

int shxd_attn_run(struct shxd_cpu *cpu, const struct shxd_attn_seq *seq,
		  size_t n, size_t qh, float scale, const float *q, float *out)
{
	struct shxd_attn t;
	struct attn_run r = { cpu, &t };
	int ret = shxd_attn_setup(&t, cpu, seq, n, qh, scale, q, out);

	if (ret)
		return ret;
	shxd_pool_run(cpu->pool, attn_worker, &r);
	return 0;
}

int shxd_op_attn(struct shxd_cpu *cpu, const struct shxd_xjob *xj)
{
	struct syshax_attn_decode_params a;
	struct shxd_attn_seq *seq;
	struct shxk_kv_cache kv;
	size_t es, qn, cache, blocks_used;
	const int32_t *bt, *lens;
	int32_t *lcopy;
	const void *q;
	void *out;
	float *qf, *of, scale;
	int err = 0;

	if (shxd_params(xj, &a, sizeof(a)) || xj->job->nr_refs != 6 ||
	    a.flags || !a.num_seqs || !a.kv_heads ||
	    !a.q_heads || a.q_heads % a.kv_heads || !a.head_dim ||
	    a.head_dim > 1024 || !a.block_size || !a.num_blocks ||
	    !a.max_blocks || a.kv_type > SYSHAX_DT_BF16 ||
	    a.q_type > SYSHAX_DT_BF16 || a.o_type > SYSHAX_DT_BF16 ||
	    !shxd_zero(a.reserved, sizeof(a.reserved)))
		return -EINVAL;
	memcpy(&scale, &a.scale, sizeof(scale));
	if (!a.scale)
		scale = 1.0f / sqrtf((float)a.head_dim);
	if (!isfinite(scale))
		return -EINVAL;
	es = shxd_act_size((enum shxk_type)a.kv_type);
	qn = (size_t)a.num_seqs * a.q_heads * a.head_dim;
	cache = (size_t)a.num_blocks * a.block_size * a.kv_heads * a.head_dim *
		es;
	q = shxd_span(xj, 0, SYSHAX_ACCESS_READ,
		      qn * shxd_act_size((enum shxk_type)a.q_type), &err);
	kv = (struct shxk_kv_cache){
		.type = (enum shxk_type)a.kv_type, .block_size = a.block_size,
		.kv_heads = a.kv_heads, .head_dim = a.head_dim,
		.k = shxd_span(xj, 1, SYSHAX_ACCESS_READ, cache, &err),
		.v = shxd_span(xj, 2, SYSHAX_ACCESS_READ, cache, &err),
	};
	bt = shxd_span(xj, 3, SYSHAX_ACCESS_READ,
		       (uint64_t)a.num_seqs * a.max_blocks * 4, &err);
	lens = shxd_span(xj, 4, SYSHAX_ACCESS_READ, (uint64_t)a.num_seqs * 4,
			 &err);
	out = shxd_span(xj, 5, SYSHAX_ACCESS_WRITE,
			qn * shxd_act_size((enum shxk_type)a.o_type), &err);
	if (err)
		return err;
	/* Lengths and block tables are checked on copies: the client may
	 * write them while the job runs. */
	lcopy = shxd_scratch(&cpu->ms[MS_IDS], a.num_seqs * sizeof(int32_t) +
			     (size_t)a.num_seqs * a.max_blocks * 4);
	seq = shxd_scratch(&cpu->ms[MS_SEQ], a.num_seqs * sizeof(*seq));
	qf = shxd_scratch(&cpu->ms[MS_X], qn * sizeof(float));
	of = shxd_scratch(&cpu->ms[MS_Y], qn * sizeof(float));
	if (!lcopy || !seq || !qf || !of)
		return -ENOMEM;
	memcpy(lcopy, lens, a.num_seqs * sizeof(int32_t));
	memcpy(lcopy + a.num_seqs, bt, (size_t)a.num_seqs * a.max_blocks * 4);
	for (size_t s = 0; s < a.num_seqs; s++) {
		const int32_t *sbt = lcopy + a.num_seqs + s * a.max_blocks;

		if (lcopy[s] < 0 ||
		    (uint64_t)lcopy[s] > (uint64_t)a.max_blocks * a.block_size)
			return -EINVAL;
		blocks_used = ((size_t)lcopy[s] + a.block_size - 1) /
			      a.block_size;
		for (size_t b = 0; b < blocks_used; b++)
			if (sbt[b] < 0 || (uint32_t)sbt[b] >= a.num_blocks)
				return -EINVAL;
		seq[s] = (struct shxd_attn_seq){ kv, sbt, (size_t)lcopy[s] };
	}
	shxd_to_f32((enum shxk_type)a.q_type, q, qf, qn);
	err = shxd_attn_run(cpu, seq, a.num_seqs, a.q_heads, scale, qf, of);
	if (!err)
		shxd_from_f32((enum shxk_type)a.o_type, of, out, qn);
	return err;
}
