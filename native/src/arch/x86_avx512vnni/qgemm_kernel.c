/*
 * x86_avx512vnni/qgemm_kernel.c - the int8 GEMM microkernel for AVX-512 VNNI (Cascade Lake,
 * Ice Lake and later, Zen 4/5): VPDPBUSD on x + 128 (unsigned) times w (signed), the
 * -(x_zp + 128) * sum_k w compensation folded into each channel (src/qgemm_avx512_body.h).
 * Compiled with the AVX-512 flags plus -mavx512vnni. The float families of this ISA's row are
 * the avx512 ones (cpu.c). The row's qgemm column starts at the AMX kernel (qgemm_amx.c,
 * where the CPU has AMX-INT8), whose x panels are this kernel's (the same packer).
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
    .isa = "avx512vnni", .path = "avx512vnni vpdpbusd", .mr = MR, .nr = NR, .x_offset = 128,
    .ukernel = qgemm_ukernel_avx512vnni,
    .ukernel_half = qgemm_ukernel_half_avx512vnni, .dot_peak = qgemm_peak_avx512vnni,
    .pack4 = qgemm_pack4_avx512vnni};

/* shorter reductions run faster on VPDPBUSD: k is padded to 64 for the tiles, and a short
 * k loop leaves the per-row requantization (the same in both) most of the time */
#ifndef MTE_QGEMM_AMX_MIN_K
#define MTE_QGEMM_AMX_MIN_K 64
#endif
MTE_HIDDEN void mte__qgemm_ukernel_amx(const mte_qtile *t);
MTE_HIDDEN double mte__qgemm_peak_amx(int64_t rounds);

const mte_qgemm_kernel mte_qgemm_kernel_amx = {
    .isa = "avx512vnni", .path = "amx_int8 tdpbsud", .needs = MTE_CPU_AMX_INT8,
    .fallback = &mte_qgemm_kernel_avx512vnni, .mr = 32, .nr = NR, .x_offset = 128,
    .w_rows = 1, .kg_align = 16, .min_k = MTE_QGEMM_AMX_MIN_K, .ukernel = mte__qgemm_ukernel_amx,
    .dot_peak = mte__qgemm_peak_amx, .pack4 = qgemm_pack4_avx512vnni};
#endif
