// SPDX-License-Identifier: MIT
/* What both weights-file parsers share: messages, the checks across all
 * tensors, and the lookups on a parsed file (tfile.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfile.h"
#include "tfile_int.h"

int shxd_tfile_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

void shxd_tfile_pname(char *dst, size_t dstlen, const void *s, size_t len)
{
	const unsigned char *c = s;
	size_t i;

	if (!dstlen)
		return;
	if (len > dstlen - 1)
		len = dstlen - 1;
	for (i = 0; i < len; i++)
		dst[i] = c[i] >= 0x20 && c[i] < 0x7f ? (char)c[i] : '?';
	dst[len] = '\0';
}

static int by_name(const void *a, const void *b)
{
	const struct shxd_tdesc *x = *(const struct shxd_tdesc *const *)a;
	const struct shxd_tdesc *y = *(const struct shxd_tdesc *const *)b;

	return strcmp(x->name, y->name);
}

static int by_offset(const void *a, const void *b)
{
	const struct shxd_tdesc *x = *(const struct shxd_tdesc *const *)a;
	const struct shxd_tdesc *y = *(const struct shxd_tdesc *const *)b;

	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	/* Ties by position keep the message stable across qsort()s. */
	return x < y ? -1 : x > y;
}

int shxd_tfile_check_set(const struct shxd_tfile *f, char *err, size_t errlen)
{
	const struct shxd_tdesc **v, *a, *b;
	unsigned int i;
	int ret = 0;

	if (f->nr < 2)
		return 0;
	/* Sorting, not pairs: a file may hold tens of thousands of tensors. */
	v = malloc(f->nr * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < f->nr; i++)
		v[i] = &f->t[i];

	qsort(v, f->nr, sizeof(*v), by_name);
	for (i = 1; i < f->nr; i++) {
		a = v[i - 1] < v[i] ? v[i - 1] : v[i];
		b = v[i - 1] < v[i] ? v[i] : v[i - 1];
		if (!strcmp(a->name, b->name)) {
			ret = shxd_tfile_fail(err, errlen,
				"duplicate tensor name '%s' (tensors %td and %td)",
				a->name, a - f->t, b - f->t);
			goto out;
		}
	}

	/* Sorted by start, the set is disjoint iff each neighbour pair is. */
	qsort(v, f->nr, sizeof(*v), by_offset);
	for (i = 1; i < f->nr; i++) {
		a = v[i - 1];
		b = v[i];
		if (a->size > b->offset - a->offset) {
			ret = shxd_tfile_fail(err, errlen,
				"tensors '%s' [%" PRIu64 ", %" PRIu64 ") and '%s' [%"
				PRIu64 ", %" PRIu64 ") overlap", a->name, a->offset,
				a->offset + a->size, b->name, b->offset,
				b->offset + b->size);
			goto out;
		}
	}
out:
	free(v);
	return ret;
}

void shxd_tfile_free(struct shxd_tfile *f)
{
	if (!f)
		return;
	free(f->t);
	free(f->kv);
	memset(f, 0, sizeof(*f));
}

const struct shxd_tdesc *shxd_tfile_find(const struct shxd_tfile *f,
					 const char *name)
{
	unsigned int i;

	for (i = 0; i < f->nr; i++)
		if (!strcmp(f->t[i].name, name))
			return &f->t[i];
	return NULL;
}
