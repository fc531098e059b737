/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * NEON pieces the dotprod, i8mm and SVE tables share: activation
 * quantization, float GEMMs, attention rows and the weight-block loader
 * for both layouts.
 */
#ifndef SHXK_ARM_NEON_H
#define SHXK_ARM_NEON_H

#include <arm_neon.h>
#include <string.h>

#include "../../internal.h"

#define INLINE static inline __attribute__((always_inline))
/* Fully unroll the tile loops so accumulators stay in registers. */
#define UNROLL _Pragma("GCC unroll 16")

void shxk_act_q8_neon(const float *x, int8_t *qs, float *d, int32_t *s,
		      size_t nb);
void shxk_gemm_f32_neon(const struct shxk_gemm_args *a);
void shxk_gemm_f16_neon(const struct shxk_gemm_args *a);
void shxk_gemm_bf16_neon(const struct shxk_gemm_args *a);
void shxk_widen_neon(enum shxk_type t, const void *x, float *y, size_t n);
void shxk_attn_tile_neon(enum shxk_type t, const float *q, size_t g, size_t ng,
			 float scale, const void *const *k, const void *const *v,
			 size_t nr, size_t n, float *o, float *mx, float *l,
			 struct shxk_attn_next *nx);

/* 16 quant bytes: contiguous (rows) or two 8-byte chunks step apart (X8). */
INLINE uint8x16_t shxk_neon_ld16(const uint8_t *qs, size_t step, int x8)
{
	return x8 ? vcombine_u8(vld1_u8(qs), vld1_u8(qs + step)) : vld1q_u8(qs);
}

/*
 * Row n's block j as signed quants in element order (Q4_0 minus 8) and its
 * f32 scale, from either layout (x8: the SHXK_LAYOUT_X8 interleave).
 */
INLINE float
shxk_neon_block(const struct shxk_gemm_args *a, int q4, int x8, size_t n,
		size_t j, int8x16_t *lo, int8x16_t *hi)
{
	size_t bs = q4 ? sizeof(struct shxk_block_q4_0) :
			 sizeof(struct shxk_block_q8_0);
	const uint8_t *b, *qs;
	size_t step;	/* bytes between a row's 8-byte chunks */
	__fp16 d;

	if (x8) {
		b = a->w + n / SHXK_X8 * a->wstride + j * bs * SHXK_X8;
		qs = b + 2 * SHXK_X8 + n % SHXK_X8 * 8;
		b += 2 * (n % SHXK_X8);
		step = 8 * SHXK_X8;
	} else {
		b = a->w + n * a->wstride + j * bs;
		qs = b + 2;
		step = 8;
	}
	memcpy(&d, b, 2);
	if (q4) {
		uint8x16_t q = shxk_neon_ld16(qs, step, x8);

		*lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(q, vdupq_n_u8(15))),
			       vdupq_n_s8(8));
		*hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)), vdupq_n_s8(8));
	} else {
		*lo = vreinterpretq_s8_u8(shxk_neon_ld16(qs, step, x8));
		*hi = vreinterpretq_s8_u8(shxk_neon_ld16(qs + 2 * step, step, x8));
	}
	return (float)d;
}

#endif /* SHXK_ARM_NEON_H */
