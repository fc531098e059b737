// SPDX-License-Identifier: MIT
#include <time.h>

#include "clock.h"

int64_t shrt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t shrt_deadline_ns(int64_t timeout_ns)
{
	int64_t now;

	if (timeout_ns < 0)
		return -1;
	now = shrt_now_ns();
	return timeout_ns > INT64_MAX - now ? INT64_MAX : now + timeout_ns;
}
