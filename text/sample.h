/* SPDX-License-Identifier: MIT */
/*
 * The sampler: the next token from one row of logits (a full f32 row or
 * the engine's SYSHAX_STEP_OUT_TOPK pairs), and stop strings over the
 * streamed text (docs/text.md, "Sampling" and "Stop strings").
 *
 *	struct shx_sample_params p;
 *	struct shx_sampler *s;
 *	struct shx_sample_out o;
 *
 *	shx_sample_defaults(&p);
 *	p.temperature = 0.7f;
 *	if (shx_sample_check(&p, err, sizeof(err)))
 *		reply 400 with err;
 *	shx_sampler_new(&p, n_vocab, &s);
 *	for (;;) {
 *		shx_sampler_sample(s, logits, n_vocab, &o);
 *		shx_sampler_accept(s, o.id);
 *	}
 *	shx_sampler_free(s);
 *
 * Order as llama.cpp's sampler chain: penalties, top-k, top-p, min-p,
 * temperature, then one draw. A sampler has no shared state: one per
 * sequence, used by one thread at a time. Every int function returns 0 or
 * a negative errno.
 */
#ifndef SHX_SAMPLE_H
#define SHX_SAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SHX_SAMPLE_LOGPROBS_MAX 20	/* OpenAI's top_logprobs limit */

struct shx_sample_params {
	float temperature;	/* 0: greedy; < 0 is rejected (-EINVAL) */
	int32_t top_k;		/* <= 0: off */
	float top_p;		/* 0..1; 1: off */
	float min_p;		/* 0..1; 0: off */
	float repeat_penalty;	/* > 0; 1: off (llama.cpp's) */
	float frequency_penalty, presence_penalty; /* -2..2; 0: off (OpenAI's) */
	int32_t penalty_last_n;	/* tokens the penalties look back at; -1: all */
	uint64_t seed;		/* same seed, same params, same logits: same tokens */
	int32_t n_logprobs;	/* top_logprobs: 0..SHX_SAMPLE_LOGPROBS_MAX (20) */
	/* Added to the agreed API: OpenAI's logprobs, out->logprob wanted
	 * (n_logprobs > 0 implies it); without it a full row costs no exp. */
	bool logprobs;
};

/* OpenAI's defaults: temperature 1, top_p 1, no top-k, min-p or penalties,
 * penalty_last_n 64 (llama.cpp's), seed 0, no logprobs. */
void shx_sample_defaults(struct shx_sample_params *p);

/* -EINVAL with a message naming the bad field (NaN is out of every range). */
int shx_sample_check(const struct shx_sample_params *p, char *err,
		     size_t errlen);

struct shx_sampler;

/* -EINVAL for params shx_sample_check() rejects or n_vocab < 1, -ENOMEM. */
int shx_sampler_new(const struct shx_sample_params *p, int32_t n_vocab,
		    struct shx_sampler **s);
void shx_sampler_free(struct shx_sampler *s);

/* A token that joined the sequence (the penalties' history); ids outside
 * 0..n_vocab-1 are ignored. */
void shx_sampler_accept(struct shx_sampler *s, int32_t id);

/* One (s32 id, f32 logit) pair of a SYSHAX_STEP_OUT_TOPK row. */
struct shx_logit_pair {
	int32_t id;
	float logit;
};

struct shx_logprob {
	int32_t id;
	float logprob;
};

/*
 * logprob and top[] (the n_top = n_logprobs highest, highest first, ties:
 * lower id) are the log-softmax of the logits after penalties, before
 * top-k/top-p/min-p and temperature; over the pairs given when sampling
 * pairs. Without logprobs: logprob 0, n_top 0.
 */
struct shx_sample_out {
	int32_t id;
	float logprob;
	int32_t n_top;
	struct shx_logprob top[SHX_SAMPLE_LOGPROBS_MAX];
};

/* A full row: n == n_vocab. -EINVAL: another n, a NaN or +inf logit
 * (where seen), or no finite logit. */
int shx_sampler_sample(struct shx_sampler *s, const float *logits, int32_t n,
		       struct shx_sample_out *out);

/* The engine's TOPK rows: 1..n_vocab pairs, distinct ids < n_vocab, in any
 * order (the engine's is highest first). -EINVAL as above or a bad id. */
int shx_sampler_sample_pairs(struct shx_sampler *s,
			     const struct shx_logit_pair *pairs, int32_t n,
			     struct shx_sample_out *out);

/*
 * The raw log-softmax of a full row of n logits, before any penalty,
 * truncation or temperature (vLLM's raw_logprobs, its default): out->id =
 * id, out->logprob its logprob, out->top[] the n_top = k (0..20) highest,
 * highest first, ties: lower id. One pass for the top k, one for the lse
 * (one expf per logit). -EINVAL: n < 1, id outside 0..n-1, k outside
 * 0..SHX_SAMPLE_LOGPROBS_MAX, a NaN or +inf logit, or no finite one.
 */
int shx_logprobs(const float *logits, int32_t n, int32_t id, int32_t k,
		 struct shx_sample_out *out);

/*
 * Stop strings (OpenAI's stop): an incremental matcher over the generated
 * text. It holds back exactly the bytes that could still begin a stop
 * string and cuts the text before the first one matched (the one that
 * ends first; of those, the longest); the stop string is not returned.
 */
#define SHX_STOP_MAX	 4	/* OpenAI's limit */
#define SHX_STOP_LEN_MAX 256	/* bytes of one stop string */

struct shx_stop;

/* n 0..SHX_STOP_MAX strings of 1..SHX_STOP_LEN_MAX bytes, copied; else
 * -EINVAL. -ENOMEM. */
int shx_stop_new(const char *const *stops, size_t n, struct shx_stop **st);
void shx_stop_free(struct shx_stop *st);

/*
 * Feeds len bytes of generated text; writes to out the bytes now safe to
 * emit and returns their count. *hit: a stop string matched, out ends
 * before it, and later pushes return 0. outlen must be at least
 * len + SHX_STOP_LEN_MAX - 1 (what may be held back), else -ENOSPC and
 * nothing is consumed.
 */
ssize_t shx_stop_push(struct shx_stop *st, const char *text, size_t len,
		      char *out, size_t outlen, bool *hit);

/* The end of the text without a stop: the bytes held back (fewer than
 * SHX_STOP_LEN_MAX); -ENOSPC when outlen is smaller than them. */
ssize_t shx_stop_flush(struct shx_stop *st, char *out, size_t outlen);

#endif
