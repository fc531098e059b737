// SPDX-License-Identifier: MIT
/* syshaxd configuration: defaults, config file, environment, command line. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "broker/broker.h"
#include "syshax/rt.h"

#ifndef SHXD_VERSION
#define SHXD_VERSION "0.0.0"
#endif

/* The broker's defaults mirror the module's parameters. */
#define DEF_MAX_JOBS_CTX	SHXD_DEF_MAX_JOBS_CTX
#define DEF_MAX_JOBS_GLOBAL	SHXD_DEF_MAX_JOBS_GLOBAL
#define DEF_MAX_PINNED_MB	0	/* half of RAM */
#define DEF_ENGINE_THREADS	1

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

void shxd_config_defaults(struct shxd_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->mode = SHXD_MODE_AUTO;
	cfg->max_jobs_ctx = DEF_MAX_JOBS_CTX;
	cfg->max_jobs_global = DEF_MAX_JOBS_GLOBAL;
	cfg->max_pinned_mb = DEF_MAX_PINNED_MB;
	cfg->engine_threads = DEF_ENGINE_THREADS;
	cfg->node = -1;
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
	if (!strcmp(key, "engine_threads"))
		return set_uint(&cfg->engine_threads, value, 1);
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

/* Strips leading and trailing blanks in place. */
static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

int shxd_config_load(struct shxd_config *cfg, const char *path, int *line)
{
	char buf[PATH_MAX + 64];
	FILE *f = fopen(path, "re");
	int ret = 0;

	*line = 0;
	if (!f)
		return -errno;
	while (fgets(buf, sizeof(buf), f)) {
		char *hash = strchr(buf, '#');
		char *eq, *key;

		++*line;
		if (hash)
			*hash = '\0';
		key = trim(buf);
		if (!*key)
			continue;
		eq = strchr(key, '=');
		if (!eq) {
			ret = -EINVAL;
			break;
		}
		*eq = '\0';
		ret = shxd_config_set(cfg, trim(key), trim(eq + 1));
		if (ret)
			break;
	}
	fclose(f);
	return ret;
}

int shxd_config_env(struct shxd_config *cfg)
{
	const char *omp = getenv("OMP_NUM_THREADS");
	const char *aff = getenv("CUSTOM_CPU_AFFINITY");
	int ret;

	if (omp && *omp) {
		ret = set_uint(&cfg->omp_num_threads, omp, 1);
		if (ret)
			return ret;
	}
	if (aff)
		return set_str(cfg->cpu_affinity, sizeof(cfg->cpu_affinity),
			       aff);
	return 0;
}

/* Options that set a config key carry the key's index in this table. */
static const char *const opt_keys[] = {
	"socket", "max_jobs_ctx", "max_jobs_global", "max_pinned_mb",
	"engine_threads", "node",
};

enum {
	OPT_KEY = 0x100,	/* OPT_KEY + index in opt_keys */
	OPT_CONFIG = 0x200,
	OPT_NO_ENGINE,
	OPT_ENGINE_ONLY,
	OPT_USERSPACE,
};

static const struct option options[] = {
	{ "socket",		required_argument, NULL, OPT_KEY + 0 },
	{ "max-jobs-ctx",	required_argument, NULL, OPT_KEY + 1 },
	{ "max-jobs-global",	required_argument, NULL, OPT_KEY + 2 },
	{ "max-pinned-mb",	required_argument, NULL, OPT_KEY + 3 },
	{ "engine-threads",	required_argument, NULL, OPT_KEY + 4 },
	{ "node",		required_argument, NULL, OPT_KEY + 5 },
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
"      --max-pinned-mb N    buffer memory in all, MiB (default 0: half of RAM)\n"
"      --engine-threads N   engine threads (default %u)\n"
"      --node N             NUMA node the engines run on (default -1: any)\n"
"  -h, --help               this text\n"
"  -V, --version            version\n"
"\n"
"Environment: OMP_NUM_THREADS and CUSTOM_CPU_AFFINITY are read and\n"
"reported; the compute ops will use them.\n",
		prog, DEF_MAX_JOBS_CTX, DEF_MAX_JOBS_GLOBAL, DEF_ENGINE_THREADS);
}

static const char *set_error(int err)
{
	return err == -ENOENT ? "unknown key" :
	       err == -ERANGE ? "value out of range" : "invalid value";
}

int shxd_config_parse(struct shxd_config *cfg, int argc, char **argv,
		      FILE *out, FILE *err)
{
	const char *path = SHXD_CONFIG_FILE;
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
			fprintf(err, "%s:%d: %s\n", path, line, set_error(ret));
		else
			fprintf(err, "%s: %s\n", path, strerror(-ret));
		return -EINVAL;
	}
	ret = shxd_config_env(cfg);
	if (ret) {
		fprintf(err, "OMP_NUM_THREADS / CUSTOM_CPU_AFFINITY: %s\n",
			set_error(ret));
		return -EINVAL;
	}

	optind = 0;
	while ((c = getopt_long(argc, argv, "fhV", options, NULL)) != -1) {
		if (c >= OPT_KEY && c < OPT_KEY + (int)(sizeof(opt_keys) /
						       sizeof(opt_keys[0]))) {
			ret = shxd_config_set(cfg, opt_keys[c - OPT_KEY],
					      optarg);
			if (ret) {
				fprintf(err, "%s: --%s %s: %s\n", argv[0],
					opt_keys[c - OPT_KEY], optarg,
					set_error(ret));
				return -EINVAL;
			}
			continue;
		}
		switch (c) {
		case OPT_CONFIG:
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
