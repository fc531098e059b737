// SPDX-License-Identifier: MIT
/* syshax_strerror(): sysHAX meanings, libc's for the rest, any sign. */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <CUnit/Basic.h>

#include "../t_cunit.h"

#include "syshax/rt.h"

static void t_syshax_meanings(void)
{
	CU_ASSERT_STRING_EQUAL(syshax_strerror(-EAGAIN),
			       "Job queue full: reap completions and retry");
	CU_ASSERT_STRING_EQUAL(syshax_strerror(-EPIPE),
			       "Engine went away while running the job");
	CU_ASSERT_STRING_EQUAL(syshax_strerror(-EBADF), "Unknown buffer handle");
}

static void t_sign(void)
{
	CU_ASSERT_PTR_EQUAL(syshax_strerror(-ERANGE), syshax_strerror(ERANGE));
	CU_ASSERT_PTR_EQUAL(syshax_strerror(-ENOMEM), syshax_strerror(ENOMEM));
}

static void t_libc_and_unknown(void)
{
	CU_ASSERT_STRING_EQUAL(syshax_strerror(-ENOMEM),
			       "Cannot allocate memory");
	CU_ASSERT_PTR_NOT_NULL(syshax_strerror(-99999));
	CU_ASSERT_STRING_EQUAL(syshax_strerror(-99999), "Unknown error");
}

/* The ends of int: no overflow on the way (the SAN build stops on UBSan's
 * report), a text all the same. */
static void t_extremes(void)
{
	CU_ASSERT_PTR_NOT_NULL_FATAL(syshax_strerror(INT_MIN));
	CU_ASSERT_STRING_EQUAL(syshax_strerror(INT_MIN), "Unknown error");
	CU_ASSERT_PTR_NOT_NULL_FATAL(syshax_strerror(INT_MAX));
	CU_ASSERT_STRING_EQUAL(syshax_strerror(INT_MAX), "Unknown error");
	CU_ASSERT_STRING_EQUAL(syshax_strerror(-INT_MAX), "Unknown error");
	CU_ASSERT_STRING_EQUAL(syshax_strerror(EAGAIN),
			       "Job queue full: reap completions and retry");
	CU_ASSERT_PTR_NOT_NULL(syshax_strerror(0));
}

int main(void)
{
	static const struct t_test tests[] = {
		{ "sysHAX meanings", t_syshax_meanings },
		{ "negative and positive alike", t_sign },
		{ "libc text, unknown errors", t_libc_and_unknown },
		{ "INT_MIN, INT_MAX: no overflow", t_extremes },
	};

	return T_RUN_SUITE("strerror", NULL, NULL, tests);
}
