/*
 * ops_util.h - small helpers the tensor-op files share (ops_tensor.c, ops_reduce.c): Python's
 * axis rule (opset.norm_axis), the float32-only check, C-contiguous strides and products of
 * dims.
 */
#ifndef MTE_RUNTIME_OPS_UTIL_H
#define MTE_RUNTIME_OPS_UTIL_H

#include "kernels.h"

#define MAXD MTE_MODEL_MAX_NDIM

/* Python's norm_axis: -rank <= axis < max(rank, 1), then axis mod rank (0 for rank 0). */
static inline int norm_axis(const rt_prep *p, int64_t axis, int rank, const char *what, int *out) {
  *out = 0;
  if (axis < -rank || axis >= (rank > 1 ? rank : 1))
    return rt_node_fail(p, MTE_EFORMAT, "%s %lld is out of range for rank %d", what,
                        (long long)axis, rank);
  *out = rank ? (int)((axis + rank) % rank) : 0;
  return MTE_OK;
}

static inline void contiguous_strides(int ndim, const int64_t *shape, int64_t *stride) {
  int64_t step = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    stride[d] = step;
    step *= shape[d];
  }
}

/* Input 0 is float32: else MTE_EUNSUPPORTED (Python computes the other dtypes too). */
static inline int expect_f32(const rt_prep *p) {
  const rt_value *x = rt_input(p, 0);
  if (x->dtype == MTE_DTYPE_FLOAT32) return MTE_OK;
  return rt_node_fail(p, MTE_EUNSUPPORTED, "no C kernel for input 0 (\"%.200s\") of dtype %s",
                      x->name, mte_dtype_name(x->dtype));
}

static inline int64_t prod(const int64_t *shape, int from, int to) {
  int64_t n = 1;
  for (int d = from; d < to; ++d) n *= shape[d];
  return n;
}

#endif
