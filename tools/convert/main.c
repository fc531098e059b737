// SPDX-License-Identifier: MIT
/*
 * syshax-convert: a model folder as tools/train/train.py writes it
 * (model.safetensors with Hugging Face names, config.json, tokenizer.json)
 * to one GGUF file that llama.cpp and syshaxd load: the architecture's
 * metadata (genmodel.h's gm_meta, the keys gm_write writes), a gpt2 BPE
 * vocabulary with its merges and chat template, and the matrices in F32,
 * F16, Q8_0 or Q4_0 through the kernels' own quantizers (1-D tensors and
 * the MoE router stay F32). Experts, one tensor each in safetensors, are
 * stacked into GGUF's ffn_*_exps. The same folder and type always give the
 * same bytes.
 */
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "genmodel.h"
#include "model/hfnames.h"
#include "model/tfile.h"
#include "shxk.h"
#include "wfile.h"

#define PROG		"syshax-convert"
#define MAX_EXPERTS	64
#define MAX_FILE	(256u << 20)

static const struct {
	const char *name;
	enum shxk_type type;
} types[] = {
	{ "f32", SHXK_F32 }, { "f16", SHXK_F16 },
	{ "q8_0", SHXK_Q8_0 }, { "q4_0", SHXK_Q4_0 },
};

/* A GGUF tensor: one safetensors tensor, or n_expert stacked. */
struct otensor {
	char name[SHXD_TNAME_MAX];
	const struct shxd_tdesc *src[MAX_EXPERTS];
	const struct shxd_tdesc *first;	/* the shape all src share */
	unsigned int nsrc;
	enum shxk_type type;
};

struct conv {
	struct gm_hparams hp;
	struct gm_meta meta;
	cJSON *cfg, *tok;
	const char **tokens, **merges;
	int32_t *ttype;
	size_t ntok, nmerge;
	uint8_t *img;			/* model.safetensors */
	size_t len;
	struct shxd_tfile tf;
	struct otensor *o;
	struct wf_wtensor *wt;
	size_t nt;
	char err[512];
};

static int fail(struct conv *c, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct conv *c, int ret, const char *fmt, ...)
{
	va_list ap;

	if (!c->err[0]) {
		va_start(ap, fmt);
		vsnprintf(c->err, sizeof(c->err), fmt, ap);
		va_end(ap);
	}
	return ret;
}

static int read_file(struct conv *c, const char *path, uint8_t **out,
		     size_t *len)
{
	FILE *f = fopen(path, "rb");
	long n = 0;
	int ret = 0;

	*out = NULL;
	if (!f)
		return fail(c, -errno, "%s: %s", path, strerror(errno));
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		ret = fail(c, -EIO, "%s: cannot seek", path);
	else if ((unsigned long)n > MAX_FILE)
		ret = fail(c, -EFBIG, "%s: larger than %u MiB", path,
			   MAX_FILE >> 20);
	else if (!(*out = malloc((size_t)n + 1)))
		ret = fail(c, -ENOMEM, "%s: out of memory", path);
	else if (fread(*out, 1, (size_t)n, f) != (size_t)n)
		ret = fail(c, -EIO, "%s: short read", path);
	fclose(f);
	if (ret) {
		free(*out);
		*out = NULL;
		return ret;
	}
	(*out)[n] = 0;
	*len = (size_t)n;
	return 0;
}

static int read_json(struct conv *c, const char *dir, const char *name,
		     cJSON **out)
{
	char path[4096];
	uint8_t *s;
	size_t len;
	int ret;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ret = read_file(c, path, &s, &len);
	if (ret)
		return ret;
	*out = cJSON_ParseWithLength((const char *)s, len);
	free(s);
	if (!cJSON_IsObject(*out))
		return fail(c, -EINVAL, "%s: not a JSON object", path);
	return 0;
}

/* config.json's key as a count in 1..2^24; 0 when absent and optional. */
static unsigned int cfg_uint(struct conv *c, const char *key, int optional)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(c->cfg, key);
	double d = cJSON_IsNumber(j) ? j->valuedouble : -1;

	if (!j && optional)
		return 0;
	if (d < 1 || d > 1 << 24 || d != (unsigned int)d)
		fail(c, -EINVAL, "config.json: \"%s\" %s", key,
		     j ? "is not a count in 1..2^24" : "missing");
	return d < 1 || d > 1 << 24 ? 0 : (unsigned int)d;
}

static float cfg_float(struct conv *c, const char *key)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(c->cfg, key);

	if (!cJSON_IsNumber(j) || !(j->valuedouble > 0))
		fail(c, -EINVAL, "config.json: \"%s\" %s", key,
		     j ? "is not a positive number" : "missing");
	return j ? (float)j->valuedouble : 0;
}

static int read_config(struct conv *c)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(c->cfg, "arch");
	struct gm_hparams *hp = &c->hp;

	if (!cJSON_IsString(a) || (strcmp(a->valuestring, "llama") &&
				   strcmp(a->valuestring, "qwen3moe")))
		return fail(c, -EINVAL, "config.json: \"arch\" is not "
			    "\"llama\" or \"qwen3moe\"");
	hp->arch = a->valuestring;
	hp->n_layer = cfg_uint(c, "n_layer", 0);
	hp->n_embd = cfg_uint(c, "n_embd", 0);
	hp->n_head = cfg_uint(c, "n_head", 0);
	hp->n_head_kv = cfg_uint(c, "n_head_kv", 0);
	hp->head_dim = cfg_uint(c, "head_dim", 0);
	hp->n_ff = cfg_uint(c, "n_ff", 0);
	hp->n_vocab = cfg_uint(c, "n_vocab", 0);
	hp->n_ctx_train = cfg_uint(c, "n_ctx_train", 0);
	hp->n_expert = cfg_uint(c, "n_expert", 1);
	hp->n_expert_used = cfg_uint(c, "n_expert_used", 1);
	hp->rope_base = cfg_float(c, "rope_base");
	hp->rms_eps = cfg_float(c, "rms_eps");
	if (!c->err[0] && (!strcmp(hp->arch, "qwen3moe") != !!hp->n_expert ||
			   hp->n_expert > MAX_EXPERTS ||
			   hp->n_expert_used > hp->n_expert))
		fail(c, -EINVAL, "config.json: experts %u of %u do not fit "
		     "arch %s (at most %u)", hp->n_expert_used, hp->n_expert,
		     hp->arch, MAX_EXPERTS);
	return c->err[0] ? -EINVAL : 0;
}

/* A JSON array of strings as a C array pointing into the JSON. */
static const char **strings(struct conv *c, const char *key, size_t *n)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(c->tok, key), *e;
	const char **s;
	size_t i = 0;

	*n = cJSON_IsArray(a) ? (size_t)cJSON_GetArraySize(a) : 0;
	if (!*n) {
		fail(c, -EINVAL, "tokenizer.json: \"%s\" is not a non-empty "
		     "array", key);
		return NULL;
	}
	s = calloc(*n, sizeof(*s));
	if (!s) {
		fail(c, -ENOMEM, "out of memory");
		return NULL;
	}
	cJSON_ArrayForEach(e, a) {
		if (!cJSON_IsString(e)) {
			fail(c, -EINVAL, "tokenizer.json: \"%s\"[%zu] is not "
			     "a string", key, i);
			free(s);
			return NULL;
		}
		s[i++] = e->valuestring;
	}
	return s;
}

static const char *tok_str(struct conv *c, const char *key)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(c->tok, key);

	if (!cJSON_IsString(j)) {
		fail(c, -EINVAL, "tokenizer.json: \"%s\" is not a string", key);
		return "";
	}
	return j->valuestring;
}

static uint32_t tok_id(struct conv *c, const char *key)
{
	const char *s = tok_str(c, key);

	for (size_t i = 0; i < c->ntok; i++)
		if (!strcmp(c->tokens[i], s))
			return (uint32_t)i;
	fail(c, -EINVAL, "tokenizer.json: \"%s\" (%s) is not a token", key, s);
	return 0;
}

/*
 * The vocabulary: the 256 byte tokens, one per merge, then the special
 * tokens (control; the rest normal), as train.py writes it.
 */
static int read_tokenizer(struct conv *c)
{
	struct gm_meta *m = &c->meta;
	const char *model = tok_str(c, "model");

	if (strcmp(model, "gpt2"))
		return fail(c, -EINVAL, "tokenizer.json: model \"%s\", not "
			    "\"gpt2\"", model);
	c->tokens = strings(c, "tokens", &c->ntok);
	c->merges = strings(c, "merges", &c->nmerge);
	if (!c->tokens || !c->merges)
		return -EINVAL;
	if (c->ntok != c->hp.n_vocab || 256 + c->nmerge > c->ntok)
		return fail(c, -EINVAL, "tokenizer.json: %zu tokens and %zu "
			    "merges for n_vocab %u (256 bytes + merges + "
			    "specials)", c->ntok, c->nmerge, c->hp.n_vocab);
	c->ttype = malloc(c->ntok * sizeof(*c->ttype));
	if (!c->ttype)
		return fail(c, -ENOMEM, "out of memory");
	for (size_t i = 0; i < c->ntok; i++)
		c->ttype[i] = i < 256 + c->nmerge ? 1 : 3;
	gm_meta_add(m, NULL, "tokenizer.ggml.model", WF_GGUF_STRING)->s =
		"gpt2";
	gm_meta_add(m, NULL, "tokenizer.ggml.pre", WF_GGUF_STRING)->s =
		tok_str(c, "pre");
	gm_meta_arr(m, "tokenizer.ggml.tokens", WF_GGUF_STRING, c->tokens,
		    c->ntok);
	gm_meta_arr(m, "tokenizer.ggml.token_type", WF_GGUF_I32, c->ttype,
		    c->ntok);
	gm_meta_arr(m, "tokenizer.ggml.merges", WF_GGUF_STRING, c->merges,
		    c->nmerge);
	gm_meta_u32(m, NULL, "tokenizer.ggml.bos_token_id", tok_id(c, "bos"));
	gm_meta_u32(m, NULL, "tokenizer.ggml.eos_token_id", tok_id(c, "eos"));
	gm_meta_add(m, NULL, "tokenizer.ggml.add_bos_token", WF_GGUF_BOOL)->i =
		0;
	gm_meta_add(m, NULL, "tokenizer.chat_template", WF_GGUF_STRING)->s =
		tok_str(c, "chat_template");
	return c->err[0] ? -EINVAL : 0;
}

/* The GGUF tensor named name, added when new. */
static struct otensor *otensor(struct conv *c, const char *name)
{
	for (size_t i = 0; i < c->nt; i++)
		if (!strcmp(c->o[i].name, name))
			return &c->o[i];
	snprintf(c->o[c->nt].name, sizeof(c->o[0].name), "%s", name);
	return &c->o[c->nt++];
}

static int check_src(struct conv *c, const struct shxd_tdesc *d,
		     const struct shxd_tdesc *first)
{
	if (d->type != SHXD_T_F32 && d->type != SHXD_T_F16 &&
	    d->type != SHXD_T_BF16)
		return fail(c, -EINVAL, "tensor %s: dtype %s (F32, F16 or "
			    "BF16)", d->name, d->type_name);
	if (d->ndim > 2 || d->ne[0] % 32)
		return fail(c, -EINVAL, "tensor %s: not a vector or a matrix "
			    "of rows of a multiple of 32", d->name);
	if (first && (d->ndim != first->ndim || d->ne[0] != first->ne[0] ||
		      d->ne[1] != first->ne[1]))
		return fail(c, -EINVAL, "tensor %s: not the shape of %s",
			    d->name, first->name);
	return 0;
}

/* GGUF tensors from the safetensors ones, experts stacked. */
static int plan(struct conv *c, enum shxk_type type)
{
	char name[SHXD_TNAME_MAX], kind[8];
	unsigned int l, e;
	int end, ret;

	c->o = calloc(c->tf.nr, sizeof(*c->o));
	c->wt = calloc(c->tf.nr, sizeof(*c->wt));
	if (!c->o || !c->wt)
		return fail(c, -ENOMEM, "out of memory");
	for (unsigned int i = 0; i < c->tf.nr; i++) {
		const struct shxd_tdesc *d = &c->tf.t[i];
		struct otensor *o;

		ret = check_src(c, d, NULL);
		if (!ret)
			ret = shxd_hf_to_gguf(d->name, name, sizeof(name));
		if (ret)
			return fail(c, ret, "tensor %s: name too long", d->name);
		end = 0;
		if (sscanf(name, "blk.%u.ffn_%7[a-z]_exps.%u.weight%n", &l,
			   kind, &e, &end) == 3 && !name[end]) {
			if (e >= c->hp.n_expert)
				return fail(c, -EINVAL, "tensor %s: expert %u "
					    "of %u", d->name, e,
					    c->hp.n_expert);
			snprintf(name, sizeof(name), "blk.%u.ffn_%s_exps.weight",
				 l, kind);
		} else {
			e = 0;
		}
		o = otensor(c, name);
		if (o->src[e])
			return fail(c, -EINVAL, "tensor %s: twice", d->name);
		ret = check_src(c, d, o->first);
		if (ret)
			return ret;
		if (!o->first)
			o->first = d;
		o->src[e] = d;
		o->nsrc++;
	}
	for (size_t i = 0; i < c->nt; i++) {
		struct otensor *o = &c->o[i];
		const struct shxd_tdesc *d = o->first;
		struct wf_wtensor *w = &c->wt[i];
		int stacked = !!strstr(o->name, "_exps.");

		if (o->nsrc != (stacked ? c->hp.n_expert : 1))
			return fail(c, -EINVAL, "tensor %s: %u of %u experts",
				    o->name, o->nsrc, c->hp.n_expert);
		o->type = d->ndim == 1 || strstr(o->name, "ffn_gate_inp") ?
			  SHXK_F32 : type;
		*w = (struct wf_wtensor){
			.name = o->name, .ndim = d->ndim + stacked,
			.ne = { d->ne[0], d->ne[1], stacked ? o->nsrc : 1, 1 },
			.ggml_type = o->type == SHXK_F32 ? 0 :
				     o->type == SHXK_F16 ? 1 :
				     o->type == SHXK_Q8_0 ? 8 : 2,
		};
		w->size = shxk_row_size(o->type, d->ne[0]) * d->ne[1] * o->nsrc;
	}
	return 0;
}

/* Source rows as f32: safetensors aligns nothing, so byte by byte. */
static void to_f32(const struct shxd_tdesc *d, const uint8_t *p, float *x,
		   size_t n)
{
	uint16_t h;

	if (d->type == SHXD_T_F32) {
		memcpy(x, p, n * sizeof(*x));
		return;
	}
	for (size_t i = 0; i < n; i++) {
		memcpy(&h, p + 2 * i, 2);
		x[i] = d->type == SHXD_T_F16 ? shxk_fp16_to_fp32(h) :
					       shxk_bf16_to_fp32(h);
	}
}

static int write_gguf(struct conv *c, const char *path)
{
	size_t most = 0;
	struct wf_gguf w;
	float *x;
	void *y;
	int ret;

	for (size_t i = 0; i < c->nt; i++)
		if (c->o[i].first->ne[0] * c->o[i].first->ne[1] > most)
			most = c->o[i].first->ne[0] * c->o[i].first->ne[1];
	x = malloc(most * sizeof(*x));
	y = malloc(most * sizeof(*x));
	if (!x || !y) {
		free(x);
		free(y);
		return fail(c, -ENOMEM, "out of memory");
	}
	ret = wf_gguf_begin(&w, path, c->meta.kv, c->meta.n, c->wt, c->nt);
	for (size_t i = 0; !ret && i < c->nt; i++) {
		const struct otensor *o = &c->o[i];
		size_t k = o->first->ne[0], rows = o->first->ne[1];

		for (unsigned int e = 0; e < o->nsrc && !w.err; e++) {
			to_f32(o->src[e], c->img + o->src[e]->offset, x,
			       k * rows);
			shxk_quantize(o->type, x, y, k, 0, rows);
			wf_gguf_put(&w, y, shxk_row_size(o->type, k) * rows);
		}
	}
	if (w.fd >= 0 || ret)
		ret = wf_gguf_end(&w);
	free(x);
	free(y);
	if (ret) {
		remove(path);
		return fail(c, ret, "%s: %s", path, strerror(-ret));
	}
	return 0;
}

static int convert(struct conv *c, const char *dir, const char *name,
		   enum shxk_type type, const char *out)
{
	char path[4096];
	int ret;

	ret = read_json(c, dir, "config.json", &c->cfg);
	if (!ret)
		ret = read_config(c);
	if (!ret) {
		gm_meta_hparams(&c->meta, &c->hp, name);
		ret = read_json(c, dir, "tokenizer.json", &c->tok);
	}
	if (!ret)
		ret = read_tokenizer(c);
	if (ret)
		return ret;
	snprintf(path, sizeof(path), "%s/model.safetensors", dir);
	ret = read_file(c, path, &c->img, &c->len);
	if (!ret && shxd_safetensors_parse(c->img, c->len, &c->tf, c->err,
					   sizeof(c->err)))
		return -EINVAL;
	if (!ret)
		ret = plan(c, type);
	if (!ret)
		ret = write_gguf(c, out);
	return ret;
}

static void conv_free(struct conv *c)
{
	shxd_tfile_free(&c->tf);
	free(c->img);
	free(c->o);
	free(c->wt);
	free(c->tokens);
	free(c->merges);
	free(c->ttype);
	cJSON_Delete(c->cfg);
	cJSON_Delete(c->tok);
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: " PROG " [--type f32|f16|q8_0|q4_0] [--name NAME] DIR OUT.gguf\n"
"A model folder as tools/train/train.py writes it (model.safetensors,\n"
"config.json, tokenizer.json) to a GGUF file for syshaxd and llama.cpp.\n"
"  -t, --type T   the matrices' type (default f16); norms and the MoE\n"
"                 router stay f32\n"
"  -n, --name S   general.name (default: the folder's name)\n"
"  -h, --help     this text\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "type", required_argument, NULL, 't' },
		{ "name", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	enum shxk_type type = SHXK_F16;
	const char *name = NULL;
	struct conv *c;
	size_t i;
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "t:n:h", opts, NULL)) != -1) {
		switch (opt) {
		case 't':
			for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
				if (!strcmp(optarg, types[i].name))
					break;
			if (i == sizeof(types) / sizeof(types[0])) {
				fprintf(stderr, PROG ": unknown type '%s' (f32, "
					"f16, q8_0, q4_0)\n", optarg);
				return 2;
			}
			type = types[i].type;
			break;
		case 'n':
			name = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind != 2) {
		usage(stderr);
		return 2;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		fprintf(stderr, PROG ": out of memory\n");
		return 1;
	}
	shxk_init();
	ret = convert(c, argv[optind], name ? name : basename(argv[optind]),
		      type, argv[optind + 1]);
	if (ret)
		fprintf(stderr, PROG ": %s\n", c->err[0] ? c->err :
			strerror(-ret));
	conv_free(c);
	free(c);
	return ret ? 1 : 0;
}
