// SPDX-License-Identifier: MIT
/*
 * syshax-bench nop: NOP round-trip latency (p50, p99) and jobs/s at batch 1
 * and batch 64, on each backend: the userspace one through a syshaxd this
 * command starts on a private socket, the kernel one when /dev/syshax
 * exists (with an engine started here if none is attached).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "beside.h"
#include "bench.h"
#include "privd.h"
#include "syshax/rt.h"

#define DEV_PATH	"/dev/syshax"
#define MAX_BATCH	64

struct nop_result {
	const char *backend;
	unsigned int batch;
	unsigned int rounds;
	double p50_us, p99_us, jobs_per_s;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* /dev/syshax, with an engine of our own when none is attached. */
static int start_kernel(const char *exe, struct privd *d,
			struct syshax **sh)
{
	struct syshax_open_opts oo = {
		.backend = SYSHAX_BACKEND_KERNEL,
		.path = DEV_PATH,
	};
	struct syshax_stats_args st;
	int ret = syshax_open(sh, &oo);

	if (ret)
		return ret;
	ret = syshax_stats(*sh, &st);
	if (ret || st.engines)
		return ret;
	return privd_start_engine(exe, NULL, DEV_PATH, d, *sh);
}

/* rounds round trips of `batch` NOPs after `warm` unmeasured ones. */
static int measure(struct syshax *sh, unsigned int batch, unsigned int warm,
		   unsigned int rounds, struct nop_result *r)
{
	struct syshax_job jobs[MAX_BATCH];
	struct syshax_completion cpls[MAX_BATCH];
	double *lat = calloc(rounds, sizeof(*lat));
	uint64_t start = 0;
	unsigned int i, k;
	int ret = 0;

	if (!lat)
		return -ENOMEM;
	for (k = 0; k < batch; k++)
		syshax_job_init(&jobs[k], SYSHAX_OP_NOP, k);
	for (i = 0; i < warm + rounds && !ret; i++) {
		uint64_t t0 = bench_now_ns();
		unsigned int got = 0;

		if (i == warm)
			start = t0;
		ret = syshax_submit(sh, jobs, batch);
		if (ret >= 0 && (unsigned int)ret != batch)
			ret = -EAGAIN;	/* nothing else is queued: a bug */
		if (ret < 0)
			break;
		ret = 0;
		while (got < batch) {
			int n = syshax_wait(sh, cpls, batch - got, batch - got,
					    (int64_t)PRIVD_START_NS);

			if (n < 0) {
				ret = n;
				break;
			}
			for (k = 0; k < (unsigned int)n; k++)
				if (cpls[k].status)
					ret = cpls[k].status;
			got += (unsigned int)n;
		}
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

static void usage(FILE *f)
{
	fprintf(f,
"usage: syshax-bench nop [--backend all|userspace|kernel] [--rounds N]\n"
"                        [--syshaxd PATH] [--json]\n"
"NOP round-trip latency (submit to last completion; p50, p99) and jobs/s at\n"
"batch 1 and 64. The userspace backend runs against a syshaxd started on a\n"
"private socket; the kernel backend needs /dev/syshax (an engine is started\n"
"when none is attached).\n"
"  --backend B   all (default: each one available), userspace, kernel\n"
"  --rounds N    measured round trips per batch size (default 20000)\n"
"  --syshaxd P   the daemon to start (default: beside this program)\n"
"  --json        JSON instead of a table\n");
}

int bench_nop_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "backend", required_argument, NULL, 'b' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "syshaxd", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const unsigned int batches[] = { 1, MAX_BATCH };
	struct nop_result res[4];
	const char *backend = "all";
	unsigned int rounds = 20000, nres = 0, b, i;
	char exe[4096] = "";
	int c, json = 0, failed = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			backend = optarg;
			break;
		case 'r':
			rounds = (unsigned int)strtoul(optarg, NULL, 10);
			break;
		case 'd':
			snprintf(exe, sizeof(exe), "%s", optarg);
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
	if (rounds < 100 || (strcmp(backend, "all") &&
			     strcmp(backend, "userspace") &&
			     strcmp(backend, "kernel"))) {
		usage(stderr);
		return 2;
	}
	if (!exe[0]) {
		/* syshaxd beside this program (build/), else on PATH. */
		static const char *const rel[] = { "syshaxd" };

		beside_path(exe, sizeof(exe), "syshaxd", rel, 1);
	}

	for (b = 0; b < 2; b++) {
		const char *name = b ? "kernel" : "userspace";
		struct privd d = { 0 };
		struct syshax *sh = NULL;
		int ret;

		if (strcmp(backend, "all") && strcmp(backend, name))
			continue;
		if (b && !strcmp(backend, "all") && access(DEV_PATH, F_OK)) {
			fprintf(stderr, "syshax-bench nop: no %s, kernel "
				"backend not measured\n", DEV_PATH);
			continue;
		}
		ret = b ? start_kernel(exe, &d, &sh) :
			  privd_start_userspace(exe, NULL, &d, &sh);
		for (i = 0; !ret && i < 2; i++) {
			ret = measure(sh, batches[i], rounds / 10, rounds,
				      &res[nres]);
			if (!ret)
				res[nres++].backend = name;
		}
		if (ret) {
			fprintf(stderr, "syshax-bench nop: %s backend: %s\n",
				name, syshax_strerror(ret));
			failed = 1;
		}
		syshax_close(sh);
		privd_stop(&d);
	}

	if (json) {
		printf("{\"command\": \"nop\", \"results\": [");
		for (i = 0; i < nres; i++)
			printf("%s\n  {\"backend\": \"%s\", \"batch\": %u, "
			       "\"rounds\": %u, \"p50_us\": %.2f, "
			       "\"p99_us\": %.2f, \"jobs_per_s\": %.0f}",
			       i ? "," : "", res[i].backend, res[i].batch,
			       res[i].rounds, res[i].p50_us, res[i].p99_us,
			       res[i].jobs_per_s);
		printf("\n]}\n");
	} else {
		printf("%-10s %5s %10s %10s %12s\n", "backend", "batch",
		       "p50 us", "p99 us", "jobs/s");
		for (i = 0; i < nres; i++)
			printf("%-10s %5u %10.2f %10.2f %12.0f\n",
			       res[i].backend, res[i].batch, res[i].p50_us,
			       res[i].p99_us, res[i].jobs_per_s);
	}
	return failed;
}
