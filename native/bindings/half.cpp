// half.cpp - bindings of the half-precision kernels (include/mte_bf16.h): _C.half_gemm,
// _C.half_conv2d, _C.half_to_float32, _C.float32_to_half, _C.half_gemm_path,
// _C.bf16_peak_gflops, _C.set_bf16_amx.
//
// The arrays are numpy float16 or ml_dtypes.bfloat16 (both 2 bytes a value), C-contiguous,
// used in place. A result has the inputs' dtype (rounded once, to nearest even) unless
// out_float32=True; biases are float32. The dtype object of a result is the input's own, so
// nothing here imports ml_dtypes.
#include <string>
#include <vector>

#include "common.h"
#include "mte_bf16.h"

namespace {

using namespace mte_py;

// MTE_DT_BF16 / MTE_DT_F16 for a bfloat16 / float16 dtype, else -1
int half_code(const py::dtype &dt) {
  if (dt.itemsize() != 2) return -1;
  const std::string name = py::str(dt.attr("name"));
  return name == "bfloat16" ? MTE_DT_BF16 : name == "float16" ? MTE_DT_F16 : -1;
}

// `obj`: a C-contiguous, aligned bfloat16 or float16 ndarray of ndim `nd`
py::array checked_half(const char *op, const char *name, py::handle obj, int nd) {
  if (!py::isinstance<py::array>(obj))
    throw py::type_error(msg(op, name, " must be a numpy.ndarray of bfloat16 or float16, got " +
                                           type_name(obj)));
  auto arr = py::reinterpret_borrow<py::array>(obj);
  if (half_code(arr.dtype()) < 0)
    throw py::type_error(msg(op, name, " must have dtype bfloat16 (ml_dtypes) or float16, got " +
                                           std::string(py::str(arr.dtype())) +
                                           " (float32 arrays go to the float32 kernels)"));
  if (arr.ndim() != nd)
    throw py::value_error(msg(op, name, " must be " + std::to_string(nd) + "-D, got " +
                                           std::to_string(arr.ndim()) + "-D with shape (" +
                                           shape_str(arr) + ")"));
  if (!(arr.flags() & py::array::c_style))
    throw py::value_error(msg(op, name, " must be C-contiguous (use np.ascontiguousarray)"));
  if (!(arr.flags() & kNpyAligned))
    throw py::value_error(msg(op, name, " must be aligned to its dtype (copy it with np.array)"));
  return arr;
}

const uint16_t *u16(const py::array &a) { return static_cast<const uint16_t *>(a.data()); }

void same_dtype(const char *op, const py::array &a, const py::array &b, const char *an,
                const char *bn) {
  if (!a.dtype().equal(b.dtype()))
    throw py::type_error(std::string(op) + ": " + an + " and " + bn + " must have one dtype, got " +
                         std::string(py::str(a.dtype())) + " and " +
                         std::string(py::str(b.dtype())) + " (cast one with .astype)");
}

py::array new_result(const py::array &like, bool out_float32, std::vector<py::ssize_t> shape) {
  if (out_float32) return py::array_t<float>(shape);
  return py::array(like.dtype(), shape);
}

py::array half_gemm(py::handle a_obj, py::handle b_obj, bool trans_a, bool trans_b,
                    py::handle bias_obj, const std::string &bias_mode, bool out_float32) {
  const char *op = "half_gemm";
  py::array a = checked_half(op, "a", a_obj, 2), b = checked_half(op, "b", b_obj, 2);
  same_dtype(op, a, b, "a", "b");
  const int64_t M = trans_a ? a.shape(1) : a.shape(0), K = trans_a ? a.shape(0) : a.shape(1);
  const int64_t Kb = trans_b ? b.shape(1) : b.shape(0), N = trans_b ? b.shape(0) : b.shape(1);
  if (K != Kb)
    throw py::value_error(std::string(op) + ": shapes cannot be multiplied (" +
                          dims_str({M, K}) + " and " + dims_str({Kb, N}) + " after transposes)");
  if (bias_mode != "col" && bias_mode != "row")
    throw py::value_error(std::string(op) + ": bias_mode must be 'col' (N values) or 'row' "
                          "(M values), got '" + bias_mode + "'");
  const bool col = bias_mode == "col";
  py::array bias;
  const float *bp = optional_vector(op, "bias", bias_obj, col ? N : M, bias,
                                    col ? "column of the result" : "row of the result");
  const int dt = half_code(a.dtype());
  py::array y = new_result(a, out_float32, {M, N});
  void *yp = y.mutable_data();
  const int ydt = out_float32 ? MTE_DT_F32 : dt;
  const int64_t lda = std::max<int64_t>(1, a.shape(1)), ldb = std::max<int64_t>(1, b.shape(1));
  run_kernel(op, [&] {
    return mte_half_gemm(dt, ydt, trans_a, trans_b, M, N, K, 1.0f, u16(a), lda, u16(b), ldb,
                         0.0f, yp, std::max<int64_t>(1, N), bp,
                         col ? MTE_BIAS_PER_COL : MTE_BIAS_PER_ROW, nullptr);
  });
  return y;
}

std::vector<int64_t> pos_ints(const char *op, const char *name, py::handle obj, size_t n1,
                              size_t n2, int64_t lo) {
  std::vector<int64_t> v = as_ints(op, name, obj, n1, n2);
  for (int64_t x : v)
    if (x < lo || x > (int64_t(1) << 30))
      throw py::value_error(msg(op, name, " values must be in [" + std::to_string(lo) +
                                              ", 2**30], got " + std::to_string(x)));
  return v;
}

py::array half_conv2d(py::handle x_obj, py::handle w_obj, py::handle bias_obj,
                      py::handle stride, py::handle padding, py::handle dilation,
                      int64_t groups, bool out_float32) {
  const char *op = "half_conv2d";
  py::array x = checked_half(op, "x", x_obj, 4), w = checked_half(op, "w", w_obj, 4);
  same_dtype(op, x, w, "x", "w");
  auto s = pos_ints(op, "stride", stride, 2, 2, 1);
  auto p = pos_ints(op, "padding", padding, 4, 2, 0);
  if (p.size() == 2) p = {p[0], p[0], p[1], p[1]};  // (ph, pw) -> symmetric
  auto d = pos_ints(op, "dilation", dilation, 2, 2, 1);
  const int64_t N = x.shape(0), C = x.shape(1), H = x.shape(2), W = x.shape(3);
  const int64_t O = w.shape(0), KH = w.shape(2), KW = w.shape(3);
  if (groups < 1 || C % groups || O % groups || w.shape(1) != C / groups)
    throw py::value_error(std::string(op) + ": groups=" + std::to_string(groups) +
                          " must divide C=" + std::to_string(C) + " and O=" + std::to_string(O) +
                          ", and w must have C/groups input channels, got w (" + shape_str(w) +
                          ")");
  const int64_t eh = H + p[0] + p[1] - d[0] * (KH - 1) - 1, ew = W + p[2] + p[3] - d[1] * (KW - 1) - 1;
  if (eh < 0 || ew < 0 || H < 1 || W < 1 || KH < 1 || KW < 1)
    throw py::value_error(std::string(op) + ": the (dilated) kernel " + dims_str({KH, KW}) +
                          " does not fit the padded input " + dims_str({H, W}));
  py::array bias;
  const float *bp = optional_vector(op, "bias", bias_obj, O, bias, "output channel");
  const int64_t HO = eh / s[0] + 1, WO = ew / s[1] + 1;
  const int dt = half_code(x.dtype());
  py::array y = new_result(x, out_float32, {N, O, HO, WO});
  void *yp = y.mutable_data();
  run_kernel(op, [&] {
    return mte_half_conv2d(dt, out_float32 ? MTE_DT_F32 : dt, N, C, H, W, u16(x), O, KH, KW,
                           u16(w), bp, s[0], s[1], p[0], p[1], p[2], p[3], d[0], d[1], groups,
                           yp, nullptr);
  });
  return y;
}

py::array half_to_float32(py::handle x_obj) {
  if (!py::isinstance<py::array>(x_obj))
    throw py::type_error("half_to_float32: x must be a numpy.ndarray, got " + type_name(x_obj));
  py::array x = checked_half("half_to_float32", "x", x_obj,
                             static_cast<int>(py::reinterpret_borrow<py::array>(x_obj).ndim()));
  std::vector<py::ssize_t> shape(x.shape(), x.shape() + x.ndim());
  py::array_t<float> y(shape);
  float *yp = y.mutable_data();
  const int dt = half_code(x.dtype());
  run_kernel("half_to_float32", [&] { return mte_half_to_f32(dt, u16(x), yp, x.size()); });
  return y;
}

py::array float32_to_half(py::handle x_obj, py::handle dtype_obj) {
  const char *op = "float32_to_half";
  py::array x = checked_array(op, "x", x_obj, 0, 32);
  py::dtype dt = py::dtype::from_args(py::reinterpret_borrow<py::object>(dtype_obj));
  const int code = half_code(dt);
  if (code < 0)
    throw py::type_error(std::string(op) + ": dtype must be bfloat16 (ml_dtypes) or float16, got " +
                         std::string(py::str(dt)));
  std::vector<py::ssize_t> shape(x.shape(), x.shape() + x.ndim());
  py::array y(dt, shape);
  uint16_t *yp = static_cast<uint16_t *>(y.mutable_data());
  run_kernel(op, [&] { return mte_f32_to_half(code, fptr(x), yp, x.size()); });
  return y;
}

std::string gemm_path(py::handle dtype_obj) {
  py::dtype dt = py::dtype::from_args(py::reinterpret_borrow<py::object>(dtype_obj));
  const int code = half_code(dt);
  if (code < 0)
    throw py::type_error("half_gemm_path: dtype must be bfloat16 (ml_dtypes) or float16, got " +
                         std::string(py::str(dt)));
  return mte_half_gemm_path(code);
}

}  // namespace

void mte_bind_half(py::module_ &m) {
  m.def("half_gemm", &half_gemm, py::arg("a"), py::arg("b"), py::arg("trans_a") = false,
        py::arg("trans_b") = false, py::arg("bias") = py::none(), py::arg("bias_mode") = "col",
        py::arg("out_float32") = false,
        "op(a) @ op(b) (+ bias) for bfloat16 or float16 a, b (one dtype): float32 products\n"
        "and sums, the result rounded once to the inputs' dtype (float32 with\n"
        "out_float32=True). bias: float32, N values ('col') or M ('row').");
  m.def("half_conv2d", &half_conv2d, py::arg("x"), py::arg("w"), py::arg("bias") = py::none(),
        py::arg("stride") = 1, py::arg("padding") = 0, py::arg("dilation") = 1,
        py::arg("groups") = 1, py::arg("out_float32") = false,
        "conv2d (NCHW, OIHW) of bfloat16 or float16 x, w through the half-precision GEMM\n"
        "(im2col on the 16-bit values); padding: int, (ph, pw) or (top, bottom, left, right).");
  m.def("half_to_float32", &half_to_float32, py::arg("x"),
        "x (bfloat16 or float16, any shape) widened to float32 (exact).");
  m.def("float32_to_half", &float32_to_half, py::arg("x"), py::arg("dtype"),
        "float32 x rounded to bfloat16 or float16 (`dtype`), to nearest even.");
  m.def("half_gemm_path", &gemm_path, py::arg("dtype"),
        "What half_gemm runs now for this dtype, e.g. 'avx512_bf16 vdpbf16ps',\n"
        "'avx512 widen+sgemm'.");
  m.def("set_bf16_amx", [](bool allowed) { return mte_set_bf16_amx(allowed) != 0; },
        py::arg("allowed"),
        "Allow (default) or forbid AMX (TDPBF16PS) for bf16 GEMMs where the CPU has it;\n"
        "forbidden, they take the next path (VDPBF16PS, else widening). Returns the previous\n"
        "setting.");
  m.def("bf16_peak_gflops", [](double seconds) {
          py::gil_scoped_release nogil;
          return mte_bf16_peak_gflops(seconds);
        }, py::arg("seconds") = 0.2,
        "One core's bf16 dot-product peak (GFLOP/s; VDPBF16PS / BFDOT), timed over ~seconds;\n"
        "the fp32 FMA peak where the CPU has no bf16 arithmetic.");
}
