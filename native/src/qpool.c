/*
 * qpool.c - int8 max and average pooling (NCHW planes, same scale in and out).
 *
 * Windows as mte_pool.h (PyTorch's output size; ceil_mode), padding (pad_h, pad_w) on both
 * sides; any padding is accepted (a window over padding only gives -128 for max, 0 for
 * average). Each output clips its window to the input once, then runs over the real rows
 * and columns: a max (the rows of a window reduced first, row against row), or an int32 sum
 * divided by the count with rounding half away from zero. Planes are the unit of threading.
 * The max at column dilation 1 pads the reduced row with -128 on both sides instead (max
 * with -128 changes nothing, and a window over padding only is -128), so every window is
 * whole and the horizontal pass is the active ISA's max_row kernel (mte_qelem_internal.h)
 * with the portable loop for what it leaves.
 */
#include <string.h>

#include "mte_qelem_internal.h"
#include "mte_quant_internal.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define MAX_PARAM ((int64_t)1 << 20)

static int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && a < 0); }

static int64_t out_size(int64_t size, int64_t k, int64_t s, int64_t p, int64_t d, int ceil) {
  int64_t span = size + 2 * p - d * (k - 1) - 1;
  int64_t out = floor_div(span + (ceil ? s - 1 : 0), s) + 1;
  if (ceil && (out - 1) * s >= size + p) out -= 1;
  return out;
}

/* valid parameters and input: the output size, else -1 */
static int check(const mte_pool2d_params *p, int avg, int64_t N, int64_t C, int64_t H,
                 int64_t W, int64_t *ho, int64_t *wo) {
  if (!p || N < 0 || C < 0 || H < 0 || W < 0 || H > MAX_PARAM * 64 || W > MAX_PARAM * 64)
    return MTE_EINVAL;
  const int64_t v[] = {p->kernel_h, p->kernel_w, p->stride_h, p->stride_w, p->dilation_h,
                       p->dilation_w};
  for (int i = 0; i < 6; ++i)
    if (v[i] < 1 || v[i] > MAX_PARAM) return MTE_EINVAL;
  if (p->pad_h < 0 || p->pad_w < 0 || p->pad_h > MAX_PARAM || p->pad_w > MAX_PARAM)
    return MTE_EINVAL;
  if (avg && (p->dilation_h != 1 || p->dilation_w != 1 || p->divisor_override != 0))
    return MTE_EINVAL;
  *ho = out_size(H, p->kernel_h, p->stride_h, p->pad_h, p->dilation_h, p->ceil_mode);
  *wo = out_size(W, p->kernel_w, p->stride_w, p->pad_w, p->dilation_w, p->ceil_mode);
  if (*ho < 1 || *wo < 1) return MTE_EINVAL;
  if (N * C > ((int64_t)1 << 40) / (*ho * *wo + H * W)) return MTE_EOVERFLOW;
  return MTE_OK;
}

/* the taps t in [0, k) of a window starting at `start` (dilation d) inside [0, size) */
static void taps(int64_t start, int64_t k, int64_t d, int64_t size, int64_t *t0, int64_t *t1) {
  int64_t lo = start < 0 ? (-start + d - 1) / d : 0;
  int64_t hi = start + (k - 1) * d >= size ? (size - 1 - start) / d + 1 : k;
  if (start >= size) hi = 0;
  *t0 = lo;
  *t1 = hi > lo ? hi : lo;
}

/* The max over output row r's window rows of the plane xp (H x W), into rows[0..W): 0 when
 * the window covers padding only (rows untouched), else 1. A max of whole rows, which the
 * compiler vectorizes. */
static int reduce_rows(const mte_pool2d_params *p, const int8_t *xp, int64_t H, int64_t W,
                       int64_t r, int8_t *rows) {
  int64_t i0, i1;
  const int64_t h0 = r * p->stride_h - p->pad_h;
  taps(h0, p->kernel_h, p->dilation_h, H, &i0, &i1);
  if (i0 == i1) return 0;
  memcpy(rows, xp + (h0 + i0 * p->dilation_h) * W, (size_t)W);
  for (int64_t i = i0 + 1; i < i1; ++i) {
    const int8_t *row = xp + (h0 + i * p->dilation_h) * W;
    for (int64_t c = 0; c < W; ++c) rows[c] = row[c] > rows[c] ? row[c] : rows[c];
  }
  return 1;
}

/* One plane of the max, row by row: the window's real input rows are first reduced to one
 * row (a max of whole rows, which the compiler vectorizes), then each output takes the max of
 * its window's real columns in that row. W <= ROW_MAX (the reduced row lives on the stack). */
#define ROW_MAX 4096

static void qmax_plane(const mte_pool2d_params *p, const int8_t *xp, int64_t H, int64_t W,
                       int64_t Ho, int64_t Wo, int8_t *yp) {
  int8_t rows[ROW_MAX];
  for (int64_t r = 0; r < Ho; ++r) {
    int8_t *out = yp + r * Wo;
    if (!reduce_rows(p, xp, H, W, r, rows)) { /* a window over padding only */
      memset(out, -128, (size_t)Wo);
      continue;
    }
    /* the outputs whose window lies inside the row need no clipping: [first, last) */
    const int64_t sw = p->stride_w, kw = p->kernel_w, dw = p->dilation_w;
    int64_t first = (p->pad_w + sw - 1) / sw, last = 0;
    if (W - 1 - (kw - 1) * dw + p->pad_w >= 0) last = (W - 1 - (kw - 1) * dw + p->pad_w) / sw + 1;
    if (last > Wo) last = Wo;
    if (first > last) first = last;
    for (int64_t s = 0; s < Wo; ++s) {
      const int64_t w0 = s * sw - p->pad_w;
      int m = -128;
      if (s >= first && s < last) {
        for (int64_t j = 0; j < kw; ++j) m = rows[w0 + j * dw] > m ? rows[w0 + j * dw] : m;
      } else {
        int64_t j0, j1;
        taps(w0, kw, dw, W, &j0, &j1);
        for (int64_t j = j0; j < j1; ++j) m = rows[w0 + j * dw] > m ? rows[w0 + j * dw] : m;
      }
      out[s] = (int8_t)m;
    }
  }
}

/* One plane of the max at column dilation 1: each output row's window rows reduced into the
 * middle of `buf` (pad_w values of -128 before it, -128 after it up to the last window's
 * end), then y[s] = max_{j < kw} buf[s * sw + j]. Needs pad_w + W and (Wo - 1) * sw + kw
 * within BUF_MAX. */
#define BUF_MAX (ROW_MAX + 256)

static int padded_fits(const mte_pool2d_params *p, int64_t W, int64_t Wo) {
  return p->dilation_w == 1 && p->pad_w + W <= BUF_MAX &&
         (Wo - 1) * p->stride_w + p->kernel_w <= BUF_MAX;
}

static void qmax_plane_padded(const mte_pool2d_params *p, const mte_qelem_kernel *k,
                              const int8_t *xp, int64_t H, int64_t W, int64_t Ho, int64_t Wo,
                              int8_t *yp) {
  int8_t buf[BUF_MAX];
  const int64_t sw = p->stride_w, kw = p->kernel_w, end = (Wo - 1) * sw + kw;
  int8_t *rows = buf + p->pad_w;
  memset(buf, -128, (size_t)p->pad_w);
  if (end > p->pad_w + W) memset(rows + W, -128, (size_t)(end - p->pad_w - W));
  for (int64_t r = 0; r < Ho; ++r) {
    int8_t *out = yp + r * Wo;
    if (!reduce_rows(p, xp, H, W, r, rows)) { /* a window over padding only */
      memset(out, -128, (size_t)Wo);
      continue;
    }
    for (int64_t s = k->max_row ? k->max_row(buf, kw, sw, Wo, out) : 0; s < Wo; ++s) {
      int m = buf[s * sw];
      for (int64_t j = 1; j < kw; ++j) m = buf[s * sw + j] > m ? buf[s * sw + j] : m;
      out[s] = (int8_t)m;
    }
  }
}

int mte_qmax_pool2d(const mte_pool2d_params *p, int64_t N, int64_t C, int64_t H, int64_t W,
                    const int8_t *x, int8_t *y) {
  int64_t Ho, Wo;
  int st = check(p, 0, N, C, H, W, &Ho, &Wo);
  if (st != MTE_OK) return st;
  const int64_t planes = N * C;
  if (planes == 0) return MTE_OK;
  if (!x || !y) return MTE_EINVAL;
  const mte_qelem_kernel *k = mte__isa()->qelem;
  const int padded = padded_fits(p, W, Wo);
  const int nt = mte__threads_for((double)planes * Ho * Wo * p->kernel_h * p->kernel_w,
                                  1 << 20, planes);
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
#endif
  for (int64_t pl = 0; pl < planes; ++pl) {
    const int8_t *xp = x + pl * H * W;
    int8_t *yp = y + pl * Ho * Wo;
    if (padded) {
      qmax_plane_padded(p, k, xp, H, W, Ho, Wo, yp);
      continue;
    }
    if (W <= ROW_MAX) {
      qmax_plane(p, xp, H, W, Ho, Wo, yp);
      continue;
    }
    for (int64_t r = 0; r < Ho; ++r) {
      int64_t i0, i1;
      const int64_t h0 = r * p->stride_h - p->pad_h;
      taps(h0, p->kernel_h, p->dilation_h, H, &i0, &i1);
      for (int64_t s = 0; s < Wo; ++s) {
        int64_t j0, j1;
        const int64_t w0 = s * p->stride_w - p->pad_w;
        taps(w0, p->kernel_w, p->dilation_w, W, &j0, &j1);
        int m = -128;
        for (int64_t i = i0; i < i1; ++i) {
          const int8_t *row = xp + (h0 + i * p->dilation_h) * W + w0;
          for (int64_t j = j0; j < j1; ++j) {
            const int v = row[j * p->dilation_w];
            m = v > m ? v : m;
          }
        }
        yp[r * Wo + s] = (int8_t)m;
      }
    }
  }
  return MTE_OK;
}

/* positions a window counts along one dim (numpy_backend._avg_divisor) */
static int64_t count_1d(int64_t start, int64_t k, int64_t size, int64_t pad, int include) {
  int64_t end = start + k < size + pad ? start + k : size + pad;
  if (include) return end - start;
  return (end < size ? end : size) - (start > 0 ? start : 0);
}

int mte_qavg_pool2d(const mte_pool2d_params *p, int64_t N, int64_t C, int64_t H, int64_t W,
                    const int8_t *x, int32_t act_min, int32_t act_max, int8_t *y) {
  int64_t Ho, Wo;
  int st = check(p, 1, N, C, H, W, &Ho, &Wo);
  if (st != MTE_OK) return st;
  if (!mte__q_act_ok(act_min, act_max)) return MTE_EINVAL;
  if (p->kernel_h * p->kernel_w > (int64_t)1 << 23) return MTE_EINVAL; /* the int32 sum */
  const int64_t planes = N * C;
  if (planes == 0) return MTE_OK;
  if (!x || !y) return MTE_EINVAL;
  const int nt = mte__threads_for((double)planes * Ho * Wo * p->kernel_h * p->kernel_w,
                                  1 << 20, planes);
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
#endif
  for (int64_t pl = 0; pl < planes; ++pl) {
    const int8_t *xp = x + pl * H * W;
    int8_t *yp = y + pl * Ho * Wo;
    for (int64_t r = 0; r < Ho; ++r) {
      int64_t i0, i1;
      const int64_t h0 = r * p->stride_h - p->pad_h;
      taps(h0, p->kernel_h, 1, H, &i0, &i1);
      const int64_t ch = count_1d(h0, p->kernel_h, H, p->pad_h, p->count_include_pad);
      for (int64_t s = 0; s < Wo; ++s) {
        int64_t j0, j1;
        const int64_t w0 = s * p->stride_w - p->pad_w;
        taps(w0, p->kernel_w, 1, W, &j0, &j1);
        int32_t sum = 0;
        for (int64_t i = i0; i < i1; ++i)
          for (int64_t j = j0; j < j1; ++j) sum += xp[(h0 + i) * W + w0 + j];
        int64_t cnt = ch * count_1d(w0, p->kernel_w, W, p->pad_w, p->count_include_pad);
        if (cnt < 1) cnt = 1;
        const int64_t avg = sum >= 0 ? (sum + cnt / 2) / cnt : -((-sum + cnt / 2) / cnt);
        yp[r * Wo + s] = (int8_t)(avg < act_min ? act_min : avg > act_max ? act_max : avg);
      }
    }
  }
  return MTE_OK;
}
