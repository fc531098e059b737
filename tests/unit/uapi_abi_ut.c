// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The UAPI must not drift: the size and offset of every field of every
 * struct in uapi/syshax.h, the ioctl numbers (which encode the sizes) and
 * the constants, asserted as exact numbers. The header is also compiled
 * with -Wpadded as an error: every hole is an explicit pad field.
 */
#include <stddef.h>

#include <CUnit/Basic.h>

#include "../t_cunit.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wpadded"
#include "syshax.h"
#include "syshax_ops.h"
#pragma GCC diagnostic pop

static void test_ctx_stats(void)
{
	CU_ASSERT_EQUAL(sizeof(struct syshax_ctx_stat), 128);
	CU_ASSERT_EQUAL(offsetof(struct syshax_ctx_stat, ctx_id), 0);
	CU_ASSERT_EQUAL(offsetof(struct syshax_ctx_stat, pid), 4);
	CU_ASSERT_EQUAL(offsetof(struct syshax_ctx_stat, uid), 8);
	CU_ASSERT_EQUAL(offsetof(struct syshax_ctx_stat, flags), 12);
	CU_ASSERT_EQUAL(offsetof(struct syshax_ctx_stat, comm), 16);
	CU_ASSERT_EQUAL(offsetof(struct syshax_ctx_stat, nr_bufs), 32);
	CU_ASSERT_EQUAL(offsetof(struct syshax_ctx_stat, buf_bytes), 40);
	CU_ASSERT_EQUAL(offsetof(struct syshax_ctx_stat, jobs_queued), 48);
	CU_ASSERT_EQUAL(offsetof(struct syshax_ctx_stat, jobs_inflight), 56);
	CU_ASSERT_EQUAL(offsetof(struct syshax_ctx_stat, jobs_submitted), 64);
	CU_ASSERT_EQUAL(offsetof(struct syshax_ctx_stat, jobs_completed), 72);
	CU_ASSERT_EQUAL(offsetof(struct syshax_ctx_stat, jobs_failed), 80);
	CU_ASSERT_EQUAL(offsetof(struct syshax_ctx_stat, eng_held), 88);
	CU_ASSERT_EQUAL(offsetof(struct syshax_ctx_stat, eng_done), 96);
	CU_ASSERT_EQUAL(offsetof(struct syshax_ctx_stat, reserved), 104);
	CU_ASSERT_EQUAL(SYSHAX_CTX_ENGINE, 1U << 0);
	CU_ASSERT_EQUAL(SYSHAX_CTX_RING, 1U << 1);
	CU_ASSERT_EQUAL(SYSHAX_CTX_SELF, 1U << 2);

	CU_ASSERT_EQUAL(sizeof(struct syshax_ctx_stats_args), 40);
	CU_ASSERT_EQUAL(offsetof(struct syshax_ctx_stats_args, ctxs), 0);
	CU_ASSERT_EQUAL(offsetof(struct syshax_ctx_stats_args, max), 8);
	CU_ASSERT_EQUAL(offsetof(struct syshax_ctx_stats_args, flags), 12);
	CU_ASSERT_EQUAL(offsetof(struct syshax_ctx_stats_args, nr), 16);
	CU_ASSERT_EQUAL(offsetof(struct syshax_ctx_stats_args, total), 20);
	CU_ASSERT_EQUAL(offsetof(struct syshax_ctx_stats_args, reserved), 24);
}

static void test_version_args(void)
{
	CU_ASSERT_EQUAL(sizeof(struct syshax_version_args), 72);
	CU_ASSERT_EQUAL(offsetof(struct syshax_version_args, uapi_version), 0);
	CU_ASSERT_EQUAL(offsetof(struct syshax_version_args, features), 4);
	CU_ASSERT_EQUAL(offsetof(struct syshax_version_args, max_buf_size), 8);
	CU_ASSERT_EQUAL(offsetof(struct syshax_version_args, max_pinned), 16);
	CU_ASSERT_EQUAL(offsetof(struct syshax_version_args, chunk_size), 24);
	CU_ASSERT_EQUAL(offsetof(struct syshax_version_args, nr_nodes), 28);
	CU_ASSERT_EQUAL(offsetof(struct syshax_version_args, max_refs), 32);
	CU_ASSERT_EQUAL(offsetof(struct syshax_version_args, max_submit), 36);
	CU_ASSERT_EQUAL(offsetof(struct syshax_version_args, reserved), 40);
}

static void test_buf_alloc_args(void)
{
	CU_ASSERT_EQUAL(sizeof(struct syshax_buf_alloc_args), 40);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_alloc_args, size), 0);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_alloc_args, node), 8);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_alloc_args, flags), 12);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_alloc_args, handle), 16);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_alloc_args, pad), 20);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_alloc_args, mmap_offset), 24);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_alloc_args, id), 32);
}

static void test_buf_free_args(void)
{
	CU_ASSERT_EQUAL(sizeof(struct syshax_buf_free_args), 8);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_free_args, handle), 0);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_free_args, pad), 4);
}

static void test_buf_info_args(void)
{
	CU_ASSERT_EQUAL(sizeof(struct syshax_buf_info_args), 176);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_info_args, handle), 0);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_info_args, kind), 4);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_info_args, size), 8);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_info_args, mmap_offset), 16);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_info_args, id), 24);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_info_args, chunk_size), 32);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_info_args, nr_chunks), 36);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_info_args, node), 40);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_info_args, flags), 44);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_info_args, node_bytes), 48);
}

static void test_buf_register_args(void)
{
	CU_ASSERT_EQUAL(sizeof(struct syshax_buf_register_args), 40);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_register_args, addr), 0);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_register_args, size), 8);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_register_args, flags), 16);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_register_args, handle), 20);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_register_args, mmap_offset), 24);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_register_args, id), 32);
}

static void test_buf_export_args(void)
{
	CU_ASSERT_EQUAL(sizeof(struct syshax_buf_export_args), 16);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_export_args, handle), 0);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_export_args, flags), 4);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_export_args, fd), 8);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_export_args, pad), 12);
}

static void test_buf_import_args(void)
{
	CU_ASSERT_EQUAL(sizeof(struct syshax_buf_import_args), 40);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_import_args, fd), 0);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_import_args, flags), 4);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_import_args, handle), 8);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_import_args, pad), 12);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_import_args, size), 16);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_import_args, mmap_offset), 24);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_import_args, id), 32);
}

static void test_buf_ref(void)
{
	CU_ASSERT_EQUAL(sizeof(struct syshax_buf_ref), 32);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_ref, buf), 0);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_ref, access), 8);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_ref, pad), 12);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_ref, offset), 16);
	CU_ASSERT_EQUAL(offsetof(struct syshax_buf_ref, length), 24);
}

static void test_job(void)
{
	CU_ASSERT_EQUAL(sizeof(struct syshax_job), 512);
	CU_ASSERT_EQUAL(offsetof(struct syshax_job, op), 0);
	CU_ASSERT_EQUAL(offsetof(struct syshax_job, flags), 4);
	CU_ASSERT_EQUAL(offsetof(struct syshax_job, user_data), 8);
	CU_ASSERT_EQUAL(offsetof(struct syshax_job, nr_refs), 16);
	CU_ASSERT_EQUAL(offsetof(struct syshax_job, pad), 20);
	CU_ASSERT_EQUAL(offsetof(struct syshax_job, reserved), 24);
	CU_ASSERT_EQUAL(offsetof(struct syshax_job, refs), 32);
	CU_ASSERT_EQUAL(offsetof(struct syshax_job, params), 288);
}

static void test_completion(void)
{
	CU_ASSERT_EQUAL(sizeof(struct syshax_completion), 32);
	CU_ASSERT_EQUAL(offsetof(struct syshax_completion, user_data), 0);
	CU_ASSERT_EQUAL(offsetof(struct syshax_completion, status), 8);
	CU_ASSERT_EQUAL(offsetof(struct syshax_completion, flags), 12);
	CU_ASSERT_EQUAL(offsetof(struct syshax_completion, result), 16);
	CU_ASSERT_EQUAL(offsetof(struct syshax_completion, exec_ns), 24);
}

static void test_submit_args(void)
{
	CU_ASSERT_EQUAL(sizeof(struct syshax_submit_args), 16);
	CU_ASSERT_EQUAL(offsetof(struct syshax_submit_args, jobs), 0);
	CU_ASSERT_EQUAL(offsetof(struct syshax_submit_args, nr), 8);
	CU_ASSERT_EQUAL(offsetof(struct syshax_submit_args, flags), 12);
}

static void test_wait_args(void)
{
	CU_ASSERT_EQUAL(sizeof(struct syshax_wait_args), 32);
	CU_ASSERT_EQUAL(offsetof(struct syshax_wait_args, cpls), 0);
	CU_ASSERT_EQUAL(offsetof(struct syshax_wait_args, max), 8);
	CU_ASSERT_EQUAL(offsetof(struct syshax_wait_args, min), 12);
	CU_ASSERT_EQUAL(offsetof(struct syshax_wait_args, timeout_ns), 16);
	CU_ASSERT_EQUAL(offsetof(struct syshax_wait_args, flags), 24);
	CU_ASSERT_EQUAL(offsetof(struct syshax_wait_args, pad), 28);
}

static void test_engine_attach_args(void)
{
	CU_ASSERT_EQUAL(sizeof(struct syshax_engine_attach_args), 16);
	CU_ASSERT_EQUAL(offsetof(struct syshax_engine_attach_args, flags), 0);
	CU_ASSERT_EQUAL(offsetof(struct syshax_engine_attach_args, node), 4);
	CU_ASSERT_EQUAL(offsetof(struct syshax_engine_attach_args, engine_id), 8);
	CU_ASSERT_EQUAL(offsetof(struct syshax_engine_attach_args, pad), 12);
}

static void test_engine_job(void)
{
	CU_ASSERT_EQUAL(sizeof(struct syshax_engine_job), 528);
	CU_ASSERT_EQUAL(offsetof(struct syshax_engine_job, token), 0);
	CU_ASSERT_EQUAL(offsetof(struct syshax_engine_job, ctx_id), 8);
	CU_ASSERT_EQUAL(offsetof(struct syshax_engine_job, pad), 12);
	CU_ASSERT_EQUAL(offsetof(struct syshax_engine_job, job), 16);
}

static void test_engine_fetch_args(void)
{
	CU_ASSERT_EQUAL(sizeof(struct syshax_engine_fetch_args), 24);
	CU_ASSERT_EQUAL(offsetof(struct syshax_engine_fetch_args, jobs), 0);
	CU_ASSERT_EQUAL(offsetof(struct syshax_engine_fetch_args, max), 8);
	CU_ASSERT_EQUAL(offsetof(struct syshax_engine_fetch_args, flags), 12);
	CU_ASSERT_EQUAL(offsetof(struct syshax_engine_fetch_args, timeout_ns), 16);
}

static void test_engine_map_args(void)
{
	CU_ASSERT_EQUAL(sizeof(struct syshax_engine_map_args), 24);
	CU_ASSERT_EQUAL(offsetof(struct syshax_engine_map_args, id), 0);
	CU_ASSERT_EQUAL(offsetof(struct syshax_engine_map_args, mmap_offset), 8);
	CU_ASSERT_EQUAL(offsetof(struct syshax_engine_map_args, size), 16);
}

static void test_engine_cpl(void)
{
	CU_ASSERT_EQUAL(sizeof(struct syshax_engine_cpl), 32);
	CU_ASSERT_EQUAL(offsetof(struct syshax_engine_cpl, token), 0);
	CU_ASSERT_EQUAL(offsetof(struct syshax_engine_cpl, status), 8);
	CU_ASSERT_EQUAL(offsetof(struct syshax_engine_cpl, flags), 12);
	CU_ASSERT_EQUAL(offsetof(struct syshax_engine_cpl, result), 16);
	CU_ASSERT_EQUAL(offsetof(struct syshax_engine_cpl, exec_ns), 24);
}

static void test_engine_complete_args(void)
{
	CU_ASSERT_EQUAL(sizeof(struct syshax_engine_complete_args), 16);
	CU_ASSERT_EQUAL(offsetof(struct syshax_engine_complete_args, cpls), 0);
	CU_ASSERT_EQUAL(offsetof(struct syshax_engine_complete_args, nr), 8);
	CU_ASSERT_EQUAL(offsetof(struct syshax_engine_complete_args, flags), 12);
}

static void test_stats_args(void)
{
	CU_ASSERT_EQUAL(sizeof(struct syshax_stats_args), 592);
	CU_ASSERT_EQUAL(offsetof(struct syshax_stats_args, pinned_bytes), 0);
	CU_ASSERT_EQUAL(offsetof(struct syshax_stats_args, node_bytes), 8);
	CU_ASSERT_EQUAL(offsetof(struct syshax_stats_args, nr_bufs), 136);
	CU_ASSERT_EQUAL(offsetof(struct syshax_stats_args, node_bufs), 144);
	CU_ASSERT_EQUAL(offsetof(struct syshax_stats_args, contexts), 272);
	CU_ASSERT_EQUAL(offsetof(struct syshax_stats_args, engines), 276);
	CU_ASSERT_EQUAL(offsetof(struct syshax_stats_args, jobs_submitted), 280);
	CU_ASSERT_EQUAL(offsetof(struct syshax_stats_args, jobs_fetched), 288);
	CU_ASSERT_EQUAL(offsetof(struct syshax_stats_args, jobs_completed), 296);
	CU_ASSERT_EQUAL(offsetof(struct syshax_stats_args, jobs_failed), 304);
	CU_ASSERT_EQUAL(offsetof(struct syshax_stats_args, jobs_cancelled), 312);
	CU_ASSERT_EQUAL(offsetof(struct syshax_stats_args, queue_depth), 320);
	CU_ASSERT_EQUAL(offsetof(struct syshax_stats_args, inflight), 328);
	CU_ASSERT_EQUAL(offsetof(struct syshax_stats_args, lat_hist), 336);
	CU_ASSERT_EQUAL(offsetof(struct syshax_stats_args, reserved), 528);
}

static void test_ioctl_numbers(void)
{
	CU_ASSERT_EQUAL(SYSHAX_IOC_VERSION, 0x8048be00U);
	CU_ASSERT_EQUAL(SYSHAX_IOC_BUF_ALLOC, 0xc028be01U);
	CU_ASSERT_EQUAL(SYSHAX_IOC_BUF_FREE, 0x4008be02U);
	CU_ASSERT_EQUAL(SYSHAX_IOC_BUF_INFO, 0xc0b0be03U);
	CU_ASSERT_EQUAL(SYSHAX_IOC_BUF_REGISTER, 0xc028be04U);
	CU_ASSERT_EQUAL(SYSHAX_IOC_BUF_EXPORT, 0xc010be05U);
	CU_ASSERT_EQUAL(SYSHAX_IOC_BUF_IMPORT, 0xc028be06U);
	CU_ASSERT_EQUAL(SYSHAX_IOC_STATS, 0x8250be07U);
	CU_ASSERT_EQUAL(SYSHAX_IOC_CTX_STATS, 0xc028be08U);
	CU_ASSERT_EQUAL(SYSHAX_IOC_SUBMIT, 0x4010be10U);
	CU_ASSERT_EQUAL(SYSHAX_IOC_WAIT, 0x4020be11U);
	CU_ASSERT_EQUAL(SYSHAX_IOC_ENGINE_ATTACH, 0xc010be20U);
	CU_ASSERT_EQUAL(SYSHAX_IOC_ENGINE_FETCH, 0x4018be21U);
	CU_ASSERT_EQUAL(SYSHAX_IOC_ENGINE_MAP, 0xc018be22U);
	CU_ASSERT_EQUAL(SYSHAX_IOC_ENGINE_COMPLETE, 0x4010be23U);
	CU_ASSERT_EQUAL(SYSHAX_IOC_RING_SETUP, 0xc020be30U);
}

static void test_rings(void)
{
	CU_ASSERT_EQUAL(sizeof(struct syshax_ring_word), 64);
	CU_ASSERT_EQUAL(sizeof(struct syshax_ring_hdr), 448);
	CU_ASSERT_EQUAL(offsetof(struct syshax_ring_hdr, in_tail), 64);
	CU_ASSERT_EQUAL(offsetof(struct syshax_ring_hdr, out_head), 128);
	CU_ASSERT_EQUAL(offsetof(struct syshax_ring_hdr, out_tail), 192);
	CU_ASSERT_EQUAL(offsetof(struct syshax_ring_hdr, broker_flags), 256);
	CU_ASSERT_EQUAL(offsetof(struct syshax_ring_hdr, user_flags), 320);
	CU_ASSERT_EQUAL(offsetof(struct syshax_ring_hdr, in_entries), 384);
	CU_ASSERT_EQUAL(sizeof(struct syshax_ring_setup_args), 32);
	CU_ASSERT_EQUAL(offsetof(struct syshax_ring_setup_args, size), 16);
	CU_ASSERT_EQUAL(offsetof(struct syshax_ring_setup_args, mmap_offset), 24);
	CU_ASSERT_EQUAL(SYSHAX_FEAT_RINGS, 1U << 4);
	CU_ASSERT_EQUAL(SYSHAX_FEAT_CTX_STATS, 1U << 5);
	CU_ASSERT_EQUAL(SYSHAX_FEAT_MAP_NOTES, 1U << 6);
	CU_ASSERT_EQUAL(SYSHAX_NOTE_TOKEN, 0);
	CU_ASSERT_EQUAL(SYSHAX_NOTE_BUF_GONE, 1);
	CU_ASSERT_EQUAL(SYSHAX_RING_NOTES, 1U << 0);
	CU_ASSERT_EQUAL(SYSHAX_SUBMIT_RING, 1U << 0);
	CU_ASSERT_EQUAL(SYSHAX_RING_NEED_WAKEUP, 1U << 0);
	CU_ASSERT_EQUAL(SYSHAX_RING_DEAD, 1U << 1);
	CU_ASSERT_EQUAL(SYSHAX_RING_FULL, 1U << 2);
	CU_ASSERT_EQUAL(SYSHAX_RING_WAITING, 1U << 0);
}

static void test_constants(void)
{
	CU_ASSERT_EQUAL(SYSHAX_UAPI_VERSION, 2);
	CU_ASSERT_EQUAL(SYSHAX_IOC_MAGIC, 0xBE);
	CU_ASSERT_EQUAL(SYSHAX_CHUNK_SHIFT, 21);
	CU_ASSERT_EQUAL(SYSHAX_CHUNK_SIZE, 2ULL << 20);
	CU_ASSERT_EQUAL(SYSHAX_MAX_NODES, 16);
	CU_ASSERT_EQUAL(SYSHAX_JOB_MAX_REFS, 8);
	CU_ASSERT_EQUAL(SYSHAX_JOB_PARAMS_SIZE, 224);
	CU_ASSERT_EQUAL(SYSHAX_LAT_BUCKETS, 24);
	CU_ASSERT_EQUAL(SYSHAX_FEAT_BUF, 1);
	CU_ASSERT_EQUAL(SYSHAX_FEAT_DMABUF, 2);
	CU_ASSERT_EQUAL(SYSHAX_FEAT_REGISTER, 4);
	CU_ASSERT_EQUAL(SYSHAX_FEAT_JOBS, 8);
	CU_ASSERT_EQUAL(SYSHAX_BUF_ALLOW_SMALL, 1);
	CU_ASSERT_EQUAL(SYSHAX_BUF_ALLOW_REMOTE, 2);
	CU_ASSERT_EQUAL(SYSHAX_BUF_ALLOC_FLAGS, 3);
	CU_ASSERT_EQUAL(SYSHAX_BUF_KIND_ALLOC, 1);
	CU_ASSERT_EQUAL(SYSHAX_BUF_KIND_REGISTERED, 2);
	CU_ASSERT_EQUAL(SYSHAX_EXPORT_CLOEXEC, 1);
	CU_ASSERT_EQUAL(SYSHAX_EXPORT_FLAGS, 1);
	CU_ASSERT_EQUAL(SYSHAX_ACCESS_READ, 1);
	CU_ASSERT_EQUAL(SYSHAX_ACCESS_WRITE, 2);
	CU_ASSERT_EQUAL(SYSHAX_ACCESS_RW, 3);
	CU_ASSERT_EQUAL(SYSHAX_JOB_MAY_DEFER, 1);
	CU_ASSERT_EQUAL(SYSHAX_JOB_FLAGS, 1);
	CU_ASSERT_EQUAL(SYSHAX_CPL_DEFERRED, 1);
}

/* syshax_ops.h: each op's params fit a job, at fixed sizes and offsets. */
static void test_op_params(void)
{
	CU_ASSERT_EQUAL(sizeof(struct syshax_weights_load_params), 224);
	CU_ASSERT_EQUAL(offsetof(struct syshax_weights_load_params, path), 32);
	CU_ASSERT_EQUAL(sizeof(struct syshax_weights_free_params), 32);
	CU_ASSERT_EQUAL(sizeof(struct syshax_gemm_params), 136);
	CU_ASSERT_EQUAL(offsetof(struct syshax_gemm_params, m), 8);
	CU_ASSERT_EQUAL(offsetof(struct syshax_gemm_params, tensor), 40);
	CU_ASSERT_EQUAL(sizeof(struct syshax_ffn_params), 64);
	CU_ASSERT_EQUAL(offsetof(struct syshax_ffn_params, eps), 28);
	CU_ASSERT_EQUAL(sizeof(struct syshax_moe_params), 64);
	CU_ASSERT_EQUAL(offsetof(struct syshax_moe_params, topk), 36);
	CU_ASSERT_EQUAL(sizeof(struct syshax_attn_decode_params), 80);
	CU_ASSERT_EQUAL(offsetof(struct syshax_attn_decode_params, scale), 40);
	CU_ASSERT_EQUAL(sizeof(struct syshax_wdesc), 16);
	CU_ASSERT_EQUAL(sizeof(struct syshax_wdesc_tensor), 152);
	CU_ASSERT_EQUAL(offsetof(struct syshax_wdesc_tensor, offset), 136);
	CU_ASSERT_EQUAL(sizeof(struct syshax_op_stats), 104);
	CU_ASSERT_EQUAL(sizeof(struct syshax_wset_stats), 136);
	CU_ASSERT_EQUAL(sizeof(struct syshax_engine_stats),
			48 + 64 + 64 + 6 * 16 * 104 + 16 * 136);
	CU_ASSERT_EQUAL(offsetof(struct syshax_engine_stats, decode_deferred),
			16);
	CU_ASSERT_EQUAL(sizeof(struct syshax_model_load_params), 216);
	CU_ASSERT_EQUAL(offsetof(struct syshax_model_load_params, path), 24);
	CU_ASSERT_EQUAL(sizeof(struct syshax_model_info), 104);
	CU_ASSERT_EQUAL(offsetof(struct syshax_model_info, weight_bytes), 64);
	CU_ASSERT_EQUAL(sizeof(struct syshax_step_params), 80);
	CU_ASSERT_EQUAL(offsetof(struct syshax_step_params, flags), 40);
	CU_ASSERT_EQUAL(sizeof(struct syshax_report_xpu_params), 32);
	CU_ASSERT_EQUAL(SYSHAX_OP_WEIGHTS_FREE, 21);
	CU_ASSERT_EQUAL(SYSHAX_OP_ENGINE_STATS, 22);
	CU_ASSERT_EQUAL(SYSHAX_OP_MODEL_LOAD, 23);
	CU_ASSERT_EQUAL(SYSHAX_OP_DECODE, 24);
	CU_ASSERT_EQUAL(SYSHAX_OP_PREFILL, 25);
	CU_ASSERT_EQUAL(SYSHAX_OP_REPORT_XPU, 26);
	CU_ASSERT_EQUAL(SYSHAX_OP_MAX, 27);
	CU_ASSERT_EQUAL(syshax_stats_op_index(SYSHAX_OP_ATTN_DECODE), 3);
	CU_ASSERT_EQUAL(syshax_stats_op_index(SYSHAX_OP_DECODE), 4);
	CU_ASSERT_EQUAL(syshax_stats_op_index(SYSHAX_OP_PREFILL), 5);
	CU_ASSERT_EQUAL(syshax_stats_op_index(SYSHAX_OP_MODEL_LOAD), -1);
	CU_ASSERT_EQUAL(syshax_stats_op_index(SYSHAX_OP_NOP), -1);
}

int main(void)
{
	static const struct t_test tests[] = {
		{ "syshax_version_args", test_version_args },
		{ "syshax_buf_alloc_args", test_buf_alloc_args },
		{ "syshax_buf_free_args", test_buf_free_args },
		{ "syshax_buf_info_args", test_buf_info_args },
		{ "syshax_buf_register_args", test_buf_register_args },
		{ "syshax_buf_export_args", test_buf_export_args },
		{ "syshax_buf_import_args", test_buf_import_args },
		{ "syshax_buf_ref", test_buf_ref },
		{ "syshax_job", test_job },
		{ "syshax_completion", test_completion },
		{ "syshax_submit_args", test_submit_args },
		{ "syshax_wait_args", test_wait_args },
		{ "syshax_engine_attach_args", test_engine_attach_args },
		{ "syshax_engine_job", test_engine_job },
		{ "syshax_engine_fetch_args", test_engine_fetch_args },
		{ "syshax_engine_map_args", test_engine_map_args },
		{ "syshax_engine_cpl", test_engine_cpl },
		{ "syshax_engine_complete_args", test_engine_complete_args },
		{ "syshax_stats_args", test_stats_args },
		{ "syshax_ctx_stats", test_ctx_stats },
		{ "ioctl_numbers", test_ioctl_numbers },
		{ "rings", test_rings },
		{ "constants", test_constants },
		{ "op params", test_op_params },
	};

	return T_RUN_SUITE("uapi_abi", NULL, NULL, tests);
}
