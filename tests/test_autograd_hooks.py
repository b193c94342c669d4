"""Module full backward hooks (register_full_backward_hook / _pre_hook),
Tensor.register_post_accumulate_grad_hook and ctx.mark_dirty, each run side by side with
PyTorch: the same calls, the same things seen by the hooks (shapes and values), the same
gradients, versions and errors."""
import warnings

import numpy as np
import pytest

import minitorch_edge as mte
import minitorch_edge.nn._backward_hooks  # noqa: F401  (attaches the Module methods)
from harness import import_torch

torch = import_torch()
LIBS = [torch, mte]


def _desc(gs):
    return [None if g is None else np.round(g.detach().numpy().astype(np.float64), 5).tolist()
            for g in gs]


def _both(run):
    """run(lib) for both libraries; their results must be equal."""
    ours, theirs = run(mte), run(torch)
    assert ours == theirs
    return ours


def _linear(lib):
    lib.manual_seed(0)
    m = lib.nn.Linear(3, 2)
    with lib.no_grad():
        m.weight.copy_(lib.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]]))
        m.bias.fill_(0.1)
    return m


# ---- Module backward hooks ---------------------------------------------------------------------
def test_full_backward_hook_sees_grads_and_replaces_grad_input():
    def run(lib):
        m, log = _linear(lib), []

        def hook(mod, gi, go):
            assert mod is m
            log.append(("hook", _desc(gi), _desc(go)))
            return (gi[0] * 10,)

        def pre(mod, go):
            log.append(("pre", _desc(go)))
            return (go[0] * 2,)
        h1 = m.register_full_backward_hook(hook)
        h2 = m.register_full_backward_pre_hook(pre)
        x = lib.tensor([[1.0, 2.0, 3.0], [0.0, -1.0, 1.0]], requires_grad=True)
        y = m(x)
        name = y.grad_fn.name()
        (y * lib.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
        grads = _desc([x.grad, m.weight.grad, m.bias.grad])
        h1.remove()
        h2.remove()
        x.grad = None
        m(x).sum().backward()
        return name, log, grads, _desc([x.grad])
    _both(run)


def test_full_backward_hook_positions_and_non_tensor_arguments():
    def run(lib):
        class M(lib.nn.Module):
            def forward(self, a, k, b):
                return a * k, b.sum() * 2, 3
        m, log = M(), []
        m.register_full_backward_hook(lambda mod, gi, go: log.append(("h", _desc(gi),
                                                                       _desc(go))))
        m.register_full_backward_pre_hook(lambda mod, go: log.append(("p", _desc(go))))
        a = lib.ones(2, requires_grad=True)
        b = lib.ones(3)
        out = m(a, 3.0, b)
        out[0].sum().backward()          # b needs no grad: it sees zeros there, as torch
        b.requires_grad_()
        out = m(a, 3.0, b)
        (out[0].sum() + out[1]).backward()
        return log, type(out[2]).__name__
    _both(run)


def test_full_backward_hook_when_no_input_requires_grad():
    def run(lib):
        m, log = _linear(lib), []
        m.register_full_backward_hook(lambda mod, gi, go: log.append((_desc(gi), _desc(go))))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            m(lib.ones(2, 3)).sum().backward()
        return log, any("no inputs require gradients" in str(x.message) for x in w)
    assert _both(run)[1]
    m = mte.nn.Linear(3, 2)
    m.register_full_backward_hook(lambda mod, gi, go: (mte.ones(2, 3),))
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="should always return "
                                                                         "None"):
        m(mte.ones(2, 3)).sum().backward()


def test_backward_hook_order_prepend_and_errors():
    def run(lib):
        m, log = _linear(lib), []
        m.register_full_backward_hook(lambda *a: log.append("second"))
        m.register_full_backward_hook(lambda *a: log.append("first"), prepend=True)
        m.register_full_backward_pre_hook(lambda *a: log.append("pre"))
        m(lib.ones(1, 3, requires_grad=True)).sum().backward()
        return log
    assert _both(run) == ["pre", "first", "second"]
    for lib in LIBS:
        m = _linear(lib)
        h = m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
        with pytest.raises(RuntimeError, match="Backward hook returned an invalid number of "
                                               "grad_input, got 2, but expected 1"):
            m(lib.ones(1, 3, requires_grad=True)).sum().backward()
        h.remove()
        m.register_full_backward_pre_hook(lambda mod, go: (go[0], go[0]))
        with pytest.raises(RuntimeError, match="Backward pre hook returned an invalid number "
                                               "of grad_output, got 2, but expected 1"):
            m(lib.ones(1, 3, requires_grad=True)).sum().backward()


def test_backward_hooks_in_a_sequential():
    def run(lib):
        lib.manual_seed(1)
        net = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 1))
        for p, v in zip(net.parameters(), (0.3, -0.2, 0.5, 0.1)):
            with lib.no_grad():
                p.fill_(v)
        log = []
        for name, mod in net.named_children():
            mod.register_full_backward_hook(
                lambda mod, gi, go, name=name: log.append((name, _desc(gi), _desc(go))))
        net(lib.tensor([[1.0, -2.0, 0.5]], requires_grad=True)).sum().backward()
        return log
    log = _both(run)
    assert [entry[0] for entry in log] == ["2", "1", "0"]


# ---- post-accumulate-grad hooks ----------------------------------------------------------------
def test_post_accumulate_grad_hook():
    def run(lib):
        w = lib.ones(3, requires_grad=True)
        seen = []
        h = w.register_post_accumulate_grad_hook(lambda t: seen.append(_desc([t.grad])))
        (w * 2).sum().backward()
        (w * 3).sum().backward()
        lib.autograd.grad((w * 4).sum(), w)          # accumulates nothing: no call
        h.remove()
        (w * 3).sum().backward()
        # an optimizer step inside backward: the hook updates the leaf and clears its grad
        v = lib.ones(2, requires_grad=True)

        def step(t):
            with lib.no_grad():
                t.sub_(0.5 * t.grad)
            t.grad = None
        v.register_post_accumulate_grad_hook(step)
        (v * lib.tensor([1.0, 2.0])).sum().backward()
        return seen, _desc([w.grad, v]), v.grad is None
    _both(run)
    for lib in LIBS:
        w = lib.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered "
                                               "on non-leaf tensors"):
            (w * 2).register_post_accumulate_grad_hook(lambda t: None)
        with pytest.raises(RuntimeError, match="doesn't require gradient"):
            lib.ones(2).register_post_accumulate_grad_hook(lambda t: None)
        w.register_post_accumulate_grad_hook(lambda t: 1)
        with pytest.raises(TypeError, match="hook returned 'int'"):
            (w * 2).sum().backward()


# ---- ctx.mark_dirty ------------------------------------------------------------------------------
def _functions(lib):
    class Double(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            x.mul_(x)
            ctx.mark_dirty(x)
            ctx.save_for_backward(x)
            return x, x + y

        @staticmethod
        def backward(ctx, g, h):
            sq, = ctx.saved_tensors
            return (g + h) * 2 * sq.sqrt(), h

    class Forgot(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2
    return Double, Square, Forgot


def test_mark_dirty_rebases_history_and_bumps_version():
    def run(lib):
        Double, Square, _ = _functions(lib)
        a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        b = a * 1
        v0 = b._version
        c = Double.apply(b)
        facts = [c is b, b._version - v0, b.grad_fn.name(), b.is_leaf]
        (c * lib.tensor([1.0, 2.0, 3.0])).sum().backward()
        facts.append(_desc([a.grad]))
        a.grad = None
        y = lib.tensor([0.5, 0.5, 0.5], requires_grad=True)
        b = a * 1
        s, t = Square.apply(b, y)
        facts += [s is b, _desc([s, t])]
        (s.sum() + (t * 3).sum()).backward()
        facts.append(_desc([a.grad, y.grad]))
        with lib.no_grad():              # not recorded: still changed, still a new version
            z = lib.ones(2)
            v = z._version
            r = Double.apply(z)
            facts += [r is z, z._version - v, z.grad_fn is None]
        return facts
    _both(run)


def test_mark_dirty_errors_like_torch():
    for lib in LIBS:
        Double, _, Forgot = _functions(lib)
        leaf = lib.ones(3, requires_grad=True)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used "
                                               "in an in-place operation"):
            Double.apply(leaf)
        with pytest.raises(RuntimeError, match="Some elements marked as dirty during the forward "
                                               "method were not returned as output"):
            Forgot.apply(lib.ones(2, requires_grad=True) * 1)
        a = lib.ones(3, requires_grad=True)
        b = a * 1
        d = b * b                        # saves b, which Double then changes
        Double.apply(b)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            d.sum().backward()
    Double = _functions(mte)[0]
    base = mte.ones(3, requires_grad=True) * 1
    with pytest.raises(RuntimeError, match="view of another tensor"):
        Double.apply(base[0:2])          # torch rewrites the base's history; we refuse
