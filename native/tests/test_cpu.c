/*
 * test_cpu.c - CPU feature detection and ISA dispatch.
 *
 *   test_cpu              consistency of features, compiled/available ISAs, mte_set_isa,
 *                         the ISA table (every family of every usable ISA, switched together)
 *   test_cpu --check-env  the active ISA obeys MTE_ISA: the best available ISA not above
 *                         the requested one (unknown values: the best available)
 */
#include <stdlib.h>
#include <string.h>

#include "mte.h"
#include "mte_bf16_internal.h"
#include "mte_conv_internal.h"
#include "mte_convdirect_internal.h"
#include "mte_depthwise_internal.h"
#include "mte_internal.h"
#include "mte_pool_internal.h"
#include "mte_qelem_internal.h"
#include "mte_quant_internal.h"
#include "mte_test.h"
#include "mte_transformer_internal.h"
#include "mte_winograd_internal.h"

#define MAX_ISAS 8

static int split(const char *s, char out[MAX_ISAS][16]) {
  int n = 0;
  while (*s && n < MAX_ISAS) {
    while (*s == ' ') ++s;
    size_t len = strcspn(s, " ");
    if (!len) break;
    if (len > 15) len = 15;
    memcpy(out[n], s, len);
    out[n][len] = '\0';
    ++n;
    s += strcspn(s, " ");
  }
  return n;
}

/* The ISA a row extends: its families without a kernel of their own run that one's
 * (avx512vnni adds only the int8 GEMM to avx512; neondot to neon). */
static const char *base_of(const char *isa) {
  if (strcmp(isa, "avx512vnni") == 0) return "avx512";
  if (strcmp(isa, "neondot") == 0) return "neon";
  return isa;
}

/* The active row of the ISA table after mte_set_isa(isa): every column filled, each
 * descriptor is that ISA's, its base's (base_of) or the generic one, and mte_family_isa
 * reports the same. */
static void check_row(const char *isa) {
  const mte_isa *r = mte__isa();
  CHECK(strcmp(r->name, isa) == 0 && strcmp(mte_active_isa(), isa) == 0, "row %s", isa);
  int f = 0, own = 0;
#define CHECK_COLUMN(column, type)                                                         \
  do {                                                                                     \
    const char *name = mte_family_name(f++);                                               \
    CHECK(name && strcmp(name, #column) == 0, "family %d is %s", f - 1, #column);          \
    CHECK(r->column != NULL, "%s: %s has no descriptor", isa, #column);                    \
    if (!r->column) break;                                                                 \
    const char *got = r->column->isa;                                                      \
    CHECK(strcmp(got, isa) == 0 || strcmp(got, base_of(isa)) == 0 ||                       \
              strcmp(got, "generic") == 0,                                                 \
          "%s: %s is %s's", isa, #column, got);                                            \
    CHECK(mte_family_isa(#column) && strcmp(mte_family_isa(#column), got) == 0,            \
          "%s: mte_family_isa(%s)", isa, #column);                                         \
    own += strcmp(got, isa) == 0 || strcmp(got, base_of(isa)) == 0;                        \
  } while (0);
  MTE_FAMILIES(CHECK_COLUMN)
#undef CHECK_COLUMN
  CHECK(f == mte_family_count(), "%d families, count %d", f, mte_family_count());
  CHECK(strcmp(r->sgemm->isa, base_of(isa)) == 0, "%s has its own sgemm microkernel", isa);
#if defined(__x86_64__)
  /* the x86 rows specialise every family, but avx2 the direct conv (its rule picks it only
   * where an ISA has its own tile: AVX-512; the generic tile serves the tests elsewhere);
   * each has its own int8 GEMM microkernel */
  const int expected = strcmp(isa, "avx2") == 0 ? f - 1 : f;
  CHECK(own == expected, "%s specialises %d of %d families", isa, own, f);
  CHECK(strcmp(r->qgemm->isa, isa) == 0, "%s has its own int8 GEMM microkernel", isa);
#elif defined(__aarch64__)
  /* neon (SMULL/SADALP) and neondot (SDOT) each have their own int8 GEMM microkernel and
   * share neon's int8 depthwise */
  (void)own;
  CHECK(strcmp(r->qgemm->isa, isa) == 0, "%s has its own int8 GEMM microkernel", isa);
  CHECK(strcmp(r->qdepthwise->isa, base_of(isa)) == 0, "%s: int8 depthwise is %s's", isa,
        base_of(isa));
#else
  (void)own;
#endif
}

static void check_table(char isas[][16], int n) {
  CHECK(mte_family_count() >= 6, "families %d", mte_family_count());
  CHECK(mte_family_name(-1) == NULL && mte_family_name(mte_family_count()) == NULL,
        "family index out of range");
  CHECK(mte_family_isa("bogus") == NULL && mte_family_isa(NULL) == NULL, "unknown family");
  for (int i = 0; i < n; ++i) {
    if (mte_set_isa(isas[i]) != MTE_OK) continue; /* not supported here */
    check_row(isas[i]);
  }
  /* switching back and forth switches every family's reported ISA */
  CHECK(mte_set_isa("generic") == MTE_OK, "generic");
  for (int f = 0; f < mte_family_count(); ++f)
    CHECK(strcmp(mte_family_isa(mte_family_name(f)), "generic") == 0, "generic: %s",
          mte_family_name(f));
  CHECK(mte_set_isa("auto") == MTE_OK, "auto");
  printf("dispatch (%s):", mte_active_isa());
  for (int f = 0; f < mte_family_count(); ++f)
    printf(" %s=%s", mte_family_name(f), mte_family_isa(mte_family_name(f)));
  printf("\n");
}

int main(int argc, char **argv) {
  char isas[MAX_ISAS][16];
  int n = split(mte_compiled_isas(), isas);
  const char *env = getenv("MTE_ISA");

  if (argc > 1 && strcmp(argv[1], "--check-env") == 0) {
    int start = 0;
    if (env)
      for (int i = 0; i < n; ++i)
        if (strcmp(isas[i], env) == 0) start = i;
    const char *expect = "generic";
    for (int i = start; i < n; ++i)
      if (mte_isa_available(isas[i])) {
        expect = isas[i];
        break;
      }
    CHECK(strcmp(mte_active_isa(), expect) == 0, "MTE_ISA=%s: active %s, expected %s",
          env ? env : "(unset)", mte_active_isa(), expect);
    return mte_test_summary("test_cpu --check-env");
  }

  printf("version %s, compiled ISAs: %s, active: %s\nfeatures: %s\nopenmp: %d threads: %d\n",
         mte_version(), mte_compiled_isas(), mte_active_isa(), mte_cpu_features_string(),
         mte_has_openmp(), mte_get_num_threads());

  CHECK(strcmp(mte_version(), MTE_VERSION_STRING) == 0, "version");
  CHECK(n >= 1 && strcmp(isas[n - 1], "generic") == 0, "generic closes the list");
  CHECK(mte_isa_available("generic"), "generic is always available");
  CHECK(!mte_isa_available("bogus") && !mte_isa_available(NULL), "unknown ISA");

  /* the features string lists exactly the set bits */
  uint64_t f = mte_cpu_features();
  const char *fs = mte_cpu_features_string();
  for (int bit = 0; bit < 64; ++bit) {
    const char *name = mte_cpu_feature_name(bit);
    if (!name) continue;
    char padded[40];
    snprintf(padded, sizeof padded, " %s ", name);
    char hay[1100];
    snprintf(hay, sizeof hay, " %s ", fs);
    CHECK(((f >> bit) & 1) == (strstr(hay, padded) != NULL), "feature %s", name);
  }
  CHECK(mte_cpu_feature_name(-1) == NULL && mte_cpu_feature_name(64) == NULL, "names");
#if defined(__x86_64__)
  CHECK(f & MTE_CPU_SSE2, "x86-64 always has SSE2");
  if (f & MTE_CPU_AVX512F) CHECK(f & MTE_CPU_AVX2, "AVX-512 machines have AVX2");
#endif
#if defined(__aarch64__)
  CHECK(f & MTE_CPU_NEON, "aarch64 always has NEON");
  CHECK(mte_isa_available("neon"), "neon kernel on aarch64");
  CHECK(mte_isa_available("neondot") == !!(f & MTE_CPU_ARM_DOTPROD),
        "neondot available iff the CPU has the dot product");
  CHECK(strncmp(mte_compiled_isas(), "neondot neon ", 13) == 0, "neondot above neon: %s",
        mte_compiled_isas());
#endif

  /* the active ISA (without MTE_ISA) is the best available */
  if (!env) {
    for (int i = 0; i < n; ++i)
      if (mte_isa_available(isas[i])) {
        CHECK(strcmp(mte_active_isa(), isas[i]) == 0, "active %s best %s", mte_active_isa(),
              isas[i]);
        break;
      }
  }

  /* mte_set_isa: every available ISA can be forced; others are refused without effect */
  for (int i = 0; i < n; ++i) {
    const char *before = mte_active_isa();
    int st = mte_set_isa(isas[i]);
    if (mte_isa_available(isas[i])) {
      CHECK(st == MTE_OK && strcmp(mte_active_isa(), isas[i]) == 0, "set_isa %s", isas[i]);
      /* each ISA's FMA loop runs and gives a plausible rate (0.01 .. 10000 GFLOP/s: under
       * qemu-aarch64 on a loaded machine NEON gives ~0.05-0.1) */
      double peak = mte_peak_gflops(0.01);
      printf("fp32 FMA peak with %s: %.1f GFLOP/s, int8 %.1f GOPS\n", isas[i], peak,
             mte_peak_gops_int8(0.01));
      CHECK(peak > 0.01 && peak < 10000.0, "peak %s %.3f", isas[i], peak);
    } else {
      CHECK(st == MTE_EUNSUPPORTED && strcmp(mte_active_isa(), before) == 0,
            "set_isa %s refused", isas[i]);
    }
  }
  const char *before = mte_active_isa();
  CHECK(mte_set_isa("bogus") == MTE_EINVAL, "unknown name");
  CHECK(mte_set_isa(NULL) == MTE_EINVAL, "NULL name");
#if !defined(__aarch64__)
  CHECK(mte_set_isa("neon") == MTE_EUNSUPPORTED, "neon not compiled here");
#else
  CHECK(mte_set_isa("avx2") == MTE_EUNSUPPORTED, "avx2 not compiled here");
#endif
  CHECK(strcmp(mte_active_isa(), before) == 0, "refusals change nothing");
  CHECK(mte_set_isa("auto") == MTE_OK, "auto");
  check_table(isas, n);

  /* threads */
  int t0 = mte_get_num_threads();
  CHECK(t0 >= 1, "threads %d", t0);
  CHECK(mte_set_num_threads(0) == MTE_EINVAL && mte_set_num_threads(-3) == MTE_EINVAL &&
            mte_set_num_threads(MTE_MAX_THREADS + 1) == MTE_EINVAL,
        "bad thread counts");
  CHECK(mte_get_num_threads() == t0, "refused count changes nothing");
  CHECK(mte_set_num_threads(3) == MTE_OK, "set 3");
  CHECK(mte_get_num_threads() == (mte_has_openmp() ? 3 : 1), "get %d",
        mte_get_num_threads());
  CHECK(strcmp(mte_kernels(), "sgemm") == 0 || strstr(mte_kernels(), "sgemm"), "kernels");
  return mte_test_summary("test_cpu");
}
