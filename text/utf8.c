// SPDX-License-Identifier: MIT
/* UTF-8 reading and checking (utf8.h). */
#include "utf8.h"

size_t shx_utf8_put(uint32_t cp, char *out)
{
	/* callers pass <= 0x1FFFFF: four bytes at most */
	unsigned char *o = (unsigned char *)out;

	if (cp < 0x80) {
		o[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (unsigned char)(0xC0 | (cp >> 6));
		o[1] = (unsigned char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (unsigned char)(0xE0 | (cp >> 12));
		o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
		o[2] = (unsigned char)(0x80 | (cp & 0x3F));
		return 3;
	}
	o[0] = (unsigned char)(0xF0 | (cp >> 18));
	o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
	o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
	o[3] = (unsigned char)(0x80 | (cp & 0x3F));
	return 4;
}

/* llama.cpp's unicode_cpt_from_utf8: -1 where it throws. */
static int64_t lax_decode(const uint8_t *s, size_t n, size_t *adv)
{
	size_t k, i;
	uint32_t cp;

	if (!(s[0] & 0x80)) {
		*adv = 1;
		return s[0];
	}
	if (!(s[0] & 0x40))
		return -1;
	if (!(s[0] & 0x20)) {
		k = 2;
		cp = s[0] & 0x1F;
	} else if (!(s[0] & 0x10)) {
		k = 3;
		cp = s[0] & 0x0F;
	} else if (!(s[0] & 0x08)) {
		k = 4;
		cp = s[0] & 0x07;
	} else {
		return -1;
	}
	if (k > n)
		return -1;
	for (i = 1; i < k; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return -1;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	*adv = k;
	return cp;
}

uint32_t shx_utf8_next(const char *s, size_t n, size_t *adv)
{
	int64_t cp = lax_decode((const uint8_t *)s, n, adv);

	if (cp < 0) {
		*adv = 1;
		return 0xFFFD;
	}
	return (uint32_t)cp;
}

size_t shx_utf8_clean(const char *s, size_t n, char *out)
{
	size_t i = 0, o = 0, adv;

	while (i < n) {
		uint32_t cp = shx_utf8_next(s + i, n - i, &adv);

		if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
			cp = 0xFFFD;
		i += adv;
		o += shx_utf8_put(cp, out + o);
	}
	return o;
}

int shx_utf8_check(const uint8_t *s, size_t n)
{
	uint8_t c = s[0], lo = 0x80, hi = 0xBF;
	size_t k, i;

	if (c < 0x80)
		return 1;
	if (c < 0xC2 || c > 0xF4)
		return -1;
	k = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
	if (c == 0xE0)
		lo = 0xA0;
	else if (c == 0xED)
		hi = 0x9F;
	else if (c == 0xF0)
		lo = 0x90;
	else if (c == 0xF4)
		hi = 0x8F;
	for (i = 1; i < k; i++) {
		if (i >= n)
			return 0;
		if (s[i] < (i == 1 ? lo : 0x80) || s[i] > (i == 1 ? hi : 0xBF))
			return -1;
	}
	return (int)k;
}
