/*
 * arm_neon/qgemm_kernel.c - the int8 GEMM microkernel for NEON without dot product
 * (Cortex-A72, Raspberry Pi 4): SMULL / SMLAL byte products into int16, SADALP into int32.
 *
 * Tile 4 x 8 on the shared panels (k in groups of 4, x packed signed): per two k groups
 * and weight row, the row's 4 bytes of each group broadcast (LD1R) against 2 columns x 4 k
 * values (8 bytes) of x: SMULL for group g, SMLAL for g + 1, so each int16 lane holds two
 * products; |w| <= 127 (the plan refuses -128) and |x| <= 128 give at most 2*128*127 = 32512:
 * no int16 overflow. SADALP then adds adjacent int16 pairs into 4 int32 lanes: 2 partial
 * sums per column, added pairwise (ADDP) once after the k loop. 16 int32 accumulators.
 * The tile is requantized in registers (mte_qrequant_neon.h).
 */
#include "../../mte_quant_internal.h"

#if defined(__aarch64__)
#include "../../mte_qrequant_neon.h"

#define MR 4
#define NR 8

/* acc[i][q]: row i, columns 2q and 2q + 1, two partial sums each */
#define ROW(i)                                                                             \
  do {                                                                                     \
    const int8x16_t w0 = vreinterpretq_s8_s32(vld1q_dup_s32((const int32_t *)(a + 4 * i))); \
    const int8x16_t w1 =                                                                   \
        vreinterpretq_s8_s32(vld1q_dup_s32((const int32_t *)(a + MR * 4 + 4 * i)));        \
    const int8x8_t w0l = vget_low_s8(w0), w1l = vget_low_s8(w1);                           \
    acc[i][0] = vpadalq_s16(acc[i][0], vmlal_s8(vmull_s8(vget_low_s8(b00), w0l), vget_low_s8(b10), w1l)); \
    acc[i][1] = vpadalq_s16(acc[i][1], vmlal_high_s8(vmull_high_s8(b00, w0), b10, w1));  \
    acc[i][2] = vpadalq_s16(acc[i][2], vmlal_s8(vmull_s8(vget_low_s8(b01), w0l), vget_low_s8(b11), w1l)); \
    acc[i][3] = vpadalq_s16(acc[i][3], vmlal_high_s8(vmull_high_s8(b01, w0), b11, w1));  \
  } while (0)

/* the last group when kg is odd: products of one group only */
#define ROW1(i)                                                                            \
  do {                                                                                     \
    const int8x16_t w0 = vreinterpretq_s8_s32(vld1q_dup_s32((const int32_t *)(a + 4 * i))); \
    acc[i][0] = vpadalq_s16(acc[i][0], vmull_s8(vget_low_s8(b00), vget_low_s8(w0)));       \
    acc[i][1] = vpadalq_s16(acc[i][1], vmull_high_s8(b00, w0));                            \
    acc[i][2] = vpadalq_s16(acc[i][2], vmull_s8(vget_low_s8(b01), vget_low_s8(w0)));       \
    acc[i][3] = vpadalq_s16(acc[i][3], vmull_high_s8(b01, w0));                            \
  } while (0)

static void qgemm_ukernel_neon(const mte_qtile *t) {
  int32x4_t acc[MR][4];
  for (int i = 0; i < MR; ++i)
    for (int q = 0; q < 4; ++q) acc[i][q] = vdupq_n_s32(0);
  const int8_t *a = t->a;
  const int8_t *b = (const int8_t *)t->b;
  int64_t g = 0;
  for (; g + 2 <= t->kg; g += 2, a += 2 * MR * 4, b += 2 * NR * 4) {
    const int8x16_t b00 = vld1q_s8(b), b01 = vld1q_s8(b + 16);      /* group g */
    const int8x16_t b10 = vld1q_s8(b + 32), b11 = vld1q_s8(b + 48); /* group g + 1 */
    ROW(0);
    ROW(1);
    ROW(2);
    ROW(3);
  }
  if (g < t->kg) {
    const int8x16_t b00 = vld1q_s8(b), b01 = vld1q_s8(b + 16);
    ROW1(0);
    ROW1(1);
    ROW1(2);
    ROW1(3);
  }
  int8_t tmp[MR * NR];
  for (int i = 0; i < MR; ++i) {
    const int32x4_t c0 = vpaddq_s32(acc[i][0], acc[i][1]), c1 = vpaddq_s32(acc[i][2], acc[i][3]);
    const mte_qchan *ch = &t->chan[i];
    mte__qrow_store_neon(t, i, mte__pack8_neon(mte__requant_neon(c0, ch, t->zp, t->lo, t->hi),
                                               mte__requant_neon(c1, ch, t->zp, t->lo, t->hi)),
                         tmp);
  }
  mte__qtile_flush_neon(t, tmp);
}

/* int8 ops of `rounds` rounds of 8 independent SMULL + SMLAL + SADALP chains */
static double qgemm_peak_neon(int64_t rounds) {
  int32x4_t acc[8];
  for (int i = 0; i < 8; ++i) acc[i] = vdupq_n_s32(i);
  int8x8_t x = vdup_n_s8(3), y = vdup_n_s8(-2);
  for (int64_t r = 0; r < rounds; ++r) {
    __asm__ volatile("" : "+w"(x), "+w"(y));
    for (int i = 0; i < 8; ++i) acc[i] = vpadalq_s16(acc[i], vmlal_s8(vmull_s8(x, y), y, x));
  }
  for (int i = 1; i < 8; ++i) acc[0] = vaddq_s32(acc[0], acc[i]);
  volatile int32_t keep = vgetq_lane_s32(acc[0], 0);
  (void)keep;
  return (double)rounds * 8.0 * 16 * 2.0;
}

const mte_qgemm_kernel mte_qgemm_kernel_neon = {
    .isa = "neon", .mr = MR, .nr = NR, .x_offset = 0, .ukernel = qgemm_ukernel_neon,
    .dot_peak = qgemm_peak_neon};
#endif
