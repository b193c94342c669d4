/*
 * graph.c - stage 2 of the loader: the graph document (metadata "minitorch_edge.graph"),
 * turned into resolved values and nodes and checked by the rules of Graph.check
 * (minitorch_edge/graph/ir.py):
 *
 *   {"version": 1, "name": str, "inputs": [names], "outputs": [names],
 *    "values": [[name, [dims], dtype], ...],
 *    "nodes": [{"op", "name", "inputs", "outputs", "attrs"}, ...]}
 *
 * values: names unique and non-empty, known dtypes, shapes without overflow; constants: exactly
 * the container's tensors, each matching its value's shape and dtype; inputs: values, not
 * constants, not listed twice; nodes: names unique, ops known, every input a graph input, a
 * constant or an output of an EARLIER node (a later one: a cycle / wrong order), outputs
 * listed in values and defined once; attributes typed; outputs: defined.
 * (Output shapes are not re-inferred here: that is the executor's per-op preparation.)
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "model_internal.h"

static const char *const GRAPH_KEYS[] = {"version", "name", "inputs", "outputs", "values",
                                         "nodes"};
static const char *const NODE_KEYS[] = {"op", "name", "inputs", "outputs", "attrs"};

/* obj has exactly the n keys (all present, no other). */
static int exact_keys(const mte_json *obj, const char *const *keys, size_t n, const char *where,
                      rt_err *e) {
  for (size_t i = 0; i < n; ++i)
    if (!mte_json_get(obj, keys[i]))
      return rt_fail(e, MTE_EFORMAT, "%s: the key \"%s\" is missing", where, keys[i]);
  if (obj->u.list.n != n) {
    for (size_t i = 0; i < obj->u.list.n; ++i) {
      size_t k = 0;
      while (k < n && strcmp(obj->u.list.items[i].key, keys[k]) != 0) ++k;
      if (k == n)
        return rt_fail(e, MTE_EFORMAT, "%s: unknown key \"%.100s\"", where,
                       obj->u.list.items[i].key);
    }
  }
  return MTE_OK;
}

/* v is an array of strings (empty strings allowed only if allow_empty). */
static int string_list(const mte_json *v, int allow_empty, const char *where, rt_err *e) {
  if (!v || v->type != MTE_JSON_ARRAY)
    return rt_fail(e, MTE_EFORMAT, "%s must be a list of strings, got a %s", where,
                   mte_json_type_name(v));
  for (size_t i = 0; i < v->u.list.n; ++i) {
    const mte_json *s = &v->u.list.items[i];
    if (s->type != MTE_JSON_STRING)
      return rt_fail(e, MTE_EFORMAT, "%s must be a list of strings; item %zu is a %s", where, i,
                     mte_json_type_name(s));
    if (!allow_empty && !s->u.str.len)
      return rt_fail(e, MTE_EFORMAT, "%s: item %zu is an empty name", where, i);
  }
  return MTE_OK;
}

/* ---------------------------------------------------------------- values and constants */

static int build_value(mte_model *m, const mte_json *item, size_t i, rt_value *v, rt_err *e) {
  char where[300];
  if (item->type != MTE_JSON_ARRAY || item->u.list.n != 3 ||
      item->u.list.items[0].type != MTE_JSON_STRING ||
      item->u.list.items[2].type != MTE_JSON_STRING)
    return rt_fail(e, MTE_EFORMAT, "graph values[%zu] must be [name, [dims...], dtype]", i);
  const mte_json *name = &item->u.list.items[0], *dims = &item->u.list.items[1];
  snprintf(where, sizeof where, "value \"%.200s\"", name->u.str.s);
  if (!name->u.str.len) return rt_fail(e, MTE_EFORMAT, "graph values[%zu] has an empty name", i);
  v->name = name->u.str.s;
  v->dtype = rt_dtype_from_name(item->u.list.items[2].u.str.s);
  if (v->dtype == MTE_DTYPE_INVALID)
    return rt_fail(e, MTE_EFORMAT, "%s: unknown dtype \"%.40s\"", where,
                   item->u.list.items[2].u.str.s);
  if (rt_shape_numel(dims, where, &v->numel, e)) return MTE_EFORMAT;
  if (!rt_mul64(v->numel, (int64_t)mte_dtype_size(v->dtype), &v->nbytes))
    return rt_fail(e, MTE_EFORMAT, "%s: its size in bytes overflows int64", where);
  int64_t *shape = mte_pool_array(m->pool, dims->u.list.n, sizeof *shape);
  if (!shape) return rt_fail(e, MTE_ENOMEM, "out of memory");
  for (size_t d = 0; d < dims->u.list.n; ++d) shape[d] = dims->u.list.items[d].u.i;
  v->ndim = (int32_t)dims->u.list.n;
  v->shape = shape;
  v->kind = RT_VALUE_UNUSED;
  v->producer = v->view_of = v->buffer = -1;
  v->offset = -1;
  if (rt_map_put(&m->value_index, v->name, (int32_t)i) >= 0)
    return rt_fail(e, MTE_EFORMAT, "%s is listed twice in the graph's values", where);
  return MTE_OK;
}

static int build_values(mte_model *m, const mte_json *values, rt_err *e) {
  if (values->type != MTE_JSON_ARRAY)
    return rt_fail(e, MTE_EFORMAT, "graph values must be a list, got a %s",
                   mte_json_type_name(values));
  if (values->u.list.n > MTE_MODEL_MAX_VALUES)
    return rt_fail(e, MTE_EFORMAT, "the graph has %zu values; at most %d", values->u.list.n,
                   MTE_MODEL_MAX_VALUES);
  m->num_values = (int32_t)values->u.list.n;
  m->values = mte_pool_array(m->pool, values->u.list.n, sizeof *m->values);
  if (!m->values || rt_map_init(&m->value_index, m->pool, values->u.list.n))
    return rt_fail(e, MTE_ENOMEM, "out of memory");
  for (size_t i = 0; i < values->u.list.n; ++i) {
    int st = build_value(m, &values->u.list.items[i], i, &m->values[i], e);
    if (st) return st;
  }
  return MTE_OK;
}

static void describe(char *out, size_t len, const char *dtype, const int64_t *shape, int32_t nd) {
  int n = snprintf(out, len, "%s[", dtype);
  for (int32_t d = 0; d < nd && n > 0 && (size_t)n < len; ++d)
    n += snprintf(out + n, len - (size_t)n, d ? ", %lld" : "%lld", (long long)shape[d]);
  if (n > 0 && (size_t)n < len) snprintf(out + n, len - (size_t)n, "]");
}

/* Each tensor of the container is the data of the value of its name. */
static int bind_constant(mte_model *m, const rt_tensor *t, rt_err *e) {
  int32_t idx = rt_map_get(&m->value_index, t->name);
  if (idx < 0)
    return rt_fail(e, MTE_EFORMAT, "tensor \"%.200s\" is not a value of the graph (the "
                   "constants are exactly the file's tensors)", t->name);
  rt_value *v = &m->values[idx];
  int same = v->dtype == t->dtype && (size_t)v->ndim == t->shape->u.list.n;
  for (int32_t d = 0; same && d < v->ndim; ++d) same = v->shape[d] == t->shape->u.list.items[d].u.i;
  if (!same) {
    char want[200], got[200];
    int64_t dims[MTE_MODEL_MAX_NDIM];
    for (size_t d = 0; d < t->shape->u.list.n; ++d) dims[d] = t->shape->u.list.items[d].u.i;
    describe(want, sizeof want, mte_dtype_name(v->dtype), v->shape, v->ndim);
    describe(got, sizeof got, mte_dtype_name(t->dtype), dims, (int32_t)t->shape->u.list.n);
    return rt_fail(e, MTE_EFORMAT, "constant \"%.200s\": its value %s does not describe its "
                   "tensor %s (%s)", t->name, want, got, rt_dtype_code(t->dtype));
  }
  const unsigned char *p = m->file + m->data_start + t->begin;
  size_t size = mte_dtype_size(t->dtype);
  if ((uintptr_t)p % size) { /* misaligned for its type: an aligned copy */
    unsigned char *copy = mte_pool_alloc(m->pool, (size_t)(t->end - t->begin), 1);
    if (!copy) return rt_fail(e, MTE_ENOMEM, "out of memory copying tensor \"%.200s\"", t->name);
    memcpy(copy, p, (size_t)(t->end - t->begin));
    p = copy;
  }
  v->kind = RT_VALUE_CONSTANT;
  v->data = p;
  ++m->num_constants;
  return MTE_OK;
}

static int build_inputs(mte_model *m, const mte_json *inputs, rt_err *e) {
  if (string_list(inputs, 0, "graph inputs", e)) return MTE_EFORMAT;
  m->num_inputs = (int32_t)inputs->u.list.n; /* <= values: every one is a distinct value */
  m->inputs = mte_pool_array(m->pool, inputs->u.list.n, sizeof *m->inputs);
  if (!m->inputs) return rt_fail(e, MTE_ENOMEM, "out of memory");
  for (size_t i = 0; i < inputs->u.list.n; ++i) {
    const char *name = inputs->u.list.items[i].u.str.s;
    int32_t idx = rt_map_get(&m->value_index, name);
    if (idx < 0) return rt_fail(e, MTE_EFORMAT, "graph input \"%.200s\" has no value", name);
    if (m->values[idx].kind == RT_VALUE_CONSTANT)
      return rt_fail(e, MTE_EFORMAT, "graph input \"%.200s\" is also a constant", name);
    if (m->values[idx].kind == RT_VALUE_INPUT)
      return rt_fail(e, MTE_EFORMAT, "graph input \"%.200s\" is listed twice", name);
    m->values[idx].kind = RT_VALUE_INPUT;
    m->inputs[i] = idx;
  }
  return MTE_OK;
}

/* ---------------------------------------------------------------- attributes */

static int build_list_attr(mte_model *m, const mte_json *v, rt_attr *a, const char *where,
                           rt_err *e) {
  size_t n = v->u.list.n, ints = 0, nums = 0, strs = 0, bools = 0;
  for (size_t i = 0; i < n; ++i) {
    mte_json_type t = v->u.list.items[i].type;
    bools += t == MTE_JSON_BOOL;
    ints += t == MTE_JSON_INT;
    nums += t == MTE_JSON_INT || t == MTE_JSON_DOUBLE;
    strs += t == MTE_JSON_STRING;
  }
  a->n = (int64_t)n;
  if (ints == n || bools == n) { /* a list of bools is a list of 0 / 1 */
    int64_t *p = mte_pool_array(m->pool, n, sizeof *p);
    if (!p) return rt_fail(e, MTE_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; ++i)
      p[i] = ints == n ? v->u.list.items[i].u.i : v->u.list.items[i].u.b;
    a->type = RT_ATTR_INTS;
    a->ints = p;
  } else if (nums == n) {
    double *p = mte_pool_array(m->pool, n, sizeof *p);
    if (!p) return rt_fail(e, MTE_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; ++i) {
      const mte_json *x = &v->u.list.items[i];
      p[i] = x->type == MTE_JSON_INT ? (double)x->u.i : x->u.d;
    }
    a->type = RT_ATTR_FLOATS;
    a->floats = p;
  } else if (strs == n) {
    const char **p = mte_pool_array(m->pool, n, sizeof *p);
    if (!p) return rt_fail(e, MTE_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; ++i) p[i] = v->u.list.items[i].u.str.s;
    a->type = RT_ATTR_STRINGS;
    a->strings = p;
  } else {
    return rt_fail(e, MTE_EFORMAT, "%s: a list attribute holds only ints, only numbers, only "
                   "bools or only strings", where);
  }
  return MTE_OK;
}

static int build_attr(mte_model *m, const mte_json *v, rt_attr *a, const char *node_where,
                      rt_err *e) {
  char where[700];
  snprintf(where, sizeof where, "%.500s: attribute \"%.100s\"", node_where, v->key);
  a->name = v->key;
  switch (v->type) {
    case MTE_JSON_INT: a->type = RT_ATTR_INT; a->i = v->u.i; return MTE_OK;
    case MTE_JSON_DOUBLE: a->type = RT_ATTR_FLOAT; a->f = v->u.d; return MTE_OK;
    case MTE_JSON_BOOL: a->type = RT_ATTR_BOOL; a->i = v->u.b; return MTE_OK;
    case MTE_JSON_STRING: a->type = RT_ATTR_STRING; a->s = v->u.str.s; return MTE_OK;
    case MTE_JSON_ARRAY: return build_list_attr(m, v, a, where, e);
    default:
      return rt_fail(e, MTE_EFORMAT, "%s is a %s; attributes are ints, floats, strings, bools or "
                     "lists of ints / floats / strings", where, mte_json_type_name(v));
  }
}

/* ---------------------------------------------------------------- nodes */

/* Pass 1: shapes of the JSON (keys, types) and, for each value, the last node writing it. */
static int scan_nodes(mte_model *m, const mte_json *nodes, int32_t *last_writer, rt_err *e) {
  size_t total_outputs = 0;
  for (size_t k = 0; k < nodes->u.list.n; ++k) {
    const mte_json *n = &nodes->u.list.items[k];
    char where[64];
    snprintf(where, sizeof where, "graph nodes[%zu]", k);
    if (n->type != MTE_JSON_OBJECT)
      return rt_fail(e, MTE_EFORMAT, "%s is a %s, not an object", where, mte_json_type_name(n));
    if (exact_keys(n, NODE_KEYS, 5, where, e)) return MTE_EFORMAT;
    if (mte_json_get(n, "op")->type != MTE_JSON_STRING ||
        mte_json_get(n, "name")->type != MTE_JSON_STRING)
      return rt_fail(e, MTE_EFORMAT, "%s: op and name must be strings", where);
    if (mte_json_get(n, "attrs")->type != MTE_JSON_OBJECT)
      return rt_fail(e, MTE_EFORMAT, "%s: attrs must be an object", where);
    const mte_json *outs = mte_json_get(n, "outputs");
    if (string_list(mte_json_get(n, "inputs"), 1, where, e) || string_list(outs, 0, where, e))
      return MTE_EFORMAT;
    total_outputs += outs->u.list.n;
    if (total_outputs > MTE_MODEL_MAX_NODES)
      return rt_fail(e, MTE_EFORMAT, "the nodes have more than %d outputs in all",
                     MTE_MODEL_MAX_NODES);
    for (size_t j = 0; j < outs->u.list.n; ++j) {
      int32_t idx = rt_map_get(&m->value_index, outs->u.list.items[j].u.str.s);
      if (idx >= 0) last_writer[idx] = (int32_t)k;
    }
  }
  return MTE_OK;
}

static int resolve_inputs(mte_model *m, const mte_json *ins, int32_t k, const int32_t *last_writer,
                          const mte_json *nodes, int32_t *out, const char *where, rt_err *e) {
  for (size_t j = 0; j < ins->u.list.n; ++j) {
    const mte_json *s = &ins->u.list.items[j];
    if (!s->u.str.len) {
      out[j] = -1;
      continue;
    }
    int32_t idx = rt_map_get(&m->value_index, s->u.str.s);
    if (idx >= 0 && m->values[idx].kind != RT_VALUE_UNUSED) {
      out[j] = idx;
      continue;
    }
    if (idx >= 0 && last_writer[idx] >= k)
      return rt_fail(e, MTE_EFORMAT, "%s reads \"%.200s\", which is written by a node at or "
                     "after it (node \"%.200s\"): the graph has a cycle or is not in "
                     "topological order", where, s->u.str.s,
                     mte_json_get(&nodes->u.list.items[last_writer[idx]], "name")->u.str.s);
    return rt_fail(e, MTE_EFORMAT, "%s reads \"%.200s\", which is not defined (not an input, a "
                   "constant or an earlier node's output)", where, s->u.str.s);
  }
  return MTE_OK;
}

static int define_outputs(mte_model *m, const mte_json *outs, int32_t k, int32_t *out,
                          const char *where, rt_err *e) {
  for (size_t j = 0; j < outs->u.list.n; ++j) {
    const char *name = outs->u.list.items[j].u.str.s;
    int32_t idx = rt_map_get(&m->value_index, name);
    if (idx >= 0 && m->values[idx].kind != RT_VALUE_UNUSED)
      return rt_fail(e, MTE_EFORMAT, "%s: output \"%.200s\" is already defined", where, name);
    if (idx < 0) return rt_fail(e, MTE_EFORMAT, "%s: output \"%.200s\" has no value", where, name);
    m->values[idx].kind = RT_VALUE_NODE;
    m->values[idx].producer = k;
    out[j] = idx;
  }
  return MTE_OK;
}

/* Pass 2, node k: name, op, references, attributes. */
static int build_node(mte_model *m, const mte_json *nodes, int32_t k, const int32_t *last_writer,
                      rt_map *node_names, rt_err *e) {
  const mte_json *n = &nodes->u.list.items[k];
  const mte_json *ins = mte_json_get(n, "inputs"), *outs = mte_json_get(n, "outputs");
  const mte_json *attrs = mte_json_get(n, "attrs");
  const char *op = mte_json_get(n, "op")->u.str.s;
  rt_node *node = &m->nodes[k];
  char where[500];
  node->name = mte_json_get(n, "name")->u.str.s;
  snprintf(where, sizeof where, "node \"%.200s\" (%.100s)", node->name, op);
  if (rt_map_put(node_names, node->name, k) >= 0)
    return rt_fail(e, MTE_EFORMAT, "%s: node name used twice", where);
  if (!(node->op = rt_op_find(op)))
    return rt_fail(e, MTE_EFORMAT, "%s: unknown op \"%.100s\"", where, op);
  int32_t *in = mte_pool_array(m->pool, ins->u.list.n, sizeof *in);
  int32_t *out = mte_pool_array(m->pool, outs->u.list.n, sizeof *out);
  rt_attr *at = mte_pool_array(m->pool, attrs->u.list.n, sizeof *at);
  if (!in || !out || !at) return rt_fail(e, MTE_ENOMEM, "out of memory");
  node->num_inputs = (int32_t)ins->u.list.n;
  node->num_outputs = (int32_t)outs->u.list.n;
  node->num_attrs = (int32_t)attrs->u.list.n;
  node->inputs = in;
  node->outputs = out;
  node->attrs = at;
  if (resolve_inputs(m, ins, k, last_writer, nodes, in, where, e) ||
      define_outputs(m, outs, k, out, where, e))
    return MTE_EFORMAT;
  for (size_t i = 0; i < attrs->u.list.n; ++i)
    if (build_attr(m, &attrs->u.list.items[i], &at[i], where, e)) return MTE_EFORMAT;
  return MTE_OK;
}

static int build_nodes(mte_model *m, const mte_json *nodes, rt_err *e) {
  if (nodes->type != MTE_JSON_ARRAY)
    return rt_fail(e, MTE_EFORMAT, "graph nodes must be a list, got a %s",
                   mte_json_type_name(nodes));
  size_t n = nodes->u.list.n;
  if (n > MTE_MODEL_MAX_NODES)
    return rt_fail(e, MTE_EFORMAT, "the graph has %zu nodes; at most %d", n, MTE_MODEL_MAX_NODES);
  int32_t *last_writer = mte_pool_array(m->pool, (size_t)m->num_values, sizeof *last_writer);
  rt_map names = {0};
  m->nodes = mte_pool_array(m->pool, n, sizeof *m->nodes);
  if (!last_writer || !m->nodes || rt_map_init(&names, m->pool, n))
    return rt_fail(e, MTE_ENOMEM, "out of memory");
  for (int32_t i = 0; i < m->num_values; ++i) last_writer[i] = -1;
  if (scan_nodes(m, nodes, last_writer, e)) return MTE_EFORMAT;
  m->num_nodes = (int32_t)n;
  for (int32_t k = 0; k < (int32_t)n; ++k)
    if (build_node(m, nodes, k, last_writer, &names, e)) return MTE_EFORMAT;
  return MTE_OK;
}

static int build_outputs(mte_model *m, const mte_json *outputs, rt_err *e) {
  if (string_list(outputs, 0, "graph outputs", e)) return MTE_EFORMAT;
  m->num_outputs = (int32_t)outputs->u.list.n;
  m->outputs = mte_pool_array(m->pool, outputs->u.list.n, sizeof *m->outputs);
  if (!m->outputs) return rt_fail(e, MTE_ENOMEM, "out of memory");
  for (size_t i = 0; i < outputs->u.list.n; ++i) {
    const char *name = outputs->u.list.items[i].u.str.s;
    int32_t idx = rt_map_get(&m->value_index, name);
    if (idx < 0 || m->values[idx].kind == RT_VALUE_UNUSED)
      return rt_fail(e, MTE_EFORMAT, "graph output \"%.200s\" is not defined by any node, input "
                     "or constant", name);
    m->outputs[i] = idx;
  }
  return MTE_OK;
}

int rt_graph_build(mte_model *m, rt_err *e) {
  size_t len;
  const char *text = rt_container_graph_text(m, &len);
  mte_json_limits lim = mte_json_default_limits();
  lim.max_elements = 1u << 23;
  char jerr[256];
  int st = mte_json_parse(text, len, &lim, &m->graph, jerr, sizeof jerr);
  if (st)
    return rt_fail(e, st == MTE_ENOMEM ? st : MTE_EFORMAT, "the graph document is not valid "
                   "JSON (%s)", jerr);
  const mte_json *g = mte_json_root(m->graph);
  if (g->type != MTE_JSON_OBJECT)
    return rt_fail(e, MTE_EFORMAT, "the graph document is a %s, not an object",
                   mte_json_type_name(g));
  if (exact_keys(g, GRAPH_KEYS, 6, "the graph document", e)) return MTE_EFORMAT;
  const mte_json *version = mte_json_get(g, "version"), *name = mte_json_get(g, "name");
  if (version->type != MTE_JSON_INT || version->u.i != MTE_MODEL_FORMAT_VERSION)
    return rt_fail(e, MTE_EFORMAT, "the graph document has version %s%lld; this runtime reads 1",
                   version->type == MTE_JSON_INT ? "" : "(not an int) ",
                   version->type == MTE_JSON_INT ? (long long)version->u.i : 0ll);
  if (name->type != MTE_JSON_STRING)
    return rt_fail(e, MTE_EFORMAT, "the graph's name must be a string");
  m->name = name->u.str.s;
  if ((st = build_values(m, mte_json_get(g, "values"), e))) return st;
  for (int32_t i = 0; i < m->num_tensors; ++i)
    if ((st = bind_constant(m, &m->tensors[i], e))) return st;
  if ((st = build_inputs(m, mte_json_get(g, "inputs"), e))) return st;
  if ((st = build_nodes(m, mte_json_get(g, "nodes"), e))) return st;
  return build_outputs(m, mte_json_get(g, "outputs"), e);
}
