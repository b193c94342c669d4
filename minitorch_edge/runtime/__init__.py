"""The device-side loader of minitorch_edge: runs a .mte model file on the C runtime
(libmte_runtime.so) from Python with numpy and cffi only -- none of the training stack
(tensor, ops, nn, graph) and no torch is imported.

    import numpy as np
    from minitorch_edge import runtime
    with runtime.load("net.mte", threads=1) as model:
        print(model.inputs, model.outputs, model.kernels)
        y = model(np.zeros(model.inputs[0].shape, model.inputs[0].dtype))

The library is found through $MTE_RUNTIME_LIBRARY, lib/ next to this package (installed), or
native/build/ of a source checkout (`make -C native runtime`); the `mte-run` program through
mte_run_path() ($MTE_RUN, bin/ next to this package, or native/build/). cffi is needed once a
model is loaded (`pip install "minitorch-edge[runtime]"`), not to import this package.
"""
from ._cli import binary as mte_run_path
from ._library import library_path
from .errors import (
                     LibraryNotFoundError,
                     ModelClosedError,
                     ModelFormatError,
                     ModelRunError,
)
from .model import KernelInfo, Model, TensorInfo, get_num_threads, load, set_num_threads

__all__ = [
                     "KernelInfo",
                     "LibraryNotFoundError",
                     "Model",
                     "ModelClosedError",
                     "ModelFormatError",
                     "ModelRunError",
                     "TensorInfo",
                     "get_num_threads",
                     "library_path",
                     "load",
                     "mte_run_path",
                     "set_num_threads",
]
