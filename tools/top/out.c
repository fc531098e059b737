// SPDX-License-Identifier: MIT
/* syshax-top's one-shot outputs: plain text, JSON and Prometheus. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "top.h"

static double deferral(const struct top_sample *s)
{
	uint64_t all = s->es.decode_deferred + s->es.decode_kept;

	return all ? (double)s->es.decode_deferred / (double)all : 0;
}

static const char *ctx_role(const struct syshax_ctx_stat *c)
{
	return c->flags & SYSHAX_CTX_ENGINE ? "engine" : "client";
}

void top_print_plain(struct top *t, FILE *f)
{
	const struct top_sample *s = top_cur(t);
	struct top_op_rate r[SYSHAX_STATS_OPS];
	char a[32], b[32], up[32];
	int n, i, nodes = top_nodes_in_use(t);
	double p50 = top_lat_pct(t, 0.5, 0), p99 = top_lat_pct(t, 0.99, 0);

	top_fmt_dur(up, sizeof(up), top_uptime(t));
	if (t->backend == SYSHAX_BACKEND_KERNEL)
		fprintf(f, "backend: module (UAPI %u)", t->ver.uapi_version);
	else
		fprintf(f, "backend: syshaxd (UAPI %u, pid %d)",
			t->ver.uapi_version, t->broker_pid);
	fprintf(f, "  uptime %s%s  nodes %d  kernels %s\ncpu: %s\n", up,
		t->broker_start >= 0 ? "" : " (of syshax-top)", t->nr_nodes,
		t->isa, t->cpu);
	top_fmt_bytes(a, sizeof(a), s->st.pinned_bytes);
	top_fmt_bytes(b, sizeof(b), t->ver.max_pinned);
	fprintf(f, "\npinned %s / cap %s in %llu buffers\n", a, b,
		(unsigned long long)s->st.nr_bufs);
	fprintf(f, "%-6s %10s %8s %10s\n", "node", "pinned", "bufs",
		"hp free");
	for (n = 0; n < nodes; n++) {
		top_fmt_bytes(a, sizeof(a), s->st.node_bytes[n]);
		if (s->hp_free[n] >= 0)
			snprintf(b, sizeof(b), "%ld/%ld", s->hp_free[n],
				 s->hp_total[n]);
		else
			snprintf(b, sizeof(b), "-");
		fprintf(f, "%-6d %10s %8llu %10s\n", n, a,
			(unsigned long long)s->st.node_bufs[n], b);
	}
	fprintf(f, "\ncontexts %u  engines %u\n", s->st.contexts,
		s->st.engines);
	if (s->nr_ctx < 0) {
		fprintf(f, "  (per-context figures: %s)\n",
			syshax_strerror(s->nr_ctx));
	} else {
		fprintf(f, "%7s %7s %-16s %-6s %5s %9s %7s %7s %10s\n", "ctx",
			"pid", "command", "role", "bufs", "bytes", "queued",
			"inflt", "done");
		for (i = 0; i < s->nr_ctx; i++) {
			const struct syshax_ctx_stat *c = &s->ctx[i];

			top_fmt_bytes(a, sizeof(a), c->buf_bytes);
			fprintf(f, "%7u %7d %-16.16s %-6s %5llu %9s %7llu "
				"%7llu %10llu%s\n", c->ctx_id, c->pid, c->comm,
				ctx_role(c), (unsigned long long)c->nr_bufs, a,
				(unsigned long long)c->jobs_queued,
				(unsigned long long)(c->jobs_inflight +
						     c->eng_held),
				(unsigned long long)(c->jobs_completed +
						     c->eng_done),
				c->flags & SYSHAX_CTX_SELF ? " (self)" : "");
		}
	}
	fprintf(f, "\njobs: queued %llu  in flight %llu  submitted %llu  "
		"completed %llu  failed %llu  cancelled %llu\n",
		(unsigned long long)s->st.queue_depth,
		(unsigned long long)s->st.inflight,
		(unsigned long long)s->st.jobs_submitted,
		(unsigned long long)s->st.jobs_completed,
		(unsigned long long)s->st.jobs_failed,
		(unsigned long long)s->st.jobs_cancelled);
	if (p50 >= 0)
		fprintf(f, "latency: p50 < %.0f us  p99 < %.0f us\n", p50, p99);
	else
		fprintf(f, "latency: no completed jobs\n");
	n = top_op_rates(t, r, SYSHAX_STATS_OPS);
	if (!n) {
		fprintf(f, "CPU engine: %s\n", t->es_why ? t->es_why : "-");
		return;
	}
	fprintf(f, "\nCPU engine: %u threads on %u nodes; decode deferred "
		"%.1f%%\n", s->es.nr_threads, s->es.nr_nodes,
		100 * deferral(s));
	fprintf(f, "%-12s %12s %12s %8s %8s\n", "op", "jobs", "tokens",
		"batch", "failed");
	for (i = 0; i < n; i++)
		fprintf(f, "%-12s %12llu %12llu %8.1f %8llu\n", r[i].name,
			(unsigned long long)r[i].jobs,
			(unsigned long long)r[i].tokens, r[i].batch,
			(unsigned long long)r[i].failed);
}

/* ---- JSON ---------------------------------------------------------------- */

static void num(cJSON *o, const char *k, double v)
{
	cJSON_AddNumberToObject(o, k, v);
}

int top_print_json(struct top *t, FILE *f)
{
	const struct top_sample *s = top_cur(t);
	struct top_op_rate r[SYSHAX_STATS_OPS];
	cJSON *root = cJSON_CreateObject(), *o, *a, *e;
	double p50 = top_lat_pct(t, 0.5, 0), p99 = top_lat_pct(t, 0.99, 0);
	char *txt;
	int n, i, nodes = top_nodes_in_use(t);

	if (!root)
		return -1;
	o = cJSON_AddObjectToObject(root, "backend");
	cJSON_AddStringToObject(o, "kind", top_backend_name(t));
	num(o, "uapi_version", t->ver.uapi_version);
	num(o, "features", t->ver.features);
	num(o, "max_pinned", (double)t->ver.max_pinned);
	num(o, "uptime_s", top_uptime(t));
	cJSON_AddBoolToObject(o, "uptime_of_broker", t->broker_start >= 0);
	if (t->broker_pid)
		num(o, "pid", t->broker_pid);
	num(root, "numa_nodes", t->nr_nodes);
	cJSON_AddStringToObject(root, "cpu_kernels", t->isa);
	cJSON_AddStringToObject(root, "cpu", t->cpu);

	o = cJSON_AddObjectToObject(root, "memory");
	num(o, "pinned_bytes", (double)s->st.pinned_bytes);
	num(o, "nr_bufs", (double)s->st.nr_bufs);
	a = cJSON_AddArrayToObject(o, "nodes");
	for (n = 0; n < nodes; n++) {
		e = cJSON_CreateObject();
		num(e, "node", n);
		num(e, "pinned_bytes", (double)s->st.node_bytes[n]);
		num(e, "bufs", (double)s->st.node_bufs[n]);
		if (s->hp_free[n] >= 0) {
			num(e, "hugepages_free", (double)s->hp_free[n]);
			num(e, "hugepages_total", (double)s->hp_total[n]);
		}
		cJSON_AddItemToArray(a, e);
	}

	o = cJSON_AddObjectToObject(root, "jobs");
	num(o, "contexts", s->st.contexts);
	num(o, "engines", s->st.engines);
	num(o, "submitted", (double)s->st.jobs_submitted);
	num(o, "fetched", (double)s->st.jobs_fetched);
	num(o, "completed", (double)s->st.jobs_completed);
	num(o, "failed", (double)s->st.jobs_failed);
	num(o, "cancelled", (double)s->st.jobs_cancelled);
	num(o, "queue_depth", (double)s->st.queue_depth);
	num(o, "inflight", (double)s->st.inflight);
	if (p50 >= 0) {
		num(o, "p50_us", p50);
		num(o, "p99_us", p99);
	}
	a = cJSON_AddArrayToObject(o, "lat_hist");
	for (i = 0; i < SYSHAX_LAT_BUCKETS; i++)
		cJSON_AddItemToArray(a,
			cJSON_CreateNumber((double)s->st.lat_hist[i]));
	if (top_prev(t)) {
		num(o, "submitted_per_s", t->sub_rate);
		num(o, "completed_per_s", t->done_rate);
	}

	if (s->nr_ctx >= 0) {
		a = cJSON_AddArrayToObject(root, "contexts");
		for (i = 0; i < s->nr_ctx; i++) {
			const struct syshax_ctx_stat *c = &s->ctx[i];
			char comm[17];

			memcpy(comm, c->comm, 16);
			comm[16] = 0;
			e = cJSON_CreateObject();
			num(e, "ctx_id", c->ctx_id);
			num(e, "pid", c->pid);
			num(e, "uid", c->uid);
			cJSON_AddStringToObject(e, "comm", comm);
			cJSON_AddStringToObject(e, "role", ctx_role(c));
			cJSON_AddBoolToObject(e, "ring",
					      !!(c->flags & SYSHAX_CTX_RING));
			cJSON_AddBoolToObject(e, "self",
					      !!(c->flags & SYSHAX_CTX_SELF));
			num(e, "nr_bufs", (double)c->nr_bufs);
			num(e, "buf_bytes", (double)c->buf_bytes);
			num(e, "jobs_queued", (double)c->jobs_queued);
			num(e, "jobs_inflight", (double)c->jobs_inflight);
			num(e, "jobs_submitted", (double)c->jobs_submitted);
			num(e, "jobs_completed", (double)c->jobs_completed);
			num(e, "jobs_failed", (double)c->jobs_failed);
			num(e, "eng_held", (double)c->eng_held);
			num(e, "eng_done", (double)c->eng_done);
			cJSON_AddItemToArray(a, e);
		}
		num(root, "contexts_total", s->total_ctx);
	} else {
		cJSON_AddStringToObject(root, "contexts_error",
					syshax_strerror(s->nr_ctx));
	}

	n = top_op_rates(t, r, SYSHAX_STATS_OPS);
	if (n) {
		o = cJSON_AddObjectToObject(root, "cpu_engine");
		num(o, "threads", s->es.nr_threads);
		num(o, "nodes", s->es.nr_nodes);
		num(o, "decode_deferred", (double)s->es.decode_deferred);
		num(o, "decode_kept", (double)s->es.decode_kept);
		num(o, "deferral_rate", deferral(s));
		a = cJSON_AddArrayToObject(o, "ops");
		for (i = 0; i < n; i++) {
			e = cJSON_CreateObject();
			cJSON_AddStringToObject(e, "op", r[i].name);
			num(e, "jobs", (double)r[i].jobs);
			num(e, "failed", (double)r[i].failed);
			num(e, "tokens", (double)r[i].tokens);
			num(e, "batches", (double)r[i].batches);
			num(e, "batch_avg", r[i].batch);
			if (top_prev(t)) {
				num(e, "jobs_per_s", r[i].jobs_s);
				num(e, "tokens_per_s", r[i].tokens_s);
			}
			cJSON_AddItemToArray(a, e);
		}
	} else {
		cJSON_AddStringToObject(root, "cpu_engine_unavailable",
					t->es_why ? t->es_why : "-");
	}
	txt = cJSON_Print(root);
	cJSON_Delete(root);
	if (!txt)
		return -1;
	fprintf(f, "%s\n", txt);
	free(txt);
	return 0;
}

/* ---- Prometheus text format -------------------------------------------- */

static void head(FILE *f, const char *name, const char *type,
		 const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value: \, " and newline escaped. */
static void label(FILE *f, const char *v, size_t max)
{
	size_t i;

	for (i = 0; i < max && v[i]; i++) {
		if (v[i] == '\\' || v[i] == '"')
			fputc('\\', f);
		if (v[i] == '\n')
			fputs("\\n", f);
		else if ((unsigned char)v[i] >= 0x20)
			fputc(v[i], f);
	}
}

#define CTX_SERIES(field, name, type, help)				\
	do {								\
		head(f, name, type, help);				\
		for (i = 0; i < s->nr_ctx; i++) {			\
			fprintf(f, "%s{ctx=\"%u\",pid=\"%d\",comm=\"",	\
				name, s->ctx[i].ctx_id, s->ctx[i].pid);	\
			label(f, s->ctx[i].comm, 16);			\
			fprintf(f, "\"} %llu\n",			\
				(unsigned long long)s->ctx[i].field);	\
		}							\
	} while (0)

void top_print_prometheus(struct top *t, FILE *f)
{
	const struct top_sample *s = top_cur(t);
	struct top_op_rate r[SYSHAX_STATS_OPS];
	int n, i, nodes = top_nodes_in_use(t);
	uint64_t acc = 0;

	head(f, "syshax_info", "gauge", "Backend and CPU kernel variant.");
	fprintf(f, "syshax_info{backend=\"%s\",uapi=\"%u\",cpu_kernels=\"%s\"} 1\n",
		top_backend_name(t), t->ver.uapi_version, t->isa);
	head(f, "syshax_uptime_seconds", "gauge",
	     "Seconds since the broker started (syshaxd) or syshax-top did.");
	fprintf(f, "syshax_uptime_seconds %.3f\n", top_uptime(t));
	head(f, "syshax_numa_nodes", "gauge", "NUMA nodes of the host.");
	fprintf(f, "syshax_numa_nodes %d\n", t->nr_nodes);
	head(f, "syshax_pinned_cap_bytes", "gauge", "Cap on pinned bytes.");
	fprintf(f, "syshax_pinned_cap_bytes %llu\n",
		(unsigned long long)t->ver.max_pinned);
	head(f, "syshax_pinned_bytes", "gauge", "Bytes pinned by buffers, per NUMA node.");
	for (n = 0; n < nodes; n++)
		fprintf(f, "syshax_pinned_bytes{node=\"%d\"} %llu\n", n,
			(unsigned long long)s->st.node_bytes[n]);
	head(f, "syshax_buffers", "gauge", "Live buffer objects.");
	fprintf(f, "syshax_buffers %llu\n", (unsigned long long)s->st.nr_bufs);
	head(f, "syshax_hugepages_free", "gauge", "Free 2 MiB hugepages per NUMA node.");
	for (n = 0; n < nodes; n++)
		if (s->hp_free[n] >= 0)
			fprintf(f, "syshax_hugepages_free{node=\"%d\"} %ld\n",
				n, s->hp_free[n]);
	head(f, "syshax_contexts", "gauge", "Open contexts.");
	fprintf(f, "syshax_contexts %u\n", s->st.contexts);
	head(f, "syshax_engines", "gauge", "Attached engines.");
	fprintf(f, "syshax_engines %u\n", s->st.engines);
	head(f, "syshax_queue_depth", "gauge", "Jobs queued, not yet fetched.");
	fprintf(f, "syshax_queue_depth %llu\n",
		(unsigned long long)s->st.queue_depth);
	head(f, "syshax_jobs_inflight", "gauge", "Jobs fetched, not yet completed.");
	fprintf(f, "syshax_jobs_inflight %llu\n",
		(unsigned long long)s->st.inflight);
	head(f, "syshax_jobs_total", "counter", "Jobs by outcome.");
	fprintf(f, "syshax_jobs_total{state=\"submitted\"} %llu\n"
		"syshax_jobs_total{state=\"fetched\"} %llu\n"
		"syshax_jobs_total{state=\"completed\"} %llu\n"
		"syshax_jobs_total{state=\"failed\"} %llu\n"
		"syshax_jobs_total{state=\"cancelled\"} %llu\n",
		(unsigned long long)s->st.jobs_submitted,
		(unsigned long long)s->st.jobs_fetched,
		(unsigned long long)s->st.jobs_completed,
		(unsigned long long)s->st.jobs_failed,
		(unsigned long long)s->st.jobs_cancelled);
	head(f, "syshax_job_latency_seconds", "histogram",
	     "Submit-to-complete time of jobs.");
	for (i = 0; i < SYSHAX_LAT_BUCKETS; i++) {
		acc += s->st.lat_hist[i];
		if (i + 1 < SYSHAX_LAT_BUCKETS)
			fprintf(f, "syshax_job_latency_seconds_bucket{le=\"%g\"} %llu\n",
				(double)(1ULL << (i + 10)) / 1e9,
				(unsigned long long)acc);
	}
	fprintf(f, "syshax_job_latency_seconds_bucket{le=\"+Inf\"} %llu\n",
		(unsigned long long)acc);
	fprintf(f, "syshax_job_latency_seconds_count %llu\n",
		(unsigned long long)acc);
	if (s->nr_ctx > 0) {
		CTX_SERIES(nr_bufs, "syshax_ctx_buffers", "gauge",
			   "Buffers a context holds.");
		CTX_SERIES(buf_bytes, "syshax_ctx_buffer_bytes", "gauge",
			   "Bytes of the buffers a context holds.");
		CTX_SERIES(jobs_queued, "syshax_ctx_jobs_queued", "gauge",
			   "A context's jobs not yet fetched.");
		CTX_SERIES(jobs_inflight, "syshax_ctx_jobs_inflight", "gauge",
			   "A context's jobs an engine holds.");
		CTX_SERIES(jobs_submitted, "syshax_ctx_jobs_submitted_total",
			   "counter", "Jobs a context submitted.");
		CTX_SERIES(jobs_completed, "syshax_ctx_jobs_completed_total",
			   "counter", "A context's jobs completed with status 0.");
		CTX_SERIES(eng_done, "syshax_ctx_engine_jobs_done_total",
			   "counter", "Jobs an engine context completed.");
	}
	n = top_op_rates(t, r, SYSHAX_STATS_OPS);
	if (!n)
		return;
	head(f, "syshax_engine_op_jobs_total", "counter", "CPU engine jobs per op.");
	for (i = 0; i < n; i++)
		fprintf(f, "syshax_engine_op_jobs_total{op=\"%s\"} %llu\n",
			r[i].name, (unsigned long long)r[i].jobs);
	head(f, "syshax_engine_op_tokens_total", "counter", "CPU engine tokens per op.");
	for (i = 0; i < n; i++)
		fprintf(f, "syshax_engine_op_tokens_total{op=\"%s\"} %llu\n",
			r[i].name, (unsigned long long)r[i].tokens);
	head(f, "syshax_engine_op_batches_total", "counter", "CPU engine batched runs per op.");
	for (i = 0; i < n; i++)
		fprintf(f, "syshax_engine_op_batches_total{op=\"%s\"} %llu\n",
			r[i].name, (unsigned long long)r[i].batches);
	head(f, "syshax_engine_decode_deferred_total", "counter",
	     "DECODE jobs the dispatch rule deferred to the xPU.");
	fprintf(f, "syshax_engine_decode_deferred_total %llu\n",
		(unsigned long long)s->es.decode_deferred);
	head(f, "syshax_engine_decode_kept_total", "counter",
	     "DECODE jobs the dispatch rule kept on the CPU.");
	fprintf(f, "syshax_engine_decode_kept_total %llu\n",
		(unsigned long long)s->es.decode_kept);
}
