/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The GEMM tile walks and the attention tile drivers every ISA variant
 * shares. Macros rather than functions so each call site's TILE (an
 * always-inline tile with constant row or head counts) stays inlined with
 * its register-resident accumulators.
 */
#ifndef SHXK_ARCH_TILE_DRIVER_H
#define SHXK_ARCH_TILE_DRIVER_H

#include <stddef.h>

/*
 * The leftover activation rows of SHXK_M_WALK, rest < MT of them from i,
 * in one tile of their own height: a second pass over the weights (and a
 * second decode of them) per leftover row is what a row at a time costs.
 * Each height is its own inlined instance; those MT rules out are dead.
 */
#define SHXK_M_REST(rest, MT, TILE, i, ...)				\
	do {								\
		switch (rest) {						\
		case 0:							\
			break;						\
		case 1:							\
			TILE(__VA_ARGS__, i, 1);			\
			break;						\
		case 2:							\
			if ((MT) > 2)					\
				TILE(__VA_ARGS__, i, 2);		\
			break;						\
		case 3:							\
			if ((MT) > 3)					\
				TILE(__VA_ARGS__, i, 3);		\
			break;						\
		case 4:							\
			if ((MT) > 4)					\
				TILE(__VA_ARGS__, i, 4);		\
			break;						\
		default:						\
			if ((MT) > 5)					\
				TILE(__VA_ARGS__, i, 5);		\
			break;						\
		}							\
	} while (0)

/*
 * Activation rows 0..m-1 in tiles of MT (at most 6), then the rest in one
 * tile: TILE(..., i, T).
 */
#define SHXK_M_WALK(m, MT, TILE, ...)					\
	do {								\
		size_t i_ = 0;						\
									\
		_Static_assert((MT) >= 1 && (MT) <= 6, "tile height");	\
		for (; i_ + (MT) <= (m); i_ += (MT))			\
			TILE(__VA_ARGS__, i_, MT);			\
		SHXK_M_REST((m) - i_, MT, TILE, i_, __VA_ARGS__);	\
	} while (0)

/*
 * Weight rows a->n0..n1 in groups of four, then one at a time, each over
 * SHXK_M_WALK: TILE(n, R, i, T) covers rows n..n+R-1 x i..i+T-1.
 */
#define SHXK_TILE_WALK(a, MT, TILE)					\
	do {								\
		size_t n_ = (a)->n0;					\
									\
		for (; n_ + 4 <= (a)->n1; n_ += 4)			\
			SHXK_M_WALK((a)->m, MT, TILE, n_, 4);		\
		for (; n_ < (a)->n1; n_++)				\
			SHXK_M_WALK((a)->m, MT, TILE, n_, 1);		\
	} while (0)

/* Weight rows a->n0..n1 one at a time, each over SHXK_M_WALK: one stream. */
#define SHXK_ROW_WALK(a, MT, TILE)					\
	do {								\
		for (size_t n_ = (a)->n0; n_ < (a)->n1; n_++)		\
			SHXK_M_WALK((a)->m, MT, TILE, n_, 1);		\
	} while (0)

/* The X8 layout's row groups g over a->n0..n1, each over SHXK_M_WALK. */
#define SHXK_X8_WALK(a, MT, TILE)					\
	do {								\
		for (size_t g_ = (a)->n0 / SHXK_X8;			\
		     g_ * SHXK_X8 < (a)->n1; g_++)			\
			SHXK_M_WALK((a)->m, MT, TILE, g_);		\
	} while (0)

/*
 * The X8 layout's groups over a->n0..n1 as NS streams: TILE(g, gs, NS)
 * reads groups g, g + gs, ..., g + (NS - 1) gs together (gs: the call's
 * groups over NS, so the streams start at evenly spaced places), then
 * TILE(g, 0, 1) each group left over.
 */
#define SHXK_X8_STREAMS_WALK(a, NS, TILE)				\
	do {								\
		size_t g0_ = (a)->n0 / SHXK_X8;				\
		size_t g1_ = ((a)->n1 + SHXK_X8 - 1) / SHXK_X8;		\
		size_t gs_ = (g1_ - g0_) / (NS), g_;			\
									\
		for (g_ = g0_; g_ < g0_ + gs_; g_++)			\
			TILE(g_, gs_, NS);				\
		for (g_ = g0_ + (NS) * gs_; g_ < g1_; g_++)		\
			TILE(g_, 0, 1);					\
	} while (0)

/*
 * Decode attention: CALL(T, GH, ...) with t's KV type and gh (1 to 4, the
 * most heads a pass holds in AVX2's and NEON's registers) as constants.
 */
#define SHXK_ATTN_GH4(T, gh, CALL, ...)					\
	do {								\
		switch (gh) {						\
		case 1: CALL(T, 1, __VA_ARGS__); break;			\
		case 2: CALL(T, 2, __VA_ARGS__); break;			\
		case 3: CALL(T, 3, __VA_ARGS__); break;			\
		default: CALL(T, 4, __VA_ARGS__); break;		\
		}							\
	} while (0)

#define SHXK_ATTN_TYPED(t, GH, ...)					\
	do {								\
		if ((t) == SHXK_F16)					\
			GH(SHXK_F16, __VA_ARGS__);			\
		else if ((t) == SHXK_BF16)				\
			GH(SHXK_BF16, __VA_ARGS__);			\
		else							\
			GH(SHXK_F32, __VA_ARGS__);			\
	} while (0)

/*
 * An attn_tile hook's ng groups of g heads one kv head at a time, group i
 * (rows at k[r] + i row sizes) with its part of the call's prefetches, in
 * passes of at most MAXH heads of even size (5 heads: 3 + 2, not 4 + 1):
 * PASS(gh, h, off) runs heads [h, h + gh) of the call.
 */
#define SHXK_ATTN_GROUPS(nx, t, g, ng, n, MAXH, PASS)			\
	do {								\
		size_t share_ = (nx)->left, rowb_ = shxk_row_size(t, n);	\
									\
		(nx)->left = 0;						\
		for (size_t i_ = 0; i_ < (ng); i_++) {			\
			size_t h_ = 0, left_ = ((g) + (MAXH) - 1) / (MAXH);	\
									\
			shxk_attn_next_part(nx, share_, i_, ng);	\
			for (; h_ < (g); left_--) {			\
				size_t gh_ = ((g) - h_ + left_ - 1) / left_;	\
									\
				PASS(gh_, i_ * (g) + h_, i_ * rowb_);	\
				h_ += gh_;				\
			}						\
		}							\
	} while (0)

#endif
