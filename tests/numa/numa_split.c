// SPDX-License-Identifier: MIT
/*
 * The CPU engine across NUMA nodes (docs/engine.md, "NUMA placement"):
 *  - syshaxd --print-placement: every pool's weight slices are on its own
 *    node, as move_pages() reports them;
 *  - one daemon with one pool (node 0) and one with a pool on each of
 *    the N nodes load the same GGUF file: GEMM outputs are bit-identical,
 *    FFN outputs equal within the documented tolerance (the f32 sum of
 *    the pools' parts);
 *  - ENGINE_STATS of the split daemon shows bytes on every node.
 * N is the number of nodes with CPUs and memory (syshaxd makes a pool of
 * each), one thread on each. Needs two or more: exits 77 (SKIP) elsewhere;
 * the VM guests of make vm-check have two, or four (vm-check-arm64-4node).
 */
#include <errno.h>
#include <math.h>
#include <numa.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include "../t_cunit.h"
#include "beside.h"
#include "shxk.h"
#include "syshax/rt.h"
#include "wfile.h"

#define HID	96		/* not a multiple of 256 */
#define M	3
#define GGML_Q8_0 8
#define GGML_F32 0

static char g_dir[64], g_file[128], g_exe[4096], g_threads[16];
static int g_cpu0 = -1;		/* a CPU of node 0 */
static int g_nodes;		/* pools of a daemon with a thread per node */
/*
 * FF rows, split at multiples of 32 (docs/engine.md): 160 splits 96 | 64
 * over two pools, 64 | 32 | 32 | 32 over four, and no pool is empty up to
 * five; past that 32 * (nodes + 1) gives every pool 32 rows or more.
 */
static int g_ff;

struct daemon {
	pid_t pid;
	char sock[160];
	struct syshax *sh;
};

static void fill(float *x, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		x[i] = sinf((float)(i * 7 + seed * 13) * 0.37f) * 0.5f;
}

/* An FFN layer: q8_0 gate/up/down and an f32 norm. */
static int write_model(void)
{
	size_t n = (size_t)g_ff * HID, q = n * 34 / 32;
	float *f = malloc(sizeof(float) * (3 * n + HID));
	uint8_t *qw = malloc(3 * q);
	float *norm = f ? f + 3 * n : NULL;
	struct wf_wtensor t[] = {
		{ "blk.0.ffn_gate.weight", GGML_Q8_0, NULL, 2,
		  { HID, g_ff, 1, 1 }, qw, q },
		{ "blk.0.ffn_up.weight", GGML_Q8_0, NULL, 2,
		  { HID, g_ff, 1, 1 }, qw ? qw + q : NULL, q },
		{ "blk.0.ffn_down.weight", GGML_Q8_0, NULL, 2,
		  { g_ff, HID, 1, 1 }, qw ? qw + 2 * q : NULL, q },
		{ "blk.0.ffn_norm.weight", GGML_F32, NULL, 1, { HID, 1, 1, 1 },
		  norm, sizeof(float) * HID },
	};
	int ret = -1;

	if (f && qw) {
		for (unsigned int i = 0; i < 3; i++)
			fill(f + i * n, n, i + 1);	/* gate, up, down */
		fill(norm, HID, 4);
		shxk_quantize(SHXK_Q8_0, f, qw, HID, 0, g_ff);
		shxk_quantize(SHXK_Q8_0, f + n, qw + q, HID, 0, g_ff);
		shxk_quantize(SHXK_Q8_0, f + 2 * n, qw + 2 * q, g_ff, 0, HID);
		ret = wf_gguf_write(g_file, NULL, 0, t,
				    sizeof(t) / sizeof(t[0]));
	}
	free(f);
	free(qw);
	return ret;
}

static int start(struct daemon *d, const char *tag, char *const *extra)
{
	struct syshax_open_opts oo = { .backend = SYSHAX_BACKEND_DAEMON };
	char *argv[16] = { g_exe, "--foreground", "--userspace", "--socket",
			   d->sock, "--model-dir", g_dir };
	unsigned int n = 7;
	struct stat st;

	snprintf(d->sock, sizeof(d->sock), "%s/%s.sock", g_dir, tag);
	while (*extra)
		argv[n++] = *extra++;
	d->pid = fork();
	if (d->pid < 0)
		return -errno;
	if (!d->pid) {
		execv(g_exe, argv);
		_exit(127);
	}
	for (int i = 0; i < 1000 && stat(d->sock, &st); i++) {
		const struct timespec ms20 = { 0, 20000000 };

		if (waitpid(d->pid, NULL, WNOHANG) == d->pid)
			return -ECHILD;
		nanosleep(&ms20, NULL);
	}
	oo.path = d->sock;
	return syshax_open(&d->sh, &oo);
}

static void stop(struct daemon *d)
{
	int status = -1;

	syshax_close(d->sh);
	if (d->pid > 0) {
		kill(d->pid, SIGTERM);
		waitpid(d->pid, &status, 0);
	}
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static int run(struct syshax *sh, struct syshax_job *job, uint64_t *res)
{
	struct syshax_completion c;
	int ret = syshax_submit(sh, job, 1);

	if (ret < 0)
		return ret;
	ret = syshax_wait(sh, &c, 1, 1, 60LL * 1000000000);
	if (ret < 0)
		return ret;
	*res = c.result;
	return c.status;
}

/* Loads the file; runs GEMM (ffn_up) and FFN (norm, residual) on x. */
static void outputs(struct daemon *d, const float *x, float *gemm, float *ffn,
		    struct syshax_engine_stats *st)
{
	struct syshax_weights_load_params lp = { .source = SYSHAX_WLOAD_FILE };
	/* x at 0, then the GEMM output, the FFN output, the stats. */
	size_t og = 8192, of = og + ((size_t)M * g_ff * 4 + 8191) / 8192 * 8192,
	       os = of + 16384;
	struct syshax_buffer b;
	struct syshax_job job;
	uint64_t wset = 0, res;
	float *p;

	snprintf(lp.path, sizeof(lp.path), "model.gguf");
	syshax_job_init(&job, SYSHAX_OP_WEIGHTS_LOAD, 1);
	syshax_job_params(&job, &lp, sizeof(lp));
	CU_ASSERT_EQUAL_FATAL(run(d->sh, &job, &wset), 0);
	CU_ASSERT_FATAL(syshax_buf_alloc(d->sh, os + 32768, -1, 0, &b) == 0 &&
			syshax_buf_map(d->sh, &b) == 0);
	p = b.addr;
	memcpy(p, x, sizeof(float) * M * HID);
	{
		struct syshax_gemm_params g = { .wset = wset, .m = M };

		snprintf(g.tensor, sizeof(g.tensor), "blk.0.ffn_up.weight");
		syshax_job_init(&job, SYSHAX_OP_GEMM, 2);
		syshax_job_params(&job, &g, sizeof(g));
		syshax_job_add_ref(&job, &b, 0, M * HID * 4, SYSHAX_ACCESS_READ);
		syshax_job_add_ref(&job, &b, og, (size_t)M * g_ff * 4,
				   SYSHAX_ACCESS_WRITE);
		CU_ASSERT_EQUAL(run(d->sh, &job, &res), 0);
		memcpy(gemm, p + og / 4, sizeof(float) * M * g_ff);
	}
	{
		struct syshax_ffn_params f = {
			.wset = wset, .m = M,
			.flags = SYSHAX_FFN_NORM | SYSHAX_FFN_RESIDUAL,
			.eps = syshax_f32_bits(1e-5f),
		};

		syshax_job_init(&job, SYSHAX_OP_FFN, 3);
		syshax_job_params(&job, &f, sizeof(f));
		syshax_job_add_ref(&job, &b, 0, M * HID * 4, SYSHAX_ACCESS_READ);
		syshax_job_add_ref(&job, &b, of, M * HID * 4,
				   SYSHAX_ACCESS_WRITE);
		CU_ASSERT_EQUAL(run(d->sh, &job, &res), 0);
		memcpy(ffn, p + of / 4, sizeof(float) * M * HID);
	}
	syshax_job_init(&job, SYSHAX_OP_ENGINE_STATS, 4);
	syshax_job_add_ref(&job, &b, os, sizeof(*st), SYSHAX_ACCESS_WRITE);
	CU_ASSERT_EQUAL(run(d->sh, &job, &res), 0);
	memcpy(st, p + os / 4, sizeof(*st));
	syshax_buf_free(d->sh, &b);
}

static void t_placement(void)
{
	char cmd[8192], line[512];
	int arenas = 0, own = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "%s --print-placement %s --threads %s 2>&1",
		 g_exe, g_file, g_threads);
	f = popen(cmd, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	while (fgets(line, sizeof(line), f)) {
		int node, pages, on, where;

		fputs(line, stdout);
		if (sscanf(line, " arena for node %d: %*u bytes, %d pages: %d "
			   "on node %d", &node, &pages, &on, &where) != 4)
			continue;
		arenas++;
		/* All of a pool's pages on its node, none elsewhere. */
		if (node == where && on == pages)
			own++;
	}
	CU_ASSERT_EQUAL(pclose(f), 0);
	CU_ASSERT_EQUAL(arenas, g_nodes);
	CU_ASSERT_EQUAL(own, g_nodes);
}

static void t_one_vs_all_nodes(void)
{
	static float x[M * HID], f1[M * HID], f2[M * HID];
	float *g1 = calloc((size_t)2 * M * g_ff, sizeof(float));
	float *g2 = g1 ? g1 + M * g_ff : NULL;
	struct syshax_engine_stats s1, s2;
	struct daemon d1 = { 0 }, d2 = { 0 };
	char cpu[16];
	char *one[] = { "--threads", "1", "--cpu-affinity", cpu, NULL };
	char *all[] = { "--threads", g_threads, NULL };
	double err = 0, ref = 0;
	int seen[SYSHAX_MAX_NODES] = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(g1);
	snprintf(cpu, sizeof(cpu), "%d", g_cpu0);
	fill(x, M * HID, 5);
	CU_ASSERT_EQUAL_FATAL(start(&d1, "one", one), 0);
	outputs(&d1, x, g1, f1, &s1);
	stop(&d1);
	CU_ASSERT_EQUAL_FATAL(start(&d2, "all", all), 0);
	outputs(&d2, x, g2, f2, &s2);
	stop(&d2);

	CU_ASSERT_EQUAL(s1.nr_nodes, 1);
	CU_ASSERT_EQUAL(s2.nr_nodes, (unsigned int)g_nodes);
	CU_ASSERT_EQUAL(s2.nr_wsets, 1);
	/* A pool on each node, each holding a slice. */
	for (int p = 0; p < g_nodes && p < SYSHAX_MAX_NODES; p++) {
		unsigned int id = s2.node_id[p];

		CU_ASSERT_FATAL(id < SYSHAX_MAX_NODES);
		CU_ASSERT_EQUAL(seen[id]++, 0);
		CU_ASSERT(s2.wsets[0].node_bytes[id] > 0);
	}
	/* Rows split: each output element is the same dot product. */
	CU_ASSERT_EQUAL(memcmp(g1, g2, sizeof(float) * M * g_ff), 0);
	/* Columns of down split: N partial sums added in f32. */
	for (int i = 0; i < M * HID; i++) {
		err = fmax(err, fabs((double)f1[i] - f2[i]));
		ref = fmax(ref, fabs((double)f1[i]));
	}
	printf("\n  FFN one node vs %d: max |diff| %.3g of max |y| %.3g\n",
	       g_nodes, err, ref);
	CU_ASSERT(ref > 0.1);
	CU_ASSERT(err <= 1e-5 * ref);
	free(g1);
}

static int setup(void)
{
	snprintf(g_dir, sizeof(g_dir), "/tmp/numa_split.XXXXXX");
	if (!mkdtemp(g_dir))
		return 1;
	snprintf(g_file, sizeof(g_file), "%s/model.gguf", g_dir);
	return write_model() ? 1 : 0;
}

static int teardown(void)
{
	unlink(g_file);
	rmdir(g_dir);
	return 0;
}

int main(void)
{
	static const struct t_test tests[] = {
		{ "weights on their nodes (move_pages)", t_placement },
		{ "one node vs all: same outputs", t_one_vs_all_nodes },
	};
	static const char *const rel[] = { "syshaxd", "../../syshaxd" };
	if (numa_available() < 0) {
		printf("SKIP: numa_split: no NUMA support\n");
		return 77;
	}
	/*
	 * Nodes with CPUs and memory (a memoryless node's CPUs join the pool
	 * of a node with memory), and a CPU of node 0 for the one-pool daemon.
	 */
	for (int n = 0; n <= numa_max_node(); n++) {
		struct bitmask *cpus = numa_allocate_cpumask();

		if (!numa_node_to_cpus(n, cpus) && numa_bitmask_weight(cpus) &&
		    numa_node_size64(n, NULL) > 0) {
			g_nodes++;
			for (unsigned int c = 0; n == 0 && g_cpu0 < 0 &&
			     c < cpus->size; c++)
				if (numa_bitmask_isbitset(cpus, c))
					g_cpu0 = (int)c;
		}
		numa_free_cpumask(cpus);
	}
	if (g_nodes < 2 || g_cpu0 < 0) {
		printf("SKIP: numa_split: needs two NUMA nodes with CPUs and "
		       "memory (%d here); make vm-check runs it in a guest "
		       "that has them\n", g_nodes);
		return 77;
	}
	g_ff = 32 * (g_nodes < 5 ? 5 : g_nodes + 1);
	snprintf(g_threads, sizeof(g_threads), "%d", g_nodes);
	shxk_init();
	beside_path(g_exe, sizeof(g_exe), "syshaxd", rel, 2);
	return T_RUN_SUITE("numa split", setup, teardown, tests);
}
