/*
 * mte_depthwise_internal.h - the depthwise3x3 family: per-ISA 3x3 plane kernels (not
 * installed).
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

/* the depthwise3x3 family's descriptor (a column of cpu.c's ISA table) */
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

/* the activation, scalar (used by every ISA for edge lanes) */
static inline float mte__dw_act(float v, int act) {
  /* NaN stays NaN: it fails both comparisons */
  if (act == MTE_ACT_RELU) return v <= 0.0f ? 0.0f : v;
  if (act == MTE_ACT_RELU6) return v <= 0.0f ? 0.0f : (v > 6.0f ? 6.0f : v);
  return v;
}

#endif /* MTE_DEPTHWISE_INTERNAL_H */
