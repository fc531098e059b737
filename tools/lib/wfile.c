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

/* A growing buffer; after a failure (bad: -ENOMEM, or -EINVAL for what
 * cannot be encoded) every write is dropped and the result is NULL. */
struct wf_buf {
	uint8_t *p;
	size_t len, cap;
	int bad;
};

static void put(struct wf_buf *b, const void *s, size_t n)
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
			b->bad = -ENOMEM;
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

static void put_le(struct wf_buf *b, uint64_t v, unsigned int n)
{
	uint8_t x[8];
	unsigned int i;

	for (i = 0; i < n; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	put(b, x, n);
}

static void put_str(struct wf_buf *b, const char *s)
{
	put_le(b, strlen(s), 8);
	put(b, s, strlen(s));
}

static void pad(struct wf_buf *b, size_t align)
{
	if (b->len % align)
		put(b, NULL, align - b->len % align);
}

static void putf(struct wf_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void putf(struct wf_buf *b, const char *fmt, ...)
{
	char s[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(s, sizeof(s), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(s))
		b->bad = -EINVAL;
	else
		put(b, s, (size_t)n);
}

static uint8_t *done(struct wf_buf *b, size_t *len)
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

static void put_scalar(struct wf_buf *b, uint32_t type, int64_t i, double f)
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

static void put_kv(struct wf_buf *b, const struct wf_wkv *kv)
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
			b->bad = -EINVAL;
	} else if (vsize(kv->type)) {
		put_scalar(b, kv->type, kv->i, kv->f);
	} else {
		b->bad = -EINVAL;
	}
}

static uint64_t align_up(uint64_t off, size_t align)
{
	return (off + align - 1) / align * align;
}

/*
 * The layout, in one place: the header (kv entries, tensor infos with
 * their data offsets, zeros to the alignment) into b; *align gets the
 * alignment, and the return value is the data's size (the end of the last
 * tensor, from the header's end).
 */
static uint64_t gguf_header(struct wf_buf *b, const struct wf_wkv *kv,
			    size_t nkv, const struct wf_wtensor *t, size_t nt,
			    size_t *align)
{
	uint64_t off = 0;
	size_t i;
	uint32_t j;

	*align = 32;
	for (i = 0; i < nkv; i++)
		if (!strcmp(kv[i].key, "general.alignment") &&
		    kv[i].type == WF_GGUF_U32 && kv[i].i > 0)
			*align = (size_t)kv[i].i;

	put(b, "GGUF", 4);
	put_le(b, 3, 4);
	put_le(b, nt, 8);
	put_le(b, nkv, 8);
	for (i = 0; i < nkv; i++)
		put_kv(b, &kv[i]);
	for (i = 0; i < nt; i++) {
		put_str(b, t[i].name);
		put_le(b, t[i].ndim, 4);
		for (j = 0; j < t[i].ndim && j < 4; j++)
			put_le(b, t[i].ne[j], 8);
		put_le(b, t[i].ggml_type, 4);
		off = align_up(off, *align);
		put_le(b, off, 8);
		off += t[i].size;
	}
	pad(b, *align);
	return off;
}

uint64_t wf_gguf_size(const struct wf_wkv *kv, size_t nkv,
		      const struct wf_wtensor *t, size_t nt)
{
	struct wf_buf b = { 0 };
	size_t align;
	uint64_t len = gguf_header(&b, kv, nkv, t, nt, &align);

	len = b.bad ? 0 : len + b.len;
	free(b.p);
	return len;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	ssize_t n;

	while (len) {
		n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* n bytes (zeros when p is NULL) to the file or the image. */
static void emit(struct wf_gguf *w, const void *p, size_t n)
{
	static const uint8_t zeros[4096];
	size_t k;

	if (w->err)
		return;
	w->pos += n;
	if (w->mem) {
		put(w->mem, p, n);
		w->err = w->mem->bad;
		return;
	}
	for (; !p && n && !w->err; n -= k) {
		k = n < sizeof(zeros) ? n : sizeof(zeros);
		w->err = write_all(w->fd, zeros, k);
	}
	if (p)
		w->err = write_all(w->fd, p, n);
}

/* Starts a GGUF on fd, or in mem when fd < 0. */
static int gguf_begin(struct wf_gguf *w, int fd, struct wf_buf *mem,
		      const struct wf_wkv *kv, size_t nkv,
		      const struct wf_wtensor *t, size_t nt)
{
	struct wf_buf h = { 0 };

	*w = (struct wf_gguf){ .fd = fd, .mem = mem, .t = t, .nt = nt };
	gguf_header(&h, kv, nkv, t, nt, &w->align);
	w->err = h.bad;
	emit(w, h.p, h.len);
	w->data = w->pos;
	free(h.p);
	return w->err;
}

int wf_gguf_begin(struct wf_gguf *w, const char *path,
		  const struct wf_wkv *kv, size_t nkv,
		  const struct wf_wtensor *t, size_t nt)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0) {
		*w = (struct wf_gguf){ .fd = -1, .err = -errno };
		return w->err;
	}
	return gguf_begin(w, fd, NULL, kv, nkv, t, nt);
}

/* Past the tensors already whole (empty ones included). */
static void skip_done(struct wf_gguf *w)
{
	while (w->cur < w->nt && w->done == w->t[w->cur].size) {
		w->off = align_up(w->off + w->done, w->align);
		w->cur++;
		w->done = 0;
	}
}

int wf_gguf_put(struct wf_gguf *w, const void *p, size_t n)
{
	const uint8_t *s = p;
	uint64_t k;

	while (n && !w->err) {
		skip_done(w);
		if (w->cur == w->nt) {
			w->err = -EINVAL;
			break;
		}
		if (!w->done)
			emit(w, NULL, w->data + w->off - w->pos);
		k = w->t[w->cur].size - w->done;
		k = k < n ? k : n;
		emit(w, s, k);
		w->done += k;
		s = s ? s + k : NULL;
		n -= k;
	}
	return w->err;
}

int wf_gguf_end(struct wf_gguf *w)
{
	if (!w->err) {
		skip_done(w);
		if (w->cur < w->nt)
			w->err = -EINVAL;
	}
	if (w->fd >= 0 && close(w->fd) && !w->err)
		w->err = -errno;
	w->fd = -1;
	return w->err;
}

/* The whole file, each tensor's data from t (zeros for NULL). */
static int gguf_all(struct wf_gguf *w, const struct wf_wtensor *t, size_t nt)
{
	size_t i;

	for (i = 0; i < nt; i++)
		wf_gguf_put(w, t[i].data, t[i].size);
	return wf_gguf_end(w);
}

uint8_t *wf_gguf_image(const struct wf_wkv *kv, size_t nkv,
		       const struct wf_wtensor *t, size_t nt, size_t *len)
{
	struct wf_buf b = { 0 };
	struct wf_gguf w;

	gguf_begin(&w, -1, &b, kv, nkv, t, nt);
	if (gguf_all(&w, t, nt)) {
		free(b.p);
		return NULL;
	}
	return done(&b, len);
}

uint8_t *wf_st_image_json(const char *json, const void *data, size_t size,
			  size_t *len)
{
	struct wf_buf b = { 0 };

	put_le(&b, strlen(json), 8);
	put(&b, json, strlen(json));
	put(&b, data, size);
	return done(&b, len);
}

uint8_t *wf_st_image(const struct wf_wtensor *t, size_t nt, size_t *len)
{
	struct wf_buf h = { 0 }, b = { 0 };
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
	int fd, ret;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	ret = write_all(fd, img, len);
	if (close(fd) && !ret)
		ret = -errno;
	return ret;
}

int wf_gguf_write(const char *path, const struct wf_wkv *kv, size_t nkv,
		  const struct wf_wtensor *t, size_t nt)
{
	struct wf_gguf w;

	if (wf_gguf_begin(&w, path, kv, nkv, t, nt))
		return wf_gguf_end(&w);
	return gguf_all(&w, t, nt);
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
