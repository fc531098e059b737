/* SPDX-License-Identifier: MIT */
/*
 * The "key = value" file syshaxd's and syshax-serve's configurations are
 * read from: one key per line, '#' starts a comment, blanks around keys
 * and values do not count. Each key goes to the caller's setter.
 */
#ifndef SHXD_CONFFILE_H
#define SHXD_CONFFILE_H

#include <stddef.h>

/* set: 0, or a -errno that stops the reading. */
typedef int (*shxd_conf_set_fn)(void *arg, const char *key,
				const char *value);

/* Returns 0, -errno from fopen (*line 0), -EINVAL for a line that is not
 * "key = value" (key ""), or set's error; then *line is the line's number
 * and key and value hold the line's (truncated to klen and vlen bytes). */
int shxd_conffile_read(const char *path, shxd_conf_set_fn set, void *arg,
		       int *line, char *key, char *value, size_t klen,
		       size_t vlen);

#endif /* SHXD_CONFFILE_H */
