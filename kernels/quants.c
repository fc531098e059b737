// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Row formats: sizes, the generic quantizers (ggml's reference rounding,
 * bit for bit) and dequantizers, and the public row-range entry points.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "internal.h"

size_t shxk_row_size(enum shxk_type t, size_t k)
{
	switch (t) {
	case SHXK_F32:
		return k * 4;
	case SHXK_F16:
	case SHXK_BF16:
		return k * 2;
	case SHXK_Q8_0:
		return k % SHXK_QK ? 0 : k / SHXK_QK * sizeof(struct shxk_block_q8_0);
	case SHXK_Q4_0:
		return k % SHXK_QK ? 0 : k / SHXK_QK * sizeof(struct shxk_block_q4_0);
	default:
		return 0;
	}
}

void shxk_quant_f16_generic(const float *x, void *y, size_t k)
{
	uint16_t *h = y;

	for (size_t i = 0; i < k; i++)
		h[i] = shxk_fp32_to_fp16(x[i]);
}

void shxk_quant_bf16_generic(const float *x, void *y, size_t k)
{
	uint16_t *h = y;

	for (size_t i = 0; i < k; i++)
		h[i] = shxk_fp32_to_bf16(x[i]);
}

static float absmax(const float *x, size_t n)
{
	float m = 0.0f;

	for (size_t i = 0; i < n; i++)
		m = fmaxf(m, fabsf(x[i]));
	return m;
}

void shxk_quant_q8_0_generic(const float *x, void *y, size_t k)
{
	struct shxk_block_q8_0 *b = y;

	for (size_t j = 0; j < k / SHXK_QK; j++, x += SHXK_QK) {
		float d = absmax(x, SHXK_QK) / 127.0f;
		float id = d != 0.0f ? 1.0f / d : 0.0f;

		b[j].d = shxk_fp32_to_fp16(d);
		for (int i = 0; i < SHXK_QK; i++)
			b[j].qs[i] = (int8_t)roundf(x[i] * id);
	}
}

void shxk_quant_q4_0_generic(const float *x, void *y, size_t k)
{
	struct shxk_block_q4_0 *b = y;

	for (size_t j = 0; j < k / SHXK_QK; j++, x += SHXK_QK) {
		/* The signed value of largest magnitude maps to -8. */
		float amax = 0.0f, max = 0.0f;

		for (int i = 0; i < SHXK_QK; i++) {
			if (amax < fabsf(x[i])) {
				amax = fabsf(x[i]);
				max = x[i];
			}
		}
		float d = max / -8.0f;
		float id = d != 0.0f ? 1.0f / d : 0.0f;

		b[j].d = shxk_fp32_to_fp16(d);
		for (int i = 0; i < SHXK_QK / 2; i++) {
			int lo = (int8_t)(x[i] * id + 8.5f);
			int hi = (int8_t)(x[i + SHXK_QK / 2] * id + 8.5f);

			lo = lo < 15 ? lo : 15;
			hi = hi < 15 ? hi : 15;
			b[j].qs[i] = (uint8_t)(lo | hi << 4);
		}
	}
}

void shxk_act_q8_generic(const float *x, int8_t *qs, float *d, int32_t *s,
			 size_t nb)
{
	for (size_t j = 0; j < nb; j++, x += SHXK_QK, qs += SHXK_QK) {
		float dj = absmax(x, SHXK_QK) / 127.0f;
		float id = dj != 0.0f ? 1.0f / dj : 0.0f;
		int32_t sum = 0;

		for (int i = 0; i < SHXK_QK; i++) {
			qs[i] = (int8_t)roundf(x[i] * id);
			sum += qs[i];
		}
		d[j] = dj;
		s[j] = sum;
	}
}

void shxk_widen_generic(enum shxk_type t, const void *x, float *y, size_t n)
{
	const uint16_t *h = x;

	for (size_t i = 0; i < n; i++)
		y[i] = t == SHXK_F16 ? shxk_fp16_to_fp32(h[i]) : shxk_bf16_to_fp32(h[i]);
}

static void dequant_row(enum shxk_type t, const void *x, float *y, size_t k)
{
	const struct shxk_block_q8_0 *q8 = x;
	const struct shxk_block_q4_0 *q4 = x;

	switch (t) {
	case SHXK_F32:
		memcpy(y, x, k * sizeof(float));
		break;
	case SHXK_F16:
	case SHXK_BF16:
		shxk_ops_current()->widen(t, x, y, k);
		break;
	case SHXK_Q8_0:
		for (size_t j = 0; j < k / SHXK_QK; j++, y += SHXK_QK) {
			float d = shxk_fp16_to_fp32(q8[j].d);

			for (int i = 0; i < SHXK_QK; i++)
				y[i] = d * q8[j].qs[i];
		}
		break;
	default:
		for (size_t j = 0; j < k / SHXK_QK; j++, y += SHXK_QK) {
			float d = shxk_fp16_to_fp32(q4[j].d);

			for (int i = 0; i < SHXK_QK / 2; i++) {
				y[i] = d * ((q4[j].qs[i] & 15) - 8);
				y[i + SHXK_QK / 2] = d * ((q4[j].qs[i] >> 4) - 8);
			}
		}
		break;
	}
}

int shxk_quantize(enum shxk_type t, const float *x, void *y, size_t k,
		  size_t r0, size_t r1)
{
	size_t rs = shxk_row_size(t, k);

	if (!rs || r0 > r1)
		return -EINVAL;
	for (size_t r = r0; r < r1; r++) {
		if (t == SHXK_F32)
			memcpy((uint8_t *)y + r * rs, x + r * k, rs);
		else
			shxk_ops_current()->quant[t](x + r * k,
						     (uint8_t *)y + r * rs, k);
	}
	return 0;
}

int shxk_dequantize(enum shxk_type t, const void *x, float *y, size_t k,
		    size_t r0, size_t r1)
{
	size_t rs = shxk_row_size(t, k);

	if (!rs || r0 > r1)
		return -EINVAL;
	for (size_t r = r0; r < r1; r++)
		dequant_row(t, (const uint8_t *)x + r * rs, y + r * k, k);
	return 0;
}
