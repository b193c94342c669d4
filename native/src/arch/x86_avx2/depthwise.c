/* x86_avx2/depthwise.c - the general K x K depthwise plane kernel for AVX2 + FMA:
 * depthwise_body.h on vectors of 8 floats. */
#define MTE_DW_ISA "avx2"
#define MTE_DW_TABLE mte_dw_kernel_avx2
#define MTE_VL 8
#include "../../depthwise_body.h"
