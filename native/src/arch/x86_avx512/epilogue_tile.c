/* epilogue_tile.c - the fused GEMM epilogue (bias, residual, activation) for avx512:
 * epilogue_body.h compiled with this folder's ISA flags (see mte_epilogue.h). */
#define MTE_EP_ISA "avx512"
#define MTE_EP_TABLE mte_epilogue_kernel_avx512
#include "../../epilogue_body.h"
