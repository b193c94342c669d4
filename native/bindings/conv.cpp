// conv.cpp - bindings for 2-D convolution (im2col folded into the GEMM's packing, direct
// 1x1 GEMM, fused bias + activation) and its two backward passes: _C.conv2d,
// _C.conv2d_backward_input, _C.conv2d_backward_weight. Same conventions as the numpy twins
// in minitorch_edge/backend/numpy_backend.py: NCHW, padding (top, bottom, left, right).
#include <array>
#include <string>
#include <vector>

#include "common.h"

namespace {

using namespace mte_py;

constexpr int64_t kMaxParam = int64_t(1) << 30;

// an int, or a sequence of n1 or n2 ints, each in [lo, 2**30]
std::vector<int64_t> ints(const char *op, const char *name, py::handle obj, size_t n1,
                          size_t n2, int64_t lo) {
  std::vector<int64_t> v = as_ints(op, name, obj, n1, n2);
  for (int64_t x : v)
    if (x < lo || x > kMaxParam)
      throw py::value_error(msg(op, name, " values must be in [" + std::to_string(lo) +
                                              ", 2**30], got " + std::to_string(x)));
  return v;
}

// fills the geometry fields of d (stride, padding, dilation, groups)
void geometry(const char *op, mte_conv2d_desc &d, py::handle stride, py::handle padding,
              py::handle dilation, int64_t groups) {
  auto s = ints(op, "stride", stride, 2, 2, 1);
  auto p = ints(op, "padding", padding, 4, 2, 0);
  if (p.size() == 2) p = {p[0], p[0], p[1], p[1]};  // (ph, pw) -> symmetric
  auto dl = ints(op, "dilation", dilation, 2, 2, 1);
  if (groups < 1 || groups > kMaxParam)
    throw py::value_error(std::string(op) + ": groups must be a positive int, got " +
                          std::to_string(groups));
  d.stride_h = s[0], d.stride_w = s[1];
  d.pad_top = p[0], d.pad_bottom = p[1], d.pad_left = p[2], d.pad_right = p[3];
  d.dilation_h = dl[0], d.dilation_w = dl[1];
  d.groups = groups;
}

// channel counts of x (C) and w (K, C/groups) must agree with groups
void check_channels(const char *op, int64_t C, int64_t K, int64_t Cg, int64_t groups,
                    const std::string &x_name, const std::string &w_desc) {
  std::ostringstream s;
  if (C % groups || K % groups)
    s << op << ": channels must be divisible by groups=" << groups << " (" << x_name << " has "
      << C << ", the weight " << K << " outputs)";
  else if (Cg * groups != C)
    s << op << ": weight " << w_desc << " expects " << Cg * groups << " input channels ("
      << Cg << " per group x groups=" << groups << "), but " << x_name << " has " << C;
  if (!s.str().empty()) throw py::value_error(s.str());
}

std::array<int64_t, 4> shape4(const char *op, const char *name, py::handle obj) {
  auto v = ints(op, name, obj, 4, 4, 0);
  return {v[0], v[1], v[2], v[3]};
}

py::array conv2d(py::handle x_obj, py::handle w_obj, py::handle b_obj, py::handle stride,
                 py::handle padding, py::handle dilation, int64_t groups, py::handle act_obj,
                 py::handle res_obj, py::handle packed_obj, py::handle out_obj) {
  const char *op = "conv2d";
  py::array x = checked_array(op, "x", x_obj, 4, 4);
  py::array w = checked_array(op, "w", w_obj, 4, 4);
  mte_conv2d_desc d{};
  geometry(op, d, stride, padding, dilation, groups);
  const int act = as_activation(op, "act", act_obj);
  d.batch = x.shape(0), d.in_channels = x.shape(1), d.in_h = x.shape(2), d.in_w = x.shape(3);
  d.out_channels = w.shape(0), d.kernel_h = w.shape(2), d.kernel_w = w.shape(3);
  check_channels(op, d.in_channels, d.out_channels, w.shape(1), groups,
                 "x (" + shape_str(x) + ")", "(" + shape_str(w) + ")");
  if (d.kernel_h < 1 || d.kernel_w < 1)
    throw py::value_error("conv2d: kernel size must be at least 1x1, got weight (" +
                          shape_str(w) + ")");
  py::array b;
  const float *bias = optional_vector(op, "bias", b_obj, d.out_channels, b, "output channel");
  d.out_h = mte_conv2d_output_size(d.in_h, d.kernel_h, d.stride_h, d.pad_top, d.pad_bottom,
                                   d.dilation_h);
  d.out_w = mte_conv2d_output_size(d.in_w, d.kernel_w, d.stride_w, d.pad_left, d.pad_right,
                                   d.dilation_w);
  if (d.out_h < 0 || d.out_w < 0)
    throw py::value_error("conv2d: the padded input (" + shape_str(x) +
                          " plus padding) is smaller than the dilated kernel (" +
                          shape_str(w) + ")");
  const float *residual = nullptr;
  py::array res;
  if (!res_obj.is_none()) {
    res = checked_array(op, "residual", res_obj, 4, 4);
    if (res.shape(0) != d.batch || res.shape(1) != d.out_channels || res.shape(2) != d.out_h ||
        res.shape(3) != d.out_w)
      throw py::value_error("conv2d: residual has shape (" + shape_str(res) +
                            "), expected the output's shape (" +
                            dims_str({d.batch, d.out_channels, d.out_h, d.out_w}) + ")");
    residual = static_cast<const float *>(res.data());
  }
  const float *packed = nullptr;
  int64_t packed_floats = 0;
  py::array pk;
  if (!packed_obj.is_none()) {
    pk = checked_array(op, "packed_w", packed_obj, 1, 1);
    packed = static_cast<const float *>(pk.data());
    packed_floats = pk.shape(0);
  }
  py::array y = output_array(op, out_obj, {d.batch, d.out_channels, d.out_h, d.out_w},
                             {&x, &w, &b, &res});
  float *yp = static_cast<float *>(y.mutable_data());
  int st = without_gil([&] {
    return mte_conv2d_forward_packed(&d, fptr(x), fptr(w), packed, packed_floats, bias, act,
                                     residual, yp, nullptr);
  });
  if (st == MTE_EINVAL && packed)  // every other argument was checked above
    throw py::value_error("conv2d: packed_w was not packed for this weight (" + shape_str(w) +
                          ", groups=" + std::to_string(groups) + ") with the active ISA (" +
                          mte_active_isa() + "); pack it again with conv2d_pack_weight");
  raise_status(op, st);
  return y;
}

// w packed into the GEMM panels conv2d would build on every call; None if it packs nothing
py::object pack_weight(py::handle w_obj, int64_t groups) {
  const char *op = "conv2d_pack_weight";
  py::array w = checked_array(op, "w", w_obj, 4, 4);
  if (groups < 1)
    throw py::value_error("conv2d_pack_weight: groups must be positive, got " +
                          std::to_string(groups));
  mte_conv2d_desc d{};
  d.batch = 1, d.in_channels = w.shape(1) * groups, d.out_channels = w.shape(0);
  d.kernel_h = d.in_h = w.shape(2), d.kernel_w = d.in_w = w.shape(3);
  d.stride_h = d.stride_w = d.dilation_h = d.dilation_w = 1, d.groups = groups;
  if (d.out_channels % groups)
    throw py::value_error("conv2d_pack_weight: " + std::to_string(d.out_channels) +
                          " output channels are not divisible by groups=" +
                          std::to_string(groups));
  if (d.kernel_h < 1 || d.kernel_w < 1)
    throw py::value_error("conv2d_pack_weight: kernel size must be at least 1x1, got weight (" +
                          shape_str(w) + ")");
  d.out_h = d.out_w = 1;
  const int64_t n = mte_conv2d_packed_weight_floats(&d);
  raise_status(op, n < 0 ? MTE_EINVAL : MTE_OK);
  if (n == 0) return py::none();
  py::array_t<float> out(static_cast<py::ssize_t>(n));
  float *dst = out.mutable_data();
  run_kernel(op, [&] { return mte_conv2d_pack_weight(&d, fptr(w), dst, n); });
  return std::move(out);
}

// ---- the direct KxK convolution (conv_direct.c) ----

std::array<int64_t, 4> shape_of(const py::array &a) {
  return {a.shape(0), a.shape(1), a.shape(2), a.shape(3)};
}


// the descriptor of x_shape * w_shape (K, C, kh, kw), groups 1, dilation 1
mte_conv2d_desc direct_desc(const char *op, const std::array<int64_t, 4> &xs,
                            const std::array<int64_t, 4> &ws, py::handle stride,
                            py::handle padding) {
  mte_conv2d_desc d{};
  geometry(op, d, stride, padding, py::int_(1), 1);
  d.batch = xs[0], d.in_channels = xs[1], d.in_h = xs[2], d.in_w = xs[3];
  d.out_channels = ws[0], d.kernel_h = ws[2], d.kernel_w = ws[3];
  if (ws[1] != xs[1])
    throw py::value_error(std::string(op) + ": the weight expects " + std::to_string(ws[1]) +
                          " input channels, x has " + std::to_string(xs[1]));
  d.out_h = mte_conv2d_output_size(d.in_h, d.kernel_h, d.stride_h, d.pad_top, d.pad_bottom, 1);
  d.out_w = mte_conv2d_output_size(d.in_w, d.kernel_w, d.stride_w, d.pad_left, d.pad_right, 1);
  if (d.out_h < 1 || d.out_w < 1 || d.kernel_h < 1 || d.kernel_w < 1)
    throw py::value_error(std::string(op) + ": the padded input is smaller than the kernel");
  return d;
}

py::array direct_pack(py::handle w_obj) {
  const char *op = "conv2d_direct_pack";
  py::array w = checked_array(op, "w", w_obj, 4, 4);
  const int64_t n = mte_conv2d_direct_packed_floats(w.shape(0), w.shape(1), w.shape(2),
                                                    w.shape(3));
  if (n < 0) throw py::value_error("conv2d_direct_pack: invalid weight shape (" + shape_str(w) + ")");
  py::array_t<float> out(static_cast<py::ssize_t>(n));
  float *dst = out.mutable_data();
  run_kernel(op, [&] {
    return mte_conv2d_direct_pack(w.shape(0), w.shape(1), w.shape(2), w.shape(3), fptr(w), dst);
  });
  return std::move(out);
}

py::array direct(py::handle x_obj, py::handle packed_obj, py::handle w_shape, py::handle b_obj,
                 py::handle stride, py::handle padding, py::handle act_obj, py::handle res_obj,
                 py::handle out_obj) {
  const char *op = "conv2d_direct";
  py::array x = checked_array(op, "x", x_obj, 4, 4);
  py::array pk = checked_array(op, "packed", packed_obj, 1, 1);
  auto ws = shape4(op, "w_shape", w_shape);
  const mte_conv2d_desc d = direct_desc(op, shape_of(x), ws, stride, padding);
  if (pk.shape(0) != mte_conv2d_direct_packed_floats(ws[0], ws[1], ws[2], ws[3]))
    throw py::value_error("conv2d_direct: packed has " + std::to_string(pk.shape(0)) +
                          " floats, not the packing of a weight of shape " +
                          dims_str({ws[0], ws[1], ws[2], ws[3]}) + " (conv2d_direct_pack)");
  const int act = as_activation(op, "act", act_obj);
  if (act != MTE_ACT_NONE && act != MTE_ACT_RELU && act != MTE_ACT_RELU6)
    throw py::value_error("conv2d_direct: act must be None, 'relu' or 'relu6'");
  py::array b;
  const float *bias = optional_vector(op, "bias", b_obj, d.out_channels, b, "output channel");
  const float *residual = nullptr;
  py::array res;
  if (!res_obj.is_none()) {
    res = checked_array(op, "residual", res_obj, 4, 4);
    if (res.shape(0) != d.batch || res.shape(1) != d.out_channels || res.shape(2) != d.out_h ||
        res.shape(3) != d.out_w)
      throw py::value_error("conv2d_direct: residual has shape (" + shape_str(res) +
                            "), expected the output's shape (" +
                            dims_str({d.batch, d.out_channels, d.out_h, d.out_w}) + ")");
    residual = static_cast<const float *>(res.data());
  }
  py::array y = output_array(op, out_obj, {d.batch, d.out_channels, d.out_h, d.out_w},
                             {&x, &pk, &b, &res});
  float *yp = static_cast<float *>(y.mutable_data());
  run_kernel(op, [&] {
    return mte_conv2d_direct_forward(&d, fptr(x), fptr(pk), bias, residual, act, yp, nullptr);
  });
  return y;
}

bool direct_should_use(py::handle x_shape, py::handle w_shape, py::handle stride,
                       py::handle padding, py::handle act_obj) {
  const char *op = "conv2d_direct_should_use";
  const mte_conv2d_desc d = direct_desc(op, shape4(op, "x_shape", x_shape),
                                        shape4(op, "w_shape", w_shape), stride, padding);
  return mte_conv2d_direct_should_use(&d, as_activation(op, "act", act_obj)) != 0;
}

// The descriptor of a backward pass: input xs (N, C, H, W), weight ws (K, C/groups, kh, kw)
// and grad_y, checked against each other; x_desc, w_desc and batch say where each size came
// from, for the messages.
mte_conv2d_desc backward_desc(const char *op, const std::array<int64_t, 4> &xs,
                              const std::array<int64_t, 4> &ws, const py::array &gy,
                              py::handle stride, py::handle padding, py::handle dilation,
                              int64_t groups, const std::string &x_desc,
                              const std::string &w_desc, const char *batch) {
  mte_conv2d_desc d{};
  geometry(op, d, stride, padding, dilation, groups);
  d.batch = xs[0], d.in_channels = xs[1], d.in_h = xs[2], d.in_w = xs[3];
  d.out_channels = ws[0], d.kernel_h = ws[2], d.kernel_w = ws[3];
  d.out_h = gy.shape(2), d.out_w = gy.shape(3);
  check_channels(op, d.in_channels, d.out_channels, ws[1], groups, x_desc, w_desc);
  if (gy.shape(0) != d.batch || gy.shape(1) != d.out_channels)
    throw py::value_error(std::string(op) + ": grad_y (" + shape_str(gy) + ") does not match " +
                          batch + " " + std::to_string(d.batch) + " and " +
                          std::to_string(d.out_channels) + " output channels");
  if (d.kernel_h < 1 || d.kernel_w < 1)
    throw py::value_error(std::string(op) + ": kernel size must be at least 1x1");
  return d;
}

py::array backward_input(py::handle gy_obj, py::handle w_obj, py::handle x_shape,
                         py::handle stride, py::handle padding, py::handle dilation,
                         int64_t groups) {
  const char *op = "conv2d_backward_input";
  py::array gy = checked_array(op, "grad_y", gy_obj, 4, 4);
  py::array w = checked_array(op, "w", w_obj, 4, 4);
  auto xs = shape4(op, "x_shape", x_shape);
  const mte_conv2d_desc d = backward_desc(op, xs, shape_of(w), gy, stride, padding, dilation,
                                          groups, "x_shape", "(" + shape_str(w) + ")", "batch");
  py::array gx = new_f32({xs[0], xs[1], xs[2], xs[3]});
  float *out = static_cast<float *>(gx.mutable_data());
  run_kernel(op,
             [&] { return mte_conv2d_backward_input(&d, fptr(gy), fptr(w), out, nullptr); });
  return gx;
}

py::array backward_weight(py::handle gy_obj, py::handle x_obj, py::handle w_shape,
                          py::handle stride, py::handle padding, py::handle dilation,
                          int64_t groups) {
  const char *op = "conv2d_backward_weight";
  py::array gy = checked_array(op, "grad_y", gy_obj, 4, 4);
  py::array x = checked_array(op, "x", x_obj, 4, 4);
  auto ws = shape4(op, "w_shape", w_shape);
  const mte_conv2d_desc d =
      backward_desc(op, shape_of(x), ws, gy, stride, padding, dilation, groups,
                    "x (" + shape_str(x) + ")", "shape w_shape", "x's batch");
  py::array gw = new_f32({ws[0], ws[1], ws[2], ws[3]});
  float *out = static_cast<float *>(gw.mutable_data());
  run_kernel(op,
             [&] { return mte_conv2d_backward_weight(&d, fptr(gy), fptr(x), out, nullptr); });
  return gw;
}

}  // namespace

void mte_bind_conv(pybind11::module_ &m) {
  namespace py = pybind11;
  m.def("conv2d", &conv2d, py::arg("x"), py::arg("w"), py::arg("bias") = py::none(),
        py::arg("stride") = 1, py::arg("padding") = 0, py::arg("dilation") = 1,
        py::arg("groups") = 1, py::arg("act") = py::none(), py::arg("residual") = py::none(),
        py::arg("packed_w") = py::none(), py::arg("out") = py::none(),
        "conv2d(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1, act=None,\n"
        "       residual=None, packed_w=None, out=None)\n\n"
        "y = act(conv2d(x, w) + bias + residual), NCHW float32 (numpy_backend.conv2d plus a\n"
        "fused epilogue). x (N, C, H, W); w (O, C/groups, kh, kw); bias (O,) or None;\n"
        "residual None or shaped like y, (N, O, Ho, Wo) (a ResNet block's identity).\n"
        "stride, dilation: int or (h, w); padding: int, (ph, pw) or (top, bottom, left,\n"
        "right); act: None/'none', 'relu', 'relu6', 'gelu', 'gelu_tanh', 'silu' or\n"
        "'hardswish', applied in the GEMM's epilogue. Arrays must be C-contiguous float32.\n"
        "Returns (N, O, Ho, Wo): a new array, or `out` (that shape, C-contiguous float32, no\n"
        "overlap with the inputs).\n"
        "packed_w: conv2d_pack_weight(w, groups), reused instead of packing w again.");
  m.def("conv2d_pack_weight", &pack_weight, py::arg("w"), py::arg("groups") = 1,
        "conv2d_pack_weight(w, groups=1) -> 1-D float32 array or None\n\n"
        "w packed into the GEMM panels conv2d builds on every call (for the active ISA), to\n"
        "pass as conv2d(..., packed_w=...) while w is unchanged; None when conv2d packs\n"
        "nothing for this weight (depthwise-like convs with <= 4 outputs per group).");
  m.def("conv2d_direct_pack", &direct_pack, py::arg("w"),
        "conv2d_direct_pack(w) -> 1-D float32 array\n\n"
        "w (K, C, kh, kw) packed for conv2d_direct (blocks of 64 output channels).");
  m.def("conv2d_direct", &direct, py::arg("x"), py::arg("packed"), py::arg("w_shape"),
        py::arg("bias") = py::none(), py::arg("stride") = 1, py::arg("padding") = 0,
        py::arg("act") = py::none(), py::arg("residual") = py::none(),
        py::arg("out") = py::none(),
        "conv2d_direct(x, packed, w_shape, bias=None, stride=1, padding=0, act=None,\n"
        "              residual=None, out=None)\n\n"
        "act(conv2d(x, w) + bias + residual) with groups 1, dilation 1, act None/'relu'/\n"
        "'relu6', from packed = conv2d_direct_pack(w): the direct convolution (lanes over\n"
        "output channels, no im2col). Same result as conv2d to float32 rounding.");
  m.def("conv2d_direct_should_use", &direct_should_use, py::arg("x_shape"), py::arg("w_shape"),
        py::arg("stride") = 1, py::arg("padding") = 0, py::arg("act") = py::none(),
        "conv2d_direct_should_use(x_shape, w_shape, stride=1, padding=0, act=None) -> bool\n\n"
        "Whether conv2d_direct is expected to beat im2col + GEMM and Winograd here (the\n"
        "measured rule of conv_direct.c, for the active ISA).");
  m.def("conv2d_backward_input", &backward_input, py::arg("grad_y"), py::arg("w"),
        py::arg("x_shape"), py::arg("stride") = 1, py::arg("padding") = 0,
        py::arg("dilation") = 1, py::arg("groups") = 1,
        "conv2d_backward_input(grad_y, w, x_shape, stride, padding, dilation, groups)\n\n"
        "dL/dx of conv2d (the forward of a transposed convolution), as\n"
        "numpy_backend.conv2d_backward_input: the output size comes from grad_y.");
  m.def("conv2d_backward_weight", &backward_weight, py::arg("grad_y"), py::arg("x"),
        py::arg("w_shape"), py::arg("stride") = 1, py::arg("padding") = 0,
        py::arg("dilation") = 1, py::arg("groups") = 1,
        "conv2d_backward_weight(grad_y, x, w_shape, stride, padding, dilation, groups)\n\n"
        "dL/dw of conv2d summed over the batch, as numpy_backend.conv2d_backward_weight.");
}
