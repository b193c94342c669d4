/*
 * mte_test.h - a minimal test harness for the libmte C tests (no dependencies).
 *
 *   CHECK(cond, fmt, ...)   record a pass or print the failure with file:line
 *   return mte_test_summary("name");   prints "N passed, N failed", exit code 0/1
 */
#ifndef MTE_TEST_H
#define MTE_TEST_H

#include <stdio.h>

static int mte_test_passed = 0, mte_test_failed = 0;

#define CHECK(cond, ...)                                             \
  do {                                                               \
    if (cond) {                                                      \
      ++mte_test_passed;                                             \
    } else {                                                         \
      ++mte_test_failed;                                             \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                  \
      fputc('\n', stderr);                                           \
    }                                                                \
  } while (0)

static inline int mte_test_summary(const char *name) {
  printf("%s: %d passed, %d failed\n", name, mte_test_passed, mte_test_failed);
  return mte_test_failed ? 1 : 0;
}

/* Deterministic xorshift PRNG, so failures reproduce. */
static unsigned long long mte_test_rng = 0x9E3779B97F4A7C15ull;
static inline unsigned long long mte_test_next(void) {
  mte_test_rng ^= mte_test_rng << 13;
  mte_test_rng ^= mte_test_rng >> 7;
  mte_test_rng ^= mte_test_rng << 17;
  return mte_test_rng;
}
/* uniform in [-1, 1) */
static inline float mte_test_uniform(void) {
  return (float)((double)(mte_test_next() >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}
static inline int mte_test_pick(int n) { return (int)(mte_test_next() % (unsigned long long)n); }

#endif
