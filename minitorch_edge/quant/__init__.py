"""minitorch_edge.quant: int8 quantization, TFLite's scheme (backend/numpy_int8.py).

    g = quant.quantize(model, calibration_batches)      # post-training: an int8 Graph (ptq.py)
    qat = quant.prepare_qat(model); ...fine-tune...     # quantization-aware training (qat.py)
    g = quant.convert(qat, x)                           # its int8 Graph
    rows = quant.sensitivity(model, calibration_batches)   # per-layer SQNR (mixed_precision.py)
    run = g.compile(); y = run(x)                       # the executor runs the int8 kernels

observers.py watches values and picks scales and zero points; fake_quant.py rounds to the int8
grid in float with a straight-through gradient (and LSQ's learnable scale); qat.py holds the
QAT modules; ptq.py calibrates, writes the QDQ graph and lets graph/passes/fuse_quantized.py
make it int8.
"""
from .fake_quant import *
from .fake_quant import __all__ as _fake_quant_all
from .mixed_precision import Sensitivity, sensitivity, sqnr
from .observers import *
from .observers import __all__ as _observers_all
from .ptq import convert, quantizable_layers, quantize
from .qat import *
from .qat import __all__ as _qat_all

__all__ = (list(_observers_all) + list(_fake_quant_all) + list(_qat_all)
           + ["quantize", "convert", "quantizable_layers", "sensitivity", "Sensitivity", "sqnr"])
