/*
 * conv.c - 2-D convolution (NCHW, float32) as matrix products, im2col folded into packing.
 *
 * Per image n and group g a convolution is one GEMM (numpy_backend.conv2d does the same):
 *
 *     Y[n,g] (Kg x Ho*Wo)  =  W[g] (Kg x Cg*kh*kw)  @  cols[n,g] (Cg*kh*kw x Ho*Wo)
 *
 * where cols row (c,i,j), column (r,s) holds xpad[c, r*sh + i*dh, s*sw + j*dw]. Rows of the
 * product are output channels and columns are pixels, so it *is* NCHW: no transpose after.
 *
 * gemm.c's blocked GEMM copies each kc x nc block of B into NR-wide panels before its
 * microkernel reads them. Here that packing step reads straight from the image ("implicit
 * im2col"): the cols matrix is never stored, only the block being multiplied, in cache.
 * The microkernel and its block sizes are gemm.c's (mte__isa()->sgemm: the active ISA's).
 * W is packed once per call and shared by every image and thread. A 1x1 stride-1 unpadded
 * convolution packs rows of x directly (B *is* x); where the ISA has a direct tile
 * (mte_direct_tile: AVX-512) and the epilogue fits in registers, it packs nothing and the
 * microkernel reads x in place (conv_gemm.c's mte__conv_direct_block). With stride 1 along rows, x is first
 * copied into zero-padded planes (when it has padding), so each output-row run of a panel
 * is a contiguous run of the plane: copied with masked vector loads/stores and no bounds
 * checks ("pieces"); other strides go through bounds-checked "segments". Bias, the residual
 * (a tensor shaped like y, added before the activation) and the activation are applied to
 * each finished tile while it is still in L1 (fused epilogue, mte_epilogue.h).
 *
 *   backward input:  cols = W[g]^T @ dY[n,g] one block at a time, then col2im adds every
 *                    entry back to the pixel it was read from (channel blocks are disjoint,
 *                    so threads never add into the same pixel)
 *   backward weight: dW[g] = sum_n dY[n,g] @ cols[n,g]^T: one GEMM whose inner dimension
 *                    runs over every pixel of every image; B packed from x (transposed
 *                    im2col); each dW tile belongs to one thread and is written once
 *
 * Depthwise convolutions (one input channel per group, few outputs each) go to direct loops
 * instead: a GEMM with one row per tile would waste most of an MR-tall microkernel.
 * All scratch memory (packed W, B blocks, cols blocks) comes from one arena.
 *
 * This file: validation, threads, the forward pass and the direct depthwise loops;
 * conv_backward.c: the backward passes; conv_gemm.c: packing, macro-kernel, scratch.
 */
#include <string.h>

#include "mte_conv_internal.h"

#define MAX_DIM ((int64_t)1 << 30)           /* bound on every size and parameter */
#define PAR_MIN_WORK (128.0 * 128.0 * 128.0) /* multiply-adds below which 1 thread runs */

/* ---------------------------------------------------------------- geometry, validation */

int64_t mte_conv2d_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad_before,
                               int64_t pad_after, int64_t dilation) {
  if (in < 0 || in > MAX_DIM || kernel < 1 || kernel > MAX_DIM || stride < 1 ||
      stride > MAX_DIM || pad_before < 0 || pad_before > MAX_DIM || pad_after < 0 ||
      pad_after > MAX_DIM || dilation < 1 || dilation > MAX_DIM)
    return INT64_MIN;
  int64_t num = in + pad_before + pad_after - dilation * (kernel - 1) - 1;
  int64_t q = num / stride;
  if (num % stride != 0 && num < 0) --q; /* floor division, as Python's // */
  return q + 1;
}

/* product of n non-negative factors, 0 if it exceeds the addressable float count */
static int64_t count(int n, const int64_t *f) {
  const int64_t lim = (int64_t)(((uint64_t)SIZE_MAX < (uint64_t)INT64_MAX ? (uint64_t)SIZE_MAX
                                                                          : (uint64_t)INT64_MAX) /
                                sizeof(float));
  int64_t p = 1;
  for (int i = 0; i < n; ++i) {
    if (f[i] == 0) return 0;
    if (p > lim / f[i]) return -1;
    p *= f[i];
  }
  return p;
}

int mte__conv_make_geom(const mte_conv2d_desc *d, conv_geom *g) {
  if (!d) return MTE_EINVAL;
  const int64_t nonneg[] = {d->batch, d->in_channels, d->in_h, d->in_w, d->out_channels,
                            d->out_h, d->out_w, d->pad_top, d->pad_bottom, d->pad_left,
                            d->pad_right};
  const int64_t pos[] = {d->kernel_h, d->kernel_w, d->stride_h, d->stride_w, d->dilation_h,
                         d->dilation_w, d->groups};
  for (size_t i = 0; i < sizeof nonneg / sizeof *nonneg; ++i)
    if (nonneg[i] < 0 || nonneg[i] > MAX_DIM) return MTE_EINVAL;
  for (size_t i = 0; i < sizeof pos / sizeof *pos; ++i)
    if (pos[i] < 1 || pos[i] > MAX_DIM) return MTE_EINVAL;
  if (d->in_channels % d->groups || d->out_channels % d->groups) return MTE_EINVAL;
  conv_geom t = {d->batch, d->in_channels, d->in_h, d->in_w, d->out_channels, d->kernel_h,
                 d->kernel_w, d->out_h, d->out_w, d->stride_h, d->stride_w, d->pad_top,
                 d->pad_left, d->dilation_h, d->dilation_w, d->groups, d->pad_bottom,
                 d->pad_right, 0, 0, 0, 0, 0, 0};
  t.Cg = t.C / t.G;
  t.Kg = t.K / t.G;
  const int64_t fx[] = {t.N, t.C, t.H, t.W}, fy[] = {t.N, t.K, t.Ho, t.Wo},
                fw[] = {t.K, t.Cg, t.kh, t.kw}, fk[] = {t.kh, t.kw}, fc[] = {t.Cg, t.kh, t.kw},
                fo[] = {t.Ho, t.Wo}, fi[] = {t.H, t.W}, fb[] = {t.N, t.Ho, t.Wo};
  if (count(4, fx) < 0 || count(4, fy) < 0 || count(4, fw) < 0 || count(3, fb) < 0)
    return MTE_EOVERFLOW;
  t.khw = count(2, fk);
  t.KK = count(3, fc);
  t.HW = count(2, fo);
  t.HWi = count(2, fi);
  if (t.khw < 0 || t.KK < 0 || t.HW < 0 || t.HWi < 0) return MTE_EOVERFLOW;
  *g = t;
  return MTE_OK;
}

/* threads for `work` multiply-adds spread over `items` independent work items */
int mte__conv_threads(double work, int64_t items) {
  int nt = mte__num_threads();
  if (work <= PAR_MIN_WORK) nt = 1;
  if (nt > items) nt = (int)max64(1, items);
  return nt;
}

/* ---------------------------------------------------------------- depthwise: direct loops */

/* Kernel offset (i, j) of one output row r: yr[s] (+)= wv * xpad[r*sh + i*dh][s*sw + j*dw]
 * (fwd), or the adjoint gxrow[..] += wv * gyr[s] (bwd). Only in-bounds columns are touched. */
static void dw_row(const conv_geom *g, int adjoint, float wv, float *yr, float *xr, int64_t j) {
  int64_t lo, hi;
  const int64_t iw0 = -g->pl + j * g->dw, sw = g->sw;
  conv_clip(iw0, sw, g->W, g->Wo, &lo, &hi);
  if (!adjoint) {
    if (sw == 1)
      for (int64_t s = lo; s < hi; ++s) yr[s] += wv * xr[iw0 + s];
    else
      for (int64_t s = lo; s < hi; ++s) yr[s] += wv * xr[iw0 + s * sw];
  } else {
    for (int64_t s = lo; s < hi; ++s) xr[iw0 + s * sw] += wv * yr[s];
  }
}

static int dw_forward(const conv_geom *g, const float *x, const float *w, const float *bias,
                      const conv_ep *ep, float *y) {
  const int64_t planes = g->N * g->K;
  const int nt = mte__conv_threads((double)planes * g->HW * g->khw, planes);
  PARALLEL
  FOR_STATIC
  for (int64_t t = 0; t < planes; ++t) {
    const int64_t o = t % g->K;
    const float *xc = x + (t / g->K * g->C + o / g->Kg) * g->HWi, *wc = w + o * g->khw;
    float *yc = y + t * g->HW;
    for (int64_t r = 0; r < g->Ho; ++r) {
      float *yr = yc + r * g->Wo;
      for (int64_t s = 0; s < g->Wo; ++s) yr[s] = bias ? bias[o] : 0.0f;
      for (int64_t i = 0; i < g->kh; ++i) {
        const int64_t ih = r * g->sh - g->pt + i * g->dh;
        if (ih < 0 || ih >= g->H) continue;
        for (int64_t j = 0; j < g->kw; ++j)
          dw_row(g, 0, wc[i * g->kw + j], yr, (float *)(xc + ih * g->W), j);
      }
      const mte_ep_tile et = {NULL, NULL, ep->t.res ? ep->t.res + t * g->HW + r * g->Wo : NULL,
                              0, ep->t.act};
      ep->fn(yr, 0, 1, g->Wo, &et);
    }
  }
  return MTE_OK;
}

int mte__conv_dw_backward_input(const conv_geom *g, const float *gy, const float *w,
                                float *gx) {
  const int64_t planes = g->N * g->C;
  const int nt = mte__conv_threads((double)g->N * g->K * g->HW * g->khw, planes);
  PARALLEL
  FOR_STATIC
  for (int64_t t = 0; t < planes; ++t) { /* input plane t = (n, group) */
    float *xc = gx + t * g->HWi;
    memset(xc, 0, (size_t)g->HWi * sizeof(float));
    for (int64_t m = 0; m < g->Kg; ++m) {
      const int64_t o = t % g->C * g->Kg + m;
      const float *yc = gy + (t / g->C * g->K + o) * g->HW, *wc = w + o * g->khw;
      for (int64_t r = 0; r < g->Ho; ++r)
        for (int64_t i = 0; i < g->kh; ++i) {
          const int64_t ih = r * g->sh - g->pt + i * g->dh;
          if (ih < 0 || ih >= g->H) continue;
          for (int64_t j = 0; j < g->kw; ++j)
            dw_row(g, 1, wc[i * g->kw + j], (float *)(yc + r * g->Wo), xc + ih * g->W, j);
        }
    }
  }
  return MTE_OK;
}

int mte__conv_dw_backward_weight(const conv_geom *g, const float *gy, const float *x,
                                 float *gw) {
  const int64_t taps = g->K * g->khw;
  const int nt = mte__conv_threads((double)g->N * g->K * g->HW * g->khw, taps);
  PARALLEL
  FOR_STATIC
  for (int64_t t = 0; t < taps; ++t) { /* one weight (o, i, j): a dot product */
    const int64_t o = t / g->khw, i = t % g->khw / g->kw, j = t % g->kw;
    int64_t lo, hi;
    const int64_t iw0 = -g->pl + j * g->dw, sw = g->sw;
    conv_clip(iw0, sw, g->W, g->Wo, &lo, &hi);
    float acc = 0.0f;
    for (int64_t n = 0; n < g->N; ++n) {
      const float *xc = x + (n * g->C + o / g->Kg) * g->HWi;
      const float *yc = gy + (n * g->K + o) * g->HW;
      for (int64_t r = 0; r < g->Ho; ++r) {
        const int64_t ih = r * g->sh - g->pt + i * g->dh;
        if (ih < 0 || ih >= g->H) continue;
        const float *xr = xc + ih * g->W, *yr = yc + r * g->Wo;
        float part = 0.0f;
        for (int64_t s = lo; s < hi; ++s) part += yr[s] * xr[iw0 + s * sw];
        acc += part;
      }
    }
    gw[t] = acc;
  }
  return MTE_OK;
}

/* ---------------------------------------------------------------- forward */

/* B block of cols (forward, any stride): rows [p0, p0+kc) = (c, i, j), columns = pixels
 * [j0, j0+ncols), read from the image planes xg (Cg planes of H*W) with bounds checks, one
 * NR-wide panel at a time. Same panel layout as mte__conv_pack_b_plain. */
static void pack_b_im2col(const conv_geom *g, const float *xg, mte_im2col_panel_fn packer,
                          int nr, int64_t p0, int64_t kc, int64_t j0, int64_t ncols,
                          mte_conv_segs *sg, float *MTE_RESTRICT dst) {
  for (int64_t q = 0; q < ncols; q += nr) {
    mte__conv_make_segs(g, j0 + q, min64(nr, ncols - q), nr, sg);
    packer(sg, xg, p0, kc, nr, dst + q * kc);
  }
}

/* Stride-1 B block from planes x (pitch floats per row, plane floats per channel) in which
 * every window is inside: each panel's output-row runs become pieces (see the header). */
static void pack_b_pieces(const conv_geom *g, const float *x, int64_t pitch, int64_t plane,
                          mte_im2col_pieces_fn packer, int nr, int64_t p0, int64_t kc,
                          int64_t j0, int64_t ncols, mte_conv_pieces *pcs,
                          float *MTE_RESTRICT dst) {
  pcs->plane = plane, pcs->pitch = pitch, pcs->kh = g->kh, pcs->kw = g->kw;
  pcs->dh = g->dh, pcs->dw = g->dw, pcs->nr = nr;
  for (int64_t q = 0; q < ncols; q += nr) {
    const int64_t w = min64(nr, ncols - q);
    mte__conv_make_pieces(g, j0 + q, w, pitch, 0, pcs);
    pcs->width = (int)w;
    packer(pcs, x, p0, kc, dst + q * kc);
  }
}

int mte_conv2d_forward(const mte_conv2d_desc *d, const float *x, const float *w,
                       const float *bias, int act, float *y, mte_arena *arena) {
  return mte_conv2d_forward_ex(d, x, w, bias, act, NULL, y, arena);
}

/* ---------------------------------------------------------------- prepacked weights */

/* A packed weight buffer starts with this header (MTE_PACKED_HEADER floats, so the panels
 * stay 64-byte aligned): the layout it was packed in must be the one forward would use. */
typedef struct packed_header {
  int32_t magic, mr, nr, kc, groups, kg, kk, kcb;
  char isa[16];
} packed_header;
_Static_assert(sizeof(packed_header) <= MTE_CONV_PACKED_HEADER * sizeof(float), "header");
#define PACKED_MAGIC 0x5745544D /* "MTEW" */

/* 1 and the panel geometry if this conv packs its weights (not the direct depthwise loops) */
static int packed_layout(const conv_geom *g, const mte_sgemm_kernel *k, int64_t *kcb,
                         int64_t *floats) {
  if (g->KK == 0 || g->K == 0 || (g->Cg == 1 && g->Kg <= MTE_CONV_DIRECT_MAX_KG)) return 0;
  const int64_t nk = cdiv(g->KK, k->kc);
  *kcb = cdiv(g->KK, nk);
  *floats = MTE_CONV_PACKED_HEADER + g->G * rup(g->Kg, k->mr) * g->KK;
  return 1;
}

static packed_header make_header(const conv_geom *g, const mte_sgemm_kernel *k, int64_t kcb) {
  packed_header h;
  memset(&h, 0, sizeof h);
  h.magic = PACKED_MAGIC, h.mr = k->mr, h.nr = k->nr, h.kc = k->kc;
  h.groups = (int32_t)g->G, h.kg = (int32_t)g->Kg, h.kk = (int32_t)g->KK, h.kcb = (int32_t)kcb;
  strncpy(h.isa, k->isa, sizeof h.isa - 1);
  return h;
}

/* every (group, k slice) block of W as MR-tall panels, the layout forward reads */
static void pack_weight_panels(const conv_geom *g, int mr, int64_t kcb, const float *w,
                               float *apack) {
  const int64_t nk = cdiv(g->KK, kcb), Mr = rup(g->Kg, mr);
  for (int64_t t = 0; t < g->G * nk; ++t) {
    const int64_t gi = t / nk, pc = t % nk * kcb;
    mte__conv_pack_a(mr, g->Kg, min64(kcb, g->KK - pc), w + gi * g->Kg * g->KK, g->KK, 0, 0,
                     pc, apack + gi * Mr * g->KK + pc * Mr);
  }
}

int64_t mte_conv2d_packed_weight_floats(const mte_conv2d_desc *d) {
  conv_geom g;
  int64_t kcb, floats;
  if (mte__conv_make_geom(d, &g) != MTE_OK) return -1;
  return packed_layout(&g, mte__isa()->sgemm, &kcb, &floats) ? floats : 0;
}

int mte_conv2d_pack_weight(const mte_conv2d_desc *d, const float *w, float *packed,
                           int64_t floats) {
  conv_geom g;
  int64_t kcb, need;
  int st = mte__conv_make_geom(d, &g);
  if (st != MTE_OK) return st;
  const mte_sgemm_kernel *k = mte__isa()->sgemm;
  if (!packed_layout(&g, k, &kcb, &need)) return MTE_EUNSUPPORTED;
  if (!w || !packed || floats < need) return MTE_EINVAL;
  const packed_header h = make_header(&g, k, kcb);
  memset(packed, 0, MTE_CONV_PACKED_HEADER * sizeof(float));
  memcpy(packed, &h, sizeof h);
  pack_weight_panels(&g, k->mr, kcb, w, packed + MTE_CONV_PACKED_HEADER);
  return MTE_OK;
}

/* ---------------------------------------------------------------- forward */

int mte_conv2d_forward_ex(const mte_conv2d_desc *d, const float *x, const float *w,
                          const float *bias, int act, const float *residual, float *y,
                          mte_arena *arena) {
  return mte_conv2d_forward_packed(d, x, w, NULL, 0, bias, act, residual, y, arena);
}

int mte_conv2d_forward_packed(const mte_conv2d_desc *d, const float *x, const float *w,
                              const float *packed, int64_t packed_floats, const float *bias,
                              int act, const float *residual, float *y, mte_arena *arena) {
  conv_geom g;
  int st = mte__conv_make_geom(d, &g);
  if (st != MTE_OK) return st;
  if (!mte__valid_activation(act)) return MTE_EINVAL;
  if (g.Ho != mte_conv2d_output_size(g.H, g.kh, g.sh, g.pt, d->pad_bottom, g.dh) ||
      g.Wo != mte_conv2d_output_size(g.W, g.kw, g.sw, g.pl, d->pad_right, g.dw))
    return MTE_EINVAL;
  const int64_t ny = conv_numel(g.N, g.K, g.Ho, g.Wo);
  if (ny == 0) return MTE_OK;
  if (!y || (g.KK > 0 && ((!w && !packed) || (g.HWi > 0 && !x)))) return MTE_EINVAL;
  /* y is written block by block: a residual inside it would be read half-overwritten */
  if (mte__overlap(y, (size_t)ny, residual, (size_t)ny)) return MTE_EINVAL;
  const mte_isa *isa = mte__isa();
  const mte_sgemm_kernel *k = isa->sgemm;
  const conv_ep ep = {{NULL, NULL, residual, g.HW, act}, isa->epilogue->tile};
  if (g.KK == 0 || g.HWi == 0) { /* no input values: y = act(bias + residual) */
    for (int64_t t = 0; t < g.N * g.K; ++t) {
      float *yc = y + t * g.HW;
      for (int64_t s = 0; s < g.HW; ++s) yc[s] = bias ? bias[t % g.K] : 0.0f;
      const mte_ep_tile et = {NULL, NULL, residual ? residual + t * g.HW : NULL, 0, act};
      ep.fn(yc, 0, 1, g.HW, &et);
    }
    return MTE_OK;
  }
  if (g.Cg == 1 && g.Kg <= MTE_CONV_DIRECT_MAX_KG) return dw_forward(&g, x, w, bias, &ep, y);

  const int mr = k->mr, nr = k->nr;
  const int64_t nk = cdiv(g.KK, k->kc), kcb = cdiv(g.KK, nk), Mr = rup(g.Kg, mr);
  if (packed) { /* the panels must be the ones this call would pack */
    int64_t pkcb, need;
    packed_header h;
    if (!packed_layout(&g, k, &pkcb, &need) || packed_floats < need) return MTE_EINVAL;
    const packed_header want = make_header(&g, k, kcb);
    memcpy(&h, packed, sizeof h);
    if (memcmp(&h, &want, sizeof h) != 0) return MTE_EINVAL;
  }
  const int64_t jobs = g.N * g.G;
  const mte_im2col_kernel *lp = isa->im2col;
  if (nr + 1 > MTE_CONV_MAX_SEG || nr + 1 + nr / MTE_CONV_PIECE > MTE_CONV_MAX_PIECES)
    return MTE_EUNSUPPORTED;
  const int direct = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.pt == 0 &&
                     g.pl == 0 && g.Ho == g.H && g.Wo == g.W; /* B is x itself */
  /* stride 1 along rows: piecewise packing, from a zero-padded copy when there is padding */
  const int64_t Wp = g.W + g.pl + g.pr, Hp = g.H + g.pt + g.pb;
  int64_t plane = g.HWi;
  int pieces = !direct && g.sw == 1, padded = pieces && (g.pt || g.pb || g.pl || g.pr);
  if (padded && !conv_pad_ok(&g, Hp, Wp, &plane)) pieces = padded = 0;
  int nt = mte__conv_threads((double)ny * g.KK, INT64_MAX);
  /* a 1x1 conv whose epilogue fits in registers reads x in place (mte_direct_tile): no B
   * panels; a block of pixels then spans all of K, so its width keeps K x nb within L2 */
  const int in_place = direct && k->direct &&
                       (act == MTE_ACT_NONE || act == MTE_ACT_RELU || act == MTE_ACT_RELU6);
  /* threads share the output channels instead of the pixels when there are fewer images
   * than threads, B is cheap to pack twice (1x1), and the channels split more evenly:
   * 196 pixels are 7 panels, which two threads can only split 4:3 (in place, 48-pixel
   * blocks: 96 + 96 + 4, i.e. 192:4), and 49 pixels 48:1, while 96 or 160 channels split
   * evenly. Under 4 row tiles a thread (32 channels on 2 threads) each thread would stream
   * all of x for too few rows (measured slower); >= 16 row tiles a thread always split */
  int64_t msplit = 1;
  if (direct && jobs < nt) {
    const int64_t share = cdiv(nt, jobs);
    const int64_t nb_pix = in_place ? conv_split_even(g.HW, 48, mte__conv_direct_nb(g.KK), share)
                                    : conv_split_even(g.HW, nr, MTE_CONV_NB_MAX, share);
    const int64_t mlen_ch = rup(cdiv(g.Kg, share), mr);
    if (g.Kg >= 16 * (int64_t)mr * nt ||
        (g.Kg >= 4 * (int64_t)mr * share &&
         conv_balance(g.Kg, mlen_ch, share) > conv_balance(g.HW, nb_pix, share)))
      msplit = share;
  }
  const int64_t mlen = rup(cdiv(g.Kg, msplit), mr); /* output channels per item */
  const int64_t nb = in_place ? conv_split_even(g.HW, 48, mte__conv_direct_nb(g.KK),
                                                cdiv(nt, jobs * msplit))
                              : conv_split_even(g.HW, nr, MTE_CONV_NB_MAX, cdiv(nt, jobs * msplit));
  const int64_t nblk = cdiv(g.HW, nb), items = jobs * nblk * msplit; /* pixels/item: nb */
  if (nt > items) nt = (int)items;
  const size_t per_b = in_place ? 0 : (size_t)(kcb * rup(nb, nr));
  const size_t per_p = padded ? (size_t)(g.Cg * plane) : 0;

  int ok = 1;
  size_t bytes[3] = {conv_bytes(&ok, packed ? 0 : g.G, Mr, g.KK),
                     conv_bytes(&ok, nt, in_place ? 0 : kcb, rup(nb, nr)),
                     conv_bytes(&ok, nt, g.Cg, padded ? plane : 0)};
  if (!ok) return MTE_EOVERFLOW;
  float *buf[3];
  conv_scratch s;
  if ((st = mte__conv_scratch_open(&s, arena, 3, bytes, buf)) != MTE_OK) return st;
  const float *apack = packed ? packed + MTE_CONV_PACKED_HEADER : buf[0];

  PARALLEL {
    float *bb = buf[1] + (size_t)conv_tid() * per_b, *xp = buf[2] + (size_t)conv_tid() * per_p;
    int64_t padded_job = -1; /* the (image, group) this thread's xp holds */
    mte_conv_segs sg;
    mte_conv_pieces pcs;
    if (!packed) {
      FOR_STATIC /* pack W once: per group, per k slice, MR-tall panels */
      for (int64_t t = 0; t < g.G * nk; ++t) {
        const int64_t gi = t / nk, pc = t % nk * kcb;
        mte__conv_pack_a(mr, g.Kg, min64(kcb, g.KK - pc), w + gi * g.Kg * g.KK, g.KK, 0, 0,
                         pc, buf[0] + gi * Mr * g.KK + pc * Mr);
      }
    }
    FOR_STATIC /* work item: (image, group, block of nb pixels, share of the channels) */
    for (int64_t item = 0; item < items; ++item) {
      const int64_t it = item / msplit, m0 = item % msplit * mlen;
      const int64_t m1 = min64(g.Kg, m0 + mlen);
      const int64_t job = it / nblk, n = job / g.G, gi = job % g.G;
      const int64_t j0 = it % nblk * nb, ncols = min64(nb, g.HW - j0);
      const float *xg = x + (n * g.C + gi * g.Cg) * g.HWi;
      if (padded && job != padded_job)
        mte__conv_pad_planes(&g, xg, Hp, Wp, xp), padded_job = job;
      const int64_t y0 = (n * g.K + gi * g.Kg) * g.HW + j0; /* block's first output */
      float *yg = y + y0;
      const float *ag = apack + gi * Mr * g.KK;
      if (in_place) {
        mte__conv_direct_block(k, m0, m1, ncols, g.KK, kcb, Mr, ag, xg + j0, g.HWi,
                               y + (n * g.K + gi * g.Kg) * g.HW + j0, g.HW,
                               bias ? bias + gi * g.Kg : NULL,
                               residual ? residual + (n * g.K + gi * g.Kg) * g.HW + j0 : NULL,
                               act);
        continue;
      }
      for (int64_t pc = 0; pc < g.KK; pc += kcb) {
        const int64_t kc = min64(kcb, g.KK - pc);
        if (direct)
          mte__conv_pack_b_plain(nr, ncols, kc, xg, g.HWi, j0, pc, bb);
        else if (padded)
          pack_b_pieces(&g, xp, Wp, plane, lp->pieces, nr, pc, kc, j0, ncols, &pcs, bb);
        else if (pieces)
          pack_b_pieces(&g, xg, g.W, g.HWi, lp->pieces, nr, pc, kc, j0, ncols, &pcs, bb);
        else
          pack_b_im2col(&g, xg, lp->panel, nr, pc, kc, j0, ncols, &sg, bb);
        for (int64_t ic = m0; ic < m1; ic += k->mc) {
          conv_ep e = ep;
          e.t.row_bias = bias ? bias + gi * g.Kg + ic : NULL;
          e.t.res = residual ? residual + y0 + ic * g.HW : NULL;
          mte__conv_macro_kernel(k, min64(k->mc, m1 - ic), ncols, kc,
                                 ag + pc * Mr + ic * kc, bb, yg + ic * g.HW, g.HW,
                                 pc == 0 ? 0.0f : 1.0f, pc + kc >= g.KK, &e);
        }
      }
    }
  }
  return mte__conv_scratch_close(&s);
}
