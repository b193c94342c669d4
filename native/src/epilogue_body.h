/*
 * epilogue_body.h - the body of the epilogue descriptor mte_epilogue_kernel_<isa> (see
 * mte_epilogue.h). Included by src/arch/<isa>/epilogue_tile.c after
 * `#define MTE_EP_ISA "<isa>"` and `#define MTE_EP_TABLE mte_epilogue_kernel_<isa>`, so
 * one source is compiled once per ISA with that ISA's flags. Every loop below is branch-free
 * so that -O3 vectorises it.
 */
#include <math.h>
#include <string.h>

#include "mte_epilogue.h"

/* GCC keeps a float select (t < 1 ? a : b) as a branch, which blocks vectorisation, unless
 * comparisons may be assumed not to trap; libmte never reads the FP exception flags. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

/* a * b + c, fused where the ISA has FMA (then fmaf is one instruction, and vectorises) */
#if defined(__FMA__) || defined(__aarch64__)
#define FMA(a, b, c) fmaf(a, b, c)
#else
#define FMA(a, b, c) ((a) * (b) + (c))
#endif

/* erf(x), |error| < 1e-7 (see mte_epilogue.h) */
static inline float ep_erf(float x) {
  const float t = fabsf(x), s = t * t;
  float p = 7.889240806e-05f;
  p = FMA(p, s, -8.020880632e-04f);
  p = FMA(p, s, 5.189540330e-03f);
  p = FMA(p, s, -2.685444802e-02f);
  p = FMA(p, s, 1.128360033e-01f);
  p = FMA(p, s, -3.761262596e-01f);
  p = FMA(p, s, 1.283791661e-01f);
  const float small = FMA(t, p, t); /* erf(t) = t * (2/sqrt(pi) + ...), the 1 kept exact */
  const float u = (t < 3.9f ? t : 3.9f) - 2.45f; /* NaN -> 3.9: no NaN inside, see caller */
  float q = -9.124693861e-06f;
  q = FMA(q, u, 2.651543036e-05f);
  q = FMA(q, u, 4.880992128e-05f);
  q = FMA(q, u, -3.067001817e-04f);
  q = FMA(q, u, 4.185112193e-04f);
  q = FMA(q, u, 4.297840351e-04f);
  q = FMA(q, u, -2.994741313e-03f);
  q = FMA(q, u, 6.976413541e-03f);
  q = FMA(q, u, -1.024917047e-02f);
  q = FMA(q, u, 1.023604535e-02f);
  q = FMA(q, u, -6.836764514e-03f);
  q = FMA(q, u, 2.789898543e-03f);
  q = FMA(q, u, 9.994694591e-01f);
  q = q < 1.0f ? q : 1.0f;
  const float r = t < 1.0f ? small : q;
  return copysignf(r, x);
}

/* exp(z) for finite z in [-87, 88] */
static inline float ep_exp(float z) {
  const float shifter = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
  float n = FMA(z, 1.44269504f, shifter);
  n -= shifter;
  float r = FMA(n, -0.693145752f, z); /* ln 2 = 0.693145752 + 1.42860677e-6 (Cody-Waite) */
  r = FMA(n, -1.42860677e-6f, r);
  float p = 1.0f / 5040.0f;
  p = FMA(p, r, 1.0f / 720.0f);
  p = FMA(p, r, 1.0f / 120.0f);
  p = FMA(p, r, 1.0f / 24.0f);
  p = FMA(p, r, 1.0f / 6.0f);
  p = FMA(p, r, 0.5f);
  p = FMA(p, r, 1.0f);
  p = FMA(p, r, 1.0f);
  const int32_t bits = ((int32_t)n + 127) * (1 << 23); /* 2^n, n in [-126, 127] */
  float scale;
  memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

static inline float ep_gelu(float x) {
  const float v = 0.5f * x * (1.0f + ep_erf(x * 0.70710678118654752f));
  return x < -10.0f ? -0.0f : v; /* x*Phi(x) > -1e-22 there; gelu(-inf) = -0, NaN stays */
}

static inline float ep_gelu_tanh(float x) {
  const float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  float z = -2.0f * u;
  z = z > -87.0f ? z : -87.0f; /* also NaN -> -87: exp sees finite values only */
  z = z < 88.0f ? z : 88.0f;
  const float v = x / (1.0f + ep_exp(z));
  return x < -10.0f ? -0.0f : v; /* > -1e-36 there (and -inf / huge is not NaN) */
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
    default: EP_TILE(none) break;
  }
}

const mte_epilogue_kernel MTE_EP_TABLE = {MTE_EP_ISA, epilogue_tile};
