/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * sysHAX job ops: the op codes a struct syshax_job carries and the inline
 * parameters (syshax_job.params) of each. This is a contract between
 * clients and engines; the broker (module or syshaxd) only checks that the
 * op is known and the refs are valid, never the params.
 */
#ifndef _UAPI_SYSHAX_OPS_H
#define _UAPI_SYSHAX_OPS_H

#include <linux/types.h>

enum syshax_op {
	SYSHAX_OP_NOP		= 0,	/* no refs; completes with result 0 */
	SYSHAX_OP_COPY		= 1,	/* test op: refs[0] (R) -> refs[1] (W) */
	/* Compute ops, added by the daemon: */
	SYSHAX_OP_WEIGHTS_LOAD	= 16,
	SYSHAX_OP_GEMM		= 17,
	SYSHAX_OP_FFN		= 18,
	SYSHAX_OP_MOE		= 19,
	SYSHAX_OP_ATTN_DECODE	= 20,
	SYSHAX_OP_MAX		= 21,	/* ops >= this are rejected (-EINVAL) */
};

/*
 * SYSHAX_OP_COPY: copies min(refs[0].length, refs[1].length) bytes from
 * refs[0] to refs[1]; result = bytes copied. No params (all zero).
 */

#endif /* _UAPI_SYSHAX_OPS_H */
