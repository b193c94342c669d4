/*
 * generic/qdepthwise.c - one plane of the int8 depthwise 3x3 as a flat row (mte_qdw_plane),
 * portable: widen the plane, per flat output the 9 int16 taps and the scalar requantization,
 * copy the real columns out. The reference the SIMD kernels are tested against.
 */
#include "../../mte_quant_internal.h"

static void qdw_plane_generic(const mte_qdw_plane *a) {
  const int64_t cols = mte__qdw_cols(a);
  for (int64_t h = 0; h < a->H; ++h) {
    int16_t *dst = mte__qdw_dst_row(a, h);
    if (dst)
      for (int64_t c = 0; c < cols; ++c) dst[c] = (int16_t)(a->x[h * a->W + c] - a->x_zp);
  }
  for (int64_t g = 0; g < a->n; ++g) {
    int32_t acc = 0;
    for (int i = 0; i < 3; ++i) {
      const int16_t *q = a->p + a->off[i] + a->sw * g;
      for (int j = 0; j < 3; ++j) acc += q[j] * a->w[3 * i + j];
    }
    a->line[g] = mte__requant(acc, a->chan, a->zp, a->lo, a->hi);
  }
  for (int64_t r = 0; r < a->Ho; ++r)
    for (int64_t c = 0; c < a->Wo; ++c) a->y[r * a->Wo + c] = a->line[r * a->pitch + c];
}

const mte_qdw_kernel mte_qdw_kernel_generic = {.isa = "generic", .plane = qdw_plane_generic};
