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
 * pixels (two zmm of 16 lanes x 4 bytes), 16 accumulators that start at their channel's
 * comp (the zero-point compensation and folded bias: no add after the loop). A tail of at
 * most 16 columns takes the 8 x 16 tile (QGEMM_UKERNEL_HALF: one zmm per row, the first 64
 * bytes of each k group of the 32-column panel), so N columns cost ceil(N / 16) vectors per
 * row, not 2 * ceil(N / 32) (N = 196: 13, not 14). The tile is requantized in registers
 * (mte_qrequant_x86.h) and stored with a byte mask for the last columns (no edge tile).
 * When every channel of the tile is `fast` (the usual case), rows go in pairs (quads for
 * 8 x 16): 4 vectors requantized with the one-rounding formula, saturated to 64 bytes by two
 * packs, put in order by one VPERMD, clamped to [lo, hi] once and stored as two 32-byte (four
 * 16-byte) rows (the requantization is most of the time of a short-K 1x1 conv: ~12 ops per
 * 16 outputs against K / 4 VPDPBUSD). A transposed store (qlinear: cs != 1) goes through a stack
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

/* the tile of nv vectors (nv * 16 columns, the first of the panel's NR) x MR rows; nv is a
 * constant in each caller, so every loop over it unrolls */
static inline __attribute__((always_inline)) void qgemm_tile(const mte_qtile *t, const int nv) {
  __m512i acc[MR][NV]; /* from comp: dot = acc + comp (mod 2^32, as the requantization) */
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < nv; ++v) acc[i][v] = _mm512_set1_epi32(t->chan[i].comp);
  const int8_t *a = t->a;
  const uint8_t *b = t->b;
#ifndef MTE_QGEMM_VNNI
  const __m512i ones = _mm512_set1_epi16(1), zero = _mm512_setzero_si512();
#endif
  for (int64_t g = 0; g < t->kg; ++g, a += MR * 4, b += NR * 4) {
    __m512i bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < nv; ++v) bv[v] = _mm512_loadu_si512((const void *)(b + 64 * v));
#ifdef MTE_QGEMM_VNNI
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m512i w = bcast_word(a + 4 * i);
#pragma GCC unroll 4
      for (int v = 0; v < nv; ++v) acc[i][v] = _mm512_dpbusd_epi32(acc[i][v], bv[v], w);
    }
#else
    __m512i ax[NV];
    __mmask64 neg[NV];
#pragma GCC unroll 4
    for (int v = 0; v < nv; ++v) ax[v] = _mm512_abs_epi8(bv[v]), neg[v] = _mm512_movepi8_mask(bv[v]);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m512i w = bcast_word(a + 4 * i);
#pragma GCC unroll 4
      for (int v = 0; v < nv; ++v) {
        const __m512i sw = _mm512_mask_sub_epi8(w, neg[v], zero, w); /* w * sign(x) */
        const __m512i p = _mm512_maddubs_epi16(ax[v], sw);
        acc[i][v] = _mm512_add_epi32(acc[i][v], _mm512_madd_epi16(p, ones));
      }
    }
#endif
  }
  int fast = 1; /* every channel fast: 4 vectors at a time, 64 bytes saturated and clamped */
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) fast &= t->chan[i].fast;
  const int width = 16 * nv; /* the tile's columns */
  if (t->cs == 1 && fast) {
    /* 4 vectors: the rows of a pair (nv = 2) or of a quad (nv = 1). packs_epi32 then
     * packs_epi16 leave dword d of lane l = columns 4l..4l+3 of vector d: gather vector 0's
     * 4 dwords, then vector 1's... = the rows in order, w bytes each */
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    const __m512i lo = _mm512_set1_epi8((char)t->lo), hi = _mm512_set1_epi8((char)t->hi);
    const int rows4 = 4 / nv; /* rows per 4 vectors */
    const __mmask64 cm = t->cols >= width ? ~(__mmask64)0 : ((__mmask64)1 << t->cols) - 1;
#pragma GCC unroll 4
    for (int i = 0; i < MR; i += rows4) {
      if (i >= t->rows) break;
      __m512i r[4];
#pragma GCC unroll 4
      for (int h = 0; h < rows4; ++h) {
        const mte_qfast512 f = mte__qfast512(&t->chan[i + h], t->zp);
#pragma GCC unroll 4
        for (int v = 0; v < nv; ++v) r[h * nv + v] = mte__requant512_fast(acc[i + h][v], &f);
      }
      __m512i q = _mm512_packs_epi16(_mm512_packs_epi32(r[0], r[1]), _mm512_packs_epi32(r[2], r[3]));
      q = _mm512_min_epi8(_mm512_max_epi8(_mm512_permutexvar_epi32(order, q), lo), hi);
      int8_t *y = t->y + i * t->rs;
      if (nv == 2) {
        if (t->cols >= width) {
          _mm256_storeu_si256((__m256i *)y, _mm512_castsi512_si256(q));
          if (i + 1 < t->rows)
            _mm256_storeu_si256((__m256i *)(y + t->rs), _mm512_extracti64x4_epi64(q, 1));
        } else {
          _mm256_mask_storeu_epi8(y, (__mmask32)cm, _mm512_castsi512_si256(q));
          if (i + 1 < t->rows)
            _mm256_mask_storeu_epi8(y + t->rs, (__mmask32)cm, _mm512_extracti64x4_epi64(q, 1));
        }
      } else {
        _mm_mask_storeu_epi8(y, (__mmask16)cm, _mm512_castsi512_si128(q));
        if (i + 1 < t->rows)
          _mm_mask_storeu_epi8(y + t->rs, (__mmask16)cm, _mm512_extracti32x4_epi32(q, 1));
        if (i + 2 < t->rows)
          _mm_mask_storeu_epi8(y + 2 * t->rs, (__mmask16)cm, _mm512_extracti32x4_epi32(q, 2));
        if (i + 3 < t->rows)
          _mm_mask_storeu_epi8(y + 3 * t->rs, (__mmask16)cm, _mm512_extracti32x4_epi32(q, 3));
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
      for (int v = 0; v < nv; ++v)
        r[v] = mte__requant512_dot(acc[i][v], &t->chan[i], t->zp, t->lo, t->hi);
#pragma GCC unroll 4
      for (int v = 0; v < nv; ++v) {
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
    for (int v = 0; v < nv; ++v)
      _mm_storeu_si128((__m128i *)(tile + i * NR + 16 * v),
                       _mm512_cvtepi32_epi8(mte__requant512_dot(acc[i][v], &t->chan[i], t->zp,
                                                                t->lo, t->hi)));
  for (int i = 0; i < t->rows; ++i)
    for (int j = 0; j < t->cols; ++j) t->y[i * t->rs + j * t->cs] = tile[i * NR + j];
}

static void QGEMM_UKERNEL(const mte_qtile *t) { qgemm_tile(t, NV); }

/* a tail of at most 16 columns: one vector per row, half the panel's bytes read */
static void QGEMM_UKERNEL_HALF(const mte_qtile *t) { qgemm_tile(t, 1); }

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
