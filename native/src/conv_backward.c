/*
 * conv_backward.c - the two backward passes of conv.c's convolution (NCHW, float32).
 *
 * For y = conv(x, w) (per image n and group g: Y = W @ cols(x)) and dL/dy = dY:
 *
 *   dL/dx = col2im(W^T @ dY)       cols = W[g]^T @ dY[n,g] one block at a time (W^T packed
 *                                  once per call), then every entry is added back to the
 *                                  pixel it was read from. Work items own disjoint channel
 *                                  blocks of one image, so no two threads add to one pixel.
 *   dL/dw = sum_n dY @ cols(x)^T   one GEMM per group whose inner dimension runs over every
 *                                  pixel of every image; each tile of dW is one work item,
 *                                  written once. B = cols^T is gathered from x row by row
 *                                  (contiguous, by pieces for stride 1) and transposed.
 *
 * Stride-1 convolutions with padding work on zero-padded copies (a padded accumulator for
 * dL/dx, cropped at the end; a padded copy of each image for dL/dw), so the inner loops
 * have no bounds checks. Depthwise layers go to conv.c's direct loops.
 */
#include <string.h>

#include "mte_conv_internal.h"

#define BWD_COLS_BYTES (256 * 1024) /* one backward-input cols block (L2) */

/* ---------------------------------------------------------------- backward input */

int mte_conv2d_backward_input(const mte_conv2d_desc *d, const float *gy, const float *w,
                              float *gx, mte_arena *arena) {
  conv_geom g;
  int st = mte__conv_make_geom(d, &g);
  if (st != MTE_OK) return st;
  const int64_t nx = conv_numel(g.N, g.C, g.H, g.W);
  if (nx == 0) return MTE_OK;
  if (!gx) return MTE_EINVAL;
  if (g.Kg == 0 || g.HW == 0) { /* nothing flows back */
    memset(gx, 0, (size_t)nx * sizeof(float));
    return MTE_OK;
  }
  if (!gy || !w) return MTE_EINVAL;
  if (g.Cg == 1 && g.Kg <= MTE_CONV_DIRECT_MAX_KG)
    return mte__conv_dw_backward_input(&g, gy, w, gx);

  const mte_isa *isa = mte__isa();
  const mte_sgemm_kernel *k = isa->sgemm;
  const int mr = k->mr, nr = k->nr;
  const int64_t nk = cdiv(g.Kg, k->kc), kcb = cdiv(g.Kg, nk), Mr = rup(g.KK, mr);
  const int64_t jobs = g.N * g.G;
  int nt = mte__conv_threads((double)g.N * g.K * g.HW * g.KK, INT64_MAX);
  const int64_t nb = conv_split(g.HW, nr, MTE_CONV_NB_MAX / 2, 1); /* pixels per block */
  const mte_im2col_kernel *lp = isa->im2col;
  if (nb + 1 > MTE_CONV_MAX_SEG || nr + 1 + nr / MTE_CONV_PIECE > MTE_CONV_MAX_PIECES)
    return MTE_EUNSUPPORTED;
  /* channel chunks: a multiple of mr channels (so their rows start on a packed panel),
   * small enough for the cols block to stay in L2, enough of them for the threads */
  const int64_t cap = BWD_COLS_BYTES / (int64_t)sizeof(float) / (g.khw * nb);
  const int64_t cch = min64(g.Cg, conv_split(g.Cg, mr, cap, cdiv(nt, jobs)));
  const int64_t nch = cdiv(g.Cg, cch), items = jobs * nch;
  if (nt > items) nt = (int)items;

  /* stride 1 along rows: col2im by pieces, into a zero-padded plane (then cropped) unless
   * every window lies inside x */
  const int64_t Hp = conv_reach(g.H, g.pt, g.pb, g.Ho, g.sh, g.kh, g.dh);
  const int64_t Wp = conv_reach(g.W, g.pl, g.pr, g.Wo, g.sw, g.kw, g.dw);
  int64_t plane = g.HWi;
  int pieces = g.sw == 1, padded = pieces && !(g.pt == 0 && g.pl == 0 && Hp == g.H && Wp == g.W);
  if (padded && !conv_pad_ok(&g, Hp, Wp, &plane)) pieces = padded = 0;
  int ok = 1;
  size_t bytes[4] = {conv_bytes(&ok, g.G, Mr, g.Kg), conv_bytes(&ok, nt, kcb, rup(nb, nr)),
                     conv_bytes(&ok, nt, cch * g.khw, nb),
                     conv_bytes(&ok, nt, cch, padded ? plane : 0)};
  if (!ok) return MTE_EOVERFLOW;
  const size_t per_b = bytes[1] / sizeof(float) / (size_t)nt,
               per_c = bytes[2] / sizeof(float) / (size_t)nt,
               per_p = bytes[3] / sizeof(float) / (size_t)nt;
  float *buf[4];
  conv_scratch s;
  if ((st = mte__conv_scratch_open(&s, arena, 4, bytes, buf)) != MTE_OK) return st;
  float *apack = buf[0];

  PARALLEL {
    float *bb = buf[1] + (size_t)conv_tid() * per_b;
    float *cols = buf[2] + (size_t)conv_tid() * per_c;
    float *xp = buf[3] + (size_t)conv_tid() * per_p;
    mte_conv_segs sg;
    mte_conv_pieces pcs;
    pcs.plane = plane, pcs.pitch = padded ? Wp : g.W;
    pcs.kh = g.kh, pcs.kw = g.kw, pcs.dh = g.dh, pcs.dw = g.dw;
    FOR_STATIC /* pack W^T once: A[(c,i,j)][o] = W[o][(c,i,j)], k slices over o */
    for (int64_t t = 0; t < g.G * nk; ++t) {
      const int64_t gi = t / nk, pc = t % nk * kcb;
      mte__conv_pack_a(mr, g.KK, min64(kcb, g.Kg - pc), w + gi * g.Kg * g.KK, g.KK, 1, 0,
                       pc, apack + gi * Mr * g.Kg + pc * Mr);
    }
    FOR_DYNAMIC /* work item: (image, group, chunk of input channels) */
    for (int64_t it = 0; it < items; ++it) {
      const int64_t job = it / nch, n = job / g.G, gi = job % g.G;
      const int64_t c0 = it % nch * cch, c1 = min64(g.Cg, c0 + cch);
      const int64_t row0 = c0 * g.khw, rows = (c1 - c0) * g.khw;
      const float *gyg = gy + (n * g.K + gi * g.Kg) * g.HW;
      float *gxc = gx + (n * g.C + gi * g.Cg + c0) * g.HWi;
      float *acc = padded ? xp : gxc; /* where col2im adds */
      memset(acc, 0, (size_t)((c1 - c0) * pcs.plane) * sizeof(float));
      for (int64_t j0 = 0; j0 < g.HW; j0 += nb) {
        const int64_t ncols = min64(nb, g.HW - j0);
        for (int64_t pc = 0; pc < g.Kg; pc += kcb) { /* cols block = W^T rows @ dY */
          const int64_t kc = min64(kcb, g.Kg - pc);
          mte__conv_pack_b_plain(nr, ncols, kc, gyg, g.HW, j0, pc, bb);
          for (int64_t ic = 0; ic < rows; ic += k->mc)
            mte__conv_macro_kernel(k, min64(k->mc, rows - ic), ncols, kc,
                                   apack + gi * Mr * g.Kg + pc * Mr + (row0 + ic) * kc, bb,
                                   cols + ic * nb, nb, pc == 0 ? 0.0f : 1.0f, 0, NULL);
        }
        if (pieces) { /* col2im: add the block back, 64 columns at a time */
          for (int64_t u = 0; u < ncols; u += 64) {
            mte__conv_make_pieces(&g, j0 + u, min64(64, ncols - u), pcs.pitch, u, &pcs);
            lp->col2im_pieces(&pcs, acc, cols, nb, rows);
          }
        } else {
          mte__conv_make_segs(&g, j0, ncols, ncols, &sg);
          lp->col2im(&sg, gxc, cols, nb, rows);
        }
      }
      if (padded) /* crop the padding away */
        for (int64_t c = 0; c < c1 - c0; ++c)
          for (int64_t h = 0; h < g.H; ++h)
            memcpy(gxc + c * g.HWi + h * g.W, xp + c * plane + (g.pt + h) * Wp + g.pl,
                   (size_t)g.W * sizeof(float));
    }
  }
  return mte__conv_scratch_close(&s);
}

/* ---------------------------------------------------------------- backward weight */

/* dst (kc x nr) = src (w x kc, rows of kc)^T, columns w .. nr-1 zero; 4x4 blocks. */
static void transpose_panel(const float *MTE_RESTRICT src, int64_t kc, int64_t w, int nr,
                            float *MTE_RESTRICT dst) {
  const int64_t w4 = w / 4 * 4;
  int64_t p = 0;
  for (; p + 4 <= kc; p += 4)
    for (int64_t t = 0; t < w4; t += 4)
      for (int a = 0; a < 4; ++a)
        for (int b = 0; b < 4; ++b) dst[(p + a) * nr + t + b] = src[(t + b) * kc + p + a];
  for (; p < kc; ++p)
    for (int64_t t = 0; t < w4; ++t) dst[p * nr + t] = src[t * kc + p];
  for (p = 0; p < kc; ++p) {
    for (int64_t t = w4; t < w; ++t) dst[p * nr + t] = src[t * kc + p];
    for (int64_t t = w; t < nr; ++t) dst[p * nr + t] = 0.0f;
  }
}

/* Where backward_weight reads x: the planes of image n, group gi, as seen by the packers. */
typedef struct xsrc {
  const float *x; /* x itself, or the zero-padded copy of one image's group (xp) */
  int64_t pitch, plane;
  int padded, pieces;
} xsrc;

/* B block of cols^T: rows = pixels [P0, P0+kc) counted over all images (P = n*HW + pixel;
 * with a padded copy the block stays in its one image), columns = cols rows (c,i,j)
 * [j0, j0+ncols); NR-wide panels. Each panel's cols rows are first gathered contiguously
 * into tmp (w x kc), by pieces (stride 1) or runs, then transposed into place. */
static void pack_b_cols_t(const conv_geom *g, const xsrc *xs, int64_t gi, int nr, int64_t P0,
                          int64_t kc, int64_t j0, int64_t ncols, mte_im2col_pieces_fn packer,
                          mte_conv_pieces *pcs, float *MTE_RESTRICT tmp,
                          float *MTE_RESTRICT dst) {
  for (int64_t q = 0; q < ncols; q += nr) {
    const int64_t w = min64(nr, ncols - q);
    for (int64_t p = 0; p < kc;) { /* parts of at most 64 pixels inside one image */
      const int64_t n = (P0 + p) / g->HW, pix = (P0 + p) % g->HW;
      const int64_t len = min64(min64(kc - p, g->HW - pix), xs->pieces ? 64 : kc);
      const float *xg = xs->padded ? xs->x : xs->x + (n * g->C + gi * g->Cg) * g->HWi;
      if (xs->pieces) { /* rows j0+q .. +w of tmp (row length kc), columns p .. p+len */
        mte__conv_make_pieces(g, pix, len, xs->pitch, p, pcs);
        pcs->nr = (int)kc, pcs->width = (int)kc;
        packer(pcs, xg, j0 + q, w, tmp);
      } else {
        for (int64_t t = 0; t < w; ++t) {
          const int64_t row = j0 + q + t, c = row / g->khw;
          mte__conv_im2col_run(g, xg + c * g->HWi, row % g->khw / g->kw, row % g->kw,
                               pix / g->Wo, pix % g->Wo, len, tmp + t * kc + p);
        }
      }
      p += len;
    }
    transpose_panel(tmp, kc, w, nr, dst + q * kc);
  }
}

/* A block of dY: rows (output channels) [m0, m0+rows), k = pixels [P0, P0+kc) over images */
static void pack_a_gy(const conv_geom *g, const float *gy, int64_t gi, int mr, int64_t m0,
                      int64_t rows, int64_t P0, int64_t kc, float *MTE_RESTRICT dst) {
  for (int64_t p = 0; p < kc;) {
    const int64_t n = (P0 + p) / g->HW, pix = (P0 + p) % g->HW;
    const int64_t len = min64(kc - p, g->HW - pix);
    const float *A = gy + (n * g->K + gi * g->Kg + m0) * g->HW + pix;
    for (int64_t ir = 0; ir < rows; ir += mr) { /* panel ir, k steps p .. p+len */
      const int64_t m = min64(mr, rows - ir);
      float *d = dst + ir * kc + p * mr;
      if (m == 8) { /* the common full panel: 8 row streams in, one stream out */
        for (int64_t q = 0; q < len; ++q)
          for (int r = 0; r < 8; ++r) d[q * 8 + r] = A[(ir + r) * g->HW + q];
        continue;
      }
      for (int64_t r = 0; r < m; ++r)
        for (int64_t q = 0; q < len; ++q) d[q * mr + r] = A[(ir + r) * g->HW + q];
      for (int64_t r = m; r < mr; ++r)
        for (int64_t q = 0; q < len; ++q) d[q * mr + r] = 0.0f;
    }
    p += len;
  }
}

int mte_conv2d_backward_weight(const mte_conv2d_desc *d, const float *gy, const float *x,
                               float *gw, mte_arena *arena) {
  conv_geom g;
  int st = mte__conv_make_geom(d, &g);
  if (st != MTE_OK) return st;
  const int64_t nw = g.K * g.KK;
  if (nw == 0) return MTE_OK;
  if (!gw) return MTE_EINVAL;
  const int64_t P = g.N * g.HW; /* the GEMM's inner dimension: every pixel of every image */
  if (P == 0 || g.HWi == 0) {
    memset(gw, 0, (size_t)nw * sizeof(float));
    return MTE_OK;
  }
  if (!gy || !x) return MTE_EINVAL;
  if (g.Cg == 1 && g.Kg <= MTE_CONV_DIRECT_MAX_KG)
    return mte__conv_dw_backward_weight(&g, gy, x, gw);

  const mte_isa *isa = mte__isa();
  const mte_sgemm_kernel *k = isa->sgemm;
  const int mr = k->mr, nr = k->nr;
  const int64_t nk = cdiv(P, k->kc), kcb = cdiv(P, nk);
  const int64_t mb = conv_split(g.Kg, mr, k->mc, 1), mblk = cdiv(g.Kg, mb);
  int nt = mte__conv_threads((double)P * g.K * g.KK, INT64_MAX);
  const int64_t nbw = conv_split(g.KK, nr, MTE_CONV_NB_MAX, cdiv(nt, g.G * mblk));
  const int64_t nblk = cdiv(g.KK, nbw), tiles = g.G * mblk * nblk;
  /* fewer dW tiles than threads (a first layer: 32 x 9 weights from 64 images): the images
   * are shared out too, each share summed into its own copy of dW, added up at the end */
  int64_t shares = 1, per_share = g.N;
  if (tiles < nt && g.N > 1 && nw <= ((int64_t)1 << 20)) {
    per_share = cdiv(g.N, min64(g.N, cdiv(nt, tiles)));
    shares = cdiv(g.N, per_share);
  }
  const int64_t items = tiles * shares;
  if (nt > items) nt = (int)items;

  /* stride 1 along rows: gather by pieces, from a zero-padded copy of each image (the k
   * slices then stop at image ends) unless every window lies inside x */
  const int64_t Hp = conv_reach(g.H, g.pt, g.pb, g.Ho, g.sh, g.kh, g.dh);
  const int64_t Wp = conv_reach(g.W, g.pl, g.pr, g.Wo, g.sw, g.kw, g.dw);
  int64_t plane = g.HWi;
  int pieces = g.sw == 1, padded = pieces && !(g.pt == 0 && g.pl == 0 && Hp == g.H && Wp == g.W);
  if (padded && !conv_pad_ok(&g, Hp, Wp, &plane)) pieces = padded = 0;
  const mte_im2col_kernel *lp = isa->im2col;
  if (nr + 1 + nr / MTE_CONV_PIECE > MTE_CONV_MAX_PIECES) return MTE_EUNSUPPORTED;
  int ok = 1;
  size_t bytes[5] = {conv_bytes(&ok, nt, mb, kcb), conv_bytes(&ok, nt, kcb, rup(nbw, nr)),
                     conv_bytes(&ok, nt, kcb, nr), conv_bytes(&ok, nt, g.Cg, padded ? plane : 0),
                     conv_bytes(&ok, shares > 1 ? shares : 0, nw, 1)};
  if (!ok) return MTE_EOVERFLOW;
  const size_t per_a = (size_t)(mb * kcb), per_b = (size_t)(kcb * rup(nbw, nr)),
               per_t = (size_t)(kcb * nr), per_p = padded ? (size_t)(g.Cg * plane) : 0;
  float *buf[5];
  conv_scratch s;
  if ((st = mte__conv_scratch_open(&s, arena, 5, bytes, buf)) != MTE_OK) return st;
  float *const dw = shares > 1 ? buf[4] : gw; /* share q's dW: dw + q * nw */

  PARALLEL {
    const size_t t = (size_t)conv_tid();
    float *ab = buf[0] + t * per_a, *bb = buf[1] + t * per_b;
    float *tb = buf[2] + t * per_t, *xp = buf[3] + t * per_p;
    mte_conv_pieces pcs;
    pcs.kh = g.kh, pcs.kw = g.kw, pcs.dh = g.dh, pcs.dw = g.dw;
    pcs.plane = plane, pcs.pitch = padded ? Wp : g.W;
    const xsrc xs = {padded ? xp : x, pcs.pitch, pcs.plane, padded, pieces};
    FOR_DYNAMIC /* work item: one (group, rows block, columns block) tile of dW, one share */
    for (int64_t item = 0; item < items; ++item) {
      const int64_t q = item / tiles, it = item % tiles;
      const int64_t gi = it / (mblk * nblk), m0 = it / nblk % mblk * mb;
      const int64_t j0 = it % nblk * nbw, rows = min64(mb, g.Kg - m0);
      const int64_t ncols = min64(nbw, g.KK - j0);
      float *c = dw + q * nw + (gi * g.Kg + m0) * g.KK + j0;
      const int64_t p0 = q * per_share * g.HW, p1 = min64(P, (q + 1) * per_share * g.HW);
      for (int64_t pc = p0; pc < p1;) {
        int64_t kc = min64(kcb, p1 - pc);
        if (padded) { /* one image per slice, padded once per image */
          const int64_t n = pc / g.HW;
          kc = min64(kc, (n + 1) * g.HW - pc);
          if (pc % g.HW == 0)
            mte__conv_pad_planes(&g, x + (n * g.C + gi * g.Cg) * g.HWi, Hp, Wp, xp);
        }
        pack_a_gy(&g, gy, gi, mr, m0, rows, pc, kc, ab);
        pack_b_cols_t(&g, &xs, gi, nr, pc, kc, j0, ncols, lp->pieces, &pcs, tb, bb);
        mte__conv_macro_kernel(k, rows, ncols, kc, ab, bb, c, g.KK, pc == p0 ? 0.0f : 1.0f, 0,
                               NULL);
        pc += kc;
      }
    }
    if (shares > 1) {
      FOR_STATIC /* dW = the shares' sum, in a fixed order */
      for (int64_t i = 0; i < nw; ++i) {
        float sum = dw[i];
        for (int64_t q = 1; q < shares; ++q) sum += dw[q * nw + i];
        gw[i] = sum;
      }
    }
  }
  return mte__conv_scratch_close(&s);
}
