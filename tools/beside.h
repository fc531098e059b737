/* SPDX-License-Identifier: MIT */
/*
 * Finds a program of the tree beside the one running, so that a tool or a
 * test started from build/ (or from the VM guest's /bin) runs the syshaxd
 * built with it rather than whichever one is installed.
 */
#ifndef SHX_BESIDE_H
#define SHX_BESIDE_H

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/*
 * Into out: the first of rel[] (paths relative to the running program's
 * folder) that is executable, else name alone, for execvp() to look up
 * on PATH.
 */
static inline void beside_path(char *out, size_t size, const char *name,
			       const char *const rel[], size_t nrel)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;
	size_t i;

	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			for (i = 0; i < nrel; i++) {
				int len = snprintf(out, size, "%s/%s", self,
						   rel[i]);

				if (len > 0 && (size_t)len < size &&
				    !access(out, X_OK))
					return;
			}
		}
	}
	snprintf(out, size, "%s", name);
}

#endif /* SHX_BESIDE_H */
