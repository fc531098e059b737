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

#include "chat.h"
#include "conf.h"
#include "http.h"
#include "sched.h"
#include "tokenizer.h"

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

/* The model's tokenizer and chat template, read from the file here: text
 * prompts, chat completions, stop strings and end-of-generation tokens
 * need them; without them the server takes token ids only. */
static int load_text(const struct serve_conf *c, struct shx_tok **tok,
		     int *tmpl)
{
	enum shx_chat_tmpl t;
	const char *text;
	char err[256];
	int ret;

	*tmpl = -1;
	ret = shx_tok_open(c->model, tok, err, sizeof(err));
	if (ret) {
		*tok = NULL;
		fprintf(stderr, PROG ": no tokenizer (%s): token ids only\n",
			err);
		return 0;
	}
	if (c->chat_template[0]) {
		if (shx_chat_by_name(c->chat_template, &t)) {
			fprintf(stderr, PROG ": chat_template '%s' is none "
				"that llama.cpp names (chatml, llama3, llama2, "
				"mistral-v1, ...)\n", c->chat_template);
			shx_tok_free(*tok);
			*tok = NULL;
			return -EINVAL;
		}
	} else {
		/* No guess: a template we do not recognise, or none, leaves
		 * chat completions refused until chat_template names one. */
		text = shx_tok_chat_template(*tok);
		if (!text || shx_chat_detect(text, &t)) {
			fprintf(stderr, PROG ": %s: %s: chat completions are "
				"refused; set chat_template (chatml, llama3, "
				"llama2, mistral-v1, ...)\n", c->model, text ?
				"its chat template is none of the families "
				"this server knows" : "no chat template");
			return 0;
		}
	}
	*tmpl = (int)t;
	return 0;
}

int main(int argc, char **argv)
{
	static struct serve_conf c;
	struct be_opts bo = { .prog = PROG };
	struct http_conf hc;
	struct sched *s;
	struct http *h;
	struct shx_tok *tok;
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
	if (load_text(&c, &tok, &hc.tmpl))
		return 2;
	c.sc.tok = tok;
	bo.model = c.model;
	bo.syshaxd = c.syshaxd[0] ? c.syshaxd : NULL;
	bo.threads = c.threads;
	bo.private = c.private;
	hc = (struct http_conf){
		.host = c.host, .port = c.port, .model_name = c.model_name,
		.threads = c.http_threads, .max_connections = c.max_connections,
		.conn_timeout = c.conn_timeout, .max_body = c.max_body,
		.tok = tok, .tmpl = hc.tmpl,
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
		shx_tok_free(tok);
		return 1;
	}
	ret = http_start(&h, &hc, s);
	if (ret) {
		sched_stop(s);
		sched_free(s);
		shx_tok_free(tok);
		return 1;
	}
	fprintf(stderr, PROG ": listening on http://%s:%u/ (model %s, n_vocab "
		"%u, %u KV blocks of %u, cpu_max_batch_size %u, chat template "
		"%s%s)\n", c.host, http_port(h), c.model_name,
		sched_model(s)->n_vocab, sched_conf(s)->kv_blocks, c.sc.block_size,
		c.sc.cpu_max_batch_size, hc.tmpl >= 0 ?
		shx_chat_name((enum shx_chat_tmpl)hc.tmpl) : "none",
		c.sc.xpu_standin ? ", xPU stand-in" :
		c.sc.xpu_worker ? ", xPU worker" : "");
	while (sigwait(&set, &sig))
		;
	fprintf(stderr, PROG ": %s: stopping\n", strsignal(sig));
	sched_stop(s);
	http_stop(h);
	sched_free(s);
	shx_tok_free(tok);
	return 0;
}
