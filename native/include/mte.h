/*
 * mte.h - the public C API of libmte, the kernel library under minitorch_edge.
 *
 * A plain C11 API: no Python, no C++ required. Everything is row-major (C order),
 * sizes are int64_t, and every entry point returns an mte_status (0 = success) or a
 * plain value. Kernels never read or write outside the buffers described by their
 * arguments; invalid arguments give MTE_EINVAL and leave outputs untouched.
 *
 * Contents
 *   1. version and status codes
 *   2. CPU features and ISA dispatch  (mte_cpu_features, mte_active_isa, MTE_ISA env var,
 *                                     mte_family_isa: the ISA each kernel family runs)
 *   3. threads                       (OpenMP when built with it, otherwise 1)
 *   4. workspace arena               (mte_arena_*: aligned scratch memory reused across calls)
 *   5. SGEMM                         (mte_sgemm, mte_sgemm_ex with a fused epilogue, batched)
 */
#ifndef MTE_H
#define MTE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* MTE_API marks the exported functions. MTE_EMBEDDED (set by setup.py when libmte is
 * linked into the Python extension) keeps them private to that module instead. */
#if defined(MTE_EMBEDDED)
#define MTE_API
#elif defined(_WIN32) && defined(MTE_BUILD_SHARED)
#define MTE_API __declspec(dllexport)
#elif defined(__GNUC__)
#define MTE_API __attribute__((visibility("default")))
#else
#define MTE_API
#endif

/* ---------------------------------------------------------------- 1. version, status */

#define MTE_VERSION_MAJOR 0
#define MTE_VERSION_MINOR 1
#define MTE_VERSION_PATCH 0
#define MTE_VERSION_STRING "0.1.0"
/* MTE_VERSION = major*10000 + minor*100 + patch, for #if comparisons */
#define MTE_VERSION (MTE_VERSION_MAJOR * 10000 + MTE_VERSION_MINOR * 100 + MTE_VERSION_PATCH)

MTE_API const char *mte_version(void); /* "0.1.0" */

typedef enum mte_status {
  MTE_OK = 0,
  MTE_EINVAL = -1,      /* an argument is invalid (negative size, bad leading dimension...) */
  MTE_ENOMEM = -2,      /* an allocation failed */
  MTE_EOVERFLOW = -3,   /* a size computation would overflow */
  MTE_EUNSUPPORTED = -4,/* not available on this CPU or in this build */
  MTE_EBUSY = -5,       /* the object is in use (e.g. growing an arena that has live blocks) */
  MTE_ECORRUPT = -6     /* a guard word was overwritten (something wrote out of bounds) */
} mte_status;

MTE_API const char *mte_status_string(int status); /* "MTE_EINVAL: invalid argument", ... */

/* ---------------------------------------------------------------- 2. CPU features, ISA */

/* Bit flags returned by mte_cpu_features(). x86 flags are only set when the OS also saves
 * the corresponding register state (checked with XGETBV). */
#define MTE_CPU_SSE2 (1ull << 0)
#define MTE_CPU_SSE41 (1ull << 1)
#define MTE_CPU_AVX (1ull << 2)
#define MTE_CPU_AVX2 (1ull << 3)
#define MTE_CPU_FMA (1ull << 4)
#define MTE_CPU_F16C (1ull << 5)
#define MTE_CPU_AVX512F (1ull << 6)
#define MTE_CPU_AVX512BW (1ull << 7)
#define MTE_CPU_AVX512DQ (1ull << 8)
#define MTE_CPU_AVX512VL (1ull << 9)
#define MTE_CPU_AVX512_VNNI (1ull << 10)
#define MTE_CPU_AVX512_BF16 (1ull << 11)
#define MTE_CPU_AVX_VNNI (1ull << 12)
/* AMX (Sapphire Rapids and later): tiles, with Linux's permission for their state granted */
#define MTE_CPU_AMX_BF16 (1ull << 13)
#define MTE_CPU_AMX_INT8 (1ull << 14)
/* AVX-512 VBMI (Ice Lake, Zen 4 and later; not Skylake-X / Cascade Lake): byte permutes */
#define MTE_CPU_AVX512_VBMI (1ull << 15)
#define MTE_CPU_NEON (1ull << 20)
#define MTE_CPU_ARM_DOTPROD (1ull << 21)
#define MTE_CPU_ARM_FP16 (1ull << 22)
#define MTE_CPU_ARM_I8MM (1ull << 23)
#define MTE_CPU_ARM_SVE (1ull << 24)
#define MTE_CPU_ARM_BF16 (1ull << 25) /* FEAT_BF16: BFDOT, BFMMLA (HWCAP2_BF16) */

/* Features of the CPU we run on (detected once, then cached). The environment variable
 * MTE_CPU_DISABLE (names as mte_cpu_feature_name gives, comma-separated, e.g.
 * "amx_bf16,amx_int8") masks features off, to run and test the kernels a CPU without them
 * would run. */
MTE_API uint64_t mte_cpu_features(void);
/* The same as space-separated lower-case names, e.g. "sse2 sse4.1 avx avx2 fma ...". */
MTE_API const char *mte_cpu_features_string(void);
/* Name of feature bit `bit` (0..63), or NULL if the bit is unused. */
MTE_API const char *mte_cpu_feature_name(int bit);

/*
 * ISA dispatch. Each kernel family has one kernel per ISA: "generic" (portable C, always
 * present), "avx2" (AVX2+FMA), "avx512" (AVX-512 F/BW/DQ/VL), "avx512vnni" (avx512 plus
 * VNNI: its own int8 GEMM, avx512's other kernels), "neon" (aarch64).
 * The best ISA that is both compiled in and supported by the CPU is chosen at first use.
 * The environment variable MTE_ISA=generic|avx2|avx512|avx512vnni|neon|auto caps that choice: the
 * library uses the best available ISA that is not above the requested one (so
 * MTE_ISA=avx512 on an AVX2-only machine gives avx2). Unknown values mean "auto".
 */
MTE_API const char *mte_active_isa(void);
/* Force an ISA at run time ("auto" = best available, ignoring MTE_ISA). Returns
 * MTE_EUNSUPPORTED (and changes nothing) if `name` is not compiled in or not supported by
 * this CPU, MTE_EINVAL for an unknown name. Safe to call while other threads run kernels:
 * each call picks its kernel once at its start. */
MTE_API int mte_set_isa(const char *name);
/* 1 if `name` can be used on this machine with this build, else 0. */
MTE_API int mte_isa_available(const char *name);
/* Space-separated names of the ISAs compiled into this build, best first, e.g.
 * "avx512 avx2 generic". */
MTE_API const char *mte_compiled_isas(void);

/*
 * Per-family dispatch. The ISA-specific code comes in kernel families: "sgemm" (the GEMM
 * microkernel, also under conv and Winograd), "epilogue" (bias/residual/activation on a
 * tile), "im2col" (conv packing and col2im loops), "depthwise3x3", "depthwise" (the general
 * K x K depthwise forward), "pool" (pooling row
 * kernels), "winograd" (the transforms), "qgemm" (the int8 GEMM microkernel) and
 * "qdepthwise" (int8 depthwise 3x3), "bf16" (the bfloat16 / float16 GEMM's conversions
 * and pair-dot microkernel, mte_bf16.h). One table maps each ISA to its kernel of every
 * family; the active ISA selects all of them together (mte_set_isa, MTE_ISA). An ISA with
 * no specialised kernel for a family runs the generic one (e.g. neon's epilogue is the
 * portable C, which the compiler turns into NEON code anyway).
 *
 *     for (int i = 0; i < mte_family_count(); ++i)
 *       printf("%s: %s\n", mte_family_name(i), mte_family_isa(mte_family_name(i)));
 */
MTE_API int mte_family_count(void);
/* Name of family i (0 <= i < mte_family_count()), else NULL. */
MTE_API const char *mte_family_name(int i);
/* The ISA whose kernel of `family` runs now: the active ISA where it specialises that
 * family, else "generic". NULL for an unknown family name. */
MTE_API const char *mte_family_isa(const char *family);

/* ---------------------------------------------------------------- 3. threads */

#define MTE_MAX_THREADS 1024

/* Number of threads kernels may use. Default: OpenMP's default (omp_get_max_threads()),
 * or 1 when built without OpenMP. n outside [1, MTE_MAX_THREADS] gives MTE_EINVAL and
 * changes nothing; without OpenMP any valid n is
 * accepted and 1 is used. This does not change the OpenMP setting of the process.
 * In a child process created by fork() kernels always use 1 thread (GNU OpenMP's thread
 * pool does not survive fork; a parallel region there could hang). */
MTE_API int mte_set_num_threads(int n);
MTE_API int mte_get_num_threads(void);
/* fp32 FMA peak of one core with the active ISA, in GFLOP/s: the best rate of a register-only
 * FMA loop over about `seconds` (0.1 if <= 0). The ceiling "% of peak" is quoted against. */
MTE_API double mte_peak_gflops(double seconds);
MTE_API int mte_has_openmp(void); /* 1 if built with OpenMP */

/* ---------------------------------------------------------------- 4. workspace arena */

/*
 * A bump allocator over one 64-byte-aligned block, made to be reused across calls:
 *
 *     mte_arena_reset(a);                    // start of a call: forget earlier blocks
 *     mte_arena_reserve(a, bytes_needed);    // grow (only if too small) before allocating
 *     float *p = mte_arena_alloc(a, n);      // 64-byte aligned, NULL if it does not fit
 *
 * alloc never grows or moves the block (earlier pointers stay valid), so it is bounds
 * checked: a request that does not fit returns NULL. reserve grows the block only when
 * the arena holds no live allocation (else MTE_EBUSY). Each allocation is followed by a
 * guard word checked by mte_arena_check(), which catches kernels writing past their
 * buffer. peak_bytes is the largest amount ever in use at once (guards included).
 */
typedef struct mte_arena mte_arena;

/* Bytes mte_arena_alloc() consumes for a request of `bytes` (alignment + guard). Use it to
 * size a reserve() for several allocations. Returns 0 on overflow. */
MTE_API size_t mte_arena_footprint(size_t bytes);

MTE_API mte_arena *mte_arena_create(size_t initial_bytes); /* NULL on failure */
MTE_API void mte_arena_destroy(mte_arena *arena);          /* NULL is fine */
MTE_API int mte_arena_reserve(mte_arena *arena, size_t bytes);
MTE_API void *mte_arena_alloc(mte_arena *arena, size_t bytes);
MTE_API void mte_arena_reset(mte_arena *arena);
MTE_API size_t mte_arena_capacity(const mte_arena *arena);
MTE_API size_t mte_arena_used(const mte_arena *arena);
MTE_API size_t mte_arena_peak_bytes(const mte_arena *arena);
MTE_API void mte_arena_reset_peak(mte_arena *arena); /* peak = bytes in use now */
MTE_API int mte_arena_check(const mte_arena *arena); /* MTE_OK or MTE_ECORRUPT */

/* The library's shared default arena, used by kernels called with arena == NULL.
 * A call that finds it busy (another thread is inside a kernel) uses a private temporary
 * arena instead, so concurrent calls are safe. */
MTE_API size_t mte_default_arena_peak_bytes(void);
/* Start a new peak measurement (peak = bytes in use now, 0 between calls): run one call
 * after it and mte_default_arena_peak_bytes() is that call's workspace. */
MTE_API void mte_default_arena_reset_peak(void);
MTE_API size_t mte_default_arena_capacity(void);
/* Blocks allocated by all arenas since the process started (each grow of an arena, each
 * private arena). In steady state (a repeated call with the same shapes) it stays put. */
MTE_API uint64_t mte_workspace_allocations(void);
/* Free the default arena's memory (it is re-created on next use). */
MTE_API void mte_default_arena_release(void);

/* ---------------------------------------------------------------- 5. SGEMM */

/*
 * C = alpha * op(A) @ op(B) + beta * C, all row-major float32.
 *   op(A) is M x K: A is stored M x K (lda >= K) or, if trans_a, K x M (lda >= M).
 *   op(B) is K x N: B is stored K x N (ldb >= N) or, if trans_b, N x K (ldb >= K).
 *   C is M x N, ldc >= N.
 * BLAS conventions: if beta == 0, C is not read (NaN/Inf in C are overwritten); if K == 0
 * or alpha == 0, A and B are not read and C = beta * C. M == 0 or N == 0 is a no-op.
 * Returns MTE_OK, MTE_EINVAL (negative size, bad leading dimension, NULL pointer with a
 * non-empty matrix), MTE_EOVERFLOW or MTE_ENOMEM.
 */
MTE_API int mte_sgemm(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                      const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                      float *C, int64_t ldc);

/* Fused epilogue applied to each finished tile of C while it is still in cache:
 *   C = act(alpha * op(A) @ op(B) + beta * C + bias + residual)
 * (bias added first, then the residual, then the activation). */
typedef enum mte_bias_mode {
  MTE_BIAS_NONE = 0,
  MTE_BIAS_PER_ROW = 1, /* bias[i] added to row i (length M), e.g. conv output channels */
  MTE_BIAS_PER_COL = 2  /* bias[j] added to column j (length N), e.g. linear layers */
} mte_bias_mode;

typedef enum mte_activation {
  MTE_ACT_NONE = 0,
  MTE_ACT_RELU = 1,      /* max(x, 0) */
  MTE_ACT_RELU6 = 2,     /* min(max(x, 0), 6) */
  MTE_ACT_GELU = 3,      /* 0.5 x (1 + erf(x / sqrt 2)): PyTorch's gelu(approximate='none');
                            erf by a polynomial with |error| < 1e-7 */
  MTE_ACT_GELU_TANH = 4, /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))):
                            PyTorch's gelu(approximate='tanh') */
  MTE_ACT_SILU = 5,      /* x * sigmoid(x) = x / (1 + exp(-x)): PyTorch's silu (swish) */
  MTE_ACT_HARDSWISH = 6  /* x * relu6(x + 3) / 6: PyTorch's hardswish */
} mte_activation;
/* At x = -inf both GELUs give -0 and at +inf they give +inf (the limits); NaN stays NaN.
 * PyTorch gives NaN for gelu(+-inf) and gelu_tanh(-inf) (inf * 0 inside its formula).
 * SiLU and hardswish give NaN at -inf (-inf * 0) and +inf at +inf, as PyTorch does. */

/* A zero-initialised struct is "no epilogue". The residual fields come last, after the
 * original three, so an initialiser that sets only those (e.g. {MTE_BIAS_PER_COL, bias,
 * MTE_ACT_RELU}) keeps working and means "no residual". */
typedef struct mte_epilogue {
  int bias_mode;         /* mte_bias_mode */
  const float *bias;     /* required unless bias_mode == MTE_BIAS_NONE */
  int activation;        /* mte_activation */
  const float *residual; /* NULL = none, else an M x N row-major matrix, added before act */
  int64_t ld_residual;   /* its leading dimension, >= N (when residual != NULL) */
} mte_epilogue;

/* Residual rules: it is read once per element, after that element of C is final, so it may
 * alias A or B, but it must not overlap C (MTE_EINVAL): C is overwritten tile by tile, so a
 * residual inside C would be read half-updated. To add C itself use beta = 1, which gives
 * the same act(alpha * A @ B + C + bias). */
/* mte_sgemm with an optional epilogue (NULL = none) and an optional arena for the packed
 * panels (NULL = the default arena). */
MTE_API int mte_sgemm_ex(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                         const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                         float *C, int64_t ldc, const mte_epilogue *epilogue, mte_arena *arena);

/* `batch` independent GEMMs; matrix b uses A + b*stride_a, B + b*stride_b, C + b*stride_c
 * (a stride of 0 broadcasts one matrix over the batch). stride_c must be 0 only if
 * batch <= 1. */
MTE_API int mte_sgemm_batched(int trans_a, int trans_b, int64_t batch, int64_t M, int64_t N,
                              int64_t K, float alpha, const float *A, int64_t lda,
                              int64_t stride_a, const float *B, int64_t ldb, int64_t stride_b,
                              float beta, float *C, int64_t ldc, int64_t stride_c);

/* Names of the operation groups built into this library, space separated: "sgemm conv2d
 * depthwise3x3 depthwise winograd3x3 pool2d optim transformer int8 conv2d_direct bf16"
 * (bf16: the bfloat16 / float16 GEMM and conv2d of mte_bf16.h). (The ISA-dispatched kernel families,
 * which these operations are built from, are listed by mte_family_name in section 2.) */
MTE_API const char *mte_kernels(void);

#ifdef __cplusplus
}
#endif

#include "mte_depthwise.h"

#include "mte_pool.h"

#include "mte_conv.h"

#include "mte_winograd.h"

#include "mte_optim.h"

#include "mte_transformer.h"

#include "mte_quant.h"

#endif /* MTE_H */
