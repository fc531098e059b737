/* SPDX-License-Identifier: MIT */
/* Running one fetched job on memory the engine has mapped. */
#ifndef SHXD_EXEC_H
#define SHXD_EXEC_H

#include <stdint.h>

#include "syshax.h"

/* A referenced buffer as the engine sees it: mapped whole. */
struct shxd_mapping {
	uint64_t id;
	void *addr;
	uint64_t size;
};

/*
 * Runs job; maps[i] is the mapping of job->refs[i] (nr_refs entries).
 * Returns the completion status (0 or -errno) and sets *result.
 */
int shxd_exec(const struct syshax_job *job,
	      const struct shxd_mapping *const *maps, __u64 *result);

#endif /* SHXD_EXEC_H */
