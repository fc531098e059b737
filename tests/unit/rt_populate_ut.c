// SPDX-License-Identifier: MIT
/* Faulting in from several threads (runtime/src/populate.c): every page of
 * a shared mapping present in this process's page tables afterwards, the
 * slices' edges and a size that is no multiple of their cut included. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <CUnit/Basic.h>

#include "../t_cunit.h"

#include "populate.h"

/* Pages of [p, p + size) with a page table entry (/proc/self/pagemap bit
 * 63), or -1 when pagemap cannot be read. */
static long present_pages(const void *p, size_t size)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), n = size / pg;
	uint64_t *e = malloc(n * sizeof(*e));
	off_t at = (off_t)((uintptr_t)p / pg * sizeof(*e));
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	long r = -1;

	if (fd >= 0 && e &&
	    pread(fd, e, n * sizeof(*e), at) == (ssize_t)(n * sizeof(*e))) {
		r = 0;
		for (size_t i = 0; i < n; i++)
			r += (long)(e[i] >> 63);
	}
	if (fd >= 0)
		close(fd);
	free(e);
	return r;
}

static void check_size(size_t size)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int ret;

	CU_ASSERT_FATAL(p != MAP_FAILED);
	CU_ASSERT_EQUAL(present_pages(p, size), 0);
	ret = shrt_populate(p, size);
	if (ret == -EOPNOTSUPP || ret == -EINVAL) {
		printf("(no MADV_POPULATE_WRITE here: not checked) ");
	} else {
		CU_ASSERT_EQUAL(ret, 0);
		CU_ASSERT_EQUAL(present_pages(p, size), (long)(size / pg));
	}
	munmap(p, size);
}

static void t_sizes(void)
{
	check_size(4096);			/* one page, one slice */
	check_size(130ULL << 20);		/* slices on 2 MiB cuts */
	check_size((200ULL << 20) + 12288);	/* a remainder past the cuts */
}

static void t_error(void)
{
	/* A range with no mapping: the slice's error comes back. */
	void *p = mmap(NULL, 256ULL << 20, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CU_ASSERT_FATAL(p != MAP_FAILED);
	munmap(p, 256ULL << 20);
	CU_ASSERT(shrt_populate(p, 256ULL << 20) < 0);
}

int main(void)
{
	static const struct t_test tests[] = {
		{ "every page present afterwards", t_sizes },
		{ "a failed slice's error", t_error },
	};

	return T_RUN_SUITE("rt_populate", NULL, NULL, tests);
}
