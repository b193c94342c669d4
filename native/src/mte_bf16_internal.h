/*
 * mte_bf16_internal.h - the "bf16" kernel family: the per-ISA pieces of the half-precision
 * GEMM (gemm_bf16.c), bfloat16 and float16 alike.
 *
 * A descriptor gives the ISA's conversions (runs of n values, the packing's inner loop and
 * the output rounding) and, where the CPU multiplies bf16 pairs natively, a pair-dot
 * microkernel with its tile and block sizes. Without one, gemm_bf16.c widens A and B to
 * float32 while it packs them and runs the row's float32 microkernel (mte__isa()->sgemm).
 *
 * Run-time selection inside a column: a descriptor may need CPU features beyond its row's
 * (`needs`: AVX512_BF16 on top of avx512, HWCAP2_BF16 on top of neon). mte__bf16_kernel()
 * walks `fallback` from the row's descriptor to the first one the CPU supports, so the
 * ISA table keeps one row per ISA and the bf16 hardware is still used where it exists.
 */
#ifndef MTE_BF16_INTERNAL_H
#define MTE_BF16_INTERNAL_H

#include "mte_bf16.h"
#include "mte_internal.h"

/* Pair-dot microkernel: for a full MR x NR tile,
 *     C[i*ldc + j] = alpha * sum_q dot2(a[q*MR + i], b[q*NR + j])  (+ beta * C[i*ldc + j])
 * where each uint32 holds two bf16 (k = 2q in the low half, 2q+1 in the high half) and
 * dot2 multiplies them pairwise in float32 and adds both products. kq >= 1 pairs.
 * beta == 0: C is written without being read. a, b 64-byte aligned. */
typedef void (*mte_bf16_dot_fn)(int64_t kq, const uint32_t *MTE_RESTRICT a,
                                const uint32_t *MTE_RESTRICT b, float *MTE_RESTRICT c,
                                int64_t ldc, float alpha, float beta);

typedef void (*mte_half_widen_fn)(const uint16_t *MTE_RESTRICT src, float *MTE_RESTRICT dst,
                                  int64_t n);
typedef void (*mte_half_narrow_fn)(const float *MTE_RESTRICT src, uint16_t *MTE_RESTRICT dst,
                                   int64_t n);

/* Whole-GEMM kernel (AMX: its own tiles and packing): C = alpha op(A) op(B) + beta C for a
 * float32 C, M, N, K >= 1, using `ws` (gemm_workspace(M, N, K, nthreads) bytes) and up to
 * `nthreads` threads. */
typedef void (*mte_bf16_gemm_fn)(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K,
                                 float alpha, const uint16_t *A, int64_t lda,
                                 const uint16_t *B, int64_t ldb, float beta, float *C,
                                 int64_t ldc, void *ws, int nthreads);
typedef size_t (*mte_bf16_gemm_ws_fn)(int64_t M, int64_t N, int64_t K, int nthreads);

typedef struct mte_bf16_kernel {
  const char *isa;     /* the row's ISA name ("avx512", "neon", ...) */
  const char *path;    /* what runs, for mte_half_gemm_path: "avx512_bf16 vdpbf16ps" */
  uint64_t needs;      /* MTE_CPU_* bits needed beyond the row's; 0 = none */
  const struct mte_bf16_kernel *fallback; /* taken when the CPU lacks `needs` */
  /* conversions: bf16 and fp16 to float32 (exact), float32 to each (nearest even) */
  mte_half_widen_fn bf16_to_f32, f16_to_f32;
  mte_half_narrow_fn f32_to_bf16, f32_to_f16;
  /* optional: the bf16 pair-dot microkernel (NULL: bf16 takes the widening path too) */
  mte_bf16_dot_fn dot;
  int mr, nr;          /* its register tile */
  int mc, kc, nc;      /* its cache blocks (kc in k values, even) */
  mte_fma_peak_fn dot_peak; /* its register-only loop: flops done in `rounds` rounds */
  /* optional: a whole bf16 GEMM that replaces gemm_bf16.c's loops (AMX); skipped, with its
   * descriptor, while mte_set_bf16_amx(0) */
  mte_bf16_gemm_fn gemm;
  mte_bf16_gemm_ws_fn gemm_workspace;
} mte_bf16_kernel;

/* the descriptor of the active row's column that this CPU can run */
MTE_HIDDEN const mte_bf16_kernel *mte__bf16_kernel(void);

/* the portable conversions (arch/generic/bf16_kernel.c), also the scalar tails of others */
MTE_HIDDEN void mte__bf16_to_f32_c(const uint16_t *MTE_RESTRICT s, float *MTE_RESTRICT d,
                                   int64_t n);
MTE_HIDDEN void mte__f16_to_f32_c(const uint16_t *MTE_RESTRICT s, float *MTE_RESTRICT d,
                                  int64_t n);
MTE_HIDDEN void mte__f32_to_bf16_c(const float *MTE_RESTRICT s, uint16_t *MTE_RESTRICT d,
                                   int64_t n);
MTE_HIDDEN void mte__f32_to_f16_c(const float *MTE_RESTRICT s, uint16_t *MTE_RESTRICT d,
                                  int64_t n);

/* one value each way (portable, exact / nearest even) */
static inline float mte__bf16_to_float(uint16_t h) {
  union { uint32_t u; float f; } v = {(uint32_t)h << 16};
  return v.f;
}
static inline uint16_t mte__float_to_bf16(float f) {
  union { float f; uint32_t u; } v = {f};
  if ((v.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((v.u >> 16) | 0x0040u); /* NaN */
  v.u += 0x7fffu + ((v.u >> 16) & 1u); /* round to nearest even */
  return (uint16_t)(v.u >> 16);
}

extern const mte_bf16_kernel mte_bf16_kernel_generic;
#ifdef MTE_HAVE_X86_KERNELS
extern const mte_bf16_kernel mte_bf16_kernel_avx2, mte_bf16_kernel_avx512,
    mte_bf16_kernel_avx512_amx;
/* the AVX-512 conversions (x86_avx512/bf16_kernel.c), shared by the AMX descriptor */
MTE_HIDDEN void mte__bf16_to_f32_avx512(const uint16_t *MTE_RESTRICT s, float *MTE_RESTRICT d,
                                        int64_t n);
MTE_HIDDEN void mte__f16_to_f32_avx512(const uint16_t *MTE_RESTRICT s, float *MTE_RESTRICT d,
                                       int64_t n);
MTE_HIDDEN void mte__f32_to_bf16_avx512(const float *MTE_RESTRICT s, uint16_t *MTE_RESTRICT d,
                                        int64_t n);
MTE_HIDDEN void mte__f32_to_f16_avx512(const float *MTE_RESTRICT s, uint16_t *MTE_RESTRICT d,
                                       int64_t n);
#endif
#ifdef MTE_HAVE_NEON_KERNELS
extern const mte_bf16_kernel mte_bf16_kernel_neon;
#endif

#endif /* MTE_BF16_INTERNAL_H */
