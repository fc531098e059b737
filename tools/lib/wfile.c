// SPDX-License-Identifier: MIT
/* Writing GGUF and safetensors images (wfile.h). */
#include "wfile.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A growing buffer; after a failed allocation every write is dropped and
 * the result is NULL. */
struct wb {
	uint8_t *p;
	size_t len, cap;
	int bad;
};

static void put(struct wb *b, const void *s, size_t n)
{
	size_t c;
	uint8_t *q;

	if (b->bad)
		return;
	if (n > b->cap - b->len) {
		c = b->cap ? b->cap : 256;
		while (c - b->len < n)
			c *= 2;
		q = realloc(b->p, c);
		if (!q) {
			b->bad = 1;
			return;
		}
		b->p = q;
		b->cap = c;
	}
	if (s)
		memcpy(b->p + b->len, s, n);
	else
		memset(b->p + b->len, 0, n);
	b->len += n;
}

static void put_le(struct wb *b, uint64_t v, unsigned int n)
{
	uint8_t x[8];
	unsigned int i;

	for (i = 0; i < n; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	put(b, x, n);
}

static void put_str(struct wb *b, const char *s)
{
	put_le(b, strlen(s), 8);
	put(b, s, strlen(s));
}

static void pad(struct wb *b, size_t align)
{
	if (b->len % align)
		put(b, NULL, align - b->len % align);
}

static void putf(struct wb *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void putf(struct wb *b, const char *fmt, ...)
{
	char s[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(s, sizeof(s), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(s))
		b->bad = 1;
	else
		put(b, s, (size_t)n);
}

static uint8_t *done(struct wb *b, size_t *len)
{
	if (b->bad) {
		free(b->p);
		return NULL;
	}
	*len = b->len;
	return b->p;
}

/* Bytes of a scalar GGUF type; 0 for STRING, ARRAY and unknown ones. */
static unsigned int vsize(uint32_t type)
{
	static const uint8_t sz[] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };

	return type < sizeof(sz) ? sz[type] : 0;
}

static void put_scalar(struct wb *b, uint32_t type, int64_t i, double f)
{
	float x = (float)f;
	uint32_t u32;
	uint64_t u64;

	if (type == WF_GGUF_F32) {
		memcpy(&u32, &x, 4);
		put_le(b, u32, 4);
	} else if (type == WF_GGUF_F64) {
		memcpy(&u64, &f, 8);
		put_le(b, u64, 8);
	} else {
		put_le(b, (uint64_t)i, vsize(type));
	}
}

static void put_kv(struct wb *b, const struct wf_wkv *kv)
{
	const char *const *strs = kv->arr;
	size_t i;

	put_str(b, kv->key);
	put_le(b, kv->type, 4);
	if (kv->type == WF_GGUF_STRING) {
		put_str(b, kv->s);
	} else if (kv->type == WF_GGUF_ARRAY) {
		put_le(b, kv->arr_type, 4);
		put_le(b, kv->arr_n, 8);
		if (kv->arr_type == WF_GGUF_STRING)
			for (i = 0; i < kv->arr_n; i++)
				put_str(b, strs[i]);
		else if (vsize(kv->arr_type))
			put(b, kv->arr, kv->arr_n * vsize(kv->arr_type));
		else
			b->bad = 1;
	} else if (vsize(kv->type)) {
		put_scalar(b, kv->type, kv->i, kv->f);
	} else {
		b->bad = 1;
	}
}

uint8_t *wf_gguf_image(const struct wf_wkv *kv, size_t nkv,
		       const struct wf_wtensor *t, size_t nt, size_t *len)
{
	struct wb b = { 0 };
	size_t align = 32, off = 0, i;
	uint32_t j;

	for (i = 0; i < nkv; i++)
		if (!strcmp(kv[i].key, "general.alignment") &&
		    kv[i].type == WF_GGUF_U32 && kv[i].i > 0)
			align = (size_t)kv[i].i;

	put(&b, "GGUF", 4);
	put_le(&b, 3, 4);
	put_le(&b, nt, 8);
	put_le(&b, nkv, 8);
	for (i = 0; i < nkv; i++)
		put_kv(&b, &kv[i]);
	for (i = 0; i < nt; i++) {
		put_str(&b, t[i].name);
		put_le(&b, t[i].ndim, 4);
		for (j = 0; j < t[i].ndim && j < 4; j++)
			put_le(&b, t[i].ne[j], 8);
		put_le(&b, t[i].ggml_type, 4);
		off = (off + align - 1) / align * align;
		put_le(&b, off, 8);
		off += t[i].size;
	}
	for (i = 0; i < nt; i++) {
		pad(&b, align);
		put(&b, t[i].data, t[i].size);
	}
	/* A file without tensors still ends with its padding. */
	if (!nt)
		pad(&b, align);
	return done(&b, len);
}

uint8_t *wf_st_image_json(const char *json, const void *data, size_t size,
			  size_t *len)
{
	struct wb b = { 0 };

	put_le(&b, strlen(json), 8);
	put(&b, json, strlen(json));
	put(&b, data, size);
	return done(&b, len);
}

uint8_t *wf_st_image(const struct wf_wtensor *t, size_t nt, size_t *len)
{
	struct wb h = { 0 }, b = { 0 };
	size_t off = 0, i;
	uint32_t k;

	putf(&h, "{\"__metadata__\":{\"format\":\"pt\"}");
	for (i = 0; i < nt; i++) {
		putf(&h, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", t[i].name,
		     t[i].dtype);
		for (k = 0; k < t[i].ndim && k < 4; k++)
			putf(&h, "%s%" PRIu64, k ? "," : "",
			     t[i].ne[t[i].ndim - 1 - k]);
		putf(&h, "],\"data_offsets\":[%zu,%zu]}", off, off + t[i].size);
		off += t[i].size;
	}
	putf(&h, "}");
	/* Spaces to a multiple of 8, as the reference writer pads. */
	while (!h.bad && h.len % 8)
		put(&h, " ", 1);
	if (h.bad)
		return done(&h, len);

	put_le(&b, h.len, 8);
	put(&b, h.p, h.len);
	free(h.p);
	for (i = 0; i < nt; i++)
		put(&b, t[i].data, t[i].size);
	return done(&b, len);
}

int wf_save(const char *path, const void *img, size_t len)
{
	const uint8_t *p = img;
	ssize_t n;
	int fd, ret = 0;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	while (len) {
		n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			break;
		}
		p += n;
		len -= (size_t)n;
	}
	if (close(fd) && !ret)
		ret = -errno;
	return ret;
}

int wf_gguf_write(const char *path, const struct wf_wkv *kv, size_t nkv,
		  const struct wf_wtensor *t, size_t nt)
{
	size_t len;
	uint8_t *img = wf_gguf_image(kv, nkv, t, nt, &len);
	int ret;

	if (!img)
		return -ENOMEM;
	ret = wf_save(path, img, len);
	free(img);
	return ret;
}

int wf_st_write(const char *path, const struct wf_wtensor *t, size_t nt)
{
	size_t len;
	uint8_t *img = wf_st_image(t, nt, &len);
	int ret;

	if (!img)
		return -ENOMEM;
	ret = wf_save(path, img, len);
	free(img);
	return ret;
}
