// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * x86 variant choice. Built without ISA flags: it runs before we know
 * what the CPU has. A variant needs its cpuid bits and the OS saving its
 * register state (XCR0), else its first instruction would fault.
 */
#include <cpuid.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../../internal.h"

#define XCR0_AVX	0x06	/* SSE + AVX state */
#define XCR0_AVX512	0xe6	/* + opmask, ZMM_Hi256, Hi16_ZMM */
#define XCR0_AMX	0x60000	/* XTILECFG, XTILEDATA */

/* asm/prctl.h (Linux 5.16), which Debian's libc headers do not carry. */
/* CPUID.(7,0):EDX */
#define CPUID7_AMX_BF16		(1u << 22)
#define CPUID7_AMX_TILE		(1u << 24)
#define CPUID7_AMX_INT8		(1u << 25)

#define ARCH_GET_XCOMP_PERM	0x1022
#define ARCH_REQ_XCOMP_PERM	0x1023
#define XFEATURE_XTILEDATA	18

static uint64_t xcr0(void)
{
	uint32_t lo, hi;

	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return (uint64_t)hi << 32 | lo;
}

static int has_avx2(void)
{
	unsigned a, b, c, d;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) ||
	    !(c & bit_FMA) || !(c & bit_F16C) ||
	    (xcr0() & XCR0_AVX) != XCR0_AVX)
		return 0;
	return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_AVX2);
}

/* vpdpbusd on zmm and ymm needs F, BW (byte ops), VL and VNNI. */
static int has_avx512(void)
{
	unsigned a, b, c, d;

	if (!has_avx2() || (xcr0() & XCR0_AVX512) != XCR0_AVX512 ||
	    !__get_cpuid_count(7, 0, &a, &b, &c, &d))
		return 0;
	return (b & bit_AVX512F) && (b & bit_AVX512BW) && (b & bit_AVX512VL) &&
	       (c & bit_AVX512VNNI);
}

/* vdpbf16ps: CPUID.(7,1):EAX bit 5, on top of the avx512 variant. */
static int has_avx512bf16(void)
{
	unsigned a, b, c, d;

	return has_avx512() && __get_cpuid_count(7, 1, &a, &b, &c, &d) &&
	       (a & bit_AVX512BF16);
}

/*
 * The amx variant: avx512bf16, AMX tiles, int8 and bf16, and the tile state this
 * process was granted (shxk_cpu_probe asks for it first). Built with
 * SHXK_AMX_MODEL (the test build, amx_model.h), the tiles are C code and
 * avx512bf16 is enough.
 */
static int has_amx(void)
{
#ifdef SHXK_AMX_MODEL
	return has_avx512bf16();
#else
	unsigned a, b, c, d;
	unsigned long perm = 0;

	return has_avx512bf16() && __get_cpuid_count(7, 0, &a, &b, &c, &d) &&
	       (d & CPUID7_AMX_TILE) && (d & CPUID7_AMX_INT8) &&
	       (d & CPUID7_AMX_BF16) &&
	       !syscall(SYS_arch_prctl, ARCH_GET_XCOMP_PERM, &perm) &&
	       (perm & (1ul << XFEATURE_XTILEDATA));
#endif
}

/* The brand string, leading and trailing blanks dropped. */
static void brand(char *buf, size_t len)
{
	unsigned r[12];
	char s[sizeof(r) + 1];
	size_t i, n;

	snprintf(buf, len, "unknown x86 CPU");
	if (__get_cpuid_max(0x80000000, NULL) < 0x80000004)
		return;
	for (i = 0; i < 3; i++)
		__get_cpuid(0x80000002 + i, &r[4 * i], &r[4 * i + 1],
			    &r[4 * i + 2], &r[4 * i + 3]);
	memcpy(s, r, sizeof(r));
	s[sizeof(r)] = 0;
	i = strspn(s, " ");
	n = strlen(s);
	while (n > i && s[n - 1] == ' ')
		n--;
	if (n > i)
		snprintf(buf, len, "%.*s", (int)(n - i), s + i);
}

/*
 * " (family F model M)" after the brand, as /proc/cpuinfo numbers them:
 * the brand alone does not tell Zen 3 from Zen 4 ("AMD EPYC" in a VM).
 */
static void family_model(char *buf, size_t len)
{
	unsigned a, b, c, d, fam, mod;
	size_t n = strlen(buf);

	if (!__get_cpuid(1, &a, &b, &c, &d))
		return;
	fam = (a >> 8) & 0xf;
	mod = (a >> 4) & 0xf;
	if (fam == 0xf)
		fam += (a >> 20) & 0xff;
	if (fam >= 6)
		mod |= ((a >> 16) & 0xf) << 4;
	snprintf(buf + n, len - n, " (family %u model %u)", fam, mod);
}

void shxk_cpu_probe(struct shxk_cpu_info *ci)
{
	unsigned a, b, c, d;

	memset(ci, 0, sizeof(*ci));
	brand(ci->model, sizeof(ci->model));
	family_model(ci->model, sizeof(ci->model));
	ci->amx_perm = -ENODEV;
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
		return;
	ci->amx = (d & CPUID7_AMX_TILE ? SHXK_AMX_TILE : 0) |
		  (d & CPUID7_AMX_INT8 ? SHXK_AMX_INT8 : 0) |
		  (d & CPUID7_AMX_BF16 ? SHXK_AMX_BF16 : 0);
	if (!(ci->amx & SHXK_AMX_TILE))
		return;
	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) ||
	    (xcr0() & XCR0_AMX) != XCR0_AMX) {
		ci->amx_perm = -EOPNOTSUPP;	/* kernel before 5.16 */
		return;
	}
	ci->amx_perm = syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM,
			       XFEATURE_XTILEDATA) ? -errno : 0;
}

static const struct {
	const char *name;
	const struct shxk_ops *ops;
	int (*probe)(void);
} g_variants[] = {	/* best first */
	{ "amx", &shxk_ops_amx, has_amx },
	{ "avx512bf16", &shxk_ops_avx512bf16, has_avx512bf16 },
	{ "avx512", &shxk_ops_avx512, has_avx512 },
	{ "avx2", &shxk_ops_avx2, has_avx2 },
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
