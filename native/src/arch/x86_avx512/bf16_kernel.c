/*
 * x86_avx512/bf16_kernel.c - the "bf16" family on AVX-512: a VDPBF16PS microkernel where
 * the CPU has AVX512_BF16 (Cooper Lake, Sapphire Rapids, Zen 4/5), else widening.
 *
 * VDPBF16PS multiplies 16 pairs of bf16 by 16 pairs and adds both float32 products of each
 * pair into a float32 lane: 32 multiply-adds per instruction where VFMADD231PS does 16.
 * The tile is 8 x 32 as the float32 kernel's: per k pair, two zmm of B pairs (32 columns),
 * eight broadcast A pairs, sixteen VDPBF16PS into 16 accumulators. The function carries its
 * own target attribute (avx512bf16), so this file keeps the avx512 flags of its directory
 * and the instruction runs only behind the AVX512_BF16 check (`needs`, mte__bf16_kernel).
 *
 * The conversions are AVX-512F/BW for both descriptors: bf16 widening is a zero-extend and
 * a shift, fp16 is VCVTPH2PS / VCVTPS2PH (F16C's instructions at 512 bits, round to nearest
 * even), bf16 narrowing the integer round-to-nearest-even of the generic code, 16 at a time.
 */
#include "../../mte_bf16_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#ifndef MTE_BF16_AVX512_MR
#define MTE_BF16_AVX512_MR 8
#endif
#define MR MTE_BF16_AVX512_MR
#define NV 2 /* zmm of pairs per row: 32 columns */
#define NR (16 * NV)

static inline __mmask16 tail_mask(int64_t n) { return (__mmask16)((1u << n) - 1u); }

void mte__bf16_to_f32_avx512(const uint16_t *MTE_RESTRICT s, float *MTE_RESTRICT d, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i v = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(s + i)));
    _mm512_storeu_ps(d + i, _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)));
  }
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    const __m512i v = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, s + i));
    _mm512_mask_storeu_ps(d + i, m, _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)));
  }
}

void mte__f16_to_f32_avx512(const uint16_t *MTE_RESTRICT s, float *MTE_RESTRICT d, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(d + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(s + i))));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(d + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, s + i)));
  }
}

/* 16 floats to bf16, nearest even; NaN quieted (as mte__float_to_bf16) */
static inline __m256i narrow16_bf16(__m512 x) {
  const __m512i u = _mm512_castps_si512(x);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(u, _mm512_set1_epi32(0x400000)));
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(r, 16));
}

void mte__f32_to_bf16_avx512(const float *MTE_RESTRICT s, uint16_t *MTE_RESTRICT d, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256((__m256i *)(d + i), narrow16_bf16(_mm512_loadu_ps(s + i)));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm256_mask_storeu_epi16(d + i, m, narrow16_bf16(_mm512_maskz_loadu_ps(m, s + i)));
  }
}

void mte__f32_to_f16_avx512(const float *MTE_RESTRICT s, uint16_t *MTE_RESTRICT d, int64_t n) {
  const int rne = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256((__m256i *)(d + i), _mm512_cvtps_ph(_mm512_loadu_ps(s + i), rne));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm256_mask_storeu_epi16(d + i, m, _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, s + i), rne));
  }
}

#define BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))

/* the MR x NR tile of pair panels (mte_bf16_dot_fn) */
BF16_TARGET static void dot_ukernel(int64_t kq, const uint32_t *MTE_RESTRICT a,
                                    const uint32_t *MTE_RESTRICT b, float *MTE_RESTRICT c,
                                    int64_t ldc, float alpha, float beta) {
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
  __m512 acc[MR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_setzero_ps();
  for (int64_t q = 0; q < kq; ++q) {
    __m512bh bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = (__m512bh)_mm512_load_si512(b + q * NR + 16 * v);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32((int)a[q * MR + i]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_dpbf16_ps(acc[i][v], av, bv[v]);
    }
  }
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      float *cp = c + i * ldc + 16 * v;
      __m512 r = _mm512_mul_ps(va, acc[i][v]);
      if (beta != 0.0f) r = _mm512_fmadd_ps(vb, _mm512_loadu_ps(cp), r);
      _mm512_storeu_ps(cp, r);
    }
}

/* 12 independent VDPBF16PS chains, nothing loaded: the bf16 arithmetic ceiling */
BF16_TARGET static double dot_peak(int64_t rounds) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(0.001f * (float)i);
  const __m512bh x = (__m512bh)_mm512_set1_epi32(0x3f7f3f7f); /* (0.996, 0.996) */
  const __m512bh y = (__m512bh)_mm512_set1_epi32(0x38d138d1); /* (1e-4, 1e-4) */
  for (int64_t r = 0; r < rounds; ++r)
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], x, y);
  for (int i = 1; i < 12; ++i) acc[0] = _mm512_add_ps(acc[0], acc[i]);
  float sink[16];
  _mm512_storeu_ps(sink, acc[0]);
  volatile float keep = sink[0];
  (void)keep;
  return (double)rounds * 12.0 * 16 * 2 * 2.0; /* 16 lanes x 2 products x (mul + add) */
}

_Static_assert(MR * NR <= MTE_MAX_TILE, "edge tile buffer in gemm_bf16.c too small");

/* no AVX512_BF16: widen in the packing, run the avx512 float32 microkernel */
static const mte_bf16_kernel avx512_widen = {
    .isa = "avx512",
    .path = "avx512 widen+sgemm",
    .bf16_to_f32 = mte__bf16_to_f32_avx512,
    .f16_to_f32 = mte__f16_to_f32_avx512,
    .f32_to_bf16 = mte__f32_to_bf16_avx512,
    .f32_to_f16 = mte__f32_to_f16_avx512,
};

const mte_bf16_kernel mte_bf16_kernel_avx512 = {
    .isa = "avx512",
    .path = "avx512_bf16 vdpbf16ps",
    .needs = MTE_CPU_AVX512_BF16,
    .fallback = &avx512_widen,
    .bf16_to_f32 = mte__bf16_to_f32_avx512,
    .f16_to_f32 = mte__f16_to_f32_avx512,
    .f32_to_bf16 = mte__f32_to_bf16_avx512,
    .f32_to_f16 = mte__f32_to_f16_avx512,
    .dot = dot_ukernel,
    .mr = MR,
    .nr = NR,
    .mc = (192 / MR) * MR,
    .kc = 512, /* 256 pairs: a 32 KiB B micro-panel, as the float32 kernel's 256 floats */
    .nc = 4096,
    .dot_peak = dot_peak,
};
#endif
