/* SPDX-License-Identifier: MIT */
/* What gguf.c and safetensors.c share (tfile.c): messages and the checks
 * that look at all tensors at once. Not API. */
#ifndef SHXD_TFILE_INT_H
#define SHXD_TFILE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "tfile.h"

/* Writes the message into err (when there is room) and returns -EINVAL. */
int shxd_tfile_fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A printable, NUL-terminated copy of s[0..len) for a message: at most
 * dstlen - 1 bytes, anything outside printable ASCII as '?'. */
void shxd_tfile_pname(char *dst, size_t dstlen, const void *s, size_t len);

/* a + b, or UINT64_MAX where it would wrap: for [begin, end) in messages. */
static inline uint64_t shxd_sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Once each tensor lies inside the image: no two with one name, no two
 * whose bytes overlap. 0, -EINVAL (err says which pair) or -ENOMEM. */
int shxd_tfile_check_set(const struct shxd_tfile *f, char *err,
			 size_t errlen);

#endif /* SHXD_TFILE_INT_H */
