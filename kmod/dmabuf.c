// SPDX-License-Identifier: GPL-2.0
/*
 * dma-buf export and import of syshax buffers. An exported dma-buf holds a
 * buffer reference; importers (any DRM driver through PRIME, RDMA) get an
 * sg table with one entry per physically contiguous chunk. BUF_IMPORT turns
 * a syshax dma-buf fd back into the buffer: that is how processes share
 * buffers, by passing an fd.
 */
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>

#include "syshax_priv.h"

struct syshax_export {
	struct syshax_buf *buf;
	struct mutex lock;		/* protects maps */
	struct list_head maps;		/* live device mappings, for cpu sync */
};

struct syshax_map {
	struct list_head node;
	struct device *dev;
	struct sg_table sgt;
};

static const struct dma_buf_ops syshax_dmabuf_ops;

static struct sg_table *syshax_map_dma_buf(struct dma_buf_attachment *attach,
					   enum dma_data_direction dir)
{
	struct syshax_export *exp = attach->dmabuf->priv;
	struct syshax_buf *buf = exp->buf;
	struct scatterlist *sg;
	struct syshax_map *m;
	unsigned int i;
	int ret;

	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return ERR_PTR(-ENOMEM);
	ret = sg_alloc_table(&m->sgt, buf->nr_chunks, GFP_KERNEL);
	if (ret)
		goto err_free;
	for_each_sgtable_sg(&m->sgt, sg, i)
		sg_set_page(sg, buf->chunks[i].page,
			    buf->chunks[i].nr_pages << PAGE_SHIFT, 0);
	ret = dma_map_sgtable(attach->dev, &m->sgt, dir, 0);
	if (ret)
		goto err_table;
	m->dev = attach->dev;
	mutex_lock(&exp->lock);
	list_add(&m->node, &exp->maps);
	mutex_unlock(&exp->lock);
	return &m->sgt;

err_table:
	sg_free_table(&m->sgt);
err_free:
	kfree(m);
	return ERR_PTR(ret);
}

static void syshax_unmap_dma_buf(struct dma_buf_attachment *attach,
				 struct sg_table *sgt,
				 enum dma_data_direction dir)
{
	struct syshax_export *exp = attach->dmabuf->priv;
	struct syshax_map *m = container_of(sgt, struct syshax_map, sgt);

	mutex_lock(&exp->lock);
	list_del(&m->node);
	mutex_unlock(&exp->lock);
	dma_unmap_sgtable(attach->dev, sgt, dir, 0);
	sg_free_table(sgt);
	kfree(m);
}

/* Syncs every device mapping of the buffer for the CPU, or back. */
static void syshax_sync_maps(struct dma_buf *dmabuf,
			     enum dma_data_direction dir, bool for_cpu)
{
	struct syshax_export *exp = dmabuf->priv;
	struct syshax_map *m;

	mutex_lock(&exp->lock);
	list_for_each_entry(m, &exp->maps, node) {
		if (for_cpu)
			dma_sync_sgtable_for_cpu(m->dev, &m->sgt, dir);
		else
			dma_sync_sgtable_for_device(m->dev, &m->sgt, dir);
	}
	mutex_unlock(&exp->lock);
}

/* CPU access brackets: make device writes visible, then CPU writes. */
static int syshax_begin_cpu_access(struct dma_buf *dmabuf,
				   enum dma_data_direction dir)
{
	syshax_sync_maps(dmabuf, dir, true);
	return 0;
}

static int syshax_end_cpu_access(struct dma_buf *dmabuf,
				 enum dma_data_direction dir)
{
	syshax_sync_maps(dmabuf, dir, false);
	return 0;
}

/* dma_buf_mmap() has checked vm_pgoff and the length against the size. */
static int syshax_dmabuf_mmap(struct dma_buf *dmabuf,
			      struct vm_area_struct *vma)
{
	struct syshax_export *exp = dmabuf->priv;

	return syshax_buf_mmap(exp->buf, vma, vma->vm_pgoff);
}

static void syshax_dmabuf_release(struct dma_buf *dmabuf)
{
	struct syshax_export *exp = dmabuf->priv;

	syshax_buf_put_held(exp->buf);
	mutex_destroy(&exp->lock);
	kfree(exp);
}

static const struct dma_buf_ops syshax_dmabuf_ops = {
	.map_dma_buf		= syshax_map_dma_buf,
	.unmap_dma_buf		= syshax_unmap_dma_buf,
	.begin_cpu_access	= syshax_begin_cpu_access,
	.end_cpu_access		= syshax_end_cpu_access,
	.mmap			= syshax_dmabuf_mmap,
	.release		= syshax_dmabuf_release,
};

/* A new dma-buf for buf each time; it holds its own buffer reference. */
struct dma_buf *syshax_dmabuf_export(struct syshax_buf *buf)
{
	DEFINE_DMA_BUF_EXPORT_INFO(info);
	struct syshax_export *exp;
	struct dma_buf *dmabuf;

	exp = kzalloc(sizeof(*exp), GFP_KERNEL);
	if (!exp)
		return ERR_PTR(-ENOMEM);
	mutex_init(&exp->lock);
	INIT_LIST_HEAD(&exp->maps);
	exp->buf = buf;
	info.ops = &syshax_dmabuf_ops;
	info.size = buf->size;
	info.flags = O_RDWR;
	info.priv = exp;
	syshax_buf_get(buf);
	syshax_buf_hold(buf);
	dmabuf = dma_buf_export(&info);
	if (IS_ERR(dmabuf)) {
		syshax_buf_put_held(buf);
		mutex_destroy(&exp->lock);
		kfree(exp);
	}
	return dmabuf;
}

/* -EBADF: not an open fd; -EINVAL: not a dma-buf, or not syshax's. */
struct syshax_buf *syshax_dmabuf_import(int fd)
{
	struct syshax_export *exp;
	struct syshax_buf *buf;
	struct dma_buf *dmabuf;

	dmabuf = dma_buf_get(fd);
	if (IS_ERR(dmabuf))
		return ERR_CAST(dmabuf);
	if (dmabuf->ops != &syshax_dmabuf_ops) {
		dma_buf_put(dmabuf);
		return ERR_PTR(-EINVAL);
	}
	exp = dmabuf->priv;
	buf = exp->buf;
	syshax_buf_get(buf);
	dma_buf_put(dmabuf);
	return buf;
}
