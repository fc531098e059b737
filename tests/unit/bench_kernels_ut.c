// SPDX-License-Identifier: MIT
/*
 * syshax-bench kernels end to end on a tiny configuration: every case
 * runs without error, the JSON carries every row, and a missing peer is
 * named rather than failing the run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "../t_cunit.h"

/* Runs the subcommand with stdout in a buffer; returns its exit status. */
static int run(char **argv, int argc, char *out, size_t len)
{
	int saved = dup(STDOUT_FILENO), rc;
	FILE *f = tmpfile();
	size_t n;

	CU_ASSERT_FATAL(saved >= 0 && f);
	fflush(stdout);
	dup2(fileno(f), STDOUT_FILENO);
	rc = bench_kernels_main(argc, argv);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	rewind(f);
	n = fread(out, 1, len - 1, f);
	out[n] = 0;
	fclose(f);
	return rc;
}

static size_t count(const char *s, const char *what)
{
	size_t n = 0;

	while ((s = strstr(s, what))) {
		n++;
		s += strlen(what);
	}
	return n;
}

static char g_out[1 << 16];

static void t_json(void)
{
	char *argv[] = { "kernels", "--json", "--shapes", "768x2048",
			 "--types", "q4_0,f16", "--m", "1,8", "--threads", "1",
			 "--no-ggml", "--no-dnnl", "--budget", "3", NULL };

	CU_ASSERT_EQUAL(run(argv, 14, g_out, sizeof(g_out)), 0);
	/* 2 types x 2 M x 1 thread count, plus 2 attention rows. */
	CU_ASSERT_EQUAL(count(g_out, "\"type\": "), 4);
	CU_ASSERT_EQUAL(count(g_out, "\"seqs\": "), 2);
	CU_ASSERT_EQUAL(count(g_out, "\"error\": 0"), 6);
	CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "\"ggml\": null"));
	CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "disabled (--no-ggml)"));
	CU_ASSERT_PTR_NULL(strstr(g_out, "\"us\": null"));
}

static void t_wide(void)
{
	char *argv[] = { "kernels", "--json", "--wide", "--shapes", "768x2048",
			 "--types", "q4_0", "--threads", "1", "--no-ggml",
			 "--no-dnnl", "--no-attn", "--budget", "1", NULL };

	/* --wide's M list (1, 2, 3, 4, 8, 16, 32, 64) under --shapes. */
	CU_ASSERT_EQUAL(run(argv, 14, g_out, sizeof(g_out)), 0);
	CU_ASSERT_EQUAL(count(g_out, "\"type\": "), 8);
	CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "\"m\": 3, "));
	CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "\"m\": 64, "));
	CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "\"ggml_rp_us\": null"));
}

static void t_missing_ggml(void)
{
	char *argv[] = { "kernels", "--ggml", "/nonexistent", "--no-dnnl",
			 "--no-attn", "--shapes", "2048x768", "--types", "q8_0",
			 "--m", "1", "--threads", "1", "--budget", "3", NULL };

	/* Our rows still run; the header says why ggml is not there. */
	CU_ASSERT_EQUAL(run(argv, 15, g_out, sizeof(g_out)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "not measured: /nonexistent"));
	CU_ASSERT_PTR_NOT_NULL(strstr(g_out, "2048x768    q8_0"));
}

static void t_attn_heads(void)
{
	char *argv[] = { "kernels", "--json", "--attn-heads", "28/4,40/8",
			 "--shapes", "2048x768", "--types", "q8_0", "--m", "1",
			 "--threads", "1", "--no-ggml", "--no-dnnl", "--budget",
			 "1", NULL };

	/* One pair of rows (1 and 8 sequences) per head set, each named. */
	CU_ASSERT_EQUAL(run(argv, 16, g_out, sizeof(g_out)), 0);
	CU_ASSERT_EQUAL(count(g_out, "\"seqs\": "), 4);
	CU_ASSERT_EQUAL(count(g_out, "\"q_heads\": 28, \"kv_heads\": 4"), 2);
	CU_ASSERT_EQUAL(count(g_out, "\"q_heads\": 40, \"kv_heads\": 8"), 2);
	CU_ASSERT_EQUAL(count(g_out, "\"seqs\": 1, \"threads\": 1, \"error\": 0"), 2);
	CU_ASSERT_EQUAL(count(g_out, "\"seqs\": 8, \"threads\": 1, \"error\": 0"), 2);
}

static void t_usage(void)
{
	char *bad[] = { "kernels", "--shapes", "100x100", NULL };
	char *heads[] = { "kernels", "--attn-heads", "32/5", NULL };
	char *zero[] = { "kernels", "--attn-heads", "32/0", NULL };

	CU_ASSERT_EQUAL(run(bad, 3, g_out, sizeof(g_out)), 2);
	/* KV heads must divide the query heads. */
	CU_ASSERT_EQUAL(run(heads, 3, g_out, sizeof(g_out)), 2);
	CU_ASSERT_EQUAL(run(zero, 3, g_out, sizeof(g_out)), 2);
}

static const struct t_test g_tests[] = {
	{ "JSON rows", t_json },
	{ "wide M list", t_wide },
	{ "missing ggml", t_missing_ggml },
	{ "attention heads", t_attn_heads },
	{ "usage error", t_usage },
};

int main(void)
{
	return T_RUN_SUITE("bench kernels", NULL, NULL, g_tests);
}
