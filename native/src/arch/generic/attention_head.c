/* attention_head.c - one (batch, head) pair of scaled dot-product attention, forward and
 * backward, for generic: attention_body.h compiled with this folder's ISA flags, on vectors of
 * 4 floats (see mte_transformer_internal.h). */
#define MTE_ATT_ISA "generic"
#define MTE_ATT_TABLE mte_attention_kernel_generic
#define MTE_VL 4
#include "../../attention_body.h"
