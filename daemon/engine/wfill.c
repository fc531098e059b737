// SPDX-License-Identifier: MIT
/* Filling weight arenas on several threads (wfill.h). */
#include "wfill.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define FILL_ALIGN	8		/* rows of an X8 group (shxk.h) */
/* A chunk's output: a few huge pages, so that two threads seldom fault
 * in the same one. */
#define FILL_CHUNK_BYTES	(4u << 20)
/* A load is bound by memory long before this many threads. */
#define FILL_MAX_THREADS	32

struct fill_run {
	const struct shxd_wfill *f;
	size_t chunks, kmax, rowbuf;
	atomic_size_t next, done;
};

static size_t dst_row(const struct shxd_fill_piece *p)
{
	return shxk_row_size(p->w->type, p->w->k);
}

static size_t chunk_rows(const struct shxd_fill_piece *p)
{
	size_t r = FILL_CHUNK_BYTES / dst_row(p) / FILL_ALIGN * FILL_ALIGN;

	return r ? r : FILL_ALIGN;
}

static size_t piece_chunks(const struct shxd_fill_piece *p)
{
	return (p->w->n + chunk_rows(p) - 1) / chunk_rows(p);
}

/* Rows that need no conversion: an X8 piece repacks them from the source
 * as they are. */
static bool as_is(const struct shxd_fill_piece *p)
{
	return p->st == p->w->type && p->srs == dst_row(p);
}

/* One source row of k values (type st) to a row of type dt. */
static void convert_row(enum shxk_type st, const uint8_t *src,
			enum shxk_type dt, uint8_t *dst, size_t k, float *tmp)
{
	if (st == dt) {
		memcpy(dst, src, shxk_row_size(st, k));
		return;
	}
	shxk_dequantize(st, src, tmp, k, 0, 1);
	shxk_quantize(dt, tmp, dst, k, 0, 1);
}

/* Rows [r0, r1) of p; r0 starts an X8 group. */
static void fill_chunk(const struct shxd_fill_piece *p, size_t r0, size_t r1,
		       uint8_t *rowbuf, float *tmp)
{
	const struct shxk_weights *w = p->w;
	size_t drs = dst_row(p);
	uint8_t *dst = p->dst + r0 * drs;
	bool x8 = w->layout == SHXK_LAYOUT_X8;
	struct shxk_weights rw = {
		.type = w->type, .layout = SHXK_LAYOUT_ROWS, .n = r1 - r0,
		.k = w->k, .data = p->src + r0 * p->srs,
	};

	if (!x8 || !as_is(p)) {
		uint8_t *out = x8 ? rowbuf : dst;

		for (size_t r = r0; r < r1; r++)
			convert_row(p->st, p->src + r * p->srs, w->type,
				    out + (r - r0) * drs, w->k, tmp);
		rw.data = out;
	}
	if (x8)
		shxk_repack(&rw, SHXK_LAYOUT_X8, dst, 0,
			    (r1 - r0 + FILL_ALIGN - 1) / FILL_ALIGN);
}

/* Claims chunks in order; each thread walks the pieces once. */
static void *fill_worker(void *arg)
{
	struct fill_run *r = arg;
	uint8_t *rowbuf = malloc(r->rowbuf ? r->rowbuf : 1);
	float *tmp = malloc(r->kmax * sizeof(float));
	size_t i = 0, base = 0, n = 0, j, c;

	while (rowbuf && tmp &&
	       (j = atomic_fetch_add(&r->next, 1)) < r->chunks) {
		const struct shxd_fill_piece *p;
		size_t r0, r1;

		while (j >= base + (c = piece_chunks(&r->f->p[i]))) {
			base += c;
			i++;
		}
		p = &r->f->p[i];
		r0 = (j - base) * chunk_rows(p);
		r1 = r0 + chunk_rows(p) < p->w->n ? r0 + chunk_rows(p) :
						    p->w->n;
		fill_chunk(p, r0, r1, rowbuf, tmp);
		n++;
	}
	atomic_fetch_add(&r->done, n);
	free(rowbuf);
	free(tmp);
	return NULL;
}

int shxd_wfill_add(struct shxd_wfill *f, const struct shxd_fill_piece *p)
{
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 64;
		struct shxd_fill_piece *np = realloc(f->p, cap * sizeof(*np));

		if (!np)
			return -ENOMEM;
		f->p = np;
		f->cap = cap;
	}
	f->p[f->n++] = *p;
	return 0;
}

int shxd_wfill_run(const struct shxd_wfill *f, unsigned int threads)
{
	struct fill_run r = { .f = f, .kmax = 1 };
	pthread_t t[FILL_MAX_THREADS];
	unsigned int nt = 0;

	for (size_t i = 0; i < f->n; i++) {
		const struct shxd_fill_piece *p = &f->p[i];
		size_t buf = chunk_rows(p) * dst_row(p);

		r.chunks += piece_chunks(p);
		r.kmax = p->w->k > r.kmax ? p->w->k : r.kmax;
		if (p->w->layout == SHXK_LAYOUT_X8 && !as_is(p) &&
		    buf > r.rowbuf)
			r.rowbuf = buf;
	}
	atomic_init(&r.next, 0);
	atomic_init(&r.done, 0);
	if (threads > FILL_MAX_THREADS)
		threads = FILL_MAX_THREADS;
	/* The caller is one of them; a thread not started leaves its
	 * chunks to the others. */
	while (nt + 1 < threads && nt + 1 < r.chunks &&
	       !pthread_create(&t[nt], NULL, fill_worker, &r))
		nt++;
	fill_worker(&r);
	for (unsigned int i = 0; i < nt; i++)
		pthread_join(t[i], NULL);
	return atomic_load(&r.done) == r.chunks ? 0 : -ENOMEM;
}

void shxd_wfill_free(struct shxd_wfill *f)
{
	free(f->p);
	*f = (struct shxd_wfill){ 0 };
}
