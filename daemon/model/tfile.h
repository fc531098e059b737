/* SPDX-License-Identifier: MIT */
/*
 * A weights file as its parser sees it: the tensors it names, where their
 * bytes are, and (GGUF) its metadata. The parsers (gguf.c, safetensors.c)
 * read an image already in memory (a mapped file or a client buffer), check
 * every offset, size and shape against it, and copy nothing: descriptors
 * point into the image, which must outlive the struct shxd_tfile.
 *
 *	struct shxd_tfile f;
 *	char err[256];
 *	int ret = shxd_gguf_parse(map, len, &f, err, sizeof(err));
 *	if (ret)	// -EINVAL (malformed), -ENOMEM; err says what and where
 *		...
 *	for (i = 0; i < f.nr; i++)
 *		use(f.t[i].name, f.t[i].type, f.t[i].ne, map + f.t[i].offset);
 *	shxd_tfile_free(&f);
 */
#ifndef SHXD_TFILE_H
#define SHXD_TFILE_H

#include <stddef.h>
#include <stdint.h>

#define SHXD_TNAME_MAX	128	/* bytes of a tensor name with its NUL */
#define SHXD_TDIMS	4	/* most dimensions of a tensor */

/* Element types the loader knows; the first five are enum shxk_type's. */
enum shxd_ttype {
	SHXD_T_F32 = 0,
	SHXD_T_F16 = 1,
	SHXD_T_BF16 = 2,
	SHXD_T_Q8_0 = 3,
	SHXD_T_Q4_0 = 4,
	SHXD_T_OTHER = 5,	/* a type the kernels cannot run (type_name) */
};

struct shxd_tdesc {
	char name[SHXD_TNAME_MAX];
	enum shxd_ttype type;
	char type_name[16];	/* the file's name for it: "F32", "Q4_K", "I64" */
	uint32_t ndim;		/* 1..SHXD_TDIMS */
	/* ggml order: ne[0] is the innermost (contiguous) dimension, unused
	 * ones are 1. A safetensors shape [a, b] becomes ne = {b, a, 1, 1}. */
	uint64_t ne[SHXD_TDIMS];
	uint64_t offset;	/* of the first byte, from the image's start */
	uint64_t size;		/* bytes */
};

/* GGUF metadata value types (the format's own numbers). */
enum shxd_gguf_vtype {
	SHXD_GGUF_U8 = 0, SHXD_GGUF_I8 = 1, SHXD_GGUF_U16 = 2,
	SHXD_GGUF_I16 = 3, SHXD_GGUF_U32 = 4, SHXD_GGUF_I32 = 5,
	SHXD_GGUF_F32 = 6, SHXD_GGUF_BOOL = 7, SHXD_GGUF_STRING = 8,
	SHXD_GGUF_ARRAY = 9, SHXD_GGUF_U64 = 10, SHXD_GGUF_I64 = 11,
	SHXD_GGUF_F64 = 12,
};

/* One metadata entry; pointers into the image. */
struct shxd_gguf_kv {
	const char *key;	/* not NUL-terminated: key_len bytes */
	uint64_t key_len;
	enum shxd_gguf_vtype type;
	enum shxd_gguf_vtype arr_type;	/* element type when type is ARRAY */
	uint64_t arr_len;		/* elements when type is ARRAY */
	const uint8_t *val;	/* the value's bytes (for STRING: its length
				 * field; for ARRAY: the first element) */
};

struct shxd_tfile {
	unsigned int nr;		/* tensors */
	struct shxd_tdesc *t;		/* nr entries, in file order */
	unsigned int nr_kv;		/* GGUF metadata entries (0 otherwise) */
	struct shxd_gguf_kv *kv;
	uint64_t data_offset;		/* where tensor data starts */
};

/*
 * GGUF v2/v3, little-endian. Checks: magic, version, counts that fit the
 * image, every string and array inside it, known value and tensor types,
 * 1..4 dimensions with no zero and no overflow of elements or bytes, rows
 * that are whole blocks for block types, alignment (general.alignment, a
 * power of two, default 32), every tensor inside the image, no two
 * tensors' bytes overlapping, names unique and shorter than
 * SHXD_TNAME_MAX. Returns 0, -EINVAL with a message in err, or -ENOMEM.
 * Duplicate metadata keys and arrays of arrays are refused too. out is
 * zeroed on failure; err (may be NULL) says what is wrong and where, as in
 * "tensor 'blk.0.ffn_up.weight': data [123, 456) past the end of the file
 * (300 bytes)" (docs/model-files.md).
 */
int shxd_gguf_parse(const uint8_t *img, size_t len, struct shxd_tfile *out,
		    char *err, size_t errlen);

/*
 * safetensors: an 8-byte little-endian header length, a JSON object
 * {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__"}
 * (parsed with cJSON), then the data. Checks as for GGUF, and end - begin
 * equal to the elements times the dtype's size. F32/F16/BF16 are SHXD_T_*;
 * other dtypes (F64, I64, U8, ...) are SHXD_T_OTHER with their name.
 * A scalar (shape []) is ndim 1, ne {1, 1, 1, 1}; a zero in a shape (an
 * empty tensor) is refused as in GGUF. The format aligns nothing: a
 * tensor's offset may be odd. The header is limited to 100 MiB.
 */
int shxd_safetensors_parse(const uint8_t *img, size_t len,
			   struct shxd_tfile *out, char *err, size_t errlen);

void shxd_tfile_free(struct shxd_tfile *f);

/* The tensor named name, or NULL. */
const struct shxd_tdesc *shxd_tfile_find(const struct shxd_tfile *f,
					 const char *name);

/*
 * GGUF metadata by key. get_int accepts any integer or bool type that fits
 * int64; get_float F32 or F64; get_str a STRING (not NUL-terminated: *len
 * bytes). Return 0, -ENOENT when the key is missing, -EINVAL when its type
 * does not fit.
 */
int shxd_gguf_get_int(const struct shxd_tfile *f, const char *key,
		      int64_t *v);
int shxd_gguf_get_float(const struct shxd_tfile *f, const char *key,
			double *v);
int shxd_gguf_get_str(const struct shxd_tfile *f, const char *key,
		      const char **s, size_t *len);

#endif /* SHXD_TFILE_H */
