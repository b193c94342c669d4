"""Logging and plots: TensorBoard event files read back with TensorBoard's own reader, the CSV
and JSON-lines loggers, and the training-curve PNG."""
import json
import math
import os
import sys

import numpy as np
import pytest

import minitorch_edge as mte
from minitorch_edge import nn, optim
from minitorch_edge.train import History, Trainer
from minitorch_edge.utils.logger import CSVLogger, JSONLinesLogger
from minitorch_edge.utils.plotting import plot_history


def _accumulator(path):
    ea = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    acc = ea.EventAccumulator(str(path), size_guidance={"scalars": 0, "histograms": 0,
                                                        "images": 0, "tensors": 0})
    acc.Reload()
    return acc


# ---- TensorBoard -------------------------------------------------------------------------------
def test_summary_writer_files_read_back(tmp_path):
    pytest.importorskip("tensorboardX")
    from minitorch_edge.utils.tensorboard import SummaryWriter
    values = [0.5, 0.25, 0.125, 2.0, 1.0]
    weights = mte.randn(1000)
    with SummaryWriter(tmp_path, flush_secs=1) as w:
        assert w.log_dir == str(tmp_path)
        for step, v in enumerate(values):
            w.add_scalar("loss/train", mte.tensor(v) if step % 2 else v, step)
        w.add_histogram("fc.weight", weights, 7)
        w.add_image("digit", mte.rand(3, 8, 10), 1)                       # CHW float in [0, 1]
        w.add_image("grey", np.full((5, 6), 200, np.uint8), 2, dataformats="HW")
        w.add_text("notes", "trained **well**", 3)
        w.add_scalars("cmp", {"a": 1.0, "b": mte.tensor(2.0)}, 4)
    acc = _accumulator(tmp_path)
    scalars = acc.Scalars("loss/train")
    assert [e.step for e in scalars] == [0, 1, 2, 3, 4]
    assert [e.value for e in scalars] == pytest.approx(values)
    hist = acc.Histograms("fc.weight")
    assert len(hist) == 1 and hist[0].step == 7
    h = hist[0].histogram_value
    assert h.num == 1000
    assert h.min == pytest.approx(float(weights.min())) and h.max == pytest.approx(
        float(weights.max()))
    assert h.sum == pytest.approx(float(weights.sum()), rel=1e-4, abs=1e-3)
    img = acc.Images("digit")[0]
    assert (img.width, img.height, img.step) == (10, 8, 1)
    assert img.encoded_image_string[:8] == b"\x89PNG\r\n\x1a\n"
    grey = acc.Images("grey")[0]
    assert (grey.width, grey.height) == (6, 5)
    text = acc.Tensors("notes/text_summary")[0]
    assert text.step == 3 and text.tensor_proto.string_val == [b"trained **well**"]
    sub = _accumulator(tmp_path / "cmp" / "b")             # add_scalars: one sub-run per name
    assert [e.value for e in sub.Scalars("cmp")] == [2.0]


def test_summary_writer_hparams_and_errors(tmp_path):
    pytest.importorskip("tensorboardX")
    from minitorch_edge.utils.tensorboard import SummaryWriter
    w = SummaryWriter(tmp_path)
    w.add_hparams({"lr": mte.tensor(0.1), "optimizer": "sgd", "layers": 2},
                  {"hparam/accuracy": 0.97}, run_name="trial0")
    with pytest.raises(ValueError, match="expected a single number, got a value of shape"):
        w.add_scalar("x", mte.zeros(3))
    with pytest.raises(ValueError, match="does not match dataformats='CHW'"):
        w.add_image("x", mte.zeros(8, 8))
    w.close()
    run = tmp_path / "trial0"
    assert any(name.startswith("events.out.tfevents") for name in os.listdir(run))
    acc = _accumulator(run)
    assert [e.value for e in acc.Scalars("hparam/accuracy")] == pytest.approx([0.97])


def test_tensorboard_logger_with_trainer(tmp_path):
    pytest.importorskip("tensorboardX")
    from minitorch_edge.utils.tensorboard import TensorBoardLogger
    rng = np.random.default_rng(0)
    x = mte.tensor(rng.normal(size=(64, 3)).astype(np.float32))
    y = mte.tensor((rng.random(64) > 0.5).astype(np.int64))
    model = nn.Linear(3, 2)
    t = Trainer(model, optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(),
                loggers=[TensorBoardLogger(tmp_path)], verbose=0)
    t.fit([(x, y)], [(x, y)], epochs=3)
    acc = _accumulator(tmp_path)
    assert set(acc.Tags()["scalars"]) == {"loss", "accuracy", "val_loss", "val_accuracy", "lr"}
    assert [e.step for e in acc.Scalars("val_loss")] == [1, 2, 3]
    assert [e.value for e in acc.Scalars("loss")] == pytest.approx(t.history["loss"])


def test_missing_optional_packages_say_which_extra(monkeypatch, tmp_path):
    from minitorch_edge.utils import tensorboard
    monkeypatch.setitem(sys.modules, "tensorboardX", None)
    with pytest.raises(ImportError, match=r'pip install "minitorch-edge\[tensorboard\]"'):
        tensorboard.SummaryWriter(tmp_path)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    monkeypatch.setitem(sys.modules, "matplotlib.backends.backend_agg", None)
    with pytest.raises(ImportError, match=r'pip install "minitorch-edge\[plot\]"'):
        plot_history({"loss": [1.0]}, tmp_path / "x.png")


# ---- CSV / JSON lines ----------------------------------------------------------------------------
def test_csv_logger_appends_and_grows_its_header(tmp_path):
    path = tmp_path / "logs" / "metrics.csv"
    log = CSVLogger(path)
    log.log_metrics({"loss": 0.5, "acc": mte.tensor(0.75)}, step=1)
    log.log_metrics({"loss": 0.25, "acc": np.float32(0.875)}, step=2)
    assert path.read_text().splitlines() == ["step,loss,acc", "1,0.5,0.75", "2,0.25,0.875"]
    log.log_metrics({"loss": 0.125, "val_loss": 0.3}, step=3)          # a new column
    assert path.read_text().splitlines() == ["step,loss,acc,val_loss", "1,0.5,0.75,",
                                             "2,0.25,0.875,", "3,0.125,,0.3"]
    assert os.listdir(path.parent) == ["metrics.csv"]                  # no temp file left
    again = CSVLogger(path)                                             # continues the file
    again.log_metrics({"loss": 0.0625, "note": "a, b"}, step=4)
    rows = again.read()
    assert [r["step"] for r in rows] == ["1", "2", "3", "4"]
    assert rows[3]["note"] == "a, b" and rows[3]["acc"] == ""
    with pytest.raises(TypeError, match="can only log numbers and strings.*shape \\(2,\\)"):
        again.log_metrics({"w": mte.zeros(2)}, step=5)
    with pytest.raises(ValueError, match="clashes with the step column"):
        again.log_metrics({"step": 1}, step=5)


def test_csv_logger_truncate(tmp_path):
    log = CSVLogger(tmp_path / "m.csv", step_key="epoch")
    for e in (1, 2, 3):
        log.log_metrics({"loss": 1.0 / e}, step=e)
    log.truncate(2)
    assert [r["epoch"] for r in log.read()] == ["1", "2"]
    log.log_metrics({"loss": 0.1}, step=3)
    assert [r["epoch"] for r in log.read()] == ["1", "2", "3"]
    log.truncate(0)
    assert not (tmp_path / "m.csv").exists()
    log.log_metrics({"acc": 0.5}, step=1)
    assert (tmp_path / "m.csv").read_text().splitlines() == ["epoch,acc", "1,0.5"]


def test_csv_logger_step_key_as_the_trainer_uses_it(tmp_path):
    log = CSVLogger(tmp_path / "m.csv", step_key="epoch")
    log.log_metrics({"loss": 1.0}, step=1)
    assert (tmp_path / "m.csv").read_text().splitlines() == ["epoch,loss", "1,1.0"]


def test_jsonlines_logger(tmp_path):
    path = tmp_path / "m.jsonl"
    log = JSONLinesLogger(path)
    log.log_metrics({"loss": mte.tensor(0.5), "acc": 1}, step=1)
    log.log_metrics({"loss": float("nan"), "lr": float("inf"), "tag": "x"}, step=2)
    log.close()
    JSONLinesLogger(path).log_metrics({"loss": 0.25}, step=3)
    lines = path.read_text().splitlines()
    assert [json.loads(line) for line in lines] == [
        {"step": 1, "loss": 0.5, "acc": 1},
        {"step": 2, "loss": None, "lr": None, "tag": "x"},
        {"step": 3, "loss": 0.25}]
    assert log.read()[2]["loss"] == 0.25


# ---- plots ---------------------------------------------------------------------------------------
def _png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_plot_history_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    h = History()
    h.load_state_dict({"epoch": [1, 2, 3], "history": {
        "loss": [1.0, 0.5, 0.25], "val_loss": [1.1, 0.7, 0.4], "accuracy": [0.5, 0.7, 0.9],
        "val_accuracy": [0.4, 0.6, 0.8], "top2_accuracy": [0.8, 0.9, 1.0],
        "lr": [0.1, 0.01, 0.001]}})
    out = plot_history(h, tmp_path / "plots" / "curves.png", title="run")
    assert out == str(tmp_path / "plots" / "curves.png")
    width, height = _png_size(tmp_path / "plots" / "curves.png")
    assert width > 0 and height > 0 and os.path.getsize(out) > 1000
    _png_size(tmp_path / plot_history({"loss": [3.0, 2.0, math.nan]}, tmp_path / "d.png"))
    with pytest.raises(ValueError, match="history is empty"):
        plot_history({}, tmp_path / "e.png")


def test_plot_history_of_a_real_fit(tmp_path):
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(0)
    x = mte.tensor(rng.normal(size=(32, 3)).astype(np.float32))
    y = mte.tensor((rng.random(32) > 0.5).astype(np.int64))
    model = nn.Linear(3, 2)
    t = Trainer(model, optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(), verbose=0)
    path = tmp_path / "fit.png"
    plot_history(t.fit([(x, y)], [(x, y)], epochs=2), path)
    assert _png_size(path)[0] > 0
