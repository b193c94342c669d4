"""mte-run, the C runtime's command-line runner (native/tools/mte_run.c, npy.c): its outputs
equal graph.run_reference's, its --bench / --info / --threads output, inputs and outputs
bound by name, and every error path (missing or bad model, wrong inputs, malformed .npy
files, unwritable outputs): a nonzero exit status, a message starting with "mte-run: ", never
a crash (killed by a signal), and no output file left half-written.

The binary is native/build/mte-run (built with `make -C native mte-run` once per session),
or $MTE_RUN_BINARY (e.g. an ASan build: make -C native BUILD=build-asan SAN=... mte-run).
The graphs use only the ops the runtime runs in this branch: views and Relu.
"""
import os
import re
import shutil
import struct
import subprocess
import sys

import numpy as np
import pytest

from minitorch_edge.graph import Graph

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_binary = None


def binary():
    global _binary
    if _binary is None:
        env = os.environ.get("MTE_RUN_BINARY")
        if env:
            _binary = env
        else:
            if shutil.which("make") is None or shutil.which("cc") is None:
                pytest.skip("no C toolchain to build native/build/mte-run")
            subprocess.run(["make", "-s", "-C", os.path.join(ROOT, "native"), "mte-run"],
                           check=True, stdout=subprocess.DEVNULL)
            _binary = os.path.join(ROOT, "native", "build", "mte-run")
    return _binary


def mte_run(*args, ok=True):
    """Run mte-run; it must exit by itself (never by a signal). ok: expect status 0."""
    r = subprocess.run([binary(), *map(str, args)], capture_output=True, text=True, timeout=60)
    assert r.returncode >= 0, f"mte-run was killed by signal {-r.returncode}: {r.stderr}"
    # an ASan / UBSan build (MTE_RUN_BINARY) reports there, after our message if any
    assert "Sanitizer" not in r.stderr and "runtime error:" not in r.stderr, r.stderr
    if ok:
        assert r.returncode == 0, r.stderr
        assert r.stderr == ""
    return r


def fails(*args, status=1, message=None):
    """mte-run must fail with `status` and a 'mte-run: ' message containing `message`."""
    r = mte_run(*args, ok=False)
    assert r.returncode == status, (r.returncode, r.stderr)
    assert r.stderr.startswith("mte-run: "), r.stderr
    if message is not None:
        assert message in r.stderr, r.stderr
    return r.stderr


# ---- graphs ---------------------------------------------------------------------------------

def chain_graph():
    """Relu -> Reshape -> Relu on a float32 (2, 3, 4) input."""
    g = Graph("chain")
    g.add_input("x", (2, 3, 4), "float32")
    shape = g.add_constant("shape", np.array([6, 4], np.int64))
    g.add_node("Relu", ["x"], ["r1"])
    g.add_node("Reshape", ["r1", shape], ["r2"])
    g.add_node("Relu", ["r2"], ["y"])
    g.set_outputs(["y"])
    return g.check()


def multi_graph():
    """Three inputs (float32, int64, bool), three outputs: Relu + Flatten, Identity,
    Unsqueeze."""
    g = Graph("multi")
    g.add_input("a", (2, 3, 2), "float32")
    g.add_input("ids", (5,), "int64")
    g.add_input("mask", (3,), "bool")
    axes = g.add_constant("axes", np.array([0], np.int64))
    g.add_node("Relu", ["a"], ["ra"])
    g.add_node("Flatten", ["ra"], ["flat"], axis=1)
    g.add_node("Identity", ["ids"], ["ids_out"])
    g.add_node("Unsqueeze", ["mask", axes], ["mask_out"])
    g.set_outputs(["flat", "ids_out", "mask_out"])
    return g.check()


def multi_inputs(rng):
    return [rng.standard_normal((2, 3, 2)).astype(np.float32),
            rng.integers(-2**40, 2**40, 5).astype(np.int64),
            np.array([True, False, True])]


@pytest.fixture
def chain(tmp_path):
    model = tmp_path / "chain.mte"
    chain_graph().save(str(model))
    x = (np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 11.5) / 3
    np.save(tmp_path / "x.npy", x)
    return model, tmp_path / "x.npy", x


def expected(g, inputs):
    out = g.run(*inputs)
    return list(out) if isinstance(out, tuple) else [out]


# ---- running --------------------------------------------------------------------------------

def test_chain_matches_reference(chain, tmp_path):
    model, xpath, x = chain
    out = tmp_path / "y.npy"
    r = mte_run(model, "--input", xpath, "--output", out)
    assert r.stdout == ""
    y = np.load(out)
    want = expected(chain_graph(), [x])[0]
    assert y.dtype == want.dtype and y.shape == want.shape
    np.testing.assert_array_equal(y, want)
    # the file is what numpy itself writes, byte for byte
    np.save(tmp_path / "want.npy", want)
    assert out.read_bytes() == (tmp_path / "want.npy").read_bytes()


def test_multi_input_output(tmp_path):
    g = multi_graph()
    g.save(str(tmp_path / "m.mte"))
    inputs = multi_inputs(np.random.default_rng(0))
    args = []
    for name, a in zip(g.inputs, inputs):
        np.save(tmp_path / f"{name}.npy", a)
        args += ["--input", tmp_path / f"{name}.npy"]
    for name in g.outputs:
        args += ["--output", tmp_path / f"out_{name}.npy"]
    mte_run(tmp_path / "m.mte", *args)
    for name, want in zip(g.outputs, expected(g, inputs)):
        got = np.load(tmp_path / f"out_{name}.npy")
        assert got.dtype == want.dtype and got.shape == want.shape, name
        np.testing.assert_array_equal(got, want, err_msg=name)
        np.save(tmp_path / "want.npy", want)  # numpy's own file, byte for byte (1-D too)
        assert (tmp_path / f"out_{name}.npy").read_bytes() == (tmp_path / "want.npy").read_bytes()


def test_bind_by_name(tmp_path):
    g = multi_graph()
    g.save(str(tmp_path / "m.mte"))
    inputs = multi_inputs(np.random.default_rng(1))
    for name, a in zip(g.inputs, inputs):
        np.save(tmp_path / f"{name}.npy", a)
    # named inputs out of order, one positional filling the slot left; outputs by name too
    mte_run(tmp_path / "m.mte", "--input", f"mask={tmp_path / 'mask.npy'}",
            "--input", tmp_path / "a.npy", "--input", f"ids={tmp_path / 'ids.npy'}",
            "--output", f"ids_out={tmp_path / 'o_ids.npy'}",
            "--output", tmp_path / "o_flat.npy", "--output", tmp_path / "o_mask.npy")
    want = expected(g, inputs)
    np.testing.assert_array_equal(np.load(tmp_path / "o_flat.npy"), want[0])
    np.testing.assert_array_equal(np.load(tmp_path / "o_ids.npy"), want[1])
    np.testing.assert_array_equal(np.load(tmp_path / "o_mask.npy"), want[2])
    fails(tmp_path / "m.mte", "--input", f"mask={tmp_path / 'mask.npy'}",
          "--input", f"mask={tmp_path / 'mask.npy'}", "--input", tmp_path / "a.npy",
          "--output", tmp_path / "o.npy", "--output", tmp_path / "o2.npy",
          "--output", tmp_path / "o3.npy", message="given twice")
    fails(tmp_path / "m.mte", "--input", f"nosuch={tmp_path / 'mask.npy'}",
          "--input", tmp_path / "a.npy", "--input", tmp_path / "ids.npy",
          "--output", tmp_path / "o.npy", "--output", tmp_path / "o2.npy",
          "--output", tmp_path / "o3.npy",
          message="no input named 'nosuch' (the model's inputs: a, ids, mask)")


def test_npy_versions_read(chain, tmp_path):
    """Version 2.0 and 3.0 files (numpy's writer forced to them) are read as well."""
    model, _, x = chain
    for version in ((2, 0), (3, 0)):
        path = tmp_path / f"x{version[0]}.npy"
        with open(path, "wb") as f:
            np.lib.format.write_array(f, x, version=version)
        mte_run(model, "--input", path, "--output", tmp_path / "y.npy")
        np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), np.maximum(x, 0).reshape(6, 4))


def test_bench_format(chain, tmp_path):
    model, xpath, _ = chain
    r = mte_run(model, "--input", xpath, "--bench", 7, "--warmup", 2, "--threads", 1)
    lines = r.stdout.splitlines()
    assert lines[0] == "bench: 7 runs, 2 warmup, 1 threads"
    m = re.fullmatch(r"latency ms: min (\S+) median (\S+) mean (\S+) p90 (\S+) max (\S+)",
                     lines[1])
    assert m, lines
    lo, med, mean, p90, hi = map(float, m.groups())
    assert 0 <= lo <= med <= p90 <= hi and lo <= mean <= hi
    # with --output the outputs are written after the timed runs
    mte_run(model, "--input", xpath, "--bench", 3, "--output", tmp_path / "y.npy")
    assert np.load(tmp_path / "y.npy").shape == (6, 4)


def test_info(chain):
    model, _, _ = chain
    r = mte_run(model, "--info", "--threads", 1)
    out = r.stdout
    for line in ["model: chain", "inputs: 1", "  x: float32 [2, 3, 4]", "outputs: 1",
                 "  y: float32 [6, 4]", "nodes: 3", "arena bytes: ", "prepared bytes: ",
                 "threads: 1", "Relu -> elementwise", "Reshape -> view"]:
        assert line in out, (line, out)
    assert int(re.search(r"arena bytes: (\d+)", out).group(1)) > 0
    assert int(re.search(r"prepared bytes: (\d+)", out).group(1)) >= 0
    assert len(re.findall(r"^  node \d+ ", out, re.MULTILINE)) == 3


def test_threads_changes_nothing(chain, tmp_path):
    model, xpath, _ = chain
    for n in (1, 2, 3):
        mte_run(model, "--input", xpath, "--output", tmp_path / f"y{n}.npy", "--threads", n)
        assert mte_run(model, "--info", "--threads", n).stdout.count(f"threads: {n}") == 1
    assert (tmp_path / "y1.npy").read_bytes() == (tmp_path / "y3.npy").read_bytes()


def test_help():
    r = mte_run("--help")
    assert r.stdout.startswith("usage: mte-run")


# ---- usage errors (status 2) ----------------------------------------------------------------

@pytest.mark.parametrize("args,message", [
    ((), "no model file"),
    (("m.mte",), "nothing to do"),
    (("m.mte", "--frobnicate"), "unknown option '--frobnicate'"),
    (("m.mte", "--input"), "--input needs a value"),
    (("m.mte", "--info", "--threads", "0"), "--threads needs an integer >= 1"),
    (("m.mte", "--bench", "x"), "--bench needs an integer"),
    (("m.mte", "--bench", "3", "--warmup", "-1"), "--warmup needs an integer >= 0"),
    (("m.mte", "--bench", "99999999999999"), "--bench needs an integer"),
    (("m.mte", "other.npy", "--info"), "unexpected argument 'other.npy'"),
])
def test_usage_errors(args, message):
    assert "usage: mte-run" in fails(*args, status=2, message=message)


# ---- model and input errors (status 1) ------------------------------------------------------

def test_model_errors(tmp_path):
    fails(tmp_path / "missing.mte", "--info", message="MTE_EIO")
    (tmp_path / "bad.mte").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}")
    fails(tmp_path / "bad.mte", "--info", message="MTE_EFORMAT")
    (tmp_path / "empty.mte").write_bytes(b"")
    fails(tmp_path / "empty.mte", "--info")
    g = Graph("unsupported")                      # a computed conv weight: no C kernel
    g.add_input("x", (1, 2, 5, 5), "float32")
    g.add_input("w", (3, 2, 3, 3), "float32")
    g.add_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3])
    g.set_outputs(["y"])
    g.check().save(str(tmp_path / "conv.mte"))
    fails(tmp_path / "conv.mte", "--info", message="must be a constant")


def test_wrong_inputs(chain, tmp_path):
    model, xpath, x = chain
    out = tmp_path / "y.npy"
    np.save(tmp_path / "f64.npy", x.astype(np.float64))
    msg = fails(model, "--input", tmp_path / "f64.npy", "--output", out)
    assert "float64 [2, 3, 4]" in msg and "expects float32 [2, 3, 4]" in msg, msg
    np.save(tmp_path / "shape.npy", x.reshape(4, 6))
    msg = fails(model, "--input", tmp_path / "shape.npy", "--output", out)
    assert "input 0 'x'" in msg and "float32 [4, 6]" in msg and "expects float32 [2, 3, 4]" in msg
    fails(model, "--output", out, message="the model has 1 input (x), 0 given with --input")
    fails(model, "--input", xpath, "--input", xpath, "--output", out, message="2 given with --input")
    fails(model, "--input", xpath, "--output", out, "--output", out, message="the model has 1 output (y), 2 given with --output")
    fails(model, "--input", tmp_path / "nope.npy", "--output", out, message="cannot open")
    fails(model, "--input", tmp_path, "--output", out, message="not a regular file")
    fails(model, "--input", xpath, "--output", tmp_path / "no" / "dir" / "y.npy",
          message="output 0 'y'")
    assert not out.exists()


def npy_bytes(header, data=b"", version=1):
    """A .npy file of this header text (padded with '\\n' at the end by the caller)."""
    h = header.encode("latin1")
    length = struct.pack("<H", len(h)) if version == 1 else struct.pack("<I", len(h))
    return b"\x93NUMPY" + bytes([version, 0]) + length + h + data


GOOD = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 4), }\n"


@pytest.mark.parametrize("name,content,message", [
    ("truncated", npy_bytes(GOOD, b"\0" * 95), "truncated file"),
    ("trailing", npy_bytes(GOOD, b"\0" * 97), "trailing bytes"),
    ("header_cut", npy_bytes(GOOD)[:40], "truncated"),
    ("preamble_cut", b"\x93NUMPY\x01", "not a .npy file"),
    ("bad_magic", b"\x93NUMPZ" + npy_bytes(GOOD, b"\0" * 96)[6:], "does not start with"),
    ("version", b"\x93NUMPY\x04\x00" + npy_bytes(GOOD, b"\0" * 96)[8:], "version 4.0"),
    ("fortran", npy_bytes(GOOD.replace("False", "True"), b"\0" * 96), "fortran_order is True"),
    ("huge_shape", npy_bytes(GOOD.replace("(2, 3, 4)", "(200000, 300000, 4)"), b"\0" * 96),
     "needs 960000000000 (truncated file)"),
    ("overflow", npy_bytes(GOOD.replace("(2, 3, 4)", "(9223372036854775807, 2)")), "overflows"),
    ("big_endian", npy_bytes(GOOD.replace("<f4", ">f4"), b"\0" * 96), "unsupported dtype '>f4'"),
    ("complex", npy_bytes(GOOD.replace("<f4", "<c8"), b"\0" * 192), "unsupported dtype '<c8'"),
    ("object", npy_bytes(GOOD.replace("'<f4'", "'|O'"), b"\0" * 192), "unsupported dtype"),
    ("header_too_long", npy_bytes(GOOD[:-1] + " " * 20000 + "\n", b"\0" * 96, version=2),
     "more than the limit"),
    ("no_newline", npy_bytes(GOOD[:-1] + " ", b"\0" * 96), "malformed header"),
    ("extra_key", npy_bytes(GOOD.replace("}", "'x': 1}"), b"\0" * 96), "unknown header key"),
    ("empty", b"", "not a .npy file"),
])
def test_malformed_npy(chain, tmp_path, name, content, message):
    model, _, _ = chain
    bad = tmp_path / f"{name}.npy"
    bad.write_bytes(content)
    out = tmp_path / "y.npy"
    out.write_bytes(b"old contents")
    msg = fails(model, "--input", bad, "--output", out, message=message)
    assert f"input 0 'x' ({bad})" in msg
    assert out.read_bytes() == b"old contents"  # untouched: outputs are written at the end
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("y.npy")) == ["y.npy"]


def test_huge_shape_is_not_allocated(chain, tmp_path):
    """A header declaring 2**62 bytes in a tiny file is refused from the file size."""
    model, _, _ = chain
    bad = tmp_path / "huge.npy"
    bad.write_bytes(npy_bytes(GOOD.replace("(2, 3, 4)", "(1152921504606846976,)"), b"\0" * 8))
    fails(model, "--input", bad, "--output", tmp_path / "y.npy", message="truncated file")


def test_overwrite_is_atomic(chain, tmp_path):
    """An existing output is replaced in one step; no temporary file remains."""
    model, xpath, x = chain
    out = tmp_path / "y.npy"
    out.write_bytes(b"old")
    mte_run(model, "--input", xpath, "--output", out)
    np.testing.assert_array_equal(np.load(out), np.maximum(x, 0).reshape(6, 4))
    assert not [p for p in os.listdir(tmp_path) if ".tmp." in p]


def test_cli_entry_point(chain):
    """minitorch_edge.runtime._cli finds the binary (here $MTE_RUN) and execs it."""
    model, _, _ = chain
    env = dict(os.environ, MTE_RUN=binary())
    code = "import sys; from minitorch_edge.runtime._cli import main; sys.exit(main())"
    r = subprocess.run([sys.executable, "-c", code, str(model), "--info"], capture_output=True,
                       text=True, env=env, cwd=ROOT, timeout=60)
    assert r.returncode == 0 and "model: chain" in r.stdout, r.stderr
    env["MTE_RUN"] = str(model) + ".missing"
    r = subprocess.run([sys.executable, "-c", code, "--info"], capture_output=True, text=True,
                       env=env, cwd=ROOT, timeout=60)
    assert r.returncode == 1 and r.stderr.startswith("mte-run: ") and "not found" in r.stderr
