/*
 * mte_winograd_internal.h - what winograd.c shares with the per-ISA transform files.
 *
 * The three Winograd transforms (weights G g G^T, input tiles B^T d B, output A^T M A) are
 * written once, in mte_winograd_transforms.h, over a GNU C vector of MTE_WINO_VL floats;
 * each src/arch/<isa>/winograd_transforms.c sets the vector width and includes that file,
 * so the same source becomes SSE2/NEON (4 lanes), AVX2 (8) or AVX-512 (16) code. This
 * header declares the resulting descriptors, the winograd family (a column of cpu.c's ISA
 * table); winograd.c takes the active ISA's from mte__isa()->winograd.
 *
 * Lanes: the input and weight transforms run across independent tiles (or weight pairs),
 * the output transform across output channels, so every load and store is contiguous:
 *
 *   input   q streams -> V     lanes = tiles of one channel, read from the "unfolded" input
 *                              q: stream (i % m, j) holds x[m*th + i][m*tw + j] for the tile
 *                              rows; tile element (i, j) = stream (i % m, j) + (i / m) * row
 *   output  M -> y             lanes = output channels k of one tile; the m x m results of
 *                              each lane are then written into its NCHW plane
 *   weight  w^T -> U           lanes = (c, k) pairs; w^T stream a*3+b holds w[k][c][a][b]
 */
#ifndef MTE_WINOGRAD_INTERNAL_H
#define MTE_WINOGRAD_INTERNAL_H

#include "mte_internal.h"

typedef struct mte_wino_kernels {
  const char *isa;
  int vl; /* lanes per vector */
  /* q (above) for the plane xc (H x W, padding ph, pw) and tile rows th0 .. th0+nr-1 */
  void (*unfold)(int m, const float *xc, int64_t H, int64_t W, int64_t ph, int64_t pw,
                 int64_t th0, int64_t nr, int64_t tw_n, float *q, int64_t qs);
  /* (B^T d_l B)[xi] for lanes l < n (tiles L = lane0 + l; m = 4 or 2), stored in the SGEMM
   * microkernel's packed-A layout: at v[xi*vs + (L / mr)*ps + L % mr] */
  void (*input)(int m, const float *q, int64_t qs, int64_t row, float *v, int64_t vs, int mr,
                int64_t ps, int64_t lane0, int64_t n);
  /* one tile: y[k*plane + i*ldy + j] = (A^T M_k A)[i][j] + bias[k] for k < K, i < hi,
   * j < wj; M_k[xi] = mm[xi * ms + k]; bias may be NULL */
  void (*output)(int m, const float *mm, int64_t ms, int64_t K, const float *bias, float *y,
                 int64_t plane, int64_t ldy, int hi, int wj);
  /* U[xi * us + l] = (G g_l G^T)[xi], g_l[a][b] = g[(a*3 + b) * gs + l], lanes l < n */
  void (*weight)(int m, const float *g, int64_t gs, float *u, int64_t us, int64_t n);
} mte_wino_kernels;

extern const mte_wino_kernels mte_wino_kernels_generic;
#if defined(MTE_HAVE_X86_KERNELS)
extern const mte_wino_kernels mte_wino_kernels_avx2;
extern const mte_wino_kernels mte_wino_kernels_avx512;
#endif
#if defined(MTE_HAVE_NEON_KERNELS)
extern const mte_wino_kernels mte_wino_kernels_neon;
#endif

/* Test knob (not thread safe): aim blocks at `tiles` tiles instead of the byte budget; 0
 * restores the default. Whole tile rows are kept, so a block has at least one row. */
void mte__winograd_set_block_tiles(int64_t tiles);

#endif /* MTE_WINOGRAD_INTERNAL_H */
