/*
 * mte_qgemm_internal.h - what the int8 drivers (qgemm.c, qpack.c, qconv.c, qdepthwise.c)
 * share: the prepared weights (the plan), the source of the packed x panels, and the
 * blocked GEMM loop with its scratch memory.
 *
 * One int8 GEMM per (image, group): Y (Og x P) = W (Og x K) @ X (K x P), output channels
 * down the rows and pixels across, so a tile's rows share one channel's requantization and
 * its columns are contiguous NCHW pixels. X is read by a `qsrc`: rows of x (1x1 stride 1 and
 * mte_qgemm), im2col of x (convs of stride > 2, 1x1 of stride 2: the column matrix is never
 * stored, only the block being packed), x transposed (qlinear: a pixel is a row of x), or,
 * for strides <= 2, x padded into planes split in sh x sw phases of Hq x Wq (Wq = ceil((W +
 * pl + pr) / sw)): "flat" rows, output pixel f = r*Wq + s reads, for tap (i, j), phase
 * ((i*dh) % sh, (j*dw) % sw) at f + (i*dh / sh)*Wq + j*dw / sw, so each im2col row is one
 * contiguous run; the Wq - Wo columns past each output row are computed and dropped.
 */
#ifndef MTE_QGEMM_INTERNAL_H
#define MTE_QGEMM_INTERNAL_H

#include "mte_conv_internal.h"
#include "mte_quant_internal.h"

/* a conv's requantization bound to its plan (mte_qconv2d_bind): the channels, computed once */
typedef struct mte_qbound {
  mte_qchan *chan;          /* NULL: not bound */
  mte_conv2d_desc desc;
  int32_t x_zp, zp, lo, hi; /* input and output zero points, clamp */
  int dw;                   /* the channels are the depthwise route's */
  const mte_isa *isa;       /* the row the channels were made for */
} mte_qbound;

struct mte_qconv2d_plan {
  const mte_qgemm_kernel *k; /* the microkernel the panels were packed for */
  int64_t O, Cg, kh, kw, G;  /* weight (O, Cg, kh, kw), groups */
  int64_t Og, K, kg;         /* outputs per group, reduction, k groups of 4 */
  int64_t panels;            /* MR-row panels per group */
  int8_t *wpack;             /* G * panels panels of kg x MR x 4 bytes, 64-aligned */
  int32_t *wsum;             /* O row sums (for the zero-point compensation) */
  int8_t *w3x3;              /* depthwise 3x3 weights (O x 9), or NULL */
  void *mem;
  mte_qbound bound;
};

enum { QSRC_ROWS, QSRC_IM2COL, QSRC_TRANS, QSRC_FLAT };

/* the K x P matrix X of one GEMM */
typedef struct qsrc {
  int kind;
  const int8_t *x; /* ROWS: row k at x + k*ld; TRANS: column j at x + j*ld; IM2COL: plane 0 */
  int64_t ld;
  const conv_geom *g; /* IM2COL, FLAT */
  int64_t wq, pq;     /* FLAT: phase row width and phase size; ld: all phases of a channel */
  uint8_t pad;        /* the padding byte (x_zp), before the xor */
  uint8_t flip;       /* 0x80 when the kernel takes x + 128, else 0 */
} qsrc;

/* pack columns [j0, j0 + nc) of X (K rows, kg groups) into ceil(nc / nr) panels of the
 * kernel kern at dst
 * (panel q at dst + q*kg*nr*4); rows: 4 scratch rows of nc bytes (IM2COL) */
MTE_HIDDEN void mte__qpack_x(const qsrc *s, int64_t K, int64_t kg, const mte_qgemm_kernel *kern,
                             int64_t j0, int64_t nc, uint8_t *dst, uint8_t *rows);

/* even[k] = x[2k], odd[k] = x[2k + 1] for the n bytes of x (the stride-2 phases) */
MTE_HIDDEN void mte__qsplit2(const int8_t *x, int64_t n, int8_t *even, int8_t *odd);

/* one GEMM: M rows of packed weights against the N columns of src */
typedef struct qgemm_job {
  const mte_qgemm_kernel *k;
  int64_t M, N, K, kg;
  const int8_t *wpack;   /* this group's panels */
  const mte_qchan *chan; /* M channels, padded to the panels */
  qsrc src;
  int8_t *y;
  int64_t rs, cs;
  int32_t zp, lo, hi;
  int64_t ybase; /* column j is stored at y + (j - ybase) * cs */
} qgemm_job;

/* columns per packed block of X for this job (a multiple of nr: the block fits in L2, and
 * outer x its blocks split evenly among the threads; outer: the jobs run side by side) */
MTE_HIDDEN int64_t mte__qgemm_block(const qgemm_job *j, int64_t outer);
/* columns [j0, j0 + nc) of the job: pack them (into bbuf, rows: scratch) and run the tiles */
MTE_HIDDEN void mte__qgemm_columns(const qgemm_job *j, int64_t j0, int64_t nc, uint8_t *bbuf,
                                   uint8_t *rows);
/* bytes of the per-thread scratch for a block of nc columns */
MTE_HIDDEN size_t mte__qgemm_scratch(const qgemm_job *j, int64_t nc);

/* qgemm.c: the plan of a weight (M, K) in `groups` groups; w3x3 copied when asked */
MTE_HIDDEN int mte__qplan_make(int64_t O, int64_t Cg, int64_t kh, int64_t kw, int64_t G,
                               const int8_t *w, mte_qconv2d_plan **out);
/* the requantization arguments valid for `channels` outputs (MTE_OK / MTE_EINVAL) */
MTE_HIDDEN int mte__qcheck_requant(const mte_requant *rq, int64_t channels);
/* chan[o] for o < O (padded with copies of channel 0 up to `padded`), given the plan's
 * row sums and the x zero point, for dot products of K terms (the bias folded when it can) */
MTE_HIDDEN void mte__qchan_fill(mte_qchan *chan, int64_t O, int64_t padded, const int32_t *wsum,
                                int32_t x_comp, const int32_t *bias, const mte_requant *rq,
                                int64_t K);

/* scratch memory: the caller's arena or the default one */
typedef struct qscratch {
  mte_arena *arena;
  int is_default, own;
} qscratch;
MTE_HIDDEN void *mte__qscratch_open(qscratch *s, mte_arena *arena, size_t bytes, int *st);
MTE_HIDDEN int mte__qscratch_close(qscratch *s);

/* qdepthwise.c: the 3x3 depthwise route (MTE_EUNSUPPORTED when the geometry is not one) */
MTE_HIDDEN int mte__qdepthwise3x3(const conv_geom *g, const mte_qconv2d_plan *p,
                                  const int8_t *x, int32_t x_zp, const mte_qchan *chan,
                                  const mte_requant *rq, int8_t *y, mte_arena *arena);
MTE_HIDDEN int mte__qdepthwise3x3_applies(const conv_geom *g);

static inline size_t mte__q_align(size_t n) { return (n + 63) & ~(size_t)63; }

#endif /* MTE_QGEMM_INTERNAL_H */
