"""A .mte model loaded by the C runtime, run on numpy arrays: `load(path)` gives a Model;
calling it checks the inputs against the model's (count, dtype, shape), allocates the outputs
and runs mte_model_run. The call convention is graph.Executor's: positional arrays (or one
list/tuple), one array back, or a tuple when the model has several outputs.
`Model.run_profiled(*arrays)` runs once with the runtime's per-node clock on
(mte_model_set_profiling) and also returns (node name, op, start s, duration s) per node."""
import collections
import os

import numpy as np

from . import _library
from ._library import ffi, text
from .errors import ModelClosedError, ModelFormatError, ModelRunError

ERR_LEN = 2048
# mte_dtype (include/mte_runtime.h) -> numpy
DTYPES = {1: np.dtype(np.float32), 2: np.dtype(np.float64), 3: np.dtype(np.float16),
          4: np.dtype(np.int8), 5: np.dtype(np.int16), 6: np.dtype(np.int32),
          7: np.dtype(np.int64), 8: np.dtype(np.uint8), 9: np.dtype(np.bool_)}

TensorInfo = collections.namedtuple("TensorInfo", "name shape dtype")
KernelInfo = collections.namedtuple("KernelInfo", "node op kernel")


def set_num_threads(n):
    """Threads the C kernels use (mte_set_num_threads; 1 .. 1024)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"threads must be a positive int, got {n!r}")
    status = _library.lib().mte_set_num_threads(n)
    if status != 0:
        raise ValueError(f"threads={n}: the runtime refused it "
                         f"({text(_library.lib().mte_runtime_status_string(status))})")


def get_num_threads():
    return _library.lib().mte_get_num_threads()


def load(path, threads=None):
    """The model in the .mte file `path`, ready to run. `threads` (optional) sets the number
    of threads the C kernels use (process-wide, mte_set_num_threads)."""
    return Model(path, threads=threads)


def _describe(info):
    return f"{info.dtype.name}{list(info.shape)}"


def _tensor_infos(lib, handle, kind):
    """[TensorInfo] of the model's inputs or outputs (kind 'input' / 'output')."""
    count = getattr(lib, f"mte_model_num_{kind}s")(handle)
    infos = []
    for i in range(count):
        ndim = getattr(lib, f"mte_model_{kind}_ndim")(handle, i)
        shape_ptr = getattr(lib, f"mte_model_{kind}_shape")(handle, i)
        dtype = getattr(lib, f"mte_model_{kind}_dtype")(handle, i)
        infos.append(TensorInfo(text(getattr(lib, f"mte_model_{kind}_name")(handle, i)),
                                tuple(int(shape_ptr[d]) for d in range(ndim)), DTYPES[dtype]))
    return tuple(infos)


def _pointers(arrays):
    """A C array of the arrays' data pointers (an empty array gets a 1-byte stand-in: the
    runtime refuses NULL); it keeps what it points to alive."""
    buffers = [ffi.from_buffer(a) if a.nbytes else ffi.new("char[1]") for a in arrays]
    ptrs = ffi.new("void *[]", [ffi.cast("void *", b) for b in buffers] or [ffi.NULL])
    return ptrs, buffers


class Model:
    """A loaded .mte model. `inputs` / `outputs`: (name, shape, dtype) tuples; `arena_bytes`,
    `prepared_bytes`; `kernels`: (node, op, kernel) per node. Call it, or `run({name: x})`.
    Close it with close() or a `with` block (also done when it is garbage-collected)."""

    def __init__(self, path, threads=None):
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no model file {path!r}")
        if threads is not None:
            set_num_threads(threads)
        self._lib = lib = _library.lib()
        self.path = path
        self._handle = self._load(lib, path)
        self.name = text(lib.mte_model_name(self._handle)) or os.path.basename(path)
        self.inputs = _tensor_infos(lib, self._handle, "input")
        self.outputs = _tensor_infos(lib, self._handle, "output")
        self.arena_bytes = int(lib.mte_model_arena_bytes(self._handle))
        self.prepared_bytes = int(lib.mte_model_prepared_bytes(self._handle))
        self.kernels = tuple(KernelInfo(text(lib.mte_model_node_name(self._handle, k)),
                                        text(lib.mte_model_node_op(self._handle, k)),
                                        text(lib.mte_model_node_kernel(self._handle, k)))
                             for k in range(lib.mte_model_num_nodes(self._handle)))

    @staticmethod
    def _load(lib, path):
        out = ffi.new("mte_model **")
        err = ffi.new("char[]", ERR_LEN)
        status = lib.mte_model_load(os.fsencode(path), out, err, ERR_LEN)
        if status != 0:
            raise ModelFormatError(path, status, text(err))
        return out[0]

    # ---- running
    def __call__(self, *arrays):
        if len(arrays) == 1 and isinstance(arrays[0], (list, tuple)) and len(self.inputs) != 1:
            arrays = tuple(arrays[0])
        return self._run(self._check_count(arrays))

    def run(self, inputs):
        """Run on `inputs`: a dict {input name: array}, or a list/tuple in input order."""
        if isinstance(inputs, dict):
            return self._run(self._from_dict(inputs))
        return self(*inputs) if isinstance(inputs, (list, tuple)) else self(inputs)

    def _from_dict(self, inputs):
        names = [info.name for info in self.inputs]
        missing = [n for n in names if n not in inputs]
        extra = [n for n in inputs if n not in names]
        if missing or extra:
            raise TypeError(f"{self.name}: the inputs are {names}; "
                            f"missing {missing}, unknown {extra}")
        return [inputs[n] for n in names]

    def _check_count(self, arrays):
        if len(arrays) != len(self.inputs):
            names = ", ".join(info.name for info in self.inputs)
            raise TypeError(f"{self.name}: the model takes {len(self.inputs)} inputs "
                            f"({names}), got {len(arrays)}")
        return arrays

    def _checked(self, info, x):
        """`x` as a C-contiguous array of exactly the input's dtype and shape."""
        x = np.asarray(x)
        if x.dtype != info.dtype:
            raise ValueError(f"{self.name}: input {info.name!r} must be {_describe(info)}, got "
                             f"{x.dtype.name}{list(x.shape)}; convert it with "
                             f"x.astype(np.{info.dtype.name}) (no silent cast)")
        if x.shape != info.shape:
            raise ValueError(f"{self.name}: input {info.name!r} must be {_describe(info)}, got "
                             f"{x.dtype.name}{list(x.shape)}")
        return np.ascontiguousarray(x)

    def run_profiled(self, *arrays):
        """Run once with the runtime's per-node clock on: ``(outputs, [(node name, op,
        start seconds since the run began, duration seconds), ...])``, nodes in execution
        order; `outputs` as a call returns them. The clock is off again afterwards."""
        if len(arrays) == 1 and isinstance(arrays[0], (list, tuple)) and len(self.inputs) != 1:
            arrays = tuple(arrays[0])
        return self._run(self._check_count(arrays), profiled=True)

    def _run(self, arrays, profiled=False):
        handle = self._live_handle()
        ins = [self._checked(info, x) for info, x in zip(self.inputs, arrays)]
        outs = [np.empty(info.shape, info.dtype) for info in self.outputs]
        in_ptrs, out_ptrs = _pointers(ins), _pointers(outs)
        err = ffi.new("char[]", ERR_LEN)
        lib = self._lib
        if profiled and lib.mte_model_set_profiling(handle, 1) != 0:
            raise ModelRunError(self.name, -1, "cannot turn the per-node clock on")
        try:
            status = lib.mte_model_run(handle, in_ptrs[0], out_ptrs[0], err, ERR_LEN)
            if status != 0:
                raise ModelRunError(self.name, status, text(err))
            times = self._node_times(handle) if profiled else None
        finally:
            if profiled:
                lib.mte_model_set_profiling(handle, 0)
        result = outs[0] if len(outs) == 1 else tuple(outs)
        return (result, times) if profiled else result

    def _node_times(self, handle):
        start, seconds = ffi.new("double *"), ffi.new("double *")
        times = []
        for k, info in enumerate(self.kernels):
            status = self._lib.mte_model_node_last(handle, k, start, seconds)
            if status != 0:
                raise ModelRunError(self.name, status, f"no time for node {k} ({info.node})")
            times.append((info.node, info.op, float(start[0]), float(seconds[0])))
        return times

    # ---- life cycle
    def _live_handle(self):
        if self._handle is None:
            raise ModelClosedError(f"{self.name}: the model was closed; load it again")
        return self._handle

    def close(self):
        """Free the C model (its arena and prepared weights); closing twice is fine."""
        handle, self._handle = getattr(self, "_handle", None), None
        if handle is not None:
            self._lib.mte_model_free(handle)

    @property
    def closed(self):
        return self._handle is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        self.close()

    def __repr__(self):
        state = "closed" if self.closed else f"arena {self.arena_bytes:,} bytes"
        ins = ", ".join(f"{i.name}: {_describe(i)}" for i in self.inputs)
        return f"Model({self.name}: {len(self.kernels)} nodes, inputs ({ins}), {state})"
