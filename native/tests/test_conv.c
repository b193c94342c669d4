/*
 * test_conv.c - mte_conv2d_{forward,backward_input,backward_weight} against naive loops in
 * double, for every ISA this machine runs, 1, 2 and 5 threads: random geometries (sizes 0,
 * 1, primes; strides, asymmetric pads, dilations, groups, depthwise, 1x1), fixed shapes that
 * cross the blocking (K past KC, output channels past MC, pixels past the column block),
 * backward passes whose grad_y is larger or smaller than the forward output, the fused
 * epilogue; plus argument checks, guard words around every output, the arena (no growth on
 * repeated calls) and concurrent callers.
 *
 *   test_conv           full run
 *   test_conv --quick   fewer random cases (for qemu and the single-thread pass)
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mte.h"
#include "mte_test.h"

#define GUARD 16
#define SENTINEL 12345.0f
static const char *g_label = "";

/* n floats of random data followed by GUARD sentinel floats */
static float *buffer(int64_t n, int random_fill) {
  float *p = (float *)malloc((size_t)(n + GUARD) * sizeof(float));
  for (int64_t i = 0; i < n; ++i) p[i] = random_fill ? mte_test_uniform() : NAN;
  for (int64_t i = n; i < n + GUARD; ++i) p[i] = SENTINEL;
  return p;
}
static int guard_ok(const float *p, int64_t n) {
  for (int64_t i = n; i < n + GUARD; ++i)
    if (p[i] != SENTINEL) return 0;
  return 1;
}

static int close_enough(double got, double ref, double mag, int64_t terms) {
  double tol = (double)(terms + 4) * 2.0 * 1.1920929e-07 * mag + 1e-30;
  return fabs(got - ref) <= tol;
}

/* xpad value, or 0 outside */
static double xat(const mte_conv2d_desc *d, const float *x, int64_t n, int64_t c, int64_t ih,
                  int64_t iw) {
  if (ih < 0 || ih >= d->in_h || iw < 0 || iw >= d->in_w) return 0.0;
  return x[((n * d->in_channels + c) * d->in_h + ih) * d->in_w + iw];
}

static int64_t out_of(const mte_conv2d_desc *d, int h) {
  return h ? mte_conv2d_output_size(d->in_h, d->kernel_h, d->stride_h, d->pad_top,
                                    d->pad_bottom, d->dilation_h)
           : mte_conv2d_output_size(d->in_w, d->kernel_w, d->stride_w, d->pad_left,
                                    d->pad_right, d->dilation_w);
}

/* run the three passes on d and compare each with the naive loops */
static void check_case(const mte_conv2d_desc *fd, int act, int use_bias, int64_t dho,
                       int64_t dwo) {
  mte_conv2d_desc d = *fd;
  const int64_t N = d.batch, C = d.in_channels, H = d.in_h, W = d.in_w, K = d.out_channels;
  const int64_t G = d.groups, Cg = C / G, Kg = K / G, kh = d.kernel_h, kw = d.kernel_w;
  d.out_h = out_of(&d, 1);
  d.out_w = out_of(&d, 0);
  if (d.out_h < 0 || d.out_w < 0) return;
  const int64_t nx = N * C * H * W, nw = K * Cg * kh * kw;
  float *x = buffer(nx, 1), *w = buffer(nw, 1), *bias = buffer(K, 1);
  char what[256];
  snprintf(what, sizeof what,
           "[%s] N%lld C%lld %lldx%lld K%lld k%lldx%lld s%lld,%lld p%lld,%lld,%lld,%lld "
           "d%lld,%lld g%lld act%d",
           g_label, (long long)N, (long long)C, (long long)H, (long long)W, (long long)K,
           (long long)kh, (long long)kw, (long long)d.stride_h, (long long)d.stride_w,
           (long long)d.pad_top, (long long)d.pad_bottom, (long long)d.pad_left,
           (long long)d.pad_right, (long long)d.dilation_h, (long long)d.dilation_w,
           (long long)G, act);

  /* forward */
  int64_t Ho = d.out_h, Wo = d.out_w, ny = N * K * Ho * Wo;
  float *y = buffer(ny, 0);
  int st = mte_conv2d_forward(&d, x, w, use_bias ? bias : NULL, act, y, NULL);
  int bad = st != MTE_OK || !guard_ok(y, ny);
  CHECK(!bad, "%s forward status %d / guard", what, st);
  for (int64_t n = 0; n < N && !bad; ++n)
    for (int64_t o = 0; o < K && !bad; ++o)
      for (int64_t r = 0; r < Ho && !bad; ++r)
        for (int64_t s = 0; s < Wo && !bad; ++s) {
          double acc = use_bias ? bias[o] : 0.0, mag = fabs(acc);
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                double v = w[((o * Cg + c) * kh + i) * kw + j] *
                           xat(&d, x, n, o / Kg * Cg + c, r * d.stride_h - d.pad_top +
                               i * d.dilation_h, s * d.stride_w - d.pad_left + j * d.dilation_w);
                acc += v;
                mag += fabs(v);
              }
          if (act && acc < 0) acc = 0;
          if (act == MTE_ACT_RELU6 && acc > 6) acc = 6;
          double got = y[((n * K + o) * Ho + r) * Wo + s];
          if (!close_enough(got, acc, mag, Cg * kh * kw)) {
            CHECK(0, "%s forward y[%lld,%lld,%lld,%lld] = %g, expected %g", what, (long long)n,
                  (long long)o, (long long)r, (long long)s, got, acc);
            bad = 1;
          }
        }
  if (!bad) CHECK(1, "ok");

  /* the same forward from prepacked weights: bitwise equal (same panels, same order) */
  const int64_t npk = mte_conv2d_packed_weight_floats(&d);
  CHECK(npk >= 0, "%s packed_weight_floats %lld", what, (long long)npk);
  if (npk > 0) {
    float *pk = buffer(npk, 0), *y2 = buffer(ny, 0);
    CHECK(mte_conv2d_pack_weight(&d, w, pk, npk - 1) == MTE_EINVAL, "%s pack: too small", what);
    CHECK(mte_conv2d_pack_weight(&d, w, pk, npk) == MTE_OK && guard_ok(pk, npk), "%s pack",
          what);
    st = mte_conv2d_forward_packed(&d, x, NULL, pk, npk, use_bias ? bias : NULL, act, NULL, y2,
                                   NULL);
    CHECK(st == MTE_OK && guard_ok(y2, ny) && memcmp(y, y2, (size_t)ny * sizeof(float)) == 0,
          "%s forward_packed status %d differs from forward", what, st);
    if (ny > 0 && H * W > 0) { /* (an empty input needs no weights: y = act(bias)) */
      int32_t mr;
      memcpy(&mr, (const char *)pk + 4, 4); /* the header's MR: a layout this ISA can't read */
      mr ^= 1;
      memcpy((char *)pk + 4, &mr, 4);
      CHECK(mte_conv2d_forward_packed(&d, x, NULL, pk, npk, NULL, act, NULL, y2, NULL) ==
                MTE_EINVAL, "%s forward_packed: foreign layout refused", what);
      CHECK(mte_conv2d_forward_packed(&d, x, NULL, NULL, 0, NULL, act, NULL, y2, NULL) ==
                MTE_EINVAL, "%s forward_packed: no weights", what);
    }
    free(pk);
    free(y2);
  } else if (K > 0 && Cg * kh * kw > 0) {
    CHECK(mte_conv2d_pack_weight(&d, w, x, 1) == MTE_EUNSUPPORTED, "%s: nothing to pack", what);
  }
  free(y);

  /* backward passes with a grad_y of (Ho + dho) x (Wo + dwo) */
  d.out_h = Ho = d.out_h + dho < 0 ? 0 : d.out_h + dho;
  d.out_w = Wo = d.out_w + dwo < 0 ? 0 : d.out_w + dwo;
  ny = N * K * Ho * Wo;
  float *gy = buffer(ny, 1), *gx = buffer(nx, 0), *gw = buffer(nw, 0);
  double *rx = (double *)calloc((size_t)nx + 1, sizeof(double));
  double *mx = (double *)calloc((size_t)nx + 1, sizeof(double));
  double *rw = (double *)calloc((size_t)nw + 1, sizeof(double));
  double *mw = (double *)calloc((size_t)nw + 1, sizeof(double));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < K; ++o)
      for (int64_t r = 0; r < Ho; ++r)
        for (int64_t s = 0; s < Wo; ++s) {
          double g = gy[((n * K + o) * Ho + r) * Wo + s];
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                int64_t ci = o / Kg * Cg + c, ih = r * d.stride_h - d.pad_top + i * d.dilation_h,
                        iw = s * d.stride_w - d.pad_left + j * d.dilation_w;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                int64_t xi = ((n * C + ci) * H + ih) * W + iw;
                int64_t wi = ((o * Cg + c) * kh + i) * kw + j;
                rx[xi] += w[wi] * g;
                mx[xi] += fabs(w[wi] * g);
                rw[wi] += x[xi] * g;
                mw[wi] += fabs(x[xi] * g);
              }
        }
  st = mte_conv2d_backward_input(&d, gy, w, gx, NULL);
  bad = st != MTE_OK || !guard_ok(gx, nx);
  CHECK(!bad, "%s backward_input status %d / guard", what, st);
  for (int64_t t = 0; t < nx && !bad; ++t)
    if (!close_enough(gx[t], rx[t], mx[t], Kg * kh * kw)) {
      CHECK(0, "%s backward_input gx[%lld] = %g, expected %g", what, (long long)t, gx[t], rx[t]);
      bad = 1;
    }
  if (!bad) CHECK(1, "ok");
  st = mte_conv2d_backward_weight(&d, gy, x, gw, NULL);
  bad = st != MTE_OK || !guard_ok(gw, nw);
  CHECK(!bad, "%s backward_weight status %d / guard", what, st);
  for (int64_t t = 0; t < nw && !bad; ++t)
    if (!close_enough(gw[t], rw[t], mw[t], N * Ho * Wo)) {
      CHECK(0, "%s backward_weight gw[%lld] = %g, expected %g", what, (long long)t, gw[t],
            rw[t]);
      bad = 1;
    }
  if (!bad) CHECK(1, "ok");
  free(gy), free(gx), free(gw), free(rx), free(mx), free(rw), free(mw);
  free(x), free(w), free(bias);
}

static mte_conv2d_desc desc(int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, int64_t kh,
                            int64_t kw, int64_t sh, int64_t sw, int64_t pt, int64_t pb,
                            int64_t pl, int64_t pr, int64_t dh, int64_t dw, int64_t G) {
  mte_conv2d_desc d = {N, C, H, W, K, kh, kw, 0, 0, sh, sw, pt, pb, pl, pr, dh, dw, G};
  return d;
}

static void fixed_cases(void) {
  const mte_conv2d_desc f[] = {
      desc(1, 3, 5, 5, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1),      /* plain 3x3 same */
      desc(2, 8, 9, 7, 16, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1),     /* 1x1: direct GEMM */
      desc(1, 8, 9, 7, 16, 1, 1, 1, 1, 0, 1, 0, 2, 1, 1, 1),     /* 1x1 padded: im2col */
      desc(2, 6, 11, 13, 9, 1, 1, 2, 3, 0, 0, 0, 0, 1, 1, 3),    /* 1x1 strided, groups */
      desc(1, 64, 9, 9, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1),    /* K = 576 > KC */
      desc(1, 4, 6, 6, 200, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1),    /* 200 outputs > MC */
      desc(1, 2, 37, 41, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1),    /* 1517 pixels > block */
      desc(3, 5, 4, 4, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1),      /* tiny images, batch */
      desc(2, 30, 5, 5, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1),     /* bwd weight P > KC */
      desc(2, 6, 8, 8, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 6),      /* depthwise */
      desc(1, 4, 9, 9, 8, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, 4),      /* depthwise x2 */
      desc(1, 4, 9, 9, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4),     /* 6 outputs per group */
      desc(1, 3, 10, 12, 4, 3, 2, 2, 1, 0, 3, 2, 0, 2, 3, 1),    /* asymmetric everything */
      desc(1, 2, 3, 3, 2, 7, 7, 1, 1, 3, 3, 3, 3, 1, 1, 1),      /* kernel > image */
      desc(1, 2, 1, 1, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1),      /* 1 pixel */
      desc(0, 3, 5, 5, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1),      /* empty batch */
      desc(2, 0, 5, 5, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1),      /* no input channels */
      desc(2, 3, 5, 5, 0, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1),      /* no output channels */
      desc(2, 3, 0, 4, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1),      /* zero-height image */
      desc(1, 2, 3, 3, 6, 3, 3, 1, 1, 300, 290, 301, 280, 200, 190, 1), /* no padded copy */
  };
  for (size_t i = 0; i < sizeof f / sizeof *f; ++i)
    for (int act = 0; act < 3; ++act) check_case(&f[i], act, act != 1, act - 1, 1 - act);
}

/* big enough (> 128^3 multiply-adds) for the kernels to use several threads */
static void threaded_cases(void) {
  const mte_conv2d_desc f[] = {
      desc(2, 32, 16, 16, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1),
      desc(2, 32, 17, 17, 48, 3, 3, 2, 2, 1, 0, 0, 1, 1, 1, 1),  /* strided, asymmetric */
      desc(2, 64, 12, 12, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4),  /* groups */
      desc(4, 128, 8, 8, 256, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1),  /* 1x1 direct */
      desc(1, 96, 14, 14, 700, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1), /* 1x1, threads split K */
      desc(1, 40, 9, 9, 301, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1),   /* ... with a ragged share */
      desc(4, 64, 32, 32, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 64), /* depthwise */
      desc(1, 3, 48, 40, 16, 5, 5, 1, 1, 2, 2, 2, 2, 2, 2, 1),   /* dilated, many pixels */
      desc(16, 1, 32, 32, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1),  /* first layer: dW over images */
      desc(9, 2, 34, 34, 24, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, 1),   /* ... unpadded, odd batch */
  };
  for (size_t i = 0; i < sizeof f / sizeof *f; ++i)
    check_case(&f[i], (int)(i % 3), (int)(i % 2), (int)(i % 3) - 1, 0);
}

static void random_cases(int n) {
  static const int64_t dims[] = {0, 1, 2, 3, 5, 7, 11, 13};
  static const int64_t chans[] = {1, 2, 3, 5, 8, 17};
  for (int t = 0; t < n; ++t) {
    int64_t G = 1 + mte_test_pick(3);
    int64_t Cg = chans[mte_test_pick(6)], Kg = chans[mte_test_pick(6)];
    if (mte_test_pick(4) == 0) Cg = 1; /* depthwise-like */
    mte_conv2d_desc d = desc(mte_test_pick(3) + (t % 9 == 0 ? 0 : 1), G * Cg,
                             dims[mte_test_pick(8)], dims[mte_test_pick(8)], G * Kg,
                             1 + mte_test_pick(4), 1 + mte_test_pick(4), 1 + mte_test_pick(3),
                             1 + mte_test_pick(3), mte_test_pick(3), mte_test_pick(3),
                             mte_test_pick(3), mte_test_pick(3), 1 + mte_test_pick(2),
                             1 + mte_test_pick(2), G);
    check_case(&d, mte_test_pick(3), mte_test_pick(2), mte_test_pick(3) - 1,
               mte_test_pick(3) - 1);
  }
}

static void argument_tests(void) {
  float x[64], w[64], y[64];
  for (int i = 0; i < 64; ++i) x[i] = w[i] = 1.0f, y[i] = 5.0f;
  mte_conv2d_desc ok = desc(1, 2, 3, 3, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1);
  ok.out_h = ok.out_w = 3;
  CHECK(mte_conv2d_forward(&ok, x, w, NULL, 0, y, NULL) == MTE_OK, "valid call");
  for (int i = 0; i < 64; ++i) y[i] = 5.0f;
  mte_conv2d_desc b[12];
  for (int i = 0; i < 12; ++i) b[i] = ok;
  b[0].batch = -1;
  b[1].kernel_h = 0;
  b[2].stride_w = 0;
  b[3].dilation_h = 0;
  b[4].groups = 0;
  b[5].groups = 2, b[5].out_channels = 3; /* 3 % 2 */
  b[6].pad_left = -1;
  b[7].out_h = 4;                         /* wrong output size (forward) */
  b[8].in_w = (int64_t)1 << 31;           /* > 2^30 */
  b[9].batch = b[9].in_channels = b[9].in_h = b[9].in_w = (int64_t)1 << 30;
  b[10].out_channels = 0, b[10].groups = 1, b[10].in_channels = 4; /* w/x shape mismatch ok */
  b[11].groups = 3;                       /* 2 % 3 */
  for (int i = 0; i < 12; ++i) {
    if (i == 10) continue;
    CHECK(mte_conv2d_forward(&b[i], x, w, NULL, 0, y, NULL) != MTE_OK, "bad desc %d", i);
  }
  CHECK(mte_conv2d_forward(&b[9], x, w, NULL, 0, y, NULL) == MTE_EOVERFLOW, "overflow");
  CHECK(mte_conv2d_forward(NULL, x, w, NULL, 0, y, NULL) == MTE_EINVAL, "NULL desc");
  CHECK(mte_conv2d_forward(&ok, x, w, NULL, 99, y, NULL) == MTE_EINVAL, "bad activation");
  CHECK(mte_conv2d_forward(&ok, NULL, w, NULL, 0, y, NULL) == MTE_EINVAL, "x NULL");
  CHECK(mte_conv2d_forward(&ok, x, NULL, NULL, 0, y, NULL) == MTE_EINVAL, "w NULL");
  CHECK(mte_conv2d_forward(&ok, x, w, NULL, 0, NULL, NULL) == MTE_EINVAL, "y NULL");
  CHECK(mte_conv2d_backward_input(&b[0], x, w, y, NULL) == MTE_EINVAL, "bwd input bad");
  CHECK(mte_conv2d_backward_weight(&b[4], y, x, w, NULL) == MTE_EINVAL, "bwd weight bad");
  CHECK(mte_conv2d_backward_input(&ok, NULL, w, y, NULL) == MTE_EINVAL, "gy NULL");
  CHECK(mte_conv2d_backward_weight(&ok, x, NULL, y, NULL) == MTE_EINVAL, "x NULL (bwd w)");
  int untouched = 1;
  for (int i = 0; i < 64; ++i) untouched &= y[i] == 5.0f;
  CHECK(untouched, "rejected calls leave the output untouched");
  CHECK(mte_conv2d_output_size(5, 3, 1, 1, 1, 1) == 5, "same size");
  CHECK(mte_conv2d_output_size(2, 5, 1, 0, 0, 1) == -2, "negative (floor)");
  CHECK(mte_conv2d_output_size(4, 5, 2, 0, 0, 1) == 0, "floor(-2/2)+1 = 0");
  CHECK(mte_conv2d_output_size(5, 0, 1, 0, 0, 1) == INT64_MIN, "invalid kernel");
}

static void arena_tests(void) {
  mte_conv2d_desc d = desc(2, 16, 12, 12, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1);
  d.out_h = d.out_w = 12;
  float *x = buffer(2 * 16 * 144, 1), *w = buffer(24 * 16 * 9, 1), *y = buffer(2 * 24 * 144, 0);
  float *gx = buffer(2 * 16 * 144, 0), *gw = buffer(24 * 16 * 9, 0);
  mte_arena *a = mte_arena_create(0);
  size_t peak1 = 0;
  for (int it = 0; it < 4; ++it) {
    CHECK(mte_conv2d_forward(&d, x, w, NULL, 0, y, a) == MTE_OK, "fwd with arena");
    CHECK(mte_conv2d_backward_input(&d, y, w, gx, a) == MTE_OK, "bwd input with arena");
    CHECK(mte_conv2d_backward_weight(&d, y, x, gw, a) == MTE_OK, "bwd weight with arena");
    if (it == 0) peak1 = mte_arena_peak_bytes(a);
    CHECK(mte_arena_used(a) == 0, "arena reset after the call");
  }
  CHECK(peak1 > 0 && mte_arena_peak_bytes(a) == peak1, "peak stable: %zu then %zu", peak1,
        mte_arena_peak_bytes(a));
  mte_arena_destroy(a);
  mte_default_arena_release();
  mte_conv2d_forward(&d, x, w, NULL, 0, y, NULL);
  size_t p1 = mte_default_arena_peak_bytes();
  for (int it = 0; it < 3; ++it) mte_conv2d_forward(&d, x, w, NULL, 0, y, NULL);
  CHECK(p1 > 0 && mte_default_arena_peak_bytes() == p1, "default arena peak stable");
  free(x), free(w), free(y), free(gx), free(gw);
}

/* two threads convolving at once: one gets the default arena, the other a private one */
typedef struct job { const mte_conv2d_desc *d; const float *x, *w; float *y; int st; } job;
static void *run_job(void *p) {
  job *j = (job *)p;
  for (int it = 0; it < 20 && j->st == MTE_OK; ++it)
    j->st = mte_conv2d_forward(j->d, j->x, j->w, NULL, MTE_ACT_RELU, j->y, NULL);
  return NULL;
}
static void concurrency_tests(void) {
  mte_conv2d_desc d = desc(1, 8, 20, 20, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1);
  d.out_h = d.out_w = 20;
  const int64_t ny = 16 * 400;
  float *x = buffer(8 * 400, 1), *w = buffer(16 * 72, 1), *ref = buffer(ny, 0);
  mte_conv2d_forward(&d, x, w, NULL, MTE_ACT_RELU, ref, NULL);
  job jobs[2];
  pthread_t th[2];
  for (int i = 0; i < 2; ++i) {
    jobs[i] = (job){&d, x, w, buffer(ny, 0), MTE_OK};
    pthread_create(&th[i], NULL, run_job, &jobs[i]);
  }
  for (int i = 0; i < 2; ++i) {
    pthread_join(th[i], NULL);
    CHECK(jobs[i].st == MTE_OK && memcmp(jobs[i].y, ref, (size_t)ny * sizeof(float)) == 0,
          "concurrent caller %d", i);
    free(jobs[i].y);
  }
  free(x), free(w), free(ref);
}

int main(int argc, char **argv) {
  int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  char isas[256];
  snprintf(isas, sizeof isas, "%s", mte_compiled_isas());
  printf("test_conv: compiled ISAs: %s; openmp: %d\n", isas, mte_has_openmp());
  argument_tests();
  for (char *name = strtok(isas, " "); name; name = strtok(NULL, " ")) {
    if (!mte_isa_available(name)) {
      printf("  %s: not supported by this CPU, skipped\n", name);
      continue;
    }
    CHECK(mte_set_isa(name) == MTE_OK, "set_isa %s", name);
    int threads[] = {1, 2, 5};
    int nthreads = mte_has_openmp() && !quick ? 3 : 1;
    for (int t = 0; t < nthreads; ++t) {
      mte_set_num_threads(threads[t]);
      char label[64];
      snprintf(label, sizeof label, "%s, %d threads", name, threads[t]);
      g_label = label;
      int before = mte_test_failed;
      fixed_cases();
      threaded_cases();
      random_cases(quick ? 25 : (t == 0 ? 200 : 60));
      printf("  %-22s %s\n", label, mte_test_failed == before ? "ok" : "FAILED");
    }
  }
  mte_set_isa("auto");
  mte_set_num_threads(2);
  arena_tests();
  concurrency_tests();
  return mte_test_summary(quick ? "test_conv --quick" : "test_conv");
}
