/*
 * winograd_rule.c - when Winograd beats im2col + GEMM, and with which tile: the measured rule
 * behind mte_winograd_tile() / mte_winograd_should_use() (mte_winograd.h), kept apart from
 * the convolution in winograd.c. The numpy twin is backend/winograd.py's choose_tile().
 */
#include "mte_internal.h"
#include "mte_winograd_internal.h"

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/*
 * The rule, from a sweep on the development machine (AMD EPYC, AVX-512, 1 thread; pad 1,
 * C = K; speed-up over the im2col+GEMM path _C.conv2d; "cached" = U transformed once,
 * "per call" = w transformed in every call; T4, T2 = F(4,3), F(2,3) tiles over the batch):
 *
 *   N  C=K   out    T4   F4 cached  per call   F2 cached  per call
 *   1   16   56x56  196    1.06       1.03       0.61       0.62    C, K < 32: the
 *   4   16   14x14   64    0.92       0.87       0.59       0.58    transforms dominate
 *   1   32   14x14   16    1.46       1.16       0.98       0.88
 *   1   32    7x7     4    0.60       0.45       1.09       0.84    F(4,3) wastes 8x8 - 7x7
 *   1   64   56x56  196    2.49       2.37       1.35       1.33
 *   1  128   28x28   49    2.40       2.07       1.67       1.59
 *   1  128    7x7     4    0.87       0.56       1.49       0.96
 *   1  256   14x14   16    1.91       0.95       1.74       1.39    U (9.4 MB) read per call
 *   1  256    4x4     1    0.52       0.27       1.26       0.61
 *   4  256    4x4     4    1.41       0.56       2.44       1.58
 *   1  512   14x14   16    1.25       0.67       1.47       0.99    U (38 MB) > L3
 *   1  512   28x28   49    2.10       1.46       1.37       1.18
 *   4  512   14x14   64    2.18       1.52       1.52       1.35
 *
 * so:  im2col                 if min(C, K) < 32;
 *      F(4,3)                 if min(Ho, Wo) >= 12 and (T4 >= 32 or C*K <= 128*128): few
 *                             tiles cannot amortise reading (cached) or computing (per call)
 *                             a big U. At 256@14x14 cached, F(4,3) won by 10% on a quiet
 *                             machine and lost by 10% with other jobs sharing L3 and memory
 *                             bandwidth (as in a network, where other layers evict U), so
 *                             the smaller U of F(2,3) is the safer choice there;
 *      else F(2,3), used      if T2 >= 16 cached; T2 >= 32 and C*K <= 256*256 per call.
 * At the shapes (N = 1): 64@56 and 128@28 -> F(4,3); 256@14 -> F(2,3).
 */
static int rule(int64_t N, int64_t C, int64_t K, int64_t Ho, int64_t Wo, int cached,
                int *use) {
  *use = 0;
  if (N < 0 || C < 0 || K < 0 || Ho < 1 || Wo < 1) return 0;
  const double t4 = (double)N * ceil_div(Ho, 4) * ceil_div(Wo, 4);
  const double t2 = (double)N * ceil_div(Ho, 2) * ceil_div(Wo, 2);
  const double ck = (double)C * K;
  const int enough_channels = C >= 32 && K >= 32;
  if (min64(Ho, Wo) >= 12 && (t4 >= 32 || ck <= 128.0 * 128.0)) {
    *use = enough_channels;
    return 4;
  }
  *use = enough_channels && (cached ? t2 >= 16 : t2 >= 32 && ck <= 256.0 * 256.0);
  return 2;
}

int mte_winograd_tile(int64_t N, int64_t C, int64_t K, int64_t Ho, int64_t Wo, int cached) {
  int use;
  return rule(N, C, K, Ho, Wo, cached, &use);
}

int mte_winograd_should_use(int64_t N, int64_t C, int64_t K, int64_t Ho, int64_t Wo,
                            int cached) {
  int use;
  rule(N, C, K, Ho, Wo, cached, &use);
  return use;
}
