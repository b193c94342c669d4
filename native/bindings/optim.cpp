// optim.cpp - bindings for the fused optimizer updates (mte_optim.h): sgd_step, adam_step.
//
// Same rules as every binding file: float32 C-contiguous arrays used in place, dtype errors
// raise TypeError, shape/aliasing/read-only errors ValueError, the GIL is released while the
// kernel runs. Every array must have the parameter's shape; the state arrays and the
// parameter are written in place, the gradient only read; no two may share memory. All checks
// happen before anything is written, so bad input changes nothing.
#include <string>
#include <vector>

#include "common.h"
#include "mte_optim.h"

namespace {

using namespace mte_py;

constexpr int kMaxDims = 64;

// the parameter array, checked; `writeable` for what the kernel writes
py::array param_like(const char *op, const char *name, py::handle obj, const py::array *like,
                     bool writeable) {
  py::array a = checked_array(op, name, obj, 0, kMaxDims);
  if (like) {
    bool same = a.ndim() == like->ndim();
    for (py::ssize_t d = 0; same && d < a.ndim(); ++d) same = a.shape(d) == like->shape(d);
    if (!same)
      throw py::value_error(std::string(op) + ": " + name + " has shape (" + shape_str(a) +
                            ") but param has shape (" + shape_str(*like) +
                            "); every array must have the parameter's shape");
  }
  if (writeable && !a.writeable())
    throw py::value_error(std::string(op) + ": " + name + " is read-only");
  return a;
}

void no_overlap(const char *op, const std::vector<std::pair<const char *, py::array>> &arrays) {
  for (size_t i = 0; i < arrays.size(); ++i)
    for (size_t j = i + 1; j < arrays.size(); ++j)
      if (overlaps(arrays[i].second, arrays[j].second))
        throw py::value_error(std::string(op) + ": " + arrays[i].first + " and " +
                              arrays[j].first + " share memory; give each its own array");
}

void sgd_step(py::handle param_obj, py::handle grad_obj, py::handle buf_obj, double lr,
              double momentum, double dampening, double weight_decay, bool nesterov,
              bool maximize, bool first_step) {
  const char *op = "sgd_step";
  py::array p = param_like(op, "param", param_obj, nullptr, true);
  py::array g = param_like(op, "grad", grad_obj, &p, false);
  std::vector<std::pair<const char *, py::array>> all{{"param", p}, {"grad", g}};
  float *buf = nullptr;
  if (buf_obj.is_none()) {
    if (momentum != 0.0)
      throw py::value_error("sgd_step: momentum != 0 needs a momentum buffer (buf), got None");
  } else {
    py::array b = param_like(op, "buf", buf_obj, &p, true);
    all.emplace_back("buf", b);
    buf = static_cast<float *>(b.mutable_data());
  }
  no_overlap(op, all);
  float *P = static_cast<float *>(p.mutable_data());
  const int64_t n = static_cast<int64_t>(p.size());
  run_kernel(op, [&] {
    return mte_sgd_step(n, P, fptr(g), buf, lr, momentum, dampening, weight_decay, nesterov,
                        maximize, first_step);
  });
}

void adam_step(py::handle param_obj, py::handle grad_obj, py::handle m_obj, py::handle v_obj,
               py::handle vmax_obj, double step, double lr, double beta1, double beta2,
               double eps, double weight_decay, bool decoupled_weight_decay, bool maximize) {
  const char *op = "adam_step";
  if (!(step >= 1.0))
    throw py::value_error("adam_step: step must be >= 1 (the count after this update), got " +
                          std::to_string(step));
  py::array p = param_like(op, "param", param_obj, nullptr, true);
  py::array g = param_like(op, "grad", grad_obj, &p, false);
  py::array m = param_like(op, "exp_avg", m_obj, &p, true);
  py::array v = param_like(op, "exp_avg_sq", v_obj, &p, true);
  std::vector<std::pair<const char *, py::array>> all{
      {"param", p}, {"grad", g}, {"exp_avg", m}, {"exp_avg_sq", v}};
  float *vmax = nullptr;
  if (!vmax_obj.is_none()) {
    py::array vm = param_like(op, "max_exp_avg_sq", vmax_obj, &p, true);
    all.emplace_back("max_exp_avg_sq", vm);
    vmax = static_cast<float *>(vm.mutable_data());
  }
  no_overlap(op, all);
  float *P = static_cast<float *>(p.mutable_data());
  float *M = static_cast<float *>(m.mutable_data());
  float *V = static_cast<float *>(v.mutable_data());
  const int64_t n = static_cast<int64_t>(p.size());
  run_kernel(op, [&] {
    return mte_adam_step(n, P, fptr(g), M, V, vmax, step, lr, beta1, beta2, eps, weight_decay,
                         decoupled_weight_decay, maximize);
  });
}

}  // namespace

void mte_bind_optim(pybind11::module_ &m) {
  m.def("sgd_step", &sgd_step, py::arg("param"), py::arg("grad"), py::arg("buf"),
        py::arg("lr"), py::arg("momentum"), py::arg("dampening"), py::arg("weight_decay"),
        py::arg("nesterov"), py::arg("maximize"), py::arg("first_step"),
        "sgd_step(param, grad, buf, lr, momentum, dampening, weight_decay, nesterov, maximize,\n"
        "         first_step) -> None\n\n"
        "One SGD update of param (and of the momentum buffer buf) in place, PyTorch's math:\n"
        "g = -grad if maximize; g += weight_decay * param; buf = g (first_step) or\n"
        "momentum * buf + (1 - dampening) * g; g = g + momentum * buf (nesterov) or buf;\n"
        "param -= lr * g. buf may be None when momentum == 0. float32 C-contiguous arrays of\n"
        "param's shape, not sharing memory.");
  m.def("adam_step", &adam_step, py::arg("param"), py::arg("grad"), py::arg("exp_avg"),
        py::arg("exp_avg_sq"), py::arg("max_exp_avg_sq"), py::arg("step"), py::arg("lr"),
        py::arg("beta1"), py::arg("beta2"), py::arg("eps"), py::arg("weight_decay"),
        py::arg("decoupled_weight_decay"), py::arg("maximize"),
        "adam_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, lr, beta1, beta2,\n"
        "          eps, weight_decay, decoupled_weight_decay, maximize) -> None\n\n"
        "One Adam (AdamW when decoupled_weight_decay) update in place at step count `step`\n"
        "(>= 1, after incrementing); AMSGrad when max_exp_avg_sq is an array (None: off).\n"
        "float32 C-contiguous arrays of param's shape, not sharing memory.");
}
