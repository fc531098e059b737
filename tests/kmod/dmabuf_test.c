// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * syshax.ko dma-buf export and import: the exported fd's own mmap and cpu
 * access brackets, PRIME import into vgem (libdrm), and sharing a buffer
 * with another process by passing the fd over a unix socket. Runs in the
 * VM (make vm-check); exits 77 without the device.
 */
#include <dirent.h>
#include <linux/dma-buf.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <xf86drm.h>

#include "t_kmod.h"

#define T_SIZE	(4 * T_MIB)


static void t_skip(const char *what)
{
	if (getenv("SYSHAX_VM"))
		CU_FAIL_FATAL("missing in the VM (see stdout)");
	printf("\n*** SKIP: %s ***\n", what);
}

/* A buffer filled with pattern seed, mapped at *p. */
static uint32_t t_buf(unsigned int seed, uint8_t **p, uint64_t *id)
{
	struct syshax_buf_alloc_args a;

	*p = NULL;
	if (t_alloc(g_fd, T_SIZE, 0, 0, &a))
		return 0;
	*p = t_map(g_fd, a.mmap_offset, T_SIZE);
	if (*p)
		t_fill(*p, T_SIZE, seed);
	if (id)
		*id = a.id;
	return a.handle;
}

/* t_buf(), exported with CLOEXEC: the dma-buf fd (the test ends when any
 * step fails). */
static int t_buf_exported(unsigned int seed, uint8_t **p, uint64_t *id,
			  uint32_t *h)
{
	int d;

	*h = t_buf(seed, p, id);
	CU_ASSERT_FATAL(*h != 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(*p);
	d = t_export(g_fd, *h, SYSHAX_EXPORT_CLOEXEC);
	CU_ASSERT_FATAL(d >= 0);
	return d;
}

static int t_cloexec(int fd)
{
	int fl = fcntl(fd, F_GETFD);

	return fl < 0 ? -1 : !!(fl & FD_CLOEXEC);
}

/* The module's reference count (/sys/module/syshax/refcnt). */
static long long t_module_refs(void)
{
	long long v = -1;
	FILE *f = fopen("/sys/module/syshax/refcnt", "r");

	if (f) {
		if (fscanf(f, "%lld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static void test_export_flags(void)
{
	uint64_t before = t_pinned(g_fd);
	long long refs;
	uint32_t h;
	uint8_t *p;
	int d1, d2;

	h = t_buf(1, &p, NULL);
	CU_ASSERT_FATAL(h != 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	refs = t_module_refs();
	d1 = t_export(g_fd, h, SYSHAX_EXPORT_CLOEXEC);
	d2 = t_export(g_fd, h, 0);
	CU_ASSERT_FATAL(d1 >= 0);
	CU_ASSERT_FATAL(d2 >= 0);
	/* Each dma-buf holds the module: no rmmod under its feet. */
	CU_ASSERT_EQUAL(t_module_refs(), refs + 2);
	CU_ASSERT_EQUAL(t_cloexec(d1), 1);
	CU_ASSERT_EQUAL(t_cloexec(d2), 0);
	CU_ASSERT_EQUAL(lseek(d1, 0, SEEK_END), (off_t)T_SIZE);
	/* The dma-bufs hold the buffer after its handle and mapping go. */
	CU_ASSERT_EQUAL(munmap(p, T_SIZE), 0);
	CU_ASSERT_EQUAL(t_free(g_fd, h), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before + T_SIZE);
	CU_ASSERT_EQUAL(close(d1), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before + T_SIZE);
	CU_ASSERT_EQUAL(close(d2), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before);
	CU_ASSERT_EQUAL(t_module_refs(), refs);
}

static int t_sync(int dfd, uint64_t flags)
{
	struct dma_buf_sync s = { .flags = flags };

	return t_ioctl(dfd, DMA_BUF_IOCTL_SYNC, &s);
}

/* The dma-buf fd maps the same pages, at any page offset inside. */
static void test_dmabuf_mmap(void)
{
	uint64_t before = t_pinned(g_fd);
	uint8_t *p, *q, *tail;
	uint32_t h;
	void *bad;
	int d;

	d = t_buf_exported(2, &p, NULL, &h);
	q = mmap(NULL, T_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, d, 0);
	CU_ASSERT_FATAL(q != MAP_FAILED);
	tail = mmap(NULL, T_MIB, PROT_READ | PROT_WRITE, MAP_SHARED, d,
		    3 * T_MIB);
	CU_ASSERT_FATAL(tail != MAP_FAILED);
	CU_ASSERT_EQUAL(t_sync(d, DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ), 0);
	CU_ASSERT_EQUAL(t_check(q, T_SIZE, 2), T_SIZE);
	CU_ASSERT_EQUAL(t_sync(d, DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ), 0);
	CU_ASSERT_EQUAL(t_sync(d, DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW), 0);
	t_fill(q, T_SIZE, 3);
	CU_ASSERT_EQUAL(t_sync(d, DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW), 0);
	CU_ASSERT_EQUAL(t_check(p, T_SIZE, 3), T_SIZE);
	CU_ASSERT_EQUAL(memcmp(tail, p + 3 * T_MIB, T_MIB), 0);
	/* Past the end, and private mappings, are refused. */
	bad = mmap(NULL, T_MIB, PROT_READ, MAP_SHARED, d, T_SIZE);
	CU_ASSERT_PTR_EQUAL(bad, MAP_FAILED);
	bad = mmap(NULL, T_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE, d, 0);
	CU_ASSERT_PTR_EQUAL(bad, MAP_FAILED);
	/* The dma-buf's mapping alone keeps the buffer. */
	CU_ASSERT_EQUAL(munmap(p, T_SIZE), 0);
	CU_ASSERT_EQUAL(t_free(g_fd, h), 0);
	CU_ASSERT_EQUAL(close(d), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before + T_SIZE);
	CU_ASSERT_EQUAL(t_check(q, T_SIZE, 3), T_SIZE);
	CU_ASSERT_EQUAL(munmap(q, T_SIZE), 0);
	CU_ASSERT_EQUAL(munmap(tail, T_MIB), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before);
}

/* BUF_IMPORT in the same process: a second handle, the same buffer. */
static void test_import_self(void)
{
	struct syshax_buf_import_args im;
	uint64_t before = t_pinned(g_fd), id;
	uint8_t *p, *q;
	uint32_t h;
	int d;

	d = t_buf_exported(4, &p, &id, &h);
	CU_ASSERT_EQUAL_FATAL(t_import(g_fd, d, &im), 0);
	CU_ASSERT_NOT_EQUAL(im.handle, h);
	CU_ASSERT_EQUAL(im.id, id);
	CU_ASSERT_EQUAL(im.size, T_SIZE);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before + T_SIZE);
	CU_ASSERT_EQUAL(close(d), 0);
	CU_ASSERT_EQUAL(t_free(g_fd, h), 0);
	q = t_map(g_fd, im.mmap_offset, T_SIZE);
	CU_ASSERT_PTR_NOT_NULL_FATAL(q);
	CU_ASSERT_EQUAL(t_check(q, T_SIZE, 4), T_SIZE);
	CU_ASSERT_EQUAL(munmap(q, T_SIZE), 0);
	CU_ASSERT_EQUAL(munmap(p, T_SIZE), 0);
	CU_ASSERT_EQUAL(t_free(g_fd, im.handle), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before);
}

/* Opens the DRM node of vgem whose name starts with prefix, or -1. */
static int t_vgem_node(const char *prefix)
{
	DIR *dir = opendir("/dev/dri");
	struct dirent *de;
	int found = -1;

	if (!dir)
		return -1;
	while (found < 0 && (de = readdir(dir))) {
		char path[300];
		drmVersionPtr v;
		int fd;

		if (strncmp(de->d_name, prefix, strlen(prefix)))
			continue;
		snprintf(path, sizeof(path), "/dev/dri/%s", de->d_name);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		v = drmGetVersion(fd);
		if (v && !strcmp(v->name, "vgem"))
			found = fd;
		else
			close(fd);
		drmFreeVersion(v);
	}
	closedir(dir);
	return found;
}

/*
 * PRIME import into vgem: vgem attaches and maps the sg table, PRIME hands
 * back the same dma-buf, and its mapping sees the bytes written through
 * syshax and the other way round. (DRM refuses dumb-map offsets for
 * imported objects, so userspace maps an import through its dma-buf.)
 */
static void test_vgem_prime(void)
{
	struct syshax_buf_import_args im;
	uint64_t before = t_pinned(g_fd), id;
	uint32_t h, gem = 0, gem2 = 0;
	struct stat s1, s2;
	int rfd, d, back = -1;
	uint8_t *p, *q;

	rfd = t_vgem_node("renderD");
	if (rfd < 0) {
		t_skip("no vgem render node (modprobe vgem)");
		return;
	}
	d = t_buf_exported(5, &p, &id, &h);
	CU_ASSERT_EQUAL_FATAL(drmPrimeFDToHandle(rfd, d, &gem), 0);
	CU_ASSERT_EQUAL(drmPrimeFDToHandle(rfd, d, &gem2), 0);
	CU_ASSERT_EQUAL(gem2, gem);
	CU_ASSERT_EQUAL_FATAL(drmPrimeHandleToFD(rfd, gem, DRM_CLOEXEC | DRM_RDWR,
						 &back), 0);
	CU_ASSERT_EQUAL(fstat(d, &s1), 0);
	CU_ASSERT_EQUAL(fstat(back, &s2), 0);
	CU_ASSERT_EQUAL(s1.st_ino, s2.st_ino);
	/* While vgem holds a device mapping, the cpu brackets sync it. */
	CU_ASSERT_EQUAL(t_sync(back, DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW), 0);
	q = mmap(NULL, T_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, back, 0);
	CU_ASSERT_FATAL(q != MAP_FAILED);
	CU_ASSERT_EQUAL(t_check(q, T_SIZE, 5), T_SIZE);
	t_fill(q, T_SIZE, 6);
	CU_ASSERT_EQUAL(t_sync(back, DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW), 0);
	CU_ASSERT_EQUAL(t_check(p, T_SIZE, 6), T_SIZE);
	/* What vgem hands back imports as the same buffer. */
	CU_ASSERT_EQUAL_FATAL(t_import(g_fd, back, &im), 0);
	CU_ASSERT_EQUAL(im.id, id);
	CU_ASSERT_EQUAL(t_free(g_fd, im.handle), 0);

	CU_ASSERT_EQUAL(munmap(q, T_SIZE), 0);
	CU_ASSERT_EQUAL(close(back), 0);
	CU_ASSERT_EQUAL(close(d), 0);
	CU_ASSERT_EQUAL(munmap(p, T_SIZE), 0);
	CU_ASSERT_EQUAL(t_free(g_fd, h), 0);
	/* vgem's GEM object still holds the dma-buf and so the buffer. */
	CU_ASSERT_EQUAL(t_pinned(g_fd), before + T_SIZE);
	CU_ASSERT_EQUAL(drmCloseBufferHandle(rfd, gem), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before);
	close(rfd);
}

/*
 * A registered buffer (shared memory pinned by BUF_REGISTER) exports like
 * an allocated one: vgem imports its sg table, and the dma-buf's mapping
 * (PFNs of the pinned pages) shows the registered memory.
 */
static void test_registered_export(void)
{
	struct syshax_buf_register_args r = { 0 };
	uint64_t before = t_pinned(g_fd);
	uint8_t *mem, *q;
	uint32_t gem = 0;
	int rfd, d;

	rfd = t_vgem_node("renderD");
	if (rfd < 0) {
		t_skip("no vgem render node (modprobe vgem)");
		return;
	}
	mem = mmap(NULL, T_SIZE, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CU_ASSERT_FATAL(mem != MAP_FAILED);
	t_fill(mem, T_SIZE, 8);
	r.addr = (uintptr_t)mem;
	r.size = T_SIZE;
	CU_ASSERT_EQUAL_FATAL(t_ioctl(g_fd, SYSHAX_IOC_BUF_REGISTER, &r), 0);
	d = t_export(g_fd, r.handle, SYSHAX_EXPORT_CLOEXEC);
	CU_ASSERT_FATAL(d >= 0);
	CU_ASSERT_EQUAL(drmPrimeFDToHandle(rfd, d, &gem), 0);
	q = mmap(NULL, T_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, d, 0);
	CU_ASSERT_FATAL(q != MAP_FAILED);
	CU_ASSERT_EQUAL(t_check(q, T_SIZE, 8), T_SIZE);
	t_fill(q, T_SIZE, 9);
	CU_ASSERT_EQUAL(t_check(mem, T_SIZE, 9), T_SIZE);
	CU_ASSERT_EQUAL(munmap(q, T_SIZE), 0);
	CU_ASSERT_EQUAL(drmCloseBufferHandle(rfd, gem), 0);
	CU_ASSERT_EQUAL(close(d), 0);
	CU_ASSERT_EQUAL(t_free(g_fd, r.handle), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before);
	CU_ASSERT_EQUAL(munmap(mem, T_SIZE), 0);
	close(rfd);
}

/* A dma-buf from another exporter is not a syshax buffer: -EINVAL. */
static void test_import_foreign(void)
{
	struct drm_mode_create_dumb c = { .height = 64, .width = 64, .bpp = 32 };
	struct syshax_buf_import_args im;
	int cfd, d = -1;

	cfd = t_vgem_node("card");
	if (cfd < 0) {
		t_skip("no vgem card node (modprobe vgem)");
		return;
	}
	CU_ASSERT_EQUAL_FATAL(drmIoctl(cfd, DRM_IOCTL_MODE_CREATE_DUMB, &c), 0);
	CU_ASSERT_EQUAL_FATAL(drmPrimeHandleToFD(cfd, c.handle, DRM_CLOEXEC, &d),
			      0);
	CU_ASSERT_EQUAL(t_import(g_fd, d, &im), -EINVAL);
	close(d);
	CU_ASSERT_EQUAL(drmCloseBufferHandle(cfd, c.handle), 0);
	close(cfd);
}

static int t_send_fd(int sock, int fd, const void *data, size_t len)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = (void *)data, .iov_len = len };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

	memset(cbuf, 0, sizeof(cbuf));
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &msg, 0) == (ssize_t)len ? 0 : -1;
}

static int t_recv_fd(int sock, void *data, size_t len)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = data, .iov_len = len };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm;
	int fd;

	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != (ssize_t)len)
		return -1;
	cm = CMSG_FIRSTHDR(&msg);
	if (!cm || cm->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/* What the exporter tells the importer next to the fd. */
struct t_share {
	uint64_t id;
	uint64_t pinned_before;
};

/* The importer: its own open file; reports each check as an exit bit. */
static int t_importer(int sock)
{
	struct syshax_buf_import_args im;
	struct t_share sh;
	int fd, d, code = 0;
	uint8_t *q;
	char go;

	fd = t_open();
	if (fd < 0)
		return 100;
	d = t_recv_fd(sock, &sh, sizeof(sh));
	if (d < 0)
		return 101;
	if (t_import(fd, d, &im))
		return 102;
	close(d);
	code |= (im.id != sh.id) << 0;
	code |= (im.size != T_SIZE) << 1;
	/* Wait until the exporter has dropped all it held. */
	if (read(sock, &go, 1) != 1)
		return 103;
	code |= (t_pinned(fd) != sh.pinned_before + T_SIZE) << 2;
	q = t_map(fd, im.mmap_offset, T_SIZE);
	if (!q)
		return 104;
	code |= (t_check(q, T_SIZE, 7) != T_SIZE) << 3;
	munmap(q, T_SIZE);
	code |= (t_free(fd, im.handle) != 0) << 4;
	code |= (t_pinned(fd) != sh.pinned_before) << 5;
	close(fd);
	return code;
}

/*
 * Export, pass the fd to a child over a unix socket, BUF_IMPORT there: the
 * same bytes, and the buffer outlives the exporter until the importer
 * frees it.
 */
static void test_share_with_child(void)
{
	struct t_share sh = { .pinned_before = t_pinned(g_fd) };
	int sv[2], status = -1, d;
	uint8_t *p;
	uint32_t h;
	pid_t pid;

	CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
					 sv), 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		close(g_fd);
		_exit(t_importer(sv[1]));
	}
	close(sv[1]);
	h = t_buf(7, &p, &sh.id);
	CU_ASSERT(h != 0);
	CU_ASSERT_PTR_NOT_NULL(p);
	d = h ? t_export(g_fd, h, SYSHAX_EXPORT_CLOEXEC) : -1;
	CU_ASSERT(d >= 0);
	if (d >= 0)
		CU_ASSERT_EQUAL(t_send_fd(sv[0], d, &sh, sizeof(sh)), 0);
	/* The exporter lets go of everything before the importer reads. */
	if (p)
		CU_ASSERT_EQUAL(munmap(p, T_SIZE), 0);
	if (h)
		CU_ASSERT_EQUAL(t_free(g_fd, h), 0);
	if (d >= 0)
		CU_ASSERT_EQUAL(close(d), 0);
	CU_ASSERT_EQUAL(write(sv[0], "g", 1), 1);
	close(sv[0]);
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	CU_ASSERT(WIFEXITED(status));
	CU_ASSERT_EQUAL(WEXITSTATUS(status), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), sh.pinned_before);
}

int main(void)
{
	static const struct t_test tests[] = {
		{ "export_flags", test_export_flags },
		{ "dmabuf_mmap", test_dmabuf_mmap },
		{ "import_self", test_import_self },
		{ "vgem_prime", test_vgem_prime },
		{ "registered_export", test_registered_export },
		{ "import_foreign", test_import_foreign },
		{ "share_with_child", test_share_with_child },
	};

	return T_MAIN("dmabuf_test", "kmod_dmabuf", t_suite_open,
		      t_suite_close, tests);
}
