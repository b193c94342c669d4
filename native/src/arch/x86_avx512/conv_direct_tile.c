/*
 * x86_avx512/conv_direct_tile.c - the AVX-512 tile of the direct convolution
 * (mte_convdirect_internal.h, driven by conv_direct.c): p <= 7 pixels x 16*kv <= 64 output
 * channels in up to 28 zmm accumulators, 4 for the weight vectors of a tap; each pixel's
 * input value is a broadcast load (a load-port uop, no shuffle on the FMA port 5).
 *
 * Variants: p = 1..7, kv = 1..4 and stride 1, 2 or any (runtime), all from one body.
 * An empty asm on the input pointer at every tap keeps GCC from keeping the input values
 * of one tap in registers for the next (x[q*s + j] overlap across j): that reuse turned
 * the broadcasts into register-to-register shuffles on port 5 and spilled accumulators,
 * 55% of peak instead of ~80%.
 *
 * The store transposes the pixel-major accumulators into y's channel planes with gathers
 * (16 pixels of one channel, stride 64 floats, from L1), adds the residual and applies
 * ReLU / ReLU6 in the same registers.
 */
#include "../../mte_convdirect_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define KB MTE_CD_KB
#define PMAX MTE_CD_PMAX

static inline __attribute__((always_inline)) void body(const mte_cd_tile *t, const int P,
                                                        const int KV, const int64_t S) {
  __m512 acc[PMAX][4];
  const int64_t s = S ? S : t->s;
#pragma GCC unroll 8
  for (int q = 0; q < P; ++q)
#pragma GCC unroll 4
    for (int v = 0; v < KV; ++v)
      acc[q][v] = t->bias ? _mm512_load_ps(t->bias + 16 * v)
                          : _mm512_load_ps(t->acc + q * KB + 16 * v);
  const int kh = t->kh, kw = t->kw;
  const int64_t cs = t->cs, wp = t->wp;
  for (int64_t c = 0; c < t->nc; ++c)
    for (int i = 0; i < kh; ++i) {
      const float *xr = t->x + c * cs + i * wp;
      const float *wr = t->w + (c * kh + i) * kw * KB;
      for (int j = 0; j < kw; ++j) {
        __m512 wv[4];
#pragma GCC unroll 4
        for (int v = 0; v < KV; ++v) wv[v] = _mm512_loadu_ps(wr + j * KB + 16 * v);
        const float *xq = xr + j;
        __asm__("" : "+r"(xq)); /* see the header */
#pragma GCC unroll 8
        for (int q = 0; q < P; ++q) {
          const __m512 b = _mm512_set1_ps(xq[q * s]);
#pragma GCC unroll 4
          for (int v = 0; v < KV; ++v) acc[q][v] = _mm512_fmadd_ps(wv[v], b, acc[q][v]);
        }
      }
    }
#pragma GCC unroll 8
  for (int q = 0; q < P; ++q)
#pragma GCC unroll 4
    for (int v = 0; v < KV; ++v) _mm512_store_ps(t->acc + q * KB + 16 * v, acc[q][v]);
}

typedef void (*tile_fn)(const mte_cd_tile *);
#define V(P, KV, S) \
  static void t_##P##_##KV##_##S(const mte_cd_tile *t) { body(t, P, KV, S); }
#define VP(P) V(P, 1, 0) V(P, 2, 0) V(P, 3, 0) V(P, 4, 0) V(P, 1, 1) V(P, 2, 1) V(P, 3, 1) \
  V(P, 4, 1) V(P, 1, 2) V(P, 2, 2) V(P, 3, 2) V(P, 4, 2)
VP(1) VP(2) VP(3) VP(4) VP(5) VP(6) VP(7)
#define ROW(P)                                                        \
  {{t_##P##_1_0, t_##P##_2_0, t_##P##_3_0, t_##P##_4_0},            \
   {t_##P##_1_1, t_##P##_2_1, t_##P##_3_1, t_##P##_4_1},            \
   {t_##P##_1_2, t_##P##_2_2, t_##P##_3_2, t_##P##_4_2}}
static const tile_fn k_tiles[PMAX][3][4] = {ROW(1), ROW(2), ROW(3), ROW(4),
                                            ROW(5), ROW(6), ROW(7)};
#undef V
#undef VP
#undef ROW

static void tile_avx512(const mte_cd_tile *t) {
  const int si = t->s == 1 ? 1 : t->s == 2 ? 2 : 0;
  k_tiles[t->p - 1][si][t->kv - 1](t);
}

static void store_avx512(const float *acc, int kn, int64_t n, float *y, int64_t ys,
                         const float *res, int act) {
  const __m512i idx = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
      _mm512_set1_epi32(KB));
  const __m512 zero = _mm512_setzero_ps(), six = _mm512_set1_ps(6.0f);
  for (int k = 0; k < kn; ++k) {
    float *yk = y + k * ys;
    const float *rk = res ? res + k * ys : NULL;
    for (int64_t i = 0; i < n; i += 16) {
      const __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1u);
      __m512 v = _mm512_mask_i32gather_ps(zero, m, idx, acc + i * KB + k, 4);
      if (rk) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, rk + i));
      if (act != MTE_ACT_NONE) v = _mm512_max_ps(zero, v); /* NaN propagates */
      if (act == MTE_ACT_RELU6) v = _mm512_min_ps(six, v);
      _mm512_mask_storeu_ps(yk + i, m, v);
    }
  }
}

const mte_convdir_kernel mte_convdir_kernel_avx512 = {"avx512", tile_avx512, store_avx512};

#endif
