// SPDX-License-Identifier: MIT
/*
 * shx_tok_encode (tokenizer.h) as llama.cpp's llama_vocab::impl::tokenize:
 * the special-token partition (tokenizer_st_partition: each control,
 * user-defined or unknown token, longest first, cut out of the raw text
 * wherever it occurs; control and unknown ones only with
 * SHX_TOK_PARSE_SPECIAL), then each raw fragment through the vocabulary's
 * tokenizer, with BOS/EOS around as it asks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tok_int.h"

struct frag {
	uint32_t off, len;
	int32_t id;		/* a special token, or -1: raw text */
};

struct frags {
	struct frag *f;
	size_t n, cap;
};

static int frag_add(struct frags *v, uint32_t off, uint32_t len, int32_t id)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? 2 * v->cap : 16;
		struct frag *f = realloc(v->f, cap * sizeof(*f));

		if (!f)
			return -ENOMEM;
		v->f = f;
		v->cap = cap;
	}
	v->f[v->n++] = (struct frag){ off, len, id };
	return 0;
}

static int partition(const struct shx_tok *tok, const char *text, size_t len,
		     bool parse_special, struct frags *out)
{
	struct frags cur = { 0 }, next = { 0 };
	int e = 0;

	if (len && (e = frag_add(&cur, 0, (uint32_t)len, -1)))
		return e;
	for (uint32_t k = 0; k < tok->n_special && !e; k++) {
		int32_t id = tok->special[k];
		const struct tok_ent *t = &tok->t[id];
		const char *st = tok->text + t->off;
		bool hit = false;

		if (!parse_special && (t->attr & (TA_CONTROL | TA_UNKNOWN)))
			continue;
		next.n = 0;
		for (size_t i = 0; i < cur.n && !e; i++) {
			struct frag f = cur.f[i];
			uint32_t pos = f.off, end = f.off + f.len;
			const char *m;

			if (f.id >= 0) {
				e = frag_add(&next, f.off, f.len, f.id);
				continue;
			}
			while (!e && (m = memmem(text + pos, end - pos, st,
						 t->len))) {
				uint32_t mo = (uint32_t)(m - text);

				hit = true;
				if (mo > pos)
					e = frag_add(&next, pos, mo - pos, -1);
				if (!e)
					e = frag_add(&next, 0, 0, id);
				pos = mo + t->len;
			}
			if (!e && pos < end)
				e = frag_add(&next, pos, end - pos, -1);
		}
		if (hit) {
			struct frags x = cur;

			cur = next;
			next = x;
		}
	}
	free(next.f);
	if (e) {
		free(cur.f);
		return e;
	}
	*out = cur;
	return 0;
}

ssize_t shx_tok_encode(const struct shx_tok *tok, const char *text,
		       size_t len, unsigned int flags, int32_t *ids, size_t max)
{
	struct tok_out o = { ids, ids ? max : 0, 0 };
	bool add = flags & SHX_TOK_ADD_SPECIAL, prev_special = true;
	struct frags v = { 0 };
	int e;

	if (!tok || (!text && len))
		return -EINVAL;
	if (len > UINT32_MAX / 4)
		return -E2BIG;
	e = partition(tok, text, len, flags & SHX_TOK_PARSE_SPECIAL, &v);
	if (e)
		return e;
	if (add && tok->add_bos)
		tok_emit(&o, tok->bos);
	for (size_t i = 0; i < v.n && !e; i++) {
		const struct frag *f = &v.f[i];

		if (f->id >= 0) {
			tok_emit(&o, f->id);
			prev_special = true;
			continue;
		}
		if (tok->type == SHX_VOCAB_SPM)
			/* SPM: a space before text that starts the input or
			 * follows a special token */
			e = shx_spm_encode(tok, text + f->off, f->len,
					   tok->add_space_prefix && prev_special,
					   &o);
		else
			e = shx_bpe_encode(tok, text + f->off, f->len, &o);
		prev_special = false;
	}
	free(v.f);
	if (e)
		return e;
	if (add && tok->add_eos)
		tok_emit(&o, tok->eos);
	return (ssize_t)o.n;
}
