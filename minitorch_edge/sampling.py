"""Sampling from distributions given by tensors: ``normal`` (each argument a tensor or a
number), ``bernoulli``, ``poisson``, ``multinomial``, and the in-place fills
``Tensor.normal_``, ``uniform_``, ``bernoulli_``, ``exponential_``, ``geometric_``, ``cauchy_``,
``log_normal_``, ``random_``, with PyTorch's argument checks. All draw from a `Generator`
(``generator=``, else the default one), so ``manual_seed`` makes them reproducible; the numbers
themselves differ from PyTorch's (another bit generator), the distributions do not. A sample's
gradient is zero, as in PyTorch (these are not reparameterised).
"""
import numbers

import numpy as np

from . import dtypes as _dt
from .autograd.function import Function
from .random import np_rng
from .creation import _TORCH_NAMES, _dtype_or_default, _finish, _size
from .tensor import Tensor

__all__ = ["normal", "multinomial", "bernoulli", "poisson"]


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
