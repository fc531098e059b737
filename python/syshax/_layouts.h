/* SPDX-License-Identifier: MIT */
/*
 * The UAPI structures the Python package packs and reads, described from
 * the headers themselves (offsetof, sizeof): Python never restates a
 * layout, so a header change cannot leave a hand copy behind.
 */
#ifndef SYSHAX_PY_LAYOUTS_H
#define SYSHAX_PY_LAYOUTS_H

#include <stddef.h>

#include "syshax.h"
#include "syshax_ops.h"

/* How a field is read and written. Arrays are their element kind with
 * size / element size entries. */
enum fkind { FK_U32, FK_S32, FK_U64, FK_F32, FK_STR };

struct field {
	const char *name;
	size_t off;
	size_t size;
	enum fkind kind;
};

struct layout {
	const char *name;
	size_t size;
	const struct field *fields;
};

#define FLD(st, f, k) { #f, offsetof(struct st, f), \
			sizeof(((struct st *)0)->f), k }

static const struct field f_weights_load[] = {
	FLD(syshax_weights_load_params, source, FK_U32),
	FLD(syshax_weights_load_params, quantize, FK_U32),
	FLD(syshax_weights_load_params, flags, FK_U32),
	FLD(syshax_weights_load_params, path, FK_STR),
	{ 0 } };
static const struct field f_weights_free[] = {
	FLD(syshax_weights_free_params, wset, FK_U64),
	{ 0 } };
static const struct field f_gemm[] = {
	FLD(syshax_gemm_params, wset, FK_U64),
	FLD(syshax_gemm_params, m, FK_U32),
	FLD(syshax_gemm_params, x_type, FK_U32),
	FLD(syshax_gemm_params, y_type, FK_U32),
	FLD(syshax_gemm_params, flags, FK_U32),
	FLD(syshax_gemm_params, tensor, FK_STR),
	{ 0 } };
static const struct field f_ffn[] = {
	FLD(syshax_ffn_params, wset, FK_U64),
	FLD(syshax_ffn_params, layer, FK_U32),
	FLD(syshax_ffn_params, m, FK_U32),
	FLD(syshax_ffn_params, x_type, FK_U32),
	FLD(syshax_ffn_params, y_type, FK_U32),
	FLD(syshax_ffn_params, flags, FK_U32),
	FLD(syshax_ffn_params, eps, FK_F32),
	{ 0 } };
static const struct field f_moe[] = {
	FLD(syshax_moe_params, wset, FK_U64),
	FLD(syshax_moe_params, layer, FK_U32),
	FLD(syshax_moe_params, m, FK_U32),
	FLD(syshax_moe_params, x_type, FK_U32),
	FLD(syshax_moe_params, y_type, FK_U32),
	FLD(syshax_moe_params, flags, FK_U32),
	FLD(syshax_moe_params, eps, FK_F32),
	FLD(syshax_moe_params, route, FK_U32),
	FLD(syshax_moe_params, topk, FK_U32),
	{ 0 } };
static const struct field f_attn_decode[] = {
	FLD(syshax_attn_decode_params, num_seqs, FK_U32),
	FLD(syshax_attn_decode_params, q_heads, FK_U32),
	FLD(syshax_attn_decode_params, kv_heads, FK_U32),
	FLD(syshax_attn_decode_params, head_dim, FK_U32),
	FLD(syshax_attn_decode_params, block_size, FK_U32),
	FLD(syshax_attn_decode_params, num_blocks, FK_U32),
	FLD(syshax_attn_decode_params, max_blocks, FK_U32),
	FLD(syshax_attn_decode_params, kv_type, FK_U32),
	FLD(syshax_attn_decode_params, q_type, FK_U32),
	FLD(syshax_attn_decode_params, o_type, FK_U32),
	FLD(syshax_attn_decode_params, scale, FK_F32),
	FLD(syshax_attn_decode_params, flags, FK_U32),
	{ 0 } };
static const struct field f_model_load[] = {
	FLD(syshax_model_load_params, quantize, FK_U32),
	FLD(syshax_model_load_params, flags, FK_U32),
	FLD(syshax_model_load_params, path, FK_STR),
	{ 0 } };
static const struct field f_step[] = {
	FLD(syshax_step_params, model, FK_U64),
	FLD(syshax_step_params, n, FK_U32),
	FLD(syshax_step_params, pos, FK_U32),
	FLD(syshax_step_params, block_size, FK_U32),
	FLD(syshax_step_params, num_blocks, FK_U32),
	FLD(syshax_step_params, max_blocks, FK_U32),
	FLD(syshax_step_params, kv_type, FK_U32),
	FLD(syshax_step_params, out, FK_U32),
	FLD(syshax_step_params, topk, FK_U32),
	FLD(syshax_step_params, flags, FK_U32),
	{ 0 } };
static const struct field f_report_xpu[] = {
	FLD(syshax_report_xpu_params, running, FK_U32),
	FLD(syshax_report_xpu_params, tokens_per_s, FK_F32),
	{ 0 } };
static const struct field f_wdesc[] = {
	FLD(syshax_wdesc, magic, FK_U32),
	FLD(syshax_wdesc, version, FK_U32),
	FLD(syshax_wdesc, nr_tensors, FK_U32),
	FLD(syshax_wdesc, flags, FK_U32),
	{ 0 } };
static const struct field f_wdesc_tensor[] = {
	FLD(syshax_wdesc_tensor, name, FK_STR),
	FLD(syshax_wdesc_tensor, type, FK_U32),
	FLD(syshax_wdesc_tensor, ndim, FK_U32),
	FLD(syshax_wdesc_tensor, ne, FK_U64),
	FLD(syshax_wdesc_tensor, offset, FK_U64),
	FLD(syshax_wdesc_tensor, size, FK_U64),
	{ 0 } };
static const struct field f_model_info[] = {
	FLD(syshax_model_info, model, FK_U64),
	FLD(syshax_model_info, arch, FK_U32),
	FLD(syshax_model_info, n_layer, FK_U32),
	FLD(syshax_model_info, n_embd, FK_U32),
	FLD(syshax_model_info, n_head, FK_U32),
	FLD(syshax_model_info, n_head_kv, FK_U32),
	FLD(syshax_model_info, head_dim, FK_U32),
	FLD(syshax_model_info, n_ff, FK_U32),
	FLD(syshax_model_info, n_vocab, FK_U32),
	FLD(syshax_model_info, n_expert, FK_U32),
	FLD(syshax_model_info, n_expert_used, FK_U32),
	FLD(syshax_model_info, n_ctx_train, FK_U32),
	FLD(syshax_model_info, rope_base, FK_F32),
	FLD(syshax_model_info, rms_eps, FK_F32),
	FLD(syshax_model_info, weight_bytes, FK_U64),
	{ 0 } };
static const struct field f_engine_stats[] = {
	FLD(syshax_engine_stats, nr_nodes, FK_U32),
	FLD(syshax_engine_stats, nr_threads, FK_U32),
	FLD(syshax_engine_stats, cpu_max_batch_size, FK_U32),
	FLD(syshax_engine_stats, nr_wsets, FK_U32),
	FLD(syshax_engine_stats, decode_deferred, FK_U64),
	FLD(syshax_engine_stats, decode_kept, FK_U64),
	FLD(syshax_engine_stats, xpu_reports, FK_U64),
	FLD(syshax_engine_stats, node_id, FK_S32),
	FLD(syshax_engine_stats, node_threads, FK_U32),
	{ 0 } };
static const struct field f_op_stats[] = {
	FLD(syshax_op_stats, jobs, FK_U64),
	FLD(syshax_op_stats, failed, FK_U64),
	FLD(syshax_op_stats, tokens, FK_U64),
	FLD(syshax_op_stats, batches, FK_U64),
	FLD(syshax_op_stats, run_ns, FK_U64),
	FLD(syshax_op_stats, batch_hist, FK_U64),
	{ 0 } };
static const struct field f_stats[] = {
	FLD(syshax_stats_args, pinned_bytes, FK_U64),
	FLD(syshax_stats_args, node_bytes, FK_U64),
	FLD(syshax_stats_args, nr_bufs, FK_U64),
	FLD(syshax_stats_args, node_bufs, FK_U64),
	FLD(syshax_stats_args, contexts, FK_U32),
	FLD(syshax_stats_args, engines, FK_U32),
	FLD(syshax_stats_args, jobs_submitted, FK_U64),
	FLD(syshax_stats_args, jobs_fetched, FK_U64),
	FLD(syshax_stats_args, jobs_completed, FK_U64),
	FLD(syshax_stats_args, jobs_failed, FK_U64),
	FLD(syshax_stats_args, jobs_cancelled, FK_U64),
	FLD(syshax_stats_args, queue_depth, FK_U64),
	FLD(syshax_stats_args, inflight, FK_U64),
	FLD(syshax_stats_args, lat_hist, FK_U64),
	{ 0 } };
static const struct field f_version[] = {
	FLD(syshax_version_args, uapi_version, FK_U32),
	FLD(syshax_version_args, features, FK_U32),
	FLD(syshax_version_args, max_buf_size, FK_U64),
	FLD(syshax_version_args, max_pinned, FK_U64),
	FLD(syshax_version_args, chunk_size, FK_U32),
	FLD(syshax_version_args, nr_nodes, FK_U32),
	FLD(syshax_version_args, max_refs, FK_U32),
	FLD(syshax_version_args, max_submit, FK_U32),
	{ 0 } };
static const struct field f_buf_info[] = {
	FLD(syshax_buf_info_args, kind, FK_U32),
	FLD(syshax_buf_info_args, size, FK_U64),
	FLD(syshax_buf_info_args, id, FK_U64),
	FLD(syshax_buf_info_args, chunk_size, FK_U32),
	FLD(syshax_buf_info_args, nr_chunks, FK_U32),
	FLD(syshax_buf_info_args, node, FK_S32),
	FLD(syshax_buf_info_args, flags, FK_U32),
	FLD(syshax_buf_info_args, node_bytes, FK_U64),
	{ 0 } };
static const struct field f_ctx_stat[] = {
	FLD(syshax_ctx_stat, ctx_id, FK_U32),
	FLD(syshax_ctx_stat, pid, FK_S32),
	FLD(syshax_ctx_stat, uid, FK_U32),
	FLD(syshax_ctx_stat, flags, FK_U32),
	FLD(syshax_ctx_stat, comm, FK_STR),
	FLD(syshax_ctx_stat, nr_bufs, FK_U64),
	FLD(syshax_ctx_stat, buf_bytes, FK_U64),
	FLD(syshax_ctx_stat, jobs_queued, FK_U64),
	FLD(syshax_ctx_stat, jobs_inflight, FK_U64),
	FLD(syshax_ctx_stat, jobs_submitted, FK_U64),
	FLD(syshax_ctx_stat, jobs_completed, FK_U64),
	FLD(syshax_ctx_stat, jobs_failed, FK_U64),
	FLD(syshax_ctx_stat, eng_held, FK_U64),
	FLD(syshax_ctx_stat, eng_done, FK_U64),
	{ 0 } };

#define LAYOUT(n, st) { #n, sizeof(struct st), f_##n }

static const struct layout g_layouts[] = {
	LAYOUT(weights_load, syshax_weights_load_params),
	LAYOUT(weights_free, syshax_weights_free_params),
	LAYOUT(gemm, syshax_gemm_params),
	LAYOUT(ffn, syshax_ffn_params),
	LAYOUT(moe, syshax_moe_params),
	LAYOUT(attn_decode, syshax_attn_decode_params),
	LAYOUT(model_load, syshax_model_load_params),
	LAYOUT(step, syshax_step_params),
	LAYOUT(report_xpu, syshax_report_xpu_params),
	LAYOUT(wdesc, syshax_wdesc),
	LAYOUT(wdesc_tensor, syshax_wdesc_tensor),
	LAYOUT(model_info, syshax_model_info),
	LAYOUT(engine_stats, syshax_engine_stats),
	LAYOUT(op_stats, syshax_op_stats),
	LAYOUT(stats, syshax_stats_args),
	LAYOUT(version, syshax_version_args),
	LAYOUT(buf_info, syshax_buf_info_args),
	LAYOUT(ctx_stat, syshax_ctx_stat),
	{ 0 } };

/* Where an engine_stats' per-op, per-pool array starts. */
#define ENGINE_STATS_OP_OFF	offsetof(struct syshax_engine_stats, op)

#endif /* SYSHAX_PY_LAYOUTS_H */
