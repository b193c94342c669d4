/*
 * attention.c - fused scaled dot-product attention (mte_transformer.h): validation, the
 * matrices of each (batch, head) pair, scratch and threads.
 *
 * Pairs are independent: each runs the active ISA's head kernel (the attention family,
 * mte__isa()->attention: attention_body.h) on its own matrices, found from the strides of
 * the views. A thread needs one pair's scratch (K^T, or V^T and dS), carved from the
 * workspace arena; pairs are spread over threads when there is enough work.
 *
 * The half-precision entry points (bfloat16 / float16 q, k, v, out, dout, dq, dk, dv; the
 * mask and the weights stay float32) run the same float32 head kernel: each pair's matrices
 * are widened into the thread's scratch (exact), and its outputs rounded once into the
 * caller's views, so no widened copy of a whole projection is ever made.
 */
#include <string.h>

#include "mte_bf16.h"
#include "mte_bf16_internal.h"
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
static int view_ok(const void *p, mte_head_strides s, int64_t B, int64_t H, int64_t rows,
                   int64_t cols, int output) {
  if (B == 0 || H == 0 || rows == 0 || cols == 0) return 1;
  if (!p || s.batch < 0 || s.head < 0 || s.row < 0) return 0;
  if (rows > 1 && s.row < cols && (output || s.row != 0)) return 0;
  if (output && ((B > 1 && s.batch == 0) || (H > 1 && s.head == 0))) return 0;
  const double last = (double)(B - 1) * (double)s.batch + (double)(H - 1) * (double)s.head +
                      (double)(rows - 1) * (double)s.row + (double)cols;
  return last < 4.0e18 && last * (double)sizeof(float) < (double)SIZE_MAX;
}

/* element (b, h, 0, 0) of a view of `esize`-byte elements */
static const void *at(const void *p, mte_head_strides s, int64_t b, int64_t h, size_t esize) {
  return (const char *)p + (size_t)(b * s.batch + h * s.head) * esize;
}

typedef struct pairs_args {
  int64_t B, H;
  int dtype;                  /* MTE_DT_F32, or the half dtype of q k v out dout dq dk dv */
  const void *q, *k, *v, *dout;
  const float *mask;
  mte_head_strides sq, sk, sv, sm, so, sdo, sdq, sdk, sdv;
  float *pt;                  /* the weights, transposed (B, H, S, L) */
  void *out, *dq, *dk, *dv;
  int backward;
} pairs_args;

/* pair i = (b, h): its matrices, from the views (float32 views only) */
static void pair_head(const pairs_args *a, const mte_att_head *base, int64_t i,
                      mte_att_head *h) {
  const int64_t b = i / a->H, hh = i % a->H;
  *h = *base;
  h->q = (const float *)at(a->q, a->sq, b, hh, 4);
  h->k = (const float *)at(a->k, a->sk, b, hh, 4);
  h->v = (const float *)at(a->v, a->sv, b, hh, 4);
  h->p = a->pt + i * base->L * base->S;
  if (!a->backward) {
    h->mask = a->mask ? (const float *)at(a->mask, a->sm, b, hh, 4) : NULL;
    h->out = (float *)at(a->out, a->so, b, hh, 4);
  } else {
    h->dout = (const float *)at(a->dout, a->sdo, b, hh, 4);
    h->dq = (float *)at(a->dq, a->sdq, b, hh, 4);
    h->dk = (float *)at(a->dk, a->sdk, b, hh, 4);
    h->dv = (float *)at(a->dv, a->sdv, b, hh, 4);
  }
}

/* the floats a half pair needs beside the kernel's scratch: its inputs and outputs widened */
static size_t half_extra(int64_t L, int64_t S, int64_t D, int64_t Dv) {
  const size_t ins = (size_t)(L * D) + (size_t)(S * D) + (size_t)(S * Dv) + (size_t)(L * Dv);
  return 2 * ins + 64;
}

/* rows x cols half values (row stride ld) widened into dst (row stride cols); returns dst */
static float *widen_rows(mte_half_widen_fn widen, const uint16_t *src, int64_t ld,
                         int64_t rows, int64_t cols, float *dst) {
  if (ld == cols || rows == 1)
    widen(src, dst, rows * cols);
  else
    for (int64_t r = 0; r < rows; ++r) widen(src + r * ld, dst + r * cols, cols);
  return dst;
}

static void narrow_rows(mte_half_narrow_fn narrow, const float *src, int64_t rows,
                        int64_t cols, uint16_t *dst, int64_t ld) {
  if (ld == cols || rows == 1)
    narrow(src, dst, rows * cols);
  else
    for (int64_t r = 0; r < rows; ++r) narrow(src + r * cols, dst + r * ld, cols);
}

/* pair i of half views: widen its matrices into `w` (after the kernel's scratch), run the
 * float32 kernel there, round its outputs into the caller's views */
static void half_pair(const pairs_args *a, const mte_att_head *base, int64_t i,
                      const mte_attention_kernel *kern, float *scratch, float *w) {
  const int64_t b = i / a->H, hh = i % a->H;
  const int64_t L = base->L, S = base->S, D = base->D, Dv = base->Dv;
  const mte_bf16_kernel *bk = mte__bf16_kernel();
  const mte_half_widen_fn widen = a->dtype == MTE_DT_BF16 ? bk->bf16_to_f32 : bk->f16_to_f32;
  const mte_half_narrow_fn narrow =
      a->dtype == MTE_DT_BF16 ? bk->f32_to_bf16 : bk->f32_to_f16;
  mte_att_head h = *base;
  h.q = widen_rows(widen, (const uint16_t *)at(a->q, a->sq, b, hh, 2), base->ldq, L, D, w);
  w += L * D;
  h.k = widen_rows(widen, (const uint16_t *)at(a->k, a->sk, b, hh, 2), base->ldk, S, D, w);
  w += S * D;
  h.v = widen_rows(widen, (const uint16_t *)at(a->v, a->sv, b, hh, 2), base->ldv, S, Dv, w);
  w += S * Dv;
  h.ldq = D, h.ldk = D, h.ldv = Dv;
  h.p = a->pt + i * L * S;
  if (!a->backward) {
    h.mask = a->mask ? (const float *)at(a->mask, a->sm, b, hh, 4) : NULL;
    h.out = w, h.ldo = Dv;
    kern->forward(&h, scratch);
    narrow_rows(narrow, h.out, L, Dv, (uint16_t *)at(a->out, a->so, b, hh, 2), base->ldo);
    return;
  }
  h.dout = widen_rows(widen, (const uint16_t *)at(a->dout, a->sdo, b, hh, 2), base->lddo, L,
                      Dv, w);
  w += L * Dv;
  h.lddo = Dv;
  h.dq = w, h.lddq = D, w += L * D;
  h.dk = w, h.lddk = D, w += S * D;
  h.dv = w, h.lddv = Dv;
  kern->backward(&h, scratch);
  narrow_rows(narrow, h.dq, L, D, (uint16_t *)at(a->dq, a->sdq, b, hh, 2), base->lddq);
  narrow_rows(narrow, h.dk, S, D, (uint16_t *)at(a->dk, a->sdk, b, hh, 2), base->lddk);
  narrow_rows(narrow, h.dv, S, Dv, (uint16_t *)at(a->dv, a->sdv, b, hh, 2), base->lddv);
}

/* every pair through the active ISA's head kernel, one pair's scratch per thread */
static int run_pairs(const pairs_args *a, const mte_att_head *base) {
  const int64_t pairs = a->B * a->H, L = base->L, S = base->S, D = base->D, Dv = base->Dv;
  if (pairs == 0 || L == 0) return MTE_OK;
  const mte_attention_kernel *kern = mte__isa()->attention;
  const double work = (double)pairs * (double)L * (double)S * (double)(D + Dv);
  const int nt = mte__threads_for(work, PARALLEL_MIN_WORK, pairs);
  size_t own = mte__attention_scratch(L, S, D, Dv);
  own = (own + 16) / 16 * 16; /* >= 1 float, each thread's part 64-byte aligned */
  size_t per = own + (a->dtype == MTE_DT_F32 ? 0 : half_extra(L, S, D, Dv)), bytes;
  per = (per + 15) / 16 * 16;
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
      if (a->dtype != MTE_DT_F32) {
        half_pair(a, base, i, kern, mine, mine + own);
        continue;
      }
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

static int attention_forward(int dtype, int64_t B, int64_t H, int64_t L, int64_t S,
                             int64_t D, int64_t Dv, const void *q, mte_head_strides sq,
                             const void *k, mte_head_strides sk, const void *v,
                             mte_head_strides sv, const float *mask, mte_head_strides sm,
                             float scale, int causal, float *pt, void *out,
                             mte_head_strides so) {
  if (!dims_ok(B, H, L, S, D, Dv) || !view_ok(q, sq, B, H, L, D, 0) ||
      !view_ok(k, sk, B, H, S, D, 0) || !view_ok(v, sv, B, H, S, Dv, 0) ||
      (mask && !view_ok(mask, sm, B, H, L, S, 0)) || !view_ok(out, so, B, H, L, Dv, 1) ||
      (B * H * L * S > 0 && !pt) || (causal != 0 && causal != 1) || !(scale == scale))
    return MTE_EINVAL;
  const mte_att_head base = {.L = L, .S = S, .D = D, .Dv = Dv, .ldq = sq.row, .ldk = sk.row,
                             .ldv = sv.row, .ldm = mask ? sm.row : 0, .scale = scale,
                             .causal = causal, .ldo = so.row};
  const pairs_args a = {.B = B, .H = H, .dtype = dtype, .q = q, .k = k, .v = v, .mask = mask,
                        .sq = sq, .sk = sk, .sv = sv, .sm = sm, .so = so, .pt = pt,
                        .out = out};
  return run_pairs(&a, &base);
}

static int attention_backward(int dtype, int64_t B, int64_t H, int64_t L, int64_t S,
                              int64_t D, int64_t Dv, const void *q, mte_head_strides sq,
                              const void *k, mte_head_strides sk, const void *v,
                              mte_head_strides sv, float scale, const float *pt,
                              const void *dout, mte_head_strides sdo, void *dq,
                              mte_head_strides sdq, void *dk, mte_head_strides sdk, void *dv,
                              mte_head_strides sdv) {
  if (!dims_ok(B, H, L, S, D, Dv) || !view_ok(q, sq, B, H, L, D, 0) ||
      !view_ok(k, sk, B, H, S, D, 0) || !view_ok(v, sv, B, H, S, Dv, 0) ||
      !view_ok(dout, sdo, B, H, L, Dv, 0) || !view_ok(dq, sdq, B, H, L, D, 1) ||
      !view_ok(dk, sdk, B, H, S, D, 1) || !view_ok(dv, sdv, B, H, S, Dv, 1) ||
      (B * H * L * S > 0 && !pt) || !(scale == scale))
    return MTE_EINVAL;
  if (B * H == 0) return MTE_OK;
  if (L == 0) { /* no queries: nothing reaches k and v (+0 has all bits 0 in every dtype) */
    const size_t es = dtype == MTE_DT_F32 ? 4 : 2;
    for (int64_t i = 0; i < B * H; ++i) {
      for (int64_t s = 0; s < S; ++s) {
        if (D)
          memset((char *)at(dk, sdk, i / H, i % H, es) + (size_t)(s * sdk.row) * es, 0,
                 (size_t)D * es);
        if (Dv)
          memset((char *)at(dv, sdv, i / H, i % H, es) + (size_t)(s * sdv.row) * es, 0,
                 (size_t)Dv * es);
      }
    }
    return MTE_OK;
  }
  const mte_att_head base = {.L = L, .S = S, .D = D, .Dv = Dv, .ldq = sq.row, .ldk = sk.row,
                             .ldv = sv.row, .scale = scale, .lddo = sdo.row, .lddq = sdq.row,
                             .lddk = sdk.row, .lddv = sdv.row};
  const pairs_args a = {.B = B, .H = H, .dtype = dtype, .q = q, .k = k, .v = v, .dout = dout,
                        .sq = sq, .sk = sk, .sv = sv, .sdo = sdo, .sdq = sdq, .sdk = sdk,
                        .sdv = sdv, .pt = (float *)pt, .dq = dq, .dk = dk, .dv = dv,
                        .backward = 1};
  return run_pairs(&a, &base);
}

int mte_attention_forward(int64_t B, int64_t H, int64_t L, int64_t S, int64_t D, int64_t Dv,
                          const float *q, mte_head_strides sq, const float *k,
                          mte_head_strides sk, const float *v, mte_head_strides sv,
                          const float *mask, mte_head_strides sm, float scale, int causal,
                          float *pt, float *out, mte_head_strides so) {
  return attention_forward(MTE_DT_F32, B, H, L, S, D, Dv, q, sq, k, sk, v, sv, mask, sm,
                           scale, causal, pt, out, so);
}

int mte_attention_backward(int64_t B, int64_t H, int64_t L, int64_t S, int64_t D, int64_t Dv,
                           const float *q, mte_head_strides sq, const float *k,
                           mte_head_strides sk, const float *v, mte_head_strides sv,
                           float scale, const float *pt, const float *dout,
                           mte_head_strides sdo, float *dq, mte_head_strides sdq, float *dk,
                           mte_head_strides sdk, float *dv, mte_head_strides sdv) {
  return attention_backward(MTE_DT_F32, B, H, L, S, D, Dv, q, sq, k, sk, v, sv, scale, pt,
                            dout, sdo, dq, sdq, dk, sdk, dv, sdv);
}

int mte_attention_forward_half(int dtype, int64_t B, int64_t H, int64_t L, int64_t S,
                               int64_t D, int64_t Dv, const uint16_t *q, mte_head_strides sq,
                               const uint16_t *k, mte_head_strides sk, const uint16_t *v,
                               mte_head_strides sv, const float *mask, mte_head_strides sm,
                               float scale, int causal, float *pt, uint16_t *out,
                               mte_head_strides so) {
  if (dtype != MTE_DT_BF16 && dtype != MTE_DT_F16) return MTE_EINVAL;
  return attention_forward(dtype, B, H, L, S, D, Dv, q, sq, k, sk, v, sv, mask, sm, scale,
                           causal, pt, out, so);
}

int mte_attention_backward_half(int dtype, int64_t B, int64_t H, int64_t L, int64_t S,
                                int64_t D, int64_t Dv, const uint16_t *q, mte_head_strides sq,
                                const uint16_t *k, mte_head_strides sk, const uint16_t *v,
                                mte_head_strides sv, float scale, const float *pt,
                                const uint16_t *dout, mte_head_strides sdo, uint16_t *dq,
                                mte_head_strides sdq, uint16_t *dk, mte_head_strides sdk,
                                uint16_t *dv, mte_head_strides sdv) {
  if (dtype != MTE_DT_BF16 && dtype != MTE_DT_F16) return MTE_EINVAL;
  return attention_backward(dtype, B, H, L, S, D, Dv, q, sq, k, sk, v, sv, scale, pt, dout,
                            sdo, dq, sdq, dk, sdk, dv, sdv);
}
