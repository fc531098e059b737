/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The only place that knows kernel versions: small shims so the module
 * builds on Linux 5.10 (openEuler 22.03), 6.1 (Debian 12), 6.6 (openEuler
 * 24.03) and 6.12. docs/kernel-compat.md lists every kernel interface the
 * module uses that changed in that range, and why each test is what it is.
 */
#ifndef SYSHAX_COMPAT_H
#define SYSHAX_COMPAT_H

#include <linux/mm.h>
#include <linux/module.h>
#include <linux/version.h>

/*
 * vm_flags became read-only behind helpers in 6.3. A version test: the
 * helpers are inline functions with no macro to test for; a kernel that
 * backported the read-only field without them fails to build here, loudly.
 */
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

/*
 * Unpinning a physically contiguous range in one call came in 5.12. Under
 * a name of our own: a 5.10 kernel that backported the call (its extern
 * declaration) would clash with a static one of the same name.
 */
static inline void syshax_unpin_range_dirty(struct page *page,
					    unsigned long npages,
					    bool make_dirty)
{
#if LINUX_VERSION_CODE < KERNEL_VERSION(5, 12, 0)
	unsigned long i;

	for (i = 0; i < npages; i++) {
		struct page *p = nth_page(page, i);

		unpin_user_pages_dirty_lock(&p, 1, make_dirty);
	}
#else
	unpin_user_page_range_dirty_lock(page, npages, make_dirty);
#endif
}

/*
 * user_struct.locked_vm (what io_uring charges against RLIMIT_MEMLOCK) is
 * there whenever CONFIG_NET is, on every version from 5.10 on; without it
 * the module keeps the count in its own per-user account.
 */
#ifdef CONFIG_NET
#define SYSHAX_HAVE_USER_LOCKED_VM
#endif

/*
 * The dma-buf symbols' namespace (5.16 on; an import of it is harmless
 * before). MODULE_IMPORT_NS() took a bare word until 6.13 and a string
 * since, but both put the same modinfo tag, which is spelt out here: one
 * form for every version, no version test.
 */
#define SYSHAX_IMPORT_NS_DMA_BUF()	MODULE_INFO(import_ns, "DMA_BUF")

#endif /* SYSHAX_COMPAT_H */
