/*
 * x86_avx512/qdepthwise.c - one plane of the int8 depthwise 3x3 as a flat row
 * (mte_qdw_plane) on AVX-512BW.
 *
 * Stride 1, 32 outputs per step: a zmm of 32 int16 loaded at tap column j = 0, 1, 2 of a row;
 * VPMADDWD of the j = 0 load with (w0, w1) gives taps 0 and 1 of the 16 even outputs, of the
 * j = 1 load those of the 16 odd ones, and the j = 2 load with (w2, 0) / (0, w2) their tap 2:
 * 12 multiply-adds for 32 outputs. The even and odd results are requantized in registers,
 * narrowed to bytes and interleaved back in order.
 * Stride 2, 16 outputs per step: the load at 2g is already the pairs (x[2g], x[2g + 1]) and
 * the load at 2g + 2 gives tap 2 with (w2, 0): 6 multiply-adds for 16 outputs.
 * The widening (32 bytes -> 32 int16 per step) and the copy out (64 bytes per step) are
 * masked loads and stores: no scalar edges, whatever the row width.
 */
#include "../../mte_quant_internal.h"

#if defined(__x86_64__)
#include "../../mte_qrequant_x86.h"

#define LD(p) _mm512_loadu_si512((const void *)(p))

static inline __m512i pair(int16_t lo, int16_t hi) {
  return _mm512_set1_epi32((int32_t)(((uint32_t)(uint16_t)hi << 16) | (uint16_t)lo));
}

/* lanes k < n of 32 / 64 */
static inline __mmask32 m32(int64_t n) { return n >= 32 ? ~(__mmask32)0 : ((__mmask32)1 << n) - 1; }
static inline __mmask64 m64(int64_t n) { return n >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << n) - 1; }

static void widen(const mte_qdw_plane *a) {
  const int64_t cols = mte__qdw_cols(a);
  const __m512i zp = _mm512_set1_epi16((int16_t)a->x_zp);
  for (int64_t h = 0; h < a->H; ++h) {
    int16_t *dst = mte__qdw_dst_row(a, h);
    if (!dst) break; /* the rows after it are not read either */
    const int8_t *src = a->x + h * a->W;
    for (int64_t c = 0; c < cols; c += 32) {
      const __mmask32 k = m32(cols - c);
      const __m512i v = _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(k, src + c));
      _mm512_mask_storeu_epi16(dst + c, k, _mm512_sub_epi16(v, zp));
    }
  }
}

static void copy_out(const mte_qdw_plane *a) {
  for (int64_t r = 0; r < a->Ho; ++r)
    for (int64_t c = 0; c < a->Wo; c += 64) {
      const __mmask64 k = m64(a->Wo - c);
      _mm512_mask_storeu_epi8(a->y + r * a->Wo + c, k,
                              _mm512_maskz_loadu_epi8(k, a->line + r * a->pitch + c));
    }
}

static void qdw_plane_avx512(const mte_qdw_plane *a) {
  widen(a);
  __m512i w01[3], w20[3], w02[3];
  for (int i = 0; i < 3; ++i) {
    w01[i] = pair(a->w[3 * i], a->w[3 * i + 1]);
    w20[i] = pair(a->w[3 * i + 2], 0);
    w02[i] = pair(0, a->w[3 * i + 2]);
  }
  const mte_qchan ch = *a->chan; /* a local: the byte stores below cannot alias it */
  const int16_t *r0 = a->p + a->off[0], *r1 = a->p + a->off[1], *r2 = a->p + a->off[2];
  if (a->sw == 1) {
    for (int64_t g = 0; g < a->n; g += 32) {
      __m512i ev = _mm512_setzero_si512(), od = ev, ev2 = ev, od2 = ev;
      const int16_t *rs[3] = {r0 + g, r1 + g, r2 + g};
#pragma GCC unroll 3
      for (int i = 0; i < 3; ++i) {
        const __m512i l0 = LD(rs[i]), l1 = LD(rs[i] + 1), l2 = LD(rs[i] + 2);
        ev = _mm512_add_epi32(ev, _mm512_madd_epi16(l0, w01[i]));
        od = _mm512_add_epi32(od, _mm512_madd_epi16(l1, w01[i]));
        ev2 = _mm512_add_epi32(ev2, _mm512_madd_epi16(l2, w20[i]));
        od2 = _mm512_add_epi32(od2, _mm512_madd_epi16(l2, w02[i]));
      }
      const __m128i e = _mm512_cvtepi32_epi8(mte__requant512(_mm512_add_epi32(ev, ev2), &ch, a->zp, a->lo, a->hi));
      const __m128i o = _mm512_cvtepi32_epi8(mte__requant512(_mm512_add_epi32(od, od2), &ch, a->zp, a->lo, a->hi));
      const __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_unpacklo_epi8(e, o)),
                                                _mm_unpackhi_epi8(e, o), 1);
      _mm256_storeu_si256((__m256i *)(a->line + g), v);
    }
  } else {
    for (int64_t g = 0; g < a->n; g += 16) {
      __m512i acc0 = _mm512_setzero_si512(), acc1 = acc0;
      const int16_t *rs[3] = {r0 + 2 * g, r1 + 2 * g, r2 + 2 * g};
#pragma GCC unroll 3
      for (int i = 0; i < 3; ++i) {
        acc0 = _mm512_add_epi32(acc0, _mm512_madd_epi16(LD(rs[i]), w01[i]));
        acc1 = _mm512_add_epi32(acc1, _mm512_madd_epi16(LD(rs[i] + 2), w20[i]));
      }
      const __m512i v = mte__requant512(_mm512_add_epi32(acc0, acc1), &ch, a->zp, a->lo, a->hi);
      _mm_storeu_si128((__m128i *)(a->line + g), _mm512_cvtepi32_epi8(v));
    }
  }
  copy_out(a);
}

const mte_qdw_kernel mte_qdw_kernel_avx512 = {.isa = "avx512", .plane = qdw_plane_avx512};
#endif
