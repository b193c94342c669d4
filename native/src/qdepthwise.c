/*
 * qdepthwise.c - int8 depthwise 3x3 convolution (one channel per group), any padding,
 * stride_h >= 1, stride_w 1 or 2, dilation 1: the "qdepthwise" kernels.
 *
 * Each plane is widened once into a zero-padded int16 copy (x - x_zp, so the padding is 0)
 * whose rows are stored in stride_h phases and whose width is a multiple of stride_w, so the
 * whole output plane is one flat row (mte_quant_internal.h): output g = r * pitch + c reads
 * tap (i, j) at element off[i] + sw * g + j. The ISA kernel widens the plane, computes the
 * flat row into a scratch line (the pitch - Wo columns past each row are garbage) and copies
 * the Wo real columns of each row to y. No per-row set-up, no ring: the fixed cost per plane
 * is one widening pass and one row copy. Planes are independent: the unit of threading.
 * A kernel of x_offset 128 takes the same layout in bytes, x ^ 0x80 padded with x_zp + 128
 * (its channels' comp then holds -(x_zp + 128) * sum(w): qconv.c).
 * Narrow planes (stride 1, padding 1, W <= MTE_QDW_TAB_MAX_W) skip the copy where the kernel
 * has planes_tab: the windows are permuted out of two loads (mte_qdw_tab; at 7 x 7 the copy
 * and the row stores were most of a plane's time).
 */
#include <string.h>

#include "mte_qgemm_internal.h"

#ifdef _OPENMP
#include <omp.h>
#endif

int mte__qdepthwise3x3_applies(const conv_geom *g) {
  return g->Cg == 1 && g->Kg == 1 && g->kh == 3 && g->kw == 3 && g->dh == 1 && g->dw == 1 &&
         (g->sw == 1 || g->sw == 2) && g->Ho >= 1 && g->Wo >= 1;
}

/* the flat layout of one plane */
typedef struct flat {
  int64_t pe;    /* elements per padded row: (Wo - 1) * sw + 3, rounded up to sw */
  int64_t hq;    /* padded rows per phase */
  int64_t pitch; /* flat outputs per output row: pe / sw */
  int64_t n;     /* flat outputs: (Ho - 1) * pitch + Wo */
  int64_t elems; /* elements of the plane, its tail included */
} flat;

static flat layout(const conv_geom *g, int64_t tail) {
  flat f;
  f.pe = rup((g->Wo - 1) * g->sw + 3, g->sw);
  f.hq = cdiv((g->Ho - 1) * g->sh + 3, g->sh);
  f.pitch = f.pe / g->sw;
  f.n = (g->Ho - 1) * f.pitch + g->Wo;
  f.elems = g->sh * f.hq * f.pe + tail;
  return f;
}

/* the narrow-plane route applies: stride 1, padding 1 on all sides, a narrow row */
static int tab_applies(const mte_qdw_kernel *k, const conv_geom *g) {
  return k->planes_tab && (mte_cpu_features() & k->tab_needs) == k->tab_needs && g->sh == 1 &&
         g->sw == 1 && g->pt == 1 && g->pl == 1 &&
         g->Ho == g->H && g->Wo == g->W && g->W >= 1 && g->W <= MTE_QDW_TAB_MAX_W;
}

/* The index tables of mte_qdw_tab for an H x W plane. Chunk rows R: the flat outputs of a
 * chunk (pitch p = W + 2, as the copy kernels' layout) fit 64 lanes, its input rows 127
 * bytes. Window (i, s), lane byte b: flat padded position q = b + s + i * p, padded row
 * q / p (input row r0 - 1 + q / p), column q % p (0 and W + 1: padding). After the kernel's
 * two saturating packs, byte 16 m + 4 k + i' holds flat output 16 m + 4 i' + k. */
static void tab_build(mte_qdw_tab *t, int64_t H, int64_t W) {
  const int64_t p = W + 2;
  int64_t R = 64 / p;
  if (R > 127 / W - 2) R = 127 / W - 2;
  if (R > H) R = H;
  t->H = H, t->W = W, t->R = R;
  for (int i = 0; i < 3; ++i)
    for (int s = 0; s < 2; ++s)
      for (int64_t b = 0; b < 64; ++b) {
        const int64_t q = b + 2 * s + i * p, row = q / p, col = q % p;
        t->win[2 * i + s][b] = (uint8_t)(row >= R + 2 || col == 0 || col == W + 1
                                             ? 127 : row * W + col - 1);
      }
  for (int64_t o = 0; o < 64; ++o) {
    const int64_t f = o < R * W ? (o / W) * p + o % W : 0;
    t->out[o] = (uint8_t)(16 * (f / 16) + 4 * (f % 4) + (f % 16) / 4);
  }
}

int mte__qdepthwise3x3(const conv_geom *g, const mte_qconv2d_plan *p, const int8_t *x,
                       int32_t x_zp, const mte_qchan *chan, const mte_requant *rq, int8_t *y,
                       mte_arena *arena) {
  const mte_qdw_kernel *k = mte__isa()->qdepthwise;
  const int64_t planes = g->N * g->C;
  const int nt = mte__threads_for((double)planes * g->HW * 9, 64.0 * 64.0 * 64.0, planes);
  if (tab_applies(k, g)) {
    mte_qdw_tab t;
    tab_build(&t, g->H, g->W);
    t.C = g->C, t.x = x, t.w3x3 = p->w3x3, t.chan = chan, t.x_zp = x_zp, t.zp = rq->zero_point;
    t.lo = rq->act_min, t.hi = rq->act_max, t.y = y;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
#endif
    for (int j = 0; j < nt; ++j) k->planes_tab(&t, planes * j / nt, planes * (j + 1) / nt);
    return MTE_OK;
  }
  const int u8 = k->x_offset == 128;
  const flat f = layout(g, u8 ? MTE_QDW_TAIL_U8 : MTE_QDW_TAIL);
  const size_t qbytes = mte__q_align((size_t)f.elems * (u8 ? 1 : sizeof(int16_t)));
  const size_t per = qbytes + mte__q_align((size_t)rup(f.n, 64));
  qscratch s;
  int st;
  uint8_t *buf = (uint8_t *)mte__qscratch_open(&s, arena, per * (size_t)nt, &st);
  if (!buf) return st;
  /* the padding (0, or x_zp + 128 for bytes): the kernels write only the interior */
  memset(buf, u8 ? (x_zp + 128) : 0, per * (size_t)nt);
  mte_qdw_plane base = {.H = g->H, .W = g->W, .pt = g->pt, .pl = g->pl, .sh = g->sh,
                        .hq = f.hq, .pe = f.pe, .x_zp = x_zp, .sw = (int)g->sw, .n = f.n,
                        .zp = rq->zero_point, .lo = rq->act_min, .hi = rq->act_max,
                        .Ho = g->Ho, .Wo = g->Wo, .pitch = f.pitch};
  for (int i = 0; i < 3; ++i) base.off[i] = ((i % g->sh) * f.hq + i / g->sh) * f.pe;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
#endif
  for (int64_t pl = 0; pl < planes; ++pl) {
#ifdef _OPENMP
    uint8_t *mine = buf + per * (size_t)omp_get_thread_num();
#else
    uint8_t *mine = buf;
#endif
    const int64_t c = pl % g->C;
    mte_qdw_plane a = base;
    a.x = x + pl * g->HWi, a.line = (int8_t *)(mine + qbytes);
    if (u8)
      a.u = mine;
    else
      a.p = (int16_t *)mine;
    a.chan = chan + c, a.y = y + pl * g->HW;
    for (int t = 0; t < 9; ++t) a.w[t] = p->w3x3[c * 9 + t];
    k->plane(&a);
  }
  return mte__qscratch_close(&s);
}
