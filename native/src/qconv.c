/*
 * qconv.c - int8 2-D convolution (NCHW) on the int8 GEMM (qgemm.c) or, for depthwise 3x3,
 * on the qdepthwise kernels (qdepthwise.c).
 *
 * Per image n and group g the convolution is one GEMM, exactly as the float conv.c:
 *     Y[n,g] (Og x Ho*Wo) = W[g] (Og x Cg*kh*kw) @ cols[n,g] (Cg*kh*kw x Ho*Wo)
 * cols is never stored: its blocks are packed straight from x (im2col folded into the
 * packing, padded with x_zp so padded taps contribute 0); a 1x1 stride-1 unpadded conv
 * packs rows of x, which is its cols; other convs of strides <= 2 copy x into padded planes
 * once, split in stride phases, and pack contiguous runs of them (QSRC_FLAT,
 * mte_qgemm_internal.h); larger strides (and 1x1 stride 2) gather im2col rows. The weights
 * come prepacked (mte_qconv2d_prepare).
 * Work items are (image, group, column block), shared by the threads.
 */
#include <stdlib.h>
#include <string.h>

#include "mte_qgemm_internal.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define PAR_MIN_WORK (64.0 * 64.0 * 64.0)

int mte_qconv2d_prepare(const mte_conv2d_desc *d, const int8_t *w, mte_qconv2d_plan **plan) {
  if (!d || !plan || d->groups < 1 || d->in_channels % d->groups) return MTE_EINVAL;
  return mte__qplan_make(d->out_channels, d->in_channels / d->groups, d->kernel_h,
                         d->kernel_w, d->groups, w, plan);
}

/* the descriptor is valid and matches the plan */
static int check(const mte_qconv2d_plan *p, const mte_conv2d_desc *d, conv_geom *g) {
  int st = mte__conv_make_geom(d, g);
  if (st != MTE_OK) return st;
  if (d->out_h != mte_conv2d_output_size(d->in_h, d->kernel_h, d->stride_h, d->pad_top,
                                         d->pad_bottom, d->dilation_h) ||
      d->out_w != mte_conv2d_output_size(d->in_w, d->kernel_w, d->stride_w, d->pad_left,
                                         d->pad_right, d->dilation_w))
    return MTE_EINVAL;
  if (p->O != g->K || p->Cg != g->Cg || p->kh != g->kh || p->kw != g->kw || p->G != g->G ||
      p->k != mte__qgemm_kernel(p->K))
    return MTE_EINVAL;
  return MTE_OK;
}

/* the channels of each group, padded to its panels (depthwise: one per channel, dw set);
 * NULL when out of memory */
static mte_qchan *make_chan(const mte_qconv2d_plan *p, const conv_geom *g, int32_t x_zp,
                            const int32_t *bias, const mte_requant *rq, int *dw) {
  const mte_qgemm_kernel *k = p->k;
  *dw = p->w3x3 && mte__qdepthwise3x3_applies(g);
  mte_qchan *chan =
      (mte_qchan *)malloc((size_t)(*dw ? g->K : g->G * p->panels * k->mr) * sizeof(mte_qchan));
  if (!chan) return NULL;
  if (*dw) { /* a byte-plane depthwise kernel reads x + 128: its compensation as qgemm's */
    const int xo = mte__isa()->qdepthwise->x_offset;
    mte__qchan_fill(chan, g->K, g->K, xo ? p->wsum : NULL, x_zp + xo, bias, rq, 9);
    return chan;
  }
  for (int64_t gi = 0; gi < g->G; ++gi) {
    mte_requant sub = *rq;
    sub.multiplier += gi * g->Kg, sub.shift += gi * g->Kg;
    mte__qchan_fill(chan + gi * p->panels * k->mr, g->Kg, p->panels * k->mr,
                    p->wsum + gi * g->Kg, x_zp + k->x_offset,
                    bias ? bias + gi * g->Kg : NULL, &sub, p->K);
  }
  return chan;
}

/* the descriptor, zero point and requantization are valid for the plan (g: its geometry) */
static int check_run(const mte_qconv2d_plan *p, const mte_conv2d_desc *d, int32_t x_zp,
                     const mte_requant *rq, conv_geom *g) {
  if (!p) return MTE_EINVAL;
  int st = check(p, d, g);
  if (st != MTE_OK) return st;
  if (!mte__q_zp_ok(x_zp) || mte__qcheck_requant(rq, g->K) != MTE_OK) return MTE_EINVAL;
  return MTE_OK;
}

static int run_chan(const mte_qconv2d_plan *p, const conv_geom *gp, const int8_t *x,
                    int32_t x_zp, const mte_qchan *chan, int dw, const mte_requant *rq,
                    int8_t *y, mte_arena *arena);

int mte_qconv2d_run(const mte_qconv2d_plan *p, const mte_conv2d_desc *d, const int8_t *x,
                    int32_t x_zp, const int32_t *bias, const mte_requant *rq, int8_t *y,
                    mte_arena *arena) {
  conv_geom g;
  int st = check_run(p, d, x_zp, rq, &g), dw;
  if (st != MTE_OK) return st;
  if (g.N * g.K * g.HW == 0) return MTE_OK;
  mte_qchan *chan = make_chan(p, &g, x_zp, bias, rq, &dw);
  if (!chan) return MTE_ENOMEM;
  st = run_chan(p, &g, x, x_zp, chan, dw, rq, y, arena);
  free(chan);
  return st;
}

int mte_qconv2d_bind(mte_qconv2d_plan *p, const mte_conv2d_desc *d, int32_t x_zp,
                     const int32_t *bias, const mte_requant *rq) {
  conv_geom g;
  int st = check_run(p, d, x_zp, rq, &g), dw;
  if (st != MTE_OK) return st;
  mte_qchan *chan = make_chan(p, &g, x_zp, bias, rq, &dw);
  if (!chan) return MTE_ENOMEM;
  free(p->bound.chan);
  p->bound = (mte_qbound){chan, *d, x_zp, rq->zero_point, rq->act_min, rq->act_max, dw,
                          mte__isa()};
  return MTE_OK;
}

int mte_qconv2d_run_bound(const mte_qconv2d_plan *p, const int8_t *x, int8_t *y,
                          mte_arena *arena) {
  conv_geom g;
  if (!p || !p->bound.chan || p->bound.isa != mte__isa()) return MTE_EINVAL;
  int st = check(p, &p->bound.desc, &g);
  if (st != MTE_OK) return st;
  if (g.N * g.K * g.HW == 0) return MTE_OK;
  const mte_requant rq = {NULL, NULL, p->bound.zp, p->bound.lo, p->bound.hi};
  return run_chan(p, &g, x, p->bound.x_zp, p->bound.chan, p->bound.dw, &rq, y, arena);
}

/* the convolution on channels made by make_chan (rq: zero point and clamp only) */
static int run_chan(const mte_qconv2d_plan *p, const conv_geom *gp, const int8_t *x,
                    int32_t x_zp, const mte_qchan *chan, int dw, const mte_requant *rq,
                    int8_t *y, mte_arena *arena) {
  const conv_geom g = *gp;
  int st;
  const int64_t nx = g.N * g.C * g.HWi, ny = g.N * g.K * g.HW;
  if (!y || (nx && !x)) return MTE_EINVAL;
  if (nx && (uintptr_t)x < (uintptr_t)y + (uintptr_t)ny && (uintptr_t)y < (uintptr_t)x + (uintptr_t)nx)
    return MTE_EINVAL;
  const mte_qgemm_kernel *k = p->k;
  if (dw) return mte__qdepthwise3x3(&g, p, x, x_zp, chan, rq, y, arena);

  const int pointwise = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.pt == 0 &&
                        g.pl == 0 && g.Ho == g.H && g.Wo == g.W;
  /* flat: x copied into padded planes split in sh x sw phases (padded row rho, column kappa
   * at phase (rho % sh, kappa % sw), element (rho / sh) * wq + kappa / sw; padding x_zp, a
   * tail for the last taps), so every tap of output f = r * wq + s is a fixed offset; not
   * for a 1-tap dimension of stride 2 (most of the copy would never be read) */
  const int flat = !pointwise && g.sh <= 2 && g.sw <= 2 && (g.sh == 1 || g.kh > 1) &&
                   (g.sw == 1 || g.kw > 1);
  const int64_t wq = cdiv(g.W + g.pl + g.pr, g.sw), hq = g.Ho + (g.kh - 1) * g.dh / g.sh;
  const int64_t pq = hq * wq;
  const int64_t fplane = flat ? rup(g.sh * g.sw * pq + (g.kw - 1) * g.dw / g.sw + 64, 64) : 0;
  const int64_t ncols = flat ? g.Ho * wq : g.HW;
  qgemm_job job = {k, g.Kg, ncols, p->K, p->kg, NULL, NULL,
                   {pointwise ? QSRC_ROWS : flat ? QSRC_FLAT : QSRC_IM2COL, NULL,
                    flat ? fplane : g.HWi, &g, wq, pq, (uint8_t)x_zp, k->x_offset ? 0x80 : 0},
                   NULL, g.HW, 1, rq->zero_point, rq->act_min, rq->act_max, 0};
  const int64_t nc = mte__qgemm_block(&job, g.N * g.G), blocks = cdiv(ncols, nc);
  const int64_t items = g.N * g.G * blocks;
  const int nt = mte__threads_for((double)g.N * g.K * g.HW * p->K, PAR_MIN_WORK, items);
  const size_t ytmp = flat ? mte__q_align((size_t)(g.Kg * nc)) : 0;
  const size_t per = mte__q_align(mte__qgemm_scratch(&job, nc)) + ytmp;
  const size_t xbytes = (size_t)(g.N * g.C * fplane);
  qscratch s;
  uint8_t *buf = (uint8_t *)mte__qscratch_open(&s, arena, xbytes + per * (size_t)nt, &st);
  if (!buf) return st;
  int8_t *xpad = (int8_t *)buf + per * (size_t)nt;
  /* the copy, shared by the threads (alone on one it was ~10% of a 3x3 conv at 2) */
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && flat)
#endif
  for (int64_t pl = 0; pl < (flat ? g.N * g.C : 0); ++pl) {
    int8_t *dst = xpad + pl * fplane;
    memset(dst, x_zp, (size_t)fplane);
    for (int64_t h = 0; h < g.H; ++h) {
      const int64_t rho = h + g.pt;
      if (rho / g.sh >= hq) break; /* no output reads it, nor the rows after it */
      int8_t *row = dst + (rho % g.sh) * g.sw * pq + (rho / g.sh) * wq;
      const int8_t *src = x + (pl * g.H + h) * g.W;
      if (g.sw == 1)
        memcpy(row + g.pl, src, (size_t)g.W);
      else
        mte__qsplit2(src, g.W, row + (g.pl % 2) * pq + g.pl / 2,
                     row + ((g.pl + 1) % 2) * pq + (g.pl + 1) / 2);
    }
  }
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic) if (nt > 1)
#endif
  for (int64_t it = 0; it < items; ++it) {
#ifdef _OPENMP
    uint8_t *mine = buf + per * (size_t)omp_get_thread_num();
#else
    uint8_t *mine = buf;
#endif
    const int64_t n = it / (g.G * blocks), gi = (it / blocks) % g.G, b = it % blocks;
    const int64_t j0 = b * nc, cols = min64(nc, ncols - j0);
    qgemm_job j = job;
    j.wpack = p->wpack + gi * p->panels * p->kg * k->mr * 4;
    j.chan = chan + gi * p->panels * k->mr;
    j.src.x = flat ? xpad + (n * g.C + gi * g.Cg) * fplane : x + (n * g.C + gi * g.Cg) * g.HWi;
    int8_t *y0 = y + (n * g.K + gi * g.Kg) * g.HW;
    int8_t *tmp = (int8_t *)mine + per - ytmp;
    if (flat) /* into a block of (Og x cols) flat columns, then the real ones into y */
      j.y = tmp, j.rs = nc, j.ybase = j0;
    else
      j.y = y0;
    mte__qgemm_columns(&j, j0, cols, mine,
                       mine + mte__q_align((size_t)(rup(nc, k->nr) * p->kg * 4)));
    if (flat)
      for (int64_t f = j0; f < j0 + cols;) { /* one output-row run at a time */
        const int64_t r = f / wq, c = f % wq, run = min64(wq - c, j0 + cols - f);
        if (c < g.Wo) {
          const int64_t len = min64(run, g.Wo - c);
          for (int64_t o = 0; o < g.Kg; ++o)
            memcpy(y0 + o * g.HW + r * g.Wo + c, tmp + o * nc + (f - j0), (size_t)len);
        }
        f += run;
      }
  }
  return mte__qscratch_close(&s);
}

int mte_qconv2d(const mte_conv2d_desc *d, const int8_t *x, int32_t x_zp, const int8_t *w,
                const int32_t *bias, const mte_requant *rq, int8_t *y, mte_arena *arena) {
  mte_qconv2d_plan *p;
  int st = mte_qconv2d_prepare(d, w, &p);
  if (st != MTE_OK) return st;
  st = mte_qconv2d_run(p, d, x, x_zp, bias, rq, y, arena);
  mte_qconv2d_free(p);
  return st;
}
