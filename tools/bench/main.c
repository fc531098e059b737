// SPDX-License-Identifier: MIT
/*
 * syshax-bench: sysHAX benchmarks, one subcommand each.
 *
 *   syshax-bench <command> [options]     (command --help for its options)
 *
 * A subcommand is one entry in g_commands and a bench_<name>_main() in
 * its own file, declared in bench.h.
 */
#include <stdio.h>
#include <string.h>

#include "bench.h"

struct command {
	const char *name;
	int (*main)(int argc, char **argv);
	const char *help;
};

static const struct command g_commands[] = {
	{ "kernels", bench_kernels_main,
	  "CPU kernels vs machine limits, ggml and oneDNN" },
	{ "ffn", bench_ffn_main,
	  "FFN jobs through syshaxd: overhead vs bare kernels, clients" },
	{ "e2e", bench_e2e_main,
	  "whole decode steps through syshaxd vs llama.cpp, same GGUF file" },
	{ "nop", bench_nop_main,
	  "NOP job round trips on each backend (latency, jobs/s)" },
	{ "ppl", bench_ppl_main,
	  "perplexity through PREFILL jobs vs llama.cpp, same text and GGUF" },
#ifdef BENCH_SERVE
	{ "serve", bench_serve_main,
	  "streaming clients on syshax-serve vs llama.cpp batching, one GGUF" },
#endif
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: syshax-bench <command> [options]\n"
		   "       syshax-bench <command> --help\n\ncommands:\n");
	for (i = 0; i < sizeof(g_commands) / sizeof(g_commands[0]); i++)
		fprintf(f, "  %-10s %s\n", g_commands[i].name,
			g_commands[i].help);
	fprintf(f, "\nEvery command prints a table, or JSON with --json.\n");
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	for (i = 0; i < sizeof(g_commands) / sizeof(g_commands[0]); i++)
		if (!strcmp(argv[1], g_commands[i].name))
			return g_commands[i].main(argc - 1, argv + 1);
	fprintf(stderr, "syshax-bench: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
