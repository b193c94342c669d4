/*
 * x86_avx512/bf16_amx.c - the bf16 GEMM on AMX (TDPBF16PS), where the CPU and the OS allow
 * it (Sapphire Rapids and later; Linux grants the tile state per process, cpu.c asks).
 *
 * One TDPBF16PS multiplies a 16 x 32 bf16 tile L (16 rows of C, 32 k values each) by a
 * 16 x 16-pair tile R (16 k pairs, 16 columns of C, the two k values of a pair side by side
 * in 32 bits) into a 16 x 16 float32 tile: 16 x 16 x 32 multiply-adds, about 16 times the
 * float32 FMA rate of an AVX-512 core (and 4-8 times VDPBF16PS's, which on Sapphire Rapids
 * runs at half the FMA's flop rate).
 *
 * Loops (GotoBLAS as gemm.c): NC columns of op(B) x KC-deep slices packed once as R panels
 * (16 columns, [pair q][column] uint32); per 32-row strip of op(A), a packed L strip
 * (rows of KC values, row-major); a 32 x 32 block of C is 2 x 2 accumulator tiles, 2 L and
 * 2 R tiles per 32 k values (all 8 tiles). Packs are zero-padded to whole tiles (rows,
 * columns, k), so every tile is full; a block of C that is not full, or alpha/beta other
 * than 1 and 0/1, goes through a float32 staging block. Transposed operands are packed
 * with 32-bit gathers (a pair of k values is 32 bits) and scatters.
 * TDPBF16PS flushes denormal inputs and outputs to zero, as VDPBF16PS does.
 */
#include <string.h>

#include "../../mte_bf16_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "../../mte_amx_x86.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define AMX_TARGET __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw")))
#define KC_MAX 1024 /* k values per slice: an L strip is 32 x 1024 x 2 = 64 KiB */
#define NC_MAX 512  /* columns per B block: 512 x 1024 x 2 = 1 MiB, in L2 */
#define TS 32       /* rows and columns of C per 2 x 2 block of tiles */

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

/* tiles 0-3: C (16 x 16 float32), 4-5: L (16 x 32 bf16), 6-7: R (16 x 16 pairs): every tile
 * 16 rows of 64 bytes, the configuration mte_amx_x86.h loads (the int8 kernel's too) */

/* ---------------------------------------------------------------- packing */

static inline __mmask16 lanes(int64_t n) {
  return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1u);
}

/* R panels of columns [j, j+cols) x k [p0, p0+kc) of op(B), kcp (a multiple of 32) deep:
 * panel t at dst + t*(kcp/2)*16, dst[q*16 + c] = (op(B)[p0+2q][j+16t+c], [p0+2q+1][...]);
 * columns past `cols` (up to a multiple of 32) and k past kc are zero */
AMX_TARGET static void pack_r(int64_t cols, int64_t kc, int64_t kcp, const uint16_t *B,
                              int64_t ldb, int trans, int64_t j, int64_t p0,
                              uint32_t *MTE_RESTRICT dst) {
  const int64_t kq = kcp / 2, even = kc / 2, panels = round_up(cols, TS) / 16;
  for (int64_t t = 0; t < panels; ++t) {
    uint32_t *d = dst + t * kq * 16;
    const int64_t c0 = 16 * t, n = cols > c0 ? min64(16, cols - c0) : 0;
    const __mmask16 m = lanes(n);
    int64_t q = 0;
    if (n == 0) {
      memset(d, 0, (size_t)kq * 16 * sizeof *d);
      continue;
    }
    if (!trans) { /* rows 2q and 2q+1 of B, interleaved */
      const uint16_t *row = B + p0 * ldb + j + c0;
      for (; q < even; ++q, row += 2 * ldb) {
        const __m512i lo = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, row));
        const __m512i hi = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, row + ldb));
        _mm512_store_si512(d + q * 16, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
      }
      if (q * 2 < kc) { /* odd kc: the last k alone in the low halves */
        _mm512_store_si512(d + q * 16,
                           _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, row)));
        ++q;
      }
    } else if (ldb >= ((int64_t)1 << 26)) { /* byte offsets of 16 rows overflow int32 */
      const uint16_t *col = B + (j + c0) * ldb + p0;
      for (; q < even; ++q)
        for (int64_t c = 0; c < 16; ++c)
          d[q * 16 + c] = c < n ? (uint32_t)col[c * ldb + 2 * q] |
                                      ((uint32_t)col[c * ldb + 2 * q + 1] << 16) : 0;
      if (q * 2 < kc) {
        for (int64_t c = 0; c < 16; ++c) d[q * 16 + c] = c < n ? col[c * ldb + kc - 1] : 0;
        ++q;
      }
    } else { /* column c of op(B) is row j+c0+c of B: its pairs, gathered across 16 rows */
      const uint16_t *col = B + (j + c0) * ldb + p0;
      const __m512i offs = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9,
                                                                10, 11, 12, 13, 14, 15),
                                              _mm512_set1_epi32((int)(2 * ldb)));
      for (; q < even; ++q)
        _mm512_store_si512(d + q * 16, _mm512_mask_i32gather_epi32(
                                           _mm512_setzero_si512(), m, offs, col + 2 * q, 1));
      if (q * 2 < kc) {
        for (int64_t c = 0; c < 16; ++c) d[q * 16 + c] = c < n ? col[c * ldb + kc - 1] : 0;
        ++q;
      }
    }
    memset(d + q * 16, 0, (size_t)(kq - q) * 16 * sizeof *d);
  }
}

/* the L strip of rows [i0, i0+rows) x k [p0, p0+kc) of op(A): dst[r*kcp + p], 32 rows,
 * rows past `rows` and k past kc zero */
AMX_TARGET static void pack_l(int64_t rows, int64_t kc, int64_t kcp, const uint16_t *A,
                              int64_t lda, int trans, int64_t i0, int64_t p0,
                              uint16_t *MTE_RESTRICT dst) {
  if (!trans) { /* rows of A are runs along k */
    for (int64_t r = 0; r < rows; ++r) {
      memcpy(dst + r * kcp, A + (i0 + r) * lda + p0, (size_t)kc * sizeof *dst);
      memset(dst + r * kcp + kc, 0, (size_t)(kcp - kc) * sizeof *dst);
    }
  } else { /* k rows of A interleaved in pairs, then scattered down the strip's rows */
    const int64_t even = kc / 2;
    uint32_t *d32 = (uint32_t *)dst; /* row r, pair q at d32[r*(kcp/2) + q] */
    const __m512i offs = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9,
                                                              10, 11, 12, 13, 14, 15),
                                            _mm512_set1_epi32((int)(kcp / 2)));
    for (int64_t r = 0; r < rows; ++r) memset(dst + r * kcp, 0, (size_t)kcp * sizeof *dst);
    for (int64_t h = 0; h < rows; h += 16) {
      const __mmask16 m = lanes(rows - h);
      for (int64_t q = 0; 2 * q < kc; ++q) {
        const uint16_t *lo = A + (p0 + 2 * q) * lda + i0 + h;
        __m512i v = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, lo));
        if (q < even)
          v = _mm512_or_si512(v, _mm512_slli_epi32(
                                     _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, lo + lda)),
                                     16));
        _mm512_mask_i32scatter_epi32(d32 + h * (kcp / 2) + q, m, offs, v, 4);
      }
    }
  }
  for (int64_t r = rows; r < TS; ++r) memset(dst + r * kcp, 0, (size_t)kcp * sizeof *dst);
}

/* ---------------------------------------------------------------- the 32 x 32 block */

/* C block (rows x cols valid) = alpha * L R + beta * C, over kcp k values */
AMX_TARGET static void block(int64_t kcp, const uint16_t *l, const uint32_t *r, float *c,
                             int64_t ldc, int64_t rows, int64_t cols, float alpha, float beta) {
  const int64_t panel = kcp / 2 * 16; /* uint32 per R panel */
  const int direct = rows == TS && cols == TS && alpha == 1.0f && (beta == 0.0f || beta == 1.0f);
  float stage[TS * TS] __attribute__((aligned(64)));
  if (direct && beta == 1.0f) {
    _tile_loadd(0, c, ldc * 4);
    _tile_loadd(1, c + 16, ldc * 4);
    _tile_loadd(2, c + 16 * ldc, ldc * 4);
    _tile_loadd(3, c + 16 * ldc + 16, ldc * 4);
  } else {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  }
  for (int64_t p = 0; p < kcp; p += 32) {
    _tile_loadd(4, l + p, kcp * 2);
    _tile_loadd(5, l + 16 * kcp + p, kcp * 2);
    _tile_loadd(6, r + p / 2 * 16, 64);
    _tile_loadd(7, r + panel + p / 2 * 16, 64);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  if (direct) {
    _tile_stored(0, c, ldc * 4);
    _tile_stored(1, c + 16, ldc * 4);
    _tile_stored(2, c + 16 * ldc, ldc * 4);
    _tile_stored(3, c + 16 * ldc + 16, ldc * 4);
    return;
  }
  _tile_stored(0, stage, TS * 4);
  _tile_stored(1, stage + 16, TS * 4);
  _tile_stored(2, stage + 16 * TS, TS * 4);
  _tile_stored(3, stage + 16 * TS + 16, TS * 4);
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t h = 0; h < cols; h += 16) {
      const __mmask16 m = lanes(cols - h);
      float *cp = c + i * ldc + h;
      __m512 y = _mm512_mul_ps(va, _mm512_load_ps(stage + i * TS + h));
      if (beta != 0.0f) y = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m, cp), y);
      _mm512_mask_storeu_ps(cp, m, y);
    }
}

/* ---------------------------------------------------------------- driver */

typedef struct plan {
  int64_t kc, nc, kcp_max;
} plan;

static plan make_plan(int64_t N, int64_t K) {
  plan p;
  const int64_t nk = (K + KC_MAX - 1) / KC_MAX; /* equal slices */
  p.kc = round_up((K + nk - 1) / nk, 2);
  p.kcp_max = round_up(p.kc, 32);
  p.nc = min64(NC_MAX, round_up(N, TS));
  return p;
}

static size_t amx_workspace(int64_t M, int64_t N, int64_t K, int nthreads) {
  (void)M;
  const plan p = make_plan(N, K);
  const size_t r = (size_t)p.kcp_max * (size_t)p.nc * 2;    /* R block, bytes */
  const size_t l = (size_t)TS * (size_t)p.kcp_max * 2;      /* one L strip */
  return r + l * (size_t)nthreads + 128;
}

AMX_TARGET static void amx_gemm(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K,
                                float alpha, const uint16_t *A, int64_t lda, const uint16_t *B,
                                int64_t ldb, float beta, float *C, int64_t ldc, void *ws,
                                int nthreads) {
  const plan pl = make_plan(N, K);
  uint32_t *rpack = (uint32_t *)(((uintptr_t)ws + 63) & ~(uintptr_t)63);
  uint16_t *lpack_all = (uint16_t *)(rpack + (size_t)pl.kcp_max * (size_t)pl.nc / 2);
  const int64_t strips = (M + TS - 1) / TS;
  if (nthreads > strips) nthreads = (int)strips;
  if (nthreads < 1) nthreads = 1;
#ifdef _OPENMP
#pragma omp parallel num_threads(nthreads) if (nthreads > 1)
#endif
  {
#ifdef _OPENMP
    const int tid = omp_get_thread_num();
#else
    const int tid = 0;
#endif
    uint16_t *lpack = lpack_all + (size_t)tid * TS * (size_t)pl.kcp_max;
    mte__amx_configure();
    for (int64_t jc = 0; jc < N; jc += pl.nc) {
      const int64_t nc = min64(pl.nc, N - jc);
      for (int64_t pc = 0; pc < K; pc += pl.kc) {
        const int64_t kc = min64(pl.kc, K - pc), kcp = round_up(kc, 32);
        const float b_eff = pc == 0 ? beta : 1.0f;
        const int64_t groups = round_up(nc, TS) / TS; /* R packed in 32-column groups */
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t gi = 0; gi < groups; ++gi)
          pack_r(min64(TS, nc - gi * TS), kc, kcp, B, ldb, trans_b, jc + gi * TS, pc,
                 rpack + gi * TS * (kcp / 2));
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t s = 0; s < strips; ++s) {
          const int64_t i0 = s * TS, rows = min64(TS, M - i0);
          pack_l(rows, kc, kcp, A, lda, trans_a, i0, pc, lpack);
          for (int64_t gi = 0; gi < groups; ++gi)
            block(kcp, lpack, rpack + gi * TS * (kcp / 2), C + i0 * ldc + jc + gi * TS, ldc,
                  rows, min64(TS, nc - gi * TS), alpha, b_eff);
        }
      }
    }
    _tile_release();
  }
}

/* 4 accumulators, the same two operand tiles: the TDPBF16PS ceiling */
AMX_TARGET static double amx_peak(int64_t rounds) {
  static const uint16_t ones[16 * 32] __attribute__((aligned(64))) = {0};
  float sink[16 * 16] __attribute__((aligned(64)));
  mte__amx_configure();
  _tile_loadd(4, ones, 64);
  _tile_loadd(6, ones, 64);
  _tile_loadd(5, ones, 64);
  _tile_loadd(7, ones, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t r = 0; r < rounds; ++r) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, sink, 64);
  _tile_release();
  volatile float keep = sink[0];
  (void)keep;
  return (double)rounds * 4.0 * 16 * 16 * 32 * 2.0;
}

const mte_bf16_kernel mte_bf16_kernel_avx512_amx = {
    .isa = "avx512",
    .path = "amx_bf16 tdpbf16ps",
    .needs = MTE_CPU_AMX_BF16,
    .fallback = &mte_bf16_kernel_avx512,
    .bf16_to_f32 = mte__bf16_to_f32_avx512,
    .f16_to_f32 = mte__f16_to_f32_avx512,
    .f32_to_bf16 = mte__f32_to_bf16_avx512,
    .f32_to_f16 = mte__f32_to_f16_avx512,
    .gemm = amx_gemm,
    .gemm_workspace = amx_workspace,
    .dot_peak = amx_peak,
};
#endif
