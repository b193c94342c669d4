/*
 * mte_depthwise_internal.h - the per-ISA depthwise 3x3 plane kernels and pooling row
 * kernels (not installed).
 *
 * depthwise.c owns validation, threads, scratch memory and dispatch; an ISA file only
 * computes one (H, W) plane:
 *
 *     y[r][s] = act(bias + sum_{i,j} w9[3i+j] * x[r*stride + i - 1][s*stride + j - 1])
 *
 * with zeros outside the plane. Rows outside the plane are read from `zeros` (a buffer
 * of at least W + 64 zero floats), so the kernels only handle the left/right borders.
 * Ho = (H-1)/stride + 1, Wo = (W-1)/stride + 1, H, W >= 1. x and y never overlap.
 */
#ifndef MTE_DEPTHWISE_INTERNAL_H
#define MTE_DEPTHWISE_INTERNAL_H

#include "mte_internal.h"

typedef void (*mte_dw3x3_plane_fn)(const float *MTE_RESTRICT x, int64_t H, int64_t W,
                                   const float *w9, float bias, int act,
                                   const float *zeros, float *MTE_RESTRICT y);

/*
 * Weight gradient of one plane: gw9[3i+j] = sum_{r,s} gy[r][s] * x[r*stride+i-1][s*stride+j-1]
 * (zeros outside x), for gy (Ho, Wo) and x (H, W); `zeros` as above. Summed in float over
 * the plane; depthwise.c adds the planes of a channel in double.
 */
typedef void (*mte_dw3x3_wgrad_fn)(const float *gy, const float *x, int64_t H, int64_t W,
                                   const float *zeros, float *gw9);

/* Input gradient of one plane at stride 2: gx (H, W) from gy (Ho, Wo), overwritten. (At
 * stride 1 it is the forward kernel with the taps turned by 180 degrees.) */
typedef void (*mte_dw3x3_bwd_fn)(const float *MTE_RESTRICT gy, int64_t H, int64_t W,
                                 const float *w9, float *MTE_RESTRICT gx);

typedef struct mte_dw3x3_kernel {
  const char *isa;
  mte_dw3x3_plane_fn stride1, stride2;
  mte_dw3x3_wgrad_fn wgrad1, wgrad2;
  mte_dw3x3_bwd_fn bwd_input2;
} mte_dw3x3_kernel;

/* zero floats past W that `zeros` must hold (vector over-reach of the last block) */
#define MTE_DW_ZERO_PAD 64

extern const mte_dw3x3_kernel mte_dw3x3_kernel_generic;
#if defined(MTE_HAVE_X86_KERNELS)
extern const mte_dw3x3_kernel mte_dw3x3_kernel_avx2;
extern const mte_dw3x3_kernel mte_dw3x3_kernel_avx512;
#endif
#if defined(MTE_HAVE_NEON_KERNELS)
extern const mte_dw3x3_kernel mte_dw3x3_kernel_neon;
#endif

/*
 * Pooling row kernels (pool.c owns everything else): `count` outputs of one output row
 * whose kh x kw windows (dilation 1, column stride sw = 1 or 2) lie entirely inside the
 * plane; output s has its window's top-left tap at x[h0*W + w0 + s*sw].
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
typedef struct mte_pool_kernel {
  const char *isa;
  mte_maxpool_row_fn max_row;
  mte_avgpool_row_fn avg_row;
} mte_pool_kernel;

#if defined(MTE_HAVE_X86_KERNELS)
extern const mte_pool_kernel mte_pool_kernel_avx2;
extern const mte_pool_kernel mte_pool_kernel_avx512;
#endif
#if defined(MTE_HAVE_NEON_KERNELS)
extern const mte_pool_kernel mte_pool_kernel_neon;
#endif

/* the activation, scalar (used by every ISA for edge lanes) */
static inline float mte__dw_act(float v, int act) {
  if (act == MTE_ACT_RELU) return v > 0.0f ? v : 0.0f;
  if (act == MTE_ACT_RELU6) return v > 0.0f ? (v < 6.0f ? v : 6.0f) : 0.0f;
  return v;
}

#endif /* MTE_DEPTHWISE_INTERNAL_H */
