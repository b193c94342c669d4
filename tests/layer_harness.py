"""The table-driven layer harness: one `LayerRow` per layer configuration, checked against the
same layer built in PyTorch with the same weights.

``build(nn)`` is called with ``minitorch_edge.nn`` and with ``torch.nn`` (give ``torch_build``
when the spellings differ). Our module receives torch's initial weights through
``load_state_dict`` (so parameter and buffer names must match PyTorch's). For each row and mode
(train / eval) the check compares, on inputs from ``make_inputs(rng)``:

* the output(s) at float32 assert_close tolerances (row.rtol/atol override with a reason);
* the gradients of the inputs and of every parameter, for a random upstream gradient;
* the buffers after the forward pass (e.g. BatchNorm's running statistics).

Random layers (dropout) set ``deterministic=False``: only shapes and statistics are compared.
"""
import dataclasses
from typing import Callable, Optional

import numpy as np

import minitorch_edge as mte
from harness import import_torch


@dataclasses.dataclass
class LayerRow:
    name: str
    build: Callable                     # build(nn) -> module
    make_inputs: Callable               # make_inputs(rng) -> list of numpy arrays
    torch_build: Optional[Callable] = None
    call: Optional[Callable] = None     # call(module, *inputs) -> output(s); default module(*x)
    modes: tuple = ("train", "eval")
    grad_inputs: Optional[tuple] = None  # indices of inputs to differentiate (default: floats)
    rtol: Optional[float] = None
    atol: Optional[float] = None
    deterministic: bool = True


def randn(*shape):
    return lambda rng: [rng.standard_normal(shape).astype(np.float32)]


def _outs(x):
    if isinstance(x, (tuple, list)):
        out = []
        for v in x:
            out.extend(_outs(v))
        return out
    return [x] if x is not None else []


def copy_weights(ours, theirs):
    """Load torch module `theirs`'s state into our module (names must match)."""
    state = {k: mte.tensor(v.detach().numpy().copy()) for k, v in theirs.state_dict().items()}
    ours.load_state_dict(state)


def check_layer(row, seed=0):
    torch = import_torch()
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    theirs = (row.torch_build or row.build)(torch.nn)
    ours = row.build(mte.nn)
    copy_weights(ours, theirs)
    for mode in row.modes:
        ours.train(mode == "train")
        theirs.train(mode == "train")
        arrays = [np.asarray(a) for a in row.make_inputs(rng)]
        diff = row.grad_inputs if row.grad_inputs is not None else \
            tuple(i for i, a in enumerate(arrays) if a.dtype.kind == "f")
        o_in = [mte.tensor(a, requires_grad=i in diff) for i, a in enumerate(arrays)]
        t_in = [torch.tensor(a, requires_grad=i in diff) for i, a in enumerate(arrays)]
        call = row.call or (lambda m, *xs: m(*xs))
        o_out, t_out = _outs(call(ours, *o_in)), _outs(call(theirs, *t_in))
        assert len(o_out) == len(t_out), f"{row.name}: {len(o_out)} outputs vs {len(t_out)}"
        kw = {} if row.rtol is None else dict(rtol=row.rtol, atol=row.atol)
        for k, (o, t) in enumerate(zip(o_out, t_out)):
            assert tuple(o.shape) == tuple(t.shape), \
                f"{row.name} [{mode}] output {k}: shape {tuple(o.shape)} vs {tuple(t.shape)}"
            if row.deterministic:
                torch.testing.assert_close(torch.from_numpy(np.array(o.detach().numpy())),
                                           t.detach(), check_dtype=False, equal_nan=True, **kw,
                                           msg=lambda m: f"{row.name} [{mode}] output {k}: {m}")
        if not row.deterministic:
            continue
        o_params = dict(ours.named_parameters())
        t_params = dict(theirs.named_parameters())
        assert sorted(o_params) == sorted(t_params), f"{row.name}: parameter names differ"
        floats = [k for k, t in enumerate(t_out) if t.requires_grad]
        if floats:
            ups = [rng.standard_normal(tuple(t_out[k].shape)).astype(np.float32) for k in floats]
            t_loss = sum((t_out[k] * torch.from_numpy(u)).sum() for k, u in zip(floats, ups))
            o_loss = sum((o_out[k] * mte.tensor(u)).sum() for k, u in zip(floats, ups))
            names = sorted(n for n, p in t_params.items() if p.requires_grad)
            t_targets = [t_in[i] for i in diff] + [t_params[n] for n in names]
            o_targets = [o_in[i] for i in diff] + [o_params[n] for n in names]
            t_grads = torch.autograd.grad(t_loss, t_targets, allow_unused=True)
            o_grads = mte.autograd.grad(o_loss, o_targets, allow_unused=True)
            labels = [f"input {i}" for i in diff] + names
            for label, og, tg in zip(labels, o_grads, t_grads):
                if tg is None:
                    assert og is None or not np.any(og.numpy()), f"{row.name}: {label}"
                    continue
                assert og is not None, f"{row.name} [{mode}]: no gradient for {label}"
                torch.testing.assert_close(torch.from_numpy(np.array(og.numpy())), tg,
                                           check_dtype=False, **kw,
                                           msg=lambda m: f"{row.name} [{mode}] grad {label}: {m}")
        o_bufs, t_bufs = dict(ours.named_buffers()), dict(theirs.named_buffers())
        for name, tb in t_bufs.items():
            ob = o_bufs[name]
            torch.testing.assert_close(torch.from_numpy(np.array(ob.numpy())), tb,
                                       check_dtype=False, **kw,
                                       msg=lambda m: f"{row.name} [{mode}] buffer {name}: {m}")


def make_layer_tests(table, namespace):
    import pytest

    @pytest.mark.parametrize("row", table, ids=[r.name for r in table])
    @pytest.mark.parametrize("seed", [0, 1])
    def test_layer_against_torch(row, seed):
        check_layer(row, seed)

    namespace["test_layer_against_torch"] = test_layer_against_torch
