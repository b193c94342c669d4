/*
 * x86_avx512/qelem.c - the qelem family (mte_qelem_internal.h) in AVX-512 (F, BW).
 *
 *   quantize  16 floats a vector: the scalar loop's steps lane-wise (vdivps, clamps, NaN
 *             mask, truncate and step away from zero on the dropped fraction), narrowed
 *             with vpmovdb
 *   lookup    16 pairs a vector: the index a << 8 | b, one vpgatherdd of the aligned
 *             dword holding table[index] (never past the table), the byte shifted down
 *   max_row   64 bytes a vector: the kw shifted loads' vpmaxsb; at stride 2 the even
 *             bytes (the windows' starts) kept by vpmovwb; the tail is a lane mask
 *   add       16 pairs a vector: TFLite's add in int32 lanes where no step saturates
 *             (mte__qadd_lanes_ok), srdhm as one 64-bit product (vpmuldq on even and odd
 *             lanes) rounded by floor((ab + 2^30) / 2^31), which equals the truncating
 *             definition for every ab; on the inputs an exact shift or two 16-bit products
 *             (VPMADDWD: 1 uop, where VPMULLD is 2) where the multiplier or the left shift
 *             allow (add_side); rdbpot exact. The output's srdhm + rdbpot is the one-rounding
 *             formula of mte_qrequant_x86.h where 1 <= -y_shift <= 23 (the usual case; 12
 *             ops, zero point included), and 64 results at a time are narrowed by two
 *             saturating packs and one VPERMD and clamped as bytes (instead of 4 x (min,
 *             max, add, VPMOVDB)): fewer uops a pair, which is what bounds this loop (~1.3
 *             cycles a pair before: far from memory speed)
 * The GEMV is the plain C one (generic/qelem.c).
 */
#include "../../mte_qelem_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "../../mte_qrequant_x86.h"

int64_t mte__quantize_avx512(int64_t n, const float *x, float scale, int32_t zp, int8_t *y) {
  const __m512 s = _mm512_set1_ps(scale), lo = _mm512_set1_ps(-256.0f),
               hi = _mm512_set1_ps(256.0f), half = _mm512_set1_ps(0.5f),
               mhalf = _mm512_set1_ps(-0.5f);
  const __m512i z = _mm512_set1_epi32(zp), one = _mm512_set1_epi32(1),
                qlo = _mm512_set1_epi32(-128), qhi = _mm512_set1_epi32(127);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 r = _mm512_div_ps(_mm512_loadu_ps(x + i), s);
    const __mmask16 nan = _mm512_cmp_ps_mask(r, r, _CMP_UNORD_Q);
    r = _mm512_min_ps(_mm512_max_ps(r, lo), hi);
    r = _mm512_mask_mov_ps(r, nan, _mm512_setzero_ps());
    const __m512i t = _mm512_cvttps_epi32(r);
    const __m512 frac = _mm512_sub_ps(r, _mm512_cvtepi32_ps(t));
    __m512i q = _mm512_mask_add_epi32(t, _mm512_cmp_ps_mask(frac, half, _CMP_GE_OQ), t, one);
    q = _mm512_mask_sub_epi32(q, _mm512_cmp_ps_mask(frac, mhalf, _CMP_LE_OQ), q, one);
    q = _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(q, z), qlo), qhi);
    _mm_storeu_si128((__m128i *)(y + i), _mm512_cvtepi32_epi8(q));
  }
  return i;
}

static inline __m128i lookup16(const int8_t *a, const int8_t *b, const int8_t *table) {
  const __m512i ia = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)a));
  const __m512i ib = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)b));
  const __m512i idx = _mm512_or_si512(_mm512_slli_epi32(ia, 8), ib);
  const __m512i word = _mm512_i32gather_epi32(_mm512_srli_epi32(idx, 2), table, 4);
  const __m512i shift = _mm512_slli_epi32(_mm512_and_si512(idx, _mm512_set1_epi32(3)), 3);
  return _mm512_cvtepi32_epi8(_mm512_srlv_epi32(word, shift));
}

int64_t mte__lookup_avx512(int64_t n, const int8_t *a, const int8_t *b, const int8_t *table,
                           int8_t *y) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) { /* two gathers in flight */
    const __m128i u = lookup16(a + i, b + i, table);
    const __m128i v = lookup16(a + i + 16, b + i + 16, table);
    _mm_storeu_si128((__m128i *)(y + i), u);
    _mm_storeu_si128((__m128i *)(y + i + 16), v);
  }
  for (; i + 16 <= n; i += 16) _mm_storeu_si128((__m128i *)(y + i), lookup16(a + i, b + i, table));
  return i;
}

/* srdhm(x, m) for m >= 0 in [0, 2^31): floor((x * m + 2^30) / 2^31) lane-wise */
static inline __m512i srdhm16(__m512i x, __m512i m64) {
  const __m512i nudge = _mm512_set1_epi64((int64_t)1 << 30);
  const __m512i even = _mm512_add_epi64(_mm512_mul_epi32(x, m64), nudge);
  const __m512i x_odd = _mm512_shuffle_epi32(x, (_MM_PERM_ENUM)0xB1); /* a p5 op, not p0 */
  const __m512i odd = _mm512_add_epi64(_mm512_mul_epi32(x_odd, m64), nudge);
  /* bits 31..62 of each product: the low dword of even >> 31, the high dword of odd << 1 */
  return _mm512_mask_blend_epi32((__mmask16)0xAAAA, _mm512_srli_epi64(even, 31),
                                 _mm512_slli_epi64(odd, 1));
}

/* rdbpot(v, e): (v >> e) + ((v & mask) > (mask >> 1) + (v < 0)), mask = 2^e - 1 */
static inline __m512i rdbpot16(__m512i v, __m128i e, __m512i mask, __m512i half) {
  const __m512i thr = _mm512_add_epi32(half, _mm512_srli_epi32(v, 31));
  const __mmask16 up = _mm512_cmpgt_epi32_mask(_mm512_and_si512(v, mask), thr);
  const __m512i q = _mm512_sra_epi32(v, e);
  return _mm512_mask_sub_epi32(q, up, q, _mm512_set1_epi32(-1));
}

/* How one side's sa = rdbpot(srdhm((a - za) << ls, m), e) is computed (d = a - za):
 *   SHIFT    m = 2^30, e = 0, ls >= 1 (the larger scale's side of add_multipliers, ratio
 *            1/2): srdhm(d 2^ls, 2^30) = floor((d 2^ls + 1) / 2) = d 2^(ls - 1) exactly
 *   SPLIT    15 <= ls <= 30, m = mh 2^16 + ml with ml in [-2^15, 2^15) and mh < 2^15:
 *            floor((d m 2^ls + 2^30) / 2^31) = d mh 2^(ls - 15) + floor((d ml + 2^(30 - ls))
 *            / 2^(31 - ls)), every term in int32 (|d ml| < 2^23); d (|d| <= 255), mh and ml
 *            are int16, so each product is one VPMADDWD of d's dword (its high half d's
 *            sign) with (mh or ml, 0)
 *   GENERAL  srdhm16 */
enum { SHIFT, SPLIT, GENERAL };

typedef struct add_side {
  __m128i ls, e, ls15, r31; /* ls, -shift, ls - 15 (or ls - 1 for SHIFT), 31 - ls */
  __m512i z, m64, mh, ml, nudge, mask, half;
} add_side;

/* m = split_hi(m) 2^16 + split_lo(m), split_lo(m) in [-2^15, 2^15) */
static int32_t split_lo(int32_t m) { return ((m & 0xFFFF) ^ 0x8000) - 0x8000; }
static int32_t split_hi(int32_t m) { return (int32_t)(((int64_t)m - split_lo(m)) >> 16); }

static add_side side_of(int32_t zp, int32_t m, int32_t shift, int32_t ls, int mode) {
  const int32_t k = (int32_t)(((int64_t)1 << -shift) - 1);
  add_side s = {_mm_cvtsi32_si128(ls), _mm_cvtsi32_si128(-shift),
                _mm_cvtsi32_si128(mode == SHIFT ? ls - 1 : ls - 15), _mm_cvtsi32_si128(31 - ls),
                _mm512_set1_epi32(zp), _mm512_set1_epi64(m), _mm512_set1_epi32(split_hi(m)),
                _mm512_set1_epi32(split_lo(m) & 0xFFFF),
                _mm512_set1_epi32(mode == SPLIT ? (int32_t)1 << (30 - ls) : 0),
                _mm512_set1_epi32(k), _mm512_set1_epi32(k >> 1)};
  return s;
}

static int mode_of(int32_t m, int32_t shift, int32_t ls) {
  if (m == (1 << 30) && shift == 0 && ls >= 1) return SHIFT;
  return ls >= 15 && split_hi(m) < (1 << 15) ? SPLIT : GENERAL; /* mh an int16 */
}

static inline __attribute__((always_inline)) __m512i side16(const int MODE, const add_side *c,
                                                           const int8_t *a) {
  const __m512i d = _mm512_sub_epi32(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)a)), c->z);
  if (MODE == SHIFT) return _mm512_sll_epi32(d, c->ls15);
  __m512i q;
  if (MODE == SPLIT) {
    const __m512i hi = _mm512_sll_epi32(_mm512_madd_epi16(d, c->mh), c->ls15);
    const __m512i lo = _mm512_add_epi32(_mm512_madd_epi16(d, c->ml), c->nudge);
    q = _mm512_add_epi32(hi, _mm512_sra_epi32(lo, c->r31));
  } else {
    q = srdhm16(_mm512_sll_epi32(d, c->ls), c->m64);
  }
  return rdbpot16(q, c->e, c->mask, c->half);
}

typedef struct add_out {
  __m128i e;
  __m512i m64, mask, half, lo, hi, z;
  mte_qfast512 fast; /* 1 <= e <= 23: the one-rounding formula's constants */
  __m512i lo8, hi8;  /* act_min, act_max in every byte */
} add_out;

/* sa + sb of the 16 pairs at a, b. |a - za| << ls < 2^30, and so are sa and sb: their sum
 * cannot saturate. */
static inline __attribute__((always_inline)) __m512i sum16(const int MA, const int MB,
                                                          const add_side *ca,
                                                          const add_side *cb, const int8_t *a,
                                                          const int8_t *b) {
  return _mm512_add_epi32(side16(MA, ca, a), side16(MB, cb, b));
}

/* y[0..16) for the pairs at a, b: srdhm and rdbpot, then the clamp and the zero point */
static inline __attribute__((always_inline)) void add16(const int MA, const int MB,
                                                       const add_side *ca, const add_side *cb,
                                                       const add_out *o, const int8_t *a,
                                                       const int8_t *b, int8_t *y) {
  __m512i v = rdbpot16(srdhm16(sum16(MA, MB, ca, cb, a, b), o->m64), o->e, o->mask, o->half);
  v = _mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(v, o->lo), o->hi), o->z);
  _mm_storeu_si128((__m128i *)y, _mm512_cvtepi32_epi8(v));
}

/* y[0..64) with the one-rounding output (|y - zp| <= 2^30: the saturating packs then the
 * byte clamp equal the int32 clamp, act_min and act_max being int8) */
static inline __attribute__((always_inline)) void add64_fast(const int MA, const int MB,
                                                            const add_side *ca,
                                                            const add_side *cb,
                                                            const add_out *o, const int8_t *a,
                                                            const int8_t *b, int8_t *y) {
  /* packs_epi32 then packs_epi16 leave dword d of lane l = 4 results of vector d: VPERMD
   * gathers each vector's 4 dwords back in order */
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  __m512i r[4];
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q)
    r[q] = mte__requant512_fast(sum16(MA, MB, ca, cb, a + 16 * q, b + 16 * q), &o->fast);
  __m512i v = _mm512_packs_epi16(_mm512_packs_epi32(r[0], r[1]), _mm512_packs_epi32(r[2], r[3]));
  v = _mm512_min_epi8(_mm512_max_epi8(_mm512_permutexvar_epi32(order, v), o->lo8), o->hi8);
  _mm512_storeu_si512((void *)y, v);
}

#define ADD_LOOP(MA, MB)                                                                  \
  do {                                                                                    \
    if (fast)                                                                             \
      for (; i + 64 <= n; i += 64) add64_fast(MA, MB, &ca, &cb, &o, a + i, b + i, y + i); \
    for (; i + 16 <= n; i += 16) add16(MA, MB, &ca, &cb, &o, a + i, b + i, y + i);        \
  } while (0)

int64_t mte__add_avx512(const mte_qadd_params *p, int64_t n, const int8_t *a, const int8_t *b,
                        int8_t *y) {
  if (!mte__qadd_lanes_ok(p)) return 0;
  const int ma = mode_of(p->a_multiplier, p->a_shift, p->left_shift);
  const int mb = mode_of(p->b_multiplier, p->b_shift, p->left_shift);
  const add_side ca = side_of(p->a_zero_point, p->a_multiplier, p->a_shift, p->left_shift, ma);
  const add_side cb = side_of(p->b_zero_point, p->b_multiplier, p->b_shift, p->left_shift, mb);
  const int32_t ey = -p->y_shift, ky = (int32_t)(((int64_t)1 << ey) - 1);
  const int fast = ey >= 1 && ey <= 23 && p->y_multiplier >= 0;
  const mte_qchan out_chan = {.mult = p->y_multiplier, .right = fast ? ey : 1};
  const add_out o = {_mm_cvtsi32_si128(ey), _mm512_set1_epi64(p->y_multiplier),
                     _mm512_set1_epi32(ky), _mm512_set1_epi32(ky >> 1),
                     _mm512_set1_epi32(p->act_min - p->y_zero_point),
                     _mm512_set1_epi32(p->act_max - p->y_zero_point),
                     _mm512_set1_epi32(p->y_zero_point),
                     mte__qfast512(&out_chan, p->y_zero_point),
                     _mm512_set1_epi8((char)p->act_min), _mm512_set1_epi8((char)p->act_max)};
  int64_t i = 0;
  if (ma == SHIFT && mb == SPLIT)
    ADD_LOOP(SHIFT, SPLIT);
  else if (ma == SPLIT && mb == SHIFT)
    ADD_LOOP(SPLIT, SHIFT);
  else if (ma == SHIFT && mb == SHIFT)
    ADD_LOOP(SHIFT, SHIFT);
  else if (ma == SPLIT && mb == SPLIT)
    ADD_LOOP(SPLIT, SPLIT);
  else
    ADD_LOOP(GENERAL, GENERAL); /* SHIFT is a case of GENERAL too */
  return i;
}
#undef ADD_LOOP

static inline __mmask64 below64(int64_t n) {
  return n >= 64 ? ~(__mmask64)0 : n <= 0 ? 0 : (((__mmask64)1 << n) - 1);
}

int64_t mte__max_row_avx512(const int8_t *row, int64_t kw, int64_t sw, int64_t count,
                            int8_t *y) {
  if (sw == 1) {
    for (int64_t s = 0; s < count; s += 64) {
      const __mmask64 m = below64(count - s);
      __m512i v = _mm512_maskz_loadu_epi8(m, row + s);
      for (int64_t j = 1; j < kw; ++j)
        v = _mm512_max_epi8(v, _mm512_maskz_loadu_epi8(m, row + s + j));
      _mm512_mask_storeu_epi8(y + s, m, v);
    }
    return count;
  }
  if (sw != 2) return 0;
  for (int64_t s = 0; s < count; s += 32) {
    const int64_t left = count - s; /* lanes 2k < 2 * left are read */
    const __mmask64 m = below64(2 * left - 1);
    const int8_t *p = row + 2 * s;
    __m512i v = _mm512_maskz_loadu_epi8(m, p);
    for (int64_t j = 1; j < kw; ++j) v = _mm512_max_epi8(v, _mm512_maskz_loadu_epi8(m, p + j));
    const __m256i even = _mm512_cvtepi16_epi8(v);
    _mm256_mask_storeu_epi8(y + s, (__mmask32)below64(left), even);
  }
  return count;
}

const mte_qelem_kernel mte_qelem_kernel_avx512 = {
    .isa = "avx512", .quantize = mte__quantize_avx512, .lookup = mte__lookup_avx512,
    .add = mte__add_avx512, .max_row = mte__max_row_avx512, .gemv = mte__qgemv_generic};
#endif
