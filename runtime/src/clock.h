/* SPDX-License-Identifier: MIT */
/* Monotonic time for timeouts, shared by the library and syshaxd's broker. */
#ifndef SHRT_CLOCK_H
#define SHRT_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in ns. */
int64_t shrt_now_ns(void);

/* When a wait of timeout_ns from now ends: -1 for never (< 0), saturating
 * at INT64_MAX (a timeout of INT64_MAX is as good as forever). */
int64_t shrt_deadline_ns(int64_t timeout_ns);

#endif /* SHRT_CLOCK_H */
