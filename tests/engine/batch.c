// SPDX-License-Identifier: MIT
/*
 * Batching across clients: 16 threads, each with its own syshax_open and
 * buffer, submit 50 one-token FFN jobs each (in bursts of 10, all in
 * flight together) on one shared weight set; every result is checked
 * (tolerances as in ffn.c, computed after the threads are done: CUnit is
 * not thread-safe). Then ENGINE_STATS: the 800 FFN jobs and tokens are
 * counted, some runs batched more than one token (batch_hist past bucket
 * 0) and none more than cpu_max_batch_size, the pools add up, and the
 * weight set's bytes are on the engine's nodes (on every node with
 * workers: n_ff 128 splits over two pools at 64).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t.h"

#define NTHREADS	16
#define NJOBS		50
#define BURST		10
#define HID		64
#define NFF		128
#define FLAGS		(SYSHAX_FFN_NORM | SYSHAX_FFN_RESIDUAL)

static struct tw g_w[4];
static uint64_t g_id;
static pthread_barrier_t g_start;

struct worker {
	unsigned int idx;
	int xt, yt;
	int err;			/* 0, or the first -errno */
	const char *where;
	double *xd;			/* NJOBS x HID inputs as the engine reads */
	void *y;			/* NJOBS x HID outputs, copied out */
	int status[NJOBS];
	uint64_t result[NJOBS];
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	size_t xs = t_act_size(w->xt), ys = t_act_size(w->yt);
	struct syshax_job jobs[NJOBS];
	struct syshax_completion cpl[NJOBS];
	unsigned int done = 0;
	struct trng r;
	struct tc c;
	uint8_t *x, *y;
	int ret;

	tr_seed(&r, 700 + w->idx);
	for (int j = 0; j < NJOBS; j++)
		w->status[j] = 1;
	ret = tc_open(&c, 1u << 20);
	if (ret) {
		w->where = "open";
		w->err = ret;
		pthread_barrier_wait(&g_start);
		return NULL;
	}
	x = c.buf.addr;
	y = x + NJOBS * HID * 4;
	for (int j = 0; j < NJOBS; j++) {
		struct syshax_ffn_params p = {
			.wset = g_id, .layer = 0, .m = 1,
			.x_type = (uint32_t)w->xt, .y_type = (uint32_t)w->yt,
			.flags = FLAGS,
		};
		double v[HID];

		for (int i = 0; i < HID; i++)
			v[i] = tr_unif(&r);
		t_act_store(w->xt, v, x + j * HID * xs, HID, w->xd + j * HID);
		syshax_job_init(&jobs[j], SYSHAX_OP_FFN, (uint64_t)j);
		if (syshax_job_params(&jobs[j], &p, sizeof(p)) ||
		    syshax_job_add_ref(&jobs[j], &c.buf, (uint64_t)j * HID * xs,
				       HID * xs, SYSHAX_ACCESS_READ) ||
		    syshax_job_add_ref(&jobs[j], &c.buf,
				       (uint64_t)(y - x) + (uint64_t)j * HID * ys,
				       HID * ys, SYSHAX_ACCESS_WRITE)) {
			w->where = "job";
			w->err = -EINVAL;
		}
	}
	pthread_barrier_wait(&g_start);
	for (int s = 0; !w->err && s < NJOBS; s += BURST) {
		ret = syshax_submit(c.sh, jobs + s, BURST);
		if (ret != BURST) {
			w->where = "submit";
			w->err = ret < 0 ? ret : -EIO;
		}
	}
	while (!w->err && done < NJOBS) {
		ret = syshax_wait(c.sh, cpl, 1, NJOBS, 60 * T_SEC);
		if (ret < 0) {
			w->where = "wait";
			w->err = ret;
			break;
		}
		for (int k = 0; k < ret; k++) {
			uint64_t u = cpl[k].user_data;

			if (u >= NJOBS || w->status[u] != 1) {
				w->where = "completion";
				w->err = -EPROTO;
				break;
			}
			w->status[u] = cpl[k].status;
			w->result[u] = cpl[k].result;
			done++;
		}
	}
	memcpy(w->y, y, NJOBS * HID * ys);
	tc_close(&c);
	return NULL;
}

static void t_batch_setup(void)
{
	struct trng r;

	tr_seed(&r, 7);
	tw_rand(&g_w[0], &r, "blk.0.ffn_gate.weight", SYSHAX_DT_Q8_0, 2, HID,
		NFF, 1, 2.5 / sqrt(HID));
	tw_rand(&g_w[1], &r, "blk.0.ffn_up.weight", SYSHAX_DT_Q8_0, 2, HID,
		NFF, 1, 2.5 / sqrt(HID));
	tw_rand(&g_w[2], &r, "blk.0.ffn_down.weight", SYSHAX_DT_Q8_0, 2, NFF,
		HID, 1, 4.0 / sqrt(NFF));
	tw_vec(&g_w[3], &r, "blk.0.ffn_norm.weight", HID, 0.5, 1.5);
	tc_reset(&g_c);
	CU_ASSERT_EQUAL_FATAL(t_load_buffer(&g_c, g_w, 4, SYSHAX_QUANT_NONE,
					    &g_id), 0);
}

static void t_batch_run(void)
{
	struct worker w[NTHREADS];
	pthread_t th[NTHREADS];
	struct syshax_engine_stats a, b;
	const struct syshax_op_stats *sa, *sb;
	uint64_t hist_multi = 0, total_bytes = 0, t0;
	unsigned int threads = 0;
	bool found = false;
	int i;

	CU_ASSERT_FATAL(g_id != 0);
	CU_ASSERT_EQUAL_FATAL(t_engine_stats(&g_c, &a), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_barrier_init(&g_start, NULL, NTHREADS),
			      0);
	memset(w, 0, sizeof(w));
	for (i = 0; i < NTHREADS; i++) {
		w[i].idx = (unsigned int)i;
		w[i].xt = i % 3;
		w[i].yt = i / 3 % 3;
		w[i].xd = malloc(NJOBS * HID * sizeof(double));
		w[i].y = malloc(NJOBS * HID * 4);
		CU_ASSERT_FATAL(w[i].xd && w[i].y);
	}
	t0 = t_now_ns();
	for (i = 0; i < NTHREADS; i++)
		CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, worker_main,
						     &w[i]), 0);
	for (i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&g_start);
	if (getenv("T_ENGINE_VERBOSE"))
		printf("\n  %d x %d FFN jobs in %.3f s", NTHREADS, NJOBS,
		       (double)(t_now_ns() - t0) / 1e9);

	t_tally_begin();
	for (i = 0; i < NTHREADS; i++) {
		if (w[i].err)
			printf("\n  client %d: %s: %s\n", i, w[i].where,
			       syshax_strerror(w[i].err));
		CU_ASSERT_EQUAL(w[i].err, 0);
		for (int j = 0; !w[i].err && j < NJOBS; j++) {
			double ref[HID];
			char what[96];

			CU_ASSERT_EQUAL(w[i].status[j], 0);
			CU_ASSERT_EQUAL(w[i].result[j], 1);
			ref_ffn(g_w, FLAGS, 1e-6, w[i].xd + j * HID, 1, ref);
			snprintf(what, sizeof(what), "client %d job %d", i, j);
			t_check_q(what, w[i].yt, (uint8_t *)w[i].y +
				  (size_t)j * HID * t_act_size(w[i].yt), ref, 1,
				  HID, 1e-4, 2e-2);
		}
		free(w[i].xd);
		free(w[i].y);
	}
	t_tally_end("batched FFN rows");

	CU_ASSERT_EQUAL_FATAL(t_engine_stats(&g_c, &b), 0);
	sa = &a.op[1][0];
	sb = &b.op[1][0];
	CU_ASSERT_EQUAL(sb->jobs - sa->jobs, NTHREADS * NJOBS);
	CU_ASSERT_EQUAL(sb->tokens - sa->tokens, NTHREADS * NJOBS);
	CU_ASSERT_EQUAL(sb->failed, sa->failed);
	CU_ASSERT(sb->batches > sa->batches);
	CU_ASSERT(sb->run_ns > sa->run_ns);
	for (i = 1; i < SYSHAX_STATS_BATCH_BUCKETS; i++)
		hist_multi += sb->batch_hist[i] - sa->batch_hist[i];
	CU_ASSERT(hist_multi > 0);
	/* No run above cpu_max_batch_size tokens. */
	for (i = 0; i < SYSHAX_STATS_BATCH_BUCKETS; i++)
		if ((1u << i) > b.cpu_max_batch_size)
			CU_ASSERT_EQUAL(sb->batch_hist[i], sa->batch_hist[i]);
	if (getenv("T_ENGINE_VERBOSE")) {
		printf("\n  FFN: %llu runs batched; tokens per run:",
		       (unsigned long long)(sb->batches - sa->batches));
		for (i = 0; i < SYSHAX_STATS_BATCH_BUCKETS; i++)
			printf(" %llu", (unsigned long long)(sb->batch_hist[i] -
							      sa->batch_hist[i]));
	}

	/* The engine's shape. */
	CU_ASSERT_EQUAL(b.nr_threads, t_engine_threads());
	CU_ASSERT(b.nr_nodes >= 1 && b.nr_nodes <= SYSHAX_MAX_NODES);
	CU_ASSERT(b.cpu_max_batch_size >= 1);
	for (i = 0; i < (int)b.nr_nodes && i < SYSHAX_MAX_NODES; i++) {
		threads += b.node_threads[i];
		CU_ASSERT(b.node_id[i] >= 0 && b.node_id[i] < SYSHAX_MAX_NODES);
	}
	CU_ASSERT_EQUAL(threads, b.nr_threads);
	/* The set, its bytes on the pools' nodes. */
	for (i = 0; i < SYSHAX_STATS_WSETS && i < (int)b.nr_wsets; i++) {
		if (b.wsets[i].id != g_id)
			continue;
		found = true;
		for (int n = 0; n < SYSHAX_MAX_NODES; n++)
			total_bytes += b.wsets[i].node_bytes[n];
		for (int p = 0; p < (int)b.nr_nodes && p < SYSHAX_MAX_NODES;
		     p++) {
			int node = b.node_id[p];

			if (node >= 0 && node < SYSHAX_MAX_NODES)
				CU_ASSERT(b.wsets[i].node_bytes[node] > 0);
		}
	}
	CU_ASSERT(found);
	/* At least the q8_0 matrices: 3 x 64 x 128 / 32 x 34 bytes. */
	CU_ASSERT(total_bytes >= 3 * HID * NFF / 32 * 34);
}

static void t_batch_free(void)
{
	struct syshax_engine_stats st;

	CU_ASSERT_EQUAL(t_free_wset(&g_c, g_id), 0);
	g_id = 0;
	/* Every set of the suite is freed. */
	CU_ASSERT_EQUAL(t_engine_stats(&g_c, &st), 0);
	CU_ASSERT_EQUAL(st.nr_wsets, 0);
	for (int i = 0; i < 4; i++)
		tw_free(&g_w[i]);
}

int t_add_batch(void)
{
	CU_pSuite s = CU_add_suite("batching and ENGINE_STATS", NULL, NULL);

	if (!s || !CU_add_test(s, "load the set", t_batch_setup) ||
	    !CU_add_test(s, "16 clients x 50 one-token FFN jobs",
			 t_batch_run) ||
	    !CU_add_test(s, "free the set, none left", t_batch_free))
		return -1;
	return 0;
}
