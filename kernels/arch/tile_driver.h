/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The GEMM tile walk every ISA variant shares: weight rows a->n0..n1 in
 * groups of four, then one at a time; for each, the a->m activation rows
 * in tiles of MT, then one at a time. A macro rather than a function so
 * each call site's TILE (an always-inline tile with constant R and MT)
 * stays inlined with its register-resident accumulators.
 */
#ifndef SHXK_ARCH_TILE_DRIVER_H
#define SHXK_ARCH_TILE_DRIVER_H

#include <stddef.h>

/* TILE(n, i, R, T): weight rows n..n+R-1 times activation rows i..i+T-1. */
#define SHXK_TILE_WALK(a, MT, TILE)					\
	do {								\
		size_t n_ = (a)->n0;					\
									\
		for (; n_ + 4 <= (a)->n1; n_ += 4) {			\
			size_t i_ = 0;					\
									\
			for (; i_ + (MT) <= (a)->m; i_ += (MT))		\
				TILE(n_, i_, 4, MT);			\
			for (; i_ < (a)->m; i_++)			\
				TILE(n_, i_, 4, 1);			\
		}							\
		for (; n_ < (a)->n1; n_++) {				\
			size_t i_ = 0;					\
									\
			for (; i_ + (MT) <= (a)->m; i_ += (MT))		\
				TILE(n_, i_, 1, MT);			\
			for (; i_ < (a)->m; i_++)			\
				TILE(n_, i_, 1, 1);			\
		}							\
	} while (0)

#endif
