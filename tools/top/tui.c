// SPDX-License-Identifier: MIT
/*
 * syshax-top's live screen (ncurses): a header, then the panels memory,
 * jobs (with sparklines), CPU engine and contexts. Keys: q quit, p pause,
 * s sort, + and - the interval, h help. KEY_RESIZE redraws from scratch.
 */
#include <curses.h>
#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "top.h"

enum { SORT_BYTES, SORT_JOBS, SORT_DONE, SORT_PID, SORT_N };
static const char *const sort_name[SORT_N] = {
	"bytes", "jobs in flight", "jobs done", "pid",
};

struct ui {
	struct top *t;
	double interval;
	int paused, help, sort, utf8;
	const char *msg;
};

/* One screen row from column 0, clipped to the width (ncurses would wrap
 * a longer one onto the next row). */
static void __attribute__((format(printf, 2, 3))) put(int y, const char *fmt,
						       ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	mvaddnstr(y, 0, buf, COLS);
}

static uint64_t sort_key(const struct syshax_ctx_stat *c, int sort)
{
	switch (sort) {
	case SORT_BYTES:
		return c->buf_bytes;
	case SORT_JOBS:
		return c->jobs_queued + c->jobs_inflight + c->eng_held;
	case SORT_DONE:
		return c->jobs_completed + c->eng_done;
	default:
		return (uint64_t)(uint32_t)c->pid;
	}
}

static int g_sort;

static int ctx_cmp(const void *a, const void *b)
{
	uint64_t x = sort_key(a, g_sort), y = sort_key(b, g_sort);

	if (g_sort == SORT_PID)
		return x < y ? -1 : x > y;
	return x > y ? -1 : x < y;
}

/* A sparkline of the last w values of h, scaled to their maximum. */
static void spark(const struct ui *u, const double *h, int n, int w)
{
	static const char *const blocks[8] = {
		"\u2581", "\u2582", "\u2583", "\u2584",
		"\u2585", "\u2586", "\u2587", "\u2588",
	};
	static const char ascii[] = "_.-:=+*#";
	double max = 0;
	int i, first, room = COLS - getcurx(stdscr) - 1;

	if (w > room)
		w = room;
	if (w <= 0)
		return;
	first = TOP_HIST - (w < n ? w : n);

	for (i = first; i < TOP_HIST; i++)
		if (h[i] > max)
			max = h[i];
	for (i = first; i < TOP_HIST; i++) {
		int k = max > 0 ? (int)(h[i] / max * 7.0 + 0.5) : 0;

		if (k < 0)
			k = 0;
		if (k > 7)
			k = 7;
		if (u->utf8)
			addstr(blocks[k]);
		else
			addch((chtype)ascii[k]);
	}
}

static void title(int y, const char *s)
{
	attron(A_BOLD | A_REVERSE);
	mvhline(y, 0, ' ', COLS);
	put(y, " %s", s);
	attroff(A_BOLD | A_REVERSE);
}

static int draw_header(struct ui *u, int y)
{
	struct top *t = u->t;
	char up[32], be[96];

	top_fmt_dur(up, sizeof(up), top_uptime(t));

	if (t->backend == SYSHAX_BACKEND_KERNEL)
		snprintf(be, sizeof(be), "module (UAPI %u)",
			 t->ver.uapi_version);
	else
		snprintf(be, sizeof(be), "syshaxd pid %d (UAPI %u)",
			 t->broker_pid, t->ver.uapi_version);
	put(y, "syshax-top  backend: %s  up %s%s", be, up,
	    t->broker_start >= 0 ? "" : " (top)");
	mvchgat(y, 0, 10, A_BOLD, 0, NULL);
	put(y + 1, "NUMA nodes %d  CPU kernels %s  refresh %.1fs  sort: %s%s",
	    t->nr_nodes, t->isa, u->interval, sort_name[u->sort],
	    u->paused ? "  [PAUSED]" : "");
	put(y + 2, "CPU %s", t->cpu);
	return y + 4;
}

static int draw_memory(struct ui *u, int y)
{
	struct top *t = u->t;
	const struct top_sample *s = top_cur(t);
	char a[32], b[32], line[128];
	int n, nodes = top_nodes_in_use(t);

	top_fmt_bytes(a, sizeof(a), s->st.pinned_bytes);
	top_fmt_bytes(b, sizeof(b), t->ver.max_pinned);
	snprintf(line, sizeof(line), "Pinned memory  %s / %s, %llu buffers",
		 a, b, (unsigned long long)s->st.nr_bufs);
	title(y++, line);
	put(y++, "%-5s %9s %6s  %-22s %s", "node", "pinned", "bufs",
	    "share of cap", "hugepages free/total");
	for (n = 0; n < nodes && y < LINES - 1; n++, y++) {
		int i, w = 20, fill = t->ver.max_pinned ?
			(int)((double)s->st.node_bytes[n] * w /
			      (double)t->ver.max_pinned + 0.5) : 0;
		char bar[24], hp[48];

		for (i = 0; i < w; i++)
			bar[i] = i < fill ? '|' : ' ';
		bar[w] = 0;
		top_fmt_bytes(a, sizeof(a), s->st.node_bytes[n]);
		if (s->hp_free[n] >= 0)
			snprintf(hp, sizeof(hp), "%ld/%ld", s->hp_free[n],
				 s->hp_total[n]);
		else
			snprintf(hp, sizeof(hp), "-");
		put(y, "%-5d %9s %6llu  [%s] %s", n, a,
		    (unsigned long long)s->st.node_bufs[n], bar, hp);
	}
	return y + 1;
}

static int draw_jobs(struct ui *u, int y)
{
	struct top *t = u->t;
	const struct top_sample *s = top_cur(t);
	double p50 = top_lat_pct(t, 0.5, 1), p99 = top_lat_pct(t, 0.99, 1);
	int w = COLS - 16;
	char lat[64];

	title(y++, "Engines and queue");
	put(y++, "engines %u  contexts %u  queued %llu  in flight %llu"
	    "  failed %llu  cancelled %llu", s->st.engines,
	    s->st.contexts, (unsigned long long)s->st.queue_depth,
	    (unsigned long long)s->st.inflight,
	    (unsigned long long)s->st.jobs_failed,
	    (unsigned long long)s->st.jobs_cancelled);
	if (p50 >= 0)
		snprintf(lat, sizeof(lat), "p50 <%.0fus p99 <%.0fus", p50, p99);
	else
		snprintf(lat, sizeof(lat), "p50 - p99 -");
	put(y++, "jobs/s submitted %.0f  completed %.0f  failed %.0f  "
	    "latency %s", t->sub_rate, t->done_rate, t->fail_rate, lat);
	if (w > 8 && y < LINES - 1) {
		put(y, "jobs/s   %6.0f ", t->done_rate);
		spark(u, t->hist_jobs, t->hist_n, w);
		y++;
	}
	if (w > 8 && y < LINES - 1) {
		put(y, "tokens/s %6.0f ", t->tok_rate);
		spark(u, t->hist_tok, t->hist_n, w);
		y++;
	}
	return y + 1;
}

static int draw_engine(struct ui *u, int y)
{
	struct top *t = u->t;
	const struct top_sample *s = top_cur(t);
	struct top_op_rate r[SYSHAX_STATS_OPS];
	int i, n = top_op_rates(t, r, SYSHAX_STATS_OPS);
	uint64_t all = s->es.decode_deferred + s->es.decode_kept;

	title(y++, "CPU engine");
	if (!n) {
		put(y++, "no ENGINE_STATS: %s",
		    t->es_why ? t->es_why : "-");
		return y + 1;
	}
	put(y++, "%u threads on %u nodes  decode deferred %.1f%% "
	    "(%llu of %llu)", s->es.nr_threads, s->es.nr_nodes,
	    all ? 100.0 * (double)s->es.decode_deferred / (double)all : 0,
	    (unsigned long long)s->es.decode_deferred,
	    (unsigned long long)all);
	put(y++, "%-12s %10s %12s %8s %12s %8s", "op", "jobs/s",
	    "tokens/s", "batch", "jobs", "failed");
	for (i = 0; i < n && y < LINES - 1; i++)
		put(y++, "%-12s %10.0f %12.0f %8.1f %12llu %8llu",
		    r[i].name, r[i].jobs_s, r[i].tokens_s, r[i].batch,
		    (unsigned long long)r[i].jobs,
		    (unsigned long long)r[i].failed);
	return y + 1;
}

static int draw_contexts(struct ui *u, int y)
{
	struct top *t = u->t;
	const struct top_sample *s = top_cur(t);
	struct syshax_ctx_stat *v;
	char a[32], line[128];
	int i;

	snprintf(line, sizeof(line), "Contexts  %u open", s->st.contexts);
	title(y++, line);
	if (s->nr_ctx < 0) {
		put(y++, "per-context figures: %s",
		    syshax_strerror(s->nr_ctx));
		return y;
	}
	attron(A_BOLD);
	put(y++, "%6s %7s %-16s %-6s %5s %9s %7s %8s %10s", "CTX",
	    "PID", "COMMAND", "ROLE", "BUFS", "BYTES", "QUEUED",
	    "INFLIGHT", "DONE");
	attroff(A_BOLD);
	v = malloc(sizeof(*v) * (size_t)(s->nr_ctx ? s->nr_ctx : 1));
	if (!v)
		return y;
	memcpy(v, s->ctx, sizeof(*v) * (size_t)s->nr_ctx);
	g_sort = u->sort;
	qsort(v, (size_t)s->nr_ctx, sizeof(*v), ctx_cmp);
	for (i = 0; i < s->nr_ctx && y < LINES - 1; i++, y++) {
		top_fmt_bytes(a, sizeof(a), v[i].buf_bytes);
		put(y, "%6u %7d %-16.16s %-6s %5llu %9s %7llu %8llu "
		    "%10llu%s", v[i].ctx_id, v[i].pid, v[i].comm,
		    v[i].flags & SYSHAX_CTX_ENGINE ? "engine" : "client",
		    (unsigned long long)v[i].nr_bufs, a,
		    (unsigned long long)v[i].jobs_queued,
		    (unsigned long long)(v[i].jobs_inflight +
					      v[i].eng_held),
			 (unsigned long long)(v[i].jobs_completed +
					      v[i].eng_done),
			 v[i].flags & SYSHAX_CTX_SELF ? " *" : "");
	}
	free(v);
	return y;
}

static void draw_help(void)
{
	static const char *const lines[] = {
		"syshax-top keys",
		"",
		"  q      quit",
		"  p      pause / resume sampling",
		"  s      sort contexts: bytes, jobs in flight, done, pid",
		"  + / -  refresh interval longer / shorter",
		"  h      this help (any key closes it)",
		"",
		"  * marks syshax-top's own context (its ENGINE_STATS",
		"    buffer and jobs are in the figures).",
	};
	int n = (int)(sizeof(lines) / sizeof(lines[0])), i, w = 60;
	int y0 = (LINES - n - 2) / 2, x0 = (COLS - w) / 2;

	if (y0 < 0)
		y0 = 0;
	if (x0 < 0)
		x0 = 0;
	for (i = 0; i < n + 2; i++) {
		mvhline(y0 + i, x0, ' ', w);
		if (i && i <= n)
			mvaddnstr(y0 + i, x0 + 2, lines[i - 1], w - 4);
	}
	attron(A_REVERSE);
	mvhline(y0, x0, ' ', w);
	mvhline(y0 + n + 1, x0, ' ', w);
	attroff(A_REVERSE);
}

static void draw(struct ui *u)
{
	int y = 0;

	erase();
	y = draw_header(u, y);
	if (y < LINES - 1)
		y = draw_memory(u, y);
	if (y < LINES - 1)
		y = draw_jobs(u, y);
	if (y < LINES - 1)
		y = draw_engine(u, y);
	if (y < LINES - 1)
		draw_contexts(u, y);
	attron(A_REVERSE);
	mvhline(LINES - 1, 0, ' ', COLS);
	put(LINES - 1, " q quit  p pause  s sort  +/- interval  h help%s%s",
	    u->msg ? "  | " : "", u->msg ? u->msg : "");
	attroff(A_REVERSE);
	if (u->help)
		draw_help();
	refresh();
}

int top_tui(struct top *t, double interval)
{
	const char *term = getenv("TERM");
	struct ui u = { .t = t, .interval = interval };
	double next;
	int ch, ret = 0;

	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		fprintf(stderr, "syshax-top: not a terminal: use --once, "
			"--json or --prometheus for a snapshot\n");
		return 1;
	}
	if (!term || !*term || !strcmp(term, "dumb")) {
		fprintf(stderr, "syshax-top: TERM is %s: the screen needs a "
			"terminal that can address the cursor; use --once, "
			"--json or --prometheus\n", term && *term ? term : "unset");
		return 1;
	}
	setlocale(LC_ALL, "");
	u.utf8 = !strcmp(nl_langinfo(CODESET), "UTF-8");
	if (!newterm(NULL, stdout, stdin)) {
		fprintf(stderr, "syshax-top: cannot draw on TERM=%s\n", term);
		return 1;
	}
	cbreak();
	noecho();
	curs_set(0);
	keypad(stdscr, TRUE);
	timeout(100);
	next = top_now() + u.interval;
	draw(&u);
	for (;;) {
		ch = getch();
		if (u.help && ch != ERR && ch != KEY_RESIZE) {
			u.help = 0;
			draw(&u);
			continue;
		}
		switch (ch) {
		case 'q':
		case 'Q':
			goto out;
		case 'p':
			u.paused = !u.paused;
			u.msg = u.paused ? "paused" : NULL;
			break;
		case 's':
			u.sort = (u.sort + 1) % SORT_N;
			break;
		case '+':
		case '=':
			u.interval = u.interval < 10 ? u.interval * 2 : 20;
			break;
		case '-':
			u.interval = u.interval > 0.2 ? u.interval / 2 : 0.1;
			break;
		case 'h':
		case '?':
			u.help = 1;
			break;
		case KEY_RESIZE:
			clear();
			break;
		case ERR:
			if (u.paused || top_now() < next)
				continue;
			next = top_now() + u.interval;
			ret = top_sample(t);
			if (ret) {
				u.msg = syshax_strerror(ret);
				if (ret == -EPIPE || ret == -ECONNRESET)
					goto out;
			}
			break;
		default:
			continue;
		}
		draw(&u);
	}
out:
	endwin();
	if (ret == -EPIPE || ret == -ECONNRESET) {
		fprintf(stderr, "syshax-top: the broker went away (%s)\n",
			syshax_strerror(ret));
		return 2;
	}
	return 0;
}
