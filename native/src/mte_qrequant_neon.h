/*
 * mte_qrequant_neon.h - the requantization of mte_quant_internal.h on 4 int32 NEON lanes,
 * one channel (mte_qchan) broadcast over the vector; bit-exact with mte__requant (checked in
 * test_int8.c on every shift and edge value). Included by the arm_neon / arm_dotprod files.
 *
 *   saturating left shift   SQSHL by `left` (0..30) saturates exactly like the scalar clamp
 *   srdhm(x, m)             SQRDMULH is gemmlowp's SaturatingRoundingDoublingHighMul
 *   rdbpot(x, right)        SRSHL by -right rounds ties up (towards +inf); the scalar rounds
 *                           them away from zero, so negative x first gets x - 1 (gemmlowp's
 *                           fixup: (x & -right) >> 31 is -1 iff x < 0 and right > 0), added
 *                           with saturation so INT32_MIN stays INT32_MIN (its result is the
 *                           same: the rounding shift works at full precision)
 *   output                  clamp to [lo - zp, hi - zp], then + zp (no overflow)
 */
#ifndef MTE_QREQUANT_NEON_H
#define MTE_QREQUANT_NEON_H

#include <arm_neon.h>

#include "mte_quant_internal.h"

/* the int32 accumulators of one channel -> requantized int32 values in [lo, hi] */
static inline int32x4_t mte__requant_neon(int32x4_t acc, const mte_qchan *c, int32_t zp,
                                          int32_t lo, int32_t hi) {
  int32x4_t x = vaddq_s32(acc, vdupq_n_s32(c->comp)); /* mod 2^32 */
  x = vaddq_s32(vminq_s32(vmaxq_s32(x, vdupq_n_s32(c->blo)), vdupq_n_s32(c->bhi)),
                vdupq_n_s32(c->bias));
  x = vqshlq_s32(x, vdupq_n_s32(c->left));
  x = vqrdmulhq_s32(x, vdupq_n_s32(c->mult));
  const int32x4_t neg = vdupq_n_s32(-c->right);
  x = vqaddq_s32(x, vshrq_n_s32(vandq_s32(x, neg), 31));
  x = vrshlq_s32(x, neg);
  x = vminq_s32(vmaxq_s32(x, vdupq_n_s32(lo - zp)), vdupq_n_s32(hi - zp));
  return vaddq_s32(x, vdupq_n_s32(zp));
}

/* 8 int32 values in [-128, 127] -> 8 bytes */
static inline int8x8_t mte__pack8_neon(int32x4_t a, int32x4_t b) {
  return vqmovn_s16(vcombine_s16(vqmovn_s32(a), vqmovn_s32(b)));
}

/* One requantized tile row of 8 columns (8 bytes) stored to row i of the tile: directly when the
 * tile is row-major (cs == 1) and the row is full, else through `tmp` (MR x 8 bytes) which
 * the caller scatters with mte__qtile_flush_neon. */
static inline void mte__qrow_store_neon(const mte_qtile *t, int i, int8x8_t v, int8_t *tmp) {
  if (i >= t->rows) return; /* padding rows of the panel */
  if (t->cs == 1 && t->cols == 8) {
    vst1_s8(t->y + i * t->rs, v);
  } else {
    vst1_s8(tmp + 8 * i, v);
  }
}
static inline void mte__qtile_flush_neon(const mte_qtile *t, const int8_t *tmp) {
  if (t->cs == 1 && t->cols == 8) return;
  for (int i = 0; i < t->rows; ++i)
    for (int j = 0; j < t->cols; ++j) t->y[i * t->rs + j * t->cs] = tmp[8 * i + j];
}

#endif /* MTE_QREQUANT_NEON_H */
