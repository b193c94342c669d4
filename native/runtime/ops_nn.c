/*
 * ops_nn.c - the other neural-network ops of the C runtime (graph/opset_nn.py): max, average
 * and global average pooling (MaxPool on int8 too), batch and layer normalization,
 * mte.Attention and Pad, each on its libmte kernel or a short loop.
 */
#include <math.h>
#include <string.h>

#include "kernels.h"
#include "mte_pool.h"
#include "mte_quant.h"
#include "mte_transformer.h"

#define IN(s, i) \
  ((i) < (s)->node->num_inputs && (s)->node->inputs[i] >= 0 ? ptr[(s)->node->inputs[i]] : NULL)
#define OUT(s, i) (ptr[(s)->node->outputs[i]])

/* ---- pooling -------------------------------------------------------------------------------- */

typedef struct pool_state {
  mte_pool2d_params params;
  int64_t n, c, h, w;
} pool_state;

static int run_max_pool(const rt_step *s, void *const *ptr) {
  const pool_state *ps = s->state;
  return mte_max_pool2d(&ps->params, ps->n, ps->c, ps->h, ps->w, IN(s, 0), OUT(s, 0), NULL);
}

static int run_qmax_pool(const rt_step *s, void *const *ptr) {
  const pool_state *ps = s->state;
  return mte_qmax_pool2d(&ps->params, ps->n, ps->c, ps->h, ps->w, IN(s, 0), OUT(s, 0));
}

static int run_avg_pool(const rt_step *s, void *const *ptr) {
  const pool_state *ps = s->state;
  return mte_avg_pool2d(&ps->params, ps->n, ps->c, ps->h, ps->w, IN(s, 0), OUT(s, 0));
}

/* The pooling attributes (graph/opset_nn.py _pool_shape): symmetric pads, PyTorch's sizes. */
static int prepare_pool(rt_prep *p, int dilated, pool_state **out) {
  static const int64_t ones[2] = {1, 1}, zeros[4] = {0, 0, 0, 0};
  const int64_t *ks, *strides, *pads, *dil = ones;
  int64_t ceil_mode, include_pad, nks;
  int st = rt_expect_arity(p, 1, 1, 1);
  if (!st) st = rt_attr_ints(p, "kernel_shape", -2, NULL, &ks, &nks);
  if (!st && nks != 2) st = rt_node_fail(p, MTE_EFORMAT, "kernel_shape needs 2 entries");
  if (!st) st = rt_attr_ints(p, "strides", 2, ones, &strides, NULL);
  if (!st) st = rt_attr_ints(p, "pads", 4, zeros, &pads, NULL);
  if (!st && dilated) st = rt_attr_ints(p, "dilations", 2, ones, &dil, NULL);
  if (!st) st = rt_attr_int(p, "ceil_mode", 0, &ceil_mode);
  if (!st) st = rt_attr_int(p, "count_include_pad", 0, &include_pad);
  if (st) return st;
  const rt_value *x = rt_input(p, 0);
  if (x->ndim != 4) return rt_node_fail(p, MTE_EFORMAT, "takes a 4-D input, has %d-D", x->ndim);
  if (pads[0] != pads[2] || pads[1] != pads[3])
    return rt_node_fail(p, MTE_EFORMAT, "pooling takes symmetric pads only");
  pool_state *ps = rt_state_alloc(p, sizeof *ps);
  if (!ps) return MTE_ENOMEM;
  ps->params = (mte_pool2d_params){ks[0], ks[1], strides[0], strides[1], pads[0], pads[1],
                                   dil[0], dil[1], ceil_mode != 0, include_pad != 0, 0};
  ps->n = x->shape[0];
  ps->c = x->shape[1];
  ps->h = x->shape[2];
  ps->w = x->shape[3];
  for (int i = 0; i < 2; ++i)
    if (ks[i] < 1 || strides[i] < 1 || dil[i] < 1 || pads[i] < 0 || pads[i] > ks[i] / 2)
      return rt_node_fail(p, MTE_EUNSUPPORTED, "kernel, stride, dilation >= 1 and a padding "
                          "of at most half the kernel are needed");
  int64_t ho = mte_pool2d_output_size(ps->h, ks[0], strides[0], pads[0], dil[0], ceil_mode != 0);
  int64_t wo = mte_pool2d_output_size(ps->w, ks[1], strides[1], pads[1], dil[1], ceil_mode != 0);
  if (ho < 0 || wo < 0) return rt_node_fail(p, MTE_EFORMAT, "invalid pooling window");
  int64_t shape[4] = {ps->n, ps->c, ho, wo};
  if ((st = rt_expect_output(p, 0, x->dtype, 4, shape))) return st;
  p->step->state = ps;
  *out = ps;
  return MTE_OK;
}

int rt_prepare_MaxPool(rt_prep *p) {
  pool_state *ps;
  int st = prepare_pool(p, 1, &ps);
  if (st) return st;
  mte_dtype dt = rt_input(p, 0)->dtype;
  if (dt == MTE_DTYPE_INT8) {
    p->step->run = run_qmax_pool;
    p->step->kernel = "int8 max_pool2d";
  } else if (dt == MTE_DTYPE_FLOAT32) {
    p->step->run = run_max_pool;
    p->step->kernel = "max_pool2d";
  } else {
    return rt_node_fail(p, MTE_EUNSUPPORTED, "takes float32 or int8, not %s", mte_dtype_name(dt));
  }
  return MTE_OK;
}

int rt_prepare_AveragePool(rt_prep *p) {
  pool_state *ps;
  int st = prepare_pool(p, 0, &ps);
  if (!st) st = rt_expect_dtype(p, 0, MTE_DTYPE_FLOAT32);
  if (st) return st;
  p->step->run = run_avg_pool;
  p->step->kernel = "avg_pool2d";
  return MTE_OK;
}

/* GlobalAveragePool: the mean over every position of each (n, c) plane, in double. */
static int run_global_avg(const rt_step *s, void *const *ptr) {
  const rt_value *x = &s->model->values[s->node->inputs[0]];
  int64_t planes = x->shape[0] * x->shape[1], size = planes ? x->numel / planes : 0;
  const float *in = IN(s, 0);
  float *y = OUT(s, 0);
  for (int64_t i = 0; i < planes; ++i) {
    double sum = 0.0;
    for (int64_t j = 0; j < size; ++j) sum += in[i * size + j];
    y[i] = (float)(sum / (double)size);
  }
  return MTE_OK;
}

int rt_prepare_GlobalAveragePool(rt_prep *p) {
  int st = rt_expect_arity(p, 1, 1, 1);
  if (!st) st = rt_expect_dtype(p, 0, MTE_DTYPE_FLOAT32);
  if (st) return st;
  const rt_value *x = rt_input(p, 0);
  if (x->ndim < 2) return rt_node_fail(p, MTE_EFORMAT, "takes an input with >= 2 dims");
  int64_t shape[MTE_MODEL_MAX_NDIM];
  for (int d = 0; d < x->ndim; ++d) shape[d] = d < 2 ? x->shape[d] : 1;
  if ((st = rt_expect_output(p, 0, MTE_DTYPE_FLOAT32, x->ndim, shape))) return st;
  p->step->run = run_global_avg;
  p->step->kernel = "global_avg";
  return MTE_OK;
}

/* ---- normalization ----------------------------------------------------------------------------- */

typedef struct norm_state {
  int64_t rows, n; /* LayerNorm: rows x n; BatchNorm: rows = N, n = C, plane size below */
  int64_t plane;
  float eps;
} norm_state;

/* y = (x - mean) / sqrt(var + eps) * scale + B per channel, as opset_nn.batch_norm rounds it:
 * k = scale / sqrt(var + eps) and b = B - mean * k in float32, then y = x k + b. */
static int run_batch_norm(const rt_step *s, void *const *ptr) {
  const norm_state *ns = s->state;
  const float *x = IN(s, 0), *scale = IN(s, 1), *bias = IN(s, 2), *mean = IN(s, 3),
              *var = IN(s, 4);
  float *y = OUT(s, 0);
  for (int64_t c = 0; c < ns->n; ++c) {
    float k = scale[c] / sqrtf(var[c] + ns->eps), b = bias[c] - mean[c] * k;
    for (int64_t i = 0; i < ns->rows; ++i) {
      const float *xp = x + (i * ns->n + c) * ns->plane;
      float *yp = y + (i * ns->n + c) * ns->plane;
      for (int64_t j = 0; j < ns->plane; ++j) yp[j] = xp[j] * k + b;
    }
  }
  return MTE_OK;
}

int rt_prepare_BatchNormalization(rt_prep *p) {
  int st = rt_expect_arity(p, 5, 5, 1);
  for (int i = 0; !st && i < 5; ++i) st = rt_expect_dtype(p, i, MTE_DTYPE_FLOAT32);
  if (st) return st;
  const rt_value *x = rt_input(p, 0);
  if (x->ndim < 2) return rt_node_fail(p, MTE_EFORMAT, "takes an input with >= 2 dims");
  static const char *const what[4] = {"scale", "B", "input_mean", "input_var"};
  for (int i = 1; i < 5; ++i)
    if ((st = rt_expect_vector(p, i, x->shape[1], 0, what[i - 1]))) return st;
  norm_state *ns = rt_state_alloc(p, sizeof *ns);
  double eps;
  if (!ns) return MTE_ENOMEM;
  if ((st = rt_attr_float(p, "epsilon", 1e-5, &eps))) return st;
  ns->rows = x->shape[0];
  ns->n = x->shape[1];
  ns->plane = ns->rows > 0 && ns->n > 0 ? x->numel / (ns->rows * ns->n) : 0;
  ns->eps = (float)eps;
  if ((st = rt_expect_output_like(p, 0, 0))) return st;
  p->step->state = ns;
  p->step->run = run_batch_norm;
  p->step->kernel = "batch_norm";
  return MTE_OK;
}

static int run_layer_norm(const rt_step *s, void *const *ptr) {
  const norm_state *ns = s->state;
  return mte_layer_norm_forward(ns->rows, ns->n, IN(s, 0), IN(s, 1), IN(s, 2), ns->eps,
                                OUT(s, 0), NULL, NULL);
}

int rt_prepare_LayerNormalization(rt_prep *p) {
  int st = rt_expect_arity(p, 1, 3, 1);
  for (int i = 0; !st && i < p->node->num_inputs; ++i)
    if (rt_input(p, i)) st = rt_expect_dtype(p, i, MTE_DTYPE_FLOAT32);
  if (st) return st;
  const rt_value *x = rt_input(p, 0);
  int64_t axis;
  double eps;
  if ((st = rt_attr_int(p, "axis", -1, &axis)) || (st = rt_attr_float(p, "epsilon", 1e-5, &eps)))
    return st;
  if (x->ndim < 1 || axis < -x->ndim || axis >= x->ndim)
    return rt_node_fail(p, MTE_EFORMAT, "axis %lld is out of range for %d dims",
                        (long long)axis, x->ndim);
  if (axis < 0) axis += x->ndim;
  norm_state *ns = rt_state_alloc(p, sizeof *ns);
  if (!ns) return MTE_ENOMEM;
  ns->n = 1;
  for (int d = (int)axis; d < x->ndim; ++d) ns->n *= x->shape[d];
  ns->rows = ns->n ? x->numel / ns->n : 0;
  ns->eps = (float)eps;
  for (int i = 1; i < 3; ++i) { /* Scale and B: the shape of the normalized dims */
    const rt_value *v = rt_input(p, i);
    if (v && (v->ndim != x->ndim - axis ||
              memcmp(v->shape, x->shape + axis, (size_t)v->ndim * sizeof *v->shape)))
      return rt_node_fail(p, MTE_EFORMAT, "Scale and B must have the shape of the dims from "
                          "axis %lld on", (long long)axis);
  }
  if ((st = rt_expect_output_like(p, 0, 0))) return st;
  p->step->state = ns;
  p->step->run = run_layer_norm;
  p->step->kernel = "layer_norm";
  return MTE_OK;
}

/* ---- attention ------------------------------------------------------------------------------------ */

typedef struct attention_state {
  int64_t b, h, l, s, d, dv;
  mte_head_strides sq, sk, sv, sm, so;
  float scale;
  int causal, has_mask;
  float *pt; /* the weights, B*H*S*L floats (the kernel's scratch) */
} attention_state;

static int run_attention(const rt_step *s, void *const *ptr) {
  const attention_state *a = s->state;
  return mte_attention_forward(a->b, a->h, a->l, a->s, a->d, a->dv, IN(s, 0), a->sq, IN(s, 1),
                               a->sk, IN(s, 2), a->sv, a->has_mask ? IN(s, 3) : NULL, a->sm,
                               a->scale, a->causal, a->pt, OUT(s, 0), a->so);
}

/* Strides of a (B, H, rows, cols) tensor broadcast to (b, h, rows, cols): 0 where size 1. */
static mte_head_strides head_strides(const int64_t *shape, int64_t b, int64_t h, int64_t rows) {
  int64_t row = shape[3], head = shape[2] * row, batch = shape[1] * head;
  return (mte_head_strides){shape[0] == 1 && b > 1 ? 0 : batch, shape[1] == 1 && h > 1 ? 0 : head,
                            shape[2] == 1 && rows > 1 ? 0 : row};
}

int rt_prepare_mte_Attention(rt_prep *p) {
  int st = rt_expect_arity(p, 3, 4, 1);
  for (int i = 0; !st && i < p->node->num_inputs; ++i)
    if (rt_input(p, i)) st = rt_expect_dtype(p, i, MTE_DTYPE_FLOAT32);
  if (st) return st;
  const rt_value *q = rt_input(p, 0), *k = rt_input(p, 1), *v = rt_input(p, 2),
                 *mask = rt_input(p, 3);
  if (q->ndim != 4 || k->ndim != 4 || v->ndim != 4 || q->shape[3] != k->shape[3] ||
      k->shape[2] != v->shape[2])
    return rt_node_fail(p, MTE_EFORMAT, "takes Q (B,H,L,D), K (B,H,S,D), V (B,H,S,Dv)");
  attention_state *a = rt_state_alloc(p, sizeof *a);
  if (!a) return MTE_ENOMEM;
  int64_t bh[2];
  for (int d = 0; d < 2; ++d) { /* numpy broadcasting of the (batch, head) dims */
    int64_t x = q->shape[d], y = k->shape[d], z = v->shape[d], m = x;
    if (y != 1) m = m == 1 ? y : m;
    if (z != 1) m = m == 1 ? z : m;
    if ((x != 1 && x != m) || (y != 1 && y != m) || (z != 1 && z != m))
      return rt_node_fail(p, MTE_EFORMAT, "Q, K and V's first two dims do not broadcast");
    bh[d] = m;
  }
  a->b = bh[0];
  a->h = bh[1];
  a->l = q->shape[2];
  a->s = k->shape[2];
  a->d = q->shape[3];
  a->dv = v->shape[3];
  double scale;
  int64_t causal;
  if ((st = rt_attr_float(p, "scale", 1.0, &scale)) || (st = rt_attr_int(p, "causal", 0, &causal)))
    return st;
  a->scale = (float)scale;
  a->causal = causal != 0;
  a->sq = head_strides(q->shape, a->b, a->h, a->l);
  a->sk = head_strides(k->shape, a->b, a->h, a->s);
  a->sv = head_strides(v->shape, a->b, a->h, a->s);
  int64_t out_shape[4] = {a->b, a->h, a->l, a->dv};
  a->so = head_strides(out_shape, a->b, a->h, a->l);
  if (mask) { /* broadcastable to (B, H, L, S), its last dim not broadcast */
    int64_t ms[4] = {1, 1, 1, 1}, want[4] = {a->b, a->h, a->l, a->s};
    if (mask->ndim > 4) return rt_node_fail(p, MTE_EFORMAT, "the mask has more than 4 dims");
    for (int d = 0; d < mask->ndim; ++d) ms[4 - mask->ndim + d] = mask->shape[d];
    for (int d = 0; d < 4; ++d)
      if (ms[d] != want[d] && ms[d] != 1)
        return rt_node_fail(p, MTE_EFORMAT, "the mask does not broadcast to (B, H, L, S)");
    if (ms[3] != a->s)
      return rt_node_fail(p, MTE_EUNSUPPORTED, "a mask broadcast along the keys");
    a->has_mask = 1;
    a->sm = head_strides(ms, a->b, a->h, a->l);
  }
  if ((st = rt_expect_output(p, 0, MTE_DTYPE_FLOAT32, 4, out_shape))) return st;
  int64_t weights = a->b * a->h * a->s * a->l;
  if (!(a->pt = rt_state_alloc_aligned(p, (size_t)(weights ? weights : 1) * sizeof(float))))
    return MTE_ENOMEM;
  p->step->state = a;
  p->step->run = run_attention;
  p->step->kernel = "attention";
  return MTE_OK;
}

/* ---- Pad ---------------------------------------------------------------------------------------------- */

typedef struct pad_state {
  int ndim, mode; /* 0 constant, 1 reflect, 2 edge */
  int64_t in_shape[MTE_MODEL_MAX_NDIM], out_shape[MTE_MODEL_MAX_NDIM], begin[MTE_MODEL_MAX_NDIM];
  size_t itemsize;
  int has_value;
} pad_state;

/* The source index of output index o along a dim of size n padded by `begin` (-1: padding). */
static int64_t pad_source(int64_t o, int64_t begin, int64_t n, int mode) {
  int64_t i = o - begin;
  if (i >= 0 && i < n) return i;
  if (mode == 0) return -1;
  if (mode == 2) return i < 0 ? 0 : n - 1;
  if (n == 1) return 0;
  int64_t period = 2 * (n - 1); /* reflect: ... 2 1 | 0 1 2 | 1 0 ... */
  i %= period;
  if (i < 0) i += period;
  return i < n ? i : period - i;
}

static int run_pad(const rt_step *s, void *const *ptr) {
  const pad_state *ps = s->state;
  const unsigned char *x = IN(s, 0), *value = ps->has_value ? IN(s, 2) : NULL;
  unsigned char *y = OUT(s, 0);
  int64_t total = 1, index[MTE_MODEL_MAX_NDIM] = {0};
  for (int d = 0; d < ps->ndim; ++d) total *= ps->out_shape[d];
  for (int64_t t = 0; t < total; ++t) {
    int64_t src = 0;
    for (int d = 0; d < ps->ndim && src >= 0; ++d) {
      int64_t i = pad_source(index[d], ps->begin[d], ps->in_shape[d], ps->mode);
      src = i < 0 ? -1 : src * ps->in_shape[d] + i;
    }
    if (src >= 0) memcpy(y + t * ps->itemsize, x + src * ps->itemsize, ps->itemsize);
    else if (value) memcpy(y + t * ps->itemsize, value, ps->itemsize);
    else memset(y + t * ps->itemsize, 0, ps->itemsize);
    for (int d = ps->ndim - 1; d >= 0 && ++index[d] == ps->out_shape[d]; --d) index[d] = 0;
  }
  return MTE_OK;
}

int rt_prepare_Pad(rt_prep *p) {
  int st = rt_expect_arity(p, 2, 3, 1);
  if (!st) st = rt_expect_dtype(p, 1, MTE_DTYPE_INT64);
  if (!st) st = rt_expect_const(p, 1);
  if (st) return st;
  const rt_value *x = rt_input(p, 0), *pads = rt_input(p, 1), *value = rt_input(p, 2);
  const int64_t *pad = rt_const_data(p, 1);
  if (pads->numel != 2 * x->ndim)
    return rt_node_fail(p, MTE_EFORMAT, "pads has %lld entries, expected %d",
                        (long long)pads->numel, 2 * x->ndim);
  if (value && (value->numel != 1 || value->dtype != x->dtype))
    return rt_node_fail(p, MTE_EFORMAT, "constant_value must be one %s", mte_dtype_name(x->dtype));
  const char *mode;
  if ((st = rt_attr_string(p, "mode", "constant", &mode))) return st;
  pad_state *ps = rt_state_alloc(p, sizeof *ps);
  if (!ps) return MTE_ENOMEM;
  ps->mode = !strcmp(mode, "constant") ? 0 : !strcmp(mode, "reflect") ? 1 : !strcmp(mode, "edge") ? 2 : -1;
  if (ps->mode < 0) return rt_node_fail(p, MTE_EFORMAT, "unknown mode \"%.50s\"", mode);
  ps->ndim = x->ndim;
  ps->itemsize = mte_dtype_size(x->dtype);
  ps->has_value = value != NULL;
  for (int d = 0; d < x->ndim; ++d) {
    int64_t b = pad[d], e = pad[d + x->ndim], n = x->shape[d];
    if (b < 0 || e < 0 || b > (1 << 30) || e > (1 << 30))
      return rt_node_fail(p, MTE_EUNSUPPORTED, "pads must be in [0, 2^30] (no cropping)");
    if (ps->mode == 1 && (b >= n || e >= n) && (b || e))
      return rt_node_fail(p, MTE_EFORMAT, "reflect padding must be smaller than the dim");
    if (ps->mode == 2 && n == 0 && (b || e))
      return rt_node_fail(p, MTE_EFORMAT, "edge padding of an empty dim");
    ps->in_shape[d] = n;
    ps->begin[d] = b;
    ps->out_shape[d] = n + b + e;
  }
  if ((st = rt_expect_output(p, 0, x->dtype, x->ndim, ps->out_shape))) return st;
  p->step->state = ps;
  p->step->run = run_pad;
  p->step->kernel = "pad";
  return MTE_OK;
}
