// SPDX-License-Identifier: MIT
/*
 * The caller's side of the shared rings (uapi/syshax.h, "Rings"), for both
 * backends: a client writes jobs into its in ring and reads completions
 * from its out ring; an engine reads jobs from its out ring and writes
 * completions into its in ring. A system call only to kick a broker that
 * sleeps (SYSHAX_RING_NEED_WAKEUP) and to sleep when the out ring is empty
 * (after spinning spin_us, when set).
 *
 * Rings are used when $SYSHAX_RINGS is 1 and the backend has
 * SYSHAX_FEAT_RINGS: a client's are set up on its first submit or wait, an
 * engine's at attach. Errors stay those of the old path: jobs are checked
 * here with the broker's own rules (broker/job_check.h) before they enter
 * the ring, so a bad job is still refused by syshax_submit(); the broker
 * checks again (the authority), and a job that fails there completes with
 * the errno as its status.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "clock.h"
#include "cpl_check.h"
#include "job_check.h"
#include "rt_int.h"

#define LOAD_ACQ(p)	__atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE_REL(p, v)	__atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define READ(p)		__atomic_load_n((p), __ATOMIC_RELAXED)
#define WRITE(p, v)	__atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define MB()		__atomic_thread_fence(__ATOMIC_SEQ_CST)

static unsigned int env_uint(const char *name, unsigned int def)
{
	const char *v = getenv(name);
	char *end;
	unsigned long n;

	if (!v || !*v)
		return def;
	n = strtoul(v, &end, 10);
	return *end || n > 10000000 ? def : (unsigned int)n;
}

void shrt_ring_defaults(struct syshax *sh)
{
	sh->use_rings = env_uint("SYSHAX_RINGS", 1) != 0 &&
			(sh->ver.features & SYSHAX_FEAT_RINGS) &&
			sh->be->ring_setup;
	sh->spin_us = env_uint("SYSHAX_WAIT_SPIN_US", 0);
	pthread_mutex_init(&sh->ring_lock, NULL);
	sh->ring_ready = 1;
}

/*
 * Whether WAITING stays set: once the process asked for syshax_fd() it may
 * poll it at any time, so the fd must follow the ring (a wake-up per
 * publish, settle() after each reap). Otherwise wake-ups are asked only
 * while a thread sleeps in the library, which saves the broker a send and
 * the reaper a receive per round trip.
 */
static int sticky(const struct syshax *sh)
{
	return __atomic_load_n(&sh->fd_polled, __ATOMIC_ACQUIRE);
}

void shrt_ring_fd_polled(struct syshax *sh)
{
	struct shrt_ring *r;

	__atomic_store_n(&sh->fd_polled, 1, __ATOMIC_RELEASE);
	r = LOAD_ACQ(&sh->ring);
	if (!r || !sh->be->ring_drain)
		return;
	WRITE(&r->hdr->user_flags.v, SYSHAX_RING_WAITING);
	MB();
	/* Entries published before had no wake-up: ask for one. */
	sh->be->ring_kick(sh);
}

/* Sets up sh's rings once (the role is the broker's: engine after
 * attach); 0 when they are there. */
int shrt_ring_get(struct syshax *sh)
{
	struct syshax_ring_setup_args a = { 0 };
	struct shrt_ring *r;
	void *area;
	int ret = 0;

	if (LOAD_ACQ(&sh->ring))
		return 0;
	pthread_mutex_lock(&sh->ring_lock);
	if (sh->ring)
		goto out;
	r = calloc(1, sizeof(*r));
	if (!r) {
		ret = -ENOMEM;
		goto out;
	}
	/* An engine keeps its mappings where the broker says when they go. */
	if (sh->engine && (sh->ver.features & SYSHAX_FEAT_MAP_NOTES))
		a.flags = SYSHAX_RING_NOTES;
	r->notes = a.flags & SYSHAX_RING_NOTES;
	ret = sh->be->ring_setup(sh, &a, &area);
	if (ret) {
		free(r);
		goto out;
	}
	r->hdr = area;
	r->size = a.size;
	r->in = (char *)area + r->hdr->in_off;
	r->out = (char *)area + r->hdr->out_off;
	r->in_entries = a.in_entries;
	r->out_entries = a.out_entries;
	r->in_size = r->hdr->in_entry_size;
	r->out_size = r->hdr->out_entry_size;
	r->max_jobs = a.max_jobs;
	pthread_mutex_init(&r->in_lock, NULL);
	pthread_mutex_init(&r->out_lock, NULL);
	pthread_mutex_init(&r->tok_lock, NULL);
	shrt_maps_init(&r->maps);
	/* A process that polls syshax_fd() wants every wake-up. */
	if (sticky(sh))
		WRITE(&r->hdr->user_flags.v, SYSHAX_RING_WAITING);
	STORE_REL(&sh->ring, r);
out:
	pthread_mutex_unlock(&sh->ring_lock);
	return ret;
}

void shrt_ring_close(struct syshax *sh)
{
	struct shrt_ring *r = sh->ring;

	if (r) {
		munmap(r->hdr, r->size);
		pthread_mutex_destroy(&r->in_lock);
		pthread_mutex_destroy(&r->out_lock);
		pthread_mutex_destroy(&r->tok_lock);
		shrt_hmap_free(&r->tokens);
		shrt_maps_free(&r->maps);
		free(r);
	}
	pthread_mutex_destroy(&sh->ring_lock);
}

static int ring_dead(const struct shrt_ring *r)
{
	return READ(&r->hdr->broker_flags.v) & SYSHAX_RING_DEAD ? -EPROTO : 0;
}

/*
 * After in_tail moved: kicks a broker that asked for it, else makes sure
 * one is there to take the entries. -EPROTO (dead rings) or -EPIPE (no
 * broker) when they will never be taken; a kick's other errors leave them
 * for the broker's next look (0).
 */
static int publish_in(struct syshax *sh, struct shrt_ring *r)
{
	int ret;

	STORE_REL(&r->hdr->in_tail.v, r->in_tail);
	MB();
	if (ring_dead(r))
		return -EPROTO;
	if (READ(&r->hdr->broker_flags.v) & SYSHAX_RING_NEED_WAKEUP)
		ret = sh->be->ring_kick(sh);
	else
		ret = sh->be->ring_peer ? sh->be->ring_peer(sh) : 0;
	return ret == -EPIPE || ret == -EPROTO ? ret : 0;
}

/* Free in slots, as the broker's in_head says. */
static uint32_t in_room(const struct shrt_ring *r)
{
	return r->in_entries - (r->in_tail - LOAD_ACQ(&r->hdr->in_head.v));
}

static void in_put(struct shrt_ring *r, const void *e)
{
	memcpy(r->in + (size_t)(r->in_tail & (r->in_entries - 1)) * r->in_size,
	       e, r->in_size);
	r->in_tail++;
}

/* A full in ring: publishes what was put so far, kicks the broker and
 * yields until it made room; -EAGAIN when the broker's queue is full for
 * everyone (the jobs would wait), -EPROTO, -EPIPE. */
static int wait_room(struct syshax *sh, struct shrt_ring *r)
{
	int ret;

	for (;;) {
		STORE_REL(&r->hdr->in_tail.v, r->in_tail);
		MB();
		ret = ring_dead(r);
		if (ret)
			return ret;
		if (in_room(r))
			return 0;
		if (READ(&r->hdr->broker_flags.v) & SYSHAX_RING_FULL)
			return -EAGAIN;
		ret = sh->be->ring_kick(sh);
		if (ret)
			return ret;
		sched_yield();
	}
}

static int ref_lookup(void *priv, __u64 handle, __u64 *size, __u32 *access)
{
	struct syshax *sh = priv;

	return sh->be->ref_info(sh, handle, size, access);
}

int shrt_ring_submit(struct syshax *sh, const struct syshax_job *jobs,
		     unsigned int nr)
{
	struct shrt_ring *r = sh->ring;
	uint32_t room, busy;
	unsigned int n;
	int ret = 0, lost;

	pthread_mutex_lock(&r->in_lock);
	ret = ring_dead(r);
	/* The broker's queue is full for everyone: as the old path. */
	if (!ret && (READ(&r->hdr->broker_flags.v) & SYSHAX_RING_FULL))
		ret = -EAGAIN;
	room = in_room(r);
	busy = r->submitted - LOAD_ACQ(&r->reaped);
	for (n = 0; !ret && n < nr; n++) {
		if (busy + n >= r->max_jobs) {
			ret = -EAGAIN;
			break;
		}
		if (!room) {
			/* Full only until the broker takes it: publish what
			 * is there, kick, and look again. */
			ret = wait_room(sh, r);
			if (ret)
				break;
			room = in_room(r);
		}
		ret = syshax_job_check(&jobs[n], ref_lookup, sh);
		if (ret)
			break;
		in_put(r, &jobs[n]);
		room--;
	}
	if (n) {
		r->submitted += n;
		lost = publish_in(sh, r);
		/* Jobs no broker will take were not submitted. */
		if (lost) {
			ret = lost;
			n = 0;
		}
	}
	pthread_mutex_unlock(&r->in_lock);
	return n ? (int)n : ret;
}

/* The jobs an engine holds, by token + 1 (ENGINE_COMPLETE's -ENOENT is
 * known here: the broker is not asked). Room was reserved (tok_lock). */
static void tokens_add(struct shrt_ring *r, const struct syshax_engine_job *j,
		       unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		shrt_hmap_put(&r->tokens, j[i].token + 1, r);
}

/* 0 when the completion may go (its token then leaves the set), else the
 * old path's errno. */
static int token_take(struct shrt_ring *r, const struct syshax_engine_cpl *c)
{
	int ret = syshax_cpl_check(c);

	if (ret)
		return ret;
	pthread_mutex_lock(&r->tok_lock);
	if (!shrt_hmap_del(&r->tokens, c->token + 1))
		ret = -ENOENT;
	pthread_mutex_unlock(&r->tok_lock);
	return ret;
}

/* Engine completions: never dropped, so a full ring waits for the broker.
 * Stops at the first one the broker would refuse; -EPIPE (or -EPROTO) when
 * the broker will never take them. */
int shrt_ring_complete(struct syshax *sh, const struct syshax_engine_cpl *cpls,
		       unsigned int nr)
{
	struct shrt_ring *r = sh->ring;
	unsigned int n = 0;
	int ret = 0, lost = 0;

	pthread_mutex_lock(&r->in_lock);
	while (n < nr && !(ret = ring_dead(r))) {
		uint32_t room = in_room(r), put = 0;

		if (!room) {
			ret = sh->be->ring_kick(sh);
			if (ret)
				break;
			sched_yield();
			continue;
		}
		while (put < room && n < nr && !(ret = token_take(r, &cpls[n]))) {
			in_put(r, &cpls[n++]);
			put++;
		}
		if (put)
			lost = publish_in(sh, r);
		if (lost || ret)
			break;
	}
	pthread_mutex_unlock(&r->in_lock);
	if (lost || ret == -EPIPE)
		return lost ? lost : ret;
	return n ? (int)n : ret;
}

/* Copies up to max out entries to dst (writable, checked by the caller). */
static unsigned int out_take(struct shrt_ring *r, void *dst, unsigned int max)
{
	uint32_t avail, i;

	pthread_mutex_lock(&r->out_lock);
	avail = LOAD_ACQ(&r->hdr->out_tail.v) - r->out_head;
	if (avail > max)
		avail = max;
	for (i = 0; i < avail; i++)
		memcpy((char *)dst + (size_t)i * r->out_size,
		       r->out + (size_t)((r->out_head + i) &
					 (r->out_entries - 1)) * r->out_size,
		       r->out_size);
	r->out_head += avail;
	STORE_REL(&r->hdr->out_head.v, r->out_head);
	pthread_mutex_unlock(&r->out_lock);
	return avail;
}

static int out_ready(const struct shrt_ring *r)
{
	return LOAD_ACQ(&r->hdr->out_tail.v) != READ(&r->out_head);
}

/*
 * Waits until the out ring has entries, end (ns, -1: never) passes, or a
 * signal comes: spins spin_us first (no wake-ups asked meanwhile), then
 * polls the fd. 0, -ETIMEDOUT, -EINTR, -EPIPE (broker gone), -EPROTO.
 */
static int out_wait(struct syshax *sh, struct shrt_ring *r, int64_t end)
{
	struct pollfd pfd = { .fd = sh->evfd, .events = POLLIN };
	unsigned int spin_us = READ(&sh->spin_us);
	int64_t spin_end;
	int ret;

	if (spin_us) {
		spin_end = shrt_now_ns() + (int64_t)spin_us * 1000;
		WRITE(&r->hdr->user_flags.v, 0);
		/* Yielding lets the broker and engine threads run where
		 * there are fewer cores than spinners. */
		while (!out_ready(r) && !ring_dead(r) && shrt_now_ns() < spin_end &&
		       (end < 0 || shrt_now_ns() < end))
			sched_yield();
	}
	for (;;) {
		struct timespec ts, *tsp = NULL;

		/* Ask for a wake-up, then look once more before sleeping. */
		WRITE(&r->hdr->user_flags.v, SYSHAX_RING_WAITING);
		MB();
		ret = out_ready(r) ? 0 : ring_dead(r);
		if (out_ready(r) || ret)
			break;
		if (end >= 0) {
			int64_t left = end - shrt_now_ns();

			if (left <= 0) {
				ret = -ETIMEDOUT;
				break;
			}
			ts.tv_sec = left / 1000000000;
			ts.tv_nsec = left % 1000000000;
			tsp = &ts;
		}
		ret = ppoll(&pfd, 1, tsp, NULL);
		if (ret < 0) {
			ret = -errno;
			break;
		}
		if (ret > 0 && (pfd.revents & (POLLHUP | POLLERR))) {
			ret = -EPIPE;
			break;
		}
		if (ret > 0 && sh->be->ring_drain)
			sh->be->ring_drain(sh);
	}
	if (!sticky(sh))
		WRITE(&r->hdr->user_flags.v, 0);
	return ret;
}

/*
 * Keeps syshax_fd() readable exactly while entries wait: once the ring is
 * empty the wake-ups sent so far are stale and go; an entry that came in
 * between lost its wake-up, so the broker is asked to send one again
 * (when we will not take it now). Returns 1 when the ring is not empty.
 */
static int settle(struct syshax *sh, struct shrt_ring *r)
{
	if (!sh->be->ring_drain || !sticky(sh) || out_ready(r))
		return out_ready(r);
	sh->be->ring_drain(sh);
	MB();
	if (!out_ready(r))
		return 0;
	sh->be->ring_kick(sh);
	return 1;
}

int shrt_ring_wait(struct syshax *sh, struct syshax_wait_args *w)
{
	struct syshax_completion *cpls = (void *)(uintptr_t)w->cpls;
	struct shrt_ring *r = sh->ring;
	int64_t end = shrt_deadline_ns(w->timeout_ns);
	unsigned int got = 0, max;
	int ret;

	if (!w->max || w->min > w->max || w->flags || w->pad)
		return -EINVAL;
	/* Take only what the caller's memory holds (as the old path). */
	max = (unsigned int)(shrt_writable_len(cpls, (size_t)w->max *
					       sizeof(*cpls)) / sizeof(*cpls));
	if (!max)
		return -EFAULT;
	for (;;) {
		unsigned int n = out_take(r, cpls + got, max - got);

		got += n;
		__atomic_fetch_add(&r->reaped, n, __ATOMIC_RELEASE);
		if (got == max) {
			settle(sh, r);
			return (int)got;
		}
		if (settle(sh, r))
			continue;
		if (got >= w->min)
			return !got && ring_dead(r) ? -EPROTO : (int)got;
		ret = out_wait(sh, r, end);
		if (ret)
			return got ? (int)got : ret;
	}
}

int shrt_ring_fetch(struct syshax *sh, struct syshax_engine_fetch_args *f)
{
	struct syshax_engine_job *jobs = (void *)(uintptr_t)f->jobs;
	struct shrt_ring *r = sh->ring;
	int64_t end = shrt_deadline_ns(f->timeout_ns);
	unsigned int max, room, taken, n;
	int ret;

	if (f->flags || !f->max)
		return -EINVAL;
	max = (unsigned int)(shrt_writable_len(jobs, (size_t)f->max *
					       sizeof(*jobs)) / sizeof(*jobs));
	if (!max)
		return -EFAULT;
	for (;;) {
		/* Room for the tokens first: a job taken from the ring is
		 * held by this engine, so none may be taken that it could not
		 * complete. Without memory the jobs stay in the ring. */
		pthread_mutex_lock(&r->tok_lock);
		room = shrt_hmap_reserve(&r->tokens, max);
		taken = room ? out_take(r, jobs, room) : 0;
		n = shrt_maps_notes(r, jobs, taken);
		tokens_add(r, jobs, n);
		pthread_mutex_unlock(&r->tok_lock);
		if (n)
			return (int)n;
		if (!room)
			return -ENOMEM;
		if (taken)
			continue;	/* notes only: look again */
		if (!f->timeout_ns)
			return ring_dead(r) ? -EPROTO : -ETIMEDOUT;
		ret = out_wait(sh, r, end);
		if (ret)
			return ret;
	}
}
