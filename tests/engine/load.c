// SPDX-License-Identifier: MIT
/*
 * WEIGHTS_LOAD / WEIGHTS_FREE: safetensors files with Hugging Face names
 * (renamed to GGUF's on load) kept as they are or quantized to q8_0 / q4_0
 * on load; paths beneath model_dir only (-EACCES for "..", absolute paths
 * elsewhere, symlinks that lead out); -ENOENT for a missing file; -EINVAL
 * for malformed GGUF, safetensors and syshax_wdesc images, after each of
 * which the engine still serves (a NOP and a checked GEMM); a freed set is
 * gone (-ENOENT); only the loading context may free a set (-EPERM).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t.h"
#include "wfile.h"

#define HID	64
#define NFF	96

/* gate, up, down, norm: F32, BF16, F16 and the f32 norm. */
static struct tw g_hf[4];
static const char *const g_hf_names[4] = {
	"model.layers.0.mlp.gate_proj.weight",
	"model.layers.0.mlp.up_proj.weight",
	"model.layers.0.mlp.down_proj.weight",
	"model.layers.0.post_attention_layernorm.weight",
};
static struct tw g_good;
static uint64_t g_good_id;

static void make_weights(void)
{
	struct trng r;

	tr_seed(&r, 5);
	tw_rand(&g_hf[0], &r, "blk.0.ffn_gate.weight", SYSHAX_DT_F32, 2, HID,
		NFF, 1, 2.5 / sqrt(HID));
	tw_rand(&g_hf[1], &r, "blk.0.ffn_up.weight", SYSHAX_DT_BF16, 2, HID,
		NFF, 1, 2.5 / sqrt(HID));
	tw_rand(&g_hf[2], &r, "blk.0.ffn_down.weight", SYSHAX_DT_F16, 2, NFF,
		HID, 1, 4.0 / sqrt(NFF));
	tw_vec(&g_hf[3], &r, "blk.0.ffn_norm.weight", HID, 0.5, 1.5);
	tw_rand(&g_good, &r, "good", SYSHAX_DT_F32, 2, 32, 8, 1, 0.3);
}

static int load_clean(void)
{
	for (int i = 0; i < 4; i++)
		tw_free(&g_hf[i]);
	tw_free(&g_good);
	return 0;
}

/* A GEMM of set id against w, which it must hold. */
static void gemm_check(struct tc *c, uint64_t id, const struct tw *w,
		       const char *what)
{
	struct syshax_gemm_params p = {
		.wset = id, .m = 2, .x_type = SYSHAX_DT_F32,
		.y_type = SYSHAX_DT_F32,
	};
	struct syshax_job job;
	double xd[64], ref[16];
	struct trng r;
	float *x, *y;

	snprintf(p.tensor, sizeof(p.tensor), "%s", w->name);
	tr_seed(&r, 55);
	tc_reset(c);
	x = tc_alloc(c, 64 * 4);
	y = tc_alloc(c, 16 * 4);
	CU_ASSERT_FATAL(x && y);
	t_act_rand(&r, SYSHAX_DT_F32, 1.0, x, 64, xd);
	tj_init(&job, SYSHAX_OP_GEMM, &p, sizeof(p));
	tj_ref(&job, c, x, 64 * 4, SYSHAX_ACCESS_READ);
	tj_ref(&job, c, y, 16 * 4, SYSHAX_ACCESS_WRITE);
	CU_ASSERT_EQUAL(tc_run1(c, &job, NULL), 0);
	ref_gemm(w, 0, xd, 2, ref);
	t_check(what, SYSHAX_DT_F32, y, ref, 2, 8, 1e-5);
}

/* A GEMM on the good set, checked; and a NOP. */
static void still_serves(void)
{
	struct syshax_job job;

	syshax_job_init(&job, SYSHAX_OP_NOP, 0);
	CU_ASSERT_EQUAL(tc_run1(&g_c, &job, NULL), 0);
	gemm_check(&g_c, g_good_id, &g_good, "GEMM after a refused load");
}

static void t_load_setup(void)
{
	make_weights();
	CU_ASSERT_EQUAL_FATAL(tw_write_gguf("good.gguf", &g_good, 1), 0);
	CU_ASSERT_EQUAL_FATAL(tw_write_st("hf.safetensors", g_hf, g_hf_names,
					  4), 0);
	CU_ASSERT_EQUAL_FATAL(t_load_file(&g_c, "good.gguf",
					  SYSHAX_QUANT_NONE, &g_good_id), 0);
	CU_ASSERT(g_good_id >= 1);
	still_serves();
}

/* An FFN (NORM | RESIDUAL, m 3) and a GEMM on a set from hf.safetensors,
 * whose weights w are as expected after the load. */
static void hf_check(uint64_t id, const struct tw *w, bool quant)
{
	struct syshax_ffn_params fp = {
		.wset = id, .layer = 0, .m = 3, .x_type = SYSHAX_DT_F32,
		.y_type = SYSHAX_DT_F32,
		.flags = SYSHAX_FFN_NORM | SYSHAX_FFN_RESIDUAL,
	};
	struct syshax_gemm_params gp = {
		.wset = id, .m = 3, .x_type = SYSHAX_DT_BF16,
		.y_type = SYSHAX_DT_F32, .tensor = "blk.0.ffn_up.weight",
	};
	double xd[3 * HID], ref[3 * NFF];
	struct syshax_job job;
	struct trng r;
	void *x, *xb, *y, *yg;

	tr_seed(&r, 56);
	tc_reset(&g_c);
	x = tc_alloc(&g_c, 3 * HID * 4);
	xb = tc_alloc(&g_c, 3 * HID * 2);
	y = tc_alloc(&g_c, 3 * HID * 4);
	yg = tc_alloc(&g_c, 3 * NFF * 4);
	CU_ASSERT_FATAL(x && xb && y && yg);
	t_act_rand(&r, SYSHAX_DT_F32, 1.0, x, 3 * HID, xd);
	tj_init(&job, SYSHAX_OP_FFN, &fp, sizeof(fp));
	tj_ref(&job, &g_c, x, 3 * HID * 4, SYSHAX_ACCESS_READ);
	tj_ref(&job, &g_c, y, 3 * HID * 4, SYSHAX_ACCESS_WRITE);
	CU_ASSERT_EQUAL(tc_run1(&g_c, &job, NULL), 0);
	ref_ffn(w, fp.flags, 1e-6, xd, 3, ref);
	/* Tolerances as in ffn.c. */
	if (quant)
		t_check_q("FFN on renamed safetensors", SYSHAX_DT_F32, y, ref,
			  3, HID, 1e-4, 2e-2);
	else
		t_check("FFN on renamed safetensors", SYSHAX_DT_F32, y, ref, 3,
			HID, 1e-4);

	t_act_rand(&r, SYSHAX_DT_BF16, 1.0, xb, 3 * HID, xd);
	tj_init(&job, SYSHAX_OP_GEMM, &gp, sizeof(gp));
	tj_ref(&job, &g_c, xb, 3 * HID * 2, SYSHAX_ACCESS_READ);
	tj_ref(&job, &g_c, yg, 3 * NFF * 4, SYSHAX_ACCESS_WRITE);
	CU_ASSERT_EQUAL(tc_run1(&g_c, &job, NULL), 0);
	ref_gemm(&w[1], 0, xd, 3, ref);
	t_check("GEMM on a renamed tensor", SYSHAX_DT_F32, yg, ref, 3, NFF,
		1e-4);
	/* The Hugging Face name is gone. */
	snprintf(gp.tensor, sizeof(gp.tensor), "%s", g_hf_names[1]);
	tj_init(&job, SYSHAX_OP_GEMM, &gp, sizeof(gp));
	tj_ref(&job, &g_c, xb, 3 * HID * 2, SYSHAX_ACCESS_READ);
	tj_ref(&job, &g_c, yg, 3 * NFF * 4, SYSHAX_ACCESS_WRITE);
	CU_ASSERT_EQUAL(tc_run1(&g_c, &job, NULL), -ENOENT);
}

static void t_load_hf(void)
{
	uint64_t id = 0;

	CU_ASSERT_EQUAL(t_load_file(&g_c, "hf.safetensors", SYSHAX_QUANT_NONE,
				    &id), 0);
	CU_ASSERT(id > g_good_id);
	if (id) {
		hf_check(id, g_hf, false);
		CU_ASSERT_EQUAL(t_free_wset(&g_c, id), 0);
	}
}

static void load_quant(uint32_t quant)
{
	struct tw w[4];
	uint64_t id = 0;

	memcpy(w, g_hf, sizeof(w));
	for (int i = 0; i < 3; i++) {
		w[i].ref = malloc(tw_elems(&w[i]) * sizeof(double));
		CU_ASSERT_PTR_NOT_NULL_FATAL(w[i].ref);
		memcpy(w[i].ref, g_hf[i].ref, tw_elems(&w[i]) * sizeof(double));
		tw_expect_quant(&w[i], (int)quant);
	}
	CU_ASSERT_EQUAL(t_load_file(&g_c, "hf.safetensors", quant, &id), 0);
	if (id) {
		hf_check(id, w, true);
		CU_ASSERT_EQUAL(t_free_wset(&g_c, id), 0);
	}
	for (int i = 0; i < 3; i++)
		free(w[i].ref);
}

static void t_load_q8(void)
{
	load_quant(SYSHAX_QUANT_Q8_0);
}

static void t_load_q4(void)
{
	load_quant(SYSHAX_QUANT_Q4_0);
}

static void t_load_paths(void)
{
	char out_file[1100], p[1200], sib[1100];
	const char *base = strrchr(g_out_dir, '/') + 1;
	uint64_t id;

	/* A valid file outside model_dir, and a folder beside it whose name
	 * starts with model_dir's. */
	snprintf(out_file, sizeof(out_file), "%s/x.gguf", g_out_dir);
	CU_ASSERT_EQUAL_FATAL(tw_write_gguf("good2.gguf", &g_good, 1), 0);
	CU_ASSERT_EQUAL_FATAL(rename(t_path("good2.gguf"), out_file), 0);

	/* Inside: relative, absolute, through a symlink that stays in. */
	CU_ASSERT_EQUAL(t_load_file(&g_c, t_path("good.gguf"),
				    SYSHAX_QUANT_NONE, &id), 0);
	if (id)
		CU_ASSERT_EQUAL(t_free_wset(&g_c, id), 0);
	CU_ASSERT_EQUAL(symlink("good.gguf", t_path("in.gguf")), 0);
	CU_ASSERT_EQUAL(t_load_file(&g_c, "in.gguf", SYSHAX_QUANT_NONE, &id),
			0);
	if (id)
		CU_ASSERT_EQUAL(t_free_wset(&g_c, id), 0);

	/* Outside. */
	snprintf(p, sizeof(p), "../%s/x.gguf", base);
	CU_ASSERT_EQUAL(t_load_file(&g_c, p, SYSHAX_QUANT_NONE, NULL),
			-EACCES);
	CU_ASSERT_EQUAL(t_load_file(&g_c, "../x", SYSHAX_QUANT_NONE, NULL),
			-EACCES);
	CU_ASSERT_EQUAL(mkdir(t_path("sub"), 0700), 0);
	CU_ASSERT_EQUAL(t_load_file(&g_c, "sub/../../x", SYSHAX_QUANT_NONE,
				    NULL), -EACCES);
	CU_ASSERT_EQUAL(t_load_file(&g_c, "sub/../good.gguf",
				    SYSHAX_QUANT_NONE, &id), 0);
	if (id)
		CU_ASSERT_EQUAL(t_free_wset(&g_c, id), 0);
	CU_ASSERT_EQUAL(t_load_file(&g_c, out_file, SYSHAX_QUANT_NONE, NULL),
			-EACCES);
	CU_ASSERT_EQUAL(t_load_file(&g_c, "/etc/passwd", SYSHAX_QUANT_NONE,
				    NULL), -EACCES);
	snprintf(p, sizeof(p), "%s/../%s/x.gguf", g_model_dir, base);
	CU_ASSERT_EQUAL(t_load_file(&g_c, p, SYSHAX_QUANT_NONE, NULL),
			-EACCES);
	/* model_dir's name with more after it: another folder. */
	snprintf(sib, sizeof(sib), "%s-sib", g_model_dir);
	CU_ASSERT_EQUAL(mkdir(sib, 0700), 0);
	snprintf(p, sizeof(p), "%s/x.gguf", sib);
	CU_ASSERT_EQUAL(tw_write_gguf("good3.gguf", &g_good, 1), 0);
	CU_ASSERT_EQUAL(rename(t_path("good3.gguf"), p), 0);
	CU_ASSERT_EQUAL(t_load_file(&g_c, p, SYSHAX_QUANT_NONE, NULL),
			-EACCES);
	unlink(p);
	rmdir(sib);
	/* Symlinks that lead out: to the file, to its folder. */
	CU_ASSERT_EQUAL(symlink(out_file, t_path("out.gguf")), 0);
	CU_ASSERT_EQUAL(t_load_file(&g_c, "out.gguf", SYSHAX_QUANT_NONE,
				    NULL), -EACCES);
	snprintf(p, sizeof(p), "../%s/x.gguf", base);
	CU_ASSERT_EQUAL(symlink(p, t_path("rel-out.gguf")), 0);
	CU_ASSERT_EQUAL(t_load_file(&g_c, "rel-out.gguf", SYSHAX_QUANT_NONE,
				    NULL), -EACCES);
	CU_ASSERT_EQUAL(symlink(g_out_dir, t_path("outdir")), 0);
	CU_ASSERT_EQUAL(t_load_file(&g_c, "outdir/x.gguf", SYSHAX_QUANT_NONE,
				    NULL), -EACCES);

	/* Missing, empty, unterminated. */
	CU_ASSERT_EQUAL(t_load_file(&g_c, "missing.gguf", SYSHAX_QUANT_NONE,
				    NULL), -ENOENT);
	CU_ASSERT_EQUAL(t_load_file(&g_c, t_path("missing.gguf"),
				    SYSHAX_QUANT_NONE, NULL), -ENOENT);
	CU_ASSERT_EQUAL(t_load_file(&g_c, "", SYSHAX_QUANT_NONE, NULL),
			-EINVAL);
	{
		struct syshax_weights_load_params lp = {
			.source = SYSHAX_WLOAD_FILE,
		};
		struct syshax_job job;

		memset(lp.path, 'a', sizeof(lp.path));
		tj_init(&job, SYSHAX_OP_WEIGHTS_LOAD, &lp, sizeof(lp));
		CU_ASSERT_EQUAL(tc_run1(&g_c, &job, NULL), -EINVAL);
	}
	unlink(out_file);
	still_serves();
}

/* ---- malformed images ---- */

/* The offset field of tensor `name`'s info in a GGUF image. */
static uint8_t *gguf_info_offset(uint8_t *img, size_t len, const char *name,
				 unsigned int ndim)
{
	size_t n = strlen(name);

	for (size_t i = 8; i + n + 4 < len; i++) {
		uint64_t l;

		memcpy(&l, img + i - 8, 8);
		if (l == n && !memcmp(img + i, name, n))
			return img + i + n + 4 + 8 * ndim + 4;
	}
	return NULL;
}

static void expect_file_einval(const char *what, const void *img, size_t len)
{
	int ret;

	CU_ASSERT_EQUAL_FATAL(wf_save(t_path("bad.bin"), img, len), 0);
	ret = t_load_file(&g_c, "bad.bin", SYSHAX_QUANT_NONE, NULL);
	if (ret != -EINVAL)
		printf("\n  %s: %s, want -EINVAL\n", what, syshax_strerror(ret));
	CU_ASSERT_EQUAL(ret, -EINVAL);
	still_serves();
}

static void t_load_bad_gguf(void)
{
	static const struct wf_wkv kv[] = {
		WF_KV_STR("general.architecture", "llama"),
	};
	uint8_t data[2 * 144] = { 0 };
	struct wf_wtensor t[2] = {
		{ .name = "a", .ggml_type = 0, .ndim = 2, .ne = { 4, 3 },
		  .data = data, .size = 48 },
		{ .name = "b", .ggml_type = 0, .ndim = 1, .ne = { 8 },
		  .data = data, .size = 32 },
	};
	struct wf_wtensor one;
	size_t len;
	uint8_t *img, *o;
	uint64_t v;

	/* The valid image loads. */
	img = wf_gguf_image(kv, 1, t, 2, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(img);
	CU_ASSERT_EQUAL(wf_save(t_path("ok.gguf"), img, len), 0);
	{
		uint64_t id = 0;

		CU_ASSERT_EQUAL(t_load_file(&g_c, "ok.gguf", SYSHAX_QUANT_NONE,
					    &id), 0);
		if (id)
			CU_ASSERT_EQUAL(t_free_wset(&g_c, id), 0);
	}
	expect_file_einval("GGUF truncated in the data", img, len - 20);
	expect_file_einval("GGUF truncated in the header", img, 40);
	expect_file_einval("7 bytes", img, 7);
	expect_file_einval("empty", img, 0);
	img[3] = 'X';
	expect_file_einval("wrong magic", img, len);
	img[3] = 'F';
	img[4] = 99;
	expect_file_einval("GGUF version 99", img, len);
	img[4] = 3;
	o = gguf_info_offset(img, len, "b", 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	v = 1ULL << 40;
	memcpy(o, &v, 8);
	expect_file_einval("GGUF offset past the end", img, len);
	v = 0;
	memcpy(o, &v, 8);
	expect_file_einval("GGUF tensors overlapping", img, len);
	v = 96;		/* a at [0, 48), b was at [64, 96): the data's end */
	memcpy(o, &v, 8);
	expect_file_einval("GGUF tensor ending past the end", img, len);
	v = 48;
	memcpy(o, &v, 8);
	expect_file_einval("GGUF offset not aligned", img, len);
	free(img);

	one = t[0];
	one.ne[0] = 1ULL << 40;
	one.ne[1] = 1ULL << 40;
	img = wf_gguf_image(kv, 1, &one, 1, &len);
	expect_file_einval("GGUF absurd dims", img, len);
	free(img);
	one = t[0];
	one.ne[0] = 0;
	img = wf_gguf_image(kv, 1, &one, 1, &len);
	expect_file_einval("GGUF zero dim", img, len);
	free(img);
	one = t[0];
	one.ndim = 5;
	img = wf_gguf_image(kv, 1, &one, 1, &len);
	expect_file_einval("GGUF 5 dims", img, len);
	free(img);
	/* Q4_K: a type the kernels cannot run. */
	one = (struct wf_wtensor){ .name = "blk.0.ffn_up.weight",
				   .ggml_type = 12, .ndim = 2,
				   .ne = { 256, 2 }, .data = data,
				   .size = 2 * 144 };
	img = wf_gguf_image(kv, 1, &one, 1, &len);
	expect_file_einval("GGUF Q4_K tensor", img, len);
	free(img);
	/* Q8_0 rows of 48: not whole blocks. */
	one = (struct wf_wtensor){ .name = "q", .ggml_type = 8, .ndim = 2,
				   .ne = { 48, 2 }, .data = data, .size = 68 };
	img = wf_gguf_image(kv, 1, &one, 1, &len);
	expect_file_einval("GGUF Q8_0 rows not whole blocks", img, len);
	free(img);
	one = t[0];
	one.ggml_type = 99;
	img = wf_gguf_image(kv, 1, &one, 1, &len);
	expect_file_einval("GGUF unknown type", img, len);
	free(img);
	/* Two tensors of one name. */
	{
		struct wf_wtensor two[2] = { t[0], t[0] };

		img = wf_gguf_image(kv, 1, two, 2, &len);
		expect_file_einval("GGUF duplicate names", img, len);
		free(img);
	}
}

static void t_load_bad_st(void)
{
	static const char *const bad_json[] = {
		/* wrong dtype size: 2 x 3 F32 is 24 bytes */
		"{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],"
		"\"data_offsets\":[0,20]}}",
		/* data past the end */
		"{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],"
		"\"data_offsets\":[0,24]}}",
		/* overlapping tensors */
		"{\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],"
		"\"data_offsets\":[0,16]},\"b\":{\"dtype\":\"F32\","
		"\"shape\":[2,2],\"data_offsets\":[8,24]}}",
		/* a dtype the kernels cannot run */
		"{\"w\":{\"dtype\":\"I64\",\"shape\":[2],"
		"\"data_offsets\":[0,16]}}",
		/* absurd dims */
		"{\"w\":{\"dtype\":\"F32\",\"shape\":[1099511627776,"
		"1099511627776],\"data_offsets\":[0,16]}}",
		/* not JSON */
		"{\"w\":{\"dtype\":\"F32\",\"shape\":[2,",
		/* unknown dtype */
		"{\"w\":{\"dtype\":\"F33\",\"shape\":[4],"
		"\"data_offsets\":[0,16]}}",
	};
	static const size_t data_len[] = { 20, 16, 24, 16, 16, 16, 16 };
	uint8_t data[64] = { 0 }, *img;
	size_t len;
	uint64_t hl;

	for (size_t i = 0; i < T_ARRAY_SIZE(bad_json); i++) {
		char what[64];

		img = wf_st_image_json(bad_json[i], data, data_len[i], &len);
		CU_ASSERT_PTR_NOT_NULL_FATAL(img);
		snprintf(what, sizeof(what), "safetensors case %zu", i);
		expect_file_einval(what, img, len);
		if (i == 1) {
			/* Header length past the end. */
			hl = 1ULL << 40;
			memcpy(img, &hl, 8);
			expect_file_einval("safetensors header length", img,
					   len);
			expect_file_einval("safetensors truncated", img, 12);
		}
		free(img);
	}
	/* A folder is no weights file. */
	CU_ASSERT_EQUAL(mkdir(t_path("adir"), 0700), 0);
	CU_ASSERT_EQUAL(t_load_file(&g_c, "adir", SYSHAX_QUANT_NONE, NULL),
			-EINVAL);
	still_serves();
}

/* A one-tensor descriptor of 4 x 8 f32 in c's buffer, then changed by
 * the case; the load must fail with -EINVAL. */
static void wdesc_case(int which)
{
	struct syshax_weights_load_params p = {
		.source = SYSHAX_WLOAD_BUFFER, .quantize = SYSHAX_QUANT_NONE,
	};
	size_t hdr = sizeof(struct syshax_wdesc) +
		     2 * sizeof(struct syshax_wdesc_tensor), total = hdr + 256;
	struct syshax_wdesc *d;
	struct syshax_wdesc_tensor *t;
	struct syshax_job job;
	int ret;

	tc_reset(&g_c);
	d = tc_alloc(&g_c, total);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	d->magic = SYSHAX_WDESC_MAGIC;
	d->version = SYSHAX_WDESC_VERSION;
	d->nr_tensors = 1;
	t = &d->tensors[0];
	snprintf(t->name, sizeof(t->name), "w");
	t->type = SYSHAX_DT_F32;
	t->ndim = 2;
	t->ne[0] = 8;
	t->ne[1] = 4;
	t->ne[2] = t->ne[3] = 1;
	t->offset = hdr;
	t->size = 128;
	d->tensors[1] = *t;
	snprintf(d->tensors[1].name, sizeof(t->name), "v");
	d->tensors[1].offset = hdr + 128;
	switch (which) {
	case 0:
		break;		/* valid */
	case 1:
		d->magic ^= 1;
		break;
	case 2:
		d->version = 2;
		break;
	case 3:
		t->size = 124;	/* wrong dtype size */
		break;
	case 4:
		t->offset = total - 64;	/* past the end */
		break;
	case 5:
		d->nr_tensors = 2;
		d->tensors[1].offset = hdr + 64;	/* overlapping */
		break;
	case 6:
		t->ndim = 5;
		break;
	case 7:
		t->type = 7;
		break;
	case 8:
		d->nr_tensors = 1u << 30;
		break;
	case 9:
		memset(t->name, 'n', sizeof(t->name));
		break;
	case 10:
		t->ne[2] = 2;	/* past ndim */
		break;
	case 11:
		t->offset = 16;	/* inside the table */
		break;
	case 12:
		t->type = SYSHAX_DT_Q8_0;
		t->ne[0] = 48;	/* not whole blocks */
		t->ne[1] = 1;
		t->size = 51;
		break;
	case 13:
		d->nr_tensors = 2;	/* two of one name */
		snprintf(d->tensors[1].name, sizeof(t->name), "w");
		break;
	case 14:
		d->flags = 1;
		break;
	case 15:
		t->ne[0] = 1ULL << 62;	/* absurd */
		t->ne[1] = 1ULL << 62;
		break;
	}
	tj_init(&job, SYSHAX_OP_WEIGHTS_LOAD, &p, sizeof(p));
	tj_ref(&job, &g_c, d, total, SYSHAX_ACCESS_READ);
	{
		uint64_t id = 0;

		ret = tc_run1(&g_c, &job, &id);
		if (which == 0) {
			CU_ASSERT_EQUAL(ret, 0);
			CU_ASSERT_EQUAL(t_free_wset(&g_c, id), 0);
			return;
		}
	}
	if (ret != -EINVAL)
		printf("\n  syshax_wdesc case %d: %s, want -EINVAL\n", which,
		       syshax_strerror(ret));
	CU_ASSERT_EQUAL(ret, -EINVAL);
	still_serves();
}

static void t_load_bad_wdesc(void)
{
	for (int i = 0; i <= 15; i++)
		wdesc_case(i);
}

static void t_load_no_leak(void)
{
	struct syshax_engine_stats st;

	/* Only the good set is left of this suite's loads. */
	CU_ASSERT_EQUAL_FATAL(t_engine_stats(&g_c, &st), 0);
	CU_ASSERT_EQUAL(st.nr_wsets, 1);
	CU_ASSERT_EQUAL(st.wsets[0].id, g_good_id);
}

static void t_load_free(void)
{
	struct syshax_gemm_params p = {
		.wset = 0, .m = 1, .x_type = SYSHAX_DT_F32,
		.y_type = SYSHAX_DT_F32, .tensor = "good",
	};
	struct syshax_job job;
	struct tc c2;
	uint64_t id = 0, id2 = 0;
	void *x, *y;

	CU_ASSERT_EQUAL(t_load_file(&g_c, "good.gguf", SYSHAX_QUANT_NONE,
				    &id), 0);
	CU_ASSERT_FATAL(id > g_good_id);
	/* Another context may use it, not free it. */
	CU_ASSERT_EQUAL_FATAL(tc_open(&c2, 1u << 20), 0);
	x = tc_alloc(&c2, 32 * 4);
	y = tc_alloc(&c2, 8 * 4);
	t_sentinel(y, 8 * 4);
	p.wset = id;
	tj_init(&job, SYSHAX_OP_GEMM, &p, sizeof(p));
	tj_ref(&job, &c2, x, 32 * 4, SYSHAX_ACCESS_READ);
	tj_ref(&job, &c2, y, 8 * 4, SYSHAX_ACCESS_WRITE);
	CU_ASSERT_EQUAL(tc_run1(&c2, &job, NULL), 0);
	CU_ASSERT_EQUAL(t_free_wset(&c2, id), -EPERM);
	CU_ASSERT_EQUAL(tc_run1(&c2, &job, NULL), 0);
	/* Nor the other way round. */
	CU_ASSERT_EQUAL(t_load_file(&c2, "good.gguf", SYSHAX_QUANT_NONE, &id2),
			0);
	CU_ASSERT(id2 > id);
	CU_ASSERT_EQUAL(t_free_wset(&g_c, id2), -EPERM);
	CU_ASSERT_EQUAL(t_free_wset(&c2, id2), 0);
	/* Freed: gone. */
	CU_ASSERT_EQUAL(t_free_wset(&g_c, id), 0);
	t_sentinel(y, 8 * 4);
	CU_ASSERT_EQUAL(tc_run1(&c2, &job, NULL), -ENOENT);
	CU_ASSERT(t_sentinel_ok(y, 8 * 4));
	CU_ASSERT_EQUAL(t_free_wset(&g_c, id), -ENOENT);
	CU_ASSERT_EQUAL(t_free_wset(&c2, id2), -ENOENT);
	tc_close(&c2);
	/* Ids are not reused. */
	CU_ASSERT_EQUAL(t_load_file(&g_c, "good.gguf", SYSHAX_QUANT_NONE, &id),
			0);
	CU_ASSERT(id > id2);
	CU_ASSERT_EQUAL(t_free_wset(&g_c, id), 0);
	CU_ASSERT_EQUAL(t_free_wset(&g_c, g_good_id), 0);
	g_good_id = 0;
}

/* Loads until max_weight_sets (-ENOSPC); freeing one makes room again. */
static void t_load_nospc(void)
{
	enum { MAX = 1100 };
	struct syshax_engine_stats st;
	uint64_t *ids = calloc(MAX, sizeof(*ids)), id = 0;
	uint32_t before;
	int n = 0, ret = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(ids);
	CU_ASSERT_EQUAL_FATAL(t_engine_stats(&g_c, &st), 0);
	before = st.nr_wsets;
	while (n < MAX) {
		ret = t_load_file(&g_c, "good.gguf", SYSHAX_QUANT_NONE, &ids[n]);
		if (ret)
			break;
		n++;
	}
	CU_ASSERT_EQUAL(ret, -ENOSPC);
	CU_ASSERT(n > 0);
	CU_ASSERT_EQUAL(t_engine_stats(&g_c, &st), 0);
	CU_ASSERT_EQUAL(st.nr_wsets, before + (uint32_t)n);
	CU_ASSERT(n < 2 || t_free_wset(&g_c, ids[--n]) == 0);
	CU_ASSERT_EQUAL(t_load_file(&g_c, "good.gguf", SYSHAX_QUANT_NONE, &id),
			0);
	CU_ASSERT_EQUAL(t_load_file(&g_c, "good.gguf", SYSHAX_QUANT_NONE,
				    NULL), -ENOSPC);
	CU_ASSERT_EQUAL(t_free_wset(&g_c, id), 0);
	while (n > 0)
		CU_ASSERT_EQUAL(t_free_wset(&g_c, ids[--n]), 0);
	CU_ASSERT_EQUAL(t_engine_stats(&g_c, &st), 0);
	CU_ASSERT_EQUAL(st.nr_wsets, before);
	free(ids);
}

/* GEMMs on sets a and b of one file, submitted together: one batch,
 * each job's rows right. */
static void gemm_pair(uint64_t a, uint64_t b)
{
	struct syshax_gemm_params p = {
		.m = 2, .x_type = SYSHAX_DT_F32, .y_type = SYSHAX_DT_F32,
		.tensor = "good",
	};
	struct syshax_job jobs[2];
	struct syshax_completion cpl[2];
	uint64_t j0, b0, j1, b1;
	double xd[2][64], ref[16];
	struct trng r;
	float *x[2], *y[2];

	tr_seed(&r, 59);
	tc_reset(&g_c);
	for (int i = 0; i < 2; i++) {
		x[i] = tc_alloc(&g_c, 64 * 4);
		y[i] = tc_alloc(&g_c, 16 * 4);
		CU_ASSERT_FATAL(x[i] && y[i]);
		t_act_rand(&r, SYSHAX_DT_F32, 1.0, x[i], 64, xd[i]);
		p.wset = i ? b : a;
		tj_init(&jobs[i], SYSHAX_OP_GEMM, &p, sizeof(p));
		tj_ref(&jobs[i], &g_c, x[i], 64 * 4, SYSHAX_ACCESS_READ);
		tj_ref(&jobs[i], &g_c, y[i], 16 * 4, SYSHAX_ACCESS_WRITE);
	}
	t_op_stats(&g_c, SYSHAX_OP_GEMM, &j0, &b0);
	CU_ASSERT_EQUAL_FATAL(tc_run(&g_c, jobs, 2, cpl), 0);
	t_op_stats(&g_c, SYSHAX_OP_GEMM, &j1, &b1);
	CU_ASSERT_EQUAL(j1 - j0, 2);
	CU_ASSERT_EQUAL(b1 - b0, 1);
	for (int i = 0; i < 2; i++) {
		CU_ASSERT_EQUAL(cpl[i].status, 0);
		ref_gemm(&g_good, 0, xd[i], 2, ref);
		t_check("GEMMs on two sets of one file", SYSHAX_DT_F32, y[i],
			ref, 2, 8, 1e-5);
	}
}

/*
 * A file loaded again, converted the same way, shares the first set's
 * tensors: its bytes are listed once, jobs on both batch together, and
 * it outlives the first set. A file changed since (its mtime) or
 * converted otherwise is built anew.
 */
static void t_load_shared(void)
{
	struct timespec other[2] = { { .tv_sec = 1000000000 },
				     { .tv_sec = 1000000000 } };
	uint64_t a = 0, b = 0, n = 0, q = 0, bytes;
	struct tw w2;
	struct trng r;
	struct tc c2;

	CU_ASSERT_EQUAL_FATAL(tw_write_gguf("share.gguf", &g_good, 1), 0);
	CU_ASSERT_EQUAL_FATAL(t_load_file(&g_c, "share.gguf",
					  SYSHAX_QUANT_NONE, &a), 0);
	bytes = t_wset_bytes(&g_c, a);
	CU_ASSERT(bytes > 0 && bytes != UINT64_MAX);
	CU_ASSERT_EQUAL_FATAL(tc_open(&c2, 1u << 20), 0);
	CU_ASSERT_EQUAL_FATAL(t_load_file(&c2, "share.gguf",
					  SYSHAX_QUANT_NONE, &b), 0);
	CU_ASSERT(b > a);
	CU_ASSERT_EQUAL(t_wset_bytes(&g_c, b), 0);
	CU_ASSERT_EQUAL(t_wset_bytes(&g_c, a), bytes);
	gemm_check(&c2, b, &g_good, "GEMM on a shared set");
	gemm_pair(a, b);
	/* The first set freed: the second still has the tensors, and now
	 * lists their bytes. */
	CU_ASSERT_EQUAL(t_free_wset(&g_c, a), 0);
	CU_ASSERT_EQUAL(t_wset_bytes(&g_c, a), UINT64_MAX);
	CU_ASSERT_EQUAL(t_wset_bytes(&g_c, b), bytes);
	gemm_check(&c2, b, &g_good, "GEMM on a shared set, its first freed");
	/* The file rewritten with other weights (same size and inode,
	 * another mtime): a new set of the new weights; b keeps the old. */
	tr_seed(&r, 58);
	tw_rand(&w2, &r, "good", SYSHAX_DT_F32, 2, 32, 8, 1, 0.3);
	CU_ASSERT_EQUAL_FATAL(tw_write_gguf("share.gguf", &w2, 1), 0);
	CU_ASSERT_EQUAL(utimensat(AT_FDCWD, t_path("share.gguf"), other, 0), 0);
	CU_ASSERT_EQUAL(t_load_file(&g_c, "share.gguf", SYSHAX_QUANT_NONE,
				    &n), 0);
	CU_ASSERT_EQUAL(t_wset_bytes(&g_c, n), bytes);
	gemm_check(&g_c, n, &w2, "GEMM on a rewritten file's set");
	gemm_check(&c2, b, &g_good, "GEMM on the set of the file before");
	/* Another conversion of one file is another set. */
	CU_ASSERT_EQUAL(t_load_file(&g_c, "hf.safetensors", SYSHAX_QUANT_NONE,
				    &a), 0);
	CU_ASSERT_EQUAL(t_load_file(&g_c, "hf.safetensors", SYSHAX_QUANT_Q8_0,
				    &q), 0);
	CU_ASSERT(t_wset_bytes(&g_c, a) > t_wset_bytes(&g_c, q));
	CU_ASSERT(t_wset_bytes(&g_c, q) > 0);
	CU_ASSERT_EQUAL(t_free_wset(&g_c, a), 0);
	CU_ASSERT_EQUAL(t_free_wset(&g_c, q), 0);
	CU_ASSERT_EQUAL(t_free_wset(&g_c, n), 0);
	CU_ASSERT_EQUAL(t_free_wset(&c2, b), 0);
	tc_close(&c2);
	tw_free(&w2);
	CU_ASSERT_EQUAL(unlink(t_path("share.gguf")), 0);
}

int t_add_load(void)
{
	CU_pSuite s = CU_add_suite("weights load/free", NULL, load_clean);

	if (!s || !CU_add_test(s, "a GGUF set, the engine serves",
			       t_load_setup) ||
	    !CU_add_test(s, "safetensors, Hugging Face names", t_load_hf) ||
	    !CU_add_test(s, "safetensors quantized to q8_0 on load",
			 t_load_q8) ||
	    !CU_add_test(s, "safetensors quantized to q4_0 on load",
			 t_load_q4) ||
	    !CU_add_test(s, "paths: model_dir only, missing files", t_load_paths) ||
	    !CU_add_test(s, "malformed GGUF", t_load_bad_gguf) ||
	    !CU_add_test(s, "malformed safetensors", t_load_bad_st) ||
	    !CU_add_test(s, "malformed syshax_wdesc", t_load_bad_wdesc) ||
	    !CU_add_test(s, "no set left behind by failed loads",
			 t_load_no_leak) ||
	    !CU_add_test(s, "free: owner only, then gone", t_load_free) ||
	    !CU_add_test(s, "max_weight_sets: -ENOSPC", t_load_nospc) ||
	    !CU_add_test(s, "the same file again shares its tensors",
			 t_load_shared))
		return -1;
	return 0;
}
