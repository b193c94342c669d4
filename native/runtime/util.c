/*
 * util.c - the small shared pieces of the runtime: error messages, the dtype table (container
 * code <-> numpy name <-> size), status strings and a string -> index hash map.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "model_internal.h"

int rt_fail(rt_err *e, int status, const char *fmt, ...) {
  if (e && e->buf && e->len && !e->buf[0]) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->buf, e->len, fmt, ap);
    va_end(ap);
  }
  return status;
}

/* ---------------------------------------------------------------- dtypes */

static const struct {
  mte_dtype dtype;
  const char *code, *name;
  size_t size;
} DTYPES[] = {
    {MTE_DTYPE_FLOAT32, "F32", "float32", 4}, {MTE_DTYPE_FLOAT64, "F64", "float64", 8},
    {MTE_DTYPE_FLOAT16, "F16", "float16", 2}, {MTE_DTYPE_INT8, "I8", "int8", 1},
    {MTE_DTYPE_INT16, "I16", "int16", 2},     {MTE_DTYPE_INT32, "I32", "int32", 4},
    {MTE_DTYPE_INT64, "I64", "int64", 8},     {MTE_DTYPE_UINT8, "U8", "uint8", 1},
    {MTE_DTYPE_BOOL, "BOOL", "bool", 1},
};
#define NUM_DTYPES (sizeof DTYPES / sizeof DTYPES[0])

mte_dtype rt_dtype_from_code(const char *code) {
  for (size_t i = 0; i < NUM_DTYPES; ++i)
    if (strcmp(code, DTYPES[i].code) == 0) return DTYPES[i].dtype;
  return MTE_DTYPE_INVALID;
}

mte_dtype rt_dtype_from_name(const char *name) {
  for (size_t i = 0; i < NUM_DTYPES; ++i)
    if (strcmp(name, DTYPES[i].name) == 0) return DTYPES[i].dtype;
  return MTE_DTYPE_INVALID;
}

const char *rt_dtype_code(mte_dtype dtype) {
  for (size_t i = 0; i < NUM_DTYPES; ++i)
    if (DTYPES[i].dtype == dtype) return DTYPES[i].code;
  return NULL;
}

const char *mte_dtype_name(mte_dtype dtype) {
  for (size_t i = 0; i < NUM_DTYPES; ++i)
    if (DTYPES[i].dtype == dtype) return DTYPES[i].name;
  return NULL;
}

size_t mte_dtype_size(mte_dtype dtype) {
  for (size_t i = 0; i < NUM_DTYPES; ++i)
    if (DTYPES[i].dtype == dtype) return DTYPES[i].size;
  return 0;
}

const char *mte_runtime_status_string(int status) {
  if (status == MTE_EIO) return "MTE_EIO: the file cannot be read";
  if (status == MTE_EFORMAT) return "MTE_EFORMAT: not a valid .mte model file";
  return mte_status_string(status);
}

/* ---------------------------------------------------------------- the name map */

static uint64_t hash(const char *s) { /* FNV-1a */
  uint64_t h = 1469598103934665603ull;
  for (; *s; ++s) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

int rt_map_init(rt_map *m, mte_pool *pool, size_t n) {
  size_t cap = 16;
  while (cap < 2 * n + 1) {
    if (cap > SIZE_MAX / 4) return MTE_EOVERFLOW;
    cap *= 2;
  }
  m->keys = mte_pool_array(pool, cap, sizeof *m->keys);
  m->vals = mte_pool_array(pool, cap, sizeof *m->vals);
  m->cap = cap;
  return m->keys && m->vals ? MTE_OK : MTE_ENOMEM;
}

int32_t rt_map_get(const rt_map *m, const char *key) {
  if (!m->cap) return -1;
  for (size_t i = hash(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    if (!m->keys[i]) return -1;
    if (strcmp(m->keys[i], key) == 0) return m->vals[i];
  }
}

int32_t rt_map_put(rt_map *m, const char *key, int32_t val) {
  for (size_t i = hash(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    if (!m->keys[i]) {
      m->keys[i] = key;
      m->vals[i] = val;
      return -1;
    }
    if (strcmp(m->keys[i], key) == 0) return m->vals[i];
  }
}

const rt_attr *rt_node_attr(const rt_node *node, const char *name) {
  for (int32_t i = 0; i < node->num_attrs; ++i)
    if (strcmp(node->attrs[i].name, name) == 0) return &node->attrs[i];
  return NULL;
}
