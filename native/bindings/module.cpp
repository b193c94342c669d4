// module.cpp - minitorch_edge._C: the pybind11 bridge from numpy arrays to libmte.
//
// The rule of this layer (the backend contract, see README.md, "Architecture"): Python owns
// shapes, strides, views and broadcasting; the kernels get C-contiguous buffers and explicit
// sizes. So every function here first validates its arrays (dtype -> TypeError; rank,
// contiguity, sizes, aliasing -> ValueError; common.h), then hands raw pointers to the C
// library with the GIL released. Arrays are used in place (zero-copy); nothing here ever
// copies or converts silently.
//
// This file: the module, sgemm / matmul and the library-wide queries (ISA, dispatch table,
// threads, workspace); each kernel family's bindings are in their own file.
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "common.h"

namespace {

using namespace mte_py;

// ------------------------------------------------------------------------------ sgemm

py::array sgemm(py::handle a_obj, py::handle b_obj, bool trans_a, bool trans_b, float alpha,
                float beta, py::handle out_obj, py::handle bias_obj, const std::string &bias_mode,
                py::handle act_obj, py::handle res_obj) {
  py::array a = checked_array("sgemm", "a", a_obj, 2, 2);
  py::array b = checked_array("sgemm", "b", b_obj, 2, 2);
  const int64_t M = trans_a ? a.shape(1) : a.shape(0);
  const int64_t K = trans_a ? a.shape(0) : a.shape(1);
  const int64_t Kb = trans_b ? b.shape(1) : b.shape(0);
  const int64_t N = trans_b ? b.shape(0) : b.shape(1);
  if (K != Kb) {
    std::ostringstream s;
    s << "sgemm: shapes cannot be multiplied (" << M << "x" << K << " and " << Kb << "x" << N
      << ")";
    if (trans_a || trans_b) s << " after transposing" << (trans_a ? " a" : "")
                              << (trans_a && trans_b ? " and" : "") << (trans_b ? " b" : "");
    throw py::value_error(s.str());
  }

  // the epilogue: act(... + bias + residual)
  mte_epilogue ep{};
  ep.activation = as_activation("sgemm", "act", act_obj);
  if (bias_mode != "col" && bias_mode != "row")
    throw py::value_error("sgemm: bias_mode must be 'col' (one bias per column, length N) or "
                          "'row' (one per row, length M), got '" + bias_mode + "'");
  py::array bias, res;
  const bool col = bias_mode == "col";
  const int64_t nbias = col ? N : M;
  ep.bias = optional_vector("sgemm", "bias", bias_obj, nbias, bias,
                            std::string(col ? "column (N" : "row (M") + " = " +
                                std::to_string(nbias) + ") of the " + dims_str({M, N}) +
                                " result for bias_mode='" + bias_mode + "'");
  if (ep.bias) ep.bias_mode = col ? MTE_BIAS_PER_COL : MTE_BIAS_PER_ROW;
  if (!res_obj.is_none()) {
    res = checked_array("sgemm", "residual", res_obj, 2, 2);
    if (res.shape(0) != M || res.shape(1) != N)
      throw py::value_error("sgemm: residual has shape (" + shape_str(res) + "), expected (" +
                            dims_str({M, N}) + "), the shape of the result");
    ep.residual = static_cast<const float *>(res.data());
    ep.ld_residual = std::max<int64_t>(1, N);
  }

  py::array out;
  if (out_obj.is_none()) {
    out = new_f32({M, N});
    beta = 0.0f;  // a fresh output starts as zeros, so beta * C contributes nothing
  } else {
    out = checked_array("sgemm", "out", out_obj, 2, 2);
    if (out.shape(0) != M || out.shape(1) != N)
      throw py::value_error("sgemm: out has shape (" + shape_str(out) + "), expected (" +
                            dims_str({M, N}) + ")");
    if (!out.writeable()) throw py::value_error("sgemm: out is read-only");
    if (overlaps(out, a) || overlaps(out, b))
      throw py::value_error("sgemm: out must not share memory with a or b");
    if (!bias_obj.is_none() && overlaps(out, bias))
      throw py::value_error("sgemm: out must not share memory with bias");
    if (!res_obj.is_none() && overlaps(out, res))
      throw py::value_error("sgemm: out must not share memory with residual (to add out "
                            "itself, pass beta=1 instead)");
  }

  float *C = static_cast<float *>(out.mutable_data());
  const int64_t lda = std::max<int64_t>(1, a.shape(1));
  const int64_t ldb = std::max<int64_t>(1, b.shape(1));
  const int64_t ldc = std::max<int64_t>(1, N);
  run_kernel("sgemm", [&] {
    return mte_sgemm_ex(trans_a, trans_b, M, N, K, alpha, fptr(a), lda, fptr(b), ldb, beta, C,
                        ldc, &ep, nullptr);
  });
  return out;
}

// ----------------------------------------------------------------------------- matmul

py::array matmul(py::handle a_obj, py::handle b_obj) {
  py::array a = checked_array("matmul", "a", a_obj, 2, 3);
  py::array b = checked_array("matmul", "b", b_obj, 2, 3);
  const bool a3 = a.ndim() == 3, b3 = b.ndim() == 3;
  const int64_t Ba = a3 ? a.shape(0) : 1, Bb = b3 ? b.shape(0) : 1;
  const int64_t M = a.shape(a.ndim() - 2), K = a.shape(a.ndim() - 1);
  const int64_t Kb = b.shape(b.ndim() - 2), N = b.shape(b.ndim() - 1);
  if (K != Kb)
    throw py::value_error("matmul: shapes cannot be multiplied (" + shape_str(a) + " and " +
                          shape_str(b) + ")");
  // a 2-D operand, or a 3-D one with batch 1, is shared by every batch entry (stride 0)
  int64_t batch = 1;
  if (a3 && b3 && Ba != Bb && Ba != 1 && Bb != 1)
    throw py::value_error("matmul: batch sizes differ (" + shape_str(a) + " and " +
                          shape_str(b) + "); broadcast the batch dimensions first");
  if (a3 && Ba != 1)
    batch = Ba;
  else if (b3)
    batch = Bb;
  const int64_t stride_a = Ba == 1 ? 0 : M * K, stride_b = Bb == 1 ? 0 : K * N;

  py::array out = a3 || b3 ? new_f32({batch, M, N}) : new_f32({M, N});
  float *C = static_cast<float *>(out.mutable_data());
  const int64_t lda = std::max<int64_t>(1, K), ldb = std::max<int64_t>(1, N), ldc = ldb;
  run_kernel("matmul", [&] {
    return mte_sgemm_batched(0, 0, batch, M, N, K, 1.0f, fptr(a), lda, stride_a, fptr(b), ldb,
                             stride_b, 0.0f, C, ldc, M * N);
  });
  return out;
}

std::vector<std::string> split_words(const char *s) {
  std::vector<std::string> out;
  std::istringstream in(s ? s : "");
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  mte_bind_conv(m);
  mte_bind_depthwise(m);
  mte_bind_pool(m);
  mte_bind_winograd(m);
  mte_bind_optim(m);
  mte_bind_transformer(m);
  mte_bind_quant(m);
  mte_bind_half(m);
  mte_bind_runtime(m);
  m.doc() =
      "minitorch_edge._C - native kernels (libmte) for float32 numpy arrays.\n\n"
      "Inputs must be C-contiguous float32 ndarrays; they are used in place (no copy).\n"
      "Wrong dtype raises TypeError; wrong rank, non-contiguous input or mismatched sizes\n"
      "raise ValueError. The GIL is released while a kernel runs.";

  m.def("sgemm", &sgemm, py::arg("a"), py::arg("b"), py::arg("trans_a") = false,
        py::arg("trans_b") = false, py::arg("alpha") = 1.0f, py::arg("beta") = 0.0f,
        py::arg("out") = py::none(), py::arg("bias") = py::none(),
        py::arg("bias_mode") = "col", py::arg("act") = py::none(),
        py::arg("residual") = py::none(),
        "sgemm(a, b, trans_a=False, trans_b=False, alpha=1.0, beta=0.0, out=None, bias=None,\n"
        "      bias_mode='col', act=None, residual=None)\n\n"
        "out = act(alpha * op(a) @ op(b) + beta * out + bias + residual), where op(x) is x.T\n"
        "if trans_x else x; bias, residual and act are applied to each tile of out while it\n"
        "is in cache (fused epilogue). a, b: 2-D float32 C-contiguous arrays. out: optional\n"
        "(M, N) float32 C-contiguous, writeable array not sharing memory with a, b, bias or\n"
        "residual; without it a new array is returned (beta is then irrelevant: the result\n"
        "starts from zeros). With beta == 0 the old contents of out are not read (NaN there\n"
        "does not propagate). bias: (N,) for bias_mode='col' (added to every row, as in\n"
        "Linear) or (M,) for 'row'. residual: (M, N), added after bias. act: None/'none',\n"
        "'relu', 'relu6', 'gelu' (exact, erf), 'gelu_tanh' (PyTorch's approximate='tanh'),\n"
        "'silu' (x * sigmoid(x)) or 'hardswish' (x * relu6(x + 3) / 6).\n"
        "With K == 0 and beta == 1 it is the epilogue alone: out = act(out + bias + residual)\n"
        "in one pass.\n"
        "Returns out.");

  m.def("matmul", &matmul, py::arg("a"), py::arg("b"),
        "matmul(a, b) -> float32 array\n\n"
        "np.matmul for float32 C-contiguous arrays whose batch broadcasting the caller has\n"
        "already resolved: a is (B, M, K) or (M, K), b is (B, K, N) or (K, N); a batch of 1\n"
        "is broadcast. The result is (B, M, N) if either input is 3-D, else (M, N).");

  m.def("cpu_features", [] { return split_words(mte_cpu_features_string()); },
        "CPU features detected at run time, e.g. ['sse2', 'avx2', 'fma', 'avx512f', ...].");
  m.def("active_isa", [] { return std::string(mte_active_isa()); },
        "The ISA whose microkernels are in use: 'avx512vnni', 'avx512', 'avx2', 'neondot',\n"
        "'neon' or 'generic'.");
  m.def("dispatch_table",
        [] {
          py::dict table;
          for (int i = 0; i < mte_family_count(); ++i)
            table[mte_family_name(i)] = mte_family_isa(mte_family_name(i));
          return table;
        },
        "{kernel family: ISA}: the ISA whose kernel of each family runs now ('generic' where\n"
        "the active ISA has no specialised one), e.g. {'sgemm': 'avx512', 'epilogue': ...}.\n"
        "set_isa switches every family together.");
  m.def("compiled_isas", [] { return split_words(mte_compiled_isas()); },
        "ISAs compiled into this build, best first.");
  m.def("available_isas",
        [] {
          std::vector<std::string> out;
          for (auto &name : split_words(mte_compiled_isas()))
            if (mte_isa_available(name.c_str())) out.push_back(name);
          return out;
        },
        "ISAs compiled in and supported by this CPU, best first.");
  m.def("set_isa",
        [](const std::string &name) {
          int st = mte_set_isa(name.c_str());
          if (st == MTE_EINVAL)
            throw py::value_error("set_isa: unknown ISA '" + name +
                                  "' (expected generic, avx2, avx512, avx512vnni, neon, neondot or auto)");
          if (st != MTE_OK)
            throw py::value_error("set_isa: '" + name +
                                  "' is not available on this CPU or in this build");
        },
        py::arg("name"),
        "Force the ISA used by kernels ('auto' = best available). The environment\n"
        "variable MTE_ISA sets the initial choice (a cap: the best ISA not above it).");
  m.def("version", [] { return std::string(mte_version()); }, "libmte version string.");
  m.def("kernels", [] { return split_words(mte_kernels()); },
        "Names of the kernel families built into libmte, e.g. ['sgemm'].");
  m.def("set_num_threads",
        [](int n) {
          if (n < 1 || n > MTE_MAX_THREADS)
            throw py::value_error("set_num_threads: n must be between 1 and " +
                                  std::to_string(MTE_MAX_THREADS) + ", got " +
                                  std::to_string(n));
          raise_status("set_num_threads", mte_set_num_threads(n));
        },
        py::arg("n"), "Threads used by native kernels (1 when built without OpenMP).");
  m.def("get_num_threads", &mte_get_num_threads, "Threads used by native kernels.");
  m.def("has_openmp", [] { return mte_has_openmp() != 0; }, "Whether libmte uses OpenMP.");
  m.def("arena_peak_bytes", [] { return static_cast<uint64_t>(mte_default_arena_peak_bytes()); },
        "Peak bytes ever in use in the default workspace arena (packed GEMM panels...).");
  m.def("peak_gflops", [](double seconds) {
          py::gil_scoped_release nogil;
          return mte_peak_gflops(seconds);
        }, py::arg("seconds") = 0.2,
        "One core's fp32 FMA peak (GFLOP/s) with the active ISA, timed over ~seconds.");
  m.def("arena_reset_peak", &mte_default_arena_reset_peak,
        "Start a new peak measurement: after one call, arena_peak_bytes() is its workspace.");
  m.def("workspace_allocations", &mte_workspace_allocations,
        "Blocks allocated by libmte's workspace arenas since start (constant in steady state).");
}
