/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * sysHAX job ops: the op codes a struct syshax_job carries, the inline
 * parameters (syshax_job.params) of each and what each ref slot holds.
 * This is a contract between clients and engines; the broker (module or
 * syshaxd) only checks that the op is known and the refs are valid, never
 * the params. The engine checks every param against the refs' lengths and
 * access before it runs anything: a bad job completes with -EINVAL (or
 * -ERANGE when a ref is too short, -ENOENT for an unknown weight set or
 * tensor) and writes nothing.
 *
 * Conventions for every compute op:
 *  - reserved fields, pad and unknown flag bits must be zero (-EINVAL);
 *  - "refs[i] (R)" is read, "(W)" written: the ref must ask for that access;
 *  - a ref's length must cover the bytes the op reads or writes there
 *    (it may be longer; nothing past what the op names is touched);
 *  - tensors are row-major and contiguous; [m x k] is m rows of k values;
 *  - float parameters are IEEE-754 binary32 bit patterns in __u32 fields
 *    (the module never interprets params and builds without floating
 *    point); libsyshax-rt's job builders take floats.
 *
 * Ops run by syshaxd's CPU engine: docs/engine.md.
 */
#ifndef _UAPI_SYSHAX_OPS_H
#define _UAPI_SYSHAX_OPS_H

#include <linux/types.h>

#include "syshax.h"

enum syshax_op {
	SYSHAX_OP_NOP		= 0,	/* no refs; completes with result 0 */
	SYSHAX_OP_COPY		= 1,	/* test op: refs[0] (R) -> refs[1] (W) */
	/* Compute ops, run by syshaxd: */
	SYSHAX_OP_WEIGHTS_LOAD	= 16,
	SYSHAX_OP_GEMM		= 17,
	SYSHAX_OP_FFN		= 18,
	SYSHAX_OP_MOE		= 19,
	SYSHAX_OP_ATTN_DECODE	= 20,
	SYSHAX_OP_WEIGHTS_FREE	= 21,
	SYSHAX_OP_ENGINE_STATS	= 22,
	/* Whole models (docs/model-runner.md): */
	SYSHAX_OP_MODEL_LOAD	= 23,
	SYSHAX_OP_DECODE	= 24,
	SYSHAX_OP_PREFILL	= 25,
	SYSHAX_OP_REPORT_XPU	= 26,
	SYSHAX_OP_MAX		= 27,	/* ops >= this are rejected (-EINVAL) */
};

/*
 * SYSHAX_OP_COPY: copies min(refs[0].length, refs[1].length) bytes from
 * refs[0] to refs[1]; result = bytes copied. No params (all zero).
 */

/* Element types of activations, KV caches and weights (the numbers of the
 * kernels' enum shxk_type; Q8_0/Q4_0 are ggml's blocks of 32). */
enum syshax_dtype {
	SYSHAX_DT_F32	= 0,
	SYSHAX_DT_F16	= 1,
	SYSHAX_DT_BF16	= 2,
	SYSHAX_DT_Q8_0	= 3,	/* weights only */
	SYSHAX_DT_Q4_0	= 4,	/* weights only */
};

/* Longest tensor name a job may give, with its NUL. */
#define SYSHAX_TENSOR_NAME_MAX	96

/*
 * Tensor names are GGUF's (llama.cpp's): blk.<layer>.ffn_gate.weight,
 * blk.<layer>.ffn_up.weight, blk.<layer>.ffn_down.weight,
 * blk.<layer>.ffn_norm.weight, MoE: blk.<layer>.ffn_gate_inp.weight
 * (router), blk.<layer>.ffn_{gate,up,down}_exps.weight (experts stacked,
 * [n_expert x rows x k]), blk.<layer>.ffn_{gate,up,down}_shexp.weight
 * (shared expert), blk.<layer>.ffn_gate_inp_shexp.weight (its gate). A
 * safetensors file's Hugging Face names (model.layers.<layer>.mlp.up_proj.
 * weight, ...) are renamed to these on load (docs/engine.md has the map).
 */

/* ---- WEIGHTS_LOAD ------------------------------------------------------- */

/* Where the tensors come from. */
#define SYSHAX_WLOAD_BUFFER	0	/* refs[0] (R): a syshax_wdesc and data */
#define SYSHAX_WLOAD_FILE	1	/* path: a GGUF or safetensors file */

/* What floating-point matrices (2-D and up) become on load; 1-D tensors
 * (norms, biases) are always kept as f32, GGUF Q8_0/Q4_0 as they are. */
#define SYSHAX_QUANT_DEFAULT	0	/* the daemon's quantize (SYSHAX_QUANTIZE) */
#define SYSHAX_QUANT_NONE	1	/* keep F32/F16/BF16 */
#define SYSHAX_QUANT_Q8_0	2
#define SYSHAX_QUANT_Q4_0	3

/*
 * Loads a weight set; result = its id (>= 1), which later jobs name. The
 * set is split across the engine's NUMA nodes (docs/engine.md) and lives
 * until WEIGHTS_FREE or the daemon's exit. Errors: -EACCES (path outside
 * the daemon's model_dir, or no model_dir), -ENOENT (no such file),
 * -EINVAL (malformed file or descriptor, a tensor type the kernels cannot
 * run: the daemon logs the tensor and its type), -ENOMEM, -ENOSPC (the
 * daemon's max_weight_sets reached).
 */
struct syshax_weights_load_params {
	__u32 source;		/* SYSHAX_WLOAD_* */
	__u32 quantize;		/* SYSHAX_QUANT_* */
	__u32 flags;		/* zero */
	__u32 pad;		/* zero */
	__u64 reserved[2];	/* zero */
	/* FILE: NUL-terminated path, relative to model_dir (or absolute
	 * inside it); symlinks may not lead outside it. BUFFER: zero. */
	char path[192];
};

/* The descriptor a BUFFER source starts with (at refs[0].offset). */
#define SYSHAX_WDESC_MAGIC	0x57584853	/* "SHXW" */
#define SYSHAX_WDESC_VERSION	1

struct syshax_wdesc_tensor {
	char name[SYSHAX_TENSOR_NAME_MAX];	/* NUL-terminated, unique */
	__u32 type;		/* SYSHAX_DT_* */
	__u32 ndim;		/* 1..4 */
	__u64 ne[4];		/* ggml order: ne[0] contiguous; unused 1 */
	__u64 offset;		/* of the data, from the descriptor's start */
	__u64 size;		/* bytes: exactly the elements' size */
};

struct syshax_wdesc {
	__u32 magic;		/* SYSHAX_WDESC_MAGIC */
	__u32 version;		/* SYSHAX_WDESC_VERSION */
	__u32 nr_tensors;	/* entries of tensors[] */
	__u32 flags;		/* zero */
	struct syshax_wdesc_tensor tensors[];
};

/* ---- WEIGHTS_FREE: no refs; result 0. Only the context that loaded a set
 * may free it (-EPERM); jobs already running on it finish first. -------- */

struct syshax_weights_free_params {
	__u64 wset;		/* id from WEIGHTS_LOAD */
	__u64 reserved[3];	/* zero */
};

/* ---- GEMM: Y[m x n] = X[m x k] . W[n x k]^T for one tensor W ------------
 *   refs[0] (R)  X: m x k, x_type
 *   refs[1] (W)  Y: m x n, y_type
 * result: m (tokens).
 */
struct syshax_gemm_params {
	__u64 wset;		/* weight set id */
	__u32 m;		/* rows of X (tokens), >= 1 */
	__u32 x_type;		/* SYSHAX_DT_F32/F16/BF16 */
	__u32 y_type;		/* SYSHAX_DT_F32/F16/BF16 */
	__u32 flags;		/* zero */
	__u64 reserved[2];	/* zero */
	char tensor[SYSHAX_TENSOR_NAME_MAX];	/* W, a 2-D tensor */
};

/* ---- FFN: one layer's SwiGLU block ----------------------------------------
 *   h = NORM ? rmsnorm(X) * ffn_norm : X
 *   f = down(silu(gate(h)) * up(h))
 *   Y = RESIDUAL ? X + f : f
 *   refs[0] (R)  X: m x hidden, x_type
 *   refs[1] (W)  Y: m x hidden, y_type (may be X itself: X is read first)
 * result: m.
 */
#define SYSHAX_FFN_NORM		(1U << 0)	/* RMSNorm with ffn_norm first */
#define SYSHAX_FFN_RESIDUAL	(1U << 1)	/* add X to the output */
#define SYSHAX_FFN_FLAGS	(SYSHAX_FFN_NORM | SYSHAX_FFN_RESIDUAL)

struct syshax_ffn_params {
	__u64 wset;
	__u32 layer;		/* blk.<layer>.* */
	__u32 m;		/* tokens, >= 1 */
	__u32 x_type;		/* SYSHAX_DT_F32/F16/BF16 */
	__u32 y_type;		/* SYSHAX_DT_F32/F16/BF16 */
	__u32 flags;		/* SYSHAX_FFN_* */
	__u32 eps;		/* RMSNorm epsilon, binary32 bits; 0: 1e-6 */
	__u64 reserved[4];	/* zero */
};

/* ---- MOE: one layer's experts (Qwen3-MoE / Mixtral style) ----------------
 *   h as FFN; each token runs its top-k experts (SwiGLU each) and sums them
 *   weighted; SHARED adds the shared expert (times sigmoid(h .
 *   ffn_gate_inp_shexp) when the set has that tensor); RESIDUAL adds X.
 *   refs[0] (R)  X: m x hidden, x_type
 *   refs[1] (W)  Y: m x hidden, y_type
 *   route IDS:    refs[2] (R) expert ids, s32 [m x topk];
 *                 refs[3] (R) their weights, f32 [m x topk]
 *   route LOGITS: refs[2] (R) router logits, f32 [m x n_expert]
 *   route ROUTER: logits computed here from ffn_gate_inp; no more refs
 *   LOGITS and ROUTER take softmax over all experts, then the top-k
 *   (ties: lower id), renormalized to sum 1 with NORM_TOPK.
 * result: m.
 */
#define SYSHAX_MOE_ROUTE_IDS	0
#define SYSHAX_MOE_ROUTE_LOGITS	1
#define SYSHAX_MOE_ROUTE_ROUTER	2

#define SYSHAX_MOE_NORM		(1U << 0)	/* as SYSHAX_FFN_NORM */
#define SYSHAX_MOE_RESIDUAL	(1U << 1)	/* as SYSHAX_FFN_RESIDUAL */
#define SYSHAX_MOE_SHARED	(1U << 2)	/* add the shared expert */
#define SYSHAX_MOE_NORM_TOPK	(1U << 3)	/* top-k weights sum to 1 */
#define SYSHAX_MOE_FLAGS	(SYSHAX_MOE_NORM | SYSHAX_MOE_RESIDUAL | \
				 SYSHAX_MOE_SHARED | SYSHAX_MOE_NORM_TOPK)

struct syshax_moe_params {
	__u64 wset;
	__u32 layer;
	__u32 m;		/* tokens, >= 1 */
	__u32 x_type;		/* SYSHAX_DT_F32/F16/BF16 */
	__u32 y_type;		/* SYSHAX_DT_F32/F16/BF16 */
	__u32 flags;		/* SYSHAX_MOE_* */
	__u32 eps;		/* RMSNorm epsilon, binary32 bits; 0: 1e-6 */
	__u32 route;		/* SYSHAX_MOE_ROUTE_* */
	__u32 topk;		/* experts per token, 1..n_expert (<= 64) */
	__u64 reserved[3];	/* zero */
};

/* ---- ATTN_DECODE: paged decode attention, one query token per sequence ---
 *   refs[0] (R)  q: num_seqs x q_heads x head_dim, q_type
 *   refs[1] (R)  K cache: [num_blocks, block_size, kv_heads, head_dim],
 *                kv_type (vLLM's layout; the xPU reads the same blocks)
 *   refs[2] (R)  V cache: the same shape
 *   refs[3] (R)  block tables: s32 [num_seqs x max_blocks], entries
 *                < num_blocks for the blocks a sequence uses
 *   refs[4] (R)  sequence lengths: s32 [num_seqs], 0..max_blocks *
 *                block_size (0: the output row is zero)
 *   refs[5] (W)  out: num_seqs x q_heads x head_dim, o_type
 * out = softmax(scale * q . K^T) . V per head; q head h reads kv head
 * h / (q_heads / kv_heads) (GQA). result: num_seqs.
 */
struct syshax_attn_decode_params {
	__u32 num_seqs;		/* >= 1 */
	__u32 q_heads;		/* a multiple of kv_heads */
	__u32 kv_heads;		/* >= 1 */
	__u32 head_dim;		/* 1..1024 */
	__u32 block_size;	/* positions per block, >= 1 */
	__u32 num_blocks;	/* blocks in each cache */
	__u32 max_blocks;	/* block-table entries per sequence */
	__u32 kv_type;		/* SYSHAX_DT_F32/F16/BF16 */
	__u32 q_type;		/* SYSHAX_DT_F32/F16/BF16 */
	__u32 o_type;		/* SYSHAX_DT_F32/F16/BF16 */
	__u32 scale;		/* binary32 bits; 0: 1 / sqrt(head_dim) */
	__u32 flags;		/* zero */
	__u64 reserved[4];	/* zero */
};

/* ---- MODEL_LOAD: a whole decoder model from a GGUF file ------------------
 *   refs[0] (W, optional)  a struct syshax_model_info (its size or more)
 * Loads the file (a path as WEIGHTS_LOAD's, beneath model_dir) as a weight
 * set with the model's hyperparameters (llama.cpp's GGUF metadata keys);
 * result = its id, which DECODE and PREFILL name and WEIGHTS_FREE frees.
 * Architectures: SYSHAX_ARCH_*. Tensor types F32/F16/BF16/Q8_0/Q4_0; a
 * file with any other type is refused (-EINVAL, the daemon logs the tensor
 * and its type), as are a wrong architecture, a missing tensor and a shape
 * that does not fit the hyperparameters.
 */
enum syshax_arch {
	SYSHAX_ARCH_LLAMA	= 1,	/* Llama 2/3: GQA, RoPE (adjacent pairs) */
	SYSHAX_ARCH_QWEN2	= 2,	/* + q/k/v biases, RoPE (NeoX halves) */
	SYSHAX_ARCH_QWEN3	= 3,	/* + per-head q/k RMSNorm, no biases */
	SYSHAX_ARCH_QWEN3MOE	= 4,	/* qwen3 with routed experts */
};

struct syshax_model_load_params {
	__u32 quantize;		/* SYSHAX_QUANT_*: what F32/F16/BF16 matrices
				 * become (GGUF Q8_0/Q4_0 stay) */
	__u32 flags;		/* zero */
	__u64 reserved[2];	/* zero */
	char path[192];		/* as syshax_weights_load_params.path */
};

struct syshax_model_info {
	__u64 model;		/* the id (also the job's result) */
	__u32 arch;		/* SYSHAX_ARCH_* */
	__u32 n_layer;
	__u32 n_embd;		/* hidden size */
	__u32 n_head;		/* query heads */
	__u32 n_head_kv;	/* key/value heads */
	__u32 head_dim;
	__u32 n_ff;		/* FFN width (each expert's for MoE) */
	__u32 n_vocab;		/* logits per token */
	__u32 n_expert;		/* 0: dense */
	__u32 n_expert_used;	/* top-k */
	__u32 n_ctx_train;	/* context length the model was trained for */
	__u32 rope_base;	/* binary32 bits */
	__u32 rms_eps;		/* binary32 bits */
	__u32 pad;
	__u64 weight_bytes;	/* weights in memory, all nodes */
	__u64 reserved[4];
};

/* ---- DECODE and PREFILL: whole steps of a loaded model -------------------
 * The KV cache lives in the client's buffers, so the CPU and an xPU can
 * take turns on a sequence without moving it: refs K and V each hold
 * n_layer caches one after another, layer l's at l * layer_bytes, each
 * [num_blocks, block_size, n_head_kv, head_dim] of kv_type (vLLM's layout,
 * as ATTN_DECODE's); layer_bytes = num_blocks * block_size * n_head_kv *
 * head_dim * sizeof(kv_type). A token at position p of a sequence goes to
 * block block_table[p / block_size], slot p % block_size; attention reads
 * positions 0..p.
 *
 * DECODE: num_seqs sequences, one new token each.
 *   refs[0] (R)  token ids, s32 [n]
 *   refs[1] (R)  positions, s32 [n] (the tokens already in each cache)
 *   refs[2] (R)  block tables, s32 [n x max_blocks]
 *   refs[3] (RW) K caches, refs[4] (RW) V caches
 *   refs[5] (W)  output, n rows
 * PREFILL: n tokens of one sequence at positions pos .. pos + n - 1.
 *   refs[0] (R)  token ids, s32 [n]
 *   refs[1] (R)  block table, s32 [max_blocks]
 *   refs[2] (RW) K caches, refs[3] (RW) V caches
 *   refs[4] (W)  output: the last token's row (every token's with
 *                SYSHAX_STEP_ALL_ROWS)
 * Output rows: SYSHAX_STEP_OUT_LOGITS f32 [n_vocab]; SYSHAX_STEP_OUT_TOPK
 * topk (s32 id, f32 logit) pairs, highest first (ties: lower id).
 * Each step writes the new tokens' K/V rows, then reads. DECODE jobs of
 * one model that are fetched together run as one batch of up to the
 * daemon's cpu_max_batch_size sequences. result: rows written.
 *
 * DECODE with SYSHAX_JOB_MAY_DEFER: the engine applies the dispatch rule
 * (docs/dispatch.md) and may complete the job at once, unrun, with
 * SYSHAX_CPL_DEFERRED: the framework then runs that step on its xPU, on
 * the same KV blocks.
 */
#define SYSHAX_STEP_OUT_LOGITS	0
#define SYSHAX_STEP_OUT_TOPK	1
#define SYSHAX_STEP_TOPK_MAX	64

#define SYSHAX_STEP_ALL_ROWS	(1U << 0)	/* PREFILL: every token's row */

struct syshax_step_params {
	__u64 model;		/* id from MODEL_LOAD */
	__u32 n;		/* DECODE: sequences; PREFILL: tokens; >= 1 */
	__u32 pos;		/* PREFILL: the first token's position;
				 * DECODE: zero */
	__u32 block_size;	/* positions per block, >= 1 */
	__u32 num_blocks;	/* blocks in each layer's cache */
	__u32 max_blocks;	/* block-table entries per sequence */
	__u32 kv_type;		/* SYSHAX_DT_F32/F16/BF16 */
	__u32 out;		/* SYSHAX_STEP_OUT_* */
	__u32 topk;		/* OUT_TOPK: 1..SYSHAX_STEP_TOPK_MAX; else 0 */
	__u32 flags;		/* SYSHAX_STEP_ALL_ROWS (PREFILL only) */
	__u32 pad;		/* zero */
	__u64 reserved[4];	/* zero */
};

/* ---- REPORT_XPU: the framework's xPU load, for the dispatch rule ---------
 * No refs. The latest report stands until the next. result: 0.
 */
struct syshax_report_xpu_params {
	__u32 running;		/* sequences the xPU is decoding now */
	__u32 tokens_per_s;	/* its decode tokens/s, all of them: binary32 */
	__u64 reserved[3];	/* zero */
};

/* ---- ENGINE_STATS: the CPU engine's counters ---------------------------
 *   refs[0] (W)  a struct syshax_engine_stats (its size or more)
 * No params (all zero). result: sizeof(struct syshax_engine_stats).
 * Read while the engine runs; counters only grow (but for weight sets).
 */
#define SYSHAX_STATS_OPS	6	/* GEMM, FFN, MOE, ATTN_DECODE, DECODE,
					 * PREFILL */
#define SYSHAX_STATS_BATCH_BUCKETS 8	/* tokens 1, 2-3, 4-7, ..., >= 128 */
#define SYSHAX_STATS_WSETS	16	/* weight sets listed */

/* Index of an op in syshax_engine_stats.op[]. */
static inline int syshax_stats_op_index(__u32 op)
{
	if (op >= SYSHAX_OP_GEMM && op <= SYSHAX_OP_ATTN_DECODE)
		return (int)(op - SYSHAX_OP_GEMM);
	if (op == SYSHAX_OP_DECODE || op == SYSHAX_OP_PREFILL)
		return (int)(op - SYSHAX_OP_DECODE) + 4;
	return -1;
}

struct syshax_op_stats {
	__u64 jobs;		/* completed with status 0 */
	__u64 failed;		/* completed with an error */
	__u64 tokens;		/* rows of X (sequences for ATTN_DECODE and
				 * DECODE, prompt tokens for PREFILL) */
	__u64 batches;		/* batched runs (several jobs, one GEMM) */
	__u64 run_ns;		/* time this node's threads spent on them */
	__u64 batch_hist[SYSHAX_STATS_BATCH_BUCKETS];	/* tokens per batch */
};

struct syshax_wset_stats {
	__u64 id;		/* 0: unused entry */
	/* Weight bytes on each node; 0 for a set that shares the tensors
	 * of one listed before it (the same file loaded again). */
	__u64 node_bytes[SYSHAX_MAX_NODES];
};

struct syshax_engine_stats {
	__u32 nr_nodes;		/* NUMA nodes with worker threads */
	__u32 nr_threads;	/* worker threads in all */
	__u32 cpu_max_batch_size;
	__u32 nr_wsets;		/* weight sets loaded (may exceed the list) */
	/* The dispatch rule (DECODE with SYSHAX_JOB_MAY_DEFER): */
	__u64 decode_deferred;	/* jobs completed with SYSHAX_CPL_DEFERRED */
	__u64 decode_kept;	/* jobs it kept on the CPU */
	__u64 xpu_reports;	/* REPORT_XPU jobs */
	__u64 reserved;
	__s32 node_id[SYSHAX_MAX_NODES];	/* NUMA node of each pool */
	__u32 node_threads[SYSHAX_MAX_NODES];
	/* op[i][p]: op index i (syshax_stats_op_index), pool p; every pool
	 * takes part in every job, so jobs, failed, tokens, batches and
	 * batch_hist are the same in each, run_ns is the pool's own */
	struct syshax_op_stats op[SYSHAX_STATS_OPS][SYSHAX_MAX_NODES];
	struct syshax_wset_stats wsets[SYSHAX_STATS_WSETS];
};

#endif /* _UAPI_SYSHAX_OPS_H */
