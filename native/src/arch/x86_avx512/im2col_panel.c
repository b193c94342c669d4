/*
 * x86_avx512/im2col_panel.c - im2col panel packing and col2im for AVX-512
 * (see mte_conv_internal.h).
 *
 * Stride-1 rows only: every segment is a contiguous run of one input row, moved 16 floats at
 * a time; a masked load reads zeros for lanes outside the image without touching memory and
 * a masked store leaves lanes past the segment alone, so borders need no scalar code.
 */
#include "../../mte_conv_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

static inline __mmask16 lanes(int64_t a, int64_t b) { /* lanes [a, b) of 16, clamped */
  a = a < 0 ? 0 : a > 16 ? 16 : a;
  b = b < a ? a : b > 16 ? 16 : b;
  return (__mmask16)(((1u << b) - 1u) & ~((1u << a) - 1u));
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
      for (int64_t q = 0; q < len; q += 16) {
        const __mmask16 m = lanes(lo - q, hi - q); /* lanes inside the image */
        const __m512 v = m ? _mm512_maskz_loadu_ps(m, row + (iw + q)) : _mm512_setzero_ps();
        _mm512_mask_storeu_ps(o + q, lanes(0, len - q), v);
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
      for (; q + 16 <= hi; q += 16)
        _mm512_storeu_ps(d + q, _mm512_add_ps(_mm512_loadu_ps(d + q), _mm512_loadu_ps(a + q)));
      if (q < hi) {
        const __mmask16 m = lanes(0, hi - q);
        _mm512_mask_storeu_ps(d + q, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, d + q),
                                                       _mm512_maskz_loadu_ps(m, a + q)));
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
  __mmask16 m[MTE_CONV_MAX_PIECES];
  const int n = pcs->n, nr = pcs->nr;
  for (int k = 0; k < n; ++k) m[k] = lanes(0, pcs->len[k]);
  const int64_t khw = pcs->kh * pcs->kw;
  int64_t c = p0 / khw, i = p0 % khw / pcs->kw, j = p0 % pcs->kw;
  for (int64_t p = 0; p < kc; ++p) {
    const float *base = x + c * pcs->plane + i * pcs->dh * pcs->pitch + j * pcs->dw;
    float *d = dst + p * nr;
    for (int k = 0; k < n; ++k)
      _mm512_mask_storeu_ps(d + pcs->dst[k], m[k],
                            _mm512_maskz_loadu_ps(m[k], base + pcs->src[k]));
    for (int q = pcs->width; q < nr; q += 16)
      _mm512_mask_storeu_ps(d + q, lanes(0, nr - q), _mm512_setzero_ps());
    if (++j == pcs->kw) {
      j = 0;
      if (++i == pcs->kh) i = 0, ++c;
    }
  }
}

static void col2im_pieces(const mte_conv_pieces *pcs, float *gx, const float *cols,
                          int64_t ldc, int64_t rows) {
  __mmask16 m[MTE_CONV_MAX_PIECES];
  const int n = pcs->n;
  for (int k = 0; k < n; ++k) m[k] = lanes(0, pcs->len[k]);
  const int64_t khw = pcs->kh * pcs->kw;
  /* channel innermost: consecutive read-modify-writes go to different planes. (Two pieces
   * in a row of one plane may share a 64-byte vector span through their masked-off lanes;
   * a load right after such a masked store waits for it: store forwarding fails.) */
  for (int64_t i = 0; i < pcs->kh; ++i)
    for (int64_t j = 0; j < pcs->kw; ++j)
      for (int e = 0; e < n; ++e) { /* even pieces, then odd: neighbours apart */
        const int k = e < (n + 1) / 2 ? 2 * e : 2 * (e - (n + 1) / 2) + 1;
        float *d = gx + i * pcs->dh * pcs->pitch + j * pcs->dw + pcs->src[k];
        const float *a = cols + (i * pcs->kw + j) * ldc + pcs->dst[k];
        for (int64_t c = 0; c < rows / khw; ++c, d += pcs->plane, a += khw * ldc)
          _mm512_mask_storeu_ps(d, m[k], _mm512_add_ps(_mm512_maskz_loadu_ps(m[k], d),
                                                       _mm512_maskz_loadu_ps(m[k], a)));
      }
}

const mte_im2col_kernel mte_im2col_kernel_avx512 = {"avx512", im2col_panel, im2col_pieces,
                                                   col2im, col2im_pieces};

#endif
