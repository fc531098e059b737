// SPDX-License-Identifier: MIT
/*
 * syshax-serve: an OpenAI-compatible server on libsyshax-rt, as a
 * framework would be: the scheduler (sched.c) runs the model's steps in
 * syshaxd, the HTTP side (http.c) speaks the OpenAI API (api.c). The
 * configuration is syshaxd's style (conf.c). Stopped by SIGINT or SIGTERM:
 * every open request ends with an error, then the backend is closed.
 */
#include <errno.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "conf.h"
#include "http.h"
#include "sched.h"

#define PROG	"syshax-serve"

/* As many descriptors as we may: every connection holds one. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int main(int argc, char **argv)
{
	static struct serve_conf c;
	struct be_opts bo = { .prog = PROG };
	struct http_conf hc;
	struct sched *s;
	struct http *h;
	char name[PATH_MAX];
	sigset_t set;
	int ret, sig;

	ret = serve_conf_parse(&c, argc, argv);
	if (ret)
		return ret > 0 ? 0 : 2;
	if (!c.model_name[0]) {
		snprintf(name, sizeof(name), "%s", c.model);
		snprintf(c.model_name, sizeof(c.model_name), "%s",
			 basename(name));
	}
	bo.model = c.model;
	bo.syshaxd = c.syshaxd[0] ? c.syshaxd : NULL;
	bo.threads = c.threads;
	bo.private = c.private;
	hc = (struct http_conf){
		.host = c.host, .port = c.port, .model_name = c.model_name,
		.threads = c.http_threads, .max_connections = c.max_connections,
		.conn_timeout = c.conn_timeout, .max_body = c.max_body,
	};
	raise_nofile();
	/* Every thread started below inherits the mask: the signals come
	 * to sigwait here. A client gone mid-write is an error, not a kill. */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	ret = sched_start(&s, &c.sc, &bo, http_wake);
	if (ret) {
		fprintf(stderr, PROG ": cannot start: %s\n", strerror(-ret));
		return 1;
	}
	ret = http_start(&h, &hc, s);
	if (ret) {
		sched_stop(s);
		sched_free(s);
		return 1;
	}
	fprintf(stderr, PROG ": listening on http://%s:%u/ (model %s, n_vocab "
		"%u, %u KV blocks of %u, cpu_max_batch_size %u%s)\n", c.host,
		http_port(h), c.model_name, sched_model(s)->n_vocab,
		c.sc.kv_blocks, c.sc.block_size, c.sc.cpu_max_batch_size,
		c.sc.xpu_standin ? ", xPU stand-in" : "");
	while (sigwait(&set, &sig))
		;
	fprintf(stderr, PROG ": %s: stopping\n", strsignal(sig));
	sched_stop(s);
	http_stop(h);
	sched_free(s);
	return 0;
}
