/*
 * test_epilogue.c - the fused epilogue: act(alpha * op(A) @ op(B) + beta * C + bias + residual)
 * of mte_sgemm_ex and act(conv(x, w) + bias + residual) of mte_conv2d_forward_ex, against
 * double-precision references, for every ISA this machine can run (1 and 2 threads):
 *
 *   1. the activations alone, on a dense sweep of x (K == 0, beta == 1 makes C = act(C)):
 *      GELU within 1.5e-7 * max(1, |x|) of 0.5 x (1 + erf(x / sqrt 2)), GELU-tanh, SiLU
 *      and hardswish likewise; SiLU also relative to itself far left (x e^x, tiny)
 *   2. every activation x bias mode x residual on odd shapes (1, primes, tile tails, several
 *      K slices, transposes, padded leading dimensions); C's padding and the residual are
 *      never written
 *   3. argument checks: bad activation, residual leading dimension, residual inside C
 *   4. conv: every activation x bias x residual on the GEMM, 1x1, depthwise and empty paths
 *
 *   test_epilogue           full run
 *   test_epilogue --quick   fewer points in the sweep (used under qemu)
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mte.h"
#include "mte_test.h"

static const char *g_label = "";
static const char *k_act_names[] = {"none", "relu", "relu6", "gelu", "gelu_tanh", "silu",
                                    "hardswish"};
#define LAST_ACT MTE_ACT_HARDSWISH

static double act_ref(int act, double v) {
  switch (act) {
    case MTE_ACT_RELU: return v > 0 ? v : 0;
    case MTE_ACT_RELU6: return v > 0 ? (v < 6 ? v : 6) : 0;
    case MTE_ACT_GELU: return 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
    case MTE_ACT_GELU_TANH:
      return 0.5 * v * (1.0 + tanh(0.79788456080286536 * (v + 0.044715 * v * v * v)));
    case MTE_ACT_SILU: return v / (1.0 + exp(-v));
    case MTE_ACT_HARDSWISH: return v * fmin(fmax(v + 3.0, 0.0), 6.0) / 6.0;
    default: return v;
  }
}

/* ---------------------------------------------------------------- 1. activation accuracy */

static void activation_sweep(int quick) {
  const int64_t n = quick ? 20001 : 400001;
  float *c = malloc((size_t)n * sizeof(float)), *x = malloc((size_t)n * sizeof(float));
  for (int act = MTE_ACT_GELU; act <= LAST_ACT; ++act) {
    for (int64_t i = 0; i < n; ++i) x[i] = c[i] = (float)(-12.0 + 24.0 * (double)i / (n - 1));
    mte_epilogue ep = {MTE_BIAS_NONE, NULL, act, NULL, 0};
    /* K == 0 and beta == 1: C = act(C), one row of n values */
    int st = mte_sgemm_ex(0, 0, 1, n, 0, 1.0f, NULL, 1, NULL, n, 1.0f, c, n, &ep, NULL);
    CHECK(st == MTE_OK, "[%s] sweep status %d", g_label, st);
    double worst = 0;
    int64_t at = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double ref = act_ref(act, x[i]);
      const double err = fabs(c[i] - ref) / fmax(1.0, fabs(x[i]));
      if (!(err <= worst)) worst = err, at = i;
    }
    /* GELU: erf's |error| < 1e-7 plus rounding; tanh form and SiLU: exp's few ulp;
     * hardswish: three roundings */
    const double tol = act == MTE_ACT_GELU ? 1.5e-7 : 2.5e-7;
    printf("    %s: %s max |error| / max(1, |x|) = %.3g\n", g_label, k_act_names[act], worst);
    CHECK(worst <= tol, "[%s] %s: error %.3g at x=%.9g (got %.9g, ref %.9g)", g_label,
          k_act_names[act], worst, x[at], c[at], act_ref(act, x[at]));
    /* special values: NaN stays NaN, +inf stays +inf, far left gives 0 (GELU) or NaN at
     * -inf (SiLU, hardswish: -inf * 0, as PyTorch) */
    float sp[4] = {NAN, INFINITY, -INFINITY, -50.0f};
    CHECK(mte_sgemm_ex(0, 0, 1, 4, 0, 1.0f, NULL, 1, NULL, 4, 1.0f, sp, 4, &ep, NULL) == MTE_OK,
          "special values");
    const int gelu = act <= MTE_ACT_GELU_TANH;
    const double left = act_ref(act, -50.0); /* silu: -50 e^-50 = -9.6e-21 */
    CHECK(isnan(sp[0]) && sp[1] == INFINITY && (gelu ? sp[2] == 0.0f : isnan(sp[2])) &&
              fabs(sp[3] - left) <= 3e-7 * fabs(left),
          "[%s] %s special values: %g %g %g %g", g_label, k_act_names[act], sp[0], sp[1],
          sp[2], sp[3]);
    if (act == MTE_ACT_SILU) { /* x e^x on the far left, relative to itself: no cancellation */
      double worst_rel = 0;
      float v[256];
      for (int i = 0; i < 256; ++i) v[i] = -87.0f + 87.0f * (float)i / 256.0f;
      float y[256];
      memcpy(y, v, sizeof y);
      CHECK(mte_sgemm_ex(0, 0, 1, 256, 0, 1.0f, NULL, 1, NULL, 256, 1.0f, y, 256, &ep, NULL) ==
                MTE_OK, "silu far left");
      for (int i = 0; i < 256; ++i) {
        const double ref = act_ref(act, v[i]);
        worst_rel = fmax(worst_rel, fabs(y[i] - ref) / fabs(ref));
      }
      printf("    %s: silu on [-87, 0) max relative error = %.3g\n", g_label, worst_rel);
      CHECK(worst_rel <= 4e-7, "[%s] silu relative error %.3g on [-87, 0)", g_label, worst_rel);
      float z[3] = {-0.0f, -100.0f, 100.0f}; /* (the epilogue's + 0 bias makes -0 +0) */
      CHECK(mte_sgemm_ex(0, 0, 1, 3, 0, 1.0f, NULL, 1, NULL, 3, 1.0f, z, 3, &ep, NULL) == MTE_OK,
            "silu edges");
      CHECK(z[0] == 0.0f && z[1] == 0.0f && z[2] == 100.0f,
            "[%s] silu(-0, -100, 100) = %g %g %g", g_label, z[0], z[1], z[2]);
    }
    if (act == MTE_ACT_HARDSWISH) { /* the kinks at -3 and 3, exactly */
      float z[6] = {-3.0f, -3.5f, 3.0f, 4.0f, -1.5f, 1.0f};
      CHECK(mte_sgemm_ex(0, 0, 1, 6, 0, 1.0f, NULL, 1, NULL, 6, 1.0f, z, 6, &ep, NULL) == MTE_OK,
            "hardswish kinks");
      CHECK(z[0] == 0.0f && z[1] == 0.0f && z[2] == 3.0f && z[3] == 4.0f && z[4] == -0.375f &&
                z[5] == (float)(4.0 / 6.0),
            "[%s] hardswish kinks: %g %g %g %g %g %.9g", g_label, z[0], z[1], z[2], z[3], z[4],
            z[5]);
    }
  }
  free(c);
  free(x);
}

/* ---------------------------------------------------------------- 2. GEMM with epilogue */

static float *rand_buf(size_t n, float scale) {
  float *p = malloc((n ? n : 1) * sizeof(float));
  for (size_t i = 0; i < n; ++i) p[i] = mte_test_uniform() * scale;
  return p;
}

/* one call; returns 1 on a failure */
static int gemm_case(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, float beta,
                     int mode, int act, int with_res, int pad) {
  const int64_t ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
  const int64_t lda = (ac > 1 ? ac : 1) + pad, ldb = (bc > 1 ? bc : 1) + pad;
  const int64_t ldc = (N > 1 ? N : 1) + pad, ldr = (N > 1 ? N : 1) + 2 * pad;
  const size_t na = (size_t)(ar * lda), nb = (size_t)(br * ldb), nc = (size_t)(M * ldc),
               nr = (size_t)(M * ldr);
  float *A = rand_buf(na, 1.0f), *B = rand_buf(nb, 1.0f), *C = rand_buf(nc, 2.0f);
  float *R = rand_buf(nr, 2.0f), *bias = rand_buf((size_t)(M > N ? M : N), 2.0f);
  float *C0 = malloc((nc ? nc : 1) * sizeof(float)), *R0 = malloc((nr ? nr : 1) * sizeof(float));
  for (int64_t i = 0; i < M; ++i) /* padding marked; beta == 0: C unread, NaN must not leak */
    for (int64_t j = 0; j < ldc; ++j)
      if (j >= N) C[i * ldc + j] = 777.0f;
      else if (beta == 0.0f) C[i * ldc + j] = NAN;
  memcpy(C0, C, nc * sizeof(float));
  memcpy(R0, R, nr * sizeof(float));
  mte_epilogue ep = {mode, mode ? bias : NULL, act, with_res ? R : NULL, with_res ? ldr : 0};
  int st = mte_sgemm_ex(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, &ep, NULL);
  int bad = st != MTE_OK;
  CHECK(!bad, "[%s] status %d", g_label, st);
  for (int64_t i = 0; i < M && !bad; ++i)
    for (int64_t j = 0; j < ldc && !bad; ++j) {
      if (j >= N) {
        bad = C[i * ldc + j] != 777.0f;
        CHECK(!bad, "[%s] C padding (%lld, %lld) written", g_label, (long long)i, (long long)j);
        continue;
      }
      double acc = 0, mag = 0;
      for (int64_t p = 0; p < K; ++p) {
        const double a = ta ? A[p * lda + i] : A[i * lda + p];
        const double b = tb ? B[j * ldb + p] : B[p * ldb + j];
        acc += a * b, mag += fabs(a * b);
      }
      double pre = alpha * acc, bound = fabs(alpha) * mag + 1.0;
      if (beta != 0.0f) pre += beta * (double)C0[i * ldc + j], bound += fabs(beta * C0[i * ldc + j]);
      if (mode == MTE_BIAS_PER_ROW) pre += bias[i], bound += fabs(bias[i]);
      if (mode == MTE_BIAS_PER_COL) pre += bias[j], bound += fabs(bias[j]);
      if (with_res) pre += R[i * ldr + j], bound += fabs(R[i * ldr + j]);
      /* GEMM rounding through the activation (1.13-Lipschitz; hardswish 1.5), plus the
       * activation's own error */
      const double lip = act == MTE_ACT_HARDSWISH ? 1.6 : 1.2;
      const double tol = lip * (double)(K + 6) * 2.0 * 1.1920929e-07 * bound +
                         3e-7 * fmax(1.0, fabs(pre));
      const double ref = act_ref(act, pre), got = C[i * ldc + j];
      bad = !(fabs(got - ref) <= tol);
      CHECK(!bad, "[%s] ta%d tb%d M%lld N%lld K%lld a%g b%g bias%d act %s res%d: C[%lld,%lld] "
            "= %.9g, ref %.9g", g_label, ta, tb, (long long)M, (long long)N, (long long)K,
            alpha, beta, mode, k_act_names[act], with_res, (long long)i, (long long)j, got, ref);
    }
  if (!bad) CHECK(memcmp(R, R0, nr * sizeof(float)) == 0, "[%s] residual unchanged", g_label);
  free(A), free(B), free(C), free(R), free(bias), free(C0), free(R0);
  return bad;
}

/* NaN through every activation (ReLU / ReLU6 included) stays NaN (as in PyTorch and numpy)
 * on every path of the epilogue:
 * the microkernel's fused store (full tiles, bias per column), the tile pass (a ragged last
 * panel, a residual) and K == 0. Row 0 of A is NaN, so row 0 of C must be NaN everywhere. */
static void relu_keeps_nan(void) {
  const int64_t M = 9, K = 5;
  const int64_t widths[] = {64, 67, 3};
  for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; ++wi) {
    const int64_t N = widths[wi];
    float *a = rand_buf((size_t)(M * K), 1.0f), *b = rand_buf((size_t)(K * N), 1.0f);
    float *bias = rand_buf((size_t)N, 1.0f), *res = rand_buf((size_t)(M * N), 1.0f);
    float *c = malloc((size_t)(M * N) * sizeof(float));
    for (int64_t k = 0; k < K; ++k) a[k] = NAN;
    for (int act = MTE_ACT_RELU; act <= LAST_ACT; ++act)
      for (int with_res = 0; with_res <= 1; ++with_res) {
        mte_epilogue ep = {MTE_BIAS_PER_COL, bias, act, with_res ? res : NULL, N};
        CHECK(mte_sgemm_ex(0, 0, M, N, K, 1.0f, a, K, b, N, 0.0f, c, N, &ep, NULL) == MTE_OK,
              "[%s] relu nan status", g_label);
        int kept = 1;
        for (int64_t j = 0; j < N; ++j) kept &= isnan(c[j]);
        CHECK(kept, "[%s] %s, N=%lld, residual %d: NaN became a number", g_label,
              k_act_names[act], (long long)N, with_res);
      }
    free(a), free(b), free(bias), free(res), free(c);
  }
}

static void gemm_matrix(void) {
  static const int64_t shapes[][3] = {{1, 1, 1},    {7, 13, 5},    {37, 45, 600}, {13, 300, 9},
                                      {5, 7, 0},    {97, 131, 257}, {2, 33, 3},   {31, 1, 17}};
  int s = 0;
  for (int act = 0; act <= LAST_ACT; ++act)
    for (int mode = 0; mode < 3; ++mode)
      for (int res = 0; res < 2; ++res)
        for (size_t k = 0; k < sizeof shapes / sizeof *shapes; ++k, ++s) {
          const float alpha = s % 3 == 2 ? -0.5f : 1.0f, beta = s % 4 == 1 ? 0.75f : 0.0f;
          gemm_case(s & 1, (s >> 1) & 1, shapes[k][0], shapes[k][1], shapes[k][2], alpha, beta,
                    mode, act, res, s % 3);
        }
}

/* ---------------------------------------------------------------- 3. arguments */

static void argument_tests(void) {
  float a[64], b[64], c[64], r[64];
  for (int i = 0; i < 64; ++i) a[i] = b[i] = r[i] = 1.0f, c[i] = 5.0f;
  mte_epilogue bad_act = {0, NULL, LAST_ACT + 1, NULL, 0}, bad_ld = {0, NULL, 0, r, 2},
               in_c = {0, NULL, 0, c, 4}, in_c2 = {0, NULL, 0, c + 3, 4},
               zero = {0, NULL, 0, NULL, 0};
  CHECK(mte_sgemm_ex(0, 0, 4, 4, 4, 1, a, 4, b, 4, 0, c, 4, &bad_act, NULL) == MTE_EINVAL,
        "activation past the last");
  CHECK(mte_sgemm_ex(0, 0, 4, 4, 4, 1, a, 4, b, 4, 0, c, 4, &bad_ld, NULL) == MTE_EINVAL,
        "ld_residual < N");
  CHECK(mte_sgemm_ex(0, 0, 4, 4, 4, 1, a, 4, b, 4, 0, c, 4, &in_c, NULL) == MTE_EINVAL,
        "residual == C");
  CHECK(mte_sgemm_ex(0, 0, 4, 4, 4, 1, a, 4, b, 4, 0, c, 4, &in_c2, NULL) == MTE_EINVAL,
        "residual overlapping C");
  CHECK(mte_sgemm_ex(0, 0, 4, 4, 0, 1, a, 4, b, 4, 1, c, 4, &in_c, NULL) == MTE_EINVAL,
        "residual == C, K == 0");
  int untouched = 1;
  for (int i = 0; i < 64; ++i) untouched &= c[i] == 5.0f;
  CHECK(untouched, "rejected calls leave C untouched");
  /* a zero-initialised epilogue is no epilogue; the residual may alias A */
  CHECK(mte_sgemm_ex(0, 0, 4, 4, 4, 1, a, 4, b, 4, 0, c, 4, &zero, NULL) == MTE_OK, "zero ep");
  CHECK(c[0] == 4.0f && c[15] == 4.0f, "zero ep: plain product");
  mte_epilogue alias_a = {0, NULL, MTE_ACT_RELU, a, 4};
  CHECK(mte_sgemm_ex(0, 0, 4, 4, 4, 1, a, 4, b, 4, 0, c, 4, &alias_a, NULL) == MTE_OK,
        "residual aliasing A");
  CHECK(c[0] == 5.0f && c[15] == 5.0f, "residual aliasing A: A @ B + A");
  CHECK(mte_sgemm_ex(0, 0, 0, 4, 4, 1, a, 4, b, 4, 0, c, 4, &in_c, NULL) == MTE_OK,
        "M == 0 with a residual");
  mte_epilogue null_res_any_ld = {0, NULL, MTE_ACT_GELU, NULL, -3}; /* ld unused without it */
  CHECK(mte_sgemm_ex(0, 0, 4, 4, 4, 1, a, 4, b, 4, 0, c, 4, &null_res_any_ld, NULL) == MTE_OK,
        "no residual: ld_residual ignored");
}

/* ---------------------------------------------------------------- 4. conv */

static void conv_case(int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, int64_t k,
                      int64_t stride, int64_t pad, int64_t groups) {
  mte_conv2d_desc d = {N, C, H, W, K, k, k, 0, 0, stride, stride, pad, pad, pad, pad, 1, 1,
                       groups};
  d.out_h = mte_conv2d_output_size(H, k, stride, pad, pad, 1);
  d.out_w = mte_conv2d_output_size(W, k, stride, pad, pad, 1);
  const size_t nx = (size_t)(N * C * H * W), nw = (size_t)(K * (C / groups) * k * k),
               ny = (size_t)(N * K * d.out_h * d.out_w);
  float *x = rand_buf(nx, 1.0f), *w = rand_buf(nw, 1.0f), *bias = rand_buf((size_t)K, 1.0f);
  float *res = rand_buf(ny, 2.0f), *plain = rand_buf(ny, 0.0f), *y = rand_buf(ny, 0.0f);
  float *res0 = malloc((ny ? ny : 1) * sizeof(float));
  memcpy(res0, res, ny * sizeof(float));
  const double mag = (double)(C / groups * k * k) + 1.0; /* |sum| bound: inputs in [-1, 1) */
  for (int act = 0; act <= LAST_ACT; ++act)
    for (int variant = 0; variant < 4; ++variant) {
      const float *bp = variant & 1 ? bias : NULL, *rp = variant & 2 ? res : NULL;
      int st = mte_conv2d_forward(&d, x, w, bp, MTE_ACT_NONE, plain, NULL);
      st |= mte_conv2d_forward_ex(&d, x, w, bp, act, rp, y, NULL);
      int bad = st != MTE_OK;
      CHECK(!bad, "[%s] conv status", g_label);
      for (size_t i = 0; i < ny && !bad; ++i) {
        const double pre = (double)plain[i] + (rp ? rp[i] : 0.0);
        const double ref = act_ref(act, pre);
        const double lip = act == MTE_ACT_HARDSWISH ? 1.5 : 1.0;
        bad = !(fabs(y[i] - ref) <= lip * 4e-7 * (mag + 2.0) + 3e-7 * fabs(pre));
        CHECK(!bad, "[%s] conv N%lld C%lld %lldx%lld K%lld k%lld s%lld p%lld g%lld act %s "
              "bias%d res%d: y[%zu] = %.9g, ref %.9g", g_label, (long long)N, (long long)C,
              (long long)H, (long long)W, (long long)K, (long long)k, (long long)stride,
              (long long)pad, (long long)groups, k_act_names[act], variant & 1, variant >> 1,
              i, y[i], ref);
      }
    }
  CHECK(memcmp(res, res0, ny * sizeof(float)) == 0, "conv residual unchanged");
  free(x), free(w), free(bias), free(res), free(plain), free(y), free(res0);
}

static void conv_tests(void) {
  conv_case(2, 3, 9, 11, 5, 3, 1, 1, 1);    /* im2col GEMM, padded stride-1 pieces */
  conv_case(1, 4, 13, 7, 17, 3, 2, 0, 1);   /* stride 2: segments; K not a tile multiple */
  conv_case(2, 8, 5, 5, 19, 1, 1, 0, 1);    /* 1x1: B is x */
  conv_case(1, 6, 7, 6, 6, 3, 1, 1, 3);     /* groups */
  conv_case(2, 4, 6, 5, 8, 3, 1, 1, 4);     /* Cg == 1, Kg == 2: direct depthwise loops */
  conv_case(1, 70, 3, 3, 40, 3, 1, 1, 1);   /* KK > KC: several k slices */
  conv_case(2, 0, 4, 4, 3, 3, 1, 1, 1);     /* no input channels: act(bias + residual) */
}

static void conv_argument_tests(void) {
  mte_conv2d_desc d = {1, 2, 4, 4, 3, 3, 3, 4, 4, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  float x[32], w[54], y[48];
  for (int i = 0; i < 32; ++i) x[i] = 1.0f;
  for (int i = 0; i < 54; ++i) w[i] = 1.0f;
  for (int i = 0; i < 48; ++i) y[i] = 5.0f;
  CHECK(mte_conv2d_forward_ex(&d, x, w, NULL, 0, y, y, NULL) == MTE_EINVAL, "res == y");
  CHECK(mte_conv2d_forward_ex(&d, x, w, NULL, 0, y + 47, y, NULL) == MTE_EINVAL,
        "res overlapping y");
  CHECK(mte_conv2d_forward_ex(&d, x, w, NULL, LAST_ACT + 1, NULL, y, NULL) == MTE_EINVAL,
        "act past the last");
  int untouched = 1;
  for (int i = 0; i < 48; ++i) untouched &= y[i] == 5.0f;
  CHECK(untouched, "rejected conv calls leave y untouched");
  float r[48];
  for (int i = 0; i < 48; ++i) r[i] = (float)i;
  CHECK(mte_conv2d_forward_ex(&d, x, w, NULL, MTE_ACT_RELU, r, y, NULL) == MTE_OK, "valid");
  CHECK(y[5] == 18.0f + 5.0f && y[0] == 8.0f, "residual added: %g %g", y[5], y[0]);
}

int main(int argc, char **argv) {
  const int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  char isas[256];
  snprintf(isas, sizeof isas, "%s", mte_compiled_isas());
  printf("test_epilogue: compiled ISAs: %s; openmp: %d\n", isas, mte_has_openmp());
  argument_tests();
  conv_argument_tests();
  for (char *name = strtok(isas, " "); name; name = strtok(NULL, " ")) {
    if (!mte_isa_available(name)) {
      printf("  %s: not supported by this CPU, skipped\n", name);
      continue;
    }
    CHECK(mte_set_isa(name) == MTE_OK, "set_isa %s", name);
    for (int t = 1; t <= (mte_has_openmp() ? 2 : 1); ++t) {
      mte_set_num_threads(t);
      char label[64];
      snprintf(label, sizeof label, "%s, %d threads", name, t);
      g_label = label;
      const int before = mte_test_failed;
      if (t == 1) activation_sweep(quick);
      relu_keeps_nan();
      gemm_matrix();
      conv_tests();
      printf("  %-22s %s\n", label, mte_test_failed == before ? "ok" : "FAILED");
    }
  }
  mte_set_isa("auto");
  return mte_test_summary("test_epilogue");
}
