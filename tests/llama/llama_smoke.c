// SPDX-License-Identifier: MIT
/*
 * A developer check of the llama.cpp peer (tools/lib/llama_peer.h):
 *
 *	llama_smoke MODEL.gguf
 *
 * with the libraries from $SYSHAX_LLAMA_DIR (default build/ggml). Decodes
 * a prompt of 8 tokens then 8 tokens one at a time, greedily; the logits
 * must be finite and a second run identical. Then 8 sequences of 1..8
 * tokens in one batch must give the logits each gives alone.
 * Exit 0 pass, 1 fail, 77 skip (no libraries or no model).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llama_peer.h"

#define NPROMPT	8
#define NGEN	8
#define NSEQ	8

static char err[512];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Copies the logits of row i into out; the index of the largest, or -1
 * when one is missing or not finite. */
static int take(struct llp *l, int i, float *out)
{
	const float *z = llp_logits(l, i);
	int n = llp_n_vocab(l), best = 0;

	if (!z)
		return -1;
	for (int v = 0; v < n; v++) {
		if (!isfinite(z[v]))
			return -1;
		if (z[v] > z[best])
			best = v;
	}
	memcpy(out, z, n * sizeof(*z));
	return best;
}

/* The prompt then NGEN greedy tokens; NGEN + 1 rows of logits into out. */
static int run(struct llp *l, float *out, double *gen_s)
{
	int32_t tok[NPROMPT], pos[NPROMPT], seq[NPROMPT] = { 0 };
	uint8_t want[NPROMPT] = { [NPROMPT - 1] = 1 };
	int n = llp_n_vocab(l), next;
	double t0;

	llp_clear(l);
	for (int i = 0; i < NPROMPT; i++) {
		tok[i] = 1 + i * 37 % (n - 1);
		pos[i] = i;
	}
	if (llp_decode(l, tok, pos, seq, want, NPROMPT, err, sizeof(err)))
		return -1;
	next = take(l, NPROMPT - 1, out);
	t0 = now();
	for (int g = 0; g < NGEN && next >= 0; g++) {
		int32_t p = NPROMPT + g;

		if (llp_decode(l, &next, &p, seq, want + NPROMPT - 1, 1, err,
			       sizeof(err)))
			return -1;
		next = take(l, 0, out + (size_t)(g + 1) * n);
	}
	*gen_s = now() - t0;
	if (next < 0)
		snprintf(err, sizeof(err), "missing or non-finite logits");
	return next < 0 ? -1 : 0;
}

static float max_diff(const float *a, const float *b, int n, float *scale)
{
	float d = 0;

	*scale = 0;
	for (int v = 0; v < n; v++) {
		d = fmaxf(d, fabsf(a[v] - b[v]));
		*scale = fmaxf(*scale, fabsf(a[v]));
	}
	return d;
}

/*
 * Sequence s holds the first s + 1 prompt tokens; all NSEQ in one batch,
 * each checked against the same tokens decoded alone.
 */
static int multi(struct llp *l, float *alone, float *batched)
{
	int32_t tok[NSEQ * NSEQ], pos[NSEQ * NSEQ], seq[NSEQ * NSEQ];
	uint8_t want[NSEQ * NSEQ];
	int nv = llp_n_vocab(l), n = 0, last[NSEQ];
	float d, scale;

	for (int s = 0; s < NSEQ; s++) {
		for (int i = 0; i <= s; i++, n++) {
			tok[n] = 1 + i * 37 % (nv - 1);
			pos[n] = i;
			seq[n] = s;
			want[n] = i == s;
		}
		last[s] = n - 1;
		llp_clear(l);
		if (llp_decode(l, tok + n - s - 1, pos + n - s - 1,
			       seq + n - s - 1, want + n - s - 1, s + 1, err,
			       sizeof(err)) ||
		    take(l, s, alone + (size_t)s * nv) < 0)
			return -1;
	}
	llp_clear(l);
	if (llp_decode(l, tok, pos, seq, want, n, err, sizeof(err)))
		return -1;
	for (int s = 0; s < NSEQ; s++) {
		if (take(l, last[s], batched + (size_t)s * nv) < 0)
			return -1;
		d = max_diff(alone + (size_t)s * nv, batched + (size_t)s * nv,
			     nv, &scale);
		if (d > 1e-4f * scale) {
			snprintf(err, sizeof(err),
				 "sequence %d: batched logits differ by %g (of %g)",
				 s, d, scale);
			return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir = getenv("SYSHAX_LLAMA_DIR");
	struct llp_ctx_opts o = { .n_ctx = 2048, .n_batch = 64,
				  .n_seq_max = NSEQ, .threads = 2,
				  .f32_kv = 1 };
	float *a, *b;
	double s1, s2;
	struct llp *l;
	size_t nv;
	int e;

	if (argc < 2) {
		printf("SKIP: no model (llama_smoke MODEL.gguf)\n");
		return 77;
	}
	e = llp_open(&l, dir ? dir : "build/ggml", err, sizeof(err));
	if (e == -ENOENT) {
		printf("SKIP: llama.cpp peer: %s\n", err);
		return 77;
	}
	if (e) {
		fprintf(stderr, "FAIL: llp_open: %s\n", err);
		return 1;
	}
	printf("llama_smoke: %s\n", llp_version(l));
	if (llp_load(l, argv[1], err, sizeof(err)) ||
	    llp_context(l, &o, err, sizeof(err))) {
		fprintf(stderr, "FAIL: %s\n", err);
		llp_close(l);
		return 1;
	}
	nv = llp_n_vocab(l);
	a = calloc((NGEN + 1) * nv, sizeof(*a));
	b = calloc((NGEN + 1) * nv, sizeof(*b));
	e = !a || !b;
	if (e)
		snprintf(err, sizeof(err), "out of memory");
	e = e || run(l, a, &s1) || run(l, b, &s2);
	if (!e && memcmp(a, b, (NGEN + 1) * nv * sizeof(*a)))
		e = snprintf(err, sizeof(err), "second run differs") > 0;
	e = e || multi(l, a, b);
	if (!e)
		printf("llama_smoke: n_vocab %zu, decode %.0f tokens/s (1 token, %u threads)\nPASS\n",
		       nv, NGEN / (s1 < s2 ? s1 : s2), o.threads);
	else
		fprintf(stderr, "FAIL: %s\n", err);
	free(a);
	free(b);
	llp_close(l);
	return e ? 1 : 0;
}
