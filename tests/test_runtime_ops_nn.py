"""The C runtime's neural-network ops (native/runtime/ops_gemm.c and ops_nn.c) against the Python reference
(graph.run_reference): every convolution route the C side chooses (depthwise 3x3, general
depthwise, direct, Winograd, im2col + GEMM) with its epilogues, Gemm / GEMV / MatMul, pooling,
normalization, attention and Pad; the zoo's float graphs end to end; malformed nodes refused
with a message naming the node."""
import numpy as np
import pytest
from runtime_harness import CRuntimeError, check_c, load_c, op_graph

from minitorch_edge import graph, models

RNG = np.random.default_rng(7)
ACTS = ["none", "relu", "relu6", "gelu", "gelu_tanh", "silu", "hardswish"]


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def conv_graph(x, w, b=None, residual=None, fused=False, **attrs):
    attrs.setdefault("kernel_shape", list(w.shape[2:]))
    consts = [w, b]
    if fused:
        ins = [x] + ([residual] if residual is not None else [])
        g = graph.Graph("conv")
        names = [g.add_input("x", x.shape)]
        names += [g.add_constant("w", w), g.add_constant("b", b) if b is not None else ""]
        if residual is not None:
            names.append(g.add_input("r", residual.shape))
        g.add_node("mte.ConvAct", names, ["y"], **attrs)
        g.set_outputs(["y"])
        return g.check(), ins
    return op_graph("Conv", [x], consts, **attrs), [x]


def kernel_of(g, ins):
    return load_c(g).kernels[0][1]


CONV_CASES = [  # (x shape, w shape, attrs, expected route)
    ((1, 8, 9, 9), (8, 1, 3, 3), dict(group=8, pads=[1, 1, 1, 1]), "depthwise3x3"),
    ((2, 8, 10, 7), (8, 1, 3, 3), dict(group=8, pads=[1, 1, 1, 1], strides=[2, 2]), "depthwise3x3"),
    ((1, 6, 11, 11), (6, 1, 5, 5), dict(group=6, pads=[2, 2, 2, 2], strides=[2, 2]), "depthwise"),
    ((1, 4, 8, 8), (4, 1, 3, 3), dict(group=4), "depthwise"),
    ((1, 3, 32, 32), (64, 3, 7, 7), dict(pads=[3, 3, 3, 3], strides=[2, 2]), None),
    ((1, 16, 12, 12), (24, 16, 3, 3), dict(pads=[1, 1, 1, 1]), None),
    ((2, 32, 14, 14), (32, 32, 3, 3), dict(pads=[1, 1, 1, 1]), None),
    ((1, 24, 10, 10), (40, 24, 1, 1), {}, None),
    ((1, 8, 9, 11), (6, 4, 3, 3), dict(group=2, pads=[0, 1, 2, 1], dilations=[2, 1]), None),
    ((1, 5, 7, 7), (3, 5, 2, 4), dict(strides=[2, 3], pads=[1, 0, 0, 2]), None),
]


@pytest.mark.parametrize("xs, ws, attrs, route", CONV_CASES)
@pytest.mark.parametrize("bias", [True, False])
def test_conv(xs, ws, attrs, route, bias):
    x, w = f32(*xs), f32(*ws) * 0.3
    b = f32(ws[0]) if bias else None
    g, ins = conv_graph(x, w, b, **attrs)
    check_c(g, ins, rtol=1e-4, atol=1e-5)
    if route:
        assert kernel_of(g, ins) == route


def test_conv_routes_cover_direct_winograd_and_gemm():
    """The routes the C side picked over CONV_CASES include every kind (the measured rules
    decide which shapes get which; this checks that each one was run by the tests above)."""
    seen = set()
    for xs, ws, attrs, _ in CONV_CASES:
        x, w = f32(*xs), f32(*ws)
        seen.add(kernel_of(*conv_graph(x, w, **dict(attrs, kernel_shape=list(ws[2:])))))
    for xs, ws in [((1, 64, 56, 56), (64, 64, 3, 3)), ((1, 256, 14, 14), (256, 256, 3, 3))]:
        seen.add(kernel_of(*conv_graph(f32(*xs), f32(*ws), pads=[1, 1, 1, 1])))
    want = {"depthwise3x3", "depthwise", "im2col+gemm"}
    if _direct_kernel_runs_here():      # the direct KxK kernel exists for AVX-512 only
        want.add("direct")
    assert want <= seen, seen


def _direct_kernel_runs_here():
    from minitorch_edge import _C
    return _C.active_isa().startswith("avx512")


@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("case", [0, 2, 4, 5, 7])
def test_conv_act_and_residual(act, case):
    xs, ws, attrs, _ = CONV_CASES[case]
    x, w, b = f32(*xs), f32(*ws) * 0.3, f32(ws[0])
    g0, _ = conv_graph(x, w, b, **attrs)
    out_shape = g0.values["y0"].shape
    for residual in (None, f32(*out_shape)):
        if residual is not None and attrs.get("group", 1) > 1:
            continue        # the depthwise kernels take no residual: another route runs
        g, ins = conv_graph(x, w, b, residual, fused=True, activation=act, **attrs)
        check_c(g, ins, rtol=1e-4, atol=1e-5)


def test_winograd_route_with_residual():
    x, w, b = f32(1, 64, 28, 28), f32(64, 64, 3, 3) * 0.1, f32(64)
    r = f32(1, 64, 28, 28)
    g, ins = conv_graph(x, w, b, r, fused=True, activation="relu", pads=[1, 1, 1, 1])
    check_c(g, ins, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("m", [1, 2, 4, 5, 33])
@pytest.mark.parametrize("trans_b", [0, 1])
def test_gemm_and_gemv(m, trans_b):
    a, w = f32(m, 70), f32(*((40, 70) if trans_b else (70, 40)))
    for c in (None, f32(40)):
        g = op_graph("Gemm", [a], [w, c], transB=trans_b)
        check_c(g, [a], rtol=1e-5, atol=1e-5)
    c2 = f32(m, 1)
    g = op_graph("Gemm", [a], [w, c2], transB=trans_b, alpha=0.5, beta=2.0)
    check_c(g, [a], rtol=1e-5, atol=1e-5)
    assert load_c(op_graph("Gemm", [a], [w], transB=trans_b)).kernels[0][1] == (
        "gemv" if m <= 4 else "gemm")


def test_gemm_trans_a_and_computed_weight():
    a, w = f32(30, 6), f32(30, 8)
    check_c(op_graph("Gemm", [a, w], transA=1), [a, w], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("m", [1, 9])
def test_gemm_act_with_residual(act, m):
    a, w, c, r = f32(m, 50), f32(20, 50), f32(20), f32(m, 20)
    g = graph.Graph("gemm_act")
    g.add_input("a", a.shape)
    g.add_input("r", r.shape)
    g.add_node("mte.GemmAct", ["a", g.add_constant("w", w), g.add_constant("c", c), "r"], ["y"],
               transB=1, activation=act)
    g.set_outputs(["y"])
    check_c(g.check(), [a, r], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("sa, sb", [((5, 7), (7, 3)), ((7,), (7, 3)), ((5, 7), (7,)), ((7,), (7,)),
                                    ((2, 3, 5, 7), (2, 3, 7, 4)), ((2, 1, 5, 7), (3, 7, 4)),
                                    ((4, 5, 7), (7, 2)), ((1, 6), (3, 6, 2))])
def test_matmul(sa, sb):
    a, b = f32(*sa), f32(*sb)
    check_c(op_graph("MatMul", [a, b]), [a, b], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "int8"])
@pytest.mark.parametrize("attrs", [dict(kernel_shape=[2, 2], strides=[2, 2]),
                                   dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
                                   dict(kernel_shape=[3, 2], strides=[1, 2], ceil_mode=1),
                                   dict(kernel_shape=[3, 3], dilations=[2, 2], pads=[1, 1, 1, 1])])
def test_max_pool(dtype, attrs):
    x = f32(2, 3, 11, 10)
    if dtype == "int8":
        x = RNG.integers(-128, 128, x.shape).astype(np.int8)
    check_c(op_graph("MaxPool", [x], **attrs), [x], exact=True)


@pytest.mark.parametrize("attrs", [dict(kernel_shape=[2, 2], strides=[2, 2]),
                                   dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                                   dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                                        count_include_pad=1, strides=[2, 2], ceil_mode=1)])
def test_average_pool(attrs):
    x = f32(1, 4, 9, 9)
    check_c(op_graph("AveragePool", [x], **attrs), [x])


@pytest.mark.parametrize("shape", [(1, 8, 7, 7), (2, 3, 1, 1), (2, 5, 4, 6, 3)])
def test_global_average_pool(shape):
    x = f32(*shape)
    check_c(op_graph("GlobalAveragePool", [x]), [x])


@pytest.mark.parametrize("shape", [(2, 4), (2, 4, 5, 3)])
def test_batch_norm(shape):
    x, c = f32(*shape), shape[1]
    consts = [f32(c), f32(c), f32(c), np.abs(f32(c)) + 0.1]
    check_c(op_graph("BatchNormalization", [x], consts, epsilon=1e-3), [x], rtol=1e-6)


@pytest.mark.parametrize("axis, affine", [(-1, True), (1, True), (-1, False), (2, True)])
def test_layer_norm(axis, affine):
    x = f32(3, 4, 10)
    tail = x.shape[axis % 3:]
    consts = [f32(*tail), f32(*tail)] if affine else []
    check_c(op_graph("LayerNormalization", [x], consts, axis=axis, epsilon=1e-5), [x],
            rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mask_shape", [None, (2, 1, 1, 6), (5, 6), (2, 3, 5, 6)])
@pytest.mark.parametrize("causal", [0, 1])
def test_attention(mask_shape, causal):
    q, k, v = f32(2, 3, 5, 4), f32(2, 3, 6, 4), f32(2, 3, 6, 8)
    ins = [q, k, v] + ([np.where(RNG.random(mask_shape) < 0.2, -np.inf, 0).astype(np.float32)]
                       if mask_shape else [])
    check_c(op_graph("mte.Attention", ins, scale=0.5, causal=causal), ins, rtol=1e-5,
            atol=1e-5)


def test_attention_broadcast_heads():
    q, k, v = f32(2, 3, 5, 4), f32(2, 1, 6, 4), f32(1, 1, 6, 4)
    check_c(op_graph("mte.Attention", [q, k, v], scale=0.3), [q, k, v], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
def test_pad(mode):
    x = f32(2, 3, 4, 5)
    pads = np.array([0, 1, 2, 3, 0, 2, 1, 1], np.int64)
    consts = [pads] + ([np.array(1.5, np.float32)] if mode == "constant" else [])
    check_c(op_graph("Pad", [x], consts, mode=mode), [x], exact=True)
    xi = RNG.integers(-5, 5, (3, 4)).astype(np.int64)
    check_c(op_graph("Pad", [xi], [np.array([1, 0, 2, 3], np.int64)], mode=mode), [xi])


ZOO = {
    "small_cnn": (models.SmallCNN, (2, 1, 28, 28)),
    "resnet18": (lambda: models.resnet18(num_classes=10), (1, 3, 32, 32)),
    "mobilenet_v2": (lambda: models.mobilenet_v2(num_classes=10), (1, 3, 64, 64)),
    "efficientnet_lite0": (lambda: models.efficientnet_lite0(num_classes=10), (1, 3, 64, 64)),
    "mlp": (models.MLP, (3, 784)),
}


@pytest.mark.parametrize("name", list(ZOO))
@pytest.mark.parametrize("optimized", [True, False])
def test_zoo_float(name, optimized):
    make, shape = ZOO[name]
    m = make()
    m.eval()
    x = f32(*shape)
    g = graph.trace(m, x)
    check_c(g.optimize() if optimized else g, [x], rtol=1e-4, atol=1e-5)


# ---- refused nodes ----------------------------------------------------------------------------
def refused(g, *words):
    with pytest.raises(CRuntimeError) as e:
        load_c(g, unchecked=True)
    for word in words:
        assert word in e.value.message, e.value.message
    return e.value


def declare(g, name, shape):
    g.values[name].shape = tuple(shape)
    return g


def test_wrong_declared_output_is_refused():
    x, w = f32(1, 3, 8, 8), f32(4, 3, 3, 3)
    g = declare(op_graph("Conv", [x], [w], kernel_shape=[3, 3]), "y0", (1, 4, 8, 8))
    err = refused(g, "Conv", "y0", "[1, 4, 6, 6]")
    assert err.status == -8


def test_bad_attributes_are_refused():
    x, w = f32(1, 3, 8, 8), f32(4, 3, 3, 3)
    g = op_graph("Conv", [x], [w], kernel_shape=[3, 3])
    g.nodes[0].attrs["strides"] = [0, 1]
    assert refused(g, "strides").status == -8
    g.nodes[0].attrs["strides"] = "x"
    assert refused(g, "strides").status == -8
    g = op_graph("mte.ConvAct", [x], [w], kernel_shape=[3, 3], activation="relu")
    g.nodes[0].attrs["activation"] = "swish"
    assert refused(g, "swish").status == -8
    g = op_graph("Gemm", [f32(2, 3)], [f32(4, 3)], transB=1)
    g.values["c0"].shape = (3, 4)
    g.constants["c0"] = f32(3, 4)
    refused(g, "multiplied")


def test_computed_conv_weight_is_unsupported():
    x, w = f32(1, 3, 8, 8), f32(4, 3, 3, 3)
    g = op_graph("Conv", [x, w], kernel_shape=[3, 3])
    assert refused(g, "constant").status == -4
