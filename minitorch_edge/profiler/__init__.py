"""minitorch_edge.profiler: torch.profiler's names (profile, record_function, schedule,
tensorboard_trace_handler, ProfilerActivity, ProfilerAction) plus a memory analyser
(memory_summary, plot_memory_timeline).

Imported lazily (PEP 562): ``profiler._table`` (the table and trace formatting, standard library
only) can be used without importing the tensor library; the rest loads on first use.
"""
import importlib

_WHERE = {
    "profile": "_profile", "record_function": "_profile", "schedule": "_profile",
    "tensorboard_trace_handler": "_profile", "ProfilerActivity": "_profile",
    "ProfilerAction": "_profile",
    "memory_summary": "_memory", "MemorySummary": "_memory", "plot_memory_timeline": "_memory",
    "ProfileResult": "_table", "EventList": "_table", "Event": "_table",
}

__all__ = sorted(_WHERE)


def __getattr__(name):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'minitorch_edge.profiler' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_WHERE))
