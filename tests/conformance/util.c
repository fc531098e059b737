// SPDX-License-Identifier: MIT
/* Helpers the conformance cases share. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "t.h"

struct syshax *g_stats_sh;

uint64_t t_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

struct syshax *t_open(void)
{
	struct syshax *sh;
	int ret = syshax_open(&sh, NULL);

	CU_ASSERT_EQUAL(ret, 0);
	return ret ? NULL : sh;
}

int t_stats(struct syshax_stats_args *st)
{
	memset(st, 0, sizeof(*st));
	return syshax_stats(g_stats_sh, st);
}

int t_stats_until(t_stats_pred pred, void *arg, int64_t timeout_ns)
{
	uint64_t deadline = t_now_ns() + (uint64_t)timeout_ns;
	const struct timespec pause = { 0, 5 * T_MS };
	struct syshax_stats_args st;

	for (;;) {
		int ret = t_stats(&st);

		if (ret)
			return ret;
		if (pred(&st, arg))
			return 0;
		if (t_now_ns() >= deadline)
			return -ETIMEDOUT;
		nanosleep(&pause, NULL);
	}
}

bool t_no_jobs(const struct syshax_stats_args *st, void *arg)
{
	(void)arg;
	return !st->queue_depth && !st->inflight;
}

bool t_no_pinned(const struct syshax_stats_args *st, void *arg)
{
	(void)arg;
	return !st->pinned_bytes && !st->nr_bufs;
}

void t_set_ref(struct syshax_job *job, unsigned int i, uint64_t buf,
	       uint32_t access, uint64_t offset, uint64_t length)
{
	job->refs[i].buf = buf;
	job->refs[i].access = access;
	job->refs[i].offset = offset;
	job->refs[i].length = length;
}

int t_reap(struct syshax *sh, uint64_t base, unsigned int n,
	   unsigned char *seen, unsigned int want, int64_t timeout_ns,
	   struct t_tally *tally)
{
	uint64_t deadline = t_now_ns() + (uint64_t)timeout_ns;
	struct syshax_completion c[64];
	unsigned int got = 0;

	while (got < want) {
		uint64_t now = t_now_ns();
		unsigned int max = want - got < 64 ? want - got : 64;
		int i, r;

		if (now >= deadline)
			break;
		r = syshax_wait(sh, c, 1, max, (int64_t)(deadline - now));
		if (r == -ETIMEDOUT || r == -EINTR)
			continue;
		if (r < 0)
			return r;
		for (i = 0; i < r; i++) {
			uint64_t k = c[i].user_data - base;

			if (c[i].user_data < base || k >= n)
				return -EPROTO;
			seen[k]++;
			if (!c[i].status) {
				tally->ok++;
			} else if (c[i].status == -EPIPE) {
				tally->epipe++;
			} else {
				tally->other++;
				tally->other_status = c[i].status;
			}
		}
		got += (unsigned int)r;
	}
	return (int)got;
}
