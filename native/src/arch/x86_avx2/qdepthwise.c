/*
 * x86_avx2/qdepthwise.c - one output row of the int8 depthwise 3x3 (mte_qdw_row) on AVX2:
 * 8 outputs per step (a ymm of 8 int16 pairs), taps 0 and 1 of a row in one VPMADDWD, tap 2
 * in another, then the requantization in registers; a partial last step through 8 bytes on
 * the stack.
 */
#include <string.h>

#include "../../mte_quant_internal.h"

#if defined(__x86_64__)
#include "../../mte_qrequant_x86.h"

static void qdw_row_avx2(const mte_qdw_row *r) {
  __m256i w01[3], w2[3];
  for (int i = 0; i < 3; ++i) w01[i] = _mm256_set1_epi32(r->w01[i]), w2[i] = _mm256_set1_epi32(r->w2[i]);
  const int o = 2 * r->off;
  const mte_qchan ch = *r->chan; /* a local: the byte stores below cannot alias it */
  for (int64_t s = 0; s < r->wo; s += 8) {
    __m256i acc0 = _mm256_setzero_si256(), acc1 = _mm256_setzero_si256();
#pragma GCC unroll 3
    for (int i = 0; i < 3; ++i) {
      const int16_t *q = r->q[i] + 2 * s;
      acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)q), w01[i]));
      acc1 = _mm256_add_epi32(acc1, _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(q + o)), w2[i]));
    }
    const __m128i y = mte__pack8_256(mte__requant256(_mm256_add_epi32(acc0, acc1), &ch, r->zp, r->lo, r->hi));
    if (r->wo - s >= 8) {
      _mm_storel_epi64((__m128i *)(r->y + s), y);
    } else {
      int8_t tmp[16];
      _mm_storeu_si128((__m128i *)tmp, y);
      memcpy(r->y + s, tmp, (size_t)(r->wo - s));
    }
  }
}

const mte_qdw_kernel mte_qdw_kernel_avx2 = {.isa = "avx2", .row = qdw_row_avx2};
#endif
