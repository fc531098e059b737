/* SPDX-License-Identifier: MIT */
/*
 * llama.cpp's own library as a peer: whole decode steps of a GGUF model
 * run by libllama on the CPU, to check the engine token for token and to
 * benchmark it. The libraries are dlopen'ed from a folder that
 * tools/fetch-ggml.sh fills (libllama.so, libggml*.so, libggml-cpu-*.so);
 * no llama.cpp header is needed to build.
 *
 *	struct llp *l;
 *	struct llp_ctx_opts o = { .n_ctx = 256, .n_batch = 64, .n_seq_max = 1,
 *				  .threads = 4, .f32_kv = 1 };
 *	char err[256];
 *
 *	if (llp_open(&l, "build/ggml", err, sizeof(err)) == -ENOENT)
 *		skip;
 *	llp_load(l, "m.gguf", err, sizeof(err));
 *	llp_context(l, &o, err, sizeof(err));
 *	llp_decode(l, tok, pos, seq, want, n, err, sizeof(err));
 *	logits = llp_logits(l, n - 1);	// llp_n_vocab(l) floats
 *
 * Every int function returns 0 or a negative errno, with a message in err.
 * llama.cpp logs only warnings and errors unless SYSHAX_LLAMA_LOG=1.
 */
#ifndef LLAMA_PEER_H
#define LLAMA_PEER_H

#include <stddef.h>
#include <stdint.h>

struct llp;

/*
 * dlopen libllama and ggml from dir; check the struct layouts. -ENOENT
 * when the libraries are absent or do not load (callers skip), -EPROTO
 * when the layout check fails (a libllama other than the one declared).
 */
int llp_open(struct llp **out, const char *dir, char *err, size_t errlen);

/*
 * Loads a GGUF file on the CPU, no mmap (load_mode none: pages of an
 * mmapped model are evicted after ~a minute idle on this machine and would
 * time erratically), n_gpu_layers 0. Once per llp.
 */
int llp_load(struct llp *l, const char *gguf, char *err, size_t errlen);

struct llp_ctx_opts {
	/* n_ctx is for all n_seq_max sequences: each gets n_ctx / n_seq_max,
	 * padded by llama.cpp (512 for 8 sequences gives each 256) */
	unsigned int n_ctx, n_batch, n_seq_max, threads;
	/* KV cache f32 and flash attention off, for tight comparisons */
	int f32_kv;
};

/* A context on the loaded model (one per llp; a second replaces it). */
int llp_context(struct llp *l, const struct llp_ctx_opts *o, char *err,
		size_t errlen);

/*
 * llp_open, llp_load and llp_context in one: *out is NULL on failure
 * (nothing left open), and the error is the first call's (-ENOENT: no
 * peer in dir, callers skip).
 */
int llp_start(struct llp **out, const char *dir, const char *gguf,
	      const struct llp_ctx_opts *o, char *err, size_t errlen);

/*
 * One llama_decode of n tokens (n <= n_batch): token ids, positions,
 * sequence ids (< n_seq_max; several sequences may share the batch) and
 * which rows want logits (nonzero).
 */
int llp_decode(struct llp *l, const int32_t *tok, const int32_t *pos,
	       const int32_t *seq, const uint8_t *logits, unsigned int n,
	       char *err, size_t errlen);

/* Logits of row i of the last decode (llama_get_logits_ith: i < 0 counts
 * from the end), llp_n_vocab() floats; NULL where the row has none. */
const float *llp_logits(struct llp *l, int i);

int llp_n_vocab(const struct llp *l);

/* Threads of the decode from now on (benchmarks); -EINVAL before a context. */
int llp_threads(struct llp *l, int n);

/* Clears the KV cache (memory) of every sequence, for a new run. */
void llp_clear(struct llp *l);

/* "llama.cpp <commit> (libllama <version>)" and the package VERSION that
 * tools/fetch-ggml.sh wrote, where known. */
const char *llp_version(const struct llp *l);

/*
 * The tokenizer (tests/text): a GGUF's vocabulary alone (vocab_only: no
 * tensors are read, the file may have none), then llama_tokenize and
 * llama_token_to_piece on it. Once per llp, instead of llp_load.
 */
int llp_load_vocab(struct llp *l, const char *gguf, char *err, size_t errlen);
/* llama_tokenize: the ids' count; more than max: minus the count. */
int32_t llp_tokenize(struct llp *l, const char *text, int32_t len,
		     int32_t *ids, int32_t max, int add_special,
		     int parse_special);
/* llama_token_to_piece: bytes written; too small: minus the length. */
int32_t llp_piece(struct llp *l, int32_t id, char *buf, int32_t len,
		  int32_t lstrip, int special);
/* llama_vocab_bos/eos/eot (-1: none) and llama_vocab_is_eog. */
int32_t llp_vocab_bos(struct llp *l);
int32_t llp_vocab_eos(struct llp *l);
int32_t llp_vocab_eot(struct llp *l);
int llp_vocab_is_eog(struct llp *l, int32_t id);

void llp_close(struct llp *l);

/* ---- chat templates: llama_chat_apply_template (no model needed) ---- */

struct llp_chat_msg {		/* struct llama_chat_message */
	const char *role;
	const char *content;
};

/*
 * llama.cpp's rendering of n messages by tmpl (a template's text or one
 * of its names) into buf, snprintf-like: the bytes needed; -ENOENT when
 * libllama knows no such template, -EPROTO without the symbol.
 */
int llp_chat_apply(struct llp *l, const char *tmpl,
		   const struct llp_chat_msg *msgs, size_t n, int add_assistant,
		   char *buf, size_t len);

#endif
