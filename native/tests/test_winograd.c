/*
 * test_winograd.c - mte_winograd3x3 against a naive direct convolution (in double), for both
 * tiles (F(4x4,3x3), F(2x2,3x3)), every ISA this machine can run, 1, 2 and 5 threads, many
 * shapes (H, W not multiples of the tile, 1x1 outputs, padding 0/1/2, asymmetric pads,
 * prime channel counts, batches spanning several blocks), with and without a cached U and a
 * bias; plus the weight transform, zero sizes, argument checking and concurrent callers.
 *
 *   test_winograd           full run
 *   test_winograd --quick   fewer random shapes (for qemu and the single-thread pass)
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mte.h"
#include "mte_test.h"
#include "mte_winograd_internal.h"

typedef struct wcase {
  int tile;
  int64_t N, C, H, W, K, ph, pw;
  int use_u, use_bias;
} wcase;

static const char *g_label = "";
static double g_worst[2]; /* largest relative error seen for F(2,3), F(4,3) (main thread) */

/* a private xorshift state per caller, so concurrent workers share nothing */
static float *rand_buf(size_t n, unsigned long long *rng) {
  float *p = (float *)malloc((n ? n : 1) * sizeof(float));
  for (size_t i = 0; i < n; ++i) {
    *rng ^= *rng << 13, *rng ^= *rng >> 7, *rng ^= *rng << 17;
    p[i] = (float)((double)(*rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
  }
  return p;
}

/* y = conv(x, w) + b in double, and the sum of |terms| as the error scale */
static void naive(const wcase *c, const float *x, const float *w, const float *b, double *y,
                  double *mag) {
  const int64_t Ho = c->H + 2 * c->ph - 2, Wo = c->W + 2 * c->pw - 2;
  for (int64_t n = 0; n < c->N; ++n)
    for (int64_t k = 0; k < c->K; ++k)
      for (int64_t r = 0; r < Ho; ++r)
        for (int64_t s = 0; s < Wo; ++s) {
          double acc = b ? b[k] : 0.0, am = b ? fabs(b[k]) : 0.0;
          for (int64_t ch = 0; ch < c->C; ++ch)
            for (int i = 0; i < 3; ++i)
              for (int j = 0; j < 3; ++j) {
                int64_t hr = r + i - c->ph, ws = s + j - c->pw;
                if (hr < 0 || hr >= c->H || ws < 0 || ws >= c->W) continue;
                double t = (double)w[((k * c->C + ch) * 3 + i) * 3 + j] *
                           x[((n * c->C + ch) * c->H + hr) * c->W + ws];
                acc += t;
                am += fabs(t);
              }
          size_t o = (size_t)(((n * c->K + k) * Ho + r) * Wo + s);
          y[o] = acc;
          mag[o] = am;
        }
}

/* error bound per tile size, relative to the largest sum of |terms| (+1) in the output's
 * (n, k) plane (a tile mixes all its inputs, so an output with few terms of its own, at a
 * padded border, still carries its neighbours' rounding). F(4,3)'s transforms have entries
 * up to 8 (A^T) and 5 (B^T), so its rounding error is ~10x F(2,3)'s; the worst seen over
 * these tests is printed at the end */
static double tol_for(int tile) { return tile == 2 ? 1.5e-6 : 2e-5; }

/* run one case; returns the number of problems (0 = pass), message on stderr */
static int case_errors(const wcase *c, unsigned long long *rng) {
  const int64_t Ho = c->H + 2 * c->ph - 2, Wo = c->W + 2 * c->pw - 2;
  const size_t nx = (size_t)(c->N * c->C * c->H * c->W), nw = (size_t)(c->K * c->C * 9);
  const size_t ny = (size_t)(c->N * c->K * Ho * Wo);
  float *x = rand_buf(nx, rng), *w = rand_buf(nw, rng);
  float *b = c->use_bias ? rand_buf((size_t)c->K, rng) : NULL;
  int problems = 0;
  float *y = (float *)malloc((ny ? ny : 1) * sizeof(float));
  double *ref = (double *)malloc((ny ? ny : 1) * sizeof(double));
  double *mag = (double *)malloc((ny ? ny : 1) * sizeof(double));
  for (size_t i = 0; i < ny; ++i) y[i] = NAN; /* every output must be written */
  naive(c, x, w, b, ref, mag);

  int tile = c->tile ? c->tile : mte_winograd_tile(c->N, c->C, c->K, Ho, Wo, c->use_u);
  float *U = NULL;
  int st;
  if (c->use_u) {
    int64_t nu = mte_winograd_weight_size(tile, c->K, c->C);
    U = (float *)malloc((size_t)(nu > 0 ? nu : 1) * sizeof(float));
    st = mte_winograd_transform_weight(tile, c->K, c->C, w, U);
    if (st != MTE_OK) fprintf(stderr, "transform_weight: %s\n", mte_status_string(st)), ++problems;
  }
  st = mte_winograd3x3(c->tile, c->N, c->C, c->H, c->W, c->K, c->ph, c->pw, x,
                       c->use_u ? NULL : w, U, b, y);
  if (st != MTE_OK) fprintf(stderr, "%s: status %s\n", g_label, mte_status_string(st)), ++problems;
  double worst = 0.0;
  size_t bad = 0;
  const size_t plane = (size_t)(Ho * Wo);
  for (size_t p0 = 0; p0 < ny; p0 += plane) {
    double scale = 0.0;
    for (size_t i = p0; i < p0 + plane; ++i) scale = mag[i] > scale ? mag[i] : scale;
    scale += 1.0;
    for (size_t i = p0; i < p0 + plane; ++i) {
      double err = fabs((double)y[i] - ref[i]);
      if (!(err <= tol_for(tile) * scale)) ++bad; /* NaN fails too */
      if (err / scale > worst) worst = err / scale;
    }
  }
  if (bad) {
    fprintf(stderr,
            "%s tile %d N%lld C%lld H%lld W%lld K%lld pad %lld,%lld U%d bias%d: %zu bad, worst "
            "rel %.3g\n",
            g_label, tile, (long long)c->N, (long long)c->C, (long long)c->H, (long long)c->W,
            (long long)c->K, (long long)c->ph, (long long)c->pw, c->use_u, c->use_bias, bad,
            worst);
    ++problems;
  }
  if (rng == &mte_test_rng && worst > g_worst[tile == 4]) g_worst[tile == 4] = worst;
  free(x), free(w), free(b), free(y), free(ref), free(mag), free(U);
  return problems;
}

static void run_case(const wcase *c) { CHECK(case_errors(c, &mte_test_rng) == 0, "case"); }

static void shape_sweep(int quick) {
  static const int64_t hw[][2] = {{1, 1}, {2, 3}, {4, 4}, {5, 7}, {8, 8}, {9, 13}, {14, 14},
                                  {17, 6}, {23, 29}};
  static const int64_t ck[][2] = {{1, 1}, {3, 5}, {16, 16}, {7, 37}, {33, 2}, {67, 19}};
  int count = 0;
  for (int tile = 2; tile <= 4; tile += 2)
    for (size_t s = 0; s < sizeof hw / sizeof hw[0]; ++s)
      for (size_t q = 0; q < sizeof ck / sizeof ck[0]; ++q)
        for (int pad = 0; pad <= 2; ++pad) {
          if (hw[s][0] + 2 * pad < 3 || hw[s][1] + 2 * pad < 3) continue;
          if (quick && (count++ % 5)) continue;
          wcase c = {tile, 1 + (int64_t)(q % 2), ck[q][0], hw[s][0], hw[s][1], ck[q][1], pad,
                     pad, (int)(s % 2), (int)(q % 3 != 0)};
          run_case(&c);
        }
  /* asymmetric padding, tile chosen by the rule, cached U */
  wcase a = {0, 2, 5, 10, 11, 6, 2, 0, 1, 1};
  run_case(&a);
  wcase a2 = {0, 1, 4, 3, 19, 3, 0, 2, 0, 0};
  run_case(&a2);
  /* deep C (several SGEMM k-blocks) and K past the vector width */
  wcase deep = {4, 1, quick ? 130 : 300, 6, 7, 41, 1, 1, 1, 1};
  run_case(&deep);
  /* random shapes */
  for (int i = 0; i < (quick ? 6 : 40); ++i) {
    wcase r = {mte_test_pick(2) ? 4 : 2, 1 + mte_test_pick(3), 1 + mte_test_pick(24),
               1 + mte_test_pick(20), 1 + mte_test_pick(20), 1 + mte_test_pick(40),
               mte_test_pick(3), mte_test_pick(3), mte_test_pick(2), mte_test_pick(2)};
    if (r.H + 2 * r.ph < 3) r.ph = 1;
    if (r.W + 2 * r.pw < 3) r.pw = 1;
    run_case(&r);
  }
}

/* batches split into many blocks (a block may cut an image), for both tiles */
static void block_sweep(void) {
  for (int tiles = 1; tiles <= 9; tiles += 4) {
    mte__winograd_set_block_tiles(tiles);
    wcase a = {4, 3, 5, 13, 9, 7, 1, 1, 1, 1};
    run_case(&a);
    wcase b = {2, 4, 3, 5, 6, 4, 1, 0, 0, 1};
    run_case(&b);
  }
  mte__winograd_set_block_tiles(0);
}

/* U against G g G^T computed in double from the documented matrices */
static void weight_transform_test(void) {
  static const double G4[6][3] = {{0.25, 0, 0},
                                  {1.0 / 6, 1.0 / 6, 1.0 / 6},
                                  {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                  {-1.0 / 24, -1.0 / 12, -1.0 / 6},
                                  {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                  {0, 0, 1}};
  static const double G2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {-0.5, 0.5, -0.5}, {0, 0, -1}};
  const int64_t K = 5, C = 3;
  float *w = rand_buf((size_t)(K * C * 9), &mte_test_rng);
  for (int tile = 2; tile <= 4; tile += 2) {
    const int a = tile + 2;
    float *U = (float *)malloc((size_t)(a * a * C * K) * sizeof(float));
    CHECK(mte_winograd_transform_weight(tile, K, C, w, U) == MTE_OK, "transform");
    int bad = 0;
    for (int64_t k = 0; k < K; ++k)
      for (int64_t c = 0; c < C; ++c)
        for (int p = 0; p < a; ++p)
          for (int q = 0; q < a; ++q) {
            double s = 0;
            for (int i = 0; i < 3; ++i)
              for (int j = 0; j < 3; ++j) {
                double gp = tile == 4 ? G4[p][i] : G2[p][i], gq = tile == 4 ? G4[q][j] : G2[q][j];
                s += gp * w[((k * C + c) * 3 + i) * 3 + j] * gq;
              }
            float u = U[((int64_t)(p * a + q) * C + c) * K + k];
            if (fabs(u - s) > 1e-6 * (1 + fabs(s))) ++bad;
          }
    CHECK(bad == 0, "weight transform tile %d: %d wrong", tile, bad);
    free(U);
  }
  free(w);
}

static void edge_and_error_tests(void) {
  float x[64] = {0}, w[9 * 4] = {0}, y[64], b[4] = {1, 2, 3, 4};
  /* zero sizes: nothing to do */
  CHECK(mte_winograd3x3(4, 0, 2, 3, 3, 2, 1, 1, NULL, NULL, NULL, NULL, NULL) == MTE_OK, "N=0");
  CHECK(mte_winograd3x3(4, 1, 2, 3, 3, 0, 1, 1, x, w, NULL, NULL, NULL) == MTE_OK, "K=0");
  /* C = 0: y = bias */
  for (int i = 0; i < 64; ++i) y[i] = NAN;
  CHECK(mte_winograd3x3(2, 1, 0, 2, 2, 2, 1, 1, NULL, NULL, NULL, b, y) == MTE_OK, "C=0");
  CHECK(y[0] == 1 && y[3] == 1 && y[4] == 2 && y[7] == 2, "C=0 gives bias");
  CHECK(mte_winograd3x3(2, 1, 0, 2, 2, 2, 1, 1, NULL, NULL, NULL, NULL, y) == MTE_OK &&
            y[0] == 0 && y[7] == 0,
        "C=0 without bias gives 0");
  /* invalid arguments leave y untouched */
  for (int i = 0; i < 64; ++i) y[i] = 7.0f;
  CHECK(mte_winograd3x3(3, 1, 1, 4, 4, 1, 1, 1, x, w, NULL, NULL, y) == MTE_EINVAL, "tile 3");
  CHECK(mte_winograd3x3(4, -1, 1, 4, 4, 1, 1, 1, x, w, NULL, NULL, y) == MTE_EINVAL, "N<0");
  CHECK(mte_winograd3x3(4, 1, 1, 4, 4, 1, -1, 1, x, w, NULL, NULL, y) == MTE_EINVAL, "pad<0");
  CHECK(mte_winograd3x3(4, 1, 1, 2, 4, 1, 0, 0, x, w, NULL, NULL, y) == MTE_EINVAL, "H<3");
  CHECK(mte_winograd3x3(4, 1, 1, 4, 4, 1, 1, 1, NULL, w, NULL, NULL, y) == MTE_EINVAL, "x NULL");
  CHECK(mte_winograd3x3(4, 1, 1, 4, 4, 1, 1, 1, x, NULL, NULL, NULL, y) == MTE_EINVAL,
        "w and U NULL");
  CHECK(mte_winograd3x3(4, 1, 1, 4, 4, 1, 1, 1, x, w, NULL, NULL, NULL) == MTE_EINVAL, "y NULL");
  CHECK(mte_winograd3x3(4, 1, 1, 4, 4, 1, 1 << 30, 1, x, w, NULL, NULL, y) == MTE_EINVAL,
        "huge pad");
  CHECK(mte_winograd3x3(4, INT64_MAX / 2, 4, 4, 4, 4, 1, 1, x, w, NULL, NULL, y) ==
            MTE_EOVERFLOW,
        "overflow");
  int untouched = 1;
  for (int i = 0; i < 64; ++i) untouched &= y[i] == 7.0f;
  CHECK(untouched, "y untouched on errors");
  CHECK(mte_winograd_transform_weight(3, 1, 1, w, y) == MTE_EINVAL, "transform tile 3");
  CHECK(mte_winograd_transform_weight(4, 1, 1, NULL, y) == MTE_EINVAL, "transform NULL");
  CHECK(mte_winograd_transform_weight(4, 0, 5, NULL, NULL) == MTE_OK, "transform empty");
  CHECK(mte_winograd_weight_size(4, 2, 3) == 216 && mte_winograd_weight_size(2, 2, 3) == 96,
        "weight size");
  CHECK(mte_winograd_weight_size(5, 2, 3) == -1 && mte_winograd_weight_size(4, INT64_MAX, 2) == -1,
        "weight size errors");
  /* the rule */
  for (int cached = 0; cached <= 1; ++cached) {
    CHECK(mte_winograd_tile(1, 64, 64, 56, 56, cached) == 4, "rule 64@56");
    CHECK(mte_winograd_tile(1, 128, 128, 28, 28, cached) == 4, "rule 128@28");
    CHECK(mte_winograd_tile(1, 256, 256, 14, 14, cached) == 2, "rule 256@14");
    CHECK(mte_winograd_tile(1, 128, 128, 14, 14, cached) == 4, "rule 128@14");
    CHECK(mte_winograd_tile(1, 64, 64, 7, 7, cached) == 2, "rule 64@7");
    CHECK(mte_winograd_tile(1, 64, 64, 0, 5, cached) == 0, "rule empty");
    CHECK(mte_winograd_should_use(1, 64, 64, 56, 56, cached) == 1, "use 64@56");
    CHECK(mte_winograd_should_use(1, 256, 256, 14, 14, cached) == 1, "use 256@14");
    CHECK(mte_winograd_should_use(1, 16, 64, 56, 56, cached) == 0, "not for C=16");
    CHECK(mte_winograd_should_use(1, 64, 64, 4, 4, cached) == 0, "not for 4x4");
    CHECK(mte_winograd_should_use(1, 64, 64, 7, 7, cached) == cached, "64@7");
  }
}

/* concurrent callers: one gets the shared workspace, the others private ones */
typedef struct job {
  wcase c;
  unsigned long long rng;
  int problems;
} job;

static void *worker(void *arg) {
  job *j = (job *)arg;
  for (int i = 0; i < 4; ++i) j->problems += case_errors(&j->c, &j->rng);
  return NULL;
}

static void concurrency_test(void) {
  pthread_t t[3];
  job jobs[3] = {{{4, 1, 8, 20, 20, 8, 1, 1, 0, 1}, 11, 0},
                 {{2, 2, 5, 9, 9, 3, 1, 1, 1, 0}, 22, 0},
                 {{4, 1, 16, 12, 12, 16, 0, 0, 1, 1}, 33, 0}};
  for (int i = 0; i < 3; ++i) pthread_create(&t[i], NULL, worker, &jobs[i]);
  for (int i = 0; i < 3; ++i) pthread_join(t[i], NULL);
  for (int i = 0; i < 3; ++i) CHECK(jobs[i].problems == 0, "concurrent caller %d", i);
}

int main(int argc, char **argv) {
  const int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  char isas[256];
  snprintf(isas, sizeof isas, "%s", mte_compiled_isas());
  printf("test_winograd: compiled ISAs: %s; openmp: %d\n", isas, mte_has_openmp());
  static const int threads[] = {1, 2, 5};
  for (char *name = strtok(isas, " "); name; name = strtok(NULL, " ")) {
    if (!mte_isa_available(name)) {
      printf("  %s: not supported by this CPU, skipped\n", name);
      continue;
    }
    CHECK(mte_set_isa(name) == MTE_OK, "set_isa %s", name);
    for (int t = 0; t < (quick ? 1 : 3); ++t) {
      char label[64];
      snprintf(label, sizeof label, "%s/%dT", name, threads[t]);
      g_label = label;
      mte_set_num_threads(threads[t]);
      shape_sweep(quick);
      block_sweep();
    }
    weight_transform_test();
  }
  mte_set_isa("auto");
  mte_set_num_threads(2);
  g_label = "auto";
  edge_and_error_tests();
  concurrency_test();
  CHECK(mte_winograd_workspace_peak_bytes() > 0, "workspace peak reported");
  mte_winograd_workspace_release();
  printf("test_winograd: worst relative error F(2,3) %.3g, F(4,3) %.3g\n", g_worst[0],
         g_worst[1]);
  return mte_test_summary("test_winograd");
}
