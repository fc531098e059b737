/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sysHAX module internals shared by its files: contexts (one per open
 * file), buffer objects, and the hooks through which the job broker plugs
 * into the device.
 */
#ifndef SYSHAX_PRIV_H
#define SYSHAX_PRIV_H

#include <linux/bits.h>
#include <linux/kref.h>
#include <linux/mm_types.h>
#include <linux/poll.h>
#include <linux/refcount.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <linux/xarray.h>

#include "compat.h"
#include "syshax.h"

/*
 * A buffer's mmap offset is its handle shifted by this much, so the offset
 * names the buffer within the open file and the low bits address pages in
 * it; it also bounds a buffer's size.
 */
#define SYSHAX_MMAP_SHIFT	40
#define SYSHAX_MAX_BUF_SIZE	BIT_ULL(SYSHAX_MMAP_SHIFT)
/*
 * Handles and global ids stay below this, so offsets fit in an off_t. Both
 * are handed out cyclically: a number comes back only after the whole
 * range has been used, so a stale handle (or an mmap offset made from it)
 * fails instead of naming the next buffer.
 */
#define SYSHAX_MAX_HANDLE	((1U << 22) - 1)

struct syshax_broker_ctx;
struct cred;

/*
 * A user as the module accounts it, by real uid (the user_struct of
 * current_user(), as io_uring charges): the pages of the buffers it created
 * (max_pinned_user_mb) and its queued or held jobs (max_jobs_user). Shared
 * by everything of that uid and refcounted; stats.c keeps them.
 */
struct syshax_user {
	struct hlist_node node;		/* in stats.c's hash, by uid */
	refcount_t ref;
	kuid_t uid;
	/*
	 * The first charging task's credentials, held for their user_struct
	 * (cred->user, whose locked_vm is charged): put_cred() is exported
	 * on every kernel, free_uid() only on newer ones (not Debian 6.1.0-50).
	 */
	const struct cred *cred;
	atomic64_t pinned_pages;	/* of this user's buffers */
	unsigned int nr_jobs;		/* queued or held; broker lock */
	bool rings_full;		/* max_jobs_user reached; broker lock */
#ifndef SYSHAX_HAVE_USER_LOCKED_VM
	atomic_long_t locked_vm;	/* when user_struct has none */
#endif
};

/* One open file of /dev/syshax. */
struct syshax_ctx {
	struct xarray handles;		/* handle -> struct syshax_buf * */
	u32 next_handle;		/* xa_alloc_cyclic's cursor */
	u32 id;				/* for stats and engines */
	struct syshax_broker_ctx *jobs;	/* owned by broker.c */
};

/* A physically contiguous piece of a buffer. */
struct syshax_chunk {
	struct page *page;		/* first page */
	unsigned int nr_pages;
	int nid;
};

struct syshax_buf {
	struct kref ref;		/* every reference: the memory's life */
	/*
	 * The references that keep the buffer live, that is nameable by a
	 * job: client handles, jobs, dma-bufs; not engine mappings (handles
	 * from ENGINE_MAP, VMAs). At zero the broker tells the engines that
	 * kept a mapping (engine_mapped) to let it go.
	 */
	atomic_t holds;
	bool engine_mapped;		/* by an engine with ring notes */
	u32 id;				/* global, key of the id xarray */
	u32 kind;			/* SYSHAX_BUF_KIND_* */
	u64 size;			/* bytes, page aligned */
	s32 node;			/* as asked at alloc */
	u32 flags;			/* as given at alloc */
	unsigned int nr_chunks;
	struct syshax_chunk *chunks;
	/*
	 * Pages are charged to the creator's user (its locked_vm, checked
	 * against RLIMIT_MEMLOCK, and the module's per-user count) and shown
	 * in the creating mm's pinned_vm (VmPin; held by mmgrab).
	 */
	struct syshax_user *user;
	struct mm_struct *mm;
	unsigned long charged_pages;
};

/* buf.c */
struct syshax_buf *syshax_buf_alloc(u64 size, int node, u32 flags);
struct syshax_buf *syshax_buf_register(u64 addr, u64 size);
/* Takes a reference; ERR_PTR(-EBADF) when the handle is unknown. */
struct syshax_buf *syshax_buf_get_handle(struct syshax_ctx *ctx, u64 handle,
					 u32 *access);
/* Global lookup by id; takes a reference; ERR_PTR(-EBADF) when unknown. */
struct syshax_buf *syshax_buf_get_id(u64 id);
void syshax_buf_get(struct syshax_buf *buf);
/* May sleep: the last put frees or unpins the pages. No spinlocks held. */
void syshax_buf_put(struct syshax_buf *buf);
/* Makes a reference the caller took one that keeps buf live; any context. */
void syshax_buf_hold(struct syshax_buf *buf);
/* Drops a reference made live by syshax_buf_hold(); may sleep. */
void syshax_buf_put_held(struct syshax_buf *buf);
/*
 * Gives ctx a new handle for buf, taking its own reference, live unless
 * engine_map; for buffers the context did not allocate (IMPORT, the
 * broker's ENGINE_MAP).
 */
int syshax_ctx_install_buf(struct syshax_ctx *ctx, struct syshax_buf *buf,
			   bool engine_map, u32 *handle, u64 *mmap_offset);
int syshax_ctx_free_handle(struct syshax_ctx *ctx, u32 handle);
/*
 * Erases handle if it still names buf (compares pointers; any context);
 * then the caller owns the handle's reference.
 */
bool syshax_ctx_take_handle(struct syshax_ctx *ctx, u32 handle,
			    const struct syshax_buf *buf);
/*
 * Whether handle still names buf in ctx; compares pointers only (buf is not
 * dereferenced), so it may be called under a spinlock.
 */
bool syshax_ctx_handle_is(struct syshax_ctx *ctx, u32 handle,
			  const struct syshax_buf *buf);
void syshax_ctx_release_bufs(struct syshax_ctx *ctx);
u64 syshax_handle_mmap_offset(u32 handle);
void syshax_buf_node_bytes(const struct syshax_buf *buf,
			   u64 node_bytes[SYSHAX_MAX_NODES]);
u32 syshax_buf_max_chunk(const struct syshax_buf *buf);
/* Maps buf's pages from page pgoff on into vma. */
int syshax_buf_mmap(struct syshax_buf *buf, struct vm_area_struct *vma,
		    unsigned long pgoff);
int syshax_ctx_mmap(struct syshax_ctx *ctx, struct vm_area_struct *vma);

/* stats.c: module-wide counters, also shown in sysfs; per-user accounts. */
u64 syshax_max_pinned(void);
/* max_pinned_user_mb in bytes; U64_MAX when 0 (no per-user cap). */
u64 syshax_max_pinned_user(void);
/* The caller's account, a new reference; NULL without memory. */
struct syshax_user *syshax_user_get_current(void);
struct syshax_user *syshax_user_hold(struct syshax_user *u);
/* Any context; takes only a leaf spinlock. */
void syshax_user_put(struct syshax_user *u);
int syshax_stats_charge(u64 bytes);
void syshax_stats_uncharge(u64 bytes);
void syshax_stats_buf(const struct syshax_buf *buf, bool add);
void syshax_stats_ctx(bool add);
void syshax_stats_fill(struct syshax_stats_args *st);
extern const struct attribute_group *syshax_attr_groups[];

/* dmabuf.c */
struct dma_buf *syshax_dmabuf_export(struct syshax_buf *buf);
/* A reference on the buffer behind a syshax dma-buf fd. */
struct syshax_buf *syshax_dmabuf_import(int fd);

/* ioctl.c */
long syshax_ioctl(struct file *file, unsigned int cmd, unsigned long arg);

/* main.c */
extern unsigned int syshax_max_pinned_mb;
extern unsigned int syshax_max_pinned_user_mb;

/*
 * Broker hooks (broker.c). ioctl: SUBMIT, WAIT, ENGINE_* and RING_SETUP;
 * release runs before the context's buffers are dropped; version sets the
 * job and ring feature bits and limits; stats fills the job fields.
 */
int syshax_broker_init(void);
void syshax_broker_exit(void);
int syshax_broker_open(struct syshax_ctx *ctx);
void syshax_broker_release(struct syshax_ctx *ctx);
/* buf's last live reference went (syshax_buf_put_held()); may sleep. */
void syshax_broker_buf_gone(struct syshax_buf *buf);
long syshax_broker_ioctl(struct syshax_ctx *ctx, unsigned int cmd,
			 void __user *uarg);
__poll_t syshax_broker_poll(struct syshax_ctx *ctx, struct file *file,
			    poll_table *wait);
/* mmap offset 0: the context's ring area (RING_SETUP). */
int syshax_broker_ring_mmap(struct syshax_ctx *ctx, struct vm_area_struct *vma);
void syshax_broker_version(struct syshax_version_args *v);
void syshax_broker_stats(struct syshax_stats_args *st);
/* CTX_STATS: every context's figures, the caller's first. */
long syshax_broker_ctx_stats(struct syshax_ctx *ctx, void __user *uarg);
/* Job counters in sysfs, a group of the misc device. */
extern const struct attribute_group syshax_broker_attr_group;

#endif /* SYSHAX_PRIV_H */
