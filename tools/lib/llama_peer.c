// SPDX-License-Identifier: MIT
/*
 * llama.cpp's libllama as a peer (llama_peer.h), dlopen'ed from a folder.
 *
 * No llama.cpp header is used. The structs below are declared as in
 * include/llama.h of llama.cpp commit 0ad4a86 (libllama 0.5.0, shipped by
 * the npm package @node-llama-cpp/linux-x64 3.22.1): llama_model_params
 * has load_mode/lazy_mode instead of use_mmap/use_mlock (80 bytes) and
 * llama_context_params has n_outputs_max_per_seq (160 bytes). These change
 * between commits and are passed by value, so llp_open() checks them
 * against the library: the default values each field has at that commit
 * must be at the offset declared here, and llama_batch_get_one() must fill
 * the batch where declared. Enumerators we set are checked by name.
 *
 * libllama.so finds libggml and libggml-base beside it (RUNPATH $ORIGIN);
 * the CPU backend (libggml-cpu-<variant>.so, the best for this CPU) is
 * loaded by ggml_backend_load_all_from_path().
 */
#include "llama_peer.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct llama_model;
struct llama_context;
struct llama_vocab;

/* include/llama.h at 0ad4a86; enums are int-sized, written as int32_t. */
struct llama_model_params {
	void **devices;			/* ggml_backend_dev_t * */
	const void *tensor_buft_overrides;
	int32_t n_gpu_layers;
	int32_t split_mode;		/* enum llama_split_mode */
	int32_t load_mode;		/* enum llama_load_mode */
	int32_t lazy_mode;		/* enum llama_lazy_mode */
	int32_t main_gpu;
	const float *tensor_split;
	bool (*progress_callback)(float progress, void *user_data);
	void *progress_callback_user_data;
	const void *kv_overrides;
	bool vocab_only;
	bool check_tensors;
	bool use_extra_bufts;
	bool no_host;
	bool no_alloc;
	bool load_mtp;
};

struct llama_context_params {
	uint32_t n_ctx;
	uint32_t n_batch;
	uint32_t n_ubatch;
	uint32_t n_seq_max;
	uint32_t n_rs_seq;
	uint32_t n_outputs_max;
	uint32_t n_outputs_max_per_seq;
	int32_t n_threads;
	int32_t n_threads_batch;
	int32_t ctx_type;		/* enum llama_context_type */
	int32_t rope_scaling_type;	/* enum llama_rope_scaling_type */
	int32_t pooling_type;		/* enum llama_pooling_type */
	int32_t attention_type;		/* enum llama_attention_type */
	int32_t flash_attn_type;	/* enum llama_flash_attn_type */
	float rope_freq_base;
	float rope_freq_scale;
	float yarn_ext_factor;
	float yarn_attn_factor;
	float yarn_beta_fast;
	float yarn_beta_slow;
	uint32_t yarn_orig_ctx;
	float defrag_thold;
	bool (*cb_eval)(void *tensor, bool ask, void *user_data);
	void *cb_eval_user_data;
	int32_t type_k;			/* enum ggml_type */
	int32_t type_v;
	bool (*abort_callback)(void *data);
	void *abort_callback_data;
	bool embeddings;
	bool offload_kqv;
	bool no_perf;
	bool op_offload;
	bool swa_full;
	bool kv_unified;
	void *samplers;			/* struct llama_sampler_seq_config * */
	size_t n_samplers;
	struct llama_context *ctx_other;
};

struct llama_batch {
	int32_t n_tokens;
	int32_t *token;
	float *embd;
	int32_t *pos;
	int32_t *n_seq_id;
	int32_t **seq_id;
	int8_t *logits;
};

_Static_assert(sizeof(void *) != 8 || sizeof(struct llama_model_params) == 80,
	       "llama_model_params as at 0ad4a86");
_Static_assert(sizeof(void *) != 8 ||
	       sizeof(struct llama_context_params) == 160,
	       "llama_context_params as at 0ad4a86");

/*
 * What a struct-returning function is called as until its layout is
 * checked: room for more than declared, so a libllama whose struct grew
 * cannot write past ours (all are returned through a hidden pointer).
 */
struct llp_probe {
	unsigned char b[512];
};

enum {
	GGML_TYPE_F32 = 0, GGML_TYPE_F16 = 1,
	GGML_LOG_LEVEL_WARN = 3, GGML_LOG_LEVEL_CONT = 5,
	LLAMA_LOAD_MODE_NONE = 0, LLAMA_LAZY_MODE_OFF = 0,
	LLAMA_FLASH_ATTN_TYPE_DISABLED = 0,
};

typedef void (*llp_log_fn)(int level, const char *text, void *user_data);

struct llp_fn {
	void (*backend_init)(void);
	void (*log_set)(llp_log_fn cb, void *user_data);
	void (*load_all_from_path)(const char *dir);
	size_t (*dev_count)(void);
	struct llp_probe (*model_default_params)(void);
	struct llp_probe (*context_default_params)(void);
	struct llp_probe (*batch_get_one)(int32_t *tokens, int32_t n);
	const char *(*load_mode_name)(int32_t mode);
	const char *(*flash_attn_type_name)(int32_t type);
	const char *(*type_name)(int32_t type);
	struct llama_model *(*model_load)(const char *path,
					  struct llama_model_params p);
	void (*model_free)(struct llama_model *m);
	const struct llama_vocab *(*model_get_vocab)(const struct llama_model *m);
	int32_t (*vocab_n_tokens)(const struct llama_vocab *v);
	struct llama_context *(*init_from_model)(struct llama_model *m,
						 struct llama_context_params p);
	void (*free)(struct llama_context *c);
	void (*set_n_threads)(struct llama_context *c, int32_t n, int32_t nb);
	int32_t (*decode)(struct llama_context *c, struct llama_batch b);
	float *(*get_logits_ith)(struct llama_context *c, int32_t i);
	void *(*get_memory)(const struct llama_context *c);
	void (*memory_clear)(void *mem, bool data);
};

#define FN(field, sym) { sym, offsetof(struct llp_fn, field) }
static const struct {
	const char *sym;
	size_t off;
} llp_syms[] = {
	FN(backend_init, "llama_backend_init"),
	FN(log_set, "llama_log_set"),
	FN(load_all_from_path, "ggml_backend_load_all_from_path"),
	FN(dev_count, "ggml_backend_dev_count"),
	FN(model_default_params, "llama_model_default_params"),
	FN(context_default_params, "llama_context_default_params"),
	FN(batch_get_one, "llama_batch_get_one"),
	FN(load_mode_name, "llama_load_mode_name"),
	FN(flash_attn_type_name, "llama_flash_attn_type_name"),
	FN(type_name, "ggml_type_name"),
	FN(model_load, "llama_model_load_from_file"),
	FN(model_free, "llama_model_free"),
	FN(model_get_vocab, "llama_model_get_vocab"),
	FN(vocab_n_tokens, "llama_vocab_n_tokens"),
	FN(init_from_model, "llama_init_from_model"),
	FN(free, "llama_free"),
	FN(set_n_threads, "llama_set_n_threads"),
	FN(decode, "llama_decode"),
	FN(get_logits_ith, "llama_get_logits_ith"),
	FN(get_memory, "llama_get_memory"),
	FN(memory_clear, "llama_memory_clear"),
};
#undef FN

/* The batch handed to llama_decode, n_batch rows. */
struct llp_rows {
	int32_t *tok, *pos, *nseq, *seq;
	int32_t **seqp;
	int8_t *want;
};

struct llp {
	void *lib;
	struct llp_fn f;
	struct llama_model_params mdef;
	struct llama_context_params cdef;
	struct llama_model *model;
	struct llama_context *ctx;
	struct llp_rows rows;
	unsigned int n_batch, n_seq_max;
	int n_vocab;
	char version[256];
};

static int fail(char *err, size_t errlen, int e, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return e;
}

/* Warnings and errors only, unless SYSHAX_LLAMA_LOG=1; a continuation
 * (GGML_LOG_LEVEL_CONT) goes where the line it continues went. */
static bool llp_log_all;
static _Thread_local bool llp_log_drop;

static void llp_log(int level, const char *text, void *user_data)
{
	(void)user_data;
	if (level != GGML_LOG_LEVEL_CONT)
		llp_log_drop = !llp_log_all && level < GGML_LOG_LEVEL_WARN;
	if (!llp_log_drop)
		fputs(text, stderr);
}

static int bind_syms(struct llp *l, char *err, size_t errlen)
{
	for (size_t i = 0; i < sizeof(llp_syms) / sizeof(llp_syms[0]); i++) {
		void *p = dlsym(l->lib, llp_syms[i].sym);

		if (!p)
			return fail(err, errlen, -EPROTO,
				    "libllama: no %s", llp_syms[i].sym);
		memcpy((char *)&l->f + llp_syms[i].off, &p, sizeof(p));
	}
	return 0;
}

/* The first expectation that does not hold, else NULL. */
#define EXPECT(c)		\
	do {			\
		if (!(c))	\
			return #c; \
	} while (0)

static const char *model_params_bad(const struct llama_model_params *p)
{
	EXPECT(!p->devices && !p->tensor_buft_overrides);
	EXPECT(p->n_gpu_layers == -1);
	EXPECT(p->split_mode == 1);		/* LLAMA_SPLIT_MODE_LAYER */
	EXPECT(p->load_mode == -1);		/* LLAMA_LOAD_MODE_AUTO */
	EXPECT(p->lazy_mode == 1);		/* LLAMA_LAZY_MODE_AUTO */
	EXPECT(p->main_gpu == 0 && !p->tensor_split);
	EXPECT(!p->progress_callback && !p->progress_callback_user_data);
	EXPECT(!p->kv_overrides);
	EXPECT(!p->vocab_only && !p->check_tensors && p->use_extra_bufts);
	EXPECT(!p->no_host && !p->no_alloc && !p->load_mtp);
	return NULL;
}

static const char *context_params_bad(const struct llama_context_params *p)
{
	EXPECT(p->n_ctx == 512 && p->n_batch == 2048 && p->n_ubatch == 512);
	EXPECT(p->n_seq_max == 1 && p->n_rs_seq == 0);
	EXPECT(p->n_outputs_max == 0 && p->n_outputs_max_per_seq == 1);
	EXPECT(p->n_threads == 4 && p->n_threads_batch == 4);
	EXPECT(p->ctx_type == 0);		/* LLAMA_CONTEXT_TYPE_DEFAULT */
	EXPECT(p->rope_scaling_type == -1 && p->pooling_type == -1);
	EXPECT(p->attention_type == -1 && p->flash_attn_type == -1);
	EXPECT(p->rope_freq_base == 0 && p->rope_freq_scale == 0);
	EXPECT(p->yarn_ext_factor == -1 && p->yarn_attn_factor == -1);
	EXPECT(p->yarn_beta_fast == -1 && p->yarn_beta_slow == -1);
	EXPECT(p->yarn_orig_ctx == 0 && p->defrag_thold == -1);
	EXPECT(!p->cb_eval && !p->cb_eval_user_data);
	EXPECT(p->type_k == GGML_TYPE_F16 && p->type_v == GGML_TYPE_F16);
	EXPECT(!p->abort_callback && !p->abort_callback_data);
	EXPECT(!p->embeddings && p->offload_kqv && p->no_perf);
	EXPECT(p->op_offload && p->swa_full && !p->kv_unified);
	EXPECT(!p->samplers && !p->n_samplers && !p->ctx_other);
	return NULL;
}

static const char *batch_bad(const struct llama_batch *b, int32_t *tok)
{
	EXPECT(b->n_tokens == 3 && b->token == tok);
	EXPECT(!b->embd && !b->pos && !b->n_seq_id && !b->seq_id);
	EXPECT(!b->logits);
	return NULL;
}

static const char *enums_bad(const struct llp_fn *f)
{
	EXPECT(!strcmp(f->load_mode_name(LLAMA_LOAD_MODE_NONE), "none"));
	EXPECT(!strcmp(f->flash_attn_type_name(LLAMA_FLASH_ATTN_TYPE_DISABLED),
		       "disabled"));
	EXPECT(!strcmp(f->type_name(GGML_TYPE_F32), "f32"));
	EXPECT(!strcmp(f->type_name(GGML_TYPE_F16), "f16"));
	return NULL;
}
#undef EXPECT

/* Defaults and llama_batch_get_one() where 0ad4a86 has them. */
static int check_layout(struct llp *l, const char *dir, char *err,
			size_t errlen)
{
	struct llp_probe m = l->f.model_default_params();
	struct llp_probe c = l->f.context_default_params();
	int32_t tok[3] = { 0 };
	struct llp_probe b = l->f.batch_get_one(tok, 3);
	struct llama_batch batch;
	const char *what, *bad;

	memcpy(&l->mdef, m.b, sizeof(l->mdef));
	memcpy(&l->cdef, c.b, sizeof(l->cdef));
	memcpy(&batch, b.b, sizeof(batch));
	if ((bad = model_params_bad(&l->mdef)))
		what = "llama_model_default_params()";
	else if ((bad = context_params_bad(&l->cdef)))
		what = "llama_context_default_params()";
	else if ((bad = batch_bad(&batch, tok)))
		what = "llama_batch_get_one()";
	else if ((bad = enums_bad(&l->f)))
		what = "enum names";
	else
		return 0;
	return fail(err, errlen, -EPROTO,
		    "%s/libllama.so, %s, is laid out unlike llama.cpp 0ad4a86 (llama_peer.c): %s: expected %s",
		    dir, l->version, what, bad);
}

/* The commit (LLAMA_COMMIT of libllama-common.so), the libllama version
 * and the package tools/fetch-ggml.sh names in VERSION, where present. */
static void name_version(struct llp *l, const char *dir)
{
	const char *(*version)(void);
	char path[4096], pkg[128] = "";
	const char *const *commit;
	void *common;
	FILE *f;

	snprintf(path, sizeof(path), "%s/VERSION", dir);
	f = fopen(path, "r");
	if (f) {
		if (!fgets(pkg, sizeof(pkg), f))
			pkg[0] = 0;
		pkg[strcspn(pkg, "\n")] = 0;
		fclose(f);
	}
	*(void **)&version = dlsym(l->lib, "llama_version");
	snprintf(path, sizeof(path), "%s/libllama-common.so", dir);
	common = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	commit = common ? dlsym(common, "LLAMA_COMMIT") : NULL;
	snprintf(l->version, sizeof(l->version),
		 "llama.cpp %s (libllama %s%s%s)", commit ? *commit : "?",
		 version ? version() : "?", *pkg ? ", " : "", pkg);
	if (common)
		dlclose(common);
}

int llp_open(struct llp **out, const char *dir, char *err, size_t errlen)
{
	const char *log = getenv("SYSHAX_LLAMA_LOG");
	char path[4096];
	struct llp *l;
	int e;

	snprintf(path, sizeof(path), "%s/libllama.so", dir ? dir : "");
	if (!dir || !*dir || access(path, F_OK))
		return fail(err, errlen, -ENOENT,
			    "no %s (tools/fetch-ggml.sh fetches it)", path);
	l = calloc(1, sizeof(*l));
	if (!l)
		return fail(err, errlen, -ENOMEM, "out of memory");
	l->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!l->lib) {
		e = fail(err, errlen, -ENOENT, "%s", dlerror());
		goto out;
	}
	e = bind_syms(l, err, errlen);
	if (e)
		goto out;
	name_version(l, dir);
	e = check_layout(l, dir, err, errlen);
	if (e)
		goto out;
	llp_log_all = log && !strcmp(log, "1");
	l->f.log_set(llp_log, NULL);
	l->f.backend_init();
	l->f.load_all_from_path(dir);
	if (!l->f.dev_count()) {
		e = fail(err, errlen, -ENOENT,
			 "no ggml CPU backend (libggml-cpu-*.so) in %s", dir);
		goto out;
	}
	*out = l;
	return 0;
out:
	llp_close(l);
	return e;
}

int llp_load(struct llp *l, const char *gguf, char *err, size_t errlen)
{
	struct llama_model_params p = l->mdef;

	if (l->model)
		return fail(err, errlen, -EBUSY, "a model is loaded already");
	p.n_gpu_layers = 0;
	p.load_mode = LLAMA_LOAD_MODE_NONE;
	p.lazy_mode = LLAMA_LAZY_MODE_OFF;
	l->model = l->f.model_load(gguf, p);
	if (!l->model)
		return fail(err, errlen, -EINVAL,
			    "libllama cannot load %s (its log says why)", gguf);
	l->n_vocab = l->f.vocab_n_tokens(l->f.model_get_vocab(l->model));
	return 0;
}

static void rows_free(struct llp_rows *r)
{
	free(r->tok);
	free(r->pos);
	free(r->nseq);
	free(r->seq);
	free(r->seqp);
	free(r->want);
	memset(r, 0, sizeof(*r));
}

static int rows_alloc(struct llp_rows *r, unsigned int n)
{
	r->tok = calloc(n, sizeof(*r->tok));
	r->pos = calloc(n, sizeof(*r->pos));
	r->nseq = calloc(n, sizeof(*r->nseq));
	r->seq = calloc(n, sizeof(*r->seq));
	r->seqp = calloc(n, sizeof(*r->seqp));
	r->want = calloc(n, sizeof(*r->want));
	if (!r->tok || !r->pos || !r->nseq || !r->seq || !r->seqp ||
	    !r->want) {
		rows_free(r);
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < n; i++) {
		r->nseq[i] = 1;
		r->seqp[i] = &r->seq[i];
	}
	return 0;
}

static void ctx_free(struct llp *l)
{
	if (l->ctx)
		l->f.free(l->ctx);
	l->ctx = NULL;
	rows_free(&l->rows);
}

int llp_context(struct llp *l, const struct llp_ctx_opts *o, char *err,
		size_t errlen)
{
	struct llama_context_params p = l->cdef;

	if (!l->model)
		return fail(err, errlen, -EINVAL, "no model loaded");
	if (!o->n_ctx || !o->n_batch || !o->n_seq_max || !o->threads)
		return fail(err, errlen, -EINVAL,
			    "n_ctx, n_batch, n_seq_max and threads must be > 0");
	ctx_free(l);
	if (rows_alloc(&l->rows, o->n_batch))
		return fail(err, errlen, -ENOMEM, "out of memory");
	p.n_ctx = o->n_ctx;
	/* One ubatch per decode: the graph a test compares against. */
	p.n_batch = p.n_ubatch = o->n_batch;
	p.n_seq_max = o->n_seq_max;
	p.n_threads = p.n_threads_batch = (int32_t)o->threads;
	if (o->f32_kv) {
		p.type_k = p.type_v = GGML_TYPE_F32;
		p.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
	}
	l->ctx = l->f.init_from_model(l->model, p);
	if (!l->ctx) {
		rows_free(&l->rows);
		return fail(err, errlen, -EINVAL,
			    "llama_init_from_model failed (its log says why)");
	}
	l->n_batch = o->n_batch;
	l->n_seq_max = o->n_seq_max;
	return 0;
}

int llp_decode(struct llp *l, const int32_t *tok, const int32_t *pos,
	       const int32_t *seq, const uint8_t *logits, unsigned int n,
	       char *err, size_t errlen)
{
	struct llp_rows *r = &l->rows;
	struct llama_batch b = {
		.n_tokens = (int32_t)n, .token = r->tok, .pos = r->pos,
		.n_seq_id = r->nseq, .seq_id = r->seqp, .logits = r->want,
	};
	int32_t ret;

	if (!l->ctx)
		return fail(err, errlen, -EINVAL, "no context");
	if (!n || n > l->n_batch)
		return fail(err, errlen, -EINVAL, "%u tokens, n_batch %u", n,
			    l->n_batch);
	for (unsigned int i = 0; i < n; i++) {
		if (seq[i] < 0 || (unsigned int)seq[i] >= l->n_seq_max)
			return fail(err, errlen, -EINVAL,
				    "row %u: sequence %d, n_seq_max %u", i,
				    seq[i], l->n_seq_max);
		r->tok[i] = tok[i];
		r->pos[i] = pos[i];
		r->seq[i] = seq[i];
		r->want[i] = logits[i] != 0;
	}
	ret = l->f.decode(l->ctx, b);
	if (!ret)
		return 0;
	return fail(err, errlen, ret == 1 ? -ENOSPC : ret == -1 ? -EINVAL : -EIO,
		    "llama_decode: %d%s", ret,
		    ret == 1 ? " (no room in the KV cache)" : "");
}

const float *llp_logits(struct llp *l, int i)
{
	return l->ctx ? l->f.get_logits_ith(l->ctx, i) : NULL;
}

int llp_n_vocab(const struct llp *l)
{
	return l->n_vocab;
}

int llp_threads(struct llp *l, int n)
{
	if (!l->ctx || n < 1)
		return -EINVAL;
	l->f.set_n_threads(l->ctx, n, n);
	return 0;
}

void llp_clear(struct llp *l)
{
	if (l->ctx)
		l->f.memory_clear(l->f.get_memory(l->ctx), true);
}

const char *llp_version(const struct llp *l)
{
	return l->version;
}

int llp_start(struct llp **out, const char *dir, const char *gguf,
	      const struct llp_ctx_opts *o, char *err, size_t errlen)
{
	int ret = llp_open(out, dir, err, errlen);

	if (ret) {
		*out = NULL;
		return ret;
	}
	ret = llp_load(*out, gguf, err, errlen);
	if (!ret)
		ret = llp_context(*out, o, err, errlen);
	if (ret) {
		llp_close(*out);
		*out = NULL;
	}
	return ret;
}

void llp_close(struct llp *l)
{
	if (!l)
		return;
	ctx_free(l);
	if (l->model)
		l->f.model_free(l->model);
	if (l->lib)
		dlclose(l->lib);
	free(l);
}

/* ---- chat templates: llama_chat_apply_template (no model needed) ---- */

int llp_chat_apply(struct llp *l, const char *tmpl,
		   const struct llp_chat_msg *msgs, size_t n, int add_assistant,
		   char *buf, size_t len)
{
	int32_t (*apply)(const char *tmpl, const struct llp_chat_msg *chat,
			 size_t n_msg, bool add_ass, char *buf, int32_t length);
	int32_t r;

	*(void **)&apply = dlsym(l->lib, "llama_chat_apply_template");
	if (!apply)
		return -EPROTO;
	r = apply(tmpl, msgs, n, add_assistant != 0, buf,
		  len > INT32_MAX ? INT32_MAX : (int32_t)len);
	return r < 0 ? -ENOENT : r;
}

/*
 * The tokenizer: a vocab-only load and llama.cpp's tokenizer calls. Their
 * symbols are bound when a vocabulary is loaded (every libllama this peer
 * accepts has them; one libllama per process, so one table).
 */
static struct {
	int32_t (*tokenize)(const struct llama_vocab *v, const char *text,
			    int32_t len, int32_t *ids, int32_t max,
			    bool add_special, bool parse_special);
	int32_t (*piece)(const struct llama_vocab *v, int32_t id, char *buf,
			 int32_t len, int32_t lstrip, bool special);
	int32_t (*bos)(const struct llama_vocab *v);
	int32_t (*eos)(const struct llama_vocab *v);
	int32_t (*eot)(const struct llama_vocab *v);
	bool (*is_eog)(const struct llama_vocab *v, int32_t id);
} llp_tok;

int llp_load_vocab(struct llp *l, const char *gguf, char *err, size_t errlen)
{
	static const char *const sym[] = {
		"llama_tokenize", "llama_token_to_piece", "llama_vocab_bos",
		"llama_vocab_eos", "llama_vocab_eot", "llama_vocab_is_eog",
	};
	void **fn = (void **)&llp_tok;
	struct llama_model_params p = l->mdef;

	if (l->model)
		return fail(err, errlen, -EBUSY, "a model is loaded already");
	for (size_t i = 0; i < sizeof(sym) / sizeof(sym[0]); i++)
		if (!(fn[i] = dlsym(l->lib, sym[i])))
			return fail(err, errlen, -EPROTO, "libllama: no %s",
				    sym[i]);
	p.n_gpu_layers = 0;
	p.load_mode = LLAMA_LOAD_MODE_NONE;
	p.lazy_mode = LLAMA_LAZY_MODE_OFF;
	p.vocab_only = true;
	l->model = l->f.model_load(gguf, p);
	if (!l->model)
		return fail(err, errlen, -EINVAL,
			    "libllama cannot load the vocabulary of %s (its log says why)",
			    gguf);
	l->n_vocab = l->f.vocab_n_tokens(l->f.model_get_vocab(l->model));
	return 0;
}

#define LLP_VOCAB(l) (l->f.model_get_vocab(l->model))

int32_t llp_tokenize(struct llp *l, const char *text, int32_t len,
		     int32_t *ids, int32_t max, int add_special,
		     int parse_special)
{
	return llp_tok.tokenize(LLP_VOCAB(l), text, len, ids, max,
				add_special, parse_special);
}

int32_t llp_piece(struct llp *l, int32_t id, char *buf, int32_t len,
		  int32_t lstrip, int special)
{
	return llp_tok.piece(LLP_VOCAB(l), id, buf, len, lstrip, special);
}

int32_t llp_vocab_bos(struct llp *l)
{
	return llp_tok.bos(LLP_VOCAB(l));
}

int32_t llp_vocab_eos(struct llp *l)
{
	return llp_tok.eos(LLP_VOCAB(l));
}

int32_t llp_vocab_eot(struct llp *l)
{
	return llp_tok.eot(LLP_VOCAB(l));
}

int llp_vocab_is_eog(struct llp *l, int32_t id)
{
	return llp_tok.is_eog(LLP_VOCAB(l), id);
}
#undef LLP_VOCAB
