/*
 * ops_gemm.c - the GEMM-based ops of the C runtime (graph/opset_nn.py, opset_tensor.py's MatMul):
 * convolution with its fused epilogue, Gemm / mte.GemmAct and MatMul.
 *
 * A convolution chooses its kernel once, at load time, by the same rules in the same order
 * as the Python executor (backend/native_conv.py conv2d_prepare): depthwise 3x3, general
 * depthwise, the direct KxK kernel, Winograd, else im2col + GEMM; the constant weights are
 * packed for the chosen kernel then (GEMM panels, direct blocks, Winograd's U), so a run
 * only computes. A Gemm of a few rows against constant weights (batch-1 inference) streams
 * them through a matrix-vector loop instead of packing them.
 */
#include <string.h>

#include "kernels.h"
#include "mte_conv.h"
#include "mte_depthwise.h"
#include "mte_winograd.h"

#define IN(s, i) \
  ((i) < (s)->node->num_inputs && (s)->node->inputs[i] >= 0 ? ptr[(s)->node->inputs[i]] : NULL)
#define OUT(s, i) (ptr[(s)->node->outputs[i]])

/* ---- shared pieces ----------------------------------------------------------------------- */

static int activation_of(rt_prep *p, int *act) {
  static const char *const names[] = {"none", "relu", "relu6", "gelu", "gelu_tanh", "silu",
                                      "hardswish"};
  const char *name;
  int st = rt_attr_string(p, "activation", "none", &name);
  if (st) return st;
  for (int i = 0; i < (int)(sizeof names / sizeof names[0]); ++i)
    if (!strcmp(name, names[i])) {
      *act = i; /* the order of mte_activation */
      return MTE_OK;
    }
  return rt_node_fail(p, MTE_EFORMAT, "unknown activation \"%.100s\"", name);
}

/* y = act(y + residual) in place: the GEMM's epilogue alone (K = 0, beta = 1). */
static int epilogue_in_place(float *y, int64_t n, int act, const float *residual) {
  if (n == 0 || (act == MTE_ACT_NONE && !residual)) return MTE_OK;
  mte_epilogue ep = {MTE_BIAS_NONE, NULL, act, residual, n};
  return mte_sgemm_ex(0, 0, 1, n, 0, 1.0f, y, 1, y, n, 1.0f, y, n, &ep, NULL);
}

/* ---- convolution ----------------------------------------------------------------------------- */

typedef enum conv_route {
  CONV_DEPTHWISE3X3,
  CONV_DEPTHWISE,
  CONV_DIRECT,
  CONV_WINOGRAD,
  CONV_GEMM
} conv_route;

typedef struct conv_state {
  mte_conv2d_desc d;
  conv_route route;
  int act, stride, tile, has_residual;
  int kernel_size, pad; /* the general depthwise kernel */
  const float *w, *bias;
  float *packed; /* direct blocks, Winograd's U or GEMM panels; NULL for depthwise */
  int64_t packed_floats;
} conv_state;

static int run_conv(const rt_step *s, void *const *ptr) {
  const conv_state *c = s->state;
  const mte_conv2d_desc *d = &c->d;
  const float *x = IN(s, 0), *residual = c->has_residual ? IN(s, 3) : NULL;
  float *y = OUT(s, 0);
  int st;
  switch (c->route) {
  case CONV_DEPTHWISE3X3:
    return mte_depthwise3x3(d->batch, d->in_channels, d->in_h, d->in_w, c->stride, x, c->w,
                            c->bias, c->act, y);
  case CONV_DEPTHWISE: {
    int fused = c->act <= MTE_ACT_RELU6;
    st = mte_depthwise(d->batch, d->in_channels, d->in_h, d->in_w, c->kernel_size, c->stride,
                       c->pad, x, c->w, c->bias, fused ? c->act : MTE_ACT_NONE, y);
    return st || fused ? st : epilogue_in_place(y, d->batch * d->out_channels * d->out_h * d->out_w,
                                                c->act, NULL);
  }
  case CONV_DIRECT:
    return mte_conv2d_direct_forward(d, x, c->packed, c->bias, residual, c->act, y, NULL);
  case CONV_WINOGRAD:
    st = mte_winograd3x3(c->tile, d->batch, d->in_channels, d->in_h, d->in_w, d->out_channels,
                         d->pad_top, d->pad_left, x, NULL, c->packed, c->bias, y);
    return st ? st : epilogue_in_place(y, d->batch * d->out_channels * d->out_h * d->out_w,
                                       c->act, residual);
  case CONV_GEMM:
    return mte_conv2d_forward_packed(d, x, c->w, c->packed, c->packed_floats, c->bias, c->act,
                                     residual, y, NULL);
  }
  return MTE_EINVAL;
}

/* The ONNX geometry attributes of a Conv node into a descriptor (output size included);
 * also mte.QLinearConv's (kernels.h). */
int rt_conv_desc(const rt_prep *p, const rt_value *x, const rt_value *w, mte_conv2d_desc *d) {
  static const int64_t ones[2] = {1, 1}, zeros[4] = {0, 0, 0, 0};
  const int64_t *strides, *dil, *pads, *ks;
  int64_t group, nks;
  int st = rt_attr_ints(p, "strides", 2, ones, &strides, NULL);
  if (!st) st = rt_attr_ints(p, "dilations", 2, ones, &dil, NULL);
  if (!st) st = rt_attr_ints(p, "pads", 4, zeros, &pads, NULL);
  if (!st) st = rt_attr_ints(p, "kernel_shape", -2, NULL, &ks, &nks);
  if (!st) st = rt_attr_int(p, "group", 1, &group);
  if (st) return st;
  if (x->ndim != 4 || w->ndim != 4)
    return rt_node_fail(p, MTE_EFORMAT, "takes 4-D X and W, has %d-D and %d-D", x->ndim,
                        w->ndim);
  for (int i = 0; i < 2; ++i)
    if (strides[i] < 1 || dil[i] < 1 || strides[i] > (1 << 30) || dil[i] > (1 << 30))
      return rt_node_fail(p, MTE_EFORMAT, "strides and dilations must be in [1, 2^30]");
  for (int i = 0; i < 4; ++i)
    if (pads[i] < 0 || pads[i] > (1 << 30))
      return rt_node_fail(p, MTE_EFORMAT, "pads must be in [0, 2^30]");
  if (group < 1 || x->shape[1] != w->shape[1] * group || w->shape[0] % group)
    return rt_node_fail(p, MTE_EFORMAT, "X has %lld channels, W [%lld, %lld, %lld, %lld] with "
                        "group=%lld expects %lld", (long long)x->shape[1],
                        (long long)w->shape[0], (long long)w->shape[1], (long long)w->shape[2],
                        (long long)w->shape[3], (long long)group,
                        (long long)(w->shape[1] * group));
  if (nks && (ks[0] != w->shape[2] || ks[1] != w->shape[3]))
    return rt_node_fail(p, MTE_EFORMAT, "kernel_shape differs from W's");
  *d = (mte_conv2d_desc){x->shape[0], x->shape[1], x->shape[2], x->shape[3], w->shape[0],
                         w->shape[2], w->shape[3], 0, 0, strides[0], strides[1],
                         pads[0], pads[2], pads[1], pads[3], dil[0], dil[1], group};
  d->out_h = mte_conv2d_output_size(d->in_h, d->kernel_h, d->stride_h, d->pad_top,
                                    d->pad_bottom, d->dilation_h);
  d->out_w = mte_conv2d_output_size(d->in_w, d->kernel_w, d->stride_w, d->pad_left,
                                    d->pad_right, d->dilation_w);
  if (d->out_h <= 0 || d->out_w <= 0)
    return rt_node_fail(p, MTE_EFORMAT, "the output would be empty (%lldx%lld)",
                        (long long)d->out_h, (long long)d->out_w);
  return MTE_OK;
}

static int depthwise_like(const mte_conv2d_desc *d) {
  return d->groups == d->in_channels && d->out_channels == d->in_channels &&
         d->kernel_h == d->kernel_w && d->dilation_h == 1 && d->dilation_w == 1 &&
         d->stride_h == d->stride_w && (d->stride_h == 1 || d->stride_h == 2) &&
         d->pad_top == d->pad_bottom && d->pad_top == d->pad_left && d->pad_top == d->pad_right;
}

/* backend/native_conv.py conv2d_prepare's order of routes. */
static int choose_conv_route(rt_prep *p, conv_state *c) {
  const mte_conv2d_desc *d = &c->d;
  rt_step *s = p->step;
  if (depthwise_like(d) && !c->has_residual) {
    c->stride = (int)d->stride_h;
    if (d->kernel_h == 3 && d->pad_top == 1) {
      c->route = CONV_DEPTHWISE3X3;
      s->kernel = "depthwise3x3";
      return MTE_OK;
    }
    if (d->kernel_h <= 31 && d->pad_top < d->kernel_h &&
        d->in_h + 2 * d->pad_top >= d->kernel_h && d->in_w + 2 * d->pad_top >= d->kernel_w) {
      c->route = CONV_DEPTHWISE;
      c->kernel_size = (int)d->kernel_h;
      c->pad = (int)d->pad_top;
      s->kernel = "depthwise";
      return MTE_OK;
    }
  }
  if (d->groups == 1 && d->dilation_h == 1 && d->dilation_w == 1 && c->act <= MTE_ACT_RELU6 &&
      mte_conv2d_direct_should_use(d, c->act)) {
    int64_t n = mte_conv2d_direct_packed_floats(d->out_channels, d->in_channels, d->kernel_h,
                                                d->kernel_w);
    if (n < 0 || !(c->packed = rt_state_alloc_aligned(p, (size_t)n * sizeof(float))))
      return n < 0 ? rt_node_fail(p, MTE_EFORMAT, "direct conv: bad sizes") : MTE_ENOMEM;
    c->route = CONV_DIRECT;
    s->kernel = "direct";
    return mte_conv2d_direct_pack(d->out_channels, d->in_channels, d->kernel_h, d->kernel_w,
                                  c->w, c->packed);
  }
  if (d->groups == 1 && d->kernel_h == 3 && d->kernel_w == 3 && d->stride_h == 1 &&
      d->stride_w == 1 && d->dilation_h == 1 && d->dilation_w == 1 &&
      d->pad_top == d->pad_bottom && d->pad_left == d->pad_right && d->batch > 0 &&
      mte_winograd_should_use(d->batch, d->in_channels, d->out_channels, d->out_h, d->out_w, 1)) {
    c->tile = mte_winograd_tile(d->batch, d->in_channels, d->out_channels, d->out_h, d->out_w, 1);
    int64_t n = mte_winograd_weight_size(c->tile, d->out_channels, d->in_channels);
    if (c->tile && n > 0 && (c->packed = rt_state_alloc_aligned(p, (size_t)n * sizeof(float)))) {
      c->route = CONV_WINOGRAD;
      s->kernel = c->tile == 4 ? "winograd4" : "winograd2";
      return mte_winograd_transform_weight(c->tile, d->out_channels, d->in_channels, c->w,
                                           c->packed);
    }
    if (c->tile && n > 0) return MTE_ENOMEM;
  }
  c->route = CONV_GEMM;
  s->kernel = "im2col+gemm";
  c->packed_floats = mte_conv2d_packed_weight_floats(d);
  if (c->packed_floats < 0) return rt_node_fail(p, MTE_EFORMAT, "conv: bad sizes");
  if (c->packed_floats == 0) return MTE_OK; /* (depthwise-like: nothing to pack) */
  c->packed = rt_state_alloc_aligned(p, (size_t)c->packed_floats * sizeof(float));
  if (!c->packed) return MTE_ENOMEM;
  return mte_conv2d_pack_weight(d, c->w, c->packed, c->packed_floats);
}

/* Conv(X, W, B) and mte.ConvAct(X, W, B, R): W (and B) constant, float32. */
static int prepare_conv(rt_prep *p, int fused) {
  int st = rt_expect_arity(p, 2, fused ? 4 : 3, 1);
  for (int i = 0; !st && i < p->node->num_inputs; ++i)
    if (rt_input(p, i)) st = rt_expect_dtype(p, i, MTE_DTYPE_FLOAT32);
  if (!st) st = rt_expect_const(p, 1);
  if (!st && rt_input(p, 2)) st = rt_expect_const(p, 2);
  if (st) return st;
  conv_state *c = rt_state_alloc(p, sizeof *c);
  if (!c) return MTE_ENOMEM;
  c->act = MTE_ACT_NONE;
  if (fused && (st = activation_of(p, &c->act))) return st;
  if ((st = rt_conv_desc(p, rt_input(p, 0), rt_input(p, 1), &c->d))) return st;
  const mte_conv2d_desc *d = &c->d;
  if ((st = rt_expect_vector(p, 2, d->out_channels, 1, "B"))) return st;
  int64_t shape[4] = {d->batch, d->out_channels, d->out_h, d->out_w};
  const rt_value *r = rt_input(p, 3);
  c->has_residual = r != NULL;
  if (r && (r->ndim != 4 || memcmp(r->shape, shape, sizeof shape)))
    return rt_node_fail(p, MTE_EFORMAT, "the residual must have the output's shape");
  if ((st = rt_expect_output(p, 0, MTE_DTYPE_FLOAT32, 4, shape))) return st;
  c->w = rt_const_data(p, 1);
  c->bias = rt_const_data(p, 2);
  p->step->state = c;
  p->step->run = run_conv;
  st = choose_conv_route(p, c);
  return st ? (p->err->buf && p->err->buf[0] ? st : rt_node_fail(p, st, "preparing the weights"))
            : MTE_OK;
}

int rt_prepare_Conv(rt_prep *p) { return prepare_conv(p, 0); }
int rt_prepare_mte_ConvAct(rt_prep *p) { return prepare_conv(p, 1); }

/* ---- ConvTranspose ------------------------------------------------------------------------ */

/* ConvTranspose(X [N, C, H, W], W [C, M/group, kh, kw], B [M]) is the input gradient of the
 * convolution that maps [N, M, Ho, Wo] to X with the same W and geometry, so it runs on
 * mte_conv2d_backward_input with that convolution's descriptor; output_padding only adds the
 * rows / columns that no window of that convolution reads (zeros, plus the bias). */
typedef struct deconv_state {
  mte_conv2d_desc d; /* the forward convolution: in = Y's shape, out = X's */
  const float *w, *bias;
} deconv_state;

static int run_conv_transpose(const rt_step *s, void *const *ptr) {
  const deconv_state *c = s->state;
  const mte_conv2d_desc *d = &c->d;
  float *y = OUT(s, 0);
  int st = mte_conv2d_backward_input(d, IN(s, 0), c->w, y, NULL);
  if (st || !c->bias) return st;
  const int64_t plane = d->in_h * d->in_w;
  for (int64_t i = 0; i < d->batch * d->in_channels; ++i) {
    const float b = c->bias[i % d->in_channels];
    float *row = y + i * plane;
    for (int64_t j = 0; j < plane; ++j) row[j] += b;
  }
  return MTE_OK;
}

int rt_prepare_ConvTranspose(rt_prep *p) {
  int st = rt_expect_arity(p, 2, 3, 1);
  for (int i = 0; !st && i < p->node->num_inputs; ++i)
    if (rt_input(p, i)) st = rt_expect_dtype(p, i, MTE_DTYPE_FLOAT32);
  if (!st) st = rt_expect_const(p, 1);
  if (!st && rt_input(p, 2)) st = rt_expect_const(p, 2);
  if (st) return st;
  static const int64_t ones[2] = {1, 1}, zeros[4] = {0, 0, 0, 0};
  const int64_t *strides, *dil, *pads, *opad, *ks, *oshape;
  int64_t group, nks, nshape;
  const char *auto_pad;
  st = rt_attr_ints(p, "strides", 2, ones, &strides, NULL);
  if (!st) st = rt_attr_ints(p, "dilations", 2, ones, &dil, NULL);
  if (!st) st = rt_attr_ints(p, "pads", 4, zeros, &pads, NULL);
  if (!st) st = rt_attr_ints(p, "output_padding", 2, zeros, &opad, NULL);
  if (!st) st = rt_attr_ints(p, "kernel_shape", -2, NULL, &ks, &nks);
  if (!st) st = rt_attr_ints(p, "output_shape", -2, NULL, &oshape, &nshape);
  if (!st) st = rt_attr_int(p, "group", 1, &group);
  if (!st) st = rt_attr_string(p, "auto_pad", "NOTSET", &auto_pad);
  if (st) return st;
  if (nshape || strcmp(auto_pad, "NOTSET"))
    return rt_node_fail(p, MTE_EUNSUPPORTED, "output_shape and auto_pad are not supported by "
                        "the C runtime; give pads and output_padding");
  const rt_value *x = rt_input(p, 0), *w = rt_input(p, 1);
  if (x->ndim != 4 || w->ndim != 4)
    return rt_node_fail(p, MTE_EFORMAT, "takes 4-D X and W, has %d-D and %d-D", x->ndim,
                        w->ndim);
  for (int i = 0; i < 2; ++i) {
    if (strides[i] < 1 || dil[i] < 1 || strides[i] > (1 << 30) || dil[i] > (1 << 30))
      return rt_node_fail(p, MTE_EFORMAT, "strides and dilations must be in [1, 2^30]");
    if (opad[i] < 0 || opad[i] >= strides[i])
      return rt_node_fail(p, MTE_EUNSUPPORTED, "output_padding %lld must be in [0, stride %lld)",
                          (long long)opad[i], (long long)strides[i]);
  }
  for (int i = 0; i < 4; ++i)
    if (pads[i] < 0 || pads[i] > (1 << 30))
      return rt_node_fail(p, MTE_EFORMAT, "pads must be in [0, 2^30]");
  if (group < 1 || x->shape[1] != w->shape[0] || w->shape[0] % group)
    return rt_node_fail(p, MTE_EFORMAT, "X has %lld channels, W [%lld, %lld, %lld, %lld] with "
                        "group=%lld expects %lld", (long long)x->shape[1],
                        (long long)w->shape[0], (long long)w->shape[1], (long long)w->shape[2],
                        (long long)w->shape[3], (long long)group, (long long)w->shape[0]);
  if (nks && (ks[0] != w->shape[2] || ks[1] != w->shape[3]))
    return rt_node_fail(p, MTE_EFORMAT, "kernel_shape differs from W's");
  deconv_state *c = rt_state_alloc(p, sizeof *c);
  if (!c) return MTE_ENOMEM;
  int64_t out[2];
  for (int i = 0; i < 2; ++i) { /* s (in - 1) + d (k - 1) + 1 - pads + output_padding */
    const int64_t in = x->shape[2 + i], k = w->shape[2 + i];
    if (in > (1 << 30) || k > (1 << 30))
      return rt_node_fail(p, MTE_EFORMAT, "sizes must be under 2^30");
    out[i] = strides[i] * (in - 1) + dil[i] * (k - 1) + 1 - pads[i] - pads[i + 2] + opad[i];
    if (out[i] <= 0)
      return rt_node_fail(p, MTE_EFORMAT, "the output would be empty (%lld along dim %d)",
                          (long long)out[i], 2 + i);
  }
  c->d = (mte_conv2d_desc){x->shape[0], w->shape[1] * group, out[0], out[1], x->shape[1],
                           w->shape[2], w->shape[3], x->shape[2], x->shape[3], strides[0],
                           strides[1], pads[0], pads[2], pads[1], pads[3], dil[0], dil[1],
                           group};
  for (int i = 0; i < 2; ++i) /* the forward convolution must map Y's size back to X's */
    if (mte_conv2d_output_size(out[i], w->shape[2 + i], strides[i], pads[i], pads[i + 2],
                               dil[i]) != x->shape[2 + i])
      return rt_node_fail(p, MTE_EUNSUPPORTED, "this geometry has no convolution counterpart");
  if ((st = rt_expect_vector(p, 2, c->d.in_channels, 1, "B"))) return st;
  int64_t shape[4] = {x->shape[0], c->d.in_channels, out[0], out[1]};
  if ((st = rt_expect_output(p, 0, MTE_DTYPE_FLOAT32, 4, shape))) return st;
  c->w = rt_const_data(p, 1);
  c->bias = rt_const_data(p, 2);
  p->step->state = c;
  p->step->run = run_conv_transpose;
  p->step->kernel = "col2im";
  return MTE_OK;
}

/* ---- Gemm and MatMul --------------------------------------------------------------------------- */

typedef struct gemm_state {
  int trans_a, trans_b, act;
  int64_t m, n, k;
  float alpha, beta;
  int bias_per_col;     /* C is a [N] (or [1, N]) vector: the epilogue's bias */
  int64_t c_stride[2];  /* else C broadcast to [M, N]: its strides (0 where broadcast) */
  int has_c, has_residual;
  int gemv; /* few rows, constant W, plain alpha/beta: the matrix-vector loop */
} gemm_state;

/* A few rows against constant weights (batch-1 inference): memory-bound, so a
 * matrix-vector loop that streams W once beats packing it for the GEMM. y = A W^T (trans_b)
 * or A W, plus the bias, then the epilogue's residual and activation. */
#define GEMV_MAX_ROWS 4

static void gemv_row(const float *a, const float *w, int trans_b, int64_t n, int64_t k,
                     const float *bias, float *y) {
  if (trans_b) { /* y[j] = <a, W[j, :]>, 16 partial sums so the loop vectorizes */
    for (int64_t j = 0; j < n; ++j) {
      const float *row = w + j * k;
      float part[16] = {0};
      int64_t i = 0;
      for (; i + 16 <= k; i += 16)
        for (int t = 0; t < 16; ++t) part[t] += a[i + t] * row[i + t];
      float sum = 0.0f;
      for (int t = 0; t < 16; ++t) sum += part[t];
      for (; i < k; ++i) sum += a[i] * row[i];
      y[j] = sum + (bias ? bias[j] : 0.0f);
    }
  } else { /* y = sum_i a[i] W[i, :] */
    for (int64_t j = 0; j < n; ++j) y[j] = bias ? bias[j] : 0.0f;
    for (int64_t i = 0; i < k; ++i) {
      const float *row = w + i * n;
      float ai = a[i];
      for (int64_t j = 0; j < n; ++j) y[j] += ai * row[j];
    }
  }
}

static int run_gemm(const rt_step *s, void *const *ptr) {
  const gemm_state *g = s->state;
  const float *a = IN(s, 0), *w = IN(s, 1), *c = g->has_c ? IN(s, 2) : NULL;
  const float *residual = g->has_residual ? IN(s, 3) : NULL;
  float *y = OUT(s, 0);
  mte_epilogue ep = {MTE_BIAS_NONE, NULL, g->act, residual, g->n};
  float beta = 0.0f;
  if (g->gemv) {
    for (int64_t i = 0; i < g->m; ++i)
      gemv_row(a + i * g->k, w, g->trans_b, g->n, g->k, c, y + i * g->n);
    return epilogue_in_place(y, g->m * g->n, g->act, residual);
  }
  if (c && g->bias_per_col && g->beta == 1.0f) {
    ep.bias_mode = MTE_BIAS_PER_COL;
    ep.bias = c;
  } else if (c) { /* y = beta C (broadcast), then the GEMM adds onto it */
    for (int64_t i = 0; i < g->m; ++i)
      for (int64_t j = 0; j < g->n; ++j)
        y[i * g->n + j] = g->beta * c[i * g->c_stride[0] + j * g->c_stride[1]];
    beta = 1.0f;
  }
  int64_t lda = g->trans_a ? g->m : g->k, ldb = g->trans_b ? g->k : g->n;
  return mte_sgemm_ex(g->trans_a, g->trans_b, g->m, g->n, g->k, g->alpha, a, lda, w, ldb, beta,
                      y, g->n, &ep, NULL);
}

static int prepare_gemm(rt_prep *p, int fused) {
  int st = rt_expect_arity(p, 2, fused ? 4 : 3, 1);
  for (int i = 0; !st && i < p->node->num_inputs; ++i)
    if (rt_input(p, i)) st = rt_expect_dtype(p, i, MTE_DTYPE_FLOAT32);
  if (st) return st;
  gemm_state *g = rt_state_alloc(p, sizeof *g);
  if (!g) return MTE_ENOMEM;
  int64_t ta, tb;
  double alpha, beta;
  if ((st = rt_attr_int(p, "transA", 0, &ta)) || (st = rt_attr_int(p, "transB", 0, &tb)) ||
      (st = rt_attr_float(p, "alpha", 1.0, &alpha)) || (st = rt_attr_float(p, "beta", 1.0, &beta)))
    return st;
  if (fused && (st = activation_of(p, &g->act))) return st;
  const rt_value *a = rt_input(p, 0), *w = rt_input(p, 1), *c = rt_input(p, 2);
  if (a->ndim != 2 || w->ndim != 2)
    return rt_node_fail(p, MTE_EFORMAT, "takes 2-D A and B, has %d-D and %d-D", a->ndim, w->ndim);
  g->trans_a = ta != 0;
  g->trans_b = tb != 0;
  g->alpha = (float)alpha;
  g->beta = (float)beta;
  g->m = a->shape[g->trans_a ? 1 : 0];
  g->k = a->shape[g->trans_a ? 0 : 1];
  int64_t kb = w->shape[g->trans_b ? 1 : 0];
  g->n = w->shape[g->trans_b ? 0 : 1];
  if (kb != g->k) return rt_node_fail(p, MTE_EFORMAT, "A and B cannot be multiplied");
  int64_t shape[2] = {g->m, g->n};
  if (c) { /* numpy broadcasting of C against [M, N] */
    g->has_c = 1;
    if (c->ndim > 2) return rt_node_fail(p, MTE_EFORMAT, "C must have at most 2 dims");
    int64_t dims[2] = {1, 1};
    for (int i = 0; i < c->ndim; ++i) dims[2 - c->ndim + i] = c->shape[i];
    for (int i = 0; i < 2; ++i)
      if (dims[i] != 1 && dims[i] != shape[i])
        return rt_node_fail(p, MTE_EFORMAT, "C does not broadcast to [%lld, %lld]",
                            (long long)g->m, (long long)g->n);
    g->c_stride[0] = dims[0] == 1 ? 0 : dims[1];
    g->c_stride[1] = dims[1] == 1 ? 0 : 1;
    g->bias_per_col = dims[0] == 1 && dims[1] == g->n;
  }
  const rt_value *r = rt_input(p, 3);
  g->has_residual = r != NULL;
  if (r && (r->ndim != 2 || r->shape[0] != g->m || r->shape[1] != g->n))
    return rt_node_fail(p, MTE_EFORMAT, "the residual must have shape [%lld, %lld]",
                        (long long)g->m, (long long)g->n);
  if ((st = rt_expect_output(p, 0, MTE_DTYPE_FLOAT32, 2, shape))) return st;
  g->gemv = g->m <= GEMV_MAX_ROWS && !g->trans_a && g->alpha == 1.0f &&
            (!c || (g->bias_per_col && g->beta == 1.0f)) && w->kind == RT_VALUE_CONSTANT;
  p->step->state = g;
  p->step->run = run_gemm;
  p->step->kernel = g->gemv ? "gemv" : "gemm";
  return MTE_OK;
}

int rt_prepare_Gemm(rt_prep *p) { return prepare_gemm(p, 0); }
int rt_prepare_mte_GemmAct(rt_prep *p) { return prepare_gemm(p, 1); }

/* MatMul: numpy's matmul; batch dims broadcast, each (batch) product one SGEMM. */
typedef struct matmul_state {
  int64_t m, n, k, batches, ndim;
  int64_t out_batch[MTE_MODEL_MAX_NDIM]; /* the output's batch dims */
  int64_t a_step[MTE_MODEL_MAX_NDIM], b_step[MTE_MODEL_MAX_NDIM]; /* matrices per batch dim */
} matmul_state;

static int run_matmul(const rt_step *s, void *const *ptr) {
  const matmul_state *mm = s->state;
  const float *a = IN(s, 0), *b = IN(s, 1);
  float *y = OUT(s, 0);
  int64_t index[MTE_MODEL_MAX_NDIM] = {0};
  for (int64_t t = 0; t < mm->batches; ++t) {
    int64_t ia = 0, ib = 0;
    for (int64_t d = 0; d < mm->ndim; ++d) {
      ia += index[d] * mm->a_step[d];
      ib += index[d] * mm->b_step[d];
    }
    int st = mte_sgemm(0, 0, mm->m, mm->n, mm->k, 1.0f, a + ia * mm->m * mm->k, mm->k,
                       b + ib * mm->k * mm->n, mm->n, 0.0f, y + t * mm->m * mm->n, mm->n);
    if (st) return st;
    for (int64_t d = mm->ndim - 1; d >= 0 && ++index[d] == mm->out_batch[d]; --d) index[d] = 0;
  }
  return MTE_OK;
}

int rt_prepare_MatMul(rt_prep *p) {
  int st = rt_expect_arity(p, 2, 2, 1);
  if (!st) st = rt_expect_dtype(p, 0, MTE_DTYPE_FLOAT32);
  if (!st) st = rt_expect_dtype(p, 1, MTE_DTYPE_FLOAT32);
  if (st) return st;
  const rt_value *a = rt_input(p, 0), *b = rt_input(p, 1);
  if (a->ndim < 1 || b->ndim < 1) return rt_node_fail(p, MTE_EFORMAT, "inputs must have dims");
  matmul_state *mm = rt_state_alloc(p, sizeof *mm);
  if (!mm) return MTE_ENOMEM;
  mm->k = a->shape[a->ndim - 1];
  mm->m = a->ndim > 1 ? a->shape[a->ndim - 2] : 1;
  int64_t kb = b->ndim > 1 ? b->shape[b->ndim - 2] : b->shape[0];
  mm->n = b->ndim > 1 ? b->shape[b->ndim - 1] : 1;
  if (kb != mm->k) return rt_node_fail(p, MTE_EFORMAT, "the shapes cannot be multiplied");
  int a_batch = a->ndim > 2 ? a->ndim - 2 : 0, b_batch = b->ndim > 2 ? b->ndim - 2 : 0;
  mm->ndim = a_batch > b_batch ? a_batch : b_batch;
  int64_t shape[MTE_MODEL_MAX_NDIM + 2], a_mats = 1, b_mats = 1;
  mm->batches = 1;
  for (int64_t d = mm->ndim - 1; d >= 0; --d) { /* right-aligned, as numpy */
    int64_t ia = d - (mm->ndim - a_batch), ib = d - (mm->ndim - b_batch);
    int64_t da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
    if (da != db && da != 1 && db != 1)
      return rt_node_fail(p, MTE_EFORMAT, "the batch dims do not broadcast");
    mm->out_batch[d] = da > db ? da : db;
    if (da == 0 || db == 0) mm->out_batch[d] = 0;
    mm->a_step[d] = da == 1 ? 0 : a_mats;
    mm->b_step[d] = db == 1 ? 0 : b_mats;
    a_mats *= da;
    b_mats *= db;
    mm->batches *= mm->out_batch[d];
    shape[d] = mm->out_batch[d];
  }
  int nd = (int)mm->ndim;
  if (a->ndim > 1) shape[nd++] = mm->m;
  if (b->ndim > 1) shape[nd++] = mm->n;
  if ((st = rt_expect_output(p, 0, MTE_DTYPE_FLOAT32, nd, shape))) return st;
  p->step->state = mm;
  p->step->run = run_matmul;
  p->step->kernel = "gemm";
  return MTE_OK;
}
