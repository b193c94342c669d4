"""STUB: replaced by the ONNX importer."""
from ..graph import ModelFormatError


class OnnxImportError(ModelFormatError):
    """STUB"""


class OnnxUnsupportedError(OnnxImportError):
    """STUB"""


def load(*args, **kwargs):
    raise NotImplementedError("minitorch_edge.onnx.load is not written yet")


def import_model(*args, **kwargs):
    raise NotImplementedError("minitorch_edge.onnx.import_model is not written yet")
