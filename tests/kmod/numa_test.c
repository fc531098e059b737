// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * syshax.ko on a CPU whose NUMA node has no memory (a memoryless node):
 * BUF_ALLOC with node -1 takes the nearest node with memory (by the
 * kernel's node distances), without SYSHAX_BUF_ALLOW_REMOTE; ENGINE_ATTACH
 * takes the memoryless node. Needs such a node with a CPU: make vm-check's
 * second guest has one (VM_NUMA=memoryless tests/vm/run-vm.sh: node 2,
 * CPU 2, nearest memory node 1) and says so in SYSHAX_VM_MEMORYLESS_NODE,
 * where a missing one fails; elsewhere the suite exits 77 (SKIP).
 */
#include <sched.h>
#include <sys/wait.h>

#include "t_jobs.h"

#define T_NODE_SYS	"/sys/devices/system/node/"
#define T_SIZE		(8 * T_MIB)

static int g_node = -1;		/* the memoryless node */
static int g_cpu = -1;		/* one of its CPUs */
static int g_near = -1;		/* its nearest node with memory */
static int g_far = -1;		/* another node with memory, farther */

/* A node list file ("0-1,3") as a bit mask of nodes below 64. */
static uint64_t t_node_list(const char *path)
{
	uint64_t mask = 0;
	int a, b, n;
	char sep;
	FILE *f = fopen(path, "r");

	if (!f)
		return 0;
	while ((n = fscanf(f, "%d", &a)) == 1) {
		b = a;
		sep = (char)fgetc(f);
		if (sep == '-') {
			if (fscanf(f, "%d", &b) != 1)
				break;
			sep = (char)fgetc(f);
		}
		for (; a <= b && a < 64; a++)
			mask |= 1ULL << a;
		if (sep != ',')
			break;
	}
	fclose(f);
	return mask;
}

/* Distance from node to each node, from sysfs; how many were read. */
static int t_distances(int node, int dist[64])
{
	char path[96];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), T_NODE_SYS "node%d/distance", node);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (n < 64 && fscanf(f, "%d", &dist[n]) == 1)
		n++;
	fclose(f);
	return n;
}

/* The first CPU of node, or -1. */
static int t_node_cpu(int node)
{
	char path[96];

	snprintf(path, sizeof(path), T_NODE_SYS "node%d/cpulist", node);
	for (int c = 0; c < 64; c++)
		if (t_node_list(path) & (1ULL << c))
			return c;
	return -1;
}

/*
 * Finds a memoryless node with a CPU, its nearest memory node (the
 * kernel's choice: smallest distance, lowest number among equals) and a
 * farther one. 0, or -1 when there is none.
 */
static int t_find_memoryless(void)
{
	uint64_t online = t_node_list(T_NODE_SYS "online");
	uint64_t mem = t_node_list(T_NODE_SYS "has_memory");
	int dist[64];

	for (int n = 0; n < 64; n++) {
		int nd, cpu;

		if (!(online & (1ULL << n)) || (mem & (1ULL << n)))
			continue;
		cpu = t_node_cpu(n);
		nd = t_distances(n, dist);
		if (cpu < 0 || nd == 0)
			continue;
		g_node = n;
		g_cpu = cpu;
		for (int m = 0; m < nd; m++) {
			if (!(mem & (1ULL << m)))
				continue;
			if (g_near < 0 || dist[m] < dist[g_near])
				g_near = m;
		}
		for (int m = 0; m < nd; m++)
			if ((mem & (1ULL << m)) && dist[m] > dist[g_near])
				g_far = m;
		return g_near >= 0 ? 0 : -1;
	}
	return -1;
}

static int t_pin_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

/*
 * Pinned to the memoryless node's CPU: node -1 without ALLOW_REMOTE
 * succeeds and every byte lands on the nearest memory node. Before the fix
 * this failed with -ENOMEM (the module asked the memoryless node itself
 * for __GFP_THISNODE pages).
 */
static void test_local_alloc(void)
{
	struct syshax_buf_alloc_args a;
	struct syshax_buf_info_args info;
	uint64_t before = t_pinned(g_fd);
	int ret;

	CU_ASSERT_EQUAL_FATAL(t_pin_cpu(g_cpu), 0);
	CU_ASSERT_EQUAL(sched_getcpu(), g_cpu);
	ret = t_alloc(g_fd, T_SIZE, -1, 0, &a);
	printf("\n  CPU %d (memoryless node %d): node -1 alloc %s, nearest memory node %d\n",
	       g_cpu, g_node, ret ? strerror(-ret) : "ok", g_near);
	CU_ASSERT_EQUAL_FATAL(ret, 0);
	CU_ASSERT_EQUAL_FATAL(t_info(g_fd, a.handle, &info), 0);
	CU_ASSERT_EQUAL(info.node, -1);
	CU_ASSERT_EQUAL(info.flags, 0);
	for (int n = 0; n < SYSHAX_MAX_NODES; n++)
		CU_ASSERT_EQUAL(info.node_bytes[n], n == g_near ? T_SIZE : 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before + T_SIZE);
	/* ALLOW_SMALL alone stays on the nearest node too. */
	{
		struct syshax_buf_alloc_args b;

		CU_ASSERT_EQUAL_FATAL(t_alloc(g_fd, 64 << 10, -1,
					      SYSHAX_BUF_ALLOW_SMALL, &b), 0);
		CU_ASSERT_EQUAL(t_info(g_fd, b.handle, &info), 0);
		CU_ASSERT_EQUAL(info.node_bytes[g_near], 64 << 10);
		CU_ASSERT_EQUAL(t_free(g_fd, b.handle), 0);
	}
	CU_ASSERT_EQUAL(t_free(g_fd, a.handle), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before);
}

/* The memoryless node itself, asked for by number, is still refused. */
static void test_explicit_node(void)
{
	struct syshax_buf_alloc_args a;

	CU_ASSERT_EQUAL(t_alloc(g_fd, T_SIZE, g_node, 0, &a), -EINVAL);
	CU_ASSERT_EQUAL(t_alloc(g_fd, T_SIZE, g_node, SYSHAX_BUF_ALLOC_FLAGS,
				&a), -EINVAL);
}

/*
 * On a CPU of a node with memory, node -1 still means that node (the
 * nearest is not taken where the local node has memory). The CPU's node is
 * the farther memory node when the guest has one.
 */
static void test_memory_node_cpu(void)
{
	struct syshax_buf_alloc_args a;
	struct syshax_buf_info_args info;
	int cpu = g_far >= 0 ? t_node_cpu(g_far) : -1;

	if (cpu < 0) {
		printf("\n  (no CPU on a farther memory node: nothing to compare)\n");
		return;
	}
	CU_ASSERT_EQUAL_FATAL(t_pin_cpu(cpu), 0);
	CU_ASSERT_EQUAL_FATAL(t_alloc(g_fd, T_SIZE, -1, 0, &a), 0);
	CU_ASSERT_EQUAL_FATAL(t_info(g_fd, a.handle, &info), 0);
	CU_ASSERT_EQUAL(info.node_bytes[g_far], T_SIZE);
	CU_ASSERT_EQUAL(t_free(g_fd, a.handle), 0);
}

/* An engine that runs on the memoryless node may say so. */
static void test_engine_attach(void)
{
	struct syshax_engine_attach_args a = { .node = g_node };
	int fd = t_fd();

	CU_ASSERT_EQUAL_FATAL(t_pin_cpu(g_cpu), 0);
	CU_ASSERT_EQUAL(t_ioctl(fd, SYSHAX_IOC_ENGINE_ATTACH, &a), 0);
	CU_ASSERT(a.engine_id != 0);
	close(fd);
}

int main(void)
{
	static const struct t_test tests[] = {
		{ "node -1 on a memoryless node's CPU", test_local_alloc },
		{ "the memoryless node by number", test_explicit_node },
		{ "node -1 on a memory node's CPU", test_memory_node_cpu },
		{ "engine attach on a memoryless node", test_engine_attach },
	};
	const char *want = getenv("SYSHAX_VM_MEMORYLESS_NODE");

	t_require_device("kmod_numa");
	if (t_find_memoryless()) {
		if (want && *want) {
			printf("\n*** FAIL kmod_numa: the guest should have memoryless node %s with a CPU, and has none ***\n\n",
			       want);
			return 1;
		}
		printf("\n*** SKIP kmod_numa: no memoryless NUMA node with a CPU (make vm-check's second guest, VM_NUMA=memoryless, has one) ***\n\n");
		return 77;
	}
	if (want && *want && atoi(want) != g_node) {
		printf("\n*** FAIL kmod_numa: memoryless node %d, expected %s ***\n\n",
		       g_node, want);
		return 1;
	}
	printf("memoryless node %d (CPU %d), nearest memory node %d, farther %d\n",
	       g_node, g_cpu, g_near, g_far);
	return T_RUN_SUITE("kmod numa", t_suite_open, t_suite_close, tests);
}
