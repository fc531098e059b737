// SPDX-License-Identifier: MIT
/*
 * text/tokenizer.h without a peer: small vocabularies written with
 * wfile.h, the errors of bad files and bad arguments, the ids' count past
 * max, special-token parsing, and the streamed decode at UTF-8 boundaries
 * (a character split over byte tokens, an invalid byte, an unfinished
 * character at the end, too small a buffer, SPM's first space); pieces
 * longer than any fixed buffer and the room their decode needs; merge
 * ranks of a small byte-level BPE; mutated files load or fail, never
 * crash, and what loads encodes and decodes random bytes; four threads
 * encoding with one tokenizer.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <CUnit/Basic.h>

#include "../t_cunit.h"
#include "long_vocab.h"
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

/* A lead byte before a space takes the escaped space's first byte: three
 * symbols from two bytes, more symbols than the text has bytes. */
static void spm_lead_spaces(const struct shx_tok *tok)
{
	enum { PAIRS = 64 };
	static const uint8_t sym[] = { 0xdf, 0xe2, 0x96, 0x81 };
	char s[2 * PAIRS];
	int32_t ids[1 + 4 * PAIRS + 1];
	bool ok = true;

	for (size_t i = 0; i < PAIRS; i++)
		memcpy(s + 2 * i, "\xdf ", 2);
	CU_ASSERT_EQUAL_FATAL(shx_tok_encode(tok, s, sizeof(s), 0, ids,
					     sizeof(ids) / sizeof(ids[0])),
			      1 + 4 * PAIRS);
	CU_ASSERT_EQUAL(ids[0], shx_tok_find(tok, "\xe2\x96\x81"));
	for (size_t i = 0; i < 4 * PAIRS; i++)
		ok &= ids[1 + i] == 3 + sym[i % 4];
	CU_ASSERT(ok);
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
	spm_lead_spaces(tok);
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
	/* E2 82 then ASCII: one U+FFFD for the maximal subpart E2 82 */
	CU_ASSERT_EQUAL(shx_detok_push(&d, 3 + 0xE2, out, sizeof(out)), 0);
	CU_ASSERT_EQUAL(shx_detok_push(&d, 3 + 0x82, out, sizeof(out)), 0);
	CU_ASSERT_EQUAL(shx_detok_push(&d, 3 + 'A', out, sizeof(out)), 4);
	CU_ASSERT(!memcmp(out, "\xef\xbf\xbd" "A", 4));
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

/* Byte-level BPE: "a b" merges first, then "ab c", then "\u0120 a". */
static const char *const g_bpe_tok[] = {
	"a", "b", "c", "ab", "abc", "\xc4\xa0", "\xc4\xa0" "a", "<|endoftext|>",
};
static const char *const g_bpe_merges[] = { "a b", "ab c", "\xc4\xa0 a" };
static const int32_t g_bpe_type[] = { 1, 1, 1, 1, 1, 1, 1, 3 };

static void *bpe_image(size_t *len)
{
	static const struct wf_wkv kv[] = {
		WF_KV_STR("general.architecture", "gpt2"),
		WF_KV_STR("tokenizer.ggml.model", "gpt2"),
		WF_KV_STR("tokenizer.ggml.pre", "gpt-2"),
		WF_KV_STRS("tokenizer.ggml.tokens", g_bpe_tok, 8),
		WF_KV_ARR("tokenizer.ggml.token_type", WF_GGUF_I32, g_bpe_type,
			  8),
		WF_KV_STRS("tokenizer.ggml.merges", g_bpe_merges, 3),
		WF_KV_U32("tokenizer.ggml.eos_token_id", 7),
	};

	return wf_gguf_image(kv, sizeof(kv) / sizeof(kv[0]), NULL, 0, len);
}

static void t_bpe(void)
{
	struct shx_tok *tok = NULL;
	int32_t ids[16];
	char err[256], buf[8];
	size_t len;
	void *img = bpe_image(&len);

	CU_ASSERT_EQUAL_FATAL(shx_tok_load(img, len, &tok, err, sizeof(err)), 0);
	free(img);
	/* "abc" and " ab": a+b before ab+c; in " ab", a+b wins over " "+a */
	CU_ASSERT_EQUAL(shx_tok_encode(tok, "abc ab", 6, 0, ids, 16), 3);
	CU_ASSERT(ids[0] == 4 && ids[1] == 5 && ids[2] == 3);
	/* " a" alone merges */
	CU_ASSERT_EQUAL(shx_tok_encode(tok, " a", 2, 0, ids, 16), 1);
	CU_ASSERT_EQUAL(ids[0], 6);
	/* a byte no token stands for is dropped, as llama.cpp does */
	CU_ASSERT_EQUAL(shx_tok_encode(tok, "d", 1, 0, ids, 16), 0);
	CU_ASSERT_EQUAL(shx_tok_encode(tok, "<|endoftext|>", 13,
				       SHX_TOK_PARSE_SPECIAL, ids, 16), 1);
	CU_ASSERT_EQUAL(ids[0], 7);
	/* the piece of U+0120 is a space */
	CU_ASSERT_EQUAL(shx_tok_piece(tok, 6, 0, buf, sizeof(buf)), 2);
	CU_ASSERT(!memcmp(buf, " a", 2));
	CU_ASSERT(shx_tok_is_eog(tok, 7));
	CU_ASSERT_EQUAL(shx_tok_eot(tok), 7);	/* found by its text */
	shx_tok_free(tok);
}

struct enc_job {
	const struct shx_tok *tok;
	const char *text;
	size_t len;
	int32_t ids[4096];
	ssize_t n;
};

static void *enc_thread(void *arg)
{
	struct enc_job *j = arg;

	for (int i = 0; i < 200 && j->n >= 0; i++)
		j->n = shx_tok_encode(j->tok, j->text, j->len, 0, j->ids, 4096);
	return NULL;
}

/* One tokenizer, four threads encoding at once (the PCRE2 code and the
 * tables shared): each gets the ids one thread alone gets. */
/* Pieces longer than any fixed buffer, and a piece that triples when
 * decoded: shx_detok_room covers them, shx_tok_decode holds them. */
static void t_long_pieces(void)
{
	int32_t ids[] = { LV_LONG_A, LV_BAD, -1, LV_N, LV_LONG_A, LV_EOT };
	struct shx_tok *tok = NULL;
	static char out[3 * (BAD_LEN + 3)];
	struct shx_detok d;
	size_t len, room;
	char err[256], *s;
	void *img;

	img = long_vocab_image(&len);
	CU_ASSERT_FATAL(img != NULL);
	CU_ASSERT_EQUAL_FATAL(shx_tok_load(img, len, &tok, err, sizeof(err)),
			      0);
	free(img);
	CU_ASSERT_EQUAL(shx_tok_piece(tok, LV_LONG_A, 0, NULL, 0), LONG_A_LEN);
	CU_ASSERT_EQUAL(shx_tok_piece(tok, LV_BAD, 0, NULL, 0), BAD_LEN);
	shx_detok_init(&d, tok, 0);
	room = shx_detok_room(&d, LV_BAD);
	CU_ASSERT(room >= 3 * BAD_LEN && room <= sizeof(out));
	CU_ASSERT_EQUAL(shx_detok_push(&d, LV_BAD, out, 3 * BAD_LEN - 1),
			-ENOBUFS);
	CU_ASSERT_EQUAL(shx_detok_push(&d, LV_BAD, out, room), 3 * BAD_LEN);
	CU_ASSERT(!memcmp(out + 3 * (BAD_LEN - 1), "\xef\xbf\xbd", 3));
	CU_ASSERT_EQUAL(shx_detok_room(&d, -1), 0);
	CU_ASSERT_EQUAL(shx_detok_room(&d, LV_N), 0);
	/* a buffer grown to the room, then the flush into it */
	s = NULL;
	len = 0;
	shx_detok_init(&d, tok, 0);
	CU_ASSERT_EQUAL(shx_detok_next(&d, LV_BAD, &s, &len), 3 * BAD_LEN);
	CU_ASSERT(s && len >= 3 * BAD_LEN);
	CU_ASSERT_EQUAL(shx_detok_next(&d, LV_N, &s, &len), -EINVAL);
	CU_ASSERT_EQUAL(shx_detok_next(&d, -1, &s, &len), 0);
	free(s);
	/* the ids outside the vocabulary have no text */
	s = shx_tok_decode(tok, ids, sizeof(ids) / sizeof(ids[0]), 0, &len);
	CU_ASSERT_FATAL(s != NULL);
	CU_ASSERT_EQUAL(len, 2 * LONG_A_LEN + 3 * BAD_LEN);
	CU_ASSERT_EQUAL(strlen(s), len);
	CU_ASSERT(len == 2 * LONG_A_LEN + 3 * BAD_LEN &&
		  strspn(s, "a") == LONG_A_LEN &&
		  !memcmp(s + LONG_A_LEN + 3 * (BAD_LEN - 1), "\xef\xbf\xbd",
			  3) &&
		  strspn(s + LONG_A_LEN + 3 * BAD_LEN, "a") == LONG_A_LEN);
	free(s);
	s = shx_tok_decode(tok, ids, 0, 0, &len);
	CU_ASSERT(s && !*s && !len);
	free(s);
	shx_tok_free(tok);
}

static void t_threads(void)
{
	static struct enc_job j[5];
	struct shx_tok *tok = NULL;
	char text[2048], err[256];
	pthread_t th[4];
	size_t len, n = 0;
	void *img = bpe_image(&len);

	CU_ASSERT_EQUAL_FATAL(shx_tok_load(img, len, &tok, err, sizeof(err)), 0);
	free(img);
	while (n + 8 < sizeof(text)) {
		memcpy(text + n, "abc ab a", 8);
		n += 8;
	}
	for (int i = 0; i < 5; i++)
		j[i] = (struct enc_job){ .tok = tok, .text = text, .len = n };
	enc_thread(&j[4]);
	CU_ASSERT(j[4].n > 0);
	for (int i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(pthread_create(&th[i], NULL, enc_thread, &j[i]),
				0);
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CU_ASSERT_EQUAL(j[i].n, j[4].n);
		CU_ASSERT(!memcmp(j[i].ids, j[4].ids,
				  (size_t)j[4].n * sizeof(int32_t)));
	}
	shx_tok_free(tok);
}

/* Flipped bytes anywhere in both files: a clean error or a tokenizer that
 * works (ASan/UBSan in make san-check say the rest). */
static void t_mutate(void)
{
	uint64_t x = 88172645463325252ull;
	size_t len[2];
	uint8_t *img[2] = { spm_image(&len[0], "llama", 1, 1),
			    bpe_image(&len[1]) };
	unsigned int loaded = 0, refused = 0;

	CU_ASSERT_FATAL(img[0] && img[1]);
	for (int i = 0; i < 4000; i++) {
		size_t n = len[i & 1];
		uint8_t *m = malloc(n);
		struct shx_tok *tok = NULL;
		char err[256], text[64], out[256];
		int32_t ids[256];
		int e;

		memcpy(m, img[i & 1], n);
		for (int k = 0; k < 1 + i % 4; k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			m[x % n] ^= (uint8_t)(1u << (x >> 32) % 8);
		}
		e = shx_tok_load(m, n, &tok, err, sizeof(err));
		free(m);
		if (e) {
			CU_ASSERT(e == -EINVAL || e == -ENOMEM ||
				  e == -EOPNOTSUPP);
			refused++;
			continue;
		}
		loaded++;
		for (size_t k = 0; k < sizeof(text); k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			text[k] = (char)x;
		}
		ssize_t r = shx_tok_encode(tok, text, sizeof(text),
					   SHX_TOK_ADD_SPECIAL |
					   SHX_TOK_PARSE_SPECIAL, ids, 256);
		CU_ASSERT(r >= 0);
		if (r > 0) {
			struct shx_detok d;

			shx_detok_init(&d, tok, SHX_TOK_RENDER_SPECIAL);
			for (ssize_t k = 0; k < r && k < 256; k++)
				CU_ASSERT(shx_detok_push(&d, ids[k], out,
							 sizeof(out)) >= 0);
			CU_ASSERT(shx_detok_flush(&d, out, sizeof(out)) >= 0);
		}
		shx_tok_free(tok);
	}
	CU_ASSERT(loaded > 0 && refused > 0);
	free(img[0]);
	free(img[1]);
}

int main(void)
{
	static const struct t_test tests[] = {
		{ "errors", t_errors },
		{ "encode", t_encode },
		{ "piece", t_piece },
		{ "detok", t_detok },
		{ "long pieces", t_long_pieces },
		{ "bpe", t_bpe },
		{ "mutate", t_mutate },
		{ "threads", t_threads },
	};

	return T_RUN_SUITE("tokenizer", NULL, NULL, tests);
}
