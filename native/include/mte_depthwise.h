/*
 * mte_depthwise.h - depthwise 3x3 convolution and 2-D pooling (included by mte.h).
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

/* ---------------------------------------------------------------- depthwise 3x3 */

/* Output rows (or columns) of a 3x3 window with padding 1: (size - 1) / stride + 1, and 0
 * for size 0. stride must be 1 or 2 (else -1). */
MTE_API int64_t mte_depthwise3x3_output_size(int64_t size, int stride);

/*
 * y[n,c,r,s] = act(bias[c] + sum_{i,j<3} w[c,i,j] * x[n,c, r*stride+i-1, s*stride+j-1])
 * with zeros outside x (padding 1). x (N,C,H,W), w (C,3,3), bias (C) or NULL,
 * y (N,C,Ho,Wo) with Ho/Wo = mte_depthwise3x3_output_size(H/W, stride); stride 1 or 2;
 * activation is an mte_activation (MTE_ACT_NONE, MTE_ACT_RELU, MTE_ACT_RELU6).
 * y must not overlap x.
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

/* ---------------------------------------------------------------- pooling */

/*
 * Window parameters, PyTorch's conventions: symmetric padding, pad <= kernel / 2,
 * kernel, stride, dilation >= 1. ceil_mode lets the last window hang over the bottom/right
 * edge while it starts inside the input or the top/left padding.
 */
typedef struct mte_pool2d_params {
  int64_t kernel_h, kernel_w;
  int64_t stride_h, stride_w;
  int64_t pad_h, pad_w;
  int64_t dilation_h, dilation_w; /* max pooling only (average pooling needs 1) */
  int ceil_mode;
  int count_include_pad;    /* average pooling: padding counts in the divisor */
  int64_t divisor_override; /* average pooling: 0 = none, else the divisor of every window */
} mte_pool2d_params;

/* Outputs along one dim (PyTorch's rule); -1 if the arguments are invalid. The result may
 * be 0 (or negative windows are clipped to 0) when the input is too small. */
MTE_API int64_t mte_pool2d_output_size(int64_t size, int64_t kernel, int64_t stride,
                                       int64_t pad, int64_t dilation, int ceil_mode);

/*
 * Max pooling: y (N,C,Ho,Wo) and, if indices != NULL, the flat position h*W + w of each
 * window's maximum inside its plane. Padding never wins; the first maximum wins ties; a
 * window holding NaN gives NaN and the position of its last NaN (PyTorch's rules).
 */
MTE_API int mte_max_pool2d(const mte_pool2d_params *p, int64_t N, int64_t C, int64_t H,
                           int64_t W, const float *x, float *y, int64_t *indices);

/* gx (N,C,H,W) = 0, then gy[n,c,k] added at gx[n,c, indices[n,c,k]] for the Ho*Wo = L
 * entries of each plane. Every index must lie in [0, H*W) (else MTE_EINVAL, gx untouched). */
MTE_API int mte_max_pool2d_backward(int64_t N, int64_t C, int64_t H, int64_t W, int64_t L,
                                    const float *gy, const int64_t *indices, float *gx);

/* Average pooling: window sums of the zero-padded input divided by divisor_override, or
 * by the window size clipped to the padded input (count_include_pad), or by the number of
 * input elements it covers. Requires dilation 1. */
MTE_API int mte_avg_pool2d(const mte_pool2d_params *p, int64_t N, int64_t C, int64_t H,
                           int64_t W, const float *x, float *y);

/* dL/dx of average pooling: gx (N,C,H,W) from gy (N,C,Ho,Wo) (any Ho, Wo: windows past
 * the input contribute nothing; ceil_mode is not used). */
MTE_API int mte_avg_pool2d_backward(const mte_pool2d_params *p, int64_t N, int64_t C,
                                    int64_t H, int64_t W, int64_t Ho, int64_t Wo,
                                    const float *gy, float *gx);

#ifdef __cplusplus
}
#endif

#endif /* MTE_DEPTHWISE_H */
