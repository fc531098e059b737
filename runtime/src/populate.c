// SPDX-License-Identifier: MIT
/* Faulting in a mapping from several threads (populate.h). */
#include "populate.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <sys/mman.h>

/* A thread for every SLICE bytes, at most MAX_THREADS (the zeroing is
 * bound by memory well before). */
#define SLICE		(64ULL << 20)
#define MAX_THREADS	16
#define CUT		(2ULL << 20)	/* a huge page */

struct slice {
	char *p;
	uint64_t len;
	int err;
};

static void *populate_slice(void *arg)
{
	struct slice *s = arg;

#ifdef MADV_POPULATE_WRITE
	if (madvise(s->p, s->len, MADV_POPULATE_WRITE))
		s->err = -errno;
#else
	s->err = -EOPNOTSUPP;
#endif
	return NULL;
}

int shrt_populate(void *p, uint64_t size)
{
	struct slice s[MAX_THREADS] = { { 0 } };
	bool started[MAX_THREADS] = { false };
	pthread_t t[MAX_THREADS];
	uint64_t n = size / SLICE + 1, cuts = size / CUT, at = 0;
	cpu_set_t cpus;
	int ret = 0;

	if (!sched_getaffinity(0, sizeof(cpus), &cpus) &&
	    (uint64_t)CPU_COUNT(&cpus) < n)
		n = (uint64_t)CPU_COUNT(&cpus);
	n = n < MAX_THREADS ? n : MAX_THREADS;
	n = n ? n : 1;
	/* The caller takes slice 0, and any slice whose thread did not
	 * start. */
	for (uint64_t i = 0; i < n; i++) {
		uint64_t end = i + 1 < n ? cuts * (i + 1) / n * CUT : size;

		s[i] = (struct slice){ (char *)p + at, end - at, 0 };
		at = end;
		if (i && s[i].len)
			started[i] = !pthread_create(&t[i], NULL,
						     populate_slice, &s[i]);
	}
	for (uint64_t i = 0; i < n; i++)
		if (!started[i] && s[i].len)
			populate_slice(&s[i]);
	for (uint64_t i = 0; i < n; i++) {
		if (started[i])
			pthread_join(t[i], NULL);
		ret = ret ? ret : s[i].err;
	}
	return ret;
}
