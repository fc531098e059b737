// SPDX-License-Identifier: MIT
/* Prometheus text of the server's metrics (metrics.h). */
#include "metrics.h"

#include <stdarg.h>
#include <stdio.h>

/* Seconds: TTFT spans a prefill (ms to s), inter-token a decode step. */
static const double bounds[HIST_BUCKETS] = {
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10,
};

void hist_add(struct hist *h, double s)
{
	unsigned int i = 0;

	while (i < HIST_BUCKETS && s > bounds[i])
		i++;
	h->count[i]++;
	h->sum += s;
}

struct out {
	char *buf;
	size_t len, n;
};

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(o->n < o->len ? o->buf + o->n : NULL,
		      o->n < o->len ? o->len - o->n : 0, fmt, ap);
	va_end(ap);
	if (k > 0)
		o->n += (size_t)k;
}

static void metric(struct out *o, const char *name, const char *type,
		   const char *help, uint64_t v)
{
	put(o, "# HELP syshax_serve_%s %s\n# TYPE syshax_serve_%s %s\n"
	    "syshax_serve_%s %llu\n", name, help, name, type, name,
	    (unsigned long long)v);
}

static void histogram(struct out *o, const char *name, const char *help,
		      const struct hist *h)
{
	uint64_t cum = 0;

	put(o, "# HELP syshax_serve_%s %s\n# TYPE syshax_serve_%s histogram\n",
	    name, help, name);
	for (unsigned int i = 0; i <= HIST_BUCKETS; i++) {
		cum += h->count[i];
		if (i < HIST_BUCKETS)
			put(o, "syshax_serve_%s_bucket{le=\"%g\"} %llu\n", name,
			    bounds[i], (unsigned long long)cum);
		else
			put(o, "syshax_serve_%s_bucket{le=\"+Inf\"} %llu\n",
			    name, (unsigned long long)cum);
	}
	put(o, "syshax_serve_%s_sum %.6f\nsyshax_serve_%s_count %llu\n", name,
	    h->sum, name, (unsigned long long)cum);
}

size_t metrics_render(const struct metrics *m, char *buf, size_t len)
{
	static const char *const why[] = { "length", "stop", "error",
					   "cancelled" };
	struct out o = { buf, len, 0 };

	if (len)
		buf[0] = '\0';
	metric(&o, "requests_total", "counter",
	       "Requests accepted into the queue.", m->requests);
	put(&o, "# HELP syshax_serve_requests_finished_total Requests ended, "
	    "by why.\n# TYPE syshax_serve_requests_finished_total counter\n");
	for (unsigned int i = 0; i < 4; i++)
		put(&o, "syshax_serve_requests_finished_total{reason=\"%s\"} "
		    "%llu\n", why[i], (unsigned long long)m->finished[i]);
	metric(&o, "requests_rejected_total", "counter",
	       "Requests refused with 503 (queue full, no backend).",
	       m->rejected);
	metric(&o, "prompt_tokens_total", "counter", "Prompt tokens prefilled.",
	       m->prompt_tokens);
	metric(&o, "prompt_tokens_cached_total", "counter",
	       "Prompt tokens whose KV the prefix cache had (not prefilled).",
	       m->prompt_cached);
	metric(&o, "generation_tokens_total", "counter", "Tokens generated.",
	       m->gen_tokens);
	histogram(&o, "time_to_first_token_seconds",
		  "From a request's arrival to its first token.", &m->ttft);
	histogram(&o, "inter_token_seconds",
		  "Between a request's successive tokens.", &m->itl);
	metric(&o, "queue_depth", "gauge", "Requests waiting for a slot.",
	       m->waiting);
	metric(&o, "running_requests", "gauge",
	       "Requests holding a slot and KV blocks.", m->running);
	metric(&o, "kv_blocks_used", "gauge",
	       "KV cache blocks held (by requests and the prefix cache).",
	       m->kv_used);
	metric(&o, "prefix_cache_entries", "gauge",
	       "Prompts and ended requests whose KV blocks the prefix "
	       "cache keeps.",
	       m->prefix_entries);
	metric(&o, "kv_blocks_total", "gauge", "KV cache blocks.", m->kv_total);
	put(&o, "# HELP syshax_serve_decode_steps_total DECODE jobs, by the "
	    "side that ran them.\n# TYPE syshax_serve_decode_steps_total "
	    "counter\nsyshax_serve_decode_steps_total{side=\"cpu\"} %llu\n"
	    "syshax_serve_decode_steps_total{side=\"xpu\"} %llu\n",
	    (unsigned long long)m->steps_cpu, (unsigned long long)m->steps_xpu);
	put(&o, "# HELP syshax_serve_prefill_chunks_total PREFILL jobs, by the "
	    "side that ran them.\n# TYPE syshax_serve_prefill_chunks_total "
	    "counter\nsyshax_serve_prefill_chunks_total{side=\"cpu\"} %llu\n"
	    "syshax_serve_prefill_chunks_total{side=\"xpu\"} %llu\n",
	    (unsigned long long)m->prefill_cpu,
	    (unsigned long long)m->prefill_xpu);
	metric(&o, "steps_total", "counter", "The scheduler's steps (each "
	       "its DECODE and PREFILL jobs together).", m->steps);
	put(&o, "# HELP syshax_serve_step_seconds_total The steps' time: "
	    "engine (submit to the last completion), sample (the scheduler "
	    "around it: planning, sampling, text, waking clients), http (CPU "
	    "time of the HTTP threads).\n# TYPE syshax_serve_step_seconds_total "
	    "counter\nsyshax_serve_step_seconds_total{part=\"engine\"} %.6f\n"
	    "syshax_serve_step_seconds_total{part=\"sample\"} %.6f\n"
	    "syshax_serve_step_seconds_total{part=\"http\"} %.6f\n",
	    m->t_engine, m->t_sched, m->t_http);
	metric(&o, "backend_up", "gauge", "1 while syshaxd is reachable.",
	       m->backend_up);
	metric(&o, "backend_lost_total", "counter",
	       "Times the backend went away.", m->backend_lost);
	return o.n;
}
