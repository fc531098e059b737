/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Helpers shared by the module's CUnit suites: raw ioctls on /dev/syshax
 * that return -errno, and the module's counters.
 */
#ifndef T_KMOD_H
#define T_KMOD_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include "../t_cunit.h"
#include "syshax.h"

#define T_DEV		"/dev/syshax"
#define T_SYSFS		"/sys/class/misc/syshax/"
#define T_MIB		(1ULL << 20)

/* Exits 77 (skip) when the module is not loaded: the suites need it. */
static inline void t_require_device(const char *suite)
{
	if (access(T_DEV, R_OK | W_OK) == 0)
		return;
	printf("\n*** SKIP %s: %s is missing (load syshax.ko; make vm-check runs "
	       "this suite in a VM) ***\n\n", suite, T_DEV);
	exit(77);
}

static inline int t_open(void)
{
	return open(T_DEV, O_RDWR | O_CLOEXEC);
}

static inline int t_ioctl(int fd, unsigned long req, void *arg)
{
	return ioctl(fd, req, arg) ? -errno : 0;
}

static inline int t_alloc(int fd, uint64_t size, int node, uint32_t flags,
			  struct syshax_buf_alloc_args *a)
{
	memset(a, 0, sizeof(*a));
	a->size = size;
	a->node = node;
	a->flags = flags;
	return t_ioctl(fd, SYSHAX_IOC_BUF_ALLOC, a);
}

static inline int t_free(int fd, uint32_t handle)
{
	struct syshax_buf_free_args f = { .handle = handle };

	return t_ioctl(fd, SYSHAX_IOC_BUF_FREE, &f);
}

static inline int t_info(int fd, uint32_t handle,
			 struct syshax_buf_info_args *info)
{
	memset(info, 0, sizeof(*info));
	info->handle = handle;
	return t_ioctl(fd, SYSHAX_IOC_BUF_INFO, info);
}

static inline int t_export(int fd, uint32_t handle, uint32_t flags)
{
	struct syshax_buf_export_args e = { .handle = handle, .flags = flags };
	int ret = t_ioctl(fd, SYSHAX_IOC_BUF_EXPORT, &e);

	return ret ? ret : e.fd;
}

static inline int t_import(int fd, int dmabuf, struct syshax_buf_import_args *a)
{
	memset(a, 0, sizeof(*a));
	a->fd = dmabuf;
	return t_ioctl(fd, SYSHAX_IOC_BUF_IMPORT, a);
}

/* A shared read-write mapping, or NULL. */
static inline void *t_map(int fd, uint64_t offset, size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       (off_t)offset);

	return p == MAP_FAILED ? NULL : p;
}

/* Bytes pinned by the module, from STATS (UINT64_MAX on error). */
static inline uint64_t t_pinned(int fd)
{
	struct syshax_stats_args st;

	memset(&st, 0, sizeof(st));
	return t_ioctl(fd, SYSHAX_IOC_STATS, &st) ? UINT64_MAX : st.pinned_bytes;
}

/*
 * Pages the guest's kernel has allocated since boot: the sum of
 * /proc/vmstat's pgalloc_* (UINT64_MAX on error). Two reads around a
 * refused BUF_ALLOC show whether it took pages before it gave up.
 */
static inline uint64_t t_pgalloc(void)
{
	FILE *f = fopen("/proc/vmstat", "r");
	unsigned long long v;
	uint64_t sum = 0;
	char name[64];

	if (!f)
		return UINT64_MAX;
	while (fscanf(f, "%63s %llu", name, &v) == 2)
		if (!strncmp(name, "pgalloc_", 8))
			sum += v;
	fclose(f);
	return sum;
}

/* A number from one of the module's sysfs files (-1 on error). */
static inline long long t_sysfs(const char *name)
{
	char path[128];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), T_SYSFS "%s", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* Byte i of a test pattern that differs for every seed and offset. */
static inline uint8_t t_pat(uint64_t i, unsigned int seed)
{
	return (uint8_t)((i * 31 + seed * 7 + (i >> 12)) & 0xff);
}

static inline void t_fill(volatile uint8_t *p, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = t_pat(i, seed);
}

/* Index of the first byte that is not the pattern, or len. */
static inline size_t t_check(const volatile uint8_t *p, size_t len,
			     unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != t_pat(i, seed))
			return i;
	return len;
}

/* The device fd a suite's tests share, opened by t_suite_open(). */
static int g_fd = -1;

static inline int t_suite_open(void)
{
	g_fd = t_open();
	return g_fd < 0;
}

static inline int t_suite_close(void)
{
	return close(g_fd);
}

/*
 * main() of a module suite program: SKIP (exit 77) without the device,
 * else tests[] as one CUnit suite; non-zero when anything failed.
 */
#define T_MAIN(prog, suite, init, clean, tests)				\
	(t_require_device(prog), T_RUN_SUITE(suite, init, clean, tests))

#endif /* T_KMOD_H */
