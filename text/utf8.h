/* SPDX-License-Identifier: MIT */
/*
 * UTF-8 as the tokenizer needs it: llama.cpp's lenient reading of input
 * (unicode_cpts_from_utf8) and the strict check of decoded output.
 */
#ifndef SHX_UTF8_H
#define SHX_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* The length a lead byte announces, 1 for a continuation byte (llama.cpp's
 * unicode_len_utf8). */
static inline size_t shx_utf8_len(uint8_t c)
{
	static const uint8_t len[16] = { 1, 1, 1, 1, 1, 1, 1, 1,
					 1, 1, 1, 1, 2, 2, 3, 4 };
	return len[c >> 4];
}

/* Writes a code point (<= 0x10FFFF), returns its 1..4 bytes. */
size_t shx_utf8_put(uint32_t cp, char *out);

/* One code point as llama.cpp's unicode_cpts_from_utf8 reads it (overlong
 * forms and surrogates decode; a bad sequence is U+FFFD, one byte); *adv
 * gets the bytes it took. n > 0. */
uint32_t shx_utf8_next(const char *s, size_t n, size_t *adv);

/*
 * The input as llama.cpp reads it: a lead byte whose continuation bytes
 * are missing or wrong, or a stray continuation byte, is U+FFFD and one
 * byte consumed; overlong forms decode (C0 80 is U+0000). Code points a
 * regex cannot take (surrogates, past U+10FFFF: llama.cpp's unicode tables
 * know no such character either) are U+FFFD too. out gets at most 3 * n
 * bytes; returns its length.
 */
size_t shx_utf8_clean(const char *s, size_t n, char *out);

/* Strict UTF-8 (RFC 3629) at s: the length of the whole character there,
 * 0 when s[0..n) is a valid but unfinished start of one, -1 when s[0] is
 * not the start of a valid character. */
int shx_utf8_check(const uint8_t *s, size_t n);

#endif /* SHX_UTF8_H */
