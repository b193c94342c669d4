"""GLU, the distance functions and layers (cosine_similarity, pairwise_distance, pdist, cdist),
F.pad in every mode with the padding layers, max_unpool, and embedding_bag / EmbeddingBag:
checked against PyTorch through the op harness (forward, backward, non-contiguous inputs,
gradcheck and gradgradcheck in float64) and the layer harness (train and eval, weights loaded
from torch's state_dict), a sweep of pad amounts per mode, reprs, and the errors PyTorch
raises."""
import numpy as np
import pytest

import minitorch_edge as mte
from minitorch_edge import nn
from minitorch_edge.nn import functional as F
from minitorch_edge.nn.functional.distance import cdist as _cdist
from harness import Row, fixed, import_torch, make_tests
from layer_harness import LayerRow, make_layer_tests, randn

torch = import_torch()


def _lib(m):
    """The library a module belongs to."""
    return torch if isinstance(m, torch.nn.Module) else mte


# ---- op rows -------------------------------------------------------------------------------------
def _pooled(kernel, nd, shape, **kw):
    """Maker for max_unpool rows: (pooled values, their indices) of a random input."""
    def make(rng, shapes, dtype):
        x = mte.from_numpy(rng.permutation(int(np.prod(shape))).reshape(shape).astype(dtype))
        pool = F.max_pool2d if nd == 2 else F.max_pool1d
        y, idx = pool(x, kernel, return_indices=True, **kw)
        return [y.numpy() * 0.1 + 0.3, idx.numpy()]
    return make


def _bags(num, n, offsets, psw=False):
    """Maker for embedding_bag rows: ids in [0, num) (a 1 at every 3rd place, to repeat ids),
    the weight, offsets (optional) and per-sample weights (optional)."""
    def make(rng, shapes, dtype):
        ids = rng.integers(0, num, n)
        ids[::3] = 1
        out = [ids, rng.standard_normal((num, 3)).astype(dtype)]
        if offsets is not None:
            out.append(np.array(offsets, np.int64))
        if psw:
            out.append(rng.uniform(0.5, 1.5, n).astype(dtype))
        return out
    return make


def _distinct_pair(rng, shapes, dtype):
    """Two inputs whose differences have no ties and no zeros (max-norm and 1-norm kinks)."""
    a = rng.permutation(int(np.prod(shapes[0]))).reshape(shapes[0]) * 0.37
    b = rng.permutation(int(np.prod(shapes[1]))).reshape(shapes[1]) * 0.53 + 0.11
    return [a.astype(dtype), b.astype(dtype)]


def _fn(name):
    return lambda lib, *a, **k: getattr(lib.nn.functional, name)(*a, **k)


def _pad(pads, mode):
    return lambda lib, x: lib.nn.functional.pad(x, pads, mode)


def _bag(mode="mean", psw=False, **kw):
    """embedding_bag(ids, w, offsets[, per_sample_weights]) in `mode`."""
    if psw:
        return lambda lib, i, w, off, p: lib.nn.functional.embedding_bag(
            i, w, off, mode=mode, per_sample_weights=p, **kw)
    return lambda lib, i, w, off: lib.nn.functional.embedding_bag(i, w, off, mode=mode, **kw)


FUNCS = [
    Row("glu", lambda lib, x: lib.nn.functional.glu(x), shapes=fixed((3, 4)), double=True),
    Row("glu-dim0", lambda lib, x: lib.nn.functional.glu(x, 0), shapes=fixed((4, 3, 2)),
        double=True),
    Row("cosine_similarity", lambda lib, a, b: lib.nn.functional.cosine_similarity(a, b),
        shapes=fixed((3, 4), (3, 4)), arity=2, double=True),
    Row("cosine_similarity-broadcast", lambda lib, a, b: lib.nn.functional.cosine_similarity(
        a, b, dim=-1, eps=1e-6), shapes=fixed((2, 3, 4), (4,)), double=True),
    Row("cosine_similarity-0d", lambda lib, a, b: lib.nn.functional.cosine_similarity(a, b, 0),
        shapes=fixed((), ())),
    Row("pairwise_distance", _fn("pairwise_distance"), shapes=fixed((3, 4), (3, 4)),
        double=True),
    Row("pairwise_distance-p1-keepdim", lambda lib, a, b: lib.nn.functional.pairwise_distance(
        a, b, 1.0, keepdim=True), shapes=fixed((3, 4), (4,)), make=_distinct_pair),
    Row("pairwise_distance-p3", lambda lib, a, b: lib.nn.functional.pairwise_distance(
        a, b, p=3, eps=1e-3), shapes=fixed((2, 5), (2, 5)), double=True),
    Row("pairwise_distance-inf", lambda lib, a, b: lib.nn.functional.pairwise_distance(
        a, b, float("inf")), shapes=fixed((3, 4), (3, 4)), make=_distinct_pair),
    Row("pairwise_distance-1d", _fn("pairwise_distance"), shapes=fixed((5,), (5,))),
    Row("pdist", _fn("pdist"), shapes=fixed((4, 3)), double=True),
    Row("pdist-p1", lambda lib, x: lib.nn.functional.pdist(x, 1), shapes=fixed((4, 3)),
        make=lambda r, s, d: _distinct_pair(r, s + s, d)[:1]),
    Row("pdist-p3", lambda lib, x: lib.nn.functional.pdist(x, 3.0), shapes=fixed((5, 2)),
        double=True),
    Row("cdist", lambda lib, a, b: lib.cdist(a, b) if lib is torch else _cdist(a, b),
        shapes=fixed((4, 3), (5, 3)), double=True),
    Row("cdist-batched-p1", lambda lib, a, b: (lib.cdist if lib is torch else _cdist)(a, b, 1),
        shapes=fixed((2, 1, 3, 2), (4, 5, 2)), make=_distinct_pair),
    Row("cdist-p0.5", lambda lib, a, b: (lib.cdist if lib is torch else _cdist)(a, b, 0.5),
        shapes=fixed((3, 2), (2, 2)), make=_distinct_pair),
    # pad: every mode, 1 to 3 padded dims, negative amounts (crops) included
    *[Row(f"pad-{mode}-{len(pads) // 2}d{'-neg' if min(pads) < 0 else ''}", _pad(pads, mode),
          shapes=fixed(shape), double=True)
      for mode in ("reflect", "replicate", "circular", "constant")
      for shape, pads in [((2, 3, 5), (2, 1)), ((2, 3, 5), (-1, 2)), ((1, 2, 4, 3), (1, 2, 2, 0)),
                          ((2, 4, 3), (0, -1, -1, 2)), ((1, 1, 3, 3, 4), (1, 1, 2, 0, 1, 2))]],
    Row("max_unpool2d", lambda lib, y, i: lib.nn.functional.max_unpool2d(y, i, 2),
        make=_pooled(2, 2, (2, 2, 4, 6)), shapes=fixed((), ()), int_inputs=(1,), double=True),
    # (windows that do not overlap: an index that occurs twice has no well-defined gradient)
    Row("max_unpool2d-pad-size", lambda lib, y, i: lib.nn.functional.max_unpool2d(
        y, i, 2, 2, 1, output_size=(5, 6)), make=_pooled(2, 2, (1, 2, 5, 6), padding=1),
        shapes=fixed((), ()), int_inputs=(1,), double=True),
    Row("max_unpool2d-unbatched", lambda lib, y, i: lib.nn.functional.max_unpool2d(y, i, 2),
        make=_pooled(2, 2, (3, 4, 4)), shapes=fixed((), ()), int_inputs=(1,)),
    Row("max_unpool1d", lambda lib, y, i: lib.nn.functional.max_unpool1d(y, i, 3, 3, 1,
                                                                         output_size=[8]),
        make=_pooled(3, 1, (2, 3, 8), padding=1), shapes=fixed((), ()), int_inputs=(1,),
        double=True),
    Row("embedding_bag-mean", _bag("mean"), make=_bags(5, 8, [0, 3, 3, 6]),
        shapes=fixed((), (), ()), int_inputs=(0, 2), double=True),
    Row("embedding_bag-sum-psw", _bag("sum", psw=True), make=_bags(5, 7, [0, 2], psw=True),
        shapes=fixed((), (), (), ()), int_inputs=(0, 2), double=True),
    Row("embedding_bag-max", _bag("max"), make=_bags(6, 9, [0, 4, 4, 7]),
        shapes=fixed((), (), ()), int_inputs=(0, 2)),
    Row("embedding_bag-last-offset-padding", _bag("mean", include_last_offset=True,
                                                  padding_idx=1),
        make=_bags(5, 8, [0, 3, 5, 8]), shapes=fixed((), (), ()), int_inputs=(0, 2)),
    Row("embedding_bag-2d-sum", lambda lib, i, w: lib.nn.functional.embedding_bag(
        i.reshape(2, 4), w, mode="sum"), make=_bags(5, 8, None), shapes=fixed((), ()),
        int_inputs=(0,)),
]
make_tests(FUNCS, globals())


# ---- layers --------------------------------------------------------------------------------------
def _unpool_call(m, x):
    lib = _lib(m)
    pool = lib.nn.functional.max_pool2d if isinstance(m, lib.nn.MaxUnpool2d) else \
        lib.nn.functional.max_pool1d
    y, i = pool(x, 2, return_indices=True)
    return m(y, i, output_size=x.shape[-2:] if isinstance(m, lib.nn.MaxUnpool2d) else None)


def _ints(high, *shape):
    return lambda rng: [rng.integers(0, high, shape)]


L = LayerRow
LAYERS = [
    L("GLU", lambda nn: nn.GLU(), randn(3, 4, 6)),
    L("GLU-dim1", lambda nn: nn.GLU(1), randn(3, 4, 5)),
    L("CosineSimilarity", lambda nn: nn.CosineSimilarity(), lambda r: randn(3, 4)(r) * 2),
    L("CosineSimilarity-dim0", lambda nn: nn.CosineSimilarity(0, 1e-4),
      lambda r: randn(4, 2)(r) + randn(4, 1)(r)),
    L("PairwiseDistance", lambda nn: nn.PairwiseDistance(), lambda r: randn(3, 4)(r) * 2),
    L("PairwiseDistance-p1-keepdim", lambda nn: nn.PairwiseDistance(1, 1e-3, True),
      lambda r: randn(3, 4)(r) * 2),
    *[L(name, build, randn(*shape)) for name, build, shape in [
        ("ZeroPad1d", lambda nn: nn.ZeroPad1d((1, 2)), (2, 3, 4)),
        ("ZeroPad2d", lambda nn: nn.ZeroPad2d(1), (3, 4, 5)),
        ("ZeroPad2d-crop", lambda nn: nn.ZeroPad2d((-1, 1, 2, -2)), (1, 2, 4, 5)),
        ("ZeroPad3d", lambda nn: nn.ZeroPad3d((1, 0, 0, 1, 2, 0)), (1, 2, 2, 3, 2)),
        ("ConstantPad1d", lambda nn: nn.ConstantPad1d(2, 3.5), (3, 4)),
        ("ConstantPad2d", lambda nn: nn.ConstantPad2d((1, 0, 2, 1), -1.0), (2, 3, 3, 3)),
        ("ConstantPad3d", lambda nn: nn.ConstantPad3d(1, 0.5), (2, 2, 2, 3)),
        ("ReflectionPad1d", lambda nn: nn.ReflectionPad1d((3, 1)), (2, 3, 5)),
        ("ReflectionPad1d-unbatched", lambda nn: nn.ReflectionPad1d(2), (3, 5)),
        ("ReflectionPad2d", lambda nn: nn.ReflectionPad2d((1, 2, 0, 2)), (2, 3, 4, 5)),
        ("ReflectionPad2d-crop", lambda nn: nn.ReflectionPad2d((-1, 2, 1, -1)), (3, 4, 5)),
        ("ReflectionPad3d", lambda nn: nn.ReflectionPad3d(1), (1, 2, 3, 3, 4)),
        ("ReplicationPad1d", lambda nn: nn.ReplicationPad1d((0, 4)), (2, 3, 3)),
        ("ReplicationPad2d", lambda nn: nn.ReplicationPad2d(2), (1, 2, 3, 3)),
        ("ReplicationPad3d", lambda nn: nn.ReplicationPad3d((1, 2, 0, 1, 1, 0)), (2, 2, 3, 2)),
        ("CircularPad1d", lambda nn: nn.CircularPad1d((2, 3)), (2, 3, 4)),
        ("CircularPad2d", lambda nn: nn.CircularPad2d((1, 1, 2, 0)), (2, 3, 3, 4)),
        ("CircularPad2d-crop", lambda nn: nn.CircularPad2d((-1, -1, 0, -2)), (3, 4, 5)),
        ("CircularPad3d", lambda nn: nn.CircularPad3d(1), (1, 2, 2, 3, 3)),
    ]],
    L("MaxUnpool2d", lambda nn: nn.MaxUnpool2d(2), randn(2, 3, 4, 5), call=_unpool_call),
    L("MaxUnpool1d", lambda nn: nn.MaxUnpool1d(2), randn(2, 3, 7), call=_unpool_call),
    L("EmbeddingBag-2d", lambda nn: nn.EmbeddingBag(7, 3), _ints(7, 4, 5)),
    L("EmbeddingBag-offsets-sum", lambda nn: nn.EmbeddingBag(7, 3, mode="sum"),
      lambda r: _ints(7, 9)(r) + [np.array([0, 2, 2, 5])]),
    L("EmbeddingBag-max-padding", lambda nn: nn.EmbeddingBag(6, 4, mode="max", padding_idx=2),
      lambda r: [np.array([2, 1, 0, 2, 5, 2, 3, 4]), np.array([0, 3, 4])]),
    L("EmbeddingBag-psw-last-offset", lambda nn: nn.EmbeddingBag(
        6, 2, mode="sum", include_last_offset=True),
      lambda r: _ints(6, 6)(r) + [np.array([0, 1, 4, 6]),
                                  r.uniform(0.5, 2, 6).astype(np.float32)]),
]
make_layer_tests(LAYERS, globals())


def test_reprs_match_torch():
    builds = [
        lambda nn: nn.GLU(), lambda nn: nn.GLU(1), lambda nn: nn.CosineSimilarity(0, 1e-3),
        lambda nn: nn.PairwiseDistance(1, 1e-3, True), lambda nn: nn.ZeroPad1d(2),
        lambda nn: nn.ZeroPad2d((1, 2, 3, 4)), lambda nn: nn.ZeroPad3d(1),
        lambda nn: nn.ConstantPad1d((1, 2), 3.5), lambda nn: nn.ConstantPad2d(1, 0),
        lambda nn: nn.ConstantPad3d((1, 2, 0, 0, 1, 1), -1.0), lambda nn: nn.ReflectionPad1d(1),
        lambda nn: nn.ReflectionPad2d((1, 0, 2, 0)), lambda nn: nn.ReflectionPad3d(2),
        lambda nn: nn.ReplicationPad1d(3), lambda nn: nn.ReplicationPad2d(1),
        lambda nn: nn.ReplicationPad3d((1, 1, 2, 2, 0, 0)), lambda nn: nn.CircularPad1d(1),
        lambda nn: nn.CircularPad2d((1, 2, 3, 4)), lambda nn: nn.CircularPad3d(1),
        lambda nn: nn.ReflectionPad2d((1, 2)), lambda nn: nn.MaxUnpool1d(3, 2, 1),
        lambda nn: nn.MaxUnpool2d(2), lambda nn: nn.MaxUnpool2d((2, 3), padding=1),
        lambda nn: nn.EmbeddingBag(10, 3),
        lambda nn: nn.EmbeddingBag(10, 3, 1.0, 3.0, True, "sum", padding_idx=-1),
        lambda nn: nn.EmbeddingBag(5, 2, mode="max", include_last_offset=True),
    ]
    for build in builds:
        assert repr(build(nn)) == repr(build(torch.nn))
    assert nn.ZeroPad2d(1).padding == torch.nn.ZeroPad2d(1).padding == (1, 1, 1, 1)
    assert nn.ConstantPad1d(2, 1.5).value == 1.5


def test_pad_matches_torch_on_every_amount():
    """1-D sweep: every mode, sizes 1..5, amounts -5..5 on each side: both compute the same
    values and gradients, or both raise (except torch's circular with one negative and one
    positive amount wider than what is left, where torch reads uninitialised memory and ours
    raises, and a few empty circular outputs where torch's internal copy fails)."""
    rng = np.random.default_rng(0)
    for mode in ("constant", "reflect", "replicate", "circular"):
        for n in range(1, 6):
            x = rng.standard_normal((2, n)).astype(np.float32)
            g_all = rng.standard_normal((2, 16)).astype(np.float32)
            for left in range(-5, 6):
                for right in range(-5, 6):
                    try:
                        t_in = torch.tensor(x, requires_grad=True)
                        t = torch.nn.functional.pad(t_in, (left, right), mode)
                    except RuntimeError as e:
                        if "must match the size" in str(e):
                            continue        # torch's circular copy fails on some empty outputs
                        t = None
                    o_in = mte.tensor(x, requires_grad=True)
                    if t is None:
                        with pytest.raises(RuntimeError):
                            F.pad(o_in, (left, right), mode)
                        continue
                    c = n - max(-left, 0) - max(-right, 0)
                    if mode == "circular" and t.shape[1] and (left > c or right > c):
                        with pytest.raises(RuntimeError, match="wrapping around more than once"):
                            F.pad(o_in, (left, right), mode)
                        continue
                    o = F.pad(o_in, (left, right), mode)
                    np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(),
                                               err_msg=f"{mode} {n} {(left, right)}")
                    g = g_all[:, :t.shape[1]]
                    t.backward(torch.tensor(g))
                    o.backward(mte.tensor(g))
                    np.testing.assert_allclose(o_in.grad.numpy(), t_in.grad.numpy(), rtol=1e-6,
                                               atol=1e-6, err_msg=f"{mode} {n} {(left, right)}")


@pytest.mark.parametrize("call, exc, match", [
    (lambda lib, x: lib.nn.functional.pad(x, (4, 0), "reflect"), RuntimeError,
     "Padding size should be less than the corresponding input dimension"),
    (lambda lib, x: lib.nn.functional.pad(x, (-2, -2), "replicate"), RuntimeError,
     "is too small"),
    (lambda lib, x: lib.nn.functional.pad(x, (5, 0), "circular"), RuntimeError,
     "wrapping around more than once"),
    (lambda lib, x: lib.nn.functional.pad(x, (1, 1), "reflect", 1.0), RuntimeError,
     "doesn't take in value argument"),
    (lambda lib, x: lib.nn.functional.pad(x, (1, 1), "wrap"), NotImplementedError,
     "Unrecognised padding mode wrap"),
    (lambda lib, x: lib.nn.functional.pad(x, (1,), "reflect"), RuntimeError,
     "Padding length must be divisible by 2"),
    (lambda lib, x: lib.nn.functional.pad(x, (1,) * 8, "replicate"), RuntimeError,
     "Padding length should be less than or equal to two times the input dimension"),
    (lambda lib, x: lib.nn.CircularPad2d(1)(x[0, 0]), ValueError, "expected 3D or 4D input"),
    (lambda lib, x: lib.nn.ReflectionPad2d(1)(x[None, None]), NotImplementedError,
     "not supported"),
    (lambda lib, x: lib.nn.ReplicationPad1d(1)(x[None]), NotImplementedError, "not supported"),
])
def test_pad_errors_like_torch(call, exc, match):
    x = np.ones((2, 3, 4), np.float32)
    with pytest.raises(exc, match=match):
        call(torch, torch.tensor(x))
    with pytest.raises(exc, match=match):
        call(mte, mte.tensor(x))


def test_pad_value_zero_allowed_in_other_modes():
    x = mte.randn(2, 3)
    np.testing.assert_array_equal(F.pad(x, (1, 1), "reflect", 0).numpy(),
                                  F.pad(x, (1, 1), "reflect").numpy())


def test_distance_errors_and_edge_values():
    a = mte.randn(3, 4)
    for lib, x in ((torch, torch.tensor(a.numpy())), (mte, a)):
        F_ = lib.nn.functional
        cdist = lib.cdist if lib is torch else _cdist
        for call, exc, match in [
            (lambda: F_.cosine_similarity(x, x[:, :3]), RuntimeError, None),
            (lambda: F_.cosine_similarity(lib.ones(3, dtype=lib.int64),
                                          lib.ones(3, dtype=lib.int64), 0), RuntimeError,
             "expected common dtype to be floating point"),
            (lambda: F_.cosine_similarity(x, x, dim=2), IndexError, "out of range"),
            (lambda: F_.pairwise_distance(x, x[:, :3]), RuntimeError, None),
            (lambda: F_.pdist(x[0]), RuntimeError, "pdist only supports 2D tensors, got: 1D"),
            (lambda: F_.pdist(x, -1), RuntimeError, "only supports non-negative p values"),
            (lambda: F_.pdist(lib.ones(3, 3, dtype=lib.int64)), RuntimeError,
             "pdist only supports floating-point dtypes"),
            (lambda: cdist(x, x[:, :3]), RuntimeError, "X1 and X2 must have the same number of "
                                                       "columns. X1: 4 X2: 3"),
            (lambda: cdist(x[0], x), RuntimeError, "at least 2D tensors, X1 got: 1D"),
            (lambda: cdist(x, x, -1), RuntimeError, "only supports non-negative p values"),
            (lambda: cdist(x, x, compute_mode="foo"), ValueError,
             "foo is not a valid value for compute_mode"),
            (lambda: F_.glu(x[0, 0]), RuntimeError, "glu does not support scalars"),
            (lambda: F_.glu(x, 0), RuntimeError,
             "Halving dimension must be even, but dimension 0 is size 3"),
        ]:
            with pytest.raises(exc, match=match):
                call()
    # zero vectors: cosine similarity 0 (not nan), with PyTorch's gradient
    for lib in (torch, mte):
        z = lib.zeros(2, 3, requires_grad=True)
        o = lib.ones(2, 3, requires_grad=True)
        c = lib.nn.functional.cosine_similarity(z, o)
        c.sum().backward()
        assert c.tolist() == [0.0, 0.0]
    zt, ot = torch.zeros(2, 3, requires_grad=True), torch.ones(2, 3, requires_grad=True)
    torch.nn.functional.cosine_similarity(zt, ot).sum().backward()
    zo, oo = mte.zeros(2, 3, requires_grad=True), mte.ones(2, 3, requires_grad=True)
    F.cosine_similarity(zo, oo).sum().backward()
    np.testing.assert_allclose(zo.grad.numpy(), zt.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(oo.grad.numpy(), ot.grad.numpy(), atol=1e-12)
    # pdist of identical rows: distance 0, gradient 0 (as torch)
    x = mte.tensor([[1.0, 2.0], [1.0, 2.0], [0.0, 1.0]], requires_grad=True)
    F.pdist(x).sum().backward()
    xt = torch.tensor([[1.0, 2.0], [1.0, 2.0], [0.0, 1.0]], requires_grad=True)
    torch.nn.functional.pdist(xt).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-6)
    assert F.pdist(mte.randn(1, 3)).shape == (0,)


def test_cdist_many_rows_close_to_torch_mm_mode():
    """Past 25 rows torch computes p=2 through a matrix product; ours stays direct."""
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((30, 5)), rng.standard_normal((27, 5))
    t = torch.cdist(torch.tensor(a, dtype=torch.float32), torch.tensor(b, dtype=torch.float32))
    o = _cdist(mte.tensor(a.astype(np.float32)), mte.tensor(b.astype(np.float32)))
    np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-4, atol=1e-5)


def test_max_unpool_takes_max_pool_indices_and_errors():
    x = mte.randn(1, 2, 4, 4)
    y, i = F.max_pool2d(x, 2, return_indices=True)
    ty, ti = torch.nn.functional.max_pool2d(torch.tensor(x.numpy()), 2, return_indices=True)
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    out = nn.MaxUnpool2d(2)(y, i, output_size=(1, 2, 5, 5))
    assert out.shape == (1, 2, 5, 5)
    for lib, yy, ii in ((torch, ty, ti), (mte, y, i)):
        Fl = lib.nn.functional
        for call, exc, match in [
            (lambda: Fl.max_unpool2d(yy, ii, 2, output_size=(6, 5)), ValueError,
             r"invalid output_size .* \(dim 0 must be between 2 and 6\)"),
            (lambda: Fl.max_unpool2d(yy, ii, 2, output_size=(5,)), ValueError,
             "should be a sequence containing 2 or 4 elements"),
            (lambda: Fl.max_unpool2d(yy, ii.float(), 2), RuntimeError,
             "elements in indices should be type int64"),
            (lambda: Fl.max_unpool2d(yy, ii[..., :1], 2), RuntimeError,
             "Expected shape of indices to be same as that of the input tensor"),
            (lambda: Fl.max_unpool2d(yy, ii + 100, 2), RuntimeError,
             r"Found an invalid max index: 1\d\d \(output volumes are of size 4x4\)"),
            (lambda: Fl.max_unpool2d(yy[0, 0], ii[0, 0], 2), RuntimeError,
             "should be a 3d or 4d Tensor, but got a tensor with 2 dimensions"),
        ]:
            with pytest.raises(exc, match=match):
                call()


def test_embedding_bag_module_state_and_init():
    m = nn.EmbeddingBag(10, 3, padding_idx=2)
    t = torch.nn.EmbeddingBag(10, 3, padding_idx=2)
    assert list(m.state_dict()) == list(t.state_dict()) == ["weight"]
    assert not m.weight.detach().numpy()[2].any()
    w = m.weight.detach().numpy()
    assert abs(w.mean()) < 0.6 and 0.5 < w.std() < 1.5          # N(0, 1)
    assert (m.mode, m.include_last_offset) == ("mean", False)
    pre = nn.EmbeddingBag.from_pretrained(mte.ones(4, 2), mode="sum")
    assert not pre.weight.requires_grad and pre.mode == "sum"
    np.testing.assert_array_equal(pre(mte.tensor([[0, 1, 3]])).numpy(), [[3.0, 3.0]])
    assert nn.EmbeddingBag.from_pretrained(mte.ones(4, 2), freeze=False).weight.requires_grad


def test_embedding_bag_max_norm_and_scale_grad_by_freq():
    w0 = np.random.default_rng(2).standard_normal((6, 3)).astype(np.float32) * 2
    ids, offsets = np.array([1, 2, 4, 5, 4, 3, 2, 0]), np.array([0, 4])
    t = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(w0), max_norm=1.0, mode="sum")
    o = nn.EmbeddingBag.from_pretrained(mte.tensor(w0), max_norm=1.0, mode="sum")
    np.testing.assert_allclose(o(mte.tensor(ids), mte.tensor(offsets)).numpy(),
                               t(torch.tensor(ids), torch.tensor(offsets)).detach().numpy(),
                               rtol=1e-6)
    np.testing.assert_allclose(o.weight.detach().numpy(), t.weight.detach().numpy(), rtol=1e-6)
    # scale_grad_by_freq: row i's gradient divided by the count of i in the input, as
    # F.embedding does (torch's CPU embedding_bag scales by the wrong counts here)
    w = mte.tensor(w0, requires_grad=True)
    F.embedding_bag(mte.tensor(ids), w, mte.tensor(offsets), mode="sum",
                    scale_grad_by_freq=True).sum().backward()
    we = mte.tensor(w0, requires_grad=True)
    F.embedding(mte.tensor(ids), we, scale_grad_by_freq=True).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), we.grad.numpy())


@pytest.mark.parametrize("kw, exc, match", [
    (dict(offsets=None), ValueError, "offsets has to be a 1D Tensor but got None"),
    (dict(offsets=[1, 4]), RuntimeError, "offsets\\[0\\] has to be 0"),
    (dict(offsets=[0, 9]), RuntimeError, "offsets\\[-1\\] can not be greater than input's "
                                         "length 8"),
    (dict(offsets=[0, 4], mode="mean", per_sample_weights=np.ones(8, np.float32)),
     NotImplementedError, "per_sample_weights is only supported for mode='sum'"),
    (dict(offsets=[0, 4], mode="sum", per_sample_weights=np.ones(7, np.float32)), ValueError,
     "must have the same shape as the input"),
    (dict(offsets=[0, 4], mode="foo"), ValueError, "mode has to be one of sum, mean or max"),
    (dict(offsets=[0, 4], padding_idx=7), RuntimeError,
     "padding_idx must be within the number of embeddings, -6 through 5, but got 7"),
    (dict(offsets=[0, 4], ids=np.array([1, 2, 4, 5, 4, 3, 2, 10])), RuntimeError,
     "Index 7 of input takes value 10 which is not in the valid range \\[0, 6\\)"),
    (dict(offsets=[[0], [4]]), ValueError, "offsets has to be a 1D Tensor"),
    (dict(offsets=[0, 4], mode="max", scale_grad_by_freq=True), ValueError,
     "max mode does not support scaling the gradient by the frequency"),
    (dict(ids=np.zeros((2, 2, 2), np.int64)), ValueError,
     "input has to be 1D or 2D Tensor, but got Tensor of dimension 3"),
    (dict(ids=np.zeros((2, 4), np.int64), offsets=[0, 1]), ValueError,
     "if input is 2D, then offsets has to be None"),
])
def test_embedding_bag_errors_like_torch(kw, exc, match):
    kw = dict(kw)
    ids = kw.pop("ids", np.array([1, 2, 4, 5, 4, 3, 2, 0]))
    w = np.arange(12.0, dtype=np.float32).reshape(6, 2)
    for lib in (torch, mte):
        args = {k: (lib.tensor(v) if isinstance(v, (list, np.ndarray)) else v)
                for k, v in kw.items()}
        with pytest.raises(exc, match=match):
            lib.nn.functional.embedding_bag(lib.tensor(ids), lib.tensor(w), **args)
