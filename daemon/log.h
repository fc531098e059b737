/* SPDX-License-Identifier: MIT */
/* syshaxd logging: stderr in the foreground, syslog when detached. */
#ifndef SHXD_LOG_H
#define SHXD_LOG_H

#include <stdbool.h>
#include <syslog.h>

void shxd_log_init(bool foreground);
/* prio: LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG. */
void shxd_log(int prio, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif /* SHXD_LOG_H */
