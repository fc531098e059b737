// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * AMX GEMMs for Q8_0 and Q4_0 weights (X8 layout) and BF16 ones with at
 * least AMX_MIN_M activation rows: prefill, batched decode, MoE expert
 * batches. The "amx" table (avx512.c) is avx512bf16's with these three;
 * fewer rows, and Q8_0/Q4_0 in the ROWS layout (the engine repacks every
 * quantized matrix to X8), go to avx512bf16's kernels (X8 read as
 * several weight streams: shxk_gemm_x8_avx512).
 *
 * One tdpbssd (s8 x s8) multiplies one 32-value block of 16 activation
 * rows (tile A: 16 rows of 32 bytes, loaded straight from the prepared
 * rows) by the same block of 16 weight rows (tile B: 8 rows of 4 values x
 * 16 weight rows, the order the instruction wants) into 16 x 16 int32
 * sums (tile C). Every block has its own weight and activation scales, so
 * each block's C is stored and scaled into f32 sums with AVX-512, as the
 * other variants do per block: 2 x 2 tiles a step (32 activation rows by
 * 32 weight rows), so each tile A and B loaded serves two products.
 *
 * X8 keeps 8 rows' 8-byte pieces of a block side by side, so tile B is
 * one vpermt2d a row from two groups' bytes (Q4_0 nibbles unpacked to s8
 * first). It is built once per block and 32 weight rows and serves up to
 * AMX_CHUNK activation rows, whose sums stay in L1 and whose blocks stay
 * in L2 while the weights pass once: no repacked copy of the weights, no
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
#define AMX_NW (2 * AMX_ROWS)	/* weight rows a pass: tiles B0 and B1 */
#define AMX_MW (2 * AMX_ROWS)	/* activation rows a step: tiles A0, A1 */
#define AMX_CHUNK 128	/* activation rows a pass: 16 KiB of f32 sums */
#define AMX_CHUNK_L2 (1u << 20)	/* and at most this many of their bytes */
/*
 * Bytes ahead of each weight group's stream to prefetch. Xeon (AMX), 1
 * thread, GFLOPS without -> 1024 / 2048 / 4096 ahead: q8_0 4096x14336
 * M=16 289 -> 372 / 369 / 348, q4_0 14336x4096 M=16 327 -> 412 / 412 /
 * 400; M=128 within noise.
 */
#define AMX_PREFETCH 2048

/*
 * Tile numbers: literals, the intrinsics paste them into the opcode.
 * TCit: activation tile i times weight tile t.
 */
#define TC00 0
#define TC01 1
#define TC10 2
#define TC11 3
#define TA0 4
#define TA1 5
#define TB0 6
#define TB1 7

struct amx_cfg {
	uint8_t palette, start_row, reserved[14];
	uint16_t colsb[16];
	uint8_t rows[16];
};

_Static_assert(sizeof(struct amx_cfg) == 64, "LDTILECFG's 64 bytes");

/* Static const: ldtilecfg's asm tells the compiler it reads 8 bytes. */
static const struct amx_cfg g_cfg = {
	.palette = 1,
	.colsb = { [TC00] = 64, [TC01] = 64, [TC10] = 64, [TC11] = 64,
		   [TA0] = SHXK_QK, [TA1] = SHXK_QK, [TB0] = 64, [TB1] = 64 },
	.rows = { [TC00] = AMX_ROWS, [TC01] = AMX_ROWS, [TC10] = AMX_ROWS,
		  [TC11] = AMX_ROWS, [TA0] = AMX_ROWS, [TA1] = AMX_ROWS,
		  [TB0] = SHXK_QK / 4, [TB1] = SHXK_QK / 4 },
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

/*
 * Block j of the 16 weight rows of X8 groups g, g + 1 (none past gend:
 * zero rows) into tile B order, bt[e][n] = dword e of row n, and their
 * scales. An X8 block holds 8-byte pieces, dwords 2c and 2c + 1 of rows
 * 0..7 side by side, so one vpermt2d of two groups' pieces makes a row of
 * bt: perm[e] picks dword e of every row.
 */
static inline __m512 weight_tile(const struct shxk_gemm_args *a, int q4,
				 size_t g, size_t gend, size_t j,
				 const __m512i perm[2], int32_t bt[8][AMX_ROWS])
{
	const size_t bs = q4 ? sizeof(struct shxk_block_q4_0) :
			       sizeof(struct shxk_block_q8_0);
	const __m512i m4 = _mm512_set1_epi8(15), eight = _mm512_set1_epi8(8);
	__m512i v[2][4];	/* group, dword pair: dwords 2q, 2q + 1 */
	__m128i d[2];

	for (size_t h = 0; h < 2; h++) {
		const uint8_t *col = a->w + (g + h) * a->wstride +
				     j * bs * SHXK_X8;

		if (g + h >= gend) {
			d[h] = _mm_setzero_si128();
			for (int q = 0; q < 4; q++)
				v[h][q] = _mm512_setzero_si512();
			continue;
		}
		for (size_t o = 0; o < bs * SHXK_X8; o += 64)
			_mm_prefetch((const char *)col + AMX_PREFETCH + o,
				     _MM_HINT_T0);
		d[h] = _mm_loadu_si128((const __m128i *)col);
		if (q4) {
			/* Byte i of a Q4_0 block: values i and i + 16. */
			__m512i c0 = _mm512_loadu_si512(col + 2 * SHXK_X8);
			__m512i c1 = _mm512_loadu_si512(col + 2 * SHXK_X8 + 64);

			v[h][0] = _mm512_sub_epi8(_mm512_and_si512(c0, m4), eight);
			v[h][1] = _mm512_sub_epi8(_mm512_and_si512(c1, m4), eight);
			v[h][2] = _mm512_sub_epi8(_mm512_and_si512(
					_mm512_srli_epi16(c0, 4), m4), eight);
			v[h][3] = _mm512_sub_epi8(_mm512_and_si512(
					_mm512_srli_epi16(c1, 4), m4), eight);
		} else {
			for (int q = 0; q < 4; q++)
				v[h][q] = _mm512_loadu_si512(col + 2 * SHXK_X8 +
							     64 * q);
		}
	}
	for (int q = 0; q < 4; q++)
		for (int e = 0; e < 2; e++)
			_mm512_store_si512(bt[2 * q + e], _mm512_permutex2var_epi32(
				v[0][q], perm[e], v[1][q]));
	return _mm512_cvtph_ps(_mm256_inserti128_si256(
		_mm256_castsi128_si256(d[0]), d[1], 1));
}

/*
 * The two C tiles of one activation tile, c[t] (weight tile t, scales
 * wd[t]), into acc: acc[i][16t..16t+15] += c[t][i][0..15] * xd_i * wd[t]
 * for rows i < rows, xd_i the block's scale in activation row i (rows
 * astride bytes apart from xd).
 */
static inline void scale_add(float (*acc)[AMX_NW],
			     const int32_t c[2][AMX_ROWS][AMX_ROWS],
			     const __m512 wd[2], const uint8_t *xd,
			     size_t astride, size_t rows)
{
	for (size_t i = 0; i < rows; i++) {
		float x;

		memcpy(&x, xd + i * astride, sizeof(x));
		for (int t = 0; t < 2; t++)
			_mm512_storeu_ps(acc[i] + t * AMX_ROWS, _mm512_fmadd_ps(
				_mm512_cvtepi32_ps(_mm512_load_si512(c[t][i])),
				_mm512_mul_ps(_mm512_set1_ps(x), wd[t]),
				_mm512_loadu_ps(acc[i] + t * AMX_ROWS)));
	}
}

/*
 * Block j of activation rows i..i+rows-1 for tile A, with its stride: the
 * rows themselves, or, for the last rows of a GEMM short of 16, a copy of
 * them in pad (tileloadd would read past the last row).
 */
static inline const uint8_t *act_tile(const struct shxk_gemm_args *a,
				      size_t i, size_t rows, size_t j,
				      uint8_t pad[AMX_ROWS][SHXK_QK],
				      size_t *stride)
{
	const uint8_t *p = a->act + i * a->astride + j * SHXK_QK;

	*stride = a->astride;
	if (rows == AMX_ROWS)
		return p;
	for (size_t r = 0; r < rows; r++)
		memcpy(pad[r], p + r * a->astride, SHXK_QK);
	*stride = SHXK_QK;
	return pad[0];
}

/* acc row i to output row i0 + i, columns n..n+31 that are in [n0, n1). */
static void store_rows(const struct shxk_gemm_args *a, float (*acc)[AMX_NW],
		       size_t i0, size_t mr, size_t n)
{
	for (size_t i = 0; i < mr; i++) {
		if (a->yt == SHXK_F32 && n >= a->n0 && n + AMX_NW <= a->n1) {
			memcpy((float *)a->y + (i0 + i) * a->ldy + n, acc[i],
			       sizeof(acc[i]));
			continue;
		}
		for (size_t r = 0; r < AMX_NW; r++)
			if (n + r >= a->n0 && n + r < a->n1)
				shxk_store(a, i0 + i, n + r, acc[i][r]);
	}
}

/* X8 groups g..g+3 (32 weight rows) x activation rows i0..i0+mr-1. */
static void amx_pass(const struct shxk_gemm_args *a, int q4,
		     const __m512i perm[2], size_t g, size_t gend,
		     size_t i0, size_t mr)
{
	_Alignas(64) float acc[AMX_CHUNK][AMX_NW];
	_Alignas(64) int32_t bt[2][8][AMX_ROWS];
	_Alignas(64) int32_t c[4][AMX_ROWS][AMX_ROWS];
	_Alignas(64) uint8_t pad[AMX_ROWS][SHXK_QK] = { { 0 } };
	const uint8_t *xd0 = (const uint8_t *)shxk_act_d(a->act +
							 i0 * a->astride, a->k);

	memset(acc, 0, mr * sizeof(acc[0]));
	for (size_t j = 0; j < a->k / SHXK_QK; j++) {
		const __m512 wd[2] = {
			weight_tile(a, q4, g, gend, j, perm, bt[0]),
			weight_tile(a, q4, g + 2, gend, j, perm, bt[1]),
		};
		const uint8_t *xd = xd0 + j * sizeof(float);

		TILE_LOAD(TB0, bt[0], 64);
		TILE_LOAD(TB1, bt[1], 64);
		for (size_t u = 0; u < mr; u += AMX_MW) {
			size_t r0 = mr - u < AMX_ROWS ? mr - u : AMX_ROWS;
			size_t r1 = mr - u - r0 < AMX_ROWS ? mr - u - r0 : AMX_ROWS;
			const uint8_t *t;
			size_t st;

			t = act_tile(a, i0 + u, r0, j, pad, &st);
			TILE_LOAD(TA0, t, st);
			_tile_zero(TC00);
			_tile_zero(TC01);
			_tile_dpbssd(TC00, TA0, TB0);
			_tile_dpbssd(TC01, TA0, TB1);
			if (r1) {
				t = act_tile(a, i0 + u + r0, r1, j, pad, &st);
				TILE_LOAD(TA1, t, st);
				_tile_zero(TC10);
				_tile_zero(TC11);
				_tile_dpbssd(TC10, TA1, TB0);
				_tile_dpbssd(TC11, TA1, TB1);
			}
			_tile_stored(TC00, c[0], 64);
			_tile_stored(TC01, c[1], 64);
			scale_add(acc + u, c, wd, xd + u * a->astride,
				  a->astride, r0);
			if (!r1)
				continue;
			_tile_stored(TC10, c[2], 64);
			_tile_stored(TC11, c[3], 64);
			scale_add(acc + u + r0, c + 2, wd,
				  xd + (u + r0) * a->astride, a->astride, r1);
		}
	}
	store_rows(a, acc, i0, mr, g * SHXK_X8);
}

static void gemm_amx(const struct shxk_gemm_args *a, int q4)
{
	size_t g0 = a->n0 / SHXK_X8, gend = (a->n1 + SHXK_X8 - 1) / SHXK_X8;
	size_t chunk;
	__m512i perm[2];

	if (a->m < AMX_MIN_M) {
		shxk_gemm_x8_avx512(a, q4);
		return;
	}
	/* Dword e of rows 0..7 of the first group, then of the second. */
	for (int e = 0; e < 2; e++)
		perm[e] = _mm512_add_epi32(_mm512_set_epi32(30, 28, 26, 24, 22,
			20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0), _mm512_set1_epi32(e));
	/* A chunk's rows are read once per pass: keep them in L2. */
	chunk = AMX_CHUNK_L2 / a->astride / AMX_MW * AMX_MW;
	chunk = chunk < AMX_MW ? AMX_MW : chunk > AMX_CHUNK ? AMX_CHUNK : chunk;
	_tile_loadconfig(&g_cfg);
	for (size_t i0 = 0; i0 < a->m; i0 += chunk) {
		size_t mr = a->m - i0 < chunk ? a->m - i0 : chunk;

		for (size_t g = g0; g < gend; g += AMX_NW / SHXK_X8)
			amx_pass(a, q4, perm, g, gend, i0, mr);
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

/*
 * A transpose in rounds of vpermt2d, each merging two registers that hold
 * r rows of d dwords into one that holds 2r rows of d / 2: dwords
 * h * d / 2.. of both. Element i of the result is row i % 2r, dword
 * i / 2r of those; the inputs hold row q, dword g at g * r + q. Index
 * i + 16 picks element i of the second register.
 */
static __m512i perm_index(int r, int d, int h)
{
	int32_t idx[16];

	for (int i = 0; i < 16; i++) {
		int q = i % (2 * r), g = h * d / 2 + i / (2 * r);

		idx[i] = (q < r ? 0 : 16) + g * r + q % r;
	}
	return _mm512_loadu_si512(idx);
}

/* 16 rows of 16 dwords, one a register: four rounds. */
struct amx_perm16 {
	__m512i p[4][2];
};

static void perm16_init(struct amx_perm16 *p)
{
	for (int rd = 0; rd < 4; rd++)
		for (int h = 0; h < 2; h++)
			p->p[rd][h] = perm_index(1 << rd, 16 >> rd, h);
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

void shxk_gemm_x8_q8_0_amx(const struct shxk_gemm_args *a)
{
	gemm_amx(a, 0);
}

void shxk_gemm_x8_q4_0_amx(const struct shxk_gemm_args *a)
{
	gemm_amx(a, 1);
}
