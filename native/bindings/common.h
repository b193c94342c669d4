// common.h - what every binding file shares: the argument parsers that turn bad Python input
// into TypeError / ValueError with a readable message, and libmte status codes into Python
// exceptions. One version of each, used by all binding files:
//
//   arrays       checked_array (float32), checked_int8, checked_int32, optional_vector, overlaps, new_f32, fptr, shape_str, dims_str
//   integers     as_int, as_ints (an int or a sequence), as_pair, as_shape4, pair_str
//   activations  as_activation ("none", "relu", "relu6", "gelu", "gelu_tanh", "silu",
//                "hardswish")
//   outputs      output_array<T> (a new array, or a caller's `out` checked and written in
//                place; T = float by default, int8_t / float for the int8 kernels)
//   kernels      run_kernel / without_gil (the call with the GIL released), raise_status
//
// Errors: a wrong type (not an ndarray, not float32, not an int) is TypeError; a wrong rank,
// size, value or layout is ValueError. Every message starts with the operation's name.
//
// Each operation group's bindings live in their own file (conv.cpp, depthwise.cpp, pool.cpp,
// ...), which defines `void mte_bind_<group>(pybind11::module_ &m)`; module.cpp calls them.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <array>
#include <cstdint>
#include <initializer_list>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "mte.h"

namespace mte_py {

namespace py = pybind11;

constexpr int kNpyAligned = 0x0100;  // NPY_ARRAY_ALIGNED

using Pair = std::array<int64_t, 2>;

// ------------------------------------------------------------------------ messages

// "2x3x4" ("scalar" for 0-D)
inline std::string shape_str(const py::array &a) {
  std::ostringstream s;
  for (py::ssize_t d = 0; d < a.ndim(); ++d) s << (d ? "x" : "") << a.shape(d);
  if (a.ndim() == 0) s << "scalar";
  return s.str();
}

inline std::string dims_str(std::initializer_list<int64_t> dims) {
  std::ostringstream s;
  bool first = true;
  for (int64_t v : dims) s << (first ? "" : "x") << v, first = false;
  return s.str();
}

inline std::string pair_str(const Pair &p) {
  return "(" + std::to_string(p[0]) + ", " + std::to_string(p[1]) + ")";
}

inline std::string type_name(py::handle obj) {
  return py::str(py::type::handle_of(obj).attr("__name__"));
}

// "op: name" + rest
inline std::string msg(const char *op, const char *name, const std::string &rest) {
  return std::string(op) + ": " + name + rest;
}

// ------------------------------------------------------------------------ arrays

// `obj` must be an ndarray of dtype T (its name: `dtype`, and `fix`: how to get one) with ndim
// in [min_ndim, max_ndim], C-contiguous and aligned.
template <class T>
inline py::array checked_array_of(const char *op, const char *name, py::handle obj, int min_ndim,
                                  int max_ndim, const char *dtype, const char *fix) {
  if (!py::isinstance<py::array>(obj))
    throw py::type_error(msg(op, name, std::string(" must be a numpy.ndarray of ") + dtype +
                                           ", got " + type_name(obj)));
  auto arr = py::reinterpret_borrow<py::array>(obj);
  if (!arr.dtype().equal(py::dtype::of<T>()))
    throw py::type_error(msg(op, name, std::string(" must have dtype ") + dtype + ", got " +
                                           std::string(py::str(arr.dtype())) +
                                           (std::is_same<T, float>::value
                                                ? std::string()
                                                : " with shape (" + shape_str(arr) + ")") +
                                           " (" + fix + ")"));
  if (arr.ndim() < min_ndim || arr.ndim() > max_ndim) {
    std::ostringstream s;
    s << op << ": " << name << " must be ";
    if (min_ndim == max_ndim)
      s << min_ndim << "-D";
    else
      s << min_ndim << "-D to " << max_ndim << "-D";
    s << ", got " << arr.ndim() << "-D with shape (" << shape_str(arr) << ")";
    throw py::value_error(s.str());
  }
  if (!(arr.flags() & py::array::c_style))
    throw py::value_error(msg(op, name, " must be C-contiguous (use np.ascontiguousarray)"));
  if (!(arr.flags() & kNpyAligned))
    throw py::value_error(msg(op, name, " must be aligned to its dtype (copy it with np.array)"));
  return arr;
}

// `obj` must be a float32 ndarray with ndim in [min_ndim, max_ndim], C-contiguous and aligned.
inline py::array checked_array(const char *op, const char *name, py::handle obj, int min_ndim,
                               int max_ndim) {
  return checked_array_of<float>(op, name, obj, min_ndim, max_ndim, "float32",
                                 "convert with .astype(np.float32)");
}

// the same for the int8 kernels' int8 tensors and int32 per-channel vectors
inline py::array checked_int8(const char *op, const char *name, py::handle obj, int min_ndim,
                              int max_ndim) {
  return checked_array_of<int8_t>(op, name, obj, min_ndim, max_ndim, "int8",
                                  "quantize float tensors first with quantize");
}
inline py::array checked_int32(const char *op, const char *name, py::handle obj, int min_ndim,
                               int max_ndim) {
  return checked_array_of<int32_t>(op, name, obj, min_ndim, max_ndim, "int32",
                                   "pass np.asarray(v, np.int32)");
}

// None -> nullptr; else a checked 1-D float32 array of n values (a bias), kept alive in
// `keep` while the kernel reads it. `per` says what one value is for, e.g. "output channel".
inline const float *optional_vector(const char *op, const char *name, py::handle obj, int64_t n,
                                    py::array &keep, const std::string &per) {
  if (obj.is_none()) return nullptr;
  keep = checked_array(op, name, obj, 1, 1);
  if (keep.shape(0) != n)
    throw py::value_error(msg(op, name, " has shape (" + shape_str(keep) + "), expected (" +
                                            std::to_string(n) + ",): one value per " + per));
  return static_cast<const float *>(keep.data());
}

inline bool overlaps(const py::array &x, const py::array &y) {
  if (x.nbytes() == 0 || y.nbytes() == 0) return false;
  auto xa = reinterpret_cast<std::uintptr_t>(x.data());
  auto ya = reinterpret_cast<std::uintptr_t>(y.data());
  return xa < ya + static_cast<std::uintptr_t>(y.nbytes()) &&
         ya < xa + static_cast<std::uintptr_t>(x.nbytes());
}

// a new (uninitialised) C-contiguous float32 array of this shape
inline py::array_t<float> new_f32(std::initializer_list<int64_t> shape) {
  return py::array_t<float>(std::vector<py::ssize_t>(shape.begin(), shape.end()));
}

inline const float *fptr(const py::array &a) { return static_cast<const float *>(a.data()); }

// The result array of a kernel: new when `out` is None, else `out` itself, which must be a
// writeable, C-contiguous, aligned array of dtype T and exactly `shape` that shares no memory
// with any of `inputs` (the kernel writes it while it reads them).
template <class T = float>
inline py::array output_array(const char *op, py::handle out, std::initializer_list<int64_t> shape,
                              std::initializer_list<const py::array *> inputs) {
  if (out.is_none()) return py::array_t<T>(std::vector<py::ssize_t>(shape.begin(), shape.end()));
  const int nd = static_cast<int>(shape.size());
  static_assert(std::is_same<T, float>::value || std::is_same<T, int8_t>::value,
                "float32 or int8 results");
  py::array y = std::is_same<T, int8_t>::value ? checked_int8(op, "out", out, nd, nd)
                                               : checked_array(op, "out", out, nd, nd);
  size_t k = 0;
  for (int64_t d : shape)
    if (y.shape(k++) != d)
      throw py::value_error(msg(op, "out", " has shape (" + shape_str(y) + "), expected (" +
                                               dims_str(shape) + ")"));
  if (!y.writeable()) throw py::value_error(msg(op, "out", " is read-only"));
  for (const py::array *a : inputs)
    if (a && a->ptr() && overlaps(y, *a))
      throw py::value_error(msg(op, "out", " shares memory with an input; pass a separate "
                                           "array"));
  return y;
}

// ------------------------------------------------------------------------ integers

// a Python or numpy integer (not bool, not float) that fits in int64
inline int64_t as_int(const char *op, const char *name, py::handle obj) {
  PyObject *o = obj.ptr();
  if (PyBool_Check(o) || PyFloat_Check(o) || !PyIndex_Check(o))
    throw py::type_error(msg(op, name, " must be an int, got " + type_name(obj)));
  PyObject *i = PyNumber_Index(o);
  if (!i) throw py::error_already_set();
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(i, &overflow);
  Py_DECREF(i);
  if (overflow || (v == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    throw py::value_error(msg(op, name, " is out of range"));
  }
  return static_cast<int64_t>(v);
}

inline bool is_sequence(py::handle obj) {
  return py::isinstance<py::sequence>(obj) && !py::isinstance<py::str>(obj);
}

// an int (repeated n1 times) or a sequence of n1 or n2 ints
inline std::vector<int64_t> as_ints(const char *op, const char *name, py::handle obj, size_t n1,
                                    size_t n2) {
  if (!is_sequence(obj)) return std::vector<int64_t>(n1, as_int(op, name, obj));
  std::vector<int64_t> v;
  for (auto h : py::reinterpret_borrow<py::sequence>(obj)) v.push_back(as_int(op, name, h));
  if (v.size() != n1 && v.size() != n2) {
    std::ostringstream s;
    s << op << ": " << name << " must have " << n1;
    if (n2 != n1) s << " or " << n2;
    s << " values, got " << v.size();
    throw py::value_error(s.str());
  }
  return v;
}

// an int or a sequence of two ints -> (a, b)
inline Pair as_pair(const char *op, const char *name, py::handle obj) {
  auto v = as_ints(op, name, obj, 2, 2);
  return {v[0], v[1]};
}

// a sequence of 4 sizes >= 0 (N, C, H, W)
inline std::array<int64_t, 4> as_shape4(const char *op, const char *name, py::handle obj) {
  if (!is_sequence(obj))
    throw py::type_error(msg(op, name, " must be a sequence of 4 ints, got " + type_name(obj)));
  auto v = as_ints(op, name, obj, 4, 4);
  for (int64_t x : v)
    if (x < 0) throw py::value_error(msg(op, name, " has a negative size"));
  return {v[0], v[1], v[2], v[3]};
}

// ------------------------------------------------------------------------ activations

// mte_activation's names, by value; a binding accepts those up to some `last`
inline constexpr const char *kActivations[] = {"none", "relu",      "relu6", "gelu",
                                               "gelu_tanh", "silu", "hardswish"};
inline constexpr int kLastActivation = MTE_ACT_HARDSWISH;
static_assert(sizeof kActivations / sizeof kActivations[0] == kLastActivation + 1,
              "one name per mte_activation");

// "None, 'none', 'relu' or 'relu6'": what an activation argument may be
inline std::string activation_list(int last, bool none_ok) {
  std::string list = none_ok ? "None, " : "";
  for (int a = 0; a <= last; ++a)
    list += std::string(a == 0 ? "" : a == last ? " or " : ", ") + "'" + kActivations[a] + "'";
  return list;
}

// an activation name -> mte_activation (one of the first last+1)
inline int as_activation(const char *op, const char *name, const std::string &act,
                         int last = kLastActivation, bool none_ok = false) {
  for (int a = 0; a <= last; ++a)
    if (act == kActivations[a]) return a;
  throw py::value_error(
      msg(op, name, " must be " + activation_list(last, none_ok) + ", got '" + act + "'"));
}

// the same for a str or None (= "none")
inline int as_activation(const char *op, const char *name, py::handle act,
                         int last = kLastActivation) {
  if (act.is_none()) return MTE_ACT_NONE;
  if (!py::isinstance<py::str>(act))
    throw py::type_error(
        msg(op, name, " must be " + activation_list(last, true) + ", got " + type_name(act)));
  return as_activation(op, name, py::cast<std::string>(act), last, true);
}

// ------------------------------------------------------------------------ kernels

inline void raise_status(const char *op, int st) {
  if (st == MTE_OK) return;
  std::string m = std::string(op) + ": " + mte_status_string(st);
  if (st == MTE_ENOMEM) throw std::bad_alloc();  // pybind11 maps it to MemoryError
  if (st == MTE_EINVAL || st == MTE_EOVERFLOW) throw py::value_error(m);
  throw std::runtime_error(m);
}

// f() (a libmte call returning its status) with the GIL released: the arrays it reads are
// held by the caller, so other Python threads may run meanwhile
template <class F>
int without_gil(F &&f) {
  py::gil_scoped_release nogil;
  return std::forward<F>(f)();
}

// without_gil, then its status raised as an exception
template <class F>
void run_kernel(const char *op, F &&f) {
  raise_status(op, without_gil(std::forward<F>(f)));
}

}  // namespace mte_py

// the binding functions of each operation group (one file each)
void mte_bind_conv(pybind11::module_ &m);
void mte_bind_depthwise(pybind11::module_ &m);
void mte_bind_pool(pybind11::module_ &m);
void mte_bind_winograd(pybind11::module_ &m);
void mte_bind_optim(pybind11::module_ &m);
void mte_bind_transformer(pybind11::module_ &m);
void mte_bind_quant(pybind11::module_ &m);
void mte_bind_half(pybind11::module_ &m);     // half.cpp: bfloat16 / float16 kernels
void mte_bind_runtime(pybind11::module_ &m);  // runtime.cpp: _C.RuntimeModel
