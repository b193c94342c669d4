/*
 * conv_gemm.c - the building blocks of conv.c and conv_backward.c (see mte_conv_internal.h).
 *
 * The convolutions here are GEMMs run with gemm.c's microkernel (mte__isa()->sgemm: the
 * active ISA's, with its MR x NR tile and block sizes) but with their own packing:
 *
 *   A panels (MR tall)  pack_a: weights (plain or transposed), once per call
 *   B panels (NR wide)  pack_b_plain: a plain matrix (x of a 1x1 conv, dY of backward input)
 *                       im2col (conv.c): straight from the image, by segments or pieces
 *                       cols^T (conv_backward.c): gathered, then transposed
 *
 * and their own macro-kernel, which applies bias, residual and activation (mte_epilogue.h,
 * shared with gemm.c) to each finished tile while it is still in L1. Also here: the segment /
 * piece builders, zero padding, and the arena plumbing. The innermost im2col / col2im loops
 * are the im2col family (src/arch/<isa>/im2col_panel.c), taken from mte__isa()->im2col.
 */
#include <string.h>

#include "mte_conv_internal.h"

/* ---------------------------------------------------------------- im2col, packing */

/* cols row (plane xc, kernel offset i, j) at `len` consecutive pixels from (r, s):
 * out[t] = xpad value, zero outside the image. Reads only inside the plane. */
void mte__conv_im2col_run(const conv_geom *g, const float *xc, int64_t i, int64_t j, int64_t r,
                          int64_t s, int64_t len, float *MTE_RESTRICT out) {
  const int64_t sw = g->sw;
  for (int64_t t = 0; t < len; ++r, s = 0) {
    const int64_t n = min64(len - t, g->Wo - s); /* pixels left in output row r */
    float *o = out + t;
    const int64_t ih = r * g->sh - g->pt + i * g->dh, iw0 = s * sw - g->pl + j * g->dw;
    int64_t lo = 0, hi = 0;
    const float *row = xc; /* indexed row[iw0 + q*sw], always inside the plane */
    if (ih >= 0 && ih < g->H) {
      conv_clip(iw0, sw, g->W, n, &lo, &hi);
      row = xc + ih * g->W;
    }
    for (int64_t q = 0; q < lo; ++q) o[q] = 0.0f;
    for (int64_t q = lo; q < hi; ++q) o[q] = row[iw0 + q * sw];
    for (int64_t q = hi; q < n; ++q) o[q] = 0.0f;
    t += n;
  }
}

/* rows [i0, i0+rows) x k-range [p0, p0+kc) of op(A) into MR-tall panels
 * dst[t*mr*kc + p*mr + r]; rows past `rows` are zero. op(A)[i][p] = trans ? A[p*lda+i]
 * : A[i*lda+p]. */
void mte__conv_pack_a(int mr, int64_t rows, int64_t kc, const float *A, int64_t lda, int trans,
                      int64_t i0, int64_t p0, float *MTE_RESTRICT dst) {
  for (int64_t ir = 0; ir < rows; ir += mr) {
    const int64_t m = min64(mr, rows - ir);
    float *d = dst + ir * kc;
    if (trans) {
      for (int64_t p = 0; p < kc; ++p) {
        const float *src = A + (p0 + p) * lda + i0 + ir;
        int64_t r = 0;
        for (; r < m; ++r) d[p * mr + r] = src[r];
        for (; r < mr; ++r) d[p * mr + r] = 0.0f;
      }
    } else if (m == 8) { /* the common full panel: 8 row streams in, one stream out */
      const float *src = A + (i0 + ir) * lda + p0;
      for (int64_t p = 0; p < kc; ++p, d += 8)
        for (int r = 0; r < 8; ++r) d[r] = src[r * lda + p];
    } else {
      for (int64_t r = 0; r < m; ++r) {
        const float *src = A + (i0 + ir + r) * lda + p0;
        for (int64_t p = 0; p < kc; ++p) d[p * mr + r] = src[p];
      }
      for (int64_t r = m; r < mr; ++r)
        for (int64_t p = 0; p < kc; ++p) d[p * mr + r] = 0.0f;
    }
  }
}

/* B block from a plain row-major matrix: rows [p0, p0+kc), cols [j0, j0+ncols) into
 * NR-wide panels dst[q*kc + p*nr + c] (q a multiple of nr); columns past ncols are zero. */
void mte__conv_pack_b_plain(int nr, int64_t ncols, int64_t kc, const float *B, int64_t ldb,
                            int64_t j0, int64_t p0, float *MTE_RESTRICT dst) {
  for (int64_t q = 0; q < ncols; q += nr) {
    const int64_t w = min64(nr, ncols - q);
    float *d = dst + q * kc;
    for (int64_t p = 0; p < kc; ++p) {
      const float *src = B + (p0 + p) * ldb + j0 + q;
      int64_t c = 0;
      for (; c < w; ++c) d[p * nr + c] = src[c];
      for (; c < nr; ++c) d[p * nr + c] = 0.0f;
    }
  }
}

/* Cut the block of output pixels [j0, j0+n) into runs of one output row; `width` > n adds
 * a zero segment for the columns n .. width-1 (a panel's edge). */
void mte__conv_make_segs(const conv_geom *g, int64_t j0, int64_t n, int64_t width,
                         mte_conv_segs *sg) {
  sg->H = g->H, sg->W = g->W, sg->HWi = g->HWi, sg->kh = g->kh, sg->kw = g->kw;
  sg->dh = g->dh, sg->dw = g->dw, sg->sw = g->sw;
  int64_t r = j0 / g->Wo, s = j0 % g->Wo;
  int k = 0;
  for (int64_t t = 0; t < n; ++r, s = 0, ++k) {
    const int64_t len = min64(n - t, g->Wo - s);
    sg->ih0[k] = r * g->sh - g->pt, sg->iw0[k] = s * g->sw - g->pl;
    sg->len[k] = (int32_t)len, sg->off[k] = (int32_t)t;
    t += len;
  }
  if (width > n)
    sg->ih0[k] = MTE_CONV_NO_ROW, sg->iw0[k] = 0, sg->len[k] = (int32_t)(width - n),
    sg->off[k++] = (int32_t)n;
  sg->nseg = k;
}

/* Pieces of the pixels [j0, j0+n) (stride 1 along rows) in planes of `pitch` floats per row,
 * with block columns starting at dst0; returns the number of pieces. */
int mte__conv_make_pieces(const conv_geom *g, int64_t j0, int64_t n, int64_t pitch,
                          int64_t dst0, mte_conv_pieces *pcs) {
  int64_t r = j0 / g->Wo, s = j0 % g->Wo;
  int k = 0;
  for (int64_t t = 0; t < n; ++r, s = 0) {
    const int64_t len = min64(n - t, g->Wo - s);
    for (int64_t u = 0; u < len; u += MTE_CONV_PIECE, ++k) {
      pcs->src[k] = r * g->sh * pitch + s + u;
      pcs->dst[k] = (int32_t)(dst0 + t + u);
      pcs->len[k] = (int32_t)min64(MTE_CONV_PIECE, len - u);
    }
    t += len;
  }
  return pcs->n = k;
}

/* The group's Cg planes inside Hp x Wp zero planes, at row pt, column pl. */
void mte__conv_pad_planes(const conv_geom *g, const float *x, int64_t Hp, int64_t Wp,
                          float *MTE_RESTRICT xp) {
  const int64_t right = Wp - g->pl - g->W, below = Hp - g->pt - g->H;
  for (int64_t c = 0; c < g->Cg; ++c) {
    float *d = xp + c * Hp * Wp;
    const float *src = x + c * g->HWi;
    memset(d, 0, (size_t)(g->pt * Wp) * sizeof(float));
    for (int64_t h = 0; h < g->H; ++h) {
      float *row = d + (g->pt + h) * Wp;
      memset(row, 0, (size_t)g->pl * sizeof(float));
      memcpy(row + g->pl, src + h * g->W, (size_t)g->W * sizeof(float));
      memset(row + g->pl + g->W, 0, (size_t)right * sizeof(float));
    }
    memset(d + (g->pt + g->H) * Wp, 0, (size_t)(below * Wp) * sizeof(float));
  }
}

/* ---------------------------------------------------------------- epilogue, macro-kernel */

/* C (mc x nc, ldc) = A block (packed, mc x kc) @ B block (packed, kc x nc) + beta * C.
 * On the last k slice each tile gets the epilogue ep (NULL = none): ep->t.row_bias and
 * ep->t.res are those of the block's first row and column. */
void mte__conv_macro_kernel(const mte_sgemm_kernel *k, int64_t mc, int64_t nc, int64_t kc,
                            const float *ap, const float *bp, float *c, int64_t ldc, float beta,
                            int last, const conv_ep *ep) {
  const int mr = k->mr, nr = k->nr;
  float tile[MTE_MAX_TILE] __attribute__((aligned(MTE_ALIGN)));
  const int run_ep = last && ep && (ep->t.row_bias || ep->t.res || ep->t.act != MTE_ACT_NONE);
  for (int64_t jr = 0; jr < nc; jr += nr) {
    const int64_t cols = min64(nr, nc - jr);
    const float *b = bp + jr * kc;
    for (int64_t ir = 0; ir < mc; ir += mr) {
      const int64_t rows = min64(mr, mc - ir);
      float *ct = c + ir * ldc + jr;
      const mte_ep_tile t = {ep && ep->t.row_bias ? ep->t.row_bias + ir : NULL, NULL,
                             ep && ep->t.res ? ep->t.res + ir * ep->t.ldr + jr : NULL,
                             ep ? ep->t.ldr : 0, ep ? ep->t.act : MTE_ACT_NONE};
      if (rows == mr && cols == nr) {
        if (run_ep) { /* the epilogue fused into the store where it can be */
          mte__ukernel_with_epilogue(k, kc, ap + ir * kc, b, ct, ldc, 1.0f, beta, &t, ep->fn);
          continue;
        }
        k->ukernel(kc, ap + ir * kc, b, ct, ldc, 1.0f, beta);
      } else { /* ragged edge: the full tile on the stack, copy the valid part */
        mte__ukernel_edge(k, kc, ap + ir * kc, b, tile, cols, 1.0f);
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t jj = 0; jj < cols; ++jj)
            ct[i * ldc + jj] = tile[i * nr + jj] + (beta != 0.0f ? beta * ct[i * ldc + jj]
                                                                 : 0.0f);
      }
      if (run_ep) ep->fn(ct, ldc, rows, cols, &t);
    }
  }
}

/* The in-place 1x1 block (mte_conv_internal.h): row tiles outermost, so each tile's 8 output
 * rows are written left to right (8 sequential store streams the prefetchers follow; a
 * 112x112 expand conv writes 4.8 MB), x's block re-read from L2 per row tile; the tiles of a
 * row as the kernel's plan cuts them; the k slices of the packed weight innermost. */
void mte__conv_direct_block(const mte_sgemm_kernel *k, int64_t m0, int64_t m1, int64_t ncols,
                            int64_t KK, int64_t kcb, int64_t Mr, const float *ag,
                            const float *x, int64_t ldb, float *y, int64_t ldc,
                            const float *bias, const float *res, int act) {
  const int mr = k->mr;
  int w[MTE_CONV_DIRECT_NB_MAX / 16 + 4];
  const int nt = k->direct_plan(ncols, w);
  for (int64_t ir = m0; ir < m1; ir += mr) {
    mte_direct_tile t;
    t.rows = (int)min64(mr, m1 - ir), t.ldb = ldb, t.ldc = ldc, t.ldr = ldc, t.act = act;
    t.bias = bias ? bias + ir : NULL;
    int64_t j = 0;
    for (int s = 0; s < nt; j += w[s++]) {
      t.width = w[s];
      for (int64_t pc = 0; pc < KK; pc += kcb) {
        t.kc = min64(kcb, KK - pc);
        t.a = ag + pc * Mr + ir * t.kc;
        t.b = x + pc * ldb + j;
        t.c = y + ir * ldc + j;
        t.beta = pc == 0 ? 0.0f : 1.0f;
        t.init_bias = pc == 0, t.last = pc + t.kc >= KK;
        t.res = res ? res + ir * ldc + j : NULL;
        k->direct(&t);
      }
    }
  }
}

/* ---------------------------------------------------------------- arena */

/* Reset (or acquire) the arena, reserve the sum of `n` requests and carve them. */
int mte__conv_scratch_open(conv_scratch *s, mte_arena *given, int n, const size_t *bytes,
                           float **out) {
  size_t total = 0;
  for (int i = 0; i < n; ++i) {
    size_t f = mte_arena_footprint(bytes[i]);
    if (!f || !mte__add_size(total, f, &total)) return MTE_EOVERFLOW;
  }
  s->borrowed = given != NULL;
  s->a = given ? given : mte__arena_acquire(&s->is_default);
  if (!s->a) return MTE_ENOMEM;
  mte_arena_reset(s->a);
  int st = mte_arena_reserve(s->a, total);
  for (int i = 0; i < n && st == MTE_OK; ++i)
    if (!(out[i] = (float *)mte_arena_alloc(s->a, bytes[i]))) st = MTE_ENOMEM;
  if (st != MTE_OK) {
    mte_arena_reset(s->a);
    if (!s->borrowed) mte__arena_release(s->a, s->is_default);
  }
  return st;
}

/* Check the guards (nothing wrote past its buffer) and give the arena back. */
int mte__conv_scratch_close(conv_scratch *s) {
  int st = mte_arena_check(s->a);
  mte_arena_reset(s->a);
  if (!s->borrowed) mte__arena_release(s->a, s->is_default);
  return st;
}
