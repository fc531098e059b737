// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Armv8.2 dotprod variant: the NEON tiles with sdot for the dot products. */
#include "neon.h"

INLINE int32x4_t dot16(int32x4_t acc, int8x16_t w, int8x16_t x)
{
	return vdotq_s32(acc, w, x);
}

#include "qtile.h"

SHXK_QTILE_OPS(dotprod, "dotprod", 0);
