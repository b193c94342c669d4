/*
 * depthwise_body.h - the general depthwise plane kernel (the depthwise family), written once
 * in GNU C vectors of MTE_VL lanes (mte_vec.h) and compiled per ISA by
 * src/arch/<isa>/depthwise.c, which defines MTE_VL, MTE_DW_ISA and MTE_DW_TABLE (and
 * optionally DW_STORE_PART, a partial store of the ISA, and DW_PLANE_FIRST(x, g, w, bias,
 * act, y), the ISA's own plane kernel, tried first: nonzero if it took the plane) before
 * including this file.
 *
 * One plane, one output row at a time (see mte_depthwise_internal.h for the layout):
 *
 *   1. the padded input rows the output row needs are built in a ring, each row once and a
 *      few output rows ahead of its first use: copied (stride 1), or split into its even and odd columns (stride 2), at
 *      their padded places; the zero columns around them are never written, so they stay
 *      zero; rows above and below the plane are the shared zero row;
 *   2. the output row, MTE_VL columns at a time: K*K unaligned loads from the K rows (tap
 *      (i, j) of output column s is column s + j/S of phase j%S of row i), K*K FMAs in K
 *      independent chains, bias, activation, one store. A row's last vector is placed to end
 *      at the row's end (it recomputes a few outputs of the one before: same values), so
 *      only rows narrower than one vector need a partial store.
 *
 * With the padding materialised there are no masks, shuffles or bounds tests in the inner
 * loop, every K, stride and padding is the same code, and the ISA only sets the width.
 * K = 3, 5, 7 are compiled with K and S as constants (taps fully unrolled, the K*K weight
 * vectors hoisted); any other K runs the same loop with K at run time.
 */
#ifndef MTE_DW_ISA
#error "define MTE_DW_ISA, MTE_DW_TABLE and MTE_VL before including depthwise_body.h"
#endif

#include "mte_depthwise_internal.h"
#include "mte_vec.h"

#ifndef DW_STORE_PART
#define DW_STORE_PART(p, v, n) v_st_part(p, v, n)
#endif

/* ReLU / ReLU6 keeping NaN (it fails both comparisons, as mte__dw_act) */
VINLINE vf dw_act(vf v, int act) {
  if (act == MTE_ACT_RELU || act == MTE_ACT_RELU6) {
    v = v_sel(v <= v_splat(0.0f), v_splat(0.0f), v);
    if (act == MTE_ACT_RELU6) v = v_sel(v > v_splat(6.0f), v_splat(6.0f), v);
  }
  return v;
}

/* copy n floats (vector body, then the ISA's partial copy or a scalar tail) */
VINLINE void dw_copy(float *MTE_RESTRICT dst, const float *MTE_RESTRICT src, int64_t n) {
  int64_t c = 0;
  for (; c + MTE_VL <= n; c += MTE_VL) v_st(dst + c, v_ld(src + c));
#ifdef DW_COPY_PART
  if (c < n) DW_COPY_PART(dst + c, src + c, n - c);
#else
  for (; c < n; ++c) dst[c] = src[c];
#endif
}

/* padded row from input row xr into the ring slot dst (S phase rows of wq floats) */
VINLINE void dw_build_row(const float *MTE_RESTRICT xr, const mte_dw_geom *g,
                          float *MTE_RESTRICT dst, const int S) {
  const int p = g->pad;
  const int64_t W = g->W;
  if (S == 1) {
    dw_copy(dst + p, xr, W);
    return;
  }
  /* input column c sits at padded column c + p: phase (c + p) % 2, index (c + p) / 2 */
  float *MTE_RESTRICT ev = dst + ((p & 1) ? g->wq : 0) + p / 2;       /* columns 2m */
  float *MTE_RESTRICT od = dst + ((p & 1) ? 0 : g->wq) + (p + 1) / 2; /* columns 2m+1 */
  const int64_t half = W / 2;
#ifdef DW_DEINTERLEAVE
  if (DW_DEINTERLEAVE(ev, od, xr, W)) return;
#endif
  for (int64_t m = 0; m < half; ++m) {
    ev[m] = xr[2 * m];
    od[m] = xr[2 * m + 1];
  }
  if (W & 1) ev[half] = xr[W - 1];
}

/* Build padded rows up to `need` (exclusive; at most `rows` past the first row still read);
 * slot[k] = the row held by ring slot k; *next = the slot of row *built (no divisions). */
VINLINE void dw_fill_ring(const float *MTE_RESTRICT x, const mte_dw_geom *g,
                          const float *zeros, float *ring, const float **slot, int64_t *built,
                          int *next, int64_t need, const int S) {
  for (; *built < need; ++*built) {
    const int64_t h = *built - g->pad;
    if (h >= 0 && h < g->H) {
      float *buf = ring + *next * S * g->wq;
      dw_build_row(x + h * g->W, g, buf, S);
      slot[*next] = buf;
    } else {
      slot[*next] = zeros;
    }
    if (++*next == g->rows) *next = 0;
  }
}

/* one output vector at column s0: K chains of K FMAs (constant K, S: fully unrolled) */
VINLINE vf dw_vec(const float *const *R, const vf *wv, vf vb, int64_t wq, int64_t s0,
                  const int K, const int S) {
  vf acc[MTE_DW_MAX_K];
#pragma GCC unroll 8
  for (int i = 0; i < K; ++i) {
    const float *r = R[i] + s0;
    vf a = i == 0 ? vb : v_splat(0.0f);
#pragma GCC unroll 8
    for (int j = 0; j < K; ++j) a += wv[i * K + j] * v_ld(r + (j % S) * wq + j / S);
    acc[i] = a;
  }
  /* pairwise, so the chains stay independent */
#pragma GCC unroll 8
  for (int step = 1; step < K; step *= 2)
#pragma GCC unroll 8
    for (int i = 0; i + step < K; i += 2 * step) acc[i] += acc[i + step];
  return acc[0];
}

VINLINE void dw_plane_ks(const float *MTE_RESTRICT x, const mte_dw_geom *g, const float *w,
                         float bias, int act, const float *zeros, float *MTE_RESTRICT ring,
                         float *MTE_RESTRICT y, const int K, const int S) {
  vf wv[MTE_DW_MAX_K * MTE_DW_MAX_K];
#pragma GCC unroll 64
  for (int k = 0; k < K * K; ++k) wv[k] = v_splat(w[k]);
  const vf vb = v_splat(bias);
  const float *slot[MTE_DW_MAX_ROWS], *R[MTE_DW_MAX_K];
  const int64_t Ho = g->Ho, Wo = g->Wo, wq = g->wq;
  int64_t built = 0;
  int next = 0, first = 0; /* ring slots of rows `built` and r*S */
  const int64_t hp = (Ho - 1) * S + K; /* padded rows read */
  for (int64_t r = 0; r < Ho; ++r) {
    dw_fill_ring(x, g, zeros, ring, slot, &built, &next,
                 r * S + g->rows < hp ? r * S + g->rows : hp, S);
#pragma GCC unroll 8
    for (int i = 0, k = first; i < K; ++i, k = k + 1 == g->rows ? 0 : k + 1) R[i] = slot[k];
    first = first + S >= g->rows ? first + S - g->rows : first + S;
    float *MTE_RESTRICT yr = y + r * Wo;
    if (Wo >= MTE_VL) {
      int64_t s0 = 0;
      for (; s0 + MTE_VL <= Wo; s0 += MTE_VL)
        v_st(yr + s0, dw_act(dw_vec(R, wv, vb, wq, s0, K, S), act));
      if (s0 < Wo) /* the last vector ends at the row's end */
        v_st(yr + Wo - MTE_VL, dw_act(dw_vec(R, wv, vb, wq, Wo - MTE_VL, K, S), act));
    } else {
      DW_STORE_PART(yr, dw_act(dw_vec(R, wv, vb, wq, 0, K, S), act), Wo);
    }
  }
}

/* any K (run time), the same loop: one chain per kernel row */
static void dw_plane_any(const float *MTE_RESTRICT x, const mte_dw_geom *g, const float *w,
                         float bias, int act, const float *zeros, float *MTE_RESTRICT ring,
                         float *MTE_RESTRICT y, const int S) {
  const int K = g->K;
  const vf vb = v_splat(bias);
  const float *slot[MTE_DW_MAX_ROWS], *R[MTE_DW_MAX_K];
  const int64_t Ho = g->Ho, Wo = g->Wo, wq = g->wq;
  int64_t built = 0;
  int next = 0, first = 0; /* ring slots of rows `built` and r*S */
  const int64_t hp = (Ho - 1) * S + K; /* padded rows read */
  for (int64_t r = 0; r < Ho; ++r) {
    dw_fill_ring(x, g, zeros, ring, slot, &built, &next,
                 r * S + g->rows < hp ? r * S + g->rows : hp, S);
    for (int i = 0, k = first; i < K; ++i, k = k + 1 == g->rows ? 0 : k + 1) R[i] = slot[k];
    first = first + S >= g->rows ? first + S - g->rows : first + S;
    float *MTE_RESTRICT yr = y + r * Wo;
    for (int64_t s = 0; s < Wo; s += MTE_VL) {
      const int64_t s0 = Wo < MTE_VL ? 0 : (s + MTE_VL <= Wo ? s : Wo - MTE_VL);
      vf even = vb, odd = v_splat(0.0f);
      for (int i = 0; i < K; ++i) {
        vf a = v_splat(0.0f);
        for (int j = 0; j < K; ++j)
          a += v_splat(w[i * K + j]) * v_ld(R[i] + s0 + (j % S) * wq + j / S);
        if (i & 1)
          odd += a;
        else
          even += a;
      }
      const vf v = dw_act(even + odd, act);
      if (Wo < MTE_VL)
        DW_STORE_PART(yr, v, Wo);
      else
        v_st(yr + s0, v);
    }
  }
}

static void dw_plane(const float *MTE_RESTRICT x, const mte_dw_geom *g, const float *w,
                     float bias, int act, const float *zeros, float *MTE_RESTRICT ring,
                     float *MTE_RESTRICT y) {
#ifdef DW_PLANE_FIRST /* the ISA's own kernel for the K it specialises */
  if (DW_PLANE_FIRST(x, g, w, bias, act, y)) return;
#endif
#define DW_CASE(k, s) \
  if (g->K == k && g->S == s) {                                                     \
    dw_plane_ks(x, g, w, bias, act, zeros, ring, y, k, s);                          \
    return;                                                                         \
  }
  DW_CASE(3, 1) DW_CASE(3, 2) DW_CASE(5, 1) DW_CASE(5, 2) DW_CASE(7, 1) DW_CASE(7, 2)
#undef DW_CASE
  if (g->S == 1)
    dw_plane_any(x, g, w, bias, act, zeros, ring, y, 1);
  else
    dw_plane_any(x, g, w, bias, act, zeros, ring, y, 2);
}

const mte_dw_kernel MTE_DW_TABLE = {MTE_DW_ISA, MTE_VL, dw_plane};
