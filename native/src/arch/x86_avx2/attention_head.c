/* attention_head.c - one (batch, head) pair of scaled dot-product attention, forward and
 * backward, for avx2: attention_body.h compiled with this folder's ISA flags, on vectors of
 * 8 floats (see mte_transformer_internal.h). */
#define MTE_ATT_ISA "avx2"
#define MTE_ATT_TABLE mte_attention_kernel_avx2
#define MTE_VL 8
#include "../../attention_body.h"
