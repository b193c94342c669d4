"""The C runtime's loader (native/runtime/, libmte_runtime.so through ctypes) against Python.

* Zoo graphs (MobileNetV2, ResNet-18, float and int8, fused and unfused) written as .mte files
  load in C, and the C memory plan equals planner.py's: arena, naive and lower-bound bytes and
  every value's offset.
* The C op table is Python's (opset.names(c_runtime_only=True): the ops with a C kernel).
* A damaged file is refused with a message.

The files are written by graph/modelfile.py (Graph.save). The shared library is built with
`make -C native runtime` when missing; without a C compiler the test is skipped.
"""
import ctypes
import os
import shutil
import subprocess

import numpy as np
import pytest

from minitorch_edge import graph, models
from minitorch_edge.graph import opset

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIB = os.path.join(ROOT, "native", "build", "libmte_runtime.so")
CODES = {"float32": "F32", "float64": "F64", "float16": "F16", "int8": "I8", "int16": "I16",
         "int32": "I32", "int64": "I64", "uint8": "U8", "bool": "BOOL"}


def _library():
    if not os.path.exists(LIB):
        if shutil.which("make") is None or shutil.which("cc") is None:
            pytest.skip("no C toolchain to build native/build/libmte_runtime.so")
        subprocess.run(["make", "-C", os.path.join(ROOT, "native"), "runtime"], check=True,
                       stdout=subprocess.DEVNULL)
    lib = ctypes.CDLL(LIB)
    lib.mte_model_load.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p),
                                   ctypes.c_char_p, ctypes.c_size_t]
    lib.mte_model_free.argtypes = [ctypes.c_void_p]
    for name in ("arena", "naive", "lower_bound"):
        fn = getattr(lib, f"mte_model_{name}_bytes")
        fn.argtypes, fn.restype = [ctypes.c_void_p], ctypes.c_int64
    lib.mte_model_find_value.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.mte_model_value_offset.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.mte_model_value_offset.restype = ctypes.c_int64
    lib.mte_model_num_nodes.argtypes = [ctypes.c_void_p]
    lib.mte_model_input_name.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.mte_model_input_name.restype = ctypes.c_char_p
    lib.mte_runtime_op_name.restype = ctypes.c_char_p
    return lib


@pytest.fixture(scope="module")
def lib():
    return _library()


def _save(g, path):
    g.save(path)          # graph/modelfile.py: the format native/runtime/README.md reads


def _load(lib, path):
    model, err = ctypes.c_void_p(), ctypes.create_string_buffer(1024)
    st = lib.mte_model_load(os.fsencode(path), ctypes.byref(model), err, 1024)
    return st, model, err.value.decode()


def _graphs():
    from minitorch_edge import quant
    x = np.random.RandomState(0).randn(1, 3, 32, 32).astype(np.float32)
    out = []
    for name, make in [("mobilenet_v2", models.mobilenet_v2), ("resnet18", models.resnet18)]:
        m = make()
        m.eval()
        traced = graph.trace(m, x)
        out += [(f"{name}-unfused", traced), (f"{name}-float", traced.optimize()),
                (f"{name}-int8", quant.quantize(m, [x]))]
    return out


@pytest.fixture(scope="module")
def zoo():
    return _graphs()


def test_op_table_matches_python(lib):
    names = [lib.mte_runtime_op_name(i).decode() for i in range(lib.mte_runtime_num_ops())]
    assert names == opset.names(c_runtime_only=True)


def test_plan_matches_python(lib, zoo, tmp_path):
    for tag, g in zoo:
        path = tmp_path / f"{tag}.mte"
        _save(g, path)
        st, model, err = _load(lib, path)
        assert st == 0, f"{tag}: {err}"
        try:
            plan = g.plan_memory()
            assert lib.mte_model_num_nodes(model) == len(g.nodes)
            assert lib.mte_model_arena_bytes(model) == plan.arena_bytes, tag
            assert lib.mte_model_naive_bytes(model) == plan.naive_bytes, tag
            assert lib.mte_model_lower_bound_bytes(model) == plan.lower_bound_bytes, tag
            for name in g.values:
                idx = lib.mte_model_find_value(model, name.encode())
                assert idx >= 0, name
                got = lib.mte_model_value_offset(model, idx)
                if name in plan.offsets:
                    want = plan.offsets[name]
                elif name in plan.views:
                    want = plan.buffer_of(name).offset
                else:
                    want = -1
                assert got == want, f"{tag}: value {name!r}: C offset {got}, Python {want}"
        finally:
            lib.mte_model_free(model)


def test_damaged_file_is_refused(lib, zoo, tmp_path):
    tag, g = zoo[4]                                   # resnet18-float
    path = tmp_path / "r18.mte"
    _save(g, path)
    data = bytearray(path.read_bytes())
    bad = tmp_path / "bad.mte"
    bad.write_bytes(bytes(data[:-1]))
    st, _, err = _load(lib, bad)
    assert st == -8 and "past the data section" in err
    n = int.from_bytes(data[:8], "little")
    text = data[8:8 + n].replace(b'\\"Gemm\\"', b'\\"Gemq\\"', 1)   # same length
    bad.write_bytes(bytes(data[:8]) + text + bytes(data[8 + n:]))
    st, _, err = _load(lib, bad)
    assert st == -8 and "unknown op" in err and "Gemq" in err
