/*
 * mte_quant_internal.h - the int8 kernel families and the scalar requantization they share.
 *
 * Requantization (TFLite / gemmlowp arithmetic, bit-exact with numpy_int8.py): the scalar
 * functions below are the reference every SIMD version is tested against.
 *
 * The "qgemm" family is the int8 twin of the SGEMM microkernel descriptor: one MR x NR tile
 *     acc[i][j] = sum_g sum_{t<4} a[g][i][t] * b[g][j][t]     (int32, exact)
 * over packed panels whose k runs in groups of 4 consecutive values (the shape VPDPBUSD,
 * SDOT and PMADDUBSW+PMADDWD want: 4 byte products summed into one int32 lane), then
 *     y[i*rs + j*cs] = clamp(mbqm(saturate(acc + chan[i].bias), chan[i]) + zp, lo, hi)
 * on the tile while it is in registers. x is packed as signed bytes, or as x ^ 0x80 (=
 * x + 128, unsigned) when the kernel's x_offset is 128 (VNNI: u8 x s8); the driver folds
 * -(x_zp + x_offset) * sum_k w[o, k] into chan[o].comp, so every kernel computes the same.
 *
 * The "qdepthwise" family computes one plane of a 3x3 depthwise convolution as one flat
 * row: the padded plane is widened once to int16 (x - x_zp, so the padding is 0), with its
 * rows in sh phases (row r*sh + i is row r of phase i % sh, shifted i / sh rows), so output
 * g = r * pitch + c of the flat row reads, for tap (i, j), element off[i] + sw * g + j: a
 * fixed offset per tap, nothing per output row. Pairs of int16 (j = 0, 1) are one pair
 * multiply-add (PMADDWD / SMLAL), tap 2 another with weights (w2, 0) or (0, w2). The flat
 * outputs past column Wo are computed and dropped by the driver's row copy. A kernel whose
 * x_offset is 128 (VNNI) takes the plane as bytes x ^ 0x80 (= x + 128, unsigned) padded with
 * x_zp + 128 instead, and the driver folds -(x_zp + 128) * sum(w) into comp, as for qgemm.
 */
#ifndef MTE_QUANT_INTERNAL_H
#define MTE_QUANT_INTERNAL_H

#include "mte_internal.h"

/* ---------------------------------------------------------------- scalar requantization */

/* SaturatingRoundingDoublingHighMul: round(a * b / 2^31), the one overflow saturated */
static inline int32_t mte__srdhm(int32_t a, int32_t b) {
  if (a == INT32_MIN && b == INT32_MIN) return INT32_MAX;
  int64_t ab = (int64_t)a * b;
  int64_t nudge = ab >= 0 ? (1 << 30) : (1 - (1 << 30));
  return (int32_t)((ab + nudge) / ((int64_t)1 << 31));
}

/* RoundingDivideByPOT: x / 2^e rounded to nearest, ties away from zero; 0 <= e <= 31 */
static inline int32_t mte__rdbpot(int32_t x, int e) {
  int32_t mask = (int32_t)(((int64_t)1 << e) - 1);
  int32_t remainder = x & mask;
  int32_t threshold = (mask >> 1) + (x < 0);
  return (x >> e) + (remainder > threshold);
}

/* MultiplyByQuantizedMultiplier with the shift split into left = max(shift, 0) and
 * right = max(-shift, 0) */
static inline int32_t mte__mbqm_lr(int32_t x, int32_t m, int left, int right) {
  int64_t xs = (int64_t)x * ((int64_t)1 << left);
  if (xs > INT32_MAX) xs = INT32_MAX;
  if (xs < INT32_MIN) xs = INT32_MIN;
  return mte__rdbpot(mte__srdhm((int32_t)xs, m), right);
}
static inline int32_t mte__mbqm(int32_t x, int32_t m, int32_t shift) {
  return mte__mbqm_lr(x, m, shift > 0 ? shift : 0, shift < 0 ? -shift : 0);
}

/* a + b modulo 2^32 (an accumulator plus its bias never traps on overflow) */
static inline int32_t mte__wrap_add(int32_t a, int32_t b) {
  return (int32_t)((uint32_t)a + (uint32_t)b);
}

static inline int32_t mte__clamp32(int32_t v, int32_t lo, int32_t hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

/* argument checks shared by every entry point */
static inline int mte__q_zp_ok(int32_t zp) { return zp >= -128 && zp <= 127; }
static inline int mte__q_mult_ok(int32_t m, int32_t shift) {
  return m >= 0 && shift >= -31 && shift <= 30;
}
static inline int mte__q_act_ok(int32_t lo, int32_t hi) {
  return lo >= -128 && lo <= hi && hi <= 127;
}

/* One output channel's epilogue, as the microkernels read it:
 *   dot = acc + comp (mod 2^32: the zero-point compensation; dot itself always fits int32)
 *   s   = saturate(dot + bias) = clamp(dot, blo, bhi) + bias  (blo/bhi: the bias's room)
 *   y   = clamp(mbqm(s, mult, left, right), lo - zp, hi - zp) + zp
 * left/right: the shift split into its positive and negative parts.
 * When |dot| <= dmax cannot reach saturation with this bias, mte__qchan_fold adds the bias
 * into comp (blo, bhi, bias become INT32_MIN, INT32_MAX, 0: the same arithmetic) and marks
 * the channel `fast` if also left == 0 and 1 <= right <= 23: the SIMD requantizations may
 * then skip the clamps and round once in 64 bits (mte_qrequant_x86.h). */
typedef struct mte_qchan {
  int32_t comp, blo, bhi, bias, mult, left, right, fast;
} mte_qchan;

/* the channel's fields for this bias, multiplier, shift and compensation */
static inline mte_qchan mte__qchan(int32_t bias, int32_t mult, int32_t shift, int32_t comp) {
  mte_qchan c = {comp, bias < 0 ? INT32_MIN - bias : INT32_MIN,
                 bias > 0 ? INT32_MAX - bias : INT32_MAX, bias, mult,
                 shift > 0 ? shift : 0, shift < 0 ? -shift : 0, 0};
  return c;
}

/* the bias folded into comp when |acc + comp| <= dmax leaves it no overflow */
static inline void mte__qchan_fold(mte_qchan *c, int64_t dmax) {
  const int64_t b = c->bias;
  if ((b < 0 ? -b : b) > INT32_MAX - dmax) return;
  *c = (mte_qchan){(int32_t)(c->comp + b), INT32_MIN, INT32_MAX, 0, c->mult, c->left,
                   c->right, c->left == 0 && c->right >= 1 && c->right <= 23};
}

static inline int8_t mte__requant(int32_t acc, const mte_qchan *c, int32_t zp, int32_t lo,
                                  int32_t hi) {
  int32_t s = mte__clamp32(mte__wrap_add(acc, c->comp), c->blo, c->bhi) + c->bias;
  int32_t v = mte__mbqm_lr(s, c->mult, c->left, c->right);
  return (int8_t)(mte__clamp32(v, lo - zp, hi - zp) + zp); /* = clamp(v + zp): no overflow */
}

/* ---------------------------------------------------------------- qgemm family */

/* One tile. a: kg x MR x 4 weight bytes; b: kg x NR x 4 x bytes (both 64-byte aligned);
 * chan: MR channels (padded: always MR readable); rows <= MR, cols <= NR are stored. */
typedef struct mte_qtile {
  int64_t kg; /* k groups of 4 (>= 1) */
  const int8_t *a;
  const uint8_t *b;
  const mte_qchan *chan;
  int rows, cols;
  int32_t zp, lo, hi;
  int8_t *y;
  int64_t rs, cs; /* y[i*rs + j*cs] */
} mte_qtile;

typedef struct mte_qgemm_kernel {
  const char *isa;
  const char *path;                    /* what runs, for mte_qgemm_path: "avx512vnni vpdpbusd" */
  uint64_t needs;                      /* MTE_CPU_* bits beyond the row's (0: none) */
  const struct mte_qgemm_kernel *fallback; /* taken when the CPU lacks `needs` */
  int mr, nr;
  int x_offset;                        /* 0: x packed signed; 128: x ^ 0x80 */
  /* the weight panels' layout: 0: kg x MR x 4 bytes (a k quad of every row in turn); 1: MR
   * rows of kg x 4 bytes (AMX's tile rows). kg is ceil(K / 4) rounded up to kg_align (0 or
   * 1: none); the quads past K are zero in the weights and in the packed x */
  int w_rows, kg_align;
  int64_t min_k;                       /* reductions shorter than this take the fallback */
  void (*ukernel)(const mte_qtile *t); /* any tile, any (rs, cs) */
  /* optional: a tile of at most nr / 2 columns (the first half of the panel) */
  void (*ukernel_half)(const mte_qtile *t);
  double (*dot_peak)(int64_t rounds);  /* optional: int8 ops of a register-only loop */
  /* optional: 4 rows of x (r[t] + c, ^ flip) into the panels' k group at dst (panels pstride
   * bytes apart), for the first columns in steps of its choice; returns the columns done */
  int64_t (*pack4)(const uint8_t *const r[4], int64_t nc, int64_t pstride, uint8_t flip,
                   uint8_t *dst);
} mte_qgemm_kernel;

/* the descriptor of the active row's qgemm column that this CPU can run for a reduction of
 * K terms (the `fallback` walk, as mte__bf16_kernel, also past kernels whose min_k > K);
 * K = 0: the column's best, whatever K */
MTE_HIDDEN const mte_qgemm_kernel *mte__qgemm_kernel(int64_t K);

#define MTE_QMAX_MR 32
#define MTE_QMAX_NR 64

/* The requantized tile acc (MR x NR int32, row stride NR) stored through (rs, cs): the
 * portable store the kernels use for a transposed (qlinear) tile. */
static inline void mte__qtile_store_scalar(const mte_qtile *t, const int32_t *acc, int nr) {
  for (int i = 0; i < t->rows; ++i)
    for (int j = 0; j < t->cols; ++j)
      t->y[i * t->rs + j * t->cs] = mte__requant(acc[i * nr + j], &t->chan[i], t->zp, t->lo,
                                                 t->hi);
}

/* ---------------------------------------------------------------- qdepthwise family */

/* One plane: widen x into p, compute the n flat outputs into line, copy the Wo real
 * columns of each of the Ho rows (pitch apart in line) to y. */
typedef struct mte_qdw_plane {
  const int8_t *x;  /* the input plane, H x W */
  int64_t H, W, pt, pl, sh;
  int64_t hq, pe;   /* padded rows per row phase; elements per padded row */
  int32_t x_zp;
  int16_t *p;       /* the widened plane; its padding is zero, widening writes the rest */
  uint8_t *u;       /* instead for x_offset 128: the plane of x ^ 0x80, padded x_zp + 128 */
  int64_t off[3];   /* element of tap (i, 0) for output 0 */
  int sw;           /* 1 or 2 */
  int64_t n;        /* flat outputs */
  int16_t w[9];     /* the taps, row-major */
  const mte_qchan *chan;
  int32_t zp, lo, hi;
  int8_t *line;     /* n flat outputs; writable up to round_up(n, 64) */
  int64_t Ho, Wo, pitch;
  int8_t *y;        /* Ho x Wo */
} mte_qdw_plane;

/* where input row h goes in the widened plane (NULL: no output reads it), and the
 * columns of it that are read */
static inline int16_t *mte__qdw_dst_row(const mte_qdw_plane *a, int64_t h) {
  const int64_t rho = h + a->pt;
  if (rho >= a->sh * a->hq) return NULL;
  return a->p + ((rho % a->sh) * a->hq + rho / a->sh) * a->pe + a->pl;
}
static inline int64_t mte__qdw_cols(const mte_qdw_plane *a) {
  return a->W < a->pe - a->pl ? a->W : a->pe - a->pl;
}

/* int16 zeros the plane has past its last tap of output n - 1 (vector over-reach); the
 * bytes a u8 plane has */
#define MTE_QDW_TAIL 160
#define MTE_QDW_TAIL_U8 256

/* The narrow-plane route (stride 1, padding 1 on every side, W <= MTE_QDW_TAB_MAX_W): no
 * copy of the plane. A chunk is R output rows; its R + 2 input rows ((R + 2) * W <= 127
 * bytes, rows outside the plane filled with x_zp) are two masked loads, and each of the 6
 * vectors the flat kernel would load from a padded copy (tap row i, offset 0 or 2) is one
 * two-register byte permute of them with a fixed index vector (win; index 127, never a
 * loaded byte, is the x_zp padding). The results go to y through one more permute (out),
 * which also undoes the order of the packs, and one masked store of R * W bytes. The tables
 * depend only on H, W: the driver builds them once per call (qdepthwise.c). */
#define MTE_QDW_TAB_MAX_W 20 /* at 28 the copy kernel is faster (50 vs 57 us, C = 192) */
typedef struct mte_qdw_tab {
  int64_t H, W, R, C;   /* plane size, rows per chunk, channels */
  uint8_t win[6][64];   /* window 2i + s/2: lane byte b = padded (row r0 - 1 + i, col b + s) */
  uint8_t out[64];      /* output byte o of a chunk <- byte out[o] of the packed results */
  const int8_t *x, *w3x3; /* planes (H x W each, n * C + c), taps (C x 9) */
  const mte_qchan *chan;  /* C channels (comp: the x_offset 128 compensation) */
  int32_t x_zp, zp, lo, hi;
  int8_t *y;              /* planes H x W */
} mte_qdw_tab;

typedef struct mte_qdw_kernel {
  const char *isa;
  void (*plane)(const mte_qdw_plane *p);
  int x_offset; /* 0: the int16 plane p of x - x_zp; 128: the byte plane u of x ^ 0x80 */
  /* planes [p0, p1) by the narrow-plane route, or NULL (x_offset 128 kernels only), and the
   * CPU features it needs beyond the ISA's */
  void (*planes_tab)(const mte_qdw_tab *t, int64_t p0, int64_t p1);
  uint64_t tab_needs;
} mte_qdw_kernel;

extern const mte_qgemm_kernel mte_qgemm_kernel_generic;
extern const mte_qdw_kernel mte_qdw_kernel_generic;
#ifdef MTE_HAVE_X86_KERNELS
extern const mte_qgemm_kernel mte_qgemm_kernel_avx2, mte_qgemm_kernel_avx512,
    mte_qgemm_kernel_avx512vnni, mte_qgemm_kernel_amx;
extern const mte_qdw_kernel mte_qdw_kernel_avx2, mte_qdw_kernel_avx512, mte_qdw_kernel_avx512vnni;
#endif
#ifdef MTE_HAVE_NEON_KERNELS
extern const mte_qgemm_kernel mte_qgemm_kernel_neon, mte_qgemm_kernel_neondot;
extern const mte_qdw_kernel mte_qdw_kernel_neon;
#endif

#endif /* MTE_QUANT_INTERNAL_H */
