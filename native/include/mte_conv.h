/*
 * mte_conv.h - 2-D convolution of libmte (NCHW, float32): the forward pass with a fused
 * bias + residual + activation epilogue, and both backward passes. Included by mte.h.
 *
 * Shapes (row-major, C-contiguous):
 *   x       (batch, in_channels, in_h, in_w)
 *   w       (out_channels, in_channels / groups, kernel_h, kernel_w)
 *   bias    (out_channels) or NULL
 *   y       (batch, out_channels, out_h, out_w)
 *
 *   y[n, o, r, s] = act(bias[o] + sum_{c in group(o), i, j}
 *                       w[o, c, i, j] * xpad[n, c, r*stride_h + i*dilation_h,
 *                                                s*stride_w + j*dilation_w])
 *
 * xpad is x with pad_top/pad_bottom zero rows and pad_left/pad_right zero columns around it
 * (asymmetric padding allowed). The forward pass needs out_h/out_w equal to
 * mte_conv2d_output_size(); the backward passes take them from grad_y, whatever they are
 * (windows that fall outside xpad read zeros and their gradients are dropped), exactly as
 * the numpy reference (minitorch_edge/backend/numpy_backend.py) does.
 *
 * Every function validates its descriptor (sizes >= 0, kernel/stride/dilation/groups >= 1,
 * channels divisible by groups, each value <= 2^30, element counts that fit in memory) and
 * returns MTE_EINVAL / MTE_EOVERFLOW before touching any buffer. Scratch memory comes from
 * `arena` (NULL = the library's default arena), so repeated calls allocate nothing.
 */
#ifndef MTE_CONV_H
#define MTE_CONV_H

#include "mte.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mte_conv2d_desc {
  int64_t batch, in_channels, in_h, in_w;
  int64_t out_channels, kernel_h, kernel_w;
  int64_t out_h, out_w;
  int64_t stride_h, stride_w;
  int64_t pad_top, pad_bottom, pad_left, pad_right;
  int64_t dilation_h, dilation_w;
  int64_t groups;
} mte_conv2d_desc;

/* Outputs along one dimension: floor((in + pads - dilation*(kernel-1) - 1) / stride) + 1.
 * May be <= 0 (no window fits); returns INT64_MIN for invalid arguments. */
MTE_API int64_t mte_conv2d_output_size(int64_t in, int64_t kernel, int64_t stride,
                                       int64_t pad_before, int64_t pad_after,
                                       int64_t dilation);

/* y = act(conv(x, w) + bias). activation: any mte_activation (MTE_ACT_NONE, RELU, RELU6,
 * GELU, GELU_TANH). bias may be NULL. y must not overlap x, w or bias. */
MTE_API int mte_conv2d_forward(const mte_conv2d_desc *d, const float *x, const float *w,
                               const float *bias, int activation, float *y,
                               mte_arena *arena);

/* y = act(conv(x, w) + bias + residual): a ResNet block's relu(conv(x) + b + identity) in one
 * pass. residual (NULL = none) is shaped like y, (batch, out_channels, out_h, out_w), and is
 * added in the same epilogue as bias, before the activation. It may alias x (it is only
 * read) but must not overlap y (MTE_EINVAL). Every path of this function supports it (GEMM,
 * 1x1, the direct depthwise loops); the separate Winograd and depthwise-3x3 kernels
 * (mte_winograd.h, mte_depthwise.h) keep bias + ReLU/ReLU6 only. */
MTE_API int mte_conv2d_forward_ex(const mte_conv2d_desc *d, const float *x, const float *w,
                                  const float *bias, int activation, const float *residual,
                                  float *y, mte_arena *arena);

/*
 * Prepacked weights, for inference: forward packs w into MR-tall GEMM panels on every call;
 * an engine whose weights do not change packs them once instead:
 *
 *     int64_t n = mte_conv2d_packed_weight_floats(&d);   // 0: this conv packs nothing
 *     float *p = aligned_alloc(64, n * sizeof(float));     // 64-byte aligned
 *     mte_conv2d_pack_weight(&d, w, p, n);
 *     mte_conv2d_forward_packed(&d, x, NULL, p, n, bias, act, residual, y, NULL);
 *
 * The layout depends on the weight's shape, the groups and the active ISA's microkernel; a
 * header in the buffer records them, and forward_packed returns MTE_EINVAL when they differ
 * from what it would use (e.g. after mte_set_isa): pack again. packed_weight_floats returns
 * 0 for convs that never pack their weights (the direct depthwise loops: in_channels/groups
 * == 1 and at most 4 outputs per group) and -1 for an invalid descriptor; pack_weight then
 * returns MTE_EUNSUPPORTED. forward_packed with packed == NULL is forward_ex (w required).
 */
MTE_API int64_t mte_conv2d_packed_weight_floats(const mte_conv2d_desc *d);
MTE_API int mte_conv2d_pack_weight(const mte_conv2d_desc *d, const float *w, float *packed,
                                   int64_t packed_floats);
MTE_API int mte_conv2d_forward_packed(const mte_conv2d_desc *d, const float *x, const float *w,
                                      const float *packed, int64_t packed_floats,
                                      const float *bias, int activation,
                                      const float *residual, float *y, mte_arena *arena);

/*
 * Direct KxK convolution for inference (conv_direct.c): groups 1, dilation 1, any stride
 * and padding, act MTE_ACT_NONE, RELU or RELU6, an optional residual (shaped like y, added
 * before the activation). The weights are packed once, into blocks of 64 output channels
 * (the same layout on every ISA):
 *
 *     int64_t n = mte_conv2d_direct_packed_floats(K, C, kh, kw);    // -1: invalid sizes
 *     mte_conv2d_direct_pack(K, C, kh, kw, w, packed);               // packed: n floats
 *     mte_conv2d_direct_forward(&d, x, packed, bias, residual, act, y, NULL);
 *
 * mte_conv2d_direct_should_use says whether it is expected to beat the other routes
 * (im2col + GEMM, Winograd) for this conv on the active ISA (the measured rule).
 */
MTE_API int64_t mte_conv2d_direct_packed_floats(int64_t K, int64_t C, int64_t kh, int64_t kw);
MTE_API int mte_conv2d_direct_pack(int64_t K, int64_t C, int64_t kh, int64_t kw,
                                   const float *w, float *packed);
MTE_API int mte_conv2d_direct_forward(const mte_conv2d_desc *d, const float *x,
                                      const float *packed, const float *bias,
                                      const float *residual, int activation, float *y,
                                      mte_arena *arena);
MTE_API int mte_conv2d_direct_should_use(const mte_conv2d_desc *d, int activation);

/* grad_x (batch, in_channels, in_h, in_w) = the adjoint of x -> conv(x, w) applied to
 * grad_y (batch, out_channels, out_h, out_w). grad_x is overwritten (not accumulated). */
MTE_API int mte_conv2d_backward_input(const mte_conv2d_desc *d, const float *grad_y,
                                      const float *w, float *grad_x, mte_arena *arena);

/* grad_w (out_channels, in_channels/groups, kernel_h, kernel_w) = the adjoint of
 * w -> conv(x, w) applied to grad_y, summed over the batch; grad_w is overwritten. */
MTE_API int mte_conv2d_backward_weight(const mte_conv2d_desc *d, const float *grad_y,
                                       const float *x, float *grad_w, mte_arena *arena);

#ifdef __cplusplus
}
#endif

#endif /* MTE_CONV_H */
