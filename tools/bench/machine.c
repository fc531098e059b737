// SPDX-License-Identifier: MIT
/*
 * The machine's limits, measured in the same run as the kernels so that
 * every "% of" column is relative to what this machine does right now:
 * streaming read bandwidth and the integer dot-product peak. A limit is
 * the best pass (as STREAM reports it): what the machine can do, which
 * other load on a shared machine only ever lowers.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#include <sys/auxv.h>
#endif

#include "bench.h"

#define READ_BYTES	(1ull << 30)
#define READ_PASSES	7
#define DOT_ITERS	(1u << 18)
#define DOT_PASSES	7

static double best(const double *t, int n)
{
	double b = t[0];

	for (int i = 1; i < n; i++)
		b = t[i] < b ? t[i] : b;
	return b;
}

/* ---- read bandwidth ---- */

struct read_job {
	const uint8_t *buf;
	size_t len;
	uint64_t sink[64];	/* one slot per thread keeps the loads live */
};

static void range(size_t len, int tid, int nthr, size_t *b, size_t *e)
{
	/* Split on 4 KiB boundaries so no two threads share a page. */
	size_t pages = len / 4096;

	*b = pages * (size_t)tid / (size_t)nthr * 4096;
	*e = pages * (size_t)(tid + 1) / (size_t)nthr * 4096;
}

static void read_generic(void *arg, int tid, int nthr)
{
	struct read_job *j = arg;
	uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
	size_t b, e, i;

	range(j->len, tid, nthr, &b, &e);
	for (i = b; i < e; i += 32) {
		const uint64_t *p = (const uint64_t *)(j->buf + i);

		a0 ^= p[0];
		a1 ^= p[1];
		a2 ^= p[2];
		a3 ^= p[3];
	}
	j->sink[tid % 64] = a0 ^ a1 ^ a2 ^ a3;
}

#if defined(__x86_64__)
__attribute__((target("avx512f")))
static void read_avx512(void *arg, int tid, int nthr)
{
	struct read_job *j = arg;
	__m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
	size_t b, e, i;

	range(j->len, tid, nthr, &b, &e);
	/* Four independent 64-byte loads a step: a cache line each. */
	for (i = b; i < e; i += 256) {
		const __m512i *p = (const __m512i *)(j->buf + i);

		a0 = _mm512_xor_si512(a0, _mm512_load_si512(p));
		a1 = _mm512_xor_si512(a1, _mm512_load_si512(p + 1));
		a2 = _mm512_xor_si512(a2, _mm512_load_si512(p + 2));
		a3 = _mm512_xor_si512(a3, _mm512_load_si512(p + 3));
	}
	a0 = _mm512_xor_si512(_mm512_xor_si512(a0, a1),
			      _mm512_xor_si512(a2, a3));
	j->sink[tid % 64] = (uint64_t)_mm512_reduce_add_epi64(a0);
}
#endif

static bench_fn pick_read(void)
{
#if defined(__x86_64__)
	if (__builtin_cpu_supports("avx512f"))
		return read_avx512;
#endif
	return read_generic;
}

/* ---- read probe matched to a kernel's bytes per call ---- */

struct bench_reader {
	uint8_t *base;
	size_t stride, nslices, next;
	struct read_job job;
	struct bench_team *team;
	bench_fn fn;
};

int bench_reader_new(struct bench_reader **out)
{
	struct bench_reader *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->base = bench_alloc(READ_BYTES);
	if (!r->base) {
		free(r);
		return -ENOMEM;
	}
	memset(r->base, 1, READ_BYTES);
	r->fn = pick_read();
	*out = r;
	return 0;
}

void bench_reader_free(struct bench_reader *r)
{
	if (!r)
		return;
	bench_free(r->base, READ_BYTES);
	free(r);
}

static int reader_call(void *arg)
{
	struct bench_reader *r = arg;

	r->job.buf = r->base + r->next * r->stride;
	r->next = (r->next + 1) % r->nslices;
	bench_team_run(r->team, r->fn, &r->job);
	return 0;
}

int bench_reader_time(struct bench_reader *r, size_t bytes, int nthr,
		      double budget_s, double *sec)
{
	int err;

	/* Whole pages, so every thread's share is read to the last byte. */
	r->stride = (bytes + 4095) & ~(size_t)4095;
	if (!bytes || r->stride > READ_BYTES)
		return -EINVAL;
	r->nslices = READ_BYTES / r->stride;
	r->next = 0;
	r->job.len = r->stride;
	err = bench_team_new(&r->team, nthr);
	if (err)
		return err;
	err = bench_time_calls(reader_call, r, budget_s, sec);
	bench_team_free(r->team);
	return err;
}

int bench_reader_sustained(struct bench_reader *r, int nthr, double *gbps)
{
	struct read_job job = { .buf = r->base, .len = READ_BYTES };
	double t[READ_PASSES];
	struct bench_team *team;
	int i, err;

	err = bench_team_new(&team, nthr);
	if (err)
		return err;
	bench_team_run(team, r->fn, &job);
	for (i = 0; i < READ_PASSES; i++) {
		uint64_t t0 = bench_now_ns();

		bench_team_run(team, r->fn, &job);
		t[i] = (double)(bench_now_ns() - t0) * 1e-9;
	}
	bench_team_free(team);
	*gbps = (double)READ_BYTES / best(t, READ_PASSES) * 1e-9;
	return 0;
}

/* ---- integer dot-product peak ---- */

struct dot_job {
	void (*loop)(int32_t *out);
	int32_t sink[64][16];
};

#if defined(__x86_64__)
/*
 * Twelve independent accumulators cover the instruction's latency times
 * its issue width on current cores; the operands never leave registers.
 */
#define DOT_ACC 12
/* 64 u8 x s8 multiply-adds per instruction. */
#define VNNI512_OPS (2.0 * 64)
__attribute__((target("avx512f,avx512vnni")))
static void dot_vnni512(int32_t *out)
{
	__m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-5);
	__m512i acc[DOT_ACC];
	unsigned i;
	int k;

	__asm__ volatile("" : "+v"(a), "+v"(b));	/* not constants */
#pragma GCC unroll 16
	for (k = 0; k < DOT_ACC; k++)
		acc[k] = _mm512_set1_epi32(k);	/* distinct: no CSE */
	for (i = 0; i < DOT_ITERS; i++)
#pragma GCC unroll 16
		for (k = 0; k < DOT_ACC; k++)
			acc[k] = _mm512_dpbusd_epi32(acc[k], a, b);
#pragma GCC unroll 16
	for (k = 1; k < DOT_ACC; k++)
		acc[0] = _mm512_add_epi32(acc[0], acc[k]);
	_mm512_storeu_si512(out, acc[0]);
}

/* 32 multiply-adds per instruction. */
#define VNNI256_OPS (2.0 * 32)
__attribute__((target("avx2,avxvnni")))
static void dot_avxvnni(int32_t *out)
{
	__m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-5);
	__m256i acc[DOT_ACC];
	unsigned i;
	int k;

	__asm__ volatile("" : "+x"(a), "+x"(b));
#pragma GCC unroll 16
	for (k = 0; k < DOT_ACC; k++)
		acc[k] = _mm256_set1_epi32(k);
	for (i = 0; i < DOT_ITERS; i++)
#pragma GCC unroll 16
		for (k = 0; k < DOT_ACC; k++)
			acc[k] = _mm256_dpbusd_avx_epi32(acc[k], a, b);
#pragma GCC unroll 16
	for (k = 1; k < DOT_ACC; k++)
		acc[0] = _mm256_add_epi32(acc[0], acc[k]);
	_mm256_storeu_si256((__m256i *)out, acc[0]);
}
#elif defined(__aarch64__)
#define DOT_ACC 12
/* 16 s8 x s8 multiply-adds per sdot. */
#define SDOT_OPS (2.0 * 16)
__attribute__((target("arch=armv8.2-a+dotprod")))
static void dot_sdot(int32_t *out)
{
	int8x16_t a = vdupq_n_s8(3), b = vdupq_n_s8(-5);
	int32x4_t acc[DOT_ACC];
	unsigned i;
	int k;

	__asm__ volatile("" : "+w"(a), "+w"(b));
#pragma GCC unroll 16
	for (k = 0; k < DOT_ACC; k++)
		acc[k] = vdupq_n_s32(k);
	for (i = 0; i < DOT_ITERS; i++)
#pragma GCC unroll 16
		for (k = 0; k < DOT_ACC; k++)
			acc[k] = vdotq_s32(acc[k], a, b);
#pragma GCC unroll 16
	for (k = 1; k < DOT_ACC; k++)
		acc[0] = vaddq_s32(acc[0], acc[k]);
	vst1q_s32(out, acc[0]);
}
#endif

static void dot_run(void *arg, int tid, int nthr)
{
	struct dot_job *j = arg;

	(void)nthr;
	j->loop(j->sink[tid % 64]);
}

int bench_dot_peak(int nthr, double *gops, const char **isa)
{
	struct dot_job job = { 0 };
	double t[DOT_PASSES], ops_per_insn = 0;
	struct bench_team *team;
	int i, err;

#if defined(__x86_64__)
	if (__builtin_cpu_supports("avx512vnni")) {
		job.loop = dot_vnni512;
		ops_per_insn = VNNI512_OPS;
		*isa = "avx512-vnni vpdpbusd";
	} else if (__builtin_cpu_supports("avxvnni")) {
		job.loop = dot_avxvnni;
		ops_per_insn = VNNI256_OPS;
		*isa = "avx-vnni vpdpbusd";
	}
#elif defined(__aarch64__) && defined(HWCAP_ASIMDDP)
	if (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) {
		job.loop = dot_sdot;
		ops_per_insn = SDOT_OPS;
		*isa = "sdot";
	}
#endif
	if (!job.loop)
		return -ENOTSUP;
	err = bench_team_new(&team, nthr);
	if (err)
		return err;
	bench_team_run(team, dot_run, &job);
	for (i = 0; i < DOT_PASSES; i++) {
		uint64_t t0 = bench_now_ns();

		bench_team_run(team, dot_run, &job);
		t[i] = (double)(bench_now_ns() - t0) * 1e-9;
	}
	bench_team_free(team);
	*gops = ops_per_insn * DOT_ACC * DOT_ITERS * nthr /
		best(t, DOT_PASSES) * 1e-9;
	return 0;
}
