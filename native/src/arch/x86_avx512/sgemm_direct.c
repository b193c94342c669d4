/*
 * x86_avx512/sgemm_direct.c - the AVX-512 tile for GEMMs whose B is read in place
 * (mte_direct_tile in mte_internal.h): the 1x1 convolutions of conv.c, where B is the input
 * x itself, row-major Cin x HW.
 *
 * Why not pack B: for a 1x1 conv B is already row-major K x N, so packing it into NR-wide
 * panels only copies it; with few output channels (16, 24, 32 for MobileNetV2's project
 * convs) each panel is reused by 2-4 row tiles only, and the copy is a visible share of the
 * call. Here the microkernel loads the rows of x directly (row stride ldb; the L1 stride
 * prefetcher follows them), and masked loads / stores (lanes outside the mask touch no
 * memory) take the ragged right edge, so no edge tile goes through a stack buffer.
 *
 * Tile: MR = 8 rows (the packed weight panels' height, shared with sgemm_kernel.c) by a
 * width of up to 49 columns, in two parts:
 *   - nv = 1..3 zmm vectors per row (8 x nv accumulators, up to 24: enough independent FMA
 *     chains for 2 FMA pipes x 4 cycles), the last one masked when the width ends inside it;
 *   - xc = 0..4 extra columns vectorised down the 8 rows instead (one ymm accumulator per
 *     column, fed by a ymm load of the packed A column and a broadcast of B), for widths
 *     just past a multiple of 16: a 7x7 image has 49 = 3 x 16 + 1 columns, which as 16-wide
 *     vectors would be 64 computed columns (77% useful), and as 48 + 1 is 98%.
 * direct_plan cuts a row of n columns into such tiles: widths of 48 and 32, the remainder
 * as xc columns of the last tile (<= 4 past a multiple of 16) or its masked last vector.
 *
 * Epilogue in registers, before the only store of the tile: the accumulators start at the
 * bias (first k slice) instead of zero, and on the last slice the residual tile is added
 * and ReLU / ReLU6 applied (NaN propagates, as in sgemm_kernel.c).
 */
#include "../../mte_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define MR 8

static inline __attribute__((always_inline)) __m512 act_v(__m512 r, int act) {
  if (act != MTE_ACT_NONE) r = _mm512_max_ps(_mm512_setzero_ps(), r);
  if (act == MTE_ACT_RELU6) r = _mm512_min_ps(_mm512_set1_ps(6.0f), r);
  return r;
}

static inline float act_s(float v, int act) {
  if (act != MTE_ACT_NONE) v = v < 0.0f ? 0.0f : v; /* NaN stays NaN */
  if (act == MTE_ACT_RELU6) v = v > 6.0f ? 6.0f : v;
  return v;
}

/* The tile with NV vectors (the last masked by lm) and XC down-the-rows columns. */
static inline __attribute__((always_inline)) void
direct_body(const mte_direct_tile *t, const int NV, const int XC, __mmask16 lm) {
  const float *MTE_RESTRICT a = t->a;
  const float *MTE_RESTRICT b = t->b;
  const int64_t ldb = t->ldb, kc = t->kc;
  const int rows = t->rows;
  const __mmask8 rmask = (__mmask8)((1u << rows) - 1u);
  const int seed = t->init_bias && t->bias;
  __m512 acc[MR][3];
  __m256 xa[4];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    const __m512 v0 = seed && i < rows ? _mm512_set1_ps(t->bias[i]) : _mm512_setzero_ps();
#pragma GCC unroll 3
    for (int v = 0; v < NV; ++v) acc[i][v] = v0;
  }
  const __m256 xb = seed ? _mm256_maskz_loadu_ps(rmask, t->bias) : _mm256_setzero_ps();
#pragma GCC unroll 4
  for (int e = 0; e < XC; ++e) xa[e] = xb;

  for (int64_t p = 0; p < kc; ++p) {
    const float *br = b + p * ldb;
    __m512 bv[3];
#pragma GCC unroll 3
    for (int v = 0; v < NV; ++v)
      bv[v] = v < NV - 1 ? _mm512_loadu_ps(br + 16 * v) : _mm512_maskz_loadu_ps(lm, br + 16 * v);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m512 av = _mm512_set1_ps(a[p * MR + i]);
#pragma GCC unroll 3
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_fmadd_ps(av, bv[v], acc[i][v]);
    }
    if (XC) {
      const __m256 ac = _mm256_loadu_ps(a + p * MR);
#pragma GCC unroll 4
      for (int e = 0; e < XC; ++e)
        xa[e] = _mm256_fmadd_ps(ac, _mm256_set1_ps(br[16 * NV + e]), xa[e]);
    }
  }

  const int act = t->last ? t->act : MTE_ACT_NONE;
  const float *res = t->last ? t->res : NULL;
  const int add_c = t->beta != 0.0f;
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    if (i >= rows) break;
    float *cr = t->c + i * t->ldc;
    const float *rr = res ? res + i * t->ldr : NULL;
#pragma GCC unroll 3
    for (int v = 0; v < NV; ++v) {
      const __mmask16 m = v < NV - 1 ? (__mmask16)0xFFFF : lm;
      __m512 r = acc[i][v];
      if (add_c) r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(m, cr + 16 * v));
      if (rr) r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(m, rr + 16 * v));
      _mm512_mask_storeu_ps(cr + 16 * v, m, act_v(r, act));
    }
  }
  if (XC) {
    float col[4][8];
#pragma GCC unroll 4
    for (int e = 0; e < XC; ++e) _mm256_storeu_ps(col[e], xa[e]);
    for (int i = 0; i < rows; ++i) {
      float *cr = t->c + i * t->ldc + 16 * NV;
      const float *rr = res ? res + i * t->ldr + 16 * NV : NULL;
      for (int e = 0; e < XC; ++e) {
        float v = col[e][i];
        if (add_c) v += cr[e];
        if (rr) v += rr[e];
        cr[e] = act_s(v, act);
      }
    }
  }
}

#define VARIANT(NV, XC)                                                    \
  static void direct_##NV##_##XC(const mte_direct_tile *t, __mmask16 lm) { \
    direct_body(t, NV, XC, lm);                                            \
  }
VARIANT(0, 1) VARIANT(0, 2) VARIANT(0, 3) VARIANT(0, 4)
VARIANT(1, 0) VARIANT(1, 1) VARIANT(1, 2) VARIANT(1, 3) VARIANT(1, 4)
VARIANT(2, 0) VARIANT(2, 1) VARIANT(2, 2) VARIANT(2, 3) VARIANT(2, 4)
VARIANT(3, 0) VARIANT(3, 1)
#undef VARIANT

typedef void (*variant_fn)(const mte_direct_tile *, __mmask16);
static const variant_fn k_variants[4][5] = {
    {NULL, direct_0_1, direct_0_2, direct_0_3, direct_0_4},
    {direct_1_0, direct_1_1, direct_1_2, direct_1_3, direct_1_4},
    {direct_2_0, direct_2_1, direct_2_2, direct_2_3, direct_2_4},
    {direct_3_0, direct_3_1, NULL, NULL, NULL},
};

/* width w (1..49) -> full vectors, extra columns, or a masked last vector */
void mte__direct_avx512(const mte_direct_tile *t) {
  const int w = t->width, full = w / 16, r = w % 16;
  if (r == 0)
    k_variants[full][0](t, (__mmask16)0xFFFF);
  else if (r <= 4 && (full <= 2 || r == 1))
    k_variants[full][r](t, (__mmask16)0xFFFF);
  else /* full + 1 vectors, the last holding r columns (full <= 2 here, as w <= 47) */
    k_variants[full + 1][0](t, (__mmask16)((1u << r) - 1u));
}

/* Tile widths for a row of n columns (see the header); returns the count. */
int mte__direct_plan_avx512(int64_t n, int *w) {
  if (n <= 0) return 0;
  if (n <= 49) {
    w[0] = (int)n;
    return 1;
  }
  int64_t v = n / 16, r = n % 16, masked = 0;
  if (r > 4) masked = 16 - r, ++v, r = 0; /* the remainder as a masked vector */
  int64_t threes = v / 3, twos = 0;      /* v = 3 * threes + 2 * twos */
  if (v % 3 == 2) twos = 1;
  if (v % 3 == 1) threes -= 1, twos = 2; /* v >= 4 here since n > 49 */
  int ones = 0;
  if (r > 1 && twos == 0) { /* the extra columns go on a tile of <= 2 vectors */
    if (threes >= 2)
      threes -= 2, twos = 3;
    else
      threes = 0, twos = 1, ones = 1; /* v == 3 */
  }
  int k = 0;
  for (int64_t i = 0; i < threes; ++i) w[k++] = 48;
  for (int64_t i = 0; i < twos; ++i) w[k++] = 32;
  if (ones) w[k++] = 16;
  w[k - 1] += (int)r - (int)masked;
  return k;
}

#endif
