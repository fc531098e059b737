// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * AMX GEMMs for Q8_0 and Q4_0 weights (ROWS and X8 layouts) with at least
 * AMX_MIN_M activation rows: prefill, batched decode, MoE expert batches.
 * The "amx" table (avx512.c) is avx512bf16's with these four; fewer rows
 * go to avx512bf16's kernels, where tiles would sit mostly empty.
 *
 * One tdpbssd (s8 x s8) multiplies one 32-value block of 16 activation
 * rows (tile A: 16 rows of 32 bytes, loaded straight from the prepared
 * rows) by the same block of 16 weight rows (tile B: 8 rows of 4 values x
 * 16 weight rows, the order the instruction wants) into 16 x 16 int32
 * sums (tile C). Every block has its own weight and activation scales, so
 * each block's C is stored and scaled into f32 accumulators with AVX-512,
 * as the other variants do per block.
 *
 * The weight rows are decoded (Q4_0 nibbles to s8, X8's interleaved rows
 * gathered back) and transposed into tile B one block at a time, and that
 * tile serves a chunk of AMX_CHUNK activation rows (whose blocks stay in
 * L2 while every weight row passes): no repacked copy of the weights, no
 * allocation, nothing added to a model's load time or memory.
 *
 * Built with SHXK_AMX_MODEL, the tile instructions come from amx_model.h,
 * a C model of them, so make test runs this file on CPUs without AMX.
 */
#include <immintrin.h>
#include <string.h>

#include "../../internal.h"
#ifdef SHXK_AMX_MODEL
#include "amx_model.h"
#endif

#define AMX_MIN_M 16	/* activation rows for the tiles to pay */
#define AMX_ROWS 16	/* rows of tiles A and C, columns of B and C */
#define AMX_CHUNK 64	/* activation rows per pass over the weights */

/* Tile numbers: literals, the intrinsics paste them into the opcode. */
#define TC0 0
#define TC1 1
#define TA0 2
#define TA1 3
#define TB 4

struct amx_cfg {
	uint8_t palette, start_row, reserved[14];
	uint16_t colsb[16];
	uint8_t rows[16];
};

_Static_assert(sizeof(struct amx_cfg) == 64, "LDTILECFG's 64 bytes");

/* Static const: ldtilecfg's asm tells the compiler it reads 8 bytes. */
static const struct amx_cfg g_cfg = {
	.palette = 1,
	.colsb = { [TC0] = 64, [TC1] = 64, [TA0] = SHXK_QK, [TA1] = SHXK_QK,
		   [TB] = 64 },
	.rows = { [TC0] = AMX_ROWS, [TC1] = AMX_ROWS, [TA0] = AMX_ROWS,
		  [TA1] = AMX_ROWS, [TB] = SHXK_QK / 4 },
};

/*
 * GCC's tileloadd asm takes only the address: without this the stores
 * that fill p could be moved past the load, or dropped.
 */
#define TILE_LOAD(t, p, stride)						\
	do {								\
		__asm__ volatile("" : : "r"(p) : "memory");		\
		_tile_loadd(t, p, stride);				\
	} while (0)

/* Weight row n's block j as 32 s8 into q; its scale into *d. */
static inline void load_block(const struct shxk_gemm_args *a, int q4, int x8,
			      size_t n, size_t j, int8_t *q, float *d)
{
	size_t bs = q4 ? sizeof(struct shxk_block_q4_0) :
			 sizeof(struct shxk_block_q8_0);
	uint8_t qs[SHXK_QK];
	uint16_t dh;

	if (x8) {
		const uint8_t *col = a->w + n / SHXK_X8 * a->wstride +
				     j * bs * SHXK_X8;

		memcpy(&dh, col + 2 * (n % SHXK_X8), 2);
		shxk_x8_get_qs(col, n % SHXK_X8, qs, bs - 2);
	} else {
		const uint8_t *b = a->w + n * a->wstride + j * bs;

		memcpy(&dh, b, 2);
		memcpy(qs, b + 2, bs - 2);
	}
	*d = _cvtsh_ss(dh);
	if (!q4) {
		memcpy(q, qs, SHXK_QK);
	} else {
		__m128i v = _mm_loadu_si128((const __m128i *)qs);
		__m128i lo = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);

		_mm_storeu_si128((__m128i *)q,
				 _mm_sub_epi8(_mm_and_si128(v, lo), eight));
		_mm_storeu_si128((__m128i *)(q + 16),
				 _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(v, 4), lo),
					      eight));
	}
}

/*
 * The vpermt2d indices that transpose 16 rows of 8 dwords in three
 * rounds, each merging two registers: 2 rows x 8 -> 4 x 4 (x[h]),
 * 4 x 4 -> 8 x 2 (y[e]), 8 x 2 -> 16 x 1 (z[f]). Index i + 16 picks
 * element i of the second register.
 */
struct amx_perm {
	__m512i x[2], y[2], z[2];
};

static void perm_init(struct amx_perm *p)
{
	int32_t x[2][16], y[2][16], z[2][16];

	for (int h = 0; h < 2; h++) {
		for (int i = 0; i < 16; i++) {
			int g = i / 4, q = i % 4, g2 = i / 8, q8 = i % 8;

			/* x[h][4g + q] = row q, dword 4h + g */
			x[h][i] = (q < 2 ? 8 * q : 16 + 8 * (q - 2)) + 4 * h + g;
			/* y[e][8g2 + q8] = row q8, dword 2e + g2 of x's */
			y[h][i] = (q8 < 4 ? 0 : 16 - 4) + (2 * h + g2) * 4 + q8;
			/* z[f][n] = row n, dword f of y's */
			z[h][i] = (i < 8 ? 0 : 16 - 8) + h * 8 + i;
		}
	}
	for (int h = 0; h < 2; h++) {
		p->x[h] = _mm512_loadu_si512(x[h]);
		p->y[h] = _mm512_loadu_si512(y[h]);
		p->z[h] = _mm512_loadu_si512(z[h]);
	}
}

/*
 * wq (16 weight rows of one block, 8 dwords each) into tile B order:
 * bt[g][n] = dword g of row n.
 */
static inline void transpose(const struct amx_perm *p,
			     const int8_t wq[AMX_ROWS][SHXK_QK], int32_t *bt)
{
	__m512i r[8], x[4][2], y[2][2][2];

	for (int k = 0; k < 8; k++)	/* rows 2k, 2k + 1 */
		r[k] = _mm512_load_si512(wq[2 * k]);
	for (int q = 0; q < 4; q++)	/* rows 4q..4q+3 */
		for (int h = 0; h < 2; h++)
			x[q][h] = _mm512_permutex2var_epi32(r[2 * q], p->x[h],
							    r[2 * q + 1]);
	for (int o = 0; o < 2; o++)	/* rows 8o..8o+7, dwords 4h.. */
		for (int h = 0; h < 2; h++)
			for (int e = 0; e < 2; e++)
				y[o][h][e] = _mm512_permutex2var_epi32(x[2 * o][h],
					p->y[e], x[2 * o + 1][h]);
	for (int h = 0; h < 2; h++)
		for (int e = 0; e < 2; e++)
			for (int f = 0; f < 2; f++)
				_mm512_store_si512(bt + (4 * h + 2 * e + f) * AMX_ROWS,
					_mm512_permutex2var_epi32(y[0][h][e],
						p->z[f], y[1][h][e]));
}

/* acc[i][0..15] += c[i][0..15] * xd[i] * wd[0..15], i < rows. */
static inline void scale_add(float (*acc)[AMX_ROWS],
			     const int32_t c[AMX_ROWS][AMX_ROWS], __m512 wd,
			     const float *xd, size_t rows)
{
	for (size_t i = 0; i < rows; i++)
		_mm512_storeu_ps(acc[i], _mm512_fmadd_ps(
			_mm512_cvtepi32_ps(_mm512_load_si512(c[i])),
			_mm512_mul_ps(_mm512_set1_ps(xd[i]), wd),
			_mm512_loadu_ps(acc[i])));
}

/*
 * Activation rows i..i+15 of block j as tile A, or, for the last rows of
 * a chunk short of 16, a zero-padded copy of them in pad (tileloadd would
 * read past the last row).
 */
static inline const uint8_t *act_tile(const struct shxk_gemm_args *a,
				      size_t i, size_t rows, size_t j,
				      float *xd, uint8_t pad[AMX_ROWS][SHXK_QK])
{
	for (size_t r = 0; r < rows; r++)
		xd[r] = shxk_act_d(a->act + (i + r) * a->astride, a->k)[j];
	if (rows == AMX_ROWS)
		return a->act + i * a->astride + j * SHXK_QK;
	for (size_t r = 0; r < rows; r++)
		memcpy(pad[r], a->act + (i + r) * a->astride + j * SHXK_QK,
		       SHXK_QK);
	return pad[0];
}

/* Weight rows n..n+nr-1 (nr <= 16) x activation rows i0..i0+mr-1. */
static void amx_tile(const struct shxk_gemm_args *a, int q4, int x8,
		     const struct amx_perm *p, size_t n, size_t nr,
		     size_t i0, size_t mr)
{
	_Alignas(64) int8_t wq[AMX_ROWS][SHXK_QK] = { { 0 } };
	_Alignas(64) int32_t bt[SHXK_QK / 4 * AMX_ROWS];
	_Alignas(64) int32_t c0[AMX_ROWS][AMX_ROWS], c1[AMX_ROWS][AMX_ROWS];
	_Alignas(64) uint8_t pad[AMX_ROWS][SHXK_QK] = { { 0 } };
	_Alignas(64) float acc[AMX_CHUNK][AMX_ROWS] = { { 0 } };
	_Alignas(64) float wd[AMX_ROWS] = { 0 };
	float xd0[AMX_ROWS], xd1[AMX_ROWS];
	size_t nb = a->k / SHXK_QK;

	for (size_t j = 0; j < nb; j++) {
		size_t u = 0;

		for (size_t r = 0; r < nr; r++)
			load_block(a, q4, x8, n + r, j, wq[r], &wd[r]);
		transpose(p, wq, bt);
		TILE_LOAD(TB, bt, 64);
		/* Two C tiles in flight: one multiplies while one drains. */
		for (; u + 2 * AMX_ROWS <= mr; u += 2 * AMX_ROWS) {
			const uint8_t *t0 = act_tile(a, i0 + u, AMX_ROWS, j, xd0, pad);
			const uint8_t *t1 = act_tile(a, i0 + u + AMX_ROWS,
						     AMX_ROWS, j, xd1, pad);

			_tile_zero(TC0);
			_tile_zero(TC1);
			TILE_LOAD(TA0, t0, a->astride);
			TILE_LOAD(TA1, t1, a->astride);
			_tile_dpbssd(TC0, TA0, TB);
			_tile_dpbssd(TC1, TA1, TB);
			_tile_stored(TC0, c0, 64);
			_tile_stored(TC1, c1, 64);
			scale_add(acc + u, c0, _mm512_load_ps(wd), xd0, AMX_ROWS);
			scale_add(acc + u + AMX_ROWS, c1, _mm512_load_ps(wd), xd1,
				  AMX_ROWS);
		}
		for (; u < mr; u += AMX_ROWS) {
			size_t rows = mr - u < AMX_ROWS ? mr - u : AMX_ROWS;
			const uint8_t *t0 = act_tile(a, i0 + u, rows, j, xd0, pad);

			_tile_zero(TC0);
			TILE_LOAD(TA0, t0, rows == AMX_ROWS ? a->astride : SHXK_QK);
			_tile_dpbssd(TC0, TA0, TB);
			_tile_stored(TC0, c0, 64);
			scale_add(acc + u, c0, _mm512_load_ps(wd), xd0, rows);
		}
	}
	for (size_t i = 0; i < mr; i++)
		for (size_t r = 0; r < nr; r++)
			shxk_store(a, i0 + i, n + r, acc[i][r]);
}

static void gemm_amx(const struct shxk_gemm_args *a, int q4, int x8)
{
	const struct shxk_ops *small = &shxk_ops_avx512bf16;
	enum shxk_type wt = q4 ? SHXK_Q4_0 : SHXK_Q8_0;
	struct amx_perm p;

	if (a->m < AMX_MIN_M) {
		(x8 ? small->gemm_x8[wt] : small->gemm[wt])(a);
		return;
	}
	perm_init(&p);
	_tile_loadconfig(&g_cfg);
	for (size_t i0 = 0; i0 < a->m; i0 += AMX_CHUNK) {
		size_t mr = a->m - i0 < AMX_CHUNK ? a->m - i0 : AMX_CHUNK;

		for (size_t n = a->n0; n < a->n1; n += AMX_ROWS)
			amx_tile(a, q4, x8, &p, n, a->n1 - n < AMX_ROWS ?
				 a->n1 - n : AMX_ROWS, i0, mr);
	}
	_tile_release();
}

void shxk_gemm_q8_0_amx(const struct shxk_gemm_args *a)
{
	gemm_amx(a, 0, 0);
}

void shxk_gemm_q4_0_amx(const struct shxk_gemm_args *a)
{
	gemm_amx(a, 1, 0);
}

void shxk_gemm_x8_q8_0_amx(const struct shxk_gemm_args *a)
{
	gemm_amx(a, 0, 1);
}

void shxk_gemm_x8_q4_0_amx(const struct shxk_gemm_args *a)
{
	gemm_amx(a, 1, 1);
}
