/*
 * rowwise.c - softmax, LayerNorm and GELU (mte_transformer.h): validation and threads.
 *
 * Rows are independent, so a call is split into equal blocks of rows, one per thread
 * (elements for GELU), when it has at least PARALLEL_MIN elements; each block runs the
 * active ISA's row kernels (the rowwise family, mte__isa()->rowwise: rowwise_body.h).
 * LayerNorm's backward also sums dw and db over all rows: each thread adds its rows into its own pair
 * of partial sums (workspace arena), and the partials are added in thread order at the
 * end, so the result does not depend on scheduling.
 */
#include <string.h>

#include "mte_epilogue.h" /* mte__overlap */
#include "mte_transformer_internal.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define PARALLEL_MIN ((int64_t)1 << 15) /* elements below which one thread does it all */

/* rows x n floats are addressable (rows, n >= 0 checked by the caller) */
static int fits(int64_t rows, int64_t n) {
  size_t total;
  return mte__mul_size((size_t)rows, (size_t)n, &total) && total <= SIZE_MAX / sizeof(float);
}

/* 1 if [p, p + count) and [q, q + count) overlap without being the same array */
static int partial_overlap(const float *p, const float *q, size_t count) {
  if (p == q || !count) return 0;
  uintptr_t a = (uintptr_t)p, b = (uintptr_t)q, bytes = count * sizeof(float);
  return a < b + bytes && b < a + bytes;
}

static int threads_for(int64_t rows, int64_t n) {
  return mte__threads_for((double)rows * (double)n, (double)PARALLEL_MIN, rows);
}

/* [lo, hi) of `total` for part t of nt (equal shares) */
static void share(int64_t total, int t, int nt, int64_t *lo, int64_t *hi) {
  *lo = total * t / nt;
  *hi = total * (t + 1) / nt;
}

/* ---------------------------------------------------------------- softmax */

static int check_rows(int64_t rows, int64_t n) {
  if (rows < 0 || n < 0) return MTE_EINVAL;
  return fits(rows, n) ? MTE_OK : MTE_EOVERFLOW;
}

int mte_softmax_forward(int64_t rows, int64_t n, const float *x, float *y, int flags) {
  int st = check_rows(rows, n);
  if (st != MTE_OK) return st;
  if (flags & ~(MTE_SOFTMAX_SAFE | MTE_SOFTMAX_LOG)) return MTE_EINVAL;
  if (rows == 0 || n == 0) return MTE_OK;
  if (!x || !y || partial_overlap(x, y, (size_t)(rows * n))) return MTE_EINVAL;
  const mte_rowwise_kernel *k = mte__isa()->rowwise;
  const int nt = threads_for(rows, n);
  (void)nt;
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) if (nt > 1)
#endif
  {
#ifdef _OPENMP
    const int t = omp_get_thread_num(), nth = omp_get_num_threads();
#else
    const int t = 0, nth = 1;
#endif
    int64_t lo, hi;
    share(rows, t, nth, &lo, &hi);
    if (hi > lo) k->softmax(hi - lo, n, x + lo * n, y + lo * n, flags);
  }
  return MTE_OK;
}

int mte_softmax_backward(int64_t rows, int64_t n, const float *y, const float *dy, float *dx,
                         int flags) {
  int st = check_rows(rows, n);
  if (st != MTE_OK) return st;
  if (flags & ~(MTE_SOFTMAX_SAFE | MTE_SOFTMAX_LOG)) return MTE_EINVAL;
  if (rows == 0 || n == 0) return MTE_OK;
  const size_t count = (size_t)(rows * n);
  if (!y || !dy || !dx || partial_overlap(dy, dx, count) ||
      mte__overlap(y, count, dx, count))
    return MTE_EINVAL;
  const mte_rowwise_kernel *k = mte__isa()->rowwise;
  const int nt = threads_for(rows, n);
  (void)nt;
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) if (nt > 1)
#endif
  {
#ifdef _OPENMP
    const int t = omp_get_thread_num(), nth = omp_get_num_threads();
#else
    const int t = 0, nth = 1;
#endif
    int64_t lo, hi;
    share(rows, t, nth, &lo, &hi);
    if (hi > lo) k->softmax_backward(hi - lo, n, y + lo * n, dy + lo * n, dx + lo * n, flags);
  }
  return MTE_OK;
}

/* ---------------------------------------------------------------- LayerNorm */

int mte_layer_norm_forward(int64_t rows, int64_t n, const float *x, const float *w,
                           const float *b, float eps, float *y, float *mean, float *rstd) {
  int st = check_rows(rows, n);
  if (st != MTE_OK) return st;
  if (!(eps >= 0.0f)) return MTE_EINVAL; /* also NaN */
  if (rows == 0) return MTE_OK;
  if (n == 0) return MTE_EINVAL; /* no elements to take a mean of */
  const size_t count = (size_t)(rows * n), nr = (size_t)rows;
  if (!x || !y || partial_overlap(x, y, count)) return MTE_EINVAL;
  if (mte__overlap(y, count, w, w ? (size_t)n : 0) ||
      mte__overlap(y, count, b, b ? (size_t)n : 0) ||
      mte__overlap(mean, mean ? nr : 0, x, count) || mte__overlap(rstd, rstd ? nr : 0, x, count) ||
      mte__overlap(mean, mean ? nr : 0, y, count) || mte__overlap(rstd, rstd ? nr : 0, y, count) ||
      mte__overlap(mean, mean ? nr : 0, rstd, rstd ? nr : 0))
    return MTE_EINVAL;
  const mte_rowwise_kernel *k = mte__isa()->rowwise;
  const int nt = threads_for(rows, n);
  (void)nt;
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) if (nt > 1)
#endif
  {
#ifdef _OPENMP
    const int t = omp_get_thread_num(), nth = omp_get_num_threads();
#else
    const int t = 0, nth = 1;
#endif
    int64_t lo, hi;
    share(rows, t, nth, &lo, &hi);
    if (hi > lo)
      k->layer_norm(hi - lo, n, x + lo * n, w, b, eps, y + lo * n, mean ? mean + lo : NULL,
                    rstd ? rstd + lo : NULL);
  }
  return MTE_OK;
}

int mte_layer_norm_backward(int64_t rows, int64_t n, const float *dy, const float *x,
                            const float *mean, const float *rstd, const float *w, float *dx,
                            float *dw, float *db) {
  int st = check_rows(rows, n);
  if (st != MTE_OK) return st;
  if (n == 0 && rows > 0) return MTE_EINVAL;
  if (rows > 0 && (!dy || !x || !mean || !rstd)) return MTE_EINVAL;
  const size_t count = (size_t)(rows * n), nn = (size_t)n;
  if (mte__overlap(dx, dx ? count : 0, x, count) || mte__overlap(dx, dx ? count : 0, w, w ? nn : 0) ||
      mte__overlap(dx, dx ? count : 0, mean, (size_t)rows) ||
      mte__overlap(dx, dx ? count : 0, rstd, (size_t)rows) || partial_overlap(dx, dy, dx ? count : 0) ||
      mte__overlap(dw, dw ? nn : 0, db, db ? nn : 0) ||
      mte__overlap(dw, dw ? nn : 0, dy, count) || mte__overlap(db, db ? nn : 0, dy, count) ||
      mte__overlap(dw, dw ? nn : 0, dx, dx ? count : 0) ||
      mte__overlap(db, db ? nn : 0, dx, dx ? count : 0))
    return MTE_EINVAL;
  if (dw) memset(dw, 0, nn * sizeof(float));
  if (db) memset(db, 0, nn * sizeof(float));
  if (rows == 0) return MTE_OK;
  const mte_rowwise_kernel *k = mte__isa()->rowwise;
  int nt = threads_for(rows, n);

  /* per-thread partial sums of dw and db (thread 0 adds straight into dw, db) */
  float *part = NULL;
  mte_arena *arena = NULL;
  int is_default = 0;
  const int wants = (dw != NULL) + (db != NULL);
  if (nt > 1 && wants) {
    size_t bytes;
    if (!mte__mul_size(nn * (size_t)wants * (size_t)(nt - 1), sizeof(float), &bytes))
      return MTE_EOVERFLOW;
    arena = mte__arena_acquire(&is_default);
    if (!arena) return MTE_ENOMEM;
    mte_arena_reset(arena);
    st = mte_arena_reserve(arena, mte_arena_footprint(bytes));
    if (st == MTE_OK && !(part = (float *)mte_arena_alloc(arena, bytes))) st = MTE_ENOMEM;
    if (st != MTE_OK) {
      mte__arena_release(arena, is_default);
      return st;
    }
    memset(part, 0, bytes);
  }
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) if (nt > 1)
#endif
  {
#ifdef _OPENMP
    const int t = omp_get_thread_num(), nth = omp_get_num_threads();
#else
    const int t = 0, nth = 1;
#endif
    float *my_dw = dw, *my_db = db;
    if (t > 0) { /* its own partials: [dw part][db part] per thread */
      float *mine = part + (size_t)(t - 1) * nn * (size_t)wants;
      my_dw = dw ? mine : NULL;
      my_db = db ? mine + (dw ? nn : 0) : NULL;
    }
    int64_t lo, hi;
    share(rows, t, nth, &lo, &hi);
    if (hi > lo)
      k->layer_norm_backward(hi - lo, n, dy + lo * n, x + lo * n, mean + lo, rstd + lo, w,
                             dx ? dx + lo * n : NULL, my_dw, my_db);
  } /* (a smaller team than asked leaves some partials at zero: still a correct sum) */
  if (part) {
    for (int t = 1; t < nt; ++t) {
      const float *mine = part + (size_t)(t - 1) * nn * (size_t)wants;
      if (dw)
        for (size_t j = 0; j < nn; ++j) dw[j] += mine[j];
      if (db)
        for (size_t j = 0; j < nn; ++j) db[j] += mine[(dw ? nn : 0) + j];
    }
    st = mte_arena_check(arena);
    mte_arena_reset(arena);
    mte__arena_release(arena, is_default);
    if (st != MTE_OK) return st;
  }
  return MTE_OK;
}

/* ---------------------------------------------------------------- GELU */

#define GELU_CHUNK ((int64_t)4096)

static int gelu_args(int64_t n, const float *x, const float *y, int approximate) {
  if (n < 0 || (approximate != 0 && approximate != 1)) return MTE_EINVAL;
  if (!fits(n, 1)) return MTE_EOVERFLOW;
  if (n > 0 && (!x || !y || partial_overlap(x, y, (size_t)n))) return MTE_EINVAL;
  return MTE_OK;
}

int mte_gelu_forward(int64_t n, const float *x, float *y, int approximate) {
  int st = gelu_args(n, x, y, approximate);
  if (st != MTE_OK || n == 0) return st;
  const mte_rowwise_kernel *k = mte__isa()->rowwise;
  const int64_t chunks = (n + GELU_CHUNK - 1) / GELU_CHUNK;
  const int nt = threads_for(chunks, GELU_CHUNK);
  (void)nt;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
#endif
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t lo = c * GELU_CHUNK, len = n - lo < GELU_CHUNK ? n - lo : GELU_CHUNK;
    k->gelu(len, x + lo, y + lo, approximate);
  }
  return MTE_OK;
}

int mte_gelu_backward(int64_t n, const float *dy, const float *x, float *dx, int approximate) {
  int st = gelu_args(n, dy, dx, approximate);
  if (st != MTE_OK || n == 0) return st;
  if (!x || mte__overlap(x, (size_t)n, dx, (size_t)n)) return MTE_EINVAL;
  const mte_rowwise_kernel *k = mte__isa()->rowwise;
  const int64_t chunks = (n + GELU_CHUNK - 1) / GELU_CHUNK;
  const int nt = threads_for(chunks, GELU_CHUNK);
  (void)nt;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
#endif
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t lo = c * GELU_CHUNK, len = n - lo < GELU_CHUNK ? n - lo : GELU_CHUNK;
    k->gelu_backward(len, dy + lo, x + lo, dx + lo, approximate);
  }
  return MTE_OK;
}
