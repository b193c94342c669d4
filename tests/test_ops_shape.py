"""Shape, join and rearrange ops (ops/shape.py, ops/join.py, ops/rearrange.py) against PyTorch,
by gradcheck, and their errors, dtypes and view semantics."""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import minitorch_edge as mte
from harness import Row, broadcast_shapes, fixed, import_torch, make_tests, same_shape

torch = import_torch()


# ---- shape strategies -----------------------------------------------------------------------
def shapes(min_dims=0, max_dims=4, min_side=0, max_side=4, arity=1):
    return same_shape(arity, min_dims, max_dims, min_side, max_side)


def ones_shapes(min_dims=0, max_dims=4):
    """Shapes rich in size-1 dims (for squeeze / expand)."""
    return st.lists(st.sampled_from([0, 1, 1, 2, 3]), min_size=min_dims,
                    max_size=max_dims).map(lambda s: (tuple(s),))


def cat_shapes(arity, dim, min_dims=1, max_dims=4):
    """`arity` shapes equal except at `dim`, where each draws its own size (0 included)."""
    @st.composite
    def strategy(draw):
        base = draw(hnp.array_shapes(min_dims=max(min_dims, dim + 1 if dim >= 0 else -dim),
                                     max_dims=max_dims, min_side=0, max_side=4))
        out = []
        for _ in range(arity):
            s = list(base)
            s[dim] = draw(st.integers(0, 3))
            out.append(tuple(s))
        return tuple(out)
    return strategy()


def pick(*shape_tuples):
    return st.sampled_from(shape_tuples)


def half(n):
    return n // 2


def F(lib):
    return torch.nn.functional if lib is torch else lib


# ---- the table ------------------------------------------------------------------------------
TABLE = [
    # reshape / view family
    Row("reshape_flat", lambda m, a: a.reshape(-1), double=True),
    Row("reshape_tuple", lambda m, a: a.reshape((a.shape[0], -1)),
        shapes=shapes(1, 4, min_side=1)),
    Row("reshape_fn_0size", lambda m, a: m.reshape(a, (a.numel() // max(a.shape[-1], 1),
                                                       a.shape[-1])), shapes=shapes(1)),
    Row("view", lambda m, a: a.view(a.shape[0], -1, 1), shapes=shapes(1, 4, min_side=1)),
    Row("view_tuple", lambda m, a: a.view((a.numel(),))),
    Row("view_as", lambda m, a, b: a.view_as(b), shapes=pick(((2, 3), (3, 2)), ((4,), (2, 2)),
                                                             ((0, 3), (3, 0))), arity=2),
    Row("reshape_as", lambda m, a, b: a.reshape_as(b), shapes=fixed((6, 1), (2, 3)), arity=2),
    Row("flatten", lambda m, a: a.flatten(), double=True),
    Row("flatten_start", lambda m, a: m.flatten(a, 1), shapes=shapes(2)),
    Row("flatten_neg", lambda m, a: a.flatten(-2, -1), shapes=shapes(2)),
    Row("flatten_mid", lambda m, a: a.flatten(start_dim=1, end_dim=2), shapes=shapes(3)),
    Row("unflatten", lambda m, a: a.unflatten(1, (2, -1)), shapes=pick(((3, 6),), ((1, 4, 2),),
                                                                       ((0, 2, 5),))),
    Row("unflatten_neg", lambda m, a: m.unflatten(a, -1, (3, 2)), shapes=pick(((6,),),
                                                                            ((2, 6),))),
    Row("ravel", lambda m, a: m.ravel(a)),
    Row("squeeze_all", lambda m, a: a.squeeze(), shapes=ones_shapes(), double=True),
    Row("squeeze_dim", lambda m, a: a.squeeze(-1), shapes=ones_shapes(1)),
    Row("squeeze_tuple", lambda m, a: m.squeeze(a, (0, -1)), shapes=ones_shapes(2)),
    Row("unsqueeze0", lambda m, a: a.unsqueeze(0)),
    Row("unsqueeze_last", lambda m, a: m.unsqueeze(a, -1)),
    Row("unsqueeze_ndim", lambda m, a: a.unsqueeze(a.dim())),
    # dim order
    Row("permute_varargs", lambda m, a: a.permute(*reversed(range(a.dim()))), shapes=shapes(1),
        double=True),
    Row("permute_tuple", lambda m, a: m.permute(a, (1, 0, -1)), shapes=shapes(3, 3)),
    Row("permute_roll", lambda m, a: a.permute([*range(1, a.dim()), 0]), shapes=shapes(1)),
    Row("transpose", lambda m, a: a.transpose(0, -1), shapes=shapes(1)),
    Row("transpose_fn", lambda m, a: m.transpose(a, 1, 2), shapes=shapes(3)),
    Row("swapaxes", lambda m, a: m.swapaxes(a, 0, 1), shapes=shapes(2)),
    Row("swapdims", lambda m, a: a.swapdims(-1, -2), shapes=shapes(2)),
    Row("t", lambda m, a: a.t(), shapes=shapes(0, 2)),
    Row("T", lambda m, a: a.T, shapes=shapes(2, 2)),
    Row("T_1d", lambda m, a: a.T, shapes=shapes(0, 1)),
    Row("mT", lambda m, a: a.mT, shapes=shapes(2)),
    Row("mH", lambda m, a: a.mH, shapes=shapes(2)),
    Row("movedim", lambda m, a: a.movedim(0, -1), shapes=shapes(1)),
    Row("movedim_tuple", lambda m, a: m.movedim(a, (0, 1), (-1, 0)), shapes=shapes(3)),
    Row("moveaxis", lambda m, a: m.moveaxis(a, -1, 1), shapes=shapes(2)),
    # broadcasting
    Row("expand", lambda m, a: a.expand(2, *[3 if s == 1 else s for s in a.shape]),
        shapes=ones_shapes(), double=True),
    Row("expand_minus1", lambda m, a: a.expand((3,) + (-1,) * a.dim()), shapes=ones_shapes()),
    Row("expand_as", lambda m, a, b: a.expand_as(b * 0 + a), shapes=broadcast_shapes(2),
        arity=2),
    Row("broadcast_to", lambda m, a, b: m.broadcast_to(a, m.broadcast_shapes(a.shape, b.shape)),
        shapes=broadcast_shapes(2), arity=2),
    Row("broadcast_tensors", lambda m, a, b, c: m.broadcast_tensors(a, b, c),
        shapes=broadcast_shapes(3), arity=3),
    Row("contiguous", lambda m, a: a.mT.contiguous(), shapes=shapes(2)),
    Row("contiguous_noop", lambda m, a: a.contiguous() * 1),
    # slices and diagonals
    Row("narrow", lambda m, a: a.narrow(0, half(a.shape[0]), a.shape[0] - half(a.shape[0])),
        shapes=shapes(1), double=True),
    Row("narrow_neg", lambda m, a: m.narrow(a, -1, -1, 1), shapes=shapes(1, min_side=1)),
    Row("diagonal", lambda m, a: a.diagonal(), shapes=shapes(2), double=True),
    Row("diagonal_offset", lambda m, a: m.diagonal(a, 1), shapes=shapes(2)),
    Row("diagonal_neg", lambda m, a: a.diagonal(-1, 0, -1), shapes=shapes(2)),
    Row("diagonal_3d", lambda m, a: a.diagonal(offset=2, dim1=-1, dim2=0), shapes=shapes(3)),
    # joining
    Row("cat2", lambda m, a, b: m.cat([a, b]), shapes=cat_shapes(2, 0), arity=2, double=True),
    Row("cat3_dim1", lambda m, a, b, c: m.cat((a, b, c), dim=1), shapes=cat_shapes(3, 1),
        arity=3),
    Row("cat_neg", lambda m, a, b: m.cat([a, b], -1), shapes=cat_shapes(2, -1), arity=2),
    Row("concat", lambda m, a, b: m.concat([a, b], 1), shapes=cat_shapes(2, 1), arity=2),
    Row("concatenate", lambda m, a, b: m.concatenate([a, b], dim=0), shapes=cat_shapes(2, 0),
        arity=2),
    Row("cat_one", lambda m, a: m.cat([a]), shapes=shapes(1)),
    Row("cat_legacy_empty", lambda m, a, b, c: m.cat([a, b, c], 1),
        shapes=fixed((0,), (2, 3), (2, 1)), arity=3),
    Row("stack", lambda m, a, b, c: m.stack([a, b, c]), arity=3, double=True),
    Row("stack_last", lambda m, a, b: m.stack((a, b), dim=-1), arity=2),
    Row("hstack", lambda m, a, b: m.hstack([a, b]), shapes=pick(((2,), (3,)), ((2, 1), (2, 3)),
                                                                ((2, 2, 1), (2, 0, 1))),
        arity=2),
    Row("vstack", lambda m, a, b: m.vstack([a, b]), shapes=pick(((3,), (3,)), ((1, 3), (3,)),
                                                                ((2, 2), (1, 2))), arity=2),
    Row("row_stack", lambda m, a, b: m.row_stack([a, b]), shapes=fixed((2,), (1, 2)), arity=2),
    Row("dstack", lambda m, a, b: m.dstack([a, b]), shapes=pick(((3,), (3,)), ((2, 3), (2, 3)),
                                                                ((2, 3, 1), (2, 3))), arity=2),
    Row("column_stack", lambda m, a, b, c: m.column_stack([a, b, c]),
        shapes=fixed((3,), (3, 2), (3,)), arity=3),
    Row("column_stack_0d", lambda m, a, b: m.column_stack([a, b]), shapes=fixed((), (1, 2)),
        arity=2),
    Row("atleast_2d", lambda m, a: m.atleast_2d(a), shapes=shapes(0, 3)),
    Row("atleast_3d", lambda m, a, b: m.atleast_3d(a, b), shapes=pick(((), (2,)), ((3,), (2, 2)),
                                                                      ((2, 2, 2), (0,))),
        arity=2),
    # splitting
    Row("split_int", lambda m, a: a.split(2), shapes=shapes(1), double=True),
    Row("split_sizes", lambda m, a: m.split(a, [half(a.shape[-1]), a.shape[-1] - half(
        a.shape[-1])], dim=-1), shapes=shapes(1)),
    Row("split_first_only", lambda m, a: a.split(1, 0)[0] * 2, shapes=shapes(1, min_side=1)),
    Row("chunk", lambda m, a: a.chunk(3), shapes=shapes(1, max_side=7)),
    Row("chunk_dim", lambda m, a: m.chunk(a, 2, dim=-1), shapes=shapes(2)),
    Row("unbind", lambda m, a: a.unbind(), shapes=shapes(1), double=True),
    Row("unbind_dim", lambda m, a: m.unbind(a, -1), shapes=shapes(2)),
    Row("unbind_some", lambda m, a: a.unbind(0)[-1], shapes=shapes(1, min_side=1)),
    Row("tensor_split_n", lambda m, a: a.tensor_split(3), shapes=shapes(1, max_side=7)),
    Row("tensor_split_idx", lambda m, a: m.tensor_split(a, [1, 3], dim=-1), shapes=shapes(1)),
    Row("tensor_split_overlap", lambda m, a: m.tensor_split(a, [3, 1, -1]), shapes=shapes(1)),
    # repeating
    Row("repeat", lambda m, a: a.repeat(*[2] * a.dim()), shapes=shapes(1), double=True),
    Row("repeat_lead", lambda m, a: a.repeat((2, 1) + (3,) * a.dim())),
    Row("repeat_zero", lambda m, a: a.repeat(0, 2), shapes=shapes(1, 1)),
    Row("tile", lambda m, a: m.tile(a, (2,)), shapes=shapes(0, 3)),
    Row("repeat_interleave", lambda m, a: a.repeat_interleave(2, dim=0), shapes=shapes(1)),
    Row("repeat_interleave_flat", lambda m, a: m.repeat_interleave(a, 3)),
    Row("repeat_interleave_tensor", lambda m, a: a.repeat_interleave(
        m.tensor([k % 3 for k in range(a.shape[-1])], dtype=m.int64), dim=-1),
        shapes=shapes(1), double=True),
    # flips, rolls
    Row("flip", lambda m, a: a.flip(0), shapes=shapes(1), double=True),
    Row("flip_dims", lambda m, a: m.flip(a, (0, -1)), shapes=shapes(2)),
    Row("flip_varargs", lambda m, a: a.flip(-1, 0), shapes=shapes(2)),
    Row("fliplr", lambda m, a: m.fliplr(a), shapes=shapes(2)),
    Row("flipud", lambda m, a: a.flipud(), shapes=shapes(1)),
    Row("rot90", lambda m, a: a.rot90(), shapes=shapes(2)),
    Row("rot90_k2", lambda m, a: m.rot90(a, 2, (1, 0)), shapes=shapes(2)),
    Row("rot90_k3", lambda m, a: m.rot90(a, -1, [0, -1]), shapes=shapes(2)),
    Row("roll_flat", lambda m, a: a.roll(2), double=True),
    Row("roll_dim", lambda m, a: m.roll(a, -1, 0), shapes=shapes(1)),
    Row("roll_tuple", lambda m, a: m.roll(a, (1, 5), (-1, 0)), shapes=shapes(2)),
    # padding (PyTorch: non-constant modes on 2-D/3-D inputs with 2 pads, 3-D/4-D with 4)
    Row("pad_constant", lambda m, a: F(m).pad(a, (1, 2)), shapes=shapes(1)),
    Row("pad_constant_value", lambda m, a: F(m).pad(a, (0, 1, 2, 0), value=1.5),
        shapes=shapes(2), double=True),
    Row("pad_constant_neg", lambda m, a: F(m).pad(a, (-1, 2, 1, -1)),
        shapes=shapes(2, min_side=1)),
    Row("pad_reflect", lambda m, a: F(m).pad(a, (2, 1), mode="reflect"),
        shapes=shapes(2, 3, min_side=3), double=True),
    Row("pad_reflect_2d", lambda m, a: F(m).pad(a, (1, 1, 2, 0), mode="reflect"),
        shapes=shapes(3, 4, min_side=3)),
    Row("pad_replicate", lambda m, a: F(m).pad(a, (2, 3), mode="replicate"),
        shapes=shapes(2, 3, min_side=1), double=True),
    Row("pad_replicate_2d", lambda m, a: F(m).pad(a, (0, 2, 3, 1), mode="replicate"),
        shapes=shapes(3, 4, min_side=1)),
    Row("pad_circular", lambda m, a: F(m).pad(a, (1, 2), mode="circular"),
        shapes=shapes(2, 3, min_side=2), double=True),
    Row("pad_circular_2d", lambda m, a: F(m).pad(a, (1, 0, 2, 2), mode="circular"),
        shapes=shapes(3, 4, min_side=2)),
    Row("pad_reflect_crop", lambda m, a: F(m).pad(a, (-1, 2), mode="reflect"),
        shapes=shapes(2, 3, min_side=4)),
    Row("pad_circular_crop", lambda m, a: F(m).pad(a, (-1, 2), mode="circular"),
        shapes=shapes(2, 3, min_side=3)),
    # triangles and diagonals
    Row("tril", lambda m, a: a.tril(), shapes=shapes(2), double=True),
    Row("tril_k", lambda m, a: m.tril(a, -1), shapes=shapes(2)),
    Row("triu", lambda m, a: m.triu(a), shapes=shapes(2)),
    Row("triu_k", lambda m, a: a.triu(diagonal=2), shapes=shapes(2)),
    Row("diag_1d", lambda m, a: m.diag(a), shapes=shapes(1, 1), double=True),
    Row("diag_1d_k", lambda m, a: a.diag(-2), shapes=shapes(1, 1)),
    Row("diag_2d", lambda m, a: m.diag(a, 1), shapes=shapes(2, 2)),
    Row("diag_embed", lambda m, a: a.diag_embed(), shapes=shapes(1, 3)),
    Row("diag_embed_args", lambda m, a: m.diag_embed(a, 1, 0, 2), shapes=shapes(2, 3)),
]

make_tests(TABLE, globals())


# ---- dtypes ---------------------------------------------------------------------------------
DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]


def _pair(dtype, values):
    return (mte.tensor(values).to(getattr(mte, dtype)),
            torch.tensor(values).to(getattr(torch, dtype)))


@pytest.mark.parametrize("dtypes", [("int32", "float32"), ("uint8", "int8"), ("bool", "int16"),
                                    ("float16", "float64", "int64"), ("bool", "uint8", "float16"),
                                    ("int64", "int64"), ("bool", "bool")])
@pytest.mark.parametrize("op", ["cat", "stack", "hstack", "vstack"])
def test_join_promotes_dtypes_like_torch(dtypes, op):
    ours, theirs = zip(*[_pair(d, [[1, 0, 2]]) for d in dtypes])
    o, t = getattr(mte, op)(list(ours)), getattr(torch, op)(list(theirs))
    assert str(o.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_array_equal(o.numpy(), t.numpy())


def test_cat_grad_cast_back_to_each_input_dtype():
    a = mte.ones(2, dtype=mte.float32, requires_grad=True)
    b = mte.ones(3, dtype=mte.float64, requires_grad=True)
    y = mte.cat([a, b])
    assert y.dtype == mte.float64
    (y * mte.arange(5.0, dtype=mte.float64)).sum().backward()
    assert a.grad.dtype == mte.float32 and b.grad.dtype == mte.float64
    np.testing.assert_array_equal(b.grad.numpy(), [2, 3, 4])


@pytest.mark.parametrize("dtype", DTYPES)
def test_shape_ops_keep_dtype(dtype):
    o, t = _pair(dtype, [[1, 0, 2], [3, 1, 0]])
    for f in [lambda m, x: x.T, lambda m, x: x.reshape(-1), lambda m, x: m.flip(x, (0,)),
              lambda m, x: x.repeat(2, 1), lambda m, x: m.roll(x, 1, 1), lambda m, x: x.tril(),
              lambda m, x: x.split(1)[1], lambda m, x: x.diagonal(),
              lambda m, x: x.unsqueeze(0).expand(2, 2, 3)]:
        mo, to = f(mte, o), f(torch, t)
        assert str(mo.dtype).split(".")[-1] == str(to.dtype).split(".")[-1]
        np.testing.assert_array_equal(mo.numpy(), to.numpy())
        assert not mo.requires_grad


# ---- pad in every mode against numpy, with any number of padded dims ------------------------
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=3, max_side=5),
       mode=st.sampled_from(["constant", "reflect", "replicate", "circular"]), data=st.data())
def test_pad_matches_numpy_for_any_dims(shape, mode, data):
    k = data.draw(st.integers(1, len(shape)))
    pads = data.draw(st.lists(st.integers(0, 2), min_size=2 * k, max_size=2 * k))
    x = np.random.default_rng(0).standard_normal(shape)
    width = [(0, 0)] * (len(shape) - k) + [(pads[2 * i], pads[2 * i + 1])
                                           for i in reversed(range(k))]
    np_mode = {"replicate": "edge", "circular": "wrap"}.get(mode, mode)
    got = mte.pad(mte.tensor(x), pads, mode=mode)
    np.testing.assert_array_equal(got.numpy(), np.pad(x, width, mode=np_mode))


def test_pad_1d_reflect_gradcheck():
    x = mte.tensor(np.random.default_rng(1).standard_normal(4), dtype=mte.float64,
                   requires_grad=True)
    assert mte.autograd.gradcheck(lambda t: mte.pad(t, (3, 2), mode="reflect"), [x])
    assert mte.autograd.gradgradcheck(lambda t: mte.pad(t, (3, 2), mode="reflect"), [x])


# ---- views share memory and the version counter ---------------------------------------------
VIEW_OPS = {
    "transpose": lambda x: x.transpose(0, 1), "permute": lambda x: x.permute(2, 0, 1),
    "reshape": lambda x: x.reshape(6, 4), "view": lambda x: x.view(-1),
    "flatten": lambda x: x.flatten(1), "unflatten": lambda x: x.unflatten(2, (2, 2)),
    "squeeze": lambda x: x.unsqueeze(0).squeeze(0),
    "unsqueeze": lambda x: x.unsqueeze(1), "expand": lambda x: x.unsqueeze(0).expand(2, 2, 3, 4),
    "narrow": lambda x: x.narrow(1, 1, 2), "diagonal": lambda x: x.diagonal(0, 1, 2),
    "T": lambda x: x.T, "mT": lambda x: x.mT, "t": lambda x: x.flatten(1).t(), "movedim": lambda x: x.movedim(0, 2),
    "split": lambda x: x.split(1)[1], "chunk": lambda x: x.chunk(2, 2)[0],
    "unbind": lambda x: x.unbind(1)[2], "tensor_split": lambda x: x.tensor_split(2, -1)[1],
}


@pytest.mark.parametrize("name", sorted(VIEW_OPS))
@pytest.mark.parametrize("grad", [False, True])
def test_view_ops_share_version_counter_and_memory(name, grad):
    x = mte.randn(2, 3, 4, requires_grad=grad)
    y = VIEW_OPS[name](x)
    assert y._vc is x._vc, f"{name}: the view does not share the input's version counter"
    assert np.shares_memory(y._data, x._data), f"{name}: the view copied"
    z = y.narrow(0, 0, 1)    # a view of a view shares the same counter
    assert z._vc is x._vc


@pytest.mark.parametrize("f", [lambda x: x.flip(0), lambda x: x.roll(1), lambda x: x.repeat(1, 1),
                               lambda x: mte.cat([x]), lambda x: mte.pad(x, (0, 0)),
                               lambda x: mte.pad(x, (0, 0), mode="reflect"),
                               lambda x: x.mT.reshape(-1), lambda x: x.tril(),
                               lambda x: mte.diag(x[:1, :1].contiguous()),
                               lambda x: mte.stack([x]), lambda x: x.contiguous().mT.contiguous()])
def test_copying_ops_own_their_memory(f):
    x = mte.randn(2, 3)
    y = f(x)
    assert not np.shares_memory(y._data, x._data) and y._vc is not x._vc


def test_contiguous_returns_self_when_contiguous():
    x = mte.randn(2, 3)
    assert x.contiguous() is x
    y = x.t().contiguous()
    assert y.is_contiguous() and y._vc is not x._vc


def test_diagonal_view_is_writable_like_torch():
    x = mte.zeros(3, 3)
    x.diagonal()._data[...] = 1
    np.testing.assert_array_equal(x.numpy(), np.eye(3))


def test_view_dtype_reinterprets_bytes_like_torch():
    x = np.array([[1.5, -2.0], [0.0, 3.25]], np.float32)
    for d in ["int32", "float32", "int16", "uint8"]:
        o, t = mte.tensor(x).view(getattr(mte, d)), torch.tensor(x).view(getattr(torch, d))
        assert tuple(o.shape) == tuple(t.shape)
        np.testing.assert_array_equal(o.numpy(), t.numpy())


def test_single_tensor_lists_and_atleast_return_types():
    x = mte.arange(3.0)
    assert mte.hstack([x]).shape == (3,) and mte.vstack([x]).shape == (1, 3)
    assert mte.dstack((x,)).shape == (1, 3, 1)
    assert isinstance(mte.atleast_2d(x), mte.Tensor)
    assert isinstance(mte.atleast_2d([x]), tuple) and isinstance(mte.atleast_2d(x, x), tuple)
    assert mte.split(x, 3)[0].shape == (3,) and len(mte.chunk(x, 5)) == 3


def test_iteration_unbinds():
    x = mte.arange(6.0).reshape(3, 2)
    rows = list(x)
    assert len(rows) == 3 and rows[1].tolist() == [2.0, 3.0]


# ---- errors: the exception type, a message naming what went wrong, inputs left unchanged ----
def _unchanged(*tensors):
    return [(t, t._data.copy(), t._vc[0], t.shape) for t in tensors]


def _check_unchanged(saved):
    for t, data, version, shape in saved:
        assert t.shape == shape and t._vc[0] == version
        np.testing.assert_array_equal(t._data, data)


ERRORS = [
    ("reshape_numel", lambda a, b: a.reshape(4, 2), RuntimeError, r"\[4, 2\].*size 6"),
    ("view_numel", lambda a, b: a.view(7), RuntimeError, r"\[7\].*size 6"),
    ("reshape_two_minus1", lambda a, b: a.reshape(-1, -1), RuntimeError, "only one dimension"),
    ("reshape_negative", lambda a, b: a.reshape(-2, 3), RuntimeError, "invalid shape dimension"),
    ("reshape_float", lambda a, b: a.reshape(2.0, 3), TypeError, "ints"),
    ("reshape_ambiguous", lambda a, b: mte.zeros(0, 3).reshape(0, -1), RuntimeError, "ambiguous"),
    ("cat_shapes", lambda a, b: mte.cat([a, b]), RuntimeError,
     r"dimension 0.*\(2, 3\).*\(2, 4\)"),
    ("cat_ndim", lambda a, b: mte.cat([a, b.reshape(2, 2, 2)]), RuntimeError,
     r"same number of dimensions.*\(2, 3\).*\(2, 2, 2\)"),
    ("cat_empty", lambda a, b: mte.cat([]), ValueError, "non-empty"),
    ("cat_0d", lambda a, b: mte.cat([a.sum(), b.sum()]), RuntimeError, "zero-dimensional"),
    ("cat_not_tensor", lambda a, b: mte.cat([a, 3]), TypeError, "element 1"),
    ("cat_dim", lambda a, b: mte.cat([a, a], 2), IndexError, "range"),
    ("stack_shapes", lambda a, b: mte.stack([a, b]), RuntimeError, r"\[2, 3\].*\[2, 4\]"),
    ("stack_dim", lambda a, b: mte.stack([a, a], 3), IndexError, "range"),
    ("transpose_dim", lambda a, b: a.transpose(0, 2), IndexError, r"\[-2, 1\].*2"),
    ("permute_len", lambda a, b: a.permute(0, 1, 2), RuntimeError, r"2 dims.*\(2, 3\)"),
    ("permute_dup", lambda a, b: a.permute(1, 1), RuntimeError, "duplicate"),
    ("permute_dim", lambda a, b: a.permute(0, 5), IndexError, "range"),
    ("squeeze_dim", lambda a, b: a.squeeze(3), IndexError, "range"),
    ("unsqueeze_dim", lambda a, b: a.unsqueeze(4), IndexError, r"\[-3, 2\]"),
    ("flatten_order", lambda a, b: a.flatten(1, 0), RuntimeError, "start_dim"),
    ("unflatten_sizes", lambda a, b: a.unflatten(1, (2, 2)), RuntimeError, r"\[2, 2\].*\(3\)"),
    ("t_3d", lambda a, b: b.reshape(2, 2, 2).t(), RuntimeError, "<= 2 dimensions"),
    ("mT_1d", lambda a, b: a.flatten().mT, RuntimeError, "matrices"),
    ("movedim_len", lambda a, b: a.movedim((0, 1), 0), RuntimeError, "same number"),
    ("expand_size", lambda a, b: a.expand(2, 4), RuntimeError, r"\(4\).*\(3\).*dimension 1"),
    ("expand_fewer", lambda a, b: a.expand(3), RuntimeError, "number of sizes"),
    ("expand_lead_minus1", lambda a, b: a.expand(-1, 2, 3), RuntimeError, "leading"),
    ("broadcast", lambda a, b: mte.broadcast_tensors(a, b), RuntimeError, "broadcast"),
    ("narrow_len", lambda a, b: a.narrow(1, 2, 2), RuntimeError, r"start \(2\) \+ length \(2\)"),
    ("narrow_start", lambda a, b: a.narrow(1, 4, 0), IndexError, "start out of range"),
    ("diagonal_same", lambda a, b: a.diagonal(0, 1, 1), RuntimeError, "identical"),
    ("split_sum", lambda a, b: a.split([1, 1], 1), RuntimeError, r"sum exactly to 3.*\[1, 1\]"),
    ("split_zero", lambda a, b: a.split(0), RuntimeError, "split_size"),
    ("chunk_zero", lambda a, b: a.chunk(0), RuntimeError, "greater than 0"),
    ("unbind_dim", lambda a, b: a.unbind(2), IndexError, "range"),
    ("split_0d", lambda a, b: a.sum().split(1), RuntimeError, "1-dimensional"),
    ("repeat_fewer", lambda a, b: a.repeat(2), RuntimeError, "can not be smaller"),
    ("repeat_negative", lambda a, b: a.repeat(-1, 1), RuntimeError, "non-negative"),
    ("repeat_interleave_len", lambda a, b: a.repeat_interleave(mte.tensor([1, 2]), dim=1),
     RuntimeError, "same size"),
    ("pad_odd", lambda a, b: mte.pad(a, (1,)), RuntimeError, "divisible by 2"),
    ("pad_long", lambda a, b: mte.pad(a, (1,) * 6), RuntimeError, "padding length 6"),
    ("pad_mode", lambda a, b: mte.pad(a, (1, 1), mode="mirror"), NotImplementedError, "mirror"),
    ("pad_reflect_big", lambda a, b: mte.pad(a, (3, 0), mode="reflect"), RuntimeError,
     r"less than.*\(3, 0\).*size 3"),
    ("pad_circular_big", lambda a, b: mte.pad(a, (0, 4), mode="circular"), RuntimeError,
     "more than once"),
    ("pad_value_mode", lambda a, b: mte.pad(a, (1, 1), mode="replicate", value=1.0),
     RuntimeError, "value"),
    ("pad_negative_size", lambda a, b: mte.pad(a, (-2, -2)), RuntimeError, "negative output"),
    ("roll_align", lambda a, b: a.roll((1, 2), 0), RuntimeError, "align"),
    ("tril_1d", lambda a, b: a.flatten().tril(), RuntimeError, "at least 2"),
    ("diag_3d", lambda a, b: b.reshape(2, 2, 2).diag(), RuntimeError, "1D or 2D"),
    ("rot90_dims", lambda a, b: a.rot90(1, (0, 0)), RuntimeError, "different"),
    ("flip_dup", lambda a, b: a.flip(0, 0), RuntimeError, "multiple"),
    ("fliplr_1d", lambda a, b: a.flatten().fliplr(), RuntimeError, ">= 2-d"),
]


@pytest.mark.parametrize("case", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_are_clear_and_leave_inputs_unchanged(case):
    name, f, exc, pattern = case
    a = mte.randn(2, 3, requires_grad=True)
    b = mte.randn(2, 4)
    saved = _unchanged(a, b)
    with pytest.raises(exc, match=pattern):
        f(a, b)
    _check_unchanged(saved)
    assert a.grad is None and a.is_leaf
