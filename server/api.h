/* SPDX-License-Identifier: MIT */
/*
 * The OpenAI API's JSON (cJSON): a /v1/completions or /v1/chat/completions
 * body checked and read into a struct api_req, and the objects the server
 * answers with: a whole completion, a streamed chunk, an error object
 * {"error": {"message", "type", "param", "code"}}. Every builder returns a
 * malloc'ed string, NULL when out of memory.
 */
#ifndef SRV_API_H
#define SRV_API_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "sample.h"

struct shx_tok;

/* What a request is checked against and turned into ids with. */
struct api_ctx {
	uint32_t n_vocab;
	uint32_t max_ctx;		/* prompt + max_tokens */
	uint32_t max_kv;		/* positions the whole KV cache holds */
	const struct shx_tok *tok;	/* NULL: token-id prompts only */
	int tmpl;			/* enum shx_chat_tmpl, -1: none */
};

struct api_req {
	bool chat, stream, include_usage, return_tokens, ignore_eos;
	bool no_cache;			/* cache_prompt: false */
	int32_t *ids;			/* the prompt, malloc'ed */
	uint32_t n_ids, max_tokens;
	struct shx_sample_params sp;
	bool greedy;			/* no sampler needed */
	char *stops[SHX_STOP_MAX];	/* malloc'ed */
	size_t n_stops;
	/* Chat's logprobs and top_logprobs, completions' logprobs: N. */
	bool logprobs;
	uint32_t n_top;			/* 0..SHX_SAMPLE_LOGPROBS_MAX */
};

struct api_err {
	int status;			/* HTTP */
	const char *type;		/* "invalid_request_error", ... */
	char param[64];			/* the field at fault, or "" */
	const char *code;		/* or NULL */
	char msg[256];
};

/* 0, or -EINVAL with *e filled (the status to answer with). */
int api_parse(const char *body, size_t len, bool chat,
	      const struct api_ctx *lim, struct api_req *q,
	      struct api_err *e);
void api_req_free(struct api_req *q);

/* Fills *e and returns it, for one-line error replies. */
struct api_err *api_err_set(struct api_err *e, int status, const char *type,
			    const char *param, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
char *api_error_json(const struct api_err *e);

/* What a response names: its id, creation time and the model; the
 * tokenizer that gives logprobs' tokens their text (or NULL). */
struct api_meta {
	const char *id, *model;
	long created;
	const struct shx_tok *tok;
};

/* The tokens of a reply or a chunk: n ids, and with q->logprobs their
 * logprobs, 1 + q->n_top per id (the token's, then its top_logprobs);
 * *off: completions' text_offset of the first, advanced past them. */
struct api_toks {
	const int32_t *ids;
	uint32_t n;
	const struct shx_logprob *lp;
	size_t *off;
};

/* A whole completion: the tokens generated, their text, why it ended
 * ("length", "stop"). */
char *api_completion_json(const struct api_req *q, const struct api_meta *m,
			  const struct api_toks *t, const char *text,
			  const char *finish);
/* A streamed chunk of tokens (t NULL or t->n 0: none) and text; first: a
 * chat's first chunk (its role); finish NULL while it runs; with usage,
 * the usage object (include_usage's last chunk, no choices). */
char *api_chunk_json(const struct api_req *q, const struct api_meta *m,
		     const struct api_toks *t, const char *text, bool first,
		     const char *finish, const uint32_t *usage_gen);
/* POST /tokenize and /detokenize (llama-server's): {"content": text} ->
 * {"tokens": [ids]}, {"tokens": [ids]} -> {"content": text}. */
char *api_tokenize(const char *body, size_t len, const struct api_ctx *c,
		   bool detok, struct api_err *e);
char *api_models_json(const char *model, long created, uint32_t n_vocab,
		      uint32_t max_ctx);

#endif /* SRV_API_H */
