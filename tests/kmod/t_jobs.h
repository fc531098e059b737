/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Helpers of the module's job suites (jobs_test, jobs_stress), over
 * t_kmod.h: job builders and the job ioctls, each returning a count or
 * -errno, and the broker's module parameters.
 */
#ifndef T_JOBS_H
#define T_JOBS_H

#include <time.h>

#include "t_kmod.h"
#include "syshax_ops.h"

#define T_PARAMS	"/sys/module/syshax/parameters/"
#define T_BUF_SIZE	(64 << 10)

/* ioctls that return a count. */
static inline int t_count(int fd, unsigned long cmd, void *arg)
{
	int ret = ioctl(fd, cmd, arg);

	return ret < 0 ? -errno : ret;
}

/* t_open() that must succeed. */
static inline int t_fd(void)
{
	int fd = t_open();

	CU_ASSERT_FATAL(fd >= 0);
	return fd;
}

static inline int t_engine(void)
{
	struct syshax_engine_attach_args a = { .node = -1 };
	int fd = t_fd();

	CU_ASSERT_EQUAL_FATAL(t_ioctl(fd, SYSHAX_IOC_ENGINE_ATTACH, &a), 0);
	return fd;
}

static inline struct syshax_stats_args t_stats(int fd)
{
	struct syshax_stats_args st;

	memset(&st, 0, sizeof(st));
	CU_ASSERT_EQUAL(t_ioctl(fd, SYSHAX_IOC_STATS, &st), 0);
	return st;
}

/* A small buffer anywhere; 0 or -errno. */
static inline int t_small(int fd, struct syshax_buf_alloc_args *a)
{
	return t_alloc(fd, T_BUF_SIZE, -1,
		       SYSHAX_BUF_ALLOW_SMALL | SYSHAX_BUF_ALLOW_REMOTE, a);
}

static inline struct syshax_buf_alloc_args t_buf(int fd)
{
	struct syshax_buf_alloc_args a;

	CU_ASSERT_EQUAL_FATAL(t_small(fd, &a), 0);
	return a;
}

static inline void t_nop(struct syshax_job *j, unsigned long long user_data)
{
	memset(j, 0, sizeof(*j));
	j->op = SYSHAX_OP_NOP;
	j->user_data = user_data;
}

static inline void t_copy(struct syshax_job *j, unsigned int src,
			  unsigned int dst, unsigned long long user_data)
{
	memset(j, 0, sizeof(*j));
	j->op = SYSHAX_OP_COPY;
	j->user_data = user_data;
	j->nr_refs = 2;
	j->refs[0] = (struct syshax_buf_ref){
		.buf = src, .access = SYSHAX_ACCESS_READ, .length = 4096 };
	j->refs[1] = (struct syshax_buf_ref){
		.buf = dst, .access = SYSHAX_ACCESS_WRITE, .length = 4096 };
}

static inline int t_submit(int fd, struct syshax_job *jobs, unsigned int nr)
{
	struct syshax_submit_args s = {
		.jobs = (unsigned long)jobs, .nr = nr };

	return t_count(fd, SYSHAX_IOC_SUBMIT, &s);
}

static inline int t_wait(int fd, struct syshax_completion *c,
			 unsigned int min, unsigned int max,
			 long long timeout_ns)
{
	struct syshax_wait_args w = {
		.cpls = (unsigned long)c, .max = max, .min = min,
		.timeout_ns = timeout_ns };

	return t_count(fd, SYSHAX_IOC_WAIT, &w);
}

static inline int t_fetch(int fd, struct syshax_engine_job *jobs,
			  unsigned int max, long long timeout_ns)
{
	struct syshax_engine_fetch_args f = {
		.jobs = (unsigned long)jobs, .max = max,
		.timeout_ns = timeout_ns };

	return t_count(fd, SYSHAX_IOC_ENGINE_FETCH, &f);
}

/* Completes up to 16 jobs with one status; results 1000, 1001, ... */
static inline int t_complete(int fd, const unsigned long long *tokens,
			     unsigned int nr, int status)
{
	struct syshax_engine_cpl c[16];
	struct syshax_engine_complete_args a = {
		.cpls = (unsigned long)c, .nr = nr };
	unsigned int i;

	if (nr > 16)
		return -E2BIG;
	memset(c, 0, sizeof(c));
	for (i = 0; i < nr; i++) {
		c[i].token = tokens[i];
		c[i].status = status;
		c[i].result = 1000 + i;
	}
	return t_count(fd, SYSHAX_IOC_ENGINE_COMPLETE, &a);
}

static inline double t_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Reads a module parameter into buf; 0 or -errno. */
static inline int t_param_get(const char *name, char *buf, size_t len)
{
	char path[128];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), T_PARAMS "%s", name);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	ok = fgets(buf, len, f) != NULL;
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return ok ? 0 : -EIO;
}

static inline int t_param_set(const char *name, const char *val)
{
	char path[128];
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), T_PARAMS "%s", name);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	ret = fputs(val, f) < 0 ? -EIO : 0;
	if (fclose(f))
		ret = -errno;
	return ret;
}

#endif /* T_JOBS_H */
