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
#include <math.h>
#include <stdint.h>

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

/* ---- max pooling, values only, a whole row (mte_maxpool_values_fn) ----
 * No index to track, so a tap costs its load(s) and one VMAXPS: max(v, best) = v > best ? v :
 * best is the scan's "take when greater" for numbers, and it may group the taps (a row's
 * maximum first, then the rows) as long as an earlier group is the second operand. A NaN tap is caught by a running sum of
 * the taps (NaN stays NaN; +inf + -inf also gives one, harmlessly): such a vector is redone
 * with the exact scan. Columns outside [0, W) are masked loads filled with -inf, which never
 * win, so the border outputs take the same path as the interior. */

/* lanes l < need whose column c0 + l lies in [0, W), as a 32-bit mask */
INLINE uint32_t cols_in(int64_t c0, int64_t W, int64_t need) {
  const int64_t lo = c0 < 0 ? -c0 : 0, hi = W - c0 < need ? W - c0 : need;
  if (hi <= lo || lo >= 32) return 0;
  const uint64_t upto = hi >= 32 ? 0xFFFFFFFFull : (1ull << hi) - 1;
  return (uint32_t)(upto & ~((1ull << lo) - 1));
}

/* 16 taps x[c0 + SW*k] of row `row` under the column mask m (-inf elsewhere); the address is
 * formed as an integer: it may precede the row, its first lanes masked off */
INLINE __m512 taps_masked(const int SW, const float *row, int64_t c0, uint32_t m, __m512i even) {
  const __m512 ninf = _mm512_set1_ps(-INFINITY);
  const float *p = (const float *)((uintptr_t)row + (uintptr_t)(c0 * (int64_t)sizeof(float)));
  if (m == 0xFFFFFFFFu) /* all 16 * SW lanes inside the row */
    return SW == 1 ? _mm512_loadu_ps(p)
                   : _mm512_permutex2var_ps(_mm512_loadu_ps(p), even, _mm512_loadu_ps(p + 16));
  const __m512 a = _mm512_mask_loadu_ps(ninf, (__mmask16)m, p);
  if (SW == 1) return a;
  const __m512 b = _mm512_mask_loadu_ps(ninf, (__mmask16)(m >> 16), p + 16);
  return _mm512_permutex2var_ps(a, even, b);
}

/* one vector of n outputs at column c0 (the first tap's); KW > 0 fixes kw (unrolled) */
INLINE __m512 max_values_vec(const int SW, const int KW, const float *x, int64_t W, int64_t h0,
                             int64_t i_lo, int64_t i_hi, int64_t kw_rt, int64_t c0, int64_t n,
                             __m512i even) {
  const int64_t kw = KW ? KW : kw_rt, need = SW * (n - 1) + 1;
  uint32_t m[3];
  if (KW) {
    /* the usual: every lane loaded lies inside the row (plain loads, no mask) */
    const int inside = n == 16 && c0 >= 0 && c0 + KW - 1 + 16 * SW <= W;
#pragma GCC unroll 3
    for (int j = 0; j < KW; ++j) m[j] = inside ? 0xFFFFFFFFu : cols_in(c0 + j, W, need);
  }
  __m512 best = _mm512_set1_ps(-INFINITY), sum = _mm512_setzero_ps();
  for (int64_t i = i_lo; i < i_hi; ++i) { /* a row's max and sum first: short chains */
    const float *row = x + (h0 + i) * W;
    __m512 rmax = taps_masked(SW, row, c0, KW ? m[0] : cols_in(c0, W, need), even), rsum = rmax;
#pragma GCC unroll 3
    for (int64_t j = 1; j < kw; ++j) {
      const __m512 v = taps_masked(SW, row, c0 + j, KW ? m[j] : cols_in(c0 + j, W, need), even);
      rmax = _mm512_max_ps(v, rmax);
      rsum = _mm512_add_ps(rsum, v);
    }
    best = _mm512_max_ps(rmax, best); /* the later row wins only when greater: scan order */
    sum = _mm512_add_ps(sum, rsum);
  }
  if (!(_mm512_cmp_ps_mask(sum, sum, _CMP_UNORD_Q) & below(n))) return best;
  best = _mm512_set1_ps(-INFINITY); /* a NaN among the taps: the exact scan */
  for (int64_t i = i_lo; i < i_hi; ++i)
    for (int64_t j = 0; j < kw; ++j) {
      const __m512 v = taps_masked(SW, x + (h0 + i) * W, c0 + j, cols_in(c0 + j, W, need), even);
      const __mmask16 take = _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ) |
                             _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
      best = _mm512_mask_mov_ps(best, take, v);
    }
  return best;
}

INLINE void max_values_impl(const int SW, const int KW, const float *x, int64_t W, int64_t h0,
                            int64_t i_lo, int64_t i_hi, int64_t kw, int64_t pw, int64_t Wo,
                            float *y) {
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  for (int64_t s = 0; s < Wo; s += 16) {
    const int64_t n = Wo - s < 16 ? Wo - s : 16;
    const __m512 best = max_values_vec(SW, KW, x, W, h0, i_lo, i_hi, kw, s * SW - pw, n, even);
    _mm512_mask_storeu_ps(y + s, below(n), best);
  }
}

static void max_row_values(const float *x, int64_t W, int64_t h0, int64_t i_lo, int64_t i_hi,
                           int64_t kw, int64_t sw, int64_t pw, int64_t Wo, float *y) {
  if (sw == 2 && kw == 3)
    max_values_impl(2, 3, x, W, h0, i_lo, i_hi, 3, pw, Wo, y);
  else if (sw == 1 && kw == 3)
    max_values_impl(1, 3, x, W, h0, i_lo, i_hi, 3, pw, Wo, y);
  else if (sw == 2)
    max_values_impl(2, 0, x, W, h0, i_lo, i_hi, kw, pw, Wo, y);
  else
    max_values_impl(1, 0, x, W, h0, i_lo, i_hi, kw, pw, Wo, y);
}

const mte_pool_kernel mte_pool_kernel_avx512 = {"avx512", max_row, avg_row, max_row_values};

#endif /* __x86_64__ */
