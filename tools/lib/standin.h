/* SPDX-License-Identifier: MIT */
/*
 * The stand-in xPU (syshax-run and syshax-serve --xpu-standin): what a
 * framework's accelerator worker does, played by an in-process instance of
 * syshaxd's CPU engine with one worker. The interface is the one a real
 * xPU worker in another process implements: it loads the same model file,
 * runs the step jobs it is given (a DECODE syshaxd deferred, or a PREFILL
 * the framework sends it) on the very syshax buffers the job's refs name,
 * mapped by the caller, and reports its load to syshaxd's dispatch rule
 * (REPORT_XPU).
 */
#ifndef STANDIN_H
#define STANDIN_H

#include "syshax/rt.h"

struct standin;

/* file: the model, dir: the folder it may read from; prog for messages. */
int standin_open(struct standin **out, const char *prog, const char *dir,
		 const char *file);
void standin_close(struct standin *s);
/* Runs a DECODE or PREFILL job on bufs[i], the client's own mappings of
 * the buffers job->refs[i] names: the same KV pages syshaxd reads and
 * writes. 0 or the job's -errno. */
int standin_step(struct standin *s, const struct syshax_job *job,
		 const struct syshax_buffer *const *bufs);
/* Tells syshaxd the stand-in's load (REPORT_XPU): ran is the sequences it
 * ran in the step just done, 0 when it was not its step. */
int standin_report(struct standin *s, struct syshax *sh, unsigned int ran);

#endif /* STANDIN_H */
