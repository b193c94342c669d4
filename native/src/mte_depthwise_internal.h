/*
 * mte_depthwise_internal.h - the depthwise3x3 family (per-ISA 3x3 plane kernels, forward
 * and backward) and the depthwise family (the general K x K forward kernel); not installed.
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

/* ---------------------------------------------------------------- the depthwise family */

/*
 * The general forward kernel (any K x K, stride 1 or 2, symmetric padding 0 <= pad < K):
 *
 *     y[r][s] = act(bias + sum_{i,j<K} w[K*i+j] * x[r*S + i - pad][s*S + j - pad])
 *
 * with zeros outside x. The ISA kernel computes one (H, W) plane. On AVX-512 and AVX2, K = 3,
 * 5 and 7 run as rolled vertical strips that read x straight through masked loads (the
 * column padding is the masked lanes; padding rows are skipped: depthwise_strip_body.h) and
 * leave `ring` and `zeros` unused. Every other case (and NEON / generic) never reads x out of
 * place: the padded input rows an output row needs are built in `ring` (`rows` rows, each
 * split into S column phases, phase f holding padded columns S*k + f, with the zero
 * padding already in place), so the inner loop is K*K unaligned vector loads and FMAs with
 * no masks, no shuffles and no bounds tests. Padding rows point at `zeros`. The ring has
 * rows >= K + S slots: rows are built ahead of the output row that reads them (a vector
 * load of a row whose stores have not yet reached the cache would stall on store-to-load
 * forwarding, ~2x on 14x14 planes).
 */
/* the largest K the general kernel takes */
#define MTE_DW_MAX_K 31
/* output rows of look-ahead of the ring, and its most rows (K + AHEAD * S) */
#define MTE_DW_AHEAD 4
#define MTE_DW_MAX_ROWS (MTE_DW_MAX_K + 2 * MTE_DW_AHEAD)

typedef struct mte_dw_geom {
  int64_t H, W, Ho, Wo;
  int K, S, pad;
  int rows;       /* rows of the ring, >= K */
  int64_t wq;     /* floats in one phase row (a multiple of 16, >= what a row reads) */
} mte_dw_geom;

/* floats of the ring one plane needs (`rows` rows of S phases); `zeros` holds S*wq */
static inline int64_t mte__dw_ring_floats(const mte_dw_geom *g) {
  return (int64_t)g->rows * g->S * g->wq;
}

typedef void (*mte_dw_plane_fn)(const float *MTE_RESTRICT x, const mte_dw_geom *g,
                                const float *w, float bias, int act, const float *zeros,
                                float *MTE_RESTRICT ring, float *MTE_RESTRICT y);

/* the depthwise family's descriptor (a column of cpu.c's ISA table); vl = its float lanes */
typedef struct mte_dw_kernel {
  const char *isa;
  int vl;
  mte_dw_plane_fn plane;
} mte_dw_kernel;

extern const mte_dw_kernel mte_dw_kernel_generic;
#if defined(MTE_HAVE_X86_KERNELS)
extern const mte_dw_kernel mte_dw_kernel_avx2;
extern const mte_dw_kernel mte_dw_kernel_avx512;
#endif
#if defined(MTE_HAVE_NEON_KERNELS)
extern const mte_dw_kernel mte_dw_kernel_neon;
#endif

/* the activation, scalar (used by every ISA for edge lanes) */
static inline float mte__dw_act(float v, int act) {
  /* NaN stays NaN: it fails both comparisons */
  if (act == MTE_ACT_RELU) return v <= 0.0f ? 0.0f : v;
  if (act == MTE_ACT_RELU6) return v <= 0.0f ? 0.0f : (v > 6.0f ? 6.0f : v);
  return v;
}

#endif /* MTE_DEPTHWISE_INTERNAL_H */
