/*
 * profile.h - mte-run --profile: run a model R times with the runtime's per-node clock on
 * (mte_model_set_profiling), then report the times the way torch.profiler does: a table in
 * key_averages' layout (one row per op: self and total time, percentages, average, calls,
 * input shapes; sorted by self time) and a Chrome Trace Event file of the last run (one
 * complete "X" event per node, nested inside one event for the run).
 */
#ifndef MTE_TOOLS_PROFILE_H
#define MTE_TOOLS_PROFILE_H

#include <stddef.h>
#include <stdio.h>

#include "mte_runtime.h"

typedef struct profile_result {
  int runs, num_nodes;
  double *node_total;    /* per node: seconds summed over the runs */
  double *node_start;    /* per node, the last run: seconds since the run began */
  double *node_seconds;  /* per node, the last run: duration */
  double *wall;          /* per run: seconds around mte_model_run */
} profile_result;

/* `warmup` unprofiled runs, then `runs` profiled ones (runs >= 1). MTE_OK, or the failing
 * run's status with err filled; free the result with profile_free either way. */
int profile_collect(mte_model *m, const void *const *inputs, void *const *outputs, int runs,
                    int warmup, profile_result *r, char *err, size_t errlen);
void profile_free(profile_result *r);

/* The key_averages table, then "Self CPU time total", the wall time per run and the
 * coverage (the nodes' time over the wall time). */
void profile_print_table(FILE *f, const mte_model *m, const profile_result *r);

/* The last run as Chrome Trace Event JSON (ts / dur in microseconds; args: op, kernel,
 * input and output shapes), written to a temporary file renamed over `path`. */
int profile_write_trace(const char *path, const mte_model *m, const profile_result *r,
                        char *err, size_t errlen);

#endif
