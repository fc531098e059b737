/* SPDX-License-Identifier: MIT */
/*
 * A framework's hold on the runtime, as syshax-run and syshax-serve take
 * it: the backend (a running one, $SYSHAX_DEVICE first, else a private
 * syshaxd on the model's folder), one GGUF model loaded with MODEL_LOAD,
 * syshax buffers allocated and mapped here, and a job's round trip. Every
 * failure is said on stderr with the program's name, and returned as
 * -errno.
 *
 *	struct backend be;
 *	struct be_opts o = { .prog = "syshax-serve", .model = "m.gguf" };
 *	be_open(&be, &o);
 *	be_buf(&be, size, &io, "io");
 *	be_model_load(&be, &io, &info);
 *	...
 *	be_close(&be);
 */
#ifndef BACKEND_H
#define BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "privd.h"
#include "syshax/rt.h"
#include "syshax_ops.h"

struct be_opts {
	const char *prog;		/* for messages */
	const char *model;		/* as given */
	const char *syshaxd;		/* the daemon to start; NULL: beside */
	unsigned int threads;		/* a private daemon's; 0: its default */
	bool private;			/* start one even when one runs */
};

struct backend {
	const struct be_opts *o;
	struct syshax *sh;
	struct privd d;			/* a daemon started here, if any */
	char path[192];			/* MODEL_LOAD's path */
	char real[4096];		/* the model file here, "": not looked up */
	char dir[4096];			/* its folder */
};

/* Opens the backend: b->sh, and b->path for be_model_load(). */
int be_open(struct backend *b, const struct be_opts *o);
/* The model file's absolute path and folder into b->real and b->dir. */
int be_locate(struct backend *b);
/* A buffer of size bytes allocated and mapped; zeroed *buf on failure,
 * and a message naming what (none when what is NULL). */
int be_buf(struct backend *b, uint64_t size, struct syshax_buffer *buf,
	   const char *what);
/* MODEL_LOAD of b->path, its info written at the start of io (which must
 * hold a struct syshax_model_info) and copied to *info, whose model is the
 * weight-set id. */
int be_model_load(struct backend *b, const struct syshax_buffer *io,
		  struct syshax_model_info *info);
void be_model_free(struct backend *b, uint64_t model);
/* The backend closed and a private daemon stopped; safe on a zeroed one. */
void be_close(struct backend *b);

/* One job's round trip: its completion in *c; 0 or its -errno. */
int be_job(struct syshax *sh, const struct syshax_job *job,
	   struct syshax_completion *c);

#endif /* BACKEND_H */
