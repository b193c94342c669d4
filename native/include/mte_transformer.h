/*
 * mte_transformer.h - the kernels of a Transformer block besides its matrix products:
 * softmax, LayerNorm and GELU (each forward and backward, one pass per row), and fused
 * scaled dot-product attention over (batch, head) pairs.
 *
 * All float32, row-major. Row kernels take `rows` rows of `n` contiguous floats (row stride
 * n); the attention kernels take strided views (below). Statistics and reductions are in
 * float32 with several partial sums per row (vector lanes), as the numpy twins in
 * minitorch_edge/backend/numpy_backend.py compute them to float32 rounding. Invalid
 * arguments give MTE_EINVAL and write nothing. Rows (or heads) are split over the library's
 * threads when there is enough work.
 */
#ifndef MTE_TRANSFORMER_H
#define MTE_TRANSFORMER_H

#include <stdint.h>

#include "mte.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- softmax */

enum {
  MTE_SOFTMAX_SAFE = 1, /* a row of only -inf gives zeros (not NaN), and a zero gradient */
  MTE_SOFTMAX_LOG = 2   /* log-softmax */
};

/*
 * Each row:  m = max_j x_j (0 instead when SAFE and m = -inf),  e_j = exp(x_j - m),
 *   softmax      y_j = e_j / sum_k e_k
 *   log-softmax  y_j = (x_j - m) - log(sum_k e_k)
 * NaN anywhere in a row makes the row NaN. y may be x (in place), not overlap it otherwise.
 */
MTE_API int mte_softmax_forward(int64_t rows, int64_t n, const float *x, float *y, int flags);

/*
 * The gradient from y (the forward's output) and dy:
 *   softmax      dx_j = y_j (dy_j - sum_k dy_k y_k)
 *   log-softmax  dx_j = dy_j - exp(y_j) sum_k dy_k
 * dx may be dy (in place).
 */
MTE_API int mte_softmax_backward(int64_t rows, int64_t n, const float *y, const float *dy,
                                 float *dx, int flags);

/* ---------------------------------------------------------------- LayerNorm */

/*
 * Each row:  mean = sum_j x_j / n,  var = sum_j (x_j - mean)^2 / n (biased),
 *            rstd = 1 / sqrt(var + eps),  y_j = (x_j - mean) rstd w_j + b_j.
 * w, b: n values or NULL (1 and 0). mean, rstd: one value per row (NULL: not wanted), what
 * the backward reads. y may be x.
 */
MTE_API int mte_layer_norm_forward(int64_t rows, int64_t n, const float *x, const float *w,
                                   const float *b, float eps, float *y, float *mean,
                                   float *rstd);

/*
 * With xhat_j = (x_j - mean) rstd and g_j = dy_j w_j (dy_j without w), per row:
 *   dx_j = rstd (g_j - sum_k g_k / n - xhat_j sum_k g_k xhat_k / n)
 * and over all rows  dw_j = sum dy_j xhat_j,  db_j = sum dy_j  (written, not accumulated).
 * Any of dx, dw, db may be NULL (not wanted); w may be NULL (1).
 */
MTE_API int mte_layer_norm_backward(int64_t rows, int64_t n, const float *dy, const float *x,
                                    const float *mean, const float *rstd, const float *w,
                                    float *dx, float *dw, float *db);

/* ---------------------------------------------------------------- GELU */

/*
 * approximate = 0:  y = x Phi(x) = x/2 (1 + erf(x / sqrt 2))
 *   dy/dx = Phi(x) + x phi(x),  phi(x) = exp(-x^2/2) / sqrt(2 pi)
 * approximate = 1 (PyTorch's 'tanh'):  y = x/2 (1 + tanh u) = x sigmoid(2u),
 *   u = sqrt(2/pi) (x + 0.044715 x^3);
 *   dy/dx = s (1 + 2 x (1 - s) u'),  s = sigmoid(2u),  u' = sqrt(2/pi) (1 + 3 0.044715 x^2)
 * erf as in the epilogue (|error| < 1e-7). n elements; y may be x, dx may be dy.
 */
MTE_API int mte_gelu_forward(int64_t n, const float *x, float *y, int approximate);
MTE_API int mte_gelu_backward(int64_t n, const float *dy, const float *x, float *dx,
                              int approximate);

/* ---------------------------------------------------------------- attention */

/*
 * Where the matrix of one (batch b, head h) pair lies: element (i, j) of the matrix of
 * pair (b, h) is data[b * batch + h * head + i * row + j] (unit column stride), for a
 * pointer `data` given beside it. Strides may be 0 in inputs (broadcast: a mask shared by
 * every head, a key/value shared by every head), and q, k, v may be interleaved column
 * slices of one packed (rows, batch, 3E) projection. Outputs must not overlap the inputs
 * or each other, and their strides may not be 0 where that dim has more than one entry.
 */
typedef struct mte_head_strides {
  int64_t batch, head, row;
} mte_head_strides;

/*
 * Attention over B x H (batch, head) pairs, L queries, S keys, head widths D (q, k) and
 * Dv (v):
 *   scores = scale q k^T + mask  (and -inf where key j > query i, when causal)
 *   p      = softmax(scores) along the keys (a row of only -inf gives p = 0, not NaN)
 *   out    = p v
 * per pair q: L x D, k: S x D, v: S x Dv, mask: L x S additive (NULL: none), out: L x Dv.
 * pt receives the weights transposed, B*H*S*L floats, contiguous (B, H, S, L): pt[b, h, j, i]
 * is the weight of key j for query i (a query's softmax is then a column, computed down the
 * rows in vectors). The backward reads it.
 */
MTE_API int mte_attention_forward(int64_t B, int64_t H, int64_t L, int64_t S, int64_t D,
                                  int64_t Dv, const float *q, mte_head_strides sq,
                                  const float *k, mte_head_strides sk, const float *v,
                                  mte_head_strides sv, const float *mask, mte_head_strides sm,
                                  float scale, int causal, float *pt, float *out,
                                  mte_head_strides so);

/*
 * The gradients, from the forward's q, k, v, its weights pt and dout (L x Dv per pair):
 *   dv = p^T dout,   dp = dout v^T,   ds = p * (dp - rowsum(dp * p)),
 *   dq = scale ds k,  dk = scale ds^T q
 * dq, dk, dv are written (not accumulated). (The mask and causal flag are in p already.)
 */
MTE_API int mte_attention_backward(int64_t B, int64_t H, int64_t L, int64_t S, int64_t D,
                                   int64_t Dv, const float *q, mte_head_strides sq,
                                   const float *k, mte_head_strides sk, const float *v,
                                   mte_head_strides sv, float scale, const float *pt,
                                   const float *dout, mte_head_strides sdo, float *dq,
                                   mte_head_strides sdq, float *dk, mte_head_strides sdk,
                                   float *dv, mte_head_strides sdv);

/*
 * The same two in half precision: q, k, v, out (forward) and dout, dq, dk, dv (backward)
 * hold bfloat16 / float16 values (dtype MTE_DT_BF16 / MTE_DT_F16 of mte_bf16.h, uint16_t
 * storage, strides in elements); the mask and pt stay float32. Each pair is widened into
 * scratch (exact) and computed by the float32 kernel; every output is rounded once, to
 * nearest even: the float32 results of the widened inputs, rounded.
 */
MTE_API int mte_attention_forward_half(int dtype, int64_t B, int64_t H, int64_t L, int64_t S,
                                       int64_t D, int64_t Dv, const uint16_t *q,
                                       mte_head_strides sq, const uint16_t *k,
                                       mte_head_strides sk, const uint16_t *v,
                                       mte_head_strides sv, const float *mask,
                                       mte_head_strides sm, float scale, int causal,
                                       float *pt, uint16_t *out, mte_head_strides so);
MTE_API int mte_attention_backward_half(int dtype, int64_t B, int64_t H, int64_t L,
                                        int64_t S, int64_t D, int64_t Dv, const uint16_t *q,
                                        mte_head_strides sq, const uint16_t *k,
                                        mte_head_strides sk, const uint16_t *v,
                                        mte_head_strides sv, float scale, const float *pt,
                                        const uint16_t *dout, mte_head_strides sdo,
                                        uint16_t *dq, mte_head_strides sdq, uint16_t *dk,
                                        mte_head_strides sdk, uint16_t *dv,
                                        mte_head_strides sdv);

#ifdef __cplusplus
}
#endif

#endif /* MTE_TRANSFORMER_H */
