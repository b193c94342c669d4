/* epilogue_tile.c - the fused GEMM epilogue (bias, residual, activation) for avx2:
 * epilogue_body.h compiled with this folder's ISA flags (see mte_epilogue.h). */
#define MTE_EP_ISA "avx2"
#define MTE_EP_TABLE mte_epilogue_kernel_avx2
#include "../../epilogue_body.h"
