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

/* One finished row of the tile: r = alpha * acc (+ beta * old) + row bias + column bias,
 * clamped by the activation, then stored. Constant-folded to the bare store in the plain
 * kernel. */
static inline __attribute__((always_inline)) void
store_row(float *cp, float32x4_t v0, float32x4_t v1, float32x4_t v2, float alpha, float beta,
          const float *row_bias, int i, const float32x4_t cb[3], int act) {
  float32x4_t r[3] = {vmulq_n_f32(v0, alpha), vmulq_n_f32(v1, alpha), vmulq_n_f32(v2, alpha)};
  for (int v = 0; v < 3; ++v) {
    if (beta != 0.0f) r[v] = vfmaq_n_f32(r[v], vld1q_f32(cp + 4 * v), beta);
    if (row_bias) r[v] = vaddq_f32(r[v], vdupq_n_f32(row_bias[i]));
    if (cb) r[v] = vaddq_f32(r[v], cb[v]);
    if (act != MTE_ACT_NONE) r[v] = vmaxq_f32(r[v], vdupq_n_f32(0.0f));
    if (act == MTE_ACT_RELU6) r[v] = vminq_f32(r[v], vdupq_n_f32(6.0f));
    vst1q_f32(cp + 4 * v, r[v]);
  }
}

#define STORE(i) \
  store_row(c + (i) * ldc, c##i##0, c##i##1, c##i##2, alpha, beta, row_bias, i, cbp, act)

/* The tile body; the `post` variant adds row/column bias and ReLU/ReLU6 before the store. */
static inline __attribute__((always_inline)) void
ukernel_body(int64_t kc, const float *MTE_RESTRICT a, const float *MTE_RESTRICT b,
             float *MTE_RESTRICT c, int64_t ldc, float alpha, float beta, const float *row_bias,
             const float *col_bias, int act) {
  DECL(0); DECL(1); DECL(2); DECL(3); DECL(4); DECL(5); DECL(6); DECL(7);
  for (int64_t p = 0; p < kc; ++p) {
    const float32x4_t a0 = vld1q_f32(a + p * MR), a1 = vld1q_f32(a + p * MR + 4);
    const float32x4_t b0 = vld1q_f32(b + p * NR), b1 = vld1q_f32(b + p * NR + 4),
                      b2 = vld1q_f32(b + p * NR + 8);
    ROW(0, a0, 0); ROW(1, a0, 1); ROW(2, a0, 2); ROW(3, a0, 3);
    ROW(4, a1, 0); ROW(5, a1, 1); ROW(6, a1, 2); ROW(7, a1, 3);
  }
  float32x4_t cb[3];
  const float32x4_t *cbp = NULL;
  if (col_bias) {
    for (int v = 0; v < 3; ++v) cb[v] = vld1q_f32(col_bias + 4 * v);
    cbp = cb;
  }
  STORE(0); STORE(1); STORE(2); STORE(3); STORE(4); STORE(5); STORE(6); STORE(7);
}

static void sgemm_ukernel_neon(int64_t kc, const float *MTE_RESTRICT a,
                               const float *MTE_RESTRICT b, float *MTE_RESTRICT c,
                               int64_t ldc, float alpha, float beta) {
  ukernel_body(kc, a, b, c, ldc, alpha, beta, NULL, NULL, MTE_ACT_NONE);
}

static void sgemm_ukernel_neon_post(int64_t kc, const float *MTE_RESTRICT a,
                                    const float *MTE_RESTRICT b, float *MTE_RESTRICT c,
                                    int64_t ldc, float alpha, float beta,
                                    const float *row_bias, const float *col_bias, int act) {
  ukernel_body(kc, a, b, c, ldc, alpha, beta, row_bias, col_bias, act);
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
    .ukernel_post = sgemm_ukernel_neon_post,
    .pack_b_trans = mte__pack_b_trans_neon,
    .fma_peak = fma_peak_neon,
};
#endif
