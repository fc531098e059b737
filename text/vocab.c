// SPDX-License-Identifier: MIT
/*
 * Loading a tokenizer from a GGUF's tokenizer.ggml.* keys (tokenizer.h),
 * as llama.cpp's llama_vocab::impl::load does: the type's defaults, the
 * keys that override them, then its text-based fixes (end-of-generation
 * and FIM tokens found by their text and made control tokens, control
 * tokens named "unused" marked unused). Where llama.cpp walks a hash map
 * and takes the first match (EOT when several texts qualify), this takes
 * the first text in llama.cpp's list that the vocabulary has.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/tfile.h"
#include "tok_int.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

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

uint32_t shx_hash(const char *s, size_t n, uint32_t h)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 16777619u;
	return h;
}

static uint32_t mask_for(size_t n)
{
	uint32_t sz = 16;

	while (sz < 2 * n)
		sz <<= 1;
	return sz - 1;
}

int32_t shx_tok_lookup(const struct shx_tok *tok, const char *s, size_t n)
{
	uint32_t i = shx_hash(s, n, SHX_HASH_SEED) & tok->map_mask, v;

	while ((v = tok->map[i])) {
		const struct tok_ent *t = &tok->t[v - 1];

		if (t->len == n && !memcmp(tok->text + t->off, s, n))
			return (int32_t)v - 1;
		i = (i + 1) & tok->map_mask;
	}
	return -1;
}

static uint32_t pair_hash(const char *l, size_t ln, const char *r, size_t rn)
{
	return shx_hash(r, rn, shx_hash(l, ln, SHX_HASH_SEED) * 31u + 7u);
}

int32_t shx_bpe_rank(const struct shx_tok *tok, const char *l, size_t ln,
		     const char *r, size_t rn)
{
	uint32_t i = pair_hash(l, ln, r, rn) & tok->mmap_mask, v;

	while ((v = tok->mmap[i])) {
		const struct tok_merge *m = &tok->m[v - 1];

		if (m->llen == ln && m->rlen == rn &&
		    !memcmp(tok->mtext + m->loff, l, ln) &&
		    !memcmp(tok->mtext + m->roff, r, rn))
			return m->rank;
		i = (i + 1) & tok->mmap_mask;
	}
	return -1;
}

static const struct shxd_gguf_kv *kv_get(const struct shxd_tfile *f,
					 const char *key)
{
	size_t n = strlen(key);

	for (unsigned int i = 0; i < f->nr_kv; i++)
		if (f->kv[i].key_len == n && !memcmp(f->kv[i].key, key, n))
			return &f->kv[i];
	return NULL;
}

static uint64_t le64(const uint8_t *b)
{
	uint64_t v;

	memcpy(&v, b, 8);
	return v;
}

/* An array of arr_type under key: its kv, NULL when absent; -EINVAL in
 * *e when it is there with another type. */
static const struct shxd_gguf_kv *arr_get(const struct shxd_tfile *f,
					  const char *key,
					  enum shxd_gguf_vtype t, int *e)
{
	const struct shxd_gguf_kv *kv = kv_get(f, key);

	*e = 0;
	if (kv && (kv->type != SHXD_GGUF_ARRAY || kv->arr_type != t)) {
		*e = -EINVAL;
		return NULL;
	}
	return kv;
}

static int load_tokens(struct shx_tok *tok, const struct shxd_tfile *f,
		       char *err, size_t errlen)
{
	const struct shxd_gguf_kv *kv, *sk, *tk;
	const uint8_t *p;
	size_t total = 0, pos = 0;
	char empty[32];
	int e;

	kv = arr_get(f, "tokenizer.ggml.tokens", SHXD_GGUF_STRING, &e);
	if (!kv)
		return fail(err, errlen, -EINVAL, e ?
			    "tokenizer.ggml.tokens is not an array of strings" :
			    "no tokenizer.ggml.tokens");
	if (!kv->arr_len || kv->arr_len > INT32_MAX / 2)
		return fail(err, errlen, -EINVAL,
			    "tokenizer.ggml.tokens: %llu tokens",
			    (unsigned long long)kv->arr_len);
	tok->n = (int32_t)kv->arr_len;
	sk = kv_get(f, "tokenizer.ggml.scores");
	if (sk && (sk->type != SHXD_GGUF_ARRAY ||
		   (sk->arr_type != SHXD_GGUF_F32 &&
		    sk->arr_type != SHXD_GGUF_I32) ||
		   sk->arr_len < kv->arr_len))
		return fail(err, errlen, -EINVAL,
			    "tokenizer.ggml.scores: not an F32 or I32 array of %d",
			    tok->n);
	tk = arr_get(f, "tokenizer.ggml.token_type", SHXD_GGUF_I32, &e);
	if (e || (tk && tk->arr_len < kv->arr_len))
		return fail(err, errlen, -EINVAL,
			    "tokenizer.ggml.token_type: not an I32 array of %d",
			    tok->n);
	p = kv->val;
	for (int32_t i = 0; i < tok->n; i++) {
		uint64_t n = le64(p);

		total += n ? n : (size_t)snprintf(empty, sizeof(empty),
						  "[EMPTY_%d]", i);
		p += 8 + n;
	}
	tok->t = calloc((size_t)tok->n, sizeof(*tok->t));
	tok->text = malloc(total + 1);
	tok->map_mask = mask_for((size_t)tok->n);
	tok->map = calloc((size_t)tok->map_mask + 1, sizeof(*tok->map));
	if (!tok->t || !tok->text || !tok->map)
		return fail(err, errlen, -ENOMEM, "out of memory");
	p = kv->val;
	for (int32_t i = 0; i < tok->n; i++) {
		struct tok_ent *t = &tok->t[i];
		uint64_t n = le64(p);
		uint32_t h;

		t->off = (uint32_t)pos;
		if (n)
			memcpy(tok->text + pos, p + 8, n);
		else	/* llama.cpp's name for an empty token */
			n = (uint64_t)sprintf(tok->text + pos, "[EMPTY_%d]", i);
		p += 8 + le64(p);
		t->len = (uint32_t)n;
		pos += n;
		if (shx_tok_lookup(tok, tok->text + t->off, t->len) >= 0)
			return fail(err, errlen, -EINVAL,
				    "duplicate token %d in the vocabulary", i);
		h = shx_hash(tok->text + t->off, t->len, SHX_HASH_SEED);
		while (tok->map[h & tok->map_mask])
			h++;
		tok->map[h & tok->map_mask] = (uint32_t)i + 1;
		if (sk && sk->arr_type == SHXD_GGUF_F32)
			memcpy(&t->score, sk->val + 4 * (size_t)i, 4);
		else if (sk) {
			int32_t s;

			memcpy(&s, sk->val + 4 * (size_t)i, 4);
			t->score = (float)s;
		}
		t->attr = TA_NORMAL;
		if (tk) {
			int32_t ty;

			memcpy(&ty, tk->val + 4 * (size_t)i, 4);
			/* LLAMA_TOKEN_TYPE_*: 1 normal .. 6 byte */
			static const uint16_t attr[] = { TA_UNDEFINED,
				TA_NORMAL, TA_UNKNOWN, TA_CONTROL,
				TA_USER_DEFINED, TA_UNUSED, TA_BYTE };
			t->attr = ty >= 0 && ty < 7 ? attr[ty] : TA_UNDEFINED;
		}
	}
	return 0;
}

static int load_merges(struct shx_tok *tok, const struct shxd_tfile *f,
		       char *err, size_t errlen)
{
	const struct shxd_gguf_kv *kv;
	const uint8_t *p;
	size_t total = 0, pos = 0;
	int e;

	kv = arr_get(f, "tokenizer.ggml.merges", SHXD_GGUF_STRING, &e);
	if (!kv)
		return fail(err, errlen, -EINVAL, e ?
			    "tokenizer.ggml.merges is not an array of strings" :
			    "no tokenizer.ggml.merges (a gpt2 tokenizer needs them)");
	if (kv->arr_len > INT32_MAX / 2)
		return fail(err, errlen, -EINVAL, "tokenizer.ggml.merges: too many");
	p = kv->val;
	for (uint64_t i = 0; i < kv->arr_len; i++) {
		total += le64(p);
		p += 8 + le64(p);
	}
	tok->n_merges = (uint32_t)kv->arr_len;
	tok->m = calloc(tok->n_merges ? tok->n_merges : 1, sizeof(*tok->m));
	tok->mtext = malloc(total + 1);
	tok->mmap_mask = mask_for(tok->n_merges);
	tok->mmap = calloc((size_t)tok->mmap_mask + 1, sizeof(*tok->mmap));
	if (!tok->m || !tok->mtext || !tok->mmap)
		return fail(err, errlen, -ENOMEM, "out of memory");
	p = kv->val;
	for (uint32_t i = 0; i < tok->n_merges; i++) {
		struct tok_merge *m = &tok->m[i];
		size_t n = le64(p);
		const char *w = tok->mtext + pos, *sp;
		uint32_t h;

		memcpy(tok->mtext + pos, p + 8, n);
		p += 8 + n;
		pos += n;
		/* llama.cpp: split at the first space after the first byte;
		 * none gives an empty pair; the first of duplicates wins */
		sp = n > 1 ? memchr(w + 1, ' ', n - 1) : NULL;
		m->loff = (uint32_t)(w - tok->mtext);
		m->llen = sp ? (uint32_t)(sp - w) : 0;
		m->roff = sp ? (uint32_t)(sp + 1 - tok->mtext) : m->loff;
		m->rlen = sp ? (uint32_t)(n - m->llen - 1) : 0;
		m->rank = (int32_t)i;
		if (shx_bpe_rank(tok, tok->mtext + m->loff, m->llen,
				 tok->mtext + m->roff, m->rlen) >= 0)
			continue;
		h = pair_hash(tok->mtext + m->loff, m->llen,
			      tok->mtext + m->roff, m->rlen);
		while (tok->mmap[h & tok->mmap_mask])
			h++;
		tok->mmap[h & tok->mmap_mask] = i + 1;
	}
	return 0;
}

static bool get_bool(const struct shxd_tfile *f, const char *key, bool *v)
{
	int64_t x;

	if (shxd_gguf_get_int(f, key, &x))
		return false;
	*v = x != 0;
	return true;
}

/* The special ids: out-of-range defaults off, then the keys (an id past
 * the vocabulary is ignored, as llama.cpp warns and does). */
static void load_special(struct shx_tok *tok, const struct shxd_tfile *f,
			 int32_t *fim)
{
	struct {
		const char *key;
		int32_t *id;
	} k[] = {
		{ "tokenizer.ggml.bos_token_id", &tok->bos },
		{ "tokenizer.ggml.eos_token_id", &tok->eos },
		{ "tokenizer.ggml.eot_token_id", &tok->eot },
		{ "tokenizer.ggml.eom_token_id", &tok->eom },
		{ "tokenizer.ggml.unknown_token_id", &tok->unk },
		{ "tokenizer.ggml.padding_token_id", &tok->pad },
		{ "tokenizer.ggml.fim_pad_token_id", &fim[0] },
		{ "tokenizer.ggml.fim_rep_token_id", &fim[1] },
		{ "tokenizer.ggml.fim_sep_token_id", &fim[2] },
	};

	for (size_t i = 0; i < ARRAY_SIZE(k); i++) {
		int64_t v;

		if (*k[i].id >= tok->n)
			*k[i].id = -1;
		if (!shxd_gguf_get_int(f, k[i].key, &v) && v >= 0 &&
		    v < tok->n)
			*k[i].id = (int32_t)v;
	}
}

/* The first of these texts the vocabulary has, made a control token. */
static int32_t find_control(struct shx_tok *tok, const char *const *texts,
			    size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int32_t id = shx_tok_lookup(tok, texts[i], strlen(texts[i]));

		if (id >= 0) {
			tok->t[id].attr |= TA_CONTROL;
			return id;
		}
	}
	return -1;
}

#define FIND(tok, id, ...)						\
	do {								\
		static const char *const l_[] = { __VA_ARGS__ };	\
		if ((id) < 0)						\
			(id) = find_control(tok, l_, ARRAY_SIZE(l_));	\
	} while (0)

static bool is_text(const struct shx_tok *tok, int32_t id, const char *s)
{
	return id >= 0 && tok->t[id].len == strlen(s) &&
	       !memcmp(tok->text + tok->t[id].off, s, tok->t[id].len);
}

/* llama.cpp's end-of-generation set and the text-based fixes around it. */
static void find_eog(struct shx_tok *tok, int32_t *fim)
{
	static const char *const eog[] = {
		"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>",
		"<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
		"<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>",
		"[EOT]", "[EOS]", "<|end_of_text|>", "<end_of_utterance>",
		"<eos>", "<turn|>", "<|tool_response>",
		("<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>"),
		"[e~[",
	};
	static const char *const user[] = { "<|channel|>", "<|message|>",
					    "<|start|>", "<|constrain|>" };
	int32_t id, end = -1, s = -1;
	bool ret = false, call = false, flush = false, tool = false;

	FIND(tok, tok->eot, "<|eot_id|>", "<|im_end|>", "<|end|>",
	     "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>",
	     "_<EOT>", "[EOT]",
	     "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
	     "<end_of_utterance>");
	FIND(tok, tok->eom, "<|eom_id|>");
	FIND(tok, fim[0], "<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>",
	     "[PAD]");
	FIND(tok, fim[1], "<|fim_repo|>", "<|repo_name|>", "<fim-repo>",
	     "<REPO>", "<reponame>");
	FIND(tok, fim[2], "<|file_sep|>");
	for (int32_t i = 0; i < tok->n; i++) {
		struct tok_ent *t = &tok->t[i];

		if ((t->attr & TA_CONTROL) && t->len >= 6 &&
		    memmem(tok->text + t->off, t->len, "unused", 6))
			t->attr |= TA_UNUSED;
	}
	for (int i = 0; i < 3; i++)
		if (fim[i] >= 0)
			tok->t[fim[i]].eog = true;
	for (size_t i = 0; i < ARRAY_SIZE(eog); i++) {
		id = shx_tok_lookup(tok, eog[i], strlen(eog[i]));
		if (id >= 0) {
			tok->t[id].eog = true;
			tok->t[id].attr |= TA_CONTROL;
		}
	}
	for (size_t i = 0; i < ARRAY_SIZE(user); i++) {
		id = shx_tok_lookup(tok, user[i], strlen(user[i]));
		if (id >= 0)
			tok->t[id].attr = TA_USER_DEFINED;
	}
	if (tok->eos >= 0)
		tok->t[tok->eos].eog = true;
	if (tok->eot >= 0)
		tok->t[tok->eot].eog = true;
	if (tok->eom >= 0)
		tok->t[tok->eom].eog = true;
	/* o200k_harmony, solar-open: <|end|> is no end there; gemma4:
	 * nor is </s> */
	for (int32_t i = 0; i < tok->n; i++) {
		if (!tok->t[i].eog)
			continue;
		ret |= is_text(tok, i, "<|return|>");
		call |= is_text(tok, i, "<|call|>") || is_text(tok, i, "<|calls|>");
		flush |= is_text(tok, i, "<|flush|>");
		tool |= is_text(tok, i, "<|tool_response>");
		if (is_text(tok, i, "<|end|>"))
			end = i;
		if (is_text(tok, i, "</s>"))
			s = i;
	}
	if (end >= 0 && call && (ret || flush)) {
		tok->t[end].eog = false;
		tok->t[end].attr = TA_USER_DEFINED;
	}
	if (s >= 0 && tool) {
		tok->t[s].eog = false;
		tok->t[s].attr = TA_NORMAL;
	}
}

/* Longest first; equal lengths by id (llama.cpp's std::sort leaves
 * their order open). */
static int special_cmp(const void *a, const void *b, void *arg)
{
	const struct shx_tok *tok = arg;
	const struct tok_ent *x = &tok->t[*(const int32_t *)a];
	const struct tok_ent *y = &tok->t[*(const int32_t *)b];

	if (x->len != y->len)
		return x->len > y->len ? -1 : 1;
	return *(const int32_t *)a < *(const int32_t *)b ? -1 : 1;
}

static int build_special(struct shx_tok *tok)
{
	uint32_t n = 0;

	tok->special = malloc((size_t)tok->n * sizeof(*tok->special));
	if (!tok->special)
		return -ENOMEM;
	for (int32_t i = 0; i < tok->n; i++)
		if (tok->t[i].attr & (TA_CONTROL | TA_USER_DEFINED | TA_UNKNOWN))
			tok->special[n++] = i;
	tok->n_special = n;
	qsort_r(tok->special, n, sizeof(*tok->special), special_cmp, tok);
	return 0;
}

/* Every token's piece with control tokens rendered (llama.cpp's
 * cache_token_to_piece). */
static int build_pieces(struct shx_tok *tok)
{
	size_t cap = 0, pos = 0;

	for (int32_t i = 0; i < tok->n; i++)
		cap += tok->type == SHX_VOCAB_BPE ?
		       shx_bpe_decode_size(tok->t[i].len) : tok->t[i].len;
	tok->piece = malloc(cap + 1);
	if (!tok->piece)
		return -ENOMEM;
	for (int32_t i = 0; i < tok->n; i++) {
		struct tok_ent *t = &tok->t[i];
		const char *s = tok->text + t->off;
		char *o = tok->piece + pos;
		size_t n = 0;

		if (t->attr & (TA_UNKNOWN | TA_CONTROL | TA_USER_DEFINED)) {
			memcpy(o, s, t->len);
			n = t->len;
		} else if ((t->attr & TA_NORMAL) && tok->type == SHX_VOCAB_BPE) {
			n = shx_bpe_decode_text(s, t->len, o);
		} else if (t->attr & TA_NORMAL) {
			/* SPM: U+2581 is a space */
			for (size_t j = 0; j < t->len; j++) {
				if (j + 3 <= t->len &&
				    !memcmp(s + j, "\xe2\x96\x81", 3)) {
					o[n++] = ' ';
					j += 2;
				} else {
					o[n++] = s[j];
				}
			}
		} else if (t->attr & TA_BYTE) {
			/* <0xXX>: strtol of the two characters after "<0x" */
			char hex[3] = { 0 };

			if (t->len >= 5)
				memcpy(hex, s + 3, 2);
			o[n++] = (char)strtol(hex, NULL, 16);
		}
		t->poff = (uint32_t)pos;
		t->plen = (uint32_t)n;
		pos += n;
	}
	return 0;
}

static int load_model(struct shx_tok *tok, const struct shxd_tfile *f,
		      char *err, size_t errlen)
{
	const char *s;
	size_t n;
	int32_t fim[3] = { -1, -1, -1 };
	int e;

	e = shxd_gguf_get_str(f, "tokenizer.ggml.model", &s, &n);
	if (e)
		return fail(err, errlen, -EINVAL, e == -ENOENT ?
			    "no tokenizer.ggml.model: the file has no tokenizer" :
			    "tokenizer.ggml.model is not a string");
	tok->eot = tok->eom = tok->pad = -1;
	if (n == 5 && !memcmp(s, "llama", 5)) {
		tok->type = SHX_VOCAB_SPM;
		tok->bos = 1;
		tok->eos = 2;
		tok->unk = 0;
		tok->add_space_prefix = true;
		tok->add_bos = true;
	} else if (n == 4 && !memcmp(s, "gpt2", 4)) {
		tok->type = SHX_VOCAB_BPE;
		tok->bos = tok->eos = 11;	/* llama.cpp's defaults */
		tok->unk = -1;
		if (shxd_gguf_get_str(f, "tokenizer.ggml.pre", &s, &n))
			s = "default", n = 7;
		e = shx_pre_init(tok, s, n, err, errlen);
		if (e)
			return e;
	} else {
		return fail(err, errlen, -EOPNOTSUPP,
			    "tokenizer.ggml.model '%.*s': only 'llama' (SPM) and 'gpt2' (BPE) are known",
			    (int)(n > 64 ? 64 : n), s);
	}
	get_bool(f, "tokenizer.ggml.add_space_prefix", &tok->add_space_prefix);
	e = load_tokens(tok, f, err, errlen);
	if (!e && tok->type == SHX_VOCAB_BPE)
		e = load_merges(tok, f, err, errlen);
	if (e)
		return e;
	load_special(tok, f, fim);
	get_bool(f, "tokenizer.ggml.add_bos_token", &tok->add_bos);
	get_bool(f, "tokenizer.ggml.add_eos_token", &tok->add_eos);
	if ((tok->add_bos && tok->bos < 0) || (tok->add_eos && tok->eos < 0))
		return fail(err, errlen, -EINVAL,
			    "tokenizer.ggml.add_%s_token is true but there is no %s token",
			    tok->add_bos && tok->bos < 0 ? "bos" : "eos",
			    tok->add_bos && tok->bos < 0 ? "BOS" : "EOS");
	find_eog(tok, fim);
	if (build_special(tok) || build_pieces(tok))
		return fail(err, errlen, -ENOMEM, "out of memory");
	if (!shxd_gguf_get_str(f, "tokenizer.chat_template", &s, &n)) {
		tok->chat_template = strndup(s, n);
		if (!tok->chat_template)
			return fail(err, errlen, -ENOMEM, "out of memory");
	}
	return 0;
}

int shx_tok_load(const void *gguf, size_t len, struct shx_tok **out,
		 char *err, size_t errlen)
{
	struct shxd_tfile f;
	struct shx_tok *tok;
	int e;

	*out = NULL;
	if (!gguf)
		return fail(err, errlen, -EINVAL, "no image");
	e = shxd_gguf_parse(gguf, len, &f, err, errlen);
	if (e)
		return e;
	tok = calloc(1, sizeof(*tok));
	if (!tok) {
		shxd_tfile_free(&f);
		return fail(err, errlen, -ENOMEM, "out of memory");
	}
	e = load_model(tok, &f, err, errlen);
	shxd_tfile_free(&f);
	if (e) {
		shx_tok_free(tok);
		return e;
	}
	*out = tok;
	return 0;
}

int shx_tok_open(const char *path, struct shx_tok **out, char *err,
		 size_t errlen)
{
	struct stat st;
	void *map;
	int fd, e;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		e = -errno;
		return fail(err, errlen, e, "%s: %s", path, strerror(-e));
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || !st.st_size) {
		e = fstat(fd, &st) ? -errno : -EINVAL;
		close(fd);
		return fail(err, errlen, e, "%s: %s", path,
			    e == -EINVAL ? "not a regular, non-empty file" :
			    strerror(-e));
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	e = map == MAP_FAILED ? -errno : 0;
	close(fd);
	if (e)
		return fail(err, errlen, e, "%s: mmap: %s", path, strerror(-e));
	e = shx_tok_load(map, (size_t)st.st_size, out, err, errlen);
	munmap(map, (size_t)st.st_size);
	return e;
}

void shx_tok_free(struct shx_tok *tok)
{
	if (!tok)
		return;
	shx_pre_free(tok);
	free(tok->t);
	free(tok->text);
	free(tok->piece);
	free(tok->map);
	free(tok->m);
	free(tok->mtext);
	free(tok->mmap);
	free(tok->special);
	free(tok->chat_template);
	free(tok);
}

ssize_t shx_tok_piece(const struct shx_tok *tok, int32_t id,
		      unsigned int flags, char *buf, size_t len)
{
	const struct tok_ent *t;

	if (!tok || id < 0 || id >= tok->n)
		return -EINVAL;
	t = &tok->t[id];
	if (!(flags & SHX_TOK_RENDER_SPECIAL) &&
	    (t->attr & (TA_UNKNOWN | TA_CONTROL)))
		return 0;
	if (buf)
		memcpy(buf, tok->piece + t->poff, t->plen < len ? t->plen : len);
	return t->plen;
}

int32_t shx_tok_n_vocab(const struct shx_tok *tok)
{
	return tok->n;
}

int32_t shx_tok_bos(const struct shx_tok *tok)
{
	return tok->bos;
}

int32_t shx_tok_eos(const struct shx_tok *tok)
{
	return tok->eos;
}

int32_t shx_tok_eot(const struct shx_tok *tok)
{
	return tok->eot;
}

bool shx_tok_is_eog(const struct shx_tok *tok, int32_t id)
{
	return id >= 0 && id < tok->n && tok->t[id].eog;
}

const char *shx_tok_chat_template(const struct shx_tok *tok)
{
	return tok->chat_template;
}

int32_t shx_tok_find(const struct shx_tok *tok, const char *text)
{
	return text ? shx_tok_lookup(tok, text, strlen(text)) : -1;
}
