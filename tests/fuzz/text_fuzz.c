// SPDX-License-Identifier: MIT
/*
 * libFuzzer: what a client sends the server and what the tokenizer makes
 * of it (make fuzz). The first byte picks the path, the second its flags,
 * the rest is the input: text encoded then decoded, ids decoded as a
 * stream, a completions or chat body through api_parse, a /tokenize or
 * /detokenize body, ids and logprobs through the reply builders, a
 * vocabulary of the input's lines loaded and used, a chat template's text
 * detected and applied. Besides the sanitizers it checks the promises:
 * ids inside the vocabulary, text out always whole UTF-8, a stream that
 * never runs out of the room shx_detok_room gives and says what
 * shx_tok_decode says, a parsed request inside its limits, an error with
 * its status and message, replies that are JSON, a vocabulary that loads
 * or says why, a prompt of the length the template says.
 *
 * The vocabulary: the GGUF named by SHX_FUZZ_VOCAB (make fuzz passes the
 * real ones tests/text/tok_compare wrote), else one of long pieces
 * (tests/text/long_vocab.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "api.h"
#include "chat.h"
#include "long_vocab.h"
#include "tokenizer.h"
#include "utf8.h"
#include "wfile.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { P_ENCODE, P_STREAM, P_COMPLETIONS, P_CHAT, P_TOKENIZE, P_REPLY,
       P_VOCAB, P_TEMPLATE, P_N };

static struct shx_tok *g_tok;
static int32_t g_nv;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *path = getenv("SHX_FUZZ_VOCAB");
	char err[256];
	size_t len;
	void *img;
	int ret;

	(void)argc;
	(void)argv;
	if (path && *path) {
		ret = shx_tok_open(path, &g_tok, err, sizeof(err));
	} else {
		img = long_vocab_image(&len);
		ret = img ? shx_tok_load(img, len, &g_tok, err, sizeof(err)) :
			    -ENOMEM;
		free(img);
	}
	if (ret)
		abort();
	g_nv = shx_tok_n_vocab(g_tok);
	return 0;
}

static void whole_utf8(const char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		int k = shx_utf8_check((const uint8_t *)s + i, n - i);

		if (k <= 0)
			abort();
		i += (size_t)k;
	}
}

/* Ids from two bytes each: the vocabulary, and -1 and n_vocab + 1. */
static size_t ids_of(const uint8_t *d, size_t n, int32_t *ids)
{
	size_t k = 0;

	for (; 2 * k + 1 < n; k++)
		ids[k] = (int32_t)((d[2 * k] | d[2 * k + 1] << 8) %
				   ((uint32_t)g_nv + 3)) - 1;
	return k;
}

static void encode_with(const struct shx_tok *tok, const char *s, size_t n,
			unsigned int flags)
{
	ssize_t k = shx_tok_encode(tok, s, n, flags, NULL, 0), r;
	int32_t nv = shx_tok_n_vocab(tok);
	int32_t *ids;
	size_t len;
	char *t;

	if (k < 0) {
		if (k != -ENOMEM && k != -EIO)
			abort();
		return;
	}
	ids = malloc(((size_t)k + 1) * sizeof(*ids));
	if (!ids)
		return;
	r = shx_tok_encode(tok, s, n, flags, ids, (size_t)k);
	if (r != k)
		abort();
	for (ssize_t i = 0; i < k; i++)
		if (ids[i] < 0 || ids[i] >= nv)
			abort();
	t = shx_tok_decode(tok, ids, (size_t)k, 0, &len);
	if (t) {
		whole_utf8(t, len);
		free(t);
	}
	free(ids);
}

/*
 * A vocabulary of the input's lines (at most 256): SPM or byte-level BPE
 * by flags, "<...>" lines control tokens (and "<0xNN>" SPM's byte tokens),
 * lines with one inner space also merges; loaded, then every token's text
 * decoded and the input encoded.
 */
static void vocab(const char *s, size_t n, uint8_t flags)
{
	enum { LINES = 256 };
	const char *tok[LINES], *merge[LINES];
	int32_t type[LINES];
	size_t nt = 0, nm = 0, len;
	char *lines = malloc(n + 1), err[256];
	struct shx_tok *t = NULL;
	uint8_t *img;
	int ret;

	if (!lines)
		return;
	memcpy(lines, s, n);
	lines[n] = '\0';
	for (char *p = lines, *e; p && nt < LINES; p = e ? e + 1 : NULL) {
		size_t l;

		e = strchr(p, '\n');
		if (e)
			*e = '\0';
		l = strlen(p);
		tok[nt] = p;
		type[nt] = l > 2 && p[0] == '<' && p[l - 1] == '>' ?
			   (l == 6 && !memcmp(p, "<0x", 3) ? 6 : 3) : 1;
		if (strchr(p, ' ') && p[0] != ' ' && p[l - 1] != ' ')
			merge[nm++] = p;
		nt++;
	}
	{
		const struct wf_wkv kv[] = {
			WF_KV_STR("general.architecture", "llama"),
			WF_KV_STR("tokenizer.ggml.model",
				  flags & 1 ? "gpt2" : "llama"),
			WF_KV_STR("tokenizer.ggml.pre",
				  flags & 2 ? "llama-bpe" : "qwen2"),
			WF_KV_U32("tokenizer.ggml.eos_token_id", flags >> 2),
			WF_KV_STRS("tokenizer.ggml.tokens", tok, nt),
			WF_KV_ARR("tokenizer.ggml.token_type", WF_GGUF_I32,
				  type, nt),
			WF_KV_STRS("tokenizer.ggml.merges", merge, nm),
		};

		img = wf_gguf_image(kv, sizeof(kv) / sizeof(kv[0]), NULL, 0,
				    &len);
	}
	ret = img ? shx_tok_load(img, len, &t, err, sizeof(err)) : -ENOMEM;
	free(img);
	if (ret) {
		if ((ret != -EINVAL && ret != -ENOMEM && ret != -EOPNOTSUPP) ||
		    (ret == -EINVAL && !err[0]))
			abort();
	} else {
		int32_t *ids = malloc((size_t)shx_tok_n_vocab(t) *
				      sizeof(*ids));
		char *txt;

		for (int32_t i = 0; ids && i < shx_tok_n_vocab(t); i++)
			ids[i] = i;
		txt = ids ? shx_tok_decode(t, ids, (size_t)shx_tok_n_vocab(t),
					   SHX_TOK_RENDER_SPECIAL, &len) :
			    NULL;
		if (txt)
			whole_utf8(txt, len);
		free(txt);
		free(ids);
		encode_with(t, s, n, SHX_TOK_ADD_SPECIAL |
				     SHX_TOK_PARSE_SPECIAL);
		shx_tok_free(t);
	}
	free(lines);
}

/* A template's text (to its first NUL) detected, or a family by flags,
 * applied to the rest split at NULs as role, content, role, ...: the
 * length snprintf-like, the prompt that long. */
static void chat_template(const char *s, size_t n, uint8_t flags)
{
	enum { MSGS = 8 };
	static const char *const roles[] = { "system", "user", "assistant",
					     "tool" };
	struct shx_chat_msg m[MSGS];
	enum shx_chat_tmpl t = (enum shx_chat_tmpl)(flags % SHX_CHAT_N);
	char *z = malloc(n + 2), *p, *buf;
	size_t nm = 0;
	ssize_t k, k2;

	if (!z)
		return;
	memcpy(z, s, n);
	z[n] = z[n + 1] = '\0';
	k = shx_chat_detect(z, &t);
	if (k && k != -ENOENT)
		abort();
	p = z + strlen(z) + 1;
	while (p < z + n + 1 && nm < MSGS) {
		m[nm].role = flags & 0x80 ? p : roles[nm % 4];
		if (flags & 0x80)
			p += strlen(p) + 1;
		m[nm].content = p < z + n + 1 ? p : "";
		p += strlen(p) + 1;
		nm++;
	}
	k = shx_chat_apply(t, m, nm, flags & 0x40, NULL, 0);
	if (k >= 0) {
		buf = malloc((size_t)k + 1);
		k2 = buf ? shx_chat_apply(t, m, nm, flags & 0x40, buf,
					  (size_t)k + 1) : k;
		if (k2 != k || (buf && strlen(buf) != (size_t)k))
			abort();
		free(buf);
	} else if (k != -EINVAL) {
		abort();
	}
	free(z);
}

static void stream(const uint8_t *d, size_t n, unsigned int flags)
{
	int32_t *ids = malloc((n / 2 + 1) * sizeof(*ids));
	size_t k = ids ? ids_of(d, n, ids) : 0, len, o = 0;
	struct shx_detok dt;
	char *whole, *s;
	ssize_t r;

	if (!ids)
		return;
	flags &= SHX_TOK_RENDER_SPECIAL | SHX_DETOK_CONTINUE;
	whole = shx_tok_decode(g_tok, ids, k, flags, &len);
	s = whole ? malloc(len + 1) : NULL;
	shx_detok_init(&dt, g_tok, flags);
	for (size_t i = 0; s && i <= k; i++) {
		size_t room = i < k ? shx_detok_room(&dt, ids[i]) : 3;
		bool bad = i < k && (ids[i] < 0 || ids[i] >= g_nv);
		char *buf = malloc(room + 1);

		if (!buf)
			break;
		r = i < k ? shx_detok_push(&dt, ids[i], buf, room) :
			    shx_detok_flush(&dt, buf, room);
		if (bad ? r != -EINVAL : r < 0 || o + (size_t)r > len)
			abort();
		if (r > 0) {
			whole_utf8(buf, (size_t)r);
			memcpy(s + o, buf, (size_t)r);
			o += (size_t)r;
		}
		free(buf);
		if (i == k && (o != len || memcmp(s, whole, len)))
			abort();
	}
	free(s);
	free(whole);
	free(ids);
}

static void request(const char *body, size_t n, bool chat, uint8_t flags)
{
	const struct api_ctx c = {
		.n_vocab = (uint32_t)g_nv + (flags & 3), .max_ctx = 256,
		.max_kv = 512, .tok = flags & 4 ? NULL : g_tok,
		.tmpl = (int)(flags >> 3) % (SHX_CHAT_N + 1) - 1,
	};
	struct api_err e = { 0 };
	struct api_req q;
	char *js;

	if (api_parse(body, n, chat, &c, &q, &e)) {
		if (e.status < 400 || e.status > 599 || !e.msg[0] || q.ids)
			abort();
		js = api_error_json(&e);
		free(js);
		return;
	}
	if (!q.n_ids || q.n_ids + q.max_tokens > c.max_ctx)
		abort();
	for (uint32_t i = 0; i < q.n_ids; i++)
		if (q.ids[i] < 0 || (uint32_t)q.ids[i] >= c.n_vocab)
			abort();
	api_req_free(&q);
}

static void tokenize(const char *body, size_t n, uint8_t flags)
{
	const struct api_ctx c = { .n_vocab = (uint32_t)g_nv + 2,
				   .max_ctx = 256, .max_kv = 512,
				   .tok = g_tok, .tmpl = -1 };
	struct api_err e = { 0 };
	char *js = api_tokenize(body, n, &c, flags & 1, &e);
	cJSON *o;

	if (!js) {
		if (e.status && (!e.msg[0] || e.status < 400))
			abort();
		return;
	}
	o = cJSON_Parse(js);
	if (!o)
		abort();
	cJSON_Delete(o);
	free(js);
}

/* The ids, each with its logprob and n_top more, through both builders. */
static void reply(const uint8_t *d, size_t n, uint8_t flags)
{
	struct api_req q = { .chat = flags & 1, .logprobs = true,
			     .return_tokens = flags & 2,
			     .n_top = (flags >> 2) % 4 };
	const struct api_meta m = { .id = "f", .model = "m",
				    .tok = flags & 0x40 ? NULL : g_tok };
	uint32_t stride = 1 + q.n_top, k;
	int32_t *ids = malloc((n / 2 + 1) * sizeof(*ids));
	struct shx_logprob *lp;
	size_t off = 0;
	char *js[2];

	k = ids ? (uint32_t)ids_of(d, n, ids) / stride : 0;
	lp = malloc(((size_t)k * stride + 1) * sizeof(*lp));
	if (lp) {
		struct api_toks t = { .ids = ids, .n = k, .lp = lp,
				      .off = &off };

		for (size_t i = 0; i < (size_t)k * stride; i++)
			lp[i] = (struct shx_logprob){ ids[i], -(float)i };
		js[0] = api_completion_json(&q, &m, &t, "text", "length");
		js[1] = api_chunk_json(&q, &m, &t, "", flags & 0x80, NULL,
				       NULL);
		for (int i = 0; i < 2; i++) {
			cJSON *o = js[i] ? cJSON_Parse(js[i]) : NULL;

			if (js[i] && !o)
				abort();
			cJSON_Delete(o);
			free(js[i]);
		}
	}
	free(lp);
	free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *body = (const char *)data + 2;
	size_t n = size - 2;

	if (size < 2)
		return 0;
	switch (data[0] % P_N) {
	case P_ENCODE:
		encode_with(g_tok, body, n, data[1] & (SHX_TOK_ADD_SPECIAL |
						       SHX_TOK_PARSE_SPECIAL));
		break;
	case P_VOCAB:
		vocab(body, n, data[1]);
		break;
	case P_TEMPLATE:
		chat_template(body, n, data[1]);
		break;
	case P_STREAM:
		stream(data + 2, n, data[1]);
		break;
	case P_COMPLETIONS:
	case P_CHAT:
		request(body, n, data[0] % P_N == P_CHAT, data[1]);
		break;
	case P_TOKENIZE:
		tokenize(body, n, data[1]);
		break;
	default:
		reply(data + 2, n, data[1]);
		break;
	}
	return 0;
}
