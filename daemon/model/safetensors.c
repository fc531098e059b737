// SPDX-License-Identifier: MIT
/*
 * safetensors (tfile.h): a u64 little-endian header length N, N bytes of
 * JSON, then the data section:
 *
 *	{"name": {"dtype": "F32", "shape": [a, b], "data_offsets": [begin, end]},
 *	 ..., "__metadata__": {...}}
 *
 * Offsets count from the data section (the byte after the header). The JSON
 * goes to cJSON as a NUL-terminated copy: cJSON is not ours and the fuzz
 * build cannot instrument it, so it never gets the chance to read past the
 * header.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "tfile.h"
#include "tfile_int.h"

#define ST_HDR_MAX	(100u << 20)	/* the reference implementation's limit */
/* Up to 2^53 a JSON number (a double in cJSON) is exact. */
#define JSON_EXACT_MAX	9007199254740992.0

struct st_dtype {
	const char *name;
	uint8_t bits;		/* per element; F4 and F6 pack several a byte */
	enum shxd_ttype t;
};

static const struct st_dtype g_dtypes[] = {
	{ "F32", 32, SHXD_T_F32 },
	{ "F16", 16, SHXD_T_F16 },
	{ "BF16", 16, SHXD_T_BF16 },
	{ "F64", 64, SHXD_T_OTHER },
	{ "C64", 64, SHXD_T_OTHER },
	{ "I64", 64, SHXD_T_OTHER },
	{ "U64", 64, SHXD_T_OTHER },
	{ "I32", 32, SHXD_T_OTHER },
	{ "U32", 32, SHXD_T_OTHER },
	{ "I16", 16, SHXD_T_OTHER },
	{ "U16", 16, SHXD_T_OTHER },
	{ "I8", 8, SHXD_T_OTHER },
	{ "U8", 8, SHXD_T_OTHER },
	{ "BOOL", 8, SHXD_T_OTHER },
	{ "F8_E4M3", 8, SHXD_T_OTHER },
	{ "F8_E5M2", 8, SHXD_T_OTHER },
	{ "F8_E4M3FNUZ", 8, SHXD_T_OTHER },
	{ "F8_E5M2FNUZ", 8, SHXD_T_OTHER },
	{ "F8_E8M0", 8, SHXD_T_OTHER },
	{ "F6_E2M3", 6, SHXD_T_OTHER },
	{ "F6_E3M2", 6, SHXD_T_OTHER },
	{ "F4", 4, SHXD_T_OTHER },
};

static const struct st_dtype *find_dtype(const char *s)
{
	size_t i;

	for (i = 0; i < sizeof(g_dtypes) / sizeof(g_dtypes[0]); i++)
		if (!strcmp(g_dtypes[i].name, s))
			return &g_dtypes[i];
	return NULL;
}

/* A JSON number that is a whole, non-negative, exactly held integer. */
static int json_u64(const cJSON *j, uint64_t *v)
{
	double d;

	if (!cJSON_IsNumber(j))
		return -1;
	d = j->valuedouble;
	if (!(d >= 0 && d <= JSON_EXACT_MAX) || (double)(uint64_t)d != d)
		return -1;
	*v = (uint64_t)d;
	return 0;
}

static int parse_shape(const cJSON *shape, struct shxd_tdesc *d,
		       uint64_t *nel, char *err, size_t errlen)
{
	const cJSON *e;
	int n = cJSON_GetArraySize(shape), k = 0;
	uint64_t v;

	if (n > SHXD_TDIMS)
		return shxd_tfile_fail(err, errlen,
			"tensor '%s': %d dimensions (at most %d)", d->name, n,
			SHXD_TDIMS);
	/* A scalar, shape [], is one element in one dimension. */
	d->ndim = n ? (uint32_t)n : 1;
	for (k = 0; k < SHXD_TDIMS; k++)
		d->ne[k] = 1;
	*nel = 1;
	k = 0;
	cJSON_ArrayForEach(e, shape) {
		if (json_u64(e, &v))
			return shxd_tfile_fail(err, errlen,
				"tensor '%s': shape[%d] is not a non-negative integer",
				d->name, k);
		if (!v)
			return shxd_tfile_fail(err, errlen,
				"tensor '%s': shape[%d] is zero (empty tensors are not supported)",
				d->name, k);
		if (*nel > INT64_MAX / v)
			return shxd_tfile_fail(err, errlen,
				"tensor '%s': shape[%d] (%" PRIu64 ") overflows the element count",
				d->name, k, v);
		*nel *= v;
		/* The last (contiguous) dimension is ggml's ne[0]. */
		d->ne[n - 1 - k] = v;
		k++;
	}
	return 0;
}

static int parse_tensor(const cJSON *j, unsigned int idx,
			struct shxd_tdesc *d, uint64_t base, size_t len,
			char *err, size_t errlen)
{
	const char *name = j->string ? j->string : "";
	const cJSON *dtype, *shape, *offs;
	const struct st_dtype *dt;
	char shown[SHXD_TNAME_MAX];
	uint64_t nel = 0, begin, end;
	size_t nlen = strlen(name);
	int ret;

	if (!nlen)
		return shxd_tfile_fail(err, errlen, "tensor %u: empty name", idx);
	if (nlen >= SHXD_TNAME_MAX) {
		shxd_tfile_pname(shown, sizeof(shown), name, nlen);
		return shxd_tfile_fail(err, errlen,
			"tensor '%s...': name of %zu bytes is too long (at most %d)",
			shown, nlen, SHXD_TNAME_MAX - 1);
	}
	/* Messages show a printable copy of the name. */
	shxd_tfile_pname(shown, sizeof(shown), name, nlen);
	memcpy(d->name, name, nlen + 1);
	if (!cJSON_IsObject(j))
		return shxd_tfile_fail(err, errlen,
			"tensor '%s': not a JSON object", shown);

	dtype = cJSON_GetObjectItemCaseSensitive(j, "dtype");
	if (!cJSON_IsString(dtype))
		return shxd_tfile_fail(err, errlen,
			"tensor '%s': no \"dtype\" string", shown);
	dt = find_dtype(dtype->valuestring);
	if (!dt) {
		char dn[24];

		shxd_tfile_pname(dn, sizeof(dn), dtype->valuestring,
				 strlen(dtype->valuestring));
		return shxd_tfile_fail(err, errlen,
			"tensor '%s': unknown dtype '%s'", shown, dn);
	}
	d->type = dt->t;
	snprintf(d->type_name, sizeof(d->type_name), "%s", dt->name);

	shape = cJSON_GetObjectItemCaseSensitive(j, "shape");
	if (!cJSON_IsArray(shape))
		return shxd_tfile_fail(err, errlen,
			"tensor '%s': no \"shape\" array", shown);
	ret = parse_shape(shape, d, &nel, err, errlen);
	if (ret)
		return ret;
	/* nel <= 2^63 and bits <= 64: count bits in two steps. */
	if (nel > UINT64_MAX / dt->bits)
		return shxd_tfile_fail(err, errlen,
			"tensor '%s': %" PRIu64 " elements of %s overflow the byte count",
			shown, nel, dt->name);
	if ((nel * dt->bits) % 8)
		return shxd_tfile_fail(err, errlen,
			"tensor '%s': %" PRIu64 " elements of %s are not a whole number of bytes",
			shown, nel, dt->name);
	d->size = nel * dt->bits / 8;

	offs = cJSON_GetObjectItemCaseSensitive(j, "data_offsets");
	if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2)
		return shxd_tfile_fail(err, errlen,
			"tensor '%s': no \"data_offsets\" [begin, end] pair",
			shown);
	if (json_u64(cJSON_GetArrayItem(offs, 0), &begin) ||
	    json_u64(cJSON_GetArrayItem(offs, 1), &end))
		return shxd_tfile_fail(err, errlen,
			"tensor '%s': data_offsets are not non-negative integers",
			shown);
	if (begin > end)
		return shxd_tfile_fail(err, errlen,
			"tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 ") end before they begin",
			shown, begin, end);
	/* base <= len; begin, end <= 2^53. */
	if (end > len - base)
		return shxd_tfile_fail(err, errlen,
			"tensor '%s': data [%" PRIu64 ", %" PRIu64 ") past the end of the file (%zu bytes)",
			shown, base + begin, base + end, len);
	if (end - begin != d->size)
		return shxd_tfile_fail(err, errlen,
			"tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 ") hold %" PRIu64 " bytes, but %" PRIu64 " %s elements take %" PRIu64,
			shown, begin, end, end - begin, nel, dt->name, d->size);
	d->offset = base + begin;
	return 0;
}

static int parse_json(cJSON *root, struct shxd_tfile *f, uint64_t base,
		      size_t len, char *err, size_t errlen)
{
	const cJSON *j;
	unsigned int n = 0;
	int ret;

	if (!cJSON_IsObject(root))
		return shxd_tfile_fail(err, errlen,
			"header: the JSON at offset 8 is not an object");
	cJSON_ArrayForEach(j, root)
		n++;
	f->t = calloc(n ? n : 1, sizeof(*f->t));
	if (!f->t)
		return -ENOMEM;
	n = 0;
	cJSON_ArrayForEach(j, root) {
		if (j->string && !strcmp(j->string, "__metadata__")) {
			if (!cJSON_IsObject(j))
				return shxd_tfile_fail(err, errlen,
					"header: \"__metadata__\" is not an object");
			continue;
		}
		ret = parse_tensor(j, n, &f->t[n], base, len, err, errlen);
		if (ret)
			return ret;
		f->nr = ++n;
	}
	return 0;
}

int shxd_safetensors_parse(const uint8_t *img, size_t len,
			   struct shxd_tfile *out, char *err, size_t errlen)
{
	struct shxd_tfile f = { 0 };
	const char *end, *p;
	cJSON *root = NULL;
	uint64_t hlen = 0;
	char *hdr = NULL;
	int i, ret;

	memset(out, 0, sizeof(*out));
	if (err && errlen)
		err[0] = '\0';
	if (len < 8)
		return shxd_tfile_fail(err, errlen,
			"header: %zu bytes, too short for the 8-byte header length",
			len);
	for (i = 7; i >= 0; i--)
		hlen = hlen << 8 | img[i];
	if (hlen > ST_HDR_MAX)
		return shxd_tfile_fail(err, errlen,
			"header: length %" PRIu64 " at offset 0 is over the limit (%u bytes)",
			hlen, ST_HDR_MAX);
	if (hlen > len - 8)
		return shxd_tfile_fail(err, errlen,
			"header: length %" PRIu64 " at offset 0 past the end of the file (%zu bytes)",
			hlen, len);

	hdr = malloc(hlen + 1);
	if (!hdr)
		return -ENOMEM;
	memcpy(hdr, img + 8, hlen);
	hdr[hlen] = '\0';
	root = cJSON_ParseWithOpts(hdr, &end, 0);
	if (!root) {
		ret = shxd_tfile_fail(err, errlen,
			"header: bad JSON at offset %td", end ? end - hdr + 8 : 8);
		goto out;
	}
	/* Writers pad the header with spaces; anything else is junk (a NUL
	 * too: cJSON stopped there). */
	for (p = end; p < hdr + hlen; p++)
		if (!strchr(" \t\r\n", *p) || !*p) {
			ret = shxd_tfile_fail(err, errlen,
				"header: bytes after the JSON object at offset %td",
				p - hdr + 8);
			goto out;
		}

	f.data_offset = 8 + hlen;
	ret = parse_json(root, &f, f.data_offset, len, err, errlen);
	if (!ret)
		ret = shxd_tfile_check_set(&f, err, errlen);
out:
	cJSON_Delete(root);
	free(hdr);
	if (ret) {
		shxd_tfile_free(&f);
		return ret;
	}
	*out = f;
	return 0;
}
