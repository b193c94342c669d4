"""utils: saving and loading (``save``/``load``), and, as optional extras, logging and plots.

Only the dependency-free pieces are imported here; modules that need an optional package
(tensorboardX, matplotlib) import it inside the functions that use it.
"""
from .serialization import save, load, ModelFormatError  # noqa: F401
