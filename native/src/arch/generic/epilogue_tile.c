/* epilogue_tile.c - the fused GEMM epilogue (bias, residual, activation) for generic:
 * epilogue_body.h compiled with this folder's ISA flags (see mte_epilogue.h). */
#define MTE_EP_ISA "generic"
#define MTE_EP_TABLE mte_epilogue_kernel_generic
#include "../../epilogue_body.h"
