"""``torch.utils.data._utils.collate``: default_collate and friends (see data/collate.py)."""
from ....data.collate import (collate, default_collate, default_collate_fn_map,  # noqa: F401
                              default_convert)

__all__ = ["collate", "default_collate", "default_convert", "default_collate_fn_map"]
