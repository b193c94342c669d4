/*
 * test_conv_direct.c - the direct KxK convolution (conv_direct.c, mte_conv2d_direct_*)
 * against a naive loop in double: kernels 1x1 .. 7x7 (and 3x5), strides 1, 2, 3 (the
 * stride-1 / stride-2 variants and the runtime-stride one), every padding 0 .. 3 and
 * asymmetric ones, output widths 1 .. 20 and 112 / 130 (tiles of 1 .. 7 pixels, chunks of
 * whole rows and pieces of one long row), output channels 1 .. 130 (1 .. 4 vectors, the
 * partly filled last block of 64), input channels across the slice of 16, batch 1 and 2;
 * bias, residual, ReLU / ReLU6, NaN; every ISA, 1 and 3 threads. Sentinels check that
 * nothing past y is written; invalid descriptors are refused.
 *
 *   test_conv_direct           full run
 *   test_conv_direct --quick   fewer cases (for qemu)
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mte.h"
#include "mte_test.h"

#define GUARD 16
#define SENTINEL 12345.0f
static const char *g_label = "";

static float *buffer(int64_t n) {
  float *p = (float *)malloc((size_t)(n + GUARD) * sizeof(float));
  for (int64_t i = 0; i < n; ++i) p[i] = mte_test_uniform();
  for (int64_t i = n; i < n + GUARD; ++i) p[i] = SENTINEL;
  return p;
}

static double act_d(double v, int act) {
  if (act != MTE_ACT_NONE) v = v < 0 ? 0 : v;
  if (act == MTE_ACT_RELU6) v = v > 6 ? 6 : v;
  return v;
}

typedef struct { int N, C, H, W, K, kh, kw, sh, sw, pt, pb, pl, pr; } shape;

static void check(shape s, int use_bias, int use_res, int act, int nan_at) {
  mte_conv2d_desc d = {s.N, s.C, s.H, s.W, s.K, s.kh, s.kw, 0, 0, s.sh, s.sw,
                       s.pt, s.pb, s.pl, s.pr, 1, 1, 1};
  d.out_h = mte_conv2d_output_size(s.H, s.kh, s.sh, s.pt, s.pb, 1);
  d.out_w = mte_conv2d_output_size(s.W, s.kw, s.sw, s.pl, s.pr, 1);
  if (d.out_h < 1 || d.out_w < 1) return;
  const int64_t Ho = d.out_h, Wo = d.out_w, ny = (int64_t)s.N * s.K * Ho * Wo;
  const int64_t nw = (int64_t)s.K * s.C * s.kh * s.kw;
  float *x = buffer((int64_t)s.N * s.C * s.H * s.W), *w = buffer(nw), *b = buffer(s.K);
  float *r = buffer(ny), *y = buffer(ny);
  for (int64_t i = 0; i < nw; ++i) w[i] *= 3.0f; /* values past ReLU6's 6 */
  if (nan_at >= 0) x[nan_at % ((int64_t)s.N * s.C * s.H * s.W)] = NAN;
  const int64_t np = mte_conv2d_direct_packed_floats(s.K, s.C, s.kh, s.kw);
  CHECK(np >= nw, "[%s] packed floats %lld", g_label, (long long)np);
  float *pk_base = (float *)malloc((size_t)(np + 1) * sizeof(float)), *pk = pk_base + 1;
  CHECK(mte_conv2d_direct_pack(s.K, s.C, s.kh, s.kw, w, pk) == MTE_OK, "[%s] pack", g_label);
  int st = mte_conv2d_direct_forward(&d, x, pk, use_bias ? b : NULL, use_res ? r : NULL, act,
                                     y, NULL);
  CHECK(st == MTE_OK, "[%s] forward status %d", g_label, st);
  int64_t bad = 0, first = -1;
  for (int64_t n = 0; n < s.N && st == MTE_OK; ++n)
    for (int64_t k = 0; k < s.K; ++k)
      for (int64_t oh = 0; oh < Ho; ++oh)
        for (int64_t ow = 0; ow < Wo; ++ow) {
          double acc = use_bias ? b[k] : 0.0, mag = fabs(acc);
          int nan = 0;
          for (int64_t c = 0; c < s.C; ++c)
            for (int i = 0; i < s.kh; ++i)
              for (int j = 0; j < s.kw; ++j) {
                const int64_t ih = oh * s.sh + i - s.pt, iw = ow * s.sw + j - s.pl;
                if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W) continue;
                const double xv = x[((n * s.C + c) * s.H + ih) * s.W + iw];
                const double t = (double)w[((k * s.C + c) * s.kh + i) * s.kw + j] * xv;
                nan |= isnan(xv);
                acc += t, mag += fabs(t);
              }
          const int64_t at = ((n * s.K + k) * Ho + oh) * Wo + ow;
          if (use_res) acc += r[at], mag += fabs(r[at]);
          const double ref = act_d(acc, act), got = y[at];
          const int ok = nan ? isnan(got)
                             : fabs(got - ref) <= (double)(s.C * s.kh * s.kw + 8) * 2.4e-7 *
                                                      (mag + 1.0);
          if (!ok && bad++ == 0) first = at;
        }
  int guard = 1;
  for (int64_t i = ny; i < ny + GUARD; ++i) guard &= y[i] == SENTINEL;
  CHECK(bad == 0 && guard,
        "[%s] N%d C%d %dx%d K%d k%dx%d s%d,%d pad %d,%d,%d,%d bias %d res %d act %d: %lld bad "
        "(first %lld), guard %d",
        g_label, s.N, s.C, s.H, s.W, s.K, s.kh, s.kw, s.sh, s.sw, s.pt, s.pb, s.pl, s.pr,
        use_bias, use_res, act, (long long)bad, (long long)first, guard);
  free(x), free(w), free(b), free(r), free(y), free(pk_base);
}

static void invalid(void) {
  static float v[64 * 9]; /* zeros: x, y and the packed weights of one 3x3 block */
  mte_conv2d_desc d = {1, 1, 4, 4, 1, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, 1, 1, 1};
  CHECK(mte_conv2d_direct_forward(&d, v, v, NULL, NULL, MTE_ACT_NONE, v, NULL) == MTE_OK,
        "valid");
  d.out_h = 3;
  CHECK(mte_conv2d_direct_forward(&d, v, v, NULL, NULL, MTE_ACT_NONE, v, NULL) == MTE_EINVAL,
        "wrong out_h");
  d.out_h = 2, d.groups = 2;
  CHECK(mte_conv2d_direct_forward(&d, v, v, NULL, NULL, MTE_ACT_NONE, v, NULL) == MTE_EINVAL,
        "groups");
  d.groups = 1, d.dilation_w = 2;
  CHECK(mte_conv2d_direct_forward(&d, v, v, NULL, NULL, MTE_ACT_NONE, v, NULL) == MTE_EINVAL,
        "dilation");
  d.dilation_w = 1;
  CHECK(mte_conv2d_direct_forward(&d, v, v, NULL, NULL, MTE_ACT_GELU, v, NULL) == MTE_EINVAL,
        "gelu");
  CHECK(mte_conv2d_direct_packed_floats(0, 1, 3, 3) == -1, "packed floats of K = 0");
  CHECK(mte_conv2d_direct_packed_floats(65, 2, 3, 3) == 128 * 18, "two blocks");
}

static void run(int quick) {
  const shape fixed[] = {
      {1, 64, 14, 14, 64, 3, 3, 1, 1, 1, 1, 1, 1},    {1, 32, 7, 7, 130, 3, 3, 1, 1, 1, 1, 1, 1},
      {2, 17, 9, 11, 70, 3, 3, 2, 2, 1, 1, 1, 1},     {1, 3, 40, 260, 64, 7, 7, 2, 2, 3, 3, 3, 3},
      {1, 5, 8, 8, 16, 3, 5, 1, 3, 0, 2, 1, 3},       {1, 4, 6, 6, 20, 1, 1, 1, 1, 0, 0, 0, 0},
      {1, 33, 130, 3, 48, 3, 3, 1, 1, 1, 1, 1, 1},    {1, 16, 5, 240, 33, 3, 3, 1, 2, 1, 1, 0, 2},
  };
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; ++i) {
    check(fixed[i], 1, 1, MTE_ACT_RELU, -1);
    check(fixed[i], 0, 0, MTE_ACT_NONE, -1);
  }
  const int cases = quick ? 25 : 150;
  for (int t = 0; t < cases; ++t) {
    shape s;
    s.N = 1 + mte_test_pick(2), s.C = 1 + mte_test_pick(40), s.K = 1 + mte_test_pick(130);
    s.kh = 1 + mte_test_pick(7), s.kw = mte_test_pick(3) ? s.kh : 1 + mte_test_pick(7);
    s.sh = 1 + mte_test_pick(3), s.sw = mte_test_pick(3) ? s.sh : 1 + mte_test_pick(3);
    s.pt = mte_test_pick(4), s.pb = mte_test_pick(4), s.pl = mte_test_pick(4);
    s.pr = mte_test_pick(4);
    s.H = 1 + mte_test_pick(20), s.W = 1 + mte_test_pick(mte_test_pick(4) ? 20 : 150);
    check(s, mte_test_pick(2), mte_test_pick(2), mte_test_pick(3), mte_test_pick(8) ? -1 : t);
  }
}

int main(int argc, char **argv) {
  const int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  char isas[256];
  snprintf(isas, sizeof isas, "%s", mte_compiled_isas());
  printf("test_conv_direct: compiled ISAs: %s; openmp: %d\n", isas, mte_has_openmp());
  invalid();
  for (char *name = strtok(isas, " "); name; name = strtok(NULL, " ")) {
    if (!mte_isa_available(name)) continue;
    CHECK(mte_set_isa(name) == MTE_OK, "set_isa %s", name);
    const int threads[] = {1, 3};
    for (int t = 0; t < 2; ++t) {
      mte_set_num_threads(threads[t]);
      char label[64];
      snprintf(label, sizeof label, "%s, %d threads", name, threads[t]);
      g_label = label;
      run(quick);
    }
  }
  mte_set_isa("auto");
  return mte_test_summary("test_conv_direct");
}
