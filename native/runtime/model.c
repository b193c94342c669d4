/*
 * model.c - the public API of mte_runtime.h: read a .mte file once (size-checked) into a
 * 64-byte aligned buffer, run the loader's stages on it (container.c, graph.c, plan.c,
 * executor.c) and
 * answer questions about the loaded model. A model that fails any stage is freed whole:
 * the caller gets a status and a message, never a half-loaded model.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

static int little_endian(void) {
  const uint16_t one = 1;
  return *(const unsigned char *)&one == 1;
}

void mte_model_free(mte_model *m) {
  if (!m) return;
  rt_exec_release(m);
  mte_json_free(m->header);
  mte_json_free(m->graph);
  mte_pool_destroy(m->pool);
  free(m->file);
  free(m);
}

/* A model around an (owned) file buffer, through every stage. */
static int load_buffer(unsigned char *file, size_t size, mte_model **out, rt_err *e) {
  mte_model *m = calloc(1, sizeof *m);
  if (!m || !(m->pool = mte_pool_create())) {
    free(file);
    free(m);
    return rt_fail(e, MTE_ENOMEM, "out of memory");
  }
  m->file = file;
  m->file_size = size;
  int st = rt_container_parse(m, e);
  if (st == MTE_OK) st = rt_graph_build(m, e);
  if (st == MTE_OK) st = rt_plan_build(m, e);
  if (st == MTE_OK) st = rt_exec_prepare(m, e);
  if (st != MTE_OK) {
    mte_model_free(m);
    return st;
  }
  *out = m;
  return MTE_OK;
}

static unsigned char *alloc_file(size_t size) {
  size_t rounded = (size + 63) & ~(size_t)63;
  return aligned_alloc(64, rounded ? rounded : 64);
}

static int start(mte_model **out, char *err, size_t errlen, rt_err *e) {
  e->buf = err;
  e->len = errlen;
  if (err && errlen) err[0] = 0;
  if (!out) return rt_fail(e, MTE_EINVAL, "out is NULL");
  *out = NULL;
  if (!little_endian())
    return rt_fail(e, MTE_EUNSUPPORTED, "the runtime needs a little-endian CPU");
  return MTE_OK;
}

int mte_model_load_memory(const void *data, size_t size, mte_model **out, char *err,
                          size_t errlen) {
  rt_err e;
  int st = start(out, err, errlen, &e);
  if (st) return st;
  if (!data && size) return rt_fail(&e, MTE_EINVAL, "data is NULL");
  if (size > SIZE_MAX - 64) return rt_fail(&e, MTE_EOVERFLOW, "size too large");
  unsigned char *file = alloc_file(size);
  if (!file) return rt_fail(&e, MTE_ENOMEM, "out of memory for a %zu-byte model", size);
  if (size) memcpy(file, data, size);
  return load_buffer(file, size, out, &e);
}

/* The size of an open file, or -1. */
static long file_size(FILE *f) {
  if (fseek(f, 0, SEEK_END) != 0) return -1;
  long n = ftell(f);
  if (fseek(f, 0, SEEK_SET) != 0) return -1;
  return n;
}

int mte_model_load(const char *path, mte_model **out, char *err, size_t errlen) {
  rt_err e;
  int st = start(out, err, errlen, &e);
  if (st) return st;
  if (!path) return rt_fail(&e, MTE_EINVAL, "path is NULL");
  FILE *f = fopen(path, "rb");
  if (!f) return rt_fail(&e, MTE_EIO, "%.300s: cannot open the file", path);
  long n = file_size(f);
  unsigned char *file = NULL;
  if (n < 0 || (unsigned long)n > SIZE_MAX - 64) {
    st = rt_fail(&e, MTE_EIO, "%.300s: cannot find the file's size (not a regular file?)", path);
  } else if (!(file = alloc_file((size_t)n))) {
    st = rt_fail(&e, MTE_ENOMEM, "%.300s: out of memory for %ld bytes", path, n);
  } else if (fread(file, 1, (size_t)n, f) != (size_t)n || fgetc(f) != EOF) {
    st = rt_fail(&e, MTE_EIO, "%.300s: the file changed size while it was read", path);
  }
  fclose(f);
  if (st) {
    free(file);
    return st;
  }
  st = load_buffer(file, (size_t)n, out, &e);
  if (st && err && errlen) { /* prefix the message with the path */
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", err);
    snprintf(err, errlen, "%.300s: %s", path, msg);
  }
  return st;
}

/* ---------------------------------------------------------------- introspection */

const char *mte_model_name(const mte_model *m) { return m ? m->name : NULL; }
int mte_model_num_nodes(const mte_model *m) { return m ? m->num_nodes : 0; }
int mte_model_num_values(const mte_model *m) { return m ? m->num_values : 0; }
int mte_model_num_constants(const mte_model *m) { return m ? m->num_constants : 0; }
int mte_model_num_inputs(const mte_model *m) { return m ? m->num_inputs : 0; }
int mte_model_num_outputs(const mte_model *m) { return m ? m->num_outputs : 0; }

static const rt_value *input(const mte_model *m, int i) {
  return m && i >= 0 && i < m->num_inputs ? &m->values[m->inputs[i]] : NULL;
}
static const rt_value *output(const mte_model *m, int i) {
  return m && i >= 0 && i < m->num_outputs ? &m->values[m->outputs[i]] : NULL;
}

#define ACCESSORS(kind, get)                                                               \
  const char *mte_model_##kind##_name(const mte_model *m, int i) {                         \
    const rt_value *v = get(m, i);                                                         \
    return v ? v->name : NULL;                                                             \
  }                                                                                        \
  int mte_model_##kind##_ndim(const mte_model *m, int i) {                                 \
    const rt_value *v = get(m, i);                                                         \
    return v ? v->ndim : -1;                                                               \
  }                                                                                        \
  const int64_t *mte_model_##kind##_shape(const mte_model *m, int i) {                     \
    const rt_value *v = get(m, i);                                                         \
    return v ? v->shape : NULL;                                                            \
  }                                                                                        \
  mte_dtype mte_model_##kind##_dtype(const mte_model *m, int i) {                          \
    const rt_value *v = get(m, i);                                                         \
    return v ? v->dtype : MTE_DTYPE_INVALID;                                               \
  }                                                                                        \
  int64_t mte_model_##kind##_nbytes(const mte_model *m, int i) {                           \
    const rt_value *v = get(m, i);                                                         \
    return v ? v->nbytes : -1;                                                             \
  }

ACCESSORS(input, input)
ACCESSORS(output, output)

int64_t mte_model_arena_bytes(const mte_model *m) { return m ? m->arena_bytes : -1; }
int64_t mte_model_naive_bytes(const mte_model *m) { return m ? m->naive_bytes : -1; }
int64_t mte_model_lower_bound_bytes(const mte_model *m) { return m ? m->lower_bound_bytes : -1; }

int mte_model_find_value(const mte_model *m, const char *name) {
  return m && name ? rt_map_get(&m->value_index, name) : -1;
}

const char *mte_model_value_name(const mte_model *m, int i) {
  return m && i >= 0 && i < m->num_values ? m->values[i].name : NULL;
}

int mte_model_value_ndim(const mte_model *m, int i) {
  return m && i >= 0 && i < m->num_values ? m->values[i].ndim : -1;
}

const int64_t *mte_model_value_shape(const mte_model *m, int i) {
  return m && i >= 0 && i < m->num_values ? m->values[i].shape : NULL;
}

mte_dtype mte_model_value_dtype(const mte_model *m, int i) {
  return m && i >= 0 && i < m->num_values ? m->values[i].dtype : MTE_DTYPE_INVALID;
}

int64_t mte_model_value_offset(const mte_model *m, int i) {
  return m && i >= 0 && i < m->num_values ? m->values[i].offset : -1;
}

int mte_runtime_num_ops(void) { return rt_op_count(); }
const char *mte_runtime_op_name(int i) {
  const rt_opdef *op = rt_op_at(i);
  return op ? op->name : NULL;
}
