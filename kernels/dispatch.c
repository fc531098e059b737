// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Picks the ISA variant once: SYSHAX_ISA when set, else the best the
 * arch's cpu-feats.c reports. Later calls return the first call's result.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

const struct shxk_ops shxk_ops_generic = {
	.name = "generic",
	.quant = {
		[SHXK_F16] = shxk_quant_f16_generic,
		[SHXK_BF16] = shxk_quant_bf16_generic,
		[SHXK_Q8_0] = shxk_quant_q8_0_generic,
		[SHXK_Q4_0] = shxk_quant_q4_0_generic,
	},
	.act_q8 = shxk_act_q8_generic,
	.gemm = {
		[SHXK_F32] = shxk_gemm_f32_generic,
		[SHXK_F16] = shxk_gemm_f16_generic,
		[SHXK_BF16] = shxk_gemm_bf16_generic,
		[SHXK_Q8_0] = shxk_gemm_q8_0_generic,
		[SHXK_Q4_0] = shxk_gemm_q4_0_generic,
	},
	.gemm_x8 = {
		[SHXK_Q8_0] = shxk_gemm_x8_q8_0_generic,
		[SHXK_Q4_0] = shxk_gemm_x8_q4_0_generic,
	},
	.attn_tile = shxk_attn_tile_generic,
	.swiglu = shxk_swiglu_generic,
	.widen = shxk_widen_generic,
};

/* Atomic: a thread that skipped shxk_init() still reads a whole pointer. */
static _Atomic(const struct shxk_ops *) g_ops = &shxk_ops_generic;
static int g_init_err;
static struct shxk_cpu_info g_cpu;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void init_once(void)
{
	const char *want = getenv("SYSHAX_ISA");
	const struct shxk_ops *ops;

	shxk_cpu_probe(&g_cpu);
	if (want && !*want)
		want = NULL;
	ops = shxk_cpu_select(want, &g_init_err);
	if (ops)
		atomic_store_explicit(&g_ops, ops, memory_order_release);
}

int shxk_init(void)
{
	pthread_once(&g_once, init_once);
	return g_init_err;
}

const char *shxk_isa_name(void)
{
	return shxk_ops_current()->name;
}

void shxk_cpu_info(struct shxk_cpu_info *ci)
{
	shxk_init();
	*ci = g_cpu;
}

int shxk_cpu_describe(char *buf, size_t len)
{
	struct shxk_cpu_info ci;

	shxk_cpu_info(&ci);
#if defined(__x86_64__) || defined(__i386__)
	if (ci.amx)
		return snprintf(buf, len, "%s; kernels %s; AMX%s%s%s %s%s", ci.model,
				shxk_isa_name(),
				ci.amx & SHXK_AMX_TILE ? " tile" : "",
				ci.amx & SHXK_AMX_INT8 ? " int8" : "",
				ci.amx & SHXK_AMX_BF16 ? " bf16" : "",
				ci.amx_perm ? "refused by the kernel: " :
					      "usable",
				ci.amx_perm ? strerror(-ci.amx_perm) : "");
	return snprintf(buf, len, "%s; kernels %s; AMX none", ci.model,
			shxk_isa_name());
#else
	return snprintf(buf, len, "%s; kernels %s", ci.model, shxk_isa_name());
#endif
}

const struct shxk_ops *shxk_ops_current(void)
{
	return atomic_load_explicit(&g_ops, memory_order_acquire);
}
