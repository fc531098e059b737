// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * SVE variant, vector-length agnostic: predicated loads cover K tails and
 * blocks at any vector length (qemu -cpu max runs it at 512 bits). Float
 * weights stream at full width. Q8_0 / Q4_0 blocks are decoded by the NEON
 * helper, then dotted with svdot over the 32 quants in as many vectors as
 * the length needs (one from 256 bits up).
 */
#include <arm_sve.h>

#include "neon.h"

/* ---- float weights ---- */

INLINE svfloat32_t load_w(enum shxk_type t, svbool_t pg, const uint8_t *row,
			  size_t e)
{
	if (t == SHXK_F16)
		return svcvt_f32_f16_x(pg, svreinterpret_f16_u32(
			svld1uh_u32(pg, (const uint16_t *)row + e)));
	if (t == SHXK_BF16)
		return svreinterpret_f32_u32(svlsl_n_u32_x(pg,
			svld1uh_u32(pg, (const uint16_t *)row + e), 16));
	return svld1_f32(pg, (const float *)row + e);
}

/* Adds row r's share: w(row r) * x into acc (SVE values can't be in arrays). */
#define SVE_ROW(r, acc)							\
	do {								\
		if (R > (r))						\
			acc = svmla_f32_m(pg, acc, load_w(t, pg,	\
				a->w + (n + (r)) * a->wstride, e), xv);	\
	} while (0)

/* R (1 or 4) weight rows from n times activation row i. */
INLINE void float_tile(const struct shxk_gemm_args *a, enum shxk_type t,
		       size_t n, size_t i, const int R)
{
	const float *x = (const float *)(a->act + i * a->astride);
	svfloat32_t acc0 = svdup_n_f32(0.0f), acc1 = acc0, acc2 = acc0, acc3 = acc0;
	svbool_t all = svptrue_b32();

	for (size_t e = 0; e < a->k; e += svcntw()) {
		svbool_t pg = svwhilelt_b32_u64(e, a->k);
		svfloat32_t xv = svld1_f32(pg, x + e);

		SVE_ROW(0, acc0);
		SVE_ROW(1, acc1);
		SVE_ROW(2, acc2);
		SVE_ROW(3, acc3);
	}
	shxk_store(a, i, n, svaddv_f32(all, acc0));
	if (R > 1) {
		shxk_store(a, i, n + 1, svaddv_f32(all, acc1));
		shxk_store(a, i, n + 2, svaddv_f32(all, acc2));
		shxk_store(a, i, n + 3, svaddv_f32(all, acc3));
	}
}

INLINE void gemm_float(const struct shxk_gemm_args *a, enum shxk_type t)
{
	size_t n = a->n0;

	for (; n + 4 <= a->n1; n += 4)
		for (size_t i = 0; i < a->m; i++)
			float_tile(a, t, n, i, 4);
	for (; n < a->n1; n++)
		for (size_t i = 0; i < a->m; i++)
			float_tile(a, t, n, i, 1);
}

static void gemm_f32(const struct shxk_gemm_args *a)
{
	gemm_float(a, SHXK_F32);
}

static void gemm_f16(const struct shxk_gemm_args *a)
{
	gemm_float(a, SHXK_F16);
}

static void gemm_bf16(const struct shxk_gemm_args *a)
{
	gemm_float(a, SHXK_BF16);
}

/* ---- Q8_0 / Q4_0 ---- */

/* Weight row n times activation row i, both layouts. */
INLINE void quant_row(const struct shxk_gemm_args *a, int q4, int x8,
		      size_t n, size_t i)
{
	const uint8_t *ar = a->act + i * a->astride;
	svfloat32_t acc = svdup_n_f32(0.0f);

	for (size_t j = 0; j < a->k / SHXK_QK; j++) {
		int8_t w[SHXK_QK];
		int8x16_t lo, hi;
		float dw = shxk_neon_block(a, q4, x8, n, j, &lo, &hi);
		svint32_t dot = svdup_n_s32(0);

		vst1q_s8(w, lo);
		vst1q_s8(w + 16, hi);
		for (size_t o = 0; o < SHXK_QK; o += svcntb()) {
			svbool_t pg = svwhilelt_b8_u64(o, SHXK_QK);

			dot = svdot_s32(dot, svld1_s8(pg, w + o),
					svld1_s8(pg, (const int8_t *)ar + j * SHXK_QK + o));
		}
		acc = svmla_n_f32_x(svptrue_b32(), acc, svcvt_f32_s32_x(svptrue_b32(), dot),
				    dw * shxk_act_d(ar, a->k)[j]);
	}
	shxk_store(a, i, n, svaddv_f32(svptrue_b32(), acc));
}

INLINE void gemm_quant(const struct shxk_gemm_args *a, int q4, int x8)
{
	for (size_t n = a->n0; n < a->n1; n++)
		for (size_t i = 0; i < a->m; i++)
			quant_row(a, q4, x8, n, i);
}

static void gemm_q8_0(const struct shxk_gemm_args *a)
{
	gemm_quant(a, 0, 0);
}

static void gemm_q4_0(const struct shxk_gemm_args *a)
{
	gemm_quant(a, 1, 0);
}

static void gemm_x8_q8_0(const struct shxk_gemm_args *a)
{
	gemm_quant(a, 0, 1);
}

static void gemm_x8_q4_0(const struct shxk_gemm_args *a)
{
	gemm_quant(a, 1, 1);
}

const struct shxk_ops shxk_ops_sve = {
	.name = "sve",
	.quant = {
		[SHXK_F16] = shxk_quant_f16_generic,
		[SHXK_BF16] = shxk_quant_bf16_generic,
		[SHXK_Q8_0] = shxk_quant_q8_0_generic,
		[SHXK_Q4_0] = shxk_quant_q4_0_generic,
	},
	.act_q8 = shxk_act_q8_neon,
	.gemm = {
		[SHXK_F32] = gemm_f32,
		[SHXK_F16] = gemm_f16,
		[SHXK_BF16] = gemm_bf16,
		[SHXK_Q8_0] = gemm_q8_0,
		[SHXK_Q4_0] = gemm_q4_0,
	},
	.gemm_x8 = {
		[SHXK_Q8_0] = gemm_x8_q8_0,
		[SHXK_Q4_0] = gemm_x8_q4_0,
	},
	.attn_tile = shxk_attn_tile_neon,
	.swiglu = shxk_swiglu_generic,
	.widen = shxk_widen_neon,
};
