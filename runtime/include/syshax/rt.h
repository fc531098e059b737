/* SPDX-License-Identifier: MIT */
/*
 * libsyshax-rt: the sysHAX runtime API.
 *
 * A struct syshax is one open backend: the kernel module (/dev/syshax) or the
 * userspace broker (syshaxd's unix socket). Both give the same semantics and
 * the same errors. Every call returns 0 (or a count / fd) on success and a
 * negative errno on failure; errno is not used, nothing is printed. A NULL
 * for any pointer argument is -EINVAL, before the backend hears of it
 * (syshax_close(NULL) and syshax_job_init(NULL, ...) do nothing,
 * syshax_backend(NULL) is SYSHAX_BACKEND_AUTO).
 *
 *	struct syshax *sh;
 *	struct syshax_buffer kv;
 *	syshax_open(&sh, NULL);			// $SYSHAX_DEVICE, /dev/syshax, syshaxd
 *	syshax_buf_alloc(sh, 64 << 20, 0, 0, &kv);	// 64 MiB on node 0
 *	syshax_buf_map(sh, &kv);			// kv.addr: pinned, shared
 *	int fd = syshax_buf_export(sh, &kv, SYSHAX_EXPORT_CLOEXEC);
 *
 * Thread safety: a struct syshax may be used by several threads at once for
 * buffer calls, syshax_submit() and syshax_wait(); completions go to
 * whichever thread reaps them. The engine calls (syshax_engine_*) are for one
 * thread per struct syshax. syshax_close() must not race with any call.
 */
#ifndef SYSHAX_RT_H
#define SYSHAX_RT_H

#include <stddef.h>
#include <stdint.h>

#include "syshax.h"
#include "syshax_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

struct syshax;

enum syshax_backend {
	SYSHAX_BACKEND_AUTO = 0,	/* $SYSHAX_DEVICE, /dev/syshax, daemon */
	SYSHAX_BACKEND_KERNEL = 1,	/* /dev/syshax (or opts->path) */
	SYSHAX_BACKEND_DAEMON = 2,	/* syshaxd's socket (or opts->path) */
};

struct syshax_open_opts {
	enum syshax_backend backend;
	/* Device node or socket path; NULL: the backend's default
	 * (/dev/syshax; /run/syshax/syshaxd.sock as root, else
	 * $XDG_RUNTIME_DIR/syshax/syshaxd.sock, then /run/syshax/syshaxd.sock). */
	const char *path;
	unsigned int flags;		/* zero */
};

/* Opens a backend. opts may be NULL (auto). $SYSHAX_DEVICE, when set, names
 * the path auto tries first: a character device or a socket. */
int syshax_open(struct syshax **out, const struct syshax_open_opts *opts);
void syshax_close(struct syshax *sh);

/* What the last syshax_open() of the calling thread tried when it failed:
 * "path (error); ..." for a tool's message (the library prints nothing);
 * "" after a success. Thread-local, valid until the next syshax_open(). */
const char *syshax_open_tried(void);

/* The backend in use (SYSHAX_BACKEND_KERNEL or _DAEMON). */
enum syshax_backend syshax_backend(const struct syshax *sh);

/* A file descriptor for poll/epoll: readable when syshax_wait() (client) or
 * syshax_engine_fetch() (engine) would not block. Owned by sh. */
int syshax_fd(const struct syshax *sh);

/* How long syshax_wait() and syshax_engine_fetch() spin on the shared rings
 * before they sleep, in µs (default $SYSHAX_WAIT_SPIN_US, else 0). Rings
 * are used when $SYSHAX_RINGS is 1 and the backend has them. */
int syshax_set_spin(struct syshax *sh, unsigned int us);

int syshax_version(struct syshax *sh, struct syshax_version_args *v);
int syshax_stats(struct syshax *sh, struct syshax_stats_args *st);
/* Per-context figures (CTX_STATS): fills up to max entries, the caller's
 * context first; returns how many, or -errno (-EOPNOTSUPP: the backend
 * has no CTX_STATS). *total (may be NULL): contexts open. On syshaxd one
 * call returns at most a few hundred entries. */
int syshax_ctx_stats(struct syshax *sh, struct syshax_ctx_stat *ctxs,
		     unsigned int max, unsigned int *total);

/* A static string for a negative errno from this library (or any errno). */
const char *syshax_strerror(int err);

/* ---- Buffers ---------------------------------------------------------- */

struct syshax_buffer {
	uint32_t handle;	/* handle in this struct syshax */
	uint32_t pad;
	uint64_t size;		/* bytes */
	uint64_t id;		/* global id */
	uint64_t mmap_offset;	/* backend-private mapping cookie */
	void *addr;		/* set by syshax_buf_map(), else NULL */
};

/* size bytes on NUMA node (or -1: the caller's), flags SYSHAX_BUF_ALLOW_*. */
int syshax_buf_alloc(struct syshax *sh, uint64_t size, int node,
		     unsigned int flags, struct syshax_buffer *buf);
/* Maps the whole buffer read-write, shared; sets buf->addr. Idempotent.
 * -EINVAL when buf->size is not the size the backend gave for the handle. */
int syshax_buf_map(struct syshax *sh, struct syshax_buffer *buf);
int syshax_buf_unmap(struct syshax *sh, struct syshax_buffer *buf);
/* Unmaps (if mapped) and drops the handle; the memory lives on while jobs,
 * mappings elsewhere or exported fds still reference it. */
int syshax_buf_free(struct syshax *sh, struct syshax_buffer *buf);
/* Pins existing memory (kernel backend only: -EOPNOTSUPP on the daemon). */
int syshax_buf_register(struct syshax *sh, void *addr, uint64_t len,
			unsigned int flags, struct syshax_buffer *buf);
/* Returns a new fd naming the buffer (a dma-buf on the kernel backend),
 * flags SYSHAX_EXPORT_*. The fd is the only way to share a buffer. */
int syshax_buf_export(struct syshax *sh, const struct syshax_buffer *buf,
		      unsigned int flags);
/* A handle in sh for an fd from syshax_buf_export() (any process). */
int syshax_buf_import(struct syshax *sh, int fd, struct syshax_buffer *buf);
int syshax_buf_info(struct syshax *sh, const struct syshax_buffer *buf,
		    struct syshax_buf_info_args *info);

/* ---- Jobs (client) ---------------------------------------------------- */

/* Zeroes job and sets its op and user_data. */
void syshax_job_init(struct syshax_job *job, uint32_t op, uint64_t user_data);
/* Appends a ref to buf[offset, offset + length); -E2BIG when full. */
int syshax_job_add_ref(struct syshax_job *job, const struct syshax_buffer *buf,
		       uint64_t offset, uint64_t length, uint32_t access);
/* SYSHAX_OP_COPY of len bytes from src@soff to dst@doff. */
int syshax_job_copy(struct syshax_job *job, const struct syshax_buffer *src,
		    uint64_t soff, const struct syshax_buffer *dst,
		    uint64_t doff, uint64_t len, uint64_t user_data);

/*
 * Copies an op's params struct (syshax_ops.h: struct syshax_ffn_params,
 * ...) into job->params, zeroing the rest; -E2BIG when it does not fit.
 * Then add the op's refs in the order syshax_ops.h gives:
 *
 *	struct syshax_ffn_params p = { .wset = id, .layer = 3, .m = 1,
 *		.x_type = SYSHAX_DT_BF16, .y_type = SYSHAX_DT_BF16,
 *		.flags = SYSHAX_FFN_NORM | SYSHAX_FFN_RESIDUAL,
 *		.eps = syshax_f32_bits(1e-5f) };
 *	syshax_job_init(&job, SYSHAX_OP_FFN, tag);
 *	syshax_job_params(&job, &p, sizeof(p));
 *	syshax_job_add_ref(&job, &h, 0, 4096 * 2, SYSHAX_ACCESS_READ);
 *	syshax_job_add_ref(&job, &h, 0, 4096 * 2, SYSHAX_ACCESS_WRITE);
 */
int syshax_job_params(struct syshax_job *job, const void *params, size_t size);

/* The binary32 bit pattern of f, for the params' float fields. */
static inline uint32_t syshax_f32_bits(float f)
{
	uint32_t b;

	__builtin_memcpy(&b, &f, sizeof(b));
	return b;
}

/* Queues jobs in order; returns how many were queued (> 0), or the -errno
 * of the first job when none was (see SYSHAX_IOC_SUBMIT). */
int syshax_submit(struct syshax *sh, const struct syshax_job *jobs,
		  unsigned int nr);
/* Waits for at least min completions (timeout_ns < 0: forever), copies up
 * to max; returns the number copied, or -ETIMEDOUT / -EINTR when none.
 * -EFAULT when cpls is not writable: the completions stay queued. */
int syshax_wait(struct syshax *sh, struct syshax_completion *cpls,
		unsigned int min, unsigned int max, int64_t timeout_ns);

/* ---- Engine side (syshaxd) -------------------------------------------- */

/* Makes sh an engine (privileged: CAP_SYS_ADMIN or the engine group). */
int syshax_engine_attach(struct syshax *sh, int node);
/* Fetches up to max jobs, waiting up to timeout_ns for the first. */
int syshax_engine_fetch(struct syshax *sh, struct syshax_engine_job *jobs,
			unsigned int max, int64_t timeout_ns);
/* Maps a buffer named by a job the engine holds. The mapping keeps the
 * buffer's memory alive: unmap it when the jobs using it are complete. */
int syshax_engine_map(struct syshax *sh, uint64_t id, void **addr,
		      uint64_t *size);
int syshax_engine_unmap(struct syshax *sh, void *addr, uint64_t size);
int syshax_engine_complete(struct syshax *sh,
			   const struct syshax_engine_cpl *cpls,
			   unsigned int nr);

#ifdef __cplusplus
}
#endif

#endif /* SYSHAX_RT_H */
