/*
 * test_int8.c - the int8 kernels (mte_quant.h) against scalar loops written from the spec,
 * byte for byte, on every ISA this machine runs:
 *
 *   fixed point   srdhm / rdbpot / mbqm of the library (mte_quant_internal.h) against an
 *                 int64 formulation on edge values and every shift; on aarch64 the NEON
 *                 requantization (mte_qrequant_neon.h) against the scalar one, lane by lane;
 *                 on x86 the one-rounding identity of the fast channels and the AVX-512 /
 *                 AVX2 requantization (mte_qrequant_x86.h) against the scalar one
 *   qconv2d       random shapes: tile edges (O, pixels and K around MR / NR / 4), groups,
 *                 strides, dilation, asymmetric padding, 1x1, depthwise 3x3 (stride 1/2,
 *                 pad 0/1), zero points, shifts -31..30, huge biases (saturation), clamps
 *   qlinear, qgemm, pools, qadd, quantize / dequantize / requantize
 *   errors        invalid arguments give MTE_EINVAL and leave the output untouched;
 *                 sentinels after every output catch writes past it
 *
 *   test_int8 [--quick]   (--quick: fewer random shapes, for qemu)
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mte.h"
#include "mte_quant_internal.h"
#include "mte_test.h"
#if defined(__aarch64__)
#include "mte_qrequant_neon.h"
#endif

#define SENTINEL 0x5A
static int g_quick = 0;

/* ---------------------------------------------------------------- the reference */

static int32_t sat32(int64_t v) { return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v; }

static int32_t ref_mbqm(int32_t x, int32_t m, int32_t shift) {
  const int left = shift > 0 ? shift : 0, right = shift < 0 ? -shift : 0;
  int32_t xs = sat32((int64_t)x * ((int64_t)1 << left));
  int64_t ab = (int64_t)xs * m; /* m >= 0: never INT32_MIN * INT32_MIN */
  int64_t nudge = ab >= 0 ? (1 << 30) : 1 - (1 << 30);
  int64_t hi = (ab + nudge) / ((int64_t)1 << 31); /* C truncation */
  /* round(hi / 2^right), ties away from zero */
  if (right == 0) return (int32_t)hi;
  int64_t d = (int64_t)1 << right, q = hi / d, r = hi % d;
  if (2 * (r < 0 ? -r : r) >= d) q += hi < 0 ? -1 : 1;
  return (int32_t)q;
}

static int8_t ref_out(int64_t acc, int32_t m, int32_t shift, int32_t zp, int32_t lo, int32_t hi) {
  int64_t v = (int64_t)ref_mbqm(sat32(acc), m, shift) + zp;
  return (int8_t)(v < lo ? lo : v > hi ? hi : v);
}

static int rnd(int lo, int hi) { return lo + mte_test_pick(hi - lo + 1); }
static int8_t *bytes(int64_t n, int lo, int hi) {
  int8_t *p = (int8_t *)malloc((size_t)n + 1);
  for (int64_t i = 0; i < n; ++i) p[i] = (int8_t)rnd(lo, hi);
  return p;
}
static int8_t *out_buf(int64_t n) {
  int8_t *p = (int8_t *)malloc((size_t)n + 64);
  memset(p, SENTINEL, (size_t)n + 64);
  return p;
}
static int intact(const int8_t *p, int64_t n, int64_t extra) {
  for (int64_t i = n; i < n + extra; ++i)
    if ((uint8_t)p[i] != SENTINEL) return 0;
  return 1;
}

static int g_realistic; /* every channel's multiplier from a real ratio (whole fast tiles) */

/* per-channel multipliers / shifts: realistic (from a real ratio) or any value */
static void channel_params(int64_t O, int32_t *m, int32_t *sh, int32_t *bias, int big) {
  for (int64_t o = 0; o < O; ++o) {
    if (g_realistic || mte_test_pick(3)) {
      double real = ldexp(0.5 + 0.5 * fabs(mte_test_uniform()), -rnd(1, 14));
      mte_quantize_multiplier(real, &m[o], &sh[o]);
    } else {
      m[o] = (int32_t)(mte_test_next() & 0x7fffffff);
      sh[o] = rnd(-31, 30);
    }
    bias[o] = big && mte_test_pick(2) ? (int32_t)(mte_test_next() & 0xffffffff)
                                      : rnd(-20000, 20000);
  }
}

/* ---------------------------------------------------------------- fixed point */

static void test_fixed_point(void) {
  static const int32_t xs[] = {0, 1, -1, 2, -2, 3, -3, 7, -7, 100, -100, 12345, -12345,
                               (1 << 30), -(1 << 30), INT32_MAX, INT32_MIN, INT32_MAX - 1,
                               INT32_MIN + 1, 0x40000001, -0x40000001};
  static const int32_t ms[] = {0, 1, 1 << 30, (1 << 30) + 1, INT32_MAX, 0x5A5A5A5A, 1234567};
  int bad = 0;
  for (size_t i = 0; i < sizeof xs / sizeof *xs; ++i)
    for (size_t j = 0; j < sizeof ms / sizeof *ms; ++j)
      for (int s = -31; s <= 30; ++s) bad += mte__mbqm(xs[i], ms[j], s) != ref_mbqm(xs[i], ms[j], s);
  for (int t = 0; t < 200000; ++t) {
    int32_t x = (int32_t)mte_test_next(), m = (int32_t)(mte_test_next() & 0x7fffffff);
    int s = rnd(-31, 30);
    if (mte_test_pick(2)) x >>= rnd(0, 31);
    bad += mte__mbqm(x, m, s) != ref_mbqm(x, m, s);
  }
  CHECK(bad == 0, "mbqm differs in %d cases", bad);
  CHECK(mte__srdhm(INT32_MIN, INT32_MIN) == INT32_MAX, "srdhm saturates");
  int32_t m, e;
  CHECK(mte_quantize_multiplier(0.5, &m, &e) == MTE_OK && m == (1 << 30) && e == 0, "0.5");
  CHECK(mte_quantize_multiplier(0.0, &m, &e) == MTE_OK && m == 0 && e == 0, "0");
  CHECK(mte_quantize_multiplier(1e-12, &m, &e) == MTE_OK && m == 0 && e == 0, "tiny");
  CHECK(mte_quantize_multiplier(1e12, &m, &e) == MTE_OK && m == INT32_MAX && e == 30, "huge");
  CHECK(mte_quantize_multiplier(nextafter(1.0, 0.0), &m, &e) == MTE_OK && m == (1 << 30) && e == 1,
        "rounds up to 1: %d %d", m, e);
  CHECK(mte_quantize_multiplier(-1.0, &m, &e) == MTE_EINVAL &&
            mte_quantize_multiplier(NAN, &m, &e) == MTE_EINVAL,
        "invalid reals");
}

#if defined(__aarch64__)
/* mte__requant_neon == mte__requant on 4 lanes: edge accumulators (INT32_MIN, ties), every
 * shift -31..30, biases that saturate, zero points and clamps, then random ones */
static void test_requant_neon(void) {
  static const int32_t xs[] = {0, 1, -1, 2, -2, 3, -3, 7, -7, 100, -100, 12345, -12345,
                               (1 << 30), -(1 << 30), INT32_MAX, INT32_MIN, INT32_MAX - 1,
                               INT32_MIN + 1, 0x40000001, -0x40000001, -(1 << 20), 1 << 20};
  static const int32_t ms[] = {0, 1, 1 << 30, (1 << 30) + 1, INT32_MAX, 0x5A5A5A5A, 1234567};
  static const int32_t bs[] = {0, 1, -1, INT32_MAX, INT32_MIN, 1 << 30, -(1 << 30)};
  const int nx = (int)(sizeof xs / sizeof *xs);
  int bad = 0, cases = 0;
  for (int t = 0; t < 60000 + 4 * 7 * 7 * 62; ++t) {
    int32_t x[4], m, bias, zp = 0, lo = -128, hi = 127, comp = 0;
    int shift;
    if (t < 4 * 7 * 7 * 62) { /* every (x quad, m, bias, shift) of the tables */
      const int q = t % 4, j = t / 4 % 7, b = t / 28 % 7;
      shift = t / 196 - 31;
      for (int l = 0; l < 4; ++l) x[l] = xs[(q * 4 + l) % nx] + (q == 3 ? l : 0);
      m = ms[j], bias = bs[b];
    } else {
      for (int l = 0; l < 4; ++l) {
        x[l] = (int32_t)mte_test_next();
        if (mte_test_pick(2)) x[l] >>= rnd(0, 31);
      }
      m = (int32_t)(mte_test_next() & 0x7fffffff), shift = rnd(-31, 30);
      bias = mte_test_pick(4) ? (int32_t)mte_test_next() >> rnd(0, 31) : 0;
      comp = mte_test_pick(2) ? (int32_t)mte_test_next() >> rnd(8, 31) : 0;
      zp = rnd(-128, 127), lo = rnd(-128, 127), hi = rnd(lo, 127);
    }
    const mte_qchan c = mte__qchan(bias, m, shift, comp);
    int32_t got[4];
    vst1q_s32(got, mte__requant_neon(vld1q_s32(x), &c, zp, lo, hi));
    for (int l = 0; l < 4; ++l, ++cases) bad += got[l] != mte__requant(x[l], &c, zp, lo, hi);
  }
  CHECK(bad == 0, "NEON requantization differs in %d of %d cases", bad, cases);
}
#endif

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl")
#include "mte_qrequant_x86.h"

/* Compiled with AVX-512VL enabled, the 256-bit code may use EVEX encodings too, so these
 * lane checks run only where AVX-512 does (an AVX2-only CPU raises SIGILL); there the AVX2
 * requantisation is still checked bit for bit through the kernels of test_qgemm. */

static void requant_lanes(const int32_t *acc, const mte_qchan *c, int32_t zp, int32_t lo,
                          int32_t hi, int32_t *o512, int32_t *o256) {
  if (__builtin_cpu_supports("avx512bw"))
    _mm512_storeu_si512(o512, mte__requant512(_mm512_loadu_si512(acc), c, zp, lo, hi));
  for (int h = 0; h < 2; ++h)
    _mm256_storeu_si256((__m256i *)(o256 + 8 * h),
                        mte__requant256(_mm256_loadu_si256((const __m256i *)(acc + 8 * h)), c,
                                        zp, lo, hi));
}
#pragma GCC pop_options

/* (P + 2^30 + 2^(30+e) - [P < 0] 2^31) >> (31 + e) == rdbpot(srdhm(x, m), e), e >= 1 */
static int32_t one_rounding(int32_t x, int32_t m, int e) {
  const int64_t p = (int64_t)x * m;
  if (e == 0) return (int32_t)((p + (1 << 30)) >> 31);
  return (int32_t)((p + (1ll << 30) + (1ll << (30 + e)) - (p < 0 ? 1ll << 31 : 0)) >> (31 + e));
}

/* x such that srdhm(x, 2^30) or rdbpot(., e) sits on a tie, or next to one */
static int32_t tie_value(int e) {
  const int64_t v = ((int64_t)(int32_t)mte_test_next() >> (e + 1)) * ((int64_t)1 << e) +
                    ((int64_t)1 << e >> 1);
  const int64_t x = 2 * v + rnd(-1, 1);
  return x > INT32_MAX ? INT32_MAX : x < INT32_MIN ? INT32_MIN : (int32_t)x;
}

/* the fast channels' identity over every right shift, then mte__requant512 / 256 against
 * mte__requant on 16 lanes: folded and unfolded channels, every shift, edge and tie
 * accumulators, multipliers 0, 2^30, 2^31 - 1 and random, zero points and clamps */
static void test_requant_x86(void) {
  if (!__builtin_cpu_supports("avx512vl")) {
    printf("  requantisation lane checks: skipped (no AVX-512VL on this CPU)\n");
    return;
  }
  static const int32_t xs[] = {0, 1, -1, 2, -2, 3, -3, 7, -7, 100, -100, 12345, -12345,
                               (1 << 30), -(1 << 30), INT32_MAX, INT32_MIN, INT32_MAX - 1,
                               INT32_MIN + 1, 0x40000001, -0x40000001, -(1 << 20), 1 << 20,
                               (1 << 30) - 1, -(1 << 30) + 1, 0x20000000, -0x20000000};
  static const int32_t ms[] = {0, 1, 1 << 30, (1 << 30) + 1, INT32_MAX, INT32_MAX - 1,
                               0x5A5A5A5A, 1234567};
  const int nx = (int)(sizeof xs / sizeof *xs), nm = (int)(sizeof ms / sizeof *ms);
  int bad = 0;
  for (int e = 0; e < 32; ++e)
    for (int j = 0; j < nm; ++j) {
      for (int i = 0; i < nx; ++i)
        bad += one_rounding(xs[i], ms[j], e) != mte__mbqm(xs[i], ms[j], -e);
      for (int t = 0; t < 3000; ++t) {
        int32_t x = t % 2 ? tie_value(e) : (int32_t)mte_test_next() >> rnd(0, 31);
        int32_t m = j == nm - 1 ? (int32_t)(mte_test_next() & 0x7fffffff) : ms[j];
        bad += one_rounding(x, m, e) != mte__mbqm(x, m, -e);
      }
    }
  CHECK(bad == 0, "one-rounding identity differs in %d cases", bad);
  int bad512 = 0, bad256 = 0, fast = 0, cases = 0;
  for (int t = 0; t < 40000; ++t) {
    const int shift = t < 62 * 64 ? t / 64 - 31 : rnd(-31, 30);
    const int32_t m = t % 3 ? ms[t % nm] : (int32_t)(mte_test_next() & 0x7fffffff);
    const int32_t bias = mte_test_pick(3) ? (int32_t)mte_test_next() >> rnd(0, 31) : 0;
    const int64_t dmax =
        mte_test_pick(2) ? (int64_t)rnd(1, 65536) * 255 * 127 : rnd(0, 9 * 255 * 127);
    const int32_t comp =
        (int32_t)(mte_test_next() % (uint64_t)(dmax + 1)) * (mte_test_pick(2) ? 1 : -1);
    const int32_t zp = rnd(-128, 127), lo = mte_test_pick(2) ? -128 : rnd(-128, 127),
                  hi = mte_test_pick(2) ? 127 : rnd(lo, 127);
    const mte_qchan ref = mte__qchan(bias, m, shift, comp);
    mte_qchan c = ref;
    mte__qchan_fold(&c, dmax);
    fast += c.fast;
    int32_t acc[16], o512[16], o256[16];
    for (int l = 0; l < 16; ++l) { /* dot = acc + comp within [-dmax, dmax] */
      int64_t dot;
      switch (mte_test_pick(4)) {
        case 0: dot = xs[mte_test_pick(nx)]; break;
        case 1: dot = tie_value(-shift > 0 ? -shift : 0) - (int64_t)bias; break;
        case 2: dot = mte_test_pick(2) ? dmax : -dmax; break;
        default: dot = (int64_t)(mte_test_next() % (uint64_t)(2 * dmax + 1)) - dmax;
      }
      if (dot > dmax) dot = dmax;
      if (dot < -dmax) dot = -dmax;
      acc[l] = (int32_t)((uint32_t)(int32_t)dot - (uint32_t)comp);
    }
    requant_lanes(acc, &c, zp, lo, hi, o512, o256);
    for (int l = 0; l < 16; ++l, ++cases) {
      const int32_t want = mte__requant(acc[l], &ref, zp, lo, hi);
      bad512 += __builtin_cpu_supports("avx512bw") && o512[l] != want;
      bad256 += o256[l] != want;
      bad += mte__requant(acc[l], &c, zp, lo, hi) != want;
    }
  }
  CHECK(bad == 0, "folded channels differ (scalar) in %d of %d cases", bad, cases);
  CHECK(bad512 == 0, "AVX-512 requantization differs in %d of %d cases", bad512, cases);
  CHECK(bad256 == 0, "AVX2 requantization differs in %d of %d cases", bad256, cases);
  CHECK(fast > 1000, "only %d fast channels", fast);
}
#endif

/* ---------------------------------------------------------------- convolution */

typedef struct shape {
  int64_t N, C, H, W, O, kh, kw, sh, sw, pt, pb, pl, pr, dh, dw, G;
} shape;

static void ref_conv(const shape *s, int64_t Ho, int64_t Wo, const int8_t *x, int32_t xzp,
                     const int8_t *w, const int32_t *bias, const int32_t *m, const int32_t *sh,
                     int32_t yzp, int32_t lo, int32_t hi, int8_t *y) {
  const int64_t Cg = s->C / s->G, Og = s->O / s->G;
  for (int64_t n = 0; n < s->N; ++n)
    for (int64_t o = 0; o < s->O; ++o)
      for (int64_t r = 0; r < Ho; ++r)
        for (int64_t c0 = 0; c0 < Wo; ++c0) {
          int64_t acc = bias ? bias[o] : 0;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t i = 0; i < s->kh; ++i)
              for (int64_t j = 0; j < s->kw; ++j) {
                int64_t ih = r * s->sh + i * s->dh - s->pt, iw = c0 * s->sw + j * s->dw - s->pl;
                int32_t xv = ih >= 0 && ih < s->H && iw >= 0 && iw < s->W
                                 ? x[((n * s->C + (o / Og) * Cg + c) * s->H + ih) * s->W + iw]
                                 : xzp;
                acc += (int64_t)(xv - xzp) * w[((o * Cg + c) * s->kh + i) * s->kw + j];
              }
          y[((n * s->O + o) * Ho + r) * Wo + c0] = ref_out(acc, m[o], sh[o], yzp, lo, hi);
        }
}

static void desc_of(const shape *s, mte_conv2d_desc *d) {
  *d = (mte_conv2d_desc){s->N, s->C, s->H, s->W, s->O, s->kh, s->kw, 0, 0, s->sh, s->sw,
                         s->pt, s->pb, s->pl, s->pr, s->dh, s->dw, s->G};
  d->out_h = mte_conv2d_output_size(s->H, s->kh, s->sh, s->pt, s->pb, s->dh);
  d->out_w = mte_conv2d_output_size(s->W, s->kw, s->sw, s->pl, s->pr, s->dw);
}

static int conv_case(const char *isa, const shape *s) {
  mte_conv2d_desc d;
  desc_of(s, &d);
  if (d.out_h < 1 || d.out_w < 1) return 0;
  const int64_t nx = s->N * s->C * s->H * s->W, nw = s->O * (s->C / s->G) * s->kh * s->kw;
  const int64_t ny = s->N * s->O * d.out_h * d.out_w;
  const int sat = mte_test_pick(4) == 0;
  int8_t *x = bytes(nx, -128, 127), *w = bytes(nw, sat ? 120 : -127, 127);
  int32_t *m = malloc(4 * s->O), *sh = malloc(4 * s->O), *bias = malloc(4 * s->O);
  channel_params(s->O, m, sh, bias, sat);
  const int32_t xzp = sat ? -128 : rnd(-128, 127), yzp = rnd(-128, 127);
  int32_t lo = mte_test_pick(3) ? -128 : rnd(-128, 0), hi = mte_test_pick(3) ? 127 : rnd(lo, 127);
  if (sat) for (int64_t i = 0; i < nx; ++i) x[i] = 127; /* the largest |x - x_zp| * w sums */
  const int use_bias = mte_test_pick(5) != 0;
  int8_t *expect = out_buf(ny), *got = out_buf(ny);
  ref_conv(s, d.out_h, d.out_w, x, xzp, w, use_bias ? bias : NULL, m, sh, yzp, lo, hi, expect);
  mte_requant rq = {m, sh, yzp, lo, hi};
  int st = mte_qconv2d(&d, x, xzp, w, use_bias ? bias : NULL, &rq, got, NULL);
  int64_t diff = 0;
  for (int64_t i = 0; i < ny; ++i) diff += got[i] != expect[i];
  CHECK(st == MTE_OK && diff == 0 && intact(got, ny, 64),
        "%s qconv2d N%lld C%lld %lldx%lld O%lld k%lldx%lld s%lld,%lld p%lld,%lld,%lld,%lld "
        "d%lld,%lld g%lld xzp %d: st %d, %lld of %lld differ",
        isa, (long long)s->N, (long long)s->C, (long long)s->H, (long long)s->W,
        (long long)s->O, (long long)s->kh, (long long)s->kw, (long long)s->sh,
        (long long)s->sw, (long long)s->pt, (long long)s->pb, (long long)s->pl,
        (long long)s->pr, (long long)s->dh, (long long)s->dw, (long long)s->G, xzp, st,
        (long long)diff, (long long)ny);
  free(x), free(w), free(m), free(sh), free(bias), free(expect), free(got);
  return diff != 0 || st != MTE_OK;
}

static void test_conv(const char *isa) {
  int fails = 0;
  /* pointwise and GEMM edges: O and pixels around the tiles, K around 4 */
  for (int O = 1; O <= 17 && !fails; O += (g_quick ? 4 : 1))
    for (int C = 1; C <= 9; C += 2) {
      shape s = {1, C, 1, rnd(1, 70), O, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1};
      fails += conv_case(isa, &s);
    }
  for (int P = 1; P <= 130 && !fails; P += (g_quick ? 13 : 3)) {
    shape s = {2, rnd(1, 40), 1, P, rnd(1, 20), 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1};
    fails += conv_case(isa, &s);
  }
  /* every channel fast (the kernels' all-fast epilogues): full and partial tiles */
  g_realistic = 1;
  for (int O = 7; O <= 34 && !fails; O += (g_quick ? 9 : 3)) {
    shape s = {1, rnd(1, 40), 1, rnd(1, 100), O, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1};
    fails += conv_case(isa, &s);
    shape d = {1, O, rnd(1, 20), rnd(1, 90), O, 3, 3, rnd(1, 2), rnd(1, 2), 1, 1, 1, 1, 1, 1, O};
    fails += conv_case(isa, &d);
  }
  /* every width of the last column tile (N mod 32 = 0..31, N < 16 too: the 8 x 16 tail),
   * all-fast and mixed channels, rows 1..20 */
  for (int t = 0; t < 32 && !fails; t += (g_quick ? 5 : 1))
    for (int q = 0; q < 3; ++q) {
      g_realistic = (t + q) % 2;
      shape s = {1, rnd(1, 40), 1, 32 * q + t + (q == 0 && t == 0), rnd(1, 20), 1, 1, 1, 1,
                 0, 0, 0, 0, 1, 1, 1};
      fails += conv_case(isa, &s);
    }
  g_realistic = 0;
  /* depthwise 3x3: the qdepthwise route */
  for (int t = 0; t < (g_quick ? 12 : 60) && !fails; ++t) {
    int64_t C = rnd(1, 5), st = rnd(1, 2), p = rnd(0, 1);
    shape s = {rnd(1, 2), C, rnd(1, 20), rnd(1, 90), C, 3, 3, st, st, p, p, p, p, 1, 1, C};
    if (t % 5 == 0) s.pt = rnd(0, 2), s.pb = rnd(0, 2), s.pl = rnd(0, 2), s.pr = rnd(0, 2);
    if (t % 3 == 1) s.sh = rnd(1, 3), s.sw = rnd(1, 2); /* the row phases: sh != sw */
    if (t % 7 == 2) s.C = s.O = s.G = rnd(20, 70);     /* many planes, each its own channel */
    if (t % 11 == 3) s.W = rnd(100, 200); /* rows of more than one vector at stride 2 too */
    fails += conv_case(isa, &s);
  }
  /* everything: groups, strides, dilation, padding */
  for (int t = 0; t < (g_quick ? 25 : 150) && !fails; ++t) {
    int64_t G = mte_test_pick(3) ? 1 : rnd(1, 4);
    shape s = {rnd(1, 2), G * rnd(1, 8), rnd(1, 12), rnd(1, 40), G * rnd(1, 12), rnd(1, 4),
               rnd(1, 4), rnd(1, 3), rnd(1, 3), rnd(0, 2), rnd(0, 2), rnd(0, 2), rnd(0, 2),
               rnd(1, 2), rnd(1, 2), G};
    fails += conv_case(isa, &s);
  }
  /* reductions of 64 and more (the AMX kernel's: 32 x 32 tiles, k padded to 64), O and
   * pixels around 32, K around 64, realistic and arbitrary channels, 1x1 and 3x3 */
  for (int t = 0; t < (g_quick ? 16 : 80) && !fails; ++t) {
    g_realistic = t % 2;
    const int64_t k = t % 3 ? 1 : 3, C = k == 1 ? rnd(64, 300) : rnd(8, 70);
    shape s = {rnd(1, 2), C, rnd(1, 9), rnd(1, 40), rnd(1, 70), k, k, 1, 1,
               k / 2, k / 2, k / 2, k / 2, 1, 1, 1};
    fails += conv_case(isa, &s);
  }
  g_realistic = 0;
  /* long reductions (k runs past the L2 block) and a wide image */
  shape big = {1, 300, 9, 9, 19, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  fails += conv_case(isa, &big);
  shape wide = {1, 16, 4, 700, 9, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1};
  fails += conv_case(isa, &wide);
  if (!g_quick) {
    shape deep = {1, 7282, 1, 33, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}; /* K = 65538: refused */
    mte_conv2d_desc d;
    desc_of(&deep, &d);
    int8_t w1 = 1;
    mte_qconv2d_plan *p = NULL;
    CHECK(mte_qconv2d_prepare(&d, &w1, &p) == MTE_EINVAL && p == NULL, "K > 65536 refused");
    shape edge = {1, 7281, 1, 20, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}; /* K = 65529 */
    fails += conv_case(isa, &edge);
  }
  /* a prepared plan runs many calls, and refuses another ISA's or another shape's call */
  shape s = {1, 8, 6, 6, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  mte_conv2d_desc d;
  desc_of(&s, &d);
  int8_t *x = bytes(8 * 36, -128, 127), *w = bytes(12 * 72, -127, 127), *y = out_buf(12 * 36);
  int32_t m[12], sh[12];
  for (int o = 0; o < 12; ++o) mte_quantize_multiplier(0.01, &m[o], &sh[o]);
  mte_requant rq = {m, sh, 3, -128, 127};
  mte_qconv2d_plan *p;
  CHECK(mte_qconv2d_prepare(&d, w, &p) == MTE_OK, "prepare");
  CHECK(mte_qconv2d_run(p, &d, x, 0, NULL, &rq, y, NULL) == MTE_OK, "run");
  mte_conv2d_desc d2 = d;
  d2.in_channels = 16, d2.groups = 2;
  CHECK(mte_qconv2d_run(p, &d2, x, 0, NULL, &rq, y, NULL) == MTE_EINVAL, "shape mismatch");
  /* bound (a GEMM conv and a narrow depthwise one): the bytes of run; unbound, a changed
   * ISA or a bad bind: refused, the plan unchanged */
  int8_t *y2 = out_buf(12 * 36);
  int32_t bias[12];
  for (int o = 0; o < 12; ++o) bias[o] = 150 * o - 900;
  CHECK(mte_qconv2d_run_bound(p, x, y2, NULL) == MTE_EINVAL, "unbound plan refused");
  CHECK(mte_qconv2d_bind(p, &d2, -7, bias, &rq) == MTE_EINVAL, "bind: shape mismatch");
  CHECK(mte_qconv2d_bind(p, &d, -7, bias, &rq) == MTE_OK, "bind");
  CHECK(mte_qconv2d_run(p, &d, x, -7, bias, &rq, y, NULL) == MTE_OK &&
            mte_qconv2d_run_bound(p, x, y2, NULL) == MTE_OK && memcmp(y, y2, 12 * 36) == 0,
        "%s: bound run equals run", isa);
  if (strcmp(isa, "generic") != 0) {
    CHECK(mte_set_isa("generic") == MTE_OK, "generic");
    CHECK(mte_qconv2d_run_bound(p, x, y2, NULL) == MTE_EINVAL, "bound to another ISA: refused");
    CHECK(mte_set_isa(isa) == MTE_OK, "back to %s", isa);
  }
  mte_qconv2d_free(p);
  shape dws = {2, 8, 6, 7, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 8};
  desc_of(&dws, &d);
  int8_t *wd = bytes(8 * 9, -127, 127);
  CHECK(mte_qconv2d_prepare(&d, wd, &p) == MTE_OK && mte_qconv2d_bind(p, &d, 5, bias, &rq) == MTE_OK,
        "depthwise bind");
  int8_t *xd = bytes(2 * 8 * 42, -128, 127), *yd = out_buf(2 * 8 * 42), *yd2 = out_buf(2 * 8 * 42);
  CHECK(mte_qconv2d_run(p, &d, xd, 5, bias, &rq, yd, NULL) == MTE_OK &&
            mte_qconv2d_run_bound(p, xd, yd2, NULL) == MTE_OK && memcmp(yd, yd2, 2 * 8 * 42) == 0,
        "%s: bound depthwise run equals run", isa);
  mte_qconv2d_free(p);
  free(wd), free(xd), free(yd), free(yd2), free(y2);
  free(x), free(w), free(y);
  CHECK(fails == 0, "%s: %d conv cases failed", isa, fails);
}

#include "test_int8_more.h"

int main(int argc, char **argv) {
  g_quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  test_fixed_point();
#if defined(__aarch64__)
  test_requant_neon();
#endif
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  if (__builtin_cpu_supports("avx2")) test_requant_x86();
#endif
  char list[256];
  snprintf(list, sizeof list, "%s", mte_compiled_isas());
  for (char *isa = strtok(list, " "); isa; isa = strtok(NULL, " ")) {
    if (mte_set_isa(isa) != MTE_OK) continue;
    printf("int8 on %s (qgemm %s, qdepthwise %s)\n", isa, mte_family_isa("qgemm"),
           mte_family_isa("qdepthwise"));
    test_conv(isa);
    test_linear(isa);
    mte_set_num_threads(3);
    test_conv(isa); /* threads split the blocks and planes */
    mte_set_num_threads(1);
  }
  mte_set_isa("auto");
  test_elementwise();
  test_pools();
  test_errors();
  return mte_test_summary("test_int8");
}
