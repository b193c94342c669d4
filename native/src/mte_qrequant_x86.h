/*
 * mte_qrequant_x86.h - the requantization of mte_quant_internal.h on 16 (AVX-512) or 8
 * (AVX2) int32 lanes, one channel (mte_qchan) broadcast over the vector. Included by the
 * x86 qgemm / qdepthwise files, compiled with their ISA flags.
 *
 *   saturating left shift   compare against INT32_MAX >> left / INT32_MIN >> left, blend
 *                           (skipped when left == 0, the usual case: multipliers < 1)
 *   srdhm(x, m)             32x32 -> 64 products of the even and the odd lanes (PMULDQ; the
 *                           odd lanes moved down by a dword shuffle, which runs on p5 where
 *                           a 64-bit shift would compete with PMULDQ for p0);
 *                           (ab + 2^30) >> 31 equals C's truncating (ab + nudge) / 2^31 for
 *                           both signs of ab (for ab < 0: trunc((ab + 1 - 2^30) / 2^31) =
 *                           floor((ab + 2^30) / 2^31)), so bits 31..62 of ab + 2^30 are the
 *                           answer: a logical 64-bit shift suffices; m >= 0 never saturates
 *   rdbpot(x, right)        arithmetic shift + (remainder > threshold)
 *   output                  clamp to [lo - zp, hi - zp], then + zp (no overflow)
 *
 * A `fast` channel (mte__qchan_fold: the bias in comp, left == 0, 1 <= e = right <= 23) takes
 * 15 ops instead: with P = x * m (exact in int64) srdhm is floor((P + 2^30) / 2^31) and
 * rdbpot(v, e) is floor((v + 2^(e-1) - [v < 0]) / 2^e); nested floors combine, and [v < 0]
 * may be read as [P < 0] (they differ only where v = 0, which rounds to 0 either way), so
 *     y = (P + 2^30 + 2^(30+e) + zp * 2^(31+e) - [P < 0] * 2^31) >> (31 + e)
 * (arithmetic; |P| < 2^62 and e <= 23 keep the sum in int64; |y - zp| <= 2^30). The odd
 * lanes shift by e - 1 only: their bits 32..63 are then the answer, in place (12 ops per 16
 * lanes: mte__requant512_fast, its constants once per channel in mte_qfast512; the caller
 * clamps, which the GEMM and depthwise kernels do on bytes, 64 or 32 at a time, after two
 * saturating packs). AVX2 has no
 * 64-bit arithmetic shift: it adds 2^63 (the sum becomes unsigned) and shifts logically,
 * which leaves y + 2^(32-e) in the low 32 bits (18 ops instead of ~25).
 */
#ifndef MTE_QREQUANT_X86_H
#define MTE_QREQUANT_X86_H

#include <immintrin.h>

#include "mte_quant_internal.h"

#if defined(__AVX512F__) && defined(__AVX512BW__)
/* a fast channel's constants for output zero point zp (the sum's k, the two shifts) */
typedef struct mte_qfast512 {
  __m512i m, k;
  __m128i even, odd;
} mte_qfast512;

static inline mte_qfast512 mte__qfast512(const mte_qchan *c, int32_t zp) {
  const int e = c->right;
  mte_qfast512 f;
  f.m = _mm512_set1_epi32(c->mult); /* VPMULDQ reads the low dword of each qword */
  f.k = _mm512_set1_epi64((1ll << 30) + (1ll << (30 + e)) + (int64_t)zp * (1ll << (31 + e)));
  f.even = _mm_cvtsi32_si128(31 + e), f.odd = _mm_cvtsi32_si128(e - 1);
  return f;
}

/* a fast channel's y (zp included, not clamped; |y - zp| <= 2^30) from dot = acc + comp */
static inline __m512i mte__requant512_fast(__m512i x, const mte_qfast512 *f) {
  const __m512i two31 = _mm512_set1_epi64(1ll << 31), zero = _mm512_setzero_si512();
  const __m512i pe = _mm512_mul_epi32(x, f->m);
  const __m512i po = _mm512_mul_epi32(_mm512_shuffle_epi32(x, (_MM_PERM_ENUM)0xB1), f->m);
  __m512i te = _mm512_add_epi64(pe, f->k), to = _mm512_add_epi64(po, f->k);
  te = _mm512_mask_sub_epi64(te, _mm512_cmplt_epi64_mask(pe, zero), te, two31);
  to = _mm512_mask_sub_epi64(to, _mm512_cmplt_epi64_mask(po, zero), to, two31);
  return _mm512_mask_blend_epi32(0xAAAA, _mm512_sra_epi64(te, f->even),
                                 _mm512_sra_epi64(to, f->odd));
}

/* the requantized int32 values in [lo, hi] of dot = acc + comp (comp already added) */
static inline __m512i mte__requant512_dot(__m512i x, const mte_qchan *c, int32_t zp, int32_t lo,
                                          int32_t hi) {
  if (c->fast) {
    const mte_qfast512 f = mte__qfast512(c, zp);
    x = mte__requant512_fast(x, &f);
    return _mm512_min_epi32(_mm512_max_epi32(x, _mm512_set1_epi32(lo)), _mm512_set1_epi32(hi));
  }
  x = _mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(x, _mm512_set1_epi32(c->blo)),
                                        _mm512_set1_epi32(c->bhi)),
                       _mm512_set1_epi32(c->bias));
  const __m128i left = _mm_cvtsi32_si128(c->left), right = _mm_cvtsi32_si128(c->right);
  if (c->left) { /* multipliers >= 1 only: the usual left == 0 skips 5 ops */
    const __mmask16 over = _mm512_cmpgt_epi32_mask(x, _mm512_set1_epi32(INT32_MAX >> c->left));
    const __mmask16 under = _mm512_cmplt_epi32_mask(x, _mm512_set1_epi32(INT32_MIN >> c->left));
    x = _mm512_sll_epi32(x, left);
    x = _mm512_mask_mov_epi32(x, over, _mm512_set1_epi32(INT32_MAX));
    x = _mm512_mask_mov_epi32(x, under, _mm512_set1_epi32(INT32_MIN));
  }
  const __m512i m = _mm512_set1_epi64(c->mult), nudge = _mm512_set1_epi64(1ll << 30);
  __m512i even = _mm512_add_epi64(_mm512_mul_epi32(x, m), nudge);
  const __m512i x_odd = _mm512_shuffle_epi32(x, (_MM_PERM_ENUM)0xB1);
  __m512i odd = _mm512_add_epi64(_mm512_mul_epi32(x_odd, m), nudge);
  x = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 31), _mm512_slli_epi64(odd, 1));
  const __m512i mask = _mm512_set1_epi32((int32_t)(((int64_t)1 << c->right) - 1));
  const __m512i rem = _mm512_and_si512(x, mask);
  const __m512i thr = _mm512_add_epi32(_mm512_srai_epi32(mask, 1), _mm512_srli_epi32(x, 31));
  x = _mm512_sra_epi32(x, right);
  x = _mm512_mask_sub_epi32(x, _mm512_cmpgt_epi32_mask(rem, thr), x, _mm512_set1_epi32(-1));
  x = _mm512_min_epi32(_mm512_max_epi32(x, _mm512_set1_epi32(lo - zp)), _mm512_set1_epi32(hi - zp));
  return _mm512_add_epi32(x, _mm512_set1_epi32(zp));
}

/* the int32 accumulators of one channel -> requantized int32 values in [lo, hi] */
static inline __m512i mte__requant512(__m512i acc, const mte_qchan *c, int32_t zp, int32_t lo,
                                      int32_t hi) {
  return mte__requant512_dot(_mm512_add_epi32(acc, _mm512_set1_epi32(c->comp)), c, zp, lo, hi);
}
#endif

#if defined(__AVX2__)
static inline __m256i mte__requant256(__m256i acc, const mte_qchan *c, int32_t zp, int32_t lo,
                                      int32_t hi) {
  __m256i x = _mm256_add_epi32(acc, _mm256_set1_epi32(c->comp));
  if (c->fast) { /* as on AVX-512, shifting y + 2^(32-e) logically: the sum biased by 2^63 */
    const int e = c->right;
    const __m256i m = _mm256_set1_epi64x(c->mult), zero = _mm256_setzero_si256();
    const __m256i k = _mm256_set1_epi64x((int64_t)((1ull << 30) + (1ull << (30 + e)) +
                                                   (uint64_t)(int64_t)zp * (1ull << (31 + e)) +
                                                   (1ull << 63)));
    const __m256i pe = _mm256_mul_epi32(x, m), po = _mm256_mul_epi32(_mm256_srli_epi64(x, 32), m);
    const __m256i te = _mm256_add_epi64(_mm256_add_epi64(pe, k),
                                        _mm256_slli_epi64(_mm256_cmpgt_epi64(zero, pe), 31));
    const __m256i to = _mm256_add_epi64(_mm256_add_epi64(po, k),
                                        _mm256_slli_epi64(_mm256_cmpgt_epi64(zero, po), 31));
    x = _mm256_blend_epi32(_mm256_srl_epi64(te, _mm_cvtsi32_si128(31 + e)),
                           _mm256_srl_epi64(to, _mm_cvtsi32_si128(e - 1)), 0xAA);
    x = _mm256_sub_epi32(x, _mm256_set1_epi32((int32_t)(1u << (32 - e))));
    return _mm256_min_epi32(_mm256_max_epi32(x, _mm256_set1_epi32(lo)), _mm256_set1_epi32(hi));
  }
  x = _mm256_add_epi32(_mm256_min_epi32(_mm256_max_epi32(x, _mm256_set1_epi32(c->blo)),
                                        _mm256_set1_epi32(c->bhi)),
                       _mm256_set1_epi32(c->bias));
  const __m128i left = _mm_cvtsi32_si128(c->left), right = _mm_cvtsi32_si128(c->right);
  if (c->left) {
    const __m256i over = _mm256_cmpgt_epi32(x, _mm256_set1_epi32(INT32_MAX >> c->left));
    const __m256i under = _mm256_cmpgt_epi32(_mm256_set1_epi32(INT32_MIN >> c->left), x);
    x = _mm256_sll_epi32(x, left);
    x = _mm256_blendv_epi8(x, _mm256_set1_epi32(INT32_MAX), over);
    x = _mm256_blendv_epi8(x, _mm256_set1_epi32(INT32_MIN), under);
  }
  const __m256i m = _mm256_set1_epi64x(c->mult), nudge = _mm256_set1_epi64x(1ll << 30);
  __m256i even = _mm256_add_epi64(_mm256_mul_epi32(x, m), nudge);
  __m256i odd = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), m), nudge);
  x = _mm256_blend_epi32(_mm256_srli_epi64(even, 31), _mm256_slli_epi64(odd, 1), 0xAA);
  const __m256i mask = _mm256_set1_epi32((int32_t)(((int64_t)1 << c->right) - 1));
  const __m256i rem = _mm256_and_si256(x, mask);
  const __m256i thr = _mm256_add_epi32(_mm256_srai_epi32(mask, 1), _mm256_srli_epi32(x, 31));
  x = _mm256_sra_epi32(x, right);
  x = _mm256_sub_epi32(x, _mm256_cmpgt_epi32(rem, thr));
  x = _mm256_min_epi32(_mm256_max_epi32(x, _mm256_set1_epi32(lo - zp)), _mm256_set1_epi32(hi - zp));
  return _mm256_add_epi32(x, _mm256_set1_epi32(zp));
}

/* 8 int32 values in [-128, 127] -> 8 bytes (the low half of the result) */
static inline __m128i mte__pack8_256(__m256i v) {
  __m128i lo = _mm256_castsi256_si128(v), hi = _mm256_extracti128_si256(v, 1);
  __m128i w = _mm_packs_epi32(lo, hi); /* 8 x int16, in order */
  return _mm_packs_epi16(w, w);
}
#endif

#endif /* MTE_QREQUANT_X86_H */
