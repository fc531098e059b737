/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The only place that knows kernel versions: small shims so the module
 * builds on Linux 5.10 (openEuler 22.03), 6.1 (Debian 12) and 6.6.
 */
#ifndef SYSHAX_COMPAT_H
#define SYSHAX_COMPAT_H

#include <linux/mm.h>
#include <linux/version.h>

/* vm_flags became read-only behind helpers in 6.3. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0)
static inline void syshax_vm_flags_set(struct vm_area_struct *vma,
				       unsigned long flags)
{
	vma->vm_flags |= flags;
}
#else
static inline void syshax_vm_flags_set(struct vm_area_struct *vma,
				       vm_flags_t flags)
{
	vm_flags_set(vma, flags);
}
#endif

/* Unpinning a physically contiguous range in one call came in 5.12. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(5, 12, 0)
static inline void unpin_user_page_range_dirty_lock(struct page *page,
						    unsigned long npages,
						    bool make_dirty)
{
	unsigned long i;

	for (i = 0; i < npages; i++) {
		struct page *p = nth_page(page, i);

		unpin_user_pages_dirty_lock(&p, 1, make_dirty);
	}
}
#endif

/*
 * user_struct.locked_vm (what io_uring charges against RLIMIT_MEMLOCK) is
 * there whenever CONFIG_NET is, on every version from 5.10 on; without it
 * the module keeps the count in its own per-user account.
 */
#ifdef CONFIG_NET
#define SYSHAX_HAVE_USER_LOCKED_VM
#endif

/* The dma-buf symbol namespace became a string in 6.13. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 13, 0)
#define SYSHAX_IMPORT_NS_DMA_BUF()	MODULE_IMPORT_NS(DMA_BUF)
#else
#define SYSHAX_IMPORT_NS_DMA_BUF()	MODULE_IMPORT_NS("DMA_BUF")
#endif

#endif /* SYSHAX_COMPAT_H */
