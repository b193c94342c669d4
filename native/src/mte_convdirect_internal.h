/*
 * mte_convdirect_internal.h - the convdirect family: the register tile of the direct KxK
 * convolution (conv_direct.c), a column of cpu.c's ISA table (not installed).
 *
 * Lanes are output channels: the packed weights hold, for each block of MTE_CD_KB = 64
 * output channels, w[c][i][j] as 64 consecutive floats (zero past the last channel), and a
 * tile accumulates p output pixels of one output row for 16 * kv of those channels:
 *
 *     acc[q*64 + k] (+)= sum_{c < nc, i < kh, j < kw} w[((c*kh + i)*kw + j)*64 + k]
 *                                                     * x[c*cs + i*wp + j + q*s]
 *
 * for q < p, k < 16 * kv; x is the zero-padded input at the tile's first tap. One vector
 * load of weights feeds p broadcast-FMAs (a broadcast x value is read straight from memory),
 * so no im2col matrix is built, and any stride is only a different address.
 */
#ifndef MTE_CONVDIRECT_INTERNAL_H
#define MTE_CONVDIRECT_INTERNAL_H

#include "mte_internal.h"

#define MTE_CD_KB 64   /* output channels per packed block */
#define MTE_CD_PMAX 7  /* pixels per tile at most */
#define MTE_CD_NPIX 128 /* pixels per chunk: the acc buffer is NPIX x KB floats */

typedef struct mte_cd_tile {
  const float *x;    /* padded input at channel 0 of the slice, the tile's first tap */
  int64_t cs, wp;    /* channel stride, row stride of the padded input */
  int64_t s;         /* column stride between the tile's pixels (the conv's stride_w) */
  const float *w;    /* packed weights at channel 0 of the slice (any alignment) */
  int64_t nc;        /* input channels in this slice */
  int kh, kw;
  float *acc;        /* p x 64 accumulators (64-byte aligned) */
  const float *bias; /* non-NULL: 64 values that seed acc (first slice); NULL: acc is read */
  int p, kv;         /* pixels (1..MTE_CD_PMAX), vectors of 16 channels (1..4) */
} mte_cd_tile;

/* y[k*ys + i] = act(acc[i*64 + k] + (res ? res[k*ys + i] : 0)) for k < kn, i < n: the
 * transposed store of a chunk (act: NONE, RELU, RELU6) */
typedef void (*mte_cd_store_fn)(const float *acc, int kn, int64_t n, float *y, int64_t ys,
                                const float *res, int act);

typedef struct mte_convdir_kernel {
  const char *isa;
  void (*tile)(const mte_cd_tile *t);
  mte_cd_store_fn store;
} mte_convdir_kernel;

extern const mte_convdir_kernel mte_convdir_kernel_generic;
#if defined(MTE_HAVE_X86_KERNELS)
extern const mte_convdir_kernel mte_convdir_kernel_avx512;
#endif

#endif /* MTE_CONVDIRECT_INTERNAL_H */
