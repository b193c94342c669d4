"""The DOT pictures: `Graph.to_dot()` (graph/dot.py) and `autograd.to_dot()` (autograd/dot.py).

Every picture is checked by a small DOT reader below (tokens, statements, attribute lists, and
HTML-like labels parsed as XML), which also collects the nodes and edges so that the tests can
count them; where the Graphviz ``dot`` binary is installed the text is rendered too (skipped
otherwise)."""
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import minitorch_edge as mte
from minitorch_edge import autograd, graph, models, nn
from minitorch_edge.graph import Graph

RNG = np.random.default_rng(0)
DOT = shutil.which("dot")


# ---- a small DOT reader -------------------------------------------------------------------
_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<arrow>->)
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<num>-?(?:\.\d+|\d+(?:\.\d*)?))
  | (?P<str>"(?:\\.|[^"\\])*")
  | (?P<punct>[{}\[\];,=])
""", re.VERBOSE)


def _tokens(text):
    out, i = [], 0
    while i < len(text):
        if text[i] == "<":                       # an HTML-like string: balanced < >
            depth, j = 0, i
            while j < len(text):
                depth += {"<": 1, ">": -1}.get(text[j], 0)
                j += 1
                if depth == 0:
                    break
            assert depth == 0, f"unbalanced HTML label at {text[i:i + 60]!r}"
            out.append(("html", text[i:j]))
            i = j
            continue
        m = _TOKEN.match(text, i)
        assert m, f"not DOT at {text[i:i + 60]!r}"
        if m.lastgroup != "ws":
            out.append((m.lastgroup, m.group()))
        i = m.end()
    return out


def _value(tok):
    kind, text = tok
    if kind == "str":
        return re.sub(r"\\(.)", r"\1", text[1:-1])
    if kind == "html":
        body = text[1:-1]
        try:                                     # well-formed, entities escaped
            ET.fromstring(f"<label>{body}</label>")
        except ET.ParseError as e:
            raise AssertionError(f"bad HTML label {text!r}: {e}") from None
        return body
    return text


def parse_dot(text):
    """Check that `text` is one DOT digraph; return {"nodes": {id: attrs}, "edges":
    [(src, dst, attrs)], "name": name}. Every edge's ends must be declared nodes."""
    toks = _tokens(text)
    pos = 0

    def take(kind=None, value=None):
        nonlocal pos
        assert pos < len(toks), "unexpected end of DOT text"
        tok = toks[pos]
        assert kind is None or tok[0] in (kind if isinstance(kind, tuple) else (kind,)), \
            f"expected {kind}, got {tok}"
        assert value is None or tok[1] == value, f"expected {value!r}, got {tok}"
        pos += 1
        return tok

    def peek():
        return toks[pos] if pos < len(toks) else (None, None)

    def attr_list():
        attrs = {}
        while peek()[1] == "[":
            take("punct", "[")
            while peek()[1] != "]":
                key = take("id")[1]
                take("punct", "=")
                attrs[key] = _value(take(("id", "num", "str", "html")))
                if peek()[1] in (",", ";"):
                    take()
            take("punct", "]")
        return attrs

    take("id", "digraph")
    name = _value(take(("id", "str"))) if peek()[1] != "{" else None
    take("punct", "{")
    nodes, edges = {}, []
    while peek()[1] != "}":
        kind, word = take(("id", "str", "num"))
        if kind == "id" and word in ("graph", "node", "edge") and peek()[1] == "[":
            attr_list()
        elif peek()[0] == "arrow":
            chain = [_value((kind, word))]
            while peek()[0] == "arrow":
                take("arrow")
                chain.append(_value(take(("id", "str", "num"))))
            attrs = attr_list()
            edges += [(a, b, attrs) for a, b in zip(chain, chain[1:])]
        elif peek()[1] == "=":
            take("punct", "=")
            take(("id", "num", "str", "html"))
        else:
            ident = _value((kind, word))
            assert ident not in nodes, f"node {ident!r} declared twice"
            nodes[ident] = attr_list()
        if peek()[1] == ";":
            take()
    take("punct", "}")
    assert pos == len(toks), f"text after the graph: {toks[pos:pos + 5]}"
    for a, b, _ in edges:
        assert a in nodes and b in nodes, f"edge {a} -> {b} to an undeclared node"
    return {"name": name, "nodes": nodes, "edges": edges}


def render(text):
    """Render with Graphviz when it is installed (else skip)."""
    if DOT is None:
        pytest.skip("the Graphviz dot binary is not installed")
    done = subprocess.run([DOT, "-Tsvg"], input=text.encode(), capture_output=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert b"<svg" in done.stdout


def test_parse_dot_rejects_broken_text():
    good = 'digraph "g" {\n  a [label=<<b>x</b>>];\n  b;\n  a -> b;\n}\n'
    assert len(parse_dot(good)["edges"]) == 1
    for bad in [good.replace("}\n", ""),                     # unclosed graph
                good.replace("<b>x</b>", "<b>x"),            # unbalanced HTML
                good.replace("<b>x</b>", "a & b"),           # unescaped &
                good.replace('"g"', '"g'),                   # unterminated string
                good.replace("a -> b", "a -> c")]:           # edge to nowhere
        with pytest.raises(AssertionError):
            parse_dot(bad)


# ---- Graph.to_dot ----------------------------------------------------------------------------
def boxes(parsed):
    return {k: a for k, a in parsed["nodes"].items() if a.get("shape", "box") == "box"}


def by_shape(parsed, shape):
    return {k: a for k, a in parsed["nodes"].items() if a.get("shape") == shape}


def graph_edges(g):
    """What graph_to_dot draws without constants: one edge per non-constant input read, one
    per graph output."""
    reads = sum(1 for n in g.nodes for i in n.inputs if i and not g.is_constant(i))
    return reads + len(g.outputs)


def check_graph_dot(g, **options):
    text = g.to_dot(**options)
    parsed = parse_dot(text)
    assert parsed["name"] == g.name
    assert len(boxes(parsed)) == len(g.nodes)
    assert len(by_shape(parsed, "ellipse")) == len(g.inputs) + len(g.outputs)
    return text, parsed


@pytest.fixture(scope="module")
def cnn_graph():
    return graph.trace(models.SmallCNN(), RNG.standard_normal((1, 1, 28, 28)).astype(np.float32))


def test_small_cnn_dot(cnn_graph):
    g = cnn_graph
    _, parsed = check_graph_dot(g)
    assert len(parsed["edges"]) == graph_edges(g)
    assert not by_shape(parsed, "note")
    labels = [a["label"] for a in boxes(parsed).values()]
    conv = [lab for lab in labels if "<b>Conv</b>" in lab]
    assert len(conv) == 2
    assert "features.0/Conv" in conv[0] and "kernel 3x3" in conv[0]
    assert "float32[1,16,26,26]" in conv[0]                      # the output's shape
    assert "float32[16,1,3,3]" in conv[0]                        # its weight, folded in
    assert "dilation" not in conv[0] and "group" not in conv[0]  # defaults left out
    assert any("stride 2" in lab for lab in labels if "MaxPool" in lab)
    assert any("&lt;top&gt;/Reshape" in lab for lab in labels)   # escaped "<top>"
    edge_labels = {a.get("label") for _, _, a in parsed["edges"]}
    assert "[1,16,13,13]" in edge_labels
    # every edge follows a value from its producer to its reader, in topological order
    order = {f"n{k}": k for k in range(len(g.nodes))}
    for a, b, _ in parsed["edges"]:
        if a in order and b in order:
            assert order[a] < order[b]


def test_show_constants_draws_notes(cnn_graph):
    g = cnn_graph
    text, parsed = check_graph_dot(g, show_constants=True, rankdir="LR")
    assert "rankdir=LR" in text
    notes = by_shape(parsed, "note")
    assert len(notes) == len(g.constants)
    assert any("features.3.weight" in a["label"] for a in notes.values())
    dashed = [e for e in parsed["edges"] if e[2].get("style") == "dashed"]
    reads = sum(1 for n in g.nodes for i in n.inputs if i and g.is_constant(i))
    assert len(dashed) == reads
    assert len(parsed["edges"]) == graph_edges(g) + reads
    assert not any("consts:" in a["label"] for a in boxes(parsed).values())


def test_rankdir_is_checked(cnn_graph):
    with pytest.raises(ValueError, match="rankdir"):
        cnn_graph.to_dot(rankdir="sideways")


def test_fused_ops_are_coloured_and_names_escaped():
    g = Graph('odd "name" & <graph>')
    x = g.add_input('in"put<0>', (1, 4, 8, 8))
    w = g.add_constant("block.0/conv.weight", RNG.standard_normal((8, 4, 3, 3)).astype(np.float32))
    b = g.add_constant("block.0/conv.bias", np.zeros(8, np.float32))
    conv = dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], dilations=[1, 1],
                group=1)
    plain = g.add_node("Conv", [x, w, b], name='a/b.c "quoted" & <x>', **conv)
    fused = g.add_node("mte.ConvAct", [x, w, b, ""], name="block.0/ConvAct", activation="relu6",
                       **conv)
    lo, hi = g.add_constant("lo", np.float32(0)), g.add_constant("hi", np.float32(6))
    clip = g.add_node("Clip", [plain.outputs[0], lo, hi], name="clip")
    add = g.add_node("Add", [clip.outputs[0], fused.outputs[0]], name="add")
    g.set_outputs([add.outputs[0], fused.outputs[0]])
    g.check()
    text, parsed = check_graph_dot(g)
    assert parsed["name"] == 'odd "name" & <graph>'
    assert len(parsed["edges"]) == graph_edges(g)
    colours = {a["label"].split("</b>")[0]: a["fillcolor"] for a in boxes(parsed).values()}
    assert colours["<b>mte.ConvAct"] != colours["<b>Conv"]
    assert colours["<b>Conv"] == colours["<b>Add"]
    labels = "".join(a["label"] for a in parsed["nodes"].values())
    assert "&quot;quoted&quot; &amp; &lt;x&gt;" in labels
    assert "act relu6" in labels and "stride 2" in labels and "pad 1" in labels
    assert "consts: =0, =6" in labels                  # tiny constants: their values
    render(text)
    text, parsed = check_graph_dot(g, show_constants=True)
    assert len(by_shape(parsed, "note")) == len(g.constants)
    render(text)


def test_dot_renders_with_graphviz(cnn_graph):
    render(cnn_graph.to_dot())
    render(cnn_graph.to_dot(show_constants=True, rankdir="LR"))


ZOO = {
    "MLP": lambda: (models.MLP(), [RNG.standard_normal((2, 784)).astype(np.float32)]),
    "SmallCNN": lambda: (models.SmallCNN(),
                         [RNG.standard_normal((1, 1, 28, 28)).astype(np.float32)]),
    "resnet18": lambda: (models.resnet18(),
                         [RNG.standard_normal((1, 3, 32, 32)).astype(np.float32)]),
    "mobilenet_v2": lambda: (models.mobilenet_v2(),
                             [RNG.standard_normal((1, 3, 64, 64)).astype(np.float32)]),
    "TransformerClassifier": lambda: (models.TransformerClassifier(100, 5),
                                      [RNG.integers(0, 100, (2, 16)).astype(np.int64)]),
}


@pytest.mark.parametrize("name", list(ZOO))
def test_every_zoo_model_draws(name):
    model, xs = ZOO[name]()
    g = graph.trace(model, *xs, check=False)
    for options in ({}, {"show_constants": True}):
        _, parsed = check_graph_dot(g, **options)
        assert len(parsed["edges"]) >= graph_edges(g)
    # and after the passes (whatever they have done by now)
    check_graph_dot(g.optimize())


# ---- autograd.to_dot -------------------------------------------------------------------------
def links(tensor):
    """The next_functions links that lead somewhere, over the graph's distinct nodes."""
    seen, stack, count = set(), [tensor.grad_fn], 0
    seen.add(id(tensor.grad_fn))
    keep = [tensor.grad_fn]
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            count += 1
            if hasattr(nxt, "variable"):
                continue
            if id(nxt) not in seen:
                seen.add(id(nxt))
                keep.append(nxt)
                stack.append(nxt)
    return count, len(seen)


@pytest.fixture
def mlp_loss():
    mte.manual_seed(0)
    model = models.MLP(8, (16, 16), 3)
    x = mte.tensor(RNG.standard_normal((4, 8)).astype(np.float32))
    y = mte.tensor(np.array([0, 1, 2, 0]))
    return model, nn.functional.cross_entropy(model(x), y)


def test_autograd_dot_of_mlp_loss(mlp_loss):
    model, loss = mlp_loss
    params = dict(model.named_parameters())
    text = autograd.to_dot(loss, params=params)
    parsed = parse_dot(text)
    assert "AddmmBackward0" in text
    for name in params:
        assert f"<b>{name}</b>" in text
    n_links, n_nodes = links(loss)
    assert len(parsed["edges"]) == n_links + 1          # + grad_fn -> the result box
    leaves = [k for k, a in parsed["nodes"].items() if a.get("fillcolor") == "#cfe2f3"]
    assert len(leaves) == len(params)
    results = [k for k, a in parsed["nodes"].items() if a.get("fillcolor") == "#fff2a8"]
    assert results == ["result"] and parsed["nodes"]["result"]["label"] == "float32[]"
    ops = [a for k, a in parsed["nodes"].items() if k.startswith("n")]
    assert len(ops) == n_nodes
    assert any("saved: float32[4,8]" in a["label"] for a in ops)
    assert ("result" in {b for _, b, _ in parsed["edges"]})
    # without params, leaves are named by their shape; without show_saved, no saved tensors
    text = autograd.to_dot(loss, show_saved=False)
    parsed = parse_dot(text)
    assert "saved" not in text and "layers.0.weight" not in text
    assert "float32[16,8]" in text
    assert len(parsed["edges"]) == n_links + 1


def test_autograd_dot_after_backward_says_freed(mlp_loss):
    model, loss = mlp_loss
    before = autograd.to_dot(loss)
    loss.backward()
    after = autograd.to_dot(loss, params=dict(model.named_parameters()))
    parsed = parse_dot(after)
    assert "saved: freed" in after and "freed" not in before
    assert len(parsed["edges"]) == links(loss)[0] + 1
    assert len(before.splitlines()) == len(after.splitlines())


def test_autograd_dot_shared_inputs_are_drawn_once():
    w = mte.tensor(RNG.standard_normal((3, 3)).astype(np.float32), requires_grad=True)
    h = w * 2
    y = (h * h + w).sum()                               # h used twice, w reached twice
    parsed = parse_dot(autograd.to_dot(y, params={"w": w}))
    leaves = [a for a in parsed["nodes"].values() if a.get("fillcolor") == "#cfe2f3"]
    assert len(leaves) == 1 and "<b>w</b>" in leaves[0]["label"]
    assert len(parsed["edges"]) == links(y)[0] + 1
    mul = [k for k, a in parsed["nodes"].items() if "MulBackward0" in a["label"]]
    assert len(mul) == 2                                # w * 2 and h * h, each once
    out_of = {}
    for a, b, _ in parsed["edges"]:
        out_of[a] = out_of.get(a, 0) + 1
    assert sorted(out_of[k] for k in mul) == [1, 2]     # h feeds h * h twice


def test_autograd_dot_of_a_tensor_without_history():
    for t in [mte.tensor(np.ones((2, 3), np.float32)),
              mte.tensor(np.ones(3, np.float32), requires_grad=True)]:
        parsed = parse_dot(autograd.to_dot(t))
        assert len(parsed["nodes"]) == 1 and not parsed["edges"]
        assert t.grad_fn is None
    with mte.no_grad():
        y = mte.tensor(np.ones(3, np.float32), requires_grad=True) * 2
    assert len(parse_dot(autograd.to_dot(y))["nodes"]) == 1
    with pytest.raises(TypeError, match="Tensor"):
        autograd.to_dot(np.ones(3))
    assert autograd.to_dot is mte.autograd.to_dot


def test_autograd_dot_saved_output_and_multi_output_edges():
    x = mte.tensor(RNG.standard_normal((4, 6)).astype(np.float32), requires_grad=True)
    parts = x.split(3, dim=1) if hasattr(x, "split") else mte.split(x, 3, 1)
    y = (parts[0].exp() * parts[1]).sum()                # exp saves its output
    text = autograd.to_dot(y)
    parsed = parse_dot(text)
    assert "(out)" in text
    assert len(parsed["edges"]) == links(y)[0] + 1
    render(text)


def test_autograd_dot_renders_with_graphviz(mlp_loss):
    model, loss = mlp_loss
    render(autograd.to_dot(loss, params=dict(model.named_parameters())))
