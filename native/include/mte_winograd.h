/*
 * mte_winograd.h - Winograd convolution for 3x3, stride-1 convolutions (part of libmte;
 * included by mte.h).
 *
 * Winograd's minimal filtering algorithm F(m x m, 3 x 3) computes an m x m block of outputs
 * from an (m+2) x (m+2) input tile with (m+2)^2 multiplications instead of 9 m^2:
 *
 *     Y = A^T [ (G g G^T) (.) (B^T d B) ] A          (.) = elementwise product
 *
 * For many channels the elementwise products become (m+2)^2 independent matrix products:
 *
 *     U[xi] = (G g[k,c] G^T)[xi]          weights, (m+2)^2 x C x K  (transformed once)
 *     V[xi] = (B^T d[c,t] B)[xi]          input tiles, (m+2)^2 x C x tiles
 *     M[xi] = V[xi]^T @ U[xi]             (m+2)^2 SGEMMs, tiles x K
 *     y     = A^T M[., t, k] A + bias[k]  scattered into NCHW
 *
 * Two tile sizes: m = 4 (F(4x4,3x3), 6x6 tiles, 4x fewer multiplications than direct
 * convolution, float32 error around 1e-5 relative) and m = 2 (F(2x2,3x3), 4x4 tiles, 2.25x
 * fewer, error around 1e-6, less waste on small images). Interpolation points: 0, +-1, +-2,
 * infinity for m = 4; 0, +-1, infinity for m = 2 (the matrices are derived and printed in
 * minitorch_edge/backend/winograd.py, the numpy twin of this file).
 *
 * Layouts (row-major float32): x (N, C, H, W); w (K, C, 3, 3); bias (K) or NULL;
 * y (N, K, Ho, Wo) with Ho = H + 2 pad_h - 2, Wo = W + 2 pad_w - 2 (both must be >= 1);
 * U ((m+2)^2, C, K): for each xi the C x K matrix U[xi][c][k] (C-major, so the SGEMM packs
 * it with contiguous copies).
 */
#ifndef MTE_WINOGRAD_H
#define MTE_WINOGRAD_H

#include <stddef.h>
#include <stdint.h>

#include "mte.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Floats in U for `tile` (2 or 4): (tile+2)^2 * C * K; -1 for a bad tile, a negative size or
 * an overflow. */
MTE_API int64_t mte_winograd_weight_size(int tile, int64_t K, int64_t C);

/* U = G w G^T for every (k, c): w (K, C, 3, 3) -> U ((tile+2)^2, C, K). Returns MTE_OK,
 * MTE_EINVAL (tile not 2 or 4, negative size, NULL with a non-empty array), MTE_EOVERFLOW,
 * MTE_ENOMEM. */
MTE_API int mte_winograd_transform_weight(int tile, int64_t K, int64_t C, const float *w,
                                          float *U);

/*
 * y = conv2d(x, w, bias, stride 1, padding (pad_h, pad_w), dilation 1, groups 1) by Winograd.
 * tile: 4, 2, or 0 = mte_winograd_tile(N, C, K, Ho, Wo, U != NULL). U: the weights
 * transformed for this tile by mte_winograd_transform_weight (then w is not read and may be
 * NULL), or NULL to transform w in this call (into the workspace). Temporaries live in a
 * workspace arena kept by the library (reused across calls; a concurrent call gets a private
 * one). Returns MTE_OK, MTE_EINVAL (negative size, negative or huge padding, Ho or Wo < 1
 * with a non-empty batch, bad tile, NULL pointer for a non-empty array), MTE_EOVERFLOW or
 * MTE_ENOMEM; y is untouched when any of these is returned.
 */
MTE_API int mte_winograd3x3(int tile, int64_t N, int64_t C, int64_t H, int64_t W, int64_t K,
                            int64_t pad_h, int64_t pad_w, const float *x, const float *w,
                            const float *U, const float *bias, float *y);

/*
 * The selection rule, for output size Ho x Wo (= input size when padding is 1); `cached` says
 * whether U is transformed once and reused (1) or w is transformed in every call (0). The
 * rule and the measurements behind it are in winograd_rule.c:
 *   mte_winograd_tile:       the better Winograd tile here, 4 or 2 (0 for an empty output)
 *   mte_winograd_should_use: 1 if Winograd (with that tile) is expected to beat im2col+GEMM
 */
MTE_API int mte_winograd_tile(int64_t N, int64_t C, int64_t K, int64_t Ho, int64_t Wo,
                              int cached);
MTE_API int mte_winograd_should_use(int64_t N, int64_t C, int64_t K, int64_t Ho, int64_t Wo,
                                    int cached);

/* Peak bytes of the Winograd workspace (tiles, products, scratch; SGEMM packing buffers
 * included), and a way to free it (re-created on next use). */
MTE_API size_t mte_winograd_workspace_peak_bytes(void);
MTE_API void mte_winograd_workspace_reset_peak(void); /* start a per-call measurement */
MTE_API void mte_winograd_workspace_release(void);

#ifdef __cplusplus
}
#endif

#endif /* MTE_WINOGRAD_H */
