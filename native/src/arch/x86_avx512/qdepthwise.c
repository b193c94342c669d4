/*
 * x86_avx512/qdepthwise.c - one output row of the int8 depthwise 3x3 (mte_qdw_row) on
 * AVX-512BW: 16 outputs per step, each a zmm of 16 int16 pairs, so taps 0 and 1 of a row are
 * one VPMADDWD against the broadcast weight pair and tap 2 one more (pairs `off` on, weights
 * (w2, 0)); 6 multiply-adds for the 9 taps, then the requantization in registers and a
 * masked byte store.
 */
#include "../../mte_quant_internal.h"

#if defined(__x86_64__)
#include "../../mte_qrequant_x86.h"

static void qdw_row_avx512(const mte_qdw_row *r) {
  __m512i w01[3], w2[3];
  for (int i = 0; i < 3; ++i) w01[i] = _mm512_set1_epi32(r->w01[i]), w2[i] = _mm512_set1_epi32(r->w2[i]);
  const int o = 2 * r->off;
  const mte_qchan ch = *r->chan; /* a local: the byte stores below cannot alias it */
  for (int64_t s = 0; s < r->wo; s += 16) {
    __m512i acc0 = _mm512_setzero_si512(), acc1 = _mm512_setzero_si512();
#pragma GCC unroll 3
    for (int i = 0; i < 3; ++i) {
      const int16_t *q = r->q[i] + 2 * s;
      acc0 = _mm512_add_epi32(acc0, _mm512_madd_epi16(_mm512_loadu_si512((const void *)q), w01[i]));
      acc1 = _mm512_add_epi32(acc1, _mm512_madd_epi16(_mm512_loadu_si512((const void *)(q + o)), w2[i]));
    }
    const __m512i y = mte__requant512(_mm512_add_epi32(acc0, acc1), &ch, r->zp, r->lo, r->hi);
    const int64_t n = r->wo - s;
    _mm512_mask_cvtepi32_storeu_epi8(r->y + s, n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1), y);
  }
}

const mte_qdw_kernel mte_qdw_kernel_avx512 = {.isa = "avx512", .row = qdw_row_avx512};
#endif
