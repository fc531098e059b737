/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * sysHAX UAPI: the ioctl interface of /dev/syshax.
 *
 * This header is the only ABI source. The userspace backend (syshaxd) speaks
 * the same structures over its socket, so both backends share every rule.
 *
 * Conventions:
 *  - fixed-width types only, explicit padding, user pointers as __u64;
 *  - every pad/reserved field must be zero and every unknown flag bit clear,
 *    else the call fails with -EINVAL;
 *  - "in" fields are read by the callee, "out" fields written by it.
 *
 * Typical use:
 *	int fd = open("/dev/syshax", O_RDWR | O_CLOEXEC);
 *	struct syshax_buf_alloc_args a = { .size = 4 << 20, .node = 0 };
 *	ioctl(fd, SYSHAX_IOC_BUF_ALLOC, &a);
 *	void *p = mmap(NULL, a.size, PROT_READ | PROT_WRITE, MAP_SHARED,
 *		       fd, a.mmap_offset);
 */
#ifndef _UAPI_SYSHAX_H
#define _UAPI_SYSHAX_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define SYSHAX_UAPI_VERSION	2

/* Buffers are built from chunks of this size (one PMD-sized page). */
#define SYSHAX_CHUNK_SHIFT	21
#define SYSHAX_CHUNK_SIZE	(1ULL << SYSHAX_CHUNK_SHIFT)

/* NUMA nodes reported per buffer and in STATS; higher nodes are summed into
 * the last slot. */
#define SYSHAX_MAX_NODES	16

/* Most buffer references one job may carry. */
#define SYSHAX_JOB_MAX_REFS	8
/* Bytes of op-specific inline parameters in a job (see syshax_ops.h). */
#define SYSHAX_JOB_PARAMS_SIZE	224

/* ---- VERSION --------------------------------------------------------- */

/* Feature bits in syshax_version_args.features. */
#define SYSHAX_FEAT_BUF		(1U << 0)	/* BUF_* ioctls and mmap */
#define SYSHAX_FEAT_DMABUF	(1U << 1)	/* BUF_EXPORT / BUF_IMPORT */
#define SYSHAX_FEAT_REGISTER	(1U << 2)	/* BUF_REGISTER */
#define SYSHAX_FEAT_JOBS	(1U << 3)	/* SUBMIT / WAIT / ENGINE_* */
#define SYSHAX_FEAT_RINGS	(1U << 4)	/* RING_SETUP (UAPI 2) */
#define SYSHAX_FEAT_CTX_STATS	(1U << 5)	/* CTX_STATS (UAPI 2) */
#define SYSHAX_FEAT_MAP_NOTES	(1U << 6)	/* engine rings carry notes
						 * (UAPI 2, additive) */

struct syshax_version_args {
	__u32 uapi_version;	/* out: SYSHAX_UAPI_VERSION */
	__u32 features;		/* out: SYSHAX_FEAT_* */
	__u64 max_buf_size;	/* out: largest size BUF_ALLOC accepts */
	__u64 max_pinned;	/* out: module-wide cap on pinned bytes */
	__u32 chunk_size;	/* out: SYSHAX_CHUNK_SIZE */
	__u32 nr_nodes;		/* out: NUMA nodes possible on this host */
	__u32 max_refs;		/* out: SYSHAX_JOB_MAX_REFS */
	__u32 max_submit;	/* out: most jobs one SUBMIT takes */
	__u64 reserved[4];	/* out: zero */
};

/* ---- Buffers --------------------------------------------------------- */

/* BUF_ALLOC flags. */
/* Allow chunks smaller than 2 MiB when no 2 MiB page is free on the node. */
#define SYSHAX_BUF_ALLOW_SMALL	(1U << 0)
/* Allow pages from other nodes when the requested node is exhausted. */
#define SYSHAX_BUF_ALLOW_REMOTE	(1U << 1)
#define SYSHAX_BUF_ALLOC_FLAGS	(SYSHAX_BUF_ALLOW_SMALL | SYSHAX_BUF_ALLOW_REMOTE)

/* Buffer kinds, reported in syshax_buf_info_args.kind. */
#define SYSHAX_BUF_KIND_ALLOC		1	/* BUF_ALLOC */
#define SYSHAX_BUF_KIND_REGISTERED	2	/* BUF_REGISTER */

struct syshax_buf_alloc_args {
	__u64 size;		/* in: bytes, rounded up to a page */
	__s32 node;		/* in: NUMA node, or -1 for the caller's node */
	__u32 flags;		/* in: SYSHAX_BUF_ALLOW_* */
	__u32 handle;		/* out: handle local to this open file */
	__u32 pad;		/* in: zero */
	__u64 mmap_offset;	/* out: offset to pass to mmap() */
	__u64 id;		/* out: global buffer id (for stats, engines) */
};

struct syshax_buf_free_args {
	__u32 handle;		/* in */
	__u32 pad;		/* in: zero */
};

struct syshax_buf_info_args {
	__u32 handle;		/* in */
	__u32 kind;		/* out: SYSHAX_BUF_KIND_* */
	__u64 size;		/* out: bytes */
	__u64 mmap_offset;	/* out */
	__u64 id;		/* out: global id */
	__u32 chunk_size;	/* out: largest chunk in bytes */
	__u32 nr_chunks;	/* out: physically contiguous pieces */
	__s32 node;		/* out: node asked for (-1: local at alloc) */
	__u32 flags;		/* out: flags given at alloc */
	__u64 node_bytes[SYSHAX_MAX_NODES];	/* out: bytes on each node */
};

struct syshax_buf_register_args {
	__u64 addr;		/* in: page-aligned user address */
	__u64 size;		/* in: page-aligned length */
	__u32 flags;		/* in: zero */
	__u32 handle;		/* out */
	__u64 mmap_offset;	/* out */
	__u64 id;		/* out */
};

/* BUF_EXPORT flags. */
#define SYSHAX_EXPORT_CLOEXEC	(1U << 0)	/* dma-buf fd gets O_CLOEXEC */
#define SYSHAX_EXPORT_FLAGS	SYSHAX_EXPORT_CLOEXEC

struct syshax_buf_export_args {
	__u32 handle;		/* in */
	__u32 flags;		/* in: SYSHAX_EXPORT_* */
	__s32 fd;		/* out: dma-buf file descriptor (O_RDWR) */
	__u32 pad;		/* in: zero */
};

struct syshax_buf_import_args {
	__s32 fd;		/* in: a dma-buf exported by syshax */
	__u32 flags;		/* in: zero */
	__u32 handle;		/* out: new handle in this open file */
	__u32 pad;		/* in: zero */
	__u64 size;		/* out */
	__u64 mmap_offset;	/* out */
	__u64 id;		/* out: same global id as the exporter's */
};

/* ---- Jobs (client side) ---------------------------------------------- */

/* Access a job asks for on a buffer reference. */
#define SYSHAX_ACCESS_READ	(1U << 0)
#define SYSHAX_ACCESS_WRITE	(1U << 1)
#define SYSHAX_ACCESS_RW	(SYSHAX_ACCESS_READ | SYSHAX_ACCESS_WRITE)

struct syshax_buf_ref {
	__u64 buf;		/* client: handle; engine: global buffer id */
	__u32 access;		/* SYSHAX_ACCESS_*, not zero */
	__u32 pad;		/* zero */
	__u64 offset;		/* bytes from the buffer's start */
	__u64 length;		/* bytes; offset + length <= buffer size */
};

/* Job flags. */
/* The engine may answer with SYSHAX_CPL_DEFERRED instead of running it. */
#define SYSHAX_JOB_MAY_DEFER	(1U << 0)
#define SYSHAX_JOB_FLAGS	SYSHAX_JOB_MAY_DEFER

/* One job: 512 bytes, so rings of jobs stay power-of-two sized. */
struct syshax_job {
	__u32 op;		/* SYSHAX_OP_* (syshax_ops.h) */
	__u32 flags;		/* SYSHAX_JOB_* */
	__u64 user_data;	/* returned unchanged in the completion */
	__u32 nr_refs;		/* used entries of refs[] */
	__u32 pad;		/* zero */
	__u64 reserved;		/* zero */
	struct syshax_buf_ref refs[SYSHAX_JOB_MAX_REFS];
	__u8 params[SYSHAX_JOB_PARAMS_SIZE];	/* op-specific, see ops */
};

/* Completion flags. */
#define SYSHAX_CPL_DEFERRED	(1U << 0)	/* not run: run it on the xPU */

/* One completion: 32 bytes. */
struct syshax_completion {
	__u64 user_data;	/* the job's user_data */
	__s32 status;		/* 0 or -errno */
	__u32 flags;		/* SYSHAX_CPL_* */
	__u64 result;		/* op-specific 64-bit result */
	__u64 exec_ns;		/* time the engine spent running the job */
};

/*
 * SUBMIT: queue up to nr jobs. Jobs are validated and queued in order; the
 * call stops at the first job that cannot be queued. Returns the number
 * queued (> 0), or, when the first job fails, -errno for it: -EINVAL (bad
 * field), -EBADF (unknown handle), -ERANGE (ref outside the buffer), -EACCES
 * (access not allowed), -EAGAIN (queue full).
 */
struct syshax_submit_args {
	__u64 jobs;		/* in: user pointer to struct syshax_job[nr] */
	__u32 nr;		/* in: 1..max_submit */
	__u32 flags;		/* in: zero */
};

/*
 * WAIT: wait until at least min completions are ready (or the timeout ends,
 * or a signal comes), then copy up to max of them. Returns the number
 * copied; -ETIMEDOUT or -EINTR when none could be copied in time.
 */
struct syshax_wait_args {
	__u64 cpls;		/* in: user pointer to struct syshax_completion[max] */
	__u32 max;		/* in: >= 1 */
	__u32 min;		/* in: <= max; 0 returns at once */
	__s64 timeout_ns;	/* in: < 0 waits forever */
	__u32 flags;		/* in: zero */
	__u32 pad;		/* in: zero */
};

/* ---- Jobs (engine side) ---------------------------------------------- */

struct syshax_engine_attach_args {
	__u32 flags;		/* in: zero */
	__s32 node;		/* in: NUMA node the engine runs on, or -1 */
	__u32 engine_id;	/* out */
	__u32 pad;		/* in: zero */
};

/* A fetched job: refs[].buf hold global buffer ids. 528 bytes. */
struct syshax_engine_job {
	__u64 token;		/* names the job in ENGINE_COMPLETE */
	__u32 ctx_id;		/* submitting context (for stats and policy) */
	__u32 pad;
	struct syshax_job job;
};

/* ENGINE_FETCH: returns the number fetched; -ETIMEDOUT, -EINTR as WAIT. */
struct syshax_engine_fetch_args {
	__u64 jobs;		/* in: user pointer to syshax_engine_job[max] */
	__u32 max;		/* in: >= 1 */
	__u32 flags;		/* in: zero */
	__s64 timeout_ns;	/* in: < 0 waits forever, 0 polls */
};

/* ENGINE_MAP: mmap offset (on this fd) of a buffer named by a held job. */
struct syshax_engine_map_args {
	__u64 id;		/* in: global buffer id */
	__u64 mmap_offset;	/* out */
	__u64 size;		/* out */
};

struct syshax_engine_cpl {
	__u64 token;		/* in: from the fetched job */
	__s32 status;		/* in: 0 or -errno */
	__u32 flags;		/* in: SYSHAX_CPL_* */
	__u64 result;		/* in */
	__u64 exec_ns;		/* in */
};

/* ENGINE_COMPLETE: returns the number completed; stops at a bad token. */
struct syshax_engine_complete_args {
	__u64 cpls;		/* in: user pointer to syshax_engine_cpl[nr] */
	__u32 nr;		/* in */
	__u32 flags;		/* in: zero */
};

/* ---- Rings ----------------------------------------------------------- */

/*
 * Shared rings: a context's jobs and completions through memory both sides
 * map, a system call only to wake a side that sleeps (io_uring's model).
 * RING_SETUP gives a context one ring area of two single-producer,
 * single-consumer rings:
 *
 *	role	   "in" ring (caller -> broker)	  "out" ring (broker -> caller)
 *	client	   struct syshax_job		  struct syshax_completion
 *	engine	   struct syshax_engine_cpl	  struct syshax_engine_job
 *
 * (an engine is a context that called ENGINE_ATTACH before RING_SETUP).
 * The area starts with struct syshax_ring_hdr; the in entries follow at
 * in_off, the out entries at out_off. Entry i of a ring of n entries is
 * at index i & (n - 1); indices are free-running __u32 counters.
 *
 * Who writes what: the caller writes in_tail and out_head (and its flag
 * word), the broker in_head, out_tail and its flags. Each side reads the
 * other's index with acquire and publishes its own with release, after
 * writing (producer) or reading (consumer) the entries. The broker never
 * trusts the caller's words: it keeps its own copy of what it wrote, and an
 * in_tail more than in_entries ahead of in_head, or an out_head that passes
 * out_tail or goes backwards, fails the context's rings with -EPROTO. It
 * copies a job out of the ring once before checking it.
 *
 * Waking: a broker that may sleep sets SYSHAX_RING_NEED_WAKEUP in
 * broker_flags before it does (then looks at in_tail once more). A caller
 * that published in_tail then reads broker_flags (after a full fence) and,
 * when the bit is set, kicks: SUBMIT with SYSHAX_SUBMIT_RING on the module,
 * one byte on the event socket on syshaxd. In the other direction a caller
 * that will sleep sets SYSHAX_RING_WAITING in user_flags (fence, look at
 * out_tail once more) and polls its fd; the broker makes the fd readable
 * after publishing out_tail when the bit is set.
 */
/*
 * Notes (SYSHAX_FEAT_MAP_NOTES): the out ring of an engine that set up its
 * rings with SYSHAX_RING_NOTES also carries entries with token
 * SYSHAX_NOTE_TOKEN (never a job's); job.op says what:
 * SYSHAX_NOTE_BUF_GONE: the buffer job.refs[0].buf, which this engine
 * mapped with ENGINE_MAP, is freed (no handle, job or export holds it) and
 * no later job names its id, so an engine that keeps its mappings across
 * jobs unmaps it now. libsyshax-rt consumes notes: its fetch returns jobs
 * only, and syshax_engine_unmap() keeps a mapping until its note.
 */
#define SYSHAX_NOTE_TOKEN	0
#define SYSHAX_NOTE_BUF_GONE	1

#define SYSHAX_RING_NEED_WAKEUP	(1U << 0)	/* broker_flags */
#define SYSHAX_RING_DEAD	(1U << 1)	/* broker_flags: -EPROTO, gone */
#define SYSHAX_RING_FULL	(1U << 2)	/* broker_flags: the global or
						 * the user's job limit reached:
						 * SUBMIT's -EAGAIN */
#define SYSHAX_RING_WAITING	(1U << 0)	/* user_flags */

/* One word per 64-byte line, so the two sides never share a line. */
struct syshax_ring_word {
	__u32 v;
	__u32 pad[15];
};

struct syshax_ring_hdr {
	struct syshax_ring_word in_head;	/* broker */
	struct syshax_ring_word in_tail;	/* caller */
	struct syshax_ring_word out_head;	/* caller */
	struct syshax_ring_word out_tail;	/* broker */
	struct syshax_ring_word broker_flags;	/* SYSHAX_RING_NEED_WAKEUP */
	struct syshax_ring_word user_flags;	/* SYSHAX_RING_WAITING */
	/* Set by RING_SETUP, read-only after. */
	__u32 in_entries, out_entries;
	__u32 in_off, out_off;		/* bytes from the area's start */
	__u32 in_entry_size, out_entry_size;
	__u32 reserved[10];
};

/*
 * RING_SETUP: in_entries and out_entries are powers of two; 0 picks the
 * default. A client's in ring holds 1..max_submit jobs (default
 * max_submit); its out ring at least max_jobs_ctx completions (default:
 * the power of two at or above it), so a completion always has room. An
 * engine's rings hold 1..4096 entries (default 256). Returns in size and
 * mmap_offset where to map the area (read-write, MAP_SHARED) on this fd;
 * on syshaxd the area is a memfd passed with the reply (mmap_offset 0).
 * max_jobs: how many jobs a client may have submitted and not reaped
 * (jobs in the in ring count); more stay in the ring until room frees.
 * -EINVAL (bad size or flags), -EBUSY (rings already set up), -ENOMEM.
 *
 * Once set up, the ring is the context's only way for jobs and completions
 * (client) or fetched jobs and completions (engine): SUBMIT takes only
 * SYSHAX_SUBMIT_RING kicks, WAIT and ENGINE_FETCH/COMPLETE give -EBUSY.
 */
struct syshax_ring_setup_args {
	__u32 in_entries;	/* in/out */
	__u32 out_entries;	/* in/out */
	__u32 flags;		/* in: SYSHAX_RING_NOTES or zero */
	__u32 max_jobs;		/* out: a client's max_jobs_ctx (in: 0) */
	__u64 size;		/* out: bytes of the area */
	__u64 mmap_offset;	/* out */
};

/* RING_SETUP flag, an engine's only, where VERSION has
 * SYSHAX_FEAT_MAP_NOTES: its out ring carries notes (above). */
#define SYSHAX_RING_NOTES	(1U << 0)

/* SUBMIT flag: jobs and nr are ignored; take what the in ring holds. */
#define SYSHAX_SUBMIT_RING	(1U << 0)

/* ---- Stats ----------------------------------------------------------- */

/* Latency buckets: bucket i counts jobs whose submit-to-complete time is
 * below 2^(i + 10) ns (1 us, 2 us, ...); the last bucket counts the rest. */
#define SYSHAX_LAT_BUCKETS	24

struct syshax_stats_args {
	__u64 pinned_bytes;			/* bytes pinned by the module */
	__u64 node_bytes[SYSHAX_MAX_NODES];	/* of which on each node */
	__u64 nr_bufs;				/* live buffer objects */
	__u64 node_bufs[SYSHAX_MAX_NODES];	/* buffers with chunks on node */
	__u32 contexts;				/* open files */
	__u32 engines;				/* attached engines */
	__u64 jobs_submitted;
	__u64 jobs_fetched;
	__u64 jobs_completed;			/* with status 0 */
	__u64 jobs_failed;			/* with status < 0 */
	__u64 jobs_cancelled;			/* dropped on client close */
	__u64 queue_depth;			/* queued, not yet fetched */
	__u64 inflight;				/* fetched, not yet completed */
	__u64 lat_hist[SYSHAX_LAT_BUCKETS];
	__u64 reserved[8];
};

/* ---- CTX_STATS: per-context figures (UAPI 2, additive) --------------- */

/* syshax_ctx_stat.flags */
#define SYSHAX_CTX_ENGINE	(1U << 0)	/* ENGINE_ATTACH was called */
#define SYSHAX_CTX_RING		(1U << 1)	/* RING_SETUP was called */
#define SYSHAX_CTX_SELF		(1U << 2)	/* the caller's own context */

/* One open context (a file of /dev/syshax, a connection to syshaxd). */
struct syshax_ctx_stat {
	__u32 ctx_id;		/* as in syshax_engine_job.ctx_id */
	__s32 pid;		/* opener's process (caller's pid namespace;
				 * 0: not visible there) */
	__u32 uid;		/* opener's uid (caller's user namespace) */
	__u32 flags;		/* SYSHAX_CTX_* */
	char comm[16];		/* opener's command name, NUL terminated */
	__u64 nr_bufs;		/* handles it holds (allocated, imported) */
	__u64 buf_bytes;	/* bytes of those buffers */
	__u64 jobs_queued;	/* its jobs not yet fetched */
	__u64 jobs_inflight;	/* its jobs an engine holds */
	__u64 jobs_submitted;	/* since it opened, ring jobs too */
	__u64 jobs_completed;	/* its jobs completed with status 0 */
	__u64 jobs_failed;	/* its jobs completed with status < 0 */
	__u64 eng_held;		/* engine: jobs it holds now */
	__u64 eng_done;		/* engine: jobs it completed */
	__u64 reserved[3];	/* zero */
};

/*
 * CTX_STATS: fills up to max entries of the array at ctxs, one per open
 * context (the caller's included), in no promised order; nr: entries
 * written, total: contexts open (more than nr when the array was short).
 * Any caller may ask (as for STATS). -EINVAL (flags), -EFAULT.
 */
struct syshax_ctx_stats_args {
	__u64 ctxs;		/* in: user pointer to struct syshax_ctx_stat[] */
	__u32 max;		/* in: entries at ctxs */
	__u32 flags;		/* in: zero */
	__u32 nr;		/* out */
	__u32 total;		/* out */
	__u64 reserved[2];	/* out: zero */
};

/* ---- ioctl numbers --------------------------------------------------- */

/* 0xBE is free in Documentation/userspace-api/ioctl/ioctl-number.rst. */
#define SYSHAX_IOC_MAGIC	0xBE

#define SYSHAX_IOC_VERSION	_IOR(SYSHAX_IOC_MAGIC, 0x00, struct syshax_version_args)
#define SYSHAX_IOC_BUF_ALLOC	_IOWR(SYSHAX_IOC_MAGIC, 0x01, struct syshax_buf_alloc_args)
#define SYSHAX_IOC_BUF_FREE	_IOW(SYSHAX_IOC_MAGIC, 0x02, struct syshax_buf_free_args)
#define SYSHAX_IOC_BUF_INFO	_IOWR(SYSHAX_IOC_MAGIC, 0x03, struct syshax_buf_info_args)
#define SYSHAX_IOC_BUF_REGISTER	_IOWR(SYSHAX_IOC_MAGIC, 0x04, struct syshax_buf_register_args)
#define SYSHAX_IOC_BUF_EXPORT	_IOWR(SYSHAX_IOC_MAGIC, 0x05, struct syshax_buf_export_args)
#define SYSHAX_IOC_BUF_IMPORT	_IOWR(SYSHAX_IOC_MAGIC, 0x06, struct syshax_buf_import_args)
#define SYSHAX_IOC_STATS	_IOR(SYSHAX_IOC_MAGIC, 0x07, struct syshax_stats_args)
#define SYSHAX_IOC_CTX_STATS	_IOWR(SYSHAX_IOC_MAGIC, 0x08, struct syshax_ctx_stats_args)
#define SYSHAX_IOC_SUBMIT	_IOW(SYSHAX_IOC_MAGIC, 0x10, struct syshax_submit_args)
#define SYSHAX_IOC_WAIT		_IOW(SYSHAX_IOC_MAGIC, 0x11, struct syshax_wait_args)
#define SYSHAX_IOC_ENGINE_ATTACH	_IOWR(SYSHAX_IOC_MAGIC, 0x20, struct syshax_engine_attach_args)
#define SYSHAX_IOC_ENGINE_FETCH	_IOW(SYSHAX_IOC_MAGIC, 0x21, struct syshax_engine_fetch_args)
#define SYSHAX_IOC_ENGINE_MAP	_IOWR(SYSHAX_IOC_MAGIC, 0x22, struct syshax_engine_map_args)
#define SYSHAX_IOC_ENGINE_COMPLETE	_IOW(SYSHAX_IOC_MAGIC, 0x23, struct syshax_engine_complete_args)
#define SYSHAX_IOC_RING_SETUP	_IOWR(SYSHAX_IOC_MAGIC, 0x30, struct syshax_ring_setup_args)

#endif /* _UAPI_SYSHAX_H */
