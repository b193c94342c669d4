"""utils: saving and loading (``save``/``load``), and, as optional extras, logging and plots.

Only the dependency-free pieces are imported here; modules that need an optional package
(tensorboardX, matplotlib) import it inside the functions that use it.
"""
from .serialization import save, load, ModelFormatError  # noqa: F401
from .logger import CSVLogger, JSONLinesLogger  # noqa: E402,F401
from .plotting import plot_history  # noqa: E402,F401  (imports matplotlib only when called)
