// transformer.cpp - bindings for mte_transformer.h: softmax, layer_norm, gelu (forward and
// backward) and fused attention.
//
// The row kernels follow every binding file's rules: float32 C-contiguous arrays used in
// place, a new array returned, dtype errors TypeError, shape / layout errors ValueError,
// the GIL released while the kernel runs. Rows are the last dim; everything before it is
// folded into the row count.
//
// The attention kernels are the one place that takes *strided* 4-D views (B, H, rows, cols):
// q, k, v may be column slices of one packed projection and out / dq, dk, dv slices of the
// arrays the caller returns, so Python never copies to split or merge heads. A view may have
// any non-negative strides (0 for a broadcast dim) but unit stride along its last dim; the
// outputs are written in place and may not share memory with the inputs.
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "common.h"
#include "mte_bf16.h"
#include "mte_transformer.h"

namespace {

using namespace mte_py;

// the array's shape without its last dim, as a vector (for new outputs)
std::vector<py::ssize_t> shape_of(const py::array &a) {
  return std::vector<py::ssize_t>(a.shape(), a.shape() + a.ndim());
}

int64_t last_dim(const py::array &a) { return a.ndim() ? a.shape(a.ndim() - 1) : 1; }
int64_t rows_of(const py::array &a) {
  const int64_t n = last_dim(a);
  return n ? static_cast<int64_t>(a.size()) / n : 0;
}

void same_shape(const char *op, const char *name, const py::array &a, const char *ref_name,
                const py::array &ref) {
  bool same = a.ndim() == ref.ndim();
  for (py::ssize_t d = 0; same && d < a.ndim(); ++d) same = a.shape(d) == ref.shape(d);
  if (!same)
    throw py::value_error(std::string(op) + ": " + name + " has shape (" + shape_str(a) +
                          ") but " + ref_name + " has shape (" + shape_str(ref) + ")");
}

py::array new_like(const py::array &a) { return py::array_t<float>(shape_of(a)); }

// ------------------------------------------------------------------------------ softmax

int softmax_flags(bool log, bool safe) {
  return (log ? MTE_SOFTMAX_LOG : 0) | (safe ? MTE_SOFTMAX_SAFE : 0);
}

py::array softmax(py::handle x_obj, bool log, bool safe) {
  py::array x = checked_array("softmax", "x", x_obj, 1, 32);
  py::array y = new_like(x);
  const int64_t rows = rows_of(x), n = last_dim(x);
  float *Y = static_cast<float *>(y.mutable_data());
  run_kernel("softmax",
             [&] { return mte_softmax_forward(rows, n, fptr(x), Y, softmax_flags(log, safe)); });
  return y;
}

py::array softmax_backward(py::handle y_obj, py::handle dy_obj, bool log) {
  py::array y = checked_array("softmax_backward", "y", y_obj, 1, 32);
  py::array dy = checked_array("softmax_backward", "dy", dy_obj, 1, 32);
  same_shape("softmax_backward", "dy", dy, "y", y);
  py::array dx = new_like(y);
  const int64_t rows = rows_of(y), n = last_dim(y);
  float *DX = static_cast<float *>(dx.mutable_data());
  run_kernel("softmax_backward", [&] {
    return mte_softmax_backward(rows, n, fptr(y), fptr(dy), DX, softmax_flags(log, false));
  });
  return dx;
}

// ---------------------------------------------------------------------------- LayerNorm

std::tuple<py::array, py::array, py::array> layer_norm(py::handle x_obj, py::handle w_obj,
                                                       py::handle b_obj, double eps) {
  const char *op = "layer_norm";
  py::array x = checked_array(op, "x", x_obj, 1, 32);
  const int64_t rows = rows_of(x), n = last_dim(x);
  py::array wk, bk;
  const std::string per = "element of the normalized (last) dim, n = " + std::to_string(n);
  const float *w = optional_vector(op, "weight", w_obj, n, wk, per);
  const float *b = optional_vector(op, "bias", b_obj, n, bk, per);
  if (n == 0 && rows > 0) throw py::value_error("layer_norm: the last dim of x is empty");
  py::array y = new_like(x);
  py::array mean = new_f32({rows}), rstd = new_f32({rows});
  float *Y = static_cast<float *>(y.mutable_data());
  float *M = static_cast<float *>(mean.mutable_data());
  float *R = static_cast<float *>(rstd.mutable_data());
  run_kernel(op, [&] {
    return mte_layer_norm_forward(rows, n, fptr(x), w, b, static_cast<float>(eps), Y, M, R);
  });
  return {y, mean, rstd};
}

py::tuple layer_norm_backward(py::handle dy_obj, py::handle x_obj, py::handle mean_obj,
                              py::handle rstd_obj, py::handle w_obj, bool need_input,
                              bool need_weight, bool need_bias) {
  const char *op = "layer_norm_backward";
  py::array dy = checked_array(op, "dy", dy_obj, 1, 32);
  py::array x = checked_array(op, "x", x_obj, 1, 32);
  same_shape(op, "dy", dy, "x", x);
  const int64_t rows = rows_of(x), n = last_dim(x);
  py::array mk, rk, wk;
  const std::string per_row = "row of x (" + std::to_string(rows) + ")";
  const float *mean = optional_vector(op, "mean", mean_obj, rows, mk, per_row);
  const float *rstd = optional_vector(op, "rstd", rstd_obj, rows, rk, per_row);
  if (!mean || !rstd) throw py::value_error("layer_norm_backward: mean and rstd are required");
  const float *w = optional_vector(op, "weight", w_obj, n, wk, "element of the last dim");
  py::object dx = py::none(), dw = py::none(), db = py::none();
  float *DX = nullptr, *DW = nullptr, *DB = nullptr;
  if (need_input) {
    py::array a = new_like(x);
    DX = static_cast<float *>(a.mutable_data());
    dx = a;
  }
  if (need_weight) {
    py::array a = new_f32({n});
    DW = static_cast<float *>(a.mutable_data());
    dw = a;
  }
  if (need_bias) {
    py::array a = new_f32({n});
    DB = static_cast<float *>(a.mutable_data());
    db = a;
  }
  run_kernel(op, [&] {
    return mte_layer_norm_backward(rows, n, fptr(dy), fptr(x), mean, rstd, w, DX, DW, DB);
  });
  return py::make_tuple(dx, dw, db);
}

// --------------------------------------------------------------------------------- GELU

int as_approximate(const char *op, const std::string &a) {
  if (a == "none") return 0;
  if (a == "tanh") return 1;
  throw py::value_error(std::string(op) + ": approximate must be 'none' or 'tanh', got '" +
                        a + "'");
}

py::array gelu(py::handle x_obj, const std::string &approximate) {
  const int ap = as_approximate("gelu", approximate);
  py::array x = checked_array("gelu", "x", x_obj, 0, 32);
  py::array y = new_like(x);
  float *Y = static_cast<float *>(y.mutable_data());
  const int64_t n = static_cast<int64_t>(x.size());
  run_kernel("gelu", [&] { return mte_gelu_forward(n, fptr(x), Y, ap); });
  return y;
}

py::array gelu_backward(py::handle dy_obj, py::handle x_obj, const std::string &approximate) {
  const int ap = as_approximate("gelu_backward", approximate);
  py::array dy = checked_array("gelu_backward", "dy", dy_obj, 0, 32);
  py::array x = checked_array("gelu_backward", "x", x_obj, 0, 32);
  same_shape("gelu_backward", "dy", dy, "x", x);
  py::array dx = new_like(x);
  float *DX = static_cast<float *>(dx.mutable_data());
  const int64_t n = static_cast<int64_t>(x.size());
  run_kernel("gelu_backward", [&] { return mte_gelu_backward(n, fptr(dy), fptr(x), DX, ap); });
  return dx;
}

// ---------------------------------------------------------------------------- attention

// a 4-D view (B, H, rows, cols) of float32 (or of `half`'s dtype, when given): its data
// pointer, element strides and byte extent
struct View {
  py::array arr;
  float *data = nullptr;  // (for a half view: its uint16_t storage)
  mte_head_strides s{0, 0, 0};
  std::uintptr_t lo = 0, hi = 0;  // [lo, hi): the bytes it spans
  uint16_t *u16() const { return reinterpret_cast<uint16_t *>(data); }
};

View view4(const char *op, const char *name, py::handle obj, int64_t B, int64_t H,
           int64_t rows, int64_t cols, bool output, const py::array *half = nullptr) {
  const std::string want_dt = half ? std::string(py::str(half->dtype())) : "float32";
  if (!py::isinstance<py::array>(obj))
    throw py::type_error(msg(op, name, " must be a numpy.ndarray of " + want_dt + ", got " +
                                           type_name(obj)));
  View v;
  v.arr = py::reinterpret_borrow<py::array>(obj);
  const py::array &a = v.arr;
  if (!a.dtype().equal(half ? half->dtype() : py::dtype::of<float>()))
    throw py::type_error(msg(op, name, " must have dtype " + want_dt + ", got " +
                                           std::string(py::str(a.dtype()))));
  const int64_t esize = half ? 2 : static_cast<int64_t>(sizeof(float));
  const int64_t want[4] = {B, H, rows, cols};
  bool ok = a.ndim() == 4;
  for (int d = 0; ok && d < 4; ++d) ok = a.shape(d) == want[d];
  if (!ok)
    throw py::value_error(msg(op, name, " has shape (" + shape_str(a) + "), expected (" +
                                            dims_str({B, H, rows, cols}) + ")"));
  if (output && !a.writeable()) throw py::value_error(msg(op, name, " is read-only"));
  v.data = static_cast<float *>(const_cast<void *>(a.data()));
  if (a.size() == 0) return v;  // nothing is read or written (numpy's strides may be 0)
  if (!(a.flags() & kNpyAligned)) throw py::value_error(msg(op, name, " must be aligned"));
  int64_t st[4];
  for (int d = 0; d < 4; ++d) {
    const int64_t bytes = a.strides(d);
    if (a.shape(d) <= 1) {
      st[d] = 0;  // a stride that is never used
      continue;
    }
    if (bytes < 0 || bytes % esize)
      throw py::value_error(msg(op, name, " must have non-negative strides that are whole "
                                          "elements (copy it with np.ascontiguousarray)"));
    st[d] = bytes / esize;
  }
  if (cols > 1 && st[3] != 1)
    throw py::value_error(msg(op, name, " must be contiguous along its last dim"));
  v.s = {st[0], st[1], st[2]};
  const int64_t last = (B - 1) * st[0] + (H - 1) * st[1] + (rows - 1) * st[2] + cols;
  v.lo = reinterpret_cast<std::uintptr_t>(v.data);
  v.hi = v.lo + static_cast<std::uintptr_t>(last) * static_cast<std::uintptr_t>(esize);
  return v;
}

// MTE_DT_BF16 / MTE_DT_F16 for a bfloat16 / float16 array, -1 for float32 (TypeError else)
int attention_dtype(const char *op, const py::array &q) {
  if (q.dtype().equal(py::dtype::of<float>())) return -1;
  const std::string name = py::str(q.dtype().attr("name"));
  if (q.dtype().itemsize() == 2 && (name == "bfloat16" || name == "float16"))
    return name == "bfloat16" ? MTE_DT_BF16 : MTE_DT_F16;
  throw py::type_error(std::string(op) + ": q must be float32, bfloat16 or float16, got " +
                       std::string(py::str(q.dtype())));
}

bool spans_overlap(const View &a, const View &b) {
  return a.hi > a.lo && b.hi > b.lo && a.lo < b.hi && b.lo < a.hi;
}

void outputs_apart(const char *op, const std::vector<std::pair<const char *, const View *>> &outs,
                   const std::vector<std::pair<const char *, const View *>> &ins) {
  for (auto &o : outs)
    for (auto &i : ins)
      if (spans_overlap(*o.second, *i.second))
        throw py::value_error(std::string(op) + ": " + o.first + " shares memory with " +
                              i.first + "; outputs need their own arrays");
}

void attention(py::handle q_obj, py::handle k_obj, py::handle v_obj, py::handle mask_obj,
               py::handle out_obj, py::handle pt_obj, double scale, bool causal) {
  const char *op = "attention";
  if (!py::isinstance<py::array>(q_obj) || !py::isinstance<py::array>(k_obj) ||
      !py::isinstance<py::array>(v_obj))
    throw py::type_error("attention: q, k and v must be 4-D float32 (or bfloat16 / float16) "
                         "numpy arrays");
  auto qa = py::reinterpret_borrow<py::array>(q_obj);
  auto ka = py::reinterpret_borrow<py::array>(k_obj);
  auto va = py::reinterpret_borrow<py::array>(v_obj);
  if (qa.ndim() != 4 || ka.ndim() != 4 || va.ndim() != 4)
    throw py::value_error("attention: q, k and v must be 4-D (batch, heads, rows, cols), got (" +
                          shape_str(qa) + "), (" + shape_str(ka) + "), (" + shape_str(va) + ")");
  const int half = attention_dtype(op, qa);
  const py::array *hd = half >= 0 ? &qa : nullptr;  // k, v, out: q's dtype
  const int64_t B = qa.shape(0), H = qa.shape(1), L = qa.shape(2), D = qa.shape(3);
  const int64_t S = ka.shape(2), Dv = va.shape(3);
  View q = view4(op, "q", q_obj, B, H, L, D, false, hd);
  View k = view4(op, "k", k_obj, B, H, S, D, false, hd);
  View v = view4(op, "v", v_obj, B, H, S, Dv, false, hd);
  View mask;
  if (!mask_obj.is_none()) mask = view4(op, "mask", mask_obj, B, H, L, S, false);
  View out = view4(op, "out", out_obj, B, H, L, Dv, true, hd);
  checked_array(op, "pt", pt_obj, 4, 4);  // C-contiguous
  View pt = view4(op, "pt", pt_obj, B, H, S, L, true);
  outputs_apart(op, {{"out", &out}, {"pt", &pt}},
                {{"q", &q}, {"k", &k}, {"v", &v}, {"mask", &mask}});
  outputs_apart(op, {{"out", &out}}, {{"pt", &pt}});
  const float *mp = mask_obj.is_none() ? nullptr : mask.data;
  run_kernel(op, [&] {
    if (half >= 0)
      return mte_attention_forward_half(half, B, H, L, S, D, Dv, q.u16(), q.s, k.u16(), k.s,
                                        v.u16(), v.s, mp, mask.s, static_cast<float>(scale),
                                        causal, pt.data, out.u16(), out.s);
    return mte_attention_forward(B, H, L, S, D, Dv, q.data, q.s, k.data, k.s, v.data, v.s,
                                 mp, mask.s, static_cast<float>(scale), causal, pt.data,
                                 out.data, out.s);
  });
}

void attention_backward(py::handle q_obj, py::handle k_obj, py::handle v_obj,
                        py::handle pt_obj, py::handle dout_obj, py::handle dq_obj,
                        py::handle dk_obj, py::handle dv_obj, double scale) {
  const char *op = "attention_backward";
  py::array pa = checked_array(op, "pt", pt_obj, 4, 4);
  const int64_t B = pa.shape(0), H = pa.shape(1), S = pa.shape(2), L = pa.shape(3);
  if (!py::isinstance<py::array>(q_obj) || !py::isinstance<py::array>(v_obj))
    throw py::type_error("attention_backward: q and v must be 4-D float32 (or bfloat16 / "
                         "float16) numpy arrays");
  auto qa = py::reinterpret_borrow<py::array>(q_obj);
  auto va = py::reinterpret_borrow<py::array>(v_obj);
  if (qa.ndim() != 4 || va.ndim() != 4)
    throw py::value_error("attention_backward: q and v must be 4-D");
  const int half = attention_dtype(op, qa);
  const py::array *hd = half >= 0 ? &qa : nullptr;  // all but pt: q's dtype
  const int64_t D = qa.shape(3), Dv = va.shape(3);
  View q = view4(op, "q", q_obj, B, H, L, D, false, hd);
  View k = view4(op, "k", k_obj, B, H, S, D, false, hd);
  View v = view4(op, "v", v_obj, B, H, S, Dv, false, hd);
  View pt = view4(op, "pt", pt_obj, B, H, S, L, false);
  View dout = view4(op, "dout", dout_obj, B, H, L, Dv, false, hd);
  View dq = view4(op, "dq", dq_obj, B, H, L, D, true, hd);
  View dk = view4(op, "dk", dk_obj, B, H, S, D, true, hd);
  View dv = view4(op, "dv", dv_obj, B, H, S, Dv, true, hd);
  outputs_apart(op, {{"dq", &dq}, {"dk", &dk}, {"dv", &dv}},
                {{"q", &q}, {"k", &k}, {"v", &v}, {"pt", &pt}, {"dout", &dout}});
  run_kernel(op, [&] {
    if (half >= 0)
      return mte_attention_backward_half(half, B, H, L, S, D, Dv, q.u16(), q.s, k.u16(), k.s,
                                         v.u16(), v.s, static_cast<float>(scale), pt.data,
                                         dout.u16(), dout.s, dq.u16(), dq.s, dk.u16(), dk.s,
                                         dv.u16(), dv.s);
    return mte_attention_backward(B, H, L, S, D, Dv, q.data, q.s, k.data, k.s, v.data, v.s,
                                  static_cast<float>(scale), pt.data, dout.data, dout.s,
                                  dq.data, dq.s, dk.data, dk.s, dv.data, dv.s);
  });
}

}  // namespace

void mte_bind_transformer(pybind11::module_ &m) {
  m.def("softmax", &softmax, py::arg("x"), py::arg("log") = false, py::arg("safe") = false,
        "softmax(x, log=False, safe=False) -> y\n\n"
        "softmax (log-softmax with log=True) along the last dim of a float32 C-contiguous\n"
        "array. safe: a row of only -inf gives zeros instead of NaN.");
  m.def("softmax_backward", &softmax_backward, py::arg("y"), py::arg("dy"),
        py::arg("log") = false,
        "softmax_backward(y, dy, log=False) -> dx\n\n"
        "The gradient from the forward's output y: y (dy - sum(dy y)), or for log-softmax\n"
        "dy - exp(y) sum(dy); sums along the last dim.");
  m.def("layer_norm", &layer_norm, py::arg("x"), py::arg("weight") = py::none(),
        py::arg("bias") = py::none(), py::arg("eps") = 1e-5,
        "layer_norm(x, weight=None, bias=None, eps=1e-5) -> (y, mean, rstd)\n\n"
        "Normalizes each row (the last dim) of x: y = (x - mean) rstd weight + bias with\n"
        "rstd = 1/sqrt(var + eps), var biased; mean and rstd have one value per row.");
  m.def("layer_norm_backward", &layer_norm_backward, py::arg("dy"), py::arg("x"),
        py::arg("mean"), py::arg("rstd"), py::arg("weight") = py::none(),
        py::arg("need_input") = true, py::arg("need_weight") = true,
        py::arg("need_bias") = true,
        "layer_norm_backward(dy, x, mean, rstd, weight=None, need_input=True,\n"
        "                    need_weight=True, need_bias=True) -> (dx, dweight, dbias)\n\n"
        "The gradients of layer_norm (None where not needed).");
  m.def("gelu", &gelu, py::arg("x"), py::arg("approximate") = "none",
        "gelu(x, approximate='none') -> y: x Phi(x), or PyTorch's tanh approximation.");
  m.def("gelu_backward", &gelu_backward, py::arg("dy"), py::arg("x"),
        py::arg("approximate") = "none",
        "gelu_backward(dy, x, approximate='none') -> dx = dy * gelu'(x).");
  m.def("attention", &attention, py::arg("q"), py::arg("k"), py::arg("v"), py::arg("mask"),
        py::arg("out"), py::arg("pt"), py::arg("scale"), py::arg("causal") = false,
        "attention(q, k, v, mask, out, pt, scale, causal=False) -> None\n\n"
        "Fused attention on 4-D views (B, H, rows, cols), any non-negative strides, unit\n"
        "stride along the last dim: p = softmax(scale q k^T + mask) (a fully masked row gives\n"
        "0; causal masks key j > query i), out = p v. mask: None or (B, H, L, S) (broadcast\n"
        "views welcome); out (B, H, L, Dv) is written, and pt (B, H, S, L), C-contiguous,\n"
        "receives p transposed (pt[b, h, j, i]: key j's weight for query i). q, k, v and\n"
        "out may instead all be bfloat16 or all float16 (computed in float32, out rounded\n"
        "once); mask and pt stay float32.");
  m.def("attention_backward", &attention_backward, py::arg("q"), py::arg("k"), py::arg("v"),
        py::arg("pt"), py::arg("dout"), py::arg("dq"), py::arg("dk"), py::arg("dv"),
        py::arg("scale"),
        "attention_backward(q, k, v, pt, dout, dq, dk, dv, scale) -> None\n\n"
        "Writes the gradients of attention into the views dq, dk, dv, from pt (the forward's\n"
        "transposed weights, (B, H, S, L) C-contiguous) and dout, the gradient of out.\n"
        "Half precision as attention: q, k, v, dout, dq, dk, dv of one half dtype.");
}
