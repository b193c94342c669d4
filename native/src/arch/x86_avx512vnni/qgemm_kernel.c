/*
 * x86_avx512vnni/qgemm_kernel.c - the int8 GEMM microkernel for AVX-512 VNNI (Cascade Lake,
 * Ice Lake and later, Zen 4/5): VPDPBUSD on x + 128 (unsigned) times w (signed), the
 * -(x_zp + 128) * sum_k w compensation folded into each channel (src/qgemm_avx512_body.h).
 * Compiled with the AVX-512 flags plus -mavx512vnni. The float families of this ISA's row are
 * the avx512 ones (cpu.c).
 */
#include "../../mte_quant_internal.h"

#if defined(__x86_64__)
#define MTE_QGEMM_VNNI 1
#define QGEMM_UKERNEL qgemm_ukernel_avx512vnni
#define QGEMM_UKERNEL_HALF qgemm_ukernel_half_avx512vnni
#define QGEMM_PEAK qgemm_peak_avx512vnni
#define QGEMM_PACK4 qgemm_pack4_avx512vnni
#include "../../qgemm_avx512_body.h"

const mte_qgemm_kernel mte_qgemm_kernel_avx512vnni = {
    .isa = "avx512vnni", .mr = MR, .nr = NR, .x_offset = 128,
    .ukernel = qgemm_ukernel_avx512vnni,
    .ukernel_half = qgemm_ukernel_half_avx512vnni, .dot_peak = qgemm_peak_avx512vnni,
    .pack4 = qgemm_pack4_avx512vnni};
#endif
