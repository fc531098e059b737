// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Formats: f16 / bf16 conversions and Q8_0 / Q4_0 quantization must give
 * ggml's bytes. The expected blocks below were worked out independently of
 * this code from ggml's reference rules (float32 arithmetic, roundf for
 * Q8_0, truncation after + 8.5 and a clamp at 15 for Q4_0); block 0 also
 * has its absmax twice with both signs, block 1 a negative absmax, block 2
 * is all zeros.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "shxk.h"
#include "../t_cunit.h"

static const float g_in[96] = {
	-0x1.74p+1f, -0x1.98p+0f, -0x1.2p-2f, 0x1.08p+0f,
	0x1.2cp+1f, -0x1.2cp+1f, -0x1.08p+0f, 0x1.2p-2f,
	0x1.98p+0f, 0x1.74p+1f, -0x1.c8p+0f, -0x1.ep-2f,
	0x1.bp-1f, 0x1.14p+1f, -0x1.44p+1f, -0x1.38p+0f,
	0x1.8p-4f, 0x1.68p+0f, 0x1.5cp+1f, -0x1.f8p+0f,
	-0x1.5p-1f, 0x1.5p-1f, 0x1.f8p+0f, -0x1.5cp+1f,
	-0x1.68p+0f, -0x1.8p-4f, 0x1.38p+0f, 0x1.44p+1f,
	-0x1.14p+1f, -0x1.bp-1f, 0x1.ep-2f, 0x1.c8p+0f,
	0.0f, 0x1.7201ap+1f, 0x1.8be7b2p+0f, -0x1.081a2ap+1f,
	-0x1.533f2p+1f, 0x1.4a6cap-1f, 0x1.7f70cep+1f, 0x1.ea2294p-1f,
	-0x1.3de2a8p+1f, -0x1.5p+2f, 0x1.42b034p+0f, 0x1.7aeba2p+1f,
	0x1.4b04ecp-2f, -0x1.64c89cp+1f, -0x1.d082f8p+0f, 0x1.d10dfcp+0f,
	0x1.64a84ap+1f, -0x1.4dbb4cp-2f, -0x1.7af9cp+1f, -0x1.4211b6p+0f,
	0x1.24d28cp+1f, 0x1.3db1a4p+1f, -0x1.eb6d84p-1f, -0x1.7f6c0ep+1f,
	-0x1.491786p-1f, 0x1.5368p+1f, 0x1.07dac2p+1f, -0x1.8c7d48p+0f,
	-0x1.71ea3cp+1f, 0x1.5d3ccap-9f, 0x1.7218f2p+1f, 0x1.8b5206p+0f,
	0.0f, 0.0f, 0.0f, 0.0f,
	0.0f, 0.0f, 0.0f, 0.0f,
	0.0f, 0.0f, 0.0f, 0.0f,
	0.0f, 0.0f, 0.0f, 0.0f,
	0.0f, 0.0f, 0.0f, 0.0f,
	0.0f, 0.0f, 0.0f, 0.0f,
	0.0f, 0.0f, 0.0f, 0.0f,
	0.0f, 0.0f, 0.0f, 0.0f,
};
static const uint8_t g_q8_0[102] = {
	0xdc, 0x25, 0x81, 0xba, 0xf4, 0x2d, 0x66, 0x9a, 0xd3, 0x0c, 0x46, 0x7f,
	0xb2, 0xec, 0x25, 0x5e, 0x91, 0xcb, 0x04, 0x3d, 0x77, 0xaa, 0xe3, 0x1d,
	0x56, 0x89, 0xc3, 0xfc, 0x35, 0x6f, 0xa2, 0xdb, 0x14, 0x4e, 0x4b, 0x29,
	0x00, 0x46, 0x25, 0xce, 0xc0, 0x10, 0x48, 0x17, 0xc4, 0x81, 0x1e, 0x48,
	0x08, 0xbd, 0xd4, 0x2c, 0x43, 0xf8, 0xb8, 0xe2, 0x37, 0x3c, 0xe9, 0xb8,
	0xf0, 0x40, 0x32, 0xdb, 0xba, 0x00, 0x46, 0x25, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};
static const uint8_t g_q4_0[54] = {
	0xd0, 0x35, 0x80, 0xc4, 0xf7, 0x3b, 0x6e, 0xa2, 0xd5, 0x19, 0x4c, 0x8f,
	0xb3, 0xf7, 0x2a, 0x6e, 0x91, 0xd5, 0x40, 0x39, 0xc8, 0x8c, 0x3a, 0x65,
	0xb4, 0xc9, 0x7d, 0x39, 0x74, 0xc0, 0xba, 0x6d, 0x48, 0x84, 0xc5, 0xab,
	0x00, 0x80, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88,
	0x88, 0x88, 0x88, 0x88, 0x88, 0x88,
};

static void t_q8_0_bytes(void)
{
	uint8_t out[sizeof(g_q8_0)];

	CU_ASSERT_EQUAL(shxk_row_size(SHXK_Q8_0, 96), sizeof(g_q8_0));
	CU_ASSERT_EQUAL(shxk_quantize(SHXK_Q8_0, g_in, out, 96, 0, 1), 0);
	CU_ASSERT_EQUAL(memcmp(out, g_q8_0, sizeof(out)), 0);
}

static void t_q4_0_bytes(void)
{
	uint8_t out[sizeof(g_q4_0)];

	CU_ASSERT_EQUAL(shxk_row_size(SHXK_Q4_0, 96), sizeof(g_q4_0));
	CU_ASSERT_EQUAL(shxk_quantize(SHXK_Q4_0, g_in, out, 96, 0, 1), 0);
	CU_ASSERT_EQUAL(memcmp(out, g_q4_0, sizeof(out)), 0);
}

/* Dequantized values: d * q and d * (q - 8), checked on known elements. */
static void t_dequant_values(void)
{
	float y[96];

	CU_ASSERT_EQUAL(shxk_dequantize(SHXK_Q4_0, g_q4_0, y, 96, 0, 1), 0);
	/* Block 0: d = -2.90625 / -8 = 0.36328125, exact in f16. */
	CU_ASSERT_EQUAL(y[0], -2.90625f);		/* q = 0 */
	CU_ASSERT_EQUAL(y[9], 7 * 0.36328125f);	/* q 16 clamped to 15 */
	for (int i = 64; i < 96; i++)
		CU_ASSERT_EQUAL(y[i], 0.0f);

	CU_ASSERT_EQUAL(shxk_dequantize(SHXK_Q8_0, g_q8_0, y, 96, 0, 1), 0);
	for (int b = 0; b < 3; b++) {
		float d = shxk_fp16_to_fp32((uint16_t)(g_q8_0[b * 34] |
							g_q8_0[b * 34 + 1] << 8));

		for (int i = 0; i < 32; i++) {
			int8_t q = (int8_t)g_q8_0[b * 34 + 2 + i];

			CU_ASSERT_EQUAL(y[b * 32 + i], d * q);
			/* Rounding error at most half a step (+ f16 scale). */
			CU_ASSERT(fabsf(y[b * 32 + i] - g_in[b * 32 + i]) <=
				  0.5f * d + fabsf(g_in[b * 32 + i]) * 0x1p-10f);
		}
	}
	/* Block 1: its absmax -5.25 comes back within the f16 scale error. */
	CU_ASSERT(fabsf(y[32 + 9] + 5.25f) <= 5.25f * 0x1p-10f);
}

static void t_fp16_known(void)
{
	static const struct { float f; uint16_t h; } v[] = {
		{ 1.0f, 0x3c00 }, { -2.0f, 0xc000 }, { 0.0f, 0x0000 },
		{ -0.0f, 0x8000 }, { 65504.0f, 0x7bff }, { 65519.99f, 0x7bff },
		{ 65520.0f, 0x7c00 }, { 1e10f, 0x7c00 }, { INFINITY, 0x7c00 },
		{ -INFINITY, 0xfc00 }, { 0x1p-14f, 0x0400 }, { 0x1p-24f, 0x0001 },
		{ 0x1p-25f, 0x0000 },		/* tie, to even: 0 */
		{ 0x1.8p-25f, 0x0001 }, { 0x1.8p-24f, 0x0002 }, /* tie: even */
		{ 0x1.002p+0f, 0x3c00 },	/* tie between 0x3c00 and 0x3c01 */
		{ 0x1.006p+0f, 0x3c02 },	/* tie between 0x3c01 and 0x3c02 */
		{ 0x1.0021p+0f, 0x3c01 }, { 0x1.ffcp-15f, 0x0400 },
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		CU_ASSERT_EQUAL(shxk_fp32_to_fp16(v[i].f), v[i].h);
	CU_ASSERT_EQUAL(shxk_fp32_to_fp16(NAN) & 0x7fff, 0x7e00);
	CU_ASSERT(isnan(shxk_fp16_to_fp32(0x7e00)));
	CU_ASSERT_EQUAL(shxk_fp16_to_fp32(0x0001), 0x1p-24f);
	CU_ASSERT_EQUAL(shxk_fp16_to_fp32(0x83ff), -0x1.ff8p-15f);
	CU_ASSERT_EQUAL(shxk_fp16_to_fp32(0x7bff), 65504.0f);
	CU_ASSERT_EQUAL(shxk_fp16_to_fp32(0xfc00), -INFINITY);
}

/* Every non-NaN f16 survives f16 -> f32 -> f16. */
static void t_fp16_roundtrip(void)
{
	unsigned bad = 0;

	for (uint32_t h = 0; h < 0x10000; h++) {
		if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
			continue;
		bad += shxk_fp32_to_fp16(shxk_fp16_to_fp32((uint16_t)h)) != h;
	}
	CU_ASSERT_EQUAL(bad, 0);
}

#ifdef __FLT16_MAX__
/* Against the compiler's IEEE conversion on random bit patterns. */
static void t_fp16_vs_compiler(void)
{
	uint32_t s = 12345;
	unsigned bad = 0;

	for (int i = 0; i < 1000000; i++) {
		float f;
		_Float16 c;
		uint16_t hc;

		s ^= s << 13, s ^= s >> 17, s ^= s << 5;
		/* Bias exponents into the f16 range and around it. */
		uint32_t u = (s & 0x807fffff) | ((96 + (s >> 23) % 64) << 23);

		memcpy(&f, &u, 4);
		c = (_Float16)f;
		memcpy(&hc, &c, 2);
		bad += shxk_fp32_to_fp16(f) != hc;
	}
	CU_ASSERT_EQUAL(bad, 0);
}
#endif

static void t_bf16_known(void)
{
	static const struct { uint32_t f; uint16_t h; } v[] = {
		{ 0x3f800000, 0x3f80 }, { 0x3f808000, 0x3f80 }, /* tie: even */
		{ 0x3f818000, 0x3f82 }, { 0x3f808001, 0x3f81 },
		{ 0x7f800000, 0x7f80 }, { 0xff800000, 0xff80 },
		{ 0x7f7fffff, 0x7f80 },	/* max float rounds to inf */
		{ 0x00000001, 0x0000 }, { 0x00018000, 0x0002 }, /* subnormals kept */
		{ 0x7f800001, 0x7fc0 }, { 0xffc00000, 0xffc0 }, /* NaN made quiet */
		{ 0x80000000, 0x8000 },
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		float f;

		memcpy(&f, &v[i].f, 4);
		CU_ASSERT_EQUAL(shxk_fp32_to_bf16(f), v[i].h);
	}
	CU_ASSERT_EQUAL(shxk_bf16_to_fp32(0xc040), -3.0f);
}

/* Row conversions agree with the scalar ones, on a range of rows. */
static void t_rows(void)
{
	uint16_t h[96], b[96];
	float y[96];

	CU_ASSERT_EQUAL(shxk_quantize(SHXK_F16, g_in, h, 32, 1, 3), 0);
	CU_ASSERT_EQUAL(shxk_quantize(SHXK_BF16, g_in, b, 32, 1, 3), 0);
	for (int i = 32; i < 96; i++) {
		CU_ASSERT_EQUAL(h[i], shxk_fp32_to_fp16(g_in[i]));
		CU_ASSERT_EQUAL(b[i], shxk_fp32_to_bf16(g_in[i]));
	}
	CU_ASSERT_EQUAL(shxk_dequantize(SHXK_F16, h, y, 32, 1, 3), 0);
	for (int i = 32; i < 96; i++)
		CU_ASSERT_EQUAL(y[i], shxk_fp16_to_fp32(h[i]));
	/* Odd row length: the variants' vector loops have tails. */
	CU_ASSERT_EQUAL(shxk_quantize(SHXK_BF16, g_in, b, 21, 0, 4), 0);
	CU_ASSERT_EQUAL(shxk_dequantize(SHXK_BF16, b, y, 21, 0, 4), 0);
	for (int i = 0; i < 84; i++)
		CU_ASSERT_EQUAL(y[i], shxk_bf16_to_fp32(b[i]));
	CU_ASSERT_EQUAL(shxk_dequantize(SHXK_F32, g_in, y, 96, 0, 1), 0);
	CU_ASSERT_EQUAL(memcmp(y, g_in, sizeof(y)), 0);
}

static void t_invalid(void)
{
	uint8_t out[64];

	CU_ASSERT_EQUAL(shxk_row_size(SHXK_Q4_0, 33), 0);
	CU_ASSERT_EQUAL(shxk_quantize(SHXK_Q8_0, g_in, out, 33, 0, 1), -EINVAL);
	CU_ASSERT_EQUAL(shxk_quantize(SHXK_F16, g_in, out, 4, 2, 1), -EINVAL);
	CU_ASSERT_EQUAL(shxk_dequantize(SHXK_NTYPES, out, NULL, 32, 0, 1),
			-EINVAL);
}

static const struct t_test g_tests[] = {
	{ "q8_0_bytes", t_q8_0_bytes },
	{ "q4_0_bytes", t_q4_0_bytes },
	{ "dequant_values", t_dequant_values },
	{ "fp16_known", t_fp16_known },
	{ "fp16_roundtrip", t_fp16_roundtrip },
#ifdef __FLT16_MAX__
	{ "fp16_vs_compiler", t_fp16_vs_compiler },
#endif
	{ "bf16_known", t_bf16_known },
	{ "rows", t_rows },
	{ "invalid", t_invalid },
};

int main(void)
{
	int rc = shxk_init();

	if (rc == -ENOTSUP) {
		printf("SKIP: quant_ut: this CPU or build lacks SYSHAX_ISA=%s\n",
		       getenv("SYSHAX_ISA"));
		return 77;
	}
	if (rc)
		return 1;
	printf("quant_ut: ISA %s\n", shxk_isa_name());
	return T_RUN_SUITE("quant", NULL, NULL, g_tests);
}
