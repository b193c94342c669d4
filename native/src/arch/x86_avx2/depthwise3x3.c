/*
 * x86_avx2/depthwise3x3.c - depthwise 3x3 plane kernels for AVX2 + FMA.
 *
 * The same plan as the AVX-512 file: vertical strips one vector (8 columns) wide, each
 * rolled down the plane so that an input row's taps are loaded once and serve the three
 * output rows around it; nine FMAs in three chains and one store per output row.
 *
 * Padding without per-pixel tests: a strip whose taps all lie inside the row (column >= 1
 * and column + 9 <= W) uses plain loads; only the first strip (column -1 is padding) and
 * the strips at the right edge use vmaskmovps, whose masked lanes read nothing and give 0.
 * Stores are masked only in a last partial strip. Rows outside the plane read the zero row.
 *
 * Stride 2 deinterleaves with in-lane shuffles: from A = x[2s..2s+7], B = x[2s+8..2s+15]
 * shufps 0x88 / 0xDD give the even (centre) and odd (right) taps, and from the same loads
 * one float to the left shufps 0x88 gives the left taps. All three come out in the lane
 * order (0 1 4 5 | 2 3 6 7), so the accumulator does too, and one vpermpd per output
 * vector restores the order before the store.
 */
#include "../../mte_depthwise_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define INLINE static inline __attribute__((always_inline))

static const int32_t k_tab[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

/* lanes k < n */
INLINE __m256i below(int64_t n) {
  n = n < 0 ? 0 : n > 8 ? 8 : n;
  return _mm256_loadu_si256((const __m256i *)(k_tab + 8 - n));
}
/* lanes lo <= k < hi */
INLINE __m256i between(int64_t lo, int64_t hi) {
  return _mm256_andnot_si256(below(lo), below(hi));
}

INLINE __m256 act_v(__m256 v, int act) {
  if (act == MTE_ACT_RELU) return _mm256_max_ps(_mm256_setzero_ps(), v); /* NaN stays */
  if (act == MTE_ACT_RELU6)
    return _mm256_min_ps(_mm256_set1_ps(6.0f), _mm256_max_ps(_mm256_setzero_ps(), v));
  return v;
}

/* load 8 floats at p: plainly, or through the mask m (masked lanes are 0, not read) */
INLINE __m256 load(const int masked, const float *p, __m256i m) {
  return masked ? _mm256_maskload_ps(p, m) : _mm256_loadu_ps(p);
}

INLINE void store(float *p, __m256 v, int64_t rem) {
  if (rem >= 8)
    _mm256_storeu_ps(p, v);
  else
    _mm256_maskstore_ps(p, below(rem), v);
}

/* bias + the three rows of taps, as three independent FMA chains */
#define DW_SUM(w, b, pa, pb, pd, ca, cb, cd, na, nb, nd)                                   \
  _mm256_add_ps(                                                                           \
      _mm256_add_ps(                                                                       \
          _mm256_fmadd_ps(w[2], pd, _mm256_fmadd_ps(w[1], pb, _mm256_fmadd_ps(w[0], pa, b))), \
          _mm256_fmadd_ps(w[5], cd, _mm256_fmadd_ps(w[4], cb, _mm256_mul_ps(w[3], ca)))),  \
      _mm256_fmadd_ps(w[8], nd, _mm256_fmadd_ps(w[7], nb, _mm256_mul_ps(w[6], na))))

/* stride 1: one strip of 8 columns starting at c */
INLINE void strip_s1(const int masked, const float *x, int64_t H, int64_t W, int64_t c,
                     const __m256 *w, __m256 vb, int act, const float *zeros, float *y) {
  const int64_t rem = W - c;
  __m256i ml = _mm256_setzero_si256(), mc = ml, mr = ml;
  if (masked) ml = between(c == 0 ? 1 : 0, rem + 1), mc = below(rem), mr = below(rem - 1);
  __m256 pa = _mm256_setzero_ps(), pb = pa, pd = pa; /* row r-1: padding for r = 0 */
  __m256 ca = load(masked, x + c - 1, ml), cb = load(masked, x + c, mc),
         cd = load(masked, x + c + 1, mr);
  for (int64_t r = 0; r < H; ++r) {
    const float *src = (r + 1 < H ? x + (r + 1) * W : zeros) + c;
    const __m256 na = load(masked, src - 1, ml), nb = load(masked, src, mc),
                 nd = load(masked, src + 1, mr);
    const __m256 acc = DW_SUM(w, vb, pa, pb, pd, ca, cb, cd, na, nb, nd);
    store(y + r * W + c, act_v(acc, act), rem);
    pa = ca, pb = cb, pd = cd;
    ca = na, cb = nb, cd = nd;
  }
}

static void plane_s1(const float *MTE_RESTRICT x, int64_t H, int64_t W, const float *wt,
                     float bias, int act, const float *zeros, float *MTE_RESTRICT y) {
  __m256 w[9];
  for (int k = 0; k < 9; ++k) w[k] = _mm256_set1_ps(wt[k]);
  const __m256 vb = _mm256_set1_ps(bias);
  strip_s1(1, x, H, W, 0, w, vb, act, zeros, y);
  int64_t c = 8;
  for (; c + 9 <= W; c += 8) strip_s1(0, x, H, W, c, w, vb, act, zeros, y);
  for (; c < W; c += 8) strip_s1(1, x, H, W, c, w, vb, act, zeros, y);
}

/* stride 2: left, centre, right taps of 8 outputs at input column 2s of row p, in the
 * lane order (0 1 4 5 | 2 3 6 7) */
INLINE void taps_s2(const int masked, const float *p, const __m256i *m, __m256 *l, __m256 *c,
                    __m256 *r) {
  const __m256 a = load(masked, p, m[0]), b = load(masked, p + 8, m[1]);
  const __m256 e = load(masked, p - 1, m[2]), f = load(masked, p + 7, m[3]);
  *c = _mm256_shuffle_ps(a, b, 0x88);
  *r = _mm256_shuffle_ps(a, b, 0xDD);
  *l = _mm256_shuffle_ps(e, f, 0x88);
}

/* stride 2: one strip of 8 output columns starting at s */
INLINE void strip_s2(const int masked, const float *x, int64_t H, int64_t W, int64_t Ho,
                     int64_t Wo, int64_t s, const __m256 *w, __m256 vb, int act,
                     const float *zeros, float *y) {
  const int64_t rem = W - 2 * s;
  __m256i m[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                  _mm256_setzero_si256()};
  if (masked)
    m[0] = below(rem), m[1] = below(rem - 8), m[2] = between(s == 0 ? 1 : 0, rem + 1),
    m[3] = below(rem - 7);
  __m256 pa = _mm256_setzero_ps(), pb = pa, pd = pa; /* input row 2r-1 */
  for (int64_t r = 0; r < Ho; ++r) {
    const float *mrow = x + 2 * r * W + 2 * s;
    const float *nrow = (2 * r + 1 < H ? x + (2 * r + 1) * W : zeros) + 2 * s;
    __m256 ca, cb, cd, na, nb, nd;
    taps_s2(masked, mrow, m, &ca, &cb, &cd);
    taps_s2(masked, nrow, m, &na, &nb, &nd);
    const __m256 acc = DW_SUM(w, vb, pa, pb, pd, ca, cb, cd, na, nb, nd);
    /* lanes hold columns (0 1 4 5 | 2 3 6 7): swap the middle 64-bit pairs back */
    const __m256 v = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(acc), 0xD8));
    store(y + r * Wo + s, act_v(v, act), Wo - s);
    pa = na, pb = nb, pd = nd;
  }
}

static void plane_s2(const float *MTE_RESTRICT x, int64_t H, int64_t W, const float *wt,
                     float bias, int act, const float *zeros, float *MTE_RESTRICT y) {
  const int64_t Ho = (H - 1) / 2 + 1, Wo = (W - 1) / 2 + 1;
  __m256 w[9];
  for (int k = 0; k < 9; ++k) w[k] = _mm256_set1_ps(wt[k]);
  const __m256 vb = _mm256_set1_ps(bias);
  strip_s2(1, x, H, W, Ho, Wo, 0, w, vb, act, zeros, y);
  int64_t s = 8;
  for (; 2 * s + 16 <= W; s += 8) strip_s2(0, x, H, W, Ho, Wo, s, w, vb, act, zeros, y);
  for (; s < Wo; s += 8) strip_s2(1, x, H, W, Ho, Wo, s, w, vb, act, zeros, y);
}

/* ---------------------------------------------------------------- weight gradient */

/* acc[3i+j] += g * tap j of kernel row i, for one input row's taps (a, b, d) */
#define WG_ROW(acc, i, g, a, b, d)                                 \
  do {                                                              \
    acc[3 * (i)] = _mm256_fmadd_ps(g, a, acc[3 * (i)]);             \
    acc[3 * (i) + 1] = _mm256_fmadd_ps(g, b, acc[3 * (i) + 1]);     \
    acc[3 * (i) + 2] = _mm256_fmadd_ps(g, d, acc[3 * (i) + 2]);     \
  } while (0)

static float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps(s, s, 1)));
}

/* stride 1, one strip: input row h meets gradient rows h+1, h, h-1 (kernel rows 0, 1, 2) */
INLINE void wgrad_strip_s1(const int masked, const float *gy, const float *x, int64_t H,
                           int64_t W, int64_t c, const float *zeros, __m256 *acc) {
  const int64_t rem = W - c;
  __m256i ml = _mm256_setzero_si256(), mc = ml, mr = ml;
  if (masked) ml = between(c == 0 ? 1 : 0, rem + 1), mc = below(rem), mr = below(rem - 1);
  __m256 gp = _mm256_setzero_ps(), gc = load(masked, gy + c, mc);
  for (int64_t h = 0; h < H; ++h) {
    const float *p = x + h * W + c;
    const __m256 a = load(masked, p - 1, ml), b = load(masked, p, mc), d = load(masked, p + 1, mr);
    const __m256 gn = load(masked, (h + 1 < H ? gy + (h + 1) * W : zeros) + c, mc);
    WG_ROW(acc, 0, gn, a, b, d);
    WG_ROW(acc, 1, gc, a, b, d);
    WG_ROW(acc, 2, gp, a, b, d);
    gp = gc, gc = gn;
  }
}

static void wgrad_s1(const float *gy, const float *x, int64_t H, int64_t W, const float *zeros,
                     float *gw9) {
  __m256 acc[9];
#pragma GCC unroll 9 /* constant indices keep acc[] in registers */
  for (int k = 0; k < 9; ++k) acc[k] = _mm256_setzero_ps();
  wgrad_strip_s1(1, gy, x, H, W, 0, zeros, acc);
  int64_t c = 8;
  for (; c + 9 <= W; c += 8) wgrad_strip_s1(0, gy, x, H, W, c, zeros, acc);
  for (; c < W; c += 8) wgrad_strip_s1(1, gy, x, H, W, c, zeros, acc);
#pragma GCC unroll 9
  for (int k = 0; k < 9; ++k) gw9[k] = hsum(acc[k]);
}

/* stride 2, one strip: gradient row r meets input rows 2r-1, 2r, 2r+1. The taps come in
 * the lane order (0 1 4 5 | 2 3 6 7); the gradient is loaded in the same order (the lane
 * order does not matter to a sum, only that all operands share it). */
INLINE void wgrad_strip_s2(const int masked, const float *gy, const float *x, int64_t H,
                           int64_t W, int64_t Ho, int64_t Wo, int64_t s, const float *zeros,
                           __m256 *acc) {
  const int64_t rem = W - 2 * s;
  __m256i m[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                  _mm256_setzero_si256()};
  if (masked)
    m[0] = below(rem), m[1] = below(rem - 8), m[2] = between(s == 0 ? 1 : 0, rem + 1),
    m[3] = below(rem - 7);
  const __m256i mo = below(Wo - s);
  __m256 pa = _mm256_setzero_ps(), pb = pa, pd = pa;
  for (int64_t r = 0; r < Ho; ++r) {
    const float *mrow = x + 2 * r * W + 2 * s;
    const float *nrow = (2 * r + 1 < H ? x + (2 * r + 1) * W : zeros) + 2 * s;
    __m256 ca, cb, cd, na, nb, nd;
    taps_s2(masked, mrow, m, &ca, &cb, &cd);
    taps_s2(masked, nrow, m, &na, &nb, &nd);
    __m256 g = masked ? _mm256_maskload_ps(gy + r * Wo + s, mo) : _mm256_loadu_ps(gy + r * Wo + s);
    g = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(g), 0xD8)); /* to tap order */
    WG_ROW(acc, 0, g, pa, pb, pd);
    WG_ROW(acc, 1, g, ca, cb, cd);
    WG_ROW(acc, 2, g, na, nb, nd);
    pa = na, pb = nb, pd = nd;
  }
}

static void wgrad_s2(const float *gy, const float *x, int64_t H, int64_t W, const float *zeros,
                     float *gw9) {
  const int64_t Ho = (H - 1) / 2 + 1, Wo = (W - 1) / 2 + 1;
  __m256 acc[9];
#pragma GCC unroll 9 /* constant indices keep acc[] in registers */
  for (int k = 0; k < 9; ++k) acc[k] = _mm256_setzero_ps();
  wgrad_strip_s2(1, gy, x, H, W, Ho, Wo, 0, zeros, acc);
  int64_t s = 8;
  for (; 2 * s + 16 <= W; s += 8) wgrad_strip_s2(0, gy, x, H, W, Ho, Wo, s, zeros, acc);
  for (; s < Wo; s += 8) wgrad_strip_s2(1, gy, x, H, W, Ho, Wo, s, zeros, acc);
#pragma GCC unroll 9
  for (int k = 0; k < 9; ++k) gw9[k] = hsum(acc[k]);
}

/* ---------------------------------------------------------------- input gradient, stride 2 */

/* As in the AVX-512 file: per 8 gradient columns m, even input columns 2m get g[m]*w1, odd
 * ones g[m]*w2 + g[m+1]*w0; unpack + vperm2f128 interleave them into 16 columns. */
static void bwd_input_s2(const float *MTE_RESTRICT gy, int64_t H, int64_t W, const float *w,
                         float *MTE_RESTRICT gx) {
  const int64_t Ho = (H - 1) / 2 + 1, Wo = (W - 1) / 2 + 1;
  for (int64_t h = 0; h < H; ++h) {
    const float *g[2], *wr[2];
    int n = 0;
    if (h % 2 == 0) {
      g[n] = gy + (h / 2) * Wo, wr[n++] = w + 3;
    } else {
      if ((h + 1) / 2 < Ho) g[n] = gy + ((h + 1) / 2) * Wo, wr[n++] = w;
      g[n] = gy + ((h - 1) / 2) * Wo, wr[n++] = w + 6;
    }
    float *o = gx + h * W;
    for (int64_t m = 0; m < Wo; m += 8) {
      const int full = m + 9 <= Wo; /* g[m .. m+8] all inside: plain loads */
      const __m256i mg = below(Wo - m), mn = below(Wo - m - 1);
      __m256 ev = _mm256_setzero_ps(), od = _mm256_setzero_ps();
      for (int q = 0; q < n; ++q) {
        const __m256 gc = full ? _mm256_loadu_ps(g[q] + m) : _mm256_maskload_ps(g[q] + m, mg);
        const __m256 gn =
            full ? _mm256_loadu_ps(g[q] + m + 1) : _mm256_maskload_ps(g[q] + m + 1, mn);
        ev = _mm256_fmadd_ps(gc, _mm256_set1_ps(wr[q][1]), ev);
        od = _mm256_fmadd_ps(gc, _mm256_set1_ps(wr[q][2]), od);
        od = _mm256_fmadd_ps(gn, _mm256_set1_ps(wr[q][0]), od);
      }
      const __m256 a = _mm256_unpacklo_ps(ev, od), b = _mm256_unpackhi_ps(ev, od);
      const int64_t rem = W - 2 * m;
      store(o + 2 * m, _mm256_permute2f128_ps(a, b, 0x20), rem);
      if (rem > 8) store(o + 2 * m + 8, _mm256_permute2f128_ps(a, b, 0x31), rem - 8);
    }
  }
}

const mte_dw3x3_kernel mte_dw3x3_kernel_avx2 = {"avx2", plane_s1, plane_s2, wgrad_s1, wgrad_s2,
                                                bwd_input_s2};

#endif /* __x86_64__ */
