// SPDX-License-Identifier: MIT
/*
 * Checking GEMM, FFN and MOE jobs: params against the weight set, refs
 * against the bytes they must hold. Nothing runs before all of it passed.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_int.h"

static int act_type(uint32_t t, enum shxk_type *out)
{
	if (t > SYSHAX_DT_BF16)
		return -EINVAL;
	*out = (enum shxk_type)t;
	return 0;
}

static float f32_bits(uint32_t b, float dflt)
{
	float f;

	if (!b)
		return dflt;
	memcpy(&f, &b, sizeof(f));
	return f;
}

/* X (refs[0]) of m x k and Y (refs[1]) of m x n. */
static int xy_refs(const struct shxd_xjob *xj, struct shxd_pjob *p,
		   uint32_t xt, uint32_t yt, uint64_t k, uint64_t n)
{
	void *x;
	int ret;

	if (act_type(xt, &p->xt) || act_type(yt, &p->yt))
		return -EINVAL;
	ret = shxd_ref_span(xj, 0, SYSHAX_ACCESS_READ,
		       (uint64_t)p->m * k * shxd_act_size(p->xt), &x);
	if (!ret)
		ret = shxd_ref_span(xj, 1, SYSHAX_ACCESS_WRITE,
			       (uint64_t)p->m * n * shxd_act_size(p->yt),
			       &p->y);
	p->x = x;
	return ret;
}

static int wset_of(uint64_t id, struct shxd_pjob *p)
{
	p->ws = shxd_wreg_get(id);
	return p->ws ? 0 : -ENOENT;
}

static int check_gemm(const struct shxd_xjob *xj, struct shxd_pjob *p)
{
	struct syshax_gemm_params a;
	const struct shxd_tensor *t;
	int ret;

	if (shxd_params(xj, &a, sizeof(a)) || a.flags ||
	    !shxd_zero(a.reserved, sizeof(a.reserved)) || !a.m ||
	    !memchr(a.tensor, '\0', sizeof(a.tensor)) ||
	    xj->job->nr_refs != 2)
		return -EINVAL;
	p->m = a.m;
	ret = wset_of(a.wset, p);
	if (ret)
		return ret;
	t = shxd_wset_find(p->ws, a.tensor);
	if (!t)
		return -ENOENT;
	if (t->nmats != 1)
		return -EINVAL;	/* a vector or a stack of experts */
	p->w = &t->mats[0];
	return xy_refs(xj, p, a.x_type, a.y_type, p->w->k, p->w->n);
}

/* A SwiGLU block's three matrices: present, and shapes that chain. */
static int ffn_dims(const struct shxd_mat *gate, const struct shxd_mat *up,
		    const struct shxd_mat *down)
{
	if (!gate || !up || !down)
		return -ENOENT;
	if (gate->n != up->n || gate->k != up->k || down->k != gate->n ||
	    down->n != gate->k)
		return -EINVAL;
	return 0;
}

/* With NORM: a usable epsilon and the layer's ffn_norm (p->norm). */
static int check_norm(struct shxd_pjob *p, size_t hidden)
{
	if (!(p->flags & SYSHAX_FFN_NORM))
		return 0;
	if (!(p->eps >= 0.0f) || !isfinite(p->eps))
		return -EINVAL;
	return shxd_wset_vec(p->ws, "blk.%u.ffn_norm.weight", p->layer, hidden,
			     &p->norm);
}

static int check_ffn(const struct shxd_xjob *xj, struct shxd_pjob *p)
{
	struct syshax_ffn_params a;
	int ret;

	if (shxd_params(xj, &a, sizeof(a)) || (a.flags & ~SYSHAX_FFN_FLAGS) ||
	    !a.m || !shxd_zero(a.reserved, sizeof(a.reserved)) ||
	    xj->job->nr_refs != 2)
		return -EINVAL;
	p->m = a.m;
	p->layer = a.layer;
	p->flags = a.flags;
	p->eps = f32_bits(a.eps, 1e-6f);
	ret = wset_of(a.wset, p);
	if (ret)
		return ret;
	p->g = shxd_wset_mat(p->ws, "blk.%u.ffn_gate.weight", a.layer);
	p->u = shxd_wset_mat(p->ws, "blk.%u.ffn_up.weight", a.layer);
	p->d = shxd_wset_mat(p->ws, "blk.%u.ffn_down.weight", a.layer);
	ret = ffn_dims(p->g, p->u, p->d);
	if (!ret)
		ret = check_norm(p, p->g->k);
	if (!ret)
		ret = xy_refs(xj, p, a.x_type, a.y_type, p->g->k, p->g->k);
	return ret;
}

static int check_experts(struct shxd_pjob *p, unsigned int nexp,
			 size_t *hidden)
{
	struct shxd_experts ge, ue, de;

	shxd_wset_experts_of(p->ws, p->layer, "gate", &ge);
	shxd_wset_experts_of(p->ws, p->layer, "up", &ue);
	shxd_wset_experts_of(p->ws, p->layer, "down", &de);
	for (unsigned int e = 0; e < nexp; e++) {
		const struct shxd_mat *g = shxd_experts_get(&ge, e);
		const struct shxd_mat *u = shxd_experts_get(&ue, e);
		const struct shxd_mat *d = shxd_experts_get(&de, e);
		int ret = ffn_dims(g, u, d);

		if (ret)
			return ret;
		if (e && g->k != *hidden)
			return -EINVAL;
		*hidden = g->k;
	}
	return 0;
}

static int check_moe(const struct shxd_xjob *xj, struct shxd_pjob *p)
{
	struct syshax_moe_params a;
	unsigned int nexp, want_refs;
	size_t hidden = 0;
	void *ptr;
	int ret;

	if (shxd_params(xj, &a, sizeof(a)) || (a.flags & ~SYSHAX_MOE_FLAGS) ||
	    !a.m || a.route > SYSHAX_MOE_ROUTE_ROUTER || !a.topk ||
	    a.topk > 64 || !shxd_zero(a.reserved, sizeof(a.reserved)))
		return -EINVAL;
	want_refs = a.route == SYSHAX_MOE_ROUTE_IDS ? 4 :
		    a.route == SYSHAX_MOE_ROUTE_LOGITS ? 3 : 2;
	if (xj->job->nr_refs != want_refs)
		return -EINVAL;
	p->m = a.m;
	p->layer = a.layer;
	p->flags = a.flags;
	p->eps = f32_bits(a.eps, 1e-6f);
	p->route = a.route;
	p->topk = a.topk;
	ret = wset_of(a.wset, p);
	if (ret)
		return ret;
	nexp = shxd_wset_experts(p->ws, a.layer);
	p->nexp = nexp;
	if (!nexp)
		return -ENOENT;
	if (a.topk > nexp)
		return -EINVAL;
	ret = check_experts(p, nexp, &hidden);
	if (!ret && (a.flags & SYSHAX_MOE_SHARED)) {
		p->g = shxd_wset_mat(p->ws, "blk.%u.ffn_gate_shexp.weight",
				     a.layer);
		p->u = shxd_wset_mat(p->ws, "blk.%u.ffn_up_shexp.weight",
				     a.layer);
		p->d = shxd_wset_mat(p->ws, "blk.%u.ffn_down_shexp.weight",
				     a.layer);
		ret = ffn_dims(p->g, p->u, p->d);
		if (!ret && p->g->k != hidden)
			ret = -EINVAL;
		/* Its gate, when the set has one, must be a hidden-long
		 * vector (never silently left out). */
		if (!ret) {
			ret = shxd_wset_vec(p->ws,
					    "blk.%u.ffn_gate_inp_shexp.weight",
					    a.layer, hidden, &p->shgate);
			if (ret == -ENOENT)	/* none: added ungated */
				ret = 0;
		}
	}
	if (!ret && a.route == SYSHAX_MOE_ROUTE_ROUTER) {
		p->router = shxd_wset_mat(p->ws, "blk.%u.ffn_gate_inp.weight",
					  a.layer);
		ret = !p->router ? -ENOENT : p->router->n != nexp ||
		      p->router->k != hidden ? -EINVAL : 0;
	}
	if (!ret)
		ret = check_norm(p, hidden);
	if (!ret)
		ret = xy_refs(xj, p, a.x_type, a.y_type, hidden, hidden);
	if (ret)
		return ret;
	if (a.route == SYSHAX_MOE_ROUTE_IDS) {
		size_t n = (size_t)a.m * a.topk;
		void *ids, *wts;

		ret = shxd_ref_span(xj, 2, SYSHAX_ACCESS_READ, n * 4, &ids);
		if (!ret)
			ret = shxd_ref_span(xj, 3, SYSHAX_ACCESS_READ, n * 4, &wts);
		if (ret)
			return ret;
		/* Copied and checked once: the client may write its buffer
		 * while the job waits for its batch. */
		p->ids = malloc(n * sizeof(*p->ids));
		p->wts = malloc(n * sizeof(*p->wts));
		if (!p->ids || !p->wts)
			return -ENOMEM;
		memcpy(p->ids, ids, n * sizeof(*p->ids));
		memcpy(p->wts, wts, n * sizeof(*p->wts));
		for (size_t i = 0; i < n; i++)
			if (p->ids[i] < 0 || (unsigned int)p->ids[i] >= nexp)
				return -EINVAL;
	} else if (a.route == SYSHAX_MOE_ROUTE_LOGITS) {
		ret = shxd_ref_span(xj, 2, SYSHAX_ACCESS_READ,
			       (uint64_t)a.m * nexp * 4, &ptr);
		p->logits = ptr;
	}
	return ret;
}

int shxd_op_check(struct shxd_cpu *cpu, const struct shxd_xjob *xj,
		  struct shxd_pjob *p)
{
	int ret;

	(void)cpu;
	memset(p, 0, sizeof(*p));
	p->op = xj->job->op;
	p->ctx = xj->ctx;
	switch (p->op) {
	case SYSHAX_OP_GEMM:
		ret = check_gemm(xj, p);
		break;
	case SYSHAX_OP_FFN:
		ret = check_ffn(xj, p);
		break;
	case SYSHAX_OP_MOE:
		ret = check_moe(xj, p);
		break;
	default:
		ret = -EINVAL;
	}
	if (ret)
		shxd_pjob_release(p);
	return ret;
}

void shxd_pjob_release(struct shxd_pjob *p)
{
	free(p->ids);
	free(p->wts);
	p->ids = NULL;
	p->wts = NULL;
	shxd_wset_put(p->ws);
	p->ws = NULL;
}

bool shxd_op_batchable(const struct shxd_pjob *a, const struct shxd_pjob *b)
{
	if (a->op != b->op || !shxd_wset_same_tensors(a->ws, b->ws) ||
	    a->flags != b->flags)
		return false;
	switch (a->op) {
	case SYSHAX_OP_GEMM:
		return a->w == b->w;
	case SYSHAX_OP_FFN:
		return a->layer == b->layer && a->eps == b->eps;
	case SYSHAX_OP_MOE:
		return a->layer == b->layer && a->eps == b->eps &&
		       a->topk == b->topk;
	default:
		return false;
	}
}
