/* SPDX-License-Identifier: MIT */
/* syshaxd logging: stderr in the foreground, syslog when detached; the
 * CPU engine's, also where another program runs it (syshax-run). */
#ifndef SHXD_LOG_H
#define SHXD_LOG_H

#include <stdbool.h>
#include <syslog.h>

/* name: the lines' prefix (and syslog ident); "syshaxd" until set. */
void shxd_log_init(const char *name, bool foreground);
/* prio: LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG. */
void shxd_log(int prio, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif /* SHXD_LOG_H */
