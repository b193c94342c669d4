/*
 * ops_tensor.c - the tensor ops of the C runtime (graph/opset_tensor.py, graph/opset.py):
 * views and the ops that move elements (Transpose, Slice, Expand, Concat, Split, Gather).
 * (Elementwise ops: ops_elementwise.c; Cast: ops_cast.c; reductions, softmax: ops_reduce.c.)
 *
 * Views (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout): the memory plan gives
 * output 0 its input's memory, so running one does nothing; prepare checks that the output
 * has the input's dtype and element count (all a C-contiguous view needs).
 *
 * Transpose, Slice and Expand are one kernel, a strided copy: the output is written in order
 * and read from the input at base + sum idx[d] stride[d], the strides chosen at prepare time
 * (permuted, multiplied by the step, 0 along an expanded dim).
 */
#include <string.h>

#include "kernels.h"
#include "ops_util.h"

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

/* ---- shared checks ------------------------------------------------------------------------- */

/* Constant input i as a 1-D list of ints (int64 or int32), copied into the step's state. */
static int const_ints(const rt_prep *p, int i, const char *what, const int64_t **out,
                      int64_t *n) {
  int st = rt_expect_const(p, i);
  if (st) return st;
  const rt_value *v = rt_input(p, i);
  if (v->dtype != MTE_DTYPE_INT64 && v->dtype != MTE_DTYPE_INT32)
    return rt_node_fail(p, MTE_EUNSUPPORTED, "%s (\"%.200s\") is %s: the C runtime reads int64 "
                        "or int32", what, v->name, mte_dtype_name(v->dtype));
  if (v->ndim != 1)
    return rt_node_fail(p, MTE_EFORMAT, "%s (\"%.200s\") must be 1-D, has %d dims", what,
                        v->name, v->ndim);
  int64_t *list = rt_state_alloc(p, sizeof(int64_t) * (size_t)(v->numel ? v->numel : 1));
  if (!list) return MTE_ENOMEM;
  for (int64_t k = 0; k < v->numel; ++k)
    list[k] = v->dtype == MTE_DTYPE_INT64 ? ((const int64_t *)v->data)[k]
                                          : ((const int32_t *)v->data)[k];
  *out = list;
  *n = v->numel;
  return MTE_OK;
}

/* ---- the strided copy: Transpose, Slice, Expand ------------------------------------------- */

typedef struct copy_plan {
  int ndim;
  size_t esize;
  int64_t numel, base; /* elements */
  int64_t shape[MAXD], stride[MAXD];
} copy_plan;

static void copy_row(char *y, const char *x, int64_t n, int64_t stride, size_t esize) {
  if (stride == 1) {
    memcpy(y, x, (size_t)n * esize);
    return;
  }
  int64_t step = stride * (int64_t)esize;
  switch (esize) {
    case 1: for (int64_t i = 0; i < n; ++i) y[i] = x[i * step]; break;
    case 2: for (int64_t i = 0; i < n; ++i) memcpy(y + 2 * i, x + i * step, 2); break;
    case 4: for (int64_t i = 0; i < n; ++i) memcpy(y + 4 * i, x + i * step, 4); break;
    default: for (int64_t i = 0; i < n; ++i) memcpy(y + 8 * i, x + i * step, 8); break;
  }
}

static int run_copy(const rt_step *s, void *const *ptr) {
  const copy_plan *pl = s->state;
  if (!pl->numel) return MTE_OK;
  const char *x = (const char *)ptr[s->node->inputs[0]] + pl->base * (int64_t)pl->esize;
  char *y = ptr[s->node->outputs[0]];
  int last = pl->ndim - 1;
  int64_t len = pl->shape[last], rows = pl->numel / len, idx[MAXD], off = 0;
  size_t row_bytes = (size_t)len * pl->esize;
  memset(idx, 0, sizeof(int64_t) * (size_t)pl->ndim);
  for (int64_t r = 0; r < rows; ++r) {
    copy_row(y + (size_t)r * row_bytes, x + off * (int64_t)pl->esize, len, pl->stride[last],
             pl->esize);
    for (int d = last - 1; d >= 0; --d) {
      off += pl->stride[d];
      if (++idx[d] < pl->shape[d]) break;
      off -= pl->stride[d] * pl->shape[d];
      idx[d] = 0;
    }
  }
  return MTE_OK;
}

/* The plan over output 0 (ndim, shape, input strides filled): checks the declared output,
 * collapses dims and installs the step. */
static int finish_copy(rt_prep *p, copy_plan *pl) {
  const rt_value *x = rt_input(p, 0);
  int st = rt_expect_output(p, 0, x->dtype, pl->ndim, pl->shape);
  if (st) return st;
  pl->esize = mte_dtype_size(x->dtype);
  pl->numel = rt_output(p, 0)->numel;
  int nd = 0;
  for (int d = 0; d < pl->ndim; ++d) {
    if (pl->shape[d] == 1) continue;
    if (nd && pl->stride[nd - 1] == pl->stride[d] * pl->shape[d]) {
      pl->shape[nd - 1] *= pl->shape[d];
      pl->stride[nd - 1] = pl->stride[d];
      continue;
    }
    pl->shape[nd] = pl->shape[d];
    pl->stride[nd++] = pl->stride[d];
  }
  if (!nd) {
    pl->shape[0] = 1;
    pl->stride[0] = 1;
    nd = 1;
  }
  pl->ndim = nd;
  p->step->state = pl;
  p->step->run = run_copy;
  p->step->kernel = "strided_copy";
  return MTE_OK;
}

static copy_plan *new_copy(rt_prep *p) { return rt_state_alloc(p, sizeof(copy_plan)); }

int rt_prepare_Transpose(rt_prep *p) {
  const int64_t *perm;
  int64_t n;
  int st = rt_expect_arity(p, 1, 1, 1);
  if (!st && !rt_node_attr(p->node, "perm"))
    st = rt_node_fail(p, MTE_EFORMAT, "attribute \"perm\" is required");
  if (!st) st = rt_attr_ints(p, "perm", -MAXD, NULL, &perm, &n);
  if (st) return st;
  const rt_value *x = rt_input(p, 0);
  int seen[MAXD] = {0}, ok = n == x->ndim;
  for (int64_t d = 0; ok && d < n; ++d) {
    ok = perm[d] >= 0 && perm[d] < x->ndim && !seen[perm[d]];
    if (ok) seen[perm[d]] = 1;
  }
  if (!ok)
    return rt_node_fail(p, MTE_EFORMAT, "perm (%lld entries) is not a permutation of %d dims",
                        (long long)n, x->ndim);
  copy_plan *pl = new_copy(p);
  if (!pl) return MTE_ENOMEM;
  int64_t in_stride[MAXD];
  contiguous_strides(x->ndim, x->shape, in_stride);
  pl->ndim = x->ndim;
  for (int d = 0; d < x->ndim; ++d) {
    pl->shape[d] = x->shape[perm[d]];
    pl->stride[d] = in_stride[perm[d]];
  }
  return finish_copy(p, pl);
}

int rt_prepare_Expand(rt_prep *p) {
  const int64_t *target;
  int64_t n;
  int st = rt_expect_arity(p, 2, 2, 1);
  if (!st) st = const_ints(p, 1, "the Expand shape", &target, &n);
  if (st) return st;
  const rt_value *x = rt_input(p, 0);
  if (n > MAXD)
    return rt_node_fail(p, MTE_EFORMAT, "the Expand shape has %lld dims", (long long)n);
  copy_plan *pl = new_copy(p);
  if (!pl) return MTE_ENOMEM;
  int ndim = x->ndim > n ? x->ndim : (int)n;
  int64_t in_stride[MAXD];
  contiguous_strides(x->ndim, x->shape, in_stride);
  pl->ndim = ndim;
  for (int d = 0; d < ndim; ++d) { /* right-aligned numpy broadcast of x's shape and target */
    int xd = d - (ndim - x->ndim), td = d - (ndim - (int)n);
    int64_t a = xd >= 0 ? x->shape[xd] : 1, b = td >= 0 ? target[td] : 1;
    if (b < 0 || (a != b && a != 1 && b != 1))
      return rt_node_fail(p, MTE_EFORMAT, "cannot expand dim %d of input \"%.200s\" (%lld) to "
                          "%lld", xd, x->name, (long long)a, (long long)b);
    pl->shape[d] = a == 1 ? b : a;
    pl->stride[d] = xd >= 0 && a != 1 ? in_stride[xd] : 0;
  }
  return finish_copy(p, pl);
}

/* Python's slice(start, stop, step).indices(len): the first index and the count */
static void slice_dim(int64_t len, int64_t start, int64_t stop, int has_stop, int64_t step,
                      int64_t *first, int64_t *count) {
  int64_t lo = step < 0 ? -1 : 0, hi = step < 0 ? len - 1 : len;
  if (start < 0) start = start + len < lo ? lo : start + len;
  else if (start > hi) start = hi;
  if (!has_stop) stop = step < 0 ? lo : hi;
  else if (stop < 0) stop = stop + len < lo ? lo : stop + len;
  else if (stop > hi) stop = hi;
  *first = start;
  if (step > 0)
    *count = start < stop ? (stop - start - 1) / step + 1 : 0;
  else /* |step| as unsigned: step may be INT64_MIN */
    *count = start > stop ? (int64_t)((uint64_t)(start - stop - 1) / (0u - (uint64_t)step)) + 1 : 0;
}

int rt_prepare_Slice(rt_prep *p) {
  const int64_t *starts, *ends, *axes = NULL, *steps = NULL;
  int64_t ns, ne, na = 0, nst = 0;
  int st = rt_expect_arity(p, 3, 5, 1);
  if (!st) st = const_ints(p, 1, "Slice starts", &starts, &ns);
  if (!st) st = const_ints(p, 2, "Slice ends", &ends, &ne);
  if (!st && rt_input(p, 3)) st = const_ints(p, 3, "Slice axes", &axes, &na);
  if (!st && rt_input(p, 4)) st = const_ints(p, 4, "Slice steps", &steps, &nst);
  if (st) return st;
  const rt_value *x = rt_input(p, 0);
  int64_t n = ns < ne ? ns : ne; /* zip(axes, starts, ends, steps) stops at the shortest */
  if (axes && na < n) n = na;
  if (steps && nst < n) n = nst;
  for (int64_t k = 0; k < (axes ? na : n); ++k) { /* Python checks every listed axis */
    int a;
    if (!axes && k >= x->ndim)
      return rt_node_fail(p, MTE_EFORMAT, "%lld starts for rank %d", (long long)n, x->ndim);
    if (axes && (st = norm_axis(p, axes[k], x->ndim, "Slice axis", &a))) return st;
  }
  copy_plan *pl = new_copy(p);
  if (!pl) return MTE_ENOMEM;
  int64_t in_stride[MAXD], first[MAXD] = {0}, step_of[MAXD];
  contiguous_strides(x->ndim, x->shape, in_stride);
  pl->ndim = x->ndim;
  for (int d = 0; d < x->ndim; ++d) {
    pl->shape[d] = x->shape[d];
    step_of[d] = 1;
  }
  for (int64_t k = 0; k < n; ++k) { /* later entries for one axis win, as in Python */
    int a = (int)k;
    if (axes) norm_axis(p, axes[k], x->ndim, "Slice axis", &a); /* checked above */
    int64_t s = steps ? steps[k] : 1, e = ends[k];
    if (s == 0) return rt_node_fail(p, MTE_EFORMAT, "Slice step %lld is 0", (long long)k);
    int has_stop = !(e == INT64_MAX || (s < 0 && e <= -INT64_MAX));
    slice_dim(x->shape[a], starts[k], e, has_stop, s, &first[a], &pl->shape[a]);
    step_of[a] = s;
  }
  int empty = 0;
  for (int d = 0; d < x->ndim; ++d) {
    empty |= pl->shape[d] == 0;
    pl->stride[d] = pl->shape[d] > 1 ? in_stride[d] * step_of[d] : 0;
  }
  pl->base = 0;
  for (int d = 0; d < x->ndim && !empty; ++d) pl->base += first[d] * in_stride[d];
  return finish_copy(p, pl);
}

/* ---- Concat and Split: blocks of the outer dims ------------------------------------------- */

typedef struct join_plan {
  int64_t outer;
  int64_t *bytes; /* per input (Concat) or output (Split): its block along the axis */
} join_plan;

static int run_concat(const rt_step *s, void *const *ptr) {
  const join_plan *pl = s->state;
  const rt_node *n = s->node;
  char *y = ptr[n->outputs[0]];
  for (int64_t o = 0; o < pl->outer; ++o)
    for (int32_t k = 0; k < n->num_inputs; ++k) {
      size_t b = (size_t)pl->bytes[k];
      if (b) memcpy(y, (const char *)ptr[n->inputs[k]] + o * pl->bytes[k], b);
      y += b;
    }
  return MTE_OK;
}

static int run_split(const rt_step *s, void *const *ptr) {
  const join_plan *pl = s->state;
  const rt_node *n = s->node;
  const char *x = ptr[n->inputs[0]];
  for (int64_t o = 0; o < pl->outer; ++o)
    for (int32_t k = 0; k < n->num_outputs; ++k) {
      size_t b = (size_t)pl->bytes[k];
      if (b) memcpy((char *)ptr[n->outputs[k]] + o * pl->bytes[k], x, b);
      x += b;
    }
  return MTE_OK;
}

static join_plan *new_join(rt_prep *p, int parts, int64_t outer) {
  join_plan *pl = rt_state_alloc(p, sizeof *pl);
  if (pl) pl->bytes = rt_state_alloc(p, sizeof(int64_t) * (size_t)parts);
  if (!pl || !pl->bytes) return NULL;
  pl->outer = outer;
  p->step->state = pl;
  return pl;
}

int rt_prepare_Concat(rt_prep *p) {
  int64_t axis_attr;
  int axis, st = rt_expect_arity(p, 1, p->node->num_inputs > 1 ? p->node->num_inputs : 1, 1);
  if (!st && !rt_node_attr(p->node, "axis"))
    st = rt_node_fail(p, MTE_EFORMAT, "attribute \"axis\" is required");
  if (!st) st = rt_attr_int(p, "axis", 0, &axis_attr);
  for (int k = 0; !st && k < p->node->num_inputs; ++k)
    if (!rt_input(p, k)) st = rt_node_fail(p, MTE_EFORMAT, "input %d is missing", k);
  if (st) return st;
  const rt_value *x0 = rt_input(p, 0);
  if (x0->ndim == 0) return rt_node_fail(p, MTE_EFORMAT, "cannot concatenate 0-d inputs");
  if ((st = norm_axis(p, axis_attr, x0->ndim, "axis", &axis))) return st;
  int64_t shape[MAXD];
  memcpy(shape, x0->shape, sizeof(int64_t) * (size_t)x0->ndim);
  shape[axis] = 0;
  for (int k = 0; k < p->node->num_inputs; ++k) {
    const rt_value *x = rt_input(p, k);
    int fits = x->ndim == x0->ndim;
    for (int d = 0; fits && d < x->ndim; ++d) fits = d == axis || x->shape[d] == x0->shape[d];
    if (!fits)
      return rt_node_fail(p, MTE_EFORMAT, "input %d (\"%.200s\") differs from input 0 outside "
                          "axis %d", k, x->name, axis);
    if (x->dtype != x0->dtype)
      return rt_node_fail(p, MTE_EUNSUPPORTED, "inputs of dtypes %s and %s: no C kernel for "
                          "numpy's promotion", mte_dtype_name(x0->dtype), mte_dtype_name(x->dtype));
    shape[axis] += x->shape[axis];
  }
  if ((st = rt_expect_output(p, 0, x0->dtype, x0->ndim, shape))) return st;
  join_plan *pl = new_join(p, p->node->num_inputs, prod(shape, 0, axis));
  if (!pl) return MTE_ENOMEM;
  int64_t inner = prod(shape, axis + 1, x0->ndim) * (int64_t)mte_dtype_size(x0->dtype);
  for (int k = 0; k < p->node->num_inputs; ++k) pl->bytes[k] = rt_input(p, k)->shape[axis] * inner;
  p->step->run = run_concat;
  p->step->kernel = "concat";
  return MTE_OK;
}

int rt_prepare_Split(rt_prep *p) {
  const int64_t *sizes;
  int64_t axis_attr, n;
  int axis, st = rt_expect_arity(p, 2, 2, p->node->num_outputs);
  if (!st) st = rt_attr_int(p, "axis", 0, &axis_attr);
  if (!st) st = const_ints(p, 1, "the Split sizes", &sizes, &n);
  if (st) return st;
  const rt_value *x = rt_input(p, 0);
  if (x->ndim == 0) return rt_node_fail(p, MTE_EFORMAT, "cannot split a 0-d input");
  if ((st = norm_axis(p, axis_attr, x->ndim, "axis", &axis))) return st;
  if (n != p->node->num_outputs)
    return rt_node_fail(p, MTE_EFORMAT, "%lld split sizes for %d outputs", (long long)n,
                        p->node->num_outputs);
  int64_t total = 0;
  for (int64_t k = 0; k < n; ++k) {
    if (sizes[k] < 0 || !rt_add64(total, sizes[k], &total))
      return rt_node_fail(p, MTE_EFORMAT, "split size %lld is %lld", (long long)k,
                          (long long)sizes[k]);
  }
  if (total != x->shape[axis])
    return rt_node_fail(p, MTE_EFORMAT, "split sizes add up to %lld, dim %d is %lld",
                        (long long)total, axis, (long long)x->shape[axis]);
  int64_t shape[MAXD];
  memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
  for (int k = 0; k < n; ++k) {
    shape[axis] = sizes[k];
    if ((st = rt_expect_output(p, k, x->dtype, x->ndim, shape))) return st;
  }
  join_plan *pl = new_join(p, (int)n, prod(x->shape, 0, axis));
  if (!pl) return MTE_ENOMEM;
  int64_t inner = prod(x->shape, axis + 1, x->ndim) * (int64_t)mte_dtype_size(x->dtype);
  for (int k = 0; k < n; ++k) pl->bytes[k] = sizes[k] * inner;
  p->step->run = run_split;
  p->step->kernel = "split";
  return MTE_OK;
}

/* ---- Gather ------------------------------------------------------------------------------- */

typedef struct gather_plan {
  int64_t outer, dim, inner_bytes, nidx;
  int wide; /* int64 indices (else int32) */
} gather_plan;

static int64_t index_at(const void *idx, int wide, int64_t k) {
  return wide ? ((const int64_t *)idx)[k] : ((const int32_t *)idx)[k];
}

/* -1 when every index is in [-dim, dim) (np.take's "raise"), else the first bad position */
static int64_t bad_index(const void *idx, int wide, int64_t n, int64_t dim) {
  for (int64_t k = 0; k < n; ++k) {
    int64_t i = index_at(idx, wide, k);
    if (i < -dim || i >= dim) return k;
  }
  return -1;
}

static int run_gather(const rt_step *s, void *const *ptr) {
  const gather_plan *pl = s->state;
  const char *x = ptr[s->node->inputs[0]];
  const void *idx = ptr[s->node->inputs[1]];
  char *y = ptr[s->node->outputs[0]];
  if (bad_index(idx, pl->wide, pl->nidx, pl->dim) >= 0) return MTE_EINVAL;
  size_t b = (size_t)pl->inner_bytes;
  for (int64_t o = 0; o < pl->outer; ++o)
    for (int64_t k = 0; k < pl->nidx; ++k) {
      int64_t i = index_at(idx, pl->wide, k);
      if (i < 0) i += pl->dim;
      if (b) memcpy(y, x + (o * pl->dim + i) * pl->inner_bytes, b);
      y += b;
    }
  return MTE_OK;
}

int rt_prepare_Gather(rt_prep *p) {
  int64_t axis_attr;
  int axis, st = rt_expect_arity(p, 2, 2, 1);
  if (!st) st = rt_attr_int(p, "axis", 0, &axis_attr);
  if (st) return st;
  const rt_value *x = rt_input(p, 0), *ix = rt_input(p, 1);
  if (x->ndim == 0) return rt_node_fail(p, MTE_EFORMAT, "cannot gather from a 0-d input");
  if ((st = norm_axis(p, axis_attr, x->ndim, "axis", &axis))) return st;
  if (ix->dtype != MTE_DTYPE_INT64 && ix->dtype != MTE_DTYPE_INT32)
    return rt_node_fail(p, MTE_EUNSUPPORTED, "indices of dtype %s (the C runtime reads int64 "
                        "or int32)", mte_dtype_name(ix->dtype));
  int ndim = x->ndim - 1 + ix->ndim;
  if (ndim > MAXD) return rt_node_fail(p, MTE_EFORMAT, "the output would have %d dims", ndim);
  int64_t shape[MAXD];
  memcpy(shape, x->shape, sizeof(int64_t) * (size_t)axis);
  if (ix->ndim) memcpy(shape + axis, ix->shape, sizeof(int64_t) * (size_t)ix->ndim);
  size_t after = (size_t)(x->ndim - axis - 1);
  memcpy(shape + axis + ix->ndim, x->shape + axis + 1, sizeof(int64_t) * after);
  if ((st = rt_expect_output(p, 0, x->dtype, ndim, shape))) return st;
  gather_plan *pl = rt_state_alloc(p, sizeof *pl);
  if (!pl) return MTE_ENOMEM;
  pl->outer = prod(x->shape, 0, axis);
  pl->dim = x->shape[axis];
  pl->inner_bytes = prod(x->shape, axis + 1, x->ndim) * (int64_t)mte_dtype_size(x->dtype);
  pl->nidx = ix->numel;
  pl->wide = ix->dtype == MTE_DTYPE_INT64;
  const void *cidx = rt_const_data(p, 1);
  int64_t bad = cidx ? bad_index(cidx, pl->wide, pl->nidx, pl->dim) : -1;
  if (bad >= 0)
    return rt_node_fail(p, MTE_EFORMAT, "index %lld at position %lld is out of range for dim %d "
                        "of size %lld", (long long)index_at(cidx, pl->wide, bad), (long long)bad,
                        axis, (long long)pl->dim);
  p->step->state = pl;
  p->step->run = run_gather;
  p->step->kernel = "gather";
  return MTE_OK;
}
