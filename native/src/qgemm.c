/*
 * qgemm.c - the blocked int8 GEMM with requantization fused into its microkernel, and the
 * two entry points that are plain GEMMs (mte_qlinear, mte_qgemm).
 *
 *   prepare (once per weight):  W (M x K) -> MR-row panels, k in groups of 4 (zero-padded),
 *                               and the row sums sum_k w[o, k]
 *   per call:                   chan[o] = bias, multiplier, shift and the compensation
 *                               -(x_zp + x_offset) * rowsum[o] (mte_quant_internal.h)
 *   for each block of NC columns of X (sized so the packed block stays in L2):
 *     pack the block (qpack.c: rows of x, im2col, padded planes or x transposed)
 *     for each NR-column panel:         (its K x NR bytes stay in L1: 4x a weight panel)
 *       for each MR-row panel of W:     microkernel: full-K int32 tile, requantized, stored
 *
 * There is no k blocking: the int32 accumulators live in registers for the whole K (at most
 * MTE_QMAX_K), so the tile is requantized once, in registers, with no int32 tile in memory.
 */
#include <stdlib.h>
#include <string.h>

#include "mte_qgemm_internal.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define L2_BLOCK_BYTES (192 * 1024) /* a packed block of X */
#define PAR_MIN_WORK (64.0 * 64.0 * 64.0)

/* ---------------------------------------------------------------- the plan */

const mte_qgemm_kernel *mte__qgemm_kernel(int64_t K) {
  const mte_qgemm_kernel *k = mte__isa()->qgemm;
  const uint64_t have = mte_cpu_features();
  while (k->fallback && ((k->needs & have) != k->needs || (K > 0 && K < k->min_k)))
    k = k->fallback;
  return k;
}

const char *mte_qgemm_path(int64_t K) {
  const mte_qgemm_kernel *k = mte__qgemm_kernel(K > 0 ? K : 0);
  return k->path ? k->path : k->isa;
}

int mte__qplan_make(int64_t O, int64_t Cg, int64_t kh, int64_t kw, int64_t G, const int8_t *w,
                    mte_qconv2d_plan **out) {
  if (!out) return MTE_EINVAL;
  if (O < 1 || Cg < 1 || kh < 1 || kw < 1 || G < 1 || O % G || O > ((int64_t)1 << 30) ||
      Cg > MTE_QMAX_K || kh > MTE_QMAX_K || kw > MTE_QMAX_K || Cg * kh * kw > MTE_QMAX_K || !w)
    return MTE_EINVAL;
  const int64_t K = Cg * kh * kw;
  for (int64_t i = 0; i < O * K; ++i)
    if (w[i] == -128) return MTE_EINVAL;
  const mte_qgemm_kernel *k = mte__qgemm_kernel(K);
  const int64_t Og = O / G, panels = cdiv(Og, k->mr);
  const int64_t kg = k->kg_align > 1 ? cdiv(cdiv(K, 4), k->kg_align) * k->kg_align : cdiv(K, 4);
  const int dw = Cg == 1 && Og == 1 && kh == 3 && kw == 3;
  size_t pack = (size_t)(G * panels) * (size_t)(kg * k->mr * 4);
  size_t bytes = sizeof(mte_qconv2d_plan) + 64 + mte__q_align(pack) +
                 mte__q_align((size_t)O * 4) + (dw ? (size_t)O * 9 : 0);
  void *mem = malloc(bytes);
  if (!mem) return MTE_ENOMEM;
  mte_qconv2d_plan *p = (mte_qconv2d_plan *)mem;
  uint8_t *base = (uint8_t *)(((uintptr_t)(p + 1) + 63) & ~(uintptr_t)63);
  *p = (mte_qconv2d_plan){k, O, Cg, kh, kw, G, Og, K, kg, panels, (int8_t *)base,
                          (int32_t *)(base + mte__q_align(pack)), NULL, mem, {0}};
  if (dw) p->w3x3 = (int8_t *)(base + mte__q_align(pack) + mte__q_align((size_t)O * 4));
  memset(p->wpack, 0, pack);
  const int mr = k->mr;
  for (int64_t o = 0; o < O; ++o) {
    const int64_t g = o / Og, r = o % Og;
    int8_t *panel = p->wpack + (g * panels + r / mr) * kg * mr * 4;
    const int8_t *src = w + o * K;
    int32_t sum = 0;
    for (int64_t kk = 0; kk < K; ++kk) {
      if (k->w_rows)
        panel[(r % mr) * kg * 4 + kk] = src[kk];
      else
        panel[(kk / 4) * mr * 4 + (r % mr) * 4 + kk % 4] = src[kk];
      sum += src[kk];
    }
    p->wsum[o] = sum;
  }
  if (dw) memcpy(p->w3x3, w, (size_t)O * 9);
  *out = p;
  return MTE_OK;
}

void mte_qconv2d_free(mte_qconv2d_plan *plan) {
  if (plan) {
    free(plan->bound.chan);
    free(plan->mem);
  }
}

int mte__qcheck_requant(const mte_requant *rq, int64_t channels) {
  if (!rq || !mte__q_zp_ok(rq->zero_point) || !mte__q_act_ok(rq->act_min, rq->act_max))
    return MTE_EINVAL;
  if (channels > 0 && (!rq->multiplier || !rq->shift)) return MTE_EINVAL;
  for (int64_t o = 0; o < channels; ++o)
    if (!mte__q_mult_ok(rq->multiplier[o], rq->shift[o])) return MTE_EINVAL;
  return MTE_OK;
}

void mte__qchan_fill(mte_qchan *chan, int64_t O, int64_t padded, const int32_t *wsum,
                     int32_t x_comp, const int32_t *bias, const mte_requant *rq, int64_t K) {
  for (int64_t o = 0; o < padded; ++o) {
    const int64_t c = o < O ? o : 0;
    /* |x_comp * wsum| <= 255 * 65536 * 127 < 2^31 */
    chan[o] = mte__qchan(bias ? bias[c] : 0, rq->multiplier[c], rq->shift[c],
                         wsum ? -x_comp * wsum[c] : 0);
    mte__qchan_fold(&chan[o], K * 255 * 127); /* |dot| = |sum w (x - x_zp)| */
  }
}

/* ---------------------------------------------------------------- scratch */

void *mte__qscratch_open(qscratch *s, mte_arena *arena, size_t bytes, int *st) {
  s->own = arena == NULL;
  s->arena = arena ? arena : mte__arena_acquire(&s->is_default);
  *st = s->arena ? MTE_OK : MTE_ENOMEM;
  if (!s->arena) return NULL;
  mte_arena_reset(s->arena);
  size_t fp = mte_arena_footprint(bytes);
  *st = fp ? mte_arena_reserve(s->arena, fp) : MTE_EOVERFLOW;
  void *p = *st == MTE_OK ? mte_arena_alloc(s->arena, bytes) : NULL;
  if (!p) {
    if (*st == MTE_OK) *st = MTE_ENOMEM;
    mte__qscratch_close(s);
  }
  return p;
}

int mte__qscratch_close(qscratch *s) {
  int st = mte_arena_check(s->arena);
  if (s->own) mte__arena_release(s->arena, s->is_default);
  return st;
}

/* ---------------------------------------------------------------- the blocked loop */

int64_t mte__qgemm_block(const qgemm_job *j, int64_t outer) {
  const int nr = j->k->nr;
  int64_t nc = (L2_BLOCK_BYTES / (j->kg * 4)) / nr * nr;
  if (nc < nr) nc = nr;
  if (nc > rup(j->N, nr)) nc = rup(j->N, nr);
  /* the blocks (outer x blocks per GEMM) made a multiple of the threads, so they share the
   * work evenly: MobileNetV2's 56x56 1x1 convs fit one L2 block, which left a thread idle */
  const int nt = mte__num_threads();
  if (nt > 1 && (double)outer * j->M * j->N * j->K >= PAR_MIN_WORK) {
    const int64_t per_gemm = cdiv(rup(outer * cdiv(j->N, nc), nt), outer);
    const int64_t even = rup(cdiv(j->N, per_gemm), nr);
    if (even < nc) nc = even;
  }
  return nc;
}

size_t mte__qgemm_scratch(const qgemm_job *j, int64_t nc) {
  return mte__q_align((size_t)(rup(nc, j->k->nr) * j->kg * 4)) + 4 * (size_t)rup(nc, 64);
}

void mte__qgemm_columns(const qgemm_job *j, int64_t j0, int64_t nc, uint8_t *bbuf,
                        uint8_t *rows) {
  const mte_qgemm_kernel *k = j->k;
  const int mr = k->mr, nr = k->nr;
  mte__qpack_x(&j->src, j->K, j->kg, k, j0, nc, bbuf, rows);
  mte_qtile t = {j->kg, NULL, NULL, NULL, 0, 0, j->zp, j->lo, j->hi, NULL, j->rs, j->cs};
  /* a column panel (kg x NR x 4 bytes) stays in L1 while every weight panel streams past */
  for (int64_t c0 = 0; c0 < nc; c0 += nr) {
    t.b = bbuf + (c0 / nr) * j->kg * nr * 4;
    t.cols = (int)min64(nr, nc - c0);
    /* a tail of at most nr / 2 columns: the narrow tile, half the multiply-adds */
    void (*ukernel)(const mte_qtile *) =
        t.cols <= nr / 2 && k->ukernel_half ? k->ukernel_half : k->ukernel;
    for (int64_t i0 = 0; i0 < j->M; i0 += mr) {
      t.a = j->wpack + (i0 / mr) * j->kg * mr * 4;
      t.chan = j->chan + i0;
      t.rows = (int)min64(mr, j->M - i0);
      t.y = j->y + i0 * j->rs + (j0 - j->ybase + c0) * j->cs;
      ukernel(&t);
    }
  }
}

/* A single GEMM job over all its column blocks, threads splitting the blocks. */
static int run_job(const qgemm_job *j, mte_arena *arena) {
  if (j->M == 0 || j->N == 0) return MTE_OK;
  const int64_t nc = mte__qgemm_block(j, 1), blocks = cdiv(j->N, nc);
  const int nt = mte__threads_for((double)j->M * j->N * j->K, PAR_MIN_WORK, blocks);
  const size_t per = mte__q_align(mte__qgemm_scratch(j, nc));
  qscratch s;
  int st;
  uint8_t *buf = (uint8_t *)mte__qscratch_open(&s, arena, per * (size_t)nt, &st);
  if (!buf) return st;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic) if (nt > 1)
#endif
  for (int64_t b = 0; b < blocks; ++b) {
#ifdef _OPENMP
    uint8_t *mine = buf + per * (size_t)omp_get_thread_num();
#else
    uint8_t *mine = buf;
#endif
    const int64_t j0 = b * nc;
    mte__qgemm_columns(j, j0, min64(nc, j->N - j0), mine,
                       mine + mte__q_align((size_t)(rup(nc, j->k->nr) * j->kg * 4)));
  }
  return mte__qscratch_close(&s);
}

/* the job of a plain GEMM (qlinear, qgemm) with its channels in malloc'd memory */
static int plain_gemm(const mte_qconv2d_plan *p, qsrc src, int64_t N, int32_t x_zp,
                      const int32_t *bias, const mte_requant *rq, int8_t *y, int64_t rs,
                      int64_t cs, mte_arena *arena) {
  const int64_t padded = p->panels * p->k->mr;
  mte_qchan *chan = (mte_qchan *)malloc((size_t)padded * sizeof(mte_qchan));
  if (!chan) return MTE_ENOMEM;
  mte__qchan_fill(chan, p->O, padded, p->wsum, x_zp + p->k->x_offset, bias, rq, p->K);
  src.flip = p->k->x_offset ? 0x80 : 0;
  qgemm_job j = {p->k, p->O, N, p->K, p->kg, p->wpack, chan, src, y, rs, cs,
                 rq->zero_point, rq->act_min, rq->act_max, 0};
  int st = run_job(&j, arena);
  free(chan);
  return st;
}

static int overlap(const void *a, size_t na, const void *b, size_t nb) {
  const uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return na && nb && x < y + nb && y < x + na;
}

/* ---------------------------------------------------------------- qlinear, qgemm */

int mte_qlinear_prepare(int64_t M, int64_t K, const int8_t *w, mte_qconv2d_plan **plan) {
  return mte__qplan_make(M, K, 1, 1, 1, w, plan);
}

int mte_qlinear(int64_t rows, int64_t K, int64_t M, const int8_t *x, int32_t x_zp,
                const int8_t *w, const mte_qconv2d_plan *plan, const int32_t *bias,
                const mte_requant *rq, int8_t *y, mte_arena *arena) {
  if (rows < 0 || K < 1 || K > MTE_QMAX_K || M < 0 || M > ((int64_t)1 << 30) ||
      rows > ((int64_t)1 << 40) / K || !mte__q_zp_ok(x_zp) ||
      mte__qcheck_requant(rq, M) != MTE_OK)
    return MTE_EINVAL;
  if (rows == 0 || M == 0) return MTE_OK;
  if (!x || !y || (!w && !plan) || overlap(x, (size_t)(rows * K), y, (size_t)(rows * M)))
    return MTE_EINVAL;
  if (plan && (plan->O != M || plan->K != K || plan->G != 1 || plan->k != mte__qgemm_kernel(K)))
    return MTE_EINVAL;
  mte_qconv2d_plan *own = NULL;
  if (!plan) {
    int st = mte_qlinear_prepare(M, K, w, &own);
    if (st != MTE_OK) return st;
    plan = own;
  }
  qsrc src = {QSRC_TRANS, x, K, NULL, 0, 0, 0, 0};
  int st = plain_gemm(plan, src, rows, x_zp, bias, rq, y, 1, M, arena);
  mte_qconv2d_free(own);
  return st;
}

int mte_qgemm(int64_t M, int64_t N, int64_t K, const int8_t *a, const int8_t *b, int32_t b_zp,
              const int32_t *bias, const mte_requant *rq, int8_t *c, mte_arena *arena) {
  if (M < 0 || N < 0 || K < 1 || K > MTE_QMAX_K || M > ((int64_t)1 << 30) ||
      N > ((int64_t)1 << 40) / K || !mte__q_zp_ok(b_zp) || mte__qcheck_requant(rq, M) != MTE_OK)
    return MTE_EINVAL;
  if (M == 0 || N == 0) return MTE_OK;
  if (!a || !b || !c || overlap(b, (size_t)(K * N), c, (size_t)(M * N))) return MTE_EINVAL;
  mte_qconv2d_plan *p;
  int st = mte__qplan_make(M, K, 1, 1, 1, a, &p);
  if (st != MTE_OK) return st;
  qsrc src = {QSRC_ROWS, b, N, NULL, 0, 0, 0, 0};
  st = plain_gemm(p, src, N, b_zp, bias, rq, c, N, 1, arena);
  mte_qconv2d_free(p);
  return st;
}
