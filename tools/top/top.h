/* SPDX-License-Identifier: MIT */
/* syshax-top: what one sample holds and the functions that show it. */
#ifndef SHX_TOP_H
#define SHX_TOP_H

#include <stdint.h>
#include <stdio.h>

#include "syshax.h"
#include "syshax_ops.h"
#include "syshax/rt.h"

#define TOP_MAX_CTX	256
#define TOP_HIST	120	/* samples kept for the sparklines */

struct top_sample {
	double t;			/* monotonic seconds */
	struct syshax_stats_args st;
	struct syshax_ctx_stat ctx[TOP_MAX_CTX];
	int nr_ctx;			/* < 0: -errno of CTX_STATS */
	unsigned int total_ctx;
	struct syshax_engine_stats es;
	int es_ok;			/* es holds a fresh ENGINE_STATS */
	long hp_free[SYSHAX_MAX_NODES];	/* 2 MiB hugepages; -1: unknown */
	long hp_total[SYSHAX_MAX_NODES];
};

struct top {
	struct syshax *sh;
	const char *device;		/* --device, or NULL */
	struct syshax_version_args ver;
	enum syshax_backend backend;
	const char *isa;		/* kernels' variant (libshxk) */
	char cpu[256];			/* the CPU, variant, AMX (libshxk) */
	int nr_nodes;			/* online NUMA nodes */
	int broker_pid;			/* syshaxd's pid; 0: unknown */
	double broker_start;		/* its start, monotonic s; < 0: none */
	double start;			/* ours */
	/* ENGINE_STATS: a buffer of ours and a job not yet completed. */
	struct syshax_buffer esbuf;
	int es_buf_ok, es_pending, es_off;
	const char *es_why;		/* why no engine figures, or NULL */
	struct top_sample s[2];
	int cur;			/* s[cur]: newest; s[!cur]: before */
	int nr_samples;
	/* Rates over the last interval and their history. */
	double sub_rate, done_rate, fail_rate, tok_rate;
	double hist_jobs[TOP_HIST], hist_tok[TOP_HIST];
	int hist_n;
};

/* Per-op figures over the last interval (ENGINE_STATS). */
struct top_op_rate {
	const char *name;
	uint64_t jobs, tokens, batches, failed;
	double jobs_s, tokens_s, batch;	/* batch: tokens per batched run */
};

double top_now(void);
int top_init(struct top *t);
void top_fini(struct top *t);
/* A new sample into s[!cur], then it becomes cur; rates updated. */
int top_sample(struct top *t);
static inline const struct top_sample *top_cur(const struct top *t)
{
	return &t->s[t->cur];
}
static inline const struct top_sample *top_prev(const struct top *t)
{
	return t->nr_samples > 1 ? &t->s[!t->cur] : NULL;
}
int top_nodes_in_use(const struct top *t);
/* p (0..1) of the latency histogram, in microseconds (bucket's upper
 * bound); < 0 when empty. delta: over the interval when possible. */
double top_lat_pct(const struct top *t, double p, int delta);
/* Engine per-op rates; how many ops have figures. */
int top_op_rates(const struct top *t, struct top_op_rate *r, int max);
const char *top_backend_name(const struct top *t);
double top_uptime(const struct top *t);
void top_fmt_bytes(char *buf, size_t len, uint64_t b);
void top_fmt_dur(char *buf, size_t len, double s);

/* out.c */
void top_print_plain(struct top *t, FILE *f);
int top_print_json(struct top *t, FILE *f);
void top_print_prometheus(struct top *t, FILE *f);

/* tui.c: 0 on q; 1 when there is no terminal to draw on. */
int top_tui(struct top *t, double interval);

#endif /* SHX_TOP_H */
