// SPDX-License-Identifier: MIT
/* syshax_strerror(): what an errno means when a sysHAX call returns it. */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "rt_int.h"

/* The errnos whose meaning sysHAX narrows (see uapi/syshax.h). */
static const struct {
	int err;
	const char *msg;
} g_msgs[] = {
	{ EBADF, "Unknown buffer handle" },
	{ ERANGE, "Buffer reference outside the buffer" },
	{ EAGAIN, "Job queue full: reap completions and retry" },
	{ EPIPE, "Engine went away while running the job" },
	{ ETIMEDOUT, "Timed out" },
	{ ENOTTY, "Not a sysHAX device" },
	{ ECONNREFUSED, "No syshaxd listening on the socket" },
};

const char *syshax_strerror(int err)
{
	const char *msg;
	size_t i;

	/* -err or err: both name the errno. INT_MIN has no positive twin. */
	if (err == INT_MIN)
		return "Unknown error";
	if (err < 0)
		err = -err;
	for (i = 0; i < sizeof(g_msgs) / sizeof(g_msgs[0]); i++)
		if (g_msgs[i].err == err)
			return g_msgs[i].msg;
	msg = strerrordesc_np(err);
	return msg ? msg : "Unknown error";
}
