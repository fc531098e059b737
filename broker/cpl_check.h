/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * What both brokers (the module's and syshaxd's) do with an engine's
 * completion: accept it or not, which latency bucket it counts in, and
 * the job counters they report in STATS. Pure C on the UAPI types, like
 * job_check.h; the caller holds whatever lock guards the counters.
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

/* A broker's job counters, as STATS reports them. */
struct syshax_job_stats {
	__u32 engines;
	__u64 submitted, fetched, completed, failed, cancelled;
	__u64 queued, held;		/* now */
	__u64 lat_hist[SYSHAX_LAT_BUCKETS];
};

/* A held job ended with status, ns after it was submitted. */
static inline void syshax_job_stats_end(struct syshax_job_stats *s,
					__s32 status, __u64 ns)
{
	s->held--;
	if (status)
		s->failed++;
	else
		s->completed++;
	s->lat_hist[syshax_lat_bucket(ns)]++;
}

/* The job fields of STATS. */
static inline void syshax_job_stats_fill(struct syshax_stats_args *st,
					 const struct syshax_job_stats *s)
{
	unsigned int i;

	st->engines = s->engines;
	st->jobs_submitted = s->submitted;
	st->jobs_fetched = s->fetched;
	st->jobs_completed = s->completed;
	st->jobs_failed = s->failed;
	st->jobs_cancelled = s->cancelled;
	st->queue_depth = s->queued;
	st->inflight = s->held;
	for (i = 0; i < SYSHAX_LAT_BUCKETS; i++)
		st->lat_hist[i] = s->lat_hist[i];
}

#endif /* SYSHAX_CPL_CHECK_H */
