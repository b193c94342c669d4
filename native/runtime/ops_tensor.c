/*
 * ops_tensor.c - the tensor ops of the C runtime (graph/opset_tensor.py, graph/opset.py):
 * views, elementwise math, comparisons, shape and index ops, reductions, softmax.
 *
 * Views (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout): the memory plan gives
 * output 0 its input's memory, so running one does nothing; prepare checks that the output
 * has the input's dtype and element count (all a C-contiguous view needs).
 */
#include <math.h>
#include <string.h>

#include "kernels.h"

/* ---- views ------------------------------------------------------------------------------ */

static int run_view(const rt_step *s, void *const *ptr) {
  (void)s;
  (void)ptr;
  return MTE_OK;
}

static int prepare_view(rt_prep *p, int required, int max_inputs) {
  int st = rt_expect_arity(p, required, max_inputs, 1);
  if (st) return st;
  const rt_value *x = rt_input(p, 0), *y = rt_output(p, 0);
  if (y->dtype != x->dtype || y->numel != x->numel)
    return rt_node_fail(p, MTE_EFORMAT,
                        "output \"%.200s\" (%s, %lld elements) must be a view of input \"%.200s\" "
                        "(%s, %lld elements)",
                        y->name, mte_dtype_name(y->dtype), (long long)y->numel, x->name,
                        mte_dtype_name(x->dtype), (long long)x->numel);
  p->step->run = run_view;
  p->step->kernel = "view";
  return MTE_OK;
}

int rt_prepare_Reshape(rt_prep *p) { return prepare_view(p, 2, 2); }
int rt_prepare_Flatten(rt_prep *p) { return prepare_view(p, 1, 1); }
int rt_prepare_Squeeze(rt_prep *p) { return prepare_view(p, 1, 2); }
int rt_prepare_Unsqueeze(rt_prep *p) { return prepare_view(p, 2, 2); }
int rt_prepare_Identity(rt_prep *p) { return prepare_view(p, 1, 1); }
int rt_prepare_Dropout(rt_prep *p) { return prepare_view(p, 1, 3); }

/* ---- elementwise ------------------------------------------------------------------------- */

static int run_relu(const rt_step *s, void *const *ptr) {
  const float *x = ptr[s->node->inputs[0]];
  float *y = ptr[s->node->outputs[0]];
  int64_t n = s->model->values[s->node->outputs[0]].numel;
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
  return MTE_OK;
}

int rt_prepare_Relu(rt_prep *p) {
  int st = rt_expect_arity(p, 1, 1, 1);
  if (!st) st = rt_expect_dtype(p, 0, MTE_DTYPE_FLOAT32);
  if (!st) st = rt_expect_output_like(p, 0, 0);
  if (st) return st;
  p->step->run = run_relu;
  p->step->kernel = "elementwise";
  return MTE_OK;
}
