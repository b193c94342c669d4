"""The package's lazy __init__.py (PEP 562): `import minitorch_edge` loads only _version; the
full API comes, once and complete, on the first attribute access or the first import of any
submodule but runtime/ -- so programs that import a submodule directly behave as before
(Tensor has every method ops/ and sampling.py attach). Each case runs in a fresh interpreter.
"""
import subprocess
import sys

import pytest
from runtime_harness import ROOT

CHECK_FULL = """
import sys
pkg = sys.modules["minitorch_edge"]
T = sys.modules["minitorch_edge.tensor"].Tensor
assert pkg._full_api_loaded and pkg._FullApiFinder not in sys.meta_path
assert hasattr(T, "relu") and hasattr(T, "matmul"), "ops/ methods missing"
assert T.normal_.__module__ == "minitorch_edge.sampling", T.normal_.__module__
for name, mod in list(sys.modules.items()):
    if name.startswith("minitorch_edge") and mod is not None:
        loader = getattr(mod.__spec__, "loader", None)
        assert type(loader).__name__ != "_AlreadyLoaded", name
print("full ok")
"""


def run(code):
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_bare_import_loads_only_version():
    out = run("import sys, minitorch_edge as m\n"
              "print(sorted(k for k in sys.modules if k.startswith('minitorch_edge')))\n"
              "print(m.__version__)")
    assert out.splitlines()[0] == "['minitorch_edge', 'minitorch_edge._version']"


@pytest.mark.parametrize("entry", [
    "import minitorch_edge as torch; x = torch.zeros(3) + 1; assert x.sum().item() == 3",
    "from minitorch_edge.tensor import Tensor; Tensor([1.0]).relu()",
    "import minitorch_edge.nn as nn; nn.Linear(2, 3)",
    "from minitorch_edge.nn import functional as F; import minitorch_edge.nn.parameter",
    "import minitorch_edge.nn.functional.loss",
    "from minitorch_edge.graph import Graph",
    "import minitorch_edge.utils.serialization",
    "import minitorch_edge.dtypes",
    "from minitorch_edge import Tensor, nn",
    "from minitorch_edge import *; assert callable(zeros) and nn.Linear and export_model",
    "import minitorch_edge as m; assert 'zeros' in dir(m) and 'Tensor' in m.__all__",
    "import minitorch_edge as m; m.nn.Linear(1, 1); m.graph.Graph",
    "import minitorch_edge as m; assert m.tensor([1.0, 2.0]).shape == (2,)",   # not tensor.py
    "import minitorch_edge.cli",
])
def test_entry_points_get_the_full_api(entry):
    assert "full ok" in run(entry + "\n" + CHECK_FULL)


def test_same_objects_as_the_submodules():
    run("import minitorch_edge as m, minitorch_edge.tensor as t, minitorch_edge.nn as nn\n"
        "assert m.Tensor is t.Tensor and m.nn is nn and m.float32 is m.dtypes.float32\n"
        "assert m.load.__module__ == 'minitorch_edge.utils.serialization'\n"
        "assert m.export_model.__module__ == 'minitorch_edge'\n"
        "import importlib; importlib.reload(m.nn.parameter)\n")


def test_unknown_attribute():
    run("import minitorch_edge as m\n"
        "try:\n    m.no_such_thing\nexcept AttributeError as e:\n"
        "    assert 'no_such_thing' in str(e)\nelse:\n    raise SystemExit('no error')\n"
        "assert not hasattr(m, '__wrapped__')")


def test_runtime_attribute_stays_light():
    out = run("import sys, minitorch_edge as m\nm.runtime.load\n"
              "from minitorch_edge import runtime\n"
              "print('minitorch_edge.tensor' in sys.modules, 'minitorch_edge._api' in sys.modules)")
    assert out.split() == ["False", "False"]


def test_python_dash_m():
    out = subprocess.run([sys.executable, "-m", "minitorch_edge", "info"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "minitorch_edge" in out.stdout
