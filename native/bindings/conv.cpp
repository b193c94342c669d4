// conv.cpp - bindings for convolution via im2col + GEMM, 1x1 convolution, fused epilogues (not yet written: registers nothing).
#include "common.h"

void mte_bind_conv(pybind11::module_ &m) { (void)m; }
