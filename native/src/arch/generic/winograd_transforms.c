/*
 * generic/winograd_transforms.c - the Winograd transforms in portable C (4 lanes: SSE2 on
 * x86-64, NEON on aarch64 when the compiler vectorises, scalar elsewhere). The code is in
 * ../../mte_winograd_transforms.h, written once over a vector of MTE_WINO_VL lanes; this
 * file only picks the width and names the table.
 */
#define MTE_WINO_VL 4
#define MTE_WINO_ISA "generic"
#define MTE_WINO_TABLE mte_wino_kernels_generic
#include "../../mte_winograd_transforms.h"
