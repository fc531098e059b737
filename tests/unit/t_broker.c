// SPDX-License-Identifier: MIT
/* A broker in a thread of the test (t_broker.h). */
#include "t_broker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <CUnit/Basic.h>

#include "syshax/rt.h"

static void *run(void *arg)
{
	struct t_broker *t = arg;

	t->ret = shxd_broker_run(t->b, &t->stop);
	return NULL;
}

int t_broker_start(struct t_broker *t, struct shxd_broker_conf *c,
		   const char *tmpl, const char *sock)
{
	memset(t, 0, sizeof(*t));
	snprintf(t->dir, sizeof(t->dir), "%s", tmpl);
	if (!mkdtemp(t->dir))
		return -1;
	snprintf(t->path, sizeof(t->path), "%s/%s", t->dir, sock);
	c->socket_path = t->path;
	if (shxd_broker_create(c, &t->b))
		return -1;
	return pthread_create(&t->thread, NULL, run, t) ? -1 : 0;
}

struct syshax *t_broker_open(const struct t_broker *t)
{
	struct syshax_open_opts o = {
		.backend = SYSHAX_BACKEND_DAEMON, .path = t->path,
	};
	struct syshax *sh = NULL;

	CU_ASSERT_EQUAL(syshax_open(&sh, &o), 0);
	return sh;
}

int t_broker_stop(struct t_broker *t)
{
	char sub[sizeof(t->path)];
	char *slash;

	t->stop = 1;
	pthread_join(t->thread, NULL);
	shxd_broker_destroy(t->b);
	/* The socket's folder, when the broker made one below dir. */
	snprintf(sub, sizeof(sub), "%s", t->path);
	slash = strrchr(sub, '/');
	if (slash && (size_t)(slash - sub) > strlen(t->dir)) {
		*slash = '\0';
		rmdir(sub);
	}
	rmdir(t->dir);
	return t->ret;
}
