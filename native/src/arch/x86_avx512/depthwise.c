/* x86_avx512/depthwise.c - the general K x K depthwise plane kernel for AVX-512.
 *
 * K = 3, 5, 7 (stride 1 or 2, any padding) run as rolled vertical strips read straight
 * from x (depthwise_strip_body.h: each input row's taps loaded once and kept in registers
 * while the output rows that use them accumulate; masked loads are the column padding):
 * strips of 16 columns, and a last strip of at most 8 columns on 256-bit registers.
 * Every other K runs depthwise_body.h on vectors of 16 floats, whose masked loads and
 * stores give the partial vectors: the tail of a row copy, a row narrower than one vector,
 * and the stride-2 row split (vpermt2ps takes 32 inputs apart into 16 even and 16 odd
 * columns), so no row is built with scalar stores (a vector load of them would stall on
 * store forwarding). */
#include <immintrin.h>
#include <stdint.h>
#define MTE_DW_ISA "avx512"
#define MTE_DW_TABLE mte_dw_kernel_avx512
#define MTE_VL 16

#include "../../mte_depthwise_internal.h"

#define INLINE static inline __attribute__((always_inline))

/* lanes k < n */
INLINE __mmask16 dw_below(int64_t n) {
  if (n >= 16) return (__mmask16)0xFFFF;
  if (n <= 0) return 0;
  return (__mmask16)((1u << n) - 1u);
}

/* ---------------------------------------------------------------- the strips (K 3, 5, 7) */

/* lanes l whose column off + l lies in 0 .. W-1 */
INLINE __mmask16 dw_cols(int64_t off, int64_t W) {
  return (__mmask16)(dw_below(W - off) & (__mmask16)~dw_below(-off));
}

/* the largest K of the strip kernels */
#define DW_FAST_MAX_K 7

#define DS_SUFFIX _z /* 512-bit */
#define DS_L 16
#define DS_V __m512
#define DS_M __mmask16
#define DS_SET1 _mm512_set1_ps
#define DS_ZERO _mm512_setzero_ps
#define DS_MAX _mm512_max_ps
#define DS_MIN _mm512_min_ps
#define DS_ADD _mm512_add_ps
#define DS_FMA _mm512_fmadd_ps
#define DS_LOADM(m, p) _mm512_maskz_loadu_ps((m), (p))
#define DS_STOREM(p, m, v) _mm512_mask_storeu_ps((p), (m), (v))
#define DS_STORE(p, v) _mm512_storeu_ps((p), (v))
#define DS_EVENS(a, b)                                                                      \
  _mm512_permutex2var_ps(                                                                  \
      (a), _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0), (b))
#define DS_ODDS(a, b)                                                                       \
  _mm512_permutex2var_ps(                                                                  \
      (a), _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1), (b))
#define DS_COLS(off, W) dw_cols((off), (W))
#define DS_AHEAD 6
#define DS_PREFETCH(p)                          \
  (_mm_prefetch((const char *)(p), _MM_HINT_T0), \
   _mm_prefetch((const char *)(p) + 64, _MM_HINT_T0))
#include "../../depthwise_strip_body.h"
#undef DS_SUFFIX
#undef DS_L
#undef DS_V
#undef DS_M
#undef DS_SET1
#undef DS_ZERO
#undef DS_MAX
#undef DS_MIN
#undef DS_ADD
#undef DS_FMA
#undef DS_LOADM
#undef DS_STOREM
#undef DS_STORE
#undef DS_EVENS
#undef DS_ODDS
#undef DS_COLS
#undef DS_AHEAD
#undef DS_PREFETCH

#define DS_SUFFIX _h /* 256-bit (AVX-512VL masks) */
#define DS_L 8
#define DS_V __m256
#define DS_M __mmask8
#define DS_SET1 _mm256_set1_ps
#define DS_ZERO _mm256_setzero_ps
#define DS_MAX _mm256_max_ps
#define DS_MIN _mm256_min_ps
#define DS_ADD _mm256_add_ps
#define DS_FMA _mm256_fmadd_ps
#define DS_LOADM(m, p) _mm256_maskz_loadu_ps((m), (p))
#define DS_STOREM(p, m, v) _mm256_mask_storeu_ps((p), (m), (v))
#define DS_STORE(p, v) _mm256_storeu_ps((p), (v))
#define DS_EVENS(a, b) \
  _mm256_permutex2var_ps((a), _mm256_set_epi32(14, 12, 10, 8, 6, 4, 2, 0), (b))
#define DS_ODDS(a, b) \
  _mm256_permutex2var_ps((a), _mm256_set_epi32(15, 13, 11, 9, 7, 5, 3, 1), (b))
#define DS_COLS(off, W) ((__mmask8)dw_cols((off), (W)))
#include "../../depthwise_strip_body.h"

/* strips of 16 columns while more than 8 remain, then one of at most 8 */
INLINE void dw_strips(const float *MTE_RESTRICT x, const mte_dw_geom *g, const float *w,
                      float bias, int act, float *MTE_RESTRICT y, const int K, const int S) {
  int64_t s0 = 0;
  for (; g->Wo - s0 > 8; s0 += 16) ds_strip_z(x, g, s0, w, bias, act, y, K, S);
  if (s0 < g->Wo) ds_strip_h(x, g, s0, w, bias, act, y, K, S);
}

/* 1 if the plane ran on the strips (K 3, 5, 7), 0 for depthwise_body.h's loops */
static int dw_strip_plane(const float *MTE_RESTRICT x, const mte_dw_geom *g, const float *w,
                          float bias, int act, float *MTE_RESTRICT y) {
#define DW_STRIP_CASE(k, s)                     \
  if (g->K == k && g->S == s) {                 \
    dw_strips(x, g, w, bias, act, y, k, s);     \
    return 1;                                   \
  }
  DW_STRIP_CASE(3, 1) DW_STRIP_CASE(3, 2) DW_STRIP_CASE(5, 1) DW_STRIP_CASE(5, 2)
  DW_STRIP_CASE(7, 1) DW_STRIP_CASE(7, 2)
#undef DW_STRIP_CASE
  return 0;
}
#define DW_PLANE_FIRST(x, g, w, bias, act, y) dw_strip_plane(x, g, w, bias, act, y)

/* ---------------------------------------------------------------- depthwise_body.h's hooks */

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
