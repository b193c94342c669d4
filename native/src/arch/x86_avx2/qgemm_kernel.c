/*
 * x86_avx2/qgemm_kernel.c - the int8 GEMM microkernel for AVX2: VPMADDUBSW + VPMADDWD with
 * the sign trick (|x| unsigned times sign(w, x) signed: |pair sum| <= 2*128*127 = 32512, no
 * int16 saturation), x packed signed.
 *
 * Tile 4 x 16: 4 channels by 16 pixels (two ymm of 8 lanes x 4 bytes), 8 accumulators, the
 * sign/abs operands and the weight word in the other 8 of the 16 ymm registers. The tile is
 * requantized in registers (mte_qrequant_x86.h); partial columns go through 8 bytes on the
 * stack, a transposed (qlinear) store through a stack tile.
 */
#include <string.h>

#include "../../mte_quant_internal.h"

#if defined(__x86_64__)
#include "../../mte_qrequant_x86.h"

#define MR 4
#define NV 2
#define NR (8 * NV)

static void qgemm_ukernel_avx2(const mte_qtile *t) {
  __m256i acc[MR][NV];
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_setzero_si256();
  const int8_t *a = t->a;
  const uint8_t *b = t->b;
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t g = 0; g < t->kg; ++g, a += MR * 4, b += NR * 4) {
    __m256i bv[NV], ax[NV];
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) {
      bv[v] = _mm256_loadu_si256((const __m256i *)(b + 32 * v));
      ax[v] = _mm256_abs_epi8(bv[v]);
    }
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      int32_t word;
      memcpy(&word, a + 4 * i, 4);
      const __m256i w = _mm256_set1_epi32(word);
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) {
        const __m256i p = _mm256_maddubs_epi16(ax[v], _mm256_sign_epi8(w, bv[v]));
        acc[i][v] = _mm256_add_epi32(acc[i][v], _mm256_madd_epi16(p, ones));
      }
    }
  }
  int8_t tile[MR * NR];
  const int direct = t->cs == 1;
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i) {
    if (direct && i >= t->rows) break;
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) {
      const __m128i r = mte__pack8_256(mte__requant256(acc[i][v], &t->chan[i], t->zp, t->lo, t->hi));
      const int n = t->cols - 8 * v;
      if (direct && n >= 8) {
        _mm_storel_epi64((__m128i *)(t->y + i * t->rs + 8 * v), r);
      } else {
        _mm_storel_epi64((__m128i *)(tile + i * NR + 8 * v), r);
        if (direct && n > 0) memcpy(t->y + i * t->rs + 8 * v, tile + i * NR + 8 * v, (size_t)n);
      }
    }
  }
  if (!direct)
    for (int i = 0; i < t->rows; ++i)
      for (int j = 0; j < t->cols; ++j) t->y[i * t->rs + j * t->cs] = tile[i * NR + j];
}

static double qgemm_peak_avx2(int64_t rounds) {
  __m256i acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_epi32(i);
  __m256i x = _mm256_set1_epi8(3), y = _mm256_set1_epi8(-2);
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t r = 0; r < rounds; ++r) {
    __asm__ volatile("" : "+x"(x), "+x"(y));
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i)
      acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), ones));
  }
  for (int i = 1; i < 12; ++i) acc[0] = _mm256_add_epi32(acc[0], acc[i]);
  int32_t sink[8];
  _mm256_storeu_si256((__m256i *)sink, acc[0]);
  volatile int keep = sink[0];
  (void)keep;
  return (double)rounds * 12.0 * 32 * 2.0;
}

const mte_qgemm_kernel mte_qgemm_kernel_avx2 = {
    .isa = "avx2", .mr = MR, .nr = NR, .x_offset = 0, .ukernel = qgemm_ukernel_avx2,
    .dot_peak = qgemm_peak_avx2};
#endif
