"""``torch.utils.data._utils``: the one piece scripts import from it, ``collate``."""
from . import collate  # noqa: F401
