/*
 * arm_neon/winograd_transforms.c - the Winograd transforms for NEON (4 lanes), aarch64 only.
 * The transforms are in ../../mte_winograd_transforms.h (written once over a vector of
 * MTE_WINO_VL lanes); this file adds the output store: the results of 4 channels are m*m
 * vectors (one per block position, lanes = channels); a 4x4 transpose of each block row
 * turns them into one vector per channel and row, stored whole.
 */
#if defined(__aarch64__)
#include <arm_neon.h>
#include <stdint.h>

static inline void store_row(float *dst, float32x4_t v, int wj) {
  if (wj == 4) {
    vst1q_f32(dst, v);
    return;
  }
  float t[4];
  vst1q_f32(t, v);
  for (int j = 0; j < wj; ++j) dst[j] = t[j];
}

static int store_blocks_neon(int m, const float *res, int64_t n, float *y, int64_t plane,
                             int64_t ldy, int hi, int wj) {
  if (m == 4) {
    for (int i = 0; i < hi; ++i) { /* row i: positions j = 0..3 of the 4 channels */
      const float *r = res + 16 * i;
      float32x4_t a = vld1q_f32(r), b = vld1q_f32(r + 4), c = vld1q_f32(r + 8),
                  d = vld1q_f32(r + 12);
      float32x4_t ab0 = vtrn1q_f32(a, b), ab1 = vtrn2q_f32(a, b); /* a0 b0 a2 b2 | a1 b1 .. */
      float32x4_t cd0 = vtrn1q_f32(c, d), cd1 = vtrn2q_f32(c, d);
      float32x4_t t[4];
      t[0] = vreinterpretq_f32_f64(
          vtrn1q_f64(vreinterpretq_f64_f32(ab0), vreinterpretq_f64_f32(cd0)));
      t[1] = vreinterpretq_f32_f64(
          vtrn1q_f64(vreinterpretq_f64_f32(ab1), vreinterpretq_f64_f32(cd1)));
      t[2] = vreinterpretq_f32_f64(
          vtrn2q_f64(vreinterpretq_f64_f32(ab0), vreinterpretq_f64_f32(cd0)));
      t[3] = vreinterpretq_f32_f64(
          vtrn2q_f64(vreinterpretq_f64_f32(ab1), vreinterpretq_f64_f32(cd1)));
      for (int64_t k = 0; k < n; ++k) store_row(y + k * plane + i * ldy, t[k], wj);
    }
    return 1;
  }
  if (m == 2 && wj == 2) {
    for (int i = 0; i < hi; ++i) {
      float32x4_t a = vld1q_f32(res + 8 * i), b = vld1q_f32(res + 8 * i + 4);
      float32x4_t lo = vzip1q_f32(a, b), hi2 = vzip2q_f32(a, b); /* a0 b0 a1 b1 | a2 b2 .. */
      float32x2_t t[4] = {vget_low_f32(lo), vget_high_f32(lo), vget_low_f32(hi2),
                          vget_high_f32(hi2)};
      for (int64_t k = 0; k < n; ++k) vst1_f32(y + k * plane + i * ldy, t[k]);
    }
    return 1;
  }
  return 0;
}

#define MTE_WINO_VL 4
#define MTE_WINO_ISA "neon"
#define MTE_WINO_TABLE mte_wino_kernels_neon
#define MTE_WINO_STORE_BLOCKS store_blocks_neon
#include "../../mte_winograd_transforms.h"
#endif
