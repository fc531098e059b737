// SPDX-License-Identifier: MIT
/*
 * The scheduler (sched.h). The io buffer holds, per slot, its prompt and
 * its block table, and for the step being run the DECODE rows' tokens,
 * positions, block tables and output rows, and a PREFILL's output row;
 * the logits buffer (lg) the full rows of the requests with logprobs.
 * Only this thread writes them; the HTTP threads touch requests only
 * under the lock.
 */
#include "sched.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kvblocks.h"
#include "prefix.h"
#include "xpu.h"
#include "stepjob.h"

#define PAIR		8	/* (s32 id, f32 logit) */
#define ROW		(SCHED_TOPK * PAIR) /* an output row */
#define WAIT_NS		(120ULL * 1000000000ULL) /* a step this slow: lost */
#define RETRY_S		1	/* between attempts to reach the backend */
#define KV_AUTO_BLOCKS	2048	/* kv_blocks 0: this many, if they fit */

struct slot {
	struct sreq *r;		/* NULL: free */
	uint32_t nblocks;	/* its block table's entries in use */
	uint32_t prefilled;	/* prompt positions in the cache */
	uint64_t seq;		/* admission order */
};

struct sched {
	struct sched_conf c;
	struct be_opts bo;
	struct backend be;
	bool up;
	struct syshax_model_info info, info0;	/* now, and at start */
	struct syshax_buffer io, kv;	/* kv: K, then V */
	struct syshax_buffer lg;	/* max_running rows of full logits */
	struct xpu *xpu;
	uint32_t max_blocks;	/* block-table entries per sequence */
	uint64_t off_prompt, off_bt, off_tok, off_pos, off_dbt, off_out,
		 off_pout;
	struct kvblocks kb;
	struct pfx_cache pc;
	struct slot *slots;
	uint64_t seq;
	struct sreq *wq_head, *wq_tail;
	unsigned int nwait;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	bool stop;
	void (*wake)(void *owner);
	struct metrics m;
	char *piece;		/* a token's decoded text, grown to fit */
	size_t piece_cap;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint8_t *io_at(const struct sched *s, uint64_t off)
{
	return (uint8_t *)s->io.addr + off;
}

static int32_t *slot_bt(const struct sched *s, unsigned int i)
{
	return (int32_t *)io_at(s, s->off_bt + (uint64_t)i * s->max_blocks * 4);
}

static uint64_t io_layout(struct sched *s)
{
	uint64_t slots = s->c.max_running, off;

#define IO_REGION(field, bytes) \
	do { s->field = off; off += ((uint64_t)(bytes) + 63) & ~63ULL; } while (0)
	off = (sizeof(struct syshax_model_info) + 63) & ~63ULL;
	IO_REGION(off_prompt, slots * s->c.max_ctx * 4);
	IO_REGION(off_bt, slots * s->max_blocks * 4);
	IO_REGION(off_tok, slots * 4);
	IO_REGION(off_pos, slots * 4);
	IO_REGION(off_dbt, slots * s->max_blocks * 4);
	IO_REGION(off_out, slots * ROW);
	IO_REGION(off_pout, ROW);
#undef IO_REGION
	return off;
}

/* Bytes of one KV block, all layers, K or V. */
static uint64_t kv_block_bytes(const struct sched *s)
{
	return sj_kv_block_bytes(&s->info, s->c.block_size, s->c.kv_type);
}

/*
 * The K and V caches of kv_blocks blocks, in one buffer (V after K): a
 * size over what syshaxd lets this process pin is then refused before
 * anything is allocated, where K alone could fit and be zeroed for
 * nothing. kv_blocks 0 (the default): KV_AUTO_BLOCKS, halved while the
 * two do not fit, down to one max_context request's; the count found
 * stays for the buffer made again after the backend went away.
 */
static int kv_buf(struct sched *s)
{
	uint64_t blk = kv_block_bytes(s);
	uint32_t n = s->c.kv_blocks ? s->c.kv_blocks : KV_AUTO_BLOCKS;
	int ret;

	for (; !s->c.kv_blocks && n / 2 >= s->max_blocks; n /= 2)
		if (!be_buf(&s->be, 2 * blk * n, &s->kv, NULL))
			break;
	if (!s->kv.addr) {	/* the last try says why it failed */
		ret = be_buf(&s->be, 2 * blk * n, &s->kv, "KV cache");
		if (ret)
			return ret;
	}
	if (!s->c.kv_blocks && n < KV_AUTO_BLOCKS)
		fprintf(stderr, "%s: kv_blocks %u: %u did not fit the memory "
			"syshaxd lets this process pin (max_pinned_user_mb, "
			"RLIMIT_MEMLOCK; see syshax-check)\n", s->bo.prog, n,
			KV_AUTO_BLOCKS);
	s->c.kv_blocks = n;
	return 0;
}

static uint32_t topk(const struct sched *s)
{
	return s->info.n_vocab < SCHED_TOPK ? s->info.n_vocab : SCHED_TOPK;
}

/* An output row: full logits, or the TOPK pairs. */
static uint64_t row_bytes(const struct sched *s, bool full)
{
	return full ? (uint64_t)s->info.n_vocab * 4 : topk(s) * PAIR;
}

/* A step of n rows: the params, the caches, the output (full: logits). */
static void step_of(const struct sched *s, uint32_t n, bool full,
		    struct sj_step *st)
{
	uint64_t kv_bytes = kv_block_bytes(s) * s->c.kv_blocks;

	*st = (struct sj_step){
		.p = {
			.model = s->info.model, .n = n,
			.block_size = s->c.block_size,
			.num_blocks = s->c.kv_blocks,
			.max_blocks = s->max_blocks,
			.kv_type = s->c.kv_type,
			.out = full ? SYSHAX_STEP_OUT_LOGITS :
				      SYSHAX_STEP_OUT_TOPK,
			.topk = full ? 0 : topk(s),
		},
		.k = { &s->kv, 0 }, .v = { &s->kv, kv_bytes },
		.kv_bytes = kv_bytes,
		.out_bytes = n * row_bytes(s, full),
	};
}

/* A PREFILL of slot i's prompt positions [pos, pos + n); its last row's
 * output (full: logits, else TOPK pairs) at out. 0 or -E2BIG. */
static int prefill_of(const struct sched *s, unsigned int i, uint32_t pos,
		      uint32_t n, bool full, struct sj_ref out,
		      struct syshax_job *job, uint64_t user_data)
{
	struct sj_step st;

	step_of(s, n, full, &st);
	st.p.pos = pos;
	st.tok = (struct sj_ref){ &s->io, s->off_prompt +
		(uint64_t)i * s->c.max_ctx * 4 + pos * 4ULL };
	st.bt = (struct sj_ref){ &s->io, s->off_bt +
				 (uint64_t)i * s->max_blocks * 4 };
	st.out = out;
	st.out_bytes = row_bytes(s, full);
	return sj_step(job, SYSHAX_OP_PREFILL, user_data, &st);
}

/*
 * A one-token PREFILL into slot 0's first block, before any request: the
 * engine maps the caches (GiBs: their page tables filled) and grows its
 * scratch now, not on a client's first request (held-out 7B Q4_0: 1.65-
 * 1.85 s for a 64-token request first, 1.1-1.3 after). Nothing reads that
 * block before a request writes it again.
 */
static int warm_up(struct sched *s)
{
	struct syshax_completion c;
	struct syshax_job job;
	int ret;

	*(int32_t *)io_at(s, s->off_prompt) = 0;
	slot_bt(s, 0)[0] = 0;
	ret = prefill_of(s, 0, 0, 1, false,
			 (struct sj_ref){ &s->io, s->off_pout }, &job, 0);
	if (!ret)
		ret = be_job(s->be.sh, &job, &c);
	if (ret)
		fprintf(stderr, "%s: a first step on the model failed: %s\n",
			s->bo.prog, syshax_strerror(ret));
	return ret;
}

/* The io buffer, the model (a large one takes a while: said so), the
 * caches and a first step, on a backend just opened. */
static int setup(struct sched *s)
{
	int ret = be_buf(&s->be, io_layout(s), &s->io, "io");
	double t0 = now_s();

	if (!ret) {
		fprintf(stderr, "%s: loading %s\n", s->bo.prog, s->bo.model);
		ret = be_model_load(&s->be, &s->io, &s->info);
	}
	if (!ret)
		fprintf(stderr, "%s: model loaded: %.1f MiB in %.1f s\n",
			s->bo.prog, (double)s->info.weight_bytes / (1 << 20),
			now_s() - t0);
	if (!ret)
		ret = kv_buf(s);
	if (!ret)
		ret = be_buf(&s->be, (uint64_t)s->c.max_running *
			     s->info.n_vocab * 4, &s->lg, "logits");
	if (!ret)
		ret = warm_up(s);
	return ret;
}

/* Everything on the backend freed (the weights only while it is up); the
 * prefix cache's KV goes with the buffers. */
static void teardown(struct sched *s)
{
	while (pfx_evict(&s->pc))
		;
	if (s->info.model && s->up)
		be_model_free(&s->be, s->info.model);
	s->info.model = 0;
	if (s->kv.addr)
		syshax_buf_free(s->be.sh, &s->kv);
	if (s->io.addr)
		syshax_buf_free(s->be.sh, &s->io);
	if (s->lg.addr)
		syshax_buf_free(s->be.sh, &s->lg);
	memset(&s->lg, 0, sizeof(s->lg));
	memset(&s->kv, 0, sizeof(s->kv));
	memset(&s->io, 0, sizeof(s->io));
	be_close(&s->be);
}

static int backend_up(struct sched *s)
{
	int ret = be_open(&s->be, &s->bo);

	if (!ret)
		ret = setup(s);
	if (ret)
		teardown(s);
	return ret;
}

struct sreq *sreq_new(uint32_t n_prompt, uint32_t max_tokens)
{
	struct sreq *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->prompt = calloc(n_prompt ? n_prompt : 1, sizeof(*r->prompt));
	r->out = calloc(max_tokens ? max_tokens : 1, sizeof(*r->out));
	if (!r->prompt || !r->out) {
		free(r->prompt);
		free(r->out);
		free(r);
		return NULL;
	}
	r->n_prompt = n_prompt;
	r->max_tokens = max_tokens;
	r->refs = 1;
	return r;
}

int sreq_logprobs(struct sreq *r, uint32_t n_top)
{
	r->lp = calloc((size_t)(r->max_tokens ? r->max_tokens : 1) *
		       (1 + n_top), sizeof(*r->lp));
	r->n_top = n_top;
	return r->lp ? 0 : -ENOMEM;
}

static void put_locked(struct sreq *r)
{
	if (--r->refs)
		return;
	free(r->lp);
	shx_sampler_free(r->sampler);
	shx_stop_free(r->stop);
	free(r->prompt);
	free(r->out);
	free(r->text);
	free(r);
}

void sreq_put(struct sched *s, struct sreq *r)
{
	pthread_mutex_lock(&s->lock);
	put_locked(r);
	pthread_mutex_unlock(&s->lock);
}

static void wake(struct sched *s, struct sreq *r)
{
	if (!r->cancelled)
		s->wake(r->owner);
}

/* Ends r (not in a slot any more): its reason counted, its owner told. */
static void finish(struct sched *s, struct sreq *r, enum sreq_finish why,
		   const char *err)
{
	if (r->finish != FIN_NONE)
		return;
	r->finish = why;
	if (err)
		snprintf(r->err, sizeof(r->err), "%s", err);
	s->m.finished[why - 1]++;
	wake(s, r);
	put_locked(r);
}

static void free_slot(struct sched *s, unsigned int i)
{
	struct slot *sl = &s->slots[i];

	kvb_free(&s->kb, sl->nblocks, slot_bt(s, i));
	memset(sl, 0, sizeof(*sl));
}

int sched_submit(struct sched *s, struct sreq *r)
{
	int ret = 0;

	pthread_mutex_lock(&s->lock);
	if (!s->up)
		ret = -ENODEV;
	else if (s->nwait >= s->c.max_queue)
		ret = -EAGAIN;
	if (ret) {
		s->m.rejected++;
		pthread_mutex_unlock(&s->lock);
		return ret;
	}
	r->refs++;
	r->t_arrive = now_s();
	r->next = NULL;
	if (s->wq_tail)
		s->wq_tail->next = r;
	else
		s->wq_head = r;
	s->wq_tail = r;
	s->nwait++;
	s->m.requests++;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

void sched_cancel(struct sched *s, struct sreq *r)
{
	pthread_mutex_lock(&s->lock);
	r->cancelled = true;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

/* Ends what was cancelled or ran past request_timeout, in a slot or not. */
static void reap(struct sched *s, double now)
{
	double limit = s->c.request_timeout ? s->c.request_timeout : 1e30;
	char why[96];
	struct sreq **pp = &s->wq_head, *r;

	snprintf(why, sizeof(why), "the request ran past request_timeout "
		 "(%u s)", s->c.request_timeout);
	for (unsigned int i = 0; i < s->c.max_running; i++) {
		r = s->slots[i].r;
		if (!r || (!r->cancelled && now - r->t_arrive < limit))
			continue;
		free_slot(s, i);
		finish(s, r, r->cancelled ? FIN_CANCELLED : FIN_ERROR, why);
	}
	s->wq_tail = NULL;
	while ((r = *pp)) {
		if (r->cancelled || now - r->t_arrive >= limit) {
			*pp = r->next;
			s->nwait--;
			finish(s, r, r->cancelled ? FIN_CANCELLED : FIN_ERROR,
			       why);
			continue;
		}
		s->wq_tail = r;
		pp = &r->next;
	}
}

/* The queue's head into free slots while its KV blocks are free: FIFO, so
 * a large request is not passed over forever. */
static void admit(struct sched *s)
{
	for (unsigned int i = 0; s->wq_head && i < s->c.max_running; i++) {
		struct slot *sl = &s->slots[i];
		struct sreq *r = s->wq_head;
		uint32_t bs = s->c.block_size, got;
		uint32_t need = (r->n_prompt + r->max_tokens + bs - 1) / bs;
		int32_t *bt = slot_bt(s, i);
		int ret;

		if (sl->r)
			continue;
		/* The cached start of the prompt, short of its last token,
		 * whose logits the prefill gives; cached blocks evicted while
		 * the rest does not fit. */
		got = r->no_cache ? 0 : pfx_take(&s->pc, r->prompt,
						 r->n_prompt,
						 (r->n_prompt - 1) / bs, bt);
		while ((ret = kvb_alloc(&s->kb, need - got, bt + got)) &&
		       pfx_evict(&s->pc))
			;
		if (ret) {
			kvb_free(&s->kb, got, bt);
			break;
		}
		s->wq_head = r->next;
		if (!s->wq_head)
			s->wq_tail = NULL;
		s->nwait--;
		*sl = (struct slot){ .r = r, .nblocks = need,
				     .prefilled = got * bs, .seq = s->seq++ };
		s->m.prompt_cached += got * bs;
		memcpy(io_at(s, s->off_prompt + (uint64_t)i * s->c.max_ctx * 4),
		       r->prompt, (size_t)r->n_prompt * 4);
	}
}

/* What one step runs: the DECODE rows' slots (those that want TOPK pairs,
 * then those that want full logits) and the PREFILL's. */
struct plan {
	unsigned int *rows;	/* slot of each DECODE row */
	unsigned int *job;	/* the job of each DECODE row */
	unsigned int nrows, nfull, njobs; /* nfull: full rows, the last */
	int pf;			/* the slot prefilled, -1: none */
	uint32_t pf_n;		/* its tokens this step */
	struct syshax_job *jobs; /* DECODE jobs, then the PREFILL */
};

/* Where DECODE row k's output goes: TOPK rows from off_out, full rows
 * (k >= first, the first full one) from the start of lg. */
static struct sj_ref row_out(const struct sched *s, unsigned int k,
			     unsigned int first)
{
	if (k < first)
		return (struct sj_ref){ &s->io, s->off_out +
					(uint64_t)k * topk(s) * PAIR };
	return (struct sj_ref){ &s->lg, (uint64_t)(k - first) *
				s->info.n_vocab * 4 };
}

/* The PREFILL's output row: a full one after the full DECODE rows (the
 * slot prefilled decodes nothing, so lg's max_running rows hold them), or
 * its TOPK row. */
static struct sj_ref pf_out(const struct sched *s, const struct plan *p)
{
	if (s->slots[p->pf].r->lp)
		return row_out(s, p->nrows, p->nrows - p->nfull);
	return (struct sj_ref){ &s->io, s->off_pout };
}

static const void *ref_at(const struct sj_ref *r)
{
	return (const uint8_t *)r->buf->addr + r->off;
}

/* The DECODE rows of slots that want full rows (full) or not. */
static void plan_rows(struct sched *s, struct plan *p, bool full,
		      uint64_t *best)
{
	int32_t *tok = (int32_t *)io_at(s, s->off_tok);
	int32_t *pos = (int32_t *)io_at(s, s->off_pos);

	for (unsigned int i = 0; i < s->c.max_running; i++) {
		struct slot *sl = &s->slots[i];
		struct sreq *r = sl->r;

		if (!r || (r->lp != NULL) != full)
			continue;
		if (sl->prefilled < r->n_prompt) {
			if (sl->seq < *best) {
				*best = sl->seq;
				p->pf = (int)i;
			}
			continue;
		}
		tok[p->nrows] = r->out[r->n_out - 1];
		pos[p->nrows] = (int32_t)(r->n_prompt + r->n_out - 1);
		memcpy(io_at(s, s->off_dbt + (uint64_t)p->nrows *
			     s->max_blocks * 4), slot_bt(s, i),
		       (size_t)s->max_blocks * 4);
		p->rows[p->nrows++] = i;
	}
}

/* DECODE jobs of up to cpu_max_batch_size rows over rows k0..k1-1. */
static void plan_jobs(struct sched *s, struct plan *p, unsigned int k0,
		      unsigned int k1)
{
	unsigned int B = s->c.cpu_max_batch_size;
	struct sj_step st;

	for (unsigned int k = k0; k < k1; k += B, p->njobs++) {
		uint32_t n = k1 - k < B ? k1 - k : B;
		struct syshax_job *j = &p->jobs[p->njobs];

		step_of(s, n, k >= p->nrows - p->nfull, &st);
		st.tok = (struct sj_ref){ &s->io, s->off_tok + k * 4ULL };
		st.pos = (struct sj_ref){ &s->io, s->off_pos + k * 4ULL };
		st.bt = (struct sj_ref){ &s->io, s->off_dbt +
					 (uint64_t)k * s->max_blocks * 4 };
		st.out = row_out(s, k, p->nrows - p->nfull);
		sj_step(j, SYSHAX_OP_DECODE, p->njobs, &st);
		if (s->xpu && s->c.pd_offload)
			j->flags = SYSHAX_JOB_MAY_DEFER;
		for (unsigned int r = k; r < k + n; r++)
			p->job[r] = p->njobs;
	}
}

static void plan_step(struct sched *s, struct plan *p)
{
	uint64_t best = UINT64_MAX;
	unsigned int nt;

	p->nrows = p->njobs = 0;
	p->pf = -1;
	plan_rows(s, p, false, &best);
	nt = p->nrows;
	plan_rows(s, p, true, &best);
	p->nfull = p->nrows - nt;
	plan_jobs(s, p, 0, nt);
	plan_jobs(s, p, nt, p->nrows);
	if (p->pf >= 0) {
		struct slot *sl = &s->slots[p->pf];
		uint32_t left = sl->r->n_prompt - sl->prefilled;
		bool full = sl->r->lp != NULL;

		p->pf_n = left < s->c.prefill_chunk ? left : s->c.prefill_chunk;
		prefill_of(s, (unsigned int)p->pf, sl->prefilled, p->pf_n, full,
			   pf_out(s, p), &p->jobs[p->njobs], p->njobs);
	}
}

/* The refs' buffers of a step job, for the xPU. A ref names a buffer by
 * its handle in this context (syshax_job_add_ref), not its global id:
 * the two are equal only on a daemon this context has to itself. */
static void step_bufs(const struct sched *s, const struct syshax_job *job,
		      const struct syshax_buffer **bufs)
{
	for (unsigned int i = 0; i < job->nr_refs; i++)
		bufs[i] = job->refs[i].buf == s->kv.handle ? &s->kv :
			  job->refs[i].buf == s->lg.handle ? &s->lg : &s->io;
}

/* Job j on the xPU: 1 when it ran it, or -errno. When its worker is
 * gone, the job goes to syshaxd instead (*nsub counts it), and so do the
 * later ones; a submit failure is the backend's (*ret). */
static int on_xpu(struct sched *s, struct plan *p, unsigned int j,
		  unsigned int *nsub, int *ret)
{
	const struct syshax_buffer *bufs[SYSHAX_JOB_MAX_REFS];
	int st = -EPIPE, n;

	if (s->xpu) {
		step_bufs(s, &p->jobs[j], bufs);
		st = xpu_step(s->xpu, s->be.sh, &p->jobs[j], bufs);
	}
	if (st != -EPIPE)
		return st ? st : 1;
	if (s->xpu)
		xpu_drop(&s->xpu);
	p->jobs[j].flags = 0;
	n = syshax_submit(s->be.sh, &p->jobs[j], 1);
	if (n < 0)
		*ret = n;
	else
		(*nsub)++;
	return 0;
}

/* REPORT_XPU; a gone worker is dropped. */
static int report(struct sched *s, unsigned int running)
{
	int ret = xpu_report(s->xpu, s->be.sh, running);

	if (ret != -EPIPE)
		return ret;
	xpu_drop(&s->xpu);
	return 0;
}

/*
 * Runs the plan without the lock: the DECODE jobs (and the PREFILL, unless
 * the xPU takes it) go to syshaxd; deferred ones then run on the xPU (on
 * syshaxd after all when its worker is gone). status[j] gets each job's
 * result: 0 (syshaxd ran it), 1 (the xPU did) or -errno. 0, or the -errno
 * of the backend itself failing.
 */
static int run_step(struct sched *s, struct plan *p, int *status)
{
	struct syshax_completion c[64];
	unsigned int nsub = p->njobs + (p->pf >= 0 && !s->xpu), got = 0;
	unsigned int deferred = 0;
	int ret = 0;

	for (unsigned int j = 0; j < nsub && !ret;) {
		ret = syshax_submit(s->be.sh, &p->jobs[j], nsub - j);
		if (ret > 0) {
			j += (unsigned int)ret;
			ret = 0;
		}
	}
	if (!ret && p->pf >= 0 && s->xpu)
		status[p->njobs] = on_xpu(s, p, p->njobs, &nsub, &ret);
	while (!ret && got < nsub) {
		unsigned int want = nsub - got < 64 ? nsub - got : 64;

		ret = syshax_wait(s->be.sh, c, 1, want, WAIT_NS);
		if (ret == -EINTR) {
			ret = 0;
			continue;
		}
		if (ret < 0)
			break;
		got += (unsigned int)ret;
		for (int i = 0, n = ret; i < n; i++) {
			unsigned int j = (unsigned int)c[i].user_data;

			status[j] = c[i].status;
			if (c[i].status || !(c[i].flags & SYSHAX_CPL_DEFERRED))
				continue;
			status[j] = on_xpu(s, p, j, &nsub, &ret);
			if (status[j] == 1)
				deferred += p->jobs[j].refs[0].length / 4;
		}
		if (ret > 0)
			ret = 0;
	}
	if (!ret && s->xpu)
		ret = report(s, deferred);
	return ret;
}

/* Room at the end of r's text for n bytes and a NUL: where, or NULL. */
static char *text_room(struct sreq *r, size_t n)
{
	if (r->text_len + n + 1 > r->text_cap) {
		size_t cap = (r->text_len + n + 1) * 2;
		char *t = realloc(r->text, cap);

		if (!t)
			return NULL;
		r->text = t;
		r->text_cap = cap;
	}
	return r->text + r->text_len;
}

static int text_grow(struct sreq *r, ssize_t k)
{
	if (k < 0)
		return (int)k;
	r->text_len += (size_t)k;
	r->text[r->text_len] = '\0';
	return 0;
}

/* Text: the bytes of whole characters, cut at a stop string (*hit). */
static int text_add(struct sreq *r, const char *p, size_t n, bool *hit)
{
	bool stop = r->stop && !*hit;
	char *at = text_room(r, stop ? n + SHX_STOP_LEN_MAX : n);

	if (!at)
		return -ENOMEM;
	if (!stop) {
		memcpy(at, p, n);
		return text_grow(r, (ssize_t)n);
	}
	return text_grow(r, shx_stop_push(r->stop, p, n, at,
					  n + SHX_STOP_LEN_MAX, hit));
}

/* The end of the text: what the stop matcher held back. */
static int text_end(struct sreq *r)
{
	char *at = text_room(r, SHX_STOP_LEN_MAX);

	if (!at)
		return -ENOMEM;
	return text_grow(r, shx_stop_flush(r->stop, at, SHX_STOP_LEN_MAX));
}

/* id's text into r, or at the end (id < 0) what the decoder and the stop
 * matcher held back. */
static int detok(struct sched *s, struct sreq *r, int32_t id, bool *hit)
{
	ssize_t n;
	int ret;

	if (!s->c.tok)
		return 0;
	n = shx_detok_next(&r->detok, id, &s->piece, &s->piece_cap);
	if (n < 0)
		return (int)n;
	ret = n ? text_add(r, s->piece, (size_t)n, hit) : 0;
	if (ret || id >= 0 || !r->stop || *hit)
		return ret;
	return text_end(r);
}

/*
 * A row's token: the top pair, or the request's sampler's draw from the
 * pairs; with logprobs (a full row) the sampler's draw from the row and
 * *lp its raw logprobs.
 */
static int row_token(struct sched *s, struct sreq *r, const void *row,
		     int32_t *id, struct shx_sample_out *lp)
{
	int32_t nv = (int32_t)s->info.n_vocab;
	struct shx_sample_out o;
	int ret;

	if (!r->sampler) {
		*id = ((const struct shx_logit_pair *)row)[0].id;
		return 0;
	}
	ret = r->lp ? shx_sampler_sample(r->sampler, row, nv, &o) :
		      shx_sampler_sample_pairs(r->sampler, row,
					       (int32_t)topk(s), &o);
	if (!ret && r->lp)
		ret = shx_logprobs(row, nv, o.id, (int32_t)r->n_top, lp);
	if (!ret) {
		*id = o.id;
		shx_sampler_accept(r->sampler, o.id);
	}
	return ret;
}

/* The logprobs of r's token n_out into r->lp. */
static void lp_keep(struct sreq *r, const struct shx_sample_out *o)
{
	struct shx_logprob *at = r->lp + (size_t)r->n_out * (1 + r->n_top);

	at[0] = (struct shx_logprob){ o->id, o->logprob };
	memcpy(at + 1, o->top, (size_t)r->n_top * sizeof(*at));
}

/* One token joins r: timings, its text; its end at max_tokens, at an
 * end-of-generation token or a stop string. */
static void add_token(struct sched *s, unsigned int i, const void *row,
		      double now)
{
	struct sreq *r = s->slots[i].r;
	enum sreq_finish why = FIN_NONE;
	struct shx_sample_out lp;
	bool hit = false;
	int32_t id;
	int ret = row_token(s, r, row, &id, &lp);

	if (!ret && (uint32_t)id >= s->info.n_vocab)
		ret = -ERANGE;
	if (ret) {
		free_slot(s, i);
		finish(s, r, FIN_ERROR, ret == -ERANGE ? "the engine returned "
		       "a token id not below n_vocab" : "sampling failed");
		return;
	}
	hist_add(r->n_out == 0 ? &s->m.ttft : &s->m.itl,
		 now - (r->n_out == 0 ? r->t_arrive : r->t_last));
	r->t_last = now;
	s->m.gen_tokens++;
	if (s->c.tok && !r->ignore_eos && shx_tok_is_eog(s->c.tok, id)) {
		why = FIN_STOP;
	} else {
		if (r->lp)
			lp_keep(r, &lp);
		r->out[r->n_out++] = id;
		ret = detok(s, r, id, &hit);
		if (hit)
			why = FIN_STOP;
		else if (r->n_out == r->max_tokens)
			why = FIN_LENGTH;
	}
	if (!ret && why != FIN_NONE && !hit)
		ret = detok(s, r, -1, &hit);
	if (ret) {
		free_slot(s, i);
		finish(s, r, FIN_ERROR, "decoding the text failed");
		return;
	}
	if (why == FIN_NONE) {
		wake(s, r);
		return;
	}
	/* The KV of the positions fed, for later prompts: the last id
	 * generated was not fed back (after an end-of-generation token it
	 * was; its position is left out all the same). */
	if (!r->no_cache)
		pfx_put(&s->pc, r->prompt, r->n_prompt, r->out,
			r->n_out ? r->n_out - 1 : 0, slot_bt(s, i));
	free_slot(s, i);
	finish(s, r, why, NULL);
}

static void job_failed(struct sched *s, unsigned int i, const char *what,
		       int err)
{
	char msg[128];
	struct sreq *r = s->slots[i].r;

	snprintf(msg, sizeof(msg), "%s failed: %s", what, syshax_strerror(err));
	free_slot(s, i);
	finish(s, r, FIN_ERROR, msg);
}

/* The results into the requests (under the lock). */
static void apply(struct sched *s, const struct plan *p, const int *status)
{
	unsigned int nt = p->nrows - p->nfull;
	double now = now_s();

	for (unsigned int k = 0; k < p->nrows; k++) {
		unsigned int i = p->rows[k];
		int st = status[p->job[k]];
		struct sj_ref out = row_out(s, k, nt);

		if (s->slots[i].r->cancelled)
			continue;	/* reaped next */
		if (st < 0)
			job_failed(s, i, "DECODE", st);
		else
			add_token(s, i, ref_at(&out), now);
	}
	for (unsigned int j = 0; j < p->njobs; j++) {
		s->m.steps_cpu += status[j] == 0;
		s->m.steps_xpu += status[j] == 1;
	}
	if (p->pf >= 0) {
		struct slot *sl = &s->slots[p->pf];
		int st = status[p->njobs];

		if (st == 1)
			s->m.prefill_xpu++;
		else
			s->m.prefill_cpu++;
		if (sl->r->cancelled)
			return;
		if (st < 0) {
			job_failed(s, (unsigned int)p->pf, "PREFILL", st);
			return;
		}
		sl->prefilled += p->pf_n;
		s->m.prompt_tokens += p->pf_n;
		if (sl->prefilled == sl->r->n_prompt) {
			struct sj_ref out = pf_out(s, p);

			/* The prompt's blocks for prompts that arrive while
			 * this one generates (a shared system prompt). */
			if (!sl->r->no_cache)
				pfx_put(&s->pc, sl->r->prompt, sl->r->n_prompt,
					NULL, 0, slot_bt(s, (unsigned int)p->pf));

			add_token(s, (unsigned int)p->pf, ref_at(&out), now);
		}
	}
}

/* The backend went away: every open request ends with an error, the
 * backend is closed, and the loop tries to reach it again. */
static void lost(struct sched *s, int err)
{
	char msg[160];
	struct sreq *r;

	snprintf(msg, sizeof(msg), "the backend (syshaxd) went away: %s; "
		 "the request was ended", syshax_strerror(err));
	fprintf(stderr, "syshax-serve: %s\n", msg);
	for (unsigned int i = 0; i < s->c.max_running; i++) {
		r = s->slots[i].r;
		if (r) {
			free_slot(s, i);
			finish(s, r, FIN_ERROR, msg);
		}
	}
	while ((r = s->wq_head)) {
		s->wq_head = r->next;
		finish(s, r, FIN_ERROR, msg);
	}
	s->wq_tail = NULL;
	s->nwait = 0;
	s->m.backend_lost++;
	s->up = false;
	teardown(s);
}

static void gauges(struct sched *s)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < s->c.max_running; i++)
		n += s->slots[i].r != NULL;
	s->m.running = n;
	s->m.waiting = s->nwait;
	s->m.kv_used = kvb_used(&s->kb);
	s->m.prefix_entries = s->pc.n;
	s->m.backend_up = s->up;
}

static void wait_s(struct sched *s, unsigned int sec)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += sec;
	pthread_cond_timedwait(&s->cond, &s->lock, &ts);
}

static void *loop(void *arg)
{
	struct sched *s = arg;
	unsigned int n = s->c.max_running;
	struct plan p = {
		.rows = calloc(n, sizeof(*p.rows)),
		.job = calloc(n, sizeof(*p.job)),
		.jobs = calloc(n + 1, sizeof(*p.jobs)),
	};
	int *status = calloc(n + 1, sizeof(*status));

	pthread_mutex_lock(&s->lock);
	if (!p.rows || !p.job || !p.jobs || !status) {
		fprintf(stderr, "syshax-serve: scheduler: out of memory\n");
		s->stop = true;
	}
	while (!s->stop) {
		double t0, t1, t2;
		int ret;

		if (!s->up) {
			pthread_mutex_unlock(&s->lock);
			ret = backend_up(s);
			pthread_mutex_lock(&s->lock);
			if (!ret && s->xpu)
				ret = report(s, 0);
			if (ret) {
				teardown(s);
				wait_s(s, RETRY_S);
			} else {
				s->up = true;
				fprintf(stderr, "syshax-serve: the backend is "
					"back\n");
			}
			gauges(s);
			continue;
		}
		t0 = now_s();
		reap(s, t0);
		admit(s);
		plan_step(s, &p);
		gauges(s);
		if (!p.njobs && p.pf < 0) {
			wait_s(s, 1);
			continue;
		}
		pthread_mutex_unlock(&s->lock);
		t1 = now_s();
		ret = run_step(s, &p, status);
		t2 = now_s();
		pthread_mutex_lock(&s->lock);
		if (ret)
			lost(s, ret);
		else
			apply(s, &p, status);
		gauges(s);
		s->m.steps++;
		s->m.t_engine += t2 - t1;
		s->m.t_sched += t1 - t0 + now_s() - t2;
	}
	pthread_mutex_unlock(&s->lock);
	free(p.rows);
	free(p.job);
	free(p.jobs);
	free(status);
	return NULL;
}

int sched_start(struct sched **out, const struct sched_conf *c,
		const struct be_opts *bo, void (*wake_cb)(void *owner))
{
	struct sched *s = calloc(1, sizeof(*s));
	int ret;

	if (!s)
		return -ENOMEM;
	s->c = *c;
	s->bo = *bo;
	s->wake = wake_cb;
	s->max_blocks = (c->max_ctx + c->block_size - 1) / c->block_size;
	s->slots = calloc(c->max_running, sizeof(*s->slots));
	/* The backend first: it finds kv_blocks where that is 0. */
	ret = s->slots ? backend_up(s) : -ENOMEM;
	if (!ret)
		ret = kvb_init(&s->kb, s->c.kv_blocks);
	if (!ret)
		ret = pfx_init(&s->pc, c->prefix_cache, c->block_size, &s->kb);
	/* A worker imports the buffers into its own context: syshaxd's. */
	if (!ret && c->xpu_worker && s->be.d.pid) {
		fprintf(stderr, "%s: xpu_worker needs a running syshaxd "
			"($SYSHAX_DEVICE) that the worker uses too, not a "
			"private one\n", bo->prog);
		ret = -EINVAL;
	}
	if (!ret && (c->xpu_standin || c->xpu_worker)) {
		ret = s->be.real[0] ? 0 : be_locate(&s->be);
		if (!ret)
			ret = xpu_open(&s->xpu, bo->prog, c->xpu_worker,
				       s->be.dir, s->be.real);
		/* An idle xPU announces itself before the first step. */
		if (!ret)
			ret = report(s, 0);
	}
	if (ret)
		goto fail;
	s->up = true;
	s->info0 = s->info;
	s->m.kv_total = s->c.kv_blocks;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	ret = -pthread_create(&s->thread, NULL, loop, s);
	if (!ret) {
		*out = s;
		return 0;
	}
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
fail:
	if (s->xpu)
		xpu_close(s->xpu);
	teardown(s);
	pfx_destroy(&s->pc);
	kvb_destroy(&s->kb);
	free(s->slots);
	free(s);
	return ret;
}

void sched_stop(struct sched *s)
{
	struct sreq *r;

	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thread, NULL);
	pthread_mutex_lock(&s->lock);
	for (unsigned int i = 0; i < s->c.max_running; i++) {
		r = s->slots[i].r;
		if (r) {
			free_slot(s, i);
			finish(s, r, FIN_ERROR, "the server is stopping");
		}
	}
	while ((r = s->wq_head)) {
		s->wq_head = r->next;
		finish(s, r, FIN_ERROR, "the server is stopping");
	}
	if (s->xpu)
		xpu_close(s->xpu);
	s->xpu = NULL;
	teardown(s);
	s->up = false;
	pthread_mutex_unlock(&s->lock);
}

void sched_free(struct sched *s)
{
	free(s->piece);
	pfx_destroy(&s->pc);
	kvb_destroy(&s->kb);
	free(s->slots);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

void sched_lock(struct sched *s)
{
	pthread_mutex_lock(&s->lock);
}

void sched_unlock(struct sched *s)
{
	pthread_mutex_unlock(&s->lock);
}

const struct syshax_model_info *sched_model(const struct sched *s)
{
	return &s->info0;
}

const struct sched_conf *sched_conf(const struct sched *s)
{
	return &s->c;
}

const struct metrics *sched_metrics(const struct sched *s)
{
	return &s->m;
}

bool sched_up(const struct sched *s)
{
	return s->up;
}
