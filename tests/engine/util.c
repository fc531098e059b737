// SPDX-License-Identifier: MIT
/* Helpers the engine cases share: contexts, jobs, types, checks, weights. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "t.h"
#include "wfile.h"

struct tc g_c;
char g_model_dir[512];
char g_out_dir[512];

uint64_t t_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ---- contexts and jobs ---- */

int tc_open(struct tc *c, size_t size)
{
	int ret;

	memset(c, 0, sizeof(*c));
	ret = syshax_open(&c->sh, NULL);
	if (ret)
		return ret;
	ret = syshax_buf_alloc(c->sh, size, -1, SYSHAX_BUF_ALLOW_SMALL |
			       SYSHAX_BUF_ALLOW_REMOTE, &c->buf);
	if (!ret)
		ret = syshax_buf_map(c->sh, &c->buf);
	if (ret) {
		syshax_close(c->sh);
		c->sh = NULL;
	}
	return ret;
}

void tc_close(struct tc *c)
{
	if (!c->sh)
		return;
	syshax_buf_free(c->sh, &c->buf);
	syshax_close(c->sh);
	c->sh = NULL;
}

void *tc_alloc(struct tc *c, size_t bytes)
{
	size_t at = (c->used + 63) & ~(size_t)63;
	void *p;

	if (at > c->buf.size || bytes > c->buf.size - at) {
		CU_FAIL("test buffer full");
		return NULL;
	}
	c->used = at + bytes;
	p = (uint8_t *)c->buf.addr + at;
	memset(p, 0, bytes);
	return p;
}

void tc_reset(struct tc *c)
{
	c->used = 0;
}

uint64_t tc_off(const struct tc *c, const void *p)
{
	return (uint64_t)((const uint8_t *)p - (const uint8_t *)c->buf.addr);
}

/* Waits for at least one completion and files each under its user_data
 * (a job's index); *done counts them. -EPROTO for an unknown or repeated
 * one. */
static int reap(struct tc *c, unsigned int n, struct syshax_completion *cpl,
		unsigned char *seen, unsigned int *done, int64_t timeout)
{
	struct syshax_completion tmp[64];
	int ret = syshax_wait(c->sh, tmp, 1, 64, timeout);

	for (int k = 0; k < ret; k++) {
		uint64_t u = tmp[k].user_data;

		if (u >= n || seen[u])
			return -EPROTO;
		seen[u] = 1;
		cpl[u] = tmp[k];
		(*done)++;
	}
	return ret < 0 ? ret : 0;
}

int tc_run(struct tc *c, struct syshax_job *jobs, unsigned int n,
	   struct syshax_completion *cpl)
{
	unsigned int done = 0, sent = 0, i;
	unsigned char *seen = calloc(n ? n : 1, 1);
	int ret = 0;

	if (!seen)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		jobs[i].user_data = i;
	while (!ret && sent < n) {
		ret = syshax_submit(c->sh, jobs + sent, n - sent);
		if (ret >= 0) {
			sent += (unsigned int)ret;
			ret = 0;
		} else if (ret == -EAGAIN && done < sent) {
			/* The queue is full: reap some first. */
			ret = reap(c, n, cpl, seen, &done, 30 * T_SEC);
		}
	}
	while (!ret && done < sent)
		ret = reap(c, n, cpl, seen, &done, 60 * T_SEC);
	free(seen);
	if (ret) {
		printf("\n  tc_run: %u jobs, %u sent, %u done: %s\n", n, sent,
		       done, syshax_strerror(ret));
		CU_FAIL("submit/wait failed");
	}
	return ret;
}

int tc_run1(struct tc *c, struct syshax_job *job, uint64_t *result)
{
	struct syshax_completion cpl;

	memset(&cpl, 0, sizeof(cpl));
	if (tc_run(c, job, 1, &cpl))
		return -EPROTO;
	if (result)
		*result = cpl.result;
	return cpl.status;
}

void tj_init(struct syshax_job *j, uint32_t op, const void *params,
	     size_t size)
{
	syshax_job_init(j, op, 0);
	if (params && size)
		CU_ASSERT_EQUAL_FATAL(syshax_job_params(j, params, size), 0);
}

void tj_ref(struct syshax_job *j, const struct tc *c, const void *p,
	    uint64_t len, uint32_t access)
{
	CU_ASSERT_EQUAL_FATAL(syshax_job_add_ref(j, &c->buf, tc_off(c, p), len,
						 access), 0);
}

/* ---- random ---- */

void tr_seed(struct trng *r, uint64_t seed)
{
	r->s = seed * 0x9e3779b97f4a7c15ULL + 0x2545f4914f6cdd1dULL;
	if (!r->s)
		r->s = 1;
}

static uint64_t tr_next(struct trng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545f4914f6cdd1dULL;
}

uint32_t tr_u32(struct trng *r)
{
	return (uint32_t)(tr_next(r) >> 32);
}

double tr_unif(struct trng *r)
{
	return (double)(tr_next(r) >> 11) * 0x1p-52 - 1.0;
}

/* ---- element types (written here, independent of the kernels) ---- */

uint16_t t_f32_to_f16(float f)
{
	uint32_t x, mant, sign, h, rem, half;
	int exp;

	memcpy(&x, &f, sizeof(x));
	sign = (x >> 16) & 0x8000;
	mant = x & 0x7fffff;
	if (((x >> 23) & 0xff) == 0xff)
		return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 : 0));
	exp = (int)((x >> 23) & 0xff) - 127 + 15;
	if (exp >= 31)
		return (uint16_t)(sign | 0x7c00);
	if (exp <= 0) {
		unsigned int shift = (unsigned int)(14 - exp);

		if (exp < -10)
			return (uint16_t)sign;
		mant |= 0x800000;
		h = mant >> shift;
		rem = mant & ((1u << shift) - 1);
		half = 1u << (shift - 1);
		if (rem > half || (rem == half && (h & 1)))
			h++;
		return (uint16_t)(sign | h);
	}
	h = ((uint32_t)exp << 10) | (mant >> 13);
	rem = mant & 0x1fff;
	if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
		h++;	/* a carry into the exponent is right (up to inf) */
	return (uint16_t)(sign | h);
}

double t_f16_to_f64(uint16_t h)
{
	int e = (h >> 10) & 0x1f, m = h & 0x3ff;
	double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) :
		   ldexp(m | 0x400, e - 25);

	return h & 0x8000 ? -v : v;
}

uint16_t t_f32_to_bf16(float f)
{
	uint32_t x;

	memcpy(&x, &f, sizeof(x));
	if ((x & 0x7fffffff) > 0x7f800000)
		return (uint16_t)((x >> 16) | 0x40);
	return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

double t_bf16_to_f64(uint16_t h)
{
	uint32_t x = (uint32_t)h << 16;
	float f;

	memcpy(&f, &x, sizeof(f));
	return f;
}

size_t t_act_size(int dt)
{
	return dt == SYSHAX_DT_F32 ? 4 : 2;
}

const char *t_dt_name(int dt)
{
	static const char *const n[] = { "f32", "f16", "bf16", "q8_0", "q4_0" };

	return dt >= 0 && dt < 5 ? n[dt] : "?";
}

void t_act_store(int dt, const double *v, void *dst, size_t n, double *dec)
{
	for (size_t i = 0; i < n; i++) {
		float f = (float)v[i];
		double d;

		if (dt == SYSHAX_DT_F32) {
			((float *)dst)[i] = f;
			d = f;
		} else if (dt == SYSHAX_DT_F16) {
			uint16_t h = t_f32_to_f16(f);

			((uint16_t *)dst)[i] = h;
			d = t_f16_to_f64(h);
		} else {
			uint16_t h = t_f32_to_bf16(f);

			((uint16_t *)dst)[i] = h;
			d = t_bf16_to_f64(h);
		}
		if (dec)
			dec[i] = d;
	}
}

void t_act_load(int dt, const void *src, double *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = dt == SYSHAX_DT_F32 ? ((const float *)src)[i] :
			 dt == SYSHAX_DT_F16 ?
			 t_f16_to_f64(((const uint16_t *)src)[i]) :
			 t_bf16_to_f64(((const uint16_t *)src)[i]);
}

void t_act_rand(struct trng *r, int dt, double amp, void *dst, size_t n,
		double *dec)
{
	double *v = malloc((n ? n : 1) * sizeof(*v));

	CU_ASSERT_PTR_NOT_NULL_FATAL(v);
	for (size_t i = 0; i < n; i++)
		v[i] = amp * tr_unif(r);
	t_act_store(dt, v, dst, n, dec);
	free(v);
}

double t_out_tol(int yt)
{
	return yt == SYSHAX_DT_F16 ? 0x1p-11 : yt == SYSHAX_DT_BF16 ? 0x1p-8 :
	       0.0;
}

static _Thread_local unsigned long g_tally_rows, g_tally_over;

void t_tally_begin(void)
{
	g_tally_rows = g_tally_over = 0;
}

void t_tally_end(const char *what)
{
	bool ok = g_tally_over * 10 <= g_tally_rows;

	if (!ok || getenv("T_ENGINE_VERBOSE"))
		printf("\n  %s: %lu of %lu rows beyond the tight tolerance%s",
		       what, g_tally_over, g_tally_rows,
		       ok ? "" : " (more than 10 %)\n");
	CU_ASSERT(ok);
}

static double check(const char *what, int yt, const void *y,
		    const double *ref, size_t rows, size_t cols, double tol,
		    double loose)
{
	double worst = 0.0, lim = loose + t_out_tol(yt);
	double tight = tol + t_out_tol(yt);
	double *got = malloc((cols ? cols : 1) * sizeof(*got));
	size_t bad_row = (size_t)-1;
	bool ok = true;

	CU_ASSERT_PTR_NOT_NULL_FATAL(got);
	for (size_t r = 0; r < rows; r++) {
		double e2 = 0.0, n2 = 0.0, rel;

		t_act_load(yt, (const uint8_t *)y + r * cols * t_act_size(yt),
			   got, cols);
		for (size_t c = 0; c < cols; c++) {
			double d = got[c] - ref[r * cols + c];

			e2 += d * d;
			n2 += ref[r * cols + c] * ref[r * cols + c];
		}
		if (n2 == 0.0)
			rel = e2 == 0.0 ? 0.0 : INFINITY;
		else
			rel = sqrt(e2 / n2);
		g_tally_rows++;
		if (!(rel <= tight))
			g_tally_over++;
		if (!(rel <= lim)) {
			ok = false;
			if (bad_row == (size_t)-1)
				bad_row = r;
		}
		if (!(rel <= worst))
			worst = rel;
	}
	if (!ok) {
		size_t r = bad_row;

		t_act_load(yt, (const uint8_t *)y + r * cols * t_act_size(yt),
			   got, cols);
		printf("\n  %s: row %zu of %zu off by %.3g (limit %.3g): got "
		       "%.6g %.6g %.6g, want %.6g %.6g %.6g\n", what, r, rows,
		       worst, lim, got[0], cols > 1 ? got[1] : 0.0,
		       cols > 2 ? got[2] : 0.0, ref[r * cols],
		       cols > 1 ? ref[r * cols + 1] : 0.0,
		       cols > 2 ? ref[r * cols + 2] : 0.0);
	}
	if (getenv("T_ENGINE_VERBOSE"))
		printf("\n  %s: worst %.3g (limit %.3g)", what, worst, lim);
	CU_ASSERT(ok);
	free(got);
	return worst;
}

double t_check(const char *what, int yt, const void *y, const double *ref,
	       size_t rows, size_t cols, double tol)
{
	return check(what, yt, y, ref, rows, cols, tol, tol);
}

double t_check_q(const char *what, int yt, const void *y, const double *ref,
		 size_t rows, size_t cols, double tol, double loose)
{
	return check(what, yt, y, ref, rows, cols, tol, loose);
}

void t_sentinel(void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		((uint8_t *)p)[i] = (uint8_t)(0xa5 ^ (i * 131) ^ (i >> 8));
}

bool t_sentinel_ok(const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (((const uint8_t *)p)[i] != (uint8_t)(0xa5 ^ (i * 131) ^
							 (i >> 8)))
			return false;
	return true;
}

/* ---- weights ---- */

uint64_t tw_elems(const struct tw *w)
{
	return w->ne[0] * w->ne[1] * w->ne[2] * w->ne[3];
}

static size_t row_bytes(int dt, uint64_t k)
{
	switch (dt) {
	case SYSHAX_DT_F32:
		return k * 4;
	case SYSHAX_DT_F16:
	case SYSHAX_DT_BF16:
		return k * 2;
	case SYSHAX_DT_Q8_0:
		return k / 32 * 34;
	default:
		return k / 32 * 18;
	}
}

void tw_rand(struct tw *w, struct trng *r, const char *name, int dt,
	     unsigned int ndim, uint64_t ne0, uint64_t ne1, uint64_t ne2,
	     double scale)
{
	uint64_t n, rows;
	uint8_t *p;

	memset(w, 0, sizeof(*w));
	snprintf(w->name, sizeof(w->name), "%s", name);
	w->dt = w->kept = dt;
	w->ndim = ndim;
	w->ne[0] = ne0;
	w->ne[1] = ndim > 1 ? ne1 : 1;
	w->ne[2] = ndim > 2 ? ne2 : 1;
	w->ne[3] = 1;
	n = tw_elems(w);
	rows = n / ne0;
	w->size = rows * row_bytes(dt, ne0);
	w->data = calloc(1, w->size);
	w->ref = calloc(n, sizeof(double));
	CU_ASSERT_PTR_NOT_NULL_FATAL(w->data);
	CU_ASSERT_PTR_NOT_NULL_FATAL(w->ref);
	p = w->data;
	if (dt == SYSHAX_DT_Q8_0 || dt == SYSHAX_DT_Q4_0) {
		bool q8 = dt == SYSHAX_DT_Q8_0;
		size_t bs = q8 ? 34 : 18;

		for (uint64_t b = 0; b < n / 32; b++, p += bs) {
			/* A scale in [0.5, 1) of the largest step. */
			double want = scale * (0.75 + 0.25 * tr_unif(r)) /
				      (q8 ? 127.0 : 8.0);
			uint16_t dh = t_f32_to_f16((float)want);
			double d = t_f16_to_f64(dh);

			memcpy(p, &dh, 2);
			for (int i = 0; i < 32; i++) {
				int q;

				if (q8) {
					q = (int)(tr_u32(r) % 255) - 127;
					p[2 + i] = (uint8_t)(int8_t)q;
				} else {
					q = (int)(tr_u32(r) % 16);
					if (i < 16)
						p[2 + i] |= (uint8_t)q;
					else
						p[2 + i - 16] |= (uint8_t)(q << 4);
					q -= 8;
				}
				w->ref[b * 32 + (uint64_t)i] = d * q;
			}
		}
		return;
	}
	for (uint64_t i = 0; i < n; i++) {
		double v = scale * tr_unif(r);

		if (dt == SYSHAX_DT_F32) {
			float f = (float)v;

			memcpy(p + i * 4, &f, 4);
			w->ref[i] = f;
		} else {
			uint16_t h = dt == SYSHAX_DT_F16 ?
				     t_f32_to_f16((float)v) :
				     t_f32_to_bf16((float)v);

			memcpy(p + i * 2, &h, 2);
			w->ref[i] = dt == SYSHAX_DT_F16 ? t_f16_to_f64(h) :
				    t_bf16_to_f64(h);
		}
	}
}

void tw_vec(struct tw *w, struct trng *r, const char *name, uint64_t n,
	    double lo, double hi)
{
	tw_rand(w, r, name, SYSHAX_DT_F32, 1, n, 1, 1, 1.0);
	for (uint64_t i = 0; i < n; i++) {
		float f = (float)(lo + (hi - lo) * (tr_unif(r) + 1.0) / 2.0);

		memcpy((uint8_t *)w->data + i * 4, &f, 4);
		w->ref[i] = f;
	}
}

void tw_free(struct tw *w)
{
	free(w->data);
	free(w->ref);
	w->data = NULL;
	w->ref = NULL;
}

void tw_expect_quant(struct tw *w, int quant)
{
	uint64_t n = tw_elems(w);

	w->kept = quant == SYSHAX_QUANT_Q8_0 ? SYSHAX_DT_Q8_0 : SYSHAX_DT_Q4_0;
	/* ggml's quantize_row_q8_0 / q4_0 (reference versions). */
	for (uint64_t b = 0; b < n / 32; b++) {
		double *x = w->ref + b * 32;
		float xf[32], amax = 0.0f, max = 0.0f, d, id;

		for (int i = 0; i < 32; i++) {
			xf[i] = (float)x[i];
			if (amax < fabsf(xf[i])) {
				amax = fabsf(xf[i]);
				max = xf[i];
			}
		}
		if (w->kept == SYSHAX_DT_Q8_0) {
			d = amax / 127.0f;
			id = d != 0.0f ? 1.0f / d : 0.0f;
			for (int i = 0; i < 32; i++)
				x[i] = t_f16_to_f64(t_f32_to_f16(d)) *
				       roundf(xf[i] * id);
		} else {
			d = max / -8.0f;
			id = d != 0.0f ? 1.0f / d : 0.0f;
			for (int i = 0; i < 32; i++) {
				int q = (int)(int8_t)(xf[i] * id + 8.5f);

				q = q < 15 ? q : 15;
				x[i] = t_f16_to_f64(t_f32_to_f16(d)) * (q - 8);
			}
		}
	}
}

static uint32_t ggml_type(int dt)
{
	static const uint32_t t[] = { 0, 1, 30, 8, 2 };

	return t[dt];
}

static const char *st_dtype(int dt)
{
	return dt == SYSHAX_DT_F32 ? "F32" : dt == SYSHAX_DT_F16 ? "F16" :
	       "BF16";
}

const char *t_path(const char *file)
{
	static _Thread_local char p[1024];

	snprintf(p, sizeof(p), "%s/%s", g_model_dir, file);
	return p;
}

static void to_wtensor(const struct tw *w, const char *name,
		       struct wf_wtensor *t)
{
	memset(t, 0, sizeof(*t));
	t->name = name ? name : w->name;
	t->ggml_type = ggml_type(w->dt);
	t->dtype = st_dtype(w->dt);
	t->ndim = w->ndim;
	memcpy(t->ne, w->ne, sizeof(t->ne));
	t->data = w->data;
	t->size = w->size;
}

int tw_write_gguf_kv(const char *file, const struct wf_wkv *kv, size_t nkv,
		     const struct tw *w, size_t n)
{
	struct wf_wtensor *t = calloc(n, sizeof(*t));
	int ret;

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		to_wtensor(&w[i], NULL, &t[i]);
	ret = wf_gguf_write(t_path(file), kv, nkv, t, n);
	free(t);
	return ret;
}

int tw_write_gguf(const char *file, const struct tw *w, size_t n)
{
	static const struct wf_wkv kv[] = {
		WF_KV_STR("general.architecture", "llama"),
		WF_KV_U32("general.alignment", 32),
	};

	return tw_write_gguf_kv(file, kv, T_ARRAY_SIZE(kv), w, n);
}

int tw_write_st(const char *file, const struct tw *w,
		const char *const *names, size_t n)
{
	struct wf_wtensor *t = calloc(n, sizeof(*t));
	int ret;

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		to_wtensor(&w[i], names ? names[i] : NULL, &t[i]);
	ret = wf_st_write(t_path(file), t, n);
	free(t);
	return ret;
}

/* ---- weight-set ops ---- */

int t_load_file(struct tc *c, const char *path, uint32_t quant, uint64_t *id)
{
	struct syshax_weights_load_params p = {
		.source = SYSHAX_WLOAD_FILE, .quantize = quant,
	};
	struct syshax_job job;
	uint64_t res = 0;
	int ret;

	snprintf(p.path, sizeof(p.path), "%s", path);
	tj_init(&job, SYSHAX_OP_WEIGHTS_LOAD, &p, sizeof(p));
	ret = tc_run1(c, &job, &res);
	if (id)
		*id = ret ? 0 : res;
	return ret;
}

int t_load_buffer(struct tc *c, const struct tw *w, size_t n, uint32_t quant,
		  uint64_t *id)
{
	struct syshax_weights_load_params p = {
		.source = SYSHAX_WLOAD_BUFFER, .quantize = quant,
	};
	size_t hdr = sizeof(struct syshax_wdesc) +
		     n * sizeof(struct syshax_wdesc_tensor), total = hdr, at;
	struct syshax_wdesc *d;
	struct syshax_job job;
	uint64_t res = 0;
	int ret;

	for (size_t i = 0; i < n; i++)
		total = (total + 63) / 64 * 64 + w[i].size;
	d = tc_alloc(c, total);
	if (!d)
		return -ENOMEM;
	d->magic = SYSHAX_WDESC_MAGIC;
	d->version = SYSHAX_WDESC_VERSION;
	d->nr_tensors = (uint32_t)n;
	at = hdr;
	for (size_t i = 0; i < n; i++) {
		struct syshax_wdesc_tensor *t = &d->tensors[i];

		at = (at + 63) / 64 * 64;
		snprintf(t->name, sizeof(t->name), "%s", w[i].name);
		t->type = (uint32_t)w[i].dt;
		t->ndim = w[i].ndim;
		memcpy(t->ne, w[i].ne, sizeof(t->ne));
		t->offset = at;
		t->size = w[i].size;
		memcpy((uint8_t *)d + at, w[i].data, w[i].size);
		at += w[i].size;
	}
	tj_init(&job, SYSHAX_OP_WEIGHTS_LOAD, &p, sizeof(p));
	tj_ref(&job, c, d, total, SYSHAX_ACCESS_READ);
	ret = tc_run1(c, &job, &res);
	if (id)
		*id = ret ? 0 : res;
	return ret;
}

int t_free_wset(struct tc *c, uint64_t id)
{
	struct syshax_weights_free_params p = { .wset = id };
	struct syshax_job job;
	uint64_t res = 1;
	int ret;

	tj_init(&job, SYSHAX_OP_WEIGHTS_FREE, &p, sizeof(p));
	ret = tc_run1(c, &job, &res);
	if (!ret)
		CU_ASSERT_EQUAL(res, 0);
	return ret;
}

int t_engine_stats(struct tc *c, struct syshax_engine_stats *st)
{
	size_t used = c->used;
	struct syshax_job job;
	uint64_t res = 0;
	void *p = tc_alloc(c, sizeof(*st) + 64);
	int ret;

	if (!p)
		return -ENOMEM;
	syshax_job_init(&job, SYSHAX_OP_ENGINE_STATS, 0);
	/* A longer ref: nothing past the struct is written. */
	tj_ref(&job, c, p, sizeof(*st) + 64, SYSHAX_ACCESS_WRITE);
	t_sentinel((uint8_t *)p + sizeof(*st), 64);
	ret = tc_run1(c, &job, &res);
	if (!ret) {
		CU_ASSERT_EQUAL(res, sizeof(*st));
		CU_ASSERT(t_sentinel_ok((uint8_t *)p + sizeof(*st), 64));
		memcpy(st, p, sizeof(*st));
	}
	c->used = used;
	return ret;
}

uint64_t t_wset_bytes(struct tc *c, uint64_t id)
{
	struct syshax_engine_stats st;

	if (t_engine_stats(c, &st))
		return UINT64_MAX;
	for (uint32_t i = 0; i < st.nr_wsets && i < SYSHAX_STATS_WSETS; i++) {
		uint64_t b = 0;

		if (st.wsets[i].id != id)
			continue;
		for (int n = 0; n < SYSHAX_MAX_NODES; n++)
			b += st.wsets[i].node_bytes[n];
		return b;
	}
	return UINT64_MAX;
}

void t_op_stats(struct tc *c, uint32_t op, uint64_t *jobs, uint64_t *batches)
{
	struct syshax_engine_stats st;
	int i = syshax_stats_op_index(op);

	CU_ASSERT_EQUAL_FATAL(t_engine_stats(c, &st), 0);
	CU_ASSERT_FATAL(i >= 0 && st.nr_nodes >= 1);
	/* Every pool takes part in every job: each counts them all. */
	*jobs = st.op[i][0].jobs;
	*batches = st.op[i][0].batches;
	for (uint32_t p = 1; p < st.nr_nodes && p < SYSHAX_MAX_NODES; p++) {
		CU_ASSERT_EQUAL(st.op[i][p].jobs, *jobs);
		CU_ASSERT_EQUAL(st.op[i][p].batches, *batches);
	}
}
