/*
 * optim.c - fused optimizer updates (SGD, Adam/AdamW): the whole update of one parameter in
 * one pass over memory, instead of the half-dozen array passes (and temporaries) that the same
 * math costs in numpy.
 *
 * Each update is a loop of independent elements, so the work is split into chunks of CHUNK
 * floats; tensors of at least PARALLEL_MIN floats spread the chunks over the library's threads.
 * The element loops are plain C that the compiler vectorises (the flags are tested outside
 * the loops, which -O3 unswitches). The one exception is the square root in Adam: with C's
 * errno rules a compiler will not vectorise sqrtf, so a block of v is square-rooted with the
 * baseline SIMD instruction (SSE on x86-64, NEON on aarch64; sqrtf elsewhere) -- the same
 * correctly rounded result.
 *
 * The operation order and the rounding of every coefficient (computed in double, rounded to
 * float once) follow the numpy twins in backend/numpy_backend.py, so the two agree bit for bit
 * on IEEE hardware (the build keeps -ffp-contract at C11's default, off).
 */
#include <math.h>

#include "mte_internal.h"
#include "mte_optim.h"

#if defined(__SSE__) && (defined(__x86_64__) || defined(_M_X64))
#include <xmmintrin.h>
#define OPTIM_SSE 1
#elif defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#define OPTIM_NEON 1
#endif

#ifdef _OPENMP
#include <omp.h>
#endif

#define CHUNK ((int64_t)16384)
#define PARALLEL_MIN ((int64_t)1 << 17)
#define BLOCK 256 /* Adam's inner block: v, its square root and the update stay in L1 */

static int threads_for(int64_t n) {
  if (n < PARALLEL_MIN) return 1;
  int nt = mte__num_threads();
  int64_t chunks = (n + CHUNK - 1) / CHUNK;
  return nt < chunks ? nt : (int)chunks;
}

/* fn(args, lo, hi) over [0, n) in CHUNK-sized pieces, spread over threads when n is large */
static void for_chunks(int64_t n, void (*fn)(const void *, int64_t, int64_t), const void *args) {
  const int nt = threads_for(n);
  const int64_t chunks = (n + CHUNK - 1) / CHUNK;
  (void)nt;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
#endif
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t lo = c * CHUNK, hi = lo + CHUNK < n ? lo + CHUNK : n;
    fn(args, lo, hi);
  }
}

/* ---------------------------------------------------------------- SGD */

/* The loop is specialised on the flags that change its shape (weight decay, momentum mode,
 * Nesterov) so that every variant is a straight-line, vectorisable loop; maximize and
 * dampening are multiplications by exact constants (-1 or 1, and 1 - dampening, which is 1
 * when dampening is 0: x * 1 and x * -1 are exact, so the rounding is the twin's). */
enum { MOM_NONE, MOM_FIRST, MOM_LATER };

typedef struct {
  float *p;
  const float *g;
  float *buf;
  float sign, lr, wd, momentum, keep; /* sign = -1 for maximize; keep = 1 - dampening */
  int has_wd, mode, nesterov;
} sgd_args;

static inline __attribute__((always_inline)) void sgd_loop(const sgd_args *a, int64_t lo,
                                                          int64_t hi, const int has_wd,
                                                          const int mode, const int nesterov) {
  float *restrict p = a->p;
  const float *restrict g = a->g;
  float *restrict b = a->buf;
  const float sign = a->sign, lr = a->lr, wd = a->wd, mom = a->momentum, keep = a->keep;
  for (int64_t i = lo; i < hi; ++i) {
    float d = sign * g[i];
    if (has_wd) d = wd * p[i] + d;
    if (mode != MOM_NONE) {
      const float bi = mode == MOM_FIRST ? d : b[i] * mom + keep * d;
      b[i] = bi;
      d = nesterov ? mom * bi + d : bi;
    }
    p[i] = p[i] - lr * d;
  }
}

static void sgd_range(const sgd_args *a, int64_t lo, int64_t hi);
static void sgd_chunk(const void *a, int64_t lo, int64_t hi) { sgd_range(a, lo, hi); }

static void sgd_range(const sgd_args *a, int64_t lo, int64_t hi) {
#define SGD_MODES(WD)                                        \
  switch (a->mode * 2 + a->nesterov) {                       \
    case MOM_NONE * 2: sgd_loop(a, lo, hi, WD, MOM_NONE, 0); break;   \
    case MOM_FIRST * 2: sgd_loop(a, lo, hi, WD, MOM_FIRST, 0); break; \
    case MOM_FIRST * 2 + 1: sgd_loop(a, lo, hi, WD, MOM_FIRST, 1); break; \
    case MOM_LATER * 2: sgd_loop(a, lo, hi, WD, MOM_LATER, 0); break; \
    default: sgd_loop(a, lo, hi, WD, MOM_LATER, 1); break;  \
  }
  if (a->has_wd) {
    SGD_MODES(1)
  } else {
    SGD_MODES(0)
  }
#undef SGD_MODES
}

int mte_sgd_step(int64_t n, float *param, const float *grad, float *buf, double lr,
                 double momentum, double dampening, double weight_decay, int nesterov,
                 int maximize, int first_step) {
  if (n < 0) return MTE_EINVAL;
  if (n == 0) return MTE_OK;
  if (!param || !grad || (momentum != 0.0 && !buf)) return MTE_EINVAL;
  sgd_args a = {param, grad, buf, maximize ? -1.0f : 1.0f, (float)lr, (float)weight_decay,
                (float)momentum, (float)(1.0 - dampening), weight_decay != 0.0,
                momentum == 0.0 ? MOM_NONE : first_step ? MOM_FIRST : MOM_LATER,
                momentum != 0.0 && nesterov};
  for_chunks(n, sgd_chunk, &a);
  return MTE_OK;
}

/* ---------------------------------------------------------------- Adam */

typedef struct {
  float *p;
  const float *g;
  float *m, *v, *vmax;
  float sign;           /* -1 for maximize, else 1 (exact) */
  float decay;          /* 1 - lr * wd (decoupled), else 1 */
  float wd;             /* L2 coefficient */
  float w, omw;         /* lerp weight 1 - beta1 and 1 - w */
  float beta2, c2;      /* c2 = 1 - beta2 */
  float step_size;      /* lr / (1 - beta1^t) */
  float bc2_sqrt, eps;  /* sqrt(1 - beta2^t) */
  int l2, lerp_small;
} adam_args;

/* s[i] = sqrt(s[i]) for i < n (n <= BLOCK), correctly rounded like sqrtf */
static void sqrt_block(float *s, int64_t n) {
  int64_t i = 0;
#if defined(OPTIM_SSE)
  for (; i + 4 <= n; i += 4) _mm_storeu_ps(s + i, _mm_sqrt_ps(_mm_loadu_ps(s + i)));
#elif defined(OPTIM_NEON)
  for (; i + 4 <= n; i += 4) vst1q_f32(s + i, vsqrtq_f32(vld1q_f32(s + i)));
#endif
  for (; i < n; ++i) s[i] = sqrtf(s[i]);
}

static void adam_block(const adam_args *a, int64_t lo, int64_t n) {
  float *restrict p = a->p + lo;
  const float *restrict g = a->g + lo;
  float *restrict m = a->m + lo;
  float *restrict v = a->v + lo;
  float *restrict vmax = a->vmax ? a->vmax + lo : 0;
  float s[BLOCK];
  const float sign = a->sign, decay = a->decay, wd = a->wd, w = a->w, omw = a->omw, beta2 = a->beta2,
              c2 = a->c2;
  /* moments: m, v (and vmax) in place; s = the second moment the step divides by */
  for (int64_t i = 0; i < n; ++i) {
    float gi = sign * g[i];
    const float pi = p[i] * decay; /* decay is exactly 1 unless decoupled weight decay */
    p[i] = pi;
    if (a->l2) gi = wd * pi + gi;
    const float diff = gi - m[i];
    m[i] = a->lerp_small ? m[i] + w * diff : gi - diff * omw;
    const float vi = v[i] * beta2 + c2 * (gi * gi);
    v[i] = vi;
    s[i] = vi;
  }
  if (vmax) {
    for (int64_t i = 0; i < n; ++i) {
      const float vm = vmax[i], vi = s[i];
      const float r = (vi > vm || vi != vi) ? vi : vm; /* np.maximum: NaN wins */
      vmax[i] = r;
      s[i] = r;
    }
  }
  sqrt_block(s, n);
  const float step_size = a->step_size, bc2 = a->bc2_sqrt, eps = a->eps;
  for (int64_t i = 0; i < n; ++i) {
    const float denom = s[i] / bc2 + eps;
    p[i] = p[i] - step_size * m[i] / denom;
  }
}

static void adam_range(const adam_args *a, int64_t lo, int64_t hi);
static void adam_chunk(const void *a, int64_t lo, int64_t hi) { adam_range(a, lo, hi); }

static void adam_range(const adam_args *a, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; i += BLOCK) adam_block(a, i, hi - i < BLOCK ? hi - i : BLOCK);
}

int mte_adam_step(int64_t n, float *param, const float *grad, float *exp_avg,
                  float *exp_avg_sq, float *max_exp_avg_sq, double step, double lr,
                  double beta1, double beta2, double eps, double weight_decay,
                  int decoupled_weight_decay, int maximize) {
  if (n < 0 || !(step >= 1.0)) return MTE_EINVAL;
  if (n == 0) return MTE_OK;
  if (!param || !grad || !exp_avg || !exp_avg_sq) return MTE_EINVAL;
  const int has_wd = weight_decay != 0.0;
  const double w = 1.0 - beta1;
  adam_args a;
  a.p = param;
  a.g = grad;
  a.m = exp_avg;
  a.v = exp_avg_sq;
  a.vmax = max_exp_avg_sq;
  a.sign = maximize ? -1.0f : 1.0f;
  a.decay = has_wd && decoupled_weight_decay ? (float)(1.0 - lr * weight_decay) : 1.0f;
  a.wd = (float)weight_decay;
  a.w = (float)w;
  a.omw = (float)(1.0 - w);
  a.beta2 = (float)beta2;
  a.c2 = (float)(1.0 - beta2);
  a.step_size = (float)(lr / (1.0 - pow(beta1, step)));
  a.bc2_sqrt = (float)sqrt(1.0 - pow(beta2, step));
  a.eps = (float)eps;
  a.l2 = has_wd && !decoupled_weight_decay;
  a.lerp_small = w < 0.5;
  for_chunks(n, adam_chunk, &a);
  return MTE_OK;
}
