/* SPDX-License-Identifier: MIT */
/* Faulting in a shared mapping from several threads, shared by the library
 * (an engine's kept mappings) and syshaxd's broker (new buffers). */
#ifndef SHRT_POPULATE_H
#define SHRT_POPULATE_H

#include <stdint.h>

/*
 * MADV_POPULATE_WRITE over size bytes at p (a mapping of 4 KiB or 2 MiB
 * pages), cut 2 MiB from p apart into a slice a thread: one per 64 MiB, up
 * to the CPUs this thread may run on and at most 16. The kernel zeroes a
 * new page, or fills a page table, in the thread that faults it. 0 or the
 * first slice's -errno; -EOPNOTSUPP where the headers lack the advice.
 */
int shrt_populate(void *p, uint64_t size);

#endif /* SHRT_POPULATE_H */
