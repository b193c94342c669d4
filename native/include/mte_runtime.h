/*
 * mte_runtime.h - the public C API of the minitorch_edge runtime: load a .mte model file
 * (a Graph in a safetensors-compatible container, see native/runtime/README.md), validate
 * all of it, plan its memory, and describe its inputs and outputs.
 *
 *     mte_model *m;
 *     char err[512];
 *     int st = mte_model_load("net.mte", &m, err, sizeof err);
 *     if (st != MTE_OK) { fprintf(stderr, "%s: %s\n", mte_runtime_status_string(st), err); ... }
 *     for (int i = 0; i < mte_model_num_inputs(m); ++i)
 *       printf("%s %s ndim=%d\n", mte_model_input_name(m, i),
 *              mte_dtype_name(mte_model_input_dtype(m, i)), mte_model_input_ndim(m, i));
 *     printf("arena: %lld bytes\n", (long long)mte_model_arena_bytes(m));
 *     mte_model_free(m);
 *
 * Nothing in a file is trusted: every size, offset, index, shape, dtype, name and attribute
 * is checked before it is used, and memory is only allocated in proportion to the file's
 * size. A rejected file gives a status and a message naming the tensor, node or rule.
 * Accessors given an index out of range return NULL / 0 / -1 / MTE_DTYPE_INVALID.
 * A loaded model is immutable: its accessors may be called from several threads at once.
 */
#ifndef MTE_RUNTIME_H
#define MTE_RUNTIME_H

#include "mte.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes beyond mte_status (include/mte.h); mte_runtime_status_string knows all. */
#define MTE_EIO (-7)     /* the file cannot be opened or read */
#define MTE_EFORMAT (-8) /* the file is not a valid .mte model (the message says why) */

MTE_API const char *mte_runtime_status_string(int status);

/* The .mte format version this runtime reads ("minitorch_edge.format_version"). */
#define MTE_MODEL_FORMAT_VERSION 1
/* Limits of the loader (README.md); files beyond them are refused with MTE_EFORMAT. */
#define MTE_MODEL_MAX_HEADER_BYTES 100000000
#define MTE_MODEL_MAX_NDIM 64
#define MTE_MODEL_MAX_NODES 65536 /* nodes; also node outputs in total */
#define MTE_MODEL_MAX_VALUES (1 << 20)
#define MTE_MODEL_ARENA_ALIGN 64

typedef enum mte_dtype {
  MTE_DTYPE_INVALID = 0,
  MTE_DTYPE_FLOAT32, /* "float32", container code F32 */
  MTE_DTYPE_FLOAT64, /* "float64", F64 */
  MTE_DTYPE_FLOAT16, /* "float16", F16 */
  MTE_DTYPE_INT8,    /* "int8", I8 */
  MTE_DTYPE_INT16,   /* "int16", I16 */
  MTE_DTYPE_INT32,   /* "int32", I32 */
  MTE_DTYPE_INT64,   /* "int64", I64 */
  MTE_DTYPE_UINT8,   /* "uint8", U8 */
  MTE_DTYPE_BOOL     /* "bool", BOOL (one byte, 0 or 1) */
} mte_dtype;

MTE_API const char *mte_dtype_name(mte_dtype dtype); /* numpy's name, NULL if invalid */
MTE_API size_t mte_dtype_size(mte_dtype dtype);      /* bytes per element, 0 if invalid */

typedef struct mte_model mte_model;

/* Load a model from a file (read once, whole; its size is checked first) or from memory
 * (copied: `data` may be freed after the call). On success *out is the model (free it with
 * mte_model_free); on failure *out is NULL, the status is < 0 and err (if errlen > 0) holds
 * a NUL-terminated message. */
MTE_API int mte_model_load(const char *path, mte_model **out, char *err, size_t errlen);
MTE_API int mte_model_load_memory(const void *data, size_t size, mte_model **out, char *err,
                                  size_t errlen);
MTE_API void mte_model_free(mte_model *model); /* NULL is fine */

MTE_API const char *mte_model_name(const mte_model *model);
MTE_API int mte_model_num_nodes(const mte_model *model);
MTE_API int mte_model_num_values(const mte_model *model);
MTE_API int mte_model_num_constants(const mte_model *model);

/* Graph inputs and outputs, in the graph's order. The shape pointer stays valid until
 * mte_model_free; a 0-d tensor has ndim 0 (and a non-NULL shape pointer). */
MTE_API int mte_model_num_inputs(const mte_model *model);
MTE_API const char *mte_model_input_name(const mte_model *model, int i);
MTE_API int mte_model_input_ndim(const mte_model *model, int i);
MTE_API const int64_t *mte_model_input_shape(const mte_model *model, int i);
MTE_API mte_dtype mte_model_input_dtype(const mte_model *model, int i);
MTE_API int64_t mte_model_input_nbytes(const mte_model *model, int i);

MTE_API int mte_model_num_outputs(const mte_model *model);
MTE_API const char *mte_model_output_name(const mte_model *model, int i);
MTE_API int mte_model_output_ndim(const mte_model *model, int i);
MTE_API const int64_t *mte_model_output_shape(const mte_model *model, int i);
MTE_API mte_dtype mte_model_output_dtype(const mte_model *model, int i);
MTE_API int64_t mte_model_output_nbytes(const mte_model *model, int i);

/* The memory plan (the algorithm of minitorch_edge/graph/planner.py): one arena of
 * mte_model_arena_bytes for every value a node writes. naive = one buffer per value;
 * lower bound = the most bytes alive at one step. */
MTE_API int64_t mte_model_arena_bytes(const mte_model *model);
MTE_API int64_t mte_model_naive_bytes(const mte_model *model);
MTE_API int64_t mte_model_lower_bound_bytes(const mte_model *model);

/* Values by name: index (0 .. num_values) or -1; its byte offset in the arena, or -1 for
 * a value outside it (graph input, constant, a view of either, or a value nothing
 * defines). */
MTE_API int mte_model_find_value(const mte_model *model, const char *name);
MTE_API const char *mte_model_value_name(const mte_model *model, int value);
MTE_API int64_t mte_model_value_offset(const mte_model *model, int value);

/* ---- running a model -------------------------------------------------------------------
 *
 * Loading also prepares every node (executor.c): each op re-infers its outputs' shapes and
 * dtypes from its inputs and attributes and checks them against the file's (MTE_EFORMAT on
 * a mismatch), checks the attributes it reads, chooses its kernel for these shapes and
 * prepares its constant weights once (packed GEMM panels, Winograd's U, int8 requantisation
 * multipliers). A node whose op or variant has no C kernel fails the load with
 * MTE_EUNSUPPORTED naming the node. The arena of the memory plan is allocated then too, so
 * a run allocates nothing but what a kernel takes from libmte's workspace pool.
 *
 * mte_model_run: inputs[i] points to mte_model_input_nbytes(model, i) bytes holding input i
 * (C-contiguous, its dtype and shape); outputs[i] to mte_model_output_nbytes(model, i)
 * bytes, overwritten with output i. Buffers may be anywhere (no alignment needed), but an
 * output must not overlap an input. Returns MTE_OK, or MTE_EINVAL for NULL pointers and
 * another status if a kernel fails (with err filled). The arena belongs to the model: run
 * one model from one thread at a time (load it twice for two threads). Kernels use libmte's
 * thread count (mte_set_num_threads in mte.h; 1 to use one core). */
MTE_API int mte_model_run(mte_model *model, const void *const *inputs, void *const *outputs,
                          char *err, size_t errlen);

/* Bytes the model holds beyond its file: prepared weights and per-node state. */
MTE_API int64_t mte_model_prepared_bytes(const mte_model *model);

/* The kernel each node runs, for a listing ("Conv: winograd4", "mte.QLinearConv: int8
 * depthwise3x3", "Relu: elementwise"); NULL if node is out of range. */
MTE_API const char *mte_model_node_name(const mte_model *model, int node);
MTE_API const char *mte_model_node_op(const mte_model *model, int node);
MTE_API const char *mte_model_node_kernel(const mte_model *model, int node);

/* A node's inputs and outputs as value indices (-1: a left-out optional input, or j out of
 * range; counts are -1 for a bad node), and any value's dtype and shape (for listings). */
MTE_API int mte_model_node_num_inputs(const mte_model *model, int node);
MTE_API int mte_model_node_input(const mte_model *model, int node, int j);
MTE_API int mte_model_node_num_outputs(const mte_model *model, int node);
MTE_API int mte_model_node_output(const mte_model *model, int node, int j);
MTE_API int mte_model_value_ndim(const mte_model *model, int value);
MTE_API const int64_t *mte_model_value_shape(const mte_model *model, int value);
MTE_API mte_dtype mte_model_value_dtype(const mte_model *model, int value);

/* Per-node timing, opt in. mte_model_set_profiling(m, 1) turns a monotonic clock on around
 * every node (0 turns it off; off, the default, costs one branch per node). While it is on,
 * each mte_model_run records node k's start (seconds since that run began) and duration:
 * mte_model_node_last reads them for the last run (MTE_OK, or < 0: a bad k, a NULL
 * argument, profiling off (MTE_EINVAL) or no run since it was turned on (MTE_EINVAL)).
 * Every run also adds each node's time to its total, read by mte_model_node_seconds (0 before
 * profiling was first turned on); mte_model_profile(m, on) is set_profiling that also resets the totals. */
MTE_API int mte_model_set_profiling(mte_model *model, int on);
MTE_API int mte_model_node_last(const mte_model *model, int node, double *start_seconds,
                                double *seconds);
MTE_API int mte_model_profile(mte_model *model, int on);
MTE_API double mte_model_node_seconds(const mte_model *model, int node);

/* The ops this runtime knows (sorted by name), e.g. "Conv", "mte.QLinearConv"; every one of
 * them has a C kernel. */
MTE_API int mte_runtime_num_ops(void);
MTE_API const char *mte_runtime_op_name(int i); /* NULL if i is out of range */

#ifdef __cplusplus
}
#endif

#endif
