// SPDX-License-Identifier: MIT
/*
 * syshaxd's userspace broker, driven through libsyshax-rt: the broker runs
 * in a thread on a private socket; the test is its clients and its engine.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <CUnit/Basic.h>

#include "../t_cunit.h"

#include "broker.h"
#include "t_broker.h"
#include "proto.h"
#include "syshax/rt.h"

#define T_MAX_CTX	16
#define T_MAX_PINNED	(64ULL << 20)

static struct t_broker g_tb;

static int t_setup(void)
{
	struct shxd_broker_conf c = {
		.max_jobs_ctx = T_MAX_CTX,
		.max_pinned_bytes = T_MAX_PINNED,
		.engine_gid = (gid_t)-1,
	};

	return t_broker_start(&g_tb, &c, "/tmp/broker_ut.XXXXXX", "sub/b.sock");
}

static int t_teardown(void)
{
	return t_broker_stop(&g_tb);
}

/* waitpid() for a child that must end within secs: one that does not is
 * killed and counts as a failure (-1), so that no case hangs the suite. */
static int t_wait_child(pid_t pid, int secs)
{
	int status = -1, i;

	for (i = 0; i < secs * 1000; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return status;
		usleep(1000);
	}
	printf("\n  child %d still running after %d s: killed ", (int)pid, secs);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

/* Entries in the folder of path, besides . and .. (-1 on error). */
static int t_dir_entries(const char *path)
{
	char dir[160];
	struct dirent *e;
	int n = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s", path);
	*strrchr(dir, '/') = 0;
	d = opendir(dir);
	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

static uint64_t t_pinned(void)
{
	struct syshax *sh = t_broker_open(&g_tb);
	struct syshax_stats_args st;

	CU_ASSERT_EQUAL(syshax_stats(sh, &st), 0);
	syshax_close(sh);
	return st.pinned_bytes;
}

/* Stats settle once the broker has handled a close: poll a little. */
static uint64_t t_pinned_settled(void)
{
	uint64_t p = 0;
	int i;

	for (i = 0; i < 100; i++) {
		p = t_pinned();
		if (!p)
			break;
		usleep(10000);
	}
	return p;
}

static void t_create_twice(void)
{
	struct shxd_broker_conf c = { .socket_path = g_tb.path };
	struct shxd_broker *b;

	CU_ASSERT_EQUAL(shxd_broker_create(&c, &b), -EADDRINUSE);
	CU_ASSERT_STRING_EQUAL(shxd_broker_path(g_tb.b), g_tb.path);
}

/* Child: waits (at most 5 s) for path to appear, then connects to it at
 * once. 0: connected, 1: refused or failed, 2: the path never came. */
static int t_connect_when_seen(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	time_t end = time(NULL) + 5;
	int fd;

	while (access(path, F_OK))
		if (time(NULL) > end)
			return 2;
	memcpy(sa.sun_path, path, strnlen(path, sizeof(sa.sun_path) - 1));
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		return 1;
	close(fd);
	return 0;
}

/* The socket path appears only once the broker listens, so a client that
 * finds it connects at once; a stale socket file is replaced; nothing else
 * is left beside it. */
static void t_path_ready(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct shxd_broker_conf c = { .socket_path = NULL };
	struct shxd_broker *b;
	char path[sizeof(sa.sun_path)];
	int i, fd, status;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/ready/r.sock", g_tb.dir);
	c.socket_path = path;
	/* The race it looks for is short: many rounds. */
	for (i = 0; i < 100; i++) {
		pid = fork();
		CU_ASSERT_FATAL(pid >= 0);
		if (!pid)
			_exit(t_connect_when_seen(path));
		CU_ASSERT_EQUAL(shxd_broker_create(&c, &b), 0);
		status = t_wait_child(pid, 10);
		if (b)
			shxd_broker_destroy(b);
		b = NULL;
		CU_ASSERT_EQUAL(status, 0);
	}
	/* Stale: a socket file that nobody listens on. */
	memcpy(sa.sun_path, path, sizeof(path));
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL_FATAL(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	CU_ASSERT_EQUAL_FATAL(shxd_broker_create(&c, &b), 0);
	CU_ASSERT_EQUAL(t_dir_entries(path), 1);
	shxd_broker_destroy(b);
	CU_ASSERT_EQUAL(t_dir_entries(path), 0);
	*strrchr(path, '/') = 0;
	CU_ASSERT_EQUAL(rmdir(path), 0);
}

static void t_version(void)
{
	struct syshax *sh = t_broker_open(&g_tb);
	struct syshax_version_args v;

	CU_ASSERT_EQUAL(syshax_backend(sh), SYSHAX_BACKEND_DAEMON);
	CU_ASSERT(syshax_fd(sh) >= 0);
	CU_ASSERT_EQUAL(syshax_version(sh, &v), 0);
	CU_ASSERT_EQUAL(v.uapi_version, SYSHAX_UAPI_VERSION);
	CU_ASSERT(v.features & SYSHAX_FEAT_JOBS);
	CU_ASSERT_FALSE(v.features & SYSHAX_FEAT_REGISTER);
	CU_ASSERT_EQUAL(v.max_pinned, T_MAX_PINNED);
	CU_ASSERT_EQUAL(v.max_submit, SHXD_DEF_MAX_SUBMIT);
	CU_ASSERT_EQUAL(v.max_refs, SYSHAX_JOB_MAX_REFS);
	syshax_close(sh);
}

static void t_alloc_map_free(void)
{
	struct syshax *sh = t_broker_open(&g_tb);
	struct syshax_buf_info_args info;
	struct syshax_stats_args st;
	struct syshax_buffer buf;
	uint64_t n, sum = 0;

	CU_ASSERT_EQUAL_FATAL(syshax_buf_alloc(sh, 3 << 20, 0, 0, &buf), 0);
	CU_ASSERT(buf.size >= 3 << 20);
	CU_ASSERT(buf.id > 0);
	CU_ASSERT_EQUAL(syshax_buf_map(sh, &buf), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(buf.addr);
	((char *)buf.addr)[buf.size - 1] = 42;
	CU_ASSERT_EQUAL(syshax_buf_map(sh, &buf), 0);	/* idempotent */
	CU_ASSERT_EQUAL(syshax_buf_info(sh, &buf, &info), 0);
	CU_ASSERT_EQUAL(info.kind, SYSHAX_BUF_KIND_ALLOC);
	CU_ASSERT_EQUAL(info.size, buf.size);
	CU_ASSERT_EQUAL(info.id, buf.id);
	CU_ASSERT_EQUAL(info.node, 0);
	CU_ASSERT_EQUAL((uint64_t)info.chunk_size * info.nr_chunks, buf.size);
	for (n = 0; n < SYSHAX_MAX_NODES; n++)
		sum += info.node_bytes[n];
	CU_ASSERT_EQUAL(sum, buf.size);
	CU_ASSERT_EQUAL(info.node_bytes[0], buf.size);
	CU_ASSERT_EQUAL(syshax_stats(sh, &st), 0);
	CU_ASSERT_EQUAL(st.pinned_bytes, buf.size);
	CU_ASSERT_EQUAL(st.nr_bufs, 1);
	CU_ASSERT_EQUAL(st.node_bufs[0], 1);
	CU_ASSERT_EQUAL(syshax_buf_free(sh, &buf), 0);
	CU_ASSERT_PTR_NULL(buf.addr);
	CU_ASSERT_EQUAL(syshax_buf_free(sh, &buf), -EBADF);
	CU_ASSERT_EQUAL(syshax_stats(sh, &st), 0);
	CU_ASSERT_EQUAL(st.pinned_bytes, 0);
	CU_ASSERT_EQUAL(st.nr_bufs, 0);
	syshax_close(sh);
}

/* Free 2 MiB pages on node, as the broker reads them. */
static long t_free_huge(int node)
{
	char path[128];
	long n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/"
		 "hugepages/hugepages-2048kB/free_hugepages", node);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%ld", &n) != 1)
		n = 0;
	fclose(f);
	return n;
}

/* Each node gets its own pages: hugetlb when that node has enough free 2 MiB
 * pages (the VM guest has), else small ones. */
static void t_numa_placement(void)
{
	struct syshax *sh = t_broker_open(&g_tb);
	struct syshax_buf_info_args info;
	struct syshax_version_args v;
	struct syshax_buffer buf;
	char path[64];
	int node;

	CU_ASSERT_EQUAL_FATAL(syshax_version(sh, &v), 0);
	for (node = 0; node < (int)v.nr_nodes && node < SYSHAX_MAX_NODES;
	     node++) {
		long huge;

		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d",
			 node);
		if (access(path, F_OK))
			continue;
		huge = t_free_huge(node);
		CU_ASSERT_EQUAL_FATAL(syshax_buf_alloc(sh, 4 << 20, node, 0,
						       &buf), 0);
		CU_ASSERT_EQUAL(syshax_buf_info(sh, &buf, &info), 0);
		CU_ASSERT_EQUAL(info.node, node);
		CU_ASSERT_EQUAL(info.node_bytes[node], buf.size);
		CU_ASSERT_EQUAL(info.chunk_size, huge >= 2 ? 2U << 20 :
				(uint32_t)sysconf(_SC_PAGESIZE));
		printf("\n  node %d: %s pages ", node,
		       info.chunk_size == 2 << 20 ? "2 MiB" : "small");
		CU_ASSERT_EQUAL(syshax_buf_free(sh, &buf), 0);
	}
	syshax_close(sh);
}

static void t_alloc_errors(void)
{
	struct syshax *sh = t_broker_open(&g_tb);
	struct syshax_buffer buf;
	int x = 0;

	CU_ASSERT_EQUAL(syshax_buf_alloc(sh, 0, 0, 0, &buf), -EINVAL);
	CU_ASSERT_EQUAL(syshax_buf_alloc(sh, 4096, 4096, 0, &buf), -EINVAL);
	CU_ASSERT_EQUAL(syshax_buf_alloc(sh, 4096, -1, 1U << 7, &buf), -EINVAL);
	CU_ASSERT_EQUAL(syshax_buf_alloc(sh, 1ULL << 41, -1, 0, &buf), -EINVAL);
	CU_ASSERT_EQUAL(syshax_buf_alloc(sh, T_MAX_PINNED + 4096, -1, 0, &buf),
			-ENOMEM);
	CU_ASSERT_EQUAL(syshax_buf_register(sh, &x, 4096, 0, &buf),
			-EOPNOTSUPP);
	syshax_close(sh);
	CU_ASSERT_EQUAL(t_pinned_settled(), 0);
}

/* Two connections: handles are per connection; an exported fd is the only
 * way across, and the import names the same memory and id. */
static void t_isolation_and_import(void)
{
	struct syshax *a = t_broker_open(&g_tb), *b = t_broker_open(&g_tb);
	struct syshax_buffer ba, bb, fake;
	struct syshax_buf_info_args info;
	struct syshax_job job;
	int fd, other;

	CU_ASSERT_EQUAL_FATAL(syshax_buf_alloc(a, 1 << 20, -1, 0, &ba), 0);
	CU_ASSERT_EQUAL(syshax_buf_map(a, &ba), 0);
	memset(ba.addr, 0x5a, 4096);
	/* b has no handle of that number. */
	CU_ASSERT_EQUAL(syshax_buf_info(b, &ba, &info), -EBADF);
	syshax_job_init(&job, SYSHAX_OP_GEMM, 1);
	syshax_job_add_ref(&job, &ba, 0, 64, SYSHAX_ACCESS_READ);
	CU_ASSERT_EQUAL(syshax_submit(b, &job, 1), -EBADF);
	CU_ASSERT_EQUAL(syshax_buf_free(b, &ba), -EBADF);

	fd = syshax_buf_export(a, &ba, SYSHAX_EXPORT_CLOEXEC);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(syshax_buf_import(b, fd, &bb), 0);
	CU_ASSERT_EQUAL(bb.id, ba.id);
	CU_ASSERT_EQUAL(bb.size, ba.size);
	CU_ASSERT_EQUAL(syshax_buf_map(b, &bb), 0);
	CU_ASSERT_EQUAL(((unsigned char *)bb.addr)[4095], 0x5a);
	((unsigned char *)bb.addr)[0] = 0xa5;
	CU_ASSERT_EQUAL(((unsigned char *)ba.addr)[0], 0xa5);
	close(fd);
	/* The exporter frees; the importer's handle keeps the buffer. */
	CU_ASSERT_EQUAL(syshax_buf_free(a, &ba), 0);
	CU_ASSERT_EQUAL(syshax_buf_info(b, &bb, &info), 0);
	CU_ASSERT_EQUAL(info.id, bb.id);

	/* A memfd the broker did not make names nothing. */
	other = memfd_create("not-syshax", MFD_CLOEXEC);
	CU_ASSERT_EQUAL(syshax_buf_import(b, other, &fake), -EINVAL);
	close(other);
	CU_ASSERT_EQUAL(syshax_buf_import(b, -1, &fake), -EBADF);
	CU_ASSERT_EQUAL(syshax_buf_export(b, &bb, 1U << 5), -EINVAL);
	syshax_close(a);
	syshax_close(b);
	CU_ASSERT_EQUAL(t_pinned_settled(), 0);
}

struct t_churn {
	struct syshax *sh;
	unsigned char tag;
	int bad;
};

/* Allocates, maps, tags and frees buffers in a loop: a mapping that shows
 * another thread's tag means the handle table mixed two buffers up. */
static void *t_churn_main(void *arg)
{
	struct t_churn *c = arg;
	struct syshax_buffer buf;
	int i;

	for (i = 0; i < 300; i++) {
		if (syshax_buf_alloc(c->sh, 4096, -1, 0, &buf) ||
		    syshax_buf_map(c->sh, &buf)) {
			c->bad++;
			continue;
		}
		memset(buf.addr, c->tag, 4096);
		sched_yield();
		if (((unsigned char *)buf.addr)[4095] != c->tag)
			c->bad++;
		if (syshax_buf_free(c->sh, &buf))
			c->bad++;
	}
	return NULL;
}

/* Buffer calls from several threads on one handle. */
static void t_threads(void)
{
	struct syshax *sh = t_broker_open(&g_tb);
	struct t_churn c[3];
	pthread_t th[3];
	int i;

	for (i = 0; i < 3; i++) {
		c[i] = (struct t_churn){ .sh = sh, .tag = (unsigned char)(i + 1) };
		pthread_create(&th[i], NULL, t_churn_main, &c[i]);
	}
	for (i = 0; i < 3; i++) {
		pthread_join(th[i], NULL);
		CU_ASSERT_EQUAL(c[i].bad, 0);
	}
	syshax_close(sh);
	CU_ASSERT_EQUAL(t_pinned_settled(), 0);
}

/* The shared validation gives the documented errnos; nothing is queued. */
static void t_bad_refs(void)
{
	struct syshax *sh = t_broker_open(&g_tb);
	struct syshax_stats_args st;
	struct syshax_buffer buf;
	struct syshax_job job;

	CU_ASSERT_EQUAL_FATAL(syshax_buf_alloc(sh, 8192, -1, 0, &buf), 0);
	syshax_job_copy(&job, &buf, 0, &buf, buf.size - 8, 16, 1);
	CU_ASSERT_EQUAL(syshax_submit(sh, &job, 1), -ERANGE);
	syshax_job_copy(&job, &buf, 0, &buf, 4096, 16, 1);
	job.refs[1].access = SYSHAX_ACCESS_READ;	/* COPY writes refs[1] */
	CU_ASSERT_EQUAL(syshax_submit(sh, &job, 1), -EACCES);
	syshax_job_init(&job, SYSHAX_OP_MAX, 1);
	CU_ASSERT_EQUAL(syshax_submit(sh, &job, 1), -EINVAL);
	syshax_job_init(&job, SYSHAX_OP_NOP, 1);
	job.reserved = 1;
	CU_ASSERT_EQUAL(syshax_submit(sh, &job, 1), -EINVAL);
	CU_ASSERT_EQUAL(syshax_stats(sh, &st), 0);
	CU_ASSERT_EQUAL(st.queue_depth, 0);
	CU_ASSERT_EQUAL(syshax_buf_free(sh, &buf), 0);
	syshax_close(sh);
}

/* A client, an engine: NOP and COPY round trips, the engine's errnos, the
 * per-context limit. */
static void t_jobs(void)
{
	struct syshax *cl = t_broker_open(&g_tb), *en = t_broker_open(&g_tb);
	struct syshax_engine_job ej[T_MAX_CTX + 4];
	struct syshax_engine_cpl ec[T_MAX_CTX + 4];
	struct syshax_completion cpl[T_MAX_CTX + 4];
	struct syshax_job jobs[T_MAX_CTX + 4];
	struct syshax_buffer src, dst;
	void *s, *d;
	uint64_t ss, ds;
	int i, n;

	CU_ASSERT_EQUAL(syshax_engine_fetch(en, ej, 1, 0), -EINVAL);
	CU_ASSERT_EQUAL(syshax_engine_attach(en, -1), 0);
	CU_ASSERT_EQUAL(syshax_engine_attach(en, -1), -EBUSY);
	CU_ASSERT_EQUAL(syshax_engine_fetch(en, ej, 1, 0), -ETIMEDOUT);
	CU_ASSERT_EQUAL(syshax_engine_fetch(en, ej, 1, 20000000), -ETIMEDOUT);
	CU_ASSERT_EQUAL(syshax_wait(cl, cpl, 1, 1, 1000000), -ETIMEDOUT);

	CU_ASSERT_EQUAL_FATAL(syshax_buf_alloc(cl, 4096, -1, 0, &src), 0);
	CU_ASSERT_EQUAL_FATAL(syshax_buf_alloc(cl, 4096, -1, 0, &dst), 0);
	CU_ASSERT_EQUAL(syshax_buf_map(cl, &src), 0);
	memcpy(src.addr, "zero copy", 10);
	syshax_job_init(&jobs[0], SYSHAX_OP_NOP, 100);
	syshax_job_copy(&jobs[1], &src, 0, &dst, 8, 10, 101);
	CU_ASSERT_EQUAL(syshax_submit(cl, jobs, 2), 2);

	n = syshax_engine_fetch(en, ej, 8, 1000000000);
	CU_ASSERT_EQUAL_FATAL(n, 2);
	CU_ASSERT_EQUAL(ej[0].job.user_data, 100);
	CU_ASSERT_EQUAL(ej[1].job.refs[0].buf, src.id);
	CU_ASSERT_EQUAL(ej[1].job.refs[1].buf, dst.id);
	CU_ASSERT_EQUAL(syshax_engine_map(en, 999999, &s, &ss), -ENOENT);
	CU_ASSERT_EQUAL_FATAL(syshax_engine_map(en, src.id, &s, &ss), 0);
	CU_ASSERT_EQUAL_FATAL(syshax_engine_map(en, dst.id, &d, &ds), 0);
	memcpy((char *)d + 8, s, 10);
	CU_ASSERT_EQUAL(syshax_engine_unmap(en, s, ss), 0);
	CU_ASSERT_EQUAL(syshax_engine_unmap(en, d, ds), 0);
	memset(ec, 0, sizeof(ec));
	ec[0].token = ej[0].token;
	ec[1].token = ej[1].token;
	ec[1].result = 10;
	ec[1].exec_ns = 5;
	CU_ASSERT_EQUAL(syshax_engine_complete(en, ec, 2), 2);
	CU_ASSERT_EQUAL(syshax_engine_complete(en, ec, 1), -ENOENT);
	CU_ASSERT_EQUAL(syshax_wait(cl, cpl, 2, 4, 1000000000), 2);
	CU_ASSERT_EQUAL(cpl[0].user_data + cpl[1].user_data, 201);
	for (i = 0; i < 2; i++)
		if (cpl[i].user_data == 101)
			CU_ASSERT_EQUAL(cpl[i].result, 10);
	CU_ASSERT_EQUAL(syshax_buf_map(cl, &dst), 0);
	CU_ASSERT_STRING_EQUAL((char *)dst.addr + 8, "zero copy");

	/* A buffer the engine holds no job on. */
	syshax_job_init(&jobs[0], SYSHAX_OP_NOP, 1);
	CU_ASSERT_EQUAL(syshax_submit(cl, jobs, 1), 1);
	CU_ASSERT_EQUAL(syshax_engine_fetch(en, ej, 1, 0), 1);
	CU_ASSERT_EQUAL(syshax_engine_map(en, src.id, &s, &ss), -EACCES);
	ec[0].token = ej[0].token;
	ec[0].status = 1;	/* not an errno */
	CU_ASSERT_EQUAL(syshax_engine_complete(en, ec, 1), -EINVAL);
	ec[0].status = -EIO;
	CU_ASSERT_EQUAL(syshax_engine_complete(en, ec, 1), 1);
	CU_ASSERT_EQUAL(syshax_wait(cl, cpl, 1, 1, 1000000000), 1);
	CU_ASSERT_EQUAL(cpl[0].status, -EIO);

	/* The context limit: a partial submit, then -EAGAIN. */
	for (i = 0; i < T_MAX_CTX + 4; i++)
		syshax_job_init(&jobs[i], SYSHAX_OP_NOP, (uint64_t)i);
	CU_ASSERT_EQUAL(syshax_submit(cl, jobs, T_MAX_CTX + 4), T_MAX_CTX);
	CU_ASSERT_EQUAL(syshax_submit(cl, jobs, 1), -EAGAIN);
	n = syshax_engine_fetch(en, ej, T_MAX_CTX + 4, 0);
	CU_ASSERT_EQUAL(n, T_MAX_CTX);
	for (i = 0; i < n; i++)
		ec[i] = (struct syshax_engine_cpl){ .token = ej[i].token };
	CU_ASSERT_EQUAL(syshax_engine_complete(en, ec, (unsigned int)n), n);
	/* Completed but not reaped still counts, as in the module. */
	CU_ASSERT_EQUAL(syshax_submit(cl, jobs, 1), -EAGAIN);
	CU_ASSERT_EQUAL(syshax_wait(cl, cpl, (unsigned int)n,
				    T_MAX_CTX + 4, 1000000000), n);
	CU_ASSERT_EQUAL(syshax_submit(cl, jobs, 1), 1);

	/* The engine goes with a job held: the client gets -EPIPE. */
	CU_ASSERT_EQUAL(syshax_engine_fetch(en, ej, 1, 0), 1);
	syshax_close(en);
	CU_ASSERT_EQUAL(syshax_wait(cl, cpl, 1, 1, 1000000000), 1);
	CU_ASSERT_EQUAL(cpl[0].status, -EPIPE);
	syshax_close(cl);
	CU_ASSERT_EQUAL(t_pinned_settled(), 0);
}

static void t_on_signal(int sig)
{
	(void)sig;
}

struct t_fetcher {
	struct syshax *en;
	volatile int ret;
	volatile int done;
};

static void *t_fetch_forever(void *arg)
{
	struct t_fetcher *f = arg;
	struct syshax_engine_job ej;

	f->ret = syshax_engine_fetch(f->en, &ej, 1, -1);
	f->done = 1;
	return NULL;
}

/* An engine's fd polls readable when jobs wait; a signal ends a parked
 * fetch with -EINTR and the next calls still get their own replies. */
static void t_engine_fd_and_eintr(void)
{
	struct sigaction sa = { .sa_handler = t_on_signal };	/* no restart */
	struct syshax *cl = t_broker_open(&g_tb), *en = t_broker_open(&g_tb);
	struct t_fetcher f = { .en = en };
	struct syshax_engine_job ej;
	struct syshax_engine_cpl ec = { 0 };
	struct syshax_completion cpl[2];
	struct pollfd pfd;
	struct syshax_job job;
	pthread_t th;
	int i;

	CU_ASSERT_EQUAL_FATAL(syshax_engine_attach(en, -1), 0);
	pfd.fd = syshax_fd(en);
	pfd.events = POLLIN;
	CU_ASSERT_EQUAL(poll(&pfd, 1, 0), 0);
	syshax_job_init(&job, SYSHAX_OP_NOP, 9);
	CU_ASSERT_EQUAL(syshax_submit(cl, &job, 1), 1);
	CU_ASSERT_EQUAL(poll(&pfd, 1, 1000), 1);
	CU_ASSERT_EQUAL(syshax_engine_fetch(en, &ej, 1, 0), 1);
	CU_ASSERT_EQUAL(poll(&pfd, 1, 0), 0);	/* the note was consumed */
	ec.token = ej.token;
	CU_ASSERT_EQUAL(syshax_engine_complete(en, &ec, 1), 1);
	CU_ASSERT_EQUAL(syshax_wait(cl, cpl, 1, 1, 1000000000), 1);
	/* A fetch that leaves jobs queued leaves the fd readable. */
	CU_ASSERT_EQUAL(syshax_submit(cl, &job, 1), 1);
	CU_ASSERT_EQUAL(syshax_submit(cl, &job, 1), 1);
	CU_ASSERT_EQUAL(syshax_engine_fetch(en, &ej, 1, 0), 1);
	ec.token = ej.token;
	CU_ASSERT_EQUAL(syshax_engine_complete(en, &ec, 1), 1);
	CU_ASSERT_EQUAL(poll(&pfd, 1, 1000), 1);
	CU_ASSERT_EQUAL(syshax_engine_fetch(en, &ej, 1, 0), 1);
	ec.token = ej.token;
	CU_ASSERT_EQUAL(syshax_engine_complete(en, &ec, 1), 1);
	CU_ASSERT_EQUAL(syshax_wait(cl, cpl, 2, 2, 1000000000), 2);

	sigaction(SIGUSR1, &sa, NULL);
	pthread_create(&th, NULL, t_fetch_forever, &f);
	/* Until the signal lands inside the blocking receive. */
	for (i = 0; i < 200 && !f.done; i++) {
		usleep(10000);
		pthread_kill(th, SIGUSR1);
	}
	pthread_join(th, NULL);
	CU_ASSERT_EQUAL(f.ret, -EINTR);
	CU_ASSERT_EQUAL(syshax_engine_fetch(en, &ej, 1, 0), -ETIMEDOUT);
	CU_ASSERT_EQUAL(syshax_submit(cl, &job, 1), 1);
	CU_ASSERT_EQUAL(syshax_engine_fetch(en, &ej, 1, 1000000000), 1);
	CU_ASSERT_EQUAL(ej.job.user_data, 9);
	ec.token = ej.token;
	CU_ASSERT_EQUAL(syshax_engine_complete(en, &ec, 1), 1);
	CU_ASSERT_EQUAL(syshax_wait(cl, cpl, 1, 1, 1000000000), 1);
	signal(SIGUSR1, SIG_DFL);
	syshax_close(en);
	syshax_close(cl);
}

/* A client that goes with jobs queued: they are cancelled, and its
 * buffers released. */
static void t_client_gone(void)
{
	struct syshax *cl = t_broker_open(&g_tb), *sh;
	struct syshax_stats_args st0, st;
	struct syshax_buffer buf;
	struct syshax_job job[4];
	int i;

	sh = t_broker_open(&g_tb);
	CU_ASSERT_EQUAL(syshax_stats(sh, &st0), 0);
	CU_ASSERT_EQUAL_FATAL(syshax_buf_alloc(cl, 4096, -1, 0, &buf), 0);
	for (i = 0; i < 4; i++)
		syshax_job_copy(&job[i], &buf, 0, &buf, 2048, 64, (uint64_t)i);
	CU_ASSERT_EQUAL(syshax_submit(cl, job, 4), 4);
	syshax_close(cl);
	for (i = 0; i < 100; i++) {
		CU_ASSERT_EQUAL(syshax_stats(sh, &st), 0);
		if (st.jobs_cancelled == st0.jobs_cancelled + 4)
			break;
		usleep(10000);
	}
	CU_ASSERT_EQUAL(st.jobs_cancelled, st0.jobs_cancelled + 4);
	CU_ASSERT_EQUAL(st.queue_depth, 0);
	CU_ASSERT_EQUAL(st.pinned_bytes, 0);
	syshax_close(sh);
}

/* A raw connection, past the welcome: what a client not using the library
 * would hold. *evfd gets the event socket (closing it is leaving). */
static int t_raw_connect(int *evfd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} cm;
	char buf[64];
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr m = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cm.b, .msg_controllen = sizeof(cm.b),
	};
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	memcpy(sa.sun_path, g_tb.path, sizeof(sa.sun_path) - 1);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    recvmsg(fd, &m, MSG_CMSG_CLOEXEC) <= 0 || !CMSG_FIRSTHDR(&m)) {
		CU_FAIL("raw connect");
		return -1;
	}
	memcpy(evfd, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof(int));
	return fd;
}

/* Sends msg and returns the reply's ret, or 1 when the broker closed. */
static int t_raw_call(int fd, const void *msg, size_t len)
{
	char buf[4096];
	struct shrt_rep rep;
	ssize_t n;

	if (send(fd, msg, len, 0) != (ssize_t)len)
		return 2;
	n = recv(fd, buf, sizeof(buf), 0);
	if (n <= 0)
		return 1;
	memcpy(&rep, buf, sizeof(rep));
	return rep.ret;
}

/* Requests the library would never send: answered with an errno, or the
 * connection is closed; the broker serves everyone else as before. */
static void t_malformed(void)
{
	struct {
		struct shrt_req h;
		struct syshax_submit_args a;
		struct syshax_job j[1];
	} sub;
	struct shrt_req h = { .cmd = _IO(SYSHAX_IOC_MAGIC, 0x7f) };
	struct syshax_version_args v;
	struct syshax *sh;
	int evfd = -1, fd = t_raw_connect(&evfd);

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(t_raw_call(fd, &h, sizeof(h)), -ENOTTY);
	h.cmd = SYSHAX_IOC_WAIT;	/* completions come on the event socket */
	h.len = sizeof(struct syshax_wait_args);
	{
		char m[sizeof(h) + sizeof(struct syshax_wait_args)] = { 0 };

		memcpy(m, &h, sizeof(h));
		CU_ASSERT_EQUAL(t_raw_call(fd, m, sizeof(m)), -ENOTTY);
	}
	memset(&sub, 0, sizeof(sub));
	sub.h.cmd = SYSHAX_IOC_SUBMIT;
	sub.h.len = sizeof(sub) - sizeof(sub.h);
	sub.a.nr = 2;			/* but one job follows */
	CU_ASSERT_EQUAL(t_raw_call(fd, &sub, sizeof(sub)), -EINVAL);
	sub.a.nr = 1;
	sub.j[0].op = SYSHAX_OP_NOP;
	sub.h.reaped = 1000;		/* more than it was ever sent */
	CU_ASSERT_EQUAL(t_raw_call(fd, &sub, sizeof(sub)), 1);
	/* Shorter than its args: not our library, the broker hangs up. */
	h.cmd = SYSHAX_IOC_STATS;
	h.len = 0;
	CU_ASSERT_EQUAL(t_raw_call(fd, &h, sizeof(h)), 1);
	close(fd);
	close(evfd);

	sh = t_broker_open(&g_tb);
	CU_ASSERT_EQUAL(syshax_version(sh, &v), 0);
	syshax_close(sh);
}

/* A raw SUBMIT of n NOP jobs whose header claims reaped completions. */
static int t_raw_submit(int fd, unsigned int n, unsigned int reaped)
{
	struct {
		struct shrt_req h;
		struct syshax_submit_args a;
		struct syshax_job j[T_MAX_CTX];
	} sub;
	unsigned int i;

	memset(&sub, 0, sizeof(sub));
	sub.h.cmd = SYSHAX_IOC_SUBMIT;
	sub.h.len = sizeof(sub.a) + n * sizeof(sub.j[0]);
	sub.h.reaped = reaped;
	sub.a.nr = n;
	for (i = 0; i < n; i++)
		syshax_job_init(&sub.j[i], SYSHAX_OP_NOP, i);
	return t_raw_call(fd, &sub, sizeof(sub.h) + sub.h.len);
}

/* Fetches and completes every queued job; returns how many. */
static int t_engine_drain(struct syshax *en)
{
	struct syshax_engine_job ej[T_MAX_CTX];
	struct syshax_engine_cpl ec[T_MAX_CTX];
	int n, i;

	n = syshax_engine_fetch(en, ej, T_MAX_CTX, 0);
	if (n <= 0)
		return n;
	for (i = 0; i < n; i++)
		ec[i] = (struct syshax_engine_cpl){ .token = ej[i].token };
	CU_ASSERT_EQUAL(syshax_engine_complete(en, ec, (unsigned int)n), n);
	return n;
}

/* A client that claims it reaped what it never read gains nothing: the
 * broker counts what is still on the event socket itself. */
static void t_lying_reaped(void)
{
	struct syshax *en = t_broker_open(&g_tb);
	struct syshax_completion cpl;
	int evfd = -1, fd = t_raw_connect(&evfd), i;

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL_FATAL(syshax_engine_attach(en, -1), 0);
	CU_ASSERT_EQUAL(t_raw_submit(fd, T_MAX_CTX, 0), T_MAX_CTX);
	CU_ASSERT_EQUAL(t_raw_submit(fd, 1, 0), -EAGAIN);
	CU_ASSERT_EQUAL(t_engine_drain(en), T_MAX_CTX);
	/* All completed and unread: the lies must not free a slot. */
	CU_ASSERT_EQUAL(t_raw_submit(fd, 1, T_MAX_CTX), -EAGAIN);
	CU_ASSERT_EQUAL(t_raw_submit(fd, 1, 1000000), -EAGAIN);
	CU_ASSERT_EQUAL(t_raw_submit(fd, 1, 0xffffffffU), -EAGAIN);
	/* Reading four, claiming none, frees four. */
	for (i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(recv(evfd, &cpl, sizeof(cpl), MSG_DONTWAIT),
				(ssize_t)sizeof(cpl));
	CU_ASSERT_EQUAL(t_raw_submit(fd, 8, 0), 4);
	CU_ASSERT_EQUAL(t_raw_submit(fd, 1, 1000), -EAGAIN);
	close(fd);
	close(evfd);
	syshax_close(en);
}

/* A raw engine's fetch with the longest timeout (now + INT64_MAX would
 * overflow: UBSAN in make SAN=1) parks until a job comes. */
static void t_fetch_longest_timeout(void)
{
	struct {
		struct shrt_req h;
		struct syshax_engine_attach_args a;
	} at;
	struct {
		struct shrt_req h;
		struct syshax_engine_fetch_args a;
	} f;
	struct syshax *cl = t_broker_open(&g_tb);
	struct syshax_completion cpl;
	struct syshax_job job;
	struct pollfd pfd;
	int evfd = -1, fd = t_raw_connect(&evfd);

	CU_ASSERT_FATAL(fd >= 0);
	memset(&at, 0, sizeof(at));
	at.h.cmd = SYSHAX_IOC_ENGINE_ATTACH;
	at.h.len = sizeof(at.a);
	at.a.node = -1;
	CU_ASSERT_EQUAL_FATAL(t_raw_call(fd, &at, sizeof(at)), 0);
	memset(&f, 0, sizeof(f));
	f.h.cmd = SYSHAX_IOC_ENGINE_FETCH;
	f.h.len = sizeof(f.a);
	f.a.max = 1;
	f.a.timeout_ns = INT64_MAX;
	CU_ASSERT_EQUAL(send(fd, &f, sizeof(f), 0), (ssize_t)sizeof(f));
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	CU_ASSERT_EQUAL(poll(&pfd, 1, 200), 0);		/* parked */
	syshax_job_init(&job, SYSHAX_OP_NOP, 5);
	CU_ASSERT_EQUAL(syshax_submit(cl, &job, 1), 1);
	CU_ASSERT_EQUAL(poll(&pfd, 1, 5000), 1);
	{
		char buf[4096];
		struct shrt_rep rep;

		CU_ASSERT(recv(fd, buf, sizeof(buf), 0) >= (ssize_t)sizeof(rep));
		memcpy(&rep, buf, sizeof(rep));
		CU_ASSERT_EQUAL(rep.ret, 1);
	}
	close(fd);		/* the held job completes with -EPIPE */
	close(evfd);
	CU_ASSERT_EQUAL(syshax_wait(cl, &cpl, 1, 1, 1000000000), 1);
	CU_ASSERT_EQUAL(cpl.status, -EPIPE);
	syshax_close(cl);
}

/* A file at the socket path that is not a socket is someone's: the broker
 * refuses it (-ENOTSOCK) and leaves it as it was. */
static void t_not_a_socket(void)
{
	struct shxd_broker_conf c = { .engine_gid = (gid_t)-1 };
	struct shxd_broker *b = NULL;
	char path[160];
	struct stat st;
	FILE *f;

	snprintf(path, sizeof(path), "%s/file.sock", g_tb.dir);
	f = fopen(path, "w");
	CU_ASSERT_FATAL(f != NULL);
	fputs("keep me\n", f);
	fclose(f);
	c.socket_path = path;
	CU_ASSERT_EQUAL(shxd_broker_create(&c, &b), -ENOTSOCK);
	CU_ASSERT_EQUAL(stat(path, &st), 0);
	CU_ASSERT(S_ISREG(st.st_mode) && st.st_size == 8);
	unlink(path);
	/* A missing directory is made, and said so. */
	snprintf(path, sizeof(path), "%s/made/b.sock", g_tb.dir);
	CU_ASSERT_EQUAL_FATAL(shxd_broker_create(&c, &b), 0);
	CU_ASSERT_EQUAL(shxd_broker_made_dir(b), 1);
	shxd_broker_destroy(b);
	CU_ASSERT_EQUAL(shxd_broker_create(&c, &b), 0);
	CU_ASSERT_EQUAL(shxd_broker_made_dir(b), 0);
	shxd_broker_destroy(b);
	*strrchr(path, '/') = 0;
	CU_ASSERT_EQUAL(rmdir(path), 0);
}

/* In a child running as nobody: a client like any other, but no engine
 * (SO_PEERCRED: neither root, the broker's user nor its group). */
static int t_as_nobody(void)
{
	struct syshax_open_opts o = {
		.backend = SYSHAX_BACKEND_DAEMON, .path = g_tb.path,
	};
	struct syshax_buffer buf;
	struct syshax *sh;
	int ret;

	if (setgid(65534) || setuid(65534))
		return 10;
	/* Below a folder closed to others (a private TMPDIR, say) nobody
	 * reaches no socket: the case skips there. */
	if (access(g_tb.path, W_OK) && errno == EACCES)
		return 77;
	ret = syshax_open(&sh, &o);
	if (ret) {
		printf("\n  open as nobody: %s ", syshax_strerror(ret));
		return 11;
	}
	if (syshax_buf_alloc(sh, 4096, -1, 0, &buf))
		return 12;
	if (syshax_engine_attach(sh, -1) != -EPERM)
		return 13;
	syshax_close(sh);
	return 0;
}

static void t_engine_privilege(void)
{
	int status;
	pid_t pid;

	if (geteuid()) {
		printf("\n  SKIP: needs root to become another user ");
		return;
	}
	CU_ASSERT_EQUAL_FATAL(chmod(g_tb.dir, 0755), 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (!pid)
		_exit(t_as_nobody());
	status = t_wait_child(pid, 30);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
		printf("\n  SKIP: user nobody cannot reach %s ", g_tb.path);
		return;
	}
	if (status)
		printf("\n  child (as nobody) ended with status %#x ", status);
	CU_ASSERT(WIFEXITED(status));
	CU_ASSERT_EQUAL(WEXITSTATUS(status), 0);
	CU_ASSERT_EQUAL(t_pinned_settled(), 0);
}

static volatile sig_atomic_t g_stop2;

static void *t_broker2_main(void *arg);

/* As a user, with the default paths: the broker and the library agree on
 * $XDG_RUNTIME_DIR/syshax/syshaxd.sock; without that variable both say
 * -ENOENT. */
static int t_user_defaults(const char *xdg)
{
	struct shxd_broker_conf c = { .socket_path = NULL };
	struct syshax_open_opts o = { .backend = SYSHAX_BACKEND_DAEMON };
	char want[256];
	struct shxd_broker *b;
	struct syshax *sh;
	pthread_t th;
	int ret;

	if (setgid(65534) || setuid(65534))
		return 10;
	if (access(xdg, W_OK) && errno == EACCES)
		return 77;	/* as in t_as_nobody() */
	unsetenv("XDG_RUNTIME_DIR");
	if (shxd_broker_create(&c, &b) != -ENOENT ||
	    syshax_open(&sh, &o) != -ENOENT)
		return 11;
	setenv("XDG_RUNTIME_DIR", xdg, 1);
	snprintf(want, sizeof(want), "%s/syshax/syshaxd.sock", xdg);
	if (shxd_broker_create(&c, &b))
		return 12;
	if (strcmp(shxd_broker_path(b), want))
		return 13;
	g_stop2 = 0;
	/* Without the broker's thread the open would wait for ever. */
	if (pthread_create(&th, NULL, t_broker2_main, b))
		return 15;
	ret = syshax_open(&sh, &o);
	if (!ret)
		syshax_close(sh);
	g_stop2 = 1;
	pthread_join(th, NULL);
	shxd_broker_destroy(b);
	return ret ? 14 : 0;
}

static void t_defaults(void)
{
	char xdg[200];
	int status;
	pid_t pid;

	if (geteuid()) {
		printf("\n  SKIP: needs root to become another user ");
		return;
	}
	snprintf(xdg, sizeof(xdg), "%s/xdg", g_tb.dir);
	CU_ASSERT_EQUAL_FATAL(chmod(g_tb.dir, 0755), 0);
	CU_ASSERT_EQUAL_FATAL(mkdir(xdg, 0700), 0);
	CU_ASSERT_EQUAL_FATAL(chown(xdg, 65534, 65534), 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (!pid)
		_exit(t_user_defaults(xdg));
	status = t_wait_child(pid, 30);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
		printf("\n  SKIP: user nobody cannot reach %s ", xdg);
		rmdir(xdg);
		return;
	}
	if (status)
		printf("\n  child (as nobody) ended with status %#x ", status);
	CU_ASSERT_EQUAL(status, 0);
	strcat(xdg, "/syshax");
	CU_ASSERT_EQUAL(rmdir(xdg), 0);	/* created by the broker, now empty */
	*strrchr(xdg, '/') = 0;
	rmdir(xdg);
}

static int64_t t_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *t_broker2_main(void *arg)
{
	shxd_broker_run(arg, &g_stop2);
	return NULL;
}

/* A broker that goes: calls fail with -EPIPE at once, none hangs. */
static void t_broker_gone(void)
{
	struct shxd_broker_conf c = { .socket_path = NULL };
	struct syshax_open_opts o = { .backend = SYSHAX_BACKEND_DAEMON };
	struct syshax_completion cpl;
	struct syshax_stats_args st;
	struct shxd_broker *b;
	struct syshax *sh;
	struct syshax_job job;
	char path[160];
	pthread_t th;
	int64_t t0;

	snprintf(path, sizeof(path), "%s/gone.sock", g_tb.dir);
	c.socket_path = path;
	o.path = path;
	CU_ASSERT_EQUAL_FATAL(shxd_broker_create(&c, &b), 0);
	g_stop2 = 0;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, t_broker2_main, b), 0);
	CU_ASSERT_EQUAL_FATAL(syshax_open(&sh, &o), 0);
	g_stop2 = 1;
	pthread_join(th, NULL);
	shxd_broker_destroy(b);
	syshax_job_init(&job, SYSHAX_OP_NOP, 1);
	CU_ASSERT_EQUAL(syshax_submit(sh, &job, 1), -EPIPE);
	CU_ASSERT_EQUAL(syshax_stats(sh, &st), -EPIPE);
	t0 = t_now_ns();
	CU_ASSERT_EQUAL(syshax_wait(sh, &cpl, 1, 1, 5000000000LL), -EPIPE);
	CU_ASSERT(t_now_ns() - t0 < 1000000000LL);
	syshax_close(sh);
}

int main(void)
{
	static const struct t_test tests[] = {
		{ "a second broker on the path: -EADDRINUSE", t_create_twice },
		{ "the socket path answers once it exists", t_path_ready },
		{ "VERSION", t_version },
		{ "alloc, map, info, stats, free", t_alloc_map_free },
		{ "alloc errors", t_alloc_errors },
		{ "NUMA placement, huge pages", t_numa_placement },
		{ "isolation; export and import", t_isolation_and_import },
		{ "buffer calls from three threads", t_threads },
		{ "bad refs: shared validation", t_bad_refs },
		{ "jobs: client, engine, limits, -EPIPE", t_jobs },
		{ "engine fd readiness; fetch interrupted: -EINTR",
		  t_engine_fd_and_eintr },
		{ "client gone: jobs cancelled", t_client_gone },
		{ "malformed requests", t_malformed },
		{ "lying about reaped counts: still -EAGAIN", t_lying_reaped },
		{ "fetch with timeout INT64_MAX parks", t_fetch_longest_timeout },
		{ "a file at the socket path: -ENOTSOCK", t_not_a_socket },
		{ "engines need privilege: -EPERM", t_engine_privilege },
		{ "broker gone: -EPIPE", t_broker_gone },
		{ "default socket path of a user", t_defaults },
	};

	/* The socket protocol's own rules (notes, parked fetches, SIOCOUTQ
	 * credits) on the old path, which answers each call in order; the
	 * rings are the conformance suite's and broker_ring_ut's. */
	setenv("SYSHAX_RINGS", "0", 1);
	return T_RUN_SUITE("userspace broker", t_setup, t_teardown, tests);
}
