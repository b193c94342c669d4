/*
 * ops_quant.c - the int8 conversions of the C runtime (graph/opset_quant.py): QuantizeLinear,
 * DequantizeLinear, mte.Requantize and mte.FakeQuantize, and the parameter readers every int8
 * op shares (ops_quant.h; the int8 layers are in ops_qlayers.c).
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

#include "ops_quant.h"

/* ---- reading constant parameters ------------------------------------------------------ */

int rt_q_is_int_dtype(mte_dtype d) {
  return d == MTE_DTYPE_INT8 || d == MTE_DTYPE_INT16 || d == MTE_DTYPE_INT32 ||
         d == MTE_DTYPE_INT64 || d == MTE_DTYPE_UINT8;
}

/* Element k of an integer constant. */
int64_t rt_q_int_at(const rt_value *v, int64_t k) {
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
double rt_q_real_at(const rt_value *v, int64_t k) {
  return v->dtype == MTE_DTYPE_FLOAT32 ? (double)((const float *)v->data)[k]
                                       : ((const double *)v->data)[k];
}

/* Constant input i (present), float32 or float64, with 1 or `n` elements (n <= 1: only 1). */
int rt_q_expect_scale_input(const rt_prep *p, int i, int64_t n, const rt_value **out) {
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
int rt_q_scale_at(const rt_prep *p, const rt_value *v, int64_t k, float *out) {
  float s = (float)rt_q_real_at(v, v->numel == 1 ? 0 : k);
  if (!(isfinite(s) && s > 0.0f))
    return rt_node_fail(p, MTE_EFORMAT, "scale \"%.200s\" must be positive and finite, got %g",
                        v->name, (double)s);
  *out = s;
  return MTE_OK;
}

/* One scale: input i with one element, validated. */
int rt_q_one_scale(const rt_prep *p, int i, float *out) {
  const rt_value *v = NULL;
  int st = rt_q_expect_scale_input(p, i, 1, &v);
  return st ? st : rt_q_scale_at(p, v, 0, out);
}

/* Python's zero_point(): a constant of one integer in [-128, 127]; 0 when left out. */
int rt_q_one_zero_point(const rt_prep *p, int i, int32_t *out) {
  const rt_value *v = rt_input(p, i);
  *out = 0;
  if (!v) return MTE_OK;
  int st = rt_expect_const(p, i);
  if (st) return st;
  if (!rt_q_is_int_dtype(v->dtype) || v->numel != 1)
    return rt_node_fail(p, MTE_EFORMAT, "zero point \"%.200s\" must be one integer, is %s "
                        "with %lld elements", v->name, mte_dtype_name(v->dtype),
                        (long long)v->numel);
  int64_t z = rt_q_int_at(v, 0);
  if (z < -128 || z > 127)
    return rt_node_fail(p, MTE_EFORMAT, "zero point %lld is outside int8's [-128, 127]",
                        (long long)z);
  *out = (int32_t)z;
  return MTE_OK;
}

/* act_min / act_max: -128 <= act_min <= act_max <= 127. */
int rt_q_act_range(const rt_prep *p, int32_t *lo, int32_t *hi) {
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
int rt_q_multiplier_of(const rt_prep *p, double real, int32_t *m, int32_t *shift) {
  if (mte_quantize_multiplier(real, m, shift) != MTE_OK)
    return rt_node_fail(p, MTE_EFORMAT, "the scale factor %g has no multiplier", real);
  return MTE_OK;
}

/* Input i is int8. */
int rt_q_expect_int8(const rt_prep *p, int i) { return rt_expect_dtype(p, i, MTE_DTYPE_INT8); }

/* A libmte failure in prepare: refused variant. */
int rt_q_libmte_fail(const rt_prep *p, int st, const char *what) {
  return rt_node_fail(p, st == MTE_ENOMEM ? MTE_ENOMEM : MTE_EUNSUPPORTED, "%s: %s", what,
                      mte_status_string(st));
}

/* Python's axis % ndim for the per-channel ops. */
int64_t rt_q_norm_axis(int64_t axis, int ndim) {
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
  int64_t a = rt_q_norm_axis(axis, x->ndim);
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
    int st = rt_q_scale_at(p, sv, c, &f);
    if (st) return st;
    double raw = rt_q_real_at(sv, sv->numel == 1 ? 0 : c);
    q->scales[c] = x->dtype == MTE_DTYPE_FLOAT32 ? (double)f : raw;
    q->zps[c] = zv ? (int32_t)rt_q_int_at(zv, zv->numel == 1 ? 0 : c) : 0;
  }
  return MTE_OK;
}

static int quantize_params(const rt_prep *p, const rt_value **sv, const rt_value **zv) {
  int st = rt_q_expect_scale_input(p, 1, rt_input(p, 1) ? rt_input(p, 1)->numel : 1, sv);
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
    st = rt_q_scale_at(p, sv, 0, &q->scale);
    return st ? st : rt_q_one_zero_point(p, 2, &q->zp);
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
  if (zv && !rt_q_is_int_dtype(zv->dtype))
    return rt_node_fail(p, MTE_EFORMAT, "the zero point must be integers, is %s",
                        mte_dtype_name(zv->dtype));
  d->scales = rt_state_alloc(p, (size_t)d->l.channels * sizeof *d->scales);
  d->zps = rt_state_alloc(p, (size_t)d->l.channels * sizeof *d->zps);
  if (!d->scales || !d->zps) return MTE_ENOMEM;
  for (int64_t c = 0; c < d->l.channels; ++c) {
    if ((st = rt_q_scale_at(p, sv, c, &d->scales[c]))) return st;
    d->zps[c] = zv ? rt_q_int_at(zv, zv->numel == 1 ? 0 : c) : 0;
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
    st = rt_q_scale_at(p, sv, 0, &d->scale);
    return st ? st : rt_q_one_zero_point(p, 2, &d->zp);
  }
  return dequantize_channels(p, x, sv, zv, d);
}

/* ---- Requantize and the rescale after pooling (_rescaled) ------------------------------------ */


/* _rescaled's parameters from inputs Xs, Xz, Ys, Yz at 1..4. */
int rt_q_rescale_params(const rt_prep *p, rescale *r) {
  float xs = 0.0f, ys = 0.0f;
  int st;
  if ((st = rt_q_one_scale(p, 1, &xs)) || (st = rt_q_one_scale(p, 3, &ys)) ||
      (st = rt_q_one_zero_point(p, 2, &r->in_zp)) || (st = rt_q_one_zero_point(p, 4, &r->out_zp)))
    return st;
  r->identity = xs == ys && r->in_zp == r->out_zp;
  return r->identity ? MTE_OK : rt_q_multiplier_of(p, (double)xs * 1.0 / (double)ys, &r->multiplier,
                                              &r->shift);
}

/* y = x in the new parameters; in place (y == x) is safe: element i is read before written */
int rt_q_apply_rescale(const rescale *r, int64_t n, const int8_t *x, int8_t *y) {
  if (r->identity) {
    if (x != y) memmove(y, x, (size_t)n);
    return MTE_OK;
  }
  return mte_requantize(n, x, r->in_zp, r->multiplier, r->shift, r->out_zp, y);
}

static int run_requantize(const rt_step *s, void *const *ptr) {
  int64_t n = s->model->values[s->node->outputs[0]].numel;
  return rt_q_apply_rescale(s->state, n, ptr[s->node->inputs[0]], ptr[s->node->outputs[0]]);
}

int rt_prepare_mte_Requantize(rt_prep *p) {
  int st = rt_expect_arity(p, 5, 5, 1);
  if (!st) st = rt_q_expect_int8(p, 0);
  if (!st) st = rt_expect_output_like(p, 0, 0);
  if (st) return st;
  rescale *r = rt_state_alloc(p, sizeof *r);
  if (!r) return MTE_ENOMEM;
  if ((st = rt_q_rescale_params(p, r))) return st;
  p->step->state = r;
  p->step->run = run_requantize;
  p->step->kernel = r->identity ? "copy" : "requantize";
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
    int st = rt_q_scale_at(p, sv, c, &f->scale[c]);
    if (st) return st;
    f->inv[c] = 1.0f / f->scale[c];
    int64_t k = zv->numel == 1 ? 0 : c;
    f->zf[c] = rt_q_is_int_dtype(zv->dtype) ? (float)rt_q_int_at(zv, k) : (float)rt_q_real_at(zv, k);
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
      (st = rt_q_expect_scale_input(p, 1, rt_input(p, 1)->numel, &sv)))
    return st;
  if (!rt_q_is_int_dtype(zv->dtype) && zv->dtype != MTE_DTYPE_FLOAT32 && zv->dtype != MTE_DTYPE_FLOAT64)
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
