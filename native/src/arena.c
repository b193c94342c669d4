/*
 * arena.c - the workspace arena: one 64-byte-aligned block handed out by bumping an offset.
 *
 * Kernels need scratch memory (packed panels, im2col buffers) on every call. Asking malloc
 * each time costs time and fragments memory, so a call instead resets an arena, reserves
 * what it needs (the block grows only if it is too small) and carves its buffers from it.
 * In steady state (same or smaller shapes) nothing is allocated.
 *
 * Layout of one allocation:  [ payload rounded up to 64 ][ 64-byte guard ]
 * The guard is filled with a known pattern; mte_arena_check() verifies every guard, so a
 * test can prove a kernel never wrote past its buffer.
 */
#define _POSIX_C_SOURCE 200809L /* posix_memalign */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "mte_internal.h"

#define GUARD_BYTES MTE_ALIGN
#define GUARD_WORD 0xA5C3E1F0u
#define MAX_BLOCKS 64 /* allocations tracked for guard checking */

struct mte_arena {
  unsigned char *base; /* 64-byte aligned */
  size_t capacity;
  size_t used;
  size_t peak;
  int nblocks;                 /* live allocations since the last reset */
  size_t guard_at[MAX_BLOCKS]; /* offsets of their guards (first MAX_BLOCKS only) */
};

size_t mte_arena_footprint(size_t bytes) {
  size_t rounded, total;
  if (!mte__add_size(bytes, MTE_ALIGN - 1, &rounded)) return 0;
  rounded &= ~(size_t)(MTE_ALIGN - 1);
  if (!mte__add_size(rounded, GUARD_BYTES, &total)) return 0;
  return total;
}

/* every block any arena allocates (a grow, a private arena): the steady-state check */
static atomic_ullong g_allocations;

static void *aligned_block(size_t bytes) {
  void *p = NULL;
  if (bytes == 0) bytes = MTE_ALIGN;
  if (posix_memalign(&p, MTE_ALIGN, bytes) != 0) return NULL;
  atomic_fetch_add(&g_allocations, 1);
  return p;
}

uint64_t mte_workspace_allocations(void) { return (uint64_t)atomic_load(&g_allocations); }

mte_arena *mte_arena_create(size_t initial_bytes) {
  mte_arena *a = (mte_arena *)calloc(1, sizeof(mte_arena));
  if (!a) return NULL;
  if (initial_bytes > 0 && mte_arena_reserve(a, initial_bytes) != MTE_OK) {
    free(a);
    return NULL;
  }
  return a;
}

void mte_arena_destroy(mte_arena *a) {
  if (!a) return;
  free(a->base);
  free(a);
}

int mte_arena_reserve(mte_arena *a, size_t bytes) {
  if (!a) return MTE_EINVAL;
  if (bytes <= a->capacity) return MTE_OK;
  if (a->used != 0) return MTE_EBUSY; /* growing would move live blocks */
  /* grow geometrically so a slowly rising size does not reallocate every call */
  size_t want = a->capacity + a->capacity / 2;
  if (want < bytes) want = bytes;
  size_t rounded;
  if (!mte__add_size(want, MTE_ALIGN - 1, &rounded)) return MTE_EOVERFLOW;
  rounded &= ~(size_t)(MTE_ALIGN - 1);
  unsigned char *p = (unsigned char *)aligned_block(rounded);
  if (!p && rounded > bytes) { /* geometric growth too greedy: try the exact size */
    if (!mte__add_size(bytes, MTE_ALIGN - 1, &rounded)) return MTE_EOVERFLOW;
    rounded &= ~(size_t)(MTE_ALIGN - 1);
    p = (unsigned char *)aligned_block(rounded);
  }
  if (!p) return MTE_ENOMEM;
  free(a->base);
  a->base = p;
  a->capacity = rounded;
  return MTE_OK;
}

void *mte_arena_alloc(mte_arena *a, size_t bytes) {
  if (!a) return NULL;
  size_t need = mte_arena_footprint(bytes);
  if (need == 0 || need > a->capacity - a->used) return NULL; /* bounds check */
  unsigned char *p = a->base + a->used;
  size_t guard_off = a->used + need - GUARD_BYTES;
  uint32_t *g = (uint32_t *)(a->base + guard_off);
  for (size_t i = 0; i < GUARD_BYTES / sizeof(uint32_t); ++i) g[i] = GUARD_WORD;
  if (a->nblocks < MAX_BLOCKS) a->guard_at[a->nblocks] = guard_off;
  a->nblocks++;
  a->used += need;
  if (a->used > a->peak) a->peak = a->used;
  return p;
}

void mte_arena_reset(mte_arena *a) {
  if (!a) return;
  a->used = 0;
  a->nblocks = 0;
}

size_t mte_arena_capacity(const mte_arena *a) { return a ? a->capacity : 0; }
size_t mte_arena_used(const mte_arena *a) { return a ? a->used : 0; }
size_t mte_arena_peak_bytes(const mte_arena *a) { return a ? a->peak : 0; }

int mte_arena_check(const mte_arena *a) {
  if (!a) return MTE_EINVAL;
  int n = a->nblocks < MAX_BLOCKS ? a->nblocks : MAX_BLOCKS;
  for (int b = 0; b < n; ++b) {
    const uint32_t *g = (const uint32_t *)(a->base + a->guard_at[b]);
    for (size_t i = 0; i < GUARD_BYTES / sizeof(uint32_t); ++i)
      if (g[i] != GUARD_WORD) return MTE_ECORRUPT;
  }
  return MTE_OK;
}

/* ---------------------------------------------------------------- the default arena */

static pthread_mutex_t g_default_lock = PTHREAD_MUTEX_INITIALIZER;
static mte_arena *g_default = NULL;

mte_arena *mte__arena_acquire(int *is_default) {
  if (pthread_mutex_trylock(&g_default_lock) == 0) {
    if (!g_default) g_default = mte_arena_create(0);
    if (g_default) {
      *is_default = 1;
      mte_arena_reset(g_default);
      return g_default;
    }
    pthread_mutex_unlock(&g_default_lock);
  }
  /* busy (another thread is inside a kernel) or creation failed: private arena */
  *is_default = 0;
  return mte_arena_create(0);
}

void mte__arena_release(mte_arena *a, int is_default) {
  if (is_default) {
    mte_arena_reset(a);
    pthread_mutex_unlock(&g_default_lock);
  } else {
    mte_arena_destroy(a);
  }
}

size_t mte_default_arena_peak_bytes(void) {
  pthread_mutex_lock(&g_default_lock);
  size_t p = mte_arena_peak_bytes(g_default);
  pthread_mutex_unlock(&g_default_lock);
  return p;
}

void mte_arena_reset_peak(mte_arena *a) {
  if (a) a->peak = a->used;
}

void mte_default_arena_reset_peak(void) {
  pthread_mutex_lock(&g_default_lock);
  mte_arena_reset_peak(g_default);
  pthread_mutex_unlock(&g_default_lock);
}

size_t mte_default_arena_capacity(void) {
  pthread_mutex_lock(&g_default_lock);
  size_t c = mte_arena_capacity(g_default);
  pthread_mutex_unlock(&g_default_lock);
  return c;
}

void mte_default_arena_release(void) {
  pthread_mutex_lock(&g_default_lock);
  mte_arena_destroy(g_default);
  g_default = NULL;
  pthread_mutex_unlock(&g_default_lock);
}
