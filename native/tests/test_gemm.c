/*
 * test_gemm.c - mte_sgemm against a naive triple loop (in double), for every ISA this
 * machine can run, 1 and 2 threads, many shapes (0, 1, primes, K up to 2049, N past the
 * NC block), both transposes, alpha/beta, padded leading dimensions; plus the epilogue,
 * the batched entry point, argument checking, the arena and concurrent callers.
 *
 *   test_gemm           full run
 *   test_gemm --quick   fewer random shapes (used for the extra single-thread pass)
 */
#define _POSIX_C_SOURCE 200809L /* fork, waitpid, alarm */
#include <math.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "mte.h"
#include "mte_test.h"

typedef struct gcase {
  int ta, tb;
  int64_t M, N, K;
  float alpha, beta;
  int64_t pa, pb, pc; /* extra leading-dimension padding */
  const mte_epilogue *ep;
} gcase;

static const char *g_label = "";

/* exactly sized buffer: (rows-1)*ld + cols floats, so any over-read is out of bounds */
static float *alloc_matrix(int64_t rows, int64_t cols, int64_t ld, float fill_pad) {
  size_t n = rows && cols ? (size_t)((rows - 1) * ld + cols) : 1;
  float *p = (float *)malloc(n * sizeof(float));
  for (size_t i = 0; i < n; ++i) p[i] = fill_pad;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) p[i * ld + j] = mte_test_uniform();
  return p;
}

static int run_case(const gcase *c) {
  const int64_t M = c->M, N = c->N, K = c->K;
  const int64_t ar = c->ta ? K : M, ac = c->ta ? M : K;
  const int64_t br = c->tb ? N : K, bc = c->tb ? K : N;
  const int64_t lda = (ac > 1 ? ac : 1) + c->pa, ldb = (bc > 1 ? bc : 1) + c->pb;
  const int64_t ldc = (N > 1 ? N : 1) + c->pc;
  float *A = alloc_matrix(ar, ac, lda, 0.0f);
  float *B = alloc_matrix(br, bc, ldb, 0.0f);
  float *C = alloc_matrix(M, N, ldc, 777.0f); /* 777 marks padding that must stay */
  size_t cn = M && N ? (size_t)((M - 1) * ldc + N) : 1;
  float *C0 = (float *)malloc(cn * sizeof(float));
  if (c->beta == 0.0f) /* beta == 0: C must not be read, so NaN must not leak */
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = NAN;
  memcpy(C0, C, cn * sizeof(float));

  int st = mte_sgemm_ex(c->ta, c->tb, M, N, K, c->alpha, A, lda, B, ldb, c->beta, C, ldc,
                        c->ep, NULL);
  int bad = 0;
  if (st != MTE_OK) {
    CHECK(st == MTE_OK, "[%s] status %d", g_label, st);
    bad = 1;
  }
  for (int64_t i = 0; i < M && !bad; ++i) {
    for (int64_t j = 0; j < N && !bad; ++j) {
      double acc = 0.0, mag = 0.0;
      for (int64_t p = 0; p < K; ++p) {
        double a = c->ta ? A[p * lda + i] : A[i * lda + p];
        double b = c->tb ? B[j * ldb + p] : B[p * ldb + j];
        acc += a * b;
        mag += fabs(a * b);
      }
      double ref = (double)c->alpha * acc, bound = fabs((double)c->alpha) * mag;
      if (c->beta != 0.0f) {
        ref += (double)c->beta * C0[i * ldc + j];
        bound += fabs((double)c->beta * C0[i * ldc + j]);
      }
      if (c->ep) {
        if (c->ep->bias_mode == MTE_BIAS_PER_ROW) ref += c->ep->bias[i];
        if (c->ep->bias_mode == MTE_BIAS_PER_COL) ref += c->ep->bias[j];
        bound += 1.0;
        if (c->ep->activation != MTE_ACT_NONE && ref < 0) ref = 0;
        if (c->ep->activation == MTE_ACT_RELU6 && ref > 6) ref = 6;
      }
      double tol = (double)(K + 4) * 2.0 * 1.1920929e-07 * bound + 1e-30;
      double got = C[i * ldc + j];
      if (!(fabs(got - ref) <= tol)) {
        CHECK(0, "[%s] ta=%d tb=%d M=%lld N=%lld K=%lld alpha=%g beta=%g: C[%lld,%lld]=%g "
              "ref %g tol %g", g_label, c->ta, c->tb, (long long)M, (long long)N,
              (long long)K, c->alpha, c->beta, (long long)i, (long long)j, got, ref, tol);
        bad = 1;
      }
    }
    for (int64_t j = N; N > 0 && j < ldc && i < M - 1 && !bad; ++j)
      if (C[i * ldc + j] != 777.0f) {
        CHECK(0, "[%s] padding of C row %lld col %lld was written", g_label, (long long)i,
              (long long)j);
        bad = 1;
      }
  }
  if (!bad) CHECK(1, "ok");
  free(A);
  free(B);
  free(C);
  free(C0);
  return bad;
}

static const int64_t k_dims[] = {0, 1, 2, 3, 5, 7, 8, 13, 16, 17, 31, 32, 33, 47, 64, 97, 131};
static const float k_alphas[] = {1.0f, 1.0f, 2.5f, -0.5f, 0.0f};
static const float k_betas[] = {0.0f, 0.0f, 1.0f, 0.75f, -2.0f};
#define NDIMS ((int)(sizeof k_dims / sizeof k_dims[0]))

static void shape_sweep(int n_random) {
  /* fixed shapes: edges of every blocking level */
  static const int64_t fixed[][3] = {
      {1, 1, 1},     {1, 1, 1000},  {5, 7, 1000},   {64, 64, 1000}, {300, 257, 513},
      {3, 4500, 5},  {257, 33, 2049}, {1, 300, 17},  {300, 1, 17},   {0, 5, 5},
      {5, 0, 5},     {5, 5, 0},     {0, 0, 0},      {97, 131, 257}, {385, 40, 300},
  };
  for (size_t f = 0; f < sizeof fixed / sizeof fixed[0]; ++f)
    for (int t = 0; t < 4; ++t) {
      gcase c = {t & 1, (t >> 1) & 1, fixed[f][0], fixed[f][1], fixed[f][2],
                 k_alphas[(f + t) % 5], k_betas[(f + 2 * t) % 5], t, 2 * t, 3 * t, NULL};
      run_case(&c);
    }
  for (int r = 0; r < n_random; ++r) {
    gcase c = {mte_test_pick(2), mte_test_pick(2), k_dims[mte_test_pick(NDIMS)],
               k_dims[mte_test_pick(NDIMS)], k_dims[mte_test_pick(NDIMS)],
               k_alphas[mte_test_pick(5)], k_betas[mte_test_pick(5)],
               mte_test_pick(3), mte_test_pick(3), mte_test_pick(3), NULL};
    run_case(&c);
  }
}

static void epilogue_tests(void) {
  float bias[600];
  for (int i = 0; i < 600; ++i) bias[i] = mte_test_uniform() * 3.0f;
  for (int mode = 0; mode < 3; ++mode)
    for (int act = 0; act < 3; ++act) {
      mte_epilogue ep = {.bias_mode = mode, .bias = mode ? bias : NULL, .activation = act};
      gcase c1 = {0, 0, 37, 45, 600, 1.0f, 0.0f, 0, 0, 0, &ep}; /* several K slices */
      gcase c2 = {1, 1, 13, 300, 9, 2.0f, 0.5f, 1, 0, 2, &ep};
      gcase c3 = {0, 0, 7, 9, 0, 1.0f, 1.0f, 0, 0, 0, &ep}; /* K == 0: epilogue still */
      run_case(&c1);
      run_case(&c2);
      run_case(&c3);
    }
}

static void argument_tests(void) {
  float a[16] = {0}, b[16] = {0}, c[16];
  for (int i = 0; i < 16; ++i) c[i] = 5.0f;
  CHECK(mte_sgemm(0, 0, -1, 2, 2, 1, a, 2, b, 2, 0, c, 2) == MTE_EINVAL, "M < 0");
  CHECK(mte_sgemm(0, 0, 2, -1, 2, 1, a, 2, b, 2, 0, c, 2) == MTE_EINVAL, "N < 0");
  CHECK(mte_sgemm(0, 0, 2, 2, -1, 1, a, 2, b, 2, 0, c, 2) == MTE_EINVAL, "K < 0");
  CHECK(mte_sgemm(0, 0, 2, 2, 3, 1, a, 2, b, 2, 0, c, 2) == MTE_EINVAL, "lda < K");
  CHECK(mte_sgemm(1, 0, 3, 2, 2, 1, a, 2, b, 2, 0, c, 2) == MTE_EINVAL, "lda < M (trans)");
  CHECK(mte_sgemm(0, 0, 2, 3, 2, 1, a, 2, b, 2, 0, c, 3) == MTE_EINVAL, "ldb < N");
  CHECK(mte_sgemm(0, 1, 2, 2, 3, 1, a, 3, b, 2, 0, c, 2) == MTE_EINVAL, "ldb < K (trans)");
  CHECK(mte_sgemm(0, 0, 2, 3, 2, 1, a, 2, b, 3, 0, c, 2) == MTE_EINVAL, "ldc < N");
  CHECK(mte_sgemm(0, 0, 2, 2, 2, 1, NULL, 2, b, 2, 0, c, 2) == MTE_EINVAL, "A NULL");
  CHECK(mte_sgemm(0, 0, 2, 2, 2, 1, a, 2, NULL, 2, 0, c, 2) == MTE_EINVAL, "B NULL");
  CHECK(mte_sgemm(0, 0, 2, 2, 2, 1, a, 2, b, 2, 0, NULL, 2) == MTE_EINVAL, "C NULL");
  CHECK(mte_sgemm(0, 0, 2, 2, 2, 1, a, 2, b, 2, 0, c, 0) == MTE_EINVAL, "ldc 0");
  CHECK(mte_sgemm(0, 0, INT64_MAX, 2, 2, 1, a, 2, b, 2, 0, c, INT64_MAX) != MTE_OK,
        "overflowing sizes");
  int untouched = 1;
  for (int i = 0; i < 16; ++i) untouched &= c[i] == 5.0f;
  CHECK(untouched, "rejected calls leave C untouched");
  /* empty problems and unused operands */
  CHECK(mte_sgemm(0, 0, 0, 0, 0, 1, NULL, 1, NULL, 1, 0, NULL, 1) == MTE_OK, "all empty");
  CHECK(mte_sgemm(0, 0, 2, 2, 0, 1, NULL, 1, NULL, 2, 0.0f, c, 2) == MTE_OK, "K=0");
  CHECK(c[0] == 0.0f && c[3] == 0.0f && c[4] == 5.0f, "K=0 gives beta*C = 0");
  c[0] = 2.0f;
  CHECK(mte_sgemm(0, 0, 1, 1, 3, 0.0f, NULL, 3, NULL, 1, 3.0f, c, 1) == MTE_OK, "alpha=0");
  CHECK(c[0] == 6.0f, "alpha=0 gives beta*C");
  mte_epilogue bad1 = {.bias_mode = 7}, bad2 = {.bias_mode = MTE_BIAS_PER_ROW},
               bad3 = {.activation = 9};
  CHECK(mte_sgemm_ex(0, 0, 2, 2, 2, 1, a, 2, b, 2, 0, c, 2, &bad1, NULL) == MTE_EINVAL, "ep");
  CHECK(mte_sgemm_ex(0, 0, 2, 2, 2, 1, a, 2, b, 2, 0, c, 2, &bad2, NULL) == MTE_EINVAL, "ep");
  CHECK(mte_sgemm_ex(0, 0, 2, 2, 2, 1, a, 2, b, 2, 0, c, 2, &bad3, NULL) == MTE_EINVAL, "ep");
}

static void batched_tests(void) {
  enum { BATCH = 3, M = 9, N = 20, K = 17 };
  float A[M * K], B[BATCH * K * N], C[BATCH * M * N], R[M * N];
  for (int i = 0; i < M * K; ++i) A[i] = mte_test_uniform();
  for (int i = 0; i < BATCH * K * N; ++i) B[i] = mte_test_uniform();
  /* A broadcast over the batch (stride 0) */
  int st = mte_sgemm_batched(0, 0, BATCH, M, N, K, 1.0f, A, K, 0, B, N, K * N, 0.0f, C, N,
                             M * N);
  CHECK(st == MTE_OK, "batched status %d", st);
  for (int b = 0; b < BATCH; ++b) {
    mte_sgemm(0, 0, M, N, K, 1.0f, A, K, B + b * K * N, N, 0.0f, R, N);
    CHECK(memcmp(R, C + b * M * N, sizeof R) == 0, "batch %d equals single call", b);
  }
  CHECK(mte_sgemm_batched(0, 0, -1, M, N, K, 1, A, K, 0, B, N, 0, 0, C, N, M * N) ==
            MTE_EINVAL, "negative batch");
  CHECK(mte_sgemm_batched(0, 0, 2, M, N, K, 1, A, K, 0, B, N, 0, 0, C, N, N) == MTE_EINVAL,
        "overlapping outputs");
  CHECK(mte_sgemm_batched(0, 0, 0, M, N, K, 1, NULL, K, 0, NULL, N, 0, 0, NULL, N, 0) ==
            MTE_OK, "empty batch");
}

static void arena_tests(void) {
  enum { M = 100, N = 70, K = 300 };
  static float A[M * K], B[K * N], C[M * N];
  for (int i = 0; i < M * K; ++i) A[i] = mte_test_uniform();
  for (int i = 0; i < K * N; ++i) B[i] = mte_test_uniform();
  mte_arena *ar = mte_arena_create(0);
  CHECK(mte_sgemm_ex(0, 0, M, N, K, 1, A, K, B, N, 0, C, N, NULL, ar) == MTE_OK, "arena");
  size_t cap = mte_arena_capacity(ar), peak = mte_arena_peak_bytes(ar);
  CHECK(cap > 0 && peak > 0 && peak <= cap, "cap %zu peak %zu", cap, peak);
  for (int r = 0; r < 3; ++r)
    CHECK(mte_sgemm_ex(1, 1, M, N, K, 1, A, M, B, K, 0, C, N, NULL, ar) == MTE_OK, "reuse");
  CHECK(mte_arena_capacity(ar) == cap, "steady state: no growth (%zu vs %zu)",
        mte_arena_capacity(ar), cap);
  CHECK(mte_arena_check(ar) == MTE_OK, "guards intact");
  mte_arena_destroy(ar);

  mte_sgemm(0, 0, M, N, K, 1, A, K, B, N, 0, C, N);
  size_t dcap = mte_default_arena_capacity();
  CHECK(mte_default_arena_peak_bytes() > 0 && dcap > 0, "default arena used");
  mte_sgemm(0, 0, M, N, K, 1, A, K, B, N, 0, C, N);
  CHECK(mte_default_arena_capacity() == dcap, "default arena reused");
}

/* two threads calling sgemm at once: one gets the default arena, the other a private one */
typedef struct job { int seed; int ok; } job;
static void *worker(void *arg) {
  job *j = (job *)arg;
  enum { M = 67, N = 45, K = 129 };
  float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N),
        *C = malloc(sizeof(float) * M * N);
  for (int i = 0; i < M * K; ++i) A[i] = (float)((i * 7 + j->seed) % 13) - 6.0f;
  for (int i = 0; i < K * N; ++i) B[i] = (float)((i * 5 + j->seed) % 11) - 5.0f;
  j->ok = 1;
  for (int rep = 0; rep < 20; ++rep) {
    if (mte_sgemm(0, 0, M, N, K, 1, A, K, B, N, 0, C, N) != MTE_OK) j->ok = 0;
    for (int i = 0; i < M; i += 11)
      for (int n = 0; n < N; n += 7) {
        float ref = 0; /* small integers: exact in float */
        for (int p = 0; p < K; ++p) ref += A[i * K + p] * B[p * N + n];
        if (C[i * N + n] != ref) j->ok = 0;
      }
  }
  free(A);
  free(B);
  free(C);
  return NULL;
}

static void concurrency_tests(void) {
  pthread_t t[3];
  job jobs[3] = {{1, 0}, {2, 0}, {3, 0}};
  for (int i = 0; i < 3; ++i) pthread_create(&t[i], NULL, worker, &jobs[i]);
  for (int i = 0; i < 3; ++i) pthread_join(t[i], NULL);
  for (int i = 0; i < 3; ++i) CHECK(jobs[i].ok, "concurrent caller %d", i);
}

/* after fork() the child must not hang in OpenMP and must compute correctly */
static void fork_tests(void) {
  enum { M = 200, N = 150, K = 170 };
  static float A[M * K], B[K * N], C[M * N];
  for (int i = 0; i < M * K; ++i) A[i] = (float)(i % 7) - 3.0f;
  for (int i = 0; i < K * N; ++i) B[i] = (float)(i % 5) - 2.0f;
  mte_set_num_threads(2);
  mte_sgemm(0, 0, M, N, K, 1, A, K, B, N, 0, C, N); /* the parent's thread pool is up */
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    alarm(60); /* a hang becomes a failure */
    int ok = mte_get_num_threads() == 1 &&
             mte_sgemm(0, 0, M, N, K, 1, A, K, B, N, 0, C, N) == MTE_OK;
    float ref = 0;
    for (int p = 0; p < K; ++p) ref += A[5 * K + p] * B[p * N + 7];
    _exit(ok && C[5 * N + 7] == ref ? 0 : 1);
  }
  int status = 0;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork/wait");
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child after fork: status %d", status);
  CHECK(mte_get_num_threads() == (mte_has_openmp() ? 2 : 1), "parent keeps its threads");
}

int main(int argc, char **argv) {
  int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  char isas[256];
  snprintf(isas, sizeof isas, "%s", mte_compiled_isas());
  printf("test_gemm: compiled ISAs: %s; openmp: %d\n", isas, mte_has_openmp());

  argument_tests();
  for (char *name = strtok(isas, " "); name; name = strtok(NULL, " ")) {
    if (!mte_isa_available(name)) {
      printf("  %s: not supported by this CPU, skipped\n", name);
      continue;
    }
    CHECK(mte_set_isa(name) == MTE_OK, "set_isa %s", name);
    int threads[] = {1, 2, 5};
    int nthreads = mte_has_openmp() ? 3 : 1;
    for (int t = 0; t < nthreads; ++t) {
      mte_set_num_threads(threads[t]);
      char label[64];
      snprintf(label, sizeof label, "%s, %d threads", name, threads[t]);
      g_label = label;
      int before = mte_test_failed;
      shape_sweep(quick ? 20 : (t == 0 ? 150 : 40));
      epilogue_tests();
      batched_tests();
      printf("  %-22s %s\n", label, mte_test_failed == before ? "ok" : "FAILED");
    }
  }
  mte_set_isa("auto");
  mte_set_num_threads(2);
  arena_tests();
  concurrency_tests();
  fork_tests();
  return mte_test_summary(quick ? "test_gemm --quick" : "test_gemm");
}
