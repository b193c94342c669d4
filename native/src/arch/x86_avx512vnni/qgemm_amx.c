/*
 * x86_avx512vnni/qgemm_amx.c - the int8 GEMM microkernel on AMX-INT8 (Sapphire Rapids and
 * later): TDPBSUD multiplies a 16 x 64 tile of signed bytes (16 output channels, 16 k quads
 * of weights) by a 16 x 64 tile of unsigned bytes (16 k quads by 16 pixels of x + 128, the
 * x panel layout the VNNI kernel packs) into a 16 x 16 int32 tile: 16384 multiply-adds per
 * instruction, 8x VPDPBUSD's 2048.
 *
 * Tile 32 x 32 (mte_amx_x86.h): weights packed row-major per channel (w_rows) with k padded
 * to 16 quads (kg_align), so a weight tile is 16 channel rows of 64 bytes; the four int32
 * accumulator tiles go to a stack tile, and each row is requantized as the VNNI kernel's
 * (mte_qrequant_x86.h; the channel's comp added first: the tiles start at zero): when every
 * channel is fast, rows in pairs narrowed by two packs as there; otherwise row by row,
 * narrowed by a saturating VPMOVSDB, clamped and stored with a byte mask for the last
 * columns. The
 * descriptor (mte_qgemm_kernel_amx) is in qgemm_kernel.c beside the VNNI one, whose x packer
 * it shares; this file holds the AMX code and carries its own target attribute.
 */
#include "../../mte_quant_internal.h"

#if defined(__x86_64__)
#include "../../mte_amx_x86.h"
#include "../../mte_qrequant_x86.h"

#define MR 32
#define NR 32
#define AMX_INT8 __attribute__((target("amx-tile,amx-int8")))

MTE_HIDDEN void mte__qgemm_ukernel_amx(const mte_qtile *t);
MTE_HIDDEN double mte__qgemm_peak_amx(int64_t rounds);

AMX_INT8 static void tiles(const mte_qtile *t, int32_t *acc) {
  mte__amx_configure();
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  const size_t lda = (size_t)t->kg * 4, ldb = NR * 4;
  const int8_t *a = t->a;
  const uint8_t *b = t->b;
  /* an edge tile of at most 16 rows or columns skips the products of its empty half */
  const int two_rows = t->rows > 16, two_cols = t->cols > 16;
  if (two_rows && two_cols) {
    for (int64_t g = 0; g < t->kg; g += 16) {
      _tile_loadd(4, a + 4 * g, lda);
      _tile_loadd(5, a + 16 * lda + 4 * g, lda);
      _tile_loadd(6, b + g * ldb, ldb);
      _tile_loadd(7, b + g * ldb + 64, ldb);
      _tile_dpbsud(0, 4, 6);
      _tile_dpbsud(1, 4, 7);
      _tile_dpbsud(2, 5, 6);
      _tile_dpbsud(3, 5, 7);
    }
  } else if (two_rows) {
    for (int64_t g = 0; g < t->kg; g += 16) {
      _tile_loadd(4, a + 4 * g, lda);
      _tile_loadd(5, a + 16 * lda + 4 * g, lda);
      _tile_loadd(6, b + g * ldb, ldb);
      _tile_dpbsud(0, 4, 6);
      _tile_dpbsud(2, 5, 6);
    }
  } else if (two_cols) {
    for (int64_t g = 0; g < t->kg; g += 16) {
      _tile_loadd(4, a + 4 * g, lda);
      _tile_loadd(6, b + g * ldb, ldb);
      _tile_loadd(7, b + g * ldb + 64, ldb);
      _tile_dpbsud(0, 4, 6);
      _tile_dpbsud(1, 4, 7);
    }
  } else {
    for (int64_t g = 0; g < t->kg; g += 16) {
      _tile_loadd(4, a + 4 * g, lda);
      _tile_loadd(6, b + g * ldb, ldb);
      _tile_dpbsud(0, 4, 6);
    }
  }
  _tile_stored(0, acc, NR * 4);
  _tile_stored(1, acc + 16, NR * 4);
  _tile_stored(2, acc + 16 * NR, NR * 4);
  _tile_stored(3, acc + 16 * NR + 16, NR * 4);
}

void mte__qgemm_ukernel_amx(const mte_qtile *t) {
  int32_t acc[MR * NR] __attribute__((aligned(64)));
  tiles(t, acc);
  const int direct = t->cs == 1;
  int fast = 1;
  for (int i = 0; i < t->rows; ++i) fast &= t->chan[i].fast;
  if (direct && fast) {
    /* rows in pairs, as the VNNI kernel's fast store: 4 vectors requantized, saturated to 64
     * bytes by two packs, put in order by one VPERMD, clamped once, two 32-byte rows (the
     * channels are padded to the panel, so row i + 1 always has one) */
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    const __m512i lo = _mm512_set1_epi8((char)t->lo), hi = _mm512_set1_epi8((char)t->hi);
    const __mmask32 cm = t->cols >= NR ? ~(__mmask32)0 : ((__mmask32)1 << t->cols) - 1;
    for (int i = 0; i < t->rows; i += 2) {
      __m512i r[2][2];
      for (int h = 0; h < 2; ++h) {
        const mte_qchan *ch = &t->chan[i + h];
        const mte_qfast512 f = mte__qfast512(ch, t->zp);
        const __m512i comp = _mm512_set1_epi32(ch->comp);
        for (int v = 0; v < 2; ++v)
          r[h][v] = mte__requant512_fast(
              _mm512_add_epi32(_mm512_load_si512(acc + (i + h) * NR + 16 * v), comp), &f);
      }
      __m512i q = _mm512_packs_epi16(_mm512_packs_epi32(r[0][0], r[0][1]),
                                     _mm512_packs_epi32(r[1][0], r[1][1]));
      q = _mm512_min_epi8(_mm512_max_epi8(_mm512_permutexvar_epi32(order, q), lo), hi);
      int8_t *y = t->y + i * t->rs;
      _mm256_mask_storeu_epi8(y, cm, _mm512_castsi512_si256(q));
      if (i + 1 < t->rows) _mm256_mask_storeu_epi8(y + t->rs, cm, _mm512_extracti64x4_epi64(q, 1));
    }
    return;
  }
  const __m128i lo = _mm_set1_epi8((char)t->lo), hi = _mm_set1_epi8((char)t->hi);
  int8_t tile[MR * NR];
  for (int i = 0; i < t->rows; ++i) {
    const mte_qchan *ch = &t->chan[i];
    const __m512i comp = _mm512_set1_epi32(ch->comp);
    const mte_qfast512 f = mte__qfast512(ch->fast ? ch : &(mte_qchan){.right = 1}, t->zp);
    int8_t *y = direct ? t->y + i * t->rs : tile + i * NR;
    for (int v = 0; v < NR / 16; ++v) {
      const int n = direct ? t->cols - 16 * v : 16;
      if (n <= 0) break;
      const __m512i d = _mm512_add_epi32(_mm512_load_si512(acc + i * NR + 16 * v), comp);
      __m128i q;
      if (ch->fast) /* y unclamped: saturate to bytes, then clamp */
        q = _mm_min_epi8(_mm_max_epi8(_mm512_cvtsepi32_epi8(mte__requant512_fast(d, &f)), lo),
                         hi);
      else
        q = _mm512_cvtepi32_epi8(mte__requant512_dot(d, ch, t->zp, t->lo, t->hi));
      const __mmask16 m = n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1);
      _mm_mask_storeu_epi8(y + 16 * v, m, q);
    }
  }
  if (!direct) /* qlinear: the tile transposed through (rs, cs) */
    for (int i = 0; i < t->rows; ++i)
      for (int j = 0; j < t->cols; ++j) t->y[i * t->rs + j * t->cs] = tile[i * NR + j];
}

/* four independent TDPBSUD on tiles loaded once: the AMX int8 arithmetic ceiling */
AMX_INT8 double mte__qgemm_peak_amx(int64_t rounds) {
  mte__amx_configure();
  int8_t bytes[16 * 64] __attribute__((aligned(64)));
  memset(bytes, 3, sizeof bytes);
  _tile_loadd(4, bytes, 64);
  _tile_loadd(5, bytes, 64);
  _tile_loadd(6, bytes, 64);
  _tile_loadd(7, bytes, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t r = 0; r < rounds; ++r) {
    _tile_dpbsud(0, 4, 6);
    _tile_dpbsud(1, 4, 7);
    _tile_dpbsud(2, 5, 6);
    _tile_dpbsud(3, 5, 7);
  }
  int32_t sink[16 * 16] __attribute__((aligned(64)));
  _tile_stored(0, sink, 64);
  volatile int32_t keep = sink[0];
  (void)keep;
  return (double)rounds * 4.0 * 16 * 16 * 64 * 2.0; /* 16 x 16 outputs x 64 products x 2 */
}
#endif
