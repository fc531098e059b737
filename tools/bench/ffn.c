// SPDX-License-Identifier: MIT
/*
 * syshax-bench ffn: FFN jobs through syshaxd's CPU engine on a 7B-like
 * layer (hidden 4096, intermediate 14336), weights from DRAM.
 *  (a) one client, 1-token jobs back to back: the round trip against the
 *      bare kernels doing the same work in this process, on as many
 *      threads, in the same run: the broker + engine overhead;
 *  (b) 1, 4 and 16 clients (threads, each its own context) submitting
 *      1-token jobs for a fixed time: aggregate tokens/s, which batching
 *      should raise with more clients.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "beside.h"
#include "bench.h"
#include "privd.h"
#include "shxk.h"
#include "syshax/rt.h"

#define MAX_CLIENTS	64

struct ffn_conf {
	unsigned int hidden, ff, threads, rounds, poll_us;
	double secs;
	enum shxk_type type;
};

/* The layer's tensors in a client buffer, after a struct syshax_wdesc. */
static size_t desc_bytes(void)
{
	return sizeof(struct syshax_wdesc) +
	       3 * sizeof(struct syshax_wdesc_tensor);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Random blocks with small scales: outputs stay finite in every type. */
static void fill_blocks(enum shxk_type t, uint8_t *p, size_t rows, size_t k,
			uint64_t *seed)
{
	size_t bs = shxk_row_size(t, SHXK_QK), nb = rows * k / SHXK_QK;

	for (size_t b = 0; b < nb; b++) {
		uint8_t *blk = p + b * bs;
		uint16_t d = shxk_fp32_to_fp16(0.001f + (float)(rnd(seed) % 100) *
					       1e-5f);

		memcpy(blk, &d, 2);
		for (size_t i = 2; i < bs; i++)
			blk[i] = (uint8_t)rnd(seed);
	}
}

static int build_desc(const struct ffn_conf *c, uint8_t *base)
{
	static const char *const names[3] = {
		"blk.0.ffn_gate.weight", "blk.0.ffn_up.weight",
		"blk.0.ffn_down.weight",
	};
	struct syshax_wdesc *d = (void *)base;
	size_t off = desc_bytes(), mat = shxk_row_size(c->type, c->hidden) *
					  c->ff;
	uint64_t seed = 0x9e3779b97f4a7c15ULL;

	d->magic = SYSHAX_WDESC_MAGIC;
	d->version = SYSHAX_WDESC_VERSION;
	d->nr_tensors = 3;
	for (int i = 0; i < 3; i++) {
		struct syshax_wdesc_tensor *t = &d->tensors[i];

		snprintf(t->name, sizeof(t->name), "%s", names[i]);
		t->type = (uint32_t)c->type;
		t->ndim = 2;
		t->ne[0] = i == 2 ? c->ff : c->hidden;
		t->ne[1] = i == 2 ? c->hidden : c->ff;
		t->ne[2] = t->ne[3] = 1;
		t->offset = off;
		t->size = mat;
		fill_blocks(c->type, base + off, t->ne[1], t->ne[0], &seed);
		off += mat;
	}
	return 0;
}

/* An FFN job of one token: refs into io (x at 0, y after it). */
static void ffn_job(struct syshax_job *job, uint64_t wset, unsigned int hidden,
		    const struct syshax_buffer *io)
{
	struct syshax_ffn_params p = {
		.wset = wset, .layer = 0, .m = 1,
		.x_type = SYSHAX_DT_F32, .y_type = SYSHAX_DT_F32,
	};

	syshax_job_init(job, SYSHAX_OP_FFN, 1);
	syshax_job_params(job, &p, sizeof(p));
	syshax_job_add_ref(job, io, 0, hidden * 4ULL, SYSHAX_ACCESS_READ);
	syshax_job_add_ref(job, io, hidden * 4ULL, hidden * 4ULL,
			   SYSHAX_ACCESS_WRITE);
}

static int io_buffer(struct syshax *sh, unsigned int hidden,
		     struct syshax_buffer *io)
{
	int ret = syshax_buf_alloc(sh, 2ULL * hidden * 4, -1, 0, io);

	if (!ret)
		ret = syshax_buf_map(sh, io);
	if (!ret)
		for (unsigned int i = 0; i < hidden; i++)
			((float *)io->addr)[i] = sinf((float)i * 0.1f);
	return ret;
}

/* ---- the bare kernels, same work, this process ---- */

struct bare {
	struct shxk_weights g, u, d;
	const float *x;
	float *G, *U, *y;
	void *act, *actd;
	unsigned int hidden, ff;
};

static void split(size_t n, int tid, int nthr, size_t *a, size_t *b)
{
	size_t chunk = ((n + (size_t)nthr - 1) / (size_t)nthr + 31) / 32 * 32;

	*a = chunk * (size_t)tid < n ? chunk * (size_t)tid : n;
	*b = chunk * (size_t)(tid + 1) < n ? chunk * (size_t)(tid + 1) : n;
}

static void bare_up(void *arg, int tid, int nthr)
{
	struct bare *b = arg;
	size_t a, e;

	split(b->ff, tid, nthr, &a, &e);
	shxk_gemm(&b->g, b->act, 1, b->G, SHXK_F32, b->ff, a, e);
	shxk_gemm(&b->u, b->act, 1, b->U, SHXK_F32, b->ff, a, e);
	shxk_swiglu(b->G, b->ff, b->U, b->ff, b->G, b->ff, 1, a, e);
}

static void bare_down(void *arg, int tid, int nthr)
{
	struct bare *b = arg;
	size_t a, e;

	split(b->hidden, tid, nthr, &a, &e);
	shxk_gemm(&b->d, b->actd, 1, b->y, SHXK_F32, b->hidden, a, e);
}

static int bare_repack(struct shxk_weights *w, const uint8_t *rows,
		       enum shxk_type t, size_t n, size_t k)
{
	struct shxk_weights src = { t, SHXK_LAYOUT_ROWS, n, k, rows };
	void *dst = bench_alloc(shxk_repack_size(t, SHXK_LAYOUT_X8, n, k));

	if (!dst)
		return -ENOMEM;
	shxk_repack(&src, SHXK_LAYOUT_X8, dst, 0, (n + 7) / 8);
	*w = (struct shxk_weights){ t, SHXK_LAYOUT_X8, n, k, dst };
	return 0;
}

struct ffn_result {
	const char *type;
	struct bench_jobtime t;
	double tps[3];
	double per_run[3];	/* tokens per batched run (ENGINE_STATS) */
};

static void bare_free(struct bare *b, const struct ffn_conf *c)
{
	if (b->g.data)
		bench_free((void *)b->g.data, shxk_repack_size(c->type,
			   SHXK_LAYOUT_X8, c->ff, c->hidden));
	if (b->u.data)
		bench_free((void *)b->u.data, shxk_repack_size(c->type,
			   SHXK_LAYOUT_X8, c->ff, c->hidden));
	if (b->d.data)
		bench_free((void *)b->d.data, shxk_repack_size(c->type,
			   SHXK_LAYOUT_X8, c->hidden, c->ff));
	free(b->G);
	free(b->U);
	free(b->y);
	free(b->act);
	free(b->actd);
}

/* The same weights repacked as the engine keeps them, and scratch. */
static int bare_init(struct bare *b, const struct ffn_conf *c,
		     const uint8_t *wbuf, const float *x)
{
	size_t mat = shxk_row_size(c->type, c->hidden) * c->ff;
	int ret;

	*b = (struct bare){ .x = x, .hidden = c->hidden, .ff = c->ff };
	b->G = malloc(c->ff * 4);
	b->U = malloc(c->ff * 4);
	b->y = malloc(c->hidden * 4);
	b->act = malloc(shxk_act_row_size(c->type, c->hidden));
	b->actd = malloc(shxk_act_row_size(c->type, c->ff));
	ret = !b->G || !b->U || !b->y || !b->act || !b->actd ? -ENOMEM : 0;
	if (!ret)
		ret = bare_repack(&b->g, wbuf, c->type, c->ff, c->hidden);
	if (!ret)
		ret = bare_repack(&b->u, wbuf + mat, c->type, c->ff, c->hidden);
	if (!ret)
		ret = bare_repack(&b->d, wbuf + 2 * mat, c->type, c->hidden,
				  c->ff);
	if (ret)
		bare_free(b, c);
	return ret;
}

/* n rounds of the bare FFN on a fresh team (its threads spin between
 * calls, so it lives only while it is timed); µs into lat. */
static int bare_rounds(struct bare *b, const struct ffn_conf *c,
		       unsigned int n, double *lat)
{
	struct bench_team *team;
	int ret = bench_team_new(&team, (int)c->threads);

	for (unsigned int i = 0; !ret && i < n; i++) {
		uint64_t t0 = bench_now_ns();

		shxk_act_prepare(c->type, SHXK_F32, b->x, c->hidden, c->hidden,
				 b->act, 0, 1);
		bench_team_run(team, bare_up, b);
		shxk_act_prepare(c->type, SHXK_F32, b->G, c->ff, c->ff,
				 b->actd, 0, 1);
		bench_team_run(team, bare_down, b);
		lat[i] = (double)(bench_now_ns() - t0) / 1e3;
	}
	if (!ret)
		bench_team_free(team);
	return ret;
}

struct bare_run {
	struct bare *b;
	const struct ffn_conf *c;
};

static int bare_fn(void *arg, unsigned int n, double *lat)
{
	const struct bare_run *br = arg;

	return bare_rounds(br->b, br->c, n, lat);
}

/* (a): the job against the bare FFN on the same weights. */
static int overhead(struct syshax *sh, struct syshax_job *job,
		    const struct ffn_conf *c, const uint8_t *wbuf,
		    const float *x, struct bench_jobtime *r)
{
	struct bare b;
	struct bare_run br = { &b, c };
	int ret = bare_init(&b, c, wbuf, x);

	if (ret)
		return ret;
	ret = bench_job_vs_bare(sh, job, c->rounds, bare_fn, &br, r);
	bare_free(&b, c);
	return ret;
}

/* ---- clients ---- */

struct client {
	pthread_t tid;
	const char *sock;
	uint64_t wset;
	unsigned int hidden;
	uint64_t stop_ns;
	unsigned long done;
	int ret;
};

static void *client_main(void *arg)
{
	struct client *cl = arg;
	struct syshax_open_opts oo = { .backend = SYSHAX_BACKEND_DAEMON,
				       .path = cl->sock };
	struct syshax_buffer io;
	struct syshax_job job;
	struct syshax *sh;
	uint64_t res;

	cl->ret = syshax_open(&sh, &oo);
	if (cl->ret)
		return NULL;
	cl->ret = io_buffer(sh, cl->hidden, &io);
	ffn_job(&job, cl->wset, cl->hidden, &io);
	while (!cl->ret && bench_now_ns() < cl->stop_ns) {
		cl->ret = bench_job_wait(sh, &job, &res, NULL);
		cl->done += !cl->ret;
	}
	syshax_close(sh);
	return NULL;
}

static int clients_rate(const char *sock, uint64_t wset, unsigned int hidden,
			unsigned int n, double secs, double *tps)
{
	struct client cl[MAX_CLIENTS];
	uint64_t t0 = bench_now_ns();
	unsigned long total = 0;
	unsigned int started;
	int ret = 0;

	for (started = 0; started < n; started++) {
		struct client *c = &cl[started];

		*c = (struct client){ .sock = sock, .wset = wset,
				      .hidden = hidden,
				      .stop_ns = t0 + (uint64_t)(secs * 1e9) };
		if (pthread_create(&c->tid, NULL, client_main, c)) {
			ret = -EAGAIN;	/* the ones started still end */
			break;
		}
	}
	for (unsigned int i = 0; i < started; i++) {
		pthread_join(cl[i].tid, NULL);
		total += cl[i].done;
		if (cl[i].ret && !ret)
			ret = cl[i].ret;
	}
	*tps = (double)total / ((double)(bench_now_ns() - t0) / 1e9);
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: syshax-bench ffn [--type q4_0|q8_0|attn|all] [--threads N]\n"
"                        [--rounds N] [--seconds S] [--hidden N] [--ff N]\n"
"                        [--poll-us N] [--syshaxd PATH] [--json]\n"
"FFN jobs (SwiGLU, one layer, 1 token each) through a syshaxd started on a\n"
"private socket (userspace backend), weights loaded from a client buffer:\n"
" (a) one client, jobs back to back: median round trip vs the bare kernels\n"
"     doing the same work in this process on as many threads;\n"
" (b) 1, 4 and 16 clients for S seconds each: aggregate tokens/s;\n"
" (c) one ATTN_DECODE job (4,096 positions, f16 KV) vs the bare kernel.\n"
"  --type T      q4_0, q8_0, attn (only (c)) or all (default all)\n"
"  --threads N   the daemon's worker threads and the bare kernels' (default 2)\n"
"  --rounds N    jobs timed in (a) (default 50)\n"
"  --seconds S   duration of each run of (b) (default 3)\n"
"  --hidden N    hidden size (default 4096)\n"
"  --ff N        intermediate size (default 14336)\n"
"  --poll-us N   the daemon polls its rings and workers N us before they\n"
"                sleep (--engine-poll-us), and (a)'s and (c)'s client as\n"
"                long (default 0: all sleep at once)\n"
"  --syshaxd P   the daemon to start (default: beside this program)\n"
"  --json        JSON instead of a table\n");
}

/* FFN tokens and runs so far, from the engine's own counters. */
static int ffn_counts(struct syshax *sh, const struct syshax_buffer *sb,
		      double *tokens, double *runs)
{
	const struct syshax_engine_stats *st = sb->addr;
	int fi = syshax_stats_op_index(SYSHAX_OP_FFN);
	struct syshax_job job;
	uint64_t res;
	int ret;

	syshax_job_init(&job, SYSHAX_OP_ENGINE_STATS, 2);
	syshax_job_add_ref(&job, sb, 0, sizeof(*st), SYSHAX_ACCESS_WRITE);
	ret = bench_job_wait(sh, &job, &res, NULL);
	if (ret)
		return ret;
	/* Every pool runs every batch: pool 0's counts are the batches'. */
	*tokens = (double)st->op[fi][0].tokens;
	*runs = 0;
	for (int b = 0; b < SYSHAX_STATS_BATCH_BUCKETS; b++)
		*runs += (double)st->op[fi][0].batch_hist[b];
	return 0;
}

/*
 * A private syshaxd with c->threads workers, polling c->poll_us before it
 * sleeps, and this thread's client, spinning as long before it sleeps.
 */
static int start_daemon(const char *exe, const struct ffn_conf *c,
			struct privd *d, struct syshax **sh)
{
	char threads[16], poll[16];
	char *extra[] = { "--threads", threads, "--engine-threads", "1",
			  "--engine-poll-us", poll, NULL };
	int ret;

	snprintf(threads, sizeof(threads), "%u", c->threads);
	snprintf(poll, sizeof(poll), "%u", c->poll_us);
	ret = privd_start_userspace(exe, extra, d, sh);
	if (!ret)
		ret = syshax_set_spin(*sh, c->poll_us);
	return ret;
}

/* (c): the ATTN_DECODE job against the bare kernel. */
static int bench_attn(const char *exe, const struct ffn_conf *c,
		      struct bench_jobtime *r, double *maxdiff)
{
	struct privd d = { 0 };
	struct syshax *sh = NULL;
	int ret = start_daemon(exe, c, &d, &sh);

	if (!ret)
		ret = bench_attn_job(sh, c->threads, c->rounds, r, maxdiff);
	if (ret)
		fprintf(stderr, "syshax-bench ffn: ATTN_DECODE: %s\n",
			syshax_strerror(ret));
	syshax_close(sh);
	privd_stop(&d);
	return ret;
}

static int bench_type(const char *exe, const struct ffn_conf *c,
		      struct ffn_result *r)
{
	static const unsigned int nclients[3] = { 1, 4, 16 };
	struct syshax_weights_load_params lp = {
		.source = SYSHAX_WLOAD_BUFFER, .quantize = SYSHAX_QUANT_NONE,
	};
	size_t total = desc_bytes() + 3 * shxk_row_size(c->type, c->hidden) *
				      c->ff;
	struct privd d = { 0 };
	struct syshax_buffer wb = { 0 }, io, sb;
	double tok0, runs0, tok1, runs1;
	struct syshax_job job;
	struct syshax *sh = NULL;
	uint64_t wset = 0;
	int ret;

	ret = start_daemon(exe, c, &d, &sh);
	if (!ret)
		ret = syshax_buf_alloc(sh, total, -1, SYSHAX_BUF_ALLOW_SMALL, &wb);
	if (!ret)
		ret = syshax_buf_map(sh, &wb);
	if (!ret)
		ret = build_desc(c, wb.addr);
	if (!ret) {
		syshax_job_init(&job, SYSHAX_OP_WEIGHTS_LOAD, 1);
		syshax_job_params(&job, &lp, sizeof(lp));
		syshax_job_add_ref(&job, &wb, 0, total, SYSHAX_ACCESS_READ);
		ret = bench_job_wait(sh, &job, &wset, NULL);
	}
	if (!ret)
		ret = io_buffer(sh, c->hidden, &io);
	if (!ret) {
		ffn_job(&job, wset, c->hidden, &io);
		ret = overhead(sh, &job, c, (const uint8_t *)wb.addr +
			       desc_bytes(), io.addr, &r->t);
	}
	if (!ret)
		ret = syshax_buf_alloc(sh, sizeof(struct syshax_engine_stats), -1,
				       0, &sb);
	if (!ret)
		ret = syshax_buf_map(sh, &sb);
	for (unsigned int i = 0; !ret && i < 3; i++) {
		ret = ffn_counts(sh, &sb, &tok0, &runs0);
		if (!ret)
			ret = clients_rate(d.sock, wset, c->hidden, nclients[i],
					   c->secs, &r->tps[i]);
		if (!ret)
			ret = ffn_counts(sh, &sb, &tok1, &runs1);
		if (!ret)
			r->per_run[i] = runs1 > runs0 ?
					(tok1 - tok0) / (runs1 - runs0) : 0;
	}
	if (ret)
		fprintf(stderr, "syshax-bench ffn: %s\n", syshax_strerror(ret));
	syshax_close(sh);
	privd_stop(&d);
	return ret;
}

int bench_ffn_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "type", required_argument, NULL, 't' },
		{ "threads", required_argument, NULL, 'n' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "seconds", required_argument, NULL, 's' },
		{ "hidden", required_argument, NULL, 'H' },
		{ "ff", required_argument, NULL, 'F' },
		{ "syshaxd", required_argument, NULL, 'd' },
		{ "poll-us", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ffn_conf c = { .hidden = 4096, .ff = 14336, .threads = 2,
			      .rounds = 50, .secs = 3.0 };
	struct ffn_result res[2];
	struct bench_jobtime at = { 0 };
	double maxdiff = 0;
	const char *type = "all";
	char exe[4096] = "";
	unsigned int nres = 0;
	int opt, json = 0, failed = 0, attn = 0;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 't': type = optarg; break;
		case 'n': c.threads = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 'r': c.rounds = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 's': c.secs = strtod(optarg, NULL); break;
		case 'H': c.hidden = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 'F': c.ff = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 'd': snprintf(exe, sizeof(exe), "%s", optarg); break;
		case 'p': c.poll_us = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 'j': json = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!c.threads || c.threads > 256 || c.rounds < 1 || !(c.secs > 0) ||
	    !c.hidden || c.hidden % 32 || !c.ff || c.ff % 32 ||
	    c.poll_us > 1000000 ||
	    (strcmp(type, "all") && strcmp(type, "q4_0") &&
	     strcmp(type, "q8_0") && strcmp(type, "attn")) || optind < argc) {
		usage(stderr);
		return 2;
	}
	if (!exe[0]) {
		static const char *const rel[] = { "syshaxd" };

		beside_path(exe, sizeof(exe), "syshaxd", rel, 1);
	}
	shxk_init();
	for (int t = 0; t < 2; t++) {
		const char *name = t ? "q8_0" : "q4_0";

		if (strcmp(type, "all") && strcmp(type, name))
			continue;
		c.type = t ? SHXK_Q8_0 : SHXK_Q4_0;
		res[nres].type = name;
		if (bench_type(exe, &c, &res[nres]))
			failed = 1;
		else
			nres++;
	}
	if (!strcmp(type, "all") || !strcmp(type, "attn")) {
		if (bench_attn(exe, &c, &at, &maxdiff))
			failed = 1;
		else
			attn = 1;
	}
	if (json) {
		printf("{\"command\": \"ffn\", \"cpu\": \"%s\", \"hidden\": %u, "
		       "\"ff\": %u, \"threads\": %u, \"poll_us\": %u, "
		       "\"results\": [",
		       bench_cpu(), c.hidden, c.ff, c.threads, c.poll_us);
		for (unsigned int i = 0; i < nres; i++)
			printf("%s\n  {\"type\": \"%s\", \"job_us\": %.1f, "
			       "\"exec_us\": %.1f, "
			       "\"bare_us\": %.1f, \"overhead\": %.3f, "
			       "\"tps_1\": %.1f, \"tps_4\": %.1f, "
			       "\"tps_16\": %.1f, \"x16_vs_1\": %.2f, "
			       "\"tokens_per_run_4\": %.2f, "
			       "\"tokens_per_run_16\": %.2f}",
			       i ? "," : "", res[i].type, res[i].t.job_us,
			       res[i].t.exec_us, res[i].t.bare_us,
			       res[i].t.job_us / res[i].t.bare_us - 1.0,
			       res[i].tps[0], res[i].tps[1], res[i].tps[2],
			       res[i].tps[2] / res[i].tps[0], res[i].per_run[1],
			       res[i].per_run[2]);
		printf("\n]");
		if (attn)
			printf(", \"attn\": {\"job_us\": %.1f, \"exec_us\": %.1f, "
			       "\"bare_us\": %.1f, \"ratio\": %.3f, "
			       "\"max_diff\": %.3g}", at.job_us, at.exec_us,
			       at.bare_us, at.job_us / at.bare_us, maxdiff);
		printf("}\n");
		return failed;
	}
	printf("FFN %ux%u, 1 token per job, %u threads, weights from DRAM, "
	       "poll %u us\ncpu: %s\n", c.hidden, c.ff, c.threads, c.poll_us,
	       bench_cpu());
	printf("%-5s %9s %9s %9s %9s %9s %9s %10s %8s %9s\n", "type",
	       "job us", "exec us", "bare us", "overhead", "tok/s 1cl", "tok/s 4cl", "tok/s 16cl",
	       "16 vs 1", "tok/run16");
	for (unsigned int i = 0; i < nres; i++)
		printf("%-5s %9.1f %9.1f %9.1f %8.1f%% %9.1f %9.1f %10.1f "
		       "%7.2fx %9.2f\n", res[i].type, res[i].t.job_us,
		       res[i].t.exec_us, res[i].t.bare_us,
		       (res[i].t.job_us / res[i].t.bare_us - 1.0) * 100.0,
		       res[i].tps[0], res[i].tps[1], res[i].tps[2],
		       res[i].tps[2] / res[i].tps[0], res[i].per_run[2]);
	if (attn)
		printf("ATTN_DECODE ctx 4096, 32/8 heads x 128, f16 KV in a "
		       "134 MB buffer:\n  job %.1f us, exec %.1f us, bare %.1f "
		       "us: %.3fx the bare kernel (outputs differ by %.3g)\n",
		       at.job_us, at.exec_us, at.bare_us, at.job_us / at.bare_us,
		       maxdiff);
	return failed;
}
