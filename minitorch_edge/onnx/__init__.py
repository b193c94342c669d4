"""minitorch_edge.onnx: ONNX export, PyTorch's name and signature.

    from minitorch_edge import onnx
    onnx.export(model, x, "model.onnx")                       # float: standard ONNX ops
    onnx.export(quant.quantize(model, [x]), x, "int8.onnx")   # int8: QDQ form

export.py holds the translation (a Module is traced, a Graph is taken as it is; our fused
`mte` ops are expanded back into the ONNX subgraphs they replace). The `onnx` pip package
(extra ``onnx``) is imported only when `export` is called, so importing this module costs
nothing. Importing ONNX files into a Graph is not written yet.
"""
from .export import export  # noqa: F401

__all__ = ["export"]
