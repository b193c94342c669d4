/*
 * arm_dotprod/qgemm_kernel.c - the int8 GEMM microkernel for NEON with the dot product
 * (Armv8.2 SDOT, Cortex-A55/A76 and up; compiled with -march=armv8.2-a+dotprod, reached only
 * through the "neondot" row, which needs MTE_CPU_ARM_DOTPROD).
 *
 * Tile 8 x 8 on the shared panels (k in groups of 4, x packed signed): per k group, SDOT
 * (by element) adds the 4 byte products of one weight row (a 32-bit lane of the 16-byte
 * weight vector, rows 0-3 and 4-7) and 4 columns of x (16 bytes) into 4 int32 lanes, exact.
 * 16 int32 accumulators, 2 x and 2 weight vectors; requantized in registers.
 */
#include "../../mte_quant_internal.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)
#include "../../mte_qrequant_neon.h"

#define MR 8
#define NR 8

#define DOT(i, w, lane)                                       \
  do {                                                        \
    acc[i][0] = vdotq_laneq_s32(acc[i][0], b0, w, lane);      \
    acc[i][1] = vdotq_laneq_s32(acc[i][1], b1, w, lane);      \
  } while (0)

static void qgemm_ukernel_neondot(const mte_qtile *t) {
  int32x4_t acc[MR][2];
  for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = vdupq_n_s32(0);
  const int8_t *a = t->a;
  const int8_t *b = (const int8_t *)t->b;
  for (int64_t g = 0; g < t->kg; ++g, a += MR * 4, b += NR * 4) {
    const int8x16_t b0 = vld1q_s8(b), b1 = vld1q_s8(b + 16);
    const int8x16_t w0 = vld1q_s8(a), w1 = vld1q_s8(a + 16);
    DOT(0, w0, 0);
    DOT(1, w0, 1);
    DOT(2, w0, 2);
    DOT(3, w0, 3);
    DOT(4, w1, 0);
    DOT(5, w1, 1);
    DOT(6, w1, 2);
    DOT(7, w1, 3);
  }
  int8_t tmp[MR * NR];
  for (int i = 0; i < MR; ++i) {
    const mte_qchan *ch = &t->chan[i];
    mte__qrow_store_neon(t, i,
                         mte__pack8_neon(mte__requant_neon(acc[i][0], ch, t->zp, t->lo, t->hi),
                                         mte__requant_neon(acc[i][1], ch, t->zp, t->lo, t->hi)),
                         tmp);
  }
  mte__qtile_flush_neon(t, tmp);
}

/* int8 ops of `rounds` rounds of 12 independent SDOT chains */
static double qgemm_peak_neondot(int64_t rounds) {
  int32x4_t acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = vdupq_n_s32(i);
  int8x16_t x = vdupq_n_s8(3), y = vdupq_n_s8(-2);
  for (int64_t r = 0; r < rounds; ++r) {
    __asm__ volatile("" : "+w"(x), "+w"(y));
    for (int i = 0; i < 12; ++i) acc[i] = vdotq_s32(acc[i], x, y);
  }
  for (int i = 1; i < 12; ++i) acc[0] = vaddq_s32(acc[0], acc[i]);
  volatile int32_t keep = vgetq_lane_s32(acc[0], 0);
  (void)keep;
  return (double)rounds * 12.0 * 16 * 2.0;
}

const mte_qgemm_kernel mte_qgemm_kernel_neondot = {
    .isa = "neondot", .mr = MR, .nr = NR, .x_offset = 0, .ukernel = qgemm_ukernel_neondot,
    .dot_peak = qgemm_peak_neondot};
#endif
