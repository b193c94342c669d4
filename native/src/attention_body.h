/*
 * attention_body.h - the body of the attention descriptor mte_attention_kernel_<isa>: the
 * forward and backward of one (batch, head) pair (math in include/mte_transformer.h).
 * Included by src/arch/<isa>/attention_head.c after `#define MTE_ATT_ISA "<isa>"`,
 * `#define MTE_ATT_TABLE mte_attention_kernel_<isa>` and `#define MTE_VL <lanes>` (the
 * ISA's float vector width), so one source is compiled once per ISA with its flags;
 * attention.c (portable) validates, finds each pair's matrices and spreads pairs over threads.
 *
 * One pair is five small matrix products and a softmax per row. The products are too small
 * for the blocked SGEMM (a 32 x 32 x 16 product is over before its packing would pay), so
 * they use one register-tiled loop, `mm`: an MR x VL tile of C stays in MR vector registers
 * while k runs, each step loading one vector of B (a row of it) and broadcasting MR values
 * of A. A's elements are read one by one, so A may be read transposed for free (its element
 * (i, k) at a[i*ars + k*acs]); B needs contiguous rows, so Q and dO are transposed once per
 * pair into scratch where they serve as B:
 *
 *   forward    Qt = Q^T;  P^T = scale K Qt (+ mask, causal), softmax of each column;
 *              out = P V
 *   backward   dOt = dO^T;  dS^T = V dOt;  dS^T = P^T (dS^T - colsum(dS^T P^T));
 *              dQ = scale dS K;  dK = scale dS^T Q;  dV = P^T dO
 *
 * The weights are kept transposed (P^T, keys down, queries across): a query's softmax is
 * then a column, and its max and sum are plain vector operations down the rows, VL queries
 * at once, where a row-wise softmax of 32 keys would spend most of its time adding the lanes
 * of one vector together.
 *
 * Written with MTE_VL-lane vectors (mte_vec.h); products are contracted into FMAs.
 */
#include <string.h>

#include "mte_transformer_internal.h"
#include "mte_vec.h"

#define VL MTE_VL
#define MR 8 /* rows of a tile: MR accumulators (of 16 or 32 vector registers) */
#define INLINE VINLINE

/* rows R (MR or 1) of the tile at column j, nj (<= VL) columns valid: C = alpha A B */
INLINE void mm_tile(const int R, const int full, int64_t nj, int64_t K, float alpha,
                    const float *a, int64_t ars, int64_t acs, const float *b, int64_t ldb,
                    float *c, int64_t ldc) {
  vf acc[MR];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) acc[r] = (vf){0};
  for (int64_t k = 0; k < K; ++k) {
    const vf bv = full ? v_ld(b + k * ldb) : v_ld_part(b + k * ldb, nj, 0.0f);
    const float *ak = a + k * acs;
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[r] += ak[r * ars] * bv;
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    if (full)
      v_st(c + r * ldc, alpha * acc[r]);
    else
      v_st_part(c + r * ldc, alpha * acc[r], nj);
  }
}

/* C (M x N, row stride ldc) = alpha A B: A(i, k) = a[i*ars + k*acs], B (K x N) row stride
 * ldb, unit column stride. C is written, never read. */
static void mm(int64_t M, int64_t N, int64_t K, float alpha, const float *a, int64_t ars,
               int64_t acs, const float *b, int64_t ldb, float *c, int64_t ldc) {
  for (int64_t j = 0; j < N; j += VL) {
    const int64_t nj = N - j < VL ? N - j : VL;
    int64_t i = 0;
    if (nj == VL) {
      for (; i + MR <= M; i += MR)
        mm_tile(MR, 1, VL, K, alpha, a + i * ars, ars, acs, b + j, ldb, c + i * ldc + j, ldc);
      for (; i < M; ++i)
        mm_tile(1, 1, VL, K, alpha, a + i * ars, ars, acs, b + j, ldb, c + i * ldc + j, ldc);
    } else {
      for (; i + MR <= M; i += MR)
        mm_tile(MR, 0, nj, K, alpha, a + i * ars, ars, acs, b + j, ldb, c + i * ldc + j, ldc);
      for (; i < M; ++i)
        mm_tile(1, 0, nj, K, alpha, a + i * ars, ars, acs, b + j, ldb, c + i * ldc + j, ldc);
    }
  }
}

/* t (cols x rows, row stride rows) = x^T for x rows x cols with row stride ldx */
static void transpose(int64_t rows, int64_t cols, const float *x, int64_t ldx, float *t) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) t[j * rows + i] = x[i * ldx + j];
}

/* The softmax of every column of the S x L matrix pt (row stride L), in place: column i
 * holds query i's scores over the S keys. The reductions run down the columns, VL queries
 * at a time, so they are plain vector max / add (no horizontal step). A column of only
 * -inf becomes 0 (the SAFE rule). */
static void softmax_columns(int64_t S, int64_t L, float *pt) {
  for (int64_t i = 0; i < L; i += VL) {
    const int64_t w = L - i < VL ? L - i : VL;
    float *col = pt + i;
    vf m = v_splat(-INFINITY), sum = v_splat(0.0f);
    if (w == VL) {
      for (int64_t j = 0; j < S; ++j) m = v_max(v_ld(col + j * L), m);
      m = v_sel(m == -INFINITY, v_splat(0.0f), m);
      for (int64_t j = 0; j < S; ++j) {
        const vf e = v_exp_le0(v_ld(col + j * L) - m);
        v_st(col + j * L, e);
        sum += e;
      }
      const vf inv = v_sel(sum == 0.0f, v_splat(0.0f), 1.0f / sum);
      for (int64_t j = 0; j < S; ++j) v_st(col + j * L, v_ld(col + j * L) * inv);
    } else {
      for (int64_t j = 0; j < S; ++j) m = v_max(v_ld_part(col + j * L, w, -INFINITY), m);
      m = v_sel(m == -INFINITY, v_splat(0.0f), m);
      for (int64_t j = 0; j < S; ++j) {
        const vf e = v_exp_le0(v_ld_part(col + j * L, w, -INFINITY) - m);
        v_st_part(col + j * L, e, w);
        sum += e;
      }
      const vf inv = v_sel(sum == 0.0f, v_splat(0.0f), 1.0f / sum);
      for (int64_t j = 0; j < S; ++j)
        v_st_part(col + j * L, v_ld_part(col + j * L, w, 0.0f) * inv, w);
    }
  }
}

/* ds = pt * (ds - colsum(ds * pt)), both S x L (row stride L): the softmax backward of every
 * column (query), down the columns like softmax_columns */
static void softmax_backward_columns(int64_t S, int64_t L, const float *pt, float *ds) {
  for (int64_t i = 0; i < L; i += VL) {
    const int64_t w = L - i < VL ? L - i : VL;
    vf c = v_splat(0.0f);
    if (w == VL) {
      for (int64_t j = 0; j < S; ++j) c += v_ld(ds + j * L + i) * v_ld(pt + j * L + i);
      for (int64_t j = 0; j < S; ++j)
        v_st(ds + j * L + i, v_ld(pt + j * L + i) * (v_ld(ds + j * L + i) - c));
    } else {
      for (int64_t j = 0; j < S; ++j)
        c += v_ld_part(ds + j * L + i, w, 0.0f) * v_ld_part(pt + j * L + i, w, 0.0f);
      for (int64_t j = 0; j < S; ++j)
        v_st_part(ds + j * L + i,
                  v_ld_part(pt + j * L + i, w, 0.0f) * (v_ld_part(ds + j * L + i, w, 0.0f) - c),
                  w);
    }
  }
}

/* Scores and weights are kept transposed, pt = P^T (S x L: key j, query i at pt[j*L + i]),
 * so that the softmax's reductions over the keys run down columns. */
static void att_forward(const mte_att_head *h, float *scratch) {
  const int64_t L = h->L, S = h->S, D = h->D, Dv = h->Dv;
  float *qt = scratch, *pt = h->p; /* qt: D x L */
  transpose(L, D, h->q, h->ldq, qt);
  mm(S, L, D, h->scale, h->k, h->ldk, 1, qt, L, pt, L); /* P^T = scale K Q^T */
  if (h->mask) {
    for (int64_t j = 0; j < S; ++j) {
      float *row = pt + j * L;
      if (h->ldm == 0) { /* one mask row for every query (a key padding mask) */
        const float m = h->mask[j];
        for (int64_t i = 0; i < L; ++i) row[i] += m;
      } else {
        for (int64_t i = 0; i < L; ++i) row[i] += h->mask[i * h->ldm + j];
      }
    }
  }
  if (h->causal) /* key j is hidden from queries i < j */
    for (int64_t j = 1; j < S; ++j)
      for (int64_t i = 0; i < (j < L ? j : L); ++i) pt[j * L + i] = -INFINITY;
  softmax_columns(S, L, pt);
  mm(L, Dv, S, 1.0f, pt, 1, L, h->v, h->ldv, h->out, h->ldo); /* out = P V */
}

static void att_backward(const mte_att_head *h, float *scratch) {
  const int64_t L = h->L, S = h->S, D = h->D, Dv = h->Dv;
  const float *pt = h->p;
  float *dot = scratch;          /* dO^T: Dv x L */
  float *ds = scratch + Dv * L;  /* dS^T: S x L */
  transpose(L, Dv, h->dout, h->lddo, dot);
  mm(S, L, Dv, 1.0f, h->v, h->ldv, 1, dot, L, ds, L);           /* dP^T = V dO^T */
  softmax_backward_columns(S, L, pt, ds);                         /* dS^T */
  mm(L, D, S, h->scale, ds, 1, L, h->k, h->ldk, h->dq, h->lddq);  /* dQ = scale dS K */
  mm(S, D, L, h->scale, ds, L, 1, h->q, h->ldq, h->dk, h->lddk);  /* dK = scale dS^T Q */
  mm(S, Dv, L, 1.0f, pt, L, 1, h->dout, h->lddo, h->dv, h->lddv); /* dV = P^T dO */
}

const mte_attention_kernel MTE_ATT_TABLE = {MTE_ATT_ISA, att_forward, att_backward};
