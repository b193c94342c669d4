/*
 * test_qelem.c - the qelem family's kernels (mte_qelem_internal.h) through the public
 * entry points, byte for byte against scalar loops written from mte_quant.h's definitions,
 * on every ISA this machine runs (and each ISA's own vector edges: lengths around 8, 16, 32,
 * 64, the tails the portable loop takes):
 *
 *   quantize   random and edge floats (ties +-0.5 of every code, NaN, +-inf, huge, -0)
 *   qadd       mte_qadd, its table + mte_qadd_lookup and mte_qadd_run against TFLite's ADD
 *              in int64 (random parameters; the vector path's and the portable loop's)
 *   qmax_pool  kernels 1..4, strides 1..3, padding, dilation, ceil mode, widths 1..300
 *   qgemv      against mte_qlinear: M and K around 16 / 64 and 4, rows 1..3, zero points,
 *              biases (saturating ones too), shifts, clamps; the errors
 * A sentinel after every output catches writes past it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mte.h"
#include "mte_test.h"

#define SENTINEL 0x5A

static int rnd(int lo, int hi) { return lo + mte_test_pick(hi - lo + 1); }

static int8_t *out_buffer(int64_t n) {
  int8_t *y = (int8_t *)malloc((size_t)n + 64);
  memset(y, SENTINEL, (size_t)n + 64);
  return y;
}
static int tail_ok(const int8_t *y, int64_t n) {
  for (int i = 0; i < 64; ++i)
    if (y[n + i] != SENTINEL) return 0;
  return 1;
}

/* ---------------------------------------------------------------- quantize */

static int8_t ref_quantize(float x, float scale, int32_t zp) {
  float r = x / scale;
  if (r != r) return (int8_t)zp;
  double q = (double)roundf(r) + zp; /* half away from zero */
  return (int8_t)(q < -128 ? -128 : q > 127 ? 127 : q);
}

static void test_quantize(const char *isa) {
  const int64_t n = 1000;
  float *x = (float *)malloc((size_t)n * sizeof *x);
  int bad = 0;
  for (int round = 0; round < 8; ++round) {
    const float scale = round == 0 ? 1.0f : ldexpf(1.0f + (float)mte_test_pick(1000) / 997.0f,
                                                   rnd(-12, 2));
    const int32_t zp = rnd(-128, 127);
    for (int64_t i = 0; i < n; ++i) {
      const int kind = mte_test_pick(8);
      if (kind == 0) /* a tie (or its neighbours) in units of the scale */
        x[i] = ((float)rnd(-300, 300) + 0.5f) * scale;
      else if (kind == 1)
        x[i] = nextafterf(((float)rnd(-200, 200) + 0.5f) * scale, mte_test_pick(2) ? 1e30f : -1e30f);
      else if (kind == 2) {
        const float edge[] = {NAN, INFINITY, -INFINITY, 3e38f, -3e38f, -0.0f, 0.0f, 1e-40f};
        x[i] = edge[mte_test_pick(8)];
      } else
        x[i] = mte_test_uniform() * 200.0f * scale;
    }
    for (int64_t len = 0; len <= n; len += len < 70 ? 1 : 131) {
      const int64_t off = mte_test_pick(4);
      if (off + len > n) continue;
      int8_t *y = out_buffer(len);
      CHECK(mte_quantize(len, x + off, scale, zp, y) == MTE_OK, "%s quantize", isa);
      for (int64_t i = 0; i < len; ++i)
        if (y[i] != ref_quantize(x[off + i], scale, zp) && bad++ < 5)
          CHECK(0, "%s quantize(%a / %a, zp %d)[%lld] = %d, want %d", isa, (double)x[off + i],
                (double)scale, zp, (long long)i, y[i], ref_quantize(x[off + i], scale, zp));
      CHECK(tail_ok(y, len), "%s quantize wrote past %lld", isa, (long long)len);
      free(y);
    }
  }
  CHECK(bad == 0, "%s quantize: %d mismatches", isa, bad);
  free(x);
}

/* ---------------------------------------------------------------- qadd */

static int32_t sat32(int64_t v) { return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v; }

/* TFLite's MultiplyByQuantizedMultiplier in int64, from its definition */
static int32_t ref_mbqm(int32_t x, int32_t m, int32_t shift) {
  const int left = shift > 0 ? shift : 0, right = shift < 0 ? -shift : 0;
  int32_t xs = sat32((int64_t)x * ((int64_t)1 << left));
  int64_t ab = (int64_t)xs * m;
  int64_t hi = (ab + (ab >= 0 ? (1 << 30) : 1 - (1 << 30))) / ((int64_t)1 << 31);
  if (right == 0) return (int32_t)hi;
  int64_t d = (int64_t)1 << right, q = hi / d, r = hi % d;
  if (2 * (r < 0 ? -r : r) >= d) q += hi < 0 ? -1 : 1;
  return (int32_t)q;
}

static int8_t ref_qadd(const mte_qadd_params *p, int8_t a, int8_t b) {
  const int32_t sa = ref_mbqm((a - p->a_zero_point) * (1 << p->left_shift), p->a_multiplier, p->a_shift);
  const int32_t sb = ref_mbqm((b - p->b_zero_point) * (1 << p->left_shift), p->b_multiplier, p->b_shift);
  const int64_t v = (int64_t)ref_mbqm(sat32((int64_t)sa + sb), p->y_multiplier, p->y_shift) + p->y_zero_point;
  return (int8_t)(v < p->act_min ? p->act_min : v > p->act_max ? p->act_max : v);
}

/* random parameters: mostly the runtime's (left shift 20, add_multipliers' ratios), some
 * with left shifts and positive shifts (the portable loop's) */
static mte_qadd_params random_qadd(int round) {
  mte_qadd_params p = {rnd(-128, 127), 0, 0, rnd(-128, 127), 0, 0, rnd(-128, 127), 0, 0,
                       -128, 127, 20};
  const double ra = 0.5 * (0.01 + mte_test_pick(1000) / 1000.0);
  mte_quantize_multiplier(round % 2 ? ra : 0.5, &p.a_multiplier, &p.a_shift);
  mte_quantize_multiplier(round % 2 ? 0.5 : ra, &p.b_multiplier, &p.b_shift);
  mte_quantize_multiplier(ldexp(1.0 + mte_test_pick(100) / 50.0, -rnd(12, 22)), &p.y_multiplier,
                          &p.y_shift);
  if (round % 3 == 1) p.act_min = p.y_zero_point > 0 ? p.y_zero_point : 0, p.act_max = rnd(p.act_min, 127);
  if (round % 5 == 2) p.left_shift = rnd(0, 23);
  if (round % 7 == 3) p.a_shift = rnd(-31, 3), p.y_shift = rnd(-31, 2);
  if (round % 11 == 4) p.b_multiplier = 0;
  if (round % 13 == 5) p.a_multiplier = p.b_multiplier = 1 << 30, p.a_shift = p.b_shift = 0;
  return p;
}

static void test_qadd(const char *isa) {
  const int64_t n = 777;
  int8_t *a = (int8_t *)malloc((size_t)n), *b = (int8_t *)malloc((size_t)n);
  int8_t *table = (int8_t *)malloc(65536), *want = (int8_t *)malloc((size_t)n);
  for (int round = 0; round < 30; ++round) {
    const mte_qadd_params p = random_qadd(round);
    CHECK(mte_qadd_table(&p, table) == MTE_OK, "table");
    int bad = 0;
    for (int v = 0; v < 65536; ++v)
      bad += table[v] != ref_qadd(&p, (int8_t)(v >> 8), (int8_t)(v & 255));
    CHECK(bad == 0, "%s: the table of round %d has %d wrong entries", isa, round, bad);
    for (int64_t i = 0; i < n; ++i) a[i] = (int8_t)rnd(-128, 127), b[i] = (int8_t)rnd(-128, 127);
    a[0] = b[0] = 127, a[1] = b[1] = -128, a[2] = 127, b[2] = -128; /* the extremes */
    for (int64_t i = 0; i < n; ++i) want[i] = ref_qadd(&p, a[i], b[i]);
    for (int64_t len = 0; len < n; len += len < 70 ? 1 : 97) {
      int8_t *y = out_buffer(len), *z = out_buffer(len), *u = out_buffer(len);
      CHECK(mte_qadd(&p, len, a, b, y) == MTE_OK, "%s qadd", isa);
      CHECK(mte_qadd_lookup(len, a, b, table, z) == MTE_OK, "%s lookup", isa);
      CHECK(mte_qadd_run(&p, table, len, a, b, u) == MTE_OK, "%s qadd_run", isa);
      CHECK(memcmp(y, want, (size_t)len) == 0, "%s qadd of %lld (round %d) differs", isa,
            (long long)len, round);
      CHECK(memcmp(z, want, (size_t)len) == 0, "%s lookup of %lld differs", isa, (long long)len);
      CHECK(memcmp(u, want, (size_t)len) == 0, "%s qadd_run of %lld differs", isa, (long long)len);
      CHECK(tail_ok(y, len) && tail_ok(z, len) && tail_ok(u, len), "%s qadd wrote past %lld", isa,
            (long long)len);
      free(y), free(z), free(u);
    }
  }
  free(a), free(b), free(table), free(want);
}

/* ---------------------------------------------------------------- qmax_pool2d */

static void ref_qmax(const mte_pool2d_params *p, int64_t H, int64_t W, int64_t Ho, int64_t Wo,
                     const int8_t *x, int8_t *y) {
  for (int64_t r = 0; r < Ho; ++r)
    for (int64_t s = 0; s < Wo; ++s) {
      int m = -128;
      for (int64_t i = 0; i < p->kernel_h; ++i)
        for (int64_t j = 0; j < p->kernel_w; ++j) {
          const int64_t h = r * p->stride_h - p->pad_h + i * p->dilation_h;
          const int64_t w = s * p->stride_w - p->pad_w + j * p->dilation_w;
          if (h >= 0 && h < H && w >= 0 && w < W && x[h * W + w] > m) m = x[h * W + w];
        }
      y[r * Wo + s] = (int8_t)m;
    }
}

static void test_qmax_pool(const char *isa) {
  for (int round = 0; round < 120; ++round) {
    mte_pool2d_params p = {rnd(1, 4), rnd(1, 4), rnd(1, 3), rnd(1, 3), 0, 0, 1, 1, 0, 0, 0};
    if (round % 3 == 0) p.kernel_h = p.kernel_w = 3, p.stride_h = p.stride_w = 2; /* ResNet's */
    p.pad_h = rnd(0, p.kernel_h / 2), p.pad_w = rnd(0, p.kernel_w / 2);
    if (round % 7 == 1) p.dilation_h = 2;
    if (round % 11 == 2) p.dilation_w = 2;
    p.ceil_mode = round % 5 == 0;
    const int64_t C = rnd(1, 3), H = rnd(p.kernel_h * p.dilation_h, 12),
                  W = round % 4 == 0 ? rnd(60, 300) : rnd(p.kernel_w * p.dilation_w, 70);
    const int64_t Ho = mte_pool2d_output_size(H, p.kernel_h, p.stride_h, p.pad_h, p.dilation_h, p.ceil_mode);
    const int64_t Wo = mte_pool2d_output_size(W, p.kernel_w, p.stride_w, p.pad_w, p.dilation_w, p.ceil_mode);
    if (Ho < 1 || Wo < 1) continue;
    int8_t *x = (int8_t *)malloc((size_t)(C * H * W));
    for (int64_t i = 0; i < C * H * W; ++i) x[i] = (int8_t)(round % 9 == 0 ? -128 : rnd(-128, 127));
    if (round % 9 == 0) x[mte_test_pick((int)(C * H * W))] = 5;
    int8_t *want = (int8_t *)malloc((size_t)(C * Ho * Wo)), *y = out_buffer(C * Ho * Wo);
    for (int64_t c = 0; c < C; ++c) ref_qmax(&p, H, W, Ho, Wo, x + c * H * W, want + c * Ho * Wo);
    CHECK(mte_qmax_pool2d(&p, 1, C, H, W, x, y) == MTE_OK, "%s qmax", isa);
    CHECK(memcmp(y, want, (size_t)(C * Ho * Wo)) == 0,
          "%s qmax %lldx%lld/%lldx%lld pad %lld,%lld dil %lld,%lld ceil %d on %lldx%lldx%lld", isa,
          (long long)p.kernel_h, (long long)p.kernel_w, (long long)p.stride_h,
          (long long)p.stride_w, (long long)p.pad_h, (long long)p.pad_w,
          (long long)p.dilation_h, (long long)p.dilation_w, p.ceil_mode, (long long)C,
          (long long)H, (long long)W);
    CHECK(tail_ok(y, C * Ho * Wo), "%s qmax wrote past its output", isa);
    free(x), free(want), free(y);
  }
}

/* ---------------------------------------------------------------- qgemv */

static void test_qgemv(const char *isa) {
  const int64_t Ms[] = {1, 15, 16, 17, 63, 64, 65, 100};
  const int64_t Ks[] = {1, 3, 4, 5, 31, 64, 129, 1280};
  for (int round = 0; round < 40; ++round) {
    const int64_t M = Ms[mte_test_pick(8)], K = Ks[mte_test_pick(8)], rows = rnd(1, 3);
    int8_t *x = (int8_t *)malloc((size_t)(rows * K)), *w = (int8_t *)malloc((size_t)(M * K));
    int32_t *bias = (int32_t *)malloc((size_t)M * 4), *mult = (int32_t *)malloc((size_t)M * 4),
            *shift = (int32_t *)malloc((size_t)M * 4);
    for (int64_t i = 0; i < rows * K; ++i) x[i] = (int8_t)rnd(-128, 127);
    for (int64_t i = 0; i < M * K; ++i) w[i] = (int8_t)(round % 5 == 0 ? 127 * (rnd(0, 1) * 2 - 1) : rnd(-127, 127));
    for (int64_t o = 0; o < M; ++o) {
      bias[o] = round % 7 == 0 ? (rnd(0, 1) ? INT32_MAX - rnd(0, 1000) : INT32_MIN + rnd(0, 1000))
                               : rnd(-100000, 100000);
      mte_quantize_multiplier(ldexp(1.0 + mte_test_pick(1000) / 1000.0, -rnd(4, 16)), &mult[o], &shift[o]);
      if (round % 9 == 0) shift[o] = rnd(-31, 30);
    }
    const int32_t x_zp = round % 4 == 0 ? 0 : rnd(-128, 127);
    mte_requant rq = {mult, shift, rnd(-128, 127), -128, 127};
    if (round % 3 == 0) rq.act_min = rq.zero_point, rq.act_max = rnd(rq.act_min, 127);
    int8_t *want = (int8_t *)malloc((size_t)(rows * M)), *y = out_buffer(rows * M);
    CHECK(mte_qlinear(rows, K, M, x, x_zp, w, NULL, round % 2 ? bias : NULL, &rq, want, NULL) == MTE_OK,
          "qlinear");
    mte_qgemv_plan *plan = NULL;
    CHECK(mte_qgemv_prepare(M, K, w, x_zp, round % 2 ? bias : NULL, &rq, &plan) == MTE_OK && plan,
          "%s qgemv_prepare", isa);
    CHECK(mte_qgemv_run(plan, rows, x, y) == MTE_OK, "%s qgemv_run", isa);
    CHECK(memcmp(y, want, (size_t)(rows * M)) == 0, "%s qgemv M %lld K %lld rows %lld differs", isa,
          (long long)M, (long long)K, (long long)rows);
    CHECK(tail_ok(y, rows * M), "%s qgemv wrote past its output", isa);
    mte_qgemv_free(plan);
    free(x), free(w), free(bias), free(mult), free(shift), free(want), free(y);
  }
}

static void test_qgemv_errors(void) {
  int8_t w[8] = {1, 2, 3, 4, 5, 6, 7, 8}, x[4] = {0}, y[2] = {SENTINEL, SENTINEL};
  int32_t m[2] = {1 << 30, 1 << 30}, s[2] = {-3, -3}, bad_s[2] = {-3, 31};
  mte_requant rq = {m, s, 0, -128, 127}, bad = {m, bad_s, 0, -128, 127};
  mte_qgemv_plan *plan = (mte_qgemv_plan *)&rq;
  CHECK(mte_qgemv_prepare(2, 4, w, 0, NULL, &bad, &plan) == MTE_EINVAL && plan == NULL, "bad shift");
  CHECK(mte_qgemv_prepare(0, 4, w, 0, NULL, &rq, &plan) == MTE_EINVAL, "M 0");
  CHECK(mte_qgemv_prepare(2, 4, w, 128, NULL, &rq, &plan) == MTE_EINVAL, "x_zp 128");
  CHECK(mte_qgemv_prepare(2, 4, NULL, 0, NULL, &rq, &plan) == MTE_EINVAL, "no weight");
  CHECK(mte_qgemv_prepare(2, 4, w, 0, NULL, &rq, NULL) == MTE_EINVAL, "no plan");
  CHECK(mte_qgemv_prepare(2, 4, w, 0, NULL, &rq, &plan) == MTE_OK, "prepare");
  CHECK(mte_qgemv_run(plan, 1, x, NULL) == MTE_EINVAL, "no y");
  CHECK(mte_qgemv_run(plan, -1, x, y) == MTE_EINVAL, "rows -1");
  CHECK(mte_qgemv_run(plan, 1, x, (int8_t *)x + 1) == MTE_EINVAL, "y overlaps x");
  CHECK(mte_qgemv_run(NULL, 1, x, y) == MTE_EINVAL, "no plan");
  CHECK(y[0] == SENTINEL && y[1] == SENTINEL, "an error wrote y");
  CHECK(mte_qgemv_run(plan, 0, x, y) == MTE_OK, "rows 0");
  mte_qgemv_free(plan);
  mte_qgemv_free(NULL);
}

/* ---------------------------------------------------------------- spans over threads */

/* Inputs large enough to be split over threads (quant.c's for_spans) give, at every thread
 * count, the bits of the reference: spans end where they should, none is skipped or twice. */
static void test_spans(const char *isa) {
  const int64_t n = (1 << 17) + 4099; /* not a multiple of the span rounding */
  float *x = (float *)malloc((size_t)n * sizeof *x), *f = (float *)malloc((size_t)n * sizeof *f);
  int8_t *a = (int8_t *)malloc((size_t)n), *b = (int8_t *)malloc((size_t)n);
  int8_t *want = (int8_t *)malloc((size_t)n), *table = (int8_t *)malloc(65536);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = mte_test_uniform() * 300.0f;
    a[i] = (int8_t)rnd(-128, 127), b[i] = (int8_t)rnd(-128, 127);
  }
  const mte_qadd_params p = random_qadd(3);
  CHECK(mte_qadd_table(&p, table) == MTE_OK, "table");
  const int before = mte_get_num_threads();
  for (int nt = 1; nt <= 3; ++nt) {
    mte_set_num_threads(nt);
    int8_t *y = out_buffer(n);
    CHECK(mte_quantize(n, x, 0.75f, 3, y) == MTE_OK, "quantize");
    for (int64_t i = 0; i < n; ++i) want[i] = ref_quantize(x[i], 0.75f, 3);
    CHECK(memcmp(y, want, (size_t)n) == 0, "%s quantize of %lld on %d threads differs", isa,
          (long long)n, nt);
    CHECK(mte_qadd(&p, n, a, b, y) == MTE_OK, "qadd");
    for (int64_t i = 0; i < n; ++i) want[i] = ref_qadd(&p, a[i], b[i]);
    CHECK(memcmp(y, want, (size_t)n) == 0, "%s qadd on %d threads differs", isa, nt);
    CHECK(mte_qadd_lookup(n, a, b, table, y) == MTE_OK, "lookup");
    CHECK(memcmp(y, want, (size_t)n) == 0, "%s lookup on %d threads differs", isa, nt);
    CHECK(tail_ok(y, n), "%s spans wrote past %lld", isa, (long long)n);
    CHECK(mte_dequantize(n, a, 0.5f, -2, f) == MTE_OK, "dequantize");
    int bad = 0;
    for (int64_t i = 0; i < n; ++i) bad += f[i] != (float)(a[i] + 2) * 0.5f;
    CHECK(bad == 0, "%s dequantize on %d threads: %d wrong", isa, nt, bad);
    free(y);
  }
  mte_set_num_threads(before);
  free(x), free(f), free(a), free(b), free(want), free(table);
}

int main(void) {
  char list[256];
  snprintf(list, sizeof list, "%s", mte_compiled_isas());
  for (char *isa = strtok(list, " "); isa; isa = strtok(NULL, " ")) {
    if (mte_set_isa(isa) != MTE_OK) continue;
    printf("qelem on %s (%s)\n", isa, mte_family_isa("qelem"));
    test_quantize(isa);
    test_qadd(isa);
    test_qmax_pool(isa);
    test_qgemv(isa);
    test_spans(isa);
  }
  mte_set_isa("auto");
  test_qgemv_errors();
  return mte_test_summary("test_qelem");
}
