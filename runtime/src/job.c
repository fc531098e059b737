// SPDX-License-Identifier: MIT
/* Client job calls: builders, submit, wait. */
#include <errno.h>
#include <string.h>

#include "rt_int.h"

void syshax_job_init(struct syshax_job *job, uint32_t op, uint64_t user_data)
{
	if (!job)
		return;
	memset(job, 0, sizeof(*job));
	job->op = op;
	job->user_data = user_data;
}

int syshax_job_add_ref(struct syshax_job *job, const struct syshax_buffer *buf,
		       uint64_t offset, uint64_t length, uint32_t access)
{
	struct syshax_buf_ref *r;

	if (!job || !buf)
		return -EINVAL;
	if (job->nr_refs >= SYSHAX_JOB_MAX_REFS)
		return -E2BIG;
	r = &job->refs[job->nr_refs++];
	r->buf = buf->handle;
	r->access = access;
	r->pad = 0;
	r->offset = offset;
	r->length = length;
	return 0;
}

int syshax_job_copy(struct syshax_job *job, const struct syshax_buffer *src,
		    uint64_t soff, const struct syshax_buffer *dst,
		    uint64_t doff, uint64_t len, uint64_t user_data)
{
	if (!job || !src || !dst)
		return -EINVAL;
	syshax_job_init(job, SYSHAX_OP_COPY, user_data);
	syshax_job_add_ref(job, src, soff, len, SYSHAX_ACCESS_READ);
	return syshax_job_add_ref(job, dst, doff, len, SYSHAX_ACCESS_WRITE);
}

int syshax_job_params(struct syshax_job *job, const void *params, size_t size)
{
	if (!job || (!params && size))
		return -EINVAL;
	if (size > sizeof(job->params))
		return -E2BIG;
	memset(job->params, 0, sizeof(job->params));
	if (size)
		memcpy(job->params, params, size);
	return 0;
}

/*
 * nr items in calls of at most max items, until one takes fewer than it
 * was given: the count taken, or the first call's -errno when none was.
 */
int __shrt_chunked(struct syshax *sh, shrt_chunk_fn fn, const void *arg,
		   unsigned int nr, unsigned int max)
{
	unsigned int done = 0;

	if (!nr)
		return -EINVAL;
	while (done < nr) {
		unsigned int n = nr - done < max ? nr - done : max;
		int ret = fn(sh, arg, done, n);

		if (ret < 0)
			return done ? (int)done : ret;
		done += (unsigned int)ret;
		if ((unsigned int)ret < n)
			break;
	}
	return (int)done;
}

static int submit_chunk(struct syshax *sh, const void *jobs,
			unsigned int first, unsigned int n)
{
	return sh->be->submit(sh, (const struct syshax_job *)jobs + first, n);
}

/* Backend-sized SUBMITs. */
int syshax_submit(struct syshax *sh, const struct syshax_job *jobs,
		  unsigned int nr)
{
	unsigned int max;

	if (!sh || !jobs)
		return -EINVAL;
	if (sh->use_rings && !sh->engine) {
		int ret = shrt_ring_get(sh);

		if (ret)
			return ret;
		return nr ? shrt_ring_submit(sh, jobs, nr) : -EINVAL;
	}
	max = sh->ver.max_submit ? sh->ver.max_submit : nr;
	return __shrt_chunked(sh, submit_chunk, jobs, nr, max);
}

int syshax_wait(struct syshax *sh, struct syshax_completion *cpls,
		unsigned int min, unsigned int max, int64_t timeout_ns)
{
	struct syshax_wait_args w = {
		.cpls = (uintptr_t)cpls,
		.max = max,
		.min = min,
		.timeout_ns = timeout_ns,
	};

	if (!sh || !cpls)
		return -EINVAL;
	if (sh->use_rings && !sh->engine) {
		int ret = shrt_ring_get(sh);

		return ret ? ret : shrt_ring_wait(sh, &w);
	}
	return sh->be->wait(sh, &w);
}
