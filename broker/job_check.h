/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Job validation shared by the module's broker and syshaxd's userspace
 * broker: one rule set, compiled into both, so both backends give the same
 * errno for the same bad job. Pure C on the UAPI types; no allocation, no
 * locking. The caller supplies the handle lookup.
 */
#ifndef SYSHAX_JOB_CHECK_H
#define SYSHAX_JOB_CHECK_H

#ifdef __KERNEL__
#include <linux/errno.h>
#include <linux/types.h>
#else
#include <errno.h>
#include <stddef.h>
#endif
#include "syshax.h"
#include "syshax_ops.h"

/* What an op needs of its refs: how many, and the access each must ask. */
struct syshax_op_rule {
	__u8 min_refs;
	__u8 max_refs;
	__u8 access[SYSHAX_JOB_MAX_REFS];	/* required bits; 0: any */
};

static inline const struct syshax_op_rule *syshax_op_rule(__u32 op)
{
	static const struct syshax_op_rule nop = { 0, 0, { 0 } };
	static const struct syshax_op_rule copy = {
		2, 2, { SYSHAX_ACCESS_READ, SYSHAX_ACCESS_WRITE }
	};
	/* Compute ops: the engine checks their refs against their params. */
	static const struct syshax_op_rule compute = {
		0, SYSHAX_JOB_MAX_REFS, { 0 }
	};

	switch (op) {
	case SYSHAX_OP_NOP:
		return &nop;
	case SYSHAX_OP_COPY:
		return &copy;
	case SYSHAX_OP_WEIGHTS_LOAD:
	case SYSHAX_OP_GEMM:
	case SYSHAX_OP_FFN:
	case SYSHAX_OP_MOE:
	case SYSHAX_OP_ATTN_DECODE:
	case SYSHAX_OP_WEIGHTS_FREE:
	case SYSHAX_OP_ENGINE_STATS:
	case SYSHAX_OP_MODEL_LOAD:
	case SYSHAX_OP_DECODE:
	case SYSHAX_OP_PREFILL:
	case SYSHAX_OP_REPORT_XPU:
		return &compute;
	default:
		return NULL;
	}
}

/*
 * Looks up a client's handle: returns 0 and the buffer's size and the access
 * the caller holds on it, or -EBADF.
 */
typedef int (*syshax_ref_lookup_fn)(void *priv, __u64 handle, __u64 *size,
				    __u32 *access);

/*
 * Returns 0 when the job may be queued, else:
 *  -EINVAL  unknown op or flag, non-zero pad/reserved (also in unused refs),
 *           too many or too few refs, zero or unknown access bits, length 0;
 *  -EBADF   a ref names no buffer of the caller;
 *  -ERANGE  offset + length overflows or passes the buffer's end;
 *  -EACCES  a ref asks for access the caller lacks, or the op needs access
 *           the ref does not ask for (a write through a read-only ref).
 */
static inline int syshax_job_check(const struct syshax_job *job,
				   syshax_ref_lookup_fn lookup, void *priv)
{
	const struct syshax_op_rule *rule = syshax_op_rule(job->op);
	__u32 i;

	if (!rule || (job->flags & ~SYSHAX_JOB_FLAGS) || job->pad ||
	    job->reserved)
		return -EINVAL;
	if (job->nr_refs < rule->min_refs || job->nr_refs > rule->max_refs)
		return -EINVAL;
	for (i = job->nr_refs; i < SYSHAX_JOB_MAX_REFS; i++) {
		const struct syshax_buf_ref *r = &job->refs[i];

		if (r->buf || r->access || r->pad || r->offset || r->length)
			return -EINVAL;
	}
	for (i = 0; i < job->nr_refs; i++) {
		const struct syshax_buf_ref *r = &job->refs[i];
		__u64 size, end;
		__u32 allowed;
		int ret;

		if (!r->access || (r->access & ~SYSHAX_ACCESS_RW) || r->pad ||
		    !r->length)
			return -EINVAL;
		ret = lookup(priv, r->buf, &size, &allowed);
		if (ret)
			return ret;
		if ((r->access & ~allowed) ||
		    (rule->access[i] & ~r->access))
			return -EACCES;
		end = r->offset + r->length;
		if (end < r->offset || end > size)
			return -ERANGE;
	}
	return 0;
}

#endif /* SYSHAX_JOB_CHECK_H */
