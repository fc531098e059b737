// SPDX-License-Identifier: MIT
/* syshaxd logging: stderr in the foreground, syslog when detached. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>

static bool g_syslog;
static const char *g_name = "syshaxd";

void shxd_log_init(const char *name, bool foreground)
{
	g_name = name;
	g_syslog = !foreground;
	if (g_syslog)
		openlog(name, LOG_PID, LOG_DAEMON);
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
		fprintf(stderr, "%s: %s\n", g_name, line);
	}
	va_end(ap);
}
