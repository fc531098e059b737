/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Internals shared by the generic kernels and the ISA variants: the
 * prepared-activation block, the GEMM argument bundle and the dispatch
 * table each variant fills.
 */
#ifndef SHXK_INTERNAL_H
#define SHXK_INTERNAL_H

#include <math.h>
#include <string.h>

#include "shxk.h"

#define SHXK_X8 8	/* rows per SHXK_LAYOUT_X8 group */

/*
 * A prepared activation row for the integer paths (Q8_0/Q4_0 weights):
 * qs[k] int8, then d[k / 32] f32, then s[k / 32] int32, x[i] ~= d[i / 32]
 * * qs[i]. Unlike ggml's block_q8_0 the scale stays f32 (one rounding
 * less); the quants are contiguous so SIMD loads span blocks; s = sum of
 * a block's qs lets unsigned-by-signed dot products (vpdpbusd) fold the
 * Q4_0 "- 8" and Q8_0 "+ 128" bias in once per block.
 */
#define SHXK_ACT_Q8_BLOCK (SHXK_QK + 8)	/* bytes per block of 32 */

static inline float *shxk_act_d(const uint8_t *row, size_t k)
{
	return (float *)(uintptr_t)(row + k);
}

static inline int32_t *shxk_act_s(const uint8_t *row, size_t k)
{
	return (int32_t *)(uintptr_t)(row + k + k / SHXK_QK * 4);
}

/*
 * A prepared activation row for BF16 weights: k f32, then the same k
 * values as bf16 (padded to 4 bytes). Both are x rounded to bf16, so the
 * f32 kernels and the bf16 dot-product ones (vdpbf16ps) multiply the same
 * operands; see docs/kernels.md for the accuracy this costs.
 */
static inline uint16_t *shxk_act_bf16(const uint8_t *row, size_t k)
{
	return (uint16_t *)(uintptr_t)(row + k * sizeof(float));
}

/* One GEMM call as a kernel sees it, arguments already checked. */
struct shxk_gemm_args {
	const uint8_t *w;	/* row 0 (or group 0) of the weights */
	size_t wstride;		/* bytes per row, or per 8-row group for X8 */
	const uint8_t *act;	/* prepared activations */
	size_t astride;		/* bytes per prepared row */
	size_t m, k;
	void *y;
	enum shxk_type yt;
	size_t ldy;
	size_t n0, n1;
};

typedef void (*shxk_gemm_fn)(const struct shxk_gemm_args *a);
/* Context positions per softmax step of decode attention. */
#define SHXK_ATTN_TILE 16
/* Query heads of one pass over the context (and one attn_tile call). */
#define SHXK_ATTN_HEADS 64
/*
 * One softmax step of decode attention for ng groups of g query heads,
 * ng * g <= SHXK_ATTN_HEADS: q and o are ng * g rows of n floats, group i
 * shares one kv head, whose K and V rows (type t, n values) for nr <=
 * SHXK_ATTN_TILE positions are k[r] and v[r] plus i row sizes (the kv
 * heads of a position lie side by side). Scores are q . k * scale; the
 * running max mx[h] and exp-sum l[h] are updated and o[h] rescaled to the
 * new max before the tile's weighted V rows are added; meanwhile the call
 * may prefetch the lines nx holds (below).
 */
struct shxk_attn_next;
typedef void (*shxk_attn_tile_fn)(enum shxk_type t, const float *q, size_t g,
				  size_t ng, float scale,
				  const void *const *k, const void *const *v,
				  size_t nr, size_t n, float *o, float *mx,
				  float *l, struct shxk_attn_next *nx);

/*
 * The next tile's K and V lines that an attn_tile call prefetches, a step
 * at a time, while it computes: k[r] + o and v[r] + o for o < len, from
 * the cursor (r, o) on, left steps. The hardware prefetcher does not
 * follow block tables; a burst of loads before each tile stalled the core
 * on them instead of overlapping them with the compute. What a call
 * leaves is loaded after it (kernels/attn.c). A hook steps a local copy
 * and writes it back at the end: vector stores may alias anything, so
 * through the caller's pointer each step loaded and stored the fields
 * again (8 to 12 % of a tile of 8 heads, AMD EPYC Zen 5).
 */
struct shxk_attn_next {
	const void *const *k, *const *v;
	size_t len, r, o, left;
};

/* Past the cursor's line, one step fewer left. */
static inline void shxk_attn_next_advance(struct shxk_attn_next *nx)
{
	nx->left--;
	nx->o += 64;
	if (nx->o >= nx->len) {
		nx->o = 0;
		nx->r++;
	}
}

/*
 * Group i of ng's part of the share of prefetches a call got, added to
 * what the groups before left: spread as the pass spreads them by call.
 */
static inline void shxk_attn_next_part(struct shxk_attn_next *nx, size_t share,
				       size_t i, size_t ng)
{
	nx->left += share * (i + 1) / ng - share * i / ng;
}

static inline void shxk_attn_next_step(struct shxk_attn_next *nx)
{
	if (!nx->left)
		return;
	__builtin_prefetch((const char *)nx->k[nx->r] + nx->o);
	__builtin_prefetch((const char *)nx->v[nx->r] + nx->o);
	shxk_attn_next_advance(nx);
}

/*
 * One head's softmax step over a tile's nr scores s (already scaled): s
 * becomes the tile's weights, the running max mx and exp-sum l take the
 * tile in; returns the factor that rescales what was summed before.
 */
static inline float shxk_attn_softmax(float *s, size_t nr, float *mx, float *l)
{
	float top = *mx, corr = 1.0f, sum = 0.0f;

	for (size_t r = 0; r < nr; r++)
		top = fmaxf(top, s[r]);
	/* New max: rescale what was summed under the old one. */
	if (top > *mx) {
		corr = expf(*mx - top);
		*mx = top;
	}
	for (size_t r = 0; r < nr; r++) {
		s[r] = expf(s[r] - top);
		sum += s[r];
	}
	*l = *l * corr + sum;
	return corr;
}

typedef void (*shxk_row_fn)(const float *x, void *y, size_t k);
/* Quantizes nb blocks of x into an activation row's qs, d and s. */
typedef void (*shxk_act_fn)(const float *x, int8_t *qs, float *d,
			    int32_t *s, size_t nb);

struct shxk_ops {
	const char *name;
	shxk_row_fn quant[SHXK_NTYPES];	/* f32 row -> type row */
	shxk_act_fn act_q8;
	shxk_gemm_fn gemm[SHXK_NTYPES];	/* SHXK_LAYOUT_ROWS */
	shxk_gemm_fn gemm_x8[SHXK_NTYPES]; /* SHXK_LAYOUT_X8 (Q8_0, Q4_0) */
	shxk_attn_tile_fn attn_tile;
	/* y[j] = silu(g[j]) * u[j], j < n */
	void (*swiglu)(const float *g, const float *u, float *y, size_t n);
	/* y[j] = x[j] for an f16 or bf16 row x of n values (dequantize) */
	void (*widen)(enum shxk_type t, const void *x, float *y, size_t n);
};

extern const struct shxk_ops shxk_ops_generic;
extern const struct shxk_ops shxk_ops_avx2, shxk_ops_avx512;	/* x86 */
/* f16 / bf16 rows by F16C and AVX2, every x86 table's (avx2.c). */
void shxk_quant_f16_avx2(const float *x, void *y, size_t k);
void shxk_quant_bf16_avx2(const float *x, void *y, size_t k);
extern const struct shxk_ops shxk_ops_avx512bf16;
/* BF16 weights by vdpbf16ps (kernels/arch/x86/avx512bf16.c). */
void shxk_gemm_bf16_avx512bf16(const struct shxk_gemm_args *a);
/* Q8_0, Q4_0 and BF16 weights on AMX tiles (kernels/arch/x86/amx.c). */
extern const struct shxk_ops shxk_ops_amx;
void shxk_gemm_bf16_amx(const struct shxk_gemm_args *a);
void shxk_gemm_x8_q8_0_amx(const struct shxk_gemm_args *a);
void shxk_gemm_x8_q4_0_amx(const struct shxk_gemm_args *a);
/*
 * avx512.c's X8 GEMM (Q4_0 if q4, else Q8_0), read as several weight
 * streams: the amx table's for fewer rows than its tiles take.
 */
void shxk_gemm_x8_avx512(const struct shxk_gemm_args *a, int q4);
extern const struct shxk_ops shxk_ops_neon, shxk_ops_dotprod;	/* Arm */
extern const struct shxk_ops shxk_ops_i8mm2, shxk_ops_i8mm4, shxk_ops_sve;

/* The table shxk_init() chose (generic before). */
const struct shxk_ops *shxk_ops_current(void);

/*
 * Per arch (kernels/arch/<arch>/cpu-feats.c, built without ISA flags):
 * the variant named want (NULL: the best this CPU runs). Returns NULL
 * with *err = -EINVAL (unknown name) or -ENOTSUP (CPU or build lacks it).
 */
const struct shxk_ops *shxk_cpu_select(const char *want, int *err);

/* Per arch, once from shxk_init(): the CPU's name and AMX (x86: also
 * requests the tile permission). */
void shxk_cpu_probe(struct shxk_cpu_info *ci);

/*
 * Row r's nq quants of the SHXK_LAYOUT_X8 block column col (gemm.c's
 * shxk_repack writes it: the 8 rows' f16 scales, then 8-byte chunks of
 * rows 0..7 in turn) into qs.
 */
static inline void shxk_x8_get_qs(const uint8_t *col, size_t r, uint8_t *qs,
				  size_t nq)
{
	for (size_t c = 0; c < nq / 8; c++)
		memcpy(qs + c * 8, col + 2 * SHXK_X8 + (c * SHXK_X8 + r) * 8, 8);
}

/* Stores v as element j of row i of the GEMM output. */
static inline void shxk_store(const struct shxk_gemm_args *a, size_t i,
			      size_t j, float v)
{
	size_t o = i * a->ldy + j;

	switch (a->yt) {
	case SHXK_F16:
		((uint16_t *)a->y)[o] = shxk_fp32_to_fp16(v);
		break;
	case SHXK_BF16:
		((uint16_t *)a->y)[o] = shxk_fp32_to_bf16(v);
		break;
	default:
		((float *)a->y)[o] = v;
		break;
	}
}

/* Generic kernels the variants fall back to. */
void shxk_quant_f16_generic(const float *x, void *y, size_t k);
void shxk_quant_bf16_generic(const float *x, void *y, size_t k);
void shxk_quant_q8_0_generic(const float *x, void *y, size_t k);
void shxk_quant_q4_0_generic(const float *x, void *y, size_t k);
void shxk_act_q8_generic(const float *x, int8_t *qs, float *d, int32_t *s,
			 size_t nb);

void shxk_attn_tile_generic(enum shxk_type t, const float *q, size_t g,
			    size_t ng, float scale, const void *const *k,
			    const void *const *v, size_t nr, size_t n,
			    float *o, float *mx, float *l,
			    struct shxk_attn_next *nx);

void shxk_swiglu_generic(const float *g, const float *u, float *y, size_t n);
void shxk_widen_generic(enum shxk_type t, const void *x, float *y, size_t n);

void shxk_gemm_f32_generic(const struct shxk_gemm_args *a);
void shxk_gemm_f16_generic(const struct shxk_gemm_args *a);
void shxk_gemm_bf16_generic(const struct shxk_gemm_args *a);
void shxk_gemm_q8_0_generic(const struct shxk_gemm_args *a);
void shxk_gemm_q4_0_generic(const struct shxk_gemm_args *a);
void shxk_gemm_x8_q8_0_generic(const struct shxk_gemm_args *a);
void shxk_gemm_x8_q4_0_generic(const struct shxk_gemm_args *a);

#endif /* SHXK_INTERNAL_H */
