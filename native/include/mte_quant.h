/*
 * mte_quant.h - int8 inference kernels of libmte (TFLite-style asymmetric quantization).
 * Included by mte.h.
 *
 * A real value v is stored as q = round(v / scale) + zero_point in int8. A kernel computes
 * an exact int32 accumulator (e.g. bias + sum (x - x_zp) * w) and requantizes it to int8 with
 * a fixed-point multiplier per output channel (m, shift) from mte_quantize_multiplier:
 *
 *     y = clamp(mbqm(acc, m, shift) + y_zp, act_min, act_max)
 *     mbqm(x, m, shift) = RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(
 *                           saturate(x << max(shift, 0)), m), max(-shift, 0))
 *
 * exactly as TFLite / gemmlowp (and numpy_int8.py, the numpy twin) compute it: every result
 * is bit-exact on every ISA. Layout NCHW, C-contiguous; convolution geometry as mte_conv.h
 * (mte_conv2d_desc). Every entry point validates its arguments and returns MTE_EINVAL
 * (outputs untouched) for: a NULL buffer with a non-empty size, a zero point outside
 * [-128, 127], a multiplier outside [0, 2^31 - 1], a shift outside [-31, 30],
 * act_min > act_max or outside [-128, 127], a weight equal to -128 (the GEMM kernels'
 * exactness needs w in [-127, 127]) and a reduction longer than MTE_QMAX_K (beyond it an
 * int32 accumulator could wrap).
 */
#ifndef MTE_QUANT_H
#define MTE_QUANT_H

#include <stdint.h>

#include "mte.h"
#include "mte_conv.h"
#include "mte_pool.h"

#ifdef __cplusplus
extern "C" {
#endif

/* longest reduction a kernel takes: 65536 * 255 * 127 < 2^31 */
#define MTE_QMAX_K 65536

/* Per-output-channel requantization: multiplier[o], shift[o] (one per output channel),
 * then the output zero point and the activation clamp (act_min = -128, act_max = 127 for
 * none; ReLU is act_min = zero_point). */
typedef struct mte_requant {
  const int32_t *multiplier; /* in [0, 2^31 - 1] */
  const int32_t *shift;      /* in [-31, 30]; > 0 is a left shift */
  int32_t zero_point;        /* of the output, in [-128, 127] */
  int32_t act_min, act_max;  /* -128 <= act_min <= act_max <= 127 */
} mte_requant;

/* TFLite's QuantizeMultiplier: real (finite, >= 0) ~= m * 2^(shift - 31), m in [2^30, 2^31)
 * (or 0). MTE_EINVAL for a negative or non-finite real. */
MTE_API int mte_quantize_multiplier(double real, int32_t *multiplier, int32_t *shift);

/* y[i] = clamp(roundf(x[i] / scale) + zp, -128, 127) (round half away from zero, float32
 * division; NaN gives zp). scale finite and > 0. */
MTE_API int mte_quantize(int64_t n, const float *x, float scale, int32_t zero_point, int8_t *y);
/* y[i] = (float)(q[i] - zp) * scale */
MTE_API int mte_dequantize(int64_t n, const int8_t *q, float scale, int32_t zero_point,
                           float *y);
/* y[i] = clamp(mbqm(q[i] - in_zp, m, shift) + out_zp, -128, 127): one tensor's scale change */
MTE_API int mte_requantize(int64_t n, const int8_t *q, int32_t in_zp, int32_t multiplier,
                           int32_t shift, int32_t out_zp, int8_t *y);

/* Element-wise add of two int8 tensors of n values with their own scales (TFLite's ADD):
 *   sa = mbqm((a - a_zp) << left_shift, a_mult, a_shift), sb likewise,
 *   y  = clamp(mbqm(sa + sb, y_mult, y_shift) + y_zp, act_min, act_max).
 * left_shift in [0, 23]. */
typedef struct mte_qadd_params {
  int32_t a_zero_point, a_multiplier, a_shift;
  int32_t b_zero_point, b_multiplier, b_shift;
  int32_t y_zero_point, y_multiplier, y_shift;
  int32_t act_min, act_max;
  int32_t left_shift;
} mte_qadd_params;
MTE_API int mte_qadd(const mte_qadd_params *p, int64_t n, const int8_t *a, const int8_t *b,
                     int8_t *y);

/* The same add as a lookup: an int8 pair has only 65,536 values, so mte_qadd_table
 * evaluates the arithmetic above once for each (table[(uint8_t)a << 8 | (uint8_t)b], 64 KiB)
 * and mte_qadd_lookup is then one load per element, equal to mte_qadd bit for bit. For an
 * engine that adds with fixed parameters many times (a model's residual adds). */
MTE_API int mte_qadd_table(const mte_qadd_params *p, int8_t *table);
MTE_API int mte_qadd_lookup(int64_t n, const int8_t *a, const int8_t *b, const int8_t *table,
                            int8_t *y);
/* The add for an engine holding both: the active ISA's vector arithmetic where it has one for
 * these parameters, else the lookup in table (mte_qadd_table of p). Equal to mte_qadd. */
MTE_API int mte_qadd_run(const mte_qadd_params *p, const int8_t *table, int64_t n,
                         const int8_t *a, const int8_t *b, int8_t *y);

/*
 * Convolution (and GEMM) with requantization fused into the microkernel's epilogue:
 *   acc[n,o,r,s] = bias[o] + sum_{c in group(o), i, j} (xpad[n,c,..] - x_zp) * w[o,c,i,j]
 * xpad is padded with x_zp (padded taps contribute 0); bias may be NULL (0). y must not
 * overlap x. Depthwise 3x3 (one channel per group, stride_w 1 or 2, dilation 1) runs the
 * "qdepthwise" kernels, everything else the "qgemm" microkernel (1x1 stride 1 packs rows
 * of x, other shapes fold im2col into the packing).
 *
 * The weights can be prepared once (packed into the active ISA's GEMM panels with their
 * row sums, for the zero-point compensation): prepare returns a plan, run uses it. A plan
 * records the weight's shape, groups and ISA; run returns MTE_EINVAL when the descriptor
 * does not match it or the active ISA changed since (prepare again). mte_qconv2d is
 * prepare + run + free.
 */
typedef struct mte_qconv2d_plan mte_qconv2d_plan;
MTE_API int mte_qconv2d_prepare(const mte_conv2d_desc *d, const int8_t *w,
                                mte_qconv2d_plan **plan);
MTE_API int mte_qconv2d_run(const mte_qconv2d_plan *plan, const mte_conv2d_desc *d,
                            const int8_t *x, int32_t x_zero_point, const int32_t *bias,
                            const mte_requant *rq, int8_t *y, mte_arena *arena);
MTE_API void mte_qconv2d_free(mte_qconv2d_plan *plan); /* NULL is fine */
/* For an engine whose conv never changes: bind computes the per-channel constants (bias,
 * multiplier and shift, the compensation of x_zero_point) once and keeps them in the plan
 * with a copy of d and rq's zero point and clamp (rq's arrays are not kept); run_bound is
 * then mte_qconv2d_run with those arguments, bit for bit. Binding again replaces them.
 * run_bound returns MTE_EINVAL for an unbound plan or after the active ISA changed. */
MTE_API int mte_qconv2d_bind(mte_qconv2d_plan *plan, const mte_conv2d_desc *d,
                             int32_t x_zero_point, const int32_t *bias, const mte_requant *rq);
MTE_API int mte_qconv2d_run_bound(const mte_qconv2d_plan *plan, const int8_t *x, int8_t *y,
                                  mte_arena *arena);
MTE_API int mte_qconv2d(const mte_conv2d_desc *d, const int8_t *x, int32_t x_zero_point,
                        const int8_t *w, const int32_t *bias, const mte_requant *rq, int8_t *y,
                        mte_arena *arena);

/* Fully connected: x (rows, K), w (M, K) -> y (rows, M),
 *   acc[r, o] = bias[o] + sum_k (x[r, k] - x_zp) * w[o, k], requantized per output o.
 * plan: NULL, or one from mte_qlinear_prepare (the same weight). */
MTE_API int mte_qlinear_prepare(int64_t M, int64_t K, const int8_t *w, mte_qconv2d_plan **plan);
MTE_API int mte_qlinear(int64_t rows, int64_t K, int64_t M, const int8_t *x,
                        int32_t x_zero_point, const int8_t *w, const mte_qconv2d_plan *plan,
                        const int32_t *bias, const mte_requant *rq, int8_t *y,
                        mte_arena *arena);

/* The same fully connected layer for a few rows (batch 1), everything constant prepared
 * once: the weight (M, K) packed for a matrix-vector product, and per output o its bias,
 * requantization (rq, copied) and the compensation of the input zero point x_zp. run:
 * x (rows, K) -> y (rows, M), equal to mte_qlinear with the same arguments bit for bit; any
 * ISA (the plan does not depend on it). bias may be NULL; y must not overlap x. */
typedef struct mte_qgemv_plan mte_qgemv_plan;
MTE_API int mte_qgemv_prepare(int64_t M, int64_t K, const int8_t *w, int32_t x_zero_point,
                              const int32_t *bias, const mte_requant *rq,
                              mte_qgemv_plan **plan);
MTE_API int mte_qgemv_run(const mte_qgemv_plan *plan, int64_t rows, const int8_t *x,
                          int8_t *y);
MTE_API void mte_qgemv_free(mte_qgemv_plan *plan); /* NULL is fine */

/* Plain int8 GEMM, output channels down the rows: a (M, K), b (K, N) row-major,
 *   acc[i, j] = bias[i] + sum_k a[i, k] * (b[k, j] - b_zp), requantized per row i. */
MTE_API int mte_qgemm(int64_t M, int64_t N, int64_t K, const int8_t *a, const int8_t *b,
                      int32_t b_zero_point, const int32_t *bias, const mte_requant *rq,
                      int8_t *c, mte_arena *arena);

/* Pooling on int8 planes (same scale in and out), windows as mte_pool.h (PyTorch's rules):
 * max over the window's real elements; average = the sum of its real elements divided by
 * their count (count_include_pad = 0) or by the window clipped to the padded input (1),
 * rounded half away from zero, clamped to [act_min, act_max]. divisor_override must be 0. */
MTE_API int mte_qmax_pool2d(const mte_pool2d_params *p, int64_t N, int64_t C, int64_t H,
                            int64_t W, const int8_t *x, int8_t *y);
MTE_API int mte_qavg_pool2d(const mte_pool2d_params *p, int64_t N, int64_t C, int64_t H,
                            int64_t W, const int8_t *x, int32_t act_min, int32_t act_max,
                            int8_t *y);

/* int8 multiply-accumulate peak of one core with the active ISA's qgemm microkernel, in
 * GOPS (2 ops per multiply-add; VNNI: vpdpbusd chains), timed over ~seconds. */
MTE_API double mte_peak_gops_int8(double seconds);

/* What the int8 GEMM (qconv2d, qlinear) runs now for a reduction of K terms (K = k_h * k_w *
 * C_in / groups; K <= 0: the column's best), e.g. "amx_int8 tdpbsud" (AMX, K >= 64),
 * "avx512vnni vpdpbusd"; the ISA row's name for kernels without a path string. */
MTE_API const char *mte_qgemm_path(int64_t K);

#ifdef __cplusplus
}
#endif

#endif /* MTE_QUANT_H */
