/* SPDX-License-Identifier: MIT */
/* libsyshax-rt internals: the open handle and the backend interface. */
#ifndef SHRT_INT_H
#define SHRT_INT_H

#include <pthread.h>

#include "hmap.h"
#include "syshax/rt.h"

/* What differs between /dev/syshax and syshaxd: one function per UAPI call,
 * with the UAPI's arguments and its -errno results. */
struct shrt_backend {
	int (*version)(struct syshax *sh, struct syshax_version_args *v);
	int (*stats)(struct syshax *sh, struct syshax_stats_args *st);
	int (*buf_alloc)(struct syshax *sh, struct syshax_buf_alloc_args *a);
	int (*buf_free)(struct syshax *sh, uint32_t handle);
	int (*buf_info)(struct syshax *sh, struct syshax_buf_info_args *i);
	int (*buf_register)(struct syshax *sh,
			    struct syshax_buf_register_args *r);
	int (*buf_export)(struct syshax *sh, struct syshax_buf_export_args *e);
	int (*buf_import)(struct syshax *sh, struct syshax_buf_import_args *i);
	/* Maps [0, size) of a buffer of this handle. */
	int (*buf_mmap)(struct syshax *sh, const struct syshax_buffer *buf,
			void **addr);
	int (*submit)(struct syshax *sh, const struct syshax_job *jobs,
		      unsigned int nr);
	int (*wait)(struct syshax *sh, struct syshax_wait_args *w);
	int (*engine_attach)(struct syshax *sh,
			     struct syshax_engine_attach_args *a);
	int (*engine_fetch)(struct syshax *sh,
			    struct syshax_engine_fetch_args *f);
	int (*engine_map)(struct syshax *sh, uint64_t id, void **addr,
			  uint64_t *size);
	int (*engine_complete)(struct syshax *sh,
			       const struct syshax_engine_cpl *cpls,
			       unsigned int nr);
	void (*close)(struct syshax *sh);
};

/* What the daemon backend keeps of each handle: the memfd (or -1) and the
 * size the broker gave for it, the only size syshax_buf_map() maps. */
struct shrt_buf_fd {
	int fd;
	uint64_t size;
};

struct syshax {
	const struct shrt_backend *be;
	enum syshax_backend kind;
	int fd;			/* /dev/syshax, or the request socket */
	int evfd;		/* what syshax_fd() returns */
	struct syshax_version_args ver;

	/* Daemon backend only. */
	pthread_mutex_t req_lock;	/* one request/reply at a time */
	pthread_mutex_t fd_lock;	/* buf_fds */
	struct shrt_hmap buf_fds;	/* handle -> struct shrt_buf_fd */
	uint32_t reaped;		/* atomic: for shrt_req.reaped */
};

extern const struct shrt_backend __shrt_kernel_backend;
extern const struct shrt_backend __shrt_daemon_backend;

/* One call of __shrt_chunked(): items [first, first + n) of arg; the
 * count taken or -errno. */
typedef int (*shrt_chunk_fn)(struct syshax *sh, const void *arg,
			     unsigned int first, unsigned int n);
int __shrt_chunked(struct syshax *sh, shrt_chunk_fn fn, const void *arg,
		   unsigned int nr, unsigned int max);

int __shrt_kernel_open(struct syshax *sh, const char *path);
int __shrt_daemon_open(struct syshax *sh, const char *path);

#endif /* SHRT_INT_H */
