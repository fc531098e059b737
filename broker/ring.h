/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The broker's side of a context's shared rings (uapi/syshax.h, "Rings"):
 * taking entries from the in ring, filling the out ring, and the wake-up
 * rule. One copy, compiled into the module's broker and syshaxd's, as
 * job_check.h is. The caller's words in the shared header are read, never
 * trusted: the broker keeps its own indices, and a caller that moves its
 * indices where they cannot be kills its own rings (-EPROTO), nothing else.
 *
 * The includer supplies the memory-ordering shim (kernel: smp_*; user: C11
 * atomics) as SHX_RING_LOAD_ACQ(p), SHX_RING_STORE_REL(p, v),
 * SHX_RING_READ(p), SHX_RING_WRITE(p, v) and SHX_RING_MB(). No locking:
 * one consumer and one producer per ring on this side (the caller's lock).
 */
#ifndef SYSHAX_RING_H
#define SYSHAX_RING_H

#ifdef __KERNEL__
#include <linux/errno.h>
#include <linux/string.h>
#include <linux/types.h>
#else
#include <errno.h>
#include <string.h>
#endif
#include "syshax.h"

struct shx_ring {
	struct syshax_ring_hdr *hdr;	/* shared with the caller */
	char *in, *out;			/* their entries */
	__u32 in_entries, out_entries;	/* powers of two */
	__u32 in_size, out_size;	/* bytes per entry */
	__u32 in_head;			/* ours: next in entry to take */
	__u32 out_tail;			/* ours: next out entry to fill */
	__u32 out_head;			/* the caller's, last seen */
	int dead;			/* -EPROTO once the caller broke it */
};

/* An engine's rings: most and default entries. A client's out ring holds
 * at most SHX_RING_CLIENT_OUT_MAX completions unless max_jobs_ctx needs
 * more, and max_jobs_ctx may ask for SHX_RING_CTX_LIMIT at most. */
#define SHX_RING_ENGINE_MAX	4096
#define SHX_RING_ENGINE_DEF	256
#define SHX_RING_CLIENT_OUT_MAX	65536
#define SHX_RING_CTX_LIMIT	(1U << 24)

static inline int shx_ring_pow2(__u32 n)
{
	return n && !(n & (n - 1));
}

/*
 * RING_SETUP's sizes for a context in the given role (both brokers' rule):
 * fills in the defaults for zero, -EINVAL for sizes that are not powers of
 * two or out of range. A client's in ring holds up to max_submit jobs, its
 * out ring at least max_jobs_ctx completions, so one always has room.
 */
static inline int shx_ring_sizes(int engine, __u32 max_submit,
				 __u32 max_jobs_ctx,
				 struct syshax_ring_setup_args *a)
{
	__u32 out_min = 1, in_max = SHX_RING_ENGINE_MAX;
	__u32 out_max = SHX_RING_ENGINE_MAX;

	if (!engine) {
		if (max_jobs_ctx > SHX_RING_CTX_LIMIT)
			return -EINVAL;
		while (out_min < max_jobs_ctx)
			out_min <<= 1;
		in_max = max_submit;
		out_max = out_min > SHX_RING_CLIENT_OUT_MAX ? out_min :
			  SHX_RING_CLIENT_OUT_MAX;
	}
	if (!a->in_entries)
		a->in_entries = engine ? SHX_RING_ENGINE_DEF : max_submit;
	if (!a->out_entries)
		a->out_entries = engine ? SHX_RING_ENGINE_DEF : out_min;
	if (!shx_ring_pow2(a->in_entries) || a->in_entries > in_max ||
	    !shx_ring_pow2(a->out_entries) || a->out_entries < out_min ||
	    a->out_entries > out_max)
		return -EINVAL;
	return 0;
}

/* Where the entries go in an area: the header, then each ring aligned to
 * 64 bytes. Returns the area's size. */
static inline __u64 shx_ring_layout(__u32 in_entries, __u32 in_size,
				    __u32 out_entries, __u32 out_size,
				    __u32 *in_off, __u32 *out_off)
{
	__u64 in_bytes = (__u64)in_entries * in_size;

	*in_off = (sizeof(struct syshax_ring_hdr) + 63) & ~63U;
	*out_off = (__u32)((*in_off + in_bytes + 63) & ~63ULL);
	return *out_off + (__u64)out_entries * out_size;
}

/* Fills a zeroed area of shx_ring_layout()'s size and r's view of it. */
static inline void shx_ring_init(struct shx_ring *r, void *area,
				 __u32 in_entries, __u32 in_size,
				 __u32 out_entries, __u32 out_size)
{
	struct syshax_ring_hdr *h = area;
	__u32 in_off, out_off;

	shx_ring_layout(in_entries, in_size, out_entries, out_size, &in_off,
			&out_off);
	memset(r, 0, sizeof(*r));
	h->in_entries = in_entries;
	h->out_entries = out_entries;
	h->in_off = in_off;
	h->out_off = out_off;
	h->in_entry_size = in_size;
	h->out_entry_size = out_size;
	r->hdr = h;
	r->in = (char *)area + in_off;
	r->out = (char *)area + out_off;
	r->in_entries = in_entries;
	r->out_entries = out_entries;
	r->in_size = in_size;
	r->out_size = out_size;
}

static inline int shx_ring_kill(struct shx_ring *r)
{
	r->dead = -EPROTO;
	SHX_RING_WRITE(&r->hdr->broker_flags.v,
		       SHX_RING_READ(&r->hdr->broker_flags.v) |
		       SYSHAX_RING_DEAD);
	return r->dead;
}

/* Entries published in the in ring and not yet taken; -EPROTO for a tail
 * that cannot be (behind the head, or more than the ring ahead). */
static inline int shx_ring_in_ready(struct shx_ring *r)
{
	__u32 n;

	if (r->dead)
		return r->dead;
	n = SHX_RING_LOAD_ACQ(&r->hdr->in_tail.v) - r->in_head;
	if (n > r->in_entries)
		return shx_ring_kill(r);
	return (int)n;
}

/*
 * Copies up to max published in entries to dst (private memory: each is
 * read from the ring once, before anything checks it) and gives their
 * slots back. Returns the number taken or -EPROTO.
 */
static inline int shx_ring_in_take(struct shx_ring *r, void *dst,
				   unsigned int max)
{
	int n = shx_ring_in_ready(r);
	unsigned int i;

	if (n <= 0)
		return n;
	if ((unsigned int)n > max)
		n = (int)max;
	for (i = 0; i < (unsigned int)n; i++)
		memcpy((char *)dst + (size_t)i * r->in_size,
		       r->in + (size_t)((r->in_head + i) &
					(r->in_entries - 1)) * r->in_size,
		       r->in_size);
	r->in_head += (__u32)n;
	SHX_RING_STORE_REL(&r->hdr->in_head.v, r->in_head);
	return n;
}

/* Out entries written and not yet consumed by the caller (after
 * shx_ring_out_room() read its head). */
static inline __u32 shx_ring_out_pending(const struct shx_ring *r)
{
	return r->out_tail - r->out_head;
}

/*
 * Free out slots; -EPROTO for a head that went backwards or passed the
 * tail.
 */
static inline int shx_ring_out_room(struct shx_ring *r)
{
	__u32 head;

	if (r->dead)
		return r->dead;
	head = SHX_RING_LOAD_ACQ(&r->hdr->out_head.v);
	if (head - r->out_head > r->out_tail - r->out_head)
		return shx_ring_kill(r);
	r->out_head = head;
	return (int)(r->out_entries - (r->out_tail - head));
}

/* Writes one out entry (room checked by the caller); unseen until
 * shx_ring_out_publish(). */
static inline void shx_ring_out_put(struct shx_ring *r, const void *src)
{
	memcpy(r->out + (size_t)(r->out_tail & (r->out_entries - 1)) *
		       r->out_size, src, r->out_size);
	r->out_tail++;
}

/*
 * Once the caller is gone: takes back the newest out entry it never
 * consumed (after its last out_head, published or not) into dst. Returns
 * 0 when none is left, or for a dead ring or an out_head that cannot be
 * (then nothing is taken back).
 */
static inline int shx_ring_out_unput(struct shx_ring *r, void *dst)
{
	if (shx_ring_out_room(r) < 0 || r->out_tail == r->out_head)
		return 0;
	r->out_tail--;
	memcpy(dst, r->out + (size_t)(r->out_tail & (r->out_entries - 1)) *
	       r->out_size, r->out_size);
	return 1;
}

/* Publishes what shx_ring_out_put() wrote; returns 1 when the caller
 * sleeps and must be woken. */
static inline int shx_ring_out_publish(struct shx_ring *r)
{
	SHX_RING_STORE_REL(&r->hdr->out_tail.v, r->out_tail);
	SHX_RING_MB();
	return !!(SHX_RING_READ(&r->hdr->user_flags.v) & SYSHAX_RING_WAITING);
}

/*
 * Before the broker sleeps: asks to be kicked, then looks once more.
 * Returns non-zero when entries came meanwhile (do not sleep), and clears
 * the request again in that case.
 */
static inline int shx_ring_sleep_prepare(struct shx_ring *r)
{
	__u32 f;

	if (r->dead)
		return 0;
	f = SHX_RING_READ(&r->hdr->broker_flags.v);
	SHX_RING_WRITE(&r->hdr->broker_flags.v, f | SYSHAX_RING_NEED_WAKEUP);
	SHX_RING_MB();
	if (shx_ring_in_ready(r) == 0)
		return 0;
	/* Read again: looking may have killed the ring (DEAD is set now). */
	f = SHX_RING_READ(&r->hdr->broker_flags.v);
	SHX_RING_WRITE(&r->hdr->broker_flags.v, f & ~SYSHAX_RING_NEED_WAKEUP);
	return 1;
}

/* After the broker woke (or while it polls): no kicks needed. */
static inline void shx_ring_awake(struct shx_ring *r)
{
	__u32 f = SHX_RING_READ(&r->hdr->broker_flags.v);

	if (f & SYSHAX_RING_NEED_WAKEUP)
		SHX_RING_WRITE(&r->hdr->broker_flags.v,
			       f & ~SYSHAX_RING_NEED_WAKEUP);
}

#endif /* SYSHAX_RING_H */
