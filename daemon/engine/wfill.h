/* SPDX-License-Identifier: MIT */
/*
 * Filling a weight set's arenas: every matrix piece converted to its
 * type and repacked to its layout, in chunks of row groups claimed by
 * several threads. A load is mostly page faults (the arena's fresh pages
 * zeroed, the file's mapped) and repacking, which one thread did alone.
 */
#ifndef SHXD_WFILL_H
#define SHXD_WFILL_H

#include <stddef.h>
#include <stdint.h>

#include "shxk.h"

/* One piece to fill: w's n rows of w->k values at dst (an arena's, where
 * w->data points), row r read from src + r * srs as type st. */
struct shxd_fill_piece {
	const struct shxk_weights *w;
	uint8_t *dst;
	const uint8_t *src;
	size_t srs;
	enum shxk_type st;
};

struct shxd_wfill {
	struct shxd_fill_piece *p;
	size_t n, cap;
};

int shxd_wfill_add(struct shxd_wfill *f, const struct shxd_fill_piece *p);
/* Fills every piece added, on up to threads threads (the caller's among
 * them). 0, or -ENOMEM when no thread could get its buffers. */
int shxd_wfill_run(const struct shxd_wfill *f, unsigned int threads);
void shxd_wfill_free(struct shxd_wfill *f);

#endif
