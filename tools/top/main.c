// SPDX-License-Identifier: MIT
/*
 * syshax-top: live device and queue stats of sysHAX, against the module or
 * syshaxd (whichever syshax_open() finds, or --device), as a screen or as
 * one snapshot (--once, --json, --prometheus).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "top.h"

static void usage(FILE *f)
{
	fprintf(f,
"usage: syshax-top [--device PATH] [--interval S] [--once | --json | --prometheus]\n"
"\n"
"Live sysHAX stats: pinned memory per NUMA node, contexts, the job queue\n"
"and latency, the CPU engine per op.\n"
"\n"
"  -d, --device PATH  /dev/syshax or a syshaxd socket (default: as\n"
"                     syshax_open() finds them: $SYSHAX_DEVICE, /dev/syshax,\n"
"                     then syshaxd's socket)\n"
"  -i, --interval S   refresh interval in seconds (default 1; 0.1 to 20);\n"
"                     snapshots sample twice, S apart, for the rates\n"
"      --once         one plain-text snapshot on stdout\n"
"      --json         one JSON snapshot\n"
"      --prometheus   one snapshot in the Prometheus text format\n"
"  -h, --help         this text\n"
"\n"
"Keys: q quit, p pause, s sort, + / - interval, h help.\n"
"Exit status: 0; 1 no terminal for the screen or the backend cannot be\n"
"opened; 2 usage.\n");
}

static void sleep_s(double s)
{
	struct timespec ts = { .tv_sec = (time_t)s,
			       .tv_nsec = (long)((s - (double)(time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts))
		;
}

int main(int argc, char **argv)
{
	enum { O_SCREEN, O_ONCE, O_JSON, O_PROM } mode = O_SCREEN;
	static const struct option opts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "interval", required_argument, NULL, 'i' },
		{ "once", no_argument, NULL, 'o' },
		{ "json", no_argument, NULL, 'j' },
		{ "prometheus", no_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *device = NULL;
	double interval = 1;
	struct top *t;
	char *end;
	int c, ret;

	while ((c = getopt_long(argc, argv, "d:i:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			device = optarg;
			break;
		case 'i':
			interval = strtod(optarg, &end);
			if (*end || !(interval >= 0.1 && interval <= 20)) {
				fprintf(stderr, "syshax-top: --interval: 0.1 to "
					"20 seconds, not '%s'\n", optarg);
				return 2;
			}
			break;
		case 'o':
			mode = O_ONCE;
			break;
		case 'j':
			mode = O_JSON;
			break;
		case 'P':
			mode = O_PROM;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return 1;
	t->device = device;
	ret = top_init(t);
	if (ret) {
		fprintf(stderr, "syshax-top: cannot open %s: %s (syshax-check "
			"says why)\n", t->device ? t->device :
			"a sysHAX backend", syshax_strerror(ret));
		top_fini(t);
		free(t);
		return 1;
	}
	ret = top_sample(t);
	if (!ret && mode != O_SCREEN) {
		sleep_s(mode == O_SCREEN ? 0 : interval < 1 ? interval : 0.5);
		ret = top_sample(t);
	}
	if (ret) {
		fprintf(stderr, "syshax-top: STATS: %s\n", syshax_strerror(ret));
		top_fini(t);
		free(t);
		return 1;
	}
	switch (mode) {
	case O_ONCE:
		top_print_plain(t, stdout);
		break;
	case O_JSON:
		ret = top_print_json(t, stdout) ? 1 : 0;
		break;
	case O_PROM:
		top_print_prometheus(t, stdout);
		break;
	default:
		ret = top_tui(t, interval);
		break;
	}
	top_fini(t);
	free(t);
	return ret;
}
