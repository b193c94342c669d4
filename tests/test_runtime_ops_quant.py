"""The C runtime's int8 ops (native/runtime/ops_quant.c) against the Python executor, bit for
bit: one-node graphs over seeded shapes and parameters, malformed nodes (MTE_EFORMAT naming
the node), and whole int8 zoo models."""
import ctypes

import numpy as np
import pytest
from runtime_harness import CRuntimeError, check_c, load_c, op_graph

from minitorch_edge.graph import Graph

EFORMAT, EUNSUPPORTED = -8, -4
F32, I8 = np.float32, np.int8


def rng(seed):
    return np.random.default_rng(seed)


def codes(r, shape, lo=-128, hi=127):
    return r.integers(lo, hi + 1, shape).astype(I8)


def scale(r, n=None, lo=0.002, hi=0.1):
    return r.uniform(lo, hi, n).astype(F32) if n else F32(r.uniform(lo, hi))


def zp(r, lo=-20, hi=20):
    return I8(r.integers(lo, hi + 1))


# ---- QuantizeLinear / DequantizeLinear --------------------------------------------------------
@pytest.mark.parametrize("seed", range(6))
def test_quantize_per_tensor(seed):
    r = rng(seed)
    x = (r.standard_normal((2, 3, 5, 7)) * 3).astype(F32)
    x.flat[:6] = [np.inf, -np.inf, np.nan, 0.5 * 0.25, -0.125, 1e30]
    check_c(op_graph("QuantizeLinear", [x], [F32(0.25), zp(r)]), [x], exact=True)
    check_c(op_graph("QuantizeLinear", [x], [np.float64(0.03), zp(r)]), [x], exact=True)


@pytest.mark.parametrize("seed", range(4))
def test_quantize_fallbacks(seed):
    r = rng(seed)
    x = (r.standard_normal((2, 4, 3, 5)) * 4).astype(F32)
    x[0, 0, 0, :3] = [0.5, -1.5, 2.5]
    s = r.choice([0.5, 0.25, 0.1], 4).astype(F32)
    checks = [
        ([s, r.integers(-5, 5, 4).astype(I8)], {"axis": 1}),            # per channel
        ([s, I8(3)], {"axis": -3}),                                      # per-channel scale
        ([F32(0.25), np.uint8(128)], {}),                                # uint8
        ([s, r.integers(100, 150, 4).astype(np.uint8)], {"axis": 1}),
        ([r.choice([0.5, 0.1], 5).astype(F32), I8(0)], {"axis": 3}),     # last axis
    ]
    for consts, attrs in checks:
        check_c(op_graph("QuantizeLinear", [x], consts, **attrs), [x], exact=True)
    x64 = x.astype(np.float64)
    check_c(op_graph("QuantizeLinear", [x64], [F32(0.1), I8(2)]), [x64], exact=True)


@pytest.mark.parametrize("seed", range(4))
def test_dequantize(seed):
    r = rng(seed)
    q = codes(r, (2, 4, 3, 3))
    s = scale(r, 4)
    check_c(op_graph("DequantizeLinear", [q], [scale(r), zp(r)]), [q], exact=True)
    check_c(op_graph("DequantizeLinear", [q], [scale(r)]), [q], exact=True)
    check_c(op_graph("DequantizeLinear", [q], [s, r.integers(-3, 3, 4).astype(I8)], axis=1),
            [q], exact=True)
    u = r.integers(0, 256, (3, 5)).astype(np.uint8)
    check_c(op_graph("DequantizeLinear", [u], [scale(r), np.uint8(128)]), [u], exact=True)
    b = r.integers(-2**31, 2**31 - 1, (2, 4, 3, 3)).astype(np.int32)
    check_c(op_graph("DequantizeLinear", [b], [s, np.zeros(4, np.int32)], axis=1), [b],
            exact=True)
    check_c(op_graph("DequantizeLinear", [b], [scale(r)]), [b], exact=True)


# ---- QLinearConv ----------------------------------------------------------------------------
CONVS = [  # (N, C, H, W), (O, kh, kw), group, strides, pads (t, l, b, r), dilations
    ((1, 8, 9, 9), (16, 1, 1), 1, (1, 1), (0, 0, 0, 0), (1, 1)),
    ((2, 3, 10, 11), (6, 3, 3), 1, (1, 1), (1, 1, 1, 1), (1, 1)),
    ((1, 8, 12, 12), (8, 3, 3), 8, (1, 1), (1, 1, 1, 1), (1, 1)),     # depthwise
    ((1, 8, 13, 12), (8, 3, 3), 8, (2, 2), (1, 1, 1, 1), (1, 1)),     # depthwise, stride 2
    ((2, 6, 14, 13), (4, 3, 3), 1, (2, 2), (0, 1, 2, 0), (1, 1)),     # strided, asymmetric
    ((1, 4, 15, 15), (6, 3, 3), 1, (1, 1), (2, 2, 2, 2), (2, 2)),     # dilated
    ((1, 8, 9, 10), (12, 3, 2), 4, (1, 2), (1, 0, 1, 1), (1, 1)),     # grouped
    ((1, 16, 7, 7), (16, 5, 5), 16, (1, 1), (2, 2, 2, 2), (1, 1)),    # depthwise 5x5
    ((1, 3, 8, 8), (5, 7, 7), 1, (3, 3), (3, 3, 3, 3), (1, 1)),
]


@pytest.mark.parametrize("case", range(len(CONVS)))
def test_qlinear_conv(case):
    xs_shape, (o, kh, kw), group, strides, pads, dil = CONVS[case]
    r = rng(100 + case)
    c = xs_shape[1]
    x = codes(r, xs_shape)
    w = codes(r, (o, c // group, kh, kw), -127, 127)
    for k, (per_channel, bias, act) in enumerate([(True, True, (-128, 127)),
                                                  (False, False, (-3, 127)),
                                                  (True, False, (0, 100))]):
        ws = scale(r, o, 0.001, 0.02) if per_channel else scale(r, None, 0.001, 0.02)
        b = r.integers(-5000, 5000, o).astype(np.int32) if bias else None
        consts = [scale(r), zp(r), w, ws, I8(0), scale(r, None, 0.05, 0.5), zp(r)]
        if b is not None:
            consts.append(b)
        attrs = dict(kernel_shape=[kh, kw], strides=list(strides), pads=list(pads),
                     dilations=list(dil), group=group, act_min=act[0], act_max=act[1])
        if k == 1:
            attrs.pop("kernel_shape")
            attrs.pop("dilations")
        check_c(op_graph("mte.QLinearConv", [x], consts, **attrs), [x], exact=True)


def test_qlinear_conv_prepared_once():
    r = rng(7)
    x, w = codes(r, (1, 4, 6, 6)), codes(r, (8, 4, 3, 3), -127, 127)
    g = op_graph("mte.QLinearConv", [x], [scale(r), zp(r), w, scale(r, 8), I8(0), F32(0.1),
                                          zp(r)], pads=[1, 1, 1, 1])
    m = load_c(g)
    assert m.kernels == [("mte.QLinearConv", "qconv2d")]
    for _ in range(3):   # the same prepared plan, run again
        x = codes(r, (1, 4, 6, 6))
        np.testing.assert_array_equal(m(x)[0], g.run(x))


# ---- QLinearGemm ----------------------------------------------------------------------------
@pytest.mark.parametrize("rows,k,m", [(1, 16, 10), (5, 33, 7), (8, 64, 64), (3, 1, 2)])
def test_qlinear_gemm(rows, k, m):
    r = rng(rows * 1000 + k)
    a, w = codes(r, (rows, k)), codes(r, (m, k), -127, 127)
    for bias, per_channel, act in [(True, True, (-128, 127)), (False, False, (5, 120))]:
        consts = [scale(r), zp(r), w, scale(r, m, 0.001, 0.02) if per_channel else F32(0.01),
                  I8(0), scale(r, None, 0.05, 0.5), zp(r)]
        if bias:
            consts.append(r.integers(-3000, 3000, m).astype(np.int32))
        check_c(op_graph("mte.QLinearGemm", [a], consts, act_min=act[0], act_max=act[1]), [a],
                exact=True)


# ---- QLinearAdd, Requantize, pools ------------------------------------------------------------
@pytest.mark.parametrize("seed", range(6))
def test_qlinear_add(seed):
    r = rng(200 + seed)
    shape = [(2, 3, 4, 5), (17,), (1, 64, 7, 7)][seed % 3]
    a, b = codes(r, shape), codes(r, shape)
    sa, sb = scale(r, None, 0.001, 0.2), scale(r, None, 0.001, 0.2)
    act = (-128, 127) if seed % 2 else (int(r.integers(-10, 10)), 127)
    consts = [sa, zp(r), sb, zp(r), scale(r, None, 0.01, 0.3), zp(r)]
    g = Graph("qadd")
    g.add_input("a", a.shape, "int8"), g.add_input("b", b.shape, "int8")
    names = ["a"] + [g.add_constant(f"c{i}", np.asarray(v)) for i, v in enumerate(consts[:2])]
    names += ["b"] + [g.add_constant(f"d{i}", np.asarray(v)) for i, v in enumerate(consts[2:])]
    g.add_node("mte.QLinearAdd", names, ["y"], act_min=act[0], act_max=act[1])
    g.set_outputs(["y"])
    check_c(g.check(), [a, b], exact=True)
    check_c(op_graph("mte.QLinearAdd", [a], [sa, zp(r), a, sa, zp(r), sa, zp(r)]), [a],
            exact=True)


@pytest.mark.parametrize("seed", range(4))
def test_requantize(seed):
    r = rng(300 + seed)
    q = codes(r, (3, 4, 5))
    s, z = scale(r), zp(r)
    check_c(op_graph("mte.Requantize", [q], [s, z, scale(r, None, 0.001, 1.0), zp(r)]), [q],
            exact=True)
    m = load_c(op_graph("mte.Requantize", [q], [s, z, s, z]))       # the identity: a copy
    assert m.kernels[0][1] == "copy"
    np.testing.assert_array_equal(m(q)[0], q)


def requant_chain(q, r):
    """Requantize -> Requantize -> Requantize: the planner runs the later ones in place."""
    g = Graph("chain")
    g.add_input("x", q.shape, "int8")
    prev = "x"
    for k in range(3):
        c = [g.add_constant(f"c{k}_{i}", np.asarray(v))
             for i, v in enumerate([scale(r), zp(r), scale(r), zp(r)])]
        g.add_node("mte.Requantize", [prev, c[0], c[1], c[2], c[3]], [f"y{k}"])
        prev = f"y{k}"
    g.set_outputs([prev])
    return g.check()


def offsets(model, names):
    """The arena offsets the C plan gives these values."""
    lib = model.lib
    lib.mte_model_find_value.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.mte_model_value_offset.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.mte_model_value_offset.restype = ctypes.c_int64
    return [lib.mte_model_value_offset(model.handle,
                                       lib.mte_model_find_value(model.handle, n.encode()))
            for n in names]


def test_requantize_and_fake_quantize_in_place():
    r = rng(9)
    q = codes(r, (2, 8, 8))
    g = requant_chain(q, r)
    a, b, c = offsets(load_c(g), ["y0", "y1", "y2"])
    assert a == b == c >= 0                      # y1, y2 written over their inputs
    check_c(g, [q], exact=True)
    x = r.standard_normal((2, 3, 4)).astype(F32)
    g = Graph("fq_chain")
    g.add_input("x", x.shape, "float32")
    g.add_node("Relu", ["x"], ["r"])
    s, z = g.add_constant("s", np.asarray(F32(0.02))), g.add_constant("z", np.asarray(I8(3)))
    g.add_node("mte.FakeQuantize", ["r", s, z], ["f"])
    g.add_node("mte.FakeQuantize", ["f", s, z], ["y"], quant_min=-10, quant_max=50)
    g.set_outputs(["y"])
    g.check()
    a, b, c = offsets(load_c(g), ["r", "f", "y"])
    assert a == b == c >= 0
    check_c(g, [x], exact=True)


@pytest.mark.parametrize("seed", range(4))
def test_qlinear_global_average_pool(seed):
    r = rng(400 + seed)
    shape = [(1, 16, 7, 7), (2, 5, 1, 1), (3, 8, 13, 11), (1, 4, 64, 64)][seed]
    x = codes(r, shape)
    for ys in (scale(r), F32(1e-4), F32(5.0)):
        g = op_graph("mte.QLinearGlobalAveragePool", [x], [scale(r), zp(r, -128, 127), ys,
                                                           zp(r)])
        check_c(g, [x], exact=True)


POOLS = [  # kernel, strides, pads (t, l, b, r), ceil_mode, count_include_pad
    ((2, 2), (2, 2), (0, 0, 0, 0), 0, 0),
    ((3, 3), (1, 1), (1, 1, 1, 1), 0, 0),
    ((3, 3), (2, 2), (1, 1, 1, 1), 1, 1),
    ((3, 2), (2, 1), (1, 0, 1, 0), 1, 0),
    ((5, 5), (3, 3), (2, 2, 2, 2), 0, 1),
]


@pytest.mark.parametrize("case", range(len(POOLS)))
def test_qlinear_average_pool(case):
    k, s, p, ceil, cip = POOLS[case]
    r = rng(500 + case)
    x = codes(r, (2, 3, 11, 10))
    for same in (True, False):
        xs, xz = scale(r), zp(r)
        ys, yz = (xs, xz) if same else (scale(r), zp(r))
        g = op_graph("mte.QLinearAveragePool", [x], [xs, xz, ys, yz], kernel_shape=list(k),
                     strides=list(s), pads=list(p), ceil_mode=ceil, count_include_pad=cip)
        check_c(g, [x], exact=True)


# ---- FakeQuantize ---------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(4))
def test_fake_quantize(seed):
    r = rng(600 + seed)
    x = (r.standard_normal((2, 4, 3, 5)) * 2).astype(F32)
    x.flat[:4] = [np.nan, np.inf, -np.inf, 0.0]
    s4 = r.uniform(0.01, 0.1, 4).astype(F32)
    s4[0] = 0.1                    # 1 / 0.1 rounds in float32
    x[0, 0, 1, :2] = [0.05, 0.15]  # ties of x / s
    cases = [([F32(0.1), np.int32(0)], {}),
             ([scale(r), np.int32(r.integers(-5, 5))], {"quant_min": -100, "quant_max": 90}),
             ([s4, r.integers(-3, 3, 4).astype(np.int32)], {"axis": 1}),
             ([s4, np.zeros(4, np.int32)], {"axis": -3}),
             ([r.uniform(0.01, 0.1, 5).astype(F32), np.zeros(5, np.int32)], {"axis": 3}),
             ([F32(0.05), np.float32(2.0)], {"quant_min": 0, "quant_max": 255 - 128})]
    for consts, attrs in cases:
        check_c(op_graph("mte.FakeQuantize", [x], consts, **attrs), [x], exact=True)
    x64 = x.astype(np.float64)
    check_c(op_graph("mte.FakeQuantize", [x64], [F32(0.03), np.int32(1)]), [x64], exact=True)


# ---- malformed nodes --------------------------------------------------------------------------
def unchecked(op, inputs, constants, out_shape, out_dtype, **attrs):
    """A one-node graph whose output is declared as given, saved without Graph.check."""
    g = Graph(f"bad_{op}")
    names = [g.add_input(f"x{i}", a.shape, a.dtype) for i, a in enumerate(inputs)]
    names += ["" if c is None else g.add_constant(f"c{i}", np.asarray(c))
              for i, c in enumerate(constants)]
    g.add_node(op, names, ["y"], name="bad_node", infer=False, **attrs)
    g._new_value("y", out_shape, out_dtype, "test")
    g.set_outputs(["y"])
    g.check = lambda: g
    return g


def conv_consts(r, xs=F32(0.02), xz=I8(1), ws=None, wz=I8(0), ys=F32(0.1), yz=I8(0), b=None):
    w = codes(r, (4, 3, 3, 3), -127, 127)
    c = [xs, xz, w, scale(r, 4) if ws is None else ws, wz, ys, yz]
    return c + ([] if b is None else [b])


def expect_eformat(g, *words):
    with pytest.raises(CRuntimeError) as e:
        load_c(g)
    assert e.value.status == EFORMAT, e.value.message
    assert "bad_node" in e.value.message, e.value.message
    for w in words:
        assert w in e.value.message, e.value.message


MALFORMED = {
    "zero scale": dict(xs=F32(0.0)),
    "negative scale": dict(ys=F32(-0.5)),
    "nan weight scale": dict(ws=np.array([0.1, np.nan, 0.1, 0.1], F32)),
    "wrong weight scale length": dict(ws=np.full(3, 0.1, F32)),
    "zero point out of int8": dict(xz=np.int32(200)),
    "two zero points": dict(yz=np.zeros(2, I8)),
    "weight zero point": dict(wz=I8(3)),
    "bias dtype": dict(b=np.zeros(4, np.int64)),
    "bias shape": dict(b=np.zeros(5, np.int32)),
}


@pytest.mark.parametrize("what", sorted(MALFORMED))
def test_malformed_qconv(what):
    r = rng(11)
    x = codes(r, (1, 3, 6, 6))
    g = unchecked("mte.QLinearConv", [x], conv_consts(r, **MALFORMED[what]), (1, 4, 4, 4), "int8")
    expect_eformat(g)


def test_malformed_attributes_and_shapes():
    r = rng(12)
    x = codes(r, (1, 3, 6, 6))
    expect_eformat(unchecked("mte.QLinearConv", [x], conv_consts(r), (1, 4, 6, 6), "int8"),
                   "declared")
    expect_eformat(unchecked("mte.QLinearConv", [x], conv_consts(r), (1, 4, 4, 4), "int8",
                             act_min=10, act_max=5), "act_min")
    expect_eformat(unchecked("mte.QLinearConv", [x], conv_consts(r), (1, 4, 4, 4), "int8",
                             act_max=300), "act_min")
    a = codes(r, (2, 8))
    gemm = [F32(0.1), I8(0), codes(r, (3, 8), -127, 127), F32(0.01), I8(0), F32(0.2), I8(0)]
    expect_eformat(unchecked("mte.QLinearGemm", [a], gemm, (2, 4), "int8"), "declared")
    expect_eformat(unchecked("mte.QLinearGemm", [a], gemm + [np.zeros(3, np.float32)],
                             (2, 3), "int8"), "int32")
    expect_eformat(unchecked("mte.QLinearAdd", [a], [F32(0.1), I8(0), a, F32(0.0), I8(0),
                                                     F32(0.1), I8(0)], (2, 8), "int8"))
    expect_eformat(unchecked("mte.Requantize", [a], [F32(0.1), np.int16(-129), F32(0.1), I8(0)],
                             (2, 8), "int8"), "zero point")
    expect_eformat(unchecked("mte.QLinearGlobalAveragePool", [x], [F32(0.1), I8(0), F32(0.1),
                                                                   I8(0)], (1, 3, 2, 2), "int8"))
    expect_eformat(unchecked("QuantizeLinear", [x.astype(F32)], [F32(-1.0), I8(0)],
                             x.shape, "int8"), "scale")
    expect_eformat(unchecked("DequantizeLinear", [x], [F32(0.1), I8(0)], x.shape, "float64"))
    expect_eformat(unchecked("mte.FakeQuantize", [x.astype(F32)], [F32(0.1), I8(0)], x.shape,
                             "float32", quant_min=5, quant_max=5), "quant_min")
    expect_eformat(unchecked("mte.QLinearAveragePool", [x], [F32(0.1), I8(0), F32(0.1), I8(0)],
                             (1, 3, 3, 3), "int8", kernel_shape=[2, 2], strides=[2, 2],
                             pads=[1, 0, 0, 0]), "symmetric")


def test_computed_scale_is_unsupported():
    r = rng(13)
    q = codes(r, (4, 4))
    s = np.asarray(F32(0.1)).reshape(1)
    g = op_graph("mte.Requantize", [q, s], [I8(0), F32(0.2), I8(1)])
    g.nodes[0].inputs = ["x0", "x1", "c0", "c1", "c2"]
    with pytest.raises(CRuntimeError) as e:
        load_c(g)
    assert e.value.status == EUNSUPPORTED and "constant" in e.value.message


# ---- whole int8 models --------------------------------------------------------------------------
def int8_model(name):
    from minitorch_edge import models, quant
    make, shape = {"smallcnn": (lambda: models.SmallCNN(), (1, 1, 28, 28)),
                   "mobilenet_v2": (lambda: models.mobilenet_v2(num_classes=10), (1, 3, 64, 64)),
                   "resnet18": (lambda: models.resnet18(num_classes=10), (1, 3, 32, 32))}[name]
    m = make()
    m.eval()
    x = np.random.default_rng(0).standard_normal(shape).astype(F32)
    return quant.quantize(m, [x]), x


@pytest.mark.parametrize("name", ["smallcnn", "mobilenet_v2", "resnet18"])
def test_int8_models_bit_exact(name):
    g, x = int8_model(name)
    model = load_c(g)
    want = g.run(x)
    want = list(want) if isinstance(want, tuple) else [want]
    for got, ref in zip(model(x), want):
        np.testing.assert_array_equal(got, ref)
