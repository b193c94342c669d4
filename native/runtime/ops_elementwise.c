/*
 * ops_elementwise.c - the elementwise ops of the C runtime (graph/opset_tensor.py): unary math
 * and activations, binary arithmetic and comparisons with numpy broadcasting, the logic ops,
 * Where and Clip. (Cast is in ops_cast.c.)
 *
 * The idea: prepare turns a node into a broadcast plan (the output shape collapsed to as few
 * dims as possible, and each input's element strides over it, 0 along a broadcast dim); run
 * walks the output row by row (its innermost dim) and hands each row to a typed row kernel
 * whose input strides are 0 (a broadcast element) or 1. Equal shapes collapse to one row and
 * a scalar operand is a stride-0 row, so those are the fast paths. A row kernel computes y[i]
 * from the inputs at i only, so an output placed over an input (in place) is safe.
 * Float arithmetic is float32 (float64) as numpy does it; integers wrap as numpy's do.
 */
#include <math.h>
#include <string.h>

#include "kernels.h"
#include "mte_transformer.h"

#define MAXD MTE_MODEL_MAX_NDIM
#define MAXIN 3
#define NDT 10 /* mte_dtype values, INVALID included */

typedef void (*row_fn)(int64_t n, const void *const *in, const int64_t *stride, void *y,
                       const float *prm);

typedef struct ew_plan {
  row_fn row;
  int nin, ndim;
  int32_t value[MAXIN]; /* the inputs' value indices (-1: left out) */
  size_t esize[MAXIN], osize;
  int64_t numel;
  int64_t shape[MAXD];
  int64_t stride[MAXIN][MAXD]; /* elements */
  float prm[4];                /* alpha, beta, ... */
} ew_plan;

/* ---- the plan and its run ---------------------------------------------------------------- */

static int run_plan(const rt_step *s, void *const *ptr) {
  const ew_plan *pl = s->state;
  if (!pl->numel) return MTE_OK;
  const char *in[MAXIN] = {0};
  for (int k = 0; k < pl->nin; ++k) in[k] = pl->value[k] >= 0 ? ptr[pl->value[k]] : NULL;
  char *y = ptr[s->node->outputs[0]];
  int last = pl->ndim - 1;
  int64_t len = pl->shape[last], rows = pl->numel / len;
  int64_t idx[MAXD], off[MAXIN] = {0}, inner[MAXIN] = {0};
  memset(idx, 0, sizeof(int64_t) * (size_t)pl->ndim);
  for (int k = 0; k < pl->nin; ++k) inner[k] = pl->stride[k][last];
  for (int64_t r = 0; r < rows; ++r) {
    const void *row_in[MAXIN] = {0};
    for (int k = 0; k < pl->nin; ++k)
      row_in[k] = in[k] ? in[k] + off[k] * (int64_t)pl->esize[k] : NULL;
    pl->row(len, row_in, inner, y + r * len * (int64_t)pl->osize, pl->prm);
    for (int d = last - 1; d >= 0; --d) { /* the next row: a counter over the outer dims */
      for (int k = 0; k < pl->nin; ++k) off[k] += pl->stride[k][d];
      if (++idx[d] < pl->shape[d]) break;
      for (int k = 0; k < pl->nin; ++k) off[k] -= pl->stride[k][d] * pl->shape[d];
      idx[d] = 0;
    }
  }
  return MTE_OK;
}

/* numpy's broadcast of the present inputs into shape/ndim; MTE_EFORMAT if they do not fit. */
static int broadcast_shape(const rt_prep *p, int nin, int64_t *shape, int *ndim) {
  *ndim = 0;
  for (int k = 0; k < nin; ++k)
    if (rt_input(p, k) && rt_input(p, k)->ndim > *ndim) *ndim = rt_input(p, k)->ndim;
  for (int d = 0; d < *ndim; ++d) shape[d] = 1;
  for (int k = 0; k < nin; ++k) {
    const rt_value *v = rt_input(p, k);
    for (int d = 0; v && d < v->ndim; ++d) {
      int64_t have = v->shape[d], *out = &shape[*ndim - v->ndim + d];
      if (have == 1 || have == *out) continue;
      if (*out != 1)
        return rt_node_fail(p, MTE_EFORMAT, "input %d (\"%.200s\") does not broadcast: dim %d "
                            "is %lld, the others give %lld", k, v->name, d, (long long)have,
                            (long long)*out);
      *out = have;
    }
  }
  return MTE_OK;
}

/* Drops size-1 dims and merges dims that are contiguous for every input. */
static void collapse(ew_plan *pl) {
  int nd = 0;
  for (int d = 0; d < pl->ndim; ++d) {
    if (pl->shape[d] == 1) continue;
    int merge = nd > 0;
    for (int k = 0; k < pl->nin && merge; ++k)
      merge = pl->stride[k][nd - 1] == pl->stride[k][d] * pl->shape[d];
    if (merge) {
      pl->shape[nd - 1] *= pl->shape[d];
      for (int k = 0; k < pl->nin; ++k) pl->stride[k][nd - 1] = pl->stride[k][d];
      continue;
    }
    pl->shape[nd] = pl->shape[d];
    for (int k = 0; k < pl->nin; ++k) pl->stride[k][nd] = pl->stride[k][d];
    ++nd;
  }
  if (nd == 0) {
    pl->shape[0] = 1;
    for (int k = 0; k < pl->nin; ++k) pl->stride[k][0] = 0;
    nd = 1;
  }
  pl->ndim = nd;
}

/* The plan of output 0 over the node's first nin inputs (broadcast), its dtype `out_dtype`
 * checked against the declaration; *plan NULL on failure. */
static int make_plan(rt_prep *p, int nin, mte_dtype out_dtype, row_fn row, ew_plan **plan) {
  int64_t shape[MAXD];
  int ndim, st = broadcast_shape(p, nin, shape, &ndim);
  if (!st) st = rt_expect_output(p, 0, out_dtype, ndim, shape);
  if (st) return st;
  ew_plan *pl = rt_state_alloc(p, sizeof *pl);
  if (!pl) return MTE_ENOMEM;
  pl->row = row;
  pl->nin = nin;
  pl->ndim = ndim;
  pl->osize = mte_dtype_size(out_dtype);
  pl->numel = rt_output(p, 0)->numel;
  memcpy(pl->shape, shape, sizeof(int64_t) * (size_t)ndim);
  for (int k = 0; k < nin; ++k) {
    const rt_value *v = rt_input(p, k);
    pl->value[k] = v ? p->node->inputs[k] : -1;
    pl->esize[k] = v ? mte_dtype_size(v->dtype) : 0;
    int64_t step = 1;
    for (int d = ndim - 1; d >= 0; --d) {
      int vd = v ? d - (ndim - v->ndim) : -1;
      int64_t dim = vd >= 0 ? v->shape[vd] : 1;
      pl->stride[k][d] = dim == 1 ? 0 : step;
      step *= dim;
    }
  }
  collapse(pl);
  p->step->state = pl;
  p->step->run = run_plan;
  p->step->kernel = "elementwise";
  *plan = pl;
  return MTE_OK;
}

static int unsupported_dtype(const rt_prep *p, int i) {
  const rt_value *v = rt_input(p, i);
  return rt_node_fail(p, MTE_EUNSUPPORTED, "no C kernel for input %d (\"%.200s\") of dtype %s",
                      i, v->name, mte_dtype_name(v->dtype));
}

/* Inputs 0..nin-1 (the present ones) all have input 0's dtype (else unsupported: numpy would
 * promote them). */
static int same_dtypes(const rt_prep *p, int from, int nin) {
  for (int k = from + 1; k < nin; ++k)
    if (rt_input(p, k) && rt_input(p, k)->dtype != rt_input(p, from)->dtype)
      return rt_node_fail(p, MTE_EUNSUPPORTED, "inputs %d (%s) and %d (%s) differ in dtype: no C "
                          "kernel for numpy's promotion", from,
                          mte_dtype_name(rt_input(p, from)->dtype), k,
                          mte_dtype_name(rt_input(p, k)->dtype));
  return MTE_OK;
}

/* ---- row kernels -------------------------------------------------------------------------- */

/* the dtype lists: suffix, C type, table index */
#define FLOATS(X, ...) \
  X(f32, float, MTE_DTYPE_FLOAT32, __VA_ARGS__) X(f64, double, MTE_DTYPE_FLOAT64, __VA_ARGS__)
#define SINTS(X, ...)                                                                      \
  X(i8, int8_t, MTE_DTYPE_INT8, __VA_ARGS__) X(i16, int16_t, MTE_DTYPE_INT16, __VA_ARGS__) \
  X(i32, int32_t, MTE_DTYPE_INT32, __VA_ARGS__) X(i64, int64_t, MTE_DTYPE_INT64, __VA_ARGS__)
#define INTS(X, ...) SINTS(X, __VA_ARGS__) X(u8, uint8_t, MTE_DTYPE_UINT8, __VA_ARGS__)
#define BOOLS(X, ...) X(b8, uint8_t, MTE_DTYPE_BOOL, __VA_ARGS__)
#define ENTRY(S, T, DT, NAME) [DT] = NAME##_##S,

/* numpy's maximum / minimum: a NaN in either operand wins */
#define FMAX(a, b) (((a) >= (b) || (a) != (a)) ? (a) : (b))
#define FMIN(a, b) (((a) <= (b) || (a) != (a)) ? (a) : (b))
#define IMAX(a, b) ((a) >= (b) ? (a) : (b))
#define IMIN(a, b) ((a) <= (b) ? (a) : (b))
/* integer + - * wrap (through uint64_t: no signed overflow) */
#define WRAP(op) ((out_t)((uint64_t)x op (uint64_t)z))

/* y = EXPR(x, z) over a row; x from in[0], z from in[1], strides 0 or 1 */
#define ROW2(NAME, TA, TY, EXPR)                                                       \
  static void NAME(int64_t n, const void *const *in, const int64_t *st, void *yp,       \
                   const float *prm) {                                                  \
    typedef TY out_t;                                                                   \
    const TA *a = in[0], *b = in[1];                                                    \
    out_t *y = yp;                                                                      \
    (void)prm;                                                                          \
    if (st[0] && st[1]) {                                                               \
      for (int64_t i = 0; i < n; ++i) { TA x = a[i], z = b[i]; y[i] = (out_t)(EXPR); }  \
    } else if (st[1]) {                                                                 \
      TA x = a[0];                                                                      \
      for (int64_t i = 0; i < n; ++i) { TA z = b[i]; y[i] = (out_t)(EXPR); }            \
    } else if (st[0]) {                                                                 \
      TA z = b[0];                                                                      \
      for (int64_t i = 0; i < n; ++i) { TA x = a[i]; y[i] = (out_t)(EXPR); }            \
    } else {                                                                            \
      TA x = a[0], z = b[0];                                                            \
      out_t v = (out_t)(EXPR);                                                          \
      for (int64_t i = 0; i < n; ++i) y[i] = v;                                         \
    }                                                                                   \
  }
/* y = EXPR(x) over a row (input stride 1: a unary op's input has the output's shape) */
#define ROW1(NAME, TA, TY, EXPR)                                                 \
  static void NAME(int64_t n, const void *const *in, const int64_t *st, void *yp, \
                   const float *prm) {                                            \
    typedef TY out_t;                                                             \
    const TA *a = in[0];                                                          \
    out_t *y = yp;                                                                \
    (void)prm;                                                                    \
    (void)st;                                                                     \
    for (int64_t i = 0; i < n; ++i) {                                             \
      TA x = a[i];                                                                \
      y[i] = (out_t)(EXPR);                                                       \
    }                                                                             \
  }

#define SAME2(S, T, DT, NAME, EXPR) ROW2(NAME##_##S, T, T, EXPR)
#define BOOL2(S, T, DT, NAME, EXPR) ROW2(NAME##_##S, T, uint8_t, EXPR)
#define SAME1(S, T, DT, NAME, EXPR) ROW1(NAME##_##S, T, T, EXPR)

/* binary arithmetic */
FLOATS(SAME2, add, x + z)
INTS(SAME2, add, WRAP(+))
FLOATS(SAME2, sub, x - z)
INTS(SAME2, sub, WRAP(-))
FLOATS(SAME2, mul, x * z)
INTS(SAME2, mul, WRAP(*))
FLOATS(SAME2, max, FMAX(x, z))
INTS(SAME2, max, IMAX(x, z))
FLOATS(SAME2, min, FMIN(x, z))
INTS(SAME2, min, IMIN(x, z))
FLOATS(SAME2, div, x / z)

/* integer Div as Python: trunc(float64(a) / float64(b)), converted without C's UB */
static int64_t trunc_div(int64_t a, int64_t b) {
  double q = trunc((double)a / (double)b);
  if (q != q) return INT64_MIN;
  if (q >= 9223372036854775807.0) return INT64_MAX;
  if (q <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)q;
}
INTS(SAME2, div, trunc_div(x, z))

static const row_fn ADD[NDT] = {FLOATS(ENTRY, add) INTS(ENTRY, add)};
static const row_fn SUB[NDT] = {FLOATS(ENTRY, sub) INTS(ENTRY, sub)};
static const row_fn MUL[NDT] = {FLOATS(ENTRY, mul) INTS(ENTRY, mul)};
static const row_fn MAX[NDT] = {FLOATS(ENTRY, max) INTS(ENTRY, max)};
static const row_fn MIN[NDT] = {FLOATS(ENTRY, min) INTS(ENTRY, min)};
static const row_fn DIV[NDT] = {FLOATS(ENTRY, div) INTS(ENTRY, div)};

/* Pow: float32 ** float32 (numpy's powf) */
ROW2(pow_f32, float, float, powf(x, z))

/* comparisons (bool outputs) */
#define COMPARE(NAME, EXPR) \
  FLOATS(BOOL2, NAME, EXPR) INTS(BOOL2, NAME, EXPR) BOOLS(BOOL2, NAME, EXPR)
COMPARE(eq, x == z)
COMPARE(lt, x < z)
COMPARE(gt, x > z)
COMPARE(le, x <= z)
COMPARE(ge, x >= z)
#define CMP_TABLE(NAME) {FLOATS(ENTRY, NAME) INTS(ENTRY, NAME) BOOLS(ENTRY, NAME)}
static const row_fn EQ[NDT] = CMP_TABLE(eq), LT[NDT] = CMP_TABLE(lt), GT[NDT] = CMP_TABLE(gt),
                    LE[NDT] = CMP_TABLE(le), GE[NDT] = CMP_TABLE(ge);

/* logic on bools (bytes 0 / 1) */
ROW2(and_b8, uint8_t, uint8_t, x & z)
ROW2(or_b8, uint8_t, uint8_t, x | z)
ROW2(xor_b8, uint8_t, uint8_t, x ^ z)
ROW1(not_b8, uint8_t, uint8_t, !x)

/* unary math: float32 through libm's float functions, float64 through the double ones */
#define UNARY_F(NAME, E32, E64) \
  ROW1(NAME##_f32, float, float, E32) ROW1(NAME##_f64, double, double, E64)
UNARY_F(exp, expf(x), exp(x))
UNARY_F(log, logf(x), log(x))
UNARY_F(sqrt, sqrtf(x), sqrt(x))
UNARY_F(recip, 1.0f / x, 1.0 / x)
UNARY_F(tanh, tanhf(x), tanh(x))
UNARY_F(sin, sinf(x), sin(x))
UNARY_F(cos, cosf(x), cos(x))
UNARY_F(floor, floorf(x), floor(x))
UNARY_F(ceil, ceilf(x), ceil(x))
UNARY_F(erf, erff(x), erf(x))
FLOATS(SAME1, neg, -x)
INTS(SAME1, neg, (out_t)(0u - (uint64_t)x))
FLOATS(SAME1, abs, x < 0 ? -x : (x == 0 ? (out_t)0 : x))
SINTS(SAME1, abs, x < 0 ? (out_t)(0u - (uint64_t)x) : x)
ROW1(abs_u8, uint8_t, uint8_t, x)
FLOATS(SAME1, relu, FMAX(x, (out_t)0))
SINTS(SAME1, relu, IMAX(x, 0))
ROW1(relu_u8, uint8_t, uint8_t, x)
#define F_TABLE(NAME) {FLOATS(ENTRY, NAME)}
static const row_fn EXP[NDT] = F_TABLE(exp), LOG[NDT] = F_TABLE(log), SQRT[NDT] = F_TABLE(sqrt),
                    RECIP[NDT] = F_TABLE(recip), TANH[NDT] = F_TABLE(tanh),
                    SIN[NDT] = F_TABLE(sin), COS[NDT] = F_TABLE(cos),
                    FLOOR[NDT] = F_TABLE(floor), CEIL[NDT] = F_TABLE(ceil),
                    ERF[NDT] = F_TABLE(erf);
static const row_fn NEG[NDT] = {FLOATS(ENTRY, neg) INTS(ENTRY, neg)};
static const row_fn ABS[NDT] = {FLOATS(ENTRY, abs) INTS(ENTRY, abs)};
static const row_fn RELU[NDT] = {FLOATS(ENTRY, relu) INTS(ENTRY, relu)};

/* activations (float32, as opset_tensor.py computes them) */
static float sigmoidf(float x) {
  float e = expf(-fabsf(x));
  return x >= 0 ? 1.0f / (1.0f + e) : e / (1.0f + e);
}
static float clip01(float v) { /* np.clip(v, 0, 1) */
  if (v != v) return v;
  v = v > 0.0f ? v : 0.0f;
  return v < 1.0f ? v : 1.0f;
}
static float softplusf(float x) { /* np.logaddexp(x, 0) */
  if (x == 0.0f) return x + 0.693147180559945309f;
  if (x > 0.0f) return x + log1pf(expf(-x));
  if (x <= 0.0f) return log1pf(expf(x));
  return x;
}
ROW1(sigmoid_f32, float, float, sigmoidf(x))
ROW1(silu_f32, float, float, x * sigmoidf(x))
ROW1(leaky_f32, float, float, x >= 0 ? x : x * prm[0])
ROW1(hsig_f32, float, float, clip01(x * prm[0] + prm[1]))
ROW1(hswish_f32, float, float, x * clip01(x / 6.0f + 0.5f))
ROW1(softplus_f32, float, float, softplusf(x))
ROW1(elu_f32, float, float, x > 0 ? x : prm[0] * expm1f(FMIN(x, 0.0f)))

/* Clip(x, lo, hi): lo, hi optional (NULL), broadcast to x */
#define CLIP_ROW(S, T, DT, MAXF, MINF)                                                 \
  static void clip_##S(int64_t n, const void *const *in, const int64_t *st, void *yp,   \
                       const float *prm) {                                              \
    const T *x = in[0], *lo = in[1], *hi = in[2];                                       \
    T *y = yp;                                                                          \
    (void)prm;                                                                          \
    for (int64_t i = 0; i < n; ++i) {                                                   \
      T v = x[i];                                                                       \
      if (lo) v = MAXF(v, lo[i * st[1]]);                                               \
      if (hi) v = MINF(v, hi[i * st[2]]);                                               \
      y[i] = v;                                                                         \
    }                                                                                   \
  }
FLOATS(CLIP_ROW, FMAX, FMIN)
INTS(CLIP_ROW, IMAX, IMIN)
static const row_fn CLIP[NDT] = {FLOATS(ENTRY, clip) INTS(ENTRY, clip)};

/* Where(cond, a, b): elements moved by size */
#define WHERE_ROW(T)                                                                   \
  static void where_##T(int64_t n, const void *const *in, const int64_t *st, void *yp, \
                        const float *prm) {                                            \
    const uint8_t *c = in[0];                                                          \
    const T *a = in[1], *b = in[2];                                                    \
    T *y = yp;                                                                         \
    (void)prm;                                                                         \
    for (int64_t i = 0; i < n; ++i) y[i] = c[i * st[0]] ? a[i * st[1]] : b[i * st[2]]; \
  }
WHERE_ROW(uint8_t)
WHERE_ROW(uint16_t)
WHERE_ROW(uint32_t)
WHERE_ROW(uint64_t)

/* ---- prepare: the shared shapes of these ops ------------------------------------------------ */

static int kernel_for(const rt_prep *p, const row_fn *table, int i, row_fn *row) {
  mte_dtype dt = rt_input(p, i)->dtype;
  *row = dt > 0 && dt < NDT ? table[dt] : NULL;
  return *row ? MTE_OK : unsupported_dtype(p, i);
}

/* y = f(a, b): broadcasting, output in the inputs' dtype (or bool: `to_bool`) */
static int prepare_binary(rt_prep *p, const row_fn *table, int to_bool) {
  row_fn row;
  ew_plan *pl;
  int st = rt_expect_arity(p, 2, 2, 1);
  if (!st) st = same_dtypes(p, 0, 2);
  if (!st) st = kernel_for(p, table, 0, &row);
  if (st) return st;
  return make_plan(p, 2, to_bool ? MTE_DTYPE_BOOL : rt_input(p, 0)->dtype, row, &pl);
}

/* y = f(x), same shape and dtype; prm (n floats) copied into the plan */
static int prepare_unary(rt_prep *p, const row_fn *table, const float *prm, int n) {
  row_fn row;
  ew_plan *pl;
  int st = rt_expect_arity(p, 1, 1, 1);
  if (!st) st = kernel_for(p, table, 0, &row);
  if (!st) st = make_plan(p, 1, rt_input(p, 0)->dtype, row, &pl);
  if (st) return st;
  for (int i = 0; i < n; ++i) pl->prm[i] = prm[i];
  return MTE_OK;
}

static int prepare_f32(rt_prep *p, row_fn row, const float *prm, int n) {
  row_fn table[NDT] = {0};
  table[MTE_DTYPE_FLOAT32] = row;
  return prepare_unary(p, table, prm, n);
}

/* a float attribute, rounded to float32 as numpy's x.dtype.type(attr) */
static int attr_f32(const rt_prep *p, const char *name, double dflt, float *out) {
  double v;
  int st = rt_attr_float(p, name, dflt, &v);
  *out = (float)v;
  return st;
}

int rt_prepare_Add(rt_prep *p) { return prepare_binary(p, ADD, 0); }
int rt_prepare_Sub(rt_prep *p) { return prepare_binary(p, SUB, 0); }
int rt_prepare_Mul(rt_prep *p) { return prepare_binary(p, MUL, 0); }
int rt_prepare_Div(rt_prep *p) { return prepare_binary(p, DIV, 0); }
int rt_prepare_Max(rt_prep *p) { return prepare_binary(p, MAX, 0); }
int rt_prepare_Min(rt_prep *p) { return prepare_binary(p, MIN, 0); }
int rt_prepare_Equal(rt_prep *p) { return prepare_binary(p, EQ, 1); }
int rt_prepare_Less(rt_prep *p) { return prepare_binary(p, LT, 1); }
int rt_prepare_Greater(rt_prep *p) { return prepare_binary(p, GT, 1); }
int rt_prepare_LessOrEqual(rt_prep *p) { return prepare_binary(p, LE, 1); }
int rt_prepare_GreaterOrEqual(rt_prep *p) { return prepare_binary(p, GE, 1); }

static const row_fn AND[NDT] = {[MTE_DTYPE_BOOL] = and_b8}, OR[NDT] = {[MTE_DTYPE_BOOL] = or_b8},
                    XOR[NDT] = {[MTE_DTYPE_BOOL] = xor_b8}, NOT[NDT] = {[MTE_DTYPE_BOOL] = not_b8};
int rt_prepare_And(rt_prep *p) { return prepare_binary(p, AND, 1); }
int rt_prepare_Or(rt_prep *p) { return prepare_binary(p, OR, 1); }
int rt_prepare_Xor(rt_prep *p) { return prepare_binary(p, XOR, 1); }
int rt_prepare_Not(rt_prep *p) { return prepare_unary(p, NOT, NULL, 0); }

int rt_prepare_Pow(rt_prep *p) {
  static const row_fn POW[NDT] = {[MTE_DTYPE_FLOAT32] = pow_f32};
  return prepare_binary(p, POW, 0);
}

int rt_prepare_Neg(rt_prep *p) { return prepare_unary(p, NEG, NULL, 0); }
int rt_prepare_Abs(rt_prep *p) { return prepare_unary(p, ABS, NULL, 0); }
int rt_prepare_Relu(rt_prep *p) { return prepare_unary(p, RELU, NULL, 0); }
int rt_prepare_Exp(rt_prep *p) { return prepare_unary(p, EXP, NULL, 0); }
int rt_prepare_Log(rt_prep *p) { return prepare_unary(p, LOG, NULL, 0); }
int rt_prepare_Sqrt(rt_prep *p) { return prepare_unary(p, SQRT, NULL, 0); }
int rt_prepare_Reciprocal(rt_prep *p) { return prepare_unary(p, RECIP, NULL, 0); }
int rt_prepare_Tanh(rt_prep *p) { return prepare_unary(p, TANH, NULL, 0); }
int rt_prepare_Sin(rt_prep *p) { return prepare_unary(p, SIN, NULL, 0); }
int rt_prepare_Cos(rt_prep *p) { return prepare_unary(p, COS, NULL, 0); }
int rt_prepare_Floor(rt_prep *p) { return prepare_unary(p, FLOOR, NULL, 0); }
int rt_prepare_Ceil(rt_prep *p) { return prepare_unary(p, CEIL, NULL, 0); }
int rt_prepare_Erf(rt_prep *p) { return prepare_unary(p, ERF, NULL, 0); }
int rt_prepare_Sigmoid(rt_prep *p) { return prepare_f32(p, sigmoid_f32, NULL, 0); }
int rt_prepare_mte_Silu(rt_prep *p) { return prepare_f32(p, silu_f32, NULL, 0); }
int rt_prepare_HardSwish(rt_prep *p) { return prepare_f32(p, hswish_f32, NULL, 0); }
int rt_prepare_Softplus(rt_prep *p) { return prepare_f32(p, softplus_f32, NULL, 0); }

int rt_prepare_LeakyRelu(rt_prep *p) {
  float alpha;
  int st = attr_f32(p, "alpha", 0.01, &alpha);
  return st ? st : prepare_f32(p, leaky_f32, &alpha, 1);
}

int rt_prepare_Elu(rt_prep *p) {
  float alpha;
  int st = attr_f32(p, "alpha", 1.0, &alpha);
  return st ? st : prepare_f32(p, elu_f32, &alpha, 1);
}

int rt_prepare_HardSigmoid(rt_prep *p) {
  float prm[2];
  int st = attr_f32(p, "alpha", 0.2, &prm[0]);
  if (!st) st = attr_f32(p, "beta", 0.5, &prm[1]);
  return st ? st : prepare_f32(p, hsig_f32, prm, 2);
}

/* mte.Gelu: libmte's float32 kernel over the whole tensor */
static int run_gelu(const rt_step *s, void *const *ptr) {
  const ew_plan *pl = s->state;
  if (!pl->numel) return MTE_OK;
  return mte_gelu_forward(pl->numel, ptr[pl->value[0]], ptr[s->node->outputs[0]],
                          pl->prm[0] != 0.0f);
}

int rt_prepare_mte_Gelu(rt_prep *p) {
  const char *approx;
  int st = rt_attr_string(p, "approximate", "none", &approx);
  if (st) return st;
  int tanh_form = strcmp(approx, "tanh") == 0;
  if (!tanh_form && strcmp(approx, "none") != 0)
    return rt_node_fail(p, MTE_EFORMAT, "attribute \"approximate\" must be \"none\" or \"tanh\", "
                        "is \"%.100s\"", approx);
  float prm = (float)tanh_form;
  st = prepare_f32(p, silu_f32, &prm, 1); /* the plan's checks; run_gelu replaces its run */
  if (st) return st;
  p->step->run = run_gelu;
  p->step->kernel = "gelu";
  return MTE_OK;
}

int rt_prepare_Clip(rt_prep *p) {
  row_fn row;
  ew_plan *pl;
  int st = rt_expect_arity(p, 1, 3, 1);
  if (!st) st = same_dtypes(p, 0, 3);
  if (!st) st = kernel_for(p, CLIP, 0, &row);
  if (!st) st = rt_expect_output_like(p, 0, 0); /* lo, hi must broadcast to x's shape */
  if (!st) st = make_plan(p, 3, rt_input(p, 0)->dtype, row, &pl);
  return st;
}

int rt_prepare_Where(rt_prep *p) {
  static const row_fn BY_SIZE[9] = {NULL, where_uint8_t, where_uint16_t, NULL, where_uint32_t,
                                    NULL, NULL, NULL, where_uint64_t};
  ew_plan *pl;
  int st = rt_expect_arity(p, 3, 3, 1);
  if (!st && rt_input(p, 0)->dtype != MTE_DTYPE_BOOL) st = unsupported_dtype(p, 0);
  if (!st) st = same_dtypes(p, 1, 3);
  if (st) return st;
  mte_dtype dt = rt_input(p, 1)->dtype;
  return make_plan(p, 3, dt, BY_SIZE[mte_dtype_size(dt)], &pl);
}
