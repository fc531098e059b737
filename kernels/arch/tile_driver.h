/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The GEMM tile walks every ISA variant shares. Macros rather than
 * functions so each call site's TILE (an always-inline tile with constant
 * row counts) stays inlined with its register-resident accumulators.
 */
#ifndef SHXK_ARCH_TILE_DRIVER_H
#define SHXK_ARCH_TILE_DRIVER_H

#include <stddef.h>

/* Activation rows 0..m-1 in tiles of MT, then one at a time: TILE(..., i, T). */
#define SHXK_M_WALK(m, MT, TILE, ...)					\
	do {								\
		size_t i_ = 0;						\
									\
		for (; i_ + (MT) <= (m); i_ += (MT))			\
			TILE(__VA_ARGS__, i_, MT);			\
		for (; i_ < (m); i_++)					\
			TILE(__VA_ARGS__, i_, 1);			\
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

/* The X8 layout's row groups g over a->n0..n1, each over SHXK_M_WALK. */
#define SHXK_X8_WALK(a, MT, TILE)					\
	do {								\
		for (size_t g_ = (a)->n0 / SHXK_X8;			\
		     g_ * SHXK_X8 < (a)->n1; g_++)			\
			SHXK_M_WALK((a)->m, MT, TILE, g_);		\
	} while (0)

#endif
