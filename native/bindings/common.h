// common.h - what every binding file shares: argument checks that turn bad numpy input into
// TypeError/ValueError, and libmte status codes into Python exceptions.
//
// A kernel family's bindings live in their own file (conv.cpp, depthwise.cpp, ...), which
// defines `void mte_bind_<family>(pybind11::module_ &m)`; module.cpp calls each of them.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>

#include "mte.h"

namespace mte_py {

namespace py = pybind11;

constexpr int kNpyAligned = 0x0100;  // NPY_ARRAY_ALIGNED

inline std::string shape_str(const py::array &a) {
  std::ostringstream s;
  for (py::ssize_t d = 0; d < a.ndim(); ++d) s << (d ? "x" : "") << a.shape(d);
  if (a.ndim() == 0) s << "scalar";
  return s.str();
}

inline std::string type_name(py::handle obj) { return py::str(py::type::handle_of(obj).attr("__name__")); }

// `obj` must be a float32 ndarray with ndim in [min_ndim, max_ndim], C-contiguous and aligned.
inline py::array checked_array(const char *op, const char *name, py::handle obj, int min_ndim,
                        int max_ndim) {
  if (!py::isinstance<py::array>(obj))
    throw py::type_error(std::string(op) + ": " + name +
                         " must be a numpy.ndarray of float32, got " + type_name(obj));
  auto arr = py::reinterpret_borrow<py::array>(obj);
  if (!arr.dtype().equal(py::dtype::of<float>()))
    throw py::type_error(std::string(op) + ": " + name + " must have dtype float32, got " +
                         std::string(py::str(arr.dtype())) +
                         " (convert with .astype(np.float32))");
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
    throw py::value_error(std::string(op) + ": " + name +
                          " must be C-contiguous (use np.ascontiguousarray)");
  if (!(arr.flags() & kNpyAligned))
    throw py::value_error(std::string(op) + ": " + name +
                          " must be aligned to its dtype (copy it with np.array)");
  return arr;
}

inline bool overlaps(const py::array &x, const py::array &y) {
  if (x.nbytes() == 0 || y.nbytes() == 0) return false;
  auto xa = reinterpret_cast<std::uintptr_t>(x.data());
  auto ya = reinterpret_cast<std::uintptr_t>(y.data());
  return xa < ya + static_cast<std::uintptr_t>(y.nbytes()) &&
         ya < xa + static_cast<std::uintptr_t>(x.nbytes());
}

inline void raise_status(const char *op, int st) {
  if (st == MTE_OK) return;
  std::string msg = std::string(op) + ": " + mte_status_string(st);
  if (st == MTE_ENOMEM) throw std::bad_alloc();  // pybind11 maps it to MemoryError
  if (st == MTE_EINVAL || st == MTE_EOVERFLOW) throw py::value_error(msg);
  throw std::runtime_error(msg);
}

}  // namespace mte_py

// the binding functions of each kernel family (one file each)
void mte_bind_conv(pybind11::module_ &m);
void mte_bind_depthwise(pybind11::module_ &m);
void mte_bind_winograd(pybind11::module_ &m);
void mte_bind_optim(pybind11::module_ &m);
