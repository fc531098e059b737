/* SPDX-License-Identifier: MIT */
/*
 * syshaxd configuration: built-in defaults, then /etc/syshax/syshaxd.conf
 * (or --config FILE), then the command line, each overriding the one before.
 */
#ifndef SHXD_CONFIG_H
#define SHXD_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>

#define SHXD_CONFIG_FILE	"/etc/syshax/syshaxd.conf"

enum shxd_mode {
	SHXD_MODE_AUTO,		/* engine on /dev/syshax, else broker + engines */
	SHXD_MODE_NO_ENGINE,	/* broker only */
	SHXD_MODE_ENGINE_ONLY,	/* engine only, against the module or a broker */
	SHXD_MODE_USERSPACE,	/* broker + engines even with /dev/syshax */
};

struct shxd_config {
	enum shxd_mode mode;
	bool foreground;
	/* Broker socket; empty: the library's default for this user. An
	 * engine-only daemon connects here when it is set. */
	char socket[PATH_MAX];
	unsigned int max_jobs_ctx;	/* queued jobs per client context */
	unsigned int max_jobs_global;	/* queued jobs in all */
	unsigned int max_jobs_user;	/* of one uid; 0: half the global */
	unsigned long long max_pinned_mb;	/* all buffers; 0: half of RAM */
	/* One user's buffers; 0: half of max_pinned_mb. */
	unsigned long long max_pinned_user_mb;
	unsigned int max_bufs_ctx;	/* handles per client context */
	unsigned int max_bufs_user;	/* buffers and exports per uid */
	unsigned int max_ctx_user;	/* contexts per uid */
	/* µs the broker loop and the engines poll the shared rings before
	 * they sleep; 0: never (polling takes a CPU from the compute). */
	unsigned int engine_poll_us;
	unsigned int engine_threads;
	int node;			/* NUMA node of the engines, -1: any */
	/* The CPU engine. The sysHAX knobs keep their names and meaning:
	 * OMP_NUM_THREADS, CUSTOM_CPU_AFFINITY, SYSHAX_QUANTIZE. */
	unsigned int omp_num_threads;	/* worker threads; 0: one per CPU */
	char cpu_affinity[256];		/* "a-b:step,c"; "": allowed CPUs */
	/* The most µs workers poll for the next run before they sleep (the
	 * longer of this and engine_poll_us); 0: never. */
	unsigned int worker_spin_us;
	int quantize;			/* enum shxk_type; SHXK_F32: none */
	unsigned int cpu_max_batch_size; /* tokens per batched run */
	unsigned int max_weight_sets;
	char model_dir[PATH_MAX];	/* WEIGHTS_LOAD files; "": none */
	char preload[PATH_MAX];		/* a weights file loaded at start */
	/* --print-placement FILE: load it, print where it went, exit. */
	char print_placement[PATH_MAX];
};

/* What shxd_config_parse() asks main to do. */
enum shxd_parse_result {
	SHXD_RUN,
	SHXD_EXIT_OK,		/* --help or --version was printed */
};

void shxd_config_defaults(struct shxd_config *cfg);

/* Sets one key (as spelled in the file) from its text value: 0, -ENOENT for
 * an unknown key, -EINVAL or -ERANGE for a bad value. */
int shxd_config_set(struct shxd_config *cfg, const char *key,
		    const char *value);

/* Reads "key = value" lines ('#' starts a comment). Returns 0, -errno from
 * fopen, or the shxd_config_set() error of the first bad line, whose
 * number goes to *line. */
int shxd_config_load(struct shxd_config *cfg, const char *path, int *line);

/* What a key accepts, for messages ("a whole number >= 1", ...); NULL for
 * an unknown key. */
const char *shxd_config_allowed(const char *key);

/* Reads the environment knobs (OMP_NUM_THREADS, CUSTOM_CPU_AFFINITY,
 * SYSHAX_QUANTIZE); on an error *env and *key name the variable that
 * failed and the key it sets. */
int shxd_config_env(struct shxd_config *cfg, const char **env,
		    const char **key);

/* The whole command line: defaults, the config file, the environment,
 * then the options. Messages go to err. Returns SHXD_RUN, SHXD_EXIT_OK or
 * -EINVAL (usage error, already reported). */
int shxd_config_parse(struct shxd_config *cfg, int argc, char **argv,
		      FILE *out, FILE *err);

#endif /* SHXD_CONFIG_H */
