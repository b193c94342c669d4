/*
 * arm_neon/bf16_kernel.c - the "bf16" family on AArch64: a BFDOT microkernel where the
 * CPU has FEAT_BF16 (Armv8.6; Linux reports it as HWCAP2_BF16), else widening.
 *
 * BFDOT (vbfdotq_laneq_f32) multiplies the four bf16 pairs of one register by one pair
 * broadcast from a lane of another and adds both products of each pair into a float32
 * lane. Tile 8 x 12 as the float32 kernel's: per k pair, three registers of B pairs
 * (12 columns), two registers holding the 8 rows' A pairs, 24 BFDOTs into 24 accumulators.
 * The BFDOT functions carry target("arch=armv8.2-a+bf16") and run only behind the HWCAP2
 * check (`needs`, mte__bf16_kernel); the rest is baseline NEON: bf16 widening by a shift
 * (SHLL), fp16 by FCVTL / FCVTN (round to nearest even, the default FPCR mode), bf16
 * narrowing by the integer round-to-nearest-even of the generic code.
 */
#include "../../mte_bf16_internal.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#define MR 8
#define NV 3 /* q registers of pairs per row: 12 columns */
#define NR (4 * NV)

static void bf16_to_f32(const uint16_t *MTE_RESTRICT s, float *MTE_RESTRICT d, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    vst1q_f32(d + i, vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(s + i), 16)));
  mte__bf16_to_f32_c(s + i, d + i, n - i);
}

static void f16_to_f32(const uint16_t *MTE_RESTRICT s, float *MTE_RESTRICT d, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    vst1q_f32(d + i, vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(s + i))));
  mte__f16_to_f32_c(s + i, d + i, n - i);
}

static void f32_to_bf16(const float *MTE_RESTRICT s, uint16_t *MTE_RESTRICT d, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t x = vld1q_f32(s + i);
    const uint32x4_t u = vreinterpretq_u32_f32(x);
    const uint32x4_t lsb = vandq_u32(vshrq_n_u32(u, 16), vdupq_n_u32(1));
    uint32x4_t r = vaddq_u32(u, vaddq_u32(lsb, vdupq_n_u32(0x7fff)));
    const uint32x4_t ordered = vceqq_f32(x, x); /* all ones unless NaN */
    r = vbslq_u32(ordered, r, vorrq_u32(u, vdupq_n_u32(0x400000)));
    vst1_u16(d + i, vshrn_n_u32(r, 16));
  }
  mte__f32_to_bf16_c(s + i, d + i, n - i);
}

static void f32_to_f16(const float *MTE_RESTRICT s, uint16_t *MTE_RESTRICT d, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    vst1_u16(d + i, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(s + i))));
  mte__f32_to_f16_c(s + i, d + i, n - i);
}

#define BF16_TARGET __attribute__((target("arch=armv8.2-a+bf16")))

/* the MR x NR tile of pair panels (mte_bf16_dot_fn) */
BF16_TARGET static void dot_ukernel(int64_t kq, const uint32_t *MTE_RESTRICT a,
                                    const uint32_t *MTE_RESTRICT b, float *MTE_RESTRICT c,
                                    int64_t ldc, float alpha, float beta) {
  float32x4_t acc[MR][NV];
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v) acc[i][v] = vdupq_n_f32(0.0f);
  for (int64_t q = 0; q < kq; ++q) {
    bfloat16x8_t bv[NV];
    for (int v = 0; v < NV; ++v)
      bv[v] = vreinterpretq_bf16_u32(vld1q_u32(b + q * NR + 4 * v));
    const bfloat16x8_t a0 = vreinterpretq_bf16_u32(vld1q_u32(a + q * MR));
    const bfloat16x8_t a1 = vreinterpretq_bf16_u32(vld1q_u32(a + q * MR + 4));
    for (int v = 0; v < NV; ++v) {
      acc[0][v] = vbfdotq_laneq_f32(acc[0][v], bv[v], a0, 0);
      acc[1][v] = vbfdotq_laneq_f32(acc[1][v], bv[v], a0, 1);
      acc[2][v] = vbfdotq_laneq_f32(acc[2][v], bv[v], a0, 2);
      acc[3][v] = vbfdotq_laneq_f32(acc[3][v], bv[v], a0, 3);
      acc[4][v] = vbfdotq_laneq_f32(acc[4][v], bv[v], a1, 0);
      acc[5][v] = vbfdotq_laneq_f32(acc[5][v], bv[v], a1, 1);
      acc[6][v] = vbfdotq_laneq_f32(acc[6][v], bv[v], a1, 2);
      acc[7][v] = vbfdotq_laneq_f32(acc[7][v], bv[v], a1, 3);
    }
  }
  const float32x4_t vb = vdupq_n_f32(beta);
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v) {
      float *cp = c + i * ldc + 4 * v;
      float32x4_t r = vmulq_n_f32(acc[i][v], alpha);
      if (beta != 0.0f) r = vfmaq_f32(r, vb, vld1q_f32(cp));
      vst1q_f32(cp, r);
    }
}

/* 12 independent BFDOT chains, nothing loaded */
BF16_TARGET static double dot_peak(int64_t rounds) {
  float32x4_t acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = vdupq_n_f32(0.001f * (float)i);
  const bfloat16x8_t x = vreinterpretq_bf16_u32(vdupq_n_u32(0x3f7f3f7fu));
  const bfloat16x8_t y = vreinterpretq_bf16_u32(vdupq_n_u32(0x38d138d1u));
  for (int64_t r = 0; r < rounds; ++r)
    for (int i = 0; i < 12; ++i) acc[i] = vbfdotq_f32(acc[i], x, y);
  for (int i = 1; i < 12; ++i) acc[0] = vaddq_f32(acc[0], acc[i]);
  volatile float keep = vgetq_lane_f32(acc[0], 0);
  (void)keep;
  return (double)rounds * 12.0 * 4 * 2 * 2.0; /* 4 lanes x 2 products x (mul + add) */
}

_Static_assert(MR * NR <= MTE_MAX_TILE, "edge tile buffer in gemm_bf16.c too small");

static const mte_bf16_kernel neon_widen = {
    .isa = "neon",
    .path = "neon widen+sgemm",
    .bf16_to_f32 = bf16_to_f32,
    .f16_to_f32 = f16_to_f32,
    .f32_to_bf16 = f32_to_bf16,
    .f32_to_f16 = f32_to_f16,
};

const mte_bf16_kernel mte_bf16_kernel_neon = {
    .isa = "neon",
    .path = "neon_bf16 bfdot",
    .needs = MTE_CPU_ARM_BF16,
    .fallback = &neon_widen,
    .bf16_to_f32 = bf16_to_f32,
    .f16_to_f32 = f16_to_f32,
    .f32_to_bf16 = f32_to_bf16,
    .f32_to_f16 = f32_to_f16,
    .dot = dot_ukernel,
    .mr = MR,
    .nr = NR,
    .mc = 120,
    .kc = 512,
    .nc = 3072,
    .dot_peak = dot_peak,
};
#endif
