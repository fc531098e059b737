// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * x86 variant choice. Built without ISA flags: it runs before we know
 * what the CPU has. A variant needs its cpuid bits and the OS saving its
 * register state (XCR0), else its first instruction would fault.
 */
#include <errno.h>
#include <string.h>

#include "../../internal.h"

static const struct {
	const char *name;
	const struct shxk_ops *ops;
	int (*probe)(void);
} g_variants[] = {	/* best first */
	{ "generic", &shxk_ops_generic, NULL },
};

static const char *const g_other_arch[] = { "neon", "dotprod", "i8mm", "sve" };

const struct shxk_ops *shxk_cpu_select(const char *want, int *err)
{
	*err = 0;
	for (size_t i = 0; i < sizeof(g_variants) / sizeof(g_variants[0]); i++) {
		int ok = !g_variants[i].probe || g_variants[i].probe();

		if (!want && ok)
			return g_variants[i].ops;
		if (want && !strcmp(want, g_variants[i].name)) {
			if (ok)
				return g_variants[i].ops;
			*err = -ENOTSUP;
			return NULL;
		}
	}
	*err = -EINVAL;
	for (size_t i = 0; i < sizeof(g_other_arch) / sizeof(g_other_arch[0]); i++)
		if (!strcmp(want, g_other_arch[i]))
			*err = -ENOTSUP;
	return NULL;
}
