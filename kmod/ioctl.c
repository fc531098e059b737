// SPDX-License-Identifier: GPL-2.0
/*
 * ioctl dispatch: one syshax_ioctl_<cmd>() per command. Each copies its
 * arguments in, rejects unknown flags and non-zero padding with -EINVAL,
 * and copies results out; the work is done in buf.c, dmabuf.c and stats.c.
 * Job commands go to the broker. The calls that pin memory (BUF_ALLOC,
 * BUF_REGISTER) need a file opened for writing, else -EBADF: a read-only
 * fd could pin memory it cannot map writable.
 */
#include <linux/dma-buf.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/uaccess.h>

#include "syshax_priv.h"

static int syshax_ioctl_version(void __user *uarg)
{
	struct syshax_version_args v = {
		.uapi_version	= SYSHAX_UAPI_VERSION,
		.features	= SYSHAX_FEAT_BUF | SYSHAX_FEAT_DMABUF |
				  SYSHAX_FEAT_REGISTER,
		.max_buf_size	= SYSHAX_MAX_BUF_SIZE,
		.max_pinned	= syshax_max_pinned(),
		.chunk_size	= SYSHAX_CHUNK_SIZE,
		.nr_nodes	= nr_node_ids,
		.max_refs	= SYSHAX_JOB_MAX_REFS,
	};

	syshax_broker_version(&v);
	return copy_to_user(uarg, &v, sizeof(v)) ? -EFAULT : 0;
}

/*
 * Gives ctx a handle for a new buffer, which then holds its only reference,
 * and copies the arguments (handle and mmap_offset filled in) out to uarg;
 * a handle the caller cannot learn is freed again.
 */
static int syshax_install_new(struct syshax_ctx *ctx, struct syshax_buf *buf,
			      u32 *handle, u64 *mmap_offset,
			      void __user *uarg, const void *args, size_t len)
{
	int ret = syshax_ctx_install_buf(ctx, buf, false, handle, mmap_offset);

	syshax_buf_put(buf);
	if (ret)
		return ret;
	if (copy_to_user(uarg, args, len)) {
		syshax_ctx_free_handle(ctx, *handle);
		return -EFAULT;
	}
	return 0;
}

/* For the *_args structs that carry handle and mmap_offset. */
#define syshax_install_out(ctx, buf, uarg, a)				\
	syshax_install_new(ctx, buf, &(a).handle, &(a).mmap_offset,	\
			   uarg, &(a), sizeof(a))

static int syshax_ioctl_buf_alloc(struct syshax_ctx *ctx, void __user *uarg)
{
	struct syshax_buf_alloc_args a;
	struct syshax_buf *buf;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if ((a.flags & ~SYSHAX_BUF_ALLOC_FLAGS) || a.pad)
		return -EINVAL;
	buf = syshax_buf_alloc(a.size, a.node, a.flags);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	a.size = buf->size;
	a.id = buf->id;
	return syshax_install_out(ctx, buf, uarg, a);
}

static int syshax_ioctl_buf_free(struct syshax_ctx *ctx, void __user *uarg)
{
	struct syshax_buf_free_args a;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.pad)
		return -EINVAL;
	return syshax_ctx_free_handle(ctx, a.handle);
}

static int syshax_ioctl_buf_info(struct syshax_ctx *ctx, void __user *uarg)
{
	struct syshax_buf_info_args a;
	struct syshax_buf *buf;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	buf = syshax_buf_get_handle(ctx, a.handle, NULL);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	a.kind = buf->kind;
	a.size = buf->size;
	a.mmap_offset = syshax_handle_mmap_offset(a.handle);
	a.id = buf->id;
	a.chunk_size = syshax_buf_max_chunk(buf);
	a.nr_chunks = buf->nr_chunks;
	a.node = buf->node;
	a.flags = buf->flags;
	syshax_buf_node_bytes(buf, a.node_bytes);
	syshax_buf_put(buf);
	return copy_to_user(uarg, &a, sizeof(a)) ? -EFAULT : 0;
}

static int syshax_ioctl_buf_register(struct syshax_ctx *ctx, void __user *uarg)
{
	struct syshax_buf_register_args a;
	struct syshax_buf *buf;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.flags)
		return -EINVAL;
	buf = syshax_buf_register(a.addr, a.size);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	a.id = buf->id;
	return syshax_install_out(ctx, buf, uarg, a);
}

static int syshax_ioctl_buf_export(struct syshax_ctx *ctx, void __user *uarg)
{
	struct syshax_buf_export_args a;
	struct syshax_buf *buf;
	struct dma_buf *dmabuf;
	int fd;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if ((a.flags & ~SYSHAX_EXPORT_FLAGS) || a.pad)
		return -EINVAL;
	buf = syshax_buf_get_handle(ctx, a.handle, NULL);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	dmabuf = syshax_dmabuf_export(buf);
	syshax_buf_put(buf);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	fd = get_unused_fd_flags(a.flags & SYSHAX_EXPORT_CLOEXEC ? O_CLOEXEC : 0);
	if (fd < 0) {
		dma_buf_put(dmabuf);
		return fd;
	}
	/* The fd becomes visible only once the caller can learn it. */
	a.fd = fd;
	if (copy_to_user(uarg, &a, sizeof(a))) {
		put_unused_fd(fd);
		dma_buf_put(dmabuf);
		return -EFAULT;
	}
	fd_install(fd, dmabuf->file);
	return 0;
}

static int syshax_ioctl_buf_import(struct syshax_ctx *ctx, void __user *uarg)
{
	struct syshax_buf_import_args a;
	struct syshax_buf *buf;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.flags || a.pad)
		return -EINVAL;
	buf = syshax_dmabuf_import(a.fd);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	a.size = buf->size;
	a.id = buf->id;
	return syshax_install_out(ctx, buf, uarg, a);
}

static int syshax_ioctl_stats(void __user *uarg)
{
	struct syshax_stats_args st = { 0 };

	syshax_stats_fill(&st);
	syshax_broker_stats(&st);
	return copy_to_user(uarg, &st, sizeof(st)) ? -EFAULT : 0;
}

long syshax_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct syshax_ctx *ctx = file->private_data;
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case SYSHAX_IOC_VERSION:
		return syshax_ioctl_version(uarg);
	case SYSHAX_IOC_BUF_ALLOC:
		if (!(file->f_mode & FMODE_WRITE))
			return -EBADF;
		return syshax_ioctl_buf_alloc(ctx, uarg);
	case SYSHAX_IOC_BUF_FREE:
		return syshax_ioctl_buf_free(ctx, uarg);
	case SYSHAX_IOC_BUF_INFO:
		return syshax_ioctl_buf_info(ctx, uarg);
	case SYSHAX_IOC_BUF_REGISTER:
		if (!(file->f_mode & FMODE_WRITE))
			return -EBADF;
		return syshax_ioctl_buf_register(ctx, uarg);
	case SYSHAX_IOC_BUF_EXPORT:
		return syshax_ioctl_buf_export(ctx, uarg);
	case SYSHAX_IOC_BUF_IMPORT:
		return syshax_ioctl_buf_import(ctx, uarg);
	case SYSHAX_IOC_STATS:
		return syshax_ioctl_stats(uarg);
	case SYSHAX_IOC_CTX_STATS:
		return syshax_broker_ctx_stats(ctx, uarg);
	case SYSHAX_IOC_SUBMIT:
	case SYSHAX_IOC_WAIT:
	case SYSHAX_IOC_ENGINE_ATTACH:
	case SYSHAX_IOC_ENGINE_FETCH:
	case SYSHAX_IOC_ENGINE_MAP:
	case SYSHAX_IOC_ENGINE_COMPLETE:
	case SYSHAX_IOC_RING_SETUP:
		return syshax_broker_ioctl(ctx, cmd, uarg);
	default:
		return -ENOTTY;
	}
}
