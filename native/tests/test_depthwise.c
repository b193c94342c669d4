/*
 * test_depthwise.c - mte_depthwise3x3 (and its backward) and the general mte_depthwise
 * (K 3/5/7 and a few others, stride 1/2, every padding 0..K-1, H and W 1..33, C in
 * {1, 3, 8, 17, 32}, each activation) against naive loops in double,
 * for every ISA this machine can run: every H, W in 1..20 with both strides, C up to 17,
 * bias or none, every activation (ReLU / ReLU6 in the kernels, GELU, SiLU, hardswish by
 * the fused epilogue on each plane), 1 and 3 threads, a few large planes; buffers are sized
 * exactly (ASan sees any over-read) and followed by sentinels (any over-write is caught),
 * and planes placed against an unmapped page catch over-reads by vector loads too (masked
 * loads are invisible to ASan).
 *
 *   test_depthwise           full run
 *   test_depthwise --quick   fewer shapes (for qemu)
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mte.h"
#include "mte_test.h"

#define SENTINEL 12345.0f
#define GUARD 64

static const char *g_isa = "";
static int g_quick = 0;

static float *rand_buf(size_t n) {
  float *p = (float *)malloc((n ? n : 1) * sizeof(float));
  for (size_t i = 0; i < n; ++i) p[i] = mte_test_uniform();
  return p;
}

/* n floats of output + GUARD sentinels after them */
static float *out_buf(size_t n) {
  float *p = (float *)malloc((n + GUARD) * sizeof(float));
  for (size_t i = 0; i < n + GUARD; ++i) p[i] = SENTINEL;
  return p;
}

static int guard_ok(const float *p, size_t n) {
  for (size_t i = n; i < n + GUARD; ++i)
    if (p[i] != SENTINEL) return 0;
  return 1;
}

static double act_ref(double v, int act) {
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

static float xat(const float *x, int64_t H, int64_t W, int64_t h, int64_t w) {
  return (h >= 0 && h < H && w >= 0 && w < W) ? x[h * W + w] : 0.0f;
}

static void check_forward(int64_t N, int64_t C, int64_t H, int64_t W, int stride, int use_bias,
                          int act) {
  const int64_t Ho = mte_depthwise3x3_output_size(H, stride);
  const int64_t Wo = mte_depthwise3x3_output_size(W, stride);
  const size_t nx = (size_t)(N * C * H * W), ny = (size_t)(N * C * Ho * Wo);
  float *x = rand_buf(nx), *w = rand_buf((size_t)C * 9), *b = rand_buf((size_t)C);
  for (size_t i = 0; i < nx; ++i) x[i] *= 4.0f; /* reach the ReLU6 clamp sometimes */
  float *y = out_buf(ny);
  int st = mte_depthwise3x3(N, C, H, W, stride, x, w, use_bias ? b : NULL, act, y);
  CHECK(st == MTE_OK, "[%s] status %d", g_isa, st);
  int bad = 0;
  for (int64_t n = 0; n < N && !bad; ++n)
    for (int64_t c = 0; c < C && !bad; ++c) {
      const float *xp = x + (n * C + c) * H * W;
      const float *wc = w + c * 9;
      for (int64_t r = 0; r < Ho && !bad; ++r)
        for (int64_t s = 0; s < Wo && !bad; ++s) {
          double acc = use_bias ? b[c] : 0.0, mag = fabs(acc);
          for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) {
              double t = (double)wc[3 * i + j] *
                         xat(xp, H, W, r * stride + i - 1, s * stride + j - 1);
              acc += t;
              mag += fabs(t);
            }
          double ref = act_ref(acc, act);
          float got = y[((n * C + c) * Ho + r) * Wo + s];
          /* rounding through a <= 1.5-Lipschitz activation, plus its own float32 error */
          if (!(fabs(got - ref) <= 1.5e-5 * mag + 1e-6 + 3e-7 * fabs(ref))) {
            CHECK(0, "[%s] N=%lld C=%lld H=%lld W=%lld stride=%d bias=%d act=%d at "
                     "(%lld,%lld,%lld,%lld): got %g want %g",
                  g_isa, (long long)N, (long long)C, (long long)H, (long long)W, stride, use_bias,
                  act, (long long)n, (long long)c, (long long)r, (long long)s, got, ref);
            bad = 1;
          }
        }
    }
  if (!bad) CHECK(1, " ");
  CHECK(guard_ok(y, ny), "[%s] forward wrote past y (H=%lld W=%lld stride=%d)", g_isa,
        (long long)H, (long long)W, stride);
  free(x), free(w), free(b), free(y);
}

static void check_backward(int64_t N, int64_t C, int64_t H, int64_t W, int stride) {
  const int64_t Ho = mte_depthwise3x3_output_size(H, stride);
  const int64_t Wo = mte_depthwise3x3_output_size(W, stride);
  const size_t nx = (size_t)(N * C * H * W), ny = (size_t)(N * C * Ho * Wo);
  float *x = rand_buf(nx), *w = rand_buf((size_t)C * 9), *gy = rand_buf(ny);
  float *gx = out_buf(nx), *gw = out_buf((size_t)C * 9);
  int st = mte_depthwise3x3_backward_input(N, C, H, W, stride, gy, w, gx);
  CHECK(st == MTE_OK, "[%s] backward_input status %d", g_isa, st);
  st = mte_depthwise3x3_backward_weight(N, C, H, W, stride, gy, x, gw);
  CHECK(st == MTE_OK, "[%s] backward_weight status %d", g_isa, st);
  /* reference: scatter every output gradient through the 9 taps, in double */
  double *rx = (double *)calloc(nx ? nx : 1, sizeof(double));
  double *mx = (double *)calloc(nx ? nx : 1, sizeof(double));
  double rw[17 * 9 + 9 * 64] = {0}, mw[17 * 9 + 9 * 64] = {0};
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t r = 0; r < Ho; ++r)
        for (int64_t s = 0; s < Wo; ++s) {
          double g = gy[((n * C + c) * Ho + r) * Wo + s];
          for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) {
              int64_t h = r * stride + i - 1, q = s * stride + j - 1;
              if (h < 0 || h >= H || q < 0 || q >= W) continue;
              size_t k = (size_t)(((n * C + c) * H + h) * W + q);
              rx[k] += g * w[c * 9 + 3 * i + j];
              mx[k] += fabs(g * w[c * 9 + 3 * i + j]);
              rw[c * 9 + 3 * i + j] += g * x[k];
              mw[c * 9 + 3 * i + j] += fabs(g * x[k]);
            }
        }
  int bad = 0;
  for (size_t k = 0; k < nx && !bad; ++k)
    if (!(fabs(gx[k] - rx[k]) <= 1e-5 * mx[k] + 1e-6)) {
      CHECK(0, "[%s] grad_x N=%lld C=%lld H=%lld W=%lld stride=%d at %zu: got %g want %g", g_isa,
            (long long)N, (long long)C, (long long)H, (long long)W, stride, k, gx[k], rx[k]);
      bad = 1;
    }
  for (int64_t k = 0; k < C * 9 && !bad; ++k)
    if (!(fabs(gw[k] - rw[k]) <= 1e-5 * mw[k] + 1e-6)) {
      CHECK(0, "[%s] grad_w N=%lld C=%lld H=%lld W=%lld stride=%d at %lld: got %g want %g",
            g_isa, (long long)N, (long long)C, (long long)H, (long long)W, stride, (long long)k,
            gw[k], rw[k]);
      bad = 1;
    }
  if (!bad) CHECK(1, " ");
  CHECK(guard_ok(gx, nx) && guard_ok(gw, (size_t)C * 9), "[%s] backward wrote out of bounds",
        g_isa);
  free(x), free(w), free(gy), free(gx), free(gw), free(rx), free(mx);
}

/*
 * n floats placed against an inaccessible page (after the data if at_end, else before it):
 * a kernel reading one float too far -- even through a vector load -- crashes here.
 */
typedef struct guarded {
  void *map;
  size_t len;
  float *p;
} guarded;

static guarded guarded_alloc(size_t n, int at_end) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const size_t bytes = n * sizeof(float), data_pages = (bytes + page - 1) / page;
  guarded g = {NULL, (data_pages + 2) * page, NULL};
  g.map = mmap(NULL, g.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (g.map == MAP_FAILED) {
    g.map = NULL;
    return g;
  }
  unsigned char *base = (unsigned char *)g.map;
  mprotect(base, page, PROT_NONE);                          /* page before */
  mprotect(base + (data_pages + 1) * page, page, PROT_NONE); /* page after */
  g.p = at_end ? (float *)(base + (data_pages + 1) * page - bytes) : (float *)(base + page);
  return g;
}

static void check_guard_pages(void) {
  for (int at_end = 0; at_end <= 1; ++at_end)
    for (int stride = 1; stride <= 2; ++stride)
      for (int64_t H = 1; H <= 5; ++H)
        for (int64_t W = 1; W <= 40; ++W) {
          const int64_t Ho = mte_depthwise3x3_output_size(H, stride);
          const int64_t Wo = mte_depthwise3x3_output_size(W, stride);
          guarded gx = guarded_alloc((size_t)(H * W), at_end);
          guarded gy = guarded_alloc((size_t)(Ho * Wo), at_end);
          if (!gx.p || !gy.p) {
            CHECK(0, "mmap failed");
            return;
          }
          float w[9], b = 0.25f;
          for (int k = 0; k < 9; ++k) w[k] = mte_test_uniform();
          for (int64_t k = 0; k < H * W; ++k) gx.p[k] = mte_test_uniform();
          CHECK(mte_depthwise3x3(1, 1, H, W, stride, gx.p, w, &b, 0, gy.p) == MTE_OK, "status");
          int bad = 0;
          for (int64_t r = 0; r < Ho; ++r)
            for (int64_t s = 0; s < Wo; ++s) {
              double acc = b;
              for (int i = 0; i < 3; ++i)
                for (int j = 0; j < 3; ++j)
                  acc += (double)w[3 * i + j] *
                         xat(gx.p, H, W, r * stride + i - 1, s * stride + j - 1);
              bad |= !(fabs(gy.p[r * Wo + s] - acc) <= 1e-5 * (1 + fabs(acc)));
            }
          /* backward: the output buffer (guarded too) now holds a gradient */
          float gw[9], gref[9] = {0};
          for (int64_t k = 0; k < Ho * Wo; ++k) gy.p[k] = mte_test_uniform();
          bad |= mte_depthwise3x3_backward_weight(1, 1, H, W, stride, gy.p, gx.p, gw) != MTE_OK;
          for (int64_t r = 0; r < Ho; ++r)
            for (int64_t s = 0; s < Wo; ++s)
              for (int k = 0; k < 9; ++k)
                gref[k] += gy.p[r * Wo + s] *
                           xat(gx.p, H, W, r * stride + k / 3 - 1, s * stride + k % 3 - 1);
          for (int k = 0; k < 9; ++k) bad |= !(fabs(gw[k] - gref[k]) <= 1e-4 * (1 + fabs(gref[k])));
          float *dx = (float *)malloc((size_t)(H * W) * sizeof(float));
          bad |= mte_depthwise3x3_backward_input(1, 1, H, W, stride, gy.p, w, dx) != MTE_OK;
          free(dx);
          CHECK(!bad, "[%s] guarded H=%lld W=%lld stride=%d", g_isa, (long long)H, (long long)W,
                stride);
          munmap(gx.map, gx.len);
          munmap(gy.map, gy.len);
        }
}

/* ---------------------------------------------------------------- general K x K forward */

/* mte_depthwise against a plain scalar loop in double; y sized exactly + sentinels */
static void check_general(int64_t N, int64_t C, int64_t H, int64_t W, int K, int stride,
                          int pad, int use_bias, int act) {
  const int64_t Ho = mte_depthwise_output_size(H, K, stride, pad);
  const int64_t Wo = mte_depthwise_output_size(W, K, stride, pad);
  CHECK(Ho >= 0 && Wo >= 0, "output size");
  const size_t nx = (size_t)(N * C * H * W), ny = (size_t)(N * C * Ho * Wo);
  float *x = rand_buf(nx), *w = rand_buf((size_t)C * K * K), *b = rand_buf((size_t)C);
  for (size_t i = 0; i < nx; ++i) x[i] *= 4.0f; /* reach the ReLU6 clamp sometimes */
  float *y = out_buf(ny);
  int st = mte_depthwise(N, C, H, W, K, stride, pad, x, w, use_bias ? b : NULL, act, y);
  CHECK(st == MTE_OK, "[%s] status %d", g_isa, st);
  int bad = 0;
  for (int64_t n = 0; n < N && !bad; ++n)
    for (int64_t c = 0; c < C && !bad; ++c) {
      const float *xp = x + (n * C + c) * H * W;
      const float *wc = w + c * K * K;
      for (int64_t r = 0; r < Ho && !bad; ++r)
        for (int64_t s = 0; s < Wo && !bad; ++s) {
          double acc = use_bias ? b[c] : 0.0, mag = fabs(acc);
          for (int i = 0; i < K; ++i)
            for (int j = 0; j < K; ++j) {
              double t = (double)wc[K * i + j] *
                         xat(xp, H, W, r * stride + i - pad, s * stride + j - pad);
              acc += t;
              mag += fabs(t);
            }
          double ref = act_ref(acc, act);
          float got = y[((n * C + c) * Ho + r) * Wo + s];
          if (!(fabs(got - ref) <= 1e-5 * mag + 1e-6)) {
            CHECK(0, "[%s] general N=%lld C=%lld H=%lld W=%lld K=%d stride=%d pad=%d bias=%d "
                     "act=%d at (%lld,%lld,%lld,%lld): got %g want %g",
                  g_isa, (long long)N, (long long)C, (long long)H, (long long)W, K, stride, pad,
                  use_bias, act, (long long)n, (long long)c, (long long)r, (long long)s, got,
                  ref);
            bad = 1;
          }
        }
    }
  if (!bad) CHECK(1, " ");
  CHECK(guard_ok(y, ny), "[%s] general wrote past y (H=%lld W=%lld K=%d stride=%d pad=%d)",
        g_isa, (long long)H, (long long)W, K, stride, pad);
  free(x), free(w), free(b), free(y);
}

static void run_general(void) {
  static const int64_t chans[] = {1, 3, 8, 17, 32};
  static const int ks[] = {3, 5, 7};
  const int step = g_quick ? 4 : 1;
  for (int ki = 0; ki < 3; ++ki)
    for (int stride = 1; stride <= 2; ++stride)
      for (int pad = 0; pad < ks[ki]; ++pad)
        for (int64_t d = 1; d <= 33; d += step) {
          /* every H with a random W, every W with a random H (sizes below K included) */
          const int64_t other = 1 + mte_test_pick(33);
          for (int turn = 0; turn < 2; ++turn) {
            const int64_t C = chans[mte_test_pick(5)], N = 1 + mte_test_pick(2);
            check_general(N, C, turn ? other : d, turn ? d : other, ks[ki], stride, pad,
                          mte_test_pick(2), mte_test_pick(3));
          }
        }
  /* every activation on one shape per (K, stride); the run-time-K loop (K 1, 2, 4, 9);
   * planes wider than several vectors (EfficientNet-Lite0's) */
  for (int ki = 0; ki < 3; ++ki)
    for (int stride = 1; stride <= 2; ++stride)
      for (int act = 0; act < 3; ++act)
        check_general(2, 17, 19, 23, ks[ki], stride, ks[ki] / 2, 1, act);
  static const int odd[][2] = {{1, 0}, {2, 1}, {2, 0}, {4, 2}, {4, 3}, {9, 4}, {11, 0}};
  for (int q = 0; q < 7; ++q)
    for (int stride = 1; stride <= 2; ++stride)
      for (int64_t d = 1; d <= 21; d += g_quick ? 5 : 2)
        check_general(1, 3, d, 22 - d, odd[q][0], stride, odd[q][1], 1, mte_test_pick(3));
  static const int64_t big[][4] = {{3, 56, 56, 5}, {5, 14, 14, 5}, {2, 33, 67, 7},
                                   {2, 112, 40, 3}, {4, 7, 7, 5}, {1, 9, 131, 5}};
  const int nbig = g_quick ? 3 : (int)(sizeof big / sizeof big[0]);
  for (int b = 0; b < nbig; ++b)
    for (int stride = 1; stride <= 2; ++stride)
      check_general(1, big[b][0], big[b][1], big[b][2], (int)big[b][3], stride,
                    (int)big[b][3] / 2, 1, MTE_ACT_RELU6);
}

static void check_general_errors(void) {
  float x[16] = {0}, w[49] = {0}, y[16];
  for (int i = 0; i < 16; ++i) y[i] = SENTINEL;
  CHECK(mte_depthwise(1, 1, 4, 4, 3, 3, 1, x, w, NULL, 0, y) == MTE_EINVAL, "stride 3");
  CHECK(mte_depthwise(1, 1, 4, 4, 3, 1, 3, x, w, NULL, 0, y) == MTE_EINVAL, "pad = K");
  CHECK(mte_depthwise(1, 1, 4, 4, 3, 1, -1, x, w, NULL, 0, y) == MTE_EINVAL, "pad < 0");
  CHECK(mte_depthwise(1, 1, 4, 4, 0, 1, 0, x, w, NULL, 0, y) == MTE_EINVAL, "K = 0");
  CHECK(mte_depthwise(1, 1, 4, 4, 32, 1, 0, x, w, NULL, 0, y) == MTE_EINVAL, "K = 32");
  CHECK(mte_depthwise(1, 1, 4, 4, 3, 1, 1, x, w, NULL, 7, y) == MTE_EINVAL, "activation");
  CHECK(mte_depthwise(1, 1, 4, 4, 3, 1, 1, NULL, w, NULL, 0, y) == MTE_EINVAL, "NULL x");
  CHECK(mte_depthwise(1, 1, 4, 4, 3, 1, 1, x, NULL, NULL, 0, y) == MTE_EINVAL, "NULL w");
  CHECK(mte_depthwise(1, 1, 4, 4, 3, 1, 1, x, w, NULL, 0, NULL) == MTE_EINVAL, "NULL y");
  CHECK(mte_depthwise(-1, 1, 4, 4, 3, 1, 1, x, w, NULL, 0, y) == MTE_EINVAL, "negative N");
  CHECK(mte_depthwise(INT64_MAX / 2, 4, 1 << 20, 1 << 20, 3, 1, 1, x, w, NULL, 0, y) ==
            MTE_EOVERFLOW, "overflow");
  /* empty outputs: nothing read or written */
  CHECK(mte_depthwise(1, 1, 2, 2, 7, 1, 0, NULL, NULL, NULL, 0, NULL) == MTE_OK, "H < K");
  CHECK(mte_depthwise(0, 3, 5, 5, 5, 2, 2, NULL, NULL, NULL, 0, NULL) == MTE_OK, "N = 0");
  for (int i = 0; i < 16; ++i) CHECK(y[i] == SENTINEL, "output written on error");
  CHECK(mte_depthwise_output_size(7, 5, 1, 2) == 7 && mte_depthwise_output_size(14, 5, 2, 2) == 7 &&
            mte_depthwise_output_size(3, 7, 1, 1) == 0 && mte_depthwise_output_size(0, 3, 1, 1) == 0 &&
            mte_depthwise_output_size(8, 3, 3, 1) == -1 && mte_depthwise_output_size(8, 3, 1, 3) == -1 &&
            mte_depthwise_output_size(9, 7, 2, 0) == 2,
        "general output sizes");
}

static void run_shapes(void) {
  check_guard_pages();
  const int step = g_quick ? 3 : 1;
  for (int stride = 1; stride <= 2; ++stride)
    for (int64_t H = 1; H <= 20; H += step)
      for (int64_t W = 1; W <= 20; ++W) {
        int64_t C = 1 + mte_test_pick(17), N = 1 + mte_test_pick(2);
        int act = mte_test_pick(4) == 0 ? 1 + mte_test_pick(MTE_ACT_HARDSWISH) : MTE_ACT_NONE;
        check_forward(N, C, H, W, stride, mte_test_pick(2), act);
        if ((H + W) % (g_quick ? 4 : 2) == 0) check_backward(N, C, H, W, stride);
      }
  /* wider planes: several full vector blocks, odd tails, the shapes */
  static const int64_t big[][3] = {{3, 56, 56}, {5, 14, 14}, {2, 33, 67}, {1, 7, 131},
                                   {2, 112, 40}, {1, 2, 97}};
  const int nbig = g_quick ? 3 : (int)(sizeof big / sizeof big[0]);
  for (int b = 0; b < nbig; ++b)
    for (int stride = 1; stride <= 2; ++stride) {
      check_forward(1, big[b][0], big[b][1], big[b][2], stride, 1, MTE_ACT_NONE);
      check_forward(2, big[b][0], big[b][1], big[b][2], stride, 0, MTE_ACT_RELU6);
      check_forward(1, big[b][0], big[b][1], big[b][2], stride, 1, MTE_ACT_SILU);
      check_forward(1, big[b][0], big[b][1], big[b][2], stride, 0, MTE_ACT_HARDSWISH);
      check_backward(2, big[b][0], big[b][1], big[b][2], stride);
    }
}

static void check_errors(void) {
  float x[16] = {0}, w[9] = {0}, y[16];
  for (int i = 0; i < 16; ++i) y[i] = SENTINEL;
  CHECK(mte_depthwise3x3(1, 1, 2, 2, 3, x, w, NULL, 0, y) == MTE_EINVAL, "stride 3");
  CHECK(mte_depthwise3x3(1, 1, 2, 2, 0, x, w, NULL, 0, y) == MTE_EINVAL, "stride 0");
  CHECK(mte_depthwise3x3(-1, 1, 2, 2, 1, x, w, NULL, 0, y) == MTE_EINVAL, "negative N");
  CHECK(mte_depthwise3x3(1, 1, 2, -2, 1, x, w, NULL, 0, y) == MTE_EINVAL, "negative W");
  CHECK(mte_depthwise3x3(1, 1, 2, 2, 1, NULL, w, NULL, 0, y) == MTE_EINVAL, "NULL x");
  CHECK(mte_depthwise3x3(1, 1, 2, 2, 1, x, NULL, NULL, 0, y) == MTE_EINVAL, "NULL w");
  CHECK(mte_depthwise3x3(1, 1, 2, 2, 1, x, w, NULL, 0, NULL) == MTE_EINVAL, "NULL y");
  CHECK(mte_depthwise3x3(1, 1, 2, 2, 1, x, w, NULL, 7, y) == MTE_EINVAL, "bad activation");
  CHECK(mte_depthwise3x3(INT64_MAX / 2, 4, 1 << 20, 1 << 20, 1, x, w, NULL, 0, y) ==
            MTE_EOVERFLOW, "overflow");
  CHECK(mte_depthwise3x3_backward_input(1, 1, 2, 2, 5, x, w, y) == MTE_EINVAL, "bwd stride");
  CHECK(mte_depthwise3x3_backward_weight(1, 1, 2, 2, 1, x, x, NULL) == MTE_EINVAL, "bwd NULL");
  /* zero sizes: nothing read or written (NULL buffers allowed) */
  CHECK(mte_depthwise3x3(0, 3, 5, 5, 1, NULL, NULL, NULL, 0, NULL) == MTE_OK, "N=0");
  CHECK(mte_depthwise3x3(2, 3, 0, 5, 2, NULL, NULL, NULL, 0, NULL) == MTE_OK, "H=0");
  CHECK(mte_depthwise3x3_backward_input(1, 2, 3, 0, 1, NULL, NULL, NULL) == MTE_OK, "W=0");
  float gw[18];
  for (int i = 0; i < 18; ++i) gw[i] = SENTINEL;
  CHECK(mte_depthwise3x3_backward_weight(0, 2, 3, 3, 1, NULL, NULL, gw) == MTE_OK && gw[17] == 0,
        "N=0 gives a zero weight gradient");
  for (int i = 0; i < 16; ++i) CHECK(y[i] == SENTINEL, "output written on error");
  CHECK(mte_depthwise3x3_output_size(0, 1) == 0 && mte_depthwise3x3_output_size(7, 2) == 4 &&
            mte_depthwise3x3_output_size(8, 2) == 4 && mte_depthwise3x3_output_size(5, 3) == -1,
        "output sizes");
}

int main(int argc, char **argv) {
  g_quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  char isas[256];
  snprintf(isas, sizeof isas, "%s", mte_compiled_isas());
  printf("test_depthwise: compiled ISAs: %s%s\n", isas, g_quick ? " (quick)" : "");
  check_errors();
  check_general_errors();
  for (char *name = strtok(isas, " "); name; name = strtok(NULL, " ")) {
    if (!mte_isa_available(name)) {
      printf("  %s: not supported by this CPU, skipped\n", name);
      continue;
    }
    CHECK(mte_set_isa(name) == MTE_OK, "set_isa %s", name);
    g_isa = name;
    int threads[2] = {1, 3};
    for (int t = 0; t < (g_quick ? 1 : 2); ++t) {
      mte_set_num_threads(threads[t]);
      run_shapes();
      run_general();
    }
    printf("  %s: done\n", name);
  }
  mte_set_isa("auto");
  return mte_test_summary("test_depthwise");
}
