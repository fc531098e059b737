// SPDX-License-Identifier: MIT
/* Perplexity, llama.cpp's way (ppl.h). */
#include "ppl.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* -log softmax(x)[t], as llama.cpp's log_softmax: float max, double sum. */
static double nll(const float *x, unsigned int n, int32_t t)
{
	float max = x[0];
	double sum = 0.0;

	for (unsigned int i = 1; i < n; i++)
		max = x[i] > max ? x[i] : max;
	for (unsigned int i = 0; i < n; i++)
		sum += exp((double)x[i] - max);
	return -((double)x[t] - max - log(sum));
}

void ppl_chunk(struct ppl *p, const float *logits, const int32_t *tok,
	       unsigned int n_ctx, unsigned int n_vocab)
{
	for (unsigned int j = n_ctx / 2; j + 1 < n_ctx; j++) {
		p->nll += nll(logits + (size_t)j * n_vocab, n_vocab, tok[j + 1]);
		p->n++;
	}
}

double ppl_value(const struct ppl *p)
{
	return p->n ? exp(p->nll / (double)p->n) : 0.0;
}

int32_t *ppl_read_ids(const char *path, int32_t max, size_t *n)
{
	FILE *f = fopen(path, "r");
	int32_t *ids = NULL, *grown;
	size_t cap = 0;
	int c, err = EINVAL;
	long v;

	*n = 0;
	if (!f)
		return NULL;
	while ((c = fscanf(f, "%ld", &v)) == 1) {
		if (v < 0 || v > max)
			break;
		if (*n == cap) {
			cap = cap ? 2 * cap : 4096;
			grown = realloc(ids, cap * sizeof(*ids));
			if (!grown) {
				err = ENOMEM;
				break;
			}
			ids = grown;
		}
		ids[(*n)++] = (int32_t)v;
	}
	if (c != EOF || ferror(f) || !*n) {
		free(ids);
		fclose(f);
		*n = 0;
		errno = err;
		return NULL;
	}
	fclose(f);
	return ids;
}
