/*
 * model_internal.h - the loaded model as the runtime holds it, shared by the loader stages
 * (container.c: the safetensors container; graph.c: the graph document and its rules;
 * plan.c: the memory plan; model.c: the public API) and the executor (executor.c, kernels.h).
 *
 * Everything is resolved to indices once, at load time: a node holds its op's table entry,
 * its input and output value indices (-1 for a left-out optional input) and its typed
 * attributes; a value holds its dtype, shape, byte size, and either constant data (a pointer
 * into the loaded file, or an aligned copy) or an arena offset from the plan. All names and
 * strings point into the two JSON documents, which live as long as the model.
 */
#ifndef MTE_RUNTIME_MODEL_INTERNAL_H
#define MTE_RUNTIME_MODEL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "json.h"
#include "mte_runtime.h"

/* ---- errors: a status and a message in the caller's buffer ---------------------------- */

typedef struct rt_err {
  char *buf;
  size_t len;
} rt_err;

/* Write the message (first error wins) and return status. */
int rt_fail(rt_err *e, int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ---- the op table (ops.c) ------------------------------------------------------------- */

struct rt_prep;
typedef int (*rt_prepare_fn)(struct rt_prep *p); /* kernels.h */

typedef struct rt_opdef {
  const char *name;
  unsigned elementwise : 1; /* output may take over a dying input's memory (in place) */
  unsigned alias : 1;       /* output 0 is a view of input 0 */
  rt_prepare_fn prepare;    /* checks a node of this op and chooses its kernel */
} rt_opdef;

const rt_opdef *rt_op_find(const char *name); /* NULL: unknown op */
int rt_op_count(void);
const rt_opdef *rt_op_at(int i);

/* ---- dtypes ----------------------------------------------------------------------------- */

mte_dtype rt_dtype_from_code(const char *code);  /* "F32" -> FLOAT32; INVALID if unknown */
mte_dtype rt_dtype_from_name(const char *name);  /* "float32" -> FLOAT32 */
const char *rt_dtype_code(mte_dtype dtype);

/* ---- a string -> index map (open addressing) ------------------------------------------ */

typedef struct rt_map {
  const char **keys;
  int32_t *vals;
  size_t cap; /* a power of two, > 2 * entries */
} rt_map;

int rt_map_init(rt_map *m, mte_pool *pool, size_t n); /* room for n entries */
int32_t rt_map_get(const rt_map *m, const char *key);  /* -1 if absent */
/* Insert; returns the index already there (not replacing it), or -1 if inserted. */
int32_t rt_map_put(rt_map *m, const char *key, int32_t val);

/* ---- the model ---------------------------------------------------------------------------- */

typedef enum rt_value_kind {
  RT_VALUE_UNUSED = 0, /* listed in "values" but defined by nothing */
  RT_VALUE_INPUT,      /* a graph input: the caller's memory */
  RT_VALUE_CONSTANT,   /* data in the file (or an aligned copy) */
  RT_VALUE_NODE,       /* written by a node: lives in the arena */
  RT_VALUE_VIEW_OUTSIDE /* an alias op's view of an input or constant: no arena memory */
} rt_value_kind;

typedef struct rt_value {
  const char *name;
  mte_dtype dtype;
  int32_t ndim;
  const int64_t *shape;
  int64_t numel, nbytes;
  rt_value_kind kind;
  int32_t producer;  /* node index for RT_VALUE_NODE / VIEW_OUTSIDE, else -1 */
  int32_t view_of;   /* alias ops: the value whose memory this is, else -1 */
  const void *data;  /* RT_VALUE_CONSTANT */
  int32_t buffer;    /* plan buffer, -1 outside the arena */
  int64_t offset;    /* arena offset, -1 outside the arena */
} rt_value;

typedef enum rt_attr_type {
  RT_ATTR_INT = 1,
  RT_ATTR_FLOAT,
  RT_ATTR_STRING,
  RT_ATTR_BOOL,   /* .i is 0 or 1 */
  RT_ATTR_INTS,   /* also the empty list and a list of bools (0 / 1) */
  RT_ATTR_FLOATS, /* a list with at least one non-integral number */
  RT_ATTR_STRINGS
} rt_attr_type;

typedef struct rt_attr {
  const char *name;
  rt_attr_type type;
  int64_t i;
  double f;
  const char *s;
  int64_t n; /* list length */
  const int64_t *ints;
  const double *floats;
  const char *const *strings;
} rt_attr;

typedef struct rt_node {
  const char *name;
  const rt_opdef *op;
  int32_t num_inputs, num_outputs, num_attrs;
  const int32_t *inputs; /* value indices; -1 = a left-out optional input */
  const int32_t *outputs;
  const rt_attr *attrs;
} rt_node;

const rt_attr *rt_node_attr(const rt_node *node, const char *name); /* NULL if absent */

typedef struct rt_buffer {
  int64_t nbytes; /* rounded up to MTE_MODEL_ARENA_ALIGN */
  int32_t start, end; /* alive over steps [start, end] */
  int32_t first_value;
  int64_t offset;
} rt_buffer;

typedef struct rt_tensor { /* one container entry, validated */
  const char *name;
  mte_dtype dtype;
  const mte_json *shape;
  int64_t begin, end;
} rt_tensor;

struct mte_model {
  unsigned char *file; /* the whole file, 64-byte aligned */
  size_t file_size;
  size_t data_start;   /* 8 + header length */
  mte_pool *pool;      /* values, nodes, plan, copies */
  mte_json_doc *header, *graph;
  const char *name;
  int32_t num_tensors;
  rt_tensor *tensors;
  int32_t num_values, num_nodes, num_inputs, num_outputs, num_constants;
  rt_value *values;
  rt_node *nodes;
  int32_t *inputs, *outputs;
  rt_map value_index;
  int32_t num_buffers;
  rt_buffer *buffers;
  int64_t arena_bytes, naive_bytes, lower_bound_bytes;
  /* the executor (executor.c) */
  struct rt_step *steps; /* one per node */
  unsigned char *arena;  /* arena_bytes, 64-byte aligned */
  void **ptr;            /* value -> its memory (inputs filled in per run) */
  int64_t prepared_bytes;
  int profiling;
  int profiled_runs;      /* runs since profiling was turned on */
  double *node_seconds;   /* per node: the total over runs while profiling */
  double *node_start;     /* per node, the last run: start since the run began */
  double *node_last;      /* per node, the last run: duration */
};

/* The loader's stages, in order; each fills its part of the model or fails with a message. */
int rt_container_parse(mte_model *m, rt_err *e); /* header, tensor entries, BOOL bytes */
int rt_graph_build(mte_model *m, rt_err *e);     /* values, constants, nodes, graph rules */
int rt_plan_build(mte_model *m, rt_err *e);      /* liveness, buffers, placement */
int rt_exec_prepare(mte_model *m, rt_err *e);    /* arena, every node's kernel (executor.c) */
void rt_exec_release(mte_model *m);              /* what rt_exec_prepare malloc'd */

/* container.c: the product of a JSON shape (a list of ints >= 0, at most MTE_MODEL_MAX_NDIM,
 * no int64 overflow); `where` starts the message. */
int rt_shape_numel(const mte_json *shape, const char *where, int64_t *numel, rt_err *e);
/* container.c: the metadata's graph document (present once rt_container_parse succeeded). */
const char *rt_container_graph_text(const mte_model *m, size_t *len);

/* Checked arithmetic: 0 on overflow. */
static inline int rt_mul64(int64_t a, int64_t b, int64_t *out) {
  if (a < 0 || b < 0) return 0;
  if (a && b > INT64_MAX / a) return 0;
  *out = a * b;
  return 1;
}
static inline int rt_add64(int64_t a, int64_t b, int64_t *out) {
  if (a < 0 || b < 0 || a > INT64_MAX - b) return 0;
  *out = a + b;
  return 1;
}

#endif
