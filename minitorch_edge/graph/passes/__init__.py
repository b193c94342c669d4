"""Graph passes: each a function Graph -> Graph in its own file, with its pattern drawn in its
docstring; `run_passes` composes them (Graph.optimize).

DEFAULT is the fixed order `Graph.optimize()` runs. The order matters: constants are folded
before BatchNorm is folded into the conv before it (folding needs constant weights), and the
epilogue fusion runs after BatchNorm folding so that Conv -> Relu is adjacent; a quantized
(QDQ) graph's float ops become int8 ops (fuse_quantized) before the float epilogue fusion
could take them. fuse_attention (after folding, so that the scales are constants) gives an
imported graph the mte.Attention our tracer writes itself.
"""
from ..ir import Graph

__all__ = ["DEFAULT", "PASSES", "register", "run_passes"]

from . import (  # noqa
    eliminate_dead_code,
    fold_batch_norm,
    fold_constants,
    fold_pad,
    fuse_attention,
    fuse_epilogue,
    fuse_quantized,
    merge_reshapes,
    recognize_pooling,
    remove_identities,
)
from .registry import PASSES, register

# the order Graph.optimize() runs them in (see the module docstring)
DEFAULT = ["remove_identities", "fold_constants", "fold_batch_norm", "fold_pad",
           "merge_reshapes", "recognize_pooling", "fuse_attention", "fuse_quantized", "fuse_epilogue", "remove_identities", "eliminate_dead_code"]


def run_passes(graph, passes=None):
    """Apply `passes` (names from PASSES or functions Graph -> Graph; None: DEFAULT) in order.
    Each pass gets a copy, and its result is checked."""
    chosen = DEFAULT if passes is None else passes
    g = graph.copy()
    for p in chosen:
        fn = PASSES.get(p) if isinstance(p, str) else p
        if fn is None:
            raise ValueError(f"Graph.optimize: unknown pass {p!r}; passes: {', '.join(PASSES)}")
        g = fn(g.copy())
        if not isinstance(g, Graph):
            raise TypeError(f"Graph.optimize: pass {p!r} returned {type(g).__name__}, not a Graph")
        g.remove_unused_values()
        g.check()
    return g
