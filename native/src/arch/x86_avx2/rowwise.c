/* rowwise.c - softmax, LayerNorm and GELU rows (forward and backward) for avx2:
 * rowwise_body.h compiled with this folder's ISA flags, on vectors of 8 floats (see
 * mte_transformer_internal.h). */
#define MTE_ROWWISE_ISA "avx2"
#define MTE_ROWWISE_TABLE mte_rowwise_kernel_avx2
#define MTE_VL 8
#include "../../rowwise_body.h"
