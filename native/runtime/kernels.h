/*
 * kernels.h - how an op's C kernel plugs into the executor (executor.c).
 *
 * Every op of the table (ops.c) has one prepare function, called once per node at load time:
 *
 *     int prepare(rt_prep *p);
 *
 * It reads the node's inputs (their dtypes and shapes; the data of constant inputs, e.g.
 * weights, scales, the shape of a Reshape) and attributes, checks everything it will rely
 * on, infers its outputs' shapes and dtypes and compares them with the file's
 * (rt_expect_output), chooses a kernel and fills p->step: the run function, its state
 * (allocated from p->model->pool, or malloc'd with a release function) and a short kernel
 * name for listings. A failure is MTE_EFORMAT (the node is inconsistent: its message names
 * the node and the rule) or MTE_EUNSUPPORTED (valid, but no C kernel for this variant).
 *
 *     int run(const rt_step *step, void *const *ptr);
 *
 * runs the node: ptr[v] is the memory of value v for this run (graph input, constant, arena
 * slot or view), already resolved. A run function trusts what prepare checked (shapes,
 * dtypes, attributes, sizes); it returns MTE_OK or a libmte status.
 */
#ifndef MTE_RUNTIME_KERNELS_H
#define MTE_RUNTIME_KERNELS_H

#include "model_internal.h"

typedef struct rt_step rt_step;
typedef int (*rt_run_fn)(const rt_step *step, void *const *ptr);

struct rt_step {
  const mte_model *model;
  const rt_node *node;
  rt_run_fn run;
  void *state;                  /* the op's prepared state, or NULL */
  void (*release)(void *state); /* frees state at mte_model_free (NULL: pool memory) */
  const char *kernel;           /* "winograd4", "gemm", "elementwise", ... (static string) */
  int64_t prepared_bytes;       /* bytes of state beyond the file (packed weights ...) */
};

typedef struct rt_prep {
  mte_model *model;
  const rt_node *node;
  rt_step *step; /* to fill */
  rt_err *err;
} rt_prep;

/* ---- reading the node, in prepare ----------------------------------------------------- */

/* The node's input i, or NULL when it is left out ("") or i >= num_inputs. */
const rt_value *rt_input(const rt_prep *p, int i);
/* Output i (i < num_outputs). */
const rt_value *rt_output(const rt_prep *p, int i);
/* The data of input i when it is a constant (NULL otherwise). */
const void *rt_const_data(const rt_prep *p, int i);

/* Inputs between min and max (counting left-out ones), exactly `outputs` outputs, and the
 * non-optional ones (the first `required`) present; MTE_EFORMAT naming the node otherwise. */
int rt_expect_arity(const rt_prep *p, int required, int max_inputs, int outputs);
/* Input i has this dtype (MTE_EFORMAT otherwise). */
int rt_expect_dtype(const rt_prep *p, int i, mte_dtype dtype);
/* Input i is a constant (MTE_EUNSUPPORTED otherwise: "input i must be a constant ..."). */
int rt_expect_const(const rt_prep *p, int i);
/* Input i is a float32 vector [n] (`what` names it in the message); absent is fine when
 * optional. */
int rt_expect_vector(const rt_prep *p, int i, int64_t n, int optional, const char *what);
/* Output i was declared with this dtype and shape; MTE_EFORMAT naming both otherwise. */
int rt_expect_output(const rt_prep *p, int i, mte_dtype dtype, int ndim, const int64_t *shape);
/* Output i is like input j (same dtype and shape). */
int rt_expect_output_like(const rt_prep *p, int i, int j);

/* Attributes, with a default when absent; MTE_EFORMAT when present with the wrong type
 * (rt_attr_ints also when the length is not `n`, n < 0 meaning any length up to `cap`). */
int rt_attr_int(const rt_prep *p, const char *name, int64_t dflt, int64_t *out);
int rt_attr_float(const rt_prep *p, const char *name, double dflt, double *out);
int rt_attr_string(const rt_prep *p, const char *name, const char *dflt, const char **out);
/* The list (or the default list `dflt` of length n when absent); *len gets its length. */
int rt_attr_ints(const rt_prep *p, const char *name, int64_t n, const int64_t *dflt,
                 const int64_t **out, int64_t *len);

/* A failure naming the node: "node 'conv3' (Conv): <message>". */
int rt_node_fail(const rt_prep *p, int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Memory for the step's state, from the model's pool (freed with the model), zeroed;
 * counted in prepared_bytes. NULL (and the message set) when out of memory. */
void *rt_state_alloc(const rt_prep *p, size_t bytes);
/* 64-byte aligned, zeroed, from the pool too (for packed weights). */
void *rt_state_alloc_aligned(const rt_prep *p, size_t bytes);

/* A Conv node's ONNX geometry attributes (kernel_shape, strides, pads [t, l, b, r],
 * dilations, group) checked against X and W, as a libmte descriptor with its output size
 * (ops_gemm.c; mte.QLinearConv uses it too). */
struct mte_conv2d_desc;
int rt_conv_desc(const rt_prep *p, const rt_value *x, const rt_value *w,
                 struct mte_conv2d_desc *d);

/* ---- the prepare functions of each op (defined in the ops_*.c files) ------------------ */

/* rt_prepare_fn is declared in model_internal.h: int (*)(rt_prep *p). */

/* ops_gemm.c (Conv, mte.ConvAct, Gemm, mte.GemmAct, MatMul) and ops_nn.c (the rest) */
int rt_prepare_AveragePool(rt_prep *p);
int rt_prepare_BatchNormalization(rt_prep *p);
int rt_prepare_Conv(rt_prep *p);
int rt_prepare_Gemm(rt_prep *p);
int rt_prepare_GlobalAveragePool(rt_prep *p);
int rt_prepare_LayerNormalization(rt_prep *p);
int rt_prepare_MatMul(rt_prep *p);
int rt_prepare_MaxPool(rt_prep *p);
int rt_prepare_Pad(rt_prep *p);
int rt_prepare_mte_Attention(rt_prep *p);
int rt_prepare_mte_ConvAct(rt_prep *p);
int rt_prepare_ConvTranspose(rt_prep *p);
int rt_prepare_mte_GemmAct(rt_prep *p);

/* ops_quant.c (conversions) and ops_qlayers.c (the int8 layers) */
int rt_prepare_DequantizeLinear(rt_prep *p);
int rt_prepare_QuantizeLinear(rt_prep *p);
int rt_prepare_mte_FakeQuantize(rt_prep *p);
int rt_prepare_mte_QLinearAdd(rt_prep *p);
int rt_prepare_mte_QLinearAveragePool(rt_prep *p);
int rt_prepare_mte_QLinearConv(rt_prep *p);
int rt_prepare_mte_QLinearGemm(rt_prep *p);
int rt_prepare_mte_QLinearGlobalAveragePool(rt_prep *p);
int rt_prepare_mte_Requantize(rt_prep *p);

/* ops_tensor.c (views, movement), ops_elementwise.c, ops_cast.c, ops_reduce.c */
int rt_prepare_Abs(rt_prep *p);
int rt_prepare_Add(rt_prep *p);
int rt_prepare_And(rt_prep *p);
int rt_prepare_Cast(rt_prep *p);
int rt_prepare_Ceil(rt_prep *p);
int rt_prepare_Clip(rt_prep *p);
int rt_prepare_Concat(rt_prep *p);
int rt_prepare_Cos(rt_prep *p);
int rt_prepare_Div(rt_prep *p);
int rt_prepare_Dropout(rt_prep *p);
int rt_prepare_Elu(rt_prep *p);
int rt_prepare_Equal(rt_prep *p);
int rt_prepare_Erf(rt_prep *p);
int rt_prepare_Exp(rt_prep *p);
int rt_prepare_Expand(rt_prep *p);
int rt_prepare_Flatten(rt_prep *p);
int rt_prepare_Floor(rt_prep *p);
int rt_prepare_Gather(rt_prep *p);
int rt_prepare_Greater(rt_prep *p);
int rt_prepare_GreaterOrEqual(rt_prep *p);
int rt_prepare_HardSigmoid(rt_prep *p);
int rt_prepare_HardSwish(rt_prep *p);
int rt_prepare_Identity(rt_prep *p);
int rt_prepare_LeakyRelu(rt_prep *p);
int rt_prepare_Less(rt_prep *p);
int rt_prepare_LessOrEqual(rt_prep *p);
int rt_prepare_Log(rt_prep *p);
int rt_prepare_LogSoftmax(rt_prep *p);
int rt_prepare_Max(rt_prep *p);
int rt_prepare_Min(rt_prep *p);
int rt_prepare_Mul(rt_prep *p);
int rt_prepare_Neg(rt_prep *p);
int rt_prepare_Not(rt_prep *p);
int rt_prepare_Or(rt_prep *p);
int rt_prepare_Pow(rt_prep *p);
int rt_prepare_Reciprocal(rt_prep *p);
int rt_prepare_ReduceMax(rt_prep *p);
int rt_prepare_ReduceMean(rt_prep *p);
int rt_prepare_ReduceSum(rt_prep *p);
int rt_prepare_Relu(rt_prep *p);
int rt_prepare_Reshape(rt_prep *p);
int rt_prepare_Sigmoid(rt_prep *p);
int rt_prepare_Sin(rt_prep *p);
int rt_prepare_Slice(rt_prep *p);
int rt_prepare_Softmax(rt_prep *p);
int rt_prepare_Softplus(rt_prep *p);
int rt_prepare_Split(rt_prep *p);
int rt_prepare_Sqrt(rt_prep *p);
int rt_prepare_Squeeze(rt_prep *p);
int rt_prepare_Sub(rt_prep *p);
int rt_prepare_Tanh(rt_prep *p);
int rt_prepare_Transpose(rt_prep *p);
int rt_prepare_Unsqueeze(rt_prep *p);
int rt_prepare_Where(rt_prep *p);
int rt_prepare_Xor(rt_prep *p);
int rt_prepare_mte_Gelu(rt_prep *p);
int rt_prepare_mte_Silu(rt_prep *p);

#endif
