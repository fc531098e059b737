// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Armv8.6 i8mm variant: smmla multiplies a 2x8 by an 8x2 s8 tile, so two
 * weight rows meet two activation rows in one instruction. Each pass
 * covers NRC (2 or 4) weight rows against an activation pair, reusing the
 * activation tiles across the rows; odd activation rows and the last < 4
 * weight rows go through the sdot tiles.
 */
#include "neon.h"

INLINE int32x4_t dot16(int32x4_t acc, int8x16_t w, int8x16_t x)
{
	return vdotq_s32(acc, w, x);
}

/* 8-byte halves: [lo of a | lo of b] and [hi of a | hi of b]. */
INLINE int8x16_t zip_lo(int8x16_t a, int8x16_t b)
{
	return vreinterpretq_s8_s64(vzip1q_s64(vreinterpretq_s64_s8(a),
					       vreinterpretq_s64_s8(b)));
}

INLINE int8x16_t zip_hi(int8x16_t a, int8x16_t b)
{
	return vreinterpretq_s8_s64(vzip2q_s64(vreinterpretq_s64_s8(a),
					       vreinterpretq_s64_s8(b)));
}

/* Weight rows n..n+3 (passes of nrc) times activation rows i, i + 1. */
INLINE void pair_tile(const struct shxk_gemm_args *a, int q4, int x8,
		      size_t n, size_t i, const int nrc)
{
	const uint8_t *a0 = a->act + i * a->astride, *a1 = a0 + a->astride;

	UNROLL
	for (int p = 0; p < 4; p += nrc) {
		/* Lanes: (row, act) = (0, 0), (0, 1), (1, 0), (1, 1). */
		float32x4_t acc[2] = { vdupq_n_f32(0.0f), vdupq_n_f32(0.0f) };

		for (size_t j = 0; j < a->k / SHXK_QK; j++) {
			const int8_t *x0 = (const int8_t *)a0 + j * SHXK_QK;
			const int8_t *x1 = (const int8_t *)a1 + j * SHXK_QK;
			int8x16_t l0 = vld1q_s8(x0), h0 = vld1q_s8(x0 + 16);
			int8x16_t l1 = vld1q_s8(x1), h1 = vld1q_s8(x1 + 16);
			int8x16_t b[4] = { zip_lo(l0, l1), zip_hi(l0, l1),
					   zip_lo(h0, h1), zip_hi(h0, h1) };
			float32x2_t dx = { shxk_act_d(a0, a->k)[j],
					   shxk_act_d(a1, a->k)[j] };

			UNROLL
			for (int h = 0; h < nrc / 2; h++) {
				int8x16_t wl0, wh0, wl1, wh1;
				size_t r = n + (size_t)p + 2 * (size_t)h;
				float d0 = shxk_neon_block(a, q4, x8, r, j, &wl0, &wh0);
				float d1 = shxk_neon_block(a, q4, x8, r + 1, j, &wl1, &wh1);
				int32x4_t dot = vdupq_n_s32(0);

				dot = vmmlaq_s32(dot, zip_lo(wl0, wl1), b[0]);
				dot = vmmlaq_s32(dot, zip_hi(wl0, wl1), b[1]);
				dot = vmmlaq_s32(dot, zip_lo(wh0, wh1), b[2]);
				dot = vmmlaq_s32(dot, zip_hi(wh0, wh1), b[3]);
				acc[h] = vfmaq_f32(acc[h], vcvtq_f32_s32(dot),
						   vcombine_f32(vmul_n_f32(dx, d0),
								vmul_n_f32(dx, d1)));
			}
		}
		UNROLL
		for (int h = 0; h < nrc / 2; h++) {
			size_t r = n + (size_t)p + 2 * (size_t)h;

			shxk_store(a, i, r, vgetq_lane_f32(acc[h], 0));
			shxk_store(a, i + 1, r, vgetq_lane_f32(acc[h], 1));
			shxk_store(a, i, r + 1, vgetq_lane_f32(acc[h], 2));
			shxk_store(a, i + 1, r + 1, vgetq_lane_f32(acc[h], 3));
		}
	}
}

#define SHXK_PAIR_TILE
#include "qtile.h"

SHXK_QTILE_OPS(i8mm2, "i8mm", 2);
SHXK_QTILE_OPS(i8mm4, "i8mm", 4);
