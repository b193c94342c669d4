"""minitorch_edge.runtime, the device-side loader: .mte files run on libmte_runtime.so through
cffi give graph.run_reference's outputs; inputs are checked; refused files and failed runs are
typed errors; and the loader works with numpy + cffi alone (none of the training stack).

Only the ops this build's runtime runs are used: the view ops (Reshape, Flatten, Squeeze,
Unsqueeze, Identity, Dropout) and Relu.
"""
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest
from runtime_harness import LIB, ROOT, library, op_graph

from minitorch_edge.graph import Graph

rt = pytest.importorskip("minitorch_edge.runtime")
pytest.importorskip("cffi")


@pytest.fixture(scope="module", autouse=True)
def built():
    library()  # builds native/build/libmte_runtime.so (skips without a C toolchain)


def save(g, tmp_path, name="model.mte"):
    path = tmp_path / name
    g.save(str(path))
    return path


def chain_graph():
    """Relu -> Reshape -> Relu on a float32 input, Flatten -> Unsqueeze on an int64 one:
    two inputs, three outputs (one of them a view of an input)."""
    g = Graph("chain")
    g.add_input("x", (2, 3, 4), "float32")
    g.add_input("idx", (3, 2), "int64")
    shape = g.add_constant("shape", np.array([6, -1], np.int64))
    axes = g.add_constant("axes", np.array([0], np.int64))
    g.add_node("Relu", ["x"], ["r"])
    g.add_node("Reshape", ["r", shape], ["y"])
    g.add_node("Relu", ["y"], ["z"])
    g.add_node("Flatten", ["idx"], ["f"], axis=0)
    g.add_node("Unsqueeze", ["f", axes], ["u"])
    g.add_node("Identity", ["x"], ["same"])
    g.set_outputs(["z", "u", "same"])
    return g


def chain_inputs(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((2, 3, 4)).astype(np.float32),
            rng.integers(-2**40, 2**40, (3, 2), dtype=np.int64)]


@pytest.fixture
def chain(tmp_path):
    g = chain_graph()
    with rt.load(save(g, tmp_path)) as model:
        yield g, model


def assert_same(got, want):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        b = np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)  # bit-exact for these ops


# ---- outputs
@pytest.mark.parametrize("op,attrs,dtype", [
    ("Relu", {}, np.float32), ("Identity", {}, np.int64), ("Identity", {}, np.float32),
    ("Flatten", {"axis": 2}, np.float32), ("Dropout", {}, np.float32)])
def test_one_op_matches_reference(tmp_path, op, attrs, dtype):
    x = (np.random.default_rng(1).standard_normal((2, 3, 4, 5)) * 100).astype(dtype)
    g = op_graph(op, [x], **attrs)
    model = rt.load(save(g, tmp_path))
    got = model(x)
    assert isinstance(got, np.ndarray)
    assert_same(got, g.run(x))
    model.close()


@pytest.mark.parametrize("x", [np.zeros((0, 3), np.float32), np.array([[True, False]]),
                               np.arange(5, dtype=np.uint8)], ids=["empty", "bool", "uint8"])
def test_empty_bool_and_read_only_inputs(tmp_path, x):
    x.flags.writeable = False
    g = op_graph("Relu" if x.dtype == np.float32 else "Identity", [x])
    assert_same(rt.load(save(g, tmp_path))(x), g.run(x))


def test_squeeze_reshape_int64(tmp_path):
    x = np.arange(24, dtype=np.int64).reshape(1, 4, 1, 6)
    g = op_graph("Squeeze", [x], constants=[np.array([0, 2], np.int64)])
    assert_same(rt.load(save(g, tmp_path))(x), g.run(x))


def test_chain_several_inputs_outputs(chain):
    g, model = chain
    x, idx = chain_inputs()
    got = model(x, idx)
    assert isinstance(got, tuple) and len(got) == 3
    assert_same(got, g.run(x, idx))
    assert_same(model([x, idx]), got)           # one list, as Executor takes it
    assert_same(model.run((x, idx)), got)


def test_dict_inputs(chain):
    g, model = chain
    x, idx = chain_inputs(2)
    assert_same(model.run({"idx": idx, "x": x}), g.run(x, idx))
    with pytest.raises(TypeError, match=r"missing \['idx'\]"):
        model.run({"x": x})
    with pytest.raises(TypeError, match=r"unknown \['w'\]"):
        model.run({"x": x, "idx": idx, "w": x})


def test_outputs_are_fresh_per_call(chain):
    _, model = chain
    x, idx = chain_inputs()
    a = model(x, idx)
    b = model(-x, idx)
    assert a[0] is not b[0] and not np.array_equal(a[0], b[0])
    assert_same(a, model(x, idx))


def test_non_contiguous_input_is_made_contiguous(chain):
    g, model = chain
    big = np.random.default_rng(3).standard_normal((2, 3, 8)).astype(np.float32)
    x = big[:, :, ::2]
    idx = np.asfortranarray(chain_inputs()[1])
    assert not x.flags.c_contiguous and not idx.flags.c_contiguous
    assert_same(model(x, idx), g.run(np.ascontiguousarray(x), np.ascontiguousarray(idx)))


def test_introspection(chain):
    _, model = chain
    assert [tuple(i) for i in model.inputs] == [("x", (2, 3, 4), np.dtype(np.float32)),
                                                ("idx", (3, 2), np.dtype(np.int64))]
    assert [(o.name, o.shape, o.dtype) for o in model.outputs] == [
        ("z", (6, 4), np.float32), ("u", (1, 1, 6), np.int64), ("same", (2, 3, 4), np.float32)]
    assert model.arena_bytes >= 0 and model.prepared_bytes >= 0
    assert [k.op for k in model.kernels] == ["Relu", "Reshape", "Relu", "Flatten",
                                             "Unsqueeze", "Identity"]
    assert all(k.node and k.kernel for k in model.kernels)
    assert "chain" in repr(model)


# ---- input errors
def test_wrong_count(chain):
    _, model = chain
    x, _ = chain_inputs()
    with pytest.raises(TypeError, match=r"takes 2 inputs \(x, idx\), got 1"):
        model(x)
    with pytest.raises(TypeError, match="got 3"):
        model(x, x, x)


def test_wrong_dtype_is_not_cast(chain):
    _, model = chain
    x, idx = chain_inputs()
    with pytest.raises(ValueError, match=r"input 'x' must be float32\[2, 3, 4\], got "
                                         r"float64\[2, 3, 4\].*x\.astype\(np\.float32\)"):
        model(x.astype(np.float64), idx)
    with pytest.raises(ValueError, match=r"input 'idx' must be int64.*astype\(np\.int64\)"):
        model(x, idx.astype(np.int32))
    with pytest.raises(ValueError, match="input 'x' must be float32"):
        model(x.tolist(), idx)  # a list becomes float64: not silently cast either


def test_wrong_shape(chain):
    _, model = chain
    x, idx = chain_inputs()
    with pytest.raises(ValueError, match=r"input 'x' must be float32\[2, 3, 4\], got "
                                         r"float32\[3, 2, 4\]"):
        model(x.reshape(3, 2, 4), idx)
    with pytest.raises(ValueError, match=r"input 'idx' must be int64\[3, 2\], got int64\[6\]"):
        model(x, idx.ravel())


# ---- refused files, closing, threads
def test_damaged_file_is_refused(chain, tmp_path):
    g, _ = chain
    data = save(g, tmp_path).read_bytes()
    bad = tmp_path / "bad.mte"
    bad.write_bytes(data[:-1])
    with pytest.raises(rt.ModelFormatError, match="past the data section") as e:
        rt.load(bad)
    assert isinstance(e.value, ValueError)
    assert e.value.status == -8 and e.value.status_name == "MTE_EFORMAT"
    assert "past the data section" in e.value.message and e.value.path == str(bad)
    bad.write_bytes(b"not a model")
    with pytest.raises(rt.ModelFormatError) as e:
        rt.load(bad)
    assert e.value.status == -8 and e.value.message


def test_unsupported_op_is_refused(tmp_path):
    """A conv whose weight is computed (a graph input) has no C kernel."""
    x, w = np.ones((1, 2, 5, 5), np.float32), np.ones((3, 2, 3, 3), np.float32)
    g = op_graph("Conv", [x, w], kernel_shape=[3, 3])
    with pytest.raises(rt.ModelFormatError) as e:
        rt.load(save(g, tmp_path))
    assert e.value.status == -4 and e.value.status_name == "MTE_EUNSUPPORTED"


def test_run_error_carries_the_status():
    e = rt.ModelRunError("net", -2, "out of memory in node Conv_1")
    assert isinstance(e, RuntimeError) and e.status == -2 and e.status_name == "MTE_ENOMEM"
    assert str(e) == "running net: MTE_ENOMEM: out of memory in node Conv_1"


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="no model file"):
        rt.load(tmp_path / "nothing.mte")


def test_close_twice_and_use_after_close(tmp_path):
    g = chain_graph()
    model = rt.load(save(g, tmp_path))
    model.close()
    model.close()
    assert model.closed
    with pytest.raises(rt.ModelClosedError, match="closed") as e:
        model(*chain_inputs())
    assert isinstance(e.value, RuntimeError)
    with rt.load(save(g, tmp_path, "b.mte")) as m2:
        assert not m2.closed
    assert m2.closed


def test_threads(tmp_path):
    g = chain_graph()
    path = save(g, tmp_path)
    before = rt.get_num_threads()
    try:
        outs = [rt.load(path, threads=n)(*chain_inputs()) for n in (1, 2)]
        assert rt.get_num_threads() in (1, 2)
        assert_same(outs[0], outs[1])
        for bad in (0, -1, 2.0, True):
            with pytest.raises(ValueError, match="threads"):
                rt.load(path, threads=bad)
    finally:
        rt.set_num_threads(before)


def test_library_not_found(monkeypatch, tmp_path):
    from minitorch_edge.runtime import _library
    monkeypatch.delenv("MTE_RUNTIME_LIBRARY", raising=False)
    monkeypatch.setattr(_library, "_HERE", str(tmp_path / "pkg" / "minitorch_edge" / "runtime"))
    with pytest.raises(rt.LibraryNotFoundError) as e:
        rt.library_path()
    text = str(e.value)
    for part in ("MTE_RUNTIME_LIBRARY", os.path.join("runtime", "lib", "libmte_runtime.so"),
                 os.path.join("native", "build", "libmte_runtime.so"),
                 "make -C native runtime", "pip install ."):
        assert part in text
    monkeypatch.setenv("MTE_RUNTIME_LIBRARY", str(tmp_path / "missing.so"))
    with pytest.raises(rt.LibraryNotFoundError, match="missing.so"):
        rt.library_path()


def test_library_from_env(monkeypatch):
    from minitorch_edge.runtime import _library
    monkeypatch.setenv("MTE_RUNTIME_LIBRARY", LIB)
    assert _library.library_path() == LIB


# ---- what the loader imports
_BLOCKED = ("minitorch_edge.tensor", "minitorch_edge.nn", "minitorch_edge.ops",
            "minitorch_edge.graph", "minitorch_edge._api", "torch")

_ISOLATED = """
import sys
BLOCKED = {blocked!r}

class Block:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name in BLOCKED or name.split(".")[0] == "torch":
            raise ImportError("blocked by the test: " + name)
        return None

sys.meta_path.insert(0, Block)
import numpy as np
import minitorch_edge.runtime as rt
x = np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 3, 4)
with rt.load({path!r}) as model:
    z, u, same = model(x, np.arange(6, dtype=np.int64).reshape(3, 2))
assert (z == np.maximum(x, 0).reshape(6, 4)).all() and (same == x).all(), z
assert u.shape == (1, 1, 6) and (u.ravel() == np.arange(6)).all(), u
loaded = sorted(m for m in sys.modules if m in BLOCKED or m.startswith(BLOCKED))
assert not loaded, loaded
print("mte modules:", sorted(m for m in sys.modules if m.startswith("minitorch_edge")))
"""


def _run_isolated(path, python=sys.executable, cwd=ROOT, env=None):
    code = _ISOLATED.format(blocked=_BLOCKED, path=str(path))
    return subprocess.run([python, "-c", code], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_runtime_imports_no_training_stack(tmp_path):
    path = save(chain_graph(), tmp_path)
    proc = _run_isolated(path)
    assert proc.returncode == 0, proc.stderr
    mods = proc.stdout.split("mte modules:")[1]
    assert "minitorch_edge.runtime" in mods and "minitorch_edge.dtypes" not in mods


def test_runtime_in_fresh_venv_with_numpy_and_cffi_only(tmp_path):
    """A venv holding only numpy + cffi, the package's __init__.py, _version.py and runtime/:
    the loader runs there (library through $MTE_RUNTIME_LIBRARY). Needs pip to reach an index;
    skips when it cannot. Takes about half a minute (pip)."""
    start = time.monotonic()
    venv = tmp_path / "venv"
    made = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True,
                          text=True, timeout=300)
    if made.returncode != 0:
        pytest.skip(f"python -m venv failed: {made.stderr[-300:]}")
    python = str(venv / "bin" / "python")
    pip = subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                          "numpy", "cffi"], capture_output=True, text=True, timeout=600)
    if pip.returncode != 0:
        pytest.skip(f"pip could not install numpy + cffi (no index?): {pip.stderr[-300:]}")
    app = tmp_path / "app"
    pkg = app / "minitorch_edge"
    pkg.mkdir(parents=True)
    src = os.path.join(ROOT, "minitorch_edge")
    for name in ("__init__.py", "_version.py"):
        shutil.copy(os.path.join(src, name), pkg / name)
    shutil.copytree(os.path.join(src, "runtime"), pkg / "runtime",
                    ignore=shutil.ignore_patterns("__pycache__", "lib"))
    path = save(chain_graph(), tmp_path)
    env = {"PATH": os.environ.get("PATH", ""), "MTE_RUNTIME_LIBRARY": LIB}
    proc = _run_isolated(path, python=python, cwd=str(app), env=env)
    assert proc.returncode == 0, proc.stderr
    print(f"fresh venv test: {time.monotonic() - start:.1f} s")


_EXIT_SCRIPT = """
import numpy as np
from minitorch_edge import runtime
model = runtime.load({path!r}, threads=2)
x = np.random.default_rng(0).standard_normal((1, 8, 48, 48)).astype(np.float32)
for _ in range(5):
    model(x)
print("ran")
"""


def test_exit_while_openmp_workers_spin(tmp_path):
    """The interpreter exits cleanly after 2-thread runs with OpenMP's workers spinning
    (OMP_WAIT_POLICY=active): cffi dlcloses the library at exit, and the library is linked
    -z nodelete so that libgomp stays mapped under those threads (a segfault before)."""
    import minitorch_edge as mte
    from minitorch_edge import nn
    mte.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(8, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3, padding=1))
    x = mte.randn(1, 8, 48, 48)
    path = tmp_path / "conv.int8.mte"
    mte.export_model(net, x, str(path), calibration_data=[x])
    env = dict(os.environ, OMP_WAIT_POLICY="active", OMP_NUM_THREADS="2",
               MTE_RUNTIME_LIBRARY=LIB)
    for _ in range(3):   # the crash needed a worker to be inside libgomp at the unmap
        proc = subprocess.run([sys.executable, "-c", _EXIT_SCRIPT.format(path=str(path))],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0 and "ran" in proc.stdout, (proc.returncode, proc.stderr)
