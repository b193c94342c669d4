// winograd.cpp - bindings for Winograd F(4x4,3x3) / F(2x2,3x3) convolution (not yet written: registers nothing).
#include "common.h"

void mte_bind_winograd(pybind11::module_ &m) { (void)m; }
