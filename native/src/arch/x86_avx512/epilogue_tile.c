/* epilogue_tile.c - the fused GEMM epilogue (bias, residual, ReLU/ReLU6/GELU) for avx512:
 * epilogue_body.h compiled with this folder's ISA flags (see mte_epilogue.h). */
#define MTE_EP_NAME mte__epilogue_tile_avx512
#include "../../epilogue_body.h"
