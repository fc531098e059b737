// SPDX-License-Identifier: MIT
/*
 * syshax-top's samples: STATS, CTX_STATS and, when an engine is attached
 * and answers, the CPU engine's ENGINE_STATS job; hugepages per node from
 * sysfs. Rates come from the difference of two samples.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "shxk.h"
#include "top.h"

/* How long a sample waits for the ENGINE_STATS job. */
#define ES_WAIT_NS	200000000LL
#define ES_TAG		0x746f70ULL	/* "top" */

double top_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static long read_long(const char *path)
{
	FILE *f = fopen(path, "re");
	long v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static int count_nodes(void)
{
	DIR *d = opendir("/sys/devices/system/node");
	struct dirent *e;
	int n = 0;

	if (!d)
		return 1;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "node", 4) &&
		    e->d_name[4] >= '0' && e->d_name[4] <= '9')
			n++;
	closedir(d);
	return n ? n : 1;
}

/* The broker's start: syshaxd's pid is the peer of the event socket,
 * which syshaxd made (a socketpair). */
static void broker_start(struct top *t)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	char path[64], buf[1024], *p;
	unsigned long long start;
	long hz = sysconf(_SC_CLK_TCK);
	FILE *f;
	int fd = syshax_fd(t->sh), i;

	t->broker_start = -1;
	if (t->backend != SYSHAX_BACKEND_DAEMON || fd < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) ||
	    cred.pid <= 0)
		return;
	t->broker_pid = cred.pid;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)cred.pid);
	f = fopen(path, "re");
	if (!f)
		return;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	if (!p || !(p = strrchr(buf, ')')))
		return;
	/* Field 22 (starttime); p is at the end of field 2. */
	for (i = 2; i < 22 && p; i++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, "%llu", &start) != 1 || hz <= 0)
		return;
	/* starttime is since boot; CLOCK_MONOTONIC counts from boot too
	 * (without suspend: good enough for an uptime). */
	{
		struct timespec bt;

		clock_gettime(CLOCK_BOOTTIME, &bt);
		t->broker_start = top_now() -
			((double)bt.tv_sec + bt.tv_nsec / 1e9 -
			 (double)start / (double)hz);
	}
}

int top_init(struct top *t)
{
	struct syshax_open_opts o = { .backend = SYSHAX_BACKEND_AUTO,
				      .path = t->device };
	int ret;

	ret = syshax_open(&t->sh, &o);
	if (ret)
		return ret;
	ret = syshax_version(t->sh, &t->ver);
	if (ret)
		return ret;
	t->backend = syshax_backend(t->sh);
	/* The variant the kernels' dispatch picks here (as syshaxd's). */
	shxk_init();
	t->isa = shxk_isa_name();
	shxk_cpu_describe(t->cpu, sizeof(t->cpu));
	t->nr_nodes = count_nodes();
	t->start = top_now();
	broker_start(t);
	t->es_why = "no engine attached";
	return 0;
}

void top_fini(struct top *t)
{
	if (t->es_buf_ok)
		syshax_buf_free(t->sh, &t->esbuf);
	if (t->sh)
		syshax_close(t->sh);
	t->sh = NULL;
}

/* Reaps the ENGINE_STATS job when it completed; 1 when s got figures. */
static int es_reap(struct top *t, struct top_sample *s, int64_t wait_ns)
{
	struct syshax_completion c;
	int n;

	while (t->es_pending) {
		n = syshax_wait(t->sh, &c, 1, 1, wait_ns);
		if (n <= 0)
			return 0;
		if (c.user_data != ES_TAG)
			continue;
		t->es_pending = 0;
		if (c.status) {
			t->es_why = syshax_strerror(c.status);
			return 0;
		}
		memcpy(&s->es, t->esbuf.addr, sizeof(s->es));
		t->es_why = NULL;
		return 1;
	}
	return 0;
}

static void es_sample(struct top *t, struct top_sample *s)
{
	struct syshax_job job;
	int ret;

	s->es_ok = 0;
	if (!(t->ver.features & SYSHAX_FEAT_JOBS))
		return;
	if (t->es_pending) {
		s->es_ok = es_reap(t, s, 0);
		if (t->es_pending)
			return;
	}
	if (!s->st.engines) {
		t->es_why = "no engine attached";
		return;
	}
	if (!t->es_buf_ok) {
		/* Small pages: no 2 MiB chunk pinned for a few KiB. */
		ret = syshax_buf_alloc(t->sh, sizeof(s->es), -1,
				       SYSHAX_BUF_ALLOW_SMALL |
				       SYSHAX_BUF_ALLOW_REMOTE, &t->esbuf);
		if (!ret && (ret = syshax_buf_map(t->sh, &t->esbuf)))
			syshax_buf_free(t->sh, &t->esbuf);
		if (ret) {
			t->es_why = syshax_strerror(ret);
			return;
		}
		t->es_buf_ok = 1;
	}
	syshax_job_init(&job, SYSHAX_OP_ENGINE_STATS, ES_TAG);
	syshax_job_add_ref(&job, &t->esbuf, 0, sizeof(s->es),
			   SYSHAX_ACCESS_WRITE);
	ret = syshax_submit(t->sh, &job, 1);
	if (ret < 0) {
		t->es_why = syshax_strerror(ret);
		return;
	}
	t->es_pending = 1;
	s->es_ok = es_reap(t, s, ES_WAIT_NS);
	if (t->es_pending)
		t->es_why = "the engine did not answer ENGINE_STATS in 200 ms";
}

static void hugepages(struct top_sample *s)
{
	char path[128];
	int n;

	for (n = 0; n < SYSHAX_MAX_NODES; n++) {
		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/"
			 "hugepages/hugepages-2048kB/free_hugepages", n);
		s->hp_free[n] = read_long(path);
		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/"
			 "hugepages/hugepages-2048kB/nr_hugepages", n);
		s->hp_total[n] = read_long(path);
	}
}

static double delta(uint64_t a, uint64_t b, double dt)
{
	return a >= b && dt > 0 ? (double)(a - b) / dt : 0;
}

int top_sample(struct top *t)
{
	struct top_sample *s = &t->s[!t->cur], *p;
	int ret, k;
	uint64_t tok = 0, ptok = 0;

	s->t = top_now();
	ret = syshax_stats(t->sh, &s->st);
	if (ret)
		return ret;
	s->nr_ctx = syshax_ctx_stats(t->sh, s->ctx, TOP_MAX_CTX, &s->total_ctx);
	hugepages(s);
	es_sample(t, s);
	t->cur = !t->cur;
	t->nr_samples++;
	p = (struct top_sample *)top_prev(t);
	if (!p)
		return 0;
	{
		double dt = s->t - p->t;

		t->sub_rate = delta(s->st.jobs_submitted, p->st.jobs_submitted,
				    dt);
		t->done_rate = delta(s->st.jobs_completed,
				     p->st.jobs_completed, dt);
		t->fail_rate = delta(s->st.jobs_failed, p->st.jobs_failed, dt);
		t->tok_rate = 0;
		if (s->es_ok && p->es_ok) {
			for (k = 0; k < SYSHAX_STATS_OPS; k++) {
				tok += s->es.op[k][0].tokens;
				ptok += p->es.op[k][0].tokens;
			}
			t->tok_rate = delta(tok, ptok, dt);
		}
	}
	memmove(t->hist_jobs, t->hist_jobs + 1,
		(TOP_HIST - 1) * sizeof(double));
	memmove(t->hist_tok, t->hist_tok + 1, (TOP_HIST - 1) * sizeof(double));
	t->hist_jobs[TOP_HIST - 1] = t->done_rate;
	t->hist_tok[TOP_HIST - 1] = t->tok_rate;
	if (t->hist_n < TOP_HIST)
		t->hist_n++;
	return 0;
}

int top_nodes_in_use(const struct top *t)
{
	const struct top_sample *s = top_cur(t);
	int n, hi = t->nr_nodes;

	for (n = 0; n < SYSHAX_MAX_NODES; n++)
		if (s->st.node_bytes[n] && n + 1 > hi)
			hi = n + 1;
	return hi > SYSHAX_MAX_NODES ? SYSHAX_MAX_NODES : hi;
}

double top_lat_pct(const struct top *t, double pct, int use_delta)
{
	const struct top_sample *s = top_cur(t), *p = top_prev(t);
	uint64_t h[SYSHAX_LAT_BUCKETS], sum = 0, acc = 0;
	int i;

	for (i = 0; i < SYSHAX_LAT_BUCKETS; i++) {
		h[i] = s->st.lat_hist[i];
		if (use_delta && p && h[i] >= p->st.lat_hist[i])
			h[i] -= p->st.lat_hist[i];
		sum += h[i];
	}
	if (!sum)
		return -1;
	for (i = 0; i < SYSHAX_LAT_BUCKETS; i++) {
		acc += h[i];
		if ((double)acc >= pct * (double)sum)
			break;
	}
	if (i >= SYSHAX_LAT_BUCKETS)
		i = SYSHAX_LAT_BUCKETS - 1;
	/* Bucket i holds times below 2^(i + 10) ns. */
	return (double)(1ULL << (i + 10)) / 1000.0;
}

static const char *const op_names[SYSHAX_STATS_OPS] = {
	"gemm", "ffn", "moe", "attn_decode", "decode", "prefill",
};

int top_op_rates(const struct top *t, struct top_op_rate *r, int max)
{
	const struct top_sample *s = top_cur(t), *p = top_prev(t);
	int k, n = 0, b;

	if (!s->es_ok)
		return 0;
	for (k = 0; k < SYSHAX_STATS_OPS && n < max; k++) {
		const struct syshax_op_stats *o = &s->es.op[k][0];
		const struct syshax_op_stats *q =
			p && p->es_ok ? &p->es.op[k][0] : NULL;
		double dt = p ? s->t - p->t : 0;
		uint64_t runs = 0, pruns = 0;

		memset(&r[n], 0, sizeof(r[n]));
		r[n].name = op_names[k];
		r[n].jobs = o->jobs;
		r[n].failed = o->failed;
		r[n].tokens = o->tokens;
		for (b = 0; b < SYSHAX_STATS_BATCH_BUCKETS; b++) {
			runs += o->batch_hist[b];
			pruns += q ? q->batch_hist[b] : 0;
		}
		r[n].batches = runs;
		if (q) {
			r[n].jobs_s = delta(o->jobs, q->jobs, dt);
			r[n].tokens_s = delta(o->tokens, q->tokens, dt);
			if (runs > pruns)
				r[n].batch = (double)(o->tokens - q->tokens) /
					     (double)(runs - pruns);
		}
		if (!r[n].batch && runs)
			r[n].batch = (double)o->tokens / (double)runs;
		n++;
	}
	return n;
}

const char *top_backend_name(const struct top *t)
{
	return t->backend == SYSHAX_BACKEND_KERNEL ? "module" : "syshaxd";
}

double top_uptime(const struct top *t)
{
	return top_now() - (t->broker_start >= 0 ? t->broker_start : t->start);
}

void top_fmt_bytes(char *buf, size_t len, uint64_t b)
{
	static const char *const unit[] = { "B", "K", "M", "G", "T" };
	double v = (double)b;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%lluB", (unsigned long long)b);
	else
		snprintf(buf, len, v < 10 ? "%.1f%s" : "%.0f%s", v, unit[u]);
}

void top_fmt_dur(char *buf, size_t len, double s)
{
	unsigned long long x = s > 0 ? (unsigned long long)s : 0;

	if (x >= 86400)
		snprintf(buf, len, "%llud %02llu:%02llu:%02llu", x / 86400,
			 x / 3600 % 24, x / 60 % 60, x % 60);
	else
		snprintf(buf, len, "%02llu:%02llu:%02llu", x / 3600,
			 x / 60 % 60, x % 60);
}
