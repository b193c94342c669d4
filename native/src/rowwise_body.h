/*
 * rowwise_body.h - the body of the rowwise descriptor mte_rowwise_kernel_<isa>: softmax,
 * LayerNorm and GELU, forward and backward (math in include/mte_transformer.h). Included by
 * src/arch/<isa>/rowwise.c after `#define MTE_ROWWISE_ISA "<isa>"`,
 * `#define MTE_ROWWISE_TABLE mte_rowwise_kernel_<isa>` and `#define MTE_VL <lanes>`, so one
 * source is compiled once per ISA with that ISA's flags; rowwise.c (portable) validates and
 * splits rows over threads.
 *
 * Every loop runs on MTE_VL-lane vectors (mte_vec.h), the last partial vector of a row
 * padded so that nothing past the row is read or written; row sums keep a vector of partial
 * sums and add its lanes at the end.
 */
#include "mte_softmax_row.h"
#include "mte_transformer_internal.h"
#include "mte_vec.h"

#define VL MTE_VL

/* ---------------------------------------------------------------- softmax */

static void rows_softmax(int64_t rows, int64_t n, const float *x, float *y, int flags) {
  for (int64_t i = 0; i < rows; ++i) sm_row_forward(n, x + i * n, y + i * n, flags);
}

static void rows_softmax_backward(int64_t rows, int64_t n, const float *y, const float *dy,
                                  float *dx, int flags) {
  for (int64_t i = 0; i < rows; ++i)
    sm_row_backward(n, y + i * n, dy + i * n, dx + i * n, flags);
}

/* ---------------------------------------------------------------- LayerNorm */

/* the j-th vector of a row of n, zeros past n (nothing past it read) */
VINLINE vf ld_row(const float *p, int64_t j, int64_t n) {
  return j + VL <= n ? v_ld(p + j) : v_ld_part(p + j, n - j, 0.0f);
}
VINLINE void st_row(float *p, int64_t j, int64_t n, vf v) {
  if (j + VL <= n)
    v_st(p + j, v);
  else
    v_st_part(p + j, v, n - j);
}

static void rows_layer_norm(int64_t rows, int64_t n, const float *x, const float *w,
                            const float *b, float eps, float *y, float *mean, float *rstd) {
  const float inv_n = 1.0f / (float)n;
  for (int64_t i = 0; i < rows; ++i) {
    const float *xi = x + i * n;
    float *yi = y + i * n;
    const float mu = sm_row_dot(n, xi, NULL) * inv_n;
    vf s = v_splat(0.0f); /* sum of (x - mean)^2: two passes, no cancellation */
    int64_t j = 0;
    for (; j + VL <= n; j += VL) {
      const vf d = v_ld(xi + j) - mu;
      s += d * d;
    }
    if (j < n) {
      const vf d = v_ld_part(xi + j, n - j, mu) - mu; /* padding: d = 0 */
      s += d * d;
    }
    const float r = 1.0f / sqrtf(v_hsum(s) * inv_n + eps);
    if (mean) mean[i] = mu;
    if (rstd) rstd[i] = r;
    for (j = 0; j < n; j += VL) {
      vf v = (ld_row(xi, j, n) - mu) * r;
      if (w) v *= ld_row(w, j, n);
      if (b) v += ld_row(b, j, n);
      st_row(yi, j, n, v);
    }
  }
}

static void rows_layer_norm_backward(int64_t rows, int64_t n, const float *dy, const float *x,
                                     const float *mean, const float *rstd, const float *w,
                                     float *dx, float *dw_acc, float *db_acc) {
  const float inv_n = 1.0f / (float)n;
  for (int64_t i = 0; i < rows; ++i) {
    const float *gi = dy + i * n, *xi = x + i * n;
    const float mu = mean[i], r = rstd[i];
    /* one pass: the row's sums s1 = sum g, s2 = sum g xhat (g = dy w), and dw, db */
    vf s1 = v_splat(0.0f), s2 = v_splat(0.0f);
    for (int64_t j = 0; j < n; j += VL) {
      const vf dyv = ld_row(gi, j, n), xhat = (ld_row(xi, j, n) - mu) * r;
      const vf g = w ? dyv * ld_row(w, j, n) : dyv;
      s1 += g;
      s2 += g * xhat;
      if (dw_acc) st_row(dw_acc, j, n, ld_row(dw_acc, j, n) + dyv * xhat);
      if (db_acc) st_row(db_acc, j, n, ld_row(db_acc, j, n) + dyv);
    }
    if (!dx) continue;
    const float a = v_hsum(s1) * inv_n, c = v_hsum(s2) * inv_n;
    float *di = dx + i * n;
    for (int64_t j = 0; j < n; j += VL) { /* dx = r (g - a - xhat c) */
      const vf dyv = ld_row(gi, j, n), xhat = (ld_row(xi, j, n) - mu) * r;
      const vf g = w ? dyv * ld_row(w, j, n) : dyv;
      st_row(di, j, n, r * (g - a - xhat * c));
    }
  }
}

/* ---------------------------------------------------------------- GELU */

#define SQRT1_2 0.70710678118654752f
#define SQRT_2_OVER_PI 0.7978845608028654f
#define INV_SQRT_2PI 0.3989422804014327f
#define GELU_C 0.044715f
#define GELU_CLIP 40.0f /* beyond it e^(-x^2/2), 1 - tanh^2 u are 0 and x^3 could overflow */

/* x clipped to [-40, 40] (NaN -> -40: the callers keep x itself where NaN matters) */
VINLINE vf clip(vf x) { return v_min(v_max(x, v_splat(-GELU_CLIP)), v_splat(GELU_CLIP)); }

/* s = sigmoid(2u) and 1 - s = e / (1 + e), e = exp(-2u), without cancellation: with
 * a = exp(-|2u|) <= 1, s = 1/(1 + a) or a/(1 + a) by the sign of u */
VINLINE void sigmoid2(vf u, vf *s, vf *one_minus_s) {
  const vi pos = u > 0.0f;
  const vf a = v_exp_le0(v_sel(pos, -2.0f * u, 2.0f * u));
  const vf inv = 1.0f / (1.0f + a);
  *s = v_sel(pos, inv, a * inv);
  *one_minus_s = v_sel(pos, a * inv, inv);
}

VINLINE vf gelu_v(vf x, int approximate) {
  if (approximate) { /* x sigmoid(2u) = x/2 (1 + tanh u); NaN stays NaN */
    const vf xc = clip(x);
    vf s, sm;
    sigmoid2(SQRT_2_OVER_PI * (xc + GELU_C * xc * xc * xc), &s, &sm);
    return x * s;
  }
  return 0.5f * x * (1.0f + v_erf(x * SQRT1_2));
}

VINLINE vf gelu_grad_v(vf x, int approximate) {
  const vf xc = clip(x);
  if (approximate) { /* s (1 + 2 x (1 - s) u') */
    vf s, sm;
    sigmoid2(SQRT_2_OVER_PI * (xc + GELU_C * xc * xc * xc), &s, &sm);
    const vf du = SQRT_2_OVER_PI * (3.0f * GELU_C * xc * xc + 1.0f);
    return s * (1.0f + 2.0f * x * sm * du);
  }
  const vf cdf = 0.5f * (1.0f + v_erf(x * SQRT1_2)); /* Phi(x) + x phi(x) */
  const vf pdf = v_exp_le0(-0.5f * xc * xc) * INV_SQRT_2PI;
  return x * pdf + cdf;
}

static void rows_gelu(int64_t n, const float *x, float *y, int approximate) {
  int64_t j = 0;
  for (; j + VL <= n; j += VL) v_st(y + j, gelu_v(v_ld(x + j), approximate));
  if (j < n) v_st_part(y + j, gelu_v(v_ld_part(x + j, n - j, 0.0f), approximate), n - j);
}

static void rows_gelu_backward(int64_t n, const float *dy, const float *x, float *dx,
                               int approximate) {
  int64_t j = 0;
  for (; j + VL <= n; j += VL)
    v_st(dx + j, v_ld(dy + j) * gelu_grad_v(v_ld(x + j), approximate));
  if (j < n)
    v_st_part(dx + j, v_ld_part(dy + j, n - j, 0.0f) *
                          gelu_grad_v(v_ld_part(x + j, n - j, 0.0f), approximate), n - j);
}

const mte_rowwise_kernel MTE_ROWWISE_TABLE = {
    MTE_ROWWISE_ISA,          rows_softmax, rows_softmax_backward, rows_layer_norm,
    rows_layer_norm_backward, rows_gelu,    rows_gelu_backward};
