/*
 * test_transformer.c - softmax, LayerNorm, GELU and fused attention (mte_transformer.h),
 * forward and backward, against naive loops in double precision: row lengths 0..70 and
 * 127, 1000 (the vector tails and lane sums), SAFE / LOG softmax with -inf, all -inf and
 * NaN rows, LayerNorm with and without weight/bias, GELU (exact, tanh) on a dense sweep and
 * at +-inf/NaN, attention over random (B, H, L, S, D, Dv) with masks broadcast over heads
 * and rows, causal, fully masked rows, q/k/v interleaved in one packed buffer; every ISA,
 * 1 and 3 threads; sentinels after every output; invalid arguments.
 *
 *   test_transformer           full run
 *   test_transformer --quick   fewer cases (for qemu)
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mte.h"
#include "mte_bf16.h"

#define PI 3.14159265358979323846
#include "mte_test.h"

#define SENTINEL 4321.0f
#define GUARD 16

static const char *g_isa = "";

static float *buf(size_t n) {
  float *p = (float *)malloc((n + GUARD) * sizeof(float));
  for (size_t i = 0; i < n + GUARD; ++i) p[i] = SENTINEL;
  return p;
}
static int guard_ok(const float *p, size_t n) {
  for (size_t i = n; i < n + GUARD; ++i)
    if (p[i] != SENTINEL) return 0;
  return 1;
}
static float *rand_buf(size_t n, float scale) {
  float *p = buf(n);
  for (size_t i = 0; i < n; ++i) p[i] = scale * mte_test_uniform();
  return p;
}
/* |got - want| within atol + rtol |want|; NaN only where NaN is wanted */
static int close_to(double got, double want, double atol, double rtol) {
  if (isnan(want)) return isnan(got);
  if (isinf(want)) return got == want;
  return fabs(got - want) <= atol + rtol * fabs(want);
}

/* ---------------------------------------------------------------- softmax */

static void ref_softmax(int64_t n, const float *x, double *y, int flags) {
  double m = -INFINITY;
  int nan = 0;
  for (int64_t j = 0; j < n; ++j) {
    if (isnan(x[j])) nan = 1;
    if (x[j] > m) m = x[j];
  }
  if ((flags & MTE_SOFTMAX_SAFE) && m == -INFINITY) m = 0.0;
  double s = 0.0;
  for (int64_t j = 0; j < n; ++j) s += exp((double)x[j] - m);
  for (int64_t j = 0; j < n; ++j) {
    if (nan) {
      y[j] = NAN;
    } else if (flags & MTE_SOFTMAX_LOG) {
      y[j] = ((double)x[j] - m) - log(s);
    } else if (s == 0.0 && (flags & MTE_SOFTMAX_SAFE)) {
      y[j] = 0.0;
    } else {
      y[j] = exp((double)x[j] - m) / s;
    }
  }
}

static void softmax_case(int64_t rows, int64_t n, int flags, int special) {
  const size_t count = (size_t)(rows * n);
  float *x = rand_buf(count, 8.0f), *y = buf(count), *dy = rand_buf(count, 1.0f);
  float *dx = buf(count);
  if (special)
    for (int64_t i = 0; i < rows; ++i) {
      /* 0: some -inf, 1: all -inf, 2: a NaN, 3: around 1e4 (log-softmax must subtract the
       * max before adding log(sum)) */
      const int kind = mte_test_pick(4);
      for (int64_t j = 0; j < n; ++j) {
        if (kind == 0 && mte_test_pick(3) == 0) x[i * n + j] = -INFINITY;
        if (kind == 1) x[i * n + j] = -INFINITY;
        if (kind == 3) x[i * n + j] += 1e4f;
      }
      if (kind == 2 && n) x[i * n + mte_test_pick((int)n)] = NAN;
    }
  CHECK(mte_softmax_forward(rows, n, x, y, flags) == MTE_OK, "%s softmax", g_isa);
  CHECK(guard_ok(y, count), "%s softmax %lldx%lld wrote past y", g_isa, (long long)rows,
        (long long)n);
  double *want = (double *)malloc((count + 1) * sizeof(double));
  int bad = 0;
  for (int64_t i = 0; i < rows && !bad; ++i) {
    ref_softmax(n, x + i * n, want + i * n, flags);
    for (int64_t j = 0; j < n && !bad; ++j) {
      const double w = want[i * n + j];
      /* log-softmax: absolute error grows with |x - m| */
      bad = !close_to(y[i * n + j], w, (flags & MTE_SOFTMAX_LOG) ? 2e-6 * (1 + fabs(w)) : 1e-7,
                      3e-6);
      if (bad)
        fprintf(stderr, "  softmax flags %d row %lld col %lld: got %g want %g\n", flags,
                (long long)i, (long long)j, y[i * n + j], w);
    }
  }
  CHECK(!bad, "%s softmax %lldx%lld flags %d", g_isa, (long long)rows, (long long)n, flags);

  /* backward from the kernel's own y, against the formula in double */
  if (!special) {
    CHECK(mte_softmax_backward(rows, n, y, dy, dx, flags) == MTE_OK, "softmax backward");
    CHECK(guard_ok(dx, count), "%s softmax backward wrote past dx", g_isa);
    bad = 0;
    for (int64_t i = 0; i < rows && !bad; ++i) {
      double g = 0.0;
      for (int64_t j = 0; j < n; ++j)
        g += (flags & MTE_SOFTMAX_LOG) ? dy[i * n + j] : (double)dy[i * n + j] * y[i * n + j];
      for (int64_t j = 0; j < n && !bad; ++j) {
        const double yy = y[i * n + j], d = dy[i * n + j];
        const double w = (flags & MTE_SOFTMAX_LOG) ? d - exp(yy) * g : yy * (d - g);
        bad = !close_to(dx[i * n + j], w, 1e-6 * (1 + fabs(g)), 1e-5);
        if (bad)
          fprintf(stderr, "  softmax backward row %lld col %lld: got %g want %g\n",
                  (long long)i, (long long)j, dx[i * n + j], w);
      }
    }
    CHECK(!bad, "%s softmax backward %lldx%lld flags %d", g_isa, (long long)rows,
          (long long)n, flags);
    /* in place: dx = dy */
    float *g2 = buf(count);
    memcpy(g2, dy, count * sizeof(float));
    CHECK(mte_softmax_backward(rows, n, y, g2, g2, flags) == MTE_OK, "in place");
    CHECK(count == 0 || memcmp(g2, dx, count * sizeof(float)) == 0, "%s in-place backward",
          g_isa);
    free(g2);
  }
  free(want);
  free(x), free(y), free(dy), free(dx);
}

/* ---------------------------------------------------------------- LayerNorm */

static void layer_norm_case(int64_t rows, int64_t n, int affine) {
  const size_t count = (size_t)(rows * n);
  const float offset = 3.0f * mte_test_uniform();
  float *x = rand_buf(count, 2.0f), *y = buf(count), *dy = rand_buf(count, 1.0f);
  for (size_t i = 0; i < count; ++i) x[i] += offset;
  float *w = (affine & 1) ? rand_buf((size_t)n, 1.5f) : NULL;
  float *b = (affine & 2) ? rand_buf((size_t)n, 1.0f) : NULL;
  float *mean = buf((size_t)rows), *rstd = buf((size_t)rows), *dx = buf(count);
  float *dw = buf((size_t)n), *db = buf((size_t)n);
  const float eps = 1e-5f;
  CHECK(mte_layer_norm_forward(rows, n, x, w, b, eps, y, mean, rstd) == MTE_OK, "ln fwd");
  CHECK(guard_ok(y, count) && guard_ok(mean, (size_t)rows) && guard_ok(rstd, (size_t)rows),
        "%s layer_norm wrote past an output", g_isa);
  double *dwr = (double *)calloc((size_t)n + 1, sizeof(double));
  double *dbr = (double *)calloc((size_t)n + 1, sizeof(double));
  int bad = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const float *xi = x + i * n, *gi = dy + i * n;
    double mu = 0.0, var = 0.0, big = 0.0;
    for (int64_t j = 0; j < n; ++j) mu += xi[j], big = fmax(big, fabs(xi[j]));
    mu /= (double)n;
    for (int64_t j = 0; j < n; ++j) var += ((double)xi[j] - mu) * ((double)xi[j] - mu);
    var /= (double)n;
    const double r = 1.0 / sqrt(var + eps);
    /* float32 x - mean is off by ~ulp(max |x|): times rstd, that is the error of xhat */
    const double xtol = 4 * 1.2e-7 * big * r;
    if (!close_to(mean[i], mu, 1e-6 * big, 1e-6) || !close_to(rstd[i], r, 0, 1e-5 + xtol))
      bad = 1;
    for (int64_t j = 0; j < n; ++j) {
      const double xhat = ((double)xi[j] - mu) * r;
      const double want = xhat * (w ? w[j] : 1.0) + (b ? b[j] : 0.0);
      if (!bad && !close_to(y[i * n + j], want, 2e-6 + xtol * (w ? fabs(w[j]) : 1), 2e-5)) {
        fprintf(stderr, "  layer_norm row %lld col %lld: got %g want %g\n", (long long)i,
                (long long)j, y[i * n + j], want);
        bad = 1;
      }
      /* the backward's sums, with the kernel's statistics (its xhat) */
      const double kx = ((double)xi[j] - mean[i]) * rstd[i];
      dwr[j] += gi[j] * kx;
      dbr[j] += gi[j];
    }
  }
  CHECK(!bad, "%s layer_norm %lldx%lld affine %d", g_isa, (long long)rows, (long long)n,
        affine);

  CHECK(mte_layer_norm_backward(rows, n, dy, x, mean, rstd, w, dx, w ? dw : NULL,
                                b ? db : NULL) == MTE_OK,
        "ln bwd");
  CHECK(guard_ok(dx, count) && guard_ok(dw, (size_t)n) && guard_ok(db, (size_t)n),
        "%s layer_norm backward wrote past an output", g_isa);
  bad = 0;
  for (int64_t i = 0; i < rows && !bad; ++i) {
    const float *xi = x + i * n, *gi = dy + i * n;
    double s1 = 0.0, s2 = 0.0;
    for (int64_t j = 0; j < n; ++j) {
      const double xhat = ((double)xi[j] - mean[i]) * rstd[i], g = gi[j] * (w ? w[j] : 1.0);
      s1 += g, s2 += g * xhat;
    }
    for (int64_t j = 0; j < n; ++j) {
      const double xhat = ((double)xi[j] - mean[i]) * rstd[i], g = gi[j] * (w ? w[j] : 1.0);
      const double want = rstd[i] * (g - s1 / (double)n - xhat * s2 / (double)n);
      if (!close_to(dx[i * n + j], want, 1e-5 * (1 + fabs(s1 / n) + fabs(s2 / n)), 1e-4)) {
        fprintf(stderr, "  layer_norm backward row %lld col %lld: got %g want %g\n",
                (long long)i, (long long)j, dx[i * n + j], want);
        bad = 1;
        break;
      }
    }
  }
  for (int64_t j = 0; j < n && !bad; ++j) {
    if (w && !close_to(dw[j], dwr[j], 1e-4 * sqrt((double)rows + 1), 1e-4)) bad = 2;
    if (b && !close_to(db[j], dbr[j], 1e-4 * sqrt((double)rows + 1), 1e-4)) bad = 3;
    if (bad)
      fprintf(stderr, "  layer_norm backward col %lld: dw %g / %g, db %g / %g\n", (long long)j,
              w ? dw[j] : 0, dwr[j], b ? db[j] : 0, dbr[j]);
  }
  CHECK(!bad, "%s layer_norm backward %lldx%lld affine %d", g_isa, (long long)rows,
        (long long)n, affine);
  free(dwr), free(dbr);
  free(x), free(y), free(dy), free(w), free(b), free(mean), free(rstd), free(dx), free(dw),
      free(db);
}

/* ---------------------------------------------------------------- GELU */

static double ref_gelu(double x, int approx, double *grad) {
  if (approx) {
    const double c = sqrt(2.0 / PI), u = c * (x + 0.044715 * x * x * x), t = tanh(u);
    *grad = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x);
    return 0.5 * x * (1 + t);
  }
  *grad = 0.5 * (1 + erf(x / sqrt(2.0))) + x * exp(-0.5 * x * x) / sqrt(2.0 * PI);
  return 0.5 * x * (1 + erf(x / sqrt(2.0)));
}

static void gelu_cases(void) {
  const int64_t n = 24001; /* -12 .. 12 in steps of 1e-3, and a tail */
  float *x = buf((size_t)n), *y = buf((size_t)n), *dy = buf((size_t)n), *dx = buf((size_t)n);
  for (int64_t i = 0; i < n; ++i) x[i] = -12.0f + 1e-3f * (float)i, dy[i] = 1.0f;
  for (int approx = 0; approx < 2; ++approx) {
    CHECK(mte_gelu_forward(n, x, y, approx) == MTE_OK, "gelu");
    CHECK(mte_gelu_backward(n, dy, x, dx, approx) == MTE_OK, "gelu backward");
    CHECK(guard_ok(y, (size_t)n) && guard_ok(dx, (size_t)n), "%s gelu wrote past", g_isa);
    int bad = 0;
    for (int64_t i = 0; i < n && !bad; ++i) {
      double g;
      const double want = ref_gelu(x[i], approx, &g);
      if (!close_to(y[i], want, 2e-7 * fmax(1.0, fabs(x[i])), 1e-6) ||
          !close_to(dx[i], g, 1e-6 * fmax(1.0, fabs(x[i])), 1e-5)) {
        fprintf(stderr, "  gelu approx %d x %.9g: y %.9g / %.9g, dy/dx %.9g / %.9g\n", approx,
                x[i], y[i], want, dx[i], g);
        bad = 1;
      }
    }
    CHECK(!bad, "%s gelu approximate=%d", g_isa, approx);
    /* the ends: y(-inf) = NaN (-inf * 0), y(inf) = inf, NaN stays; dy/dx(+-inf) = NaN */
    float e[4] = {-INFINITY, INFINITY, NAN, -50.0f}, ey[4], eg[4], one[4] = {1, 1, 1, 1};
    mte_gelu_forward(4, e, ey, approx);
    mte_gelu_backward(4, one, e, eg, approx);
    CHECK(isnan(ey[0]) && ey[1] == INFINITY && isnan(ey[2]) && ey[3] == 0.0f,
          "%s gelu(%d) ends: %g %g %g %g", g_isa, approx, ey[0], ey[1], ey[2], ey[3]);
    CHECK(isnan(eg[0]) && isnan(eg[1]) && isnan(eg[2]) && fabsf(eg[3]) < 1e-30f,
          "%s gelu'(%d) ends: %g %g %g %g", g_isa, approx, eg[0], eg[1], eg[2], eg[3]);
    /* in place */
    float *z = buf((size_t)n);
    memcpy(z, x, (size_t)n * sizeof(float));
    mte_gelu_forward(n, z, z, approx);
    CHECK(memcmp(z, y, (size_t)n * sizeof(float)) == 0, "%s gelu in place", g_isa);
    free(z);
  }
  free(x), free(y), free(dy), free(dx);
}

/* ---------------------------------------------------------------- attention */

/* the layout of one view: element (b, h, i, j) at off + b*sb + h*sh + i*sr + j */
typedef struct view {
  int64_t off;
  mte_head_strides s;
} view;
static const float *vp(const float *base, view v, int64_t b, int64_t h, int64_t i) {
  return base + v.off + b * v.s.batch + h * v.s.head + i * v.s.row;
}

static void attention_case(int64_t B, int64_t H, int64_t L, int64_t S, int64_t D, int64_t Dv,
                           int mask_kind, int causal, int packed) {
  /* inputs: q, k, v in one buffer, either packed as (L, B, H*(D+D+Dv)) columns, interleaved
   * like a projection's output (needs L == S), or each (B, H, rows, width) contiguous */
  const int64_t E = D + D + Dv;
  size_t in_count;
  view vq, vk, vv;
  if (packed) {
    const int64_t ld = B * H * E;
    in_count = (size_t)(L * ld);
    vq = (view){0, {H * E, E, ld}};
    vk = (view){D, {H * E, E, ld}};
    vv = (view){2 * D, {H * E, E, ld}};
  } else {
    const int64_t nq = B * H * L * D, nk = B * H * S * D;
    in_count = (size_t)(nq + nk + B * H * S * Dv);
    vq = (view){0, {H * L * D, L * D, D}};
    vk = (view){nq, {H * S * D, S * D, D}};
    vv = (view){nq + nk, {H * S * Dv, S * Dv, Dv}};
  }
  float *in = rand_buf(in_count + 1, 1.5f);
  /* mask: 0 none, 1 (L, S) shared by all pairs, 2 (B, 1, 1, S) key padding, 3 per pair */
  float *mask = NULL;
  mte_head_strides ms = {0, 0, 0};
  if (mask_kind) {
    const size_t mc = mask_kind == 1 ? (size_t)(L * S) : mask_kind == 2 ? (size_t)(B * S)
                                                                        : (size_t)(B * H * L * S);
    mask = rand_buf(mc + 1, 2.0f);
    for (size_t i = 0; i < mc; ++i)
      if (mte_test_pick(4) == 0) mask[i] = -INFINITY;
    if (mask_kind == 2 && B > 0 && S > 0)
      for (int64_t j = 0; j < S; ++j) mask[j] = -INFINITY; /* batch 0: every key masked */
    ms = mask_kind == 1 ? (mte_head_strides){0, 0, S}
         : mask_kind == 2 ? (mte_head_strides){S, 0, 0}
                          : (mte_head_strides){H * L * S, L * S, S};
  }
  /* out as (L, B, H*Dv) (a merge of heads) */
  const size_t oc = (size_t)(L * B * H * Dv), pc = (size_t)(B * H * L * S);
  const mte_head_strides so = {H * Dv, Dv, B * H * Dv};
  float *out = buf(oc), *p = buf(pc), *dout = rand_buf(oc + 1, 1.0f);
  const float scale = 1.0f / sqrtf((float)(D ? D : 1));
  int st = mte_attention_forward(B, H, L, S, D, Dv, in + vq.off, vq.s, in + vk.off, vk.s,
                                 in + vv.off, vv.s, mask, ms, scale, causal, p, out, so);
  CHECK(st == MTE_OK, "%s attention forward: %s", g_isa, mte_status_string(st));
  CHECK(guard_ok(out, oc) && guard_ok(p, pc), "%s attention wrote past out or p", g_isa);

  /* gradients into one packed buffer, like the input */
  float *grad = buf(in_count);
  st = mte_attention_backward(B, H, L, S, D, Dv, in + vq.off, vq.s, in + vk.off, vk.s,
                              in + vv.off, vv.s, scale, p, dout, so, grad + vq.off, vq.s,
                              grad + vk.off, vk.s, grad + vv.off, vv.s);
  CHECK(st == MTE_OK, "%s attention backward: %s", g_isa, mte_status_string(st));
  CHECK(guard_ok(grad, in_count), "%s attention backward wrote past its buffer", g_isa);

  int bad = 0;
  double *pr = (double *)malloc((size_t)(L * S + 1) * sizeof(double));
  double *dpr = (double *)malloc((size_t)(L * S + 1) * sizeof(double));
  for (int64_t b = 0; b < B && !bad; ++b)
    for (int64_t h = 0; h < H && !bad; ++h) {
      const float *mrow = mask ? mask + b * ms.batch + h * ms.head : NULL;
      for (int64_t i = 0; i < L; ++i) { /* p */
        double m = -INFINITY;
        for (int64_t j = 0; j < S; ++j) {
          double s = 0.0;
          for (int64_t d = 0; d < D; ++d)
            s += (double)vp(in, vq, b, h, i)[d] * vp(in, vk, b, h, j)[d];
          s = s * scale + (mrow ? mrow[i * ms.row + j] : 0.0);
          if (causal && j > i) s = -INFINITY;
          pr[i * S + j] = s;
          if (s > m) m = s;
        }
        if (m == -INFINITY) m = 0.0;
        double sum = 0.0;
        for (int64_t j = 0; j < S; ++j) sum += (pr[i * S + j] = exp(pr[i * S + j] - m));
        for (int64_t j = 0; j < S; ++j) {
          pr[i * S + j] = sum > 0 ? pr[i * S + j] / sum : 0.0;
          /* p holds the weights transposed: key j, query i */
          if (!close_to(p[((b * H + h) * S + j) * L + i], pr[i * S + j], 1e-6, 1e-5)) bad = 1;
        }
        for (int64_t e = 0; e < Dv; ++e) { /* out */
          double o = 0.0;
          for (int64_t j = 0; j < S; ++j) o += pr[i * S + j] * vp(in, vv, b, h, j)[e];
          const float got = out[i * so.row + b * so.batch + h * so.head + e];
          if (!close_to(got, o, 1e-5, 1e-4)) {
            fprintf(stderr, "  attention out (%lld %lld %lld %lld): %g / %g\n", (long long)b,
                    (long long)h, (long long)i, (long long)e, got, o);
            bad = 1;
          }
        }
      }
      /* dP, dS */
      for (int64_t i = 0; i < L; ++i) {
        const float *go = dout + i * so.row + b * so.batch + h * so.head;
        double rs = 0.0;
        for (int64_t j = 0; j < S; ++j) {
          double dp = 0.0;
          for (int64_t e = 0; e < Dv; ++e) dp += (double)go[e] * vp(in, vv, b, h, j)[e];
          dpr[i * S + j] = dp;
          rs += dp * pr[i * S + j];
        }
        for (int64_t j = 0; j < S; ++j) dpr[i * S + j] = pr[i * S + j] * (dpr[i * S + j] - rs);
      }
      for (int64_t i = 0; i < L && !bad; ++i) /* dq = scale dS K */
        for (int64_t d = 0; d < D; ++d) {
          double g = 0.0;
          for (int64_t j = 0; j < S; ++j) g += dpr[i * S + j] * vp(in, vk, b, h, j)[d];
          g *= scale;
          if (!close_to(vp(grad, vq, b, h, i)[d], g, 1e-5, 1e-4)) bad = 2;
        }
      for (int64_t j = 0; j < S && !bad; ++j) { /* dk = scale dS^T Q, dv = P^T dO */
        for (int64_t d = 0; d < D; ++d) {
          double g = 0.0;
          for (int64_t i = 0; i < L; ++i) g += dpr[i * S + j] * vp(in, vq, b, h, i)[d];
          g *= scale;
          if (!close_to(vp(grad, vk, b, h, j)[d], g, 1e-5, 1e-4)) bad = 3;
        }
        for (int64_t e = 0; e < Dv; ++e) {
          double g = 0.0;
          for (int64_t i = 0; i < L; ++i)
            g += pr[i * S + j] * dout[i * so.row + b * so.batch + h * so.head + e];
          if (!close_to(vp(grad, vv, b, h, j)[e], g, 1e-5, 1e-4)) bad = 4;
        }
      }
    }
  CHECK(!bad, "%s attention B%lld H%lld L%lld S%lld D%lld Dv%lld mask %d causal %d packed %d:"
              " %s",
        g_isa, (long long)B, (long long)H, (long long)L, (long long)S, (long long)D,
        (long long)Dv, mask_kind, causal, packed,
        bad == 1 ? "forward" : bad == 2 ? "dq" : bad == 3 ? "dk" : "dv");
  free(pr), free(dpr), free(in), free(mask), free(out), free(p), free(dout), free(grad);
}

/* half attention (bf16 / fp16) on a packed (L, B, H*(2D+Dv)) projection: the same bits as the
 * float32 kernel run on the widened values, each output rounded once */
static void attention_half_case(int dt, int64_t B, int64_t H, int64_t L, int64_t D,
                                int64_t Dv, int mask_kind, int causal) {
  const int64_t S = L, E = D + D + Dv, ld = B * H * E;
  const size_t in_count = (size_t)(L * ld), oc = (size_t)(L * B * H * Dv);
  const size_t pc = (size_t)(B * H * L * S), dc = (size_t)(L * ld);
  const mte_head_strides s_in = {H * E, E, ld}, so = {H * Dv, Dv, B * H * Dv};
  float *f = rand_buf(in_count + 1, 1.5f), *fd = rand_buf(oc + 1, 1.0f);
  uint16_t *h = malloc((in_count + 1) * 2), *hd = malloc((oc + 1) * 2);
  mte_f32_to_half(dt, f, h, (int64_t)in_count);
  mte_half_to_f32(dt, h, f, (int64_t)in_count); /* f: exactly the half values */
  mte_f32_to_half(dt, fd, hd, (int64_t)oc);
  mte_half_to_f32(dt, hd, fd, (int64_t)oc);
  float *mask = NULL;
  const mte_head_strides ms = {0, 0, S};
  if (mask_kind) {
    mask = rand_buf((size_t)(L * S) + 1, 2.0f);
    for (int64_t i = 0; i < L * S; ++i)
      if (mte_test_pick(4) == 0) mask[i] = -INFINITY;
  }
  const float scale = 1.0f / sqrtf((float)(D ? D : 1));
  float *out = buf(oc), *p = buf(pc), *ph = buf(pc), *g = buf(dc);
  uint16_t *hout = malloc((oc + 1) * 2), *hg = malloc((dc + 1) * 2), *want = malloc((dc + 1) * 2);
  memset(hg, 0xff, (dc + 1) * 2); /* NaN everywhere: every written value is checked below */
  int st = mte_attention_forward(B, H, L, S, D, Dv, f, s_in, f + D, s_in, f + 2 * D, s_in, mask,
                                 ms, scale, causal, p, out, so);
  int sh = mte_attention_forward_half(dt, B, H, L, S, D, Dv, h, s_in, h + D, s_in, h + 2 * D,
                                      s_in, mask, ms, scale, causal, ph, hout, so);
  CHECK(st == MTE_OK && sh == MTE_OK, "%s half attention forward: %s", g_isa,
        mte_status_string(sh));
  mte_f32_to_half(dt, out, want, (int64_t)oc);
  CHECK(memcmp(want, hout, oc * 2) == 0 && memcmp(p, ph, pc * 4) == 0,
        "%s half attention (dt %d B%lld H%lld L%lld D%lld Dv%lld mask %d causal %d): out or p "
        "differs from the float32 kernel's, rounded", g_isa, dt, (long long)B, (long long)H,
        (long long)L, (long long)D, (long long)Dv, mask_kind, causal);
  st = mte_attention_backward(B, H, L, S, D, Dv, f, s_in, f + D, s_in, f + 2 * D, s_in, scale,
                              p, fd, so, g, s_in, g + D, s_in, g + 2 * D, s_in);
  sh = mte_attention_backward_half(dt, B, H, L, S, D, Dv, h, s_in, h + D, s_in, h + 2 * D,
                                   s_in, scale, ph, hd, so, hg, s_in, hg + D, s_in, hg + 2 * D,
                                   s_in);
  CHECK(st == MTE_OK && sh == MTE_OK, "%s half attention backward: %s", g_isa,
        mte_status_string(sh));
  mte_f32_to_half(dt, g, want, (int64_t)dc);
  CHECK(memcmp(want, hg, dc * 2) == 0 && hg[dc] == 0xffff,
        "%s half attention backward (dt %d B%lld H%lld L%lld D%lld Dv%lld): dq dk dv differ "
        "from the float32 kernel's, rounded", g_isa, dt, (long long)B, (long long)H,
        (long long)L, (long long)D, (long long)Dv);
  CHECK(mte_attention_forward_half(MTE_DT_F32, B, H, L, S, D, Dv, h, s_in, h + D, s_in,
                                   h + 2 * D, s_in, mask, ms, scale, causal, ph, hout, so) ==
            MTE_EINVAL, "half attention refuses a float32 dtype code");
  free(f), free(fd), free(h), free(hd), free(mask), free(out), free(p), free(ph), free(g);
  free(hout), free(hg), free(want);
}

static void attention_cases(int n) {
  static const int64_t shapes[][6] = {{2, 4, 32, 32, 16, 16}, {1, 1, 1, 1, 1, 1},
                                      {3, 2, 9, 17, 8, 5},   {1, 3, 40, 7, 33, 16},
                                      {2, 1, 16, 16, 64, 64}, {1, 2, 5, 0, 4, 4},
                                      {1, 1, 0, 6, 4, 4},   {2, 2, 8, 8, 0, 3}};
  for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; ++c) {
    const int64_t *s = shapes[c];
    for (int mk = 0; mk < 4; ++mk) attention_case(s[0], s[1], s[2], s[3], s[4], s[5], mk, 0, 0);
    attention_case(s[0], s[1], s[2], s[3], s[4], s[5], 0, 1, 0);
    if (s[2] == s[3]) attention_case(s[0], s[1], s[2], s[3], s[4], s[5], 1, 0, 1);
  }
  for (int c = 0; c < n; ++c) {
    const int64_t B = 1 + mte_test_pick(3), H = 1 + mte_test_pick(3);
    const int64_t L = 1 + mte_test_pick(40), S = mte_test_pick(2) ? L : 1 + mte_test_pick(40);
    const int64_t D = 1 + mte_test_pick(40), Dv = 1 + mte_test_pick(40);
    attention_case(B, H, L, S, D, Dv, mte_test_pick(4), mte_test_pick(2),
                   L == S && mte_test_pick(2));
  }
}

/* ---------------------------------------------------------------- errors */

static void check_errors(void) {
  float x[8] = {0}, y[8], m[2], r[2];
  CHECK(mte_softmax_forward(-1, 4, x, y, 0) == MTE_EINVAL, "negative rows");
  CHECK(mte_softmax_forward(2, 4, x, y, 8) == MTE_EINVAL, "unknown flag");
  CHECK(mte_softmax_forward(2, 4, NULL, y, 0) == MTE_EINVAL, "NULL x");
  CHECK(mte_softmax_forward(2, 3, x, x + 1, 0) == MTE_EINVAL, "partial overlap");
  CHECK(mte_softmax_forward(0, 4, NULL, NULL, 0) == MTE_OK, "empty is fine");
  CHECK(mte_softmax_backward(2, 4, x, x, y, 0) == MTE_OK, "y may equal dy");
  CHECK(mte_softmax_backward(2, 4, y, x, y, 0) == MTE_EINVAL, "dx may not be y");
  CHECK(mte_layer_norm_forward(2, 0, x, NULL, NULL, 1e-5f, y, m, r) == MTE_EINVAL, "n = 0");
  CHECK(mte_layer_norm_forward(2, 4, x, NULL, NULL, -1.0f, y, m, r) == MTE_EINVAL, "eps < 0");
  CHECK(mte_layer_norm_forward(2, 4, x, NULL, NULL, NAN, y, m, r) == MTE_EINVAL, "eps NaN");
  CHECK(mte_layer_norm_forward(2, 4, x, NULL, NULL, 1e-5f, y, y, r) == MTE_EINVAL,
        "mean inside y");
  CHECK(mte_layer_norm_backward(2, 4, x, x, NULL, r, NULL, y, NULL, NULL) == MTE_EINVAL,
        "NULL mean");
  CHECK(mte_gelu_forward(4, x, y, 2) == MTE_EINVAL, "bad approximate");
  CHECK(mte_gelu_backward(4, x, y, y, 0) == MTE_EINVAL, "dx is x");
  const mte_head_strides s = {16, 16, 4}, z = {0, 0, 0};
  float p[16], o[16];
  CHECK(mte_attention_forward(1, 1, 2, 2, 4, 4, x, s, x, s, x, s, NULL, z, 1.0f, 0, p, o, s) ==
            MTE_OK,
        "attention ok");
  CHECK(mte_attention_forward(1, 1, 2, 2, 4, 4, x, s, x, s, x, s, NULL, z, 1.0f, 0, p, o, z) ==
            MTE_EINVAL,
        "output rows repeated");
  CHECK(mte_attention_forward(1, -1, 2, 2, 4, 4, x, s, x, s, x, s, NULL, z, 1.0f, 0, p, o, s) ==
            MTE_EINVAL,
        "negative heads");
  CHECK(mte_attention_forward(1, 1, 2, 2, 4, 4, x, s, x, s, x, s, NULL, z, 1.0f, 2, p, o, s) ==
            MTE_EINVAL,
        "causal must be 0 or 1");
  const mte_head_strides bad_row = {16, 16, 2};
  CHECK(mte_attention_forward(1, 1, 2, 2, 4, 4, x, bad_row, x, s, x, s, NULL, z, 1.0f, 0, p,
                              o, s) == MTE_EINVAL,
        "overlapping rows");
  CHECK(mte_attention_backward(1, 1, 2, 2, 4, 4, x, s, x, s, x, s, 1.0f, NULL, x, s, o, s, o, s,
                               o, s) == MTE_EINVAL,
        "NULL p");
}

int main(int argc, char **argv) {
  const int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  char isas[256];
  snprintf(isas, sizeof isas, "%s", mte_compiled_isas());
  printf("test_transformer: compiled ISAs: %s%s\n", isas, quick ? " (quick)" : "");
  check_errors();
  for (char *name = strtok(isas, " "); name; name = strtok(NULL, " ")) {
    if (!mte_isa_available(name)) continue;
    CHECK(mte_set_isa(name) == MTE_OK, "set_isa %s", name);
    g_isa = name;
    const int threads[2] = {1, 3};
    for (int t = 0; t < (quick ? 1 : 2); ++t) {
      mte_set_num_threads(threads[t]);
      static const int64_t ns[] = {0, 1, 2, 3, 5, 7, 8, 15, 16, 17, 31, 32, 33, 47, 64, 70, 127,
                                   1000};
      for (size_t i = 0; i < sizeof ns / sizeof ns[0]; ++i) {
        const int64_t rows = ns[i] > 200 ? 3 : 1 + mte_test_pick(quick ? 6 : 40);
        for (int f = 0; f < 4; ++f) {
          softmax_case(rows, ns[i], f, 0);
          softmax_case(rows, ns[i], f, 1);
        }
        if (ns[i] > 0)
          for (int affine = 0; affine < 4; ++affine) layer_norm_case(rows, ns[i], affine);
      }
      softmax_case(300, 128, MTE_SOFTMAX_SAFE, 0); /* enough work for threads */
      layer_norm_case(700, 64, 3);
      gelu_cases();
      attention_cases(quick ? 6 : 40);
      for (int dt = MTE_DT_BF16; dt <= MTE_DT_F16; ++dt) {
        attention_half_case(dt, 2, 4, 64, 32, 32, 0, 0); /* the Transformer bench's heads */
        attention_half_case(dt, 1, 2, 7, 5, 3, 1, 0);
        attention_half_case(dt, 3, 1, 17, 8, 16, 0, 1);
        attention_half_case(dt, 1, 1, 1, 1, 1, 1, 1);
      }
    }
  }
  mte_set_isa("auto");
  return mte_test_summary("test_transformer");
}
