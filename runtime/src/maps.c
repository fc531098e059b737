// SPDX-License-Identifier: MIT
/*
 * An engine's buffer mappings kept across jobs. Where the broker sends
 * SYSHAX_NOTE_BUF_GONE notes through the engine's rings
 * (SYSHAX_FEAT_MAP_NOTES: syshaxd and the module; asked for with
 * SYSHAX_RING_NOTES at RING_SETUP, so an engine that does not know notes
 * never gets one), syshax_engine_map() maps a buffer once
 * and syshax_engine_unmap() keeps it; the note, which comes only once no
 * job names the buffer and its id can never be named again, unmaps it.
 * So a live buffer is mapped once and a freed one is never touched.
 * Without notes (the old system-call path) every call maps and unmaps.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "populate.h"
#include "rt_int.h"

struct shrt_map {
	uint64_t id;
	void *addr;
	uint64_t size;
};

static struct shrt_maps *maps_of(struct syshax *sh)
{
	struct shrt_ring *r = __atomic_load_n(&sh->ring, __ATOMIC_ACQUIRE);

	return r && r->notes ? &r->maps : NULL;
}

int shrt_maps_get(struct syshax *sh, uint64_t id, void **addr,
		  uint64_t *size)
{
	struct shrt_maps *ms = maps_of(sh);
	struct shrt_map *m;
	int ret;

	if (!ms)
		return sh->be->engine_map(sh, id, addr, size);
	pthread_mutex_lock(&ms->lock);
	m = shrt_hmap_get(&ms->by_id, id);
	if (m) {
		*addr = m->addr;
		*size = m->size;
		pthread_mutex_unlock(&ms->lock);
		return 0;
	}
	ret = sh->be->engine_map(sh, id, addr, size);
	if (ret)
		goto out;
	m = malloc(sizeof(*m));
	/* Without memory to keep it, the mapping is the caller's to unmap
	 * (it is not found by address there). */
	if (!m || shrt_hmap_reserve(&ms->by_addr, 1) < 1 ||
	    shrt_hmap_put(&ms->by_id, id, m)) {
		free(m);
		goto out;
	}
	m->id = id;
	m->addr = *addr;
	m->size = *size;
	shrt_hmap_put(&ms->by_addr, (uintptr_t)*addr, m);
	pthread_mutex_unlock(&ms->lock);
	/*
	 * A kept mapping's page tables, filled at once: each 4 KiB page an
	 * engine first touched cost a fault, and a decode step writes its
	 * new K and V rows to fresh pages of the KV buffer (two faults a
	 * step for a 4-layer qwen3-30b-a3b on the userspace backend, tens of
	 * us each on a VM). From several threads: a server's first job maps
	 * GiBs of K and V. Best effort: kernels before 5.14 lack it, and the
	 * job still runs without. No job runs on the buffer unmapped
	 * meanwhile: this one names it.
	 */
	(void)shrt_populate(*addr, *size);
	return 0;
out:
	pthread_mutex_unlock(&ms->lock);
	return ret;
}

int shrt_maps_put(struct syshax *sh, void *addr, uint64_t size)
{
	struct shrt_maps *ms = maps_of(sh);
	int kept;

	if (ms) {
		pthread_mutex_lock(&ms->lock);
		kept = shrt_hmap_get(&ms->by_addr, (uintptr_t)addr) != NULL;
		pthread_mutex_unlock(&ms->lock);
		if (kept)
			return 0;	/* until its BUF_GONE note */
	}
	return munmap(addr, size) ? -errno : 0;
}

/* A SYSHAX_NOTE_BUF_GONE note: the buffer's mapping goes. */
static void gone(struct shrt_maps *ms, uint64_t id)
{
	struct shrt_map *m;

	pthread_mutex_lock(&ms->lock);
	m = shrt_hmap_del(&ms->by_id, id);
	if (m)
		shrt_hmap_del(&ms->by_addr, (uintptr_t)m->addr);
	pthread_mutex_unlock(&ms->lock);
	if (m) {
		munmap(m->addr, m->size);
		free(m);
	}
}

unsigned int shrt_maps_notes(struct shrt_ring *r, struct syshax_engine_job *jobs,
			     unsigned int n)
{
	unsigned int i, k = 0;

	for (i = 0; i < n; i++) {
		if (jobs[i].token != SYSHAX_NOTE_TOKEN) {
			if (k != i)
				jobs[k] = jobs[i];
			k++;
		} else if (jobs[i].job.op == SYSHAX_NOTE_BUF_GONE) {
			gone(&r->maps, jobs[i].job.refs[0].buf);
		}
	}
	return k;
}

void shrt_maps_init(struct shrt_maps *ms)
{
	pthread_mutex_init(&ms->lock, NULL);
}

void shrt_maps_free(struct shrt_maps *ms)
{
	uint32_t i;

	for (i = 0; i < ms->by_id.cap; i++) {
		struct shrt_map *m = ms->by_id.vals[i];

		if (ms->by_id.keys[i]) {
			munmap(m->addr, m->size);
			free(m);
		}
	}
	shrt_hmap_free(&ms->by_id);
	shrt_hmap_free(&ms->by_addr);
	pthread_mutex_destroy(&ms->lock);
}
