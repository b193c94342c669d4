/*
 * container.c - stage 1 of the loader: the safetensors-compatible container, with the rules
 * of minitorch_edge/utils/serialization.py (_read_header, _check_entries, _check_entry,
 * _read_array) mirrored one for one:
 *
 *   8 bytes   N, little-endian; N <= 100,000,000 and N <= file size - 8
 *   N bytes   strict JSON object: "__metadata__" (strings -> strings) and one entry per tensor,
 *             exactly {"dtype", "shape", "data_offsets"}
 *   the rest  the data section: entries sorted by offset start at 0, leave no gap, do not
 *             overlap and end exactly at its end; end - begin == numel * itemsize
 *
 * plus what a .mte file needs: the metadata's format version "1", kind "graph" and a graph
 * document (parsed in graph.c), and BOOL bytes that are 0 or 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

#define KEY_VERSION "minitorch_edge.format_version"
#define KEY_KIND "minitorch_edge.kind"
#define KEY_GRAPH "minitorch_edge.graph"

static uint64_t le64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

/* Product of a JSON shape's dims, checked step by step as Python does; fills *ndim. */
int rt_shape_numel(const mte_json *shape, const char *where, int64_t *numel, rt_err *e) {
  if (shape->type != MTE_JSON_ARRAY)
    return rt_fail(e, MTE_EFORMAT, "%s: shape must be a list of ints, got a %s", where,
                   mte_json_type_name(shape));
  if (shape->u.list.n > MTE_MODEL_MAX_NDIM)
    return rt_fail(e, MTE_EFORMAT, "%s: shape has %zu dims; at most %d", where,
                   shape->u.list.n, MTE_MODEL_MAX_NDIM);
  int64_t n = 1;
  for (size_t i = 0; i < shape->u.list.n; ++i) {
    const mte_json *d = &shape->u.list.items[i];
    if (d->type != MTE_JSON_INT)
      return rt_fail(e, MTE_EFORMAT, "%s: shape must be a list of ints; dim %zu is a %s", where,
                     i, mte_json_type_name(d));
    if (d->u.i < 0)
      return rt_fail(e, MTE_EFORMAT, "%s: shape has a negative dim (%lld)", where,
                     (long long)d->u.i);
    if (!rt_mul64(n, d->u.i, &n))
      return rt_fail(e, MTE_EFORMAT, "%s: shape overflows: more than 2**63 - 1 elements", where);
  }
  *numel = n;
  return MTE_OK;
}

static int get_offset(const mte_json *v, int64_t *out) {
  if (v->type != MTE_JSON_INT) return 0;
  *out = v->u.i;
  return 1;
}

/* One tensor entry (serialization.py's _check_entry). */
static int check_entry(const mte_json *info, int64_t data_len, rt_tensor *t, rt_err *e) {
  char where[300];
  snprintf(where, sizeof where, "tensor \"%.200s\"", info->key);
  if (info->type != MTE_JSON_OBJECT)
    return rt_fail(e, MTE_EFORMAT, "%s: entry is a JSON %s, not an object", where,
                   mte_json_type_name(info));
  const mte_json *code = mte_json_get(info, "dtype"), *shape = mte_json_get(info, "shape");
  const mte_json *offs = mte_json_get(info, "data_offsets");
  if (info->u.list.n != 3 || !code || !shape || !offs)
    return rt_fail(e, MTE_EFORMAT,
                   "%s: entry has %zu keys; it needs exactly data_offsets, dtype, shape", where,
                   info->u.list.n);
  if (code->type != MTE_JSON_STRING)
    return rt_fail(e, MTE_EFORMAT, "%s: dtype must be a string, got a %s", where,
                   mte_json_type_name(code));
  t->dtype = rt_dtype_from_code(code->u.str.s);
  if (t->dtype == MTE_DTYPE_INVALID)
    return rt_fail(e, MTE_EFORMAT,
                   "%s: dtype \"%.40s\" is not one the runtime holds (F32, F64, F16, I8, I16, "
                   "I32, I64, U8, BOOL)", where, code->u.str.s);
  int64_t numel, need, begin, end;
  if (rt_shape_numel(shape, where, &numel, e)) return MTE_EFORMAT;
  if (offs->type != MTE_JSON_ARRAY || offs->u.list.n != 2 ||
      !get_offset(&offs->u.list.items[0], &begin) || !get_offset(&offs->u.list.items[1], &end))
    return rt_fail(e, MTE_EFORMAT, "%s: data_offsets must be a list of two ints", where);
  if (begin < 0 || begin > end)
    return rt_fail(e, MTE_EFORMAT, "%s: data_offsets [%lld, %lld] must satisfy 0 <= begin <= end",
                   where, (long long)begin, (long long)end);
  if (end > data_len)
    return rt_fail(e, MTE_EFORMAT,
                   "%s: data_offsets [%lld, %lld] end past the data section (%lld bytes; "
                   "truncated file?)", where, (long long)begin, (long long)end,
                   (long long)data_len);
  if (!rt_mul64(numel, (int64_t)mte_dtype_size(t->dtype), &need) || end - begin != need)
    return rt_fail(e, MTE_EFORMAT,
                   "%s: data_offsets [%lld, %lld] hold %lld bytes but its shape of %s needs "
                   "%lld elements x %zu bytes", where, (long long)begin, (long long)end,
                   (long long)(end - begin), code->u.str.s, (long long)numel,
                   mte_dtype_size(t->dtype));
  t->name = info->key;
  t->shape = shape;
  t->begin = begin;
  t->end = end;
  return MTE_OK;
}

static int by_offsets(const void *a, const void *b) {
  const rt_tensor *x = a, *y = b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* Sorted by offset, the entries tile the data section exactly (_check_entries). */
static int check_layout(mte_model *m, int64_t data_len, rt_err *e) {
  qsort(m->tensors, (size_t)m->num_tensors, sizeof *m->tensors, by_offsets);
  int64_t position = 0;
  const char *previous = NULL;
  for (int32_t i = 0; i < m->num_tensors; ++i) {
    const rt_tensor *t = &m->tensors[i];
    if (t->begin > position)
      return rt_fail(e, MTE_EFORMAT,
                     "tensor \"%.200s\": data_offsets [%lld, %lld] leave a gap of %lld bytes "
                     "after %s%.200s%s; buffers must start at 0 and be contiguous", t->name,
                     (long long)t->begin, (long long)t->end, (long long)(t->begin - position),
                     previous ? "tensor \"" : "the data section", previous ? previous : "",
                     previous ? "\"" : "");
    if (t->begin < position)
      return rt_fail(e, MTE_EFORMAT,
                     "tensor \"%.200s\": data_offsets [%lld, %lld] overlap tensor \"%.200s\", "
                     "which ends at %lld", t->name, (long long)t->begin, (long long)t->end,
                     previous, (long long)position);
    position = t->end;
    previous = t->name;
  }
  if (position != data_len)
    return rt_fail(e, MTE_EFORMAT,
                   "the data section has %lld bytes but the tensors use %lld: %lld trailing "
                   "bytes", (long long)data_len, (long long)position,
                   (long long)(data_len - position));
  return MTE_OK;
}

static int check_bools(const mte_model *m, rt_err *e) {
  for (int32_t i = 0; i < m->num_tensors; ++i) {
    const rt_tensor *t = &m->tensors[i];
    if (t->dtype != MTE_DTYPE_BOOL) continue;
    const unsigned char *p = m->file + m->data_start + t->begin;
    for (int64_t k = 0; k < t->end - t->begin; ++k)
      if (p[k] > 1)
        return rt_fail(e, MTE_EFORMAT, "tensor \"%.200s\": BOOL bytes must be 0 or 1", t->name);
  }
  return MTE_OK;
}

static const char *meta_string(const mte_json *meta, const char *key) {
  const mte_json *v = mte_json_get(meta, key);
  return v && v->type == MTE_JSON_STRING ? v->u.str.s : NULL;
}

/* __metadata__: strings -> strings, with this format's version, kind and graph. */
static int check_metadata(const mte_json *meta, rt_err *e) {
  if (!meta)
    return rt_fail(e, MTE_EFORMAT, "header has no __metadata__: not a minitorch_edge model file");
  if (meta->type != MTE_JSON_OBJECT)
    return rt_fail(e, MTE_EFORMAT, "__metadata__ must be an object mapping strings to strings");
  for (size_t i = 0; i < meta->u.list.n; ++i)
    if (meta->u.list.items[i].type != MTE_JSON_STRING)
      return rt_fail(e, MTE_EFORMAT,
                     "__metadata__ must be an object mapping strings to strings; \"%.200s\" is "
                     "a %s", meta->u.list.items[i].key, mte_json_type_name(&meta->u.list.items[i]));
  const char *version = meta_string(meta, KEY_VERSION), *kind = meta_string(meta, KEY_KIND);
  if (!version || strcmp(version, "1") != 0)
    return rt_fail(e, MTE_EFORMAT, "__metadata__ \"" KEY_VERSION "\" is %s%.40s%s; this runtime "
                   "reads version \"1\"", version ? "\"" : "", version ? version : "missing",
                   version ? "\"" : "");
  if (!kind || strcmp(kind, "graph") != 0)
    return rt_fail(e, MTE_EFORMAT, "__metadata__ \"" KEY_KIND "\" is %s%.40s%s, not \"graph\": "
                   "the file holds no model graph (a checkpoint?)", kind ? "\"" : "",
                   kind ? kind : "missing", kind ? "\"" : "");
  if (!meta_string(meta, KEY_GRAPH))
    return rt_fail(e, MTE_EFORMAT, "__metadata__ has no \"" KEY_GRAPH "\" document");
  return MTE_OK;
}

static int read_header(mte_model *m, rt_err *e) {
  if (m->file_size < 8)
    return rt_fail(e, MTE_EFORMAT, "the file has %zu bytes; it must start with an 8-byte header "
                   "length (truncated or empty file?)", m->file_size);
  uint64_t n = le64(m->file);
  if (n > MTE_MODEL_MAX_HEADER_BYTES || n > m->file_size - 8)
    return rt_fail(e, MTE_EFORMAT, "header length %llu %s", (unsigned long long)n,
                   n > MTE_MODEL_MAX_HEADER_BYTES ? "is over the cap of 100000000 bytes"
                                                  : "runs past the end of the file (truncated?)");
  mte_json_limits lim = mte_json_default_limits();
  lim.max_string_bytes = MTE_MODEL_MAX_HEADER_BYTES; /* the graph document is one string */
  lim.max_elements = 1u << 23;
  char jerr[256];
  int st = mte_json_parse((const char *)m->file + 8, (size_t)n, &lim, &m->header, jerr,
                          sizeof jerr);
  if (st) return rt_fail(e, st == MTE_ENOMEM ? st : MTE_EFORMAT, "header is not valid JSON (%s)",
                         jerr);
  m->data_start = 8 + (size_t)n;
  return MTE_OK;
}

int rt_container_parse(mte_model *m, rt_err *e) {
  int st = read_header(m, e);
  if (st) return st;
  const mte_json *root = mte_json_root(m->header);
  if (root->type != MTE_JSON_OBJECT)
    return rt_fail(e, MTE_EFORMAT, "header is a JSON %s, not an object", mte_json_type_name(root));
  const mte_json *meta = mte_json_get(root, "__metadata__");
  if (check_metadata(meta, e)) return MTE_EFORMAT;
  size_t n = root->u.list.n - 1;
  if (n > MTE_MODEL_MAX_VALUES)
    return rt_fail(e, MTE_EFORMAT, "%zu tensors; at most %d", n, MTE_MODEL_MAX_VALUES);
  m->tensors = mte_pool_array(m->pool, n, sizeof *m->tensors);
  if (!m->tensors) return rt_fail(e, MTE_ENOMEM, "out of memory for %zu tensor entries", n);
  int64_t data_len = (int64_t)(m->file_size - m->data_start);
  for (size_t i = 0; i < root->u.list.n; ++i) {
    const mte_json *info = &root->u.list.items[i];
    if (info == meta) continue;
    if (check_entry(info, data_len, &m->tensors[m->num_tensors], e)) return MTE_EFORMAT;
    ++m->num_tensors;
  }
  if (check_layout(m, data_len, e) || check_bools(m, e)) return MTE_EFORMAT;
  return MTE_OK;
}

/* The graph document's text (checked present by check_metadata). */
const char *rt_container_graph_text(const mte_model *m, size_t *len) {
  const mte_json *v = mte_json_get(mte_json_get(mte_json_root(m->header), "__metadata__"),
                                   KEY_GRAPH);
  *len = v->u.str.len;
  return v->u.str.s;
}
