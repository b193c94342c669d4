/*
 * generic/bf16_kernel.c - the portable member of the "bf16" family: scalar bfloat16 and
 * float16 conversions, no pair-dot microkernel (so gemm_bf16.c widens both operands to
 * float32 in its packing and runs the generic float32 microkernel).
 *
 * The conversions are also every other ISA's scalar tails. Rounding is to nearest even in
 * integer arithmetic, so the result never depends on the FPU's rounding mode:
 *   bf16: add 0x7fff + the kept lowest bit, keep the top half (NaN: quieted, kept NaN);
 *   fp16: rebias the exponent and round the same way; values below 2^-14 become
 *         subnormals through one float addition of 0.5 (its ulp is fp16's 2^-24).
 */
#include <string.h>

#include "../../mte_bf16_internal.h"

static inline uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
static inline float float_of(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static inline float f16_to_float(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0x1f) return float_of(sign | 0x7f800000u | (man << 13)); /* inf, NaN */
  if (exp == 0) /* zero or subnormal: man * 2^-24, exact in float32 */
    return float_of(sign | bits_of((float)man * 5.9604644775390625e-8f));
  return float_of(sign | ((exp + 112u) << 23) | (man << 13));
}

static inline uint16_t float_to_f16(float f) {
  uint32_t u = bits_of(f);
  const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  u &= 0x7fffffffu;
  if (u > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((u >> 13) & 0x3ffu)); /* NaN */
  if (u >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 (or inf): inf */
  if (u < 0x38800000u) /* below 2^-14: subnormal (or zero), rounded by the addition */
    return (uint16_t)(sign | (bits_of(float_of(u) + 0.5f) - 0x3f000000u));
  const uint32_t m = u - (112u << 23); /* rebias: the exponent field now fits 5 bits */
  return (uint16_t)(sign | ((m + 0xfffu + ((m >> 13) & 1u)) >> 13));
}

void mte__bf16_to_f32_c(const uint16_t *MTE_RESTRICT s, float *MTE_RESTRICT d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = mte__bf16_to_float(s[i]);
}
void mte__f16_to_f32_c(const uint16_t *MTE_RESTRICT s, float *MTE_RESTRICT d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = f16_to_float(s[i]);
}
void mte__f32_to_bf16_c(const float *MTE_RESTRICT s, uint16_t *MTE_RESTRICT d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = mte__float_to_bf16(s[i]);
}
void mte__f32_to_f16_c(const float *MTE_RESTRICT s, uint16_t *MTE_RESTRICT d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = float_to_f16(s[i]);
}

const mte_bf16_kernel mte_bf16_kernel_generic = {
    .isa = "generic",
    .path = "generic widen+sgemm",
    .bf16_to_f32 = mte__bf16_to_f32_c,
    .f16_to_f32 = mte__f16_to_f32_c,
    .f32_to_bf16 = mte__f32_to_bf16_c,
    .f32_to_f16 = mte__f32_to_f16_c,
};
