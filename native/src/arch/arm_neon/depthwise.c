/* arm_neon/depthwise.c - the general K x K depthwise plane kernel for NEON (aarch64):
 * depthwise_body.h on vectors of 4 floats (float32x4_t). */
#if defined(__aarch64__)
#define MTE_DW_ISA "neon"
#define MTE_DW_TABLE mte_dw_kernel_neon
#define MTE_VL 4
#include "../../depthwise_body.h"
#endif
