// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * GEMM entry points (argument checks, activation preparation, repacking)
 * and the generic kernels every variant is checked against.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"

static int is_float(enum shxk_type t)
{
	return t == SHXK_F32 || t == SHXK_F16 || t == SHXK_BF16;
}

static int is_quant(enum shxk_type t)
{
	return t == SHXK_Q8_0 || t == SHXK_Q4_0;
}

size_t shxk_act_row_size(enum shxk_type wtype, size_t k)
{
	if (wtype == SHXK_BF16)
		return k * sizeof(float) + (k + 1) / 2 * 4;
	if (is_float(wtype))
		return k * sizeof(float);
	if (is_quant(wtype) && k % SHXK_QK == 0)
		return k / SHXK_QK * SHXK_ACT_Q8_BLOCK;
	return 0;
}

/* Element i of x (f32, f16 or bf16) as f32. */
static float load_x(enum shxk_type t, const void *x, size_t i)
{
	if (t == SHXK_F16)
		return shxk_fp16_to_fp32(((const uint16_t *)x)[i]);
	if (t == SHXK_BF16)
		return shxk_bf16_to_fp32(((const uint16_t *)x)[i]);
	return ((const float *)x)[i];
}

int shxk_act_prepare(enum shxk_type wtype, enum shxk_type xtype,
		     const void *x, size_t ldx, size_t k, void *act,
		     size_t m0, size_t m1)
{
	size_t rs = shxk_act_row_size(wtype, k);
	size_t xes = xtype == SHXK_F32 ? 4 : 2;
	const struct shxk_ops *ops = shxk_ops_current();

	if (!rs || !is_float(xtype) || ldx < k || m0 > m1)
		return -EINVAL;
	for (size_t i = m0; i < m1; i++) {
		const uint8_t *xr = (const uint8_t *)x + i * ldx * xes;
		uint8_t *ar = (uint8_t *)act + i * rs;

		if (wtype == SHXK_BF16) {
			/*
			 * Both copies hold the same bf16-rounded values, so
			 * f32 kernels and bf16 dot products (vdpbf16ps) agree.
			 */
			for (size_t e = 0; e < k; e++) {
				uint16_t b = shxk_fp32_to_bf16(load_x(xtype, xr, e));

				((float *)ar)[e] = shxk_bf16_to_fp32(b);
				shxk_act_bf16(ar, k)[e] = b;
			}
		} else if (is_float(wtype)) {
			for (size_t e = 0; e < k; e++)
				((float *)ar)[e] = load_x(xtype, xr, e);
		} else if (xtype == SHXK_F32) {
			ops->act_q8((const float *)xr, (int8_t *)ar,
				    shxk_act_d(ar, k), shxk_act_s(ar, k),
				    k / SHXK_QK);
		} else {
			/* Widen one block at a time: no allocation. */
			for (size_t j = 0; j < k / SHXK_QK; j++) {
				float tmp[SHXK_QK];

				for (int e = 0; e < SHXK_QK; e++)
					tmp[e] = load_x(xtype, xr, j * SHXK_QK + e);
				ops->act_q8(tmp, (int8_t *)ar + j * SHXK_QK,
					    shxk_act_d(ar, k) + j,
					    shxk_act_s(ar, k) + j, 1);
			}
		}
	}
	return 0;
}

static size_t block_size(enum shxk_type t)
{
	return t == SHXK_Q8_0 ? sizeof(struct shxk_block_q8_0) :
				sizeof(struct shxk_block_q4_0);
}

/* Bytes of one stored row (ROWS) or one 8-row group (X8). */
static size_t wstride(enum shxk_type t, enum shxk_layout l, size_t k)
{
	size_t rs = shxk_row_size(t, k);

	return l == SHXK_LAYOUT_X8 ? rs * SHXK_X8 : rs;
}

/*
 * An X8 block column: the 8 rows' f16 scales, then their qs interleaved in
 * 8-byte chunks (chunk c of rows 0..7, then chunk c + 1), so one 64-byte
 * load holds 8 bytes of each row and a dot product with the activation's
 * 8 bytes broadcast needs no horizontal sum.
 */
static void x8_put_qs(uint8_t *col, size_t r, const uint8_t *qs, size_t nq)
{
	for (size_t c = 0; c < nq / 8; c++)
		memcpy(col + 2 * SHXK_X8 + (c * SHXK_X8 + r) * 8, qs + c * 8, 8);
}

size_t shxk_repack_size(enum shxk_type t, enum shxk_layout layout,
			size_t n, size_t k)
{
	size_t rs = shxk_row_size(t, k);

	if (!rs)
		return 0;
	if (layout == SHXK_LAYOUT_ROWS)
		return n * rs;
	if (layout != SHXK_LAYOUT_X8 || !is_quant(t))
		return 0;
	return (n + SHXK_X8 - 1) / SHXK_X8 * SHXK_X8 * rs;
}

int shxk_repack(const struct shxk_weights *src, enum shxk_layout layout,
		void *dst, size_t g0, size_t g1)
{
	size_t rs, bs, nb, ng;

	if (!shxk_repack_size(src->type, layout, src->n, src->k) ||
	    src->layout != SHXK_LAYOUT_ROWS || g0 > g1)
		return -EINVAL;
	rs = shxk_row_size(src->type, src->k);
	if (layout == SHXK_LAYOUT_ROWS) {
		if (g1 > src->n)
			return -EINVAL;
		memcpy((uint8_t *)dst + g0 * rs,
		       (const uint8_t *)src->data + g0 * rs, (g1 - g0) * rs);
		return 0;
	}
	ng = (src->n + SHXK_X8 - 1) / SHXK_X8;
	if (g1 > ng)
		return -EINVAL;
	bs = block_size(src->type);
	nb = src->k / SHXK_QK;
	for (size_t g = g0; g < g1; g++) {
		uint8_t *o = (uint8_t *)dst + g * rs * SHXK_X8;

		for (size_t j = 0; j < nb; j++) {
			uint8_t *col = o + j * bs * SHXK_X8;

			for (size_t r = 0; r < SHXK_X8; r++) {
				size_t n = g * SHXK_X8 + r;
				uint8_t dh[2] = { 0 }, qs[SHXK_QK] = { 0 };

				if (n < src->n) {
					const uint8_t *b = (const uint8_t *)src->data +
							   n * rs + j * bs;

					memcpy(dh, b, 2);
					memcpy(qs, b + 2, bs - 2);
				}
				memcpy(col + 2 * r, dh, 2);
				x8_put_qs(col, r, qs, bs - 2);
			}
		}
	}
	return 0;
}

int shxk_weights_row(const struct shxk_weights *w, size_t r, float *y)
{
	size_t rs, bs;
	const uint8_t *g;

	if (!shxk_repack_size(w->type, w->layout, w->n, w->k) || r >= w->n)
		return -EINVAL;
	rs = shxk_row_size(w->type, w->k);
	if (w->layout == SHXK_LAYOUT_ROWS)
		return shxk_dequantize(w->type, (const uint8_t *)w->data +
				       r * rs, y, w->k, 0, 1);
	/* X8: gather the row's blocks back from its group's block columns. */
	bs = block_size(w->type);
	g = (const uint8_t *)w->data + r / SHXK_X8 * rs * SHXK_X8;
	for (size_t j = 0; j < w->k / SHXK_QK; j++) {
		const uint8_t *col = g + j * bs * SHXK_X8;
		uint8_t b[sizeof(struct shxk_block_q8_0)];

		memcpy(b, col + 2 * (r % SHXK_X8), 2);
		shxk_x8_get_qs(col, r % SHXK_X8, b + 2, bs - 2);
		shxk_dequantize(w->type, b, y + j * SHXK_QK, SHXK_QK, 0, 1);
	}
	return 0;
}

int shxk_gemm(const struct shxk_weights *w, const void *act, size_t m,
	      void *y, enum shxk_type ytype, size_t ldy, size_t n0, size_t n1)
{
	const struct shxk_ops *ops = shxk_ops_current();
	struct shxk_gemm_args a;
	shxk_gemm_fn fn;

	if ((unsigned)w->type >= SHXK_NTYPES || !is_float(ytype) ||
	    !shxk_repack_size(w->type, w->layout, w->n, w->k) ||
	    m < 1 || m > SHXK_GEMM_MAX_M || n0 > n1 || n1 > w->n || ldy < w->n)
		return -EINVAL;
	fn = w->layout == SHXK_LAYOUT_X8 ? ops->gemm_x8[w->type] :
					   ops->gemm[w->type];
	a = (struct shxk_gemm_args){
		.w = w->data,
		.wstride = wstride(w->type, w->layout, w->k),
		.act = act,
		.astride = shxk_act_row_size(w->type, w->k),
		.m = m, .k = w->k,
		.y = y, .yt = ytype, .ldy = ldy,
		.n0 = n0, .n1 = n1,
	};
	if (n0 < n1)
		fn(&a);
	return 0;
}

/* ---- generic kernels ---- */

static void gemm_float(const struct shxk_gemm_args *a, enum shxk_type t)
{
	for (size_t n = a->n0; n < a->n1; n++) {
		const uint8_t *wr = a->w + n * a->wstride;

		for (size_t i = 0; i < a->m; i++) {
			const float *x = (const float *)(a->act + i * a->astride);
			float s = 0.0f;

			for (size_t e = 0; e < a->k; e++)
				s += load_x(t, wr, e) * x[e];
			shxk_store(a, i, n, s);
		}
	}
}

void shxk_gemm_f32_generic(const struct shxk_gemm_args *a)
{
	gemm_float(a, SHXK_F32);
}

void shxk_gemm_f16_generic(const struct shxk_gemm_args *a)
{
	gemm_float(a, SHXK_F16);
}

void shxk_gemm_bf16_generic(const struct shxk_gemm_args *a)
{
	gemm_float(a, SHXK_BF16);
}

/* Integer dot of one weight block's qs (decoded to -128..127) with x. */
static int32_t dot_block(enum shxk_type t, const uint8_t *qs,
			 const int8_t *x)
{
	int32_t s = 0;

	if (t == SHXK_Q8_0) {
		for (int i = 0; i < SHXK_QK; i++)
			s += (int8_t)qs[i] * x[i];
		return s;
	}
	for (int i = 0; i < SHXK_QK / 2; i++) {
		s += ((qs[i] & 15) - 8) * x[i];
		s += ((qs[i] >> 4) - 8) * x[i + SHXK_QK / 2];
	}
	return s;
}

static void gemm_quant(const struct shxk_gemm_args *a, enum shxk_type t,
		       int x8)
{
	size_t bs = block_size(t), nb = a->k / SHXK_QK;
	size_t bstride = x8 ? bs * SHXK_X8 : bs;

	for (size_t n = a->n0; n < a->n1; n++) {
		/* Row n's block j starts at base + j * bstride. */
		const uint8_t *base = x8 ? a->w + n / SHXK_X8 * a->wstride :
					   a->w + n * a->wstride;
		size_t r = n % SHXK_X8;

		for (size_t i = 0; i < a->m; i++) {
			const uint8_t *x = a->act + i * a->astride;
			const float *xd = shxk_act_d(x, a->k);
			float s = 0.0f;

			for (size_t j = 0; j < nb; j++) {
				const uint8_t *b = base + j * bstride;
				uint8_t qs[SHXK_QK];
				uint16_t dh;

				if (x8) {
					memcpy(&dh, b + 2 * r, 2);
					shxk_x8_get_qs(b, r, qs, bs - 2);
				} else {
					memcpy(&dh, b, 2);
					memcpy(qs, b + 2, bs - 2);
				}
				s += (float)dot_block(t, qs, (const int8_t *)x + j * SHXK_QK) *
				     (shxk_fp16_to_fp32(dh) * xd[j]);
			}
			shxk_store(a, i, n, s);
		}
	}
}

void shxk_gemm_q8_0_generic(const struct shxk_gemm_args *a)
{
	gemm_quant(a, SHXK_Q8_0, 0);
}

void shxk_gemm_q4_0_generic(const struct shxk_gemm_args *a)
{
	gemm_quant(a, SHXK_Q4_0, 0);
}

void shxk_gemm_x8_q8_0_generic(const struct shxk_gemm_args *a)
{
	gemm_quant(a, SHXK_Q8_0, 1);
}

void shxk_gemm_x8_q4_0_generic(const struct shxk_gemm_args *a)
{
	gemm_quant(a, SHXK_Q4_0, 1);
}
