// depthwise.cpp - bindings for depthwise 3x3 convolution and pooling (not yet written: registers nothing).
#include "common.h"

void mte_bind_depthwise(pybind11::module_ &m) { (void)m; }
