/*
 * mte_optim.h - fused optimizer updates: one pass over a parameter tensor that reads the
 * gradient and the optimizer state and writes the new parameter and state in place.
 *
 * The math is PyTorch's (torch.optim.SGD, Adam, AdamW), computed in float32 in the same
 * operation order as the numpy twins in minitorch_edge/backend/numpy_backend.py
 * (sgd_step, adam_step), so results agree to float32 rounding. Scalars come in as double;
 * derived coefficients (1 - dampening, 1 - lr*wd, bias corrections, ...) are computed in
 * double and rounded to float once, as numpy does with Python floats.
 *
 * Every array holds n floats and must not overlap another (grad is only read). Long tensors
 * are split into chunks over the library's threads (mte_set_num_threads). Invalid arguments
 * (n < 0, a NULL buffer with n > 0, a missing state buffer) give MTE_EINVAL and change
 * nothing; n == 0 does nothing.
 */
#ifndef MTE_OPTIM_H
#define MTE_OPTIM_H

#include <stdint.h>

#include "mte.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * SGD with optional momentum, weight decay, Nesterov, maximize:
 *   g = maximize ? -grad : grad;   g = g + weight_decay * p        (if weight_decay != 0)
 *   if momentum != 0:  buf = g (first_step)  or  buf = momentum * buf + (1 - dampening) * g
 *                      g = nesterov ? g + momentum * buf : buf
 *   p = p - lr * g
 * buf may be NULL only when momentum == 0.
 */
MTE_API int mte_sgd_step(int64_t n, float *param, const float *grad, float *buf, double lr,
                         double momentum, double dampening, double weight_decay, int nesterov,
                         int maximize, int first_step);

/*
 * Adam / AdamW (decoupled_weight_decay) with optional AMSGrad (max_exp_avg_sq != NULL), at
 * step t >= 1 (the count after this update):
 *   g = maximize ? -grad : grad
 *   weight_decay: p = p * (1 - lr * wd) (decoupled)  or  g = g + wd * p
 *   m = lerp(m, g, 1 - beta1);   v = beta2 * v + (1 - beta2) * g * g
 *   vmax = max(vmax, v) and v := vmax                      (amsgrad; NaN propagates)
 *   p = p - (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
 * lerp(a, b, w) = a + w (b - a) for w < 0.5, else b - (b - a)(1 - w) (PyTorch's rounding).
 */
MTE_API int mte_adam_step(int64_t n, float *param, const float *grad, float *exp_avg,
                          float *exp_avg_sq, float *max_exp_avg_sq, double step, double lr,
                          double beta1, double beta2, double eps, double weight_decay,
                          int decoupled_weight_decay, int maximize);

#ifdef __cplusplus
}
#endif

#endif /* MTE_OPTIM_H */
