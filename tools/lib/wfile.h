/* SPDX-License-Identifier: MIT */
/*
 * Writing weights files (tests, gen-model): a GGUF v3 image or a
 * safetensors image, in a malloc'ed buffer or a file. What goes in is
 * written as given (a size that does not fit the type included), so a test
 * can also build files the parsers must refuse; the layout is always well
 * formed.
 *
 *	static const struct wf_wkv kv[] = {
 *		WF_KV_STR("general.architecture", "llama"),
 *		WF_KV_U32("llama.block_count", 2),
 *	};
 *	struct wf_wtensor t[] = {
 *		{ .name = "w", .ggml_type = 0, .dtype = "F32", .ndim = 2,
 *		  .ne = { 4, 3 }, .data = w, .size = sizeof(w) },
 *	};
 *	size_t len;
 *	uint8_t *img = wf_gguf_image(kv, 2, t, 1, &len);	// free() it
 *	wf_st_write("/tmp/x.safetensors", t, 1);
 */
#ifndef WFILE_H
#define WFILE_H

#include <stddef.h>
#include <stdint.h>

/* GGUF metadata value types, the format's numbers. */
enum {
	WF_GGUF_U8 = 0, WF_GGUF_I8 = 1, WF_GGUF_U16 = 2, WF_GGUF_I16 = 3,
	WF_GGUF_U32 = 4, WF_GGUF_I32 = 5, WF_GGUF_F32 = 6, WF_GGUF_BOOL = 7,
	WF_GGUF_STRING = 8, WF_GGUF_ARRAY = 9, WF_GGUF_U64 = 10,
	WF_GGUF_I64 = 11, WF_GGUF_F64 = 12,
};

/* One GGUF metadata entry. */
struct wf_wkv {
	const char *key;
	uint32_t type;		/* WF_GGUF_* */
	int64_t i;		/* integer and BOOL types (its low bytes) */
	double f;		/* F32, F64 */
	const char *s;		/* STRING */
	uint32_t arr_type;	/* ARRAY: STRING or a scalar type */
	const void *arr;	/* ARRAY: const char *[] for STRING, else a C
				 * array of that type (little-endian host) */
	size_t arr_n;		/* ARRAY: elements */
};

#define WF_KV_STR(k, v)	{ .key = (k), .type = WF_GGUF_STRING, .s = (v) }
#define WF_KV_U32(k, v)	{ .key = (k), .type = WF_GGUF_U32, .i = (v) }
#define WF_KV_I32(k, v)	{ .key = (k), .type = WF_GGUF_I32, .i = (v) }
#define WF_KV_F32(k, v)	{ .key = (k), .type = WF_GGUF_F32, .f = (v) }
#define WF_KV_BOOL(k, v) { .key = (k), .type = WF_GGUF_BOOL, .i = !!(v) }
#define WF_KV_STRS(k, v, n)	WF_KV_ARR(k, WF_GGUF_STRING, v, n)
#define WF_KV_ARR(k, t, v, n)						\
	{ .key = (k), .type = WF_GGUF_ARRAY, .arr_type = (t),		\
	  .arr = (v), .arr_n = (n) }

/* One tensor, for either format. */
struct wf_wtensor {
	const char *name;
	uint32_t ggml_type;	/* GGUF: ggml's type id (0 F32, 2 Q4_0, ...) */
	const char *dtype;	/* safetensors: "F32", "BF16", "I64", ... */
	uint32_t ndim;		/* GGUF 1..4; safetensors 0..4 (0: shape []) */
	uint64_t ne[4];		/* ggml order: ne[0] is the innermost */
	const void *data;	/* size bytes; NULL writes zeros */
	size_t size;
};

/*
 * A GGUF v3 image: the kv entries, the tensor infos, padding, and each
 * tensor's data at the next multiple of the alignment (general.alignment
 * when kv has it as a U32, else 32), in order. NULL on -ENOMEM or an
 * unknown value type. *len gets its size.
 */
uint8_t *wf_gguf_image(const struct wf_wkv *kv, size_t nkv,
		       const struct wf_wtensor *t, size_t nt, size_t *len);

/*
 * A safetensors image: the header (an "__metadata__" entry first, then the
 * tensors in order, shape reversed from ne, padded with spaces to 8 bytes)
 * and the data, tensor after tensor with no gap. NULL on -ENOMEM.
 */
uint8_t *wf_st_image(const struct wf_wtensor *t, size_t nt, size_t *len);

/* A safetensors image with the header json as given and size bytes of
 * data after it (zeros when data is NULL): for malformed headers. */
uint8_t *wf_st_image_json(const char *json, const void *data, size_t size,
			  size_t *len);

/* The bytes wf_gguf_image would give (0 on an unknown value type). */
uint64_t wf_gguf_size(const struct wf_wkv *kv, size_t nkv,
		      const struct wf_wtensor *t, size_t nt);

/*
 * A GGUF file written as its data is made, for files too large to hold in
 * memory: wf_gguf_begin writes the header from t's names, shapes, types
 * and sizes (data is not read, and t must stay valid until wf_gguf_end),
 * then wf_gguf_put takes the tensors' bytes in order, any number of bytes
 * a call (zeros when p is NULL), and pads before each tensor as
 * wf_gguf_image does (one layout for both). All return 0 or the first
 * failure: -errno, or -EINVAL for more or (wf_gguf_end) fewer bytes than t
 * declares. wf_gguf_end closes the file whatever happened before; the
 * caller removes a file it gives up on.
 *
 *	struct wf_gguf w;
 *	wf_gguf_begin(&w, path, kv, nkv, t, nt);
 *	for (i = 0; i < nt; i++)
 *		for (each chunk of t[i]'s bytes)
 *			wf_gguf_put(&w, chunk, len);
 *	ret = wf_gguf_end(&w);
 */
struct wf_buf;
struct wf_gguf {
	int fd;			/* the file, or -1 */
	struct wf_buf *mem;	/* the image (wf_gguf_image), or NULL */
	const struct wf_wtensor *t;
	size_t nt, cur, align;	/* cur: the tensor being written */
	uint64_t done;		/* bytes of t[cur] written */
	uint64_t off;		/* t[cur]'s offset from the data's start */
	uint64_t data;		/* where the data starts in the file */
	uint64_t pos;		/* bytes written */
	int err;		/* the first failure, or 0 */
};

int wf_gguf_begin(struct wf_gguf *w, const char *path,
		  const struct wf_wkv *kv, size_t nkv,
		  const struct wf_wtensor *t, size_t nt);
int wf_gguf_put(struct wf_gguf *w, const void *p, size_t n);
int wf_gguf_end(struct wf_gguf *w);

/* The same as the images, into a file (created or truncated, 0644). 0 or
 * -errno. */
int wf_gguf_write(const char *path, const struct wf_wkv *kv, size_t nkv,
		  const struct wf_wtensor *t, size_t nt);
int wf_st_write(const char *path, const struct wf_wtensor *t, size_t nt);
int wf_save(const char *path, const void *img, size_t len);

#endif /* WFILE_H */
