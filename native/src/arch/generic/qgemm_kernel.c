/*
 * generic/qgemm_kernel.c - the portable int8 GEMM microkernel (mte_quant_internal.h).
 *
 * A 4 x 16 tile of int32 accumulators: per group of 4 k values, each of the 4 weight rows
 * (4 bytes) times each of the 16 packed x columns (4 bytes), summed into the lane. x is
 * packed signed (x_offset 0). Plain C the compiler vectorises (SSE2 / NEON); the tile is
 * then requantized and stored by the scalar epilogue of mte_quant_internal.h.
 */
#include "../../mte_quant_internal.h"

#define MR 4
#define NR 16

static void qgemm_ukernel_generic(const mte_qtile *t) {
  int32_t acc[MR * NR] = {0};
  const int8_t *a = t->a;
  const int8_t *b = (const int8_t *)t->b;
  for (int64_t g = 0; g < t->kg; ++g, a += MR * 4, b += NR * 4)
    for (int i = 0; i < MR; ++i)
      for (int j = 0; j < NR; ++j)
        acc[i * NR + j] += a[i * 4 + 0] * b[j * 4 + 0] + a[i * 4 + 1] * b[j * 4 + 1] +
                           a[i * 4 + 2] * b[j * 4 + 2] + a[i * 4 + 3] * b[j * 4 + 3];
  mte__qtile_store_scalar(t, acc, NR);
}

const mte_qgemm_kernel mte_qgemm_kernel_generic = {
    .isa = "generic", .mr = MR, .nr = NR, .x_offset = 0, .ukernel = qgemm_ukernel_generic};
