/* SPDX-License-Identifier: MIT */
/*
 * The tokenizer of a GGUF model, read from its tokenizer.ggml.* keys and
 * exact against llama.cpp's (llama_tokenize, llama_token_to_piece): model
 * "llama" (SentencePiece BPE by scores, byte fallback <0xXX>, a leading
 * space) and "gpt2" (byte-level BPE by merge rank, a pre-tokenizer named by
 * tokenizer.ggml.pre: default, gpt-2, llama3/llama-bpe, qwen2 and their
 * aliases). docs/text.md says what differs and why.
 *
 *	struct shx_tok *tok;
 *	char err[256], out[256];
 *	int32_t ids[256];
 *	if (shx_tok_open("m.gguf", &tok, err, sizeof(err)))
 *		...;
 *	ssize_t n = shx_tok_encode(tok, s, strlen(s), SHX_TOK_ADD_SPECIAL,
 *				   ids, 256);
 *	struct shx_detok d;
 *	shx_detok_init(&d, tok, 0);
 *	for (i = 0; i < n; i++)	// < 0: a bad id, or out too small
 *		fwrite(out, 1, shx_detok_push(&d, ids[i], out, sizeof(out)), f);
 *	fwrite(out, 1, shx_detok_flush(&d, out, sizeof(out)), f);
 *
 * A loaded struct shx_tok is read-only: any number of threads may encode
 * and decode with it at once.
 */
#ifndef SHX_TOKENIZER_H
#define SHX_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct shx_tok;

/* From a GGUF image in memory; copies what it keeps. 0, -EINVAL (err says
 * why), -ENOMEM, -EOPNOTSUPP (a tokenizer.ggml.model or .pre it does not
 * know). */
int shx_tok_load(const void *gguf, size_t len, struct shx_tok **tok,
		 char *err, size_t errlen);
/* The same from a file (mapped while it loads); -errno of open/mmap too. */
int shx_tok_open(const char *gguf_path, struct shx_tok **tok, char *err,
		 size_t errlen);
void shx_tok_free(struct shx_tok *tok);

#define SHX_TOK_ADD_SPECIAL	(1u << 0) /* BOS/EOS as the vocabulary asks:
					   * llama_tokenize's add_special */
#define SHX_TOK_PARSE_SPECIAL	(1u << 1) /* control tokens written in the
					   * text become their ids */

/* The number of ids; more than max: only max written (call again with more
 * room); -EINVAL (NULL text with len > 0), -ENOMEM, -E2BIG (over 1 GiB of
 * text), -EIO (a PCRE2 match failed: its limits). Invalid UTF-8 in text
 * is read as U+FFFD per bad byte, as llama.cpp does. */
ssize_t shx_tok_encode(const struct shx_tok *tok, const char *text,
		       size_t len, unsigned int flags, int32_t *ids,
		       size_t max);

#define SHX_TOK_RENDER_SPECIAL	(1u << 0) /* control tokens' text too
					   * (llama_token_to_piece's special) */

/* The token's bytes (not NUL-terminated), snprintf-like: the full length,
 * only len of them written; -EINVAL for a bad id. */
ssize_t shx_tok_piece(const struct shx_tok *tok, int32_t id,
		      unsigned int flags, char *buf, size_t len);

/* shx_detok_init flags, beside SHX_TOK_RENDER_SPECIAL: the ids continue a
 * text already shown (generated after a prompt), so the first piece keeps
 * its leading space; without it a vocabulary that adds a space prefix
 * (SPM) loses the first piece's, as llama_detokenize does. */
#define SHX_DETOK_CONTINUE	(1u << 1)

/* Incremental decode state, caller-allocated, no malloc. */
struct shx_detok {
	const struct shx_tok *tok;
	unsigned int flags;
	bool started;
	uint8_t npend;		/* bytes of an unfinished character */
	uint8_t pend[4];
};

void shx_detok_init(struct shx_detok *d, const struct shx_tok *tok,
		    unsigned int flags);
/* Bytes of whole UTF-8 characters now ready, never half a character;
 * invalid UTF-8 becomes U+FFFD, one per maximal subpart (as Python's
 * decode(errors="replace") and browsers do). -EINVAL for a bad id,
 * -ENOBUFS when out cannot take them (nothing consumed: call again with
 * shx_detok_room's bytes). */
ssize_t shx_detok_push(struct shx_detok *d, int32_t id, char *out,
		       size_t len);
/* The most shx_detok_push(d, id) can write: every byte held and of the
 * piece a U+FFFD of 3 (a piece may be any bytes, and longer than any
 * buffer fixed in advance); 0 for a bad id. */
size_t shx_detok_room(const struct shx_detok *d, int32_t id);
/* shx_detok_push(d, id) (id >= 0) or shx_detok_flush(d) (id < 0) into
 * *buf, first grown (realloc) to the room it needs; *cap is its size
 * (NULL and 0 to start). -ENOMEM, or as those. */
ssize_t shx_detok_next(struct shx_detok *d, int32_t id, char **buf,
		       size_t *cap);
/* What is left (an unfinished character as U+FFFD); -ENOBUFS as above (3
 * bytes always suffice). The state is ready for a new text after it. */
ssize_t shx_detok_flush(struct shx_detok *d, char *out, size_t len);
/* The text of n ids, pushed and flushed with flags, as one malloc'ed
 * NUL-terminated string of *len bytes; ids outside the vocabulary have no
 * text (a model's vocabulary may be padded past the tokenizer's). NULL:
 * out of memory. */
char *shx_tok_decode(const struct shx_tok *tok, const int32_t *ids,
		     size_t n, unsigned int flags, size_t *len);

int32_t shx_tok_n_vocab(const struct shx_tok *tok);
/* -1: none */
int32_t shx_tok_bos(const struct shx_tok *tok);
int32_t shx_tok_eos(const struct shx_tok *tok);
int32_t shx_tok_eot(const struct shx_tok *tok);
/* EOS, EOT, EOM and the other end-of-generation tokens llama.cpp counts. */
bool shx_tok_is_eog(const struct shx_tok *tok, int32_t id);
/* tokenizer.chat_template, or NULL */
const char *shx_tok_chat_template(const struct shx_tok *tok);
/* The id whose text is exactly this ("<|im_end|>"), or -1. */
int32_t shx_tok_find(const struct shx_tok *tok, const char *text);

#endif /* SHX_TOKENIZER_H */
