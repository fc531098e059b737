// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Arm variant choice from the kernel's hwcaps (getauxval), built without
 * ISA flags. NRC=2|4 picks the i8mm tile height (weight rows per pass).
 */
#include <asm/hwcap.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
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

/* MIDR_EL1 implementer and part numbers of the server cores we target. */
static const struct {
	unsigned impl, part;
	const char *name;
} g_cores[] = {
	{ 0x41, 0xd0c, "Arm Neoverse-N1" },
	{ 0x41, 0xd40, "Arm Neoverse-V1" },
	{ 0x41, 0xd49, "Arm Neoverse-N2" },
	{ 0x41, 0xd4f, "Arm Neoverse-V2" },
	{ 0x48, 0xd01, "HiSilicon Kunpeng 920 (TaiShan v110)" },
	{ 0x48, 0xd02, "HiSilicon TaiShan v120" },
};

void shxk_cpu_probe(struct shxk_cpu_info *ci)
{
	uint64_t midr;
	unsigned impl, part;

	memset(ci, 0, sizeof(*ci));
	ci->amx_perm = -ENODEV;
	/* The kernel emulates EL0 reads of the ID registers (HWCAP_CPUID). */
	if (!(getauxval(AT_HWCAP) & HWCAP_CPUID)) {
		snprintf(ci->model, sizeof(ci->model), "unknown Arm CPU");
		return;
	}
	__asm__ volatile("mrs %0, MIDR_EL1" : "=r"(midr));
	impl = (midr >> 24) & 0xff;
	part = (midr >> 4) & 0xfff;
	snprintf(ci->model, sizeof(ci->model), "Arm CPU (MIDR implementer "
		 "0x%02x part 0x%03x)", impl, part);
	for (size_t i = 0; i < sizeof(g_cores) / sizeof(g_cores[0]); i++)
		if (g_cores[i].impl == impl && g_cores[i].part == part)
			snprintf(ci->model, sizeof(ci->model), "%s",
				 g_cores[i].name);
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
