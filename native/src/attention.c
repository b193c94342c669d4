/*
 * attention.c - fused scaled dot-product attention (mte_transformer.h): validation, the
 * matrices of each (batch, head) pair, scratch and threads.
 *
 * Pairs are independent: each runs the active ISA's head kernel (the attention family,
 * mte__isa()->attention: attention_body.h) on its own matrices, found from the strides of
 * the views. A thread needs one pair's scratch (K^T, or V^T and dS), carved from the
 * workspace arena; pairs are spread over threads when there is enough work.
 */
#include <string.h>

#include "mte_transformer_internal.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define PARALLEL_MIN_WORK (64.0 * 1024.0) /* multiply-adds below which one thread does all */
#define MAX_DIM ((int64_t)1 << 31)

/* sizes >= 0 and below 2^31, so that products of two fit easily */
static int dims_ok(int64_t B, int64_t H, int64_t L, int64_t S, int64_t D, int64_t Dv) {
  const int64_t d[6] = {B, H, L, S, D, Dv};
  for (int i = 0; i < 6; ++i)
    if (d[i] < 0 || d[i] >= MAX_DIM) return 0;
  size_t p;
  return mte__mul_size((size_t)(B * H), (size_t)(L * S), &p) && p <= SIZE_MAX / sizeof(float);
}

/* A view of B x H matrices of rows x cols: a pointer when it has elements, strides >= 0,
 * rows that do not overlap (row stride >= cols, or 0 for an input broadcast over rows), an
 * addressable last element. An output may not repeat a matrix or a row (stride 0 on a dim
 * with more than one entry). */
static int view_ok(const float *p, mte_head_strides s, int64_t B, int64_t H, int64_t rows,
                   int64_t cols, int output) {
  if (B == 0 || H == 0 || rows == 0 || cols == 0) return 1;
  if (!p || s.batch < 0 || s.head < 0 || s.row < 0) return 0;
  if (rows > 1 && s.row < cols && (output || s.row != 0)) return 0;
  if (output && ((B > 1 && s.batch == 0) || (H > 1 && s.head == 0))) return 0;
  const double last = (double)(B - 1) * (double)s.batch + (double)(H - 1) * (double)s.head +
                      (double)(rows - 1) * (double)s.row + (double)cols;
  return last < 4.0e18 && last * (double)sizeof(float) < (double)SIZE_MAX;
}

static const float *at(const float *p, mte_head_strides s, int64_t b, int64_t h) {
  return p + b * s.batch + h * s.head;
}

typedef struct pairs_args {
  int64_t B, H;
  const float *q, *k, *v, *mask, *dout;
  mte_head_strides sq, sk, sv, sm, so, sdo, sdq, sdk, sdv;
  float *pt, *out, *dq, *dk, *dv; /* pt: the weights, transposed (B, H, S, L) */
  int backward;
} pairs_args;

/* pair i = (b, h): its matrices, from the views */
static void pair_head(const pairs_args *a, const mte_att_head *base, int64_t i,
                      mte_att_head *h) {
  const int64_t b = i / a->H, hh = i % a->H;
  *h = *base;
  h->q = at(a->q, a->sq, b, hh);
  h->k = at(a->k, a->sk, b, hh);
  h->v = at(a->v, a->sv, b, hh);
  h->p = a->pt + i * base->L * base->S;
  if (!a->backward) {
    h->mask = a->mask ? at(a->mask, a->sm, b, hh) : NULL;
    h->out = (float *)at(a->out, a->so, b, hh);
  } else {
    h->dout = at(a->dout, a->sdo, b, hh);
    h->dq = (float *)at(a->dq, a->sdq, b, hh);
    h->dk = (float *)at(a->dk, a->sdk, b, hh);
    h->dv = (float *)at(a->dv, a->sdv, b, hh);
  }
}

/* every pair through the active ISA's head kernel, one pair's scratch per thread */
static int run_pairs(const pairs_args *a, const mte_att_head *base) {
  const int64_t pairs = a->B * a->H, L = base->L, S = base->S, D = base->D, Dv = base->Dv;
  if (pairs == 0 || L == 0) return MTE_OK;
  const mte_attention_kernel *kern = mte__isa()->attention;
  const double work = (double)pairs * (double)L * (double)S * (double)(D + Dv);
  const int nt = mte__threads_for(work, PARALLEL_MIN_WORK, pairs);
  size_t per = mte__attention_scratch(L, S, D, Dv), bytes;
  per = (per + 16) / 16 * 16; /* >= 1 float, each thread's part 64-byte aligned */
  if (!mte__mul_size(per, (size_t)nt * sizeof(float), &bytes)) return MTE_EOVERFLOW;
  int is_default = 0;
  mte_arena *arena = mte__arena_acquire(&is_default);
  if (!arena) return MTE_ENOMEM;
  mte_arena_reset(arena);
  int st = mte_arena_reserve(arena, mte_arena_footprint(bytes));
  float *scratch = NULL;
  if (st == MTE_OK && !(scratch = (float *)mte_arena_alloc(arena, bytes))) st = MTE_ENOMEM;
  if (st == MTE_OK) {
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
#endif
    for (int64_t i = 0; i < pairs; ++i) {
#ifdef _OPENMP
      float *mine = scratch + (size_t)omp_get_thread_num() * per;
#else
      float *mine = scratch;
#endif
      mte_att_head h;
      pair_head(a, base, i, &h);
      if (a->backward)
        kern->backward(&h, mine);
      else
        kern->forward(&h, mine);
    }
    st = mte_arena_check(arena);
  }
  mte_arena_reset(arena);
  mte__arena_release(arena, is_default);
  return st;
}

int mte_attention_forward(int64_t B, int64_t H, int64_t L, int64_t S, int64_t D, int64_t Dv,
                          const float *q, mte_head_strides sq, const float *k,
                          mte_head_strides sk, const float *v, mte_head_strides sv,
                          const float *mask, mte_head_strides sm, float scale, int causal,
                          float *pt, float *out, mte_head_strides so) {
  if (!dims_ok(B, H, L, S, D, Dv) || !view_ok(q, sq, B, H, L, D, 0) ||
      !view_ok(k, sk, B, H, S, D, 0) || !view_ok(v, sv, B, H, S, Dv, 0) ||
      (mask && !view_ok(mask, sm, B, H, L, S, 0)) || !view_ok(out, so, B, H, L, Dv, 1) ||
      (B * H * L * S > 0 && !pt) || (causal != 0 && causal != 1) || !(scale == scale))
    return MTE_EINVAL;
  const mte_att_head base = {.L = L, .S = S, .D = D, .Dv = Dv, .ldq = sq.row, .ldk = sk.row,
                             .ldv = sv.row, .ldm = mask ? sm.row : 0, .scale = scale,
                             .causal = causal, .ldo = so.row};
  const pairs_args a = {.B = B, .H = H, .q = q, .k = k, .v = v, .mask = mask, .sq = sq,
                        .sk = sk, .sv = sv, .sm = sm, .so = so, .pt = pt, .out = out};
  return run_pairs(&a, &base);
}

int mte_attention_backward(int64_t B, int64_t H, int64_t L, int64_t S, int64_t D, int64_t Dv,
                           const float *q, mte_head_strides sq, const float *k,
                           mte_head_strides sk, const float *v, mte_head_strides sv,
                           float scale, const float *pt, const float *dout,
                           mte_head_strides sdo, float *dq, mte_head_strides sdq, float *dk,
                           mte_head_strides sdk, float *dv, mte_head_strides sdv) {
  if (!dims_ok(B, H, L, S, D, Dv) || !view_ok(q, sq, B, H, L, D, 0) ||
      !view_ok(k, sk, B, H, S, D, 0) || !view_ok(v, sv, B, H, S, Dv, 0) ||
      !view_ok(dout, sdo, B, H, L, Dv, 0) || !view_ok(dq, sdq, B, H, L, D, 1) ||
      !view_ok(dk, sdk, B, H, S, D, 1) || !view_ok(dv, sdv, B, H, S, Dv, 1) ||
      (B * H * L * S > 0 && !pt) || !(scale == scale))
    return MTE_EINVAL;
  if (B * H == 0) return MTE_OK;
  if (L == 0) { /* no queries: nothing reaches k and v */
    for (int64_t i = 0; i < B * H; ++i) {
      for (int64_t s = 0; s < S; ++s) {
        if (D) memset((float *)at(dk, sdk, i / H, i % H) + s * sdk.row, 0, (size_t)D * 4);
        if (Dv) memset((float *)at(dv, sdv, i / H, i % H) + s * sdv.row, 0, (size_t)Dv * 4);
      }
    }
    return MTE_OK;
  }
  const mte_att_head base = {.L = L, .S = S, .D = D, .Dv = Dv, .ldq = sq.row, .ldk = sk.row,
                             .ldv = sv.row, .scale = scale, .lddo = sdo.row, .lddq = sdq.row,
                             .lddk = sdk.row, .lddv = sdv.row};
  const pairs_args a = {.B = B, .H = H, .q = q, .k = k, .v = v, .dout = dout, .sq = sq,
                        .sk = sk, .sv = sv, .sdo = sdo, .sdq = sdq, .sdk = sdk, .sdv = sdv,
                        .pt = (float *)pt, .dq = dq, .dk = dk, .dv = dv, .backward = 1};
  return run_pairs(&a, &base);
}
