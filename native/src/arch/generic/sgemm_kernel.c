/*
 * generic/sgemm_kernel.c - the portable SGEMM microkernel (plain C, any CPU).
 *
 * This is the reference for every ISA-specific kernel: an MR x NR tile of C is kept in a
 * local array (which the compiler maps to registers and, at -O3, to whatever vector unit
 * the baseline ISA has, e.g. SSE2 on x86-64), and each step p of the packed panels adds
 * the outer product a[p, 0:MR] x b[p, 0:NR]. 4 x 8 keeps the tile within the 16 vector
 * registers of the smallest targets we care about.
 */
#include "../../mte_internal.h"

#define MR 4
#define NR 8

static void sgemm_ukernel_generic(int64_t kc, const float *MTE_RESTRICT a,
                                  const float *MTE_RESTRICT b, float *MTE_RESTRICT c,
                                  int64_t ldc, float alpha, float beta) {
  float acc[MR][NR] = {{0.0f}};
  for (int64_t p = 0; p < kc; ++p) {
    const float *ap = a + p * MR;
    const float *bp = b + p * NR;
    for (int i = 0; i < MR; ++i)
      for (int j = 0; j < NR; ++j) acc[i][j] += ap[i] * bp[j];
  }
  for (int i = 0; i < MR; ++i) {
    float *ci = c + i * ldc;
    if (beta == 0.0f)
      for (int j = 0; j < NR; ++j) ci[j] = alpha * acc[i][j];
    else
      for (int j = 0; j < NR; ++j) ci[j] = alpha * acc[i][j] + beta * ci[j];
  }
}

/* 12 independent scalar chains (the compiler may vectorise them at the baseline width). */
static double fma_peak_generic(int64_t rounds) {
  float acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = 0.001f * (float)i;
  for (int64_t r = 0; r < rounds; ++r)
    for (int i = 0; i < 12; ++i) acc[i] = acc[i] * 0.999f + 0.0001f;
  volatile float keep = acc[0] + acc[11]; /* the loop's result is used */
  (void)keep;
  return (double)rounds * 12.0 * 2.0;
}

_Static_assert(MR * NR <= MTE_MAX_TILE, "edge tile buffer in gemm.c too small");

const mte_sgemm_kernel mte_sgemm_kernel_generic = {
    .isa = "generic",
    .mr = MR,
    .nr = NR,
    .mc = 128,
    .kc = 256,
    .nc = 2048,
    .ukernel = sgemm_ukernel_generic,
    .fma_peak = fma_peak_generic,
};
