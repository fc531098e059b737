// SPDX-License-Identifier: MIT
/*
 * The HTTP side (http.h). Each HTTP request gets a struct conn: its body,
 * its parsed form and, once submitted, its struct sreq. A whole reply
 * waits with the connection suspended until the request ends; a streamed
 * one is an MHD callback response whose reader turns new tokens into
 * server-sent events and suspends the connection when there are none yet.
 * c->suspended is read and written under the scheduler's lock, so a wake
 * never resumes a connection that is not suspended, nor misses one.
 */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "sched.h"
#include "tokenizer.h"

#define JSON_TYPE	"application/json"
#define RETRY_AFTER	"1"	/* s, with 503 */
#define CPU_SLOTS	64	/* HTTP threads whose CPU time is counted */

struct http {
	struct http_conf c;
	struct MHD_Daemon *d;
	struct sched *s;
	atomic_ullong ids;
	unsigned int port;
	/* Each HTTP thread's CPU time at its latest callback (ns). */
	atomic_ullong cpu_ns[CPU_SLOTS];
	atomic_uint cpu_next;
};

/* This thread's slot in cpu_ns, -1 until its first callback. */
static _Thread_local int t_cpu = -1;

struct conn {
	struct http *h;
	struct MHD_Connection *mc;
	char *body;
	size_t len;
	double t_start;
	bool replied;		/* a response is queued */
	bool too_big;		/* the body is over max_body */
	struct api_req q;
	struct sreq *r;		/* submitted */
	bool suspended;		/* under the scheduler's lock */
	char id[40];
	struct api_meta meta;
	/* Streaming: events built but not sent yet, the ids sent. */
	char *pend;
	size_t pend_len, pend_off, pend_cap;
	uint32_t n_sent;
	size_t lp_off;		/* completions' text_offset of the next */
	size_t text_sent;
	bool eos;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * The calling HTTP thread's CPU time so far into its slot: what
 * libmicrohttpd did on it (polling, reading, writing the events) and our
 * callbacks (parsing, JSON), up to now. Called at the end of every
 * callback, so the sum over the slots misses only what a thread did after
 * its latest one.
 */
static void cpu_note(struct http *h)
{
	struct timespec ts;

	if (t_cpu < 0)
		t_cpu = (int)atomic_fetch_add(&h->cpu_next, 1);
	if (t_cpu >= CPU_SLOTS ||
	    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return;
	atomic_store(&h->cpu_ns[t_cpu], (unsigned long long)ts.tv_sec *
		     1000000000ULL + (unsigned long long)ts.tv_nsec);
}

static double cpu_s(struct http *h)
{
	unsigned long long ns = 0;

	for (unsigned int i = 0; i < CPU_SLOTS; i++)
		ns += atomic_load(&h->cpu_ns[i]);
	return (double)ns * 1e-9;
}

/* The tokens of r from i on, n of them, with their logprobs if asked. */
static struct api_toks toks_of(const struct sreq *r, uint32_t i, uint32_t n,
			       size_t *off)
{
	return (struct api_toks){
		.ids = r->out + i, .n = n, .off = off,
		.lp = r->lp ? r->lp + (size_t)i * (1 + r->n_top) : NULL,
	};
}

/* Queues body (malloc'ed; taken, NULL: out of memory) as the reply. */
static enum MHD_Result reply(struct conn *c, unsigned int status,
			     const char *type, char *body, bool retry)
{
	static const char oom[] = "{\"error\": {\"message\": \"out of "
		"memory\", \"type\": \"server_error\", \"param\": null, "
		"\"code\": null}}";
	struct MHD_Response *resp;
	enum MHD_Result ret;

	if (!body) {
		status = MHD_HTTP_INTERNAL_SERVER_ERROR;
		type = JSON_TYPE;
		resp = MHD_create_response_from_buffer(sizeof(oom) - 1,
			(void *)oom, MHD_RESPMEM_PERSISTENT);
	} else {
		resp = MHD_create_response_from_buffer(strlen(body), body,
			MHD_RESPMEM_MUST_FREE);
	}
	if (!resp) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (retry)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER,
					RETRY_AFTER);
	ret = MHD_queue_response(c->mc, status, resp);
	MHD_destroy_response(resp);
	c->replied = true;
	return ret;
}

static enum MHD_Result reply_err(struct conn *c, const struct api_err *e)
{
	return reply(c, (unsigned int)e->status, JSON_TYPE, api_error_json(e),
		     e->status == MHD_HTTP_SERVICE_UNAVAILABLE);
}

static enum MHD_Result fail(struct conn *c, int status, const char *type,
			    const char *fmt, const char *arg)
{
	struct api_err e;

	api_err_set(&e, status, type, NULL, fmt, arg);
	return reply_err(c, &e);
}

static const char *finish_name(enum sreq_finish f)
{
	return f == FIN_STOP ? "stop" : "length";
}

/* ---- streaming ---------------------------------------------------------- */

static bool pend_add(struct conn *c, const char *a, const char *b)
{
	size_t la = strlen(a), lb = b ? strlen(b) : 0, need;

	need = c->pend_len + la + lb + 1;
	if (need > c->pend_cap) {
		size_t cap = need * 2;
		char *p = realloc(c->pend, cap);

		if (!p)
			return false;
		c->pend = p;
		c->pend_cap = cap;
	}
	memcpy(c->pend + c->pend_len, a, la);
	if (lb)
		memcpy(c->pend + c->pend_len + la, b, lb);
	c->pend_len += la + lb;
	return true;
}

/* One event "data: JSON\n\n" (json malloc'ed, taken). */
static bool event(struct conn *c, char *json)
{
	bool ok = json && pend_add(c, "data: ", json) &&
		  pend_add(c, "\n\n", NULL);

	free(json);
	return ok;
}

/* The events of the tokens and text not sent yet and of the end (under
 * the lock). */
static bool fill(struct conn *c)
{
	struct sreq *r = c->r;
	const char *text = r->text ? r->text + c->text_sent : "";
	bool ok = true;

	if (c->n_sent < r->n_out || *text) {
		struct api_toks t = toks_of(r, c->n_sent, r->n_out - c->n_sent,
					    &c->lp_off);

		ok = event(c, api_chunk_json(&c->q, &c->meta, &t, text,
					     !c->n_sent && !c->text_sent, NULL,
					     NULL));
		c->n_sent = r->n_out;
		c->text_sent = r->text_len;
	}
	if (!ok || r->finish == FIN_NONE)
		return ok;
	if (r->finish == FIN_ERROR) {
		struct api_err e;

		api_err_set(&e, 500, "server_error", NULL, "%s", r->err);
		ok = event(c, api_error_json(&e));
	} else {
		ok = event(c, api_chunk_json(&c->q, &c->meta, NULL, "",
					     false, finish_name(r->finish),
					     NULL));
		if (ok && c->q.include_usage)
			ok = event(c, api_chunk_json(&c->q, &c->meta, NULL, "",
						     false, NULL, &r->n_out));
	}
	c->eos = true;
	return ok && pend_add(c, "data: [DONE]\n\n", NULL);
}

static ssize_t stream_read1(struct conn *c, char *buf, size_t max)
{
	struct sched *s = c->h->s;
	size_t n;
	bool ok;

	if (c->pend_off == c->pend_len) {
		c->pend_off = c->pend_len = 0;
		if (c->eos)
			return MHD_CONTENT_READER_END_OF_STREAM;
		sched_lock(s);
		ok = fill(c);
		if (ok && !c->pend_len) {
			c->suspended = true;
			MHD_suspend_connection(c->mc);
		}
		sched_unlock(s);
		if (!ok)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		if (!c->pend_len)
			return 0;
	}
	n = c->pend_len - c->pend_off < max ? c->pend_len - c->pend_off : max;
	memcpy(buf, c->pend + c->pend_off, n);
	c->pend_off += n;
	return (ssize_t)n;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct conn *c = cls;
	ssize_t n = stream_read1(c, buf, max);

	(void)pos;
	cpu_note(c->h);
	return n;
}

static enum MHD_Result start_stream(struct conn *c)
{
	struct MHD_Response *resp = MHD_create_response_from_callback(
		MHD_SIZE_UNKNOWN, 4096, stream_read, c, NULL);
	enum MHD_Result ret;

	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				"text/event-stream");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
				"no-cache");
	ret = MHD_queue_response(c->mc, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	c->replied = true;
	return ret;
}

void http_wake(void *owner)
{
	struct conn *c = owner;

	if (!c->suspended || (!c->q.stream && c->r->finish == FIN_NONE))
		return;
	c->suspended = false;
	MHD_resume_connection(c->mc);
}

/* ---- whole replies ------------------------------------------------------ */

/* A request that ended (the lock not held: it no longer changes). */
static enum MHD_Result reply_done(struct conn *c)
{
	struct sreq *r = c->r;
	size_t off = 0;
	struct api_toks t = toks_of(r, 0, r->n_out, &off);

	if (r->finish == FIN_ERROR)
		return fail(c, 500, "server_error", "%s", r->err);
	return reply(c, MHD_HTTP_OK, JSON_TYPE,
		     api_completion_json(&c->q, &c->meta, &t,
					 r->text ? r->text : "",
					 finish_name(r->finish)), false);
}

static void api_ctx_of(const struct http *h, struct api_ctx *a)
{
	const struct sched_conf *sc = sched_conf(h->s);

	*a = (struct api_ctx){
		.n_vocab = sched_model(h->s)->n_vocab, .max_ctx = sc->max_ctx,
		.max_kv = sc->kv_blocks * sc->block_size, .tok = h->c.tok,
		.tmpl = h->c.tmpl,
	};
}

/* The sampler, stop strings and text decoder q asks for, into r. */
static int text_state(const struct http *h, const struct api_req *q,
		      struct sreq *r)
{
	int ret = 0;

	r->ignore_eos = q->ignore_eos;
	r->no_cache = q->no_cache;
	if (!q->greedy) {
		ret = shx_sampler_new(&q->sp, (int32_t)sched_model(h->s)->n_vocab,
				      &r->sampler);
		/* The penalties look back at the prompt too (llama-server). */
		for (uint32_t i = 0; !ret && i < q->n_ids; i++)
			shx_sampler_accept(r->sampler, q->ids[i]);
	}
	if (!ret && q->logprobs)
		ret = sreq_logprobs(r, q->n_top);
	if (!ret && q->n_stops)
		ret = shx_stop_new((const char *const *)q->stops, q->n_stops,
				   &r->stop);
	if (h->c.tok)
		shx_detok_init(&r->detok, h->c.tok, SHX_DETOK_CONTINUE);
	return ret;
}

static enum MHD_Result generate(struct conn *c, bool chat)
{
	struct http *h = c->h;
	const struct sched_conf *sc = sched_conf(h->s);
	struct api_ctx lim;
	struct api_err e;
	struct sreq *r;
	int ret;

	api_ctx_of(h, &lim);
	if (api_parse(c->body ? c->body : "", c->len, chat, &lim, &c->q, &e))
		return reply_err(c, &e);
	r = sreq_new(c->q.n_ids, c->q.max_tokens);
	if (!r)
		return reply(c, 500, JSON_TYPE, NULL, false);
	memcpy(r->prompt, c->q.ids, (size_t)c->q.n_ids * 4);
	r->owner = c;
	if (text_state(h, &c->q, r)) {
		sreq_put(h->s, r);
		return reply(c, 500, JSON_TYPE, NULL, false);
	}
	ret = sched_submit(h->s, r);
	if (ret) {
		sreq_put(h->s, r);
		if (ret == -EAGAIN)
			api_err_set(&e, 503, "server_busy", NULL, "too many "
				    "requests waiting (max_queue %u): try "
				    "again", sc->max_queue);
		else
			api_err_set(&e, 503, "server_busy", NULL, "the backend "
				    "(syshaxd) is not reachable now: try "
				    "again");
		return reply_err(c, &e);
	}
	c->r = r;
	snprintf(c->id, sizeof(c->id), "%s-%llu", chat ? "chatcmpl" : "cmpl",
		 (unsigned long long)++h->ids);
	c->meta = (struct api_meta){ c->id, h->c.model_name, (long)time(NULL),
				     h->c.tok };
	if (c->q.stream)
		return start_stream(c);
	sched_lock(h->s);
	if (r->finish == FIN_NONE) {
		c->suspended = true;
		MHD_suspend_connection(c->mc);
	}
	sched_unlock(h->s);
	return c->suspended ? MHD_YES : reply_done(c);
}

/* ---- the other routes --------------------------------------------------- */

static enum MHD_Result metrics(struct conn *c)
{
	struct sched *s = c->h->s;
	struct metrics m;
	size_t n;
	char *buf;

	sched_lock(s);
	m = *sched_metrics(s);
	sched_unlock(s);
	m.t_http = cpu_s(c->h);
	n = metrics_render(&m, NULL, 0);
	buf = malloc(n + 1);
	if (buf)
		metrics_render(&m, buf, n + 1);
	return reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4", buf, false);
}

static enum MHD_Result tokenize(struct conn *c, bool detok)
{
	struct api_err e = { 0 };
	struct api_ctx a;
	char *json;

	api_ctx_of(c->h, &a);
	json = api_tokenize(c->body ? c->body : "", c->len, &a, detok, &e);
	if (!json && e.status)
		return reply_err(c, &e);
	return reply(c, MHD_HTTP_OK, JSON_TYPE, json, false);
}

static enum MHD_Result health(struct conn *c)
{
	bool up;

	sched_lock(c->h->s);
	up = sched_up(c->h->s);
	sched_unlock(c->h->s);
	return reply(c, up ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE,
		     JSON_TYPE, strdup(up ? "{\"status\":\"ok\"}" :
				       "{\"status\":\"no backend\"}"), !up);
}

static enum MHD_Result route(struct conn *c, const char *url,
			     const char *method)
{
	static const struct {
		const char *url, *method;
		int what;
	} routes[] = {
		{ "/health", "GET", 0 }, { "/v1/models", "GET", 1 },
		{ "/metrics", "GET", 2 }, { "/v1/completions", "POST", 3 },
		{ "/v1/chat/completions", "POST", 4 },
		{ "/tokenize", "POST", 5 }, { "/detokenize", "POST", 6 },
	};
	const struct syshax_model_info *mi = sched_model(c->h->s);

	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		if (strcmp(url, routes[i].url))
			continue;
		if (strcmp(method, routes[i].method))
			return fail(c, 405, "invalid_request_error",
				    "use %s here", routes[i].method);
		switch (routes[i].what) {
		case 0:
			return health(c);
		case 1:
			return reply(c, MHD_HTTP_OK, JSON_TYPE, api_models_json(
				c->h->c.model_name, (long)time(NULL),
				mi->n_vocab, sched_conf(c->h->s)->max_ctx), false);
		case 2:
			return metrics(c);
		case 5:
		case 6:
			return tokenize(c, routes[i].what == 6);
		default:
			return generate(c, routes[i].what == 4);
		}
	}
	return fail(c, 404, "invalid_request_error", "no route %s", url);
}

/* ---- MHD's callbacks ---------------------------------------------------- */

static enum MHD_Result body_add(struct conn *c, const char *data, size_t n)
{
	char *p;

	if (now_s() - c->t_start > c->h->c.conn_timeout)
		return MHD_NO;	/* a body this slow: drop the connection */
	/* Over the cap: the rest is read and dropped, 413 at its end. */
	c->too_big |= c->len + n > c->h->c.max_body;
	if (c->too_big)
		return MHD_YES;
	p = realloc(c->body, c->len + n + 1);
	if (!p)
		return MHD_NO;
	memcpy(p + c->len, data, n);
	c->body = p;
	c->len += n;
	c->body[c->len] = '\0';
	return MHD_YES;
}

static enum MHD_Result too_big(struct conn *c)
{
	char cap[32];

	snprintf(cap, sizeof(cap), "%u", c->h->c.max_body);
	return fail(c, 413, "invalid_request_error",
		    "the body is over max_body (%s bytes)", cap);
}

/* A Content-Length over the cap is refused before the body is read. */
static bool length_over(struct MHD_Connection *mc, unsigned int cap)
{
	const char *v = MHD_lookup_connection_value(mc, MHD_HEADER_KIND,
					MHD_HTTP_HEADER_CONTENT_LENGTH);

	return v && strtoull(v, NULL, 10) > cap;
}

static enum MHD_Result handle1(struct http *h, struct MHD_Connection *mc,
			       const char *url, const char *method,
			       const char *upload, size_t *upload_size,
			       void **ptr)
{
	struct conn *c = *ptr;

	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c)
			return MHD_NO;
		c->h = h;
		c->mc = mc;
		c->t_start = now_s();
		*ptr = c;
		if (length_over(mc, c->h->c.max_body))
			return too_big(c);
		return MHD_YES;
	}
	if (*upload_size) {
		enum MHD_Result ret = body_add(c, upload, *upload_size);

		*upload_size = 0;
		return ret;
	}
	if (c->replied)
		return MHD_YES;
	if (c->too_big)
		return too_big(c);
	if (c->r)
		return reply_done(c);	/* resumed: it ended */
	return route(c, url, method);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *mc,
			      const char *url, const char *method,
			      const char *version, const char *upload,
			      size_t *upload_size, void **ptr)
{
	enum MHD_Result ret = handle1(cls, mc, url, method, upload,
				      upload_size, ptr);

	(void)version;
	cpu_note(cls);
	return ret;
}

static void completed(void *cls, struct MHD_Connection *mc, void **ptr,
		      enum MHD_RequestTerminationCode toe)
{
	struct http *h = cls;
	struct conn *c = *ptr;

	(void)mc;
	(void)toe;
	if (!c)
		return;
	if (c->r) {
		sched_cancel(h->s, c->r);
		sreq_put(h->s, c->r);
	}
	api_req_free(&c->q);
	free(c->body);
	free(c->pend);
	free(c);
	*ptr = NULL;
	cpu_note(h);
}

int http_start(struct http **out, const struct http_conf *c, struct sched *s)
{
	struct http *h = calloc(1, sizeof(*h));
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)c->port) };
	const union MHD_DaemonInfo *di;

	if (!h)
		return -ENOMEM;
	if (inet_pton(AF_INET, c->host, &sa.sin_addr) != 1) {
		fprintf(stderr, "syshax-serve: host '%s' is not an IPv4 "
			"address\n", c->host);
		free(h);
		return -EINVAL;
	}
	h->c = *c;
	h->s = s;
	h->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
				MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG,
				0, NULL, NULL, handle, h,
				MHD_OPTION_SOCK_ADDR, &sa,
				MHD_OPTION_NOTIFY_COMPLETED, completed, h,
				MHD_OPTION_CONNECTION_TIMEOUT,
				(unsigned int)c->conn_timeout,
				MHD_OPTION_CONNECTION_LIMIT,
				(unsigned int)c->max_connections,
				MHD_OPTION_THREAD_POOL_SIZE,
				(unsigned int)c->threads,
				MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024U,
				MHD_OPTION_END);
	if (!h->d) {
		fprintf(stderr, "syshax-serve: cannot listen on %s:%u\n",
			c->host, c->port);
		free(h);
		return -EADDRINUSE;
	}
	di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
	h->port = di ? di->port : c->port;
	*out = h;
	return 0;
}

unsigned int http_port(const struct http *h)
{
	return h->port;
}

void http_stop(struct http *h)
{
	MHD_stop_daemon(h->d);
	free(h);
}
