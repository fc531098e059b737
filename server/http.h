/* SPDX-License-Identifier: MIT */
/*
 * The HTTP side (libmicrohttpd): routes, bodies, limits, and each
 * request's reply, whole or streamed as server-sent events. One polling
 * thread per http_threads on epoll; a request waiting for tokens suspends
 * its connection and the scheduler's wake callback resumes it.
 */
#ifndef SRV_HTTP_H
#define SRV_HTTP_H

#include <stdint.h>

struct sched;
struct shx_tok;

struct http_conf {
	const char *host;
	unsigned int port;		/* 0: any free one (printed) */
	const char *model_name;		/* what /v1/models lists */
	unsigned int threads;		/* polling threads */
	unsigned int max_connections;
	unsigned int conn_timeout;	/* s: idle, and a whole body's upload */
	unsigned int max_body;		/* bytes; more: 413 */
	const struct shx_tok *tok;	/* NULL: token ids only */
	int tmpl;			/* enum shx_chat_tmpl, -1: none */
};

struct http;

int http_start(struct http **out, const struct http_conf *c,
	       struct sched *s);
/* The port it listens on. */
unsigned int http_port(const struct http *h);
void http_stop(struct http *h);
/* The scheduler's wake callback: owner is the connection. */
void http_wake(void *owner);

#endif /* SRV_HTTP_H */
