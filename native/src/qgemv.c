/*
 * qgemv.c - fully connected int8 layers at batch 1 (a few rows): one matrix-vector product
 * per row, with everything constant prepared once.
 *
 *   prepare:  W (M x K) -> panels of 16 outputs with k in groups of 4 (zero-padded; the
 *             qelem family's layout, mte_qelem_internal.h), the row sums, and each
 *             output's requantisation channel with the bias and the zero-point
 *             compensation -x_zp * sum_k w[o, k] in it
 *   run:      acc = W x (the active ISA's gemv: VPDPBUSD on avx512vnni), then
 *             y[o] = mte__requant(acc[o], chan[o]), the scalar reference
 *
 * The blocked qgemm (qgemm.c) computes a whole MR x NR tile per weight panel, so at one
 * row it spends NR - 1 of every NR products on nothing and re-derives the channels each
 * call; here the weights stream past once and the epilogue is 1 of 16 outputs' worth.
 */
#include <stdlib.h>
#include <string.h>

#include "mte_qelem_internal.h"
#include "mte_quant_internal.h"

struct mte_qgemv_plan {
  int64_t M, K, kg, panels;
  int8_t *w;       /* panels x kg x 16 x 4 */
  int32_t *wsum;   /* panels x 16 (0 past M) */
  mte_qchan *chan; /* M */
  int32_t zp, lo, hi;
};

void mte_qgemv_free(mte_qgemv_plan *plan) {
  if (!plan) return;
  free(plan->w);
  free(plan->wsum);
  free(plan->chan);
  free(plan);
}

int mte_qgemv_prepare(int64_t M, int64_t K, const int8_t *w, int32_t x_zero_point,
                      const int32_t *bias, const mte_requant *rq, mte_qgemv_plan **plan) {
  if (!plan) return MTE_EINVAL;
  *plan = NULL;
  if (M < 1 || M > ((int64_t)1 << 30) || K < 1 || K > MTE_QMAX_K || !w || !rq ||
      !mte__q_zp_ok(x_zero_point) || !mte__q_zp_ok(rq->zero_point) ||
      !mte__q_act_ok(rq->act_min, rq->act_max) || !rq->multiplier || !rq->shift)
    return MTE_EINVAL;
  for (int64_t o = 0; o < M; ++o)
    if (!mte__q_mult_ok(rq->multiplier[o], rq->shift[o])) return MTE_EINVAL;
  const int64_t kg = (K + 3) / 4, panels = (M + MTE_QGEMV_MR - 1) / MTE_QGEMV_MR;
  mte_qgemv_plan *p = (mte_qgemv_plan *)calloc(1, sizeof *p);
  if (!p) return MTE_ENOMEM;
  *p = (mte_qgemv_plan){M, K, kg, panels, NULL, NULL, NULL, rq->zero_point, rq->act_min,
                        rq->act_max};
  p->w = (int8_t *)calloc((size_t)(panels * kg * MTE_QGEMV_MR * 4), 1);
  p->wsum = (int32_t *)calloc((size_t)(panels * MTE_QGEMV_MR), sizeof *p->wsum);
  p->chan = (mte_qchan *)malloc((size_t)M * sizeof *p->chan);
  if (!p->w || !p->wsum || !p->chan) {
    mte_qgemv_free(p);
    return MTE_ENOMEM;
  }
  for (int64_t o = 0; o < M; ++o) {
    int8_t *panel = p->w + (o / MTE_QGEMV_MR) * kg * MTE_QGEMV_MR * 4 + (o % MTE_QGEMV_MR) * 4;
    int32_t sum = 0; /* |sum| <= 128 * 2^16 */
    for (int64_t k = 0; k < K; ++k) {
      panel[(k / 4) * MTE_QGEMV_MR * 4 + k % 4] = w[o * K + k];
      sum += w[o * K + k];
    }
    p->wsum[o] = sum;
    /* |x_zp * sum| <= 2^7 * 2^23: no overflow */
    p->chan[o] = mte__qchan(bias ? bias[o] : 0, rq->multiplier[o], rq->shift[o],
                            -x_zero_point * sum);
  }
  *plan = p;
  return MTE_OK;
}

int mte_qgemv_run(const mte_qgemv_plan *p, int64_t rows, const int8_t *x, int8_t *y) {
  if (!p || rows < 0 || rows > ((int64_t)1 << 40) / p->K) return MTE_EINVAL;
  if (rows == 0) return MTE_OK;
  if (!x || !y) return MTE_EINVAL;
  const uintptr_t xa = (uintptr_t)x, ya = (uintptr_t)y;
  if (xa < ya + (uintptr_t)(rows * p->M) && ya < xa + (uintptr_t)(rows * p->K))
    return MTE_EINVAL; /* y overlaps x */
  const mte_qelem_kernel *k = mte__isa()->qelem;
  void (*gemv)(int64_t, int64_t, const int8_t *, const int32_t *, const int8_t *, int32_t *) =
      k->gemv ? k->gemv : mte__qgemv_generic;
  const int pad = p->K % 4 != 0;
  int32_t *acc = (int32_t *)malloc((size_t)(p->panels * MTE_QGEMV_MR) * sizeof *acc +
                                   (pad ? (size_t)(p->kg * 4) : 0));
  if (!acc) return MTE_ENOMEM;
  int8_t *xpad = (int8_t *)(acc + p->panels * MTE_QGEMV_MR);
  if (pad) memset(xpad + p->K, 0, (size_t)(p->kg * 4 - p->K));
  for (int64_t r = 0; r < rows; ++r) {
    const int8_t *xr = x + r * p->K;
    if (pad) xr = (const int8_t *)memcpy(xpad, xr, (size_t)p->K);
    gemv(p->panels, p->kg, p->w, p->wsum, xr, acc);
    int8_t *yr = y + r * p->M;
    for (int64_t o = 0; o < p->M; ++o)
      yr[o] = mte__requant(acc[o], &p->chan[o], p->zp, p->lo, p->hi);
  }
  free(acc);
  return MTE_OK;
}
