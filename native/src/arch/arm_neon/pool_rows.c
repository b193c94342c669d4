/*
 * arm_neon/pool_rows.c - max / average pooling row kernels for NEON (aarch64).
 *
 * 4 outputs of a row at a time, all of whose windows lie inside the plane. A window tap is
 * one vector: vld1q at stride 1, the even half of vld2q at stride 2. Max pooling is the
 * scalar scan done lane-wise with bit selects (take = (v > best) | isnan(v)): no branches
 * on the data. vld2q reads 8 floats for 4 outputs (one past the last tap), so the vector
 * loop stops where that would leave the plane and returns; pool.c finishes the row.
 */
#include "../../mte_pool_internal.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#define INLINE static inline __attribute__((always_inline))

INLINE float32x4_t taps(const int SW, const float *p) {
  return SW == 1 ? vld1q_f32(p) : vld2q_f32(p).val[0];
}

/* outputs done as full vectors of 4: at stride 2, while every vld2q stays in the row */
INLINE int64_t vec_count(const int SW, int64_t count, int64_t kw, int64_t W, int64_t w0) {
  int64_t n = count / 4 * 4;
  if (SW == 2) /* vector s reads columns w0 + 2s .. w0 + 2s + kw - 1 + 7 */
    while (n > 0 && w0 + 2 * (n - 4) + kw - 1 + 7 > W - 1) n -= 4;
  return n;
}

INLINE int64_t max_row_impl(const int SW, const float *x, int64_t W, int64_t h0, int64_t w0,
                            int64_t kh, int64_t kw, int64_t count, float *y, int64_t *ind) {
  const float *row = x + h0 * W + w0;
  const int64_t n = vec_count(SW, count, kw, W, w0);
  for (int64_t s = 0; s < n; s += 4) {
    const float *p = row + s * SW;
    float32x4_t best = taps(SW, p);
    int32x4_t rel = vdupq_n_s32(0);
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = (i == 0); j < kw; ++j) {
        const float32x4_t v = taps(SW, p + i * W + j);
        const uint32x4_t take = vorrq_u32(vcgtq_f32(v, best), vmvnq_u32(vceqq_f32(v, v)));
        best = vbslq_f32(take, v, best);
        rel = vbslq_s32(take, vdupq_n_s32((int32_t)(i * W + j)), rel);
      }
    vst1q_f32(y + s, best);
    if (ind) {
      const int64_t b = h0 * W + w0 + s * SW;
      const int64x2_t b0 = {b, b + SW}, b1 = {b + 2 * SW, b + 3 * SW};
      vst1q_s64(ind + s, vaddq_s64(b0, vmovl_s32(vget_low_s32(rel))));
      vst1q_s64(ind + s + 2, vaddq_s64(b1, vmovl_high_s32(rel)));
    }
  }
  return n;
}

static int64_t max_row(const float *x, int64_t W, int64_t h0, int64_t w0, int64_t kh,
                       int64_t kw, int64_t sw, int64_t count, float *y, int64_t *ind) {
  if (sw == 1) return max_row_impl(1, x, W, h0, w0, kh, kw, count, y, ind);
  if (sw == 2) return max_row_impl(2, x, W, h0, w0, kh, kw, count, y, ind);
  return 0;
}

INLINE int64_t avg_row_impl(const int SW, const float *x, int64_t W, int64_t h0, int64_t w0,
                            int64_t kh, int64_t kw, int64_t count, float div, float *y) {
  const float *row = x + h0 * W + w0;
  const int64_t n = vec_count(SW, count, kw, W, w0);
  const float32x4_t vd = vdupq_n_f32(div);
  for (int64_t s = 0; s < n; s += 4) {
    const float *p = row + s * SW;
    float32x4_t acc = vdupq_n_f32(0.0f);
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j) acc = vaddq_f32(acc, taps(SW, p + i * W + j));
    vst1q_f32(y + s, vdivq_f32(acc, vd));
  }
  return n;
}

static int64_t avg_row(const float *x, int64_t W, int64_t h0, int64_t w0, int64_t kh,
                       int64_t kw, int64_t sw, int64_t count, float div, float *y) {
  if (sw == 1) return avg_row_impl(1, x, W, h0, w0, kh, kw, count, div, y);
  if (sw == 2) return avg_row_impl(2, x, W, h0, w0, kh, kw, count, div, y);
  return 0;
}

const mte_pool_kernel mte_pool_kernel_neon = {"neon", max_row, avg_row, NULL};

#endif /* __aarch64__ */
