/*
 * gemm.c - blocked single-precision matrix multiply (the GotoBLAS / BLIS structure).
 *
 *   C = act(alpha * op(A) @ op(B) + beta * C + bias + residual)   (row-major, see mte.h)
 *
 * Five loops around a microkernel, each sized for one level of the memory hierarchy:
 *
 *   for jc in N step NC:                 NC columns of B       (B panel lives in L3)
 *     for pc in K step KC:               KC-deep slice
 *       pack B[pc:pc+KC, jc:jc+NC] into NR-wide panels     -> arena (shared by threads)
 *       for ic in M step MC:             (parallel over threads)
 *         pack A[ic:ic+MC, pc:pc+KC] into MR-tall panels   -> arena (one per thread)
 *         for jr in NC step NR:          B micro-panel stays in L1
 *           for ir in MC step MR:        A micro-panel streams from L2
 *             microkernel: MR x NR tile of C += A panel @ B panel (in registers)
 *             if last pc: epilogue (bias, residual, activation) on the tile, in L1
 *
 * Packing copies each block once into the exact order the microkernel reads it (unit
 * stride, aligned, zero-padded to full MR/NR), so the microkernel never sees transposes,
 * leading dimensions or ragged edges. Edge tiles are computed into a small stack tile and
 * copied out, so partial tiles never write outside C. Only the microkernel is ISA
 * specific (src/arch/...); everything here is portable C.
 */
#include <string.h>

#include "mte_epilogue.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* Below this many multiply-adds a call runs on one thread (a fork/join costs more). */
#define MTE_GEMM_PARALLEL_MIN_WORK (128.0 * 128.0 * 128.0)

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static inline int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

/* ---------------------------------------------------------------- packing */

/* d[0..n) = s[0..n) for a full panel row (n = MR or NR): with a constant trip count for
 * the tile sizes of the kernels, so that the copy is a few vector moves (a loop of runtime
 * length becomes a memmove call per k step, which for a K = 1024 weight gradient cost a
 * third of the GEMM) */
static inline void copy_run(float *MTE_RESTRICT d, const float *MTE_RESTRICT s, int n) {
#define COPY_CASE(N) \
  case N:            \
    for (int r = 0; r < N; ++r) d[r] = s[r]; \
    break;
  switch (n) {
    COPY_CASE(4)
    COPY_CASE(6)
    COPY_CASE(8)
    COPY_CASE(12)
    COPY_CASE(16)
    COPY_CASE(32)
    default:
      for (int r = 0; r < n; ++r) d[r] = s[r];
  }
#undef COPY_CASE
}

/*
 * Pack rows [i0, i0+mc) x cols [p0, p0+kc) of op(A) into ceil(mc/mr) panels; panel q holds
 * rows i0+q*mr .. +mr as out[q*mr*kc + p*mr + r]. Rows past mc are zero.
 * op(A)[i][p] = trans ? A[p*lda + i] : A[i*lda + p].
 * Without trans a panel is a transpose of mr rows of A: exactly what the ISA's pack_b_trans
 * does for a B^T panel (nr = mr), with its register transposes where it has them.
 */
static void pack_a(const mte_sgemm_kernel *k, int64_t mc, int64_t kc, const float *A,
                   int64_t lda, int trans, int64_t i0, int64_t p0, float *MTE_RESTRICT out) {
  const int mr = k->mr;
  for (int64_t ir = 0; ir < mc; ir += mr) {
    int64_t rows = min64(mr, mc - ir);
    float *dst = out + ir * kc;
    if (trans) { /* each k step is a contiguous run of rows */
      for (int64_t p = 0; p < kc; ++p) {
        const float *src = A + (p0 + p) * lda + (i0 + ir);
        float *d = dst + p * mr;
        if (rows == mr) {
          copy_run(d, src, mr);
          continue;
        }
        int64_t r = 0;
        for (; r < rows; ++r) d[r] = src[r];
        for (; r < mr; ++r) d[r] = 0.0f;
      }
    } else if (k->pack_b_trans) {
      k->pack_b_trans(mr, rows, kc, A, lda, i0 + ir, p0, dst);
    } else { /* each row is contiguous along k: walk rows, scatter with stride mr */
      for (int64_t r = 0; r < rows; ++r) {
        const float *src = A + (i0 + ir + r) * lda + p0;
        for (int64_t p = 0; p < kc; ++p) dst[p * mr + r] = src[p];
      }
      for (int64_t r = rows; r < mr; ++r)
        for (int64_t p = 0; p < kc; ++p) dst[p * mr + r] = 0.0f;
    }
  }
}

/*
 * Pack rows [p0, p0+kc) x cols [j0, j0+nc) of op(B) into ceil(nc/nr) panels; panel q holds
 * cols j0+q*nr .. +nr as out[q*nr*kc + p*nr + c]. Columns past nc are zero.
 * op(B)[p][j] = trans ? B[j*ldb + p] : B[p*ldb + j].
 */
static void pack_b_panel(int nr, int64_t cols, int64_t kc, const float *B, int64_t ldb,
                         int trans, int64_t j, int64_t p0, float *MTE_RESTRICT dst) {
  if (!trans) {
    for (int64_t p = 0; p < kc; ++p) {
      const float *src = B + (p0 + p) * ldb + j;
      float *d = dst + p * nr;
      if (cols == nr) {
        copy_run(d, src, nr);
        continue;
      }
      int64_t c = 0;
      for (; c < cols; ++c) d[c] = src[c];
      for (; c < nr; ++c) d[c] = 0.0f;
    }
  } else {
    for (int64_t c = 0; c < cols; ++c) {
      const float *src = B + (j + c) * ldb + p0;
      for (int64_t p = 0; p < kc; ++p) dst[p * nr + c] = src[p];
    }
    for (int64_t c = cols; c < nr; ++c)
      for (int64_t p = 0; p < kc; ++p) dst[p * nr + c] = 0.0f;
  }
}

/* ---------------------------------------------------------------- epilogue */

/* the epilogue's view of the tile of C at (row0, col0) of the full matrix */
static mte_ep_tile tile_epilogue(const mte_epilogue *ep, int64_t row0, int64_t col0) {
  mte_ep_tile t = {ep->bias_mode == MTE_BIAS_PER_ROW ? ep->bias + row0 : NULL,
                   ep->bias_mode == MTE_BIAS_PER_COL ? ep->bias + col0 : NULL,
                   ep->residual ? ep->residual + row0 * ep->ld_residual + col0 : NULL,
                   ep->ld_residual, ep->activation};
  return t;
}

/* the epilogue on the rows x cols tile of C at (row0, col0) of the full matrix */
static void apply_epilogue(float *c, int64_t ldc, int64_t rows, int64_t cols, int64_t row0,
                           int64_t col0, const mte_epilogue *ep, mte_epilogue_tile_fn fn) {
  if (!ep) return;
  const mte_ep_tile t = tile_epilogue(ep, row0, col0);
  fn(c, ldc, rows, cols, &t);
}

/* C = beta * C (C not read when beta == 0), then the epilogue: the K == 0 / alpha == 0 case */
static void scale_c(int64_t M, int64_t N, float beta, float *C, int64_t ldc,
                    const mte_epilogue *ep, mte_epilogue_tile_fn fn) {
  for (int64_t i = 0; i < M; ++i) {
    float *ci = C + i * ldc;
    if (beta == 0.0f)
      memset(ci, 0, (size_t)N * sizeof(float));
    else if (beta != 1.0f)
      for (int64_t j = 0; j < N; ++j) ci[j] *= beta;
  }
  apply_epilogue(C, ldc, M, N, 0, 0, ep, fn);
}

/* ---------------------------------------------------------------- macro-kernel */

/*
 * Multiply a packed mc x kc block of A by packed B panels [q0, q1) (each kc x nr) into
 * C (already offset to the block's top-left corner, which is at (row0, col0) of the full
 * matrix). `last` says this is the final kc slice, so the epilogue runs.
 */
static void macro_kernel(const mte_sgemm_kernel *k, int64_t mc, int64_t nc, int64_t q0,
                         int64_t q1, int64_t kc, const float *ap, const float *bp, float *c,
                         int64_t ldc, float alpha, float beta, int last,
                         const mte_epilogue *ep, mte_epilogue_tile_fn ep_fn, int64_t row0,
                         int64_t col0) {
  const int mr = k->mr, nr = k->nr;
  float tile[MTE_MAX_TILE] __attribute__((aligned(MTE_ALIGN)));
  for (int64_t q = q0; q < q1; ++q) {
    int64_t jr = q * nr;
    int64_t cols = min64(nr, nc - jr);
    const float *b = bp + jr * kc;
    for (int64_t ir = 0; ir < mc; ir += mr) {
      int64_t rows = min64(mr, mc - ir);
      const float *a = ap + ir * kc;
      float *ct = c + ir * ldc + jr;
      if (last && ep && ep->residual) /* fetch the residual tile while the tile is computed */
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < cols; j += 16)
            __builtin_prefetch(ep->residual + (row0 + ir + i) * ep->ld_residual + col0 + jr + j);
      if (rows == mr && cols == nr) {
        if (last && ep) { /* the epilogue fused into the store where it can be */
          const mte_ep_tile t = tile_epilogue(ep, row0 + ir, col0 + jr);
          mte__ukernel_with_epilogue(k, kc, a, b, ct, ldc, alpha, beta, &t, ep_fn);
          continue;
        }
        k->ukernel(kc, a, b, ct, ldc, alpha, beta);
      } else { /* ragged edge: full tile on the stack, copy the valid part */
        mte__ukernel_edge(k, kc, a, b, tile, cols, alpha);
        for (int64_t i = 0; i < rows; ++i) {
          float *dst = ct + i * ldc;
          const float *src = tile + i * nr;
          if (beta == 0.0f)
            for (int64_t j = 0; j < cols; ++j) dst[j] = src[j];
          else
            for (int64_t j = 0; j < cols; ++j) dst[j] = src[j] + beta * dst[j];
        }
      }
      if (last && ep) apply_epilogue(ct, ldc, rows, cols, row0 + ir, col0 + jr, ep, ep_fn);
    }
  }
}

/* ---------------------------------------------------------------- driver */

typedef struct gemm_args {
  int trans_a, trans_b;
  int64_t M, N, K;
  float alpha, beta;
  const float *A;
  int64_t lda;
  const float *B;
  int64_t ldb;
  float *C;
  int64_t ldc;
  const mte_epilogue *ep;
  mte_epilogue_tile_fn ep_fn; /* the active ISA's epilogue (set when ep is) */
} gemm_args;

/* Block sizes for one call: the kernel's defaults, trimmed to the problem. */
typedef struct gemm_plan {
  int64_t kc, nc, mc; /* mc: rows per work item (multiple of mr) */
  int64_t m_blocks;   /* ceil(M / mc) */
  int64_t n_split;    /* each nc block's panels split into this many parts */
  int nthreads;
  size_t bpack_floats, apack_floats; /* per B block; per thread */
} gemm_plan;

static void make_plan(const mte_sgemm_kernel *k, const gemm_args *g, gemm_plan *pl) {
  const int64_t mr = k->mr, nr = k->nr;
  /* KC: split K into equal slices no deeper than k->kc */
  int64_t nk = ceil_div(g->K, k->kc);
  pl->kc = ceil_div(g->K, nk);
  pl->nc = min64(k->nc, round_up(g->N, nr));

  int nt = mte__num_threads();
  if ((double)g->M * (double)g->N * (double)g->K <= MTE_GEMM_PARALLEL_MIN_WORK) nt = 1;
  /* no more threads than there are tiles to hand out */
  int64_t tiles = ceil_div(g->M, mr) * ceil_div(min64(g->N, pl->nc), nr);
  if (nt > tiles) nt = (int)max64(1, tiles);

  pl->mc = min64(k->mc, round_up(g->M, mr));
  if (nt > 1) { /* equal row blocks, a multiple of nt of them: M = 256 on 2 threads is
                 * 128 + 128, not 192 + 64 */
    const int64_t per_thread = ceil_div(g->M, (int64_t)nt * pl->mc);
    pl->mc = min64(pl->mc, round_up(ceil_div(g->M, per_thread * nt), mr));
  }
  pl->m_blocks = ceil_div(g->M, pl->mc);
  if (pl->m_blocks < nt) { /* few rows: smaller row blocks, then split columns too */
    pl->mc = round_up(ceil_div(g->M, nt), mr);
    pl->m_blocks = ceil_div(g->M, pl->mc);
  }
  pl->n_split = pl->m_blocks >= nt ? 1 : ceil_div(nt, pl->m_blocks);
  pl->nthreads = nt;
  pl->bpack_floats = (size_t)pl->kc * (size_t)round_up(pl->nc, nr);
  pl->apack_floats = (size_t)pl->kc * (size_t)pl->mc;
}

static void run_gemm(const mte_sgemm_kernel *k, const gemm_args *g, const gemm_plan *pl,
                     float *bpack, float *apack_all) {
  const int64_t nr = k->nr;
  const int64_t M = g->M, N = g->N, K = g->K;
  const int64_t kc_blk = pl->kc, nc_blk = pl->nc, mc_blk = pl->mc;
  const int64_t n_split = pl->n_split, items = pl->m_blocks * pl->n_split;

#ifdef _OPENMP
#pragma omp parallel num_threads(pl->nthreads) if (pl->nthreads > 1)
#endif
  {
#ifdef _OPENMP
    const int tid = omp_get_thread_num();
#else
    const int tid = 0;
#endif
    float *apack = apack_all + (size_t)tid * pl->apack_floats;

    for (int64_t jc = 0; jc < N; jc += nc_blk) {
      const int64_t nc = min64(nc_blk, N - jc);
      const int64_t n_panels = ceil_div(nc, nr);
      for (int64_t pc = 0; pc < K; pc += kc_blk) {
        const int64_t kc = min64(kc_blk, K - pc);
        const float beta = pc == 0 ? g->beta : 1.0f;
        const int last = pc + kc >= K;

        /* all threads pack the shared B block, one NR panel each at a time */
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t q = 0; q < n_panels; ++q) {
          const int64_t cols = min64(nr, nc - q * nr);
          if (g->trans_b && k->pack_b_trans) /* the ISA's register transposes */
            k->pack_b_trans((int)nr, cols, kc, g->B, g->ldb, jc + q * nr, pc, bpack + q * nr * kc);
          else
            pack_b_panel((int)nr, cols, kc, g->B, g->ldb, g->trans_b, jc + q * nr, pc,
                         bpack + q * nr * kc);
        }
        /* (implicit barrier: B is packed) */

        /* work items: (row block, share of the B panels); each thread packs the A block
         * of its item into its own buffer, unless it already holds that block */
        int64_t packed_ic = -1; /* the A block this thread has packed for this slice */
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t it = 0; it < items; ++it) {
          const int64_t ib = it / n_split, part = it % n_split;
          const int64_t ic = ib * mc_blk;
          const int64_t mc = min64(mc_blk, M - ic);
          if (ic != packed_ic) {
            pack_a(k, mc, kc, g->A, g->lda, g->trans_a, ic, pc, apack);
            packed_ic = ic;
          }
          const int64_t per = ceil_div(n_panels, n_split);
          const int64_t q0 = part * per, q1 = min64(n_panels, q0 + per);
          if (q0 < q1)
            macro_kernel(k, mc, nc, q0, q1, kc, apack, bpack, g->C + ic * g->ldc + jc,
                         g->ldc, g->alpha, beta, last, g->ep, g->ep_fn, ic, jc);
        }
        /* (implicit barrier: nobody still reads B before it is repacked) */
      }
    }
  }
}

/* ---------------------------------------------------------------- validation */

static int check_matrix(int64_t rows, int64_t cols, int64_t ld, const void *p, int used) {
  if (ld < max64(1, cols)) return MTE_EINVAL;
  if (!used || rows == 0 || cols == 0) return MTE_OK;
  if (!p) return MTE_EINVAL;
  /* the last element's index, (rows-1)*ld + cols-1, must be addressable */
  if ((rows - 1) > (INT64_MAX - cols) / ld) return MTE_EOVERFLOW;
  if ((uint64_t)((rows - 1) * ld + cols) > SIZE_MAX / sizeof(float)) return MTE_EOVERFLOW;
  return MTE_OK;
}

static int check_args(const gemm_args *g) {
  if (g->M < 0 || g->N < 0 || g->K < 0) return MTE_EINVAL;
  const int uses_ab = g->M > 0 && g->N > 0 && g->K > 0 && g->alpha != 0.0f;
  int st;
  /* stored shapes: A is M x K or K x M, B is K x N or N x K */
  if ((st = check_matrix(g->trans_a ? g->K : g->M, g->trans_a ? g->M : g->K, g->lda, g->A,
                         uses_ab)))
    return st;
  if ((st = check_matrix(g->trans_b ? g->N : g->K, g->trans_b ? g->K : g->N, g->ldb, g->B,
                         uses_ab)))
    return st;
  if ((st = check_matrix(g->M, g->N, g->ldc, g->C, 1))) return st;
  if (g->ep) {
    const mte_epilogue *ep = g->ep;
    if (ep->bias_mode != MTE_BIAS_NONE && ep->bias_mode != MTE_BIAS_PER_ROW &&
        ep->bias_mode != MTE_BIAS_PER_COL)
      return MTE_EINVAL;
    if (ep->bias_mode != MTE_BIAS_NONE && !ep->bias && g->M > 0 && g->N > 0)
      return MTE_EINVAL;
    if (!mte__valid_activation(ep->activation)) return MTE_EINVAL;
    if (ep->residual) { /* M x N, ld >= N, and not inside C (see mte.h) */
      if ((st = check_matrix(g->M, g->N, ep->ld_residual, ep->residual, 1))) return st;
      if (g->M > 0 && g->N > 0) {
        const size_t cn = (size_t)((g->M - 1) * g->ldc + g->N);
        const size_t rn = (size_t)((g->M - 1) * ep->ld_residual + g->N);
        if (mte__overlap(g->C, cn, ep->residual, rn)) return MTE_EINVAL;
      }
    }
  }
  return MTE_OK;
}

/* Run one validated GEMM with packing buffers from `arena` (already reset by the caller). */
static int gemm_with_arena(const mte_sgemm_kernel *k, const gemm_args *g, mte_arena *arena) {
  if (g->M == 0 || g->N == 0) return MTE_OK;
  if (g->K == 0 || g->alpha == 0.0f) {
    scale_c(g->M, g->N, g->beta, g->C, g->ldc, g->ep, g->ep_fn);
    return MTE_OK;
  }
  gemm_plan pl;
  make_plan(k, g, &pl);

  size_t b_bytes, a_bytes, a_all, need_b, need_a, need;
  if (!mte__mul_size(pl.bpack_floats, sizeof(float), &b_bytes) ||
      !mte__mul_size(pl.apack_floats, sizeof(float), &a_bytes) ||
      !mte__mul_size(a_bytes, (size_t)pl.nthreads, &a_all))
    return MTE_EOVERFLOW;
  need_b = mte_arena_footprint(b_bytes);
  need_a = mte_arena_footprint(a_all);
  if (!need_b || !need_a || !mte__add_size(need_b, need_a, &need)) return MTE_EOVERFLOW;

  mte_arena_reset(arena);
  int st = mte_arena_reserve(arena, need);
  if (st != MTE_OK) return st;
  float *bpack = (float *)mte_arena_alloc(arena, b_bytes);
  float *apack = (float *)mte_arena_alloc(arena, a_all);
  if (!bpack || !apack) return MTE_ENOMEM;

  run_gemm(k, g, &pl, bpack, apack);
  /* the packed buffers are followed by guard words: prove nothing wrote past them */
  st = mte_arena_check(arena);
  mte_arena_reset(arena);
  return st;
}

/* ---------------------------------------------------------------- public entry points */

int mte_sgemm_ex(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                 const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                 float *C, int64_t ldc, const mte_epilogue *epilogue, mte_arena *arena) {
  gemm_args g = {trans_a != 0, trans_b != 0, M, N, K, alpha, beta, A, lda, B, ldb, C, ldc,
                 epilogue, NULL};
  if (epilogue && epilogue->bias_mode == MTE_BIAS_NONE &&
      epilogue->activation == MTE_ACT_NONE && !epilogue->residual)
    g.ep = NULL;
  int st = check_args(&g);
  if (st != MTE_OK) return st;
  if (M == 0 || N == 0) return MTE_OK;
  const mte_isa *isa = mte__isa();
  const mte_sgemm_kernel *k = isa->sgemm;
  g.ep_fn = isa->epilogue->tile;
  if (K == 0 || alpha == 0.0f) { /* no packing needed */
    scale_c(M, N, beta, C, ldc, g.ep, g.ep_fn);
    return MTE_OK;
  }
  if (arena) return gemm_with_arena(k, &g, arena);
  int is_default = 0;
  mte_arena *a = mte__arena_acquire(&is_default);
  if (!a) return MTE_ENOMEM;
  st = gemm_with_arena(k, &g, a);
  mte__arena_release(a, is_default);
  return st;
}

int mte_sgemm(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
              const float *A, int64_t lda, const float *B, int64_t ldb, float beta, float *C,
              int64_t ldc) {
  return mte_sgemm_ex(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, NULL,
                      NULL);
}

int mte_sgemm_batched(int trans_a, int trans_b, int64_t batch, int64_t M, int64_t N,
                      int64_t K, float alpha, const float *A, int64_t lda, int64_t stride_a,
                      const float *B, int64_t ldb, int64_t stride_b, float beta, float *C,
                      int64_t ldc, int64_t stride_c) {
  if (batch < 0 || stride_a < 0 || stride_b < 0 || stride_c < 0) return MTE_EINVAL;
  if (batch == 0) return MTE_OK;
  /* validate the first and the last matrix of each operand: the ones in between lie
   * between them */
  for (int which = 0; which < 2; ++which) {
    int64_t b = which ? batch - 1 : 0;
    if (b > 0 && ((stride_a && b > INT64_MAX / stride_a) ||
                  (stride_b && b > INT64_MAX / stride_b) ||
                  (stride_c && b > INT64_MAX / stride_c)))
      return MTE_EOVERFLOW;
    gemm_args g = {trans_a != 0, trans_b != 0, M, N, K, alpha, beta,
                   A ? A + b * stride_a : NULL, lda,  B ? B + b * stride_b : NULL,
                   ldb, C ? C + b * stride_c : NULL, ldc, NULL, NULL};
    int st = check_args(&g);
    if (st != MTE_OK) return st;
  }
  /* outputs must not overlap, or the result would depend on the order */
  if (batch > 1 && M > 0 && N > 0 && stride_c < (M - 1) * ldc + N) return MTE_EINVAL;
  if (M == 0 || N == 0) return MTE_OK;

  const mte_sgemm_kernel *k = mte__isa()->sgemm;
  int is_default = 0;
  mte_arena *arena = mte__arena_acquire(&is_default);
  if (!arena) return MTE_ENOMEM;
  int st = MTE_OK;
  for (int64_t b = 0; b < batch && st == MTE_OK; ++b) {
    gemm_args g = {trans_a != 0, trans_b != 0, M, N, K, alpha, beta,
                   A ? A + b * stride_a : NULL, lda, B ? B + b * stride_b : NULL,
                   ldb, C + b * stride_c, ldc, NULL, NULL};
    st = gemm_with_arena(k, &g, arena);
  }
  mte__arena_release(arena, is_default);
  return st;
}
