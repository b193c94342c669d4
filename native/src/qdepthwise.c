/*
 * qdepthwise.c - int8 depthwise 3x3 convolution (one channel per group), any padding,
 * stride_h >= 1, stride_w 1 or 2, dilation 1: the "qdepthwise" kernels.
 *
 * Per plane, each input row the outputs read is widened once to int16 (x - x_zp, so the
 * padding is simply 0) and laid out as a "pair row" (mte_quant_internal.h): pairs
 * (x[s*sw - pl], x[s*sw - pl + 1]), the two columns taps 0 and 1 read for output s. One
 * int16 pair multiply-add (PMADDWD, SMLAL) then does two taps, and tap 2 is the pair `off`
 * further on (stride 1: 2, stride 2: 1) with weights (w2, 0). The rows live in a ring of 4,
 * built when first needed (a vectorised widening copy; stride 1 interleaves it with itself
 * shifted by one column), so with stride 1 each is built once for the 3 output rows that
 * read it. Planes are independent: the unit of threading.
 */
#include <string.h>

#include "mte_qgemm_internal.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define RING 4

int mte__qdepthwise3x3_applies(const conv_geom *g) {
  return g->Cg == 1 && g->Kg == 1 && g->kh == 3 && g->kw == 3 && g->dh == 1 && g->dw == 1 &&
         (g->sw == 1 || g->sw == 2) && g->Ho >= 1 && g->Wo >= 1;
}

/* pairs a row holds: every output (vector-rounded) plus tap 2's offset */
static int64_t pair_len(const conv_geom *g) { return rup(g->Wo, 16) + 2; }

/* the pair row of input row ih (zeros outside the plane): with p[k] = x[k - pl] - zp (0 in
 * the padding), stride 2 pairs are p itself (q[2s + e] = p[2s + e]); stride 1 pairs
 * interleave p with p shifted by one (q[2s] = p[s], q[2s + 1] = p[s + 1]), via tmp */
static void build_row(const conv_geom *g, const int8_t *plane, int64_t ih, int32_t zp,
                      int16_t *q, int16_t *tmp) {
  const int64_t len = 2 * pair_len(g);
  if (ih < 0 || ih >= g->H) {
    memset(q, 0, (size_t)len * sizeof(int16_t));
    return;
  }
  int16_t *p = g->sw == 2 ? q : tmp;
  memset(p, 0, (size_t)len * sizeof(int16_t));
  const int8_t *xr = plane + ih * g->W;
  const int64_t n = g->W < len - g->pl ? g->W : len - g->pl; /* the columns that fit */
  for (int64_t c = 0; c < n; ++c) p[g->pl + c] = (int16_t)(xr[c] - zp);
  if (g->sw == 2) return;
  for (int64_t s = 0; s < len / 2; ++s) {
    q[2 * s] = p[s];
    q[2 * s + 1] = p[s + 1];
  }
}

static void plane(const conv_geom *g, const mte_qdw_kernel *k, const int8_t *x,
                  const int8_t *w, const mte_qchan *chan, int32_t x_zp, const mte_requant *rq,
                  int16_t *ring, int8_t *y) {
  const int64_t len = 2 * pair_len(g);
  int64_t tag[RING] = {INT64_MIN, INT64_MIN, INT64_MIN, INT64_MIN};
  mte_qdw_row r = {{NULL, NULL, NULL}, g->sw == 1 ? 2 : 1, g->Wo, {0}, {0}, chan,
                   rq->zero_point, rq->act_min, rq->act_max, NULL};
  for (int i = 0; i < 3; ++i) {
    r.w01[i] = (int32_t)(((uint32_t)(uint16_t)w[3 * i + 1] << 16) | (uint16_t)w[3 * i]);
    r.w2[i] = (int32_t)(uint16_t)w[3 * i + 2];
  }
  for (int64_t o = 0; o < g->Ho; ++o) {
    for (int i = 0; i < 3; ++i) {
      const int64_t ih = o * g->sh + i - g->pt;
      const int slot = (int)(((ih % RING) + RING) % RING);
      if (tag[slot] != ih) {
        build_row(g, x, ih, x_zp, ring + slot * len, ring + RING * len);
        tag[slot] = ih;
      }
      r.q[i] = ring + slot * len;
    }
    r.y = y + o * g->Wo;
    k->row(&r);
  }
}

int mte__qdepthwise3x3(const conv_geom *g, const mte_qconv2d_plan *p, const int8_t *x,
                       int32_t x_zp, const mte_qchan *chan, const mte_requant *rq, int8_t *y,
                       mte_arena *arena) {
  const mte_qdw_kernel *k = mte__isa()->qdepthwise;
  const int64_t planes = g->N * g->C;
  const size_t per = mte__q_align((size_t)((RING + 1) * 2 * pair_len(g) + 2) * sizeof(int16_t));
  const int nt = mte__threads_for((double)planes * g->HW * 9, 64.0 * 64.0 * 64.0, planes);
  qscratch s;
  int st;
  int16_t *buf = (int16_t *)mte__qscratch_open(&s, arena, per * (size_t)nt, &st);
  if (!buf) return st;
  const mte_qgemm_kernel *qk = p->k;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
#endif
  for (int64_t pl = 0; pl < planes; ++pl) {
#ifdef _OPENMP
    int16_t *mine = (int16_t *)((uint8_t *)buf + per * (size_t)omp_get_thread_num());
#else
    int16_t *mine = buf;
#endif
    const int64_t c = pl % g->C;
    /* channel c is group c: its padded channel block starts at c * panels * mr */
    plane(g, k, x + pl * g->HWi, p->w3x3 + c * 9, chan + c * p->panels * qk->mr, x_zp, rq,
          mine, y + pl * g->HW);
  }
  return mte__qscratch_close(&s);
}
