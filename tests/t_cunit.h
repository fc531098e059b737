/* SPDX-License-Identifier: MIT */
/*
 * The main() of the tree's CUnit programs (tests/unit, tests/kmod): one
 * suite from a table of tests, run verbosely, and an exit status that is
 * non-zero on any failure.
 */
#ifndef T_CUNIT_H
#define T_CUNIT_H

#include <stddef.h>

#include <CUnit/Basic.h>

struct t_test {
	const char *name;
	void (*fn)(void);
};

/*
 * Runs tests[] as the suite name (init and clean may be NULL): 0 when all
 * passed; 1 when an assertion, a test, the suite's setup or teardown, or
 * registering them failed.
 */
static inline int t_run_suite(const char *name, CU_InitializeFunc init,
			      CU_CleanupFunc clean, const struct t_test *tests,
			      size_t n)
{
	unsigned int failed;
	CU_pSuite s;
	size_t i;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite(name, init, clean);
	for (i = 0; s && i < n; i++)
		if (!CU_add_test(s, tests[i].name, tests[i].fn))
			s = NULL;
	if (!s) {
		CU_cleanup_registry();
		return 1;
	}
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures() + CU_get_number_of_suites_failed() +
		 CU_get_number_of_tests_failed();
	CU_cleanup_registry();
	return failed ? 1 : 0;
}

#define T_RUN_SUITE(name, init, clean, tests)				\
	t_run_suite(name, init, clean, tests, sizeof(tests) / sizeof(tests[0]))

#endif /* T_CUNIT_H */
