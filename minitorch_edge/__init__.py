"""minitorch_edge: a deep-learning framework written from scratch on NumPy and C.

The PyTorch-like surface lives here: ``import minitorch_edge as torch`` and most scripts run.

The package is lazy (PEP 562) so that the device-side loader ``minitorch_edge.runtime`` runs
with numpy and cffi alone: importing the package loads only ``_version``. The full API
(_api.py: tensor, ops, nn, optim, ...) is imported, once and in its own order, by whichever
comes first: the access of an attribute (``torch.zeros``, ``from minitorch_edge import nn``,
``dir()``, ``import *``), or the import of any submodule but runtime/ (``from
minitorch_edge.tensor import Tensor``, ``import minitorch_edge.nn``). For the latter a finder on
``sys.meta_path`` loads the API just before that submodule would run, so the submodule is
imported as part of it and gets every Tensor method that ops/ attaches, exactly as when
__init__.py imported everything (a hook at the end of tensor.py would run the API with its
importers, e.g. nn/__init__.py, still half-initialised). The finder removes itself then.
"""
import _thread
import importlib as _importlib
import os as _os
import sys as _sys

from ._version import __version__  # noqa: F401

# the package's submodules: an attribute of that name imports just that submodule
_SUBMODULES = frozenset(entry.partition(".")[0] for entry in _os.listdir(__path__[0])
                        if not entry.startswith("__")
                        and (entry.endswith((".py", ".so", ".pyd")) or
                             _os.path.isfile(_os.path.join(__path__[0], entry, "__init__.py"))))
# submodules imported without the full API (the device-side loader needs numpy + cffi only;
# profiler/ is lazy itself: its _table is standard library, the rest imports the full API)
_LIGHT = frozenset(("runtime", "_version", "_api", "profiler"))
_lock = _thread.RLock()  # held by the thread importing _api.py
_loading = []  # non-empty while _api.py is being imported (by the thread holding _lock)


def _load_full_api(wait=True):
    """Import _api.py (once) and copy its public names into this package. A call made while
    _api.py is being imported returns at once (the names come when it is done), in the same
    thread; another thread waits for it (wait=True) or returns (wait=False, the finder's: it
    runs holding an import lock that the loading thread may need)."""
    namespace = globals()
    if namespace.get("_full_api_loaded") or not _lock.acquire(blocking=wait):
        return
    try:
        if namespace.get("_full_api_loaded") or _loading:
            return
        _loading.append(True)
        try:
            api = _importlib.import_module(__name__ + "._api")
        finally:
            _loading.clear()
        namespace.update({k: v for k, v in vars(api).items() if not k.startswith("_")})
        namespace["_full_api_loaded"] = True
        if _FullApiFinder in _sys.meta_path:
            _sys.meta_path.remove(_FullApiFinder)
    finally:
        _lock.release()


class _AlreadyLoaded:
    """The loader of a submodule that _api.py imported while the import system was looking for
    it: hands over that module instead of running its file again, then steps aside."""

    def __init__(self, module, loader):
        self.module, self.loader = module, loader

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        module.__spec__.loader = self.loader

    def __getattr__(self, name):  # get_data, get_source, is_package, ...: the real loader's
        return getattr(self.loader, name)


class _FullApiFinder:
    """Loads the full API when a submodule other than runtime/ is first imported."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        head, _, rest = name.partition(".")
        if head != __name__ or not rest or rest.partition(".")[0] in _LIGHT or _loading:
            return None
        _load_full_api(wait=False)  # imports `name` too, if the API uses it
        module = _sys.modules.get(name)
        if module is None:  # a submodule outside the API (cli, demo): imported as usual
            return None
        # the import system returns module.__spec__ when the module appeared meanwhile
        module.__spec__.loader = _AlreadyLoaded(module, module.__spec__.loader)
        return module.__spec__


_sys.meta_path.insert(0, _FullApiFinder)


def __getattr__(name):
    if name in _LIGHT:
        return _importlib.import_module(f"{__name__}.{name}")
    if name.startswith("__") and name != "__all__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    _load_full_api()
    namespace = globals()
    if name == "__all__" and namespace.get("_full_api_loaded"):
        namespace["__all__"] = sorted(k for k in namespace if not k.startswith("_"))
    if name in namespace:      # the API's name first: `tensor` is the function, not tensor.py
        return namespace[name]
    if name in _SUBMODULES:    # a submodule outside the API (cli, demo)
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    _load_full_api()
    return sorted(globals())


def export_model(module, example_inputs, path, calibration_data=None):
    """A trained Module as a model file `.mte` in one call (graph/modelfile.py): traced,
    optimized, int8 when `calibration_data` is given; returns the Graph written."""
    from .graph.modelfile import export_model as _export
    return _export(module, example_inputs, path, calibration_data)
