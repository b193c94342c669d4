/*
 * x86_avx512/qgemm_kernel.c - the int8 GEMM microkernel for AVX-512BW without VNNI:
 * VPMADDUBSW + VPMADDWD with the sign trick (src/qgemm_avx512_body.h), x packed signed.
 */
#include "../../mte_quant_internal.h"

#if defined(__x86_64__)
#define QGEMM_UKERNEL qgemm_ukernel_avx512
#define QGEMM_UKERNEL_HALF qgemm_ukernel_half_avx512
#define QGEMM_PEAK qgemm_peak_avx512
#define QGEMM_PACK4 qgemm_pack4_avx512
#include "../../qgemm_avx512_body.h"

const mte_qgemm_kernel mte_qgemm_kernel_avx512 = {
    .isa = "avx512", .mr = MR, .nr = NR, .x_offset = 0, .ukernel = qgemm_ukernel_avx512,
    .ukernel_half = qgemm_ukernel_half_avx512,
    .dot_peak = qgemm_peak_avx512, .pack4 = qgemm_pack4_avx512};
#endif
