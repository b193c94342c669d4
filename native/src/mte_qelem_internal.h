/*
 * mte_qelem_internal.h - the "qelem" family: the memory-bound int8 kernels around the
 * convolutions (quantize, the add's table lookup, the max-pool row, the batch-1 GEMV).
 *
 * Each entry does the bulk of its work in vectors and leaves the rest to the portable C in
 * quant.c / qpool.c / qgemv.c, which is the definition: an entry returns how many leading
 * elements it did (0 is always correct), and NULL means none. Every result is bit-equal to
 * the portable loop's:
 *
 *   quantize  y[i] = clamp(round_half_away(clamp(x[i] / scale, +-256), NaN -> 0) + zp)
 *             (an IEEE float32 division, as the scalar one: no reciprocal)
 *   lookup    y[i] = table[(uint8_t)a[i] << 8 | (uint8_t)b[i]]   (mte_qadd_table's table)
 *   add       mte_qadd's arithmetic (TFLite's ADD); may do nothing for parameters where a
 *             step could saturate (it returns 0 then)
 *   max_row   y[s] = max_{j < kw} row[s * sw + j], sw 1 or 2: the horizontal pass of a
 *             max pool over a row padded with -128 (qpool.c), so no window is clipped;
 *             row is readable up to row[(count - 1) * sw + kw - 1]
 *   gemv      acc[o] = sum_k w[o, k] * x[k] for the panels of qgemv.c: 16 outputs, k in
 *             groups of 4 (w[p][g][i][t] = w[16p + i, 4g + t], zero-padded), x signed and
 *             zero-padded to 4 kg; wsum[o] = sum_k w[o, k] (for an unsigned-x product)
 */
#ifndef MTE_QELEM_INTERNAL_H
#define MTE_QELEM_INTERNAL_H

#include "mte_internal.h"
#include "mte_quant.h"

#define MTE_QGEMV_MR 16 /* outputs per weight panel */

typedef struct mte_qelem_kernel {
  const char *isa;
  int64_t (*quantize)(int64_t n, const float *x, float scale, int32_t zp, int8_t *y);
  int64_t (*lookup)(int64_t n, const int8_t *a, const int8_t *b, const int8_t *table,
                    int8_t *y);
  int64_t (*add)(const mte_qadd_params *p, int64_t n, const int8_t *a, const int8_t *b,
                 int8_t *y);
  int64_t (*max_row)(const int8_t *row, int64_t kw, int64_t sw, int64_t count, int8_t *y);
  void (*gemv)(int64_t panels, int64_t kg, const int8_t *w, const int32_t *wsum,
               const int8_t *x, int32_t *acc);
} mte_qelem_kernel;

/* the plain C GEMV (arch/generic/qelem.c), what a NULL gemv runs */
MTE_HIDDEN void mte__qgemv_generic(int64_t panels, int64_t kg, const int8_t *w,
                                   const int32_t *wsum, const int8_t *x, int32_t *acc);

/* The add's parameters for which no step of it saturates in int32 (the vector adds do only
 * these): |a - a_zp| << left_shift < 2^30, so sa, sb and their sum fit; no left shifts. */
static inline int mte__qadd_lanes_ok(const mte_qadd_params *p) {
  return p->left_shift >= 0 && p->left_shift <= 22 && p->a_shift <= 0 && p->b_shift <= 0 &&
         p->y_shift <= 0;
}

extern const mte_qelem_kernel mte_qelem_kernel_generic;
#ifdef MTE_HAVE_X86_KERNELS
extern const mte_qelem_kernel mte_qelem_kernel_avx2, mte_qelem_kernel_avx512,
    mte_qelem_kernel_avx512vnni;
/* the AVX-512 entries the VNNI row reuses */
MTE_HIDDEN int64_t mte__quantize_avx512(int64_t n, const float *x, float scale, int32_t zp,
                                        int8_t *y);
MTE_HIDDEN int64_t mte__lookup_avx512(int64_t n, const int8_t *a, const int8_t *b,
                                      const int8_t *table, int8_t *y);
MTE_HIDDEN int64_t mte__add_avx512(const mte_qadd_params *p, int64_t n, const int8_t *a,
                                   const int8_t *b, int8_t *y);
MTE_HIDDEN int64_t mte__max_row_avx512(const int8_t *row, int64_t kw, int64_t sw,
                                       int64_t count, int8_t *y);
#endif

#endif /* MTE_QELEM_INTERNAL_H */
