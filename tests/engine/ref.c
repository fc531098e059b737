// SPDX-License-Identifier: MIT
/*
 * fp64 references. The weights are the test's own values decoded (its own
 * Q8_0/Q4_0 blocks dequantized); the activations go through what the
 * kernels document for the weight type (docs/kernels.md: f32 for F32/F16
 * weights, bf16-rounded for BF16, ggml's 8-bit blocks for Q8_0/Q4_0), so
 * the reference differs from the engine only by f32 rounding of its sums
 * and intermediates, and the tolerances can be tight.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "t.h"

void ref_act(int wdt, const double *x, double *out, size_t k)
{
	if (wdt == SYSHAX_DT_Q8_0 || wdt == SYSHAX_DT_Q4_0) {
		for (size_t b = 0; b < k / 32; b++) {
			float xf[32], amax = 0.0f, d, id;

			for (int i = 0; i < 32; i++) {
				xf[i] = (float)x[b * 32 + (size_t)i];
				amax = fmaxf(amax, fabsf(xf[i]));
			}
			d = amax / 127.0f;
			id = d != 0.0f ? 1.0f / d : 0.0f;
			for (int i = 0; i < 32; i++)
				out[b * 32 + (size_t)i] =
					(double)d * roundf(xf[i] * id);
		}
		return;
	}
	for (size_t i = 0; i < k; i++) {
		float f = (float)x[i];

		out[i] = wdt == SYSHAX_DT_BF16 ?
			 t_bf16_to_f64(t_f32_to_bf16(f)) : f;
	}
}

void ref_gemm(const struct tw *w, size_t e, const double *x, size_t m,
	      double *y)
{
	size_t k = w->ne[0], n = w->ne[1];
	const double *W = w->ref + e * n * k;
	double *a = malloc(k * sizeof(*a));

	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	for (size_t r = 0; r < m; r++) {
		ref_act(w->kept, x + r * k, a, k);
		for (size_t j = 0; j < n; j++) {
			double s = 0.0;

			for (size_t i = 0; i < k; i++)
				s += W[j * k + i] * a[i];
			y[r * n + j] = s;
		}
	}
	free(a);
}

void ref_rmsnorm(const double *x, const double *nw, double eps, size_t k,
		 double *out)
{
	double ss = 0.0, f;

	for (size_t i = 0; i < k; i++)
		ss += x[i] * x[i];
	f = 1.0 / sqrt(ss / (double)k + eps);
	for (size_t i = 0; i < k; i++)
		out[i] = x[i] * f * (nw ? nw[i] : 1.0);
}

void ref_swiglu(const struct tw *g, const struct tw *u, const struct tw *d,
		size_t e, const double *h, size_t m, double *out)
{
	size_t f = g->ne[1];
	double *G = malloc(m * f * sizeof(*G)), *U = malloc(m * f * sizeof(*U));

	CU_ASSERT_PTR_NOT_NULL_FATAL(G);
	CU_ASSERT_PTR_NOT_NULL_FATAL(U);
	ref_gemm(g, e, h, m, G);
	ref_gemm(u, e, h, m, U);
	for (size_t i = 0; i < m * f; i++)
		G[i] = G[i] / (1.0 + exp(-G[i])) * U[i];
	ref_gemm(d, e, G, m, out);
	free(G);
	free(U);
}

void ref_route(const double *l, int nexp, int topk, bool renorm, int32_t *ids,
	       double *wts)
{
	double mx = -INFINITY, sum = 0.0, ks = 0.0;

	for (int e = 0; e < nexp; e++)
		mx = fmax(mx, l[e]);
	for (int e = 0; e < nexp; e++)
		sum += exp(l[e] - mx);
	for (int s = 0; s < topk; s++) {
		int best = -1;

		for (int e = 0; e < nexp; e++) {
			bool taken = false;

			for (int j = 0; j < s; j++)
				taken |= ids[j] == e;
			if (!taken && (best < 0 || l[e] > l[best]))
				best = e;
		}
		ids[s] = best;
		wts[s] = exp(l[best] - mx) / sum;
		ks += wts[s];
	}
	for (int s = 0; renorm && s < topk; s++)
		wts[s] /= ks;
}
