// pool.cpp - bindings for 2-D max and average pooling and their backward (mte_pool.h):
// _C.max_pool2d, _C.max_pool2d_backward, _C.avg_pool2d, _C.avg_pool2d_backward, with the
// conventions of the numpy twins in minitorch_edge/backend/numpy_backend.py.
//
// Same rules as every binding file (common.h): float32 C-contiguous arrays used in place,
// dtype errors raise TypeError, rank/shape/parameter errors ValueError, the GIL is released
// while the kernel runs, zero-sized dimensions give empty results. The forward passes take
// `out=` (the result written into a caller's array, output_array in common.h), and
// max_pool2d(..., return_indices=False) computes no indices at all (inference). Window parameters are
// validated here with readable messages before the C library checks them again.
#include <string>

#include "common.h"

namespace {

using namespace mte_py;

// kernel, stride, padding (ints or pairs) and dilation -> the C parameters, validated
mte_pool2d_params pool_params(const char *op, py::handle kernel, py::handle stride,
                              py::handle padding, const Pair &dilation, bool avg) {
  Pair k = as_pair(op, "kernel", kernel), s = as_pair(op, "stride", stride),
       p = as_pair(op, "padding", padding);
  const int64_t big = int64_t(1) << 30;
  auto positive = [&](const char *name, const Pair &v) {
    for (int64_t x : v)
      if (x < 1 || x > big)
        throw py::value_error(msg(op, name, " must be positive, got " + pair_str(v)));
  };
  positive("kernel", k);
  positive("stride", s);
  positive("dilation", dilation);
  for (int i = 0; i < 2; ++i)
    if (p[i] < 0 || p[i] > k[i] / 2)
      throw py::value_error(msg(op, "padding", " must be between 0 and kernel / 2, got padding=" +
                                                   pair_str(p) + ", kernel=" + pair_str(k)));
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

// Ho, Wo of a pooling of x with p; ValueError if the parameters give none
std::array<int64_t, 2> pooled_size(const char *op, const py::array &x,
                                   const mte_pool2d_params &p) {
  const int64_t Ho = mte_pool2d_output_size(x.shape(2), p.kernel_h, p.stride_h, p.pad_h,
                                            p.dilation_h, p.ceil_mode);
  const int64_t Wo = mte_pool2d_output_size(x.shape(3), p.kernel_w, p.stride_w, p.pad_w,
                                            p.dilation_w, p.ceil_mode);
  if (Ho < 0 || Wo < 0) throw py::value_error(std::string(op) + ": invalid window parameters");
  return {Ho, Wo};
}

// x_shape of a backward call: 4 sizes whose N, C are grad_y's
std::array<int64_t, 4> input_shape(const char *op, py::handle shape_obj, const py::array &gy) {
  auto s = as_shape4(op, "x_shape", shape_obj);
  if (s[0] != gy.shape(0) || s[1] != gy.shape(1))
    throw py::value_error(std::string(op) + ": x_shape's N, C differ from grad_y's (" +
                          shape_str(gy) + ")");
  return s;
}

py::object max_pool2d(py::handle x_obj, py::handle kernel, py::handle stride,
                      py::handle padding, py::handle dilation, bool ceil_mode,
                      py::handle out_obj, bool return_indices) {
  const char *op = "max_pool2d";
  py::array x = checked_array(op, "x", x_obj, 4, 4);
  mte_pool2d_params p =
      pool_params(op, kernel, stride, padding, as_pair(op, "dilation", dilation), false);
  p.ceil_mode = ceil_mode;
  const int64_t N = x.shape(0), C = x.shape(1), H = x.shape(2), W = x.shape(3);
  const auto out = pooled_size(op, x, p);
  const int64_t Ho = out[0], Wo = out[1];
  if ((H == 0 || W == 0) && Ho > 0 && Wo > 0 && N * C > 0)
    throw py::value_error(std::string(op) + ": empty input planes (" + shape_str(x) + ")");
  py::array y = output_array(op, out_obj, {N, C, Ho, Wo}, {&x});
  float *yp = static_cast<float *>(y.mutable_data());
  py::array_t<int64_t> ind;
  int64_t *ip = nullptr;  // NULL: the kernel computes no indices
  if (return_indices) {
    ind = py::array_t<int64_t>({static_cast<py::ssize_t>(N), static_cast<py::ssize_t>(C),
                                static_cast<py::ssize_t>(Ho), static_cast<py::ssize_t>(Wo)});
    ip = ind.mutable_data();
  }
  run_kernel(op, [&] { return mte_max_pool2d(&p, N, C, H, W, fptr(x), yp, ip); });
  if (!return_indices) return std::move(y);
  return py::make_tuple(y, ind);
}

// indices: a C-contiguous int64 array shaped like grad_y
py::array checked_indices(const char *op, py::handle ind_obj, const py::array &gy) {
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
  return ind;
}

py::array max_pool2d_backward(py::handle gy_obj, py::handle ind_obj, py::handle shape_obj) {
  const char *op = "max_pool2d_backward";
  py::array gy = checked_array(op, "grad_y", gy_obj, 4, 4);
  py::array ind = checked_indices(op, ind_obj, gy);
  auto s = input_shape(op, shape_obj, gy);
  py::array_t<float> gx = new_f32({s[0], s[1], s[2], s[3]});
  float *gxp = gx.mutable_data();
  const int64_t L = gy.shape(2) * gy.shape(3);
  const auto *ip = static_cast<const int64_t *>(ind.data());
  int st = without_gil(
      [&] { return mte_max_pool2d_backward(s[0], s[1], s[2], s[3], L, fptr(gy), ip, gxp); });
  if (st == MTE_EINVAL)
    throw py::value_error(std::string(op) + ": an index lies outside its " +
                          std::to_string(s[2]) + "x" + std::to_string(s[3]) + " plane");
  raise_status(op, st);
  return std::move(gx);
}

py::array avg_pool2d(py::handle x_obj, py::handle kernel, py::handle stride, py::handle padding,
                     bool ceil_mode, bool count_include_pad, py::handle divisor,
                     py::handle out_obj) {
  const char *op = "avg_pool2d";
  py::array x = checked_array(op, "x", x_obj, 4, 4);
  mte_pool2d_params p = pool_params(op, kernel, stride, padding, Pair{1, 1}, true);
  p.ceil_mode = ceil_mode, p.count_include_pad = count_include_pad;
  p.divisor_override = as_divisor(op, divisor);
  const int64_t N = x.shape(0), C = x.shape(1), H = x.shape(2), W = x.shape(3);
  const auto out = pooled_size(op, x, p);
  const int64_t Ho = out[0], Wo = out[1];
  py::array y = output_array(op, out_obj, {N, C, Ho, Wo}, {&x});
  float *yp = static_cast<float *>(y.mutable_data());
  run_kernel(op, [&] { return mte_avg_pool2d(&p, N, C, H, W, fptr(x), yp); });
  return y;
}

py::array avg_pool2d_backward(py::handle gy_obj, py::handle shape_obj, py::handle kernel,
                              py::handle stride, py::handle padding, bool count_include_pad,
                              py::handle divisor) {
  const char *op = "avg_pool2d_backward";
  py::array gy = checked_array(op, "grad_y", gy_obj, 4, 4);
  auto s = input_shape(op, shape_obj, gy);
  mte_pool2d_params p = pool_params(op, kernel, stride, padding, Pair{1, 1}, true);
  p.count_include_pad = count_include_pad;
  p.divisor_override = as_divisor(op, divisor);
  py::array_t<float> gx = new_f32({s[0], s[1], s[2], s[3]});
  float *gxp = gx.mutable_data();
  run_kernel(op, [&] {
    return mte_avg_pool2d_backward(&p, s[0], s[1], s[2], s[3], gy.shape(2), gy.shape(3),
                                   fptr(gy), gxp);
  });
  return std::move(gx);
}

}  // namespace

void mte_bind_pool(pybind11::module_ &m) {
  namespace py = pybind11;
  m.def("max_pool2d", &max_pool2d, py::arg("x"), py::arg("kernel"), py::arg("stride"),
        py::arg("padding"), py::arg("dilation"), py::arg("ceil_mode"),
        py::arg("out") = py::none(), py::arg("return_indices") = true,
        "max_pool2d(x, kernel, stride, padding, dilation, ceil_mode, out=None,\n"
        "           return_indices=True) -> (y, indices), or y if not return_indices\n\n"
        "As numpy_backend.max_pool2d: indices (int64) are flat h*W + w positions in each plane;\n"
        "padding (at most kernel / 2) never wins, the first maximum wins ties, a window with\n"
        "NaN gives NaN at its last NaN. return_indices=False (inference) computes no indices\n"
        "and returns y alone. out: an array to write y into (y's shape, C-contiguous\n"
        "float32, not overlapping x), which is then what is returned as y.");
  m.def("max_pool2d_backward", &max_pool2d_backward, py::arg("grad_y"), py::arg("indices"),
        py::arg("x_shape"),
        "max_pool2d_backward(grad_y, indices, x_shape) -> grad_x: grad_y scattered (added) at\n"
        "indices; an index outside its plane raises ValueError.");
  m.def("avg_pool2d", &avg_pool2d, py::arg("x"), py::arg("kernel"), py::arg("stride"),
        py::arg("padding"), py::arg("ceil_mode"), py::arg("count_include_pad"),
        py::arg("divisor_override"),
        py::arg("out") = py::none(),
        "avg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad,\n"
        "           divisor_override, out=None) -> y, as numpy_backend.avg_pool2d.\n"
        "out: an array to write y into (y's shape, C-contiguous float32, not overlapping x),\n"
        "returned as y.");
  m.def("avg_pool2d_backward", &avg_pool2d_backward, py::arg("grad_y"), py::arg("x_shape"),
        py::arg("kernel"), py::arg("stride"), py::arg("padding"), py::arg("count_include_pad"),
        py::arg("divisor_override"),
        "avg_pool2d_backward(grad_y, x_shape, kernel, stride, padding, count_include_pad,\n"
        "                    divisor_override) -> grad_x, as numpy_backend.avg_pool2d_backward.");
}
