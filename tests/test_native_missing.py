"""When the native extension is missing: `import minitorch_edge` with MTE_BACKEND=native warns
once, saying why (the build's error that setup.py keeps next to the package, or _C's import
error), and `minitorch-edge info` prints the reason as its native_error row. Each case runs in a
fresh interpreter in which importing minitorch_edge._C is made to fail."""
import os
import subprocess
import sys

import pytest
from runtime_harness import ROOT

# a meta-path finder that makes `minitorch_edge._C` absent (or present but broken)
BLOCK = """
import sys
class _Block:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "minitorch_edge._C":
            if {broken!r}:
                raise ImportError("libmte.so: undefined symbol: mte_gemm_avx512")
            raise ModuleNotFoundError("No module named 'minitorch_edge._C'", name=name)
sys.meta_path.insert(0, _Block)
"""
BUILD_ERROR = ("the native extension minitorch_edge._C was not built: building the native "
               "extension failed: command 'gcc' failed: No such file or directory")


def run(code, backend, error_file=None, broken=False, args=()):
    env = dict(os.environ, MTE_BACKEND=backend, PYTHONPATH=ROOT)
    env.pop("MTE_BUILD_ERROR_FILE", None)
    if error_file is not None:
        env["MTE_BUILD_ERROR_FILE"] = str(error_file)
    proc = subprocess.run([sys.executable, *args] if args else
                          [sys.executable, "-c", BLOCK.format(broken=broken) + code],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


WARNINGS = """
import warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import minitorch_edge as mte
    mte.zeros(1)
    mte.backend.use("native")          # asked again: no second warning
for w in caught:
    if issubclass(w.category, RuntimeWarning):
        print("WARNING:", w.message)
print("backend:", mte.backend.active())
print("native_error:", mte.backend.info().get("native_error"))
"""


@pytest.fixture
def error_file(tmp_path):
    path = tmp_path / "_native_build_error.txt"
    path.write_text(BUILD_ERROR + "\n(machine x86_64, Python 3.11.7)\n")
    return path


def test_native_asked_for_but_missing_warns_once_with_the_build_error(error_file):
    out = run(WARNINGS, "native", error_file)
    warnings = [line for line in out.splitlines() if line.startswith("WARNING:")]
    assert len(warnings) == 1, out
    assert "MTE_BACKEND=native was asked for, but the native extension is missing" in out
    assert "command 'gcc' failed" in warnings[0] and "minitorch-edge info" in warnings[0]
    assert "backend: numpy" in out
    assert f"native_error: {BUILD_ERROR}" in out and str(error_file) in out


def test_auto_falls_back_quietly_but_info_says_why(error_file):
    out = run(WARNINGS.replace('mte.backend.use("native")', 'mte.backend.use("auto")'), "auto",
              error_file)
    assert "WARNING:" not in out
    assert "command 'gcc' failed" in out


def test_a_broken_extension_reports_its_import_error(error_file):
    out = run(WARNINGS, "native", error_file, broken=True)
    assert "minitorch_edge._C is there but does not import (ImportError: libmte.so: undefined " \
           "symbol: mte_gemm_avx512)" in out
    assert out.count("WARNING:") == 1


def test_no_build_record_still_warns_clearly(tmp_path):
    out = run(WARNINGS, "native", tmp_path / "absent.txt")
    assert "no build record" in out and out.count("WARNING:") == 1
    assert "native_error: None" in out


def test_minitorch_edge_info_prints_the_reason(error_file):
    code = "import sys, runpy\nsys.argv = ['minitorch-edge', 'info']\n" \
           "runpy.run_module('minitorch_edge', run_name='__main__')\n"
    out = run(code, "auto", error_file)
    rows = [line for line in out.splitlines() if line.startswith("native_error")]
    assert len(rows) == 1 and "command 'gcc' failed" in rows[0], out
    assert "not built (numpy backend only)" in out


def test_setup_keeps_the_reason_when_the_extension_is_skipped(tmp_path):
    env = dict(os.environ, MTE_NO_EXTENSION="1")
    proc = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib",
                           str(tmp_path / "lib")], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    record = tmp_path / "lib" / "minitorch_edge" / "_native_build_error.txt"
    assert "MTE_NO_EXTENSION=1" in record.read_text()
    assert not os.path.exists(os.path.join(ROOT, "minitorch_edge", "_native_build_error.txt"))


def test_setup_compiles_the_extensions_sources_in_parallel_keeping_their_order():
    """setup.py's _parallel_compile (run on its own: setup.py cannot be imported) hands each
    source to the compiler in its own thread and returns the objects in the sources' order."""
    import ast
    import threading
    import time
    src = open(os.path.join(ROOT, "setup.py")).read()
    fn = next(n for n in ast.parse(src).body
              if isinstance(n, ast.FunctionDef) and n.name == "_parallel_compile")
    namespace = {}
    exec("from concurrent.futures import ThreadPoolExecutor\n" + ast.get_source_segment(src, fn),
         namespace)
    lock, running, peak = threading.Lock(), [0], [0]

    def compile(sources, output_dir=None, **kwargs):
        assert len(sources) == 1 and kwargs == {"macros": [("A", "1")]}
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.05)
        with lock:
            running[0] -= 1
        return [sources[0] + ".o"]

    parallel = namespace["_parallel_compile"](compile, 4)
    sources = [f"bindings/b{i}.cpp" for i in range(10)]
    assert parallel(sources, output_dir="build", macros=[("A", "1")]) == \
        [s + ".o" for s in sources]
    assert peak[0] == 4
