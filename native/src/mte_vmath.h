/*
 * mte_vmath.h - float32 erf and exp as branch-free polynomials, for the per-ISA bodies
 * (epilogue_body.h, rows_body.h, attention_body.h; not installed).
 *
 * C's erff / expf are scalar library calls, which stop a loop from vectorising. These are
 * plain arithmetic and selects, so a loop over them becomes SIMD code for the ISA whose
 * flags the including file is compiled with:
 *
 *   mte_vm_erf(x)   |x| < 1:  x + x * P(x^2), P of degree 6;
 *                   |x| >= 1: min(Q(min(|x|, 3.9) - 2.45), 1), Q of degree 12, sign of x
 *                   (minimax fits in float64 against math.erf; |error| < 1e-7, ~1.6 ulp,
 *                   checked on a dense sweep by tests/test_epilogue.c and test_rows.c)
 *   mte_vm_exp(z)   z in [-87, 88]: Cody-Waite reduction z = n ln2 + r, a degree-7 Taylor
 *                   polynomial in r, 2^n from the exponent bits (relative error ~1e-7)
 *   mte_vm_exp_le0(z)  exp(z) for any z <= 0, -inf or NaN: 0 below -87 (exp is < 1.7e-38
 *                   there), NaN stays NaN; the softmax exponent
 *
 * Including this file also sets no-trapping-math for the rest of the translation unit:
 * GCC keeps a float select (t < 1 ? a : b) as a branch, which blocks vectorisation, unless
 * comparisons may be assumed not to trap; libmte never reads the FP exception flags.
 */
#ifndef MTE_VMATH_H
#define MTE_VMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

/* a * b + c, fused where the ISA has FMA (then fmaf is one instruction, and vectorises) */
#if defined(__FMA__) || defined(__aarch64__)
#define FMA(a, b, c) fmaf(a, b, c)
#else
#define FMA(a, b, c) ((a) * (b) + (c))
#endif

/* erf(x), |error| < 1e-7 */
static inline float mte_vm_erf(float x) {
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
static inline float mte_vm_exp(float z) {
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

/* exp(z) for z <= 0 (also -inf -> 0 and NaN -> NaN) */
static inline float mte_vm_exp_le0(float z) {
  const float zc = z > -87.0f ? z : -87.0f; /* -inf, NaN -> -87: exp sees finite values */
  const float e = z >= -87.0f ? mte_vm_exp(zc) : 0.0f;
  return z == z ? e : z;
}

#endif /* MTE_VMATH_H */
