"""Recurrent layers and sequence packing against PyTorch.

* nn.RNN (tanh, relu), nn.LSTM (with and without proj_size), nn.GRU over num_layers {1, 2},
  bidirectional, batch_first, bias, given / default initial states, unbatched input and packed
  variable-length input (sorted and not): outputs, final states and the gradients of the input,
  the initial states and every parameter (layer harness: torch's weights loaded through
  load_state_dict); the cells RNNCell, LSTMCell, GRUCell the same way;
* state_dicts both ways, parameter names and order, all_weights, reprs, initialisation;
* gradcheck / gradgradcheck in float64 on small sizes (parameters included);
* nn.utils.rnn: pad_sequence, pack_padded_sequence, pad_packed_sequence, pack_sequence,
  unpad/unpack, forward and backward, hypothesis-drawn lengths;
* error messages: the layer's name, the shapes, and PyTorch's wording.
"""
import re
import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st

import minitorch_edge as mte
from minitorch_edge.autograd import gradcheck, gradgradcheck
from harness import import_torch
from layer_harness import LayerRow, copy_weights, make_layer_tests

torch = import_torch()
# torch 2.13 notes that its oneDNN path lacks proj_size and falls back to its default kernel
pytestmark = pytest.mark.filterwarnings("ignore:LSTM with projections is not supported")


@pytest.fixture(autouse=True, scope="module")
def _torch_one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _lib(module):
    return mte if isinstance(module, mte.nn.Module) else torch


def _ours(module):
    return isinstance(module, mte.nn.Module)


# ---- the layer table ----------------------------------------------------------------------------
IN, H, P, T, B = 3, 4, 2, 5, 3          # input, hidden, proj sizes; sequence length; batch


def build(cls, **kw):
    return lambda nn: getattr(nn, cls)(IN, H, **kw)


def seq_inputs(cls, num_layers=1, bidirectional=False, batch_first=False, proj_size=0,
               h0=True, batch=B, unbatched=False, length=T):
    D = 2 if bidirectional else 1
    out = proj_size or H

    def make(rng):
        shape = (length, IN) if unbatched else ((batch, length, IN) if batch_first
                                               else (length, batch, IN))
        arrays = [rng.standard_normal(shape).astype(np.float32)]
        if h0:
            lead = (num_layers * D,) if unbatched else (num_layers * D, batch)
            arrays.append(rng.standard_normal(lead + (out,)).astype(np.float32))
            if cls == "LSTM":
                arrays.append(rng.standard_normal(lead + (H,)).astype(np.float32))
        return arrays
    return make


def call_seq(module, x, *states):
    if not states:
        return module(x)
    hx = tuple(states) if len(states) == 2 else states[0]
    return module(x, hx)


def call_packed(lengths, batch_first=False, enforce_sorted=True):
    """Pack x with `lengths`, run, pad the output back: compares the padded output, its
    lengths and the final states."""
    def call(module, x, *states):
        R = _lib(module).nn.utils.rnn
        packed = R.pack_padded_sequence(x, lengths, batch_first=batch_first,
                                        enforce_sorted=enforce_sorted)
        out, hn = call_seq(module, packed, *states)
        assert isinstance(out, R.PackedSequence)
        padded, lens = R.pad_packed_sequence(out, batch_first=batch_first, total_length=T)
        return padded, hn
    return call


MODES = [("RNN", {}), ("RNN", {"nonlinearity": "relu"}), ("LSTM", {}),
         ("LSTM", {"proj_size": P}), ("GRU", {})]


def _mode_name(cls, kw):
    return cls + "".join(f"_{k}={v}" for k, v in kw.items())


def _rows():
    rows = []
    for cls, kw in MODES:
        base = _mode_name(cls, kw)
        for num_layers in (1, 2):
            for bidirectional in (False, True):
                for batch_first in (False, True):
                    cfg = dict(kw, num_layers=num_layers, bidirectional=bidirectional,
                               batch_first=batch_first)
                    name = f"{base}_L{num_layers}{'_bi' if bidirectional else ''}" \
                           f"{'_bf' if batch_first else ''}"
                    rows.append(LayerRow(name, build(cls, **cfg),
                                         seq_inputs(cls, **{k: v for k, v in cfg.items()
                                                            if k != "nonlinearity"}),
                                         call=call_seq))
        ikw = {k: v for k, v in kw.items() if k != "nonlinearity"}
        rows.append(LayerRow(f"{base}_no_h0", build(cls, num_layers=2, **kw),
                             seq_inputs(cls, num_layers=2, h0=False, **ikw), call=call_seq))
        rows.append(LayerRow(f"{base}_no_bias", build(cls, num_layers=2, bias=False, **kw),
                             seq_inputs(cls, num_layers=2, **ikw), call=call_seq))
        for bidirectional in (False, True):
            for h0 in (True, False):
                rows.append(LayerRow(
                    f"{base}_unbatched{'_bi' if bidirectional else ''}"
                    f"{'' if h0 else '_no_h0'}",
                    build(cls, num_layers=2, bidirectional=bidirectional, **kw),
                    seq_inputs(cls, num_layers=2, bidirectional=bidirectional, h0=h0,
                               unbatched=True, **ikw), call=call_seq))
        rows.append(LayerRow(f"{base}_unbatched_bf", build(cls, batch_first=True, **kw),
                             seq_inputs(cls, unbatched=True, **ikw), call=call_seq))
        for bidirectional in (False, True):
            for batch_first, lengths, enforce in ((False, [5, 3, 2], True),
                                                  (True, [2, 5, 3], False),
                                                  (False, [4, 4, 1], False),
                                                  (True, [5, 5, 5], True)):
                rows.append(LayerRow(
                    f"{base}_packed{'_bi' if bidirectional else ''}{'_bf' if batch_first else ''}"
                    f"_{''.join(map(str, lengths))}",
                    build(cls, num_layers=2, bidirectional=bidirectional,
                          batch_first=batch_first, **kw),
                    seq_inputs(cls, num_layers=2, bidirectional=bidirectional,
                               batch_first=batch_first, **ikw),
                    call=call_packed(lengths, batch_first, enforce)))
        rows.append(LayerRow(f"{base}_packed_no_h0", build(cls, bidirectional=True, **kw),
                             seq_inputs(cls, bidirectional=True, h0=False, **ikw),
                             call=call_packed([2, 5, 1], enforce_sorted=False)))
        rows.append(LayerRow(f"{base}_empty_batch", build(cls, **kw),
                             seq_inputs(cls, batch=0, **ikw), call=call_seq))
    rows.append(LayerRow("LSTM_dropout_shapes", build("LSTM", num_layers=3, dropout=0.5),
                         seq_inputs("LSTM", num_layers=3), call=call_seq, deterministic=False))
    return rows


def cell_inputs(cls, batch=B, hx=True, unbatched=False):
    def make(rng):
        lead = () if unbatched else (batch,)
        arrays = [rng.standard_normal(lead + (IN,)).astype(np.float32)]
        if hx:
            arrays.append(rng.standard_normal(lead + (H,)).astype(np.float32))
            if cls == "LSTMCell":
                arrays.append(rng.standard_normal(lead + (H,)).astype(np.float32))
        return arrays
    return make


def _cell_rows():
    rows = []
    for cls, kw in [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}),
                    ("RNNCell", {"bias": False}), ("LSTMCell", {}), ("LSTMCell", {"bias": False}),
                    ("GRUCell", {}), ("GRUCell", {"bias": False})]:
        base = _mode_name(cls, kw)
        rows.append(LayerRow(base, build(cls, **kw), cell_inputs(cls), call=call_seq))
        rows.append(LayerRow(f"{base}_no_hx", build(cls, **kw), cell_inputs(cls, hx=False),
                             call=call_seq))
        rows.append(LayerRow(f"{base}_unbatched", build(cls, **kw),
                             cell_inputs(cls, unbatched=True), call=call_seq))
    return rows


TABLE = _rows() + _cell_rows()
make_layer_tests(TABLE, globals())


# ---- parameters, state_dicts, reprs -------------------------------------------------------------
CONFIGS = [("RNN", dict(num_layers=2, nonlinearity="relu")),
           ("RNN", dict(bias=False, bidirectional=True)),
           ("LSTM", dict(num_layers=2, bidirectional=True, proj_size=2)),
           ("LSTM", dict(batch_first=True, dropout=0.25, num_layers=3)),
           ("GRU", dict(num_layers=2, bidirectional=True, bias=False)),
           ("RNNCell", dict(nonlinearity="relu")), ("LSTMCell", dict(bias=False)),
           ("GRUCell", {})]


@pytest.mark.parametrize("cls,kw", CONFIGS, ids=[_mode_name(c, k) for c, k in CONFIGS])
def test_parameters_state_dict_repr(cls, kw):
    theirs = getattr(torch.nn, cls)(IN, H, **kw)
    ours = getattr(mte.nn, cls)(IN, H, **kw)
    assert repr(ours) == repr(theirs)
    o_sd, t_sd = ours.state_dict(), theirs.state_dict()
    assert list(o_sd) == list(t_sd)                        # names and order
    assert [tuple(v.shape) for v in o_sd.values()] == [tuple(v.shape) for v in t_sd.values()]
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    if "Cell" not in cls:
        assert ours._flat_weights_names == theirs._flat_weights_names
        assert ours._all_weights == theirs._all_weights
        assert [[tuple(p.shape) for p in ws] for ws in ours.all_weights] == \
            [[tuple(p.shape) for p in ws] for ws in theirs.all_weights]
        assert all(p is q for p, q in zip(ours._flat_weights, ours.parameters()))
        assert ours.flatten_parameters() is None
        for attr in ("mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first",
                     "dropout", "bidirectional", "proj_size"):
            assert getattr(ours, attr) == getattr(theirs, attr), attr
    # ours -> torch: torch's module computes what ours does
    theirs.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in o_sd.items()})
    rng = np.random.default_rng(0)
    bf = kw.get("batch_first", False)
    shape = (B, IN) if "Cell" in cls else ((B, T, IN) if bf else (T, B, IN))
    x = rng.standard_normal(shape).astype(np.float32)
    ours.eval()
    theirs.eval()
    o, t = ours(mte.tensor(x)), theirs(torch.tensor(x))
    o = o[0] if isinstance(o, tuple) else o
    t = t[0] if isinstance(t, tuple) else t
    torch.testing.assert_close(torch.from_numpy(o.detach().numpy()), t.detach())


def test_init_range_and_reset():
    mte.manual_seed(0)
    m = mte.nn.LSTM(8, 64, num_layers=2, bidirectional=True)
    bound = 1 / 8.0
    values = np.concatenate([p.detach().numpy().ravel() for p in m.parameters()])
    assert values.min() >= -bound and values.max() <= bound
    assert abs(values.std() - bound / np.sqrt(3)) < 0.01 * bound * 3
    before = m.weight_hh_l0.detach().numpy().copy()
    m.reset_parameters()
    assert not np.array_equal(before, m.weight_hh_l0.detach().numpy())
    cell = mte.nn.GRUCell(5, 16)
    assert np.abs(cell.weight_ih.detach().numpy()).max() <= 0.25


def test_double_and_dtype_mismatch():
    theirs = torch.nn.GRU(IN, H, num_layers=2).double()
    ours = mte.nn.GRU(IN, H, num_layers=2).double()
    copy_weights(ours, theirs)
    assert ours.weight_ih_l0.dtype == mte.float64
    x = np.random.default_rng(1).standard_normal((T, B, IN))
    o, _ = ours(mte.tensor(x))
    t, _ = theirs(torch.tensor(x))
    assert o.dtype == mte.float64
    torch.testing.assert_close(torch.from_numpy(o.detach().numpy()), t.detach())
    with pytest.raises(ValueError, match=r"GRU: input dtype \(.*float32\) does not match weight "
                                         r"dtype \(.*float64\)"):
        ours(mte.randn(T, B, IN))


def test_dropout_between_layers():
    mte.manual_seed(0)
    m = mte.nn.LSTM(IN, H, num_layers=3, dropout=0.5)
    theirs = torch.nn.LSTM(IN, H, num_layers=3, dropout=0.5)
    copy_weights(m, theirs)
    x = mte.randn(T, B, IN)
    m.eval()
    theirs.eval()
    torch.testing.assert_close(torch.from_numpy(m(x)[0].detach().numpy()),
                               theirs(torch.from_numpy(x.numpy()))[0].detach())
    m.train()
    mte.manual_seed(3)
    a = m(x)[0].detach().numpy()
    mte.manual_seed(3)
    b = m(x)[0].detach().numpy()
    c = m(x)[0].detach().numpy()
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    m.eval()
    assert not np.allclose(a, m(x)[0].detach().numpy())
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        mte.nn.GRU(IN, H, dropout=0.3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mte.nn.GRU(IN, H, num_layers=2, dropout=0.3)


def test_cells_match_the_layers():
    """Looping a cell over time gives the 1-layer layer's output (same weights)."""
    rng = np.random.default_rng(0)
    x = mte.tensor(rng.standard_normal((T, B, IN)).astype(np.float32))
    for layer_cls, cell_cls, kw in (("RNN", "RNNCell", {"nonlinearity": "relu"}),
                                    ("LSTM", "LSTMCell", {}), ("GRU", "GRUCell", {})):
        layer = getattr(mte.nn, layer_cls)(IN, H, **kw)
        cell = getattr(mte.nn, cell_cls)(IN, H, **kw)
        cell.load_state_dict({k[:-3]: v for k, v in layer.state_dict().items()})
        out, _ = layer(x)
        state = None
        for t in range(T):
            state = cell(x[t], state)
            h = state[0] if isinstance(state, tuple) else state
            np.testing.assert_allclose(h.detach().numpy(), out[t].detach().numpy(), rtol=1e-5,
                                       atol=1e-6)


# ---- gradcheck in float64 -----------------------------------------------------------------------
GC = [("RNN", {}), ("RNN", {"nonlinearity": "relu"}), ("LSTM", {}), ("LSTM", {"proj_size": 1}),
      ("GRU", {})]


def _small(cls, kw, **more):
    mte.manual_seed(0)
    return getattr(mte.nn, cls)(2, 2, **kw, **more).double()


@pytest.mark.parametrize("cls,kw", GC, ids=[_mode_name(c, k) for c, k in GC])
def test_gradcheck_layers(cls, kw):
    """Two layers, bidirectional: input, initial states and every parameter."""
    m = _small(cls, kw, num_layers=2, bidirectional=True)
    rng = np.random.default_rng(0)
    out = kw.get("proj_size") or 2
    x = mte.tensor(rng.standard_normal((3, 2, 2)), requires_grad=True)
    states = [mte.tensor(rng.standard_normal((4, 2, out)) * 0.5, requires_grad=True)]
    if cls == "LSTM":
        states.append(mte.tensor(rng.standard_normal((4, 2, 2)) * 0.5, requires_grad=True))
    params = list(m.parameters())

    def f(x, *rest):
        s = rest[:len(states)]
        y, hn = m(x, tuple(s) if cls == "LSTM" else s[0])
        return (y,) + (tuple(hn) if cls == "LSTM" else (hn,))
    assert gradcheck(f, [x] + states + params)


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_gradcheck_packed(cls):
    m = _small(cls, {}, bidirectional=True)
    R = mte.nn.utils.rnn
    rng = np.random.default_rng(1)
    x = mte.tensor(rng.standard_normal((3, 3, 2)), requires_grad=True)
    params = list(m.parameters())

    def f(x, *_):
        out, hn = m(R.pack_padded_sequence(x, [1, 3, 2], enforce_sorted=False))
        padded, _ = R.pad_packed_sequence(out)
        return (padded,) + (tuple(hn) if cls == "LSTM" else (hn,))
    assert gradcheck(f, [x] + params)


@pytest.mark.parametrize("cls", ["RNNCell", "LSTMCell", "GRUCell"])
def test_gradcheck_cells(cls):
    m = _small(cls, {})
    rng = np.random.default_rng(2)
    x = mte.tensor(rng.standard_normal((2, 2)), requires_grad=True)
    hs = [mte.tensor(rng.standard_normal((2, 2)), requires_grad=True)
          for _ in range(2 if cls == "LSTMCell" else 1)]

    def f(x, *rest):
        return m(x, tuple(rest[:2]) if cls == "LSTMCell" else rest[0])
    assert gradcheck(f, [x] + hs + list(m.parameters()))


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_gradgradcheck(cls):
    m = _small(cls, {})
    rng = np.random.default_rng(3)
    x = mte.tensor(rng.standard_normal((2, 1, 2)), requires_grad=True)

    def f(x, w):
        y, _ = m(x)
        return y
    assert gradgradcheck(f, [x, m.weight_hh_l0])


# ---- nn.utils.rnn -------------------------------------------------------------------------------
def _both(arrays, grad=True):
    ours = [mte.tensor(a, requires_grad=grad) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=grad) for a in arrays]
    return ours, theirs


def _close(o, t, **kw):
    torch.testing.assert_close(torch.from_numpy(np.array(o.detach().numpy())), t.detach(),
                               check_dtype=False, **kw)


def _grads_match(o_out, t_out, o_in, t_in, rng):
    up = rng.standard_normal(tuple(t_out.shape)).astype(np.float32)
    og = mte.autograd.grad((o_out * mte.tensor(up)).sum(), o_in, retain_graph=True)
    tg = torch.autograd.grad((t_out * torch.tensor(up)).sum(), t_in, retain_graph=True)
    for a, b in zip(og, tg):
        _close(a, b)


@given(lengths=st.lists(st.integers(1, 5), min_size=1, max_size=5), batch_first=st.booleans(),
       side=st.sampled_from(["left", "right"]), value=st.sampled_from([0.0, -1.5]),
       trail=st.sampled_from([(), (2,), (2, 3)]))
def test_pad_sequence(lengths, batch_first, side, value, trail):
    rng = np.random.default_rng(len(lengths))
    arrays = [rng.standard_normal((n,) + trail).astype(np.float32) for n in lengths]
    o_in, t_in = _both(arrays)
    o = mte.nn.utils.rnn.pad_sequence(o_in, batch_first, value, side)
    t = torch.nn.utils.rnn.pad_sequence(t_in, batch_first, value, side)
    assert tuple(o.shape) == tuple(t.shape)
    _close(o, t)
    _grads_match(o, t, o_in, t_in, rng)
    if side == "right":
        back = mte.nn.utils.rnn.unpad_sequence(o, mte.tensor(lengths), batch_first)
        for a, b in zip(back, arrays):
            np.testing.assert_array_equal(a.detach().numpy(), b)


@given(lengths=st.lists(st.integers(1, 6), min_size=1, max_size=5), batch_first=st.booleans(),
       extra=st.integers(0, 2), value=st.sampled_from([0.0, 7.0]))
def test_pack_pad_roundtrip(lengths, batch_first, extra, value):
    """pack_padded_sequence (unsorted lengths, ties included) and pad_packed_sequence against
    torch: data, batch_sizes, indices, padded output, lengths and gradients."""
    R, TR = mte.nn.utils.rnn, torch.nn.utils.rnn
    rng = np.random.default_rng(sum(lengths))
    Tm, Bn = max(lengths) + extra, len(lengths)
    x = rng.standard_normal((Bn, Tm, 2) if batch_first else (Tm, Bn, 2)).astype(np.float32)
    (ox,), (tx,) = _both([x])
    op = R.pack_padded_sequence(ox, lengths, batch_first=batch_first, enforce_sorted=False)
    tp = TR.pack_padded_sequence(tx, lengths, batch_first=batch_first, enforce_sorted=False)
    assert isinstance(op, tuple) and op._fields == tp._fields
    _close(op.data, tp.data)
    assert op.batch_sizes.tolist() == tp.batch_sizes.tolist()
    assert op.batch_sizes.dtype == mte.int64
    assert op.sorted_indices.tolist() == tp.sorted_indices.tolist()
    assert op.unsorted_indices.tolist() == tp.unsorted_indices.tolist()
    _grads_match(op.data, tp.data, [ox], [tx], rng)
    o, ol = R.pad_packed_sequence(op, batch_first, value, total_length=Tm + 1)
    t, tl = TR.pad_packed_sequence(tp, batch_first, value, total_length=Tm + 1)
    _close(o, t)
    assert ol.tolist() == tl.tolist() == lengths and ol.dtype == mte.int64
    _grads_match(o, t, [ox], [tx], rng)


def test_pack_sequence_and_sorted():
    R, TR = mte.nn.utils.rnn, torch.nn.utils.rnn
    seqs = [[1, 2, 3], [4, 5], [6]]
    o = R.pack_sequence([mte.tensor(s) for s in seqs])
    t = TR.pack_sequence([torch.tensor(s) for s in seqs])
    assert o.data.tolist() == t.data.tolist() == [1, 4, 6, 2, 5, 3]
    assert o.batch_sizes.tolist() == [3, 2, 1]
    assert o.sorted_indices is None and o.unsorted_indices is None
    assert repr(o) == ("PackedSequence(data=tensor([1, 4, 6, 2, 5, 3]), batch_sizes=tensor("
                       "[3, 2, 1]), sorted_indices=None, unsorted_indices=None)")
    data, batch_sizes, _, _ = o                   # a named tuple
    assert data is o.data and batch_sizes is o.batch_sizes
    u = R.pack_sequence([mte.tensor(s) for s in [[1], [2, 3, 4], [5, 6]]],
                        enforce_sorted=False)
    assert [s.tolist() for s in R.unpack_sequence(u)] == [[1], [2, 3, 4], [5, 6]]
    assert u.sorted_indices.tolist() == [1, 2, 0] and u.unsorted_indices.tolist() == [2, 0, 1]
    again = R.PackedSequence(u.data, u.batch_sizes, u.sorted_indices)
    assert again.unsorted_indices.tolist() == [2, 0, 1]
    assert R.PackedSequence((u.data, u.batch_sizes)).batch_sizes is u.batch_sizes
    f = R.pack_sequence([mte.randn(3, 2), mte.randn(1, 2)])
    assert f.double().data.dtype == mte.float64 and f.to(mte.float32) is f
    assert R.invert_permutation(mte.tensor([2, 0, 1])).tolist() == [1, 2, 0]
    assert R.invert_permutation(None) is None
    assert mte.nn.utils.pad_sequence is R.pad_sequence
    assert mte.nn.utils.PackedSequence is R.PackedSequence


@given(data=st.data())
def test_rnn_on_random_packed_batches(data):
    """Random lengths (ties, unsorted), every layer type, bidirectional: the packed run equals
    torch's, and each sequence's output/final state equals running it alone."""
    cls, kw = data.draw(st.sampled_from(MODES), label="mode")
    lengths = data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=4), label="lengths")
    bidirectional = data.draw(st.booleans(), label="bidirectional")
    R, TR = mte.nn.utils.rnn, torch.nn.utils.rnn
    torch.manual_seed(len(lengths))
    theirs = getattr(torch.nn, cls)(IN, H, bidirectional=bidirectional, **kw)
    ours = getattr(mte.nn, cls)(IN, H, bidirectional=bidirectional, **kw)
    copy_weights(ours, theirs)
    rng = np.random.default_rng(sum(lengths))
    x = rng.standard_normal((max(lengths), len(lengths), IN)).astype(np.float32)
    (ox,), (tx,) = _both([x])
    o_out, o_h = ours(R.pack_padded_sequence(ox, lengths, enforce_sorted=False))
    t_out, t_h = theirs(TR.pack_padded_sequence(tx, lengths, enforce_sorted=False))
    _close(o_out.data, t_out.data)
    o_h, t_h = (o_h if cls == "LSTM" else (o_h,)), (t_h if cls == "LSTM" else (t_h,))
    for a, b in zip(o_h, t_h):
        _close(a, b)
    loss_o = (o_out.data * 1.5).sum() + sum((h * h).sum() for h in o_h)
    loss_t = (t_out.data * 1.5).sum() + sum((h * h).sum() for h in t_h)
    targets = ["x"] + [n for n, _ in theirs.named_parameters()]
    og = mte.autograd.grad(loss_o, [ox] + list(ours.parameters()))
    tg = torch.autograd.grad(loss_t, [tx] + list(theirs.parameters()))
    for name, a, b in zip(targets, og, tg):
        _close(a, b, msg=lambda m: f"grad {name}: {m}")
    padded, _ = R.pad_packed_sequence(o_out)
    for b, n in enumerate(lengths):
        alone, h_alone = ours(ox[:n, b:b + 1])
        np.testing.assert_allclose(padded[:n, b:b + 1].detach().numpy(),
                                   alone.detach().numpy(), rtol=1e-5, atol=1e-6)
        h_alone = h_alone if cls == "LSTM" else (h_alone,)
        for a, s in zip(o_h, h_alone):
            np.testing.assert_allclose(a[:, b:b + 1].detach().numpy(), s.detach().numpy(),
                                       rtol=1e-5, atol=1e-6)


# ---- errors -------------------------------------------------------------------------------------
def _seq_err_cases():
    x = lambda *s: np.zeros(s, np.float32)  # noqa: E731
    return [
        ("LSTM", {}, lambda lib, m: m(lib.tensor(x(5, 3, 7))),
         ["input.size(-1) must be equal to input_size. Expected 3, got 7", "(5, 3, 7)"]),
        ("GRU", {}, lambda lib, m: m(lib.tensor(x(2, 5, 3, 3))),
         ["GRU: Expected input to be 2D or 3D, got 4D", "(2, 5, 3, 3)"]),
        ("LSTM", dict(num_layers=2), lambda lib, m: m(lib.tensor(x(5, 3, 3)),
                                                      (lib.tensor(x(1, 3, 4)),
                                                       lib.tensor(x(2, 3, 4)))),
         ["Expected hidden[0] size (2, 3, 4), got [1, 3, 4]"]),
        ("LSTM", dict(num_layers=2), lambda lib, m: m(lib.tensor(x(5, 3, 3)),
                                                      (lib.tensor(x(2, 3, 4)),
                                                       lib.tensor(x(2, 4, 4)))),
         ["Expected hidden[1] size (2, 3, 4), got [2, 4, 4]"]),
        ("LSTM", dict(proj_size=2), lambda lib, m: m(lib.tensor(x(5, 3, 3)),
                                                     (lib.tensor(x(1, 3, 4)),
                                                      lib.tensor(x(1, 3, 4)))),
         ["Expected hidden[0] size (1, 3, 2), got [1, 3, 4]"]),
        ("GRU", {}, lambda lib, m: m(lib.tensor(x(5, 3, 3)), lib.tensor(x(1, 4, 4))),
         ["Expected hidden size (1, 3, 4), got [1, 4, 4]"]),
        ("RNN", dict(bidirectional=True), lambda lib, m: m(lib.tensor(x(5, 3, 3)),
                                                           lib.tensor(x(1, 3, 4))),
         ["Expected hidden size (2, 3, 4), got [1, 3, 4]"]),
        ("RNN", {}, lambda lib, m: m(lib.tensor(x(5, 3, 3)), lib.tensor(x(3, 4))),
         ["For batched 3-D input, hx should also be 3-D but got 2-D tensor"]),
        ("LSTM", {}, lambda lib, m: m(lib.tensor(x(5, 3)), (lib.tensor(x(1, 1, 4)),
                                                            lib.tensor(x(1, 1, 4)))),
         ["For unbatched 2-D input, hx and cx should also be 2-D but got (3-D, 3-D) tensors"]),
        ("LSTM", {}, lambda lib, m: m(lib.tensor(x(5, 3, 3)), (lib.tensor(x(3, 4)),
                                                               lib.tensor(x(3, 4)))),
         ["For batched 3-D input, hx and cx should also be 3-D but got (2-D, 2-D) tensors"]),
        ("GRU", {}, lambda lib, m: m(lib.tensor(x(0, 3, 3))),
         ["Expected sequence length to be larger than 0 in RNN"]),
        ("RNNCell", {}, lambda lib, m: m(lib.tensor(x(3, 5))),
         ["input has inconsistent input_size: got 5 expected 3"]),
        ("LSTMCell", {}, lambda lib, m: m(lib.tensor(x(3, 3)), (lib.tensor(x(4, 4)),
                                                                lib.tensor(x(4, 4)))),
         ["Input batch size 3 doesn't match hidden0 batch size 4"]),
        ("GRUCell", {}, lambda lib, m: m(lib.tensor(x(3, 3)), lib.tensor(x(3, 7))),
         ["hidden0 has inconsistent hidden_size: got 7, expected 4"]),
        ("LSTMCell", {}, lambda lib, m: m(lib.tensor(x(3, 3)), (lib.tensor(x(3, 4)),
                                                                lib.tensor(x(3, 6)))),
         ["hidden1 has inconsistent hidden_size: got 6, expected 4"]),
        ("RNNCell", {}, lambda lib, m: m(lib.tensor(x(2, 3, 3))),
         ["RNNCell: Expected input to be 1D or 2D, got 3D instead"]),
    ]


@pytest.mark.parametrize("case", _seq_err_cases(), ids=lambda c: f"{c[0]}-{c[3][0][:30]}")
def test_error_messages_like_torch(case):
    cls, kw, call, parts = case
    with pytest.raises(Exception) as t_err:
        call(torch, getattr(torch.nn, cls)(IN, H, **kw))
    with pytest.raises(type(t_err.value)) as o_err:
        call(mte, getattr(mte.nn, cls)(IN, H, **kw))
    msg = str(o_err.value)
    assert msg.startswith(cls + ":"), msg
    for p in parts:
        assert p in msg, msg
        if not p.startswith("("):
            assert p.split(": ", 1)[-1] in str(t_err.value), str(t_err.value)


def test_constructor_errors():
    nn = mte.nn
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
        nn.GRU(3, 4, proj_size=2)
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
        nn.RNN(3, 4, proj_size=2)
    with pytest.raises(ValueError, match="Unknown nonlinearity 'sigmoid'"):
        nn.RNN(3, 4, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="LSTM: proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match=r"dropout should be a number in range \[0, 1\]"):
        nn.LSTM(3, 4, dropout=1.5)
    with pytest.raises(ValueError, match="GRU: hidden_size must be greater than zero"):
        nn.GRU(3, 0)
    with pytest.raises(TypeError, match="LSTM: input_size should be of type int"):
        nn.LSTM(3.0, 4)
    with pytest.raises(ValueError, match="RNNCell: Unknown nonlinearity"):
        nn.RNNCell(3, 4, nonlinearity="gelu")
    with pytest.raises(ValueError, match="LSTMCell: hidden_size must be a positive int"):
        nn.LSTMCell(3, -1)


def test_forward_type_errors():
    lstm, gru = mte.nn.LSTM(IN, H), mte.nn.GRU(IN, H)
    x = mte.randn(T, B, IN)
    with pytest.raises(TypeError, match=r"LSTM: hx must be a tuple \(h_0, c_0\)"):
        lstm(x, mte.zeros(1, B, H))
    with pytest.raises(TypeError, match="GRU: hx must be a Tensor"):
        gru(x, (mte.zeros(1, B, H),))
    with pytest.raises(TypeError, match="LSTM: input must be a Tensor or a PackedSequence"):
        lstm(x.numpy().tolist())
    with pytest.raises(TypeError, match=r"LSTM: input 1 is a numpy.ndarray .* "
                                        r"minitorch_edge.from_numpy\(x\)"):    # nn/_inputs.py
        lstm(x.numpy())
    packed = mte.nn.utils.rnn.pack_sequence([mte.randn(3, 5), mte.randn(2, 5)])
    with pytest.raises(RuntimeError, match=re.escape("LSTM: input.size(-1) must be equal to "
                                                     "input_size. Expected 3, got 5")):
        lstm(packed)


def test_packing_errors():
    R = mte.nn.utils.rnn
    x = mte.randn(5, 3, 2)
    with pytest.raises(RuntimeError, match="`lengths` array must be sorted in decreasing order "
                                           "when `enforce_sorted` is True"):
        R.pack_padded_sequence(x, [3, 5, 2])
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"
                       .lower()[:20]):
        R.pack_padded_sequence(x, [5, 3, 0])
    with pytest.raises(RuntimeError, match=r"`len\(lengths\)` to be equal to batch_size, but got "
                                           r"2 \(batch_size=3"):
        R.pack_padded_sequence(x, [5, 3])
    with pytest.raises(RuntimeError, match=r"a length \(6\) exceeds the padded sequence length 5"):
        R.pack_padded_sequence(x, [6, 3, 2])
    with pytest.raises(ValueError, match="at least 2 dims"):
        R.pack_padded_sequence(mte.randn(5), [5])
    p = R.pack_padded_sequence(x, [5, 3, 2])
    with pytest.raises(ValueError, match="Expected total_length to be at least the length of the "
                                         "longest sequence in input, but got total_length=3 and "
                                         "max sequence length being 5"):
        R.pad_packed_sequence(p, total_length=3)
    with pytest.raises(RuntimeError, match="received an empty list of sequences"):
        R.pad_sequence([])
    with pytest.raises(RuntimeError, match="Expected padding_side to be one of left or right"):
        R.pad_sequence([mte.randn(2)], padding_side="middle")
    with pytest.raises(RuntimeError, match=r"sequence 0 has shape \(3, 2\) and sequence 1 has "
                                           r"shape \(2, 3\)"):
        R.pad_sequence([mte.randn(3, 2), mte.randn(2, 3)])


# ---- a small model learns -----------------------------------------------------------------------
def test_lstm_learns_to_count():
    """An LSTM + Linear learns to output the running sum of its 0/1 inputs (mod 3)."""
    mte.manual_seed(0)
    rng = np.random.default_rng(0)
    lstm, head = mte.nn.LSTM(1, 16, batch_first=True), mte.nn.Linear(16, 3)
    params = list(lstm.parameters()) + list(head.parameters())
    opt = mte.optim.Adam(params, lr=0.03)
    loss_fn = mte.nn.CrossEntropyLoss()
    for step in range(150):
        bits = rng.integers(0, 2, (16, 8))
        target = mte.tensor(np.cumsum(bits, 1) % 3)
        out, _ = lstm(mte.tensor(bits[..., None].astype(np.float32)))
        loss = loss_fn(head(out).reshape(-1, 3), target.reshape(-1))
        opt.zero_grad()
        loss.backward()
        mte.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
    assert loss.item() < 0.3, loss.item()
