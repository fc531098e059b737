/* SPDX-License-Identifier: MIT */
/*
 * The xPU side of a framework, written once (docs/dispatch.md, "The xPU
 * side"): what syshax-run and syshax-serve call when syshaxd's dispatch
 * rule defers a DECODE (SYSHAX_CPL_DEFERRED) or for a PREFILL, whatever
 * runs it. Two implementations:
 *
 *  - the stand-in (standin.h): syshaxd's own CPU engine in this process;
 *  - a worker in another process over a Unix socket, such as the PyTorch
 *    one of the Python package (python3 -m syshax.xpu): the wire protocol
 *    below, the buffers passed once each as fds (syshax_buf_export, then
 *    SCM_RIGHTS), which the worker imports into its own context of the
 *    same syshaxd (syshax_buf_import) and maps: the same pages, no copy.
 *
 *	struct xpu *x;
 *	xpu_open(&x, "syshax-run", "/run/xpu.sock", model_dir, model_file);
 *	... a DECODE came back deferred:
 *	ret = xpu_step(x, sh, &job, bufs);	// -EPIPE: the worker is gone
 *	xpu_report(x, sh, ran);
 *	xpu_close(x);
 */
#ifndef XPU_H
#define XPU_H

#include <stdint.h>

#include "syshax/rt.h"
#include "syshax_ops.h"

struct xpu;

/* worker NULL: the stand-in, on file (in dir); else the socket of a
 * worker, which loads file itself (an absolute path it can read) and must
 * use the same syshaxd as sh. prog for messages. 0 or -errno, said. */
int xpu_open(struct xpu **out, const char *prog, const char *worker,
	     const char *dir, const char *file);
void xpu_close(struct xpu *x);
/* After -EPIPE: says on stderr that the worker is gone and its steps run
 * on the CPU from now on, closes *x and sets it NULL. */
void xpu_drop(struct xpu **x);
/* "stand-in" or "worker": for messages. */
const char *xpu_kind(const struct xpu *x);
/* Runs a DECODE or PREFILL job (the client's, as submitted to syshaxd;
 * its params are a struct syshax_step_params naming syshaxd's model) on
 * bufs[i], the client's mappings of the buffers job->refs[i] names, sh's.
 * 0, the step's -errno, or -EPIPE when a worker is gone: the caller runs
 * the step on the CPU instead (without SYSHAX_JOB_MAY_DEFER; the rows it
 * rewrites are the ones a half-done step wrote) and calls xpu_drop(). */
int xpu_step(struct xpu *x, struct syshax *sh, const struct syshax_job *job,
	     const struct syshax_buffer *const *bufs);
/* REPORT_XPU to syshaxd (a worker submits it from its own context): ran
 * is the sequences the xPU ran in the step just done, 0 when it was not
 * its step; the rate is the xPU's own decode tokens/s. 0 or -errno
 * (-EPIPE: the worker is gone, as for xpu_step). */
int xpu_report(struct xpu *x, struct syshax *sh, unsigned int ran);

/* ---- the wire (SOCK_SEQPACKET: one message a datagram; little-endian;
 * every request gets one struct xpu_reply) ---- */
#define XPU_MAGIC	0x58584853	/* "SHXX" */
#define XPU_VERSION	1

enum xpu_msg_type {
	XPU_MSG_HELLO	= 1,	/* struct xpu_hello: load the model */
	XPU_MSG_BUF	= 2,	/* struct xpu_buf + one fd (SCM_RIGHTS) */
	XPU_MSG_STEP	= 3,	/* struct xpu_step: run it */
	XPU_MSG_REPORT	= 4,	/* struct xpu_report: REPORT_XPU now */
};

struct xpu_hdr {
	uint32_t magic;		/* XPU_MAGIC */
	uint32_t type;		/* XPU_MSG_* */
};

/* The model the steps name; the worker loads it (result: 0). */
struct xpu_hello {
	struct xpu_hdr h;
	uint32_t version;	/* XPU_VERSION */
	uint32_t pad;		/* zero */
	char model[4096];	/* absolute path, NUL-terminated */
};

/* A buffer later steps name by id: the fd from syshax_buf_export rides
 * along; the worker imports and maps it once (result: 0). */
struct xpu_buf {
	struct xpu_hdr h;
	uint64_t id;		/* the buffer's global id (syshax_buffer.id) */
	uint64_t size;		/* bytes */
};

/* A DECODE or PREFILL: refs as uapi/syshax_ops.h lays them out for the
 * op, each naming a buffer sent before by its id; params as the engine
 * takes them (model: ignored, the HELLO's model). The worker writes the
 * new K/V rows and the output rows in place (result: rows written). */
struct xpu_step {
	struct xpu_hdr h;
	uint32_t op;		/* SYSHAX_OP_DECODE or SYSHAX_OP_PREFILL */
	uint32_t nr_refs;	/* 6 (DECODE) or 5 (PREFILL) */
	struct syshax_buf_ref refs[SYSHAX_JOB_MAX_REFS];	/* buf: id */
	struct syshax_step_params p;
};

/* REPORT_XPU with running = ran and the worker's decode tokens/s over its
 * last steps, submitted by the worker to syshaxd (result: 0). */
struct xpu_report {
	struct xpu_hdr h;
	uint32_t ran;
	uint32_t pad;		/* zero */
};

struct xpu_reply {
	uint32_t magic;		/* XPU_MAGIC */
	int32_t status;		/* 0 or -errno */
	uint64_t result;
};

#endif /* XPU_H */
