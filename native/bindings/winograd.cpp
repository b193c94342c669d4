// winograd.cpp - bindings for Winograd F(4x4,3x3) / F(2x2,3x3) convolution (mte_winograd.h).
//
//   winograd_transform_weight(w, tile=4) -> U          transform once, pass U to every call
//   winograd3x3(x, w, bias, pad_h, pad_w, U=None, tile=0) -> y
//   winograd_tile(N, C, K, H, W, pad_h=1, pad_w=1, cached=False) / winograd_should_use(...)
//
// Arrays are checked (common.h), used in place, and the GIL is released while libmte runs.
#include "common.h"

namespace {

using namespace mte_py;

// (K, C, 3, 3) float32 weights
py::array checked_weight(const char *op, py::handle w_obj) {
  py::array w = checked_array(op, "w", w_obj, 4, 4);
  if (w.shape(2) != 3 || w.shape(3) != 3)
    throw py::value_error(std::string(op) + ": w must have shape (K, C, 3, 3), got (" +
                          shape_str(w) + ")");
  return w;
}

int checked_tile(const char *op, int tile, bool allow_auto) {
  if (tile == 2 || tile == 4 || (allow_auto && tile == 0)) return tile;
  throw py::value_error(std::string(op) + ": tile must be " + (allow_auto ? "0 (auto), " : "") +
                        "2 or 4, got " + std::to_string(tile));
}

py::array transform_weight(py::handle w_obj, int tile) {
  const char *op = "winograd_transform_weight";
  checked_tile(op, tile, false);
  py::array w = checked_weight(op, w_obj);
  const int64_t K = w.shape(0), C = w.shape(1), a2 = (tile + 2) * (tile + 2);
  py::array out = new_f32({a2, C, K});
  float *U = static_cast<float *>(out.mutable_data());
  run_kernel(op, [&] { return mte_winograd_transform_weight(tile, K, C, fptr(w), U); });
  return out;
}

py::array conv(py::handle x_obj, py::handle w_obj, py::handle bias_obj, int64_t pad_h,
               int64_t pad_w, py::handle u_obj, int tile, py::handle out_obj) {
  const char *op = "winograd3x3";
  checked_tile(op, tile, true);
  py::array x = checked_array(op, "x", x_obj, 4, 4);
  const int64_t N = x.shape(0), C = x.shape(1), H = x.shape(2), W = x.shape(3);
  if (pad_h < 0 || pad_w < 0)
    throw py::value_error(std::string(op) + ": padding must be >= 0, got (" +
                          std::to_string(pad_h) + ", " + std::to_string(pad_w) + ")");
  if (pad_h > (1 << 20) || pad_w > (1 << 20))
    throw py::value_error(std::string(op) + ": padding too large");

  // keep the checked arrays alive (references) while the kernel reads their pointers
  py::array w, u, bias;
  const float *Wp = nullptr, *Up = nullptr, *B = nullptr;
  int64_t K = -1;
  if (!w_obj.is_none()) {
    w = checked_weight(op, w_obj);
    K = w.shape(0);
    Wp = fptr(w);
    if (w.shape(1) != C)
      throw py::value_error(std::string(op) + ": w has " + std::to_string(w.shape(1)) +
                            " input channels but x has " + std::to_string(C) + " (x " +
                            shape_str(x) + ", w " + shape_str(w) + ")");
  }
  if (!u_obj.is_none()) {
    u = checked_array(op, "U", u_obj, 3, 3);
    const int64_t a2 = u.shape(0);
    const int ut = a2 == 36 ? 4 : a2 == 16 ? 2 : 0;
    if (ut == 0)
      throw py::value_error(std::string(op) + ": U must have shape (36 or 16, C, K), got (" +
                            shape_str(u) + "); make it with winograd_transform_weight");
    if (tile != 0 && tile != ut)
      throw py::value_error(std::string(op) + ": U was made for tile " + std::to_string(ut) +
                            ", but tile=" + std::to_string(tile));
    tile = ut;
    if (u.shape(1) != C || (K >= 0 && u.shape(2) != K))
      throw py::value_error(std::string(op) + ": U has shape (" + shape_str(u) +
                            "), expected (" + dims_str({a2, C, K >= 0 ? K : u.shape(2)}) +
                            ") for x (" + shape_str(x) + ")");
    K = u.shape(2);
    Up = fptr(u);
  }
  if (K < 0) throw py::value_error(std::string(op) + ": give w or U (both are None)");
  B = optional_vector(op, "bias", bias_obj, K, bias, "output channel");
  const int64_t Ho = H + 2 * pad_h - 2, Wo = W + 2 * pad_w - 2;
  if (Ho < 1 || Wo < 1)
    throw py::value_error(std::string(op) + ": input (" + shape_str(x) + ") with padding (" +
                          std::to_string(pad_h) + ", " + std::to_string(pad_w) +
                          ") is smaller than the 3x3 kernel");

  py::array out = output_array(op, out_obj, {N, K, Ho, Wo}, {&x, &w, &u, &bias});
  float *Y = static_cast<float *>(out.mutable_data());
  run_kernel(op, [&] {
    return mte_winograd3x3(tile, N, C, H, W, K, pad_h, pad_w, fptr(x), Wp, Up, B, Y);
  });
  return out;
}

// Binds a rule of mte_winograd.h (rule(N, C, K, Ho, Wo, cached)) as
// name(N, C, K, H, W, pad_h=1, pad_w=1, cached=False): the output size comes from the input
// size and padding.
template <class Rule>
void def_rule(py::module_ &m, const char *name, Rule rule, const char *doc) {
  m.def(name,
        [name, rule](int64_t N, int64_t C, int64_t K, int64_t H, int64_t W, int64_t ph,
                     int64_t pw, bool cached) {
          if (N < 0 || C < 0 || K < 0 || H < 0 || W < 0 || ph < 0 || pw < 0)
            throw py::value_error(std::string(name) + ": sizes and padding must be >= 0");
          return rule(N, C, K, H + 2 * ph - 2, W + 2 * pw - 2, cached);
        },
        py::arg("N"), py::arg("C"), py::arg("K"), py::arg("H"), py::arg("W"),
        py::arg("pad_h") = 1, py::arg("pad_w") = 1, py::arg("cached") = false, doc);
}

}  // namespace

void mte_bind_winograd(pybind11::module_ &m) {
  m.def("winograd_transform_weight", &transform_weight, py::arg("w"), py::arg("tile") = 4,
        "winograd_transform_weight(w, tile=4) -> U\n\n"
        "The Winograd weight transform U[xi] = (G w[k, c] G^T)[xi] for w (K, C, 3, 3)\n"
        "float32: U has shape ((tile+2)**2, C, K) (36 for F(4x4,3x3), 16 for F(2x2,3x3)).\n"
        "Transform once and pass U to winograd3x3 on every call.");
  m.def("winograd3x3", &conv, py::arg("x"), py::arg("w"), py::arg("bias") = py::none(),
        py::arg("pad_h") = 1, py::arg("pad_w") = 1, py::arg("U") = py::none(),
        py::arg("tile") = 0, py::arg("out") = py::none(),
        "winograd3x3(x, w, bias=None, pad_h=1, pad_w=1, U=None, tile=0, out=None) -> y\n\n"
        "3x3 convolution, stride 1, dilation 1, groups 1, by Winograd's algorithm:\n"
        "y = conv2d(x, w, bias, padding=(pad_h, pad_w)) for x (N, C, H, W), w (K, C, 3, 3),\n"
        "bias (K,) or None; y is (N, K, H + 2*pad_h - 2, W + 2*pad_w - 2). All float32,\n"
        "C-contiguous. U: weights from winograd_transform_weight (then w may be None and\n"
        "the tile is U's). tile: 4 = F(4x4,3x3), 2 = F(2x2,3x3), 0 = winograd_tile's choice\n"
        "(with cached = U is not None).");
  def_rule(m, "winograd_tile",
           [](int64_t N, int64_t C, int64_t K, int64_t Ho, int64_t Wo, bool cached) {
             return mte_winograd_tile(N, C, K, Ho, Wo, cached);
           },
           "winograd_tile(N, C, K, H, W, pad_h=1, pad_w=1, cached=False) -> 4, 2 or 0\n\n"
           "The Winograd tile the documented rule picks for a 3x3 stride-1 conv of an\n"
           "(N, C, H, W) input to K channels (0 if the output is empty). cached: the weights\n"
           "are transformed once (winograd_transform_weight) rather than in every call.");
  def_rule(m, "winograd_should_use",
           [](int64_t N, int64_t C, int64_t K, int64_t Ho, int64_t Wo, bool cached) {
             return mte_winograd_should_use(N, C, K, Ho, Wo, cached) != 0;
           },
           "winograd_should_use(N, C, K, H, W, pad_h=1, pad_w=1, cached=False) -> bool\n\n"
           "Whether Winograd (with winograd_tile's tile) is expected to beat im2col+GEMM for\n"
           "this 3x3 stride-1 conv; cached as for winograd_tile. The rule and its measurements\n"
           "are in native/src/winograd_rule.c.");
  m.def("winograd_workspace_reset_peak", &mte_winograd_workspace_reset_peak,
        "Start a new peak measurement of the Winograd workspace.");
  m.def("winograd_workspace_peak_bytes",
        [] { return static_cast<uint64_t>(mte_winograd_workspace_peak_bytes()); },
        "Peak bytes of the Winograd workspace (tiles, products, SGEMM packing).");
}
