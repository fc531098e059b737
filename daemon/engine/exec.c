// SPDX-License-Identifier: MIT
/* Running one fetched job: the ops syshaxd implements (syshax_ops.h). */
#include "exec.h"

#include <errno.h>
#include <string.h>

#include "syshax_ops.h"

/* The start of a ref in its mapping; NULL when the broker's bounds and the
 * mapping disagree (never trust one side to have checked for the other). */
static unsigned char *ref_ptr(const struct syshax_buf_ref *r,
			      const struct shxd_mapping *m)
{
	if (r->offset > m->size || r->length > m->size - r->offset)
		return NULL;
	return (unsigned char *)m->addr + r->offset;
}

static int exec_copy(const struct syshax_job *job,
		     const struct shxd_mapping *const *maps, __u64 *result)
{
	const struct syshax_buf_ref *src = &job->refs[0], *dst = &job->refs[1];
	unsigned char *s = ref_ptr(src, maps[0]), *d = ref_ptr(dst, maps[1]);
	uint64_t n = src->length < dst->length ? src->length : dst->length;

	if (!s || !d)
		return -ERANGE;
	/* Both refs may name the same buffer, overlapping. */
	memmove(d, s, n);
	*result = n;
	return 0;
}

int shxd_exec(const struct syshax_job *job,
	      const struct shxd_mapping *const *maps, __u64 *result)
{
	*result = 0;
	switch (job->op) {
	case SYSHAX_OP_NOP:
		return 0;
	case SYSHAX_OP_COPY:
		if (job->nr_refs != 2)
			return -EINVAL;
		return exec_copy(job, maps, result);
	default:
		/* Compute ops arrive with the kernels (daemon issue). */
		return -EOPNOTSUPP;
	}
}
