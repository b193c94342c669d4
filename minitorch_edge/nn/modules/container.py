"""``torch.nn.modules.container``'s module path: re-exports the classes from where they live
(nn/containers.py)."""
from ..containers import (ModuleDict, ModuleList, ParameterDict, ParameterList,  # noqa: F401
                          Sequential)

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]
