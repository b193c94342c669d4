/*
 * x86_avx512/depthwise3x3.c - depthwise 3x3 plane kernels for AVX-512.
 *
 * Vectorised over 16 output columns. The plane is cut into vertical strips one vector
 * wide, and each strip is rolled down the plane: an input row's three taps (left, centre,
 * right) are loaded once and stay in registers while the three output rows that use them
 * are computed, so every output row costs one new input row (two at stride 2), nine FMAs
 * in three independent chains and one store, with nothing else in the loop. (Tried first:
 * blocks of 4 output rows x 16 columns sharing 6 input rows; the rolled strip keeps the
 * FMA pipes busier, ~90% of peak on Zen 4 against ~70%.)
 *
 * No padding branches: AVX-512 loads and stores take a lane mask and never touch masked
 * lanes, so column -1 of the first strip, the columns past the right edge and the last
 * partial strip are just masks (zeros come in, nothing goes out), computed once per strip.
 * Rows above and below the plane come from the zero row. A last strip of at most 8 columns
 * runs on 256-bit registers (half the FMA cost on cores that split 512-bit operations).
 *
 * Stride 2: two loads give 32 consecutive inputs x[2s .. 2s+31] and vpermt2ps splits them
 * into the even (centre, x[2s+2k]) and odd (right, x[2s+2k+1]) taps; the same two loads
 * one float earlier give the left taps x[2s+2k-1] as their even lanes.
 */
#include "../../mte_depthwise_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define INLINE static inline __attribute__((always_inline))

/* lanes k < n */
INLINE __mmask16 below(int64_t n) {
  if (n >= 16) return (__mmask16)0xFFFF;
  if (n <= 0) return 0;
  return (__mmask16)((1u << n) - 1u);
}

INLINE __m512 act_v(__m512 v, int act) {
  if (act == MTE_ACT_RELU) return _mm512_max_ps(_mm512_setzero_ps(), v); /* NaN stays */
  if (act == MTE_ACT_RELU6)
    return _mm512_min_ps(_mm512_set1_ps(6.0f), _mm512_max_ps(_mm512_setzero_ps(), v));
  return v;
}

INLINE __m256 act_h(__m256 v, int act) {
  if (act == MTE_ACT_RELU) return _mm256_max_ps(_mm256_setzero_ps(), v); /* NaN stays */
  if (act == MTE_ACT_RELU6)
    return _mm256_min_ps(_mm256_set1_ps(6.0f), _mm256_max_ps(_mm256_setzero_ps(), v));
  return v;
}

/* bias + the three rows of taps, as three independent FMA chains */
#define DW_SUM(FMA, MUL, ADD, w, b, pa, pb, pd, ca, cb, cd, na, nb, nd)                      \
  ADD(ADD(FMA(w[2], pd, FMA(w[1], pb, FMA(w[0], pa, b))),                                  \
          FMA(w[5], cd, FMA(w[4], cb, MUL(w[3], ca)))),                                     \
      FMA(w[8], nd, FMA(w[7], nb, MUL(w[6], na))))

/* stride 1: one strip of 16 columns starting at c */
INLINE void strip_s1(const float *x, int64_t H, int64_t W, int64_t c, const __m512 *w,
                     __m512 vb, int act, const float *zeros, float *y) {
  const int64_t rem = W - c;
  const __mmask16 mc = below(rem), mr = below(rem - 1);
  const __mmask16 ml = (__mmask16)(below(rem + 1) & (c == 0 ? 0xFFFEu : 0xFFFFu));
  __m512 pa = _mm512_setzero_ps(), pb = pa, pd = pa; /* row r-1: padding for r = 0 */
  __m512 ca = _mm512_maskz_loadu_ps(ml, x + c - 1), cb = _mm512_maskz_loadu_ps(mc, x + c),
         cd = _mm512_maskz_loadu_ps(mr, x + c + 1);
  for (int64_t r = 0; r < H; ++r) {
    const float *src = (r + 1 < H ? x + (r + 1) * W : zeros) + c;
    const __m512 na = _mm512_maskz_loadu_ps(ml, src - 1);
    const __m512 nb = _mm512_maskz_loadu_ps(mc, src);
    const __m512 nd = _mm512_maskz_loadu_ps(mr, src + 1);
    const __m512 acc = DW_SUM(_mm512_fmadd_ps, _mm512_mul_ps, _mm512_add_ps, w, vb, pa, pb, pd,
                              ca, cb, cd, na, nb, nd);
    _mm512_mask_storeu_ps(y + r * W + c, mc, act_v(acc, act));
    pa = ca, pb = cb, pd = cd;
    ca = na, cb = nb, cd = nd;
  }
}

/* stride 1: a last strip of at most 8 columns, on 256-bit registers */
INLINE void strip_s1_half(const float *x, int64_t H, int64_t W, int64_t c, const __m256 *w,
                          __m256 vb, int act, const float *zeros, float *y) {
  const int64_t rem = W - c;
  const __mmask8 mc = (__mmask8)below(rem), mr = (__mmask8)below(rem - 1);
  const __mmask8 ml = (__mmask8)(below(rem + 1) & (c == 0 ? 0xFEu : 0xFFu));
  __m256 pa = _mm256_setzero_ps(), pb = pa, pd = pa;
  __m256 ca = _mm256_maskz_loadu_ps(ml, x + c - 1), cb = _mm256_maskz_loadu_ps(mc, x + c),
         cd = _mm256_maskz_loadu_ps(mr, x + c + 1);
  for (int64_t r = 0; r < H; ++r) {
    const float *src = (r + 1 < H ? x + (r + 1) * W : zeros) + c;
    const __m256 na = _mm256_maskz_loadu_ps(ml, src - 1);
    const __m256 nb = _mm256_maskz_loadu_ps(mc, src);
    const __m256 nd = _mm256_maskz_loadu_ps(mr, src + 1);
    const __m256 acc = DW_SUM(_mm256_fmadd_ps, _mm256_mul_ps, _mm256_add_ps, w, vb, pa, pb, pd,
                              ca, cb, cd, na, nb, nd);
    _mm256_mask_storeu_ps(y + r * W + c, mc, act_h(acc, act));
    pa = ca, pb = cb, pd = cd;
    ca = na, cb = nb, cd = nd;
  }
}

static void plane_s1(const float *MTE_RESTRICT x, int64_t H, int64_t W, const float *wt,
                     float bias, int act, const float *zeros, float *MTE_RESTRICT y) {
  __m512 w[9];
  __m256 wh[9];
  for (int k = 0; k < 9; ++k) w[k] = _mm512_set1_ps(wt[k]), wh[k] = _mm256_set1_ps(wt[k]);
  int64_t c = 0;
  for (; W - c > 8; c += 16) strip_s1(x, H, W, c, w, _mm512_set1_ps(bias), act, zeros, y);
  if (c < W) strip_s1_half(x, H, W, c, wh, _mm256_set1_ps(bias), act, zeros, y);
}

/* stride 2: the left, centre and right taps of 16 outputs at input column 2s of row p */
INLINE void taps_s2(const float *p, __mmask16 ma, __mmask16 mb, __mmask16 mc, __mmask16 md,
                    __m512i even, __m512i odd, __m512 *l, __m512 *c, __m512 *r) {
  const __m512 a = _mm512_maskz_loadu_ps(ma, p), b = _mm512_maskz_loadu_ps(mb, p + 16);
  const __m512 e = _mm512_maskz_loadu_ps(mc, p - 1), f = _mm512_maskz_loadu_ps(md, p + 15);
  *c = _mm512_permutex2var_ps(a, even, b);
  *r = _mm512_permutex2var_ps(a, odd, b);
  *l = _mm512_permutex2var_ps(e, even, f);
}

static void plane_s2(const float *MTE_RESTRICT x, int64_t H, int64_t W, const float *wt,
                     float bias, int act, const float *zeros, float *MTE_RESTRICT y) {
  const int64_t Ho = (H - 1) / 2 + 1, Wo = (W - 1) / 2 + 1;
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  __m512 w[9];
  for (int k = 0; k < 9; ++k) w[k] = _mm512_set1_ps(wt[k]);
  const __m512 vb = _mm512_set1_ps(bias);
  for (int64_t s = 0; s < Wo; s += 16) {
    const int64_t rem = W - 2 * s; /* inputs from column 2s on */
    const __mmask16 ma = below(rem), mb = below(rem - 16), md = below(rem - 15);
    const __mmask16 mc = (__mmask16)(below(rem + 1) & (s == 0 ? 0xFFFEu : 0xFFFFu));
    const __mmask16 mo = below(Wo - s);
    __m512 pa = _mm512_setzero_ps(), pb = pa, pd = pa; /* input row 2r-1 */
    for (int64_t r = 0; r < Ho; ++r) {
      const float *m = x + 2 * r * W + 2 * s;
      const float *n = (2 * r + 1 < H ? x + (2 * r + 1) * W : zeros) + 2 * s;
      __m512 ca, cb, cd, na, nb, nd;
      taps_s2(m, ma, mb, mc, md, even, odd, &ca, &cb, &cd);
      taps_s2(n, ma, mb, mc, md, even, odd, &na, &nb, &nd);
      const __m512 acc = DW_SUM(_mm512_fmadd_ps, _mm512_mul_ps, _mm512_add_ps, w, vb, pa, pb,
                                pd, ca, cb, cd, na, nb, nd);
      _mm512_mask_storeu_ps(y + r * Wo + s, mo, act_v(acc, act));
      pa = na, pb = nb, pd = nd;
    }
  }
}

/* ---------------------------------------------------------------- weight gradient */

/* acc[3i+j] += g * tap j of kernel row i, for one input row's taps (a, b, d) */
#define WG_ROW(acc, i, g, a, b, d)                                 \
  do {                                                              \
    acc[3 * (i)] = _mm512_fmadd_ps(g, a, acc[3 * (i)]);             \
    acc[3 * (i) + 1] = _mm512_fmadd_ps(g, b, acc[3 * (i) + 1]);     \
    acc[3 * (i) + 2] = _mm512_fmadd_ps(g, d, acc[3 * (i) + 2]);     \
  } while (0)

/* stride 1, the same strips as the forward pass: each input row h meets gradient rows
 * h+1 (kernel row 0), h (row 1) and h-1 (row 2) */
static void wgrad_s1(const float *gy, const float *x, int64_t H, int64_t W, const float *zeros,
                     float *gw9) {
  __m512 acc[9];
#pragma GCC unroll 9 /* constant indices keep acc[] in registers */
  for (int k = 0; k < 9; ++k) acc[k] = _mm512_setzero_ps();
  for (int64_t c = 0; c < W; c += 16) {
    const int64_t rem = W - c;
    const __mmask16 mc = below(rem), mr = below(rem - 1);
    const __mmask16 ml = (__mmask16)(below(rem + 1) & (c == 0 ? 0xFFFEu : 0xFFFFu));
    __m512 gp = _mm512_setzero_ps(), gc = _mm512_maskz_loadu_ps(mc, gy + c); /* rows h-1, h */
    for (int64_t h = 0; h < H; ++h) {
      const float *p = x + h * W + c;
      const __m512 a = _mm512_maskz_loadu_ps(ml, p - 1), b = _mm512_maskz_loadu_ps(mc, p),
                   d = _mm512_maskz_loadu_ps(mr, p + 1);
      const __m512 gn = _mm512_maskz_loadu_ps(mc, (h + 1 < H ? gy + (h + 1) * W : zeros) + c);
      WG_ROW(acc, 0, gn, a, b, d);
      WG_ROW(acc, 1, gc, a, b, d);
      WG_ROW(acc, 2, gp, a, b, d);
      gp = gc, gc = gn;
    }
  }
#pragma GCC unroll 9
  for (int k = 0; k < 9; ++k) gw9[k] = _mm512_reduce_add_ps(acc[k]);
}

/* stride 2: gradient row r meets input rows 2r-1, 2r, 2r+1 (taps as in the forward pass) */
static void wgrad_s2(const float *gy, const float *x, int64_t H, int64_t W, const float *zeros,
                     float *gw9) {
  const int64_t Ho = (H - 1) / 2 + 1, Wo = (W - 1) / 2 + 1;
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  __m512 acc[9];
#pragma GCC unroll 9 /* constant indices keep acc[] in registers */
  for (int k = 0; k < 9; ++k) acc[k] = _mm512_setzero_ps();
  for (int64_t s = 0; s < Wo; s += 16) {
    const int64_t rem = W - 2 * s;
    const __mmask16 ma = below(rem), mb = below(rem - 16), md = below(rem - 15);
    const __mmask16 mc = (__mmask16)(below(rem + 1) & (s == 0 ? 0xFFFEu : 0xFFFFu));
    const __mmask16 mo = below(Wo - s);
    __m512 pa = _mm512_setzero_ps(), pb = pa, pd = pa; /* input row 2r-1 */
    for (int64_t r = 0; r < Ho; ++r) {
      const float *m = x + 2 * r * W + 2 * s;
      const float *n = (2 * r + 1 < H ? x + (2 * r + 1) * W : zeros) + 2 * s;
      __m512 ca, cb, cd, na, nb, nd;
      taps_s2(m, ma, mb, mc, md, even, odd, &ca, &cb, &cd);
      taps_s2(n, ma, mb, mc, md, even, odd, &na, &nb, &nd);
      const __m512 g = _mm512_maskz_loadu_ps(mo, gy + r * Wo + s);
      WG_ROW(acc, 0, g, pa, pb, pd);
      WG_ROW(acc, 1, g, ca, cb, cd);
      WG_ROW(acc, 2, g, na, nb, nd);
      pa = na, pb = nb, pd = nd;
    }
  }
#pragma GCC unroll 9
  for (int k = 0; k < 9; ++k) gw9[k] = _mm512_reduce_add_ps(acc[k]);
}

/* ---------------------------------------------------------------- input gradient, stride 2 */

/* Input row h gets gradient row h/2 through kernel row 1 (h even), or rows (h+1)/2 and
 * (h-1)/2 through kernel rows 0 and 2 (h odd). Per 16 gradient columns m: the even input
 * columns 2m get g[m]*w1, the odd ones 2m+1 get g[m]*w2 + g[m+1]*w0; vpermt2ps
 * interleaves the two into 32 consecutive columns. */
static void bwd_input_s2(const float *MTE_RESTRICT gy, int64_t H, int64_t W, const float *w,
                         float *MTE_RESTRICT gx) {
  const int64_t Ho = (H - 1) / 2 + 1, Wo = (W - 1) / 2 + 1;
  const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
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
    for (int64_t m = 0; m < Wo; m += 16) {
      const __mmask16 mg = below(Wo - m), mn = below(Wo - m - 1);
      __m512 ev = _mm512_setzero_ps(), od = _mm512_setzero_ps();
      for (int q = 0; q < n; ++q) {
        const __m512 gc = _mm512_maskz_loadu_ps(mg, g[q] + m);
        const __m512 gn = _mm512_maskz_loadu_ps(mn, g[q] + m + 1);
        ev = _mm512_fmadd_ps(gc, _mm512_set1_ps(wr[q][1]), ev);
        od = _mm512_fmadd_ps(gc, _mm512_set1_ps(wr[q][2]), od);
        od = _mm512_fmadd_ps(gn, _mm512_set1_ps(wr[q][0]), od);
      }
      const int64_t rem = W - 2 * m;
      _mm512_mask_storeu_ps(o + 2 * m, below(rem), _mm512_permutex2var_ps(ev, lo, od));
      _mm512_mask_storeu_ps(o + 2 * m + 16, below(rem - 16), _mm512_permutex2var_ps(ev, hi, od));
    }
  }
}

const mte_dw3x3_kernel mte_dw3x3_kernel_avx512 = {"avx512", plane_s1, plane_s2, wgrad_s1,
                                                  wgrad_s2, bwd_input_s2};

#endif /* __x86_64__ */
