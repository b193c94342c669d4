/*
 * ops_quant.h - what the int8 op files share (ops_quant.c: the conversions; ops_qlayers.c: the
 * int8 layers): reading constant scales, zero points and activation ranges from a node, TFLite's
 * multipliers, and the rescale of one int8 tensor to new parameters (Python's _rescaled).
 */
#ifndef MTE_RUNTIME_OPS_QUANT_H
#define MTE_RUNTIME_OPS_QUANT_H

#include "kernels.h"

int rt_q_is_int_dtype(mte_dtype d);

/* Element k of an integer constant. */
int64_t rt_q_int_at(const rt_value *v, int64_t k);

/* Element k of a float32 / float64 constant, as a double. */
double rt_q_real_at(const rt_value *v, int64_t k);

/* Constant input i (present), float32 or float64, with 1 or `n` elements (n <= 1: only 1). */
int rt_q_expect_scale_input(const rt_prep *p, int i, int64_t n, const rt_value **out);

/* Scale k as Python's scale_of takes it: rounded to float32, positive and finite. */
int rt_q_scale_at(const rt_prep *p, const rt_value *v, int64_t k, float *out);

/* One scale: input i with one element, validated. */
int rt_q_one_scale(const rt_prep *p, int i, float *out);

/* Python's zero_point(): a constant of one integer in [-128, 127]; 0 when left out. */
int rt_q_one_zero_point(const rt_prep *p, int i, int32_t *out);

/* act_min / act_max: -128 <= act_min <= act_max <= 127. */
int rt_q_act_range(const rt_prep *p, int32_t *lo, int32_t *hi);

/* TFLite's QuantizeMultiplier of a real factor (always finite and > 0 here). */
int rt_q_multiplier_of(const rt_prep *p, double real, int32_t *m, int32_t *shift);

/* Input i is int8. */
int rt_q_expect_int8(const rt_prep *p, int i);

/* A libmte failure in prepare: refused variant. */
int rt_q_libmte_fail(const rt_prep *p, int st, const char *what);

/* Python's axis % ndim for the per-channel ops. */
int64_t rt_q_norm_axis(int64_t axis, int ndim);

typedef struct rescale {
  int identity; /* same scale and zero point: a copy */
  int32_t in_zp, multiplier, shift, out_zp;
} rescale;

/* _rescaled's parameters from inputs Xs, Xz, Ys, Yz at 1..4. */
int rt_q_rescale_params(const rt_prep *p, rescale *r);

/* y = x in the new parameters; in place (y == x) is safe: element i is read before written */
int rt_q_apply_rescale(const rescale *r, int64_t n, const int8_t *x, int8_t *y);

#endif
