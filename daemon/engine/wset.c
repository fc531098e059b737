// SPDX-License-Identifier: MIT
/* Weight sets: NUMA split and placement (filled by wfill.c), lookup,
 * registry. */
#include "wset.h"

#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "model/hfnames.h"
#include "wfill.h"

#define ARENA_ALIGN	64

static void errf(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

static bool is_quant(enum shxk_type t)
{
	return t == SHXK_Q8_0 || t == SHXK_Q4_0;
}

/* Bound p of n split over np pools, at SHXD_SPLIT_ALIGN multiples. */
static size_t split_bound(size_t n, unsigned int np, unsigned int p)
{
	size_t b = (n * p / np + SHXD_SPLIT_ALIGN - 1) / SHXD_SPLIT_ALIGN *
		   SHXD_SPLIT_ALIGN;

	return p == np || b > n ? n : b;
}

/* Carves bytes from a pool's arena; in the dry pass only counts them. */
static void *arena_take(struct shxd_arena *a, size_t bytes)
{
	size_t at = (a->used + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);

	a->used = at + bytes;
	return a->base ? (uint8_t *)a->base + at : NULL;
}

static int arena_alloc(struct shxd_arena *a)
{
	size_t size = a->used ? a->used : 1;

	if (numa_available() >= 0) {
		a->base = numa_alloc_onnode(size, a->node);
		if (!a->base)
			return -ENOMEM;
	} else {
		a->base = mmap(NULL, size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (a->base == MAP_FAILED) {
			a->base = NULL;
			return -ENOMEM;
		}
	}
	/* Weights are streamed: huge pages spare the TLB. */
	madvise(a->base, size, MADV_HUGEPAGE);
	a->size = size;
	a->used = 0;
	return 0;
}

static void arena_free(struct shxd_arena *a)
{
	if (!a->base)
		return;
	if (numa_available() >= 0)
		numa_free(a->base, a->size);
	else
		munmap(a->base, a->size);
	a->base = NULL;
}

/*
 * Places pool p's piece of matrix m from src (type st, whole rows of
 * m->k): the dry pass only counts the arena bytes, the other adds it to
 * the pieces to fill.
 */
static int place_piece(struct shxd_mat *m, unsigned int p, const uint8_t *src,
		       enum shxk_type st, struct shxd_arena *a,
		       struct shxd_wfill *fill)
{
	size_t b0 = m->b[p], b1 = m->b[p + 1];
	size_t rows = m->by_cols ? m->n : b1 - b0;
	size_t k = m->by_cols ? b1 - b0 : m->k;
	size_t srs = shxk_row_size(st, m->k);
	enum shxk_layout lay = is_quant(m->type) ? SHXK_LAYOUT_X8 :
						   SHXK_LAYOUT_ROWS;
	struct shxk_weights *w = &m->part[p];
	uint8_t *dst;

	*w = (struct shxk_weights){ .type = m->type, .layout = lay,
				    .n = rows, .k = k };
	if (!rows || !k) {
		w->n = 0;
		return 0;
	}
	dst = arena_take(a, shxk_repack_size(m->type, lay, rows, k));
	if (!dst)
		return 0;	/* dry pass */
	w->data = dst;
	return shxd_wfill_add(fill, &(struct shxd_fill_piece){
		.w = w, .dst = dst, .srs = srs, .st = st,
		.src = m->by_cols ? src + shxk_row_size(st, b0) :
				    src + b0 * srs,
	});
}

static bool split_by_cols(const char *name)
{
	return strstr(name, ".ffn_down") != NULL;
}

/* The type a matrix is kept in. */
static enum shxk_type keep_type(enum shxk_type st, enum shxk_type q,
				size_t k)
{
	if (is_quant(st) || q == SHXK_F32 || k % SHXK_QK)
		return st;
	return q;
}

static int place_tensor(struct shxd_wset *ws, struct shxd_tensor *t,
			const struct shxd_tdesc *d, const uint8_t *src,
			enum shxk_type q, struct shxd_wfill *fill)
{
	enum shxk_type st = (enum shxk_type)d->type;
	size_t k = d->ne[0], n = d->ne[1];
	int ret;

	if (t->ndim == 1) {
		float *v = arena_take(&ws->arena[0], k * sizeof(float));

		if (v)
			shxk_dequantize(st, src, v, k, 0, 1);
		t->vec = v;
		return 0;
	}
	for (size_t i = 0; i < t->nmats; i++) {
		struct shxd_mat *m = &t->mats[i];
		const uint8_t *msrc = src + i * n * shxk_row_size(st, k);

		m->type = keep_type(st, q, k);
		m->n = n;
		m->k = k;
		m->by_cols = split_by_cols(t->name);
		for (unsigned int p = 0; p <= ws->npools; p++)
			m->b[p] = split_bound(m->by_cols ? k : n, ws->npools, p);
		for (unsigned int p = 0; p < ws->npools; p++) {
			ret = place_piece(m, p, msrc, st, &ws->arena[p], fill);
			if (ret)
				return ret;
		}
	}
	return 0;
}

static int cmp_tensor(const void *a, const void *b)
{
	return strcmp(((const struct shxd_tensor *)a)->name,
		      ((const struct shxd_tensor *)b)->name);
}

/* Names, shapes and matrix tables; checks what the kernels can run. */
static int describe(struct shxd_wset *ws, const struct shxd_wsrc *src,
		    char *err, size_t errlen)
{
	ws->t = calloc(src->tf->nr ? src->tf->nr : 1, sizeof(*ws->t));
	if (!ws->t)
		return -ENOMEM;
	ws->nt = src->tf->nr;
	for (size_t i = 0; i < ws->nt; i++) {
		const struct shxd_tdesc *d = &src->tf->t[i];
		struct shxd_tensor *t = &ws->t[i];

		if (d->type == SHXD_T_OTHER) {
			errf(err, errlen, "tensor '%s' has type %s, which the "
			     "CPU kernels cannot run (F32, F16, BF16, Q8_0, "
			     "Q4_0)", d->name, d->type_name);
			return -EINVAL;
		}
		if (!shxk_row_size((enum shxk_type)d->type, d->ne[0])) {
			errf(err, errlen, "tensor '%s': rows of %llu %s values "
			     "are not whole blocks", d->name,
			     (unsigned long long)d->ne[0], d->type_name);
			return -EINVAL;
		}
		if (src->rename_hf)
			shxd_hf_to_gguf(d->name, t->name, sizeof(t->name));
		else
			snprintf(t->name, sizeof(t->name), "%s", d->name);
		t->src = (unsigned int)i;
		t->ndim = d->ndim;
		memcpy(t->ne, d->ne, sizeof(t->ne));
		/* Hugging Face's shared_expert_gate is nn.Linear(hidden, 1):
		 * [1 x hidden], the vector GGUF stores 1-D. */
		if (d->ndim == 2 && d->ne[1] == 1 &&
		    strstr(t->name, ".ffn_gate_inp_shexp."))
			t->ndim = 1;
		if (t->ndim > 1) {
			t->nmats = d->ne[2] * d->ne[3];
			t->mats = calloc(t->nmats, sizeof(*t->mats));
			if (!t->mats)
				return -ENOMEM;
		}
	}
	qsort(ws->t, ws->nt, sizeof(*ws->t), cmp_tensor);
	for (size_t i = 1; i < ws->nt; i++) {
		if (!strcmp(ws->t[i - 1].name, ws->t[i].name)) {
			errf(err, errlen, "two tensors are named '%s' (after "
			     "renaming to GGUF names)", ws->t[i].name);
			return -EINVAL;
		}
	}
	return 0;
}

static void wset_free(struct shxd_wset *ws)
{
	if (ws->base) {
		free(ws->model);
		shxd_wset_put(ws->base);
		free(ws);
		return;
	}
	for (size_t i = 0; ws->t && i < ws->nt; i++)
		free(ws->t[i].mats);
	free(ws->t);
	free(ws->model);
	for (unsigned int p = 0; p < SHXD_MAX_POOLS; p++)
		arena_free(&ws->arena[p]);
	free(ws);
}

int shxd_wset_build(const struct shxd_wsrc *src, const struct shxd_pool *pool,
		    struct shxd_wset **out, char *err, size_t errlen)
{
	struct shxd_wset *ws = calloc(1, sizeof(*ws));
	struct shxd_wfill fill = { 0 };
	int ret;

	*err = '\0';
	if (!ws)
		return -ENOMEM;
	atomic_init(&ws->refs, 1);
	ws->npools = shxd_pool_count(pool);
	for (unsigned int p = 0; p < ws->npools; p++)
		ws->arena[p].node = shxd_pool_node(pool, p);
	ret = describe(ws, src, err, errlen);
	if (ret)
		goto err;
	/* Two passes: count each node's bytes, then allocate and place. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < ws->nt; i++) {
			const struct shxd_tdesc *d = &src->tf->t[ws->t[i].src];

			ret = place_tensor(ws, &ws->t[i], d,
					   src->img + d->offset,
					   src->quantize, &fill);
			if (ret)
				goto err;
		}
		for (unsigned int p = 0; !pass && p < ws->npools; p++) {
			ret = arena_alloc(&ws->arena[p]);
			if (ret) {
				errf(err, errlen, "no memory for %zu bytes of "
				     "weights on node %d", ws->arena[p].used,
				     ws->arena[p].node);
				goto err;
			}
		}
	}
	/* As many threads as the engine computes with. */
	ret = shxd_wfill_run(&fill, shxd_pool_all_threads(pool));
	if (ret)
		goto err;
	shxd_wfill_free(&fill);
	*out = ws;
	return 0;
err:
	shxd_wfill_free(&fill);
	wset_free(ws);
	return ret;
}

void shxd_wset_put(struct shxd_wset *ws)
{
	if (ws && atomic_fetch_sub(&ws->refs, 1) == 1)
		wset_free(ws);
}

/* The set that holds ws's tensors. */
static const struct shxd_wset *tensors_of(const struct shxd_wset *ws)
{
	return ws->base ? ws->base : ws;
}

bool shxd_wset_same_tensors(const struct shxd_wset *a,
			    const struct shxd_wset *b)
{
	return tensors_of(a) == tensors_of(b);
}

int shxd_wset_share(struct shxd_wset *root, struct shxd_wset **out)
{
	struct shxd_wset *ws = calloc(1, sizeof(*ws));

	if (!ws) {
		shxd_wset_put(root);
		return -ENOMEM;
	}
	atomic_init(&ws->refs, 1);
	ws->base = root;
	ws->npools = root->npools;
	ws->t = root->t;
	ws->nt = root->nt;
	memcpy(ws->arena, root->arena, sizeof(ws->arena));
	ws->file = root->file;
	*out = ws;
	return 0;
}

const struct shxd_tensor *shxd_wset_find(const struct shxd_wset *ws,
					 const char *name)
{
	struct shxd_tensor key;

	if (snprintf(key.name, sizeof(key.name), "%s", name) >=
	    (int)sizeof(key.name))
		return NULL;
	return bsearch(&key, ws->t, ws->nt, sizeof(*ws->t), cmp_tensor);
}

/* The tensor named fmt with the layer number in its %u, or NULL. */
static const struct shxd_tensor *layer_tensor(const struct shxd_wset *ws,
					      const char *fmt,
					      unsigned int layer)
{
	char name[SHXD_TNAME_MAX];

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	snprintf(name, sizeof(name), fmt, layer);
#pragma GCC diagnostic pop
	return shxd_wset_find(ws, name);
}

const struct shxd_mat *shxd_wset_mat(const struct shxd_wset *ws,
				     const char *fmt, unsigned int layer)
{
	const struct shxd_tensor *t = layer_tensor(ws, fmt, layer);

	return t && t->nmats == 1 ? &t->mats[0] : NULL;
}

int shxd_wset_vec(const struct shxd_wset *ws, const char *fmt,
		  unsigned int layer, size_t n, const float **vec)
{
	const struct shxd_tensor *t = layer_tensor(ws, fmt, layer);

	*vec = NULL;
	if (!t)
		return -ENOENT;
	if (!t->vec || t->ne[0] != n)
		return -EINVAL;
	*vec = t->vec;
	return 0;
}

void shxd_wset_experts_of(const struct shxd_wset *ws, unsigned int layer,
			  const char *kind, struct shxd_experts *x)
{
	char name[SHXD_TNAME_MAX];

	snprintf(name, sizeof(name), "blk.%u.ffn_%s_exps.weight", layer, kind);
	*x = (struct shxd_experts){ .ws = ws, .layer = layer, .kind = kind,
				    .stacked = shxd_wset_find(ws, name) };
}

const struct shxd_mat *shxd_experts_get(const struct shxd_experts *x,
					unsigned int e)
{
	const struct shxd_tensor *t = x->stacked;
	char name[SHXD_TNAME_MAX];

	if (t)
		return t->ndim == 3 && e < t->nmats ? &t->mats[e] : NULL;
	snprintf(name, sizeof(name), "blk.%u.ffn_%s_exps.%u.weight", x->layer,
		 x->kind, e);
	t = shxd_wset_find(x->ws, name);
	return t && t->nmats == 1 ? &t->mats[0] : NULL;
}

const struct shxd_mat *shxd_wset_expert(const struct shxd_wset *ws,
					unsigned int layer, const char *kind,
					unsigned int e)
{
	struct shxd_experts x;

	shxd_wset_experts_of(ws, layer, kind, &x);
	return shxd_experts_get(&x, e);
}

unsigned int shxd_wset_experts(const struct shxd_wset *ws, unsigned int layer)
{
	const struct shxd_tensor *t;
	char name[SHXD_TNAME_MAX];
	unsigned int e = 0;

	snprintf(name, sizeof(name), "blk.%u.ffn_gate_exps.weight", layer);
	t = shxd_wset_find(ws, name);
	if (t)
		return t->ndim == 3 ? (unsigned int)t->ne[2] : 0;
	while (shxd_wset_expert(ws, layer, "gate", e))
		e++;
	return e;
}

uint64_t shxd_wset_pool_bytes(const struct shxd_wset *ws, unsigned int pool)
{
	return pool < ws->npools ? ws->arena[pool].used : 0;
}

static const char *type_name(enum shxk_type t)
{
	static const char *const names[] = { "f32", "f16", "bf16", "q8_0",
					     "q4_0" };

	return (unsigned int)t < SHXK_NTYPES ? names[t] : "?";
}

/* Pages of an arena per node, as the kernel placed them. */
static void print_pages(const struct shxd_arena *a, FILE *f)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t n = (a->used + (size_t)pg - 1) / (size_t)pg, i;
	unsigned long cnt[SHXD_MAX_POOLS + 1] = { 0 };
	void **pages = calloc(n ? n : 1, sizeof(*pages));
	int *status = calloc(n ? n : 1, sizeof(*status));

	if (!pages || !status || numa_available() < 0) {
		fprintf(f, "  node %d: page placement unknown\n", a->node);
		goto out;
	}
	for (i = 0; i < n; i++)
		pages[i] = (uint8_t *)a->base + i * (size_t)pg;
	if (move_pages(0, n, pages, NULL, status, 0) != 0) {
		fprintf(f, "  node %d: move_pages: %s\n", a->node,
			strerror(errno));
		goto out;
	}
	for (i = 0; i < n; i++)
		cnt[status[i] >= 0 && status[i] < SHXD_MAX_POOLS ?
		    status[i] : SHXD_MAX_POOLS]++;
	fprintf(f, "  arena for node %d: %zu bytes, %zu pages:", a->node,
		a->used, n);
	for (i = 0; i <= SHXD_MAX_POOLS; i++)
		if (cnt[i])
			fprintf(f, i < SHXD_MAX_POOLS ? " %lu on node %zu" :
				" %lu elsewhere", cnt[i], i);
	fputc('\n', f);
out:
	free(pages);
	free(status);
}

void shxd_wset_print_placement(const struct shxd_wset *ws,
			       const struct shxd_pool *pool, FILE *f)
{
	fprintf(f, "weight set %llu: %zu tensors over %u nodes\n",
		(unsigned long long)ws->id, ws->nt, ws->npools);
	for (size_t i = 0; i < ws->nt; i++) {
		const struct shxd_tensor *t = &ws->t[i];

		fprintf(f, "  %-40s", t->name);
		if (t->vec) {
			fprintf(f, " f32 %llu on node %d\n",
				(unsigned long long)t->ne[0], ws->arena[0].node);
			continue;
		}
		fprintf(f, " %s %zux%zu x%zu%s:", type_name(t->mats[0].type),
			t->mats[0].n, t->mats[0].k, t->nmats,
			t->mats[0].by_cols ? " by cols" : "");
		for (unsigned int p = 0; p < ws->npools; p++) {
			const struct shxk_weights *w = &t->mats[0].part[p];
			size_t b = t->nmats * shxk_repack_size(w->type,
							       w->layout,
							       w->n, w->k);

			fprintf(f, " node %d %zu B", shxd_pool_node(pool, p),
				w->n ? b : 0);
		}
		fputc('\n', f);
	}
	for (unsigned int p = 0; p < ws->npools; p++)
		print_pages(&ws->arena[p], f);
}

/* ---- registry ---- */

static pthread_mutex_t g_reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shxd_wset **g_reg;
static size_t g_reg_n, g_reg_cap;
static uint64_t g_next_id = 1;

int shxd_wreg_add(struct shxd_wset *ws, unsigned int max)
{
	int ret = 0;

	pthread_mutex_lock(&g_reg_lock);
	if (g_reg_n >= max) {
		ret = -ENOSPC;
	} else if (g_reg_n == g_reg_cap) {
		size_t cap = g_reg_cap ? g_reg_cap * 2 : 8;
		struct shxd_wset **r = realloc(g_reg, cap * sizeof(*r));

		if (r) {
			g_reg = r;
			g_reg_cap = cap;
		} else {
			ret = -ENOMEM;
		}
	}
	if (!ret) {
		ws->id = g_next_id++;	/* never reused: a stale id fails */
		g_reg[g_reg_n++] = ws;
	}
	pthread_mutex_unlock(&g_reg_lock);
	return ret;
}

struct shxd_wset *shxd_wreg_get(uint64_t id)
{
	struct shxd_wset *ws = NULL;

	pthread_mutex_lock(&g_reg_lock);
	for (size_t i = 0; i < g_reg_n; i++) {
		if (g_reg[i]->id == id) {
			ws = g_reg[i];
			atomic_fetch_add(&ws->refs, 1);
			break;
		}
	}
	pthread_mutex_unlock(&g_reg_lock);
	return ws;
}

int shxd_wreg_remove(uint64_t id, uint32_t ctx)
{
	struct shxd_wset *ws = NULL;
	int ret = -ENOENT;

	pthread_mutex_lock(&g_reg_lock);
	for (size_t i = 0; i < g_reg_n; i++) {
		if (g_reg[i]->id != id)
			continue;
		if (g_reg[i]->owner != ctx) {
			ret = -EPERM;
			break;
		}
		ws = g_reg[i];
		g_reg[i] = g_reg[--g_reg_n];
		ret = 0;
		break;
	}
	pthread_mutex_unlock(&g_reg_lock);
	shxd_wset_put(ws);
	return ret;
}

struct shxd_wset *shxd_wreg_find_file(const struct shxd_wfile *f)
{
	struct shxd_wset *root = NULL;

	pthread_mutex_lock(&g_reg_lock);
	for (size_t i = 0; i < g_reg_n && !root; i++) {
		const struct shxd_wfile *g = &g_reg[i]->file;

		if (g->size && g->dev == f->dev && g->ino == f->ino &&
		    g->size == f->size && g->mtime_ns == f->mtime_ns &&
		    g->quantize == f->quantize) {
			root = g_reg[i]->base ? g_reg[i]->base : g_reg[i];
			atomic_fetch_add(&root->refs, 1);
		}
	}
	pthread_mutex_unlock(&g_reg_lock);
	return root;
}

void shxd_wreg_each(void (*fn)(const struct shxd_wset *ws, bool first,
			       void *arg),
		    void *arg)
{
	pthread_mutex_lock(&g_reg_lock);
	for (size_t i = 0; i < g_reg_n; i++) {
		bool first = true;

		for (size_t j = 0; j < i && first; j++)
			first = !shxd_wset_same_tensors(g_reg[j], g_reg[i]);
		fn(g_reg[i], first, arg);
	}
	pthread_mutex_unlock(&g_reg_lock);
}

void shxd_wreg_clear(void)
{
	pthread_mutex_lock(&g_reg_lock);
	while (g_reg_n)
		shxd_wset_put(g_reg[--g_reg_n]);
	free(g_reg);
	g_reg = NULL;
	g_reg_cap = 0;
	pthread_mutex_unlock(&g_reg_lock);
}
