/*
 * profile.c - mte-run --profile (profile.h): collect per-node times with the runtime's clock,
 * group them by op into torch.profiler's key_averages table, and write the last run as a
 * Chrome Trace Event file.
 *
 * Nodes of the runtime do not nest, so a node's self time is its total time; a row's self
 * time is the sum over its op's nodes and runs, "# of Calls" = nodes of that op x runs.
 * Times are formatted as torch.profiler formats them (12.345us, 1.234ms, 1.234s).
 */
#define _POSIX_C_SOURCE 200809L

#include "profile.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "npy.h"

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void profile_free(profile_result *r) {
  free(r->node_total);
  free(r->node_start);
  free(r->node_seconds);
  free(r->wall);
  memset(r, 0, sizeof *r);
}

int profile_collect(mte_model *m, const void *const *inputs, void *const *outputs, int runs,
                    int warmup, profile_result *r, char *err, size_t errlen) {
  memset(r, 0, sizeof *r);
  int n = mte_model_num_nodes(m);
  size_t cells = (size_t)(n ? n : 1);
  r->num_nodes = n;
  r->node_total = calloc(cells, sizeof(double));
  r->node_start = calloc(cells, sizeof(double));
  r->node_seconds = calloc(cells, sizeof(double));
  r->wall = calloc((size_t)(runs > 0 ? runs : 1), sizeof(double));
  if (!r->node_total || !r->node_start || !r->node_seconds || !r->wall || runs < 1) {
    snprintf(err, errlen, runs < 1 ? "runs must be >= 1" : "out of memory");
    return runs < 1 ? MTE_EINVAL : MTE_ENOMEM;
  }
  for (int k = 0; k < warmup; ++k) {
    int st = mte_model_run(m, inputs, outputs, err, errlen);
    if (st != MTE_OK) return st;
  }
  int st = mte_model_set_profiling(m, 1);
  if (st != MTE_OK) {
    snprintf(err, errlen, "cannot turn the per-node clock on");
    return st;
  }
  for (int k = 0; k < runs && st == MTE_OK; ++k) {
    double t0 = now_seconds();
    st = mte_model_run(m, inputs, outputs, err, errlen);
    r->wall[k] = now_seconds() - t0;
    for (int j = 0; j < n && st == MTE_OK; ++j) {
      mte_model_node_last(m, j, &r->node_start[j], &r->node_seconds[j]);
      r->node_total[j] += r->node_seconds[j];
    }
    if (st == MTE_OK) r->runs = k + 1;
  }
  mte_model_set_profiling(m, 0);
  return st;
}

/* ---- shapes as text ------------------------------------------------------------------------- */

/* "[[1, 3, 8, 8], [8, 3, 3, 3], []]": the shapes of a node's inputs (outputs: which = 1); a
 * left-out optional input is []. Truncated (with "...") at cap. */
static void node_shapes(char *buf, size_t cap, const mte_model *m, int k, int which) {
  int count = which ? mte_model_node_num_outputs(m, k) : mte_model_node_num_inputs(m, k);
  size_t at = (size_t)snprintf(buf, cap, "[");
  for (int j = 0; j < count && at < cap; ++j) {
    int v = which ? mte_model_node_output(m, k, j) : mte_model_node_input(m, k, j);
    int ndim = v < 0 ? 0 : mte_model_value_ndim(m, v);
    const int64_t *shape = v < 0 ? NULL : mte_model_value_shape(m, v);
    at += (size_t)snprintf(buf + at, cap - at, j ? ", [" : "[");
    for (int d = 0; d < ndim && at < cap; ++d)
      at += (size_t)snprintf(buf + at, cap - at, d ? ", %lld" : "%lld", (long long)shape[d]);
    if (at < cap) at += (size_t)snprintf(buf + at, cap - at, "]");
  }
  if (at < cap) snprintf(buf + at, cap - at, "]");
  else if (cap > 4) memcpy(buf + cap - 4, "...", 4);
}

/* ---- the table ------------------------------------------------------------------------------ */

typedef struct op_row {
  const char *op;
  double self;      /* seconds, all nodes of the op, all runs */
  long long calls;  /* nodes x runs */
  int first_node;   /* for the shapes column */
  int same_shapes;  /* every node of the op has the first one's input shapes */
} op_row;

static int by_self_time(const void *a, const void *b) {
  const op_row *x = a, *y = b;
  if (x->self != y->self) return x->self < y->self ? 1 : -1;
  return strcmp(x->op, y->op);
}

/* torch.autograd.profiler_util._format_time */
static void format_time(char *buf, size_t cap, double seconds) {
  double us = seconds * 1e6;
  if (us >= 1e6) snprintf(buf, cap, "%.3fs", us / 1e6);
  else if (us >= 1e3) snprintf(buf, cap, "%.3fms", us / 1e3);
  else snprintf(buf, cap, "%.3fus", us);
}

static void format_percent(char *buf, size_t cap, double part, double whole) {
  snprintf(buf, cap, "%.2f%%", whole > 0 ? 100.0 * part / whole : 0.0);
}

static void dashes(FILE *f, int name_width, int columns, int shapes_width) {
  for (int i = 0; i < name_width; ++i) fputc('-', f);
  for (int c = 0; c < columns; ++c) fputs("  ------------", f);
  fputs("  ", f);
  for (int i = 0; i < shapes_width; ++i) fputc('-', f);
  fputc('\n', f);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void profile_print_table(FILE *f, const mte_model *m, const profile_result *r) {
  int n = r->num_nodes, rows = 0;
  op_row *row = calloc((size_t)(n ? n : 1), sizeof *row);
  char shapes[512], other[512];
  if (!row) return;
  double total = 0.0;
  for (int k = 0; k < n; ++k) {
    const char *op = mte_model_node_op(m, k);
    int i = 0;
    while (i < rows && strcmp(row[i].op, op)) ++i;
    if (i == rows) row[rows++] = (op_row){op, 0.0, 0, k, 1};
    row[i].self += r->node_total[k];
    row[i].calls += r->runs;
    total += r->node_total[k];
    if (row[i].same_shapes && row[i].first_node != k) {
      node_shapes(shapes, sizeof shapes, m, row[i].first_node, 0);
      node_shapes(other, sizeof other, m, k, 0);
      row[i].same_shapes = !strcmp(shapes, other);
    }
  }
  qsort(row, (size_t)rows, sizeof *row, by_self_time);
  int name_width = 4, shapes_width = 12;
  for (int i = 0; i < rows; ++i) {
    int len = (int)strlen(row[i].op);
    if (len > name_width) name_width = len;
    if (row[i].same_shapes) node_shapes(shapes, sizeof shapes, m, row[i].first_node, 0);
    else snprintf(shapes, sizeof shapes, "(various)");
    if ((int)strlen(shapes) > shapes_width) shapes_width = (int)strlen(shapes);
  }
  static const char *HEAD[] = {"Self CPU %", "Self CPU", "CPU total %", "CPU total",
                               "CPU time avg", "# of Calls"};
  dashes(f, name_width, 6, shapes_width);
  fprintf(f, "%-*s", name_width, "Name");
  for (int c = 0; c < 6; ++c) fprintf(f, "  %12s", HEAD[c]);
  fprintf(f, "  %-*s\n", shapes_width, "Input Shapes");
  dashes(f, name_width, 6, shapes_width);
  for (int i = 0; i < rows; ++i) {
    char pct[32], self[32], avg[32];
    format_percent(pct, sizeof pct, row[i].self, total);
    format_time(self, sizeof self, row[i].self);
    format_time(avg, sizeof avg, row[i].calls ? row[i].self / (double)row[i].calls : 0.0);
    if (row[i].same_shapes) node_shapes(shapes, sizeof shapes, m, row[i].first_node, 0);
    else snprintf(shapes, sizeof shapes, "(various)");
    /* no nesting: the total columns repeat the self ones */
    fprintf(f, "%-*s  %12s  %12s  %12s  %12s  %12s  %12lld  %-*s\n", name_width, row[i].op, pct,
            self, pct, self, avg, row[i].calls, shapes_width, shapes);
  }
  dashes(f, name_width, 6, shapes_width);
  char text[32];
  format_time(text, sizeof text, total);
  fprintf(f, "Self CPU time total: %s\n", text);
  double *wall = malloc((size_t)(r->runs ? r->runs : 1) * sizeof *wall);
  if (wall && r->runs) {
    double sum = 0.0;
    for (int k = 0; k < r->runs; ++k) sum += wall[k] = r->wall[k];
    qsort(wall, (size_t)r->runs, sizeof *wall, cmp_double);
    double median = r->runs % 2 ? wall[r->runs / 2]
                                : (wall[r->runs / 2 - 1] + wall[r->runs / 2]) / 2;
    char mean_t[32], median_t[32], min_t[32];
    format_time(mean_t, sizeof mean_t, sum / r->runs);
    format_time(median_t, sizeof median_t, median);
    format_time(min_t, sizeof min_t, wall[0]);
    fprintf(f, "Wall time per run: mean %s, median %s, min %s (%d runs, %d threads)\n", mean_t,
            median_t, min_t, r->runs, mte_get_num_threads());
    fprintf(f, "Coverage: %.1f%% of the wall time is inside nodes\n",
            sum > 0 ? 100.0 * total / sum : 0.0);
  }
  free(wall);
  free(row);
}

/* ---- the Chrome trace ----------------------------------------------------------------------- */

typedef struct text_buf {
  char *s;
  size_t len, cap;
  int failed;
} text_buf;

static void put(text_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void put(text_buf *b, const char *fmt, ...) {
  if (b->failed) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
    va_end(ap);
    if (k < 0) {
      b->failed = 1;
      return;
    }
    if (b->s && b->len + (size_t)k < b->cap) {
      b->len += (size_t)k;
      return;
    }
    size_t cap = (b->cap ? b->cap * 2 : 4096) + (size_t)k;
    char *s = realloc(b->s, cap);
    if (!s) {
      b->failed = 1;
      return;
    }
    b->s = s;
    b->cap = cap;
  }
}

/* A JSON string: quotes, backslashes and control characters escaped. */
static void put_string(text_buf *b, const char *s) {
  put(b, "\"");
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; ++p) {
    if (*p == '"' || *p == '\\') put(b, "\\%c", *p);
    else if (*p < 0x20) put(b, "\\u%04x", *p);
    else put(b, "%c", *p);
  }
  put(b, "\"");
}

/* Nanoseconds as microseconds with three decimals, exactly. */
static void put_us(text_buf *b, long long ns) { put(b, "%lld.%03lld", ns / 1000, ns % 1000); }

int profile_write_trace(const char *path, const mte_model *m, const profile_result *r,
                        char *err, size_t errlen) {
  if (!r->runs) {
    snprintf(err, errlen, "no profiled run to write");
    return MTE_EINVAL;
  }
  /* integer nanoseconds keep the nesting exact: each node starts at or after the previous
   * node's end, and the run's event ends at or after the last node's */
  text_buf b = {0};
  char shapes[4096];
  put(&b, "{\"displayTimeUnit\": \"ms\", \"otherData\": {\"model\": ");
  put_string(&b, mte_model_name(m));
  put(&b, ", \"runs_profiled\": %d, \"threads\": %d},\n\"traceEvents\": [\n", r->runs,
      mte_get_num_threads());
  long long prev_end = 0;
  for (int k = 0; k < r->num_nodes; ++k) {
    long long ts = llround(r->node_start[k] * 1e9);
    long long end = llround((r->node_start[k] + r->node_seconds[k]) * 1e9);
    if (ts < prev_end) ts = prev_end;
    if (end < ts) end = ts;
    prev_end = end;
    put(&b, "{\"name\": ");
    put_string(&b, mte_model_node_name(m, k));
    put(&b, ", \"cat\": \"node\", \"ph\": \"X\", \"pid\": 0, \"tid\": 0, \"ts\": ");
    put_us(&b, ts);
    put(&b, ", \"dur\": ");
    put_us(&b, end - ts);
    put(&b, ", \"args\": {\"node\": %d, \"op\": ", k);
    put_string(&b, mte_model_node_op(m, k));
    put(&b, ", \"kernel\": ");
    put_string(&b, mte_model_node_kernel(m, k));
    node_shapes(shapes, sizeof shapes, m, k, 0);
    put(&b, ", \"input_shapes\": ");
    put_string(&b, shapes);
    node_shapes(shapes, sizeof shapes, m, k, 1);
    put(&b, ", \"output_shapes\": ");
    put_string(&b, shapes);
    put(&b, "}},\n");
  }
  long long wall = llround(r->wall[r->runs - 1] * 1e9);
  if (wall < prev_end) wall = prev_end;
  put(&b, "{\"name\": \"mte_model_run\", \"cat\": \"run\", \"ph\": \"X\", \"pid\": 0, \"tid\": 0, "
          "\"ts\": 0.000, \"dur\": ");
  put_us(&b, wall);
  put(&b, ", \"args\": {\"nodes\": %d}}\n]}\n", r->num_nodes);
  int st;
  if (b.failed) {
    snprintf(err, errlen, "out of memory");
    st = MTE_ENOMEM;
  } else {
    st = npy_write_atomic(path, b.s, b.len, NULL, 0, err, errlen);
  }
  free(b.s);
  return st;
}
