/* SPDX-License-Identifier: MIT */
/* The userspace broker's buffers: sealed memfds placed on a NUMA node. */
#ifndef SHXD_MEMBUF_H
#define SHXD_MEMBUF_H

#include <stdint.h>
#include <sys/types.h>

#include "syshax.h"

/* Same bound as the module's (its mmap offset space). */
#define SHXD_MAX_BUF_SIZE	(1ULL << 40)

struct bk_user;

struct shxd_membuf {
	int fd;			/* the memfd; size sealed */
	uint64_t size;		/* bytes, page (or huge page) aligned */
	uint64_t id;		/* global id, set by the broker */
	dev_t dev;		/* fstat of fd: how an imported fd is */
	ino_t ino;		/* recognised */
	int node;		/* asked for; -1: local */
	uint32_t flags;		/* SYSHAX_BUF_ALLOW_* given */
	uint32_t chunk_size;	/* 2 MiB for hugetlb, else the page size */
	uint64_t node_bytes[SYSHAX_MAX_NODES];	/* where the pages are */
	unsigned int refs;	/* handles, queued/in-flight jobs, engine maps */
	/* The user it is charged to (broker_int.h): the charge, one of its
	 * nr_bufs, keeps the record alive, as the module's buffer holds
	 * its user_struct. */
	struct bk_user *user;
};

/* The checks of shxd_membuf_create() alone: 0 or -EINVAL. */
int shxd_membuf_check(uint64_t size, int node, uint32_t flags);

/* A zeroed, populated buffer of at least size bytes: hugetlb when enough
 * huge pages are free, else shmem with transparent huge pages asked for.
 * -EINVAL (size 0 or too big, bad node or flags), -ENOMEM. */
int shxd_membuf_create(uint64_t size, int node, uint32_t flags,
		       struct shxd_membuf **out);
void shxd_membuf_destroy(struct shxd_membuf *mb);

/* Highest node number this host has, for checks and STATS. */
int shxd_membuf_max_node(void);

#endif /* SHXD_MEMBUF_H */
