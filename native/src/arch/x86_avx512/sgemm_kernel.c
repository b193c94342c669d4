/*
 * x86_avx512/sgemm_kernel.c - SGEMM microkernel for AVX-512 (Skylake-SP and later, Zen 4/5).
 *
 * Compiled with -mavx512f -mavx512bw -mavx512dq -mavx512vl -mfma; only called after cpu.c
 * has checked the CPU and OS (ZMM state) support. Tile 8 x 32: two 16-float zmm vectors
 * per row, 16 accumulators of the 32 zmm registers (enough independent FMA chains to hide
 * the 4-cycle latency on two pipes). Each step loads 2 vectors of B, broadcasts 8 values
 * of A and issues 16 FMAs.
 *
 * The sizes are macros so a tuning run can try others without editing (-DMTE_AVX512_MR=12
 * ...). Measured on a Zen 5 (bench/gemm_quick.py): 8x32, 12x32, 14x32, 16x16, 6x64 all
 * land within a few percent of each other; 8x32 with KC=256, MC=192 was at the top, and
 * leaves half the registers free for the int8 (VNNI) kernel variant.
 */
#include "../../mte_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#ifndef MTE_AVX512_MR
#define MTE_AVX512_MR 8
#endif
#ifndef MTE_AVX512_MC
#define MTE_AVX512_MC 192
#endif
#ifndef MTE_AVX512_KC
#define MTE_AVX512_KC 256
#endif
#ifndef MTE_AVX512_NC
#define MTE_AVX512_NC 4096
#endif
#define MR MTE_AVX512_MR
#ifndef MTE_AVX512_NV
#define MTE_AVX512_NV 2
#endif
#define NV MTE_AVX512_NV /* zmm vectors per row */
#define NR (16 * NV)

/* The tile body; `post` variants add row/column bias and ReLU/ReLU6 before the store
 * (constant-folded away in the plain kernel). */
static inline __attribute__((always_inline)) void
ukernel_body(int64_t kc, const float *MTE_RESTRICT a, const float *MTE_RESTRICT b,
             float *MTE_RESTRICT c, int64_t ldc, float alpha, float beta, const float *row_bias,
             const float *col_bias, int act) {
  /* C is touched only after the loop; start fetching its rows now so the misses overlap
   * with the FMAs instead of stalling the stores at the end */
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
    _mm_prefetch((const char *)(c + i * ldc + NR - 1), _MM_HINT_T0);
  }
  __m512 acc[MR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_setzero_ps();

  for (int64_t p = 0; p < kc; ++p) {
    __m512 bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = _mm512_load_ps(b + p * NR + 16 * v);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      __m512 av = _mm512_set1_ps(a[p * MR + i]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_fmadd_ps(av, bv[v], acc[i][v]);
    }
  }

  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  const __m512 zero = _mm512_setzero_ps(), six = _mm512_set1_ps(6.0f);
  __m512 cb[NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) cb[v] = col_bias ? _mm512_loadu_ps(col_bias + 16 * v) : zero;
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    const __m512 rb = row_bias ? _mm512_set1_ps(row_bias[i]) : zero;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      float *cp = c + i * ldc + 16 * v;
      __m512 r = _mm512_mul_ps(va, acc[i][v]);
      if (beta != 0.0f) r = _mm512_fmadd_ps(vb, _mm512_loadu_ps(cp), r);
      if (row_bias) r = _mm512_add_ps(r, rb);
      if (col_bias) r = _mm512_add_ps(r, cb[v]);
      if (act != MTE_ACT_NONE) r = _mm512_max_ps(zero, r); /* NaN stays NaN */
      if (act == MTE_ACT_RELU6) r = _mm512_min_ps(six, r);
      _mm512_storeu_ps(cp, r);
    }
  }
}

static void sgemm_ukernel_avx512(int64_t kc, const float *MTE_RESTRICT a,
                                 const float *MTE_RESTRICT b, float *MTE_RESTRICT c,
                                 int64_t ldc, float alpha, float beta) {
  ukernel_body(kc, a, b, c, ldc, alpha, beta, NULL, NULL, MTE_ACT_NONE);
}

static void sgemm_ukernel_avx512_post(int64_t kc, const float *MTE_RESTRICT a,
                                      const float *MTE_RESTRICT b, float *MTE_RESTRICT c,
                                      int64_t ldc, float alpha, float beta,
                                      const float *row_bias, const float *col_bias, int act) {
  ukernel_body(kc, a, b, c, ldc, alpha, beta, row_bias, col_bias, act);
}

/* The MR x 16 tile of a panel whose valid columns all lie in its first 16: one zmm per
 * row, B read with the full panel's row stride NR. */
static void sgemm_ukernel_avx512_half(int64_t kc, const float *MTE_RESTRICT a,
                                      const float *MTE_RESTRICT b, float *MTE_RESTRICT c,
                                      int64_t ldc, float alpha, float beta) {
  __m512 acc[MR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) acc[i] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kc; ++p) {
    const __m512 bv = _mm512_load_ps(b + p * NR);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
      acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(a[p * MR + i]), bv, acc[i]);
  }
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    __m512 r = _mm512_mul_ps(va, acc[i]);
    if (beta != 0.0f) r = _mm512_fmadd_ps(vb, _mm512_loadu_ps(c + i * ldc), r);
    _mm512_storeu_ps(c + i * ldc, r);
  }
}

#if MR == 8
/* The MR x 4 corner of a panel whose valid columns are its first 4 (a 14x14 image has
 * 196 = 6 x 32 + 4 columns). Vectorised down the 8 rows (one ymm per column) instead of
 * across columns, two k steps at a time so that 8 independent FMA chains hide the latency:
 * half the FMAs of the 16-wide kernel. Writes columns 0..3 of c only. */
static void sgemm_ukernel_avx512_quarter(int64_t kc, const float *MTE_RESTRICT a,
                                         const float *MTE_RESTRICT b, float *MTE_RESTRICT c,
                                         int64_t ldc, float alpha, float beta) {
  __m256 acc0[4], acc1[4];
  for (int j = 0; j < 4; ++j) acc0[j] = acc1[j] = _mm256_setzero_ps();
  int64_t p = 0;
  for (; p + 2 <= kc; p += 2) {
    const __m256 a0 = _mm256_loadu_ps(a + p * MR), a1 = _mm256_loadu_ps(a + (p + 1) * MR);
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      acc0[j] = _mm256_fmadd_ps(a0, _mm256_broadcast_ss(b + p * NR + j), acc0[j]);
      acc1[j] = _mm256_fmadd_ps(a1, _mm256_broadcast_ss(b + (p + 1) * NR + j), acc1[j]);
    }
  }
  if (p < kc) {
    const __m256 a0 = _mm256_loadu_ps(a + p * MR);
    for (int j = 0; j < 4; ++j)
      acc0[j] = _mm256_fmadd_ps(a0, _mm256_broadcast_ss(b + p * NR + j), acc0[j]);
  }
  float col[4][8];
  for (int j = 0; j < 4; ++j) _mm256_storeu_ps(col[j], _mm256_add_ps(acc0[j], acc1[j]));
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < 4; ++j)
      c[i * ldc + j] = alpha * col[j][i] + (beta != 0.0f ? beta * c[i * ldc + j] : 0.0f);
}
#endif

/* 12 independent chains of FMAs: enough to cover the FMA latency on two pipes. */
static double fma_peak_avx512(int64_t rounds) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(0.001f * (float)i);
  const __m512 x = _mm512_set1_ps(0.999f), y = _mm512_set1_ps(0.0001f);
  for (int64_t r = 0; r < rounds; ++r)
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], x, y);
  float sink[16];
  for (int i = 1; i < 12; ++i) acc[0] = _mm512_fmadd_ps(acc[0], acc[i], x);
  _mm512_storeu_ps(sink, acc[0]);
  volatile float keep = sink[0]; /* the loop's result is used: it cannot be removed */
  (void)keep;
  return (double)rounds * 12.0 * 16 * 2.0;
}

_Static_assert(MR * NR <= MTE_MAX_TILE, "edge tile buffer in gemm.c too small");

const mte_sgemm_kernel mte_sgemm_kernel_avx512 = {
    .isa = "avx512",
    .mr = MR,
    .nr = NR,
    .mc = (MTE_AVX512_MC / MR) * MR,
    .kc = MTE_AVX512_KC,
    .nc = (MTE_AVX512_NC / NR) * NR,
    .ukernel = sgemm_ukernel_avx512,
    .ukernel_half = NV == 2 ? sgemm_ukernel_avx512_half : NULL,
#if MR == 8
    .ukernel_quarter = NV == 2 ? sgemm_ukernel_avx512_quarter : NULL,
#endif
    .ukernel_post = sgemm_ukernel_avx512_post,
    .pack_b_trans = mte__pack_b_trans_avx2,
    .fma_peak = fma_peak_avx512,
#if MR == 8 /* the direct tile is 8 rows tall (sgemm_direct.c) */
    .direct = mte__direct_avx512,
    .direct_max = 49,
    .direct_plan = mte__direct_plan_avx512,
#endif
};
#endif
