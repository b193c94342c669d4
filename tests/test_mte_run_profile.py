"""mte-run --profile / --profile-json (native/tools/profile.c) on a traced small CNN: the table
has torch.profiler's key_averages columns, one row per op of the graph, calls counted exactly
(nodes of the op x runs), self percentages summing to 100, rows sorted by self time and the
footer's total equal to the rows' sum; the Chrome trace parses, holds one complete event per
node (in order, not overlapping) nested in the run's event; the outputs are still the
reference's; bad flags exit 2 with a message, an unwritable trace path exits 1."""
import json
import re

import numpy as np
import pytest
from test_mte_run import fails, mte_run

import minitorch_edge as mte
from minitorch_edge import graph, nn

COLUMNS = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
           "# of Calls", "Input Shapes"]
UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    mte.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(), nn.Flatten(),
                      nn.Linear(8 * 4 * 4, 10))
    x = np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(np.float32)
    g = graph.trace(m, x)
    d = tmp_path_factory.mktemp("cnn")
    g.save(str(d / "cnn.mte"))
    np.save(d / "x.npy", x)
    return g, d / "cnn.mte", d / "x.npy", x


def seconds(text):
    number, unit = re.fullmatch(r"([0-9.]+)(us|ms|s)", text).groups()
    return float(number) * UNITS[unit]


def parse_table(stdout):
    """(rows as dicts, footer lines) of the key_averages table."""
    lines = stdout.splitlines()
    dash = [i for i, line in enumerate(lines) if line.startswith("----")]
    assert len(dash) == 3, stdout
    header = lines[dash[0] + 1]
    for name in COLUMNS:
        assert name in header
    rows = []
    for line in lines[dash[1] + 1:dash[2]]:
        cells = re.split(r"\s{2,}", line.strip(), maxsplit=7)
        rows.append(dict(zip(COLUMNS, cells)))
    return rows, lines[dash[2] + 1:]


def test_table_rows_counts_and_percentages(cnn, tmp_path):
    g, model, xpath, x = cnn
    runs = 7
    r = mte_run(model, "--input", xpath, "--output", tmp_path / "y.npy", "--profile",
                "--bench", runs, "--warmup", 1)
    rows, footer = parse_table(r.stdout)
    counts = g.op_counts()
    assert {row["Name"] for row in rows} == set(counts)
    for row in rows:
        assert int(row["# of Calls"]) == counts[row["Name"]] * runs
        assert row["Self CPU"] == row["CPU total"] and row["Self CPU %"] == row["CPU total %"]
        avg = seconds(row["CPU time avg"])
        assert avg == pytest.approx(seconds(row["Self CPU"]) / int(row["# of Calls"]),
                                    rel=2e-2, abs=2e-9)
    percents = [float(row["Self CPU %"].rstrip("%")) for row in rows]
    assert sum(percents) == pytest.approx(100.0, abs=0.1 * len(rows))
    selfs = [seconds(row["Self CPU"]) for row in rows]
    assert selfs == sorted(selfs, reverse=True)
    total = re.fullmatch(r"Self CPU time total: (\S+)", footer[0]).group(1)
    assert seconds(total) == pytest.approx(sum(selfs), rel=1e-2, abs=1e-8)
    assert footer[1].startswith("Wall time per run: mean ") and f"({runs} runs" in footer[1]
    coverage = float(re.match(r"Coverage: ([0-9.]+)%", footer[2]).group(1))
    assert 0 < coverage <= 100.5
    conv = [row for row in rows if row["Name"] == "Conv"][0]
    assert conv["Input Shapes"] == "(various)"            # the two convs differ
    gemm = [row for row in rows if row["Name"] == "Gemm"][0]
    assert gemm["Input Shapes"] == "[[1, 128], [10, 128], [10]]"
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), g.run(x), rtol=1e-4, atol=1e-5)


def test_default_runs_and_chrome_trace(cnn, tmp_path):
    g, model, xpath, _ = cnn
    trace = tmp_path / "trace.json"
    r = mte_run(model, "--input", xpath, "--profile-json", trace)   # implies --profile
    rows, _ = parse_table(r.stdout)
    assert sum(int(row["# of Calls"]) for row in rows) == len(g.nodes) * 20
    doc = json.loads(trace.read_text())
    events = doc["traceEvents"]
    assert all(e["ph"] == "X" and e["pid"] == 0 and e["tid"] == 0 for e in events)
    runs = [e for e in events if e["cat"] == "run"]
    nodes = [e for e in events if e["cat"] == "node"]
    assert len(runs) == 1 and len(nodes) == len(g.nodes)
    assert [e["name"] for e in nodes] == [n.name for n in g.nodes]
    assert [e["args"]["op"] for e in nodes] == [n.op for n in g.nodes]
    run = runs[0]
    end = run["ts"]
    for e in nodes:                                       # in order, never overlapping
        assert e["dur"] >= 0 and e["ts"] >= end
        end = e["ts"] + e["dur"]
    assert end <= run["ts"] + run["dur"] + 1e-9           # nested in the run
    first = nodes[0]["args"]
    assert first["input_shapes"] == "[[1, 3, 8, 8], [8, 3, 3, 3], [8]]"
    assert first["output_shapes"] == "[[1, 8, 8, 8]]"
    assert not list(tmp_path.glob("*.tmp.*"))


@pytest.mark.parametrize("args, message", [
    (["--profile-json"], "--profile-json needs a value"),
    (["--profile-json", "--bench"], "--profile-json needs a file path"),
    (["--profile=1"], "unknown option '--profile=1'"),
    (["--profile", "--bench", "0"], "--bench needs an integer >= 1"),
])
def test_bad_flags_exit_2(cnn, args, message):
    _, model, xpath, _ = cnn
    err = fails(model, "--input", xpath, *args, status=2, message=message)
    assert "--profile-json PATH" in err                   # the usage text follows


def test_unwritable_trace_exits_1(cnn, tmp_path):
    _, model, xpath, _ = cnn
    path = tmp_path / "no" / "dir" / "t.json"
    fails(model, "--input", xpath, "--profile-json", path, status=1,
          message="--profile-json")
    assert not path.exists()
