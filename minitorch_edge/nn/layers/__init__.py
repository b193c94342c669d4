"""Layers: one file per family; each keeps an __all__ that nn/__init__.py re-exports."""
