/* SPDX-License-Identifier: MIT */
/* syshax-run: a model's greedy decode through syshaxd (see main.c). */
#ifndef SHX_RUN_H
#define SHX_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "tokenizer.h"

struct xpu;

struct run_opts {
	const char *model;		/* as given */
	const char *syshaxd;		/* the daemon to start */
	const char *worker;		/* --xpu-worker: its socket */
	int32_t *prompt;		/* -t, or -p's ids */
	const char *text;		/* -p */
	unsigned int plen;
	unsigned int n;			/* tokens generated per sequence */
	unsigned int seqs;
	unsigned int threads;		/* 0: the daemon's default */
	unsigned int block_size;
	uint32_t kv_type;		/* SYSHAX_DT_* */
	bool standin, private, json, quiet;
	/* Called when every sequence's token at position step (0: the one
	 * the prefill gave) is in tokens (seqs x n); NULL: none. */
	void (*on_step)(void *arg, const int32_t *tokens, unsigned int step);
	void *step_arg;
};

/* The backend, the model and the buffers of one run. */
struct run {
	const struct run_opts *o;
	struct be_opts beo;
	struct backend be;		/* sh, a private daemon, the paths */
	struct syshax_model_info info;
	struct syshax_buffer kv, io;	/* kv: K, then V at kv_bytes */
	uint64_t kv_bytes;
	uint32_t bps;			/* blocks per sequence (= max_blocks) */
	uint32_t num_blocks;
	uint64_t off_prompt, off_tok, off_pos, off_bt, off_out;
	struct xpu *xpu;		/* --xpu-standin, --xpu-worker */
};

/* What a run produced. */
struct run_result {
	int32_t *tokens;		/* seqs x n */
	char *sides;			/* 'C' or 'X' per decode step, NUL ended */
	char prefill_side;		/* 'C' or 'X': where the prefill ran */
	unsigned int steps, steps_cpu, steps_xpu;
	double prefill_s, decode_s;
};

/* session.c: 0 or -errno; each says what failed on stderr. */
int run_open(struct run *r, const struct run_opts *o);
int run_load(struct run *r);
int run_generate(struct run *r, struct run_result *res);
void run_close(struct run *r);

/* text.c: -p, the prompt as text through the model's own tokenizer and
 * the tokens back as text. */
struct run_text {
	struct shx_tok *tok;
	struct shx_detok d;	/* sequence 0, streamed to stdout */
	bool stream;
	char *buf;		/* its pieces' text, grown to fit */
	size_t cap;
};

/* The tokenizer of the model file here; 0 or -errno, with a message. */
int text_open(struct run_text *t, const char *model);
/* The prompt's ids (BOS as the vocabulary asks, special tokens parsed)
 * into o->prompt; 0 or -errno, with a message. */
int text_prompt(struct run_text *t, const char *s, struct run_opts *o);
/* run_opts.on_step: sequence 0's new token to stdout, when t->stream. */
void text_step(void *arg, const int32_t *tokens, unsigned int step);
void text_close(struct run_text *t);

#endif /* SHX_RUN_H */
