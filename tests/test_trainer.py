"""Trainer, callbacks and metrics: exact resume, early stopping, checkpoints, gradient
accumulation, nan detection, clipping, schedulers, progress output and metric arithmetic."""
import io
import math
import os
import re
import sys

import numpy as np
import pytest

import minitorch_edge as mte
from minitorch_edge import nn, optim
from minitorch_edge.data import DataLoader, TensorDataset
from minitorch_edge.train import (Accuracy, BatchMean, Callback, EarlyStopping, LambdaCallback,
                                  LearningRateMonitor, ModelCheckpoint, NonFiniteLossError,
                                  RunningMean, TopKAccuracy, Trainer, accuracy, confusion_matrix,
                                  top_k_accuracy)
from minitorch_edge.utils import load, save


# ---- helpers -------------------------------------------------------------------------------------
def blobs(n=240, classes=3, features=4, seed=0, spread=0.6):
    """Gaussian blobs around well separated centres: an easy classification problem."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=3.0, size=(classes, features))
    y = rng.integers(0, classes, n)
    x = centres[y] + rng.normal(scale=spread, size=(n, features))
    return mte.tensor(x.astype(np.float32)), mte.tensor(y.astype(np.int64))


def loaders(batch_size=16, shuffle=True, n=240):
    x, y = blobs(n)
    vx, vy = blobs(96, seed=1)
    return (DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=shuffle),
            DataLoader(TensorDataset(vx, vy), batch_size=32))


def mlp(dropout=0.0, features=4, classes=3):
    layers = [nn.Linear(features, 16), nn.ReLU()]
    if dropout:
        layers.append(nn.Dropout(dropout))
    return nn.Sequential(*layers, nn.Linear(16, classes))


def params(model):
    return {k: v.numpy().copy() for k, v in model.state_dict().items()}


class StepLosses(Callback):
    def __init__(self):
        self.losses = []

    def on_batch_end(self, trainer, step, logs):
        self.losses.append(logs["loss"])


# ---- checkpoint / resume -------------------------------------------------------------------------
def _resume_setup(seed_model=0):
    mte.manual_seed(seed_model)
    model = mlp(dropout=0.2)                       # dropout: the default generator matters
    opt = optim.Adam(model.parameters(), lr=0.01)
    sched = optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.7)
    rec = StepLosses()
    es = EarlyStopping(patience=10)
    trainer = Trainer(model, opt, nn.CrossEntropyLoss(), scheduler=sched, callbacks=[rec, es],
                      verbose=0)
    return trainer, rec


def test_resume_equals_uninterrupted_run(tmp_path):
    mte.manual_seed(123)
    train, val = loaders()
    straight, rec_a = _resume_setup()
    mte.manual_seed(7)
    straight.fit(train, val, epochs=4)

    first, rec_b = _resume_setup()
    mte.manual_seed(7)
    first.fit(train, val, epochs=2)
    path = tmp_path / "ckpt.safetensors"
    first.save_checkpoint(path)
    # disturb every RNG, as a fresh process would have different states
    mte.manual_seed(999)
    np.random.seed(5)
    import random
    random.seed(5)
    second, rec_c = _resume_setup(seed_model=42)   # a different initialisation, overwritten
    second.fit(train, val, epochs=4, resume_from=path)

    assert len(rec_a.losses) == 4 * len(train)
    assert rec_b.losses == rec_a.losses[:2 * len(train)]
    assert rec_c.losses == rec_a.losses[2 * len(train):]          # exact, bit for bit
    for k, v in params(straight.model).items():
        np.testing.assert_array_equal(v, params(second.model)[k])
    assert second.epoch == 4 and second.global_step == straight.global_step
    assert second.history.history == straight.history.history
    assert second.history.epoch == [1, 2, 3, 4]
    assert second.optimizer.param_groups[0]["lr"] == straight.optimizer.param_groups[0]["lr"]
    assert second.callbacks[1].best == straight.callbacks[1].best


SCHEDULERS = {
    "onecycle": lambda opt, n: optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, epochs=4,
                                                             steps_per_epoch=n),
    "cyclic": lambda opt, n: optim.lr_scheduler.CyclicLR(opt, 0.001, 0.05, step_size_up=5),
    "plateau": lambda opt, n: optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0,
                                                                    threshold=0.5),
    "lambda": lambda opt, n: optim.lr_scheduler.LambdaLR(opt, lambda e: 0.5 ** e),
    "cosine_restarts": lambda opt, n: optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, 2),
}


@pytest.mark.parametrize("kind", sorted(SCHEDULERS))
def test_resume_with_each_scheduler(tmp_path, kind):
    train, val = loaders()

    def make():
        mte.manual_seed(0)
        model = mlp()
        opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        rec = StepLosses()
        lrs = LearningRateMonitor("step")
        return Trainer(model, opt, nn.CrossEntropyLoss(),
                       scheduler=SCHEDULERS[kind](opt, len(train)),
                       callbacks=[rec, lrs], verbose=0), rec, lrs
    a, rec_a, lr_a = make()
    mte.manual_seed(1)
    a.fit(train, val, epochs=4)
    b, rec_b, _ = make()
    mte.manual_seed(1)
    b.fit(train, val, epochs=2)
    b.save_checkpoint(tmp_path / "c.safetensors")
    c, rec_c, lr_c = make()
    c.fit(train, val, epochs=4, resume_from=tmp_path / "c.safetensors")
    assert rec_c.losses == rec_a.losses[2 * len(train):]
    assert lr_c.lrs["lr-SGD"] == lr_a.lrs["lr-SGD"][2 * len(train):]
    assert len(set(lr_a.lrs["lr-SGD"])) > 1                     # the schedule did move


def test_resume_from_model_checkpoint_last(tmp_path):
    mte.manual_seed(3)
    train, val = loaders()
    a, rec_a = _resume_setup()
    a.fit(train, val, epochs=3)
    mte.manual_seed(3)
    b, rec_b = _resume_setup()
    b.callbacks.append(ModelCheckpoint(tmp_path, save_best=False))
    b.fit(train, val, epochs=2)
    c, rec_c = _resume_setup(seed_model=1)
    c.fit(train, val, epochs=3, resume_from=tmp_path / "last.safetensors")
    assert rec_c.losses == rec_a.losses[2 * len(train):]


def test_checkpoint_contents_and_bad_resume(tmp_path):
    train, val = loaders()
    t, _ = _resume_setup()
    t.fit(train, val, epochs=1)
    t.save_checkpoint(tmp_path / "c.safetensors")
    ck = load(tmp_path / "c.safetensors")
    assert {"model", "optimizer", "scheduler", "epoch", "global_step", "rng", "history"} <= set(ck)
    assert ck["epoch"] == 1 and ck["global_step"] == len(train)
    assert set(ck["rng"]) == {"minitorch_edge", "numpy", "python"}
    save(t.model.state_dict(), tmp_path / "weights.safetensors")
    t2, _ = _resume_setup()
    with pytest.raises(ValueError, match="not a Trainer checkpoint"):
        t2.fit(train, epochs=2, resume_from=tmp_path / "weights.safetensors")


def test_fit_epochs_is_the_final_epoch_count():
    train, val = loaders()
    t, rec = _resume_setup()
    t.fit(train, val, epochs=1)
    with pytest.warns(UserWarning, match="epochs=2 to train 1 more"):
        t.fit(train, val, epochs=1)
    assert t.epoch == 1
    t.fit(train, val, epochs=2)
    assert t.epoch == 2 and len(t.history) == 2


# ---- callbacks -----------------------------------------------------------------------------------
def _scripted(values, key="score"):
    """A callback that writes values[epoch - 1] into the epoch logs and snapshots the weights."""
    snaps = {}

    def on_epoch_end(trainer, logs):
        logs[key] = values[trainer.epoch - 1]
        snaps[trainer.epoch] = params(trainer.model)
    return LambdaCallback(on_epoch_end=on_epoch_end), snaps


def test_early_stopping_stops_at_the_right_epoch_and_restores_best():
    train, _ = loaders()
    script, snaps = _scripted([0.1, 0.5, 0.4, 0.45, 0.3, 0.9, 1.0])
    es = EarlyStopping(monitor="score", mode="max", patience=2, restore_best_weights=True)
    model = mlp()
    t = Trainer(model, optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(),
                callbacks=[script, es], verbose=0)
    t.fit(train, epochs=7)
    assert t.epoch == 4 and es.stopped_epoch == 4 and es.best_epoch == 2 and es.best == 0.5
    assert t.history["score"] == [0.1, 0.5, 0.4, 0.45]
    for k, v in params(model).items():
        np.testing.assert_array_equal(v, snaps[2][k])
    assert not np.array_equal(snaps[2]["0.weight"], snaps[4]["0.weight"])


def test_early_stopping_min_delta_and_missing_monitor():
    train, _ = loaders()
    script, _ = _scripted([1.0, 0.99, 0.98, 0.5, 0.4])
    es = EarlyStopping(monitor="score", mode="min", patience=2, min_delta=0.05)
    model = mlp()
    t = Trainer(model, optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(),
                callbacks=[script, es], verbose=0)
    t.fit(train, epochs=5)
    assert es.stopped_epoch == 3 and es.best_epoch == 1       # 0.99, 0.98: too small a gain
    t2 = Trainer(model, optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(),
                 callbacks=[EarlyStopping()], verbose=0)
    with pytest.raises(RuntimeError, match="'val_loss' is not in the epoch logs.*val_loader"):
        t2.fit(train, epochs=1)


def test_model_checkpoint_best_and_last_reload_identically(tmp_path):
    train, val = loaders()
    script, snaps = _scripted([0.9, 0.3, 0.5, 0.4], key="val_score")
    model = mlp()
    ck = ModelCheckpoint(tmp_path / "ck", monitor="val_score", mode="min",
                         filename="e{epoch:02d}-{val_score:.2f}")
    t = Trainer(model, optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(),
                callbacks=[script, ck], verbose=0)
    t.fit(train, val, epochs=4)
    files = sorted(os.listdir(tmp_path / "ck"))
    assert files == ["best.safetensors", "e01-0.90.safetensors", "e02-0.30.safetensors",
                     "e03-0.50.safetensors", "e04-0.40.safetensors", "last.safetensors"]
    assert ck.best_epoch == 2 and ck.best_model_score == 0.3
    x = blobs(50, seed=9)[0]
    for name, epoch in (("best", 2), ("last", 4)):
        reloaded = mlp()
        state = load(tmp_path / "ck" / f"{name}.safetensors")
        assert state["epoch"] == epoch
        reloaded.load_state_dict(state["model"])
        for k, v in params(reloaded).items():
            np.testing.assert_array_equal(v, snaps[epoch][k])
    reloaded.eval(), model.eval()
    with mte.no_grad():
        np.testing.assert_array_equal(reloaded(x).numpy(), model(x).numpy())


def test_model_checkpoint_weights_only_opens_in_safetensors(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    train, val = loaders()
    model = mlp()
    ck = ModelCheckpoint(tmp_path, save_weights_only=True)
    Trainer(model, optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(),
            callbacks=[ck], verbose=0).fit(train, val, epochs=2)
    flat = st.load_file(str(tmp_path / "last.safetensors"))
    assert set(flat) == set(model.state_dict())
    np.testing.assert_array_equal(flat["2.bias"], model.state_dict()["2.bias"].numpy())


def test_callback_hook_order():
    calls = []
    hooks = {h: (lambda h: lambda *a: calls.append(h))(h) for h in LambdaCallback._HOOKS}
    batches = [blobs(8, seed=s) for s in range(2)]
    model = mlp()
    Trainer(model, optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(),
            callbacks=[LambdaCallback(**hooks)], verbose=0).fit(batches, batches[:1], epochs=1)
    assert calls == ["on_fit_start", "on_epoch_start", "on_batch_start", "on_batch_end",
                     "on_batch_start", "on_batch_end", "on_validation_end", "on_epoch_end",
                     "on_fit_end"]


def test_learning_rate_monitor_per_step_and_epoch():
    train, _ = loaders()
    model = mlp()
    opt = optim.SGD([{"params": model[0].parameters()}, {"params": model[2].parameters(),
                                                          "lr": 0.05}], lr=0.1, momentum=0.9)
    sched = optim.lr_scheduler.StepLR(opt, 1, 0.5)
    per_epoch = LearningRateMonitor(log_momentum=True)
    per_step = LearningRateMonitor("step")
    t = Trainer(model, opt, nn.CrossEntropyLoss(), scheduler=sched,
                callbacks=[per_epoch, per_step], verbose=0)
    t.fit(train, epochs=2)
    assert per_epoch.lrs["lr-SGD/pg0"] == [0.1, 0.05]
    assert per_epoch.lrs["lr-SGD/pg1"] == [0.05, 0.025]
    assert per_epoch.lrs["momentum-SGD/pg0"] == [0.9, 0.9]
    assert t.history["lr-SGD/pg1"] == [0.05, 0.025]
    assert per_step.lrs["lr-SGD/pg0"] == [0.1] * len(train) + [0.05] * len(train)
    assert per_step.steps == list(range(1, 2 * len(train) + 1))


# ---- the training step ---------------------------------------------------------------------------
def test_gradient_accumulation_equals_a_larger_batch():
    mte.set_default_dtype(mte.float64)
    try:
        x, y = blobs(16)
        x = x.double()
        mte.manual_seed(0)
        big = mlp()
        mte.manual_seed(0)
        small = mlp()
        for model, batches, accum in ((big, [(x, y)], 1),
                                      (small, [(x[:8], y[:8]), (x[8:], y[8:])], 2)):
            opt = optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
            Trainer(model, opt, nn.CrossEntropyLoss(), grad_accum_steps=accum, metrics=None,
                    verbose=0).fit(batches * 3, epochs=2)           # 6 optimizer steps
        for k, v in params(big).items():
            np.testing.assert_allclose(params(small)[k], v, rtol=1e-12, atol=1e-14)
    finally:
        mte.set_default_dtype(mte.float32)


def test_gradient_accumulation_leftover_is_a_mean_of_the_present_batches():
    mte.set_default_dtype(mte.float64)
    try:
        x, y = blobs(24)
        x = x.double()
        mte.manual_seed(0)
        ref = mlp()
        mte.manual_seed(0)
        acc = mlp()
        opt = optim.SGD(ref.parameters(), lr=0.5)
        Trainer(ref, opt, nn.CrossEntropyLoss(), metrics=None, verbose=0).fit(
            [(x[:16], y[:16]), (x[16:], y[16:])], epochs=1)
        batches = [(x[i:i + 8], y[i:i + 8]) for i in range(0, 24, 8)]
        steps = []
        opt = optim.SGD(acc.parameters(), lr=0.5)
        opt.register_step_post_hook(lambda *a: steps.append(1))
        Trainer(acc, opt, nn.CrossEntropyLoss(), grad_accum_steps=2, metrics=None,
                verbose=0).fit(batches, epochs=1)
        assert len(steps) == 2
        for k, v in params(ref).items():
            np.testing.assert_allclose(params(acc)[k], v, rtol=1e-12, atol=1e-14)
    finally:
        mte.set_default_dtype(mte.float32)


class _NanLoader:
    """40 batches per epoch; batch 37 of the second epoch holds a nan."""

    def __init__(self):
        self.x, self.y = blobs(40 * 4)
        self.epoch = 0

    def __len__(self):
        return 40

    def __iter__(self):
        self.epoch += 1
        for i in range(40):
            x = self.x[4 * i:4 * i + 4]
            if self.epoch == 2 and i == 36:
                x = x.clone()
                x[1, 2] = float("nan")
            yield x, self.y[4 * i:4 * i + 4]


def test_nan_loss_stops_with_a_message_naming_the_step():
    model = mlp()
    t = Trainer(model, optim.SGD(model.parameters(), lr=0.01), nn.CrossEntropyLoss(), verbose=0)
    with pytest.raises(FloatingPointError,
                       match=r"loss is nan at epoch 2, step 37 \(global step 77\); .*lower the "
                             r"learning rate|Lower the learning rate") as info:
        t.fit(_NanLoader(), epochs=3)
    assert isinstance(info.value, RuntimeError) and isinstance(info.value, NonFiniteLossError)
    assert all(np.isfinite(v).all() for v in params(model).values())   # the update was skipped


def test_inf_loss_is_caught_too():
    model = mlp()
    t = Trainer(model, optim.SGD(model.parameters(), lr=0.01),
                lambda out, y: nn.functional.cross_entropy(out, y) * float("inf"), verbose=0)
    with pytest.raises(RuntimeError, match=r"loss is inf at epoch 1, step 1 \(global step 1\)"):
        t.fit([blobs(4)], epochs=1)


def test_grad_clipping_is_applied():
    x, y = blobs(64)
    norms = {}
    for clip in (None, 0.01):
        model = mlp()
        opt = optim.SGD(model.parameters(), lr=0.1)
        seen = []
        opt.register_step_pre_hook(lambda o, a, k: seen.append(
            math.sqrt(sum(float((p.grad.numpy().astype(np.float64) ** 2).sum())
                          for g in o.param_groups for p in g["params"]))))
        Trainer(model, opt, nn.CrossEntropyLoss(), grad_clip_norm=clip, verbose=0).fit(
            [(x, y)] * 3, epochs=1)
        norms[clip] = seen
    assert min(norms[None]) > 0.01
    assert max(norms[0.01]) <= 0.01 * (1 + 1e-4)


def test_batch_and_loss_errors_are_clear():
    model = mlp()
    t = Trainer(model, optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(), verbose=0)
    with pytest.raises(TypeError, match="batch must be an \\(inputs, targets\\).*unpack_batch"):
        t.fit([blobs(4)[0]], epochs=1)
    t = Trainer(model, optim.SGD(model.parameters(), lr=0.1),
                nn.CrossEntropyLoss(reduction="none"), verbose=0)
    with pytest.raises(ValueError, match=r"shape \(4,\).*reduction='mean'"):
        t.fit([blobs(4)], epochs=1)
    with pytest.raises(ValueError, match="unknown metric 'f1'"):
        Trainer(model, optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(),
                metrics=["f1"])
    with pytest.raises(ValueError, match="grad_accum_steps"):
        Trainer(model, optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(),
                grad_accum_steps=0)


# ---- evaluate / predict --------------------------------------------------------------------------
def test_evaluate_and_predict():
    x, y = blobs(50)
    model = mlp(dropout=0.5)
    batches = [(x[i:i + 16], y[i:i + 16]) for i in range(0, 50, 16)]      # last batch: 2
    t = Trainer(model, optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(),
                metrics={"acc": "accuracy", "top2": TopKAccuracy(2)}, verbose=0)
    model.train()
    result = t.evaluate(batches)
    assert model.training                                   # mode restored
    assert all(p.grad is None for p in model.parameters())  # no gradients
    model.eval()
    with mte.no_grad():
        out = model(x)
    expected = nn.functional.cross_entropy(out, y).item()
    assert result["loss"] == pytest.approx(expected, rel=1e-6)
    assert result["acc"] == accuracy(out, y)
    assert result["top2"] == top_k_accuracy(out, y, 2)
    model.train()
    pred = t.predict(batches)
    assert model.training
    np.testing.assert_allclose(pred.numpy(), out.numpy(), rtol=1e-6, atol=1e-6)
    pred2 = t.predict([b[0] for b in batches])              # bare input batches
    np.testing.assert_array_equal(pred.numpy(), pred2.numpy())


# ---- schedulers ----------------------------------------------------------------------------------
def test_scheduler_epoch_interval():
    train, _ = loaders()
    model = mlp()
    opt = optim.SGD(model.parameters(), lr=0.1)
    sched = optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.1)
    t = Trainer(model, opt, nn.CrossEntropyLoss(), scheduler=sched, verbose=0)
    t.fit(train, epochs=5)
    assert t.history["lr"] == pytest.approx([0.1, 0.1, 0.01, 0.01, 0.001])
    assert sched.last_epoch == 5


def test_scheduler_step_interval_onecycle():
    train, _ = loaders()
    model = mlp()
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = optim.lr_scheduler.OneCycleLR(opt, max_lr=0.5, epochs=2, steps_per_epoch=len(train))
    lrs = []
    t = Trainer(model, opt, nn.CrossEntropyLoss(), scheduler=sched, verbose=0,
                callbacks=[LambdaCallback(on_batch_end=lambda tr, s, logs: lrs.append(logs["lr"]))])
    assert t.scheduler_interval == "step"
    t.fit(train, epochs=2)
    assert sched.last_epoch == 2 * len(train)
    assert lrs[0] == pytest.approx(0.5 / 25) and max(lrs) == pytest.approx(0.5, rel=1e-3)
    # the same schedule stepped by hand
    opt2 = optim.SGD(mlp().parameters(), lr=0.1, momentum=0.9)
    s2 = optim.lr_scheduler.OneCycleLR(opt2, max_lr=0.5, epochs=2, steps_per_epoch=len(train))
    manual = []
    for _ in range(2 * len(train)):
        manual.append(opt2.param_groups[0]["lr"])
        opt2.step()
        s2.step()
    assert lrs == manual


def test_reduce_lr_on_plateau_uses_the_monitored_value():
    train, val = loaders()
    model = mlp()
    opt = optim.SGD(model.parameters(), lr=0.05)
    sched = optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", patience=1, factor=0.5)
    # a validation metric that never improves: lr halves after every 2 bad epochs
    t = Trainer(model, opt, nn.CrossEntropyLoss(), scheduler=sched, verbose=0,
                metrics={"const": lambda out, y: 1.0}, scheduler_monitor="val_const")
    t.fit(train, val, epochs=5)
    assert t.history["lr"] == pytest.approx([0.05, 0.05, 0.05, 0.025, 0.025])
    assert opt.param_groups[0]["lr"] == pytest.approx(0.0125)
    with pytest.raises(ValueError, match="monitors 'val_const' but no val_loader"):
        t.fit(train, epochs=6)
    t2 = Trainer(model, opt, nn.CrossEntropyLoss(), scheduler=sched, scheduler_monitor="loss",
                 verbose=0)
    t2.fit(train, epochs=1)


# ---- output --------------------------------------------------------------------------------------
def test_plain_log_lines_when_not_a_terminal(capsys):
    train, val = loaders()
    model = mlp()
    Trainer(model, optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss()).fit(
        train, val, epochs=2)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    pattern = (r"epoch {}/2  loss \d+\.\d{{4}}  accuracy \d\.\d{{4}}  val_loss \d+\.\d{{4}}  "
               r"val_accuracy \d\.\d{{4}}  lr 1\.0e-01  \d+\.\ds")
    for i, line in enumerate(lines, 1):
        assert re.fullmatch(pattern.format(i), line), line


def test_verbose_0_is_silent(capsys):
    train, val = loaders()
    model = mlp()
    Trainer(model, optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(),
            callbacks=[EarlyStopping(patience=0)], verbose=0).fit(train, val, epochs=3)
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_on_a_terminal(monkeypatch):
    pytest.importorskip("tqdm")
    fake = _Tty()
    monkeypatch.setattr(sys, "stdout", fake)
    train, val = loaders()
    model = mlp()
    Trainer(model, optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss()).fit(
        train, val, epochs=1)
    text = fake.getvalue()
    assert re.search(rf"epoch 1/1 +0%\|.*\| 0/{len(train)} ", text)          # the live bar
    last = text.split("\r")[-1]                                 # replaced by the summary line
    assert re.fullmatch(r"epoch 1/1  loss .* val_accuracy \d\.\d{4}  lr 1\.0e-01  \d+\.\ds\n", last)


def test_loggers_get_each_epochs_metrics(tmp_path):
    class Recorder:
        def __init__(self):
            self.calls, self.closed = [], 0

        def log_metrics(self, metrics, step):
            self.calls.append((step, dict(metrics)))

        def close(self):
            self.closed += 1
    train, val = loaders()
    model = mlp()
    rec = Recorder()
    t = Trainer(model, optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(),
                loggers=[rec], verbose=0)
    t.fit(train, val, epochs=2)
    assert [s for s, _ in rec.calls] == [1, 2] and rec.closed == 1
    assert set(rec.calls[0][1]) == {"loss", "accuracy", "val_loss", "val_accuracy", "lr"}
    assert rec.calls[1][1]["val_loss"] == t.history["val_loss"][1]
    assert Trainer(model, t.optimizer, nn.CrossEntropyLoss()).loggers == []
    t = Trainer(model, t.optimizer, nn.CrossEntropyLoss(), log_dir=tmp_path, verbose=0)
    t.fit(train, val, epochs=3)
    csv_path = tmp_path / "metrics.csv"
    rows = csv_path.read_text().splitlines()
    assert rows[0] == "epoch,loss,accuracy,val_loss,val_accuracy,lr" and len(rows) == 4
    t.fit(train, val, epochs=4)                                 # continues the file
    assert [r.split(",")[0] for r in csv_path.read_text().splitlines()[1:]] == ["1", "2", "3", "4"]
    t.history.load_state_dict({"epoch": [1], "history": {"loss": [1.0]}})
    t.epoch = 1                                                 # as after resuming from epoch 1
    t.fit(train, val, epochs=2)
    assert [r.split(",")[0] for r in csv_path.read_text().splitlines()[1:]] == ["1", "2"]
    fresh = Trainer(model, t.optimizer, nn.CrossEntropyLoss(), log_dir=tmp_path, verbose=0)
    fresh.fit(train, val, epochs=1)                             # a new run: a new file
    assert len(csv_path.read_text().splitlines()) == 2
    assert sorted(os.listdir(tmp_path)) == ["metrics.csv"]


def test_small_model_learns_a_synthetic_problem():
    mte.manual_seed(0)
    x, y = blobs(600, classes=4, features=6, seed=3, spread=1.0)
    train = DataLoader(TensorDataset(x[:480], y[:480]), batch_size=32, shuffle=True)
    val = DataLoader(TensorDataset(x[480:], y[480:]), batch_size=60)
    model = mlp(features=6, classes=4)
    t = Trainer(model, optim.Adam(model.parameters(), lr=0.01), nn.CrossEntropyLoss(),
                metrics=("accuracy", "top2_accuracy"), seed=0, verbose=0)
    history = t.fit(train, val, epochs=15)
    assert history["val_accuracy"][-1] >= 0.95
    assert history["loss"][-1] < history["loss"][0]


# ---- metrics -------------------------------------------------------------------------------------
def test_accuracy_variants():
    logits = mte.tensor([[2.0, 1.0, 0.0], [0.0, 3.0, 1.0], [0.1, 0.2, 0.3], [5.0, 0.0, -1.0]])
    y = mte.tensor([0, 1, 1, 2])
    assert accuracy(logits, y) == 0.5
    assert accuracy(logits.softmax(1), y) == 0.5
    assert accuracy(logits, nn.functional.one_hot(y, 3).float()) == 0.5
    assert accuracy(mte.tensor([0.2, 0.8, 0.6]), mte.tensor([0, 1, 0])) == pytest.approx(2 / 3)
    assert accuracy(mte.tensor([-2.0, 3.0, 0.5]), mte.tensor([0, 1, 0])) == pytest.approx(2 / 3)
    seg = mte.randn(2, 3, 4, 4)
    assert accuracy(seg, seg.argmax(1)) == 1.0
    assert top_k_accuracy(logits, y, 2) == 0.75 and top_k_accuracy(logits, y, 1) == 0.5
    with pytest.raises(ValueError, match=r"output of shape \(4, 3\) does not match target"):
        accuracy(logits, mte.tensor([0, 1]))
    with pytest.raises(ValueError, match="k=4 is larger than the number of classes 3"):
        top_k_accuracy(logits, y, 4)


def test_confusion_matrix():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    out = rng.normal(size=(50, 4)).astype(np.float32)
    y = rng.integers(0, 4, 50)
    cm = confusion_matrix(mte.tensor(out), mte.tensor(y), 4)
    assert cm.dtype == mte.int64 and tuple(cm.shape) == (4, 4)
    expected = np.zeros((4, 4), np.int64)
    for t_, p in zip(y, out.argmax(1)):
        expected[t_, p] += 1
    np.testing.assert_array_equal(cm.numpy(), expected)
    np.testing.assert_array_equal(confusion_matrix(mte.tensor(out.argmax(1)), mte.tensor(y), 4)
                                  .numpy(), expected)
    assert int(cm.numpy().trace()) == int((torch.tensor(out).argmax(1) == torch.tensor(y)).sum())
    with pytest.raises(ValueError, match="class 3 outside \\[0, 3\\)"):
        confusion_matrix(mte.tensor(out), mte.tensor(y), 3)


def test_epoch_metrics_are_weighted_by_batch_size():
    rng = np.random.default_rng(1)
    out = mte.tensor(rng.normal(size=(37, 5)).astype(np.float32))
    y = mte.tensor(rng.integers(0, 5, 37))
    acc, fn_mean = Accuracy(), BatchMean(accuracy)
    for i in range(0, 37, 10):                                   # batches 10, 10, 10, 7
        acc.update(out[i:i + 10], y[i:i + 10])
        fn_mean.update(out[i:i + 10], y[i:i + 10])
    assert acc.compute() == accuracy(out, y)
    assert fn_mean.compute() == pytest.approx(accuracy(out, y), abs=1e-12)
    m = RunningMean()
    m.update(1.0, 3).update(mte.tensor(4.0), 1)
    assert m.compute() == 1.75 and m.mean == 1.75
    w = RunningMean(window=2)
    for v in (1, 2, 3):
        w.update(v)
    assert w.compute() == 2.5
    assert math.isnan(RunningMean().compute())
