/* rowwise.c - softmax, LayerNorm and GELU rows (forward and backward) for avx512:
 * rowwise_body.h compiled with this folder's ISA flags, on vectors of 16 floats (see
 * mte_transformer_internal.h). */
#define MTE_ROWWISE_ISA "avx512"
#define MTE_ROWWISE_TABLE mte_rowwise_kernel_avx512
#define MTE_VL 16
#include "../../rowwise_body.h"
