// SPDX-License-Identifier: MIT
/*
 * syshax-bench serve: N concurrent streaming clients against syshax-serve,
 * and llama.cpp driven the way its server batches, on the same GGUF file,
 * threads and prompts, in one run.
 *
 * Ours: a syshax-serve this command starts (on a free port of 127.0.0.1,
 * with a private syshaxd) or --url's; N requests to /v1/completions at once,
 * each its own prompt of token ids, greedy, "stream": true, through one
 * libcurl multi handle; an SSE chunk is timed as it arrives, and the
 * tokens are the usage chunk's count (a chunk may hold several).
 * llama.cpp: libllama in this process (tools/lib/llama_peer.h), N sequences
 * of one context; every step is one llama_decode of every generating
 * sequence's next token plus as many prompt tokens of the others as the
 * batch holds (llama-server's update_slots: n_batch 512, prompts chunked),
 * the next token an argmax over the logits row.
 * Both: output tokens/s over the wall time from the first request to the
 * last token, time to first token and inter-token latency p50/p99.
 * Ours also: the server's share of its steps, from /metrics before and
 * after (syshax_serve_step_seconds_total): (sample + http) / (engine +
 * sample), the scheduler's own time and the HTTP threads' CPU time over
 * the step loop's wall time.
 */
#include <curl/curl.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "beside.h"
#include "bench.h"
#include "llama_peer.h"
#include "privd.h"
#include "tokenizer.h"

#define MAX_LIST	8	/* entries of --clients */
#define MAX_CLIENTS	256
#define PEER_BATCH	512	/* llama-server's default n_ubatch */
#define START_NS	(120ULL * 1000000000ULL)	/* the server's model load */

struct sv_conf {
	const char *model, *url, *llama;
	char serve[4096], syshaxd[4096];
	unsigned int clients[MAX_LIST], nclients;
	unsigned int prompt, max_tokens, threads;
	int32_t n_vocab, eos;
};

/* One request's times, seconds from the run's start. */
struct sv_req {
	double first, last;
	double *gaps;		/* max_tokens inter-token gaps */
	unsigned int ntok, ngap;
	/* completion_tokens of the server's usage chunk (0: none): a slow
	 * reader gets several tokens in one chunk */
	unsigned int usage;
	int failed;
	char line[8192];	/* an SSE line being assembled */
	size_t len;
	uint64_t t0;
};

struct sv_result {
	double tps, ttft50, ttft99, itl50, itl99;
	unsigned int tokens, failed;
};

/* syshax_serve_step_seconds_total's parts, as /metrics names them. */
enum { PART_ENGINE, PART_SAMPLE, PART_HTTP, NPARTS };
static const char *const g_parts[NPARTS] = { "engine", "sample", "http" };

/* Their growth over the latest run of ours; g_over_ok: it was read. */
static double g_over[NPARTS];
static bool g_over_ok;

/* The prompt of client c: ids past the specials, its own for every c. */
static int32_t prompt_id(const struct sv_conf *c, unsigned int cl,
			 unsigned int i)
{
	return (int32_t)(3 + (i * 7919u + cl * 104729u + 17) %
			     (unsigned int)(c->n_vocab - 3));
}

static double since(uint64_t t0)
{
	return (double)(bench_now_ns() - t0) * 1e-9;
}

/* A token arrived (or was sampled) for r at t. */
static void req_token(struct sv_req *r, double t, unsigned int max)
{
	if (!r->ntok)
		r->first = t;
	else if (r->ngap < max)
		r->gaps[r->ngap++] = t - r->last;
	r->last = t;
	r->ntok++;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(double *v, size_t n, double p)
{
	if (!n)
		return NAN;
	qsort(v, n, sizeof(*v), cmp_double);
	return v[(size_t)(p * (double)(n - 1) + 0.5)];
}

/* tok/s (to the last token), TTFT and inter-token percentiles of n
 * requests. */
static void summarize(struct sv_req *rq, unsigned int n, unsigned int max,
		      struct sv_result *res)
{
	double wall = 0;

	double *ttft = calloc(n, sizeof(*ttft));
	double *itl = calloc((size_t)n * max, sizeof(*itl));
	size_t ni = 0, nt = 0;

	memset(res, 0, sizeof(*res));
	for (unsigned int i = 0; ttft && itl && i < n; i++) {
		res->tokens += rq[i].usage ? rq[i].usage : rq[i].ntok;
		wall = rq[i].last > wall ? rq[i].last : wall;
		res->failed += rq[i].failed || !rq[i].ntok;
		if (rq[i].ntok)
			ttft[nt++] = rq[i].first;
		memcpy(itl + ni, rq[i].gaps, rq[i].ngap * sizeof(*itl));
		ni += rq[i].ngap;
	}
	res->tps = wall > 0 ? res->tokens / wall : NAN;
	res->ttft50 = pct(ttft, nt, 0.5);
	res->ttft99 = pct(ttft, nt, 0.99);
	res->itl50 = pct(itl, ni, 0.5);
	res->itl99 = pct(itl, ni, 0.99);
	free(ttft);
	free(itl);
}

/* ---- ours: streaming clients through libcurl ---- */

/* One SSE line: "data: {...}" with a choice is a token; errors fail. */
static void sse_line(struct sv_req *r, const char *l, unsigned int max)
{
	cJSON *j, *ch, *u;

	if (strncmp(l, "data: ", 6) || !strcmp(l + 6, "[DONE]"))
		return;
	j = cJSON_Parse(l + 6);
	if (!j || cJSON_GetObjectItem(j, "error")) {
		r->failed = 1;
		cJSON_Delete(j);
		return;
	}
	u = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "usage"),
				"completion_tokens");
	if (cJSON_IsNumber(u) && u->valuedouble > 0)
		r->usage = (unsigned int)u->valuedouble;
	/* a choice is a token unless it is the closing one with no text */
	ch = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "choices"), 0);
	if (ch && (!cJSON_IsString(cJSON_GetObjectItem(ch, "finish_reason")) ||
		   (cJSON_IsString(cJSON_GetObjectItem(ch, "text")) &&
		    *cJSON_GetObjectItem(ch, "text")->valuestring)))
		req_token(r, since(r->t0), max);
	cJSON_Delete(j);
}

struct sv_sink {
	struct sv_req *r;
	unsigned int max;
};

static size_t on_data(char *p, size_t sz, size_t nm, void *arg)
{
	struct sv_sink *s = arg;
	struct sv_req *r = s->r;
	size_t n = sz * nm;

	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\n') {
			r->line[r->len] = 0;
			if (r->len && r->line[r->len - 1] == '\r')
				r->line[r->len - 1] = 0;
			sse_line(r, r->line, s->max);
			r->len = 0;
		} else if (r->len + 1 < sizeof(r->line)) {
			r->line[r->len++] = p[i];
		}
	}
	return n;
}

static char *request_body(const struct sv_conf *c, unsigned int cl)
{
	cJSON *j = cJSON_CreateObject(), *p = cJSON_AddArrayToObject(j, "prompt");
	char *s;

	cJSON_AddStringToObject(j, "model", "bench");
	for (unsigned int i = 0; i < c->prompt; i++)
		cJSON_AddItemToArray(p, cJSON_CreateNumber(prompt_id(c, cl, i)));
	cJSON_AddNumberToObject(j, "max_tokens", c->max_tokens);
	cJSON_AddNumberToObject(j, "temperature", 0);
	cJSON_AddBoolToObject(j, "stream", 1);
	cJSON_AddBoolToObject(cJSON_AddObjectToObject(j, "stream_options"),
			      "include_usage", 1);
	s = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	return s;
}

static int ours_run(const struct sv_conf *c, const char *url, unsigned int n,
		    struct sv_req *rq)
{
	CURLM *m = curl_multi_init();
	CURL *e[MAX_CLIENTS] = { 0 };
	char *body[MAX_CLIENTS] = { 0 }, ep[512];
	struct sv_sink sink[MAX_CLIENTS];
	struct curl_slist *h = curl_slist_append(NULL,
					"Content-Type: application/json");
	uint64_t t0 = bench_now_ns();
	int running = 1, ret = 0;

	snprintf(ep, sizeof(ep), "%s/v1/completions", url);
	for (unsigned int i = 0; m && h && i < n; i++) {
		rq[i].t0 = t0;
		sink[i] = (struct sv_sink){ &rq[i], c->max_tokens };
		body[i] = request_body(c, i);
		e[i] = curl_easy_init();
		if (!e[i] || !body[i]) {
			ret = -ENOMEM;
			break;
		}
		curl_easy_setopt(e[i], CURLOPT_URL, ep);
		curl_easy_setopt(e[i], CURLOPT_HTTPHEADER, h);
		curl_easy_setopt(e[i], CURLOPT_POSTFIELDS, body[i]);
		curl_easy_setopt(e[i], CURLOPT_WRITEFUNCTION, on_data);
		curl_easy_setopt(e[i], CURLOPT_WRITEDATA, &sink[i]);
		curl_easy_setopt(e[i], CURLOPT_TIMEOUT, 600L);
		curl_easy_setopt(e[i], CURLOPT_PRIVATE, &rq[i]);
		curl_multi_add_handle(m, e[i]);
	}
	if (!m || !h)
		ret = -ENOMEM;
	while (!ret && running) {
		CURLMsg *msg;
		int left;

		if (curl_multi_perform(m, &running) != CURLM_OK ||
		    (running &&
		     curl_multi_poll(m, NULL, 0, 1000, NULL) != CURLM_OK))
			ret = -EIO;
		while ((msg = curl_multi_info_read(m, &left))) {
			long code = 0;
			struct sv_req *r;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE,
					  (char **)&r);
			curl_easy_getinfo(msg->easy_handle,
					  CURLINFO_RESPONSE_CODE, &code);
			if (msg->data.result != CURLE_OK || code != 200)
				r->failed = 1;
		}
	}
	for (unsigned int i = 0; i < n; i++) {
		if (e[i]) {
			curl_multi_remove_handle(m, e[i]);
			curl_easy_cleanup(e[i]);
		}
		cJSON_free(body[i]);
	}
	curl_slist_free_all(h);
	curl_multi_cleanup(m);
	return ret;
}

static size_t discard(char *p, size_t sz, size_t nm, void *arg)
{
	(void)p;
	(void)arg;
	return sz * nm;
}

struct sv_text {
	char buf[1 << 16];
	size_t len;
};

static size_t keep(char *p, size_t sz, size_t nm, void *arg)
{
	struct sv_text *t = arg;
	size_t n = sz * nm, room = sizeof(t->buf) - 1 - t->len;

	memcpy(t->buf + t->len, p, n < room ? n : room);
	t->len += n < room ? n : room;
	t->buf[t->len] = '\0';
	return n;
}

/* The step seconds of url's /metrics into part[]: 0, or -EIO. */
static int step_parts(const char *url, double *part)
{
	static struct sv_text t;	/* one caller: the run's thread */
	CURL *e = curl_easy_init();
	char ep[512], key[96];
	long code = 0;
	int ret = -EIO;

	t.len = 0;
	snprintf(ep, sizeof(ep), "%s/metrics", url);
	if (!e)
		return -ENOMEM;
	curl_easy_setopt(e, CURLOPT_URL, ep);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, keep);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &t);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, 10L);
	if (curl_easy_perform(e) == CURLE_OK &&
	    !curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code) &&
	    code == 200)
		ret = 0;
	curl_easy_cleanup(e);
	for (int i = 0; !ret && i < NPARTS; i++) {
		const char *at;

		snprintf(key, sizeof(key), "\nsyshax_serve_step_seconds_total"
			 "{part=\"%s\"} ", g_parts[i]);
		at = strstr(t.buf, key);
		if (!at)
			ret = -EIO;
		else
			part[i] = strtod(at + strlen(key), NULL);
	}
	return ret;
}

/* GET url/health until it answers 200 or the server exits. */
static int wait_health(const char *url, pid_t pid)
{
	char ep[512];
	uint64_t t0 = bench_now_ns();
	CURL *e = curl_easy_init();
	int ret = -ETIMEDOUT;

	snprintf(ep, sizeof(ep), "%s/health", url);
	while (e && bench_now_ns() - t0 < START_NS) {
		long code = 0;

		curl_easy_setopt(e, CURLOPT_URL, ep);
		curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
		curl_easy_setopt(e, CURLOPT_TIMEOUT, 2L);
		if (curl_easy_perform(e) == CURLE_OK &&
		    !curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code) &&
		    code == 200) {
			ret = 0;
			break;
		}
		if (pid > 0 && waitpid(pid, NULL, WNOHANG) == pid) {
			ret = -ECHILD;
			break;
		}
		usleep(100 * 1000);
	}
	curl_easy_cleanup(e);
	return ret;
}

/* A port nothing listens on now (the kernel's pick). */
static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -errno;

	if (fd < 0)
		return port;
	if (!bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(fd, (struct sockaddr *)&a, &len))
		port = ntohs(a.sin_port);
	close(fd);
	return port;
}

/* syshax-serve on the model with a private syshaxd, batch room for the
 * largest client count, no prefix cache (each client count resends the
 * same prompts, which llama.cpp's side prefills every time); its log in
 * d's folder. */
static int serve_start(const struct sv_conf *c, struct privd *d, char *url,
		       size_t len)
{
	unsigned int most = 0, ctx = c->prompt + c->max_tokens + 16;
	char port[16], thr[16], run[16], blocks[16], mctx[16];
	int p = free_port(), ret;

	for (unsigned int i = 0; i < c->nclients; i++)
		most = c->clients[i] > most ? c->clients[i] : most;
	if (p < 0)
		return p;
	snprintf(d->dir, sizeof(d->dir), "/tmp/syshax-bench-serve.XXXXXX");
	if (!mkdtemp(d->dir))
		return -errno;
	snprintf(d->log, sizeof(d->log), "%s/serve.log", d->dir);
	snprintf(port, sizeof(port), "%d", p);
	snprintf(thr, sizeof(thr), "%u", c->threads);
	snprintf(run, sizeof(run), "%u", most);
	snprintf(mctx, sizeof(mctx), "%u", ctx);
	snprintf(blocks, sizeof(blocks), "%u", most * ((ctx + 15) / 16 + 1));
	{
		char *argv[] = { (char *)c->serve, "--host", "127.0.0.1", "--port", port,
				 "--model", (char *)c->model, "--private", "1",
				 "--syshaxd", (char *)c->syshaxd, "--threads",
				 thr, "--max-running", run,
				 "--cpu-max-batch-size", run, "--max-context",
				 mctx, "--kv-blocks", blocks, "--block-size",
				 "16", "--prefix-cache", "0", NULL };

		ret = privd_spawn(c->serve, argv, NULL, d->log);
	}
	if (ret < 0)
		return ret;
	d->pid = ret;
	snprintf(url, len, "http://127.0.0.1:%d", p);
	ret = wait_health(url, d->pid);
	if (ret) {
		privd_print_log(d, "syshax-serve did not come up");
		if (ret == -ECHILD)
			d->pid = 0;
	}
	return ret;
}

/* ---- llama.cpp: one llama_decode per step over every sequence ---- */

static int32_t argmax(const float *v, int32_t n)
{
	int32_t best = 0;

	for (int32_t i = 1; i < n; i++)
		if (v[i] > v[best])
			best = i;
	return best;
}

struct pr_seq {
	unsigned int fed;	/* prompt tokens decoded */
	int32_t last;		/* the token to feed next once generating */
	int done;
};

static int peer_run(const struct sv_conf *c, struct llp *l, unsigned int n,
		    struct sv_req *rq)
{
	struct llp_ctx_opts o = { .n_batch = PEER_BATCH, .n_seq_max = n,
				  .threads = c->threads };
	int32_t tok[PEER_BATCH], pos[PEER_BATCH], seq[PEER_BATCH], row[PEER_BATCH];
	uint8_t want[PEER_BATCH];
	struct pr_seq *s = calloc(n, sizeof(*s));
	char err[256];
	unsigned int active = n;
	uint64_t t0;
	int ret;

	if (!s)
		return -ENOMEM;
	o.n_ctx = n * (c->prompt + c->max_tokens + 16);
	ret = llp_context(l, &o, err, sizeof(err));
	if (ret)
		fprintf(stderr, "serve: llama.cpp: %s\n", err);
	t0 = bench_now_ns();
	while (!ret && active) {
		unsigned int k = 0;

		/* the generating sequences' tokens first, then prompt chunks */
		for (unsigned int i = 0; i < n; i++)
			if (!s[i].done && s[i].fed == c->prompt) {
				tok[k] = s[i].last;
				pos[k] = (int32_t)(c->prompt + rq[i].ntok - 1);
				seq[k] = (int32_t)i;
				want[k] = 1;
				row[k++] = (int32_t)i;
			}
		for (unsigned int i = 0; i < n && k < PEER_BATCH; i++)
			while (s[i].fed < c->prompt && k < PEER_BATCH) {
				tok[k] = prompt_id(c, i, s[i].fed);
				pos[k] = (int32_t)s[i].fed;
				seq[k] = (int32_t)i;
				want[k] = ++s[i].fed == c->prompt;
				row[k++] = (int32_t)i;
			}
		ret = llp_decode(l, tok, pos, seq, want, k, err, sizeof(err));
		if (ret) {
			fprintf(stderr, "serve: llama.cpp: %s\n", err);
			break;
		}
		for (unsigned int j = 0; j < k; j++) {
			struct pr_seq *q = &s[row[j]];
			struct sv_req *r = &rq[row[j]];
			const float *lg;

			if (!want[j])
				continue;
			lg = llp_logits(l, (int)j);
			q->last = lg ? argmax(lg, c->n_vocab) : c->eos;
			req_token(r, since(t0), c->max_tokens);
			if (q->last == c->eos || r->ntok == c->max_tokens) {
				q->done = 1;
				active--;
			}
		}
	}
	llp_clear(l);
	free(s);
	return ret;
}

/* ---- the run ---- */

static void usage(FILE *f)
{
	fprintf(f,
"usage: syshax-bench serve --model GGUF [--url URL] [--clients N,...]\n"
"                          [--prompt N] [--max-tokens N] [--threads N]\n"
"                          [--llama DIR] [--serve PATH] [--syshaxd PATH]\n"
"N concurrent streaming clients (greedy /v1/completions, a prompt of token\n"
"ids each) against syshax-serve, and llama.cpp's libllama batching the same\n"
"requests as llama-server does (one llama_decode per step over every\n"
"sequence), same GGUF, threads and prompts: output tokens/s, time to first\n"
"token and inter-token latency (p50, p99).\n"
"  --model GGUF     the model, both sides\n"
"  --url URL        a syshax-serve running on this model (default: start\n"
"                   one on 127.0.0.1 with a private syshaxd)\n"
"  --clients N,...  concurrent clients, 1..%d (default 1,4,16,64)\n"
"  --prompt N       prompt tokens per request (default 128)\n"
"  --max-tokens N   tokens generated per request (default 64)\n"
"  --threads N      both sides' threads (default: every CPU)\n"
"  --llama DIR      libllama's folder (default build/ggml)\n"
"  --serve PATH     the syshax-serve to start (default: beside this program)\n"
"  --syshaxd PATH   the syshaxd it runs (default: beside this program)\n",
		MAX_CLIENTS);
}

static int parse(int argc, char **argv, struct sv_conf *c)
{
	static const struct option opts[] = {
		{ "model", required_argument, NULL, 'm' },
		{ "url", required_argument, NULL, 'u' },
		{ "clients", required_argument, NULL, 'c' },
		{ "prompt", required_argument, NULL, 'p' },
		{ "max-tokens", required_argument, NULL, 'n' },
		{ "threads", required_argument, NULL, 't' },
		{ "llama", required_argument, NULL, 'l' },
		{ "serve", required_argument, NULL, 's' },
		{ "syshaxd", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char list[64] = "1,4,16,64", *t;
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'm': c->model = optarg; break;
		case 'u': c->url = optarg; break;
		case 'c': snprintf(list, sizeof(list), "%s", optarg); break;
		case 'p': c->prompt = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 'n': c->max_tokens = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 't': c->threads = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 'l': c->llama = optarg; break;
		case 's': snprintf(c->serve, sizeof(c->serve), "%s", optarg); break;
		case 'd': snprintf(c->syshaxd, sizeof(c->syshaxd), "%s", optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	for (t = strtok(list, ","); t; t = strtok(NULL, ",")) {
		unsigned long v = strtoul(t, NULL, 10);

		if (c->nclients == MAX_LIST || !v || v > MAX_CLIENTS)
			break;
		c->clients[c->nclients++] = (unsigned int)v;
	}
	if (t || !c->nclients || !c->model || optind < argc || c->prompt < 1 ||
	    c->prompt > 8192 || !c->max_tokens || c->max_tokens > 8192 ||
	    !c->threads || c->threads > 256) {
		usage(stderr);
		return 2;
	}
	return -1;
}

static void print_row(unsigned int n, const char *who,
		      const struct sv_result *r)
{
	printf("%7u  %-9s %9.1f %8u %8.0f %8.0f %8.1f %8.1f %6u\n", n, who,
	       r->tps, r->tokens, r->ttft50 * 1e3, r->ttft99 * 1e3,
	       r->itl50 * 1e3, r->itl99 * 1e3, r->failed);
}

/* Runs one side at n clients into res; -errno when it could not run. */
typedef int (*side_fn)(const struct sv_conf *c, void *arg, unsigned int n,
		       struct sv_req *rq);

/* Ours, and the growth of the server's step seconds over the run. */
static int side_ours(const struct sv_conf *c, void *arg, unsigned int n,
		     struct sv_req *rq)
{
	double a[NPARTS];
	int ret;

	g_over_ok = !step_parts(arg, a);
	ret = ours_run(c, arg, n, rq);
	g_over_ok &= !ret && !step_parts(arg, g_over);
	for (int i = 0; i < NPARTS; i++)
		g_over[i] -= a[i];
	return ret;
}

/* The server's share of its steps in the latest run of ours. */
static void print_over(void)
{
	const double *b = g_over;

	if (!g_over_ok) {
		printf("%7s  %-9s *** no step seconds in /metrics ***\n", "",
		       "server");
		return;
	}
	printf("%7s  %-9s engine %.3f s, sample %.3f s, http %.3f s: "
	       "overhead %.2f %% of the step time\n", "", "server",
	       b[PART_ENGINE], b[PART_SAMPLE], b[PART_HTTP],
	       100 * (b[PART_SAMPLE] + b[PART_HTTP]) /
	       (b[PART_ENGINE] + b[PART_SAMPLE]));
}

static int side_peer(const struct sv_conf *c, void *arg, unsigned int n,
		     struct sv_req *rq)
{
	return peer_run(c, arg, n, rq);
}

static int measure(const struct sv_conf *c, side_fn fn, void *arg,
		   unsigned int n, struct sv_result *res)
{
	struct sv_req *rq = calloc(n, sizeof(*rq));
	int ret = rq ? 0 : -ENOMEM;

	for (unsigned int i = 0; !ret && i < n; i++)
		if (!(rq[i].gaps = calloc(c->max_tokens, sizeof(double))))
			ret = -ENOMEM;
	if (!ret)
		ret = fn(c, arg, n, rq);
	if (!ret)
		summarize(rq, n, c->max_tokens, res);
	for (unsigned int i = 0; rq && i < n; i++)
		free(rq[i].gaps);
	free(rq);
	return ret;
}

int bench_serve_main(int argc, char **argv)
{
	static const char *const rel[] = { "syshax-serve", "syshaxd" };
	struct sv_conf c = { .llama = "build/ggml", .prompt = 128,
			     .max_tokens = 64,
			     .threads = (unsigned int)bench_ncpus() };
	struct privd d = { 0 };
	struct shx_tok *tok = NULL;
	struct llp *l = NULL;
	char url[128], err[256];
	int ret = parse(argc, argv, &c), failed = 0;

	if (ret >= 0)
		return ret;
	if (!c.serve[0])
		beside_path(c.serve, sizeof(c.serve), rel[0], rel, 1);
	if (!c.syshaxd[0])
		beside_path(c.syshaxd, sizeof(c.syshaxd), rel[1], rel + 1, 1);
	if (shx_tok_open(c.model, &tok, err, sizeof(err))) {
		fprintf(stderr, "serve: %s: %s\n", c.model, err);
		return 1;
	}
	c.n_vocab = shx_tok_n_vocab(tok);
	c.eos = shx_tok_eos(tok);
	shx_tok_free(tok);
	if (curl_global_init(CURL_GLOBAL_DEFAULT))
		return 1;
	if (llp_open(&l, c.llama, err, sizeof(err)) ||
	    llp_load(l, c.model, err, sizeof(err))) {
		fprintf(stderr, "serve: *** llama.cpp not measured: %s ***\n",
			err);
		llp_close(l);
		l = NULL;
	}
	if (c.url)
		snprintf(url, sizeof(url), "%s", c.url);
	else if ((ret = serve_start(&c, &d, url, sizeof(url)))) {
		fprintf(stderr, "serve: syshax-serve: %s\n", strerror(-ret));
		failed = 1;
	}
	printf("syshax-bench serve: %s, %u threads both sides\ncpu: %s\n"
	       "prompt %u tokens, %u generated, greedy; llama.cpp: %s\n",
	       c.model, c.threads, bench_cpu(), c.prompt, c.max_tokens,
	       l ? llp_version(l) : "NOT MEASURED");
	printf("%7s  %-9s %9s %8s %8s %8s %8s %8s %6s\n", "clients", "side",
	       "tok/s", "tokens", "ttft50", "ttft99", "itl50", "itl99",
	       "failed");
	for (unsigned int i = 0; !failed && i < c.nclients; i++) {
		struct sv_result ours, peer;

		fprintf(stderr, "serve: %u clients\n", c.clients[i]);
		if (measure(&c, side_ours, url, c.clients[i], &ours)) {
			failed = 1;
			break;
		}
		print_row(c.clients[i], "ours", &ours);
		print_over();
		failed |= ours.failed != 0;
		if (l && !measure(&c, side_peer, l, c.clients[i], &peer)) {
			print_row(c.clients[i], "llama.cpp", &peer);
			printf("%7s  %-9s %8.2fx\n", "", "ratio",
			       ours.tps / peer.tps);
		}
		fflush(stdout);
	}
	printf("(ms; ttft from the request's start; ours: tokens from the usage "
	       "chunk, gaps between SSE chunks; server: /metrics' syshax_serve_step_seconds_total over "
	       "the run, overhead = (sample + http) / (engine + sample))\n");
	privd_stop(&d);
	llp_close(l);
	curl_global_cleanup();
	return failed;
}
