// SPDX-License-Identifier: MIT
/*
 * GGUF v2/v3, little-endian (tfile.h). The layout, as read here:
 *
 *	"GGUF", u32 version, u64 n_tensors, u64 n_kv
 *	n_kv      x { string key, u32 value type, value }
 *	n_tensors x { string name, u32 n_dims, u64 ne[n_dims], u32 ggml type,
 *		      u64 offset from the data section }
 *	padding to general.alignment (default 32), then the data section
 *
 * A string is a u64 length and that many bytes, no NUL; an array is a u32
 * element type, a u64 count and the elements. Every read is checked against
 * the image first: the file may be anything.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfile.h"
#include "tfile_int.h"

#define GGUF_MAGIC	0x46554747u	/* "GGUF" as a little-endian u32 */
#define GGUF_ALIGN	32u		/* without general.alignment */
/* The smallest encodings, so that a count the bytes left cannot hold is
 * refused before anything is allocated for it. */
#define KV_MIN		14	/* key length, one key byte, type, a u8 */
#define TI_MIN		33	/* name length and byte, n_dims, ne, type, offset */

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* ggml's tensor types as GGUF stores them: elements and bytes per block.
 * Holes are ids ggml never had or has removed (4, 5, 31-33, 36-38). */
struct ggml_tt {
	const char *name;
	uint16_t blck;
	uint16_t size;
	enum shxd_ttype t;
};

#define TT(n, b, s)	{ n, b, s, SHXD_T_OTHER }

static const struct ggml_tt g_ggml[] = {
	[0] = { "F32", 1, 4, SHXD_T_F32 },
	[1] = { "F16", 1, 2, SHXD_T_F16 },
	[2] = { "Q4_0", 32, 18, SHXD_T_Q4_0 },
	[3] = TT("Q4_1", 32, 20),
	[6] = TT("Q5_0", 32, 22),
	[7] = TT("Q5_1", 32, 24),
	[8] = { "Q8_0", 32, 34, SHXD_T_Q8_0 },
	[9] = TT("Q8_1", 32, 36),
	[10] = TT("Q2_K", 256, 84),
	[11] = TT("Q3_K", 256, 110),
	[12] = TT("Q4_K", 256, 144),
	[13] = TT("Q5_K", 256, 176),
	[14] = TT("Q6_K", 256, 210),
	[15] = TT("Q8_K", 256, 292),
	[16] = TT("IQ2_XXS", 256, 66),
	[17] = TT("IQ2_XS", 256, 74),
	[18] = TT("IQ3_XXS", 256, 98),
	[19] = TT("IQ1_S", 256, 50),
	[20] = TT("IQ4_NL", 32, 18),
	[21] = TT("IQ3_S", 256, 110),
	[22] = TT("IQ2_S", 256, 82),
	[23] = TT("IQ4_XS", 256, 136),
	[24] = TT("I8", 1, 1),
	[25] = TT("I16", 1, 2),
	[26] = TT("I32", 1, 4),
	[27] = TT("I64", 1, 8),
	[28] = TT("F64", 1, 8),
	[29] = TT("IQ1_M", 256, 56),
	[30] = { "BF16", 1, 2, SHXD_T_BF16 },
	[34] = TT("TQ1_0", 256, 54),
	[35] = TT("TQ2_0", 256, 66),
	[39] = TT("MXFP4", 32, 17),
	[40] = TT("NVFP4", 64, 36),
};

static const char *const g_vname[] = {
	"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string",
	"array", "u64", "i64", "f64",
};

/* Bytes of a scalar value; 0 for STRING and ARRAY. */
static const uint8_t g_vsize[] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };

/* A cursor over the image and what it is reading, for messages. */
struct rd {
	const uint8_t *p;
	size_t len;
	size_t off;
	char *err;
	size_t errlen;
	char where[SHXD_TNAME_MAX + 48];
};

static uint32_t le32(const uint8_t *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
	       (uint32_t)b[3] << 24;
}

static uint64_t le64(const uint8_t *b)
{
	return (uint64_t)le32(b) | (uint64_t)le32(b + 4) << 32;
}

static int rd_skip(struct rd *r, uint64_t n, const char *what)
{
	if (n > r->len - r->off)
		return shxd_tfile_fail(r->err, r->errlen,
			"%s: %s (%" PRIu64 " bytes at offset %zu) past the end of the file (%zu bytes)",
			r->where, what, n, r->off, r->len);
	r->off += n;
	return 0;
}

static int rd_u32(struct rd *r, const char *what, uint32_t *v)
{
	int ret = rd_skip(r, 4, what);

	if (!ret)
		*v = le32(r->p + r->off - 4);
	return ret;
}

static int rd_u64(struct rd *r, const char *what, uint64_t *v)
{
	int ret = rd_skip(r, 8, what);

	if (!ret)
		*v = le64(r->p + r->off - 8);
	return ret;
}

/* A string: its length, then its bytes. */
static int rd_str(struct rd *r, const char *what, const uint8_t **s,
		  uint64_t *n)
{
	int ret = rd_u64(r, what, n);

	if (ret)
		return ret;
	*s = r->p + r->off;
	return rd_skip(r, *n, what);
}

static int where(struct rd *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int where(struct rd *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->where, sizeof(r->where), fmt, ap);
	va_end(ap);
	return 0;
}

static int parse_array(struct rd *r, struct shxd_gguf_kv *kv)
{
	uint32_t at;
	uint64_t n, i, slen;
	const uint8_t *s;
	int ret;

	ret = rd_u32(r, "array element type", &at);
	if (!ret)
		ret = rd_u64(r, "array length", &n);
	if (ret)
		return ret;
	if (at >= ARRAY_SIZE(g_vname))
		return shxd_tfile_fail(r->err, r->errlen,
			"%s: unknown array element type %" PRIu32 " at offset %zu",
			r->where, at, r->off - 12);
	if (at == SHXD_GGUF_ARRAY)
		return shxd_tfile_fail(r->err, r->errlen,
			"%s: arrays of arrays are not supported (at offset %zu)",
			r->where, r->off - 12);
	kv->arr_type = at;
	kv->arr_len = n;
	kv->val = r->p + r->off;
	if (at != SHXD_GGUF_STRING) {
		if (n > (r->len - r->off) / g_vsize[at])
			return shxd_tfile_fail(r->err, r->errlen,
				"%s: array of %" PRIu64 " %s at offset %zu past the end of the file (%zu bytes)",
				r->where, n, g_vname[at], r->off, r->len);
		r->off += n * g_vsize[at];
		return 0;
	}
	if (n > (r->len - r->off) / 8)
		return shxd_tfile_fail(r->err, r->errlen,
			"%s: array of %" PRIu64 " strings at offset %zu past the end of the file (%zu bytes)",
			r->where, n, r->off, r->len);
	for (i = 0; i < n; i++) {
		ret = rd_str(r, "array string", &s, &slen);
		if (ret)
			return ret;
	}
	return 0;
}

static int parse_kv(struct rd *r, struct shxd_gguf_kv *kv, unsigned int idx)
{
	char name[SHXD_TNAME_MAX];
	const uint8_t *key, *str;
	uint64_t klen, slen;
	uint32_t type;
	int ret;

	where(r, "kv %u at offset %zu", idx, r->off);
	ret = rd_str(r, "key", &key, &klen);
	if (ret)
		return ret;
	if (!klen)
		return shxd_tfile_fail(r->err, r->errlen, "%s: empty key",
				       r->where);
	shxd_tfile_pname(name, sizeof(name), key, klen);
	where(r, "kv '%s'", name);
	ret = rd_u32(r, "value type", &type);
	if (ret)
		return ret;
	if (type >= ARRAY_SIZE(g_vname))
		return shxd_tfile_fail(r->err, r->errlen,
			"%s: unknown value type %" PRIu32 " at offset %zu",
			r->where, type, r->off - 4);
	kv->key = (const char *)key;
	kv->key_len = klen;
	kv->type = type;
	kv->val = r->p + r->off;
	if (type == SHXD_GGUF_ARRAY)
		return parse_array(r, kv);
	if (type == SHXD_GGUF_STRING)
		return rd_str(r, "string value", &str, &slen);
	return rd_skip(r, g_vsize[type], "value");
}

static int kv_cmp(const void *a, const void *b)
{
	const struct shxd_gguf_kv *x = *(const struct shxd_gguf_kv *const *)a;
	const struct shxd_gguf_kv *y = *(const struct shxd_gguf_kv *const *)b;
	size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
	int c = memcmp(x->key, y->key, n);

	if (c)
		return c;
	if (x->key_len != y->key_len)
		return x->key_len < y->key_len ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int check_keys(const struct shxd_tfile *f, char *err, size_t errlen)
{
	const struct shxd_gguf_kv **v;
	char name[SHXD_TNAME_MAX];
	unsigned int i;
	int ret = 0;

	if (f->nr_kv < 2)
		return 0;
	v = malloc(f->nr_kv * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < f->nr_kv; i++)
		v[i] = &f->kv[i];
	qsort(v, f->nr_kv, sizeof(*v), kv_cmp);
	for (i = 1; i < f->nr_kv; i++) {
		if (v[i - 1]->key_len != v[i]->key_len ||
		    memcmp(v[i - 1]->key, v[i]->key, v[i]->key_len))
			continue;
		shxd_tfile_pname(name, sizeof(name), v[i]->key, v[i]->key_len);
		ret = shxd_tfile_fail(err, errlen,
			"duplicate key '%s' (kv %td and %td)", name,
			v[i - 1] - f->kv, v[i] - f->kv);
		break;
	}
	free(v);
	return ret;
}

static const struct shxd_gguf_kv *kv_find(const struct shxd_tfile *f,
					  const char *key)
{
	size_t n = strlen(key);
	unsigned int i;

	for (i = 0; i < f->nr_kv; i++)
		if (f->kv[i].key_len == n && !memcmp(f->kv[i].key, key, n))
			return &f->kv[i];
	return NULL;
}

static int get_alignment(const struct shxd_tfile *f, uint32_t *align,
			 char *err, size_t errlen)
{
	const struct shxd_gguf_kv *kv = kv_find(f, "general.alignment");

	*align = GGUF_ALIGN;
	if (!kv)
		return 0;
	if (kv->type != SHXD_GGUF_U32)
		return shxd_tfile_fail(err, errlen,
			"kv 'general.alignment': type %s, want u32",
			g_vname[kv->type]);
	*align = le32(kv->val);
	if (!*align || (*align & (*align - 1)))
		return shxd_tfile_fail(err, errlen,
			"kv 'general.alignment': %" PRIu32 " is not a power of two",
			*align);
	return 0;
}

/* One tensor info; d->offset is left relative to the data section. */
static int parse_tinfo(struct rd *r, struct shxd_tdesc *d, unsigned int idx)
{
	char shown[SHXD_TNAME_MAX];
	const struct ggml_tt *tt;
	const uint8_t *name;
	uint64_t nlen, nel = 1, blocks;
	uint32_t nd, type, j;
	int ret;

	where(r, "tensor %u at offset %zu", idx, r->off);
	ret = rd_u64(r, "name length", &nlen);
	if (ret)
		return ret;
	if (!nlen)
		return shxd_tfile_fail(r->err, r->errlen, "%s: empty name",
				       r->where);
	if (nlen >= SHXD_TNAME_MAX)
		return shxd_tfile_fail(r->err, r->errlen,
			"%s: name of %" PRIu64 " bytes is too long (at most %d)",
			r->where, nlen, SHXD_TNAME_MAX - 1);
	name = r->p + r->off;
	ret = rd_skip(r, nlen, "name");
	if (ret)
		return ret;
	if (memchr(name, 0, nlen))
		return shxd_tfile_fail(r->err, r->errlen,
			"%s: name holds a NUL byte", r->where);
	memcpy(d->name, name, nlen);
	d->name[nlen] = '\0';
	shxd_tfile_pname(shown, sizeof(shown), name, nlen);
	where(r, "tensor '%s'", shown);

	ret = rd_u32(r, "dimension count", &nd);
	if (ret)
		return ret;
	if (!nd || nd > SHXD_TDIMS)
		return shxd_tfile_fail(r->err, r->errlen,
			"%s: %" PRIu32 " dimensions at offset %zu (want 1 to %d)",
			r->where, nd, r->off - 4, SHXD_TDIMS);
	d->ndim = nd;
	for (j = 0; j < SHXD_TDIMS; j++)
		d->ne[j] = 1;
	for (j = 0; j < nd; j++) {
		ret = rd_u64(r, "dimension", &d->ne[j]);
		if (ret)
			return ret;
		if (!d->ne[j])
			return shxd_tfile_fail(r->err, r->errlen,
				"%s: dimension %" PRIu32 " is zero", r->where, j);
		/* ggml counts elements in int64_t. */
		if (nel > INT64_MAX / d->ne[j])
			return shxd_tfile_fail(r->err, r->errlen,
				"%s: dimension %" PRIu32 " (%" PRIu64 ") overflows the element count",
				r->where, j, d->ne[j]);
		nel *= d->ne[j];
	}

	ret = rd_u32(r, "type", &type);
	if (ret)
		return ret;
	if (type >= ARRAY_SIZE(g_ggml) || !g_ggml[type].name)
		return shxd_tfile_fail(r->err, r->errlen,
			"%s: unknown ggml type %" PRIu32 " at offset %zu",
			r->where, type, r->off - 4);
	tt = &g_ggml[type];
	d->type = tt->t;
	snprintf(d->type_name, sizeof(d->type_name), "%s", tt->name);
	if (d->ne[0] % tt->blck)
		return shxd_tfile_fail(r->err, r->errlen,
			"%s: rows of %" PRIu64 " elements are not whole %u-element %s blocks",
			r->where, d->ne[0], tt->blck, tt->name);
	blocks = nel / tt->blck;
	if (blocks > INT64_MAX / tt->size)
		return shxd_tfile_fail(r->err, r->errlen,
			"%s: %" PRIu64 " elements of %s overflow the byte count",
			r->where, nel, tt->name);
	d->size = blocks * tt->size;
	return rd_u64(r, "offset", &d->offset);
}

/* Room for one more entry of a table the header sized at most n. */
static int grow(void **p, unsigned int *cap, unsigned int used,
		unsigned int n, size_t sz)
{
	size_t c;
	void *q;

	if (used < *cap)
		return 0;
	/* Doubling, not n at once: n is only what the header claims. */
	c = *cap ? (size_t)*cap * 2 : 64;
	if (c > n)
		c = n;
	q = realloc(*p, c * sz);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = (unsigned int)c;
	return 0;
}

/* Puts each tensor's offset from the image's start, once it is in it. */
static int place(struct shxd_tfile *f, size_t len, uint32_t align,
		 char *err, size_t errlen)
{
	uint64_t data = f->data_offset, rel, size;
	struct shxd_tdesc *d;
	unsigned int i;

	for (i = 0; i < f->nr; i++) {
		d = &f->t[i];
		rel = d->offset;
		size = d->size;
		if (rel % align)
			return shxd_tfile_fail(err, errlen,
				"tensor '%s': offset %" PRIu64 " is not a multiple of the alignment %" PRIu32,
				d->name, rel, align);
		if (rel > len - data || size > len - data - rel)
			return shxd_tfile_fail(err, errlen,
				"tensor '%s': data [%" PRIu64 ", %" PRIu64 ") past the end of the file (%zu bytes)",
				d->name, shxd_sat_add(data, rel),
				shxd_sat_add(shxd_sat_add(data, rel), size), len);
		d->offset = data + rel;
	}
	return 0;
}

int shxd_gguf_parse(const uint8_t *img, size_t len, struct shxd_tfile *out,
		    char *err, size_t errlen)
{
	struct rd r = { .p = img, .len = len, .err = err, .errlen = errlen };
	struct shxd_tfile f = { 0 };
	unsigned int cap_kv = 0, cap_t = 0;
	uint64_t n_t, n_kv, left, data;
	uint32_t magic, version, align, sw;
	int ret;

	memset(out, 0, sizeof(*out));
	if (err && errlen)
		err[0] = '\0';
	where(&r, "header");
	ret = rd_u32(&r, "magic", &magic);
	if (ret)
		return ret;
	if (magic != GGUF_MAGIC)
		return shxd_tfile_fail(err, errlen,
			"header: bad magic %02x %02x %02x %02x at offset 0 (want \"GGUF\")",
			img[0], img[1], img[2], img[3]);
	ret = rd_u32(&r, "version", &version);
	if (ret)
		return ret;
	sw = __builtin_bswap32(version);
	if (version != 2 && version != 3)
		return shxd_tfile_fail(err, errlen, (sw == 2 || sw == 3) ?
			"header: version %" PRIu32 " at offset 4: a big-endian GGUF, not supported" :
			"header: version %" PRIu32 " at offset 4 is not supported (want 2 or 3)",
			version);
	ret = rd_u64(&r, "tensor count", &n_t);
	if (!ret)
		ret = rd_u64(&r, "metadata count", &n_kv);
	if (ret)
		return ret;
	left = len - r.off;
	if (n_kv > left / KV_MIN || n_kv > UINT32_MAX)
		return shxd_tfile_fail(err, errlen,
			"header: %" PRIu64 " metadata entries cannot fit in the %" PRIu64 " bytes after the header",
			n_kv, left);
	if (n_t > (left - n_kv * KV_MIN) / TI_MIN || n_t > UINT32_MAX)
		return shxd_tfile_fail(err, errlen,
			"header: %" PRIu64 " tensors and %" PRIu64 " metadata entries cannot fit in the %" PRIu64 " bytes after the header",
			n_t, n_kv, left);

	for (f.nr_kv = 0; f.nr_kv < n_kv; f.nr_kv++) {
		ret = grow((void **)&f.kv, &cap_kv, f.nr_kv, (unsigned int)n_kv,
			   sizeof(*f.kv));
		if (!ret) {
			memset(&f.kv[f.nr_kv], 0, sizeof(*f.kv));
			ret = parse_kv(&r, &f.kv[f.nr_kv], f.nr_kv);
		}
		if (ret)
			goto err;
	}
	ret = check_keys(&f, err, errlen);
	if (!ret)
		ret = get_alignment(&f, &align, err, errlen);
	if (ret)
		goto err;

	for (f.nr = 0; f.nr < n_t; f.nr++) {
		ret = grow((void **)&f.t, &cap_t, f.nr, (unsigned int)n_t,
			   sizeof(*f.t));
		if (!ret) {
			memset(&f.t[f.nr], 0, sizeof(*f.t));
			ret = parse_tinfo(&r, &f.t[f.nr], f.nr);
		}
		if (ret)
			goto err;
	}

	/* r.off <= len, and align <= 2^31: no wrap. */
	data = ((uint64_t)r.off + align - 1) & ~((uint64_t)align - 1);
	if (data > len) {
		if (f.nr) {
			ret = shxd_tfile_fail(err, errlen,
				"header: the data section at %" PRIu64 " (offset %zu padded to %" PRIu32 ") is past the end of the file (%zu bytes)",
				data, r.off, align, len);
			goto err;
		}
		/* No tensors: a writer may leave out the padding. */
		data = len;
	}
	f.data_offset = data;
	ret = place(&f, len, align, err, errlen);
	if (!ret)
		ret = shxd_tfile_check_set(&f, err, errlen);
	if (ret)
		goto err;
	*out = f;
	return 0;
err:
	shxd_tfile_free(&f);
	return ret;
}

int shxd_gguf_get_int(const struct shxd_tfile *f, const char *key,
		      int64_t *v)
{
	const struct shxd_gguf_kv *kv = kv_find(f, key);
	const uint8_t *b;
	uint64_t u;

	if (!kv)
		return -ENOENT;
	b = kv->val;
	switch (kv->type) {
	case SHXD_GGUF_U8:
		*v = b[0];
		return 0;
	case SHXD_GGUF_I8:
		*v = (int8_t)b[0];
		return 0;
	case SHXD_GGUF_BOOL:
		*v = b[0] != 0;
		return 0;
	case SHXD_GGUF_U16:
		*v = (uint16_t)(b[0] | b[1] << 8);
		return 0;
	case SHXD_GGUF_I16:
		*v = (int16_t)(uint16_t)(b[0] | b[1] << 8);
		return 0;
	case SHXD_GGUF_U32:
		*v = le32(b);
		return 0;
	case SHXD_GGUF_I32:
		*v = (int32_t)le32(b);
		return 0;
	case SHXD_GGUF_U64:
		u = le64(b);
		if (u > INT64_MAX)
			return -EINVAL;
		*v = (int64_t)u;
		return 0;
	case SHXD_GGUF_I64:
		*v = (int64_t)le64(b);
		return 0;
	default:
		return -EINVAL;
	}
}

int shxd_gguf_get_float(const struct shxd_tfile *f, const char *key,
			double *v)
{
	const struct shxd_gguf_kv *kv = kv_find(f, key);
	uint32_t u32;
	uint64_t u64;
	float x;

	if (!kv)
		return -ENOENT;
	switch (kv->type) {
	case SHXD_GGUF_F32:
		u32 = le32(kv->val);
		memcpy(&x, &u32, sizeof(x));
		*v = x;
		return 0;
	case SHXD_GGUF_F64:
		u64 = le64(kv->val);
		memcpy(v, &u64, sizeof(*v));
		return 0;
	default:
		return -EINVAL;
	}
}

int shxd_gguf_get_str(const struct shxd_tfile *f, const char *key,
		      const char **s, size_t *len)
{
	const struct shxd_gguf_kv *kv = kv_find(f, key);

	if (!kv)
		return -ENOENT;
	if (kv->type != SHXD_GGUF_STRING)
		return -EINVAL;
	*len = (size_t)le64(kv->val);
	*s = (const char *)kv->val + 8;
	return 0;
}
