/*
 * generic/im2col_panel.c - the im2col family in plain C, for any stride: the reference, the
 * fallback of ISAs without their own (neon), and what the SIMD versions call at stride > 1.
 * The four loops' contracts are in mte_conv_internal.h ("inner loops, per ISA").
 */
#include "../../mte_conv_internal.h"

void mte__im2col_panel_generic(const mte_conv_segs *sg, const float *x, int64_t p0, int64_t kc,
                               int nr, float *MTE_RESTRICT dst) {
  const int64_t khw = sg->kh * sg->kw, sw = sg->sw;
  int64_t c = p0 / khw, i = p0 % khw / sg->kw, j = p0 % sg->kw;
  for (int64_t p = 0; p < kc; ++p) {
    const float *plane = x + c * sg->HWi;
    float *d = dst + p * nr;
    for (int s = 0; s < sg->nseg; ++s) {
      const int64_t ih = sg->ih0[s] + i * sg->dh, n = sg->len[s];
      float *o = d + sg->off[s];
      int64_t lo = 0, hi = 0, iw0 = 0;
      const float *row = plane;
      if (ih >= 0 && ih < sg->H) {
        iw0 = sg->iw0[s] + j * sg->dw;
        conv_clip(iw0, sw, sg->W, n, &lo, &hi);
        row = plane + ih * sg->W;
      }
      for (int64_t q = 0; q < lo; ++q) o[q] = 0.0f;
      for (int64_t q = lo; q < hi; ++q) o[q] = row[iw0 + q * sw];
      for (int64_t q = hi; q < n; ++q) o[q] = 0.0f;
    }
    if (++j == sg->kw) {
      j = 0;
      if (++i == sg->kh) i = 0, ++c;
    }
  }
}

void mte__col2im_generic(const mte_conv_segs *sg, float *gx, const float *cols, int64_t ldc,
                         int64_t rows) {
  const int64_t sw = sg->sw;
  int64_t c = 0, i = 0, j = 0;
  for (int64_t r = 0; r < rows; ++r) {
    float *plane = gx + c * sg->HWi;
    const float *src = cols + r * ldc;
    for (int s = 0; s < sg->nseg; ++s) {
      const int64_t ih = sg->ih0[s] + i * sg->dh;
      if (ih < 0 || ih >= sg->H) continue;
      const int64_t iw0 = sg->iw0[s] + j * sg->dw;
      int64_t lo, hi;
      conv_clip(iw0, sw, sg->W, sg->len[s], &lo, &hi);
      float *MTE_RESTRICT row = plane + ih * sg->W;
      const float *MTE_RESTRICT a = src + sg->off[s];
      for (int64_t q = lo; q < hi; ++q) row[iw0 + q * sw] += a[q];
    }
    if (++j == sg->kw) {
      j = 0;
      if (++i == sg->kh) i = 0, ++c;
    }
  }
}

static void im2col_pieces(const mte_conv_pieces *pcs, const float *x, int64_t p0,
                          int64_t kc, float *MTE_RESTRICT dst) {
  const int64_t khw = pcs->kh * pcs->kw;
  int64_t c = p0 / khw, i = p0 % khw / pcs->kw, j = p0 % pcs->kw;
  for (int64_t p = 0; p < kc; ++p) {
    const float *base = x + c * pcs->plane + i * pcs->dh * pcs->pitch + j * pcs->dw;
    float *d = dst + p * pcs->nr;
    for (int k = 0; k < pcs->n; ++k) {
      const float *a = base + pcs->src[k];
      float *o = d + pcs->dst[k];
      for (int q = 0; q < pcs->len[k]; ++q) o[q] = a[q];
    }
    for (int q = pcs->width; q < pcs->nr; ++q) d[q] = 0.0f;
    if (++j == pcs->kw) {
      j = 0;
      if (++i == pcs->kh) i = 0, ++c;
    }
  }
}

static void col2im_pieces(const mte_conv_pieces *pcs, float *gx, const float *cols,
                          int64_t ldc, int64_t rows) {
  const int64_t khw = pcs->kh * pcs->kw;
  /* channel innermost: consecutive read-modify-writes go to different planes (the rows of
   * neighbouring j overlap shifted by one float: store-forwarding stalls otherwise) */
  for (int64_t i = 0; i < pcs->kh; ++i)
    for (int64_t j = 0; j < pcs->kw; ++j)
      for (int k = 0; k < pcs->n; ++k)
        for (int64_t c = 0; c < rows / khw; ++c) {
          float *MTE_RESTRICT d =
              gx + c * pcs->plane + i * pcs->dh * pcs->pitch + j * pcs->dw + pcs->src[k];
          const float *MTE_RESTRICT b =
              cols + (c * khw + i * pcs->kw + j) * ldc + pcs->dst[k];
          for (int q = 0; q < pcs->len[k]; ++q) d[q] += b[q];
        }
}

const mte_im2col_kernel mte_im2col_kernel_generic = {"generic", mte__im2col_panel_generic,
                                                     im2col_pieces, mte__col2im_generic,
                                                     col2im_pieces};
