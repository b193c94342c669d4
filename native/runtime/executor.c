/*
 * executor.c - running a loaded model: each node prepared once at load time (its op's
 * prepare function checks it, re-infers its outputs and chooses a kernel, kernels.h), then
 * mte_model_run walks the steps in order over one arena allocated with the model.
 *
 * Where a value lives during a run (ptr[v]): a graph input is the caller's buffer, a
 * constant points into the file, a value a node writes is arena + its planned offset, and a
 * view (Reshape, Flatten, ...) of an input or constant is that value's memory. The plan
 * (plan.c) already put in-place and view outputs at their input's offset, so a view op's run
 * does nothing and an elementwise op may find its output over one of its inputs.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels.h"

/* ---- reading the node, for the prepare functions ----------------------------------------- */

const rt_value *rt_input(const rt_prep *p, int i) {
  if (i < 0 || i >= p->node->num_inputs || p->node->inputs[i] < 0) return NULL;
  return &p->model->values[p->node->inputs[i]];
}

const rt_value *rt_output(const rt_prep *p, int i) {
  return &p->model->values[p->node->outputs[i]];
}

const void *rt_const_data(const rt_prep *p, int i) {
  const rt_value *v = rt_input(p, i);
  return v && v->kind == RT_VALUE_CONSTANT ? v->data : NULL;
}

int rt_node_fail(const rt_prep *p, int status, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return rt_fail(p->err, status, "node \"%.200s\" (%s): %s", p->node->name, p->node->op->name,
                 msg);
}

int rt_expect_arity(const rt_prep *p, int required, int max_inputs, int outputs) {
  const rt_node *n = p->node;
  if (n->num_inputs < required || n->num_inputs > max_inputs)
    return rt_node_fail(p, MTE_EFORMAT, "takes %d to %d inputs, has %d", required, max_inputs,
                        n->num_inputs);
  for (int i = 0; i < required; ++i)
    if (n->inputs[i] < 0) return rt_node_fail(p, MTE_EFORMAT, "input %d is required", i);
  if (n->num_outputs != outputs)
    return rt_node_fail(p, MTE_EFORMAT, "has %d outputs, the op makes %d", n->num_outputs,
                        outputs);
  return MTE_OK;
}

int rt_expect_dtype(const rt_prep *p, int i, mte_dtype dtype) {
  const rt_value *v = rt_input(p, i);
  if (!v) return rt_node_fail(p, MTE_EFORMAT, "input %d is missing", i);
  if (v->dtype != dtype)
    return rt_node_fail(p, MTE_EFORMAT, "input %d (\"%.200s\") must be %s, is %s", i, v->name,
                        mte_dtype_name(dtype), mte_dtype_name(v->dtype));
  return MTE_OK;
}

int rt_expect_const(const rt_prep *p, int i) {
  const rt_value *v = rt_input(p, i);
  if (!v || v->kind != RT_VALUE_CONSTANT)
    return rt_node_fail(p, MTE_EUNSUPPORTED,
                        "input %d must be a constant in the C runtime (it is computed)", i);
  return MTE_OK;
}

static void shape_text(char *buf, size_t len, int ndim, const int64_t *shape) {
  size_t at = (size_t)snprintf(buf, len, "[");
  for (int d = 0; d < ndim && at < len; ++d)
    at += (size_t)snprintf(buf + at, len - at, d ? ", %lld" : "%lld", (long long)shape[d]);
  if (at < len) snprintf(buf + at, len - at, "]");
}

int rt_expect_output(const rt_prep *p, int i, mte_dtype dtype, int ndim, const int64_t *shape) {
  const rt_value *v = rt_output(p, i);
  int same = v->dtype == dtype && v->ndim == ndim &&
             (ndim == 0 || memcmp(v->shape, shape, (size_t)ndim * sizeof *shape) == 0);
  if (same) return MTE_OK;
  char want[256], got[256];
  shape_text(want, sizeof want, ndim, shape);
  shape_text(got, sizeof got, v->ndim, v->shape);
  return rt_node_fail(p, MTE_EFORMAT, "output \"%.200s\" is declared %s%s, the op gives %s%s",
                      v->name, mte_dtype_name(v->dtype), got, mte_dtype_name(dtype), want);
}

int rt_expect_output_like(const rt_prep *p, int i, int j) {
  const rt_value *in = rt_input(p, j);
  if (!in) return rt_node_fail(p, MTE_EFORMAT, "input %d is missing", j);
  return rt_expect_output(p, i, in->dtype, in->ndim, in->shape);
}

int rt_expect_vector(const rt_prep *p, int i, int64_t n, int optional, const char *what) {
  const rt_value *v = rt_input(p, i);
  if (!v) return optional ? MTE_OK : rt_node_fail(p, MTE_EFORMAT, "%s is required", what);
  if (v->dtype != MTE_DTYPE_FLOAT32 || v->ndim != 1 || v->shape[0] != n)
    return rt_node_fail(p, MTE_EFORMAT, "%s must be float32 [%lld], is %s with %d dims", what,
                        (long long)n, mte_dtype_name(v->dtype), v->ndim);
  return MTE_OK;
}

static int attr_type_fail(const rt_prep *p, const char *name, const char *want) {
  return rt_node_fail(p, MTE_EFORMAT, "attribute \"%s\" must be %s", name, want);
}

int rt_attr_int(const rt_prep *p, const char *name, int64_t dflt, int64_t *out) {
  const rt_attr *a = rt_node_attr(p->node, name);
  if (!a) {
    *out = dflt;
    return MTE_OK;
  }
  if (a->type != RT_ATTR_INT && a->type != RT_ATTR_BOOL) return attr_type_fail(p, name, "an int");
  *out = a->i;
  return MTE_OK;
}

int rt_attr_float(const rt_prep *p, const char *name, double dflt, double *out) {
  const rt_attr *a = rt_node_attr(p->node, name);
  if (!a) {
    *out = dflt;
    return MTE_OK;
  }
  if (a->type == RT_ATTR_FLOAT)
    *out = a->f;
  else if (a->type == RT_ATTR_INT)
    *out = (double)a->i;
  else
    return attr_type_fail(p, name, "a number");
  return MTE_OK;
}

int rt_attr_string(const rt_prep *p, const char *name, const char *dflt, const char **out) {
  const rt_attr *a = rt_node_attr(p->node, name);
  if (!a) {
    *out = dflt;
    return MTE_OK;
  }
  if (a->type != RT_ATTR_STRING) return attr_type_fail(p, name, "a string");
  *out = a->s;
  return MTE_OK;
}

int rt_attr_ints(const rt_prep *p, const char *name, int64_t n, const int64_t *dflt,
                 const int64_t **out, int64_t *len) {
  const rt_attr *a = rt_node_attr(p->node, name);
  if (!a) {
    *out = dflt;
    if (len) *len = n < 0 ? 0 : n;
    return MTE_OK;
  }
  if (a->type != RT_ATTR_INTS) return attr_type_fail(p, name, "a list of ints");
  if (n >= 0 && a->n != n)
    return rt_node_fail(p, MTE_EFORMAT, "attribute \"%s\" must have %lld entries, has %lld", name,
                        (long long)n, (long long)a->n);
  if (n < 0 && a->n > -n)
    return rt_node_fail(p, MTE_EFORMAT, "attribute \"%s\" has %lld entries, at most %lld", name,
                        (long long)a->n, (long long)-n);
  *out = a->ints;
  if (len) *len = a->n;
  return MTE_OK;
}

void *rt_state_alloc(const rt_prep *p, size_t bytes) {
  void *s = mte_pool_alloc(p->model->pool, bytes ? bytes : 1, 0);
  if (!s) {
    rt_node_fail(p, MTE_ENOMEM, "out of memory for %zu bytes of state", bytes);
    return NULL;
  }
  p->step->prepared_bytes += (int64_t)bytes;
  return s;
}

void *rt_state_alloc_aligned(const rt_prep *p, size_t bytes) {
  void *s = mte_pool_alloc(p->model->pool, bytes ? bytes : 1, 1);
  if (!s) {
    rt_node_fail(p, MTE_ENOMEM, "out of memory for %zu bytes of prepared weights", bytes);
    return NULL;
  }
  p->step->prepared_bytes += (int64_t)bytes;
  return s;
}

/* ---- load time: the arena and the steps ------------------------------------------------- */

void rt_exec_release(mte_model *m) {
  if (m->steps)
    for (int32_t k = 0; k < m->num_nodes; ++k)
      if (m->steps[k].release && m->steps[k].state) m->steps[k].release(m->steps[k].state);
  free(m->arena);
  free(m->ptr);
  free(m->node_seconds);
  m->node_seconds = m->node_start = m->node_last = NULL; /* one block (set_profiling) */
  m->steps = NULL;
  m->arena = NULL;
  m->ptr = NULL;
}

int rt_exec_prepare(mte_model *m, rt_err *e) {
  size_t arena = (size_t)m->arena_bytes;
  m->arena = aligned_alloc(64, (arena + 63) / 64 * 64 + 64);
  m->ptr = calloc((size_t)(m->num_values ? m->num_values : 1), sizeof *m->ptr);
  m->steps = mte_pool_array(m->pool, (size_t)(m->num_nodes ? m->num_nodes : 1), sizeof *m->steps);
  if (!m->arena || !m->ptr || !m->steps)
    return rt_fail(e, MTE_ENOMEM, "out of memory for the %lld-byte arena", (long long)arena);
  for (int32_t v = 0; v < m->num_values; ++v) {
    const rt_value *val = &m->values[v];
    if (val->kind == RT_VALUE_CONSTANT) m->ptr[v] = (void *)val->data;
    else if (val->kind == RT_VALUE_NODE && val->offset >= 0) m->ptr[v] = m->arena + val->offset;
  }
  m->prepared_bytes = 0;
  for (int32_t k = 0; k < m->num_nodes; ++k) {
    rt_step *s = &m->steps[k];
    s->model = m;
    s->node = &m->nodes[k];
    rt_prep p = {m, &m->nodes[k], s, e};
    if (!s->node->op->prepare)
      return rt_node_fail(&p, MTE_EUNSUPPORTED, "the C runtime has no kernel for this op");
    int st = s->node->op->prepare(&p);
    if (st != MTE_OK) {
      if (e->buf && e->len && !e->buf[0]) rt_node_fail(&p, st, "cannot be prepared");
      return st;
    }
    if (!s->run) return rt_node_fail(&p, MTE_EUNSUPPORTED, "no kernel was chosen");
    m->prepared_bytes += s->prepared_bytes;
  }
  return MTE_OK;
}

/* ---- run time ------------------------------------------------------------------------------ */

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int mte_model_run(mte_model *m, const void *const *inputs, void *const *outputs, char *err,
                  size_t errlen) {
  rt_err e = {err, errlen};
  if (err && errlen) err[0] = 0;
  if (!m || (!inputs && m->num_inputs) || (!outputs && m->num_outputs))
    return rt_fail(&e, MTE_EINVAL, "model, inputs or outputs is NULL");
  for (int32_t i = 0; i < m->num_inputs; ++i) {
    if (!inputs[i] && m->values[m->inputs[i]].nbytes)
      return rt_fail(&e, MTE_EINVAL, "input %d (\"%.200s\") is NULL", i,
                     m->values[m->inputs[i]].name);
    m->ptr[m->inputs[i]] = (void *)inputs[i];
  }
  for (int32_t i = 0; i < m->num_outputs; ++i)
    if (!outputs[i] && m->values[m->outputs[i]].nbytes)
      return rt_fail(&e, MTE_EINVAL, "output %d (\"%.200s\") is NULL", i,
                     m->values[m->outputs[i]].name);
  double run_start = m->profiling ? now_seconds() : 0.0;
  if (m->profiling) m->profiled_runs++;
  for (int32_t k = 0; k < m->num_nodes; ++k) {
    const rt_step *s = &m->steps[k];
    const rt_node *n = s->node;
    for (int32_t j = 0; j < n->num_outputs; ++j) { /* a view of an input or constant */
      const rt_value *v = &m->values[n->outputs[j]];
      if (v->kind == RT_VALUE_VIEW_OUTSIDE) m->ptr[n->outputs[j]] = m->ptr[v->view_of];
    }
    int st;
    if (m->profiling) { /* the one branch per node that profiling costs when it is off */
      double t0 = now_seconds();
      st = s->run(s, m->ptr);
      double t1 = now_seconds();
      m->node_start[k] = t0 - run_start;
      m->node_last[k] = t1 - t0;
      m->node_seconds[k] += t1 - t0;
    } else {
      st = s->run(s, m->ptr);
    }
    if (st != MTE_OK)
      return rt_fail(&e, st, "node \"%.200s\" (%s, %s): the kernel failed: %s", n->name,
                     n->op->name, s->kernel ? s->kernel : "?", mte_runtime_status_string(st));
  }
  for (int32_t i = 0; i < m->num_outputs; ++i) {
    const rt_value *v = &m->values[m->outputs[i]];
    if (v->nbytes) memmove(outputs[i], m->ptr[m->outputs[i]], (size_t)v->nbytes);
  }
  return MTE_OK;
}

/* The three per-node arrays as one block, allocated when profiling is first turned on. */
int mte_model_set_profiling(mte_model *m, int on) {
  if (!m) return MTE_EINVAL;
  if (on && !m->node_seconds) {
    size_t n = (size_t)(m->num_nodes ? m->num_nodes : 1);
    double *block = calloc(3 * n, sizeof(double));
    if (!block) return MTE_ENOMEM;
    m->node_seconds = block;
    m->node_start = block + n;
    m->node_last = block + 2 * n;
  }
  if (on && !m->profiling) m->profiled_runs = 0;
  m->profiling = on != 0;
  return MTE_OK;
}

int mte_model_profile(mte_model *m, int on) {
  int st = mte_model_set_profiling(m, on);
  if (st == MTE_OK && on) memset(m->node_seconds, 0, (size_t)m->num_nodes * sizeof(double));
  return st;
}

int mte_model_node_last(const mte_model *m, int k, double *start_seconds, double *seconds) {
  if (!m || !start_seconds || !seconds || k < 0 || k >= m->num_nodes || !m->profiling ||
      !m->profiled_runs)
    return MTE_EINVAL;
  *start_seconds = m->node_start[k];
  *seconds = m->node_last[k];
  return MTE_OK;
}

double mte_model_node_seconds(const mte_model *m, int k) {
  return m && m->node_seconds && k >= 0 && k < m->num_nodes ? m->node_seconds[k] : 0.0;
}

int64_t mte_model_prepared_bytes(const mte_model *m) { return m ? m->prepared_bytes : -1; }

static const rt_node *node_at(const mte_model *m, int k) {
  return m && k >= 0 && k < m->num_nodes ? &m->nodes[k] : NULL;
}

const char *mte_model_node_name(const mte_model *m, int k) {
  const rt_node *n = node_at(m, k);
  return n ? n->name : NULL;
}

const char *mte_model_node_op(const mte_model *m, int k) {
  const rt_node *n = node_at(m, k);
  return n ? n->op->name : NULL;
}

const char *mte_model_node_kernel(const mte_model *m, int k) {
  return node_at(m, k) && m->steps ? m->steps[k].kernel : NULL;
}

int mte_model_node_num_inputs(const mte_model *m, int k) {
  const rt_node *n = node_at(m, k);
  return n ? n->num_inputs : -1;
}

int mte_model_node_input(const mte_model *m, int k, int j) {
  const rt_node *n = node_at(m, k);
  return n && j >= 0 && j < n->num_inputs ? n->inputs[j] : -1;
}

int mte_model_node_num_outputs(const mte_model *m, int k) {
  const rt_node *n = node_at(m, k);
  return n ? n->num_outputs : -1;
}

int mte_model_node_output(const mte_model *m, int k, int j) {
  const rt_node *n = node_at(m, k);
  return n && j >= 0 && j < n->num_outputs ? n->outputs[j] : -1;
}
