/*
 * test_pool.c - max / average pooling (forward and backward) against naive loops, over
 * random window parameters (kernel 1..4, stride 1..3, padding up to kernel/2, dilation
 * 1..2, ceil_mode), H, W in 1..20, C up to 17, the 2x2 / 3x3 stride-2 fast paths, ties,
 * NaN and -inf, 1 and 3 threads, every ISA; exact-size buffers with sentinels behind; max
 * pooling with and without indices gives the same output.
 *
 *   test_pool           full run
 *   test_pool --quick   fewer cases (for qemu)
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mte.h"
#include "mte_test.h"

#define SENTINEL 4321.0f
#define GUARD 32

static const char *g_isa = "";

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

/* values with many ties, some NaN, -inf, +inf and both zeros */
static float special_value(int mode) {
  int k = mte_test_pick(100);
  if (mode && k < 3) return NAN;
  if (mode && k < 6) return -INFINITY;
  if (mode && k < 8) return INFINITY;
  if (mode && k < 14) return -0.0f;
  if (mode) return (float)(mte_test_pick(5) - 2);
  return mte_test_uniform();
}

static int same_float(float a, float b) { return (isnan(a) && isnan(b)) || a == b; }

/* PyTorch's scan: start at the first real tap, take v if v > best or v is NaN */
static void ref_max(const mte_pool2d_params *p, const float *x, int64_t H, int64_t W, int64_t r,
                    int64_t s, float *out, int64_t *idx) {
  int64_t h0 = r * p->stride_h - p->pad_h, w0 = s * p->stride_w - p->pad_w;
  float best = -INFINITY;
  int64_t bi = -1;
  for (int64_t i = 0; i < p->kernel_h; ++i)
    for (int64_t j = 0; j < p->kernel_w; ++j) {
      int64_t h = h0 + i * p->dilation_h, w = w0 + j * p->dilation_w;
      if (h < 0 || h >= H || w < 0 || w >= W) continue;
      float v = x[h * W + w];
      if (bi < 0) bi = h * W + w;
      if (v > best || isnan(v)) best = v, bi = h * W + w;
    }
  if (bi < 0) { /* no real tap (large dilation): the nearest element, as documented */
    int64_t h = h0 < 0 ? 0 : h0 >= H ? H - 1 : h0, w = w0 < 0 ? 0 : w0 >= W ? W - 1 : w0;
    bi = h * W + w;
  }
  *out = best;
  *idx = bi;
}

static int64_t ref_count(int64_t o, int64_t size, int64_t k, int64_t st, int64_t pad, int incl) {
  int64_t start = o * st - pad, end = start + k < size + pad ? start + k : size + pad;
  if (incl) return end - start;
  return (end < size ? end : size) - (start > 0 ? start : 0);
}

static float ref_div(const mte_pool2d_params *p, int64_t H, int64_t W, int64_t r, int64_t s) {
  if (p->divisor_override) return (float)p->divisor_override;
  int64_t d = ref_count(r, H, p->kernel_h, p->stride_h, p->pad_h, p->count_include_pad) *
              ref_count(s, W, p->kernel_w, p->stride_w, p->pad_w, p->count_include_pad);
  return (float)(d > 1 ? d : 1);
}

static void check_case(const mte_pool2d_params *p, int64_t N, int64_t C, int64_t H, int64_t W,
                       int special) {
  const int64_t Ho = mte_pool2d_output_size(H, p->kernel_h, p->stride_h, p->pad_h,
                                            p->dilation_h, p->ceil_mode);
  const int64_t Wo = mte_pool2d_output_size(W, p->kernel_w, p->stride_w, p->pad_w,
                                            p->dilation_w, p->ceil_mode);
  if (Ho <= 0 || Wo <= 0) return;
  const int64_t planes = N * C, L = Ho * Wo;
  const size_t nx = (size_t)(planes * H * W), ny = (size_t)(planes * L);
  float *x = (float *)malloc(nx * sizeof(float)), *gy = (float *)malloc(ny * sizeof(float));
  for (size_t k = 0; k < nx; ++k) x[k] = special_value(special);
  for (size_t k = 0; k < ny; ++k) gy[k] = mte_test_uniform();
  float *y = out_buf(ny), *gx = out_buf(nx);
  int64_t *ind = (int64_t *)malloc((ny + GUARD) * sizeof(int64_t));
  for (size_t k = 0; k < ny + GUARD; ++k) ind[k] = -77;
  char what[200];
  snprintf(what, sizeof what, "[%s] N=%lld C=%lld H=%lld W=%lld k=%lldx%lld s=%lldx%lld p=%lldx%lld "
           "d=%lldx%lld ceil=%d", g_isa, (long long)N, (long long)C, (long long)H, (long long)W,
           (long long)p->kernel_h, (long long)p->kernel_w, (long long)p->stride_h,
           (long long)p->stride_w, (long long)p->pad_h, (long long)p->pad_w,
           (long long)p->dilation_h, (long long)p->dilation_w, p->ceil_mode);

  /* max forward + backward */
  int st = mte_max_pool2d(p, N, C, H, W, x, y, ind);
  CHECK(st == MTE_OK, "%s max status %d", what, st);
  int bad = 0;
  for (int64_t q = 0; q < planes && !bad; ++q)
    for (int64_t r = 0; r < Ho && !bad; ++r)
      for (int64_t s = 0; s < Wo && !bad; ++s) {
        float want;
        int64_t wi;
        ref_max(p, x + q * H * W, H, W, r, s, &want, &wi);
        size_t k = (size_t)(q * L + r * Wo + s);
        if (!same_float(y[k], want) || ind[k] != wi) {
          CHECK(0, "%s max at (%lld,%lld,%lld): got %g@%lld want %g@%lld", what, (long long)q,
                (long long)r, (long long)s, y[k], (long long)ind[k], want, (long long)wi);
          bad = 1;
        }
      }
  CHECK(guard_ok(y, ny) && ind[ny] == -77, "%s max wrote past its outputs", what);
  { /* without indices (inference): the same y, nothing else written */
    float *y2 = out_buf(ny);
    st = mte_max_pool2d(p, N, C, H, W, x, y2, NULL);
    CHECK(st == MTE_OK, "%s max without indices: status %d", what, st);
    int same = 1; /* bit for bit: the sign of a zero maximum too (the first tap's) */
    for (size_t k = 0; k < ny; ++k)
      same &= same_float(y2[k], y[k]) && (isnan(y[k]) || signbit(y2[k]) == signbit(y[k]));
    CHECK(same && guard_ok(y2, ny), "%s max without indices differs", what);
    free(y2);
  }
  if (!bad) {
    st = mte_max_pool2d_backward(N, C, H, W, L, gy, ind, gx);
    CHECK(st == MTE_OK, "%s max backward status %d", what, st);
    double *ref = (double *)calloc(nx, sizeof(double));
    for (int64_t q = 0; q < planes; ++q)
      for (int64_t k = 0; k < L; ++k) ref[q * H * W + ind[q * L + k]] += gy[q * L + k];
    for (size_t k = 0; k < nx && !bad; ++k)
      if (fabs(gx[k] - ref[k]) > 1e-5 * (1 + fabs(ref[k]))) {
        CHECK(0, "%s max backward at %zu: got %g want %g", what, k, gx[k], ref[k]);
        bad = 1;
      }
    CHECK(guard_ok(gx, nx), "%s max backward wrote past gx", what);
    free(ref);
  }

  /* average (dilation 1 only) */
  if (p->dilation_h == 1 && p->dilation_w == 1 && !special) {
    for (size_t k = 0; k < ny + GUARD; ++k) y[k] = k < ny ? NAN : SENTINEL;
    st = mte_avg_pool2d(p, N, C, H, W, x, y);
    CHECK(st == MTE_OK, "%s avg status %d", what, st);
    for (int64_t q = 0; q < planes && !bad; ++q)
      for (int64_t r = 0; r < Ho && !bad; ++r)
        for (int64_t s = 0; s < Wo && !bad; ++s) {
          double sum = 0, mag = 0;
          for (int64_t i = 0; i < p->kernel_h; ++i)
            for (int64_t j = 0; j < p->kernel_w; ++j) {
              int64_t h = r * p->stride_h - p->pad_h + i, w = s * p->stride_w - p->pad_w + j;
              if (h < 0 || h >= H || w < 0 || w >= W) continue;
              sum += x[q * H * W + h * W + w];
              mag += fabs(x[q * H * W + h * W + w]);
            }
          double want = sum / ref_div(p, H, W, r, s);
          float got = y[q * L + r * Wo + s];
          if (!(fabs(got - want) <= 1e-6 * (1 + mag))) {
            CHECK(0, "%s avg at (%lld,%lld,%lld): got %g want %g", what, (long long)q,
                  (long long)r, (long long)s, got, want);
            bad = 1;
          }
        }
    CHECK(guard_ok(y, ny), "%s avg wrote past y", what);
    st = mte_avg_pool2d_backward(p, N, C, H, W, Ho, Wo, gy, gx);
    CHECK(st == MTE_OK, "%s avg backward status %d", what, st);
    double *ref = (double *)calloc(nx, sizeof(double));
    for (int64_t q = 0; q < planes; ++q)
      for (int64_t r = 0; r < Ho; ++r)
        for (int64_t s = 0; s < Wo; ++s) {
          double g = gy[q * L + r * Wo + s] / ref_div(p, H, W, r, s);
          for (int64_t i = 0; i < p->kernel_h; ++i)
            for (int64_t j = 0; j < p->kernel_w; ++j) {
              int64_t h = r * p->stride_h - p->pad_h + i, w = s * p->stride_w - p->pad_w + j;
              if (h >= 0 && h < H && w >= 0 && w < W) ref[q * H * W + h * W + w] += g;
            }
        }
    for (size_t k = 0; k < nx && !bad; ++k)
      if (fabs(gx[k] - ref[k]) > 1e-5 * (1 + fabs(ref[k]))) {
        CHECK(0, "%s avg backward at %zu: got %g want %g", what, k, gx[k], ref[k]);
        bad = 1;
      }
    CHECK(guard_ok(gx, nx), "%s avg backward wrote past gx", what);
    free(ref);
  }
  if (!bad) CHECK(1, " ");
  free(x), free(gy), free(y), free(gx), free(ind);
}

static void random_cases(int count) {
  for (int n = 0; n < count; ++n) {
    mte_pool2d_params p;
    memset(&p, 0, sizeof p);
    p.kernel_h = 1 + mte_test_pick(4), p.kernel_w = 1 + mte_test_pick(4);
    p.stride_h = 1 + mte_test_pick(3), p.stride_w = 1 + mte_test_pick(3);
    p.pad_h = mte_test_pick((int)(p.kernel_h / 2) + 1);
    p.pad_w = mte_test_pick((int)(p.kernel_w / 2) + 1);
    p.dilation_h = 1 + (mte_test_pick(4) == 0), p.dilation_w = 1 + (mte_test_pick(4) == 0);
    p.ceil_mode = mte_test_pick(2);
    p.count_include_pad = mte_test_pick(2);
    p.divisor_override = mte_test_pick(6) == 0 ? mte_test_pick(9) - 4 : 0;
    /* a quarter of the rows wide enough for whole 16-output vectors inside the row */
    int64_t H = 1 + mte_test_pick(20), W = 1 + mte_test_pick(mte_test_pick(4) ? 20 : 90);
    check_case(&p, 1 + mte_test_pick(2), 1 + mte_test_pick(17), H, W, mte_test_pick(3) == 0);
  }
}

static void fast_path_cases(int quick) {
  for (int k = 2; k <= 3; ++k)
    for (int pad = 0; pad <= k / 2; ++pad)
      for (int ceil = 0; ceil <= 1; ++ceil)
        for (int64_t H = 1; H <= 13; H += quick ? 4 : 1)
          for (int64_t W = 1; W <= 40; W += quick ? 5 : 1) {
            mte_pool2d_params p = {k, k, 2, 2, pad, pad, 1, 1, ceil, (int)(W % 2), 0};
            check_case(&p, 1, 2, H, W, (int)(H % 3 == 0));
          }
  mte_pool2d_params p = {2, 2, 2, 2, 0, 0, 1, 1, 0, 1, 0};
  check_case(&p, 4, 16, 26, 26, 0); /* the benchmark shape, smaller batch */
}

/* n floats against an inaccessible page (after them if at_end, else before): a kernel that
 * reads one float too far, even through a vector load, crashes */
static float *guarded(size_t n, int at_end, void **map, size_t *len) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes = n * sizeof(float);
  const size_t data_pages = (bytes + page - 1) / page;
  *len = (data_pages + 2) * page;
  unsigned char *base =
      (unsigned char *)mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return NULL;
  mprotect(base, page, PROT_NONE);
  mprotect(base + (data_pages + 1) * page, page, PROT_NONE);
  *map = base;
  return at_end ? (float *)(base + (data_pages + 1) * page - bytes) : (float *)(base + page);
}

/* the vector row kernels next to unmapped memory: every stride-1/2 window shape */
static void check_guard_pages(void) {
  for (int at_end = 0; at_end <= 1; ++at_end)
    for (int64_t k = 1; k <= 3; ++k)
      for (int64_t st = 1; st <= 2; ++st)
        for (int64_t H = 1; H <= 4; ++H)
          for (int64_t W = 1; W <= 40; ++W) {
            mte_pool2d_params p = {k, k, st, st, k / 2, k / 2, 1, 1, (int)(W % 2), 1, 0};
            int64_t Ho = mte_pool2d_output_size(H, k, st, k / 2, 1, p.ceil_mode);
            int64_t Wo = mte_pool2d_output_size(W, k, st, k / 2, 1, p.ceil_mode);
            if (Ho < 1 || Wo < 1) continue;
            void *map;
            size_t len;
            float *x = guarded((size_t)(H * W), at_end, &map, &len);
            if (!x) {
              CHECK(0, "mmap failed");
              return;
            }
            for (int64_t i = 0; i < H * W; ++i) x[i] = mte_test_uniform();
            float *y = (float *)malloc((size_t)(Ho * Wo) * sizeof(float));
            int64_t *ind = (int64_t *)malloc((size_t)(Ho * Wo) * sizeof(int64_t));
            int bad = mte_max_pool2d(&p, 1, 1, H, W, x, y, ind) != MTE_OK;
            for (int64_t r = 0; r < Ho && !bad; ++r)
              for (int64_t s = 0; s < Wo && !bad; ++s) {
                float want;
                int64_t wi;
                ref_max(&p, x, H, W, r, s, &want, &wi);
                bad |= !same_float(y[r * Wo + s], want) || ind[r * Wo + s] != wi;
              }
            bad |= mte_avg_pool2d(&p, 1, 1, H, W, x, y) != MTE_OK;
            CHECK(!bad, "[%s] guarded k=%lld stride=%lld H=%lld W=%lld", g_isa, (long long)k,
                  (long long)st, (long long)H, (long long)W);
            free(y), free(ind);
            munmap(map, len);
          }
}

static void check_errors(void) {
  mte_pool2d_params p = {2, 2, 2, 2, 0, 0, 1, 1, 0, 1, 0};
  float x[16] = {0}, y[4] = {SENTINEL, SENTINEL, SENTINEL, SENTINEL}, gx[16];
  int64_t ind[4] = {0, 1, 2, 3};
  CHECK(mte_max_pool2d(NULL, 1, 1, 4, 4, x, y, ind) == MTE_EINVAL, "NULL params");
  mte_pool2d_params q = p;
  q.pad_h = 2; /* more than kernel / 2 */
  CHECK(mte_max_pool2d(&q, 1, 1, 4, 4, x, y, ind) == MTE_EINVAL, "pad > kernel/2");
  q = p, q.stride_w = 0;
  CHECK(mte_avg_pool2d(&q, 1, 1, 4, 4, x, y) == MTE_EINVAL, "stride 0");
  q = p, q.dilation_h = 2;
  CHECK(mte_avg_pool2d(&q, 1, 1, 4, 4, x, y) == MTE_EINVAL, "avg with dilation");
  q = p, q.kernel_w = -1;
  CHECK(mte_max_pool2d(&q, 1, 1, 4, 4, x, y, ind) == MTE_EINVAL, "negative kernel");
  CHECK(mte_max_pool2d(&p, -1, 1, 4, 4, x, y, ind) == MTE_EINVAL, "negative N");
  CHECK(mte_max_pool2d(&p, 1, 1, 4, 4, NULL, y, ind) == MTE_EINVAL, "NULL x");
  CHECK(mte_avg_pool2d(&p, 1, 1, 4, 4, x, NULL) == MTE_EINVAL, "NULL y");
  for (int k = 0; k < 4; ++k) CHECK(y[k] == SENTINEL, "y written on error");
  for (int k = 0; k < 16; ++k) gx[k] = SENTINEL;
  int64_t badi[4] = {0, 16, 2, 3}, negi[4] = {0, -1, 2, 3};
  CHECK(mte_max_pool2d_backward(1, 1, 4, 4, 4, y, badi, gx) == MTE_EINVAL, "index >= H*W");
  CHECK(mte_max_pool2d_backward(1, 1, 4, 4, 4, y, negi, gx) == MTE_EINVAL, "negative index");
  for (int k = 0; k < 16; ++k) CHECK(gx[k] == SENTINEL, "gx written on error");
  CHECK(mte_max_pool2d_backward(1, 1, 0, 4, 4, y, ind, gx) == MTE_EINVAL, "empty plane");
  /* zero sizes */
  CHECK(mte_max_pool2d(&p, 0, 3, 4, 4, NULL, NULL, NULL) == MTE_OK, "N=0");
  CHECK(mte_avg_pool2d(&p, 2, 0, 4, 4, NULL, NULL) == MTE_OK, "C=0");
  CHECK(mte_avg_pool2d_backward(&p, 1, 1, 4, 4, 0, 0, NULL, gx) == MTE_OK && gx[15] == 0.0f,
        "no outputs: zero gradient");
  CHECK(mte_max_pool2d_backward(1, 1, 4, 4, 0, NULL, NULL, gx) == MTE_OK && gx[0] == 0.0f,
        "L=0: zero gradient");
  /* output sizes (PyTorch's rule) */
  CHECK(mte_pool2d_output_size(26, 2, 2, 0, 1, 0) == 13, "26/2");
  CHECK(mte_pool2d_output_size(5, 2, 2, 0, 1, 0) == 2 && mte_pool2d_output_size(5, 2, 2, 0, 1, 1) == 3,
        "ceil_mode");
  CHECK(mte_pool2d_output_size(5, 2, 2, 1, 1, 1) == 3 && mte_pool2d_output_size(6, 3, 2, 1, 1, 1) == 4,
        "ceil_mode: the last window must start inside");
  CHECK(mte_pool2d_output_size(1, 3, 1, 0, 1, 0) == 0, "too small");
  CHECK(mte_pool2d_output_size(4, 0, 1, 0, 1, 0) == -1, "bad kernel");
}

int main(int argc, char **argv) {
  const int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  char isas[256];
  snprintf(isas, sizeof isas, "%s", mte_compiled_isas());
  printf("test_pool: compiled ISAs: %s%s\n", isas, quick ? " (quick)" : "");
  check_errors();
  for (char *name = strtok(isas, " "); name; name = strtok(NULL, " ")) {
    if (!mte_isa_available(name)) continue;
    CHECK(mte_set_isa(name) == MTE_OK, "set_isa %s", name);
    g_isa = name;
    int threads[2] = {1, 3};
    for (int t = 0; t < (quick ? 1 : 2); ++t) {
      mte_set_num_threads(threads[t]);
      check_guard_pages();
      random_cases(quick ? 150 : 1500);
      fast_path_cases(quick);
    }
  }
  mte_set_isa("auto");
  return mte_test_summary("test_pool");
}
