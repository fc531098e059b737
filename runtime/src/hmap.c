// SPDX-License-Identifier: MIT
/*
 * Open addressing with linear probing, at most half full; a deletion
 * shifts the rest of its probe chain back, so there are no tombstones.
 */
#include <errno.h>
#include <stdlib.h>

#include "hmap.h"

static uint32_t home(const struct shrt_hmap *m, uint64_t key)
{
	return (uint32_t)((key * 0x9e3779b97f4a7c15ULL) >> 32) & (m->cap - 1);
}

/* key's slot, or m->cap when it is not there. */
static uint32_t find(const struct shrt_hmap *m, uint64_t key)
{
	uint32_t i;

	if (!m->cap || !key)
		return m->cap;
	for (i = home(m, key); m->keys[i]; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key)
			return i;
	return m->cap;
}

static void insert(struct shrt_hmap *m, uint64_t key, void *val)
{
	uint32_t i = home(m, key);

	while (m->keys[i])
		i = (i + 1) & (m->cap - 1);
	m->keys[i] = key;
	m->vals[i] = val;
	m->nr++;
}

unsigned int shrt_hmap_fail_grows;

/* Consumes one injected failure, if any is left. */
static int fail_injected(void)
{
	unsigned int n = __atomic_load_n(&shrt_hmap_fail_grows,
					 __ATOMIC_RELAXED);

	while (n && !__atomic_compare_exchange_n(&shrt_hmap_fail_grows, &n,
						 n - 1, 0, __ATOMIC_RELAXED,
						 __ATOMIC_RELAXED))
		;
	return n != 0;
}

static int grow(struct shrt_hmap *m)
{
	struct shrt_hmap n = { .cap = m->cap ? m->cap * 2 : 16 };
	uint32_t i;

	if (fail_injected())
		return -ENOMEM;

	n.keys = calloc(n.cap, sizeof(*n.keys));
	n.vals = calloc(n.cap, sizeof(*n.vals));
	if (!n.keys || !n.vals) {
		shrt_hmap_free(&n);
		return -ENOMEM;
	}
	for (i = 0; i < m->cap; i++)
		if (m->keys[i])
			insert(&n, m->keys[i], m->vals[i]);
	shrt_hmap_free(m);
	*m = n;
	return 0;
}

void *shrt_hmap_get(const struct shrt_hmap *m, uint64_t key)
{
	uint32_t i = find(m, key);

	return i < m->cap ? m->vals[i] : NULL;
}

/* Keys that fit before the map must grow (it stays at most half full). */
static uint32_t headroom(const struct shrt_hmap *m)
{
	return m->cap / 2 - m->nr;
}

int shrt_hmap_put(struct shrt_hmap *m, uint64_t key, void *val)
{
	if (!headroom(m) && grow(m))
		return -ENOMEM;
	insert(m, key, val);
	return 0;
}

uint32_t shrt_hmap_reserve(struct shrt_hmap *m, uint32_t n)
{
	while (headroom(m) < n && !grow(m))
		;
	return headroom(m) < n ? headroom(m) : n;
}

void *shrt_hmap_del(struct shrt_hmap *m, uint64_t key)
{
	uint32_t i = find(m, key), j;
	void *val;

	if (i == m->cap)
		return NULL;
	val = m->vals[i];
	m->keys[i] = 0;
	m->nr--;
	/* An entry after the hole stays only if its home lies cyclically in
	 * (i, j]; else it moves into the hole, which moves to j. */
	for (j = (i + 1) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1)) {
		uint32_t h = home(m, m->keys[j]);

		if (i < j ? h > i && h <= j : h > i || h <= j)
			continue;
		m->keys[i] = m->keys[j];
		m->vals[i] = m->vals[j];
		m->keys[j] = 0;
		i = j;
	}
	return val;
}

void shrt_hmap_free(struct shrt_hmap *m)
{
	free(m->keys);
	free(m->vals);
	m->keys = NULL;
	m->vals = NULL;
	m->cap = 0;
	m->nr = 0;
}
