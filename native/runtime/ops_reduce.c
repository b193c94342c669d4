/*
 * ops_reduce.c - ReduceSum, ReduceMean, ReduceMax and Softmax, LogSoftmax of the C runtime
 * (graph/opset_tensor.py), float32.
 *
 * A reduction walks the input in order, row by row (its innermost dim), with the output's
 * strides (0 along a reduced dim), into float64 accumulators allocated at prepare time; runs
 * of reduced or kept dims are merged first. Softmax along the last axis is libmte's row
 * kernel (mte_softmax_forward); along another axis a strided pass per slice.
 */
#include <math.h>
#include <string.h>

#include "kernels.h"
#include "mte_transformer.h"
#include "ops_util.h"

/* ---- reductions --------------------------------------------------------------------------- */

enum { REDUCE_SUM, REDUCE_MEAN, REDUCE_MAX };

typedef struct reduce_plan {
  int kind, ndim;
  int64_t numel, out_numel, count; /* count: elements per output */
  double *acc;                     /* out_numel accumulators */
  int64_t shape[MAXD], ostride[MAXD]; /* input dims; output strides, 0 when reduced */
} reduce_plan;

static double fmax_nan(double a, double b) { return (a >= b || a != a) ? a : b; }

static void reduce_row(const reduce_plan *pl, const float *x, int64_t n, int64_t ostride,
                       double *acc) {
  if (pl->kind == REDUCE_MAX) {
    if (ostride) for (int64_t i = 0; i < n; ++i) acc[i] = fmax_nan(acc[i], x[i]);
    else for (int64_t i = 0; i < n; ++i) acc[0] = fmax_nan(acc[0], x[i]);
  } else {
    if (ostride) {
      for (int64_t i = 0; i < n; ++i) acc[i] += x[i];
    } else {
      double s = 0;
      for (int64_t i = 0; i < n; ++i) s += x[i];
      acc[0] += s;
    }
  }
}

static int run_reduce(const rt_step *s, void *const *ptr) {
  const reduce_plan *pl = s->state;
  const float *x = ptr[s->node->inputs[0]];
  float *y = ptr[s->node->outputs[0]];
  double *acc = pl->acc;
  for (int64_t o = 0; o < pl->out_numel; ++o) acc[o] = pl->kind == REDUCE_MAX ? -INFINITY : 0.0;
  int last = pl->ndim - 1;
  int64_t len = pl->shape[last], rows = pl->numel ? pl->numel / len : 0, idx[MAXD], off = 0;
  memset(idx, 0, sizeof(int64_t) * (size_t)pl->ndim);
  for (int64_t r = 0; r < rows; ++r) {
    reduce_row(pl, x + r * len, len, pl->ostride[last], acc + off);
    for (int d = last - 1; d >= 0; --d) {
      off += pl->ostride[d];
      if (++idx[d] < pl->shape[d]) break;
      off -= pl->ostride[d] * pl->shape[d];
      idx[d] = 0;
    }
  }
  for (int64_t o = 0; o < pl->out_numel; ++o)
    y[o] = (float)(pl->kind == REDUCE_MEAN ? acc[o] / (double)pl->count : acc[o]);
  return MTE_OK;
}

/* The input's dims (collapsed: runs of reduced or kept dims merge) and output strides. */
static void reduce_dims(reduce_plan *pl, const rt_value *x, const int *reduced) {
  int64_t kept_stride[MAXD], kept_shape[MAXD];
  for (int d = 0; d < x->ndim; ++d) kept_shape[d] = reduced[d] ? 1 : x->shape[d];
  contiguous_strides(x->ndim, kept_shape, kept_stride);
  int nd = 0, prev = -1;
  for (int d = 0; d < x->ndim; ++d) {
    if (x->shape[d] == 1) continue;
    if (nd && reduced[d] == prev) {
      pl->shape[nd - 1] *= x->shape[d];
      pl->ostride[nd - 1] = reduced[d] ? 0 : kept_stride[d];
      continue;
    }
    pl->shape[nd] = x->shape[d];
    pl->ostride[nd++] = reduced[d] ? 0 : kept_stride[d];
    prev = reduced[d];
  }
  if (!nd) {
    pl->shape[0] = 1;
    pl->ostride[0] = 0;
    nd = 1;
  }
  pl->ndim = nd;
}

static int prepare_reduce(rt_prep *p, int kind) {
  const int64_t *axes;
  int64_t n, keep;
  int st = rt_expect_arity(p, 1, 1, 1);
  if (!st) st = expect_f32(p);
  if (!st) st = rt_attr_int(p, "keepdims", 1, &keep);
  if (!st) st = rt_attr_ints(p, "axes", -MAXD, NULL, &axes, &n);
  if (st) return st;
  const rt_value *x = rt_input(p, 0);
  int reduced[MAXD] = {0}, ndim = 0;
  int all = !rt_node_attr(p->node, "axes");
  for (int d = 0; d < x->ndim; ++d) reduced[d] = all;
  for (int64_t k = 0; !all && k < n; ++k) {
    int a;
    if (x->ndim == 0)
      return rt_node_fail(p, MTE_EFORMAT, "axis %lld is out of range for rank 0",
                          (long long)axes[k]);
    if ((st = norm_axis(p, axes[k], x->ndim, "axis", &a))) return st;
    if (reduced[a]) return rt_node_fail(p, MTE_EFORMAT, "axis %d is listed twice", a);
    reduced[a] = 1;
  }
  int64_t shape[MAXD], count = 1;
  for (int d = 0; d < x->ndim; ++d) {
    if (reduced[d]) count *= x->shape[d];
    if (!reduced[d] || keep) shape[ndim++] = reduced[d] ? 1 : x->shape[d];
  }
  if ((st = rt_expect_output(p, 0, x->dtype, ndim, shape))) return st;
  if (kind == REDUCE_MAX && count == 0 && rt_output(p, 0)->numel)
    return rt_node_fail(p, MTE_EFORMAT, "ReduceMax over an empty dim has no identity");
  reduce_plan *pl = rt_state_alloc(p, sizeof *pl);
  if (!pl) return MTE_ENOMEM;
  pl->kind = kind;
  pl->numel = x->numel;
  pl->out_numel = rt_output(p, 0)->numel;
  pl->count = count;
  pl->acc = rt_state_alloc(p, sizeof(double) * (size_t)(pl->out_numel ? pl->out_numel : 1));
  if (!pl->acc) return MTE_ENOMEM;
  reduce_dims(pl, x, reduced);
  p->step->state = pl;
  p->step->run = run_reduce;
  p->step->kernel = "reduce";
  return MTE_OK;
}

int rt_prepare_ReduceSum(rt_prep *p) { return prepare_reduce(p, REDUCE_SUM); }
int rt_prepare_ReduceMean(rt_prep *p) { return prepare_reduce(p, REDUCE_MEAN); }
int rt_prepare_ReduceMax(rt_prep *p) { return prepare_reduce(p, REDUCE_MAX); }

/* ---- Softmax, LogSoftmax along an axis ---------------------------------------------------- */

typedef struct softmax_plan {
  int64_t outer, n, inner;
  int log;
} softmax_plan;

/* one slice x[0], x[step], ... x[(n-1) step] as opset's reference computes it */
static void softmax_slice(const float *x, float *y, int64_t n, int64_t step, int log) {
  float m = -INFINITY, sum = 0.0f;
  for (int64_t j = 0; j < n; ++j) {
    float v = x[j * step];
    if (v > m || v != v) m = v;
  }
  for (int64_t j = 0; j < n; ++j) sum += expf(x[j * step] - m);
  float ls = logf(sum);
  for (int64_t j = 0; j < n; ++j) {
    float d = x[j * step] - m;
    y[j * step] = log ? d - ls : expf(d) / sum;
  }
}

static int run_softmax(const rt_step *s, void *const *ptr) {
  const softmax_plan *pl = s->state;
  const float *x = ptr[s->node->inputs[0]];
  float *y = ptr[s->node->outputs[0]];
  if (pl->inner == 1)
    return mte_softmax_forward(pl->outer, pl->n, x, y, pl->log ? MTE_SOFTMAX_LOG : 0);
  for (int64_t o = 0; o < pl->outer; ++o)
    for (int64_t i = 0; i < pl->inner; ++i) {
      int64_t at = o * pl->n * pl->inner + i;
      softmax_slice(x + at, y + at, pl->n, pl->inner, pl->log);
    }
  return MTE_OK;
}

static int prepare_softmax(rt_prep *p, int log) {
  int64_t axis_attr;
  int axis, st = rt_expect_arity(p, 1, 1, 1);
  if (!st) st = expect_f32(p);
  if (!st) st = rt_attr_int(p, "axis", -1, &axis_attr);
  if (st) return st;
  const rt_value *x = rt_input(p, 0);
  if ((st = norm_axis(p, axis_attr, x->ndim, "axis", &axis))) return st;
  if ((st = rt_expect_output_like(p, 0, 0))) return st;
  softmax_plan *pl = rt_state_alloc(p, sizeof *pl);
  if (!pl) return MTE_ENOMEM;
  pl->outer = prod(x->shape, 0, axis);
  pl->n = x->ndim ? x->shape[axis] : 1;
  pl->inner = x->ndim ? prod(x->shape, axis + 1, x->ndim) : 1;
  pl->log = log;
  p->step->state = pl;
  p->step->run = run_softmax;
  p->step->kernel = pl->inner == 1 ? "softmax_rows" : "softmax_strided";
  return MTE_OK;
}

int rt_prepare_Softmax(rt_prep *p) { return prepare_softmax(p, 0); }
int rt_prepare_LogSoftmax(rt_prep *p) { return prepare_softmax(p, 1); }
