"""Autograd behaviour: the Function API, backward/grad, hooks, retain_graph, in-place versions,
anomaly mode, memory, higher-order gradients, grad modes, the tape."""
import gc

import numpy as np
import pytest

import minitorch_edge as mte
from minitorch_edge import autograd
from harness import import_torch


def test_seed_article_custom_relu_runs_as_written():
    import minitorch_edge as torch  # the first seed article's code, with our package as `torch`

    class CustomTensorFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            # 自定义前向计算逻辑
            ctx.save_for_backward(input)
            return input.clamp(min=0)

        @staticmethod
        def backward(ctx, grad_output):
            # 自定义反向传播逻辑
            input, = ctx.saved_tensors
            grad_input = grad_output.clone()
            grad_input[input < 0] = 0
            return grad_input

    x = torch.tensor([-2.0, -0.5, 0.5, 3.0], requires_grad=True)
    y = CustomTensorFunction.apply(x)
    assert y.tolist() == [0.0, 0.0, 0.5, 3.0]
    assert y.grad_fn.name() == "CustomTensorFunctionBackward"
    (y * torch.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 3.0, 4.0]


def test_function_api_ctx_features():
    class MulConst(autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            ctx.save_for_backward(x)
            out = x * k
            idx = mte.tensor([0])
            ctx.mark_non_differentiable(idx)
            return out, idx

        @staticmethod
        def backward(ctx, grad, grad_idx):
            x, = ctx.saved_tensors
            assert ctx.needs_input_grad == (True, False)
            return grad * ctx.k, None

    x = mte.tensor([1.0, 2.0], requires_grad=True)
    y, idx = MulConst.apply(x, 3.0)
    assert y.requires_grad and not idx.requires_grad
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_function_saving_its_output_and_double_backward():
    class Exp(autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            y, = ctx.saved_tensors
            return g * y

    x = mte.tensor([0.5, 1.0], dtype=mte.float64, requires_grad=True)
    y = Exp.apply(x)
    g, = autograd.grad(y.sum(), x, create_graph=True)
    g2, = autograd.grad(g.sum(), x)
    np.testing.assert_allclose(g2.numpy(), np.exp([0.5, 1.0]))
    assert autograd.gradcheck(Exp.apply, (x,))


def test_function_wrong_gradient_shape_is_reported():
    class Bad(autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g.sum()

    x = mte.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="BadBackward returned an invalid gradient at index 0"):
        Bad.apply(x).sum().backward()


def test_backward_twice_names_retain_graph():
    x = mte.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [4.0, 8.0]
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        y.backward()


def test_backward_on_non_scalar_needs_gradient():
    x = mte.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar "
                                           "outputs"):
        (x * 2).backward()
    (x * 2).backward(mte.tensor([1.0, 2.0, 3.0]))
    assert x.grad.tolist() == [2.0, 4.0, 6.0]
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 2).backward(mte.ones(2))


def test_backward_without_grad_raises():
    with pytest.raises(RuntimeError, match="does not require grad"):
        mte.ones(2).sum().backward()


def test_accumulation_and_zeroing():
    x = mte.tensor([1.0, 2.0], requires_grad=True)
    (x * 3).sum().backward()
    (x * x).sum().backward()
    assert x.grad.tolist() == [5.0, 7.0]
    x.grad = None
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_grad_function_and_allow_unused():
    x = mte.tensor(2.0, requires_grad=True)
    z = mte.tensor(1.0, requires_grad=True)
    y = x ** 3
    (g,) = autograd.grad(y, x, create_graph=True)
    assert g.item() == 12.0 and x.grad is None
    (g2,) = autograd.grad(g, x, create_graph=True)
    (g3,) = autograd.grad(g2, x)
    assert (g2.item(), g3.item()) == (12.0, 6.0)
    with pytest.raises(RuntimeError, match="allow_unused=True"):
        autograd.grad(x * 2, [x, z])
    gx, gz = autograd.grad(x * 2, [x, z], allow_unused=True)
    assert gx.item() == 2.0 and gz is None


def test_grad_of_intermediate_tensor():
    x = mte.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    y = (h * h).sum()
    (gh,) = autograd.grad(y, h)
    assert gh.tolist() == [6.0, 12.0]


def test_hooks_and_retain_grad():
    x = mte.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    handle = x.register_hook(lambda g: seen.append(g.tolist()))
    h = x * 2
    h.retain_grad()
    h.register_hook(lambda g: g * 10)
    (h * h).sum().backward()
    assert seen == [[80.0, 160.0]]
    assert h.grad.tolist() == [40.0, 80.0]
    assert x.grad.tolist() == [80.0, 160.0]
    handle.remove()
    x.grad = None
    (x * 1).sum().backward()
    assert len(seen) == 1


def test_grad_modes():
    x = mte.ones(2, requires_grad=True)
    with mte.no_grad():
        assert not (x * 2).requires_grad
        with mte.enable_grad():
            assert (x * 2).requires_grad
    with mte.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad
    with mte.inference_mode():
        assert not (x * 2).requires_grad and mte.is_inference_mode_enabled()

    @mte.no_grad()
    def f(t):
        return t * 2

    @mte.no_grad
    def g(t):
        return t * 2

    assert not f(x).requires_grad and not g(x).requires_grad
    assert mte.is_grad_enabled()
    mte.set_grad_enabled(False)
    assert not mte.is_grad_enabled()
    mte.set_grad_enabled(True)


def test_requires_grad_rules():
    with pytest.raises(RuntimeError, match="floating point"):
        mte.tensor([1, 2]).requires_grad_()
    y = mte.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="leaf variables"):
        y.requires_grad = False
    assert y.detach().requires_grad is False and y.detach()._vc is y._vc


def test_numpy_on_requires_grad_raises():
    x = mte.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Use tensor.detach\(\).numpy\(\)"):
        x.numpy()
    assert x.detach().numpy().tolist() == [1.0, 1.0]


# ---- in-place ops and versions ------------------------------------------------------------------
def test_inplace_on_leaf_requiring_grad_raises():
    x = mte.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.add_(1)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x[0] = 3.0
    assert x.tolist() == [1.0, 1.0] and x._version == 0
    with mte.no_grad():
        x.add_(1)
        x.mul_(2)
    assert x.tolist() == [4.0, 4.0] and x._version == 2


def test_modified_saved_tensor_raises_naming_op():
    x = mte.tensor([1.0, 2.0], requires_grad=True)
    a = x * 2
    b = (a * a).sum()
    a.add_(1)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation.*MulBackward0.*"
                                           r"add_"):
        b.backward()


def test_modified_saved_output_raises():
    x = mte.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 1).exp()
    y2 = y.exp()          # ExpBackward saved y2? no: it saved its own output; change y2
    y2.mul_(2)
    with pytest.raises(RuntimeError, match="inplace"):
        y2.sum().backward()


def test_inplace_ops_are_differentiated_correctly():
    torch = import_torch()
    xs = np.array([0.3, -1.2, 2.0])
    results = []
    for lib, make in ((mte, mte.tensor), (torch, torch.tensor)):
        x = make(xs, requires_grad=True)
        w = make(np.array([1.5, 0.5, -2.0]), requires_grad=True)
        h = x * 1
        h.mul_(w)
        h += 2
        h.sub_(x)
        h[1] = h[1] * 3
        h[h > 100] = 0.0
        h.exp_()
        h.sum().backward()
        results.append((h.detach().numpy(), x.grad.numpy(), w.grad.numpy()))
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_inplace_dtype_and_shape_errors_leave_tensor_unchanged():
    x = mte.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match="can't be cast"):
        x.add_(0.5)
    y = mte.ones(3)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        y.add_(mte.ones(2, 3))
    assert x.tolist() == [1, 2, 3] and y.tolist() == [1.0, 1.0, 1.0]
    assert x._version == 0 and y._version == 0


def test_views_share_version_and_memory():
    x = mte.zeros(2, 3)
    v = x.reshape(3, 2)
    v.add_(1)
    assert x.tolist() == [[1.0] * 3] * 2
    assert x._version == 1


def test_setitem_on_plain_tensor_and_fill_zero_copy():
    x = mte.zeros(2, 3)
    x[0, 1] = 5
    x[1] = mte.tensor([1.0, 2.0, 3.0])
    assert x.tolist() == [[0.0, 5.0, 0.0], [1.0, 2.0, 3.0]]
    x.zero_()
    x.fill_(2)
    assert x.tolist() == [[2.0] * 3] * 2
    x.copy_(mte.tensor([1, 2, 3]))
    assert x.tolist() == [[1.0, 2.0, 3.0]] * 2


# ---- anomaly detection ---------------------------------------------------------------------------
def test_detect_anomaly_names_forward_op():
    x = mte.tensor([0.0, 1.0], requires_grad=True)
    with autograd.detect_anomaly():
        y = x.sqrt()          # d sqrt / dx at 0 is inf
        with pytest.raises(RuntimeError, match=r"(?s)Function 'SqrtBackward0' returned (nan|inf) "
                                               r"values.*x.sqrt\(\)"):
            y.sum().backward()
    y = x.sqrt()
    y.sum().backward()        # without anomaly mode: no error, inf gradient
    assert np.isinf(x.grad.numpy()[0])


# ---- the tape and memory --------------------------------------------------------------------------
def test_record_tape_lists_ops_in_order():
    x = mte.ones(2, 3, requires_grad=True)
    w = mte.ones(3)
    with autograd.record_tape() as tape:
        y = (x * w).exp().sum()
    names = [n.name() for n in tape]
    assert names == ["MulBackward0", "ExpBackward0", "SumBackward0"]
    text = str(tape)
    assert "MulBackward0" in text and "(2, 3) float32 [grad]" in text
    seqs = [n._seq for n in tape]
    assert seqs == sorted(seqs)
    y.backward()


def _live_nodes():
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, autograd.Node))


def test_forward_without_backward_keeps_memory_bounded():
    x = mte.randn(4, 4, requires_grad=True)
    before = _live_nodes()
    for _ in range(10_000):
        y = ((x * 2).exp() + x).sum()
    del y
    after = _live_nodes()
    assert after - before < 10


def test_next_functions_and_leaf_accumulator():
    x = mte.ones(2, requires_grad=True)
    y = x * 2
    (fn, nr), (none, _) = y.grad_fn.next_functions
    assert fn.variable is x and none is None


# ---- the engine's optimisations, each pinned against torch ------------------------------------
def test_grad_prunes_a_branch_that_leads_to_no_input():
    calls = []

    class Spy(autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            calls.append(1)
            return g

    a = mte.tensor([1.0, 2.0], requires_grad=True)
    b = mte.tensor([3.0, 4.0], requires_grad=True)
    h = a * 3                               # a non-leaf input: its gradient is captured
    y = (h * Spy.apply(b)).sum()
    ga, gh = mte.autograd.grad(y, [a, h])
    assert calls == []                      # b's branch leads to neither input: never run
    assert ga.tolist() == [9.0, 12.0] and gh.tolist() == [3.0, 4.0]
    assert a.grad is None and b.grad is None


def test_backward_with_inputs_accumulates_only_into_them():
    out = []
    for lib in (mte, import_torch()):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([3.0, 4.0], requires_grad=True)
        (a * b).sum().backward(inputs=[a])
        out.append((a.grad.tolist(), b.grad))
    assert out[0] == out[1] == ([3.0, 4.0], None)


@pytest.mark.parametrize("materialize", [True, False])
def test_missing_output_gradients_are_zeros_unless_disabled(materialize):
    seen = []
    for lib in (mte, import_torch()):
        class Split(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(materialize)
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, g1, g2):
                seen.append(None if g2 is None else g2.tolist())
                return g1 * 2

        x = lib.tensor([1.0, 2.0], requires_grad=True)
        first, _ = Split.apply(x)
        first.sum().backward()
        assert x.grad.tolist() == [2.0, 2.0]
    assert seen == ([[0.0, 0.0]] * 2 if materialize else [None, None])


def test_node_prehook_and_hook_replace_gradients_as_torch():
    out = []
    for lib in (mte, import_torch()):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        w = lib.tensor([3.0, 5.0], requires_grad=True)
        y = x * w
        y.grad_fn.register_prehook(lambda go: (go[0] * 10,))
        y.grad_fn.register_hook(lambda gi, go: (gi[0] + 1, gi[1]))
        y.sum().backward()
        out.append((x.grad.tolist(), w.grad.tolist()))
    assert out[0] == out[1]


def test_user_function_forward_runs_without_grad_and_subclasses_keep_their_apply():
    class Twice(autograd.Function):
        @staticmethod
        def forward(ctx, x):
            assert not mte.is_grad_enabled()      # to autograd, forward is one op
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Wrapped(Twice):
        @classmethod
        def apply(cls, x):
            return super().apply(x) + 1

    class Child(Wrapped):                         # inherits Wrapped's own apply
        pass

    for fn, value in ((Twice, 2.0), (Wrapped, 3.0), (Child, 3.0)):
        x = mte.tensor([1.0], requires_grad=True)
        y = fn.apply(x)
        assert y.tolist() == [value] and mte.is_grad_enabled()
        y.backward()
        assert x.grad.tolist() == [2.0]
    assert Child.apply(mte.tensor([1.0], requires_grad=True)).grad_fn.name() == "AddBackward0"


# ---- higher order against torch -------------------------------------------------------------------
HIGHER = {
    "tanh": lambda L, x, w: (x * w).tanh(),
    "sigmoid": lambda L, x, w: (x * w).sigmoid(),
    "softmax": lambda L, x, w: (x * w).softmax(dim=-1),
    "log_softmax": lambda L, x, w: (x * w).log_softmax(dim=-1),
    "matmul": lambda L, x, w: (x @ w.reshape(3, 1)) * x,
    "pow": lambda L, x, w: (x.abs() + 0.5) ** w,
    "exp": lambda L, x, w: (x * w).exp(),
    "log": lambda L, x, w: (x * x + w * w).log(),
}


@pytest.mark.parametrize("name", sorted(HIGHER))
def test_hessian_vector_product_matches_torch(name):
    torch = import_torch()
    rng = np.random.default_rng(1)
    xs, ws, vs = rng.standard_normal((2, 3)), rng.standard_normal(3), rng.standard_normal((2, 3))
    out = []
    for lib in (mte, torch):
        x = lib.tensor(xs, requires_grad=True)
        w = lib.tensor(ws, requires_grad=True)
        y = (HIGHER[name](lib, x, w) ** 2).sum()
        gx, = lib.autograd.grad(y, x, create_graph=True)
        hv = lib.autograd.grad((gx * lib.tensor(vs)).sum(), [x, w])
        out.append([g.detach().numpy() for g in hv])
    for a, b in zip(*out):
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-10)


# ---- custom Functions: the gradient count and next_functions, as PyTorch ----------------------

def _scale_function(lib, grads):
    """A user Function y = x * k (k a Python number) whose backward returns `grads(g)`."""
    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return grads(g)
    return Scale


@pytest.mark.parametrize("grads,ok", [
    (lambda g: (g * 2, None), True),
    (lambda g: (g * 2, None, None), True),      # extra gradients are fine when they are None
    (lambda g: (g * 2, None, g), False),        # ... and an error when one is not
    (lambda g: (g * 2,), False),                # too few
])
def test_custom_backward_gradient_count_like_torch(grads, ok):
    torch = import_torch()
    for lib in (torch, mte):
        x = lib.ones(2, requires_grad=True)
        y = _scale_function(lib, grads).apply(x, 3)
        if ok:
            y.sum().backward()
            assert x.grad.tolist() == [2.0, 2.0]
        else:
            with pytest.raises(RuntimeError, match=r"returned an incorrect number of gradients "
                                                   r"\(expected 2, got \d\)"):
                y.sum().backward()


def test_custom_next_functions_list_only_tensor_arguments():
    torch = import_torch()
    shapes = []
    for lib in (torch, mte):
        x = lib.ones(2, requires_grad=True)
        y = _scale_function(lib, lambda g: (g, None)).apply(x, 3)
        fns = y.grad_fn.next_functions
        shapes.append([(type(f).__name__ if f is not None else None, nr) for f, nr in fns])
    assert shapes[0] == shapes[1] == [("AccumulateGrad", 0)]
