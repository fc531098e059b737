// SPDX-License-Identifier: MIT
/* syshax-serve's keys, file and flags (conf.h). */
#include "conf.h"

#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conffile.h"

#define PROG	"syshax-serve"

enum kind { K_UINT, K_STR, K_BOOL, K_KVTYPE };

#define SC(f)	offsetof(struct serve_conf, sc.f)
#define C(f)	offsetof(struct serve_conf, f)

static const struct key {
	const char *name;
	enum kind kind;
	size_t off, size;		/* size: K_STR's room */
	unsigned long lo, hi;		/* K_UINT */
	const char *help;
} keys[] = {
	{ "host", K_STR, C(host), sizeof(((struct serve_conf *)0)->host), 0, 0,
	  "IPv4 address to listen on (default 127.0.0.1)" },
	{ "port", K_UINT, C(port), 0, 0, 65535,
	  "TCP port (default 8010, sysHAX's; 0: any free one, printed)" },
	{ "model", K_STR, C(model), PATH_MAX, 0, 0,
	  "the GGUF model (also -m); for a running syshaxd, under its "
	  "model_dir" },
	{ "model_name", K_STR, C(model_name), 128, 0, 0,
	  "the id /v1/models lists (default: the file's name)" },
	{ "chat_template", K_STR, C(chat_template), 64, 0, 0,
	  "llama.cpp's name of the chat template (chatml, llama3, ...; "
	  "default: recognised from the GGUF's; none recognised: chat "
	  "completions refused)" },
	{ "cpu_max_batch_size", K_UINT, SC(cpu_max_batch_size), 0, 1, 4096,
	  "rows per DECODE job (default 32; syshaxd's key of the same name "
	  "caps its batches)" },
	{ "request_timeout", K_UINT, SC(request_timeout), 0, 0, 86400,
	  "s from a request's arrival to its end, else it fails (default "
	  "600; 0: none)" },
	{ "max_context", K_UINT, SC(max_ctx), 0, 2, 1 << 20,
	  "prompt + max_tokens per request (default 4096)" },
	{ "max_running", K_UINT, SC(max_running), 0, 1, 4096,
	  "requests generating at once (default 64)" },
	{ "max_queue", K_UINT, SC(max_queue), 0, 0, 1 << 20,
	  "requests waiting for a slot or KV blocks; more get 503 (default "
	  "256)" },
	{ "kv_blocks", K_UINT, SC(kv_blocks), 0, 0, 1 << 24,
	  "blocks in the paged KV cache (default 0: 2048, or as many as "
	  "syshaxd lets this process pin, halving, at least one "
	  "max_context request's)" },
	{ "block_size", K_UINT, SC(block_size), 0, 1, 4096,
	  "positions per KV block (default 16)" },
	{ "kv_type", K_KVTYPE, SC(kv_type), 0, 0, 0,
	  "KV cache element: f32, f16 or bf16 (default f16)" },
	{ "prefill_chunk", K_UINT, SC(prefill_chunk), 0, 1, 8192,
	  "prompt tokens per PREFILL job (default 256)" },
	{ "prefix_cache", K_UINT, SC(prefix_cache), 0, 0, 4096,
	  "entries of KV blocks kept (a request's prompt once prefilled, "
	  "its reply too once it ended) for prompts that begin with the "
	  "same tokens, evicted when blocks are needed (default 256; 0: "
	  "none)" },
	{ "xpu_standin", K_BOOL, SC(xpu_standin), 0, 0, 0,
	  "a stand-in xPU in this process: prefill there, and each decode "
	  "step where syshaxd's dispatch rule says (default 0)" },
	{ "xpu_worker", K_STR, C(xpu_worker), PATH_MAX, 0, 0,
	  "the socket of an xPU worker (python3 -m syshax.xpu) that runs "
	  "the prefills and the deferred decode steps, as xpu_standin; it "
	  "and this server use the same running syshaxd (default none)" },
	{ "auto_pd_offload", K_BOOL, SC(pd_offload), 0, 0, 0,
	  "with an xPU: decode steps flagged MAY_DEFER, syshaxd picks the "
	  "side per step; 0: every decode step on the CPU (default 1)" },
	{ "threads", K_UINT, C(threads), 0, 0, 4096,
	  "worker threads of a private syshaxd (default: its own)" },
	{ "private", K_BOOL, C(private), 0, 0, 0,
	  "start a private syshaxd even when one is running (default 0)" },
	{ "syshaxd", K_STR, C(syshaxd), PATH_MAX, 0, 0,
	  "the syshaxd a private one runs (default: beside this program)" },
	{ "http_threads", K_UINT, C(http_threads), 0, 1, 64,
	  "HTTP polling threads (default 2)" },
	{ "max_connections", K_UINT, C(max_connections), 0, 1, 1 << 20,
	  "open connections (default 4096)" },
	{ "connection_timeout", K_UINT, C(conn_timeout), 0, 1, 3600,
	  "s a connection may idle, and a body may take to arrive (default "
	  "30)" },
	{ "max_body", K_UINT, C(max_body), 0, 64, 1 << 30,
	  "bytes of a request body; more get 413 (default 1048576)" },
};

#define NKEYS	(sizeof(keys) / sizeof(keys[0]))

static void defaults(struct serve_conf *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->host, sizeof(c->host), "127.0.0.1");
	c->port = 8010;
	c->http_threads = 2;
	c->max_connections = 4096;
	c->conn_timeout = 30;
	c->max_body = 1 << 20;
	c->sc = (struct sched_conf){
		.cpu_max_batch_size = 32, .max_running = 64, .max_queue = 256,
		.kv_blocks = 0, .block_size = 16, .max_ctx = 4096,
		.prefill_chunk = 256, .prefix_cache = 256,
		.request_timeout = 600,
		.kv_type = SYSHAX_DT_F16, .pd_offload = true,
	};
}

static int set(void *arg, const char *name, const char *v)
{
	static const char *const kv[] = { [SYSHAX_DT_F32] = "f32",
					  [SYSHAX_DT_F16] = "f16",
					  [SYSHAX_DT_BF16] = "bf16" };
	char *p = (char *)arg, *end;
	const struct key *k = NULL;
	unsigned long u;

	for (size_t i = 0; i < NKEYS; i++)
		if (!strcmp(keys[i].name, name))
			k = &keys[i];
	if (!k)
		return -ENOENT;
	switch (k->kind) {
	case K_STR:
		if (strlen(v) >= k->size)
			return -ERANGE;
		memcpy(p + k->off, v, strlen(v) + 1);
		return 0;
	case K_BOOL:
		if (strcmp(v, "0") && strcmp(v, "1") && strcmp(v, "true") &&
		    strcmp(v, "false"))
			return -EINVAL;
		*(bool *)(p + k->off) = !strcmp(v, "1") || !strcmp(v, "true");
		return 0;
	case K_KVTYPE:
		for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++) {
			if (kv[i] && !strcmp(v, kv[i])) {
				*(uint32_t *)(p + k->off) = (uint32_t)i;
				return 0;
			}
		}
		return -EINVAL;
	case K_UINT:
		errno = 0;
		u = strtoul(v, &end, 10);
		if (errno || end == v || *end || *v == '-')
			return -EINVAL;
		if (u < k->lo || u > k->hi)
			return -ERANGE;
		*(unsigned int *)(p + k->off) = (unsigned int)u;
		return 0;
	}
	return -EINVAL;
}

static const char *allowed(const char *name, char *buf, size_t len)
{
	for (size_t i = 0; i < NKEYS; i++) {
		if (strcmp(keys[i].name, name))
			continue;
		switch (keys[i].kind) {
		case K_UINT:
			snprintf(buf, len, "a whole number %lu..%lu",
				 keys[i].lo, keys[i].hi);
			return buf;
		case K_BOOL:
			return "0, 1, true or false";
		case K_KVTYPE:
			return "f32, f16 or bf16";
		case K_STR:
			snprintf(buf, len, "text up to %zu bytes",
				 keys[i].size - 1);
			return buf;
		}
	}
	return "a key of syshax-serve --help";
}

static const char *why(int err)
{
	return err == -ENOENT ? "unknown key" : "invalid value";
}

void serve_conf_usage(FILE *f)
{
	fprintf(f,
"usage: " PROG " -m MODEL.gguf [--config FILE] [--KEY VALUE]...\n"
"An OpenAI-compatible server (POST /v1/completions, /v1/chat/completions,\n"
"GET /v1/models, /health, /metrics) on syshaxd: a running one ($SYSHAX_DEVICE\n"
"first), else a private one started on the model's folder.\n"
"  -m, --model F      the GGUF model\n"
"  -c, --config F     keys from F (default " SERVE_CONFIG_FILE " if\n"
"                     it exists); flags override the file\n"
"  -h, --help         this text\n"
"Every key is also a flag, '_' written '-' (--max-running 8):\n");
	for (size_t i = 0; i < NKEYS; i++)
		fprintf(f, "  %-20s %s\n", keys[i].name, keys[i].help);
	fprintf(f, "Exit status: 0 after SIGINT or SIGTERM, 1 when it cannot "
		"start, 2 for a usage error.\n");
}

static int bad_flag(const char *flag, const char *v, int err,
		    const char *name)
{
	char buf[64];

	fprintf(stderr, PROG ": %s '%s': %s; allowed: %s\n", flag, v, why(err),
		allowed(name, buf, sizeof(buf)));
	return -EINVAL;
}

int serve_conf_parse(struct serve_conf *c, int argc, char **argv)
{
	static struct option opts[NKEYS + 4];
	static char names[NKEYS][32];
	const char *path = SERVE_CONFIG_FILE;
	bool given = false;
	int line, ret, o;

	defaults(c);
	for (size_t i = 0; i < NKEYS; i++) {
		snprintf(names[i], sizeof(names[i]), "%s", keys[i].name);
		for (char *p = names[i]; *p; p++)
			*p = *p == '_' ? '-' : *p;
		opts[i] = (struct option){ names[i], required_argument, NULL,
					   256 + (int)i };
	}
	opts[NKEYS] = (struct option){ "config", required_argument, NULL, 'c' };
	opts[NKEYS + 1] = (struct option){ "help", no_argument, NULL, 'h' };
	/* The file first: --config is looked for before the other flags. */
	opterr = 0;
	while ((o = getopt_long(argc, argv, "m:c:h", opts, NULL)) != -1) {
		if (o == 'c') {
			path = optarg;
			given = true;
		}
	}
	{
		char key[128], value[PATH_MAX], buf[64];

		ret = shxd_conffile_read(path, set, c, &line, key, value,
					 sizeof(key), sizeof(value));
		if (ret == -ENOENT && !given && !line)
			ret = 0;
		if (ret && !line) {
			fprintf(stderr, PROG ": %s: %s\n", path, strerror(-ret));
			return -EINVAL;
		}
		if (ret) {
			fprintf(stderr, PROG ": %s:%d: %s%s%s; allowed: %s\n",
				path, line, key[0] ? why(ret) :
				"not 'key = value'", key[0] ? ": " : "",
				key[0] ? key : "", allowed(key, buf, sizeof(buf)));
			return -EINVAL;
		}
	}
	optind = 0;
	opterr = 1;
	while ((o = getopt_long(argc, argv, "m:c:h", opts, NULL)) != -1) {
		switch (o) {
		case 'h':
			serve_conf_usage(stdout);
			return 1;
		case 'c':
			break;
		case 'm':
			ret = set(c, "model", optarg);
			if (ret)
				return bad_flag("-m", optarg, ret, "model");
			break;
		case '?':
			fprintf(stderr, "Try '" PROG " --help'.\n");
			return -EINVAL;
		default:
			ret = set(c, keys[o - 256].name, optarg);
			if (ret) {
				char flag[40];

				snprintf(flag, sizeof(flag), "--%s",
					 names[o - 256]);
				return bad_flag(flag, optarg, ret,
						keys[o - 256].name);
			}
		}
	}
	if (optind < argc) {
		fprintf(stderr, PROG ": unexpected argument '%s'\nTry '" PROG
			" --help'.\n", argv[optind]);
		return -EINVAL;
	}
	if (!c->model[0]) {
		fprintf(stderr, PROG ": no model: -m MODEL.gguf (or model = in "
			"the config file)\nTry '" PROG " --help'.\n");
		return -EINVAL;
	}
	if (c->sc.xpu_standin && c->xpu_worker[0]) {
		fprintf(stderr, PROG ": xpu_standin or xpu_worker, not both\n");
		return -EINVAL;
	}
	c->sc.xpu_worker = c->xpu_worker[0] ? c->xpu_worker : NULL;
	if (c->sc.prefill_chunk > c->sc.max_ctx)
		c->sc.prefill_chunk = c->sc.max_ctx;
	return 0;
}
