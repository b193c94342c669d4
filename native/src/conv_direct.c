/*
 * conv_direct.c - direct KxK convolution (groups 1, dilation 1, any stride), weights
 * packed once, for inference: no im2col matrix, no Winograd transforms.
 *
 * The idea (mte_convdirect_internal.h): vector lanes run over 64 output channels, so a
 * weight vector load feeds up to 7 FMAs with broadcast input pixels, read straight from a
 * zero-padded copy of x. The accumulators of a chunk of up to 128 output pixels (whole
 * output rows, or a piece of one long row) live in a 128 x 64 buffer in L1; the input
 * channels are taken in slices of 16 (the slice's weights, 16 * 9 * 256 B for a 3x3, stay
 * in L1 while every tile of the chunk uses them); after the last slice the chunk is
 * transposed into y's NCHW planes with bias (seeded at the first slice), residual and
 * ReLU/ReLU6 applied on the way: the only store of y.
 *
 * Measured (bench/layers.py, ResNet-18 at 224, batch 1, 1 thread, Xeon with AVX-512, FMA
 * peak 175 GFLOP/s; "before" = the route the dispatcher took until then; "alone" = the
 * layer called in a loop, "net" = inside the executor's forward, where other layers have
 * evicted its weights):
 *
 *   layer                  before                 direct alone      direct in net
 *   7x7/2 3->64 @224      2.82 ms im2col (48%)    1.70 ms (79%)     1.85 ms (72%)
 *   3x3/2 64->128 @56     1.17 ms im2col (57%)    0.89 ms (74%)     0.88 ms (74%)
 *   3x3/2 128->256 @28    1.15 ms im2col (58%)    0.86 ms (77%)     0.92 ms (71%)
 *   3x3/2 256->512 @14    1.46 ms im2col (45%)    0.90 ms (73%)     1.16 ms (56%)
 *   3x3/1 512->512 @7     3.40 ms F(2,3) (39%)    1.75 ms (75%)     2.34 ms (56%)
 *   3x3/1 256->256 @14    1.67 ms F(2,3) (79%)    1.59 ms (83%)     1.74 ms (75%)
 *   3x3/1 128->128 @28    1.25 ms F(4,3)(105%)    1.60 ms (83%)
 *   3x3/1  64->64  @56    1.40 ms F(4,3) (95%)    1.71 ms (77%)
 *   3x3/2 3->32 @224      0.46 ms im2col          0.34 ms           (MobileNetV2's stem)
 *
 * so the rule (mte_conv2d_direct_should_use): on an ISA with its own tile (AVX-512), for
 * groups 1, dilation 1, act NONE/RELU/RELU6, kernels of at least 3x3 with at least 32
 * output channels: every stride > 1 and every kernel but 3x3; a stride-1 3x3 where
 * Winograd would not run, or would run F(2,3) on a plane under 12 pixels wide (a 7x7
 * plane fills 49 of F(2,3)'s 64 tile outputs). F(4,3)'s 4x fewer multiplies beat ~80% of
 * peak, and F(2,3) at 14x14 is as fast as direct in the network (both stream their
 * weights from L3 there: 4.2 MB of U, 2.4 MB packed).
 *
 * The in-net slowdown of the 512-channel layers is their 9.4 MB of weights coming from L3
 * or memory on every call (each 36 KB slice is reused by 7 tiles only at 7x7); a software
 * prefetch of the next slices' weights did not measurably help on this (shared) machine.
 */
#include <string.h>

#include "mte_conv_internal.h"
#include "mte_convdirect_internal.h"
#include "mte_winograd.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define KB MTE_CD_KB
#define CSLICE 16 /* input channels per slice */

static inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }


/* ---------------------------------------------------------------- the generic tile */

static void tile_generic(const mte_cd_tile *t) {
  const int n = 16 * t->kv, taps = t->kh * t->kw;
  for (int q = 0; q < t->p; ++q)
    for (int k = 0; k < n; ++k)
      if (t->bias) t->acc[q * KB + k] = t->bias[k];
  for (int64_t c = 0; c < t->nc; ++c)
    for (int i = 0; i < t->kh; ++i)
      for (int j = 0; j < t->kw; ++j) {
        const float *w = t->w + (c * taps + i * t->kw + j) * KB;
        const float *x = t->x + c * t->cs + i * t->wp + j;
        for (int q = 0; q < t->p; ++q) {
          const float xv = x[q * t->s];
          float *a = t->acc + q * KB;
          for (int k = 0; k < n; ++k) a[k] += w[k] * xv;
        }
      }
}

static void store_generic(const float *acc, int kn, int64_t n, float *y, int64_t ys,
                          const float *res, int act) {
  for (int k = 0; k < kn; ++k)
    for (int64_t i = 0; i < n; ++i) {
      float v = acc[i * KB + k];
      if (res) v += res[k * ys + i];
      if (act != MTE_ACT_NONE) v = v < 0.0f ? 0.0f : v; /* NaN stays NaN */
      if (act == MTE_ACT_RELU6) v = v > 6.0f ? 6.0f : v;
      y[k * ys + i] = v;
    }
}

const mte_convdir_kernel mte_convdir_kernel_generic = {"generic", tile_generic, store_generic};

/* ---------------------------------------------------------------- packing */

static int valid_weight(int64_t K, int64_t C, int64_t kh, int64_t kw) {
  const int64_t lim = (int64_t)1 << 30;
  return K >= 1 && C >= 1 && kh >= 1 && kw >= 1 && K <= lim && C <= lim && kh <= 64 &&
         kw <= 64;
}

int64_t mte_conv2d_direct_packed_floats(int64_t K, int64_t C, int64_t kh, int64_t kw) {
  if (!valid_weight(K, C, kh, kw)) return -1;
  return ceil_div(K, KB) * KB * C * kh * kw;
}

int mte_conv2d_direct_pack(int64_t K, int64_t C, int64_t kh, int64_t kw, const float *w,
                           float *packed) {
  if (!valid_weight(K, C, kh, kw) || !w || !packed) return MTE_EINVAL;
  const int64_t taps = kh * kw, n = mte_conv2d_direct_packed_floats(K, C, kh, kw);
  memset(packed, 0, (size_t)n * sizeof(float));
  for (int64_t k = 0; k < K; ++k)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t t = 0; t < taps; ++t)
        packed[((k / KB * C + c) * taps + t) * KB + k % KB] = w[(k * C + c) * taps + t];
  return MTE_OK;
}

/* ---------------------------------------------------------------- the rule */

int mte_conv2d_direct_should_use(const mte_conv2d_desc *d, int act) {
  if (strcmp(mte__isa()->convdirect->isa, "avx512") != 0) return 0;
  if (d->groups != 1 || d->dilation_h != 1 || d->dilation_w != 1) return 0;
  if (act != MTE_ACT_NONE && act != MTE_ACT_RELU && act != MTE_ACT_RELU6) return 0;
  if (d->kernel_h < 3 || d->kernel_w < 3 || d->out_channels < 32) return 0;
  if (d->stride_h > 1 || d->stride_w > 1) return 1;
  if (d->kernel_h != 3 || d->kernel_w != 3) return 1;
  const int64_t ho = d->out_h, wo = d->out_w, n = d->batch;
  const int tile = mte_winograd_tile(n, d->in_channels, d->out_channels, ho, wo, 1);
  const int wino = mte_winograd_should_use(n, d->in_channels, d->out_channels, ho, wo, 1);
  return !wino || (tile == 2 && min64(ho, wo) < 12);
}

/* ---------------------------------------------------------------- the forward pass */

static int check(const mte_conv2d_desc *d, int act) {
  if (!d || d->batch < 0 || d->in_h < 1 || d->in_w < 1 || d->groups != 1 ||
      d->dilation_h != 1 || d->dilation_w != 1 || d->stride_h < 1 || d->stride_w < 1 ||
      d->pad_top < 0 || d->pad_bottom < 0 || d->pad_left < 0 || d->pad_right < 0 ||
      !valid_weight(d->out_channels, d->in_channels, d->kernel_h, d->kernel_w))
    return MTE_EINVAL;
  if (act != MTE_ACT_NONE && act != MTE_ACT_RELU && act != MTE_ACT_RELU6) return MTE_EINVAL;
  const int64_t lim = (int64_t)1 << 30;
  if (d->in_h > lim || d->in_w > lim || d->stride_h > lim || d->stride_w > lim ||
      d->pad_top > lim || d->pad_bottom > lim || d->pad_left > lim || d->pad_right > lim)
    return MTE_EINVAL;
  const int64_t ho = mte_conv2d_output_size(d->in_h, d->kernel_h, d->stride_h, d->pad_top,
                                            d->pad_bottom, 1);
  const int64_t wo = mte_conv2d_output_size(d->in_w, d->kernel_w, d->stride_w, d->pad_left,
                                            d->pad_right, 1);
  if (ho < 1 || wo < 1 || ho != d->out_h || wo != d->out_w) return MTE_EINVAL;
  return MTE_OK;
}

/* x (C, H, W) into xp (C, hp, wp): pad_top rows and pad_left columns of zeros before it,
 * zeros after it up to hp x wp (rows / columns of x past them are never read) */
static void pad_input(const mte_conv2d_desc *d, const float *x, float *xp, int64_t hp,
                      int64_t wp) {
  const int64_t C = d->in_channels, H = d->in_h, W = d->in_w;
  const int64_t pt = d->pad_top, pl = d->pad_left;
  const int64_t wc = min64(W, wp - pl); /* columns of x that land inside */
  for (int64_t c = 0; c < C; ++c)
    for (int64_t r = 0; r < hp; ++r) {
      float *row = xp + (c * hp + r) * wp;
      const int64_t h = r - pt;
      if (h < 0 || h >= H || wc <= 0) {
        memset(row, 0, (size_t)wp * sizeof(float));
        continue;
      }
      memset(row, 0, (size_t)pl * sizeof(float));
      memcpy(row + pl, x + (c * H + h) * W, (size_t)wc * sizeof(float));
      memset(row + pl + wc, 0, (size_t)(wp - pl - wc) * sizeof(float));
    }
}

/* One chunk: output rows [oh0, oh1) x columns [ow0, ow1) of the channel block kb, every
 * input-channel slice, then the transposed store. */
static void chunk(const mte_convdir_kernel *k, const mte_conv2d_desc *d, const float *xp,
                  int64_t hp, int64_t wp, const float *packed, const float *bias, int64_t kb,
                  int64_t oh0, int64_t oh1, int64_t ow0, int64_t ow1, const float *res,
                  int act, float *y) {
  _Alignas(64) float acc[MTE_CD_NPIX * KB];
  _Alignas(64) float b[KB];
  const int64_t C = d->in_channels, K = d->out_channels, taps = d->kernel_h * d->kernel_w;
  const int kn = (int)min64(KB, K - kb * KB), kv = (kn + 15) / 16;
  const int64_t cs = hp * wp, plane = d->out_h * d->out_w;
  for (int i = 0; i < KB; ++i) b[i] = bias && i < kn ? bias[kb * KB + i] : 0.0f;
  mte_cd_tile t = {.cs = cs, .wp = wp, .s = d->stride_w, .kh = (int)d->kernel_h,
                   .kw = (int)d->kernel_w, .kv = kv};
  for (int64_t c0 = 0; c0 < C; c0 += CSLICE) {
    t.nc = min64(CSLICE, C - c0);
    t.w = packed + (kb * C + c0) * taps * KB;
    t.bias = c0 == 0 ? b : NULL;
    /* the weights that follow this slice in `packed` (the next slice, or the next block's
     * first) into L2 while this slice's tiles run, a share after each tile */
    const char *next = (const char *)(t.w + t.nc * taps * KB);
    const int64_t lines = CSLICE * taps * KB * (int64_t)sizeof(float) / 64;
    const int64_t share = ceil_div(lines, ceil_div(oh1 - oh0, 1) * ceil_div(ow1 - ow0, MTE_CD_PMAX));
    int64_t i = 0, sent = 0;
    for (int64_t oh = oh0; oh < oh1; ++oh)
      for (int64_t ow = ow0; ow < ow1; ow += MTE_CD_PMAX) {
        t.p = (int)min64(MTE_CD_PMAX, ow1 - ow);
        t.x = xp + c0 * cs + oh * d->stride_h * wp + ow * d->stride_w;
        t.acc = acc + i * KB;
        k->tile(&t);
        i += t.p;
        for (int64_t e = sent + share; sent < e && sent < lines; ++sent)
          __builtin_prefetch(next + sent * 64, 0, 2);
      }
  }
  const int64_t o0 = oh0 * d->out_w + ow0, n = (oh1 - oh0) * (ow1 - ow0);
  const int64_t at = kb * KB * plane + o0;
  k->store(acc, kn, n, y + at, plane, res ? res + at : NULL, act);
}

int mte_conv2d_direct_forward(const mte_conv2d_desc *d, const float *x, const float *packed,
                              const float *bias, const float *residual, int act, float *y,
                              mte_arena *arena) {
  int st = check(d, act);
  if (st != MTE_OK) return st;
  if (!x || !packed || !y) return MTE_EINVAL;
  if (d->batch == 0) return MTE_OK;
  const mte_convdir_kernel *k = mte__isa()->convdirect;
  const int64_t ho = d->out_h, wo = d->out_w, K = d->out_channels, C = d->in_channels;
  const int64_t hp = (ho - 1) * d->stride_h + d->kernel_h;
  const int64_t wp = (wo - 1) * d->stride_w + d->kernel_w;
  const int64_t xp_floats = C * hp * wp;
  if ((double)xp_floats * sizeof(float) > 1e12) return MTE_EOVERFLOW;
  const size_t bytes = (size_t)xp_floats * sizeof(float);
  conv_scratch scratch;
  float *xp = NULL;
  if ((st = mte__conv_scratch_open(&scratch, arena, 1, &bytes, &xp)) != MTE_OK) return st;
  /* chunks: whole rows when a row is at most NPIX pixels, else pieces of one row */
  const int64_t rows = wo >= MTE_CD_NPIX ? 1 : MTE_CD_NPIX / wo;
  const int64_t seg = min64(wo, MTE_CD_NPIX);
  const int64_t nrow = ceil_div(ho, rows), nseg = ceil_div(wo, seg);
  const int64_t nkb = ceil_div(K, KB), units = nkb * nrow * nseg;
  const int64_t x_image = C * d->in_h * d->in_w, y_image = K * ho * wo;
  const int nt = mte__threads_for(2.0 * (double)y_image * C * d->kernel_h * d->kernel_w,
                                  4e6, units);
  for (int64_t n = 0; n < d->batch; ++n) {
    pad_input(d, x + n * x_image, xp, hp, wp);
    const float *res = residual ? residual + n * y_image : NULL;
    float *yn = y + n * y_image;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
    for (int64_t u = 0; u < units; ++u) {
      const int64_t kb = u / (nrow * nseg), r = u / nseg % nrow, sg = u % nseg;
      chunk(k, d, xp, hp, wp, packed, bias, kb, r * rows, min64(ho, (r + 1) * rows),
            sg * seg, min64(wo, (sg + 1) * seg), res, act, yn);
    }
  }
  return mte__conv_scratch_close(&scratch);
}
