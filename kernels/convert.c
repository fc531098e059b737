// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Scalar f16 / bf16 conversions, round to nearest even, bit-exact with
 * ggml's reference conversions (NaN kept quiet, bf16 subnormals kept).
 */
#include <string.h>

#include "internal.h"

static uint32_t f2u(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static float u2f(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

uint16_t shxk_fp32_to_fp16(float f)
{
	uint32_t x = f2u(f);
	uint16_t sign = (x >> 16) & 0x8000;

	x &= 0x7fffffff;
	if (x > 0x7f800000)
		return sign | 0x7e00;
	/* 65520 and up round to infinity. */
	if (x >= 0x477ff000)
		return sign | 0x7c00;
	if (x < 0x38800000) {
		/*
		 * Below 2^-14 the result is subnormal: adding 0.5 puts the
		 * value at an ulp of 2^-24, the f16 subnormal step, so the
		 * FPU's own rounding is the round to nearest even we need.
		 */
		return sign | (uint16_t)(f2u(u2f(x) + 0.5f) - f2u(0.5f));
	}
	/* Round the 13 dropped bits to even, then rebias 127 -> 15. */
	x += 0xfff + ((x >> 13) & 1);
	return sign | (uint16_t)((x - 0x38000000) >> 13);
}

float shxk_fp16_to_fp32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;

	if (e == 0x1f)
		return u2f(sign | 0x7f800000 | (m << 13));
	if (e == 0) {
		float v = (float)m * 0x1p-24f;

		return sign ? -v : v;
	}
	return u2f(sign | ((e + 112) << 23) | (m << 13));
}

uint16_t shxk_fp32_to_bf16(float f)
{
	uint32_t u = f2u(f);

	if ((u & 0x7fffffff) > 0x7f800000)
		return (uint16_t)((u >> 16) | 64);
	return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

float shxk_bf16_to_fp32(uint16_t h)
{
	return u2f((uint32_t)h << 16);
}
