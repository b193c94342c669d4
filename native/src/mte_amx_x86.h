/*
 * mte_amx_x86.h - the AMX tile configuration the AMX kernels share (int8:
 * x86_avx512vnni/qgemm_amx.c; bf16: x86_avx512/bf16_amx.c).
 *
 * Both run a 32 x 32 output tile as four 16 x 16 accumulator tiles (0-3: rows 0-15 / 16-31
 * by columns 0-15 / 16-31), two tiles of A (4, 5: rows 0-15 and 16-31, 64 bytes of k each)
 * and two of B (6, 7: 16 rows of k quads or pairs by 16 columns, 64 bytes each): palette 1,
 * every tile 16 rows of 64 bytes. The configuration is per thread and another library in the
 * process (oneDNN in PyTorch, say) may change or release it between our calls, so each
 * call loads it (LDTILECFG, a few dozen cycles: the int8 microkernel per tile, against the
 * hundreds of its k loop; the bf16 GEMM once per thread and call). Include only from files
 * whose functions carry the AMX target attribute.
 */
#ifndef MTE_AMX_X86_H
#define MTE_AMX_X86_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

typedef struct mte_amx_config {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} mte_amx_config;

__attribute__((target("amx-tile"))) static inline void mte__amx_configure(void) {
  mte_amx_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.palette = 1;
  for (int t = 0; t < 8; ++t) cfg.colsb[t] = 64, cfg.rows[t] = 16;
  _tile_loadconfig(&cfg);
}

#endif /* MTE_AMX_X86_H */
