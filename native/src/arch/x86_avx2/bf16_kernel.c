/*
 * x86_avx2/bf16_kernel.c - the "bf16" family on AVX2: widening in the packing (no bf16
 * arithmetic before AVX-512), then the avx2 float32 microkernel.
 *
 * bf16 widening is a zero-extend and a shift; narrowing the integer round-to-nearest-even
 * of the generic code, 8 at a time. fp16 uses F16C (VCVTPH2PS, VCVTPS2PH with round to
 * nearest even), which every AVX2 CPU has but the avx2 row does not require: those two
 * functions carry target("f16c"), and the descriptor needs MTE_CPU_F16C (else: generic).
 */
#include "../../mte_bf16_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

static void bf16_to_f32(const uint16_t *MTE_RESTRICT s, float *MTE_RESTRICT d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(s + i)));
    _mm256_storeu_ps(d + i, _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)));
  }
  mte__bf16_to_f32_c(s + i, d + i, n - i);
}

static void f32_to_bf16(const float *MTE_RESTRICT s, uint16_t *MTE_RESTRICT d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(s + i);
    const __m256i u = _mm256_castps_si256(x);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
    const __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
    r = _mm256_blendv_epi8(r, _mm256_or_si256(u, _mm256_set1_epi32(0x400000)),
                           _mm256_castps_si256(nan));
    r = _mm256_srli_epi32(r, 16);
    /* 8 x 32 -> 8 x 16 (values <= 0xffff: the unsigned saturation never bites) */
    const __m128i lo = _mm256_castsi256_si128(r), hi = _mm256_extracti128_si256(r, 1);
    _mm_storeu_si128((__m128i *)(d + i), _mm_packus_epi32(lo, hi));
  }
  mte__f32_to_bf16_c(s + i, d + i, n - i);
}

__attribute__((target("avx2,f16c"))) static void f16_to_f32(const uint16_t *MTE_RESTRICT s,
                                                            float *MTE_RESTRICT d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + i))));
  mte__f16_to_f32_c(s + i, d + i, n - i);
}

__attribute__((target("avx2,f16c"))) static void f32_to_f16(const float *MTE_RESTRICT s,
                                                            uint16_t *MTE_RESTRICT d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128((__m128i *)(d + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(s + i),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  mte__f32_to_f16_c(s + i, d + i, n - i);
}

const mte_bf16_kernel mte_bf16_kernel_avx2 = {
    .isa = "avx2",
    .path = "avx2 widen+sgemm",
    .needs = MTE_CPU_F16C,
    .fallback = &mte_bf16_kernel_generic,
    .bf16_to_f32 = bf16_to_f32,
    .f16_to_f32 = f16_to_f32,
    .f32_to_bf16 = f32_to_bf16,
    .f32_to_f16 = f32_to_f16,
};
#endif
