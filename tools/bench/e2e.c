// SPDX-License-Identifier: MIT
/*
 * syshax-bench e2e: whole steps of random-weight GGUF models (genmodel.h),
 * ours as PREFILL and DECODE jobs through a private syshaxd against
 * llama.cpp's libllama (llama_peer.h) on the same file, on as many
 * threads, in one run: prompt processing, decode at 1..N sequences, and
 * batch 1 against the machine's read roofline. Both sides hold the model
 * while it is measured; each row is taken in rounds, the two sides in
 * turn (the first of a round alternating), and each side's best round
 * counts, so that a burst of other load or a slow phase of this host's
 * memory costs a side a round rather than its figure; one model at a time
 * (memory).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "beside.h"
#include "bench.h"
#include "genmodel.h"
#include "llama_peer.h"
#include "privd.h"
#include "stepjob.h"
#include "shxk.h"
#include "syshax/rt.h"

#define MAX_LIST	8	/* entries of --preset, --shape, --type, --seqs */
#define SHAPE_LAYERS	8	/* --shape models' layers by default */
#define MAX_SEQS	64
#define WARM_STEPS	4
#define SHORT_PROMPT	16	/* --context's default */
#define MAX_CONTEXT	4096
#define ROUNDS		3	/* --rounds' default */
#define MAX_ROUNDS	16
#define BLOCK		16	/* KV positions per block */
#define JOB_NS		(600ULL * 1000000000ULL)	/* a 7B load or prompt */
#define ROOF_TARGET	90.0	/* batch 1, % of the read roofline */

struct e2e_conf {
	const char *llama, *models;
	/* presets[]: --preset's, then --shape's (real models' shapes) */
	const char *presets[2 * MAX_LIST], *types[MAX_LIST];
	unsigned int seqs[MAX_LIST];
	unsigned int npresets, nshapes, ntypes, nseqs, max_seqs;
	unsigned int layers;		/* --layers; 0: the default */
	unsigned int threads, steps, prompt, rounds;
	unsigned int context;		/* tokens a decoding sequence starts with */
	unsigned int ctx;		/* positions per sequence */
	unsigned int max_tokens;	/* of one job: prompt, prefill or step */
	char exe[4096];
	struct bench_reader *reader;	/* read probe; NULL: none */
	double gbps;			/* its figure at the start */
};

/* Row 0: prompt processing; row 1 + i: decode at seqs[i] sequences. */
struct e2e_row {
	unsigned int n;		/* prompt tokens, or sequences */
	double ours, llama;	/* tokens/s; NAN where not measured */
	double engine;		/* ours: share of the wall time in engine steps */
};

struct e2e_model {
	char file[96];
	const char *arch, *preset, *type;
	unsigned int n_layer;		/* 0: the preset's own */
	struct syshax_model_info info;	/* as MODEL_LOAD reported it */
	uint64_t weight_bytes, step_bytes;
	/*
	 * The read bandwidth around the batch-1 row's best round of each side
	 * (0 ours, 1 llama.cpp): the higher of the probes right before and
	 * right after that turn (this host's bandwidth moves by half within
	 * minutes); without a probe, the start's figure.
	 */
	double gbps[2];
	/* Seconds from nothing to a model that takes steps (0 ours: a
	 * private syshaxd started, MODEL_LOAD, the caches; 1 llama.cpp: the
	 * model and its context); NAN where not measured. */
	double load[2];
	struct e2e_row rows[1 + MAX_LIST];
};

static double secs_since(uint64_t t0)
{
	return (double)(bench_now_ns() - t0) * 1e-9;
}

/* The token of sequence s at step i: any id past the specials. */
static int32_t token(unsigned int i, unsigned int s, unsigned int n_vocab)
{
	return (int32_t)(3 + (i * 7919u + s * 104729u) % (n_vocab - 3));
}

/* ---- ours: jobs through a private syshaxd ---- */

struct ours {
	struct privd d;
	struct syshax *sh;
	struct syshax_model_info info;
	struct syshax_buffer k, v, io;
	struct syshax_step_params p;	/* the model, its cache, TOPK 1 */
	uint64_t cache_bytes;		/* each of K and V, all layers */
	size_t o_pos, o_bt, o_out, o_stats;	/* in io; tokens at 0 */
	int loaded;
};

static int ours_run(struct ours *o, const struct syshax_job *job,
		    uint64_t *res)
{
	struct syshax_completion cpl;
	int ret = syshax_submit(o->sh, job, 1);

	if (ret >= 0)
		ret = syshax_wait(o->sh, &cpl, 1, 1, (int64_t)JOB_NS);
	if (ret < 0)
		return ret;
	if (res)
		*res = cpl.result;
	return cpl.status;
}

static size_t align64(size_t n)
{
	return (n + 63) & ~(size_t)63;
}

/* io: tokens, positions, block tables, outputs, then the stats (or, at
 * load, the model info). */
static int ours_io(struct ours *o, const struct e2e_conf *c)
{
	int32_t *bt;

	o->o_pos = align64(c->max_tokens * 4ULL);
	o->o_bt = o->o_pos + align64(c->max_seqs * 4ULL);
	o->o_out = o->o_bt + align64(c->max_seqs * 4ULL * o->p.max_blocks);
	o->o_stats = o->o_out + align64(c->max_seqs * 8ULL);
	if (syshax_buf_alloc(o->sh, o->o_stats +
			     sizeof(struct syshax_engine_stats), -1, 0, &o->io) ||
	    syshax_buf_map(o->sh, &o->io))
		return -ENOMEM;
	/* Sequence s owns blocks s * max_blocks ... */
	bt = (int32_t *)((uint8_t *)o->io.addr + o->o_bt);
	for (unsigned int i = 0; i < c->max_seqs * o->p.max_blocks; i++)
		bt[i] = (int32_t)i;
	return 0;
}

static int ours_load(struct ours *o, const char *file)
{
	const struct sj_ref info = { &o->io, o->o_stats };
	struct syshax_job job;
	uint64_t id;
	int ret;

	sj_model_load(&job, file, &info);
	ret = ours_run(o, &job, &id);
	if (ret)
		return ret;
	memcpy(&o->info, (uint8_t *)o->io.addr + o->o_stats, sizeof(o->info));
	o->loaded = 1;
	return 0;
}

/* K and V caches in syshax buffers, f16 as llama.cpp's default. */
static int ours_cache(struct ours *o)
{
	const struct syshax_model_info *mi = &o->info;

	o->p.model = mi->model;
	o->p.kv_type = SYSHAX_DT_F16;
	o->p.out = SYSHAX_STEP_OUT_TOPK;
	o->p.topk = 1;
	o->cache_bytes = o->p.num_blocks *
			 sj_kv_block_bytes(mi, BLOCK, SYSHAX_DT_F16);
	if (syshax_buf_alloc(o->sh, o->cache_bytes, -1, SYSHAX_BUF_ALLOW_SMALL,
			     &o->k) ||
	    syshax_buf_alloc(o->sh, o->cache_bytes, -1, SYSHAX_BUF_ALLOW_SMALL,
			     &o->v))
		return -ENOMEM;
	return 0;
}

static void ours_stop(struct ours *o)
{
	struct syshax_job job;

	if (o->loaded) {
		sj_weights_free(&job, o->info.model);
		ours_run(o, &job, NULL);
	}
	syshax_close(o->sh);
	privd_stop(&o->d);
	memset(o, 0, sizeof(*o));
}

/* A private syshaxd with the model loaded and caches for every row. */
static int ours_start(struct ours *o, const struct e2e_conf *c,
		      const char *dir, const char *file)
{
	char threads[16], mdir[4096];
	char *extra[] = { "--model-dir", mdir, "--threads", threads, NULL };
	int ret;

	memset(o, 0, sizeof(*o));
	if (!realpath(dir, mdir))
		return -errno;
	snprintf(threads, sizeof(threads), "%u", c->threads);
	o->p.block_size = BLOCK;
	o->p.max_blocks = c->ctx / BLOCK;
	o->p.num_blocks = c->max_seqs * o->p.max_blocks;
	ret = privd_start_userspace(c->exe, extra, &o->d, &o->sh);
	if (!ret)
		ret = ours_io(o, c);
	if (!ret)
		ret = ours_load(o, file);
	if (!ret)
		ret = ours_cache(o);
	return ret;
}

/* pool 0's time in steps of op so far (every pool runs every step). */
static int ours_engine_ns(struct ours *o, uint32_t op, uint64_t *ns)
{
	const struct syshax_engine_stats *st = (const void *)
		((uint8_t *)o->io.addr + o->o_stats);
	struct syshax_job job;
	int ret;

	syshax_job_init(&job, SYSHAX_OP_ENGINE_STATS, 0);
	syshax_job_add_ref(&job, &o->io, o->o_stats, sizeof(*st),
			   SYSHAX_ACCESS_WRITE);
	ret = ours_run(o, &job, NULL);
	if (!ret)
		*ns = st->op[syshax_stats_op_index(op)][0].run_ns;
	return ret;
}

/* A step of n rows over io's arrays (tokens at 0), one output pair each. */
static struct sj_step ours_step_of(const struct ours *o, unsigned int n)
{
	struct sj_step st = {
		.p = o->p,
		.tok = { &o->io, 0 }, .pos = { &o->io, o->o_pos },
		.bt = { &o->io, o->o_bt },
		.k = { &o->k, 0 }, .v = { &o->v, 0 },
		.kv_bytes = o->cache_bytes,
		.out = { &o->io, o->o_out }, .out_bytes = n * 8ULL,
	};

	st.p.n = n;
	return st;
}

/* n tokens of sequence seq at positions 0 .. n - 1, tokens from io. */
static int ours_prefill(struct ours *o, unsigned int seq, unsigned int n)
{
	struct sj_step st = ours_step_of(o, n);
	struct syshax_job job;

	st.bt.off += seq * 4ULL * st.p.max_blocks;
	st.out_bytes = 8;
	sj_step(&job, SYSHAX_OP_PREFILL, 0, &st);
	return ours_run(o, &job, NULL);
}

static void ours_tokens(struct ours *o, unsigned int n, unsigned int step)
{
	int32_t *tok = o->io.addr;

	for (unsigned int i = 0; i < n; i++)
		tok[i] = token(step + i, i, o->info.n_vocab);
}

/* Wall time of a prefill of the prompt, after an untimed one if warm. */
static int ours_prompt(struct ours *o, const struct e2e_conf *c,
		       struct e2e_row *r, int warm)
{
	uint64_t e0, e1, t0 = 0;
	double s = 0;
	int ret = 0;

	ours_tokens(o, c->prompt, 0);
	if (warm)
		ret = ours_prefill(o, 0, c->prompt);
	if (!ret)
		ret = ours_engine_ns(o, SYSHAX_OP_PREFILL, &e0);
	if (!ret) {
		t0 = bench_now_ns();
		ret = ours_prefill(o, 0, c->prompt);
		s = secs_since(t0);
	}
	if (!ret)
		ret = ours_engine_ns(o, SYSHAX_OP_PREFILL, &e1);
	if (ret)
		return ret;
	r->ours = c->prompt / s;
	r->engine = (double)(e1 - e0) * 1e-9 / s;
	return 0;
}

/* One DECODE job of the first n sequences at position pos each. */
static int ours_step(struct ours *o, unsigned int n, unsigned int pos,
		     unsigned int step)
{
	int32_t *ps = (int32_t *)((uint8_t *)o->io.addr + o->o_pos);
	struct sj_step st = ours_step_of(o, n);
	struct syshax_job job;

	ours_tokens(o, n, step);
	for (unsigned int s = 0; s < n; s++)
		ps[s] = (int32_t)pos;
	sj_step(&job, SYSHAX_OP_DECODE, 0, &st);
	return ours_run(o, &job, NULL);
}

static int ours_decode(struct ours *o, const struct e2e_conf *c,
		       struct e2e_row *r)
{
	unsigned int n = r->n, i;
	uint64_t e0 = 0, e1, t0 = 0;
	int ret = 0;

	for (unsigned int s = 0; !ret && s < n; s++) {
		ours_tokens(o, c->context, s * c->context);
		ret = ours_prefill(o, s, c->context);
	}
	for (i = 0; !ret && i < WARM_STEPS + c->steps; i++) {
		if (i == WARM_STEPS) {
			ret = ours_engine_ns(o, SYSHAX_OP_DECODE, &e0);
			t0 = bench_now_ns();
		}
		if (!ret)
			ret = ours_step(o, n, c->context + i, i);
	}
	if (ret)
		return ret;
	r->ours = (double)n * c->steps / secs_since(t0);
	ret = ours_engine_ns(o, SYSHAX_OP_DECODE, &e1);
	if (!ret)
		r->engine = (double)(e1 - e0) * 1e-9 * r->ours /
			    ((double)n * c->steps);
	return ret;
}

/* ---- llama.cpp ---- */

struct peer {
	struct llp *l;
	int32_t *tok, *pos, *seq;
	uint8_t *want;
	unsigned int n_vocab;
	char err[256];
};

static void peer_close(struct peer *p)
{
	llp_close(p->l);
	free(p->tok);
	free(p->pos);
	free(p->seq);
	free(p->want);
	p->l = NULL;
	p->tok = p->pos = p->seq = NULL;
	p->want = NULL;
}

/* libllama with the model loaded (no mmap: llama_peer.h says why) and a
 * context of its defaults (f16 KV) for every row. */
static int peer_open(struct peer *p, const struct e2e_conf *c,
		     const char *path)
{
	/* llama.cpp pads each sequence's share to 256 positions */
	struct llp_ctx_opts lo = {
		.n_ctx = (c->ctx + 255) / 256 * 256 * c->max_seqs,
		.n_seq_max = c->max_seqs,
		.n_batch = c->max_tokens,
		.threads = c->threads,
	};
	int ret = llp_open(&p->l, c->llama, p->err, sizeof(p->err));

	if (!ret)
		ret = llp_load(p->l, path, p->err, sizeof(p->err));
	if (!ret)
		ret = llp_context(p->l, &lo, p->err, sizeof(p->err));
	if (!ret) {
		p->tok = calloc(lo.n_batch, sizeof(*p->tok));
		p->pos = calloc(lo.n_batch, sizeof(*p->pos));
		p->seq = calloc(lo.n_batch, sizeof(*p->seq));
		p->want = calloc(lo.n_batch, sizeof(*p->want));
		p->n_vocab = (unsigned int)llp_n_vocab(p->l);
		if (!p->tok || !p->pos || !p->seq || !p->want)
			ret = -ENOMEM;
	}
	if (ret)
		peer_close(p);
	return ret;
}

/* n tokens of sequence seq at positions 0 .. n - 1, logits of the last. */
static int peer_prefill(struct peer *p, unsigned int seq, unsigned int n,
			unsigned int step)
{
	for (unsigned int i = 0; i < n; i++) {
		p->tok[i] = token(step + i, i, p->n_vocab);
		p->pos[i] = (int32_t)i;
		p->seq[i] = (int32_t)seq;
		p->want[i] = i == n - 1;
	}
	return llp_decode(p->l, p->tok, p->pos, p->seq, p->want, n, p->err,
			  sizeof(p->err));
}

/* As ours_prompt. */
static int peer_prompt(struct peer *p, const struct e2e_conf *c,
		       struct e2e_row *r, int warm)
{
	uint64_t t0;
	int ret = 0;

	if (warm) {
		llp_clear(p->l);
		ret = peer_prefill(p, 0, c->prompt, 0);
	}
	if (ret)
		return ret;
	llp_clear(p->l);
	t0 = bench_now_ns();
	ret = peer_prefill(p, 0, c->prompt, 0);
	if (!ret)
		r->llama = c->prompt / secs_since(t0);
	return ret;
}

static int peer_decode(struct peer *p, const struct e2e_conf *c,
		       struct e2e_row *r)
{
	unsigned int n = r->n, i;
	uint64_t t0 = 0;
	int ret = 0;

	llp_clear(p->l);
	for (unsigned int s = 0; !ret && s < n; s++)
		ret = peer_prefill(p, s, c->context, s * c->context);
	for (i = 0; !ret && i < WARM_STEPS + c->steps; i++) {
		if (i == WARM_STEPS)
			t0 = bench_now_ns();
		for (unsigned int s = 0; s < n; s++) {
			p->tok[s] = token(i + s, s, p->n_vocab);
			p->pos[s] = (int32_t)(c->context + i);
			p->seq[s] = (int32_t)s;
			p->want[s] = 1;
		}
		ret = llp_decode(p->l, p->tok, p->pos, p->seq, p->want, n,
				 p->err, sizeof(p->err));
	}
	if (!ret)
		r->llama = (double)n * c->steps / secs_since(t0);
	return ret;
}

/* ---- one model file ---- */

/* The cached file, generated when missing (through a temporary name, so
 * that an interrupted write is never taken for a model). */
static int model_file(const struct e2e_conf *c, struct e2e_model *m,
		      char *path, size_t size)
{
	struct gm_opts go = { .arch = m->arch, .preset = m->preset,
			      .type = strcmp(m->type, "q8_0") ? SHXK_Q4_0 :
								 SHXK_Q8_0,
			      .seed = 1, .n_layer = m->n_layer };
	char tmp[4200 + 8], err[256];
	struct stat st;
	int ret;

	if (m->n_layer)
		snprintf(m->file, sizeof(m->file), "%s-%s-%ul-%s.gguf",
			 m->arch, m->preset, m->n_layer, m->type);
	else
		snprintf(m->file, sizeof(m->file), "%s-%s-%s.gguf", m->arch,
			 m->preset, m->type);
	snprintf(path, size, "%s/%s", c->models, m->file);
	if (!stat(path, &st))
		return 0;
	if (mkdir(c->models, 0755) && errno != EEXIST)
		return -errno;
	fprintf(stderr, "e2e: generating %s (%.2f GB)\n", path,
		(double)gm_size(&go) * 1e-9);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	ret = gm_write(tmp, &go, isatty(STDERR_FILENO), err, sizeof(err));
	if (ret)
		fprintf(stderr, "e2e: %s\n", err);
	else if (rename(tmp, path))
		ret = -errno;
	return ret;
}

/* Bytes a decode step of one sequence reads: every weight but the
 * embedding table, of which it reads one row (all of it where the output
 * projection is tied to it), and, in an MoE model, but the experts its
 * token is not routed to (n_expert - n_expert_used of each layer's); and
 * the f16 K and V of its context at the middle of the timed steps. */
static uint64_t step_bytes(const struct syshax_model_info *mi,
			   const char *type, int tied,
			   const struct e2e_conf *c)
{
	enum shxk_type t = strcmp(type, "q8_0") ? SHXK_Q4_0 : SHXK_Q8_0;
	uint64_t table = (uint64_t)mi->n_vocab * shxk_row_size(t, mi->n_embd);
	uint64_t expert = 2ULL * mi->n_ff * shxk_row_size(t, mi->n_embd) +
			  (uint64_t)mi->n_embd * shxk_row_size(t, mi->n_ff);
	uint64_t kv = 2 * sj_kv_block_bytes(mi, 1, SYSHAX_DT_F16) *
		      (c->context + WARM_STEPS + c->steps / 2);

	return kv + mi->weight_bytes -
	       (tied ? 0 : table) -
	       (uint64_t)mi->n_layer * (mi->n_expert - mi->n_expert_used) *
	       expert;
}

/* The first decode row of one sequence, or NULL. */
static const struct e2e_row *batch1(const struct e2e_model *m,
				    unsigned int nrows)
{
	for (unsigned int i = 1; i < nrows; i++)
		if (m->rows[i].n == 1)
			return &m->rows[i];
	return NULL;
}

/* The read bandwidth now; without a probe, the start's figure. */
static double read_now(const struct e2e_conf *c)
{
	double gbps;

	if (!c->reader ||
	    bench_reader_sustained(c->reader, (int)c->threads, &gbps))
		return c->gbps;
	return gbps;
}

/* One side's turn at row i (0: the prompt): its figures into t. */
static int turn(const struct e2e_conf *c, struct ours *o, struct peer *p,
		int llama, unsigned int i, int first, struct e2e_row *t)
{
	int ret;

	if (llama) {
		ret = i ? peer_decode(p, c, t) : peer_prompt(p, c, t, first);
		if (ret)
			fprintf(stderr, "e2e: llama.cpp: %s\n", p->err);
	} else {
		ret = i ? ours_decode(o, c, t) : ours_prompt(o, c, t, first);
		if (ret)
			fprintf(stderr, "e2e: ours: %s\n",
				syshax_strerror(ret));
	}
	return ret;
}

/* Row i in c->rounds rounds; each side's best round into r, and where
 * probe (the batch-1 row), the read around that turn into m->gbps. A
 * failing llama.cpp leaves its figure out; a failing ours ends the model. */
static int measure_row(const struct e2e_conf *c, struct ours *o,
		       struct peer *p, int have_peer, unsigned int i,
		       int probe, struct e2e_model *m)
{
	struct e2e_row *r = &m->rows[i];
	double before = probe ? read_now(c) : NAN, after;
	int ret = 0;

	r->ours = r->llama = r->engine = NAN;
	for (unsigned int k = 0; k < c->rounds * 2; k++) {
		/* ours first in even rounds, llama.cpp in odd ones */
		int llama = (k ^ (k >> 1)) & 1;
		struct e2e_row t = { .n = r->n, .ours = NAN, .llama = NAN };
		double *best = llama ? &r->llama : &r->ours;
		double got;

		if (llama && !have_peer)
			continue;
		ret = turn(c, o, p, llama, i, k < 2, &t);
		if (llama) {
			have_peer = !ret;
			ret = 0;
			if (!have_peer)
				continue;
		}
		if (ret)
			break;
		got = llama ? t.llama : t.ours;
		after = probe ? read_now(c) : NAN;
		if (!(got <= *best)) {
			*best = got;
			if (!llama)
				r->engine = t.engine;
			if (probe)
				m->gbps[llama] = fmax(before, after);
		}
		before = after;
	}
	return ret;
}

static int measure(const struct e2e_conf *c, struct ours *o, struct peer *p,
		   int have_peer, struct e2e_model *m)
{
	int ret = 0;

	m->gbps[0] = m->gbps[1] = NAN;
	for (unsigned int i = 0; !ret && i <= c->nseqs; i++) {
		struct e2e_row *r = &m->rows[i];

		r->n = i ? c->seqs[i - 1] : c->prompt;
		fprintf(stderr, "e2e: %s: %s %u\n", m->file,
			i ? "decode, sequences" : "prompt, tokens", r->n);
		ret = measure_row(c, o, p, have_peer, i,
				  i && batch1(m, i + 1) == r, m);
	}
	return ret;
}

static int bench_model(const struct e2e_conf *c, int have_peer,
		       struct e2e_model *m)
{
	struct ours o;
	struct peer p = { 0 };
	char path[4200];
	uint64_t t0;
	int ret = model_file(c, m, path, sizeof(path));

	if (ret)
		return ret;
	m->load[0] = m->load[1] = NAN;
	fprintf(stderr, "e2e: %s: loading in syshaxd\n", m->file);
	t0 = bench_now_ns();
	ret = ours_start(&o, c, c->models, m->file);
	if (ret)
		fprintf(stderr, "e2e: ours: %s\n", syshax_strerror(ret));
	else
		m->load[0] = secs_since(t0);
	if (!ret && have_peer) {
		fprintf(stderr, "e2e: %s: loading in llama.cpp\n", m->file);
		t0 = bench_now_ns();
		if (peer_open(&p, c, path)) {
			fprintf(stderr, "e2e: llama.cpp: %s\n", p.err);
			have_peer = 0;
		} else {
			m->load[1] = secs_since(t0);
		}
	}
	if (!ret) {
		struct gm_hparams hp;

		m->info = o.info;
		m->weight_bytes = o.info.weight_bytes;
		m->step_bytes = step_bytes(&o.info, m->type,
					   !gm_preset(m->arch, m->preset, &hp) &&
					   hp.tied, c);
		ret = measure(c, &o, &p, have_peer, m);
	}
	peer_close(&p);
	ours_stop(&o);
	return ret;
}

/* ---- output ---- */

/* The target for a row: ours / llama.cpp at least this; 0: none. */
static double row_target(const struct e2e_row *r, int prompt)
{
	if (prompt)
		return 1.0;
	return r->n == 1 ? 1.4 : r->n == 16 ? 2.0 : 0;
}

static const char *verdict(double have, double want)
{
	if (!want)
		return "";
	if (isnan(have))
		return "n/a";
	return have >= want ? "met" : "MISSED";
}

static void jnum(const char *key, double v, const char *sep)
{
	if (isnan(v))
		printf("\"%s\": null%s", key, sep);
	else
		printf("\"%s\": %.3f%s", key, v, sep);
}

/* Batch-1 tokens/s ceiling around a side's best round: every step reads
 * the weights once. */
static double roofline(const struct e2e_model *m, int llama)
{
	return m->gbps[llama] * 1e9 / (double)m->step_bytes;
}

/* A batch-1 rate as % of the roofline; NAN without a batch-1 row. */
static double roof_pct(const struct e2e_model *m, unsigned int nrows,
		       int llama)
{
	const struct e2e_row *r = batch1(m, nrows);

	if (!r)
		return NAN;
	return (llama ? r->llama : r->ours) / roofline(m, llama) * 100;
}

static void print_json_model(const struct e2e_model *m, unsigned int nrows,
			     const char *sep)
{
	printf("  {\"file\": \"%s\", \"arch\": \"%s\", \"preset\": \"%s\", "
	       "\"layers\": %u, \"type\": \"%s\", \"weight_bytes\": %llu, "
	       "\"step_bytes\": %llu, ", m->file, m->arch, m->preset,
	       m->info.n_layer, m->type, (unsigned long long)m->weight_bytes,
	       (unsigned long long)m->step_bytes);
	jnum("read_gbps", m->gbps[0], ", ");
	jnum("roofline_tps", roofline(m, 0), ", ");
	jnum("ours_roof_pct", roof_pct(m, nrows, 0), ", ");
	jnum("llama_read_gbps", m->gbps[1], ", ");
	jnum("llama_roof_pct", roof_pct(m, nrows, 1), ", ");
	jnum("ours_load_s", m->load[0], ", ");
	jnum("llama_load_s", m->load[1], ", ");
	printf("\"rows\": [");
	for (unsigned int i = 0; i < nrows; i++) {
		const struct e2e_row *r = &m->rows[i];
		double t = row_target(r, !i), ratio = r->ours / r->llama;

		printf("\n    {\"row\": \"%s\", \"n\": %u, ",
		       i ? "decode" : "prompt", r->n);
		jnum("ours_tps", r->ours, ", ");
		jnum("ours_engine", r->engine, ", ");
		jnum("llama_tps", r->llama, ", ");
		jnum("ratio", ratio, ", ");
		jnum("target", t ? t : NAN, "}");
		printf("%s", i + 1 < nrows ? "," : "");
	}
	printf("]}%s\n", sep);
}

static void print_json(const struct e2e_conf *c, const struct e2e_model *ms,
		       unsigned int n, const char *peer)
{
	printf("{\"command\": \"e2e\", \"cpu\": \"%s\", \"threads\": %u, "
	       "\"cpus\": %d, \"steps\": %u, \"prompt\": %u, "
	       "\"context\": %u, \"rounds\": %u, ", bench_cpu(), c->threads,
	       bench_ncpus(), c->steps, c->prompt, c->context, c->rounds);
	jnum("read_gbps", c->gbps, ", ");
	if (peer)
		printf("\"llama\": \"%s\", ", peer);
	else
		printf("\"llama\": null, ");
	printf("\"targets\": {\"prompt\": 1.0, \"decode_1\": 1.4, "
	       "\"decode_16\": 2.0, \"roof_pct_1\": %.0f},\n\"models\": [\n",
	       ROOF_TARGET);
	for (unsigned int i = 0; i < n; i++)
		print_json_model(&ms[i], 1 + c->nseqs, i + 1 < n ? "," : "");
	printf("]}\n");
}

static void print_model(const struct e2e_model *m, unsigned int nrows)
{
	double pct = roof_pct(m, nrows, 0);

	printf("\n%s: %.2f GB of weights, %.2f GB read per decode step\n",
	       m->file, (double)m->weight_bytes * 1e-9,
	       (double)m->step_bytes * 1e-9);
	printf("%-14s %11s %11s %8s %8s  %s\n", "", "ours tok/s",
	       "llama tok/s", "ratio", "engine", "target ours/llama");
	for (unsigned int i = 0; i < nrows; i++) {
		const struct e2e_row *r = &m->rows[i];
		double t = row_target(r, !i), ratio = r->ours / r->llama;
		char what[32];

		snprintf(what, sizeof(what), i ? "decode S=%u" : "prompt(%u)",
			 r->n);
		printf("%-14s %11.2f ", what, r->ours);
		if (isnan(r->llama))
			printf("%11s %8s", "-", "-");
		else
			printf("%11.2f %7.2fx", r->llama, ratio);
		printf(" %7.0f%%", r->engine * 100);
		if (t)
			printf("  >= %.1fx %s", t, verdict(ratio, t));
		printf("\n");
	}
	printf("roofline: %.1f GB/s (read around ours' best batch-1 round) / "
	       "%.2f GB = %.2f tok/s; ours %.0f%% (target >= %.0f%%: %s), "
	       "llama.cpp %.0f%% of %.1f GB/s\n", m->gbps[0],
	       (double)m->step_bytes * 1e-9, roofline(m, 0), pct, ROOF_TARGET,
	       verdict(pct, ROOF_TARGET), roof_pct(m, nrows, 1), m->gbps[1]);
	printf("load: %.2f s ours (syshaxd started, the model, its caches), "
	       "%.2f s llama.cpp (the model, its context)\n", m->load[0],
	       m->load[1]);
}

static void print_table(const struct e2e_conf *c, const struct e2e_model *ms,
			unsigned int n, const char *peer)
{
	double load[1] = { -1 };

	getloadavg(load, 1);
	printf("syshax-bench e2e: %d CPUs, %u threads both sides, load %.2f, "
	       "read %.1f GB/s (sustained, at the start)\ncpu: %s\n",
	       bench_ncpus(), c->threads, load[0], c->gbps, bench_cpu());
	printf("ours:      syshaxd jobs, weights in the daemon's anonymous "
	       "memory, f16 KV\n");
	printf("llama.cpp: %s\n", peer ? peer :
	       "NOT MEASURED (no peer; tools/fetch-ggml.sh fetches it)");
	printf("decode: %u steps timed after %u, each sequence prefilled "
	       "with %u tokens; prompt: one prefill after a warm-up one\n"
	       "rows: %u rounds, the sides in turn; each side's best round\n",
	       c->steps, WARM_STEPS, c->context, c->rounds);
	for (unsigned int i = 0; i < n; i++)
		print_model(&ms[i], 1 + c->nseqs);
}

/* ---- options ---- */

static void usage(FILE *f)
{
	fprintf(f,
"usage: syshax-bench e2e [--llama DIR] [--models DIR] [--preset P,...]\n"
"                        [--shape S,...] [--layers N] [--type T,...]\n"
"                        [--seqs N,...] [--threads N]\n"
"                        [--steps N] [--prompt N] [--context N]\n"
"                        [--rounds N] [--syshaxd PATH] [--json]\n"
"Whole steps of random-weight models, ours (PREFILL/DECODE jobs\n"
"through a private syshaxd) against llama.cpp's libllama on the same GGUF\n"
"file and threads: prompt processing, decode of 1..N sequences, and batch 1\n"
"against the machine's read bandwidth.\n"
"  --llama DIR    libllama's folder (tools/fetch-ggml.sh; default build/ggml)\n"
"  --models DIR   where models are cached, generated when missing\n"
"                 (default build/models)\n"
"  --preset P,..  llama models tiny, 1b, 7b (default 1b,7b without --shape)\n"
"  --shape S,...  real models' shapes and vocabularies: llama3-8b,\n"
"                 llama3.2-1b, qwen2.5-7b, qwen2.5-0.5b, r1-qwen-32b\n"
"                 (qwen2), qwen3-30b-a3b (qwen3moe)\n"
"  --layers N     cut every model to N layers (default: --shape's %d,\n"
"                 --preset's whole)\n"
"  --type T,...   q4_0, q8_0 (default both)\n"
"  --seqs N,...   decode batch sizes, 1..%d (default 1,4,16)\n"
"  --threads N    both sides' threads (default: every CPU)\n"
"  --steps N      decode steps timed, after %d warm-up steps (default 32)\n"
"  --prompt N     prompt tokens (default 128)\n"
"  --context N    tokens each decoding sequence is prefilled with, 1..%d\n"
"                 (default %d): the decode rows' attention reads that\n"
"                 much KV cache a step, counted in batch 1's bytes\n"
"  --rounds N     each row's rounds, 1..%d, the two sides in turn; each\n"
"                 side's best round counts (default %d)\n"
"  --syshaxd P    the daemon to start (default: beside this program)\n"
"  --json         JSON instead of a table\n", SHAPE_LAYERS, MAX_SEQS,
		WARM_STEPS, MAX_CONTEXT, SHORT_PROMPT, MAX_ROUNDS, ROUNDS);
}

/* Splits a comma list in place into out[]; 0, or -1 when malformed. */
static int split_list(char *s, const char **out, unsigned int *n)
{
	*n = 0;
	for (char *t = strtok(s, ","); t; t = strtok(NULL, ",")) {
		if (*n == MAX_LIST)
			return -1;
		out[(*n)++] = t;
	}
	return *n ? 0 : -1;
}

static int in(const char *s, const char *const *set, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		if (!strcmp(s, set[i]))
			return 1;
	return 0;
}

static int check_conf(struct e2e_conf *c, const char *seqs[])
{
	static const char *const presets[] = { "tiny", "1b", "7b" };
	static const char *const types[] = { "q4_0", "q8_0" };
	unsigned int i, need;

	for (i = 0; i < c->npresets; i++)
		if (!in(c->presets[i], presets, 3))
			return -1;
	for (i = 0; i < c->nshapes; i++)
		if (!gm_shape_arch(c->presets[c->npresets + i]))
			return -1;
	if (c->layers > 256)
		return -1;
	for (i = 0; i < c->ntypes; i++)
		if (!in(c->types[i], types, 2))
			return -1;
	c->max_seqs = 0;
	for (i = 0; i < c->nseqs; i++) {
		c->seqs[i] = (unsigned int)strtoul(seqs[i], NULL, 10);
		if (!c->seqs[i] || c->seqs[i] > MAX_SEQS)
			return -1;
		if (c->seqs[i] > c->max_seqs)
			c->max_seqs = c->seqs[i];
	}
	if (!c->threads || c->threads > 256 || !c->steps ||
	    c->steps > 4096 || c->prompt < 2 || c->prompt > 4096 ||
	    !c->context || c->context > MAX_CONTEXT || !c->rounds ||
	    c->rounds > MAX_ROUNDS)
		return -1;
	need = c->context + WARM_STEPS + c->steps;
	need = need > c->prompt ? need : c->prompt;
	c->ctx = (need + BLOCK - 1) / BLOCK * BLOCK;
	c->max_tokens = c->prompt > c->context ? c->prompt : c->context;
	if (c->max_seqs > c->max_tokens)
		c->max_tokens = c->max_seqs;
	return 0;
}

static int parse(int argc, char **argv, struct e2e_conf *c, int *json)
{
	static const struct option opts[] = {
		{ "llama", required_argument, NULL, 'l' },
		{ "models", required_argument, NULL, 'm' },
		{ "preset", required_argument, NULL, 'p' },
		{ "shape", required_argument, NULL, 'H' },
		{ "layers", required_argument, NULL, 'L' },
		{ "type", required_argument, NULL, 't' },
		{ "seqs", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 'n' },
		{ "steps", required_argument, NULL, 'S' },
		{ "prompt", required_argument, NULL, 'P' },
		{ "context", required_argument, NULL, 'C' },
		{ "rounds", required_argument, NULL, 'R' },
		{ "syshaxd", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	/* the defaults, split in place like optarg: once per process */
	static char presets[] = "1b,7b", types[] = "q4_0,q8_0", seqs[] = "1,4,16";
	char *lp = NULL, *lh = NULL, *lt = types, *ls = seqs;
	const char *sv[MAX_LIST];
	int opt, bad = 0;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'l': c->llama = optarg; break;
		case 'm': c->models = optarg; break;
		case 'p': lp = optarg; break;
		case 'H': lh = optarg; break;
		case 'L': c->layers = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 't': lt = optarg; break;
		case 's': ls = optarg; break;
		case 'n': c->threads = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 'S': c->steps = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 'P': c->prompt = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 'C': c->context = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 'R': c->rounds = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 'd': snprintf(c->exe, sizeof(c->exe), "%s", optarg); break;
		case 'j': *json = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (lp || !lh)
		bad |= split_list(lp ? lp : presets, c->presets, &c->npresets);
	if (lh)
		bad |= split_list(lh, c->presets + c->npresets, &c->nshapes);
	bad |= split_list(lt, c->types, &c->ntypes);
	bad |= split_list(ls, sv, &c->nseqs);
	if (bad || optind < argc || check_conf(c, sv)) {
		usage(stderr);
		return 2;
	}
	return -1;
}

/* The read probe, kept for the batch-1 rows, and its first figure. */
static void read_start(struct e2e_conf *c)
{
	c->gbps = NAN;
	fprintf(stderr, "e2e: measuring read bandwidth\n");
	if (bench_reader_new(&c->reader) ||
	    bench_reader_sustained(c->reader, (int)c->threads, &c->gbps))
		fprintf(stderr, "e2e: read bandwidth not measured\n");
}

/* Whether the peer loads; its version into name. */
static int probe_peer(const char *dir, char *name, size_t size)
{
	char err[256];
	struct llp *l;

	if (llp_open(&l, dir, err, sizeof(err))) {
		fprintf(stderr, "e2e: *** llama.cpp peer absent: %s; ours only "
			"***\n", err);
		return 0;
	}
	snprintf(name, size, "%s", llp_version(l));
	llp_close(l);
	return 1;
}

int bench_e2e_main(int argc, char **argv)
{
	struct e2e_conf c = { .llama = "build/ggml", .models = "build/models",
			      .threads = (unsigned int)bench_ncpus(),
			      .steps = 32, .prompt = 128,
			      .context = SHORT_PROMPT, .rounds = ROUNDS };
	struct e2e_model ms[2 * MAX_LIST * MAX_LIST];
	unsigned int n = 0;
	char peer[256];
	int json = 0, have_peer, failed = 0, ret;

	ret = parse(argc, argv, &c, &json);
	if (ret >= 0)
		return ret;
	if (!c.exe[0]) {
		static const char *const rel[] = { "syshaxd" };

		beside_path(c.exe, sizeof(c.exe), "syshaxd", rel, 1);
	}
	shxk_init();
	have_peer = probe_peer(c.llama, peer, sizeof(peer));
	read_start(&c);
	memset(ms, 0, sizeof(ms));
	for (unsigned int p = 0; p < c.npresets + c.nshapes; p++)
		for (unsigned int t = 0; t < c.ntypes; t++) {
			struct e2e_model *m = &ms[n];
			const char *arch = gm_shape_arch(c.presets[p]);

			m->arch = arch ? arch : "llama";
			m->n_layer = c.layers ? c.layers :
				     arch ? SHAPE_LAYERS : 0;
			m->preset = c.presets[p];
			m->type = c.types[t];
			if (bench_model(&c, have_peer, m))
				failed = 1;
			else
				n++;
		}
	if (json)
		print_json(&c, ms, n, have_peer ? peer : NULL);
	else
		print_table(&c, ms, n, have_peer ? peer : NULL);
	bench_reader_free(c.reader);
	return failed;
}
