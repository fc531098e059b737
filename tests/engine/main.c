// SPDX-License-Identifier: MIT
/*
 * engine_ops: the CPU engine's end-to-end suite. One program, run against
 * whichever backend syshax_open(NULL) reaches ($SYSHAX_DEVICE, /dev/syshax,
 * syshaxd's socket); it starts its own engine ($SYSHAX_ENGINE_CMD, else
 * syshaxd --engine-only --foreground beside it) with --model-dir <a
 * private temporary folder> and --threads $T_ENGINE_THREADS (default 2),
 * writes its weights files there, and checks every op against fp64
 * references. Exits 77 (SKIP, printed) when no backend answers.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "t.h"

#define MAIN_BUF_SIZE	(24u << 20)

static int (*const g_suites[])(void) = {
	t_add_gemm, t_add_ffn, t_add_moe, t_add_attn, t_add_load, t_add_bad,
	t_add_batch, t_add_model,
};

static void rm_dir(const char *dir)
{
	char p[1024];
	struct dirent *e;
	DIR *d;

	if (!dir[0])
		return;
	d = opendir(dir);
	if (d) {
		while ((e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			if (unlink(p))
				rmdir(p);
		}
		closedir(d);
	}
	rmdir(dir);
}

static int make_dirs(void)
{
	const char *tmp = getenv("TMPDIR");

	if (!tmp || !*tmp)
		tmp = "/tmp";
	snprintf(g_model_dir, 512, "%s/engine_ops.XXXXXX", tmp);
	snprintf(g_out_dir, 512, "%s/engine_ops_out.XXXXXX", tmp);
	if (!mkdtemp(g_model_dir)) {
		g_model_dir[0] = '\0';
		return -errno;
	}
	if (!mkdtemp(g_out_dir)) {
		g_out_dir[0] = '\0';
		return -errno;
	}
	return 0;
}

static int setup(void)
{
	struct syshax_version_args v;
	struct syshax_stats_args st;
	struct syshax *probe;
	uint64_t t0;
	int ret = syshax_open(&probe, NULL);

	if (ret) {
		printf("SKIP: engine_ops: no sysHAX backend reachable (%s); "
		       "set SYSHAX_DEVICE or start syshaxd\n",
		       syshax_strerror(ret));
		return 77;
	}
	syshax_close(probe);
	ret = tc_open(&g_c, MAIN_BUF_SIZE);
	if (ret) {
		printf("engine_ops: cannot open a context with a %u MiB "
		       "buffer: %s\n", MAIN_BUF_SIZE >> 20,
		       syshax_strerror(ret));
		return 1;
	}
	if (syshax_version(g_c.sh, &v) || !(v.features & SYSHAX_FEAT_JOBS)) {
		printf("SKIP: engine_ops: the backend has no jobs\n");
		return 77;
	}
	memset(&st, 0, sizeof(st));
	if (syshax_stats(g_c.sh, &st) || st.engines) {
		printf("engine_ops: an engine is already attached; run the "
		       "suite against a broker without engines (syshaxd "
		       "--no-engine) so it can start its own\n");
		return 1;
	}
	ret = make_dirs();
	if (ret) {
		printf("engine_ops: temporary folders: %s\n", strerror(-ret));
		return 1;
	}
	printf("engine_ops: %s backend, engine with %u worker threads, "
	       "model_dir %s\n", syshax_backend(g_c.sh) ==
	       SYSHAX_BACKEND_KERNEL ? "kernel" : "userspace",
	       t_engine_threads(), g_model_dir);
	t0 = t_now_ns();
	ret = t_engine_start();
	if (ret) {
		printf("engine_ops: cannot start the engine: %s\n",
		       syshax_strerror(ret));
		return 1;
	}
	printf("engine_ops: the engine attached in %.1f s\n",
	       (double)(t_now_ns() - t0) / 1e9);
	return 0;
}

int main(void)
{
	unsigned int i, failures;
	uint64_t t0 = t_now_ns();
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ret = setup();
	if (ret) {
		if (g_c.sh)
			tc_close(&g_c);
		rm_dir(g_model_dir);
		rm_dir(g_out_dir);
		return ret;
	}
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	for (i = 0; i < T_ARRAY_SIZE(g_suites); i++)
		if (g_suites[i]())
			return 1;
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failures = CU_get_number_of_failures() +
		   CU_get_number_of_suites_failed() +
		   CU_get_number_of_tests_failed();
	CU_cleanup_registry();

	/* The engine must stop cleanly on SIGTERM. */
	if (t_engine_stop())
		failures++;
	tc_close(&g_c);
	rm_dir(g_model_dir);
	rm_dir(g_out_dir);
	printf("engine_ops: %s in %.1f s\n", failures ? "FAILED" : "passed",
	       (double)(t_now_ns() - t0) / 1e9);
	return failures ? 1 : 0;
}
