/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * A C model of the AMX instructions amx.c uses, after the Intel SDM's
 * pseudocode (LDTILECFG, TILERELEASE, TILEZERO, TILELOADD, TILESTORED,
 * TDPBSSD, TDPBF16PS), palette 1: 8 tiles of up to 16 rows of 64 bytes. amx.c built
 * with SHXK_AMX_MODEL uses these in place of the intrinsics, so its tile
 * logic runs in make test on CPUs without AMX (no emulator Debian packages
 * runs AMX). What the hardware faults on (#GP, #UD: a bad configuration,
 * an unconfigured tile, shapes that do not chain) aborts here. The tile
 * state is per thread, as on the hardware.
 */
#ifndef SHXK_AMX_MODEL_H
#define SHXK_AMX_MODEL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define AMX_MODEL_TILES 8

struct amx_model {
	int on;
	uint16_t colsb[AMX_MODEL_TILES];
	uint8_t rows[AMX_MODEL_TILES];
	uint8_t t[AMX_MODEL_TILES][16][64];
};

static _Thread_local struct amx_model amx_m;

static inline void amx_model_trap(int bad)
{
	if (bad)
		abort();
}

/* The 64-byte configuration: palette, start_row, 14 reserved bytes,
 * colsb[16] (u16), rows[16]; tiles 8..15 and reserved bytes must be 0. */
static inline void amx_model_loadconfig(const void *cfg)
{
	const uint8_t *c = cfg;

	memset(&amx_m, 0, sizeof(amx_m));
	if (c[0] == 0)
		return;				/* palette 0: init state */
	amx_model_trap(c[0] != 1 || c[1] != 0);
	for (int i = 2; i < 16; i++)
		amx_model_trap(c[i] != 0);
	for (int i = 0; i < 16; i++) {
		uint16_t cb = (uint16_t)(c[16 + 2 * i] | c[17 + 2 * i] << 8);
		uint8_t r = c[48 + i];

		amx_model_trap(i >= AMX_MODEL_TILES && (cb || r));
		amx_model_trap(cb > 64 || r > 16 || !cb != !r);
		if (i < AMX_MODEL_TILES) {
			amx_m.colsb[i] = cb;
			amx_m.rows[i] = r;
		}
	}
	amx_m.on = 1;
}

static inline void amx_model_release(void)
{
	memset(&amx_m, 0, sizeof(amx_m));
}

static inline void amx_model_use(int t)
{
	amx_model_trap(!amx_m.on || t < 0 || t >= AMX_MODEL_TILES ||
		       !amx_m.rows[t]);
}

static inline void amx_model_zero(int t)
{
	amx_model_use(t);
	memset(amx_m.t[t], 0, sizeof(amx_m.t[t]));
}

/* Rows past rows[t] and bytes past colsb[t] read as zero afterwards. */
static inline void amx_model_loadd(int t, const void *base, long stride)
{
	amx_model_use(t);
	memset(amx_m.t[t], 0, sizeof(amx_m.t[t]));
	for (int r = 0; r < amx_m.rows[t]; r++)
		memcpy(amx_m.t[t][r], (const uint8_t *)base + r * stride,
		       amx_m.colsb[t]);
}

static inline void amx_model_stored(int t, void *base, long stride)
{
	amx_model_use(t);
	for (int r = 0; r < amx_m.rows[t]; r++)
		memcpy((uint8_t *)base + r * stride, amx_m.t[t][r],
		       amx_m.colsb[t]);
}

/* A dot-product instruction's #UD checks: c = a x b must chain. */
static inline void amx_model_dp_shapes(int c, int a, int b)
{
	amx_model_use(c);
	amx_model_use(a);
	amx_model_use(b);
	amx_model_trap(c == a || c == b || a == b ||
		       amx_m.colsb[c] != amx_m.colsb[b] ||
		       amx_m.rows[c] != amx_m.rows[a] ||
		       amx_m.colsb[a] / 4 != amx_m.rows[b] ||
		       amx_m.colsb[a] % 4 || amx_m.colsb[c] % 4);
}

/*
 * c[m][n] += sum over k < colsb[a] / 4 and i < 4 of a[m][4k + i] *
 * b[k][4n + i], signed bytes, int32 sums that wrap.
 */
static inline void amx_model_dpbssd(int c, int a, int b)
{
	amx_model_dp_shapes(c, a, b);
	for (int m = 0; m < amx_m.rows[c]; m++) {
		for (int n = 0; n < amx_m.colsb[c] / 4; n++) {
			uint32_t s;

			memcpy(&s, &amx_m.t[c][m][4 * n], 4);
			for (int k = 0; k < amx_m.colsb[a] / 4; k++)
				for (int i = 0; i < 4; i++)
					s += (uint32_t)((int8_t)amx_m.t[a][m][4 * k + i] *
							(int8_t)amx_m.t[b][k][4 * n + i]);
			memcpy(&amx_m.t[c][m][4 * n], &s, 4);
		}
	}
}

/* immintrin.h defines the real ones whatever the target flags. */
#undef _tile_loadconfig
#undef _tile_release
#undef _tile_zero
#undef _tile_loadd
#undef _tile_stored
#undef _tile_dpbssd
#undef _tile_dpbf16ps
/* bf16 as f32, denormals as zero (DAZ). */
static inline float amx_model_bf16(const uint8_t *p)
{
	uint32_t u = (uint32_t)(p[0] | p[1] << 8) << 16;
	float f;

	if (!(u & 0x7f800000))
		u &= 0x80000000;
	memcpy(&f, &u, 4);
	return f;
}

/*
 * c[m][n] += a[m][2k] * b[k][2n], then += a[m][2k + 1] * b[k][2n + 1],
 * for k < colsb[a] / 4: f32, round to nearest even, denormal results
 * flushed to zero (FTZ). bf16 products are exact in f32.
 */
static inline void amx_model_dpbf16ps(int c, int a, int b)
{
	amx_model_dp_shapes(c, a, b);
	for (int m = 0; m < amx_m.rows[c]; m++) {
		for (int n = 0; n < amx_m.colsb[c] / 4; n++) {
			float s;

			memcpy(&s, &amx_m.t[c][m][4 * n], 4);
			for (int k = 0; k < amx_m.colsb[a] / 4; k++) {
				for (int i = 0; i < 2; i++) {
					uint32_t u;

					s += amx_model_bf16(&amx_m.t[a][m][4 * k + 2 * i]) *
					     amx_model_bf16(&amx_m.t[b][k][4 * n + 2 * i]);
					memcpy(&u, &s, 4);
					if (!(u & 0x7f800000))
						u &= 0x80000000;
					memcpy(&s, &u, 4);
				}
			}
			memcpy(&amx_m.t[c][m][4 * n], &s, 4);
		}
	}
}

#define _tile_loadconfig(cfg)		amx_model_loadconfig(cfg)
#define _tile_release()			amx_model_release()
#define _tile_zero(t)			amx_model_zero(t)
#define _tile_loadd(t, base, stride)	amx_model_loadd(t, base, stride)
#define _tile_stored(t, base, stride)	amx_model_stored(t, base, stride)
#define _tile_dpbssd(c, a, b)		amx_model_dpbssd(c, a, b)
#define _tile_dpbf16ps(c, a, b)		amx_model_dpbf16ps(c, a, b)

#endif
