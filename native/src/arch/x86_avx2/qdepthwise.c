/*
 * x86_avx2/qdepthwise.c - one plane of the int8 depthwise 3x3 as a flat row (mte_qdw_plane)
 * on AVX2, the scheme of x86_avx512/qdepthwise.c on ymm: stride 1, 16 outputs per step (the
 * even and odd outputs from the loads at tap columns 0, 1, 2, 12 VPMADDWD); stride 2, 8 per
 * step (6 VPMADDWD); requantized in registers, narrowed to bytes, interleaved back in order.
 * Widening and copy-out in 16-byte steps with scalar row ends (AVX2 has no byte masks).
 */
#include "../../mte_quant_internal.h"

#if defined(__x86_64__)
#include "../../mte_qrequant_x86.h"

#define LD(p) _mm256_loadu_si256((const __m256i *)(p))

static inline __m256i pair(int16_t lo, int16_t hi) {
  return _mm256_set1_epi32((int32_t)(((uint32_t)(uint16_t)hi << 16) | (uint16_t)lo));
}

static void widen(const mte_qdw_plane *a) {
  const int64_t cols = mte__qdw_cols(a);
  const __m256i zp = _mm256_set1_epi16((int16_t)a->x_zp);
  for (int64_t h = 0; h < a->H; ++h) {
    int16_t *dst = mte__qdw_dst_row(a, h);
    if (!dst) break; /* the rows after it are not read either */
    const int8_t *src = a->x + h * a->W;
    int64_t c = 0;
    for (; c + 16 <= cols; c += 16) {
      const __m256i v = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(src + c)));
      _mm256_storeu_si256((__m256i *)(dst + c), _mm256_sub_epi16(v, zp));
    }
    for (; c < cols; ++c) dst[c] = (int16_t)(src[c] - a->x_zp);
  }
}

static void copy_out(const mte_qdw_plane *a) {
  for (int64_t r = 0; r < a->Ho; ++r) {
    const int8_t *src = a->line + r * a->pitch;
    int8_t *dst = a->y + r * a->Wo;
    int64_t c = 0;
    for (; c + 16 <= a->Wo; c += 16)
      _mm_storeu_si128((__m128i *)(dst + c), _mm_loadu_si128((const __m128i *)(src + c)));
    for (; c < a->Wo; ++c) dst[c] = src[c];
  }
}

static void qdw_plane_avx2(const mte_qdw_plane *a) {
  widen(a);
  __m256i w01[3], w20[3], w02[3];
  for (int i = 0; i < 3; ++i) {
    w01[i] = pair(a->w[3 * i], a->w[3 * i + 1]);
    w20[i] = pair(a->w[3 * i + 2], 0);
    w02[i] = pair(0, a->w[3 * i + 2]);
  }
  const mte_qchan ch = *a->chan; /* a local: the byte stores below cannot alias it */
  const int16_t *r0 = a->p + a->off[0], *r1 = a->p + a->off[1], *r2 = a->p + a->off[2];
  if (a->sw == 1) {
    for (int64_t g = 0; g < a->n; g += 16) {
      __m256i ev = _mm256_setzero_si256(), od = ev, ev2 = ev, od2 = ev;
      const int16_t *rs[3] = {r0 + g, r1 + g, r2 + g};
#pragma GCC unroll 3
      for (int i = 0; i < 3; ++i) {
        const __m256i l0 = LD(rs[i]), l1 = LD(rs[i] + 1), l2 = LD(rs[i] + 2);
        ev = _mm256_add_epi32(ev, _mm256_madd_epi16(l0, w01[i]));
        od = _mm256_add_epi32(od, _mm256_madd_epi16(l1, w01[i]));
        ev2 = _mm256_add_epi32(ev2, _mm256_madd_epi16(l2, w20[i]));
        od2 = _mm256_add_epi32(od2, _mm256_madd_epi16(l2, w02[i]));
      }
      const __m128i e = mte__pack8_256(mte__requant256(_mm256_add_epi32(ev, ev2), &ch, a->zp, a->lo, a->hi));
      const __m128i o = mte__pack8_256(mte__requant256(_mm256_add_epi32(od, od2), &ch, a->zp, a->lo, a->hi));
      _mm_storeu_si128((__m128i *)(a->line + g), _mm_unpacklo_epi8(e, o));
    }
  } else {
    for (int64_t g = 0; g < a->n; g += 8) {
      __m256i acc0 = _mm256_setzero_si256(), acc1 = acc0;
      const int16_t *rs[3] = {r0 + 2 * g, r1 + 2 * g, r2 + 2 * g};
#pragma GCC unroll 3
      for (int i = 0; i < 3; ++i) {
        acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(LD(rs[i]), w01[i]));
        acc1 = _mm256_add_epi32(acc1, _mm256_madd_epi16(LD(rs[i] + 2), w20[i]));
      }
      const __m256i v = mte__requant256(_mm256_add_epi32(acc0, acc1), &ch, a->zp, a->lo, a->hi);
      _mm_storel_epi64((__m128i *)(a->line + g), mte__pack8_256(v));
    }
  }
  copy_out(a);
}

const mte_qdw_kernel mte_qdw_kernel_avx2 = {.isa = "avx2", .plane = qdw_plane_avx2};
#endif
