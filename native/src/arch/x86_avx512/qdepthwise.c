/*
 * x86_avx512/qdepthwise.c - one plane of the int8 depthwise 3x3 as a flat row
 * (mte_qdw_plane) on AVX-512BW: VPMADDWD + VPADDD (src/qdepthwise_avx512_body.h).
 */
#include "../../mte_quant_internal.h"

#if defined(__x86_64__)
#define QDW_PLANE qdw_plane_avx512
#include "../../qdepthwise_avx512_body.h"

const mte_qdw_kernel mte_qdw_kernel_avx512 = {.isa = "avx512", .plane = qdw_plane_avx512};
#endif
