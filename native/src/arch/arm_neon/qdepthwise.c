/*
 * arm_neon/qdepthwise.c - one plane of the int8 depthwise 3x3 as a flat row (mte_qdw_plane)
 * on NEON: the plane widened to int16 (x - x_zp) once, then 8 flat outputs per step: each
 * of the 9 taps is one vector of 8 int16 at a fixed offset (stride 1: consecutive; stride 2:
 * LD2 splits the pairs into tap 0 and tap 1, and tap 2 is LD2 one pair on), multiply-added
 * into two int32x4 by its weight (SMLAL by scalar); the requantization in registers
 * (mte_qrequant_neon.h); the real columns copied out as the generic kernel does.
 */
#include "../../mte_quant_internal.h"

#if defined(__aarch64__)
#include "../../mte_qrequant_neon.h"

static void widen(const mte_qdw_plane *a) {
  const int64_t cols = mte__qdw_cols(a);
  for (int64_t h = 0; h < a->H; ++h) {
    int16_t *dst = mte__qdw_dst_row(a, h);
    if (dst)
      for (int64_t c = 0; c < cols; ++c) dst[c] = (int16_t)(a->x[h * a->W + c] - a->x_zp);
  }
}

static inline void taps(const int16_t *q, int sw, int16x8_t t[3]) {
  if (sw == 1) {
    t[0] = vld1q_s16(q), t[1] = vld1q_s16(q + 1), t[2] = vld1q_s16(q + 2);
  } else {
    const int16x8x2_t p = vld2q_s16(q);
    t[0] = p.val[0], t[1] = p.val[1], t[2] = vld2q_s16(q + 2).val[0];
  }
}

static void qdw_plane_neon(const mte_qdw_plane *a) {
  widen(a);
  const mte_qchan ch = *a->chan; /* a local: the byte stores below cannot alias it */
  for (int64_t g = 0; g < a->n; g += 8) { /* line is writable up to round_up(n, 64) */
    int32x4_t lo = vdupq_n_s32(0), hi = vdupq_n_s32(0);
    for (int i = 0; i < 3; ++i) {
      int16x8_t t[3];
      taps(a->p + a->off[i] + a->sw * g, a->sw, t);
      for (int j = 0; j < 3; ++j) {
        lo = vmlal_n_s16(lo, vget_low_s16(t[j]), a->w[3 * i + j]);
        hi = vmlal_high_n_s16(hi, t[j], a->w[3 * i + j]);
      }
    }
    vst1_s8(a->line + g, mte__pack8_neon(mte__requant_neon(lo, &ch, a->zp, a->lo, a->hi),
                                         mte__requant_neon(hi, &ch, a->zp, a->lo, a->hi)));
  }
  for (int64_t r = 0; r < a->Ho; ++r)
    for (int64_t c = 0; c < a->Wo; ++c) a->y[r * a->Wo + c] = a->line[r * a->pitch + c];
}

const mte_qdw_kernel mte_qdw_kernel_neon = {.isa = "neon", .plane = qdw_plane_neon};
#endif
