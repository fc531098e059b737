// SPDX-License-Identifier: MIT
/*
 * A connection's buffer handles. Numbers are handed out cyclically from 1
 * to SHXD_HANDLE_MAX, skipping live ones, as the module's xa_alloc_cyclic()
 * does: a freed handle's number comes back only after the whole range has
 * been used, so a stale handle fails with -EBADF instead of naming the
 * next buffer.
 */
#include <errno.h>

#include "broker_int.h"

int bk_handle_add(struct bk_handles *h, struct shxd_membuf *mb,
		  uint32_t *handle)
{
	uint32_t key;
	int ret;

	if (h->map.nr >= SHXD_HANDLE_MAX)
		return -ENOSPC;
	do {
		key = h->next % SHXD_HANDLE_MAX + 1;
		h->next = key;
	} while (shrt_hmap_get(&h->map, key));
	ret = shrt_hmap_put(&h->map, key, mb);
	if (!ret)
		*handle = key;
	return ret;
}

struct shxd_membuf *bk_handle_get(const struct bk_handles *h, uint64_t handle)
{
	return handle > SHXD_HANDLE_MAX ? NULL : shrt_hmap_get(&h->map, handle);
}

struct shxd_membuf *bk_handle_del(struct bk_handles *h, uint64_t handle)
{
	return handle > SHXD_HANDLE_MAX ? NULL : shrt_hmap_del(&h->map, handle);
}
