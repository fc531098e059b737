// SPDX-License-Identifier: MIT
/*
 * Shared rings on syshaxd's broker (issue 9): a caller that writes garbage
 * into its own ring header hurts only itself. The broker runs in a thread;
 * the test is its clients and its engine, through libsyshax-rt with
 * SYSHAX_RINGS=1, and reaches into the library's ring (rt_int.h) to write
 * what a broken or hostile caller would.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <CUnit/Basic.h>

#include "../t_cunit.h"

#include "broker.h"
#include "rt_int.h"
#include "t_broker.h"

#define T_SEC	1000000000LL

static struct t_broker g_tb;
static struct syshax *g_en;	/* the engine, rings in that role */

static int t_setup(void)
{
	struct shxd_broker_conf c = {
		.max_pinned_bytes = 64ULL << 20,
		.engine_gid = (gid_t)-1,
	};

	setenv("SYSHAX_RINGS", "1", 1);
	return t_broker_start(&g_tb, &c, "/tmp/broker_ring_ut.XXXXXX",
			      "b.sock");
}

static int t_teardown(void)
{
	syshax_close(g_en);
	return t_broker_stop(&g_tb);
}

static struct syshax_ring_hdr *t_hdr(struct syshax *sh)
{
	return sh->ring ? sh->ring->hdr : NULL;
}

/* A byte on the event socket: what the library sends to kick. */
static void t_kick(struct syshax *sh)
{
	char k = 1;

	CU_ASSERT_EQUAL(send(syshax_fd(sh), &k, 1, MSG_DONTWAIT), 1);
}

/* The engine serves one job: fetches it, completes it with status 0;
 * returns the fetched job through ej when not NULL. */
static int t_serve(struct syshax_engine_job *ej)
{
	struct syshax_engine_job j;
	struct syshax_engine_cpl c = { 0 };
	int n = syshax_engine_fetch(g_en, &j, 1, 2 * T_SEC);

	if (n != 1)
		return n < 0 ? n : -EIO;
	if (ej)
		*ej = j;
	c.token = j.token;
	return syshax_engine_complete(g_en, &c, 1) == 1 ? 0 : -EIO;
}

/* A fresh client whose rings have carried one NOP there and back. */
static struct syshax *t_client(struct syshax_ring_hdr **h)
{
	struct syshax *sh = t_broker_open(&g_tb);
	struct syshax_completion c;
	struct syshax_job job;

	CU_ASSERT_PTR_NOT_NULL_FATAL(sh);
	syshax_job_init(&job, SYSHAX_OP_NOP, 1);
	CU_ASSERT_EQUAL(syshax_submit(sh, &job, 1), 1);
	CU_ASSERT_EQUAL(t_serve(NULL), 0);
	CU_ASSERT_EQUAL(syshax_wait(sh, &c, 1, 1, 2 * T_SEC), 1);
	CU_ASSERT_EQUAL(c.user_data, 1);
	CU_ASSERT_EQUAL(c.status, 0);
	*h = t_hdr(sh);		/* on the rings */
	CU_ASSERT_PTR_NOT_NULL_FATAL(*h);
	return sh;
}

/* A NOP round trip on a fresh context: the broker still serves. */
static void t_round_trip(void)
{
	struct syshax_ring_hdr *h;

	syshax_close(t_client(&h));
}

static void t_engine(void)
{
	g_en = t_broker_open(&g_tb);
	CU_ASSERT_PTR_NOT_NULL_FATAL(g_en);
	CU_ASSERT_EQUAL_FATAL(syshax_engine_attach(g_en, -1), 0);
	CU_ASSERT_PTR_NOT_NULL(t_hdr(g_en));
	t_round_trip();
}

/* Waits (2 s at most) for the broker to mark h DEAD, without calling the
 * library, which would write its own indices back over the garbage. */
static void t_until_dead(struct syshax_ring_hdr *h)
{
	int i;

	for (i = 0; i < 2000 && !(__atomic_load_n(&h->broker_flags.v,
						  __ATOMIC_ACQUIRE) &
				  SYSHAX_RING_DEAD); i++)
		usleep(1000);
	CU_ASSERT(h->broker_flags.v & SYSHAX_RING_DEAD);
}

/* The context's calls fail with -EPROTO (soon: the broker takes the ring
 * in its own time) and its ring says DEAD. */
static void t_expect_dead(struct syshax *sh)
{
	struct syshax_completion c;
	struct syshax_job job;
	int i, ret = 0;

	for (i = 0; i < 200; i++) {
		ret = syshax_wait(sh, &c, 1, 1, 10000000);
		if (ret == -EPROTO)
			break;
	}
	CU_ASSERT_EQUAL(ret, -EPROTO);
	CU_ASSERT(t_hdr(sh)->broker_flags.v & SYSHAX_RING_DEAD);
	syshax_job_init(&job, SYSHAX_OP_NOP, 1);
	CU_ASSERT_EQUAL(syshax_submit(sh, &job, 1), -EPROTO);
}

/* The broker marks h DEAD, sh's calls fail, a fresh client still works. */
static void t_dies_alone(struct syshax *sh, struct syshax_ring_hdr *h)
{
	t_kick(sh);
	t_until_dead(h);
	t_expect_dead(sh);
	t_round_trip();
	syshax_close(sh);
}

/* A client whose in_tail jumps ahead, or goes behind the head. */
static void t_bad_in_tail(void)
{
	static const uint32_t delta[] = { 1000, (uint32_t)-1 };
	struct syshax_ring_hdr *h;
	struct syshax *sh;
	unsigned int k;

	for (k = 0; k < 2; k++) {
		sh = t_client(&h);
		__atomic_store_n(&h->in_tail.v, h->in_head.v + delta[k],
				 __ATOMIC_RELEASE);
		t_dies_alone(sh, h);
	}
}

/* A client whose out_head passes out_tail, or goes back: found when the
 * broker next looks at its room (before it takes a job). */
static void t_bad_out_head(void)
{
	/* Past the tail, or before anything the broker saw it hold (a head
	 * one short of what the broker last read cannot be told from one
	 * that has not moved). */
	static const int32_t delta[] = { 5, -(1 << 20) };
	struct syshax_ring_hdr *h;
	struct syshax_job job;
	struct syshax *sh;
	unsigned int k;

	syshax_job_init(&job, SYSHAX_OP_NOP, 2);
	for (k = 0; k < 2; k++) {
		sh = t_client(&h);
		__atomic_store_n(&h->out_head.v,
				 h->out_tail.v + (uint32_t)delta[k],
				 __ATOMIC_RELEASE);
		/* Its next job makes the broker look. */
		CU_ASSERT_EQUAL(syshax_submit(sh, &job, 1), 1);
		t_dies_alone(sh, h);
	}
}

/* What the broker queued is the job as published, whatever the slot
 * holds later: it copied it once, before checking it. */
static void t_changed_after_publish(void)
{
	struct syshax *sh = t_broker_open(&g_tb);
	struct syshax_buffer a, b;
	struct syshax_engine_job ej;
	struct syshax_completion c;
	struct syshax_ring_hdr *h;
	struct syshax_job job, *slot;
	uint32_t t;
	int i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(sh);
	CU_ASSERT_EQUAL_FATAL(syshax_buf_alloc(sh, 4096, -1, 0, &a), 0);
	CU_ASSERT_EQUAL_FATAL(syshax_buf_alloc(sh, 4096, -1, 0, &b), 0);
	syshax_job_init(&job, SYSHAX_OP_NOP, 1);
	CU_ASSERT_EQUAL(syshax_submit(sh, &job, 1), 1);	/* sets rings up */
	CU_ASSERT_EQUAL(t_serve(NULL), 0);
	CU_ASSERT_EQUAL(syshax_wait(sh, &c, 1, 1, 2 * T_SEC), 1);
	h = t_hdr(sh);
	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	t = h->in_tail.v;
	slot = (struct syshax_job *)((char *)h + h->in_off) +
	       (t & (h->in_entries - 1));
	syshax_job_copy(&job, &a, 0, &b, 0, 64, 77);
	CU_ASSERT_EQUAL(syshax_submit(sh, &job, 1), 1);
	/* Once the broker took it, the slot is the caller's again. */
	for (i = 0; i < 2000 && __atomic_load_n(&h->in_head.v,
						__ATOMIC_ACQUIRE) == t; i++)
		usleep(1000);
	CU_ASSERT(h->in_head.v != t);
	slot->refs[0].length = 1ULL << 40;
	slot->op = SYSHAX_OP_MAX;
	CU_ASSERT_EQUAL(t_serve(&ej), 0);
	CU_ASSERT_EQUAL(ej.job.op, SYSHAX_OP_COPY);
	CU_ASSERT_EQUAL(ej.job.refs[0].length, 64);
	CU_ASSERT_EQUAL(syshax_wait(sh, &c, 1, 1, 2 * T_SEC), 1);
	CU_ASSERT_EQUAL(c.user_data, 77);
	syshax_close(sh);
}

/* An engine that breaks its rings: its fetch gets -EPROTO; the job it
 * held completes -EPIPE when it goes; another engine takes over. */
static void t_bad_engine(void)
{
	struct syshax *cl = t_broker_open(&g_tb), *en = t_broker_open(&g_tb);
	struct syshax_engine_job ej;
	struct syshax_completion c;
	struct syshax_ring_hdr *h;
	struct syshax_job job;
	int i, ret = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	CU_ASSERT_PTR_NOT_NULL_FATAL(en);
	/* The test's engine steps aside: close it, attach en. */
	syshax_close(g_en);
	g_en = NULL;
	CU_ASSERT_EQUAL_FATAL(syshax_engine_attach(en, -1), 0);
	syshax_job_init(&job, SYSHAX_OP_NOP, 31);
	CU_ASSERT_EQUAL(syshax_submit(cl, &job, 1), 1);
	CU_ASSERT_EQUAL(syshax_engine_fetch(en, &ej, 1, 2 * T_SEC), 1);
	h = t_hdr(en);
	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	__atomic_store_n(&h->in_tail.v, h->in_head.v + 100000,
			 __ATOMIC_RELEASE);
	t_kick(en);
	for (i = 0; i < 200; i++) {
		ret = syshax_engine_fetch(en, &ej, 1, 10000000);
		if (ret == -EPROTO)
			break;
	}
	CU_ASSERT_EQUAL(ret, -EPROTO);
	syshax_close(en);
	CU_ASSERT_EQUAL(syshax_wait(cl, &c, 1, 1, 2 * T_SEC), 1);
	CU_ASSERT_EQUAL(c.user_data, 31);
	CU_ASSERT_EQUAL(c.status, -EPIPE);
	syshax_close(cl);
	t_engine();
}

/* RING_SETUP's checks: sizes, flags, twice, and not over jobs that went
 * the old way (their completions would have nowhere to go). */
static void t_setup_errors(void)
{
	struct syshax_ring_setup_args a;
	struct syshax_completion c;
	struct syshax_job job;
	struct syshax *sh;
	void *area;

	setenv("SYSHAX_RINGS", "0", 1);
	sh = t_broker_open(&g_tb);
	setenv("SYSHAX_RINGS", "1", 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(sh);
	syshax_job_init(&job, SYSHAX_OP_NOP, 5);
	CU_ASSERT_EQUAL(syshax_submit(sh, &job, 1), 1);	/* old path */
	CU_ASSERT_PTR_NULL(sh->ring);
	a = (struct syshax_ring_setup_args){ 0 };
	CU_ASSERT_EQUAL(sh->be->ring_setup(sh, &a, &area), -EBUSY);
	CU_ASSERT_EQUAL(t_serve(NULL), 0);
	CU_ASSERT_EQUAL(syshax_wait(sh, &c, 1, 1, 2 * T_SEC), 1);

	a = (struct syshax_ring_setup_args){ .in_entries = 3 };
	CU_ASSERT_EQUAL(sh->be->ring_setup(sh, &a, &area), -EINVAL);
	a = (struct syshax_ring_setup_args){ .in_entries = 256 };
	CU_ASSERT_EQUAL(sh->be->ring_setup(sh, &a, &area), -EINVAL);
	a = (struct syshax_ring_setup_args){ .out_entries = 512 };
	CU_ASSERT_EQUAL(sh->be->ring_setup(sh, &a, &area), -EINVAL);
	a = (struct syshax_ring_setup_args){ .flags = 1 };
	CU_ASSERT_EQUAL(sh->be->ring_setup(sh, &a, &area), -EINVAL);
	a = (struct syshax_ring_setup_args){ 0 };
	CU_ASSERT_EQUAL_FATAL(sh->be->ring_setup(sh, &a, &area), 0);
	CU_ASSERT_EQUAL(a.in_entries, 128);
	CU_ASSERT_EQUAL(a.out_entries, 1024);
	CU_ASSERT_EQUAL(a.max_jobs, 1024);
	munmap(area, a.size);
	a = (struct syshax_ring_setup_args){ 0 };
	CU_ASSERT_EQUAL(sh->be->ring_setup(sh, &a, &area), -EBUSY);
	syshax_close(sh);
}

/*
 * A broker that is gone (syshaxd killed: its sockets close, the rings
 * stay mapped here) takes nothing more from the rings: an engine's
 * completions of the 4 jobs it holds and a client's submit are -EPIPE,
 * not a count of entries nobody will read.
 */
static void t_broker_gone(void)
{
	struct shxd_broker_conf c = {
		.max_pinned_bytes = 64ULL << 20,
		.engine_gid = (gid_t)-1,
	};
	struct syshax_engine_job ej[4];
	struct syshax_engine_cpl cpl[4];
	struct syshax_job jobs[4];
	struct t_broker tb;
	struct syshax *cl, *en;
	int i, got = 0, n;

	CU_ASSERT_EQUAL_FATAL(t_broker_start(&tb, &c,
					     "/tmp/broker_gone.XXXXXX",
					     "b.sock"), 0);
	cl = t_broker_open(&tb);
	en = t_broker_open(&tb);
	CU_ASSERT_FATAL(cl && en);
	CU_ASSERT_EQUAL_FATAL(syshax_engine_attach(en, -1), 0);
	for (i = 0; i < 4; i++)
		syshax_job_init(&jobs[i], SYSHAX_OP_NOP, 40 + i);
	CU_ASSERT_EQUAL_FATAL(syshax_submit(cl, jobs, 4), 4);
	while (got < 4) {
		n = syshax_engine_fetch(en, ej + got, 4 - got, 2 * T_SEC);
		CU_ASSERT_FATAL(n > 0);
		got += n;
	}
	CU_ASSERT_PTR_NOT_NULL(t_hdr(en));
	CU_ASSERT_PTR_NOT_NULL(t_hdr(cl));
	t_broker_stop(&tb);

	memset(cpl, 0, sizeof(cpl));
	for (i = 0; i < 4; i++)
		cpl[i].token = ej[i].token;
	CU_ASSERT_EQUAL(syshax_engine_complete(en, cpl, 4), -EPIPE);
	CU_ASSERT_EQUAL(syshax_submit(cl, jobs, 1), -EPIPE);
	syshax_close(cl);
	syshax_close(en);
}

/* ---- Buffers freed and reused under an engine that keeps mappings ---- */

#define REUSE_CLIENTS	4
#define REUSE_ROUNDS	2500		/* per client: 10,000 in all */
#define REUSE_SZ	(64u << 10)
#define POISON		0xdb

struct reuse_engine {
	const struct t_broker *tb;
	volatile int attached, stop;
	unsigned long jobs, hits, stale, bad;
	unsigned long fresh, absent;	/* new mappings; their pages unmapped */
	uint32_t most_kept, kept_at_end;
};

struct reuse_client {
	const struct t_broker *tb;
	unsigned int id;
	unsigned long rounds, bad;
};

static struct syshax *reuse_open(const struct t_broker *tb)
{
	struct syshax_open_opts o = {
		.backend = SYSHAX_BACKEND_DAEMON, .path = tb->path,
	};
	struct syshax *sh = NULL;

	return syshax_open(&sh, &o) ? NULL : sh;
}

static uint32_t kept(struct syshax *sh, uint64_t id, int *hit)
{
	struct shrt_maps *ms = &sh->ring->maps;
	uint32_t n;

	pthread_mutex_lock(&ms->lock);
	if (hit)
		*hit = shrt_hmap_get(&ms->by_id, id) != NULL;
	n = ms->by_id.nr;
	pthread_mutex_unlock(&ms->lock);
	return n;
}

/* Whether this kernel fills page tables on MADV_POPULATE_WRITE. */
static bool populate_works(void)
{
#ifdef MADV_POPULATE_WRITE
	size_t n = (size_t)sysconf(_SC_PAGESIZE);
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bool ok = p != MAP_FAILED && !madvise(p, n, MADV_POPULATE_WRITE);

	if (p != MAP_FAILED)
		munmap(p, n);
	if (!ok)
		printf("(this kernel lacks MADV_POPULATE_WRITE: not checked) ");
	return ok;
#else
	printf("(no MADV_POPULATE_WRITE in these headers: not checked) ");
	return false;
#endif
}

/* Pages of [addr, addr + size) without a page table entry (pagemap's
 * present bit): a kept mapping's are filled when it is made. */
static unsigned long absent_pages(const void *addr, uint64_t size)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE), e;
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	unsigned long absent = 0;

	for (uint64_t o = 0; o < size; o += pg)
		absent += fd < 0 || pread(fd, &e, sizeof(e),
				(off_t)(((uintptr_t)addr + o) / pg * sizeof(e))) !=
			  (ssize_t)sizeof(e) || !(e >> 63);
	if (fd >= 0)
		close(fd);
	return absent;
}

/* COPY jobs through syshax_engine_map()/unmap(); a source that holds the
 * poison was freed: its mapping must never have been used. */
static void *reuse_engine_main(void *arg)
{
	struct reuse_engine *e = arg;
	struct syshax_engine_job ej[16];
	struct syshax_engine_cpl cpl[16];
	struct syshax *sh = reuse_open(e->tb);
	int64_t end = 0;
	int n, i, r, hit;

	if (!sh || syshax_engine_attach(sh, -1) || !sh->ring) {
		e->bad++;
		e->attached = -1;
		return NULL;
	}
	e->attached = 1;
	for (;;) {
		uint32_t k = kept(sh, 0, NULL);

		if (k > e->most_kept)
			e->most_kept = k;
		/* Once the clients are done: until the last notes came. */
		if (e->stop && !end)
			end = (int64_t)time(NULL) + 5;
		if (e->stop && (!k || time(NULL) > end))
			break;
		n = syshax_engine_fetch(sh, ej, 16, 20000000LL);
		for (i = 0; i < n; i++) {
			const struct syshax_job *j = &ej[i].job;
			void *a[2] = { NULL, NULL };
			uint64_t z[2];

			memset(&cpl[i], 0, sizeof(cpl[i]));
			cpl[i].token = ej[i].token;
			for (r = 0; r < 2; r++) {
				kept(sh, j->refs[r].buf, &hit);
				e->hits += hit;
				if (syshax_engine_map(sh, j->refs[r].buf, &a[r],
						      &z[r]))
					cpl[i].status = -EIO;
				else if (!hit && kept(sh, j->refs[r].buf, &hit) &&
					 hit) {
					e->fresh++;
					e->absent += absent_pages(a[r], z[r]);
				}
			}
			if (!cpl[i].status) {
				const unsigned char *src = a[0];

				if (src[j->refs[0].offset] == POISON)
					e->stale++;
				memcpy((char *)a[1] + j->refs[1].offset,
				       src + j->refs[0].offset,
				       j->refs[0].length);
				cpl[i].result = j->refs[0].length;
			}
			for (r = 0; r < 2; r++)
				if (a[r])
					syshax_engine_unmap(sh, a[r], z[r]);
		}
		if (n > 0 && syshax_engine_complete(sh, cpl, (unsigned int)n) != n)
			e->bad++;
		if (n > 0)
			e->jobs += (unsigned long)n;
	}
	e->kept_at_end = kept(sh, 0, NULL);
	syshax_close(sh);
	return NULL;
}

/* Each round: a fresh source with the round's pattern, copied into one
 * long-lived destination, checked, poisoned and freed. */
static void *reuse_client_main(void *arg)
{
	struct reuse_client *c = arg;
	struct syshax_buffer src, dst;
	struct syshax_completion cpl;
	struct syshax_job job;
	struct syshax *sh = reuse_open(c->tb);
	unsigned int i;

	if (!sh || syshax_buf_alloc(sh, REUSE_SZ, -1, SYSHAX_BUF_ALLOW_SMALL,
				    &dst) || syshax_buf_map(sh, &dst)) {
		c->bad++;
		goto out;
	}
	for (c->rounds = 0; c->rounds < REUSE_ROUNDS; c->rounds++) {
		unsigned char want = (unsigned char)(c->id * 61 + c->rounds);

		if (want == POISON)
			want++;
		if (syshax_buf_alloc(sh, REUSE_SZ, -1, SYSHAX_BUF_ALLOW_SMALL,
				     &src) || syshax_buf_map(sh, &src)) {
			c->bad++;
			break;
		}
		memset(src.addr, want, REUSE_SZ);
		memset(dst.addr, 0, REUSE_SZ);
		syshax_job_copy(&job, &src, 0, &dst, 0, REUSE_SZ, c->rounds);
		if (syshax_submit(sh, &job, 1) != 1 ||
		    syshax_wait(sh, &cpl, 1, 1, 10 * T_SEC) != 1 ||
		    cpl.status || cpl.result != REUSE_SZ ||
		    cpl.user_data != c->rounds)
			c->bad++;
		for (i = 0; i < REUSE_SZ; i += 4096)
			c->bad += ((unsigned char *)dst.addr)[i] != want ||
				  ((unsigned char *)dst.addr)[REUSE_SZ - 1] != want;
		memset(src.addr, POISON, REUSE_SZ);
		syshax_buf_free(sh, &src);
	}
	syshax_buf_free(sh, &dst);
out:
	syshax_close(sh);
	return NULL;
}

/*
 * 4 clients x 2500 rounds of a buffer allocated, used by one COPY job,
 * poisoned and freed, beside one long-lived buffer, under an engine whose
 * library keeps its mappings (SYSHAX_FEAT_MAP_NOTES): every result right,
 * no freed buffer's memory read, the long-lived buffers found mapped, and
 * once all are freed, no mapping kept and nothing counted in the broker.
 */
static void t_reuse(void)
{
	struct shxd_broker_conf conf = {
		.max_pinned_bytes = 64ULL << 20,
		.engine_gid = (gid_t)-1,
	};
	struct reuse_client cl[REUSE_CLIENTS];
	pthread_t ct[REUSE_CLIENTS], et;
	struct reuse_engine e = { 0 };
	struct syshax_version_args v;
	struct syshax_stats_args st;
	unsigned long rounds = 0, bad = 0;
	struct t_broker tb;
	struct syshax *sh;
	unsigned int i;

	CU_ASSERT_EQUAL_FATAL(t_broker_start(&tb, &conf,
					     "/tmp/broker_reuse.XXXXXX",
					     "b.sock"), 0);
	sh = t_broker_open(&tb);
	CU_ASSERT_FATAL(sh != NULL);
	CU_ASSERT_EQUAL(syshax_version(sh, &v), 0);
	CU_ASSERT(v.features & SYSHAX_FEAT_MAP_NOTES);
	e.tb = &tb;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&et, NULL, reuse_engine_main,
					     &e), 0);
	while (!e.attached)
		usleep(1000);
	for (i = 0; i < REUSE_CLIENTS; i++) {
		cl[i] = (struct reuse_client){ .tb = &tb, .id = i };
		CU_ASSERT_EQUAL_FATAL(pthread_create(&ct[i], NULL,
						     reuse_client_main,
						     &cl[i]), 0);
	}
	for (i = 0; i < REUSE_CLIENTS; i++) {
		pthread_join(ct[i], NULL);
		rounds += cl[i].rounds;
		bad += cl[i].bad;
	}
	e.stop = 1;
	pthread_join(et, NULL);
	printf("\n  %lu rounds, %lu jobs, %lu of %lu maps found kept, at most "
	       "%u kept, %u at the end ", rounds, e.jobs, e.hits, 2 * e.jobs,
	       e.most_kept, e.kept_at_end);
	CU_ASSERT_EQUAL(rounds, REUSE_CLIENTS * REUSE_ROUNDS);
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(e.bad, 0);
	CU_ASSERT_EQUAL(e.stale, 0);
	CU_ASSERT_EQUAL(e.jobs, rounds);
	/* Each client's destination stays mapped from its second round. */
	CU_ASSERT(e.hits >= REUSE_CLIENTS * (REUSE_ROUNDS - 1));
	/* Every new kept mapping came with its page tables filled (on
	 * kernels with MADV_POPULATE_WRITE, 5.14 on). */
	printf("%lu new mappings, %lu pages of them absent ", e.fresh,
	       e.absent);
	CU_ASSERT(e.fresh >= rounds);
	if (populate_works())
		CU_ASSERT_EQUAL(e.absent, 0);
	CU_ASSERT_EQUAL(e.kept_at_end, 0);
	CU_ASSERT_EQUAL(syshax_stats(sh, &st), 0);
	CU_ASSERT_EQUAL(st.pinned_bytes, 0);
	CU_ASSERT_EQUAL(st.nr_bufs, 0);
	CU_ASSERT_EQUAL(st.queue_depth, 0);
	CU_ASSERT_EQUAL(st.inflight, 0);
	syshax_close(sh);
	t_broker_stop(&tb);
}

/* Nothing of all that is left in the broker. */
static void t_nothing_left(void)
{
	struct syshax *sh = t_broker_open(&g_tb);
	struct syshax_stats_args st;
	int i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(sh);
	for (i = 0; i < 100; i++) {
		CU_ASSERT_EQUAL(syshax_stats(sh, &st), 0);
		if (!st.pinned_bytes && !st.queue_depth && !st.inflight &&
		    st.contexts == 2)
			break;
		usleep(10000);
	}
	CU_ASSERT_EQUAL(st.pinned_bytes, 0);
	CU_ASSERT_EQUAL(st.queue_depth, 0);
	CU_ASSERT_EQUAL(st.inflight, 0);
	CU_ASSERT_EQUAL(st.contexts, 2);	/* this one and the engine */
	syshax_close(sh);
}

int main(void)
{
	static const struct t_test tests[] = {
		{ "a NOP through the rings", t_engine },
		{ "in_tail ahead or behind: -EPROTO for it alone",
		  t_bad_in_tail },
		{ "out_head past the tail or back: -EPROTO for it alone",
		  t_bad_out_head },
		{ "a job changed after the broker took it",
		  t_changed_after_publish },
		{ "an engine that breaks its rings", t_bad_engine },
		{ "RING_SETUP: sizes, twice, over old-path jobs",
		  t_setup_errors },
		{ "nothing left behind", t_nothing_left },
		{ "broker gone: engine completions, submits -EPIPE",
		  t_broker_gone },
		{ "buffers freed and reused, the engine keeping mappings",
		  t_reuse },
	};

	return T_RUN_SUITE("broker rings", t_setup, t_teardown, tests);
}
