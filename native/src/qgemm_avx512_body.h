/*
 * qgemm_avx512_body.h - the AVX-512 int8 GEMM microkernel, one body for two ISAs:
 *
 *   avx512vnni (MTE_QGEMM_VNNI)  VPDPBUSD: 4 products u8 x s8 summed into each int32 lane,
 *                                x packed as x + 128 (x_offset 128), one instruction per
 *                                accumulator per 4 k values
 *   avx512 (AVX-512BW)           VPMADDUBSW + VPMADDWD with the sign trick: |x| (unsigned)
 *                                times w with x's sign (signed): |pair sum| <= 2*128*127 =
 *                                32512, so the int16 step never saturates; x packed signed
 *
 * Tile 8 x 32: 8 output channels (a weight word of 4 k values broadcast per row) by 32
 * pixels (two zmm of 16 lanes x 4 bytes), 16 accumulators that start at their channel's comp
 * (the zero-point compensation and folded bias: no add after the loop); the tile is
 * requantized in registers (mte_qrequant_x86.h) and stored with a byte mask for the last
 * columns (no edge tile). When every channel of the tile is `fast` (the usual case), rows go
 * in pairs: 4 vectors requantized with the one-rounding formula, saturated to 64 bytes by
 * two packs, put in order by one VPERMD, clamped to [lo, hi] once and stored as two 32-byte
 * rows (the requantization is most of the time of a short-K 1x1 conv: ~12 ops per 16 outputs
 * against K / 4 VPDPBUSD). A transposed store (qlinear: cs != 1) goes through a stack
 * tile. QGEMM_PACK4 packs x for it 64 columns (two panels) per step.
 * Included by x86_avx512/qgemm_kernel.c and x86_avx512vnni/qgemm_kernel.c.
 */
#include <string.h>

#include "mte_qrequant_x86.h"

#define MR 8
#define NV 2
#define NR (16 * NV)

static inline __m512i bcast_word(const int8_t *p) {
  int32_t v;
  memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

static void QGEMM_UKERNEL(const mte_qtile *t) {
  __m512i acc[MR][NV]; /* from comp: dot = acc + comp (mod 2^32, as the requantization) */
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_set1_epi32(t->chan[i].comp);
  const int8_t *a = t->a;
  const uint8_t *b = t->b;
#ifndef MTE_QGEMM_VNNI
  const __m512i ones = _mm512_set1_epi16(1), zero = _mm512_setzero_si512();
#endif
  for (int64_t g = 0; g < t->kg; ++g, a += MR * 4, b += NR * 4) {
    __m512i bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = _mm512_loadu_si512((const void *)(b + 64 * v));
#ifdef MTE_QGEMM_VNNI
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m512i w = bcast_word(a + 4 * i);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_dpbusd_epi32(acc[i][v], bv[v], w);
    }
#else
    __m512i ax[NV];
    __mmask64 neg[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) ax[v] = _mm512_abs_epi8(bv[v]), neg[v] = _mm512_movepi8_mask(bv[v]);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m512i w = bcast_word(a + 4 * i);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        const __m512i sw = _mm512_mask_sub_epi8(w, neg[v], zero, w); /* w * sign(x) */
        const __m512i p = _mm512_maddubs_epi16(ax[v], sw);
        acc[i][v] = _mm512_add_epi32(acc[i][v], _mm512_madd_epi16(p, ones));
      }
    }
#endif
  }
  int fast = 1; /* every channel fast: rows in pairs, 64 bytes saturated and clamped at once */
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) fast &= t->chan[i].fast;
  if (t->cs == 1 && fast) {
    /* packs_epi32 then packs_epi16 leave dword d of lane l = columns 4l..4l+3 of vector d % 2
     * of row d / 2: gather row 0's 8 dwords, then row 1's */
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    const __m512i lo = _mm512_set1_epi8((char)t->lo), hi = _mm512_set1_epi8((char)t->hi);
    const __mmask32 cm = t->cols >= NR ? ~(__mmask32)0 : ((__mmask32)1 << t->cols) - 1;
#pragma GCC unroll 4
    for (int i = 0; i < MR; i += 2) {
      if (i >= t->rows) break;
      __m512i r[2][NV];
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const mte_qfast512 f = mte__qfast512(&t->chan[i + h], t->zp);
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) r[h][v] = mte__requant512_fast(acc[i + h][v], &f);
      }
      __m512i q = _mm512_packs_epi16(_mm512_packs_epi32(r[0][0], r[0][1]),
                                     _mm512_packs_epi32(r[1][0], r[1][1]));
      q = _mm512_min_epi8(_mm512_max_epi8(_mm512_permutexvar_epi32(order, q), lo), hi);
      int8_t *y = t->y + i * t->rs;
      if (t->cols >= NR) {
        _mm256_storeu_si256((__m256i *)y, _mm512_castsi512_si256(q));
        if (i + 1 < t->rows)
          _mm256_storeu_si256((__m256i *)(y + t->rs), _mm512_extracti64x4_epi64(q, 1));
      } else {
        _mm256_mask_storeu_epi8(y, cm, _mm512_castsi512_si256(q));
        if (i + 1 < t->rows)
          _mm256_mask_storeu_epi8(y + t->rs, cm, _mm512_extracti64x4_epi64(q, 1));
      }
    }
    return;
  }
  if (t->cs == 1) {
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      if (i >= t->rows) break;
      __m512i r[NV]; /* the row's vectors before its stores: one read of its channel */
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v)
        r[v] = mte__requant512_dot(acc[i][v], &t->chan[i], t->zp, t->lo, t->hi);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        const int n = t->cols - 16 * v;
        if (n <= 0) break;
        const __mmask16 m = n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1);
        _mm512_mask_cvtepi32_storeu_epi8(t->y + i * t->rs + 16 * v, m, r[v]);
      }
    }
    return;
  }
  int8_t tile[MR * NR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      _mm_storeu_si128((__m128i *)(tile + i * NR + 16 * v),
                       _mm512_cvtepi32_epi8(mte__requant512_dot(acc[i][v], &t->chan[i], t->zp,
                                                                t->lo, t->hi)));
  for (int i = 0; i < t->rows; ++i)
    for (int j = 0; j < t->cols; ++j) t->y[i * t->rs + j * t->cs] = tile[i * NR + j];
}

/* 4 rows of 64 columns into two 32-column panels: bytes interleaved in each 128-bit lane
 * (column quads 4q..4q+3 of lane l in u_q), then the 4 x 4 lanes transposed */
static int64_t QGEMM_PACK4(const uint8_t *const r[4], int64_t nc, int64_t pstride, uint8_t flip,
                           uint8_t *dst) {
  const __m512i f = _mm512_set1_epi8((char)flip);
  int64_t c = 0;
  for (; c + 64 <= nc; c += 64) {
    __m512i a[4];
#pragma GCC unroll 4
    for (int t = 0; t < 4; ++t)
      a[t] = _mm512_xor_si512(_mm512_loadu_si512((const void *)(r[t] + c)), f);
    const __m512i t0 = _mm512_unpacklo_epi8(a[0], a[1]), t1 = _mm512_unpackhi_epi8(a[0], a[1]);
    const __m512i t2 = _mm512_unpacklo_epi8(a[2], a[3]), t3 = _mm512_unpackhi_epi8(a[2], a[3]);
    const __m512i u0 = _mm512_unpacklo_epi16(t0, t2), u1 = _mm512_unpackhi_epi16(t0, t2);
    const __m512i u2 = _mm512_unpacklo_epi16(t1, t3), u3 = _mm512_unpackhi_epi16(t1, t3);
    const __m512i l01 = _mm512_shuffle_i64x2(u0, u1, 0x44);
    const __m512i l23 = _mm512_shuffle_i64x2(u2, u3, 0x44);
    const __m512i h01 = _mm512_shuffle_i64x2(u0, u1, 0xEE);
    const __m512i h23 = _mm512_shuffle_i64x2(u2, u3, 0xEE);
    uint8_t *d = dst + (c / NR) * pstride;
    _mm512_storeu_si512((void *)d, _mm512_shuffle_i64x2(l01, l23, 0x88));
    _mm512_storeu_si512((void *)(d + 64), _mm512_shuffle_i64x2(l01, l23, 0xDD));
    _mm512_storeu_si512((void *)(d + pstride), _mm512_shuffle_i64x2(h01, h23, 0x88));
    _mm512_storeu_si512((void *)(d + pstride + 64), _mm512_shuffle_i64x2(h01, h23, 0xDD));
  }
  return c;
}

/* 12 independent chains of the kernel's multiply-accumulate step on registers only */
static double QGEMM_PEAK(int64_t rounds) {
  __m512i acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_epi32(i);
  __m512i x = _mm512_set1_epi8(3), y = _mm512_set1_epi8(-2);
#ifndef MTE_QGEMM_VNNI
  const __m512i ones = _mm512_set1_epi16(1);
#endif
  for (int64_t r = 0; r < rounds; ++r) {
    __asm__ volatile("" : "+v"(x), "+v"(y));
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i)
#ifdef MTE_QGEMM_VNNI
      acc[i] = _mm512_dpbusd_epi32(acc[i], x, y);
#else
      acc[i] = _mm512_add_epi32(acc[i], _mm512_madd_epi16(_mm512_maddubs_epi16(x, y), ones));
#endif
  }
  for (int i = 1; i < 12; ++i) acc[0] = _mm512_add_epi32(acc[0], acc[i]);
  volatile int keep = _mm512_reduce_add_epi32(acc[0]);
  (void)keep;
  return (double)rounds * 12.0 * 64 * 2.0;
}
