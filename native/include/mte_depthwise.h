/*
 * mte_depthwise.h - depthwise convolution (included by mte.h): the general K x K forward
 * (mte_depthwise) and depthwise 3x3 with padding 1, forward and backward.
 *
 * All tensors are NCHW float32, C-contiguous, described by their sizes; each (n, c) plane
 * is independent, so kernels thread over the N*C planes. Every function validates its
 * arguments (MTE_EINVAL, output untouched) and never reads or writes outside the buffers
 * its sizes describe. Zero-sized dimensions are fine (nothing is done).
 */
#ifndef MTE_DEPTHWISE_H
#define MTE_DEPTHWISE_H

#include <stdint.h>

#include "mte.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Output rows (or columns) of a K-wide window, stride `stride`, `pad` zeros on each side:
 * (size + 2*pad - K) / stride + 1, and 0 when size == 0 or size + 2*pad < K. -1 for
 * arguments mte_depthwise refuses (K < 1 or > 31, pad < 0 or >= K, stride not 1 or 2). */
MTE_API int64_t mte_depthwise_output_size(int64_t size, int K, int stride, int pad);

/*
 * The general depthwise convolution, forward (inference): for a K x K kernel, stride 1 or 2
 * in both directions, `pad` zeros on every side (0 <= pad < K), dilation 1:
 *   y[n,c,r,s] = act(bias[c] + sum_{i,j<K} w[c,i,j] * x[n,c, r*stride+i-pad, s*stride+j-pad])
 * x (N,C,H,W), w (C,K,K), bias (C) or NULL, y (N,C,Ho,Wo) with Ho/Wo =
 * mte_depthwise_output_size(H/W, K, stride, pad); activation MTE_ACT_NONE, RELU or RELU6.
 * 1 <= K <= 31 (3, 5 and 7 have unrolled kernels). y must not overlap x. Every ISA
 * (mte__isa()->depthwise): depthwise_body.h.
 */
MTE_API int mte_depthwise(int64_t N, int64_t C, int64_t H, int64_t W, int K, int stride,
                          int pad, const float *x, const float *w, const float *bias,
                          int activation, float *y);

/* Output rows (or columns) of a 3x3 window with padding 1: (size - 1) / stride + 1, and 0
 * for size 0. stride must be 1 or 2 (else -1). */
MTE_API int64_t mte_depthwise3x3_output_size(int64_t size, int stride);

/*
 * y[n,c,r,s] = act(bias[c] + sum_{i,j<3} w[c,i,j] * x[n,c, r*stride+i-1, s*stride+j-1])
 * with zeros outside x (padding 1). x (N,C,H,W), w (C,3,3), bias (C) or NULL,
 * y (N,C,Ho,Wo) with Ho/Wo = mte_depthwise3x3_output_size(H/W, stride); stride 1 or 2;
 * activation is any mte_activation (ReLU / ReLU6 in the kernel's registers, the others
 * by the fused epilogue on each output plane while it is in cache). y must not overlap x.
 */
MTE_API int mte_depthwise3x3(int64_t N, int64_t C, int64_t H, int64_t W, int stride,
                             const float *x, const float *w, const float *bias,
                             int activation, float *y);

/* dL/dx of mte_depthwise3x3 (no activation): gx (N,C,H,W) from gy (N,C,Ho,Wo), Ho/Wo as
 * above. gx must not overlap gy. */
MTE_API int mte_depthwise3x3_backward_input(int64_t N, int64_t C, int64_t H, int64_t W,
                                            int stride, const float *gy, const float *w,
                                            float *gx);

/* dL/dw of mte_depthwise3x3 (no activation): gw (C,3,3) = sum over n, r, s. */
MTE_API int mte_depthwise3x3_backward_weight(int64_t N, int64_t C, int64_t H, int64_t W,
                                             int stride, const float *gy, const float *x,
                                             float *gw);

#ifdef __cplusplus
}
#endif

#endif /* MTE_DEPTHWISE_H */
