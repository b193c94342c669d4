/*
 * x86_avx2/winograd_transforms.c - the Winograd transforms for AVX2 (8 lanes), compiled with
 * -mavx2 -mfma. The transforms are in ../../mte_winograd_transforms.h (written once over a
 * vector of MTE_WINO_VL lanes); this file adds the output store: the results of 8 channels
 * are m*m vectors (one per block position, lanes = channels); 8x8 transposes turn them into
 * one vector per channel holding two rows of its block, stored as 128-bit rows.
 */
#if defined(__x86_64__)
#include <immintrin.h>
#include <stdint.h>

/* 8x8 transpose: v[k] lane e = old v[e] lane k */
static inline void transpose8(__m256 v[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(v[i], v[i + 1]);     /* r0 r1 interleaved, elements 0 1 | 4 5 */
    t[i + 1] = _mm256_unpackhi_ps(v[i], v[i + 1]); /* elements 2 3 | 6 7 */
  }
  for (int i = 0; i < 8; i += 4)
    for (int h = 0; h < 2; ++h) {
      u[i + 2 * h] = _mm256_shuffle_ps(t[i + h], t[i + h + 2], 0x44);     /* rows 0-3, col 0|4 */
      u[i + 2 * h + 1] = _mm256_shuffle_ps(t[i + h], t[i + h + 2], 0xEE); /* col 1|5 */
    }
  /* u[0..3]: rows 0-3, columns (0|4), (1|5), (2|6), (3|7); u[4..7]: rows 4-7 alike */
  for (int c = 0; c < 4; ++c) {
    v[c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x20);     /* column c */
    v[c + 4] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x31); /* column c + 4 */
  }
}

static inline void store4(float *dst, __m128 v, int wj) {
  if (wj == 4) {
    _mm_storeu_ps(dst, v);
    return;
  }
  const __m128i mask = _mm_set_epi32(wj > 3 ? -1 : 0, wj > 2 ? -1 : 0, wj > 1 ? -1 : 0, -1);
  _mm_maskstore_ps(dst, mask, v);
}

static int store_blocks_avx2(int m, const float *res, int64_t n, float *y, int64_t plane,
                             int64_t ldy, int hi, int wj) {
  if (m != 4) return 0;
  for (int half = 0; half < 2 && 2 * half < hi; ++half) { /* rows 2h, 2h+1 */
    __m256 v[8];
    for (int e = 0; e < 8; ++e) v[e] = _mm256_load_ps(res + 8 * (8 * half + e));
    transpose8(v);
    const int i0 = 2 * half;
    for (int64_t k = 0; k < n; ++k) {
      float *yk = y + k * plane + i0 * ldy;
      store4(yk, _mm256_castps256_ps128(v[k]), wj);
      if (i0 + 1 < hi) store4(yk + ldy, _mm256_extractf128_ps(v[k], 1), wj);
    }
  }
  return 1;
}

#define MTE_WINO_VL 8
#define MTE_WINO_ISA "avx2"
#define MTE_WINO_TABLE mte_wino_kernels_avx2
#define MTE_WINO_STORE_BLOCKS store_blocks_avx2
#include "../../mte_winograd_transforms.h"
#endif
