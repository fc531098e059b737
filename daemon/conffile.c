// SPDX-License-Identifier: MIT
/* "key = value" configuration files (conffile.h). */
#include "conffile.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

/* Strips leading and trailing blanks in place. */
static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

int shxd_conffile_read(const char *path, shxd_conf_set_fn set, void *arg,
		       int *line, char *key_out, char *value_out, size_t klen,
		       size_t vlen)
{
	char buf[PATH_MAX + 64];
	FILE *f = fopen(path, "re");
	int ret = 0;

	*line = 0;
	key_out[0] = value_out[0] = '\0';
	if (!f)
		return -errno;
	while (fgets(buf, sizeof(buf), f)) {
		char *hash = strchr(buf, '#');
		char *eq, *key;

		++*line;
		if (hash)
			*hash = '\0';
		key = trim(buf);
		if (!*key)
			continue;
		eq = strchr(key, '=');
		if (!eq) {
			ret = -EINVAL;
			break;
		}
		*eq = '\0';
		key = trim(key);
		ret = set(arg, key, trim(eq + 1));
		if (ret) {
			snprintf(key_out, klen, "%s", key);
			snprintf(value_out, vlen, "%s", trim(eq + 1));
			break;
		}
	}
	fclose(f);
	return ret;
}
