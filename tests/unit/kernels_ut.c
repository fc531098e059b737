// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Kernels against references: the chosen ISA variant (SYSHAX_ISA) against
 * the generic kernels, and the generic kernels against fp64 arithmetic, on
 * random shapes with odd sizes and tails. Tolerances are worst-case
 * rounding bounds, explained in docs/kernels.md:
 *   sum of n f32 terms:  |err| <= (n + 2) * 2^-24 * sum |terms|
 *   f16 / bf16 output:   plus 2^-11 / 2^-8 of the value
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "../t_cunit.h"

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static uint32_t t_rand(void)
{
	g_rng ^= g_rng << 13;
	g_rng ^= g_rng >> 7;
	g_rng ^= g_rng << 17;
	return (uint32_t)(g_rng >> 32);
}

/* Uniform in [-a, a). */
static float t_uni(float a)
{
	return a * ((float)(t_rand() >> 8) * 0x1p-23f - 1.0f);
}

static void *t_alloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);

	CU_ASSERT_FATAL(p != NULL);
	return p;
}

/* Relative bound for a sum of n f32 roundings. */
static double t_sum_tol(size_t n, double abs_sum)
{
	return (double)(n + 2) * 0x1p-24 * abs_sum + 1e-30;
}

static double t_out_tol(enum shxk_type yt, double v)
{
	return yt == SHXK_F16 ? fabs(v) * 0x1p-11 + 0x1p-24 :
	       yt == SHXK_BF16 ? fabs(v) * 0x1p-8 : 0.0;
}

static float t_load(enum shxk_type t, const void *p, size_t i)
{
	if (t == SHXK_F16)
		return shxk_fp16_to_fp32(((const uint16_t *)p)[i]);
	if (t == SHXK_BF16)
		return shxk_bf16_to_fp32(((const uint16_t *)p)[i]);
	return ((const float *)p)[i];
}

/* ---- GEMM ---- */

struct t_gemm {
	enum shxk_type wt, xt, yt;
	enum shxk_layout layout;
	size_t m, n, k;
};

static int g_cases, g_bad;

/* Prepared activation row i decoded to f32 (what the kernel multiplies). */
static void t_act_decode(const struct t_gemm *c, const uint8_t *act,
			 size_t i, double *xa)
{
	size_t rs = shxk_act_row_size(c->wt, c->k);
	const uint8_t *r = act + i * rs;

	for (size_t e = 0; e < c->k; e++) {
		if (c->wt == SHXK_Q8_0 || c->wt == SHXK_Q4_0)
			xa[e] = (double)shxk_act_d(r, c->k)[e / SHXK_QK] *
				((const int8_t *)r)[e];
		else
			xa[e] = ((const float *)r)[e];
	}
}

static void t_gemm_case(const struct t_gemm *c)
{
	size_t k = c->k, n = c->n, m = c->m;
	size_t xes = c->xt == SHXK_F32 ? 4 : 2, yes = c->yt == SHXK_F32 ? 4 : 2;
	float *wf = t_alloc(n * k * sizeof(float));
	float *xf = t_alloc(m * k * sizeof(float)), *wd = t_alloc(n * k * 4);
	uint8_t *w = t_alloc(shxk_row_size(c->wt, k) * n);
	uint8_t *wp = t_alloc(shxk_repack_size(c->wt, c->layout, n, k));
	uint8_t *x = t_alloc(m * k * xes);
	uint8_t *act = t_alloc(shxk_act_row_size(c->wt, k) * m);
	uint8_t *actg = t_alloc(shxk_act_row_size(c->wt, k) * m);
	uint8_t *y = t_alloc(m * n * yes), *yg = t_alloc(m * n * yes);
	double *xa = t_alloc(k * sizeof(double));
	struct shxk_weights src = { c->wt, SHXK_LAYOUT_ROWS, n, k, w };
	struct shxk_weights wts = { c->wt, c->layout, n, k, wp };
	size_t ngroups = c->layout == SHXK_LAYOUT_X8 ? (n + 7) / 8 : n;
	int bad = 0;

	for (size_t e = 0; e < n * k; e++)
		wf[e] = t_uni(1.0f);
	for (size_t e = 0; e < m * k; e++)
		xf[e] = t_uni(2.0f);
	/* A few outliers so block scales differ a lot. */
	wf[t_rand() % (n * k)] = 7.5f;
	xf[t_rand() % (m * k)] = -9.0f;
	CU_ASSERT_EQUAL(shxk_quantize(c->wt, wf, w, k, 0, n), 0);
	CU_ASSERT_EQUAL(shxk_dequantize(c->wt, w, wd, k, 0, n), 0);
	CU_ASSERT_EQUAL(shxk_quantize(c->xt, xf, x, k, 0, m), 0);
	/* Repack in two pieces: ranges must compose. */
	CU_ASSERT_EQUAL(shxk_repack(&src, c->layout, wp, 0, ngroups / 2), 0);
	CU_ASSERT_EQUAL(shxk_repack(&src, c->layout, wp, ngroups / 2, ngroups), 0);

	/* Variant vs generic activation preparation: bit-exact. */
	CU_ASSERT_EQUAL(shxk_act_prepare(c->wt, c->xt, x, k, k, act, 0, m), 0);
	if (c->wt == SHXK_Q8_0 || c->wt == SHXK_Q4_0) {
		for (size_t i = 0; i < m; i++) {
			uint8_t *r = actg + i * shxk_act_row_size(c->wt, k);

			for (size_t j = 0; j < k / SHXK_QK; j++) {
				float tmp[SHXK_QK];

				for (int e = 0; e < SHXK_QK; e++)
					tmp[e] = t_load(c->xt, x, i * k + j * SHXK_QK + e);
				shxk_act_q8_generic(tmp, (int8_t *)r + j * SHXK_QK,
						    shxk_act_d(r, k) + j,
						    shxk_act_s(r, k) + j, 1);
			}
		}
		CU_ASSERT_EQUAL(memcmp(act, actg, shxk_act_row_size(c->wt, k) * m), 0);
	}
	/* BF16 weights: the bf16 copy (vdpbf16ps) holds the f32 copy's values. */
	if (c->wt == SHXK_BF16) {
		for (size_t i = 0; i < m; i++) {
			const uint8_t *r = act + i * shxk_act_row_size(c->wt, k);

			for (size_t e = 0; e < k; e++)
				bad += shxk_bf16_to_fp32(shxk_act_bf16(r, k)[e]) !=
				       ((const float *)r)[e];
		}
	}

	/* The variant, over two row ranges; the generic kernel, in one. */
	size_t split = n / 3;

	CU_ASSERT_EQUAL(shxk_gemm(&wts, act, m, y, c->yt, n, 0, split), 0);
	CU_ASSERT_EQUAL(shxk_gemm(&wts, act, m, y, c->yt, n, split, n), 0);
	{
		struct shxk_gemm_args a = {
			.w = w, .wstride = shxk_row_size(c->wt, k),
			.act = act, .astride = shxk_act_row_size(c->wt, k),
			.m = m, .k = k, .y = yg, .yt = c->yt, .ldy = n,
			.n0 = 0, .n1 = n,
		};

		shxk_ops_generic.gemm[c->wt](&a);
	}

	for (size_t i = 0; i < m; i++) {
		t_act_decode(c, act, i, xa);
		for (size_t j = 0; j < n; j++) {
			double ref = 0, abs_sum = 0, qerr = 0;

			for (size_t e = 0; e < k; e++) {
				double p = (double)wd[j * k + e] * xa[e];

				ref += p;
				abs_sum += fabs(p);
				/* Activation quantization: half a step each. */
				qerr += fabs(wd[j * k + e]) *
					fabs(xa[e] - t_load(c->xt, x, i * k + e));
			}
			double tol = t_sum_tol(k, abs_sum);
			double v = t_load(c->yt, y, i * n + j);
			double g = t_load(c->yt, yg, i * n + j);
			double xref = 0;

			for (size_t e = 0; e < k; e++)
				xref += (double)wd[j * k + e] * t_load(c->xt, x, i * k + e);
			/* Generic vs fp64 on the same (prepared) operands. */
			bad += fabs(g - ref) > tol + t_out_tol(c->yt, ref);
			/* ... and vs the unquantized activations. */
			bad += fabs(g - xref) > qerr + tol + t_out_tol(c->yt, ref);
			/* The variant vs generic: both within tol of ref. */
			bad += fabs(v - g) > 2 * tol + 2 * t_out_tol(c->yt, ref);
			/*
			 * BF16 weights: vs the f32 weights and activations
			 * before either was rounded to bf16 (2^-8 each: 8
			 * significant bits).
			 */
			if (c->wt == SHXK_BF16) {
				double fref = 0, fabs_sum = 0;

				for (size_t e = 0; e < k; e++) {
					double p = (double)wf[j * k + e] *
						   t_load(c->xt, x, i * k + e);

					fref += p;
					fabs_sum += fabs(p);
				}
				bad += fabs(v - fref) > (0x1p-7 + 0x1p-16) * fabs_sum +
					tol + t_out_tol(c->yt, ref);
			}
		}
	}
	g_cases++;
	if (bad) {
		g_bad++;
		printf("\n  gemm w=%d x=%d y=%d layout=%d m=%zu n=%zu k=%zu: %d bad\n",
		       c->wt, c->xt, c->yt, c->layout, m, n, k, bad);
	}
	CU_ASSERT_EQUAL(bad, 0);
	free(wf), free(xf), free(wd), free(w), free(wp), free(x);
	free(act), free(actg), free(y), free(yg), free(xa);
}

static void t_gemm_shapes(void)
{
	/*
	 * Every leftover height of tiles of 3, 4 and 6 activation rows; the
	 * amx variant's 16-row tiles, full and not, alone and in pairs (its
	 * chunks of 128 rows: t_gemm_large); 200 rows: batch 1 in streams
	 * of several groups each (split at 66: 17 groups).
	 */
	static const size_t ms[] = { 1, 2, 3, 4, 5, 8, 11, 13, 16, 32, 47, 81 };
	static const size_t ns[] = { 1, 7, 8, 29, 64, 200 };
	static const size_t kqs[] = { 32, 96, 544 };
	static const size_t kfs[] = { 1, 17, 64, 301 };

	for (int wt = 0; wt < SHXK_NTYPES; wt++) {
		int q = wt == SHXK_Q8_0 || wt == SHXK_Q4_0;

		for (int l = 0; l <= q; l++) {
			for (size_t a = 0; a < sizeof(ms) / sizeof(ms[0]); a++) {
				for (size_t b = 0; b < sizeof(ns) / sizeof(ns[0]); b++) {
					struct t_gemm c = {
						.wt = wt, .layout = l,
						.xt = (a + b) % 3, .yt = (a + 2 * b) % 3,
						.m = ms[a], .n = ns[b],
						.k = q ? kqs[(a + b) % 3] : kfs[(a + b) % 4],
					};

					t_gemm_case(&c);
				}
			}
		}
	}
	printf("\n  %d gemm cases, %d bad\n", g_cases, g_bad);
}

/* Random shapes, types and layouts (fixed seed: failures reproduce). */
static void t_gemm_random(void)
{
	int before = g_bad;

	for (int c = 0; c < 40; c++) {
		int wt = (int)(t_rand() % SHXK_NTYPES);
		int q = wt == SHXK_Q8_0 || wt == SHXK_Q4_0;
		struct t_gemm g = {
			.wt = wt,
			.layout = q ? (enum shxk_layout)(t_rand() % 2) : SHXK_LAYOUT_ROWS,
			.xt = (enum shxk_type)(t_rand() % 3),
			.yt = (enum shxk_type)(t_rand() % 3),
			.m = 1 + t_rand() % 40, .n = 1 + t_rand() % 70,
			.k = q ? SHXK_QK * (1 + t_rand() % 20) : 1 + t_rand() % 700,
		};

		t_gemm_case(&g);
	}
	CU_ASSERT_EQUAL(g_bad, before);
}

/* The largest batch and a big K, once per weight type. */
static void t_gemm_large(void)
{
	for (int wt = 0; wt < SHXK_NTYPES; wt++) {
		int q = wt == SHXK_Q8_0 || wt == SHXK_Q4_0;
		struct t_gemm c = {
			.wt = wt, .layout = q ? SHXK_LAYOUT_X8 : SHXK_LAYOUT_ROWS,
			.xt = SHXK_F32, .yt = SHXK_F32,
			.m = SHXK_GEMM_MAX_M, .n = 19, .k = 2048,
		};

		t_gemm_case(&c);
		c.layout = SHXK_LAYOUT_ROWS;
		c.m = 5;
		t_gemm_case(&c);
	}
}

static void t_repack_layout(void)
{
	/* 9 rows of Q4_0, 2 blocks: row r block j has scale r*2+j, qs r. */
	struct shxk_block_q4_0 w[9][2];
	uint8_t p[16 * 2 * 18];
	struct shxk_weights src = { SHXK_Q4_0, SHXK_LAYOUT_ROWS, 9, 64, w };

	for (int r = 0; r < 9; r++)
		for (int j = 0; j < 2; j++) {
			w[r][j].d = (uint16_t)(r * 2 + j);
			for (int i = 0; i < 16; i++)
				w[r][j].qs[i] = (uint8_t)(r * 16 + i);
		}
	CU_ASSERT_EQUAL(shxk_repack_size(SHXK_Q4_0, SHXK_LAYOUT_X8, 9, 64), sizeof(p));
	CU_ASSERT_EQUAL(shxk_repack_size(SHXK_F16, SHXK_LAYOUT_X8, 9, 64), 0);
	memset(p, 0xff, sizeof(p));
	CU_ASSERT_EQUAL(shxk_repack(&src, SHXK_LAYOUT_X8, p, 0, 2), 0);
	/* Group 0, block column 1: scales of rows 0..7, block 1. */
	CU_ASSERT_EQUAL(p[144 + 2 * 3], 3 * 2 + 1);
	/* Its qs: chunk 1 (bytes 8..15) of row 5 at 16 + (8 + 5) * 8. */
	CU_ASSERT_EQUAL(p[144 + 16 + 13 * 8], 5 * 16 + 8);
	/* Group 1 holds row 8 and seven zero rows. */
	CU_ASSERT_EQUAL(p[288 + 16], 8 * 16);
	CU_ASSERT_EQUAL(p[288 + 2], 0);
	CU_ASSERT_EQUAL(p[288 + 16 + 8], 0);
	CU_ASSERT_EQUAL(shxk_repack(&src, SHXK_LAYOUT_X8, p, 0, 3), -EINVAL);
}

/* A row read back from either layout equals the row dequantized. */
static void t_weights_row(void)
{
	enum shxk_type types[] = { SHXK_F32, SHXK_F16, SHXK_BF16, SHXK_Q8_0,
				   SHXK_Q4_0 };
	size_t n = 11, k = 64;

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		enum shxk_type t = types[i];
		size_t rs = shxk_row_size(t, k);
		float *x = t_alloc(n * k * sizeof(float)), want[64], got[64];
		uint8_t *w = t_alloc(n * rs), *p;
		bool q = t == SHXK_Q8_0 || t == SHXK_Q4_0;
		struct shxk_weights src = { t, SHXK_LAYOUT_ROWS, n, k, w };
		struct shxk_weights x8 = { t, SHXK_LAYOUT_X8, n, k, NULL };

		for (size_t e = 0; e < n * k; e++)
			x[e] = sinf((float)e * 0.37f) * 3.0f;
		CU_ASSERT_EQUAL(shxk_quantize(t, x, w, k, 0, n), 0);
		p = t_alloc(q ? shxk_repack_size(t, SHXK_LAYOUT_X8, n, k) : 1);
		x8.data = p;
		if (q)
			CU_ASSERT_EQUAL(shxk_repack(&src, SHXK_LAYOUT_X8, p, 0,
						    (n + 7) / 8), 0);
		for (size_t r = 0; r < n; r++) {
			CU_ASSERT_EQUAL(shxk_dequantize(t, w + r * rs, want, k,
							0, 1), 0);
			CU_ASSERT_EQUAL(shxk_weights_row(&src, r, got), 0);
			CU_ASSERT_EQUAL(memcmp(want, got, sizeof(got)), 0);
			if (!q)
				continue;
			memset(got, 0, sizeof(got));
			CU_ASSERT_EQUAL(shxk_weights_row(&x8, r, got), 0);
			CU_ASSERT_EQUAL(memcmp(want, got, sizeof(got)), 0);
		}
		CU_ASSERT_EQUAL(shxk_weights_row(&src, n, got), -EINVAL);
		free(p);
		free(w);
		free(x);
	}
}

static void t_gemm_invalid(void)
{
	float y[4], act[64] = { 0 };
	uint8_t w[64];
	struct shxk_weights wq = { SHXK_Q4_0, SHXK_LAYOUT_ROWS, 1, 32, w };
	struct shxk_weights wf = { SHXK_F32, SHXK_LAYOUT_X8, 1, 16, w };

	CU_ASSERT_EQUAL(shxk_gemm(&wq, act, 0, y, SHXK_F32, 1, 0, 1), -EINVAL);
	CU_ASSERT_EQUAL(shxk_gemm(&wq, act, 257, y, SHXK_F32, 1, 0, 1), -EINVAL);
	CU_ASSERT_EQUAL(shxk_gemm(&wq, act, 1, y, SHXK_Q8_0, 1, 0, 1), -EINVAL);
	CU_ASSERT_EQUAL(shxk_gemm(&wq, act, 1, y, SHXK_F32, 1, 0, 2), -EINVAL);
	CU_ASSERT_EQUAL(shxk_gemm(&wf, act, 1, y, SHXK_F32, 1, 0, 1), -EINVAL);
	CU_ASSERT_EQUAL(shxk_act_prepare(SHXK_Q8_0, SHXK_F32, act, 40, 40, y, 0, 1),
			-EINVAL);
	CU_ASSERT_EQUAL(shxk_act_prepare(SHXK_F16, SHXK_Q8_0, act, 4, 4, y, 0, 1),
			-EINVAL);
}

/* ---- FFN pieces ---- */

static void t_swiglu(void)
{
	enum { M = 3, N = 37, LD = 40 };
	float g[M * LD], u[M * LD], y[M * LD];
	int bad = 0;

	for (int i = 0; i < M * LD; i++) {
		g[i] = t_uni(12.0f);
		u[i] = t_uni(3.0f);
		y[i] = 1234.0f;
	}
	CU_ASSERT_EQUAL(shxk_swiglu(g, LD, u, LD, y, LD, M, 0, 20), 0);
	CU_ASSERT_EQUAL(shxk_swiglu(g, LD, u, LD, y, LD, M, 20, N), 0);
	for (int i = 0; i < M; i++) {
		for (int j = 0; j < LD; j++) {
			double gv = g[i * LD + j];
			double ref = gv / (1.0 + exp(-gv)) * u[i * LD + j];
			float v = y[i * LD + j];

			if (j >= N)
				bad += v != 1234.0f;	/* outside the range */
			else
				bad += fabs(v - ref) > 4e-7 * fabs(ref) + 1e-30;
		}
	}
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(shxk_swiglu(g, 8, u, LD, y, LD, 2, 0, 9), -EINVAL);
}

/* silu over its whole range (vector exp: overflow, underflow, tails). */
static void t_swiglu_range(void)
{
	enum { N = 20011 };
	static float g[N], u[N], y[N];
	static const float special[] = { 0.0f, -0.0f, 1e-30f, -1e-30f, 88.0f,
					 -88.0f, 104.0f, -104.0f, 200.0f, -200.0f,
					 INFINITY };
	int bad = 0;

	for (int i = 0; i < N; i++) {
		g[i] = -90.0f + 180.0f * (float)i / N;
		u[i] = 1.0f;
	}
	memcpy(g, special, sizeof(special));
	CU_ASSERT_EQUAL(shxk_swiglu(g, N, u, N, y, N, 1, 0, N), 0);
	for (int i = 0; i < N; i++) {
		double ref = isinf(g[i]) ? INFINITY : g[i] / (1.0 + exp(-(double)g[i]));

		if (isinf(ref))
			bad += y[i] != (float)ref;
		else
			/* Below g = -88.7, e^-g overflows: silu ~ 1e-37 -> 0. */
			bad += !(fabs(y[i] - ref) <= 4e-7 * fabs(ref) + 0x1p-120);
	}
	CU_ASSERT_EQUAL(bad, 0);
}

/*
 * The variant's f16 and bf16 rows equal the generic ones bit for bit:
 * every exponent with the rounding ties and their neighbours, runs of
 * consecutive bit patterns across the whole range (NaN, infinities,
 * subnormals included), row lengths with tails.
 */
static void t_quant_half(void)
{
	enum { N = 4099 };
	static const uint32_t low[] = { 0x0, 0x1, 0xfff, 0x1000, 0x1001,
					0x2fff, 0x3000, 0x3001, 0x7fff, 0x8000,
					0x8001, 0x18000, 0x7fffff, 0x400000 };
	static const enum shxk_type types[] = { SHXK_F16, SHXK_BF16 };
	static uint32_t u[N];
	static uint16_t got[N], want[N];
	int bad = 0;

	for (int chunk = 0; chunk < 1100; chunk++) {
		size_t n = 0;

		if (chunk < 4) {
			/* Every exponent and sign with the tie patterns. */
			for (uint32_t e = (uint32_t)chunk * 128;
			     e < (uint32_t)(chunk + 1) * 128; e++)
				for (size_t j = 0; j < sizeof(low) / sizeof(low[0]) &&
				     n < N; j++)
					u[n++] = (e << 23) ^ low[j];
		} else {
			uint32_t base = (uint32_t)chunk * 3904057u + t_rand() % 4096;

			for (; n < N; n++)
				u[n] = base + (uint32_t)n;
		}
		for (size_t t = 0; t < 2; t++) {
			size_t k = n - chunk % 16;	/* tails of 0..15 */

			CU_ASSERT_EQUAL(shxk_quantize(types[t], (const float *)u,
						      got, k, 0, 1), 0);
			if (types[t] == SHXK_F16)
				shxk_quant_f16_generic((const float *)u, want, k);
			else
				shxk_quant_bf16_generic((const float *)u, want, k);
			bad += memcmp(got, want, k * sizeof(got[0])) != 0;
		}
	}
	CU_ASSERT_EQUAL(bad, 0);
}

static void t_rmsnorm(void)
{
	enum { R = 4, K = 333 };
	static float x[R * K], w[K], y[R * K];
	int bad = 0;

	for (int i = 0; i < R * K; i++)
		x[i] = t_uni(5.0f);
	for (int i = 0; i < K; i++)
		w[i] = t_uni(2.0f);
	CU_ASSERT_EQUAL(shxk_rmsnorm(x, w, y, K, 1e-6f, 0, 3), 0);
	CU_ASSERT_EQUAL(shxk_rmsnorm(x, NULL, y, K, 1e-6f, 3, 4), 0);
	for (int r = 0; r < R; r++) {
		double ss = 0;

		for (int e = 0; e < K; e++)
			ss += (double)x[r * K + e] * x[r * K + e];
		double sc = 1.0 / sqrt(ss / K + 1e-6);

		for (int e = 0; e < K; e++) {
			double ref = x[r * K + e] * sc * (r < 3 ? w[e] : 1.0);

			bad += fabs(y[r * K + e] - ref) > 4e-7 * fabs(ref) + 1e-30;
		}
	}
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(shxk_rmsnorm(x, w, y, 0, 1e-6f, 0, 1), -EINVAL);
}

/* ---- MoE ---- */

static void t_moe_group(void)
{
	/* 4 tokens, top-2 of 3 experts. */
	static const int32_t ids[8] = { 2, 0, 0, 1, 2, 1, 0, 2 };
	static const uint32_t off_ref[4] = { 0, 3, 5, 8 };
	static const uint32_t order_ref[8] = { 1, 2, 6, 3, 5, 0, 4, 7 };
	uint32_t off[4], order[8], pos[8];
	int32_t bad_ids[2] = { 0, 3 };

	CU_ASSERT_EQUAL(shxk_moe_group(ids, 4, 2, 3, off, order, pos), 0);
	CU_ASSERT_EQUAL(memcmp(off, off_ref, sizeof(off)), 0);
	CU_ASSERT_EQUAL(memcmp(order, order_ref, sizeof(order)), 0);
	for (uint32_t p = 0; p < 8; p++)
		CU_ASSERT_EQUAL(pos[order[p]], p);
	CU_ASSERT_EQUAL(shxk_moe_group(bad_ids, 1, 2, 3, off, order, pos), -EINVAL);
}

static void t_moe_combine(void)
{
	enum { T = 5, TOPK = 3, NE = 4, D = 19 };
	int32_t ids[T * TOPK];
	uint32_t off[NE + 1], order[T * TOPK], pos[T * TOPK];
	float eo[T * TOPK * D], wts[T * TOPK], y[T * D];
	float per[T * TOPK][D];	/* expert output per (token, slot) */
	int bad = 0;

	for (int c = 0; c < T * TOPK; c++) {
		ids[c] = (int32_t)(t_rand() % NE);
		wts[c] = t_uni(1.0f);
		for (int e = 0; e < D; e++)
			per[c][e] = t_uni(4.0f);
	}
	CU_ASSERT_EQUAL(shxk_moe_group(ids, T, TOPK, NE, off, order, pos), 0);
	/* Lay the outputs out as grouped expert GEMMs would write them. */
	for (int p = 0; p < T * TOPK; p++)
		memcpy(eo + p * D, per[order[p]], sizeof(per[0]));
	CU_ASSERT_EQUAL(shxk_moe_combine(eo, pos, wts, TOPK, D, y, 0, 2), 0);
	CU_ASSERT_EQUAL(shxk_moe_combine(eo, pos, wts, TOPK, D, y, 2, T), 0);
	for (int t = 0; t < T; t++) {
		for (int e = 0; e < D; e++) {
			double ref = 0, abs_sum = 0;

			for (int s = 0; s < TOPK; s++) {
				ref += (double)wts[t * TOPK + s] * per[t * TOPK + s][e];
				abs_sum += fabs((double)wts[t * TOPK + s] * per[t * TOPK + s][e]);
			}
			bad += fabs(y[t * D + e] - ref) > t_sum_tol(2 * TOPK, abs_sum);
		}
	}
	CU_ASSERT_EQUAL(bad, 0);
}

/* ---- paged decode attention ---- */

static void t_attn_case(enum shxk_type t, size_t qh, size_t kvh, size_t hd,
			size_t bsz, size_t ctx)
{
	size_t nblk = (ctx + bsz - 1) / bsz + 3, es = t == SHXK_F32 ? 4 : 2;
	size_t nel = nblk * bsz * kvh * hd;
	float *kf = t_alloc(nel * 4), *vf = t_alloc(nel * 4);
	uint8_t *k = t_alloc(nel * es), *v = t_alloc(nel * es);
	int32_t *bt = t_alloc(nblk * sizeof(int32_t));
	float *q = t_alloc(qh * hd * 4), *out = t_alloc(qh * hd * 4);
	float *parts = t_alloc(3 * qh * hd * 4), *ml = t_alloc(3 * qh * 2 * 4);
	float *merged = t_alloc(qh * hd * 4);
	double *sc = t_alloc((ctx + 1) * sizeof(double));
	float scale = 1.0f / sqrtf((float)hd);
	struct shxk_kv_cache kv = { t, bsz, kvh, hd, k, v };
	size_t cut[4] = { 0, ctx / 3, ctx / 3, ctx };	/* part 1 is empty */
	int bad = 0;

	for (size_t e = 0; e < nel; e++) {
		kf[e] = t_uni(2.0f);
		vf[e] = t_uni(1.0f);
	}
	CU_ASSERT_EQUAL(shxk_quantize(t, kf, k, nel, 0, 1), 0);
	CU_ASSERT_EQUAL(shxk_quantize(t, vf, v, nel, 0, 1), 0);
	CU_ASSERT_EQUAL(shxk_dequantize(t, k, kf, nel, 0, 1), 0);
	CU_ASSERT_EQUAL(shxk_dequantize(t, v, vf, nel, 0, 1), 0);
	/* Block table: blocks in reverse order, skipping block 0. */
	for (size_t b = 0; b < nblk; b++)
		bt[b] = (int32_t)(nblk - 1 - b);
	for (size_t e = 0; e < qh * hd; e++)
		q[e] = t_uni(1.5f);

	/* Heads in two ranges; the cut may split a GQA group. */
	CU_ASSERT_EQUAL(shxk_attn_decode(&kv, bt, q, qh, scale, 0, ctx, out,
					 NULL, 0, qh / 3), 0);
	CU_ASSERT_EQUAL(shxk_attn_decode(&kv, bt, q, qh, scale, 0, ctx, out,
					 NULL, qh / 3, qh), 0);
	for (int p = 0; p < 3; p++)
		CU_ASSERT_EQUAL(shxk_attn_decode(&kv, bt, q, qh, scale, cut[p],
						 cut[p + 1], parts + p * qh * hd,
						 ml + p * qh * 2, 0, qh), 0);
	CU_ASSERT_EQUAL(shxk_attn_merge(parts, ml, 3, qh, hd, merged, 0, qh / 2), 0);
	CU_ASSERT_EQUAL(shxk_attn_merge(parts, ml, 3, qh, hd, merged, qh / 2, qh), 0);

	for (size_t h = 0; h < qh; h++) {
		size_t g = h / (qh / kvh);
		double mx = -INFINITY, l = 0;

		for (size_t c = 0; c < ctx; c++) {
			size_t row = ((size_t)bt[c / bsz] * bsz + c % bsz) * kvh + g;
			double s = 0;

			for (size_t e = 0; e < hd; e++)
				s += (double)q[h * hd + e] * kf[row * hd + e];
			sc[c] = s * scale;
			mx = fmax(mx, sc[c]);
		}
		for (size_t c = 0; c < ctx; c++)
			l += exp(sc[c] - mx);
		for (size_t e = 0; e < hd; e++) {
			double ref = 0;

			for (size_t c = 0; c < ctx; c++) {
				size_t row = ((size_t)bt[c / bsz] * bsz + c % bsz) * kvh + g;

				ref += exp(sc[c] - mx) / l * vf[row * hd + e];
			}
			/*
			 * Values are at most 1, the weights sum to 1; scores
			 * carry hd-term rounding into exp: 1e-5 absolute.
			 */
			bad += fabs(out[h * hd + e] - ref) > 1e-5;
			bad += fabs(merged[h * hd + e] - ref) > 1e-5;
		}
		/* The empty part reports max -inf, sum 0. */
		bad += !(isinf(ml[(qh + h) * 2]) && ml[(qh + h) * 2 + 1] == 0.0f);
	}
	if (bad)
		printf("\n  attn t=%d qh=%zu kvh=%zu hd=%zu bs=%zu ctx=%zu: %d bad\n",
		       t, qh, kvh, hd, bsz, ctx, bad);
	CU_ASSERT_EQUAL(bad, 0);
	free(kf), free(vf), free(k), free(v), free(bt), free(q), free(out);
	free(parts), free(ml), free(merged), free(sc);
}

static void t_attn(void)
{
	t_attn_case(SHXK_F32, 8, 2, 64, 16, 100);
	t_attn_case(SHXK_F16, 4, 4, 40, 7, 23);
	t_attn_case(SHXK_BF16, 6, 1, 128, 32, 257);
	t_attn_case(SHXK_F16, 2, 1, 8, 4, 1);
	t_attn_case(SHXK_BF16, 40, 2, 24, 8, 50);	/* group of 20 heads */
	t_attn_case(SHXK_F32, 100, 4, 8, 4, 20);	/* > 64 heads: two passes */
	/* The measured shape: GQA 4, tiles of 16 with a tail, split-K. */
	t_attn_case(SHXK_F16, 32, 8, 128, 16, 1000);
	/* Groups of 8, 7 and 5 (Qwen3-30B-A3B, Qwen2.5-7B, R1-Qwen-32B). */
	t_attn_case(SHXK_F16, 32, 4, 128, 16, 300);
	t_attn_case(SHXK_BF16, 28, 4, 128, 16, 77);
	t_attn_case(SHXK_F32, 40, 8, 128, 16, 45);
	/* Group 3 (partial head pass), odd blocks, head_dim tail of 8. */
	t_attn_case(SHXK_F16, 6, 2, 72, 5, 37);
	/* head_dim 20: not whole vectors (masked or generic tail). */
	t_attn_case(SHXK_F32, 4, 2, 20, 3, 9);
}

static void t_attn_invalid(void)
{
	struct shxk_kv_cache kv = { SHXK_Q8_0, 16, 2, 64, NULL, NULL };
	float q[64] = { 0 }, o[64] = { 0 };
	int32_t bt[1] = { 0 };

	CU_ASSERT_EQUAL(shxk_attn_decode(&kv, bt, q, 2, 1.0f, 0, 1, o, NULL, 0, 1),
			-EINVAL);
	kv.type = SHXK_F32;
	CU_ASSERT_EQUAL(shxk_attn_decode(&kv, bt, q, 3, 1.0f, 0, 1, o, NULL, 0, 1),
			-EINVAL);
	CU_ASSERT_EQUAL(shxk_attn_merge(q, o, 0, 2, 64, o, 0, 1), -EINVAL);
}

/*
 * Items of decode attention: chunks of whole rows, of 256 KiB of K and V
 * at least, as many as make the items a multiple of the threads; kv head
 * ranges only for contexts too short to cut in two.
 */
static void t_attn_split(void)
{
	struct shxk_kv_cache kv = { SHXK_F16, 16, 8, 128, NULL, NULL };
	size_t r, c;

	/* 4 KiB a position: one chunk a thread. */
	shxk_attn_split(&kv, 1, 4000, 2, &r, &c);
	CU_ASSERT(r == 1 && c == 2);
	/* 128 positions are two chunks of 256 KiB; 127 are heads only, two
	 * items a thread. */
	shxk_attn_split(&kv, 1, 128, 2, &r, &c);
	CU_ASSERT(r == 1 && c == 2);
	shxk_attn_split(&kv, 1, 127, 2, &r, &c);
	CU_ASSERT(r == 4 && c == 1);
	/* 3 sequences on 2 threads: 6 halves; 4: whole sequences. */
	shxk_attn_split(&kv, 3, 4000, 2, &r, &c);
	CU_ASSERT(r == 1 && c == 2);
	shxk_attn_split(&kv, 4, 4000, 2, &r, &c);
	CU_ASSERT(r == 1 && c == 1);
	/* 6 sequences on 4 threads: 12 items. */
	shxk_attn_split(&kv, 6, 4000, 4, &r, &c);
	CU_ASSERT(r == 1 && c == 2);
	/* Many threads: a chunk each, or as many as are 256 KiB (800 KB:
	 * 3). */
	shxk_attn_split(&kv, 1, 4096, 16, &r, &c);
	CU_ASSERT(r == 1 && c == 16);
	shxk_attn_split(&kv, 1, 200, 16, &r, &c);
	CU_ASSERT(r == 1 && c == 3);
	/* A toy cache (2 heads of 32, 256 bytes a position): 1,500
	 * positions are cut by heads, 4,000 in two. */
	kv.kv_heads = 2;
	kv.head_dim = 32;
	shxk_attn_split(&kv, 1, 1500, 2, &r, &c);
	CU_ASSERT(r == 2 && c == 1);
	shxk_attn_split(&kv, 1, 4000, 2, &r, &c);
	CU_ASSERT(r == 1 && c == 2);
}

#if defined(__x86_64__)
/* The value of the first /proc/cpuinfo line named key (the name, blanks,
 * ':'; so "model" is not "model name") into buf, newline dropped; ""
 * when there is none. */
static void t_cpuinfo_field(const char *key, char *buf, size_t len)
{
	char line[8192];
	FILE *f = fopen("/proc/cpuinfo", "r");
	size_t n = strlen(key);

	snprintf(buf, len, "%s", "");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) &&
		    line[n + strspn(line + n, " \t")] == ':') {
			snprintf(buf, len, "%s", strchr(line, ':') + 1);
			buf[strcspn(buf, "\n")] = 0;
			break;
		}
	if (f)
		fclose(f);
}

/* A numeric field of /proc/cpuinfo; -1 when there is none. */
static long t_cpuinfo_num(const char *key)
{
	char v[64];

	t_cpuinfo_field(key, v, sizeof(v));
	return *v ? strtol(v, NULL, 10) : -1;
}
#endif

static void t_cpu_info(void)
{
	struct shxk_cpu_info ci;
	char line[256];

	shxk_cpu_info(&ci);
	CU_ASSERT(ci.model[0] != 0);
	CU_ASSERT(shxk_cpu_describe(line, sizeof(line)) > 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(line, ci.model));
	CU_ASSERT_PTR_NOT_NULL(strstr(line, shxk_isa_name()));
	if (!ci.amx)
		CU_ASSERT_EQUAL(ci.amx_perm, -ENODEV);
#if defined(__x86_64__)
	{
		char v[8192], flags[sizeof(v) + 2], fm[64];
		unsigned int want = 0;
		uint64_t perm = 0;

		/* cpuid's family and model are the ones the kernel lists. */
		snprintf(fm, sizeof(fm), " (family %ld model %ld)",
			 t_cpuinfo_num("cpu family"), t_cpuinfo_num("model"));
		CU_ASSERT_PTR_NOT_NULL(strstr(ci.model, fm));
		/* cpuid's AMX units are the ones the kernel lists (the
		 * flags space-padded for word search). */
		t_cpuinfo_field("flags", v, sizeof(v));
		snprintf(flags, sizeof(flags), " %s ", v);
		want |= strstr(flags, " amx_tile ") ? SHXK_AMX_TILE : 0;
		want |= strstr(flags, " amx_int8 ") ? SHXK_AMX_INT8 : 0;
		want |= strstr(flags, " amx_bf16 ") ? SHXK_AMX_BF16 : 0;
		CU_ASSERT_EQUAL(ci.amx, want);
		/* Granted means the kernel now lists XTILEDATA (bit 18) in
		 * this process's permissions (ARCH_GET_XCOMP_PERM). */
		if (!ci.amx_perm) {
			CU_ASSERT_EQUAL(syscall(SYS_arch_prctl, 0x1022, &perm), 0);
			CU_ASSERT(perm & (1ull << 18));
		}
	}
#endif
	printf("\n  %s ", line);
}

static const struct t_test g_tests[] = {
	{ "gemm_shapes", t_gemm_shapes },
	{ "gemm_random", t_gemm_random },
	{ "gemm_large", t_gemm_large },
	{ "repack_layout", t_repack_layout },
	{ "gemm_invalid", t_gemm_invalid },
	{ "weights_row", t_weights_row },
	{ "swiglu", t_swiglu },
	{ "swiglu_range", t_swiglu_range },
	{ "quant_half", t_quant_half },
	{ "rmsnorm", t_rmsnorm },
	{ "moe_group", t_moe_group },
	{ "moe_combine", t_moe_combine },
	{ "attn", t_attn },
	{ "attn_invalid", t_attn_invalid },
	{ "attn_split", t_attn_split },
	{ "cpu_info", t_cpu_info },
};

int main(void)
{
	int rc = shxk_init();

	if (rc == -ENOTSUP) {
		printf("SKIP: kernels_ut: this CPU or build lacks SYSHAX_ISA=%s\n",
		       getenv("SYSHAX_ISA"));
		return 77;
	}
	if (rc)
		return 1;
	printf("kernels_ut: ISA %s\n", shxk_isa_name());
	return T_RUN_SUITE("kernels", NULL, NULL, g_tests);
}
