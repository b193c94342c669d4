"""gradcheck / gradgradcheck: compare analytic gradients with central finite differences.

For f: inputs -> outputs, the Jacobian column for input element j is estimated as
``(f(x + eps e_j) - f(x - eps e_j)) / (2 eps)`` and the analytic rows come from
``autograd.grad`` with one-hot output gradients. They must agree within
``|analytic - numeric| <= atol + rtol * |numeric|`` (PyTorch's defaults: eps=1e-6, atol=1e-5,
rtol=1e-3). Use float64 inputs: in float32 the differences are mostly rounding noise.
"""
import numpy as np

from ..tensor import Tensor
from .engine import grad as _grad
from .grad_mode import enable_grad, no_grad

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    pass


def _outputs(fn, inputs):
    out = fn(*inputs)
    outs = (out,) if isinstance(out, Tensor) else tuple(out)
    return [o for o in outs if isinstance(o, Tensor) and o.is_floating_point()]


def _numerical_jacobians(fn, inputs, diff_idx, eps):
    """jac[i][k]: d(output k) / d(input i) as a (numel_in, numel_out) array."""
    with no_grad():
        base = _outputs(fn, inputs)
    jacs = []
    for i in diff_idx:
        x = inputs[i]._data
        flat = x.reshape(-1) if x.flags.c_contiguous else None
        if flat is None:
            raise GradcheckError("gradcheck: inputs must be contiguous")
        cols = [np.zeros((x.size, o._data.size)) for o in base]
        for j in range(x.size):
            orig = flat[j]
            flat[j] = orig + eps
            with no_grad():
                plus = [o._data.astype(np.float64).ravel() for o in _outputs(fn, inputs)]
            flat[j] = orig - eps
            with no_grad():
                minus = [o._data.astype(np.float64).ravel() for o in _outputs(fn, inputs)]
            flat[j] = orig
            for k in range(len(base)):
                cols[k][j] = (plus[k] - minus[k]) / (2 * eps)
        jacs.append(cols)
    return jacs


def _analytical_jacobians(fn, inputs, diff_idx):
    outs = _outputs(fn, inputs)
    jacs = [[np.zeros((inputs[i]._data.size, o._data.size)) for o in outs] for i in diff_idx]
    for k, out in enumerate(outs):
        if not out.requires_grad:
            continue
        for m in range(out._data.size):
            onehot = np.zeros(out._data.size, out._data.dtype)
            onehot[m] = 1
            grads = _grad([out], [inputs[i] for i in diff_idx],
                          [Tensor._make(onehot.reshape(out._data.shape))], retain_graph=True,
                          allow_unused=True)
            for n, g in enumerate(grads):
                if g is not None:
                    jacs[n][k][:, m] = g._data.astype(np.float64).ravel()
    return jacs


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, fast_mode=False):
    """True if analytic and numerical gradients of ``func(*inputs)`` agree for every input that
    requires grad; otherwise raise GradcheckError (or return False) showing both Jacobians."""
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    diff_idx = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    for i in diff_idx:
        if inputs[i]._data.dtype != np.float64:
            import warnings
            warnings.warn(f"gradcheck: input {i} is {inputs[i]._data.dtype}, not float64; the "
                          f"check is likely to fail from rounding alone", stacklevel=2)
    numeric = _numerical_jacobians(func, inputs, diff_idx, eps)
    analytic = _analytical_jacobians(func, inputs, diff_idx)
    for n, i in enumerate(diff_idx):
        for k in range(len(numeric[n])):
            a, b = analytic[n][k], numeric[n][k]
            if not np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=False):
                if not raise_exception:
                    return False
                with np.printoptions(precision=6, suppress=True, linewidth=120):
                    raise GradcheckError(
                        f"Jacobian mismatch for output {k} with respect to input {i},\n"
                        f"inputs:\n{_show_inputs(inputs)}\nnumerical:\n{b}\nanalytical:\n{a}\n"
                        f"max abs difference {np.abs(a - b).max():.3g} "
                        f"(atol={atol}, rtol={rtol})")
    return True


def _show_inputs(inputs):
    return "\n".join(f"  [{i}] {t._data!r}" if isinstance(t, Tensor) else f"  [{i}] {t!r}"
                     for i, t in enumerate(inputs))


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0):
    """gradcheck of the function that maps (inputs, grad_outputs) to the first-order gradients,
    i.e. checks second derivatives computed through ``create_graph=True``."""
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    diff_idx = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    outs = _outputs(func, inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = [Tensor._make(rng.standard_normal(o._data.shape).astype(o._data.dtype),
                                     requires_grad=True) for o in outs]
    grad_outputs = list(grad_outputs)
    n_in = len(inputs)

    def first_order(*args):
        xs, gos = args[:n_in], args[n_in:]
        with enable_grad():  # also while the numerical pass perturbs inputs under no_grad
            ys = [o for o in _outputs(func, xs) if o.requires_grad]
            return tuple(_grad(ys, [xs[i] for i in diff_idx], list(gos[:len(ys)]),
                               create_graph=True, allow_unused=True, materialize_grads=True))

    return gradcheck(first_order, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol,
                     rtol=rtol, raise_exception=raise_exception)
