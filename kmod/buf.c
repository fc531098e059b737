// SPDX-License-Identifier: GPL-2.0
/*
 * Buffer objects: physically contiguous chunks allocated on a NUMA node, or
 * user pages pinned long-term; their accounting, their handles in each open
 * file, their global ids, and mmap.
 *
 * Allocated buffers are mapped by inserting their struct pages, never raw
 * PFNs, so get_user_pages works on the mapping: CUDA (cudaHostRegister),
 * Ascend (aclrtHostRegister), VFIO type1 and RDMA (ibv_reg_mr) all pin host
 * memory that way.
 */
#include <linux/capability.h>
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/nodemask.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/user.h>
#include <linux/slab.h>
#include <linux/topology.h>
#include <linux/xarray.h>

#include "compat.h"
#include "syshax_priv.h"

/* Global id -> buffer; an entry stays until the buffer's release. */
static DEFINE_XARRAY_ALLOC1(syshax_bufs);
static u32 syshax_next_id;

#define SYSHAX_CHUNK_ORDER	(SYSHAX_CHUNK_SHIFT - PAGE_SHIFT)
/* Pages pinned per pin_user_pages_fast() call, and inserted per batch. */
#define SYSHAX_PAGE_BATCH	64
/* Longest merged run of registered pages: an sg entry's length is 32 bits. */
#define SYSHAX_MAX_RUN		((1U << 30) >> PAGE_SHIFT)
/* Bits of the mmap page offset that address pages inside a buffer. */
#define SYSHAX_PGOFF_BITS	(SYSHAX_MMAP_SHIFT - PAGE_SHIFT)

static struct syshax_buf *syshax_buf_new(u32 kind, u64 size)
{
	struct syshax_buf *buf = kzalloc(sizeof(*buf), GFP_KERNEL_ACCOUNT);

	if (!buf)
		return NULL;
	buf->user = syshax_user_get_current();
	if (!buf->user) {
		kfree(buf);
		return NULL;
	}
	kref_init(&buf->ref);
	buf->kind = kind;
	buf->size = size;
	buf->node = NUMA_NO_NODE;
	buf->mm = current->mm;
	mmgrab(buf->mm);
	return buf;
}

static atomic_long_t *syshax_locked_vm(struct syshax_user *u)
{
#ifdef SYSHAX_HAVE_USER_LOCKED_VM
	return &u->cred->user->locked_vm;
#else
	return &u->locked_vm;
#endif
}

/*
 * Adds pages to the user's locked_vm unless that takes it above
 * RLIMIT_MEMLOCK for a caller without CAP_IPC_LOCK (asked once, and only
 * when over the limit), as io_uring's __io_account_mem does: a
 * cmpxchg loop, so a failed charge never shows to others of the user.
 */
static int syshax_charge_locked(struct syshax_buf *buf, unsigned long pages)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	atomic_long_t *locked = syshax_locked_vm(buf->user);
	long cur = atomic_long_read(locked), new;
	int may_lock = -1;
	bool over;

	do {
		new = cur + pages;
		over = (unsigned long)new > limit;
		if (over && may_lock < 0)
			may_lock = capable(CAP_IPC_LOCK);
		if (over && !may_lock)
			return -ENOMEM;
	} while (!atomic_long_try_cmpxchg(locked, &cur, new));
	return 0;
}

/* Adds pages to the module's count of the user's; not above the cap. */
static int syshax_charge_user(struct syshax_user *u, unsigned long pages)
{
	u64 limit = syshax_max_pinned_user() >> PAGE_SHIFT;
	s64 cur = atomic64_read(&u->pinned_pages), new;

	do {
		new = cur + pages;
		if ((u64)new > limit)
			return -ENOMEM;
	} while (!atomic64_try_cmpxchg(&u->pinned_pages, &cur, new));
	return 0;
}

/*
 * Charges pages to the module-wide cap (max_pinned_mb), to the user's
 * count in the module (max_pinned_user_mb, whatever the caller's
 * capabilities) and to the user's locked_vm (RLIMIT_MEMLOCK unless
 * CAP_IPC_LOCK). Per user, not per process: buffers outlive their creator
 * (a dma-buf passed on), so short-lived children cannot each pin up to the
 * limit. The creating mm's pinned_vm shows the pages too (VmPin), with no
 * limit of its own. All atomics: the uncharge needs no lock. Each limit
 * fails with -ENOMEM. A buffer is charged whole before a page of it is
 * taken: one over a limit costs no allocation and zeroing (a caller
 * halving a request until it fits wastes nothing), and the destroy
 * returns the charge whatever was allocated or pinned by then.
 */
static int syshax_charge(struct syshax_buf *buf, unsigned long pages)
{
	int ret;

	ret = syshax_stats_charge((u64)pages << PAGE_SHIFT);
	if (ret)
		return ret;
	ret = syshax_charge_user(buf->user, pages);
	if (ret)
		goto err_stats;
	ret = syshax_charge_locked(buf, pages);
	if (ret)
		goto err_user;
	atomic64_add(pages, &buf->mm->pinned_vm);
	buf->charged_pages += pages;
	return 0;

err_user:
	atomic64_sub(pages, &buf->user->pinned_pages);
err_stats:
	syshax_stats_uncharge((u64)pages << PAGE_SHIFT);
	return ret;
}

static void syshax_uncharge(struct syshax_buf *buf, unsigned long pages)
{
	atomic64_sub(pages, &buf->mm->pinned_vm);
	atomic_long_sub(pages, syshax_locked_vm(buf->user));
	atomic64_sub(pages, &buf->user->pinned_pages);
	syshax_stats_uncharge((u64)pages << PAGE_SHIFT);
	buf->charged_pages -= pages;
}

/* Appends a run of pages, merging it with the last chunk when contiguous. */
static int syshax_buf_add(struct syshax_buf *buf, struct page *page,
			  unsigned int nr_pages, unsigned int *cap)
{
	struct syshax_chunk *last = buf->nr_chunks ?
				    &buf->chunks[buf->nr_chunks - 1] : NULL;
	int nid = page_to_nid(page);

	if (last && last->nid == nid && buf->kind == SYSHAX_BUF_KIND_REGISTERED &&
	    last->nr_pages + nr_pages <= SYSHAX_MAX_RUN &&
	    page_to_pfn(last->page) + last->nr_pages == page_to_pfn(page)) {
		last->nr_pages += nr_pages;
		return 0;
	}
	if (buf->nr_chunks == *cap) {
		unsigned int ncap = *cap ? *cap * 2 : 16;
		struct syshax_chunk *n;

		n = kvmalloc_array(ncap, sizeof(*n), GFP_KERNEL_ACCOUNT);
		if (!n)
			return -ENOMEM;
		if (buf->nr_chunks)
			memcpy(n, buf->chunks, buf->nr_chunks * sizeof(*n));
		kvfree(buf->chunks);
		buf->chunks = n;
		*cap = ncap;
	}
	buf->chunks[buf->nr_chunks++] = (struct syshax_chunk){
		.page = page, .nr_pages = nr_pages, .nid = nid,
	};
	return 0;
}

/* Frees or unpins the chunks, returns the charge and frees the object. */
static void syshax_buf_destroy(struct syshax_buf *buf)
{
	unsigned int i;

	for (i = 0; i < buf->nr_chunks; i++) {
		struct syshax_chunk *c = &buf->chunks[i];

		if (buf->kind == SYSHAX_BUF_KIND_ALLOC)
			__free_pages(c->page, ilog2(c->nr_pages));
		else
			syshax_unpin_range_dirty(c->page, c->nr_pages, true);
	}
	syshax_uncharge(buf, buf->charged_pages);
	syshax_user_put(buf->user);
	mmdrop(buf->mm);
	kvfree(buf->chunks);
	kfree(buf);
}

/*
 * Ends building a buffer: once built (ret 0) it gets its global id and is
 * counted; after a failure, or when no id is left, it is freed.
 */
static struct syshax_buf *syshax_buf_finish(struct syshax_buf *buf, int ret)
{
	if (!ret) {
		ret = xa_alloc_cyclic(&syshax_bufs, &buf->id, buf,
				      XA_LIMIT(1, SYSHAX_MAX_HANDLE),
				      &syshax_next_id, GFP_KERNEL);
		if (ret >= 0) {
			syshax_stats_buf(buf, true);
			return buf;
		}
		if (ret == -EBUSY)
			ret = -ENOSPC;
	}
	syshax_buf_destroy(buf);
	return ERR_PTR(ret);
}

static void syshax_buf_release(struct kref *ref)
{
	struct syshax_buf *buf = container_of(ref, struct syshax_buf, ref);

	xa_erase(&syshax_bufs, buf->id);
	syshax_stats_buf(buf, false);
	syshax_buf_destroy(buf);
}

void syshax_buf_get(struct syshax_buf *buf)
{
	kref_get(&buf->ref);
}

void syshax_buf_put(struct syshax_buf *buf)
{
	might_sleep();
	kref_put(&buf->ref, syshax_buf_release);
}

void syshax_buf_hold(struct syshax_buf *buf)
{
	atomic_inc(&buf->holds);
}

void syshax_buf_put_held(struct syshax_buf *buf)
{
	/* Fully ordered: engine_mapped, set while a job held buf, is seen. */
	if (atomic_dec_and_test(&buf->holds) && READ_ONCE(buf->engine_mapped))
		syshax_broker_buf_gone(buf);
	syshax_buf_put(buf);
}

static bool syshax_size_ok(u64 size)
{
	return size && size <= SYSHAX_MAX_BUF_SIZE;
}

/*
 * One piece of at most 2^*order pages: on the node first, then (when
 * allowed) anywhere; at smaller orders only when allowed. Once the node has
 * failed, *remote is set and later pieces go straight to the other nodes.
 * The pages are charged to the caller's memory cgroup; __GFP_RETRY_MAYFAIL:
 * fail the call rather than OOM-kill for pinned memory.
 */
static struct page *syshax_alloc_piece(int nid, u32 flags, unsigned int *order,
				       bool *remote)
{
	const gfp_t gfp = GFP_KERNEL_ACCOUNT | __GFP_COMP | __GFP_NOWARN |
			  __GFP_ZERO | __GFP_RETRY_MAYFAIL;
	unsigned int min_order = flags & SYSHAX_BUF_ALLOW_SMALL ? 0 : *order;
	unsigned int o;

	for (;;) {
		for (o = *order + 1; o-- > min_order;) {
			struct page *page;

			page = alloc_pages_node(nid, *remote ? gfp :
						gfp | __GFP_THISNODE, o);
			if (page) {
				*order = o;
				return page;
			}
		}
		if (*remote || !(flags & SYSHAX_BUF_ALLOW_REMOTE))
			return NULL;
		*remote = true;
	}
}

/*
 * The caller's nearest node with memory. numa_mem_id() is that only where
 * the architecture supports memoryless nodes (CONFIG_HAVE_MEMORYLESS_NODES,
 * not x86 or arm64): elsewhere a CPU of a node without memory gets its own
 * node back, where __GFP_THISNODE finds nothing. Then the memory node at
 * the smallest node_distance() is taken, the lowest numbered of equals
 * (the first of the node's zonelist when distances differ).
 */
static int syshax_local_mem_node(void)
{
	int nid = numa_mem_id(), n, best = NUMA_NO_NODE;

	if (node_state(nid, N_MEMORY))
		return nid;
	for_each_node_state(n, N_MEMORY)
		if (best == NUMA_NO_NODE ||
		    node_distance(nid, n) < node_distance(nid, best))
			best = n;
	return best == NUMA_NO_NODE ? nid : best;
}

struct syshax_buf *syshax_buf_alloc(u64 size, int node, u32 flags)
{
	struct syshax_buf *buf;
	unsigned long pages, done = 0;
	unsigned int cap = 0;
	bool remote = false;
	int nid, ret = 0;

	if (!syshax_size_ok(size))
		return ERR_PTR(-EINVAL);
	if (node < NUMA_NO_NODE || node >= (int)nr_node_ids ||
	    (node >= 0 && !node_state(node, N_MEMORY)))
		return ERR_PTR(-EINVAL);
	size = PAGE_ALIGN(size);
	nid = node < 0 ? syshax_local_mem_node() : node;
	pages = size >> PAGE_SHIFT;

	buf = syshax_buf_new(SYSHAX_BUF_KIND_ALLOC, size);
	if (!buf)
		return ERR_PTR(-ENOMEM);
	buf->node = node;
	buf->flags = flags;
	ret = syshax_charge(buf, pages);
	if (ret)
		return syshax_buf_finish(buf, ret);
	while (done < pages) {
		/* Never past the end: a piece rounded up to a power of two
		 * would pin (and charge) pages beyond the buffer's size. */
		unsigned int order = min_t(unsigned int, SYSHAX_CHUNK_ORDER,
					   ilog2(pages - done));
		struct page *page;

		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			goto out;
		}
		page = syshax_alloc_piece(nid, flags, &order, &remote);
		if (!page) {
			ret = -ENOMEM;
			goto out;
		}
		ret = syshax_buf_add(buf, page, 1U << order, &cap);
		if (ret) {
			__free_pages(page, order);
			goto out;
		}
		done += 1UL << order;
	}
out:
	return syshax_buf_finish(buf, ret);
}

struct syshax_buf *syshax_buf_register(u64 addr, u64 size)
{
	struct page *batch[SYSHAX_PAGE_BATCH];
	struct syshax_buf *buf;
	unsigned long pages, done = 0;
	unsigned int cap = 0;
	int ret = 0;

	if (!syshax_size_ok(size) || (addr | size) & ~PAGE_MASK ||
	    addr + size < addr)
		return ERR_PTR(-EINVAL);
	pages = size >> PAGE_SHIFT;

	buf = syshax_buf_new(SYSHAX_BUF_KIND_REGISTERED, size);
	if (!buf)
		return ERR_PTR(-ENOMEM);
	ret = syshax_charge(buf, pages);
	if (ret)
		return syshax_buf_finish(buf, ret);
	while (done < pages) {
		int n = min_t(unsigned long, pages - done, SYSHAX_PAGE_BATCH);
		int got, i;

		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			goto out;
		}
		got = pin_user_pages_fast(addr + (done << PAGE_SHIFT), n,
					  FOLL_WRITE | FOLL_LONGTERM, batch);
		if (got <= 0) {
			ret = got ? got : -EFAULT;
			goto out;
		}
		for (i = 0; i < got; i++) {
			ret = syshax_buf_add(buf, batch[i], 1, &cap);
			if (ret) {
				unpin_user_pages(batch + i, got - i);
				goto out;
			}
		}
		done += got;
	}
out:
	return syshax_buf_finish(buf, ret);
}

u64 syshax_handle_mmap_offset(u32 handle)
{
	return (u64)handle << SYSHAX_MMAP_SHIFT;
}

struct syshax_buf *syshax_buf_get_handle(struct syshax_ctx *ctx, u64 handle,
					 u32 *access)
{
	struct syshax_buf *buf;

	if (!handle || handle > SYSHAX_MAX_HANDLE)
		return ERR_PTR(-EBADF);
	xa_lock(&ctx->handles);
	buf = xa_load(&ctx->handles, handle);
	if (buf)
		syshax_buf_get(buf);
	xa_unlock(&ctx->handles);
	if (!buf)
		return ERR_PTR(-EBADF);
	/* Every handle grants both today: buffers are mapped read-write. */
	if (access)
		*access = SYSHAX_ACCESS_RW;
	return buf;
}

struct syshax_buf *syshax_buf_get_id(u64 id)
{
	struct syshax_buf *buf;

	if (!id || id > SYSHAX_MAX_HANDLE)
		return ERR_PTR(-EBADF);
	xa_lock(&syshax_bufs);
	buf = xa_load(&syshax_bufs, id);
	/* A buffer whose last reference is going stays listed until freed. */
	if (buf && !kref_get_unless_zero(&buf->ref))
		buf = NULL;
	xa_unlock(&syshax_bufs);
	return buf ? buf : ERR_PTR(-EBADF);
}

/* Marks the handles of engine mappings, whose references are not live. */
#define SYSHAX_HANDLE_MAP	XA_MARK_1

int syshax_ctx_install_buf(struct syshax_ctx *ctx, struct syshax_buf *buf,
			   bool engine_map, u32 *handle, u64 *mmap_offset)
{
	int ret;

	syshax_buf_get(buf);
	if (!engine_map)
		syshax_buf_hold(buf);
	/*
	 * Cyclic: a freed handle is not given out again at once (1 = wrapped).
	 * Marked before the lock goes, so a free never sees it unmarked.
	 */
	xa_lock(&ctx->handles);
	ret = __xa_alloc_cyclic(&ctx->handles, handle, buf,
				XA_LIMIT(1, SYSHAX_MAX_HANDLE),
				&ctx->next_handle, GFP_KERNEL);
	if (ret >= 0 && engine_map)
		__xa_set_mark(&ctx->handles, *handle, SYSHAX_HANDLE_MAP);
	xa_unlock(&ctx->handles);
	if (ret < 0) {
		if (engine_map)
			syshax_buf_put(buf);
		else
			syshax_buf_put_held(buf);
		return ret == -EBUSY ? -ENOSPC : ret;
	}
	*mmap_offset = syshax_handle_mmap_offset(*handle);
	return 0;
}

/* Drops the reference of a handle that was in ctx (map: marked). */
static void syshax_handle_put(struct syshax_buf *buf, bool map)
{
	if (map)
		syshax_buf_put(buf);
	else
		syshax_buf_put_held(buf);
}

int syshax_ctx_free_handle(struct syshax_ctx *ctx, u32 handle)
{
	struct syshax_buf *buf;
	bool map;

	if (!handle || handle > SYSHAX_MAX_HANDLE)
		return -EBADF;
	xa_lock(&ctx->handles);
	map = xa_get_mark(&ctx->handles, handle, SYSHAX_HANDLE_MAP);
	buf = __xa_erase(&ctx->handles, handle);
	xa_unlock(&ctx->handles);
	if (!buf)
		return -EBADF;
	syshax_handle_put(buf, map);
	return 0;
}

bool syshax_ctx_take_handle(struct syshax_ctx *ctx, u32 handle,
			    const struct syshax_buf *buf)
{
	bool taken = false;

	if (!handle || handle > SYSHAX_MAX_HANDLE)
		return false;
	xa_lock(&ctx->handles);
	if (xa_load(&ctx->handles, handle) == buf) {
		__xa_erase(&ctx->handles, handle);
		taken = true;
	}
	xa_unlock(&ctx->handles);
	return taken;
}

bool syshax_ctx_handle_is(struct syshax_ctx *ctx, u32 handle,
			  const struct syshax_buf *buf)
{
	return handle && handle <= SYSHAX_MAX_HANDLE &&
	       xa_load(&ctx->handles, handle) == buf;
}

void syshax_ctx_release_bufs(struct syshax_ctx *ctx)
{
	struct syshax_buf *buf;
	unsigned long handle;

	xa_for_each(&ctx->handles, handle, buf)
		syshax_handle_put(buf, xa_get_mark(&ctx->handles, handle,
						   SYSHAX_HANDLE_MAP));
	xa_destroy(&ctx->handles);
}

void syshax_buf_node_bytes(const struct syshax_buf *buf,
			   u64 node_bytes[SYSHAX_MAX_NODES])
{
	unsigned int i;

	memset(node_bytes, 0, SYSHAX_MAX_NODES * sizeof(u64));
	for (i = 0; i < buf->nr_chunks; i++)
		node_bytes[min_t(int, buf->chunks[i].nid, SYSHAX_MAX_NODES - 1)] +=
			(u64)buf->chunks[i].nr_pages << PAGE_SHIFT;
}

u32 syshax_buf_max_chunk(const struct syshax_buf *buf)
{
	u64 max = 0;
	unsigned int i;

	for (i = 0; i < buf->nr_chunks; i++)
		max = max_t(u64, max, (u64)buf->chunks[i].nr_pages << PAGE_SHIFT);
	return min_t(u64, max, U32_MAX);
}

/* Each VMA, also one split off another, holds a buffer reference. */
static void syshax_vm_open(struct vm_area_struct *vma)
{
	syshax_buf_get(vma->vm_private_data);
}

static void syshax_vm_close(struct vm_area_struct *vma)
{
	syshax_buf_put(vma->vm_private_data);
}

/*
 * Every page is inserted at mmap time; a fault means madvise(MADV_DONTNEED)
 * took one out again, so put the same page back.
 */
static vm_fault_t syshax_vm_fault(struct vm_fault *vmf)
{
	struct syshax_buf *buf = vmf->vma->vm_private_data;
	unsigned long idx = vmf->pgoff & ((1UL << SYSHAX_PGOFF_BITS) - 1);
	unsigned int i;
	int ret;

	/* PFN mappings (registered buffers) cannot take struct pages. */
	if (buf->kind != SYSHAX_BUF_KIND_ALLOC)
		return VM_FAULT_SIGBUS;
	for (i = 0; i < buf->nr_chunks && idx >= buf->chunks[i].nr_pages; i++)
		idx -= buf->chunks[i].nr_pages;
	if (i == buf->nr_chunks)
		return VM_FAULT_SIGBUS;
	ret = vm_insert_page(vmf->vma, vmf->address & PAGE_MASK,
			     nth_page(buf->chunks[i].page, idx));
	if (ret == -ENOMEM)
		return VM_FAULT_OOM;
	/* -EBUSY: another thread's fault put it back first. */
	if (ret && ret != -EBUSY)
		return VM_FAULT_SIGBUS;
	return VM_FAULT_NOPAGE;
}

static const struct vm_operations_struct syshax_vm_ops = {
	.open	= syshax_vm_open,
	.close	= syshax_vm_close,
	.fault	= syshax_vm_fault,
};

/*
 * Calls fn for the pages [pgoff, pgoff + count) of buf, one physically
 * contiguous run at a time, with the user address each run maps to.
 */
static int syshax_buf_walk(struct syshax_buf *buf, struct vm_area_struct *vma,
			   unsigned long pgoff,
			   int (*fn)(struct vm_area_struct *vma,
				     unsigned long addr, struct page *page,
				     unsigned long nr))
{
	unsigned long addr = vma->vm_start, left = vma_pages(vma);
	unsigned int i;
	int ret;

	for (i = 0; i < buf->nr_chunks && left; i++) {
		const struct syshax_chunk *c = &buf->chunks[i];
		unsigned long nr;

		if (pgoff >= c->nr_pages) {
			pgoff -= c->nr_pages;
			continue;
		}
		nr = min(left, c->nr_pages - pgoff);
		ret = fn(vma, addr, nth_page(c->page, pgoff), nr);
		if (ret)
			return ret;
		addr += nr << PAGE_SHIFT;
		left -= nr;
		pgoff = 0;
	}
	return 0;
}

static int syshax_insert_run(struct vm_area_struct *vma, unsigned long addr,
			     struct page *page, unsigned long nr)
{
	struct page *batch[SYSHAX_PAGE_BATCH];
	unsigned long done, n, i;
	int ret;

	/* A compound chunk goes in as its subpages: no PFN-only entries. */
	for (done = 0; done < nr; done += n) {
		unsigned long left;

		n = min_t(unsigned long, nr - done, SYSHAX_PAGE_BATCH);
		for (i = 0; i < n; i++)
			batch[i] = nth_page(page, done + i);
		left = n;
		ret = vm_insert_pages(vma, addr + (done << PAGE_SHIFT), batch,
				      &left);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Registered pages belong to another mapping (anonymous, hugetlbfs, a
 * file, or a syshax buffer); inserting them as struct pages would give
 * those pages a second, foreign reverse mapping, which the mm does not
 * support for anonymous or hugetlb pages. They are pinned for the life of
 * the buffer, which this VMA holds, so a PFN mapping is safe; pinning
 * through get_user_pages is done on the original mapping.
 */
static int syshax_remap_run(struct vm_area_struct *vma, unsigned long addr,
			    struct page *page, unsigned long nr)
{
	return remap_pfn_range(vma, addr, page_to_pfn(page), nr << PAGE_SHIFT,
			       vma->vm_page_prot);
}

int syshax_buf_mmap(struct syshax_buf *buf, struct vm_area_struct *vma,
		    unsigned long pgoff)
{
	unsigned long pages = buf->size >> PAGE_SHIFT;
	int ret;

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (pgoff > pages || vma_pages(vma) > pages - pgoff)
		return -EINVAL;
	syshax_vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	ret = syshax_buf_walk(buf, vma, pgoff,
			      buf->kind == SYSHAX_BUF_KIND_ALLOC ?
			      syshax_insert_run : syshax_remap_run);
	/* On error mmap_region() zaps what was inserted; vm_ops stay unset. */
	if (ret)
		return ret;
	syshax_buf_get(buf);
	vma->vm_private_data = buf;
	vma->vm_ops = &syshax_vm_ops;
	return 0;
}

int syshax_ctx_mmap(struct syshax_ctx *ctx, struct vm_area_struct *vma)
{
	struct syshax_buf *buf;
	int ret;

	/* Handle 0 is never a buffer's: its offsets are the ring area's. */
	if (!(vma->vm_pgoff >> SYSHAX_PGOFF_BITS))
		return syshax_broker_ring_mmap(ctx, vma);
	buf = syshax_buf_get_handle(ctx, vma->vm_pgoff >> SYSHAX_PGOFF_BITS,
				    NULL);
	if (IS_ERR(buf))
		return -EINVAL;
	ret = syshax_buf_mmap(buf, vma,
			      vma->vm_pgoff & ((1UL << SYSHAX_PGOFF_BITS) - 1));
	syshax_buf_put(buf);
	return ret;
}
