// SPDX-License-Identifier: MIT
/*
 * The engine's whole decode steps against llama.cpp's own library on the
 * same GGUF files and the same token ids: random-weight llama and qwen3moe
 * models in F32, F16, Q8_0 and Q4_0 (genmodel.h), a 32-token prompt and 32
 * decode steps of one sequence, then 8 sequences of different lengths
 * decoding together. Every step's logits are compared: the largest
 * difference over the standard deviation of llama.cpp's logits, and top-1
 * agreement, which must hold wherever llama.cpp's top-2 margin is wider
 * than the tolerance (docs/model-runner.md justifies the tolerances).
 * llama.cpp runs with an f32 KV cache and flash attention off, ours with
 * an f32 cache.
 *
 * With MODELS_DIR, the trained models there instead (docs/model-train.md:
 * kjv-llama and kjv-qwen3moe, each type): the perplexity of the held-out
 * ids (heldout.ids) in chunks of PPL_CTX, as llama.cpp's perplexity tool
 * scores them (ppl.h), through PREFILL jobs with every row's logits on our
 * side and llama_decode on the other, which must agree within the case's
 * tolerance and be far below the uniform bound (n_vocab); and greedy
 * decoding of G_STEPS tokens from G_PROMPTS prompts on each side, which
 * must pick the same tokens until a step where llama.cpp's top-2 margin is
 * within the tolerance (there the two may part, and that prompt ends).
 *
 *	llama_compare SYSHAXD [LLAMA_DIR [MODELS_DIR]]
 * Exit: 0 all within tolerance, 1 not, 77 (SKIP) without the peer.
 *
 * The reference for other programs' greedy tokens and logprobs
 * (tests/server/serve_test.py compares syshax-serve with it):
 *	llama_compare --greedy LLAMA_DIR MODEL.gguf TYPE N K ID,ID,...
 * llama.cpp's greedy decoding of N tokens after the prompt ids, one JSON
 * line a step: {"token", "margin" (top-2, over the std of the logits),
 * "tol" (TYPE's: f32, f16, q8_0, q4_0, as g_cases; a margin within it is
 * a tie), "std", "top": [[id, logprob] x K, the highest]}.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "genmodel.h"
#include "llama_peer.h"
#include "ppl.h"
#include "privd.h"
#include "stepjob.h"
#include "syshax/rt.h"
#include "syshax_ops.h"

#define PROMPT		32
#define STEPS		32
#define NSEQ		8
#define BSTEPS		16	/* decode steps of the 8-sequence batch */
#define BLOCK		16
#define MAXB		8	/* 128 positions per sequence */
#define THREADS		2
#define PPL_CTX		128	/* the trained models' n_ctx_train */
#define PPL_CHUNKS	16	/* at most, of the held-out ids */
#define G_PROMPTS	5
#define G_PROMPT	16
#define G_STEPS		64
#define OUT_BYTES	(4u << 20)	/* PPL_CTX rows of 8192 logits */
#define REF_CTX		512	/* --greedy: prompt and tokens */
#define REF_TOPK	20

struct tcase {
	const char *arch;
	enum shxk_type type;
	const char *tname;
	/* Largest |ours - llama.cpp| / std(llama.cpp) allowed per step. */
	double tol;
	/* Steps that may pass tol, in percent: an MoE step where two
	 * experts' router logits sit closer than the rounding noise picks a
	 * different expert on each side (docs/model-runner.md). */
	unsigned int flip_pct;
};

static const struct tcase g_cases[] = {
	{ "llama", SHXK_F32, "f32", 1e-4, 0 },
	{ "llama", SHXK_F16, "f16", 0.01, 0 },
	{ "llama", SHXK_Q8_0, "q8_0", 0.06, 0 },
	{ "llama", SHXK_Q4_0, "q4_0", 0.06, 0 },
	{ "qwen3moe", SHXK_F32, "f32", 1e-4, 2 },
	{ "qwen3moe", SHXK_F16, "f16", 0.01, 2 },
	{ "qwen3moe", SHXK_Q8_0, "q8_0", 0.06, 2 },
	{ "qwen3moe", SHXK_Q4_0, "q4_0", 0.06, 2 },
};

/* What one comparison found over its steps. */
struct tally {
	double worst;		/* max over steps of maxabs / std */
	double err[256];	/* each step's, for the median */
	unsigned int steps, over, top1, strict, strict_ok;
};

static void compare(const float *ours, const float *ref, int nv, double tol,
		    struct tally *t)
{
	double mean = 0.0, var = 0.0, maxd = 0.0, sd;
	int a = 0, b = 0, second = -1;

	for (int i = 0; i < nv; i++)
		mean += ref[i];
	mean /= nv;
	for (int i = 0; i < nv; i++) {
		var += (ref[i] - mean) * (ref[i] - mean);
		maxd = fmax(maxd, fabs((double)ours[i] - ref[i]));
		a = ours[i] > ours[a] ? i : a;
		b = ref[i] > ref[b] ? i : b;
	}
	for (int i = 0; i < nv; i++)
		if (i != b && (second < 0 || ref[i] > ref[second]))
			second = i;
	sd = sqrt(var / nv);
	t->worst = fmax(t->worst, maxd / sd);
	t->over += maxd / sd > tol;
	if (t->steps < sizeof(t->err) / sizeof(t->err[0]))
		t->err[t->steps] = maxd / sd;
	t->steps++;
	t->top1 += a == b;
	/* A margin wider than the tolerance cannot be flipped by it. */
	if (ref[b] - ref[second] > tol * sd) {
		t->strict++;
		t->strict_ok += a == b;
	}
}

/* ---- our side: steps through syshaxd ---- */

struct ours {
	struct syshax *sh;
	struct syshax_buffer buf;
	uint64_t model;
	struct syshax_model_info mi;
	size_t kv_bytes;		/* each of K and V */
	uint8_t *k, *v;
	int32_t *bt, *tok, *pos;
	float *out;
};

/* p, inside the buffer, as a place for a job's ref. */
static struct sj_ref at(const struct ours *o, const void *p)
{
	const uint8_t *base = o->buf.addr;

	return (struct sj_ref){ &o->buf,
				(uint64_t)((const uint8_t *)p - base) };
}

static int run1(struct ours *o, struct syshax_job *j, uint64_t *result)
{
	struct syshax_completion c;
	int ret = syshax_submit(o->sh, j, 1);

	if (ret == 1)
		ret = syshax_wait(o->sh, &c, 1, 1, -1);
	if (ret != 1)
		return ret < 0 ? ret : -EIO;
	if (result)
		*result = c.result;
	return c.status;
}

static int ours_load(struct ours *o, const char *file)
{
	const struct sj_ref info = at(o, o->out);
	struct syshax_job j;
	int ret;

	sj_model_load(&j, file, &info);
	ret = run1(o, &j, &o->model);
	if (ret)
		return ret;
	memcpy(&o->mi, o->out, sizeof(o->mi));
	o->kv_bytes = NSEQ * MAXB *
		      sj_kv_block_bytes(&o->mi, BLOCK, SYSHAX_DT_F32);
	return 0;
}

static int ours_buffers(struct ours *o)
{
	size_t size = 64u << 20, used = 0;
	uint8_t *p;
	int ret = syshax_buf_alloc(o->sh, size, -1, SYSHAX_BUF_ALLOW_SMALL |
				   SYSHAX_BUF_ALLOW_REMOTE, &o->buf);

	if (!ret)
		ret = syshax_buf_map(o->sh, &o->buf);
	if (ret)
		return ret;
	p = o->buf.addr;
#define TAKE(n) (used += ((n) + 63) & ~(size_t)63, p + used - \
		 (((n) + 63) & ~(size_t)63))
	o->bt = (int32_t *)TAKE(NSEQ * MAXB * 4);
	o->tok = (int32_t *)TAKE(PPL_CTX * 4);
	o->pos = (int32_t *)TAKE(PPL_CTX * 4);
	o->out = (float *)TAKE(OUT_BYTES);
	o->k = TAKE(24u << 20);
	o->v = TAKE(24u << 20);
#undef TAKE
	for (int s = 0; s < NSEQ; s++)
		for (int b = 0; b < MAXB; b++)
			o->bt[s * MAXB + b] = s * MAXB + b;
	return used <= size ? 0 : -ENOMEM;
}

/* A step of n rows over the buffer's arrays, logits out. */
static struct sj_step step(const struct ours *o, uint32_t n)
{
	return (struct sj_step){
		.p = {
			.model = o->model, .n = n, .block_size = BLOCK,
			.num_blocks = NSEQ * MAXB, .max_blocks = MAXB,
			.kv_type = SYSHAX_DT_F32,
		},
		.tok = at(o, o->tok), .pos = at(o, o->pos), .bt = at(o, o->bt),
		.k = at(o, o->k), .v = at(o, o->v), .kv_bytes = o->kv_bytes,
		.out = at(o, o->out),
		.out_bytes = (uint64_t)n * o->mi.n_vocab * 4,
	};
}

/* n prompt tokens of sequence s from position 0; the last row's logits
 * into out, or every row's (all). */
static int ours_prefill(struct ours *o, int s, const int32_t *tok, int n,
			bool all)
{
	struct sj_step st = step(o, (uint32_t)n);
	struct syshax_job j;

	if ((uint64_t)n * o->mi.n_vocab * 4 > OUT_BYTES)
		return -E2BIG;
	memcpy(o->tok, tok, (size_t)n * 4);
	st.bt = at(o, o->bt + s * MAXB);
	if (all)
		st.p.flags = SYSHAX_STEP_ALL_ROWS;
	else
		st.out_bytes = o->mi.n_vocab * 4;
	sj_step(&j, SYSHAX_OP_PREFILL, 0, &st);
	return run1(o, &j, NULL);
}

/* One token for each of sequences 0..n-1 at pos[]: logits rows in out. */
static int ours_decode(struct ours *o, const int32_t *tok, const int32_t *pos,
		       int n)
{
	struct sj_step st = step(o, (uint32_t)n);
	struct syshax_job j;

	memcpy(o->tok, tok, (size_t)n * 4);
	memcpy(o->pos, pos, (size_t)n * 4);
	sj_step(&j, SYSHAX_OP_DECODE, 0, &st);
	return run1(o, &j, NULL);
}

static int ours_free(struct ours *o)
{
	struct syshax_job j;

	sj_weights_free(&j, o->model);
	return run1(o, &j, NULL);
}

/* ---- the comparisons ---- */

/* The same token ids on both sides: a fixed pseudo-random list. */
static int32_t token(unsigned int i, int nv)
{
	uint32_t x = i * 2654435761u + 12345u;

	x ^= x >> 15;
	return (int32_t)(3 + x % (uint32_t)(nv - 3));
}

static int fail(const char *what, int ret, const char *err)
{
	fprintf(stderr, "llama_compare: %s: %s%s%s\n", what, strerror(-ret),
		err && *err ? ": " : "", err ? err : "");
	return ret;
}

/* One sequence: prompt, then STEPS steps. */
static int one_seq(struct ours *o, struct llp *l, double tol, struct tally *t)
{
	int32_t tok[PROMPT], pos[PROMPT], seq[PROMPT] = { 0 };
	uint8_t want[PROMPT] = { 0 };
	int nv = (int)o->mi.n_vocab, ret;
	char err[256] = "";

	llp_clear(l);
	for (int i = 0; i < PROMPT; i++) {
		tok[i] = token((unsigned int)i, nv);
		pos[i] = i;
	}
	want[PROMPT - 1] = 1;
	ret = ours_prefill(o, 0, tok, PROMPT, false);
	if (ret)
		return fail("our prefill", ret, NULL);
	ret = llp_decode(l, tok, pos, seq, want, PROMPT, err, sizeof(err));
	if (ret)
		return fail("llama.cpp prefill", ret, err);
	compare(o->out, llp_logits(l, -1), nv, tol, t);
	for (int s = 0; s < STEPS; s++) {
		int32_t tk = token(1000 + (unsigned int)s, nv), p = PROMPT + s;
		uint8_t w = 1;

		ret = ours_decode(o, &tk, &p, 1);
		if (ret)
			return fail("our decode", ret, NULL);
		ret = llp_decode(l, &tk, &p, seq, &w, 1, err, sizeof(err));
		if (ret)
			return fail("llama.cpp decode", ret, err);
		compare(o->out, llp_logits(l, 0), nv, tol, t);
	}
	return 0;
}

/* NSEQ sequences of 4, 7, ... tokens, then BSTEPS steps of all of them
 * in one batch on each side. */
static int batch(struct ours *o, struct llp *l, double tol, struct tally *t)
{
	int32_t tok[NSEQ], pos[NSEQ], seq[NSEQ], ptok[32], ppos[32], pseq[32];
	uint8_t want[32], w[NSEQ];
	int nv = (int)o->mi.n_vocab, ret;
	char err[256] = "";

	llp_clear(l);
	for (int s = 0; s < NSEQ; s++) {
		int n = 4 + 3 * s;

		for (int i = 0; i < n; i++) {
			ptok[i] = token(7000 + 100 * (unsigned int)s +
					(unsigned int)i, nv);
			ppos[i] = i;
			pseq[i] = s;
			want[i] = i == n - 1;
		}
		ret = ours_prefill(o, s, ptok, n, false);
		if (ret)
			return fail("our prefill", ret, NULL);
		ret = llp_decode(l, ptok, ppos, pseq, want, (unsigned int)n,
				 err, sizeof(err));
		if (ret)
			return fail("llama.cpp prefill", ret, err);
		compare(o->out, llp_logits(l, -1), nv, tol, t);
		pos[s] = n;
		seq[s] = s;
		w[s] = 1;
	}
	for (int st = 0; st < BSTEPS; st++) {
		for (int s = 0; s < NSEQ; s++)
			tok[s] = token(9000 + 100 * (unsigned int)st +
				       (unsigned int)s, nv);
		ret = ours_decode(o, tok, pos, NSEQ);
		if (ret)
			return fail("our decode", ret, NULL);
		ret = llp_decode(l, tok, pos, seq, w, NSEQ, err, sizeof(err));
		if (ret)
			return fail("llama.cpp decode", ret, err);
		for (int s = 0; s < NSEQ; s++) {
			compare(o->out + (size_t)s * nv, llp_logits(l, s), nv,
				tol, t);
			pos[s]++;
		}
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static bool report(const struct tcase *c, const char *what, struct tally *t)
{
	bool ok = t->over * 100 <= c->flip_pct * t->steps &&
		  t->strict_ok == t->strict;

	qsort(t->err, t->steps, sizeof(t->err[0]), cmp_double);
	printf("%-9s %-5s %-6s steps %3u  |d|/std median %.2e max %.2e "
	       "(tol %g, over %u)  top-1 %3u/%u  decided %3u/%u  %s\n",
	       c->arch, c->tname, what, t->steps, t->err[t->steps / 2],
	       t->worst, c->tol, t->over, t->top1, t->steps, t->strict_ok,
	       t->strict, ok ? "ok" : "FAIL");
	return ok;
}

static int run_case(struct ours *o, const char *lib, const char *dir,
		    const struct tcase *c, bool *ok)
{
	struct gm_opts g = { .arch = c->arch, .preset = "tiny",
			     .type = c->type, .seed = 42 };
	struct llp_ctx_opts lo = { .n_ctx = NSEQ * 256, .n_batch = 64,
				   .n_seq_max = NSEQ, .threads = THREADS,
				   .f32_kv = 1 };
	char file[64], path[512], err[256] = "";
	struct tally t1 = { 0 }, t8 = { 0 };
	struct llp *l;
	int ret;

	snprintf(file, sizeof(file), "%s-%s.gguf", c->arch, c->tname);
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	ret = gm_write(path, &g, 0, err, sizeof(err));
	if (ret)
		return fail("gen-model", ret, err);
	ret = ours_load(o, file);
	if (ret)
		return fail("MODEL_LOAD", ret, file);
	ret = llp_start(&l, lib, path, &lo, err, sizeof(err));
	if (ret) {
		ours_free(o);
		return fail("llama.cpp", ret, err);
	}
	if (llp_n_vocab(l) != (int)o->mi.n_vocab)
		ret = fail("vocabulary sizes differ", -EPROTO, NULL);
	if (!ret)
		ret = one_seq(o, l, c->tol, &t1);
	if (!ret)
		ret = batch(o, l, c->tol, &t8);
	llp_close(l);
	ours_free(o);
	unlink(path);
	if (ret)
		return ret;
	*ok &= report(c, "1 seq", &t1);
	*ok &= report(c, "8 seqs", &t8);
	return 0;
}

/* ---- the trained models ---- */

struct pcase {
	const char *model, *tname;
	double ppl_tol;		/* |ours / llama.cpp - 1| allowed */
	double tol;		/* top-2 margins within tol * std are ties */
};

static const struct pcase g_trained[] = {
	{ "kjv-llama", "f32", 1e-4, 1e-4 },
	{ "kjv-llama", "f16", 2e-3, 0.01 },
	{ "kjv-llama", "q8_0", 2e-3, 0.06 },
	{ "kjv-llama", "q4_0", 2e-3, 0.06 },
	{ "kjv-qwen3moe", "f32", 1e-4, 1e-4 },
	{ "kjv-qwen3moe", "f16", 2e-3, 0.01 },
	{ "kjv-qwen3moe", "q8_0", 2e-3, 0.06 },
	{ "kjv-qwen3moe", "q4_0", 2e-3, 0.06 },
};

struct ids {
	const int32_t *v;
	size_t n;
};

static int argmax(const float *x, int n)
{
	int a = 0;

	for (int i = 1; i < n; i++)
		a = x[i] > x[a] ? i : a;
	return a;
}

/* llama.cpp's top-2 margin over its logits' standard deviation. */
static double margin(const float *x, int n)
{
	double mean = 0.0, var = 0.0;
	int a = argmax(x, n), b = a ? 0 : 1;

	for (int i = 0; i < n; i++) {
		mean += x[i];
		b = i != a && x[i] > x[b] ? i : b;
	}
	mean /= n;
	for (int i = 0; i < n; i++)
		var += (x[i] - mean) * (x[i] - mean);
	return (x[a] - x[b]) / sqrt(var / n);
}

/* Both perplexities of the held-out ids. */
static int perplexity(struct ours *o, struct llp *l, const struct ids *ids,
		      struct ppl *po, struct ppl *pl)
{
	int32_t pos[PPL_CTX], seq[PPL_CTX] = { 0 };
	uint8_t want[PPL_CTX];
	int nv = (int)o->mi.n_vocab, ret;
	char err[256] = "";
	float *ref = malloc((size_t)PPL_CTX * nv * sizeof(*ref));

	if (!ref)
		return fail("perplexity", -ENOMEM, NULL);
	for (int i = 0; i < PPL_CTX; i++) {
		pos[i] = i;
		want[i] = 1;
	}
	for (size_t c = 0; c < ids->n / PPL_CTX && c < PPL_CHUNKS; c++) {
		const int32_t *tok = ids->v + c * PPL_CTX;

		ret = ours_prefill(o, 0, tok, PPL_CTX, true);
		if (ret) {
			fail("our prefill", ret, NULL);
			break;
		}
		ppl_chunk(po, o->out, tok, PPL_CTX, (unsigned int)nv);
		llp_clear(l);
		ret = llp_decode(l, tok, pos, seq, want, PPL_CTX, err,
				 sizeof(err));
		if (ret) {
			fail("llama.cpp decode", ret, err);
			break;
		}
		for (int i = 0; i < PPL_CTX; i++)
			memcpy(ref + (size_t)i * nv, llp_logits(l, i),
			       (size_t)nv * sizeof(*ref));
		ppl_chunk(pl, ref, tok, PPL_CTX, (unsigned int)nv);
	}
	free(ref);
	return ret;
}

/*
 * Greedy decoding from G_PROMPTS prompts of held-out ids, each side its
 * own tokens: *same counts the tokens both picked, *ties the prompts ended
 * at a tie, *wrong the steps that differed where llama.cpp's margin was
 * wider than tol.
 */
static int greedy(struct ours *o, struct llp *l, const struct ids *ids,
		  double tol, unsigned int *same, unsigned int *ties,
		  unsigned int *wrong)
{
	int32_t pos[G_PROMPT], seq[G_PROMPT] = { 0 };
	uint8_t want[G_PROMPT] = { 0 };
	int nv = (int)o->mi.n_vocab, ret;
	char err[256] = "";

	for (int i = 0; i < G_PROMPT; i++)
		pos[i] = i;
	want[G_PROMPT - 1] = 1;
	for (size_t g = 0; g < G_PROMPTS; g++) {
		const int32_t *prompt = ids->v + g * (ids->n - G_PROMPT) /
					G_PROMPTS;
		const float *ref;

		ret = ours_prefill(o, 0, prompt, G_PROMPT, false);
		if (ret)
			return fail("our prefill", ret, NULL);
		llp_clear(l);
		ret = llp_decode(l, prompt, pos, seq, want, G_PROMPT, err,
				 sizeof(err));
		if (ret)
			return fail("llama.cpp prefill", ret, err);
		ref = llp_logits(l, -1);
		for (int32_t s = 0; s < G_STEPS; s++) {
			int32_t a = argmax(o->out, nv), p = G_PROMPT + s;
			uint8_t w = 1;

			if (a != argmax(ref, nv)) {
				if (margin(ref, nv) > tol)
					(*wrong)++;
				else
					(*ties)++;
				break;
			}
			(*same)++;
			ret = ours_decode(o, &a, &p, 1);
			if (ret)
				return fail("our decode", ret, NULL);
			ret = llp_decode(l, &a, &p, seq, &w, 1, err,
					 sizeof(err));
			if (ret)
				return fail("llama.cpp decode", ret, err);
			ref = llp_logits(l, 0);
		}
	}
	return 0;
}

/* One --greedy step of logits x: the line of the reference. */
static void ref_step(const float *x, int nv, double tol, int k)
{
	double max = x[argmax(x, nv)], sum = 0.0, mean = 0.0, var = 0.0;
	int32_t top[REF_TOPK];

	for (int i = 0; i < nv; i++) {
		sum += exp(x[i] - max);
		mean += x[i];
	}
	mean /= nv;
	for (int i = 0; i < nv; i++)
		var += (x[i] - mean) * (x[i] - mean);
	/* the k highest, ties to the lower id: k passes over the row */
	for (int j = 0; j < k; j++) {
		top[j] = -1;
		for (int i = 0; i < nv; i++) {
			bool taken = false;

			for (int t = 0; t < j && !taken; t++)
				taken = top[t] == i;
			if (!taken && (top[j] < 0 || x[i] > x[top[j]]))
				top[j] = i;
		}
	}
	printf("{\"token\": %d, \"margin\": %.6g, \"tol\": %g, \"std\": "
	       "%.6g, \"top\": [", argmax(x, nv), margin(x, nv), tol,
	       sqrt(var / nv));
	for (int j = 0; j < k; j++)
		printf("%s[%d, %.7g]", j ? ", " : "", top[j],
		       x[top[j]] - max - log(sum));
	printf("]}\n");
}

/* llama_compare --greedy: see the top of the file. */
static int ref_greedy(int argc, char **argv)
{
	struct llp_ctx_opts lo = { .n_ctx = REF_CTX, .n_batch = REF_CTX,
				   .n_seq_max = 1, .threads = THREADS,
				   .f32_kv = 1 };
	int32_t tok[REF_CTX], pos[REF_CTX], seq[REF_CTX] = { 0 }, n = 0;
	uint8_t want[REF_CTX] = { 0 };
	double tol = -1;
	char err[256] = "", *p;
	struct llp *l;
	int steps, k, ret;

	if (argc != 8)
		return 2;
	for (size_t i = 0; i < sizeof(g_cases) / sizeof(g_cases[0]); i++)
		if (!strcmp(g_cases[i].tname, argv[4]) && tol < 0)
			tol = g_cases[i].tol;
	steps = atoi(argv[5]);
	k = atoi(argv[6]);
	for (p = argv[7]; *p && n < REF_CTX; p += *p == ',')
		tok[n++] = (int32_t)strtol(p, &p, 10);
	if (tol < 0 || steps < 1 || k < 0 || k > REF_TOPK || !n ||
	    n + steps > REF_CTX)
		return 2;
	ret = llp_start(&l, argv[2], argv[3], &lo, err, sizeof(err));
	if (ret == -ENOENT) {
		printf("SKIP: no llama.cpp peer in %s (%s)\n", argv[2], err);
		return 77;
	}
	for (int i = 0; i < n; i++)
		pos[i] = i;
	want[n - 1] = 1;
	if (!ret)
		ret = llp_decode(l, tok, pos, seq, want, (unsigned int)n, err,
				 sizeof(err));
	for (int s = 0; !ret && s < steps; s++) {
		const float *x = llp_logits(l, -1);
		int32_t a = argmax(x, llp_n_vocab(l)), at = n + s;
		uint8_t w = 1;

		ref_step(x, llp_n_vocab(l), tol, k);
		if (s + 1 < steps)
			ret = llp_decode(l, &a, &at, seq, &w, 1, err,
					 sizeof(err));
	}
	if (ret)
		fail("llama.cpp", ret, err);
	llp_close(l);
	return ret ? 1 : 0;
}

/* A file into the daemon's model_dir (it loads only from there). */
static int copy_file(const char *from, const char *to)
{
	FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
	char buf[1 << 16];
	size_t n;
	int ret = 0;

	if (!in || !out)
		ret = -errno;
	while (!ret && (n = fread(buf, 1, sizeof(buf), in)) > 0)
		if (fwrite(buf, 1, n, out) != n)
			ret = -EIO;
	if (in && ferror(in))
		ret = -EIO;
	if (out && fclose(out) && !ret)
		ret = -EIO;
	if (in)
		fclose(in);
	return ret;
}

static int run_trained(struct ours *o, const char *lib, const char *dir,
		       const char *models, const struct ids *ids,
		       const struct pcase *c, bool *ok)
{
	struct llp_ctx_opts lo = { .n_ctx = PPL_CTX, .n_batch = PPL_CTX,
				   .n_seq_max = 1, .threads = THREADS,
				   .f32_kv = 1 };
	char file[64], from[512], path[512], err[256] = "";
	unsigned int same = 0, ties = 0, wrong = 0;
	struct ppl po = { 0 }, pl = { 0 };
	double d, vo, vl;
	struct llp *l;
	bool good;
	int ret;

	snprintf(file, sizeof(file), "%s-%s.gguf", c->model, c->tname);
	snprintf(from, sizeof(from), "%s/%s", models, file);
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	ret = copy_file(from, path);
	if (ret)
		return fail("copy", ret, from);
	ret = ours_load(o, file);
	if (ret) {
		unlink(path);
		return fail("MODEL_LOAD", ret, file);
	}
	ret = llp_start(&l, lib, path, &lo, err, sizeof(err));
	if (ret) {
		ours_free(o);
		unlink(path);
		return fail("llama.cpp", ret, err);
	}
	if (llp_n_vocab(l) != (int)o->mi.n_vocab)
		ret = fail("vocabulary sizes differ", -EPROTO, NULL);
	if (!ret)
		ret = perplexity(o, l, ids, &po, &pl);
	if (!ret)
		ret = greedy(o, l, ids, c->tol, &same, &ties, &wrong);
	llp_close(l);
	ours_free(o);
	unlink(path);
	if (ret)
		return ret;
	vo = ppl_value(&po);
	vl = ppl_value(&pl);
	d = fabs(vo / vl - 1);
	good = d <= c->ppl_tol && vo < o->mi.n_vocab / 4.0 && !wrong;
	printf("%-12s %-5s ppl %zu tokens: ours %.4f llama.cpp %.4f (diff "
	       "%.4f %%, tol %g %%; uniform %u)  greedy: %u/%u tokens equal, "
	       "%u prompts end at a tie, %u differ  %s\n", c->model, c->tname,
	       po.n, vo, vl, 100 * d, 100 * c->ppl_tol, o->mi.n_vocab, same,
	       G_PROMPTS * G_STEPS, ties, wrong, good ? "ok" : "FAIL");
	*ok &= good;
	return 0;
}

int main(int argc, char **argv)
{
	const char *lib = argc > 2 ? argv[2] : "build/ggml";
	const char *models = argc > 3 ? argv[3] : NULL;
	struct ids ids = { 0 };
	char idpath[512];
	char dir[] = "/tmp/llama_compare.XXXXXX", err[256] = "";
	char *extra[] = { "--model-dir", dir, "--threads", "2", NULL };
	struct privd d = { 0 };
	struct ours o = { 0 };
	struct llp *probe;
	bool ok = true;
	int ret;

	if (argc > 1 && !strcmp(argv[1], "--greedy")) {
		ret = ref_greedy(argc, argv);
		if (ret == 2)
			fprintf(stderr, "usage: llama_compare --greedy LLAMA_DIR "
				"MODEL.gguf f32|f16|q8_0|q4_0 N K(0..%d) "
				"ID,ID,...\n", REF_TOPK);
		return ret;
	}
	if (argc < 2) {
		fprintf(stderr, "usage: llama_compare SYSHAXD [LLAMA_DIR "
			"[MODELS_DIR]]\n");
		return 2;
	}
	ret = llp_open(&probe, lib, err, sizeof(err));
	if (ret == -ENOENT) {
		printf("SKIP: llama_compare: no llama.cpp peer in %s (%s); "
		       "run tools/fetch-ggml.sh %s\n", lib, err, lib);
		return 77;
	}
	if (ret) {
		fail("llama.cpp", ret, err);
		return 1;
	}
	printf("peer: %s\n", llp_version(probe));
	llp_close(probe);
	if (models) {
		snprintf(idpath, sizeof(idpath), "%s/heldout.ids", models);
		ids.v = ppl_read_ids(idpath, 1 << 24, &ids.n);
		if (!ids.v || ids.n < PPL_CTX) {
			fail("held-out ids", ids.v ? -EINVAL : -errno, idpath);
			free((void *)ids.v);
			return 1;
		}
	}
	if (!mkdtemp(dir)) {
		fail("mkdtemp", -errno, dir);
		free((void *)ids.v);
		return 1;
	}
	ret = privd_start_userspace(argv[1], extra, &d, &o.sh);
	if (!ret)
		ret = ours_buffers(&o);
	if (ret)
		fail("syshaxd", ret, NULL);
	for (size_t i = 0; !ret && !models &&
	     i < sizeof(g_cases) / sizeof(g_cases[0]); i++)
		ret = run_case(&o, lib, dir, &g_cases[i], &ok);
	for (size_t i = 0; !ret && models &&
	     i < sizeof(g_trained) / sizeof(g_trained[0]); i++)
		ret = run_trained(&o, lib, dir, models, &ids, &g_trained[i],
				  &ok);
	free((void *)ids.v);
	if (o.buf.addr)
		syshax_buf_free(o.sh, &o.buf);
	if (o.sh)
		syshax_close(o.sh);
	privd_stop(&d);
	rmdir(dir);
	if (ret)
		return 1;
	printf("llama_compare: %s\n", ok ? "ok" : "FAILED");
	return ok ? 0 : 1;
}
