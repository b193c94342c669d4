/*
 * gemm_bf16.c - the half-precision GEMM and conv2d (mte_bf16.h): bfloat16 / float16
 * storage, float32 products and sums, one rounding at the end.
 *
 * The loops are gemm.c's (GotoBLAS: NC columns of B, KC-deep slices, MC rows of A packed
 * per thread, an MR x NR microkernel on the packed panels); what differs is the packing,
 * which is where the precision changes hands. Two paths, chosen per call:
 *
 *   pairs   (bf16 where the CPU has a bf16 dot product: the family's `dot` microkernel)
 *           A and B are packed as pairs of consecutive k values in one uint32: panel
 *           A[q][r] = (A[i][2q], A[i][2q+1]), B[q][c] = (B[2q][j], B[2q+1][j]). The
 *           microkernel broadcasts an A pair and multiplies it into NR/2... pairs of B at
 *           once (VDPBF16PS: 16 lanes x 2 products per instruction, BFDOT: 4 x 2).
 *   widen   (fp16 always, bf16 elsewhere) the packing widens each value to float32 with the
 *           family's vector conversion (a shift for bf16, F16C / FCVTL for fp16) straight
 *           into the float32 microkernel's panel layout, and the ISA's float32 microkernel
 *           runs: only cache-sized panels are ever float32, so memory stays half.
 *
 * Both write float32 C; a half-precision output is computed into a float32 scratch block
 * (from the arena) and narrowed once, bias included, by the family's rounding conversion.
 * conv2d is im2col on the 16-bit storage (no conversion) followed by this GEMM per image.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mte_bf16_internal.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define PARALLEL_MIN_WORK (128.0 * 128.0 * 128.0)
#define CHUNK 256 /* k values widened at a time by the scattering packers (stack buffer) */

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static inline int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

/* two consecutive 16-bit values as one uint32, the first in the low half (little endian:
 * a plain unaligned load) */
static inline uint32_t load_pair(const uint16_t *p) {
  uint32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}
static inline uint32_t make_pair(uint16_t lo, uint16_t hi) {
  return (uint32_t)lo | ((uint32_t)hi << 16);
}

/* ---------------------------------------------------------------- the family */

static _Atomic int g_amx_allowed = 1; /* mte_set_bf16_amx */

int mte_set_bf16_amx(int allowed) {
  return atomic_exchange(&g_amx_allowed, allowed != 0);
}

const mte_bf16_kernel *mte__bf16_kernel(void) {
  const mte_bf16_kernel *k = mte__isa()->bf16;
  const uint64_t have = mte_cpu_features();
  const int amx = atomic_load_explicit(&g_amx_allowed, memory_order_relaxed);
  while (((k->needs & have) != k->needs || (k->gemm && !amx)) && k->fallback) k = k->fallback;
  return k;
}

static mte_half_widen_fn widen_of(const mte_bf16_kernel *k, int dt) {
  return dt == MTE_DT_BF16 ? k->bf16_to_f32 : k->f16_to_f32;
}
static mte_half_narrow_fn narrow_of(const mte_bf16_kernel *k, int dt) {
  return dt == MTE_DT_BF16 ? k->f32_to_bf16 : k->f32_to_f16;
}

/* ---------------------------------------------------------------- packing: widen */

/* `rows` runs of kc 16-bit values (run r at src + r*ld) widened and transposed into one
 * float32 panel of width w: dst[p*w + r], runs past `rows` zero. With the float32 kernel's
 * transposing packer (pack_b_trans: register transposes) on widened chunks of TCHUNK
 * values; without one, widened runs scattered with stride w. */
#define TCHUNK 64
#define TMAX_W 64
static void widen_transposed(const mte_sgemm_kernel *sk, mte_half_widen_fn widen, int w,
                             int64_t rows, int64_t kc, const uint16_t *src, int64_t ld,
                             float *MTE_RESTRICT dst) {
  if (sk->pack_b_trans && w <= TMAX_W) {
    float tmp[TMAX_W * TCHUNK] __attribute__((aligned(MTE_ALIGN)));
    for (int64_t p = 0; p < kc; p += TCHUNK) {
      const int64_t n = min64(TCHUNK, kc - p);
      for (int64_t r = 0; r < rows; ++r) widen(src + r * ld + p, tmp + r * TCHUNK, n);
      sk->pack_b_trans(w, rows, n, tmp, TCHUNK, 0, 0, dst + p * w);
    }
    return;
  }
  float tmp[CHUNK];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t p = 0; p < kc; p += CHUNK) {
      const int64_t n = min64(CHUNK, kc - p);
      widen(src + r * ld + p, tmp, n);
      for (int64_t t = 0; t < n; ++t) dst[(p + t) * w + r] = tmp[t];
    }
  for (int64_t r = rows; r < w; ++r)
    for (int64_t p = 0; p < kc; ++p) dst[p * w + r] = 0.0f;
}

/* rows [i0, i0+rows) x k [p0, p0+kc) of op(A) as float32 MR-tall panels
 * dst[t*mr*kc + p*mr + r] (gemm.c's layout); rows past `rows` are zero */
static void pack_a_widen(const mte_sgemm_kernel *sk, mte_half_widen_fn widen, int mr,
                         int64_t rows, int64_t kc, const uint16_t *A, int64_t lda, int trans,
                         int64_t i0, int64_t p0, float *MTE_RESTRICT out) {
  for (int64_t ir = 0; ir < rows; ir += mr) {
    const int64_t m = min64(mr, rows - ir);
    float *dst = out + ir * kc;
    if (trans) { /* each k step: m contiguous values */
      for (int64_t p = 0; p < kc; ++p) {
        float *d = dst + p * mr;
        widen(A + (p0 + p) * lda + i0 + ir, d, m);
        for (int64_t r = m; r < mr; ++r) d[r] = 0.0f;
      }
    } else { /* each row contiguous along k: a transpose of m rows */
      widen_transposed(sk, widen, mr, m, kc, A + (i0 + ir) * lda + p0, lda, dst);
    }
  }
}

/* columns [j, j+cols) x k [p0, p0+kc) of op(B) as one float32 NR-wide panel
 * dst[p*nr + c]; columns past `cols` are zero */
static void pack_b_widen(const mte_sgemm_kernel *sk, mte_half_widen_fn widen, int nr,
                         int64_t cols, int64_t kc, const uint16_t *B, int64_t ldb, int trans,
                         int64_t j, int64_t p0, float *MTE_RESTRICT dst) {
  if (trans) {
    widen_transposed(sk, widen, nr, cols, kc, B + j * ldb + p0, ldb, dst);
    return;
  }
  for (int64_t p = 0; p < kc; ++p) {
    float *d = dst + p * nr;
    widen(B + (p0 + p) * ldb + j, d, cols);
    for (int64_t c = cols; c < nr; ++c) d[c] = 0.0f;
  }
}

/* ---------------------------------------------------------------- packing: pairs */

/* op(A) rows as MR-tall panels of k pairs: dst[t*mr*kq + q*mr + r] holds k = p0+2q and
 * p0+2q+1 of row i0+ir+r (kq = ceil(kc/2); an odd kc's last pair and rows past `rows`
 * are zero-padded) */
static void pack_a_pairs(int mr, int64_t rows, int64_t kc, const uint16_t *A, int64_t lda,
                         int trans, int64_t i0, int64_t p0, uint32_t *MTE_RESTRICT out) {
  const int64_t kq = ceil_div(kc, 2), even = kc / 2;
  for (int64_t ir = 0; ir < rows; ir += mr) {
    const int64_t m = min64(mr, rows - ir);
    uint32_t *dst = out + ir * kq;
    if (trans) { /* op(A)[i][p] = A[p*lda + i]: two k rows interleaved */
      for (int64_t q = 0; q < kq; ++q) {
        const uint16_t *lo = A + (p0 + 2 * q) * lda + i0 + ir;
        const uint16_t *hi = q < even ? lo + lda : NULL;
        uint32_t *d = dst + q * mr;
        for (int64_t r = 0; r < m; ++r) d[r] = make_pair(lo[r], hi ? hi[r] : 0);
        for (int64_t r = m; r < mr; ++r) d[r] = 0;
      }
    } else { /* a row along k is already a run of pairs */
      for (int64_t r = 0; r < m; ++r) {
        const uint16_t *src = A + (i0 + ir + r) * lda + p0;
        for (int64_t q = 0; q < even; ++q) dst[q * mr + r] = load_pair(src + 2 * q);
        if (even < kq) dst[even * mr + r] = src[kc - 1];
      }
      for (int64_t r = m; r < mr; ++r)
        for (int64_t q = 0; q < kq; ++q) dst[q * mr + r] = 0;
    }
  }
}

/* op(B) columns [j, j+cols) as one NR-wide panel of k pairs: dst[q*nr + c] */
static void pack_b_pairs(int nr, int64_t cols, int64_t kc, const uint16_t *B, int64_t ldb,
                         int trans, int64_t j, int64_t p0, uint32_t *MTE_RESTRICT dst) {
  const int64_t kq = ceil_div(kc, 2), even = kc / 2;
  if (!trans) { /* two rows of B interleaved */
    for (int64_t q = 0; q < kq; ++q) {
      const uint16_t *lo = B + (p0 + 2 * q) * ldb + j;
      uint32_t *d = dst + q * nr;
      if (q < even) {
        const uint16_t *hi = lo + ldb;
        for (int64_t c = 0; c < cols; ++c) d[c] = make_pair(lo[c], hi[c]);
      } else {
        for (int64_t c = 0; c < cols; ++c) d[c] = lo[c];
      }
      for (int64_t c = cols; c < nr; ++c) d[c] = 0;
    }
    return;
  }
  for (int64_t c = 0; c < cols; ++c) { /* op(B)[p][j] = B[j*ldb + p]: a run of pairs */
    const uint16_t *src = B + (j + c) * ldb + p0;
    for (int64_t q = 0; q < even; ++q) dst[q * nr + c] = load_pair(src + 2 * q);
    if (even < kq) dst[even * nr + c] = src[kc - 1];
  }
  for (int64_t c = cols; c < nr; ++c)
    for (int64_t q = 0; q < kq; ++q) dst[q * nr + c] = 0;
}

/* ---------------------------------------------------------------- driver */

typedef struct half_args {
  int dt, trans_a, trans_b;
  int64_t M, N, K;
  float alpha, beta;
  const uint16_t *A, *B;
  int64_t lda, ldb;
  float *C; /* float32 (the output, or the scratch block a half output is narrowed from) */
  int64_t ldc;
} half_args;

/* one call's path, tile and blocks */
typedef struct half_plan {
  const mte_bf16_kernel *bk;
  const mte_sgemm_kernel *sk;
  int pairs;              /* 1: bk->dot on pair panels; 0: widen + sk->ukernel */
  mte_half_widen_fn widen;
  int mr, nr;
  int64_t kc, nc, mc, m_blocks, n_split;
  int nthreads;
  size_t bpack_words, apack_words; /* 4-byte words: per B block; per thread */
} half_plan;

static void make_plan(const half_args *g, half_plan *pl) {
  const mte_bf16_kernel *bk = mte__bf16_kernel();
  const mte_sgemm_kernel *sk = mte__isa()->sgemm;
  pl->bk = bk;
  pl->sk = sk;
  pl->pairs = g->dt == MTE_DT_BF16 && bk->dot != NULL;
  pl->widen = widen_of(bk, g->dt);
  pl->mr = pl->pairs ? bk->mr : sk->mr;
  pl->nr = pl->pairs ? bk->nr : sk->nr;
  const int64_t mr = pl->mr, nr = pl->nr;
  const int64_t kc_max = pl->pairs ? bk->kc : sk->kc;
  const int64_t mc_max = pl->pairs ? bk->mc : sk->mc;
  const int64_t nc_max = pl->pairs ? bk->nc : sk->nc;
  /* equal K slices, even (every slice but the last holds whole pairs) */
  const int64_t nk = ceil_div(g->K, kc_max);
  pl->kc = round_up(ceil_div(g->K, nk), 2);
  pl->nc = min64(nc_max, round_up(g->N, nr));

  int nt = mte__num_threads();
  if ((double)g->M * (double)g->N * (double)g->K <= PARALLEL_MIN_WORK) nt = 1;
  const int64_t tiles = ceil_div(g->M, mr) * ceil_div(min64(g->N, pl->nc), nr);
  if (nt > tiles) nt = (int)max64(1, tiles);
  pl->mc = min64(mc_max, round_up(g->M, mr));
  if (nt > 1) { /* equal row blocks, a multiple of nt of them (as gemm.c) */
    const int64_t per_thread = ceil_div(g->M, (int64_t)nt * pl->mc);
    pl->mc = min64(pl->mc, round_up(ceil_div(g->M, per_thread * nt), mr));
  }
  pl->m_blocks = ceil_div(g->M, pl->mc);
  if (pl->m_blocks < nt) {
    pl->mc = round_up(ceil_div(g->M, nt), mr);
    pl->m_blocks = ceil_div(g->M, pl->mc);
  }
  pl->n_split = pl->m_blocks >= nt ? 1 : ceil_div(nt, pl->m_blocks);
  pl->nthreads = nt;
  pl->bpack_words = (size_t)pl->kc * (size_t)round_up(pl->nc, nr);
  pl->apack_words = (size_t)pl->kc * (size_t)pl->mc;
}

/* the tile at c (rows x cols valid) of C += packed a @ packed b, beta for this slice */
static void tile(const half_plan *pl, int64_t kc, const void *a, const void *b, float *c,
                 int64_t ldc, int64_t rows, int64_t cols, float alpha, float beta) {
  const int64_t kq = ceil_div(kc, 2);
  if (rows == pl->mr && cols == pl->nr) {
    if (pl->pairs)
      pl->bk->dot(kq, (const uint32_t *)a, (const uint32_t *)b, c, ldc, alpha, beta);
    else
      pl->sk->ukernel(kc, (const float *)a, (const float *)b, c, ldc, alpha, beta);
    return;
  }
  float t[MTE_MAX_TILE] __attribute__((aligned(MTE_ALIGN)));
  if (pl->pairs)
    pl->bk->dot(kq, (const uint32_t *)a, (const uint32_t *)b, t, pl->nr, alpha, 0.0f);
  else
    mte__ukernel_edge(pl->sk, kc, (const float *)a, (const float *)b, t, cols, alpha);
  for (int64_t i = 0; i < rows; ++i) {
    float *dst = c + i * ldc;
    const float *src = t + i * pl->nr;
    if (beta == 0.0f)
      for (int64_t j = 0; j < cols; ++j) dst[j] = src[j];
    else
      for (int64_t j = 0; j < cols; ++j) dst[j] = src[j] + beta * dst[j];
  }
}

static void run_gemm(const half_args *g, const half_plan *pl, uint32_t *bpack,
                     uint32_t *apack_all) {
  const int64_t mr = pl->mr, nr = pl->nr, M = g->M, N = g->N, K = g->K;
  const int64_t items = pl->m_blocks * pl->n_split;
#ifdef _OPENMP
#pragma omp parallel num_threads(pl->nthreads) if (pl->nthreads > 1)
#endif
  {
#ifdef _OPENMP
    const int tid = omp_get_thread_num();
#else
    const int tid = 0;
#endif
    uint32_t *apack = apack_all + (size_t)tid * pl->apack_words;
    for (int64_t jc = 0; jc < N; jc += pl->nc) {
      const int64_t nc = min64(pl->nc, N - jc), n_panels = ceil_div(nc, nr);
      for (int64_t pc = 0; pc < K; pc += pl->kc) {
        const int64_t kc = min64(pl->kc, K - pc);
        /* words per panel row: kc floats, or ceil(kc/2) pairs */
        const int64_t kw = pl->pairs ? ceil_div(kc, 2) : kc;
        const float beta = pc == 0 ? g->beta : 1.0f;
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t q = 0; q < n_panels; ++q) {
          const int64_t cols = min64(nr, nc - q * nr);
          uint32_t *dst = bpack + q * nr * kw;
          if (pl->pairs)
            pack_b_pairs((int)nr, cols, kc, g->B, g->ldb, g->trans_b, jc + q * nr, pc, dst);
          else
            pack_b_widen(pl->sk, pl->widen, (int)nr, cols, kc, g->B, g->ldb, g->trans_b, jc + q * nr,
                         pc, (float *)dst);
        }
        int64_t packed_ic = -1;
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t it = 0; it < items; ++it) {
          const int64_t ic = (it / pl->n_split) * pl->mc, part = it % pl->n_split;
          const int64_t mc = min64(pl->mc, M - ic);
          if (ic != packed_ic) {
            if (pl->pairs)
              pack_a_pairs((int)mr, mc, kc, g->A, g->lda, g->trans_a, ic, pc, apack);
            else
              pack_a_widen(pl->sk, pl->widen, (int)mr, mc, kc, g->A, g->lda, g->trans_a, ic, pc,
                           (float *)apack);
            packed_ic = ic;
          }
          const int64_t per = ceil_div(n_panels, pl->n_split);
          const int64_t q1 = min64(n_panels, part * per + per);
          for (int64_t q = part * per; q < q1; ++q) {
            const int64_t jr = q * nr, cols = min64(nr, nc - jr);
            for (int64_t ir = 0; ir < mc; ir += mr)
              tile(pl, kc, apack + ir * kw, bpack + jr * kw,
                   g->C + (ic + ir) * g->ldc + jc + jr, g->ldc, min64(mr, mc - ir), cols,
                   g->alpha, beta);
          }
        }
      }
    }
  }
}

/* ---------------------------------------------------------------- validation */

static int check_matrix(int64_t rows, int64_t cols, int64_t ld, const void *p, int used,
                        size_t elem) {
  if (ld < max64(1, cols)) return MTE_EINVAL;
  if (!used || rows == 0 || cols == 0) return MTE_OK;
  if (!p) return MTE_EINVAL;
  if ((rows - 1) > (INT64_MAX - cols) / ld) return MTE_EOVERFLOW;
  if ((uint64_t)((rows - 1) * ld + cols) > SIZE_MAX / elem) return MTE_EOVERFLOW;
  return MTE_OK;
}

static int valid_half(int dt) { return dt == MTE_DT_BF16 || dt == MTE_DT_F16; }

/* ---------------------------------------------------------------- public entry points */

static int half_gemm(int ab_dtype, int c_dtype, int trans_a, int trans_b, int64_t M,
                     int64_t N, int64_t K, float alpha, const uint16_t *A, int64_t lda,
                     const uint16_t *B, int64_t ldb, float beta, void *C, int64_t ldc,
                     const float *bias, int bias_mode, mte_arena *arena) {
  const half_args g0 = {ab_dtype, trans_a != 0, trans_b != 0, M, N, K, alpha, beta,
                        A, B, lda, ldb, NULL, 0};
  half_args g = g0;
  const int half_out = c_dtype != MTE_DT_F32;
  const mte_bf16_kernel *bk = mte__bf16_kernel();
  half_plan pl = {0};
  const int uses_ab = M > 0 && N > 0 && K > 0 && alpha != 0.0f;
  /* a whole-GEMM kernel (AMX) takes bf16 products; its workspace is one block */
  const int whole = uses_ab && ab_dtype == MTE_DT_BF16 && bk->gemm != NULL;
  int whole_threads = 1;
  if (uses_ab && !whole) make_plan(&g, &pl);

  size_t scratch = 0, b_bytes = 0, a_bytes = 0, need = 0, t;
  if (half_out && !mte__mul_size((size_t)M * (size_t)N, sizeof(float), &scratch))
    return MTE_EOVERFLOW;
  if (whole) {
    if ((double)M * (double)N * (double)K > PARALLEL_MIN_WORK) whole_threads = mte__num_threads();
    b_bytes = bk->gemm_workspace(M, N, K, whole_threads);
  } else if (uses_ab && (!mte__mul_size(pl.bpack_words, 4, &b_bytes) ||
                         !mte__mul_size(pl.apack_words, 4 * (size_t)pl.nthreads, &a_bytes)))
    return MTE_EOVERFLOW;
  const size_t parts[3] = {scratch, b_bytes, a_bytes};
  for (int i = 0; i < 3; ++i)
    if (parts[i]) {
      if (!(t = mte_arena_footprint(parts[i])) || !mte__add_size(need, t, &need))
        return MTE_EOVERFLOW;
    }
  mte_arena_reset(arena);
  int st = mte_arena_reserve(arena, need);
  if (st != MTE_OK) return st;

  if (half_out) { /* compute into float32, narrow once at the end */
    g.C = (float *)mte_arena_alloc(arena, scratch);
    g.ldc = N;
    if (!g.C) return MTE_ENOMEM;
    if (beta != 0.0f)
      for (int64_t i = 0; i < M; ++i)
        widen_of(bk, c_dtype)((const uint16_t *)C + i * ldc, g.C + i * N, N);
  } else {
    g.C = (float *)C;
    g.ldc = ldc;
  }

  if (whole) {
    void *ws = mte_arena_alloc(arena, b_bytes);
    if (!ws) return MTE_ENOMEM;
    bk->gemm(trans_a != 0, trans_b != 0, M, N, K, alpha, A, lda, B, ldb, beta, g.C, g.ldc, ws,
             whole_threads);
  } else if (uses_ab) {
    uint32_t *bpack = (uint32_t *)mte_arena_alloc(arena, b_bytes);
    uint32_t *apack = (uint32_t *)mte_arena_alloc(arena, a_bytes);
    if (!bpack || !apack) return MTE_ENOMEM;
    run_gemm(&g, &pl, bpack, apack);
  } else { /* no product: C = beta * C */
    for (int64_t i = 0; i < M; ++i) {
      float *ci = g.C + i * g.ldc;
      if (beta == 0.0f)
        memset(ci, 0, (size_t)N * sizeof(float));
      else if (beta != 1.0f)
        for (int64_t j = 0; j < N; ++j) ci[j] *= beta;
    }
  }

  /* bias, then the one rounding of a half output */
  for (int64_t i = 0; i < M; ++i) {
    float *ci = g.C + i * g.ldc;
    if (bias && bias_mode == MTE_BIAS_PER_ROW)
      for (int64_t j = 0; j < N; ++j) ci[j] += bias[i];
    else if (bias && bias_mode == MTE_BIAS_PER_COL)
      for (int64_t j = 0; j < N; ++j) ci[j] += bias[j];
    if (half_out) narrow_of(bk, c_dtype)(ci, (uint16_t *)C + i * ldc, N);
  }
  st = mte_arena_check(arena);
  mte_arena_reset(arena);
  return st;
}

int mte_half_gemm(int ab_dtype, int c_dtype, int trans_a, int trans_b, int64_t M, int64_t N,
                  int64_t K, float alpha, const uint16_t *A, int64_t lda, const uint16_t *B,
                  int64_t ldb, float beta, void *C, int64_t ldc, const float *bias,
                  int bias_mode, mte_arena *arena) {
  if (!valid_half(ab_dtype) || (c_dtype != MTE_DT_F32 && c_dtype != ab_dtype))
    return MTE_EINVAL;
  if (M < 0 || N < 0 || K < 0) return MTE_EINVAL;
  const int uses_ab = M > 0 && N > 0 && K > 0 && alpha != 0.0f;
  int st;
  if ((st = check_matrix(trans_a ? K : M, trans_a ? M : K, lda, A, uses_ab, 2))) return st;
  if ((st = check_matrix(trans_b ? N : K, trans_b ? K : N, ldb, B, uses_ab, 2))) return st;
  if ((st = check_matrix(M, N, ldc, C, 1, c_dtype == MTE_DT_F32 ? 4 : 2))) return st;
  if (bias && bias_mode != MTE_BIAS_PER_ROW && bias_mode != MTE_BIAS_PER_COL)
    return MTE_EINVAL;
  if (M == 0 || N == 0) return MTE_OK;
  if (arena) return half_gemm(ab_dtype, c_dtype, trans_a, trans_b, M, N, K, alpha, A, lda, B,
                              ldb, beta, C, ldc, bias, bias_mode, arena);
  int is_default = 0;
  mte_arena *a = mte__arena_acquire(&is_default);
  if (!a) return MTE_ENOMEM;
  st = half_gemm(ab_dtype, c_dtype, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C,
                 ldc, bias, bias_mode, a);
  mte__arena_release(a, is_default);
  return st;
}

/* im2col of one group of one image on 16-bit storage: cols[(c*KH + i)*KW + j][oh*WO + ow]
 * = x[c][oh*sh - pt + i*dh][ow*sw - pl + j*dw], zero outside the image */
static void im2col_u16(const uint16_t *x, int64_t C, int64_t H, int64_t W, int64_t KH,
                       int64_t KW, int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh,
                       int64_t dw, int64_t HO, int64_t WO, uint16_t *MTE_RESTRICT cols) {
  for (int64_t c = 0; c < C; ++c)
    for (int64_t i = 0; i < KH; ++i)
      for (int64_t j = 0; j < KW; ++j) {
        uint16_t *row = cols + ((c * KH + i) * KW + j) * HO * WO;
        for (int64_t oh = 0; oh < HO; ++oh) {
          const int64_t ih = oh * sh - pt + i * dh;
          uint16_t *o = row + oh * WO;
          if (ih < 0 || ih >= H) {
            memset(o, 0, (size_t)WO * sizeof *o);
            continue;
          }
          const uint16_t *xr = x + (c * H + ih) * W;
          for (int64_t ow = 0; ow < WO; ++ow) {
            const int64_t iw = ow * sw - pl + j * dw;
            o[ow] = iw >= 0 && iw < W ? xr[iw] : 0;
          }
        }
      }
}

int mte_half_conv2d(int ab_dtype, int c_dtype, int64_t N, int64_t C, int64_t H, int64_t W,
                    const uint16_t *x, int64_t O, int64_t KH, int64_t KW, const uint16_t *w,
                    const float *bias, int64_t sh, int64_t sw, int64_t pt, int64_t pb,
                    int64_t pl, int64_t pr, int64_t dh, int64_t dw, int64_t groups, void *y,
                    mte_arena *arena) {
  if (!valid_half(ab_dtype) || (c_dtype != MTE_DT_F32 && c_dtype != ab_dtype))
    return MTE_EINVAL;
  if (N < 0 || C < 1 || H < 1 || W < 1 || O < 1 || KH < 1 || KW < 1 || sh < 1 || sw < 1 ||
      pt < 0 || pb < 0 || pl < 0 || pr < 0 || dh < 1 || dw < 1 || groups < 1 ||
      C % groups || O % groups)
    return MTE_EINVAL;
  const int64_t eh = H + pt + pb - dh * (KH - 1) - 1, ew = W + pl + pr - dw * (KW - 1) - 1;
  if (eh < 0 || ew < 0) return MTE_EINVAL;
  const int64_t HO = eh / sh + 1, WO = ew / sw + 1, P = HO * WO;
  const int64_t Cg = C / groups, Og = O / groups, Kg = Cg * KH * KW;
  if (N == 0) return MTE_OK;
  if (!x || !w || !y) return MTE_EINVAL;
  const size_t ysize = c_dtype == MTE_DT_F32 ? 4 : 2;
  /* a 1x1, stride 1, unpadded conv reads x as the GEMM's B directly */
  const int direct = KH == 1 && KW == 1 && sh == 1 && sw == 1 && !(pt | pb | pl | pr);
  uint16_t *cols = NULL;
  if (!direct) {
    size_t bytes;
    if (!mte__mul_size((size_t)Kg * (size_t)P, sizeof *cols, &bytes)) return MTE_EOVERFLOW;
    cols = (uint16_t *)malloc(bytes); /* the GEMM resets the arena: its own buffer */
    if (!cols) return MTE_ENOMEM;
  }
  int st = MTE_OK;
  for (int64_t n = 0; n < N && st == MTE_OK; ++n)
    for (int64_t gi = 0; gi < groups && st == MTE_OK; ++gi) {
      const uint16_t *xg = x + (n * C + gi * Cg) * H * W;
      if (!direct) im2col_u16(xg, Cg, H, W, KH, KW, sh, sw, pt, pl, dh, dw, HO, WO, cols);
      char *yg = (char *)y + (size_t)((n * O + gi * Og) * P) * ysize;
      st = mte_half_gemm(ab_dtype, c_dtype, 0, 0, Og, P, Kg, 1.0f, w + gi * Og * Kg, Kg,
                         direct ? xg : cols, P, 0.0f, yg, P, bias ? bias + gi * Og : NULL,
                         MTE_BIAS_PER_ROW, arena);
    }
  free(cols);
  return st;
}

int mte_half_to_f32(int dtype, const uint16_t *src, float *dst, int64_t n) {
  if (!valid_half(dtype) || n < 0 || (n > 0 && (!src || !dst))) return MTE_EINVAL;
  widen_of(mte__bf16_kernel(), dtype)(src, dst, n);
  return MTE_OK;
}

int mte_f32_to_half(int dtype, const float *src, uint16_t *dst, int64_t n) {
  if (!valid_half(dtype) || n < 0 || (n > 0 && (!src || !dst))) return MTE_EINVAL;
  narrow_of(mte__bf16_kernel(), dtype)(src, dst, n);
  return MTE_OK;
}

const char *mte_half_gemm_path(int ab_dtype) {
  if (!valid_half(ab_dtype)) return NULL;
  const mte_bf16_kernel *k = mte__bf16_kernel();
  if (ab_dtype == MTE_DT_BF16 && (k->dot || k->gemm)) return k->path;
  /* the widening path runs the row's float32 microkernel */
  static _Thread_local char buf[64];
  snprintf(buf, sizeof buf, "%s widen+sgemm", mte__isa()->sgemm->isa);
  return buf;
}

static double seconds_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

double mte_bf16_peak_gflops(double seconds) {
  const mte_bf16_kernel *k = mte__bf16_kernel();
  if (!k->dot_peak) return mte_peak_gflops(seconds); /* the widening path's ceiling */
  if (!(seconds > 0.0)) seconds = 0.1;
  if (seconds > 10.0) seconds = 10.0;
  double best = 0.0, spent = 0.0; /* the best of short runs, as mte_peak_gflops */
  int64_t rounds = 1 << 16;
  while (spent < seconds) {
    const double t0 = seconds_now();
    const double flops = k->dot_peak(rounds);
    const double dt = seconds_now() - t0;
    spent += dt;
    if (dt < 2e-3) {
      rounds *= 2;
      continue;
    }
    if (flops / dt > best) best = flops / dt;
  }
  return best * 1e-9;
}
