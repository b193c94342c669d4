/*
 * ops_stubs.c - TEMPORARY: the prepare functions not written yet, each refusing its node
 * with MTE_EUNSUPPORTED. Each group moves to its ops_*.c file; this file then goes.
 */
#include "kernels.h"

#define STUB(fn) \
  int fn(rt_prep *p) { return rt_node_fail(p, MTE_EUNSUPPORTED, "no C kernel yet"); }

/* ---- ops_nn.c ---------------------------------------------------------- */





/* ---- ops_quant.c ---------------------------------------------------------- */





/* ---- ops_tensor.c ---------------------------------------------------------- */


STUB(rt_prepare_Abs)
STUB(rt_prepare_Add)
STUB(rt_prepare_And)
STUB(rt_prepare_Cast)
STUB(rt_prepare_Ceil)
STUB(rt_prepare_Clip)
STUB(rt_prepare_Concat)
STUB(rt_prepare_Cos)
STUB(rt_prepare_Div)
STUB(rt_prepare_Elu)
STUB(rt_prepare_Equal)
STUB(rt_prepare_Erf)
STUB(rt_prepare_Exp)
STUB(rt_prepare_Expand)
STUB(rt_prepare_Floor)
STUB(rt_prepare_Gather)
STUB(rt_prepare_Greater)
STUB(rt_prepare_GreaterOrEqual)
STUB(rt_prepare_HardSigmoid)
STUB(rt_prepare_HardSwish)
STUB(rt_prepare_LeakyRelu)
STUB(rt_prepare_Less)
STUB(rt_prepare_LessOrEqual)
STUB(rt_prepare_Log)
STUB(rt_prepare_LogSoftmax)
STUB(rt_prepare_Max)
STUB(rt_prepare_Min)
STUB(rt_prepare_Mul)
STUB(rt_prepare_Neg)
STUB(rt_prepare_Not)
STUB(rt_prepare_Or)
STUB(rt_prepare_Pow)
STUB(rt_prepare_Reciprocal)
STUB(rt_prepare_ReduceMax)
STUB(rt_prepare_ReduceMean)
STUB(rt_prepare_ReduceSum)
STUB(rt_prepare_Sigmoid)
STUB(rt_prepare_Sin)
STUB(rt_prepare_Slice)
STUB(rt_prepare_Softmax)
STUB(rt_prepare_Softplus)
STUB(rt_prepare_Split)
STUB(rt_prepare_Sqrt)
STUB(rt_prepare_Sub)
STUB(rt_prepare_Tanh)
STUB(rt_prepare_Transpose)
STUB(rt_prepare_Where)
STUB(rt_prepare_Xor)
STUB(rt_prepare_mte_Gelu)
STUB(rt_prepare_mte_Silu)



