"""The clean-up passes (minitorch_edge/graph/passes/): eliminate_dead_code, fold_constants,
remove_identities, merge_reshapes. Each alone on small hand-built graphs (what it removes and
what it must keep, graph outputs above all), on the traced zoo models, and on random chains of
shape ops; plus the DEFAULT pipeline on every zoo model. A pass never changes what the graph
computes: the outputs are compared before and after with the reference executor."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minitorch_edge import graph, models
from minitorch_edge.graph import Graph
from minitorch_edge.graph.passes import DEFAULT, PASSES
from harness import randomize_bn

RNG = np.random.default_rng(0)
MINE = ["eliminate_dead_code", "fold_constants", "remove_identities", "merge_reshapes"]


def arr(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def as_tuple(y):
    return y if isinstance(y, tuple) else (y,)


def same_outputs(before, after, *xs, rtol=0.0):
    """after computes what before computes (exactly, or to rtol relative to the output scale)."""
    want, got = as_tuple(before.run(*xs)), as_tuple(after.run(*xs))
    assert after.outputs == before.outputs and after.inputs == before.inputs
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        if rtol == 0:
            np.testing.assert_array_equal(g, w)
        else:
            scale = max(1.0, float(np.abs(w).max())) if w.size else 1.0
            np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * scale)


def optimized(g, *passes):
    """g after the passes (through run_passes: copies, remove_unused_values, check)."""
    return g.optimize(list(passes))


def ops(g):
    return [n.op for n in g.nodes]


# ---- eliminate_dead_code ------------------------------------------------------------------------
def test_dead_code_removes_nodes_that_reach_no_output():
    g = Graph()
    x = g.add_input("x", (2, 3))
    c = g.add_constant("c", arr(2, 3))
    r = g.add_node("Relu", [x]).outputs[0]
    s = g.add_node("Sigmoid", [r]).outputs[0]
    g.add_node("Mul", [s, c])                      # dead, and the only reader of c
    g.add_node("Neg", [c])                         # dead, reads only a constant
    g.set_outputs([r])
    h = optimized(g, "eliminate_dead_code")
    assert ops(h) == ["Relu"]
    assert "c" not in h.constants and "c" not in h.values
    same_outputs(g, h, arr(2, 3))


def test_dead_code_keeps_multi_output_node_and_unread_inputs():
    g = Graph()
    x = g.add_input("x", (4, 3))
    unused = g.add_input("unused", (5,))
    a, b = g.add_node("Split", [x, g.add_constant("split", np.array([1, 3], np.int64))],
                      outputs=["a", "b"], axis=0).outputs
    y = g.add_node("Relu", [b]).outputs[0]
    g.add_node("Exp", [a])                         # dead, but Split stays for b
    g.set_outputs([y])
    h = optimized(g, "eliminate_dead_code")
    assert ops(h) == ["Split", "Relu"]
    assert h.inputs == ["x", unused]
    same_outputs(g, h, arr(4, 3), arr(5))


def test_dead_code_graph_output_that_is_an_input():
    g = Graph()
    x = g.add_input("x", (3,))
    g.add_node("Relu", [x])
    g.set_outputs([x])
    h = optimized(g, "eliminate_dead_code")
    assert h.nodes == []
    same_outputs(g, h, arr(3))


# ---- fold_constants -----------------------------------------------------------------------------
def test_fold_transpose_of_weight_feeding_matmul():
    g = Graph()
    x = g.add_input("x", (2, 4))
    w = g.add_constant("w", arr(3, 4))
    t = g.add_node("Transpose", [w], outputs=["wt"], perm=[1, 0]).outputs[0]
    y = g.add_node("MatMul", [x, t]).outputs[0]
    g.set_outputs([y])
    h = optimized(g, "fold_constants")
    assert ops(h) == ["MatMul"]
    assert h.nodes[0].inputs == ["x", "wt"]        # the value keeps its name: no rewiring
    assert h.is_constant("wt") and "w" not in h.constants
    np.testing.assert_array_equal(h.constants["wt"], g.constants["w"].T)
    same_outputs(g, h, arr(2, 4))


def test_fold_chains_and_omitted_inputs():
    g = Graph()
    x = g.add_input("x", (2, 3))
    c1, c2 = g.add_constant("c1", arr(2, 3)), g.add_constant("c2", arr(3))
    s = g.add_node("Add", [c1, c2]).outputs[0]
    hi = g.add_constant("hi", np.asarray(0.5, np.float32))
    k = g.add_node("Clip", [s, "", hi]).outputs[0]         # an omitted input counts as constant
    r = g.add_node("Reshape", [k, g.add_constant("shape", np.array([3, 2], np.int64))])
    r2 = g.add_node("Reshape", [r.outputs[0], g.add_constant("shape", np.array([2, 3], np.int64))])
    y = g.add_node("Mul", [x, r2.outputs[0]]).outputs[0]
    g.set_outputs([y])
    h = optimized(g, "fold_constants")
    assert ops(h) == ["Mul"]
    same_outputs(g, h, arr(2, 3))
    assert not np.shares_memory(h.constants[r2.outputs[0]], g.constants["c1"])


def test_fold_graph_output_becomes_constant():
    g = Graph()
    x = g.add_input("x", (2,))
    c = g.add_constant("c", arr(2))
    g.add_node("Neg", [c], outputs=["out_c"])
    g.add_node("Relu", [x], outputs=["out_x"])
    g.set_outputs(["out_c", "out_x"])
    h = optimized(g, "fold_constants")
    assert ops(h) == ["Relu"] and h.is_constant("out_c")
    assert h.outputs == ["out_c", "out_x"]
    xs = arr(2)
    same_outputs(g, h, xs)
    for got, want in zip(h.compile()(xs), g.run(xs)):      # the planned executor takes it too
        np.testing.assert_array_equal(got, want)


def test_fold_size_rule_keeps_large_expansions():
    g = Graph()
    x = g.add_input("x", (1, 1024))
    scalar = g.add_constant("s", np.asarray(1.5, np.float32))
    big = g.add_node("Expand", [scalar, g.add_constant("shape", np.array([2048, 1024], np.int64))])
    row = g.add_constant("row", arr(1, 1024))
    small = g.add_node("Expand", [row, g.add_constant("shape", np.array([4, 1024], np.int64))])
    grown = g.add_node("Expand", [row, g.add_constant("shape", np.array([1025, 1024], np.int64))])
    y = g.add_node("Add", [big.outputs[0], x]).outputs[0]
    y2 = g.add_node("Add", [small.outputs[0], x]).outputs[0]
    y3 = g.add_node("Add", [grown.outputs[0], x]).outputs[0]
    g.set_outputs([y, y2, y3])
    h = optimized(g, "fold_constants")
    kept = {n.name for n in h.nodes if n.op == "Expand"}
    # 2M elements from 1 (> 4x and > 1M): kept. 4096 from 1024: folded (small). 1025 * 1024
    # (> 1M) from 1024 + 2 elements: kept
    assert kept == {big.name, grown.name}
    assert h.is_constant(small.outputs[0])
    same_outputs(g, h, arr(1, 1024))


def test_fold_keeps_nodes_reading_inputs():
    g = Graph()
    x = g.add_input("x", (3,))
    y = g.add_node("Add", [x, g.add_constant("c", arr(3))]).outputs[0]
    g.set_outputs([y])
    h = optimized(g, "fold_constants")
    assert ops(h) == ["Add"]


# ---- remove_identities --------------------------------------------------------------------------
def test_remove_identity_like_nodes_inside_the_graph():
    g = Graph()
    x = g.add_input("x", (2, 3, 1, 1))
    v = g.add_node("Identity", [x]).outputs[0]
    v = g.add_node("Dropout", [v]).outputs[0]
    v = g.add_node("Reshape", [v, g.add_constant("s", np.array([2, 3, 1, 1], np.int64))]).outputs[0]
    v = g.add_node("Squeeze", [v, g.add_constant("a", np.zeros(0, np.int64))]).outputs[0]
    v = g.add_node("Unsqueeze", [v, g.add_constant("a", np.zeros(0, np.int64))]).outputs[0]
    v = g.add_node("Expand", [v, g.add_constant("s", np.array([2, 3, 1, 1], np.int64))]).outputs[0]
    v = g.add_node("Transpose", [v], perm=[0, 1, 2, 3]).outputs[0]
    v = g.add_node("Transpose", [v], perm=[0, 1, 3, 2]).outputs[0]       # swaps two 1-dims
    v = g.add_node("Cast", [v], to="float32").outputs[0]
    v = g.add_node("Relu", [v]).outputs[0]
    f = g.add_node("Flatten", [v], axis=1).outputs[0]                     # (2, 3, 1, 1) -> (2, 3)
    f = g.add_node("Flatten", [f], axis=1).outputs[0]                     # (2, 3) -> (2, 3): no-op
    y = g.add_node("Neg", [f]).outputs[0]
    g.set_outputs([y])
    h = optimized(g, "remove_identities")
    assert ops(h) == ["Relu", "Flatten", "Neg"]
    assert h.nodes[0].inputs == ["x"]
    same_outputs(g, h, arr(2, 3, 1, 1))


def test_remove_identities_keeps_real_shape_and_type_changes():
    g = Graph()
    x = g.add_input("x", (3, 3))
    a = g.add_node("Transpose", [x], perm=[1, 0]).outputs[0]       # same shape, other data
    b = g.add_node("Cast", [a], to="int32").outputs[0]
    c = g.add_node("Reshape", [b, g.add_constant("s", np.array([9], np.int64))]).outputs[0]
    d = g.add_node("Unsqueeze", [c, g.add_constant("ax", np.array([0], np.int64))]).outputs[0]
    e = g.add_node("Expand", [d, g.add_constant("s", np.array([2, 9], np.int64))]).outputs[0]
    g.set_outputs([e])
    h = optimized(g, "remove_identities")
    assert ops(h) == ops(g)
    same_outputs(g, h, arr(3, 3))


def test_remove_identity_before_graph_output_renames_the_producer():
    g = Graph()
    x = g.add_input("x", (2, 3))
    r = g.add_node("Relu", [x], outputs=["r"])
    i = g.add_node("Identity", ["r"]).outputs[0]
    g.add_node("Identity", [i], outputs=["output"])
    s = g.add_node("Sigmoid", ["r"], outputs=["s"])     # another reader of r
    g.set_outputs(["output", "s"])
    h = optimized(g, "remove_identities")
    assert ops(h) == ["Relu", "Sigmoid"]
    assert h.node(r.name).outputs == ["output"]
    assert h.node(s.name).inputs == ["output"]
    assert "r" not in h.values
    same_outputs(g, h, arr(2, 3))


def test_remove_identities_keeps_an_identity_that_names_an_output():
    # output = Identity(graph input)
    g = Graph()
    x = g.add_input("x", (2,))
    g.add_node("Identity", [x], outputs=["output"])
    g.set_outputs(["output"])
    h = optimized(g, "remove_identities")
    assert ops(h) == ["Identity"]
    same_outputs(g, h, arr(2))
    np.testing.assert_array_equal(h.compile()(np.ones(2, np.float32)), np.ones(2))

    # two outputs, one an Identity of the other
    g = Graph()
    x = g.add_input("x", (2,))
    g.add_node("Relu", [x], outputs=["a"])
    g.add_node("Identity", ["a"], outputs=["b"])
    g.set_outputs(["a", "b"])
    h = optimized(g, "remove_identities")
    assert ops(h) == ["Relu", "Identity"]
    same_outputs(g, h, arr(2))

    # output = Identity(constant), and a Dropout of an input that is an output
    g = Graph()
    x = g.add_input("x", (2,))
    c = g.add_constant("c", arr(2))
    g.add_node("Identity", [c], outputs=["out_c"])
    g.add_node("Dropout", [x], outputs=["out_x"])
    g.set_outputs(["out_c", "out_x"])
    h = optimized(g, "remove_identities")
    assert ops(h) == ["Identity", "Dropout"]
    same_outputs(g, h, arr(2))


def test_traced_graph_loses_its_final_identity():
    g = graph.trace(models.MLP(in_features=8, hidden=(6,), out_features=3), arr(2, 8))
    assert g.nodes[-1].op == "Identity"
    h = optimized(g, "remove_identities")
    assert "Identity" not in ops(h) and h.outputs == ["output"]
    same_outputs(g, h, arr(2, 8))


# ---- merge_reshapes -----------------------------------------------------------------------------
def test_merge_reshape_chain_into_one_reshape():
    g = Graph()
    x = g.add_input("x", (2, 3, 4))
    r = g.add_node("Reshape", [x, g.add_constant("s", np.array([6, 4], np.int64))]).outputs[0]
    f = g.add_node("Flatten", [r], axis=0).outputs[0]                              # (1, 24)
    s = g.add_node("Squeeze", [f, g.add_constant("a", np.array([0], np.int64))]).outputs[0]
    u = g.add_node("Unsqueeze", [s, g.add_constant("a", np.array([1], np.int64))])  # (24, 1)
    y = g.add_node("Relu", [u.outputs[0]]).outputs[0]
    g.set_outputs([y])
    h = optimized(g, "merge_reshapes")
    assert ops(h) == ["Reshape", "Relu"]
    node = h.nodes[0]
    assert node.inputs[0] == "x" and node.outputs == [u.outputs[0]]
    assert h.constants[node.inputs[1]].dtype == np.int64
    assert h.constants[node.inputs[1]].tolist() == [24, 1]
    same_outputs(g, h, arr(2, 3, 4))


def test_merge_reshapes_keeps_intermediates_others_read():
    g = Graph()
    x = g.add_input("x", (2, 6))
    a = g.add_node("Reshape", [x, g.add_constant("s", np.array([3, 4], np.int64))],
                   outputs=["a"])
    b = g.add_node("Reshape", ["a", g.add_constant("s", np.array([12], np.int64))],
                   outputs=["b"])
    g.add_node("Relu", ["a"], outputs=["c"])
    g.set_outputs(["b", "c"])
    h = optimized(g, "merge_reshapes")
    assert len(h.nodes) == 3
    assert h.node(b.name).inputs[0] == "x" and h.node(a.name).outputs == ["a"]
    same_outputs(g, h, arr(2, 6))

    # the intermediate is itself a graph output
    g = Graph()
    x = g.add_input("x", (2, 6))
    g.add_node("Flatten", [x], outputs=["a"], axis=0)
    g.add_node("Reshape", ["a", g.add_constant("s", np.array([12], np.int64))], outputs=["b"])
    g.set_outputs(["a", "b"])
    h = optimized(g, "merge_reshapes")
    assert ops(h) == ["Flatten", "Reshape"] and h.nodes[1].inputs[0] == "x"
    same_outputs(g, h, arr(2, 6))


def test_merge_transposes_composes_perms():
    g = Graph()
    x = g.add_input("x", (2, 3, 4, 5))
    p1, p2, p3 = [0, 2, 3, 1], [3, 1, 0, 2], [1, 0, 2, 3]
    a = g.add_node("Transpose", [x], perm=p1).outputs[0]
    b = g.add_node("Transpose", [a], perm=p2).outputs[0]
    c = g.add_node("Transpose", [b], perm=p3).outputs[0]
    y = g.add_node("Relu", [c]).outputs[0]
    g.set_outputs([y])
    h = optimized(g, "merge_reshapes")
    assert ops(h) == ["Transpose", "Relu"]
    want = [p1[p] for p in p2]
    want = [want[p] for p in p3]
    assert h.nodes[0].attrs["perm"] == want and h.nodes[0].inputs == ["x"]
    same_outputs(g, h, arr(2, 3, 4, 5))


def test_merge_transposes_that_cancel():
    # inside the graph: gone, the reader reads x
    g = Graph()
    x = g.add_input("x", (2, 3, 4))
    a = g.add_node("Transpose", [x], perm=[1, 2, 0]).outputs[0]
    b = g.add_node("Transpose", [a], perm=[2, 0, 1]).outputs[0]
    y = g.add_node("Neg", [b]).outputs[0]
    g.set_outputs([y])
    h = optimized(g, "merge_reshapes")
    assert ops(h) == ["Neg"] and h.nodes[0].inputs == ["x"]
    same_outputs(g, h, arr(2, 3, 4))

    # before a graph output, after a node: that node writes the output
    g = Graph()
    x = g.add_input("x", (2, 3))
    r = g.add_node("Relu", [x])
    a = g.add_node("Transpose", [r.outputs[0]], perm=[1, 0]).outputs[0]
    g.add_node("Transpose", [a], perm=[1, 0], outputs=["output"])
    g.set_outputs(["output"])
    h = optimized(g, "merge_reshapes")
    assert ops(h) == ["Relu"] and h.nodes[0].outputs == ["output"]
    same_outputs(g, h, arr(2, 3))

    # graph input to graph output: an Identity must stay to name the output
    g = Graph()
    x = g.add_input("x", (2, 3))
    a = g.add_node("Transpose", [x], perm=[1, 0]).outputs[0]
    g.add_node("Transpose", [a], perm=[1, 0], outputs=["output"])
    g.set_outputs(["output"])
    h = optimized(g, "merge_reshapes")
    assert ops(h) == ["Identity"]
    same_outputs(g, h, arr(2, 3))


def test_merge_across_a_reshape_chain_that_returns_to_its_start():
    g = Graph()
    x = g.add_input("x", (2, 3, 4))
    a = g.add_node("Transpose", [x], perm=[2, 0, 1]).outputs[0]            # (4, 2, 3)
    f = g.add_node("Flatten", [a], axis=1).outputs[0]                     # (4, 6)
    r = g.add_node("Reshape", [f, g.add_constant("s", np.array([4, 2, 3], np.int64))])
    b = g.add_node("Transpose", [r.outputs[0]], perm=[1, 2, 0]).outputs[0]
    y = g.add_node("Relu", [b]).outputs[0]
    g.set_outputs([y])
    h = optimized(g, "merge_reshapes")
    assert ops(h) == ["Relu"] and h.nodes[0].inputs == ["x"]
    same_outputs(g, h, arr(2, 3, 4))

    # the same chain from a graph input straight to a graph output: one Reshape stays
    g = Graph()
    x = g.add_input("x", (2, 3))
    f = g.add_node("Flatten", [x], axis=0).outputs[0]
    g.add_node("Reshape", [f, g.add_constant("s", np.array([2, 3], np.int64))], outputs=["out"])
    g.set_outputs(["out"])
    h = optimized(g, "merge_reshapes")
    assert ops(h) == ["Reshape"] and h.nodes[0].inputs[0] == "x"
    same_outputs(g, h, arr(2, 3))


# ---- random chains of shape ops -----------------------------------------------------------------
def _random_shape(rnd, size):
    """A shape with `size` elements: its prime factors dealt into 1..4 dims, some 1s added."""
    factors, n, p = [], size, 2
    while n > 1:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    dims = [1] * rnd.randint(1, 4)
    for f in factors:
        dims[rnd.randrange(len(dims))] *= f
    return dims


@st.composite
def shape_chains(draw):
    """(graph, input array): a random chain of Reshape/Flatten/Transpose/Identity/Relu/Add nodes
    (Add reads a constant, a Transpose of a constant, or an earlier value of the same shape), with
    an earlier value sometimes a second graph output and the last one sometimes through
    Identity (as graph.trace ends)."""
    rnd = draw(st.randoms(use_true_random=False))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    g = Graph("chain")
    v = g.add_input("x", shape)
    seen = [v]
    for _ in range(draw(st.integers(1, 10))):
        kind = rnd.choice(["Reshape", "Reshape", "Flatten", "Transpose", "Transpose", "Identity",
                           "Relu", "Add"])
        cur = g.values[v].shape
        size = int(np.prod(cur))
        if kind == "Reshape":
            new = _random_shape(rnd, size)
            v = g.add_node("Reshape", [v, g.add_constant("shape", np.array(new, np.int64))])
        elif kind == "Flatten":
            v = g.add_node("Flatten", [v], axis=rnd.randint(0, len(cur)))
        elif kind == "Transpose":
            perm = list(range(len(cur)))
            rnd.shuffle(perm)
            v = g.add_node("Transpose", [v], perm=perm)
        elif kind == "Add":
            same = [s for s in seen if g.values[s].shape == cur and s != v]
            how = rnd.choice(["const", "transposed", "value"])
            if how == "value" and same:
                other = rnd.choice(same)
            elif how == "transposed":
                perm = list(range(len(cur)))
                rnd.shuffle(perm)
                inv = list(np.argsort(perm))
                c = g.add_constant("c", arr(*[cur[p] for p in perm]))
                other = g.add_node("Transpose", [c], perm=inv).outputs[0]
            else:
                other = g.add_constant("c", arr(*cur))
            v = g.add_node("Add", [v, other])
        else:
            v = g.add_node(kind, [v])
        v = v.outputs[0]
        seen.append(v)
    outputs = []
    if len(seen) > 2 and rnd.random() < 0.4:
        outputs.append(rnd.choice(seen[:-1]))
    if rnd.random() < 0.5:
        v = g.add_node("Identity", [v], outputs=["output"]).outputs[0]
    outputs.append(v)
    g.set_outputs(outputs)
    return g.check(), arr(*shape)


@given(shape_chains())
def test_random_chains_keep_their_outputs(case):
    g, x = case
    for name in MINE:
        same_outputs(g, optimized(g, name), x)
    h = optimized(g, "remove_identities", "fold_constants", "merge_reshapes",
                  "remove_identities", "eliminate_dead_code")
    same_outputs(g, h, x)
    assert not any(n.op == "Transpose" and h.is_constant(n.inputs[0]) for n in h.nodes)
    producers = h.producers()
    for n in h.nodes:       # no chain of two transposes or two reshapes is left
        p = producers.get(n.inputs[0]) if n.inputs else None
        if p is not None and n.op == "Transpose":
            assert p.op != "Transpose"
        if p is not None and n.op in ("Reshape", "Flatten"):
            assert p.op not in ("Reshape", "Flatten")


# ---- the zoo ------------------------------------------------------------------------------------


ZOO = {
    "MLP": (lambda: models.MLP(), lambda: arr(2, 784)),
    "SmallCNN": (lambda: models.SmallCNN(), lambda: arr(2, 1, 28, 28)),
    "resnet18": (lambda: models.resnet18(), lambda: arr(1, 3, 32, 32)),
    "resnet34": (lambda: models.resnet34(), lambda: arr(1, 3, 32, 32)),
    "mobilenet_v2": (lambda: models.mobilenet_v2(), lambda: arr(1, 3, 64, 64)),
    "efficientnet_lite0": (lambda: models.efficientnet_lite0(), lambda: arr(1, 3, 64, 64)),
    "TransformerClassifier": (lambda: models.TransformerClassifier(100, 5),
                              lambda: RNG.integers(0, 100, (2, 16)).astype(np.int64)),
}
_traced = {}


def traced(name):
    if name not in _traced:
        make_model, make_input = ZOO[name]
        x = make_input()
        _traced[name] = (graph.trace(randomize_bn(make_model(), np.random.default_rng(1)), x), x)
    return _traced[name]


@pytest.mark.parametrize("name", [n for n in ZOO if n != "resnet34"])
def test_zoo_each_pass_and_optimize_keep_outputs(name):
    g, x = traced(name)
    for p in MINE:
        h = optimized(g, p)
        same_outputs(g, h, x)
    h = optimized(g, "remove_identities")
    assert "Identity" not in ops(h)
    full = g.optimize()
    same_outputs(g, full, x, rtol=1e-5)
    assert len(full.nodes) < len(g.nodes)


def test_transformer_optimize_folds_constant_parts():
    g, x = traced("TransformerClassifier")
    assert "Slice" in ops(g)
    h = g.optimize()
    counts = h.op_counts()
    assert "Slice" not in counts and "Identity" not in counts
    assert not any(n.op == "Transpose" and h.is_constant(n.inputs[0]) for n in h.nodes)
    for n in h.nodes:
        if n.op == "MatMul":       # every projection reads a folded, pre-transposed weight
            assert h.is_constant(n.inputs[1])
    same_outputs(g, h, x, rtol=1e-5)
    got = h.compile()(x)
    np.testing.assert_allclose(got, g.run(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", list(ZOO))
def test_optimize_default_order(name):
    assert all(p in PASSES for p in DEFAULT)
    g, x = traced(name)
    h = g.optimize(DEFAULT)
    h.check()
    assert h.outputs == g.outputs and h.inputs == g.inputs
    same_outputs(g, h, x, rtol=1e-5)
