/* SPDX-License-Identifier: MIT */
/*
 * syshax-bench internals: the subcommands main.c dispatches to, and the
 * helpers they share (thread team, timing, machine limits, peers).
 *
 * Helpers return 0 or a negative errno and never print: printing belongs to
 * the subcommand that owns the output format (table or JSON).
 */
#ifndef SYSHAX_BENCH_H
#define SYSHAX_BENCH_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>

/* Subcommands: argv[0] is the subcommand's name; returns the exit status. */
int bench_kernels_main(int argc, char **argv);
int bench_nop_main(int argc, char **argv);
int bench_ffn_main(int argc, char **argv);
int bench_e2e_main(int argc, char **argv);
int bench_serve_main(int argc, char **argv);
int bench_ppl_main(int argc, char **argv);

/* ---- timing (timing.c) ---- */

uint64_t bench_now_ns(void);
/* Median of n samples; sorts them in place. */
double bench_median(double *v, size_t n);

/*
 * Calls call(arg) once to warm up (page tables, JIT, thread wake-up), then
 * times one call at a time until at least @budget_s seconds and
 * BENCH_MIN_REPS calls have passed; *sec gets the median. A call advances
 * its own weight rotation. Returns the first error a call returns.
 */
#define BENCH_MIN_REPS 3
/*
 * A case is timed in this many rounds, taking turns with its peers, and
 * the lowest round median counts: a burst of other load on a shared
 * machine then costs every contender one round, not one contender.
 */
#define BENCH_ROUNDS 5
typedef int (*bench_call)(void *arg);
int bench_time_calls(bench_call call, void *arg, double budget_s,
		     double *sec);

/*
 * Every weight-streaming measurement rotates through copies totalling at
 * least this much, so that no call finds its weights in the last-level
 * cache (8-32 MiB on the machines we target).
 */
#define BENCH_ROTATE_BYTES (512ull << 20)
/* How many copies of @bytes make up a rotation set; at least 2. */
size_t bench_copies(size_t bytes);

/*
 * Memory for large benchmark sets: page-aligned, transparent huge pages
 * requested, first touched by the caller. NULL when out of memory.
 */
void *bench_alloc(size_t bytes);
void bench_free(void *p, size_t bytes);

/* ---- pinned thread team (team.c) ---- */

struct bench_team;
typedef void (*bench_fn)(void *arg, int tid, int nthr);

/*
 * Creates @nthr threads, thread i pinned to the i-th CPU the process may
 * run on; the caller is thread 0 and stays pinned until bench_team_free()
 * restores its previous affinity (threads that other libraries create in
 * between would inherit the pin, so keep a team's lifetime short).
 */
int bench_team_new(struct bench_team **team, int nthr);
/* Runs fn(arg, tid, nthr) on every thread; returns when all are done. */
void bench_team_run(struct bench_team *team, bench_fn fn, void *arg);
void bench_team_free(struct bench_team *team);
/* CPUs the process may run on. */
int bench_ncpus(void);
/* The CPU, the kernels' variant and AMX, for every header and JSON
 * report (shxk_cpu_describe()). */
const char *bench_cpu(void);
/*
 * The calling thread's affinity, saved and put back around a peer that
 * pins it (OpenMP and ggml pin their caller and never unpin it). With
 * @pin, bench_affinity_save() also pins the caller to the first CPU, where
 * our team's thread 0 runs.
 */
int bench_affinity_save(cpu_set_t *saved, int pin);
void bench_affinity_restore(const cpu_set_t *saved);

/* ---- jobs against the bare kernels (jobtime.c) ---- */

struct syshax;
struct syshax_job;

/* Submits job and waits (PRIVD_START_NS at most): the completion's
 * status; *result and, when not NULL, *exec_ns (the engine's own time). */
int bench_job_wait(struct syshax *sh, const struct syshax_job *job,
		   uint64_t *result, uint64_t *exec_ns);

#define BENCH_JOB_BLOCKS 5	/* job / bare alternations */

/* The bare kernels doing the job's work: n rounds, µs of each into lat. */
typedef int (*bench_bare_fn)(void *arg, unsigned int n, double *lat);

struct bench_jobtime {
	double job_us;		/* submit to completion, median */
	double exec_us;		/* the engine's exec_ns, median */
	double bare_us;		/* the bare kernels, median */
};

/* rounds jobs and rounds bare runs in BENCH_JOB_BLOCKS blocks in turn,
 * after 5 warm-up jobs. */
int bench_job_vs_bare(struct syshax *sh, const struct syshax_job *job,
		      unsigned int rounds, bench_bare_fn bare, void *arg,
		      struct bench_jobtime *r);

/*
 * syshax-bench ffn's part (c) (attn_job.c): an ATTN_DECODE job over a
 * paged f16 KV cache against the bare kernel on @threads; *maxdiff gets
 * the largest difference between the two outputs.
 */
int bench_attn_job(struct syshax *sh, unsigned int threads,
		   unsigned int rounds, struct bench_jobtime *r, double *maxdiff);

/* ---- machine limits (machine.c) ---- */

/*
 * A read probe for the "% of read bandwidth" of a kernel: a read-only
 * kernel over a 1 GiB buffer that reads the kernel's bytes per call, the
 * next slice each call, timed as the kernels are (bench_time_calls). On
 * the machines we measured, short streams (a few MiB to a few tens)
 * run up to 3x faster than sustained 1 GiB passes, so only a probe with
 * the same bytes per call is a fair bar for a given GEMV. Each thread's
 * share is read as one run and as four side by side, the faster counting
 * (here and in the sustained figure).
 */
struct bench_reader;
int bench_reader_new(struct bench_reader **r);
/* Median seconds per call reading @bytes (<= 1 GiB) on @nthr threads. */
int bench_reader_time(struct bench_reader *r, size_t bytes, int nthr,
		      double budget_s, double *sec);
void bench_reader_free(struct bench_reader *r);
/*
 * Sustained streaming read bandwidth in GB/s: whole passes over the 1 GiB
 * buffer (best pass).
 */
int bench_reader_sustained(struct bench_reader *r, int nthr, double *gbps);
/*
 * Integer dot-product peak (GOPS, a multiply-add counts 2) of a
 * register-resident loop; @isa names the instruction measured.
 * -ENOTSUP when the CPU has no integer dot-product instruction we know.
 */
int bench_dot_peak(int nthr, double *gops, const char **isa);

/* ---- our kernels (ours.c, the only file that calls libshxk) ---- */

/* Weight formats, as the kernels table names them. */
enum bench_wtype {
	BENCH_Q4_0,
	BENCH_Q8_0,
	BENCH_BF16,
	BENCH_F16,
	BENCH_F32,
	BENCH_NWTYPES,
};

const char *bench_wtype_name(enum bench_wtype t);
/* Bytes of a row of @k weights (k a multiple of 32). */
size_t bench_wtype_row_bytes(enum bench_wtype t, size_t k);

/* Picks the kernels' ISA variant; @isa gets its name. */
int ours_init(const char **isa);
/*
 * A rotation set (>= BENCH_ROTATE_BYTES) of @k x @n weights of type @t
 * quantized from @w (n rows of k f32); @x8 asks for the interleaved layout
 * where the type has one.
 */
struct ours_case;
int ours_case_new(struct ours_case **c, enum bench_wtype t, int k, int n,
		  const float *w, int x8);
/* Median seconds per call of an (m x k) x (k x n) product; @warm reuses
 * one copy (cache-resident figure). */
int ours_case_time(struct ours_case *c, int m, int nthr, int warm,
		   double budget_s, double *sec);
void ours_case_free(struct ours_case *c);

/* Decode attention: one query token per sequence over an f16 paged cache. */
#define BENCH_ATTN_CTX		4096
#define BENCH_ATTN_HEAD_DIM	128
/*
 * Median seconds per call over @nseq sequences of @q_heads query heads in
 * groups over @kv_heads; *kv_bytes: K+V read.
 */
int ours_attn_time(int q_heads, int kv_heads, int nseq, int nthr, int warm,
		   double budget_s, double *sec, double *kv_bytes);

/* ---- peers ---- */

/*
 * ggml's CPU backend, dlopen'ed from @dir (libggml-base.so and the best
 * libggml-cpu-*.so the CPU supports). @variant gets the chosen library's
 * name. -ENOENT when the folder lacks the libraries.
 */
struct ggml_peer;
int ggml_peer_open(struct ggml_peer **p, const char *dir, const char **variant);
void ggml_peer_close(struct ggml_peer *p);
/* The repack buffer type's name ("CPU_REPACK"), or NULL without one. */
const char *ggml_peer_repack_name(struct ggml_peer *p);
/*
 * A rotation set (>= BENCH_ROTATE_BYTES) of @k x @n weights of type @t,
 * quantized by ggml's own code from @w (n rows of k f32 each). With
 * @repack the weights go in the CPU backend's repack buffer type (what
 * llama.cpp uses by default: q4_0 as 8x8 interleaved blocks on AVX2);
 * -ENOTSUP when ggml has no repacked kernel for this type and shape here.
 */
struct ggml_case;
int ggml_case_new(struct ggml_peer *p, struct ggml_case **c,
		  enum bench_wtype t, int k, int n, const float *w,
		  int repack);
/* Median seconds per call of an (m x k) x (k x n) product on @nthr threads. */
int ggml_case_time(struct ggml_case *c, int m, int nthr, double budget_s,
		   double *sec);
void ggml_case_free(struct ggml_case *c);

/*
 * oneDNN's matmul primitive, dlopen'ed from libdnnl.so.2 at run time.
 * -ENOENT when the library is not installed.
 */
enum dnnl_kind { DNNL_S8S8, DNNL_BF16, DNNL_NKINDS };
struct dnnl_peer;
int dnnl_peer_open(struct dnnl_peer **p, const char **version);
void dnnl_peer_close(struct dnnl_peer *p);
const char *dnnl_kind_name(enum dnnl_kind kind);
/* Median seconds per call of an (m x k) x (k x n) matmul, weights rotated. */
int dnnl_peer_time(struct dnnl_peer *p, enum dnnl_kind kind, int k, int n,
		   int m, int nthr, double budget_s, double *sec);

#endif
