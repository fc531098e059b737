// SPDX-License-Identifier: GPL-2.0
/*
 * Placeholder job broker: the hooks the device calls, with jobs not
 * implemented yet (SYSHAX_FEAT_JOBS stays clear, job ioctls give -ENOTTY).
 * The broker engineer replaces this file entirely with the real broker.
 */
#include "syshax_priv.h"

int syshax_broker_init(void)
{
	return 0;
}

void syshax_broker_exit(void)
{
}

int syshax_broker_open(struct syshax_ctx *ctx)
{
	return 0;
}

void syshax_broker_release(struct syshax_ctx *ctx)
{
}

long syshax_broker_ioctl(struct syshax_ctx *ctx, unsigned int cmd,
			 void __user *uarg)
{
	return -ENOTTY;
}

__poll_t syshax_broker_poll(struct syshax_ctx *ctx, struct file *file,
			    poll_table *wait)
{
	return 0;
}

void syshax_broker_version(struct syshax_version_args *v)
{
}

void syshax_broker_stats(struct syshax_stats_args *st)
{
}
