// SPDX-License-Identifier: MIT
/* Random-weight GGUF models (genmodel.h). */
#include "genmodel.h"
#include "wfile.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GM_NAME_MAX	48	/* tensor names */
#define GM_CHUNK	(1u << 20)	/* values generated per write */
#define GM_TOK_MAX	16	/* a vocabulary entry's bytes, with its NUL */

/* Logits' standard deviation: a spread of a few units. */
#define GM_LOGIT_STD	3.0f
/* Matrices that write into the residual stream (attn_output, ffn_down):
 * smaller, so the stream grows slowly with the layers. */
#define GM_OUT_GAIN	0.5f

/* ---- architectures and presets ---- */

enum {
	A_LLAMA = 1, A_QWEN2 = 2, A_QWEN3 = 4, A_MOE = 8,
	A_ALL = A_LLAMA | A_QWEN2 | A_QWEN3 | A_MOE,
	A_DENSE = A_LLAMA | A_QWEN2 | A_QWEN3,
};

struct gm_shape {
	const char *name;
	unsigned int n_vocab, n_embd, n_layer, n_head, n_head_kv, head_dim;
	unsigned int n_ff, n_expert, n_expert_used;
	float rope_base;	/* llama's; the qwen archs use 1e6 */
	int tied;		/* no output.weight, as the real model */
};

static const struct gm_shape g_dense[] = {
	{ "tiny", 512, 128, 2, 4, 2, 32, 256, 0, 0, 10000, 0 },
	{ "1b", 32000, 2048, 16, 32, 8, 64, 8192, 0, 0, 500000, 0 },
	{ "7b", 32000, 4096, 32, 32, 32, 128, 11008, 0, 0, 10000, 0 },
};

static const struct gm_shape g_moe[] = {
	{ "tiny", 512, 128, 2, 4, 2, 32, 64, 8, 2, 0, 0 },
	{ "1b", 32000, 2048, 16, 16, 4, 128, 768, 32, 4, 0, 0 },
	{ "7b", 32000, 2048, 24, 32, 4, 128, 768, 64, 8, 0, 0 },
};

static const struct gm_arch {
	const char *name;
	unsigned int flag;
	const struct gm_shape *shapes;
} g_archs[] = {
	{ "llama", A_LLAMA, g_dense },
	{ "qwen2", A_QWEN2, g_dense },
	{ "qwen3", A_QWEN3, g_dense },
	{ "qwen3moe", A_MOE, g_moe },
};

/*
 * Real models' shapes, whole (a benchmark cuts the layers with
 * gm_opts.n_layer), each only in its own architecture: vocabulary, widths,
 * heads and head size as the models' config.json give them.
 */
static const struct {
	const char *arch;
	struct gm_shape s;
} g_real[] = {
	{ "llama", { "llama3-8b", 128256, 4096, 32, 32, 8, 128, 14336, 0, 0,
		     500000, 0 } },
	{ "llama", { "llama3.2-1b", 128256, 2048, 16, 32, 8, 64, 8192, 0, 0,
		     500000, 1 } },
	{ "qwen2", { "qwen2.5-7b", 152064, 3584, 28, 28, 4, 128, 18944, 0, 0,
		     0, 0 } },
	{ "qwen2", { "qwen2.5-0.5b", 151936, 896, 24, 14, 2, 64, 4864, 0, 0,
		     0, 1 } },
	{ "qwen2", { "r1-qwen-32b", 152064, 5120, 64, 40, 8, 128, 27648, 0, 0,
		     0, 0 } },
	{ "qwen3moe", { "qwen3-30b-a3b", 151936, 2048, 48, 32, 4, 128, 768,
			128, 8, 0, 0 } },
};

#define NR_SHAPES	(sizeof(g_dense) / sizeof(g_dense[0]))
#define NR_ARCHS	(sizeof(g_archs) / sizeof(g_archs[0]))

static const struct gm_arch *find_arch(const char *name)
{
	size_t i;

	for (i = 0; name && i < NR_ARCHS; i++)
		if (!strcmp(g_archs[i].name, name))
			return &g_archs[i];
	return NULL;
}

const char *gm_shape_arch(const char *preset)
{
	for (size_t i = 0; preset && i < sizeof(g_real) / sizeof(g_real[0]); i++)
		if (!strcmp(g_real[i].s.name, preset))
			return g_real[i].arch;
	return NULL;
}

/* The preset's shape in a: its own table's, or a real model's of a. */
static const struct gm_shape *find_shape(const struct gm_arch *a,
					 const char *preset)
{
	size_t i;

	for (i = 0; a && preset && i < NR_SHAPES; i++)
		if (!strcmp(a->shapes[i].name, preset))
			return &a->shapes[i];
	for (i = 0; a && preset && i < sizeof(g_real) / sizeof(g_real[0]); i++)
		if (!strcmp(g_real[i].s.name, preset) &&
		    !strcmp(g_real[i].arch, a->name))
			return &g_real[i].s;
	return NULL;
}

int gm_preset(const char *arch, const char *preset, struct gm_hparams *hp)
{
	const struct gm_arch *a = find_arch(arch);
	const struct gm_shape *s = find_shape(a, preset);

	if (!s)
		return -EINVAL;
	*hp = (struct gm_hparams){
		.arch = a->name, .n_layer = s->n_layer,
		.n_embd = s->n_embd, .n_head = s->n_head,
		.n_head_kv = s->n_head_kv, .head_dim = s->head_dim,
		.n_ff = s->n_ff, .n_vocab = s->n_vocab,
		.n_expert = s->n_expert, .n_expert_used = s->n_expert_used,
		.n_ctx_train = 4096,
		.rope_base = a->flag == A_LLAMA ? s->rope_base : 1e6f,
		.rms_eps = a->flag == A_LLAMA ? 1e-5f : 1e-6f,
		.tied = s->tied,
	};
	return 0;
}

/* ---- the tensors ---- */

/* Widths a shape names. */
enum { D_EMBD, D_Q, D_KV, D_HD, D_FF, D_EXP, D_VOCAB };

/* How a tensor's values are drawn (value_range). */
enum { K_NORM, K_BIAS, K_IN, K_OUT, K_ROUTER, K_EMBD, K_LOGIT };

struct gm_tdef {
	const char *name;
	unsigned int ndim, ne[3];	/* D_* */
	unsigned int kind;		/* K_* */
	unsigned int archs;		/* A_* */
};

static const struct gm_tdef g_top[] = {
	{ "token_embd.weight", 2, { D_EMBD, D_VOCAB }, K_EMBD, A_ALL },
	{ "output_norm.weight", 1, { D_EMBD }, K_NORM, A_ALL },
	{ "output.weight", 2, { D_EMBD, D_VOCAB }, K_LOGIT, A_ALL },
};

static const struct gm_tdef g_layer[] = {
	{ "attn_norm.weight", 1, { D_EMBD }, K_NORM, A_ALL },
	{ "attn_q.weight", 2, { D_EMBD, D_Q }, K_IN, A_ALL },
	{ "attn_k.weight", 2, { D_EMBD, D_KV }, K_IN, A_ALL },
	{ "attn_v.weight", 2, { D_EMBD, D_KV }, K_IN, A_ALL },
	{ "attn_q.bias", 1, { D_Q }, K_BIAS, A_QWEN2 },
	{ "attn_k.bias", 1, { D_KV }, K_BIAS, A_QWEN2 },
	{ "attn_v.bias", 1, { D_KV }, K_BIAS, A_QWEN2 },
	{ "attn_q_norm.weight", 1, { D_HD }, K_NORM, A_QWEN3 | A_MOE },
	{ "attn_k_norm.weight", 1, { D_HD }, K_NORM, A_QWEN3 | A_MOE },
	{ "attn_output.weight", 2, { D_Q, D_EMBD }, K_OUT, A_ALL },
	{ "ffn_norm.weight", 1, { D_EMBD }, K_NORM, A_ALL },
	{ "ffn_gate.weight", 2, { D_EMBD, D_FF }, K_IN, A_DENSE },
	{ "ffn_up.weight", 2, { D_EMBD, D_FF }, K_IN, A_DENSE },
	{ "ffn_down.weight", 2, { D_FF, D_EMBD }, K_OUT, A_DENSE },
	{ "ffn_gate_inp.weight", 2, { D_EMBD, D_EXP }, K_ROUTER, A_MOE },
	{ "ffn_gate_exps.weight", 3, { D_EMBD, D_FF, D_EXP }, K_IN, A_MOE },
	{ "ffn_up_exps.weight", 3, { D_EMBD, D_FF, D_EXP }, K_IN, A_MOE },
	{ "ffn_down_exps.weight", 3, { D_FF, D_EMBD, D_EXP }, K_OUT, A_MOE },
};

#define NR_TOP		(sizeof(g_top) / sizeof(g_top[0]))
#define NR_LAYER	(sizeof(g_layer) / sizeof(g_layer[0]))

/* One tensor to write: values uniform in [mid - half, mid + half]. */
struct gm_tensor {
	char name[GM_NAME_MAX];
	enum shxk_type type;
	float mid, half;
};

/* A model laid out: its metadata and tensors, before any value. */
struct gm_model {
	struct gm_hparams hp;
	unsigned int arch;		/* A_* */
	uint64_t seed;
	size_t nt;
	struct gm_tensor *gt;
	struct wf_wtensor *wt;		/* nt, names in gt */
	struct gm_meta meta;
	char *vocab;			/* n_vocab entries of GM_TOK_MAX */
	const char **tokens;
	float *scores;
	int32_t *types;
};

static unsigned int width(const struct gm_hparams *hp, unsigned int d)
{
	switch (d) {
	case D_EMBD:	return hp->n_embd;
	case D_Q:	return hp->n_head * hp->head_dim;
	case D_KV:	return hp->n_head_kv * hp->head_dim;
	case D_HD:	return hp->head_dim;
	case D_FF:	return hp->n_ff;
	case D_EXP:	return hp->n_expert;
	default:	return hp->n_vocab;
	}
}

/*
 * Scales that keep activations O(1): a matrix over k inputs of O(1) (a
 * normed vector) gives O(1) outputs with std 1/sqrt(k); the ones feeding
 * the residual stream are smaller (GM_OUT_GAIN); the logits get
 * GM_LOGIT_STD. Embeddings are O(1) unless they also make the logits
 * (tied). Uniform values: half-width sqrt(3) * std.
 */
static void value_range(const struct gm_hparams *hp, unsigned int kind,
			unsigned int k, struct gm_tensor *t)
{
	float std = 1.0f / sqrtf((float)k);

	t->mid = 0;
	if (kind == K_NORM) {
		t->mid = 1;
		std = 0.1f / sqrtf(3);
	} else if (kind == K_BIAS) {
		std = 0.02f;
	} else if (kind == K_OUT) {
		std *= GM_OUT_GAIN;
	} else if (kind == K_LOGIT || (kind == K_EMBD && hp->tied)) {
		std *= GM_LOGIT_STD;
	} else if (kind == K_EMBD) {
		std = 1;
	}
	t->half = sqrtf(3) * std;
}

/* The ggml type id of a matrix type; 1-D tensors and routers are F32. */
static int ggml_type(enum shxk_type t)
{
	switch (t) {
	case SHXK_F32:	return 0;
	case SHXK_F16:	return 1;
	case SHXK_Q4_0:	return 2;
	case SHXK_Q8_0:	return 8;
	case SHXK_BF16:	return 30;
	default:	return -1;
	}
}

static void add_tensor(struct gm_model *m, const char *prefix,
		       const struct gm_tdef *d, enum shxk_type mtype)
{
	struct gm_tensor *t = &m->gt[m->nt];
	struct wf_wtensor *w = &m->wt[m->nt];
	uint64_t rows = 1;
	unsigned int i;

	if (!(d->archs & m->arch) || (d->kind == K_LOGIT && m->hp.tied))
		return;
	snprintf(t->name, sizeof(t->name), "%s%s", prefix, d->name);
	t->type = d->ndim == 1 || d->kind == K_ROUTER ? SHXK_F32 : mtype;
	*w = (struct wf_wtensor){ .name = t->name, .ndim = d->ndim,
				  .ggml_type = (uint32_t)ggml_type(t->type) };
	for (i = 0; i < d->ndim; i++) {
		w->ne[i] = width(&m->hp, d->ne[i]);
		rows *= i ? w->ne[i] : 1;
	}
	/* Every width is a multiple of 32: whole blocks. */
	w->size = shxk_row_size(t->type, w->ne[0]) * rows;
	value_range(&m->hp, d->kind, (unsigned int)w->ne[0], t);
	m->nt++;
}

static int add_tensors(struct gm_model *m, enum shxk_type mtype)
{
	char prefix[GM_NAME_MAX];
	size_t n = NR_TOP + NR_LAYER * m->hp.n_layer, i;
	unsigned int l;

	m->gt = calloc(n, sizeof(*m->gt));
	m->wt = calloc(n, sizeof(*m->wt));
	if (!m->gt || !m->wt)
		return -ENOMEM;
	for (i = 0; i < NR_TOP; i++)
		add_tensor(m, "", &g_top[i], mtype);
	for (l = 0; l < m->hp.n_layer; l++) {
		snprintf(prefix, sizeof(prefix), "blk.%u.", l);
		for (i = 0; i < NR_LAYER; i++)
			add_tensor(m, prefix, &g_layer[i], mtype);
	}
	return 0;
}

/* ---- the metadata ---- */

struct wf_wkv *gm_meta_add(struct gm_meta *m, const char *arch,
			   const char *key, uint32_t type)
{
	char *name = m->keys[m->n];

	snprintf(name, GM_KEY_MAX, "%s%s%s", arch ? arch : "",
		 arch ? "." : "", key);
	m->kv[m->n] = (struct wf_wkv){ .key = name, .type = type };
	return &m->kv[m->n++];
}

void gm_meta_u32(struct gm_meta *m, const char *arch, const char *key,
		 uint32_t v)
{
	gm_meta_add(m, arch, key, WF_GGUF_U32)->i = v;
}

void gm_meta_arr(struct gm_meta *m, const char *key, uint32_t type,
		 const void *arr, size_t n)
{
	struct wf_wkv *kv = gm_meta_add(m, NULL, key, WF_GGUF_ARRAY);

	kv->arr_type = type;
	kv->arr = arr;
	kv->arr_n = n;
}

/* SPM: <unk>, <s>, </s>, the 256 byte tokens, then "▁t<id>" fillers. */
static int add_vocab(struct gm_model *m)
{
	static const char *const special[] = { "<unk>", "<s>", "</s>" };
	unsigned int n = m->hp.n_vocab, i;
	struct gm_meta *g = &m->meta;
	char *s;

	m->vocab = malloc((size_t)n * GM_TOK_MAX);
	m->tokens = malloc(n * sizeof(*m->tokens));
	m->scores = malloc(n * sizeof(*m->scores));
	m->types = malloc(n * sizeof(*m->types));
	if (!m->vocab || !m->tokens || !m->scores || !m->types)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		s = m->vocab + (size_t)i * GM_TOK_MAX;
		if (i < 3)
			strcpy(s, special[i]);
		else if (i < 259)
			snprintf(s, GM_TOK_MAX, "<0x%02X>", i - 3);
		else
			snprintf(s, GM_TOK_MAX, "\xe2\x96\x81t%u", i);
		m->tokens[i] = s;
		m->scores[i] = i < 259 ? 0 : -(float)(i - 258);
		m->types[i] = !i ? 2 : i < 3 ? 3 : i < 259 ? 6 : 1;
	}
	gm_meta_add(g, NULL, "tokenizer.ggml.model", WF_GGUF_STRING)->s =
		"llama";
	gm_meta_arr(g, "tokenizer.ggml.tokens", WF_GGUF_STRING, m->tokens, n);
	gm_meta_arr(g, "tokenizer.ggml.scores", WF_GGUF_F32, m->scores, n);
	gm_meta_arr(g, "tokenizer.ggml.token_type", WF_GGUF_I32, m->types, n);
	gm_meta_u32(g, NULL, "tokenizer.ggml.bos_token_id", 1);
	gm_meta_u32(g, NULL, "tokenizer.ggml.eos_token_id", 2);
	gm_meta_u32(g, NULL, "tokenizer.ggml.unknown_token_id", 0);
	return 0;
}

void gm_meta_hparams(struct gm_meta *m, const struct gm_hparams *hp,
		     const char *name)
{
	const char *a = hp->arch;

	snprintf(m->name, sizeof(m->name), "%s", name);
	gm_meta_add(m, NULL, "general.architecture", WF_GGUF_STRING)->s = a;
	gm_meta_add(m, NULL, "general.name", WF_GGUF_STRING)->s = m->name;
	gm_meta_u32(m, NULL, "general.alignment", 32);
	gm_meta_u32(m, a, "context_length", hp->n_ctx_train);
	gm_meta_u32(m, a, "embedding_length", hp->n_embd);
	gm_meta_u32(m, a, "block_count", hp->n_layer);
	gm_meta_u32(m, a, "feed_forward_length", hp->n_ff);
	gm_meta_u32(m, a, "attention.head_count", hp->n_head);
	gm_meta_u32(m, a, "attention.head_count_kv", hp->n_head_kv);
	gm_meta_add(m, a, "attention.layer_norm_rms_epsilon",
		    WF_GGUF_F32)->f = hp->rms_eps;
	gm_meta_add(m, a, "rope.freq_base", WF_GGUF_F32)->f = hp->rope_base;
	gm_meta_u32(m, a, "rope.dimension_count", hp->head_dim);
	gm_meta_u32(m, a, "attention.key_length", hp->head_dim);
	gm_meta_u32(m, a, "attention.value_length", hp->head_dim);
	gm_meta_u32(m, a, "vocab_size", hp->n_vocab);
	if (!hp->n_expert)
		return;
	gm_meta_u32(m, a, "expert_count", hp->n_expert);
	gm_meta_u32(m, a, "expert_used_count", hp->n_expert_used);
	gm_meta_u32(m, a, "expert_feed_forward_length", hp->n_ff);
}

static void model_free(struct gm_model *m)
{
	free(m->gt);
	free(m->wt);
	free(m->vocab);
	free(m->tokens);
	free(m->scores);
	free(m->types);
}

static int errf(char *err, size_t errlen, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int errf(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return ret;
}

/* Lays out the model o asks for; on failure m is freed. */
static int model_init(struct gm_model *m, const struct gm_opts *o,
		      char *err, size_t errlen)
{
	const struct gm_arch *a = find_arch(o->arch);
	char name[GM_KEY_MAX];
	int ret;

	*m = (struct gm_model){ .seed = o->seed };
	if (!a)
		return errf(err, errlen, -EINVAL,
			    "unknown architecture '%s' (llama, qwen2, qwen3, "
			    "qwen3moe)", o->arch ? o->arch : "");
	if (gm_preset(o->arch, o->preset, &m->hp))
		return errf(err, errlen, -EINVAL,
			    "unknown preset '%s' (tiny, 1b, 7b)",
			    o->preset ? o->preset : "");
	if (ggml_type(o->type) < 0)
		return errf(err, errlen, -EINVAL, "unknown weight type %d",
			    (int)o->type);
	if (o->n_layer)
		m->hp.n_layer = o->n_layer;
	m->hp.tied |= o->tied;
	m->arch = a->flag;
	snprintf(name, sizeof(name), "%s-%s", o->arch, o->preset);
	gm_meta_hparams(&m->meta, &m->hp, name);
	ret = add_vocab(m);
	if (!ret)
		ret = add_tensors(m, o->type);
	if (ret) {
		model_free(m);
		return errf(err, errlen, ret, "%s", strerror(-ret));
	}
	return 0;
}

uint64_t gm_size(const struct gm_opts *o)
{
	struct gm_model m;
	uint64_t len;

	if (model_init(&m, o, NULL, 0))
		return 0;
	len = wf_gguf_size(m.meta.kv, m.meta.n, m.wt, m.nt);
	model_free(&m);
	return len;
}

/* ---- the values ---- */

/* splitmix64: one state word, fast, and good enough for weights. */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Tensor i's own stream, so that each can be regenerated alone. */
static uint64_t rng_seed(uint64_t seed, size_t i)
{
	uint64_t s = seed ^ ((uint64_t)(i + 1) << 32);

	return rng_next(&s);
}

/* n values uniform in [mid - half, mid + half): 24 bits each, two per
 * draw (n is even: widths are multiples of 32, so chunks do not change
 * the stream). */
static void rng_fill(uint64_t *s, float *x, size_t n, float mid, float half)
{
	const float scale = 2 * half / (float)(1u << 24);
	uint64_t r;
	size_t i;

	for (i = 0; i + 1 < n; i += 2) {
		r = rng_next(s);
		x[i] = mid - half + (float)(r >> 40) * scale;
		x[i + 1] = mid - half + (float)(r & 0xffffff) * scale;
	}
}

/* Tensor i's values, chunk after chunk of whole rows, into the file. */
static int write_tensor(struct wf_gguf *w, const struct gm_model *m,
			size_t i, float *x, void *y)
{
	const struct gm_tensor *t = &m->gt[i];
	const struct wf_wtensor *wt = &m->wt[i];
	size_t k = wt->ne[0], rs = shxk_row_size(t->type, k);
	size_t rows = wt->size / rs, step = GM_CHUNK / k, r, n;
	uint64_t s = rng_seed(m->seed, i);

	for (r = 0; r < rows && !w->err; r += n) {
		n = rows - r < step ? rows - r : step;
		rng_fill(&s, x, n * k, t->mid, t->half);
		shxk_quantize(t->type, x, y, k, 0, n);
		wf_gguf_put(w, y, n * rs);
	}
	return w->err;
}

static void progress_line(const struct wf_gguf *w, size_t done, size_t nt,
			  uint64_t total)
{
	fprintf(stderr, "\rgen-model: %zu/%zu tensors, %.1f/%.1f GB", done, nt,
		(double)w->pos / 1e9, (double)total / 1e9);
	if (done == nt)
		fputc('\n', stderr);
}

static int write_model(const char *path, const struct gm_model *m,
		       int progress)
{
	uint64_t total = wf_gguf_size(m->meta.kv, m->meta.n, m->wt, m->nt);
	struct wf_gguf w;
	float *x = malloc(GM_CHUNK * sizeof(float));
	void *y = malloc(GM_CHUNK * sizeof(float));
	size_t i;
	int ret, opened;

	if (!x || !y) {
		ret = -ENOMEM;
		goto out;
	}
	ret = wf_gguf_begin(&w, path, m->meta.kv, m->meta.n, m->wt, m->nt);
	opened = w.fd >= 0;
	for (i = 0; !ret && i < m->nt; i++) {
		ret = write_tensor(&w, m, i, x, y);
		if (progress)
			progress_line(&w, i + 1, m->nt, total);
	}
	ret = wf_gguf_end(&w);
	/* Never a partial model; a file begin could not open is not ours. */
	if (ret && opened)
		unlink(path);
out:
	free(x);
	free(y);
	return ret;
}

int gm_write(const char *path, const struct gm_opts *o, int progress,
	     char *err, size_t errlen)
{
	struct gm_model m;
	int ret;

	shxk_init();
	ret = model_init(&m, o, err, errlen);
	if (ret)
		return ret;
	ret = write_model(path, &m, progress);
	model_free(&m);
	if (ret)
		return errf(err, errlen, ret, "%s: %s", path, strerror(-ret));
	return 0;
}
