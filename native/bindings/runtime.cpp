// runtime.cpp - the C runtime (include/mte_runtime.h) inside _C: _C.RuntimeModel(path) loads a
// .mte file with mte_model_load (RuntimeModel.from_bytes(data): one held in memory, as the graph
// executor hands it over), .run(list of arrays) runs it (.run_profiled also returns each
// node's start and duration from the runtime's per-node clock), and its properties describe it
// (.inputs, .outputs, .arena_bytes, .prepared_bytes, .kernels).
//
// Same rules as every binding file (common.h): inputs are used in place, never converted: a
// wrong dtype is TypeError, a wrong count, shape or layout ValueError, each message naming
// the input and what the model expects. A model's arena is its own, so one model runs one
// call at a time (a mutex; the GIL is released while it runs).
#include <pybind11/stl.h>

#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "common.h"
#include "mte_runtime.h"

namespace {

using namespace mte_py;

using Port = std::tuple<std::string, py::tuple, std::string>;  // (name, shape, dtype name)

std::string shape_text(int ndim, const int64_t *shape) {
  std::string s = "(";
  for (int d = 0; d < ndim; ++d) s += (d ? ", " : "") + std::to_string(shape[d]);
  return s + (ndim == 1 ? ",)" : ")");
}

py::tuple shape_tuple(int ndim, const int64_t *shape) {
  py::tuple t(ndim);
  for (int d = 0; d < ndim; ++d) t[d] = py::int_(shape[d]);
  return t;
}

class RuntimeModel {
 public:
  explicit RuntimeModel(const std::string &path) : path_(path) {
    char err[2048] = "";
    mte_model *m = nullptr;
    int st = without_gil([&] { return mte_model_load(path.c_str(), &m, err, sizeof err); });
    if (st != MTE_OK)
      throw py::value_error("RuntimeModel: " + path + ": " + mte_runtime_status_string(st) +
                            ": " + err);
    model_.reset(m);
  }

  // the same from a model file's bytes in memory (mte_model_load_memory copies them); `name`
  // stands for the path in messages and in .path
  RuntimeModel(const std::string &name, py::bytes data) : path_(name) {
    std::string_view view = data;
    char err[2048] = "";
    mte_model *m = nullptr;
    int st = without_gil([&] {
      return mte_model_load_memory(view.data(), view.size(), &m, err, sizeof err);
    });
    if (st != MTE_OK)
      throw py::value_error("RuntimeModel: " + name + ": " + mte_runtime_status_string(st) +
                            ": " + err);
    model_.reset(m);
  }

  std::vector<Port> inputs() const {
    std::vector<Port> out;
    for (int i = 0; i < mte_model_num_inputs(m()); ++i)
      out.emplace_back(mte_model_input_name(m(), i),
                       shape_tuple(mte_model_input_ndim(m(), i), mte_model_input_shape(m(), i)),
                       mte_dtype_name(mte_model_input_dtype(m(), i)));
    return out;
  }

  std::vector<Port> outputs() const {
    std::vector<Port> out;
    for (int i = 0; i < mte_model_num_outputs(m()); ++i)
      out.emplace_back(mte_model_output_name(m(), i),
                       shape_tuple(mte_model_output_ndim(m(), i), mte_model_output_shape(m(), i)),
                       mte_dtype_name(mte_model_output_dtype(m(), i)));
    return out;
  }

  std::vector<std::tuple<std::string, std::string, std::string>> kernels() const {
    std::vector<std::tuple<std::string, std::string, std::string>> out;
    for (int k = 0; k < mte_model_num_nodes(m()); ++k) {
      const char *kernel = mte_model_node_kernel(m(), k);
      out.emplace_back(mte_model_node_name(m(), k), mte_model_node_op(m(), k),
                       kernel ? kernel : "?");
    }
    return out;
  }

  int64_t arena_bytes() const { return mte_model_arena_bytes(m()); }
  int64_t prepared_bytes() const { return mte_model_prepared_bytes(m()); }
  const std::string &path() const { return path_; }

  py::list run(py::sequence arrays) { return run_impl(arrays, "run", nullptr); }

  // run once with the per-node clock on (mte_model_set_profiling): the outputs and, per node
  // in execution order, (name, op, start seconds since the run began, duration seconds)
  py::tuple run_profiled(py::sequence arrays) {
    std::vector<NodeTime> times;
    py::list outputs = run_impl(arrays, "run_profiled", &times);
    py::list rows;
    for (const NodeTime &t : times) rows.append(py::make_tuple(t.name, t.op, t.start, t.seconds));
    return py::make_tuple(outputs, rows);
  }

 private:
  struct NodeTime {
    std::string name, op;
    double start, seconds;
  };

  // check the inputs, allocate the outputs, run; with `times`, profiled (under the same lock,
  // so a concurrent plain run never sees the clock on)
  py::list run_impl(py::sequence arrays, const char *method, std::vector<NodeTime> *times) {
    const std::string where = std::string("RuntimeModel.") + method;
    const int n = mte_model_num_inputs(m());
    if (static_cast<int>(py::len(arrays)) != n)
      throw py::value_error(where + ": the model takes " + std::to_string(n) + " inputs (" +
                            names() + "), got " + std::to_string(py::len(arrays)));
    std::vector<py::array> ins;
    std::vector<const void *> in_ptrs(n + 1);
    for (int i = 0; i < n; ++i) {
      ins.push_back(checked_input(i, arrays[i]));
      in_ptrs[i] = ins.back().data();
    }
    py::list result;
    std::vector<void *> out_ptrs(mte_model_num_outputs(m()) + 1);
    for (int i = 0; i < mte_model_num_outputs(m()); ++i) {
      const int64_t *s = mte_model_output_shape(m(), i);
      std::vector<py::ssize_t> shape(s, s + mte_model_output_ndim(m(), i));
      py::array a(py::dtype(mte_dtype_name(mte_model_output_dtype(m(), i))), shape);
      out_ptrs[i] = a.mutable_data();
      result.append(a);
    }
    char err[2048] = "";
    int st = without_gil([&] {
      std::lock_guard<std::mutex> lock(mutex_);
      if (times) {
        int on = mte_model_set_profiling(m(), 1);
        if (on != MTE_OK) {
          snprintf(err, sizeof err, "cannot turn the per-node clock on");
          return on;
        }
      }
      int status = mte_model_run(m(), in_ptrs.data(), out_ptrs.data(), err, sizeof err);
      if (times) {
        for (int k = 0; status == MTE_OK && k < mte_model_num_nodes(m()); ++k) {
          double start = 0, seconds = 0;
          mte_model_node_last(m(), k, &start, &seconds);
          times->push_back({mte_model_node_name(m(), k), mte_model_node_op(m(), k), start,
                            seconds});
        }
        mte_model_set_profiling(m(), 0);
      }
      return status;
    });
    if (st != MTE_OK)
      throw std::runtime_error(where + ": " + mte_runtime_status_string(st) + ": " + err);
    return result;
  }

 private:
  struct Free {
    void operator()(mte_model *m) const { mte_model_free(m); }
  };

  mte_model *m() const { return model_.get(); }

  std::string names() const {
    std::string s;
    for (int i = 0; i < mte_model_num_inputs(m()); ++i)
      s += (i ? ", " : "") + std::string(mte_model_input_name(m(), i));
    return s;
  }

  // input i: an ndarray of exactly the model's dtype and shape, C-contiguous and aligned
  py::array checked_input(int i, py::handle obj) const {
    const std::string what = "RuntimeModel.run: input " + std::to_string(i) + " '" +
                             mte_model_input_name(m(), i) + "'";
    const int ndim = mte_model_input_ndim(m(), i);
    const int64_t *shape = mte_model_input_shape(m(), i);
    const std::string want = std::string(mte_dtype_name(mte_model_input_dtype(m(), i))) +
                             " with shape " + shape_text(ndim, shape);
    if (!py::isinstance<py::array>(obj))
      throw py::type_error(what + " must be a numpy.ndarray of " + want + ", got " +
                           type_name(obj));
    auto a = py::reinterpret_borrow<py::array>(obj);
    py::dtype dt(mte_dtype_name(mte_model_input_dtype(m(), i)));
    if (!a.dtype().equal(dt))
      throw py::type_error(what + " has dtype " + std::string(py::str(a.dtype())) +
                           ", the model expects " + want);
    bool same = a.ndim() == ndim;
    for (int d = 0; same && d < ndim; ++d) same = a.shape(d) == shape[d];
    if (!same)
      throw py::value_error(what + " has shape (" + shape_str(a) + "), the model expects " + want);
    if (!(a.flags() & py::array::c_style))
      throw py::value_error(what + " must be C-contiguous (use np.ascontiguousarray)");
    if (!(a.flags() & kNpyAligned))
      throw py::value_error(what + " must be aligned to its dtype (copy it with np.array)");
    return a;
  }

  std::string path_;
  std::unique_ptr<mte_model, Free> model_;
  std::mutex mutex_;
};

}  // namespace

void mte_bind_runtime(py::module_ &m) {
  py::class_<RuntimeModel>(m, "RuntimeModel",
                           "A .mte model loaded by the C runtime (mte_model_load): every node "
                           "prepared, its arena allocated. run() it on numpy arrays.")
      .def(py::init<const std::string &>(), py::arg("path"),
           "Load a .mte file; ValueError with the runtime's message if it is refused.")
      .def_static("from_bytes",
                  [](py::bytes data, const std::string &name) {
                    return std::make_unique<RuntimeModel>(name, data);
                  },
                  py::arg("data"), py::arg("name") = "<memory>",
                  "Load a model file held in memory (bytes); same checks and errors.")
      .def("run", &RuntimeModel::run, py::arg("inputs"),
           "Run on a list of arrays (the graph's inputs, in order: exact dtype and shape, "
           "C-contiguous); returns the list of output arrays.")
      .def("run_profiled", &RuntimeModel::run_profiled, py::arg("inputs"),
           "Run once with the runtime's per-node clock on: (outputs, [(node name, op, "
           "start seconds since the run began, duration seconds)] in execution order).")
      .def_property_readonly("inputs", &RuntimeModel::inputs,
                             "[(name, shape tuple, dtype name)] of the graph's inputs")
      .def_property_readonly("outputs", &RuntimeModel::outputs,
                             "[(name, shape tuple, dtype name)] of the graph's outputs")
      .def_property_readonly("arena_bytes", &RuntimeModel::arena_bytes)
      .def_property_readonly("prepared_bytes", &RuntimeModel::prepared_bytes)
      .def_property_readonly("kernels", &RuntimeModel::kernels,
                             "[(node name, op, kernel)] in execution order")
      .def_property_readonly("path", &RuntimeModel::path)
      .def("__repr__", [](const RuntimeModel &r) {
        return "<RuntimeModel '" + r.path() + "': " + std::to_string(r.inputs().size()) +
               " inputs, " + std::to_string(r.outputs().size()) + " outputs>";
      });
}
