/*
 * x86_avx2/im2col_panel.c - im2col panel packing and col2im for AVX2
 * (see mte_conv_internal.h).
 *
 * Stride-1 rows only: each segment is moved 8 floats at a time with vmaskmovps, whose
 * masked-off lanes read as zero without touching memory (the image's borders) and are not
 * stored (past the segment's end).
 */
#include "../../mte_conv_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

/* lanes t with a <= t < b, as a vmaskmovps mask */
static inline __m256i lanes(int64_t a, int64_t b) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const int ia = (int)(a < 0 ? 0 : a > 8 ? 8 : a), ib = (int)(b < 0 ? 0 : b > 8 ? 8 : b);
  return _mm256_and_si256(_mm256_cmpgt_epi32(lane, _mm256_set1_epi32(ia - 1)),
                          _mm256_cmpgt_epi32(_mm256_set1_epi32(ib), lane));
}

static void im2col_panel(const mte_conv_segs *sg, const float *x, int64_t p0, int64_t kc,
                         int nr, float *MTE_RESTRICT dst) {
  if (sg->sw != 1) {
    mte__im2col_panel_generic(sg, x, p0, kc, nr, dst);
    return;
  }
  const int64_t khw = sg->kh * sg->kw;
  int64_t c = p0 / khw, i = p0 % khw / sg->kw, j = p0 % sg->kw;
  for (int64_t p = 0; p < kc; ++p) {
    const float *plane = x + c * sg->HWi;
    float *d = dst + p * nr;
    for (int s = 0; s < sg->nseg; ++s) {
      const int64_t ih = sg->ih0[s] + i * sg->dh, len = sg->len[s];
      int64_t lo = 0, hi = 0, iw = 0;
      const float *row = plane;
      if (ih >= 0 && ih < sg->H) {
        iw = sg->iw0[s] + j * sg->dw;
        lo = -iw;
        hi = sg->W - iw;
        row = plane + ih * sg->W;
      }
      float *o = d + sg->off[s];
      for (int64_t q = 0; q < len; q += 8) {
        const int inside = hi - q > 0 && lo - q < 8 && hi > lo;
        const __m256 v = inside ? _mm256_maskload_ps(row + (iw + q), lanes(lo - q, hi - q))
                                : _mm256_setzero_ps();
        _mm256_maskstore_ps(o + q, lanes(0, len - q), v);
      }
    }
    if (++j == sg->kw) {
      j = 0;
      if (++i == sg->kh) i = 0, ++c;
    }
  }
}

static void col2im(const mte_conv_segs *sg, float *gx, const float *cols, int64_t ldc,
                   int64_t rows) {
  if (sg->sw != 1) {
    mte__col2im_generic(sg, gx, cols, ldc, rows);
    return;
  }
  int64_t c = 0, i = 0, j = 0;
  for (int64_t r = 0; r < rows; ++r) {
    float *plane = gx + c * sg->HWi;
    const float *src = cols + r * ldc;
    for (int s = 0; s < sg->nseg; ++s) {
      const int64_t ih = sg->ih0[s] + i * sg->dh;
      if (ih < 0 || ih >= sg->H) continue;
      const int64_t iw = sg->iw0[s] + j * sg->dw, len = sg->len[s];
      const int64_t lo = iw < 0 ? -iw : 0, hi = sg->W - iw < len ? sg->W - iw : len;
      float *d = plane + ih * sg->W + iw;
      const float *a = src + sg->off[s];
      int64_t q = lo;
      for (; q + 8 <= hi; q += 8)
        _mm256_storeu_ps(d + q, _mm256_add_ps(_mm256_loadu_ps(d + q), _mm256_loadu_ps(a + q)));
      if (q < hi) {
        const __m256i m = lanes(0, hi - q);
        _mm256_maskstore_ps(d + q, m, _mm256_add_ps(_mm256_maskload_ps(d + q, m),
                                                     _mm256_maskload_ps(a + q, m)));
      }
    }
    if (++j == sg->kw) {
      j = 0;
      if (++i == sg->kh) i = 0, ++c;
    }
  }
}

static void im2col_pieces(const mte_conv_pieces *pcs, const float *x, int64_t p0,
                          int64_t kc, float *MTE_RESTRICT dst) {
  __m256i m0[MTE_CONV_MAX_PIECES], m1[MTE_CONV_MAX_PIECES]; /* lanes 0-7 and 8-15 */
  const int n = pcs->n, nr = pcs->nr;
  for (int k = 0; k < n; ++k) m0[k] = lanes(0, pcs->len[k]), m1[k] = lanes(0, pcs->len[k] - 8);
  const int64_t khw = pcs->kh * pcs->kw;
  int64_t c = p0 / khw, i = p0 % khw / pcs->kw, j = p0 % pcs->kw;
  for (int64_t p = 0; p < kc; ++p) {
    const float *base = x + c * pcs->plane + i * pcs->dh * pcs->pitch + j * pcs->dw;
    float *d = dst + p * nr;
    for (int k = 0; k < n; ++k) {
      const float *a = base + pcs->src[k];
      float *o = d + pcs->dst[k];
      _mm256_maskstore_ps(o, m0[k], _mm256_maskload_ps(a, m0[k]));
      if (pcs->len[k] > 8) _mm256_maskstore_ps(o + 8, m1[k], _mm256_maskload_ps(a + 8, m1[k]));
    }
    for (int q = pcs->width; q < nr; ++q) d[q] = 0.0f;
    if (++j == pcs->kw) {
      j = 0;
      if (++i == pcs->kh) i = 0, ++c;
    }
  }
}

static void col2im_pieces(const mte_conv_pieces *pcs, float *gx, const float *cols,
                          int64_t ldc, int64_t rows) {
  __m256i m0[MTE_CONV_MAX_PIECES], m1[MTE_CONV_MAX_PIECES];
  const int n = pcs->n;
  for (int k = 0; k < n; ++k) m0[k] = lanes(0, pcs->len[k]), m1[k] = lanes(0, pcs->len[k] - 8);
  const int64_t khw = pcs->kh * pcs->kw;
  /* channel innermost: consecutive read-modify-writes go to different planes */
  for (int64_t i = 0; i < pcs->kh; ++i)
    for (int64_t j = 0; j < pcs->kw; ++j)
      for (int e = 0; e < n; ++e) { /* even pieces, then odd: neighbours apart */
        const int k = e < (n + 1) / 2 ? 2 * e : 2 * (e - (n + 1) / 2) + 1;
        float *d = gx + i * pcs->dh * pcs->pitch + j * pcs->dw + pcs->src[k];
        const float *b = cols + (i * pcs->kw + j) * ldc + pcs->dst[k];
        for (int64_t c = 0; c < rows / khw; ++c, d += pcs->plane, b += khw * ldc) {
          _mm256_maskstore_ps(d, m0[k], _mm256_add_ps(_mm256_maskload_ps(d, m0[k]),
                                                      _mm256_maskload_ps(b, m0[k])));
          if (pcs->len[k] > 8)
            _mm256_maskstore_ps(d + 8, m1[k], _mm256_add_ps(_mm256_maskload_ps(d + 8, m1[k]),
                                                            _mm256_maskload_ps(b + 8, m1[k])));
        }
      }
}

const mte_im2col_kernel mte_im2col_kernel_avx2 = {"avx2", im2col_panel, im2col_pieces, col2im,
                                                 col2im_pieces};

#endif
