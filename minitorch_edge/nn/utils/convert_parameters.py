"""Flatten all parameters into one vector and back: what second-order methods, parameter
averaging and evolutionary strategies work with."""
from ...autograd.grad_mode import no_grad
from ...ops.join import cat
from ...tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters):
    """One 1-D tensor holding every parameter's values in order (differentiable: a cat of the
    flattened parameters, so gradients flow back to each parameter)."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    flat = [p.reshape(-1) for p in parameters]
    if not flat:
        raise RuntimeError("parameters_to_vector: got no parameters")
    return cat(flat)


def vector_to_parameters(vec, parameters):
    """Make each parameter's ``.data`` the matching slice of `vec` (shared memory, as PyTorch:
    changing `vec` afterwards changes the parameters). Sizes are checked before anything
    changes."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected a Tensor, but got: {type(vec).__name__}")
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    params = list(parameters)
    total = sum(p.numel() for p in params)
    if vec.ndim != 1 or vec.numel() != total:
        raise RuntimeError(f"vector_to_parameters: expected a 1-D vector of {total} elements (the "
                           f"parameters' total), got shape {tuple(vec.shape)}")
    pointer = 0
    with no_grad():
        for p in params:
            n = p.numel()
            p.data = vec[pointer:pointer + n].view_as(p).data
            pointer += n
