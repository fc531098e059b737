// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * A syshax mapping as a VFIO userspace driver uses it: VFIO_IOMMU_MAP_DMA
 * (type1, which pins the pages through get_user_pages) maps the buffer for
 * QEMU's "edu" PCI device behind the emulated IOMMU, and the device's DMA
 * engine copies through it. Runs in the VM (make vm-check), which has the
 * edu device, intel-iommu and vfio-pci; exits 77 without /dev/syshax.
 */
#include <dirent.h>
#include <linux/vfio.h>
#include <time.h>

#include "t_kmod.h"

#define T_EDU_VENDOR	0x1234
#define T_EDU_DEVICE	0x11e8
/* edu registers (QEMU docs/specs/edu.rst) and its 4 KiB DMA window. */
#define T_EDU_ID	0x00
#define T_EDU_DMA_SRC	0x80
#define T_EDU_DMA_DST	0x88
#define T_EDU_DMA_CNT	0x90
#define T_EDU_DMA_CMD	0x98
#define T_EDU_CMD_START	0x1
#define T_EDU_CMD_TO_RAM 0x2
#define T_EDU_BUF	0x40000
/* Less than its 4 KiB window: QEMU 7.2's edu rejects a DMA that ends
 * exactly at the window's end (and stops the whole machine). */
#define T_DMA_LEN	2048
/* edu masks DMA addresses to 28 bits: the IOVA stays below. */
#define T_IOVA		0x100000ULL
#define T_SIZE		(2 * T_MIB)


static void t_skip(const char *what)
{
	if (getenv("SYSHAX_VM"))
		CU_FAIL_FATAL("missing in the VM (see stdout)");
	printf("\n*** SKIP: %s ***\n", what);
}

static long t_sysfs_hex(const char *dir, const char *name)
{
	char path[512];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%li", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static int t_write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -errno;
}

/* Finds the edu device, binds it to vfio-pci; its address in bdf. */
static int t_edu_bind(char *bdf, size_t len)
{
	const char *base = "/sys/bus/pci/devices";
	char dir[512], path[600];
	DIR *d = opendir(base);
	struct dirent *de;
	int found = -ENODEV;

	if (!d)
		return -errno;
	while (found && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", base, de->d_name);
		if (t_sysfs_hex(dir, "vendor") == T_EDU_VENDOR &&
		    t_sysfs_hex(dir, "device") == T_EDU_DEVICE &&
		    strlen(de->d_name) < len) {
			memcpy(bdf, de->d_name, strlen(de->d_name) + 1);
			found = 0;
		}
	}
	closedir(d);
	if (found)
		return found;
	snprintf(path, sizeof(path), "%s/%s/driver", base, bdf);
	if (access(path, F_OK) == 0)
		return 0;	/* bound already (by an earlier run) */
	snprintf(path, sizeof(path), "%s/%s/driver_override", base, bdf);
	if (t_write_str(path, "vfio-pci"))
		return -EIO;
	return t_write_str("/sys/bus/pci/drivers_probe", bdf);
}

/* The device's VFIO group number, from its iommu_group link. */
static int t_group_of(const char *bdf)
{
	char path[300], target[300];
	ssize_t n;
	const char *slash;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/iommu_group", bdf);
	n = readlink(path, target, sizeof(target) - 1);
	if (n <= 0)
		return -1;
	target[n] = 0;
	slash = strrchr(target, '/');
	return slash ? atoi(slash + 1) : -1;
}

struct t_vfio {
	int container, group, device;
	volatile uint8_t *bar0;
	size_t bar0_size;
};

static int t_vfio_open(struct t_vfio *v, const char *bdf)
{
	struct vfio_group_status gs = { .argsz = sizeof(gs) };
	struct vfio_region_info ri = { .argsz = sizeof(ri) };
	char path[64];
	uint16_t cmd;
	int grp = t_group_of(bdf);

	errno = 0;
	v->container = open("/dev/vfio/vfio", O_RDWR | O_CLOEXEC);
	snprintf(path, sizeof(path), "/dev/vfio/%d", grp);
	v->group = open(path, O_RDWR | O_CLOEXEC);
	if (v->container < 0 || v->group < 0)
		return -ENODEV;
	if (ioctl(v->container, VFIO_GET_API_VERSION) != VFIO_API_VERSION ||
	    ioctl(v->container, VFIO_CHECK_EXTENSION, VFIO_TYPE1_IOMMU) != 1 ||
	    ioctl(v->group, VFIO_GROUP_GET_STATUS, &gs) ||
	    !(gs.flags & VFIO_GROUP_FLAGS_VIABLE) ||
	    ioctl(v->group, VFIO_GROUP_SET_CONTAINER, &v->container) ||
	    ioctl(v->container, VFIO_SET_IOMMU, VFIO_TYPE1_IOMMU))
		return errno ? -errno : -EIO;
	v->device = ioctl(v->group, VFIO_GROUP_GET_DEVICE_FD, bdf);
	if (v->device < 0)
		return -errno;
	ri.index = VFIO_PCI_BAR0_REGION_INDEX;
	if (ioctl(v->device, VFIO_DEVICE_GET_REGION_INFO, &ri) ||
	    !(ri.flags & VFIO_REGION_INFO_FLAG_MMAP))
		return -EIO;
	v->bar0_size = ri.size;
	v->bar0 = mmap(NULL, ri.size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       v->device, (off_t)ri.offset);
	if (v->bar0 == MAP_FAILED)
		return -errno;
	/* Bus mastering on, so that the device may DMA. */
	ri.index = VFIO_PCI_CONFIG_REGION_INDEX;
	if (ioctl(v->device, VFIO_DEVICE_GET_REGION_INFO, &ri) ||
	    pread(v->device, &cmd, 2, (off_t)ri.offset + 4) != 2)
		return -EIO;
	cmd |= 0x4;
	return pwrite(v->device, &cmd, 2, (off_t)ri.offset + 4) == 2 ? 0 : -EIO;
}

static void t_vfio_close(struct t_vfio *v)
{
	if (v->bar0 && v->bar0 != MAP_FAILED)
		munmap((void *)v->bar0, v->bar0_size);
	if (v->device >= 0)
		close(v->device);
	if (v->group >= 0)
		close(v->group);
	if (v->container >= 0)
		close(v->container);
}

static void t_reg64(struct t_vfio *v, unsigned int off, uint64_t val)
{
	*(volatile uint64_t *)(v->bar0 + off) = val;
}

/* One edu DMA of count bytes; 0 once the device reports it done. */
static int t_edu_dma(struct t_vfio *v, uint64_t src, uint64_t dst,
		     uint64_t count, uint64_t cmd)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };

	t_reg64(v, T_EDU_DMA_SRC, src);
	t_reg64(v, T_EDU_DMA_DST, dst);
	t_reg64(v, T_EDU_DMA_CNT, count);
	t_reg64(v, T_EDU_DMA_CMD, cmd | T_EDU_CMD_START);
	for (int i = 0; i < 500; i++) {
		if (!(*(volatile uint32_t *)(v->bar0 + T_EDU_DMA_CMD) &
		      T_EDU_CMD_START))
			return 0;
		nanosleep(&ts, NULL);
	}
	return -ETIMEDOUT;
}

/*
 * VFIO_IOMMU_MAP_DMA pins the syshax mapping (type1 uses get_user_pages),
 * then the device copies 2 KiB from the buffer into its own memory and back
 * to another place in the buffer, through the IOMMU.
 */
static void test_vfio_dma(void)
{
	struct vfio_iommu_type1_dma_map map = { .argsz = sizeof(map) };
	struct vfio_iommu_type1_dma_unmap unmap = { .argsz = sizeof(unmap) };
	struct t_vfio v = { .container = -1, .group = -1, .device = -1 };
	struct syshax_buf_alloc_args a;
	uint64_t before = t_pinned(g_fd);
	char bdf[64] = "";
	uint8_t *p;
	int ret;

	if (getuid() != 0 || t_edu_bind(bdf, sizeof(bdf))) {
		t_skip("no QEMU edu device to bind to vfio-pci");
		return;
	}
	ret = t_vfio_open(&v, bdf);
	if (ret) {
		printf("\n  vfio setup for %s: %d\n", bdf, ret);
		t_vfio_close(&v);
		t_skip("vfio-pci with an IOMMU for the edu device");
		return;
	}
	CU_ASSERT_EQUAL(*(volatile uint32_t *)(v.bar0 + T_EDU_ID) & 0xff, 0xed);

	CU_ASSERT_EQUAL_FATAL(t_alloc(g_fd, T_SIZE, 0, 0, &a), 0);
	p = t_map(g_fd, a.mmap_offset, T_SIZE);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	t_fill(p + 0x1000, T_DMA_LEN, 1);
	map.flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE;
	map.vaddr = (uintptr_t)p;
	map.iova = T_IOVA;
	map.size = T_SIZE;
	CU_ASSERT_EQUAL_FATAL(t_ioctl(v.container, VFIO_IOMMU_MAP_DMA, &map), 0);

	CU_ASSERT_EQUAL(t_edu_dma(&v, T_IOVA + 0x1000, T_EDU_BUF,
				  T_DMA_LEN, 0), 0);
	CU_ASSERT_EQUAL(t_edu_dma(&v, T_EDU_BUF, T_IOVA + T_MIB + 0x3000,
				  T_DMA_LEN, T_EDU_CMD_TO_RAM), 0);
	CU_ASSERT_EQUAL(t_check(p + T_MIB + 0x3000, T_DMA_LEN, 1),
			T_DMA_LEN);

	/* The VFIO pin holds the pages; syshax's count is its own. */
	CU_ASSERT_EQUAL(t_pinned(g_fd), before + T_SIZE);
	unmap.iova = T_IOVA;
	unmap.size = T_SIZE;
	CU_ASSERT_EQUAL(t_ioctl(v.container, VFIO_IOMMU_UNMAP_DMA, &unmap), 0);
	CU_ASSERT_EQUAL(unmap.size, T_SIZE);
	t_vfio_close(&v);
	CU_ASSERT_EQUAL(munmap(p, T_SIZE), 0);
	CU_ASSERT_EQUAL(t_free(g_fd, a.handle), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before);
}

int main(void)
{
	static const struct t_test tests[] = {
		{ "vfio_dma", test_vfio_dma },
	};

	return T_MAIN("vfio_test", "kmod_vfio", t_suite_open, t_suite_close,
		      tests);
}
