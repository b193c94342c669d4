/*
 * generic/qelem.c - the qelem family without vectors: quantize, lookup and max_row are the
 * portable loops of quant.c / qpool.c (NULL), the GEMV a plain C loop over the panels
 * (mte_qelem_internal.h) that the compiler vectorises.
 */
#include "../../mte_qelem_internal.h"

void mte__qgemv_generic(int64_t panels, int64_t kg, const int8_t *w, const int32_t *wsum,
                        const int8_t *x, int32_t *acc) {
  (void)wsum; /* x is signed here: no compensation */
  for (int64_t p = 0; p < panels; ++p) {
    int32_t a[MTE_QGEMV_MR] = {0};
    const int8_t *panel = w + p * kg * MTE_QGEMV_MR * 4;
    for (int64_t g = 0; g < kg; ++g)
      for (int i = 0; i < MTE_QGEMV_MR; ++i)
        for (int t = 0; t < 4; ++t)
          a[i] += (int32_t)panel[(g * MTE_QGEMV_MR + i) * 4 + t] * (int32_t)x[4 * g + t];
    for (int i = 0; i < MTE_QGEMV_MR; ++i) acc[p * MTE_QGEMV_MR + i] = a[i];
  }
}

const mte_qelem_kernel mte_qelem_kernel_generic = {
    .isa = "generic", .quantize = NULL, .lookup = NULL, .add = NULL, .max_row = NULL,
    .gemv = mte__qgemv_generic};
