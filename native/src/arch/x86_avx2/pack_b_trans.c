/*
 * x86_avx2/pack_b_trans.c - packing B^T into SGEMM panels with 8 x 8 register transposes.
 *
 * With trans_b the k-th row of a panel (nr values, one per column j) is a column of the
 * stored matrix: the scalar loop gathers one float per stored row. Here 8 stored rows x 8
 * k-steps are loaded as 8 vectors, transposed in registers (unpack / shuffle / permute:
 * 24 shuffles per 64 floats) and stored as 8 panel rows. A Linear layer's forward
 * (x @ W^T with W stored (out, in)) packs all of W this way on every call. Compiled with
 * -mavx2 -mfma; used by the AVX2 and the AVX-512 kernels (cpu.c checks the CPU first).
 */
#include "../../mte_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

static inline void transpose8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(s0, s4, 0x20), r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
  r[1] = _mm256_permute2f128_ps(s1, s5, 0x20), r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  r[2] = _mm256_permute2f128_ps(s2, s6, 0x20), r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
  r[3] = _mm256_permute2f128_ps(s3, s7, 0x20), r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

/* dst[p * nr + c] = B[(j + c) * ldb + p0 + p] for c < cols, 0 for cols <= c < nr */
void mte__pack_b_trans_avx2(int nr, int64_t cols, int64_t kc, const float *B, int64_t ldb,
                            int64_t j, int64_t p0, float *MTE_RESTRICT dst) {
  int64_t c0 = 0;
  for (; c0 + 8 <= cols; c0 += 8) {
    const float *src = B + (j + c0) * ldb + p0;
    int64_t p = 0;
    for (; p + 8 <= kc; p += 8) {
      __m256 r[8];
      for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * ldb + p);
      transpose8(r);
      for (int q = 0; q < 8; ++q) _mm256_storeu_ps(dst + (p + q) * nr + c0, r[q]);
    }
    for (; p < kc; ++p)
      for (int i = 0; i < 8; ++i) dst[p * nr + c0 + i] = src[i * ldb + p];
  }
  for (int64_t c = c0; c < cols; ++c) {
    const float *src = B + (j + c) * ldb + p0;
    for (int64_t p = 0; p < kc; ++p) dst[p * nr + c] = src[p];
  }
  for (int64_t c = cols; c < nr; ++c)
    for (int64_t p = 0; p < kc; ++p) dst[p * nr + c] = 0.0f;
}
#endif
