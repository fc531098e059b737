// SPDX-License-Identifier: MIT
/*
 * ggml's CPU backend as a peer, loaded at run time from a folder holding
 * libggml-base.so and libggml-cpu-<variant>.so (tools/fetch-ggml.sh gets
 * them from the npm package @node-llama-cpp/linux-x64).
 *
 * No ggml header is used: the few functions the bench calls are declared
 * below from ggml's public C API, with opaque pointers for everything but
 * ggml_init_params. The variant is chosen the way ggml's own loader does:
 * the highest ggml_backend_score() among the libraries in the folder.
 *
 * The product is ggml_mul_mat(W, x) with W [k x n] of the weight type and x
 * [k x m] f32, computed by the CPU backend on a ggml threadpool of nthr
 * threads (persistent across calls, as in llama.cpp's decode loop).
 *
 * Two weight placements: plain row order in our own memory, or the CPU
 * backend's repack buffer type ("CPU_REPACK", formerly "CPU_AARCH64"),
 * the extra buffer type llama.cpp puts weights in by default where it
 * supports them (q4_0 as 8x8 interleaved blocks on AVX2 machines, 4x8 or
 * 4x4 on Arm). It is reached the way llama.cpp reaches it: the CPU
 * registry's "ggml_backend_dev_get_extra_bufts" proc address, a buffer of
 * that type, ggml_backend_tensor_alloc() and ggml_backend_tensor_set()
 * (which repacks), and ggml_backend_dev_supports_op() on a mul_mat node to
 * ask whether this type and shape get a repacked kernel.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bench.h"

/* ggml's enum ggml_type values for the formats we compare. */
static const int ggml_type_of[BENCH_NWTYPES] = {
	[BENCH_Q4_0] = 2, [BENCH_Q8_0] = 8, [BENCH_BF16] = 30,
	[BENCH_F16] = 1, [BENCH_F32] = 0,
};
#define GGML_TYPE_F32 0

struct ggml_init_params {
	size_t mem_size;
	void *mem_buffer;
	bool no_alloc;
};

/* ggml_threadpool_params is filled by ggml itself; room to spare. */
#define TP_PARAMS_BYTES 4096
/*
 * Its layout in ggml.h: a cpumask of GGML_MAX_N_THREADS (512) bools, then
 * int n_threads, int prio, uint32_t poll, bool strict_cpu, bool paused.
 */
#define TP_CPUMASK_LEN 512
#define TP_N_THREADS_OFF 512
#define TP_POLL_OFF 520
#define TP_STRICT_OFF 524
#define TP_POLL_DEFAULT 50
#define TP_POLL_MAX 100

struct ggml_api {
	void *(*init)(struct ggml_init_params);
	void (*free)(void *ctx);
	void *(*new_tensor_2d)(void *ctx, int type, int64_t ne0, int64_t ne1);
	void *(*get_data)(const void *t);
	void *(*mul_mat)(void *ctx, void *a, void *b);
	void *(*new_graph_custom)(void *ctx, size_t size, bool grads);
	size_t (*graph_overhead_custom)(size_t size, bool grads);
	void (*build_forward_expand)(void *graph, void *t);
	size_t (*quantize_chunk)(int type, const float *src, void *dst,
				 int64_t start, int64_t nrows,
				 int64_t n_per_row, const float *imatrix);
	size_t (*row_size)(int type, int64_t ne);
	size_t (*tensor_overhead)(void);
	void (*tp_params_init)(void *params, int n_threads);
	int (*graph_compute)(void *backend, void *graph);
	void (*backend_free)(void *backend);
	/* the repack buffer type */
	void *(*reg_get_proc_address)(void *reg, const char *name);
	void *(*reg_dev_get)(void *reg, size_t i);
	bool (*dev_supports_op)(void *dev, const void *op);
	const char *(*buft_name)(void *buft);
	void *(*buft_alloc_buffer)(void *buft, size_t size);
	size_t (*buft_get_alignment)(void *buft);
	size_t (*buft_get_alloc_size)(void *buft, const void *t);
	void *(*buffer_get_base)(void *buf);
	void (*buffer_free)(void *buf);
	int (*tensor_alloc)(void *buf, void *t, void *addr);
	void (*tensor_set)(void *t, const void *data, size_t off, size_t size);
	/* from the CPU variant */
	void *(*cpu_init)(void);
	void (*set_n_threads)(void *backend, int n);
	void (*set_threadpool)(void *backend, void *tp);
	void *(*tp_new)(void *params);
	void (*tp_free)(void *tp);
	void *(*cpu_reg)(void);
};

struct ggml_peer {
	void *base, *cpu;
	void *backend;
	void *dev, *repack;	/* the CPU device, its repack buffer type */
	struct ggml_api f;
	char variant[256];
};

struct ggml_case {
	struct ggml_peer *p;
	int type, k, n;
	size_t copies, wbytes, mem_bytes;
	void *mem, *ctx;
	void *buf;		/* repack buffer holding the copies, or NULL */
	void **w;
};

#define SYM(lib, field, name)						\
	do {								\
		*(void **)&p->f.field = dlsym(p->lib, name);		\
		if (!p->f.field)					\
			return -ENOSYS;					\
	} while (0)

static int bind_base(struct ggml_peer *p)
{
	SYM(base, init, "ggml_init");
	SYM(base, free, "ggml_free");
	SYM(base, new_tensor_2d, "ggml_new_tensor_2d");
	SYM(base, get_data, "ggml_get_data");
	SYM(base, mul_mat, "ggml_mul_mat");
	SYM(base, new_graph_custom, "ggml_new_graph_custom");
	SYM(base, graph_overhead_custom, "ggml_graph_overhead_custom");
	SYM(base, build_forward_expand, "ggml_build_forward_expand");
	SYM(base, quantize_chunk, "ggml_quantize_chunk");
	SYM(base, row_size, "ggml_row_size");
	SYM(base, tensor_overhead, "ggml_tensor_overhead");
	SYM(base, tp_params_init, "ggml_threadpool_params_init");
	SYM(base, graph_compute, "ggml_backend_graph_compute");
	SYM(base, backend_free, "ggml_backend_free");
	SYM(base, reg_get_proc_address, "ggml_backend_reg_get_proc_address");
	SYM(base, reg_dev_get, "ggml_backend_reg_dev_get");
	SYM(base, dev_supports_op, "ggml_backend_dev_supports_op");
	SYM(base, buft_name, "ggml_backend_buft_name");
	SYM(base, buft_alloc_buffer, "ggml_backend_buft_alloc_buffer");
	SYM(base, buft_get_alignment, "ggml_backend_buft_get_alignment");
	SYM(base, buft_get_alloc_size, "ggml_backend_buft_get_alloc_size");
	SYM(base, buffer_get_base, "ggml_backend_buffer_get_base");
	SYM(base, buffer_free, "ggml_backend_buffer_free");
	SYM(base, tensor_alloc, "ggml_backend_tensor_alloc");
	SYM(base, tensor_set, "ggml_backend_tensor_set");
	return 0;
}

static int bind_cpu(struct ggml_peer *p)
{
	SYM(cpu, cpu_init, "ggml_backend_cpu_init");
	SYM(cpu, set_n_threads, "ggml_backend_cpu_set_n_threads");
	SYM(cpu, set_threadpool, "ggml_backend_cpu_set_threadpool");
	SYM(cpu, tp_new, "ggml_threadpool_new");
	SYM(cpu, tp_free, "ggml_threadpool_free");
	SYM(cpu, cpu_reg, "ggml_backend_cpu_reg");
	return 0;
}

/*
 * The CPU device's repack buffer type, as llama.cpp finds it: the extra
 * buffer types the registry lists (NULL-terminated), by name. None (an old
 * ggml, a build without it) leaves p->repack NULL.
 */
static void find_repack(struct ggml_peer *p)
{
	void *reg = p->f.cpu_reg();
	void **(*extra)(void *dev);

	p->dev = reg ? p->f.reg_dev_get(reg, 0) : NULL;
	if (!p->dev)
		return;
	*(void **)&extra = p->f.reg_get_proc_address(
		reg, "ggml_backend_dev_get_extra_bufts");
	for (void **b = extra ? extra(p->dev) : NULL; b && *b; b++) {
		const char *name = p->f.buft_name(*b);

		if (!strcmp(name, "CPU_REPACK") || !strcmp(name, "CPU_AARCH64"))
			p->repack = *b;
	}
}

/* Loads every libggml-cpu-*.so in dir and keeps the best-scoring one. */
static int pick_cpu(struct ggml_peer *p, const char *dir)
{
	struct dirent *de;
	int best = 0;
	DIR *d = opendir(dir);

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char path[4096];
		int (*score)(void);
		void *h;
		int s;

		if (strncmp(de->d_name, "libggml-cpu", 11) ||
		    !strstr(de->d_name, ".so"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!h)
			continue;
		*(void **)&score = dlsym(h, "ggml_backend_score");
		/* A variant without a score is a single-ISA build: lowest. */
		s = score ? score() : 1;
		if (s > best) {
			if (p->cpu)
				dlclose(p->cpu);
			p->cpu = h;
			best = s;
			snprintf(p->variant, sizeof(p->variant), "%s",
				 de->d_name);
		} else {
			dlclose(h);
		}
	}
	closedir(d);
	return p->cpu ? 0 : -ENOENT;
}

/* Appends the package and version tools/fetch-ggml.sh wrote, if any. */
static void name_version(struct ggml_peer *p, const char *dir)
{
	char path[4096], ver[128];
	size_t len = strlen(p->variant);
	FILE *f;

	snprintf(path, sizeof(path), "%s/VERSION", dir);
	f = fopen(path, "r");
	if (!f)
		return;
	if (fgets(ver, sizeof(ver), f)) {
		ver[strcspn(ver, "\n\"\\")] = 0;
		snprintf(p->variant + len, sizeof(p->variant) - len, " (%s)",
			 ver);
	}
	fclose(f);
}

int ggml_peer_open(struct ggml_peer **out, const char *dir,
		   const char **variant)
{
	struct ggml_peer *p;
	char path[4096];
	int err;

	if (!dir || !*dir)
		return -ENOENT;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	/* Global, so the CPU variants find it by its soname. */
	snprintf(path, sizeof(path), "%s/libggml-base.so", dir);
	p->base = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	err = p->base ? bind_base(p) : -ENOENT;
	if (!err)
		err = pick_cpu(p, dir);
	if (!err)
		err = bind_cpu(p);
	if (!err)
		find_repack(p);
	if (!err) {
		p->backend = p->f.cpu_init();
		if (!p->backend)
			err = -ENOMEM;
	}
	if (err) {
		ggml_peer_close(p);
		return err;
	}
	name_version(p, dir);
	if (!p->repack) {
		size_t len = strlen(p->variant);

		snprintf(p->variant + len, sizeof(p->variant) - len,
			 "; no repack buffer type");
	}
	*variant = p->variant;
	*out = p;
	return 0;
}

const char *ggml_peer_repack_name(struct ggml_peer *p)
{
	return p && p->repack ? p->f.buft_name(p->repack) : NULL;
}

void ggml_peer_close(struct ggml_peer *p)
{
	if (!p)
		return;
	if (p->backend)
		p->f.backend_free(p->backend);
	if (p->cpu)
		dlclose(p->cpu);
	if (p->base)
		dlclose(p->base);
	free(p);
}

/*
 * The copies in one buffer of the repack type, each repacked by ggml as it
 * is set from the row-major blocks in q. -ENOTSUP when the CPU backend has
 * no repacked kernel for this type and shape (it then computes from the
 * plain layout, which the other column already measures).
 */
static int place_repacked(struct ggml_case *c, const float *w)
{
	struct ggml_peer *p = c->p;
	size_t align = p->f.buft_get_alignment(p->repack), sz, i;
	void *x, *y, *q;
	char *base;
	uintptr_t b, e;

	sz = (p->f.buft_get_alloc_size(p->repack, c->w[0]) + align - 1) /
	     align * align;
	c->buf = p->f.buft_alloc_buffer(p->repack, sz * c->copies);
	if (!c->buf)
		return -ENOMEM;
	base = p->f.buffer_get_base(c->buf);
	/* Huge pages where the kernel grants them, as ours get. */
	b = ((uintptr_t)base + 4095) & ~(uintptr_t)4095;
	e = ((uintptr_t)base + sz * c->copies) & ~(uintptr_t)4095;
	if (e > b)
		madvise((void *)b, e - b, MADV_HUGEPAGE);
	for (i = 0; i < c->copies; i++)
		if (p->f.tensor_alloc(c->buf, c->w[i], base + i * sz))
			return -ENOMEM;
	/* The question llama.cpp asks before placing a weight there. */
	x = p->f.new_tensor_2d(c->ctx, GGML_TYPE_F32, c->k, 1);
	y = x ? p->f.mul_mat(c->ctx, c->w[0], x) : NULL;
	if (!y)
		return -ENOMEM;
	if (!p->f.dev_supports_op(p->dev, y))
		return -ENOTSUP;
	q = malloc(c->wbytes);
	if (!q)
		return -ENOMEM;
	p->f.quantize_chunk(c->type, w, q, 0, c->n, c->k, NULL);
	for (i = 0; i < c->copies; i++)
		p->f.tensor_set(c->w[i], q, 0, c->wbytes);
	free(q);
	return 0;
}

int ggml_case_new(struct ggml_peer *p, struct ggml_case **out,
		  enum bench_wtype t, int k, int n, const float *w, int repack)
{
	struct ggml_case *c;
	size_t i, meta;
	int err;

	if (repack && !p->repack)
		return -ENOTSUP;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->p = p;
	c->type = ggml_type_of[t];
	c->k = k;
	c->n = n;
	c->wbytes = p->f.row_size(c->type, k) * (size_t)n;
	c->copies = bench_copies(c->wbytes);
	c->w = calloc(c->copies, sizeof(*c->w));
	meta = (c->copies + 2) * (p->f.tensor_overhead() + 64) + (1 << 20);
	/*
	 * Plain: our own memory for the context, the same huge pages ours
	 * get. Repacked: tensor headers only; the data goes in the buffer.
	 */
	c->mem_bytes = repack ? meta : meta + c->copies * c->wbytes;
	c->mem = c->w ? bench_alloc(c->mem_bytes) : NULL;
	if (c->mem)
		c->ctx = p->f.init((struct ggml_init_params){
			.mem_size = c->mem_bytes, .mem_buffer = c->mem,
			.no_alloc = repack });
	if (!c->ctx) {
		ggml_case_free(c);
		return -ENOMEM;
	}
	for (i = 0; i < c->copies; i++) {
		c->w[i] = p->f.new_tensor_2d(c->ctx, c->type, k, n);
		if (!c->w[i]) {
			ggml_case_free(c);
			return -ENOMEM;
		}
		if (repack)
			continue;
		/* Quantize once with ggml's own code; the rest are copies. */
		if (i == 0)
			p->f.quantize_chunk(c->type, w, p->f.get_data(c->w[0]),
					    0, n, k, NULL);
		else
			memcpy(p->f.get_data(c->w[i]),
			       p->f.get_data(c->w[0]), c->wbytes);
	}
	err = repack ? place_repacked(c, w) : 0;
	if (err) {
		ggml_case_free(c);
		return err;
	}
	*out = c;
	return 0;
}

void ggml_case_free(struct ggml_case *c)
{
	if (!c)
		return;
	if (c->ctx)
		c->p->f.free(c->ctx);
	if (c->buf)
		c->p->f.buffer_free(c->buf);
	bench_free(c->mem, c->mem_bytes);
	free(c->w);
	free(c);
}

/* One product per weight copy, each its own one-node graph. */
struct ggml_run {
	struct ggml_case *c;
	void **graphs;
	size_t next;
};

static int ggml_call(void *arg)
{
	struct ggml_run *r = arg;
	struct ggml_peer *p = r->c->p;
	void *g = r->graphs[r->next];

	r->next = (r->next + 1) % r->c->copies;
	return p->f.graph_compute(p->backend, g) ? -EIO : 0;
}

/*
 * The same rules as our team: one thread per CPU, pinned (strict_cpu),
 * spinning between calls (poll at its maximum). Unpinned, ggml's two
 * spinning threads could share one core next to other load and lose a
 * whole scheduler slice per call (we saw 8 ms calls). Only when the
 * layout is the one we know, checked on the fields params_init() wrote.
 */
static void pin_and_spin(unsigned char *tpp, int nthr)
{
	cpu_set_t set;
	uint32_t poll;
	int n, cpu, used = 0;

	memcpy(&n, tpp + TP_N_THREADS_OFF, sizeof(n));
	memcpy(&poll, tpp + TP_POLL_OFF, sizeof(poll));
	if (n != nthr || poll != TP_POLL_DEFAULT ||
	    sched_getaffinity(0, sizeof(set), &set))
		return;
	poll = TP_POLL_MAX;
	memcpy(tpp + TP_POLL_OFF, &poll, sizeof(poll));
	/* The CPUs our team would use: the first nthr we may run on. */
	for (cpu = 0; cpu < TP_CPUMASK_LEN && used < nthr; cpu++)
		if (CPU_ISSET(cpu, &set)) {
			tpp[cpu] = 1;
			used++;
		}
	tpp[TP_STRICT_OFF] = 1;
}

int ggml_case_time(struct ggml_case *c, int m, int nthr, double budget_s,
		   double *sec)
{
	struct ggml_peer *p = c->p;
	struct ggml_run r = { .c = c };
	size_t gsz = p->f.graph_overhead_custom(8, false);
	size_t mem, i;
	void *ctx, *x, *tp = NULL;
	float *xd;
	_Alignas(64) unsigned char tpp[TP_PARAMS_BYTES] = { 0 };
	cpu_set_t saved;
	int err = -ENOMEM;

	mem = (size_t)c->k * m * 4 + (size_t)c->n * m * 4 * c->copies +
	      (p->f.tensor_overhead() * 2 + gsz + 256) * (c->copies + 1) +
	      (1 << 20);
	ctx = p->f.init((struct ggml_init_params){ .mem_size = mem });
	r.graphs = calloc(c->copies, sizeof(*r.graphs));
	if (!ctx || !r.graphs)
		goto out;
	x = p->f.new_tensor_2d(ctx, GGML_TYPE_F32, c->k, m);
	if (!x)
		goto out;
	xd = p->f.get_data(x);
	for (i = 0; i < (size_t)c->k * m; i++)
		xd[i] = (float)((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
	for (i = 0; i < c->copies; i++) {
		void *y = p->f.mul_mat(ctx, c->w[i], x);

		r.graphs[i] = y ? p->f.new_graph_custom(ctx, 8, false) : NULL;
		if (!r.graphs[i])
			goto out;
		p->f.build_forward_expand(r.graphs[i], y);
	}
	p->f.tp_params_init(tpp, nthr);
	pin_and_spin(tpp, nthr);
	/* ggml pins the calling thread too and never unpins it. */
	err = bench_affinity_save(&saved, 0);
	if (err)
		goto out;
	err = -ENOMEM;
	tp = p->f.tp_new(tpp);
	if (tp) {
		p->f.set_n_threads(p->backend, nthr);
		p->f.set_threadpool(p->backend, tp);
		err = bench_time_calls(ggml_call, &r, budget_s, sec);
		p->f.set_threadpool(p->backend, NULL);
		p->f.tp_free(tp);
	}
	bench_affinity_restore(&saved);
out:
	free(r.graphs);
	if (ctx)
		p->f.free(ctx);
	return err;
}
