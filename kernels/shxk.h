/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * sysHAX CPU compute kernels: quantized GEMV/GEMM, SwiGLU, RMSNorm, MoE
 * grouping, paged decode attention.
 *
 * Pure functions on caller memory: no threads, no allocation, no I/O. Every
 * compute call takes a range [r0, r1) of its output (rows, heads or tokens)
 * so callers split work across threads and NUMA nodes. Calls return 0 or a
 * negative errno (-EINVAL for bad arguments); none sets errno.
 *
 * Call shxk_init() once before anything else (it is idempotent and
 * thread-safe to repeat); it picks the ISA variant for this CPU, or the one
 * named by SYSHAX_ISA=generic|avx2|avx512|avx512bf16|neon|dotprod|i8mm|sve.
 *
 * Formats are ggml's: Q8_0 and Q4_0 blocks of 32 values with an f16 scale,
 * bit-exact (see docs/kernels.md).
 */
#ifndef SHXK_H
#define SHXK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum shxk_type {
	SHXK_F32	= 0,
	SHXK_F16	= 1,	/* IEEE binary16 */
	SHXK_BF16	= 2,	/* bfloat16 */
	SHXK_Q8_0	= 3,	/* struct shxk_block_q8_0 */
	SHXK_Q4_0	= 4,	/* struct shxk_block_q4_0 */
	SHXK_NTYPES
};

/* Values per quantized block; K of quantized rows must be a multiple. */
#define SHXK_QK 32

/* ggml block_q8_0: x[i] = d * qs[i]. */
struct shxk_block_q8_0 {
	uint16_t d;			/* f16 scale */
	int8_t qs[SHXK_QK];
};

/*
 * ggml block_q4_0: x[i] = d * (q[i] - 8), q[i] in the low nibble of qs[i]
 * for i < 16 and the high nibble of qs[i - 16] for i >= 16.
 */
struct shxk_block_q4_0 {
	uint16_t d;			/* f16 scale */
	uint8_t qs[SHXK_QK / 2];
};

/* ---- setup ---- */

/*
 * Probes the CPU once and fills the dispatch table. Returns 0, or -EINVAL
 * when SYSHAX_ISA (or NRC) names an unknown value, or -ENOTSUP when it
 * names a variant this CPU or build lacks; the table then stays generic.
 */
int shxk_init(void);

/* The chosen variant ("generic", "avx2", "avx512", "avx512bf16", "neon",
 * "dotprod", "i8mm", "sve"); "generic" before shxk_init(). */
const char *shxk_isa_name(void);

/* ---- the CPU, for logs and diagnostics ---- */

/* AMX units (x86) the CPU reports. */
#define SHXK_AMX_TILE	(1u << 0)
#define SHXK_AMX_INT8	(1u << 1)
#define SHXK_AMX_BF16	(1u << 2)

struct shxk_cpu_info {
	char model[96];		/* x86: cpuid's brand, family, model; Arm: MIDR_EL1 */
	unsigned int amx;	/* SHXK_AMX_* */
	/*
	 * 0: this process may run AMX tile instructions (Linux wants each
	 * process to ask: arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA), which
	 * shxk_init() does once); -errno: the kernel refused or does not
	 * enable the tile state (-EOPNOTSUPP); -ENODEV: no AMX here.
	 */
	int amx_perm;
};

/* What shxk_init() found (it calls shxk_init() itself). */
void shxk_cpu_info(struct shxk_cpu_info *ci);

/*
 * One line for logs and tool headers: the CPU, the kernel variant and
 * AMX, e.g. "AMD EPYC; kernels avx512bf16; AMX none". Returns
 * snprintf's count.
 */
int shxk_cpu_describe(char *buf, size_t len);

/* ---- scalar conversions (round to nearest even, as ggml) ---- */

uint16_t shxk_fp32_to_fp16(float f);
float shxk_fp16_to_fp32(uint16_t h);
uint16_t shxk_fp32_to_bf16(float f);
float shxk_bf16_to_fp32(uint16_t h);

/* ---- rows ---- */

/* Bytes of one row of k values of type t; 0 when k is not valid for t. */
size_t shxk_row_size(enum shxk_type t, size_t k);

/*
 * Rows [r0, r1) of x ([rows x k] f32, contiguous) to rows of type t at y
 * (each shxk_row_size(t, k) bytes), and back.
 */
int shxk_quantize(enum shxk_type t, const float *x, void *y, size_t k,
		  size_t r0, size_t r1);
int shxk_dequantize(enum shxk_type t, const void *x, float *y, size_t k,
		    size_t r0, size_t r1);

/* ---- GEMM: Y[M x N] = X[M x K] . W[N x K]^T ---- */

enum shxk_layout {
	SHXK_LAYOUT_ROWS = 0,	/* row-major, each row shxk_row_size() */
	/*
	 * Q8_0/Q4_0 only: groups of 8 rows; within a group, for each block
	 * column j = 0, 1, ...: the 8 rows' f16 scales of block j, then the
	 * 8 rows' qs of block j interleaved in 8-byte chunks (bytes 0..7 of
	 * rows 0..7, then bytes 8..15 of rows 0..7, ...). N is padded up to
	 * a multiple of 8 with zero rows. Made by shxk_repack(); the same
	 * bytes per row as ROWS.
	 */
	SHXK_LAYOUT_X8 = 1,
};

/* A weight matrix as the kernels read it. */
struct shxk_weights {
	enum shxk_type type;
	enum shxk_layout layout;
	size_t n, k;
	const void *data;
};

/* Bytes shxk_repack() writes for an [n x k] matrix of type t in layout. */
size_t shxk_repack_size(enum shxk_type t, enum shxk_layout layout,
			size_t n, size_t k);
/*
 * Copies row groups [g0, g1) (groups of 8 rows for SHXK_LAYOUT_X8) of the
 * row-major src into dst in the given layout.
 */
int shxk_repack(const struct shxk_weights *src, enum shxk_layout layout,
		void *dst, size_t g0, size_t g1);

/* Row r of w (any layout) as k f32 values: an embedding lookup. */
int shxk_weights_row(const struct shxk_weights *w, size_t r, float *y);

/*
 * Activations are prepared once per GEMM input (converted to f32 for F32
 * and F16 weights, rounded to bf16 and kept as f32 and as bf16 for BF16
 * weights, quantized to 8-bit blocks for Q8_0/Q4_0 weights) and then read
 * by every thread's row range. The prepared format depends only on the
 * weight type; a prepared row is shxk_act_row_size() bytes, rows are
 * contiguous, so rows can be gathered with memcpy (MoE). The buffer must be
 * 4-byte aligned (it holds f32 scales). For speed with Q8_0/Q4_0 weights,
 * repack them to SHXK_LAYOUT_X8 once at load time.
 */
size_t shxk_act_row_size(enum shxk_type wtype, size_t k);
/* Prepares rows [m0, m1) of x ([M x k], type xtype: f32/f16/bf16, row
 * stride ldx elements) into act. */
int shxk_act_prepare(enum shxk_type wtype, enum shxk_type xtype,
		     const void *x, size_t ldx, size_t k, void *act,
		     size_t m0, size_t m1);

/*
 * Y[0..m) x [n0, n1) = act . W^T; y is type ytype (f32/f16/bf16) with row
 * stride ldy elements. 1 <= m <= SHXK_GEMM_MAX_M.
 */
#define SHXK_GEMM_MAX_M 256
int shxk_gemm(const struct shxk_weights *w, const void *act, size_t m,
	      void *y, enum shxk_type ytype, size_t ldy, size_t n0, size_t n1);

/* ---- FFN pieces ---- */

/*
 * y[i][j] = silu(gate[i][j]) * up[i][j] for rows i in [0, m) and columns
 * j in [j0, j1); strides in elements. y may alias gate or up.
 */
int shxk_swiglu(const float *gate, size_t ldg, const float *up, size_t ldu,
		float *y, size_t ldy, size_t m, size_t j0, size_t j1);

/* y[i] = x[i] / sqrt(mean(x[i]^2) + eps) * w (w may be NULL: no weight),
 * rows [r0, r1) of [rows x k] contiguous x and y (may alias). */
int shxk_rmsnorm(const float *x, const float *w, float *y, size_t k,
		 float eps, size_t r0, size_t r1);

/* ---- MoE ---- */

/*
 * Groups the ntok x topk choices ids[t * topk + s] (expert numbers
 * < nexp) by expert: off[e] .. off[e + 1] (off has nexp + 1 entries) are
 * the positions of expert e's rows in order[], where order[p] = t * topk + s;
 * pos[t * topk + s] = p is the inverse. Stable (ascending t within an
 * expert). Not split by range: it is O(ntok * topk).
 */
int shxk_moe_group(const int32_t *ids, size_t ntok, size_t topk, size_t nexp,
		   uint32_t *off, uint32_t *order, uint32_t *pos);

/*
 * y[t] = sum_s wts[t * topk + s] * eo[pos[t * topk + s]] for tokens t in
 * [t0, t1), where eo is the [ntok * topk x d] expert output in grouped
 * order (row p belongs to order[p]); y is [ntok x d].
 */
int shxk_moe_combine(const float *eo, const uint32_t *pos, const float *wts,
		     size_t topk, size_t d, float *y, size_t t0, size_t t1);

/* ---- paged decode attention ---- */

/* A paged KV cache: k and v are [num_blocks, block_size, kv_heads,
 * head_dim] of type (f32/f16/bf16). */
struct shxk_kv_cache {
	enum shxk_type type;
	size_t block_size, kv_heads, head_dim;
	const void *k, *v;
};

/*
 * One sequence, one query token: for q heads [h0, h1) of q ([q_heads x
 * head_dim] f32; q_heads a multiple of kv_heads, head h reads kv head
 * h / (q_heads / kv_heads)), attends over context positions [c0, c1) whose
 * blocks are block_table[pos / block_size]. out ([q_heads x head_dim] f32)
 * gets softmax(scale * q.K^T) . V over that range.
 *
 * For split-K, pass ml ([q_heads x 2] f32): it gets each head's running
 * max and exp-sum, to merge the parts with shxk_attn_merge(). ml may be
 * NULL when [c0, c1) is the whole context. An empty range gives out = 0,
 * max = -inf, sum = 0.
 */
int shxk_attn_decode(const struct shxk_kv_cache *kv, const int32_t *block_table,
		     const float *q, size_t q_heads, float scale, size_t c0,
		     size_t c1, float *out, float *ml, size_t h0, size_t h1);

/*
 * How decode attention over n sequences (the longest maxlen positions) on
 * threads is cut into items: each sequence's context in *chunks (split-K,
 * merged after), as few as make the items a multiple of the threads, or,
 * where the contexts are too short to cut, its kv heads in *ranges until
 * there are two items a thread. A chunk reads whole position rows (every
 * kv head side by side) in order, faster from memory than a range reads
 * its slice of each; short contexts are read from the caches, where
 * ranges cost no merge.
 */
void shxk_attn_split(const struct shxk_kv_cache *kv, size_t n, size_t maxlen,
		     unsigned int threads, size_t *ranges, size_t *chunks);

/*
 * Item j (< ranges * chunks) of one sequence of len positions cut by
 * shxk_attn_split: context chunk j % chunks for the q heads of kv head
 * range j / chunks, into part j % chunks (parts + part * q_heads *
 * head_dim, ml + part * q_heads * 2) for shxk_attn_merge; with one chunk
 * that part is the output.
 */
int shxk_attn_decode_item(const struct shxk_kv_cache *kv,
			  const int32_t *block_table, const float *q,
			  size_t q_heads, float scale, size_t len,
			  size_t ranges, size_t chunks, size_t j, float *parts,
			  float *ml);

/*
 * Merges nparts split-K results: part p is out_parts + p * q_heads *
 * head_dim and ml_parts + p * q_heads * 2. Writes heads [h0, h1) of out.
 */
int shxk_attn_merge(const float *out_parts, const float *ml_parts,
		    size_t nparts, size_t q_heads, size_t head_dim, float *out,
		    size_t h0, size_t h1);

#ifdef __cplusplus
}
#endif

#endif /* SHXK_H */
