/*
 * mte_winograd_transforms.h - the Winograd transforms F(4x4,3x3) and F(2x2,3x3), written
 * once over a vector of VL independent lanes (GNU C vector extension) and compiled once per
 * ISA: an arch/<isa>/winograd_transforms.c defines MTE_WINO_VL, MTE_WINO_ISA and
 * MTE_WINO_TABLE, then includes this file (see mte_winograd_internal.h for the lanes).
 *
 * The matrices (derived in minitorch_edge/backend/winograd.py from the points 0, 1, -1, 2,
 * -2, inf; each row of B^T scaled to small integers with a positive first entry, G taking
 * the inverse scale):
 *
 *   F(4,3)  B^T = [4  0 -5  0  1  0]   G = [ 1/4     0     0  ]   A^T = [1 1  1 1  1 0]
 *                 [0  4  4 -1 -1  0]       [ 1/6   1/6   1/6  ]         [0 1 -1 2 -2 0]
 *                 [0  4 -4 -1  1  0]       [-1/6   1/6  -1/6  ]         [0 1  1 4  4 0]
 *                 [0  2  1 -2 -1  0]       [-1/24 -1/12 -1/6  ]         [0 1 -1 8 -8 1]
 *                 [0  2 -1 -2  1  0]       [ 1/24 -1/12  1/6  ]
 *                 [0  4  0 -5  0  1]       [ 0     0     1    ]
 *
 *   F(2,3)  B^T = [1  0 -1  0]         G = [ 1    0    0  ]        A^T = [1 1  1 0]
 *                 [0  1  1  0]             [ 1/2  1/2  1/2]              [0 1 -1 1]
 *                 [0  1 -1  0]             [-1/2  1/2 -1/2]
 *                 [0  1  0 -1]             [ 0    0   -1  ]
 *
 * A 2-D transform X^T d X is the 1-D one applied to every column, then to every row.
 * Tails (fewer than VL lanes) go through a small zero-padded buffer on the stack, so no
 * lane ever reads or writes outside the caller's arrays.
 *
 * Hook: an arch file may define MTE_WINO_STORE_BLOCKS(m, res, n, y, plane, ldy, hi, wj), a
 * function that writes the m x m blocks of lanes k < n (res[(i*m + j)*VL + k], 64-byte
 * aligned) to y[k*plane + i*ldy + j] (i < hi, j < wj) with an in-register transpose, and
 * returns 0 for the cases it leaves to the portable scalar loop here.
 */
#include <string.h>

#include "mte_internal.h"
#include "mte_winograd_internal.h"

#ifndef MTE_WINO_VL
#error "define MTE_WINO_VL (lanes), MTE_WINO_ISA (name) and MTE_WINO_TABLE before including"
#endif

#define VL MTE_WINO_VL
typedef float vf __attribute__((vector_size(VL * sizeof(float))));

static inline vf ld(const float *p) {
  vf v;
  memcpy(&v, p, sizeof v); /* an unaligned vector load */
  return v;
}
static inline void st(float *p, vf v) { memcpy(p, &v, sizeof v); }
static inline vf splat(float s) { return (vf){0} + s; }

/* ---------------------------------------------------------------- 1-D transforms */

/* o = B^T x for F(4,3) (6 -> 6), strides in elements of o and x */
#define BT6(o, os, x, xs)                                                  \
  do {                                                                     \
    vf x0_ = x[0], x1_ = x[xs], x2_ = x[2 * xs], x3_ = x[3 * xs];              \
    vf x4_ = x[4 * xs], x5_ = x[5 * xs];                                     \
    vf p_ = 4.0f * x1_ - x3_, q_ = 4.0f * x2_ - x4_; /* shared by rows 1 and 2 */ \
    vf r_ = 2.0f * (x1_ - x3_), s_ = x2_ - x4_;      /* shared by rows 3 and 4 */ \
    o[0] = 4.0f * x0_ - 5.0f * x2_ + x4_;                                     \
    o[os] = p_ + q_;                                                         \
    o[2 * os] = p_ - q_;                                                     \
    o[3 * os] = r_ + s_;                                                     \
    o[4 * os] = r_ - s_;                                                     \
    o[5 * os] = 4.0f * x1_ - 5.0f * x3_ + x5_;                                \
  } while (0)

/* o = A^T x for F(4,3) (6 -> 4) */
#define AT6(o, os, x, xs)                                   \
  do {                                                      \
    vf a_ = x[xs] + x[2 * xs], b_ = x[xs] - x[2 * xs];        \
    vf c_ = x[3 * xs] + x[4 * xs], d_ = x[3 * xs] - x[4 * xs]; \
    o[0] = x[0] + a_ + c_;                                    \
    o[os] = b_ + 2.0f * d_;                                   \
    o[2 * os] = a_ + 4.0f * c_;                               \
    o[3 * os] = b_ + 8.0f * d_ + x[5 * xs];                   \
  } while (0)

/* o = G x for F(4,3) (3 -> 6) */
#define G6(o, os, x, xs)                                        \
  do {                                                          \
    vf g0_ = x[0], g1_ = x[xs], g2_ = x[2 * xs];                   \
    vf e_ = g0_ + g2_, f_ = g0_ + 4.0f * g2_;                         \
    o[0] = 0.25f * g0_;                                          \
    o[os] = (1.0f / 6.0f) * (e_ + g1_);                           \
    o[2 * os] = (1.0f / 6.0f) * (g1_ - e_);                       \
    o[3 * os] = (-1.0f / 24.0f) * (f_ + 2.0f * g1_);              \
    o[4 * os] = (1.0f / 24.0f) * (f_ - 2.0f * g1_);               \
    o[5 * os] = g2_;                                             \
  } while (0)

/* F(2,3): B^T (4 -> 4), A^T (4 -> 2), G (3 -> 4) */
#define BT4(o, os, x, xs)         \
  do {                            \
    o[0] = x[0] - x[2 * xs];      \
    o[os] = x[xs] + x[2 * xs];    \
    o[2 * os] = x[xs] - x[2 * xs]; \
    o[3 * os] = x[xs] - x[3 * xs]; \
  } while (0)
#define AT4(o, os, x, xs)                         \
  do {                                            \
    o[0] = x[0] + x[xs] + x[2 * xs];              \
    o[os] = x[xs] - x[2 * xs] + x[3 * xs];        \
  } while (0)
#define G4(o, os, x, xs)                                    \
  do {                                                      \
    vf e_ = x[0] + x[2 * xs];                                \
    o[0] = x[0];                                            \
    o[os] = 0.5f * (e_ + x[xs]);                             \
    o[2 * os] = 0.5f * (x[xs] - e_);                         \
    o[3 * os] = -x[2 * xs];                                 \
  } while (0)

/* ---------------------------------------------------------------- unfold: x -> q */

/* n tiles whose a columns all lie inside the row: dst[j][t] = s[m*t + j], t < n. With m a
 * constant the compiler turns these strided loads into vector shuffles. */
static void unfold_interior4(const float *s, float *const *dst, int64_t n) {
  float *MTE_RESTRICT d0 = dst[0], *MTE_RESTRICT d1 = dst[1], *MTE_RESTRICT d2 = dst[2];
  float *MTE_RESTRICT d3 = dst[3], *MTE_RESTRICT d4 = dst[4], *MTE_RESTRICT d5 = dst[5];
  for (int64_t t = 0; t < n; ++t) {
    d0[t] = s[4 * t], d1[t] = s[4 * t + 1], d2[t] = s[4 * t + 2];
    d3[t] = s[4 * t + 3], d4[t] = s[4 * t + 4], d5[t] = s[4 * t + 5];
  }
}
static void unfold_interior2(const float *s, float *const *dst, int64_t n) {
  float *MTE_RESTRICT d0 = dst[0], *MTE_RESTRICT d1 = dst[1], *MTE_RESTRICT d2 = dst[2];
  float *MTE_RESTRICT d3 = dst[3];
  for (int64_t t = 0; t < n; ++t)
    d0[t] = s[2 * t], d1[t] = s[2 * t + 1], d2[t] = s[2 * t + 2], d3[t] = s[2 * t + 3];
}

/*
 * q for the channel plane xc (H x W) and tile rows th0 .. th0+nr-1 of one image: stream
 * (p, j) (p < m, j < a) at q + (p*a + j)*qs holds, for g = 0..nr and tw < tw_n,
 *     q[(p*a + j)*qs + g*tw_n + tw] = xpad[m*(th0 + g) + p][m*tw + j]
 * where xpad is x surrounded by zeros (ph rows above, pw columns left, and as many zeros
 * below and to the right as the tiles reach).
 */
static void wino_unfold(int m, const float *xc, int64_t H, int64_t W, int64_t ph, int64_t pw,
                        int64_t th0, int64_t nr, int64_t tw_n, float *q, int64_t qs) {
  const int a = m + 2;
  /* tiles whose columns m*tw - pw .. m*tw - pw + a-1 all lie inside [0, W) */
  const int64_t lo = tw_n < (pw + m - 1) / m ? tw_n : (pw + m - 1) / m;
  int64_t hi = W - a + pw >= 0 ? (W - a + pw) / m + 1 : 0;
  hi = hi < lo ? lo : hi > tw_n ? tw_n : hi;
  float *dst[6];
  for (int64_t g = 0; g <= nr; ++g)
    for (int p = 0; p < m; ++p) {
      const int64_t r = m * (th0 + g) + p - ph; /* row of x */
      for (int j = 0; j < a; ++j) dst[j] = q + (p * a + j) * qs + g * tw_n;
      if (r < 0 || r >= H) {
        for (int j = 0; j < a; ++j) memset(dst[j], 0, (size_t)tw_n * sizeof(float));
        continue;
      }
      const float *xr = xc + r * W;
      for (int j = 0; j < a; ++j) { /* the edge tiles, column by column */
        for (int64_t tw = 0; tw < lo; ++tw) {
          const int64_t col = m * tw + j - pw;
          dst[j][tw] = col >= 0 && col < W ? xr[col] : 0.0f;
        }
        for (int64_t tw = hi; tw < tw_n; ++tw) {
          const int64_t col = m * tw + j - pw;
          dst[j][tw] = col >= 0 && col < W ? xr[col] : 0.0f;
        }
      }
      if (lo < hi) { /* the interior, all columns at once */
        float *d[6];
        for (int j = 0; j < a; ++j) d[j] = dst[j] + lo;
        if (m == 4)
          unfold_interior4(xr + m * lo - pw, d, hi - lo);
        else
          unfold_interior2(xr + m * lo - pw, d, hi - lo);
      }
    }
}

/* ---------------------------------------------------------------- input: V = B^T d B */

/* one vector of lanes: src[i*a + j] points at element (i, j) of the lanes' tiles */
static inline void input_vec(int m, const float *const *src, vf *o) {
  vf d[36], t[36];
  if (m == 4) {
    for (int e = 0; e < 36; ++e) d[e] = ld(src[e]);
    for (int j = 0; j < 6; ++j) BT6((t + j), 6, (d + j), 6);        /* columns */
    for (int i = 0; i < 6; ++i) BT6((o + 6 * i), 1, (t + 6 * i), 1); /* rows */
  } else {
    for (int e = 0; e < 16; ++e) d[e] = ld(src[e]);
    for (int j = 0; j < 4; ++j) BT4((t + j), 4, (d + j), 4);
    for (int i = 0; i < 4; ++i) BT4((o + 4 * i), 1, (t + 4 * i), 1);
  }
}

/* Store lanes [0, cnt) of o[e] (e < a2), lane l being tile L = L0 + l, at
 * v + e*vs + (L / mr)*ps + L % mr: the SGEMM microkernel's packed-A layout (panels of mr
 * tiles, one row of mr values per channel). */
static inline void store_packed(const vf *o, int a2, float *v, int64_t vs, int mr, int64_t ps,
                                int64_t L0, int64_t cnt) {
  if (cnt == VL && L0 % mr == 0 && VL % mr == 0) { /* whole panels: plain copies */
    float *dst = v + (L0 / mr) * ps;
    if (mr == VL) {
      for (int e = 0; e < a2; ++e) st(dst + e * vs, o[e]);
      return;
    }
    if (mr == VL / 2) {
      for (int e = 0; e < a2; ++e) {
        memcpy(dst + e * vs, &o[e], sizeof(vf) / 2);
        memcpy(dst + e * vs + ps, (const float *)&o[e] + VL / 2, sizeof(vf) / 2);
      }
      return;
    }
  }
  if (cnt == VL && mr % VL == 0 && L0 % VL == 0) { /* the lanes lie inside one panel */
    float *dst = v + (L0 / mr) * ps + L0 % mr;
    for (int e = 0; e < a2; ++e) st(dst + e * vs, o[e]);
    return;
  }
  int64_t off[VL];
  for (int64_t l = 0; l < cnt; ++l) off[l] = ((L0 + l) / mr) * ps + (L0 + l) % mr;
  for (int e = 0; e < a2; ++e) {
    const float *oe = (const float *)&o[e];
    for (int64_t l = 0; l < cnt; ++l) v[e * vs + off[l]] = oe[l];
  }
}

/* lanes [l, l + cnt) (cnt < VL) through zero-padded buffers */
static void input_part(int m, const float *q, int64_t qs, int64_t row, float *v, int64_t vs,
                       int mr, int64_t ps, int64_t lane0, int64_t l, int64_t cnt) {
  const int a = m + 2;
  float in[36 * VL] __attribute__((aligned(64)));
  const float *src[36];
  vf o[36];
  memset(in, 0, sizeof in);
  for (int i = 0; i < a; ++i)
    for (int j = 0; j < a; ++j) {
      memcpy(in + (i * a + j) * VL, q + ((i % m) * a + j) * qs + (i / m) * row + l,
             (size_t)cnt * sizeof(float));
      src[i * a + j] = in + (i * a + j) * VL;
    }
  input_vec(m, src, o);
  store_packed(o, a * a, v, vs, mr, ps, lane0 + l, cnt);
}

static void wino_input(int m, const float *q, int64_t qs, int64_t row, float *v, int64_t vs,
                       int mr, int64_t ps, int64_t lane0, int64_t n) {
  const int a = m + 2;
  const float *src[36];
  vf o[36];
  /* a few lanes first if needed, so the full vectors start at tiles L that are multiples
   * of VL (then whole vectors go to whole panels) */
  int64_t l = (VL - lane0 % VL) % VL;
  if (l > n) l = n;
  if (l > 0) input_part(m, q, qs, row, v, vs, mr, ps, lane0, 0, l);
  for (; l + VL <= n; l += VL) {
    for (int i = 0; i < a; ++i)
      for (int j = 0; j < a; ++j) src[i * a + j] = q + ((i % m) * a + j) * qs + (i / m) * row + l;
    input_vec(m, src, o);
    store_packed(o, a * a, v, vs, mr, ps, lane0 + l, VL);
  }
  if (l < n) input_part(m, q, qs, row, v, vs, mr, ps, lane0, l, n - l);
}

/* ---------------------------------------------------------------- output: Y = A^T M A */

static void wino_output(int m, const float *mm, int64_t ms, int64_t K, const float *bias,
                        float *y, int64_t plane, int64_t ldy, int hi, int wj) {
  const int a = m + 2;
  float buf[36 * VL] __attribute__((aligned(64)));
  float res[16 * VL] __attribute__((aligned(64)));
  for (int64_t k0 = 0; k0 < K; k0 += VL) {
    const int64_t n = K - k0 < VL ? K - k0 : VL;
    vf x[36], t[24], o[16];
    if (n == VL) {
      for (int e = 0; e < a * a; ++e) x[e] = ld(mm + e * ms + k0);
    } else {
      memset(buf, 0, sizeof buf);
      for (int e = 0; e < a * a; ++e) {
        memcpy(buf + e * VL, mm + e * ms + k0, (size_t)n * sizeof(float));
        x[e] = ld(buf + e * VL);
      }
    }
    vf b = splat(0.0f);
    if (bias) {
      float bb[VL] __attribute__((aligned(64))) = {0};
      memcpy(bb, bias + k0, (size_t)n * sizeof(float));
      b = ld(bb);
    }
    if (m == 4) {
      for (int j = 0; j < 6; ++j) AT6((t + j), 6, (x + j), 6);       /* 4 x 6 */
      for (int i = 0; i < 4; ++i) AT6((o + 4 * i), 1, (t + 6 * i), 1); /* 4 x 4 */
    } else {
      for (int j = 0; j < 4; ++j) AT4((t + j), 4, (x + j), 4);       /* 2 x 4 */
      for (int i = 0; i < 2; ++i) AT4((o + 2 * i), 1, (t + 4 * i), 1); /* 2 x 2 */
    }
    for (int e = 0; e < m * m; ++e) st(res + e * VL, o[e] + b);
    /* lane kk holds channel k0 + kk: write its m x m block (only the valid hi x wj part) */
#ifdef MTE_WINO_STORE_BLOCKS /* the ISA's transpose, where it has one */
    if (MTE_WINO_STORE_BLOCKS(m, res, n, y + k0 * plane, plane, ldy, hi, wj)) continue;
#endif
    for (int64_t kk = 0; kk < n; ++kk) {
      float *yk = y + (k0 + kk) * plane;
      if (hi == m && wj == m) {
        for (int i = 0; i < m; ++i)
          for (int j = 0; j < m; ++j) yk[i * ldy + j] = res[(i * m + j) * VL + kk];
      } else {
        for (int i = 0; i < hi; ++i)
          for (int j = 0; j < wj; ++j) yk[i * ldy + j] = res[(i * m + j) * VL + kk];
      }
    }
  }
}

/* ---------------------------------------------------------------- weights: U = G g G^T */

static inline void weight_vec(int m, const float *const *src, float *u, int64_t us) {
  vf g[9], t[18], o[36];
  for (int e = 0; e < 9; ++e) g[e] = ld(src[e]);
  if (m == 4) {
    for (int b = 0; b < 3; ++b) G6((t + b), 3, (g + b), 3);        /* 6 x 3 */
    for (int i = 0; i < 6; ++i) G6((o + 6 * i), 1, (t + 3 * i), 1); /* 6 x 6 */
    for (int e = 0; e < 36; ++e) st(u + e * us, o[e]);
  } else {
    for (int b = 0; b < 3; ++b) G4((t + b), 3, (g + b), 3);        /* 4 x 3 */
    for (int i = 0; i < 4; ++i) G4((o + 4 * i), 1, (t + 3 * i), 1); /* 4 x 4 */
    for (int e = 0; e < 16; ++e) st(u + e * us, o[e]);
  }
}

static void wino_weight(int m, const float *g, int64_t gs, float *u, int64_t us, int64_t n) {
  const int a2 = (m + 2) * (m + 2);
  const float *src[9];
  int64_t l = 0;
  for (; l + VL <= n; l += VL) {
    for (int e = 0; e < 9; ++e) src[e] = g + e * gs + l;
    weight_vec(m, src, u + l, us);
  }
  if (l < n) {
    float in[9 * VL] __attribute__((aligned(64)));
    float out[36 * VL] __attribute__((aligned(64)));
    const int64_t rest = n - l;
    memset(in, 0, sizeof in);
    for (int e = 0; e < 9; ++e) {
      memcpy(in + e * VL, g + e * gs + l, (size_t)rest * sizeof(float));
      src[e] = in + e * VL;
    }
    weight_vec(m, src, out, VL);
    for (int e = 0; e < a2; ++e) memcpy(u + e * us + l, out + e * VL, (size_t)rest * sizeof(float));
  }
}

const mte_wino_kernels MTE_WINO_TABLE = {MTE_WINO_ISA, VL,          wino_unfold,
                                         wino_input,   wino_output, wino_weight};

#undef VL
