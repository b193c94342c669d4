"""minitorch_edge.graph: a model as a static graph, optimised, memory-planned and executed.

    from minitorch_edge import graph
    g = graph.trace(model, x)       # trace.py: record one eval forward as a Graph (ir.py)
    g = g.optimize()                # passes/: fold BatchNorm, fuse epilogues, clean up
    plan = g.plan_memory()          # planner.py: every intermediate in one arena
    run = g.compile()               # executor.py: y = run(x), no autograd, no allocation per op
    g.save("model.mte"); g = graph.load("model.mte")   # modelfile.py: the model file

The ops a graph may hold, with their shape rules and implementations, are in opset.py,
opset_tensor.py and opset_nn.py; which eager Function becomes which nodes is in mapping.py.
"""
from .ir import Graph, GraphError, Node, Value  # noqa: F401
from .trace import TraceError, trace  # noqa: F401
from .planner import MemoryPlan, plan_memory  # noqa: F401
from .executor import Executor, run_reference  # noqa: F401
from .modelfile import ModelFormatError, export_model, load  # noqa: F401

__all__ = ["Graph", "GraphError", "Node", "Value", "trace", "TraceError", "MemoryPlan",
           "plan_memory", "Executor", "run_reference", "load", "export_model",
           "ModelFormatError"]
