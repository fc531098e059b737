// SPDX-License-Identifier: MIT
/*
 * SentencePiece BPE (tokenizer.ggml.model "llama") as llama.cpp's
 * llm_tokenizer_spm_session: spaces are U+2581, the text starts as one
 * symbol per UTF-8 character, and the adjacent pair whose joined text is
 * the token of highest score (the leftmost of equals) merges until no
 * pair is a token; what stays no token is written as its bytes' <0xXX>
 * tokens.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "heap.h"
#include "tok_int.h"
#include "utf8.h"

struct sym {
	int32_t prev, next;
	uint32_t off, n;
};

struct bigram {
	float score;
	int32_t left, right;
	uint32_t size;
};

struct spm_work {
	const char *s;
	struct sym *sym;
	struct bigram *heap;
	size_t nheap;
};

static bool before(const struct bigram *x, const struct bigram *y)
{
	return x->score > y->score ||
	       (x->score == y->score && x->left < y->left);
}

HEAP_DEFINE(bigram_heap, struct bigram, before)

static void add_bigram(const struct shx_tok *tok, struct spm_work *w,
		       int32_t l, int32_t r)
{
	uint32_t size;
	int32_t id;

	if (l < 0 || r < 0)
		return;
	size = w->sym[l].n + w->sym[r].n;
	id = shx_tok_lookup(tok, w->s + w->sym[l].off, size);
	if (id < 0)
		return;
	bigram_heap_push(w->heap, &w->nheap,
			 (struct bigram){ tok->t[id].score, l, r, size });
}

/* llama.cpp's byte_to_token: <0xXX>, else the byte as a one-byte token
 * (where llama.cpp throws for neither, the unknown token). */
static int32_t byte_token(const struct shx_tok *tok, uint8_t c)
{
	static const char hex[] = "0123456789ABCDEF";
	char b[6] = { '<', '0', 'x', hex[c >> 4], hex[c & 15], '>' };
	int32_t id = shx_tok_lookup(tok, b, 6);

	if (id < 0)
		id = shx_tok_lookup(tok, (const char *)&c, 1);
	return id >= 0 ? id : tok->unk;
}

int shx_spm_encode(const struct shx_tok *tok, const char *s, size_t n,
		   bool space_prefix, struct tok_out *o)
{
	struct spm_work w = { 0 };
	size_t len = 0, nsym = 0, cap;
	char *t;

	if (n > UINT32_MAX / 4)
		return -E2BIG;
	cap = 3 * (n + 1);
	t = malloc(cap);
	if (!t)
		return -ENOMEM;
	/* llama_escape_whitespace over the prefixed text */
	if (space_prefix)
		memcpy(t + len, "\xe2\x96\x81", 3), len += 3;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == ' ')
			memcpy(t + len, "\xe2\x96\x81", 3), len += 3;
		else
			t[len++] = s[i];
	}
	/* A symbol per byte at most: a lead byte claims its length from
	 * what follows, an escaped space's bytes too ("\xdf " is three).
	 * Each merge pushes two bigrams after the first nsym - 1. */
	w.sym = malloc((len + 1) * sizeof(*w.sym));
	w.heap = malloc(3 * (len + 1) * sizeof(*w.heap));
	if (!w.sym || !w.heap) {
		free(t);
		free(w.sym);
		free(w.heap);
		return -ENOMEM;
	}
	w.s = t;
	for (size_t off = 0; off < len; nsym++) {
		size_t k = shx_utf8_len((uint8_t)t[off]);

		if (k > len - off)
			k = len - off;
		w.sym[nsym] = (struct sym){ (int32_t)nsym - 1,
					    off + k < len ? (int32_t)nsym + 1 : -1,
					    (uint32_t)off, (uint32_t)k };
		off += k;
	}
	for (size_t i = 1; i < nsym; i++)
		add_bigram(tok, &w, (int32_t)i - 1, (int32_t)i);
	while (w.nheap) {
		struct bigram g = bigram_heap_pop(w.heap, &w.nheap);
		struct sym *l = &w.sym[g.left], *r = &w.sym[g.right];

		if (!l->n || !r->n || l->n + r->n != g.size)
			continue;
		l->n += r->n;
		r->n = 0;
		l->next = r->next;
		if (r->next >= 0)
			w.sym[r->next].prev = g.left;
		add_bigram(tok, &w, l->prev, g.left);
		add_bigram(tok, &w, g.left, l->next);
	}
	/* a merged symbol is a token by construction: only single
	 * characters fall back to bytes */
	for (int32_t i = nsym ? 0 : -1; i >= 0; i = w.sym[i].next) {
		const struct sym *y = &w.sym[i];
		int32_t id = shx_tok_lookup(tok, t + y->off, y->n);

		if (id >= 0) {
			tok_emit(o, id);
			continue;
		}
		for (uint32_t j = 0; j < y->n; j++) {
			id = byte_token(tok, (uint8_t)t[y->off + j]);
			if (id >= 0)
				tok_emit(o, id);
		}
	}
	free(t);
	free(w.sym);
	free(w.heap);
	return 0;
}
