/* SPDX-License-Identifier: MIT */
/*
 * syshax-serve's configuration, syshaxd's way: built-in defaults, then
 * /etc/syshax/syshax-serve.conf (or --config FILE; "key = value" lines,
 * daemon/conffile.h), then the command line, where every key is also a
 * flag (--cpu-max-batch-size 16 for cpu_max_batch_size).
 */
#ifndef SRV_CONF_H
#define SRV_CONF_H

#include <limits.h>
#include <stdio.h>
#include <stdbool.h>

#include "http.h"
#include "sched.h"

#define SERVE_CONFIG_FILE	"/etc/syshax/syshax-serve.conf"

struct serve_conf {
	char host[64];
	unsigned int port;
	char model[PATH_MAX];
	char model_name[128];		/* "": the model file's name */
	char chat_template[64];		/* llama.cpp's name; "": the GGUF's */
	char syshaxd[PATH_MAX];		/* "": beside this program */
	char xpu_worker[PATH_MAX];	/* "": none (sc.xpu_worker) */
	unsigned int threads;		/* a private syshaxd's; 0: its own */
	bool private;
	unsigned int http_threads, max_connections, conn_timeout, max_body;
	struct sched_conf sc;
};

/* Parses argv into *c: 0 to run, 1 when --help was printed, -EINVAL after
 * a message on stderr. */
int serve_conf_parse(struct serve_conf *c, int argc, char **argv);
void serve_conf_usage(FILE *f);

#endif /* SRV_CONF_H */
