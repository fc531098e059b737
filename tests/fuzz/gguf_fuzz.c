// SPDX-License-Identifier: MIT
/*
 * libFuzzer: shxd_gguf_parse on any bytes (make fuzz). Besides the
 * sanitizers, it checks what the parser promises: a message on -EINVAL, and
 * on success tensors and metadata inside the image.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint8_t g_sink;

static void touch(const uint8_t *p, size_t n)
{
	if (n) {
		g_sink = p[0];
		g_sink = p[n - 1];
	}
}

static void check(const struct shxd_tfile *f, const uint8_t *data,
		  size_t size)
{
	const struct shxd_tdesc *d;
	const char *s;
	unsigned int i;
	char *key;
	int64_t v;
	double x;
	size_t n;

	for (i = 0; i < f->nr; i++) {
		d = &f->t[i];
		if (d->offset < f->data_offset || d->offset > size ||
		    d->size > size - d->offset || !d->size ||
		    !d->ndim || d->ndim > SHXD_TDIMS ||
		    strlen(d->name) >= SHXD_TNAME_MAX ||
		    shxd_tfile_find(f, d->name) != d)
			abort();
		touch(data + d->offset, d->size);
	}
	for (i = 0; i < f->nr_kv; i++) {
		key = malloc(f->kv[i].key_len + 1);
		if (!key)
			return;
		memcpy(key, f->kv[i].key, f->kv[i].key_len);
		key[f->kv[i].key_len] = '\0';
		shxd_gguf_get_int(f, key, &v);
		shxd_gguf_get_float(f, key, &x);
		if (!shxd_gguf_get_str(f, key, &s, &n))
			touch((const uint8_t *)s, n);
		free(key);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct shxd_tfile f;
	char err[256];
	int ret;

	ret = shxd_gguf_parse(data, size, &f, err, sizeof(err));
	if (!ret) {
		check(&f, data, size);
		shxd_tfile_free(&f);
	} else if ((ret != -EINVAL && ret != -ENOMEM) ||
		   (ret == -EINVAL && !err[0]) || f.nr || f.t || f.kv) {
		abort();
	}
	return 0;
}
