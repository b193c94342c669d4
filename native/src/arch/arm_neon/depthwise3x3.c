/*
 * arm_neon/depthwise3x3.c - depthwise 3x3 plane kernels for NEON (aarch64).
 *
 * The plan of the x86 files: vertical strips one vector (4 columns) wide, each rolled
 * down the plane so an input row's taps are loaded once and serve the three output rows
 * around it; nine FMAs in three chains and one store per output row.
 *
 * NEON has no masked loads, so the borders are handled by where the strips sit, with no
 * per-pixel test:
 *   first strip   the centre taps are loaded; the left taps are the centre vector moved
 *                 up one lane with a zero shifted in (vextq_f32), so column -1 is never read;
 *   last strip    placed at W - 4 so it ends exactly at the edge (it may recompute a few
 *                 outputs of the strip before it: same values, y never aliases x); the
 *                 right taps are the centre vector moved down one lane with a zero behind;
 *   others        three plain unaligned loads.
 * Stride 2: vld2q_f32 deinterleaves 8 inputs into even (centre, x[2s+2k]) and odd (right,
 * x[2s+2k+1]) taps; a second vld2q_f32 one float earlier gives the left taps; at the
 * edges the missing ones are again lane shifts with a zero. Planes narrower than one
 * strip (W < 4, or W < 8 at stride 2) use the portable kernel.
 */
#include "../../mte_depthwise_internal.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#define INLINE static inline __attribute__((always_inline))

INLINE float32x4_t act_v(float32x4_t v, int act) {
  if (act == MTE_ACT_RELU) return vmaxq_f32(v, vdupq_n_f32(0.0f));
  if (act == MTE_ACT_RELU6) return vminq_f32(vmaxq_f32(v, vdupq_n_f32(0.0f)), vdupq_n_f32(6.0f));
  return v;
}

/* bias + the three rows of taps, as three independent FMA chains */
INLINE float32x4_t dw_sum(const float32x4_t *w, float32x4_t b, float32x4_t pa, float32x4_t pb,
                          float32x4_t pd, float32x4_t ca, float32x4_t cb, float32x4_t cd,
                          float32x4_t na, float32x4_t nb, float32x4_t nd) {
  float32x4_t s0 = vfmaq_f32(vfmaq_f32(vfmaq_f32(b, w[0], pa), w[1], pb), w[2], pd);
  float32x4_t s1 = vfmaq_f32(vfmaq_f32(vmulq_f32(w[3], ca), w[4], cb), w[5], cd);
  float32x4_t s2 = vfmaq_f32(vfmaq_f32(vmulq_f32(w[6], na), w[7], nb), w[8], nd);
  return vaddq_f32(vaddq_f32(s0, s1), s2);
}

/* stride 1 taps of 4 outputs at p: lz / rz = the left / right neighbour is padding */
INLINE void taps_s1(const int lz, const int rz, const float *p, float32x4_t *a, float32x4_t *b,
                    float32x4_t *d) {
  const float32x4_t z = vdupq_n_f32(0.0f);
  *b = vld1q_f32(p);
  *a = lz ? vextq_f32(z, *b, 3) : vld1q_f32(p - 1);
  *d = rz ? vextq_f32(*b, z, 1) : vld1q_f32(p + 1);
}

INLINE void strip_s1(const int lz, const int rz, const float *x, int64_t H, int64_t W,
                     int64_t c, const float32x4_t *w, float32x4_t vb, int act,
                     const float *zeros, float *y) {
  const float32x4_t z = vdupq_n_f32(0.0f);
  float32x4_t pa = z, pb = z, pd = z, ca, cb, cd;
  taps_s1(lz, rz, x + c, &ca, &cb, &cd);
  for (int64_t r = 0; r < H; ++r) {
    const float *src = (r + 1 < H ? x + (r + 1) * W : zeros) + c;
    float32x4_t na, nb, nd;
    taps_s1(lz, rz, src, &na, &nb, &nd);
    vst1q_f32(y + r * W + c, act_v(dw_sum(w, vb, pa, pb, pd, ca, cb, cd, na, nb, nd), act));
    pa = ca, pb = cb, pd = cd;
    ca = na, cb = nb, cd = nd;
  }
}

static void plane_s1(const float *MTE_RESTRICT x, int64_t H, int64_t W, const float *wt,
                     float bias, int act, const float *zeros, float *MTE_RESTRICT y) {
  if (W < 4) {
    mte_dw3x3_kernel_generic.stride1(x, H, W, wt, bias, act, zeros, y);
    return;
  }
  float32x4_t w[9];
  for (int k = 0; k < 9; ++k) w[k] = vdupq_n_f32(wt[k]);
  const float32x4_t vb = vdupq_n_f32(bias);
  if (W == 4) {
    strip_s1(1, 1, x, H, W, 0, w, vb, act, zeros, y);
    return;
  }
  strip_s1(1, 0, x, H, W, 0, w, vb, act, zeros, y);
  int64_t c = 4;
  for (; c + 5 <= W; c += 4) strip_s1(0, 0, x, H, W, c, w, vb, act, zeros, y);
  if (c < W) strip_s1(0, 1, x, H, W, W - 4, w, vb, act, zeros, y);
}

/* stride 2 taps of 4 outputs at input column p; kind 0: inside, 1: column -1 is padding,
 * 2: the last right tap is padding (odd W, last strip) */
INLINE void taps_s2(const int kind, const float *p, float32x4_t *l, float32x4_t *c,
                    float32x4_t *r) {
  const float32x4_t z = vdupq_n_f32(0.0f);
  if (kind == 2) {
    const float32x4x2_t v = vld2q_f32(p - 1); /* x[2k-1], x[2k] */
    *l = v.val[0], *c = v.val[1], *r = vextq_f32(v.val[0], z, 1);
  } else {
    const float32x4x2_t v = vld2q_f32(p); /* x[2k], x[2k+1] */
    *c = v.val[0], *r = v.val[1];
    *l = kind == 1 ? vextq_f32(z, v.val[1], 3) : vld2q_f32(p - 1).val[0];
  }
}

INLINE void strip_s2(const int kind, const float *x, int64_t H, int64_t W, int64_t Ho,
                     int64_t Wo, int64_t s, const float32x4_t *w, float32x4_t vb, int act,
                     const float *zeros, float *y) {
  const float32x4_t z = vdupq_n_f32(0.0f);
  float32x4_t pa = z, pb = z, pd = z; /* input row 2r-1 */
  for (int64_t r = 0; r < Ho; ++r) {
    const float *m = x + 2 * r * W + 2 * s;
    const float *n = (2 * r + 1 < H ? x + (2 * r + 1) * W : zeros) + 2 * s;
    float32x4_t ca, cb, cd, na, nb, nd;
    taps_s2(kind, m, &ca, &cb, &cd);
    taps_s2(kind, n, &na, &nb, &nd);
    vst1q_f32(y + r * Wo + s, act_v(dw_sum(w, vb, pa, pb, pd, ca, cb, cd, na, nb, nd), act));
    pa = na, pb = nb, pd = nd;
  }
}

static void plane_s2(const float *MTE_RESTRICT x, int64_t H, int64_t W, const float *wt,
                     float bias, int act, const float *zeros, float *MTE_RESTRICT y) {
  if (W < 8) {
    mte_dw3x3_kernel_generic.stride2(x, H, W, wt, bias, act, zeros, y);
    return;
  }
  const int64_t Ho = (H - 1) / 2 + 1, Wo = (W - 1) / 2 + 1;
  float32x4_t w[9];
  for (int k = 0; k < 9; ++k) w[k] = vdupq_n_f32(wt[k]);
  const float32x4_t vb = vdupq_n_f32(bias);
  /* s = 0 reads x[0..7] (W >= 8); a last strip at Wo - 4 >= 1 reads up to x[W-1] */
  strip_s2(1, x, H, W, Ho, Wo, 0, w, vb, act, zeros, y);
  int64_t s = 4;
  for (; 2 * s + 8 <= W; s += 4) strip_s2(0, x, H, W, Ho, Wo, s, w, vb, act, zeros, y);
  if (s < Wo) strip_s2(W % 2 ? 2 : 0, x, H, W, Ho, Wo, Wo - 4, w, vb, act, zeros, y);
}

/* ---------------------------------------------------------------- weight gradient */

/* acc[3i+j] += g * tap j of kernel row i, for one input row's taps (a, b, d) */
INLINE void wg_row(float32x4_t *acc, int i, float32x4_t g, float32x4_t a, float32x4_t b,
                   float32x4_t d) {
  acc[3 * i] = vfmaq_f32(acc[3 * i], g, a);
  acc[3 * i + 1] = vfmaq_f32(acc[3 * i + 1], g, b);
  acc[3 * i + 2] = vfmaq_f32(acc[3 * i + 2], g, d);
}

/* g with its first `skip` lanes zeroed (an overlapping last strip must not count twice) */
INLINE float32x4_t drop_lanes(float32x4_t g, int64_t skip) {
  const int32x4_t lane = {0, 1, 2, 3};
  return vbslq_f32(vcgeq_s32(lane, vdupq_n_s32((int32_t)skip)), g, vdupq_n_f32(0.0f));
}

/* stride 1, one strip: input row h meets gradient rows h+1, h, h-1 (kernel rows 0, 1, 2) */
INLINE void wgrad_strip_s1(const int lz, const int rz, const float *gy, const float *x,
                           int64_t H, int64_t W, int64_t c, int64_t skip, const float *zeros,
                           float32x4_t *acc) {
  float32x4_t gp = vdupq_n_f32(0.0f), gc = drop_lanes(vld1q_f32(gy + c), skip);
  for (int64_t h = 0; h < H; ++h) {
    float32x4_t a, b, d;
    taps_s1(lz, rz, x + h * W + c, &a, &b, &d);
    const float32x4_t gn =
        drop_lanes(vld1q_f32((h + 1 < H ? gy + (h + 1) * W : zeros) + c), skip);
    wg_row(acc, 0, gn, a, b, d);
    wg_row(acc, 1, gc, a, b, d);
    wg_row(acc, 2, gp, a, b, d);
    gp = gc, gc = gn;
  }
}

static void wgrad_s1(const float *gy, const float *x, int64_t H, int64_t W, const float *zeros,
                     float *gw9) {
  if (W < 4) {
    mte_dw3x3_kernel_generic.wgrad1(gy, x, H, W, zeros, gw9);
    return;
  }
  float32x4_t acc[9];
#pragma GCC unroll 9 /* constant indices keep acc[] in registers */
  for (int k = 0; k < 9; ++k) acc[k] = vdupq_n_f32(0.0f);
  if (W == 4) {
    wgrad_strip_s1(1, 1, gy, x, H, W, 0, 0, zeros, acc);
  } else {
    wgrad_strip_s1(1, 0, gy, x, H, W, 0, 0, zeros, acc);
    int64_t c = 4;
    for (; c + 5 <= W; c += 4) wgrad_strip_s1(0, 0, gy, x, H, W, c, 0, zeros, acc);
    if (c < W) wgrad_strip_s1(0, 1, gy, x, H, W, W - 4, c - (W - 4), zeros, acc);
  }
#pragma GCC unroll 9
  for (int k = 0; k < 9; ++k) gw9[k] = vaddvq_f32(acc[k]);
}

/* stride 2, one strip: gradient row r meets input rows 2r-1, 2r, 2r+1 */
INLINE void wgrad_strip_s2(const int kind, const float *gy, const float *x, int64_t H, int64_t W,
                           int64_t Ho, int64_t Wo, int64_t s, int64_t skip, const float *zeros,
                           float32x4_t *acc) {
  float32x4_t pa = vdupq_n_f32(0.0f), pb = pa, pd = pa;
  for (int64_t r = 0; r < Ho; ++r) {
    const float *m = x + 2 * r * W + 2 * s;
    const float *n = (2 * r + 1 < H ? x + (2 * r + 1) * W : zeros) + 2 * s;
    float32x4_t ca, cb, cd, na, nb, nd;
    taps_s2(kind, m, &ca, &cb, &cd);
    taps_s2(kind, n, &na, &nb, &nd);
    const float32x4_t g = drop_lanes(vld1q_f32(gy + r * Wo + s), skip);
    wg_row(acc, 0, g, pa, pb, pd);
    wg_row(acc, 1, g, ca, cb, cd);
    wg_row(acc, 2, g, na, nb, nd);
    pa = na, pb = nb, pd = nd;
  }
}

static void wgrad_s2(const float *gy, const float *x, int64_t H, int64_t W, const float *zeros,
                     float *gw9) {
  if (W < 8) {
    mte_dw3x3_kernel_generic.wgrad2(gy, x, H, W, zeros, gw9);
    return;
  }
  const int64_t Ho = (H - 1) / 2 + 1, Wo = (W - 1) / 2 + 1;
  float32x4_t acc[9];
#pragma GCC unroll 9 /* constant indices keep acc[] in registers */
  for (int k = 0; k < 9; ++k) acc[k] = vdupq_n_f32(0.0f);
  wgrad_strip_s2(1, gy, x, H, W, Ho, Wo, 0, 0, zeros, acc);
  int64_t s = 4;
  for (; 2 * s + 8 <= W; s += 4) wgrad_strip_s2(0, gy, x, H, W, Ho, Wo, s, 0, zeros, acc);
  if (s < Wo) wgrad_strip_s2(W % 2 ? 2 : 0, gy, x, H, W, Ho, Wo, Wo - 4, s - (Wo - 4), zeros, acc);
#pragma GCC unroll 9
  for (int k = 0; k < 9; ++k) gw9[k] = vaddvq_f32(acc[k]);
}

/* ---------------------------------------------------------------- input gradient, stride 2 */

/* Per 4 gradient columns m, even input columns 2m get g[m]*w1, odd ones g[m]*w2 +
 * g[m+1]*w0, stored interleaved by vst2q_f32. Where g[m+4] or column 2m+7 would be past
 * the edge, the row ends in scalar code. */
static void bwd_input_s2(const float *MTE_RESTRICT gy, int64_t H, int64_t W, const float *w,
                         float *MTE_RESTRICT gx) {
  const int64_t Ho = (H - 1) / 2 + 1, Wo = (W - 1) / 2 + 1;
  for (int64_t h = 0; h < H; ++h) {
    const float *g[2], *wr[2];
    int n = 0;
    if (h % 2 == 0) {
      g[n] = gy + (h / 2) * Wo, wr[n++] = w + 3;
    } else {
      if ((h + 1) / 2 < Ho) g[n] = gy + ((h + 1) / 2) * Wo, wr[n++] = w;
      g[n] = gy + ((h - 1) / 2) * Wo, wr[n++] = w + 6;
    }
    float *o = gx + h * W;
    int64_t m = 0;
    for (; m + 5 <= Wo && 2 * m + 8 <= W; m += 4) {
      float32x4x2_t v = {{vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)}};
      for (int q = 0; q < n; ++q) {
        const float32x4_t gc = vld1q_f32(g[q] + m), gn = vld1q_f32(g[q] + m + 1);
        v.val[0] = vfmaq_n_f32(v.val[0], gc, wr[q][1]);
        v.val[1] = vfmaq_n_f32(vfmaq_n_f32(v.val[1], gc, wr[q][2]), gn, wr[q][0]);
      }
      vst2q_f32(o + 2 * m, v);
    }
    for (; m < Wo; ++m) {
      float ev = 0.0f, od = 0.0f;
      for (int q = 0; q < n; ++q) {
        ev += g[q][m] * wr[q][1];
        od += g[q][m] * wr[q][2] + (m + 1 < Wo ? g[q][m + 1] * wr[q][0] : 0.0f);
      }
      o[2 * m] = ev;
      if (2 * m + 1 < W) o[2 * m + 1] = od;
    }
  }
}

const mte_dw3x3_kernel mte_dw3x3_kernel_neon = {"neon", plane_s1, plane_s2, wgrad_s1, wgrad_s2,
                                                bwd_input_s2};

#endif /* __aarch64__ */
