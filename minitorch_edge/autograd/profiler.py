"""torch.autograd.profiler's spellings, which older scripts and tutorials use:
``autograd.profiler.profile(enabled=True, use_cuda=False, record_shapes=False, ...)`` and
``autograd.profiler.record_function(name)``. Both are `minitorch_edge.profiler`'s, with the
legacy keyword arguments mapped onto it: ``enabled=False`` records nothing (the result is empty),
``use_cuda``/``use_device`` are accepted and ignored (this build runs on the CPU), as are
``use_kineto`` and ``use_cpu``."""
from ..profiler._profile import profile as _profile
from ..profiler._profile import record_function  # noqa: F401


class profile(_profile):
    """torch.autograd.profiler.profile: the legacy front of `minitorch_edge.profiler.profile`."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False,
                 with_flops=False, profile_memory=False, with_stack=False, with_modules=False,
                 use_kineto=False, use_cpu=True, experimental_config=None, acc_events=False):
        super().__init__(record_shapes=record_shapes, profile_memory=profile_memory,
                         with_stack=with_stack, with_flops=with_flops, with_modules=with_modules)
        self.enabled = bool(enabled)

    def __enter__(self):
        return super().__enter__() if self.enabled else self

    def __exit__(self, *exc):
        return super().__exit__(*exc) if self.enabled else False
