/* rowwise.c - softmax, LayerNorm and GELU rows (forward and backward) for generic:
 * rowwise_body.h compiled with this folder's ISA flags, on vectors of 4 floats (see
 * mte_transformer_internal.h). */
#define MTE_ROWWISE_ISA "generic"
#define MTE_ROWWISE_TABLE mte_rowwise_kernel_generic
#define MTE_VL 4
#include "../../rowwise_body.h"
