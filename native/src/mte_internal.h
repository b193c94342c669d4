/*
 * mte_internal.h - declarations shared by the library's source files (not installed).
 *
 * The central idea is the *microkernel descriptor*: each ISA provides a function that
 * multiplies one packed MR x kc panel of A by one packed kc x NR panel of B into an
 * MR x NR tile of C, plus the cache-blocking sizes that suit it. gemm.c (packing, the
 * blocked loops, edge tiles, epilogue, threads) is written once against this descriptor.
 * Every other ISA-specific family follows the same split, and one table (cpu.c, "the ISA
 * table" below) picks each family's descriptor for the machine. The int8 GEMM (the qgemm
 * family, mte_quant_internal.h) follows the same split.
 */
#ifndef MTE_INTERNAL_H
#define MTE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "mte.h"

#define MTE_ALIGN 64

#if defined(__GNUC__)
#define MTE_RESTRICT __restrict__
#define MTE_LIKELY(x) __builtin_expect(!!(x), 1)
#define MTE_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define MTE_HIDDEN __attribute__((visibility("hidden")))
#else
#define MTE_RESTRICT
#define MTE_LIKELY(x) (x)
#define MTE_UNLIKELY(x) (x)
#define MTE_HIDDEN
#endif

/*
 * SGEMM microkernel: for a full MR x NR tile,
 *     C[i*ldc + j] = alpha * sum_p a[p*MR + i] * b[p*NR + j]  (+ beta * C[i*ldc + j])
 * a: packed A panel, kc x MR (column of MR values per step p), 64-byte aligned
 * b: packed B panel, kc x NR, 64-byte aligned
 * beta == 0 means C is written without being read. kc >= 1.
 */
typedef void (*mte_sgemm_ukernel_fn)(int64_t kc, const float *MTE_RESTRICT a,
                                     const float *MTE_RESTRICT b, float *MTE_RESTRICT c,
                                     int64_t ldc, float alpha, float beta);

/* The same tile with a simple epilogue applied in registers before the store:
 *     C = act(alpha * a @ b + beta * C + row_bias[i] + col_bias[j])
 * row_bias (MR values) and col_bias (NR values) may be NULL; act is MTE_ACT_NONE, _RELU or
 * _RELU6 (GELU and residuals go through the tile epilogue, mte_epilogue.h). */
typedef void (*mte_sgemm_ukernel_post_fn)(int64_t kc, const float *MTE_RESTRICT a,
                                          const float *MTE_RESTRICT b, float *MTE_RESTRICT c,
                                          int64_t ldc, float alpha, float beta,
                                          const float *row_bias, const float *col_bias,
                                          int act);

/* The arithmetic ceiling a microkernel aims at: `rounds` rounds of 12 independent FMA
 * chains at the ISA's vector width (nothing loaded or stored). Returns the flops done. */
typedef double (*mte_fma_peak_fn)(int64_t rounds);

/* One MR-row tile of a GEMM whose B is read in place (a 1x1 convolution's input: row-major
 * K x N, row stride ldb), not packed: rows [0, rows) x columns [0, width) of
 *     C = act(a @ b + beta C + (init_bias ? bias[i] : 0) + (last ? res : 0))
 * a: an MR-tall packed panel (kc x MR, as mte_sgemm_ukernel_fn's). beta is 0 or 1; the
 * activation (NONE, RELU, RELU6) and the residual (ld ldr, or NULL) apply when `last`
 * (the final k slice); the bias is added when `init_bias` (the first slice: it seeds the
 * accumulators). width <= the kernel's direct_max. Nothing outside the tile is read from
 * b beyond its columns [0, width), nor written in c. */
typedef struct mte_direct_tile {
  int64_t kc;
  const float *a, *b;
  int64_t ldb;
  float *c;
  int64_t ldc;
  int rows, width;
  float beta;
  int init_bias, last, act;
  const float *bias; /* rows values, or NULL */
  const float *res;  /* residual tile, or NULL */
  int64_t ldr;
} mte_direct_tile;
typedef void (*mte_sgemm_direct_fn)(const mte_direct_tile *t);

typedef struct mte_sgemm_kernel {
  const char *isa;             /* "generic", "avx2", "avx512", "neon" */
  int mr, nr;                  /* register tile */
  int mc, kc, nc;              /* cache blocks: mc % mr == 0, nc % nr == 0 */
  mte_sgemm_ukernel_fn ukernel;
  /* optional: the same contract for a tile only nr/2 columns wide (b still has row stride
   * nr), used for a last column panel with <= nr/2 valid columns: half the FMAs of a full
   * tile, which for a 196-column output (1x1 conv on 14x14) is 1/14 of the whole GEMM */
  mte_sgemm_ukernel_fn ukernel_half;
  /* optional: the same for a last panel with at most nr/8 valid columns (writes those) */
  mte_sgemm_ukernel_fn ukernel_quarter;
  /* optional: the full tile with bias + ReLU/ReLU6 fused into its store (no second pass
   * over the tile; a separate pass costs ~15% of a 1x1 conv with K = 96) */
  mte_sgemm_ukernel_post_fn ukernel_post;
  /* optional: packs an op(B) = B^T panel (gemm.c's pack_b_panel contract, trans case) */
  void (*pack_b_trans)(int nr, int64_t cols, int64_t kc, const float *B, int64_t ldb,
                       int64_t j, int64_t p0, float *MTE_RESTRICT dst);
  mte_fma_peak_fn fma_peak;    /* measures this ISA's fp32 FMA peak (mte_peak_gflops) */
  /* optional: the in-place-B tile (mte_direct_tile) that conv.c's 1x1 path uses instead of
   * packing x; direct_max: the widest tile it takes; direct_plan: cuts n columns into tile
   * widths (written to w[], returns how many; at most n / 16 + 2) */
  mte_sgemm_direct_fn direct;
  int direct_max;
  int (*direct_plan)(int64_t n, int *w);
} mte_sgemm_kernel;

/* Largest MR*NR of any kernel: sizes the stack tile used for edge tiles. */
#define MTE_MAX_TILE (16 * 64)


/* Kernels provided by the per-ISA files (each exists only where it is compiled). */
extern const mte_sgemm_kernel mte_sgemm_kernel_generic;
#if defined(__x86_64__) && !defined(MTE_NO_X86_KERNELS)
#define MTE_HAVE_X86_KERNELS 1
extern const mte_sgemm_kernel mte_sgemm_kernel_avx2;
extern const mte_sgemm_kernel mte_sgemm_kernel_avx512;
MTE_HIDDEN void mte__pack_b_trans_avx2(int nr, int64_t cols, int64_t kc, const float *B,
                                       int64_t ldb, int64_t j, int64_t p0,
                                       float *MTE_RESTRICT dst);
/* x86_avx512/sgemm_direct.c: the AVX-512 direct tile (widths <= 49) and its width plan */
MTE_HIDDEN void mte__direct_avx512(const mte_direct_tile *t);
MTE_HIDDEN int mte__direct_plan_avx512(int64_t n, int *w);
#endif
#if defined(__aarch64__) && !defined(MTE_NO_NEON_KERNELS)
#define MTE_HAVE_NEON_KERNELS 1
extern const mte_sgemm_kernel mte_sgemm_kernel_neon;
MTE_HIDDEN void mte__pack_b_trans_neon(int nr, int64_t cols, int64_t kc, const float *B,
                                       int64_t ldb, int64_t j, int64_t p0,
                                       float *MTE_RESTRICT dst);
#endif

/* A ragged edge tile (valid columns `cols` < nr) computed into the stack tile `tile`
 * (row stride nr, beta 0): with the quarter- or half-width microkernel when the columns
 * fit in it. */
static inline void mte__ukernel_edge(const struct mte_sgemm_kernel *k, int64_t kc,
                                     const float *a, const float *b, float *tile, int64_t cols,
                                     float alpha) {
  if (cols <= k->nr / 8 && k->ukernel_quarter)
    k->ukernel_quarter(kc, a, b, tile, k->nr, alpha, 0.0f);
  else if (cols <= k->nr / 2 && k->ukernel_half)
    k->ukernel_half(kc, a, b, tile, k->nr, alpha, 0.0f);
  else
    k->ukernel(kc, a, b, tile, k->nr, alpha, 0.0f);
}

/* ---------------------------------------------------------------- the ISA table */

/*
 * Every ISA-specific piece of the library belongs to a *kernel family*. A family has one
 * descriptor type (a struct of function pointers and parameters whose `isa` member names
 * the ISA it was compiled for) and one descriptor per ISA that specialises it, in
 * src/arch/<isa>/. cpu.c holds the one table that picks them: a row per ISA compiled in,
 * best first, and a column per family:
 *
 *   column        descriptor           declared in                per-ISA file
 *   sgemm         mte_sgemm_kernel     mte_internal.h (above)     sgemm_kernel.c (+ pack_b_trans.c)
 *   epilogue      mte_epilogue_kernel  mte_epilogue.h             epilogue_tile.c
 *   im2col        mte_im2col_kernel    mte_conv_internal.h        im2col_panel.c
 *   depthwise3x3  mte_dw3x3_kernel     mte_depthwise_internal.h   depthwise3x3.c
 *   depthwise     mte_dw_kernel        mte_depthwise_internal.h   depthwise.c
 *   pool          mte_pool_kernel      mte_pool_internal.h        pool_rows.c
 *   winograd      mte_wino_kernels     mte_winograd_internal.h    winograd_transforms.c
 *   rowwise       mte_rowwise_kernel   mte_transformer_internal.h rowwise.c
 *   attention     mte_attention_kernel mte_transformer_internal.h attention_head.c
 *   qgemm         mte_qgemm_kernel     mte_quant_internal.h       qgemm_kernel.c
 *   qdepthwise    mte_qdw_kernel       mte_quant_internal.h       qdepthwise.c
 *   qelem         mte_qelem_kernel     mte_qelem_internal.h       qelem.c (vnni: qgemv.c)
 *   bf16          mte_bf16_kernel      mte_bf16_internal.h        bf16_kernel.c
 *
 * MTE_FAMILIES below is that list of columns, X(column, descriptor type); the row type, the
 * generic fallback and the family names (mte_family_name) are all derived from it. A row
 * may leave a column NULL when its ISA has no specialised kernel for that family: cpu.c
 * then fills it from the generic row, so mte__isa() always returns a complete row.
 */
#define MTE_FAMILIES(X)              \
  X(sgemm, mte_sgemm_kernel)         \
  X(epilogue, mte_epilogue_kernel)   \
  X(im2col, mte_im2col_kernel)       \
  X(depthwise3x3, mte_dw3x3_kernel)  \
  X(depthwise, mte_dw_kernel)        \
  X(pool, mte_pool_kernel)           \
  X(winograd, mte_wino_kernels)      \
  X(rowwise, mte_rowwise_kernel)     \
  X(attention, mte_attention_kernel) \
  X(qgemm, mte_qgemm_kernel)         \
  X(qdepthwise, mte_qdw_kernel)      \
  X(convdirect, mte_convdir_kernel) \
  X(qelem, mte_qelem_kernel)         \
  X(bf16, mte_bf16_kernel)

#define MTE_ISA_COLUMN(column, type) const struct type *column;
typedef struct mte_isa {
  const char *name; /* as MTE_ISA and mte_set_isa spell it: "avx512", "avx2", ... */
  uint64_t needs;   /* MTE_CPU_* bits the CPU must have */
  const char *extends; /* NULL, or the row whose kernels fill this one's empty columns */
  MTE_FAMILIES(MTE_ISA_COLUMN) /* const mte_sgemm_kernel *sgemm; ... one per family */
} mte_isa;
#undef MTE_ISA_COLUMN

/* cpu.c: the active ISA's row, every column filled. A call reads it once, at its start,
 * and takes all its kernels from it (so mte_set_isa from another thread never mixes ISAs
 * inside one call). One atomic load: as cheap as a global. */
MTE_HIDDEN const mte_isa *mte__isa(void);

/* core.c: threads to use for a call. */
MTE_HIDDEN int mte__num_threads(void);

/* Threads for `work` multiply-adds split over `units` independent pieces: 1 below
 * `min_work` (a fork/join would cost more) or with one piece, else at most one per piece. */
static inline int mte__threads_for(double work, double min_work, int64_t units) {
  int nt = mte__num_threads();
  if (work < min_work || units < 2) return 1;
  return nt < units ? nt : (int)units;
}

/* arena.c: borrow the default arena (or a temporary one if it is busy); give it back. */
MTE_HIDDEN mte_arena *mte__arena_acquire(int *is_default);
MTE_HIDDEN void mte__arena_release(mte_arena *arena, int is_default);

/* Overflow-checked size arithmetic: return 0 on overflow, else store the result. */
static inline int mte__mul_size(size_t a, size_t b, size_t *out) {
  if (a != 0 && b > SIZE_MAX / a) return 0;
  *out = a * b;
  return 1;
}
static inline int mte__add_size(size_t a, size_t b, size_t *out) {
  if (b > SIZE_MAX - a) return 0;
  *out = a + b;
  return 1;
}

#endif /* MTE_INTERNAL_H */
