/*
 * quant.c - the element-wise int8 kernels (quantize, dequantize, requantize, add), the
 * multiplier of a real scale ratio, and the int8 peak.
 *
 * Each is one branch-free loop over the values, written so the compiler vectorises it
 * (the requantization is the scalar reference of mte_quant_internal.h: it is the
 * definition, and these loops are memory bound). The quantize and the add's lookup first
 * let the active ISA's qelem kernel (mte_qelem_internal.h) do a prefix in vectors, bit-equal
 * to the loop, which does the rest. Arguments are checked first; nothing is written on
 * error. Large inputs are cut into contiguous spans, one per thread (for_spans): every value
 * is computed alone, so the split changes no bit.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <math.h>
#include <time.h>

#include <string.h>

#include "mte_qelem_internal.h"
#include "mte_quant_internal.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define MAX_N ((int64_t)1 << 60)
/* below this, one thread does the whole loop (a 2-thread region costs ~1 us: ResNet-18's
 * 14 x 14 x 256 adds, 50k values, take ~19 us on one) */
#define SPAN_MIN_VALUES ((int64_t)1 << 14)

/* ---------------------------------------------------------------- threads */

/* The op's arguments and its loop over values [i0, i1). */
typedef struct span_op {
  void (*run)(const struct span_op *op, int64_t i0, int64_t i1);
  const void *x, *b, *table;
  void *y;
  float scale;
  int32_t zp, zp2, m, shift;
  const mte_qadd_params *add;
} span_op;

static void for_spans(const span_op *op, int64_t n) {
  const int nt = mte__threads_for((double)n, (double)SPAN_MIN_VALUES, n / 1024);
  if (nt <= 1) {
    op->run(op, 0, n);
    return;
  }
  const int64_t per = (n / nt + 63) / 64 * 64; /* cache-line sized spans */
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static)
#endif
  for (int t = 0; t < nt; ++t) {
    const int64_t i0 = t * per, i1 = t == nt - 1 ? n : (t + 1) * per;
    if (i0 < i1) op->run(op, i0, i1 < n ? i1 : n);
  }
}

int mte_quantize_multiplier(double real, int32_t *multiplier, int32_t *shift) {
  if (!multiplier || !shift || !isfinite(real) || real < 0) return MTE_EINVAL;
  int64_t m = 0;
  int e = 0;
  if (real > 0) {
    double q = frexp(real, &e);
    m = (int64_t)round(q * 2147483648.0); /* half away from zero; exact in double */
    if (m == ((int64_t)1 << 31)) m /= 2, ++e;
    if (e < -31) m = 0, e = 0;
    if (e > 30) m = INT32_MAX, e = 30;
  }
  *multiplier = (int32_t)m;
  *shift = e;
  return MTE_OK;
}

static int bad_scale(float scale) { return !(isfinite(scale) && scale > 0.0f); }

/* The loop below vectorizes once GCC may ignore floating-point exception flags (values are
 * unchanged: -fno-trapping-math only lets it evaluate both sides of a select). */
#if defined(__GNUC__) && !defined(__clang__)
#define MTE_VECTORIZE_SELECTS __attribute__((optimize("no-trapping-math")))
#else
#define MTE_VECTORIZE_SELECTS
#endif

MTE_VECTORIZE_SELECTS
static void quantize_span(const span_op *op, int64_t i0, int64_t i1) {
  const float *x = (const float *)op->x + i0, scale = op->scale;
  int8_t *y = (int8_t *)op->y + i0;
  const int64_t n = i1 - i0;
  const int32_t zp = op->zp;
  const mte_qelem_kernel *k = mte__isa()->qelem;
  for (int64_t i = k->quantize && n ? k->quantize(n, x, scale, zp, y) : 0; i < n; ++i) {
    float r = x[i] / scale;
    r = r < -256.0f ? -256.0f : r;
    r = r > 256.0f ? 256.0f : r;
    r = r == r ? r : 0.0f; /* NaN -> zp */
    /* round half away from zero without roundf (so the loop vectorizes): truncate, then
     * step away from zero when the dropped fraction is at least one half (exact here) */
    const int32_t t = (int32_t)r;
    const float frac = r - (float)t;
    int32_t q = t + (frac >= 0.5f) - (frac <= -0.5f) + zp;
    q = q < -128 ? -128 : q;
    y[i] = (int8_t)(q > 127 ? 127 : q);
  }
}

int mte_quantize(int64_t n, const float *x, float scale, int32_t zp, int8_t *y) {
  if (n < 0 || n > MAX_N || bad_scale(scale) || !mte__q_zp_ok(zp) || (n && (!x || !y)))
    return MTE_EINVAL;
  const span_op op = {quantize_span, x, NULL, NULL, y, scale, zp, 0, 0, 0, NULL};
  for_spans(&op, n);
  return MTE_OK;
}

static void dequantize_span(const span_op *op, int64_t i0, int64_t i1) {
  const int8_t *q = (const int8_t *)op->x;
  float *y = (float *)op->y;
  for (int64_t i = i0; i < i1; ++i) y[i] = (float)((int32_t)q[i] - op->zp) * op->scale;
}

int mte_dequantize(int64_t n, const int8_t *q, float scale, int32_t zp, float *y) {
  if (n < 0 || n > MAX_N || bad_scale(scale) || !mte__q_zp_ok(zp) || (n && (!q || !y)))
    return MTE_EINVAL;
  const span_op op = {dequantize_span, q, NULL, NULL, y, scale, zp, 0, 0, 0, NULL};
  for_spans(&op, n);
  return MTE_OK;
}

static void requantize_span(const span_op *op, int64_t i0, int64_t i1) {
  const int8_t *q = (const int8_t *)op->x;
  int8_t *y = (int8_t *)op->y;
  const mte_qchan c = mte__qchan(0, op->m, op->shift, 0);
  for (int64_t i = i0; i < i1; ++i)
    y[i] = mte__requant((int32_t)q[i] - op->zp, &c, op->zp2, -128, 127);
}

int mte_requantize(int64_t n, const int8_t *q, int32_t in_zp, int32_t m, int32_t shift,
                   int32_t out_zp, int8_t *y) {
  if (n < 0 || n > MAX_N || !mte__q_zp_ok(in_zp) || !mte__q_zp_ok(out_zp) ||
      !mte__q_mult_ok(m, shift) || (n && (!q || !y)))
    return MTE_EINVAL;
  const span_op op = {requantize_span, q, NULL, NULL, y, 0.0f, in_zp, out_zp, m, shift, NULL};
  for_spans(&op, n);
  return MTE_OK;
}

static int32_t sat_add(int32_t a, int32_t b) {
  int64_t s = (int64_t)a + b;
  return s > INT32_MAX ? INT32_MAX : s < INT32_MIN ? INT32_MIN : (int32_t)s;
}

static void add_span(const span_op *op, int64_t i0, int64_t i1) {
  const mte_qadd_params *p = op->add;
  const int8_t *a = (const int8_t *)op->x + i0, *b = (const int8_t *)op->b + i0;
  int8_t *y = (int8_t *)op->y + i0;
  const int64_t n = i1 - i0;
  const int32_t scale = (int32_t)1 << p->left_shift; /* 255 << 23 < 2^31 */
  const mte_qchan out = mte__qchan(0, p->y_multiplier, p->y_shift, 0);
  const mte_qelem_kernel *k = mte__isa()->qelem;
  for (int64_t i = k->add && n ? k->add(p, n, a, b, y) : 0; i < n; ++i) {
    int32_t sa = mte__mbqm(((int32_t)a[i] - p->a_zero_point) * scale, p->a_multiplier,
                           p->a_shift);
    int32_t sb = mte__mbqm(((int32_t)b[i] - p->b_zero_point) * scale, p->b_multiplier,
                           p->b_shift);
    y[i] = mte__requant(sat_add(sa, sb), &out, p->y_zero_point, p->act_min, p->act_max);
  }
}

int mte_qadd(const mte_qadd_params *p, int64_t n, const int8_t *a, const int8_t *b, int8_t *y) {
  if (!p || n < 0 || n > MAX_N || (n && (!a || !b || !y))) return MTE_EINVAL;
  if (!mte__q_zp_ok(p->a_zero_point) || !mte__q_zp_ok(p->b_zero_point) ||
      !mte__q_zp_ok(p->y_zero_point) || !mte__q_mult_ok(p->a_multiplier, p->a_shift) ||
      !mte__q_mult_ok(p->b_multiplier, p->b_shift) ||
      !mte__q_mult_ok(p->y_multiplier, p->y_shift) || !mte__q_act_ok(p->act_min, p->act_max) ||
      p->left_shift < 0 || p->left_shift > 23)
    return MTE_EINVAL;
  const span_op op = {add_span, a, b, NULL, y, 0.0f, 0, 0, 0, 0, p};
  for_spans(&op, n);
  return MTE_OK;
}

int mte_qadd_table(const mte_qadd_params *p, int8_t *table) {
  if (!table) return MTE_EINVAL;
  int8_t every[256], first[256], row[256];
  for (int v = 0; v < 256; ++v) every[v] = (int8_t)(v - 128);
  for (int i = 0; i < 256; ++i) { /* one row: a = every[i] against every b */
    memset(first, (uint8_t)every[i], sizeof first);
    int st = mte_qadd(p, 256, first, every, row);
    if (st) return st;
    for (int v = 0; v < 256; ++v)
      table[(size_t)(uint8_t)every[i] << 8 | (uint8_t)every[v]] = row[v];
  }
  return MTE_OK;
}

static void lookup_span(const span_op *op, int64_t i0, int64_t i1) {
  const int8_t *a = (const int8_t *)op->x + i0, *b = (const int8_t *)op->b + i0;
  const int8_t *table = (const int8_t *)op->table;
  int8_t *y = (int8_t *)op->y + i0;
  const int64_t n = i1 - i0;
  const mte_qelem_kernel *k = mte__isa()->qelem;
  for (int64_t i = k->lookup && n ? k->lookup(n, a, b, table, y) : 0; i < n; ++i)
    y[i] = table[(size_t)(uint8_t)a[i] << 8 | (uint8_t)b[i]];
}

int mte_qadd_lookup(int64_t n, const int8_t *a, const int8_t *b, const int8_t *table,
                    int8_t *y) {
  if (n < 0 || n > MAX_N || (n && (!a || !b || !y || !table))) return MTE_EINVAL;
  const span_op op = {lookup_span, a, b, table, y, 0.0f, 0, 0, 0, 0, NULL};
  for_spans(&op, n);
  return MTE_OK;
}

int mte_qadd_run(const mte_qadd_params *p, const int8_t *table, int64_t n, const int8_t *a,
                 const int8_t *b, int8_t *y) {
  if (!p || !table) return MTE_EINVAL;
  const mte_qelem_kernel *k = mte__isa()->qelem;
  /* the arithmetic where the ISA does it in vectors for these parameters, else the table */
  if (k->add && mte__qadd_lanes_ok(p)) return mte_qadd(p, n, a, b, y);
  return mte_qadd_lookup(n, a, b, table, y);
}

/* ---------------------------------------------------------------- peak */

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

double mte_peak_gops_int8(double seconds) {
  if (!(seconds > 0.0)) seconds = 0.1;
  if (seconds > 10.0) seconds = 10.0;
  const mte_qgemm_kernel *k = mte__qgemm_kernel(0);
  if (!k->dot_peak) return 0.0;
  double best = 0.0, spent = 0.0;
  int64_t rounds = 1 << 14;
  while (spent < seconds) {
    double t0 = now();
    double ops = k->dot_peak(rounds);
    double dt = now() - t0;
    spent += dt;
    if (dt < 2e-3) {
      rounds *= 2;
      continue;
    }
    if (ops / dt > best) best = ops / dt;
  }
  return best * 1e-9;
}
