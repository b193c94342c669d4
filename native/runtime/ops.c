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

#include "model_internal.h"

/* name, elementwise, alias */
static const rt_opdef OPS[] = {
    {"Abs", 1, 0},
    {"Add", 1, 0},
    {"And", 0, 0},
    {"AveragePool", 0, 0},
    {"BatchNormalization", 1, 0},
    {"Cast", 0, 0},
    {"Ceil", 1, 0},
    {"Clip", 1, 0},
    {"Concat", 0, 0},
    {"Conv", 0, 0},
    {"Cos", 1, 0},
    {"DequantizeLinear", 0, 0},
    {"Div", 1, 0},
    {"Dropout", 0, 1},
    {"Elu", 1, 0},
    {"Equal", 0, 0},
    {"Erf", 1, 0},
    {"Exp", 1, 0},
    {"Expand", 0, 0},
    {"Flatten", 0, 1},
    {"Floor", 1, 0},
    {"Gather", 0, 0},
    {"Gemm", 0, 0},
    {"GlobalAveragePool", 0, 0},
    {"Greater", 0, 0},
    {"GreaterOrEqual", 0, 0},
    {"HardSigmoid", 1, 0},
    {"HardSwish", 1, 0},
    {"Identity", 0, 1},
    {"LayerNormalization", 0, 0},
    {"LeakyRelu", 1, 0},
    {"Less", 0, 0},
    {"LessOrEqual", 0, 0},
    {"Log", 1, 0},
    {"LogSoftmax", 0, 0},
    {"MatMul", 0, 0},
    {"Max", 1, 0},
    {"MaxPool", 0, 0},
    {"Min", 1, 0},
    {"Mul", 1, 0},
    {"Neg", 1, 0},
    {"Not", 0, 0},
    {"Or", 0, 0},
    {"Pad", 0, 0},
    {"Pow", 1, 0},
    {"QuantizeLinear", 0, 0},
    {"Reciprocal", 1, 0},
    {"ReduceMax", 0, 0},
    {"ReduceMean", 0, 0},
    {"ReduceSum", 0, 0},
    {"Relu", 1, 0},
    {"Reshape", 0, 1},
    {"Sigmoid", 1, 0},
    {"Sin", 1, 0},
    {"Slice", 0, 0},
    {"Softmax", 0, 0},
    {"Softplus", 1, 0},
    {"Split", 0, 0},
    {"Sqrt", 1, 0},
    {"Squeeze", 0, 1},
    {"Sub", 1, 0},
    {"Tanh", 1, 0},
    {"Transpose", 0, 0},
    {"Unsqueeze", 0, 1},
    {"Where", 0, 0},
    {"Xor", 0, 0},
    {"mte.Attention", 0, 0},
    {"mte.ConvAct", 0, 0},
    {"mte.FakeQuantize", 1, 0},
    {"mte.Gelu", 1, 0},
    {"mte.GemmAct", 0, 0},
    {"mte.QLinearAdd", 0, 0},
    {"mte.QLinearAveragePool", 0, 0},
    {"mte.QLinearConv", 0, 0},
    {"mte.QLinearGemm", 0, 0},
    {"mte.QLinearGlobalAveragePool", 0, 0},
    {"mte.Requantize", 1, 0},
    {"mte.Silu", 1, 0},
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
