// SPDX-License-Identifier: MIT
/* The CPU/xPU dispatch rule (daemon/engine/dispatch.c): every branch, in
 * its order, with synthetic reports; and the CPU's decode-rate window. */
#include <CUnit/Basic.h>

#include "../t_cunit.h"

#include "dispatch.h"

#define MS	1000000ULL

static enum shxd_side side(unsigned int xr, float xt, unsigned int cr,
			   float ct, enum shxd_why *why)
{
	struct shxd_dispatch_in in = {
		.xpu_running = xr, .xpu_tps = xt, .cpu_running = cr,
		.cpu_tps = ct, .max_batch = 32,
	};

	return shxd_dispatch(&in, why);
}

static void t_branches(void)
{
	enum shxd_why w;

	/* 1. xPU idle: defer, even when the CPU is idle and fast. */
	CU_ASSERT_EQUAL(side(0, 0.0f, 0, 100.0f, &w), SHXD_SIDE_XPU);
	CU_ASSERT_EQUAL(w, SHXD_WHY_XPU_IDLE);
	CU_ASSERT_EQUAL(side(0, 500.0f, 40, 1.0f, &w), SHXD_SIDE_XPU);
	CU_ASSERT_EQUAL(w, SHXD_WHY_XPU_IDLE);
	/* 2. CPU idle: CPU, however fast the xPU. */
	CU_ASSERT_EQUAL(side(8, 1000.0f, 0, 0.0f, &w), SHXD_SIDE_CPU);
	CU_ASSERT_EQUAL(w, SHXD_WHY_CPU_IDLE);
	/* 3. CPU at cpu_max_batch_size (or past it): defer. */
	CU_ASSERT_EQUAL(side(8, 1.0f, 32, 1000.0f, &w), SHXD_SIDE_XPU);
	CU_ASSERT_EQUAL(w, SHXD_WHY_CPU_FULL);
	CU_ASSERT_EQUAL(side(8, 1.0f, 31, 1000.0f, &w), SHXD_SIDE_CPU);
	CU_ASSERT_EQUAL(w, SHXD_WHY_FASTER);
	/* 4. Both below 0.1 tokens/s per request: fewer running wins, the
	 * xPU on equal counts. */
	CU_ASSERT_EQUAL(side(4, 0.2f, 2, 0.1f, &w), SHXD_SIDE_CPU);
	CU_ASSERT_EQUAL(w, SHXD_WHY_BOTH_SLOW);
	CU_ASSERT_EQUAL(side(2, 0.1f, 4, 0.2f, &w), SHXD_SIDE_XPU);
	CU_ASSERT_EQUAL(w, SHXD_WHY_BOTH_SLOW);
	CU_ASSERT_EQUAL(side(3, 0.0f, 3, 0.0f, &w), SHXD_SIDE_XPU);
	CU_ASSERT_EQUAL(w, SHXD_WHY_BOTH_SLOW);
	/* One side at 0.1 or more: not "both slow". */
	CU_ASSERT_EQUAL(side(4, 0.4f, 2, 0.1f, &w), SHXD_SIDE_XPU);
	CU_ASSERT_EQUAL(w, SHXD_WHY_FASTER);
	/* 5. The faster per running request; the xPU wins a tie. */
	CU_ASSERT_EQUAL(side(10, 100.0f, 2, 30.0f, &w), SHXD_SIDE_CPU);
	CU_ASSERT_EQUAL(w, SHXD_WHY_FASTER);
	CU_ASSERT_EQUAL(side(10, 400.0f, 2, 30.0f, &w), SHXD_SIDE_XPU);
	CU_ASSERT_EQUAL(side(10, 100.0f, 2, 20.0f, &w), SHXD_SIDE_XPU);
	CU_ASSERT_EQUAL(w, SHXD_WHY_FASTER);
}

static void t_window(void)
{
	struct shxd_load l = { 0 };
	unsigned int running;
	float tps;

	shxd_load_get(&l, 5000 * MS, &running, &tps);
	CU_ASSERT_EQUAL(running, 0);
	CU_ASSERT_EQUAL(tps, 0.0f);
	/* Batches of 4 rows, 10 ms each, from t = 1 s. */
	for (int i = 0; i < 10; i++)
		shxd_load_add(&l, 1000 * MS + i * 10 * MS,
			      1000 * MS + (i + 1) * 10 * MS, 4);
	shxd_load_get(&l, 1100 * MS, &running, &tps);
	CU_ASSERT_EQUAL(running, 4);
	/* 40 tokens in 100 ms. */
	CU_ASSERT_DOUBLE_EQUAL(tps, 400.0, 0.01);
	/* Idle for 1 s after: the batch still runs, at the rate it ran. */
	shxd_load_get(&l, 2100 * MS, &running, &tps);
	CU_ASSERT_EQUAL(running, 4);
	CU_ASSERT_DOUBLE_EQUAL(tps, 400.0, 0.01);
	/* Gaps between batches do not count: two more batches after a
	 * 100 ms pause, of 20 and 40 ms, make 48 tokens in 160 ms run. */
	shxd_load_add(&l, 1200 * MS, 1220 * MS, 4);
	shxd_load_add(&l, 1220 * MS, 1260 * MS, 4);
	shxd_load_get(&l, 1300 * MS, &running, &tps);
	CU_ASSERT_DOUBLE_EQUAL(tps, 48.0 / 0.16, 0.01);
	/* Past the window: nothing runs. */
	shxd_load_get(&l, 3300 * MS, &running, &tps);
	CU_ASSERT_EQUAL(running, 0);
	CU_ASSERT_EQUAL(tps, 0.0f);
	/* More batches than slots: only the newest count. */
	for (int i = 0; i < SHXD_LOAD_SLOTS + 5; i++)
		shxd_load_add(&l, 4000 * MS + i * MS, 4000 * MS + (i + 1) * MS,
			      1);
	shxd_load_get(&l, 4000 * MS + (SHXD_LOAD_SLOTS + 5) * MS, &running,
		      &tps);
	CU_ASSERT_EQUAL(running, 1);
	CU_ASSERT_DOUBLE_EQUAL(tps, 1000.0, 0.01);
}

int main(void)
{
	static const struct t_test tests[] = {
		{ "every branch of the rule", t_branches },
		{ "the CPU's decode-rate window", t_window },
	};

	return T_RUN_SUITE("shxd_dispatch", NULL, NULL, tests);
}
