// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * AVX2 + FMA + F16C variant. Integer dot products use vpmaddubsw (u8 x s8
 * pairs to s16) then vpmaddwd with ones (to s32). Q4_0 nibbles are
 * unsigned and their - 8 is taken back with the activation block sums;
 * Q8_0 quants are signed, so |w| x (x with w's sign) keeps the u8 x s8 form
 * without the s16 overflow a + 128 bias would cause. The X8 layout works as
 * in the AVX-512 variant, four rows per register.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "../../internal.h"
#include "../tile_driver.h"

#define INLINE static inline __attribute__((always_inline))
/* Fully unroll the tile loops so accumulators stay in registers. */
#define UNROLL _Pragma("GCC unroll 16")
/* Bytes ahead of each weight stream to prefetch (see avx512.c). */
#define SHXK_PREFETCH 2048

/* ---- activations: bit-exact with shxk_act_q8_generic ---- */

/* roundf(): half away from zero (the FPU rounds half to even). */
INLINE __m256 round_away(__m256 v)
{
	__m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
	__m256 sign = _mm256_and_ps(v, _mm256_set1_ps(-0.0f));
	__m256 frac = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), _mm256_sub_ps(v, t));
	__m256 up = _mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ);

	return _mm256_add_ps(t, _mm256_and_ps(up, _mm256_or_ps(sign,
							       _mm256_set1_ps(1.0f))));
}

INLINE float hmax256(__m256 v)
{
	__m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));

	m = _mm_max_ps(m, _mm_movehl_ps(m, m));
	return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

INLINE int32_t hsum_epi32(__m256i v)
{
	__m128i s = _mm_add_epi32(_mm256_castsi256_si128(v),
				  _mm256_extracti128_si256(v, 1));

	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
	return _mm_cvtsi128_si32(_mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1)));
}

static void act_q8(const float *x, int8_t *qs, float *d, int32_t *s, size_t nb)
{
	const __m256 abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));

	for (size_t j = 0; j < nb; j++, x += SHXK_QK, qs += SHXK_QK) {
		__m256 v[4], m;
		__m256i q[4];

		for (int c = 0; c < 4; c++)
			v[c] = _mm256_loadu_ps(x + 8 * c);
		m = _mm256_max_ps(_mm256_max_ps(_mm256_and_ps(v[0], abs),
						_mm256_and_ps(v[1], abs)),
				  _mm256_max_ps(_mm256_and_ps(v[2], abs),
						_mm256_and_ps(v[3], abs)));
		float dj = hmax256(m) / 127.0f;
		__m256 id = _mm256_set1_ps(dj != 0.0f ? 1.0f / dj : 0.0f);

		for (int c = 0; c < 4; c++)
			q[c] = _mm256_cvtps_epi32(round_away(_mm256_mul_ps(v[c], id)));
		d[j] = dj;
		s[j] = hsum_epi32(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]),
						   _mm256_add_epi32(q[2], q[3])));
		/* Packing interleaves 128-bit lanes; the permute undoes it. */
		__m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]),
					       _mm256_packs_epi32(q[2], q[3]));

		p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5,
								     2, 6, 3, 7));
		_mm256_storeu_si256((__m256i *)qs, p);
	}
}

/* ---- float weights ---- */

INLINE __m256 load_w(enum shxk_type t, const uint8_t *row, size_t e)
{
	if (t == SHXK_F16)
		return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(row + 2 * e)));
	if (t == SHXK_BF16)
		return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(
			_mm_loadu_si128((const __m128i *)(row + 2 * e))), 16));
	return _mm256_loadu_ps((const float *)(row + 4 * e));
}

INLINE float load_w1(enum shxk_type t, const uint8_t *row, size_t e)
{
	uint16_t h;
	float f;

	if (t == SHXK_F32) {
		memcpy(&f, row + 4 * e, 4);
		return f;
	}
	memcpy(&h, row + 2 * e, 2);
	return t == SHXK_F16 ? _cvtsh_ss(h) : shxk_bf16_to_fp32(h);
}

INLINE float hsum256(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));

	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

/* R weight rows from n times MT activation rows from i. */
INLINE void float_tile(const struct shxk_gemm_args *a, enum shxk_type t,
		       size_t n, size_t i, const int R, const int MT)
{
	size_t k8 = a->k & ~(size_t)7, es = t == SHXK_F32 ? 4 : 2;
	__m256 acc[4][3];
	float tail[4][3];

	UNROLL
	for (int r = 0; r < R; r++) {
		UNROLL
		for (int u = 0; u < MT; u++) {
			acc[r][u] = _mm256_setzero_ps();
			tail[r][u] = 0.0f;
		}
	}
	for (size_t e = 0; e < k8; e += 8) {
		__m256 x[3];

		UNROLL
		for (int u = 0; u < MT; u++)
			x[u] = _mm256_loadu_ps((const float *)(a->act + (i + u) * a->astride) + e);
		UNROLL
		for (int r = 0; r < R; r++) {
			const uint8_t *row = a->w + (n + r) * a->wstride;
			__m256 w = load_w(t, row, e);

			_mm_prefetch((const char *)row + e * es + SHXK_PREFETCH, _MM_HINT_T0);

			UNROLL
			for (int u = 0; u < MT; u++)
				acc[r][u] = _mm256_fmadd_ps(w, x[u], acc[r][u]);
		}
	}
	for (size_t e = k8; e < a->k; e++) {
		UNROLL
		for (int r = 0; r < R; r++) {
			float w = load_w1(t, a->w + (n + r) * a->wstride, e);

			UNROLL
			for (int u = 0; u < MT; u++)
				tail[r][u] += w * ((const float *)(a->act + (i + u) * a->astride))[e];
		}
	}
	UNROLL
	for (int r = 0; r < R; r++) {
		UNROLL
		for (int u = 0; u < MT; u++)
			shxk_store(a, i + u, n + r, hsum256(acc[r][u]) + tail[r][u]);
	}
}

/* Row n times activation row 0, four independent FMA chains. */
INLINE void float_row(const struct shxk_gemm_args *a, enum shxk_type t, size_t n)
{
	const uint8_t *row = a->w + n * a->wstride;
	const float *x = (const float *)a->act;
	size_t es = t == SHXK_F32 ? 4 : 2, e = 0;
	__m256 acc[4];
	float tail = 0.0f;

	UNROLL
	for (int c = 0; c < 4; c++)
		acc[c] = _mm256_setzero_ps();
	for (; e + 32 <= a->k; e += 32) {
		UNROLL
		for (int c = 0; c < 4; c++)
			acc[c] = _mm256_fmadd_ps(load_w(t, row, e + 8 * c),
						 _mm256_loadu_ps(x + e + 8 * c), acc[c]);
		for (size_t o = 0; o < 32 * es; o += 64)
			_mm_prefetch((const char *)row + e * es + SHXK_PREFETCH + o,
				     _MM_HINT_T0);
	}
	for (; e + 8 <= a->k; e += 8)
		acc[0] = _mm256_fmadd_ps(load_w(t, row, e), _mm256_loadu_ps(x + e), acc[0]);
	for (; e < a->k; e++)
		tail += load_w1(t, row, e) * x[e];
	shxk_store(a, 0, n, hsum256(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]),
						  _mm256_add_ps(acc[2], acc[3]))) + tail);
}

INLINE void gemm_float(const struct shxk_gemm_args *a, enum shxk_type t)
{
	/*
	 * Batch 1 reads each row once: one row at a time keeps a single
	 * sequential stream, which DRAM serves faster than four.
	 */
	if (a->m == 1) {
		for (size_t n = a->n0; n < a->n1; n++)
			float_row(a, t, n);
		return;
	}
#define FLOAT_TILE(n, R, i, T) float_tile(a, t, n, i, R, T)
	SHXK_TILE_WALK(a, 3, FLOAT_TILE);
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
	size_t n8 = n & ~(size_t)7;

	for (size_t e = 0; e < n8; e += 8)
		_mm256_storeu_ps(y + e, t == SHXK_F16 ? load_w(SHXK_F16, x, e) :
							load_w(SHXK_BF16, x, e));
	for (size_t e = n8; e < n; e++)
		y[e] = load_w1(t, x, e);
}

/* ---- SwiGLU and softmax exp ---- */

/* 2^k for integer k in [-126, 127], built in the exponent field. */
INLINE __m256 pow2i(__m256i k)
{
	return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k,
					_mm256_set1_epi32(127)), 23));
}

/*
 * e^x within 2 ulp: x = n ln2 + r, |r| <= ln2 / 2, e^r by its degree-7
 * Taylor polynomial, then times 2^(n/2) and 2^(n - n/2), each a normal
 * number, so overflow gives inf and underflow gradual 0 as for expf. The
 * clamp keeps n in range (and r finite for +-inf).
 */
INLINE __m256 exp256(__m256 x)
{
	x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-150.0f)),
			  _mm256_set1_ps(150.0f));
	__m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(0x1.715476p+0f)),
				   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x);
	__m256 p = _mm256_set1_ps(1.0f / 5040);
	__m256i ni = _mm256_cvtps_epi32(n), n1 = _mm256_srai_epi32(ni, 1);

	r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f), r);
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
	return _mm256_mul_ps(_mm256_mul_ps(p, pow2i(n1)),
			     pow2i(_mm256_sub_epi32(ni, n1)));
}

static void swiglu(const float *g, const float *u, float *y, size_t n)
{
	size_t n8 = n & ~(size_t)7;

	for (size_t j = 0; j < n8; j += 8) {
		__m256 gv = _mm256_loadu_ps(g + j);
		__m256 den = _mm256_add_ps(_mm256_set1_ps(1.0f),
					   exp256(_mm256_sub_ps(_mm256_setzero_ps(), gv)));

		_mm256_storeu_ps(y + j, _mm256_mul_ps(_mm256_div_ps(gv, den),
						      _mm256_loadu_ps(u + j)));
	}
	shxk_swiglu_generic(g + n8, u + n8, y + n8, n - n8);
}

/* ---- f16 / bf16 rows: bit-exact with shxk_quant_f16/bf16_generic ---- */

/*
 * F16C's round to nearest even, as the generic code computes it; a NaN
 * becomes the generic quiet NaN (the FPU keeps payload bits). A decode
 * step writes each new K and V row this way, a call per value before.
 */
void shxk_quant_f16_avx2(const float *x, void *y, size_t k)
{
	uint16_t *h = y;
	size_t i = 0;

	for (; i + 8 <= k; i += 8) {
		__m256 v = _mm256_loadu_ps(x + i);
		__m128i r = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT |
					       _MM_FROUND_NO_EXC);
		__m256i n32 = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
		__m128i nan = _mm_packs_epi32(_mm256_castsi256_si128(n32),
					      _mm256_extracti128_si256(n32, 1));
		__m128i qnan = _mm_or_si128(_mm_and_si128(r,
				_mm_set1_epi16((short)0x8000)), _mm_set1_epi16(0x7e00));

		_mm_storeu_si128((__m128i *)(h + i), _mm_blendv_epi8(r, qnan, nan));
	}
	shxk_quant_f16_generic(x + i, h + i, k - i);
}

/* Integer rounding to even of the dropped half; NaN: quiet, top half
 * (vcvtneps2bf16 would flush subnormal inputs to zero). */
void shxk_quant_bf16_avx2(const float *x, void *y, size_t k)
{
	uint16_t *h = y;
	size_t i = 0;

	for (; i + 8 <= k; i += 8) {
		__m256i u = _mm256_loadu_si256((const __m256i *)(x + i));
		__m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16),
					       _mm256_set1_epi32(1));
		__m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u,
				_mm256_set1_epi32(0x7fff)), odd), 16);
		/* Signed compare: |u| and 0x7f800000 are both non-negative. */
		__m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u,
				_mm256_set1_epi32(0x7fffffff)),
				_mm256_set1_epi32(0x7f800000));
		__m256i qn = _mm256_or_si256(_mm256_srli_epi32(u, 16),
					     _mm256_set1_epi32(64));

		r = _mm256_blendv_epi8(r, qn, nan);
		/* 16-bit halves to 8 values in order (packus within lanes). */
		r = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
		_mm_storeu_si128((__m128i *)(h + i), _mm256_castsi256_si128(r));
	}
	shxk_quant_bf16_generic(x + i, h + i, k - i);
}

/* ---- decode attention ---- */

/* Query heads per pass over a tile's K and V rows. */
#define AT_HEADS 4

/*
 * Independent FMA chains per pass for gh heads: an FMA waits 4-5 cycles
 * for its sum and two pipes issue one each a cycle, so one chain per head
 * ran at under half their rate. The scores take this many K rows at once,
 * the weighted sum this many 8-value chunks of V.
 */
#define AT_WIDE(gh) ((gh) == 1 ? 8 : (gh) == 2 ? 4 : 2)

/*
 * The sums of v[0..8) in the lanes of one vector (lane i: v[i]); v[i] for
 * i >= nv are taken as zero. Six vhaddps and a swap of halves, not eight
 * horizontal sums of four instructions each.
 */
INLINE __m256 hsum8x256(const __m256 *v, const int nv)
{
	__m256 z = _mm256_setzero_ps(), t[4], u0, u1;

	UNROLL
	for (int i = 0; i < 4; i++)
		t[i] = _mm256_hadd_ps(2 * i < nv ? v[2 * i] : z,
				      2 * i + 1 < nv ? v[2 * i + 1] : z);
	u0 = _mm256_hadd_ps(t[0], t[1]);
	u1 = _mm256_hadd_ps(t[2], t[3]);
	return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20),
			     _mm256_permute2f128_ps(u0, u1, 0x31));
}

/* Scores of gh heads for K rows k[r, r + w): w x gh chains, q read once. */
INLINE void attn_scores(enum shxk_type t, const int gh, const int w,
			const float *q, float scale, const void *const *k,
			size_t off, size_t n, float p[][SHXK_ATTN_TILE],
			size_t r, struct shxk_attn_next *nx)
{
	__m256 acc[8];
	float s[8];

	UNROLL
	for (int i = 0; i < w * gh; i++)
		acc[i] = _mm256_setzero_ps();
	for (size_t e = 0; e < n; e += 8) {
		__m256 qv[AT_HEADS];

		shxk_attn_next_step(nx);
		UNROLL
		for (int h = 0; h < gh; h++)
			qv[h] = _mm256_loadu_ps(q + h * n + e);
		UNROLL
		for (int j = 0; j < w; j++) {
			__m256 kx = load_w(t, (const uint8_t *)k[r + j] + off, e);

			UNROLL
			for (int h = 0; h < gh; h++)
				acc[j * gh + h] = _mm256_fmadd_ps(kx, qv[h], acc[j * gh + h]);
		}
	}
	_mm256_storeu_ps(s, _mm256_mul_ps(hsum8x256(acc, w * gh),
					  _mm256_set1_ps(scale)));
	UNROLL
	for (int j = 0; j < w; j++)
		UNROLL
		for (int h = 0; h < gh; h++)
			p[h][r + j] = s[j * gh + h];
}

/* o[h][e, e + 8w) = o * corr + sum over rows of p[h][r] v[r]: w x gh chains. */
INLINE void attn_values(enum shxk_type t, const int gh, const int w,
			const void *const *v, size_t off, size_t nr, size_t n,
			float p[][SHXK_ATTN_TILE], const __m256 *corr,
			float *o, size_t e, struct shxk_attn_next *nx)
{
	__m256 acc[8][AT_HEADS];

	UNROLL
	for (int c = 0; c < w; c++)
		UNROLL
		for (int h = 0; h < gh; h++)
			acc[c][h] = _mm256_mul_ps(_mm256_loadu_ps(o + h * n + e + 8 * c),
						  corr[h]);
	for (size_t r = 0; r < nr; r++) {
		__m256 pv[AT_HEADS];

		shxk_attn_next_step(nx);
		UNROLL
		for (int h = 0; h < gh; h++)
			pv[h] = _mm256_set1_ps(p[h][r]);
		UNROLL
		for (int c = 0; c < w; c++) {
			__m256 vx = load_w(t, (const uint8_t *)v[r] + off,
					   e + 8 * c);

			UNROLL
			for (int h = 0; h < gh; h++)
				acc[c][h] = _mm256_fmadd_ps(pv[h], vx, acc[c][h]);
		}
	}
	UNROLL
	for (int c = 0; c < w; c++)
		UNROLL
		for (int h = 0; h < gh; h++)
			_mm256_storeu_ps(o + h * n + e + 8 * c, acc[c][h]);
}

/*
 * gh <= AT_HEADS heads of one kv head, n a multiple of 8: each K and V
 * row is widened once and used by all gh heads.
 */
INLINE void attn_heads(enum shxk_type t, const int gh, const float *q,
		       float scale, const void *const *k, const void *const *v,
		       size_t off, size_t nr, size_t n, float *o, float *mx,
		       float *l, struct shxk_attn_next *nx)
{
	const int w = AT_WIDE(gh);
	float p[AT_HEADS][SHXK_ATTN_TILE];
	__m256 corr[AT_HEADS];
	size_t r = 0, e = 0;

	for (; r + w <= nr; r += w)
		attn_scores(t, gh, w, q, scale, k, off, n, p, r, nx);
	for (; r < nr; r++)
		attn_scores(t, gh, 1, q, scale, k, off, n, p, r, nx);
	UNROLL
	for (int h = 0; h < gh; h++) {
		__m256 s0, s1;
		float top, c = 1.0f;

		/* -inf past nr: no weight from the rows that are not there. */
		for (r = nr; r < SHXK_ATTN_TILE; r++)
			p[h][r] = -INFINITY;
		s0 = _mm256_loadu_ps(p[h]);
		s1 = _mm256_loadu_ps(p[h] + 8);
		top = hmax256(_mm256_max_ps(s0, s1));
		/* New max: rescale what was summed under the old one. */
		if (top > mx[h]) {
			c = expf(mx[h] - top);
			mx[h] = top;
		}
		top = mx[h];
		s0 = exp256(_mm256_sub_ps(s0, _mm256_set1_ps(top)));
		s1 = exp256(_mm256_sub_ps(s1, _mm256_set1_ps(top)));
		_mm256_storeu_ps(p[h], s0);
		_mm256_storeu_ps(p[h] + 8, s1);
		l[h] = l[h] * c + hsum256(_mm256_add_ps(s0, s1));
		corr[h] = _mm256_set1_ps(c);
	}
	for (; e + 8 * (size_t)w <= n; e += 8 * (size_t)w)
		attn_values(t, gh, w, v, off, nr, n, p, corr, o, e, nx);
	for (; e < n; e += 8)
		attn_values(t, gh, 1, v, off, nr, n, p, corr, o, e, nx);
}

/* One instance per type and head count: acc[] stays in ymm. */
#define AT_CALL(T, GH, h, off)						\
	attn_heads(T, GH, q + (h) * n, scale, k, v, off, nr, n, o + (h) * n, \
		   mx + (h), l + (h), nx)
#define AT_PASS(gh, h, off) SHXK_ATTN_TYPED(t, SHXK_ATTN_GH4, gh, AT_CALL, h, off)

static void attn_tile(enum shxk_type t, const float *q, size_t g, size_t ng,
		      float scale, const void *const *k, const void *const *v,
		      size_t nr, size_t n, float *o, float *mx, float *l,
		      struct shxk_attn_next *gnx)
{
	/* A local cursor: see struct shxk_attn_next. */
	struct shxk_attn_next lnx = *gnx, *nx = &lnx;

	if (n % 8) {
		shxk_attn_tile_generic(t, q, g, ng, scale, k, v, nr, n, o, mx,
				       l, gnx);
		return;
	}
	SHXK_ATTN_GROUPS(nx, t, g, ng, n, AT_HEADS, AT_PASS);
	*gnx = lnx;
}

/* ---- Q8_0 / Q4_0, row-major ---- */

/* Sum of u8 x s8 products in each 32-bit lane. */
INLINE __m256i dot_us(__m256i u, __m256i s)
{
	return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

/* Q4_0 block quants 0..15 as bytes in element order. */
INLINE __m256i q4_bytes(const uint8_t *qs)
{
	__m128i q = _mm_loadu_si128((const __m128i *)qs);
	__m128i m4 = _mm_set1_epi8(15);

	return _mm256_inserti128_si256(
		_mm256_castsi128_si256(_mm_and_si128(q, m4)),
		_mm_and_si128(_mm_srli_epi16(q, 4), m4), 1);
}

INLINE void quant_tile(const struct shxk_gemm_args *a, int q4, size_t n,
		       size_t i, const int R, const int MT)
{
	size_t bs = q4 ? sizeof(struct shxk_block_q4_0) :
			 sizeof(struct shxk_block_q8_0);
	__m256 acc[4][3];

	UNROLL
	for (int r = 0; r < R; r++) {
		UNROLL
		for (int u = 0; u < MT; u++)
			acc[r][u] = _mm256_setzero_ps();
	}
	for (size_t j = 0; j < a->k / SHXK_QK; j++) {
		__m256i x[3], nb[3];
		float dx[3];

		UNROLL
		for (int u = 0; u < MT; u++) {
			const uint8_t *ar = a->act + (i + u) * a->astride;

			x[u] = _mm256_loadu_si256((const __m256i *)(ar + j * SHXK_QK));
			/* Q4_0: - 8 x (lane sums of x). */
			if (q4)
				nb[u] = dot_us(_mm256_set1_epi8(8), x[u]);
			dx[u] = shxk_act_d(ar, a->k)[j];
		}
		UNROLL
		for (int r = 0; r < R; r++) {
			const uint8_t *b = a->w + (n + r) * a->wstride + j * bs;
			uint16_t dh;
			float dw;
			__m256i w;

			/* Once per 64 bytes or less of each row's stream. */
			if (!q4 || !(j & 1))
				_mm_prefetch((const char *)b + SHXK_PREFETCH, _MM_HINT_T0);
			memcpy(&dh, b, 2);
			dw = _cvtsh_ss(dh);
			if (q4)
				w = q4_bytes(b + 2);
			else
				w = _mm256_loadu_si256((const __m256i *)(b + 2));
			UNROLL
			for (int u = 0; u < MT; u++) {
				__m256i dot = q4 ?
					_mm256_sub_epi32(dot_us(w, x[u]), nb[u]) :
					dot_us(_mm256_sign_epi8(w, w),
					       _mm256_sign_epi8(x[u], w));

				acc[r][u] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot),
							    _mm256_set1_ps(dw * dx[u]),
							    acc[r][u]);
			}
		}
	}
	UNROLL
	for (int r = 0; r < R; r++) {
		UNROLL
		for (int u = 0; u < MT; u++)
			shxk_store(a, i + u, n + r, hsum256(acc[r][u]));
	}
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
	SHXK_TILE_WALK(a, 3, QUANT_TILE);
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

/* Activation rows per X8 tile: accumulators and dot products in ymm. */
#define X8_MT 4
/*
 * Batch 1 reads X8_STREAMS groups at once, from X8_STREAMS evenly spaced
 * places in the call's rows, with no software prefetch: the hardware
 * prefetcher follows them all, and more lines are in flight than one
 * stream keeps. AMD EPYC Zen 3 (family 25 model 1), 2 threads, M = 1,
 * % of the read bandwidth over 4096x14336, 14336x4096 and 4096x128256,
 * q4_0 and q8_0, 5-6 alternating runs: one stream prefetched 2 KiB ahead
 * (the tile below) 89-91; 2 streams 95-98; 3, 4, 8 streams 104-108 (with
 * the 2 KiB prefetch too: 103), against a probe of one run a thread;
 * against the faster of one and four runs, 85-101 %.
 */
#define X8_STREAMS 4

/* Activation bytes 8p..8p+7 of a block, in every lane pair. */
INLINE __m256i bcast8(const int8_t *p)
{
	long long v;

	memcpy(&v, p, 8);
	return _mm256_set1_epi64x(v);
}

/*
 * NG 8-row groups g, g + gs, ... times MT activation rows from i; pf:
 * prefetch each group's weights SHXK_PREFETCH ahead. Half h holds rows
 * 4h..4h+3 (the two 32-byte halves of each 64-byte chunk), a row's dot
 * product in the two 32-bit lanes of its quadword; vphaddd folds the
 * halves into one lane per row, rows 0 1 4 5 2 3 6 7, so one convert and
 * one FMA serve eight rows. Q4_0's four vpmaddubsw results of a row sum
 * in 16 bits before its one vpmaddwd (|sum| <= 4 x 2 x 15 x 128 < 2^15);
 * Q8_0's could not (2 x 128 x 127 each), so each has its own.
 */
INLINE void x8_tile(const struct shxk_gemm_args *a, int q4, size_t g,
		    size_t gs, const int NG, size_t i, const int MT, const int pf)
{
	size_t bs = q4 ? sizeof(struct shxk_block_q4_0) :
			 sizeof(struct shxk_block_q8_0);
	const __m256i m4 = _mm256_set1_epi8(15), ones = _mm256_set1_epi16(1);
	const int8_t *x[X8_MT];
	const float *dx[X8_MT];
	const int32_t *sx[X8_MT];
	__m256 acc[X8_STREAMS][X8_MT];

	UNROLL
	for (int u = 0; u < MT; u++) {
		const uint8_t *ar = a->act + (i + u) * a->astride;

		x[u] = (const int8_t *)ar;
		dx[u] = shxk_act_d(ar, a->k);
		sx[u] = shxk_act_s(ar, a->k);
		UNROLL
		for (int e = 0; e < NG; e++)
			acc[e][u] = _mm256_setzero_ps();
	}
	for (size_t j = 0; j < a->k / SHXK_QK; j++)
	UNROLL
	for (int e = 0; e < NG; e++) {
		const uint8_t *col = a->w + (g + e * gs) * a->wstride +
				     j * bs * SHXK_X8;
		/* w[h][c]: rows 4h..4h+3 by activation bytes 8c..8c+7. */
		const uint8_t *wq = col + 2 * SHXK_X8;
		__m256i w[2][4];

		if (pf)
			for (size_t o = 0; o < bs * SHXK_X8; o += 64)
				_mm_prefetch((const char *)col + SHXK_PREFETCH + o,
					     _MM_HINT_T0);
		UNROLL
		for (int h = 0; h < 2; h++) {
			if (q4) {
				__m256i c0 = _mm256_loadu_si256((const __m256i *)(wq + 32 * h));
				__m256i c1 = _mm256_loadu_si256((const __m256i *)(wq + 64 + 32 * h));

				w[h][0] = _mm256_and_si256(c0, m4);
				w[h][1] = _mm256_and_si256(c1, m4);
				w[h][2] = _mm256_and_si256(_mm256_srli_epi16(c0, 4), m4);
				w[h][3] = _mm256_and_si256(_mm256_srli_epi16(c1, 4), m4);
			} else {
				UNROLL
				for (int c = 0; c < 4; c++)
					w[h][c] = _mm256_abs_epi8(_mm256_loadu_si256(
						(const __m256i *)(wq + 64 * c + 32 * h)));
			}
		}
		/* The scales in the rows' lane order. */
		__m256 dw = _mm256_cvtph_ps(_mm_shuffle_epi32(
			_mm_loadu_si128((const __m128i *)col), 0xd8));

		UNROLL
		for (int u = 0; u < MT; u++) {
			const int8_t *xj = x[u] + j * SHXK_QK;
			__m256i p[2][4], s[2], d;

			UNROLL
			for (int c = 0; c < 4; c++) {
				__m256i xb = bcast8(xj + 8 * c);

				UNROLL
				for (int h = 0; h < 2; h++)
					p[h][c] = q4 ? _mm256_maddubs_epi16(w[h][c], xb) :
						dot_us(w[h][c], _mm256_sign_epi8(xb,
							_mm256_loadu_si256((const __m256i *)
								(wq + 64 * c + 32 * h))));
			}
			/* Pairwise sums: a chain made GCC spill (batch 2: 40 GMAC/s, not 58). */
			UNROLL
			for (int h = 0; h < 2; h++)
				s[h] = q4 ? _mm256_madd_epi16(_mm256_add_epi16(
						_mm256_add_epi16(p[h][0], p[h][1]),
						_mm256_add_epi16(p[h][2], p[h][3])), ones) :
					_mm256_add_epi32(_mm256_add_epi32(p[h][0], p[h][1]),
							 _mm256_add_epi32(p[h][2], p[h][3]));
			d = _mm256_hadd_epi32(s[0], s[1]);
			/* Q4_0: - 8 x the block's activation sum. */
			if (q4)
				d = _mm256_sub_epi32(d, _mm256_set1_epi32(8 * sx[u][j]));
			acc[e][u] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d),
				_mm256_mul_ps(dw, _mm256_set1_ps(dx[u][j])),
				acc[e][u]);
		}
	}
	UNROLL
	for (int e = 0; e < NG; e++)
		UNROLL
		for (int u = 0; u < MT; u++) {
			float v[8];
			size_t n = (g + e * gs) * SHXK_X8;

			_mm256_storeu_ps(v, acc[e][u]);
			for (size_t r = 0; r < 8; r++)
				if (n + r >= a->n0 && n + r < a->n1)
					shxk_store(a, i + u, n + r,
						   v[(r & 1) | (r & 2) << 1 | (r & 4) >> 1]);
		}
}

INLINE void gemm_x8(const struct shxk_gemm_args *a, int q4)
{
/* Batch 1's streams without software prefetch, the groups left with it. */
#define X8_STREAM(g, gs, NG) x8_tile(a, q4, g, gs, NG, 0, 1, (NG) == 1)
#define X8_TILE(g, i, T) x8_tile(a, q4, g, 0, 1, i, T, 1)
	if (a->m == 1)
		SHXK_X8_STREAMS_WALK(a, X8_STREAMS, X8_STREAM);
	else
		SHXK_X8_WALK(a, X8_MT, X8_TILE);
#undef X8_TILE
#undef X8_STREAM
}

static void gemm_x8_q8_0(const struct shxk_gemm_args *a)
{
	gemm_x8(a, 0);
}

static void gemm_x8_q4_0(const struct shxk_gemm_args *a)
{
	gemm_x8(a, 1);
}

const struct shxk_ops shxk_ops_avx2 = {
	.name = "avx2",
	.quant = {
		[SHXK_F16] = shxk_quant_f16_avx2,
		[SHXK_BF16] = shxk_quant_bf16_avx2,
		[SHXK_Q8_0] = shxk_quant_q8_0_generic,
		[SHXK_Q4_0] = shxk_quant_q4_0_generic,
	},
	.act_q8 = act_q8,
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
	.attn_tile = attn_tile,
	.swiglu = swiglu,
	.widen = widen,
};
