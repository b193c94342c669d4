"""The train-config schema (train/config.py), the run folder (train/runs.py) and the Trainer's
mid-epoch interrupt: checked in this process, without the command line (test_cli.py runs that).
"""
import json

import pytest

import minitorch_edge as mte
from minitorch_edge import nn, optim
from minitorch_edge.data import DataLoader
from minitorch_edge.data.datasets import Digits
from minitorch_edge.models import MLP
from minitorch_edge.train import LambdaCallback, Trainer
from minitorch_edge.train.config import (ConfigError, apply_overrides, default_config, key_docs,
                                         parse_config)
from minitorch_edge.train.runs import StepLog, fresh_run_dir
from minitorch_edge.train.trainer import TrainingInterrupted


@pytest.mark.parametrize("raw, words", [
    ({"epoch": 2}, ["unknown key 'epoch'", "did you mean 'epochs'?"]),
    ({"optimizer": {"name": "Adam", "betas": 0.9}}, ["optimizer.betas must be a list"]),
    ({"optimizer": {"name": "SGD", "momentum": "high"}}, ["optimizer.momentum must be a number"]),
    ({"scheduler": {"name": "steplr"}}, ["scheduler StepLR needs the argument 'step_size'"]),
    ({"scheduler": {"name": "Cosine"}}, ["unknown scheduler 'Cosine'", "CosineAnnealingLR"]),
    ({"model": {"name": "vgg"}}, ["unknown model 'vgg'", "small_cnn", "resnet18"]),
    ({"model": "mlp"}, ["model must be an object with a \"name\""]),
    ({"dataset": {"name": "mnist"}}, ["dataset mnist needs the argument 'root'"]),
    ({"dataset": {"name": "digits", "train": True}}, ["unknown dataset argument 'train'"]),
    ({"seed": -1}, ["seed must be an int >= 0"]),
    ({"epochs": True}, ["epochs must be an int >= 1, got true (a bool)"]),
    ({"out": ""}, ["out must be a path or null"]),
    ([1, 2], ["a config must be a JSON object"]),
])
def test_bad_configs_name_the_key(raw, words):
    with pytest.raises(ConfigError) as info:
        parse_config(raw)
    for w in words:
        assert w in str(info.value), str(info.value)
    assert "\n" not in str(info.value)


def test_names_ignore_case_and_separators():
    c = parse_config({"model": {"name": "SmallCNN", "input_size": 8},
                      "optimizer": {"name": "adamw"}, "scheduler": {"name": "ONE_CYCLE_LR",
                                                                     "max_lr": 0.1,
                                                                     "total_steps": 10},
                      "dataset": {"name": "Fashion-MNIST", "root": "x"}})
    assert (c.model.name, c.optimizer.name, c.scheduler.name, c.dataset.name) == \
        ("small_cnn", "AdamW", "OneCycleLR", "fashion_mnist")


def test_default_config_is_complete_and_round_trips():
    c = default_config()
    d = c.to_dict(docs=True)
    assert parse_config(json.loads(json.dumps(d))) == c
    docs = key_docs(c)
    for key, value in d.items():
        assert key in docs
        for sub in (value if isinstance(value, dict) and key != "_doc" else ()):
            assert f"{key}.{sub}" in docs
    assert d["optimizer"]["betas"] == [0.9, 0.999] and c.optimizer.args["betas"] == (0.9, 0.999)
    assert c.run_dir.endswith("small_cnn")


def test_overrides():
    raw = apply_overrides({"epochs": 4}, ["optimizer.lr=0.5", "scheduler=null", "out=a b",
                                          "model.name=mlp", "model.hidden=[8]"])
    c = parse_config(raw)
    assert c.optimizer.args["lr"] == 0.5 and c.scheduler is None and c.out == "a b"
    assert c.model.name == "mlp" and c.model.args["hidden"] == (8,)
    # a new component name drops the old one's arguments, keeps those --set gave
    raw = apply_overrides({}, ["scheduler.step_size=2", "scheduler.name=StepLR"])
    assert raw["scheduler"] == {"step_size": 2, "name": "StepLR"}
    for bad, words in [("epochs", "KEY=VALUE"), ("optimzer.lr=1", "did you mean 'optimizer'"),
                       ("epochs.x=1", "epochs has no sub-keys"),
                       ("model.a.b=1", "one level")]:
        with pytest.raises(ConfigError, match=words):
            apply_overrides({}, [bad])


def test_fresh_run_dir(tmp_path):
    out = str(tmp_path / "run")
    assert fresh_run_dir(out) == (out, None)            # missing: created
    assert fresh_run_dir(out)[0] == out                 # empty: used
    (tmp_path / "run" / "metrics.csv").write_text("x")
    (tmp_path / "run" / "mine.txt").write_text("kept")
    first, note = fresh_run_dir(out)
    assert first == out + "-1" and "holds an earlier run" in note
    assert fresh_run_dir(out)[0] == out + "-1"          # empty again: reused
    (tmp_path / "run-1" / "x").write_text("x")
    assert fresh_run_dir(out)[0] == out + "-2"
    assert fresh_run_dir(out, overwrite=True)[0] == out
    assert not (tmp_path / "run" / "metrics.csv").exists()
    assert (tmp_path / "run" / "mine.txt").read_text() == "kept"


def _setup(losses, stop_at=None, accum=1):
    mte.manual_seed(0)
    model = MLP(64, (16,), 10, dropout=0.2)                  # dropout: the RNG matters
    opt = optim.Adam(model.parameters(), lr=1e-2)
    sched = optim.lr_scheduler.OneCycleLR(opt, max_lr=0.02, total_steps=3 * 12 // accum + 3)

    def on_batch_end(trainer, step, logs):
        losses.append(logs["loss"])
        if stop_at is not None and trainer.global_step == stop_at:
            trainer.request_interrupt()
    trainer = Trainer(model, opt, nn.CrossEntropyLoss(), scheduler=sched, seed=0, verbose=0,
                      grad_accum_steps=accum,
                      callbacks=[LambdaCallback(on_batch_end=on_batch_end)])
    return trainer, DataLoader(Digits(train=True), batch_size=128, shuffle=True), \
        DataLoader(Digits(train=False), batch_size=256)


# 12 batches an epoch; (19, 2): step 7 of epoch 2 has a micro-batch pending, so it stops at 8
@pytest.mark.parametrize("stop_at, accum, stops_at", [(5, 1, 5), (12, 1, 12), (20, 1, 20),
                                                      (19, 2, 20)])
def test_interrupt_mid_epoch_then_resume_equals_uninterrupted(tmp_path, stop_at, accum,
                                                              stops_at):
    ref = []
    trainer, train, val = _setup(ref, accum=accum)
    history = trainer.fit(train, val, epochs=3)
    before = []
    trainer, train, val = _setup(before, stop_at, accum)
    with pytest.raises(TrainingInterrupted) as info:
        trainer.fit(train, val, epochs=3)
    # with accumulation it stops at the next optimizer step, never between micro-batches
    assert info.value.global_step == stops_at == len(before)
    path = str(tmp_path / "ck.safetensors")
    trainer.save_checkpoint(path)
    after = []
    trainer2, train2, val2 = _setup(after, accum=accum)
    resumed = trainer2.fit(train2, val2, epochs=3, resume_from=path)
    assert before + after == ref                          # bit for bit
    assert resumed["loss"] == history["loss"] and resumed["val_loss"] == history["val_loss"]
    assert resumed["accuracy"] == history["accuracy"]


def test_fit_again_after_an_interrupt_continues():
    ref, losses = [], []
    trainer, train, val = _setup(ref)
    trainer.fit(train, val, epochs=2)
    trainer, train, val = _setup(losses, stop_at=7)
    with pytest.raises(TrainingInterrupted, match="in epoch 1 after step 7"):
        trainer.fit(train, val, epochs=2)
    trainer.fit(train, val, epochs=2)
    assert losses == ref


def test_step_log_is_cut_back_on_resume(tmp_path):
    path = tmp_path / "steps.csv"
    losses = []
    trainer, train, val = _setup(losses, stop_at=15)
    log = StepLog(path)
    trainer.callbacks.append(log)
    with pytest.raises(TrainingInterrupted):
        trainer.fit(train, val, epochs=2)
    log.close()
    ck = str(tmp_path / "ck.safetensors")
    trainer.save_checkpoint(ck)
    with open(path, "a") as f:
        f.write("2,4,16,9.0,0.1\n")                 # a row written after the checkpoint
    trainer2, train2, val2 = _setup([])
    trainer2.callbacks.append(StepLog(path))
    trainer2.fit(train2, val2, epochs=2, resume_from=ck)
    rows = path.read_text().splitlines()
    assert rows[0] == StepLog.HEADER.strip() and len(rows) == 1 + 24
    assert [int(r.split(",")[2]) for r in rows[1:]] == list(range(1, 25))
    assert [float(r.split(",")[3]) for r in rows[1:16]] == losses[:15]


def test_interrupt_during_validation_stops_after_the_epoch(tmp_path):
    ref, before, after = [], [], []
    trainer, train, val = _setup(ref)
    trainer.fit(train, val, epochs=2)
    trainer, train, val = _setup(before)
    trainer.callbacks.append(LambdaCallback(
        on_validation_end=lambda t, logs: t.request_interrupt() if t.epoch == 0 else None))
    with pytest.raises(TrainingInterrupted, match="after epoch 1 ") as info:
        trainer.fit(train, val, epochs=2)
    assert (info.value.epoch, info.value.step, trainer.epoch) == (1, 0, 1)
    path = str(tmp_path / "ck.safetensors")
    trainer.save_checkpoint(path)
    trainer2, train2, val2 = _setup(after)
    trainer2.fit(train2, val2, epochs=2, resume_from=path)
    assert before + after == ref
