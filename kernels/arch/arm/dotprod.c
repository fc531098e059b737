// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Armv8.2 dotprod variant: the NEON tiles with sdot for the dot products. */
#include "neon.h"

INLINE int32x4_t dot16(int32x4_t acc, int8x16_t w, int8x16_t x)
{
	return vdotq_s32(acc, w, x);
}

#include "qtile.h"

static void gemm_q8_0(const struct shxk_gemm_args *a)
{
	gemm_quant(a, 0, 0, 0);
}

static void gemm_q4_0(const struct shxk_gemm_args *a)
{
	gemm_quant(a, 1, 0, 0);
}

static void gemm_x8_q8_0(const struct shxk_gemm_args *a)
{
	gemm_quant(a, 0, 1, 0);
}

static void gemm_x8_q4_0(const struct shxk_gemm_args *a)
{
	gemm_quant(a, 1, 1, 0);
}

const struct shxk_ops shxk_ops_dotprod = {
	.name = "dotprod",
	.quant = {
		[SHXK_F16] = shxk_quant_f16_generic,
		[SHXK_BF16] = shxk_quant_bf16_generic,
		[SHXK_Q8_0] = shxk_quant_q8_0_generic,
		[SHXK_Q4_0] = shxk_quant_q4_0_generic,
	},
	.act_q8 = shxk_act_q8_neon,
	.gemm = {
		[SHXK_F32] = shxk_gemm_f32_neon,
		[SHXK_F16] = shxk_gemm_f16_neon,
		[SHXK_BF16] = shxk_gemm_bf16_neon,
		[SHXK_Q8_0] = gemm_q8_0,
		[SHXK_Q4_0] = gemm_q4_0,
	},
	.gemm_x8 = {
		[SHXK_Q8_0] = gemm_x8_q8_0,
		[SHXK_Q4_0] = gemm_x8_q4_0,
	},
	.attn_tile = shxk_attn_tile_generic,
	.swiglu = shxk_swiglu_generic,
	.widen = shxk_widen_neon,
};
