// SPDX-License-Identifier: MIT
/*
 * The weights-file parsers (daemon/model: gguf.c, safetensors.c, tfile.c):
 * valid files of every type, the GGUF metadata getters, and malformed files
 * that must each give -EINVAL and a message naming the problem. Every image
 * is parsed from a heap copy of exactly its length, so that the sanitizer
 * build catches a read past its end.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <CUnit/Basic.h>

#include "../t_cunit.h"

#include "wfile.h"
#include "tfile.h"

typedef int (*parse_fn)(const uint8_t *, size_t, struct shxd_tfile *,
			char *, size_t);

#define T_F32	0
#define T_F16	1
#define T_Q4_0	2
#define T_Q8_0	8
#define T_Q4_K	12
#define T_BF16	30

static char g_err[256];

static uint64_t le64(const uint8_t *b)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

static void set32(uint8_t *b, uint32_t v)
{
	int i;

	for (i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

static void set64(uint8_t *b, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

/* Parses a copy of img[0..len): exactly len bytes on the heap. */
static int parse(parse_fn fn, const uint8_t *img, size_t len,
		 struct shxd_tfile *f)
{
	uint8_t *c = malloc(len ? len : 1);
	int ret;

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	memcpy(c, img, len);
	g_err[0] = '\0';
	ret = fn(c, len, f, g_err, sizeof(g_err));
	free(c);
	/* Descriptors point into nothing after this: tests only look at
	 * offsets, names and sizes. */
	return ret;
}

/* -EINVAL, a message holding want, and nothing left allocated. */
static void expect_einval(parse_fn fn, const uint8_t *img, size_t len,
			  const char *want, int line)
{
	struct shxd_tfile f;
	int ret = parse(fn, img, len, &f);

	CU_ASSERT_EQUAL(ret, -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(g_err, want));
	CU_ASSERT(f.nr == 0 && !f.t && !f.kv);
	if (ret != -EINVAL || !strstr(g_err, want))
		fprintf(stderr, "\n  line %d: want -EINVAL and '%s', got %d '%s'\n",
			line, want, ret, g_err);
	if (!ret)
		shxd_tfile_free(&f);
}

#define GGUF_BAD(img, len, want) \
	expect_einval(shxd_gguf_parse, img, len, want, __LINE__)
#define ST_BAD(img, len, want) \
	expect_einval(shxd_safetensors_parse, img, len, want, __LINE__)

/* Where what follows the GGUF string s (u64 length, bytes) starts. */
static size_t after_str(const uint8_t *img, size_t len, const char *s)
{
	size_t n = strlen(s), i;

	for (i = 0; i + 8 + n <= len; i++)
		if (le64(img + i) == n && !memcmp(img + i + 8, s, n))
			return i + 8 + n;
	CU_FAIL_FATAL("string not in the image");
	return 0;
}

/* A tensor info's fields, after its name. */
static uint8_t *ti_ndim(uint8_t *img, size_t len, const char *name)
{
	return img + after_str(img, len, name);
}

static uint8_t *ti_ne(uint8_t *img, size_t len, const char *name, int j)
{
	return ti_ndim(img, len, name) + 4 + 8 * j;
}

static uint8_t *ti_type(uint8_t *img, size_t len, const char *name)
{
	uint8_t *nd = ti_ndim(img, len, name);

	return nd + 4 + 8 * nd[0];
}

static uint8_t *ti_offset(uint8_t *img, size_t len, const char *name)
{
	return ti_type(img, len, name) + 4;
}

/* The base GGUF file: metadata of each kind, tensors of the five types the
 * kernels run and one they do not. */
static const char *const g_tokens[] = { "a", "bb", "ccc" };
static const uint32_t g_u32s[] = { 7, 8, 9 };
static float g_w[12];
static uint16_t g_h[8], g_bf[4];
static uint8_t g_q8[2 * 2 * 34], g_q4[18], g_q4k[144];

static const struct wf_wkv g_kv[] = {
	WF_KV_STR("general.architecture", "llama"),
	WF_KV_U32("llama.block_count", 2),
	WF_KV_I32("llama.delta", -5),
	WF_KV_F32("llama.rope.freq_base", 10000.0),
	WF_KV_BOOL("llama.use_bias", 1),
	WF_KV_STRS("tokenizer.ggml.tokens", g_tokens, 3),
	{ .key = "x.u32s", .type = WF_GGUF_ARRAY, .arr_type = WF_GGUF_U32,
	  .arr = g_u32s, .arr_n = 3 },
	{ .key = "x.u8", .type = WF_GGUF_U8, .i = 200 },
	{ .key = "x.i8", .type = WF_GGUF_I8, .i = -100 },
	{ .key = "x.u16", .type = WF_GGUF_U16, .i = 60000 },
	{ .key = "x.i16", .type = WF_GGUF_I16, .i = -30000 },
	{ .key = "x.u64", .type = WF_GGUF_U64, .i = (int64_t)1 << 40 },
	{ .key = "x.u64big", .type = WF_GGUF_U64, .i = -1 },
	{ .key = "x.i64", .type = WF_GGUF_I64, .i = -((int64_t)1 << 50) },
	{ .key = "x.f64", .type = WF_GGUF_F64, .f = 0.125 },
};
#define NKV	(sizeof(g_kv) / sizeof(g_kv[0]))

static struct wf_wtensor g_t[] = {
	{ .name = "tok.w", .ggml_type = T_F32, .ndim = 2, .ne = { 4, 3 },
	  .data = g_w, .size = sizeof(g_w) },
	{ .name = "blk.0.f16", .ggml_type = T_F16, .ndim = 1, .ne = { 8 },
	  .data = g_h, .size = sizeof(g_h) },
	{ .name = "blk.0.bf16", .ggml_type = T_BF16, .ndim = 3,
	  .ne = { 2, 1, 2 }, .data = g_bf, .size = sizeof(g_bf) },
	{ .name = "blk.0.q8", .ggml_type = T_Q8_0, .ndim = 4,
	  .ne = { 64, 1, 2, 1 }, .data = g_q8, .size = sizeof(g_q8) },
	{ .name = "blk.0.q4", .ggml_type = T_Q4_0, .ndim = 1, .ne = { 32 },
	  .data = g_q4, .size = sizeof(g_q4) },
	{ .name = "blk.0.q4k", .ggml_type = T_Q4_K, .ndim = 2,
	  .ne = { 256, 1 }, .data = g_q4k, .size = sizeof(g_q4k) },
};
#define NT	(sizeof(g_t) / sizeof(g_t[0]))

static int init(void)
{
	size_t i;

	for (i = 0; i < 12; i++)
		g_w[i] = (float)i * 0.5f;
	for (i = 0; i < 8; i++)
		g_h[i] = (uint16_t)(0x3c00 + i);
	for (i = 0; i < 4; i++)
		g_bf[i] = (uint16_t)(0x3f80 + i);
	for (i = 0; i < sizeof(g_q8); i++)
		g_q8[i] = (uint8_t)(i * 7);
	for (i = 0; i < sizeof(g_q4); i++)
		g_q4[i] = (uint8_t)(i * 11 + 1);
	for (i = 0; i < sizeof(g_q4k); i++)
		g_q4k[i] = (uint8_t)(i * 13 + 2);
	return 0;
}

static uint8_t *base_gguf(size_t *len)
{
	uint8_t *img = wf_gguf_image(g_kv, NKV, g_t, NT, len);

	CU_ASSERT_PTR_NOT_NULL_FATAL(img);
	return img;
}

static void t_gguf_valid(void)
{
	static const enum shxd_ttype types[NT] = {
		SHXD_T_F32, SHXD_T_F16, SHXD_T_BF16, SHXD_T_Q8_0, SHXD_T_Q4_0,
		SHXD_T_OTHER,
	};
	static const char *const names[NT] = {
		"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_K",
	};
	const struct shxd_tdesc *d;
	struct shxd_tfile f;
	size_t len, i;
	uint8_t *img = base_gguf(&len);
	int j;

	CU_ASSERT_EQUAL_FATAL(shxd_gguf_parse(img, len, &f, g_err,
					      sizeof(g_err)), 0);
	CU_ASSERT_EQUAL(f.nr, NT);
	CU_ASSERT_EQUAL(f.nr_kv, NKV);
	CU_ASSERT_EQUAL(f.data_offset % 32, 0);
	for (i = 0; i < NT && i < f.nr; i++) {
		d = &f.t[i];
		CU_ASSERT_STRING_EQUAL(d->name, g_t[i].name);
		CU_ASSERT_EQUAL(d->type, types[i]);
		CU_ASSERT_STRING_EQUAL(d->type_name, names[i]);
		CU_ASSERT_EQUAL(d->ndim, g_t[i].ndim);
		for (j = 0; j < SHXD_TDIMS; j++)
			CU_ASSERT_EQUAL(d->ne[j], j < (int)g_t[i].ndim ?
					g_t[i].ne[j] : 1);
		CU_ASSERT_EQUAL(d->size, g_t[i].size);
		CU_ASSERT(d->offset >= f.data_offset);
		CU_ASSERT_EQUAL(d->offset % 32, 0);
		CU_ASSERT(d->offset + d->size <= len);
		CU_ASSERT_EQUAL(memcmp(img + d->offset, g_t[i].data, d->size), 0);
	}
	d = shxd_tfile_find(&f, "blk.0.q8");
	CU_ASSERT_PTR_EQUAL(d, &f.t[3]);
	CU_ASSERT_PTR_NULL(shxd_tfile_find(&f, "blk.0"));
	CU_ASSERT_PTR_NULL(shxd_tfile_find(&f, "blk.0.q8x"));
	CU_ASSERT_EQUAL(f.kv[5].type, SHXD_GGUF_ARRAY);
	CU_ASSERT_EQUAL(f.kv[5].arr_type, SHXD_GGUF_STRING);
	CU_ASSERT_EQUAL(f.kv[5].arr_len, 3);
	CU_ASSERT_EQUAL(le64(f.kv[5].val), 1);
	CU_ASSERT_EQUAL(f.kv[5].val[8], 'a');
	shxd_tfile_free(&f);
	CU_ASSERT(f.nr == 0 && !f.t && !f.kv);
	shxd_tfile_free(&f);
	shxd_tfile_free(NULL);
	free(img);
}

/* Every ggml type GGUF files hold, with the sizes from ggml's public
 * block layouts (ggml-common.h). */
static const struct {
	uint32_t id;
	const char *name;
	unsigned int blck, size;
} g_types[] = {
	{ 0, "F32", 1, 4 }, { 1, "F16", 1, 2 }, { 2, "Q4_0", 32, 18 },
	{ 3, "Q4_1", 32, 20 }, { 6, "Q5_0", 32, 22 }, { 7, "Q5_1", 32, 24 },
	{ 8, "Q8_0", 32, 34 }, { 9, "Q8_1", 32, 36 }, { 10, "Q2_K", 256, 84 },
	{ 11, "Q3_K", 256, 110 }, { 12, "Q4_K", 256, 144 },
	{ 13, "Q5_K", 256, 176 }, { 14, "Q6_K", 256, 210 },
	{ 15, "Q8_K", 256, 292 }, { 16, "IQ2_XXS", 256, 66 },
	{ 17, "IQ2_XS", 256, 74 }, { 18, "IQ3_XXS", 256, 98 },
	{ 19, "IQ1_S", 256, 50 }, { 20, "IQ4_NL", 32, 18 },
	{ 21, "IQ3_S", 256, 110 }, { 22, "IQ2_S", 256, 82 },
	{ 23, "IQ4_XS", 256, 136 }, { 24, "I8", 1, 1 }, { 25, "I16", 1, 2 },
	{ 26, "I32", 1, 4 }, { 27, "I64", 1, 8 }, { 28, "F64", 1, 8 },
	{ 29, "IQ1_M", 256, 56 }, { 30, "BF16", 1, 2 },
	{ 34, "TQ1_0", 256, 54 }, { 35, "TQ2_0", 256, 66 },
	{ 39, "MXFP4", 32, 17 }, { 40, "NVFP4", 64, 36 },
};
#define NTYPES	(sizeof(g_types) / sizeof(g_types[0]))

static void t_gguf_all_types(void)
{
	static char names[NTYPES][16];
	struct wf_wtensor t[NTYPES];
	struct shxd_tfile f;
	size_t len, i;
	uint8_t *img;

	memset(t, 0, sizeof(t));
	for (i = 0; i < NTYPES; i++) {
		snprintf(names[i], sizeof(names[i]), "t.%s", g_types[i].name);
		t[i].name = names[i];
		t[i].ggml_type = g_types[i].id;
		t[i].ndim = 2;
		t[i].ne[0] = 2 * g_types[i].blck;
		t[i].ne[1] = 3;
		t[i].size = 6 * g_types[i].size;
	}
	img = wf_gguf_image(NULL, 0, t, NTYPES, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(img);
	CU_ASSERT_EQUAL_FATAL(parse(shxd_gguf_parse, img, len, &f), 0);
	CU_ASSERT_EQUAL(f.nr, NTYPES);
	for (i = 0; i < NTYPES && i < f.nr; i++) {
		CU_ASSERT_STRING_EQUAL(f.t[i].type_name, g_types[i].name);
		CU_ASSERT_EQUAL(f.t[i].size, 6 * g_types[i].size);
		CU_ASSERT_EQUAL(f.t[i].type,
			g_types[i].id == 0 ? SHXD_T_F32 :
			g_types[i].id == 1 ? SHXD_T_F16 :
			g_types[i].id == 2 ? SHXD_T_Q4_0 :
			g_types[i].id == 8 ? SHXD_T_Q8_0 :
			g_types[i].id == 30 ? SHXD_T_BF16 : SHXD_T_OTHER);
	}
	shxd_tfile_free(&f);
	free(img);
}

static void t_gguf_unknown_type(void)
{
	static const uint32_t bad[] = { 4, 5, 31, 33, 36, 38, 41, 1000,
					UINT32_MAX };
	char want[64];
	size_t len, i;
	uint8_t *img = base_gguf(&len);

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		set32(ti_type(img, len, "blk.0.q4k"), bad[i]);
		snprintf(want, sizeof(want),
			 "tensor 'blk.0.q4k': unknown ggml type %u", bad[i]);
		GGUF_BAD(img, len, want);
	}
	free(img);
}

static void t_gguf_meta(void)
{
	struct shxd_tfile f;
	const char *s;
	size_t len, n;
	int64_t v;
	double x;
	uint8_t *img = base_gguf(&len);

	CU_ASSERT_EQUAL_FATAL(shxd_gguf_parse(img, len, &f, g_err,
					      sizeof(g_err)), 0);
	CU_ASSERT_EQUAL(shxd_gguf_get_int(&f, "llama.block_count", &v), 0);
	CU_ASSERT_EQUAL(v, 2);
	CU_ASSERT_EQUAL(shxd_gguf_get_int(&f, "llama.delta", &v), 0);
	CU_ASSERT_EQUAL(v, -5);
	CU_ASSERT_EQUAL(shxd_gguf_get_int(&f, "llama.use_bias", &v), 0);
	CU_ASSERT_EQUAL(v, 1);
	CU_ASSERT_EQUAL(shxd_gguf_get_int(&f, "x.u8", &v), 0);
	CU_ASSERT_EQUAL(v, 200);
	CU_ASSERT_EQUAL(shxd_gguf_get_int(&f, "x.i8", &v), 0);
	CU_ASSERT_EQUAL(v, -100);
	CU_ASSERT_EQUAL(shxd_gguf_get_int(&f, "x.u16", &v), 0);
	CU_ASSERT_EQUAL(v, 60000);
	CU_ASSERT_EQUAL(shxd_gguf_get_int(&f, "x.i16", &v), 0);
	CU_ASSERT_EQUAL(v, -30000);
	CU_ASSERT_EQUAL(shxd_gguf_get_int(&f, "x.u64", &v), 0);
	CU_ASSERT_EQUAL(v, (int64_t)1 << 40);
	CU_ASSERT_EQUAL(shxd_gguf_get_int(&f, "x.i64", &v), 0);
	CU_ASSERT_EQUAL(v, -((int64_t)1 << 50));
	/* 2^64 - 1 does not fit int64. */
	CU_ASSERT_EQUAL(shxd_gguf_get_int(&f, "x.u64big", &v), -EINVAL);

	CU_ASSERT_EQUAL(shxd_gguf_get_float(&f, "llama.rope.freq_base", &x), 0);
	CU_ASSERT_DOUBLE_EQUAL(x, 10000.0, 0.0);
	CU_ASSERT_EQUAL(shxd_gguf_get_float(&f, "x.f64", &x), 0);
	CU_ASSERT_DOUBLE_EQUAL(x, 0.125, 0.0);

	CU_ASSERT_EQUAL(shxd_gguf_get_str(&f, "general.architecture", &s, &n), 0);
	CU_ASSERT_EQUAL(n, 5);
	CU_ASSERT_EQUAL(memcmp(s, "llama", 5), 0);

	/* Missing keys, and types that do not fit. */
	CU_ASSERT_EQUAL(shxd_gguf_get_int(&f, "general.nope", &v), -ENOENT);
	CU_ASSERT_EQUAL(shxd_gguf_get_float(&f, "general", &x), -ENOENT);
	CU_ASSERT_EQUAL(shxd_gguf_get_str(&f, "", &s, &n), -ENOENT);
	CU_ASSERT_EQUAL(shxd_gguf_get_str(&f, "general.architectur", &s, &n),
			-ENOENT);
	CU_ASSERT_EQUAL(shxd_gguf_get_int(&f, "general.architecture", &v),
			-EINVAL);
	CU_ASSERT_EQUAL(shxd_gguf_get_int(&f, "llama.rope.freq_base", &v),
			-EINVAL);
	CU_ASSERT_EQUAL(shxd_gguf_get_int(&f, "tokenizer.ggml.tokens", &v),
			-EINVAL);
	CU_ASSERT_EQUAL(shxd_gguf_get_float(&f, "llama.block_count", &x),
			-EINVAL);
	CU_ASSERT_EQUAL(shxd_gguf_get_str(&f, "llama.block_count", &s, &n),
			-EINVAL);
	CU_ASSERT_EQUAL(shxd_gguf_get_str(&f, "tokenizer.ggml.tokens", &s, &n),
			-EINVAL);
	shxd_tfile_free(&f);

	/* A safetensors file has no metadata. */
	{
		struct wf_wtensor t = { .name = "a", .dtype = "F32", .ndim = 1,
					.ne = { 1 }, .size = 4 };

		free(img);
		img = wf_st_image(&t, 1, &len);
		CU_ASSERT_EQUAL_FATAL(shxd_safetensors_parse(img, len, &f,
						g_err, sizeof(g_err)), 0);
		CU_ASSERT_EQUAL(f.nr_kv, 0);
		CU_ASSERT_EQUAL(shxd_gguf_get_int(&f, "a", &v), -ENOENT);
		shxd_tfile_free(&f);
	}
	free(img);
}

static void t_gguf_alignment(void)
{
	struct wf_wkv kv[] = { WF_KV_U32("general.alignment", 64) };
	struct shxd_tfile f;
	size_t len, i;
	uint8_t *img = wf_gguf_image(kv, 1, g_t, NT, &len);

	CU_ASSERT_PTR_NOT_NULL_FATAL(img);
	CU_ASSERT_EQUAL_FATAL(parse(shxd_gguf_parse, img, len, &f), 0);
	CU_ASSERT_EQUAL(f.data_offset % 64, 0);
	for (i = 0; i < f.nr; i++)
		CU_ASSERT_EQUAL(f.t[i].offset % 64, 0);
	shxd_tfile_free(&f);

	/* Offsets at multiples of 64 are not all multiples of 128. */
	set32(img + after_str(img, len, "general.alignment") + 4, 128);
	GGUF_BAD(img, len, "is not a multiple of the alignment 128");
	set32(img + after_str(img, len, "general.alignment") + 4, 48);
	GGUF_BAD(img, len, "kv 'general.alignment': 48 is not a power of two");
	set32(img + after_str(img, len, "general.alignment") + 4, 0);
	GGUF_BAD(img, len, "kv 'general.alignment': 0 is not a power of two");
	set32(img + after_str(img, len, "general.alignment"), WF_GGUF_I32);
	GGUF_BAD(img, len, "kv 'general.alignment': type i32, want u32");
	free(img);
}

/* Every strict prefix of a valid file is refused, and nothing crashes. */
static void truncated(parse_fn fn, const uint8_t *img, size_t len)
{
	struct shxd_tfile f;
	size_t l, bad = 0;
	int ret;

	for (l = 0; l < len; l++) {
		ret = parse(fn, img, l, &f);
		if (ret != -EINVAL || !g_err[0]) {
			if (!bad++)
				fprintf(stderr, "\n  prefix %zu of %zu: %d '%s'\n",
					l, len, ret, g_err);
			if (!ret)
				shxd_tfile_free(&f);
		}
	}
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(parse(fn, img, len, &f), 0);
	shxd_tfile_free(&f);
}

static void t_gguf_truncated(void)
{
	size_t len;
	uint8_t *img = base_gguf(&len);

	truncated(shxd_gguf_parse, img, len);
	/* Some cuts, and what they say. */
	GGUF_BAD(img, 0, "header: magic (4 bytes at offset 0) past the end of the file (0 bytes)");
	GGUF_BAD(img, 6, "header: version");
	GGUF_BAD(img, 20, "header: metadata count (8 bytes at offset 16) past the end of the file (20 bytes)");
	/* Cut in the metadata, the counts no longer fit; with no tensors
	 * counted, the cut itself is what is found. */
	GGUF_BAD(img, after_str(img, len, "llama.delta") + 6,
		 "header: 15 metadata entries cannot fit in the 103 bytes after the header");
	set64(img + 8, 0);
	GGUF_BAD(img, after_str(img, len, "x.f64") + 6,
		 "kv 'x.f64': value (8 bytes at offset");
	set64(img + 8, NT);
	GGUF_BAD(img, after_str(img, len, "tok.w") - 2, "tensor 0 at offset");
	GGUF_BAD(img, len - 1,
		 "tensor 'blk.0.q4k': data [");
	free(img);
}

static void t_gguf_magic_version(void)
{
	size_t len;
	uint8_t *img = base_gguf(&len);

	img[3] = 'X';
	GGUF_BAD(img, len, "header: bad magic 47 47 55 58 at offset 0");
	img[3] = 'F';
	set32(img + 4, 1);
	GGUF_BAD(img, len, "header: version 1 at offset 4 is not supported (want 2 or 3)");
	set32(img + 4, 4);
	GGUF_BAD(img, len, "header: version 4 at offset 4 is not supported");
	set32(img + 4, 0x03000000);
	GGUF_BAD(img, len, "big-endian GGUF");
	set32(img + 4, 2);
	{
		struct shxd_tfile f;

		CU_ASSERT_EQUAL(parse(shxd_gguf_parse, img, len, &f), 0);
		shxd_tfile_free(&f);
		/* No room for a message is no reason to crash. */
		CU_ASSERT_EQUAL(shxd_gguf_parse(img, 3, &f, NULL, 0), -EINVAL);
		CU_ASSERT_EQUAL(shxd_safetensors_parse(img, 3, &f, NULL, 0),
				-EINVAL);
		g_err[0] = 'x';
		CU_ASSERT_EQUAL(shxd_gguf_parse(img, 3, &f, g_err, 1), -EINVAL);
		CU_ASSERT_EQUAL(g_err[0], '\0');
	}
	free(img);
}

static void t_gguf_counts(void)
{
	size_t len;
	uint8_t *img = base_gguf(&len);

	set64(img + 8, UINT64_MAX);
	GGUF_BAD(img, len, "header: 18446744073709551615 tensors and 15 metadata entries cannot fit");
	set64(img + 8, len / 16);
	GGUF_BAD(img, len, "cannot fit in the");
	/* One tensor more than there is: its info is read from the data. */
	set64(img + 8, NT + 1);
	GGUF_BAD(img, len, "tensor 6 at offset");
	set64(img + 8, NT);
	set64(img + 16, (uint64_t)1 << 40);
	GGUF_BAD(img, len, "header: 1099511627776 metadata entries cannot fit");
	set64(img + 16, UINT64_MAX);
	GGUF_BAD(img, len, "metadata entries cannot fit");
	set64(img + 16, NKV + 1);
	/* The first tensor info read as a kv, then the rest misread. */
	GGUF_BAD(img, len, "tensor 0 at offset");
	free(img);
}

static void t_gguf_dims(void)
{
	size_t len;
	uint8_t *img = base_gguf(&len), *nd, *ne0, *ne1;

	nd = ti_ndim(img, len, "tok.w");
	ne0 = ti_ne(img, len, "tok.w", 0);
	ne1 = ti_ne(img, len, "tok.w", 1);
	set32(nd, 0);
	GGUF_BAD(img, len, "tensor 'tok.w': 0 dimensions at offset");
	set32(nd, 5);
	GGUF_BAD(img, len, "tensor 'tok.w': 5 dimensions at offset");
	set32(nd, UINT32_MAX);
	GGUF_BAD(img, len, "(want 1 to 4)");
	set32(nd, 2);

	set64(ne0, 0);
	GGUF_BAD(img, len, "tensor 'tok.w': dimension 0 is zero");
	set64(ne0, (uint64_t)1 << 40);
	set64(ne1, (uint64_t)1 << 40);
	GGUF_BAD(img, len, "tensor 'tok.w': dimension 1 (1099511627776) overflows the element count");
	set64(ne0, UINT64_MAX);
	set64(ne1, 1);
	GGUF_BAD(img, len, "tensor 'tok.w': dimension 0 (18446744073709551615) overflows");
	/* 2^62 elements fit int64, their 2^64 bytes do not. */
	set64(ne0, (uint64_t)1 << 31);
	set64(ne1, (uint64_t)1 << 31);
	GGUF_BAD(img, len, "tensor 'tok.w': 4611686018427387904 elements of F32 overflow the byte count");
	/* Sane arithmetic, but not in this file. */
	set64(ne0, (uint64_t)1 << 20);
	set64(ne1, (uint64_t)1 << 20);
	GGUF_BAD(img, len, "tensor 'tok.w': data [");
	CU_ASSERT_PTR_NOT_NULL(strstr(g_err, "past the end of the file"));
	set64(ne0, 4);
	set64(ne1, 3);

	/* Rows must be whole blocks. */
	set64(ti_ne(img, len, "blk.0.q4", 0), 16);
	GGUF_BAD(img, len, "tensor 'blk.0.q4': rows of 16 elements are not whole 32-element Q4_0 blocks");
	set64(ti_ne(img, len, "blk.0.q4", 0), 32);
	set64(ti_ne(img, len, "blk.0.q4k", 0), 128);
	GGUF_BAD(img, len, "not whole 256-element Q4_K blocks");
	free(img);
}

static void t_gguf_offsets(void)
{
	char want[160];
	size_t len;
	uint8_t *img = base_gguf(&len), *off = ti_offset(img, len, "blk.0.f16");
	uint64_t o = le64(off);

	set64(off, (uint64_t)1 << 40);
	GGUF_BAD(img, len, "tensor 'blk.0.f16': data [");
	set64(off, UINT64_MAX & ~(uint64_t)31);
	GGUF_BAD(img, len, "tensor 'blk.0.f16': data [18446744073709551615, 18446744073709551615) past the end");
	/* The brief's own example form: the last byte cut off. */
	set64(off, o);
	{
		struct shxd_tfile f;
		const struct shxd_tdesc *d;

		CU_ASSERT_EQUAL_FATAL(parse(shxd_gguf_parse, img, len, &f), 0);
		d = shxd_tfile_find(&f, "blk.0.q4k");
		CU_ASSERT_PTR_NOT_NULL_FATAL(d);
		snprintf(want, sizeof(want),
			 "tensor 'blk.0.q4k': data [%llu, %llu) past the end of the file (%zu bytes)",
			 (unsigned long long)d->offset,
			 (unsigned long long)(d->offset + d->size), len - 1);
		shxd_tfile_free(&f);
		GGUF_BAD(img, len - 1, want);
	}

	set64(off, o + 2);
	GGUF_BAD(img, len, "tensor 'blk.0.f16': offset ");
	CU_ASSERT_PTR_NOT_NULL(strstr(g_err, "is not a multiple of the alignment 32"));
	/* On top of tok.w, and inside it. */
	set64(off, 0);
	GGUF_BAD(img, len, "tensors 'tok.w' [");
	CU_ASSERT_PTR_NOT_NULL(strstr(g_err, "and 'blk.0.f16' ["));
	CU_ASSERT_PTR_NOT_NULL(strstr(g_err, ") overlap"));
	set64(off, o);
	set64(ti_offset(img, len, "blk.0.q4k"), le64(ti_offset(img, len,
		"blk.0.q8")) + 64);
	GGUF_BAD(img, len, "tensors 'blk.0.q8' [");
	free(img);
}

static void t_gguf_names(void)
{
	char name[SHXD_TNAME_MAX + 1];
	struct wf_wtensor t[2] = {
		{ .name = "a", .ggml_type = T_F32, .ndim = 1, .ne = { 1 },
		  .size = 4 },
		{ .name = "a", .ggml_type = T_F32, .ndim = 1, .ne = { 1 },
		  .size = 4 },
	};
	struct shxd_tfile f;
	size_t len;
	uint8_t *img;

	img = wf_gguf_image(NULL, 0, t, 2, &len);
	GGUF_BAD(img, len, "duplicate tensor name 'a' (tensors 0 and 1)");
	free(img);

	/* 127 bytes fit, 128 do not. */
	memset(name, 'n', sizeof(name));
	name[SHXD_TNAME_MAX - 1] = '\0';
	t[1].name = name;
	img = wf_gguf_image(NULL, 0, t, 2, &len);
	CU_ASSERT_EQUAL(parse(shxd_gguf_parse, img, len, &f), 0);
	CU_ASSERT_PTR_NOT_NULL(shxd_tfile_find(&f, name));
	shxd_tfile_free(&f);
	free(img);
	name[SHXD_TNAME_MAX - 1] = 'n';
	name[SHXD_TNAME_MAX] = '\0';
	img = wf_gguf_image(NULL, 0, t, 2, &len);
	GGUF_BAD(img, len, "tensor 1 at offset");
	CU_ASSERT_PTR_NOT_NULL(strstr(g_err, "name of 128 bytes is too long (at most 127)"));
	free(img);

	t[1].name = "";
	img = wf_gguf_image(NULL, 0, t, 2, &len);
	GGUF_BAD(img, len, "empty name");
	free(img);

	t[1].name = "b\x01\x7f";
	img = wf_gguf_image(NULL, 0, t, 2, &len);
	CU_ASSERT_EQUAL(parse(shxd_gguf_parse, img, len, &f), 0);
	shxd_tfile_free(&f);
	/* Shown printable in messages. */
	set32(ti_type(img, len, "b\x01\x7f"), 99);
	GGUF_BAD(img, len, "tensor 'b?" "?': unknown ggml type 99");
	set32(ti_type(img, len, "b\x01\x7f"), T_F32);
	img[after_str(img, len, "b\x01\x7f") - 2] = '\0';
	GGUF_BAD(img, len, "name holds a NUL byte");
	free(img);

	/* Keys are unique too. */
	{
		struct wf_wkv kv[] = {
			WF_KV_U32("k.x", 1), WF_KV_U32("k.y", 2), WF_KV_STR("k.x", "s"),
		};

		img = wf_gguf_image(kv, 3, t, 1, &len);
		GGUF_BAD(img, len, "duplicate key 'k.x' (kv 0 and 2)");
		free(img);
		kv[2].key = "";
		img = wf_gguf_image(kv, 3, t, 1, &len);
		GGUF_BAD(img, len, "kv 2 at offset");
		CU_ASSERT_PTR_NOT_NULL(strstr(g_err, "empty key"));
		free(img);
	}
}

static void t_gguf_kv_errors(void)
{
	size_t len, k;
	uint8_t *img = base_gguf(&len);

	k = after_str(img, len, "llama.delta");
	set32(img + k, 13);
	GGUF_BAD(img, len, "kv 'llama.delta': unknown value type 13 at offset");
	set32(img + k, WF_GGUF_I32);

	k = after_str(img, len, "tokenizer.ggml.tokens");
	set32(img + k + 4, WF_GGUF_ARRAY);
	GGUF_BAD(img, len, "kv 'tokenizer.ggml.tokens': arrays of arrays are not supported");
	set32(img + k + 4, 77);
	GGUF_BAD(img, len, "kv 'tokenizer.ggml.tokens': unknown array element type 77");
	set32(img + k + 4, WF_GGUF_STRING);
	set64(img + k + 8, (uint64_t)1 << 60);
	GGUF_BAD(img, len, "kv 'tokenizer.ggml.tokens': array of 1152921504606846976 strings");
	set64(img + k + 8, 3);
	/* The second string's length. */
	set64(img + k + 16 + 9, UINT64_MAX);
	GGUF_BAD(img, len, "kv 'tokenizer.ggml.tokens': array string (18446744073709551615 bytes at offset");
	set64(img + k + 16 + 9, 2);

	k = after_str(img, len, "x.u32s");
	set64(img + k + 8, (uint64_t)1 << 62);
	GGUF_BAD(img, len, "kv 'x.u32s': array of 4611686018427387904 u32 at offset");
	set64(img + k + 8, 3);

	k = after_str(img, len, "general.architecture");
	set64(img + k + 4, len);
	GGUF_BAD(img, len, "kv 'general.architecture': string value (");
	set64(img + k + 4, 5);
	set64(img + k - 20 - 8, UINT64_MAX - 3);
	GGUF_BAD(img, len, "kv 0 at offset 24: key (18446744073709551612 bytes at offset 32) past the end");
	free(img);
}

/* safetensors */

static uint8_t g_i64[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, g_u8[5] = { 9, 8, 7 };

static struct wf_wtensor g_st[] = {
	{ .name = "a.f32", .dtype = "F32", .ndim = 2, .ne = { 4, 3 },
	  .data = g_w, .size = sizeof(g_w) },
	{ .name = "b.f16", .dtype = "F16", .ndim = 1, .ne = { 8 },
	  .data = g_h, .size = sizeof(g_h) },
	{ .name = "c.bf16", .dtype = "BF16", .ndim = 3, .ne = { 2, 1, 2 },
	  .data = g_bf, .size = sizeof(g_bf) },
	{ .name = "d.i64", .dtype = "I64", .ndim = 0, .data = g_i64,
	  .size = sizeof(g_i64) },
	{ .name = "e.u8", .dtype = "U8", .ndim = 4, .ne = { 5, 1, 1, 1 },
	  .data = g_u8, .size = sizeof(g_u8) },
	{ .name = "f.f4", .dtype = "F4", .ndim = 1, .ne = { 6 },
	  .data = g_q4, .size = 3 },
};
#define NST	(sizeof(g_st) / sizeof(g_st[0]))

static uint8_t *base_st(size_t *len)
{
	uint8_t *img = wf_st_image(g_st, NST, len);

	CU_ASSERT_PTR_NOT_NULL_FATAL(img);
	return img;
}

static void t_st_valid(void)
{
	static const enum shxd_ttype types[NST] = {
		SHXD_T_F32, SHXD_T_F16, SHXD_T_BF16, SHXD_T_OTHER, SHXD_T_OTHER,
		SHXD_T_OTHER,
	};
	const struct shxd_tdesc *d;
	struct shxd_tfile f;
	size_t len, i;
	uint8_t *img = base_st(&len);
	int j;

	CU_ASSERT_EQUAL_FATAL(shxd_safetensors_parse(img, len, &f, g_err,
						     sizeof(g_err)), 0);
	CU_ASSERT_EQUAL(f.nr, NST);
	CU_ASSERT_EQUAL(f.data_offset, 8 + le64(img));
	for (i = 0; i < NST && i < f.nr; i++) {
		d = &f.t[i];
		CU_ASSERT_STRING_EQUAL(d->name, g_st[i].name);
		CU_ASSERT_STRING_EQUAL(d->type_name, g_st[i].dtype);
		CU_ASSERT_EQUAL(d->type, types[i]);
		CU_ASSERT_EQUAL(d->ndim, g_st[i].ndim ? g_st[i].ndim : 1);
		for (j = 0; j < SHXD_TDIMS; j++)
			CU_ASSERT_EQUAL(d->ne[j], j < (int)g_st[i].ndim ?
					g_st[i].ne[j] : 1);
		CU_ASSERT_EQUAL(d->size, g_st[i].size);
		CU_ASSERT_EQUAL(memcmp(img + d->offset, g_st[i].data, d->size), 0);
	}
	/* The header said shape [3, 4] for ne {4, 3}. */
	CU_ASSERT_PTR_NOT_NULL(memmem(img, len, "\"shape\":[3,4]", 13));
	CU_ASSERT_PTR_NOT_NULL(memmem(img, len, "\"shape\":[2,1,2]", 15));
	CU_ASSERT_PTR_EQUAL(shxd_tfile_find(&f, "c.bf16"), &f.t[2]);
	CU_ASSERT_PTR_NULL(shxd_tfile_find(&f, "__metadata__"));
	CU_ASSERT_EQUAL(f.nr_kv, 0);
	shxd_tfile_free(&f);
	free(img);
}

static void t_st_truncated(void)
{
	size_t len;
	uint8_t *img = base_st(&len);

	truncated(shxd_safetensors_parse, img, len);
	ST_BAD(img, 7, "header: 7 bytes, too short for the 8-byte header length");
	ST_BAD(img, 8 + le64(img) - 1, "header: length");
	CU_ASSERT_PTR_NOT_NULL(strstr(g_err, "past the end of the file"));
	ST_BAD(img, len - 1, "tensor 'f.f4': data [");
	free(img);
}

/* A safetensors file with a header of our own. */
static void st_json(const char *json, size_t data, const char *want,
		    int line)
{
	size_t len;
	uint8_t *img = wf_st_image_json(json, NULL, data, &len);

	CU_ASSERT_PTR_NOT_NULL_FATAL(img);
	expect_einval(shxd_safetensors_parse, img, len, want, line);
	free(img);
}

#define ST_JSON_BAD(json, data, want) st_json(json, data, want, __LINE__)
#define T1(body)	"{\"a\":{" body "}}"
#define F32x2		"\"dtype\":\"F32\",\"shape\":[2]"

static void t_st_errors(void)
{
	char json[512], name[SHXD_TNAME_MAX + 1];
	struct shxd_tfile f;
	size_t len;
	uint8_t *img;

	/* The shape and dtype decide the size. */
	ST_JSON_BAD(T1(F32x2 ",\"data_offsets\":[0,4]"), 8,
		    "tensor 'a': data_offsets [0, 4) hold 4 bytes, but 2 F32 elements take 8");
	ST_JSON_BAD(T1("\"dtype\":\"I64\",\"shape\":[2,2],\"data_offsets\":[0,16]"),
		    32, "hold 16 bytes, but 4 I64 elements take 32");
	ST_JSON_BAD(T1("\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,2]"),
		    2, "tensor 'a': 3 elements of F4 are not a whole number of bytes");
	ST_JSON_BAD(T1(F32x2 ",\"data_offsets\":[0,8]"), 4,
		    "tensor 'a': data [");
	snprintf(json, sizeof(json), "past the end of the file (%zu bytes)",
		 (size_t)(8 + strlen(T1(F32x2 ",\"data_offsets\":[0,8]")) + 4));
	ST_JSON_BAD(T1(F32x2 ",\"data_offsets\":[0,8]"), 4, json);
	ST_JSON_BAD(T1(F32x2 ",\"data_offsets\":[8,0]"), 8,
		    "tensor 'a': data_offsets [8, 0) end before they begin");
	ST_JSON_BAD("{\"a\":{" F32x2 ",\"data_offsets\":[0,8]},"
		    "\"b\":{" F32x2 ",\"data_offsets\":[4,12]}}", 12,
		    "tensors 'a' [");
	CU_ASSERT_PTR_NOT_NULL(strstr(g_err, "and 'b' ["));
	ST_JSON_BAD("{\"a\":{" F32x2 ",\"data_offsets\":[0,8]},"
		    "\"a\":{" F32x2 ",\"data_offsets\":[8,16]}}", 16,
		    "duplicate tensor name 'a' (tensors 0 and 1)");

	/* Fields missing or of the wrong kind. */
	ST_JSON_BAD("{\"a\":5}", 0, "tensor 'a': not a JSON object");
	ST_JSON_BAD(T1("\"shape\":[2],\"data_offsets\":[0,8]"), 8,
		    "tensor 'a': no \"dtype\" string");
	ST_JSON_BAD(T1("\"dtype\":\"Q9\",\"shape\":[2],\"data_offsets\":[0,8]"), 8,
		    "tensor 'a': unknown dtype 'Q9'");
	ST_JSON_BAD(T1("\"dtype\":\"F32\",\"data_offsets\":[0,8]"), 8,
		    "tensor 'a': no \"shape\" array");
	ST_JSON_BAD(T1(F32x2), 8, "tensor 'a': no \"data_offsets\" [begin, end] pair");
	ST_JSON_BAD(T1(F32x2 ",\"data_offsets\":[0]"), 8, "[begin, end] pair");
	ST_JSON_BAD(T1(F32x2 ",\"data_offsets\":[0,8,9]"), 8, "[begin, end] pair");
	ST_JSON_BAD(T1(F32x2 ",\"data_offsets\":[0.5,8]"), 8,
		    "tensor 'a': data_offsets are not non-negative integers");
	ST_JSON_BAD(T1(F32x2 ",\"data_offsets\":[-8,0]"), 8,
		    "data_offsets are not non-negative integers");
	ST_JSON_BAD(T1(F32x2 ",\"data_offsets\":[0,\"8\"]"), 8,
		    "data_offsets are not non-negative integers");
	ST_JSON_BAD(T1(F32x2 ",\"data_offsets\":[0,1e300]"), 8,
		    "data_offsets are not non-negative integers");

	/* Shapes. */
	ST_JSON_BAD(T1("\"dtype\":\"F32\",\"shape\":[1,1,1,1,1],\"data_offsets\":[0,4]"),
		    4, "tensor 'a': 5 dimensions (at most 4)");
	ST_JSON_BAD(T1("\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]"),
		    4, "tensor 'a': shape[0] is not a non-negative integer");
	ST_JSON_BAD(T1("\"dtype\":\"F32\",\"shape\":[2,1.5],\"data_offsets\":[0,4]"),
		    4, "tensor 'a': shape[1] is not a non-negative integer");
	ST_JSON_BAD(T1("\"dtype\":\"F32\",\"shape\":[2,0],\"data_offsets\":[0,0]"),
		    4, "tensor 'a': shape[1] is zero");
	ST_JSON_BAD(T1("\"dtype\":\"F32\",\"shape\":[2147483648,2147483648,4],\"data_offsets\":[0,4]"),
		    4, "tensor 'a': shape[2] (4) overflows the element count");
	ST_JSON_BAD(T1("\"dtype\":\"F64\",\"shape\":[2147483648,2147483648],\"data_offsets\":[0,4]"),
		    4, "tensor 'a': 4611686018427387904 elements of F64 overflow the byte count");

	/* Names. */
	ST_JSON_BAD("{\"\":{" F32x2 ",\"data_offsets\":[0,8]}}", 8,
		    "tensor 0: empty name");
	memset(name, 'n', sizeof(name));
	name[SHXD_TNAME_MAX] = '\0';
	snprintf(json, sizeof(json), "{\"%s\":{" F32x2 ",\"data_offsets\":[0,8]}}",
		 name);
	ST_JSON_BAD(json, 8, "name of 128 bytes is too long (at most 127)");
	name[SHXD_TNAME_MAX - 1] = '\0';
	snprintf(json, sizeof(json), "{\"%s\":{" F32x2 ",\"data_offsets\":[0,8]}}",
		 name);
	img = wf_st_image_json(json, NULL, 8, &len);
	CU_ASSERT_EQUAL(parse(shxd_safetensors_parse, img, len, &f), 0);
	CU_ASSERT_PTR_NOT_NULL(shxd_tfile_find(&f, name));
	shxd_tfile_free(&f);
	free(img);

	/* The header itself. */
	ST_JSON_BAD("{\"a\":", 0, "header: bad JSON at offset");
	ST_JSON_BAD("", 0, "header: bad JSON at offset 8");
	ST_JSON_BAD("[]", 0, "header: the JSON at offset 8 is not an object");
	ST_JSON_BAD("{} x", 0, "header: bytes after the JSON object at offset 11");
	ST_JSON_BAD("{\"__metadata__\":[]}", 0, "\"__metadata__\" is not an object");
	img = wf_st_image_json("{}      ", NULL, 0, &len);
	CU_ASSERT_EQUAL(parse(shxd_safetensors_parse, img, len, &f), 0);
	CU_ASSERT_EQUAL(f.nr, 0);
	shxd_tfile_free(&f);
	img[8 + 3] = '\0';
	ST_BAD(img, len, "header: bytes after the JSON object at offset 11");
	set64(img, 9);
	ST_BAD(img, len, "header: length 9 at offset 0 past the end of the file (16 bytes)");
	set64(img, UINT64_MAX);
	ST_BAD(img, len, "header: length 18446744073709551615 at offset 0 is over the limit");
	set64(img, (100 << 20) + 1);
	ST_BAD(img, len, "is over the limit (104857600 bytes)");
	free(img);
}

int main(void)
{
	static const struct t_test tests[] = {
		{ "GGUF: valid, the kernels' types and Q4_K", t_gguf_valid },
		{ "GGUF: every ggml type's size", t_gguf_all_types },
		{ "GGUF: unknown and removed types", t_gguf_unknown_type },
		{ "GGUF: metadata getters", t_gguf_meta },
		{ "GGUF: general.alignment", t_gguf_alignment },
		{ "GGUF: every truncation", t_gguf_truncated },
		{ "GGUF: magic and version", t_gguf_magic_version },
		{ "GGUF: absurd counts", t_gguf_counts },
		{ "GGUF: dimensions and overflow", t_gguf_dims },
		{ "GGUF: offsets, alignment, overlap", t_gguf_offsets },
		{ "GGUF: names and keys", t_gguf_names },
		{ "GGUF: malformed metadata", t_gguf_kv_errors },
		{ "safetensors: valid, F32/F16/BF16/I64/U8/F4", t_st_valid },
		{ "safetensors: every truncation", t_st_truncated },
		{ "safetensors: malformed headers", t_st_errors },
	};

	return T_RUN_SUITE("model_parse", init, NULL, tests);
}
