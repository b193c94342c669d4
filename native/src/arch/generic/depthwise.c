/* generic/depthwise.c - the general K x K depthwise plane kernel, portable:
 * depthwise_body.h on vectors of 4 floats (SSE2 on x86-64, NEON on aarch64). */
#define MTE_DW_ISA "generic"
#define MTE_DW_TABLE mte_dw_kernel_generic
#define MTE_VL 4
#include "../../depthwise_body.h"
