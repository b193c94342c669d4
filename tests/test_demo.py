"""The main job: `minitorch-edge demo` reaches >= 97% on the fixed split, saves and reloads;
`train --config` trains a zoo model from a JSON file."""
import json
import subprocess
import sys

from minitorch_edge.demo import run_demo, train_from_config


def test_demo_reaches_97_percent_and_reloads(tmp_path):
    result = run_demo(out=str(tmp_path), verbose=0)
    assert result["test_accuracy"] >= 0.97, result
    assert result["reloaded_predictions_identical"]
    for key in ("checkpoint", "metrics_log", "training_curve"):
        assert (tmp_path / result[key].split("/")[-1]).stat().st_size > 0
    header = (tmp_path / "metrics.csv").read_text().splitlines()[0]
    assert "val_accuracy" in header


def test_cli_demo_runs_as_a_module(tmp_path):
    out = subprocess.run([sys.executable, "-m", "minitorch_edge", "demo", "--out", str(tmp_path),
                          "--epochs", "2", "--quiet"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "checkpoint.safetensors").exists()


def test_train_from_config(tmp_path):
    config = {"model": {"name": "mlp", "in_features": 64, "hidden": [32], "out_features": 10},
              "dataset": {"name": "digits"}, "optimizer": {"name": "Adam", "lr": 0.01},
              "scheduler": {"name": "StepLR", "step_size": 2}, "epochs": 3, "batch_size": 32,
              "out": str(tmp_path / "run")}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = train_from_config(str(path), verbose=0)
    assert result["accuracy"] > 0.8
    assert (tmp_path / "run" / "checkpoint.safetensors").exists()
