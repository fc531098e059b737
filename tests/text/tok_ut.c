// SPDX-License-Identifier: MIT
/*
 * text/tokenizer.h without a peer: small vocabularies written with
 * wfile.h, the errors of bad files and bad arguments, the ids' count past
 * max, special-token parsing, and the streamed decode at UTF-8 boundaries
 * (a character split over byte tokens, an invalid byte, an unfinished
 * character at the end, too small a buffer, SPM's first space).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <CUnit/Basic.h>

#include "../t_cunit.h"
#include "tokenizer.h"
#include "wfile.h"

/* SPM: <unk> <s> </s>, 256 byte tokens, then pieces (scores by order). */
static const char *const g_pieces[] = {
	"\xe2\x96\x81", "\xe2\x96\x81h", "he", "ll", "\xe2\x96\x81he",
	"llo", "\xe2\x96\x81hello", "<user>",
};
#define NSPM (259 + sizeof(g_pieces) / sizeof(g_pieces[0]))

static char g_text[NSPM][16];
static const char *g_tok[NSPM];
static float g_score[NSPM];
static int32_t g_type[NSPM];

static void *spm_image(size_t *len, const char *model, int32_t bos,
		       int with_tokens)
{
	struct wf_wkv kv[] = {
		WF_KV_STR("general.architecture", "llama"),
		WF_KV_STR("tokenizer.ggml.model", model),
		WF_KV_U32("tokenizer.ggml.bos_token_id", bos),
		WF_KV_STR("tokenizer.chat_template", "{{ x }}"),
		WF_KV_STRS("tokenizer.ggml.tokens", g_tok, NSPM),
		WF_KV_ARR("tokenizer.ggml.scores", WF_GGUF_F32, g_score, NSPM),
		WF_KV_ARR("tokenizer.ggml.token_type", WF_GGUF_I32, g_type,
			  NSPM),
	};

	for (size_t i = 0; i < NSPM; i++) {
		if (i < 3)
			strcpy(g_text[i], (const char *[]){ "<unk>", "<s>",
							    "</s>" }[i]);
		else if (i < 259)
			snprintf(g_text[i], sizeof(g_text[i]), "<0x%02zX>",
				 i - 3);
		else
			strcpy(g_text[i], g_pieces[i - 259]);
		g_tok[i] = g_text[i];
		g_score[i] = i < 259 ? 0 : -(float)i;
		g_type[i] = !i ? 2 : i < 3 ? 3 : i < 259 ? 6 :
			    i == NSPM - 1 ? 4 : 1;
	}
	return wf_gguf_image(kv, with_tokens ? 7 : 4, NULL, 0, len);
}

static struct shx_tok *spm(void)
{
	struct shx_tok *tok = NULL;
	char err[256];
	size_t len;
	void *img = spm_image(&len, "llama", 1, 1);

	CU_ASSERT_EQUAL(shx_tok_load(img, len, &tok, err, sizeof(err)), 0);
	free(img);
	return tok;
}

static void t_errors(void)
{
	struct shx_tok *tok = (void *)1;
	char err[256] = "";
	size_t len;
	void *img;

	CU_ASSERT_EQUAL(shx_tok_load("GGUF", 4, &tok, err, sizeof(err)),
			-EINVAL);
	CU_ASSERT_PTR_NULL(tok);
	img = spm_image(&len, "llama", 1, 0);
	CU_ASSERT_EQUAL(shx_tok_load(img, len, &tok, err, sizeof(err)),
			-EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "tokenizer.ggml.tokens"));
	free(img);
	img = spm_image(&len, "bert", 1, 1);
	CU_ASSERT_EQUAL(shx_tok_load(img, len, &tok, err, sizeof(err)),
			-EOPNOTSUPP);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "bert"));
	free(img);
	/* gpt2 without merges */
	img = spm_image(&len, "gpt2", 1, 1);
	CU_ASSERT_EQUAL(shx_tok_load(img, len, &tok, err, sizeof(err)),
			-EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "merges"));
	free(img);
	/* a BOS id past the vocabulary: none, but SPM adds BOS */
	img = spm_image(&len, "llama", 100000, 1);
	CU_ASSERT_EQUAL(shx_tok_load(img, len, &tok, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(shx_tok_bos(tok), 1);	/* the default stays */
	shx_tok_free(tok);
	free(img);
	CU_ASSERT_EQUAL(shx_tok_open("/nonexistent", &tok, err, sizeof(err)),
			-ENOENT);
	CU_ASSERT_EQUAL(shx_tok_open("/tmp", &tok, err, sizeof(err)),
			-EINVAL);
}

static void t_encode(void)
{
	struct shx_tok *tok = spm();
	int32_t ids[16];

	CU_ASSERT_FATAL(tok != NULL);
	CU_ASSERT_EQUAL(shx_tok_n_vocab(tok), (int32_t)NSPM);
	/* " hello": SPM's space, then the pieces of highest score */
	CU_ASSERT_EQUAL(shx_tok_encode(tok, "hello", 5, SHX_TOK_ADD_SPECIAL,
				       ids, 16), 2);
	CU_ASSERT_EQUAL(ids[0], 1);
	CU_ASSERT_EQUAL(ids[1], shx_tok_find(tok, "\xe2\x96\x81hello"));
	/* past max: the full count, max written */
	ids[1] = -7;
	CU_ASSERT_EQUAL(shx_tok_encode(tok, "hello", 5, SHX_TOK_ADD_SPECIAL,
				       ids, 1), 2);
	CU_ASSERT_EQUAL(ids[1], -7);
	CU_ASSERT_EQUAL(shx_tok_encode(tok, "hello", 5, 0, NULL, 0), 1);
	/* no piece for 'x': its byte token */
	CU_ASSERT_EQUAL(shx_tok_encode(tok, "x", 1, 0, ids, 16), 2);
	CU_ASSERT_EQUAL(ids[1], 3 + 'x');
	/* control text only with PARSE_SPECIAL; user-defined always */
	CU_ASSERT_EQUAL(shx_tok_encode(tok, "</s>", 4, SHX_TOK_PARSE_SPECIAL,
				       ids, 16), 1);
	CU_ASSERT_EQUAL(ids[0], 2);
	CU_ASSERT(shx_tok_encode(tok, "</s>", 4, 0, ids, 16) > 1);
	CU_ASSERT_EQUAL(shx_tok_encode(tok, "<user>", 6, 0, ids, 16), 1);
	CU_ASSERT_EQUAL(ids[0], (int32_t)NSPM - 1);
	CU_ASSERT_EQUAL(shx_tok_encode(tok, "", 0, SHX_TOK_ADD_SPECIAL, ids,
				       16), 1);
	CU_ASSERT_EQUAL(shx_tok_encode(tok, NULL, 3, 0, ids, 16), -EINVAL);
	CU_ASSERT_EQUAL(shx_tok_encode(tok, NULL, 0, 0, ids, 16), 0);
	/* invalid UTF-8 goes through as byte tokens */
	CU_ASSERT_EQUAL(shx_tok_encode(tok, "\xff\xc3", 2, 0, ids, 16), 3);
	CU_ASSERT_EQUAL(ids[1], 3 + 0xff);
	CU_ASSERT(shx_tok_is_eog(tok, 2));
	CU_ASSERT(!shx_tok_is_eog(tok, 1));
	CU_ASSERT(!shx_tok_is_eog(tok, -1));
	CU_ASSERT_EQUAL(shx_tok_eot(tok), -1);
	CU_ASSERT_STRING_EQUAL(shx_tok_chat_template(tok), "{{ x }}");
	CU_ASSERT_EQUAL(shx_tok_find(tok, "nope"), -1);
	shx_tok_free(tok);
}

static void t_piece(void)
{
	struct shx_tok *tok = spm();
	char buf[16];

	CU_ASSERT_FATAL(tok != NULL);
	CU_ASSERT_EQUAL(shx_tok_piece(tok, 1, 0, buf, sizeof(buf)), 0);
	CU_ASSERT_EQUAL(shx_tok_piece(tok, 1, SHX_TOK_RENDER_SPECIAL, buf,
				      sizeof(buf)), 3);
	CU_ASSERT(!memcmp(buf, "<s>", 3));
	CU_ASSERT_EQUAL(shx_tok_piece(tok, shx_tok_find(tok, "\xe2\x96\x81hello"),
				      0, buf, 2), 6);
	CU_ASSERT(!memcmp(buf, " h", 2));
	CU_ASSERT_EQUAL(shx_tok_piece(tok, 3 + 0x41, 0, buf, sizeof(buf)), 1);
	CU_ASSERT_EQUAL(buf[0], 'A');
	CU_ASSERT_EQUAL(shx_tok_piece(tok, -1, 0, buf, sizeof(buf)), -EINVAL);
	CU_ASSERT_EQUAL(shx_tok_piece(tok, (int32_t)NSPM, 0, buf, sizeof(buf)),
			-EINVAL);
	shx_tok_free(tok);
}

static void t_detok(void)
{
	struct shx_tok *tok = spm();
	struct shx_detok d;
	char out[32];
	int32_t hello;

	CU_ASSERT_FATAL(tok != NULL);
	hello = shx_tok_find(tok, "\xe2\x96\x81hello");
	/* the first piece's space goes, the next's stays */
	shx_detok_init(&d, tok, 0);
	CU_ASSERT_EQUAL(shx_detok_push(&d, hello, out, sizeof(out)), 5);
	CU_ASSERT(!memcmp(out, "hello", 5));
	CU_ASSERT_EQUAL(shx_detok_push(&d, hello, out, sizeof(out)), 6);
	CU_ASSERT(!memcmp(out, " hello", 6));
	shx_detok_init(&d, tok, SHX_DETOK_CONTINUE);
	CU_ASSERT_EQUAL(shx_detok_push(&d, hello, out, sizeof(out)), 6);
	/* the euro sign over three byte tokens: nothing until whole */
	shx_detok_init(&d, tok, 0);
	CU_ASSERT_EQUAL(shx_detok_push(&d, 3 + 0xE2, out, sizeof(out)), 0);
	CU_ASSERT_EQUAL(shx_detok_push(&d, 3 + 0x82, out, sizeof(out)), 0);
	CU_ASSERT_EQUAL(shx_detok_push(&d, 3 + 0xAC, out, sizeof(out)), 3);
	CU_ASSERT(!memcmp(out, "\xe2\x82\xac", 3));
	/* a lead byte then ASCII: U+FFFD for it, then the ASCII */
	CU_ASSERT_EQUAL(shx_detok_push(&d, 3 + 0xE2, out, sizeof(out)), 0);
	CU_ASSERT_EQUAL(shx_detok_push(&d, 3 + 'a', out, sizeof(out)), 4);
	CU_ASSERT(!memcmp(out, "\xef\xbf\xbd" "a", 4));
	/* a stray continuation byte and 0xFF: one U+FFFD each */
	CU_ASSERT_EQUAL(shx_detok_push(&d, 3 + 0x80, out, sizeof(out)), 3);
	CU_ASSERT_EQUAL(shx_detok_push(&d, 3 + 0xFF, out, sizeof(out)), 3);
	/* too small: -ENOBUFS, nothing consumed */
	CU_ASSERT_EQUAL(shx_detok_push(&d, 3 + 0xF0, out, sizeof(out)), 0);
	CU_ASSERT_EQUAL(shx_detok_push(&d, 3 + 'b', out, 3), -ENOBUFS);
	CU_ASSERT_EQUAL(shx_detok_push(&d, 3 + 'b', out, 4), 4);
	/* flush: an unfinished character as U+FFFD */
	CU_ASSERT_EQUAL(shx_detok_push(&d, 3 + 0xC3, out, sizeof(out)), 0);
	CU_ASSERT_EQUAL(shx_detok_flush(&d, out, 2), -ENOBUFS);
	CU_ASSERT_EQUAL(shx_detok_flush(&d, out, sizeof(out)), 3);
	CU_ASSERT_EQUAL(shx_detok_flush(&d, out, sizeof(out)), 0);
	/* control tokens: empty unless rendered */
	CU_ASSERT_EQUAL(shx_detok_push(&d, 2, out, sizeof(out)), 0);
	shx_detok_init(&d, tok, SHX_TOK_RENDER_SPECIAL);
	CU_ASSERT_EQUAL(shx_detok_push(&d, 2, out, sizeof(out)), 4);
	CU_ASSERT_EQUAL(shx_detok_push(&d, -3, out, sizeof(out)), -EINVAL);
	shx_tok_free(tok);
}

int main(void)
{
	static const struct t_test tests[] = {
		{ "errors", t_errors },
		{ "encode", t_encode },
		{ "piece", t_piece },
		{ "detok", t_detok },
	};

	return T_RUN_SUITE("tokenizer", NULL, NULL, tests);
}
