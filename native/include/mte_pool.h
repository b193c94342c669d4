/*
 * mte_pool.h - 2-D max and average pooling, forward and backward (included by mte.h).
 *
 * Same conventions as mte_depthwise.h: NCHW float32, C-contiguous, sizes given; the N*C
 * planes are independent (the unit of threading); arguments are validated (MTE_EINVAL,
 * output untouched), nothing outside the described buffers is touched, and zero-sized
 * dimensions do nothing. Windows follow PyTorch's max_pool2d / avg_pool2d.
 */
#ifndef MTE_POOL_H
#define MTE_POOL_H

#include <stdint.h>

#include "mte.h"

#ifdef __cplusplus
extern "C" {
#endif

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

#endif /* MTE_POOL_H */
