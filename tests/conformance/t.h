/* SPDX-License-Identifier: MIT */
/*
 * The conformance suite's shared helpers. The suite runs against whatever
 * backend syshax_open(NULL) gives ($SYSHAX_DEVICE, /dev/syshax, syshaxd)
 * and starts its own engine process, so that it can kill and restart it.
 */
#ifndef T_CONFORMANCE_H
#define T_CONFORMANCE_H

#include <stdbool.h>
#include <stdint.h>
#include <CUnit/Basic.h>

#include "syshax/rt.h"

#define T_MS	1000000LL
#define T_SEC	1000000000LL

uint64_t t_now_ns(void);

/* A new client context, or NULL (with a CUnit failure). */
struct syshax *t_open(void);

/* STATS through the suite's own long-lived context. */
int t_stats(struct syshax_stats_args *st);

typedef bool (*t_stats_pred)(const struct syshax_stats_args *st, void *arg);
/* Polls STATS until pred holds: 0, or -ETIMEDOUT after timeout_ns. */
int t_stats_until(t_stats_pred pred, void *arg, int64_t timeout_ns);
bool t_no_jobs(const struct syshax_stats_args *st, void *arg);
bool t_no_pinned(const struct syshax_stats_args *st, void *arg);

/* Sets refs[i] by hand (the builders would not make a bad ref). */
void t_set_ref(struct syshax_job *job, unsigned int i, uint64_t buf,
	       uint32_t access, uint64_t offset, uint64_t length);

/*
 * Reaps completions of jobs base + 0 .. base + n - 1 (user_data) until
 * `want` arrived or timeout_ns passed, counting each in seen[] and by
 * status in *ok and *epipe (others in *other). Returns the number reaped,
 * or -EPROTO for a user_data outside the range.
 */
struct t_tally {
	unsigned int ok, epipe, other;
	int other_status;	/* the last status not 0 nor -EPIPE */
};
int t_reap(struct syshax *sh, uint64_t base, unsigned int n,
	   unsigned char *seen, unsigned int want, int64_t timeout_ns,
	   struct t_tally *tally);

/* ---- the engine process (engine.c) ---- */

/* Starts the engine ($SYSHAX_ENGINE_CMD, else syshaxd --engine-only
 * --foreground) and waits until it has attached: 0 or -errno. */
int t_engine_start(void);
/* Sends sig to the engine, reaps it and waits until no engine is
 * attached; *status gets its wait status. 0 or -errno. */
int t_engine_stop(int sig, int *status);
bool t_engine_running(void);

/* ---- suites ---- */

int t_add_basic(void);
int t_add_badref(void);
int t_add_stress(void);
int t_add_reuse(void);
int t_add_queue(void);
int t_add_wait(void);
int t_add_kill(void);
int t_add_engine(void);
int t_add_ctx_stats(void);

#endif /* T_CONFORMANCE_H */
