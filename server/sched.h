/* SPDX-License-Identifier: MIT */
/*
 * The scheduler: one thread that owns the backend (backend.h) and runs the
 * model step after step. Every step puts each running request's next
 * token into DECODE jobs (cpu_max_batch_size rows each; syshaxd batches
 * them) and prefills one admitted request's next chunk of prompt with a
 * PREFILL job, so a long prompt never stalls the others for more than a
 * chunk. A request is admitted (FIFO) when a slot and the KV blocks for
 * its prompt and max_tokens are free (kvblocks.h), and gives them back the
 * step it ends. With the stand-in xPU, prefill runs there and each DECODE
 * may be deferred to it by syshaxd's dispatch rule (SYSHAX_JOB_MAY_DEFER),
 * on the same KV blocks.
 *
 * Each row comes back as the engine's top SCHED_TOPK (id, logit) pairs:
 * the first is the greedy token, a request's sampler draws from them. The
 * rows of requests that want logprobs go in DECODE jobs of their own that
 * ask for full logits (SYSHAX_STEP_OUT_LOGITS; syshaxd still batches them
 * with the others), for their log-sum-exp over the whole vocabulary.
 * With a tokenizer, each token's text is decoded here (UTF-8 whole) and
 * cut at stop strings, and an end-of-generation token ends the request.
 *
 * The HTTP side makes a request (sreq_new), submits it, reads its tokens
 * under sched_lock() and is told of each new token and of its end through
 * the wake callback, which the scheduler calls under its lock.
 */
#ifndef SRV_SCHED_H
#define SRV_SCHED_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "metrics.h"
#include "sample.h"
#include "tokenizer.h"

enum sreq_finish {
	FIN_NONE,		/* running */
	FIN_LENGTH,		/* max_tokens generated */
	FIN_STOP,		/* a stop token */
	FIN_ERROR,		/* err says why */
	FIN_CANCELLED,		/* the client went away */
};

#define SCHED_TOPK	64	/* pairs per output row (SYSHAX_STEP_TOPK_MAX) */

struct sreq {
	/* Set before sched_submit(), then read-only. */
	int32_t *prompt;
	uint32_t n_prompt, max_tokens;
	void *owner;			/* passed to the wake callback */
	struct shx_sampler *sampler;	/* NULL: greedy; freed with r */
	struct shx_stop *stop;		/* stop strings or NULL; freed with r */
	bool ignore_eos;		/* end-of-generation tokens do not end it */
	bool no_cache;			/* past the prefix cache, both ways */
	/* With logprobs: its rows come as full logits (the sampler draws
	 * from them; needs one), and lp gets 1 + n_top per out[] id: the
	 * token's raw logprob, then the n_top highest (shx_logprobs). */
	struct shx_logprob *lp;		/* or NULL; freed with r */
	uint32_t n_top;
	/* Under the scheduler's lock. */
	int32_t *out;			/* the ids generated: n_out of them */
	uint32_t n_out;
	char *text;			/* their text (with a tokenizer) */
	size_t text_len, text_cap;
	struct shx_detok detok;
	enum sreq_finish finish;
	char err[192];
	bool cancelled;
	/* The scheduler's. */
	unsigned int refs;
	double t_arrive, t_last;
	struct sreq *next;		/* the wait queue */
};

struct sched_conf {
	unsigned int cpu_max_batch_size; /* rows per DECODE job */
	unsigned int max_running;	/* requests holding a slot */
	unsigned int max_queue;		/* waiting ones; more get 503 */
	unsigned int kv_blocks;		/* in the K and V caches */
	unsigned int block_size;	/* positions per block */
	unsigned int max_ctx;		/* prompt + max_tokens */
	unsigned int prefill_chunk;	/* prompt tokens per PREFILL job */
	unsigned int prefix_cache;	/* prefix cache entries; 0: none */
	unsigned int request_timeout;	/* s from arrival to end; 0: none */
	uint32_t kv_type;		/* SYSHAX_DT_* */
	const struct shx_tok *tok;	/* text and end-of-generation; or NULL */
	bool xpu_standin;
	const char *xpu_worker;		/* its socket, or NULL */
	bool pd_offload;		/* with an xPU: decode MAY_DEFER */
};

struct sched;

/* Opens the backend (bo), loads the model and starts the thread; says why
 * on stderr when it cannot. */
int sched_start(struct sched **out, const struct sched_conf *c,
		const struct be_opts *bo, void (*wake)(void *owner));
/* Stops the thread, fails every open request (their owners woken) and
 * closes the backend; requests may still be put. */
void sched_stop(struct sched *s);
/* Frees s once no request is held any more. */
void sched_free(struct sched *s);

/* A request for n_prompt ids and max_tokens; one reference, the caller's. */
struct sreq *sreq_new(uint32_t n_prompt, uint32_t max_tokens);
/* r wants logprobs with n_top top_logprobs: 0 or -ENOMEM. */
int sreq_logprobs(struct sreq *r, uint32_t n_top);
/* Drops a reference (under the lock or not: it takes it). */
void sreq_put(struct sched *s, struct sreq *r);
/* Queues r (it takes a reference of its own): 0, -EAGAIN (queue full),
 * -ENODEV (no backend now). */
int sched_submit(struct sched *s, struct sreq *r);
/* The client is gone: r ends and frees its slot at the next step. */
void sched_cancel(struct sched *s, struct sreq *r);

void sched_lock(struct sched *s);
void sched_unlock(struct sched *s);
/* The model (under the lock or not: set once at start). */
const struct syshax_model_info *sched_model(const struct sched *s);
const struct sched_conf *sched_conf(const struct sched *s);
/* The metrics, under the lock. */
const struct metrics *sched_metrics(const struct sched *s);
bool sched_up(const struct sched *s);

#endif /* SRV_SCHED_H */
