/*
 * mte_vec.h - a float vector of MTE_VL lanes (GNU C vector extension) and the math the
 * row kernels need on it: loads, selects, max, horizontal sum/max, exp and erf. For the
 * per-ISA bodies (rowwise_body.h, attention_body.h; not installed): the arch file defines
 * MTE_VL as its ISA's width (16 AVX-512, 8 AVX2, 4 generic = SSE2 / NEON) before including
 * the body, so each operation is one instruction of that ISA.
 *
 * Written with vectors rather than scalar loops because the loops that matter here are
 * reductions (a row's max and sum), which the auto-vectoriser leaves scalar under IEEE
 * rules. The polynomials are those of mte_vmath.h (same coefficients, same error bounds),
 * applied lane by lane; selects are bit masks, written so that a NaN fails every comparison
 * that would replace it.
 *
 * Products here are contracted into FMAs (fp-contract=fast for the including file).
 */
#ifndef MTE_VEC_H
#define MTE_VEC_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifndef MTE_VL
#error "define MTE_VL (float lanes of the ISA) before including mte_vec.h"
#endif

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=fast")
#elif defined(__clang__)
#pragma clang fp contract(fast)
#endif

typedef float vf __attribute__((vector_size(MTE_VL * sizeof(float))));
typedef int32_t vi __attribute__((vector_size(MTE_VL * sizeof(float))));

#define VINLINE static inline __attribute__((always_inline))

VINLINE vf v_ld(const float *p) {
  vf v;
  memcpy(&v, p, sizeof v); /* an unaligned vector load */
  return v;
}
VINLINE void v_st(float *p, vf v) { memcpy(p, &v, sizeof v); }
VINLINE vf v_splat(float s) { return s - (vf){0}; }
/* the first n < MTE_VL floats of p, `fill` in the other lanes (nothing past p[n-1] read) */
VINLINE vf v_ld_part(const float *p, int64_t n, float fill) {
  float t[MTE_VL];
  for (int l = 0; l < MTE_VL; ++l) t[l] = fill;
  memcpy(t, p, (size_t)n * sizeof(float));
  return v_ld(t);
}
VINLINE void v_st_part(float *p, vf v, int64_t n) {
  float t[MTE_VL];
  v_st(t, v);
  memcpy(p, t, (size_t)n * sizeof(float));
}
/* m ? a : b lane by lane, m a comparison result (all ones or all zeros per lane) */
VINLINE vf v_sel(vi m, vf a, vf b) { return (vf)((m & (vi)a) | (~m & (vi)b)); }
/* a > b ? a : b: NaN in a is dropped (b kept), as the row max wants */
VINLINE vf v_max(vf a, vf b) { return v_sel(a > b, a, b); }
VINLINE vf v_min(vf a, vf b) { return v_sel(a < b, a, b); }

/* sum / max of the lanes, as a tree (log2(MTE_VL) levels of independent adds) */
VINLINE float v_hsum(vf v) {
  float t[MTE_VL];
  v_st(t, v);
  for (int w = MTE_VL / 2; w > 0; w /= 2)
    for (int l = 0; l < w; ++l) t[l] += t[l + w];
  return t[0];
}
VINLINE float v_hmax(vf v) {
  float t[MTE_VL];
  v_st(t, v);
  for (int w = MTE_VL / 2; w > 0; w /= 2)
    for (int l = 0; l < w; ++l) t[l] = t[l + w] > t[l] ? t[l + w] : t[l];
  return t[0];
}

/* exp(z) for finite z in [-87, 88] (mte_vm_exp lane by lane) */
VINLINE vf v_exp(vf z) {
  const float shifter = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
  vf n = z * 1.44269504f + shifter;
  n -= shifter;
  vf r = z - n * 0.693145752f; /* ln 2 = 0.693145752 + 1.42860677e-6 (Cody-Waite) */
  r = r - n * 1.42860677e-6f;
  vf p = v_splat(1.0f / 5040.0f);
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const vi bits = (__builtin_convertvector(n, vi) + 127) << 23; /* 2^n, n in [-126, 127] */
  return p * (vf)bits;
}

/* exp(z) for z <= 0, -inf (-> 0) or NaN (-> NaN); 0 below -87 (mte_vm_exp_le0) */
VINLINE vf v_exp_le0(vf z) {
  const vf lo = v_splat(-87.0f);
  const vf e = v_exp(v_max(z, lo)); /* NaN, -inf -> -87: exp sees finite values */
  return v_sel(z == z, v_sel(z >= lo, e, v_splat(0.0f)), z);
}

/* erf(x), |error| < 1e-7 (mte_vm_erf lane by lane) */
VINLINE vf v_erf(vf x) {
  const vi sign = (vi)x & (vi)v_splat(-0.0f);
  const vf t = (vf)((vi)x & ~(vi)v_splat(-0.0f)), s = t * t;
  vf p = v_splat(7.889240806e-05f);
  p = p * s - 8.020880632e-04f;
  p = p * s + 5.189540330e-03f;
  p = p * s - 2.685444802e-02f;
  p = p * s + 1.128360033e-01f;
  p = p * s - 3.761262596e-01f;
  p = p * s + 1.283791661e-01f;
  const vf small = t * p + t; /* erf(t) = t * (2/sqrt(pi) + ...), the 1 kept exact */
  const vf u = v_sel(t < 3.9f, t, v_splat(3.9f)) - 2.45f; /* NaN -> 3.9 */
  vf q = v_splat(-9.124693861e-06f);
  q = q * u + 2.651543036e-05f;
  q = q * u + 4.880992128e-05f;
  q = q * u - 3.067001817e-04f;
  q = q * u + 4.185112193e-04f;
  q = q * u + 4.297840351e-04f;
  q = q * u - 2.994741313e-03f;
  q = q * u + 6.976413541e-03f;
  q = q * u - 1.024917047e-02f;
  q = q * u + 1.023604535e-02f;
  q = q * u - 6.836764514e-03f;
  q = q * u + 2.789898543e-03f;
  q = q * u + 9.994694591e-01f;
  q = v_min(q, v_splat(1.0f));
  const vf r = v_sel(t < 1.0f, small, q);
  return (vf)((vi)r | sign);
}

#endif /* MTE_VEC_H */
