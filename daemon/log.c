// SPDX-License-Identifier: MIT
/* syshaxd logging: stderr in the foreground, syslog when detached. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>

static bool g_syslog;

void shxd_log_init(bool foreground)
{
	g_syslog = !foreground;
	if (g_syslog)
		openlog("syshaxd", LOG_PID, LOG_DAEMON);
}

void shxd_log(int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (g_syslog) {
		vsyslog(prio, fmt, ap);
	} else {
		/* One write per line, so lines of several threads stay whole. */
		char line[512];

		vsnprintf(line, sizeof(line), fmt, ap);
		fprintf(stderr, "syshaxd: %s\n", line);
	}
	va_end(ap);
}
