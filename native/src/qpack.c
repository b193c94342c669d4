/*
 * qpack.c - packing int8 x into the qgemm microkernels' panels (mte_qgemm_internal.h).
 *
 * A panel is nr columns of X by kg groups of 4 k values: panel[g][j][t] = X[4g + t][j] (^
 * 0x80 for the VNNI kernel, which takes x + 128 as unsigned bytes), so one 32-bit lane holds
 * the 4 k values of one column. Packing 4 rows of X is therefore a 4-way byte interleave of
 * 4 row runs: by the kernel's own pack4 where it has one (AVX-512: 64 columns per step), then
 * 16 columns at a time with SSE2 unpacks on x86-64 and one ST4 on aarch64 (both baseline
 * there: this file is portable; 8 at a time for the 8-column NEON panels), bytewise
 * elsewhere and at the edges.
 *
 * The rows come from x directly (QSRC_ROWS: a 1x1 stride-1 conv, whose X is x; QSRC_FLAT:
 * padded planes of x in stride phases, one run per row for convs of stride <= 2;
 * mte__qsplit2 splits the columns of the stride-2 phases), from a
 * gather of the im2col row (QSRC_IM2COL, into 4 scratch rows: runs of x with the padding
 * byte x_zp around them), or, for x transposed (QSRC_TRANS: qlinear, a column is a row of
 * x), by copying 4 consecutive bytes per column. k past K reads zeros (their weights are 0).
 */
#include <string.h>

#include "mte_qgemm_internal.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#elif defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#endif

/* dst[j*4 + t] = r[t][j] ^ flip for 16 columns */
static inline void interleave16(const uint8_t *const r[4], int64_t c, uint8_t flip,
                                uint8_t *dst) {
#if defined(__SSE2__)
  const __m128i f = _mm_set1_epi8((char)flip);
  __m128i a0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(r[0] + c)), f);
  __m128i a1 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(r[1] + c)), f);
  __m128i a2 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(r[2] + c)), f);
  __m128i a3 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(r[3] + c)), f);
  __m128i t0 = _mm_unpacklo_epi8(a0, a1), t1 = _mm_unpackhi_epi8(a0, a1);
  __m128i t2 = _mm_unpacklo_epi8(a2, a3), t3 = _mm_unpackhi_epi8(a2, a3);
  _mm_storeu_si128((__m128i *)dst, _mm_unpacklo_epi16(t0, t2));
  _mm_storeu_si128((__m128i *)(dst + 16), _mm_unpackhi_epi16(t0, t2));
  _mm_storeu_si128((__m128i *)(dst + 32), _mm_unpacklo_epi16(t1, t3));
  _mm_storeu_si128((__m128i *)(dst + 48), _mm_unpackhi_epi16(t1, t3));
#elif defined(__aarch64__) && defined(__ARM_NEON)
  const uint8x16_t f = vdupq_n_u8(flip);
  uint8x16x4_t v = {{veorq_u8(vld1q_u8(r[0] + c), f), veorq_u8(vld1q_u8(r[1] + c), f),
                     veorq_u8(vld1q_u8(r[2] + c), f), veorq_u8(vld1q_u8(r[3] + c), f)}};
  vst4q_u8(dst, v);
#else
  for (int j = 0; j < 16; ++j)
    for (int t = 0; t < 4; ++t) dst[j * 4 + t] = r[t][c + j] ^ flip;
#endif
}

/* dst[j*4 + t] = r[t][j] ^ flip for 8 columns (the 8-column NEON panels) */
static inline void interleave8(const uint8_t *const r[4], int64_t c, uint8_t flip,
                               uint8_t *dst) {
#if defined(__aarch64__) && defined(__ARM_NEON)
  const uint8x8_t f = vdup_n_u8(flip);
  uint8x8x4_t v = {{veor_u8(vld1_u8(r[0] + c), f), veor_u8(vld1_u8(r[1] + c), f),
                    veor_u8(vld1_u8(r[2] + c), f), veor_u8(vld1_u8(r[3] + c), f)}};
  vst4_u8(dst, v);
#else
  for (int j = 0; j < 8; ++j)
    for (int t = 0; t < 4; ++t) dst[j * 4 + t] = r[t][c + j] ^ flip;
#endif
}

/* 4 rows of nc bytes into the panels' group g (dst: group g of panel 0; pstride: bytes
 * between panels); columns past nc in the last panel are zero */
static void interleave_rows(const uint8_t *const r[4], int64_t nc, const mte_qgemm_kernel *k,
                            int64_t pstride, uint8_t flip, uint8_t *dst) {
  const int nr = k->nr;
  int64_t c = k->pack4 ? k->pack4(r, nc, pstride, flip, dst) : 0;
  if (nr % 16 == 0)
    for (; c + 16 <= nc; c += 16) interleave16(r, c, flip, dst + (c / nr) * pstride + (c % nr) * 4);
  else if (nr % 8 == 0)
    for (; c + 8 <= nc; c += 8) interleave8(r, c, flip, dst + (c / nr) * pstride + (c % nr) * 4);
  for (; c < nc; ++c) {
    uint8_t *d = dst + (c / nr) * pstride + (c % nr) * 4;
    for (int t = 0; t < 4; ++t) d[t] = r[t][c] ^ flip;
  }
  /* zeros to the end of the last panel: one memset (this runs once per k quad) */
  if (c % nr) memset(dst + (c / nr) * pstride + (c % nr) * 4, 0, (size_t)(nr - c % nr) * 4);
}

void mte__qsplit2(const int8_t *x, int64_t n, int8_t *even, int8_t *odd) {
  int64_t k = 0;
#if defined(__SSE2__)
  const __m128i lo = _mm_set1_epi16(0xFF);
  for (; 2 * k + 32 <= n; k += 16) {
    const __m128i a = _mm_loadu_si128((const __m128i *)(x + 2 * k));
    const __m128i b = _mm_loadu_si128((const __m128i *)(x + 2 * k + 16));
    _mm_storeu_si128((__m128i *)(even + k),
                     _mm_packus_epi16(_mm_and_si128(a, lo), _mm_and_si128(b, lo)));
    _mm_storeu_si128((__m128i *)(odd + k),
                     _mm_packus_epi16(_mm_srli_epi16(a, 8), _mm_srli_epi16(b, 8)));
  }
#elif defined(__aarch64__) && defined(__ARM_NEON)
  for (; 2 * k + 32 <= n; k += 16) {
    const int8x16x2_t v = vld2q_s8(x + 2 * k);
    vst1q_s8(even + k, v.val[0]);
    vst1q_s8(odd + k, v.val[1]);
  }
#endif
  for (; 2 * k < n; ++k) {
    even[k] = x[2 * k];
    if (2 * k + 1 < n) odd[k] = x[2 * k + 1];
  }
}

/* row (c, i, j) of the im2col matrix, columns [j0, j0 + nc), into out */
static void im2col_row(const qsrc *s, int64_t k, int64_t j0, int64_t nc, uint8_t *out) {
  const conv_geom *g = s->g;
  const int64_t c = k / g->khw, i = (k / g->kw) % g->kh, j = k % g->kw;
  const uint8_t *plane = (const uint8_t *)s->x + c * g->HWi;
  int64_t p = j0, end = j0 + nc;
  while (p < end) {
    const int64_t r = p / g->Wo, s0 = p % g->Wo;
    const int64_t s1 = s0 + (end - p) < g->Wo ? s0 + (end - p) : g->Wo; /* this output row */
    const int64_t n = s1 - s0;
    const int64_t ih = r * g->sh + i * g->dh - g->pt;
    uint8_t *o = out + (p - j0);
    if (ih < 0 || ih >= g->H) {
      memset(o, s->pad, (size_t)n);
    } else {
      const uint8_t *xr = plane + ih * g->W;
      const int64_t off = j * g->dw - g->pl; /* iw = s*sw + off */
      if (g->sw == 1) {                      /* one run of x between two runs of padding */
        int64_t lo = -off > s0 ? -off : s0, hi = g->W - off < s1 ? g->W - off : s1;
        if (hi < lo) hi = lo = s1 < lo ? s1 : lo;
        memset(o, s->pad, (size_t)(lo - s0));
        if (hi > lo) memcpy(o + (lo - s0), xr + lo + off, (size_t)(hi - lo));
        memset(o + (hi - s0), s->pad, (size_t)(s1 - hi));
      } else {
        for (int64_t t = s0; t < s1; ++t) {
          const int64_t iw = t * g->sw + off;
          o[t - s0] = iw >= 0 && iw < g->W ? xr[iw] : s->pad;
        }
      }
    }
    p += n;
  }
}

void mte__qpack_x(const qsrc *s, int64_t K, int64_t kg, const mte_qgemm_kernel *kern,
                  int64_t j0, int64_t nc, uint8_t *dst, uint8_t *rows) {
  const int nr = kern->nr;
  const int64_t pstride = kg * nr * 4;
  if (s->kind == QSRC_TRANS) { /* column j = x[j*ld .. + K) */
    for (int64_t c = 0; c < rup(nc, nr); ++c) {
      uint8_t *d = dst + (c / nr) * pstride + (c % nr) * 4;
      const uint8_t *src = (const uint8_t *)s->x + (j0 + c) * s->ld;
      for (int64_t g = 0; g < kg; ++g, d += nr * 4)
        for (int t = 0; t < 4; ++t) {
          const int64_t k = 4 * g + t;
          d[t] = c < nc && k < K ? (uint8_t)(src[k] ^ s->flip) : 0;
        }
    }
    return;
  }
  static const uint8_t zeros[64] = {0};
  int64_t fc = 0, fi = 0, fj = 0; /* FLAT: k's channel and tap, advanced with k (no division) */
  for (int64_t g = 0; g < kg; ++g) {
    const uint8_t *r[4];
    for (int t = 0; t < 4; ++t) {
      const int64_t k = 4 * g + t;
      uint8_t *scratch = rows + t * rup(nc, 64);
      if (k >= K) { /* past K: its weights are 0, any value does */
        if (nc <= 64) {
          r[t] = zeros;
          continue;
        }
        memset(scratch, 0, (size_t)nc);
        r[t] = scratch;
      } else if (s->kind == QSRC_ROWS) {
        r[t] = (const uint8_t *)s->x + k * s->ld + j0;
      } else if (s->kind == QSRC_FLAT) {
        const conv_geom *cg = s->g;
        const int hs = cg->sh == 2, ws = cg->sw == 2; /* strides 1 or 2: as shifts */
        const int64_t i = fi * cg->dh, j = fj * cg->dw;
        r[t] = (const uint8_t *)s->x + fc * s->ld + (((i & hs) << ws) + (j & ws)) * s->pq +
               (i >> hs) * s->wq + (j >> ws) + j0;
        if (++fj == cg->kw && !(fj = 0) && ++fi == cg->kh) fi = 0, ++fc;
      } else {
        im2col_row(s, k, j0, nc, scratch);
        r[t] = scratch;
      }
    }
    interleave_rows(r, nc, kern, pstride, s->flip, dst + g * nr * 4);
  }
}
