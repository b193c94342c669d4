/*
 * x86_avx512/pool_rows.c - max / average pooling row kernels for AVX-512.
 *
 * 16 outputs of a row at a time, all of whose windows lie inside the plane (pool.c sends
 * only those). Each window tap (i, j) is one vector: a plain load at stride 1, or at
 * stride 2 two loads split into their even lanes with vpermt2ps. Max pooling runs the
 * scalar scan lane-wise without branches -- take = (v > best) | isnan(v), then masked
 * moves of the value and of the tap's offset i*W + j (int32) -- so random data costs no
 * branch mispredictions; the offsets become int64 flat indices at the store. The last
 * partial vector is just a lane mask.
 */
#include "../../mte_pool_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define INLINE static inline __attribute__((always_inline))

INLINE __mmask16 below(int64_t n) {
  if (n >= 16) return (__mmask16)0xFFFF;
  if (n <= 0) return 0;
  return (__mmask16)((1u << n) - 1u);
}

/* x[p + SW*k] for the n (<= 16) lanes k < n; other lanes 0 and not read */
INLINE __m512 taps(const int SW, const float *p, int64_t n, __m512i even) {
  if (SW == 1) return _mm512_maskz_loadu_ps(below(n), p);
  const __m512 a = _mm512_maskz_loadu_ps(below(2 * n - 1), p);
  const __m512 b = _mm512_maskz_loadu_ps(below(2 * n - 17), p + 16);
  return _mm512_permutex2var_ps(a, even, b);
}

INLINE int64_t max_row_impl(const int SW, const float *x, int64_t W, int64_t h0, int64_t w0,
                            int64_t kh, int64_t kw, int64_t count, float *y, int64_t *ind) {
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i lanes = _mm512_set_epi64(7 * SW, 6 * SW, 5 * SW, 4 * SW, 3 * SW, 2 * SW, SW, 0);
  const float *row = x + h0 * W + w0;
  for (int64_t s = 0; s < count; s += 16) {
    const int64_t n = count - s < 16 ? count - s : 16;
    const float *p = row + s * SW;
    __m512 best = taps(SW, p, n, even);
    __m512i rel = _mm512_setzero_si512();
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = (i == 0); j < kw; ++j) {
        const __m512 v = taps(SW, p + i * W + j, n, even);
        const __mmask16 take = _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ) |
                               _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        best = _mm512_mask_mov_ps(best, take, v);
        rel = _mm512_mask_mov_epi32(rel, take, _mm512_set1_epi32((int32_t)(i * W + j)));
      }
    const __mmask16 m = below(n);
    _mm512_mask_storeu_ps(y + s, m, best);
    if (ind) {
      const __m512i b0 = _mm512_add_epi64(_mm512_set1_epi64(h0 * W + w0 + s * SW), lanes);
      const __m512i b1 = _mm512_add_epi64(b0, _mm512_set1_epi64(8 * SW));
      const __m512i i0 = _mm512_add_epi64(b0, _mm512_cvtepi32_epi64(_mm512_castsi512_si256(rel)));
      const __m512i i1 = _mm512_add_epi64(b1, _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(rel, 1)));
      _mm512_mask_storeu_epi64(ind + s, (__mmask8)m, i0);
      _mm512_mask_storeu_epi64(ind + s + 8, (__mmask8)(m >> 8), i1);
    }
  }
  return count;
}

static int64_t max_row(const float *x, int64_t W, int64_t h0, int64_t w0, int64_t kh,
                       int64_t kw, int64_t sw, int64_t count, float *y, int64_t *ind) {
  if (sw == 1) return max_row_impl(1, x, W, h0, w0, kh, kw, count, y, ind);
  if (sw == 2) return max_row_impl(2, x, W, h0, w0, kh, kw, count, y, ind);
  return 0;
}

INLINE int64_t avg_row_impl(const int SW, const float *x, int64_t W, int64_t h0, int64_t w0,
                            int64_t kh, int64_t kw, int64_t count, float div, float *y) {
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512 vd = _mm512_set1_ps(div);
  const float *row = x + h0 * W + w0;
  for (int64_t s = 0; s < count; s += 16) {
    const int64_t n = count - s < 16 ? count - s : 16;
    const float *p = row + s * SW;
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j) acc = _mm512_add_ps(acc, taps(SW, p + i * W + j, n, even));
    _mm512_mask_storeu_ps(y + s, below(n), _mm512_div_ps(acc, vd));
  }
  return count;
}

static int64_t avg_row(const float *x, int64_t W, int64_t h0, int64_t w0, int64_t kh,
                       int64_t kw, int64_t sw, int64_t count, float div, float *y) {
  if (sw == 1) return avg_row_impl(1, x, W, h0, w0, kh, kw, count, div, y);
  if (sw == 2) return avg_row_impl(2, x, W, h0, w0, kh, kw, count, div, y);
  return 0;
}

const mte_pool_kernel mte_pool_kernel_avx512 = {"avx512", max_row, avg_row};

#endif /* __x86_64__ */
