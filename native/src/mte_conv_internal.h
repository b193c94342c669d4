/*
 * mte_conv_internal.h - what the convolution sources share (not installed).
 *
 *   conv.c           validation, threads, the forward pass, direct depthwise loops
 *   conv_backward.c  the two backward passes
 *   conv_gemm.c      the pieces they are built from: packing, segments and pieces, the
 *                    macro-kernel over gemm.c's microkernel with the fused epilogue, scratch
 *   arch/<isa>/im2col_panel.c
 *                    the im2col family: the innermost im2col / col2im loops (generic: plain
 *                    C, any stride; AVX2 and AVX-512: SIMD at stride 1)
 *
 * Below: the geometry of one call, small helpers, then the inner-loop interfaces.
 */
#ifndef MTE_CONV_INTERNAL_H
#define MTE_CONV_INTERNAL_H

#include "mte_epilogue.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define MTE_CONV_NB_MAX 1024      /* pixels (B columns) per forward work item */
#define MTE_CONV_DIRECT_MAX_KG 4  /* Cg == 1 and Kg <= this: direct depthwise loops */
#define MTE_CONV_PACKED_HEADER 16 /* floats before the panels of a prepacked weight */

/* One convolution, validated (sizes fit in memory, every value <= 2^30). */
typedef struct conv_geom {
  int64_t N, C, H, W, K, kh, kw, Ho, Wo, sh, sw, pt, pl, dh, dw, G;
  int64_t pb, pr;
  int64_t Cg, Kg, khw, KK, HW, HWi; /* KK = Cg*kh*kw rows of cols; HW = Ho*Wo; HWi = H*W */
} conv_geom;

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static inline int64_t rup(int64_t a, int64_t b) { return cdiv(a, b) * b; }
static inline int64_t conv_numel(int64_t a, int64_t b, int64_t c, int64_t e) {
  return a * b * c * e;
}

/* Block size for splitting `total` into about equal blocks, multiples of `unit`, at most
 * `cap` (rounded up to unit) each, and at least `min_blocks` of them where possible. */
static inline int64_t conv_split(int64_t total, int64_t unit, int64_t cap, int64_t min_blocks) {
  const int64_t blocks = max64(max64(cdiv(total, max64(cap, 1)), min_blocks), 1);
  return max64(unit, rup(cdiv(total, blocks), unit));
}

/* conv_split for `parts` threads: the number of blocks also a multiple of parts, so that a
 * static schedule gives each thread as many blocks (3136 pixels in 3 blocks of ~1056 are
 * 2:1 on two threads; in 4 blocks of 784, 2:2) */
static inline int64_t conv_split_even(int64_t total, int64_t unit, int64_t cap, int64_t parts) {
  const int64_t b = conv_split(total, unit, cap, parts), blocks = cdiv(total, b);
  if (parts <= 1 || blocks % parts == 0) return b;
  return max64(unit, rup(cdiv(total, rup(blocks, parts)), unit));
}

/* How evenly `parts` threads share `total` units cut in blocks of `block` (OpenMP's static
 * schedule: whole blocks, at most cdiv(blocks, parts) each): total / (parts x the largest
 * share), 1 = even. */
static inline double conv_balance(int64_t total, int64_t block, int64_t parts) {
  const int64_t blocks = cdiv(total, max64(block, 1)), per = cdiv(blocks, max64(parts, 1));
  const int64_t most = min64(total, per * block);
  return (double)total / ((double)parts * (double)max64(most, 1));
}

/* Output pixels q in [0, n) read input columns iw0 + q*sw; those inside [0, W) are [lo, hi). */
static inline void conv_clip(int64_t iw0, int64_t sw, int64_t W, int64_t n, int64_t *lo,
                             int64_t *hi) {
  int64_t a, b;
  if (sw == 1) {
    a = iw0 >= 0 ? 0 : -iw0;
    b = W - iw0;
  } else {
    a = iw0 >= 0 ? 0 : (-iw0 + sw - 1) / sw;
    b = iw0 >= W ? 0 : (W - iw0 + sw - 1) / sw;
  }
  a = min64(max64(a, 0), n);
  b = min64(max64(b, a), n);
  *lo = a;
  *hi = b;
}

/* Extent (rows or columns) of the padded input that the windows of `out` outputs reach. */
static inline int64_t conv_reach(int64_t in, int64_t pad0, int64_t pad1, int64_t out,
                                 int64_t stride, int64_t kernel, int64_t dilation) {
  const int64_t need = out > 0 ? (out - 1) * stride + (kernel - 1) * dilation + 1 : 0;
  return max64(in + pad0 + pad1, need);
}

/* a*b*c floats, in bytes; clears *ok on overflow */
static inline size_t conv_bytes(int *ok, int64_t a, int64_t b, int64_t c) {
  size_t r = sizeof(float);
  if (a < 0 || b < 0 || c < 0 || !mte__mul_size(r, (size_t)a, &r) ||
      !mte__mul_size(r, (size_t)b, &r) || !mte__mul_size(r, (size_t)c, &r)) {
    *ok = 0;
    return 0;
  }
  return r;
}

/* Whether a zero-padded copy of Hp x Wp planes is reasonable: not much larger than the image
 * and the output (huge padding or dilation would make it absurd: the bounds-checked paths
 * serve those). Sets *plane = Hp * Wp when it is. */
static inline int conv_pad_ok(const conv_geom *g, int64_t Hp, int64_t Wp, int64_t *plane) {
  if (Hp > ((int64_t)1 << 31) || Wp > ((int64_t)1 << 31)) return 0;
  if (Hp * Wp > 2 * (g->HWi + g->HW) + 65536) return 0;
  *plane = Hp * Wp;
  return 1;
}

static inline int conv_tid(void) {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

/* a parallel region over `nt` threads (a variable of that name must be in scope) */
#ifdef _OPENMP
#define PARALLEL _Pragma("omp parallel num_threads(nt) if (nt > 1)")
#define FOR_STATIC _Pragma("omp for schedule(static)")
#define FOR_DYNAMIC _Pragma("omp for schedule(dynamic, 1)")
#else
#define PARALLEL
#define FOR_STATIC
#define FOR_DYNAMIC
#endif

/* ---------------------------------------------------------------- inner loops, per ISA */

/*
 * A block of consecutive output pixels is cut into *segments*: runs of pixels of one
 * output row (plus, for a packed panel, a zero segment for columns past the matrix's
 * edge). Segment s covers block columns off[s] .. off[s]+len[s]; its pixel q reads input
 * column iw0[s] + j*dw + q*sw of input row ih0[s] + i*dh for kernel offset (i, j). The
 * segments are computed once per block; the loops then run over rows (c, i, j):
 *
 *   panel:   dst[p*nr + off[s] + q] = x_c[ih][iw]            (0 outside the plane)
 *   col2im:  gx_c[ih][iw] += cols[row*ldc + off[s] + q]      (outside the plane: dropped)
 *
 * The SIMD versions handle sw == 1 with masked loads/stores (masked lanes never touch
 * memory, so the image borders need no branches) and call the generic ones otherwise.
 */
#define MTE_CONV_MAX_SEG 520 /* > NR + 1 and > a backward-input block (<= 516 pixels) + 1 */
#define MTE_CONV_NO_ROW (-((int64_t)1 << 62)) /* ih0 of a zero segment: never inside */

typedef struct mte_conv_segs {
  int64_t H, W, HWi, kh, kw, dh, dw, sw;
  int nseg;
  int64_t ih0[MTE_CONV_MAX_SEG], iw0[MTE_CONV_MAX_SEG];
  int32_t len[MTE_CONV_MAX_SEG], off[MTE_CONV_MAX_SEG];
} mte_conv_segs;

/* kc panel rows (c, i, j) = p0, p0+1, ... of one NR-wide panel; x: the group's planes */
typedef void (*mte_im2col_panel_fn)(const mte_conv_segs *sg, const float *x, int64_t p0,
                                    int64_t kc, int nr, float *MTE_RESTRICT dst);
/* rows (c, i, j) = 0 .. rows-1 of a cols block (ld ldc) added into the planes gx */
typedef void (*mte_col2im_fn)(const mte_conv_segs *sg, float *gx, const float *cols,
                              int64_t ldc, int64_t rows);

MTE_HIDDEN void mte__im2col_panel_generic(const mte_conv_segs *sg, const float *x, int64_t p0,
                                          int64_t kc, int nr, float *MTE_RESTRICT dst);
MTE_HIDDEN void mte__col2im_generic(const mte_conv_segs *sg, float *gx, const float *cols,
                                    int64_t ldc, int64_t rows);
/*
 * Stride-1 panels, faster: when x is zero-padded beforehand (or needs no padding), every
 * window lies inside the plane, so a run of pixels of one output row reads one contiguous
 * run of the plane for every kernel offset. A panel is then a list of *pieces* of at most
 * MTE_CONV_PIECE floats: for row (c, i, j) of the panel,
 *
 *     dst[p*nr + dst[k] + q] = x[c*plane + i*dh*pitch + j*dw + src[k] + q],  q < len[k]
 *
 * and columns width .. nr-1 are zero. No bounds logic is left in the loop.
 */
#define MTE_CONV_PIECE 16
#define MTE_CONV_MAX_PIECES 80 /* >= largest NR + 1 + NR / MTE_CONV_PIECE */

typedef struct mte_conv_pieces {
  int64_t plane, pitch, kh, kw, dh, dw;
  int n, width, nr;
  int64_t src[MTE_CONV_MAX_PIECES];
  int32_t dst[MTE_CONV_MAX_PIECES], len[MTE_CONV_MAX_PIECES];
} mte_conv_pieces;

typedef void (*mte_im2col_pieces_fn)(const mte_conv_pieces *pcs, const float *x, int64_t p0,
                                     int64_t kc, float *MTE_RESTRICT dst);

/* col2im with pieces: gx[c*plane + i*dh*pitch + j*dw + src[k] + q] += cols[r*ldc + dst[k] + q]
 * for rows r = (c, i, j) = 0 .. rows-1, rows a multiple of kh*kw (width and nr unused) */
typedef void (*mte_col2im_pieces_fn)(const mte_conv_pieces *pcs, float *gx, const float *cols,
                                     int64_t ldc, int64_t rows);

/* the im2col family's descriptor (a column of cpu.c's ISA table): the four inner loops */
typedef struct mte_im2col_kernel {
  const char *isa;
  mte_im2col_panel_fn panel;
  mte_im2col_pieces_fn pieces;
  mte_col2im_fn col2im;
  mte_col2im_pieces_fn col2im_pieces;
} mte_im2col_kernel;

extern const mte_im2col_kernel mte_im2col_kernel_generic;
#if defined(MTE_HAVE_X86_KERNELS)
extern const mte_im2col_kernel mte_im2col_kernel_avx2;
extern const mte_im2col_kernel mte_im2col_kernel_avx512;
#endif

/* ---------------------------------------------------------------- conv.c, conv_gemm.c */

typedef struct conv_scratch { /* the arena a call carves its buffers from */
  mte_arena *a;
  int is_default, borrowed; /* borrowed: the caller's arena */
} conv_scratch;

MTE_HIDDEN int mte__conv_make_geom(const mte_conv2d_desc *d, conv_geom *g);
MTE_HIDDEN int mte__conv_threads(double work, int64_t items);
MTE_HIDDEN int mte__conv_dw_backward_input(const conv_geom *g, const float *gy, const float *w,
                                           float *gx);
MTE_HIDDEN int mte__conv_dw_backward_weight(const conv_geom *g, const float *gy,
                                            const float *x, float *gw);

MTE_HIDDEN void mte__conv_im2col_run(const conv_geom *g, const float *xc, int64_t i,
                                     int64_t j, int64_t r, int64_t s, int64_t len,
                                     float *MTE_RESTRICT out);
MTE_HIDDEN void mte__conv_pack_a(int mr, int64_t rows, int64_t kc, const float *A, int64_t lda,
                                 int trans, int64_t i0, int64_t p0, float *MTE_RESTRICT dst);
MTE_HIDDEN void mte__conv_pack_b_plain(int nr, int64_t ncols, int64_t kc, const float *B,
                                       int64_t ldb, int64_t j0, int64_t p0,
                                       float *MTE_RESTRICT dst);
MTE_HIDDEN void mte__conv_make_segs(const conv_geom *g, int64_t j0, int64_t n, int64_t width,
                                    mte_conv_segs *sg);
MTE_HIDDEN int mte__conv_make_pieces(const conv_geom *g, int64_t j0, int64_t n, int64_t pitch,
                                     int64_t dst0, mte_conv_pieces *pcs);
MTE_HIDDEN void mte__conv_pad_planes(const conv_geom *g, const float *x, int64_t Hp, int64_t Wp,
                                     float *MTE_RESTRICT xp);
/* the forward pass's epilogue for a block of output rows (channels) starting at one pixel:
 * bias per row, residual with ld = the output plane, activation; fn: the active ISA's */
typedef struct conv_ep {
  mte_ep_tile t; /* t.col_bias unused (NULL) */
  mte_epilogue_tile_fn fn;
} conv_ep;

MTE_HIDDEN void mte__conv_macro_kernel(const mte_sgemm_kernel *k, int64_t mc, int64_t nc,
                                       int64_t kc, const float *ap, const float *bp, float *c,
                                       int64_t ldc, float beta, int last, const conv_ep *ep);
/* The in-place 1x1 path (k->direct): output rows [m0, m1) (a multiple of MR apart from m1)
 * x columns [0, ncols) of y (ld ldc) = act(W x + bias + res), W the group's packed panels
 * ag (Mr rows, k slices of kcb), x read in place (ld ldb) from the block's first column;
 * bias (the group's row 0) and res (at row 0, ld ldc) may be NULL. */
MTE_HIDDEN void mte__conv_direct_block(const mte_sgemm_kernel *k, int64_t m0, int64_t m1,
                                       int64_t ncols, int64_t KK, int64_t kcb, int64_t Mr,
                                       const float *ag, const float *x, int64_t ldb, float *y,
                                       int64_t ldc, const float *bias, const float *res,
                                       int act);
#define MTE_CONV_DIRECT_NB_MAX 2016 /* pixels per in-place block: a multiple of 48 */
/* pixels per in-place block for K = kk: K x nb floats of x within ~512 KiB of L2 */
static inline int64_t mte__conv_direct_nb(int64_t kk) {
  const int64_t nb = (131072 / max64(kk, 1)) / 48 * 48;
  return min64(MTE_CONV_DIRECT_NB_MAX, max64(48, nb));
}
MTE_HIDDEN int mte__conv_scratch_open(conv_scratch *s, mte_arena *given, int n,
                                      const size_t *bytes, float **out);
MTE_HIDDEN int mte__conv_scratch_close(conv_scratch *s);

#endif /* MTE_CONV_INTERNAL_H */
