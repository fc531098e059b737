/* SPDX-License-Identifier: MIT */
/*
 * The server's counters, gauges and latency histograms, written by the
 * scheduler under its lock and rendered as Prometheus text (GET /metrics).
 */
#ifndef SRV_METRICS_H
#define SRV_METRICS_H

#include <stddef.h>
#include <stdint.h>

#define HIST_BUCKETS	12

/* Cumulative Prometheus buckets over fixed upper bounds in seconds. */
struct hist {
	uint64_t count[HIST_BUCKETS + 1];	/* the last one: +Inf */
	double sum;
};

struct metrics {
	uint64_t requests;		/* accepted into the queue */
	uint64_t finished[4];		/* by enum sreq_finish - 1 */
	uint64_t rejected;		/* 503: queue full or no backend */
	uint64_t prompt_tokens, gen_tokens;
	uint64_t prompt_cached;		/* prompt tokens the prefix cache had */
	uint64_t steps_cpu, steps_xpu;	/* DECODE jobs on each side */
	uint64_t prefill_cpu, prefill_xpu; /* PREFILL chunks on each side */
	uint64_t backend_lost;		/* times the backend went away */
	struct hist ttft, itl;		/* time to first token, inter-token */
	/* Seconds of the steps: the engine's (submit to the last completion),
	 * the scheduler's own around it (planning, sampling, text, waking
	 * the clients), and the HTTP threads' CPU time (set by http.c). */
	double t_engine, t_sched, t_http;
	uint64_t steps;			/* the scheduler's steps run */
	/* Gauges, set by the scheduler every step. */
	uint32_t waiting, running, kv_used, kv_total, prefix_entries;
	uint32_t backend_up;
};

void hist_add(struct hist *h, double s);
/* The text into buf (snprintf semantics: the bytes it needs). */
size_t metrics_render(const struct metrics *m, char *buf, size_t len);

#endif /* SRV_METRICS_H */
