/*
 * ops_qlayers.c - the int8 layers of the C runtime (graph/opset_quant.py): mte.QLinearConv and
 * mte.QLinearGemm on weights prepared once (mte_qconv2d_prepare, the requantisation bound
 * to the plan once too: mte_qconv2d_bind; at a few rows
 * mte_qgemv_prepare, which also folds the bias and requantisation in), mte.QLinearAdd (its
 * parameters and lookup table made once, mte_qadd_run), mte.QLinearAveragePool and
 * mte.QLinearGlobalAveragePool. Their multipliers come from the constant scales as in Python
 * (ops_quant.h), so results equal the Python executor's.
 */
#include <math.h>
#include <string.h>

#include "ops_quant.h"

/* ---- QLinearConv / QLinearGemm ------------------------------------------------------------- */

typedef struct qlayer_state {
  mte_qconv2d_plan *plan; /* released with the model */
  mte_qgemv_plan *gemv;   /* QLinearGemm at rows <= GEMV_ROWS, instead of plan */
  mte_conv2d_desc desc;   /* QLinearConv */
  int64_t rows, k, m;     /* QLinearGemm: (rows, k) x (m, k)^T */
  int32_t x_zp;
  const int32_t *bias;    /* the constant's data, or NULL */
  mte_requant rq;         /* multiplier / shift: one per output channel */
} qlayer_state;

static void release_qlayer(void *state) {
  mte_qconv2d_free(((qlayer_state *)state)->plan);
  mte_qgemv_free(((qlayer_state *)state)->gemv);
}

/* rows up to which QLinearGemm is matrix-vector products (the weights stream once per row) */
#define GEMV_ROWS 4

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
    if (!is_real && !rt_q_is_int_dtype(wz->dtype))
      return rt_node_fail(p, MTE_EFORMAT, "the weight zero point must be numbers");
    for (int64_t k = 0; k < wz->numel; ++k)
      if (is_real ? rt_q_real_at(wz, k) != 0.0 : rt_q_int_at(wz, k) != 0)
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
  if ((st = rt_q_one_scale(p, 1, &xs)) || (st = rt_q_one_scale(p, 6, &ys)) ||
      (st = rt_q_expect_scale_input(p, 4, o, &ws)) || (st = rt_q_one_zero_point(p, 2, &s->x_zp)) ||
      (st = rt_q_one_zero_point(p, 7, &s->rq.zero_point)) ||
      (st = rt_q_act_range(p, &s->rq.act_min, &s->rq.act_max)))
    return st;
  int32_t *mult = rt_state_alloc(p, (size_t)o * sizeof *mult);
  int32_t *shift = rt_state_alloc(p, (size_t)o * sizeof *shift);
  if (!mult || !shift) return MTE_ENOMEM;
  for (int64_t c = 0; c < o; ++c) { /* in_scale * w_scale[o] / out_scale, in float64 */
    float wsc = 0.0f;
    if ((st = rt_q_scale_at(p, ws, c, &wsc))) return st;
    double real = (double)xs * (double)wsc / (double)ys;
    if ((st = rt_q_multiplier_of(p, real, &mult[c], &shift[c]))) return st;
  }
  s->rq.multiplier = mult, s->rq.shift = shift;
  return MTE_OK;
}

static int run_qconv(const rt_step *s, void *const *ptr) {
  const qlayer_state *q = s->state;
  return mte_qconv2d_run_bound(q->plan, ptr[s->node->inputs[0]], ptr[s->node->outputs[0]], NULL);
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
  if (!st) st = rt_q_expect_int8(p, 0);
  if (!st) st = rt_q_expect_int8(p, 3);
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
    return rt_q_libmte_fail(p, st, "mte_qconv2d_prepare");
  p->step->state = s;
  p->step->release = release_qlayer;
  if ((st = mte_qconv2d_bind(s->plan, &s->desc, s->x_zp, s->bias, &s->rq)) != MTE_OK)
    return rt_q_libmte_fail(p, st, "mte_qconv2d_bind");
  p->step->run = run_qconv;
  p->step->kernel = "qconv2d";
  return MTE_OK;
}

static int run_qgemm(const rt_step *s, void *const *ptr) {
  const qlayer_state *q = s->state;
  if (q->gemv)
    return mte_qgemv_run(q->gemv, q->rows, ptr[s->node->inputs[0]], ptr[s->node->outputs[0]]);
  return mte_qlinear(q->rows, q->k, q->m, ptr[s->node->inputs[0]], q->x_zp, ptr[s->node->inputs[3]],
                     q->plan, q->bias, &q->rq, ptr[s->node->outputs[0]], NULL);
}

int rt_prepare_mte_QLinearGemm(rt_prep *p) {
  int st = rt_expect_arity(p, 8, 9, 1);
  if (!st) st = rt_q_expect_int8(p, 0);
  if (!st) st = rt_q_expect_int8(p, 3);
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
  p->step->state = s;
  p->step->release = release_qlayer;
  p->step->run = run_qgemm;
  p->step->kernel = "qlinear";
  if (s->m * s->k > 0 && s->rows <= GEMV_ROWS) {
    if ((st = mte_qgemv_prepare(s->m, s->k, w->data, s->x_zp, s->bias, &s->rq, &s->gemv)))
      return rt_q_libmte_fail(p, st, "mte_qgemv_prepare");
    p->step->kernel = "qgemv";
    return MTE_OK;
  }
  if (s->m * s->k > 0 && (st = mte_qlinear_prepare(s->m, s->k, w->data, &s->plan)) != MTE_OK)
    return rt_q_libmte_fail(p, st, "mte_qlinear_prepare");
  return MTE_OK;
}

/* ---- QLinearAdd ------------------------------------------------------------------------------ */

/* The add's parameters and its 65,536 possible results, evaluated once at load
 * (mte_qadd_table): a run is the ISA's vector arithmetic where it has one, else one lookup
 * per element (mte_qadd_run), bit-equal to the arithmetic either way. */
typedef struct qadd_state {
  mte_qadd_params params;
  int8_t *table;
} qadd_state;

static int run_qadd(const rt_step *s, void *const *ptr) {
  const qadd_state *q = s->state;
  int64_t n = s->model->values[s->node->outputs[0]].numel;
  return mte_qadd_run(&q->params, q->table, n, ptr[s->node->inputs[0]], ptr[s->node->inputs[3]],
                      ptr[s->node->outputs[0]]);
}

int rt_prepare_mte_QLinearAdd(rt_prep *p) {
  int st = rt_expect_arity(p, 8, 8, 1);
  if (!st) st = rt_q_expect_int8(p, 0);
  if (!st) st = rt_q_expect_int8(p, 3);
  if (st) return st;
  const rt_value *a = rt_input(p, 0), *b = rt_input(p, 3);
  if (a->ndim != b->ndim || memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof *a->shape))
    return rt_node_fail(p, MTE_EFORMAT, "A and B must have one shape (no broadcasting)");
  qadd_state *state = rt_state_alloc(p, sizeof *state);
  if (!state) return MTE_ENOMEM;
  mte_qadd_params *q = &state->params;
  float as = 0.0f, bs = 0.0f, ys = 0.0f;
  if ((st = rt_q_one_scale(p, 1, &as)) || (st = rt_q_one_scale(p, 4, &bs)) || (st = rt_q_one_scale(p, 6, &ys)) ||
      (st = rt_q_one_zero_point(p, 2, &q->a_zero_point)) ||
      (st = rt_q_one_zero_point(p, 5, &q->b_zero_point)) ||
      (st = rt_q_one_zero_point(p, 7, &q->y_zero_point)) ||
      (st = rt_q_act_range(p, &q->act_min, &q->act_max)))
    return st;
  /* add_multipliers: the common scale twice_max / 2^20 */
  q->left_shift = 20;
  double twice_max = 2.0 * fmax((double)as, (double)bs);
  if ((st = rt_q_multiplier_of(p, (double)as / twice_max, &q->a_multiplier, &q->a_shift)) ||
      (st = rt_q_multiplier_of(p, (double)bs / twice_max, &q->b_multiplier, &q->b_shift)) ||
      (st = rt_q_multiplier_of(p, twice_max / ((double)(1 << 20) * (double)ys), &q->y_multiplier,
                          &q->y_shift)))
    return st;
  if ((st = rt_expect_output_like(p, 0, 0))) return st;
  int8_t *table = rt_state_alloc_aligned(p, 65536);
  if (!table) return MTE_ENOMEM;
  if ((st = mte_qadd_table(q, table)))
    return rt_node_fail(p, st, "the add's parameters are out of range");
  state->table = table;
  p->step->state = state;
  p->step->run = run_qadd;
  p->step->kernel = "qadd";
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
  return st ? st : rt_q_apply_rescale(&q->r, y->numel, out, out);
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
  if (!st) st = rt_q_expect_int8(p, 0);
  if (st) return st;
  const rt_value *x = rt_input(p, 0);
  if (x->ndim != 4) return rt_node_fail(p, MTE_EFORMAT, "takes 4-D X");
  qavg_state *q = rt_state_alloc(p, sizeof *q);
  if (!q) return MTE_ENOMEM;
  int64_t shape[4];
  if ((st = pool_geometry(p, x, &q->pool, shape)) ||
      (st = rt_expect_output(p, 0, MTE_DTYPE_INT8, 4, shape)) || (st = rt_q_rescale_params(p, &q->r)))
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
  if (!st) st = rt_q_expect_int8(p, 0);
  if (st) return st;
  const rt_value *x = rt_input(p, 0);
  if (x->ndim != 4) return rt_node_fail(p, MTE_EFORMAT, "takes 4-D X");
  int64_t shape[4] = {x->shape[0], x->shape[1], 1, 1}, hw = x->shape[2] * x->shape[3];
  if ((st = rt_expect_output(p, 0, MTE_DTYPE_INT8, 4, shape))) return st;
  if (hw < 1) return rt_node_fail(p, MTE_EFORMAT, "X has no positions to average");
  qgap_state *q = rt_state_alloc(p, sizeof *q);
  if (!q) return MTE_ENOMEM;
  float xs = 0.0f, ys = 0.0f;
  if ((st = rt_q_one_scale(p, 1, &xs)) || (st = rt_q_one_scale(p, 3, &ys)) ||
      (st = rt_q_one_zero_point(p, 2, &q->x_zp)) || (st = rt_q_one_zero_point(p, 4, &q->y_zp)))
    return st;
  /* requant_multipliers(Xs, 1 / (H W), Ys): (Xs * (1 / (H W))) / Ys in float64 */
  double real = (double)xs * (1.0 / (double)hw) / (double)ys;
  if ((st = rt_q_multiplier_of(p, real, &q->multiplier, &q->shift))) return st;
  q->planes = x->shape[0] * x->shape[1], q->count = hw;
  p->step->state = q;
  p->step->run = run_qgap;
  p->step->kernel = "qgap";
  return MTE_OK;
}
