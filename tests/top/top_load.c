// SPDX-License-Identifier: MIT
/*
 * syshax-top's test load: opens the backend as syshax_open() finds it,
 * allocates one buffer of --bytes, prints "ready <ctx bytes>" and then
 * submits NOP jobs in batches and waits for them until --seconds pass (or
 * forever with 0), so the stats move. Exit 0, or 1 with the error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "syshax.h"
#include "syshax_ops.h"
#include "syshax/rt.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	unsigned long long bytes = 4ULL << 20;
	double seconds = 0, end;
	struct syshax_completion cpl[16];
	struct syshax_job jobs[16];
	struct syshax_buffer buf;
	struct syshax *sh;
	unsigned int i;
	int ret, n;

	for (i = 1; i + 1 < (unsigned int)argc; i += 2) {
		if (!strcmp(argv[i], "--bytes"))
			bytes = strtoull(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--seconds"))
			seconds = strtod(argv[i + 1], NULL);
	}
	ret = syshax_open(&sh, NULL);
	if (ret) {
		fprintf(stderr, "top_load: open: %s\n", syshax_strerror(ret));
		return 1;
	}
	ret = syshax_buf_alloc(sh, bytes, -1, SYSHAX_BUF_ALLOW_SMALL, &buf);
	if (ret) {
		fprintf(stderr, "top_load: alloc: %s\n", syshax_strerror(ret));
		return 1;
	}
	printf("ready %llu\n", (unsigned long long)buf.size);
	fflush(stdout);
	for (i = 0; i < 16; i++)
		syshax_job_init(&jobs[i], SYSHAX_OP_NOP, i);
	end = now() + seconds;
	while (!seconds || now() < end) {
		ret = syshax_submit(sh, jobs, 16);
		if (ret < 0) {
			fprintf(stderr, "top_load: submit: %s\n",
				syshax_strerror(ret));
			return 1;
		}
		for (n = 0; n < ret;) {
			int k = syshax_wait(sh, cpl, 1, 16, 1000000000LL);

			if (k < 0) {
				fprintf(stderr, "top_load: wait: %s\n",
					syshax_strerror(k));
				return 1;
			}
			n += k;
		}
		/* A steady, modest rate: the test box has two CPUs. */
		{
			struct timespec ts = { 0, 2000000 };

			nanosleep(&ts, NULL);
		}
	}
	syshax_buf_free(sh, &buf);
	syshax_close(sh);
	return 0;
}
