"""The backend's dispatch table (backend/__init__.py): every kernel has a numpy twin and, where
the table names one, a native version with the same signature; use() binds each name to one
of them; a kernel set missing from the build means the numpy twin; `minitorch-edge info`
prints the table."""
import inspect
import io
import os
import types

import pytest

from minitorch_edge import backend, cli
from minitorch_edge.backend import numpy_backend


def test_every_row_names_real_functions_with_one_signature():
    assert len(backend.KERNELS) >= 13
    for name, kernel in backend.KERNELS.items():
        assert kernel.numpy is getattr(numpy_backend, name)
        assert name in backend.__all__
        if kernel.native is None:
            continue
        try:
            module = __import__(f"minitorch_edge.backend.{kernel.native}", fromlist=[name])
        except ImportError:      # the extension is not built: nothing more to compare
            continue
        native = getattr(module, name)
        assert (list(inspect.signature(native).parameters)
                == list(inspect.signature(kernel.numpy).parameters)), name


def test_use_binds_every_kernel_and_table_says_which():
    try:
        backend.use("numpy")
        assert backend.active() == "numpy"
        for name, kernel in backend.KERNELS.items():
            assert getattr(backend, name) is kernel.numpy
        assert set(backend.table().values()) == {"numpy"}
        backend.use("auto")
        ext = backend._load_extension()
        for name, kernel in backend.KERNELS.items():
            impl = getattr(backend, name)
            built = (ext is not None and kernel.native is not None
                     and kernel.needs in ext.kernels())
            assert (impl is not kernel.numpy) == built, name
            assert backend.table()[name] == "numpy" if not built else \
                backend.table()[name].startswith("native[")
    finally:
        backend.use(os.environ.get("MTE_BACKEND", "auto"))


def test_a_kernel_set_missing_from_the_build_runs_the_numpy_twin():
    """One convention for "not built": the kernel set is absent from _C.kernels()."""
    fake = types.SimpleNamespace(kernels=lambda: ["sgemm"])
    for kernel in backend.KERNELS.values():
        impl = backend._native_function(kernel, fake)
        if kernel.needs == "sgemm":
            assert impl is not None and impl.__name__ == kernel.name
        else:
            assert impl is None, kernel.name
    assert all(backend._native_function(k, None) is None for k in backend.KERNELS.values())


def test_info_prints_the_dispatch_table():
    out = io.StringIO()
    cli.info(out=out)
    text = out.getvalue()
    assert "kernel dispatch" in text
    for name, impl in backend.table().items():
        assert any(line.split() == [name, impl] for line in text.splitlines()), name


def test_bad_backend_name_is_refused_and_nothing_changes():
    before = {name: getattr(backend, name) for name in backend.KERNELS}
    with pytest.raises(ValueError, match="MTE_BACKEND must be one of numpy, native, auto"):
        backend.use("cuda")
    assert before == {name: getattr(backend, name) for name in backend.KERNELS}
