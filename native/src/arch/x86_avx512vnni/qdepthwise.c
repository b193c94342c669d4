/*
 * x86_avx512vnni/qdepthwise.c - one plane of the int8 depthwise 3x3 as a flat row
 * (mte_qdw_plane) on AVX-512 VNNI: each int16 pair multiply-add is one VPDPWSSD
 * (src/qdepthwise_avx512_body.h). Compiled with the AVX-512 flags plus -mavx512vnni.
 */
#include "../../mte_quant_internal.h"

#if defined(__x86_64__)
#define QDW_VNNI 1
#define QDW_PLANE qdw_plane_avx512vnni
#include "../../qdepthwise_avx512_body.h"

const mte_qdw_kernel mte_qdw_kernel_avx512vnni = {.isa = "avx512vnni",
                                                  .plane = qdw_plane_avx512vnni};
#endif
