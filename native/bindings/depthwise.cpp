// depthwise.cpp - bindings for depthwise 3x3 convolution and 2-D pooling (mte_depthwise.h).
//
// Same rules as every binding file: float32 C-contiguous arrays used in place, dtype errors
// raise TypeError, rank/shape/parameter errors ValueError, the GIL is released while the
// kernel runs, zero-sized dimensions give empty results. Window parameters are validated
// here with readable messages before the C library checks them again.
#include <array>
#include <string>

#include "common.h"

namespace {

using namespace mte_py;

using Pair = std::array<int64_t, 2>;

std::string pair_str(const Pair &p) {
  return "(" + std::to_string(p[0]) + ", " + std::to_string(p[1]) + ")";
}

// a Python or numpy integer (not bool, not float) that fits in int64
int64_t as_int(const char *op, const char *name, py::handle obj) {
  PyObject *o = obj.ptr();
  if (PyBool_Check(o) || PyFloat_Check(o) || !PyIndex_Check(o))
    throw py::type_error(std::string(op) + ": " + name + " must be an int, got " +
                         type_name(obj));
  PyObject *i = PyNumber_Index(o);
  if (!i) throw py::error_already_set();
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(i, &overflow);
  Py_DECREF(i);
  if (overflow || (v == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    throw py::value_error(std::string(op) + ": " + name + " is out of range");
  }
  return static_cast<int64_t>(v);
}

// an int or a sequence of two ints -> (a, b)
Pair as_pair(const char *op, const char *name, py::handle obj) {
  if (py::isinstance<py::sequence>(obj) && !py::isinstance<py::str>(obj)) {
    auto seq = py::reinterpret_borrow<py::sequence>(obj);
    if (seq.size() != 2)
      throw py::value_error(std::string(op) + ": " + name + " must have 2 entries, got " +
                            std::to_string(seq.size()));
    return {as_int(op, name, seq[0]), as_int(op, name, seq[1])};
  }
  int64_t v = as_int(op, name, obj);
  return {v, v};
}

std::array<int64_t, 4> as_shape4(const char *op, py::handle obj) {
  if (!py::isinstance<py::sequence>(obj) || py::isinstance<py::str>(obj))
    throw py::type_error(std::string(op) + ": x_shape must be a sequence of 4 ints, got " +
                         type_name(obj));
  auto seq = py::reinterpret_borrow<py::sequence>(obj);
  if (seq.size() != 4)
    throw py::value_error(std::string(op) + ": x_shape must have 4 entries (N, C, H, W), got " +
                          std::to_string(seq.size()));
  std::array<int64_t, 4> s{};
  for (size_t i = 0; i < 4; ++i) {
    s[i] = as_int(op, "x_shape", seq[i]);
    if (s[i] < 0) throw py::value_error(std::string(op) + ": x_shape has a negative size");
  }
  return s;
}

int as_stride12(const char *op, py::handle obj) {
  Pair s = as_pair(op, "stride", obj);
  if (s[0] != s[1] || (s[0] != 1 && s[0] != 2))
    throw py::value_error(std::string(op) + ": stride must be 1 or 2, got " + pair_str(s));
  return static_cast<int>(s[0]);
}

int as_activation(const char *op, const std::string &name) {
  if (name == "none") return MTE_ACT_NONE;
  if (name == "relu") return MTE_ACT_RELU;
  if (name == "relu6") return MTE_ACT_RELU6;
  throw py::value_error(std::string(op) + ": activation must be 'none', 'relu' or 'relu6', got '" +
                        name + "'");
}

py::array_t<float> new_f32(int64_t a, int64_t b, int64_t c, int64_t d) {
  return py::array_t<float>({static_cast<py::ssize_t>(a), static_cast<py::ssize_t>(b),
                             static_cast<py::ssize_t>(c), static_cast<py::ssize_t>(d)});
}

const float *fptr(const py::array &a) { return static_cast<const float *>(a.data()); }

// ------------------------------------------------------------------------ depthwise 3x3

void check_weight(const char *op, const py::array &w, int64_t C) {
  if (w.shape(0) != C || w.shape(1) != 1 || w.shape(2) != 3 || w.shape(3) != 3)
    throw py::value_error(std::string(op) + ": w must have shape (" + std::to_string(C) +
                          ", 1, 3, 3) for " + std::to_string(C) + " channels, got (" +
                          shape_str(w) + ")");
}

py::array depthwise3x3(py::handle x_obj, py::handle w_obj, py::handle b_obj, py::handle stride_obj,
                       const std::string &activation) {
  const char *op = "depthwise3x3";
  py::array x = checked_array(op, "x", x_obj, 4, 4);
  py::array w = checked_array(op, "w", w_obj, 4, 4);
  const int stride = as_stride12(op, stride_obj);
  const int act = as_activation(op, activation);
  const int64_t N = x.shape(0), C = x.shape(1), H = x.shape(2), W = x.shape(3);
  check_weight(op, w, C);
  const float *bias = nullptr;
  py::array b;
  if (!b_obj.is_none()) {
    b = checked_array(op, "bias", b_obj, 1, 1);
    if (b.shape(0) != C)
      throw py::value_error(std::string(op) + ": bias must have shape (" + std::to_string(C) +
                            ",), got (" + shape_str(b) + ")");
    bias = fptr(b);
  }
  const int64_t Ho = mte_depthwise3x3_output_size(H, stride);
  const int64_t Wo = mte_depthwise3x3_output_size(W, stride);
  py::array_t<float> y = new_f32(N, C, Ho, Wo);
  float *yp = y.mutable_data();
  int st;
  {
    py::gil_scoped_release nogil;
    st = mte_depthwise3x3(N, C, H, W, stride, fptr(x), fptr(w), bias, act, yp);
  }
  raise_status(op, st);
  return std::move(y);
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
                          "), but an input of " + std::to_string(H) + "x" + std::to_string(W) +
                          " at stride " + std::to_string(stride) + " gives " +
                          std::to_string(Ho) + "x" + std::to_string(Wo) + " outputs");
  py::array_t<float> gx = new_f32(N, C, H, W);
  float *gxp = gx.mutable_data();
  int st;
  {
    py::gil_scoped_release nogil;
    st = mte_depthwise3x3_backward_input(N, C, H, W, stride, fptr(gy), fptr(w), gxp);
  }
  raise_status(op, st);
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
                          "), expected (" + std::to_string(N) + "x" + std::to_string(C) + "x" +
                          std::to_string(Ho) + "x" + std::to_string(Wo) + ") for x (" +
                          shape_str(x) + ") at stride " + std::to_string(stride));
  py::array_t<float> gw = new_f32(C, 1, 3, 3);
  float *gwp = gw.mutable_data();
  int st;
  {
    py::gil_scoped_release nogil;
    st = mte_depthwise3x3_backward_weight(N, C, H, W, stride, fptr(gy), fptr(x), gwp);
  }
  raise_status(op, st);
  return std::move(gw);
}

// ------------------------------------------------------------------------------ pooling

mte_pool2d_params pool_params(const char *op, py::handle kernel, py::handle stride,
                              py::handle padding, const Pair &dilation, bool avg) {
  Pair k = as_pair(op, "kernel", kernel), s = as_pair(op, "stride", stride),
       p = as_pair(op, "padding", padding);
  const int64_t big = int64_t(1) << 30;
  for (int i = 0; i < 2; ++i) {
    if (k[i] < 1 || k[i] > big) throw py::value_error(std::string(op) + ": kernel must be positive, got " + pair_str(k));
    if (s[i] < 1 || s[i] > big) throw py::value_error(std::string(op) + ": stride must be positive, got " + pair_str(s));
    if (dilation[i] < 1 || dilation[i] > big)
      throw py::value_error(std::string(op) + ": dilation must be positive, got " + pair_str(dilation));
    if (p[i] < 0 || p[i] > k[i] / 2)
      throw py::value_error(std::string(op) + ": padding must be between 0 and kernel / 2, got padding=" +
                            pair_str(p) + ", kernel=" + pair_str(k));
  }
  if (avg && (dilation[0] != 1 || dilation[1] != 1))
    throw py::value_error(std::string(op) + ": average pooling has no dilation");
  mte_pool2d_params q{};
  q.kernel_h = k[0], q.kernel_w = k[1], q.stride_h = s[0], q.stride_w = s[1];
  q.pad_h = p[0], q.pad_w = p[1], q.dilation_h = dilation[0], q.dilation_w = dilation[1];
  return q;
}

int64_t as_divisor(const char *op, py::handle obj) {
  if (obj.is_none()) return 0;
  return as_int(op, "divisor_override", obj);  // 0 means none, as the numpy twin's `if`
}

py::tuple max_pool2d(py::handle x_obj, py::handle kernel, py::handle stride, py::handle padding,
                     py::handle dilation, bool ceil_mode) {
  const char *op = "max_pool2d";
  py::array x = checked_array(op, "x", x_obj, 4, 4);
  mte_pool2d_params p = pool_params(op, kernel, stride, padding, as_pair(op, "dilation", dilation), false);
  p.ceil_mode = ceil_mode;
  const int64_t N = x.shape(0), C = x.shape(1), H = x.shape(2), W = x.shape(3);
  const int64_t Ho = mte_pool2d_output_size(H, p.kernel_h, p.stride_h, p.pad_h, p.dilation_h, ceil_mode);
  const int64_t Wo = mte_pool2d_output_size(W, p.kernel_w, p.stride_w, p.pad_w, p.dilation_w, ceil_mode);
  if (Ho < 0 || Wo < 0) throw py::value_error(std::string(op) + ": invalid window parameters");
  if ((H == 0 || W == 0) && Ho > 0 && Wo > 0 && N * C > 0)
    throw py::value_error(std::string(op) + ": empty input planes (" + shape_str(x) + ")");
  py::array_t<float> y = new_f32(N, C, Ho, Wo);
  py::array_t<int64_t> ind({static_cast<py::ssize_t>(N), static_cast<py::ssize_t>(C),
                            static_cast<py::ssize_t>(Ho), static_cast<py::ssize_t>(Wo)});
  float *yp = y.mutable_data();
  int64_t *ip = ind.mutable_data();
  int st;
  {
    py::gil_scoped_release nogil;
    st = mte_max_pool2d(&p, N, C, H, W, fptr(x), yp, ip);
  }
  raise_status(op, st);
  return py::make_tuple(y, ind);
}

py::array max_pool2d_backward(py::handle gy_obj, py::handle ind_obj, py::handle shape_obj) {
  const char *op = "max_pool2d_backward";
  py::array gy = checked_array(op, "grad_y", gy_obj, 4, 4);
  if (!py::isinstance<py::array>(ind_obj))
    throw py::type_error(std::string(op) + ": indices must be a numpy.ndarray of int64, got " +
                         type_name(ind_obj));
  auto ind = py::reinterpret_borrow<py::array>(ind_obj);
  if (!ind.dtype().equal(py::dtype::of<int64_t>()))
    throw py::type_error(std::string(op) + ": indices must have dtype int64, got " +
                         std::string(py::str(ind.dtype())));
  if (!(ind.flags() & py::array::c_style) || !(ind.flags() & kNpyAligned))
    throw py::value_error(std::string(op) + ": indices must be C-contiguous and aligned");
  if (ind.ndim() != 4 || ind.shape(0) != gy.shape(0) || ind.shape(1) != gy.shape(1) ||
      ind.shape(2) != gy.shape(2) || ind.shape(3) != gy.shape(3))
    throw py::value_error(std::string(op) + ": indices has shape (" + shape_str(ind) +
                          "), grad_y (" + shape_str(gy) + "): they must match");
  auto s = as_shape4(op, shape_obj);
  if (s[0] != gy.shape(0) || s[1] != gy.shape(1))
    throw py::value_error(std::string(op) + ": x_shape's N, C differ from grad_y's (" +
                          shape_str(gy) + ")");
  py::array_t<float> gx = new_f32(s[0], s[1], s[2], s[3]);
  float *gxp = gx.mutable_data();
  const int64_t L = gy.shape(2) * gy.shape(3);
  const auto *ip = static_cast<const int64_t *>(ind.data());
  int st;
  {
    py::gil_scoped_release nogil;
    st = mte_max_pool2d_backward(s[0], s[1], s[2], s[3], L, fptr(gy), ip, gxp);
  }
  if (st == MTE_EINVAL)
    throw py::value_error(std::string(op) + ": an index lies outside its " + std::to_string(s[2]) +
                          "x" + std::to_string(s[3]) + " plane");
  raise_status(op, st);
  return std::move(gx);
}

py::array avg_pool2d(py::handle x_obj, py::handle kernel, py::handle stride, py::handle padding,
                     bool ceil_mode, bool count_include_pad, py::handle divisor) {
  const char *op = "avg_pool2d";
  py::array x = checked_array(op, "x", x_obj, 4, 4);
  mte_pool2d_params p = pool_params(op, kernel, stride, padding, Pair{1, 1}, true);
  p.ceil_mode = ceil_mode, p.count_include_pad = count_include_pad;
  p.divisor_override = as_divisor(op, divisor);
  const int64_t N = x.shape(0), C = x.shape(1), H = x.shape(2), W = x.shape(3);
  const int64_t Ho = mte_pool2d_output_size(H, p.kernel_h, p.stride_h, p.pad_h, 1, ceil_mode);
  const int64_t Wo = mte_pool2d_output_size(W, p.kernel_w, p.stride_w, p.pad_w, 1, ceil_mode);
  if (Ho < 0 || Wo < 0) throw py::value_error(std::string(op) + ": invalid window parameters");
  py::array_t<float> y = new_f32(N, C, Ho, Wo);
  float *yp = y.mutable_data();
  int st;
  {
    py::gil_scoped_release nogil;
    st = mte_avg_pool2d(&p, N, C, H, W, fptr(x), yp);
  }
  raise_status(op, st);
  return std::move(y);
}

py::array avg_pool2d_backward(py::handle gy_obj, py::handle shape_obj, py::handle kernel,
                              py::handle stride, py::handle padding, bool count_include_pad,
                              py::handle divisor) {
  const char *op = "avg_pool2d_backward";
  py::array gy = checked_array(op, "grad_y", gy_obj, 4, 4);
  auto s = as_shape4(op, shape_obj);
  mte_pool2d_params p = pool_params(op, kernel, stride, padding, Pair{1, 1}, true);
  p.count_include_pad = count_include_pad;
  p.divisor_override = as_divisor(op, divisor);
  if (s[0] != gy.shape(0) || s[1] != gy.shape(1))
    throw py::value_error(std::string(op) + ": x_shape's N, C differ from grad_y's (" +
                          shape_str(gy) + ")");
  py::array_t<float> gx = new_f32(s[0], s[1], s[2], s[3]);
  float *gxp = gx.mutable_data();
  int st;
  {
    py::gil_scoped_release nogil;
    st = mte_avg_pool2d_backward(&p, s[0], s[1], s[2], s[3], gy.shape(2), gy.shape(3), fptr(gy),
                                 gxp);
  }
  raise_status(op, st);
  return std::move(gx);
}

}  // namespace

void mte_bind_depthwise(pybind11::module_ &m) {
  namespace py = pybind11;
  m.def("depthwise3x3", &depthwise3x3, py::arg("x"), py::arg("w"), py::arg("bias") = py::none(),
        py::arg("stride") = 1, py::arg("activation") = "none",
        "depthwise3x3(x, w, bias=None, stride=1, activation='none') -> y\n\n"
        "Depthwise 3x3 convolution with padding 1: x (N, C, H, W), w (C, 1, 3, 3), bias (C,)\n"
        "or None, stride 1 or 2; y (N, C, (H-1)//stride+1, (W-1)//stride+1). activation:\n"
        "'none', 'relu' or 'relu6', applied in the same pass. All float32, C-contiguous.");
  m.def("depthwise3x3_backward_input", &depthwise3x3_backward_input, py::arg("grad_y"),
        py::arg("w"), py::arg("stride"), py::arg("H"), py::arg("W"),
        "depthwise3x3_backward_input(grad_y, w, stride, H, W) -> grad_x (N, C, H, W)");
  m.def("depthwise3x3_backward_weight", &depthwise3x3_backward_weight, py::arg("grad_y"),
        py::arg("x"), py::arg("stride"),
        "depthwise3x3_backward_weight(grad_y, x, stride) -> grad_w (C, 1, 3, 3)");
  m.def("max_pool2d", &max_pool2d, py::arg("x"), py::arg("kernel"), py::arg("stride"),
        py::arg("padding"), py::arg("dilation"), py::arg("ceil_mode"),
        "max_pool2d(x, kernel, stride, padding, dilation, ceil_mode) -> (y, indices)\n\n"
        "As numpy_backend.max_pool2d: indices (int64) are flat h*W + w positions in each plane;\n"
        "padding (at most kernel / 2) never wins, the first maximum wins ties, a window with\n"
        "NaN gives NaN at its last NaN.");
  m.def("max_pool2d_backward", &max_pool2d_backward, py::arg("grad_y"), py::arg("indices"),
        py::arg("x_shape"),
        "max_pool2d_backward(grad_y, indices, x_shape) -> grad_x: grad_y scattered (added) at\n"
        "indices; an index outside its plane raises ValueError.");
  m.def("avg_pool2d", &avg_pool2d, py::arg("x"), py::arg("kernel"), py::arg("stride"),
        py::arg("padding"), py::arg("ceil_mode"), py::arg("count_include_pad"),
        py::arg("divisor_override"),
        "avg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad,\n"
        "           divisor_override) -> y, as numpy_backend.avg_pool2d.");
  m.def("avg_pool2d_backward", &avg_pool2d_backward, py::arg("grad_y"), py::arg("x_shape"),
        py::arg("kernel"), py::arg("stride"), py::arg("padding"), py::arg("count_include_pad"),
        py::arg("divisor_override"),
        "avg_pool2d_backward(grad_y, x_shape, kernel, stride, padding, count_include_pad,\n"
        "                    divisor_override) -> grad_x, as numpy_backend.avg_pool2d_backward.");
}
