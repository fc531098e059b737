// SPDX-License-Identifier: MIT
/*
 * oneDNN's matmul primitive as the bar for raw compute: s8 x s8 -> s32 and
 * bf16 x bf16 -> f32, weights in the layout oneDNN picks for the shape
 * (format "any", reordered once per copy, outside the timing).
 *
 * libdnnl.so.2 (Debian's libdnnl2.x, oneDNN 2.x C API) is dlopen'ed at run
 * time so the bench builds and runs without it. Descriptors are opaque
 * blobs at least as large as oneDNN 2.x's structs; the enum values below
 * are oneDNN 2.x's (dnnl_types.h), stable across the 2.x series.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

enum {
	DT_BF16 = 2, DT_F32 = 3, DT_S32 = 4, DT_S8 = 5,
	TAG_ANY = 1, TAG_AB = 3, TAG_BA = 22,
	ENGINE_CPU = 1, STREAM_DEFAULT = 1,
	QUERY_WEIGHTS_MD = 131,
	ARG_SRC = 1, ARG_DST = 17, ARG_WEIGHTS = 33,
	ARG_FROM = 1, ARG_TO = 17,
};

/* sizeof(dnnl_memory_desc_t) is 696, dnnl_matmul_desc_t 2800 in 2.6. */
typedef struct { _Alignas(64) unsigned char b[2048]; } md_t;
typedef struct { _Alignas(64) unsigned char b[8192]; } op_desc_t;
typedef int64_t dims_t[12];
struct exec_arg { int arg; void *mem; };
struct dnnl_version { int major, minor, patch; const char *hash; };

struct dnnl_api {
	int (*md_init)(md_t *md, int ndims, const int64_t *dims, int dt,
		       int tag);
	int (*matmul_init)(op_desc_t *d, const md_t *src, const md_t *w,
			   const md_t *bias, const md_t *dst);
	int (*pd_create)(void **pd, const op_desc_t *d, const void *attr,
			 void *eng, const void *hint);
	int (*pd_destroy)(void *pd);
	const md_t *(*pd_query_md)(const void *pd, int what, int index);
	size_t (*md_size)(const md_t *md);
	int (*reorder_pd)(void **pd, const md_t *src, void *src_eng,
			  const md_t *dst, void *dst_eng, const void *attr);
	int (*prim_create)(void **prim, const void *pd);
	int (*prim_destroy)(void *prim);
	int (*execute)(const void *prim, void *stream, int nargs,
		       const struct exec_arg *args);
	int (*mem_create)(void **mem, const md_t *md, void *eng, void *handle);
	int (*mem_destroy)(void *mem);
	int (*engine_create)(void **eng, int kind, size_t index);
	int (*engine_destroy)(void *eng);
	int (*stream_create)(void **stream, void *eng, unsigned flags);
	int (*stream_wait)(void *stream);
	int (*stream_destroy)(void *stream);
	const struct dnnl_version *(*version)(void);
	void (*omp_set_num_threads)(int n);
};

struct dnnl_peer {
	void *lib;
	void *eng, *stream;
	struct dnnl_api f;
	char version[32];
};

#define SYM(field, name)						\
	do {								\
		*(void **)&p->f.field = dlsym(p->lib, name);		\
		if (!p->f.field)					\
			return -ENOSYS;					\
	} while (0)

static int bind(struct dnnl_peer *p)
{
	SYM(md_init, "dnnl_memory_desc_init_by_tag");
	SYM(matmul_init, "dnnl_matmul_desc_init");
	SYM(pd_create, "dnnl_primitive_desc_create");
	SYM(pd_destroy, "dnnl_primitive_desc_destroy");
	SYM(pd_query_md, "dnnl_primitive_desc_query_md");
	SYM(md_size, "dnnl_memory_desc_get_size");
	SYM(reorder_pd, "dnnl_reorder_primitive_desc_create");
	SYM(prim_create, "dnnl_primitive_create");
	SYM(prim_destroy, "dnnl_primitive_destroy");
	SYM(execute, "dnnl_primitive_execute");
	SYM(mem_create, "dnnl_memory_create");
	SYM(mem_destroy, "dnnl_memory_destroy");
	SYM(engine_create, "dnnl_engine_create");
	SYM(engine_destroy, "dnnl_engine_destroy");
	SYM(stream_create, "dnnl_stream_create");
	SYM(stream_wait, "dnnl_stream_wait");
	SYM(stream_destroy, "dnnl_stream_destroy");
	SYM(version, "dnnl_version");
	/* Debian's build threads with OpenMP; its runtime is a dependency. */
	SYM(omp_set_num_threads, "omp_set_num_threads");
	return 0;
}

const char *dnnl_kind_name(enum dnnl_kind kind)
{
	return kind == DNNL_S8S8 ? "s8s8" : "bf16";
}

int dnnl_peer_open(struct dnnl_peer **out, const char **version)
{
	const struct dnnl_version *v;
	struct dnnl_peer *p;
	cpu_set_t saved;
	int err;

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	/*
	 * OpenMP threads pinned one per core, as our team's are; libgomp
	 * reads these when it loads. A user's own settings stand.
	 */
	setenv("OMP_PROC_BIND", "close", 0);
	setenv("OMP_PLACES", "cores", 0);
	err = bench_affinity_save(&saved, 0);
	if (err) {
		free(p);
		return err;
	}
	p->lib = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
	/* libgomp binds the loading thread: it stays ours outside calls. */
	bench_affinity_restore(&saved);
	err = p->lib ? bind(p) : -ENOENT;
	if (!err && p->f.engine_create(&p->eng, ENGINE_CPU, 0))
		err = -ENODEV;
	if (!err && p->f.stream_create(&p->stream, p->eng, STREAM_DEFAULT))
		err = -ENODEV;
	if (err) {
		dnnl_peer_close(p);
		return err;
	}
	v = p->f.version();
	snprintf(p->version, sizeof(p->version), "%d.%d.%d", v->major,
		 v->minor, v->patch);
	*version = p->version;
	*out = p;
	return 0;
}

void dnnl_peer_close(struct dnnl_peer *p)
{
	if (!p)
		return;
	if (p->stream)
		p->f.stream_destroy(p->stream);
	if (p->eng)
		p->f.engine_destroy(p->eng);
	/*
	 * No dlclose: the OpenMP workers oneDNN started outlive the handle,
	 * and unmapping the code they park in crashes them (and LSan).
	 */
	free(p);
}

struct dnnl_run {
	struct dnnl_peer *p;
	void *prim, *src, *dst;
	void **w;
	size_t copies, next;
};

static int dnnl_call(void *arg)
{
	struct dnnl_run *r = arg;
	struct exec_arg args[3] = {
		{ ARG_SRC, r->src },
		{ ARG_WEIGHTS, r->w[r->next] },
		{ ARG_DST, r->dst },
	};

	r->next = (r->next + 1) % r->copies;
	if (r->p->f.execute(r->prim, r->p->stream, 3, args))
		return -EIO;
	return r->p->f.stream_wait(r->p->stream) ? -EIO : 0;
}

/* Small values, so that neither type saturates or denormalizes. */
static void fill(void *buf, size_t count, int dt)
{
	size_t i;

	for (i = 0; i < count; i++) {
		int v = (int)((i * 2654435761u) >> 7) % 15 - 7;

		if (dt == DT_S8)
			((int8_t *)buf)[i] = (int8_t)v;
		else	/* bf16 of v / 8: exact, the top half of the f32 */
			((uint16_t *)buf)[i] = (uint16_t)(
				(union { float f; uint32_t u; }){
					.f = (float)v / 8 }.u >> 16);
	}
}

/* Weights of every copy in oneDNN's layout, from one plain [n x k] matrix. */
static int make_weights(struct dnnl_run *r, const md_t *wmd, int dt, int k,
			int n, void **mem, size_t *bytes, size_t copies)
{
	struct dnnl_peer *p = r->p;
	size_t wsz = (p->f.md_size(wmd) + 4095) & ~(size_t)4095, i;
	void *plain = NULL, *pmem = NULL, *rpd = NULL, *reorder = NULL;
	md_t pmd;
	int err = -ENOMEM;

	*bytes = wsz * copies;
	*mem = bench_alloc(*bytes);
	plain = malloc((size_t)k * n * 2);
	if (!*mem || !plain)
		goto out;
	fill(plain, (size_t)k * n, dt);
	err = -EIO;
	/* W is [n x k] row-major: the (k, n) matrix in "ba" order. */
	if (p->f.md_init(&pmd, 2, (dims_t){ k, n }, dt, TAG_BA) ||
	    p->f.mem_create(&pmem, &pmd, p->eng, plain) ||
	    p->f.reorder_pd(&rpd, &pmd, p->eng, wmd, p->eng, NULL) ||
	    p->f.prim_create(&reorder, rpd))
		goto out;
	for (i = 0; i < copies; i++) {
		struct exec_arg args[2] = { { ARG_FROM, pmem }, { ARG_TO, NULL } };

		if (p->f.mem_create(&r->w[i], wmd, p->eng,
				    (char *)*mem + i * wsz))
			goto out;
		args[1].mem = r->w[i];
		if (p->f.execute(reorder, p->stream, 2, args) ||
		    p->f.stream_wait(p->stream))
			goto out;
	}
	err = 0;
out:
	if (reorder)
		p->f.prim_destroy(reorder);
	if (rpd)
		p->f.pd_destroy(rpd);
	if (pmem)
		p->f.mem_destroy(pmem);
	free(plain);
	return err;
}

int dnnl_peer_time(struct dnnl_peer *p, enum dnnl_kind kind, int k, int n,
		   int m, int nthr, double budget_s, double *sec)
{
	int dt_in = kind == DNNL_S8S8 ? DT_S8 : DT_BF16;
	int dt_out = kind == DNNL_S8S8 ? DT_S32 : DT_F32;
	struct dnnl_run r = { .p = p };
	cpu_set_t saved;
	md_t smd, wmd, dmd;
	op_desc_t od;
	void *pd = NULL, *x = NULL, *y = NULL, *wmem = NULL;
	const md_t *qmd;
	size_t wbytes = 0, i;
	int err = -EIO;

	/*
	 * The caller is OpenMP's thread 0: pinned to the first CPU as our
	 * team's thread 0 is, the workers to the next ones (OMP_PROC_BIND).
	 */
	err = bench_affinity_save(&saved, 1);
	if (err)
		return err;
	err = -EIO;
	/* Primitives size their parallel split by the thread count. */
	p->f.omp_set_num_threads(nthr);
	if (p->f.md_init(&smd, 2, (dims_t){ m, k }, dt_in, TAG_AB) ||
	    p->f.md_init(&wmd, 2, (dims_t){ k, n }, dt_in, TAG_ANY) ||
	    p->f.md_init(&dmd, 2, (dims_t){ m, n }, dt_out, TAG_AB) ||
	    p->f.matmul_init(&od, &smd, &wmd, NULL, &dmd) ||
	    p->f.pd_create(&pd, &od, NULL, p->eng, NULL) ||
	    !(qmd = p->f.pd_query_md(pd, QUERY_WEIGHTS_MD, 0)))
		goto out;
	r.copies = bench_copies(p->f.md_size(qmd));
	r.w = calloc(r.copies, sizeof(*r.w));
	x = aligned_alloc(64, ((size_t)m * k * 2 + 63) & ~(size_t)63);
	y = aligned_alloc(64, ((size_t)m * n * 4 + 63) & ~(size_t)63);
	err = -ENOMEM;
	if (!r.w || !x || !y)
		goto out;
	fill(x, (size_t)m * k, dt_in);
	err = make_weights(&r, qmd, dt_in, k, n, &wmem, &wbytes, r.copies);
	if (err)
		goto out;
	err = -EIO;
	if (p->f.mem_create(&r.src, &smd, p->eng, x) ||
	    p->f.mem_create(&r.dst, &dmd, p->eng, y) ||
	    p->f.prim_create(&r.prim, pd))
		goto out;
	/* Rounds back to back: its weight reorders are too slow to redo. */
	err = 0;
	*sec = 0;
	for (i = 0; !err && i < BENCH_ROUNDS; i++) {
		double t;

		err = bench_time_calls(dnnl_call, &r, budget_s / BENCH_ROUNDS,
				       &t);
		if (!err && (*sec == 0 || t < *sec))
			*sec = t;
	}
out:
	if (r.prim)
		p->f.prim_destroy(r.prim);
	if (r.src)
		p->f.mem_destroy(r.src);
	if (r.dst)
		p->f.mem_destroy(r.dst);
	for (i = 0; r.w && i < r.copies; i++)
		if (r.w[i])
			p->f.mem_destroy(r.w[i]);
	free(r.w);
	bench_free(wmem, wbytes);
	free(x);
	free(y);
	if (pd)
		p->f.pd_destroy(pd);
	bench_affinity_restore(&saved);
	return err;
}
