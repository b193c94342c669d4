/*
 * test_optim.c - mte_sgd_step and mte_adam_step against naive scalar loops that spell out the
 * numpy twins' operation order (so the results must agree bit for bit): every flag
 * combination, sizes 0, 1, primes, the chunk edges and a tensor large enough to be threaded
 * (1 and 3 threads), several consecutive steps; buffers followed by sentinels (any
 * over-write is caught); invalid arguments give MTE_EINVAL and change nothing; NaN in the
 * second moment propagates through AMSGrad's maximum.
 *
 *   test_optim           full run
 *   test_optim --quick   fewer sizes (for qemu)
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mte.h"
#include "mte_optim.h"
#include "mte_test.h"

#define SENTINEL 12345.0f
#define GUARD 16

static float *buf_new(int64_t n, float scale) {
  float *p = (float *)malloc((size_t)(n + GUARD) * sizeof(float));
  for (int64_t i = 0; i < n; ++i) p[i] = scale * mte_test_uniform();
  for (int64_t i = n; i < n + GUARD; ++i) p[i] = SENTINEL;
  return p;
}

static float *buf_copy(const float *src, int64_t n) {
  float *p = (float *)malloc((size_t)(n + GUARD) * sizeof(float));
  memcpy(p, src, (size_t)(n + GUARD) * sizeof(float));
  return p;
}

static int guard_ok(const float *p, int64_t n) {
  for (int64_t i = n; i < n + GUARD; ++i)
    if (p[i] != SENTINEL) return 0;
  return 1;
}

/* bitwise equality, NaNs equal to NaNs */
static int same(const float *a, const float *b, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!(a[i] == b[i] || (a[i] != a[i] && b[i] != b[i]))) return 0;
  return 1;
}

/* ---------------------------------------------------------------- references */

static void sgd_ref(int64_t n, float *p, const float *g, float *b, double lr, double mom,
                    double damp, double wd, int nesterov, int maximize, int first) {
  for (int64_t i = 0; i < n; ++i) {
    float d = maximize ? -g[i] : g[i];
    if (wd != 0.0) d = (float)wd * p[i] + d;
    if (mom != 0.0) {
      if (first) {
        b[i] = d;
      } else {
        b[i] = b[i] * (float)mom;
        b[i] = b[i] + (damp == 0.0 ? d : (float)(1.0 - damp) * d);
      }
      d = nesterov ? (float)mom * b[i] + d : b[i];
    }
    p[i] = p[i] - (float)lr * d;
  }
}

static void adam_ref(int64_t n, float *p, const float *g, float *m, float *v, float *vmax,
                     double t, double lr, double b1, double b2, double eps, double wd,
                     int decoupled, int maximize) {
  const double w = 1.0 - b1;
  const float bc2 = (float)sqrt(1.0 - pow(b2, t));
  const float step_size = (float)(lr / (1.0 - pow(b1, t)));
  for (int64_t i = 0; i < n; ++i) {
    float gi = maximize ? -g[i] : g[i];
    if (wd != 0.0) {
      if (decoupled)
        p[i] = p[i] * (float)(1.0 - lr * wd);
      else
        gi = (float)wd * p[i] + gi;
    }
    if (w < 0.5)
      m[i] = m[i] + (float)w * (gi - m[i]);
    else
      m[i] = gi - (gi - m[i]) * (float)(1.0 - w);
    v[i] = v[i] * (float)b2 + (float)(1.0 - b2) * (gi * gi);
    float vv = v[i];
    if (vmax) {
      if (vv > vmax[i] || vv != vv) vmax[i] = vv;
      vv = vmax[i];
    }
    const float denom = sqrtf(vv) / bc2 + (float)eps;
    p[i] = p[i] - step_size * m[i] / denom;
  }
}

/* ---------------------------------------------------------------- cases */

static void check_sgd(int64_t n, double mom, double damp, double wd, int nesterov, int maximize) {
  float *p = buf_new(n, 1.0f), *g = buf_new(n, 1.0f), *b = buf_new(n, 1.0f);
  float *p2 = buf_copy(p, n), *b2 = buf_copy(b, n), *g2 = buf_copy(g, n);
  for (int step = 0; step < 3; ++step) {
    int st = mte_sgd_step(n, p, g, mom != 0.0 ? b : NULL, 0.05, mom, damp, wd, nesterov,
                          maximize, step == 0);
    sgd_ref(n, p2, g2, b2, 0.05, mom, damp, wd, nesterov, maximize, step == 0);
    CHECK(st == MTE_OK, "sgd status %d", st);
  }
  CHECK(same(p, p2, n) && same(b, b2, n) && same(g, g2, n),
        "sgd n=%lld mom=%g damp=%g wd=%g nesterov=%d maximize=%d", (long long)n, mom, damp, wd,
        nesterov, maximize);
  CHECK(guard_ok(p, n) && guard_ok(b, n) && guard_ok(g, n), "sgd wrote past n=%lld",
        (long long)n);
  free(p), free(g), free(b), free(p2), free(b2), free(g2);
}

static void check_adam(int64_t n, double b1, double wd, int decoupled, int amsgrad,
                       int maximize) {
  float *p = buf_new(n, 1.0f), *g = buf_new(n, 1.0f), *m = buf_new(n, 0.1f);
  float *v = buf_new(n, 0.0f), *vm = buf_new(n, 0.0f);
  for (int64_t i = 0; i < n; ++i) v[i] = fabsf(mte_test_uniform()), vm[i] = v[i];
  float *p2 = buf_copy(p, n), *m2 = buf_copy(m, n), *v2 = buf_copy(v, n), *vm2 = buf_copy(vm, n);
  for (int t = 1; t <= 3; ++t) {
    int st = mte_adam_step(n, p, g, m, v, amsgrad ? vm : NULL, t, 1e-2, b1, 0.999, 1e-8, wd,
                           decoupled, maximize);
    adam_ref(n, p2, g, m2, v2, amsgrad ? vm2 : NULL, t, 1e-2, b1, 0.999, 1e-8, wd, decoupled,
             maximize);
    CHECK(st == MTE_OK, "adam status %d", st);
  }
  CHECK(same(p, p2, n) && same(m, m2, n) && same(v, v2, n) && same(vm, vm2, n),
        "adam n=%lld b1=%g wd=%g decoupled=%d amsgrad=%d maximize=%d", (long long)n, b1, wd,
        decoupled, amsgrad, maximize);
  CHECK(guard_ok(p, n) && guard_ok(m, n) && guard_ok(v, n) && guard_ok(vm, n),
        "adam wrote past n=%lld", (long long)n);
  free(p), free(g), free(m), free(v), free(vm), free(p2), free(m2), free(v2), free(vm2);
}

static void check_sizes(const int64_t *sizes, int count) {
  for (int k = 0; k < count; ++k) {
    const int64_t n = sizes[k];
    for (int wd = 0; wd < 2; ++wd)
      for (int maximize = 0; maximize < 2; ++maximize) {
        check_sgd(n, 0.0, 0.0, wd * 1e-2, 0, maximize);
        check_sgd(n, 0.9, 0.0, wd * 1e-2, 0, maximize);
        check_sgd(n, 0.9, 0.0, wd * 1e-2, 1, maximize);
        check_sgd(n, 0.5, 0.25, wd * 1e-2, 0, maximize);
        for (int decoupled = 0; decoupled < 2; ++decoupled)
          for (int amsgrad = 0; amsgrad < 2; ++amsgrad) {
            check_adam(n, 0.9, wd * 1e-2, decoupled, amsgrad, maximize);
            check_adam(n, 0.3, wd * 1e-2, decoupled, amsgrad, maximize); /* lerp w >= 0.5 */
          }
      }
  }
}

static void check_invalid(void) {
  float p[4] = {1, 2, 3, 4}, g[4] = {1, 1, 1, 1}, m[4] = {0}, v[4] = {0};
  const float p0[4] = {1, 2, 3, 4};
  CHECK(mte_sgd_step(-1, p, g, NULL, 0.1, 0, 0, 0, 0, 0, 0) == MTE_EINVAL, "n < 0");
  CHECK(mte_sgd_step(4, p, g, NULL, 0.1, 0.9, 0, 0, 0, 0, 0) == MTE_EINVAL, "momentum, no buf");
  CHECK(mte_sgd_step(4, NULL, g, NULL, 0.1, 0, 0, 0, 0, 0, 0) == MTE_EINVAL, "NULL param");
  CHECK(mte_sgd_step(4, p, NULL, NULL, 0.1, 0, 0, 0, 0, 0, 0) == MTE_EINVAL, "NULL grad");
  CHECK(mte_sgd_step(0, NULL, NULL, NULL, 0.1, 0.9, 0, 0, 0, 0, 0) == MTE_OK, "n == 0");
  CHECK(mte_adam_step(4, p, g, m, v, NULL, 0.0, 1e-3, 0.9, 0.999, 1e-8, 0, 0, 0) == MTE_EINVAL,
        "step 0");
  CHECK(mte_adam_step(4, p, g, NULL, v, NULL, 1.0, 1e-3, 0.9, 0.999, 1e-8, 0, 0, 0) ==
            MTE_EINVAL, "NULL exp_avg");
  CHECK(mte_adam_step(-2, p, g, m, v, NULL, 1.0, 1e-3, 0.9, 0.999, 1e-8, 0, 0, 0) == MTE_EINVAL,
        "n < 0");
  CHECK(memcmp(p, p0, sizeof p) == 0 && m[0] == 0 && v[0] == 0, "invalid calls changed data");
}

static void check_nan(void) {
  float p[5] = {1, 1, 1, 1, 1}, g[5] = {1, NAN, 1, 1, 1}, m[5] = {0}, v[5] = {0};
  float vm[5] = {0, 0, NAN, 0, 0};
  CHECK(mte_adam_step(5, p, g, m, v, vm, 1.0, 1e-3, 0.9, 0.999, 1e-8, 0, 0, 0) == MTE_OK, "nan");
  CHECK(isnan(vm[1]) && isnan(vm[2]) && !isnan(vm[0]) && isnan(p[1]) && isnan(p[2]) &&
            !isnan(p[3]),
        "NaN must propagate through the AMSGrad maximum");
}

int main(int argc, char **argv) {
  const int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  static const int64_t full[] = {0, 1, 2, 3, 5, 7, 13, 31, 257, 1000, 16383, 16384, 16385};
  static const int64_t small[] = {0, 1, 3, 7, 257, 16385};
  static const int64_t large[] = {300007};
  check_invalid();
  check_nan();
  const char *isas[] = {"generic", "avx2", "avx512", "neon"};
  for (int k = 0; k < 4; ++k) {  /* the kernels are portable: any ISA gives the same bits */
    if (!mte_isa_available(isas[k]) || mte_set_isa(isas[k]) != MTE_OK) continue;
    if (quick)
      check_sizes(small, (int)(sizeof small / sizeof *small));
    else
      check_sizes(full, (int)(sizeof full / sizeof *full));
  }
  for (int threads = 1; threads <= 3; threads += 2) {
    mte_set_num_threads(threads);
    check_sizes(large, 1);
  }
  return mte_test_summary("test_optim");
}
