/*
 * mte_bf16.h - half-precision storage, float32 arithmetic: the bfloat16 and float16 GEMM
 * and conv2d of libmte.
 *
 * A bfloat16 (bf16) is the top 16 bits of a float32 (8 exponent bits, 7 mantissa bits); a
 * float16 (fp16, IEEE binary16) has 5 exponent and 10 mantissa bits. Both are passed as
 * uint16_t storage. Every product here is computed and summed in float32 (a bf16 x bf16
 * product is exact in float32), and a half-precision result is rounded once, at the end,
 * to nearest even: the same contract as PyTorch's CPU bf16/fp16 matmul.
 *
 * How it runs (one family, "bf16", of the ISA table; mte_half_gemm_path says which path):
 *   avx512 + AMX-BF16     bf16: TDPBF16PS tiles (x86_avx512/bf16_amx.c), where the OS grants
 *                         the tile state
 *   avx512 + AVX512_BF16  bf16: a microkernel on VDPBF16PS (pairs of k packed into 32 bits)
 *   avx512, avx2          bf16/fp16 widened to float32 inside the packing (shifts; F16C's
 *                         VCVTPH2PS), then the float32 microkernel of the ISA
 *   neon + BF16 (HWCAP2)  bf16: a microkernel on BFDOT; else fp16 via FCVTL, bf16 via shifts
 *   generic               scalar conversion inside the packing, the generic microkernel
 * fp16 always takes the widening path (no CPU here multiplies fp16 into float32 faster).
 */
#ifndef MTE_BF16_H
#define MTE_BF16_H

#include "mte.h"

#ifdef __cplusplus
extern "C" {
#endif

/* element types of the half-precision kernels */
enum { MTE_DT_F32 = 0, MTE_DT_BF16 = 1, MTE_DT_F16 = 2 };

/*
 * C = alpha * op(A) @ op(B) + beta * C + bias   (row-major, as mte_sgemm)
 *   ab_dtype   MTE_DT_BF16 or MTE_DT_F16: the storage of A and B (uint16_t elements)
 *   c_dtype    MTE_DT_F32 (C is float *) or ab_dtype (C is uint16_t *, rounded to nearest
 *              even once; with beta != 0 its old values are widened first)
 *   bias       NULL, or float32: M values (bias_mode MTE_BIAS_PER_ROW) or N (_PER_COL)
 * Accumulation is float32. Shapes, leading dimensions and pointers are checked as
 * mte_sgemm's (MTE_EINVAL, MTE_EOVERFLOW); workspace from `arena` (NULL: the default one).
 */
MTE_API int mte_half_gemm(int ab_dtype, int c_dtype, int trans_a, int trans_b, int64_t M,
                          int64_t N, int64_t K, float alpha, const uint16_t *A, int64_t lda,
                          const uint16_t *B, int64_t ldb, float beta, void *C, int64_t ldc,
                          const float *bias, int bias_mode, mte_arena *arena);

/*
 * 2-D convolution in half precision, im2col + mte_half_gemm per image and group:
 *   x  (N, C, H, W) and w (O, C/groups, KH, KW) in ab_dtype; bias: O float32 values or NULL
 *   y  (N, O, HO, WO) in c_dtype (MTE_DT_F32 or ab_dtype), HO = (H + pt + pb - dh*(KH-1)
 *      - 1) / sh + 1 (the same for WO). Zero padding pt/pb/pl/pr.
 */
MTE_API int mte_half_conv2d(int ab_dtype, int c_dtype, int64_t N, int64_t C, int64_t H,
                            int64_t W, const uint16_t *x, int64_t O, int64_t KH, int64_t KW,
                            const uint16_t *w, const float *bias, int64_t sh, int64_t sw,
                            int64_t pt, int64_t pb, int64_t pl, int64_t pr, int64_t dh,
                            int64_t dw, int64_t groups, void *y, mte_arena *arena);

/* Conversions of n values (the active ISA's vector code): widening is exact; narrowing
 * rounds to nearest even (NaN stays NaN, overflow gives inf). dtype: MTE_DT_BF16 / _F16. */
MTE_API int mte_half_to_f32(int dtype, const uint16_t *src, float *dst, int64_t n);
MTE_API int mte_f32_to_half(int dtype, const float *src, uint16_t *dst, int64_t n);

/* The path mte_half_gemm takes now for ab_dtype, e.g. "avx512_bf16 vdpbf16ps",
 * "avx512 widen+sgemm", "neon_bf16 bfdot", "generic widen+sgemm"; NULL for a bad dtype. */
MTE_API const char *mte_half_gemm_path(int ab_dtype);

/* Whether bf16 GEMMs may run on AMX (TDPBF16PS) where the CPU and OS have it (default 1);
 * 0 makes them take the next path (VDPBF16PS, else widening), for tests and benchmarks.
 * Process-wide; returns the previous setting. */
MTE_API int mte_set_bf16_amx(int allowed);

/* The bf16 dot-product peak of one core in GFLOP/s (as mte_peak_gflops for float32): the
 * best rate of a register-only VDPBF16PS / BFDOT loop over about `seconds`; where the CPU
 * has no bf16 dot product, the float32 FMA peak (what the widening path runs on). */
MTE_API double mte_bf16_peak_gflops(double seconds);

#ifdef __cplusplus
}
#endif
#endif /* MTE_BF16_H */
