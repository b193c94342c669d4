/*
 * depthwise_strip_body.h - one vertical strip of a K x K depthwise plane (K, S constant),
 * rolled down the plane, written once over DS_* macros (a vector type, its masked loads and
 * stores, FMA, the even/odd split of two vectors): x86_avx512/depthwise.c includes it for
 * 512-bit and for 256-bit (AVX-512VL) registers, x86_avx2/depthwise.c for AVX2 (vector
 * masks). DS_COLS(off, W) is the mask of lanes l whose column off + l lies in 0 .. W-1.
 *
 * The strip is DS_L output columns wide (from column s0). Padded input rows are taken in
 * groups of S (group t = padded rows S*t .. S*t+S-1); output row r reads padded rows
 * S*r .. S*r+K-1, so group t feeds the D+1 output rows t-D .. t (D = (K-1)/S), kept in
 * D+1 accumulators, and row t-D is complete after it:
 *
 *     for every input row of group t:   the K taps of the row are loaded once (masked loads
 *         straight from x: lanes outside the row read zero, which is the column padding),
 *         and each tap meets the D+1 accumulators (tap j of kernel row i of each);
 *     store accumulator D (output row t-D), shift the others down, start row t+1 at bias.
 *
 * So an output row costs S input rows of K loads (stride 2: K/2+1 pairs of loads split into
 * even and odd columns by vpermt2ps) and K*K FMAs; weights stay in registers for K <= 5.
 * Rows of padding are never loaded: in the first and last groups (and only there) a test
 * skips them (and the store of output rows outside the plane); the middle groups run
 * without tests. A strip does K*K FMAs per group that holds input rows (the dense count
 * Ho*K*K when the padding keeps the size; accumulators of output rows outside the plane
 * take their FMAs and are dropped). Optional DS_PREFETCH(p) fetches the strip's columns of
 * the row DS_AHEAD rows below: on wide planes (112 columns) the rows a strip walks down are
 * not in L1 and the hardware prefetcher misses the pattern (2x without it). At stride 2
 * the two rows of a group add into separate accumulators (summed at the store), so no
 * chain of dependent FMAs is longer than K per group.
 */
#define DS_CAT2(a, b) a##b
#define DS_CAT(a, b) DS_CAT2(a, b)
#define DS_FN(name) DS_CAT(name, DS_SUFFIX)

/* ReLU / ReLU6; max(0, v) returns v when v is NaN, so NaN stays */
INLINE DS_V DS_FN(ds_act)(DS_V v, int act) {
  if (act == MTE_ACT_RELU) return DS_MAX(DS_ZERO(), v);
  if (act == MTE_ACT_RELU6) return DS_MIN(DS_SET1(6.0f), DS_MAX(DS_ZERO(), v));
  return v;
}

/* one group t of padded rows (C: the first and last groups, which skip padding rows;
 * accumulators of output rows outside the plane take their FMAs and are never stored) */
INLINE void DS_FN(ds_group)(const float *MTE_RESTRICT x, const mte_dw_geom *g, int64_t t,
                            int64_t s0, const DS_V *wv, const DS_M *mk,
                            DS_V *acc, DS_V *acc2, const int K, const int S, const int C) {
  const int D = (K - 1) / S;
  const int64_t H = g->H, W = g->W;
  const int pad = g->pad;
#pragma GCC unroll 2
  for (int e = 0; e < S; ++e) {
    const int64_t h = S * t + e - pad; /* input row */
    if (C && (h < 0 || h >= H)) continue;
    const float *xr = x + h * W;
    DS_V *A = e ? acc2 : acc;
#ifdef DS_PREFETCH /* the strip's columns DS_AHEAD rows below */
    if (!C) DS_PREFETCH(xr + DS_AHEAD * W + S * s0 - pad);
#endif
    if (S == 1) {
#pragma GCC unroll 8
      for (int j = 0; j < K; ++j) {
        const DS_V tap = DS_LOADM(mk[j], xr + s0 + j - pad);
#pragma GCC unroll 8
        for (int d = 0; d <= D; ++d) A[d] = DS_FMA(wv[d * K + j], tap, A[d]); /* row i = d */
      }
    } else {
      /* pair m: 2L inputs from column 2*s0 + 2m - pad; even lanes tap 2m, odd tap 2m+1 */
#pragma GCC unroll 4
      for (int m = 0; 2 * m < K; ++m) {
        const float *p = xr + 2 * s0 + 2 * m - pad;
        const DS_V a = DS_LOADM(mk[2 * m], p), b = DS_LOADM(mk[2 * m + 1], p + DS_L);
        const DS_V te = DS_EVENS(a, b);
        const DS_V to = 2 * m + 1 < K ? DS_ODDS(a, b) : te;
#pragma GCC unroll 8
        for (int d = 0; d <= D; ++d) {
          const int i = e + 2 * d; /* kernel row */
          if (i >= K) continue;
          A[d] = DS_FMA(wv[i * K + 2 * m], te, A[d]);
          if (2 * m + 1 < K) A[d] = DS_FMA(wv[i * K + 2 * m + 1], to, A[d]);
        }
      }
    }
  }
}

/* store output row t - D if it is in the plane, shift the accumulators, start row t+1 */
INLINE void DS_FN(ds_retire)(int64_t t, int64_t Ho, int64_t Wo, int64_t s0, DS_M mo, int act,
                             DS_V vb, DS_V *acc, DS_V *acc2, float *MTE_RESTRICT y,
                             const int K, const int S, const int C) {
  const int D = (K - 1) / S;
  const int64_t r = t - D;
  if (!C || (r >= 0 && r < Ho)) {
    const DS_V v = S == 2 ? DS_ADD(acc[D], acc2[D]) : acc[D];
    if (s0 + DS_L <= Wo) /* a whole strip */
      DS_STORE(y + r * Wo + s0, DS_FN(ds_act)(v, act));
    else
      DS_STOREM(y + r * Wo + s0, mo, DS_FN(ds_act)(v, act));
  }
#pragma GCC unroll 8
  for (int d = D; d > 0; --d) acc[d] = acc[d - 1], acc2[d] = acc2[d - 1];
  acc[0] = vb;
  acc2[0] = DS_ZERO();
}

/* the strip of output columns s0 .. s0 + DS_L - 1 (those < Wo are stored) */
INLINE void DS_FN(ds_strip)(const float *MTE_RESTRICT x, const mte_dw_geom *g, int64_t s0,
                            const float *w, float bias, int act, float *MTE_RESTRICT y,
                            const int K, const int S) {
  const int D = (K - 1) / S;
  const int64_t H = g->H, W = g->W, Ho = g->Ho, Wo = g->Wo;
  const int pad = g->pad;
  DS_V wv[DW_FAST_MAX_K * DW_FAST_MAX_K];
#pragma GCC unroll 64
  for (int k = 0; k < K * K; ++k) wv[k] = DS_SET1(w[k]);
  DS_M mk[2 * DW_FAST_MAX_K];
  if (S == 1) {
#pragma GCC unroll 8
    for (int j = 0; j < K; ++j) mk[j] = DS_COLS(s0 + j - pad, W);
  } else {
#pragma GCC unroll 4
    for (int m = 0; 2 * m < K; ++m) {
      const int64_t off = 2 * s0 + 2 * m - pad;
      mk[2 * m] = DS_COLS(off, W);
      mk[2 * m + 1] = DS_COLS(off + DS_L, W);
    }
  }
  const DS_M mo = DS_COLS(s0, Wo);
  const DS_V vb = DS_SET1(bias);
  DS_V acc[DW_FAST_MAX_K], acc2[DW_FAST_MAX_K];
#pragma GCC unroll 8
  for (int d = 0; d <= D; ++d) acc[d] = vb, acc2[d] = DS_ZERO();
  /* groups [lo, hi) need no tests: all their rows are in x, all their output rows in y */
  const int64_t T = Ho + D;
  int64_t lo = (pad + S - 1) / S, hi = H + pad - S < 0 ? 0 : (H + pad - S) / S + 1;
  if (lo < D) lo = D;
  if (hi > Ho) hi = Ho;
  if (lo > T) lo = T;
  if (hi < lo) hi = lo;
  int64_t t = 0;
  for (; t < lo; ++t) {
    DS_FN(ds_group)(x, g, t, s0, wv, mk, acc, acc2, K, S, 1);
    DS_FN(ds_retire)(t, Ho, Wo, s0, mo, act, vb, acc, acc2, y, K, S, 1);
  }
  for (; t < hi; ++t) {
    DS_FN(ds_group)(x, g, t, s0, wv, mk, acc, acc2, K, S, 0);
    DS_FN(ds_retire)(t, Ho, Wo, s0, mo, act, vb, acc, acc2, y, K, S, 0);
  }
  for (; t < T; ++t) {
    DS_FN(ds_group)(x, g, t, s0, wv, mk, acc, acc2, K, S, 1);
    DS_FN(ds_retire)(t, Ho, Wo, s0, mo, act, vb, acc, acc2, y, K, S, 1);
  }
}

#undef DS_FN
#undef DS_CAT
#undef DS_CAT2
