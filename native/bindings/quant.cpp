// quant.cpp - bindings of the int8 kernels (include/mte_quant.h): _C.qconv2d, qlinear (with
// prepared weights: qconv2d_prepare / qlinear_prepare return a QWeights handle), qavg_pool2d,
// qmax_pool2d, qadd (and qadd_table, its lookup form), quantize, dequantize, requantize,
// quantize_multiplier, peak_gops_int8, qgemm_path.
// Arguments as the numpy twins in minitorch_edge/backend/numpy_int8.py, which are the
// reference: int8 tensors, int32 per-channel vectors, NCHW.
//
// Errors: a non-array or an array of the wrong dtype is TypeError; a wrong length, a
// multiplier outside [0, 2^31 - 1], a shift outside [-31, 30], a zero point outside
// [-128, 127], act_min > act_max, a weight of -128, mismatched channels is ValueError. Every
// message starts with the kernel's name. Nothing is written to `out` on error.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "common.h"

namespace {

using namespace mte_py;

constexpr int64_t kMaxParam = int64_t(1) << 30;

// weights packed once for the active ISA (mte_qconv2d_plan), owned by Python
struct QWeights {
  mte_qconv2d_plan *plan = nullptr;
  std::string isa, kind;
  std::vector<int64_t> shape;
  int64_t groups = 1;
  ~QWeights() { mte_qconv2d_free(plan); }
};

int64_t ranged(const char *op, const char *name, py::handle obj, int64_t lo, int64_t hi,
               const char *hint = "") {
  const int64_t v = as_int(op, name, obj);
  if (v < lo || v > hi)
    throw py::value_error(std::string(op) + ": " + name + " must lie in [" +
                          std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                          std::to_string(v) + hint);
  return v;
}

int32_t zero_point(const char *op, const char *name, py::handle obj) {
  return static_cast<int32_t>(ranged(op, name, obj, -128, 127));
}

std::pair<int32_t, int32_t> act_range(const char *op, py::handle lo_obj, py::handle hi_obj) {
  const int64_t lo = ranged(op, "act_min", lo_obj, -128, 127);
  const int64_t hi = ranged(op, "act_max", hi_obj, -128, 127);
  if (lo > hi)
    throw py::value_error(std::string(op) + ": act_min (" + std::to_string(lo) +
                          ") > act_max (" + std::to_string(hi) +
                          "); pass -128 <= act_min <= act_max <= 127 (-128, 127: no "
                          "activation)");
  return {static_cast<int32_t>(lo), static_cast<int32_t>(hi)};
}

float scale_of(const char *op, py::handle obj) {
  if (PyBool_Check(obj.ptr()) || !PyNumber_Check(obj.ptr()) || py::isinstance<py::array>(obj))
    throw py::type_error(std::string(op) + ": scale must be a float, got " + type_name(obj));
  const float s = static_cast<float>(py::cast<double>(obj));
  if (!(std::isfinite(s) && s > 0.0f))
    throw py::value_error(std::string(op) + ": scale must be finite and > 0 (as float32), got " +
                          std::string(py::repr(obj)));
  return s;
}

// bias (or None), multiplier and shift: int32 (channels,), values in range
struct Channels {
  py::array bias, mult, shift;
  const int32_t *b = nullptr;
  mte_requant rq{};
};

Channels channels(const char *op, py::handle b_obj, py::handle m_obj, py::handle s_obj,
                  int64_t n) {
  Channels c;
  auto vec = [&](const char *name, py::handle obj) {
    py::array a = checked_int32(op, name, obj, 1, 1);
    if (a.shape(0) != n)
      throw py::value_error(std::string(op) + ": " + name + " has shape (" + shape_str(a) +
                            "), expected (" + std::to_string(n) +
                            ",): one int32 per output channel");
    return a;
  };
  if (!b_obj.is_none()) {
    c.bias = vec("bias", b_obj);
    c.b = static_cast<const int32_t *>(c.bias.data());
  }
  c.mult = vec("multiplier", m_obj);
  c.shift = vec("shift", s_obj);
  const int32_t *m = static_cast<const int32_t *>(c.mult.data());
  const int32_t *s = static_cast<const int32_t *>(c.shift.data());
  for (int64_t i = 0; i < n; ++i) {
    if (m[i] < 0)
      throw py::value_error(std::string(op) + ": multiplier must lie in [0, 2147483647], got " +
                            std::to_string(m[i]) + " at channel " + std::to_string(i) +
                            " (use quantize_multiplier)");
    if (s[i] < -31 || s[i] > 30)
      throw py::value_error(std::string(op) + ": shift must lie in [-31, 30], got " +
                            std::to_string(s[i]) + " at channel " + std::to_string(i));
  }
  c.rq.multiplier = m, c.rq.shift = s;
  return c;
}

void check_weights(const char *op, const py::array &w) {
  const int8_t *p = static_cast<const int8_t *>(w.data());
  for (py::ssize_t i = 0; i < w.size(); ++i)
    if (p[i] == -128)
      throw py::value_error(std::string(op) + ": w (shape (" + shape_str(w) +
                            ")) holds -128; int8 weights must lie in [-127, 127] (TFLite's "
                            "symmetric range): quantize them with scale max|w| / 127, or clip "
                            "them with np.maximum(w, -127)");
}

std::vector<int64_t> tuple_of(const char *op, const char *name, py::handle obj, size_t n,
                              int64_t lo) {
  if (!is_sequence(obj))
    throw py::type_error(std::string(op) + ": " + name + " must be a tuple of " +
                         std::to_string(n) + " ints, got " + type_name(obj));
  std::vector<int64_t> v = as_ints(op, name, obj, n, n);
  for (int64_t x : v)
    if (x < lo || x > kMaxParam)
      throw py::value_error(std::string(op) + ": " + name + " values must lie in [" +
                            std::to_string(lo) + ", 2**30], got " + std::to_string(x));
  return v;
}

void reduction(const char *op, int64_t k) {
  if (k > MTE_QMAX_K)
    throw py::value_error(std::string(op) + ": the reduction length K = " + std::to_string(k) +
                          " exceeds 65536, beyond which an int32 accumulator could wrap; split "
                          "the layer");
}

// ------------------------------------------------------------------ prepared weights

std::shared_ptr<QWeights> conv_prepare(py::handle w_obj, int64_t groups) {
  const char *op = "qconv2d_prepare";
  py::array w = checked_int8(op, "w", w_obj, 4, 4);
  check_weights(op, w);
  if (groups < 1 || w.shape(0) % groups || w.shape(0) == 0 || w.size() == 0)
    throw py::value_error(std::string(op) + ": w (" + shape_str(w) +
                          ") needs output channels divisible by groups=" +
                          std::to_string(groups) + " and no empty dimension");
  reduction(op, w.shape(1) * w.shape(2) * w.shape(3));
  mte_conv2d_desc d{};
  d.in_channels = w.shape(1) * groups, d.out_channels = w.shape(0);
  d.kernel_h = w.shape(2), d.kernel_w = w.shape(3), d.groups = groups;
  auto h = std::make_shared<QWeights>();
  const int8_t *wp = static_cast<const int8_t *>(w.data());
  run_kernel(op, [&] { return mte_qconv2d_prepare(&d, wp, &h->plan); });
  h->isa = mte_active_isa(), h->kind = "qconv2d", h->groups = groups;
  h->shape = {w.shape(0), w.shape(1), w.shape(2), w.shape(3)};
  return h;
}

std::shared_ptr<QWeights> linear_prepare(py::handle w_obj) {
  const char *op = "qlinear_prepare";
  py::array w = checked_int8(op, "w", w_obj, 2, 2);
  check_weights(op, w);
  if (w.shape(0) == 0 || w.shape(1) == 0)
    throw py::value_error(std::string(op) + ": w (" + shape_str(w) + ") is empty");
  reduction(op, w.shape(1));
  auto h = std::make_shared<QWeights>();
  const int8_t *wp = static_cast<const int8_t *>(w.data());
  run_kernel(op, [&] { return mte_qlinear_prepare(w.shape(0), w.shape(1), wp, &h->plan); });
  h->isa = mte_active_isa(), h->kind = "qlinear", h->shape = {w.shape(0), w.shape(1)};
  return h;
}

// the handle, checked against the weight it must have been made from
const mte_qconv2d_plan *plan_of(const char *op, py::handle obj, const py::array &w,
                                int64_t groups, const char *kind) {
  if (obj.is_none()) return nullptr;
  auto h = py::cast<std::shared_ptr<QWeights>>(obj);
  std::vector<int64_t> shape(w.shape(), w.shape() + w.ndim());
  if (h->kind != kind || h->shape != shape || h->groups != groups || h->isa != mte_active_isa())
    throw py::value_error(std::string(op) + ": plan was prepared for another weight, groups or "
                          "ISA (" + h->kind + " " + h->isa + "); prepare it again for w (" +
                          shape_str(w) + ") on " + mte_active_isa());
  return h->plan;
}

// ------------------------------------------------------------------ conv, linear

py::array qconv2d(py::handle x_obj, py::handle xzp, py::handle w_obj, py::handle b_obj,
                  py::handle m_obj, py::handle s_obj, py::handle yzp, py::handle lo,
                  py::handle hi, py::handle stride, py::handle padding, py::handle dilation,
                  py::handle groups_obj, py::handle plan_obj, py::handle out_obj) {
  const char *op = "qconv2d";
  py::array x = checked_int8(op, "x", x_obj, 4, 4);
  py::array w = checked_int8(op, "w", w_obj, 4, 4);
  const int32_t x_zp = zero_point(op, "x_zero_point", xzp);
  const int32_t y_zp = zero_point(op, "y_zero_point", yzp);
  auto act = act_range(op, lo, hi);
  auto st = tuple_of(op, "stride", stride, 2, 1), dl = tuple_of(op, "dilation", dilation, 2, 1);
  auto pd = tuple_of(op, "padding", padding, 4, 0);
  const int64_t groups = ranged(op, "groups", groups_obj, 1, kMaxParam);
  mte_conv2d_desc d{x.shape(0), x.shape(1), x.shape(2), x.shape(3), w.shape(0), w.shape(2),
                    w.shape(3), 0, 0, st[0], st[1], pd[0], pd[1], pd[2], pd[3], dl[0], dl[1],
                    groups};
  if (d.in_channels % groups || d.out_channels % groups || w.shape(1) * groups != d.in_channels)
    throw py::value_error("qconv2d: x has shape (" + shape_str(x) + ") and w (" + shape_str(w) +
                          "): with groups=" + std::to_string(groups) +
                          " both C and O must divide by groups and w must be (O, C/groups, kh, "
                          "kw)");
  if (d.out_channels == 0 || w.size() == 0)
    throw py::value_error("qconv2d: w (" + shape_str(w) + ") is empty");
  Channels c = channels(op, b_obj, m_obj, s_obj, d.out_channels);
  reduction(op, w.shape(1) * d.kernel_h * d.kernel_w);
  d.out_h = mte_conv2d_output_size(d.in_h, d.kernel_h, d.stride_h, d.pad_top, d.pad_bottom,
                                   d.dilation_h);
  d.out_w = mte_conv2d_output_size(d.in_w, d.kernel_w, d.stride_w, d.pad_left, d.pad_right,
                                   d.dilation_w);
  if (d.out_h < 1 || d.out_w < 1)
    throw py::value_error("qconv2d: the window does not fit the (padded) input of shape (" +
                          shape_str(x) + "): the output would be " + std::to_string(d.out_h) +
                          "x" + std::to_string(d.out_w));
  const mte_qconv2d_plan *plan = plan_of(op, plan_obj, w, groups, "qconv2d");
  if (!plan) check_weights(op, w);
  py::array y = output_array<int8_t>(op, out_obj, {d.batch, d.out_channels, d.out_h, d.out_w},
                                     {&x});
  c.rq.zero_point = y_zp, c.rq.act_min = act.first, c.rq.act_max = act.second;
  const int8_t *xp = static_cast<const int8_t *>(x.data());
  const int8_t *wp = static_cast<const int8_t *>(w.data());
  int8_t *yp = static_cast<int8_t *>(y.mutable_data());
  run_kernel(op, [&] {
    return plan ? mte_qconv2d_run(plan, &d, xp, x_zp, c.b, &c.rq, yp, nullptr)
                : mte_qconv2d(&d, xp, x_zp, wp, c.b, &c.rq, yp, nullptr);
  });
  return y;
}

py::array qlinear(py::handle x_obj, py::handle xzp, py::handle w_obj, py::handle b_obj,
                  py::handle m_obj, py::handle s_obj, py::handle yzp, py::handle lo,
                  py::handle hi, py::handle plan_obj, py::handle out_obj) {
  const char *op = "qlinear";
  py::array x = checked_int8(op, "x", x_obj, 2, 2);
  py::array w = checked_int8(op, "w", w_obj, 2, 2);
  const int32_t x_zp = zero_point(op, "x_zero_point", xzp);
  const int32_t y_zp = zero_point(op, "y_zero_point", yzp);
  auto act = act_range(op, lo, hi);
  const int64_t rows = x.shape(0), K = x.shape(1), M = w.shape(0);
  if (w.shape(1) != K)
    throw py::value_error("qlinear: x has shape (" + shape_str(x) + ") and w (" + shape_str(w) +
                          "): w must be (M, " + std::to_string(K) +
                          "), one row of x's width per output");
  Channels c = channels(op, b_obj, m_obj, s_obj, M);
  reduction(op, K);
  if (K == 0 || M == 0) throw py::value_error("qlinear: w (" + shape_str(w) + ") is empty");
  const mte_qconv2d_plan *plan = plan_of(op, plan_obj, w, 1, "qlinear");
  if (!plan) check_weights(op, w);
  py::array y = output_array<int8_t>(op, out_obj, {rows, M}, {&x});
  c.rq.zero_point = y_zp, c.rq.act_min = act.first, c.rq.act_max = act.second;
  const int8_t *xp = static_cast<const int8_t *>(x.data());
  const int8_t *wp = static_cast<const int8_t *>(w.data());
  int8_t *yp = static_cast<int8_t *>(y.mutable_data());
  run_kernel(op, [&] { return mte_qlinear(rows, K, M, xp, x_zp, wp, plan, c.b, &c.rq, yp, nullptr); });
  return y;
}

// ------------------------------------------------------------------ pools

mte_pool2d_params pool_params(const char *op, py::handle kernel, py::handle stride,
                              py::handle padding, py::handle dilation, bool ceil) {
  auto k = tuple_of(op, "kernel", kernel, 2, 1), s = tuple_of(op, "stride", stride, 2, 1);
  auto p = tuple_of(op, "padding", padding, 2, 0), d = tuple_of(op, "dilation", dilation, 2, 1);
  mte_pool2d_params pp{k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1], ceil ? 1 : 0, 0, 0};
  return pp;
}

py::array pool(const char *op, py::handle x_obj, mte_pool2d_params pp, bool avg, int32_t lo,
               int32_t hi, py::handle out_obj) {
  py::array x = checked_int8(op, "x", x_obj, 4, 4);
  const int64_t N = x.shape(0), C = x.shape(1), H = x.shape(2), W = x.shape(3);
  const int64_t Ho = mte_pool2d_output_size(H, pp.kernel_h, pp.stride_h, pp.pad_h,
                                            pp.dilation_h, pp.ceil_mode);
  const int64_t Wo = mte_pool2d_output_size(W, pp.kernel_w, pp.stride_w, pp.pad_w,
                                            pp.dilation_w, pp.ceil_mode);
  if (Ho < 1 || Wo < 1)
    throw py::value_error(std::string(op) + ": the window does not fit the (padded) input of "
                          "shape (" + shape_str(x) + "): the output would be " +
                          std::to_string(Ho) + "x" + std::to_string(Wo));
  py::array y = output_array<int8_t>(op, out_obj, {N, C, Ho, Wo}, {&x});
  const int8_t *xp = static_cast<const int8_t *>(x.data());
  int8_t *yp = static_cast<int8_t *>(y.mutable_data());
  run_kernel(op, [&] {
    return avg ? mte_qavg_pool2d(&pp, N, C, H, W, xp, lo, hi, yp)
               : mte_qmax_pool2d(&pp, N, C, H, W, xp, yp);
  });
  return y;
}

// ------------------------------------------------------------------ element-wise

py::array quantize(py::handle x_obj, py::handle scale, py::handle zp, py::handle out_obj) {
  const char *op = "quantize";
  py::array x = checked_array_of<float>(op, "x", x_obj, 0, 32, "float32",
                                        "convert with .astype(np.float32)");
  const float s = scale_of(op, scale);
  const int32_t z = zero_point(op, "zero_point", zp);
  std::vector<int64_t> shape(x.shape(), x.shape() + x.ndim());
  py::array y = out_obj.is_none() ? py::array(py::dtype::of<int8_t>(), shape)
                                  : checked_int8(op, "out", out_obj, x.ndim(), x.ndim());
  if (!out_obj.is_none()) {
    for (py::ssize_t i = 0; i < x.ndim(); ++i)
      if (y.shape(i) != x.shape(i))
        throw py::value_error("quantize: out has shape (" + shape_str(y) + "), expected (" +
                              shape_str(x) + ")");
    if (!y.writeable()) throw py::value_error("quantize: out is read-only");
    if (overlaps(x, y)) throw py::value_error("quantize: out shares memory with an input");
  }
  const float *xp = static_cast<const float *>(x.data());
  int8_t *yp = static_cast<int8_t *>(y.mutable_data());
  run_kernel(op, [&] { return mte_quantize(x.size(), xp, s, z, yp); });
  return y;
}

// an output like `like` of dtype T (new, or `out` checked)
template <class T>
py::array same_shape_out(const char *op, const py::array &like, py::handle out_obj,
                         std::initializer_list<const py::array *> inputs) {
  std::vector<int64_t> shape(like.shape(), like.shape() + like.ndim());
  if (out_obj.is_none()) return py::array(py::dtype::of<T>(), shape);
  py::array y = std::is_same<T, int8_t>::value
                    ? checked_int8(op, "out", out_obj, like.ndim(), like.ndim())
                    : checked_array(op, "out", out_obj, like.ndim(), like.ndim());
  for (py::ssize_t i = 0; i < like.ndim(); ++i)
    if (y.shape(i) != like.shape(i))
      throw py::value_error(std::string(op) + ": out has shape (" + shape_str(y) +
                            "), expected (" + shape_str(like) + ")");
  if (!y.writeable()) throw py::value_error(std::string(op) + ": out is read-only");
  for (const py::array *a : inputs)
    if (overlaps(y, *a))
      throw py::value_error(std::string(op) + ": out shares memory with an input");
  return y;
}

py::array dequantize(py::handle q_obj, py::handle scale, py::handle zp, py::handle out_obj) {
  const char *op = "dequantize";
  py::array q = checked_int8(op, "q", q_obj, 0, 32);
  const float s = scale_of(op, scale);
  const int32_t z = zero_point(op, "zero_point", zp);
  py::array y = same_shape_out<float>(op, q, out_obj, {&q});
  const int8_t *qp = static_cast<const int8_t *>(q.data());
  float *yp = static_cast<float *>(y.mutable_data());
  run_kernel(op, [&] { return mte_dequantize(q.size(), qp, s, z, yp); });
  return y;
}

py::array requantize(py::handle q_obj, py::handle izp, py::handle m, py::handle sh,
                     py::handle ozp, py::handle out_obj) {
  const char *op = "requantize";
  py::array q = checked_int8(op, "q", q_obj, 0, 32);
  const int32_t in_zp = zero_point(op, "in_zero_point", izp);
  const int32_t out_zp = zero_point(op, "out_zero_point", ozp);
  const int32_t mult = static_cast<int32_t>(ranged(op, "multiplier", m, 0, INT32_MAX));
  const int32_t shift = static_cast<int32_t>(ranged(op, "shift", sh, -31, 30));
  py::array y = same_shape_out<int8_t>(op, q, out_obj, {&q});
  const int8_t *qp = static_cast<const int8_t *>(q.data());
  int8_t *yp = static_cast<int8_t *>(y.mutable_data());
  run_kernel(op, [&] { return mte_requantize(q.size(), qp, in_zp, mult, shift, out_zp, yp); });
  return y;
}

mte_qadd_params qadd_params(const char *op, py::handle azp, py::handle am, py::handle ash,
                            py::handle bzp, py::handle bm, py::handle bsh, py::handle yzp,
                            py::handle ym, py::handle ysh, py::handle lo, py::handle hi,
                            py::handle ls) {
  mte_qadd_params p{};
  p.a_zero_point = zero_point(op, "a_zero_point", azp);
  p.a_multiplier = static_cast<int32_t>(ranged(op, "a_multiplier", am, 0, INT32_MAX));
  p.a_shift = static_cast<int32_t>(ranged(op, "a_shift", ash, -31, 30));
  p.b_zero_point = zero_point(op, "b_zero_point", bzp);
  p.b_multiplier = static_cast<int32_t>(ranged(op, "b_multiplier", bm, 0, INT32_MAX));
  p.b_shift = static_cast<int32_t>(ranged(op, "b_shift", bsh, -31, 30));
  p.y_zero_point = zero_point(op, "y_zero_point", yzp);
  p.y_multiplier = static_cast<int32_t>(ranged(op, "y_multiplier", ym, 0, INT32_MAX));
  p.y_shift = static_cast<int32_t>(ranged(op, "y_shift", ysh, -31, 30));
  auto act = act_range(op, lo, hi);
  p.act_min = act.first, p.act_max = act.second;
  p.left_shift = static_cast<int32_t>(ranged(op, "left_shift", ls, 0, 23));
  return p;
}

py::array qadd(py::handle a_obj, py::handle azp, py::handle am, py::handle ash,
               py::handle b_obj, py::handle bzp, py::handle bm, py::handle bsh, py::handle yzp,
               py::handle ym, py::handle ysh, py::handle lo, py::handle hi, py::handle ls,
               py::handle out_obj, py::handle table_obj) {
  const char *op = "qadd";
  py::array a = checked_int8(op, "a", a_obj, 0, 32), b = checked_int8(op, "b", b_obj, 0, 32);
  std::vector<int64_t> sa(a.shape(), a.shape() + a.ndim()), sb(b.shape(), b.shape() + b.ndim());
  if (sa != sb)
    throw py::value_error("qadd: a has shape (" + shape_str(a) + ") and b (" + shape_str(b) +
                          "); they must be equal (broadcast them first)");
  mte_qadd_params p = qadd_params(op, azp, am, ash, bzp, bm, bsh, yzp, ym, ysh, lo, hi, ls);
  const int8_t *table = nullptr;
  py::array t;
  if (!table_obj.is_none()) { /* qadd_table's result for these same parameters */
    t = checked_int8(op, "table", table_obj, 1, 1);
    if (t.size() != 65536)
      throw py::value_error("qadd: table must hold 65536 values (from qadd_table)");
    table = static_cast<const int8_t *>(t.data());
  }
  py::array y = same_shape_out<int8_t>(op, a, out_obj, {&a, &b});
  const int8_t *ap = static_cast<const int8_t *>(a.data());
  const int8_t *bp = static_cast<const int8_t *>(b.data());
  int8_t *yp = static_cast<int8_t *>(y.mutable_data());
  run_kernel(op, [&] {
    return table ? mte_qadd_lookup(a.size(), ap, bp, table, yp) : mte_qadd(&p, a.size(), ap, bp, yp);
  });
  return y;
}

py::array qadd_table(py::handle azp, py::handle am, py::handle ash, py::handle bzp,
                     py::handle bm, py::handle bsh, py::handle yzp, py::handle ym,
                     py::handle ysh, py::handle lo, py::handle hi, py::handle ls) {
  const char *op = "qadd_table";
  mte_qadd_params p = qadd_params(op, azp, am, ash, bzp, bm, bsh, yzp, ym, ysh, lo, hi, ls);
  py::array_t<int8_t> table(65536);
  int8_t *tp = table.mutable_data();
  run_kernel(op, [&] { return mte_qadd_table(&p, tp); });
  return std::move(table);
}

}  // namespace

void mte_bind_quant(pybind11::module_ &m) {
  namespace py = pybind11;
  py::class_<QWeights, std::shared_ptr<QWeights>>(
      m, "QWeights", "int8 weights packed for the active ISA (qconv2d_prepare, qlinear_prepare)")
      .def_property_readonly("isa", [](const QWeights &h) { return h.isa; })
      .def_property_readonly("shape", [](const QWeights &h) {
        py::tuple t(h.shape.size());
        for (size_t i = 0; i < h.shape.size(); ++i) t[i] = h.shape[i];
        return t;
      });
  m.def("qconv2d", &qconv2d, py::arg("x"), py::arg("x_zero_point"), py::arg("w"),
        py::arg("bias"), py::arg("multiplier"), py::arg("shift"), py::arg("y_zero_point"),
        py::arg("act_min"), py::arg("act_max"), py::arg("stride"), py::arg("padding"),
        py::arg("dilation"), py::arg("groups"), py::arg("plan") = py::none(),
        py::arg("out") = py::none(),
        "qconv2d(x, x_zero_point, w, bias, multiplier, shift, y_zero_point, act_min, act_max,\n"
        "        stride, padding, dilation, groups, plan=None, out=None) -> int8 (N, O, Ho, Wo)\n\n"
        "numpy_int8.qconv2d: int8 NCHW convolution, requantized per output channel in the\n"
        "GEMM's epilogue. stride, dilation: (h, w); padding: (top, bottom, left, right).\n"
        "plan: qconv2d_prepare(w, groups) for the active ISA (weights packed once).");
  m.def("qconv2d_prepare", &conv_prepare, py::arg("w"), py::arg("groups") = 1,
        "qconv2d_prepare(w, groups=1) -> QWeights: w packed into the active ISA's int8 GEMM\n"
        "panels with its row sums, for qconv2d(..., plan=...).");
  m.def("qlinear", &qlinear, py::arg("x"), py::arg("x_zero_point"), py::arg("w"),
        py::arg("bias"), py::arg("multiplier"), py::arg("shift"), py::arg("y_zero_point"),
        py::arg("act_min"), py::arg("act_max"), py::arg("plan") = py::none(),
        py::arg("out") = py::none(),
        "qlinear(x, x_zero_point, w, bias, multiplier, shift, y_zero_point, act_min, act_max,\n"
        "        plan=None, out=None) -> int8 (rows, M): numpy_int8.qlinear.");
  m.def("qlinear_prepare", &linear_prepare, py::arg("w"),
        "qlinear_prepare(w) -> QWeights for qlinear(..., plan=...).");
  m.def("qavg_pool2d",
        [](py::handle x, py::handle k, py::handle s, py::handle p, bool ceil, bool incl,
           py::handle lo, py::handle hi, py::handle out) {
          const char *op = "qavg_pool2d";
          auto act = act_range(op, lo, hi);
          auto pp = pool_params(op, k, s, p, py::make_tuple(1, 1), ceil);
          pp.count_include_pad = incl ? 1 : 0;
          return pool(op, x, pp, true, act.first, act.second, out);
        },
        py::arg("x"), py::arg("kernel"), py::arg("stride"), py::arg("padding"),
        py::arg("ceil_mode"), py::arg("count_include_pad"), py::arg("act_min"),
        py::arg("act_max"), py::arg("out") = py::none(),
        "qavg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad, act_min,\n"
        "            act_max, out=None): numpy_int8.qavg_pool2d.");
  m.def("qmax_pool2d",
        [](py::handle x, py::handle k, py::handle s, py::handle p, py::handle d, bool ceil,
           py::handle out) {
          return pool("qmax_pool2d", x, pool_params("qmax_pool2d", k, s, p, d, ceil), false, 0,
                      0, out);
        },
        py::arg("x"), py::arg("kernel"), py::arg("stride"), py::arg("padding"),
        py::arg("dilation"), py::arg("ceil_mode"), py::arg("out") = py::none(),
        "qmax_pool2d(x, kernel, stride, padding, dilation, ceil_mode, out=None):\n"
        "numpy_int8.qmax_pool2d.");
  m.def("qadd", &qadd, py::arg("a"), py::arg("a_zero_point"), py::arg("a_multiplier"),
        py::arg("a_shift"), py::arg("b"), py::arg("b_zero_point"), py::arg("b_multiplier"),
        py::arg("b_shift"), py::arg("y_zero_point"), py::arg("y_multiplier"),
        py::arg("y_shift"), py::arg("act_min"), py::arg("act_max"), py::arg("left_shift") = 20,
        py::arg("out") = py::none(), py::arg("table") = py::none(),
        "numpy_int8.qadd: TFLite's int8 ADD (with table = qadd_table(...) of the same\n"
        "parameters: one lookup per element, the same result).");
  m.def("qadd_table", &qadd_table, py::arg("a_zero_point"), py::arg("a_multiplier"),
        py::arg("a_shift"), py::arg("b_zero_point"), py::arg("b_multiplier"),
        py::arg("b_shift"), py::arg("y_zero_point"), py::arg("y_multiplier"),
        py::arg("y_shift"), py::arg("act_min"), py::arg("act_max"), py::arg("left_shift") = 20,
        "The 65,536 results of qadd for every int8 pair (a, b): table[(uint8)a << 8 |\n"
        "(uint8)b], for qadd(..., table=...).");
  m.def("quantize", &quantize, py::arg("x"), py::arg("scale"), py::arg("zero_point"),
        py::arg("out") = py::none(), "numpy_int8.quantize: float32 -> int8.");
  m.def("dequantize", &dequantize, py::arg("q"), py::arg("scale"), py::arg("zero_point"),
        py::arg("out") = py::none(), "numpy_int8.dequantize: int8 -> float32.");
  m.def("requantize", &requantize, py::arg("q"), py::arg("in_zero_point"),
        py::arg("multiplier"), py::arg("shift"), py::arg("out_zero_point"),
        py::arg("out") = py::none(), "numpy_int8.requantize: int8 -> int8, one multiplier.");
  m.def("quantize_multiplier",
        [](double real) {
          int32_t mm = 0, sh = 0;
          if (mte_quantize_multiplier(real, &mm, &sh) != MTE_OK)
            throw py::value_error("quantize_multiplier: real must be finite and >= 0, got " +
                                  std::to_string(real));
          return py::make_tuple(mm, sh);
        },
        py::arg("real"), "TFLite's QuantizeMultiplier: (m, shift), real ~= m * 2**(shift - 31).");
  m.def("peak_gops_int8",
        [](double seconds) {
          py::gil_scoped_release nogil;
          return mte_peak_gops_int8(seconds);
        },
        py::arg("seconds") = 0.2,
        "One core's int8 multiply-add peak (GOPS, 2 ops per MAC) with the active ISA's qgemm\n"
        "microkernel (VNNI: vpdpbusd chains); 0 where it has no peak loop.");
  m.def("qgemm_path", [](int64_t k) { return std::string(mte_qgemm_path(k)); },
        py::arg("k") = 0,
        "What the int8 GEMM runs now for a reduction of k terms (0: the best the CPU has),\n"
        "e.g. 'amx_int8 tdpbsud' (AMX, k >= 64) or 'avx512vnni vpdpbusd'.");
}
