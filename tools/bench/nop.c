// SPDX-License-Identifier: MIT
/*
 * syshax-bench nop: NOP round-trip latency (p50, p99) and jobs/s at batch 1
 * and batch 64, on each backend and each job path:
 *
 *   socket/ioctl  the old path: a system call per SUBMIT and per WAIT
 *                 ($SYSHAX_RINGS=0);
 *   ring          the shared rings, every side sleeping when idle
 *                 ($SYSHAX_RINGS=1);
 *   ring+poll     the rings with the client spinning in syshax_wait()
 *                 ($SYSHAX_WAIT_SPIN_US) and the daemon's broker and engine
 *                 threads polling (syshaxd --engine-poll-us);
 *
 * with an io_uring NOP round trip (liburing) measured the same way as the
 * anchor: io_uring_enter for submit and wait, and SQPOLL with a spinning
 * reaper. The userspace backend runs against a syshaxd started here on a
 * private socket (one per path), the kernel one when /dev/syshax exists
 * (with an engine started here if none is attached). A path the backend
 * does not offer is a row of n/a, the reason on stderr.
 */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef SYSHAX_BENCH_URING
#include <liburing.h>
#endif

#include "beside.h"
#include "bench.h"
#include "privd.h"
#include "syshax/rt.h"

#define DEV_PATH	"/dev/syshax"
#define MAX_BATCH	64
#define POLL_US_DEFAULT	1000
#define NBATCH		2

static const unsigned int batches[NBATCH] = { 1, MAX_BATCH };

enum nop_path { PATH_OLD, PATH_RING, PATH_POLL, NPATHS };
enum nop_backend { BK_USER, BK_KERNEL, BK_URING, NBACKENDS };

static const char *const backend_names[NBACKENDS] = {
	"userspace", "kernel", "io_uring",
};
/* Row labels; the old path is a socket on syshaxd, ioctls on the module;
 * io_uring's are "enter" (system calls) and "sqpoll". */
static const char *const path_names[NBACKENDS][NPATHS] = {
	{ "socket", "ring", "ring+poll" },
	{ "ioctl", "ring", "ring+poll" },
	{ "enter", "sqpoll", NULL },
};

struct nop_result {
	const char *backend;
	const char *mode;
	unsigned int batch;
	unsigned int rounds;
	const char *na;			/* not measured: why (else NULL) */
	double p50_us, p99_us, jobs_per_s;
};

#define MAX_RESULTS	(NBACKENDS * NPATHS * NBATCH)

struct nop_run {
	struct nop_result res[MAX_RESULTS];
	unsigned int nres;
	unsigned int rounds;
	unsigned int poll_us;
	char exe[4096];
};

/* One round trip of `batch` NOPs: submit them all, reap them all. */
typedef int (*nop_round_fn)(void *arg, unsigned int batch);

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * rounds round trips after rounds / 10 unmeasured ones, each timed from
 * before the submit to after the last completion is reaped; jobs/s over
 * the measured rounds' wall time.
 */
static int measure(nop_round_fn round, void *arg, unsigned int batch,
		   unsigned int rounds, struct nop_result *r)
{
	unsigned int warm = rounds / 10, i;
	double *lat = calloc(rounds, sizeof(*lat));
	uint64_t start = 0;
	int ret = 0;

	if (!lat)
		return -ENOMEM;
	for (i = 0; i < warm + rounds && !ret; i++) {
		uint64_t t0 = bench_now_ns();

		if (i == warm)
			start = t0;
		ret = round(arg, batch);
		if (i >= warm)
			lat[i - warm] = (double)(bench_now_ns() - t0) / 1e3;
	}
	if (!ret) {
		double secs = (double)(bench_now_ns() - start) / 1e9;

		qsort(lat, rounds, sizeof(*lat), cmp_double);
		r->batch = batch;
		r->rounds = rounds;
		r->p50_us = lat[rounds / 2];
		r->p99_us = lat[(size_t)((rounds - 1) * 0.99)];
		r->jobs_per_s = (double)batch * rounds / secs;
	}
	free(lat);
	return ret;
}

static struct nop_result *add_row(struct nop_run *run, enum nop_backend b,
				  enum nop_path p, unsigned int batch)
{
	struct nop_result *r = &run->res[run->nres++];

	memset(r, 0, sizeof(*r));
	r->backend = backend_names[b];
	r->mode = path_names[b][p];
	r->batch = batch;
	r->rounds = run->rounds;
	return r;
}

/* Rows of n/a for both batch sizes; the reason once on stderr. */
static void not_available(struct nop_run *run, enum nop_backend b,
			  enum nop_path p, const char *why)
{
	unsigned int i;

	fprintf(stderr, "syshax-bench nop: %s %s: n/a: %s\n",
		backend_names[b], path_names[b][p], why);
	for (i = 0; i < NBATCH; i++)
		add_row(run, b, p, batches[i])->na = why;
}

/* Both batch sizes through round(arg); 0 or the first error. */
static int measure_rows(struct nop_run *run, enum nop_backend b,
			enum nop_path p, nop_round_fn round, void *arg)
{
	unsigned int i;

	for (i = 0; i < NBATCH; i++) {
		struct nop_result *r = add_row(run, b, p, batches[i]);
		int ret = measure(round, arg, batches[i], run->rounds, r);

		if (ret) {
			run->nres--;
			return ret;
		}
	}
	return 0;
}

/* ---- sysHAX ------------------------------------------------------------ */

/* The jobs are built once: the round trip is the path's, not the
 * caller's filling of 64 x 512 bytes. */
struct syshax_bench {
	struct syshax *sh;
	struct syshax_job jobs[MAX_BATCH];
};

static int syshax_round(void *arg, unsigned int batch)
{
	struct syshax_bench *x = arg;
	struct syshax *sh = x->sh;
	struct syshax_completion cpls[MAX_BATCH];
	unsigned int got = 0, k;
	int ret;

	ret = syshax_submit(sh, x->jobs, batch);
	if (ret >= 0 && (unsigned int)ret != batch)
		return -EAGAIN;	/* nothing else is queued: a bug */
	if (ret < 0)
		return ret;
	while (got < batch) {
		int n = syshax_wait(sh, cpls, batch - got, batch - got,
				    (int64_t)PRIVD_START_NS);

		if (n < 0)
			return n;
		for (k = 0; k < (unsigned int)n; k++)
			if (cpls[k].status)
				return cpls[k].status;
		got += (unsigned int)n;
	}
	return 0;
}

/*
 * The environment the library reads at syshax_open() (and the daemon this
 * bench starts inherits: its engine threads use the same library), set
 * explicitly for every path so that the caller's does not leak in.
 */
static void set_path_env(enum nop_path p, unsigned int poll_us)
{
	char us[16];

	snprintf(us, sizeof(us), "%u", p == PATH_POLL ? poll_us : 0);
	setenv("SYSHAX_RINGS", p == PATH_OLD ? "0" : "1", 1);
	setenv("SYSHAX_WAIT_SPIN_US", us, 1);
}

/* The rings are there when the backend says so; else the library would
 * quietly take the old path, and the row would be a lie. */
static const char *rings_missing(struct syshax *sh)
{
	struct syshax_version_args v;

	if (syshax_version(sh, &v))
		return "VERSION failed";
#ifdef SYSHAX_FEAT_RINGS
	if (!(v.features & SYSHAX_FEAT_RINGS))
		return "the backend does not report SYSHAX_FEAT_RINGS";
	return NULL;
#else
	return "this build's UAPI has no rings (SYSHAX_FEAT_RINGS)";
#endif
}

/*
 * ring+poll keeps a CPU busy per polling thread: the client, the engine
 * thread and, on syshaxd, the broker thread. With fewer CPUs than that
 * the pollers take turns (they yield between looks), and the figures
 * include those switches, not only what polling gives: say so.
 */
static void warn_pollers(enum nop_backend b)
{
	int pollers = b == BK_USER ? 3 : 2;
	cpu_set_t set;
	int cpus;

	if (sched_getaffinity(0, sizeof(set), &set))
		return;
	cpus = CPU_COUNT(&set);
	if (cpus < pollers)
		fprintf(stderr, "syshax-bench nop: %s ring+poll: %d polling "
			"threads on %d CPUs take turns: the figures include "
			"their switches\n", backend_names[b], pollers, cpus);
}

/* /dev/syshax, with an engine of our own (extra: its options) when none is
 * attached; *ours says whether the engine is ours. */
static int start_kernel(const char *exe, char *const *extra,
			struct privd *d, struct syshax **sh, int *ours)
{
	struct syshax_open_opts oo = {
		.backend = SYSHAX_BACKEND_KERNEL,
		.path = DEV_PATH,
	};
	struct syshax_stats_args st;
	int ret = syshax_open(sh, &oo);

	*ours = 0;
	if (ret)
		return ret;
	ret = syshax_stats(*sh, &st);
	if (ret || st.engines)
		return ret;
	*ours = 1;
	return privd_start_engine(exe, extra, DEV_PATH, d, *sh);
}

/* One backend on one path: the two batch sizes or rows of n/a. Returns 0,
 * or an error that is not the path's absence. */
static int run_syshax(struct nop_run *run, enum nop_backend b,
		      enum nop_path p)
{
	char us[16], opt[] = "--engine-poll-us";
	char *poll_argv[] = { opt, us, NULL };
	char *const *extra = p == PATH_POLL ? poll_argv : NULL;
	static char why[NPATHS][160];
	struct privd d = { 0 };
	struct syshax *sh = NULL;
	const char *missing = NULL;
	int ret, ours = 1;

	snprintf(us, sizeof(us), "%u", run->poll_us);
	set_path_env(p, run->poll_us);
	ret = b == BK_KERNEL ? start_kernel(run->exe, extra, &d, &sh, &ours) :
	      privd_start_userspace(run->exe, extra, &d, &sh);
	if (ret == -ECHILD && p == PATH_POLL) {
		/* The old paths started this daemon: the option is new. */
		snprintf(why[p], sizeof(why[p]), "syshaxd --engine-poll-us "
			 "%u exited at start (its log above)", run->poll_us);
		missing = why[p];
		ret = 0;
	}
	if (!ret && !missing && p != PATH_OLD)
		missing = rings_missing(sh);
	if (!ret && !missing && p == PATH_POLL && !ours)
		missing = "an engine this bench did not start is attached: "
			  "its polling is not ours to set";
	if (!missing && !ret && p == PATH_POLL)
		warn_pollers(b);
	if (missing)
		not_available(run, b, p, missing);
	else if (!ret) {
		struct syshax_bench *x = malloc(sizeof(*x));
		unsigned int k;

		if (!x) {
			ret = -ENOMEM;
		} else {
			x->sh = sh;
			for (k = 0; k < MAX_BATCH; k++)
				syshax_job_init(&x->jobs[k], SYSHAX_OP_NOP, k);
			ret = measure_rows(run, b, p, syshax_round, x);
			free(x);
		}
	}
	if (ret)
		fprintf(stderr, "syshax-bench nop: %s %s: %s\n",
			backend_names[b], path_names[b][p],
			syshax_strerror(ret));
	syshax_close(sh);
	privd_stop(&d);
	return ret;
}

/* ---- io_uring ---------------------------------------------------------- */

#ifdef SYSHAX_BENCH_URING
struct uring_bench {
	struct io_uring ring;
	int sqpoll;
	uint64_t spin_ns;		/* SQPOLL: spin on the CQ this long */
};

static int uring_round(void *arg, unsigned int batch)
{
	struct uring_bench *u = arg;
	struct io_uring_cqe *cqes[MAX_BATCH];
	unsigned int got = 0, k;
	int ret;

	for (k = 0; k < batch; k++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);

		if (!sqe)
			return -EBUSY;
		io_uring_prep_nop(sqe);
		io_uring_sqe_set_data64(sqe, k);
	}
	/* With SQPOLL the count is what the kernel thread had not taken yet. */
	ret = io_uring_submit(&u->ring);
	if (ret >= 0 && (unsigned int)ret != batch && !u->sqpoll)
		return -EAGAIN;
	if (ret < 0)
		return ret;
	while (got < batch) {
		unsigned int n;

		if (u->spin_ns) {
			/* As syshax_wait() with a spin: look (yielding, so
			 * that the SQ thread runs where CPUs are few), then
			 * sleep. */
			uint64_t end = bench_now_ns() + u->spin_ns;

			while (io_uring_cq_ready(&u->ring) < batch - got &&
			       bench_now_ns() < end)
				sched_yield();
		}
		ret = io_uring_wait_cqe_nr(&u->ring, &cqes[0], batch - got);
		if (ret < 0)
			return ret;
		n = io_uring_peek_batch_cqe(&u->ring, cqes, batch - got);
		for (k = 0; k < n; k++)
			if (cqes[k]->res < 0)
				ret = cqes[k]->res;
		io_uring_cq_advance(&u->ring, n);
		if (ret < 0)
			return ret;
		got += n;
	}
	return 0;
}

/* "enter": submit and wait by io_uring_enter; "sqpoll": a kernel thread
 * polls the SQ (idle after poll_us, at least 1 ms), the caller spins on
 * the CQ for poll_us before it waits. */
static int run_uring(struct nop_run *run, enum nop_path p)
{
	static char why[NPATHS][128];
	struct io_uring_params par = { 0 };
	struct uring_bench u = { 0 };
	int ret;

	if (p == PATH_RING) {
		par.flags = IORING_SETUP_SQPOLL;
		par.sq_thread_idle = (run->poll_us + 999) / 1000;
		u.sqpoll = 1;
		u.spin_ns = (uint64_t)run->poll_us * 1000;
	}
	ret = io_uring_queue_init_params(2 * MAX_BATCH, &u.ring, &par);
	if (ret < 0) {
		snprintf(why[p], sizeof(why[p]),
			 "io_uring_queue_init%s: %s",
			 p == PATH_RING ? " (SQPOLL)" : "", strerror(-ret));
		not_available(run, BK_URING, p, why[p]);
		return 0;
	}
	ret = measure_rows(run, BK_URING, p, uring_round, &u);
	if (ret)
		fprintf(stderr, "syshax-bench nop: io_uring %s: %s\n",
			path_names[BK_URING][p], strerror(-ret));
	io_uring_queue_exit(&u.ring);
	return ret;
}
#else
static int run_uring(struct nop_run *run, enum nop_path p)
{
	not_available(run, BK_URING, p, "built without liburing");
	return 0;
}
#endif

/* ---- output ------------------------------------------------------------ */

static void print_json(const struct nop_run *run)
{
	unsigned int i;

	printf("{\"command\": \"nop\", \"poll_us\": %u, \"results\": [",
	       run->poll_us);
	for (i = 0; i < run->nres; i++) {
		const struct nop_result *r = &run->res[i];

		printf("%s\n  {\"backend\": \"%s\", \"mode\": \"%s\", "
		       "\"batch\": %u, \"rounds\": %u, ", i ? "," : "",
		       r->backend, r->mode, r->batch, r->rounds);
		if (r->na)
			printf("\"p50_us\": null, \"p99_us\": null, "
			       "\"jobs_per_s\": null, \"na\": \"%s\"}", r->na);
		else
			printf("\"p50_us\": %.2f, \"p99_us\": %.2f, "
			       "\"jobs_per_s\": %.0f}", r->p50_us, r->p99_us,
			       r->jobs_per_s);
	}
	printf("\n]}\n");
}

static void print_table(const struct nop_run *run)
{
	unsigned int i;

	printf("%-10s %-10s %5s %10s %10s %12s\n", "backend", "mode",
	       "batch", "p50 us", "p99 us", "jobs/s");
	for (i = 0; i < run->nres; i++) {
		const struct nop_result *r = &run->res[i];

		if (r->na)
			printf("%-10s %-10s %5u %10s %10s %12s\n", r->backend,
			       r->mode, r->batch, "n/a", "n/a", "n/a");
		else
			printf("%-10s %-10s %5u %10.2f %10.2f %12.0f\n",
			       r->backend, r->mode, r->batch, r->p50_us,
			       r->p99_us, r->jobs_per_s);
	}
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: syshax-bench nop [--backend all|userspace|kernel|io_uring]\n"
"                        [--mode all|socket|ring|ring+poll] [--rounds N]\n"
"                        [--poll-us N] [--syshaxd PATH] [--json]\n"
"NOP round-trip latency (submit to last completion; p50, p99) and jobs/s at\n"
"batch 1 and 64, on each backend and job path, with io_uring NOPs as the\n"
"anchor. The userspace backend runs against a syshaxd started on a private\n"
"socket; the kernel backend needs /dev/syshax (an engine is started when\n"
"none is attached).\n"
"  --backend B   all (default: each one available), userspace, kernel,\n"
"                io_uring\n"
"  --mode M      all (default), socket (the old path: a socket or ioctls),\n"
"                ring (shared rings, sleeping), ring+poll (rings, client\n"
"                and daemon threads polling)\n"
"  --rounds N    measured round trips per batch size (default 20000)\n"
"  --poll-us N   ring+poll's spin and poll time, io_uring SQPOLL's (default\n"
"                %u)\n"
"  --syshaxd P   the daemon to start (default: beside this program)\n"
"  --json        JSON instead of a table\n", POLL_US_DEFAULT);
}

static int parse_mode(const char *s)
{
	if (!strcmp(s, "all"))
		return NPATHS;
	if (!strcmp(s, "socket") || !strcmp(s, "ioctl"))
		return PATH_OLD;
	if (!strcmp(s, "ring"))
		return PATH_RING;
	if (!strcmp(s, "ring+poll"))
		return PATH_POLL;
	return -1;
}

static int parse_backend(const char *s)
{
	int b;

	if (!strcmp(s, "all"))
		return NBACKENDS;
	for (b = 0; b < NBACKENDS; b++)
		if (!strcmp(s, backend_names[b]))
			return b;
	return -1;
}

int bench_nop_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "backend", required_argument, NULL, 'b' },
		{ "mode", required_argument, NULL, 'm' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "poll-us", required_argument, NULL, 'p' },
		{ "syshaxd", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static struct nop_run run;
	int c, json = 0, failed = 0, backend = NBACKENDS, mode = NPATHS;
	unsigned long poll_us = POLL_US_DEFAULT, rounds = 20000;
	char *end;
	int b, p;

	memset(&run, 0, sizeof(run));
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			backend = parse_backend(optarg);
			break;
		case 'm':
			mode = parse_mode(optarg);
			break;
		case 'r':
			rounds = strtoul(optarg, &end, 10);
			if (*end || !*optarg)
				rounds = 0;
			break;
		case 'p':
			poll_us = strtoul(optarg, &end, 10);
			if (*end || !*optarg)
				poll_us = ~0UL;
			break;
		case 'd':
			snprintf(run.exe, sizeof(run.exe), "%s", optarg);
			break;
		case 'j':
			json = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc || rounds < 100 || rounds > 10000000 ||
	    poll_us > 1000000 || backend < 0 || mode < 0) {
		usage(stderr);
		return 2;
	}
	run.rounds = (unsigned int)rounds;
	run.poll_us = (unsigned int)poll_us;
	if (!run.exe[0]) {
		/* syshaxd beside this program (build/), else on PATH. */
		static const char *const rel[] = { "syshaxd" };

		beside_path(run.exe, sizeof(run.exe), "syshaxd", rel, 1);
	}

	for (b = 0; b < NBACKENDS; b++) {
		if (backend != NBACKENDS && backend != b)
			continue;
		if (b == BK_KERNEL && backend == NBACKENDS &&
		    access(DEV_PATH, F_OK)) {
			fprintf(stderr, "syshax-bench nop: no %s, kernel "
				"backend not measured\n", DEV_PATH);
			continue;
		}
		if (b == BK_URING) {
			/* The anchor: both of its paths whatever --mode. */
			failed |= run_uring(&run, PATH_OLD) != 0;
			failed |= run_uring(&run, PATH_RING) != 0;
			continue;
		}
		for (p = 0; p < NPATHS; p++) {
			if (mode != NPATHS && mode != p)
				continue;
			if (run_syshax(&run, (enum nop_backend)b,
				       (enum nop_path)p))
				failed = 1;
		}
	}

	if (json)
		print_json(&run);
	else
		print_table(&run);
	return failed;
}
