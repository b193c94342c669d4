/*
 * ops_cast.c - Cast between the nine dtypes of the model format, as numpy's astype does it:
 * one loop per (source, destination) pair, generated from two dtype lists, each element
 * loaded as its C value (float16 widened to float) and converted to the destination:
 * float -> integer truncates toward zero (clamped where numpy is undefined, never C UB),
 * anything -> bool is != 0, anything -> float16 rounds to nearest even from double (exact
 * for every source, so no double rounding). Cast is not in place: y never overlaps x.
 */
#include <math.h>
#include <string.h>

#include "kernels.h"

#define NDT 10 /* mte_dtype values, INVALID included */

typedef void (*cast_fn)(int64_t n, const void *x, void *y);


static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 31, man = h & 1023u, bits;
  if (exp == 31) {
    bits = sign | 0x7f800000u | (man << 13);
  } else if (exp) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else { /* zero or subnormal: man * 2^-24, exact in float */
    float v = (float)man * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* double -> float16, rounding to nearest even (as numpy's npy_double_to_half) */
static uint16_t half_from_double(double d) {
  uint64_t bits;
  memcpy(&bits, &d, sizeof bits);
  uint16_t sign = (uint16_t)((bits >> 48) & 0x8000u);
  double a = fabs(d);
  if (a != a) return (uint16_t)(sign | 0x7e00u | ((bits >> 42) & 0x3ffu));
  if (a >= 65520.0) return (uint16_t)(sign | 0x7c00u); /* rounds past the largest half */
  if (a < 6.103515625e-05) { /* subnormal: units of 2^-24, nearest even */
    double units = a * 16777216.0;
    double r = nearbyint(units); /* default rounding mode: ties to even */
    return (uint16_t)(sign | (uint16_t)r);
  }
  int e;
  double m = frexp(a, &e); /* a = m 2^e, m in [0.5, 1) */
  double units = nearbyint(m * 2048.0); /* 11 significant bits, ties to even */
  if (units >= 2048.0) {
    units /= 2.0;
    ++e;
  }
  uint32_t exp = (uint32_t)(e - 1 + 15), man = (uint32_t)units - 1024u;
  if (exp >= 31) return (uint16_t)(sign | 0x7c00u);
  return (uint16_t)(sign | (exp << 10) | man);
}

/* float -> integer: truncation toward zero, clamped (numpy leaves out-of-range undefined) */
#define F2I(NAME, T, LO, HI)                 \
  static T NAME(double v) {                  \
    if (v != v) return 0;                    \
    if (v <= (double)(LO)) return (LO);      \
    if (v >= (double)(HI)) return (HI);      \
    return (T)v;                             \
  }
F2I(f2i8, int8_t, INT8_MIN, INT8_MAX)
F2I(f2i16, int16_t, INT16_MIN, INT16_MAX)
F2I(f2i32, int32_t, INT32_MIN, INT32_MAX)
F2I(f2i64, int64_t, INT64_MIN, INT64_MAX)
F2I(f2u8, uint8_t, 0, UINT8_MAX)

/* the source as a C value (float16 as float) */
#define LOAD_f32(v) (v)
#define LOAD_f64(v) (v)
#define LOAD_f16(v) half_to_float(v)
#define LOAD_i8(v) (v)
#define LOAD_i16(v) (v)
#define LOAD_i32(v) (v)
#define LOAD_i64(v) (v)
#define LOAD_u8(v) (v)
#define LOAD_b8(v) (v)
/* the C value v converted to the destination */
#define FLOATY(v, F, I) _Generic((v), float: F((double)(v)), double: F((double)(v)), default: (I))
#define CONV_f32(v) ((float)(v))
#define CONV_f64(v) ((double)(v))
#define CONV_f16(v) half_from_double((double)(v))
#define CONV_i8(v) FLOATY(v, f2i8, (int8_t)(v))
#define CONV_i16(v) FLOATY(v, f2i16, (int16_t)(v))
#define CONV_i32(v) FLOATY(v, f2i32, (int32_t)(v))
#define CONV_i64(v) FLOATY(v, f2i64, (int64_t)(v))
#define CONV_u8(v) FLOATY(v, f2u8, (uint8_t)(v))
#define CONV_b8(v) ((uint8_t)((v) != 0))

/* the nine dtypes, twice (a macro cannot expand inside itself) */
#define ALL_SRC(X, ...) \
  X(f32, float, MTE_DTYPE_FLOAT32, __VA_ARGS__) \
  X(f64, double, MTE_DTYPE_FLOAT64, __VA_ARGS__) \
  X(f16, uint16_t, MTE_DTYPE_FLOAT16, __VA_ARGS__) \
  X(i8, int8_t, MTE_DTYPE_INT8, __VA_ARGS__) \
  X(i16, int16_t, MTE_DTYPE_INT16, __VA_ARGS__) \
  X(i32, int32_t, MTE_DTYPE_INT32, __VA_ARGS__) \
  X(i64, int64_t, MTE_DTYPE_INT64, __VA_ARGS__) \
  X(u8, uint8_t, MTE_DTYPE_UINT8, __VA_ARGS__) \
  X(b8, uint8_t, MTE_DTYPE_BOOL, __VA_ARGS__)
#define ALL_DST(X, ...) \
  X(f32, float, MTE_DTYPE_FLOAT32, __VA_ARGS__) \
  X(f64, double, MTE_DTYPE_FLOAT64, __VA_ARGS__) \
  X(f16, uint16_t, MTE_DTYPE_FLOAT16, __VA_ARGS__) \
  X(i8, int8_t, MTE_DTYPE_INT8, __VA_ARGS__) \
  X(i16, int16_t, MTE_DTYPE_INT16, __VA_ARGS__) \
  X(i32, int32_t, MTE_DTYPE_INT32, __VA_ARGS__) \
  X(i64, int64_t, MTE_DTYPE_INT64, __VA_ARGS__) \
  X(u8, uint8_t, MTE_DTYPE_UINT8, __VA_ARGS__) \
  X(b8, uint8_t, MTE_DTYPE_BOOL, __VA_ARGS__)
#define CAST_ROW(D, DT_, DTD, S, ST_)                                                      \
  static void cast_##S##_##D(int64_t n, const void *xp, void *yp) {                         \
    const ST_ *x = xp;                                                                     \
    DT_ *y = yp;                                                                           \
    for (int64_t i = 0; i < n; ++i) y[i] = CONV_##D(LOAD_##S(x[i]));                       \
  }
#define CAST_FROM(S, ST_, DTS, _) ALL_DST(CAST_ROW, S, ST_)
ALL_SRC(CAST_FROM, 0)
#define CAST_ENTRY(D, DT_, DTD, S) [DTD] = cast_##S##_##D,
#define CAST_TABLE(S, ST_, DTS, _) [DTS] = {ALL_DST(CAST_ENTRY, S)},
static const cast_fn CAST[NDT][NDT] = {ALL_SRC(CAST_TABLE, 0)};


typedef struct cast_state {
  cast_fn fn;
} cast_state;

static int run_cast(const rt_step *s, void *const *ptr) {
  const rt_node *n = s->node;
  int64_t numel = s->model->values[n->outputs[0]].numel;
  if (numel) ((const cast_state *)s->state)->fn(numel, ptr[n->inputs[0]], ptr[n->outputs[0]]);
  return MTE_OK;
}

int rt_prepare_Cast(rt_prep *p) {
  const char *to;
  int st = rt_expect_arity(p, 1, 1, 1);
  if (!st) st = rt_attr_string(p, "to", NULL, &to);
  if (st) return st;
  if (!to) return rt_node_fail(p, MTE_EFORMAT, "attribute \"to\" (a dtype name) is required");
  mte_dtype dt = rt_dtype_from_name(to);
  if (dt == MTE_DTYPE_INVALID)
    return rt_node_fail(p, MTE_EFORMAT, "attribute \"to\" is \"%.100s\", not a dtype", to);
  const rt_value *x = rt_input(p, 0);
  if ((st = rt_expect_output(p, 0, dt, x->ndim, x->shape))) return st;
  cast_state *cs = rt_state_alloc(p, sizeof *cs);
  if (!cs) return MTE_ENOMEM;
  cs->fn = CAST[x->dtype][dt];
  p->step->state = cs;
  p->step->run = run_cast;
  p->step->kernel = "cast";
  return MTE_OK;
}
