/* test_arena.c - the workspace arena: alignment, bounds checks, growth, peak, guards. */
#include <stdint.h>
#include <string.h>

#include "mte.h"
#include "mte_test.h"

int main(void) {
  /* NULL handling */
  CHECK(mte_arena_alloc(NULL, 16) == NULL, "alloc on NULL arena");
  CHECK(mte_arena_reserve(NULL, 16) == MTE_EINVAL, "reserve on NULL arena");
  CHECK(mte_arena_check(NULL) == MTE_EINVAL, "check on NULL arena");
  mte_arena_destroy(NULL);
  mte_arena_reset(NULL);

  /* footprint: rounded to 64 plus a 64-byte guard; overflow gives 0 */
  CHECK(mte_arena_footprint(0) == 64, "%zu", mte_arena_footprint(0));
  CHECK(mte_arena_footprint(1) == 128, "%zu", mte_arena_footprint(1));
  CHECK(mte_arena_footprint(64) == 128, "%zu", mte_arena_footprint(64));
  CHECK(mte_arena_footprint(65) == 192, "%zu", mte_arena_footprint(65));
  CHECK(mte_arena_footprint(SIZE_MAX) == 0, "overflow");
  CHECK(mte_arena_footprint(SIZE_MAX - 100) == 0, "overflow");

  mte_arena *a = mte_arena_create(0);
  CHECK(a != NULL, "create");
  CHECK(mte_arena_capacity(a) == 0 && mte_arena_used(a) == 0, "empty arena");
  CHECK(mte_arena_alloc(a, 1) == NULL, "alloc beyond capacity must fail");

  /* reserve, then carve: every block aligned, none past the end */
  CHECK(mte_arena_reserve(a, 1000) == MTE_OK, "reserve");
  size_t cap = mte_arena_capacity(a);
  CHECK(cap >= 1000 && cap % 64 == 0, "capacity %zu", cap);
  size_t used = 0;
  int n = 0;
  for (;;) {
    void *p = mte_arena_alloc(a, 100);
    if (!p) break;
    ++n;
    CHECK(((uintptr_t)p & 63) == 0, "alignment of block %d", n);
    memset(p, 0x5A, 100); /* the whole payload is writable */
    used += mte_arena_footprint(100);
    CHECK(mte_arena_used(a) == used, "used %zu vs %zu", mte_arena_used(a), used);
  }
  CHECK(n == (int)(cap / mte_arena_footprint(100)), "blocks %d cap %zu", n, cap);
  CHECK(mte_arena_used(a) <= cap, "used within capacity");
  CHECK(mte_arena_alloc(a, SIZE_MAX) == NULL, "huge alloc");
  CHECK(mte_arena_alloc(a, SIZE_MAX - 63) == NULL, "huge alloc near overflow");
  CHECK(mte_arena_check(a) == MTE_OK, "guards intact");

  /* growing while blocks are live would move them: refused */
  CHECK(mte_arena_reserve(a, cap * 4) == MTE_EBUSY, "reserve while in use");
  CHECK(mte_arena_reserve(a, cap) == MTE_OK, "reserve within capacity is fine");
  size_t peak = mte_arena_peak_bytes(a);
  CHECK(peak == used, "peak %zu used %zu", peak, used);

  /* reset: reuse without growing */
  mte_arena_reset(a);
  CHECK(mte_arena_used(a) == 0, "reset");
  CHECK(mte_arena_reserve(a, 500) == MTE_OK && mte_arena_capacity(a) == cap, "no regrow");
  CHECK(mte_arena_peak_bytes(a) == peak, "peak survives reset");

  /* grow only when needed */
  CHECK(mte_arena_reserve(a, cap + 1) == MTE_OK, "grow");
  size_t cap2 = mte_arena_capacity(a);
  CHECK(cap2 > cap, "capacity grew");
  CHECK(mte_arena_reserve(a, SIZE_MAX - 10) == MTE_EOVERFLOW, "overflowing reserve");
  CHECK(mte_arena_capacity(a) == cap2, "failed reserve leaves the arena as it was");

  /* a write past a block's end lands in its guard and is detected */
  unsigned char *p = (unsigned char *)mte_arena_alloc(a, 64);
  unsigned char *q = (unsigned char *)mte_arena_alloc(a, 10);
  CHECK(p && q, "allocs");
  CHECK(mte_arena_check(a) == MTE_OK, "clean");
  p[64] = 0; /* one byte too far: inside the guard */
  CHECK(mte_arena_check(a) == MTE_ECORRUPT, "overrun detected");
  mte_arena_reset(a);
  CHECK(mte_arena_check(a) == MTE_OK, "reset forgets blocks");

  /* zero-byte allocations are valid, distinct and aligned */
  void *z1 = mte_arena_alloc(a, 0), *z2 = mte_arena_alloc(a, 0);
  CHECK(z1 && z2 && z1 != z2 && ((uintptr_t)z2 & 63) == 0, "zero-size blocks");
  mte_arena_destroy(a);

  mte_arena *b = mte_arena_create(4096);
  CHECK(b && mte_arena_capacity(b) >= 4096, "create with initial size");
  mte_arena_destroy(b);

  /* steady state: a repeated SGEMM allocates nothing after its first call, and the
   * default arena's peak can be measured per call */
  {
    enum { dim = 96 };
    static float A[dim * dim], B[dim * dim], C[dim * dim];
    for (int i = 0; i < dim * dim; ++i) A[i] = B[i] = (float)(i % 7) - 3.0f;
    CHECK(mte_sgemm(0, 0, dim, dim, dim, 1.0f, A, dim, B, dim, 0.0f, C, dim) == MTE_OK, "first sgemm");
    uint64_t allocs = mte_workspace_allocations();
    CHECK(allocs >= 1, "the first call allocated its workspace");
    mte_default_arena_reset_peak();
    CHECK(mte_default_arena_peak_bytes() == 0, "peak reset between calls");
    for (int r = 0; r < 3; ++r)
      CHECK(mte_sgemm(0, 0, dim, dim, dim, 1.0f, A, dim, B, dim, 0.0f, C, dim) == MTE_OK, "sgemm again");
    CHECK(mte_workspace_allocations() == allocs, "no allocation in steady state");
    size_t call_peak = mte_default_arena_peak_bytes();
    CHECK(call_peak > 0 && call_peak <= mte_default_arena_capacity(), "per-call peak measured");
    mte_arena *c = mte_arena_create(128);
    CHECK(c && mte_workspace_allocations() == allocs + 1, "every arena block is counted");
    mte_arena_destroy(c);
  }

  CHECK(mte_status_string(MTE_EINVAL) != NULL && mte_status_string(12345) != NULL,
        "status strings");
  return mte_test_summary("test_arena");
}
