"""The folding and fusion passes (graph/passes/fold_batch_norm.py, fold_pad.py, fuse_epilogue.py):
on hand-built graphs, on traced zoo models with randomised BatchNorm statistics and on random
small conv / linear graphs, each pass alone and their sequence keep the outputs, change the op
counts as expected, keep node and graph input/output names, and leave patterns they cannot
take alone."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minitorch_edge import graph, models
from minitorch_edge.graph import Graph
from minitorch_edge.graph.passes import fuse_epilogue as fe
from harness import randomize_bn

RNG = np.random.default_rng(0)
F32 = np.float32
SEQUENCE = ["fold_pad", "fold_batch_norm", "fuse_epilogue"]
SUPPORTED = fe.SUPPORTED_ACTIVATIONS


def close(got, want, rtol=1e-5):
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)


def same_outputs(g, g2, *xs):
    want, got = g.run(*xs), g2.run(*xs)
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.shape == b.shape and a.dtype == b.dtype
        close(a, b)


def rand(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(F32)




# ---- building blocks for hand-built graphs ----------------------------------------------------
def conv(g, x, cout, k=3, stride=1, pad=1, group=1, bias=True, name=None, op="Conv", **extra):
    cin = g.values[x].shape[1]
    w = g.add_constant("w", rand(cout, cin // group, k, k, scale=1 / np.sqrt(cin * k * k)))
    b = g.add_constant("b", rand(cout, scale=0.1)) if bias else ""
    ins = [x, w, b] + ([extra.pop("residual", "")] if op == "mte.ConvAct" else [])
    return g.add_node(op, ins, name=name, kernel_shape=[k, k], strides=[stride, stride],
                      pads=[pad] * 4, dilations=[1, 1], group=group, **extra).outputs[0]


def gemm(g, a, n, bias=True, name=None, **attrs):
    k = g.values[a].shape[1]
    w = g.add_constant("w", rand(n, k, scale=1 / np.sqrt(k)))
    b = g.add_constant("b", rand(n, scale=0.1)) if bias else ""
    attrs.setdefault("transB", 1)
    return g.add_node("Gemm", [a, w, b], name=name, **attrs).outputs[0]


def bn(g, x, name=None, outputs=None):
    c = g.values[x].shape[1]
    params = [g.add_constant("scale", RNG.uniform(0.5, 1.5, c).astype(F32)),
              g.add_constant("shift", RNG.normal(0, 0.1, c).astype(F32)),
              g.add_constant("mean", RNG.normal(0, 0.1, c).astype(F32)),
              g.add_constant("var", RNG.uniform(0.5, 1.5, c).astype(F32))]
    return g.add_node("BatchNormalization", [x] + params, outputs, name=name,
                      epsilon=1e-5).outputs[0]


def act(g, x, kind, outputs=None):
    """x -> the activation `kind` as the tracer writes it ("none": x itself)."""
    if kind == "none":
        return x
    dtype = g.values[x].dtype
    if kind in ("relu6", "clip05", "clip0"):
        lo = g.add_constant("bound", np.asarray(0, dtype))
        hi = "" if kind == "clip0" else g.add_constant(
            "bound", np.asarray(6 if kind == "relu6" else 5, dtype))
        return g.add_node("Clip", [x, lo, hi], outputs).outputs[0]
    op, attrs = {"relu": ("Relu", {}), "gelu": ("mte.Gelu", {"approximate": "none"}),
                 "gelu_tanh": ("mte.Gelu", {"approximate": "tanh"}), "silu": ("mte.Silu", {}),
                 "hardswish": ("HardSwish", {}), "sigmoid": ("Sigmoid", {})}[kind]
    return g.add_node(op, [x], outputs, **attrs).outputs[0]


def pad(g, x, pads, mode="constant", value=None):
    ins = [x, g.add_constant("pads", np.asarray(pads, np.int64))]
    if value is not None:
        ins.append(g.add_constant("value", np.asarray(value, g.values[x].dtype)))
    return g.add_node("Pad", ins, mode=mode).outputs[0]


def finish(g, *outs):
    g.set_outputs(list(outs))
    return g.check()


# expected activation name per kind, or None where it does not fuse
FUSES_AS = {"relu": "relu", "relu6": "relu6", "clip0": "relu", "gelu": "gelu",
            "gelu_tanh": "gelu_tanh", "silu": "silu", "hardswish": "hardswish",
            "sigmoid": None, "clip05": None}
ACT_KINDS = list(FUSES_AS)


def fusable(kind):
    return FUSES_AS.get(kind) in SUPPORTED


# ---- fold_batch_norm ----------------------------------------------------------------------------
def test_bn_folds_into_conv_without_bias_and_keeps_names():
    g = Graph()
    x = g.add_input("x", (2, 3, 6, 6))
    c = conv(g, x, 5, bias=False, name="block/conv")
    y = bn(g, c, outputs=["y"])
    finish(g, y)
    g2 = g.optimize(["fold_batch_norm"])
    assert g2.op_counts() == {"Conv": 1}
    node = g2.nodes[0]
    assert node.name == "block/conv" and node.outputs == ["y"] and g2.outputs == ["y"]
    assert node.inputs[2] and g2.values[node.inputs[2]].shape == (5,)     # it got a bias
    assert g2.inputs == ["x"]
    same_outputs(g, g2, rand(2, 3, 6, 6))


def test_bn_fold_is_computed_in_float64():
    g = Graph()
    x = g.add_input("x", (1, 2, 4, 4))
    c = conv(g, x, 3)
    finish(g, bn(g, c))
    g2 = g.optimize(["fold_batch_norm"])
    conv_node, bn_node = g.nodes
    s, b, m, v = (g.constants[p].astype(np.float64) for p in bn_node.inputs[1:])
    k = s / np.sqrt(v + 1e-5)
    w = g.constants[conv_node.inputs[1]].astype(np.float64) * k[:, None, None, None]
    bias = (g.constants[conv_node.inputs[2]].astype(np.float64) - m) * k + b
    folded = g2.nodes[0]
    assert g2.constants[folded.inputs[1]].dtype == np.float32
    np.testing.assert_array_equal(g2.constants[folded.inputs[1]], w.astype(F32))
    np.testing.assert_array_equal(g2.constants[folded.inputs[2]], bias.astype(F32))


def test_bn_folds_into_gemm_and_conv_act():
    g = Graph()
    x = g.add_input("x", (1, 4, 5, 5))
    c = conv(g, x, 4, op="mte.ConvAct", activation="none", bias=False)
    c = bn(g, c)
    a = g.add_input("a", (3, 6))
    h = bn(g, gemm(g, a, 7))
    h2 = bn(g, gemm(g, a, 5, bias=False))
    finish(g, c, h, h2)
    g2 = g.optimize(["fold_batch_norm"])
    assert g2.op_counts() == {"mte.ConvAct": 1, "Gemm": 2}
    same_outputs(g, g2, rand(1, 4, 5, 5), rand(3, 6))


def test_hand_written_bn_mul_then_add_folds():
    """x * k + b after a conv, k and b per channel, in every spelling the tracer may give."""
    for kshape, bshape, swap in (((1, 4, 1, 1), (1, 4, 1, 1), False), ((4, 1, 1), (4, 1, 1), True),
                                 ((), (1, 4, 1, 1), False), ((1, 1, 1, 1), (4, 1, 1), True)):
        g = Graph()
        x = g.add_input("x", (2, 3, 5, 5))
        c = conv(g, x, 4, bias=not swap)
        k = g.add_constant("k", RNG.uniform(0.5, 1.5, kshape).astype(F32))
        b = g.add_constant("b", RNG.normal(0, 0.1, bshape).astype(F32))
        m = g.add_node("Mul", [k, c] if swap else [c, k]).outputs[0]
        y = g.add_node("Add", [b, m] if swap else [m, b], ["y"]).outputs[0]
        finish(g, y)
        g2 = g.optimize(["fold_batch_norm"])
        assert g2.op_counts() == {"Conv": 1}, (kshape, bshape)
        assert g2.outputs == ["y"] and g2.nodes[0].outputs == ["y"]
        same_outputs(g, g2, rand(2, 3, 5, 5))


def test_per_feature_mul_after_gemm_folds_but_broadcasting_ones_do_not():
    g = Graph()
    a = g.add_input("a", (3, 6))
    h = gemm(g, a, 4)
    h = g.add_node("Mul", [h, g.add_constant("k", rand(4))]).outputs[0]
    h = g.add_node("Add", [h, g.add_constant("b", rand(1, 4))]).outputs[0]
    full = g.add_node("Add", [gemm(g, a, 4), g.add_constant("full", rand(3, 4))]).outputs[0]
    x = g.add_input("x", (1, 2, 4, 4))
    c = conv(g, x, 3)
    spatial = g.add_node("Mul", [c, g.add_constant("kw", rand(4))]).outputs[0]   # along W
    wider = g.add_node("Mul", [conv(g, x, 3), g.add_constant("k2", rand(2, 3, 1, 1))]).outputs[0]
    finish(g, h, full, spatial, wider)
    g2 = g.optimize(["fold_batch_norm"])
    assert g2.op_counts() == {"Gemm": 2, "Add": 1, "Conv": 2, "Mul": 2}
    same_outputs(g, g2, rand(3, 6), rand(1, 2, 4, 4))


def test_bn_that_cannot_fold_stays():
    g = Graph()
    x = g.add_input("x", (1, 3, 5, 5))
    y0 = bn(g, x)                                    # BN on a graph input
    c = conv(g, x, 4)
    y1 = bn(g, c)                                    # the conv output is used twice
    y2 = g.add_node("Relu", [c]).outputs[0]
    c2 = conv(g, x, 4)                               # the conv output is a graph output
    y3 = bn(g, c2)
    scale = g.add_input("gamma", (4,))               # BN with a non-constant scale
    c4 = conv(g, x, 4)
    y4 = g.add_node("BatchNormalization", [c4, scale] + g.nodes[-2].inputs[2:],
                    epsilon=1e-5).outputs[0]
    c5 = conv(g, x, 4, op="mte.ConvAct", activation="relu")   # an activation after the bias
    y5 = bn(g, c5)
    a = g.add_input("a", (2, 6))
    y6 = bn(g, gemm(g, a, 4, alpha=0.5))              # a scaled Gemm
    finish(g, y0, y1, y2, c2, y3, y4, y5, y6)
    g2 = g.optimize(["fold_batch_norm"])
    assert g2.op_counts() == g.op_counts()
    same_outputs(g, g2, rand(1, 3, 5, 5), RNG.uniform(0.5, 1.5, 4).astype(F32), rand(2, 6))


# ---- fold_pad -----------------------------------------------------------------------------------
def test_pad_folds_into_conv_pads():
    g = Graph()
    x = g.add_input("x", (1, 2, 6, 7))
    p = pad(g, x, [0, 0, 1, 2, 0, 0, 3, 0])
    c = conv(g, p, 3, pad=1, name="the/conv")
    p2 = pad(g, pad(g, c, [0, 0, 0, 1, 0, 0, 1, 0], value=0.0), [0, 0, 2, 0, 0, 0, 0, 1])
    c2 = conv(g, p2, 2, k=3, stride=2, pad=0, op="mte.ConvAct", activation="relu")
    finish(g, c2)
    g2 = g.optimize(["fold_pad"])
    assert g2.op_counts() == {"Conv": 1, "mte.ConvAct": 1}
    first, second = g2.nodes
    assert first.name == "the/conv" and first.inputs[0] == "x"
    assert first.attrs["pads"] == [1 + 1, 1 + 2, 1 + 3, 1 + 0]           # [t, l, b, r]
    assert second.attrs["pads"] == [2, 1, 1, 1]
    same_outputs(g, g2, rand(1, 2, 6, 7))


def test_pad_that_cannot_fold_stays():
    g = Graph()
    x = g.add_input("x", (1, 2, 6, 6))
    outs = [conv(g, pad(g, x, [0, 0, 1, 1, 0, 0, 1, 1], mode="reflect"), 2),
            conv(g, pad(g, x, [0, 0, 1, 1, 0, 0, 1, 1], mode="edge"), 2),
            conv(g, pad(g, x, [0, 0, 1, 1, 0, 0, 1, 1], value=1.5), 2),
            g.add_node("MaxPool", [pad(g, x, [0, 0, 1, 1, 0, 0, 1, 1])], kernel_shape=[2, 2],
                       strides=[2, 2]).outputs[0]]                            # not a conv
    chan = pad(g, x, [0, 1, 0, 0, 0, 1, 0, 0])                                 # pads channels
    w = g.add_constant("w4", rand(2, 4, 1, 1))
    outs.append(g.add_node("Conv", [chan, w, ""], kernel_shape=[1, 1]).outputs[0])
    shared = pad(g, x, [0, 0, 1, 1, 0, 0, 1, 1])                               # two readers
    outs += [conv(g, shared, 2), conv(g, shared, 3)]
    kept = pad(g, x, [0, 0, 1, 1, 0, 0, 1, 1])                                 # a graph output
    outs += [kept, conv(g, kept, 2)]
    finish(g, *outs)
    g2 = g.optimize(["fold_pad"])
    assert g2.op_counts() == g.op_counts()
    same_outputs(g, g2, rand(1, 2, 6, 6))


def test_negative_pads_do_not_fold():
    """A negative pad crops (the Pad op's run does not take it, so this graph is only
    checked, not run)."""
    g = Graph()
    x = g.add_input("x", (1, 2, 6, 6))
    finish(g, conv(g, pad(g, x, [0, 0, 1, -1, 0, 0, 1, 1]), 2))
    assert g.optimize(["fold_pad"]).op_counts() == {"Pad": 1, "Conv": 1}


# ---- fuse_epilogue ------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ACT_KINDS)
def test_conv_add_activation_fuse(kind):
    g = Graph()
    x = g.add_input("x", (2, 4, 6, 6))
    c = conv(g, x, 4, name="blk/conv")
    s = g.add_node("Add", [x, c]).outputs[0]       # the residual is the first operand
    y = act(g, s, kind, outputs=["y"]) if kind != "none" else s
    finish(g, y)
    g2 = g.optimize(["fuse_epilogue"])
    if fusable(kind):
        assert g2.op_counts() == {"mte.ConvAct": 1}
        node = g2.nodes[0]
        assert node.name == "blk/conv" and node.outputs == ["y"]
        assert node.inputs[3] == "x" and node.attrs["activation"] == FUSES_AS[kind]
        assert node.attrs["pads"] == [1, 1, 1, 1] and node.attrs["group"] == 1
    else:                                          # the Add fuses, the activation stays
        assert g2.op_counts() == {"mte.ConvAct": 1, g.nodes[-1].op: 1}
        assert g2.nodes[0].attrs["activation"] == "none"
    assert g2.outputs == ["y"]
    same_outputs(g, g2, rand(2, 4, 6, 6))


def test_silu_and_hardswish_follow_the_backend():
    """They fuse exactly when backend.numpy_backend.ACTIVATIONS (and the opset) have them."""
    from minitorch_edge.backend import numpy_backend
    from minitorch_edge.graph import opset_nn
    for a in ("silu", "hardswish"):
        assert (a in SUPPORTED) == (a in numpy_backend.ACTIVATIONS and a in opset_nn.ACTIVATIONS)
    for a in ("relu", "relu6", "gelu", "gelu_tanh"):
        assert a in SUPPORTED
    assert set(fe.ACTIVATION_OPS) == {"Relu", "Clip", "mte.Gelu", "mte.Silu", "HardSwish"}


def test_gemm_add_activation_fuse():
    g = Graph()
    a = g.add_input("a", (3, 8))
    h = act(g, gemm(g, a, 8, name="fc1"), "relu")
    h2 = g.add_node("Add", [gemm(g, h, 8, name="fc2"), h]).outputs[0]
    h2 = act(g, h2, "gelu_tanh")
    y = gemm(g, h2, 5, bias=False, name="head")
    y = act(g, y, "relu6", outputs=["y"])
    finish(g, y)
    g2 = g.optimize(["fuse_epilogue"])
    gemms = [n for n in g2.nodes if n.op == "mte.GemmAct"]
    assert [n.name for n in gemms] == ["fc1", "fc2", "head"]
    assert gemms[1].inputs[3] == gemms[0].outputs[0]
    assert g2.op_counts() == {"mte.GemmAct": 3}
    assert [n.attrs["activation"] for n in gemms] == ["relu", "gelu_tanh", "relu6"]
    same_outputs(g, g2, rand(3, 8))


def test_residual_computed_after_the_conv_and_shared_adds():
    """ResNet's downsample block: the Add's operands are both single-use conv outputs; the
    later conv takes the Add, the fused node goes where the Add was, and the graph checks."""
    g = Graph()
    x = g.add_input("x", (1, 4, 8, 8))
    main = conv(g, x, 6, stride=2, name="main")
    short = conv(g, x, 6, k=1, stride=2, pad=0, name="short")     # written after `main`
    y = act(g, g.add_node("Add", [main, short]).outputs[0], "relu")
    finish(g, y)
    g2 = g.optimize(["fuse_epilogue"])
    assert [(n.op, n.name) for n in g2.nodes] == [("Conv", "main"), ("mte.ConvAct", "short")]
    assert g2.nodes[1].inputs[3] == main
    same_outputs(g, g2, rand(1, 4, 8, 8))


def test_epilogue_that_cannot_fuse_stays():
    g = Graph()
    x = g.add_input("x", (1, 3, 5, 5))
    outs = []
    c = conv(g, x, 3)                                    # read twice
    outs += [act(g, c, "relu"), g.add_node("Add", [c, x]).outputs[0]]
    c = conv(g, x, 3)                                    # a graph output
    outs += [c, act(g, c, "relu")]
    c = conv(g, x, 3)                                    # Add(c, c): r is c itself
    outs.append(g.add_node("Add", [c, c]).outputs[0])
    r = g.add_input("r", (1, 3, 1, 1))                   # a broadcasting Add
    outs.append(g.add_node("Add", [conv(g, x, 3), r]).outputs[0])
    c = conv(g, x, 3)                                    # Add's output is a graph output
    s = g.add_node("Add", [c, x]).outputs[0]
    outs += [s, act(g, s, "relu")]
    outs.append(act(g, conv(g, x, 3), "clip05"))         # Clip(0, 5)
    outs.append(act(g, conv(g, x, 3), "sigmoid"))
    a = g.add_input("a", (2, 6))
    wt = g.add_constant("wt", rand(6, 4))
    outs.append(act(g, g.add_node("Gemm", [a, wt, ""]).outputs[0], "relu"))     # transB=0
    outs.append(act(g, gemm(g, a, 4, alpha=2.0), "relu"))
    c2d = g.add_node("Gemm", [a, g.add_constant("w2", rand(4, 6)),
                              g.add_constant("c2", rand(2, 4))], transB=1).outputs[0]
    outs.append(act(g, c2d, "relu"))                     # a 2-D C
    finish(g, *outs)
    g2 = g.optimize(["fuse_epilogue"])
    counts = g2.op_counts()
    # only the Add of the "Add's output is a graph output" case fuses (its Relu reads s,
    # a graph output, so it stays)
    assert counts.pop("mte.ConvAct") == 1
    want = dict(g.op_counts())
    want["Conv"] -= 1
    want["Add"] -= 1
    assert counts == want
    same_outputs(g, g2, rand(1, 3, 5, 5), rand(1, 3, 1, 1), rand(2, 6))


def test_lone_conv_stays_conv_and_conv_act_takes_more():
    g = Graph()
    x = g.add_input("x", (1, 3, 5, 5))
    y0 = conv(g, x, 3)
    c = conv(g, x, 3, op="mte.ConvAct", activation="none")
    y1 = act(g, g.add_node("Add", [c, x]).outputs[0], "relu")
    c = conv(g, x, 3, op="mte.ConvAct", activation="none", residual=x)
    y2 = act(g, c, "gelu")
    finish(g, y0, y1, y2)
    g2 = g.optimize(["fuse_epilogue"])
    assert g2.op_counts() == {"Conv": 1, "mte.ConvAct": 2}
    assert [n.attrs.get("activation") for n in g2.nodes] == [None, "relu", "gelu"]
    assert g2.nodes[2].inputs[3] == "x"
    same_outputs(g, g2, rand(1, 3, 5, 5))


# ---- the zoo ------------------------------------------------------------------------------------
ZOO = {
    "mlp": (lambda: models.MLP(), (2, 784)),
    "small_cnn": (lambda: models.SmallCNN(), (2, 1, 28, 28)),
    "resnet18": (lambda: models.resnet18(num_classes=10), (1, 3, 32, 32)),
    "mobilenet_v2": (lambda: models.mobilenet_v2(num_classes=10), (1, 3, 64, 64)),
    "efficientnet_lite0": (lambda: models.efficientnet_lite0(num_classes=10), (1, 3, 64, 64)),
}


@pytest.fixture(scope="module")
def zoo():
    built = {}
    for name, (make, shape) in ZOO.items():
        x = rand(*shape)
        g = graph.trace(randomize_bn(make(), RNG), x)
        built[name] = (g, x, g.run(x))
    return built


def check_zoo(zoo, name, passes):
    g, x, want = zoo[name]
    g2 = g.optimize(passes)
    close(g2.run(x), want)
    assert g2.inputs == g.inputs and g2.outputs == g.outputs
    names = {n.name for n in g.nodes}
    assert all(n.name in names for n in g2.nodes)
    return g, g2


@pytest.mark.parametrize("name", list(ZOO))
@pytest.mark.parametrize("passes", [["fold_batch_norm"], ["fold_pad"], ["fuse_epilogue"],
                                    SEQUENCE], ids=lambda p: "+".join(p))
def test_zoo_outputs_are_kept(zoo, name, passes):
    g, g2 = check_zoo(zoo, name, passes)
    before, after = g.op_counts(), g2.op_counts()
    if passes == ["fold_pad"]:
        assert after == before                         # the zoo has no Pad
    if "fold_batch_norm" in passes:
        assert after.get("BatchNormalization", 0) == 0
        n_layers = before.get("Conv", 0) + before.get("Gemm", 0)
        assert after.get("Conv", 0) + after.get("Gemm", 0) + after.get("mte.ConvAct", 0) + \
            after.get("mte.GemmAct", 0) == n_layers
    if passes == ["fuse_epilogue"] and before.get("BatchNormalization"):
        # BN sits between every conv and its activation: nothing is adjacent yet
        assert after.get("Relu", 0) + after.get("Clip", 0) == \
            before.get("Relu", 0) + before.get("Clip", 0)


def test_resnet18_folds_and_fuses_completely(zoo):
    g, g2 = check_zoo(zoo, "resnet18", ["fold_batch_norm", "fuse_epilogue"])
    assert g.op_counts()["Add"] == 8 and g.op_counts()["BatchNormalization"] == 20
    counts = g2.op_counts()
    for op in ("BatchNormalization", "Relu", "Add"):
        assert op not in counts
    assert counts["mte.ConvAct"] == 17 and counts["Conv"] == 3     # the 3 downsample convs
    fused = [n for n in g2.nodes if n.op == "mte.ConvAct"]
    assert sum(1 for n in fused if n.inputs[3]) == 8               # the 8 residual Adds
    assert all(n.attrs["activation"] == "relu" for n in fused)
    # the executor runs the fused graph too
    _, x, want = zoo["resnet18"]
    close(g2.compile()(x), want)


@pytest.mark.parametrize("name", ["mobilenet_v2", "efficientnet_lite0"])
def test_mobile_nets_fold_and_fuse_completely(zoo, name):
    g, g2 = check_zoo(zoo, name, SEQUENCE)
    before, counts = g.op_counts(), g2.op_counts()
    for op in ("BatchNormalization", "Clip", "Add"):
        assert op not in counts
    fused = [n for n in g2.nodes if n.op == "mte.ConvAct"]
    with_residual = [n for n in fused if n.inputs[3]]
    assert len(with_residual) == before["Add"]
    # the residual goes into the block's project conv (1x1, no activation after it)
    assert all(n.attrs["activation"] == "none" and n.attrs["kernel_shape"] == [1, 1]
               for n in with_residual)
    assert sum(1 for n in fused if n.attrs["activation"] == "relu6") == before["Clip"]
    _, x, want = zoo[name]
    close(g2.compile()(x), want)


def test_small_cnn_and_mlp_fuse(zoo):
    _, g2 = check_zoo(zoo, "small_cnn", SEQUENCE)
    assert g2.op_counts() == {"mte.ConvAct": 2, "MaxPool": 2, "Reshape": 1, "Gemm": 1,
                              "Identity": 1}
    _, g2 = check_zoo(zoo, "mlp", SEQUENCE)
    assert g2.op_counts() == {"mte.GemmAct": 1, "Gemm": 1, "Identity": 1}


# ---- random small graphs ------------------------------------------------------------------------
@st.composite
def small_graphs(draw):
    """A random conv / linear graph: blocks of [Pad] -> Conv -> [BN] -> [Mul, Add per channel]
    -> [residual Add] -> [activation], then an optional Gemm head with [BN], [residual],
    activations. Returns (graph, inputs, loose): loose when not everything can fold and fuse
    (an intermediate is also a graph output, ...)."""
    g = Graph()
    n = draw(st.integers(1, 2))
    c, h, w = draw(st.integers(1, 8)), draw(st.integers(3, 9)), draw(st.integers(3, 9))
    x = g.add_input("x", (n, c, h, w))
    feeds = [rand(n, c, h, w)]
    outs, loose = [], False
    cur = x
    for _ in range(draw(st.integers(1, 3))):
        _, cin, hh, ww = g.values[cur].shape
        src = cur
        if draw(st.booleans()):
            p = [draw(st.integers(0, 2)) for _ in range(4)]
            cur = pad(g, cur, [0, 0, p[0], p[1], 0, 0, p[2], p[3]],
                      value=0.0 if draw(st.booleans()) else None)
            hh, ww = hh + p[0] + p[2], ww + p[1] + p[3]
        depthwise = draw(st.booleans())
        group = cin if depthwise else 1
        cout = cin * draw(st.integers(1, 2)) if depthwise else draw(st.integers(1, 8))
        padding = draw(st.integers(0, 1))
        k = draw(st.sampled_from([1, 3]))
        if min(hh, ww) + 2 * padding < k:
            k = 1
        stride = draw(st.integers(1, 2))
        cur = conv(g, cur, cout, k=k, stride=stride, pad=padding, group=group,
                   bias=draw(st.booleans()))
        if draw(st.integers(0, 9)) == 0:               # an intermediate is a graph output
            outs.append(cur)
            loose = True
        if draw(st.booleans()):
            cur = bn(g, cur)
        if draw(st.integers(0, 3)) == 0:
            shape = draw(st.sampled_from([(1, cout, 1, 1), (cout, 1, 1), ()]))
            cur = g.add_node("Mul", [cur, g.add_constant("k", RNG.uniform(
                0.5, 1.5, shape).astype(F32))]).outputs[0]
            cur = g.add_node("Add", [g.add_constant("b", rand(*shape)), cur]).outputs[0]
        shape = g.values[cur].shape
        if draw(st.booleans()):
            if g.values[src].shape == shape:
                r = src
            else:
                r = g.add_input(g.fresh_name("r"), shape)
                feeds.append(rand(*shape))
            pair = [cur, r] if draw(st.booleans()) else [r, cur]
            cur = g.add_node("Add", pair).outputs[0]
        cur = act(g, cur, draw(st.sampled_from(["none"] + ACT_KINDS)))
    if draw(st.booleans()):
        cur = g.add_node("GlobalAveragePool", [cur]).outputs[0]
        feat = g.values[cur].shape[1]
        cur = g.add_node("Reshape", [cur, g.add_constant(
            "shape", np.asarray([n, feat], np.int64))]).outputs[0]
        for _ in range(draw(st.integers(1, 2))):
            src = cur
            cur = gemm(g, cur, draw(st.integers(1, 8)), bias=draw(st.booleans()))
            if draw(st.booleans()):
                cur = bn(g, cur)
            residual = g.values[src].shape == g.values[cur].shape and draw(st.booleans())
            if residual:
                cur = g.add_node("Add", [cur, src]).outputs[0]
            kind = draw(st.sampled_from(["none"] + ACT_KINDS))
            cur = act(g, cur, kind)
    outs.append(cur)
    return finish(g, *dict.fromkeys(outs)), feeds, loose


FUSED_ACT_OPS = {"Relu", "mte.Gelu"} | ({"mte.Silu"} if "silu" in SUPPORTED else set()) | (
    {"HardSwish"} if "hardswish" in SUPPORTED else set())


@settings(max_examples=4 * settings.default.max_examples)
@given(small_graphs())
def test_random_graphs_keep_their_outputs(case):
    g, feeds, loose = case
    for passes in (["fold_pad"], ["fold_batch_norm"], ["fuse_epilogue"], SEQUENCE):
        g2 = g.optimize(passes)
        same_outputs(g, g2, *feeds)
        assert g2.inputs == g.inputs and g2.outputs == g.outputs
    if loose:
        return
    counts = g2.op_counts()
    assert "Pad" not in counts and "BatchNormalization" not in counts
    assert not FUSED_ACT_OPS & set(counts)
    # the per-channel Mul / Add folded, the residual Adds fused
    assert "Add" not in counts and "Mul" not in counts
    assert counts.get("Sigmoid", 0) == g.op_counts().get("Sigmoid", 0)
