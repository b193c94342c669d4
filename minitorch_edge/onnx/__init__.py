"""minitorch_edge.onnx: ONNX export and import, PyTorch's names and signatures.

    from minitorch_edge import onnx
    onnx.export(model, x, "model.onnx")                       # float: standard ONNX ops
    onnx.export(quant.quantize(model, [x]), x, "int8.onnx")   # int8: QDQ form
    g = onnx.load("model.onnx")                               # an ONNX file as a Graph
    run = onnx.import_model("model.onnx")                     # ... optimized and compiled

export.py (with lowering.py) holds the translation out (a Module is traced, a Graph is taken
as it is; our fused `mte` ops are expanded back into the ONNX subgraphs they replace);
importer.py (with _convert.py, the per-version forms, and _safety.py, the checks) the way in.
A refused model raises `OnnxImportError`; one that needs an operator we lack raises its
subclass `OnnxUnsupportedError`. The `onnx` pip package (extra ``onnx``) is imported only when
a function is called, so importing this module costs nothing.
"""
from ._safety import OnnxImportError, OnnxUnsupportedError
from .export import export
from .importer import OnnxModule, import_model, load

__all__ = ["OnnxImportError", "OnnxModule", "OnnxUnsupportedError", "export", "import_model",
           "load"]
