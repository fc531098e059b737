/* SPDX-License-Identifier: MIT */
/*
 * The CPU engine's end-to-end suite: shared helpers. The suite runs against
 * whichever backend syshax_open(NULL) reaches and starts its own engine
 * (syshaxd --engine-only) with a private model_dir; every compute result
 * is checked against an fp64 reference computed here from the same inputs.
 */
#ifndef T_ENGINE_H
#define T_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <CUnit/Basic.h>

#include "syshax/rt.h"

#define T_MS	1000000LL
#define T_SEC	1000000000LL

#define T_ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

uint64_t t_now_ns(void);

/* ---- client contexts: one mapped buffer each, carved by the cases ---- */

struct tc {
	struct syshax *sh;
	struct syshax_buffer buf;
	size_t used;
};

/* The suite's main client (opened in setup, 24 MiB). */
extern struct tc g_c;

/* 0 or -errno; the buffer is size bytes, mapped. */
int tc_open(struct tc *c, size_t size);
void tc_close(struct tc *c);
/* 64-byte aligned bytes of c's buffer (zeroed); NULL (and a CUnit
 * failure) when it is full. */
void *tc_alloc(struct tc *c, size_t bytes);
void tc_reset(struct tc *c);
uint64_t tc_off(const struct tc *c, const void *p);

/* Submits jobs[0..n) (user_data = their index) and waits for all; cpl[i]
 * is job i's completion. 0, or -errno when submitting or waiting failed
 * (a CUnit failure). */
int tc_run(struct tc *c, struct syshax_job *jobs, unsigned int n,
	   struct syshax_completion *cpl);
/* One job: its completion status; *result gets its result (may be NULL). */
int tc_run1(struct tc *c, struct syshax_job *job, uint64_t *result);

/* syshax_job_init + syshax_job_params. */
void tj_init(struct syshax_job *j, uint32_t op, const void *params,
	     size_t size);
/* A ref to len bytes at p (inside c's buffer). */
void tj_ref(struct syshax_job *j, const struct tc *c, const void *p,
	    uint64_t len, uint32_t access);

/* ---- random numbers (xorshift64*: the same data on every run) ---- */

struct trng {
	uint64_t s;
};

void tr_seed(struct trng *r, uint64_t seed);
uint32_t tr_u32(struct trng *r);
/* Uniform in [-1, 1). */
double tr_unif(struct trng *r);

/* ---- element types ---- */

uint16_t t_f32_to_f16(float f);
double t_f16_to_f64(uint16_t h);
uint16_t t_f32_to_bf16(float f);
double t_bf16_to_f64(uint16_t h);

/* Bytes of an activation element (F32/F16/BF16). */
size_t t_act_size(int dt);
const char *t_dt_name(int dt);
/* Stores n values as dt into dst; dec (may be NULL) gets what the engine
 * will read back (the values after rounding to dt). */
void t_act_store(int dt, const double *v, void *dst, size_t n, double *dec);
/* Reads n values of type dt. */
void t_act_load(int dt, const void *src, double *out, size_t n);
/* n values uniform in [-amp, amp), stored as dt (dec as above). */
void t_act_rand(struct trng *r, int dt, double amp, void *dst, size_t n,
		double *dec);

/*
 * Checks rows x cols outputs y (type yt) against ref: for every row,
 * ||y - ref|| / ||ref|| <= tol + the rounding of yt (f16 2^-11, bf16 2^-8
 * per value); a row whose reference is all zero must be exactly zero.
 * One CUnit assertion; prints the worst row when it fails. Returns the
 * worst relative error.
 */
double t_check(const char *what, int yt, const void *y, const double *ref,
	       size_t rows, size_t cols, double tol);
/*
 * For chains that quantize an intermediate to 8-bit blocks (FFN and MOE
 * with Q8_0/Q4_0 weights: the normed h, silu(g) * u): where the engine's
 * f32 value and the reference's fp64 one sit on either side of a rounding
 * boundary, that activation moves by one step (d = amax / 127), which
 * moves the row by up to ~0.5 % of its norm. So: every row within loose
 * (plus the output rounding), and rows beyond tol counted in a tally;
 * t_tally_end() asserts that at most 10 % of the rows since
 * t_tally_begin() were (one-step flips are rare: ~1 row in 300 here),
 * so a small systematic error cannot hide under loose.
 */
double t_check_q(const char *what, int yt, const void *y, const double *ref,
		 size_t rows, size_t cols, double tol, double loose);
void t_tally_begin(void);
void t_tally_end(const char *what);
/* The rounding bound of an output type (0 for f32). */
double t_out_tol(int yt);

/* A byte pattern no op writes; t_sentinel_ok: still intact. */
void t_sentinel(void *p, size_t n);
bool t_sentinel_ok(const void *p, size_t n);

/* ---- weights: generated, written to files or buffers, decoded ---- */

struct tw {
	char name[SYSHAX_TENSOR_NAME_MAX];
	int dt;			/* SYSHAX_DT_* as stored */
	int kept;		/* the type the engine keeps it in */
	unsigned int ndim;
	uint64_t ne[4];		/* ggml order: ne[0] contiguous */
	void *data;		/* as stored (file / buffer bytes) */
	size_t size;
	double *ref;		/* every element decoded, ggml order */
};

/* Random weights, values about +-scale: F32/F16/BF16 rounded from
 * uniform values, Q8_0/Q4_0 random blocks (random scale, random quants). */
void tw_rand(struct tw *w, struct trng *r, const char *name, int dt,
	     unsigned int ndim, uint64_t ne0, uint64_t ne1, uint64_t ne2,
	     double scale);
/* A 1-D f32 tensor of values in [lo, hi). */
void tw_vec(struct tw *w, struct trng *r, const char *name, uint64_t n,
	    double lo, double hi);
void tw_free(struct tw *w);
/* The engine will quantize this float matrix on load (SYSHAX_QUANT_Q8_0
 * or _Q4_0): ref becomes ggml's quantize-dequantize of it. */
void tw_expect_quant(struct tw *w, int quant);
uint64_t tw_elems(const struct tw *w);

/* GGUF (names as given) / safetensors (names[i] when given) in the
 * model_dir: 0 or -errno. */
int tw_write_gguf(const char *file, const struct tw *w, size_t n);
/* The same with these metadata entries (wfile.h) instead. */
struct wf_wkv;
int tw_write_gguf_kv(const char *file, const struct wf_wkv *kv, size_t nkv,
		     const struct tw *w, size_t n);
int tw_write_st(const char *file, const struct tw *w,
		const char *const *names, size_t n);
/* model_dir/file */
const char *t_path(const char *file);
extern char g_model_dir[];
extern char g_out_dir[];	/* a folder beside it, outside model_dir */

/* ---- the ops ---- */

/* WEIGHTS_LOAD of a file: the status; *id the set. */
int t_load_file(struct tc *c, const char *path, uint32_t quant, uint64_t *id);
/* WEIGHTS_LOAD from a syshax_wdesc built in c's buffer. */
int t_load_buffer(struct tc *c, const struct tw *w, size_t n, uint32_t quant,
		  uint64_t *id);
int t_free_wset(struct tc *c, uint64_t id);
int t_engine_stats(struct tc *c, struct syshax_engine_stats *st);
/* Set id's weight bytes on all nodes as ENGINE_STATS lists them;
 * UINT64_MAX when it is not listed. */
uint64_t t_wset_bytes(struct tc *c, uint64_t id);
/* Jobs and batched runs of op (each pool counts them all). */
void t_op_stats(struct tc *c, uint32_t op, uint64_t *jobs,
		uint64_t *batches);

/* ---- fp64 references ---- */

/* Rounds x to f32, then prepares it as the kernels do for weights of type
 * wdt: Q8_0/Q4_0 -> 8-bit blocks (d = amax / 127, q = round(x / d)),
 * BF16 -> rounded to bf16, F32/F16 -> as is. */
void ref_act(int wdt, const double *x, double *out, size_t k);
/* y[m x n] = act(x)[m x k] . W_e^T: matrix e of w (rows ne[1], k ne[0]). */
void ref_gemm(const struct tw *w, size_t e, const double *x, size_t m,
	      double *y);
/* out = x / sqrt(mean(x^2) + eps) * nw (nw may be NULL), k values. */
void ref_rmsnorm(const double *x, const double *nw, double eps, size_t k,
		 double *out);
/* out[m x hid] = down_e(silu(gate_e(h)) * up_e(h)). */
void ref_swiglu(const struct tw *g, const struct tw *u, const struct tw *d,
		size_t e, const double *h, size_t m, double *out);
/* Softmax over nexp logits l, then the top k (ties: the lower id) into
 * ids and their weights, renormalized to sum 1 or not. */
void ref_route(const double *l, int nexp, int topk, bool renorm, int32_t *ids,
	       double *wts);
/* One FFN job: w = { gate, up, down, ffn_norm }, flags SYSHAX_FFN_*. */
void ref_ffn(const struct tw *w, uint32_t flags, double eps,
	     const double *x, size_t m, double *y);

/* ---- the engine process ---- */

/* Starts it ($SYSHAX_ENGINE_CMD, else syshaxd --engine-only --foreground
 * beside the suite) with --model-dir and --threads; 0 once attached. */
int t_engine_start(void);
/* SIGTERM, reap: 0 when it exited 0. */
int t_engine_stop(void);
unsigned int t_engine_threads(void);

/* ---- suites ---- */

int t_add_gemm(void);
int t_add_ffn(void);
int t_add_moe(void);
int t_add_attn(void);
int t_add_load(void);
int t_add_bad(void);
int t_add_batch(void);
int t_add_model(void);

#endif /* T_ENGINE_H */
