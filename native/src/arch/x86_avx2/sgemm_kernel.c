/*
 * x86_avx2/sgemm_kernel.c - SGEMM microkernel for AVX2 + FMA (Haswell and later, Zen).
 *
 * Compiled with -mavx2 -mfma; only called after cpu.c has checked the CPU and OS support
 * both. Tile 6 x 16: the 16 columns are two 8-float ymm vectors, so the tile is 12 ymm
 * accumulators; each step loads 2 vectors of B, broadcasts 6 values of A and issues
 * 12 FMAs, which leaves 3 of the 16 ymm registers for operands.
 */
#include "../../mte_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define MR 6
#define NV 2 /* ymm vectors per row */
#define NR (8 * NV)

/* The tile body; `post` variants add row/column bias and ReLU/ReLU6 before the store
 * (constant-folded away in the plain kernel). */
static inline __attribute__((always_inline)) void
ukernel_body(int64_t kc, const float *MTE_RESTRICT a, const float *MTE_RESTRICT b,
             float *MTE_RESTRICT c, int64_t ldc, float alpha, float beta, const float *row_bias,
             const float *col_bias, int act) {
  /* start fetching the C tile now; it is only touched after the loop */
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
    _mm_prefetch((const char *)(c + i * ldc + NR - 1), _MM_HINT_T0);
  }
  __m256 acc[MR][NV];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_setzero_ps();

  for (int64_t p = 0; p < kc; ++p) {
    __m256 bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = _mm256_load_ps(b + p * NR + 8 * v);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      __m256 av = _mm256_broadcast_ss(a + p * MR + i);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_fmadd_ps(av, bv[v], acc[i][v]);
    }
  }

  const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
  const __m256 zero = _mm256_setzero_ps(), six = _mm256_set1_ps(6.0f);
  __m256 cb[NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) cb[v] = col_bias ? _mm256_loadu_ps(col_bias + 8 * v) : zero;
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    const __m256 rb = row_bias ? _mm256_set1_ps(row_bias[i]) : zero;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      float *cp = c + i * ldc + 8 * v;
      __m256 r = _mm256_mul_ps(va, acc[i][v]);
      if (beta != 0.0f) r = _mm256_fmadd_ps(vb, _mm256_loadu_ps(cp), r);
      if (row_bias) r = _mm256_add_ps(r, rb);
      if (col_bias) r = _mm256_add_ps(r, cb[v]);
      if (act != MTE_ACT_NONE) r = _mm256_max_ps(zero, r); /* NaN stays NaN */
      if (act == MTE_ACT_RELU6) r = _mm256_min_ps(six, r);
      _mm256_storeu_ps(cp, r);
    }
  }
}

static void sgemm_ukernel_avx2(int64_t kc, const float *MTE_RESTRICT a,
                               const float *MTE_RESTRICT b, float *MTE_RESTRICT c,
                               int64_t ldc, float alpha, float beta) {
  ukernel_body(kc, a, b, c, ldc, alpha, beta, NULL, NULL, MTE_ACT_NONE);
}

static void sgemm_ukernel_avx2_post(int64_t kc, const float *MTE_RESTRICT a,
                                    const float *MTE_RESTRICT b, float *MTE_RESTRICT c,
                                    int64_t ldc, float alpha, float beta,
                                    const float *row_bias, const float *col_bias, int act) {
  ukernel_body(kc, a, b, c, ldc, alpha, beta, row_bias, col_bias, act);
}

/* The MR x 8 tile of a panel whose valid columns all lie in its first 8: one ymm per row,
 * B read with the full panel's row stride NR. */
static void sgemm_ukernel_avx2_half(int64_t kc, const float *MTE_RESTRICT a,
                                    const float *MTE_RESTRICT b, float *MTE_RESTRICT c,
                                    int64_t ldc, float alpha, float beta) {
  __m256 acc[MR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) acc[i] = _mm256_setzero_ps();
  for (int64_t p = 0; p < kc; ++p) {
    const __m256 bv = _mm256_load_ps(b + p * NR);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i)
      acc[i] = _mm256_fmadd_ps(_mm256_broadcast_ss(a + p * MR + i), bv, acc[i]);
  }
  const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    __m256 r = _mm256_mul_ps(va, acc[i]);
    if (beta != 0.0f) r = _mm256_fmadd_ps(vb, _mm256_loadu_ps(c + i * ldc), r);
    _mm256_storeu_ps(c + i * ldc, r);
  }
}

/* 12 independent chains of FMAs: enough to cover the FMA latency on two pipes. */
static double fma_peak_avx2(int64_t rounds) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(0.001f * (float)i);
  const __m256 x = _mm256_set1_ps(0.999f), y = _mm256_set1_ps(0.0001f);
  for (int64_t r = 0; r < rounds; ++r)
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], x, y);
  float sink[8];
  for (int i = 1; i < 12; ++i) acc[0] = _mm256_fmadd_ps(acc[0], acc[i], x);
  _mm256_storeu_ps(sink, acc[0]);
  volatile float keep = sink[0]; /* the loop's result is used: it cannot be removed */
  (void)keep;
  return (double)rounds * 12.0 * 8 * 2.0;
}

_Static_assert(MR * NR <= MTE_MAX_TILE, "edge tile buffer in gemm.c too small");

const mte_sgemm_kernel mte_sgemm_kernel_avx2 = {
    .isa = "avx2",
    .mr = MR,
    .nr = NR,
    .mc = 144,
    .kc = 256,
    .nc = 4096,
    .ukernel = sgemm_ukernel_avx2,
    .ukernel_half = sgemm_ukernel_avx2_half,
    .ukernel_post = sgemm_ukernel_avx2_post,
    .pack_b_trans = mte__pack_b_trans_avx2,
    .fma_peak = fma_peak_avx2,
};
#endif
