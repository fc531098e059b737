// SPDX-License-Identifier: MIT
/* syshaxd configuration: defaults, config file, environment, command line. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "broker/broker.h"
#include "conffile.h"
#include "engine/cpu.h"
#include "syshax/rt.h"

#ifndef SHXD_VERSION
#define SHXD_VERSION "0.0.0"
#endif

/* The broker's defaults mirror the module's parameters. */
#define DEF_MAX_JOBS_CTX	SHXD_DEF_MAX_JOBS_CTX
#define DEF_MAX_JOBS_GLOBAL	SHXD_DEF_MAX_JOBS_GLOBAL
#define DEF_MAX_PINNED_MB	0	/* half of RAM */
#define DEF_ENGINE_THREADS	1
#define DEF_MAX_BATCH		SHXD_DEF_MAX_BATCH
#define DEF_MAX_WSETS		SHXD_DEF_MAX_WSETS
/* The most the workers poll between runs: longer than the gap between a
 * decode loop's steps (100-300 us on a 2-vCPU VM: the job's round trip
 * through broker and client). */
#define DEF_WORKER_SPIN_US	500

static int parse_ull(const char *s, unsigned long long max,
		     unsigned long long *out)
{
	unsigned long long v;
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE || v > max)
		return -ERANGE;
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

static int set_uint(unsigned int *dst, const char *v, unsigned int min)
{
	unsigned long long x;
	int ret = parse_ull(v, UINT_MAX, &x);

	if (ret)
		return ret;
	if (x < min)
		return -ERANGE;
	*dst = (unsigned int)x;
	return 0;
}

static int set_str(char *dst, size_t size, const char *v)
{
	size_t n = strlen(v);

	if (n >= size)
		return -ERANGE;
	memcpy(dst, v, n + 1);
	return 0;
}

/* A wait in µs, at most a second. */
static int set_us(unsigned int *dst, const char *v)
{
	unsigned int us;
	int ret = set_uint(&us, v, 0);

	if (!ret && us > 1000000)
		ret = -ERANGE;
	if (!ret)
		*dst = us;
	return ret;
}

void shxd_config_defaults(struct shxd_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->mode = SHXD_MODE_AUTO;
	cfg->max_jobs_ctx = DEF_MAX_JOBS_CTX;
	cfg->max_jobs_global = DEF_MAX_JOBS_GLOBAL;
	cfg->max_pinned_mb = DEF_MAX_PINNED_MB;
	cfg->max_bufs_ctx = SHXD_DEF_MAX_BUFS_CTX;
	cfg->max_bufs_user = SHXD_DEF_MAX_BUFS_USER;
	cfg->max_ctx_user = SHXD_DEF_MAX_CTX_USER;
	cfg->engine_threads = DEF_ENGINE_THREADS;
	cfg->node = -1;
	cfg->quantize = SHXK_F32;
	cfg->cpu_max_batch_size = DEF_MAX_BATCH;
	cfg->max_weight_sets = DEF_MAX_WSETS;
	cfg->worker_spin_us = DEF_WORKER_SPIN_US;
}

static int set_quantize(int *q, const char *v)
{
	if (!strcmp(v, "none") || !*v)
		*q = SHXK_F32;
	else if (!strcmp(v, "q8_0"))
		*q = SHXK_Q8_0;
	else if (!strcmp(v, "q4_0"))
		*q = SHXK_Q4_0;
	else
		return -EINVAL;
	return 0;
}

static int set_affinity(char *dst, size_t size, const char *v)
{
	int cpus[1024];

	if (*v && shxd_parse_cpulist(v, cpus, 1024) <= 0)
		return -EINVAL;
	return set_str(dst, size, v);
}

/* Every key with what it accepts. Options that set a key carry its index
 * here (OPT_KEY + i). */
static const struct {
	const char *key, *allowed;
} g_keys[] = {
	{ "socket",		"a path shorter than PATH_MAX" },
	{ "max_jobs_ctx",	"a whole number >= 1" },
	{ "max_jobs_global",	"a whole number >= 1" },
	{ "max_pinned_mb",	"a whole number of MiB (0: half of RAM)" },
	{ "engine_threads",	"a whole number >= 1" },
	{ "node",		"-1 or a NUMA node 0..15" },
	{ "omp_num_threads",	"a whole number >= 1 (OMP_NUM_THREADS)" },
	{ "cpu_affinity",	"a CPU list like 0-7 or 0-159:2,1 "
				"(CUSTOM_CPU_AFFINITY)" },
	{ "quantize",		"none, q8_0 or q4_0 (SYSHAX_QUANTIZE)" },
	{ "cpu_max_batch_size",	"a whole number 1..4096" },
	{ "max_weight_sets",	"a whole number >= 1" },
	{ "model_dir",		"a directory path shorter than PATH_MAX" },
	{ "preload",		"a weights file path under model_dir" },
	{ "max_pinned_user_mb",	"a whole number of MiB (0: half of max_pinned_mb)" },
	{ "max_bufs_ctx",	"a whole number >= 1" },
	{ "max_bufs_user",	"a whole number >= 1" },
	{ "max_ctx_user",	"a whole number >= 1" },
	{ "engine_poll_us",	"a whole number of µs 0..1000000 (0: never poll)" },
	{ "max_jobs_user",	"a whole number (0: half of max_jobs_global)" },
	{ "worker_spin_us",	"a whole number of µs 0..1000000 (0: sleep at once)" },
};

const char *shxd_config_allowed(const char *key)
{
	for (size_t i = 0; i < sizeof(g_keys) / sizeof(g_keys[0]); i++)
		if (!strcmp(key, g_keys[i].key))
			return g_keys[i].allowed;
	return NULL;
}

int shxd_config_set(struct shxd_config *cfg, const char *key,
		    const char *value)
{
	if (!strcmp(key, "socket"))
		return set_str(cfg->socket, sizeof(cfg->socket), value);
	if (!strcmp(key, "max_jobs_ctx"))
		return set_uint(&cfg->max_jobs_ctx, value, 1);
	if (!strcmp(key, "max_jobs_global"))
		return set_uint(&cfg->max_jobs_global, value, 1);
	if (!strcmp(key, "max_pinned_mb"))
		return parse_ull(value, ~0ULL >> 20, &cfg->max_pinned_mb);
	if (!strcmp(key, "max_pinned_user_mb"))
		return parse_ull(value, ~0ULL >> 20, &cfg->max_pinned_user_mb);
	if (!strcmp(key, "max_jobs_user"))
		return set_uint(&cfg->max_jobs_user, value, 0);
	if (!strcmp(key, "max_bufs_ctx"))
		return set_uint(&cfg->max_bufs_ctx, value, 1);
	if (!strcmp(key, "max_bufs_user"))
		return set_uint(&cfg->max_bufs_user, value, 1);
	if (!strcmp(key, "max_ctx_user"))
		return set_uint(&cfg->max_ctx_user, value, 1);
	if (!strcmp(key, "engine_poll_us"))
		return set_us(&cfg->engine_poll_us, value);
	if (!strcmp(key, "worker_spin_us"))
		return set_us(&cfg->worker_spin_us, value);
	if (!strcmp(key, "engine_threads"))
		return set_uint(&cfg->engine_threads, value, 1);
	if (!strcmp(key, "omp_num_threads"))
		return set_uint(&cfg->omp_num_threads, value, 1);
	if (!strcmp(key, "cpu_affinity"))
		return set_affinity(cfg->cpu_affinity,
				    sizeof(cfg->cpu_affinity), value);
	if (!strcmp(key, "quantize"))
		return set_quantize(&cfg->quantize, value);
	if (!strcmp(key, "cpu_max_batch_size")) {
		unsigned int v;
		int ret = set_uint(&v, value, 1);

		if (!ret && v > 4096)
			ret = -ERANGE;
		if (!ret)
			cfg->cpu_max_batch_size = v;
		return ret;
	}
	if (!strcmp(key, "max_weight_sets"))
		return set_uint(&cfg->max_weight_sets, value, 1);
	if (!strcmp(key, "model_dir"))
		return set_str(cfg->model_dir, sizeof(cfg->model_dir), value);
	if (!strcmp(key, "preload"))
		return set_str(cfg->preload, sizeof(cfg->preload), value);
	if (!strcmp(key, "node")) {
		unsigned int n;
		int ret;

		if (!strcmp(value, "-1")) {
			cfg->node = -1;
			return 0;
		}
		ret = set_uint(&n, value, 0);
		if (ret)
			return ret;
		if (n >= SYSHAX_MAX_NODES)
			return -ERANGE;
		cfg->node = (int)n;
		return 0;
	}
	return -ENOENT;
}

/* The last bad line's key and value, for the message. */
static char g_bad[PATH_MAX + 256];

static int set_key(void *cfg, const char *key, const char *value)
{
	return shxd_config_set(cfg, key, value);
}

int shxd_config_load(struct shxd_config *cfg, const char *path, int *line)
{
	char key[128], value[PATH_MAX];
	int ret = shxd_conffile_read(path, set_key, cfg, line, key, value,
				     sizeof(key), sizeof(value));
	const char *ok;

	if (!ret || !*line)
		return ret;
	if (!key[0]) {
		snprintf(g_bad, sizeof(g_bad), "not 'key = value'");
		return ret;
	}
	ok = shxd_config_allowed(key);
	snprintf(g_bad, sizeof(g_bad), "%s = '%s'%s%s", key, value,
		 ok ? "; allowed: " : "", ok ? ok : "");
	return ret;
}

int shxd_config_env(struct shxd_config *cfg, const char **env,
		    const char **key)
{
	static const struct {
		const char *env, *key;
	} knobs[] = {
		{ "OMP_NUM_THREADS", "omp_num_threads" },
		{ "CUSTOM_CPU_AFFINITY", "cpu_affinity" },
		{ "SYSHAX_QUANTIZE", "quantize" },
	};

	for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		const char *v = getenv(knobs[i].env);
		int ret;

		if (!v || !*v)
			continue;
		ret = shxd_config_set(cfg, knobs[i].key, v);
		if (ret) {
			*env = knobs[i].env;
			*key = knobs[i].key;
			return ret;
		}
	}
	return 0;
}

enum {
	OPT_KEY = 0x100,	/* OPT_KEY + index in g_keys */
	OPT_CONFIG = 0x200,
	OPT_NO_ENGINE,
	OPT_ENGINE_ONLY,
	OPT_USERSPACE,
	OPT_PLACEMENT,
};

static const struct option options[] = {
	{ "socket",		required_argument, NULL, OPT_KEY + 0 },
	{ "max-jobs-ctx",	required_argument, NULL, OPT_KEY + 1 },
	{ "max-jobs-global",	required_argument, NULL, OPT_KEY + 2 },
	{ "max-pinned-mb",	required_argument, NULL, OPT_KEY + 3 },
	{ "engine-threads",	required_argument, NULL, OPT_KEY + 4 },
	{ "node",		required_argument, NULL, OPT_KEY + 5 },
	{ "threads",		required_argument, NULL, OPT_KEY + 6 },
	{ "cpu-affinity",	required_argument, NULL, OPT_KEY + 7 },
	{ "quantize",		required_argument, NULL, OPT_KEY + 8 },
	{ "cpu-max-batch-size",	required_argument, NULL, OPT_KEY + 9 },
	{ "max-weight-sets",	required_argument, NULL, OPT_KEY + 10 },
	{ "model-dir",		required_argument, NULL, OPT_KEY + 11 },
	{ "preload",		required_argument, NULL, OPT_KEY + 12 },
	{ "max-pinned-user-mb",	required_argument, NULL, OPT_KEY + 13 },
	{ "max-bufs-ctx",	required_argument, NULL, OPT_KEY + 14 },
	{ "max-bufs-user",	required_argument, NULL, OPT_KEY + 15 },
	{ "max-ctx-user",	required_argument, NULL, OPT_KEY + 16 },
	{ "engine-poll-us",	required_argument, NULL, OPT_KEY + 17 },
	{ "max-jobs-user",	required_argument, NULL, OPT_KEY + 18 },
	{ "worker-spin-us",	required_argument, NULL, OPT_KEY + 19 },
	{ "print-placement",	required_argument, NULL, OPT_PLACEMENT },
	{ "config",		required_argument, NULL, OPT_CONFIG },
	{ "no-engine",		no_argument,	   NULL, OPT_NO_ENGINE },
	{ "engine-only",	no_argument,	   NULL, OPT_ENGINE_ONLY },
	{ "userspace",		no_argument,	   NULL, OPT_USERSPACE },
	{ "foreground",		no_argument,	   NULL, 'f' },
	{ "help",		no_argument,	   NULL, 'h' },
	{ "version",		no_argument,	   NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
"Usage: %s [OPTION]...\n"
"sysHAX daemon: the userspace job broker (when there is no /dev/syshax)\n"
"and the job engine.\n"
"\n"
"Modes (default: engine against /dev/syshax if it exists, else broker\n"
"plus engine threads connected to it):\n"
"      --no-engine          run only the broker\n"
"      --engine-only        run only an engine (module or running broker)\n"
"      --userspace          broker plus engines even if /dev/syshax exists\n"
"  -f, --foreground         stay in the foreground, log to stderr\n"
"\n"
"Settings (also keys of the config file, with '_' for '-'):\n"
"      --config FILE        config file (default " SHXD_CONFIG_FILE ")\n"
"      --socket PATH        broker socket (default: /run/syshax/syshaxd.sock\n"
"                           as root, else $XDG_RUNTIME_DIR/syshax/syshaxd.sock)\n"
"      --max-jobs-ctx N     queued jobs per client (default %u)\n"
"      --max-jobs-global N  queued jobs in all (default %u)\n"
"      --max-jobs-user N    queued jobs of one user (default 0: half of\n"
"                           max-jobs-global)\n"
"      --max-pinned-mb N    buffer memory in all, MiB (default 0: half of RAM)\n"
"      --max-pinned-user-mb N  buffer memory of one user's buffers, MiB\n"
"                           (default 0: half of max-pinned-mb); a client's\n"
"                           RLIMIT_MEMLOCK applies too\n"
"      --max-bufs-ctx N     buffer handles per client (default %u)\n"
"      --max-bufs-user N    buffers and exported fds per user (default %u)\n"
"      --max-ctx-user N     open clients per user (default %u)\n"
"      --engine-threads N   engine threads (default %u)\n"
"      --node N             NUMA node the engine threads run on (default -1)\n"
"      --engine-poll-us N   with shared rings, poll them N µs before sleeping\n"
"                           (broker, engines, and the CPU engine's workers\n"
"                           if longer than --worker-spin-us; default 0:\n"
"                           never; keeps CPUs awake, saves the wake-ups of\n"
"                           back-to-back jobs)\n"
"\n"
"CPU engine (compute jobs):\n"
"      --threads N          worker threads in all, spread evenly over the\n"
"                           NUMA nodes (key omp_num_threads, environment\n"
"                           OMP_NUM_THREADS; default: one per allowed CPU)\n"
"      --cpu-affinity LIST  worker CPUs, e.g. 0-159:2,1 (key cpu_affinity,\n"
"                           CUSTOM_CPU_AFFINITY; default: allowed CPUs)\n"
"      --worker-spin-us N   workers poll up to N µs for the next run before\n"
"                           they sleep, yielding meanwhile, as long as that\n"
"                           catches runs (default %u; 0: sleep at once)\n"
"      --quantize Q         none, q8_0 or q4_0: what float weights become on\n"
"                           load (key quantize, SYSHAX_QUANTIZE; default none)\n"
"      --cpu-max-batch-size N  tokens batched into one run (default %u)\n"
"      --max-weight-sets N  weight sets loaded at once (default %u)\n"
"      --model-dir DIR      where WEIGHTS_LOAD may read files (default none:\n"
"                           file loads are refused)\n"
"      --preload FILE       load this weights file (under model-dir) at start\n"
"      --print-placement FILE  load FILE, print each tensor's bytes per NUMA\n"
"                           node and where its pages are, and exit\n"
"  -h, --help               this text\n"
"  -V, --version            version\n"
"\n"
"The environment overrides the config file; options override both.\n"
"See syshaxd(8) and docs/engine.md.\n",
		prog, DEF_MAX_JOBS_CTX, DEF_MAX_JOBS_GLOBAL,
		SHXD_DEF_MAX_BUFS_CTX, SHXD_DEF_MAX_BUFS_USER,
		SHXD_DEF_MAX_CTX_USER, DEF_ENGINE_THREADS, DEF_WORKER_SPIN_US,
		DEF_MAX_BATCH, DEF_MAX_WSETS);
}

static const char *set_error(int err)
{
	return err == -ENOENT ? "unknown key" :
	       err == -ERANGE ? "value out of range" : "invalid value";
}

int shxd_config_parse(struct shxd_config *cfg, int argc, char **argv,
		      FILE *out, FILE *err)
{
	const char *path = SHXD_CONFIG_FILE, *env = NULL, *key = NULL;
	bool path_given = false;
	int c, ret, line;

	shxd_config_defaults(cfg);

	/* Errors are ours to report, to err. First pass: only what decides
	 * which file to read, or to read none. */
	opterr = 0;
	optind = 0;
	while ((c = getopt_long(argc, argv, "fhV", options, NULL)) != -1) {
		if (c == 'h') {
			usage(out, argv[0]);
			return SHXD_EXIT_OK;
		}
		if (c == 'V') {
			fprintf(out, "syshaxd %s (UAPI %d)\n", SHXD_VERSION,
				SYSHAX_UAPI_VERSION);
			return SHXD_EXIT_OK;
		}
		if (c == OPT_CONFIG) {
			path = optarg;
			path_given = true;
		}
	}

	ret = shxd_config_load(cfg, path, &line);
	if (ret == -ENOENT && !path_given && line == 0)
		ret = 0;	/* no default file: defaults apply */
	if (ret) {
		if (line)
			fprintf(err, "%s:%d: %s: %s\n", path, line,
				set_error(ret), g_bad);
		else
			fprintf(err, "%s: %s\n", path, strerror(-ret));
		return -EINVAL;
	}
	ret = shxd_config_env(cfg, &env, &key);
	if (ret) {
		fprintf(err, "%s=%s: %s; allowed: %s\n", env, getenv(env),
			set_error(ret), shxd_config_allowed(key));
		return -EINVAL;
	}

	optind = 0;
	while ((c = getopt_long(argc, argv, "fhV", options, NULL)) != -1) {
		if (c >= OPT_KEY && c < OPT_KEY + (int)(sizeof(g_keys) /
						       sizeof(g_keys[0]))) {
			key = g_keys[c - OPT_KEY].key;
			ret = shxd_config_set(cfg, key, optarg);
			if (ret) {
				fprintf(err, "%s: %s = '%s': %s; allowed: %s\n",
					argv[0], key, optarg, set_error(ret),
					g_keys[c - OPT_KEY].allowed);
				return -EINVAL;
			}
			continue;
		}
		switch (c) {
		case OPT_CONFIG:
			break;
		case OPT_PLACEMENT:
			if (set_str(cfg->print_placement,
				    sizeof(cfg->print_placement), optarg)) {
				fprintf(err, "%s: --print-placement: path too "
					"long\n", argv[0]);
				return -EINVAL;
			}
			break;
		case OPT_NO_ENGINE:
			cfg->mode = SHXD_MODE_NO_ENGINE;
			break;
		case OPT_ENGINE_ONLY:
			cfg->mode = SHXD_MODE_ENGINE_ONLY;
			break;
		case OPT_USERSPACE:
			cfg->mode = SHXD_MODE_USERSPACE;
			break;
		case 'f':
			cfg->foreground = true;
			break;
		default:
			fprintf(err, "%s: bad option or missing value: '%s'\n"
				"Try '%s --help'.\n", argv[0],
				argv[optind - 1], argv[0]);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(err, "%s: unexpected argument '%s'\n", argv[0],
			argv[optind]);
		return -EINVAL;
	}
	return SHXD_RUN;
}
