// SPDX-License-Identifier: MIT
/*
 * Incremental decode (tokenizer.h): each token's piece as
 * llama_token_to_piece gives it, cut at character boundaries so that a
 * stream never shows half a UTF-8 character; each maximal invalid
 * subpart is one U+FFFD. The first piece loses one
 * leading space where the vocabulary adds a space prefix (SPM), as
 * llama_detokenize does, unless SHX_DETOK_CONTINUE.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tok_int.h"
#include "utf8.h"

static const char g_fffd[3] = { '\xef', '\xbf', '\xbd' };

void shx_detok_init(struct shx_detok *d, const struct shx_tok *tok,
		    unsigned int flags)
{
	memset(d, 0, sizeof(*d));
	d->tok = tok;
	d->flags = flags;
}

/* Emits what is whole in pend + s[0..n) and keeps an unfinished tail in
 * pend; -ENOBUFS (d unchanged) when out cannot take it. */
static ssize_t drain(struct shx_detok *d, const char *s, size_t n, char *out,
		     size_t len)
{
	const uint8_t *u = (const uint8_t *)s;
	size_t np = d->npend, total = np + n, i = 0, o = 0;
	uint8_t tmp[4];

	while (i < total) {
		const uint8_t *p = tmp;
		size_t avail = total - i;
		int k;

		if (i >= np) {
			p = u + (i - np);
		} else {	/* the window starts in the pending bytes */
			avail = avail < 4 ? avail : 4;
			for (size_t j = 0; j < avail; j++)
				tmp[j] = i + j < np ? d->pend[i + j] :
						      u[i + j - np];
		}
		k = shx_utf8_check(p, avail);
		if (!k)
			break;	/* unfinished: it ends the input */
		if (o + (k < 0 ? 3 : (size_t)k) > len)
			return -ENOBUFS;
		if (k < 0) {
			memcpy(out + o, g_fffd, 3);
			o += 3;
			i += (size_t)-k;
		} else {
			memcpy(out + o, p, (size_t)k);
			o += (size_t)k;
			i += (size_t)k;
		}
	}
	for (size_t j = 0; i + j < total; j++)
		tmp[j] = i + j < np ? d->pend[i + j] : u[i + j - np];
	d->npend = (uint8_t)(total - i);
	memcpy(d->pend, tmp, d->npend);
	return (ssize_t)o;
}

ssize_t shx_detok_push(struct shx_detok *d, int32_t id, char *out, size_t len)
{
	const struct shx_tok *tok = d->tok;
	const struct tok_ent *t;
	const char *p;
	size_t n;
	bool started = d->started;
	ssize_t r;

	if (id < 0 || id >= tok->n)
		return -EINVAL;
	t = &tok->t[id];
	p = tok->piece + t->poff;
	n = t->plen;
	if (!(d->flags & SHX_TOK_RENDER_SPECIAL) &&
	    (t->attr & (TA_UNKNOWN | TA_CONTROL)))
		n = 0;
	if (!d->started && !(d->flags & SHX_DETOK_CONTINUE) &&
	    tok->add_space_prefix && n && p[0] == ' ')
		p++, n--;
	d->started = true;
	r = drain(d, p, n, out, len);
	if (r < 0)
		d->started = started;
	return r;
}

size_t shx_detok_room(const struct shx_detok *d, int32_t id)
{
	if (id < 0 || id >= d->tok->n)
		return 0;
	return 3 * ((size_t)d->npend + d->tok->t[id].plen);
}

ssize_t shx_detok_next(struct shx_detok *d, int32_t id, char **buf,
		       size_t *cap)
{
	size_t room = id >= 0 ? shx_detok_room(d, id) : 3;

	if (room > *cap) {
		char *p = realloc(*buf, room);

		if (!p)
			return -ENOMEM;
		*buf = p;
		*cap = room;
	}
	return id >= 0 ? shx_detok_push(d, id, *buf, *cap) :
			 shx_detok_flush(d, *buf, *cap);
}

ssize_t shx_detok_flush(struct shx_detok *d, char *out, size_t len)
{
	size_t o = 0;
	ssize_t r = drain(d, NULL, 0, out, len);

	if (r < 0)
		return r;
	o = (size_t)r;
	if (d->npend) {
		if (o + 3 > len)
			return -ENOBUFS;
		memcpy(out + o, g_fffd, 3);
		o += 3;
	}
	shx_detok_init(d, d->tok, d->flags);
	return (ssize_t)o;
}

char *shx_tok_decode(const struct shx_tok *tok, const int32_t *ids,
		     size_t n, unsigned int flags, size_t *len)
{
	struct shx_detok d;
	size_t cap = 1, o = 0;
	ssize_t k;
	char *s;

	/* Each byte in comes out once, as itself or in a U+FFFD of 3. */
	for (size_t i = 0; i < n; i++) {
		size_t b = ids[i] >= 0 && ids[i] < tok->n ?
			   tok->t[ids[i]].plen : 0;

		if (b > (SIZE_MAX - cap) / 3)
			return NULL;
		cap += 3 * b;
	}
	s = malloc(cap);
	if (!s)
		return NULL;
	shx_detok_init(&d, tok, flags);
	for (size_t i = 0; i < n; i++) {
		k = shx_detok_push(&d, ids[i], s + o, cap - o);
		o += k > 0 ? (size_t)k : 0;
	}
	k = shx_detok_flush(&d, s + o, cap - o);
	o += k > 0 ? (size_t)k : 0;
	s[o] = '\0';
	*len = o;
	return s;
}
