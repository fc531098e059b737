// SPDX-License-Identifier: MIT
/*
 * tools/lib/genmodel.c: every architecture's tiny model in F16, Q8_0 and
 * Q4_0, written and read back with the daemon's GGUF parser (metadata,
 * vocabulary, each tensor's name, type and shape, the file's size), seeds,
 * the values themselves, the error paths; and the streaming GGUF writer
 * (tools/lib/wfile.c) against its in-memory image. genmodel.c is included
 * to regenerate a tensor's values from its statics.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <CUnit/Basic.h>

#include "../t_cunit.h"

#include "genmodel.c"
#include "tfile.h"

static const char *const g_arch_names[] = {
	"llama", "qwen2", "qwen3", "qwen3moe",
};
static const enum shxk_type g_types[] = { SHXK_F16, SHXK_Q8_0, SHXK_Q4_0 };

static char g_dir[64];
static char g_err[256];

static int init(void)
{
	strcpy(g_dir, "/tmp/genmodel_ut.XXXXXX");
	return !mkdtemp(g_dir) || shxk_init();
}

static int clean(void)
{
	return rmdir(g_dir);
}

static void path_of(char *path, size_t len, const char *name)
{
	snprintf(path, len, "%s/%s", g_dir, name);
}

/* The whole file, malloc'ed. */
static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	uint8_t *p = NULL;
	long n;

	if (!fp)
		return NULL;
	if (!fseek(fp, 0, SEEK_END) && (n = ftell(fp)) > 0 &&
	    !fseek(fp, 0, SEEK_SET)) {
		p = malloc((size_t)n);
		if (p && fread(p, 1, (size_t)n, fp) != (size_t)n) {
			free(p);
			p = NULL;
		}
		*len = (size_t)n;
	}
	fclose(fp);
	return p;
}

/* Writes o to name, reads it back: the image (free it) and its parse. */
static uint8_t *gen_parse(const struct gm_opts *o, const char *name,
			  struct shxd_tfile *f, size_t *len)
{
	char path[128];
	uint8_t *img;
	int ret;

	path_of(path, sizeof(path), name);
	ret = gm_write(path, o, 0, g_err, sizeof(g_err));
	CU_ASSERT_EQUAL_FATAL(ret, 0);
	img = slurp(path, len);
	unlink(path);
	CU_ASSERT_PTR_NOT_NULL_FATAL(img);
	CU_ASSERT_EQUAL(*len, gm_size(o));
	ret = shxd_gguf_parse(img, *len, f, g_err, sizeof(g_err));
	if (ret)
		fprintf(stderr, "\n  %s: %s\n", name, g_err);
	CU_ASSERT_EQUAL_FATAL(ret, 0);
	return img;
}

static int64_t kv_int(const struct shxd_tfile *f, const char *arch,
		      const char *key)
{
	char k[96];
	int64_t v = -1;

	snprintf(k, sizeof(k), "%s%s%s", arch ? arch : "", arch ? "." : "",
		 key);
	CU_ASSERT_EQUAL(shxd_gguf_get_int(f, k, &v), 0);
	return v;
}

static double kv_float(const struct shxd_tfile *f, const char *arch,
		       const char *key)
{
	char k[96];
	double v = -1;

	snprintf(k, sizeof(k), "%s.%s", arch, key);
	CU_ASSERT_EQUAL(shxd_gguf_get_float(f, k, &v), 0);
	return v;
}

static int kv_str_is(const struct shxd_tfile *f, const char *key,
		     const char *want)
{
	const char *s;
	size_t n;

	return !shxd_gguf_get_str(f, key, &s, &n) && n == strlen(want) &&
	       !memcmp(s, want, n);
}

/* The array entry key, of n elements of type t. */
static const uint8_t *kv_arr(const struct shxd_tfile *f, const char *key,
			     enum shxd_gguf_vtype t, uint64_t n)
{
	unsigned int i;

	for (i = 0; i < f->nr_kv; i++) {
		const struct shxd_gguf_kv *kv = &f->kv[i];

		if (kv->key_len != strlen(key) || memcmp(kv->key, key, kv->key_len))
			continue;
		CU_ASSERT_EQUAL(kv->type, SHXD_GGUF_ARRAY);
		CU_ASSERT_EQUAL(kv->arr_type, t);
		CU_ASSERT_EQUAL(kv->arr_len, n);
		return kv->val;
	}
	CU_FAIL("array entry missing");
	return NULL;
}

/* The vocabulary: the first tokens, their types and scores. */
static void check_vocab(const struct shxd_tfile *f, unsigned int n_vocab)
{
	static const char *const want[] = { "<unk>", "<s>", "</s>", "<0x00>" };
	static const int32_t types[] = { 2, 3, 3, 6 };
	const uint8_t *p;
	uint64_t len;
	int32_t t;
	float s;
	int i;

	CU_ASSERT(kv_str_is(f, "tokenizer.ggml.model", "llama"));
	CU_ASSERT_EQUAL(kv_int(f, NULL, "tokenizer.ggml.bos_token_id"), 1);
	CU_ASSERT_EQUAL(kv_int(f, NULL, "tokenizer.ggml.eos_token_id"), 2);
	CU_ASSERT_EQUAL(kv_int(f, NULL, "tokenizer.ggml.unknown_token_id"), 0);
	p = kv_arr(f, "tokenizer.ggml.tokens", SHXD_GGUF_STRING, n_vocab);
	for (i = 0; p && i < 4; i++) {
		memcpy(&len, p, 8);
		CU_ASSERT(len == strlen(want[i]) && !memcmp(p + 8, want[i], len));
		p += 8 + len;
	}
	p = kv_arr(f, "tokenizer.ggml.token_type", SHXD_GGUF_I32, n_vocab);
	for (i = 0; p && i < 4; i++) {
		memcpy(&t, p + 4 * i, 4);
		CU_ASSERT_EQUAL(t, types[i]);
	}
	if (p) {
		memcpy(&t, p + 4 * 259, 4);
		CU_ASSERT_EQUAL(t, 1);
	}
	p = kv_arr(f, "tokenizer.ggml.scores", SHXD_GGUF_F32, n_vocab);
	if (p) {
		memcpy(&s, p + 4 * 300, 4);
		CU_ASSERT(s < 0);
	}
}

static void check_meta(const struct shxd_tfile *f, const struct gm_hparams *hp)
{
	const char *a = hp->arch;

	CU_ASSERT(kv_str_is(f, "general.architecture", a));
	CU_ASSERT_EQUAL(kv_int(f, NULL, "general.alignment"), 32);
	CU_ASSERT_EQUAL(kv_int(f, a, "context_length"), 4096);
	CU_ASSERT_EQUAL(kv_int(f, a, "embedding_length"), 128);
	CU_ASSERT_EQUAL(kv_int(f, a, "block_count"), 2);
	CU_ASSERT_EQUAL(kv_int(f, a, "feed_forward_length"), hp->n_ff);
	CU_ASSERT_EQUAL(kv_int(f, a, "attention.head_count"), 4);
	CU_ASSERT_EQUAL(kv_int(f, a, "attention.head_count_kv"), 2);
	CU_ASSERT_EQUAL(kv_int(f, a, "rope.dimension_count"), 32);
	CU_ASSERT_EQUAL(kv_int(f, a, "attention.key_length"), 32);
	CU_ASSERT_EQUAL(kv_int(f, a, "attention.value_length"), 32);
	CU_ASSERT_EQUAL(kv_int(f, a, "vocab_size"), 512);
	CU_ASSERT_EQUAL(kv_float(f, a, "attention.layer_norm_rms_epsilon"),
			(double)hp->rms_eps);
	CU_ASSERT_EQUAL(kv_float(f, a, "rope.freq_base"),
			strcmp(a, "llama") ? 1e6 : 1e4);
	if (strcmp(a, "qwen3moe"))
		return;
	CU_ASSERT_EQUAL(hp->n_ff, 64);
	CU_ASSERT_EQUAL(kv_int(f, a, "expert_count"), 8);
	CU_ASSERT_EQUAL(kv_int(f, a, "expert_used_count"), 2);
	CU_ASSERT_EQUAL(kv_int(f, a, "expert_feed_forward_length"), 64);
}

/* The tensor named by fmt has type t and shape ne (ndim of them); 1. */
static unsigned int want(const struct shxd_tfile *f, enum shxd_ttype t,
			 uint32_t ndim, uint64_t ne0, uint64_t ne1,
			 uint64_t ne2, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));

static unsigned int want(const struct shxd_tfile *f, enum shxd_ttype t,
			 uint32_t ndim, uint64_t ne0, uint64_t ne1,
			 uint64_t ne2, const char *fmt, ...)
{
	const struct shxd_tdesc *d;
	char name[64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	d = shxd_tfile_find(f, name);
	if (!d || d->type != t || d->ndim != ndim || d->ne[0] != ne0 ||
	    d->ne[1] != ne1 || d->ne[2] != ne2)
		fprintf(stderr, "\n  tensor %s: missing or wrong\n", name);
	CU_ASSERT(d && d->type == t && d->ndim == ndim && d->ne[0] == ne0 &&
		  d->ne[1] == ne1 && d->ne[2] == ne2);
	return 1;
}

/* Every tensor llama.cpp expects of the arch, and nothing else. */
static void check_tensors(const struct shxd_tfile *f,
			  const struct gm_hparams *hp, enum shxd_ttype mt)
{
	const enum shxd_ttype F = SHXD_T_F32;
	uint64_t e = hp->n_embd, v = hp->n_vocab, hd = hp->head_dim;
	uint64_t q = hp->n_head * hd, kv = hp->n_head_kv * hd, ff = hp->n_ff;
	uint64_t x = hp->n_expert;
	int moe = !strcmp(hp->arch, "qwen3moe");
	int qk_norm = moe || !strcmp(hp->arch, "qwen3");
	unsigned int n = 0, l;

	n += want(f, mt, 2, e, v, 1, "token_embd.weight");
	n += want(f, F, 1, e, 1, 1, "output_norm.weight");
	if (!hp->tied)
		n += want(f, mt, 2, e, v, 1, "output.weight");
	for (l = 0; l < hp->n_layer; l++) {
		n += want(f, F, 1, e, 1, 1, "blk.%u.attn_norm.weight", l);
		n += want(f, mt, 2, e, q, 1, "blk.%u.attn_q.weight", l);
		n += want(f, mt, 2, e, kv, 1, "blk.%u.attn_k.weight", l);
		n += want(f, mt, 2, e, kv, 1, "blk.%u.attn_v.weight", l);
		n += want(f, mt, 2, q, e, 1, "blk.%u.attn_output.weight", l);
		n += want(f, F, 1, e, 1, 1, "blk.%u.ffn_norm.weight", l);
		if (!strcmp(hp->arch, "qwen2")) {
			n += want(f, F, 1, q, 1, 1, "blk.%u.attn_q.bias", l);
			n += want(f, F, 1, kv, 1, 1, "blk.%u.attn_k.bias", l);
			n += want(f, F, 1, kv, 1, 1, "blk.%u.attn_v.bias", l);
		}
		if (qk_norm) {
			n += want(f, F, 1, hd, 1, 1, "blk.%u.attn_q_norm.weight", l);
			n += want(f, F, 1, hd, 1, 1, "blk.%u.attn_k_norm.weight", l);
		}
		if (moe) {
			n += want(f, F, 2, e, x, 1, "blk.%u.ffn_gate_inp.weight", l);
			n += want(f, mt, 3, e, ff, x, "blk.%u.ffn_gate_exps.weight", l);
			n += want(f, mt, 3, e, ff, x, "blk.%u.ffn_up_exps.weight", l);
			n += want(f, mt, 3, ff, e, x, "blk.%u.ffn_down_exps.weight", l);
		} else {
			n += want(f, mt, 2, e, ff, 1, "blk.%u.ffn_gate.weight", l);
			n += want(f, mt, 2, e, ff, 1, "blk.%u.ffn_up.weight", l);
			n += want(f, mt, 2, ff, e, 1, "blk.%u.ffn_down.weight", l);
		}
	}
	CU_ASSERT_EQUAL(f->nr, n);
}

static void t_tiny_all(void)
{
	struct gm_hparams hp;
	struct shxd_tfile f;
	size_t a, t, len;
	uint8_t *img;

	for (a = 0; a < 4; a++) {
		for (t = 0; t < 3; t++) {
			struct gm_opts o = { .arch = g_arch_names[a],
					     .preset = "tiny",
					     .type = g_types[t], .seed = 7 };

			CU_ASSERT_EQUAL_FATAL(gm_preset(o.arch, "tiny", &hp), 0);
			img = gen_parse(&o, "m.gguf", &f, &len);
			check_meta(&f, &hp);
			check_vocab(&f, hp.n_vocab);
			check_tensors(&f, &hp, (enum shxd_ttype)o.type);
			shxd_tfile_free(&f);
			free(img);
		}
	}
}

/* tied drops output.weight; n_layer overrides the preset's. */
static void t_tied_layers(void)
{
	struct gm_opts o = { .arch = "qwen3", .preset = "tiny",
			     .type = SHXK_Q8_0, .seed = 1, .n_layer = 1,
			     .tied = 1 };
	struct gm_hparams hp;
	struct shxd_tfile f;
	uint8_t *img;
	size_t len;

	gm_preset("qwen3", "tiny", &hp);
	hp.n_layer = 1;
	hp.tied = 1;
	img = gen_parse(&o, "tied.gguf", &f, &len);
	CU_ASSERT_EQUAL(kv_int(&f, "qwen3", "block_count"), 1);
	check_tensors(&f, &hp, SHXD_T_Q8_0);
	CU_ASSERT_PTR_NULL(shxd_tfile_find(&f, "output.weight"));
	shxd_tfile_free(&f);
	free(img);
}

/* The same seed, the same bytes; another seed, other weights. */
static void t_seed(void)
{
	struct gm_opts o = { .arch = "llama", .preset = "tiny",
			     .type = SHXK_Q4_0, .seed = 42 };
	struct shxd_tfile f;
	uint8_t *a, *b, *c;
	size_t la, lb, lc;

	a = gen_parse(&o, "a.gguf", &f, &la);
	shxd_tfile_free(&f);
	b = gen_parse(&o, "b.gguf", &f, &lb);
	shxd_tfile_free(&f);
	o.seed = 43;
	c = gen_parse(&o, "c.gguf", &f, &lc);
	CU_ASSERT(la == lb && !memcmp(a, b, la));
	CU_ASSERT(la == lc && memcmp(a + f.data_offset, c + f.data_offset,
				     la - f.data_offset));
	shxd_tfile_free(&f);
	free(a);
	free(b);
	free(c);
}

/* Tensor i's values as the generator drew them. */
static float *regen(const struct shxd_tfile *f, unsigned int i,
		    uint64_t seed, float mid, float half)
{
	size_t n = f->t[i].ne[0] * f->t[i].ne[1] * f->t[i].ne[2];
	float *x = malloc(n * sizeof(*x));
	uint64_t s = rng_seed(seed, i);

	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	rng_fill(&s, x, n, mid, half);
	return x;
}

/* Q4_0 weights dequantize close to the values drawn; F32 norms are them
 * exactly; each stays in its range. */
static void t_values(void)
{
	struct gm_opts o = { .arch = "qwen3moe", .preset = "tiny",
			     .type = SHXK_Q4_0, .seed = 5 };
	const float half = sqrtf(3) / sqrtf(128);	/* std 1/sqrt(n_embd) */
	const struct shxd_tdesc *d;
	struct shxd_tfile f;
	double err = 0, ref = 0;
	float *x, *y, dmax = 0;
	size_t n, j, len;
	uint8_t *img;
	unsigned int i;

	img = gen_parse(&o, "v.gguf", &f, &len);
	d = shxd_tfile_find(&f, "blk.1.ffn_up_exps.weight");
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	i = (unsigned int)(d - f.t);
	n = d->ne[0] * d->ne[1] * d->ne[2];
	x = regen(&f, i, o.seed, 0, half);
	y = malloc(n * sizeof(*y));
	CU_ASSERT_PTR_NOT_NULL_FATAL(y);
	shxk_dequantize(SHXK_Q4_0, img + d->offset, y, d->ne[0], 0,
			n / d->ne[0]);
	for (j = 0; j < n; j++) {
		err += fabs((double)y[j] - x[j]);
		ref += fabs((double)x[j]);
		dmax = fmaxf(dmax, fabsf(y[j] - x[j]));
		CU_ASSERT(fabsf(x[j]) < half);
	}
	/* A step is a block's largest value over 8: at most about half / 8. */
	CU_ASSERT(dmax <= half / 7);
	CU_ASSERT(err / ref < 0.1);
	free(x);
	free(y);

	d = shxd_tfile_find(&f, "blk.0.attn_k_norm.weight");
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	x = regen(&f, (unsigned int)(d - f.t), o.seed, 1, 0.1f);
	CU_ASSERT(!memcmp(x, img + d->offset, d->size));
	for (j = 0; j < d->ne[0]; j++)
		CU_ASSERT(x[j] >= 0.9f && x[j] < 1.1f);
	free(x);
	shxd_tfile_free(&f);
	free(img);
}

/* The large presets' sizes, without writing them. */
static void t_sizes(void)
{
	struct gm_opts o = { .arch = "llama", .preset = "7b",
			     .type = SHXK_Q4_0 };
	double gb;

	gb = (double)gm_size(&o) / 1e9;
	CU_ASSERT(gb > 3.6 && gb < 3.9);
	o.preset = "1b";
	gb = (double)gm_size(&o) / 1e9;
	CU_ASSERT(gb > 0.55 && gb < 0.7);
	o.arch = "qwen3moe";
	o.preset = "7b";
	o.type = SHXK_Q8_0;
	gb = (double)gm_size(&o) / 1e9;
	CU_ASSERT(gb > 7.5 && gb < 9);
}

/* Real models' shapes: each in its arch only; sizes near the real
 * models' Q4_0 files (Meta-Llama-3-8B 4.7 GB, Qwen3-30B-A3B 17.4 GB). */
static void t_real_shapes(void)
{
	struct gm_opts o = { .arch = "llama", .preset = "llama3-8b",
			     .type = SHXK_Q4_0 };
	struct gm_hparams hp;
	double gb;

	CU_ASSERT_EQUAL(gm_preset("qwen2", "qwen2.5-7b", &hp), 0);
	CU_ASSERT(hp.n_vocab == 152064 && hp.n_embd == 3584 &&
		  hp.n_layer == 28 && hp.n_head == 28 && hp.n_head_kv == 4 &&
		  hp.head_dim == 128 && hp.n_ff == 18944);
	CU_ASSERT_EQUAL(gm_preset("llama", "qwen2.5-7b", &hp), -EINVAL);
	CU_ASSERT_EQUAL(gm_preset("qwen3moe", "qwen3-30b-a3b", &hp), 0);
	CU_ASSERT(hp.n_expert == 128 && hp.n_expert_used == 8 &&
		  hp.n_vocab == 151936);
	CU_ASSERT_EQUAL(hp.tied, 0);
	CU_ASSERT_EQUAL(gm_preset("qwen2", "qwen2.5-0.5b", &hp), 0);
	CU_ASSERT(hp.n_vocab == 151936 && hp.n_embd == 896 &&
		  hp.n_head == 14 && hp.n_head_kv == 2 && hp.head_dim == 64 &&
		  hp.n_ff == 4864 && hp.tied);
	CU_ASSERT_EQUAL(gm_preset("llama", "llama3.2-1b", &hp), 0);
	CU_ASSERT(hp.n_vocab == 128256 && hp.n_layer == 16 && hp.tied);
	CU_ASSERT_STRING_EQUAL(gm_shape_arch("r1-qwen-32b"), "qwen2");
	CU_ASSERT_STRING_EQUAL(gm_shape_arch("llama3-8b"), "llama");
	CU_ASSERT_PTR_NULL(gm_shape_arch("7b"));
	gb = (double)gm_size(&o) / 1e9;
	CU_ASSERT(gb > 4.4 && gb < 4.7);
	o.arch = "qwen3moe";
	o.preset = "qwen3-30b-a3b";
	gb = (double)gm_size(&o) / 1e9;
	CU_ASSERT(gb > 16.5 && gb < 18);
	/* Tied, as Llama-3.2-1B's 0.77 GB Q4_0 file. */
	o.arch = "llama";
	o.preset = "llama3.2-1b";
	gb = (double)gm_size(&o) / 1e9;
	CU_ASSERT(gb > 0.65 && gb < 0.8);
}

static void expect_err(const struct gm_opts *o, const char *path, int want,
		       const char *msg)
{
	int ret;

	g_err[0] = '\0';
	ret = gm_write(path, o, 0, g_err, sizeof(g_err));
	CU_ASSERT_EQUAL(ret, want);
	CU_ASSERT_PTR_NOT_NULL(strstr(g_err, msg));
	if (ret != want || !strstr(g_err, msg))
		fprintf(stderr, "\n  want %d '%s', got %d '%s'\n", want, msg,
			ret, g_err);
}

static void t_errors(void)
{
	struct gm_opts o = { .arch = "gpt2", .preset = "tiny",
			     .type = SHXK_Q4_0 };
	char path[128];

	path_of(path, sizeof(path), "e.gguf");
	expect_err(&o, path, -EINVAL, "unknown architecture 'gpt2'");
	CU_ASSERT_EQUAL(gm_size(&o), 0);
	o.arch = "llama";
	o.preset = "3b";
	expect_err(&o, path, -EINVAL, "unknown preset '3b'");
	o.preset = "tiny";
	o.type = (enum shxk_type)99;
	expect_err(&o, path, -EINVAL, "unknown weight type 99");
	CU_ASSERT_EQUAL(access(path, F_OK), -1);
	o.type = SHXK_Q4_0;
	expect_err(&o, "/nonexistent/m.gguf", -ENOENT,
		   "/nonexistent/m.gguf: No such file or directory");
	expect_err(&o, g_dir, -EISDIR, "Is a directory");
	/* NULL err is fine. */
	CU_ASSERT_EQUAL(gm_write(g_dir, &o, 0, NULL, 0), -EISDIR);
}

/* Written in odd pieces, a file is the image byte for byte; more or
 * fewer bytes than declared are refused. */
static void t_stream(void)
{
	static const float f32s[] = { 1.5f, -2 };
	static const int32_t i32s[] = { 7, -7, 0 };
	static const uint8_t data[100];
	const struct wf_wkv kv[] = {
		WF_KV_STR("general.architecture", "llama"),
		WF_KV_U32("general.alignment", 64),
		WF_KV_ARR("x.f32s", WF_GGUF_F32, f32s, 2),
		WF_KV_ARR("x.i32s", WF_GGUF_I32, i32s, 3),
	};
	const struct wf_wtensor t[] = {
		{ .name = "a", .ndim = 1, .ne = { 5 }, .data = data, .size = 5 },
		{ .name = "b", .ndim = 1, .ne = { 1 }, .size = 0 },
		{ .name = "c", .ndim = 2, .ne = { 10, 4 }, .data = data + 5,
		  .size = 40 },
	};
	struct wf_gguf w;
	char path[128];
	uint8_t *img, *file;
	size_t len, flen;

	path_of(path, sizeof(path), "s.gguf");
	img = wf_gguf_image(kv, 4, t, 3, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(img);
	CU_ASSERT_EQUAL(len, wf_gguf_size(kv, 4, t, 3));
	CU_ASSERT_EQUAL(wf_gguf_begin(&w, path, kv, 4, t, 3), 0);
	CU_ASSERT_EQUAL(wf_gguf_put(&w, data, 1), 0);
	CU_ASSERT_EQUAL(wf_gguf_put(&w, data + 1, 7), 0);
	CU_ASSERT_EQUAL(wf_gguf_put(&w, data + 8, 37), 0);
	CU_ASSERT_EQUAL(wf_gguf_end(&w), 0);
	file = slurp(path, &flen);
	CU_ASSERT(file && flen == len && !memcmp(file, img, len));
	free(file);
	free(img);

	CU_ASSERT_EQUAL(wf_gguf_begin(&w, path, kv, 4, t, 3), 0);
	CU_ASSERT_EQUAL(wf_gguf_put(&w, data, 46), -EINVAL);
	CU_ASSERT_EQUAL(wf_gguf_end(&w), -EINVAL);
	CU_ASSERT_EQUAL(wf_gguf_begin(&w, path, kv, 4, t, 3), 0);
	CU_ASSERT_EQUAL(wf_gguf_put(&w, NULL, 44), 0);
	CU_ASSERT_EQUAL(wf_gguf_end(&w), -EINVAL);
	unlink(path);
	CU_ASSERT_EQUAL(wf_gguf_begin(&w, g_dir, kv, 4, t, 3), -EISDIR);
	CU_ASSERT_EQUAL(wf_gguf_end(&w), -EISDIR);
}

int main(void)
{
	static const struct t_test tests[] = {
		{ "tiny models: every arch, F16/Q8_0/Q4_0", t_tiny_all },
		{ "tied output, layer count", t_tied_layers },
		{ "seeds", t_seed },
		{ "values: Q4_0 weights, F32 norms", t_values },
		{ "1b and 7b sizes", t_sizes },
		{ "real models' shapes", t_real_shapes },
		{ "errors", t_errors },
		{ "streaming GGUF writer", t_stream },
	};

	return T_RUN_SUITE("genmodel", init, clean, tests);
}
