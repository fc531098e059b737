// SPDX-License-Identifier: GPL-2.0
/*
 * sysHAX module: the misc device /dev/syshax, its file operations and the
 * module parameters. Each open file is a context (struct syshax_ctx) that
 * owns buffer handles and, through the broker, jobs.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/compat.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "compat.h"
#include "syshax_priv.h"

#define SYSHAX_VERSION	"0.1.0"

unsigned int syshax_max_pinned_mb;
module_param_named(max_pinned_mb, syshax_max_pinned_mb, uint, 0644);
MODULE_PARM_DESC(max_pinned_mb,
		 "Cap on memory pinned by all buffers, MiB (default 0: half of RAM)");

unsigned int syshax_max_pinned_user_mb;
module_param_named(max_pinned_user_mb, syshax_max_pinned_user_mb, uint, 0644);
MODULE_PARM_DESC(max_pinned_user_mb,
		 "Cap on memory pinned by the buffers of one user (uid), CAP_IPC_LOCK or not, MiB (default 0: none besides max_pinned_mb)");

static atomic_t syshax_ctx_ids = ATOMIC_INIT(0);

/*
 * 32-bit (compat) callers are refused: an mmap offset is a handle shifted
 * by 40 bits, which a 32-bit mmap2() page offset cannot carry (handle 17's
 * would wrap to handle 1's). Checked in open, and in ioctl and mmap for an
 * fd a 64-bit process passed on.
 */
static bool syshax_compat_refused(void)
{
	if (!in_compat_syscall())
		return false;
	pr_notice_ratelimited("%s[%d]: 32-bit callers are not supported (-EOPNOTSUPP)\n",
			      current->comm, task_pid_nr(current));
	return true;
}

static int syshax_open(struct inode *inode, struct file *file)
{
	struct syshax_ctx *ctx;
	int ret;

	if (syshax_compat_refused())
		return -EOPNOTSUPP;
	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return -ENOMEM;
	xa_init_flags(&ctx->handles, XA_FLAGS_ALLOC1);
	ctx->id = atomic_inc_return(&syshax_ctx_ids);
	ret = syshax_broker_open(ctx);
	if (ret) {
		kfree(ctx);
		return ret;
	}
	syshax_stats_ctx(true);
	file->private_data = ctx;
	return 0;
}

static int syshax_release(struct inode *inode, struct file *file)
{
	struct syshax_ctx *ctx = file->private_data;

	/* Jobs hold buffer references: end them before the handles go. */
	syshax_broker_release(ctx);
	syshax_ctx_release_bufs(ctx);
	syshax_stats_ctx(false);
	kfree(ctx);
	return 0;
}

static int syshax_mmap(struct file *file, struct vm_area_struct *vma)
{
	if (syshax_compat_refused())
		return -EOPNOTSUPP;
	return syshax_ctx_mmap(file->private_data, vma);
}

#ifdef CONFIG_COMPAT
static long syshax_compat_ioctl(struct file *file, unsigned int cmd,
				unsigned long arg)
{
	syshax_compat_refused();
	return -EOPNOTSUPP;
}
#endif

static __poll_t syshax_poll(struct file *file, poll_table *wait)
{
	return syshax_broker_poll(file->private_data, file, wait);
}

static const struct file_operations syshax_fops = {
	.owner		= THIS_MODULE,
	.open		= syshax_open,
	.release	= syshax_release,
	.unlocked_ioctl	= syshax_ioctl,
#ifdef CONFIG_COMPAT
	.compat_ioctl	= syshax_compat_ioctl,
#endif
	.mmap		= syshax_mmap,
	.poll		= syshax_poll,
	.llseek		= noop_llseek,
};

static struct miscdevice syshax_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "syshax",
	.fops	= &syshax_fops,
	.mode	= 0660,
	.groups	= syshax_attr_groups,
};

static int __init syshax_init(void)
{
	int ret;

	ret = syshax_broker_init();
	if (ret)
		return ret;
	ret = misc_register(&syshax_misc);
	if (ret)
		goto err_broker;
	return 0;

err_broker:
	syshax_broker_exit();
	return ret;
}

static void __exit syshax_exit(void)
{
	misc_deregister(&syshax_misc);
	syshax_broker_exit();
}

module_init(syshax_init);
module_exit(syshax_exit);

MODULE_DESCRIPTION("sysHAX: pinned NUMA buffers, dma-buf sharing and a job broker for CPU + xPU inference");
MODULE_LICENSE("GPL");
MODULE_VERSION(SYSHAX_VERSION);
SYSHAX_IMPORT_NS_DMA_BUF();
