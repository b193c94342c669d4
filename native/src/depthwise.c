/*
 * depthwise.c - depthwise convolution: the general K x K forward (mte_depthwise, any K up
 * to 31, stride 1 or 2, padding 0..K-1; per-ISA bodies: depthwise_body.h, and for K 3/5/7
 * on AVX-512 / AVX2 depthwise_strip_body.h) and depthwise 3x3 (padding 1, stride 1 or 2)
 * with its backward, which mte_depthwise uses for K = 3, padding 1.
 *
 * A depthwise convolution filters each (n, c) plane with its own 3x3 kernel, so the
 * N*C planes are independent: they are the unit of threading, and an ISA kernel
 * (src/arch/<isa>/depthwise3x3.c) only ever sees one plane. This file validates the
 * arguments, borrows one zero row from the arena (the padding rows above and below a plane
 * are read from it, so kernels never test rows), takes the active ISA's kernels
 * (mte__isa()->depthwise3x3) and runs the planes in parallel.
 *
 * Backward:
 *   input, stride 1: the adjoint of a 3x3 correlation with padding 1 is the correlation
 *     with the kernel turned by 180 degrees, so it reuses the forward kernels;
 *   input, stride 2: every input pixel receives from at most 2x2 outputs; even and odd
 *     columns (and rows) get different taps: an ISA kernel builds both and interleaves;
 *   weight: per plane, 9 sums of output gradient x shifted input (an ISA kernel, built
 *     like the forward one), added over n in double by one thread per channel (no atomics).
 *
 * Activations: the plane kernels apply ReLU / ReLU6 in registers; the others (GELU, SiLU,
 * hardswish...) are applied by the epilogue family's tile function (mte_epilogue.h, the
 * active ISA's) to each output plane right after its kernel wrote it, while it is in cache.
 */
#include <string.h>

#include "mte_depthwise_internal.h"
#include "mte_epilogue.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* below this many multiply-adds a call stays on one thread */
#define DW_PARALLEL_MIN_WORK (64.0 * 1024.0)

static int threads_for(double work, int64_t units) {
  return mte__threads_for(work, DW_PARALLEL_MIN_WORK, units);
}

int64_t mte_depthwise3x3_output_size(int64_t size, int stride) {
  if ((stride != 1 && stride != 2) || size < 0) return -1;
  return size == 0 ? 0 : (size - 1) / stride + 1;
}

/* N*C*H*W (and the output size) fit in memory arithmetic; every size >= 0 */
static int check_sizes(int64_t N, int64_t C, int64_t H, int64_t W, int stride) {
  if (N < 0 || C < 0 || H < 0 || W < 0 || (stride != 1 && stride != 2)) return MTE_EINVAL;
  size_t planes, plane, total;
  if (!mte__mul_size((size_t)N, (size_t)C, &planes) ||
      !mte__mul_size((size_t)H, (size_t)W, &plane) ||
      !mte__mul_size(planes, plane, &total) || !mte__mul_size(total, sizeof(float), &total) ||
      W > INT64_MAX / 4)
    return MTE_EOVERFLOW;
  return MTE_OK;
}

/* Borrow the arena and carve the zero row (W + MTE_DW_ZERO_PAD floats) from it. */
typedef struct zero_row {
  mte_arena *arena;
  int is_default;
  float *zeros;
} zero_row;

static int zero_row_get(int64_t W, zero_row *z) {
  z->arena = mte__arena_acquire(&z->is_default);
  if (!z->arena) return MTE_ENOMEM;
  const size_t bytes = (size_t)(W + MTE_DW_ZERO_PAD) * sizeof(float);
  int st = mte_arena_reserve(z->arena, mte_arena_footprint(bytes));
  z->zeros = st == MTE_OK ? (float *)mte_arena_alloc(z->arena, bytes) : NULL;
  if (!z->zeros) {
    mte__arena_release(z->arena, z->is_default);
    return st != MTE_OK ? st : MTE_ENOMEM;
  }
  memset(z->zeros, 0, bytes);
  return MTE_OK;
}

/* give the arena back; MTE_ECORRUPT if a kernel wrote past the zero row */
static int zero_row_put(zero_row *z) {
  int st = mte_arena_check(z->arena);
  mte__arena_release(z->arena, z->is_default);
  return st;
}

/* Run `fn` over the N*C planes: x plane p at x + p*in_plane, y at y + p*out_plane; then,
 * if ep_act is not MTE_ACT_NONE, the epilogue's activation ep_act on each output plane (fn
 * itself applies `act`, none, ReLU or ReLU6). */
static int run_planes(mte_dw3x3_plane_fn fn, int64_t planes, int64_t C, int64_t H, int64_t W,
                      int64_t out_plane, const float *x, const float *w, int w_flip,
                      const float *bias, int act, int ep_act, float *y) {
  zero_row z;
  int st = zero_row_get(W, &z);
  if (st != MTE_OK) return st;
  const float *zeros = z.zeros;
  const int64_t in_plane = H * W;
  const mte_epilogue_tile_fn ep = ep_act != MTE_ACT_NONE ? mte__isa()->epilogue->tile : NULL;
  const mte_ep_tile ep_tile = {NULL, NULL, NULL, 0, ep_act};
  const int nt = threads_for((double)planes * (double)out_plane * 9.0, planes);
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
#endif
  for (int64_t p = 0; p < planes; ++p) {
    const float *wc = w + (p % C) * 9;
    float wf[9];
    if (w_flip) /* 180-degree turn: tap (i, j) <- (2-i, 2-j) */
      for (int k = 0; k < 9; ++k) wf[k] = wc[8 - k];
    float *yp = y + p * out_plane;
    fn(x + p * in_plane, H, W, w_flip ? wf : wc, bias ? bias[p % C] : 0.0f, act, zeros, yp);
    if (ep) ep(yp, out_plane, 1, out_plane, &ep_tile); /* the plane as one row */
  }
  return zero_row_put(&z);
}

int mte_depthwise3x3(int64_t N, int64_t C, int64_t H, int64_t W, int stride, const float *x,
                     const float *w, const float *bias, int activation, float *y) {
  int st = check_sizes(N, C, H, W, stride);
  if (st != MTE_OK) return st;
  if (!mte__valid_activation(activation)) return MTE_EINVAL;
  if (N == 0 || C == 0 || H == 0 || W == 0) return MTE_OK;
  if (!x || !w || !y) return MTE_EINVAL;
  const mte_dw3x3_kernel *k = mte__isa()->depthwise3x3;
  const int64_t Ho = (H - 1) / stride + 1, Wo = (W - 1) / stride + 1;
  const int in_kernel = activation == MTE_ACT_NONE || activation == MTE_ACT_RELU ||
                        activation == MTE_ACT_RELU6;
  return run_planes(stride == 1 ? k->stride1 : k->stride2, N * C, C, H, W, Ho * Wo, x, w, 0,
                    bias, in_kernel ? activation : MTE_ACT_NONE,
                    in_kernel ? MTE_ACT_NONE : activation, y);
}

/* ---------------------------------------------------------------- backward, input */

int mte_depthwise3x3_backward_input(int64_t N, int64_t C, int64_t H, int64_t W, int stride,
                                    const float *gy, const float *w, float *gx) {
  int st = check_sizes(N, C, H, W, stride);
  if (st != MTE_OK) return st;
  if (N == 0 || C == 0 || H == 0 || W == 0) return MTE_OK;
  if (!gy || !w || !gx) return MTE_EINVAL;
  const mte_dw3x3_kernel *k = mte__isa()->depthwise3x3;
  if (stride == 1) /* correlation with the turned kernel, same sizes */
    return run_planes(k->stride1, N * C, C, H, W, H * W, gy, w, 1, NULL, MTE_ACT_NONE,
                      MTE_ACT_NONE, gx);
  const mte_dw3x3_bwd_fn fn = k->bwd_input2;
  const int64_t planes = N * C, Ho = (H - 1) / 2 + 1, Wo = (W - 1) / 2 + 1;
  const int nt = threads_for((double)planes * (double)(H * W) * 2.0, planes);
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
#endif
  for (int64_t p = 0; p < planes; ++p)
    fn(gy + p * Ho * Wo, H, W, w + (p % C) * 9, gx + p * H * W);
  return MTE_OK;
}

/* ---------------------------------------------------------------- backward, weight */

int mte_depthwise3x3_backward_weight(int64_t N, int64_t C, int64_t H, int64_t W, int stride,
                                     const float *gy, const float *x, float *gw) {
  int st = check_sizes(N, C, H, W, stride);
  if (st != MTE_OK) return st;
  if (C == 0) return MTE_OK;
  if (!gw) return MTE_EINVAL;
  if (N == 0 || H == 0 || W == 0) {
    memset(gw, 0, (size_t)C * 9 * sizeof(float));
    return MTE_OK;
  }
  if (!gy || !x) return MTE_EINVAL;
  const int64_t Ho = (H - 1) / stride + 1, Wo = (W - 1) / stride + 1;
  const mte_dw3x3_kernel *k = mte__isa()->depthwise3x3;
  const mte_dw3x3_wgrad_fn fn = stride == 1 ? k->wgrad1 : k->wgrad2;
  zero_row z;
  st = zero_row_get(W, &z);
  if (st != MTE_OK) return st;
  const float *zeros = z.zeros;
  const int nt = threads_for((double)N * (double)C * (double)(Ho * Wo) * 9.0, C);
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
#endif
  for (int64_t c = 0; c < C; ++c) { /* one thread per channel: the sum over n needs no lock */
    double acc[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t n = 0; n < N; ++n) {
      float part[9];
      fn(gy + (n * C + c) * Ho * Wo, x + (n * C + c) * H * W, H, W, zeros, part);
      for (int q = 0; q < 9; ++q) acc[q] += part[q];
    }
    for (int q = 0; q < 9; ++q) gw[c * 9 + q] = (float)acc[q];
  }
  return zero_row_put(&z);
}

/* ---------------------------------------------------------------- general K x K, forward */

int64_t mte_depthwise_output_size(int64_t size, int K, int stride, int pad) {
  if (K < 1 || K > MTE_DW_MAX_K || pad < 0 || pad >= K || (stride != 1 && stride != 2) ||
      size < 0)
    return -1;
  if (size == 0 || size + 2 * pad < K) return 0;
  return (size + 2 * pad - K) / stride + 1;
}

static int64_t round_up16(int64_t n) { return (n + 15) / 16 * 16; }

/*
 * The planes run in parallel; each thread has its own ring of padded rows (K rows of S
 * phase rows, mte_depthwise_internal.h) and all share one zero row, carved from one arena
 * block that is zeroed once per call (the kernels write only the data columns of the ring,
 * so its padding columns stay zero across planes).
 */
int mte_depthwise(int64_t N, int64_t C, int64_t H, int64_t W, int K, int stride, int pad,
                  const float *x, const float *w, const float *bias, int activation, float *y) {
  int st = check_sizes(N, C, H, W, stride);
  if (st != MTE_OK) return st;
  if (K < 1 || K > MTE_DW_MAX_K || pad < 0 || pad >= K) return MTE_EINVAL;
  if (activation != MTE_ACT_NONE && activation != MTE_ACT_RELU &&
      activation != MTE_ACT_RELU6)
    return MTE_EINVAL;
  if (H > INT64_MAX / 4 - 2 * MTE_DW_MAX_K) return MTE_EOVERFLOW;
  const int64_t Ho = mte_depthwise_output_size(H, K, stride, pad);
  const int64_t Wo = mte_depthwise_output_size(W, K, stride, pad);
  if (N == 0 || C == 0 || Ho == 0 || Wo == 0) return MTE_OK;
  if (!x || !w || !y) return MTE_EINVAL;
  /* 3x3 with padding 1: the specialised plane kernels (the depthwise3x3 family), which
   * load the taps straight from x with their borders masked. On the small planes of
   * MobileNetV2 / EfficientNet (14x14, 7x7) building padded rows costs as much as the nine
   * FMAs, and the 3x3 kernel is 2-4x faster there (equal on 112x112). The AVX-512 strip
   * kernels of the general family (K 3/5/7) are 1.05-1.45x slower than it at K = 3 (Zen 4,
   * 7x7 .. 112x112 planes). */
  if (K == 3 && pad == 1) return mte_depthwise3x3(N, C, H, W, stride, x, w, bias, activation, y);
  const mte_dw_kernel *k = mte__isa()->depthwise;
  mte_dw_geom g = {H, W, Ho, Wo, K, stride, pad, K + MTE_DW_AHEAD * stride, 0};
  /* a phase row holds the data columns ((W-1+pad)/S + 1) and what an output row reads
   * (columns up to max(Wo, vl) - 1 + (K-1)/S) */
  int64_t need = (Wo > k->vl ? Wo : k->vl) + (K - 1) / stride;
  const int64_t data = (W - 1 + pad) / stride + 1;
  g.wq = round_up16(need > data ? need : data);
  const int64_t planes = N * C, ring = mte__dw_ring_floats(&g), zrow = stride * g.wq;
  const int nt = threads_for((double)planes * (double)(Ho * Wo) * K * K, planes);
  mte_arena *arena;
  int is_default;
  arena = mte__arena_acquire(&is_default);
  if (!arena) return MTE_ENOMEM;
  size_t floats, bytes;
  if (!mte__mul_size((size_t)ring, (size_t)nt, &floats) || floats > SIZE_MAX / 8 ||
      !mte__mul_size(floats + (size_t)zrow, sizeof(float), &bytes)) {
    mte__arena_release(arena, is_default);
    return MTE_EOVERFLOW;
  }
  st = mte_arena_reserve(arena, mte_arena_footprint(bytes));
  float *buf = st == MTE_OK ? (float *)mte_arena_alloc(arena, bytes) : NULL;
  if (!buf) {
    mte__arena_release(arena, is_default);
    return st != MTE_OK ? st : MTE_ENOMEM;
  }
  memset(buf, 0, bytes);
  const float *zeros = buf;
  const mte_dw_plane_fn fn = k->plane;
  const int64_t in_plane = H * W, out_plane = Ho * Wo;
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) if (nt > 1)
#endif
  {
#ifdef _OPENMP
    const int tid = omp_get_thread_num();
#else
    const int tid = 0;
#endif
    float *my_ring = buf + zrow + (int64_t)tid * ring;
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
    for (int64_t p = 0; p < planes; ++p)
      fn(x + p * in_plane, &g, w + (p % C) * K * K, bias ? bias[p % C] : 0.0f, activation,
         zeros, my_ring, y + p * out_plane);
  }
  st = mte_arena_check(arena);
  mte__arena_release(arena, is_default);
  return st;
}
