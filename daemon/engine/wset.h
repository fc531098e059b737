/* SPDX-License-Identifier: MIT */
/*
 * Weight sets: the tensors a WEIGHTS_LOAD brought in, converted for the
 * kernels and split over the engine's NUMA pools tensor-parallel. A matrix
 * is split by rows (pool p holds rows [b[p], b[p+1]) in its node's memory)
 * except FFN down projections, split by columns at the same bounds as
 * gate/up rows, so each pool runs its slice of a SwiGLU block alone and
 * one sum over the pools ends it. No tensor is held twice; 1-D tensors
 * (norms) are f32 on the first pool's node.
 */
#ifndef SHXD_WSET_H
#define SHXD_WSET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "model/tfile.h"
#include "pool.h"
#include "shxk.h"

struct shxd_model;

/* Split bounds are multiples of this (whole Q8_0/Q4_0 blocks and X8
 * row groups on both sides of an FFN). */
#define SHXD_SPLIT_ALIGN	32

struct shxd_mat {
	enum shxk_type type;
	size_t n, k;			/* the whole matrix: n rows of k */
	bool by_cols;			/* split over k (FFN down) */
	size_t b[SHXD_MAX_POOLS + 1];	/* pool p: rows/cols [b[p], b[p+1]) */
	/* Pool p's piece: rows b[p]..b[p+1] of k values, or (by_cols) all
	 * n rows of b[p+1] - b[p] values. X8 layout for Q8_0/Q4_0. */
	struct shxk_weights part[SHXD_MAX_POOLS];
};

struct shxd_tensor {
	char name[SHXD_TNAME_MAX];	/* GGUF's name (safetensors renamed) */
	uint32_t ndim;
	uint64_t ne[SHXD_TDIMS];
	float *vec;			/* 1-D: ne[0] f32 */
	struct shxd_mat *mats;		/* >= 2-D: ne[2] * ne[3] matrices */
	size_t nmats;
	unsigned int src;		/* its index in the source file */
};

struct shxd_arena {
	void *base;
	size_t size, used;
	int node;
};

/* Which file a set was built from, and how: a second load of the same
 * file (same inode, size and mtime) converted the same way shares it. */
struct shxd_wfile {
	uint64_t dev, ino, size;
	int64_t mtime_ns;
	enum shxk_type quantize;	/* as the build applied it */
};

struct shxd_wset {
	uint64_t id;
	uint32_t owner;			/* ctx_id of the loading context */
	atomic_uint refs;
	unsigned int npools;
	struct shxd_tensor *t;		/* sorted by name */
	size_t nt;
	struct shxd_arena arena[SHXD_MAX_POOLS];
	struct shxd_model *model;	/* MODEL_LOAD's, else NULL (freed
					 * with the set) */
	/* A set that shares base's tensors (t, nt, npools and arena are
	 * base's, base holds them); NULL when it built its own. */
	struct shxd_wset *base;
	struct shxd_wfile file;		/* its source (size 0: a buffer) */
};

/* What to build a set from: a parsed image and how to convert it. */
struct shxd_wsrc {
	const uint8_t *img;
	size_t len;
	const struct shxd_tfile *tf;
	/* F32/F16/BF16 matrices become this (SHXK_F32: keep their type);
	 * GGUF Q8_0/Q4_0 stay as they are. */
	enum shxk_type quantize;
	bool rename_hf;			/* map Hugging Face names to GGUF's */
};

/*
 * Builds a set over the pool's nodes. Returns 0 or -EINVAL (a tensor the
 * kernels cannot run: err names it and its type), -ENOMEM.
 */
int shxd_wset_build(const struct shxd_wsrc *src, const struct shxd_pool *pool,
		    struct shxd_wset **out, char *err, size_t errlen);
void shxd_wset_put(struct shxd_wset *ws);
/* A new set (own id, owner and model) on the tensors of root, which the
 * caller's reference to passes to it. 0 or -ENOMEM (root put). */
int shxd_wset_share(struct shxd_wset *root, struct shxd_wset **out);
/* Whether a and b run on the same tensors (one of them shares the
 * other's, or both a third set's): the same file, loaded twice. */
bool shxd_wset_same_tensors(const struct shxd_wset *a,
			    const struct shxd_wset *b);

const struct shxd_tensor *shxd_wset_find(const struct shxd_wset *ws,
					 const char *name);
/* The matrix named fmt (with %u for layer) as a 2-D tensor, or NULL. */
const struct shxd_mat *shxd_wset_mat(const struct shxd_wset *ws,
				     const char *fmt, unsigned int layer);
/* The 1-D tensor named fmt (with %u for layer) into *vec: 0, -ENOENT when
 * the set has none, -EINVAL when it is not a vector of n values. */
int shxd_wset_vec(const struct shxd_wset *ws, const char *fmt,
		  unsigned int layer, size_t n, const float **vec);
/* Expert e of layer's stacked tensor kind ("gate", "up", "down"): slice e
 * of blk.L.ffn_<kind>_exps.weight, else blk.L.ffn_<kind>_exps.<e>.weight. */
const struct shxd_mat *shxd_wset_expert(const struct shxd_wset *ws,
					unsigned int layer, const char *kind,
					unsigned int e);
/*
 * The same for many experts of one layer and kind: the stacked tensor is
 * looked up once (shxd_wset_experts_of), each expert is then an index
 * (shxd_experts_get), where a lookup by name cost a formatted name and a
 * search per expert and kind, each layer of each step of an MoE model.
 */
struct shxd_experts {
	const struct shxd_wset *ws;
	unsigned int layer;
	const char *kind;
	const struct shxd_tensor *stacked;	/* NULL: one tensor an expert */
};
void shxd_wset_experts_of(const struct shxd_wset *ws, unsigned int layer,
			  const char *kind, struct shxd_experts *x);
const struct shxd_mat *shxd_experts_get(const struct shxd_experts *x,
					unsigned int e);
/* Experts of the layer (0 when it has none). */
unsigned int shxd_wset_experts(const struct shxd_wset *ws, unsigned int layer);

/* Bytes of weights in each pool's node memory. */
uint64_t shxd_wset_pool_bytes(const struct shxd_wset *ws, unsigned int pool);

/*
 * Prints per tensor the bytes on each pool's node and, per pool, where the
 * kernel really put the pages (move_pages): "pages on node N: count".
 */
void shxd_wset_print_placement(const struct shxd_wset *ws,
			       const struct shxd_pool *pool, FILE *f);

/* ---- the registry: ids that jobs name ---- */

/* Adds ws (the registry keeps the caller's reference); its id is set.
 * -ENOSPC when max sets are loaded. */
int shxd_wreg_add(struct shxd_wset *ws, unsigned int max);
/* A reference to the set with this id, or NULL. */
struct shxd_wset *shxd_wreg_get(uint64_t id);
/* Drops the registry's reference: -ENOENT (no such id), -EPERM (ctx is
 * not the owner). */
int shxd_wreg_remove(uint64_t id, uint32_t ctx);
/* A reference to the tensors' owner of a registered set built from
 * this file this way, or NULL. */
struct shxd_wset *shxd_wreg_find_file(const struct shxd_wfile *f);
/* Calls fn on each set (under the registry lock; fn must not block);
 * first is false for a set whose tensors an earlier one in the walk
 * also uses, so that their bytes are counted once. */
void shxd_wreg_each(void (*fn)(const struct shxd_wset *ws, bool first,
			       void *arg),
		    void *arg);
/* Drops every set (daemon exit). */
void shxd_wreg_clear(void);

#endif /* SHXD_WSET_H */
