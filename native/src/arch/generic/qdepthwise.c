/*
 * generic/qdepthwise.c - one output row of the int8 depthwise 3x3 (mte_qdw_row), portable:
 * per output s, three int16 pair multiply-adds (taps 0 and 1 of a row) and three single
 * ones (tap 2, `off` pairs on), then the scalar requantization.
 */
#include "../../mte_quant_internal.h"

static void qdw_row_generic(const mte_qdw_row *r) {
  int16_t w[3][3];
  for (int i = 0; i < 3; ++i) {
    w[i][0] = (int16_t)(r->w01[i] & 0xffff);
    w[i][1] = (int16_t)((uint32_t)r->w01[i] >> 16);
    w[i][2] = (int16_t)(r->w2[i] & 0xffff);
  }
  const int o = 2 * r->off;
  for (int64_t s = 0; s < r->wo; ++s) {
    int32_t acc = 0;
    for (int i = 0; i < 3; ++i) {
      const int16_t *q = r->q[i] + 2 * s;
      acc += q[0] * w[i][0] + q[1] * w[i][1] + q[o] * w[i][2];
    }
    r->y[s] = mte__requant(acc, r->chan, r->zp, r->lo, r->hi);
  }
}

const mte_qdw_kernel mte_qdw_kernel_generic = {.isa = "generic", .row = qdw_row_generic};
