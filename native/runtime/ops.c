/*
 * ops.c - the runtime's op table: every op a graph may hold (minitorch_edge/graph/opset_nn.py,
 * opset_tensor.py, opset_quant.py), sorted by name for binary search, with the two flags the
 * memory planner reads (planner.py): elementwise (in-place reuse) and alias (a view of input 0).
 *
 * Generated from Python's table (opset.names() and each OpDef's flags); keep it in sync
 * when an op is added there (tests/test_runtime_loader_c.py compares the two).
 */
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

/* name, elementwise, alias, prepare (kernels.h; defined in ops_gemm.c, ops_nn.c, ops_quant.c, ops_qlayers.c,
 * ops_tensor.c, ops_elementwise.c, ops_cast.c, ops_reduce.c) */
static const rt_opdef OPS[] = {
    {"Abs", 1, 0, rt_prepare_Abs},
    {"Add", 1, 0, rt_prepare_Add},
    {"And", 0, 0, rt_prepare_And},
    {"AveragePool", 0, 0, rt_prepare_AveragePool},
    {"BatchNormalization", 1, 0, rt_prepare_BatchNormalization},
    {"Cast", 0, 0, rt_prepare_Cast},
    {"Ceil", 1, 0, rt_prepare_Ceil},
    {"Clip", 1, 0, rt_prepare_Clip},
    {"Concat", 0, 0, rt_prepare_Concat},
    {"Conv", 0, 0, rt_prepare_Conv},
    {"ConvTranspose", 0, 0, rt_prepare_ConvTranspose},
    {"Cos", 1, 0, rt_prepare_Cos},
    {"DequantizeLinear", 0, 0, rt_prepare_DequantizeLinear},
    {"Div", 1, 0, rt_prepare_Div},
    {"Dropout", 0, 1, rt_prepare_Dropout},
    {"Elu", 1, 0, rt_prepare_Elu},
    {"Equal", 0, 0, rt_prepare_Equal},
    {"Erf", 1, 0, rt_prepare_Erf},
    {"Exp", 1, 0, rt_prepare_Exp},
    {"Expand", 0, 0, rt_prepare_Expand},
    {"Flatten", 0, 1, rt_prepare_Flatten},
    {"Floor", 1, 0, rt_prepare_Floor},
    {"Gather", 0, 0, rt_prepare_Gather},
    {"Gemm", 0, 0, rt_prepare_Gemm},
    {"GlobalAveragePool", 0, 0, rt_prepare_GlobalAveragePool},
    {"Greater", 0, 0, rt_prepare_Greater},
    {"GreaterOrEqual", 0, 0, rt_prepare_GreaterOrEqual},
    {"HardSigmoid", 1, 0, rt_prepare_HardSigmoid},
    {"HardSwish", 1, 0, rt_prepare_HardSwish},
    {"Identity", 0, 1, rt_prepare_Identity},
    {"LayerNormalization", 0, 0, rt_prepare_LayerNormalization},
    {"LeakyRelu", 1, 0, rt_prepare_LeakyRelu},
    {"Less", 0, 0, rt_prepare_Less},
    {"LessOrEqual", 0, 0, rt_prepare_LessOrEqual},
    {"Log", 1, 0, rt_prepare_Log},
    {"LogSoftmax", 0, 0, rt_prepare_LogSoftmax},
    {"MatMul", 0, 0, rt_prepare_MatMul},
    {"Max", 1, 0, rt_prepare_Max},
    {"MaxPool", 0, 0, rt_prepare_MaxPool},
    {"Min", 1, 0, rt_prepare_Min},
    {"Mul", 1, 0, rt_prepare_Mul},
    {"Neg", 1, 0, rt_prepare_Neg},
    {"Not", 0, 0, rt_prepare_Not},
    {"Or", 0, 0, rt_prepare_Or},
    {"Pad", 0, 0, rt_prepare_Pad},
    {"Pow", 1, 0, rt_prepare_Pow},
    {"QuantizeLinear", 0, 0, rt_prepare_QuantizeLinear},
    {"Reciprocal", 1, 0, rt_prepare_Reciprocal},
    {"ReduceMax", 0, 0, rt_prepare_ReduceMax},
    {"ReduceMean", 0, 0, rt_prepare_ReduceMean},
    {"ReduceSum", 0, 0, rt_prepare_ReduceSum},
    {"Relu", 1, 0, rt_prepare_Relu},
    {"Reshape", 0, 1, rt_prepare_Reshape},
    {"Sigmoid", 1, 0, rt_prepare_Sigmoid},
    {"Sin", 1, 0, rt_prepare_Sin},
    {"Slice", 0, 0, rt_prepare_Slice},
    {"Softmax", 0, 0, rt_prepare_Softmax},
    {"Softplus", 1, 0, rt_prepare_Softplus},
    {"Split", 0, 0, rt_prepare_Split},
    {"Sqrt", 1, 0, rt_prepare_Sqrt},
    {"Squeeze", 0, 1, rt_prepare_Squeeze},
    {"Sub", 1, 0, rt_prepare_Sub},
    {"Tanh", 1, 0, rt_prepare_Tanh},
    {"Transpose", 0, 0, rt_prepare_Transpose},
    {"Unsqueeze", 0, 1, rt_prepare_Unsqueeze},
    {"Where", 0, 0, rt_prepare_Where},
    {"Xor", 0, 0, rt_prepare_Xor},
    {"mte.Attention", 0, 0, rt_prepare_mte_Attention},
    {"mte.ConvAct", 0, 0, rt_prepare_mte_ConvAct},
    {"mte.FakeQuantize", 1, 0, rt_prepare_mte_FakeQuantize},
    {"mte.Gelu", 1, 0, rt_prepare_mte_Gelu},
    {"mte.GemmAct", 0, 0, rt_prepare_mte_GemmAct},
    {"mte.QLinearAdd", 0, 0, rt_prepare_mte_QLinearAdd},
    {"mte.QLinearAveragePool", 0, 0, rt_prepare_mte_QLinearAveragePool},
    {"mte.QLinearConv", 0, 0, rt_prepare_mte_QLinearConv},
    {"mte.QLinearGemm", 0, 0, rt_prepare_mte_QLinearGemm},
    {"mte.QLinearGlobalAveragePool", 0, 0, rt_prepare_mte_QLinearGlobalAveragePool},
    {"mte.Requantize", 1, 0, rt_prepare_mte_Requantize},
    {"mte.Silu", 1, 0, rt_prepare_mte_Silu},
};

#define NUM_OPS ((int)(sizeof OPS / sizeof OPS[0]))

static int by_name(const void *key, const void *entry) {
  return strcmp((const char *)key, ((const rt_opdef *)entry)->name);
}

const rt_opdef *rt_op_find(const char *name) {
  return bsearch(name, OPS, (size_t)NUM_OPS, sizeof OPS[0], by_name);
}

int rt_op_count(void) { return NUM_OPS; }

const rt_opdef *rt_op_at(int i) { return i >= 0 && i < NUM_OPS ? &OPS[i] : NULL; }
