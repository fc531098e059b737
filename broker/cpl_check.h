/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * What both brokers (the module's and syshaxd's) do with an engine's
 * completion: accept it or not, and which latency bucket it counts in.
 * Pure C on the UAPI types, like job_check.h.
 */
#ifndef SYSHAX_CPL_CHECK_H
#define SYSHAX_CPL_CHECK_H

#ifdef __KERNEL__
#include <linux/errno.h>
#include <linux/types.h>
#else
#include <errno.h>
#endif
#include "syshax.h"

/* Largest errno a status may carry (the kernel's MAX_ERRNO). */
#define SYSHAX_CPL_MAX_ERRNO	4095

/* 0, or -EINVAL for a status that is not 0 or -errno, or unknown flags. */
static inline int syshax_cpl_check(const struct syshax_engine_cpl *c)
{
	if (c->status > 0 || c->status < -SYSHAX_CPL_MAX_ERRNO ||
	    (c->flags & ~SYSHAX_CPL_DEFERRED))
		return -EINVAL;
	return 0;
}

/* The STATS lat_hist bucket of a submit-to-complete time: the first i with
 * ns < 2^(i + 10), the last bucket for the rest. */
static inline unsigned int syshax_lat_bucket(__u64 ns)
{
	unsigned int bits = ns ? 64 - (unsigned int)__builtin_clzll(ns) : 0;
	unsigned int i = bits > 10 ? bits - 10 : 0;

	return i < SYSHAX_LAT_BUCKETS ? i : SYSHAX_LAT_BUCKETS - 1;
}

#endif /* SYSHAX_CPL_CHECK_H */
