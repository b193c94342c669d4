"""Indexing ops (ops/index.py, ops/sorting.py): the harness table, x[...] combinations against
torch (forward, backward, view-ness), index_put, double backward, and error messages."""
import numpy as np
import pytest
from hypothesis import strategies as st

import minitorch_edge as mte
from minitorch_edge.autograd import gradcheck, gradgradcheck
from harness import (Row, broadcast_shapes, distinct, fixed, import_torch, make_tests, normal,
                     same_shape)

torch = import_torch()


# ---- input makers: valid indices for the drawn shapes -----------------------------------------
def gather_inputs(dim):
    """x and an index with index.size(d) <= x.size(d) for d != dim (repeats allowed)."""
    def make(rng, shapes, dtype):
        xs = shapes[0]
        d = dim % len(xs)
        ish = [int(rng.integers(0, s + 1)) if k != d else int(rng.integers(0, 4))
               for k, s in enumerate(xs)]
        if xs[d] == 0:
            ish[d] = 0
        idx = rng.integers(0, max(xs[d], 1), ish)
        return [rng.standard_normal(xs).astype(dtype), idx.astype(np.int64)]
    return make


def scatter_inputs(dim, unique=True, src_extra=False):
    """x, index, src: index positions distinct along dim (scatter overwrites, so repeats would
    make the result order dependent); src_extra: src larger than index (torch 2.13's backward
    fails on that, so only our gradcheck covers it)."""
    def make(rng, shapes, dtype):
        xs = shapes[0]
        d = dim % len(xs)
        ish = [int(rng.integers(0, s + 1)) for s in xs]
        full = list(ish)
        full[d] = xs[d]
        if unique:
            idx = np.argsort(rng.random(full), axis=d)
            idx = np.take(idx, np.arange(ish[d]), axis=d)
        else:
            idx = rng.integers(0, max(xs[d], 1), ish)
            if xs[d] == 0:
                idx = idx[tuple(slice(0, 0) if k == d else slice(None) for k in range(len(xs)))]
        sshape = [s + int(rng.integers(0, 2)) if src_extra else s for s in idx.shape]
        return [rng.standard_normal(xs).astype(dtype), idx.astype(np.int64),
                rng.standard_normal(sshape).astype(dtype)]
    return make


def select_inputs(dim, add=False):
    """x, a 1-D index (repeats allowed)[, source for index_add]."""
    def make(rng, shapes, dtype):
        xs = shapes[0]
        d = dim % len(xs)
        n = int(rng.integers(0, 5)) if xs[d] else 0
        idx = rng.integers(0, max(xs[d], 1), n).astype(np.int64)
        out = [rng.standard_normal(xs).astype(dtype), idx]
        if add:
            ss = list(xs)
            ss[d] = n
            out.append(rng.standard_normal(ss).astype(dtype))
        return out
    return make


def with_mask(rng, shapes, dtype):
    return [rng.standard_normal(shapes[0]).astype(dtype), rng.random(shapes[1]) < 0.5]


def with_mask_value(rng, shapes, dtype):
    return with_mask(rng, shapes, dtype) + [np.asarray(rng.standard_normal(), dtype)]


def flat_index(rng, shapes, dtype):
    """x and int64 indices in [-numel, numel) for take()."""
    x = rng.standard_normal(shapes[0]).astype(dtype)
    ish = tuple(int(rng.integers(0, 3)) for _ in range(int(rng.integers(0, 3))))
    if x.size == 0:
        ish = (0,)
    return [x, rng.integers(-x.size, max(x.size, 1), ish).astype(np.int64)]


def along_dim(dim):
    """x and indices (negative too) broadcastable with x apart from dim, for take_along_dim."""
    def make(rng, shapes, dtype):
        xs = shapes[0]
        d = dim % len(xs)
        ish = [1 if rng.random() < 0.4 else s for s in xs]
        ish[d] = int(rng.integers(0, 4)) if xs[d] else 0
        idx = rng.integers(-xs[d], max(xs[d], 1), ish)
        return [rng.standard_normal(xs).astype(dtype), idx.astype(np.int64)]
    return make


def sparse(rng, shapes, dtype):
    """Values with many exact zeros (nonzero/argwhere)."""
    return [np.where(rng.random(s) < 0.5, 0, rng.standard_normal(s)).astype(dtype)
            for s in shapes]


def repeated(rng, shapes, dtype):
    """Small integers stored as floats: many repeats (unique)."""
    return [rng.integers(0, 4, s).astype(dtype) for s in shapes]


def getitem_tensor(rng, shapes, dtype):
    """x (4, 5, 6) and an int64 index of values in [-4, 4) (repeats, negatives) for dim 0."""
    return [rng.standard_normal(shapes[0]).astype(dtype),
            rng.integers(-4, 4, (3, 2)).astype(np.int64)]


ND = same_shape(1, min_dims=1, max_dims=3, max_side=4)
ND1 = same_shape(1, min_dims=1, max_dims=3, min_side=1, max_side=4)
MASK = broadcast_shapes(2, max_dims=3, max_side=4)
X456 = fixed((4, 5, 6))


def _torch_scatter_value(m, x, i, s):
    return x.scatter(1, i, 2.5)


TABLE = [
    Row("getitem_basic", lambda m, x: x[1:, ::2, None, -1], shapes=X456, double=True),
    Row("getitem_tensor", lambda m, x, i: x[i], shapes=X456, make=getitem_tensor,
        int_inputs=(1,), double=True),
    Row("getitem_mixed", lambda m, x, i: x[1:3, i, ::3], shapes=fixed((4, 5, 6)),
        make=lambda r, s, d: [r.standard_normal(s[0]).astype(d),
                              r.integers(0, 5, (2, 2)).astype(np.int64)], int_inputs=(1,)),
    Row("getitem_mask", lambda m, x, k: x[k], shapes=same_shape(2, max_dims=3, max_side=4),
        make=with_mask, int_inputs=(1,)),
    Row("gather_dim0", lambda m, x, i: m.gather(x, 0, i), shapes=ND, make=gather_inputs(0),
        int_inputs=(1,), double=True),
    Row("gather_dim_last", lambda m, x, i: x.gather(-1, i), shapes=ND, make=gather_inputs(-1),
        int_inputs=(1,)),
    Row("scatter_src", lambda m, x, i, s: m.scatter(x, 1, i, s),
        shapes=same_shape(1, min_dims=2, max_dims=3, max_side=4), make=scatter_inputs(1),
        int_inputs=(1,), double=True),
    Row("scatter_value", lambda m, x, i: x.scatter(0, i, 2.5), shapes=ND,
        make=lambda r, s, d: scatter_inputs(0)(r, s, d)[:2], int_inputs=(1,)),
    Row("scatter_add", lambda m, x, i, s: m.scatter_add(x, -1, i, s), shapes=ND,
        make=scatter_inputs(-1, unique=False), int_inputs=(1,), double=True),
    Row("index_select", lambda m, x, i: m.index_select(x, 0, i), shapes=ND,
        make=select_inputs(0), int_inputs=(1,), double=True),
    Row("index_select_last", lambda m, x, i: x.index_select(-1, i), shapes=ND,
        make=select_inputs(-1), int_inputs=(1,)),
    Row("index_add", lambda m, x, i, s: m.index_add(x, 0, i, s, alpha=1.5), shapes=ND,
        make=select_inputs(0, add=True), int_inputs=(1,), double=True),
    Row("index_fill", lambda m, x, i: x.index_fill(0, i, -2.0), shapes=ND,
        make=select_inputs(0), int_inputs=(1,)),
    Row("masked_fill", lambda m, x, k: m.masked_fill(x, k, 3.0), shapes=MASK, make=with_mask,
        int_inputs=(1,)),
    Row("masked_fill_tensor_value", lambda m, x, k, v: x.masked_fill(k, v),
        shapes=MASK.map(lambda s: s + ((),)), make=with_mask_value, int_inputs=(1,),
        double=True),
    Row("masked_select", lambda m, x, k: m.masked_select(x, k), shapes=MASK, make=with_mask,
        int_inputs=(1,)),
    Row("take", lambda m, x, i: m.take(x, i), make=flat_index, int_inputs=(1,)),
    Row("take_along_dim", lambda m, x, i: m.take_along_dim(x, i, 1),
        shapes=same_shape(1, min_dims=2, max_dims=3, max_side=4), make=along_dim(1),
        int_inputs=(1,)),
    Row("take_along_dim_flat", lambda m, x, i: m.take_along_dim(x, i),
        make=lambda r, s, d: [a if k == 0 else np.abs(a) % max(1, int(np.prod(s[0])))
                              for k, a in enumerate(flat_index(r, s, d))], int_inputs=(1,),
        torch_fn=lambda m, x, i: m.take_along_dim(x, i.reshape(-1))),
    Row("sort", lambda m, x: m.sort(x), make=distinct, double=True),
    Row("sort_desc_dim0", lambda m, x: x.sort(0, descending=True), shapes=ND, make=distinct),
    # ties: finite differences would reorder them, so no gradcheck (torch still checks grads)
    Row("sort_stable_ties", lambda m, x: m.sort(x, dim=-1, stable=True), make=repeated,
        shapes=ND, gradcheck=False),
    Row("sort_stable_ties_desc", lambda m, x: x.sort(stable=True, descending=True),
        make=repeated, shapes=ND, gradcheck=False),
    Row("argsort", lambda m, x: m.argsort(x, dim=0, descending=True), make=distinct,
        shapes=ND, grad=False),
    Row("topk", lambda m, x: m.topk(x, min(2, x.shape[-1])), shapes=ND, make=distinct,
        double=True),
    Row("topk_smallest_dim0", lambda m, x: x.topk(min(3, x.shape[0]), dim=0, largest=False),
        shapes=ND, make=distinct),
    Row("kthvalue", lambda m, x: m.kthvalue(x, x.shape[-1] // 2 + 1), shapes=ND1,
        make=distinct),
    Row("kthvalue_keepdim", lambda m, x: x.kthvalue(1, 0, keepdim=True), shapes=ND1,
        make=distinct),
    Row("nonzero", lambda m, x: m.nonzero(x), make=sparse, grad=False),
    Row("nonzero_tuple", lambda m, x: m.nonzero(x, as_tuple=True), make=sparse, grad=False,
        shapes=ND),
    Row("argwhere", lambda m, x: x.argwhere(), make=sparse, grad=False),
    Row("unique", lambda m, x: m.unique(x, return_inverse=True, return_counts=True),
        make=repeated, grad=False),
    Row("unique_dim", lambda m, x: m.unique(x, dim=0, return_inverse=True), shapes=ND1,
        make=repeated, grad=False),
]

make_tests(TABLE, globals())


# ---- x[...] against torch ----------------------------------------------------------------------
def _t(L, v):
    return L.tensor(v)


GETITEM_CASES = [
    ((4, 5), lambda L: 2),
    ((4, 5), lambda L: -1),
    ((4, 5), lambda L: (-4, 3)),
    ((4, 5, 6), lambda L: (slice(1, None, 2), slice(None, -1), slice(None, None, 3))),
    ((4, 5), lambda L: slice(10, 20)),
    ((4, 5), lambda L: (None, 1, None)),
    ((4, 5, 6), lambda L: (Ellipsis, 2)),
    ((4, 5, 6), lambda L: (1, Ellipsis, None)),
    ((4, 5, 6), lambda L: ...),
    ((), lambda L: None),
    ((), lambda L: ...),
    ((), lambda L: True),
    ((4, 5), lambda L: True),
    ((4, 5), lambda L: (slice(None), False)),
    ((4, 5), lambda L: [0, 2, 2, -1]),
    ((4, 5), lambda L: []),
    ((4, 5), lambda L: _t(L, [[0, 1], [3, 3]])),
    ((4, 5), lambda L: _t(L, 2)),
    ((4, 5, 6), lambda L: (slice(None), _t(L, 0), slice(None), )),
    ((4, 5), lambda L: L.tensor([1, 3], dtype=L.int32)),
    ((4, 5), lambda L: np.array([3, 0, 0])),
    ((4, 5), lambda L: L.tensor([True, False, True, True])),
    ((4, 5), lambda L: (slice(None), L.tensor([True, False, True, False, True]))),
    ((4, 5, 6), lambda L: L.tensor(np.arange(20).reshape(4, 5) % 3 == 0)),
    ((4, 5, 6), lambda L: (slice(1, 3), [0, 4, 4], slice(None, None, 2))),
    ((4, 5, 6), lambda L: ([0, 1, 3], slice(None), [5, 0, 0])),        # separated: dims first
    ((4, 5, 6), lambda L: ([0, 1], [[1], [2]])),                      # broadcast (2,1)x(2,)
    ((4, 5, 6), lambda L: (slice(None), 0, [1, 2])),                  # int is a select first
    ((2, 3, 4, 5), lambda L: (slice(None), 0, slice(None), [0, 1])),  # torch != numpy here
    ((2, 3, 4, 5), lambda L: ([0, 1], None, [0, 1])),
    ((2, 3, 4, 5), lambda L: ([0, 1], True, [0, 1])),
    ((4, 5, 6), lambda L: (Ellipsis, [2, 2, 2])),                     # repeats accumulate
    ((4, 5, 6), lambda L: (L.tensor([[0, 0], [1, 0]]), None, slice(None), L.tensor([5, 5]))),
    ((4, 5, 6), lambda L: (L.tensor([True, False, True, False]), 2, [1, 1])),
    ((4, 5), lambda L: [[0, 1], [1, 2]]),                             # legacy: read as a tuple
    ((4, 5), lambda L: (slice(0, 0), [1])),
    ((4, 5), lambda L: [True, False, True, False]),
    ((4, 5), lambda L: (np.array(1), np.int64(-2))),
    ((4, 5), lambda L: L.tensor([1, 0, 1, 1], dtype=L.uint8)),       # deprecated byte mask
    ((4, 5), lambda L: (L.tensor(True), 1)),
    # range and other Python sequences of ints, as PyTorch accepts them
    ((4, 5), lambda L: range(2)),
    ((4, 5), lambda L: range(3, 0, -1)),
    ((4, 5), lambda L: range(0)),
    ((4, 5), lambda L: (range(1, 3), 0)),
    ((4, 5), lambda L: (0, range(1, 4))),
    ((4, 5), lambda L: (range(2), range(2))),
    ((4, 5), lambda L: (Ellipsis, range(2))),
    ((4, 5), lambda L: (range(2), slice(None))),
    ((4, 5), lambda L: [range(2)]),                                    # legacy: a tuple
    ((4, 5), lambda L: [0, range(2)]),
    ((4, 5), lambda L: (L.tensor([0, 1]), range(2))),
    ((4, 5), lambda L: ([True, False, True, False], range(2))),
    ((4, 5), lambda L: [[0, 1], [1]]),                                 # ragged: a tuple
    ((4, 5), lambda L: [0, 1.0]),                                      # list -> long index
    ((4, 5, 6), lambda L: ([[0, 1], [2, 3]], range(2), 1)),
]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("shape,index", GETITEM_CASES, ids=[str(i) for i in
                                                          range(len(GETITEM_CASES))])
def test_getitem_against_torch(shape, index):
    rng = np.random.default_rng(0)
    data = rng.standard_normal(shape).astype(np.float32)
    x = mte.tensor(data, requires_grad=True)
    tx = torch.tensor(data, requires_grad=True)
    y, ty = x[index(mte)], tx[index(torch)]
    assert tuple(y.shape) == tuple(ty.shape)
    np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
    if y.numel():   # (an empty view shares no memory, so it is not tracked as a view)
        assert (y._base is not None) == ty._is_view(), "view-ness differs from torch"
    up = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    (y * mte.tensor(up)).sum().backward()
    (ty * torch.tensor(up)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("index", [
    lambda L: (slice(1, None, 2), None, 0),
    lambda L: ([0, 1, 1], [2, 2, 0]),
    lambda L: L.tensor([[True, False, True], [False, True, True]]),
    lambda L: (slice(None), [2, 2, 0]),
])
def test_getitem_gradcheck_and_double_backward(index):
    x = mte.tensor(np.random.default_rng(1).standard_normal((2, 3)), requires_grad=True)
    f = lambda t: t[index(mte)] ** 2  # noqa: E731
    assert gradcheck(f, [x])
    assert gradgradcheck(f, [x])


def test_getitem_repeated_index_accumulates():
    x = mte.zeros(3, requires_grad=True)
    x[mte.tensor([0, 0, 2, 0])].sum().backward()
    assert x.grad.tolist() == [3.0, 0.0, 1.0]


def test_basic_index_is_a_view_sharing_memory_and_version():
    x = mte.arange(12.0).reshape(3, 4)
    v = x[1, ::2]
    x._data[1, 0] = 100.0
    assert v.tolist() == [100.0, 6.0]
    assert v._vc is x._vc
    c = x[[1]]
    assert c._vc is not x._vc and not np.shares_memory(c._data, x._data)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("index,value", [
    (lambda L: range(2), 1.0), (lambda L: (range(1, 3), 0), -1.0),
    (lambda L: [[0, 1], [1, 0]], 5.0),
    (lambda L: (slice(None), range(0, 5, 2)), lambda L: L.tensor([7.0, 8.0, 9.0])),
    (lambda L: range(3, 0, -1), lambda L: L.arange(3.0).reshape(3, 1))])
def test_setitem_with_range_and_sequences_against_torch(index, value):
    results = []
    for L in (mte, torch):
        x = L.arange(20.0).reshape(4, 5)
        x[index(L)] = value(L) if callable(value) else value
        results.append(np.array(x.tolist()))
    np.testing.assert_array_equal(*results)


# ---- index_put ---------------------------------------------------------------------------------
PUT_CASES = [
    ((4, 5), lambda L: (L.tensor([0, 2]),), (2, 5)),
    ((4, 5), lambda L: (L.tensor([0, 2]), L.tensor([1, 1])), (2,)),
    ((4, 5), lambda L: (L.tensor([3, 3, 1]),), (1, 5)),              # repeats, broadcast values
    ((4, 5), lambda L: (L.tensor([[0], [2]]), L.tensor([0, 4, 4])), ()),
]


@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("shape,index,vshape", PUT_CASES)
def test_index_put_against_torch(shape, index, vshape, accumulate):
    rng = np.random.default_rng(2)
    xd = rng.standard_normal(shape).astype(np.float32)
    vd = rng.standard_normal(vshape).astype(np.float32)
    first = index(torch)[0].reshape(-1).numpy()
    repeats = len(np.unique(first)) < len(first)
    if repeats and not accumulate and vshape != ():
        vd = np.broadcast_to(vd[..., :1], vshape).copy()    # repeated writes: same value
    x, v = mte.tensor(xd, requires_grad=True), mte.tensor(vd, requires_grad=True)
    tx, tv = torch.tensor(xd, requires_grad=True), torch.tensor(vd, requires_grad=True)
    y = mte.index_put(x, index(mte), v, accumulate)
    ty = torch.index_put(tx, index(torch), tv, accumulate)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-6)
    up = rng.standard_normal(shape).astype(np.float32)
    (y * mte.tensor(up)).sum().backward()
    (ty * torch.tensor(up)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(v.grad.numpy(), tv.grad.numpy(), rtol=1e-5)


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_gradcheck(accumulate):
    rng = np.random.default_rng(3)
    x = mte.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    v = mte.tensor(rng.standard_normal((2, 1)), requires_grad=True)
    idx = (slice(None, 2), [1, 3])
    f = lambda a, b: mte.index_put(a, idx, b, accumulate) ** 2  # noqa: E731
    assert gradcheck(f, [x, v])
    assert gradgradcheck(f, [x, v])


def test_index_put_basic_index_and_scalar():
    x = mte.zeros(2, 3)
    y = mte.index_put(x, (1, slice(1, None)), 7)
    assert y.tolist() == [[0, 0, 0], [0, 7, 7]] and x.tolist() == [[0] * 3] * 2
    z = x.index_put((Ellipsis, 0), mte.tensor([1.0, 2.0], dtype=mte.float64))  # basic: cast
    assert z.dtype == mte.float32 and z[:, 0].tolist() == [1.0, 2.0]


def test_normalize_index_helper():
    idx = mte.normalize_index((2, 3, 4), (slice(None), 0, [1, 2]))
    assert not idx.is_view and idx.shape == (2, 2)
    a = np.arange(24).reshape(2, 3, 4)
    np.testing.assert_array_equal(idx.get(a), torch.arange(24).reshape(2, 3, 4)[:, 0, [1, 2]])
    idx.put(a, -1)
    assert (a[:, 0, 1:3] == -1).all() and (a[:, 1:] >= 0).all()
    assert mte.normalize_index((2, 3), (1, None)).is_view


# ---- double backward and misc checks --------------------------------------------------------
def test_gather_scatter_double_backward():
    rng = np.random.default_rng(4)
    x = mte.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    s = mte.tensor(rng.standard_normal((3, 2)), requires_grad=True)
    i = mte.tensor([[0, 0], [3, 1], [2, 2]])
    assert gradgradcheck(lambda a: a.gather(1, i) ** 2, [x])
    assert gradgradcheck(lambda a, b: a.scatter_add(1, i, b) ** 2, [x, s])
    j = mte.tensor([[0, 1], [3, 1], [2, 0]])
    assert gradgradcheck(lambda a, b: a.scatter(1, j, b) ** 2, [x, s])


def test_scatter_src_larger_than_index_gradcheck():
    rng = np.random.default_rng(5)
    for k in range(4):
        x, i, s = scatter_inputs(1, unique=k % 2 == 0, src_extra=True)(rng, [(3, 4)], np.float64)
        x, s = mte.tensor(x, requires_grad=True), mte.tensor(s, requires_grad=True)
        i = mte.tensor(i)
        op = mte.scatter if k % 2 == 0 else mte.scatter_add
        assert gradgradcheck(lambda a, b: op(a, 1, i, b) ** 2, [x, s])


def test_masked_fill_value_gradient():
    x = mte.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    v = mte.tensor(0.5, requires_grad=True)
    y = x.masked_fill(mte.tensor([True, False]), v)
    assert y.tolist() == [[0.5, 2.0], [0.5, 4.0]]
    (y * mte.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert v.grad.item() == 4.0 and x.grad.tolist() == [[0.0, 2.0], [0.0, 4.0]]


def test_sort_result_types_and_nan():
    x = mte.tensor([1.0, float("nan"), 0.0, 1.0])
    r = x.sort(descending=True, stable=True)
    t = torch.tensor([1.0, float("nan"), 0.0, 1.0]).sort(descending=True, stable=True)
    assert r.indices.tolist() == t.indices.tolist() and r.indices.dtype == mte.int64
    v, i = mte.sort(x)
    assert i.tolist() == torch.tensor([1.0, float("nan"), 0.0, 1.0]).sort(stable=True)[1].tolist()
    assert "values=" in repr(r) and r.values is r[0]
    tk = mte.topk(mte.tensor([3.0, 1.0, 2.0]), 2)
    assert tk.values.tolist() == [3.0, 2.0] and tk.indices.tolist() == [0, 2]


def test_zero_dim_inputs():
    x = mte.tensor(2.0, requires_grad=True)
    assert mte.sort(x).values.item() == 2.0 and mte.topk(x, 1).indices.item() == 0
    assert x.gather(0, mte.tensor(0)).item() == 2.0
    assert mte.nonzero(x.detach()).shape == (1, 0)
    assert mte.masked_select(x, mte.tensor(True)).shape == (1,)
    x[None].sum().backward()
    assert x.grad.item() == 1.0


def test_scatter_with_reduce_has_no_gradient():
    x = mte.ones(2, 3, requires_grad=True)
    y = x.scatter(1, mte.tensor([[0], [2]]), mte.full((2, 1), 3.0), reduce="multiply")
    assert y.tolist() == [[3, 1, 1], [1, 1, 3]]
    with pytest.raises(RuntimeError, match="not implemented"):
        y.sum().backward()


# ---- errors: the exception type, a useful message, and operands left unchanged ------------------
def _check_error(exc, match, fn, *tensors):
    before = [t._data.copy() for t in tensors]
    with pytest.raises(exc, match=match):
        fn()
    for t, b in zip(tensors, before):
        np.testing.assert_array_equal(t._data, b)


X = mte.arange(12.0).reshape(3, 4)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("exc,match,fn", [
    (IndexError, "index 5 is out of bounds for dimension 0 with size 3", lambda: X[5]),
    (IndexError, "index -4 is out of bounds for dimension 0 with size 3", lambda: X[-4]),
    (IndexError, "index 4 is out of bounds for dimension 1 with size 4",
     lambda: X[:, mte.tensor([0, 4])]),
    (IndexError, "too many indices for tensor of dimension 2", lambda: X[0, 0, 0]),
    (IndexError, "invalid index of a 0-dim tensor", lambda: mte.tensor(1.0)[0]),
    (IndexError, "single ellipsis", lambda: X[..., ...]),
    (IndexError, r"mask \[2\] at index 0 does not match the shape of the indexed tensor "
                 r"\[3, 4\]", lambda: X[mte.tensor([True, False])]),
    (IndexError, "tensors used as indices must be long, int, byte or bool",
     lambda: X[mte.tensor([0.0])]),
    (IndexError, "tensors used as indices must be long, int, byte or bool",
     lambda: X[mte.tensor([0], dtype=mte.int16)]),
    (IndexError, r"could not be broadcast together with shapes \[2\], \[3\]",
     lambda: X[[0, 1], [0, 1, 2]]),
    (IndexError, "only integers, slices", lambda: X[1.5]),
    (ValueError, "step must be greater than zero", lambda: X[::-1]),
    (ValueError, "step must be greater than zero", lambda: X[:, 0:3:0]),
    (RuntimeError, r"shape mismatch: value tensor of shape \[3\] cannot be broadcast to "
                   r"indexing result of shape \[2, 4\]",
     lambda: mte.index_put(X, ([0, 1],), mte.ones(3))),
    (RuntimeError, "dtypes match", lambda: mte.index_put(X, ([0],), mte.ones(4).double())),
    (RuntimeError, "gather.*index 4 is out of bounds for dimension 1 with size 4",
     lambda: X.gather(1, mte.tensor([[4]]))),
    (RuntimeError, "gather.*index -1 is out of bounds", lambda: X.gather(1, mte.tensor([[-1]]))),
    (RuntimeError, "gather.*int32/int64 for index", lambda: X.gather(1, mte.tensor([[0.0]]))),
    (RuntimeError, "same number of dimensions", lambda: X.gather(1, mte.tensor([0]))),
    (RuntimeError, "Size does not match at dimension 0", lambda: X.gather(1, mte.zeros(
        4, 1, dtype=mte.int64))),
    (IndexError, "Dimension out of range", lambda: X.gather(2, mte.tensor([[0]]))),
    (RuntimeError, "scatter.*index 3 is out of bounds for dimension 0 with size 3",
     lambda: X.scatter(0, mte.tensor([[3]]), 1.0)),
    (RuntimeError, "src.dtype", lambda: X.scatter(0, mte.tensor([[0]]), mte.ones(1, 1).double())),
    (RuntimeError, "scatter_add.*no larger than src",
     lambda: X.scatter_add(0, mte.tensor([[0, 1]]), mte.ones(1, 1))),
    (RuntimeError, "index_select.*index 9 is out of bounds", lambda: X.index_select(0,
                                                                              mte.tensor([9]))),
    (IndexError, "Index is supposed to be a vector", lambda: X.index_select(0, mte.tensor([[0]]))),
    (RuntimeError, "index_add.*source has shape", lambda: X.index_add(0, mte.tensor([0]),
                                                                      mte.ones(2, 4))),
    (RuntimeError, "only supports boolean masks", lambda: X.masked_fill(mte.ones(4), 1.0)),
    (RuntimeError, "0-dimensional value tensor", lambda: X.masked_fill(mte.ones(4).bool(),
                                                                         mte.ones(1))),
    (RuntimeError, r"size of tensor a \(4\) must match the size of tensor b \(3\)",
     lambda: X.masked_fill(mte.ones(3).bool(), 1.0)),
    (RuntimeError, "expected BoolTensor", lambda: X.masked_select(mte.ones(4))),
    (IndexError, "tried to access index 12 on a tensor of 12 elements",
     lambda: X.take(mte.tensor([12]))),
    (IndexError, "take_along_dim.*index -5 is out of bounds",
     lambda: mte.take_along_dim(X, mte.tensor([[-5]]), 1)),
    (RuntimeError, "selected index k out of range", lambda: X.topk(5)),
    (RuntimeError, "kthvalue.*out of range", lambda: X.kthvalue(0)),
])
def test_errors(exc, match, fn):
    _check_error(exc, match, fn, X)


def test_failed_index_put_leaves_input_unchanged():
    x = mte.zeros(3, requires_grad=True)
    _check_error(IndexError, "out of bounds", lambda: mte.index_put(x, mte.tensor([0, 3]), 1.0),
                 x)
    assert x.grad is None
