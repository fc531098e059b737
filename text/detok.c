// SPDX-License-Identifier: MIT
/*
 * Incremental decode (tokenizer.h): each token's piece as
 * llama_token_to_piece gives it, cut at character boundaries so that a
 * stream never shows half a UTF-8 character. The first piece loses one
 * leading space where the vocabulary adds a space prefix (SPM), as
 * llama_detokenize does, unless SHX_DETOK_CONTINUE.
 */
#include <errno.h>
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
			i++;
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
