/*
 * arm_neon/qdepthwise.c - one output row of the int8 depthwise 3x3 (mte_qdw_row) on NEON,
 * stride 1 and 2 alike (the pair rows hide the stride): 8 outputs per step. LD2 splits 8
 * int16 pairs into tap 0 and tap 1 vectors (and, `off` pairs on, tap 2); each is widened
 * and multiply-added into two int32x4 by its weight (SMLAL by scalar); then the
 * requantization in registers. A partial last step goes through 8 bytes on the stack.
 */
#include <string.h>

#include "../../mte_quant_internal.h"

#if defined(__aarch64__)
#include "../../mte_qrequant_neon.h"

static void qdw_row_neon(const mte_qdw_row *r) {
  int16_t w[3][3];
  for (int i = 0; i < 3; ++i) {
    w[i][0] = (int16_t)(r->w01[i] & 0xffff);
    w[i][1] = (int16_t)((uint32_t)r->w01[i] >> 16);
    w[i][2] = (int16_t)(r->w2[i] & 0xffff);
  }
  const int o = 2 * r->off;
  const mte_qchan ch = *r->chan; /* a local: the byte stores below cannot alias it */
  for (int64_t s = 0; s < r->wo; s += 8) {
    int32x4_t lo = vdupq_n_s32(0), hi = vdupq_n_s32(0);
    for (int i = 0; i < 3; ++i) {
      const int16_t *q = r->q[i] + 2 * s;
      const int16x8x2_t p = vld2q_s16(q);      /* taps 0, 1 of outputs s .. s + 7 */
      const int16x8_t p2 = vld2q_s16(q + o).val[0]; /* tap 2 */
      lo = vmlal_n_s16(lo, vget_low_s16(p.val[0]), w[i][0]);
      hi = vmlal_high_n_s16(hi, p.val[0], w[i][0]);
      lo = vmlal_n_s16(lo, vget_low_s16(p.val[1]), w[i][1]);
      hi = vmlal_high_n_s16(hi, p.val[1], w[i][1]);
      lo = vmlal_n_s16(lo, vget_low_s16(p2), w[i][2]);
      hi = vmlal_high_n_s16(hi, p2, w[i][2]);
    }
    const int8x8_t y = mte__pack8_neon(mte__requant_neon(lo, &ch, r->zp, r->lo, r->hi),
                                       mte__requant_neon(hi, &ch, r->zp, r->lo, r->hi));
    if (r->wo - s >= 8) {
      vst1_s8(r->y + s, y);
    } else {
      int8_t tmp[8];
      vst1_s8(tmp, y);
      memcpy(r->y + s, tmp, (size_t)(r->wo - s));
    }
  }
}

const mte_qdw_kernel mte_qdw_kernel_neon = {.isa = "neon", .row = qdw_row_neon};
#endif
