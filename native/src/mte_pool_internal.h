/*
 * mte_pool_internal.h - the pool family: per-ISA pooling row kernels (not installed).
 */
#ifndef MTE_POOL_INTERNAL_H
#define MTE_POOL_INTERNAL_H

#include "mte_internal.h"

/*
 * Row kernels (pool.c owns everything else): `count` outputs of one output row whose
 * kh x kw windows (dilation 1, column stride sw = 1 or 2) lie entirely inside the plane;
 * output s has its window's top-left tap at x[h0*W + w0 + s*sw].
 *   max: y[s] = the maximum (PyTorch's scan: the first maximum wins ties, the last NaN
 *        wins), ind[s] = its flat index (h0+i)*W + w0 + s*sw + j. Needs kh*W < 2^31.
 *   avg: y[s] = (sum of the taps in row-major order, from 0) / div.
 * Each returns how many outputs it did (a prefix); pool.c does the rest. NULL = none.
 */
typedef int64_t (*mte_maxpool_row_fn)(const float *x, int64_t W, int64_t h0, int64_t w0,
                                      int64_t kh, int64_t kw, int64_t sw, int64_t count,
                                      float *y, int64_t *ind);
typedef int64_t (*mte_avgpool_row_fn)(const float *x, int64_t W, int64_t h0, int64_t w0,
                                      int64_t kh, int64_t kw, int64_t sw, int64_t count,
                                      float div, float *y);

/*
 * Max pooling without indices, a whole output row, borders included: y[s] for s < Wo is the
 * maximum over rows h0 + i (i in [i_lo, i_hi), all inside the plane) and columns
 * s*sw - pw + j (j < kw) that lie in [0, W) (dilation 1, sw = 1 or 2), with PyTorch's value
 * (a NaN tap gives the last NaN; -inf when no column is inside). NULL = none.
 */
typedef void (*mte_maxpool_values_fn)(const float *x, int64_t W, int64_t h0, int64_t i_lo,
                                      int64_t i_hi, int64_t kw, int64_t sw, int64_t pw,
                                      int64_t Wo, float *y);

/* the pool family's descriptor (a column of cpu.c's ISA table) */
typedef struct mte_pool_kernel {
  const char *isa;
  mte_maxpool_row_fn max_row;
  mte_avgpool_row_fn avg_row;
  mte_maxpool_values_fn max_row_values;
} mte_pool_kernel;

/* generic: no row kernels (NULL), pool.c's portable loops do every output */
extern const mte_pool_kernel mte_pool_kernel_generic;
#if defined(MTE_HAVE_X86_KERNELS)
extern const mte_pool_kernel mte_pool_kernel_avx2;
extern const mte_pool_kernel mte_pool_kernel_avx512;
#endif
#if defined(MTE_HAVE_NEON_KERNELS)
extern const mte_pool_kernel mte_pool_kernel_neon;
#endif

#endif /* MTE_POOL_INTERNAL_H */
