/*
 * x86_avx2/pool_rows.c - max / average pooling row kernels for AVX2.
 *
 * 8 outputs of a row at a time, all of whose windows lie inside the plane. A window tap is
 * one vector: a plain load at stride 1; at stride 2 two loads and shufps 0x88, which leaves
 * the even lanes in the order (0 1 4 5 | 2 3 6 7) -- the same for every tap, so the scan
 * runs in that order and one vpermq per result restores it. Max pooling is the scalar scan
 * done lane-wise with blends (take = (v > best) | isnan(v)): no branches on the data. A
 * last partial vector uses vmaskmov loads and stores (masked lanes are not touched).
 */
#include "../../mte_pool_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define INLINE static inline __attribute__((always_inline))

static const int32_t k_tab[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

INLINE __m256i below(int64_t n) { /* lanes k < n */
  n = n < 0 ? 0 : n > 8 ? 8 : n;
  return _mm256_loadu_si256((const __m256i *)(k_tab + 8 - n));
}

INLINE __m256 load(const float *p, int64_t n) {
  return n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, below(n));
}

/* x[p + SW*k], k < n (<= 8), in the lane order of the file header when SW == 2 */
INLINE __m256 taps(const int SW, const float *p, int64_t n) {
  if (SW == 1) return load(p, n);
  return _mm256_shuffle_ps(load(p, 2 * n - 1), load(p + 8, 2 * n - 9), 0x88);
}

/* undo the (0 1 4 5 | 2 3 6 7) order */
INLINE __m256 unshuffle_ps(__m256 v) {
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), 0xD8));
}

INLINE int64_t max_row_impl(const int SW, const float *x, int64_t W, int64_t h0, int64_t w0,
                            int64_t kh, int64_t kw, int64_t count, float *y, int64_t *ind) {
  const float *row = x + h0 * W + w0;
  const __m256i lanes = _mm256_set_epi64x(3 * SW, 2 * SW, SW, 0);
  for (int64_t s = 0; s < count; s += 8) {
    const int64_t n = count - s < 8 ? count - s : 8;
    const float *p = row + s * SW;
    __m256 best = taps(SW, p, n);
    __m256 rel = _mm256_setzero_ps(); /* int32 offsets, blended as floats */
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = (i == 0); j < kw; ++j) {
        const __m256 v = taps(SW, p + i * W + j, n);
        const __m256 take = _mm256_or_ps(_mm256_cmp_ps(v, best, _CMP_GT_OQ),
                                         _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
        best = _mm256_blendv_ps(best, v, take);
        rel = _mm256_blendv_ps(rel, _mm256_castsi256_ps(_mm256_set1_epi32((int32_t)(i * W + j))),
                               take);
      }
    if (SW == 2) best = unshuffle_ps(best), rel = unshuffle_ps(rel);
    if (n == 8)
      _mm256_storeu_ps(y + s, best);
    else
      _mm256_maskstore_ps(y + s, below(n), best);
    if (ind) {
      const __m256i r = _mm256_castps_si256(rel);
      const __m256i b0 = _mm256_add_epi64(_mm256_set1_epi64x(h0 * W + w0 + s * SW), lanes);
      const __m256i b1 = _mm256_add_epi64(b0, _mm256_set1_epi64x(4 * SW));
      const __m256i i0 = _mm256_add_epi64(b0, _mm256_cvtepi32_epi64(_mm256_castsi256_si128(r)));
      const __m256i i1 = _mm256_add_epi64(b1, _mm256_cvtepi32_epi64(_mm256_extracti128_si256(r, 1)));
      if (n == 8) {
        _mm256_storeu_si256((__m256i *)(ind + s), i0);
        _mm256_storeu_si256((__m256i *)(ind + s + 4), i1);
      } else {
        const __m256i m = below(n);
        _mm256_maskstore_epi64((long long *)(ind + s), _mm256_cvtepi32_epi64(_mm256_castsi256_si128(m)), i0);
        _mm256_maskstore_epi64((long long *)(ind + s + 4),
                               _mm256_cvtepi32_epi64(_mm256_extracti128_si256(m, 1)), i1);
      }
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
  const float *row = x + h0 * W + w0;
  const __m256 vd = _mm256_set1_ps(div);
  for (int64_t s = 0; s < count; s += 8) {
    const int64_t n = count - s < 8 ? count - s : 8;
    const float *p = row + s * SW;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j) acc = _mm256_add_ps(acc, taps(SW, p + i * W + j, n));
    acc = _mm256_div_ps(acc, vd);
    if (SW == 2) acc = unshuffle_ps(acc);
    if (n == 8)
      _mm256_storeu_ps(y + s, acc);
    else
      _mm256_maskstore_ps(y + s, below(n), acc);
  }
  return count;
}

static int64_t avg_row(const float *x, int64_t W, int64_t h0, int64_t w0, int64_t kh,
                       int64_t kw, int64_t sw, int64_t count, float div, float *y) {
  if (sw == 1) return avg_row_impl(1, x, W, h0, w0, kh, kw, count, div, y);
  if (sw == 2) return avg_row_impl(2, x, W, h0, w0, kh, kw, count, div, y);
  return 0;
}

const mte_pool_kernel mte_pool_kernel_avx2 = {"avx2", max_row, avg_row, NULL};

#endif /* __x86_64__ */
