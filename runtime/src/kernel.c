// SPDX-License-Identifier: MIT
/* The kernel backend: each call is one ioctl on /dev/syshax. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rt_int.h"

static int kcall(struct syshax *sh, unsigned long cmd, void *args)
{
	int ret;

	ret = ioctl(sh->fd, cmd, args);
	return ret < 0 ? -errno : ret;
}

int __shrt_kernel_open(struct syshax *sh, const char *path)
{
	sh->fd = open(path, O_RDWR | O_CLOEXEC);
	if (sh->fd < 0)
		return -errno;
	sh->evfd = sh->fd;
	return 0;
}

/*
 * What the library knows of each handle, for the checks a job passes
 * before it enters the ring (ring.c): its size and the access the module's
 * own lookup grants, read-write for every handle (buf.c).
 */
struct k_ref {
	uint64_t size;
	uint32_t access;
};

static void k_ref_add(struct syshax *sh, uint32_t handle, uint64_t size)
{
	struct k_ref *r = malloc(sizeof(*r));

	if (!r)
		return;	/* ref_info asks the module then */
	r->size = size;
	r->access = SYSHAX_ACCESS_RW;
	pthread_mutex_lock(&sh->fd_lock);
	free(shrt_hmap_del(&sh->k_refs, handle));
	if (shrt_hmap_put(&sh->k_refs, handle, r))
		free(r);
	pthread_mutex_unlock(&sh->fd_lock);
}

static void k_ref_del(struct syshax *sh, uint32_t handle)
{
	pthread_mutex_lock(&sh->fd_lock);
	free(shrt_hmap_del(&sh->k_refs, handle));
	pthread_mutex_unlock(&sh->fd_lock);
}

static int k_ref_info(struct syshax *sh, __u64 handle, __u64 *size,
		      __u32 *access)
{
	struct syshax_buf_info_args i = { .handle = (uint32_t)handle };
	struct k_ref *r;
	int ret;

	if (!handle || handle > UINT32_MAX)
		return -EBADF;
	pthread_mutex_lock(&sh->fd_lock);
	r = shrt_hmap_get(&sh->k_refs, handle);
	if (r) {
		*size = r->size;
		*access = r->access;
	}
	pthread_mutex_unlock(&sh->fd_lock);
	if (r)
		return 0;
	/* Not made through this handle (ENGINE_MAP), or no memory to note
	 * it: the module knows. */
	ret = kcall(sh, SYSHAX_IOC_BUF_INFO, &i);
	if (ret < 0)
		return ret == -EBADF ? ret : -EBADF;
	*size = i.size;
	*access = SYSHAX_ACCESS_RW;
	return 0;
}

static int k_version(struct syshax *sh, struct syshax_version_args *v)
{
	return kcall(sh, SYSHAX_IOC_VERSION, v);
}

static int k_stats(struct syshax *sh, struct syshax_stats_args *st)
{
	return kcall(sh, SYSHAX_IOC_STATS, st);
}

static int k_ctx_stats(struct syshax *sh, struct syshax_ctx_stats_args *a)
{
	return kcall(sh, SYSHAX_IOC_CTX_STATS, a);
}

static int k_buf_alloc(struct syshax *sh, struct syshax_buf_alloc_args *a)
{
	int ret = kcall(sh, SYSHAX_IOC_BUF_ALLOC, a);

	if (!ret)
		k_ref_add(sh, a->handle, a->size);
	return ret;
}

static int k_buf_free(struct syshax *sh, uint32_t handle)
{
	struct syshax_buf_free_args f = { .handle = handle };

	k_ref_del(sh, handle);
	return kcall(sh, SYSHAX_IOC_BUF_FREE, &f);
}

static int k_buf_info(struct syshax *sh, struct syshax_buf_info_args *i)
{
	return kcall(sh, SYSHAX_IOC_BUF_INFO, i);
}

static int k_buf_register(struct syshax *sh,
			  struct syshax_buf_register_args *r)
{
	int ret = kcall(sh, SYSHAX_IOC_BUF_REGISTER, r);

	/* The module takes the page-aligned size as given. */
	if (!ret)
		k_ref_add(sh, r->handle, r->size);
	return ret;
}

static int k_buf_export(struct syshax *sh, struct syshax_buf_export_args *e)
{
	return kcall(sh, SYSHAX_IOC_BUF_EXPORT, e);
}

static int k_buf_import(struct syshax *sh, struct syshax_buf_import_args *i)
{
	int ret = kcall(sh, SYSHAX_IOC_BUF_IMPORT, i);

	if (!ret)
		k_ref_add(sh, i->handle, i->size);
	return ret;
}

/* The module maps a part of a buffer too: only the whole one, at the size
 * and offset BUF_INFO gives, is syshax_buf_map()'s (else -EINVAL). */
static int k_buf_mmap(struct syshax *sh, const struct syshax_buffer *buf,
		      void **addr)
{
	struct syshax_buf_info_args i = { .handle = buf->handle };
	void *p;
	int ret;

	ret = kcall(sh, SYSHAX_IOC_BUF_INFO, &i);
	if (ret < 0)
		return ret;
	if (i.size != buf->size || i.mmap_offset != buf->mmap_offset)
		return -EINVAL;
	p = mmap(NULL, buf->size, PROT_READ | PROT_WRITE, MAP_SHARED, sh->fd,
		 (off_t)buf->mmap_offset);
	if (p == MAP_FAILED)
		return -errno;
	*addr = p;
	return 0;
}

static int k_submit(struct syshax *sh, const struct syshax_job *jobs,
		    unsigned int nr)
{
	struct syshax_submit_args s = {
		.jobs = (uintptr_t)jobs,
		.nr = nr,
	};

	return kcall(sh, SYSHAX_IOC_SUBMIT, &s);
}

static int k_wait(struct syshax *sh, struct syshax_wait_args *w)
{
	return kcall(sh, SYSHAX_IOC_WAIT, w);
}

static int k_engine_attach(struct syshax *sh,
			   struct syshax_engine_attach_args *a)
{
	return kcall(sh, SYSHAX_IOC_ENGINE_ATTACH, a);
}

static int k_engine_fetch(struct syshax *sh,
			  struct syshax_engine_fetch_args *f)
{
	return kcall(sh, SYSHAX_IOC_ENGINE_FETCH, f);
}

static int k_engine_map(struct syshax *sh, uint64_t id, void **addr,
			uint64_t *size)
{
	struct syshax_engine_map_args m = { .id = id };
	void *p;
	int ret;

	ret = kcall(sh, SYSHAX_IOC_ENGINE_MAP, &m);
	if (ret < 0)
		return ret;
	p = mmap(NULL, m.size, PROT_READ | PROT_WRITE, MAP_SHARED, sh->fd,
		 (off_t)m.mmap_offset);
	if (p == MAP_FAILED)
		return -errno;
	*addr = p;
	*size = m.size;
	return 0;
}

static int k_engine_complete(struct syshax *sh,
			     const struct syshax_engine_cpl *cpls,
			     unsigned int nr)
{
	struct syshax_engine_complete_args c = {
		.cpls = (uintptr_t)cpls,
		.nr = nr,
	};

	return kcall(sh, SYSHAX_IOC_ENGINE_COMPLETE, &c);
}

/* RING_SETUP, then the area at the offset the module gives (0). */
static int k_ring_setup(struct syshax *sh, struct syshax_ring_setup_args *a,
			void **area)
{
	void *p;
	int ret;

	ret = kcall(sh, SYSHAX_IOC_RING_SETUP, a);
	if (ret < 0)
		return ret;
	p = mmap(NULL, a->size, PROT_READ | PROT_WRITE, MAP_SHARED, sh->fd,
		 (off_t)a->mmap_offset);
	if (p == MAP_FAILED)
		return -errno;
	*area = p;
	return 0;
}

/* The module never polls the rings: SUBMIT with SYSHAX_SUBMIT_RING takes
 * them (0, or -EPROTO for dead rings). */
static int k_ring_kick(struct syshax *sh)
{
	struct syshax_submit_args s = { .flags = SYSHAX_SUBMIT_RING };
	int ret = kcall(sh, SYSHAX_IOC_SUBMIT, &s);

	return ret < 0 ? ret : 0;
}

static void k_close(struct syshax *sh)
{
	uint32_t i;

	for (i = 0; i < sh->k_refs.cap; i++)
		if (sh->k_refs.keys[i])
			free(sh->k_refs.vals[i]);
	shrt_hmap_free(&sh->k_refs);
	if (sh->fd >= 0)
		close(sh->fd);
}

const struct shrt_backend __shrt_kernel_backend = {
	.version = k_version,
	.stats = k_stats,
	.ctx_stats = k_ctx_stats,
	.buf_alloc = k_buf_alloc,
	.buf_free = k_buf_free,
	.buf_info = k_buf_info,
	.buf_register = k_buf_register,
	.buf_export = k_buf_export,
	.buf_import = k_buf_import,
	.buf_mmap = k_buf_mmap,
	.submit = k_submit,
	.wait = k_wait,
	.engine_attach = k_engine_attach,
	.engine_fetch = k_engine_fetch,
	.engine_map = k_engine_map,
	.engine_complete = k_engine_complete,
	/* The fd's readiness is the out ring's own: nothing to drain. */
	.ring_setup = k_ring_setup,
	.ring_kick = k_ring_kick,
	.ring_drain = NULL,
	.ref_info = k_ref_info,
	.close = k_close,
};
