/*
 * x86_avx512vnni/qdepthwise.c - one plane of the int8 depthwise 3x3 as a flat row
 * (mte_qdw_plane) on AVX-512 VNNI, on bytes: VPDPBUSD sums 4 products u8 x s8 per int32 lane,
 * so each tap row of 3 is one VPDPBUSD with the weights (w0, w1, w2, 0) or (0, w0, w1, w2).
 *
 * The plane is copied as bytes x ^ 0x80 (= x + 128, unsigned; the padding x_zp + 128, the
 * driver's memset), one masked load / XOR / masked store per 64 columns of a row: no
 * widening. No permutes either: a 64-byte load at flat output g0 holds, in its int32 lane l,
 * the bytes g0 + 4l .. g0 + 4l + 3, which with (w0, w1, w2, 0) are tap row i of output
 * g0 + 4l and with (0, w0, w1, w2) that of output g0 + 4l + 1; the load at g0 + 2 gives outputs
 * g0 + 4l + 2 and + 3 the same way. Stride 1: 2 loads and 4 VPDPBUSD per tap row for 64
 * outputs, in 4 accumulators (outputs 4l + k). Stride 2 (output g reads bytes 2g + j): the
 * loads at 2 g0 + 0, 2, 64, 66 with (w0, w1, w2, 0) give outputs g0 + 2l, + 2l + 1, + 32 + 2l,
 * + 32 + 2l + 1. The accumulators start at the channel's comp (which holds the bias and
 * -(x_zp + 128) * sum(w)), are requantized in registers (mte_qrequant_x86.h), narrowed by two
 * saturating packs - each 128-bit lane then holds 16 consecutive outputs out of order (stride
 * 1), or two runs of 8 (stride 2) - put in order by one in-lane byte shuffle (and a qword
 * permute for stride 2), clamped 64 bytes at a time and stored straight into y's rows
 * (store_rows: the line is not used); the driver's layout leaves MTE_QDW_TAIL_U8 bytes for
 * the loads past the last output.
 * Narrow stride-1 planes (W <= MTE_QDW_TAB_MAX_W) take qdw_tab_avx512vnni instead: no copy,
 * the windows permuted out of two loads (VPERMI2B: that function alone is compiled for
 * AVX-512 VBMI, which the driver checks: Cascade Lake has VNNI without it).
 * Compiled with the AVX-512 flags plus -mavx512vnni.
 */
#include "../../mte_quant_internal.h"

#if defined(__x86_64__)
#include "../../mte_qrequant_x86.h"

#define LD(p) _mm512_loadu_si512((const void *)(p))

/* lanes k < n of 64 */
static inline __mmask64 lanes64(int64_t n) {
  return n >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << n) - 1;
}

/* the 4 bytes (b0, b1, b2, b3) in every int32 lane */
static inline __m512i quad(int b0, int b1, int b2, int b3) {
  return _mm512_set1_epi32((int32_t)((uint32_t)(uint8_t)b0 | (uint32_t)(uint8_t)b1 << 8 |
                                     (uint32_t)(uint8_t)b2 << 16 | (uint32_t)(uint8_t)b3 << 24));
}

/* tap row (w0, w1, w2) as the weights of output 4l (wa) and 4l + 1 (wb) of a 4-byte lane */
static inline void tap_quads(int w0, int w1, int w2, __m512i *wa, __m512i *wb) {
  *wa = quad(w0, w1, w2, 0);
  *wb = quad(0, w0, w1, w2);
}

/* the rows of x, as x ^ 0x80, into their phases of the byte plane (as widen() of the
 * int16 kernels: the fields in locals, no division per row) */
static void copy_in(const mte_qdw_plane *a) {
  const int64_t cols = mte__qdw_cols(a), H = a->H, W = a->W, sh = a->sh, hq = a->hq, pe = a->pe;
  const __m512i flip = _mm512_set1_epi8((char)0x80);
  const int8_t *src = a->x;
  uint8_t *const u = a->u + a->pl;
  int64_t ph = a->pt % sh, q = a->pt / sh; /* row rho = h + pt: phase rho % sh, row rho / sh */
  if (cols <= 64) { /* the usual: one masked move per row */
    const __mmask64 k = lanes64(cols);
    for (int64_t h = 0; h < H && q < hq; ++h, src += W) {
      _mm512_mask_storeu_epi8(u + (ph * hq + q) * pe, k,
                              _mm512_xor_si512(_mm512_maskz_loadu_epi8(k, src), flip));
      if (++ph == sh) ph = 0, ++q;
    }
    return;
  }
  for (int64_t h = 0; h < H && q < hq; ++h, src += W) {
    uint8_t *dst = u + (ph * hq + q) * pe;
    for (int64_t c = 0; c < cols; c += 64) {
      const __mmask64 k = lanes64(cols - c);
      _mm512_mask_storeu_epi8(dst + c, k,
                              _mm512_xor_si512(_mm512_maskz_loadu_epi8(k, src + c), flip));
    }
    if (++ph == sh) ph = 0, ++q;
  }
}

/* the 64 flat outputs g0 .. g0 + 63 in v to y: a masked store per output row they touch
 * (lane l, in row r, is y[r * Wo + g0 + l - r * pitch]; the columns past Wo and the outputs
 * past n are masked off). Straight from the register: a line in memory read back at once by
 * the row copy stalled on store forwarding. The address of a row's store may precede the
 * row (its first lanes masked off): it is formed as an integer. */
static inline void store_rows(const mte_qdw_plane *a, int64_t g0, int64_t *r, __m512i v) {
  const int64_t pitch = a->pitch, Wo = a->Wo, Ho = a->Ho;
  while ((*r + 1) * pitch <= g0) ++*r;
  for (int64_t row = *r; row < Ho && row * pitch < g0 + 64; ++row) {
    const int64_t start = row * pitch - g0, end = start + Wo; /* lanes of the row */
    if (end <= 0) continue; /* only its garbage columns */
    const __mmask64 k = lanes64(end < 64 ? end : 64) & ~lanes64(start > 0 ? start : 0);
    _mm512_mask_storeu_epi8((void *)((uintptr_t)a->y + (uintptr_t)(g0 - row * (pitch - Wo))), k,
                            v);
  }
}

/* 4 x 16 requantized int32 -> 64 bytes by two saturating packs and the in-lane shuffle
 * `order` */
static inline __m512i narrow(__m512i r0, __m512i r1, __m512i r2, __m512i r3, __m512i order) {
  const __m512i b = _mm512_packs_epi16(_mm512_packs_epi32(r0, r1), _mm512_packs_epi32(r2, r3));
  return _mm512_shuffle_epi8(b, order);
}

static inline __m512i clamp8(__m512i v, __m512i lo, __m512i hi) {
  return _mm512_min_epi8(_mm512_max_epi8(v, lo), hi);
}

static void qdw_plane_avx512vnni(const mte_qdw_plane *a) {
  copy_in(a);
  const mte_qchan ch = *a->chan; /* a local: the byte stores below cannot alias it */
  const int fast = ch.fast;
  const mte_qchan shift1 = {.right = 1}; /* a slow channel's unused constants, defined */
  const mte_qfast512 f = mte__qfast512(fast ? &ch : &shift1, a->zp);
  const int32_t zp = a->zp, lo32 = a->lo, hi32 = a->hi;
  const __m512i comp = _mm512_set1_epi32(ch.comp);
  const __m512i lo = _mm512_set1_epi8((char)a->lo), hi = _mm512_set1_epi8((char)a->hi);
  const uint8_t *r0 = a->u + a->off[0], *r1 = a->u + a->off[1], *r2 = a->u + a->off[2];
  const int64_t n = a->n;
  int64_t row = 0; /* the output row of the chunk's first output */
  __m512i wa[3], wb[3];
  for (int i = 0; i < 3; ++i)
    tap_quads(a->w[3 * i], a->w[3 * i + 1], a->w[3 * i + 2], &wa[i], &wb[i]);
#define REQ(v) (fast ? mte__requant512_fast(v, &f) : mte__requant512_dot(v, &ch, zp, lo32, hi32))
  if (a->sw == 1) {
    /* lane q after the packs: byte 4k + i is output 16q + 4i + k (accumulator k) */
    const __m512i order = _mm512_broadcast_i32x4(
        _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
    for (int64_t g = 0; g < n; g += 64) {
      __m512i a0 = comp, a1 = comp, a2 = comp, a3 = comp;
      const uint8_t *rs[3] = {r0 + g, r1 + g, r2 + g};
#pragma GCC unroll 3
      for (int i = 0; i < 3; ++i) {
        const __m512i l0 = LD(rs[i]), l2 = LD(rs[i] + 2);
        a0 = _mm512_dpbusd_epi32(a0, l0, wa[i]);
        a1 = _mm512_dpbusd_epi32(a1, l0, wb[i]);
        a2 = _mm512_dpbusd_epi32(a2, l2, wa[i]);
        a3 = _mm512_dpbusd_epi32(a3, l2, wb[i]);
      }
      store_rows(a, g, &row, clamp8(narrow(REQ(a0), REQ(a1), REQ(a2), REQ(a3), order), lo, hi));
    }
  } else {
    /* lane q after the packs: bytes 4k + i are outputs 8q + 2i + k (k < 2), then
     * 32 + 8q + 2i + k - 2; the qword permute puts the runs of 8 in order */
    const __m512i order = _mm512_broadcast_i32x4(
        _mm_setr_epi8(0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15));
    const __m512i lanes = _mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7);
    for (int64_t g = 0; g < n; g += 64) {
      __m512i a0 = comp, a1 = comp, a2 = comp, a3 = comp;
      const uint8_t *rs[3] = {r0 + 2 * g, r1 + 2 * g, r2 + 2 * g};
#pragma GCC unroll 3
      for (int i = 0; i < 3; ++i) {
        a0 = _mm512_dpbusd_epi32(a0, LD(rs[i]), wa[i]);
        a1 = _mm512_dpbusd_epi32(a1, LD(rs[i] + 2), wa[i]);
        a2 = _mm512_dpbusd_epi32(a2, LD(rs[i] + 64), wa[i]);
        a3 = _mm512_dpbusd_epi32(a3, LD(rs[i] + 66), wa[i]);
      }
      const __m512i v = narrow(REQ(a0), REQ(a1), REQ(a2), REQ(a3), order);
      store_rows(a, g, &row, clamp8(_mm512_permutexvar_epi64(lanes, v), lo, hi));
    }
  }
#undef REQ
}

/* lanes lo <= k < hi of 64 (none when hi <= lo) */
static inline __mmask64 span64(int64_t lo, int64_t hi) {
  if (lo < 0) lo = 0;
  return hi <= lo ? 0 : lanes64(hi) & ~lanes64(lo);
}

/* Planes [p0, p1) of a narrow stride-1 conv (mte_qdw_tab): per chunk of R output rows, the
 * R + 2 input rows from s0 = (r0 - 1) * W in two masked loads filled with x_zp (the rows
 * above and below the plane too), x ^ 0x80, the 6 windows by VPERMI2B (index 127: the
 * fill), the same 4 accumulators and requantization as the flat kernel, and one VPERMB
 * that compacts the R rows (pitch W + 2 in the lanes) and orders them for one store. */
__attribute__((target("avx512vbmi"))) static void qdw_tab_avx512vnni(const mte_qdw_tab *t,
                                                                     int64_t p0, int64_t p1) {
  const int64_t H = t->H, W = t->W, R = t->R, C = t->C, HW = H * W, L = (R + 2) * W;
  const int32_t zp = t->zp, lo32 = t->lo, hi32 = t->hi;
  const __m512i fill = _mm512_set1_epi8((char)t->x_zp), flip = _mm512_set1_epi8((char)0x80);
  const __m512i lo = _mm512_set1_epi8((char)t->lo), hi = _mm512_set1_epi8((char)t->hi);
  const __m512i out = LD(t->out);
  __m512i win[6];
  for (int i = 0; i < 6; ++i) win[i] = LD(t->win[i]);
  const mte_qchan shift1 = {.right = 1}; /* a slow channel's unused constants, defined */
  for (int64_t pl = p0; pl < p1; ++pl) {
    const int64_t c = pl % C;
    const mte_qchan ch = t->chan[c];
    const int fast = ch.fast;
    const mte_qfast512 f = mte__qfast512(fast ? &ch : &shift1, zp);
    const __m512i comp = _mm512_set1_epi32(ch.comp);
    const int8_t *w = t->w3x3 + 9 * c;
    __m512i wa[3], wb[3];
    for (int i = 0; i < 3; ++i) tap_quads(w[3 * i], w[3 * i + 1], w[3 * i + 2], &wa[i], &wb[i]);
    const uintptr_t x = (uintptr_t)(t->x + pl * HW); /* loads before the plane: masked off */
    int8_t *const y = t->y + pl * HW;
    for (int64_t r0 = 0; r0 < H; r0 += R) {
      const int64_t s0 = (r0 - 1) * W, end = HW - s0 < L ? HW - s0 : L; /* bytes [.., end) */
      const __m512i a = _mm512_xor_si512(
          _mm512_mask_loadu_epi8(fill, span64(-s0, end < 64 ? end : 64),
                                 (const void *)(x + (uintptr_t)s0)), flip);
      const __m512i b = _mm512_xor_si512(
          _mm512_mask_loadu_epi8(fill, span64(-s0 - 64, end - 64),
                                 (const void *)(x + (uintptr_t)(s0 + 64))), flip);
      __m512i a0 = comp, a1 = comp, a2 = comp, a3 = comp;
#pragma GCC unroll 3
      for (int i = 0; i < 3; ++i) {
        const __m512i l0 = _mm512_permutex2var_epi8(a, win[2 * i], b);
        const __m512i l2 = _mm512_permutex2var_epi8(a, win[2 * i + 1], b);
        a0 = _mm512_dpbusd_epi32(a0, l0, wa[i]);
        a1 = _mm512_dpbusd_epi32(a1, l0, wb[i]);
        a2 = _mm512_dpbusd_epi32(a2, l2, wa[i]);
        a3 = _mm512_dpbusd_epi32(a3, l2, wb[i]);
      }
#define REQ(v) (fast ? mte__requant512_fast(v, &f) : mte__requant512_dot(v, &ch, zp, lo32, hi32))
      const __m512i v = _mm512_packs_epi16(_mm512_packs_epi32(REQ(a0), REQ(a1)),
                                           _mm512_packs_epi32(REQ(a2), REQ(a3)));
#undef REQ
      const int64_t rows = H - r0 < R ? H - r0 : R;
      _mm512_mask_storeu_epi8(y + r0 * W, lanes64(rows * W),
                              _mm512_permutexvar_epi8(out, clamp8(v, lo, hi)));
    }
  }
}

#undef LD

const mte_qdw_kernel mte_qdw_kernel_avx512vnni = {
    .isa = "avx512vnni", .plane = qdw_plane_avx512vnni, .x_offset = 128,
    .planes_tab = qdw_tab_avx512vnni, .tab_needs = MTE_CPU_AVX512_VBMI};
#endif
