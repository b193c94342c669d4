/*
 * arm_neon/sgemm_kernel.c - SGEMM microkernel for AArch64 Advanced SIMD (NEON), e.g. the
 * Cortex-A72 of a Raspberry Pi 4 or the A76 of a Pi 5.
 *
 * Compiled only for aarch64, where NEON is always present. Tile 8 x 12: 12 columns are
 * three 4-float q vectors, so the tile is 24 accumulators of the 32 q registers; each step
 * loads 2 vectors of A (8 rows) and 3 of B and issues 24 FMAs by lane
 * (vfmaq_laneq_f32: acc += b * a[lane]), which needs no separate broadcasts.
 */
#include "../../mte_internal.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#define MR 8
#define NR 12

/* one row i of the tile: acc[i][0..2] += b[0..2] * a_vec[lane] */
#define ROW(i, avec, lane)                                  \
  c##i##0 = vfmaq_laneq_f32(c##i##0, b0, avec, lane);       \
  c##i##1 = vfmaq_laneq_f32(c##i##1, b1, avec, lane);       \
  c##i##2 = vfmaq_laneq_f32(c##i##2, b2, avec, lane)

#define DECL(i)                                                        \
  float32x4_t c##i##0 = vdupq_n_f32(0.0f), c##i##1 = vdupq_n_f32(0.0f), \
              c##i##2 = vdupq_n_f32(0.0f)

#define STORE(i)                                                                   \
  do {                                                                             \
    float *cp = c + (i) * ldc;                                                     \
    if (beta == 0.0f) {                                                            \
      vst1q_f32(cp + 0, vmulq_n_f32(c##i##0, alpha));                              \
      vst1q_f32(cp + 4, vmulq_n_f32(c##i##1, alpha));                              \
      vst1q_f32(cp + 8, vmulq_n_f32(c##i##2, alpha));                              \
    } else {                                                                       \
      vst1q_f32(cp + 0, vfmaq_n_f32(vmulq_n_f32(vld1q_f32(cp + 0), beta), c##i##0, alpha)); \
      vst1q_f32(cp + 4, vfmaq_n_f32(vmulq_n_f32(vld1q_f32(cp + 4), beta), c##i##1, alpha)); \
      vst1q_f32(cp + 8, vfmaq_n_f32(vmulq_n_f32(vld1q_f32(cp + 8), beta), c##i##2, alpha)); \
    }                                                                              \
  } while (0)

static void sgemm_ukernel_neon(int64_t kc, const float *MTE_RESTRICT a,
                               const float *MTE_RESTRICT b, float *MTE_RESTRICT c,
                               int64_t ldc, float alpha, float beta) {
  DECL(0); DECL(1); DECL(2); DECL(3); DECL(4); DECL(5); DECL(6); DECL(7);
  for (int64_t p = 0; p < kc; ++p) {
    const float32x4_t a0 = vld1q_f32(a + p * MR), a1 = vld1q_f32(a + p * MR + 4);
    const float32x4_t b0 = vld1q_f32(b + p * NR), b1 = vld1q_f32(b + p * NR + 4),
                      b2 = vld1q_f32(b + p * NR + 8);
    ROW(0, a0, 0); ROW(1, a0, 1); ROW(2, a0, 2); ROW(3, a0, 3);
    ROW(4, a1, 0); ROW(5, a1, 1); ROW(6, a1, 2); ROW(7, a1, 3);
  }
  STORE(0); STORE(1); STORE(2); STORE(3); STORE(4); STORE(5); STORE(6); STORE(7);
}

/* 12 independent chains of FMAs: enough to cover the FMA latency on two pipes. */
static double fma_peak_neon(int64_t rounds) {
  float32x4_t acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = vdupq_n_f32(0.001f * (float)i);
  const float32x4_t x = vdupq_n_f32(0.999f), y = vdupq_n_f32(0.0001f);
  for (int64_t r = 0; r < rounds; ++r)
    for (int i = 0; i < 12; ++i) acc[i] = vfmaq_f32(y, acc[i], x);
  float sink[4];
  for (int i = 1; i < 12; ++i) acc[0] = vfmaq_f32(acc[0], acc[i], x);
  vst1q_f32(sink, acc[0]);
  volatile float keep = sink[0]; /* the loop's result is used: it cannot be removed */
  (void)keep;
  return (double)rounds * 12.0 * 4 * 2.0;
}

_Static_assert(MR * NR <= MTE_MAX_TILE, "edge tile buffer in gemm.c too small");

const mte_sgemm_kernel mte_sgemm_kernel_neon = {
    .isa = "neon",
    .mr = MR,
    .nr = NR,
    .mc = 120,  /* A block 120 x 256 floats = 120 KiB: half the 1 MiB L2 shared by 4 cores */
    .kc = 256,  /* B micro-panel 256 x 12 floats = 12 KiB of the 32 KiB L1 */
    .nc = 3072,
    .ukernel = sgemm_ukernel_neon,
    .fma_peak = fma_peak_neon,
};
#endif
