"""The ``minitorch-edge`` command as a user runs it: a subprocess of the real entry point
(``python -m minitorch_edge``, the module the ``minitorch-edge`` script runs). Config mistakes
are one line on stderr with exit 2 (a typo'd key names the key and the closest valid one),
``--debug`` shows the traceback, runtime errors exit 1; Ctrl-C (SIGINT) mid-training saves a
resumable checkpoint and exits 130, and ``--resume`` then gives the same per-step losses as an
uninterrupted run; a second run does not overwrite the first; ``info | head -1`` ends quietly.

The commands that only check a config run concurrently (one fixture), to keep the file fast;
more config mistakes go through ``cli.main`` in this process (the same code, minus the start-up).
"""
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest
from runtime_harness import ROOT as _ROOT

ROOT = pathlib.Path(_ROOT)

ENV = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           PYTHONUNBUFFERED="1")
CLI = [sys.executable, "-m", "minitorch_edge"]
# a run of a few seconds: an MLP on the bundled digits, small batches
TINY = ["--set", "model.name=mlp", "--set", "model.in_features=64", "--set", "model.hidden=[32]",
        "--epochs", "3", "--batch-size", "16"]


def cli(*args, cwd, timeout=120):
    return subprocess.run(CLI + list(args), cwd=cwd, env=ENV, capture_output=True, text=True,
                          timeout=timeout)


def write(path, obj):
    path.write_text(json.dumps(obj))
    return str(path)


CASES = {   # name -> (config file content or None, extra arguments)
    "typo_key": ({"epoch": 2}, []),
    "wrong_type": ({"epochs": "ten"}, []),
    "unknown_optimizer": ({"optimizer": {"name": "adamm"}}, []),
    "bad_model_argument": ({"model": {"name": "small_cnn", "in_chanels": 1}}, []),
    "bad_value_debug": ({"optimizer": {"name": "Adam", "lr": -1.0}}, ["--debug"]),
    "lower_case_and_set": ({"optimizer": {"name": "sgd", "lr": 0.1}},
                           ["--set", "optimizer.lr=0.01", "--set", "model.name=MLP",
                            "--set", "model.hidden=[64, 32]", "--set", "out=runs/x",
                            "--epochs", "3", "--print-config"]),
    "print_config": (None, ["--print-config"]),
    "runtime_error": (None, ["--set", "dataset.name=mnist", "--set", "dataset.root=empty"]),
}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Every CASES command, started at once; name -> CompletedProcess-like (rc, out, err)."""
    tmp = tmp_path_factory.mktemp("cli_cases")
    procs = {}
    for name, (config, extra) in CASES.items():
        args = ["train"] + (["--config", write(tmp / f"{name}.json", config)] if config else [])
        procs[name] = subprocess.Popen(CLI + args + extra, cwd=tmp, env=ENV, text=True,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = {}
    for name, p in procs.items():
        stdout, stderr = p.communicate(timeout=120)
        out[name] = subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr)
    return out


def main_here(capsys, *args):
    """``cli.main`` in this process: a CompletedProcess-like result."""
    from minitorch_edge import cli
    try:
        code = cli.main(list(args))
    except SystemExit as e:                   # --help
        code = e.code
    out = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, out.out, out.err)


def one_line_error(proc, code=2):
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith("minitorch-edge: error: "), lines
    return lines[0]


def test_entry_point_is_declared():
    text = (ROOT / "pyproject.toml").read_text()
    assert 'minitorch-edge = "minitorch_edge.cli:main"' in text


def test_typo_key_names_it_and_the_suggestion(results):
    line = one_line_error(results["typo_key"])
    assert "unknown key 'epoch' in " in line and "typo_key.json" in line
    assert "did you mean 'epochs'?" in line


def test_typo_section_in_process(capsys, tmp_path):
    line = one_line_error(main_here(capsys, "train", "--config",
                                    write(tmp_path / "c.json", {"optimiser": {"name": "SGD"}})))
    assert "'optimiser'" in line and "did you mean 'optimizer'?" in line


def test_wrong_type_and_range(results, capsys):
    line = one_line_error(results["wrong_type"])
    assert "epochs must be an int >= 1" in line and '"ten" (a string)' in line
    line = one_line_error(main_here(capsys, "train", "--batch-size", "0"))
    assert "batch_size must be an int >= 1, got 0" in line
    line = one_line_error(main_here(capsys, "train", "--set", "grad_clip_norm=-1"))
    assert "grad_clip_norm must be a number > 0 or null, got -1" in line
    line = one_line_error(main_here(capsys, "train", "--set", "optimizer.amsgrad=1"))
    assert "optimizer.amsgrad must be true or false, got 1" in line


def test_unknown_optimizer_lists_the_valid_names(results):
    line = one_line_error(results["unknown_optimizer"])
    assert "unknown optimizer 'adamm'" in line and "did you mean 'Adam'?" in line
    for name in ("SGD", "AdamW", "RMSprop", "Adagrad"):
        assert name in line


def test_bad_model_argument_is_one_line(results, capsys):
    line = one_line_error(results["bad_model_argument"])
    assert "'in_chanels'" in line and "did you mean 'in_channels'?" in line
    line = one_line_error(main_here(capsys, "train", "--set", "model.input_size=28"))
    assert "does not fit dataset digits" in line and "(1, 8, 8)" in line
    line = one_line_error(main_here(capsys, "train", "--set", "model.num_classes=5"))
    assert "outputs shape (1, 5)" in line and "10 classes" in line


def test_debug_shows_the_traceback(results, capsys):
    proc = results["bad_value_debug"]
    assert proc.returncode == 2 and "Traceback (most recent call last)" in proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("minitorch-edge: error: optimizer Adam rejected its arguments: "
                           "ValueError: Invalid learning rate"), line
    assert one_line_error(main_here(capsys, "train", "--lr", "-1")) == line


def test_runtime_error_exits_1(results):
    line = one_line_error(results["runtime_error"], code=1)
    assert "MNIST" in line and "download=True" in line and "--debug" in line


def test_print_config_round_trip(results, tmp_path):
    proc = results["print_config"]
    assert proc.returncode == 0, proc.stderr
    config = json.loads(proc.stdout)
    docs = config["_doc"]
    for key, value in config.items():           # every key, and every section key, explained
        assert key in docs and docs[key], key
        if isinstance(value, dict) and key != "_doc":
            for sub in value:
                assert f"{key}.{sub}" in docs, (key, sub)
    again = cli("train", "--config", write(tmp_path / "c.json", config), "--print-config",
                cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout == proc.stdout


def test_lower_case_name_and_set_overrides(results, capsys):
    proc = results["lower_case_and_set"]
    assert proc.returncode == 0, proc.stderr
    config = json.loads(proc.stdout)
    assert config["optimizer"]["name"] == "SGD" and config["optimizer"]["lr"] == 0.01
    assert config["model"]["name"] == "mlp" and config["model"]["hidden"] == [64, 32]
    assert config["out"] == "runs/x" and config["epochs"] == 3
    assert config["scheduler"]["T_max"] == 3          # the default schedule spans the epochs
    line = one_line_error(main_here(capsys, "train", "--set", "optimizer.lrr=0.01"))
    assert "'lrr'" in line and "did you mean 'lr'?" in line
    line = one_line_error(main_here(capsys, "train", "--set", "optimizer.lr"))
    assert "KEY=VALUE" in line
    line = one_line_error(main_here(capsys, "train", "--config", "no_such.json"))
    assert "no_such.json" in line and "--print-config" in line
    line = one_line_error(main_here(capsys, "train", "--bogus"))
    assert "unrecognized arguments: --bogus" in line


def test_train_help_lists_the_keys(capsys):
    proc = main_here(capsys, "train", "--help")
    assert proc.returncode == 0
    for key in ("model", "dataset", "optimizer", "scheduler", "epochs", "batch_size", "seed",
                "grad_clip_norm", "out", "--print-config", "--set", "--resume", "--overwrite"):
        assert key in proc.stdout, key


def steps(run):
    return (run / "steps.csv").read_text().splitlines()


def test_sigint_saves_a_checkpoint_and_resume_matches(tmp_path):
    run = tmp_path / "runs" / "a"
    proc = subprocess.Popen(CLI + ["train", *TINY, "--out", str(run)], cwd=tmp_path, env=ENV,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    for line in proc.stdout:                      # interrupt inside epoch 2
        if line.startswith("epoch 1/3"):
            time.sleep(0.05)
            proc.send_signal(signal.SIGINT)
            break
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    last = run / "last.safetensors"
    assert last.exists()
    message = err.strip().splitlines()[-1]
    assert f"resume with: minitorch-edge train --resume {last}" in message, message
    interrupted_at = len(steps(run)) - 1
    assert 0 < interrupted_at < 3 * 90

    resumed = cli("train", "--resume", str(last), "--quiet", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    straight = cli("train", *TINY, "--out", str(tmp_path / "runs" / "b"), "--quiet",
                   cwd=tmp_path)
    assert straight.returncode == 0, straight.stderr
    assert steps(run) == steps(tmp_path / "runs" / "b")       # per-step losses, bit for bit
    assert len(steps(run)) == 1 + 3 * 90
    assert (run / "metrics.csv").read_text() == (tmp_path / "runs" / "b" / "metrics.csv") \
        .read_text()


def test_demo_never_overwrites_and_resumes(tmp_path, capsys, monkeypatch):
    first = cli("demo", "--epochs", "1", "--out", "out", "--quiet", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    before = (tmp_path / "out" / "metrics.csv").read_text()
    second = cli("demo", "--epochs", "1", "--out", "out", cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    assert "run folder out-1 (out holds an earlier run" in second.stdout
    assert (tmp_path / "out" / "metrics.csv").read_text() == before
    assert (tmp_path / "out-1" / "last.safetensors").exists()
    # --resume with no path continues --out's last checkpoint (2 epochs in all)
    monkeypatch.chdir(tmp_path)          # (in this process: the same code, one start-up less)
    more = main_here(capsys, "demo", "--epochs", "2", "--out", "out", "--resume", "--quiet")
    assert more.returncode == 0, more.stderr
    assert len((tmp_path / "out" / "metrics.csv").read_text().splitlines()) == 3



def test_resume_without_a_checkpoint(capsys, tmp_path):
    line = one_line_error(main_here(capsys, "demo", "--out", str(tmp_path / "e"), "--resume"))
    assert "nothing to resume" in line and "last.safetensors" in line


def test_closed_stdout_ends_quietly(tmp_path):
    shell = subprocess.run(" ".join(CLI) + " info | head -1", shell=True, cwd=tmp_path, env=ENV,
                           capture_output=True, text=True, timeout=60)
    assert shell.stdout.startswith("minitorch_edge") and shell.stderr == "", shell.stderr
    # the reader gone before the first write: deterministic EPIPE
    read, write_end = os.pipe()
    os.close(read)
    proc = subprocess.run(CLI + ["info"], cwd=tmp_path, env=ENV, stdout=write_end,
                          stderr=subprocess.PIPE, text=True, timeout=60)
    os.close(write_end)
    assert proc.returncode == 141 and proc.stderr == "", proc.stderr


def test_a_corrupted_checkpoint_is_refused_by_resume(tmp_path):
    run = tmp_path / "runs" / "c"
    first = cli("train", *TINY[:-4], "--epochs", "1", "--batch-size", "64", "--out", str(run),
                "--quiet", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    last = run / "last.safetensors"
    data = bytearray(last.read_bytes())
    data[-100:] = b"\xff" * 100                          # the corruption: the tail
    last.write_bytes(bytes(data))
    proc = cli("train", "--resume", str(last), "--epochs", "2", "--quiet", cwd=tmp_path)
    assert proc.returncode in (1, 2), proc.stderr
    line = proc.stderr.strip().splitlines()
    assert len(line) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert line[0].startswith("minitorch-edge: error: ") and "sha256" in line[0], line[0]
    assert "tensor" in line[0]
    print(line[0])
