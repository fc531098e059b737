// SPDX-License-Identifier: MIT
/* Buffer calls: the backend does the UAPI call, this fills the handle.
 * A NULL sh or buffer is -EINVAL before anything reaches the backend. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "rt_int.h"

int syshax_buf_alloc(struct syshax *sh, uint64_t size, int node,
		     unsigned int flags, struct syshax_buffer *buf)
{
	struct syshax_buf_alloc_args a = {
		.size = size,
		.node = node,
		.flags = flags,
	};
	int ret;

	if (!sh || !buf)
		return -EINVAL;
	ret = sh->be->buf_alloc(sh, &a);
	if (ret < 0)
		return ret;
	memset(buf, 0, sizeof(*buf));
	buf->handle = a.handle;
	buf->size = a.size;
	buf->id = a.id;
	buf->mmap_offset = a.mmap_offset;
	return 0;
}

int syshax_buf_map(struct syshax *sh, struct syshax_buffer *buf)
{
	if (!sh || !buf)
		return -EINVAL;
	if (buf->addr)
		return 0;
	return sh->be->buf_mmap(sh, buf, &buf->addr);
}

int syshax_buf_unmap(struct syshax *sh, struct syshax_buffer *buf)
{
	if (!sh || !buf)
		return -EINVAL;
	if (!buf->addr)
		return 0;
	if (munmap(buf->addr, buf->size))
		return -errno;
	buf->addr = NULL;
	return 0;
}

int syshax_buf_free(struct syshax *sh, struct syshax_buffer *buf)
{
	int ret;

	if (!sh || !buf)
		return -EINVAL;
	/* Handle first: a wrong handle must not cost the caller its mapping. */
	ret = sh->be->buf_free(sh, buf->handle);
	if (ret)
		return ret;
	return syshax_buf_unmap(sh, buf);
}

int syshax_buf_register(struct syshax *sh, void *addr, uint64_t len,
			unsigned int flags, struct syshax_buffer *buf)
{
	struct syshax_buf_register_args r = {
		.addr = (uintptr_t)addr,
		.size = len,
		.flags = flags,
	};
	int ret;

	if (!sh || !addr || !buf)
		return -EINVAL;
	ret = sh->be->buf_register(sh, &r);
	if (ret < 0)
		return ret;
	memset(buf, 0, sizeof(*buf));
	buf->handle = r.handle;
	buf->size = len;
	buf->id = r.id;
	buf->mmap_offset = r.mmap_offset;
	return 0;
}

int syshax_buf_export(struct syshax *sh, const struct syshax_buffer *buf,
		      unsigned int flags)
{
	struct syshax_buf_export_args e = { .flags = flags };
	int ret;

	if (!sh || !buf)
		return -EINVAL;
	e.handle = buf->handle;
	ret = sh->be->buf_export(sh, &e);
	return ret < 0 ? ret : e.fd;
}

int syshax_buf_import(struct syshax *sh, int fd, struct syshax_buffer *buf)
{
	struct syshax_buf_import_args i = { .fd = fd };
	int ret;

	if (!sh || !buf)
		return -EINVAL;
	ret = sh->be->buf_import(sh, &i);
	if (ret < 0)
		return ret;
	memset(buf, 0, sizeof(*buf));
	buf->handle = i.handle;
	buf->size = i.size;
	buf->id = i.id;
	buf->mmap_offset = i.mmap_offset;
	return 0;
}

int syshax_buf_info(struct syshax *sh, const struct syshax_buffer *buf,
		    struct syshax_buf_info_args *info)
{
	if (!sh || !buf || !info)
		return -EINVAL;
	memset(info, 0, sizeof(*info));
	info->handle = buf->handle;
	return sh->be->buf_info(sh, info);
}
