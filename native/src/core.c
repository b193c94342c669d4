/*
 * core.c - version, status strings, kernel list and the thread-count setting.
 *
 * Threads: kernels use OpenMP when the library is built with -fopenmp. The count is our
 * own setting (passed to each parallel region with num_threads), so changing it never
 * touches the process-wide OpenMP state that other libraries may rely on.
 *
 * fork(): GNU OpenMP's thread pool does not survive fork, and a child that opens a parallel
 * region after its parent used one hangs. A child process (e.g. a DataLoader worker)
 * therefore runs every kernel on one thread, whatever the setting.
 *
 * Peak: mte_peak_gflops() times the active ISA's FMA loop, the ceiling that "% of peak" in
 * bench/kernels.py is measured against.
 */
#define _POSIX_C_SOURCE 200809L /* pthread_atfork, clock_gettime */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "mte_internal.h"

#ifdef _OPENMP
#include <omp.h>
#endif

const char *mte_version(void) { return MTE_VERSION_STRING; }

const char *mte_status_string(int status) {
  switch (status) {
    case MTE_OK: return "MTE_OK: success";
    case MTE_EINVAL: return "MTE_EINVAL: invalid argument";
    case MTE_ENOMEM: return "MTE_ENOMEM: out of memory";
    case MTE_EOVERFLOW: return "MTE_EOVERFLOW: size overflow";
    case MTE_EUNSUPPORTED: return "MTE_EUNSUPPORTED: not supported on this CPU or build";
    case MTE_EBUSY: return "MTE_EBUSY: object in use";
    case MTE_ECORRUPT: return "MTE_ECORRUPT: guard word overwritten (out-of-bounds write)";
    default: return "unknown mte status";
  }
}

const char *mte_kernels(void) {
  return "sgemm conv2d depthwise3x3 depthwise winograd3x3 pool2d optim transformer int8 conv2d_direct bf16";
}

/* 0 = not set yet: use the OpenMP default. */
static atomic_int g_num_threads = 0;
/* set in a child process after fork(): single-threaded from then on */
static atomic_int g_in_forked_child = 0;

static void on_fork_child(void) { atomic_store(&g_in_forked_child, 1); }

#if defined(__GNUC__)
__attribute__((constructor)) static void register_fork_handler(void) {
  pthread_atfork(NULL, NULL, on_fork_child);
}
#endif

int mte_has_openmp(void) {
#ifdef _OPENMP
  return 1;
#else
  return 0;
#endif
}

int mte_set_num_threads(int n) {
  if (n < 1 || n > MTE_MAX_THREADS) return MTE_EINVAL;
#ifdef _OPENMP
  atomic_store(&g_num_threads, n);
#else
  atomic_store(&g_num_threads, 1);
#endif
  return MTE_OK;
}

int mte_get_num_threads(void) { return mte__num_threads(); }

int mte__num_threads(void) {
  if (atomic_load(&g_in_forked_child)) return 1;
  int n = atomic_load(&g_num_threads);
  if (n > 0) return n;
#ifdef _OPENMP
  n = omp_get_max_threads();
  return n > 0 ? n : 1;
#else
  return 1;
#endif
}

/* ---------------------------------------------------------------- peak */

static double seconds_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

double mte_peak_gflops(double seconds) {
  if (!(seconds > 0.0)) seconds = 0.1;
  if (seconds > 10.0) seconds = 10.0;
  const mte_sgemm_kernel *k = mte__isa()->sgemm;
  /* the best of several short runs: a descheduled slice only lowers one of them */
  double best = 0.0, spent = 0.0;
  int64_t rounds = 1 << 16;
  while (spent < seconds) {
    double t0 = seconds_now();
    double flops = k->fma_peak(rounds);
    double dt = seconds_now() - t0;
    spent += dt;
    if (dt < 2e-3) { rounds *= 2; continue; } /* too short to time well */
    if (flops / dt > best) best = flops / dt;
  }
  return best * 1e-9;
}
