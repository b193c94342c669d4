/* x86_avx2/depthwise.c - the general K x K depthwise plane kernel for AVX2 + FMA.
 *
 * K = 3, 5, 7 (stride 1 or 2, any padding) run as rolled vertical strips of 8 columns read
 * straight from x (depthwise_strip_body.h); the column padding is vmaskmovps lanes (masked
 * lanes read zero and never fault), and only a strip past the row's end stores through a
 * mask. At stride 2 vshufps + vpermpd split 16 inputs into 8 even and 8 odd columns. With
 * 16 registers the K*K weight vectors do not all fit; the FMAs read the rest from the stack
 * (L1, one load per FMA, under the FMA throughput). Every other K runs depthwise_body.h on
 * vectors of 8 floats. */
#include <immintrin.h>
#include <stdint.h>
#define MTE_DW_ISA "avx2"
#define MTE_DW_TABLE mte_dw_kernel_avx2
#define MTE_VL 8

#include "../../mte_depthwise_internal.h"

#define INLINE static inline __attribute__((always_inline))

/* lanes l (all bits set) whose column off + l lies in 0 .. W-1 */
INLINE __m256i dw_cols(int64_t off, int64_t W) {
  const int64_t lo = off < -8 ? 8 : (off > 0 ? 0 : -off); /* first lane in the row */
  const int64_t n = W - off, hi = n < 0 ? 0 : (n > 8 ? 8 : n); /* lanes < hi in the row */
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i ge = _mm256_cmpgt_epi32(lane, _mm256_set1_epi32((int)lo - 1));
  return _mm256_and_si256(ge, _mm256_cmpgt_epi32(_mm256_set1_epi32((int)hi), lane));
}

/* the largest K of the strip kernels */
#define DW_FAST_MAX_K 7

#define DS_SUFFIX _y
#define DS_L 8
#define DS_V __m256
#define DS_M __m256i
#define DS_SET1 _mm256_set1_ps
#define DS_ZERO _mm256_setzero_ps
#define DS_MAX _mm256_max_ps
#define DS_MIN _mm256_min_ps
#define DS_ADD _mm256_add_ps
#define DS_FMA _mm256_fmadd_ps
#define DS_LOADM(m, p) _mm256_maskload_ps((p), (m))
#define DS_STOREM(p, m, v) _mm256_maskstore_ps((p), (m), (v))
#define DS_STORE(p, v) _mm256_storeu_ps((p), (v))
/* per 128-bit half: a0 a2 b0 b2 | a4 a6 b4 b6, then the 64-bit pairs in order 0 2 1 3 */
#define DS_EVENS(a, b)                                                                    \
  _mm256_castpd_ps(_mm256_permute4x64_pd(                                                \
      _mm256_castps_pd(_mm256_shuffle_ps((a), (b), _MM_SHUFFLE(2, 0, 2, 0))), 0xD8))
#define DS_ODDS(a, b)                                                                     \
  _mm256_castpd_ps(_mm256_permute4x64_pd(                                                \
      _mm256_castps_pd(_mm256_shuffle_ps((a), (b), _MM_SHUFFLE(3, 1, 3, 1))), 0xD8))
#define DS_COLS(off, W) dw_cols((off), (W))
#define DS_AHEAD 6
#define DS_PREFETCH(p)                          \
  (_mm_prefetch((const char *)(p), _MM_HINT_T0), \
   _mm_prefetch((const char *)(p) + 64, _MM_HINT_T0))
#include "../../depthwise_strip_body.h"

/* 1 if the plane ran on the strips (K 3, 5, 7), 0 for depthwise_body.h's loops */
static int dw_strip_plane(const float *MTE_RESTRICT x, const mte_dw_geom *g, const float *w,
                          float bias, int act, float *MTE_RESTRICT y) {
#define DW_STRIP_CASE(k, s)                                                       \
  if (g->K == k && g->S == s) {                                                   \
    for (int64_t s0 = 0; s0 < g->Wo; s0 += 8) ds_strip_y(x, g, s0, w, bias, act, y, k, s); \
    return 1;                                                                     \
  }
  DW_STRIP_CASE(3, 1) DW_STRIP_CASE(3, 2) DW_STRIP_CASE(5, 1) DW_STRIP_CASE(5, 2)
  DW_STRIP_CASE(7, 1) DW_STRIP_CASE(7, 2)
#undef DW_STRIP_CASE
  return 0;
}
#define DW_PLANE_FIRST(x, g, w, bias, act, y) dw_strip_plane(x, g, w, bias, act, y)

#include "../../depthwise_body.h"
