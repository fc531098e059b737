// SPDX-License-Identifier: MIT
/*
 * Writes the fuzz targets' seed corpus (make fuzz-corpus): small valid GGUF
 * and safetensors files, each under 4 KiB, into DIR/gguf and
 * DIR/safetensors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wfile.h"

/* Takes img's length through a pointer: the call that makes img sets it,
 * and arguments are evaluated in no set order. */
static int save(const char *dir, const char *name, uint8_t *img,
		const size_t *lenp)
{
	size_t len = img ? *lenp : 0;
	char path[512];
	int ret;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ret = !img || len > 4096 || wf_save(path, img, len);
	if (ret)
		fprintf(stderr, "mkcorpus: cannot write %s\n", path);
	free(img);
	return ret;
}

int main(int argc, char **argv)
{
	static const char *const toks[] = { "<s>", "</s>", "a" };
	static const uint32_t u32s[] = { 1, 2, 3 };
	static uint8_t d[512];
	static const struct wf_wkv kv[] = {
		WF_KV_STR("general.architecture", "llama"),
		WF_KV_U32("llama.block_count", 1),
		WF_KV_I32("x.i32", -1),
		WF_KV_F32("llama.rope.freq_base", 10000.0),
		WF_KV_BOOL("x.bool", 1),
		WF_KV_STRS("tokenizer.ggml.tokens", toks, 3),
		{ .key = "x.u32s", .type = WF_GGUF_ARRAY,
		  .arr_type = WF_GGUF_U32, .arr = u32s, .arr_n = 3 },
		{ .key = "x.f64", .type = WF_GGUF_F64, .f = 0.5 },
	};
	static const struct wf_wkv align[] = {
		WF_KV_U32("general.alignment", 64),
	};
	const struct wf_wtensor t[] = {
		{ .name = "tok.w", .ggml_type = 0, .dtype = "F32", .ndim = 2,
		  .ne = { 4, 2 }, .data = d, .size = 32 },
		{ .name = "blk.0.q4", .ggml_type = 2, .dtype = "U8", .ndim = 1,
		  .ne = { 32 }, .data = d, .size = 18 },
		{ .name = "blk.0.q8", .ggml_type = 8, .dtype = "I64", .ndim = 1,
		  .ne = { 32 }, .data = d, .size = 34 },
		{ .name = "blk.0.k", .ggml_type = 12, .dtype = "BF16", .ndim = 3,
		  .ne = { 256, 1, 1 }, .data = d, .size = 144 },
		{ .name = "blk.0.h", .ggml_type = 1, .dtype = "F16", .ndim = 4,
		  .ne = { 2, 1, 1, 2 }, .data = d, .size = 8 },
	};
	const char *dir = argc > 1 ? argv[1] : "tests/fuzz/corpus";
	char gd[256], sd[256];
	size_t len, i;
	int bad = 0;

	for (i = 0; i < sizeof(d); i++)
		d[i] = (uint8_t)(i * 37 + 5);
	snprintf(gd, sizeof(gd), "%s/gguf", dir);
	snprintf(sd, sizeof(sd), "%s/safetensors", dir);

	bad |= save(gd, "meta-tensors.gguf", wf_gguf_image(kv, 8, t, 5, &len), &len);
	bad |= save(gd, "align64.gguf", wf_gguf_image(align, 1, t, 2, &len), &len);
	bad |= save(gd, "meta-only.gguf", wf_gguf_image(kv, 3, NULL, 0, &len), &len);
	bad |= save(gd, "one-f32.gguf", wf_gguf_image(NULL, 0, t, 1, &len), &len);

	/* safetensors sizes follow the dtype: I64 scalar 8, BF16 x256 512. */
	{
		struct wf_wtensor s[5];

		memcpy(s, t, sizeof(s));
		s[1].size = 32;
		s[2].ndim = 0;
		s[2].size = 8;
		s[3].size = 512;
		bad |= save(sd, "mixed.safetensors", wf_st_image(s, 5, &len), &len);
		bad |= save(sd, "one-f32.safetensors", wf_st_image(s, 1, &len), &len);
		bad |= save(sd, "empty.safetensors", wf_st_image(NULL, 0, &len), &len);
	}
	/* Bare headers, for safetensors_fuzz's second reading of an input. */
	{
		static const char h[] = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],"
			"\"data_offsets\":[0,24]},\"b\":{\"dtype\":\"BF16\","
			"\"shape\":[],\"data_offsets\":[24,26]},\"c\":{\"dtype\":"
			"\"F4\",\"shape\":[1,1,1,4],\"data_offsets\":[26,28]},"
			"\"__metadata__\":{\"format\":\"pt\"}}";
		uint8_t *img = malloc(sizeof(h) - 1);

		len = sizeof(h) - 1;
		if (img)
			memcpy(img, h, len);
		bad |= save(sd, "header.json", img, &len);
	}
	return bad;
}
