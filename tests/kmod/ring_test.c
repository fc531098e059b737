// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The module's shared rings (uapi/syshax.h, "Rings") with raw ioctls and
 * mmap: RING_SETUP's sizes and errors, a NOP round trip through a client's
 * and an engine's rings, and a caller that writes garbage into its own
 * header: its rings die (-EPROTO, SYSHAX_RING_DEAD), a second client keeps
 * working. Runs in the VM (make vm-check).
 */
#include <poll.h>

#include "t_jobs.h"

struct ring {
	int fd;
	struct syshax_ring_setup_args a;
	struct syshax_ring_hdr *h;
	char *in, *out;
};

#define LOAD(p)		__atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE(p, v)	__atomic_store_n((p), (v), __ATOMIC_RELEASE)

static int ring_setup_flags(int fd, struct ring *r, uint32_t in,
			    uint32_t out, uint32_t flags)
{
	int ret;

	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->a.in_entries = in;
	r->a.out_entries = out;
	r->a.flags = flags;
	ret = t_ioctl(fd, SYSHAX_IOC_RING_SETUP, &r->a);
	if (ret)
		return ret;
	r->h = mmap(NULL, r->a.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		    (off_t)r->a.mmap_offset);
	if (r->h == MAP_FAILED)
		return -errno;
	r->in = (char *)r->h + r->h->in_off;
	r->out = (char *)r->h + r->h->out_off;
	return 0;
}

static int ring_setup(int fd, struct ring *r, uint32_t in, uint32_t out)
{
	return ring_setup_flags(fd, r, in, out, 0);
}

static void ring_close(struct ring *r)
{
	if (r->h && r->h != MAP_FAILED)
		munmap(r->h, r->a.size);
	close(r->fd);
}

static struct ring client(void)
{
	struct ring r;

	CU_ASSERT_EQUAL_FATAL(ring_setup(t_fd(), &r, 0, 0), 0);
	return r;
}

static struct ring engine(void)
{
	struct ring r;

	CU_ASSERT_EQUAL_FATAL(ring_setup(t_engine(), &r, 0, 0), 0);
	return r;
}

static int kick(struct ring *r)
{
	struct syshax_submit_args s = { .flags = SYSHAX_SUBMIT_RING };

	return t_count(r->fd, SYSHAX_IOC_SUBMIT, &s);
}

static int readable(struct ring *r, int timeout_ms)
{
	struct pollfd p = { .fd = r->fd, .events = POLLIN };

	return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

static void *in_slot(struct ring *r, uint32_t i)
{
	return r->in + (size_t)(i & (r->h->in_entries - 1)) *
		       r->h->in_entry_size;
}

static void *out_slot(struct ring *r, uint32_t i)
{
	return r->out + (size_t)(i & (r->h->out_entries - 1)) *
			r->h->out_entry_size;
}

/* Puts a NOP in the client's in ring, publishes it and kicks. */
static int put_nop(struct ring *c, uint64_t user_data)
{
	uint32_t tail = c->h->in_tail.v;

	t_nop(in_slot(c, tail), user_data);
	STORE(&c->h->in_tail.v, tail + 1);
	return kick(c);
}

/* Out entries published and not consumed. */
static uint32_t out_ready(struct ring *r)
{
	return LOAD(&r->h->out_tail.v) - r->h->out_head.v;
}

/* The engine's next fetched job (waits for it), its slot consumed. */
static int engine_take(struct ring *e, struct syshax_engine_job *ej)
{
	if (!readable(e, 5000) || !out_ready(e))
		return -ETIMEDOUT;
	memcpy(ej, out_slot(e, e->h->out_head.v), sizeof(*ej));
	STORE(&e->h->out_head.v, e->h->out_head.v + 1);
	return 0;
}

static int engine_complete(struct ring *e, uint64_t token, int32_t status,
			   uint64_t result)
{
	struct syshax_engine_cpl c = {
		.token = token, .status = status, .result = result,
	};
	uint32_t tail = e->h->in_tail.v;

	memcpy(in_slot(e, tail), &c, sizeof(c));
	STORE(&e->h->in_tail.v, tail + 1);
	return kick(e);
}

/* The client's next completion (waits for it), its slot consumed. */
static int client_reap(struct ring *c, struct syshax_completion *cpl)
{
	if (!readable(c, 5000) || !out_ready(c))
		return -ETIMEDOUT;
	memcpy(cpl, out_slot(c, c->h->out_head.v), sizeof(*cpl));
	STORE(&c->h->out_head.v, c->h->out_head.v + 1);
	return 0;
}

/* One NOP from c through e and back. */
static void round_trip(struct ring *c, struct ring *e, uint64_t user_data)
{
	struct syshax_engine_job ej;
	struct syshax_completion cpl;

	CU_ASSERT_EQUAL_FATAL(put_nop(c, user_data), 0);
	CU_ASSERT_EQUAL_FATAL(engine_take(e, &ej), 0);
	CU_ASSERT_EQUAL(ej.job.user_data, user_data);
	CU_ASSERT_EQUAL(ej.job.op, SYSHAX_OP_NOP);
	CU_ASSERT_EQUAL(engine_complete(e, ej.token, 0, user_data + 1), 0);
	CU_ASSERT_EQUAL_FATAL(client_reap(c, &cpl), 0);
	CU_ASSERT_EQUAL(cpl.user_data, user_data);
	CU_ASSERT_EQUAL(cpl.status, 0);
	CU_ASSERT_EQUAL(cpl.result, user_data + 1);
	/* Level-triggered: an empty out ring is not readable. */
	CU_ASSERT_FALSE(readable(c, 0));
}

static unsigned int param_uint(const char *name)
{
	char buf[32];

	CU_ASSERT_EQUAL_FATAL(t_param_get(name, buf, sizeof(buf)), 0);
	return (unsigned int)strtoul(buf, NULL, 0);
}

static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

static void t_version(void)
{
	struct syshax_version_args v;
	int fd = t_fd();

	memset(&v, 0, sizeof(v));
	CU_ASSERT_EQUAL(t_ioctl(fd, SYSHAX_IOC_VERSION, &v), 0);
	CU_ASSERT_EQUAL(v.uapi_version, 2);
	CU_ASSERT(v.features & SYSHAX_FEAT_RINGS);
	CU_ASSERT(v.features & SYSHAX_FEAT_MAP_NOTES);
	close(fd);
}

static void t_setup_client(void)
{
	unsigned int ctx_max = param_uint("max_jobs_ctx");
	struct syshax_ring_setup_args a;
	struct syshax_wait_args w = { .max = 1 };
	struct syshax_engine_attach_args at = { .node = -1 };
	struct syshax_submit_args s = { .nr = 1 };
	struct syshax_completion cpl;
	struct syshax_job job;
	struct ring r;
	int fd = t_fd();
	void *p;

	/* Nothing at offset 0 before RING_SETUP. */
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CU_ASSERT(p == MAP_FAILED && errno == EINVAL);

	memset(&a, 0, sizeof(a));
	a.in_entries = 3;
	CU_ASSERT_EQUAL(t_ioctl(fd, SYSHAX_IOC_RING_SETUP, &a), -EINVAL);
	memset(&a, 0, sizeof(a));
	a.in_entries = 256;	/* over max_submit */
	CU_ASSERT_EQUAL(t_ioctl(fd, SYSHAX_IOC_RING_SETUP, &a), -EINVAL);
	memset(&a, 0, sizeof(a));
	a.out_entries = pow2_at_least(ctx_max) / 2;	/* below max_jobs_ctx */
	CU_ASSERT_EQUAL(t_ioctl(fd, SYSHAX_IOC_RING_SETUP, &a), -EINVAL);
	memset(&a, 0, sizeof(a));
	a.out_entries = 3 * 1024;
	CU_ASSERT_EQUAL(t_ioctl(fd, SYSHAX_IOC_RING_SETUP, &a), -EINVAL);
	memset(&a, 0, sizeof(a));
	a.flags = 1;
	CU_ASSERT_EQUAL(t_ioctl(fd, SYSHAX_IOC_RING_SETUP, &a), -EINVAL);
	memset(&a, 0, sizeof(a));
	a.max_jobs = 1;
	CU_ASSERT_EQUAL(t_ioctl(fd, SYSHAX_IOC_RING_SETUP, &a), -EINVAL);

	CU_ASSERT_EQUAL_FATAL(ring_setup(fd, &r, 0, 0), 0);
	CU_ASSERT_EQUAL(r.a.in_entries, 128);
	CU_ASSERT_EQUAL(r.a.out_entries, pow2_at_least(ctx_max));
	CU_ASSERT_EQUAL(r.a.max_jobs, ctx_max);
	CU_ASSERT_EQUAL(r.a.mmap_offset, 0);
	CU_ASSERT_EQUAL(r.a.size % 4096, 0);
	CU_ASSERT_EQUAL(r.h->in_entries, 128);
	CU_ASSERT_EQUAL(r.h->out_entries, r.a.out_entries);
	CU_ASSERT_EQUAL(r.h->in_entry_size, sizeof(struct syshax_job));
	CU_ASSERT_EQUAL(r.h->out_entry_size, sizeof(struct syshax_completion));
	CU_ASSERT(r.h->in_off >= sizeof(struct syshax_ring_hdr));
	CU_ASSERT(r.h->out_off >= r.h->in_off + 128 * sizeof(struct syshax_job));
	CU_ASSERT(r.h->out_off + (uint64_t)r.h->out_entries *
		  sizeof(struct syshax_completion) <= r.a.size);
	/* The module never polls: it always wants kicks. */
	CU_ASSERT_EQUAL(r.h->broker_flags.v, SYSHAX_RING_NEED_WAKEUP);
	CU_ASSERT_EQUAL(r.h->in_head.v, 0);
	CU_ASSERT_EQUAL(r.h->out_tail.v, 0);

	/* Twice, or other offsets and sizes of the area: no. */
	memset(&a, 0, sizeof(a));
	CU_ASSERT_EQUAL(t_ioctl(fd, SYSHAX_IOC_RING_SETUP, &a), -EBUSY);
	p = mmap(NULL, r.a.size + 4096, PROT_READ, MAP_SHARED, fd, 0);
	CU_ASSERT(p == MAP_FAILED);
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 4096);
	CU_ASSERT(p == MAP_FAILED);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	CU_ASSERT(p == MAP_FAILED);

	/* The ring is the only way now. */
	t_nop(&job, 1);
	s.jobs = (uintptr_t)&job;
	CU_ASSERT_EQUAL(t_count(fd, SYSHAX_IOC_SUBMIT, &s), -EBUSY);
	s.flags = 1U << 5;
	CU_ASSERT_EQUAL(t_count(fd, SYSHAX_IOC_SUBMIT, &s), -EINVAL);
	w.cpls = (uintptr_t)&cpl;
	CU_ASSERT_EQUAL(t_count(fd, SYSHAX_IOC_WAIT, &w), -EBUSY);
	CU_ASSERT_EQUAL(t_ioctl(fd, SYSHAX_IOC_ENGINE_ATTACH, &at), -EBUSY);
	/* An empty ring's kick takes nothing and is fine. */
	CU_ASSERT_EQUAL(kick(&r), 0);
	CU_ASSERT_EQUAL(r.h->in_head.v, 0);
	CU_ASSERT_FALSE(readable(&r, 0));
	ring_close(&r);
}

static void t_setup_engine(void)
{
	struct syshax_engine_fetch_args f = { .max = 1 };
	struct syshax_engine_complete_args c = { .nr = 1 };
	struct syshax_engine_job ej;
	struct syshax_engine_cpl cpl = { 0 };
	struct syshax_ring_setup_args a;
	struct ring r;
	int fd = t_engine();

	memset(&a, 0, sizeof(a));
	a.in_entries = 8192;
	CU_ASSERT_EQUAL(t_ioctl(fd, SYSHAX_IOC_RING_SETUP, &a), -EINVAL);
	memset(&a, 0, sizeof(a));
	a.out_entries = 6;
	CU_ASSERT_EQUAL(t_ioctl(fd, SYSHAX_IOC_RING_SETUP, &a), -EINVAL);
	memset(&a, 0, sizeof(a));
	a.flags = SYSHAX_RING_NOTES << 1;
	CU_ASSERT_EQUAL(t_ioctl(fd, SYSHAX_IOC_RING_SETUP, &a), -EINVAL);
	CU_ASSERT_EQUAL_FATAL(ring_setup(fd, &r, 0, 0), 0);
	CU_ASSERT_EQUAL(r.a.in_entries, 256);
	CU_ASSERT_EQUAL(r.a.out_entries, 256);
	CU_ASSERT_EQUAL(r.a.max_jobs, 0);
	CU_ASSERT_EQUAL(r.h->in_entry_size, sizeof(struct syshax_engine_cpl));
	CU_ASSERT_EQUAL(r.h->out_entry_size, sizeof(struct syshax_engine_job));
	memset(&a, 0, sizeof(a));
	CU_ASSERT_EQUAL(t_ioctl(fd, SYSHAX_IOC_RING_SETUP, &a), -EBUSY);
	f.jobs = (uintptr_t)&ej;
	CU_ASSERT_EQUAL(t_count(fd, SYSHAX_IOC_ENGINE_FETCH, &f), -EBUSY);
	c.cpls = (uintptr_t)&cpl;
	CU_ASSERT_EQUAL(t_count(fd, SYSHAX_IOC_ENGINE_COMPLETE, &c), -EBUSY);
	ring_close(&r);

	/* Small engine rings are allowed. */
	CU_ASSERT_EQUAL_FATAL(ring_setup(t_engine(), &r, 1, 1), 0);
	CU_ASSERT_EQUAL(r.h->in_entries, 1);
	CU_ASSERT_EQUAL(r.h->out_entries, 1);
	ring_close(&r);
}

static void t_nop_round_trip(void)
{
	struct ring c = client(), e = engine();
	struct syshax_completion cpl;
	struct syshax_engine_job ej;
	struct syshax_job *bad;
	uint32_t tail;
	int i;

	CU_ASSERT_FALSE(readable(&e, 0));
	for (i = 1; i <= 3; i++)
		round_trip(&c, &e, 1000 + i);
	CU_ASSERT_EQUAL(c.h->in_head.v, 3);

	/* A job the checks refuse completes at once, with the errno. */
	tail = c.h->in_tail.v;
	bad = in_slot(&c, tail);
	t_nop(bad, 77);
	bad->refs[0].buf = 12345;	/* a NOP has no refs */
	bad->nr_refs = 1;
	bad->refs[0].access = SYSHAX_ACCESS_READ;
	bad->refs[0].length = 1;
	STORE(&c.h->in_tail.v, tail + 1);
	CU_ASSERT_EQUAL(kick(&c), 0);
	CU_ASSERT_EQUAL_FATAL(client_reap(&c, &cpl), 0);
	CU_ASSERT_EQUAL(cpl.user_data, 77);
	CU_ASSERT_EQUAL(cpl.status, -EINVAL);
	CU_ASSERT_FALSE(readable(&e, 0));

	/* An engine's completion with a bad token kills its rings. */
	CU_ASSERT_EQUAL(put_nop(&c, 88), 0);
	CU_ASSERT_EQUAL_FATAL(engine_take(&e, &ej), 0);
	CU_ASSERT_EQUAL(engine_complete(&e, ej.token + 1000, 0, 0), -EPROTO);
	CU_ASSERT(e.h->broker_flags.v & SYSHAX_RING_DEAD);
	CU_ASSERT(readable(&e, 0));
	/* Its held job ends with -EPIPE when it goes. */
	ring_close(&e);
	CU_ASSERT_EQUAL_FATAL(client_reap(&c, &cpl), 0);
	CU_ASSERT_EQUAL(cpl.user_data, 88);
	CU_ASSERT_EQUAL(cpl.status, -EPIPE);
	CU_ASSERT_FALSE(c.h->broker_flags.v & SYSHAX_RING_DEAD);
	ring_close(&c);
}

enum garbage {
	TAIL_AHEAD, TAIL_BACK, OUT_HEAD_PAST, OUT_HEAD_BACK, JOB_CHANGED,
};

/* The victim breaks its own rings; the other client and the engine keep
 * working. */
static void garbage(enum garbage g)
{
	struct ring bad = client(), good = client(), e = engine();
	struct syshax_engine_job ej;
	struct syshax_job *slot;
	int want = g == JOB_CHANGED ? 0 : -EPROTO;

	round_trip(&good, &e, 1);
	switch (g) {
	case TAIL_AHEAD:
		STORE(&bad.h->in_tail.v, bad.h->in_entries + 1);
		break;
	case TAIL_BACK:
		round_trip(&bad, &e, 2);
		STORE(&bad.h->in_tail.v, 0);
		break;
	case OUT_HEAD_PAST:
		STORE(&bad.h->out_head.v, 1);
		break;
	case OUT_HEAD_BACK:
		round_trip(&bad, &e, 2);
		/* The module sees the head at 1 first. */
		CU_ASSERT_EQUAL(kick(&bad), 0);
		STORE(&bad.h->out_head.v, 0);
		break;
	case JOB_CHANGED:
		CU_ASSERT_EQUAL(put_nop(&bad, 3), 0);
		CU_ASSERT_EQUAL(bad.h->in_head.v, 1);
		/* After the kick returned: another job in the same slot, and
		 * the tail left alone. */
		slot = in_slot(&bad, 0);
		slot->user_data = 4;
		slot->op = 0xdead;
		CU_ASSERT_EQUAL_FATAL(engine_take(&e, &ej), 0);
		CU_ASSERT_EQUAL(ej.job.user_data, 3);
		CU_ASSERT_EQUAL(ej.job.op, SYSHAX_OP_NOP);
		CU_ASSERT_EQUAL(engine_complete(&e, ej.token, 0, 0), 0);
		break;
	}
	CU_ASSERT_EQUAL(kick(&bad), want);
	if (want) {
		CU_ASSERT(bad.h->broker_flags.v & SYSHAX_RING_DEAD);
		CU_ASSERT(readable(&bad, 0));
		/* Dead for good, whatever it writes now. */
		STORE(&bad.h->in_tail.v, bad.h->in_head.v);
		STORE(&bad.h->out_head.v, bad.h->out_tail.v);
		CU_ASSERT_EQUAL(kick(&bad), -EPROTO);
	} else {
		/* Nothing new was published: nothing more is queued. */
		CU_ASSERT_EQUAL(bad.h->in_head.v, 1);
		CU_ASSERT_FALSE(readable(&e, 100));
		CU_ASSERT_FALSE(bad.h->broker_flags.v & SYSHAX_RING_DEAD);
	}
	CU_ASSERT_FALSE(good.h->broker_flags.v & SYSHAX_RING_DEAD);
	CU_ASSERT_FALSE(e.h->broker_flags.v & SYSHAX_RING_DEAD);
	round_trip(&good, &e, 5);
	round_trip(&good, &e, 6);
	ring_close(&bad);
	round_trip(&good, &e, 7);
	ring_close(&good);
	ring_close(&e);
}

static void t_tail_ahead(void)
{
	garbage(TAIL_AHEAD);
}

static void t_tail_back(void)
{
	garbage(TAIL_BACK);
}

static void t_out_head_past(void)
{
	garbage(OUT_HEAD_PAST);
}

static void t_out_head_back(void)
{
	garbage(OUT_HEAD_BACK);
}

static void t_job_changed(void)
{
	garbage(JOB_CHANGED);
}

/*
 * The global or the per-user limit (param): SYSHAX_RING_FULL while it is
 * reached, and what it left in a ring is queued once jobs retire, without
 * another kick.
 */
static void limit(const char *param)
{
	struct ring c = client(), late, e;
	struct syshax_engine_job ej[3];
	struct syshax_completion cpl;
	char saved[32];
	int i;

	CU_ASSERT_EQUAL_FATAL(t_param_get(param, saved, sizeof(saved)), 0);
	CU_ASSERT_EQUAL_FATAL(t_param_set(param, "2"), 0);
	for (i = 1; i <= 3; i++)
		CU_ASSERT_EQUAL(put_nop(&c, i), 0);
	/* No engine yet: two queued, the third waits in the ring. */
	CU_ASSERT_EQUAL(c.h->in_head.v, 2);
	CU_ASSERT(c.h->broker_flags.v & SYSHAX_RING_FULL);
	CU_ASSERT_EQUAL(kick(&c), 0);
	CU_ASSERT_EQUAL(c.h->in_head.v, 2);
	/* A ring set up while full starts with the flag. */
	late = client();
	CU_ASSERT(late.h->broker_flags.v & SYSHAX_RING_FULL);

	e = engine();
	CU_ASSERT_EQUAL_FATAL(engine_take(&e, &ej[0]), 0);
	CU_ASSERT_EQUAL_FATAL(engine_take(&e, &ej[1]), 0);
	CU_ASSERT_EQUAL(ej[0].job.user_data, 1);
	CU_ASSERT_EQUAL(ej[1].job.user_data, 2);
	CU_ASSERT_FALSE(readable(&e, 0));
	/* Completing them lets the third in. */
	CU_ASSERT_EQUAL(engine_complete(&e, ej[0].token, 0, 0), 0);
	CU_ASSERT_EQUAL(engine_complete(&e, ej[1].token, 0, 0), 0);
	CU_ASSERT_EQUAL_FATAL(engine_take(&e, &ej[2]), 0);
	CU_ASSERT_EQUAL(ej[2].job.user_data, 3);
	CU_ASSERT_EQUAL(c.h->in_head.v, 3);
	CU_ASSERT_FALSE(c.h->broker_flags.v & SYSHAX_RING_FULL);
	CU_ASSERT_FALSE(late.h->broker_flags.v & SYSHAX_RING_FULL);
	CU_ASSERT_EQUAL(engine_complete(&e, ej[2].token, 0, 0), 0);
	for (i = 1; i <= 3; i++) {
		CU_ASSERT_EQUAL_FATAL(client_reap(&c, &cpl), 0);
		CU_ASSERT_EQUAL(cpl.user_data, (uint64_t)i);
		CU_ASSERT_EQUAL(cpl.status, 0);
	}
	CU_ASSERT_EQUAL(t_param_set(param, saved), 0);
	ring_close(&late);
	ring_close(&c);
	ring_close(&e);
}

static void t_global_limit(void)
{
	limit("max_jobs_global");
}

/* The same user (root) set both rings up. */
static void t_user_limit(void)
{
	limit("max_jobs_user");
}

/* Closing with jobs in the rings and in flight: all freed (the harness
 * checks the kernel log and pinned bytes). */
static void t_close_busy(void)
{
	struct ring c = client(), e = engine();
	struct syshax_engine_job ej;
	struct syshax_stats_args st;
	int fd;

	CU_ASSERT_EQUAL(put_nop(&c, 1), 0);
	CU_ASSERT_EQUAL(put_nop(&c, 2), 0);
	CU_ASSERT_EQUAL_FATAL(engine_take(&e, &ej), 0);
	/* One more published, never kicked. */
	t_nop(in_slot(&c, c.h->in_tail.v), 3);
	STORE(&c.h->in_tail.v, c.h->in_tail.v + 1);
	ring_close(&c);
	CU_ASSERT_EQUAL(engine_complete(&e, ej.token, 0, 0), 0);
	ring_close(&e);
	fd = t_fd();
	st = t_stats(fd);
	CU_ASSERT_EQUAL(st.queue_depth, 0);
	CU_ASSERT_EQUAL(st.inflight, 0);
	CU_ASSERT_EQUAL(st.engines, 0);
	close(fd);
}

/*
 * A COPY job from c done by e through ENGINE_MAP: its mappings (made at
 * the first call) and the buffers' global ids.
 */
static void notes_copy(struct ring *c, struct ring *e, uint32_t src,
		       uint32_t dst, void **ms, void **md, uint64_t ids[2])
{
	struct syshax_engine_map_args m[2];
	struct syshax_completion cpl;
	struct syshax_engine_job ej;
	uint32_t tail = c->h->in_tail.v;
	int i;

	t_copy(in_slot(c, tail), src, dst, 9);
	STORE(&c->h->in_tail.v, tail + 1);
	CU_ASSERT_EQUAL_FATAL(kick(c), 0);
	CU_ASSERT_EQUAL_FATAL(engine_take(e, &ej), 0);
	CU_ASSERT_NOT_EQUAL(ej.token, SYSHAX_NOTE_TOKEN);
	for (i = 0; i < 2; i++) {
		memset(&m[i], 0, sizeof(m[i]));
		m[i].id = ej.job.refs[i].buf;
		CU_ASSERT_EQUAL_FATAL(t_ioctl(e->fd, SYSHAX_IOC_ENGINE_MAP,
					      &m[i]), 0);
	}
	/* Mapped once: a kept map gives the same offset again. */
	if (!*ms) {
		*ms = t_map(e->fd, m[0].mmap_offset, m[0].size);
		*md = t_map(e->fd, m[1].mmap_offset, m[1].size);
		CU_ASSERT_FATAL(*ms && *md);
	}
	memcpy(*md, *ms, 4096);
	ids[0] = m[0].id;
	ids[1] = m[1].id;
	CU_ASSERT_EQUAL(engine_complete(e, ej.token, 0, 4096), 0);
	CU_ASSERT_EQUAL_FATAL(client_reap(c, &cpl), 0);
	CU_ASSERT_EQUAL(cpl.status, 0);
}

/* The engine's next entry is a BUF_GONE note of id. */
static void notes_gone(struct ring *e, uint64_t id)
{
	struct syshax_engine_job ej;

	CU_ASSERT_EQUAL_FATAL(engine_take(e, &ej), 0);
	CU_ASSERT_EQUAL(ej.token, SYSHAX_NOTE_TOKEN);
	CU_ASSERT_EQUAL(ej.job.op, SYSHAX_NOTE_BUF_GONE);
	CU_ASSERT_EQUAL(ej.job.nr_refs, 1);
	CU_ASSERT_EQUAL(ej.job.refs[0].buf, id);
}

/*
 * SYSHAX_RING_NOTES: the engine's map outlives its jobs (the same offset
 * at the next job); the client's free sends a BUF_GONE note, after which
 * the engine's handle is gone and only its mapping holds the pages; its
 * munmap returns them. Closing the client does the same for what it held.
 */
static void t_notes(void)
{
	struct syshax_buf_alloc_args src, dst;
	struct syshax_engine_map_args m;
	struct ring c = client(), e;
	void *ms = NULL, *md = NULL;
	uint64_t ids[2], again[2], base;
	uint8_t *p;
	int fd = t_fd();

	base = t_pinned(fd);
	CU_ASSERT_EQUAL_FATAL(ring_setup_flags(t_engine(), &e, 0, 0,
					       SYSHAX_RING_NOTES), 0);
	src = t_buf(c.fd);
	dst = t_buf(c.fd);
	p = t_map(c.fd, src.mmap_offset, T_BUF_SIZE);
	CU_ASSERT_FATAL(p != NULL);
	memset(p, 0x5a, 4096);
	notes_copy(&c, &e, src.handle, dst.handle, &ms, &md, ids);
	memset(p, 0x3c, 4096);
	notes_copy(&c, &e, src.handle, dst.handle, &ms, &md, again);
	CU_ASSERT(ids[0] == again[0] && ids[1] == again[1]);
	CU_ASSERT_EQUAL(((uint8_t *)md)[4095], 0x3c);
	CU_ASSERT_FALSE(readable(&e, 0));
	/* The client's own mapping does not keep it live. */
	CU_ASSERT_EQUAL(t_free(c.fd, src.handle), 0);
	notes_gone(&e, ids[0]);
	memset(&m, 0, sizeof(m));
	m.id = ids[0];
	CU_ASSERT_EQUAL(t_ioctl(e.fd, SYSHAX_IOC_ENGINE_MAP, &m), -EACCES);
	CU_ASSERT_EQUAL(t_pinned(fd), base + 2 * T_BUF_SIZE);
	munmap(p, T_BUF_SIZE);
	CU_ASSERT_EQUAL(t_pinned(fd), base + 2 * T_BUF_SIZE);
	munmap(ms, T_BUF_SIZE);
	CU_ASSERT_EQUAL(t_pinned(fd), base + T_BUF_SIZE);
	CU_ASSERT_EQUAL(t_ioctl(e.fd, SYSHAX_IOC_ENGINE_MAP, &m), -ENOENT);
	/* The client goes: its last buffer's note. */
	ring_close(&c);
	notes_gone(&e, ids[1]);
	CU_ASSERT_FALSE(readable(&e, 0));
	CU_ASSERT_EQUAL(t_pinned(fd), base + T_BUF_SIZE);
	munmap(md, T_BUF_SIZE);
	CU_ASSERT_EQUAL(t_pinned(fd), base);
	ring_close(&e);
	close(fd);
}

int main(void)
{
	static const struct t_test tests[] = {
		{ "version has rings", t_version },
		{ "client ring setup: sizes and errors", t_setup_client },
		{ "engine ring setup: sizes and errors", t_setup_engine },
		{ "NOP round trip, bad job, bad token", t_nop_round_trip },
		{ "garbage: in_tail far ahead", t_tail_ahead },
		{ "garbage: in_tail backwards", t_tail_back },
		{ "garbage: out_head past out_tail", t_out_head_past },
		{ "garbage: out_head backwards", t_out_head_back },
		{ "garbage: job changed after the kick", t_job_changed },
		{ "global limit: FULL, the rest later", t_global_limit },
		{ "user limit: FULL, the rest later", t_user_limit },
		{ "close with jobs in rings and in flight", t_close_busy },
		{ "notes: a map kept until its buffer's BUF_GONE", t_notes },
	};

	return T_MAIN("kmod_ring", "kmod rings", NULL, NULL, tests);
}
