/* SPDX-License-Identifier: MIT */
/*
 * A userspace broker (daemon/broker) run in a thread of a test program, on
 * a socket in a fresh folder: the fixture broker_ut and rt_daemon_ut share.
 */
#ifndef T_BROKER_H
#define T_BROKER_H

#include <pthread.h>
#include <signal.h>

#include "broker.h"

struct syshax;

struct t_broker {
	char dir[64];		/* the fresh folder */
	char path[128];		/* the socket */
	struct shxd_broker *b;
	pthread_t thread;
	volatile sig_atomic_t stop;
	int ret;		/* shxd_broker_run's */
};

/*
 * Makes a folder from tmpl ("/tmp/name.XXXXXX"), creates the broker of c
 * on <folder>/sock (sock may name a subfolder the broker creates) and runs
 * it in a thread. 0 or -1.
 */
int t_broker_start(struct t_broker *t, struct shxd_broker_conf *c,
		   const char *tmpl, const char *sock);
/* A client of the broker through libsyshax-rt (a CUnit failure and NULL
 * when it cannot open). */
struct syshax *t_broker_open(const struct t_broker *t);
/* Stops the broker, removes the socket's folders; the run's return. */
int t_broker_stop(struct t_broker *t);

#endif /* T_BROKER_H */
