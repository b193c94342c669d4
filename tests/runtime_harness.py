"""Running a Graph on the C runtime from the tests: save it as a .mte file, load it with
native/build/libmte_runtime.so through ctypes and run it on numpy arrays.

    from runtime_harness import run_c, check_c, op_graph
    g = op_graph("Relu", [x])                 # one node over inputs (and constants)
    check_c(g, [x])                           # C outputs == graph.run_reference's

The library is (re)built with `make -C native runtime` once per test session (make only
recompiles what changed), so a test never runs a stale build. Tests skip when there is no C
toolchain.
"""
import ctypes
import os
import shutil
import subprocess
import tempfile
from unittest import mock

import numpy as np
import pytest

from minitorch_edge import graph
from minitorch_edge.graph import Graph

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIB = os.path.join(ROOT, "native", "build", "libmte_runtime.so")
DTYPES = {1: "float32", 2: "float64", 3: "float16", 4: "int8", 5: "int16", 6: "int32",
          7: "int64", 8: "uint8", 9: "bool"}
_lib = None


def library():
    """The runtime's shared library (built or brought up to date first)."""
    global _lib
    if _lib is not None:
        return _lib
    if shutil.which("make") is None or shutil.which("cc") is None:
        pytest.skip("no C toolchain to build native/build/libmte_runtime.so")
    subprocess.run(["make", "-s", "-C", os.path.join(ROOT, "native"), "runtime"], check=True,
                   stdout=subprocess.DEVNULL)
    lib = ctypes.CDLL(LIB)
    p, i, i64, s = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64, ctypes.c_char_p
    sigs = {
        "mte_model_load": ([s, ctypes.POINTER(p), s, ctypes.c_size_t], i),
        "mte_model_free": ([p], None),
        "mte_model_run": ([p, ctypes.POINTER(p), ctypes.POINTER(p), s, ctypes.c_size_t], i),
        "mte_model_num_inputs": ([p], i), "mte_model_num_outputs": ([p], i),
        "mte_model_num_nodes": ([p], i),
        "mte_model_output_ndim": ([p, i], i), "mte_model_output_dtype": ([p, i], i),
        "mte_model_output_shape": ([p, i], ctypes.POINTER(i64)),
        "mte_model_node_kernel": ([p, i], s), "mte_model_node_op": ([p, i], s),
        "mte_model_arena_bytes": ([p], i64), "mte_model_prepared_bytes": ([p], i64),
        "mte_runtime_status_string": ([i], s),
        "mte_set_num_threads": ([i], i),
    }
    for name, (args, res) in sigs.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, res
    _lib = lib
    return lib


class CRuntimeError(RuntimeError):
    def __init__(self, status, message):
        super().__init__(message)
        self.status, self.message = status, message


class CModel:
    """A model loaded by the C runtime: call it with numpy arrays."""

    def __init__(self, path):
        self.lib = lib = library()
        self.handle, err = ctypes.c_void_p(), ctypes.create_string_buffer(2048)
        st = lib.mte_model_load(os.fsencode(path), ctypes.byref(self.handle), err, 2048)
        if st != 0:
            raise CRuntimeError(st, err.value.decode())
        h = self.handle
        self.outputs = []
        for k in range(lib.mte_model_num_outputs(h)):
            nd = lib.mte_model_output_ndim(h, k)
            shape = tuple(lib.mte_model_output_shape(h, k)[d] for d in range(nd))
            self.outputs.append((shape, DTYPES[lib.mte_model_output_dtype(h, k)]))
        self.kernels = [(lib.mte_model_node_op(h, k).decode(),
                         (lib.mte_model_node_kernel(h, k) or b"?").decode())
                        for k in range(lib.mte_model_num_nodes(h))]

    def __call__(self, *arrays):
        want = self.lib.mte_model_num_inputs(self.handle)
        if len(arrays) != want:
            raise TypeError(f"the model takes {want} inputs, got {len(arrays)}")
        ins = [np.ascontiguousarray(a) for a in arrays]
        outs = [np.empty(shape, dtype) for shape, dtype in self.outputs]
        in_ptrs = (ctypes.c_void_p * max(1, len(ins)))(*[a.ctypes.data for a in ins])
        out_ptrs = (ctypes.c_void_p * max(1, len(outs)))(*[a.ctypes.data for a in outs])
        err = ctypes.create_string_buffer(2048)
        st = self.lib.mte_model_run(self.handle, in_ptrs, out_ptrs, err, 2048)
        if st != 0:
            raise CRuntimeError(st, err.value.decode())
        return outs

    def close(self):
        if self.handle:
            self.lib.mte_model_free(self.handle)
            self.handle = None

    def __del__(self):
        self.close()


def load_c(g, unchecked=False):
    """`g` saved to a temporary .mte file and loaded by the C runtime (CRuntimeError if the
    runtime refuses it). unchecked=True skips Graph.check when saving, to write the malformed
    graphs the C loader must refuse."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "model.mte")
        if unchecked:
            with mock.patch.object(Graph, "check", lambda self: self):
                g.save(path)
        else:
            g.save(path)
        return CModel(path)


def run_c(g, inputs):
    """The C runtime's outputs of `g` on `inputs` (a list of arrays), as a list."""
    return load_c(g)(*inputs)


def check_c(g, inputs, rtol=1e-5, atol=1e-6, exact=False):
    """Run `g` in C and with graph.run_reference; the outputs must agree: bit for bit for
    integer/bool outputs (and everywhere when exact=True), else within rtol/atol relative to
    the output's scale. Returns the C outputs."""
    got = run_c(g, inputs)
    want = g.run(*inputs)
    want = list(want) if isinstance(want, tuple) else [want]
    for name, a, b in zip(g.outputs, got, want):
        b = np.asarray(b)
        assert a.shape == b.shape and a.dtype == b.dtype, (name, a.shape, a.dtype, b.shape,
                                                           b.dtype)
        if exact or a.dtype.kind != "f":
            np.testing.assert_array_equal(a, b, err_msg=name)
        else:
            scale = max(1.0, float(np.abs(b).max())) if b.size else 1.0
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol * scale, err_msg=name)
    return got


def op_graph(op, inputs, constants=(), n_outputs=1, **attrs):
    """A graph of one `op` node: `inputs` (arrays) become graph inputs x0, x1, ...;
    `constants` (arrays, or None for a left-out optional input) follow them as constant
    inputs c0, c1, ... Returns the graph (its outputs are the node's)."""
    g = Graph(f"one_{op}")
    names = [g.add_input(f"x{i}", a.shape, a.dtype) for i, a in enumerate(inputs)]
    for i, c in enumerate(constants):
        names.append("" if c is None else g.add_constant(f"c{i}", np.asarray(c)))
    outs = [f"y{i}" for i in range(n_outputs)]
    g.add_node(op, names, outs, **attrs)
    g.set_outputs(outs)
    return g.check()


__all__ = [
    "CModel",
    "CRuntimeError",
    "check_c",
    "graph",
    "library",
    "load_c",
    "op_graph",
    "run_c",
]
