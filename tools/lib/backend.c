// SPDX-License-Identifier: MIT
/* The backend, one model and mapped buffers (backend.h). */
#include "backend.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "beside.h"
#include "stepjob.h"

int be_job(struct syshax *sh, const struct syshax_job *job,
	   struct syshax_completion *c)
{
	int ret = syshax_submit(sh, job, 1);

	if (ret < 0)
		return ret;
	ret = syshax_wait(sh, c, 1, 1, -1);
	if (ret < 0)
		return ret;
	return c->status;
}

int be_locate(struct backend *b)
{
	char real[PATH_MAX];

	if (!realpath(b->o->model, real)) {
		int ret = -errno;

		fprintf(stderr, "%s: %s: %s\n", b->o->prog, b->o->model,
			strerror(-ret));
		return ret;
	}
	snprintf(b->real, sizeof(b->real), "%s", real);
	snprintf(b->dir, sizeof(b->dir), "%s", dirname(real));
	return 0;
}

/* MODEL_LOAD's path. */
static int set_path(struct backend *b, const char *path)
{
	if (strlen(path) >= sizeof(b->path)) {
		fprintf(stderr, "%s: %s: path longer than %zu bytes\n",
			b->o->prog, path, sizeof(b->path) - 1);
		return -ENAMETOOLONG;
	}
	snprintf(b->path, sizeof(b->path), "%s", path);
	return 0;
}

/* A private daemon: all of syshaxd, or an engine for the module (sh open). */
static int start_private(struct backend *b, bool engine_only)
{
	static const char *const rel[] = { "syshaxd", "../sbin/syshaxd" };
	char exe[PATH_MAX], threads[16];
	char *extra[] = { "--model-dir", b->dir, NULL, NULL, NULL };
	int ret = be_locate(b);

	if (!ret)
		ret = set_path(b, b->real);
	if (ret)
		return ret;
	if (b->o->syshaxd)
		snprintf(exe, sizeof(exe), "%s", b->o->syshaxd);
	else
		beside_path(exe, sizeof(exe), "syshaxd", rel, 2);
	if (b->o->threads) {
		snprintf(threads, sizeof(threads), "%u", b->o->threads);
		extra[2] = "--threads";
		extra[3] = threads;
	}
	if (engine_only)
		ret = privd_start_engine(exe, extra, "/dev/syshax", &b->d, b->sh);
	else
		ret = privd_start_userspace(exe, extra, &b->d, &b->sh);
	if (ret)
		fprintf(stderr, "%s: cannot start a private %s: %s\n",
			b->o->prog, exe, syshax_strerror(ret));
	return ret;
}

/* A backend found running: the model path goes as given, but the module
 * with no engine attached gets a private one. */
static int use_running(struct backend *b)
{
	struct syshax_stats_args st;
	int ret = syshax_stats(b->sh, &st);

	if (ret) {
		fprintf(stderr, "%s: stats: %s\n", b->o->prog,
			syshax_strerror(ret));
		return ret;
	}
	if (!st.engines && syshax_backend(b->sh) == SYSHAX_BACKEND_KERNEL)
		return start_private(b, true);
	if (!st.engines) {
		fprintf(stderr, "%s: the running syshaxd has no engine "
			"(--no-engine?); start one, or use --private\n",
			b->o->prog);
		return -ENODEV;
	}
	return set_path(b, b->o->model);
}

int be_open(struct backend *b, const struct be_opts *o)
{
	int ret;

	memset(b, 0, sizeof(*b));
	b->o = o;
	if (!o->private) {
		ret = syshax_open(&b->sh, NULL);
		if (!ret)
			return use_running(b);
		/* Nothing listening where it looks: start our own. */
		if (getenv("SYSHAX_DEVICE") ||
		    (ret != -ENOENT && ret != -ECONNREFUSED)) {
			fprintf(stderr, "%s: cannot open the sysHAX backend: "
				"%s\n  tried: %s\n  check $SYSHAX_DEVICE, or "
				"use --private; run syshax-check for what is "
				"missing\n", o->prog, syshax_strerror(ret),
				syshax_open_tried());
			return ret;
		}
	}
	return start_private(b, false);
}

int be_buf(struct backend *b, uint64_t size, struct syshax_buffer *buf,
	   const char *what)
{
	int ret = syshax_buf_alloc(b->sh, size, -1, SYSHAX_BUF_ALLOW_SMALL |
				   SYSHAX_BUF_ALLOW_REMOTE, buf);

	if (!ret) {
		ret = syshax_buf_map(b->sh, buf);
		if (ret)
			syshax_buf_free(b->sh, buf);
	}
	if (ret)
		memset(buf, 0, sizeof(*buf));
	if (ret && what) {
		fprintf(stderr, "%s: %s buffer (%.1f MiB): %s\n", b->o->prog,
			what, size / 1048576.0, syshax_strerror(ret));
		if (ret == -ENOMEM)
			fprintf(stderr, "  over max_pinned_mb / "
				"max_pinned_user_mb / RLIMIT_MEMLOCK (see "
				"syshax-check)\n");
	}
	return ret;
}

static void load_error(const struct backend *b, int err)
{
	fprintf(stderr, "%s: MODEL_LOAD %s: %s\n", b->o->prog, b->path,
		syshax_strerror(err));
	if (b->d.pid > 0)
		privd_print_log(&b->d, "refused it");
	else if (err == -EACCES || err == -ENOENT)
		fprintf(stderr, "  a running syshaxd loads only files under its "
			"model_dir (syshaxd --model-dir DIR): give the path\n"
			"  relative to it or absolute inside it, or use --private "
			"to start a syshaxd on the model's folder\n");
}

int be_model_load(struct backend *b, const struct syshax_buffer *io,
		  struct syshax_model_info *info)
{
	const struct sj_ref ref = { io, 0 };
	struct syshax_completion c;
	struct syshax_job job;
	int ret;

	sj_model_load(&job, b->path, &ref);
	ret = be_job(b->sh, &job, &c);
	if (ret) {
		load_error(b, ret);
		return ret;
	}
	memcpy(info, io->addr, sizeof(*info));
	info->model = c.result;
	return 0;
}

void be_model_free(struct backend *b, uint64_t model)
{
	struct syshax_completion c;
	struct syshax_job job;
	int ret;

	sj_weights_free(&job, model);
	ret = be_job(b->sh, &job, &c);
	if (ret)
		fprintf(stderr, "%s: WEIGHTS_FREE: %s\n", b->o->prog,
			syshax_strerror(ret));
}

void be_close(struct backend *b)
{
	if (b->sh)
		syshax_close(b->sh);
	b->sh = NULL;
	privd_stop(&b->d);
}
