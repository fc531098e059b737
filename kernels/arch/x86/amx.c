// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * AMX GEMMs for Q8_0 and Q4_0 weights (ROWS and X8 layouts) and BF16 ones
 * with at least AMX_MIN_M activation rows: prefill, batched decode, MoE
 * expert batches. The "amx" table (avx512.c) is avx512bf16's with these
 * five; fewer rows go to avx512bf16's kernels, where tiles would sit
 * mostly empty.
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
 * A transpose in rounds of vpermt2d, each merging two registers that hold
 * r rows of d dwords into one that holds 2r rows of d / 2: dwords
 * h * d / 2.. of both. Element i of the result is row i % 2r, dword
 * i / 2r of those; the inputs hold row q, dword g at g * r + q, or at
 * q * d + g when rowmajor (a plain load of r whole rows). Index i + 16
 * picks element i of the second register.
 */
static __m512i perm_index(int r, int d, int h, int rowmajor)
{
	int32_t idx[16];

	for (int i = 0; i < 16; i++) {
		int q = i % (2 * r), g = h * d / 2 + i / (2 * r);
		int src = q < r ? 0 : 16;

		q %= r;
		idx[i] = src + (rowmajor ? q * d + g : g * r + q);
	}
	return _mm512_loadu_si512(idx);
}

/* Q8_0/Q4_0: 16 rows of 8 dwords, loaded two rows a register. */
struct amx_perm {
	__m512i x[2], y[2], z[2];
};

static void perm_init(struct amx_perm *p)
{
	for (int h = 0; h < 2; h++) {
		p->x[h] = perm_index(2, 8, h, 1);	/* -> 4 rows x 4 */
		p->y[h] = perm_index(4, 4, h, 0);	/* -> 8 rows x 2 */
		p->z[h] = perm_index(8, 2, h, 0);	/* -> 16 rows x 1 */
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

/* ---- BF16 weights: tdpbf16ps, the f32 sums stay in tiles over all K ---- */

#define BF_K 32		/* bf16 values per tile row: 64 bytes */
#define BF_MT 4		/* 16-row activation tiles per chunk: 4 C tiles */

/* Tile numbers of the bf16 configuration. */
#define BC0 0
#define BC1 1
#define BC2 2
#define BC3 3
#define BA 4
#define BB 5

static const struct amx_cfg g_cfg_bf16 = {
	.palette = 1,
	.colsb = { 64, 64, 64, 64, 64, 64 },
	.rows = { AMX_ROWS, AMX_ROWS, AMX_ROWS, AMX_ROWS, AMX_ROWS, BF_K / 2 },
};

/* 16 rows of 16 dwords, one a register: four rounds. */
struct amx_perm16 {
	__m512i p[4][2];
};

static void perm16_init(struct amx_perm16 *p)
{
	for (int rd = 0; rd < 4; rd++)
		for (int h = 0; h < 2; h++)
			p->p[rd][h] = perm_index(1 << rd, 16 >> rd, h, 0);
}

/*
 * v[q] = row q in, v[g] = dword g of rows 0..15 out. Before a round of r
 * rows a register, v[s * r + b] holds rows s * r.. and dwords b * 16 / r..
 */
static inline void transpose16(const struct amx_perm16 *p, __m512i v[16])
{
	__m512i t[16];

	for (int rd = 0, r = 1; rd < 4; rd++, r *= 2) {
		for (int s = 0; s < 8 / r; s++)
			for (int b = 0; b < r; b++)
				for (int h = 0; h < 2; h++)
					t[s * 2 * r + b * 2 + h] = _mm512_permutex2var_epi32(
						v[2 * s * r + b], p->p[rd][h],
						v[(2 * s + 1) * r + b]);
		memcpy(v, t, sizeof(t));
	}
}

/* The 32 bf16 of row p from e, zeros past k. */
static inline __m512i bf_load(const uint16_t *p, size_t k, size_t e)
{
	__mmask32 m = k - e >= BF_K ? 0xffffffffu :
				      (__mmask32)((1ull << (k - e)) - 1);

	return _mm512_maskz_loadu_epi16(m, p + e);
}

/*
 * Activation rows i..i+rows-1, values e..e+31, as tile BA: straight from
 * the rows when whole, else a zero-padded copy in pad.
 */
#define BF_STEP(TC, u)							\
	do {								\
		size_t i_ = i0 + (u) * AMX_ROWS;			\
		size_t rows_ = mr - (u) * AMX_ROWS < AMX_ROWS ?		\
			       mr - (u) * AMX_ROWS : AMX_ROWS;		\
									\
		if (rows_ == AMX_ROWS && e + BF_K <= a->k) {		\
			TILE_LOAD(BA, shxk_act_bf16(a->act + i_ * a->astride, \
				  a->k) + e, a->astride);		\
		} else {						\
			for (size_t r_ = 0; r_ < rows_; r_++)		\
				_mm512_store_si512(pad[r_], bf_load(	\
					shxk_act_bf16(a->act + (i_ + r_) * \
						      a->astride, a->k), \
					a->k, e));			\
			TILE_LOAD(BA, pad, 64);				\
		}							\
		_tile_dpbf16ps(TC, BA, BB);				\
	} while (0)

#define BF_OUT(TC, u)							\
	do {								\
		size_t rows_ = mr - (u) * AMX_ROWS < AMX_ROWS ?		\
			       mr - (u) * AMX_ROWS : AMX_ROWS;		\
									\
		_tile_stored(TC, c, 64);				\
		for (size_t i_ = 0; i_ < rows_; i_++)			\
			for (size_t r_ = 0; r_ < nr; r_++)		\
				shxk_store(a, i0 + (u) * AMX_ROWS + i_,	\
					   n + r_, c[i_][r_]);		\
	} while (0)

/* Weight rows n..n+nr-1 (nr <= 16) x activation rows i0..i0+mr-1. */
static void bf16_tile(const struct shxk_gemm_args *a,
		      const struct amx_perm16 *p, size_t n, size_t nr,
		      size_t i0, size_t mr)
{
	_Alignas(64) uint16_t pad[AMX_ROWS][BF_K] = { { 0 } };
	_Alignas(64) int32_t bt[BF_K / 2][AMX_ROWS];
	_Alignas(64) float c[AMX_ROWS][AMX_ROWS];
	size_t mt = (mr + AMX_ROWS - 1) / AMX_ROWS;

	_tile_zero(BC0);
	_tile_zero(BC1);
	_tile_zero(BC2);
	_tile_zero(BC3);
	for (size_t e = 0; e < a->k; e += BF_K) {
		__m512i v[16];

		for (size_t r = 0; r < AMX_ROWS; r++)
			v[r] = r < nr ? bf_load((const uint16_t *)(a->w + (n + r) *
					a->wstride), a->k, e) :
					_mm512_setzero_si512();
		transpose16(p, v);
		for (int g = 0; g < BF_K / 2; g++)
			_mm512_store_si512(bt[g], v[g]);
		TILE_LOAD(BB, bt, 64);
		BF_STEP(BC0, 0);
		if (mt > 1)
			BF_STEP(BC1, 1);
		if (mt > 2)
			BF_STEP(BC2, 2);
		if (mt > 3)
			BF_STEP(BC3, 3);
	}
	BF_OUT(BC0, 0);
	if (mt > 1)
		BF_OUT(BC1, 1);
	if (mt > 2)
		BF_OUT(BC2, 2);
	if (mt > 3)
		BF_OUT(BC3, 3);
}

void shxk_gemm_bf16_amx(const struct shxk_gemm_args *a)
{
	struct amx_perm16 p;

	if (a->m < AMX_MIN_M) {
		shxk_gemm_bf16_avx512bf16(a);
		return;
	}
	perm16_init(&p);
	_tile_loadconfig(&g_cfg_bf16);
	for (size_t i0 = 0; i0 < a->m; i0 += BF_MT * AMX_ROWS) {
		size_t mr = a->m - i0 < BF_MT * AMX_ROWS ? a->m - i0 :
							   BF_MT * AMX_ROWS;

		for (size_t n = a->n0; n < a->n1; n += AMX_ROWS)
			bf16_tile(a, &p, n, a->n1 - n < AMX_ROWS ?
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
