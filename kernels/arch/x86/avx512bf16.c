// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * BF16 weights by vdpbf16ps (AVX512_BF16, probed by cpu-feats.c): the
 * activations were rounded to bf16 once by shxk_act_prepare(), so one
 * instruction multiplies 32 weight/activation pairs and adds them in f32,
 * with no widening of either operand. The only instruction here that needs
 * AVX512_BF16; the rest of the variant is shxk_ops_avx512's.
 */
#include <immintrin.h>

#include "../../internal.h"
#include "../tile_driver.h"

#define INLINE static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 16")
/*
 * Bytes ahead of each weight row to prefetch: 2 KiB (avx512.c) left
 * batch 1 on 14336-long rows at 70-75% of the read bandwidth with one
 * thread, 4 KiB at 88%, 8 KiB at 96-98% (syshax-bench kernels).
 * Tiles of R rows longer than SHXK_LONG_ROW bytes share the 8 KiB (2 KiB
 * each for 4 rows): 8 KiB ahead on each of 4 such rows fills Zen 4's
 * 32 KiB L1 (x ggml, 1 thread, 13824x5120 M=8 1.26-1.30 -> 1.47-1.51,
 * M=32 1.60-1.71 -> 1.85-1.89). Shorter rows keep 8 KiB each: shared,
 * 4096x14336 M=8 fell from 1.52-1.60 to 1.29-1.34, 2048x768 from 1.53-1.56
 * to 1.22-1.26 (2560x9728 alone gained, 1.33-1.36 -> 1.45-1.47).
 * Batch 1 prefetches into L2 instead once the bf16 activation row is over
 * SHXK_L1_ACT bytes: lines prefetched into L1 then evict the activations
 * (13824x5120 M=1, 1 thread: 0.86-0.87 -> 1.09-1.31 x ggml; 2560-long
 * rows stay with L1, 1.03-1.10 there against 0.80 with L2).
 */
#define SHXK_L1_ACT 16384
#define SHXK_LONG_ROW 8192
#define SHXK_PREFETCH 8192

/* The 32 bf16 from element e of a row of k (zeros past k). */
INLINE __m512i load32(const uint16_t *p, size_t k, size_t e)
{
	__mmask32 m = k - e >= 32 ? 0xffffffffu : (__mmask32)((1ull << (k - e)) - 1);

	return _mm512_maskz_loadu_epi16(m, p + e);
}

/*
 * R weight rows from n times MT activation rows from i, C independent
 * accumulators per pair (C chunks of 32 per step): batch 1 needs C > 1 so
 * the dot-product latency does not cap one row's read speed.
 */
INLINE void dp_tile(const struct shxk_gemm_args *a, size_t n, size_t i,
		    const int R, const int MT, const int C, const int l2)
{
	const uint16_t *x[6];
	__m512 acc[4][6][4];
	size_t ahead = a->k * sizeof(uint16_t) > SHXK_LONG_ROW ?
		       SHXK_PREFETCH / R : SHXK_PREFETCH;

	UNROLL
	for (int u = 0; u < MT; u++)
		x[u] = shxk_act_bf16(a->act + (i + u) * a->astride, a->k);
	UNROLL
	for (int r = 0; r < R; r++)
		UNROLL
		for (int u = 0; u < MT; u++)
			UNROLL
			for (int c = 0; c < C; c++)
				acc[r][u][c] = _mm512_setzero_ps();
	for (size_t e = 0; e < a->k; e += 32 * C) {
		UNROLL
		for (int c = 0; c < C; c++) {
			size_t ec = e + 32 * c;
			__m512i xv[6];

			if (ec >= a->k)
				break;
			UNROLL
			for (int u = 0; u < MT; u++)
				xv[u] = load32(x[u], a->k, ec);
			UNROLL
			for (int r = 0; r < R; r++) {
				const uint16_t *row = (const uint16_t *)(a->w + (n + r) * a->wstride);
				__m512bh w = (__m512bh)load32(row, a->k, ec);

				_mm_prefetch((const char *)(row + ec) + ahead,
					     l2 ? _MM_HINT_T1 : _MM_HINT_T0);
				UNROLL
				for (int u = 0; u < MT; u++)
					acc[r][u][c] = _mm512_dpbf16_ps(acc[r][u][c], w,
									(__m512bh)xv[u]);
			}
		}
	}
	UNROLL
	for (int r = 0; r < R; r++)
		UNROLL
		for (int u = 0; u < MT; u++) {
			UNROLL
			for (int c = 1; c < C; c++)
				acc[r][u][0] = _mm512_add_ps(acc[r][u][0], acc[r][u][c]);
			shxk_store(a, i + u, n + r, _mm512_reduce_add_ps(acc[r][u][0]));
		}
}

void shxk_gemm_bf16_avx512bf16(const struct shxk_gemm_args *a)
{
	/* Batch 1: one sequential row stream at a time (see avx512.c). */
	if (a->m == 1) {
		int l2 = a->k * sizeof(uint16_t) > SHXK_L1_ACT;

		for (size_t n = a->n0; n < a->n1; n++) {
			if (l2)
				dp_tile(a, n, 0, 1, 1, 4, 1);
			else
				dp_tile(a, n, 0, 1, 1, 4, 0);
		}
		return;
	}
	/*
	 * A small batch whose activation rows all fit the L1 beside the
	 * stream: one weight row at a time (a single stream, as batch 1),
	 * all activation rows in one tile. 2560x9728 M=2, 1 thread: 45-47% of
	 * read BW, 1.05-1.08 x ggml with 4-row tiles -> 89-91%, 2.0-2.3.
	 */
	if (a->m <= 6 && a->m * a->k * sizeof(uint16_t) <= SHXK_L1_ACT) {
#define DP_ROW(n, R, i, T) dp_tile(a, n, i, R, T, (T) <= 2 ? 2 : 1, 0)
		SHXK_ROW_WALK(a, 6, DP_ROW);
#undef DP_ROW
		return;
	}
	/*
	 * Tiles of 4 weight rows x 6 activation rows: 24 accumulators, 6
	 * activation vectors and one weight vector fill the 32 zmm
	 * registers, the fewest loads per vdpbf16ps that fit.
	 */
#define DP_TILE(n, R, i, T) dp_tile(a, n, i, R, T, 1, 0)
	SHXK_TILE_WALK(a, 6, DP_TILE);
#undef DP_TILE
}
