// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * syshax.ko buffers through raw ioctls on /dev/syshax: NUMA placement,
 * mmap, pinning by others (BUF_REGISTER, O_DIRECT), accounting, limits and
 * errnos. Runs in the VM (make vm-check); exits 77 without the device.
 */
#include <grp.h>
#include <limits.h>
#include <hugetlbfs.h>
#include <pthread.h>
#include <numa.h>
#include <numaif.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "t_kmod.h"

#define T_SIZE	(4 * T_MIB)
#define T_PARAM	"/sys/module/syshax/parameters/max_pinned_mb"


/* In the VM everything a test needs is there: a missing piece fails. */
static void t_skip(const char *what)
{
	if (getenv("SYSHAX_VM"))
		CU_FAIL_FATAL("missing in the VM (see stdout)");
	printf("\n*** SKIP: %s ***\n", what);
}

static void test_version(void)
{
	struct syshax_version_args v;

	memset(&v, 0xff, sizeof(v));
	CU_ASSERT_EQUAL_FATAL(t_ioctl(g_fd, SYSHAX_IOC_VERSION, &v), 0);
	CU_ASSERT_EQUAL(v.uapi_version, SYSHAX_UAPI_VERSION);
	CU_ASSERT_EQUAL(v.features & (SYSHAX_FEAT_BUF | SYSHAX_FEAT_DMABUF |
				      SYSHAX_FEAT_REGISTER),
			SYSHAX_FEAT_BUF | SYSHAX_FEAT_DMABUF | SYSHAX_FEAT_REGISTER);
	CU_ASSERT_EQUAL(v.chunk_size, SYSHAX_CHUNK_SIZE);
	CU_ASSERT_EQUAL(v.max_buf_size, 1ULL << 40);
	CU_ASSERT_EQUAL(v.max_refs, SYSHAX_JOB_MAX_REFS);
	CU_ASSERT(v.nr_nodes >= (uint32_t)numa_max_node() + 1);
	CU_ASSERT(v.max_pinned > 0);
	for (int i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(v.reserved[i], 0);
}

/* Reads a per-node sysfs file (one number per node) into v. */
static int t_sysfs_nodes(const char *name, long long v[SYSHAX_MAX_NODES])
{
	char path[128];
	int n = 0;
	FILE *f;

	memset(v, 0, SYSHAX_MAX_NODES * sizeof(v[0]));
	snprintf(path, sizeof(path), T_SYSFS "%s", name);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (n < SYSHAX_MAX_NODES && fscanf(f, "%lld", &v[n]) == 1)
		n++;
	fclose(f);
	return n >= numa_max_node() + 1 ? 0 : -EINVAL;
}

/* Allocates on node, checks placement with move_pages(2) and BUF_INFO. */
static void t_alloc_on(int node)
{
	enum { NPAGES = T_SIZE / 4096 };
	static void *pages[NPAGES];
	static int status[NPAGES];
	long long before[SYSHAX_MAX_NODES], after[SYSHAX_MAX_NODES];
	struct syshax_buf_alloc_args a;
	struct syshax_buf_info_args info;
	uint8_t *p;
	int bad = 0;

	if (node > numa_max_node()) {
		t_skip("this machine has no NUMA node 1");
		return;
	}
	CU_ASSERT_EQUAL_FATAL(t_sysfs_nodes("node_pinned_bytes", before), 0);
	CU_ASSERT_EQUAL_FATAL(t_alloc(g_fd, T_SIZE, node, 0, &a), 0);
	CU_ASSERT_EQUAL(a.size, T_SIZE);
	CU_ASSERT_EQUAL(t_sysfs_nodes("node_pinned_bytes", after), 0);
	CU_ASSERT_EQUAL(after[node], before[node] + (long long)T_SIZE);
	CU_ASSERT_EQUAL(after[!node], before[!node]);
	CU_ASSERT(a.handle != 0);
	CU_ASSERT(a.id != 0);
	p = t_map(g_fd, a.mmap_offset, T_SIZE);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	for (int i = 0; i < NPAGES; i++) {
		pages[i] = p + (size_t)i * 4096;
		status[i] = -1;
	}
	CU_ASSERT_EQUAL(move_pages(0, NPAGES, pages, NULL, status, 0), 0);
	for (int i = 0; i < NPAGES; i++)
		bad += status[i] != node;
	CU_ASSERT_EQUAL(bad, 0);

	CU_ASSERT_EQUAL_FATAL(t_info(g_fd, a.handle, &info), 0);
	CU_ASSERT_EQUAL(info.kind, SYSHAX_BUF_KIND_ALLOC);
	CU_ASSERT_EQUAL(info.size, T_SIZE);
	CU_ASSERT_EQUAL(info.mmap_offset, a.mmap_offset);
	CU_ASSERT_EQUAL(info.id, a.id);
	CU_ASSERT_EQUAL(info.chunk_size, SYSHAX_CHUNK_SIZE);
	CU_ASSERT_EQUAL(info.nr_chunks, 2);
	CU_ASSERT_EQUAL(info.node, node);
	CU_ASSERT_EQUAL(info.flags, 0);
	for (int n = 0; n < SYSHAX_MAX_NODES; n++)
		CU_ASSERT_EQUAL(info.node_bytes[n], n == node ? T_SIZE : 0);
	CU_ASSERT_EQUAL(munmap(p, T_SIZE), 0);
	CU_ASSERT_EQUAL(t_free(g_fd, a.handle), 0);
}

static void test_alloc_node0(void)
{
	t_alloc_on(0);
}

static void test_alloc_node1(void)
{
	t_alloc_on(1);
}

/* node -1: the caller's node, reported as asked; bytes all on one node. */
static void test_alloc_local(void)
{
	struct syshax_buf_alloc_args a;
	struct syshax_buf_info_args info;
	uint64_t sum = 0;

	CU_ASSERT_EQUAL_FATAL(t_alloc(g_fd, T_SIZE, -1, 0, &a), 0);
	CU_ASSERT_EQUAL_FATAL(t_info(g_fd, a.handle, &info), 0);
	CU_ASSERT_EQUAL(info.node, -1);
	for (int n = 0; n < SYSHAX_MAX_NODES; n++) {
		CU_ASSERT(info.node_bytes[n] == 0 || info.node_bytes[n] == T_SIZE);
		sum += info.node_bytes[n];
	}
	CU_ASSERT_EQUAL(sum, T_SIZE);
	CU_ASSERT_EQUAL(t_free(g_fd, a.handle), 0);
}

/* The fallback flags are accepted and reported back. */
static void test_alloc_flags(void)
{
	struct syshax_buf_alloc_args a;
	struct syshax_buf_info_args info;

	CU_ASSERT_EQUAL_FATAL(t_alloc(g_fd, T_SIZE, 0, SYSHAX_BUF_ALLOC_FLAGS,
				      &a), 0);
	CU_ASSERT_EQUAL_FATAL(t_info(g_fd, a.handle, &info), 0);
	CU_ASSERT_EQUAL(info.flags, SYSHAX_BUF_ALLOC_FLAGS);
	CU_ASSERT_EQUAL(info.size, T_SIZE);
	CU_ASSERT_EQUAL(t_free(g_fd, a.handle), 0);
}

/* 3 MiB: one 2 MiB chunk and one 1 MiB chunk, 3 MiB pinned exactly. */
static void test_alloc_tail(void)
{
	struct syshax_buf_alloc_args a;
	struct syshax_buf_info_args info;
	uint64_t before = t_pinned(g_fd);

	CU_ASSERT_EQUAL_FATAL(t_alloc(g_fd, 3 * T_MIB - 100, 0, 0, &a), 0);
	CU_ASSERT_EQUAL(a.size, 3 * T_MIB);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before + 3 * T_MIB);
	CU_ASSERT_EQUAL_FATAL(t_info(g_fd, a.handle, &info), 0);
	CU_ASSERT_EQUAL(info.nr_chunks, 2);
	CU_ASSERT_EQUAL(info.chunk_size, SYSHAX_CHUNK_SIZE);
	CU_ASSERT_EQUAL(info.node_bytes[0], 3 * T_MIB);
	CU_ASSERT_EQUAL(t_free(g_fd, a.handle), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before);
}

/*
 * A tail that is no power of two: 3.5 MiB is 2 + 1 + 0.5 MiB, pinned
 * exactly, not a 2 MiB piece for the last 1.5 MiB.
 */
static void test_alloc_odd_tail(void)
{
	struct syshax_buf_alloc_args a;
	struct syshax_buf_info_args info;
	uint64_t before = t_pinned(g_fd);

	CU_ASSERT_EQUAL_FATAL(t_alloc(g_fd, 7 * T_MIB / 2, 0, 0, &a), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before + 7 * T_MIB / 2);
	CU_ASSERT_EQUAL_FATAL(t_info(g_fd, a.handle, &info), 0);
	CU_ASSERT_EQUAL(info.nr_chunks, 3);
	CU_ASSERT_EQUAL(info.node_bytes[0], 7 * T_MIB / 2);
	CU_ASSERT_EQUAL(t_free(g_fd, a.handle), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before);
}

/* Zeroed at alloc; two mappings of one buffer see the same bytes. */
static void test_mmap_rw(void)
{
	struct syshax_buf_alloc_args a;
	uint8_t *p, *q;
	size_t nonzero = 0;

	CU_ASSERT_EQUAL_FATAL(t_alloc(g_fd, T_SIZE, 0, 0, &a), 0);
	p = t_map(g_fd, a.mmap_offset, T_SIZE);
	q = t_map(g_fd, a.mmap_offset, T_SIZE);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_PTR_NOT_NULL_FATAL(q);
	CU_ASSERT_PTR_NOT_EQUAL(p, q);
	for (size_t i = 0; i < T_SIZE; i++)
		nonzero += p[i] != 0;
	CU_ASSERT_EQUAL(nonzero, 0);
	t_fill(p, T_SIZE, 1);
	CU_ASSERT_EQUAL(t_check(q, T_SIZE, 1), T_SIZE);
	t_fill(q, T_SIZE, 2);
	CU_ASSERT_EQUAL(t_check(p, T_SIZE, 2), T_SIZE);
	/* Zapped pages come back on the next touch: the same memory. */
	CU_ASSERT_EQUAL(madvise(p, T_SIZE, MADV_DONTNEED), 0);
	CU_ASSERT_EQUAL(t_check(p, T_SIZE, 2), T_SIZE);
	t_fill(p, T_SIZE, 11);
	CU_ASSERT_EQUAL(t_check(q, T_SIZE, 11), T_SIZE);
	CU_ASSERT_EQUAL(munmap(p, T_SIZE), 0);
	CU_ASSERT_EQUAL(munmap(q, T_SIZE), 0);
	CU_ASSERT_EQUAL(t_free(g_fd, a.handle), 0);
}

static int t_map_errno(uint64_t offset, size_t len, int flags)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, g_fd,
		       (off_t)offset);

	if (p != MAP_FAILED) {
		munmap(p, len);
		return 0;
	}
	return -errno;
}

/* Bounds: the buffer's pages and nothing else, shared mappings only. */
static void test_mmap_bounds(void)
{
	struct syshax_buf_alloc_args a;
	uint8_t *p, *one;
	void *grown;

	CU_ASSERT_EQUAL_FATAL(t_alloc(g_fd, T_SIZE, 0, 0, &a), 0);
	CU_ASSERT_EQUAL(t_map_errno(a.mmap_offset, T_SIZE + 4096, MAP_SHARED),
			-EINVAL);
	CU_ASSERT_EQUAL(t_map_errno(a.mmap_offset + T_SIZE, 4096, MAP_SHARED),
			-EINVAL);
	CU_ASSERT_EQUAL(t_map_errno(a.mmap_offset + 4096, T_SIZE, MAP_SHARED),
			-EINVAL);
	CU_ASSERT_EQUAL(t_map_errno(0, 4096, MAP_SHARED), -EINVAL);
	CU_ASSERT_EQUAL(t_map_errno(a.mmap_offset + (1000ULL << 40), 4096,
				    MAP_SHARED), -EINVAL);
	CU_ASSERT_EQUAL(t_map_errno(a.mmap_offset, T_SIZE, MAP_PRIVATE),
			-EINVAL);

	/* A window inside the buffer maps the pages at its offset. */
	p = t_map(g_fd, a.mmap_offset, T_SIZE);
	one = t_map(g_fd, a.mmap_offset + 2 * T_MIB + 4096, 4096);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_PTR_NOT_NULL_FATAL(one);
	t_fill(one, 4096, 3);
	CU_ASSERT_EQUAL(t_check(p + 2 * T_MIB + 4096, 4096, 3), 4096);
	/* VM_DONTEXPAND: the mapping cannot grow past the buffer. */
	grown = mremap(p, T_SIZE, 2 * T_SIZE, MREMAP_MAYMOVE);
	CU_ASSERT_PTR_EQUAL(grown, MAP_FAILED);
	CU_ASSERT_EQUAL(munmap(one, 4096), 0);
	CU_ASSERT_EQUAL(munmap(p, T_SIZE), 0);
	CU_ASSERT_EQUAL(t_free(g_fd, a.handle), 0);
	/* A freed handle's offset maps nothing. */
	CU_ASSERT_EQUAL(t_map_errno(a.mmap_offset, 4096, MAP_SHARED), -EINVAL);
}

/* Each piece of a split mapping holds the buffer until it goes. */
static void test_mmap_split_lifetime(void)
{
	struct syshax_buf_alloc_args a;
	uint64_t before = t_pinned(g_fd);
	uint8_t *p;

	CU_ASSERT_EQUAL_FATAL(t_alloc(g_fd, T_SIZE, 0, 0, &a), 0);
	p = t_map(g_fd, a.mmap_offset, T_SIZE);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	t_fill(p, T_SIZE, 4);
	CU_ASSERT_EQUAL(munmap(p + T_MIB, 4096), 0);
	CU_ASSERT_EQUAL(t_free(g_fd, a.handle), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before + T_SIZE);
	CU_ASSERT_EQUAL(t_check(p, T_MIB, 4), T_MIB);
	CU_ASSERT_EQUAL(munmap(p, T_MIB), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before + T_SIZE);
	CU_ASSERT_EQUAL(p[T_SIZE - 1], t_pat(T_SIZE - 1, 4));
	CU_ASSERT_EQUAL(munmap(p + T_MIB + 4096, T_SIZE - T_MIB - 4096), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before);
}

/* A forked child shares the mapping; its copy holds the buffer too. */
static void test_mmap_fork(void)
{
	struct syshax_buf_alloc_args a;
	uint64_t before = t_pinned(g_fd);
	int status = -1;
	uint8_t *p;
	pid_t pid;

	CU_ASSERT_EQUAL_FATAL(t_alloc(g_fd, T_SIZE, 0, 0, &a), 0);
	p = t_map(g_fd, a.mmap_offset, T_SIZE);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		t_fill(p, T_SIZE, 10);
		_exit(0);
	}
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CU_ASSERT_EQUAL(t_check(p, T_SIZE, 10), T_SIZE);
	CU_ASSERT_EQUAL(t_free(g_fd, a.handle), 0);
	CU_ASSERT_EQUAL(munmap(p, T_SIZE), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before);
}

/*
 * The mapping is pinnable as an xPU driver pins host memory: BUF_REGISTER
 * (pin_user_pages_fast, FOLL_LONGTERM) of a range inside it aliases the same
 * bytes, and keeps them after the first buffer is gone.
 */
static void test_register_inside_mapping(void)
{
	struct syshax_buf_register_args r = { 0 };
	struct syshax_buf_alloc_args a;
	struct syshax_buf_info_args info;
	uint64_t before = t_pinned(g_fd);
	uint8_t *p, *q;

	CU_ASSERT_EQUAL_FATAL(t_alloc(g_fd, T_SIZE, 0, 0, &a), 0);
	p = t_map(g_fd, a.mmap_offset, T_SIZE);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	/* 1 MiB .. 3 MiB: across the boundary of the two chunks. */
	r.addr = (uintptr_t)(p + T_MIB);
	r.size = 2 * T_MIB;
	CU_ASSERT_EQUAL_FATAL(t_ioctl(g_fd, SYSHAX_IOC_BUF_REGISTER, &r), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before + T_SIZE + 2 * T_MIB);
	CU_ASSERT_EQUAL_FATAL(t_info(g_fd, r.handle, &info), 0);
	CU_ASSERT_EQUAL(info.kind, SYSHAX_BUF_KIND_REGISTERED);
	CU_ASSERT_EQUAL(info.size, 2 * T_MIB);
	CU_ASSERT_EQUAL(info.id, r.id);
	/* Two 1 MiB runs, or one 2 MiB run when the chunks are adjacent. */
	CU_ASSERT(info.nr_chunks == 1 || info.nr_chunks == 2);
	CU_ASSERT_EQUAL(info.chunk_size, 2 * T_MIB / info.nr_chunks);
	CU_ASSERT_EQUAL(info.node_bytes[0], 2 * T_MIB);

	q = t_map(g_fd, r.mmap_offset, 2 * T_MIB);
	CU_ASSERT_PTR_NOT_NULL_FATAL(q);
	t_fill(q, 2 * T_MIB, 5);
	CU_ASSERT_EQUAL(t_check(p + T_MIB, 2 * T_MIB, 5), 2 * T_MIB);
	t_fill(p + T_MIB, 2 * T_MIB, 6);
	CU_ASSERT_EQUAL(t_check(q, 2 * T_MIB, 6), 2 * T_MIB);

	/* The pin outlives the buffer it came from. */
	CU_ASSERT_EQUAL(munmap(p, T_SIZE), 0);
	CU_ASSERT_EQUAL(t_free(g_fd, a.handle), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before + 2 * T_MIB);
	CU_ASSERT_EQUAL(t_check(q, 2 * T_MIB, 6), 2 * T_MIB);
	CU_ASSERT_EQUAL(munmap(q, 2 * T_MIB), 0);
	CU_ASSERT_EQUAL(t_free(g_fd, r.handle), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before);
}

/* O_DIRECT reads DMA into the mapping through get_user_pages. */
static void test_odirect_read(void)
{
	const char *disk = getenv("SYSHAX_VM_DISK");
	struct syshax_buf_alloc_args a;
	size_t bad = 0;
	uint8_t *p;
	int dfd;

	dfd = open(disk ? disk : "/dev/vda", O_RDONLY | O_DIRECT);
	if (dfd < 0) {
		t_skip("no test disk (byte i = i % 251) at $SYSHAX_VM_DISK");
		return;
	}
	CU_ASSERT_EQUAL_FATAL(t_alloc(g_fd, T_SIZE, 0, 0, &a), 0);
	p = t_map(g_fd, a.mmap_offset, T_SIZE);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	/* The whole buffer, across its chunk boundary. */
	CU_ASSERT_EQUAL(pread(dfd, p, T_SIZE, 0), (ssize_t)T_SIZE);
	for (size_t i = 0; i < T_SIZE; i++)
		bad += p[i] != i % 251;
	CU_ASSERT_EQUAL(bad, 0);
	/* An unaligned file offset lands where asked. */
	memset(p, 0, T_SIZE);
	CU_ASSERT_EQUAL(pread(dfd, p + 8192, T_MIB, 4096 * 3), (ssize_t)T_MIB);
	for (size_t i = 0; i < T_MIB; i++)
		bad += p[8192 + i] != (i + 4096 * 3) % 251;
	for (size_t i = 0; i < 8192; i++)
		bad += p[i] != 0;
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(munmap(p, T_SIZE), 0);
	CU_ASSERT_EQUAL(t_free(g_fd, a.handle), 0);
	close(dfd);
}

/* The counter goes back to exactly where it was: free, close, munmap. */
static void test_pinned_counter(void)
{
	struct syshax_buf_alloc_args a, b;
	uint64_t before = t_pinned(g_fd);
	long long bufs = t_sysfs("nr_bufs");
	uint8_t *p;
	int fd2;

	CU_ASSERT_EQUAL(t_sysfs("pinned_bytes"), (long long)before);
	CU_ASSERT_EQUAL_FATAL(t_alloc(g_fd, T_SIZE, 0, 0, &a), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before + T_SIZE);
	CU_ASSERT_EQUAL(t_sysfs("pinned_bytes"), (long long)(before + T_SIZE));
	CU_ASSERT_EQUAL(t_sysfs("nr_bufs"), bufs + 1);
	CU_ASSERT_EQUAL(t_free(g_fd, a.handle), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before);
	CU_ASSERT_EQUAL(t_sysfs("nr_bufs"), bufs);

	/* Close without free. */
	fd2 = t_open();
	CU_ASSERT_FATAL(fd2 >= 0);
	CU_ASSERT_EQUAL(t_alloc(fd2, T_SIZE, 0, 0, &a), 0);
	CU_ASSERT_EQUAL(t_alloc(fd2, 2 * T_MIB, -1, 0, &b), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before + T_SIZE + 2 * T_MIB);
	CU_ASSERT_EQUAL(close(fd2), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before);

	/* Close with a live mapping: the mapping holds the buffer. */
	fd2 = t_open();
	CU_ASSERT_FATAL(fd2 >= 0);
	CU_ASSERT_EQUAL_FATAL(t_alloc(fd2, T_SIZE, 0, 0, &a), 0);
	p = t_map(fd2, a.mmap_offset, T_SIZE);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_EQUAL(close(fd2), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before + T_SIZE);
	t_fill(p, T_SIZE, 7);
	CU_ASSERT_EQUAL(t_check(p, T_SIZE, 7), T_SIZE);
	CU_ASSERT_EQUAL(munmap(p, T_SIZE), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before);
	CU_ASSERT_EQUAL(t_sysfs("nr_bufs"), bufs);
}

/* A value into a sysfs or cgroup file: 0 or -errno. */
static int t_write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;
	int ret;

	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	/* A short write is a failure too, with errno unset. */
	ret = n < 0 ? -errno : n == (ssize_t)strlen(val) ? 0 : -EIO;
	close(fd);
	return ret;
}

/* max_pinned_mb caps all buffers together: over it, -ENOMEM. */
static void test_cap(void)
{
	struct syshax_buf_alloc_args a, b;
	struct syshax_version_args v;
	uint64_t before = t_pinned(g_fd), pg;
	char old[32] = "";
	FILE *f = fopen(T_PARAM, "r");

	if (!f || !fgets(old, sizeof(old), f) || access(T_PARAM, W_OK)) {
		if (f)
			fclose(f);
		t_skip("max_pinned_mb is not writable (needs root)");
		return;
	}
	fclose(f);
	CU_ASSERT_EQUAL_FATAL(before, 0);
	CU_ASSERT_EQUAL_FATAL(t_write_file(T_PARAM, "8"), 0);
	CU_ASSERT_EQUAL(t_ioctl(g_fd, SYSHAX_IOC_VERSION, &v), 0);
	CU_ASSERT_EQUAL(v.max_pinned, 8 * T_MIB);
	CU_ASSERT_EQUAL(t_alloc(g_fd, 16 * T_MIB, 0, 0, &a), -ENOMEM);
	CU_ASSERT_EQUAL(t_alloc(g_fd, 6 * T_MIB, 0, 0, &a), 0);
	/* Refused before a page is taken, not after 2 MiB up to the cap. */
	pg = t_pgalloc();
	CU_ASSERT_FATAL(pg != UINT64_MAX);
	CU_ASSERT_EQUAL(t_alloc(g_fd, 4 * T_MIB, 0, 0, &b), -ENOMEM);
	pg = t_pgalloc() - pg;
	printf("\n  pages allocated for a refused 4 MiB: %llu\n",
	       (unsigned long long)pg);
	CU_ASSERT(pg < T_MIB / (uint64_t)sysconf(_SC_PAGESIZE));
	CU_ASSERT_EQUAL(t_pinned(g_fd), 6 * T_MIB);
	CU_ASSERT_EQUAL(t_alloc(g_fd, 2 * T_MIB, 0, 0, &b), 0);
	CU_ASSERT_EQUAL(t_free(g_fd, b.handle), 0);
	CU_ASSERT_EQUAL(t_free(g_fd, a.handle), 0);
	CU_ASSERT_EQUAL(t_write_file(T_PARAM, old), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), 0);
}

/* A node's meminfo field (MemFree, FilePages) in bytes; 0 when unknown. */
static uint64_t t_node_mem(int node, const char *field)
{
	char path[96], line[160], fmt[64];
	unsigned long long kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/meminfo",
		 node);
	snprintf(fmt, sizeof(fmt), "Node %%*d %s: %%llu kB", field);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, fmt, &kb) == 1)
			break;
	fclose(f);
	return kb << 10;
}

/* Node 1's MemFree once earlier frees have landed: memory the suites
 * before gave back can reach the free lists a little later, and would
 * then take part of the overflow meant for node 0. */
static uint64_t t_settled_free1(void)
{
	const struct timespec pause = { 0, 50 * 1000000L };
	uint64_t prev = 0, now = t_node_mem(1, "MemFree");

	for (int i = 0; i < 40 && now > prev + T_MIB; i++) {
		prev = now;
		nanosleep(&pause, NULL);
		now = t_node_mem(1, "MemFree");
	}
	return now;
}

/*
 * The nodes the kernel's zonelist for node src tries first after src
 * itself, as build_zonelists() orders them (mm/page_alloc.c, find_next_best_
 * node(), the same in 6.1 and 6.12): among the other nodes with memory, the
 * smallest distance from src (nodeN/distance), plus 1 for a node numbered
 * below src ("prefer the next node") and 1 for a node with CPUs (headless
 * nodes first). A tie on that sum is broken by node_load, a round-robin
 * count the kernel keeps while it builds every node's list at boot, which
 * userspace cannot see: all tied nodes are returned, as bits of the result.
 * Two nodes: the other one. Four with the two-socket distances of make
 * vm-check-arm64-4node: node 1 -> node 0 (12 + 1 + 1 against 22 + 1 and
 * 24 + 1). Four with QEMU's equal distances (all 20): node 1 -> nodes 2 and
 * 3 (node 0 pays for being below).
 */
static uint64_t t_fallback_nodes(int src)
{
	struct bitmask *cpus = numa_allocate_cpumask();
	int key[SYSHAX_MAX_NODES], best = INT_MAX;
	uint64_t set = 0;

	for (int n = 0; n <= numa_max_node() && n < SYSHAX_MAX_NODES; n++) {
		key[n] = INT_MAX;
		if (n == src || numa_node_size64(n, NULL) <= 0)
			continue;
		key[n] = numa_distance(src, n) + (n < src);
		if (!numa_node_to_cpus(n, cpus) && numa_bitmask_weight(cpus))
			key[n]++;
		if (key[n] < best)
			best = key[n];
	}
	for (int n = 0; n <= numa_max_node() && n < SYSHAX_MAX_NODES; n++)
		if (best != INT_MAX && key[n] == best)
			set |= 1ULL << n;
	numa_free_cpumask(cpus);
	return set;
}

/*
 * More than node 1 has free: without flags -ENOMEM; with ALLOW_REMOTE the
 * rest comes from where the kernel's fallback order for node 1 points
 * (t_fallback_nodes: node 0 on two nodes, not on every layout of four).
 * With node 1 then out of 2 MiB blocks, ALLOW_SMALL alone never leaves
 * the node: it finds smaller pieces there or fails (which one depends on
 * what the node has left; the test prints it).
 */
static void test_alloc_fallback(void)
{
	struct syshax_buf_alloc_args a, b;
	struct syshax_buf_info_args info;
	uint64_t fb = numa_max_node() >= 1 ? t_fallback_nodes(1) : 0;
	uint64_t free1 = t_settled_free1(), fb_free = 0, fb_min = UINT64_MAX;
	uint64_t size, got, fb_bytes = 0;
	char old[32] = "", cap[32];
	FILE *f;
	int ret;

	if (!fb || !free1 || access(T_PARAM, W_OK)) {
		t_skip("needs two NUMA nodes with memory and root");
		return;
	}
	printf("\n  node 1 falls back to nodes");
	for (int n = 0; n < SYSHAX_MAX_NODES; n++) {
		uint64_t fr;

		if (!(fb >> n & 1))
			continue;
		fr = t_node_mem(n, "MemFree");
		fb_free += fr;
		if (fr < fb_min)
			fb_min = fr;
		printf(" %d", n);
	}
	printf("\n");
	/* Beyond what reclaiming node 1's page cache and reclaimable kernel
	 * memory (slab) could add, too, and the free pages the per-CPU lists
	 * hold, which MemFree does not count (node 1 gave 8 MiB more than
	 * MemFree and reclaim once, on four vCPUs): 128 MiB over, at least
	 * 64 MiB must land elsewhere. */
	size = (free1 + t_node_mem(1, "FilePages") +
		t_node_mem(1, "KReclaimable") + 128 * T_MIB) &
	       ~(SYSHAX_CHUNK_SIZE - 1);
	/* Any of the tied nodes must be able to take it all. */
	if (fb_min < 256 * T_MIB + size - free1) {
		t_skip("the fallback node lacks the memory to take the overflow");
		return;
	}
	f = fopen(T_PARAM, "r");
	CU_ASSERT_FATAL(f && fgets(old, sizeof(old), f));
	fclose(f);
	snprintf(cap, sizeof(cap), "%llu", (unsigned long long)(fb_free + free1) >> 20);
	CU_ASSERT_EQUAL_FATAL(t_write_file(T_PARAM, cap), 0);

	CU_ASSERT_EQUAL(t_alloc(g_fd, size, 1, 0, &a), -ENOMEM);
	CU_ASSERT_EQUAL(t_pinned(g_fd), 0);
	ret = t_alloc(g_fd, size, 1, SYSHAX_BUF_ALLOW_REMOTE, &a);
	CU_ASSERT_EQUAL(ret, 0);
	if (!ret) {
		CU_ASSERT_EQUAL(t_info(g_fd, a.handle, &info), 0);
		got = info.node_bytes[1];
		for (int n = 0; n < SYSHAX_MAX_NODES; n++) {
			if (fb >> n & 1)
				fb_bytes += info.node_bytes[n];
			if (n != 1 && info.node_bytes[n])
				printf("  overflow on node %d: %llu MiB\n", n,
				       (unsigned long long)(info.node_bytes[n] >> 20));
		}
		/* Nothing on a node the fallback order does not try first. */
		CU_ASSERT_EQUAL(got + fb_bytes, size);
		CU_ASSERT(fb_bytes >= 64 * T_MIB);
		CU_ASSERT(got > 0);
		CU_ASSERT_EQUAL(info.chunk_size, SYSHAX_CHUNK_SIZE);
		ret = t_alloc(g_fd, SYSHAX_CHUNK_SIZE, 1, SYSHAX_BUF_ALLOW_SMALL, &b);
		CU_ASSERT(ret == 0 || ret == -ENOMEM);
		if (!ret) {
			CU_ASSERT_EQUAL(t_info(g_fd, b.handle, &info), 0);
			CU_ASSERT_EQUAL(info.node_bytes[1], SYSHAX_CHUNK_SIZE);
			printf("\n  ALLOW_SMALL on exhausted node 1: %u pieces, largest %u\n",
			       info.nr_chunks, info.chunk_size);
			CU_ASSERT_EQUAL(t_free(g_fd, b.handle), 0);
		} else {
			printf("\n  ALLOW_SMALL on exhausted node 1: -ENOMEM\n");
		}
		CU_ASSERT_EQUAL(t_free(g_fd, a.handle), 0);
	}
	CU_ASSERT_EQUAL(t_write_file(T_PARAM, old), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), 0);
}

/*
 * Without CAP_IPC_LOCK, pinned memory counts against RLIMIT_MEMLOCK: over
 * it, BUF_ALLOC and BUF_REGISTER fail with -ENOMEM. The child reports each
 * check as a bit of its exit status.
 */
static void test_rlimit_unprivileged(void)
{
	uint64_t before = t_pinned(g_fd);
	int status = -1;
	pid_t pid;

	if (geteuid() != 0) {
		t_skip("dropping to an unprivileged user needs root");
		return;
	}
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = { T_MIB, T_MIB };
		struct syshax_buf_register_args r = { 0 };
		struct syshax_buf_alloc_args a;
		int code = 0;
		void *anon;

		if (setrlimit(RLIMIT_MEMLOCK, &rl) || setgroups(0, NULL) ||
		    setgid(65534) || setuid(65534))
			_exit(100);
		anon = mmap(NULL, 2 * T_MIB, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (anon == MAP_FAILED)
			_exit(101);
		if (t_alloc(g_fd, 2 * T_MIB, 0, 0, &a) != -ENOMEM)
			code |= 1;
		r.addr = (uintptr_t)anon;
		r.size = 2 * T_MIB;
		if (t_ioctl(g_fd, SYSHAX_IOC_BUF_REGISTER, &r) != -ENOMEM)
			code |= 2;
		/* Under the limit it works, and the charge is returned. */
		if (t_alloc(g_fd, 512 * 1024, 0, 0, &a) != 0)
			code |= 4;
		else if (t_free(g_fd, a.handle) != 0)
			code |= 8;
		if (t_alloc(g_fd, 1024 * 1024, 0, 0, &a) != 0)
			code |= 16;
		else if (t_free(g_fd, a.handle) != 0)
			code |= 32;
		_exit(code);
	}
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	CU_ASSERT(WIFEXITED(status));
	CU_ASSERT_EQUAL(WEXITSTATUS(status), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before);
}

#define T_CG	"/sys/fs/cgroup"
#define T_CG_T	T_CG "/syshax-test"

/* A number from a file, without malloc (the memcg child counts its pages). */
static long long t_read_ll(const char *path)
{
	char buf[32];
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return strtoll(buf, NULL, 10);
}

/* The memory cgroup v2 hierarchy with a 64 MiB test group, or an errno. */
static int t_memcg_setup(void)
{
	if (access(T_CG "/cgroup.controllers", R_OK) &&
	    mount("cgroup2", T_CG, "cgroup2", 0, NULL))
		return -errno;
	if (t_write_file(T_CG "/cgroup.subtree_control", "+memory"))
		return -EOPNOTSUPP;
	if (mkdir(T_CG_T, 0755) && errno != EEXIST)
		return -errno;
	return t_write_file(T_CG_T "/memory.max", "67108864");
}

/*
 * Buffer pages are charged to the caller's memory cgroup: over its
 * memory.max the allocation fails with -ENOMEM (no OOM kill), and the
 * charge goes when the buffer does. The child reports bits as its status.
 */
static void test_memcg(void)
{
	uint64_t before = t_pinned(g_fd);
	int status = -1;
	pid_t pid;

	if (geteuid() != 0 || t_memcg_setup()) {
		t_skip("no cgroup v2 memory controller to test with");
		return;
	}
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		struct syshax_buf_alloc_args a;
		char self[32];
		long long cur0, cur1;
		int code = 0;
		uint8_t *p;

		snprintf(self, sizeof(self), "%d", getpid());
		if (t_write_file(T_CG_T "/cgroup.procs", self))
			_exit(100);
		cur0 = t_read_ll(T_CG_T "/memory.current");
		if (t_alloc(g_fd, 128 * T_MIB, 0, 0, &a) != -ENOMEM)
			code |= 1;
		if (t_alloc(g_fd, T_SIZE, 0, 0, &a))
			_exit(code | 2);
		p = t_map(g_fd, a.mmap_offset, T_SIZE);
		if (!p)
			_exit(code | 4);
		t_fill(p, T_SIZE, 12);
		cur1 = t_read_ll(T_CG_T "/memory.current");
		if (cur1 < cur0 + (long long)T_SIZE)
			code |= 8;
		munmap(p, T_SIZE);
		if (t_free(g_fd, a.handle))
			code |= 16;
		/* Slack: per-cpu charge caches and the child's own page faults. */
		if (t_read_ll(T_CG_T "/memory.current") >
		    cur1 - (long long)T_SIZE + (long long)T_MIB)
			code |= 32;
		_exit(code);
	}
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	CU_ASSERT(WIFEXITED(status));
	if (WEXITSTATUS(status))
		printf("\n  memcg child: status %d\n", WEXITSTATUS(status));
	CU_ASSERT_EQUAL(WEXITSTATUS(status), 0);
	CU_ASSERT_EQUAL(rmdir(T_CG_T), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before);
}

/* Every documented errno of the buffer ioctls. */
static void test_errnos(void)
{
	struct syshax_buf_register_args r;
	struct syshax_buf_export_args e;
	struct syshax_buf_import_args im;
	struct syshax_buf_alloc_args a;
	struct syshax_buf_free_args f;
	struct syshax_buf_info_args info;
	struct syshax_version_args v;
	uint64_t before = t_pinned(g_fd);
	int pipefd[2];
	uint8_t *ro;

	CU_ASSERT_EQUAL_FATAL(t_ioctl(g_fd, SYSHAX_IOC_VERSION, &v), 0);
	/* BUF_ALLOC */
	CU_ASSERT_EQUAL(t_alloc(g_fd, T_MIB, 0, 1U << 7, &a), -EINVAL);
	memset(&a, 0, sizeof(a));
	a.size = T_MIB;
	a.pad = 1;
	CU_ASSERT_EQUAL(t_ioctl(g_fd, SYSHAX_IOC_BUF_ALLOC, &a), -EINVAL);
	CU_ASSERT_EQUAL(t_alloc(g_fd, 0, 0, 0, &a), -EINVAL);
	CU_ASSERT_EQUAL(t_alloc(g_fd, UINT64_MAX, 0, 0, &a), -EINVAL);
	CU_ASSERT_EQUAL(t_alloc(g_fd, UINT64_MAX - 100, 0, 0, &a), -EINVAL);
	CU_ASSERT_EQUAL(t_alloc(g_fd, v.max_buf_size + 1, 0, 0, &a), -EINVAL);
	CU_ASSERT_EQUAL(t_alloc(g_fd, v.max_pinned + 4096, 0, 0, &a), -ENOMEM);
	CU_ASSERT_EQUAL(t_alloc(g_fd, T_MIB, -2, 0, &a), -EINVAL);
	CU_ASSERT_EQUAL(t_alloc(g_fd, T_MIB, (int)v.nr_nodes, 0, &a), -EINVAL);
	CU_ASSERT_EQUAL(t_alloc(g_fd, T_MIB, 1000, 0, &a), -EINVAL);
	/* BUF_FREE, BUF_INFO */
	CU_ASSERT_EQUAL(t_free(g_fd, 0), -EBADF);
	CU_ASSERT_EQUAL(t_free(g_fd, 123456), -EBADF);
	CU_ASSERT_EQUAL(t_free(g_fd, UINT32_MAX), -EBADF);
	CU_ASSERT_EQUAL(t_info(g_fd, 123456, &info), -EBADF);
	CU_ASSERT_EQUAL_FATAL(t_alloc(g_fd, T_MIB, 0, 0, &a), 0);
	f.handle = a.handle;
	f.pad = 1;
	CU_ASSERT_EQUAL(t_ioctl(g_fd, SYSHAX_IOC_BUF_FREE, &f), -EINVAL);
	CU_ASSERT_EQUAL(t_free(g_fd, a.handle), 0);
	CU_ASSERT_EQUAL(t_free(g_fd, a.handle), -EBADF);
	CU_ASSERT_EQUAL(t_info(g_fd, a.handle, &info), -EBADF);
	/* BUF_REGISTER */
	ro = mmap(NULL, 8192, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CU_ASSERT_FATAL(ro != MAP_FAILED);
	memset(&r, 0, sizeof(r));
	r.addr = (uintptr_t)ro;
	r.size = 4096;
	r.flags = 1;
	CU_ASSERT_EQUAL(t_ioctl(g_fd, SYSHAX_IOC_BUF_REGISTER, &r), -EINVAL);
	r.flags = 0;
	r.addr = (uintptr_t)ro + 1;
	CU_ASSERT_EQUAL(t_ioctl(g_fd, SYSHAX_IOC_BUF_REGISTER, &r), -EINVAL);
	r.addr = (uintptr_t)ro;
	r.size = 100;
	CU_ASSERT_EQUAL(t_ioctl(g_fd, SYSHAX_IOC_BUF_REGISTER, &r), -EINVAL);
	r.size = 0;
	CU_ASSERT_EQUAL(t_ioctl(g_fd, SYSHAX_IOC_BUF_REGISTER, &r), -EINVAL);
	r.addr = UINT64_MAX & ~4095ULL;
	r.size = 8192;
	CU_ASSERT_EQUAL(t_ioctl(g_fd, SYSHAX_IOC_BUF_REGISTER, &r), -EINVAL);
	/* Read-only memory cannot be pinned for device writes. */
	r.addr = (uintptr_t)ro;
	r.size = 8192;
	CU_ASSERT_EQUAL(t_ioctl(g_fd, SYSHAX_IOC_BUF_REGISTER, &r), -EFAULT);
	CU_ASSERT_EQUAL(munmap(ro, 8192), 0);
	/* Nothing mapped there any more. */
	CU_ASSERT_EQUAL(t_ioctl(g_fd, SYSHAX_IOC_BUF_REGISTER, &r), -EFAULT);
	/* BUF_EXPORT */
	CU_ASSERT_EQUAL(t_export(g_fd, 123456, 0), -EBADF);
	CU_ASSERT_EQUAL_FATAL(t_alloc(g_fd, T_MIB, 0, 0, &a), 0);
	CU_ASSERT_EQUAL(t_export(g_fd, a.handle, 1U << 5), -EINVAL);
	memset(&e, 0, sizeof(e));
	e.handle = a.handle;
	e.pad = 1;
	CU_ASSERT_EQUAL(t_ioctl(g_fd, SYSHAX_IOC_BUF_EXPORT, &e), -EINVAL);
	CU_ASSERT_EQUAL(t_free(g_fd, a.handle), 0);
	/* BUF_IMPORT */
	CU_ASSERT_EQUAL(t_import(g_fd, -1, &im), -EBADF);
	CU_ASSERT_EQUAL(t_import(g_fd, 1000, &im), -EBADF);
	CU_ASSERT_EQUAL_FATAL(pipe(pipefd), 0);
	CU_ASSERT_EQUAL(t_import(g_fd, pipefd[0], &im), -EINVAL);
	memset(&im, 0, sizeof(im));
	im.fd = pipefd[0];
	im.flags = 1;
	CU_ASSERT_EQUAL(t_ioctl(g_fd, SYSHAX_IOC_BUF_IMPORT, &im), -EINVAL);
	im.flags = 0;
	im.pad = 1;
	CU_ASSERT_EQUAL(t_ioctl(g_fd, SYSHAX_IOC_BUF_IMPORT, &im), -EINVAL);
	close(pipefd[0]);
	close(pipefd[1]);
	/* Unknown command. */
	CU_ASSERT_EQUAL(t_ioctl(g_fd, _IO(SYSHAX_IOC_MAGIC, 0x7f), NULL),
			-ENOTTY);
	CU_ASSERT_EQUAL(t_ioctl(g_fd, _IOR('X', 0x01, int), &v), -ENOTTY);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before);
}

/*
 * A freed handle is not given out again at once: the next buffer gets a
 * new one, and the old handle and its mmap offset fail instead of naming
 * the new buffer.
 */
static void test_handle_reuse(void)
{
	struct syshax_buf_alloc_args a, b;
	struct syshax_buf_info_args info;
	uint64_t before = t_pinned(g_fd);
	uint8_t *p;

	CU_ASSERT_EQUAL_FATAL(t_alloc(g_fd, T_MIB, 0, 0, &a), 0);
	CU_ASSERT_EQUAL(t_free(g_fd, a.handle), 0);
	CU_ASSERT_EQUAL_FATAL(t_alloc(g_fd, T_MIB, 0, 0, &b), 0);
	CU_ASSERT_NOT_EQUAL(b.handle, a.handle);
	CU_ASSERT_NOT_EQUAL(b.mmap_offset, a.mmap_offset);
	p = t_map(g_fd, b.mmap_offset, T_MIB);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	t_fill(p, 4096, 3);
	/* The stale handle and offset. */
	CU_ASSERT_EQUAL(t_info(g_fd, a.handle, &info), -EBADF);
	CU_ASSERT_EQUAL(t_export(g_fd, a.handle, 0), -EBADF);
	CU_ASSERT_EQUAL(t_free(g_fd, a.handle), -EBADF);
	errno = 0;
	CU_ASSERT_PTR_NULL(t_map(g_fd, a.mmap_offset, T_MIB));
	CU_ASSERT_EQUAL(errno, EINVAL);
	/* Offsets naming no live handle, also past the handle range. */
	CU_ASSERT_PTR_NULL(t_map(g_fd, ((b.mmap_offset >> 40) + 16) << 40,
				 4096));
	CU_ASSERT_PTR_NULL(t_map(g_fd, 1ULL << 62, 4096));
	/* The live one still names b. */
	CU_ASSERT_EQUAL(t_info(g_fd, b.handle, &info), 0);
	CU_ASSERT_EQUAL(info.id, b.id);
	CU_ASSERT_EQUAL(info.mmap_offset, b.mmap_offset);
	CU_ASSERT_EQUAL(t_check(p, 4096, 3), 4096);
	CU_ASSERT_EQUAL(munmap(p, T_MIB), 0);
	CU_ASSERT_EQUAL(t_free(g_fd, b.handle), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before);
}

/*
 * A read-only fd pins nothing (BUF_ALLOC, BUF_REGISTER: -EBADF); it may
 * still import a buffer, but maps nothing.
 */
static void test_rdonly_fd(void)
{
	struct syshax_buf_register_args r;
	struct syshax_buf_import_args im;
	struct syshax_buf_alloc_args a;
	struct syshax_version_args v;
	uint64_t before = t_pinned(g_fd);
	int ro = open(T_DEV, O_RDONLY | O_CLOEXEC), d;
	uint8_t *mem, *p;

	CU_ASSERT_FATAL(ro >= 0);
	CU_ASSERT_EQUAL(t_ioctl(ro, SYSHAX_IOC_VERSION, &v), 0);
	CU_ASSERT_EQUAL(t_alloc(ro, T_MIB, 0, 0, &a), -EBADF);
	CU_ASSERT_EQUAL(t_alloc(ro, T_MIB, -1, SYSHAX_BUF_ALLOW_SMALL |
				SYSHAX_BUF_ALLOW_REMOTE, &a), -EBADF);
	mem = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	CU_ASSERT_FATAL(mem != MAP_FAILED);
	memset(&r, 0, sizeof(r));
	r.addr = (uintptr_t)mem;
	r.size = 8192;
	CU_ASSERT_EQUAL(t_ioctl(ro, SYSHAX_IOC_BUF_REGISTER, &r), -EBADF);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before);
	/*
	 * Import pins nothing more: allowed. No mapping through this fd: the
	 * kernel makes its shared mappings private ones, which syshax refuses.
	 */
	CU_ASSERT_EQUAL_FATAL(t_alloc(g_fd, T_MIB, 0, 0, &a), 0);
	p = t_map(g_fd, a.mmap_offset, 4096);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	d = t_export(g_fd, a.handle, SYSHAX_EXPORT_CLOEXEC);
	CU_ASSERT_FATAL(d >= 0);
	CU_ASSERT_EQUAL_FATAL(t_import(ro, d, &im), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before + T_MIB);
	errno = 0;
	CU_ASSERT_PTR_NULL(t_map(ro, im.mmap_offset, 4096));
	CU_ASSERT_EQUAL(errno, EACCES);
	errno = 0;
	CU_ASSERT_EQUAL(mmap(NULL, 4096, PROT_READ, MAP_SHARED, ro,
			     (off_t)im.mmap_offset), MAP_FAILED);
	CU_ASSERT_EQUAL(errno, EINVAL);
	CU_ASSERT_EQUAL(t_free(ro, im.handle), 0);
	close(d);
	CU_ASSERT_EQUAL(munmap(p, 4096), 0);
	CU_ASSERT_EQUAL(munmap(mem, 8192), 0);
	CU_ASSERT_EQUAL(close(ro), 0);
	CU_ASSERT_EQUAL(t_free(g_fd, a.handle), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before);
}

/*
 * 32-bit callers are refused (-EOPNOTSUPP): a 32-bit program (compat32,
 * x86 only) opens the device, and gets a 64-bit parent's fd with a buffer
 * at handle 1 to ioctl and mmap2.
 */
static void test_compat32(void)
{
#if defined(__x86_64__)
	const char *prog = "/bin/compat32";	/* a VM_FILES entry */
	struct syshax_buf_alloc_args a;
	int status, fd;
	pid_t pid;

	if (access(prog, X_OK)) {
		t_skip("no 32-bit helper compat32");
		return;
	}
	fflush(stdout);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		/* A fresh fd: its first buffer gets handle 1. */
		fd = open(T_DEV, O_RDWR);
		if (fd < 0 || t_alloc(fd, T_MIB, -1, SYSHAX_BUF_ALLOW_SMALL |
				      SYSHAX_BUF_ALLOW_REMOTE, &a) ||
		    a.handle != 1 || dup2(fd, 3) != 3)
			_exit(100);
		execl(prog, "compat32", (char *)NULL);
		_exit(101);
	}
	CU_ASSERT_EQUAL_FATAL(waitpid(pid, &status, 0), pid);
	CU_ASSERT(WIFEXITED(status));
	CU_ASSERT_EQUAL(WEXITSTATUS(status), 0);
#else
	printf("\n*** SKIP compat32: 32-bit refusal is tested on x86-64 ***\n");
#endif
}

/*
 * hugetlbfs memory from libhugetlbfs, registered: writes through either
 * mapping show in the other.
 */
static void test_register_hugetlbfs(void)
{
	struct syshax_buf_register_args r = { 0 };
	struct syshax_buf_info_args info;
	uint64_t before = t_pinned(g_fd);
	uint8_t *h, *q;

	if (gethugepagesize() != (long)SYSHAX_CHUNK_SIZE ||
	    !hugetlbfs_find_path()) {
		t_skip("no hugetlbfs mount with 2 MiB pages");
		return;
	}
	h = get_huge_pages(T_SIZE, GHP_DEFAULT);
	if (!h) {
		t_skip("no free huge pages");
		return;
	}
	t_fill(h, T_SIZE, 8);
	r.addr = (uintptr_t)h;
	r.size = T_SIZE;
	CU_ASSERT_EQUAL_FATAL(t_ioctl(g_fd, SYSHAX_IOC_BUF_REGISTER, &r), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before + T_SIZE);
	CU_ASSERT_EQUAL_FATAL(t_info(g_fd, r.handle, &info), 0);
	CU_ASSERT_EQUAL(info.kind, SYSHAX_BUF_KIND_REGISTERED);
	CU_ASSERT_EQUAL(info.size, T_SIZE);
	/* Each huge page is one physically contiguous 2 MiB piece at least. */
	CU_ASSERT(info.chunk_size >= SYSHAX_CHUNK_SIZE);
	CU_ASSERT(info.nr_chunks >= 1 && info.nr_chunks <= 2);
	q = t_map(g_fd, r.mmap_offset, T_SIZE);
	CU_ASSERT_PTR_NOT_NULL_FATAL(q);
	CU_ASSERT_EQUAL(t_check(q, T_SIZE, 8), T_SIZE);
	t_fill(q, T_SIZE, 9);
	CU_ASSERT_EQUAL(t_check(h, T_SIZE, 9), T_SIZE);
	CU_ASSERT_EQUAL(munmap(q, T_SIZE), 0);
	CU_ASSERT_EQUAL(t_free(g_fd, r.handle), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before);
	free_huge_pages(h);
}

enum { T_THREADS = 4, T_ROUNDS = 200 };

/* One worker: alloc, map, write, export, import, free, in a loop. */
static void *t_worker(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg;
	long bad = 0;

	for (int i = 0; i < T_ROUNDS; i++) {
		struct syshax_buf_import_args im;
		struct syshax_buf_alloc_args a;
		size_t len = (size_t)(1 + (i + seed) % 3) << 16;
		uint8_t *p;
		int d;

		if (t_alloc(g_fd, len, i % 2 ? -1 : 0, 0, &a)) {
			bad++;
			continue;
		}
		p = t_map(g_fd, a.mmap_offset, len);
		if (p) {
			t_fill(p, len, seed + i);
			bad += t_check(p, len, seed + i) != len;
		} else {
			bad++;
		}
		d = t_export(g_fd, a.handle, SYSHAX_EXPORT_CLOEXEC);
		if (d >= 0 && !t_import(g_fd, d, &im))
			bad += t_free(g_fd, im.handle) != 0;
		else
			bad++;
		if (d >= 0)
			close(d);
		bad += t_free(g_fd, a.handle) != 0;
		if (p)
			munmap(p, len);
	}
	return (void *)bad;
}

/* Racing lookups of handles other threads create and free. */
static void *t_prober(void *arg)
{
	volatile int *stop = arg;
	long bad = 0;

	while (!*stop) {
		for (uint32_t h = 1; h < 64; h++) {
			struct syshax_buf_info_args info;
			int ret = t_info(g_fd, h, &info);

			bad += ret && ret != -EBADF;
		}
		bad += t_pinned(g_fd) == UINT64_MAX;
	}
	return (void *)bad;
}

/* Handles, mappings and dma-bufs from several threads on one fd. */
static void test_concurrent(void)
{
	pthread_t workers[T_THREADS], prober;
	uint64_t before = t_pinned(g_fd);
	volatile int stop = 0;
	void *bad;

	CU_ASSERT_EQUAL_FATAL(pthread_create(&prober, NULL, t_prober,
					     (void *)&stop), 0);
	for (int i = 0; i < T_THREADS; i++)
		CU_ASSERT_EQUAL_FATAL(pthread_create(&workers[i], NULL, t_worker,
						     (void *)(uintptr_t)(i * 50)), 0);
	for (int i = 0; i < T_THREADS; i++) {
		CU_ASSERT_EQUAL(pthread_join(workers[i], &bad), 0);
		CU_ASSERT_EQUAL((long)bad, 0);
	}
	stop = 1;
	CU_ASSERT_EQUAL(pthread_join(prober, &bad), 0);
	CU_ASSERT_EQUAL((long)bad, 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before);
}

int main(void)
{
	static const struct t_test tests[] = {
		{ "version", test_version },
		{ "alloc_node0", test_alloc_node0 },
		{ "alloc_node1", test_alloc_node1 },
		{ "alloc_local", test_alloc_local },
		{ "alloc_flags", test_alloc_flags },
		{ "alloc_tail", test_alloc_tail },
		{ "alloc_odd_tail", test_alloc_odd_tail },
		{ "mmap_rw", test_mmap_rw },
		{ "mmap_bounds", test_mmap_bounds },
		{ "mmap_split_lifetime", test_mmap_split_lifetime },
		{ "mmap_fork", test_mmap_fork },
		{ "register_inside_mapping", test_register_inside_mapping },
		{ "odirect_read", test_odirect_read },
		{ "pinned_counter", test_pinned_counter },
		{ "cap", test_cap },
		{ "alloc_fallback", test_alloc_fallback },
		{ "rlimit_unprivileged", test_rlimit_unprivileged },
		{ "memcg", test_memcg },
		{ "errnos", test_errnos },
		{ "handle_reuse", test_handle_reuse },
		{ "rdonly_fd", test_rdonly_fd },
		{ "compat32", test_compat32 },
		{ "register_hugetlbfs", test_register_hugetlbfs },
		{ "concurrent", test_concurrent },
	};

	return T_MAIN("buf_test", "kmod_buf", t_suite_open,
		      t_suite_close, tests);
}
