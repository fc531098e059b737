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
#define READ_PASSES	8	/* each way 4 */
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

/*
 * Each thread reads its share either as one run or as READ_STREAMS runs
 * side by side, a line of each a step, and a probe takes the faster of
 * the two: the batch-1 kernels read several weight streams a thread
 * (docs/kernels.md), and on Zen 3 (AVX2, 2 threads) four runs read 5-10 %
 * more than one, which the GEMV of four streams had passed.
 */
#define READ_STREAMS 4

struct read_job {
	const uint8_t *buf;
	size_t len;
	int streams;		/* 1 or READ_STREAMS */
	uint64_t sink[64];	/* one slot per thread keeps the loads live */
};

/*
 * Thread tid's share: j->streams runs of *q bytes from *b, *b + *q, ...,
 * then whatever is left up to *e as one more.
 */
static void share(const struct read_job *j, int tid, int nthr, size_t *b,
		  size_t *q, size_t *e)
{
	/* Split on 4 KiB boundaries so no two threads share a page. */
	size_t pages = j->len / 4096;

	*b = pages * (size_t)tid / (size_t)nthr * 4096;
	*e = pages * (size_t)(tid + 1) / (size_t)nthr * 4096;
	*q = (*e - *b) / (size_t)j->streams & ~(size_t)63;
}

/* LINE(p) for every 64-byte line of thread tid's share, in j's order. */
#define READ_SHARE(j, tid, nthr, LINE)					\
	do {								\
		size_t b_, q_, e_, i_;					\
									\
		share(j, tid, nthr, &b_, &q_, &e_);			\
		for (i_ = 0; i_ < q_; i_ += 64)				\
			for (int s_ = 0; s_ < (j)->streams; s_++)	\
				LINE((j)->buf + b_ + s_ * q_ + i_);	\
		for (i_ = b_ + (size_t)(j)->streams * q_; i_ < e_; i_ += 64) \
			LINE((j)->buf + i_);				\
	} while (0)

static void read_generic(void *arg, int tid, int nthr)
{
	struct read_job *j = arg;
	uint64_t a = 0;

#define LINE_GENERIC(p)							\
	do {								\
		const uint64_t *w_ = (const uint64_t *)(p);		\
									\
		a ^= (w_[0] ^ w_[1]) ^ (w_[2] ^ w_[3]) ^		\
		     ((w_[4] ^ w_[5]) ^ (w_[6] ^ w_[7]));		\
	} while (0)
	READ_SHARE(j, tid, nthr, LINE_GENERIC);
#undef LINE_GENERIC
	j->sink[tid % 64] = a;
}

#if defined(__x86_64__)
__attribute__((target("avx512f")))
static void read_avx512(void *arg, int tid, int nthr)
{
	struct read_job *j = arg;
	__m512i a = _mm512_setzero_si512();

#define LINE_AVX512(p) (a = _mm512_xor_si512(a, _mm512_load_si512(p)))
	READ_SHARE(j, tid, nthr, LINE_AVX512);
#undef LINE_AVX512
	j->sink[tid % 64] = (uint64_t)_mm512_reduce_add_epi64(a);
}

__attribute__((target("avx2")))
static void read_avx2(void *arg, int tid, int nthr)
{
	struct read_job *j = arg;
	__m256i a = _mm256_setzero_si256();

#define LINE_AVX2(p)							\
	(a = _mm256_xor_si256(a, _mm256_xor_si256(			\
		_mm256_load_si256((const __m256i *)(p)),		\
		_mm256_load_si256((const __m256i *)(p) + 1))))
	READ_SHARE(j, tid, nthr, LINE_AVX2);
#undef LINE_AVX2
	j->sink[tid % 64] = (uint64_t)_mm256_extract_epi64(a, 0) ^
			    (uint64_t)_mm256_extract_epi64(a, 3);
}
#endif

static bench_fn pick_read(void)
{
#if defined(__x86_64__)
	if (__builtin_cpu_supports("avx512f"))
		return read_avx512;
	if (__builtin_cpu_supports("avx2"))
		return read_avx2;
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
	*sec = 0;
	for (int streams = 1; !err && streams <= READ_STREAMS;
	     streams *= READ_STREAMS) {
		double t;

		r->job.streams = streams;
		err = bench_time_calls(reader_call, r, budget_s / 2, &t);
		if (!err && (!*sec || t < *sec))
			*sec = t;
	}
	bench_team_free(r->team);
	return err;
}

int bench_reader_sustained(struct bench_reader *r, int nthr, double *gbps)
{
	struct read_job job = { .buf = r->base, .len = READ_BYTES, .streams = 1 };
	double t[READ_PASSES];
	struct bench_team *team;
	int i, err;

	err = bench_team_new(&team, nthr);
	if (err)
		return err;
	bench_team_run(team, r->fn, &job);
	for (i = 0; i < READ_PASSES; i++) {
		uint64_t t0 = bench_now_ns();

		job.streams = i % 2 ? READ_STREAMS : 1;
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
