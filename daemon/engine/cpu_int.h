/* SPDX-License-Identifier: MIT */
/* Inside the CPU engine: its state, checked jobs, scratch, the op files. */
#ifndef SHXD_CPU_INT_H
#define SHXD_CPU_INT_H

#include <stdbool.h>

#include "cpu.h"
#include "dispatch.h"
#include "wset.h"

/* Per-pool scratch slots, node-local, grown as batches need. */
enum { SC_ACT, SC_ACT2, SC_G, SC_U, SC_ACTD, SC_OUT, SC_OUT2, SC_SLOTS };
/* Scratch of the calling (engine) thread. */
enum { MS_X, MS_H, MS_Y, MS_EO, MS_IDS, MS_MOE, MS_LOGITS, MS_ATT, MS_SEQ,
       MS_STEP, MS_ROWS, MS_TOPK, MS_SLOTS };

struct scratch {
	void *p;
	size_t size;
	int node;		/* -1: malloc */
};

struct shxd_cpu {
	struct shxd_pool *pool;
	char model_dir[4096];
	enum shxk_type quantize;
	unsigned int max_batch, max_wsets;

	/* One batch at a time on the pools and their scratch; weight loads,
	 * frees and stats run beside it on their engine thread. */
	pthread_mutex_t exec_lock;
	struct scratch sc[SHXD_MAX_POOLS][SC_SLOTS];
	struct scratch ms[MS_SLOTS];
	uint64_t pool_ns[SHXD_MAX_POOLS];	/* last run, per pool */

	/* stats_lock also guards the dispatch rule's inputs. */
	pthread_mutex_t stats_lock;
	struct syshax_engine_stats stats;
	struct shxd_load load;		/* the CPU's recent DECODE batches */
	unsigned int xpu_running;	/* the latest REPORT_XPU */
	float xpu_tps;
};

/* A compute job after its params and refs were checked. */
struct shxd_pjob {
	unsigned int idx;		/* in the fetched array */
	uint32_t op, ctx;
	struct shxd_wset *ws;		/* a reference, or NULL */
	unsigned int m;			/* tokens (sequences for attention) */
	const void *x;
	enum shxk_type xt;
	void *y;
	enum shxk_type yt;
	unsigned int layer;
	uint32_t flags;
	float eps;
	const struct shxd_mat *w;	/* GEMM */
	/* FFN: its gate, up and down; MOE: the shared expert's (or NULL). */
	const struct shxd_mat *g, *u, *d;
	const float *norm;		/* ffn_norm with NORM, else NULL */
	/* MOE */
	uint32_t route, topk;
	int32_t *ids;			/* IDS: checked copies, m x topk */
	float *wts;
	const float *logits;		/* LOGITS: the client's, m x n_expert */
	unsigned int nexp;
	const struct shxd_mat *router;	/* ffn_gate_inp, for ROUTER */
	const float *shgate;		/* ffn_gate_inp_shexp, or NULL */
};

/* Checks a compute job; on success p is filled (and holds a wset
 * reference the caller drops with shxd_pjob_release). */
int shxd_op_check(struct shxd_cpu *cpu, const struct shxd_xjob *xj,
		  struct shxd_pjob *p);
void shxd_pjob_release(struct shxd_pjob *p);
/* Whether b may join a batch led by a. */
bool shxd_op_batchable(const struct shxd_pjob *a, const struct shxd_pjob *b);

/* Batched runs of checked jobs (all compatible); 0 or -errno for all. */
int shxd_op_linear(struct shxd_cpu *cpu, struct shxd_pjob *const *pj,
		   unsigned int n);
int shxd_op_attn(struct shxd_cpu *cpu, const struct shxd_xjob *xj);

/* One sequence's query as shxd_attn_run sees it: its cache (all sequences
 * of a run share kv_heads and head_dim), block table and context length
 * (positions 0..len-1; 0 gives a zero row). */
struct shxd_attn_seq {
	struct shxk_kv_cache kv;
	const int32_t *bt;
	size_t len;
};

/* out[n x qh x hd] = attention of q[n x qh x hd] (f32) over each
 * sequence's cache, on the pools. 0 or -ENOMEM. */
int shxd_attn_run(struct shxd_cpu *cpu, const struct shxd_attn_seq *seq,
		  size_t n, size_t qh, float scale, const float *q, float *out);

/* The same in phases of a caller's run: setup on the caller's thread
 * (splits long contexts in chunks, grows scratch), work on every worker,
 * then, after a barrier over all of them, each worker's share of the
 * merge where chunks > 1 (one chunk's part is the output itself). */
struct shxd_attn {
	struct shxd_pool *pool;		/* whose threads claim the items */
	const struct shxd_attn_seq *seq;
	const float *q;
	float *out, *parts, *ml;	/* per chunk: out and max/sum */
	size_t seqs, qh, hd, chunks;
	size_t ranges;			/* of kv heads, per sequence */
	float scale;
};
int shxd_attn_setup(struct shxd_attn *t, struct shxd_cpu *cpu,
		    const struct shxd_attn_seq *seq, size_t n, size_t qh,
		    float scale, const float *q, float *out);
void shxd_attn_work(const struct shxd_attn *t, const struct shxd_worker *w);
void shxd_attn_merge(const struct shxd_attn *t, const struct shxd_worker *w);

/* One SwiGLU block over rows of in: out rows [out_row, out_row + m). */
struct shxd_seg {
	const struct shxd_mat *g, *u, *d;
	/* Input row i: in's row i, or row rows[i] where rows is set (an
	 * expert's tokens, read where they are). */
	const float *in;
	const uint32_t *rows;
	size_t m, out_row;
};

/*
 * Linear work for the pools, on f32 rows of width k: GEMMs of matrices on
 * one input (output i [m x w[i]->n], shared by the pools; a matrix split
 * by columns alone, into pout), then SwiGLU segments (each pool sums into
 * its own pout rows; the caller adds the pools' pout up).
 */
struct shxd_lin {
	struct shxd_cpu *cpu;
	size_t k;
	const struct shxd_mat *const *w;
	float *const *out;
	unsigned int nw;
	const float *in;
	size_t m;
	const struct shxd_seg *segs;
	unsigned int nseg;
	float *pout[SHXD_MAX_POOLS];
};

/* Grows the scratch t needs (segments: out_rows rows of pout) and sets
 * pout; on the caller's thread before the run, or on one worker while the
 * others wait at a barrier. 0, -EINVAL, -ENOMEM. */
int shxd_lin_grow(struct shxd_lin *t, size_t out_rows);
/* Worker w's part of t, a run's phase: the caller's barrier over t's
 * pool or all workers ends it (before its output is read or another
 * phase rewrites its scratch), or the run's end does. */
void shxd_lin_work(struct shxd_lin *t, const struct shxd_worker *w);

/*
 * An MoE block over rows of x (f32, width hid) in phases of a caller's run
 * (op_moe.c): setup on the caller's thread before the run (scratch for up
 * to m rows; an MoE model's step sets it up once per layer, all alike),
 * then work on every worker, which writes the block's output over x and
 * ends at a barrier over all of them. Jobs pj[0..n) give the rows' routes,
 * each its rows in order; the first one the rest. err: the run's first
 * error (0 or -errno), for the caller to read after the run.
 */
struct shxd_moe {
	struct shxd_cpu *cpu;
	size_t hid;
	float *h, *logits, *wts, *acc, *eo;
	int32_t *ids;
	uint32_t *off, *order, *pos, *tok;	/* tok: order's rows' tokens */
	/* Written on one thread between barriers: the experts' phase. */
	struct shxd_seg *segs;
	unsigned int nseg;
	float *pout[SHXD_MAX_POOLS];
	int err;
};
int shxd_moe_setup(struct shxd_moe *t, struct shxd_cpu *cpu,
		   struct shxd_pjob *const *pj, unsigned int n, size_t m);
void shxd_moe_work(struct shxd_moe *t, struct shxd_pjob *const *pj,
		   unsigned int n, float *x, size_t m,
		   const struct shxd_worker *w);

/* y[rows x m->n] = in[rows x m->k] . m^T (f32) on the pools. */
int shxd_gemm_run(struct shxd_cpu *cpu, const struct shxd_mat *m,
		  const float *in, size_t rows, float *out);
/* The same for n matrices of one width on one input, in one run (none
 * split by columns when n > 1: -EINVAL). */
int shxd_gemm_run_n(struct shxd_cpu *cpu, const struct shxd_mat *const *m,
		    float *const *out, unsigned int n, const float *in,
		    size_t rows);
int shxd_op_weights(struct shxd_cpu *cpu, const struct shxd_xjob *xj,
		    __u64 *result);
/* MODEL_LOAD and REPORT_XPU. */
int shxd_op_model(struct shxd_cpu *cpu, const struct shxd_xjob *xj,
		  __u64 *result);
/* Job i (DECODE or PREFILL) and, for DECODE, the later ones of its model
 * that fit the batch: checked, dispatched, run and completed. */
void shxd_op_steps(struct shxd_cpu *cpu, struct shxd_xjob *jobs,
		   unsigned int i, unsigned int n,
		   struct syshax_engine_cpl *cpls, bool *done);

/* SYSHAX_QUANT_* to the type matrices become: 0 or -EINVAL. */
int shxd_quant_type(const struct shxd_cpu *cpu, uint32_t q, enum shxk_type *t);
/* Registers a loaded set for ctx (the registry takes the reference, or
 * drops it on failure) and logs it; *id is its id. */
int shxd_wreg_publish(struct shxd_cpu *cpu, struct shxd_wset *ws, uint32_t ctx,
		      const char *what, __u64 *id);
/* Counts a run of n jobs of op (tokens in all) that ended with ret. */
void shxd_account(struct shxd_cpu *cpu, uint32_t op, unsigned int n,
		  uint64_t tokens, int ret, bool batched);

/* Whether n bytes at p are all zero (reserved fields, unused params). */
bool shxd_zero(const void *p, size_t n);
/* Copies the job's params struct (size bytes) to dst: -EINVAL when the
 * params past it are not zero. */
int shxd_params(const struct shxd_xjob *xj, void *dst, size_t size);
/* refs[i] of the job: present, asking for access, at least bytes long and
 * inside its mapping; *ptr is its first byte. -EINVAL or -ERANGE. */
int shxd_ref_span(const struct shxd_xjob *xj, unsigned int i, uint32_t access,
		  uint64_t bytes, void **ptr);

/* shxd_ref_span() that keeps the first error in *err (NULL after one). */
void *shxd_span(const struct shxd_xjob *xj, unsigned int i, uint32_t acc,
		uint64_t bytes, int *err);

/* Scratch of at least bytes: pool p's (node-local) or the caller's. */
void *shxd_scratch(struct scratch *s, size_t bytes);

/* Element size of an activation type (f32/f16/bf16), 0 for others. */
size_t shxd_act_size(enum shxk_type t);
/* Rows of n values between f32 and an activation type. */
void shxd_to_f32(enum shxk_type t, const void *src, float *dst, size_t n);
void shxd_from_f32(enum shxk_type t, const float *src, void *dst, size_t n);

/* Thread w's share [*a, *b) of n items, cut at multiples of align. */
void shxd_split(size_t n, size_t align, unsigned int part, unsigned int parts,
		size_t *a, size_t *b);

/* The k highest values seen so far, highest first (k at most
 * SYSHAX_STEP_TOPK_MAX): a step's output tokens, a row's experts. */
struct shxd_topk {
	int32_t ids[SYSHAX_STEP_TOPK_MAX];
	float val[SYSHAX_STEP_TOPK_MAX];
	uint32_t have;
};
/* Keeps value v of id among the k highest; of equal ones, the first seen. */
void shxd_topk_add(struct shxd_topk *t, uint32_t k, int32_t id, float v);

#endif /* SHXD_CPU_INT_H */
