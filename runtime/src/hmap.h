/* SPDX-License-Identifier: MIT */
/*
 * A map from non-zero 64-bit numbers to pointers: buffer handles, in the
 * library (the memfd of each) and in syshaxd's broker (the buffer of
 * each), and the tokens of the jobs an engine holds on the rings. Handles
 * are sparse (the brokers hand them out cyclically up to 4194303), tokens
 * sparser, so nobody can index an array by them.
 */
#ifndef SHRT_HMAP_H
#define SHRT_HMAP_H

#include <stdint.h>

struct shrt_hmap {
	uint64_t *keys;		/* 0: a free slot */
	void **vals;
	uint32_t cap;		/* a power of two, or 0 */
	uint32_t nr;
};

/* The value of key, or NULL. */
void *shrt_hmap_get(const struct shrt_hmap *m, uint64_t key);
/* Adds key (non-zero, not in m) -> val: 0 or -ENOMEM. */
int shrt_hmap_put(struct shrt_hmap *m, uint64_t key, void *val);
/* Makes room for n more keys, so that as many puts cannot fail; returns
 * how many fit without growing (n, or fewer when growing failed). */
uint32_t shrt_hmap_reserve(struct shrt_hmap *m, uint32_t n);
/* Removes key; returns its value, NULL when it was not there. */
void *shrt_hmap_del(struct shrt_hmap *m, uint64_t key);
void shrt_hmap_free(struct shrt_hmap *m);

/* Fault injection, for tests linking the static library: the next n times
 * any map would grow, it fails as if calloc() had (-ENOMEM). */
extern unsigned int shrt_hmap_fail_grows;

/* Every entry: for (i = 0; i < m.cap; i++) if (m.keys[i]) ...m.vals[i]. */

#endif /* SHRT_HMAP_H */
