// SPDX-License-Identifier: MIT
/*
 * broker/ring.h on the host, with the user-space shim: the broker's side
 * of the shared rings that the module and syshaxd both compile. The test
 * plays the caller by writing the header's words directly, including the
 * words a broken or hostile caller would write; under the sanitizer build
 * a read or write outside the area fails the run.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <CUnit/Basic.h>

#include "../t_cunit.h"

#define SHX_RING_LOAD_ACQ(p)	__atomic_load_n((p), __ATOMIC_ACQUIRE)
#define SHX_RING_STORE_REL(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define SHX_RING_READ(p)	__atomic_load_n((p), __ATOMIC_RELAXED)
#define SHX_RING_WRITE(p, v)	__atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define SHX_RING_MB()		__atomic_thread_fence(__ATOMIC_SEQ_CST)
#include "ring.h"

#define IN_N	8
#define OUT_N	16

struct t_area {
	struct shx_ring r;
	void *mem;
	size_t size;
};

static void t_make(struct t_area *a)
{
	__u32 in_off, out_off;

	a->size = shx_ring_layout(IN_N, sizeof(struct syshax_job), OUT_N,
				  sizeof(struct syshax_completion), &in_off,
				  &out_off);
	a->mem = calloc(1, a->size);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a->mem);
	shx_ring_init(&a->r, a->mem, IN_N, sizeof(struct syshax_job), OUT_N,
		      sizeof(struct syshax_completion));
}

/* The caller puts job user_data = tag at its tail and publishes. */
static void t_put_job(struct t_area *a, uint64_t tag)
{
	struct syshax_ring_hdr *h = a->r.hdr;
	struct syshax_job *jobs = (void *)((char *)a->mem + h->in_off);
	__u32 t = h->in_tail.v;

	memset(&jobs[t & (IN_N - 1)], 0, sizeof(jobs[0]));
	jobs[t & (IN_N - 1)].user_data = tag;
	__atomic_store_n(&h->in_tail.v, t + 1, __ATOMIC_RELEASE);
}

static void t_layout(void)
{
	struct t_area a;
	struct syshax_ring_hdr *h;

	t_make(&a);
	h = a.r.hdr;
	CU_ASSERT_EQUAL(h->in_entries, IN_N);
	CU_ASSERT_EQUAL(h->out_entries, OUT_N);
	CU_ASSERT_EQUAL(h->in_entry_size, sizeof(struct syshax_job));
	CU_ASSERT_EQUAL(h->out_entry_size, sizeof(struct syshax_completion));
	CU_ASSERT(h->in_off >= sizeof(*h) && h->in_off % 64 == 0);
	CU_ASSERT(h->out_off >= h->in_off + IN_N * sizeof(struct syshax_job));
	CU_ASSERT_EQUAL(h->out_off % 64, 0);
	CU_ASSERT_EQUAL(a.size, h->out_off +
			OUT_N * sizeof(struct syshax_completion));
	free(a.mem);
}

/* Taken entries are private copies; the head follows; wrap-around works. */
static void t_take(void)
{
	struct syshax_job got[IN_N];
	struct t_area a;
	uint64_t tag = 0;
	int round, i, n;

	t_make(&a);
	CU_ASSERT_EQUAL(shx_ring_in_take(&a.r, got, IN_N), 0);
	for (round = 0; round < 5; round++) {
		for (i = 0; i < 5; i++)
			t_put_job(&a, tag + (uint64_t)i);
		CU_ASSERT_EQUAL(shx_ring_in_ready(&a.r), 5);
		n = shx_ring_in_take(&a.r, got, 3);
		CU_ASSERT_EQUAL(n, 3);
		n += shx_ring_in_take(&a.r, got + 3, IN_N);
		CU_ASSERT_EQUAL(n, 5);
		for (i = 0; i < 5; i++)
			CU_ASSERT_EQUAL(got[i].user_data, tag + (uint64_t)i);
		CU_ASSERT_EQUAL(a.r.hdr->in_head.v, a.r.hdr->in_tail.v);
		tag += 5;
	}
	/* The caller may reuse the slots now: our copies do not change. */
	memset((char *)a.mem + a.r.hdr->in_off, 0xff,
	       IN_N * sizeof(struct syshax_job));
	CU_ASSERT_EQUAL(got[4].user_data, tag - 1);
	free(a.mem);
}

/* A tail more than the ring ahead, or behind the head: -EPROTO, DEAD,
 * and it stays so; nothing is copied. */
static void t_bad_in_tail(void)
{
	static const __u32 bad[] = { IN_N + 1, 0x80000000U, (__u32)-1 };
	struct syshax_job got[IN_N];
	unsigned int k;

	for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		struct t_area a;

		t_make(&a);
		t_put_job(&a, 1);
		CU_ASSERT_EQUAL(shx_ring_in_take(&a.r, got, IN_N), 1);
		got[0].user_data = 77;
		a.r.hdr->in_tail.v = a.r.in_head + bad[k];
		CU_ASSERT_EQUAL(shx_ring_in_take(&a.r, got, IN_N), -EPROTO);
		CU_ASSERT_EQUAL(got[0].user_data, 77);
		CU_ASSERT(a.r.hdr->broker_flags.v & SYSHAX_RING_DEAD);
		/* Putting it right does not revive it. */
		a.r.hdr->in_tail.v = a.r.in_head;
		CU_ASSERT_EQUAL(shx_ring_in_ready(&a.r), -EPROTO);
		CU_ASSERT_EQUAL(shx_ring_out_room(&a.r), -EPROTO);
		free(a.mem);
	}
}

/* The out ring: room, full, the caller's head; a head that goes back or
 * past the tail kills it. */
static void t_out(void)
{
	struct syshax_completion c = { .user_data = 5 }, *ring;
	struct t_area a;
	int i;

	t_make(&a);
	ring = (void *)((char *)a.mem + a.r.hdr->out_off);
	CU_ASSERT_EQUAL(shx_ring_out_room(&a.r), OUT_N);
	for (i = 0; i < OUT_N; i++)
		shx_ring_out_put(&a.r, &c);
	CU_ASSERT_EQUAL(a.r.hdr->out_tail.v, 0);	/* not yet published */
	shx_ring_out_publish(&a.r);
	CU_ASSERT_EQUAL(a.r.hdr->out_tail.v, OUT_N);
	CU_ASSERT_EQUAL(shx_ring_out_room(&a.r), 0);
	CU_ASSERT_EQUAL(ring[OUT_N - 1].user_data, 5);
	a.r.hdr->out_head.v = 10;
	CU_ASSERT_EQUAL(shx_ring_out_room(&a.r), 10);
	CU_ASSERT_EQUAL(shx_ring_out_pending(&a.r), OUT_N - 10);
	a.r.hdr->out_head.v = 9;			/* backwards */
	CU_ASSERT_EQUAL(shx_ring_out_room(&a.r), -EPROTO);
	free(a.mem);

	t_make(&a);
	shx_ring_out_put(&a.r, &c);
	shx_ring_out_publish(&a.r);
	a.r.hdr->out_head.v = 2;			/* past the tail */
	CU_ASSERT_EQUAL(shx_ring_out_room(&a.r), -EPROTO);
	CU_ASSERT(a.r.hdr->broker_flags.v & SYSHAX_RING_DEAD);
	free(a.mem);
}

/* After the caller is gone: what it never consumed comes back, newest
 * first, published or not; nothing from a lying out_head. */
static void t_unput(void)
{
	struct syshax_completion c = { 0 }, got;
	struct t_area a;
	int i;

	t_make(&a);
	for (i = 0; i < OUT_N + 4; i++) {	/* wraps around */
		if (i == OUT_N)
			a.r.hdr->out_head.v = 8;
		CU_ASSERT(shx_ring_out_room(&a.r) > 0);
		c.user_data = (uint64_t)i;
		shx_ring_out_put(&a.r, &c);
		if (i == OUT_N + 1)
			shx_ring_out_publish(&a.r);	/* 2 stay unpublished */
	}
	a.r.hdr->out_head.v = 12;
	for (i = OUT_N + 3; i >= 12; i--) {
		CU_ASSERT_EQUAL_FATAL(shx_ring_out_unput(&a.r, &got), 1);
		CU_ASSERT_EQUAL(got.user_data, (uint64_t)i);
	}
	CU_ASSERT_EQUAL(shx_ring_out_unput(&a.r, &got), 0);
	CU_ASSERT_EQUAL(shx_ring_out_pending(&a.r), 0);
	free(a.mem);

	t_make(&a);
	shx_ring_out_put(&a.r, &c);
	shx_ring_out_publish(&a.r);
	a.r.hdr->out_head.v = 5;			/* past the tail */
	CU_ASSERT_EQUAL(shx_ring_out_unput(&a.r, &got), 0);
	CU_ASSERT(a.r.hdr->broker_flags.v & SYSHAX_RING_DEAD);
	free(a.mem);
}

/* The wake-up rule: a sleeping broker asks for kicks unless entries came;
 * a publish tells when the caller sleeps. */
static void t_wakeup(void)
{
	struct syshax_completion c = { 0 };
	struct t_area a;

	t_make(&a);
	CU_ASSERT_EQUAL(shx_ring_sleep_prepare(&a.r), 0);
	CU_ASSERT(a.r.hdr->broker_flags.v & SYSHAX_RING_NEED_WAKEUP);
	shx_ring_awake(&a.r);
	CU_ASSERT_FALSE(a.r.hdr->broker_flags.v & SYSHAX_RING_NEED_WAKEUP);
	t_put_job(&a, 1);
	CU_ASSERT_EQUAL(shx_ring_sleep_prepare(&a.r), 1);
	CU_ASSERT_FALSE(a.r.hdr->broker_flags.v & SYSHAX_RING_NEED_WAKEUP);

	/* Looking before sleeping finds garbage: DEAD stays set. */
	a.r.hdr->in_tail.v = a.r.in_head + 1000;
	CU_ASSERT_EQUAL(shx_ring_sleep_prepare(&a.r), 1);
	CU_ASSERT(a.r.hdr->broker_flags.v & SYSHAX_RING_DEAD);
	CU_ASSERT_EQUAL(shx_ring_sleep_prepare(&a.r), 0);
	CU_ASSERT(a.r.hdr->broker_flags.v & SYSHAX_RING_DEAD);
	free(a.mem);
	t_make(&a);

	shx_ring_out_put(&a.r, &c);
	CU_ASSERT_EQUAL(shx_ring_out_publish(&a.r), 0);
	a.r.hdr->user_flags.v = SYSHAX_RING_WAITING;
	shx_ring_out_put(&a.r, &c);
	CU_ASSERT_EQUAL(shx_ring_out_publish(&a.r), 1);
	free(a.mem);
}

/* RING_SETUP's sizes, the rule both brokers use. */
static void t_sizes(void)
{
	struct syshax_ring_setup_args a = { 0 };

	CU_ASSERT_EQUAL(shx_ring_sizes(0, 128, 1000, &a), 0);
	CU_ASSERT_EQUAL(a.in_entries, 128);
	CU_ASSERT_EQUAL(a.out_entries, 1024);
	a = (struct syshax_ring_setup_args){ 0 };
	CU_ASSERT_EQUAL(shx_ring_sizes(1, 128, 1000, &a), 0);
	CU_ASSERT_EQUAL(a.in_entries, SHX_RING_ENGINE_DEF);
	CU_ASSERT_EQUAL(a.out_entries, SHX_RING_ENGINE_DEF);
	a = (struct syshax_ring_setup_args){ .in_entries = 3 };
	CU_ASSERT_EQUAL(shx_ring_sizes(0, 128, 1024, &a), -EINVAL);
	a = (struct syshax_ring_setup_args){ .in_entries = 256 };
	CU_ASSERT_EQUAL(shx_ring_sizes(0, 128, 1024, &a), -EINVAL);
	a = (struct syshax_ring_setup_args){ .out_entries = 512 };
	CU_ASSERT_EQUAL(shx_ring_sizes(0, 128, 1024, &a), -EINVAL);
	a = (struct syshax_ring_setup_args){ .out_entries = 1U << 17 };
	CU_ASSERT_EQUAL(shx_ring_sizes(0, 128, 1024, &a), -EINVAL);
	a = (struct syshax_ring_setup_args){ .in_entries = 8192 };
	CU_ASSERT_EQUAL(shx_ring_sizes(1, 128, 1024, &a), -EINVAL);
	/* A max_jobs_ctx too big for any out ring: refused, not looped on. */
	a = (struct syshax_ring_setup_args){ 0 };
	CU_ASSERT_EQUAL(shx_ring_sizes(0, 128, 0x80000001U, &a), -EINVAL);
	a = (struct syshax_ring_setup_args){ 0 };
	CU_ASSERT_EQUAL(shx_ring_sizes(0, 128, SHX_RING_CTX_LIMIT, &a), 0);
	CU_ASSERT_EQUAL(a.out_entries, SHX_RING_CTX_LIMIT);
}

/* A caller writing random words into every field of its header: every
 * call returns a count or -EPROTO, never reads or writes outside the
 * area (the sanitizer build checks), and -EPROTO sticks. */
static void t_fuzz(void)
{
	struct syshax_job got[IN_N];
	struct syshax_completion c = { 0 };
	unsigned int seed = 12345, i;

	for (i = 0; i < 2000; i++) {
		struct t_area a;
		int k, dead = 0;

		t_make(&a);
		for (k = 0; k < 20; k++) {
			__u32 v = (__u32)rand_r(&seed);
			int n, room;

			switch (rand_r(&seed) % 4) {
			case 0:
				a.r.hdr->in_tail.v = a.r.in_head + v % 12;
				break;
			case 1:
				a.r.hdr->in_tail.v = v;
				break;
			case 2:
				a.r.hdr->out_head.v = a.r.out_tail - v % 20;
				break;
			default:
				a.r.hdr->user_flags.v = v;
				break;
			}
			n = shx_ring_in_take(&a.r, got, IN_N);
			CU_ASSERT(n == -EPROTO || (n >= 0 && n <= IN_N));
			room = shx_ring_out_room(&a.r);
			CU_ASSERT(room == -EPROTO ||
				  (room >= 0 && room <= OUT_N));
			if (room > 0) {
				shx_ring_out_put(&a.r, &c);
				shx_ring_out_publish(&a.r);
			}
			if (dead)
				CU_ASSERT(n == -EPROTO && room == -EPROTO);
			dead |= n == -EPROTO || room == -EPROTO;
		}
		free(a.mem);
	}
}

int main(void)
{
	static const struct t_test tests[] = {
		{ "layout", t_layout },
		{ "take: private copies, wrap-around", t_take },
		{ "bad in_tail: -EPROTO, DEAD, sticky", t_bad_in_tail },
		{ "out ring: room, bad out_head", t_out },
		{ "out ring: unconsumed entries back", t_unput },
		{ "wake-up rule", t_wakeup },
		{ "RING_SETUP sizes", t_sizes },
		{ "fuzzed caller words", t_fuzz },
	};

	return T_RUN_SUITE("broker/ring.h", NULL, NULL, tests);
}
