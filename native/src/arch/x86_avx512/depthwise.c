/* x86_avx512/depthwise.c - the general K x K depthwise plane kernel for AVX-512:
 * depthwise_body.h on vectors of 16 floats. Masked loads and stores give the partial
 * vectors: the tail of a row copy, a row narrower than one vector, and the stride-2 row
 * split (vpermt2ps takes 32 inputs apart into 16 even and 16 odd columns), so no row is
 * built with scalar stores (a vector load of them would stall on store forwarding). */
#include <immintrin.h>
#include <stdint.h>
#define MTE_DW_ISA "avx512"
#define MTE_DW_TABLE mte_dw_kernel_avx512
#define MTE_VL 16

#define INLINE static inline __attribute__((always_inline))

/* lanes k < n */
INLINE __mmask16 dw_below(int64_t n) {
  if (n >= 16) return (__mmask16)0xFFFF;
  if (n <= 0) return 0;
  return (__mmask16)((1u << n) - 1u);
}

#define DW_STORE_PART(p, v, n) _mm512_mask_storeu_ps((p), dw_below(n), (__m512)(v))
#define DW_COPY_PART(d, s, n) \
  _mm512_mask_storeu_ps((d), dw_below(n), _mm512_maskz_loadu_ps(dw_below(n), (s)))

/* ev[m] = xr[2m], od[m] = xr[2m+1] for 2m (+1) < W; 1 (done) */
INLINE int dw_split(float *ev, float *od, const float *xr, int64_t W) {
  const __m512i even =
      _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odd =
      _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  for (int64_t c = 0; c < W; c += 32) {
    const int64_t rem = W - c, m = c / 2;
    const __m512 a = _mm512_maskz_loadu_ps(dw_below(rem), xr + c);
    const __m512 b = _mm512_maskz_loadu_ps(dw_below(rem - 16), xr + c + 16);
    _mm512_mask_storeu_ps(ev + m, dw_below((rem + 1) / 2), _mm512_permutex2var_ps(a, even, b));
    _mm512_mask_storeu_ps(od + m, dw_below(rem / 2), _mm512_permutex2var_ps(a, odd, b));
  }
  return 1;
}
#define DW_DEINTERLEAVE(ev, od, xr, W) dw_split(ev, od, xr, W)

#include "../../depthwise_body.h"
