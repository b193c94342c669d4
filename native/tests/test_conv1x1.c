/*
 * test_conv1x1.c - the 1x1 stride-1 convolution (the GEMM y = W x with x read in place on
 * ISAs with a direct tile, sgemm_direct.c) against a naive loop in double: every pixel count
 * 1 .. 200 (tile widths on both sides of 16, 32, 48, the 49 = 48 + 1 and 196 = ... + 4
 * tails, the masked last vector), 3136 and past the pixel block; K = 1, 2, 3 and across the
 * k slices (255, 256, 257, 600); output channels that are not a multiple of the 8-row tile;
 * with and without bias, residual, ReLU / ReLU6 (and GELU, which takes the packed path);
 * prepacked weights or not; groups and batch; NaN in the input; every ISA, 1 and 3 threads.
 * Sentinels after the output check that nothing past it is written.
 *
 *   test_conv1x1           full run
 *   test_conv1x1 --quick   fewer cases (for qemu)
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
  if (act == MTE_ACT_RELU || act == MTE_ACT_RELU6) v = v < 0 ? 0 : v;
  if (act == MTE_ACT_RELU6) v = v > 6 ? 6 : v;
  if (act == MTE_ACT_GELU) v = 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
  return v;
}

/* y = act(conv1x1(x, w) + bias + res) for N images, C -> K channels, HW pixels, G groups */
static void check(int64_t N, int64_t C, int64_t K, int64_t HW, int64_t G, int use_bias,
                  int use_res, int act, int prepack, int nan_at) {
  const int64_t Cg = C / G, Kg = K / G, ny = N * K * HW;
  float *x = buffer(N * C * HW), *w = buffer(K * Cg), *b = buffer(K), *r = buffer(ny);
  float *y = buffer(ny);
  for (int64_t i = 0; i < K * Cg; ++i) w[i] *= 2.0f; /* values well past ReLU6's 6 */
  if (nan_at >= 0) x[nan_at % (N * C * HW)] = NAN;
  mte_conv2d_desc d = {N, C, 1, HW, K, 1, 1, 1, HW, 1, 1, 0, 0, 0, 0, 1, 1, G};
  float *pk = NULL;
  int64_t nf = 0;
  if (prepack) {
    nf = mte_conv2d_packed_weight_floats(&d);
    if (nf > 0) {
      pk = (float *)malloc((size_t)nf * sizeof(float));
      CHECK(mte_conv2d_pack_weight(&d, w, pk, nf) == MTE_OK, "[%s] pack", g_label);
    }
  }
  int st = mte_conv2d_forward_packed(&d, x, w, pk, nf, use_bias ? b : NULL, act,
                                     use_res ? r : NULL, y, NULL);
  CHECK(st == MTE_OK, "[%s] forward status %d", g_label, st);
  int64_t bad = 0, first = -1;
  for (int64_t n = 0; n < N && st == MTE_OK; ++n)
    for (int64_t o = 0; o < K; ++o) {
      const int64_t g = o / Kg;
      for (int64_t j = 0; j < HW; ++j) {
        double s = use_bias ? b[o] : 0.0, mag = fabs(s);
        for (int64_t c = 0; c < Cg; ++c) {
          const double t = (double)w[o * Cg + c] * x[(n * C + g * Cg + c) * HW + j];
          s += t, mag += fabs(t);
        }
        const int64_t at = (n * K + o) * HW + j;
        if (use_res) s += r[at], mag += fabs(r[at]);
        const double ref = act_d(s, act), got = y[at];
        const int ok = isnan(ref) ? isnan(got)
                                  : fabs(got - ref) <= (double)(Cg + 8) * 2.4e-7 * (mag + 1.0);
        if (!ok && bad++ == 0) first = at;
      }
    }
  int guard = 1;
  for (int64_t i = ny; i < ny + GUARD; ++i) guard &= y[i] == SENTINEL;
  CHECK(bad == 0 && guard,
        "[%s] N%lld C%lld K%lld HW%lld G%lld bias%d res%d act%d packed%d nan%d: %lld wrong "
        "(first at %lld), guard %d",
        g_label, (long long)N, (long long)C, (long long)K, (long long)HW, (long long)G,
        use_bias, use_res, act, prepack, nan_at, (long long)bad, (long long)first, guard);
  free(x), free(w), free(b), free(r), free(y), free(pk);
}

static void cases(int quick) {
  static const int acts[] = {MTE_ACT_NONE, MTE_ACT_RELU, MTE_ACT_RELU6};
  /* every width 1 .. 200 (one image, K 5, 13 channels: a partial row tile) */
  for (int64_t hw = 1; hw <= 200; hw += quick ? 7 : 1)
    check(1, 5, 13, hw, 1, (int)(hw & 1), (int)(hw % 3 == 0), acts[hw % 3], (int)(hw & 2), -1);
  /* K = 1, 2, 3 and across the k slices, channel counts around the 8-row tile */
  static const int64_t ks[] = {1, 2, 3, 16, 24, 255, 256, 257, 600};
  static const int64_t ms[] = {1, 7, 8, 9, 16, 24, 40};
  static const int64_t ns[] = {49, 196, 50, 97, 53, 784};
  for (size_t i = 0; i < sizeof ks / sizeof *ks; ++i)
    for (size_t j = 0; j < sizeof ms / sizeof *ms; j += quick ? 3 : 1) {
      const int64_t hw = ns[(i + j) % (sizeof ns / sizeof *ns)];
      check(1, ks[i], ms[j], hw, 1, 1, (int)((i + j) & 1), acts[(i + j) % 3], (int)(j & 1), -1);
    }
  /* large images: past the in-place pixel block, and MobileNetV2's 56x56 shape */
  check(1, 16, 24, 3136, 1, 1, 1, MTE_ACT_NONE, 1, -1);
  check(1, 24, 32, 4700, 1, 1, 0, MTE_ACT_RELU6, 1, -1);
  if (!quick) check(1, 3, 8, 12544, 1, 0, 1, MTE_ACT_RELU, 0, -1);
  /* batch, groups, GELU (not an in-register epilogue), NaN */
  check(2, 12, 18, 49, 3, 1, 1, MTE_ACT_RELU6, 1, -1);
  check(3, 8, 16, 33, 2, 1, 0, MTE_ACT_NONE, 0, -1);
  check(1, 20, 24, 196, 1, 1, 1, MTE_ACT_GELU, 1, -1);
  check(1, 9, 16, 49, 1, 1, 0, MTE_ACT_RELU6, 1, 100);
  check(1, 9, 16, 52, 1, 0, 1, MTE_ACT_NONE, 0, 51);
  /* a random sample */
  for (int t = 0; t < (quick ? 10 : 60); ++t) {
    const int64_t G = 1 + mte_test_pick(2), C = G * (1 + mte_test_pick(70)),
                  K = G * (1 + mte_test_pick(70)), hw = 1 + mte_test_pick(300);
    check(1 + mte_test_pick(2), C, K, hw, G, mte_test_pick(2), mte_test_pick(2),
          acts[mte_test_pick(3)], mte_test_pick(2), -1);
  }
}

int main(int argc, char **argv) {
  const int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  char isas[256];
  snprintf(isas, sizeof isas, "%s", mte_compiled_isas());
  printf("test_conv1x1: compiled ISAs: %s; openmp: %d\n", isas, mte_has_openmp());
  for (char *name = strtok(isas, " "); name; name = strtok(NULL, " ")) {
    if (!mte_isa_available(name)) {
      printf("  %s: not supported by this CPU, skipped\n", name);
      continue;
    }
    CHECK(mte_set_isa(name) == MTE_OK, "set_isa %s", name);
    const int threads[] = {1, 3};
    for (int t = 0; t < (mte_has_openmp() && !quick ? 2 : 1); ++t) {
      mte_set_num_threads(threads[t]);
      char label[64];
      snprintf(label, sizeof label, "%s, %d threads", name, threads[t]);
      g_label = label;
      const int before = mte_test_failed;
      cases(quick);
      printf("  %-22s %s\n", label, mte_test_failed == before ? "ok" : "FAILED");
    }
  }
  mte_set_isa("auto");
  return mte_test_summary(quick ? "test_conv1x1 --quick" : "test_conv1x1");
}
