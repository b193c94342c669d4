/*
 * mte_epilogue.h - the fused GEMM epilogue on one finished tile of C (not installed).
 *
 *   c[i][j] = act(c[i][j] + row_bias[i] + col_bias[j] + res[i][j])
 *
 * applied by gemm.c and conv_gemm.c to each MR x NR tile right after the microkernel wrote
 * it, while it is still in L1. The per-ISA versions (src/arch/<isa>/epilogue_tile.c) are one
 * body, epilogue_body.h, compiled with that ISA's flags and left to the auto-vectoriser:
 * every activation is written branch-free (selects, min/max, polynomials), so each row
 * becomes SIMD code. The active ISA's version is mte__isa()->epilogue (cpu.c's table).
 *
 * GELU (exact) needs erf; C's erff is a scalar call, so here erf is a polynomial pair:
 *   |x| < 1:        erf(x) = x + x * P(x^2)         P of degree 6
 *   1 <= |x|:       erf(x) = min(Q(min(|x|, 3.9) - 2.45), 1)   Q of degree 12
 * (coefficients: minimax fits, Lawson-weighted least squares in float64 against math.erf;
 * max |error| in float32 ~ 9.2e-8, i.e. <= 1.6 ulp, checked in tests/test_epilogue.c).
 * GELU (tanh) is x * sigmoid(2u) = x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3),
 * with exp from Cody-Waite reduction, a degree-7 Taylor polynomial and exponent bits.
 * SiLU is x * sigmoid(x) on the same exp, taken of -|x| only (no overflow, no cancellation);
 * hardswish is x * relu6(x + 3) / 6 (PyTorch's order of operations).
 */
#ifndef MTE_EPILOGUE_H
#define MTE_EPILOGUE_H

#include "mte_internal.h"

typedef struct mte_ep_tile {
  const float *row_bias; /* one value per row of the tile, or NULL */
  const float *col_bias; /* one value per column, or NULL */
  const float *res;      /* residual tile (ld ldr), or NULL */
  int64_t ldr;
  int act;               /* mte_activation */
} mte_ep_tile;

/* apply the epilogue to the rows x cols tile c (ld ldc) */
typedef void (*mte_epilogue_tile_fn)(float *c, int64_t ldc, int64_t rows, int64_t cols,
                                     const mte_ep_tile *t);

/* the epilogue family's descriptor (a column of cpu.c's ISA table) */
typedef struct mte_epilogue_kernel {
  const char *isa;
  mte_epilogue_tile_fn tile;
} mte_epilogue_kernel;

/* generic: on aarch64 the portable body is NEON code already, so neon has no row of its own */
extern const mte_epilogue_kernel mte_epilogue_kernel_generic;
#if defined(MTE_HAVE_X86_KERNELS)
extern const mte_epilogue_kernel mte_epilogue_kernel_avx2;
extern const mte_epilogue_kernel mte_epilogue_kernel_avx512;
#endif

/* A full MR x NR tile of C and its epilogue t: fused into the microkernel's store when it
 * has a post-op variant and t needs nothing more than bias and ReLU/ReLU6, else the
 * microkernel and then the tile epilogue fn. */
static inline void mte__ukernel_with_epilogue(const mte_sgemm_kernel *k, int64_t kc,
                                              const float *a, const float *b, float *c,
                                              int64_t ldc, float alpha, float beta,
                                              const mte_ep_tile *t, mte_epilogue_tile_fn fn) {
  if (k->ukernel_post && !t->res &&
      (t->act == MTE_ACT_NONE || t->act == MTE_ACT_RELU || t->act == MTE_ACT_RELU6)) {
    k->ukernel_post(kc, a, b, c, ldc, alpha, beta, t->row_bias, t->col_bias, t->act);
    return;
  }
  k->ukernel(kc, a, b, c, ldc, alpha, beta);
  fn(c, ldc, k->mr, k->nr, t);
}

/* 1 if act is an mte_activation this library knows */
static inline int mte__valid_activation(int act) {
  return act == MTE_ACT_NONE || act == MTE_ACT_RELU || act == MTE_ACT_RELU6 ||
         act == MTE_ACT_GELU || act == MTE_ACT_GELU_TANH || act == MTE_ACT_SILU ||
         act == MTE_ACT_HARDSWISH;
}

/* 1 if the float ranges [p, p + n) and [q, q + m) share memory (n, m may be 0) */
static inline int mte__overlap(const float *p, size_t n, const float *q, size_t m) {
  if (!p || !q || !n || !m) return 0;
  uintptr_t a = (uintptr_t)p, b = (uintptr_t)q;
  return a < b + m * sizeof(float) && b < a + n * sizeof(float);
}

#endif /* MTE_EPILOGUE_H */
