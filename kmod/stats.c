// SPDX-License-Identifier: GPL-2.0
/*
 * Module-wide buffer counters: the pinned-bytes cap, the STATS ioctl and the
 * read-only sysfs attributes of the misc device
 * (/sys/class/misc/syshax/{pinned_bytes,node_pinned_bytes,nr_bufs,
 * node_bufs,contexts}); and the per-user accounts (struct syshax_user) that
 * pinned memory and jobs are charged to.
 */
#include <linux/atomic.h>
#include <linux/cred.h>
#include <linux/device.h>
#include <linux/hashtable.h>
#include <linux/mm.h>
#include <linux/nodemask.h>
#include <linux/sched/user.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/sysfs.h>

#include "syshax_priv.h"

static atomic64_t g_pinned_bytes = ATOMIC64_INIT(0);
static atomic64_t g_node_bytes[SYSHAX_MAX_NODES];
static atomic64_t g_nr_bufs = ATOMIC64_INIT(0);
static atomic64_t g_node_bufs[SYSHAX_MAX_NODES];
static atomic_t g_contexts = ATOMIC_INIT(0);

/* Node slots: higher nodes share the last one, as the UAPI says. */
static unsigned int syshax_node_slot(int nid)
{
	return min_t(unsigned int, nid, SYSHAX_MAX_NODES - 1);
}

static unsigned int syshax_nr_slots(void)
{
	return min_t(unsigned int, nr_node_ids, SYSHAX_MAX_NODES);
}

u64 syshax_max_pinned(void)
{
	u64 mb = READ_ONCE(syshax_max_pinned_mb);

	if (!mb)
		return ((u64)totalram_pages() << PAGE_SHIFT) / 2;
	return mb << 20;
}

u64 syshax_max_pinned_user(void)
{
	u64 mb = READ_ONCE(syshax_max_pinned_user_mb);

	return mb ? mb << 20 : U64_MAX;
}

/* Reserves bytes under the cap; -ENOMEM when they do not fit. */
int syshax_stats_charge(u64 bytes)
{
	u64 now = atomic64_add_return(bytes, &g_pinned_bytes);

	if (now > syshax_max_pinned()) {
		atomic64_sub(bytes, &g_pinned_bytes);
		return -ENOMEM;
	}
	return 0;
}

void syshax_stats_uncharge(u64 bytes)
{
	atomic64_sub(bytes, &g_pinned_bytes);
}

/*
 * Per-user accounts, one per real uid with anything charged: found by uid
 * in a small hash under a leaf spinlock (never held while taking another),
 * so a reference may be dropped in any context, the broker's lock held.
 */
static DEFINE_HASHTABLE(syshax_users, 6);
static DEFINE_SPINLOCK(syshax_users_lock);

static struct syshax_user *syshax_user_find(kuid_t uid)
{
	struct syshax_user *u;

	hash_for_each_possible(syshax_users, u, node, __kuid_val(uid))
		if (uid_eq(u->uid, uid) && refcount_inc_not_zero(&u->ref))
			return u;
	return NULL;
}

struct syshax_user *syshax_user_get_current(void)
{
	struct user_struct *us = current_user();
	struct syshax_user *u, *n;

	spin_lock(&syshax_users_lock);
	u = syshax_user_find(us->uid);
	spin_unlock(&syshax_users_lock);
	if (u)
		return u;
	n = kzalloc(sizeof(*n), GFP_KERNEL);
	if (!n)
		return NULL;
	refcount_set(&n->ref, 1);
	n->uid = us->uid;
	n->cred = get_current_cred();
	atomic64_set(&n->pinned_pages, 0);
	spin_lock(&syshax_users_lock);
	u = syshax_user_find(us->uid);
	if (!u)
		hash_add(syshax_users, &n->node, __kuid_val(n->uid));
	spin_unlock(&syshax_users_lock);
	if (!u)
		return n;
	put_cred(n->cred);
	kfree(n);
	return u;
}

struct syshax_user *syshax_user_hold(struct syshax_user *u)
{
	refcount_inc(&u->ref);
	return u;
}

void syshax_user_put(struct syshax_user *u)
{
	/* refcount_dec_and_lock(), spelt out so that sparse follows it. */
	if (refcount_dec_not_one(&u->ref))
		return;
	spin_lock(&syshax_users_lock);
	if (!refcount_dec_and_test(&u->ref)) {
		spin_unlock(&syshax_users_lock);
		return;
	}
	hash_del(&u->node);
	spin_unlock(&syshax_users_lock);
	/* Everything charged was returned before the last reference went. */
	WARN_ON_ONCE(atomic64_read(&u->pinned_pages) || u->nr_jobs);
	put_cred(u->cred);
	kfree(u);
}

/* Adds (or removes) a live buffer and its bytes per node. */
void syshax_stats_buf(const struct syshax_buf *buf, bool add)
{
	bool seen[SYSHAX_MAX_NODES] = { false };
	long sign = add ? 1 : -1;
	unsigned int i;

	for (i = 0; i < buf->nr_chunks; i++) {
		unsigned int slot = syshax_node_slot(buf->chunks[i].nid);

		atomic64_add(sign * ((s64)buf->chunks[i].nr_pages << PAGE_SHIFT),
			     &g_node_bytes[slot]);
		if (!seen[slot]) {
			seen[slot] = true;
			atomic64_add(sign, &g_node_bufs[slot]);
		}
	}
	atomic64_add(sign, &g_nr_bufs);
}

void syshax_stats_ctx(bool add)
{
	if (add)
		atomic_inc(&g_contexts);
	else
		atomic_dec(&g_contexts);
}

void syshax_stats_fill(struct syshax_stats_args *st)
{
	unsigned int i;

	st->pinned_bytes = atomic64_read(&g_pinned_bytes);
	st->nr_bufs = atomic64_read(&g_nr_bufs);
	for (i = 0; i < SYSHAX_MAX_NODES; i++) {
		st->node_bytes[i] = atomic64_read(&g_node_bytes[i]);
		st->node_bufs[i] = atomic64_read(&g_node_bufs[i]);
	}
	st->contexts = atomic_read(&g_contexts);
}

static ssize_t pinned_bytes_show(struct device *dev,
				 struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lld\n", atomic64_read(&g_pinned_bytes));
}
static DEVICE_ATTR_RO(pinned_bytes);

static ssize_t nr_bufs_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%lld\n", atomic64_read(&g_nr_bufs));
}
static DEVICE_ATTR_RO(nr_bufs);

static ssize_t contexts_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&g_contexts));
}
static DEVICE_ATTR_RO(contexts);

/* One value per node slot, space separated, node 0 first. */
static ssize_t syshax_show_nodes(char *buf, atomic64_t *counters)
{
	unsigned int i, n = syshax_nr_slots();
	int len = 0;

	for (i = 0; i < n; i++)
		len += sysfs_emit_at(buf, len, "%lld%c",
				     atomic64_read(&counters[i]),
				     i + 1 < n ? ' ' : '\n');
	return len;
}

static ssize_t node_pinned_bytes_show(struct device *dev,
				      struct device_attribute *attr, char *buf)
{
	return syshax_show_nodes(buf, g_node_bytes);
}
static DEVICE_ATTR_RO(node_pinned_bytes);

static ssize_t node_bufs_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	return syshax_show_nodes(buf, g_node_bufs);
}
static DEVICE_ATTR_RO(node_bufs);

static struct attribute *syshax_attrs[] = {
	&dev_attr_pinned_bytes.attr,
	&dev_attr_node_pinned_bytes.attr,
	&dev_attr_nr_bufs.attr,
	&dev_attr_node_bufs.attr,
	&dev_attr_contexts.attr,
	NULL,
};

static const struct attribute_group syshax_attr_group = {
	.attrs = syshax_attrs,
};

const struct attribute_group *syshax_attr_groups[] = {
	&syshax_attr_group,
	&syshax_broker_attr_group,
	NULL,
};
