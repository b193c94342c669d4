"""Trainer(precision=...): "bf16" equals a hand-written autocast loop step for step; "16-mixed"
adds a GradScaler (scaled backward, unscale_ before clipping, skipped steps) and checkpoints
it; "32" is the float32 loop; an unknown spelling is a clear error."""
import numpy as np
import pytest

import minitorch_edge as mte
import minitorch_edge.nn.functional as F
from minitorch_edge import nn
from minitorch_edge.data import DataLoader, TensorDataset
from minitorch_edge.train import Trainer


def _setup(seed=0):
    mte.manual_seed(seed)
    rng = np.random.default_rng(seed)
    x = mte.tensor(rng.standard_normal((32, 6)).astype(np.float32))
    y = mte.tensor((rng.standard_normal(32) > 0).astype(np.int64))
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2))
    opt = mte.optim.SGD(model.parameters(), lr=0.1)
    return model, opt, DataLoader(TensorDataset(x, y), batch_size=8)


def _by_hand(precision_dtype, scaler=None, clip=None):
    model, opt, loader = _setup()
    for xb, yb in loader:
        with mte.autocast("cpu", dtype=precision_dtype):
            loss = F.cross_entropy(model(xb), yb)
        (loss if scaler is None else scaler.scale(loss)).backward()
        if scaler is not None:
            scaler.unscale_(opt)
        if clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        if scaler is None:
            opt.step()
        else:
            scaler.step(opt)
            scaler.update()
        opt.zero_grad()
    return model


def _trained(precision, **kwargs):
    model, opt, loader = _setup()
    trainer = Trainer(model, opt, F.cross_entropy, verbose=0, precision=precision, **kwargs)
    trainer.fit(loader, epochs=1)
    return model, trainer


@pytest.mark.parametrize("precision", ["bf16", "bf16-mixed"])
def test_bf16_equals_the_autocast_loop(precision):
    model, trainer = _trained(precision)
    assert trainer.scaler is None and trainer.precision == "bf16-mixed"
    want = _by_hand(mte.bfloat16)
    for p, q in zip(model.parameters(), want.parameters()):
        assert p.dtype == mte.float32
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


@pytest.mark.parametrize("precision", ["16", "16-mixed", "fp16"])
def test_fp16_uses_a_grad_scaler(precision):
    model, trainer = _trained(precision, grad_clip_norm=1.0)
    assert trainer.scaler is not None and trainer.scaler.is_enabled()
    want = _by_hand(mte.float16, mte.amp.GradScaler("cpu"), clip=1.0)
    for p, q in zip(model.parameters(), want.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    state = trainer.state_dict()
    assert state["grad_scaler"] == trainer.scaler.state_dict()
    trainer.scaler.update(5.0)
    trainer.load_state_dict(state)
    assert trainer.scaler.get_scale() == state["grad_scaler"]["scale"]


def test_32_is_float32_and_bad_precision_raises():
    model, trainer = _trained("32-true")
    assert trainer.scaler is None and trainer._autocast_dtype is None
    with pytest.raises(ValueError, match="Trainer: precision must be one of"):
        _trained("bf17")
