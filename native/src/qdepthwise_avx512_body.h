/*
 * qdepthwise_avx512_body.h - one plane of the int8 depthwise 3x3 as a flat row
 * (mte_qdw_plane) on the int16 plane, AVX-512BW: VPMADDWD then VPADDD (the VNNI kernel,
 * x86_avx512vnni/qdepthwise.c, works on bytes instead).
 *
 * Stride 1, 32 outputs per step: a zmm of 32 int16 loaded at tap column j = 0, 1, 2 of a row;
 * the pair multiply-add of the j = 0 load with (w0, w1) gives taps 0 and 1 of the 16 even
 * outputs, of the j = 1 load those of the 16 odd ones, and the j = 2 load with (w2, 0) /
 * (0, w2) their tap 2: 12 multiply-adds for 32 outputs, into two accumulators that start at
 * the channel's comp. The even and odd results are requantized in registers (a fast channel:
 * saturated to bytes by two packs, clamped 32 at a time), narrowed and interleaved in order.
 * Stride 2, 16 outputs per step: the load at 2g is already the pairs (x[2g], x[2g + 1]) and
 * the load at 2g + 2 gives tap 2 with (w2, 0): 6 multiply-adds for 16 outputs.
 * The widening (32 bytes -> 32 int16 per step) and the copy out (64 bytes per step) are
 * masked loads and stores: no scalar edges, whatever the row width.
 * Included by x86_avx512/qdepthwise.c (QDW_PLANE: the name).
 */
#include "mte_qrequant_x86.h"

#define LD(p) _mm512_loadu_si512((const void *)(p))
#define MAC(acc, x, w) _mm512_add_epi32(acc, _mm512_madd_epi16(x, w))

static inline __m512i pair(int16_t lo, int16_t hi) {
  return _mm512_set1_epi32((int32_t)(((uint32_t)(uint16_t)hi << 16) | (uint16_t)lo));
}

/* lanes k < n of 32 / 64 */
static inline __mmask32 m32(int64_t n) { return n >= 32 ? ~(__mmask32)0 : ((__mmask32)1 << n) - 1; }
static inline __mmask64 m64(int64_t n) { return n >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << n) - 1; }

/* the rows of x into their phases (mte__qdw_dst_row, stepped without a division per row);
 * the fields in locals: the stores cannot alias them */
static void widen(const mte_qdw_plane *a) {
  const int64_t cols = mte__qdw_cols(a), H = a->H, W = a->W, sh = a->sh, hq = a->hq, pe = a->pe;
  const __m512i zp = _mm512_set1_epi16((int16_t)a->x_zp);
  const int8_t *src = a->x;
  int16_t *const p = a->p + a->pl;
  int64_t ph = a->pt % sh, q = a->pt / sh; /* row rho = h + pt: phase rho % sh, row rho / sh */
  for (int64_t h = 0; h < H && q < hq; ++h, src += W) {
    int16_t *dst = p + (ph * hq + q) * pe;
    for (int64_t c = 0; c < cols; c += 32) {
      const __mmask32 k = m32(cols - c);
      const __m512i v = _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(k, src + c));
      _mm512_mask_storeu_epi16(dst + c, k, _mm512_sub_epi16(v, zp));
    }
    if (++ph == sh) ph = 0, ++q;
  }
}

static void copy_out(const mte_qdw_plane *a) {
  const int64_t Ho = a->Ho, Wo = a->Wo, pitch = a->pitch;
  const int8_t *line = a->line;
  int8_t *y = a->y;
  for (int64_t r = 0; r < Ho; ++r, y += Wo, line += pitch)
    for (int64_t c = 0; c < Wo; c += 64) {
      const __mmask64 k = m64(Wo - c);
      _mm512_mask_storeu_epi8(y + c, k, _mm512_maskz_loadu_epi8(k, line + c));
    }
}

static void QDW_PLANE(const mte_qdw_plane *a) {
  widen(a);
  __m512i w01[3], w20[3], w02[3];
  for (int i = 0; i < 3; ++i) {
    w01[i] = pair(a->w[3 * i], a->w[3 * i + 1]);
    w20[i] = pair(a->w[3 * i + 2], 0);
    w02[i] = pair(0, a->w[3 * i + 2]);
  }
  const mte_qchan ch = *a->chan; /* a local: the byte stores below cannot alias it */
  const __m512i comp = _mm512_set1_epi32(ch.comp);
  const int16_t *r0 = a->p + a->off[0], *r1 = a->p + a->off[1], *r2 = a->p + a->off[2];
  int8_t *const line = a->line;
  const int64_t n = a->n;
  if (a->sw == 1) {
    const mte_qfast512 f = mte__qfast512(&ch, a->zp);
    const __m256i lo = _mm256_set1_epi8((char)a->lo), hi = _mm256_set1_epi8((char)a->hi);
    /* after packs_epi32(e, o) and packs_epi16, lane l holds e(4l..4l+3), o(4l..4l+3): outputs
     * 8l, 8l+2, .., 8l+1, 8l+3, ..; put them in order, then the 4 low qwords together */
    const __m512i inter = _mm512_broadcast_i32x4(
        _mm_setr_epi8(0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15));
    const __m512i lows = _mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7);
    for (int64_t g = 0; g < n; g += 32) {
      __m512i ev = comp, od = comp;
      const int16_t *rs[3] = {r0 + g, r1 + g, r2 + g};
#pragma GCC unroll 3
      for (int i = 0; i < 3; ++i) {
        const __m512i l0 = LD(rs[i]), l1 = LD(rs[i] + 1), l2 = LD(rs[i] + 2);
        ev = MAC(ev, l0, w01[i]);
        od = MAC(od, l1, w01[i]);
        ev = MAC(ev, l2, w20[i]);
        od = MAC(od, l2, w02[i]);
      }
      __m256i v;
      if (ch.fast) {
        const __m512i p = _mm512_packs_epi32(mte__requant512_fast(ev, &f),
                                             mte__requant512_fast(od, &f));
        const __m512i b =
            _mm512_permutexvar_epi64(lows, _mm512_shuffle_epi8(_mm512_packs_epi16(p, p), inter));
        v = _mm256_min_epi8(_mm256_max_epi8(_mm512_castsi512_si256(b), lo), hi);
      } else {
        const __m128i e = _mm512_cvtepi32_epi8(mte__requant512_dot(ev, &ch, a->zp, a->lo, a->hi));
        const __m128i o = _mm512_cvtepi32_epi8(mte__requant512_dot(od, &ch, a->zp, a->lo, a->hi));
        v = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_unpacklo_epi8(e, o)),
                                    _mm_unpackhi_epi8(e, o), 1);
      }
      _mm256_storeu_si256((__m256i *)(line + g), v);
    }
  } else {
    for (int64_t g = 0; g < n; g += 16) {
      __m512i acc = comp;
      const int16_t *rs[3] = {r0 + 2 * g, r1 + 2 * g, r2 + 2 * g};
#pragma GCC unroll 3
      for (int i = 0; i < 3; ++i) {
        acc = MAC(acc, LD(rs[i]), w01[i]);
        acc = MAC(acc, LD(rs[i] + 2), w20[i]);
      }
      const __m512i v = mte__requant512_dot(acc, &ch, a->zp, a->lo, a->hi);
      _mm_storeu_si128((__m128i *)(line + g), _mm512_cvtepi32_epi8(v));
    }
  }
  copy_out(a);
}

#undef MAC
#undef LD
