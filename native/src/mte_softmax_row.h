/*
 * mte_softmax_row.h - softmax of one row and its gradient on MTE_VL-lane vectors, as
 * static inline functions for the per-ISA bodies (rowwise_body.h for mte_softmax_*,
 * attention_body.h for the attention weights; not installed). Needs MTE_VL (mte_vec.h).
 *
 * A row is read in vectors, the last partial one padded with a neutral value (-inf for the
 * max, 0 for sums) so no lane reads past the row; each reduction keeps a vector of partial
 * results and adds its lanes once at the end. A NaN input fails the max's comparison but
 * reaches exp, the row's sum, and so every output of its row.
 */
#ifndef MTE_SOFTMAX_ROW_H
#define MTE_SOFTMAX_ROW_H

#include <math.h>
#include <stdint.h>

#include "mte_transformer.h"
#include "mte_vec.h"

/* max over the row, NaN ignored (-inf for an empty row) */
VINLINE float sm_row_max(int64_t n, const float *x) {
  vf m = v_splat(-INFINITY);
  int64_t j = 0;
  for (; j + MTE_VL <= n; j += MTE_VL) m = v_max(v_ld(x + j), m);
  if (j < n) m = v_max(v_ld_part(x + j, n - j, -INFINITY), m);
  return v_hmax(m);
}

/* sum of a[j] * b[j] (b NULL: of a[j]) */
VINLINE float sm_row_dot(int64_t n, const float *a, const float *b) {
  vf s = v_splat(0.0f);
  int64_t j = 0;
  if (b) {
    for (; j + MTE_VL <= n; j += MTE_VL) s += v_ld(a + j) * v_ld(b + j);
    if (j < n) s += v_ld_part(a + j, n - j, 0.0f) * v_ld_part(b + j, n - j, 0.0f);
  } else {
    for (; j + MTE_VL <= n; j += MTE_VL) s += v_ld(a + j);
    if (j < n) s += v_ld_part(a + j, n - j, 0.0f);
  }
  return v_hsum(s);
}

/* y = softmax(x) or log_softmax(x) of one row (flags: MTE_SOFTMAX_*); y may be x */
VINLINE void sm_row_forward(int64_t n, const float *x, float *y, int flags) {
  float m = sm_row_max(n, x);
  if ((flags & MTE_SOFTMAX_SAFE) && m == -INFINITY) m = 0.0f; /* all -inf: e = 0 */
  vf s = v_splat(0.0f);
  int64_t j = 0;
  if (flags & MTE_SOFTMAX_LOG) { /* y = (x - m) - log(sum e^(x - m)) */
    for (; j + MTE_VL <= n; j += MTE_VL) s += v_exp_le0(v_ld(x + j) - m);
    if (j < n) s += v_exp_le0(v_ld_part(x + j, n - j, -INFINITY) - m);
    const float c = logf(v_hsum(s)); /* (x - m) - c, not x - (m + c): m + c would round */
    for (j = 0; j + MTE_VL <= n; j += MTE_VL) v_st(y + j, (v_ld(x + j) - m) - c);
    if (j < n) v_st_part(y + j, (v_ld_part(x + j, n - j, 0.0f) - m) - c, n - j);
    return;
  }
  for (; j + MTE_VL <= n; j += MTE_VL) {
    const vf e = v_exp_le0(v_ld(x + j) - m);
    v_st(y + j, e);
    s += e;
  }
  if (j < n) {
    const vf e = v_exp_le0(v_ld_part(x + j, n - j, -INFINITY) - m);
    v_st_part(y + j, e, n - j);
    s += e;
  }
  const float sum = v_hsum(s);
  const float inv = (sum == 0.0f && (flags & MTE_SOFTMAX_SAFE)) ? 0.0f : 1.0f / sum;
  for (j = 0; j + MTE_VL <= n; j += MTE_VL) v_st(y + j, v_ld(y + j) * inv);
  for (; j < n; ++j) y[j] *= inv;
}

/* dx from y = the forward's output and dy, one row; dx may be dy */
VINLINE void sm_row_backward(int64_t n, const float *y, const float *dy, float *dx,
                             int flags) {
  int64_t j = 0;
  if (flags & MTE_SOFTMAX_LOG) { /* dx = dy - exp(y) sum(dy) */
    const float g = sm_row_dot(n, dy, NULL);
    for (; j + MTE_VL <= n; j += MTE_VL)
      v_st(dx + j, v_ld(dy + j) - v_exp_le0(v_ld(y + j)) * g);
    if (j < n)
      v_st_part(dx + j, v_ld_part(dy + j, n - j, 0.0f) -
                            v_exp_le0(v_ld_part(y + j, n - j, 0.0f)) * g, n - j);
    return;
  }
  const float g = sm_row_dot(n, dy, y); /* dx = y (dy - sum(dy y)) */
  for (; j + MTE_VL <= n; j += MTE_VL) v_st(dx + j, v_ld(y + j) * (v_ld(dy + j) - g));
  for (; j < n; ++j) dx[j] = y[j] * (dy[j] - g);
}

#endif /* MTE_SOFTMAX_ROW_H */
