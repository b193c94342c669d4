"""The memory planner (graph/planner.py): buffers alive at the same time never overlap, over
generated graphs; in-place reuse and views never change what the executor computes; the arena
of MobileNetV2 at 224x224 meets its lower bound."""
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import minitorch_edge as mte
from minitorch_edge import graph, models
from minitorch_edge.graph import Graph

RNG = np.random.default_rng(1)


@st.composite
def random_graphs(draw):
    """A random DAG over a (1, C, 4, 4) input: convolutions that change channels, elementwise
    ops (in-place candidates), residual adds, views (Reshape there and back), concats, with one
    to three outputs picked among the values."""
    g = Graph("random")
    g.add_input("x", (1, 2, 4, 4))
    live = ["x"]
    for i in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["conv", "relu", "add", "view", "concat", "clip"]))
        src = draw(st.sampled_from(live))
        shape = g.values[src].shape
        if kind == "conv":
            cout = draw(st.integers(1, 4))
            w = g.add_constant("w", RNG.standard_normal((cout, shape[1], 1, 1)).astype("f4"))
            out = g.add_node("Conv", [src, w], kernel_shape=[1, 1]).outputs[0]
        elif kind == "relu":
            out = g.add_node("Relu", [src]).outputs[0]
        elif kind == "clip":
            lo = g.add_constant("lo", np.float32(0))
            hi = g.add_constant("hi", np.float32(1))
            out = g.add_node("Clip", [src, lo, hi]).outputs[0]
        elif kind == "add":
            same = [v for v in live if g.values[v].shape == shape]
            other = draw(st.sampled_from(same))
            out = g.add_node("Add", [src, other]).outputs[0]
        elif kind == "view":
            flat = g.add_constant("shape", np.array([1, -1], np.int64))
            back = g.add_constant("shape", np.array(shape, np.int64))
            mid = g.add_node("Reshape", [src, flat]).outputs[0]
            out = g.add_node("Reshape", [mid, back]).outputs[0]
        else:
            other = draw(st.sampled_from([v for v in live if g.values[v].shape[2:] ==
                                          shape[2:]]))
            out = g.add_node("Concat", [src, other], axis=1).outputs[0]
        live.append(out)
    outs = draw(st.lists(st.sampled_from(live[1:]), min_size=1, max_size=3, unique=True))
    g.set_outputs(outs)
    return g.check()


@given(random_graphs(), st.booleans())
def test_alive_buffers_never_overlap_and_the_executor_is_exact(g, in_place):
    plan = g.plan_memory(in_place=in_place).check()
    assert plan.lower_bound_bytes <= plan.arena_bytes <= plan.naive_bytes + 64 * len(g.nodes)
    x = RNG.standard_normal((1, 2, 4, 4)).astype(np.float32)
    want = g.run(x)
    run = g.compile()
    got = run(x)
    for a, b in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    got2 = run(x)                    # and again: nothing of the first call leaks into the next
    for a, b in zip(got2 if isinstance(got2, tuple) else (got2,),
                    want if isinstance(want, tuple) else (want,)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_views_share_their_input_buffer_and_in_place_reuses_a_dying_input():
    g = Graph()
    g.add_input("x", (1, 4, 2, 2))
    w = g.add_constant("w", np.ones((4, 4, 1, 1), np.float32))
    c = g.add_node("Conv", ["x", w], ["c"], kernel_shape=[1, 1]).outputs[0]
    r = g.add_node("Relu", [c], ["r"]).outputs[0]            # c dies here: in place
    shape = g.add_constant("shape", np.array([1, 16], np.int64))
    g.add_node("Reshape", [r, shape], ["flat"])               # a view of r
    g.set_outputs(["flat"])
    plan = g.check().plan_memory()
    assert len(plan.buffers) == 1 and plan.buffers[0].values == ["c", "r", "flat"]
    assert plan.views == {"flat": "r"}
    assert plan.offsets == {"c": 0, "r": 0}
    no_reuse = g.plan_memory(in_place=False)
    assert len(no_reuse.buffers) == 2 and no_reuse.arena_bytes == 2 * 64


def test_mobilenet_v2_arena_meets_the_lower_bound():
    """The regression figure: batch 1, 224x224, float32 (the 96x112x112 expansion and the
    96x56x56 depthwise output alive together: 1,505,280 floats)."""
    g = graph.trace(models.mobilenet_v2(), mte.randn(1, 3, 224, 224), check=False).optimize()
    plan = g.plan_memory().check()
    assert plan.arena_bytes == plan.lower_bound_bytes == 6_021_120
    assert plan.naive_bytes > 4 * plan.arena_bytes      # 27 MB after fusion (79 MB traced)


def test_plan_draws(tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    g = graph.trace(models.SmallCNN(), mte.randn(1, 1, 28, 28))
    ax = g.plan_memory().draw()
    ax.figure.savefig(tmp_path / "plan.png")
    assert (tmp_path / "plan.png").stat().st_size > 1000
