"""DataParallel on a machine without GPUs: a wrapper that forwards to its module."""
from ..module import Module

__all__ = ["DataParallel", "data_parallel"]


class DataParallel(Module):
    """``DataParallel(module, device_ids=None, output_device=None, dim=0)``: with no GPU (always,
    here) the calls go straight to ``module``, as in PyTorch."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DataParallel: module must be an nn.Module, got "
                            f"{type(module).__name__}")
        self.module = module
        self.device_ids = []
        self.output_device = None
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0,
                  module_kwargs=None):
    """``module(*inputs, **module_kwargs)``: with no GPU there is nothing to split over."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    return module(*inputs, **(module_kwargs or {}))
