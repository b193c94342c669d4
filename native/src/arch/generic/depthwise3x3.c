/*
 * generic/depthwise3x3.c - portable C depthwise 3x3 plane kernels (the reference and the
 * fallback on CPUs without a vector kernel).
 *
 * One output row at a time from three input row pointers (a row outside the plane points
 * at the zero buffer, so rows never need a test). Columns split into the interior, whose
 * taps all lie inside the row (a branch-free loop the compiler vectorises), and the one or
 * two edge columns on each side, computed with bounds checks. The weight gradient is nine
 * dot products per output row, each in 8 lanes the compiler can vectorise.
 */
#include "../../mte_depthwise_internal.h"

/* one output column s with every tap checked against [0, W) */
static inline float edge_col(const float *const r[3], int64_t W, const float *w, int64_t s,
                             int stride, float bias) {
  float acc = bias;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      int64_t col = s * stride + j - 1;
      if (col >= 0 && col < W) acc += w[3 * i + j] * r[i][col];
    }
  return acc;
}

static void plane(const float *MTE_RESTRICT x, int64_t H, int64_t W, const float *w, float bias,
                  int act, const float *zeros, float *MTE_RESTRICT y, int stride) {
  const int64_t Ho = (H - 1) / stride + 1, Wo = (W - 1) / stride + 1;
  /* interior columns [1, s_hi): taps s*stride-1 .. s*stride+1 inside [0, W) */
  int64_t s_hi = (W - 2) / stride + 1;
  if (s_hi < 1) s_hi = 1;
  if (s_hi > Wo) s_hi = Wo;
  const float w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4], w5 = w[5], w6 = w[6],
              w7 = w[7], w8 = w[8];
  for (int64_t r = 0; r < Ho; ++r) {
    const float *rows[3];
    for (int i = 0; i < 3; ++i) {
      int64_t h = r * stride + i - 1;
      rows[i] = (h >= 0 && h < H) ? x + h * W : zeros;
    }
    const float *MTE_RESTRICT a = rows[0], *MTE_RESTRICT b = rows[1], *MTE_RESTRICT c = rows[2];
    float *MTE_RESTRICT out = y + r * Wo;
    out[0] = edge_col(rows, W, w, 0, stride, bias);
    if (stride == 1) {
      for (int64_t s = 1; s < s_hi; ++s)
        out[s] = bias + w0 * a[s - 1] + w1 * a[s] + w2 * a[s + 1] + w3 * b[s - 1] + w4 * b[s] +
                 w5 * b[s + 1] + w6 * c[s - 1] + w7 * c[s] + w8 * c[s + 1];
    } else {
      for (int64_t s = 1; s < s_hi; ++s) {
        int64_t m = 2 * s;
        out[s] = bias + w0 * a[m - 1] + w1 * a[m] + w2 * a[m + 1] + w3 * b[m - 1] + w4 * b[m] +
                 w5 * b[m + 1] + w6 * c[m - 1] + w7 * c[m] + w8 * c[m + 1];
      }
    }
    for (int64_t s = s_hi; s < Wo; ++s) out[s] = edge_col(rows, W, w, s, stride, bias);
    if (act != MTE_ACT_NONE)
      for (int64_t s = 0; s < Wo; ++s) out[s] = mte__dw_act(out[s], act);
  }
}

static void plane_s1(const float *MTE_RESTRICT x, int64_t H, int64_t W, const float *w,
                     float bias, int act, const float *zeros, float *MTE_RESTRICT y) {
  plane(x, H, W, w, bias, act, zeros, y, 1);
}

static void plane_s2(const float *MTE_RESTRICT x, int64_t H, int64_t W, const float *w,
                     float bias, int act, const float *zeros, float *MTE_RESTRICT y) {
  plane(x, H, W, w, bias, act, zeros, y, 2);
}

/* sum_s g[s] * xr[s*stride + off] over s in [lo, hi), in 8 independent lanes (vectorisable
 * without reassociating) */
static float dot_strided(const float *MTE_RESTRICT g, const float *MTE_RESTRICT xr, int64_t lo,
                         int64_t hi, int stride, int64_t off) {
  float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t s = lo;
  if (stride == 1) {
    const float *MTE_RESTRICT xs = xr + off;
    for (; s + 8 <= hi; s += 8)
      for (int q = 0; q < 8; ++q) lane[q] += g[s + q] * xs[s + q];
  } else {
    for (; s + 8 <= hi; s += 8)
      for (int q = 0; q < 8; ++q) lane[q] += g[s + q] * xr[2 * (s + q) + off];
  }
  float tail = 0.0f;
  for (; s < hi; ++s) tail += g[s] * xr[s * stride + off];
  return ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7])) +
         tail;
}

/* 9 dot products per output row between gradient rows and shifted input rows */
static void wgrad(const float *gy, const float *x, int64_t H, int64_t W, float *gw9, int stride) {
  const int64_t Ho = (H - 1) / stride + 1, Wo = (W - 1) / stride + 1;
  int64_t lo[3], hi[3]; /* valid s for tap column j: 0 <= s*stride + j - 1 < W */
  for (int j = 0; j < 3; ++j) {
    lo[j] = j == 0 ? 1 : 0;
    hi[j] = W - j < 0 ? 0 : (W - j) / stride + 1;
    if (hi[j] > Wo) hi[j] = Wo;
  }
  for (int k = 0; k < 9; ++k) gw9[k] = 0.0f;
  for (int64_t r = 0; r < Ho; ++r)
    for (int i = 0; i < 3; ++i) {
      const int64_t h = r * stride + i - 1;
      if (h < 0 || h >= H) continue;
      for (int j = 0; j < 3; ++j)
        if (lo[j] < hi[j])
          gw9[3 * i + j] += dot_strided(gy + r * Wo, x + h * W, lo[j], hi[j], stride, j - 1);
    }
}

static void wgrad_s1(const float *gy, const float *x, int64_t H, int64_t W, const float *zeros,
                     float *gw9) {
  (void)zeros;
  wgrad(gy, x, H, W, gw9, 1);
}

static void wgrad_s2(const float *gy, const float *x, int64_t H, int64_t W, const float *zeros,
                     float *gw9) {
  (void)zeros;
  wgrad(gy, x, H, W, gw9, 2);
}

/*
 * gx of one plane for stride 2. Row h gets output row h/2 through kernel row 1 when h is
 * even, rows (h+1)/2 (kernel row 0) and (h-1)/2 (kernel row 2) when h is odd; within a
 * row, even column 2m gets g[m]*w1 and odd column 2m+1 gets g[m]*w2 + g[m+1]*w0. The even
 * and odd columns are built as two contiguous runs (loops the compiler vectorises) and
 * interleaved into the row.
 */
#define BWD_CHUNK 256
static void bwd_input_s2(const float *MTE_RESTRICT gy, int64_t H, int64_t W,
                               const float *w, float *MTE_RESTRICT gx) {
  const int64_t Ho = (H - 1) / 2 + 1, Wo = (W - 1) / 2 + 1;
  float ev[BWD_CHUNK], od[BWD_CHUNK];
  for (int64_t h = 0; h < H; ++h) {
    const float *g[2];
    const float *wr[2];
    int n = 0;
    if (h % 2 == 0) {
      g[n] = gy + (h / 2) * Wo, wr[n++] = w + 3;
    } else {
      if ((h + 1) / 2 < Ho) g[n] = gy + ((h + 1) / 2) * Wo, wr[n++] = w;
      g[n] = gy + ((h - 1) / 2) * Wo, wr[n++] = w + 6;
    }
    float *MTE_RESTRICT o = gx + h * W;
    for (int64_t m0 = 0; m0 < Wo; m0 += BWD_CHUNK) {
      const int64_t cnt = Wo - m0 < BWD_CHUNK ? Wo - m0 : BWD_CHUNK;
      for (int64_t m = 0; m < cnt; ++m) ev[m] = od[m] = 0.0f;
      for (int q = 0; q < n; ++q) {
        const float *MTE_RESTRICT gr = g[q] + m0;
        const float a = wr[q][0], b = wr[q][1], c = wr[q][2];
        for (int64_t m = 0; m + 1 < cnt; ++m) {
          ev[m] += gr[m] * b;
          od[m] += gr[m] * c + gr[m + 1] * a;
        }
        const float next = m0 + cnt < Wo ? gr[cnt] : 0.0f;
        ev[cnt - 1] += gr[cnt - 1] * b;
        od[cnt - 1] += gr[cnt - 1] * c + next * a;
      }
      /* columns 2(m0+m) and 2(m0+m)+1; the very last odd one may lie past W */
      const int64_t pairs = (W - 2 * m0) / 2 < cnt ? (W - 2 * m0) / 2 : cnt;
      float *MTE_RESTRICT oc = o + 2 * m0;
      for (int64_t m = 0; m < pairs; ++m) oc[2 * m] = ev[m], oc[2 * m + 1] = od[m];
      if (pairs < cnt) oc[2 * pairs] = ev[pairs];
    }
  }
}

const mte_dw3x3_kernel mte_dw3x3_kernel_generic = {"generic", plane_s1, plane_s2, wgrad_s1,
                                                   wgrad_s2, bwd_input_s2};
