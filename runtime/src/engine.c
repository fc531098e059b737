// SPDX-License-Identifier: MIT
/* Engine calls (syshaxd's side of the job queue). A NULL pointer argument
 * is -EINVAL before anything reaches the backend. */
#include <errno.h>

#include "rt_int.h"

int syshax_engine_attach(struct syshax *sh, int node)
{
	struct syshax_engine_attach_args a = { .node = node };
	int ret;

	if (!sh)
		return -EINVAL;
	ret = sh->be->engine_attach(sh, &a);
	if (ret < 0)
		return ret;
	sh->engine = 1;
	/* An engine's rings, in that role, from now on. */
	return sh->use_rings ? shrt_ring_get(sh) : 0;
}

int syshax_engine_fetch(struct syshax *sh, struct syshax_engine_job *jobs,
			unsigned int max, int64_t timeout_ns)
{
	struct syshax_engine_fetch_args f = {
		.jobs = (uintptr_t)jobs,
		.max = max,
		.timeout_ns = timeout_ns,
	};

	if (!sh || !jobs)
		return -EINVAL;
	if (sh->ring)
		return shrt_ring_fetch(sh, &f);
	return sh->be->engine_fetch(sh, &f);
}

int syshax_engine_map(struct syshax *sh, uint64_t id, void **addr,
		      uint64_t *size)
{
	if (!sh || !addr || !size)
		return -EINVAL;
	return shrt_maps_get(sh, id, addr, size);
}

/* Both backends: the broker's references to the buffer live in the jobs,
 * the mapping only keeps the memory (kept until the buffer goes where
 * the broker says so: maps.c). */
int syshax_engine_unmap(struct syshax *sh, void *addr, uint64_t size)
{
	if (!sh || !addr)
		return -EINVAL;
	return shrt_maps_put(sh, addr, size);
}

int syshax_engine_complete(struct syshax *sh,
			   const struct syshax_engine_cpl *cpls,
			   unsigned int nr)
{
	if (!sh || !cpls)
		return -EINVAL;
	if (sh->ring)
		return nr ? shrt_ring_complete(sh, cpls, nr) : -EINVAL;
	return sh->be->engine_complete(sh, cpls, nr);
}
