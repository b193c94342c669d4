"""Native GEMM kernels: matmul, linear and gemm_epilogue computed by libmte's SGEMM
(native/src/gemm.c) through ``_C``.

Each function has its numpy twin's name, signature and result (to float32 rounding); the
dispatch table in backend/__init__.py binds ``backend.<name>`` to it where libmte's "sgemm"
kernels are built. Importing this module raises ImportError when ``minitorch_edge._C`` was not
built at all.

Division of labour (README, "Architecture"): this file owns everything about shapes, strides,
views and broadcasting; ``_C`` gets C-contiguous float32 buffers and plain sizes. So
``matmul`` here turns any np.matmul call into at most one batched native call:

    1-D operands        promoted to matrices, as np.matmul does, and squeezed back after
    batch dimensions    broadcast with np.broadcast_shapes, flattened to one batch axis
                        (or folded into the rows of a when b has no batch of its own)
    layout              copied to C order only when an operand is not already C-contiguous
    everything else     (other dtypes, 0-d operands, errors) goes to np.matmul itself, so
                        results, dtypes and error messages are numpy's

``linear`` and ``gemm_epilogue`` take ``out=`` (epilogue.py's rule): the SGEMM writes its
result straight into it (beta = 0: its old contents are not read); an `out` that is not a
float32 ndarray goes to the twin, which refuses it with a ValueError.
"""
import numpy as np

from .. import _C  # ImportError when the extension is not built
from . import numpy_backend as _ref

__all__ = ["matmul", "linear", "gemm_epilogue", "half_gemm"]


def _batched(x, batch_shape, n_batch):
    """View (or, when broadcasting or layout requires it, copy) x as a C-contiguous
    (n_batch, rows, cols) array, or as a 2-D (rows, cols) array when it has no batch to
    contribute (every batch dimension of size 1), which _C broadcasts for free."""
    if all(d == 1 for d in x.shape[:-2]):
        return np.ascontiguousarray(x.reshape(x.shape[-2:]))
    if x.shape[:-2] != batch_shape:
        x = np.broadcast_to(x, batch_shape + x.shape[-2:])
    return np.ascontiguousarray(x).reshape((n_batch,) + x.shape[-2:])


def matmul(a, b):
    """np.matmul(a, b), computed by the native SGEMM when both operands are float32.

    Same result shape, dtype and semantics as np.matmul for any input (values agree to
    float32 rounding); anything the native kernel does not cover falls back to np.matmul.
    """
    # exact ndarrays only: subclasses (np.matrix...) and array-likes keep numpy's behaviour
    if type(a) is not np.ndarray or type(b) is not np.ndarray or a.ndim == 0 or b.ndim == 0:
        return _ref.matmul(a, b)
    if _ref.is_half_pair(a, b):  # bfloat16 / float16: libmte's half-precision GEMM
        return _matmul_of(a, b, _half_2d, _half_batched)
    if a.dtype != np.float32 or b.dtype != np.float32:
        return np.matmul(a, b)
    return _matmul_of(a, b, _f32_2d, _C.matmul)


def _f32_2d(a, b):
    """a @ b for 2-D float32 a, b, each C-contiguous or the transpose of a C-contiguous array
    (read in place); None for any other layout."""
    a_t = not a.flags.c_contiguous and a.T.flags.c_contiguous
    b_t = not b.flags.c_contiguous and b.T.flags.c_contiguous
    if not ((a_t or a.flags.c_contiguous) and (b_t or b.flags.c_contiguous)):
        return None
    if not (a_t or b_t):
        return _C.matmul(a, b)
    return _C.sgemm(a.T if a_t else a, b.T if b_t else b, trans_a=a_t, trans_b=b_t)


def _half_2d(a, b):
    """_f32_2d for bfloat16 / float16: _C.half_gemm, the result in their dtype."""
    a_t = not a.flags.c_contiguous and a.T.flags.c_contiguous
    b_t = not b.flags.c_contiguous and b.T.flags.c_contiguous
    if not ((a_t or a.flags.c_contiguous) and (b_t or b.flags.c_contiguous)):
        return None
    return _C.half_gemm(a.T if a_t else a, b.T if b_t else b, trans_a=a_t, trans_b=b_t)


def _half_batched(a, b):
    """_C.matmul's contract (a (B, m, k) or (m, k), b (B, k, n) or (k, n), C-contiguous) for
    bfloat16 / float16: one _C.half_gemm per matrix of the batch."""
    if a.ndim == 2 and b.ndim == 2:
        return _C.half_gemm(a, b)
    n_batch = a.shape[0] if a.ndim == 3 else b.shape[0]
    out = np.empty((n_batch, a.shape[-2], b.shape[-1]), a.dtype)
    for i in range(n_batch):
        out[i] = _C.half_gemm(a[i] if a.ndim == 3 else a, b[i] if b.ndim == 3 else b)
    return out


def _matmul_of(a, b, mm_2d, mm_batched):
    """np.matmul(a, b) by mm_2d (2-D operands, transposed views in place) and mm_batched
    (_C.matmul's contract), with np.matmul's 1-D and broadcasting rules done here."""
    if a.ndim == 2 and b.ndim == 2 and a.shape[1] == b.shape[0]:
        # the common case (Linear, and its backward's transposed views): no copies, the
        # kernel reads a transposed operand in place
        out = mm_2d(a, b)
        if out is not None:
            return out
        # the common case (Linear, and its backward's transposed views): no copies, the
        # kernel reads a transposed operand in place
    a_arr, b_arr = a, b

    # np.matmul's 1-D rules: a (K,) is a row (1, K); b (K,) is a column (K, 1); the
    # added dimension is removed from the result.
    a2 = a_arr[np.newaxis, :] if a_arr.ndim == 1 else a_arr
    b2 = b_arr[:, np.newaxis] if b_arr.ndim == 1 else b_arr
    if a2.shape[-1] != b2.shape[-2]:
        return np.matmul(a, b)  # raises numpy's own error
    try:
        batch_shape = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    except ValueError:
        return np.matmul(a, b)  # raises numpy's own error

    n_batch = int(np.prod(batch_shape, dtype=np.int64))
    m, k, n = a2.shape[-2], a2.shape[-1], b2.shape[-1]
    if a2.shape[:-2] == batch_shape and all(d == 1 for d in b2.shape[:-2]):
        # one shared b (e.g. a Linear layer's weight): fold the batch into the rows of a,
        # so b is packed once for a single (n_batch*m, k) @ (k, n) product
        a_rows = np.ascontiguousarray(a2).reshape(n_batch * m, k)
        out = mm_batched(a_rows, np.ascontiguousarray(b2.reshape(k, n)))
    else:
        out = mm_batched(_batched(a2, batch_shape, n_batch), _batched(b2, batch_shape, n_batch))
    out = out.reshape(batch_shape + (m, n))
    if a_arr.ndim == 1:
        out = out[..., 0, :]
    if b_arr.ndim == 1:
        out = out[..., 0]
    if out.ndim == 0:  # vector . vector: np.matmul returns a numpy scalar
        out = out[()]
    return out


def _plain32(x):
    return x is None or (type(x) is np.ndarray and x.dtype == np.float32)


def _checked_out(op, out, m, n, inputs):
    """out (None allowed), refused with epilogue.check_out's ValueError naming `op` unless it
    is an (m, n) C-contiguous float32 array sharing no memory with the inputs."""
    if out is not None:
        _ref.check_out(op, out, (m, n), np.float32, inputs)
    return out


def gemm_epilogue(a, b, bias=None, bias_mode="col", act=None, residual=None, trans_a=False,
                  trans_b=False, out=None):
    """numpy_backend.gemm_epilogue (same arguments and result, to float32 rounding), as one
    native SGEMM whose epilogue adds bias and residual and applies act to each tile while it
    is in cache. Transposed views are read in place; other dtypes go to the numpy twin. With
    `out` the SGEMM writes the result there (returned)."""
    if not (_plain32(a) and _plain32(b) and _plain32(bias) and _plain32(residual)
            and _plain32(out) and a.ndim == 2 and b.ndim == 2):
        return _ref.gemm_epilogue(a, b, bias, bias_mode, act, residual, trans_a, trans_b,
                                  out=out)
    # a transposed view of a C-contiguous array is read as that array with the flag flipped
    if not a.flags.c_contiguous and a.T.flags.c_contiguous:
        a, trans_a = a.T, not trans_a
    if not b.flags.c_contiguous and b.T.flags.c_contiguous:
        b, trans_b = b.T, not trans_b
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    bias = None if bias is None else np.ascontiguousarray(bias)
    residual = None if residual is None else np.ascontiguousarray(residual)
    if out is not None:
        _checked_out("gemm_epilogue", out, a.shape[1] if trans_a else a.shape[0],
                     b.shape[0] if trans_b else b.shape[1], (a, b, bias, residual))
    return _C.sgemm(a, b, trans_a=bool(trans_a), trans_b=bool(trans_b), bias=bias,
                    bias_mode=bias_mode, act=act, residual=residual, out=out)


# Fewer output features than this leave most of the SGEMM microkernel's tile empty; numpy's
# BLAS is then faster (measured for a 10-class head: 128x256 @ 256x10).
_LINEAR_MIN_OUT = 16
# With one input row the product is a matrix-vector product, bound by reading w once: the
# GEMM's packing of w costs more than the product itself (batch-1 inference of a 1280 -> 1000
# classifier: 0.74 ms against BLAS's gemv 0.10 ms), so the twin (BLAS) takes it.
_LINEAR_MIN_ROWS = 2


def linear(x, w, bias=None, act=None, out=None):
    """The numpy twin's linear (act(x @ w.T + bias)) as one native GEMM that reads w
    transposed in place, with the bias and the activation applied in its epilogue; other
    dtypes or layouts go to the twin. With `out` the GEMM writes the result there
    (returned)."""
    if (_ref.is_half_pair(x, w) and x.ndim == 2 and w.ndim == 2 and x.shape[1] == w.shape[1]
            and act in _ref.ACTIVATIONS and out is None
            and (bias is None or (type(bias) is np.ndarray and bias.shape == w.shape[:1]))):
        return _half_linear(x, w, bias, act)
    if (type(x) is not np.ndarray or type(w) is not np.ndarray or x.dtype != np.float32
            or w.dtype != np.float32 or x.ndim != 2 or w.ndim != 2
            or x.shape[1] != w.shape[1] or w.shape[0] < _LINEAR_MIN_OUT
            or x.shape[0] < _LINEAR_MIN_ROWS
            or act not in _ref.ACTIVATIONS or not _plain32(out)
            or not (bias is None or (type(bias) is np.ndarray and bias.dtype == np.float32
                                     and bias.shape == w.shape[:1]))):
        return _ref.linear(x, w, bias, act, out=out)
    _checked_out("linear", out, x.shape[0], w.shape[0], (x, w, bias))
    x = np.ascontiguousarray(x)
    bias = None if bias is None else np.ascontiguousarray(bias)
    if w.flags.c_contiguous:
        return _C.sgemm(x, w, trans_b=True, bias=bias, act=act, out=out)
    if w.T.flags.c_contiguous:
        return _C.sgemm(x, w.T, bias=bias, act=act, out=out)
    return _ref.linear(x, w, bias, act, out=out)


def _half_linear(x, w, bias, act):
    """linear for bfloat16 / float16 x and w: one half-precision GEMM reading w transposed
    in place, the float32 bias added before the single rounding; an activation is applied to
    the float32 result first, so it too is rounded once (the twin's rule)."""
    bias = None if bias is None else np.ascontiguousarray(bias, dtype=np.float32)
    x = np.ascontiguousarray(x)
    w_t = not w.flags.c_contiguous and w.T.flags.c_contiguous
    w = w.T if w_t else np.ascontiguousarray(w)
    y = _C.half_gemm(x, w, trans_b=not w_t, bias=bias, out_float32=act is not None)
    if act is None:
        return y
    if act == "relu":      # in place on the fresh float32 result
        np.maximum(y, 0, out=y)
    else:
        y = _ref.epilogue_activation(y, act, "linear")
    return cast(y, x.dtype)


def cast(x, np_dtype):
    """numpy_backend.cast, with float32 <-> bfloat16 / float16 in libmte (bit for bit the
    same values); every other pair of dtypes is numpy's astype."""
    np_dtype = np.dtype(np_dtype)
    if type(x) is np.ndarray and x.ndim and x.size:
        if x.dtype == np.float32 and np_dtype.itemsize == 2 and np_dtype.name in _ref.HALF_DTYPES:
            return _C.float32_to_half(np.ascontiguousarray(x), np_dtype)
        if np_dtype == np.float32 and _ref.is_half(x):
            return _C.half_to_float32(np.ascontiguousarray(x))
    return x.astype(np_dtype)


def half_gemm(a, b, trans_a=False, trans_b=False, bias=None, bias_mode="col",
              out_float32=False):
    """numpy_backend.half_gemm (same arguments; values to float32 accumulation order) as one
    libmte half-precision GEMM: VDPBF16PS / BFDOT for bfloat16 where the CPU has them, else
    float32 microkernels on panels widened in the packing (native/include/mte_bf16.h).
    Transposed views are read in place."""
    _ref._check_half_pair("half_gemm", a, b, "a", "b")
    if not a.flags.c_contiguous and a.T.flags.c_contiguous:
        a, trans_a = a.T, not trans_a
    if not b.flags.c_contiguous and b.T.flags.c_contiguous:
        b, trans_b = b.T, not trans_b
    bias = None if bias is None else np.ascontiguousarray(bias, dtype=np.float32)
    return _C.half_gemm(np.ascontiguousarray(a), np.ascontiguousarray(b), trans_a=bool(trans_a),
                        trans_b=bool(trans_b), bias=bias, bias_mode=bias_mode,
                        out_float32=bool(out_float32))
