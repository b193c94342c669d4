"""The fused optimizer updates: backend ``sgd_step`` / ``adam_step``.

The native kernels (native/src/optim.c through ``_C``) must equal their numpy twins bit for bit
over generated sizes (0, 1, primes, a threaded large one) and every flag combination; what the
kernels do not take (float64, views, aliasing arrays) must go to the twin; bad input to the
bindings raises a clear TypeError/ValueError and changes nothing. The optimizers' agreement
with PyTorch is tested in test_optim.py; here the twins' update rule is also checked against
torch.optim directly for float32."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch_edge as mte
from minitorch_edge import optim
from minitorch_edge.backend import numpy_backend as twin
from harness import import_torch

native = pytest.importorskip("minitorch_edge.backend.native_optim")
if "optim" not in native._C.kernels():
    pytest.skip("the extension has no optimizer kernels", allow_module_level=True)
_C = native._C
torch = import_torch()

SIZES = st.sampled_from([0, 1, 2, 3, 7, 13, 31, 257, 1009, 16385, 300007])
SHAPES = st.one_of(SIZES.map(lambda n: (n,)), st.sampled_from([(), (3, 5), (2, 0, 3),
                                                              (7, 11, 2)]))


def _arrays(rng, shape, k):
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(k)]


@settings(max_examples=25, deadline=None)
@given(shape=SHAPES, momentum=st.sampled_from([0.0, 0.9, 0.5]),
       dampening=st.sampled_from([0.0, 0.25]), wd=st.sampled_from([0.0, 1e-2]),
       nesterov=st.booleans(), maximize=st.booleans(), seed=st.integers(0, 2**16))
def test_sgd_step_native_equals_twin(shape, momentum, dampening, wd, nesterov, maximize, seed):
    nesterov = nesterov and momentum > 0 and dampening == 0
    rng = np.random.default_rng(seed)
    p, g, b = _arrays(rng, shape, 3)
    p2, b2 = p.copy(), b.copy()
    for step in range(3):
        args = (0.05, momentum, dampening, wd, nesterov, maximize, step == 0)
        native.sgd_step(p, g, b if momentum else None, *args)
        twin.sgd_step(p2, g, b2 if momentum else None, *args)
    np.testing.assert_array_equal(p, p2)
    np.testing.assert_array_equal(b, b2)


@settings(max_examples=25, deadline=None)
@given(shape=SHAPES, beta1=st.sampled_from([0.9, 0.3, 0.0]), wd=st.sampled_from([0.0, 1e-2]),
       decoupled=st.booleans(), amsgrad=st.booleans(), maximize=st.booleans(),
       seed=st.integers(0, 2**16))
def test_adam_step_native_equals_twin(shape, beta1, wd, decoupled, amsgrad, maximize, seed):
    rng = np.random.default_rng(seed)
    p, g, m = _arrays(rng, shape, 3)
    v, vm = np.abs(_arrays(rng, shape, 1)[0]), np.zeros(shape, np.float32)
    ours = [p, m, v, vm]
    theirs = [a.copy() for a in ours]
    for t in (1, 2, 3):
        for (pp, mm, vv, vmax), fn in ((ours, native.adam_step), (theirs, twin.adam_step)):
            fn(pp, g, mm, vv, vmax if amsgrad else None, t, 1e-2, beta1, 0.999, 1e-8, wd,
               decoupled, maximize)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)


def test_sgd_twin_matches_torch_rule():
    rng = np.random.default_rng(0)
    p, g = _arrays(rng, (257,), 2)
    for kw in (dict(momentum=0.9, nesterov=True, weight_decay=1e-2),
               dict(momentum=0.5, dampening=0.3, maximize=True), dict()):
        tp = torch.tensor(p.copy(), requires_grad=True)
        topt = torch.optim.SGD([tp], lr=0.1, **kw)
        ours, buf = p.copy(), np.zeros_like(p)
        for step in range(3):
            tp.grad = torch.tensor(g)
            topt.step()
            twin.sgd_step(ours, g, buf, 0.1, kw.get("momentum", 0), kw.get("dampening", 0),
                          kw.get("weight_decay", 0), kw.get("nesterov", False),
                          kw.get("maximize", False), step == 0)
        np.testing.assert_allclose(ours, tp.detach().numpy(), rtol=1e-6, atol=1e-6)


def test_fallbacks_go_to_the_twin():
    rng = np.random.default_rng(1)
    # float64 and a non-contiguous view: the twin's result (the kernel would refuse them)
    for p, g in ((rng.standard_normal(9), rng.standard_normal(9)),
                 (_arrays(rng, (20,), 1)[0][::2], _arrays(rng, (10,), 1)[0])):
        p2 = p.copy()
        native.sgd_step(p, g, None, 0.1, 0.0, 0.0, 0.0, False, False, False)
        twin.sgd_step(p2, g, None, 0.1, 0.0, 0.0, 0.0, False, False, False)
        np.testing.assert_array_equal(p, p2)
    # a gradient that is the parameter itself (aliasing) is still right
    p = np.ones(5, np.float32)
    native.sgd_step(p, p, None, 0.5, 0.0, 0.0, 0.0, False, False, False)
    np.testing.assert_array_equal(p, np.full(5, 0.5, np.float32))


def test_bindings_reject_bad_input_and_change_nothing():
    p, g, b = (np.ones(4, np.float32) for _ in range(3))
    cases = [
        (TypeError, "float32", lambda: _C.sgd_step(p.astype(np.float64), g, b, 0.1, 0.9, 0, 0,
                                                   False, False, False)),
        (ValueError, "shape", lambda: _C.sgd_step(p, np.ones(5, np.float32), b, 0.1, 0.9, 0, 0,
                                                  False, False, False)),
        (ValueError, "buf", lambda: _C.sgd_step(p, g, None, 0.1, 0.9, 0, 0, False, False,
                                                False)),
        (ValueError, "share memory", lambda: _C.sgd_step(p, g, p, 0.1, 0.9, 0, 0, False, False,
                                                         False)),
        (ValueError, "C-contiguous", lambda: _C.sgd_step(np.ones(8, np.float32)[::2], g, b, 0.1,
                                                         0.9, 0, 0, False, False, False)),
        (ValueError, "step", lambda: _C.adam_step(p, g, b, b.copy(), None, 0.0, 1e-3, 0.9,
                                                  0.999, 1e-8, 0, False, False)),
        (ValueError, "exp_avg_sq", lambda: _C.adam_step(p, g, b, np.ones(3, np.float32), None,
                                                        1.0, 1e-3, 0.9, 0.999, 1e-8, 0, False,
                                                        False)),
    ]
    ro = np.ones(4, np.float32)
    ro.flags.writeable = False
    cases.append((ValueError, "read-only", lambda: _C.sgd_step(ro, g, b, 0.1, 0.9, 0, 0, False,
                                                               False, False)))
    for exc, words, call in cases:
        with pytest.raises(exc, match=words):
            call()
        assert (p == 1).all() and (g == 1).all() and (b == 1).all() and (ro == 1).all()


@pytest.mark.parametrize("make", [
    lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3),
    lambda ps: optim.Adam(ps, lr=1e-2, amsgrad=True),
    lambda ps: optim.AdamW(ps, lr=1e-2, maximize=True)])
def test_optimizers_same_on_both_backends(make):
    """A few steps of each optimizer give the same parameters with the native kernels as with
    the numpy twins (backend.use switches which one `backend.sgd_step` is)."""
    rng = np.random.default_rng(2)
    init = [rng.standard_normal(s).astype(np.float32) for s in ((31, 7), (7,), ())]
    grads = [rng.standard_normal(a.shape).astype(np.float32) for a in init]
    results = []
    for name in ("native", "numpy"):
        mte.backend.use(name)
        try:
            ps = [mte.tensor(a.copy(), requires_grad=True) for a in init]
            opt = make(ps)
            for _ in range(3):
                for p, g in zip(ps, grads):
                    p.grad = mte.tensor(g)
                opt.step()
            results.append([p.detach().numpy().copy() for p in ps])
        finally:
            mte.backend.use("auto")
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
