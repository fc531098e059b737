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
	/* CTX_STATS; args.ctxs points at args.max entries. */
	int (*ctx_stats)(struct syshax *sh, struct syshax_ctx_stats_args *a);
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

	/* Shared rings (ring.c); ring_setup NULL: none on this backend. */
	/* RING_SETUP, then the area mapped read-write at *area. */
	int (*ring_setup)(struct syshax *sh, struct syshax_ring_setup_args *a,
			  void **area);
	/* Wakes the broker to take the in ring. */
	int (*ring_kick)(struct syshax *sh);
	/* Clears the fd's wake-ups before the out ring is looked at (NULL:
	 * the fd's readiness is the ring's own). */
	void (*ring_drain)(struct syshax *sh);
	/* -EPIPE once the broker is gone and can never take the in ring,
	 * else 0 (NULL: the broker lives as long as the context). */
	int (*ring_peer)(struct syshax *sh);
	/* A handle's size and allowed access, for the checks before a job
	 * enters the ring: 0 or -EBADF. */
	int (*ref_info)(struct syshax *sh, __u64 handle, __u64 *size,
			__u32 *access);
};

/* An engine's mappings kept across jobs (maps.c), by id and by address. */
struct shrt_maps {
	pthread_mutex_t lock;
	struct shrt_hmap by_id, by_addr;	/* -> struct shrt_map */
};

/* The caller's view of its rings (ring.c). */
struct shrt_ring {
	struct syshax_ring_hdr *hdr;	/* the mapped area */
	size_t size;
	char *in, *out;
	uint32_t in_entries, out_entries, in_size, out_size;
	uint32_t max_jobs;		/* a client's outstanding jobs */
	pthread_mutex_t in_lock;	/* producers: in_tail, submitted */
	pthread_mutex_t out_lock;	/* consumers: out_head */
	uint32_t in_tail, out_head;	/* ours */
	uint32_t submitted;		/* jobs put in the in ring */
	uint32_t reaped;		/* atomic: completions taken */
	pthread_mutex_t tok_lock;	/* tokens */
	struct shrt_hmap tokens;	/* an engine's held jobs: token + 1 */
	int notes;			/* an engine's, SYSHAX_RING_NOTES */
	struct shrt_maps maps;		/* kept mappings, with notes */
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

	/* Kernel backend only: handle -> kernel.c's struct k_ref (fd_lock),
	 * for ref_info. */
	struct shrt_hmap k_refs;

	/* Daemon backend only. */
	pthread_mutex_t req_lock;	/* one request/reply at a time */
	pthread_mutex_t fd_lock;	/* buf_fds */
	struct shrt_hmap buf_fds;	/* handle -> struct shrt_buf_fd */
	uint32_t reaped;		/* atomic: for shrt_req.reaped */

	/* Shared rings (ring.c). */
	int use_rings;			/* $SYSHAX_RINGS=1 and the backend has them */
	int engine;			/* attached: rings in the engine role */
	unsigned int spin_us;		/* $SYSHAX_WAIT_SPIN_US, syshax_set_spin() */
	int ring_ready;			/* ring_lock initialised */
	int fd_polled;			/* atomic: syshax_fd() was asked for */
	pthread_mutex_t ring_lock;	/* setting up ring */
	struct shrt_ring *ring;		/* atomic: set once */
};

/* ring.c */
void shrt_ring_defaults(struct syshax *sh);
int shrt_ring_get(struct syshax *sh);
void shrt_ring_close(struct syshax *sh);
/* syshax_fd() was asked for: the fd must follow the out ring from now. */
void shrt_ring_fd_polled(struct syshax *sh);
int shrt_ring_submit(struct syshax *sh, const struct syshax_job *jobs,
		     unsigned int nr);
int shrt_ring_wait(struct syshax *sh, struct syshax_wait_args *w);
int shrt_ring_fetch(struct syshax *sh, struct syshax_engine_fetch_args *f);
int shrt_ring_complete(struct syshax *sh, const struct syshax_engine_cpl *cpls,
		       unsigned int nr);

/* maps.c: syshax_engine_map()/unmap() through the kept mappings; notes
 * taken out of fetched entries (returns the jobs left, in order). */
int shrt_maps_get(struct syshax *sh, uint64_t id, void **addr,
		  uint64_t *size);
int shrt_maps_put(struct syshax *sh, void *addr, uint64_t size);
unsigned int shrt_maps_notes(struct shrt_ring *r, struct syshax_engine_job *jobs,
			     unsigned int n);
void shrt_maps_init(struct shrt_maps *ms);
void shrt_maps_free(struct shrt_maps *ms);

/* How many bytes from p on the caller's memory takes, up to len (daemon.c). */
size_t shrt_writable_len(void *p, size_t len);

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
