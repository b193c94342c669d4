"""minitorch_edge.onnx: ONNX export and import, PyTorch's names.

    from minitorch_edge import onnx
    onnx.export(model, x, "model.onnx")        # export.py: a Module or a Graph -> ONNX file
    g = onnx.load("model.onnx")                # importer.py: ONNX file -> Graph (opsets 13-21)
    net = onnx.import_model("model.onnx")      # the same, as a callable module-like object

The `onnx` pip package (extra ``onnx``) is imported only when one of these is called, so
importing this module costs nothing.
"""
from .export import export  # noqa: F401
from .importer import OnnxImportError, OnnxUnsupportedError, import_model, load  # noqa: F401

__all__ = ["export", "load", "import_model", "OnnxImportError", "OnnxUnsupportedError"]
