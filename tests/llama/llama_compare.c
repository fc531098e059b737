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
 *	llama_compare SYSHAXD [LLAMA_DIR]
 * Exit: 0 all within tolerance, 1 not, 77 (SKIP) without the peer.
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
#include "privd.h"
#include "stepjob.h"
#include "syshax/rt.h"
#include "syshax_ops.h"

#define PROMPT		32
#define STEPS		32
#define NSEQ		8
#define BSTEPS		16	/* decode steps of the 8-sequence batch */
#define BLOCK		16
#define MAXB		4	/* 64 positions per sequence */
#define THREADS		2

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
	o->kv_bytes = (size_t)o->mi.n_layer * NSEQ * MAXB * BLOCK *
		      o->mi.n_head_kv * o->mi.head_dim * sizeof(float);
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
	o->tok = (int32_t *)TAKE(64 * 4);
	o->pos = (int32_t *)TAKE(64 * 4);
	o->out = (float *)TAKE(64 * 1024 * 4);
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
 * into out. */
static int ours_prefill(struct ours *o, int s, const int32_t *tok, int n)
{
	struct sj_step st = step(o, (uint32_t)n);
	struct syshax_job j;

	memcpy(o->tok, tok, (size_t)n * 4);
	st.bt = at(o, o->bt + s * MAXB);
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
	ret = ours_prefill(o, 0, tok, PROMPT);
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
		ret = ours_prefill(o, s, ptok, n);
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
	ret = llp_open(&l, lib, err, sizeof(err));
	if (!ret)
		ret = llp_load(l, path, err, sizeof(err));
	if (!ret)
		ret = llp_context(l, &lo, err, sizeof(err));
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

int main(int argc, char **argv)
{
	const char *lib = argc > 2 ? argv[2] : "build/ggml";
	char dir[] = "/tmp/llama_compare.XXXXXX", err[256] = "";
	char *extra[] = { "--model-dir", dir, "--threads", "2", NULL };
	struct privd d = { 0 };
	struct ours o = { 0 };
	struct llp *probe;
	bool ok = true;
	int ret;

	if (argc < 2) {
		fprintf(stderr, "usage: llama_compare SYSHAXD [LLAMA_DIR]\n");
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
	if (!mkdtemp(dir)) {
		fail("mkdtemp", -errno, dir);
		return 1;
	}
	ret = privd_start_userspace(argv[1], extra, &d, &o.sh);
	if (!ret)
		ret = ours_buffers(&o);
	if (ret)
		fail("syshaxd", ret, NULL);
	for (size_t i = 0; !ret && i < sizeof(g_cases) / sizeof(g_cases[0]);
	     i++)
		ret = run_case(&o, lib, dir, &g_cases[i], &ok);
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
