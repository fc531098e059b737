// SPDX-License-Identifier: MIT
/*
 * libFuzzer: what a client sends the server and what the tokenizer makes
 * of it (make fuzz). The first byte picks the path, the second its flags,
 * the rest is the input: text encoded then decoded, ids decoded as a
 * stream, a completions or chat body through api_parse, a /tokenize or
 * /detokenize body, ids and logprobs through the reply builders. Besides
 * the sanitizers it checks the promises: ids inside the vocabulary, text
 * out always whole UTF-8, a stream that never runs out of the room
 * shx_detok_room gives and says what shx_tok_decode says, a parsed
 * request inside its limits, an error with its status and message, and
 * replies that are JSON.
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

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { P_ENCODE, P_STREAM, P_COMPLETIONS, P_CHAT, P_TOKENIZE, P_REPLY,
       P_N };

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

static void encode(const char *s, size_t n, unsigned int flags)
{
	ssize_t k = shx_tok_encode(g_tok, s, n, flags, NULL, 0), r;
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
	r = shx_tok_encode(g_tok, s, n, flags, ids, (size_t)k);
	if (r != k)
		abort();
	for (ssize_t i = 0; i < k; i++)
		if (ids[i] < 0 || ids[i] >= g_nv)
			abort();
	t = shx_tok_decode(g_tok, ids, (size_t)k, 0, &len);
	if (t) {
		whole_utf8(t, len);
		free(t);
	}
	free(ids);
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
		encode(body, n, data[1] & (SHX_TOK_ADD_SPECIAL |
					   SHX_TOK_PARSE_SPECIAL));
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
