/*
 * mte_run.c - mte-run, the command-line front end of the C runtime: load a .mte model, feed
 * it .npy inputs (checked against the model's dtypes and shapes), run it, write its outputs
 * as .npy files, and optionally time it (--bench), time each node (--profile, profile.c:
 * torch.profiler's table, a Chrome trace with --profile-json) or describe it (--info).
 *
 *   mte-run model.mte --input x.npy [--input name=y.npy ...] --output out.npy [...]
 *           [--threads N] [--bench R] [--warmup W] [--info] [--profile] [--profile-json P]
 *
 * Exit status: 0 ok, 2 usage error, 1 model or input error. Every message on stderr starts
 * with "mte-run: ". Outputs are written only after a successful run, each atomically.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mte_runtime.h"
#include "npy.h"
#include "profile.h"

enum { EXIT_USAGE = 2, EXIT_ERROR = 1 };

static const char USAGE[] =
    "usage: mte-run MODEL.mte [--input [NAME=]X.npy ...] [--output [NAME=]Y.npy ...]\n"
    "               [--threads N] [--bench R] [--warmup W] [--info]\n"
    "               [--profile] [--profile-json TRACE.json]\n"
    "\n"
    "  --input [NAME=]PATH   an input, in the graph's order (or bound to input NAME)\n"
    "  --output [NAME=]PATH  where to write an output (.npy), in the graph's order (or NAME's)\n"
    "  --threads N           kernel threads (mte_set_num_threads)\n"
    "  --bench R             time R runs after the warmup and print the latency in ms\n"
    "  --warmup W            untimed runs before --bench's (default 3)\n"
    "  --info                print the model's inputs, outputs, memory and kernels\n"
    "  --profile             time every node over R runs (--bench R, default 20) after the\n"
    "                        warmup and print torch.profiler's table: one row per op, sorted\n"
    "                        by self time, then the total, the wall time per run and the\n"
    "                        coverage (time inside nodes / wall time)\n"
    "  --profile-json PATH   (implies --profile) write the last profiled run as a Chrome\n"
    "                        trace (chrome://tracing, Perfetto): one event per node\n"
    "exit status: 0 ok, 1 model or input error, 2 usage error\n";

typedef struct options {
  const char *model;
  const char **inputs, **outputs; /* as given: "path" or "name=path" */
  int num_inputs, num_outputs;
  int threads, bench, warmup, info, profile;
  const char *profile_json;
} options;

enum { PROFILE_RUNS = 20 }; /* --profile's runs without --bench */

static void say(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("mte-run: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* ---- the command line ----------------------------------------------------------------------- */

static int parse_count(const char *opt, const char *text, int min, int *out) {
  char *end;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno || end == text || *end || v < min || v > INT_MAX / 2) {
    say("%s needs an integer >= %d, got '%s'", opt, min, text);
    return -1;
  }
  *out = (int)v;
  return 0;
}

static int parse_option(options *o, int argc, char **argv, int *k) {
  const char *a = argv[*k];
  int wants_value = !strcmp(a, "--input") || !strcmp(a, "--output") ||
                    !strcmp(a, "--threads") || !strcmp(a, "--bench") || !strcmp(a, "--warmup") ||
                    !strcmp(a, "--profile-json");
  if (!strcmp(a, "--info")) {
    o->info = 1;
    return 0;
  }
  if (!strcmp(a, "--profile")) {
    o->profile = 1;
    return 0;
  }
  if (!wants_value) {
    say("unknown option '%s' (see mte-run --help)", a);
    return -1;
  }
  if (*k + 1 >= argc) {
    say("%s needs a value", a);
    return -1;
  }
  const char *v = argv[++*k];
  if (!strcmp(a, "--profile-json")) {
    if (!*v || !strncmp(v, "--", 2)) {
      say("--profile-json needs a file path, got '%s'", v);
      return -1;
    }
    o->profile_json = v;
    o->profile = 1;
    return 0;
  }
  if (!strcmp(a, "--input")) o->inputs[o->num_inputs++] = v;
  else if (!strcmp(a, "--output")) o->outputs[o->num_outputs++] = v;
  else if (!strcmp(a, "--threads")) return parse_count(a, v, 1, &o->threads);
  else if (!strcmp(a, "--bench")) return parse_count(a, v, 1, &o->bench);
  else return parse_count(a, v, 0, &o->warmup);
  return 0;
}

static int parse_args(options *o, int argc, char **argv) {
  for (int k = 1; k < argc; ++k) {
    if (argv[k][0] == '-' && argv[k][1] == '-') {
      if (parse_option(o, argc, argv, &k)) return -1;
    } else if (!o->model) {
      o->model = argv[k];
    } else {
      say("unexpected argument '%s' (the model is '%s'; inputs need --input)", argv[k], o->model);
      return -1;
    }
  }
  if (!o->model) {
    say("no model file given");
    return -1;
  }
  if (!o->info && !o->bench && !o->profile && o->num_outputs == 0) {
    say("nothing to do: give --output (one per model output), --bench R, --profile or --info");
    return -1;
  }
  return 0;
}

/* ---- describing the model ------------------------------------------------------------------- */

static void print_shape(FILE *f, int ndim, const int64_t *shape) {
  fputc('[', f);
  for (int d = 0; d < ndim; ++d) fprintf(f, d ? ", %lld" : "%lld", (long long)shape[d]);
  fputc(']', f);
}

static void print_info(const mte_model *m, const char *path) {
  const char *name = mte_model_name(m);
  printf("model: %s (%s)\n", name ? name : "", path);
  printf("inputs: %d\n", mte_model_num_inputs(m));
  for (int i = 0; i < mte_model_num_inputs(m); ++i) {
    printf("  %s: %s ", mte_model_input_name(m, i), mte_dtype_name(mte_model_input_dtype(m, i)));
    print_shape(stdout, mte_model_input_ndim(m, i), mte_model_input_shape(m, i));
    putchar('\n');
  }
  printf("outputs: %d\n", mte_model_num_outputs(m));
  for (int i = 0; i < mte_model_num_outputs(m); ++i) {
    printf("  %s: %s ", mte_model_output_name(m, i),
           mte_dtype_name(mte_model_output_dtype(m, i)));
    print_shape(stdout, mte_model_output_ndim(m, i), mte_model_output_shape(m, i));
    putchar('\n');
  }
  printf("nodes: %d\n", mte_model_num_nodes(m));
  printf("arena bytes: %lld\n", (long long)mte_model_arena_bytes(m));
  printf("prepared bytes: %lld\n", (long long)mte_model_prepared_bytes(m));
  printf("isa: %s, threads: %d\n", mte_active_isa(), mte_get_num_threads());
  for (int k = 0; k < mte_model_num_nodes(m); ++k) {
    const char *kernel = mte_model_node_kernel(m, k);
    printf("  node %d %s: %s -> %s\n", k, mte_model_node_name(m, k), mte_model_node_op(m, k),
           kernel ? kernel : "?");
  }
}

/* ---- binding files to the model's inputs and outputs ---------------------------------------- */

typedef struct port {
  const char *(*name)(const mte_model *, int);
  int (*count)(const mte_model *);
  const char *kind; /* "input" / "output" */
} port;

static const port INPUTS = {mte_model_input_name, mte_model_num_inputs, "input"};
static const port OUTPUTS = {mte_model_output_name, mte_model_num_outputs, "output"};

static int find_name(const mte_model *m, const port *p, const char *arg, size_t len) {
  for (int i = 0; i < p->count(m); ++i)
    if (strlen(p->name(m, i)) == len && !strncmp(p->name(m, i), arg, len)) return i;
  return -1;
}

static void list_names(const mte_model *m, const port *p, char *buf, size_t cap) {
  size_t at = 0;
  buf[0] = 0;
  for (int i = 0; i < p->count(m) && at < cap; ++i)
    at += (size_t)snprintf(buf + at, cap - at, "%s%s", i ? ", " : "", p->name(m, i));
}

/* paths[i] = the file for the model's port i: "NAME=PATH" binds NAME (if NAME is one of the
 * model's names; else it is a path, which for an input must exist), the others fill the
 * unbound ports in order */
static int bind_ports(const mte_model *m, const port *p, const char **args, int n,
                      const char **paths) {
  int count = p->count(m);
  char names[1024];
  list_names(m, p, names, sizeof names);
  if (n != count) {
    say("the model has %d %s%s (%s), %d given with --%s", count, p->kind, count == 1 ? "" : "s",
        names, n, p->kind);
    return -1;
  }
  for (int i = 0; i < count; ++i) paths[i] = NULL;
  for (int j = 0; j < n; ++j) {
    const char *eq = strchr(args[j], '=');
    int i = eq ? find_name(m, p, args[j], (size_t)(eq - args[j])) : -1;
    if (eq && i < 0 && p == &INPUTS && access(args[j], F_OK) != 0) {
      say("no input named '%.*s' (the model's inputs: %s)", (int)(eq - args[j]), args[j], names);
      return -1;
    }
    if (i < 0) continue;
    if (paths[i]) {
      say("%s '%s' is given twice", p->kind, p->name(m, i));
      return -1;
    }
    paths[i] = eq + 1;
    args[j] = NULL;
  }
  for (int j = 0, i = 0; j < n; ++j) {
    if (!args[j]) continue;
    while (paths[i]) ++i;
    paths[i] = args[j];
  }
  return 0;
}

/* ---- inputs --------------------------------------------------------------------------------- */

static void shape_text(char *buf, size_t cap, int ndim, const int64_t *shape) {
  size_t at = (size_t)snprintf(buf, cap, "[");
  for (int d = 0; d < ndim && at < cap; ++d)
    at += (size_t)snprintf(buf + at, cap - at, d ? ", %lld" : "%lld", (long long)shape[d]);
  if (at < cap) snprintf(buf + at, cap - at, "]");
}

static int check_input(const mte_model *m, int i, const char *path, const npy_header *h) {
  int ndim = mte_model_input_ndim(m, i);
  const int64_t *shape = mte_model_input_shape(m, i);
  mte_dtype dtype = mte_model_input_dtype(m, i);
  int same = h->dtype == dtype && h->ndim == ndim &&
             (ndim == 0 || !memcmp(h->shape, shape, (size_t)ndim * sizeof *shape));
  if (same) return 0;
  char want[512], got[512];
  shape_text(want, sizeof want, ndim, shape);
  shape_text(got, sizeof got, h->ndim, h->shape);
  say("input %d '%s' (%s): the file holds %s %s, the model expects %s %s", i,
      mte_model_input_name(m, i), path, mte_dtype_name(h->dtype), got, mte_dtype_name(dtype),
      want);
  return -1;
}

static int read_inputs(const mte_model *m, const char **paths, npy_array *arrays) {
  char err[512];
  for (int i = 0; i < mte_model_num_inputs(m); ++i) {
    if (npy_read_file(paths[i], &arrays[i], err, sizeof err) != MTE_OK) {
      say("input %d '%s' (%s): %s", i, mte_model_input_name(m, i), paths[i], err);
      return -1;
    }
    if (check_input(m, i, paths[i], &arrays[i].h)) return -1;
  }
  return 0;
}

/* ---- running and timing --------------------------------------------------------------------- */

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int run_once(mte_model *m, const void *const *in, void *const *out) {
  char err[1024];
  int st = mte_model_run(m, in, out, err, sizeof err);
  if (st != MTE_OK) say("run failed: %s: %s", mte_runtime_status_string(st), err);
  return st;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void print_bench(double *ms, int runs, int warmup) {
  qsort(ms, (size_t)runs, sizeof *ms, cmp_double);
  double sum = 0;
  for (int k = 0; k < runs; ++k) sum += ms[k];
  double median = runs % 2 ? ms[runs / 2] : (ms[runs / 2 - 1] + ms[runs / 2]) / 2;
  int p90 = (9 * runs + 9) / 10 - 1; /* nearest rank: ceil(0.9 R) - 1 */
  printf("bench: %d runs, %d warmup, %d threads\n", runs, warmup, mte_get_num_threads());
  printf("latency ms: min %.4f median %.4f mean %.4f p90 %.4f max %.4f\n", ms[0], median,
         sum / runs, ms[p90], ms[runs - 1]);
}

static int bench(mte_model *m, const void *const *in, void *const *out, int runs, int warmup) {
  for (int k = 0; k < warmup; ++k)
    if (run_once(m, in, out)) return -1;
  double *ms = malloc((size_t)runs * sizeof *ms);
  if (!ms) {
    say("out of memory");
    return -1;
  }
  for (int k = 0; k < runs; ++k) {
    double t0 = now_ms();
    if (run_once(m, in, out)) {
      free(ms);
      return -1;
    }
    ms[k] = now_ms() - t0;
  }
  print_bench(ms, runs, warmup);
  free(ms);
  return 0;
}

/* --profile: the table on stdout, the trace file if asked for */
static int profile(mte_model *m, const void *const *in, void *const *out, const options *o) {
  profile_result r;
  char err[1024];
  int runs = o->bench ? o->bench : PROFILE_RUNS;
  int st = profile_collect(m, in, out, runs, o->warmup, &r, err, sizeof err);
  if (st != MTE_OK) {
    say("run failed: %s: %s", mte_runtime_status_string(st), err);
  } else {
    printf("profile: %d runs after %d warmup, %d nodes\n", r.runs, o->warmup, r.num_nodes);
    profile_print_table(stdout, m, &r);
    if (o->profile_json &&
        (st = profile_write_trace(o->profile_json, m, &r, err, sizeof err)) != MTE_OK)
      say("--profile-json %s: %s", o->profile_json, err);
  }
  profile_free(&r);
  return st == MTE_OK ? 0 : -1;
}

static int write_outputs(const mte_model *m, const char **paths, void *const *out) {
  char err[512];
  for (int i = 0; i < mte_model_num_outputs(m); ++i) {
    int st = npy_write_file(paths[i], mte_model_output_dtype(m, i), mte_model_output_ndim(m, i),
                            mte_model_output_shape(m, i), out[i], err, sizeof err);
    if (st != MTE_OK) {
      say("output %d '%s' (%s): %s", i, mte_model_output_name(m, i), paths[i], err);
      return -1;
    }
  }
  return 0;
}

/* ---- main ----------------------------------------------------------------------------------- */

typedef struct session {
  mte_model *model;
  npy_array *inputs;
  const void **in;
  void **out;
  const char **in_paths, **out_paths;
} session;

static int alloc_session(session *s) {
  const mte_model *m = s->model;
  int ni = mte_model_num_inputs(m), no = mte_model_num_outputs(m);
  s->inputs = calloc((size_t)ni + 1, sizeof *s->inputs);
  s->in = calloc((size_t)ni + 1, sizeof *s->in);
  s->in_paths = calloc((size_t)ni + 1, sizeof *s->in_paths);
  s->out = calloc((size_t)no + 1, sizeof *s->out);
  s->out_paths = calloc((size_t)no + 1, sizeof *s->out_paths);
  if (!s->inputs || !s->in || !s->in_paths || !s->out || !s->out_paths) return -1;
  for (int i = 0; i < no; ++i) {
    size_t n = (size_t)mte_model_output_nbytes(m, i);
    if (!(s->out[i] = aligned_alloc(64, (n + 63) / 64 * 64 + 64))) return -1;
  }
  return 0;
}

static void free_session(session *s) {
  if (s->inputs)
    for (int i = 0; i < mte_model_num_inputs(s->model); ++i) npy_array_free(&s->inputs[i]);
  if (s->out)
    for (int i = 0; i < mte_model_num_outputs(s->model); ++i) free(s->out[i]);
  free(s->inputs);
  free(s->in);
  free(s->in_paths);
  free(s->out);
  free(s->out_paths);
  mte_model_free(s->model);
}

static int run_model(const options *o, session *s) {
  mte_model *m = s->model;
  if (alloc_session(s)) {
    say("out of memory");
    return -1;
  }
  if (bind_ports(m, &INPUTS, o->inputs, o->num_inputs, s->in_paths)) return -1;
  if (o->num_outputs && bind_ports(m, &OUTPUTS, o->outputs, o->num_outputs, s->out_paths))
    return -1;
  if (read_inputs(m, s->in_paths, s->inputs)) return -1;
  for (int i = 0; i < mte_model_num_inputs(m); ++i) s->in[i] = s->inputs[i].data;
  int failed = o->profile  ? profile(m, s->in, s->out, o)
               : o->bench ? bench(m, s->in, s->out, o->bench, o->warmup)
                          : run_once(m, s->in, s->out);
  if (failed) return -1;
  return o->num_outputs ? write_outputs(m, s->out_paths, s->out) : 0;
}

int main(int argc, char **argv) {
  for (int k = 1; k < argc; ++k)
    if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
      fputs(USAGE, stdout);
      return 0;
    }
  options o = {.warmup = 3};
  o.inputs = calloc((size_t)argc, sizeof *o.inputs);
  o.outputs = calloc((size_t)argc, sizeof *o.outputs);
  if (!o.inputs || !o.outputs || parse_args(&o, argc, argv)) {
    fputs(USAGE, stderr);
    free(o.inputs), free(o.outputs);
    return EXIT_USAGE;
  }
  if (o.threads && mte_set_num_threads(o.threads) != MTE_OK)
    say("warning: cannot set %d threads (%d are used)", o.threads, mte_get_num_threads());
  session s = {0};
  char err[1024];
  int st = mte_model_load(o.model, &s.model, err, sizeof err);
  int rc = 0;
  if (st != MTE_OK) {
    say("%s: %s: %s", o.model, mte_runtime_status_string(st), err);
    rc = EXIT_ERROR;
  } else {
    if (o.info) print_info(s.model, o.model);
    if ((o.num_inputs || o.num_outputs || o.bench || o.profile || !o.info) && run_model(&o, &s))
      rc = EXIT_ERROR;
    free_session(&s);
  }
  free(o.inputs), free(o.outputs);
  return rc;
}
