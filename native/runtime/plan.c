/*
 * plan.c - stage 3 of the loader: the memory plan, the algorithm of
 * minitorch_edge/graph/planner.py step for step (so C and Python give the same arena size
 * and offsets for the same graph):
 *
 * 1. Liveness: node k is step k; a value written at step d and last read at step u (a graph
 *    output: at step `steps`, by the caller) is alive over [d, u]. Graph inputs and constants
 *    are outside the arena.
 * 2. Buffers: an alias op's output 0 joins input 0's buffer (or, when that input is outside
 *    the arena, is outside too); an elementwise op's output 0 takes over the buffer of an
 *    input that dies at this step, has the same shape and dtype and is not a graph output
 *    (the first such input); every other output gets a new buffer of its size rounded up to
 *    64 bytes. A buffer lives from its first value's step to its values' last use.
 * 3. Placement, greedy by size with best fit: buffers by decreasing size (then start step,
 *    then creation order: Python's stable sort); each goes into the smallest gap between the
 *    placed buffers alive at the same time where it fits, else after the highest of them.
 *
 * The placed buffers are kept sorted by (offset, end), so each placement is one linear scan
 * (Python sorts the overlapping ones each time: the same sequence of gaps).
 */
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

typedef struct plan_state {
  mte_model *m;
  int32_t *last_use; /* per value, -1: never read */
  int32_t *owner;    /* per value: its buffer, -1 */
  unsigned char *is_output;
} plan_state;

static int is_outside(const rt_value *v) {
  return v->kind == RT_VALUE_INPUT || v->kind == RT_VALUE_CONSTANT ||
         v->kind == RT_VALUE_VIEW_OUTSIDE;
}

static int same_spec(const rt_value *a, const rt_value *b) {
  if (a->dtype != b->dtype || a->ndim != b->ndim) return 0;
  return memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof *a->shape) == 0;
}

/* planner.py's _dying_input: an input of node k whose buffer ends by step k, that output
 * `out` may overwrite; -1 if none. (Python also checks every value of the buffer is last
 * read by step k; that follows from the buffer's end.) */
static int32_t dying_input(const plan_state *s, const rt_node *node, int32_t k, int32_t out) {
  const mte_model *m = s->m;
  for (int32_t j = 0; j < node->num_inputs; ++j) {
    int32_t in = node->inputs[j];
    if (in < 0 || is_outside(&m->values[in]) || s->is_output[in]) continue;
    const rt_buffer *buf = &m->buffers[s->owner[in]];
    if (same_spec(&m->values[in], &m->values[out]) && buf->end <= k) return in;
  }
  return -1;
}

static int new_buffer(mte_model *m, int32_t value, int32_t k, rt_err *e) {
  int64_t n = m->values[value].nbytes, aligned;
  if (!rt_add64(n, MTE_MODEL_ARENA_ALIGN - 1, &aligned))
    return rt_fail(e, MTE_EFORMAT, "value \"%.200s\": its size overflows the memory plan",
                   m->values[value].name);
  rt_buffer *b = &m->buffers[m->num_buffers];
  b->nbytes = aligned / MTE_MODEL_ARENA_ALIGN * MTE_MODEL_ARENA_ALIGN;
  b->start = b->end = k;
  b->first_value = value;
  b->offset = -1;
  return m->num_buffers++;
}

/* Steps 1 and 2: liveness and buffers. */
static int assign_buffers(plan_state *s, rt_err *e) {
  mte_model *m = s->m;
  for (int32_t k = 0; k < m->num_nodes; ++k)
    for (int32_t j = 0; j < m->nodes[k].num_inputs; ++j)
      if (m->nodes[k].inputs[j] >= 0) s->last_use[m->nodes[k].inputs[j]] = k;
  for (int32_t i = 0; i < m->num_outputs; ++i) {
    s->last_use[m->outputs[i]] = m->num_nodes;
    s->is_output[m->outputs[i]] = 1;
  }
  for (int32_t k = 0; k < m->num_nodes; ++k) {
    const rt_node *node = &m->nodes[k];
    int32_t src = node->num_inputs ? node->inputs[0] : -1;
    for (int32_t j = 0; j < node->num_outputs; ++j) {
      int32_t out = node->outputs[j], buf = -1, dying;
      rt_value *v = &m->values[out];
      if (!rt_add64(m->naive_bytes, v->nbytes, &m->naive_bytes))
        return rt_fail(e, MTE_EFORMAT, "the values' sizes overflow int64");
      int32_t end = s->last_use[out] >= 0 ? s->last_use[out] : k;
      if (node->op->alias && j == 0 && src >= 0) {
        v->view_of = src;
        if (is_outside(&m->values[src])) {
          v->kind = RT_VALUE_VIEW_OUTSIDE;
          continue;
        }
        buf = s->owner[src];
      } else if (node->op->elementwise && j == 0 && (dying = dying_input(s, node, k, out)) >= 0) {
        buf = s->owner[dying];
      } else if ((buf = new_buffer(m, out, k, e)) < 0) {
        return MTE_EFORMAT;
      }
      if (m->buffers[buf].end < end) m->buffers[buf].end = end;
      s->owner[out] = buf;
    }
  }
  return MTE_OK;
}

typedef struct sort_key {
  int64_t nbytes;
  int32_t start, index;
} sort_key;

static int by_size(const void *a, const void *b) {
  const sort_key *x = a, *y = b;
  if (x->nbytes != y->nbytes) return x->nbytes > y->nbytes ? -1 : 1;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index; /* stable, as Python's sort */
}

/* Step 3: greedy by size, best fit. */
static int place(mte_model *m, rt_err *e) {
  int32_t n = m->num_buffers, placed = 0;
  sort_key *order = malloc((size_t)(n ? n : 1) * sizeof *order);
  int32_t *by_offset = malloc((size_t)(n ? n : 1) * sizeof *by_offset);
  if (!order || !by_offset) {
    free(order);
    free(by_offset);
    return rt_fail(e, MTE_ENOMEM, "out of memory planning the arena");
  }
  for (int32_t i = 0; i < n; ++i) {
    order[i].nbytes = m->buffers[i].nbytes;
    order[i].start = m->buffers[i].start;
    order[i].index = i;
  }
  qsort(order, (size_t)n, sizeof *order, by_size);
  int st = MTE_OK;
  for (int32_t i = 0; i < n && st == MTE_OK; ++i) {
    rt_buffer *buf = &m->buffers[order[i].index];
    int64_t best = -1, best_gap = -1, cursor = 0;
    for (int32_t p = 0; p < placed; ++p) {
      const rt_buffer *q = &m->buffers[by_offset[p]];
      if (!(q->start <= buf->end && buf->start <= q->end)) continue;
      int64_t gap = q->offset - cursor, hi = q->offset + q->nbytes;
      if (gap >= buf->nbytes && (best_gap < 0 || gap < best_gap)) {
        best = cursor;
        best_gap = gap;
      }
      if (hi > cursor) cursor = hi;
    }
    buf->offset = best >= 0 ? best : cursor;
    int64_t top;
    if (!rt_add64(buf->offset, buf->nbytes, &top)) {
      st = rt_fail(e, MTE_EFORMAT, "the memory plan overflows int64");
      break;
    }
    if (top > m->arena_bytes) m->arena_bytes = top;
    int32_t at = placed; /* insert, keeping (offset, end) order */
    while (at > 0) {
      const rt_buffer *q = &m->buffers[by_offset[at - 1]];
      if (q->offset < buf->offset || (q->offset == buf->offset && q->nbytes <= buf->nbytes)) break;
      by_offset[at] = by_offset[at - 1];
      --at;
    }
    by_offset[at] = order[i].index;
    ++placed;
  }
  free(order);
  free(by_offset);
  return st;
}

/* The most bytes alive at one step (planner.py's _lower_bound), by a difference array. */
static int lower_bound(mte_model *m, rt_err *e) {
  int64_t *delta = calloc((size_t)m->num_nodes + 2, sizeof *delta);
  if (!delta) return rt_fail(e, MTE_ENOMEM, "out of memory");
  for (int32_t i = 0; i < m->num_buffers; ++i) {
    delta[m->buffers[i].start] += m->buffers[i].nbytes; /* each <= arena: no overflow */
    delta[m->buffers[i].end + 1] -= m->buffers[i].nbytes;
  }
  int64_t alive = 0;
  for (int32_t k = 0; k <= m->num_nodes; ++k) {
    alive += delta[k];
    if (alive > m->lower_bound_bytes) m->lower_bound_bytes = alive;
  }
  free(delta);
  return MTE_OK;
}

int rt_plan_build(mte_model *m, rt_err *e) {
  plan_state s = {m, NULL, NULL, NULL};
  size_t nv = (size_t)m->num_values;
  int32_t outs = 0;
  for (int32_t k = 0; k < m->num_nodes; ++k) outs += m->nodes[k].num_outputs;
  s.last_use = malloc((nv ? nv : 1) * sizeof *s.last_use);
  s.owner = malloc((nv ? nv : 1) * sizeof *s.owner);
  s.is_output = calloc(nv ? nv : 1, 1);
  m->buffers = mte_pool_array(m->pool, (size_t)outs, sizeof *m->buffers);
  int st = MTE_OK;
  if (!s.last_use || !s.owner || !s.is_output || !m->buffers) {
    st = rt_fail(e, MTE_ENOMEM, "out of memory planning the arena");
  } else {
    for (size_t i = 0; i < nv; ++i) s.last_use[i] = s.owner[i] = -1;
    st = assign_buffers(&s, e);
    if (st == MTE_OK) st = place(m, e);
    if (st == MTE_OK) st = lower_bound(m, e);
    for (size_t i = 0; st == MTE_OK && i < nv; ++i) {
      if (s.owner[i] < 0) continue;
      m->values[i].buffer = s.owner[i];
      m->values[i].offset = m->buffers[s.owner[i]].offset;
    }
  }
  free(s.last_use);
  free(s.owner);
  free(s.is_output);
  return st;
}
