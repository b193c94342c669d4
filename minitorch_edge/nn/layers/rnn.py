"""Recurrent layers: RNN, LSTM and GRU over whole sequences, and the single-step cells RNNCell,
LSTMCell, GRUCell. The idea: one set of weights applied at every time step, with a hidden state
carried from step to step, so the output at step t can depend on everything before it.

    h_t = cell(x_t, h_{t-1})          t = 1..T,  h_0 given (default zeros)

Each layer is composed of differentiable Tensor ops (``F.linear``, sigmoid, tanh, relu,
chunk/split, cat/stack, slicing), so its gradient is backpropagation through time, worked out
by the tape: going backwards from t = T, the gradient reaching h_t (from the output at t and
from step t+1) flows through the cell's ops into h_{t-1}, x_t and the weights, and the weights'
gradients are summed over the steps. Gradients of gradients come the same way.

How a layer runs (one layer, one direction):

1. the input projection for all T steps at once, one matmul: ``xw = x @ W_ih^T + b``
   ((T, B, G) for G = gates * hidden_size; for LSTM and RNN b = b_ih + b_hh, both biases
   folded in here);
2. the recurrence, step by step: only ``h_{t-1} @ W_hh^T`` and the gate arithmetic remain;
   xw is cut into its steps by one ``unbind`` (views, no copies);
3. the outputs h_1..h_T joined by one ``stack`` (the next layer's input).

``bidirectional`` runs a second set of weights (suffix ``_reverse``) from t = T down to 1 and
concatenates the two outputs feature-wise (2 * hidden); layer l > 0 reads the previous layer's
output, with ``dropout`` on it between layers (training only). The parameters carry PyTorch's
names, shapes, gate order and initialisation, so state_dicts load both ways:

    weight_ih_l{k}{_reverse}  (G, input_size or D * out)   G = 4H (LSTM: i, f, g, o),
    weight_hh_l{k}{_reverse}  (G, out)                         3H (GRU: r, z, n), H (RNN)
    bias_ih_l{k}, bias_hh_l{k}  (G,)                        out = proj_size or H
    weight_hr_l{k}{_reverse}  (proj_size, H)                LSTM with proj_size only
    all drawn from U(-1/sqrt(H), 1/sqrt(H)).

Packed input (``nn.utils.rnn.PackedSequence``): step t runs on the first ``batch_sizes[t]``
rows only (the sequences are sorted by decreasing length); a sequence's final state is saved
when it ends. The input projection is still one matmul over all packed rows, cut per step by
one ``split``.

Shapes, with D = 2 if bidirectional else 1:
    input (T, B, input_size) ((B, T, input_size) with batch_first), or (T, input_size)
    unbatched, or a PackedSequence;  h_0 (num_layers * D, B, out) ((num_layers * D, out)
    unbatched); LSTM also c_0 (num_layers * D, B, H).
    output (T, B, D * out) (batch_first: (B, T, D * out)), h_n like h_0 (LSTM: (h_n, c_n)).

Differences from PyTorch: no cuDNN / fused kernels (the math is the same, rounding may differ
in the last bits), ``flatten_parameters()`` does nothing (there is no flat weight buffer).
"""
import math
import numbers
import warnings

import numpy as np

from ... import _autocast, creation
from ...autograd.grad_mode import no_grad
from ...ops.join import cat, stack
from ...tensor import Tensor
from ..functional.dropout import dropout as _dropout
from ..functional.linear import linear
from ..module import Module
from ..parameter import Parameter
from ..utils.rnn import PackedSequence

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


# ---- one time step of each cell -----------------------------------------------------------------
# step(x, state, w) -> (output h, new state tuple). x is this step's input projection
# x W_ih^T + b (for GRU the pair (r|z part, n part)); state is (h,) or (h, c); w is
# (W_hh, b_hh or None, W_hr or None).

def _rnn_tanh_step(x, state, w):
    h = (x + linear(state[0], w[0], w[1])).tanh()
    return h, (h,)


def _rnn_relu_step(x, state, w):
    h = (x + linear(state[0], w[0], w[1])).relu()
    return h, (h,)


def _lstm_step(x, state, w):
    h, c = state
    i, f, g, o = (x + linear(h, w[0], w[1])).chunk(4, 1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    h = o.sigmoid() * c.tanh()
    if w[2] is not None:
        h = linear(h, w[2])
    return h, (h, c)


def _gru_step(x, state, w):
    h = state[0]
    x_rz, x_n = x
    H = x_n.shape[-1]
    h_rz, h_n = linear(h, w[0], w[1]).split([2 * H, H], 1)
    r, z = (x_rz + h_rz).sigmoid().chunk(2, 1)
    n = (x_n + r * h_n).tanh()
    h = n + z * (h - n)                     # = (1 - z) * n + z * h
    return h, (h,)


_STEPS = {"RNN_TANH": _rnn_tanh_step, "RNN_RELU": _rnn_relu_step, "LSTM": _lstm_step,
          "GRU": _gru_step}


def _recur(step, steps, sizes, state, reverse, w):
    """Run `step` over the per-step inputs `steps` from state `state` (tuple of (B, *) tensors),
    forwards or backwards. Returns (outputs in time order, final state tuple (B, *)).

    sizes: None (every step has all B rows) or the packed batch sizes (non-increasing): step t
    then sees rows :sizes[t]. Forwards, rows whose sequence has ended are set aside and put
    back in order at the end; backwards, rows join (from the initial state) as their
    sequences begin."""
    T = len(steps)
    outs = [None] * T
    if sizes is None:
        for t in (range(T - 1, -1, -1) if reverse else range(T)):
            outs[t], state = step(steps[t], state, w)
        return outs, state
    if not reverse:
        done, cur = [], sizes[0]
        for t in range(T):
            b = sizes[t]
            if b < cur:
                done.append(tuple(s[b:cur] for s in state))
                state = tuple(s[:b] for s in state)
                cur = b
            outs[t], state = step(steps[t], state, w)
        if done:   # later pieces hold lower rows: cat(current, latest piece, ..., earliest)
            state = tuple(cat([s] + [d[k] for d in reversed(done)], 0)
                          for k, s in enumerate(state))
        return outs, state
    full, cur = state, sizes[-1]
    if cur < sizes[0]:
        state = tuple(s[:cur] for s in full)
    for t in range(T - 1, -1, -1):
        b = sizes[t]
        if b > cur:
            state = tuple(cat([s, f[cur:b]], 0) for s, f in zip(state, full))
            cur = b
        outs[t], state = step(steps[t], state, w)
    return outs, state


def _ints(t):
    return [int(v) for v in np.asarray(t._data if isinstance(t, Tensor) else t).reshape(-1)]


def _shape(t):
    return tuple(t.shape)


def _check_dtype(name, x, w):
    if x.dtype != w.dtype:
        raise ValueError(f"{name}: input dtype ({x.dtype}) does not match weight dtype "
                         f"({w.dtype}). Convert input: input.to({w.dtype}), or convert model: "
                         f"model.to({x.dtype})")


def _uniform_all(module, hidden_size):
    stdv = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0.0
    with no_grad():
        for p in module.parameters():
            p.uniform_(-stdv, stdv)


# ---- the sequence layers ------------------------------------------------------------------------
class RNNBase(Module):
    """The common base of RNN, LSTM and GRU (PyTorch's nn.RNNBase): parameters, checks, the
    layer/direction loop and packed sequences. ``mode`` is "RNN_TANH", "RNN_RELU", "LSTM" or
    "GRU". See the module docstring for the math, shapes and parameter names.

    Args:
        mode: "RNN_TANH", "RNN_RELU", "LSTM" or "GRU".
        input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
        proj_size: as documented on RNN and LSTM.

    Shape: as RNN's (LSTM's for mode="LSTM").
    """

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0, device=None,
                 dtype=None):
        super().__init__()
        name = {"RNN_TANH": "RNN", "RNN_RELU": "RNN"}.get(mode, mode)
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool)
                or not 0 <= dropout <= 1):
            raise ValueError(f"{name}: dropout should be a number in range [0, 1] representing "
                             f"the probability of an element being zeroed, got {dropout!r}")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=3)
        for arg, value, kind in (("bias", bias, bool), ("batch_first", batch_first, bool),
                                 ("bidirectional", bidirectional, bool),
                                 ("input_size", input_size, int),
                                 ("hidden_size", hidden_size, int),
                                 ("num_layers", num_layers, int), ("proj_size", proj_size, int)):
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                raise TypeError(f"{name}: {arg} should be of type {kind.__name__}, got: "
                                f"{type(value).__name__}")
        for arg, value in (("input_size", input_size), ("hidden_size", hidden_size),
                           ("num_layers", num_layers)):
            if value <= 0:
                raise ValueError(f"{name}: {arg} must be greater than zero, got {value}")
        if proj_size < 0:
            raise ValueError(f"{name}: proj_size should be a positive integer or zero to "
                             f"disable projections, got {proj_size}")
        if proj_size >= hidden_size:
            raise ValueError(f"{name}: proj_size has to be smaller than hidden_size, got "
                             f"proj_size={proj_size} and hidden_size={hidden_size}")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode = mode
        self.input_size, self.hidden_size = input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, proj_size
        gate_size = _GATES[mode] * hidden_size
        out = proj_size or hidden_size
        D = 2 if bidirectional else 1
        self._flat_weights_names, self._all_weights = [], []
        for layer in range(num_layers):
            for d in range(D):
                sfx = f"{layer}{'_reverse' if d else ''}"
                shapes = [(f"weight_ih_l{sfx}", (gate_size, input_size if layer == 0
                                                 else out * D)),
                          (f"weight_hh_l{sfx}", (gate_size, out))]
                if bias:
                    shapes += [(f"bias_ih_l{sfx}", (gate_size,)),
                               (f"bias_hh_l{sfx}", (gate_size,))]
                if proj_size:
                    shapes.append((f"weight_hr_l{sfx}", (proj_size, hidden_size)))
                for pname, shape in shapes:
                    setattr(self, pname, Parameter(creation.empty(*shape, dtype=dtype,
                                                                  device=device)))
                names = [n for n, _ in shapes]
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self):
        """Every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        _uniform_all(self, self.hidden_size)

    def flatten_parameters(self):
        """A no-op: PyTorch packs the weights into one buffer for cuDNN; there is none here."""

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        """The parameters per layer and direction: [[w_ih, w_hh, b_ih, b_hh, (w_hr)], ...]."""
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # ---- forward -------------------------------------------------------------------------------
    def _layer_weights(self, k):
        """(W_ih, W_hh, b_ih, b_hh, W_hr) of layer/direction k (None where absent)."""
        names = self._all_weights[k]
        w_ih, w_hh = getattr(self, names[0]), getattr(self, names[1])
        b_ih = getattr(self, names[2]) if self.bias else None
        b_hh = getattr(self, names[3]) if self.bias else None
        w_hr = getattr(self, names[-1]) if self.proj_size else None
        return w_ih, w_hh, b_ih, b_hh, w_hr

    def _check_hidden(self, name, states, x, batched, B):
        """Validate the initial state(s) given by the user; return them as (L*D, B, *)."""
        lstm = self.mode == "LSTM"
        want = 3 if batched else 2
        dims = tuple(s.dim() for s in states)
        if any(d != want for d in dims):
            kind = "batched 3-D" if batched else "unbatched 2-D"
            if lstm:
                raise RuntimeError(f"{name}: For {kind} input, hx and cx should also be {want}-D "
                                   f"but got ({dims[0]}-D, {dims[1]}-D) tensors")
            raise RuntimeError(f"{name}: For {kind} input, hx should also be {want}-D but got "
                               f"{dims[0]}-D tensor")
        if not batched:
            states = tuple(s.unsqueeze(1) for s in states)
        LD = self.num_layers * (2 if self.bidirectional else 1)
        expected = [(LD, B, self.proj_size or self.hidden_size), (LD, B, self.hidden_size)]
        for k, s in enumerate(states):
            if _shape(s) != expected[k]:
                what = f"hidden[{k}] size" if lstm else "hidden size"
                raise RuntimeError(f"{name}: Expected {what} {expected[k]}, got "
                                   f"{list(s.shape)}")
            _check_dtype(name, s, self.weight_ih_l0)
        return states

    def forward(self, input, hx=None):
        """(output, h_n) for RNN and GRU, (output, (h_n, c_n)) for LSTM; see the module
        docstring for the shapes. A PackedSequence input gives a PackedSequence output."""
        if (self.mode == "LSTM" and _autocast.State.active is not None and not self.proj_size
                and not isinstance(input, PackedSequence)):
            return self._autocast_lstm(input, hx)
        name = self._get_name()
        lstm = self.mode == "LSTM"
        packed = isinstance(input, PackedSequence)
        if packed:
            x, batch_sizes, sorted_indices, unsorted_indices = input
            sizes = _ints(batch_sizes)
            if not isinstance(x, Tensor) or x.dim() != 2:
                raise RuntimeError(f"{name}: a packed input's data must be a 2-D tensor (sum "
                                   f"of lengths, input_size), got "
                                   f"{_shape(x) if isinstance(x, Tensor) else type(x).__name__}")
            if not sizes or sum(sizes) != x.shape[0] or any(
                    b > a for a, b in zip(sizes, sizes[1:])) or sizes[-1] <= 0:
                raise RuntimeError(f"{name}: invalid PackedSequence: batch_sizes {sizes} must be "
                                   f"positive, non-increasing and sum to the {x.shape[0]} rows "
                                   f"of data")
            batched, B = True, sizes[0]
        else:
            if not isinstance(input, Tensor):
                raise TypeError(f"{name}: input must be a Tensor or a PackedSequence, got "
                                f"{type(input).__name__}")
            if input.dim() not in (2, 3):
                raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D "
                                 f"instead (input of shape {_shape(input)})")
            batched = input.dim() == 3
            x = input if batched else input.unsqueeze(0 if self.batch_first else 1)
            B = x.shape[0 if self.batch_first else 1]
            if x.shape[1 if self.batch_first else 0] == 0:
                raise RuntimeError(f"{name}: Expected sequence length to be larger than 0 in "
                                   f"RNN (input of shape {_shape(input)})")
            sizes = sorted_indices = unsorted_indices = None
        _check_dtype(name, x, self.weight_ih_l0)
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"{name}: input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {x.shape[-1]} (input of shape "
                               f"{_shape(x)}{', packed' if packed else ''})")
        LD = self.num_layers * (2 if self.bidirectional else 1)
        if hx is None:
            states = (creation.zeros(LD, B, self.proj_size or self.hidden_size, dtype=x.dtype),)
            if lstm:
                states += (creation.zeros(LD, B, self.hidden_size, dtype=x.dtype),)
        else:
            if lstm:
                if not (isinstance(hx, (tuple, list)) and len(hx) == 2
                        and all(isinstance(s, Tensor) for s in hx)):
                    raise TypeError(f"{name}: hx must be a tuple (h_0, c_0) of two Tensors, "
                                    f"got {type(hx).__name__}")
                states = tuple(hx)
            else:
                if not isinstance(hx, Tensor):
                    raise TypeError(f"{name}: hx must be a Tensor, got {type(hx).__name__}")
                states = (hx,)
            states = self._check_hidden(name, states, x, batched, B)
            if sorted_indices is not None:
                states = tuple(s.index_select(1, sorted_indices) for s in states)
        output, finals = self._run(x, states, sizes)
        if packed:
            if unsorted_indices is not None:
                finals = tuple(f.index_select(1, unsorted_indices) for f in finals)
            output = PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices)
        elif not batched:
            output = output.squeeze(0 if self.batch_first else 1)
            finals = tuple(f.squeeze(1) for f in finals)
        return output, (finals if lstm else finals[0])

    def _autocast_lstm(self, input, hx):
        """LSTM on a padded (not packed) input without proj_size under autocast: the case that
        PyTorch's CPU autocast runs as mkldnn_rnn_layer, which is on its lower-precision list,
        so output, h_n and c_n come out in the autocast dtype (RNN and GRU stay float32).
        Here the LSTM runs as an "fp32" op (inputs to float32, autocast off) and its results
        are rounded once to that dtype; gradients reach the float32 weights through the casts."""
        lower = _autocast.State.active
        output, (h, c) = _autocast.run_with_policy("fp32", self.forward, (input, hx), {})
        return output.to(lower), (h.to(lower), c.to(lower))

    def _run(self, x, states, sizes):
        """All layers and directions: x (T, B, I) / (B, T, I) / packed (N, I), states a tuple
        of (L*D, B, *) -> (output, tuple of final states (L*D, B, *))."""
        D = 2 if self.bidirectional else 1
        H = self.hidden_size
        packed = sizes is not None
        time_dim = 1 if self.batch_first else 0
        step = _STEPS[self.mode]
        gru = self.mode == "GRU"
        init = [s.unbind(0) for s in states]
        finals = [[] for _ in states]

        def per_step(t):                                 # cut a projection into its steps
            return t.split(sizes, 0) if packed else t.unbind(time_dim)

        for layer in range(self.num_layers):
            outs = []
            for d in range(D):
                k = layer * D + d
                w_ih, w_hh, b_ih, b_hh, w_hr = self._layer_weights(k)
                if gru:     # b_hn sits inside r * (W_hn h + b_hn): b_hh stays in the step
                    xw_rz, xw_n = linear(x, w_ih, b_ih).split([2 * H, H], -1)
                    steps = list(zip(per_step(xw_rz), per_step(xw_n)))
                    w = (w_hh, b_hh, None)
                else:
                    b = None if b_ih is None else b_ih + b_hh
                    steps = per_step(linear(x, w_ih, b))
                    w = (w_hh, None, w_hr)
                hs, final = _recur(step, steps, sizes, tuple(s[k] for s in init), d == 1, w)
                outs.append(cat(hs, 0) if packed else stack(hs, time_dim))
                for lst, f in zip(finals, final):
                    lst.append(f)
            x = outs[0] if D == 1 else cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = _dropout(x, self.dropout, True)
        return x, tuple(stack(f, 0) for f in finals)


class RNN(RNNBase):
    """Elman RNN, stacked over ``num_layers`` (PyTorch's nn.RNN):

        h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)      (nonlinearity="relu": relu)

    Gradient (backpropagation through time), with a_t the pre-activation and
    dh_t = the gradient from the output at t plus the one coming back from step t+1:
    da_t = dh_t * (1 - h_t^2) (relu: dh_t * [a_t > 0]); dh_{t-1} += da_t W_hh;
    dx_t = da_t W_ih; dW_hh = sum_t da_t^T h_{t-1}; dW_ih = sum_t da_t^T x_t (one matmul
    over all steps); db_ih = db_hh = sum_t da_t.

    RNN(input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
    batch_first=False, dropout=0.0, bidirectional=False).  forward(input, hx=None) ->
    (output, h_n); shapes in the module docstring.

    Args:
        input_size: H_in, the features of x_t.
        hidden_size: H, the features of h_t.
        num_layers: stacked layers, each fed the previous one's outputs (default 1).
        nonlinearity: "tanh" (default) or "relu".
        bias: learn b_ih and b_hh (default True).
        batch_first: input and output are (N, L, *) instead of (L, N, *) (h_n keeps its layout).
        dropout: dropout on the outputs of every layer but the last (training only; default 0).
        bidirectional: run a second pass from the end; outputs are concatenated (D = 2).

    Shape: (D = 2 if bidirectional else 1)
        - input: (L, N, H_in), (N, L, H_in) with batch_first, (L, H_in) unbatched, or a
          PackedSequence.
        - hx: (D * num_layers, N, H) or (D * num_layers, H); default zeros.
        - output: (L, N, D * H) (batch_first: (N, L, D * H)), or a PackedSequence.
        - h_n: (D * num_layers, N, H), the last step of each layer.
    """

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None,
                 **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if kwargs:
            raise TypeError(f"RNN.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             f"'relu'.")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size,
                         hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    """Long short-term memory, stacked over ``num_layers`` (PyTorch's nn.LSTM). With
    a_t = x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh cut into four gates (order i, f, g, o):

        i = sigmoid(a_i)   f = sigmoid(a_f)   g = tanh(a_g)   o = sigmoid(a_o)
        c_t = f * c_{t-1} + i * g           h_t = o * tanh(c_t)
        with proj_size: h_t = (o * tanh(c_t)) W_hr^T   (h is proj_size wide, W_hh (4H, P))

    Gradient (BPTT), dh_t and dc_t the gradients reaching step t from its output and from
    step t+1: dc_t += dh_t * o * (1 - tanh^2 c_t); da_o = dh_t * tanh(c_t) * o (1 - o);
    da_i = dc_t * g * i (1 - i); da_f = dc_t * c_{t-1} * f (1 - f); da_g = dc_t * i (1 - g^2);
    dc_{t-1} = dc_t * f; dh_{t-1} = da W_hh; dW_hh = sum_t da_t^T h_{t-1};
    dW_ih = sum_t da_t^T x_t; db = sum_t da_t. The cell path c_{t-1} -> c_t is multiplied by
    f only, which is why gradients survive many steps better than in a plain RNN.

    LSTM(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, proj_size=0).  forward(input, (h_0, c_0)=None) ->
    (output, (h_n, c_n)); shapes in the module docstring.

    Args:
        input_size: H_in, the features of x_t.
        hidden_size: H, the features of h_t.
        num_layers: stacked layers, each fed the previous one's outputs (default 1).
        bias: learn b_ih and b_hh (default True).
        batch_first: input and output are (N, L, *) instead of (L, N, *) (h_n keeps its layout).
        dropout: dropout on the outputs of every layer but the last (training only; default 0).
        bidirectional: run a second pass from the end; outputs are concatenated (D = 2).
        proj_size: P > 0 projects h_t to P features (W_hr); 0 (default) for none.

    Shape: (D = 2 if bidirectional else 1)
        - input: (L, N, H_in), (N, L, H_in) with batch_first, (L, H_in) unbatched, or a
          PackedSequence.
        - (h_0, c_0): (D * num_layers, N, H_out) and (D * num_layers, N, H), H_out = P or H;
          default zeros.
        - output: (L, N, D * H_out) (batch_first: (N, L, D * H_out)), or a PackedSequence.
        - (h_n, c_n): the last step's states, shaped like (h_0, c_0).
    """

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device=device, dtype=dtype)


class GRU(RNNBase):
    """Gated recurrent unit, stacked over ``num_layers`` (PyTorch's nn.GRU). Gates in the
    order r, z, n:

        r = sigmoid(x W_ir^T + b_ir + h W_hr^T + b_hr)
        z = sigmoid(x W_iz^T + b_iz + h W_hz^T + b_hz)
        n = tanh(x W_in^T + b_in + r * (h W_hn^T + b_hn))
        h_t = (1 - z) * n + z * h_{t-1}

    Gradient (BPTT), dh_t the gradient reaching h_t: dn = dh_t (1 - z), dz = dh_t (h_{t-1} - n),
    da_n = dn (1 - n^2), dr = da_n * (h W_hn^T + b_hn), da_r = dr r (1 - r),
    da_z = dz z (1 - z); dh_{t-1} = dh_t z + [da_r, da_z, da_n * r] W_hh; dW_ih, dW_hh, the
    biases: the gate gradients summed over steps against x_t and h_{t-1}.

    GRU(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False).  forward(input, hx=None) -> (output, h_n).

    Args:
        input_size: H_in, the features of x_t.
        hidden_size: H, the features of h_t.
        num_layers: stacked layers, each fed the previous one's outputs (default 1).
        bias: learn b_ih and b_hh (default True).
        batch_first: input and output are (N, L, *) instead of (L, N, *) (h_n keeps its layout).
        dropout: dropout on the outputs of every layer but the last (training only; default 0).
        bidirectional: run a second pass from the end; outputs are concatenated (D = 2).

    Shape: (D = 2 if bidirectional else 1)
        - input: (L, N, H_in), (N, L, H_in) with batch_first, (L, H_in) unbatched, or a
          PackedSequence.
        - hx: (D * num_layers, N, H) or (D * num_layers, H); default zeros.
        - output: (L, N, D * H) (batch_first: (N, L, D * H)), or a PackedSequence.
        - h_n: (D * num_layers, N, H), the last step of each layer.
    """

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if kwargs:
            raise TypeError(f"GRU.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, device=device, dtype=dtype)


# ---- the cells ----------------------------------------------------------------------------------
class RNNCellBase(Module):
    """The common base of the cells: weight_ih (chunks*H, input_size), weight_hh
    (chunks*H, H), bias_ih, bias_hh (chunks*H,), all U(-1/sqrt(H), 1/sqrt(H)); input (B, I)
    or unbatched (I,), hidden (B, H) or (H,).

    Args:
        input_size: I; hidden_size: H; bias: learn the biases; num_chunks: gates (1, 3 or 4).

    Shape: input (B, I) or (I,); hidden (B, H) or (H,).
    """

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        name = self._get_name()
        for arg, value in (("input_size", input_size), ("hidden_size", hidden_size)):
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name}: {arg} must be a positive int, got {value!r}")
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        G = num_chunks * hidden_size
        self.weight_ih = Parameter(creation.empty(G, input_size, dtype=dtype, device=device))
        self.weight_hh = Parameter(creation.empty(G, hidden_size, dtype=dtype, device=device))
        if bias:
            self.bias_ih = Parameter(creation.empty(G, dtype=dtype, device=device))
            self.bias_hh = Parameter(creation.empty(G, dtype=dtype, device=device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        _uniform_all(self, self.hidden_size)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _prepare(self, input, hx, n_states):
        """Check input and hidden state(s); return (input (B, I), states (B, H)..., batched)."""
        name = self._get_name()
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}: input must be a Tensor, got {type(input).__name__}")
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D "
                             f"instead (input of shape {_shape(input)})")
        _check_dtype(name, input, self.weight_ih)
        batched = input.dim() == 2
        x = input if batched else input.unsqueeze(0)
        if x.shape[1] != self.input_size:
            raise RuntimeError(f"{name}: input has inconsistent input_size: got {x.shape[1]} "
                               f"expected {self.input_size} (input of shape {_shape(input)})")
        B = x.shape[0]
        if hx is None:
            states = tuple(creation.zeros(B, self.hidden_size, dtype=x.dtype)
                           for _ in range(n_states))
            return x, states, batched
        if n_states == 2:
            if not (isinstance(hx, (tuple, list)) and len(hx) == 2
                    and all(isinstance(s, Tensor) for s in hx)):
                raise TypeError(f"{name}: hx must be a tuple (h, c) of two Tensors, got "
                                f"{type(hx).__name__}")
            states = tuple(hx)
        else:
            if not isinstance(hx, Tensor):
                raise TypeError(f"{name}: hx must be a Tensor, got {type(hx).__name__}")
            states = (hx,)
        out = []
        for k, s in enumerate(states):
            if s.dim() not in (1, 2):
                raise ValueError(f"{name}: Expected hidden to be 1D or 2D, got {s.dim()}D "
                                 f"instead (hidden{k} of shape {_shape(s)})")
            if s.dim() != input.dim():
                raise RuntimeError(f"{name}: for {input.dim()}-D input of shape "
                                   f"{_shape(input)}, hidden{k} must be {input.dim()}-D too, "
                                   f"got shape {_shape(s)}")
            s = s if batched else s.unsqueeze(0)
            if s.shape[0] != B:
                raise RuntimeError(f"{name}: Input batch size {B} doesn't match hidden{k} batch "
                                   f"size {s.shape[0]} (input {_shape(input)}, hidden{k} "
                                   f"{_shape(states[k])})")
            if s.shape[1] != self.hidden_size:
                raise RuntimeError(f"{name}: hidden{k} has inconsistent hidden_size: got "
                                   f"{s.shape[1]}, expected {self.hidden_size}")
            _check_dtype(name, s, self.weight_ih)
            out.append(s)
        return x, tuple(out), batched


class RNNCell(RNNCellBase):
    """One Elman RNN step (PyTorch's nn.RNNCell):

        h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)        (nonlinearity="relu": relu)

    Gradient: da = dh' * (1 - h'^2) (relu: dh' * [a > 0]); dx = da W_ih; dh = da W_hh;
    dW_ih = da^T x; dW_hh = da^T h; db_ih = db_hh = sum of da over the batch.
    forward(input (B, I) or (I,), hx=None (zeros)) -> h' (B, H) or (H,).

    Args:
        input_size: I, the features of x.
        hidden_size: H, the features of h.
        bias: learn b_ih and b_hh (default True).
        nonlinearity: "tanh" (default) or "relu".

    Shape: input (B, I) or (I,); hx and the output (B, H) or (H,).
    """

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNNCell: Unknown nonlinearity: {nonlinearity} (select from "
                             f"'tanh' or 'relu')")
        super().__init__(input_size, hidden_size, bias, 1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        x, (h,), batched = self._prepare(input, hx, 1)
        step = _rnn_tanh_step if self.nonlinearity == "tanh" else _rnn_relu_step
        h, _ = step(linear(x, self.weight_ih, self.bias_ih), (h,),
                    (self.weight_hh, self.bias_hh, None))
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step (PyTorch's nn.LSTMCell); gates in the order i, f, g, o:

        i, f, g, o = sigmoid, sigmoid, tanh, sigmoid of (x W_ih^T + b_ih + h W_hh^T + b_hh)
        c' = f * c + i * g         h' = o * tanh(c')

    Gradient, for dh', dc' given: dc = dc' + dh' * o * (1 - tanh^2 c') then
    da_o = dh' tanh(c') o (1 - o), da_i = dc g i (1 - i), da_f = dc c f (1 - f),
    da_g = dc i (1 - g^2); d(c) = dc f; dh = da W_hh; dx = da W_ih; dW = da^T [x | h].
    forward(input (B, I) or (I,), hx=(h, c) or None (zeros)) -> (h', c').

    Args:
        input_size: I, the features of x.
        hidden_size: H, the features of h and c.
        bias: learn b_ih and b_hh (default True).

    Shape: input (B, I) or (I,); h, c, h', c' (B, H) or (H,).
    """

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        x, state, batched = self._prepare(input, hx, 2)
        _, (h, c) = _lstm_step(linear(x, self.weight_ih, self.bias_ih), state,
                               (self.weight_hh, self.bias_hh, None))
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step (PyTorch's nn.GRUCell); gates in the order r, z, n:

        r = sigmoid(x W_ir^T + b_ir + h W_hr^T + b_hr)
        z = sigmoid(x W_iz^T + b_iz + h W_hz^T + b_hz)
        n = tanh(x W_in^T + b_in + r * (h W_hn^T + b_hn))
        h' = (1 - z) * n + z * h

    Gradient: dn = dh' (1 - z), dz = dh' (h - n), da_n = dn (1 - n^2),
    da_r = da_n (h W_hn^T + b_hn) r (1 - r), da_z = dz z (1 - z);
    dh = dh' z + [da_r, da_z, da_n r] W_hh; dx = [da_r, da_z, da_n] W_ih.
    forward(input (B, I) or (I,), hx=None (zeros)) -> h' (B, H) or (H,).

    Args:
        input_size: I, the features of x.
        hidden_size: H, the features of h.
        bias: learn b_ih and b_hh (default True).

    Shape: input (B, I) or (I,); hx and the output (B, H) or (H,).
    """

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        x, (h,), batched = self._prepare(input, hx, 1)
        H = self.hidden_size
        xw = linear(x, self.weight_ih, self.bias_ih).split([2 * H, H], 1)
        h, _ = _gru_step(xw, (h,), (self.weight_hh, self.bias_hh, None))
        return h if batched else h.squeeze(0)
