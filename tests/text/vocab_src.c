// SPDX-License-Identifier: MIT
/*
 * npm's vocabularies to GGUF (vocab_src.h). Token types as
 * convert_hf_to_gguf.py sets them: added tokens CONTROL when marked
 * special or written <|...|>, else USER_DEFINED; the rest NORMAL; SPM's
 * <unk> UNKNOWN, <s> and </s> CONTROL, <0xXX> BYTE. llama-tokenizer-js
 * ships LLaMA's pieces without their scores: a piece's score is minus its
 * id, the order LLaMA's ids have by score.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "vocab_src.h"
#include "wfile.h"

enum { T_NORMAL = 1, T_UNKNOWN = 2, T_CONTROL = 3, T_USER = 4, T_BYTE = 6,
       T_UNUSED = 5 };

struct vs {
	char **tok;
	int32_t *type;
	float *score;
	size_t n;
	char **merge;
	size_t nmerge;
	struct wf_wkv kv[24];
	size_t nkv;
};

static void vs_free(struct vs *v)
{
	for (size_t i = 0; i < v->n; i++)
		free(v->tok[i]);
	for (size_t i = 0; i < v->nmerge; i++)
		free(v->merge[i]);
	free(v->tok);
	free(v->type);
	free(v->score);
	free(v->merge);
}

static int vs_alloc(struct vs *v, size_t n, size_t nmerge)
{
	v->n = n;
	v->nmerge = nmerge;
	v->tok = calloc(n, sizeof(*v->tok));
	v->type = calloc(n, sizeof(*v->type));
	v->score = calloc(n, sizeof(*v->score));
	v->merge = calloc(nmerge ? nmerge : 1, sizeof(*v->merge));
	return v->tok && v->type && v->score && v->merge ? 0 : -ENOMEM;
}

static char *read_file(const char *dir, const char *name, size_t *len)
{
	char path[4096];
	FILE *f;
	char *buf = NULL;
	long n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "rb");
	if (!f)
		return NULL;
	if (!fseek(f, 0, SEEK_END) && (n = ftell(f)) >= 0 &&
	    !fseek(f, 0, SEEK_SET) && (buf = malloc((size_t)n + 1))) {
		if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		} else {
			buf[n] = 0;
			*len = (size_t)n;
		}
	}
	fclose(f);
	return buf;
}

static cJSON *read_json(const char *dir, const char *name, int *e)
{
	size_t len;
	char *s = read_file(dir, name, &len);
	cJSON *j;

	if (!s) {
		*e = -ENOENT;
		return NULL;
	}
	j = cJSON_ParseWithLength(s, len);
	free(s);
	*e = j ? 0 : -EINVAL;
	return j;
}

static bool looks_control(const char *s)
{
	size_t n = strlen(s);

	return n >= 4 && !strncmp(s, "<|", 2) && !strcmp(s + n - 2, "|>");
}

static void kv_add(struct vs *v, struct wf_wkv kv)
{
	v->kv[v->nkv++] = kv;
}

static int vs_write(struct vs *v, const char *arch, const char *model,
		    const char *pre, bool scores, const char *out)
{
	kv_add(v, (struct wf_wkv)WF_KV_STR("general.architecture", arch));
	kv_add(v, (struct wf_wkv)WF_KV_STR("tokenizer.ggml.model", model));
	if (pre)
		kv_add(v, (struct wf_wkv)WF_KV_STR("tokenizer.ggml.pre", pre));
	kv_add(v, (struct wf_wkv)WF_KV_STRS("tokenizer.ggml.tokens",
					    (const char **)v->tok, v->n));
	kv_add(v, (struct wf_wkv)WF_KV_ARR("tokenizer.ggml.token_type",
					   WF_GGUF_I32, v->type, v->n));
	if (scores)
		kv_add(v, (struct wf_wkv)WF_KV_ARR("tokenizer.ggml.scores",
						   WF_GGUF_F32, v->score, v->n));
	if (v->nmerge)
		kv_add(v, (struct wf_wkv)WF_KV_STRS("tokenizer.ggml.merges",
						    (const char **)v->merge,
						    v->nmerge));
	return wf_gguf_write(out, v->kv, v->nkv, NULL, 0);
}

static int fail(char *err, size_t errlen, int e, const char *what)
{
	snprintf(err, errlen, "%s", what);
	return e;
}

static char *dup_merge(const cJSON *m)
{
	char *s;

	if (cJSON_IsString(m))
		return strdup(m->valuestring);
	if (cJSON_GetArraySize(m) != 2 ||
	    !cJSON_IsString(cJSON_GetArrayItem(m, 0)) ||
	    !cJSON_IsString(cJSON_GetArrayItem(m, 1)))
		return NULL;
	if (asprintf(&s, "%s %s", cJSON_GetArrayItem(m, 0)->valuestring,
		     cJSON_GetArrayItem(m, 1)->valuestring) < 0)
		return NULL;
	return s;
}

/* Qwen3: tokenizer.json's model.vocab, model.merges, added_tokens; bos,
 * pad <|endoftext|> and eos from tokenizer_config.json, as llama.cpp's
 * converter writes Qwen's. */
static int qwen3(const char *dir, const char *out, char *err, size_t errlen)
{
	cJSON *j, *c, *vocab, *merges, *added, *it;
	struct vs v = { 0 };
	size_t n = 0, i = 0;
	int e;
	const char *eos;

	j = read_json(dir, "tokenizer.json", &e);
	if (!j)
		return e == -ENOENT ? e : fail(err, errlen, e, "tokenizer.json");
	c = read_json(dir, "tokenizer_config.json", &e);
	vocab = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "model"), "vocab");
	merges = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "model"), "merges");
	added = cJSON_GetObjectItem(j, "added_tokens");
	eos = cJSON_GetStringValue(cJSON_GetObjectItem(c, "eos_token"));
	if (!c || !cJSON_IsObject(vocab) || !cJSON_IsArray(merges) ||
	    !cJSON_IsArray(added) || !eos) {
		e = fail(err, errlen, -EINVAL,
			 "tokenizer.json/tokenizer_config.json: not Qwen's");
		goto out;
	}
	cJSON_ArrayForEach(it, vocab)
		if (it->valueint >= 0 && (size_t)it->valueint + 1 > n)
			n = (size_t)it->valueint + 1;
	cJSON_ArrayForEach(it, added) {
		int id = cJSON_GetObjectItem(it, "id")->valueint;

		if (id >= 0 && (size_t)id + 1 > n)
			n = (size_t)id + 1;
	}
	e = vs_alloc(&v, n, (size_t)cJSON_GetArraySize(merges));
	if (e)
		goto out;
	cJSON_ArrayForEach(it, vocab) {
		v.tok[it->valueint] = strdup(it->string);
		v.type[it->valueint] = T_NORMAL;
	}
	cJSON_ArrayForEach(it, added) {
		int id = cJSON_GetObjectItem(it, "id")->valueint;
		const char *s = cJSON_GetStringValue(
			cJSON_GetObjectItem(it, "content"));

		free(v.tok[id]);
		v.tok[id] = strdup(s ? s : "");
		v.type[id] = cJSON_IsTrue(cJSON_GetObjectItem(it, "special")) ||
			     looks_control(v.tok[id]) ? T_CONTROL : T_USER;
	}
	for (i = 0; i < n; i++) {
		if (!v.tok[i]) {	/* the converter's padding */
			if (asprintf(&v.tok[i], "[PAD%zu]", i) < 0)
				v.tok[i] = NULL;
			v.type[i] = T_UNUSED;
		}
		if (!v.tok[i]) {
			e = -ENOMEM;
			goto out;
		}
	}
	i = 0;
	cJSON_ArrayForEach(it, merges)
		if (!(v.merge[i++] = dup_merge(it))) {
			e = fail(err, errlen, -EINVAL, "a merge is not a pair");
			goto out;
		}
	for (i = 0; i < n && strcmp(v.tok[i], eos); i++)
		;
	kv_add(&v, (struct wf_wkv)WF_KV_U32("tokenizer.ggml.eos_token_id", i));
	for (i = 0; i < n && strcmp(v.tok[i], "<|endoftext|>"); i++)
		;
	kv_add(&v, (struct wf_wkv)WF_KV_U32("tokenizer.ggml.bos_token_id", i));
	kv_add(&v, (struct wf_wkv)WF_KV_U32("tokenizer.ggml.padding_token_id",
					    i));
	kv_add(&v, (struct wf_wkv)WF_KV_BOOL("tokenizer.ggml.add_bos_token",
					     false));
	if (cJSON_GetStringValue(cJSON_GetObjectItem(c, "chat_template")))
		kv_add(&v, (struct wf_wkv)WF_KV_STR("tokenizer.chat_template",
			cJSON_GetObjectItem(c, "chat_template")->valuestring));
	e = vs_write(&v, "qwen3", "gpt2", "qwen2", false, out);
	if (e)
		snprintf(err, errlen, "%s: %s", out, strerror(-e));
out:
	vs_free(&v);
	cJSON_Delete(j);
	cJSON_Delete(c);
	return e;
}

/* GPT-2: encoder.json and vocab.bpe (a version line, then merges);
 * <|endoftext|> is BOS and EOS. */
static int gpt2(const char *dir, const char *out, char *err, size_t errlen)
{
	cJSON *j, *it;
	struct vs v = { 0 };
	size_t n = 0, nm = 0, len, i;
	char *bpe, *line, *save = NULL;
	int e;

	j = read_json(dir, "encoder.json", &e);
	if (!j)
		return e == -ENOENT ? e : fail(err, errlen, e, "encoder.json");
	bpe = read_file(dir, "vocab.bpe", &len);
	if (!bpe) {
		cJSON_Delete(j);
		return -ENOENT;
	}
	cJSON_ArrayForEach(it, j)
		if (it->valueint >= 0 && (size_t)it->valueint + 1 > n)
			n = (size_t)it->valueint + 1;
	for (i = 0; i < len; i++)
		nm += bpe[i] == '\n';
	e = vs_alloc(&v, n, nm);
	if (e)
		goto out;
	cJSON_ArrayForEach(it, j) {
		v.tok[it->valueint] = strdup(it->string);
		v.type[it->valueint] = strcmp(it->string, "<|endoftext|>") ?
				       T_NORMAL : T_CONTROL;
	}
	for (i = 0; i < n; i++)
		if (!v.tok[i]) {
			e = fail(err, errlen, -EINVAL, "encoder.json has holes");
			goto out;
		}
	nm = 0;
	for (line = strtok_r(bpe, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		if (strncmp(line, "#version", 8))
			v.merge[nm++] = strdup(line);
	v.nmerge = nm;
	kv_add(&v, (struct wf_wkv)WF_KV_U32("tokenizer.ggml.bos_token_id",
					    n - 1));
	kv_add(&v, (struct wf_wkv)WF_KV_U32("tokenizer.ggml.eos_token_id",
					    n - 1));
	e = vs_write(&v, "gpt2", "gpt2", "gpt-2", false, out);
	if (e)
		snprintf(err, errlen, "%s: %s", out, strerror(-e));
out:
	vs_free(&v);
	cJSON_Delete(j);
	free(bpe);
	return e;
}

/* vocab.json as fetch-vocab.sh writes it from the JavaScript packages. */
static int tokens_merges(const char *dir, struct vs *v, char *err,
			 size_t errlen)
{
	cJSON *j = NULL, *tok, *mer, *it;
	size_t i = 0;
	int e;

	j = read_json(dir, "vocab.json", &e);
	if (!j)
		return e == -ENOENT ? e : fail(err, errlen, e, "vocab.json");
	tok = cJSON_GetObjectItem(j, "tokens");
	mer = cJSON_GetObjectItem(j, "merges");
	e = -EINVAL;
	if (!cJSON_IsArray(tok) || !cJSON_IsArray(mer))
		goto out;
	e = vs_alloc(v, (size_t)cJSON_GetArraySize(tok),
		     (size_t)cJSON_GetArraySize(mer));
	cJSON_ArrayForEach(it, tok)
		v->tok[i++] = strdup(cJSON_IsString(it) ? it->valuestring : "");
	i = 0;
	cJSON_ArrayForEach(it, mer)
		v->merge[i++] = strdup(cJSON_IsString(it) ? it->valuestring :
				       "");
out:
	cJSON_Delete(j);
	return e ? fail(err, errlen, e, "vocab.json: no tokens and merges") : 0;
}

/* Llama 3: 128000 pieces, then 256 added tokens, all control;
 * <|begin_of_text|> BOS, <|end_of_text|> EOS, BOS added. */
static int llama3(const char *dir, const char *out, char *err, size_t errlen)
{
	struct vs v = { 0 };
	int e = tokens_merges(dir, &v, err, errlen);

	if (e)
		goto out;
	for (size_t i = 0; i < v.n; i++)
		v.type[i] = i < 128000 ? T_NORMAL : T_CONTROL;
	kv_add(&v, (struct wf_wkv)WF_KV_U32("tokenizer.ggml.bos_token_id",
					    128000));
	kv_add(&v, (struct wf_wkv)WF_KV_U32("tokenizer.ggml.eos_token_id",
					    128001));
	kv_add(&v, (struct wf_wkv)WF_KV_BOOL("tokenizer.ggml.add_bos_token",
					     true));
	e = vs_write(&v, "llama", "gpt2", "llama-bpe", false, out);
	if (e)
		snprintf(err, errlen, "%s: %s", out, strerror(-e));
out:
	vs_free(&v);
	return e;
}

/* LLaMA (SPM): <unk>, <s>, </s>, 256 <0xXX>, 31741 scored pieces. */
static int llama(const char *dir, const char *out, char *err, size_t errlen)
{
	struct vs v = { 0 };
	int e = tokens_merges(dir, &v, err, errlen);

	if (e)
		goto out;
	for (size_t i = 0; i < v.n; i++) {
		v.type[i] = !i ? T_UNKNOWN : i < 3 ? T_CONTROL :
			    i < 259 ? T_BYTE : T_NORMAL;
		v.score[i] = i < 259 ? 0.0f : -(float)i;
	}
	for (size_t i = 0; i < v.nmerge; i++)
		free(v.merge[i]);
	v.nmerge = 0;
	kv_add(&v, (struct wf_wkv)WF_KV_U32("tokenizer.ggml.bos_token_id", 1));
	kv_add(&v, (struct wf_wkv)WF_KV_U32("tokenizer.ggml.eos_token_id", 2));
	kv_add(&v, (struct wf_wkv)WF_KV_U32("tokenizer.ggml.unknown_token_id",
					    0));
	e = vs_write(&v, "llama", "llama", NULL, true, out);
	if (e)
		snprintf(err, errlen, "%s: %s", out, strerror(-e));
out:
	vs_free(&v);
	return e;
}

const struct vocab_src g_vocab_src[] = {
	{ "qwen3", "Qwen3 (BPE, pre qwen2)", 0, qwen3 },
	{ "gpt2", "GPT-2 (BPE, pre gpt-2)", 0, gpt2 },
	{ "llama3", "Llama 3 (BPE, pre llama-bpe)", 0, llama3 },
	{ "llama", "LLaMA (SPM)", 1, llama },
};
const size_t g_n_vocab_src = sizeof(g_vocab_src) / sizeof(g_vocab_src[0]);
