/*
 * winograd.c - 3x3 stride-1 convolution by Winograd's F(4x4,3x3) and F(2x2,3x3).
 *
 * The idea (mte_winograd.h has the formulas): transform the weights once into
 * a^2 = (m+2)^2 matrices U[xi] (C x K), transform the input tiles into a^2 matrices V[xi]
 * (C x tiles), multiply them pairwise with the library's SGEMM, and transform the a^2
 * products back into m x m output blocks. Per output pixel that is a^2 / m^2 multiplies per
 * (c, k) pair (2.25 for m = 4, 4 for m = 2) instead of 9.
 *
 * One call, for blocks of tile rows (a block may span several images, so small images
 * batch up into one set of GEMMs):
 *
 *   1. input    for each channel c (threads split c): copy the block's rows of x, padded
 *               with zeros, into the "unfolded" scratch q (mte_winograd_internal.h), then
 *               V[xi][c][tiles] = B^T d B with the ISA's vector transforms (lanes = tiles)
 *   2. GEMMs    M[xi] (tiles x K) = V[xi]^T @ U[xi] for the a^2 values of xi (threads
 *               split xi), by the library's SGEMM microkernel (mte_internal.h)
 *   3. output   for each tile (threads split tiles): y = A^T M A + bias (lanes = k),
 *               only the rows and columns inside the output are written
 *
 * Tiles are the GEMM's rows: the SGEMM's MR (4..8) wastes little even for a 14x14 image
 * (16 tiles), while K (64..512 channels) fills its wide NR. The products are done here
 * with gemm.c's blocking ideas, calling the active ISA's microkernel directly, because two
 * things make them cheaper than 36 calls of mte_sgemm: the input transform writes V
 * straight into the microkernel's packed-A layout (a separate packing pass cost ~19% of
 * the whole convolution at 64x56x56), and U, packed into NR-wide panels, is shared by all
 * tiles of a block. All buffers come from a workspace arena owned by this file, kept
 * between calls: in steady state a call allocates nothing.
 *
 * Strides between the a^2 matrices are padded to an odd multiple of 64 bytes: with a
 * power-of-two stride (C*K = 256*256 floats...) the 36 streams a transform reads or writes
 * fall into one cache set, which made the weight transform 5x slower.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <string.h>

#include "mte_internal.h"
#include "mte_winograd_internal.h"

#ifdef _OPENMP
#include <omp.h>
#endif

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Largest padding accepted: keeps every index computation far from overflow. */
#define MTE_WINO_MAX_PAD (1 << 20)
/* Below this many multiply-adds (in the GEMMs) a call runs on one thread. */
#define MTE_WINO_PARALLEL_MIN_WORK (1 << 21)
/* A block's V and M buffers together aim at about this many bytes. Blocks small enough for
 * L2 were slower (64@56x56, 1 thread: blocks of 28 / 56 / 98 / 196 tiles took 1.38 / 1.05 /
 * 1.02 / 0.94 ms: each block repacks U and thins the GEMMs), so blocks only bound the
 * workspace for big batches. Tests lower it (mte__winograd_set_block_tiles) to exercise
 * many blocks with small shapes. */
#define MTE_WINO_BLOCK_BYTES (6u << 20)
static int64_t g_block_tiles = 0; /* test knob: tiles per block (0 = by bytes) */
void mte__winograd_set_block_tiles(int64_t tiles) { g_block_tiles = tiles > 0 ? tiles : 0; }

/* ---------------------------------------------------------------- workspace */

/* The workspace arena, shared by calls; a call that finds it busy (another thread is in a
 * Winograd call) uses a private one, freed at its end. */
static pthread_mutex_t g_ws_lock = PTHREAD_MUTEX_INITIALIZER;
static mte_arena *g_ws = NULL;

static mte_arena *ws_acquire(int *shared) {
  if (pthread_mutex_trylock(&g_ws_lock) == 0) {
    if (!g_ws) g_ws = mte_arena_create(0);
    if (g_ws) {
      *shared = 1;
      return g_ws;
    }
    pthread_mutex_unlock(&g_ws_lock);
  }
  *shared = 0;
  return mte_arena_create(0);
}

static void ws_release(mte_arena *ws, int shared) {
  if (!ws) return;
  mte_arena_reset(ws);
  if (shared)
    pthread_mutex_unlock(&g_ws_lock);
  else
    mte_arena_destroy(ws);
}

size_t mte_winograd_workspace_peak_bytes(void) {
  pthread_mutex_lock(&g_ws_lock);
  size_t p = mte_arena_peak_bytes(g_ws);
  pthread_mutex_unlock(&g_ws_lock);
  return p;
}

void mte_winograd_workspace_reset_peak(void) {
  pthread_mutex_lock(&g_ws_lock);
  mte_arena_reset_peak(g_ws);
  pthread_mutex_unlock(&g_ws_lock);
}

void mte_winograd_workspace_release(void) {
  pthread_mutex_lock(&g_ws_lock);
  mte_arena_destroy(g_ws);
  g_ws = NULL;
  pthread_mutex_unlock(&g_ws_lock);
}

/* n floats rounded up to an odd multiple of 16 (64 bytes): a stride that keeps many
 * streams out of each other's cache sets */
static int64_t unalias(int64_t n) {
  int64_t r = max64(16, (n + 15) / 16 * 16);
  return (r / 16) % 2 ? r : r + 16;
}

/* ---------------------------------------------------------------- weights */

int64_t mte_winograd_weight_size(int tile, int64_t K, int64_t C) {
  if ((tile != 2 && tile != 4) || K < 0 || C < 0) return -1;
  const int64_t a2 = (int64_t)(tile + 2) * (tile + 2);
  if (C != 0 && K > INT64_MAX / a2 / C) return -1;
  return a2 * C * K;
}

/* Weight transform scratch per thread: for WCB channels, 9 input streams of WCH lanes (k),
 * and a^2 output streams for one channel. */
#define WCH 256
#define WCB 16
#define WSTRIDE (WCH + 16) /* an odd multiple of 16 floats: see unalias() */
#define WSCRATCH ((9 * WCB + 36) * WSTRIDE)

/* U[xi][c][k] = (G w[k][c] G^T)[xi], lanes = k. Threads split blocks of WCB channels; each
 * block gathers w[k][c0 .. c0+WCB][.] (contiguous in w, so few pages per k) into scratch,
 * then transforms one channel at a time and writes rows of U. */
static void transform_weight(const mte_wino_kernels *kern, int m, int64_t K, int64_t C,
                             const float *w, float *U, float *scratch, int nt) {
  const int a2 = (m + 2) * (m + 2);
  const int64_t nblk = ceil_div(C, WCB);
  (void)nt;
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) if (nt > 1)
#endif
  {
#ifdef _OPENMP
    float *g = scratch + (size_t)omp_get_thread_num() * WSCRATCH;
#pragma omp for schedule(static)
#else
    float *g = scratch;
#endif
    for (int64_t blk = 0; blk < nblk; ++blk) {
      const int64_t c0 = blk * WCB, cb = min64(WCB, C - c0);
      float *u = g + 9 * WCB * WSTRIDE;
      for (int64_t k0 = 0; k0 < K; k0 += WCH) {
        const int64_t n = min64(WCH, K - k0);
        for (int64_t kk = 0; kk < n; ++kk) { /* g[c][ab][kk] = w[k0 + kk][c0 + c][ab] */
          const float *src = w + ((k0 + kk) * C + c0) * 9;
          for (int64_t c = 0; c < cb; ++c)
            for (int ab = 0; ab < 9; ++ab) g[(c * 9 + ab) * WSTRIDE + kk] = src[c * 9 + ab];
        }
        for (int64_t c = 0; c < cb; ++c) {
          kern->weight(m, g + c * 9 * WSTRIDE, WSTRIDE, u, WSTRIDE, n);
          for (int xi = 0; xi < a2; ++xi) {
            float *dst = U + (xi * C + c0 + c) * K + k0;
            const float *s = u + xi * WSTRIDE;
            for (int64_t kk = 0; kk < n; ++kk) dst[kk] = s[kk];
          }
        }
      }
    }
  }
}

int mte_winograd_transform_weight(int tile, int64_t K, int64_t C, const float *w, float *U) {
  const int64_t size = mte_winograd_weight_size(tile, K, C);
  if (size < 0) return (tile != 2 && tile != 4) || K < 0 || C < 0 ? MTE_EINVAL : MTE_EOVERFLOW;
  if (size == 0) return MTE_OK;
  if (!w || !U) return MTE_EINVAL;
  const int nt = (double)C * (double)K >= 4096.0 ? mte__num_threads() : 1;
  const size_t bytes = (size_t)nt * WSCRATCH * sizeof(float);
  int is_default = 0;
  mte_arena *a = mte__arena_acquire(&is_default);
  if (!a) return MTE_ENOMEM;
  int st = mte_arena_reserve(a, mte_arena_footprint(bytes));
  float *wt = st == MTE_OK ? (float *)mte_arena_alloc(a, bytes) : NULL;
  if (!wt) st = st == MTE_OK ? MTE_ENOMEM : st;
  if (st == MTE_OK) {
    transform_weight(mte__isa()->winograd, tile, K, C, w, U, wt, nt);
    st = mte_arena_check(a);
  }
  mte_arena_reset(a);
  mte__arena_release(a, is_default);
  return st;
}

/* ---------------------------------------------------------------- the convolution */

typedef struct wino_plan {
  int m, a, a2;       /* output block m x m, tile a x a, a2 = a*a transform points */
  int64_t N, C, H, W, K, ph, pw, Ho, Wo;
  int64_t th_n, tw_n; /* tiles per image, down and across */
  int64_t rows;       /* tile rows of the whole batch: N * th_n */
  int64_t rb, tb;     /* tile rows and tiles per block */
  const mte_wino_kernels *wk; /* the transforms */
  /* GEMM: the microkernel, its blocking, and the buffer geometry */
  const mte_sgemm_kernel *gk;
  int mr, nr;
  int64_t kc, nc;     /* channels per k-slice, output channels per packed U block */
  int64_t ps, vs;     /* V: floats per mr-tile panel (C*mr), per xi (>= panels*ps) */
  int64_t ms;         /* M: floats per xi (>= tb*K); row stride K */
  int64_t bsize;      /* packed U block per thread: kc * round_up(nc, nr) */
  int64_t qs, qsize;  /* q: stream stride, floats per thread */
  int nt;
} wino_plan;

/* dst[0:nr] = src[0:cols], zero beyond: one row of a packed U panel */
static inline void pack_row(float *MTE_RESTRICT dst, const float *MTE_RESTRICT src,
                            int64_t cols, int nr) {
  if (cols == nr) { /* constant sizes, so the copy is inlined, not a call */
    switch (nr) {
      case 32: memcpy(dst, src, 32 * sizeof(float)); return;
      case 16: memcpy(dst, src, 16 * sizeof(float)); return;
      case 12: memcpy(dst, src, 12 * sizeof(float)); return;
      case 8: memcpy(dst, src, 8 * sizeof(float)); return;
      default: break;
    }
  }
  int64_t j = 0;
  for (; j < cols; ++j) dst[j] = src[j];
  for (; j < nr; ++j) dst[j] = 0.0f;
}

/*
 * M[xi] (tiles x K, row stride K) = V[xi]^T (tiles x C) @ U[xi] (C x K), with V[xi] already
 * in packed-A layout (panel i of mr tiles at Vx + i*ps, channel p at + p*mr). gemm.c's loop
 * nest without the A packing: for each nc block of K and kc slice of C, pack U into nr-wide
 * panels (bp), then run the microkernel over every (tile panel, U panel) pair; ragged tiles
 * go through a stack tile.
 */
static void gemm_xi(const wino_plan *P, int xi, int64_t tiles, const float *V, const float *U,
                    float *M, float *bp) {
  const mte_sgemm_kernel *gk = P->gk;
  const int mr = P->mr, nr = P->nr;
  const int64_t C = P->C, K = P->K, ldm = K, panels = ceil_div(tiles, mr);
  const float *Vx = V + xi * P->vs, *Ux = U + xi * C * K;
  float *Mx = M + xi * P->ms;
  float tile[MTE_MAX_TILE] __attribute__((aligned(MTE_ALIGN)));
  for (int64_t jc = 0; jc < K; jc += P->nc) {
    const int64_t nc = min64(P->nc, K - jc), nq = ceil_div(nc, nr);
    for (int64_t pc = 0; pc < C; pc += P->kc) {
      const int64_t kc = min64(P->kc, C - pc);
      const float beta = pc == 0 ? 0.0f : 1.0f;
      for (int64_t q = 0; q < nq; ++q)
        for (int64_t p = 0; p < kc; ++p)
          pack_row(bp + (q * kc + p) * nr, Ux + (pc + p) * K + jc + q * nr,
                   min64(nr, nc - q * nr), nr);
      for (int64_t q = 0; q < nq; ++q) {   /* U panel stays in L1 ... */
        const int64_t cols = min64(nr, nc - q * nr);
        const float *b = bp + q * kc * nr;
        for (int64_t i = 0; i < panels; ++i) { /* ... while the tile panels stream by */
          const int64_t rows = min64(mr, tiles - i * mr);
          const float *av = Vx + i * P->ps + pc * mr;
          float *c = Mx + i * mr * ldm + jc + q * nr;
          if (rows == mr && cols == nr) {
            gk->ukernel(kc, av, b, c, ldm, 1.0f, beta);
            continue;
          }
          mte__ukernel_edge(gk, kc, av, b, tile, cols, 1.0f);
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t j = 0; j < cols; ++j)
              c[r * ldm + j] = tile[r * nr + j] + (pc ? c[r * ldm + j] : 0.0f);
        }
      }
    }
  }
}

/* One block: tile rows [gr0, gr1) of the batch (row gr is image gr / th_n). Called by
 * every thread of the team; the loops inside are shared out. */
static void run_block(const wino_plan *P, const mte_wino_kernels *kern, const float *x,
                      const float *U, const float *bias, float *y, int64_t gr0, int64_t gr1,
                      float *V, float *M, float *qall, float *ball) {
  const int m = P->m, a2 = P->a2, mr = P->mr;
  const int64_t C = P->C, K = P->K, tw_n = P->tw_n, th_n = P->th_n;
  const int64_t tiles = (gr1 - gr0) * tw_n, padded = ceil_div(tiles, mr) * mr;
  const int64_t plane = P->Ho * P->Wo;
#ifdef _OPENMP
  const int tid = omp_get_thread_num();
#else
  const int tid = 0;
#endif
  float *q = qall + (size_t)tid * (size_t)P->qsize;
  float *bp = ball + (size_t)tid * (size_t)P->bsize;

  /* 1. input transform: tile lane L = (tile row - gr0) * tw_n + tw of channel c */
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t n = gr0 / th_n; n * th_n < gr1; ++n) {
      const int64_t th0 = max64(gr0, n * th_n) - n * th_n;
      const int64_t th1 = min64(gr1, (n + 1) * th_n) - n * th_n;
      const int64_t lane0 = (n * th_n + th0 - gr0) * tw_n;
      kern->unfold(m, x + (n * C + c) * P->H * P->W, P->H, P->W, P->ph, P->pw, th0, th1 - th0,
                   tw_n, q, P->qs);
      kern->input(m, q, P->qs, tw_n, V + c * mr, P->vs, mr, P->ps, lane0, (th1 - th0) * tw_n);
    }
    /* the last panel's lanes past the last tile: zeros, so the GEMM reads defined values */
    for (int xi = 0; xi < a2; ++xi)
      for (int64_t L = tiles; L < padded; ++L)
        V[xi * P->vs + (L / mr) * P->ps + c * mr + L % mr] = 0.0f;
  }

  /* 2. a2 GEMMs: M[xi] (tiles x K) = V[xi]^T (tiles x C) @ U[xi] (C x K) */
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
  for (int xi = 0; xi < a2; ++xi) gemm_xi(P, xi, tiles, V, U, M, bp);

  /* 3. output transform, tile by tile: y[n][k][m*th + i][m*tw + j] */
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
  for (int64_t l = 0; l < tiles; ++l) {
    const int64_t gr = gr0 + l / tw_n, tw = l % tw_n;
    const int64_t n = gr / th_n, th = gr % th_n;
    float *yt = y + n * K * plane + (m * th) * P->Wo + m * tw;
    const int hi = (int)min64(m, P->Ho - m * th), wj = (int)min64(m, P->Wo - m * tw);
    kern->output(m, M + l * K, P->ms, K, bias, yt, plane, P->Wo, hi, wj);
  }
}

/* Check sizes and derive everything the call needs; MTE_OK or an error. */
static int make_plan(wino_plan *P, int tile, int64_t N, int64_t C, int64_t H, int64_t W,
                     int64_t K, int64_t ph, int64_t pw, int cached) {
  if (N < 0 || C < 0 || H < 0 || W < 0 || K < 0 || ph < 0 || pw < 0) return MTE_EINVAL;
  if (tile != 0 && tile != 2 && tile != 4) return MTE_EINVAL;
  if (ph > MTE_WINO_MAX_PAD || pw > MTE_WINO_MAX_PAD) return MTE_EINVAL;
  if (H > INT32_MAX || W > INT32_MAX) return MTE_EOVERFLOW;
  memset(P, 0, sizeof *P);
  P->N = N, P->C = C, P->H = H, P->W = W, P->K = K, P->ph = ph, P->pw = pw;
  P->Ho = H + 2 * ph - 2;
  P->Wo = W + 2 * pw - 2;
  if (P->Ho < 1 || P->Wo < 1) return N == 0 || K == 0 ? MTE_OK : MTE_EINVAL;
  if (tile == 0) tile = mte_winograd_tile(N, C, K, P->Ho, P->Wo, cached);
  P->m = tile, P->a = tile + 2, P->a2 = P->a * P->a;
  P->th_n = ceil_div(P->Ho, tile);
  P->tw_n = ceil_div(P->Wo, tile);
  /* sizes in floats must fit comfortably; the buffers below are then far from overflow */
  const double big = 1e15;
  if ((double)N * C * H * W > big || (double)N * K * P->Ho * P->Wo > big ||
      (double)P->a2 * C * K > big || (double)N * P->th_n * P->tw_n > big ||
      (double)P->th_n * P->tw_n * P->a2 * (C + K) > big)
    return MTE_EOVERFLOW;
  P->rows = N * P->th_n;

  const mte_isa *isa = mte__isa(); /* both families from one row */
  const mte_sgemm_kernel *gk = isa->sgemm;
  P->gk = gk, P->wk = isa->winograd, P->mr = gk->mr, P->nr = gk->nr;
  /* k-slices: C split into equal parts no deeper than the kernel's KC */
  P->kc = max64(1, ceil_div(C, ceil_div(max64(C, 1), gk->kc)));
  /* packed U block about 256 KB (L2), whole nr panels */
  P->nc = min64(ceil_div(K, P->nr), max64(1, (65536 / P->kc) / P->nr)) * P->nr;
  P->bsize = P->kc * P->nc;

  /* block: about MTE_WINO_BLOCK_BYTES of V and M, or twice U's bytes when U is bigger (each
   * block reads all of U once), whole tile rows */
  const double per_tile = 4.0 * P->a2 * (double)(C + K);
  const double u_bytes2 = 8.0 * P->a2 * (double)C * K;
  const double budget = u_bytes2 > MTE_WINO_BLOCK_BYTES ? u_bytes2 : MTE_WINO_BLOCK_BYTES;
  const double tiles_fit = budget / (per_tile > 1 ? per_tile : 1);
  int64_t want = tiles_fit < 1e9 ? (int64_t)tiles_fit : (int64_t)1e9;
  want = max64(want, 64); /* fewer tiles than this and the GEMMs get too thin */
  if (g_block_tiles) want = g_block_tiles;
  P->rb = min64(P->rows, max64(1, want / P->tw_n));
  P->tb = P->rb * P->tw_n;
  P->ps = C * P->mr;
  P->vs = unalias(ceil_div(P->tb, P->mr) * P->ps);
  P->ms = unalias(P->tb * K);
  P->qs = (P->rb + 1) * P->tw_n;
  P->qsize = (int64_t)tile * P->a * P->qs;
  int nt = mte__num_threads();
  if ((double)P->a2 * P->rows * P->tw_n * (double)C * K < MTE_WINO_PARALLEL_MIN_WORK) nt = 1;
  P->nt = nt;
  return MTE_OK;
}

/* y = bias (or 0) everywhere: the C == 0 case */
static void fill_bias(const wino_plan *P, const float *bias, float *y) {
  const int64_t plane = P->Ho * P->Wo;
  for (int64_t n = 0; n < P->N; ++n)
    for (int64_t k = 0; k < P->K; ++k) {
      float *yk = y + (n * P->K + k) * plane, b = bias ? bias[k] : 0.0f;
      for (int64_t i = 0; i < plane; ++i) yk[i] = b;
    }
}

int mte_winograd3x3(int tile, int64_t N, int64_t C, int64_t H, int64_t W, int64_t K,
                    int64_t pad_h, int64_t pad_w, const float *x, const float *w,
                    const float *U, const float *bias, float *y) {
  wino_plan P;
  int st = make_plan(&P, tile, N, C, H, W, K, pad_h, pad_w, U != NULL);
  if (st != MTE_OK) return st;
  if (N == 0 || K == 0 || P.Ho < 1 || P.Wo < 1) return MTE_OK;
  if (!y || (C > 0 && H > 0 && W > 0 && !x) || (C > 0 && !U && !w)) return MTE_EINVAL;
  if (C == 0) {
    fill_bias(&P, bias, y);
    return MTE_OK;
  }

  /* workspace: [U and its scratch, if U is not given] V, M, q and packed U per thread */
  const size_t f = sizeof(float), nt = (size_t)P.nt;
  const size_t part[6] = {U ? 0 : (size_t)(P.a2 * C * K) * f,
                          U ? 0 : nt * WSCRATCH * f,
                          (size_t)P.a2 * (size_t)P.vs * f,
                          (size_t)P.a2 * (size_t)P.ms * f,
                          nt * (size_t)P.qsize * f,
                          nt * (size_t)P.bsize * f};
  size_t need = 0;
  for (int i = 0; i < 6; ++i) {
    size_t fp = mte_arena_footprint(part[i]);
    if (!fp || !mte__add_size(need, fp, &need)) return MTE_EOVERFLOW;
  }

  int shared = 0;
  mte_arena *ws = ws_acquire(&shared);
  if (!ws) return MTE_ENOMEM;
  mte_arena_reset(ws);
  st = mte_arena_reserve(ws, need);
  float *buf[6] = {NULL};
  for (int i = 0; i < 6 && st == MTE_OK; ++i)
    if ((i >= 2 || !U) && !(buf[i] = (float *)mte_arena_alloc(ws, part[i]))) st = MTE_ENOMEM;
  if (st == MTE_OK) {
    const mte_wino_kernels *kern = P.wk;
    if (!U) {
      transform_weight(kern, P.m, K, C, w, buf[0], buf[1], P.nt);
      U = buf[0];
    }
    const int nthr = P.nt;
    (void)nthr;
#ifdef _OPENMP
#pragma omp parallel num_threads(nthr) if (nthr > 1)
#endif
    for (int64_t gr0 = 0; gr0 < P.rows; gr0 += P.rb)
      run_block(&P, kern, x, U, bias, y, gr0, min64(P.rows, gr0 + P.rb), buf[2], buf[3],
                buf[4], buf[5]);
    st = mte_arena_check(ws);
  }
  ws_release(ws, shared);
  return st;
}
