/*
 * epilogue_body.h - the body of the epilogue descriptor mte_epilogue_kernel_<isa> (see
 * mte_epilogue.h). Included by src/arch/<isa>/epilogue_tile.c after
 * `#define MTE_EP_ISA "<isa>"` and `#define MTE_EP_TABLE mte_epilogue_kernel_<isa>`, so
 * one source is compiled once per ISA with that ISA's flags. Every loop below is branch-free
 * so that -O3 vectorises it.
 */
#include "mte_epilogue.h"
#include "mte_vmath.h" /* erf, exp; sets no-trapping-math (selects vectorise) */

static inline float ep_gelu(float x) {
  const float v = 0.5f * x * (1.0f + mte_vm_erf(x * 0.70710678118654752f));
  return x < -10.0f ? -0.0f : v; /* x*Phi(x) > -1e-22 there; gelu(-inf) = -0, NaN stays */
}

static inline float ep_gelu_tanh(float x) {
  const float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  float z = -2.0f * u;
  z = z > -87.0f ? z : -87.0f; /* also NaN -> -87: exp sees finite values only */
  z = z < 88.0f ? z : 88.0f;
  const float v = x / (1.0f + mte_vm_exp(z));
  return x < -10.0f ? -0.0f : v; /* > -1e-36 there (and -inf / huge is not NaN) */
}

/* SiLU: x * sigmoid(x), sigmoid from e = exp(-|x|) in (0, 1] (never overflows):
 * 1 / (1 + e) for x >= 0, e / (1 + e) for x < 0, so the relative error stays a few ulp on
 * both sides. exp(-|x|) is 0 below -87: silu(x) = -0 for x < -87 (true value > -1e-36),
 * silu(-inf) = -inf * 0 = NaN and silu(+inf) = +inf (as PyTorch); NaN stays NaN. */
static inline float ep_silu(float x) {
  const float e = mte_vm_exp_le0(-fabsf(x));
  return x * ((x < 0.0f ? e : 1.0f) / (1.0f + e));
}

/* hardswish: x * relu6(x + 3) / 6, in PyTorch's order of operations (so float32 results
 * are the same); -inf gives NaN (-inf * 0) as in PyTorch, NaN stays NaN (relu6 keeps it). */
static inline float ep_hardswish(float x) {
  float r = x + 3.0f;
  r = r <= 0.0f ? 0.0f : r;
  r = r > 6.0f ? 6.0f : r;
  return x * r / 6.0f;
}

static inline float ep_none(float x) { return x; }
/* ReLU and ReLU6 keep NaN as NaN (as PyTorch and numpy do): written so that a NaN fails
 * every comparison that would replace it. */
static inline float ep_relu(float x) { return x <= 0.0f ? 0.0f : x; }
static inline float ep_relu6(float x) {
  const float v = x <= 0.0f ? 0.0f : x;
  return v > 6.0f ? 6.0f : v;
}

#if defined(__GNUC__) && !defined(__clang__)
#define EP_IVDEP _Pragma("GCC ivdep") /* c, cb and rr never overlap (checked by callers) */
#else
#define EP_IVDEP
#endif

/* One pass over n <= EP_CHUNK values of a row: c = act(c + rb + cb + rr). cb and rr are
 * always readable (zeros when absent), so the loop has no branches; called with n equal to
 * a constant tile width where possible so that it is fully unrolled. */
#define EP_CHUNK 64
#define EP_ROW(F)                                                                    \
  static inline void ep_row_##F(float *c, int64_t n, float rb, const float *cb,      \
                                const float *rr) {                                   \
    EP_IVDEP                                                                         \
    for (int64_t j = 0; j < n; ++j) c[j] = ep_##F(c[j] + rb + cb[j] + rr[j]);        \
  }
EP_ROW(none)
EP_ROW(relu)
EP_ROW(relu6)
EP_ROW(gelu)
EP_ROW(gelu_tanh)
EP_ROW(silu)
EP_ROW(hardswish)

#define EP_TILE(F)                                                                   \
  for (int64_t i = 0; i < rows; ++i) {                                               \
    float *ci = c + i * ldc;                                                         \
    const float rb = t->row_bias ? t->row_bias[i] : 0.0f;                           \
    for (int64_t j = 0; j < cols; j += EP_CHUNK) {                                   \
      const float *cb = t->col_bias ? t->col_bias + j : zeros;                       \
      const float *rr = t->res ? t->res + i * t->ldr + j : zeros;                    \
      if (cols - j == 32)                                                            \
        ep_row_##F(ci + j, 32, rb, cb, rr); /* AVX-512 tile */                       \
      else if (cols - j == 16)                                                       \
        ep_row_##F(ci + j, 16, rb, cb, rr); /* AVX2 tile */                          \
      else                                                                           \
        ep_row_##F(ci + j, cols - j < EP_CHUNK ? cols - j : EP_CHUNK, rb, cb, rr);   \
    }                                                                                \
  }

static void epilogue_tile(float *c, int64_t ldc, int64_t rows, int64_t cols,
                          const mte_ep_tile *t) {
  static const float zeros[EP_CHUNK] = {0};
  switch (t->act) {
    case MTE_ACT_RELU: EP_TILE(relu) break;
    case MTE_ACT_RELU6: EP_TILE(relu6) break;
    case MTE_ACT_GELU: EP_TILE(gelu) break;
    case MTE_ACT_GELU_TANH: EP_TILE(gelu_tanh) break;
    case MTE_ACT_SILU: EP_TILE(silu) break;
    case MTE_ACT_HARDSWISH: EP_TILE(hardswish) break;
    default: EP_TILE(none) break;
  }
}

const mte_epilogue_kernel MTE_EP_TABLE = {MTE_EP_ISA, epilogue_tile};
