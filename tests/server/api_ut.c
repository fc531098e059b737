// SPDX-License-Identifier: MIT
/*
 * server/api.c on a vocabulary whose pieces outgrow fixed buffers
 * (tests/text/long_vocab.h): /detokenize gives every piece's text, ids the
 * model has past the tokenizer's vocabulary add none, and logprobs name a
 * long token and a token of bad bytes whole, in chat's and completions'
 * shapes; without a tokenizer, "token_id:N".
 */
#include <stdlib.h>
#include <string.h>
#include <CUnit/Basic.h>
#include <cjson/cJSON.h>

#include "../t_cunit.h"
#include "../text/long_vocab.h"
#include "api.h"
#include "tokenizer.h"

#define N_MODEL (LV_N + 3)	/* the model's rows past the tokenizer's */

static struct shx_tok *g_tok;
static char g_long[LONG_A_LEN + 1], g_bad_hex[sizeof("bytes:") +
					       4 * BAD_LEN];

static int setup(void)
{
	char err[256];
	size_t len, k;
	void *img = long_vocab_image(&len);
	int ret = img ? shx_tok_load(img, len, &g_tok, err, sizeof(err)) : 1;

	free(img);
	memset(g_long, 'a', LONG_A_LEN);
	k = (size_t)sprintf(g_bad_hex, "bytes:");
	for (size_t i = 0; i < BAD_LEN; i++)
		k += (size_t)sprintf(g_bad_hex + k, "\\x80");
	return ret;
}

static int cleanup(void)
{
	shx_tok_free(g_tok);
	return 0;
}

static void t_detokenize(void)
{
	static const char body[] = "{\"tokens\": [2, 3, 6, 0, 2]}";
	const struct api_ctx c = { .n_vocab = N_MODEL, .max_ctx = 64,
				   .max_kv = 64, .tok = g_tok, .tmpl = -1 };
	struct api_err e = { 0 };
	char *out = api_tokenize(body, strlen(body), &c, true, &e);
	cJSON *o = out ? cJSON_Parse(out) : NULL;
	const char *s = cJSON_GetStringValue(
		cJSON_GetObjectItemCaseSensitive(o, "content"));
	size_t bad = 3 * BAD_LEN;

	CU_ASSERT_FATAL(s != NULL);
	CU_ASSERT(strlen(s) == 2 * LONG_A_LEN + bad + 1 &&
		  strspn(s, "a") == LONG_A_LEN &&
		  !memcmp(s + LONG_A_LEN, "\xef\xbf\xbd", 3) &&
		  strspn(s + LONG_A_LEN + bad, "a") == LONG_A_LEN + 1);
	cJSON_Delete(o);
	free(out);
}

/* A reply with one token, LV_LONG_A, its top logprob LV_BAD: parsed. */
static cJSON *reply(bool chat, const struct shx_tok *tok, size_t *off)
{
	const struct api_req q = { .chat = chat, .logprobs = true,
				   .n_top = 1 };
	const struct api_meta m = { .id = "x", .model = "m", .tok = tok };
	static const int32_t ids[] = { LV_LONG_A };
	static const struct shx_logprob lp[] = {
		{ LV_LONG_A, -0.25f }, { LV_BAD, -2.0f },
	};
	const struct api_toks t = { .ids = ids, .n = 1, .lp = lp, .off = off };
	char *out = api_completion_json(&q, &m, &t, "text", "length");
	cJSON *o = out ? cJSON_Parse(out) : NULL;

	free(out);
	return o;
}

static cJSON *get(const cJSON *o, const char *path)
{
	char key[32];

	while (o && *path) {
		size_t n = strcspn(path, ".");

		memcpy(key, path, n);
		key[n] = '\0';
		o = key[0] >= '0' && key[0] <= '9' ?
		    cJSON_GetArrayItem(o, atoi(key)) :
		    cJSON_GetObjectItemCaseSensitive(o, key);
		path += n + !!path[n];
	}
	return (cJSON *)o;
}

/* Each byte of a "bytes" array is v. */
static bool bytes_are(const cJSON *a, int n, int v)
{
	const cJSON *b;

	if (cJSON_GetArraySize(a) != n)
		return false;
	cJSON_ArrayForEach(b, a)
		if (!cJSON_IsNumber(b) || b->valueint != v)
			return false;
	return true;
}

static void t_logprobs_chat(void)
{
	size_t off = 0;
	cJSON *root = reply(true, g_tok, &off);
	cJSON *ch = get(root, "choices.0");
	cJSON *top = get(ch, "logprobs.content.0.top_logprobs.0");

	CU_ASSERT_FATAL(root != NULL);
	CU_ASSERT_STRING_EQUAL(cJSON_GetStringValue(
		get(ch, "logprobs.content.0.token")), g_long);
	CU_ASSERT(bytes_are(get(ch, "logprobs.content.0.bytes"), LONG_A_LEN,
			    'a'));
	CU_ASSERT_STRING_EQUAL(cJSON_GetStringValue(get(top, "token")),
			       g_bad_hex);
	CU_ASSERT(bytes_are(get(top, "bytes"), BAD_LEN, 0x80));
	cJSON_Delete(root);
	/* no tokenizer: the ids, no bytes */
	root = reply(true, NULL, &off);
	ch = get(root, "choices.0");
	CU_ASSERT_FATAL(root != NULL);
	CU_ASSERT_STRING_EQUAL(cJSON_GetStringValue(
		get(ch, "logprobs.content.0.token")), "token_id:2");
	CU_ASSERT(cJSON_IsNull(get(ch, "logprobs.content.0.bytes")));
	cJSON_Delete(root);
}

static void t_logprobs_completions(void)
{
	size_t off = 7;
	cJSON *root = reply(false, g_tok, &off);
	cJSON *lp = get(root, "choices.0.logprobs");

	CU_ASSERT_FATAL(lp != NULL);
	CU_ASSERT_STRING_EQUAL(cJSON_GetStringValue(get(lp, "tokens.0")),
			       g_long);
	CU_ASSERT(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(
		get(lp, "top_logprobs.0"), g_bad_hex)));
	CU_ASSERT_EQUAL(cJSON_GetNumberValue(get(lp, "text_offset.0")), 7);
	CU_ASSERT_EQUAL(off, 7 + LONG_A_LEN);
	cJSON_Delete(root);
}

int main(void)
{
	static const struct t_test tests[] = {
		{ "detokenize", t_detokenize },
		{ "logprobs chat", t_logprobs_chat },
		{ "logprobs completions", t_logprobs_completions },
	};

	return T_RUN_SUITE("api", setup, cleanup, tests);
}
