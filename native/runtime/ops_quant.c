/*
 * ops_quant.c - the int8 ops of the C runtime (graph/opset_quant.py): QuantizeLinear,
 * DequantizeLinear, the fused mte.QLinear* layers, mte.Requantize and mte.FakeQuantize.
 *
 * The idea: a graph stores only float32 scales and integer zero points, as constant inputs;
 * every integer the kernels need (TFLite's fixed-point multipliers and shifts) is derived
 * from them once, in prepare, by the same float64 products and divisions in the same order as
 * Python (requant_multipliers, add_multipliers, _qgap_params, _rescaled) and the same
 * QuantizeMultiplier (mte_quantize_multiplier), so C and Python agree bit for bit. Run
 * functions only call libmte's int8 kernels (or a plain loop) on the prepared state.
 */
#include <math.h>
#include <string.h>

#include "kernels.h"

/* ---- reading constant parameters ------------------------------------------------------ */

static int is_int_dtype(mte_dtype d) {
  return d == MTE_DTYPE_INT8 || d == MTE_DTYPE_INT16 || d == MTE_DTYPE_INT32 ||
         d == MTE_DTYPE_INT64 || d == MTE_DTYPE_UINT8;
}

/* Element k of an integer constant. */
static int64_t int_at(const rt_value *v, int64_t k) {
  switch (v->dtype) {
    case MTE_DTYPE_INT8: return ((const int8_t *)v->data)[k];
    case MTE_DTYPE_INT16: return ((const int16_t *)v->data)[k];
    case MTE_DTYPE_INT32: return ((const int32_t *)v->data)[k];
    case MTE_DTYPE_INT64: return ((const int64_t *)v->data)[k];
    case MTE_DTYPE_UINT8: return ((const uint8_t *)v->data)[k];
    default: return 0;
  }
}

/* Element k of a float32 / float64 constant, as a double. */
static double real_at(const rt_value *v, int64_t k) {
  return v->dtype == MTE_DTYPE_FLOAT32 ? (double)((const float *)v->data)[k]
                                       : ((const double *)v->data)[k];
}

/* Constant input i (present), float32 or float64, with 1 or `n` elements (n <= 1: only 1). */
static int expect_scale_input(const rt_prep *p, int i, int64_t n, const rt_value **out) {
  const rt_value *v = rt_input(p, i);
  if (!v) return rt_node_fail(p, MTE_EFORMAT, "input %d (a scale) is required", i);
  int st = rt_expect_const(p, i);
  if (st) return st;
  if (v->dtype != MTE_DTYPE_FLOAT32 && v->dtype != MTE_DTYPE_FLOAT64)
    return rt_node_fail(p, MTE_EUNSUPPORTED, "scale \"%.200s\" must be float32 or float64, is %s",
                        v->name, mte_dtype_name(v->dtype));
  if (v->numel != 1 && (n <= 1 || v->numel != n))
    return rt_node_fail(p, MTE_EFORMAT, "scale \"%.200s\" has %lld elements, must have 1%s",
                        v->name, (long long)v->numel, n > 1 ? " or one per channel" : "");
  *out = v;
  return MTE_OK;
}

/* Scale k as Python's scale_of takes it: rounded to float32, positive and finite. */
static int scale_at(const rt_prep *p, const rt_value *v, int64_t k, float *out) {
  float s = (float)real_at(v, v->numel == 1 ? 0 : k);
  if (!(isfinite(s) && s > 0.0f))
    return rt_node_fail(p, MTE_EFORMAT, "scale \"%.200s\" must be positive and finite, got %g",
                        v->name, (double)s);
  *out = s;
  return MTE_OK;
}

/* One scale: input i with one element, validated. */
static int one_scale(const rt_prep *p, int i, float *out) {
  const rt_value *v = NULL;
  int st = expect_scale_input(p, i, 1, &v);
  return st ? st : scale_at(p, v, 0, out);
}

/* Python's zero_point(): a constant of one integer in [-128, 127]; 0 when left out. */
static int one_zero_point(const rt_prep *p, int i, int32_t *out) {
  const rt_value *v = rt_input(p, i);
  *out = 0;
  if (!v) return MTE_OK;
  int st = rt_expect_const(p, i);
  if (st) return st;
  if (!is_int_dtype(v->dtype) || v->numel != 1)
    return rt_node_fail(p, MTE_EFORMAT, "zero point \"%.200s\" must be one integer, is %s "
                        "with %lld elements", v->name, mte_dtype_name(v->dtype),
                        (long long)v->numel);
  int64_t z = int_at(v, 0);
  if (z < -128 || z > 127)
    return rt_node_fail(p, MTE_EFORMAT, "zero point %lld is outside int8's [-128, 127]",
                        (long long)z);
  *out = (int32_t)z;
  return MTE_OK;
}

/* act_min / act_max: -128 <= act_min <= act_max <= 127. */
static int act_range(const rt_prep *p, int32_t *lo, int32_t *hi) {
  int64_t a = -128, b = 127;
  int st = rt_attr_int(p, "act_min", -128, &a);
  if (!st) st = rt_attr_int(p, "act_max", 127, &b);
  if (st) return st;
  if (!(-128 <= a && a <= b && b <= 127))
    return rt_node_fail(p, MTE_EFORMAT, "act_min %lld / act_max %lld must satisfy -128 <= act_min "
                        "<= act_max <= 127", (long long)a, (long long)b);
  *lo = (int32_t)a, *hi = (int32_t)b;
  return MTE_OK;
}

/* TFLite's QuantizeMultiplier of a real factor (always finite and > 0 here). */
static int multiplier_of(const rt_prep *p, double real, int32_t *m, int32_t *shift) {
  if (mte_quantize_multiplier(real, m, shift) != MTE_OK)
    return rt_node_fail(p, MTE_EFORMAT, "the scale factor %g has no multiplier", real);
  return MTE_OK;
}

/* Input i is int8. */
static int expect_int8(const rt_prep *p, int i) { return rt_expect_dtype(p, i, MTE_DTYPE_INT8); }

/* A libmte failure in prepare: refused variant. */
static int libmte_fail(const rt_prep *p, int st, const char *what) {
  return rt_node_fail(p, st == MTE_ENOMEM ? MTE_ENOMEM : MTE_EUNSUPPORTED, "%s: %s", what,
                      mte_status_string(st));
}

/* Python's axis % ndim for the per-channel ops. */
static int64_t norm_axis(int64_t axis, int ndim) {
  int64_t a = axis % ndim;
  return a < 0 ? a + ndim : a;
}

/* ---- the per-channel layout of an elementwise op --------------------------------------- */

/* The values as (outer, channels, inner) around an axis: channel c of value i is
 * (i / inner) % channels. channels = 1 when every parameter is one value. */
typedef struct chan_layout {
  int64_t outer, channels, inner;
} chan_layout;

/* The layout for parameters of `count` elements (1 or x's size along the axis). */
static int layout_of(const rt_prep *p, const rt_value *x, int64_t axis, int64_t count,
                     chan_layout *l) {
  l->outer = x->numel, l->channels = 1, l->inner = 1;
  if (count == 1) return MTE_OK;
  if (x->ndim == 0) return rt_node_fail(p, MTE_EFORMAT, "a per-channel parameter needs an axis");
  int64_t a = norm_axis(axis, x->ndim);
  if (x->shape[a] != count)
    return rt_node_fail(p, MTE_EFORMAT, "per-channel parameters have %lld elements, input "
                        "\"%.200s\" has %lld along axis %lld", (long long)count, x->name,
                        (long long)x->shape[a], (long long)a);
  l->channels = count;
  for (int d = (int)a + 1; d < x->ndim; ++d) l->inner *= x->shape[d];
  l->outer = l->inner * count != 0 ? x->numel / (l->inner * count) : 0;
  return MTE_OK;
}

/* The number of per-channel elements among a scale and an optional zero point (1 if all
 * are single values; MTE_EFORMAT if two differ). */
static int param_count(const rt_prep *p, const rt_value *s, const rt_value *z, int64_t *count) {
  int64_t a = s->numel, b = z ? z->numel : 1;
  if (a != 1 && b != 1 && a != b)
    return rt_node_fail(p, MTE_EFORMAT, "scale (%lld elements) and zero point (%lld) differ",
                        (long long)a, (long long)b);
  *count = a != 1 ? a : b;
  return MTE_OK;
}

/* ---- QuantizeLinear ------------------------------------------------------------------------ */

typedef struct quant_state {
  chan_layout l;
  float scale;       /* the per-tensor fast path (mte_quantize) */
  int32_t zp;
  double *scales;    /* per channel, in x's precision */
  int32_t *zps;      /* per channel */
  double qmin, qmax; /* of the zero point's dtype */
} quant_state;

static int run_quantize_fast(const rt_step *s, void *const *ptr) {
  const quant_state *q = s->state;
  int64_t n = s->model->values[s->node->inputs[0]].numel;
  return mte_quantize(n, ptr[s->node->inputs[0]], q->scale, q->zp, ptr[s->node->outputs[0]]);
}

/* round half away, + zero point, clamped (NaN stays NaN), as Python's fallback */
static double quantize_one(double r, int32_t zp, double qmin, double qmax) {
  r += zp;
  return r < qmin ? qmin : r > qmax ? qmax : r;
}

/* The clamped value as the output integer (NaN: 0, which numpy's cast gives on x86). */
static int64_t to_code(double r) { return r == r ? (int64_t)r : 0; }

static int run_quantize_channels(const rt_step *s, void *const *ptr) {
  const quant_state *q = s->state;
  const rt_value *xv = &s->model->values[s->node->inputs[0]];
  const rt_value *yv = &s->model->values[s->node->outputs[0]];
  const void *x = ptr[s->node->inputs[0]];
  void *y = ptr[s->node->outputs[0]];
  int64_t i = 0;
  for (int64_t o = 0; o < q->l.outer; ++o)
    for (int64_t c = 0; c < q->l.channels; ++c)
      for (int64_t k = 0; k < q->l.inner; ++k, ++i) {
        double r;
        if (xv->dtype == MTE_DTYPE_FLOAT32) /* float32 division and rounding */
          r = (double)roundf(((const float *)x)[i] / (float)q->scales[c]);
        else
          r = round(((const double *)x)[i] / q->scales[c]);
        int64_t code = to_code(quantize_one(r, q->zps[c], q->qmin, q->qmax));
        if (yv->dtype == MTE_DTYPE_INT8)
          ((int8_t *)y)[i] = (int8_t)code;
        else
          ((uint8_t *)y)[i] = (uint8_t)code;
      }
  return MTE_OK;
}

/* scales and zero points per channel (the fallback); x's dtype sets the scales' precision */
static int fill_channels(const rt_prep *p, const rt_value *x, const rt_value *sv,
                         const rt_value *zv, quant_state *q) {
  q->scales = rt_state_alloc(p, (size_t)q->l.channels * sizeof *q->scales);
  q->zps = rt_state_alloc(p, (size_t)q->l.channels * sizeof *q->zps);
  if (!q->scales || !q->zps) return MTE_ENOMEM;
  for (int64_t c = 0; c < q->l.channels; ++c) {
    float f = 0.0f;
    int st = scale_at(p, sv, c, &f);
    if (st) return st;
    double raw = real_at(sv, sv->numel == 1 ? 0 : c);
    q->scales[c] = x->dtype == MTE_DTYPE_FLOAT32 ? (double)f : raw;
    q->zps[c] = zv ? (int32_t)int_at(zv, zv->numel == 1 ? 0 : c) : 0;
  }
  return MTE_OK;
}

static int quantize_params(const rt_prep *p, const rt_value **sv, const rt_value **zv) {
  int st = expect_scale_input(p, 1, rt_input(p, 1) ? rt_input(p, 1)->numel : 1, sv);
  if (st) return st;
  *zv = rt_input(p, 2);
  if (*zv && (st = rt_expect_const(p, 2))) return st;
  return MTE_OK;
}

int rt_prepare_QuantizeLinear(rt_prep *p) {
  const rt_value *x, *sv = NULL, *zv = NULL;
  int st = rt_expect_arity(p, 2, 3, 1);
  if (!st) st = quantize_params(p, &sv, &zv);
  if (st) return st;
  x = rt_input(p, 0);
  if (x->dtype != MTE_DTYPE_FLOAT32 && x->dtype != MTE_DTYPE_FLOAT64)
    return rt_node_fail(p, MTE_EFORMAT, "quantizes float32 or float64, input is %s",
                        mte_dtype_name(x->dtype));
  mte_dtype zdt = zv ? zv->dtype : MTE_DTYPE_UINT8;
  if (zdt != MTE_DTYPE_INT8 && zdt != MTE_DTYPE_UINT8)
    return rt_node_fail(p, MTE_EFORMAT, "the zero point must be int8 or uint8, is %s",
                        mte_dtype_name(zdt));
  if (!zv) /* Python declares uint8 but computes int8 with zero point 0 (opset_quant.py) */
    return rt_node_fail(p, MTE_EUNSUPPORTED, "a left-out zero point is not supported (give it)");
  if ((st = rt_expect_output(p, 0, zdt, x->ndim, x->shape))) return st;
  quant_state *q = rt_state_alloc(p, sizeof *q);
  if (!q) return MTE_ENOMEM;
  p->step->state = q;
  p->step->kernel = "quantize";
  if (sv->numel == 1 && zv->numel == 1 && zdt == MTE_DTYPE_INT8 && x->dtype == MTE_DTYPE_FLOAT32) {
    p->step->run = run_quantize_fast;
    st = scale_at(p, sv, 0, &q->scale);
    return st ? st : one_zero_point(p, 2, &q->zp);
  }
  int64_t axis = 1, count = 1;
  if ((st = rt_attr_int(p, "axis", 1, &axis)) || (st = param_count(p, sv, zv, &count)) ||
      (st = layout_of(p, x, axis, count, &q->l)) || (st = fill_channels(p, x, sv, zv, q)))
    return st;
  q->qmin = zdt == MTE_DTYPE_INT8 ? -128.0 : 0.0;
  q->qmax = zdt == MTE_DTYPE_INT8 ? 127.0 : 255.0;
  p->step->run = run_quantize_channels;
  p->step->kernel = "quantize_channels";
  return MTE_OK;
}

/* ---- DequantizeLinear ---------------------------------------------------------------------- */

typedef struct dequant_state {
  chan_layout l;
  float scale;   /* the per-tensor int8 fast path (mte_dequantize) */
  int32_t zp;
  float *scales; /* per channel */
  int64_t *zps;
} dequant_state;

static int run_dequantize_fast(const rt_step *s, void *const *ptr) {
  const dequant_state *d = s->state;
  int64_t n = s->model->values[s->node->inputs[0]].numel;
  return mte_dequantize(n, ptr[s->node->inputs[0]], d->scale, d->zp, ptr[s->node->outputs[0]]);
}

static int run_dequantize_channels(const rt_step *s, void *const *ptr) {
  const dequant_state *d = s->state;
  const rt_value *xv = &s->model->values[s->node->inputs[0]];
  const void *x = ptr[s->node->inputs[0]];
  float *y = ptr[s->node->outputs[0]];
  int64_t i = 0;
  for (int64_t o = 0; o < d->l.outer; ++o)
    for (int64_t c = 0; c < d->l.channels; ++c)
      for (int64_t k = 0; k < d->l.inner; ++k, ++i) {
        int64_t q = xv->dtype == MTE_DTYPE_INT8    ? ((const int8_t *)x)[i]
                    : xv->dtype == MTE_DTYPE_UINT8 ? ((const uint8_t *)x)[i]
                                                   : ((const int32_t *)x)[i];
        y[i] = (float)(q - d->zps[c]) * d->scales[c];
      }
  return MTE_OK;
}

static int dequantize_channels(const rt_prep *p, const rt_value *x, const rt_value *sv,
                               const rt_value *zv, dequant_state *d) {
  int64_t axis = 1, count = 1;
  int st;
  if ((st = rt_attr_int(p, "axis", 1, &axis)) || (st = param_count(p, sv, zv, &count)) ||
      (st = layout_of(p, x, axis, count, &d->l)))
    return st;
  if (zv && !is_int_dtype(zv->dtype))
    return rt_node_fail(p, MTE_EFORMAT, "the zero point must be integers, is %s",
                        mte_dtype_name(zv->dtype));
  d->scales = rt_state_alloc(p, (size_t)d->l.channels * sizeof *d->scales);
  d->zps = rt_state_alloc(p, (size_t)d->l.channels * sizeof *d->zps);
  if (!d->scales || !d->zps) return MTE_ENOMEM;
  for (int64_t c = 0; c < d->l.channels; ++c) {
    if ((st = scale_at(p, sv, c, &d->scales[c]))) return st;
    d->zps[c] = zv ? int_at(zv, zv->numel == 1 ? 0 : c) : 0;
  }
  p->step->run = run_dequantize_channels;
  p->step->kernel = "dequantize_channels";
  return MTE_OK;
}

int rt_prepare_DequantizeLinear(rt_prep *p) {
  const rt_value *x, *sv = NULL, *zv = NULL;
  int st = rt_expect_arity(p, 2, 3, 1);
  if (!st) st = quantize_params(p, &sv, &zv);
  if (st) return st;
  x = rt_input(p, 0);
  if (x->dtype != MTE_DTYPE_INT8 && x->dtype != MTE_DTYPE_UINT8 && x->dtype != MTE_DTYPE_INT32)
    return rt_node_fail(p, MTE_EFORMAT, "takes int8, uint8 or int32, input is %s",
                        mte_dtype_name(x->dtype));
  if ((st = rt_expect_output(p, 0, MTE_DTYPE_FLOAT32, x->ndim, x->shape))) return st;
  dequant_state *d = rt_state_alloc(p, sizeof *d);
  if (!d) return MTE_ENOMEM;
  p->step->state = d;
  if (sv->numel == 1 && x->dtype == MTE_DTYPE_INT8) {
    p->step->run = run_dequantize_fast;
    p->step->kernel = "dequantize";
    st = scale_at(p, sv, 0, &d->scale);
    return st ? st : one_zero_point(p, 2, &d->zp);
  }
  return dequantize_channels(p, x, sv, zv, d);
}

/* ---- QLinearConv / QLinearGemm ------------------------------------------------------------- */

typedef struct qlayer_state {
  mte_qconv2d_plan *plan; /* released with the model */
  mte_conv2d_desc desc;   /* QLinearConv */
  int64_t rows, k, m;     /* QLinearGemm: (rows, k) x (m, k)^T */
  int32_t x_zp;
  const int32_t *bias;    /* the constant's data, or NULL */
  mte_requant rq;         /* multiplier / shift: one per output channel */
} qlayer_state;

static void release_qlayer(void *state) { mte_qconv2d_free(((qlayer_state *)state)->plan); }

/* _qlayer_check and _qconv_args / _qgemm_args: X, W int8, W constant without -128, weight
 * zero point 0, bias int32 [O], the requantisation per output channel. */
static int qlayer_params(rt_prep *p, int64_t o, qlayer_state *s) {
  int st;
  for (int i = 1; i < 8; ++i)
    if (i != 5 && (st = rt_expect_const(p, i))) return st;
  const rt_value *w = rt_input(p, 3), *wz = rt_input(p, 5), *b = rt_input(p, 8);
  if (wz) {
    if ((st = rt_expect_const(p, 5))) return st;
    int is_real = wz->dtype == MTE_DTYPE_FLOAT32 || wz->dtype == MTE_DTYPE_FLOAT64;
    if (!is_real && !is_int_dtype(wz->dtype))
      return rt_node_fail(p, MTE_EFORMAT, "the weight zero point must be numbers");
    for (int64_t k = 0; k < wz->numel; ++k)
      if (is_real ? real_at(wz, k) != 0.0 : int_at(wz, k) != 0)
        return rt_node_fail(p, MTE_EFORMAT, "weights must be symmetric (zero point 0)");
  }
  const int8_t *wd = w->data;
  for (int64_t k = 0; k < w->numel; ++k)
    if (wd[k] == -128) return rt_node_fail(p, MTE_EFORMAT, "W holds -128 (int8 weights lie in "
                                           "[-127, 127])");
  if (b) {
    if ((st = rt_expect_const(p, 8))) return st;
    if (b->dtype != MTE_DTYPE_INT32)
      return rt_node_fail(p, MTE_EFORMAT, "B must be int32 (scale X_scale * W_scale), is %s",
                          mte_dtype_name(b->dtype));
    if (b->ndim != 1 || b->shape[0] != o)
      return rt_node_fail(p, MTE_EFORMAT, "B must have shape [%lld]", (long long)o);
    s->bias = b->data;
  }
  float xs = 0.0f, ys = 0.0f;
  const rt_value *ws = NULL;
  if ((st = one_scale(p, 1, &xs)) || (st = one_scale(p, 6, &ys)) ||
      (st = expect_scale_input(p, 4, o, &ws)) || (st = one_zero_point(p, 2, &s->x_zp)) ||
      (st = one_zero_point(p, 7, &s->rq.zero_point)) ||
      (st = act_range(p, &s->rq.act_min, &s->rq.act_max)))
    return st;
  int32_t *mult = rt_state_alloc(p, (size_t)o * sizeof *mult);
  int32_t *shift = rt_state_alloc(p, (size_t)o * sizeof *shift);
  if (!mult || !shift) return MTE_ENOMEM;
  for (int64_t c = 0; c < o; ++c) { /* in_scale * w_scale[o] / out_scale, in float64 */
    float wsc = 0.0f;
    if ((st = scale_at(p, ws, c, &wsc))) return st;
    double real = (double)xs * (double)wsc / (double)ys;
    if ((st = multiplier_of(p, real, &mult[c], &shift[c]))) return st;
  }
  s->rq.multiplier = mult, s->rq.shift = shift;
  return MTE_OK;
}

static int run_qconv(const rt_step *s, void *const *ptr) {
  const qlayer_state *q = s->state;
  return mte_qconv2d_run(q->plan, &q->desc, ptr[s->node->inputs[0]], q->x_zp, q->bias, &q->rq,
                         ptr[s->node->outputs[0]], NULL);
}

/* Conv's geometry attributes (rt_conv_desc), and a reduction the int8 kernels can take. */
static int conv_geometry(const rt_prep *p, const rt_value *x, const rt_value *w,
                         mte_conv2d_desc *d) {
  int st = rt_conv_desc(p, x, w, d);
  if (st) return st;
  if (w->shape[1] * w->shape[2] * w->shape[3] > MTE_QMAX_K)
    return rt_node_fail(p, MTE_EFORMAT, "the reduction length exceeds %d", MTE_QMAX_K);
  return MTE_OK;
}

int rt_prepare_mte_QLinearConv(rt_prep *p) {
  int st = rt_expect_arity(p, 8, 9, 1);
  if (!st) st = expect_int8(p, 0);
  if (!st) st = expect_int8(p, 3);
  if (!st) st = rt_expect_const(p, 3);
  if (st) return st;
  const rt_value *x = rt_input(p, 0), *w = rt_input(p, 3);
  if (x->ndim != 4 || w->ndim != 4)
    return rt_node_fail(p, MTE_EFORMAT, "takes 4-D X and W");
  qlayer_state *s = rt_state_alloc(p, sizeof *s);
  if (!s) return MTE_ENOMEM;
  if ((st = conv_geometry(p, x, w, &s->desc)) || (st = qlayer_params(p, w->shape[0], s)))
    return st;
  int64_t shape[4] = {x->shape[0], w->shape[0], s->desc.out_h, s->desc.out_w};
  if ((st = rt_expect_output(p, 0, MTE_DTYPE_INT8, 4, shape))) return st;
  if ((st = mte_qconv2d_prepare(&s->desc, w->data, &s->plan)) != MTE_OK)
    return libmte_fail(p, st, "mte_qconv2d_prepare");
  p->step->state = s;
  p->step->release = release_qlayer;
  p->step->run = run_qconv;
  p->step->kernel = "qconv2d";
  return MTE_OK;
}

static int run_qgemm(const rt_step *s, void *const *ptr) {
  const qlayer_state *q = s->state;
  return mte_qlinear(q->rows, q->k, q->m, ptr[s->node->inputs[0]], q->x_zp, ptr[s->node->inputs[3]],
                     q->plan, q->bias, &q->rq, ptr[s->node->outputs[0]], NULL);
}

int rt_prepare_mte_QLinearGemm(rt_prep *p) {
  int st = rt_expect_arity(p, 8, 9, 1);
  if (!st) st = expect_int8(p, 0);
  if (!st) st = expect_int8(p, 3);
  if (!st) st = rt_expect_const(p, 3);
  if (st) return st;
  const rt_value *a = rt_input(p, 0), *w = rt_input(p, 3);
  if (a->ndim != 2 || w->ndim != 2 || a->shape[1] != w->shape[1])
    return rt_node_fail(p, MTE_EFORMAT, "A and W (transB=1) cannot be multiplied");
  if (w->shape[1] > MTE_QMAX_K)
    return rt_node_fail(p, MTE_EFORMAT, "the reduction length exceeds %d", MTE_QMAX_K);
  qlayer_state *s = rt_state_alloc(p, sizeof *s);
  if (!s) return MTE_ENOMEM;
  s->rows = a->shape[0], s->k = a->shape[1], s->m = w->shape[0];
  if ((st = qlayer_params(p, s->m, s))) return st;
  int64_t shape[2] = {s->rows, s->m};
  if ((st = rt_expect_output(p, 0, MTE_DTYPE_INT8, 2, shape))) return st;
  if (s->m * s->k > 0 && (st = mte_qlinear_prepare(s->m, s->k, w->data, &s->plan)) != MTE_OK)
    return libmte_fail(p, st, "mte_qlinear_prepare");
  p->step->state = s;
  p->step->release = release_qlayer;
  p->step->run = run_qgemm;
  p->step->kernel = "qlinear";
  return MTE_OK;
}

/* ---- QLinearAdd ------------------------------------------------------------------------------ */

/* The add's 65,536 possible results, evaluated once at load (mte_qadd_table): a run is one
 * lookup per element, bit-equal to the arithmetic. */
static int run_qadd(const rt_step *s, void *const *ptr) {
  int64_t n = s->model->values[s->node->outputs[0]].numel;
  return mte_qadd_lookup(n, ptr[s->node->inputs[0]], ptr[s->node->inputs[3]], s->state,
                         ptr[s->node->outputs[0]]);
}

int rt_prepare_mte_QLinearAdd(rt_prep *p) {
  int st = rt_expect_arity(p, 8, 8, 1);
  if (!st) st = expect_int8(p, 0);
  if (!st) st = expect_int8(p, 3);
  if (st) return st;
  const rt_value *a = rt_input(p, 0), *b = rt_input(p, 3);
  if (a->ndim != b->ndim || memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof *a->shape))
    return rt_node_fail(p, MTE_EFORMAT, "A and B must have one shape (no broadcasting)");
  mte_qadd_params *q = rt_state_alloc(p, sizeof *q);
  if (!q) return MTE_ENOMEM;
  float as = 0.0f, bs = 0.0f, ys = 0.0f;
  if ((st = one_scale(p, 1, &as)) || (st = one_scale(p, 4, &bs)) || (st = one_scale(p, 6, &ys)) ||
      (st = one_zero_point(p, 2, &q->a_zero_point)) ||
      (st = one_zero_point(p, 5, &q->b_zero_point)) ||
      (st = one_zero_point(p, 7, &q->y_zero_point)) ||
      (st = act_range(p, &q->act_min, &q->act_max)))
    return st;
  /* add_multipliers: the common scale twice_max / 2^20 */
  q->left_shift = 20;
  double twice_max = 2.0 * fmax((double)as, (double)bs);
  if ((st = multiplier_of(p, (double)as / twice_max, &q->a_multiplier, &q->a_shift)) ||
      (st = multiplier_of(p, (double)bs / twice_max, &q->b_multiplier, &q->b_shift)) ||
      (st = multiplier_of(p, twice_max / ((double)(1 << 20) * (double)ys), &q->y_multiplier,
                          &q->y_shift)))
    return st;
  if ((st = rt_expect_output_like(p, 0, 0))) return st;
  int8_t *table = rt_state_alloc_aligned(p, 65536);
  if (!table) return MTE_ENOMEM;
  if ((st = mte_qadd_table(q, table)))
    return rt_node_fail(p, st, "the add's parameters are out of range");
  p->step->state = table;
  p->step->run = run_qadd;
  p->step->kernel = "qadd (lookup)";
  return MTE_OK;
}

/* ---- Requantize and the rescale after pooling (_rescaled) ------------------------------------ */

typedef struct rescale {
  int identity; /* same scale and zero point: a copy */
  int32_t in_zp, multiplier, shift, out_zp;
} rescale;

/* _rescaled's parameters from inputs Xs, Xz, Ys, Yz at 1..4. */
static int rescale_params(const rt_prep *p, rescale *r) {
  float xs = 0.0f, ys = 0.0f;
  int st;
  if ((st = one_scale(p, 1, &xs)) || (st = one_scale(p, 3, &ys)) ||
      (st = one_zero_point(p, 2, &r->in_zp)) || (st = one_zero_point(p, 4, &r->out_zp)))
    return st;
  r->identity = xs == ys && r->in_zp == r->out_zp;
  return r->identity ? MTE_OK : multiplier_of(p, (double)xs * 1.0 / (double)ys, &r->multiplier,
                                              &r->shift);
}

/* y = x in the new parameters; in place (y == x) is safe: element i is read before written */
static int apply_rescale(const rescale *r, int64_t n, const int8_t *x, int8_t *y) {
  if (r->identity) {
    if (x != y) memmove(y, x, (size_t)n);
    return MTE_OK;
  }
  return mte_requantize(n, x, r->in_zp, r->multiplier, r->shift, r->out_zp, y);
}

static int run_requantize(const rt_step *s, void *const *ptr) {
  int64_t n = s->model->values[s->node->outputs[0]].numel;
  return apply_rescale(s->state, n, ptr[s->node->inputs[0]], ptr[s->node->outputs[0]]);
}

int rt_prepare_mte_Requantize(rt_prep *p) {
  int st = rt_expect_arity(p, 5, 5, 1);
  if (!st) st = expect_int8(p, 0);
  if (!st) st = rt_expect_output_like(p, 0, 0);
  if (st) return st;
  rescale *r = rt_state_alloc(p, sizeof *r);
  if (!r) return MTE_ENOMEM;
  if ((st = rescale_params(p, r))) return st;
  p->step->state = r;
  p->step->run = run_requantize;
  p->step->kernel = r->identity ? "copy" : "requantize";
  return MTE_OK;
}

/* ---- QLinearAveragePool ---------------------------------------------------------------------- */

typedef struct qavg_state {
  mte_pool2d_params pool;
  rescale r;
} qavg_state;

static int run_qavg(const rt_step *s, void *const *ptr) {
  const qavg_state *q = s->state;
  const rt_value *x = &s->model->values[s->node->inputs[0]];
  const rt_value *y = &s->model->values[s->node->outputs[0]];
  int8_t *out = ptr[s->node->outputs[0]];
  int st = mte_qavg_pool2d(&q->pool, x->shape[0], x->shape[1], x->shape[2], x->shape[3],
                           ptr[s->node->inputs[0]], -128, 127, out);
  return st ? st : apply_rescale(&q->r, y->numel, out, out);
}

/* AveragePool's attributes (symmetric pads) and the output size (PyTorch's rule). */
static int pool_geometry(const rt_prep *p, const rt_value *x, mte_pool2d_params *g,
                         int64_t shape[4]) {
  static const int64_t ones[2] = {1, 1}, zeros[4] = {0, 0, 0, 0};
  const int64_t *ks, *strides, *pads;
  int64_t ceil_mode, cip;
  int st;
  if (!rt_node_attr(p->node, "kernel_shape"))
    return rt_node_fail(p, MTE_EFORMAT, "attribute \"kernel_shape\" is required");
  if ((st = rt_attr_ints(p, "kernel_shape", 2, NULL, &ks, NULL)) ||
      (st = rt_attr_ints(p, "strides", 2, ones, &strides, NULL)) ||
      (st = rt_attr_ints(p, "pads", 4, zeros, &pads, NULL)) ||
      (st = rt_attr_int(p, "ceil_mode", 0, &ceil_mode)) ||
      (st = rt_attr_int(p, "count_include_pad", 0, &cip)))
    return st;
  if (pads[0] != pads[2] || pads[1] != pads[3])
    return rt_node_fail(p, MTE_EFORMAT, "pooling takes symmetric pads only");
  *g = (mte_pool2d_params){ks[0], ks[1], strides[0], strides[1], pads[0], pads[1], 1, 1,
                           ceil_mode != 0, cip != 0, 0};
  shape[0] = x->shape[0], shape[1] = x->shape[1];
  for (int d = 0; d < 2; ++d) {
    int64_t k = ks[d], s = strides[d], pad = pads[d], size = x->shape[2 + d];
    if (k < 1 || s < 1 || pad < 0 || k > (1 << 20) || s > (1 << 20) || pad > (1 << 20))
      return rt_node_fail(p, MTE_EFORMAT, "kernel and strides must be in [1, 2^20], pads >= 0");
    int64_t span = size + 2 * pad - (k - 1) - 1, num = span + (ceil_mode ? s - 1 : 0);
    int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
    if (ceil_mode && (out - 1) * s >= size + pad) out -= 1;
    if (out < 1) return rt_node_fail(p, MTE_EFORMAT, "the window does not fit the input");
    shape[2 + d] = out;
  }
  if (ks[0] * ks[1] > (1 << 23))
    return rt_node_fail(p, MTE_EUNSUPPORTED, "a window of more than 2^23 elements");
  return MTE_OK;
}

int rt_prepare_mte_QLinearAveragePool(rt_prep *p) {
  int st = rt_expect_arity(p, 5, 5, 1);
  if (!st) st = expect_int8(p, 0);
  if (st) return st;
  const rt_value *x = rt_input(p, 0);
  if (x->ndim != 4) return rt_node_fail(p, MTE_EFORMAT, "takes 4-D X");
  qavg_state *q = rt_state_alloc(p, sizeof *q);
  if (!q) return MTE_ENOMEM;
  int64_t shape[4];
  if ((st = pool_geometry(p, x, &q->pool, shape)) ||
      (st = rt_expect_output(p, 0, MTE_DTYPE_INT8, 4, shape)) || (st = rescale_params(p, &q->r)))
    return st;
  p->step->state = q;
  p->step->run = run_qavg;
  p->step->kernel = "qavg_pool2d";
  return MTE_OK;
}

/* ---- QLinearGlobalAveragePool: _qgap in integers ------------------------------------------ */

typedef struct qgap_state {
  int64_t planes, count; /* N * C planes of H * W values */
  int32_t x_zp, y_zp, multiplier, shift;
} qgap_state;

/* numpy_int8._srdhm on int32 values (b >= 0, so no saturating case but a == b == INT32_MIN) */
static int64_t srdhm(int64_t a, int64_t b) {
  if (a == INT32_MIN && b == INT32_MIN) return INT32_MAX;
  int64_t ab = a * b, v = ab + (ab >= 0 ? (1 << 30) : 1 - (1 << 30));
  return v >= 0 ? v / ((int64_t)1 << 31) : -((-v) / ((int64_t)1 << 31));
}

/* numpy_int8._rdbpot: x / 2^e rounded half away from zero */
static int64_t rdbpot(int64_t x, int e) {
  int64_t mask = ((int64_t)1 << e) - 1, rem = x & mask, threshold = (mask >> 1) + (x < 0);
  return (x >> e) + (rem > threshold);
}

/* numpy_int8._mbqm: saturate32(x << left), srdhm, rdbpot (x: an int64 sum) */
static int64_t mbqm(int64_t x, int32_t multiplier, int32_t shift) {
  int left = shift > 0 ? shift : 0, right = shift < 0 ? -shift : 0;
  int64_t xs = x > (INT32_MAX >> left)   ? INT32_MAX
               : x < (INT32_MIN >> left) ? INT32_MIN
                                         : x * ((int64_t)1 << left);
  return rdbpot(srdhm(xs, multiplier), right);
}

static int run_qgap(const rt_step *s, void *const *ptr) {
  const qgap_state *q = s->state;
  const int8_t *x = ptr[s->node->inputs[0]];
  int8_t *y = ptr[s->node->outputs[0]];
  for (int64_t pl = 0; pl < q->planes; ++pl) {
    int64_t acc = 0;
    for (int64_t i = 0; i < q->count; ++i) acc += x[pl * q->count + i];
    acc -= (int64_t)q->x_zp * q->count;
    int64_t v = mbqm(acc, q->multiplier, q->shift) + q->y_zp;
    y[pl] = (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
  }
  return MTE_OK;
}

int rt_prepare_mte_QLinearGlobalAveragePool(rt_prep *p) {
  int st = rt_expect_arity(p, 5, 5, 1);
  if (!st) st = expect_int8(p, 0);
  if (st) return st;
  const rt_value *x = rt_input(p, 0);
  if (x->ndim != 4) return rt_node_fail(p, MTE_EFORMAT, "takes 4-D X");
  int64_t shape[4] = {x->shape[0], x->shape[1], 1, 1}, hw = x->shape[2] * x->shape[3];
  if ((st = rt_expect_output(p, 0, MTE_DTYPE_INT8, 4, shape))) return st;
  if (hw < 1) return rt_node_fail(p, MTE_EFORMAT, "X has no positions to average");
  qgap_state *q = rt_state_alloc(p, sizeof *q);
  if (!q) return MTE_ENOMEM;
  float xs = 0.0f, ys = 0.0f;
  if ((st = one_scale(p, 1, &xs)) || (st = one_scale(p, 3, &ys)) ||
      (st = one_zero_point(p, 2, &q->x_zp)) || (st = one_zero_point(p, 4, &q->y_zp)))
    return st;
  /* requant_multipliers(Xs, 1 / (H W), Ys): (Xs * (1 / (H W))) / Ys in float64 */
  double real = (double)xs * (1.0 / (double)hw) / (double)ys;
  if ((st = multiplier_of(p, real, &q->multiplier, &q->shift))) return st;
  q->planes = x->shape[0] * x->shape[1], q->count = hw;
  p->step->state = q;
  p->step->run = run_qgap;
  p->step->kernel = "qgap";
  return MTE_OK;
}

/* ---- FakeQuantize: fake_quantize_array in float32 ----------------------------------------- */

typedef struct fq_state {
  chan_layout l;
  float *scale, *inv, *zf; /* per channel: s, 1 / s (float32), the zero point as float32 */
  float qmin, qmax;
} fq_state;

/* (clamp(rint(x * (1/s)) + z, qmin, qmax) - z) * s, each step rounded to float32 */
static float fake_quantize_one(float x, float s, float inv, float zf, float qmin, float qmax) {
  float x_inv = x * inv;
  float q = rintf(x_inv) + zf;
  q = q < qmin ? qmin : q > qmax ? qmax : q; /* NaN stays NaN, as np.clip */
  return (q - zf) * s;
}

static int run_fake_quantize(const rt_step *s, void *const *ptr) {
  const fq_state *f = s->state;
  int is64 = s->model->values[s->node->inputs[0]].dtype == MTE_DTYPE_FLOAT64;
  const void *x = ptr[s->node->inputs[0]];
  void *y = ptr[s->node->outputs[0]]; /* may be x (in place): element i read, then written */
  int64_t i = 0;
  for (int64_t o = 0; o < f->l.outer; ++o)
    for (int64_t c = 0; c < f->l.channels; ++c)
      for (int64_t k = 0; k < f->l.inner; ++k, ++i) {
        float xf = is64 ? (float)((const double *)x)[i] : ((const float *)x)[i];
        float v = fake_quantize_one(xf, f->scale[c], f->inv[c], f->zf[c], f->qmin, f->qmax);
        if (is64)
          ((double *)y)[i] = (double)v;
        else
          ((float *)y)[i] = v;
      }
  return MTE_OK;
}

static int fq_channels(rt_prep *p, const rt_value *sv, const rt_value *zv, fq_state *f) {
  size_t n = (size_t)f->l.channels;
  f->scale = rt_state_alloc(p, n * sizeof(float));
  f->inv = rt_state_alloc(p, n * sizeof(float));
  f->zf = rt_state_alloc(p, n * sizeof(float));
  if (!f->scale || !f->inv || !f->zf) return MTE_ENOMEM;
  for (int64_t c = 0; c < f->l.channels; ++c) {
    int st = scale_at(p, sv, c, &f->scale[c]);
    if (st) return st;
    f->inv[c] = 1.0f / f->scale[c];
    int64_t k = zv->numel == 1 ? 0 : c;
    f->zf[c] = is_int_dtype(zv->dtype) ? (float)int_at(zv, k) : (float)real_at(zv, k);
  }
  return MTE_OK;
}

int rt_prepare_mte_FakeQuantize(rt_prep *p) {
  int st = rt_expect_arity(p, 3, 3, 1);
  if (st) return st;
  const rt_value *x = rt_input(p, 0), *sv = NULL, *zv = rt_input(p, 2);
  if (x->dtype != MTE_DTYPE_FLOAT32 && x->dtype != MTE_DTYPE_FLOAT64)
    return rt_node_fail(p, MTE_EUNSUPPORTED, "fake-quantizes float32 or float64, input is %s",
                        mte_dtype_name(x->dtype));
  int64_t lo = -128, hi = 127, axis = 0;
  if ((st = rt_attr_int(p, "quant_min", -128, &lo)) || (st = rt_attr_int(p, "quant_max", 127, &hi)))
    return st;
  if (!(-128 <= lo && lo < hi && hi <= 127))
    return rt_node_fail(p, MTE_EFORMAT, "quant_min %lld / quant_max %lld must lie in int8 with "
                        "quant_min < quant_max", (long long)lo, (long long)hi);
  if ((st = rt_expect_output_like(p, 0, 0)) || (st = rt_expect_const(p, 2)) ||
      (st = expect_scale_input(p, 1, rt_input(p, 1)->numel, &sv)))
    return st;
  if (!is_int_dtype(zv->dtype) && zv->dtype != MTE_DTYPE_FLOAT32 && zv->dtype != MTE_DTYPE_FLOAT64)
    return rt_node_fail(p, MTE_EFORMAT, "the zero point must be numbers, is %s",
                        mte_dtype_name(zv->dtype));
  fq_state *f = rt_state_alloc(p, sizeof *f);
  if (!f) return MTE_ENOMEM;
  int has_axis = rt_node_attr(p->node, "axis") != NULL;
  int64_t count = 1;
  if ((st = rt_attr_int(p, "axis", 0, &axis))) return st;
  if (!has_axis && (sv->numel != 1 || zv->numel != 1))
    return rt_node_fail(p, MTE_EFORMAT, "per-tensor (no axis) takes one scale and zero point");
  if ((st = param_count(p, sv, zv, &count)) || (st = layout_of(p, x, axis, count, &f->l)) ||
      (st = fq_channels(p, sv, zv, f)))
    return st;
  f->qmin = (float)lo, f->qmax = (float)hi;
  p->step->state = f;
  p->step->run = run_fake_quantize;
  p->step->kernel = "fake_quantize";
  return MTE_OK;
}
