// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Arm variant choice from the kernel's hwcaps (getauxval), built without
 * ISA flags. NRC=2|4 picks the i8mm tile height (weight rows per pass).
 */
#include <asm/hwcap.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "../../internal.h"

static int has_neon(void)
{
	return !!(getauxval(AT_HWCAP) & HWCAP_ASIMD);
}

static int has_dotprod(void)
{
	return has_neon() && (getauxval(AT_HWCAP) & HWCAP_ASIMDDP);
}

static int has_i8mm(void)
{
	return has_dotprod() && (getauxval(AT_HWCAP2) & HWCAP2_I8MM);
}

static int has_sve(void)
{
	return has_neon() && (getauxval(AT_HWCAP) & HWCAP_SVE);
}

static const struct {
	const char *name;
	const struct shxk_ops *ops;
	int (*probe)(void);
} g_variants[] = {	/* best first: i8mm does two rows in one smmla */
	{ "i8mm", &shxk_ops_i8mm4, has_i8mm },
	{ "sve", &shxk_ops_sve, has_sve },
	{ "dotprod", &shxk_ops_dotprod, has_dotprod },
	{ "neon", &shxk_ops_neon, has_neon },
	{ "generic", &shxk_ops_generic, NULL },
};

static const char *const g_other_arch[] = { "avx2", "avx512" };

const struct shxk_ops *shxk_cpu_select(const char *want, int *err)
{
	const char *nrc = getenv("NRC");
	const struct shxk_ops *i8mm = &shxk_ops_i8mm4;

	*err = 0;
	if (nrc && *nrc) {
		if (!strcmp(nrc, "2"))
			i8mm = &shxk_ops_i8mm2;
		else if (strcmp(nrc, "4")) {
			*err = -EINVAL;
			return NULL;
		}
	}
	for (size_t i = 0; i < sizeof(g_variants) / sizeof(g_variants[0]); i++) {
		int ok = !g_variants[i].probe || g_variants[i].probe();
		const struct shxk_ops *ops = g_variants[i].ops == &shxk_ops_i8mm4 ?
					     i8mm : g_variants[i].ops;

		if (!want && ok)
			return ops;
		if (want && !strcmp(want, g_variants[i].name)) {
			if (ok)
				return ops;
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
