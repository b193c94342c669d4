/*
 * test_bf16.c - the half-precision kernels (mte_bf16.h) on every ISA this CPU runs.
 *
 *   conversions   all 65536 bf16 and fp16 values widened; every value, every midpoint
 *                 between neighbours (the ties) and random float32 bit patterns narrowed,
 *                 against a reference written here from the formats' definitions (the
 *                 value of an encoding, and a search for the nearest, ties to even)
 *   GEMM          generated shapes (edges, odd K, K over a block, transposes, padded
 *                 leading dimensions, alpha/beta, bias per row and column, float32 and
 *                 half outputs) against a double-precision sum of the widened inputs
 *   conv2d        stride, padding, dilation, groups, 1x1, against a direct double loop
 *   paths         which path runs (tdpbf16ps / vdpbf16ps / bfdot where the CPU has them);
 *                 with AMX, the bf16 GEMM and conv again with it switched off
 *   errors        bad dtypes, sizes, bias modes
 *
 *   test_bf16 --quick   fewer random shapes
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mte.h"
#include "mte_bf16.h"
#include "mte_test.h"

static int g_quick = 0;

/* ---------------------------------------------------------------- reference formats */

/* the value of an encoding of a finite or infinite magnitude, by the format's definition
 * (exponent field e, mantissa bits mb, bias; e == all ones read as the next binade, so the
 * search below sees "infinity" as the value one ulp above the largest finite) */
static double magnitude(int dt, uint32_t h) {
  const int mb = dt == MTE_DT_BF16 ? 7 : 10, bias = dt == MTE_DT_BF16 ? 127 : 15;
  const uint32_t e = h >> mb, m = h & ((1u << mb) - 1u);
  if (e == 0) return ldexp((double)m, 1 - bias - mb);
  return ldexp(1.0 + ldexp((double)m, -mb), (int)e - bias);
}

static uint32_t inf_code(int dt) { return dt == MTE_DT_BF16 ? 0x7f80u : 0x7c00u; }

static float ref_widen(int dt, uint16_t h) {
  const uint32_t mag = h & 0x7fffu;
  const double sign = (h & 0x8000u) ? -1.0 : 1.0;
  if (mag > inf_code(dt)) return NAN;
  if (mag == inf_code(dt)) return (float)(sign * INFINITY);
  return (float)(sign * magnitude(dt, mag));
}

/* nearest encoding, ties to the even one; NaN -> 0x7fff (any NaN) */
static uint16_t ref_narrow(int dt, float x) {
  if (isnan(x)) return 0x7fff;
  const uint16_t sign = signbit(x) ? 0x8000u : 0;
  const double a = fabs((double)x);
  uint32_t lo = 0, hi = inf_code(dt); /* largest code with magnitude <= a, by bisection */
  if (a >= magnitude(dt, hi)) return (uint16_t)(sign | hi);
  while (hi - lo > 1) {
    const uint32_t mid = (lo + hi) / 2;
    if (magnitude(dt, mid) <= a) lo = mid; else hi = mid;
  }
  const double dlo = a - magnitude(dt, lo), dhi = magnitude(dt, lo + 1) - a;
  const uint32_t code = dlo < dhi ? lo : dhi < dlo ? lo + 1 : (lo & 1u ? lo + 1 : lo);
  return (uint16_t)(sign | code);
}

static int is_nan_code(int dt, uint16_t h) { return (h & 0x7fffu) > inf_code(dt); }
static const char *dt_name(int dt) { return dt == MTE_DT_BF16 ? "bf16" : "fp16"; }

static float bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* ---------------------------------------------------------------- conversions */

/* the inputs of the narrowing check and their expected codes, computed once per format
 * (the bisection is slow under qemu): every value, every midpoint of neighbours (a tie), and
 * random float32 bit patterns (all exponents, NaNs included) */
typedef struct narrow_case {
  int n;
  float *x;
  uint16_t *want;
} narrow_case;

static narrow_case g_narrow[3];

static const narrow_case *narrow_cases(int dt) {
  narrow_case *c = &g_narrow[dt];
  if (c->x) return c;
  const int random = g_quick ? 20000 : 100000;
  c->n = 2 * 65536 + random;
  c->x = malloc((size_t)c->n * sizeof *c->x);
  c->want = malloc((size_t)c->n * sizeof *c->want);
  for (int i = 0; i < 65536; ++i) {
    const uint32_t mag = (uint32_t)i & 0x7fffu;
    c->x[i] = ref_widen(dt, (uint16_t)i);
    c->x[65536 + i] =
        mag < inf_code(dt)
            ? (float)(((i & 0x8000) ? -1.0 : 1.0) * 0.5 *
                      (magnitude(dt, mag) + magnitude(dt, mag + 1)))
            : c->x[i];
  }
  for (int i = 2 * 65536; i < c->n; ++i) c->x[i] = bits_float((uint32_t)mte_test_next());
  for (int i = 0; i < c->n; ++i) c->want[i] = ref_narrow(dt, c->x[i]);
  return c;
}

static void test_conversions(const char *isa, int dt) {
  enum { N = 65536 };
  uint16_t *h = malloc(N * sizeof *h);
  float *f = malloc(N * sizeof *f);
  for (int i = 0; i < N; ++i) h[i] = (uint16_t)i;
  CHECK(mte_half_to_f32(dt, h, f, N) == MTE_OK, "widen");
  int bad = 0;
  for (int i = 0; i < N && bad < 5; ++i) {
    const float r = ref_widen(dt, h[i]);
    const int ok = isnan(r) ? isnan(f[i]) : memcmp(&r, &f[i], sizeof r) == 0;
    if (!ok) ++bad;
    CHECK(ok, "%s %s widen 0x%04x: %g, expected %g", isa, dt_name(dt), i, f[i], r);
  }
  const narrow_case *c = narrow_cases(dt);
  uint16_t *got = malloc((size_t)c->n * sizeof *got);
  CHECK(mte_f32_to_half(dt, c->x, got, c->n) == MTE_OK, "narrow");
  CHECK(mte_f32_to_half(dt, c->x, got, 5) == MTE_OK, "narrow a tail of 5");
  bad = 0;
  for (int i = 0; i < c->n && bad < 5; ++i) {
    const uint16_t r = c->want[i];
    const int ok = is_nan_code(dt, r) ? is_nan_code(dt, got[i]) : got[i] == r;
    if (!ok) ++bad;
    CHECK(ok, "%s %s narrow %.9g (#%d): 0x%04x, expected 0x%04x", isa, dt_name(dt), c->x[i],
          i, got[i], r);
  }
  free(h), free(f), free(got);
}

/* ---------------------------------------------------------------- GEMM */

typedef struct shape {
  int64_t M, N, K;
  int ta, tb, pad, bias_mode, half_out;
  float alpha, beta;
} shape;

static void random_half(int dt, uint16_t *h, int64_t n) {
  for (int64_t i = 0; i < n; ++i) h[i] = ref_narrow(dt, mte_test_uniform());
}

static void check_gemm(const char *isa, int dt, shape s) {
  const int64_t M = s.M, N = s.N, K = s.K;
  const int64_t ar = s.ta ? K : M, ac = s.ta ? M : K, br = s.tb ? N : K, bc = s.tb ? K : N;
  const int64_t lda = (ac ? ac : 1) + s.pad, ldb = (bc ? bc : 1) + s.pad, ldc = N + s.pad;
  uint16_t *A = malloc((size_t)(ar * lda + 1) * 2), *B = malloc((size_t)(br * ldb + 1) * 2);
  random_half(dt, A, ar * lda);
  random_half(dt, B, br * ldb);
  float *bias = malloc((size_t)(M + N + 1) * sizeof *bias);
  for (int64_t i = 0; i < M + N; ++i) bias[i] = mte_test_uniform();
  /* C starts random (beta reads it) */
  float *C32 = malloc((size_t)(M * ldc + 1) * sizeof *C32);
  uint16_t *C16 = malloc((size_t)(M * ldc + 1) * 2);
  double *ref = malloc((size_t)(M * N + 1) * sizeof *ref), *mag = malloc((size_t)(M * N + 1) * 8);
  random_half(dt, C16, M * ldc);
  for (int64_t i = 0; i < M * ldc; ++i) C32[i] = ref_widen(dt, C16[i]);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0.0, m = 0.0;
      for (int64_t p = 0; p < K; ++p) {
        const double a = ref_widen(dt, s.ta ? A[p * lda + i] : A[i * lda + p]);
        const double b = ref_widen(dt, s.tb ? B[j * ldb + p] : B[p * ldb + j]);
        acc += a * b;
        m += fabs(a * b);
      }
      double r = s.alpha * acc, c0 = C32[i * ldc + j];
      if (s.beta != 0.0f) r += s.beta * c0;
      const double bv = s.bias_mode == MTE_BIAS_PER_ROW ? bias[i]
                        : s.bias_mode == MTE_BIAS_PER_COL ? bias[j] : 0.0;
      ref[i * N + j] = r + bv;
      mag[i * N + j] = fabs(s.alpha) * m + fabs(s.beta * c0) + fabs(bv);
    }
  const uint16_t pad16 = C16[N]; /* row 0's padding (when pad > 0) */
  const float pad32 = C32[N];
  const int cdt = s.half_out ? dt : MTE_DT_F32;
  void *C = s.half_out ? (void *)C16 : (void *)C32;
  const int st = mte_half_gemm(dt, cdt, s.ta, s.tb, M, N, K, s.alpha, A, lda, B, ldb, s.beta,
                               C, ldc, s.bias_mode == MTE_BIAS_NONE ? NULL : bias,
                               s.bias_mode, NULL);
  CHECK(st == MTE_OK, "%s %s gemm status %d", isa, dt_name(dt), st);
  /* float32 sums of K products: |error| <= (K + 3) u * sum |terms|; a half output adds
   * half an ulp of the format */
  const double u = ldexp(1.0, -24), half_ulp = ldexp(1.0, dt == MTE_DT_BF16 ? -8 : -11);
  double worst = 0.0;
  int64_t wi = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      const double got = s.half_out ? ref_widen(dt, C16[i * ldc + j]) : C32[i * ldc + j];
      const double tol = (double)(K + 3) * u * mag[i * N + j] + 1e-30 +
                         (s.half_out ? half_ulp * fabs(ref[i * N + j]) * 1.0001 +
                                           ldexp(1.0, -24) : 0.0);
      const double e = fabs(got - ref[i * N + j]) / tol;
      if (!(e <= worst)) worst = e, wi = i * N + j;
    }
  CHECK(worst <= 1.0, "%s %s gemm M=%lld N=%lld K=%lld ta=%d tb=%d pad=%d bias=%d half=%d "
        "alpha=%g beta=%g: error %.3g x tolerance at %lld (%s)", isa, dt_name(dt),
        (long long)M, (long long)N, (long long)K, s.ta, s.tb, s.pad, s.bias_mode, s.half_out,
        s.alpha, s.beta, worst, (long long)wi, mte_half_gemm_path(dt));
  /* the padding between rows of C is never written */
  if (s.pad && M > 1) {
    const int untouched = s.half_out ? C16[N] == pad16 : memcmp(&C32[N], &pad32, 4) == 0;
    CHECK(untouched, "padding");
  }
  free(A), free(B), free(bias), free(C32), free(C16), free(ref), free(mag);
}

static void test_gemm_shapes(const char *isa, int dt) {
  const shape fixed[] = {
      {1, 1, 1, 0, 0, 0, 0, 0, 1.0f, 0.0f},       {7, 33, 5, 0, 0, 0, 0, 0, 1.0f, 0.0f},
      {8, 32, 512, 0, 0, 0, 0, 0, 1.0f, 0.0f},    {17, 65, 513, 1, 1, 3, 2, 0, 0.5f, 1.0f},
      {64, 64, 64, 0, 1, 0, 1, 1, 1.0f, 0.0f},    {33, 100, 1031, 1, 0, 1, 2, 1, 1.0f, 0.5f},
      {3, 200, 2, 0, 0, 0, 0, 1, -2.0f, 0.0f},    {129, 17, 300, 1, 1, 0, 1, 0, 1.0f, 0.0f},
      {5, 6, 0, 0, 0, 0, 2, 0, 1.0f, 0.5f},       {5, 6, 7, 0, 0, 0, 0, 1, 0.0f, 2.0f},
      {250, 130, 96, 0, 0, 2, 0, 0, 1.0f, 0.0f},
      {40, 1100, 70, 0, 1, 1, 1, 0, 1.0f, 1.0f},  /* N over a column block, beta 1 */
      {96, 64, 2100, 1, 0, 0, 0, 1, 1.0f, 0.0f},  /* three k slices */
  };
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; ++i) check_gemm(isa, dt, fixed[i]);
  const int n = g_quick ? 6 : 25;
  for (int t = 0; t < n; ++t) {
    shape s = {1 + mte_test_pick(90), 1 + mte_test_pick(90), 1 + mte_test_pick(600),
               mte_test_pick(2), mte_test_pick(2), mte_test_pick(3), mte_test_pick(3),
               mte_test_pick(2), mte_test_pick(4) ? 1.0f : 0.75f,
               mte_test_pick(3) ? 0.0f : 1.5f};
    check_gemm(isa, dt, s);
  }
}

/* ---------------------------------------------------------------- conv2d */

typedef struct conv_case {
  int64_t N, C, H, W, O, KH, KW, sh, sw, pt, pb, pl, pr, dh, dw, groups;
  int bias, half_out;
} conv_case;

static void check_conv(const char *isa, int dt, conv_case c) {
  const int64_t HO = (c.H + c.pt + c.pb - c.dh * (c.KH - 1) - 1) / c.sh + 1;
  const int64_t WO = (c.W + c.pl + c.pr - c.dw * (c.KW - 1) - 1) / c.sw + 1;
  const int64_t Cg = c.C / c.groups, Og = c.O / c.groups;
  const int64_t nx = c.N * c.C * c.H * c.W, nw = c.O * Cg * c.KH * c.KW, ny = c.N * c.O * HO * WO;
  uint16_t *x = malloc((size_t)nx * 2), *w = malloc((size_t)nw * 2), *y16 = malloc((size_t)ny * 2);
  float *y32 = malloc((size_t)ny * 4), *bias = malloc((size_t)c.O * 4);
  random_half(dt, x, nx);
  random_half(dt, w, nw);
  for (int64_t o = 0; o < c.O; ++o) bias[o] = mte_test_uniform();
  const int cdt = c.half_out ? dt : MTE_DT_F32;
  const int st = mte_half_conv2d(dt, cdt, c.N, c.C, c.H, c.W, x, c.O, c.KH, c.KW, w,
                                 c.bias ? bias : NULL, c.sh, c.sw, c.pt, c.pb, c.pl, c.pr,
                                 c.dh, c.dw, c.groups, c.half_out ? (void *)y16 : (void *)y32,
                                 NULL);
  CHECK(st == MTE_OK, "%s conv status %d", isa, st);
  const double u = ldexp(1.0, -24), half_ulp = ldexp(1.0, dt == MTE_DT_BF16 ? -8 : -11);
  double worst = 0.0;
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t o = 0; o < c.O; ++o)
      for (int64_t oh = 0; oh < HO; ++oh)
        for (int64_t ow = 0; ow < WO; ++ow) {
          double acc = c.bias ? bias[o] : 0.0, m = fabs(acc);
          const int64_t g = o / Og;
          for (int64_t ci = 0; ci < Cg; ++ci)
            for (int64_t i = 0; i < c.KH; ++i)
              for (int64_t j = 0; j < c.KW; ++j) {
                const int64_t ih = oh * c.sh - c.pt + i * c.dh, iw = ow * c.sw - c.pl + j * c.dw;
                if (ih < 0 || ih >= c.H || iw < 0 || iw >= c.W) continue;
                const double p =
                    ref_widen(dt, x[((n * c.C + g * Cg + ci) * c.H + ih) * c.W + iw]) *
                    ref_widen(dt, w[((o * Cg + ci) * c.KH + i) * c.KW + j]);
                acc += p;
                m += fabs(p);
              }
          const int64_t at = ((n * c.O + o) * HO + oh) * WO + ow;
          const double got = c.half_out ? ref_widen(dt, y16[at]) : y32[at];
          const double tol = (double)(Cg * c.KH * c.KW + 3) * u * m + 1e-30 +
                             (c.half_out ? half_ulp * fabs(acc) * 1.0001 + u : 0.0);
          const double e = fabs(got - acc) / tol;
          if (!(e <= worst)) worst = e;
        }
  CHECK(worst <= 1.0, "%s %s conv N=%lld C=%lld %lldx%lld O=%lld k=%lldx%lld s=%lld,%lld "
        "groups=%lld: error %.3g x tolerance", isa, dt_name(dt), (long long)c.N, (long long)c.C,
        (long long)c.H, (long long)c.W, (long long)c.O, (long long)c.KH, (long long)c.KW,
        (long long)c.sh, (long long)c.sw, (long long)c.groups, worst);
  free(x), free(w), free(y16), free(y32), free(bias);
}

static void test_conv(const char *isa, int dt) {
  const conv_case cases[] = {
      {2, 3, 9, 11, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0},
      {1, 4, 10, 7, 6, 3, 2, 2, 1, 0, 2, 1, 0, 2, 1, 2, 0, 1},
      {3, 16, 5, 5, 24, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1}, /* 1x1: x read in place */
      {1, 6, 12, 12, 6, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, 3, 1, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) check_conv(isa, dt, cases[i]);
}

/* ---------------------------------------------------------------- paths, errors */

static void test_paths(const char *isa, int amx_allowed) {
  const char *bf = mte_half_gemm_path(MTE_DT_BF16), *fp = mte_half_gemm_path(MTE_DT_F16);
  printf("  %s: bf16 %s, fp16 %s\n", isa, bf, fp);
  CHECK(bf && fp && strstr(fp, "widen+sgemm"), "paths %s / %s", bf, fp);
  CHECK(mte_half_gemm_path(MTE_DT_F32) == NULL && mte_half_gemm_path(7) == NULL, "bad dtype");
  const uint64_t f = mte_cpu_features();
  if (strcmp(isa, "avx512") == 0 || strcmp(isa, "avx512vnni") == 0)
    CHECK(strstr(bf, (f & MTE_CPU_AMX_BF16) && amx_allowed ? "tdpbf16ps"
                     : (f & MTE_CPU_AVX512_BF16)          ? "vdpbf16ps"
                                                          : "widen") != NULL, "%s", bf);
  if (strcmp(isa, "neon") == 0 || strcmp(isa, "neondot") == 0)
    CHECK(strstr(bf, (f & MTE_CPU_ARM_BF16) ? "bfdot" : "widen") != NULL, "%s", bf);
  if (strcmp(isa, "generic") == 0 || strcmp(isa, "avx2") == 0)
    CHECK(strstr(bf, "widen") != NULL, "%s", bf);
  const double peak = mte_bf16_peak_gflops(0.01), fpeak = mte_peak_gflops(0.01);
  printf("  %s: bf16 peak %.1f GFLOP/s, fp32 peak %.1f GFLOP/s (one core)\n", isa, peak, fpeak);
  CHECK(peak > 0.0 && fpeak > 0.0, "peaks %g %g", peak, fpeak);
}

static void test_errors(void) {
  uint16_t a[4] = {0}, b[4] = {0};
  float c[4];
  CHECK(mte_half_gemm(MTE_DT_F32, MTE_DT_F32, 0, 0, 2, 2, 2, 1, a, 2, b, 2, 0, c, 2, NULL, 0,
                      NULL) == MTE_EINVAL, "f32 inputs");
  CHECK(mte_half_gemm(MTE_DT_BF16, MTE_DT_F16, 0, 0, 2, 2, 2, 1, a, 2, b, 2, 0, c, 2, NULL, 0,
                      NULL) == MTE_EINVAL, "mixed output");
  CHECK(mte_half_gemm(MTE_DT_BF16, MTE_DT_F32, 0, 0, -1, 2, 2, 1, a, 2, b, 2, 0, c, 2, NULL,
                      0, NULL) == MTE_EINVAL, "negative M");
  CHECK(mte_half_gemm(MTE_DT_BF16, MTE_DT_F32, 0, 0, 2, 2, 2, 1, a, 1, b, 2, 0, c, 2, NULL, 0,
                      NULL) == MTE_EINVAL, "lda < K");
  CHECK(mte_half_gemm(MTE_DT_BF16, MTE_DT_F32, 0, 0, 2, 2, 2, 1, NULL, 2, b, 2, 0, c, 2, NULL,
                      0, NULL) == MTE_EINVAL, "NULL A");
  CHECK(mte_half_gemm(MTE_DT_F16, MTE_DT_F32, 0, 0, 2, 2, 2, 1, a, 2, b, 2, 0, c, 2, c, 9,
                      NULL) == MTE_EINVAL, "bias mode");
  CHECK(mte_half_conv2d(MTE_DT_BF16, MTE_DT_F32, 1, 3, 4, 4, a, 4, 3, 3, b, NULL, 1, 1, 0, 0,
                        0, 0, 1, 1, 2, c, NULL) == MTE_EINVAL, "groups not dividing C");
  CHECK(mte_half_conv2d(MTE_DT_BF16, MTE_DT_F32, 1, 1, 2, 2, a, 1, 3, 3, b, NULL, 1, 1, 0, 0,
                        0, 0, 1, 1, 1, c, NULL) == MTE_EINVAL, "kernel larger than the image");
  CHECK(mte_half_to_f32(3, a, c, 1) == MTE_EINVAL && mte_f32_to_half(MTE_DT_F32, c, a, 1) ==
        MTE_EINVAL, "conversion dtype");
}

int main(int argc, char **argv) {
  g_quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  char isas[256];
  snprintf(isas, sizeof isas, "%s", mte_compiled_isas());
  for (char *isa = strtok(isas, " "); isa; isa = strtok(NULL, " ")) {
    if (mte_set_isa(isa) != MTE_OK) continue; /* not on this CPU */
    test_paths(isa, 1);
    for (int dt = MTE_DT_BF16; dt <= MTE_DT_F16; ++dt) {
      test_conversions(isa, dt);
      test_gemm_shapes(isa, dt);
      test_conv(isa, dt);
    }
    if (mte_cpu_features() & MTE_CPU_AMX_BF16) { /* the path under AMX, without it */
      const int was = mte_set_bf16_amx(0);
      test_paths(isa, 0);
      const char *bf = mte_half_gemm_path(MTE_DT_BF16);
      CHECK(strstr(bf, "tdpbf16ps") == NULL, "AMX off, still %s", bf);
      test_gemm_shapes(isa, MTE_DT_BF16);
      test_conv(isa, MTE_DT_BF16);
      mte_set_bf16_amx(was);
    }
  }
  mte_set_isa("auto");
  test_errors();
  for (int dt = 0; dt < 3; ++dt) free(g_narrow[dt].x), free(g_narrow[dt].want);
  return mte_test_summary(g_quick ? "test_bf16 --quick" : "test_bf16");
}
