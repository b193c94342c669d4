/*
 * x86_avx512vnni/qgemv.c - the batch-1 int8 GEMV with VPDPBUSD, and the qelem row of the
 * avx512vnni ISA (its other entries are the AVX-512 ones).
 *
 * A weight panel's k group g is one 64-byte vector (16 outputs x 4 k); x's group g, made
 * unsigned (x ^ 0x80 = x + 128) and broadcast, times it gives 16 dot products of 4 in one
 * VPDPBUSD. Four panels share each broadcast (four independent accumulator chains, four
 * sequential weight streams); acc = dot - 128 * wsum removes the +128 exactly.
 */
#include "../../mte_qelem_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <string.h>

static inline __m512i bcast_u8(const int8_t *x4) {
  int32_t v;
  memcpy(&v, x4, 4);
  return _mm512_set1_epi32((int32_t)((uint32_t)v ^ 0x80808080u));
}

static inline void store_panel(__m512i dot, const int32_t *wsum, int32_t *acc) {
  const __m512i c = _mm512_slli_epi32(_mm512_loadu_si512(wsum), 7);
  _mm512_storeu_si512(acc, _mm512_sub_epi32(dot, c));
}

static void gemv_vnni(int64_t panels, int64_t kg, const int8_t *w, const int32_t *wsum,
                      const int8_t *x, int32_t *acc) {
  const int64_t pb = kg * 64; /* bytes per panel */
  int64_t p = 0;
  for (; p + 4 <= panels; p += 4) {
    const int8_t *w0 = w + p * pb;
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t g = 0; g < kg; ++g) {
      const __m512i xb = bcast_u8(x + 4 * g);
      a0 = _mm512_dpbusd_epi32(a0, xb, _mm512_loadu_si512(w0 + g * 64));
      a1 = _mm512_dpbusd_epi32(a1, xb, _mm512_loadu_si512(w0 + pb + g * 64));
      a2 = _mm512_dpbusd_epi32(a2, xb, _mm512_loadu_si512(w0 + 2 * pb + g * 64));
      a3 = _mm512_dpbusd_epi32(a3, xb, _mm512_loadu_si512(w0 + 3 * pb + g * 64));
    }
    store_panel(a0, wsum + p * 16, acc + p * 16);
    store_panel(a1, wsum + (p + 1) * 16, acc + (p + 1) * 16);
    store_panel(a2, wsum + (p + 2) * 16, acc + (p + 2) * 16);
    store_panel(a3, wsum + (p + 3) * 16, acc + (p + 3) * 16);
  }
  for (; p < panels; ++p) {
    const int8_t *w0 = w + p * pb;
    __m512i a0 = _mm512_setzero_si512(), a1 = a0; /* even and odd groups */
    int64_t g = 0;
    for (; g + 2 <= kg; g += 2) {
      a0 = _mm512_dpbusd_epi32(a0, bcast_u8(x + 4 * g), _mm512_loadu_si512(w0 + g * 64));
      a1 = _mm512_dpbusd_epi32(a1, bcast_u8(x + 4 * g + 4), _mm512_loadu_si512(w0 + g * 64 + 64));
    }
    if (g < kg) a0 = _mm512_dpbusd_epi32(a0, bcast_u8(x + 4 * g), _mm512_loadu_si512(w0 + g * 64));
    store_panel(_mm512_add_epi32(a0, a1), wsum + p * 16, acc + p * 16);
  }
}

const mte_qelem_kernel mte_qelem_kernel_avx512vnni = {
    .isa = "avx512vnni", .quantize = mte__quantize_avx512, .lookup = mte__lookup_avx512,
    .add = mte__add_avx512, .max_row = mte__max_row_avx512, .gemv = gemv_vnni};
#endif
