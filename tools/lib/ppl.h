/* SPDX-License-Identifier: MIT */
/*
 * Perplexity as llama.cpp's perplexity tool computes it: the tokens cut
 * into chunks of n_ctx, each chunk evaluated alone from position 0 with
 * every row's logits, and only the second half of each chunk scored
 * (rows n_ctx/2 .. n_ctx-2, each predicting the next token), so every
 * scored token has at least n_ctx/2 tokens of context. The same code
 * scores the engine's logits and llama.cpp's.
 *
 *	struct ppl p = { 0 };
 *	for (c = 0; c < n_tok / n_ctx; c++) {
 *		eval(tok + c * n_ctx, n_ctx) -> logits [n_ctx x n_vocab];
 *		ppl_chunk(&p, logits, tok + c * n_ctx, n_ctx, n_vocab);
 *	}
 *	printf("%.4f\n", ppl_value(&p));
 */
#ifndef PPL_H
#define PPL_H

#include <stddef.h>
#include <stdint.h>

struct ppl {
	double nll;		/* sum of -log p(next token) */
	size_t n;		/* tokens scored */
};

/* Scores one chunk: row j of logits (n_vocab floats) predicts tok[j + 1]. */
void ppl_chunk(struct ppl *p, const float *logits, const int32_t *tok,
	       unsigned int n_ctx, unsigned int n_vocab);

/* exp(nll / n); 0 before any token. */
double ppl_value(const struct ppl *p);

/*
 * Token ids from a text file of decimal ids separated by white space, as
 * tools/train/train.py writes heldout.ids: a malloc'ed array (*n ids), or
 * NULL with errno set (EINVAL: not such a file, or an id out of 0..max).
 */
int32_t *ppl_read_ids(const char *path, int32_t max, size_t *n);

#endif
