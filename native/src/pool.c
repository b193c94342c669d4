/*
 * pool.c - 2-D max and average pooling, forward and backward (NCHW float32).
 *
 * Every (n, c) plane is independent: planes are the unit of threading. Inside a plane the
 * outputs split in two:
 *   interior  the whole window lies inside the input: a loop with no bounds tests, with
 *             fixed-size copies for the common 2x2 and 3x3 windows (fully unrolled taps, so
 *             the compiler can keep everything in registers and vectorise);
 *   border    windows clipped by padding or by the bottom/right edge (ceil_mode): the same
 *             scan over the clipped tap ranges, computed once per row / column.
 * Interior outputs of a row go first to the active ISA's vector row kernels where the window
 * suits them (the pool family, mte__isa()->pool: src/arch/<isa>/pool_rows.c); the loops here
 * do what they leave. Max pooling without indices (inference) hands whole rows, borders
 * included, to the family's max_row_values where the ISA has one.
 * Max pooling scans taps in window order (row-major), taking a value when it is greater
 * than the best so far or NaN, starting from the first real tap -- so the first maximum
 * wins ties and the last NaN wins; padding never wins (PyTorch's rules).
 * Average pooling sums the taps in the same order and divides, as the numpy twin does.
 */
#include <math.h>
#include <string.h>

#include "mte_pool_internal.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define INLINE static inline __attribute__((always_inline))
#define POOL_MAX_PARAM ((int64_t)1 << 30)
#define POOL_PARALLEL_MIN_WORK (32.0 * 1024.0)

static int threads_for(double work, int64_t planes) {
  return mte__threads_for(work, POOL_PARALLEL_MIN_WORK, planes);
}

static int64_t floor_div(int64_t a, int64_t b) { /* b > 0 */
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

int64_t mte_pool2d_output_size(int64_t size, int64_t k, int64_t s, int64_t p, int64_t d,
                               int ceil_mode) {
  if (size < 0 || size > ((int64_t)1 << 62) || k < 1 || s < 1 || p < 0 || d < 1 ||
      k > POOL_MAX_PARAM || s > POOL_MAX_PARAM || p > POOL_MAX_PARAM || d > POOL_MAX_PARAM)
    return -1;
  int64_t span = size + 2 * p - d * (k - 1) - 1;
  int64_t out = floor_div(span + (ceil_mode ? s - 1 : 0), s) + 1;
  if (ceil_mode && (out - 1) * s >= size + p) out -= 1;
  return out < 0 ? 0 : out;
}

static int check_params(const mte_pool2d_params *p, int avg) {
  if (!p) return MTE_EINVAL;
  if (p->kernel_h < 1 || p->kernel_w < 1 || p->stride_h < 1 || p->stride_w < 1 ||
      p->dilation_h < 1 || p->dilation_w < 1 || p->pad_h < 0 || p->pad_w < 0 ||
      p->pad_h > p->kernel_h / 2 || p->pad_w > p->kernel_w / 2 ||
      p->kernel_h > POOL_MAX_PARAM || p->kernel_w > POOL_MAX_PARAM ||
      p->stride_h > POOL_MAX_PARAM || p->stride_w > POOL_MAX_PARAM ||
      p->dilation_h > POOL_MAX_PARAM || p->dilation_w > POOL_MAX_PARAM)
    return MTE_EINVAL;
  if (avg && (p->dilation_h != 1 || p->dilation_w != 1)) return MTE_EINVAL;
  return MTE_OK;
}

static int check_sizes(int64_t N, int64_t C, int64_t H, int64_t W, int64_t Ho, int64_t Wo) {
  if (N < 0 || C < 0 || H < 0 || W < 0 || Ho < 0 || Wo < 0) return MTE_EINVAL;
  size_t planes, a, b;
  if (!mte__mul_size((size_t)N, (size_t)C, &planes) || !mte__mul_size((size_t)H, (size_t)W, &a) ||
      !mte__mul_size(planes, a, &a) || !mte__mul_size(a, sizeof(int64_t), &a) ||
      !mte__mul_size((size_t)Ho, (size_t)Wo, &b) || !mte__mul_size(planes, b, &b) ||
      !mte__mul_size(b, sizeof(int64_t), &b))
    return MTE_EOVERFLOW;
  return MTE_OK;
}

/* whether a row kernel can take this window: dilation 1, stride 1 or 2, int32 offsets */
static int row_kernel_fits(const mte_pool2d_params *p, int64_t W) {
  return p->dilation_h == 1 && p->dilation_w == 1 && (p->stride_w == 1 || p->stride_w == 2) &&
         p->kernel_h * W < ((int64_t)1 << 31);
}

/* Taps i in [lo, hi) of a window starting at `start` (step d, k taps) fall inside [0, n). */
static inline void tap_range(int64_t start, int64_t k, int64_t d, int64_t n, int64_t *lo,
                             int64_t *hi) {
  int64_t l, h;
  if (d == 1) { /* no division in the common case */
    l = start >= 0 ? 0 : -start;
    h = start >= n ? 0 : n - start;
  } else {
    l = start >= 0 ? 0 : (-start + d - 1) / d;
    h = start >= n ? 0 : (n - start + d - 1) / d;
  }
  if (h > k) h = k;
  if (l > h) l = h;
  *lo = l;
  *hi = h;
}

/* Outputs [*a, *b) along one dim whose windows lie entirely inside [0, n). */
static void interior_range(int64_t out, int64_t k, int64_t s, int64_t pad, int64_t d, int64_t n,
                           int64_t *a, int64_t *b) {
  int64_t first = (pad + s - 1) / s;           /* o*s - pad >= 0 */
  int64_t last_ok = n - 1 - d * (k - 1) + pad; /* o*s <= last_ok */
  int64_t end = last_ok < 0 ? 0 : last_ok / s + 1;
  if (end > out) end = out;
  if (first > end) first = end;
  *a = first;
  *b = end;
}

/* ---------------------------------------------------------------- max pooling */

/* one window with clipped tap ranges */
static void max_window(const float *x, int64_t H, int64_t W, int64_t h0, int64_t w0,
                       int64_t i_lo, int64_t i_hi, int64_t j_lo, int64_t j_hi, int64_t dh,
                       int64_t dw, float *out, int64_t *ind) {
  float best = -INFINITY;
  int64_t bi;
  if (i_lo < i_hi && j_lo < j_hi) {
    bi = (h0 + i_lo * dh) * W + (w0 + j_lo * dw);
  } else { /* no tap inside (only with large dilation): point at the nearest element */
    int64_t h = h0 < 0 ? 0 : h0 >= H ? H - 1 : h0, w = w0 < 0 ? 0 : w0 >= W ? W - 1 : w0;
    bi = h * W + w;
  }
  for (int64_t i = i_lo; i < i_hi; ++i) {
    const int64_t row = (h0 + i * dh) * W;
    for (int64_t j = j_lo; j < j_hi; ++j) {
      const int64_t pos = row + w0 + j * dw;
      const float v = x[pos];
      if (v > best || v != v) best = v, bi = pos;
    }
  }
  *out = best;
  if (ind) *ind = bi;
}

/* interior outputs [s0, s1) of one row: every tap inside; KH, KW > 0 fixes the size */
INLINE void max_interior(const int KH, const int KW, int64_t kh, int64_t kw, const float *x,
                         int64_t W, int64_t h0, int64_t dh, int64_t dw, int64_t sw, int64_t pw,
                         int64_t s0, int64_t s1, float *MTE_RESTRICT y, int64_t *MTE_RESTRICT ind) {
  const int64_t nh = KH ? KH : kh, nw = KW ? KW : kw;
  for (int64_t s = s0; s < s1; ++s) {
    const int64_t base = h0 * W + s * sw - pw;
    float best = x[base];
    int64_t bi = base;
#pragma GCC unroll 4
    for (int64_t i = 0; i < nh; ++i)
#pragma GCC unroll 4
      for (int64_t j = 0; j < nw; ++j) {
        const int64_t pos = base + i * dh * W + j * dw;
        const float v = x[pos];
        const int take = (v > best) | (v != v);
        best = take ? v : best;
        bi = take ? pos : bi;
      }
    y[s] = best;
    if (ind) ind[s] = bi;
  }
}

static void max_plane(const mte_pool2d_params *p, const mte_pool_kernel *k, const float *x,
                      int64_t H, int64_t W, int64_t Ho, int64_t Wo, float *y, int64_t *ind) {
  const int64_t kh = p->kernel_h, kw = p->kernel_w, sh = p->stride_h, sw = p->stride_w;
  const int64_t ph = p->pad_h, pw = p->pad_w, dh = p->dilation_h, dw = p->dilation_w;
  int64_t sa, sb;
  interior_range(Wo, kw, sw, pw, dw, W, &sa, &sb);
  const int k22 = kh == 2 && kw == 2 && dh == 1 && dw == 1;
  const int k33 = kh == 3 && kw == 3 && dh == 1 && dw == 1;
  const int values = !ind && k && k->max_row_values && dh == 1 && dw == 1 && sw <= 2;
  for (int64_t r = 0; r < Ho; ++r) {
    const int64_t h0 = r * sh - ph;
    int64_t i_lo, i_hi;
    tap_range(h0, kh, dh, H, &i_lo, &i_hi);
    float *yr = y + r * Wo;
    if (values && i_lo < i_hi) { /* no indices: the whole row, borders included */
      k->max_row_values(x, W, h0, i_lo, i_hi, kw, sw, pw, Wo, yr);
      continue;
    }
    int64_t *ir = ind ? ind + r * Wo : NULL;
    int64_t a = sa, b = sb;
    if (i_lo == 0 && i_hi == kh) { /* all rows inside: interior columns need no tests */
      int64_t a0 = a; /* the vector row kernel first, portable code for what it leaves */
      if (k && k->max_row && a < b)
        a0 += k->max_row(x, W, h0, a * sw - pw, kh, kw, sw, b - a, yr + a, ir ? ir + a : NULL);
      if (k22)
        max_interior(2, 2, 2, 2, x, W, h0, 1, 1, sw, pw, a0, b, yr, ir);
      else if (k33)
        max_interior(3, 3, 3, 3, x, W, h0, 1, 1, sw, pw, a0, b, yr, ir);
      else
        max_interior(0, 0, kh, kw, x, W, h0, dh, dw, sw, pw, a0, b, yr, ir);
    } else {
      a = b = 0;
    }
    for (int64_t s = 0; s < Wo; ++s) {
      if (s == a) s = b; /* skip the interior done above */
      if (s >= Wo) break;
      const int64_t w0 = s * sw - pw;
      int64_t j_lo, j_hi;
      tap_range(w0, kw, dw, W, &j_lo, &j_hi);
      max_window(x, H, W, h0, w0, i_lo, i_hi, j_lo, j_hi, dh, dw, yr + s, ir ? ir + s : NULL);
    }
  }
}

int mte_max_pool2d_backward(int64_t N, int64_t C, int64_t H, int64_t W, int64_t L,
                            const float *gy, const int64_t *indices, float *gx) {
  int st = check_sizes(N, C, H, W, L, 1);
  if (st != MTE_OK) return st;
  const int64_t planes = N * C, hw = H * W;
  if (planes == 0 || hw == 0) {
    if (planes != 0 && L != 0) return MTE_EINVAL; /* indices into an empty plane */
    return MTE_OK;
  }
  if (!gx || (L && (!gy || !indices))) return MTE_EINVAL;
  /* every index is checked before anything is written */
  const int64_t total = planes * L;
  uint64_t bad = 0; /* top bit set iff some index < 0 or > hw - 1 (a loop that vectorises) */
  for (int64_t k = 0; k < total; ++k)
    bad |= (uint64_t)indices[k] | ((uint64_t)(hw - 1) - (uint64_t)indices[k]);
  if (bad >> 63) return MTE_EINVAL;
  const int nt = threads_for((double)planes * (hw + L), planes);
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
#endif
  for (int64_t q = 0; q < planes; ++q) {
    float *g = gx + q * hw;
    const float *src = gy + q * L;
    const int64_t *id = indices + q * L;
    memset(g, 0, (size_t)hw * sizeof(float));
    for (int64_t k = 0; k < L; ++k) g[id[k]] += src[k];
  }
  return MTE_OK;
}

/* ---------------------------------------------------------------- average pooling */

/* the numpy twin's divisor along one dim for output o */
static int64_t avg_count(int64_t o, int64_t size, int64_t k, int64_t s, int64_t pad, int incl) {
  const int64_t start = o * s - pad;
  int64_t end = start + k < size + pad ? start + k : size + pad;
  if (incl) return end - start;
  return (end < size ? end : size) - (start > 0 ? start : 0);
}

static float avg_divisor(const mte_pool2d_params *p, int64_t dh_count, int64_t dw_count) {
  if (p->divisor_override) return (float)p->divisor_override;
  int64_t d = dh_count * dw_count;
  return (float)(d > 1 ? d : 1);
}

INLINE float sum_window(const int KH, const int KW, int64_t kh, int64_t kw, const float *x,
                        int64_t W, int64_t base) {
  const int64_t nh = KH ? KH : kh, nw = KW ? KW : kw;
  float acc = 0.0f;
#pragma GCC unroll 4
  for (int64_t i = 0; i < nh; ++i)
#pragma GCC unroll 4
    for (int64_t j = 0; j < nw; ++j) acc += x[base + i * W + j];
  return acc;
}

/* interior windows all hold kh x kw inputs, so they share one divisor */
INLINE void avg_interior(const int KH, const int KW, int64_t kh, int64_t kw, const float *x,
                         int64_t W, int64_t h0, int64_t sw, int64_t pw, int64_t s0, int64_t s1,
                         float div, float *MTE_RESTRICT y) {
  for (int64_t s = s0; s < s1; ++s)
    y[s] = sum_window(KH, KW, kh, kw, x, W, h0 * W + s * sw - pw) / div;
}

static void avg_plane(const mte_pool2d_params *p, const mte_pool_kernel *k, const float *x,
                      int64_t H, int64_t W, int64_t Ho, int64_t Wo, float *y) {
  const int64_t kh = p->kernel_h, kw = p->kernel_w, sh = p->stride_h, sw = p->stride_w;
  const int64_t ph = p->pad_h, pw = p->pad_w;
  const int incl = p->count_include_pad;
  int64_t sa, sb;
  interior_range(Wo, kw, sw, pw, 1, W, &sa, &sb);
  for (int64_t r = 0; r < Ho; ++r) {
    const int64_t h0 = r * sh - ph, dhc = avg_count(r, H, kh, sh, ph, incl);
    int64_t i_lo, i_hi;
    tap_range(h0, kh, 1, H, &i_lo, &i_hi);
    float *yr = y + r * Wo;
    int64_t a = sa, b = sb;
    if (i_lo == 0 && i_hi == kh) {
      const float div = avg_divisor(p, dhc, kw);
      int64_t a0 = a;
      if (k && k->avg_row && a < b)
        a0 += k->avg_row(x, W, h0, a * sw - pw, kh, kw, sw, b - a, div, yr + a);
      if (kh == 2 && kw == 2)
        avg_interior(2, 2, 2, 2, x, W, h0, sw, pw, a0, b, div, yr);
      else if (kh == 3 && kw == 3)
        avg_interior(3, 3, 3, 3, x, W, h0, sw, pw, a0, b, div, yr);
      else
        avg_interior(0, 0, kh, kw, x, W, h0, sw, pw, a0, b, div, yr);
    } else {
      a = b = 0;
    }
    for (int64_t s = 0; s < Wo; ++s) {
      if (s == a) s = b;
      if (s >= Wo) break;
      const int64_t w0 = s * sw - pw;
      int64_t j_lo, j_hi;
      tap_range(w0, kw, 1, W, &j_lo, &j_hi);
      float acc = 0.0f;
      for (int64_t i = i_lo; i < i_hi; ++i)
        for (int64_t j = j_lo; j < j_hi; ++j) acc += x[(h0 + i) * W + w0 + j];
      yr[s] = acc / avg_divisor(p, dhc, avg_count(s, W, kw, sw, pw, incl));
    }
  }
}

/* ---------------------------------------------------------------- forward, both */

/* Max (avg = 0) or average pooling of every plane, with the active ISA's row kernels where
 * the window suits them (mte__isa()->pool). */
static int pool_forward(const mte_pool2d_params *p, int avg, int64_t N, int64_t C, int64_t H,
                        int64_t W, const float *x, float *y, int64_t *indices) {
  int st = check_params(p, avg); /* (average pooling: dilation 1) */
  if (st != MTE_OK) return st;
  const int64_t Ho = mte_pool2d_output_size(H, p->kernel_h, p->stride_h, p->pad_h,
                                            p->dilation_h, p->ceil_mode);
  const int64_t Wo = mte_pool2d_output_size(W, p->kernel_w, p->stride_w, p->pad_w,
                                            p->dilation_w, p->ceil_mode);
  st = check_sizes(N, C, H, W, Ho, Wo);
  if (st != MTE_OK) return st;
  const int64_t planes = N * C;
  if (planes == 0 || Ho == 0 || Wo == 0) return MTE_OK;
  if (!avg && (H == 0 || W == 0)) return MTE_EINVAL; /* max of windows with nothing inside */
  if (!x || !y) return MTE_EINVAL;
  const int nt = threads_for((double)planes * Ho * Wo * p->kernel_h * p->kernel_w, planes);
  const mte_pool_kernel *k = row_kernel_fits(p, W) ? mte__isa()->pool : NULL;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
#endif
  for (int64_t q = 0; q < planes; ++q) {
    if (avg)
      avg_plane(p, k, x + q * H * W, H, W, Ho, Wo, y + q * Ho * Wo);
    else
      max_plane(p, k, x + q * H * W, H, W, Ho, Wo, y + q * Ho * Wo,
                indices ? indices + q * Ho * Wo : NULL);
  }
  return MTE_OK;
}

int mte_max_pool2d(const mte_pool2d_params *p, int64_t N, int64_t C, int64_t H, int64_t W,
                   const float *x, float *y, int64_t *indices) {
  return pool_forward(p, 0, N, C, H, W, x, y, indices);
}

int mte_avg_pool2d(const mte_pool2d_params *p, int64_t N, int64_t C, int64_t H, int64_t W,
                   const float *x, float *y) {
  return pool_forward(p, 1, N, C, H, W, x, y, NULL);
}

/* ---------------------------------------------------------------- average pooling, backward */

/* add g to a kh x kw block of gx at `base` (every tap inside); KH, KW > 0 fixes the size */
INLINE void spread(const int KH, const int KW, int64_t kh, int64_t kw, float *gx, int64_t W,
                   int64_t base, float g) {
  const int64_t nh = KH ? KH : kh, nw = KW ? KW : kw;
#pragma GCC unroll 4
  for (int64_t i = 0; i < nh; ++i)
#pragma GCC unroll 4
    for (int64_t j = 0; j < nw; ++j) gx[base + i * W + j] += g;
}

INLINE void avg_bwd_interior(const int KH, const int KW, int64_t kh, int64_t kw, const float *gy,
                             float *gx, int64_t W, int64_t h0, int64_t sw, int64_t pw, int64_t s0,
                             int64_t s1, float div) {
  for (int64_t s = s0; s < s1; ++s) spread(KH, KW, kh, kw, gx, W, h0 * W + s * sw - pw, gy[s] / div);
}

static void avg_bwd_plane(const mte_pool2d_params *p, const float *gy, int64_t H, int64_t W,
                          int64_t Ho, int64_t Wo, float *gx) {
  const int64_t kh = p->kernel_h, kw = p->kernel_w, sh = p->stride_h, sw = p->stride_w;
  const int64_t ph = p->pad_h, pw = p->pad_w;
  const int incl = p->count_include_pad;
  int64_t sa, sb;
  interior_range(Wo, kw, sw, pw, 1, W, &sa, &sb);
  memset(gx, 0, (size_t)(H * W) * sizeof(float));
  for (int64_t r = 0; r < Ho; ++r) {
    const int64_t h0 = r * sh - ph, dhc = avg_count(r, H, kh, sh, ph, incl);
    int64_t i_lo, i_hi;
    tap_range(h0, kh, 1, H, &i_lo, &i_hi);
    if (i_lo >= i_hi) continue;
    const float *g = gy + r * Wo;
    int64_t a = 0, b = 0;
    if (i_lo == 0 && i_hi == kh) { /* full rows: interior columns without tests */
      const float div = avg_divisor(p, dhc, kw);
      a = sa, b = sb;
      if (kh == 2 && kw == 2)
        avg_bwd_interior(2, 2, 2, 2, g, gx, W, h0, sw, pw, a, b, div);
      else if (kh == 3 && kw == 3)
        avg_bwd_interior(3, 3, 3, 3, g, gx, W, h0, sw, pw, a, b, div);
      else
        avg_bwd_interior(0, 0, kh, kw, g, gx, W, h0, sw, pw, a, b, div);
    }
    for (int64_t s = 0; s < Wo; ++s) {
      if (s == a) s = b;
      if (s >= Wo) break;
      const int64_t w0 = s * sw - pw;
      int64_t j_lo, j_hi;
      tap_range(w0, kw, 1, W, &j_lo, &j_hi);
      const float v = g[s] / avg_divisor(p, dhc, avg_count(s, W, kw, sw, pw, incl));
      for (int64_t i = i_lo; i < i_hi; ++i) {
        float *row = gx + (h0 + i) * W + w0;
        for (int64_t j = j_lo; j < j_hi; ++j) row[j] += v;
      }
    }
  }
}

int mte_avg_pool2d_backward(const mte_pool2d_params *p, int64_t N, int64_t C, int64_t H,
                            int64_t W, int64_t Ho, int64_t Wo, const float *gy, float *gx) {
  int st = check_params(p, 1);
  if (st != MTE_OK) return st;
  st = check_sizes(N, C, H, W, Ho, Wo);
  if (st != MTE_OK) return st;
  if (Ho > POOL_MAX_PARAM * 4 || Wo > POOL_MAX_PARAM * 4) return MTE_EINVAL;
  const int64_t planes = N * C;
  if (planes == 0 || H == 0 || W == 0) return MTE_OK;
  if (!gx || (Ho && Wo && !gy)) return MTE_EINVAL;
  if (Ho == 0 || Wo == 0) { /* no window: the gradient is zero */
    memset(gx, 0, (size_t)(planes * H * W) * sizeof(float));
    return MTE_OK;
  }
  const int nt = threads_for((double)planes * (Ho * Wo * p->kernel_h * p->kernel_w + H * W),
                             planes);
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
#endif
  for (int64_t q = 0; q < planes; ++q)
    avg_bwd_plane(p, gy + q * Ho * Wo, H, W, Ho, Wo, gx + q * H * W);
  return MTE_OK;
}
