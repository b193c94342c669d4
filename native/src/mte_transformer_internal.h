/*
 * mte_transformer_internal.h - the two kernel families behind mte_transformer.h (not
 * installed): `rowwise` (softmax, LayerNorm, GELU) and `attention` (one head of scaled
 * dot-product attention). Each is one body compiled once per ISA (rowwise_body.h,
 * attention_body.h, included by src/arch/<isa>/rowwise.c and attention_head.c); the portable
 * drivers rowwise.c and attention.c validate arguments, split the work over threads and take
 * the active ISA's descriptor from cpu.c's table (mte__isa()->rowwise, ->attention).
 */
#ifndef MTE_TRANSFORMER_INTERNAL_H
#define MTE_TRANSFORMER_INTERNAL_H

#include "mte_internal.h"
#include "mte_transformer.h"

/* ---------------------------------------------------------------- rowwise */

/* Each function does a block of `rows` rows of n floats (row stride n, every array
 * contiguous); the driver hands each thread its own block. flags: MTE_SOFTMAX_*. */
typedef struct mte_rowwise_kernel {
  const char *isa;
  void (*softmax)(int64_t rows, int64_t n, const float *x, float *y, int flags);
  void (*softmax_backward)(int64_t rows, int64_t n, const float *y, const float *dy,
                           float *dx, int flags);
  /* mean, rstd: one value per row, written. */
  void (*layer_norm)(int64_t rows, int64_t n, const float *x, const float *w, const float *b,
                     float eps, float *y, float *mean, float *rstd);
  /* dx written (NULL: not wanted); dw_acc, db_acc (n values each, NULL: not wanted) are
   * ADDED to: the driver gives each thread its own pair and sums them at the end. */
  void (*layer_norm_backward)(int64_t rows, int64_t n, const float *dy, const float *x,
                              const float *mean, const float *rstd, const float *w, float *dx,
                              float *dw_acc, float *db_acc);
  /* n elements; approximate: 0 exact (erf), 1 tanh */
  void (*gelu)(int64_t n, const float *x, float *y, int approximate);
  void (*gelu_backward)(int64_t n, const float *dy, const float *x, float *dx,
                        int approximate);
} mte_rowwise_kernel;

extern const mte_rowwise_kernel mte_rowwise_kernel_generic;
#if defined(MTE_HAVE_X86_KERNELS)
extern const mte_rowwise_kernel mte_rowwise_kernel_avx2;
extern const mte_rowwise_kernel mte_rowwise_kernel_avx512;
#endif

/* ---------------------------------------------------------------- attention */

/* One (batch, head) pair: matrices with unit column stride and the given row strides. */
typedef struct mte_att_head {
  int64_t L, S, D, Dv;            /* queries, keys, q/k width, v width */
  const float *q, *k, *v;         /* L x D, S x D, S x Dv */
  int64_t ldq, ldk, ldv;
  const float *mask;              /* L x S additive mask, or NULL */
  int64_t ldm;
  float scale;
  int causal;                     /* key j > query i is masked */
  float *p;                       /* S x L softmax weights, transposed (row stride L) */
  float *out;                     /* forward: L x Dv */
  int64_t ldo;
  const float *dout;              /* backward: L x Dv */
  int64_t lddo;
  float *dq, *dk, *dv;            /* backward: written (none may be NULL) */
  int64_t lddq, lddk, lddv;
} mte_att_head;

/* scratch: at least mte__attention_scratch(h) floats, 64-byte aligned, per thread */
typedef struct mte_attention_kernel {
  const char *isa;
  void (*forward)(const mte_att_head *h, float *scratch);
  void (*backward)(const mte_att_head *h, float *scratch);
} mte_attention_kernel;

/* floats of scratch one head needs: Q^T (forward), or dO^T and dS^T (backward) */
static inline size_t mte__attention_scratch(int64_t L, int64_t S, int64_t D, int64_t Dv) {
  const size_t fwd = (size_t)D * (size_t)L;
  const size_t bwd = ((size_t)Dv + (size_t)S) * (size_t)L;
  return fwd > bwd ? fwd : bwd;
}

extern const mte_attention_kernel mte_attention_kernel_generic;
#if defined(MTE_HAVE_X86_KERNELS)
extern const mte_attention_kernel mte_attention_kernel_avx2;
extern const mte_attention_kernel mte_attention_kernel_avx512;
#endif

#endif /* MTE_TRANSFORMER_INTERNAL_H */
