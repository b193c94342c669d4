/*
 * x86_avx2/qelem.c - the qelem family (mte_qelem_internal.h) in AVX2: the AVX-512 steps at
 * half the width, full vectors only (the portable loop takes the tail).
 *
 *   quantize  8 floats a vector (vdivps, clamps, NaN blend, truncate, step on the fraction)
 *   lookup    8 pairs a vector: vpgatherdd of the aligned dword holding table[a << 8 | b]
 *   max_row   32 bytes a vector of vpmaxsb over the kw shifted loads; at stride 2 the even
 *             bytes kept by masking the words to their low byte, vpackuswb and vpermq
 * The GEMV is the plain C one (generic/qelem.c).
 */
#include "../../mte_qelem_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

static int64_t quantize_avx2(int64_t n, const float *x, float scale, int32_t zp, int8_t *y) {
  const __m256 s = _mm256_set1_ps(scale), lo = _mm256_set1_ps(-256.0f),
               hi = _mm256_set1_ps(256.0f), half = _mm256_set1_ps(0.5f),
               mhalf = _mm256_set1_ps(-0.5f);
  const __m256i z = _mm256_set1_epi32(zp), qlo = _mm256_set1_epi32(-128),
                qhi = _mm256_set1_epi32(127);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 r = _mm256_div_ps(_mm256_loadu_ps(x + i), s);
    const __m256 ordered = _mm256_cmp_ps(r, r, _CMP_ORD_Q);
    r = _mm256_min_ps(_mm256_max_ps(r, lo), hi);
    r = _mm256_and_ps(r, ordered); /* NaN -> 0 */
    const __m256i t = _mm256_cvttps_epi32(r);
    const __m256 frac = _mm256_sub_ps(r, _mm256_cvtepi32_ps(t));
    /* a true compare is -1: t - (frac >= 0.5) + (frac <= -0.5) */
    const __m256i up = _mm256_castps_si256(_mm256_cmp_ps(frac, half, _CMP_GE_OQ));
    const __m256i dn = _mm256_castps_si256(_mm256_cmp_ps(frac, mhalf, _CMP_LE_OQ));
    __m256i q = _mm256_add_epi32(_mm256_sub_epi32(t, up), dn);
    q = _mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(q, z), qlo), qhi);
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    _mm_storel_epi64((__m128i *)(y + i), _mm_packs_epi16(w, w));
  }
  return i;
}

static int64_t lookup_avx2(int64_t n, const int8_t *a, const int8_t *b, const int8_t *table,
                           int8_t *y) {
  const __m256i three = _mm256_set1_epi32(3), bytes = _mm256_set1_epi32(0xFF);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i ia = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(a + i)));
    const __m256i ib = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(b + i)));
    const __m256i idx = _mm256_or_si256(_mm256_slli_epi32(ia, 8), ib);
    const __m256i word =
        _mm256_i32gather_epi32((const int *)table, _mm256_srli_epi32(idx, 2), 4);
    const __m256i shift = _mm256_slli_epi32(_mm256_and_si256(idx, three), 3);
    const __m256i v = _mm256_and_si256(_mm256_srlv_epi32(word, shift), bytes);
    const __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    _mm_storel_epi64((__m128i *)(y + i), _mm_packus_epi16(w, w));
  }
  return i;
}

static int64_t max_row_avx2(const int8_t *row, int64_t kw, int64_t sw, int64_t count,
                            int8_t *y) {
  int64_t s = 0;
  if (sw == 1) {
    for (; s + 32 <= count; s += 32) {
      __m256i v = _mm256_loadu_si256((const __m256i *)(row + s));
      for (int64_t j = 1; j < kw; ++j)
        v = _mm256_max_epi8(v, _mm256_loadu_si256((const __m256i *)(row + s + j)));
      _mm256_storeu_si256((__m256i *)(y + s), v);
    }
    return s;
  }
  if (sw != 2) return 0;
  const __m256i low = _mm256_set1_epi16(0xFF);
  for (; s + 17 <= count; s += 16) { /* reads row[2s .. 2s + 31 + kw - 1] */
    const int8_t *p = row + 2 * s;
    __m256i v = _mm256_loadu_si256((const __m256i *)p);
    for (int64_t j = 1; j < kw; ++j)
      v = _mm256_max_epi8(v, _mm256_loadu_si256((const __m256i *)(p + j)));
    v = _mm256_and_si256(v, low);
    v = _mm256_permute4x64_epi64(_mm256_packus_epi16(v, v), 0xD8);
    _mm_storeu_si128((__m128i *)(y + s), _mm256_castsi256_si128(v));
  }
  return s;
}

const mte_qelem_kernel mte_qelem_kernel_avx2 = {
    .isa = "avx2", .quantize = quantize_avx2, .lookup = lookup_avx2, .add = NULL,
    .max_row = max_row_avx2, .gemv = mte__qgemv_generic};
#endif
