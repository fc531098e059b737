// SPDX-License-Identifier: MIT
/*
 * The conformance suite: one program, run against whichever backend
 * syshax_open(NULL) reaches ($SYSHAX_DEVICE, /dev/syshax, syshaxd's socket).
 * It starts its own engine ($SYSHAX_ENGINE_CMD, else syshaxd --engine-only)
 * and expects no other engine to be attached. Exits 77 when no backend can
 * be reached.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "t.h"

extern struct syshax *g_stats_sh;

static int (*const g_suites[])(void) = {
	t_add_basic, t_add_badref, t_add_wait, t_add_engine, t_add_ctx_stats, t_add_queue,
	t_add_stress, t_add_reuse,
	t_add_kill,
};

/* The suite's stats context and the engines' only. */
static bool only_ours(const struct syshax_stats_args *st, void *arg)
{
	(void)arg;
	return st->contexts == 1 + st->engines;
}

/* Last: after every case, nothing is left behind (closes are seen by the
 * broker a little later, hence the polling). */
static void t_nothing_left(void)
{
	struct syshax_stats_args st;

	CU_ASSERT_EQUAL(t_stats_until(t_no_pinned, NULL, 5 * T_SEC), 0);
	CU_ASSERT_EQUAL(t_stats_until(t_no_jobs, NULL, 5 * T_SEC), 0);
	CU_ASSERT_EQUAL(t_stats_until(only_ours, NULL, 5 * T_SEC), 0);
	CU_ASSERT_EQUAL(t_stats(&st), 0);
	CU_ASSERT_EQUAL(st.pinned_bytes, 0);
	CU_ASSERT_EQUAL(st.nr_bufs, 0);
	CU_ASSERT_EQUAL(st.contexts, 1 + st.engines);
}

static int setup(void)
{
	struct syshax_version_args v;
	struct syshax_stats_args st;
	int ret = syshax_open(&g_stats_sh, NULL);

	if (ret) {
		printf("SKIP: conformance: no sysHAX backend reachable (%s); "
		       "set SYSHAX_DEVICE or start syshaxd\n",
		       syshax_strerror(ret));
		return 77;
	}
	if (syshax_version(g_stats_sh, &v) || !(v.features & SYSHAX_FEAT_JOBS)) {
		printf("SKIP: conformance: the backend has no jobs\n");
		return 77;
	}
	if (t_stats(&st) || st.engines) {
		printf("conformance: an engine is already attached; run the "
		       "suite against a broker without engines "
		       "(syshaxd --no-engine) so it can start its own\n");
		return 1;
	}
	printf("conformance: %s backend, UAPI %u, max_submit %u, %s\n",
	       syshax_backend(g_stats_sh) == SYSHAX_BACKEND_KERNEL ?
	       "kernel" : "userspace", v.uapi_version, v.max_submit,
	       (v.features & SYSHAX_FEAT_RINGS) && getenv("SYSHAX_RINGS") &&
	       !strcmp(getenv("SYSHAX_RINGS"), "1") ? "shared rings" :
	       "system calls");
	ret = t_engine_start();
	if (ret) {
		printf("conformance: cannot start the engine: %s\n",
		       syshax_strerror(ret));
		return 1;
	}
	return 0;
}

int main(void)
{
	unsigned int i, failures;
	CU_pSuite s;
	int ret, status;

	ret = setup();
	if (ret)
		return ret;
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	for (i = 0; i < sizeof(g_suites) / sizeof(g_suites[0]); i++)
		if (g_suites[i]())
			return 1;
	s = CU_add_suite("teardown", NULL, NULL);
	if (!s || !CU_add_test(s, "nothing left behind", t_nothing_left))
		return 1;
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failures = CU_get_number_of_failures() +
		   CU_get_number_of_suites_failed() +
		   CU_get_number_of_tests_failed();
	CU_cleanup_registry();

	/* The engine must stop cleanly on SIGTERM. */
	if (t_engine_running()) {
		ret = t_engine_stop(SIGTERM, &status);
		if (ret || !WIFEXITED(status) || WEXITSTATUS(status)) {
			printf("conformance: the engine did not stop cleanly "
			       "(%d, status %#x)\n", ret, status);
			failures++;
		}
	}
	syshax_close(g_stats_sh);
	return failures ? 1 : 0;
}
