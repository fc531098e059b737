// SPDX-License-Identifier: MIT
/*
 * memfd buffers for the userspace broker. The broker maps a new memfd once
 * to give it a NUMA policy (mbind on shmem sets the file's shared policy,
 * which every later mapping follows) and to fault all of it in, so the
 * memory is there before any client or engine touches it; then it seals
 * the size so no holder of the fd can shrink it under an engine. A large
 * buffer is faulted in by several threads (shrt_populate).
 */
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "membuf.h"
#include "populate.h"

#define HUGE_SIZE	(2ULL << 20)

int shxd_membuf_max_node(void)
{
	return numa_available() < 0 ? 0 : numa_max_node();
}

static int node_ok(int node)
{
	if (node == -1)
		return 1;
	if (node < 0 || node > shxd_membuf_max_node())
		return 0;
	return numa_available() < 0 ? node == 0 :
	       numa_bitmask_isbitset(numa_all_nodes_ptr, (unsigned int)node);
}

/* Free 2 MiB pages on node (or anywhere for -1), from sysfs. */
static uint64_t free_huge_pages(int node)
{
	char path[128];
	unsigned long long n = 0;
	FILE *f;

	if (node < 0)
		snprintf(path, sizeof(path), "/sys/kernel/mm/hugepages/"
			 "hugepages-2048kB/free_hugepages");
	else
		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/"
			 "hugepages/hugepages-2048kB/free_hugepages", node);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fscanf(f, "%llu", &n) != 1)
		n = 0;
	fclose(f);
	return n;
}

/* Binds the mapping to node (preferred when remote pages are allowed). */
static int place(void *p, uint64_t size, int node, uint32_t flags)
{
	int mode = flags & SYSHAX_BUF_ALLOW_REMOTE ? MPOL_PREFERRED : MPOL_BIND;
	struct bitmask *bm;
	int ret = 0;

	if (node < 0 || numa_available() < 0)
		return 0;
	bm = numa_bitmask_alloc((unsigned int)numa_max_possible_node() + 1);
	if (!bm)
		return -ENOMEM;
	numa_bitmask_setbit(bm, (unsigned int)node);
	if (mbind(p, size, mode, bm->maskp, bm->size + 1, 0))
		ret = -errno;
	numa_bitmask_free(bm);
	return ret;
}

/* Which node each page landed on, summed per node (the last slot takes the
 * nodes past SYSHAX_MAX_NODES, as in the module). */
static void count_nodes(struct shxd_membuf *mb, char *p)
{
	enum { BATCH = 1024 };
	void *pages[BATCH];
	int status[BATCH];
	uint64_t step = mb->chunk_size, off = 0;

	if (numa_available() < 0) {
		mb->node_bytes[0] = mb->size;
		return;
	}
	while (off < mb->size) {
		unsigned long n = 0, i;

		for (; n < BATCH && off < mb->size; n++, off += step)
			pages[n] = p + off;
		if (numa_move_pages(0, n, pages, NULL, status, 0))
			memset(status, 0, sizeof(status));
		for (i = 0; i < n; i++) {
			int nid = status[i] < 0 ? 0 : status[i];

			if (nid >= SYSHAX_MAX_NODES)
				nid = SYSHAX_MAX_NODES - 1;
			mb->node_bytes[nid] += step;
		}
	}
}

/* Sizes, places and faults in one memfd; -ENOMEM when it cannot be had. */
static int fill(struct shxd_membuf *mb, unsigned int mfd_flags)
{
	const unsigned int seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
	void *p;
	int ret;

	mb->fd = memfd_create("syshax", MFD_CLOEXEC | MFD_ALLOW_SEALING |
			      mfd_flags);
	if (mb->fd < 0)
		return -errno;
	if (ftruncate(mb->fd, (off_t)mb->size))
		return -errno;
	p = mmap(NULL, mb->size, PROT_READ | PROT_WRITE, MAP_SHARED, mb->fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	ret = place(p, mb->size, mb->node, mb->flags);
	if (!ret && !(mfd_flags & MFD_HUGETLB))
		madvise(p, mb->size, MADV_HUGEPAGE);	/* a hint: THP may be off */
	if (!ret)
		ret = shrt_populate(p, mb->size);
	if (ret == -EFAULT || ret == -EINTR)
		ret = -ENOMEM;
	if (!ret)
		count_nodes(mb, p);
	munmap(p, mb->size);
	if (!ret && fcntl(mb->fd, F_ADD_SEALS, seals))
		ret = -errno;
	return ret;
}

int shxd_membuf_check(uint64_t size, int node, uint32_t flags)
{
	if (!size || size > SHXD_MAX_BUF_SIZE || !node_ok(node) ||
	    (flags & ~SYSHAX_BUF_ALLOC_FLAGS))
		return -EINVAL;
	return 0;
}

int shxd_membuf_create(uint64_t size, int node, uint32_t flags,
		       struct shxd_membuf **out)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t huge = (size + HUGE_SIZE - 1) & ~(HUGE_SIZE - 1);
	struct shxd_membuf *mb;
	struct stat st;
	int ret;

	ret = shxd_membuf_check(size, node, flags);
	if (ret)
		return ret;
	ret = -ENOMEM;
	mb = calloc(1, sizeof(*mb));
	if (!mb)
		return -ENOMEM;
	mb->fd = -1;
	mb->node = node;
	mb->flags = flags;
	if (free_huge_pages(node) >= huge / HUGE_SIZE) {
		mb->size = huge;
		mb->chunk_size = HUGE_SIZE;
		ret = fill(mb, MFD_HUGETLB);
		if (!ret)
			goto done;
		if (mb->fd >= 0)
			close(mb->fd);
		mb->fd = -1;
		memset(mb->node_bytes, 0, sizeof(mb->node_bytes));
	}
	mb->size = (size + page - 1) & ~(page - 1);
	mb->chunk_size = (uint32_t)page;
	ret = fill(mb, 0);
	if (ret)
		goto err;
done:
	if (fstat(mb->fd, &st)) {
		ret = -errno;
		goto err;
	}
	mb->dev = st.st_dev;
	mb->ino = st.st_ino;
	*out = mb;
	return 0;
err:
	shxd_membuf_destroy(mb);
	return ret;
}

void shxd_membuf_destroy(struct shxd_membuf *mb)
{
	if (!mb)
		return;
	if (mb->fd >= 0)
		close(mb->fd);
	free(mb);
}
