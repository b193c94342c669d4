"""Creating tensors: from data (tensor, as_tensor, from_numpy), filled (zeros, ones, full,
empty, eye), ranges (arange, linspace) and random (rand, randn, randint, randperm), plus the
``*_like`` forms. All take ``dtype=`` and ``requires_grad=``; ``device`` may only be "cpu".

The end of the file holds sampling from distributions given by tensors: ``normal`` (each
argument a tensor or a number), ``bernoulli``, ``poisson``, ``multinomial``, and the in-place
fills ``Tensor.normal_``, ``uniform_``, ``bernoulli_``, ``exponential_``, ``geometric_``,
``cauchy_``, ``log_normal_``, ``random_``, with PyTorch's argument checks. All draw from a
`Generator` (``generator=``, else the default one), so ``manual_seed`` makes them reproducible;
the numbers themselves differ from PyTorch's (another bit generator), the distributions do not.
A sample's gradient is zero, as in PyTorch (these are not reparameterised).
"""
import numbers

import numpy as np

from . import dtypes as _dt
from .autograd.function import Function
from .random import np_rng
from .tensor import Tensor, check_device

__all__ = ["tensor", "as_tensor", "from_numpy", "zeros", "ones", "full", "empty", "eye",
           "arange", "linspace", "logspace", "rand", "randn", "randint", "randperm", "normal",
           "multinomial", "bernoulli", "poisson",
           "zeros_like", "ones_like", "full_like", "empty_like", "rand_like", "randn_like",
           "randint_like", "scalar_tensor"]


def _infer_dtype(data):
    """PyTorch's inference for Python data: bool -> bool, int -> int64, float -> default."""
    if isinstance(data, np.ndarray):
        return _dt.from_numpy_dtype(data.dtype) or _unsupported(data.dtype)
    if isinstance(data, Tensor):
        return data.dtype
    if isinstance(data, np.generic):
        return _dt.from_numpy_dtype(data.dtype) or _unsupported(data.dtype)
    kinds = set()
    _scan(data, kinds)
    if "f" in kinds:
        return _dt.get_default_dtype()
    if "i" in kinds:
        return _dt.int64
    if "b" in kinds:
        return _dt.bool_
    return _dt.get_default_dtype()  # empty lists


def _scan(x, kinds):
    if isinstance(x, (list, tuple)):
        for v in x:
            _scan(v, kinds)
    elif isinstance(x, Tensor):
        kinds.add("f" if x.is_floating_point() else ("b" if x._data.dtype == bool else "i"))
    elif isinstance(x, (bool, np.bool_)):
        kinds.add("b")
    elif isinstance(x, numbers.Integral):
        kinds.add("i")
    elif isinstance(x, numbers.Real):
        kinds.add("f")
    elif isinstance(x, np.ndarray):
        kinds.add(x.dtype.kind if x.dtype.kind in "bif" else "f")
    else:
        raise TypeError(f"tensor(): could not infer dtype of {type(x).__name__}")


def _unsupported(np_dtype):
    raise TypeError(f"can't convert np.ndarray of type numpy.{np_dtype}. The only supported types "
                    f"are: " + ", ".join(d.name for d in _dt.ALL))


def _plain(data):
    """Replace Tensors inside nested lists by their values (PyTorch accepts 1-element ones)."""
    if isinstance(data, Tensor):
        return data._data
    if isinstance(data, (list, tuple)):
        return [_plain(v) for v in data]
    return data


def _to_array(data, dtype, copy=True):
    """A numpy array of `dtype` (ours) holding `data`; raises TypeError/ValueError clearly."""
    np_dtype = _dt.to_dtype(dtype).np
    if isinstance(data, Tensor):
        data = data._data
    try:
        arr = np.array(_plain(data), dtype=np_dtype, copy=copy)
    except (ValueError, TypeError) as e:
        raise ValueError(f"tensor(): could not build a {dtype!r} tensor from the given data "
                         f"({e})") from None
    return arr if copy else np.asarray(arr)


def _finish(arr, requires_grad, device=None):
    if device is not None:
        check_device(device)
    t = Tensor._make(arr)
    if requires_grad:
        t.requires_grad = True
    return t


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of `data` (nested lists, numbers, numpy arrays, tensors)."""
    if dtype is None:
        dtype = _infer_dtype(data)
    return _finish(_to_array(data, dtype), requires_grad, device)


def as_tensor(data, dtype=None, device=None):
    """Like tensor() but shares memory with a numpy array / tensor when the dtype allows."""
    if isinstance(data, Tensor) and (dtype is None or _dt.to_dtype(dtype) == data.dtype):
        return data
    if isinstance(data, np.ndarray) and (dtype is None or _dt.to_dtype(dtype).np == data.dtype) \
            and _dt.from_numpy_dtype(data.dtype) is not None:
        return _finish(data, False, device)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array):
    """A tensor sharing memory with `array` (changes to one show in the other)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected np.ndarray (got {type(array).__name__})")
    if _dt.from_numpy_dtype(array.dtype) is None:
        _unsupported(array.dtype)
    return Tensor._make(array)


def _size(size, op):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    try:
        size = tuple(int(s) for s in size)
    except TypeError:
        raise TypeError(f"{op}(): size must be ints or a tuple of ints, got {size!r}") from None
    if any(s < 0 for s in size):
        raise RuntimeError(f"{op}(): Trying to create tensor with negative dimension: {size}")
    return size


def _dtype_or_default(dtype):
    return _dt.to_dtype(dtype) if dtype is not None else _dt.get_default_dtype()


def zeros(*size, dtype=None, device=None, requires_grad=False, out=None):
    return _finish(np.zeros(_size(size, "zeros"), _dtype_or_default(dtype).np), requires_grad,
                   device)


def ones(*size, dtype=None, device=None, requires_grad=False):
    return _finish(np.ones(_size(size, "ones"), _dtype_or_default(dtype).np), requires_grad,
                   device)


def empty(*size, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _finish(np.empty(_size(size, "empty"), _dtype_or_default(dtype).np), requires_grad,
                   device)


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    if dtype is None:
        dtype = _infer_dtype(fill_value if not isinstance(fill_value, Tensor) else
                             fill_value.item())
    return _finish(np.full(_size((size,), "full"), fill_value, _dt.to_dtype(dtype).np),
                   requires_grad, device)


def scalar_tensor(value, dtype=None, device=None, requires_grad=False):
    return _finish(np.array(value, _dtype_or_default(dtype).np), requires_grad, device)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    return _finish(np.eye(n, m, dtype=_dtype_or_default(dtype).np), requires_grad, device)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """Values start, start+step, ... below end. Integer arguments give int64 (as PyTorch)."""
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    if vals[2] == 0:
        raise RuntimeError("arange(): step must be nonzero")
    if dtype is None:
        dtype = _dt.get_default_dtype() if any(isinstance(v, float) for v in vals) else _dt.int64
    dtype = _dt.to_dtype(dtype)
    # computed in float64/int64 then cast, so float32 ranges have the right length
    arr = np.arange(*vals, dtype=np.float64 if dtype.is_floating_point else np.int64)
    return _finish(arr.astype(dtype.np), requires_grad, device)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    if steps < 0:
        raise RuntimeError("linspace(): number of steps must be non-negative")
    arr = np.linspace(float(start), float(end), int(steps))
    return _finish(arr.astype(_dtype_or_default(dtype).np), requires_grad, device)


def logspace(start, end, steps, base=10.0, dtype=None, device=None, requires_grad=False):
    arr = np.logspace(float(start), float(end), int(steps), base=base)
    return _finish(arr.astype(_dtype_or_default(dtype).np), requires_grad, device)


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False):
    """Uniform on [0, 1)."""
    d = _dtype_or_default(dtype)
    arr = np_rng(generator).random(_size(size, "rand"), dtype=np.float64).astype(d.np)
    return _finish(arr, requires_grad, device)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False):
    """Standard normal."""
    d = _dtype_or_default(dtype)
    arr = np_rng(generator).standard_normal(_size(size, "randn")).astype(d.np)
    return _finish(arr, requires_grad, device)


def randint(low, high=None, size=None, generator=None, dtype=None, device=None,
            requires_grad=False):
    """Integers uniform on [low, high); ``randint(high, size)`` as in PyTorch."""
    if size is None:
        if isinstance(high, (tuple, list)):
            low, high, size = 0, low, high
        else:
            raise TypeError("randint(): missing required argument 'size'")
    if high is None:
        low, high = 0, low
    if high <= low:
        raise RuntimeError(f"randint(): expected low < high, got low={low}, high={high}")
    d = _dt.to_dtype(dtype) if dtype is not None else _dt.int64
    arr = np_rng(generator).integers(low, high, _size((size,), "randint")).astype(d.np)
    return _finish(arr, requires_grad, device)


def randperm(n, generator=None, dtype=None, device=None, requires_grad=False):
    d = _dt.to_dtype(dtype) if dtype is not None else _dt.int64
    return _finish(np_rng(generator).permutation(int(n)).astype(d.np), requires_grad, device)


def _like(t, dtype):
    return (_dt.to_dtype(dtype) if dtype is not None else t.dtype).np, t._data.shape


def zeros_like(t, dtype=None, device=None, requires_grad=False, memory_format=None):
    d, s = _like(t, dtype)
    return _finish(np.zeros(s, d), requires_grad, device)


def ones_like(t, dtype=None, device=None, requires_grad=False, memory_format=None):
    d, s = _like(t, dtype)
    return _finish(np.ones(s, d), requires_grad, device)


def empty_like(t, dtype=None, device=None, requires_grad=False, memory_format=None):
    d, s = _like(t, dtype)
    return _finish(np.empty(s, d), requires_grad, device)


def full_like(t, fill_value, dtype=None, device=None, requires_grad=False, memory_format=None):
    d, s = _like(t, dtype)
    return _finish(np.full(s, fill_value, d), requires_grad, device)


def rand_like(t, dtype=None, generator=None, requires_grad=False, device=None):
    d, s = _like(t, dtype)
    return _finish(np_rng(generator).random(s).astype(d), requires_grad, device)


def randn_like(t, dtype=None, generator=None, requires_grad=False, device=None):
    d, s = _like(t, dtype)
    return _finish(np_rng(generator).standard_normal(s).astype(d), requires_grad, device)


def randint_like(t, low, high=None, dtype=None, generator=None, requires_grad=False,
                 device=None):
    if high is None:
        low, high = 0, low
    d, s = _like(t, dtype)
    return _finish(np_rng(generator).integers(low, high, s).astype(d), requires_grad, device)


# ================================ sampling from distributions ==================================
# PyTorch's names for the dtypes in "not implemented for 'Long'"-style messages
_TORCH_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
                "int64": "Long", "float16": "Half", "bfloat16": "BFloat16", "float32": "Float",
                "float64": "Double"}


def _torch_name(t):
    return _TORCH_NAMES[t.dtype.name]


def _need_float(t, kernel):
    if not _dt.is_float_array(t._data):
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_torch_name(t)}\' '
                                  f'(expected a floating point tensor)')


def _as_float64(t):
    return np.asarray(t._data, np.float64)


def _check_tensor(x, op, name="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(x).__name__}")


class _Sample(Function):
    """A draw from a distribution whose parameters are tensors. ``forward(ctx, sampler, *params)``
    returns the sampled array; the gradient of a sample is zero (PyTorch's derivative for
    normal/bernoulli/poisson), shaped as each parameter."""
    _builtin = True

    @staticmethod
    def forward(ctx, sampler, *params):
        if ctx.needs_input_grad:
            ctx.meta = [(p._data.shape, p._data.dtype) if isinstance(p, Tensor) else None
                        for p in params]
        return sampler()

    @staticmethod
    def backward(ctx, grad):
        return (None,) + tuple(
            Tensor._make(np.zeros(*m)) if m is not None and need else None
            for m, need in zip(ctx.meta, ctx.needs_input_grad[1:]))


class Normal(_Sample):
    """normal(mean, std) with a tensor mean and/or std (grad_fn NormalBackward)."""


class Bernoulli(_Sample):
    """bernoulli(p) (grad_fn BernoulliBackward)."""


class Poisson(_Sample):
    """poisson(rates) (grad_fn PoissonBackward)."""


def _normal_arrays(rng, mean, std, shape):
    return rng.normal(mean, std, shape) if std is not None else rng.standard_normal(shape)


def _check_std_number(std):
    if not std >= 0.0:   # (catches nan too)
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")


def normal(mean=None, std=None, size=None, *, generator=None, out=None, dtype=None,
           layout=None, device=None, pin_memory=False, requires_grad=False):
    """Normal samples, as ``torch.normal``'s four forms:

    * ``normal(mean: Tensor, std: Tensor)``: one sample per element of their broadcast shape,
      in mean's dtype;
    * ``normal(mean: Tensor, std: float = 1)`` and ``normal(mean: float, std: Tensor)``: shaped
      and typed as the tensor;
    * ``normal(mean: float, std: float, size, *, dtype=None, requires_grad=False)``.

    std must be >= 0 (every element of a tensor std)."""
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        if size is not None or dtype is not None or requires_grad:
            got = ", ".join(type(a).__name__ for a in (mean, std, size) if a is not None)
            raise TypeError(f"normal() received an invalid combination of arguments - got "
                            f"({got}): with a tensor mean or std the shape comes from the "
                            f"tensor(s); pass no size/dtype/requires_grad")
        mean_t = mean if isinstance(mean, Tensor) else None
        std_t = std if isinstance(std, Tensor) else None
        for x, name in ((mean, "mean"), (std, "std")):
            if x is not None and not isinstance(x, (Tensor, numbers.Real)):
                raise TypeError(f"normal(): argument '{name}' must be a Tensor or a number, not "
                                f"{type(x).__name__}")
        if mean is None:
            raise TypeError("normal(): missing required argument 'mean'")
        lead = mean_t if mean_t is not None else std_t
        _need_float(lead, "normal_kernel_cpu")
        if mean_t is not None and std_t is not None:
            from .ops._util import check_broadcast
            shape = check_broadcast(mean_t._data.shape, std_t._data.shape, "normal")
        else:
            shape = lead._data.shape
        if std_t is not None:
            s_arr = _as_float64(std_t)
            if not np.all(s_arr >= 0.0):
                raise RuntimeError("normal expects all elements of std >= 0.0")
        else:
            std = 1.0 if std is None else float(std)
            _check_std_number(std)
            s_arr = std
        m_arr = _as_float64(mean_t) if mean_t is not None else float(mean)
        rng = np_rng(generator)
        target = lead._data.dtype

        def sampler():
            return np.asarray(rng.normal(m_arr, s_arr, shape)).astype(target)
        result = Normal.apply(sampler, mean_t if mean_t is not None else float(mean),
                              std_t if std_t is not None else std)
        return _write_out(result, out)
    if size is None or mean is None or std is None:
        raise TypeError("normal() received an invalid combination of arguments: with a float "
                        "mean and std, size is required (normal(mean, std, size)); or pass a "
                        "Tensor mean or std")
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"normal(): argument 'size' must be a tuple of ints, not "
                        f"{type(size).__name__}")
    for x, name in ((mean, "mean"), (std, "std")):
        if not isinstance(x, numbers.Real):
            raise TypeError(f"normal(): argument '{name}' must be a number or a Tensor, not "
                            f"{type(x).__name__}")
    _check_std_number(float(std))
    shape = _size((size,), "normal")
    d = _dtype_or_default(dtype)
    if not d.is_floating_point:
        raise NotImplementedError(f'"normal_kernel_cpu" not implemented for '
                                  f'\'{_TORCH_NAMES[d.name]}\' (expected a floating point dtype)')
    arr = np.asarray(np_rng(generator).normal(float(mean), float(std), shape)).astype(d.np)
    return _write_out(_finish(arr, requires_grad, device), out)


def _write_out(result, out):
    if out is None:
        return result
    _check_tensor(out, "out", "out")
    if out._data.shape != result._data.shape:
        out._data = np.empty(result._data.shape, out._data.dtype)
    np.copyto(out._data, result._data, casting="unsafe")
    out._vc[0] += 1
    return out


def bernoulli(input, p=None, *, generator=None, out=None):
    """``bernoulli(probs)``: 1 with probability ``probs[i]``, else 0, in probs' dtype (each
    probability in [0, 1]). ``bernoulli(input, p)`` with a number p: input's shape and dtype
    (any dtype), each element 1 with probability p."""
    _check_tensor(input, "bernoulli")
    rng = np_rng(generator)
    if p is not None and not isinstance(p, Tensor):
        p = _check_bernoulli_p(p)
        target = input._data.dtype
        arr = (rng.random(input._data.shape) < p).astype(target)
        return _write_out(Tensor._make(arr), out)
    probs = input if p is None else p
    _need_float(probs, "bernoulli_tensor_cpu_p_")
    values = _checked_probs(probs)
    if p is not None:                      # bernoulli(input, p=tensor): input's shape
        values = _expand_probs(values, input._data.shape, p)
    target = input._data.dtype

    def sampler():
        return (rng.random(values.shape) < values).astype(target)
    return _write_out(Bernoulli.apply(sampler, probs), out)


def _check_bernoulli_p(p):
    if not isinstance(p, numbers.Real):
        raise TypeError(f"bernoulli(): p must be a number or a Tensor, not {type(p).__name__}")
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p:g}")
    return p


def _checked_probs(probs):
    values = _as_float64(probs)
    if not np.all((values >= 0.0) & (values <= 1.0)):
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false. "
                           "(bernoulli: every probability must be in [0, 1])")
    return values


def _expand_probs(values, shape, p):
    """Broadcast the probabilities to the filled tensor's shape (never the other way)."""
    n, m = len(shape), values.ndim
    if m > n:
        raise RuntimeError(f"The number of sizes provided ({n}) must be greater or equal to the "
                           f"number of dimensions in the tensor ({m})")
    for i in range(1, m + 1):
        if values.shape[-i] not in (1, shape[-i]):
            raise RuntimeError(f"The expanded size of the tensor ({shape[-i]}) must match the "
                               f"existing size ({values.shape[-i]}) at non-singleton dimension "
                               f"{n - i}.  Target sizes: {list(shape)}.  Tensor sizes: "
                               f"{list(p.shape)}")
    return np.broadcast_to(values, shape)


def poisson(input, generator=None):
    """Poisson samples with rates ``input`` (each >= 0), in input's (floating) dtype."""
    _check_tensor(input, "poisson")
    _need_float(input, "poisson_cpu")
    rates = _as_float64(input)
    if not np.all(rates >= 0.0):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    if not np.all(np.isfinite(rates)):
        raise RuntimeError("invalid Poisson rate, expected a finite rate (got inf)")
    rng = np_rng(generator)
    target = input._data.dtype

    def sampler():
        return np.asarray(rng.poisson(rates)).astype(target)
    return Poisson.apply(sampler, input)


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """Category indices drawn with the (unnormalised) probabilities of each row of `input` (1-D:
    one distribution; 2-D: one per row): ``num_samples`` per row, int64. Without replacement a
    category is drawn at most once, so num_samples <= the number of categories; categories of
    probability 0 come only once the others are used up (as in PyTorch)."""
    _check_tensor(input, "multinomial")
    if isinstance(num_samples, Tensor) and num_samples._data.size == 1 and \
            num_samples._data.dtype.kind in "iu":
        num_samples = int(num_samples.item())
    if not isinstance(num_samples, (int, np.integer)) or isinstance(num_samples, (bool,
                                                                                  np.bool_)):
        raise TypeError(f"multinomial(): argument 'num_samples' (position 2) must be int, not "
                        f"{type(num_samples).__name__}")
    if not _dt.is_float_array(input._data):
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{_torch_name(input)}")
    if input._data.ndim not in (1, 2):
        raise RuntimeError(f"prob_dist must be 1 or 2 dim (got {input._data.ndim} dims)")
    n_cat = input._data.shape[-1]
    if n_cat > 2 ** 24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > n_cat:
        raise RuntimeError(f"cannot sample n_sample > prob_dist.size(-1) samples without "
                           f"replacement (n_sample={num_samples}, prob_dist.size(-1)={n_cat})")
    rows = _as_float64(input).reshape(-1, n_cat)
    if rows.size and not np.all(np.isfinite(rows) & (rows >= 0.0)):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if rows.shape[0] and n_cat and np.any(rows.sum(axis=1) <= 0.0):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    rng = np_rng(generator)
    result = np.empty((rows.shape[0], num_samples), np.int64)
    if replacement:
        cdf = np.cumsum(rows, axis=1)
        cdf /= cdf[:, -1:]
        u = rng.random(result.shape)
        for r in range(rows.shape[0]):
            result[r] = np.searchsorted(cdf[r], u[r], side="right")
        np.minimum(result, n_cat - 1, out=result)
    else:
        # the exponential race: key p/E with E ~ Exp(1); the k largest keys are a draw of k
        # categories without replacement (zero probabilities give key 0: drawn last)
        keys = rows / rng.exponential(1.0, rows.shape)
        order = np.argsort(-keys, axis=1, kind="stable")
        result[:] = order[:, :num_samples]
    if input._data.ndim == 1:
        result = result.reshape(num_samples)
    return _write_out(Tensor._make(result), out)


# ---- the in-place fills (installed on Tensor by the package, after ops/) ----------------------
def _float_only(t, op):
    if not _dt.is_float_array(t._data):
        kind = op.split("_")[0]
        if op in ("exponential_", "cauchy_"):
            raise RuntimeError(f"{kind.capitalize()} distribution is a continuous probability "
                               f"distribution. dtype must be a floating point but you specified "
                               f"{_torch_name(t)}")
        kernel = {"normal_": "normal_kernel_cpu", "uniform_": "check_uniform_bounds",
                  "log_normal_": "log_normal_cpu"}[op]
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_torch_name(t)}\' '
                                  f'(expected a floating point tensor)')


def _number(x, op, name):
    if isinstance(x, Tensor) and x._data.size == 1:
        x = x.item()
    if not isinstance(x, numbers.Real):
        raise TypeError(f"{op}(): argument '{name}' must be a number, not {type(x).__name__}")
    return float(x)


def _draw_normal(t, rng, mean=0.0, std=1.0):
    _float_only(t, "normal_")
    mean, std = _number(mean, "normal_", "mean"), _number(std, "normal_", "std")
    _check_std_number(std)
    return rng.normal(mean, std, t._data.shape)


def _draw_uniform(t, rng, *args, **kwargs):
    _float_only(t, "uniform_")
    bounds = _bounds("uniform_", args, kwargs, 0.0, 1.0)
    low, high = (_number(b, "uniform_", n) for b, n in zip(bounds, ("from", "to")))
    for v, n in ((low, "from"), (high, "to")):
        if not np.isfinite(v):
            raise RuntimeError(f"{n} is out of bounds for {t.dtype.name}")
    if low > high:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={low:g} > to={high:g}")
    return rng.uniform(low, high, t._data.shape)


def _bounds(op, args, kwargs, low, high):
    """(from, to) from positional args and the keywords ``from`` / ``to`` (PyTorch's names;
    ``a`` / ``b`` are accepted too, the names this library used before)."""
    if len(args) > 2:
        raise TypeError(f"{op}() takes at most 2 positional arguments ({len(args)} given)")
    values = [low, high]
    values[:len(args)] = args
    for i, names in enumerate((("from", "a"), ("to", "b"))):
        for n in names:
            if n in kwargs:
                if i < len(args):
                    raise TypeError(f"{op}() got multiple values for argument '{names[0]}'")
                values[i] = kwargs.pop(n)
    if kwargs:
        raise TypeError(f"{op}() got an unexpected keyword argument '{next(iter(kwargs))}'")
    return values


def _draw_bernoulli(t, rng, p=0.5):
    if isinstance(p, Tensor):
        _need_float(p, "bernoulli_tensor_cpu_p_")
        values = _expand_probs(_checked_probs(p), t._data.shape, p)
        return rng.random(t._data.shape) < values
    return rng.random(t._data.shape) < _check_bernoulli_p(p)


def _draw_exponential(t, rng, lambd=1.0):
    _float_only(t, "exponential_")
    lambd = _number(lambd, "exponential_", "lambd")
    if not lambd > 0.0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")
    return rng.exponential(1.0 / lambd, t._data.shape)


def _draw_geometric(t, rng, p):
    if t._data.dtype == np.bool_:
        raise NotImplementedError('"geometric_cpu" not implemented for \'Bool\'')
    p = _number(p, "geometric_", "p")
    if not 0.0 < p < 1.0:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p:g}")
    return rng.geometric(p, t._data.shape)


def _draw_cauchy(t, rng, median=0.0, sigma=1.0):
    _float_only(t, "cauchy_")
    median, sigma = _number(median, "cauchy_", "median"), _number(sigma, "cauchy_", "sigma")
    if not sigma > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma:g}")
    return median + sigma * rng.standard_cauchy(t._data.shape)


def _draw_log_normal(t, rng, mean=1.0, std=2.0):
    _float_only(t, "log_normal_")
    mean, std = _number(mean, "log_normal_", "mean"), _number(std, "log_normal_", "std")
    if not std > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std:g}")
    return rng.lognormal(mean, std, t._data.shape)


def _random_range(t):
    """[low, high] of random_() with no bounds: the integers the dtype holds exactly."""
    d = t._data.dtype
    if d == np.bool_:
        return 0, 1
    if d.kind in "iu":
        return 0, int(np.iinfo(d).max)
    return 0, 2 ** {np.dtype(np.float16): 11, np.dtype(np.float64): 53}.get(
        d, 8 if d.kind == "V" else 24)


def _draw_random(t, rng, *args, **kwargs):
    if len(args) > 2:
        raise TypeError(f"random_() takes at most 2 positional arguments ({len(args)} given)")
    top = _random_range(t)[1]
    if len(args) == 1 and "to" not in kwargs:
        start, stop = 0, args[0]
    else:
        start = args[0] if args else kwargs.pop("from", 0)
        stop = args[1] if len(args) > 1 else kwargs.pop("to", None)
    if kwargs:
        raise TypeError(f"random_() got an unexpected keyword argument '{next(iter(kwargs))}'")
    for v in (start, stop):
        if v is not None and (not isinstance(v, (int, np.integer)) or isinstance(v, bool)):
            raise TypeError(f"random_(): 'from' and 'to' must be ints, got "
                            f"{type(v).__name__}")
    if stop is not None and start >= stop:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={start} "
                           f">= to={stop}")
    d = t._data.dtype
    if d.kind in "iub":
        info = np.iinfo(d) if d.kind != "b" else None
        lo, hi = (0, 1) if info is None else (int(info.min), int(info.max))
        if start < lo or start > hi:
            raise RuntimeError(f"from is out of bounds for {t.dtype.name}")
        if stop is not None and (stop - 1 < lo or stop - 1 > hi):
            raise RuntimeError(f"to - 1 is out of bounds for {t.dtype.name}")
    high = top if stop is None else stop - 1
    return rng.integers(start, high, t._data.shape, endpoint=True, dtype=np.int64)


_FILLS = {"normal_": _draw_normal, "uniform_": _draw_uniform, "bernoulli_": _draw_bernoulli,
          "exponential_": _draw_exponential, "geometric_": _draw_geometric,
          "cauchy_": _draw_cauchy, "log_normal_": _draw_log_normal, "random_": _draw_random}


def _fill_method(name, draw):
    def method(self, *args, generator=None, **kwargs):
        from .autograd.grad_mode import _State
        from .backend.prepared import wrote
        from .ops.inplace import LEAF_MSG
        if _State.enabled and self._rg and self._fn is None:
            raise RuntimeError(LEAF_MSG)
        values = draw(self, np_rng(generator), *args, **kwargs)
        np.copyto(self._data, values, casting="unsafe")
        self._vc[0] += 1
        wrote(self._data)
        self._vc[1] = name[:-1]
        return self
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"Fill in place with samples ({name[:-1]} distribution); returns self."
    return method


def _multinomial_method(self, num_samples, replacement=False, *, generator=None):
    return multinomial(self, num_samples, replacement, generator=generator)


def _bernoulli_method(self, p=None, *, generator=None):
    return bernoulli(self, p, generator=generator)


def install_sampling_methods():
    """Attach the sampling methods to Tensor (called by the package after ops/ is imported, so
    these checked versions are the ones Tensor keeps)."""
    for name, draw in _FILLS.items():
        setattr(Tensor, name, _fill_method(name, draw))
    Tensor.multinomial = _multinomial_method
    Tensor.bernoulli = _bernoulli_method
