/* attention_head.c - one (batch, head) pair of scaled dot-product attention, forward and
 * backward, for avx512: attention_body.h compiled with this folder's ISA flags, on vectors of
 * 16 floats (see mte_transformer_internal.h). */
#define MTE_ATT_ISA "avx512"
#define MTE_ATT_TABLE mte_attention_kernel_avx512
#define MTE_VL 16
#include "../../attention_body.h"
