/*
 * generic/pool_rows.c - the pool family's generic descriptor: no row kernels. pool.c's
 * portable loops (fixed-size 2x2 / 3x3 windows the compiler unrolls and vectorises) do
 * every output; ISAs with vector row kernels run them first and pool.c does what they leave.
 */
#include "../../mte_pool_internal.h"

const mte_pool_kernel mte_pool_kernel_generic = {"generic", NULL, NULL, NULL};
