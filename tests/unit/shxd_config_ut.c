// SPDX-License-Identifier: MIT
/* syshaxd configuration: defaults, keys, file, environment, command line. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <CUnit/Basic.h>

#include "../t_cunit.h"

#include "broker/broker.h"
#include "config.h"
#include "engine/cpu.h"

static char g_path[] = "/tmp/shxd_config_ut.XXXXXX";

static void write_conf(const char *text)
{
	FILE *f = fopen(g_path, "w");

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	fclose(f);
}

static void t_defaults(void)
{
	struct shxd_config c;

	shxd_config_defaults(&c);
	CU_ASSERT_EQUAL(c.mode, SHXD_MODE_AUTO);
	CU_ASSERT_FALSE(c.foreground);
	CU_ASSERT_STRING_EQUAL(c.socket, "");
	CU_ASSERT_EQUAL(c.max_jobs_ctx, SHXD_DEF_MAX_JOBS_CTX);
	CU_ASSERT_EQUAL(c.max_jobs_global, SHXD_DEF_MAX_JOBS_GLOBAL);
	CU_ASSERT_EQUAL(c.max_pinned_mb, 0);
	CU_ASSERT_EQUAL(c.engine_threads, 1);
	CU_ASSERT_EQUAL(c.node, -1);
}

static void t_set(void)
{
	struct shxd_config c;
	char longpath[PATH_MAX + 8];

	shxd_config_defaults(&c);
	CU_ASSERT_EQUAL(shxd_config_set(&c, "socket", "/run/x.sock"), 0);
	CU_ASSERT_STRING_EQUAL(c.socket, "/run/x.sock");
	CU_ASSERT_EQUAL(shxd_config_set(&c, "max_jobs_ctx", "17"), 0);
	CU_ASSERT_EQUAL(c.max_jobs_ctx, 17);
	CU_ASSERT_EQUAL(shxd_config_set(&c, "max_jobs_global", "0256"), 0);
	CU_ASSERT_EQUAL(c.max_jobs_global, 256);
	CU_ASSERT_EQUAL(shxd_config_set(&c, "max_pinned_mb", "2048"), 0);
	CU_ASSERT_EQUAL(c.max_pinned_mb, 2048);
	CU_ASSERT_EQUAL(shxd_config_set(&c, "engine_threads", "4"), 0);
	CU_ASSERT_EQUAL(c.engine_threads, 4);
	CU_ASSERT_EQUAL(shxd_config_set(&c, "node", "1"), 0);
	CU_ASSERT_EQUAL(c.node, 1);
	CU_ASSERT_EQUAL(shxd_config_set(&c, "node", "-1"), 0);
	CU_ASSERT_EQUAL(c.node, -1);

	CU_ASSERT_EQUAL(shxd_config_set(&c, "nodes", "1"), -ENOENT);
	CU_ASSERT_EQUAL(shxd_config_set(&c, "max_jobs_ctx", "abc"), -EINVAL);
	CU_ASSERT_EQUAL(shxd_config_set(&c, "max_jobs_ctx", "12x"), -EINVAL);
	CU_ASSERT_EQUAL(shxd_config_set(&c, "max_jobs_ctx", "-5"), -EINVAL);
	CU_ASSERT_EQUAL(shxd_config_set(&c, "max_jobs_ctx", ""), -EINVAL);
	CU_ASSERT_EQUAL(shxd_config_set(&c, "max_jobs_ctx", "0"), -ERANGE);
	CU_ASSERT_EQUAL(shxd_config_set(&c, "max_jobs_ctx", "4294967296"),
			-ERANGE);
	CU_ASSERT_EQUAL(shxd_config_set(&c, "engine_threads", "0"), -ERANGE);
	CU_ASSERT_EQUAL(shxd_config_set(&c, "node", "16"), -ERANGE);
	CU_ASSERT_EQUAL(shxd_config_set(&c, "node", "-2"), -EINVAL);
	CU_ASSERT_EQUAL(shxd_config_set(&c, "max_pinned_mb",
					"99999999999999999999"), -ERANGE);
	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[sizeof(longpath) - 1] = '\0';
	CU_ASSERT_EQUAL(shxd_config_set(&c, "socket", longpath), -ERANGE);
	/* Failed sets change nothing. */
	CU_ASSERT_EQUAL(c.max_jobs_ctx, 17);
	CU_ASSERT_EQUAL(c.engine_threads, 4);
	CU_ASSERT_STRING_EQUAL(c.socket, "/run/x.sock");
}

static void t_load(void)
{
	struct shxd_config c;
	int line;

	shxd_config_defaults(&c);
	write_conf("# syshaxd.conf\n\n  socket = /tmp/a b.sock  \n"
		   "max_jobs_ctx=9 # per client\nnode =0\n");
	CU_ASSERT_EQUAL(shxd_config_load(&c, g_path, &line), 0);
	CU_ASSERT_STRING_EQUAL(c.socket, "/tmp/a b.sock");
	CU_ASSERT_EQUAL(c.max_jobs_ctx, 9);
	CU_ASSERT_EQUAL(c.node, 0);

	write_conf("engine_threads = 2\nbogus = 1\n");
	CU_ASSERT_EQUAL(shxd_config_load(&c, g_path, &line), -ENOENT);
	CU_ASSERT_EQUAL(line, 2);
	CU_ASSERT_EQUAL(c.engine_threads, 2);
	write_conf("\n\nmax_jobs_global\n");
	CU_ASSERT_EQUAL(shxd_config_load(&c, g_path, &line), -EINVAL);
	CU_ASSERT_EQUAL(line, 3);
	write_conf("node = 99\n");
	CU_ASSERT_EQUAL(shxd_config_load(&c, g_path, &line), -ERANGE);
	CU_ASSERT_EQUAL(line, 1);
	CU_ASSERT_EQUAL(shxd_config_load(&c, "/nonexistent/syshaxd.conf",
					 &line), -ENOENT);
	CU_ASSERT_EQUAL(line, 0);
}

/* Runs shxd_config_parse() on a NULL-terminated argv; output discarded. */
/* Parses argv; the output text in *out, the error text in *err (or
 * dropped when err is NULL). */
static int parse_to(struct shxd_config *c, char **argv, char **out, char **err)
{
	size_t outlen, errlen;
	FILE *o = open_memstream(out, &outlen);
	FILE *e = err ? open_memstream(err, &errlen) : fopen("/dev/null", "w");
	int argc = 0, ret;

	while (argv[argc])
		argc++;
	ret = shxd_config_parse(c, argc, argv, o, e);
	fclose(o);
	fclose(e);
	return ret;
}

static int parse(struct shxd_config *c, char **argv, char **out)
{
	return parse_to(c, argv, out, NULL);
}

static void t_parse(void)
{
	struct shxd_config c;
	char *out = NULL;

	write_conf("max_jobs_ctx = 5\nmax_jobs_global = 50\n");
	{
		char *argv[] = { "syshaxd", "--config", g_path,
				 "--max-jobs-ctx", "7", "--no-engine", "-f",
				 "--socket", "/tmp/s", NULL };

		CU_ASSERT_EQUAL(parse(&c, argv, &out), SHXD_RUN);
	}
	/* The command line wins over the file, the file over defaults. */
	CU_ASSERT_EQUAL(c.max_jobs_ctx, 7);
	CU_ASSERT_EQUAL(c.max_jobs_global, 50);
	CU_ASSERT_EQUAL(c.mode, SHXD_MODE_NO_ENGINE);
	CU_ASSERT_TRUE(c.foreground);
	CU_ASSERT_STRING_EQUAL(c.socket, "/tmp/s");
	free(out);
	{
		char *argv[] = { "syshaxd", "--config", g_path,
				 "--engine-only", "--node", "1",
				 "--worker-spin-us", "0", NULL };

		CU_ASSERT_EQUAL(parse(&c, argv, &out), SHXD_RUN);
		CU_ASSERT_EQUAL(c.mode, SHXD_MODE_ENGINE_ONLY);
		CU_ASSERT_EQUAL(c.node, 1);
		CU_ASSERT_EQUAL(c.worker_spin_us, 0);
		free(out);
	}
	{
		char *argv[] = { "syshaxd", "--config", g_path, "--help",
				 NULL };

		CU_ASSERT_EQUAL(parse(&c, argv, &out), SHXD_EXIT_OK);
		CU_ASSERT_PTR_NOT_NULL(strstr(out, "--engine-only"));
		free(out);
	}
	{
		char *argv[] = { "syshaxd", "-V", NULL };

		CU_ASSERT_EQUAL(parse(&c, argv, &out), SHXD_EXIT_OK);
		CU_ASSERT_EQUAL(strncmp(out, "syshaxd ", 8), 0);
		free(out);
	}
	{
		char *argv[] = { "syshaxd", "--config", g_path, "--frob",
				 NULL };

		CU_ASSERT_EQUAL(parse(&c, argv, &out), -EINVAL);
		free(out);
	}
	{
		char *argv[] = { "syshaxd", "--config", g_path,
				 "--engine-threads", "0", NULL };

		CU_ASSERT_EQUAL(parse(&c, argv, &out), -EINVAL);
		free(out);
	}
	{
		char *argv[] = { "syshaxd", "--config", g_path, "extra",
				 NULL };

		CU_ASSERT_EQUAL(parse(&c, argv, &out), -EINVAL);
		free(out);
	}
	{
		char *argv[] = { "syshaxd", "--config", "/nonexistent/x.conf",
				 NULL };

		CU_ASSERT_EQUAL(parse(&c, argv, &out), -EINVAL);
		free(out);
	}
}

/* As parse(), with the error text in *err. */
static int parse_err(struct shxd_config *c, char **argv, char **err)
{
	char *out = NULL;
	int ret = parse_to(c, argv, &out, err);

	free(out);
	return ret;
}

static void t_engine_keys(void)
{
	struct shxd_config c;
	char *err = NULL;

	shxd_config_defaults(&c);
	CU_ASSERT_EQUAL(c.quantize, SHXK_F32);
	CU_ASSERT_EQUAL(c.cpu_max_batch_size, SHXD_DEF_MAX_BATCH);
	CU_ASSERT_EQUAL(c.max_weight_sets, SHXD_DEF_MAX_WSETS);
	CU_ASSERT_STRING_EQUAL(c.model_dir, "");
	CU_ASSERT_EQUAL(shxd_config_set(&c, "quantize", "q4_0"), 0);
	CU_ASSERT_EQUAL(c.quantize, SHXK_Q4_0);
	CU_ASSERT_EQUAL(shxd_config_set(&c, "quantize", "q8_0"), 0);
	CU_ASSERT_EQUAL(c.quantize, SHXK_Q8_0);
	CU_ASSERT_EQUAL(shxd_config_set(&c, "quantize", "none"), 0);
	CU_ASSERT_EQUAL(c.quantize, SHXK_F32);
	CU_ASSERT_EQUAL(shxd_config_set(&c, "quantize", "q4_k"), -EINVAL);
	CU_ASSERT_EQUAL(shxd_config_set(&c, "cpu_max_batch_size", "64"), 0);
	CU_ASSERT_EQUAL(c.cpu_max_batch_size, 64);
	CU_ASSERT_EQUAL(shxd_config_set(&c, "cpu_max_batch_size", "0"),
			-ERANGE);
	CU_ASSERT_EQUAL(shxd_config_set(&c, "cpu_max_batch_size", "4097"),
			-ERANGE);
	CU_ASSERT_EQUAL(c.cpu_max_batch_size, 64);
	CU_ASSERT_EQUAL(shxd_config_set(&c, "cpu_affinity", "0-159:2,1"), 0);
	CU_ASSERT_STRING_EQUAL(c.cpu_affinity, "0-159:2,1");
	CU_ASSERT_EQUAL(shxd_config_set(&c, "cpu_affinity", "3-1"), -EINVAL);
	CU_ASSERT_EQUAL(shxd_config_set(&c, "cpu_affinity", "1,1"), -EINVAL);
	CU_ASSERT_EQUAL(shxd_config_set(&c, "cpu_affinity", "0-4:0"), -EINVAL);
	CU_ASSERT_EQUAL(shxd_config_set(&c, "omp_num_threads", "0"), -ERANGE);
	/* Workers wait for the next run by default; 0 is "at once". */
	CU_ASSERT(c.worker_spin_us > 0);
	CU_ASSERT_EQUAL(shxd_config_set(&c, "worker_spin_us", "0"), 0);
	CU_ASSERT_EQUAL(c.worker_spin_us, 0);
	CU_ASSERT_EQUAL(shxd_config_set(&c, "worker_spin_us", "1000000"), 0);
	CU_ASSERT_EQUAL(c.worker_spin_us, 1000000);
	CU_ASSERT_EQUAL(shxd_config_set(&c, "worker_spin_us", "1000001"),
			-ERANGE);
	CU_ASSERT_EQUAL(c.worker_spin_us, 1000000);
	CU_ASSERT_EQUAL(shxd_config_set(&c, "max_weight_sets", "2"), 0);
	CU_ASSERT_EQUAL(shxd_config_set(&c, "model_dir", "/srv/models"), 0);
	CU_ASSERT_STRING_EQUAL(c.model_dir, "/srv/models");
	CU_ASSERT_EQUAL(shxd_config_set(&c, "preload", "m.gguf"), 0);
	CU_ASSERT_STRING_EQUAL(c.preload, "m.gguf");

	/* A bad value's message names the key, the value, what is allowed. */
	write_conf("");
	{
		char *argv[] = { "syshaxd", "--config", g_path,
				 "--cpu-max-batch-size", "0", NULL };

		CU_ASSERT_EQUAL(parse_err(&c, argv, &err), -EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "cpu_max_batch_size = '0'"));
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "allowed: a whole number "
					      "1..4096"));
		free(err);
	}
	write_conf("quantize = q3\n");
	{
		char *argv[] = { "syshaxd", "--config", g_path, NULL };

		CU_ASSERT_EQUAL(parse_err(&c, argv, &err), -EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, ":1: invalid value: "
					      "quantize = 'q3'; allowed: none"));
		free(err);
	}
	write_conf("");
	setenv("SYSHAX_QUANTIZE", "q8_0", 1);
	{
		char *argv[] = { "syshaxd", "--config", g_path, NULL };

		CU_ASSERT_EQUAL(parse_err(&c, argv, &err), SHXD_RUN);
		CU_ASSERT_EQUAL(c.quantize, SHXK_Q8_0);
		free(err);
		setenv("SYSHAX_QUANTIZE", "int4", 1);
		CU_ASSERT_EQUAL(parse_err(&c, argv, &err), -EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "SYSHAX_QUANTIZE=int4"));
		free(err);
	}
	unsetenv("SYSHAX_QUANTIZE");
}

static void t_env(void)
{
	struct shxd_config c;
	char *out = NULL;
	char *argv[] = { "syshaxd", "--config", g_path, NULL };

	write_conf("");
	setenv("OMP_NUM_THREADS", "4", 1);
	setenv("CUSTOM_CPU_AFFINITY", "0-159:2", 1);
	CU_ASSERT_EQUAL(parse(&c, argv, &out), SHXD_RUN);
	CU_ASSERT_EQUAL(c.omp_num_threads, 4);
	CU_ASSERT_STRING_EQUAL(c.cpu_affinity, "0-159:2");
	free(out);
	setenv("OMP_NUM_THREADS", "four", 1);
	CU_ASSERT_EQUAL(parse(&c, argv, &out), -EINVAL);
	free(out);
	unsetenv("OMP_NUM_THREADS");
	unsetenv("CUSTOM_CPU_AFFINITY");
}

int main(void)
{
	static const struct t_test tests[] = {
		{ "defaults", t_defaults },
		{ "one key", t_set },
		{ "config file", t_load },
		{ "command line", t_parse },
		{ "environment", t_env },
		{ "CPU engine keys", t_engine_keys },
	};
	int fd = mkstemp(g_path);
	int ret;

	if (fd < 0)
		return 1;
	close(fd);
	ret = T_RUN_SUITE("shxd_config", NULL, NULL, tests);
	unlink(g_path);
	return ret;
}
