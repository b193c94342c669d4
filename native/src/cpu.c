/*
 * cpu.c - what the CPU can do, and which microkernels we therefore use.
 *
 * Detection (once, cached):
 *   x86-64   CPUID leaves 1 and 7 give the instruction sets; XGETBV tells whether the OS
 *            saves the wide registers (YMM for AVX, ZMM/opmask for AVX-512). An instruction
 *            set counts only if both agree.
 *   aarch64  NEON (Advanced SIMD) is part of the architecture; extras (dot product, fp16,
 *            i8mm, SVE) come from the Linux auxiliary vector (getauxval).
 *
 * Dispatch: the ISA table lists the ISAs compiled into this build, best first, each row
 * naming that ISA's descriptor of every kernel family (sgemm, epilogue, im2col,
 * depthwise3x3, pool, winograd, ..., qgemm, qdepthwise, bf16; see mte_internal.h). A row may
 * reuse another ISA's descriptors (avx512vnni runs the avx512 float kernels, neondot the neon
 * ones). We take the first row the CPU supports,
 * at or below the cap given by MTE_ISA (see mte.h), and keep a pointer to it: every kernel
 * reads its family's column from that one row, so switching the ISA switches them all.
 */
#define _POSIX_C_SOURCE 200809L /* pthread_once */
#define _DEFAULT_SOURCE         /* syscall (the AMX permission) */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "mte_bf16_internal.h"
#include "mte_conv_internal.h"
#include "mte_convdirect_internal.h"
#include "mte_depthwise_internal.h"
#include "mte_epilogue.h"
#include "mte_internal.h"
#include "mte_pool_internal.h"
#include "mte_qelem_internal.h"
#include "mte_quant_internal.h"
#include "mte_transformer_internal.h"
#include "mte_winograd_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

/* ---------------------------------------------------------------- detection */

static const char *const k_feature_names[64] = {
    [0] = "sse2",         [1] = "sse4.1",       [2] = "avx",          [3] = "avx2",
    [4] = "fma",          [5] = "f16c",         [6] = "avx512f",      [7] = "avx512bw",
    [8] = "avx512dq",     [9] = "avx512vl",     [10] = "avx512_vnni", [11] = "avx512_bf16",
    [12] = "avx_vnni",    [13] = "amx_bf16",    [14] = "amx_int8",    [15] = "avx512_vbmi", [20] = "neon",        [21] = "asimddp",     [22] = "fp16",
    [23] = "i8mm",        [24] = "sve",          [25] = "bf16",
};

const char *mte_cpu_feature_name(int bit) {
  if (bit < 0 || bit > 63) return NULL;
  return k_feature_names[bit];
}

#if defined(__x86_64__) || defined(__i386__)
static uint64_t xgetbv0(void) {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return ((uint64_t)edx << 32) | eax;
}

/* Linux: ask once for the AMX tile data state (XFEATURE_XTILEDATA, 18); elsewhere: no AMX */
static int amx_permitted(void) {
#if defined(__x86_64__) && defined(__linux__) && defined(SYS_arch_prctl)
  return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18) == 0;
#else
  return 0;
#endif
}

static uint64_t detect_features(void) {
  unsigned int a, b, c, d;
  uint64_t f = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
  unsigned int ecx1 = c, edx1 = d;
  if (edx1 & (1u << 26)) f |= MTE_CPU_SSE2;
  if (ecx1 & (1u << 19)) f |= MTE_CPU_SSE41;

  /* OS support: OSXSAVE set, then XCR0 bits 1,2 (SSE, AVX state), 5,6,7 (AVX-512 state) */
  int os_avx = 0, os_avx512 = 0;
  if (ecx1 & (1u << 27)) {
    uint64_t xcr0 = xgetbv0();
    os_avx = (xcr0 & 0x6) == 0x6;
    os_avx512 = os_avx && (xcr0 & 0xE0) == 0xE0;
  }
  if (!os_avx) return f;
  if (ecx1 & (1u << 28)) f |= MTE_CPU_AVX;
  if (ecx1 & (1u << 12)) f |= MTE_CPU_FMA;
  if (ecx1 & (1u << 29)) f |= MTE_CPU_F16C;

  unsigned int max_leaf = __get_cpuid_max(0, NULL);
  if (max_leaf < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  unsigned int ebx7 = b, ecx7 = c;
  if (ebx7 & (1u << 5)) f |= MTE_CPU_AVX2;
  if (os_avx512) {
    if (ebx7 & (1u << 16)) f |= MTE_CPU_AVX512F;
    if (ebx7 & (1u << 17)) f |= MTE_CPU_AVX512DQ;
    if (ebx7 & (1u << 30)) f |= MTE_CPU_AVX512BW;
    if (ebx7 & (1u << 31)) f |= MTE_CPU_AVX512VL;
    if (ecx7 & (1u << 11)) f |= MTE_CPU_AVX512_VNNI;
    if (ecx7 & (1u << 1)) f |= MTE_CPU_AVX512_VBMI;
  }
  const unsigned int edx7 = d;
  __cpuid_count(7, 1, a, b, c, d);
  if (a & (1u << 4)) f |= MTE_CPU_AVX_VNNI;
  if (os_avx512 && (a & (1u << 5))) f |= MTE_CPU_AVX512_BF16;
  /* AMX: AMX-TILE (edx bit 24) with AMX-BF16 (22) / AMX-INT8 (25), the OS saving the tile
   * state (XCR0 bits 17, 18), and, on Linux, the process allowed to use it: the tile data
   * is 8 KiB of signal-frame state that a process must ask for (ARCH_REQ_XCOMP_PERM). */
  if (os_avx512 && (edx7 & (1u << 24)) && (xgetbv0() & 0x60000) == 0x60000 && amx_permitted()) {
    if (edx7 & (1u << 22)) f |= MTE_CPU_AMX_BF16;
    if (edx7 & (1u << 25)) f |= MTE_CPU_AMX_INT8;
  }
  return f;
}
#elif defined(__aarch64__)
static uint64_t detect_features(void) {
  uint64_t f = MTE_CPU_NEON; /* mandatory in AArch64 */
#if defined(__linux__)
  unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  if (hw & (1ul << 20)) f |= MTE_CPU_ARM_DOTPROD; /* HWCAP_ASIMDDP */
  if (hw & (1ul << 10)) f |= MTE_CPU_ARM_FP16;    /* HWCAP_ASIMDHP */
  if (hw & (1ul << 22)) f |= MTE_CPU_ARM_SVE;     /* HWCAP_SVE */
  if (hw2 & (1ul << 13)) f |= MTE_CPU_ARM_I8MM;   /* HWCAP2_I8MM */
  if (hw2 & (1ul << 14)) f |= MTE_CPU_ARM_BF16;   /* HWCAP2_BF16 */
#endif
  return f;
}
#else
static uint64_t detect_features(void) { return 0; }
#endif

static atomic_int g_features_ready = 0;
static _Atomic uint64_t g_features = 0;

/* the features named in MTE_CPU_DISABLE (comma-separated), to mask off */
static uint64_t disabled_features(void) {
  const char *env = getenv("MTE_CPU_DISABLE");
  uint64_t off = 0;
  while (env && *env) {
    const char *end = strchr(env, ',');
    const size_t n = end ? (size_t)(end - env) : strlen(env);
    for (int bit = 0; bit < 64; ++bit)
      if (k_feature_names[bit] && strlen(k_feature_names[bit]) == n &&
          strncmp(k_feature_names[bit], env, n) == 0)
        off |= 1ull << bit;
    env = end ? end + 1 : NULL;
  }
  return off;
}

uint64_t mte_cpu_features(void) {
  /* Detection is idempotent, so two threads racing here just compute the same value. */
  if (!atomic_load_explicit(&g_features_ready, memory_order_acquire)) {
    atomic_store(&g_features, detect_features() & ~disabled_features());
    atomic_store_explicit(&g_features_ready, 1, memory_order_release);
  }
  return atomic_load(&g_features);
}

/* Append `word` to the space-separated list in buf (pos chars so far, NUL-terminated);
 * returns the new length. A word that does not fit is left out. */
static size_t append_word(char *buf, size_t cap, size_t pos, const char *word) {
  size_t n = strlen(word);
  if (pos + n + 2 > cap) return pos;
  if (pos) buf[pos++] = ' ';
  memcpy(buf + pos, word, n);
  pos += n;
  buf[pos] = '\0';
  return pos;
}

const char *mte_cpu_features_string(void) {
  /* Built from a constant table: 64 names of at most 12 chars fit easily. Written once
   * per call into a per-thread buffer so no caller ever sees a half-written string. */
  static _Thread_local char buf[64 * 16];
  uint64_t f = mte_cpu_features();
  size_t pos = 0;
  buf[0] = '\0';
  for (int bit = 0; bit < 64; ++bit)
    if ((f & (1ull << bit)) && k_feature_names[bit])
      pos = append_word(buf, sizeof buf, pos, k_feature_names[bit]);
  return buf;
}

/* ---------------------------------------------------------------- the ISA table */

/*
 * One row per ISA compiled in, best first; one column per kernel family (MTE_FAMILIES in
 * mte_internal.h). A column left out (NULL) means "no specialised kernel for this family":
 * fill_rows() below, the one place that does it, takes the descriptor of the row the row
 * `extends` (if it names one; avx512vnni adds only its int8 kernels to avx512), else the generic
 * row's.
 * Adding an ISA: its files in src/arch/<isa>/ and a row here. Adding a family: its
 * descriptor type, an X(...) line in MTE_FAMILIES and its descriptors in the rows.
 */
static const mte_isa k_isas[] = {
#ifdef MTE_HAVE_X86_KERNELS
    /* avx512 plus VNNI: its own int8 GEMM and depthwise, every other family the avx512 one */
    {.name = "avx512vnni",
     .needs = MTE_CPU_AVX512F | MTE_CPU_AVX512BW | MTE_CPU_AVX512DQ | MTE_CPU_AVX512VL |
              MTE_CPU_FMA | MTE_CPU_AVX2 | MTE_CPU_AVX512_VNNI,
     .extends = "avx512",
     .qgemm = &mte_qgemm_kernel_amx,
     .qdepthwise = &mte_qdw_kernel_avx512vnni,
     .qelem = &mte_qelem_kernel_avx512vnni},
    {.name = "avx512",
     .needs = MTE_CPU_AVX512F | MTE_CPU_AVX512BW | MTE_CPU_AVX512DQ | MTE_CPU_AVX512VL |
              MTE_CPU_FMA | MTE_CPU_AVX2,
     .sgemm = &mte_sgemm_kernel_avx512,
     .epilogue = &mte_epilogue_kernel_avx512,
     .im2col = &mte_im2col_kernel_avx512,
     .depthwise3x3 = &mte_dw3x3_kernel_avx512,
     .depthwise = &mte_dw_kernel_avx512,
     .pool = &mte_pool_kernel_avx512,
     .winograd = &mte_wino_kernels_avx512,
     .rowwise = &mte_rowwise_kernel_avx512,
     .attention = &mte_attention_kernel_avx512,
     .qgemm = &mte_qgemm_kernel_avx512,
     .qdepthwise = &mte_qdw_kernel_avx512,
     .convdirect = &mte_convdir_kernel_avx512,
     .qelem = &mte_qelem_kernel_avx512,
     .bf16 = &mte_bf16_kernel_avx512_amx},
    {.name = "avx2",
     .needs = MTE_CPU_AVX2 | MTE_CPU_FMA,
     .sgemm = &mte_sgemm_kernel_avx2,
     .epilogue = &mte_epilogue_kernel_avx2,
     .im2col = &mte_im2col_kernel_avx2,
     .depthwise3x3 = &mte_dw3x3_kernel_avx2,
     .depthwise = &mte_dw_kernel_avx2,
     .pool = &mte_pool_kernel_avx2,
     .winograd = &mte_wino_kernels_avx2,
     .rowwise = &mte_rowwise_kernel_avx2,
     .attention = &mte_attention_kernel_avx2,
     .qgemm = &mte_qgemm_kernel_avx2,
     .qdepthwise = &mte_qdw_kernel_avx2,
     .qelem = &mte_qelem_kernel_avx2,
     .bf16 = &mte_bf16_kernel_avx2},
#endif
#ifdef MTE_HAVE_NEON_KERNELS
    /* neon plus the dot product (SDOT): its own int8 GEMM, every other column the neon one */
    {.name = "neondot",
     .needs = MTE_CPU_NEON | MTE_CPU_ARM_DOTPROD,
     .extends = "neon",
     .qgemm = &mte_qgemm_kernel_neondot},
    {.name = "neon", /* epilogue, im2col, rowwise, attention: generic C is NEON code already */
     .needs = MTE_CPU_NEON,
     .sgemm = &mte_sgemm_kernel_neon,
     .depthwise3x3 = &mte_dw3x3_kernel_neon,
     .depthwise = &mte_dw_kernel_neon,
     .pool = &mte_pool_kernel_neon,
     .winograd = &mte_wino_kernels_neon,
     .qgemm = &mte_qgemm_kernel_neon,
     .qdepthwise = &mte_qdw_kernel_neon,
     .bf16 = &mte_bf16_kernel_neon},
#endif
    /* closes every list: complete, always supported, the fallback of every column */
    {.name = "generic",
     .needs = 0,
     .sgemm = &mte_sgemm_kernel_generic,
     .epilogue = &mte_epilogue_kernel_generic,
     .im2col = &mte_im2col_kernel_generic,
     .depthwise3x3 = &mte_dw3x3_kernel_generic,
     .depthwise = &mte_dw_kernel_generic,
     .pool = &mte_pool_kernel_generic,
     .winograd = &mte_wino_kernels_generic,
     .rowwise = &mte_rowwise_kernel_generic,
     .attention = &mte_attention_kernel_generic,
     .qgemm = &mte_qgemm_kernel_generic,
     .qdepthwise = &mte_qdw_kernel_generic,
     .convdirect = &mte_convdir_kernel_generic,
     .qelem = &mte_qelem_kernel_generic,
     .bf16 = &mte_bf16_kernel_generic},
};
#define N_ISAS ((int)(sizeof k_isas / sizeof k_isas[0]))
#define GENERIC (N_ISAS - 1)

/* The rows as dispatch uses them: k_isas with every NULL column taken from the generic row.
 * Filled once, before any pointer to them is handed out. */
static mte_isa g_rows[N_ISAS];
static pthread_once_t g_rows_once = PTHREAD_ONCE_INIT;

static void fill_rows(void) {
  for (int i = 0; i < N_ISAS; ++i) {
    g_rows[i] = k_isas[i];
    int base = GENERIC;
    for (int j = 0; k_isas[i].extends && j < N_ISAS; ++j)
      if (strcmp(k_isas[j].name, k_isas[i].extends) == 0) base = j;
#define FALLBACK(column, type)                                                   \
  if (!g_rows[i].column) g_rows[i].column = k_isas[base].column;                 \
  if (!g_rows[i].column) g_rows[i].column = k_isas[GENERIC].column;
    MTE_FAMILIES(FALLBACK)
#undef FALLBACK
  }
}

static const mte_isa *row(int i) {
  pthread_once(&g_rows_once, fill_rows);
  return &g_rows[i];
}

/* ---------------------------------------------------------------- dispatch */

/* the only ISA name lookup: the index of `name` in k_isas, or -1 */
static int isa_index(const char *name) {
  if (!name) return -1;
  for (int i = 0; i < N_ISAS; ++i)
    if (strcmp(k_isas[i].name, name) == 0) return i;
  return -1;
}

static int isa_supported(int i) {
  return (mte_cpu_features() & k_isas[i].needs) == k_isas[i].needs;
}

/* First supported ISA at or after position `from` in the best-first list. */
static int best_from(int from) {
  for (int i = from < 0 ? 0 : from; i < N_ISAS; ++i)
    if (isa_supported(i)) return i;
  return GENERIC;
}

static int choose_from_env(void) {
  const char *env = getenv("MTE_ISA");
  if (!env || !*env || strcmp(env, "auto") == 0) return best_from(0);
  int i = isa_index(env);
  return best_from(i < 0 ? 0 : i); /* unknown or not compiled in: auto */
}

static const mte_isa *_Atomic g_active = NULL;

const mte_isa *mte__isa(void) {
  const mte_isa *e = atomic_load_explicit(&g_active, memory_order_acquire);
  if (MTE_LIKELY(e != NULL)) return e;
  const mte_isa *fresh = row(choose_from_env());
  const mte_isa *expected = NULL;
  /* keep whatever another thread (or mte_set_isa) stored first */
  if (!atomic_compare_exchange_strong(&g_active, &expected, fresh)) return expected;
  return fresh;
}

const char *mte_active_isa(void) { return mte__isa()->name; }

int mte_isa_available(const char *name) {
  int i = isa_index(name);
  return i >= 0 && isa_supported(i);
}

int mte_set_isa(const char *name) {
  if (!name) return MTE_EINVAL;
  if (strcmp(name, "auto") == 0) {
    atomic_store(&g_active, row(best_from(0)));
    return MTE_OK;
  }
  int i = isa_index(name);
  if (i < 0) {
    static const char *const known[] = {"generic", "avx2", "avx512", "avx512vnni", "neon",
                                        "neondot"};
    for (size_t k = 0; k < sizeof known / sizeof known[0]; ++k)
      if (strcmp(known[k], name) == 0) return MTE_EUNSUPPORTED; /* not in this build */
    return MTE_EINVAL;
  }
  if (!isa_supported(i)) return MTE_EUNSUPPORTED;
  atomic_store(&g_active, row(i)); /* every family switches at once */
  return MTE_OK;
}

const char *mte_compiled_isas(void) {
  static _Thread_local char buf[128];
  size_t pos = 0;
  buf[0] = '\0';
  for (int i = 0; i < N_ISAS; ++i) pos = append_word(buf, sizeof buf, pos, k_isas[i].name);
  return buf;
}

/* ---------------------------------------------------------------- per-family query */

#define FAMILY_NAME(column, type) #column,
static const char *const k_families[] = {MTE_FAMILIES(FAMILY_NAME)};
#undef FAMILY_NAME
#define N_FAMILIES ((int)(sizeof k_families / sizeof k_families[0]))

int mte_family_count(void) { return N_FAMILIES; }

const char *mte_family_name(int i) { return i >= 0 && i < N_FAMILIES ? k_families[i] : NULL; }

const char *mte_family_isa(const char *family) {
  if (!family) return NULL;
  const mte_isa *r = mte__isa();
  int i = 0; /* the column's position in MTE_FAMILIES */
#define FAMILY_ISA(column, type) \
  if (strcmp(family, k_families[i++]) == 0) return r->column->isa;
  MTE_FAMILIES(FAMILY_ISA)
#undef FAMILY_ISA
  return NULL;
}
