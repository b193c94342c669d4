// depthwise.cpp - bindings for depthwise convolution (mte_depthwise.h): _C.depthwise (any
// K x K forward), _C.depthwise3x3 (K = 3, padding 1: the same kernel), and
// _C.depthwise3x3_backward_input, _C.depthwise3x3_backward_weight.
//
// Same rules as every binding file (common.h): float32 C-contiguous arrays used in place,
// dtype errors raise TypeError, rank/shape/parameter errors ValueError, the GIL is released
// while the kernel runs, zero-sized dimensions give empty results.
#include <string>

#include "common.h"

namespace {

using namespace mte_py;

// stride: 1 or 2, as an int or an equal pair
int as_stride12(const char *op, py::handle obj) {
  Pair s = as_pair(op, "stride", obj);
  if (s[0] != s[1] || (s[0] != 1 && s[0] != 2))
    throw py::value_error(std::string(op) + ": stride must be 1 or 2, got " + pair_str(s));
  return static_cast<int>(s[0]);
}

void check_weight(const char *op, const py::array &w, int64_t C) {
  if (w.shape(0) != C || w.shape(1) != 1 || w.shape(2) != 3 || w.shape(3) != 3)
    throw py::value_error(std::string(op) + ": w must have shape (" + std::to_string(C) +
                          ", 1, 3, 3) for " + std::to_string(C) + " channels, got (" +
                          shape_str(w) + ")");
}

py::array depthwise3x3(py::handle x_obj, py::handle w_obj, py::handle b_obj, py::handle stride_obj,
                       const std::string &activation, py::handle out_obj) {
  const char *op = "depthwise3x3";
  py::array x = checked_array(op, "x", x_obj, 4, 4);
  py::array w = checked_array(op, "w", w_obj, 4, 4);
  const int stride = as_stride12(op, stride_obj);
  // libmte's mte_depthwise3x3 takes every activation; this binding keeps the ones its
  // kernels apply in registers (the others: native_conv runs it with 'none', then one
  // in-place epilogue pass)
  const int act = as_activation(op, "activation", activation, MTE_ACT_RELU6);
  const int64_t N = x.shape(0), C = x.shape(1), H = x.shape(2), W = x.shape(3);
  check_weight(op, w, C);
  py::array b;
  const float *bias = optional_vector(op, "bias", b_obj, C, b, "channel");
  const int64_t Ho = mte_depthwise3x3_output_size(H, stride);
  const int64_t Wo = mte_depthwise3x3_output_size(W, stride);
  py::array y = output_array(op, out_obj, {N, C, Ho, Wo}, {&x, &w, &b});
  float *yp = static_cast<float *>(y.mutable_data());
  run_kernel(op, [&] {
    return mte_depthwise3x3(N, C, H, W, stride, fptr(x), fptr(w), bias, act, yp);
  });
  return y;
}

// _C.depthwise: any K x K (K <= 31), stride 1 or 2, padding 0 <= p < K (default K // 2)
py::array depthwise(py::handle x_obj, py::handle w_obj, py::handle b_obj, py::handle stride_obj,
                    py::handle pad_obj, const std::string &activation, py::handle out_obj) {
  const char *op = "depthwise";
  py::array x = checked_array(op, "x", x_obj, 4, 4);
  py::array w = checked_array(op, "w", w_obj, 4, 4);
  const int stride = as_stride12(op, stride_obj);
  const int act = as_activation(op, "activation", activation, MTE_ACT_RELU6);
  const int64_t N = x.shape(0), C = x.shape(1), H = x.shape(2), W = x.shape(3);
  const int64_t K = w.shape(2);
  if (w.shape(0) != C || w.shape(1) != 1 || w.shape(3) != K || K < 1 || K > 31)
    throw py::value_error(std::string(op) + ": w must have shape (" + std::to_string(C) +
                          ", 1, K, K) with 1 <= K <= 31 for " + std::to_string(C) +
                          " channels, got (" + shape_str(w) + ")");
  int64_t pad = K / 2;
  if (!pad_obj.is_none()) {
    Pair p = as_pair(op, "padding", pad_obj);
    if (p[0] != p[1] || p[0] < 0 || p[0] >= K)
      throw py::value_error(std::string(op) + ": padding must be one value in [0, K) = [0, " +
                            std::to_string(K) + "), got " + pair_str(p));
    pad = p[0];
  }
  py::array b;
  const float *bias = optional_vector(op, "bias", b_obj, C, b, "channel");
  const int64_t Ho = mte_depthwise_output_size(H, (int)K, stride, (int)pad);
  const int64_t Wo = mte_depthwise_output_size(W, (int)K, stride, (int)pad);
  if ((H > 0 && Ho == 0) || (W > 0 && Wo == 0))
    throw py::value_error(std::string(op) + ": an input of " + dims_str({H, W}) +
                          " is smaller than the kernel (" + std::to_string(K) + ", padding " +
                          std::to_string(pad) + ")");
  py::array y = output_array(op, out_obj, {N, C, Ho, Wo}, {&x, &w, &b});
  float *yp = static_cast<float *>(y.mutable_data());
  run_kernel(op, [&] {
    return mte_depthwise(N, C, H, W, (int)K, stride, (int)pad, fptr(x), fptr(w), bias, act, yp);
  });
  return y;
}

py::array depthwise3x3_backward_input(py::handle gy_obj, py::handle w_obj, py::handle stride_obj,
                                      py::handle h_obj, py::handle w_size_obj) {
  const char *op = "depthwise3x3_backward_input";
  py::array gy = checked_array(op, "grad_y", gy_obj, 4, 4);
  py::array w = checked_array(op, "w", w_obj, 4, 4);
  const int stride = as_stride12(op, stride_obj);
  const int64_t H = as_int(op, "H", h_obj), W = as_int(op, "W", w_size_obj);
  if (H < 0 || W < 0) throw py::value_error(std::string(op) + ": H and W must be >= 0");
  const int64_t N = gy.shape(0), C = gy.shape(1);
  check_weight(op, w, C);
  const int64_t Ho = mte_depthwise3x3_output_size(H, stride);
  const int64_t Wo = mte_depthwise3x3_output_size(W, stride);
  if (gy.shape(2) != Ho || gy.shape(3) != Wo)
    throw py::value_error(std::string(op) + ": grad_y has shape (" + shape_str(gy) +
                          "), but an input of " + dims_str({H, W}) + " at stride " +
                          std::to_string(stride) + " gives " + dims_str({Ho, Wo}) + " outputs");
  py::array_t<float> gx = new_f32({N, C, H, W});
  float *gxp = gx.mutable_data();
  run_kernel(op, [&] {
    return mte_depthwise3x3_backward_input(N, C, H, W, stride, fptr(gy), fptr(w), gxp);
  });
  return std::move(gx);
}

py::array depthwise3x3_backward_weight(py::handle gy_obj, py::handle x_obj, py::handle stride_obj) {
  const char *op = "depthwise3x3_backward_weight";
  py::array gy = checked_array(op, "grad_y", gy_obj, 4, 4);
  py::array x = checked_array(op, "x", x_obj, 4, 4);
  const int stride = as_stride12(op, stride_obj);
  const int64_t N = x.shape(0), C = x.shape(1), H = x.shape(2), W = x.shape(3);
  const int64_t Ho = mte_depthwise3x3_output_size(H, stride);
  const int64_t Wo = mte_depthwise3x3_output_size(W, stride);
  if (gy.shape(0) != N || gy.shape(1) != C || gy.shape(2) != Ho || gy.shape(3) != Wo)
    throw py::value_error(std::string(op) + ": grad_y has shape (" + shape_str(gy) +
                          "), expected (" + dims_str({N, C, Ho, Wo}) + ") for x (" +
                          shape_str(x) + ") at stride " + std::to_string(stride));
  py::array_t<float> gw = new_f32({C, 1, 3, 3});
  float *gwp = gw.mutable_data();
  run_kernel(op, [&] {
    return mte_depthwise3x3_backward_weight(N, C, H, W, stride, fptr(gy), fptr(x), gwp);
  });
  return std::move(gw);
}

}  // namespace

void mte_bind_depthwise(pybind11::module_ &m) {
  namespace py = pybind11;
  m.def("depthwise3x3", &depthwise3x3, py::arg("x"), py::arg("w"), py::arg("bias") = py::none(),
        py::arg("stride") = 1, py::arg("activation") = "none", py::arg("out") = py::none(),
        "depthwise3x3(x, w, bias=None, stride=1, activation='none', out=None) -> y\n\n"
        "Depthwise 3x3 convolution with padding 1: x (N, C, H, W), w (C, 1, 3, 3), bias (C,)\n"
        "or None, stride 1 or 2; y (N, C, (H-1)//stride+1, (W-1)//stride+1). activation:\n"
        "'none', 'relu' or 'relu6', applied in the same pass. All float32, C-contiguous.\n"
        "out: an array to write y into (y's shape, no overlap with the inputs) or None.");
  m.def("depthwise", &depthwise, py::arg("x"), py::arg("w"), py::arg("bias") = py::none(),
        py::arg("stride") = 1, py::arg("padding") = py::none(), py::arg("activation") = "none",
        py::arg("out") = py::none(),
        "depthwise(x, w, bias=None, stride=1, padding=K//2, activation='none', out=None)\n\n"
        "Depthwise K x K convolution (forward): x (N, C, H, W), w (C, 1, K, K) with\n"
        "1 <= K <= 31, bias (C,) or None, stride 1 or 2, padding p on every side (0 <= p < K;\n"
        "None = K // 2), dilation 1; y (N, C, (H+2p-K)//stride+1, (W+2p-K)//stride+1).\n"
        "activation: 'none', 'relu' or 'relu6', applied in the same pass. All float32,\n"
        "C-contiguous; out: an array to write y into, or None. (depthwise3x3 is this with\n"
        "K = 3, padding 1.)");
  m.def("depthwise3x3_backward_input", &depthwise3x3_backward_input, py::arg("grad_y"),
        py::arg("w"), py::arg("stride"), py::arg("H"), py::arg("W"),
        "depthwise3x3_backward_input(grad_y, w, stride, H, W) -> grad_x (N, C, H, W)");
  m.def("depthwise3x3_backward_weight", &depthwise3x3_backward_weight, py::arg("grad_y"),
        py::arg("x"), py::arg("stride"),
        "depthwise3x3_backward_weight(grad_y, x, stride) -> grad_w (C, 1, 3, 3)");
}
