/*
 * arm_neon/pack_b_trans.c - packing B^T into SGEMM panels with 4 x 4 register transposes.
 *
 * The NEON counterpart of x86_avx2/pack_b_trans.c: with trans_b a panel row (nr values, one
 * per column j) is a column of the stored matrix, so 4 stored rows x 4 k-steps are loaded as
 * 4 q vectors, transposed (vtrn1q/vtrn2q on 32- then 64-bit lanes) and stored as 4 panel
 * rows. A Linear layer's forward (x @ W^T, W stored (out, in)) packs all of W this way.
 */
#include "../../mte_internal.h"

#if defined(__aarch64__)
#include <arm_neon.h>

/* dst[p * nr + c] = B[(j + c) * ldb + p0 + p] for c < cols, 0 for cols <= c < nr */
void mte__pack_b_trans_neon(int nr, int64_t cols, int64_t kc, const float *B, int64_t ldb,
                            int64_t j, int64_t p0, float *MTE_RESTRICT dst) {
  int64_t c0 = 0;
  for (; c0 + 4 <= cols; c0 += 4) {
    const float *src = B + (j + c0) * ldb + p0;
    int64_t p = 0;
    for (; p + 4 <= kc; p += 4) {
      const float32x4_t r0 = vld1q_f32(src + p), r1 = vld1q_f32(src + ldb + p),
                        r2 = vld1q_f32(src + 2 * ldb + p), r3 = vld1q_f32(src + 3 * ldb + p);
      const float32x4_t t0 = vtrn1q_f32(r0, r1), t1 = vtrn2q_f32(r0, r1);
      const float32x4_t t2 = vtrn1q_f32(r2, r3), t3 = vtrn2q_f32(r2, r3);
      const float64x2_t u0 = vreinterpretq_f64_f32(t0), u1 = vreinterpretq_f64_f32(t1);
      const float64x2_t u2 = vreinterpretq_f64_f32(t2), u3 = vreinterpretq_f64_f32(t3);
      vst1q_f32(dst + p * nr + c0, vreinterpretq_f32_f64(vtrn1q_f64(u0, u2)));
      vst1q_f32(dst + (p + 1) * nr + c0, vreinterpretq_f32_f64(vtrn1q_f64(u1, u3)));
      vst1q_f32(dst + (p + 2) * nr + c0, vreinterpretq_f32_f64(vtrn2q_f64(u0, u2)));
      vst1q_f32(dst + (p + 3) * nr + c0, vreinterpretq_f32_f64(vtrn2q_f64(u1, u3)));
    }
    for (; p < kc; ++p)
      for (int i = 0; i < 4; ++i) dst[p * nr + c0 + i] = src[i * ldb + p];
  }
  for (int64_t c = c0; c < cols; ++c) {
    const float *src = B + (j + c) * ldb + p0;
    for (int64_t p = 0; p < kc; ++p) dst[p * nr + c] = src[p];
  }
  for (int64_t c = cols; c < nr; ++c)
    for (int64_t p = 0; p < kc; ++p) dst[p * nr + c] = 0.0f;
}
#endif
