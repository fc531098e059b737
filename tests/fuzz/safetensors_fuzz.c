// SPDX-License-Identifier: MIT
/*
 * libFuzzer: shxd_safetensors_parse on any bytes (make fuzz). Besides the
 * sanitizers, it checks what the parser promises: a message on -EINVAL, and
 * on success every tensor inside the data section. Each input is tried
 * twice: as a whole file, and as the JSON header of a file with a length
 * that fits and DATA bytes of data, so that mutations spend themselves on
 * the header's contents rather than on its length field.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define DATA	256

static volatile uint8_t g_sink;

static void one(const uint8_t *data, size_t size)
{
	const struct shxd_tdesc *d;
	struct shxd_tfile f;
	unsigned int i;
	char err[256];
	int ret;

	ret = shxd_safetensors_parse(data, size, &f, err, sizeof(err));
	if (ret) {
		if ((ret != -EINVAL && ret != -ENOMEM) ||
		    (ret == -EINVAL && !err[0]) || f.nr || f.t)
			abort();
		return;
	}
	for (i = 0; i < f.nr; i++) {
		d = &f.t[i];
		if (d->offset < f.data_offset || d->offset > size ||
		    d->size > size - d->offset || !d->size ||
		    !d->ndim || d->ndim > SHXD_TDIMS ||
		    strlen(d->name) >= SHXD_TNAME_MAX ||
		    shxd_tfile_find(&f, d->name) != d)
			abort();
		g_sink = data[d->offset];
		g_sink = data[d->offset + d->size - 1];
	}
	shxd_tfile_free(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *img = calloc(1, 8 + size + DATA);
	size_t i;

	one(data, size);
	if (!img)
		return 0;
	for (i = 0; i < 8; i++)
		img[i] = (uint8_t)((uint64_t)size >> (8 * i));
	memcpy(img + 8, data, size);
	one(img, 8 + size + DATA);
	free(img);
	return 0;
}
