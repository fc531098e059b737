// SPDX-License-Identifier: MIT
/*
 * Stop strings (sample.h). The text not yet emitted is held back bytes
 * (fewer than SHX_STOP_LEN_MAX) followed by what is pushed; a stop string
 * is looked for at each end position in order, so where the text was split
 * into pushes never changes what comes out.
 */
#include "sample.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct shx_stop {
	size_t n, held;
	bool hit;
	size_t len[SHX_STOP_MAX];
	char str[SHX_STOP_MAX][SHX_STOP_LEN_MAX];
	char hold[SHX_STOP_LEN_MAX];
};

int shx_stop_new(const char *const *stops, size_t n, struct shx_stop **out)
{
	struct shx_stop *st;

	if (n > SHX_STOP_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!stops[i] || !*stops[i] ||
		    strlen(stops[i]) > SHX_STOP_LEN_MAX)
			return -EINVAL;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->n = n;
	for (size_t i = 0; i < n; i++) {
		st->len[i] = strlen(stops[i]);
		memcpy(st->str[i], stops[i], st->len[i]);
	}
	*out = st;
	return 0;
}

void shx_stop_free(struct shx_stop *st)
{
	free(st);
}

/* Byte i of the held bytes followed by text. */
static char at(const struct shx_stop *st, const char *text, size_t i)
{
	return i < st->held ? st->hold[i] : text[i - st->held];
}

/* Whether stop k ends just before position end. */
static bool ends_at(const struct shx_stop *st, const char *text, size_t end,
		    size_t k)
{
	size_t l = st->len[k];

	if (l > end)
		return false;
	for (size_t i = 0; i < l; i++)
		if (at(st, text, end - l + i) != st->str[k][i])
			return false;
	return true;
}

/* The longest tail of the first n bytes that begins some stop string. */
static size_t tail_to_hold(const struct shx_stop *st, const char *text,
			   size_t n)
{
	size_t best = 0;

	for (size_t k = 0; k < st->n; k++) {
		for (size_t l = st->len[k] - 1; l > best; l--) {
			size_t i = 0;

			if (l > n)
				continue;
			while (i < l && at(st, text, n - l + i) == st->str[k][i])
				i++;
			if (i == l) {
				best = l;
				break;
			}
		}
	}
	return best;
}

/* Copies bytes [0, n) of the held bytes and text to out. */
static void copy_out(const struct shx_stop *st, const char *text, size_t n,
		     char *out)
{
	size_t h = n < st->held ? n : st->held;

	memcpy(out, st->hold, h);
	memcpy(out + h, text, n - h);
}

ssize_t shx_stop_push(struct shx_stop *st, const char *text, size_t len,
		      char *out, size_t outlen, bool *hit)
{
	size_t total = st->held + len, keep;

	*hit = st->hit;
	if (st->hit)
		return 0;
	if (outlen < total)
		return -ENOSPC;
	/* held bytes never contain a whole stop string: start past them */
	for (size_t end = st->held + 1; end <= total; end++) {
		size_t best = 0;

		for (size_t k = 0; k < st->n; k++)
			if (st->len[k] > best && ends_at(st, text, end, k))
				best = st->len[k];
		if (best) {
			copy_out(st, text, end - best, out);
			st->hit = *hit = true;
			st->held = 0;
			return (ssize_t)(end - best);
		}
	}
	keep = tail_to_hold(st, text, total);
	copy_out(st, text, total - keep, out);
	/* the new hold is the tail: part of the old hold, then text */
	char tail[SHX_STOP_LEN_MAX];

	for (size_t i = 0; i < keep; i++)
		tail[i] = at(st, text, total - keep + i);
	memcpy(st->hold, tail, keep);
	st->held = keep;
	return (ssize_t)(total - keep);
}

ssize_t shx_stop_flush(struct shx_stop *st, char *out, size_t outlen)
{
	size_t n = st->held;

	if (outlen < n)
		return -ENOSPC;
	memcpy(out, st->hold, n);
	st->held = 0;
	return (ssize_t)n;
}
