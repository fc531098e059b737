/* SPDX-License-Identifier: MIT */
/*
 * The tokenizer's insides, shared by text/vocab.c (loading), bpe.c, spm.c,
 * encode.c and detok.c. Token attributes, the pre-tokenizer and the
 * lookups mirror llama.cpp's llama-vocab.cpp, whose results are the bar.
 */
#ifndef SHX_TOK_INT_H
#define SHX_TOK_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer.h"

/* llama_token_attr's bits */
enum {
	TA_UNDEFINED = 0,
	TA_UNKNOWN = 1 << 0,
	TA_UNUSED = 1 << 1,
	TA_NORMAL = 1 << 2,
	TA_CONTROL = 1 << 3,
	TA_USER_DEFINED = 1 << 4,
	TA_BYTE = 1 << 5,
};

enum shx_vocab_type { SHX_VOCAB_SPM, SHX_VOCAB_BPE };

struct tok_ent {
	uint32_t off, len;	/* text in shx_tok.text */
	uint32_t poff, plen;	/* piece (special rendered) in shx_tok.piece */
	float score;
	uint16_t attr;
	bool eog;
};

struct tok_merge {
	uint32_t loff, llen, roff, rlen;	/* in shx_tok.mtext */
	int32_t rank;
};

#define SHX_PRE_MAX 4

struct shx_tok {
	enum shx_vocab_type type;
	int32_t n;
	struct tok_ent *t;
	char *text, *piece, *mtext;
	uint32_t *map, map_mask;	/* text -> id + 1, open addressing */
	struct tok_merge *m;
	uint32_t *mmap, mmap_mask;	/* (left, right) -> merge index + 1 */
	uint32_t n_merges;
	int32_t bos, eos, eot, eom, unk, pad;
	bool add_bos, add_eos, add_space_prefix, ignore_merges;
	int32_t *special;		/* partition order: longest first */
	uint32_t n_special;
	void *pre[SHX_PRE_MAX];		/* pcre2_code *, applied in turn */
	unsigned int n_pre;
	char *chat_template;
};

uint32_t shx_hash(const char *s, size_t n, uint32_t h);
#define SHX_HASH_SEED 2166136261u
/* The id of exactly these bytes, or -1. */
int32_t shx_tok_lookup(const struct shx_tok *tok, const char *s, size_t n);
/* The rank of merging left with right, or -1. */
int32_t shx_bpe_rank(const struct shx_tok *tok, const char *l, size_t ln,
		     const char *r, size_t rn);

/* Ids as they are made: written while there is room, always counted. */
struct tok_out {
	int32_t *ids;
	size_t max, n;
};

static inline void tok_emit(struct tok_out *o, int32_t id)
{
	if (o->n < o->max)
		o->ids[o->n] = id;
	o->n++;
}

/* One fragment of raw text (no special tokens in it). 0 or -ENOMEM. */
int shx_bpe_encode(const struct shx_tok *tok, const char *s, size_t n,
		   struct tok_out *o);
int shx_spm_encode(const struct shx_tok *tok, const char *s, size_t n,
		   bool space_prefix, struct tok_out *o);

/* bpe.c: the pre-tokenizer of a tokenizer.ggml.pre name: 0, -EOPNOTSUPP
 * (unknown name), -ENOMEM, -EINVAL (a pattern PCRE2 refuses, err says). */
int shx_pre_init(struct shx_tok *tok, const char *pre, size_t len,
		 char *err, size_t errlen);
void shx_pre_free(struct shx_tok *tok);
/* The piece of a byte-level BPE token's text (GPT-2's byte to unicode
 * map reversed, as llama.cpp's llama_decode_text), into out (at most
 * 3 * n + 16 bytes + n for the marker of an unknown character); returns
 * its length. */
size_t shx_bpe_decode_text(const char *s, size_t n, char *out);
size_t shx_bpe_decode_size(size_t n);

#endif /* SHX_TOK_INT_H */
