/*
 * x86_avx512/winograd_transforms.c - the Winograd transforms for AVX-512 (16 lanes),
 * compiled with -mavx512f -mavx512bw -mavx512dq -mavx512vl -mfma. The transforms are in
 * ../../mte_winograd_transforms.h (written once over a vector of MTE_WINO_VL lanes); this
 * file adds the output store: the F(4,3) results of 16 channels are 16 vectors (one per
 * block position i*4 + j, lanes = channels), transposed in registers so that each channel's
 * 4x4 block becomes one vector, written as four 128-bit rows.
 */
#if defined(__x86_64__)
#include <immintrin.h>
#include <stdint.h>

/* 16x16 transpose: r[k] lane e = v[e] lane k */
static inline void transpose16(__m512 v[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) { /* 32-bit interleave of row pairs */
    t[i] = _mm512_unpacklo_ps(v[i], v[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(v[i], v[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) { /* 64-bit interleave */
    for (int h = 0; h < 2; ++h) {
      __m512d a = _mm512_castps_pd(t[i + h]), b = _mm512_castps_pd(t[i + h + 2]);
      v[i + 2 * h] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
      v[i + 2 * h + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
    }
  }
  /* v[4q + r] now holds, in 128-bit lane L, elements (rows 4q..4q+3, column 4L + r) */
  for (int r = 0; r < 4; ++r) { /* 128-bit blocks: gather lane L of the four groups */
    __m512 a = _mm512_shuffle_f32x4(v[r], v[4 + r], 0x44);       /* q0 L0 L1, q1 L0 L1 */
    __m512 b = _mm512_shuffle_f32x4(v[8 + r], v[12 + r], 0x44);  /* q2 L0 L1, q3 L0 L1 */
    __m512 c = _mm512_shuffle_f32x4(v[r], v[4 + r], 0xEE);       /* L2 L3 */
    __m512 d = _mm512_shuffle_f32x4(v[8 + r], v[12 + r], 0xEE);
    t[r] = _mm512_shuffle_f32x4(a, b, 0x88);      /* column r      : q0 q1 q2 q3 of L0 */
    t[4 + r] = _mm512_shuffle_f32x4(a, b, 0xDD);  /* column 4 + r  : L1 */
    t[8 + r] = _mm512_shuffle_f32x4(c, d, 0x88);  /* column 8 + r  : L2 */
    t[12 + r] = _mm512_shuffle_f32x4(c, d, 0xDD); /* column 12 + r : L3 */
  }
  for (int i = 0; i < 16; ++i) v[i] = t[i];
}

static int store_blocks_avx512(int m, const float *res, int64_t n, float *y, int64_t plane,
                               int64_t ldy, int hi, int wj) {
  if (m != 4) return 0;
  __m512 v[16];
  for (int e = 0; e < 16; ++e) v[e] = _mm512_load_ps(res + 16 * e);
  transpose16(v);
  const __mmask8 mask = (__mmask8)((1u << wj) - 1u);
  for (int64_t k = 0; k < n; ++k) {
    float *yk = y + k * plane;
    const __m512 blk = v[k];
    if (hi == 4 && wj == 4) {
      _mm_storeu_ps(yk, _mm512_castps512_ps128(blk));
      _mm_storeu_ps(yk + ldy, _mm512_extractf32x4_ps(blk, 1));
      _mm_storeu_ps(yk + 2 * ldy, _mm512_extractf32x4_ps(blk, 2));
      _mm_storeu_ps(yk + 3 * ldy, _mm512_extractf32x4_ps(blk, 3));
    } else {
      if (hi > 0) _mm_mask_storeu_ps(yk, mask, _mm512_castps512_ps128(blk));
      if (hi > 1) _mm_mask_storeu_ps(yk + ldy, mask, _mm512_extractf32x4_ps(blk, 1));
      if (hi > 2) _mm_mask_storeu_ps(yk + 2 * ldy, mask, _mm512_extractf32x4_ps(blk, 2));
      if (hi > 3) _mm_mask_storeu_ps(yk + 3 * ldy, mask, _mm512_extractf32x4_ps(blk, 3));
    }
  }
  return 1;
}

#define MTE_WINO_VL 16
#define MTE_WINO_ISA "avx512"
#define MTE_WINO_TABLE mte_wino_kernels_avx512
#define MTE_WINO_STORE_BLOCKS store_blocks_avx512
#include "../../mte_winograd_transforms.h"
#endif
