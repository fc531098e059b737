// SPDX-License-Identifier: MIT
/* Filling weight arenas on several threads (daemon/engine/wfill.c): every
 * piece equal to one thread converting and repacking it whole, with
 * pieces of several chunks and a last X8 group cut short. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <CUnit/Basic.h>

#include "../t_cunit.h"

#include "wfill.h"

/* A source matrix of n rows of kfull values (type st) and its piece:
 * columns [col0, col0 + k) as dt in layout lay. */
struct shape {
	enum shxk_type st, dt;
	enum shxk_layout lay;
	size_t n, k, kfull, col0;
};

static const struct shape g_shapes[] = {
	/* As the file has it: X8 straight from the source, 3 chunks of
	 * 3,640 rows, 3 rows in the last group. */
	{ SHXK_Q4_0, SHXK_Q4_0, SHXK_LAYOUT_X8, 7803, 2048, 2048, 0 },
	/* f32 columns 1,024..3,071 quantized (an FFN down piece of a second
	 * pool), 2 chunks. */
	{ SHXK_F32, SHXK_Q8_0, SHXK_LAYOUT_X8, 2100, 2048, 3072, 1024 },
	/* Rows kept as they are but cut by columns: copied. */
	{ SHXK_F16, SHXK_F16, SHXK_LAYOUT_ROWS, 2500, 2048, 4096, 2048 },
	/* Smaller than a chunk; a Q8_0 piece cut by columns. */
	{ SHXK_Q8_0, SHXK_Q8_0, SHXK_LAYOUT_X8, 13, 64, 128, 64 },
	{ SHXK_F32, SHXK_BF16, SHXK_LAYOUT_ROWS, 5, 96, 96, 0 },
};
#define NSHAPES	(sizeof(g_shapes) / sizeof(g_shapes[0]))

struct mat {
	enum shxk_type st, dt;
	enum shxk_layout lay;
	size_t n, k, kfull, col0;
	uint8_t *src;
	struct shxk_weights w;
	uint8_t *dst, *ref;
	size_t bytes;
};

static uint32_t g_seed = 12345;

static uint32_t rnd(void)
{
	g_seed = g_seed * 1664525u + 1013904223u;
	return g_seed >> 8;
}

static size_t srs(const struct mat *m)
{
	return shxk_row_size(m->st, m->kfull);
}

static const uint8_t *piece_src(const struct mat *m)
{
	return m->src + shxk_row_size(m->st, m->col0);
}

static void make(struct mat *m, const struct shape *s)
{
	size_t sbytes;

	*m = (struct mat){ .st = s->st, .dt = s->dt, .lay = s->lay,
			   .n = s->n, .k = s->k, .kfull = s->kfull,
			   .col0 = s->col0 };
	sbytes = m->n * srs(m);
	m->src = malloc(sbytes);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m->src);
	if (m->st == SHXK_F32) {
		float *f = (float *)(void *)m->src;

		for (size_t i = 0; i < m->n * m->kfull; i++)
			f[i] = (float)((int)(rnd() % 20001) - 10000) / 997.0f;
	} else {
		/* Quantized rows as bytes: only copied and reordered. */
		for (size_t i = 0; i < sbytes; i++)
			m->src[i] = (uint8_t)rnd();
	}
	m->w = (struct shxk_weights){ .type = m->dt, .layout = m->lay,
				      .n = m->n, .k = m->k };
	m->bytes = shxk_repack_size(m->dt, m->lay, m->n, m->k);
	CU_ASSERT_FATAL(m->bytes > 0);
	m->dst = malloc(m->bytes);
	m->ref = malloc(m->bytes);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m->dst);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m->ref);
	m->w.data = m->dst;
}

/* The reference: every row converted in order, then repacked at once. */
static void reference(struct mat *m)
{
	size_t drs = shxk_row_size(m->dt, m->k);
	uint8_t *rows = malloc(m->n * drs);
	float *tmp = malloc(m->k * sizeof(float));
	struct shxk_weights rw = { .type = m->dt, .layout = SHXK_LAYOUT_ROWS,
				   .n = m->n, .k = m->k, .data = rows };

	CU_ASSERT_PTR_NOT_NULL_FATAL(rows);
	CU_ASSERT_PTR_NOT_NULL_FATAL(tmp);
	for (size_t r = 0; r < m->n; r++) {
		const uint8_t *s = piece_src(m) + r * srs(m);

		if (m->st == m->dt) {
			memcpy(rows + r * drs, s, drs);
			continue;
		}
		shxk_dequantize(m->st, s, tmp, m->k, 0, 1);
		shxk_quantize(m->dt, tmp, rows + r * drs, m->k, 0, 1);
	}
	if (m->lay == SHXK_LAYOUT_ROWS)
		memcpy(m->ref, rows, m->bytes);
	else
		CU_ASSERT_EQUAL(shxk_repack(&rw, SHXK_LAYOUT_X8, m->ref, 0,
					    (m->n + 7) / 8), 0);
	free(rows);
	free(tmp);
}

static void unmake(struct mat *m)
{
	free(m->src);
	free(m->dst);
	free(m->ref);
}

static void t_pieces(void)
{
	struct mat m[NSHAPES];
	static const unsigned int threads[] = { 1, 2, 3, 7 };
	size_t nm = NSHAPES;

	for (size_t i = 0; i < nm; i++) {
		make(&m[i], &g_shapes[i]);
		reference(&m[i]);
	}
	for (size_t t = 0; t < sizeof(threads) / sizeof(threads[0]); t++) {
		struct shxd_wfill f = { 0 };

		for (size_t i = 0; i < nm; i++) {
			memset(m[i].dst, 0xa5, m[i].bytes);
			CU_ASSERT_EQUAL(shxd_wfill_add(&f, &(struct shxd_fill_piece){
				.w = &m[i].w, .dst = m[i].dst,
				.src = piece_src(&m[i]), .srs = srs(&m[i]),
				.st = m[i].st }), 0);
		}
		CU_ASSERT_EQUAL(shxd_wfill_run(&f, threads[t]), 0);
		for (size_t i = 0; i < nm; i++)
			CU_ASSERT(!memcmp(m[i].dst, m[i].ref, m[i].bytes));
		shxd_wfill_free(&f);
		CU_ASSERT_PTR_NULL(f.p);
	}
	for (size_t i = 0; i < nm; i++)
		unmake(&m[i]);
}

static void t_empty(void)
{
	struct shxd_wfill f = { 0 };

	CU_ASSERT_EQUAL(shxd_wfill_run(&f, 4), 0);
	shxd_wfill_free(&f);
}

int main(void)
{
	static const struct t_test tests[] = {
		{ "pieces equal one thread's conversion", t_pieces },
		{ "nothing to fill", t_empty },
	};

	return T_RUN_SUITE("shxd_wfill", NULL, NULL, tests);
}
