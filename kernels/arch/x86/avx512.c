// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * AVX-512 variant (F, BW, VL, VNNI, probed by cpu-feats.c; no BF16 needed).
 * Integer paths use vpdpbusd (u8 x s8): Q4_0 nibbles are already unsigned,
 * Q8_0 quants get + 128 (xor 0x80); the bias that adds is taken back with
 * the activation block sums. The X8 layout puts 8 bytes of each of 8 rows
 * in one register, so with the activation's 8 bytes broadcast every lane
 * pair accumulates one row: no horizontal sums inside the loop.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "../../internal.h"
#include "../tile_driver.h"

#define INLINE static inline __attribute__((always_inline))
/* Fully unroll the tile loops so accumulators stay in registers. */
#define UNROLL _Pragma("GCC unroll 16")
/*
 * Bytes ahead of each weight stream to prefetch: the hardware prefetcher
 * alone left batch-1 GEMV well below the read bandwidth here.
 */
#define SHXK_PREFETCH 2048
/*
 * Batch 1's single row stream (float_row): SHXK_PREFETCH_ROW bytes ahead
 * into L2, or no software prefetch at all when the f32 activation row is
 * at most SHXK_ROW_NOPF bytes. Measured on Zen 4 (32 KiB L1), f16 M=1, one
 * thread, x ggml: prefetcht0 2 or 8 KiB ahead 0.38-0.41 (K=2560) and
 * 0.55-0.60 (K=5120); prefetcht1 8 KiB 0.71-0.78 and 0.82-0.84; none
 * 0.87-0.93 and 0.60-0.66 (the hardware prefetcher keeps up with one
 * stream while the activations stay in L1, not once they spill).
 */
#define SHXK_PREFETCH_ROW 8192
#define SHXK_ROW_NOPF 12288
/*
 * Past this many bytes of f32 activations (Zen 4's whole L1), batch 1
 * goes through 4-row tiles instead: one activation load from L2 serves 4
 * weight rows. 13824x5120 f16 M=1, one thread: 1.05-1.10 -> 1.21-1.33 x
 * ggml (shorter rows lose with 4 streams: 4096x14336 0.89-1.03 -> 0.43-0.50).
 */
#define SHXK_ROW_MAX_ACT 32768
/*
 * X8 at batch 1 reads X8_STREAMS groups at once, from as many evenly
 * spaced places in the call's rows (SHXK_X8_STREAMS_WALK), sharing each
 * activation broadcast: one stream, however far ahead it prefetched,
 * kept too few lines in flight for these cores' share of the bandwidth.
 * % of the read bandwidth at M = 1, 4096x14336 / 14336x4096 /
 * 4096x128256, q4_0 and q8_0: Intel Xeon with AMX (family 6 model 167),
 * 2 threads, one stream 96-106, two 109-114, four 110-119; AMD EPYC Zen 5
 * (family 26 model 2), 1 and 2 threads, two alternating runs each: one
 * stream 57-76, two 78-95, four 84-103, six 73-104, eight 73-92. Then
 * paired, variants in one process, each pass next to a read probe (the
 * host's bandwidth moves by half within minutes): 1.4 GB of K = 2,048
 * weights claimed as the engine claims them, phases of 151,936 and 5,120
 * rows, GEMV over read, medians of 5-12 pairs: three streams beat four in
 * 18 of 20 medians over five runs, by up to 18 % (one run: Q8_0 0.87 and
 * 0.84 against 0.81 and 0.81; Q4_0 0.92 and 0.83 against 0.89 and 0.81);
 * two streams were 0.93-1.13 of four.
 */
#define X8_STREAMS 3
/*
 * Up to X8_FEW_M rows (decode of a few sequences) go the same way, one
 * tile of them a group: their reads bound them as they do batch 1. AMD
 * EPYC Zen 5, 2 threads, 4096x14336 and 14336x4096 from memory, time a
 * call with two streams in tiles of up to 6 rows (below) over this,
 * medians of 40 pairs alternating in one process: Q8_0 M = 2 1.14 and
 * 1.12, 3 1.12 and 1.15, 4 1.17 and 1.12; Q4_0 1.02 and 1.19, 1.17 and
 * 1.17, 1.15 and 1.08. Tiles of 4 further on: 8 rows 1.06-1.08, but 5
 * and 6 (4 and a rest) 0.93-1.00.
 */
#define X8_FEW_M 4
/*
 * More rows go as X8_STREAMS_M streams in tiles of up to X8_MT rows: two
 * groups share each activation broadcast, block scale and bias. AMD EPYC
 * Zen 5, 2 threads, the shapes above: at M = 2 and 4 (before X8_FEW_M),
 * % of the read bandwidth, two runs, one stream 47-71 and 45-60, two
 * 81-93 and 58-83, four (whose 16 accumulators at M = 4 spill) 72-87 and
 * 57-77; at M = 16 and 128, 4096x14336 and 14336x4096, GFLOPS, one
 * group by 4 rows 653-715 and 742-818 (Q4_0), 552-575 and 695-780
 * (Q8_0); by 6 rows 706-768 and 761-911, 534-607 and 707-833; two groups
 * by 4 rows 700-807 and 840-861, 624-697 and 811-828; two by 6 (adjacent
 * groups or evenly spaced: the same) 751-897 and 868-929, 651-767 and
 * 814-904.
 */
#define X8_STREAMS_M 2
#define X8_MT 6

/* ---- activations: bit-exact with shxk_act_q8_generic ---- */

/* roundf(): half away from zero (the FPU rounds half to even). */
INLINE __m512 round_away(__m512 v)
{
	__m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
	__m512 one = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(),
							     _CMP_LT_OQ),
					  _mm512_set1_ps(1.0f), _mm512_set1_ps(-1.0f));
	__mmask16 up = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(v, t)),
					  _mm512_set1_ps(0.5f), _CMP_GE_OQ);

	return _mm512_mask_add_ps(t, up, t, one);
}

static void act_q8(const float *x, int8_t *qs, float *d, int32_t *s, size_t nb)
{
	for (size_t j = 0; j < nb; j++, x += SHXK_QK, qs += SHXK_QK) {
		__m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
		float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0),
								_mm512_abs_ps(v1)));
		float dj = amax / 127.0f;
		__m512 id = _mm512_set1_ps(dj != 0.0f ? 1.0f / dj : 0.0f);
		__m512i q0 = _mm512_cvtps_epi32(round_away(_mm512_mul_ps(v0, id)));
		__m512i q1 = _mm512_cvtps_epi32(round_away(_mm512_mul_ps(v1, id)));

		_mm_storeu_si128((__m128i *)qs, _mm512_cvtepi32_epi8(q0));
		_mm_storeu_si128((__m128i *)(qs + 16), _mm512_cvtepi32_epi8(q1));
		d[j] = dj;
		s[j] = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
	}
}

/* ---- float weights ---- */

/* Up to 16 weights from element e on, widened to f32; zero past k. */
INLINE __m512 load_w(enum shxk_type t, const uint8_t *row, size_t e,
		     __mmask16 m)
{
	if (t == SHXK_F16)
		return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, row + 2 * e));
	if (t == SHXK_BF16)
		return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(
			_mm256_maskz_loadu_epi16(m, row + 2 * e)), 16));
	return _mm512_maskz_loadu_ps(m, row + 4 * e);
}

/* R weight rows from n times MT activation rows from i. */
INLINE void float_tile(const struct shxk_gemm_args *a, enum shxk_type t,
		       size_t n, size_t i, const int R, const int MT)
{
	size_t es = t == SHXK_F32 ? 4 : 2;
	__m512 acc[4][4];

	UNROLL
	for (int r = 0; r < R; r++)
		UNROLL
		for (int u = 0; u < MT; u++)
			acc[r][u] = _mm512_setzero_ps();
	for (size_t e = 0; e < a->k; e += 16) {
		__mmask16 m = a->k - e >= 16 ? 0xffff :
			      (__mmask16)((1u << (a->k - e)) - 1);
		__m512 x[4];

		UNROLL
		for (int u = 0; u < MT; u++)
			x[u] = _mm512_maskz_loadu_ps(m, a->act + (i + u) * a->astride + 4 * e);
		UNROLL
		for (int r = 0; r < R; r++) {
			const uint8_t *row = a->w + (n + r) * a->wstride;
			__m512 w = load_w(t, row, e, m);

			_mm_prefetch((const char *)row + e * es + SHXK_PREFETCH, _MM_HINT_T0);


			UNROLL
			for (int u = 0; u < MT; u++)
				acc[r][u] = _mm512_fmadd_ps(w, x[u], acc[r][u]);
		}
	}
	UNROLL
	for (int r = 0; r < R; r++)
		UNROLL
		for (int u = 0; u < MT; u++)
			shxk_store(a, i + u, n + r, _mm512_reduce_add_ps(acc[r][u]));
}

/*
 * Row n times activation row 0, four independent accumulators: one chain
 * of FMAs (4 cycles each) would cap a 16-bit row at 8 bytes a cycle.
 */
INLINE void float_row(const struct shxk_gemm_args *a, enum shxk_type t, size_t n,
		      const int pf)
{
	const uint8_t *row = a->w + n * a->wstride;
	const float *x = (const float *)a->act;
	size_t es = t == SHXK_F32 ? 4 : 2, e = 0;
	__m512 acc[4];

	UNROLL
	for (int c = 0; c < 4; c++)
		acc[c] = _mm512_setzero_ps();
	for (; e + 64 <= a->k; e += 64) {
		UNROLL
		for (int c = 0; c < 4; c++)
			acc[c] = _mm512_fmadd_ps(load_w(t, row, e + 16 * c, 0xffff),
						 _mm512_loadu_ps(x + e + 16 * c), acc[c]);
		for (size_t o = 0; pf && o < 64 * es; o += 64)
			_mm_prefetch((const char *)row + e * es + SHXK_PREFETCH_ROW + o,
				     _MM_HINT_T1);
	}
	for (; e < a->k; e += 16) {
		__mmask16 m = a->k - e >= 16 ? 0xffff : (__mmask16)((1u << (a->k - e)) - 1);

		acc[0] = _mm512_fmadd_ps(load_w(t, row, e, m), _mm512_maskz_loadu_ps(m, x + e),
					 acc[0]);
	}
	shxk_store(a, 0, n, _mm512_reduce_add_ps(_mm512_add_ps(
		_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3]))));
}

INLINE void gemm_float(const struct shxk_gemm_args *a, enum shxk_type t)
{
	/*
	 * Batch 1 reads each row once: one row at a time keeps a single
	 * sequential stream, which DRAM serves faster than four, while the
	 * activations fit the L1 (SHXK_ROW_MAX_ACT).
	 */
	if (a->m == 1 && a->k * sizeof(float) <= SHXK_ROW_MAX_ACT) {
		int pf = a->k * sizeof(float) > SHXK_ROW_NOPF;

		for (size_t n = a->n0; n < a->n1; n++) {
			if (pf)
				float_row(a, t, n, 1);
			else
				float_row(a, t, n, 0);
		}
		return;
	}
#define FLOAT_TILE(n, R, i, T) float_tile(a, t, n, i, R, T)
	SHXK_TILE_WALK(a, 4, FLOAT_TILE);
#undef FLOAT_TILE
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

static void widen(enum shxk_type t, const void *x, float *y, size_t n)
{
	for (size_t e = 0; e < n; e += 16) {
		__mmask16 m = n - e >= 16 ? 0xffff : (__mmask16)((1u << (n - e)) - 1);

		_mm512_mask_storeu_ps(y + e, m, t == SHXK_F16 ?
				      load_w(SHXK_F16, x, e, m) : load_w(SHXK_BF16, x, e, m));
	}
}

/* ---- SwiGLU ---- */

/*
 * e^x within 2 ulp: x = n ln2 + r, |r| <= ln2 / 2, e^r by its degree-7
 * Taylor polynomial (truncation < 1e-8 relative), 2^n by vscalefps, which
 * also turns large |n| into inf or 0. The clamp keeps r finite for +-inf.
 */
INLINE __m512 exp512(__m512 x)
{
	x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-150.0f)),
			  _mm512_set1_ps(150.0f));
	__m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(0x1.715476p+0f)),
					_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.62e4p-1f), x);
	__m512 p = _mm512_set1_ps(1.0f / 5040);

	r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.7f7d1cp-20f), r);
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
	return _mm512_scalef_ps(p, n);
}

static void swiglu(const float *g, const float *u, float *y, size_t n)
{
	for (size_t j = 0; j < n; j += 16) {
		__mmask16 m = n - j >= 16 ? 0xffff : (__mmask16)((1u << (n - j)) - 1);
		__m512 gv = _mm512_maskz_loadu_ps(m, g + j);
		__m512 den = _mm512_add_ps(_mm512_set1_ps(1.0f),
					   exp512(_mm512_sub_ps(_mm512_setzero_ps(), gv)));

		_mm512_mask_storeu_ps(y + j, m, _mm512_mul_ps(_mm512_div_ps(gv, den),
						_mm512_maskz_loadu_ps(m, u + j)));
	}
}

/* ---- decode attention ---- */

/* Query heads per pass over a tile's K and V rows (accumulators in zmm). */
#define AT_HEADS 8
/*
 * K rows per score group: rows x gh accumulators (at most 16) run over the
 * whole head, so each score is one sum and the 16 of a group are reduced
 * by one transposing tree. The old way, one 64-value span of 16 rows for 4
 * heads at a time, kept its 64 partial sums on the stack.
 */
#define AT_ROWS(gh) ((gh) <= 2 ? 8 : 16 / (gh))
/* 16-value chunks of V per pass: gh x chunks accumulators (at most 16). */
#define AT_CHUNKS(gh) ((gh) <= 4 ? 4 : 2)

/*
 * Lane r of the result = sum of v[r]'s 16 lanes, r < nv (0 past nv): a
 * transposing tree of 15 adds instead of 16 separate horizontal sums.
 */
INLINE __m512 hsum16(const __m512 *v, const int nv)
{
	__m512 z = _mm512_setzero_ps(), t[8], u[4], w[2];

	UNROLL
	for (int i = 0; i < 8; i++) {
		__m512 a = 2 * i < nv ? v[2 * i] : z;
		__m512 b = 2 * i + 1 < nv ? v[2 * i + 1] : z;

		t[i] = _mm512_add_ps(_mm512_unpacklo_ps(a, b),
				     _mm512_unpackhi_ps(a, b));
	}
	UNROLL
	for (int i = 0; i < 4; i++) {
		__m512d a = _mm512_castps_pd(t[2 * i]), b = _mm512_castps_pd(t[2 * i + 1]);

		u[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)),
				     _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
	}
	for (int i = 0; i < 2; i++)
		w[i] = _mm512_add_ps(_mm512_shuffle_f32x4(u[2 * i], u[2 * i + 1], 0x88),
				     _mm512_shuffle_f32x4(u[2 * i], u[2 * i + 1], 0xdd));
	return _mm512_add_ps(_mm512_shuffle_f32x4(w[0], w[1], 0x88),
			     _mm512_shuffle_f32x4(w[0], w[1], 0xdd));
}

/* Mask of the 16 values from e of a row of n (0 past the end). */
INLINE __mmask16 at_mask(size_t n, size_t e)
{
	if (e >= n)
		return 0;
	return n - e >= 16 ? 0xffff : (__mmask16)((1u << (n - e)) - 1);
}

/*
 * acc[j * gh + h] (16 partial sums each) = q[h] times the tile's row
 * r + j, j < RG; rows past nr read row 0 (their scores are masked later).
 */
INLINE void at_dots(enum shxk_type t, const int gh, const int RG,
		    const float *q, const void *const *k, size_t off,
		    size_t nr, size_t n, size_t r, __m512 *acc,
		    struct shxk_attn_next *nx)
{
	const uint8_t *kr[8];

	UNROLL
	for (int j = 0; j < RG; j++)
		kr[j] = (const uint8_t *)k[r + j < nr ? r + j : 0] + off;
	UNROLL
	for (int i = 0; i < RG * gh; i++)
		acc[i] = _mm512_setzero_ps();
	for (size_t e = 0; e < n; e += 16) {
		__mmask16 m = at_mask(n, e);
		__m512 qv[AT_HEADS];

		shxk_attn_next_step(nx);
		UNROLL
		for (int h = 0; h < gh; h++)
			qv[h] = _mm512_maskz_loadu_ps(m, q + h * n + e);
		UNROLL
		for (int j = 0; j < RG; j++) {
			__m512 kx = load_w(t, kr[j], e, m);

			UNROLL
			for (int h = 0; h < gh; h++)
				acc[j * gh + h] = _mm512_fmadd_ps(kx, qv[h], acc[j * gh + h]);
		}
	}
}

/* Scores of gh heads for the tile's rows [r, r + RG) into lanes r.. of s[h]. */
INLINE void at_scores(enum shxk_type t, const int gh, const int RG,
		      const float *q, const void *const *k, size_t off,
		      size_t nr, size_t n, size_t r, __m512 *s,
		      struct shxk_attn_next *nx)
{
	const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9,
					       10, 11, 12, 13, 14, 15);
	__m512 acc[16], hs;
	__mmask16 lanes = (__mmask16)(((1u << RG) - 1) << r);

	at_dots(t, gh, RG, q, k, off, nr, n, r, acc, nx);
	/* Lane j * gh + h of hs: row r + j, head h; to lane r + j of s[h]. */
	hs = hsum16(acc, RG * gh);
	UNROLL
	for (int h = 0; h < gh; h++) {
		__m512i idx = _mm512_add_epi32(_mm512_mullo_epi32(iota,
					_mm512_set1_epi32(gh)),
					_mm512_set1_epi32(h - (int)r * gh));

		s[h] = _mm512_mask_permutexvar_ps(s[h], lanes, idx, hs);
	}
}

/*
 * Scores of gh heads (5 < gh <= AT_HEADS) for the tile's rows r and r + 1
 * into sm row-major, AT_HEADS lanes a row: sm[row * AT_HEADS + h], 0 past
 * gh. The tree's lanes are stored as they come, with no permute to a zmm
 * per head: those and at_softmax's per-head reductions were a fifth of a
 * tile of 8 heads (docs/kernels.md).
 */
INLINE void at_scores_packed(enum shxk_type t, const int gh, const float *q,
			     const void *const *k, size_t off, size_t nr,
			     size_t n, size_t r, float *sm,
			     struct shxk_attn_next *nx)
{
	__m512 acc[16], hv[16];

	at_dots(t, gh, 2, q, k, off, nr, n, r, acc, nx);
	UNROLL
	for (int j = 0; j < 2; j++)
		UNROLL
		for (int h = 0; h < AT_HEADS; h++)
			hv[j * AT_HEADS + h] = h < gh ? acc[j * gh + h] :
						 _mm512_setzero_ps();
	_mm512_store_ps(sm + r * AT_HEADS, hsum16(hv, 16));
}

/* o[h][e0, e0 + 16 CV) = o * corr[h] + sum over rows of p[h ph + r pr] v[r]. */
INLINE void at_values(enum shxk_type t, const int gh, const int CV,
		      const void *const *v, size_t off, size_t nr, size_t n,
		      const float *p, const int ph, const int pr,
		      const float *corr, float *o, size_t e0,
		      struct shxk_attn_next *nx)
{
	__mmask16 m[4];
	__m512 acc[AT_HEADS][4];

	UNROLL
	for (int c = 0; c < CV; c++)
		m[c] = at_mask(n, e0 + 16 * c);
	UNROLL
	for (int h = 0; h < gh; h++)
		UNROLL
		for (int c = 0; c < CV; c++)
			acc[h][c] = _mm512_mul_ps(_mm512_maskz_loadu_ps(m[c],
						o + h * n + e0 + 16 * c),
						_mm512_set1_ps(corr[h]));
	for (size_t r = 0; r < nr; r++) {
		__m512 vx[4];

		shxk_attn_next_step(nx);
		UNROLL
		for (int c = 0; c < CV; c++)
			vx[c] = load_w(t, (const uint8_t *)v[r] + off,
				       e0 + 16 * c, m[c]);
		UNROLL
		for (int h = 0; h < gh; h++) {
			__m512 pb = _mm512_set1_ps(p[h * ph + r * pr]);

			UNROLL
			for (int c = 0; c < CV; c++)
				acc[h][c] = _mm512_fmadd_ps(pb, vx[c], acc[h][c]);
		}
	}
	UNROLL
	for (int h = 0; h < gh; h++)
		UNROLL
		for (int c = 0; c < CV; c++)
			_mm512_mask_storeu_ps(o + h * n + e0 + 16 * c, m[c], acc[h][c]);
}

/*
 * The softmax step of gh heads over the tile's scores s[h] (lane = row):
 * weights to p + h SHXK_ATTN_TILE, each head's rescale factor to corr[h].
 */
INLINE void at_softmax(const int gh, const __m512 *s, float scale, size_t nr,
		       float *mx, float *l, float *p, float *corr)
{
	__mmask16 rm = (__mmask16)((1u << nr) - 1);

	UNROLL
	for (int h = 0; h < gh; h++) {
		__m512 x = _mm512_mul_ps(s[h], _mm512_set1_ps(scale));
		float top = fmaxf(mx[h], _mm512_mask_reduce_max_ps(rm, x)), c = 1.0f;

		/* New max: rescale what was summed under the old one. */
		if (top > mx[h]) {
			c = expf(mx[h] - top);
			mx[h] = top;
		}
		x = _mm512_maskz_mov_ps(rm, exp512(_mm512_sub_ps(x, _mm512_set1_ps(top))));
		l[h] = l[h] * c + _mm512_reduce_add_ps(x);
		_mm512_storeu_ps(p + h * SHXK_ATTN_TILE, x);
		corr[h] = c;
	}
}

/* v and its 256-bit halves swapped: lane h + 8 beside lane h. */
INLINE __m512 at_halves(__m512 v)
{
	return _mm512_shuffle_f32x4(v, v, 0x4e);
}

/*
 * The softmax step over at_scores_packed's tile, all heads at once: two
 * rows a zmm, so each head's max and sum is an elementwise op over the
 * tile's 8 zmm and one fold of the halves. Weights over sm, each head's
 * rescale factor to corr[h] (16 floats, 64-byte aligned).
 */
INLINE void at_softmax_packed(const int gh, float *sm, float scale,
			      size_t nr, float *mx, float *l, float *corr)
{
	const __m512i rep = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7,
					      0, 1, 2, 3, 4, 5, 6, 7);
	__mmask16 hm = (__mmask16)((1u << gh) - 1);
	__m512 x[SHXK_ATTN_TILE / 2], old, top, c, sum = _mm512_setzero_ps();
	__m512 lv;

	old = _mm512_permutexvar_ps(rep, _mm512_maskz_loadu_ps(hm, mx));
	top = old;
	UNROLL
	for (int i = 0; i < SHXK_ATTN_TILE / 2; i++) {
		/* Rows past nr: -inf, weight 0. */
		__mmask16 vm = nr >= 2 * (size_t)i + 2 ? 0xffff :
			       nr == 2 * (size_t)i + 1 ? 0xff : 0;

		x[i] = _mm512_mask_mul_ps(_mm512_set1_ps(-INFINITY), vm,
					  _mm512_maskz_load_ps(vm, sm + 16 * i),
					  _mm512_set1_ps(scale));
		top = _mm512_max_ps(top, x[i]);
	}
	top = _mm512_max_ps(top, at_halves(top));
	/* exp(-inf) is 0: the first tile rescales nothing. */
	c = exp512(_mm512_sub_ps(old, top));
	UNROLL
	for (int i = 0; i < SHXK_ATTN_TILE / 2; i++) {
		__m512 w = exp512(_mm512_sub_ps(x[i], top));

		sum = _mm512_add_ps(sum, w);
		_mm512_store_ps(sm + 16 * i, w);
	}
	lv = _mm512_permutexvar_ps(rep, _mm512_maskz_loadu_ps(hm, l));
	lv = _mm512_fmadd_ps(lv, c, _mm512_add_ps(sum, at_halves(sum)));
	_mm512_mask_storeu_ps(l, hm, lv);
	_mm512_mask_storeu_ps(mx, hm, top);
	/*
	 * All 16 lanes: at_values loads each factor right after, and a
	 * masked store does not forward to those loads (8 heads 97 -> 104
	 * cycles a row with it).
	 */
	_mm512_store_ps(corr, c);
}

/*
 * 4 <= gh <= AT_HEADS heads of one kv head: each K and V row is widened
 * once for all of them. Groups of 6 to 8 heads take their scores
 * row-major through the softmax step; up to 5, three rows of 5 heads fill
 * a tree (at_scores) where row-major would take two rows of 8 lanes, and
 * they keep the scores in zmm, a row a lane.
 */
INLINE void attn_heads(enum shxk_type t, const int gh, const float *q,
		       float scale, const void *const *k, const void *const *v,
		       size_t off, size_t nr, size_t n, float *o, float *mx,
		       float *l, struct shxk_attn_next *nx)
{
	const int packed = gh > 5, CV = AT_CHUNKS(gh);
	const int RG = packed ? 2 : AT_ROWS(gh);
	_Alignas(64) float sm[SHXK_ATTN_TILE * AT_HEADS], corr[16];

	if (!packed) {
		__m512 s[AT_HEADS];

		UNROLL
		for (int h = 0; h < gh; h++)
			s[h] = _mm512_setzero_ps();
		for (size_t r = 0; r < nr; r += RG)
			at_scores(t, gh, RG, q, k, off, nr, n, r, s, nx);
		at_softmax(gh, s, scale, nr, mx, l, sm, corr);
	} else {
		for (size_t r = 0; r < nr; r += RG)
			at_scores_packed(t, gh, q, k, off, nr, n, r, sm, nx);
		at_softmax_packed(gh, sm, scale, nr, mx, l, corr);
	}
	/* The weight of row r, head h: row-major, or sm[h SHXK_ATTN_TILE + r]. */
	for (size_t e0 = 0; e0 < n; e0 += 16 * (size_t)CV)
		at_values(t, gh, CV, v, off, nr, n, sm,
			  packed ? 1 : SHXK_ATTN_TILE, packed ? AT_HEADS : 1,
			  corr, o, e0, nx);
}

/*
 * ng groups of gh heads, group i against K and V rows k[r] + i row sizes
 * (the kv heads of a position side by side). The scores run position by
 * position through all groups, so that the tile's K is read in address
 * order: for small groups the pass is bound by its reads, and each
 * group's rows in turn, 2 KB apart, read slower (docs/kernels.md). The
 * scores wait in memory; larger groups keep them in zmm (attn_heads).
 */
INLINE void attn_groups(enum shxk_type t, const int gh, size_t ng,
			const float *q, float scale, const void *const *k,
			const void *const *v, size_t nr, size_t n, float *o,
			float *mx, float *l, struct shxk_attn_next *nx)
{
	const int RG = AT_ROWS(gh), CV = AT_CHUNKS(gh);
	size_t rowb = shxk_row_size(t, n);
	__m512 s[SHXK_ATTN_HEADS];
	float p[AT_HEADS * SHXK_ATTN_TILE], corr[AT_HEADS];

	for (size_t h = 0; h < ng * gh; h++)
		s[h] = _mm512_setzero_ps();
	for (size_t r = 0; r < nr; r += RG)
		for (size_t i = 0; i < ng; i++)
			at_scores(t, gh, RG, q + i * gh * n, k, i * rowb, nr,
				  n, r, s + i * gh, nx);
	for (size_t i = 0; i < ng; i++) {
		at_softmax(gh, s + i * gh, scale, nr, mx + i * gh,
			   l + i * gh, p, corr);
		for (size_t e0 = 0; e0 < n; e0 += 16 * (size_t)CV)
			at_values(t, gh, CV, v, i * rowb, nr, n, p,
				  SHXK_ATTN_TILE, 1, corr, o + i * gh * n, e0,
				  nx);
	}
}

/* Groups of at most this many heads go through attn_groups. */
#define AT_GROUPS_HEADS 4

/* One instance per type and head count: the accumulators stay in zmm. */
#define AT_GROUPS(T, G, NG)						\
	attn_groups(T, G, NG, q, scale, k, v, nr, n, o, mx, l, nx)
#define AT_HEADS_CALL(T, GH, h, off)					\
	attn_heads(T, GH, q + (h) * n, scale, k, v, off, nr, n, o + (h) * n, \
		   mx + (h), l + (h), nx)
/* A pass of a larger group: 4 (9 heads: 5 + 4) to 8 heads. */
#define AT_HEADS_GH(T, gh, h, off)					\
	do {								\
		switch (gh) {						\
		case 4: AT_HEADS_CALL(T, 4, h, off); break;		\
		case 5: AT_HEADS_CALL(T, 5, h, off); break;		\
		case 6: AT_HEADS_CALL(T, 6, h, off); break;		\
		case 7: AT_HEADS_CALL(T, 7, h, off); break;		\
		default: AT_HEADS_CALL(T, 8, h, off); break;		\
		}							\
	} while (0)
#define AT_PASS(gh, h, off) SHXK_ATTN_TYPED(t, AT_HEADS_GH, gh, h, off)

/* ng groups of g <= AT_GROUPS_HEADS heads. */
static void tile_groups(enum shxk_type t, const float *q, size_t g, size_t ng,
			float scale, const void *const *k, const void *const *v,
			size_t nr, size_t n, float *o, float *mx, float *l,
			struct shxk_attn_next *gnx)
{
	/* A local cursor: see struct shxk_attn_next. */
	struct shxk_attn_next lnx = *gnx, *nx = &lnx;

	SHXK_ATTN_TYPED(t, SHXK_ATTN_GH4, g, AT_GROUPS, ng);
	*gnx = lnx;
}

/* Groups of more heads, one after another, in passes of even size. */
static void tile_heads(enum shxk_type t, const float *q, size_t g, size_t ng,
		       float scale, const void *const *k, const void *const *v,
		       size_t nr, size_t n, float *o, float *mx, float *l,
		       struct shxk_attn_next *gnx)
{
	/* A local cursor: see struct shxk_attn_next. */
	struct shxk_attn_next lnx = *gnx, *nx = &lnx;

	SHXK_ATTN_GROUPS(nx, t, g, ng, n, AT_HEADS, AT_PASS);
	*gnx = lnx;
}

static void attn_tile(enum shxk_type t, const float *q, size_t g, size_t ng,
		      float scale, const void *const *k, const void *const *v,
		      size_t nr, size_t n, float *o, float *mx, float *l,
		      struct shxk_attn_next *nx)
{
	if (g <= AT_GROUPS_HEADS)
		tile_groups(t, q, g, ng, scale, k, v, nr, n, o, mx, l, nx);
	else
		tile_heads(t, q, g, ng, scale, k, v, nr, n, o, mx, l, nx);
}

/* ---- Q8_0 / Q4_0, row-major ---- */

/* A weight block's 32 quants as unsigned bytes in element order. */
INLINE __m256i wbytes(const uint8_t *qs, int q4)
{
	if (q4) {
		__m128i q = _mm_loadu_si128((const __m128i *)qs);
		__m128i m4 = _mm_set1_epi8(15);

		return _mm256_inserti128_si256(
			_mm256_castsi128_si256(_mm_and_si128(q, m4)),
			_mm_and_si128(_mm_srli_epi16(q, 4), m4), 1);
	}
	return _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)qs),
				_mm256_set1_epi8(-128));
}

/* A block's f16 scale at b. */
INLINE float wscale(const uint8_t *b)
{
	uint16_t dh;

	memcpy(&dh, b, 2);
	return _cvtsh_ss(dh);
}

/* lo in lanes 0..7, hi in lanes 8..15. */
INLINE __m512 pair_ps(float lo, float hi)
{
	return _mm512_mask_blend_ps(0xff00, _mm512_set1_ps(lo), _mm512_set1_ps(hi));
}

/*
 * R weight rows from n times MT activation rows from i, two blocks per
 * 512-bit register (the activation quants of consecutive blocks are
 * contiguous); an odd last block goes through 256 bits.
 */
INLINE void quant_tile(const struct shxk_gemm_args *a, int q4, size_t n,
		       size_t i, const int R, const int MT)
{
	size_t bs = q4 ? sizeof(struct shxk_block_q4_0) :
			 sizeof(struct shxk_block_q8_0);
	size_t nb = a->k / SHXK_QK, j = 0;
	/* What the unsigned encoding added to each quant. */
	const __m512i bias = _mm512_set1_epi8(q4 ? 8 : -128);
	__m512 acc[4][4];

	UNROLL
	for (int r = 0; r < R; r++)
		UNROLL
		for (int u = 0; u < MT; u++)
			acc[r][u] = _mm512_setzero_ps();
	for (; j + 2 <= nb; j += 2) {
		__m512i x[4], neg[4];
		__m512 dx[4];

		UNROLL
		for (int u = 0; u < MT; u++) {
			const uint8_t *ar = a->act + (i + u) * a->astride;
			const float *d = shxk_act_d(ar, a->k) + j;

			x[u] = _mm512_loadu_si512(ar + j * SHXK_QK);
			neg[u] = _mm512_sub_epi32(_mm512_setzero_si512(),
				_mm512_dpbusd_epi32(_mm512_setzero_si512(), bias, x[u]));
			dx[u] = pair_ps(d[0], d[1]);
		}
		UNROLL
		for (int r = 0; r < R; r++) {
			const uint8_t *b = a->w + (n + r) * a->wstride + j * bs;
			__m512i w = _mm512_inserti64x4(_mm512_castsi256_si512(
				wbytes(b + 2, q4)), wbytes(b + bs + 2, q4), 1);
			__m512 dw = pair_ps(wscale(b), wscale(b + bs));

			_mm_prefetch((const char *)b + SHXK_PREFETCH, _MM_HINT_T0);
			if (!q4)
				_mm_prefetch((const char *)b + bs + SHXK_PREFETCH, _MM_HINT_T0);
			UNROLL
			for (int u = 0; u < MT; u++) {
				__m512i dot = _mm512_dpbusd_epi32(neg[u], w, x[u]);

				acc[r][u] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot),
							    _mm512_mul_ps(dw, dx[u]),
							    acc[r][u]);
			}
		}
	}
	if (j < nb) {
		UNROLL
		for (int u = 0; u < MT; u++) {
			const uint8_t *ar = a->act + (i + u) * a->astride;
			__m256i x = _mm256_loadu_si256((const __m256i *)(ar + j * SHXK_QK));
			__m256i neg = _mm256_sub_epi32(_mm256_setzero_si256(),
				_mm256_dpbusd_epi32(_mm256_setzero_si256(),
						    _mm512_castsi512_si256(bias), x));
			float dx = shxk_act_d(ar, a->k)[j];

			UNROLL
			for (int r = 0; r < R; r++) {
				const uint8_t *b = a->w + (n + r) * a->wstride + j * bs;
				__m256i dot = _mm256_dpbusd_epi32(neg, wbytes(b + 2, q4), x);
				__m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(dot),
							 _mm256_set1_ps(wscale(b) * dx));

				acc[r][u] = _mm512_add_ps(acc[r][u], _mm512_zextps256_ps512(v));
			}
		}
	}
	UNROLL
	for (int r = 0; r < R; r++)
		UNROLL
		for (int u = 0; u < MT; u++)
			shxk_store(a, i + u, n + r, _mm512_reduce_add_ps(acc[r][u]));
}

INLINE void gemm_quant(const struct shxk_gemm_args *a, int q4)
{
	/* Batch 1: one sequential row stream at a time (see gemm_float). */
	if (a->m == 1) {
		for (size_t n = a->n0; n < a->n1; n++)
			quant_tile(a, q4, n, 0, 1, 1);
		return;
	}
#define QUANT_TILE(n, R, i, T) quant_tile(a, q4, n, i, R, T)
	SHXK_TILE_WALK(a, 4, QUANT_TILE);
#undef QUANT_TILE
}

static void gemm_q8_0(const struct shxk_gemm_args *a)
{
	gemm_quant(a, 0);
}

static void gemm_q4_0(const struct shxk_gemm_args *a)
{
	gemm_quant(a, 1);
}

/* ---- Q8_0 / Q4_0, X8 layout ---- */

/* Activation bytes 8p..8p+7 of a block, in every lane pair. */
INLINE __m512i bcast8(const int8_t *p)
{
	long long v;

	memcpy(&v, p, 8);
	return _mm512_set1_epi64(v);
}

/* Row i's sums of group rows n..n+7 (lane pairs) to y. */
INLINE void x8_store(const struct shxk_gemm_args *a, __m512 acc, size_t i,
		     size_t n)
{
	/* Pair sums land in the even lanes; pack them to 8 rows. */
	__m512 s = _mm512_add_ps(acc, _mm512_permute_ps(acc, 0xb1));
	__m256 rows = _mm512_castps512_ps256(_mm512_maskz_compress_ps(0x5555, s));

	if (a->yt == SHXK_F32 && n >= a->n0 && n + 8 <= a->n1) {
		_mm256_storeu_ps((float *)a->y + i * a->ldy + n, rows);
	} else {
		float v[8];

		_mm256_storeu_ps(v, rows);
		UNROLL
		for (int r = 0; r < 8; r++)
			if (n + r >= a->n0 && n + r < a->n1)
				shxk_store(a, i, n + r, v[r]);
	}
}

/*
 * NG 8-row groups g, g + gs, ... times MT activation rows from i. Lane
 * 2r + h of an accumulator holds half of row r's dot product; pairs are
 * added at the end.
 */
INLINE void x8_tile(const struct shxk_gemm_args *a, int q4, size_t g,
		    size_t gs, const int NG, size_t i, const int MT)
{
	size_t bs = q4 ? sizeof(struct shxk_block_q4_0) :
			 sizeof(struct shxk_block_q8_0);
	/* Duplicates each of 8 f16 scales into a lane pair. */
	const __m256i dup = _mm256_setr_epi16(0, 0, 1, 1, 2, 2, 3, 3,
					      4, 4, 5, 5, 6, 6, 7, 7);
	const __m512i m4 = _mm512_set1_epi8(15), flip = _mm512_set1_epi8(-128);
	const int bias = q4 ? -8 : -128;
	__m512 acc[X8_STREAMS][X8_MT];

	UNROLL
	for (int s = 0; s < NG; s++)
		UNROLL
		for (int u = 0; u < MT; u++)
			acc[s][u] = _mm512_setzero_ps();
	for (size_t j = 0; j < a->k / SHXK_QK; j++) {
		__m512 dw[X8_STREAMS];
		__m512i w[X8_STREAMS][4];

		UNROLL
		for (int s = 0; s < NG; s++) {
			const uint8_t *col = a->w + (g + s * gs) * a->wstride +
					     j * bs * SHXK_X8;

			dw[s] = _mm512_cvtph_ps(_mm256_permutexvar_epi16(dup,
				_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)col))));
			for (size_t o = 0; o < bs * SHXK_X8; o += 64)
				_mm_prefetch((const char *)col + SHXK_PREFETCH + o,
					     _MM_HINT_T0);
			/* w[s][c] pairs with activation bytes 8c..8c+7. */
			if (q4) {
				__m512i c0 = _mm512_loadu_si512(col + 16);
				__m512i c1 = _mm512_loadu_si512(col + 80);

				w[s][0] = _mm512_and_si512(c0, m4);
				w[s][1] = _mm512_and_si512(c1, m4);
				w[s][2] = _mm512_and_si512(_mm512_srli_epi16(c0, 4), m4);
				w[s][3] = _mm512_and_si512(_mm512_srli_epi16(c1, 4), m4);
			} else {
				UNROLL
				for (int c = 0; c < 4; c++)
					w[s][c] = _mm512_xor_si512(
						_mm512_loadu_si512(col + 16 + 64 * c), flip);
			}
		}
		UNROLL
		for (int u = 0; u < MT; u++) {
			const uint8_t *ar = a->act + (i + u) * a->astride;
			const int8_t *x = (const int8_t *)ar + j * SHXK_QK;
			/* The bias once per row: in the even lane only. */
			__m512i bias_s = _mm512_maskz_set1_epi32(0x5555,
					bias * shxk_act_s(ar, a->k)[j]);
			__m512i x0 = bcast8(x), x1 = bcast8(x + 8);
			__m512i x2 = bcast8(x + 16), x3 = bcast8(x + 24);
			__m512 xd = _mm512_set1_ps(shxk_act_d(ar, a->k)[j]);

			UNROLL
			for (int s = 0; s < NG; s++) {
				__m512i dot = _mm512_dpbusd_epi32(bias_s, w[s][0], x0);

				/*
				 * Tall tiles are bound by the FMA units, not
				 * the reads: two chains of two VNNI ops, not
				 * one of four (M = 32, 64: 3-12 % faster on
				 * Zen 5; at M <= 4 the extra add lost 4-9 %).
				 */
				if (MT >= 5) {
					__m512i d1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[s][1], x1);

					dot = _mm512_dpbusd_epi32(dot, w[s][2], x2);
					d1 = _mm512_dpbusd_epi32(d1, w[s][3], x3);
					dot = _mm512_add_epi32(dot, d1);
				} else {
					dot = _mm512_dpbusd_epi32(dot, w[s][1], x1);
					dot = _mm512_dpbusd_epi32(dot, w[s][2], x2);
					dot = _mm512_dpbusd_epi32(dot, w[s][3], x3);
				}
				acc[s][u] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot),
					_mm512_mul_ps(dw[s], xd), acc[s][u]);
			}
		}
	}
	UNROLL
	for (int s = 0; s < NG; s++)
		UNROLL
		for (int u = 0; u < MT; u++)
			x8_store(a, acc[s][u], i + u, (g + s * gs) * SHXK_X8);
}

INLINE void gemm_x8(const struct shxk_gemm_args *a, int q4)
{
#define X8_ROWS(g, gs, NG, i, T) x8_tile(a, q4, g, gs, NG, i, T)
#define X8_FEW(g, gs, NG) SHXK_M_WALK(a->m, X8_FEW_M, X8_ROWS, g, gs, NG)
#define X8_STREAM(g, gs, NG) SHXK_M_WALK(a->m, X8_MT, X8_ROWS, g, gs, NG)
	if (a->m <= X8_FEW_M)
		SHXK_X8_STREAMS_WALK(a, X8_STREAMS, X8_FEW);
	else
		SHXK_X8_STREAMS_WALK(a, X8_STREAMS_M, X8_STREAM);
#undef X8_STREAM
#undef X8_FEW
#undef X8_ROWS
}

static void gemm_x8_q8_0(const struct shxk_gemm_args *a)
{
	gemm_x8(a, 0);
}

static void gemm_x8_q4_0(const struct shxk_gemm_args *a)
{
	gemm_x8(a, 1);
}

/* Through the two above, so that q4 is a constant in each tile. */
void shxk_gemm_x8_avx512(const struct shxk_gemm_args *a, int q4)
{
	if (q4)
		gemm_x8_q4_0(a);
	else
		gemm_x8_q8_0(a);
}

/*
 * avx512bf16 is this table with vdpbf16ps for BF16 weights; amx is
 * avx512bf16's with the tile GEMMs of amx.c for BF16 and X8 Q8_0, Q4_0.
 */
#define AVX512_OPS(NAME, GEMM_BF16, GEMM_Q8, GEMM_Q4, X8_Q8, X8_Q4) {	\
	.name = NAME,							\
	.quant = {							\
		[SHXK_F16] = shxk_quant_f16_avx2,			\
		[SHXK_BF16] = shxk_quant_bf16_avx2,			\
		[SHXK_Q8_0] = shxk_quant_q8_0_generic,			\
		[SHXK_Q4_0] = shxk_quant_q4_0_generic,			\
	},								\
	.act_q8 = act_q8,						\
	.gemm = {							\
		[SHXK_F32] = gemm_f32,					\
		[SHXK_F16] = gemm_f16,					\
		[SHXK_BF16] = GEMM_BF16,				\
		[SHXK_Q8_0] = GEMM_Q8,					\
		[SHXK_Q4_0] = GEMM_Q4,					\
	},								\
	.gemm_x8 = {							\
		[SHXK_Q8_0] = X8_Q8,					\
		[SHXK_Q4_0] = X8_Q4,					\
	},								\
	.attn_tile = attn_tile,						\
	.swiglu = swiglu,						\
	.widen = widen,							\
}

const struct shxk_ops shxk_ops_avx512 = AVX512_OPS("avx512", gemm_bf16,
	gemm_q8_0, gemm_q4_0, gemm_x8_q8_0, gemm_x8_q4_0);
const struct shxk_ops shxk_ops_avx512bf16 = AVX512_OPS("avx512bf16",
	shxk_gemm_bf16_avx512bf16, gemm_q8_0, gemm_q4_0, gemm_x8_q8_0,
	gemm_x8_q4_0);
const struct shxk_ops shxk_ops_amx = AVX512_OPS("amx",
	shxk_gemm_bf16_amx, gemm_q8_0, gemm_q4_0, shxk_gemm_x8_q8_0_amx, shxk_gemm_x8_q4_0_amx);
