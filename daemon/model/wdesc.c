// SPDX-License-Identifier: MIT
/* struct syshax_wdesc: a client's table of raw tensors in its buffer. */
#include "wdesc.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shxk.h"
#include "tfile_int.h"

/* Every message goes to the caller's err. */
#define FAIL(...)	shxd_tfile_fail(err, errlen, __VA_ARGS__)
#include "syshax_ops.h"

static const char *const dt_names[] = { "F32", "F16", "BF16", "Q8_0",
					"Q4_0" };

/* Elements of a tensor, or 0 on a zero dim or overflow. */
static uint64_t elements(const struct syshax_wdesc_tensor *t)
{
	uint64_t n = 1;

	for (unsigned int d = 0; d < 4; d++) {
		if (!t->ne[d] || n > UINT64_MAX / t->ne[d])
			return 0;
		n *= t->ne[d];
	}
	return n;
}

static int one_tensor(const struct syshax_wdesc_tensor *t, unsigned int i,
		      size_t len, size_t table_end, struct shxd_tdesc *d,
		      char *err, size_t errlen)
{
	uint64_t n = elements(t), rows, rs;

	if (!memchr(t->name, '\0', sizeof(t->name)) || !t->name[0])
		return FAIL("tensor %u: name empty or not "
			   "NUL-terminated", i);
	if (t->type > SYSHAX_DT_Q4_0)
		return FAIL("tensor '%s': unknown type %u",
			   t->name, t->type);
	if (!t->ndim || t->ndim > 4)
		return FAIL("tensor '%s': %u dimensions (1..4)",
			   t->name, t->ndim);
	for (unsigned int k = t->ndim; k < 4; k++)
		if (t->ne[k] != 1)
			return FAIL("tensor '%s': ne[%u] = %llu "
				   "past its %u dimensions", t->name, k,
				   (unsigned long long)t->ne[k], t->ndim);
	rs = shxk_row_size((enum shxk_type)t->type, t->ne[0]);
	if (!n || !rs)
		return FAIL("tensor '%s': bad shape (a zero "
			   "dimension, an overflow, or rows of %s that are "
			   "not whole blocks)", t->name, dt_names[t->type]);
	rows = n / t->ne[0];
	if (rows > UINT64_MAX / rs || rows * rs != t->size)
		return FAIL("tensor '%s': size %llu, but its "
			   "shape needs %llu bytes", t->name,
			   (unsigned long long)t->size,
			   rows > UINT64_MAX / rs ? 0ULL :
			   (unsigned long long)(rows * rs));
	if (t->offset < table_end || t->offset > len ||
	    t->size > len - t->offset)
		return FAIL("tensor '%s': data [%llu, +%llu) not "
			   "inside the buffer after the table ([%zu, %zu))",
			   t->name, (unsigned long long)t->offset,
			   (unsigned long long)t->size, table_end, len);
	memset(d, 0, sizeof(*d));
	memcpy(d->name, t->name, sizeof(t->name));
	d->type = (enum shxd_ttype)t->type;
	snprintf(d->type_name, sizeof(d->type_name), "%s", dt_names[t->type]);
	d->ndim = t->ndim;
	memcpy(d->ne, t->ne, sizeof(d->ne));
	d->offset = t->offset;
	d->size = t->size;
	return 0;
}

int shxd_wdesc_parse(const uint8_t *img, size_t len, struct shxd_tfile *out,
		     char *err, size_t errlen)
{
	const struct syshax_wdesc *h = (const void *)img;
	size_t table_end;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	if (len < sizeof(*h))
		return FAIL("buffer of %zu bytes holds no "
			   "descriptor header", len);
	if (h->magic != SYSHAX_WDESC_MAGIC || h->version !=
	    SYSHAX_WDESC_VERSION || h->flags)
		return FAIL("not a syshax_wdesc (magic %#x, "
			   "version %u, flags %#x)", h->magic, h->version,
			   h->flags);
	if (!h->nr_tensors || h->nr_tensors > (len - sizeof(*h)) /
	    sizeof(h->tensors[0]))
		return FAIL("%u tensors do not fit a %zu-byte "
			   "buffer", h->nr_tensors, len);
	table_end = sizeof(*h) + h->nr_tensors * sizeof(h->tensors[0]);
	out->t = calloc(h->nr_tensors, sizeof(*out->t));
	if (!out->t)
		return -ENOMEM;
	out->nr = h->nr_tensors;
	out->data_offset = table_end;
	for (unsigned int i = 0; i < h->nr_tensors && !ret; i++) {
		struct syshax_wdesc_tensor t;

		/* The client may still write its buffer: read entries once. */
		memcpy(&t, &h->tensors[i], sizeof(t));
		ret = one_tensor(&t, i, len, table_end, &out->t[i], err,
				 errlen);
	}
	if (!ret)
		ret = shxd_tfile_check_set(out, err, errlen);
	if (ret)
		shxd_tfile_free(out);
	return ret;
}
