"""The engine: replay the recorded nodes backwards and deliver gradients.

Starting from the root tensors, gradients flow along the edges each node keeps to its inputs'
nodes. Nodes wait in a heap ordered by sequence number: an op is always recorded after the ops
that made its inputs, so taking the highest number first is a valid reverse topological order —
this is "the tape" replayed in reverse. A node runs once all gradients for its outputs have been
summed. Leaves collect their summed gradient, run their hooks and add it into ``.grad``.

``backward`` accumulates into leaves; ``grad`` returns gradients for chosen inputs instead and
skips the parts of the graph that do not lead to them.
"""
import heapq

import numpy as np

from ..tensor import Tensor, describe
from .function import _Recording
from .grad_mode import _State

__all__ = ["backward", "grad"]


def _as_tuple(x):
    if x is None:
        return ()
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _root_grads(outputs, grad_outputs, create_graph):
    grads = []
    for i, out in enumerate(outputs):
        if not out._rg:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have "
                               f"a grad_fn")
        g = grad_outputs[i] if i < len(grad_outputs) else None
        if g is None:
            if out._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            g = Tensor._make(np.ones_like(out._data))
        else:
            if not isinstance(g, Tensor):
                g = Tensor._make(np.asarray(g, dtype=out._data.dtype))
            if g._data.shape != out._data.shape:
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                                   f"{tuple(g.shape)} and output[{i}] has a shape of "
                                   f"{tuple(out.shape)}.")
        grads.append(g)
    return grads


def _edge_of(t):
    return (t._fn, t._nr) if t._fn is not None else (t, None)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Compute the gradient of `tensors` w.r.t. the graph leaves and add it into ``leaf.grad``."""
    tensors = _as_tuple(tensors)
    grads = _root_grads(tensors, _as_tuple(grad_tensors), create_graph)
    if retain_graph is None:
        retain_graph = create_graph
    targets = None
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if not inputs:
            raise RuntimeError("backward: 'inputs' argument to backward() cannot be empty.")
        targets = [_edge_of(t) for t in inputs]
    _run([_edge_of(t) for t in tensors], grads, retain_graph, create_graph, targets,
         accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=None, materialize_grads=False):
    """Return d(outputs)/d(inputs) (weighted by grad_outputs) without touching ``.grad``."""
    outputs, inputs = _as_tuple(outputs), _as_tuple(inputs)
    for t in inputs:
        if not t._rg:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    grads = _root_grads(outputs, _as_tuple(grad_outputs), create_graph)
    if retain_graph is None:
        retain_graph = create_graph
    if allow_unused is None:
        allow_unused = materialize_grads
    targets = [_edge_of(t) for t in inputs]
    captured = _run([_edge_of(t) for t in outputs], grads, retain_graph, create_graph, targets,
                    accumulate=False)
    result = []
    for t, edge in zip(inputs, targets):
        g = captured.get(_key(edge))
        if g is None:
            if not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been "
                                   "used in the graph. Set allow_unused=True if this is the "
                                   "desired behavior.")
            if materialize_grads:
                g = Tensor._make(np.zeros_like(t._data))
        result.append(g)
    return tuple(result)


# Arrays the running backward created for one gradient each (mark_fresh), by id; the engine
# empties this after every node. A fresh array delivered straight to a leaf, as that leaf's only
# gradient, with no hooks that could keep it, becomes the leaf's .grad without a copy.
_fresh = {}


def mark_fresh(array):
    """Called by a backward on a gradient array it has just created and returns in exactly one
    place, with no other reference kept: if it goes straight to a leaf, the engine may make it
    that leaf's .grad without the defensive copy (as PyTorch steals an unshared gradient)."""
    _fresh[id(array)] = array
    return array


def _key(edge):
    return (id(edge[0]), edge[1])


def _needed_nodes(root_edges, targets):
    """The nodes from which some target can be reached (only those need to run)."""
    target_keys = {_key(e) for e in targets}
    nodes, stack, seen = [], [e[0] for e in root_edges if e[1] is not None], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        nodes.append(node)
        stack.extend(e[0] for e in node._next if e is not None and e[1] is not None)
    needed = set()
    for node in sorted(nodes, key=lambda n: n._seq):  # inputs before the ops that used them
        for e in node._next:
            if e is not None and (_key(e) in target_keys or
                                  (e[1] is not None and id(e[0]) in needed)):
                needed.add(id(node))
                break
    return needed


def _run(root_edges, root_grads, retain_graph, create_graph, targets, accumulate):
    target_keys = None if targets is None else {_key(e) for e in targets}
    needed = None if targets is None else _needed_nodes(root_edges, targets)
    captured = {}
    buffers = {}     # id(node) -> [grad per output]
    heap = []        # (-seq, id(node), node)
    leaves = {}      # id(leaf) -> [leaf, summed grad]
    adoptable = {}   # id(leaf) -> the fresh array its creator handed straight to that leaf

    def deliver(edge, g):
        target, nr = edge
        if nr is None:                                  # a leaf
            slot = leaves.get(id(target))
            if slot is None:
                leaves[id(target)] = [target, g]
            else:
                slot[1] = slot[1] + g
            return
        buf = buffers.get(id(target))
        if buf is None:
            n_out = len(target._out_meta)
            buf = buffers[id(target)] = [None] * n_out
            heapq.heappush(heap, (-target._seq, id(target), target))
        buf[nr] = g if buf[nr] is None else buf[nr] + g

    prev_mode = _State.enabled
    _State.enabled = create_graph
    errstate = np.errstate(divide="ignore", invalid="ignore", over="ignore")
    errstate.__enter__()   # like PyTorch: inf/nan gradients are values, not warnings
    try:
        for edge, g in zip(root_edges, root_grads):
            deliver(edge, g)
        while heap:
            _, _, node = heapq.heappop(heap)
            grads = buffers.pop(id(node))
            _call_tensor_hooks(node, grads, create_graph)
            if target_keys is not None:
                for nr, g in enumerate(grads):
                    if (id(node), nr) in target_keys and g is not None:
                        captured[(id(node), nr)] = g
                if id(node) not in needed:
                    continue
            for edge, g in zip(node._next, _call_backward(node, grads)):
                if edge is not None and g is not None:
                    if targets is not None and edge[1] is not None and id(edge[0]) not in needed \
                            and _key(edge) not in target_keys:
                        continue
                    if edge[1] is None and _fresh and _fresh.pop(id(g._data), None) is g._data:
                        adoptable[id(edge[0])] = g._data     # fresh, straight to a leaf
                    deliver(edge, g)
            if _fresh:
                _fresh.clear()     # fresh arrays that went to other nodes stay theirs
            if not retain_graph:
                node._saved = None
                node._freed = True
        for leaf, g in leaves.values():
            for hook in leaf._hooks or ():
                new = hook(g)
                if new is not None:
                    g = new
            if target_keys is not None:
                if (id(leaf), None) in target_keys:
                    captured[(id(leaf), None)] = g
            if accumulate and (target_keys is None or (id(leaf), None) in target_keys):
                # a gradient array made fresh for this leaf alone (see mark_fresh) becomes its
                # .grad as it is; a hook may have kept the tensor, so not when hooks ran
                adopt = not leaf._hooks and adoptable.get(id(leaf)) is g._data
                _accumulate(leaf, g, create_graph, adopt)
    finally:
        _fresh.clear()
        _State.enabled = prev_mode
        errstate.__exit__(None, None, None)
    return captured


def _call_tensor_hooks(node, grads, create_graph):
    if node._pre_hooks:
        for nr, hooks in node._pre_hooks.items():
            for hook in hooks:
                if grads[nr] is not None:
                    new = hook(grads[nr])
                    if new is not None:
                        grads[nr] = new
    for hook in node.__dict__.get("_node_prehooks", ()):
        new = hook(tuple(grads))
        if new is not None:
            grads[:] = list(new)
    if node._retain:
        for nr, ref in node._retain.items():
            t = ref()
            if t is not None and grads[nr] is not None:
                g = grads[nr] if create_graph else grads[nr].detach()
                t._grad = g if t._grad is None else t._grad + g


def _call_backward(node, grads):
    """Run one node's backward and check what it returns against its inputs."""
    fn = node._fn
    if len(node._out_meta) > 1 and node.materialize_grads:
        for i, g in enumerate(grads):
            if g is None and node._out_meta[i] is not None:
                shape, dtype = node._out_meta[i]
                grads[i] = Tensor._make(np.zeros(shape, dtype))
    result = fn.backward(node, *grads)
    if not isinstance(result, tuple):
        result = (result,)
    n_in = len(node._next)
    if len(result) < n_in:
        raise RuntimeError(f"function {node.name()} returned an incorrect number of gradients "
                           f"(expected {n_in}, got {len(result)})")
    result = list(result[:n_in])
    for hook in node.__dict__.get("_node_hooks", ()):
        for g in result:                # a hook may keep what it sees: no adoption then
            if isinstance(g, Tensor):
                _fresh.pop(id(g._data), None)
        new = hook(tuple(result), tuple(grads))
        if new is not None:
            result = list(new)
    for i, (edge, g) in enumerate(zip(node._next, result)):
        if edge is None or g is None:
            continue
        if not isinstance(g, Tensor):
            raise TypeError(f"function {node.name()} returned a gradient of type "
                            f"{type(g).__name__} at index {i}; expected a Tensor or None")
        target, nr = edge          # the input's shape and dtype, read without a wrapper
        if nr is None:
            shape, dtype = target._data.shape, target._data.dtype
        else:
            shape, dtype = target._out_meta[nr]
        if g._data.shape != shape:
            raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index "
                               f"{i} - got {list(g._data.shape)} but expected shape compatible "
                               f"with {list(shape)}")
        if g._data.dtype != dtype:
            result[i] = g = g.to(_dtype_of(dtype))
        if _Recording.anomaly and g._data.dtype.kind == "f" and not np.isfinite(g._data).all():
            what = "nan" if np.isnan(g._data).any() else "inf"
            raise RuntimeError(f"Function '{node.name()}' returned {what} values in its {i}th "
                               f"output.\nThe forward call that created this node:\n"
                               f"{node._stack or '(not recorded)'}")
    return result


def _dtype_of(dtype):
    from ..dtypes import _FROM_NP
    return _FROM_NP[np.dtype(dtype)]


def _accumulate(leaf, g, create_graph, adopt=False):
    """Add g into leaf.grad. A first gradient is copied (it may share memory with other
    tensors, and .grad is later changed in place) unless `adopt` says nothing else holds it."""
    if not create_graph:
        g = g.detach()
    old = leaf._grad
    if old is None:
        if create_graph:
            leaf._grad = g
        else:
            leaf._grad = Tensor._make(g._data if adopt else np.array(g._data, copy=True))
    elif create_graph or old._rg or not old._data.flags.writeable:
        leaf._grad = old + g
    else:
        old._data += g._data
