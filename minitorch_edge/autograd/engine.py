"""The engine: replay the tape backwards, delivering each op's gradients to its inputs.

The algorithm (`_run`):

1. Send each root's gradient (ones, for a scalar loss) along the root's edge.
2. A node that receives its first gradient is pushed on a heap keyed by its sequence number.
3. Pop the node with the highest number. Every op that used its outputs was recorded later, so
   has a higher number and has already run: the node's output gradients are complete.
4. Call its backward on them; it returns one gradient per input.
5. Send each along that input's edge: into the pending gradients of the node that made the input
   (summed per output), or into the input itself if it is a leaf (summed per leaf).
6. When the heap is empty, add each leaf's summed gradient into ``leaf.grad``.

`backward` accumulates into leaves; `grad` returns the gradients of chosen inputs instead.

The rest is kept out of the loop, each part behind a named helper below it:

* pruning: with chosen inputs (`grad`, ``backward(inputs=...)``) only nodes that lead to one
  of them run, and their gradients are captured — `_Targets`;
* gradient adoption: a gradient array a backward made fresh for one leaf becomes that leaf's
  ``.grad`` without a copy — `mark_fresh`, `_claim_fresh`, `_adoptable`;
* hooks and ``retain_grad`` on a node's outputs — `_run_output_hooks`; on a leaf —
  `_run_leaf_hooks`; ``Node.register_hook`` hooks — `_run_node_hooks`; hooks that run once a
  leaf's ``.grad`` was accumulated — `register_post_accumulate_grad_hook` (such a leaf is
  finished as soon as its last gradient arrives, `_early_leaves`, not at the end of the pass); callbacks that run
  once at the end of the pass — `queue_callback`;
* checking what backward returns (count, type, shape; dtype cast), anomaly mode's nan/inf check,
  zeros for the missing gradients of a multi-output node — `_call_backward`, `_check_finite`,
  `_materialize_missing_grads`;
* freeing saved tensors once a node has run, unless the graph is retained — `_free_saved_tensors`;
* grad mode (on only with ``create_graph``) and numpy's warnings during a pass — `_backward_mode`.
"""
from heapq import heappop, heappush

import numpy as np

from ..dtypes import is_float_dtype
from ..tensor import Tensor
from .function import _Recording
from .grad_mode import _State

__all__ = ["backward", "grad"]


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


# ---- the replay ---------------------------------------------------------------------------------
def _run(root_edges, root_grads, retain_graph, create_graph, targets, accumulate):
    """Replay the graph backwards from the roots; return the gradients that reached `targets`
    (by `_key`). An edge is (node, output_nr) for a recorded tensor, (leaf, None) for a leaf."""
    pending = {}     # id(node) -> [gradient summed so far, per output] of a node yet to run
    ready = []       # heap of (-seq, id(node), node): the highest sequence number pops first
    leaves = {}      # id(leaf) -> [leaf, gradient summed so far]
    adopted = {}     # id(leaf) -> a fresh array sent to it alone (see mark_fresh)
    if targets is not None:
        targets = _Targets(root_edges, targets)
    # leaves with post-accumulate hooks finish as soon as their last gradient arrives (DDP
    # starts a bucket's all-reduce from there, while backward goes on): id(leaf) -> edges to come
    early = (_early_leaves(root_edges) if accumulate and targets is None
             and _post_accumulate_hooks else None)

    def send(edge, g):
        """Add g to what waits at the end of `edge`; a node's first gradient schedules it."""
        target, nr = edge
        if nr is None:                      # a leaf
            slot = leaves.get(id(target))
            if slot is None:
                slot = leaves[id(target)] = [target, g]
            else:
                slot[1] = slot[1] + g
            if early and id(target) in early:
                early[id(target)] -= 1
                if not early[id(target)]:   # every path into it has delivered
                    del early[id(target)], leaves[id(target)]
                    _finish_leaf(target, slot[1], create_graph, adopted)
            return
        grads = pending.get(id(target))
        if grads is None:
            grads = pending[id(target)] = [None] * len(target._out_meta)
            heappush(ready, (-target._seq, id(target), target))
        grads[nr] = g if grads[nr] is None else grads[nr] + g

    with _backward_mode(create_graph):
        for edge, g in zip(root_edges, root_grads):
            send(edge, g)
        while ready:
            node = heappop(ready)[2]        # all ops that used its outputs have run
            grads = pending.pop(id(node))
            _run_output_hooks(node, grads, create_graph)     # tensor hooks, retain_grad
            if targets is not None:
                targets.capture_outputs(node, grads)
                if targets.prunes(node):
                    continue                # no chosen input lies behind it
            if _Recording.profile is None:
                grad_inputs = _call_backward(node, grads)
            else:                           # a profiler records: it times the node
                grad_inputs = _Recording.profile.backward(node, grads, _call_backward)
            for edge, g in zip(node._next, grad_inputs):
                if edge is None or g is None:
                    continue                # an input that needs no gradient, or none came
                if targets is not None and targets.cuts(edge):
                    continue                # it would reach only pruned nodes
                if _fresh and edge[1] is None:
                    _claim_fresh(edge[0], g, adopted)   # gradient adoption
                send(edge, g)
            if _fresh:
                _fresh.clear()              # fresh arrays sent to other nodes stay theirs
            if not retain_graph:
                _free_saved_tensors(node)
        for leaf, g in leaves.values():     # every path into each leaf has delivered
            if targets is None:
                if accumulate:
                    _finish_leaf(leaf, g, create_graph, adopted)
                continue
            if leaf._hooks:
                g = _run_leaf_hooks(leaf, g)
            if not targets.capture_leaf(leaf, g):
                continue                    # a leaf that is not one of the chosen inputs
            if accumulate:
                _accumulate(leaf, g, create_graph, _adoptable(leaf, g, adopted))
                if _post_accumulate_hooks:
                    _run_post_accumulate_hooks(leaf)
        if _final_callbacks:
            _run_final_callbacks()
    return {} if targets is None else targets.captured


def _finish_leaf(leaf, g, create_graph, adopted):
    """A leaf's summed gradient: its hooks, then into .grad, then its post-accumulate hooks."""
    if leaf._hooks:
        g = _run_leaf_hooks(leaf, g)
    _accumulate(leaf, g, create_graph, _adoptable(leaf, g, adopted))
    if _post_accumulate_hooks:
        _run_post_accumulate_hooks(leaf)


def _early_leaves(root_edges):
    """id(leaf) -> the number of edges into it, for the leaves with post-accumulate hooks that
    the pass can reach."""
    counts = {}
    for edge in root_edges:
        if edge[1] is None and id(edge[0]) in _post_accumulate_hooks:
            counts[id(edge[0])] = counts.get(id(edge[0]), 0) + 1
    for node in reachable_nodes(e[0] for e in root_edges if e[1] is not None):
        for e in node._next:
            if e is not None and e[1] is None and id(e[0]) in _post_accumulate_hooks:
                counts[id(e[0])] = counts.get(id(e[0]), 0) + 1
    return counts


class _backward_mode:
    """During a pass: grad mode = create_graph, no numpy float warnings; fresh marks end with it."""

    def __init__(self, create_graph):
        self.create_graph = create_graph

    def __enter__(self):
        self.prev = _State.enabled
        _State.enabled = self.create_graph
        # like PyTorch: inf/nan gradients are values, not warnings
        self.errstate = np.errstate(divide="ignore", invalid="ignore", over="ignore")
        self.errstate.__enter__()

    def __exit__(self, *exc):
        _fresh.clear()
        if exc[0] is not None:
            _final_callbacks.clear()        # a failed pass runs none of its callbacks
        _State.enabled = self.prev
        self.errstate.__exit__(None, None, None)
        return False


def _free_saved_tensors(node):
    """The node has run and the graph is not retained: drop what it saved for backward."""
    node._saved = None
    node._freed = True


# ---- one node's backward ------------------------------------------------------------------------
def _call_backward(node, grads):
    """Run one node's backward; return one gradient per input, checked and cast to its dtype."""
    if len(node._out_meta) > 1 and node.materialize_grads:
        _materialize_missing_grads(node, grads)
    result = node._fn.backward(node, *grads)
    if not isinstance(result, tuple):
        result = (result,)
    n_in = len(node._next)
    if len(result) != n_in and (len(result) < n_in
                                or any(g is not None for g in result[n_in:])):
        raise RuntimeError(f"function {node.name()} returned an incorrect number of gradients "
                           f"(expected {n_in}, got {len(result)})")  # extra ones must be None
    result = list(result[:n_in])
    hooks = node.__dict__.get("_node_hooks")
    if hooks:
        result = _run_node_hooks(hooks, result, grads)
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
        if _Recording.anomaly:
            _check_finite(node, i, g)
    return result


def _materialize_missing_grads(node, grads):
    """Zeros for outputs of a multi-output node that received no gradient (materialize_grads)."""
    for i, g in enumerate(grads):
        if g is None and node._out_meta[i] is not None:
            shape, dtype = node._out_meta[i]
            grads[i] = Tensor._make(np.zeros(shape, dtype))


def _check_finite(node, i, g):
    """Anomaly mode: a nan/inf gradient is an error that names the forward call behind it."""
    if is_float_dtype(g._data.dtype) and not np.isfinite(g._data).all():
        what = "nan" if np.isnan(g._data).any() else "inf"
        raise RuntimeError(f"Function '{node.name()}' returned {what} values in its {i}th "
                           f"output.\nThe forward call that created this node:\n"
                           f"{node._stack or '(not recorded)'}")


def _dtype_of(dtype):
    """Our dtype for a numpy dtype."""
    from ..dtypes import _FROM_NP
    return _FROM_NP[np.dtype(dtype)]


# ---- hooks and retain_grad ----------------------------------------------------------------------
def _run_output_hooks(node, grads, create_graph):
    """Before a node's backward: tensor hooks on its outputs, then its pre-hooks (each may replace
    gradients in `grads`), then retain_grad outputs get their gradient."""
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


def _run_node_hooks(hooks, result, grads):
    """After a node's backward: hook(grad_inputs, grad_outputs) may replace the grad_inputs."""
    for hook in hooks:
        for g in result:                # a hook may keep what it sees: no adoption then
            if isinstance(g, Tensor):
                _fresh.pop(id(g._data), None)
        new = hook(tuple(result), tuple(grads))
        if new is not None:
            result = list(new)
    return result


def _run_leaf_hooks(leaf, g):
    """A leaf's tensor hooks, on its summed gradient; each may return a replacement."""
    for hook in leaf._hooks:
        new = hook(g)
        if new is not None:
            g = new
    return g


# ---- post-accumulate-grad hooks ----------------------------------------------------------------
# id(leaf) -> (weak reference to the leaf, [hook, ...]); an entry goes away with its leaf. (Tensor
# has __slots__, so the hooks are kept here rather than on the tensor.)
_post_accumulate_hooks = {}


def register_post_accumulate_grad_hook(tensor, hook):
    """``hook(tensor)`` runs after backward has accumulated a gradient into ``tensor.grad`` (a
    leaf that requires grad); it must return None (it may read or change ``tensor.grad`` and
    the tensor in place: an optimizer step fused into backward). It runs for
    ``backward()``, not for ``autograd.grad`` (which accumulates nothing). Returns a handle
    with ``remove()``. Tensor.register_post_accumulate_grad_hook is this function."""
    import weakref
    from ..tensor import _HookHandle
    if not tensor._rg:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if tensor._fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    key = id(tensor)
    entry = _post_accumulate_hooks.get(key)
    if entry is None or entry[0]() is not tensor:
        ref = weakref.ref(tensor, lambda _r, k=key: _drop_post_accumulate_hooks(k, _r))
        entry = _post_accumulate_hooks[key] = (ref, [])
    entry[1].append(hook)
    return _HookHandle(entry[1], hook)


def _drop_post_accumulate_hooks(key, ref):
    entry = _post_accumulate_hooks.get(key)
    if entry is not None and entry[0] is ref:
        del _post_accumulate_hooks[key]


def _run_post_accumulate_hooks(leaf):
    entry = _post_accumulate_hooks.get(id(leaf))
    if entry is None or entry[0]() is not leaf:
        return
    for hook in list(entry[1]):
        out = hook(leaf)
        if out is not None:
            raise TypeError(f"a post accumulate grad hook must return None, but hook returned "
                            f"'{type(out).__name__}' (change tensor.grad in place instead)")


Tensor.register_post_accumulate_grad_hook = register_post_accumulate_grad_hook


# ---- callbacks at the end of a pass -------------------------------------------------------------
_final_callbacks = []


def queue_callback(callback):
    """Run ``callback()`` once, when the running backward pass has accumulated every leaf's
    gradient (after the post-accumulate-grad hooks): PyTorch's
    ``Variable._execution_engine.queue_callback``. DDP waits for its all-reduces here."""
    _final_callbacks.append(callback)


def _run_final_callbacks():
    while _final_callbacks:
        _final_callbacks.pop(0)()


# ---- leaves -------------------------------------------------------------------------------------
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


# ---- pruning: autograd.grad and backward(inputs=...) --------------------------------------------
class _Targets:
    """The chosen inputs: the gradients that reach them, and which nodes lead to none of them
    (those are pruned: their backward never runs)."""

    def __init__(self, root_edges, targets):
        self.keys = {_key(e) for e in targets}
        self.needed = _needed_nodes(root_edges, targets)
        self.captured = {}

    def capture_outputs(self, node, grads):
        """Keep the gradients of the node's outputs that are chosen inputs."""
        for nr, g in enumerate(grads):
            if (id(node), nr) in self.keys and g is not None:
                self.captured[(id(node), nr)] = g

    def prunes(self, node):
        """True when no chosen input lies behind the node: its backward need not run."""
        return id(node) not in self.needed

    def cuts(self, edge):
        """True when a gradient sent along the edge would reach only a pruned node."""
        return (edge[1] is not None and id(edge[0]) not in self.needed
                and _key(edge) not in self.keys)

    def capture_leaf(self, leaf, g):
        """Keep g if the leaf is a chosen input; say whether it is."""
        if (id(leaf), None) in self.keys:
            self.captured[(id(leaf), None)] = g
            return True
        return False


def reachable_nodes(roots):
    """Every Node reachable from the Nodes `roots` through their inputs' edges, in increasing
    sequence order (inputs before the ops that used them)."""
    nodes, stack, seen = [], list(roots), set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        nodes.append(node)
        stack.extend(e[0] for e in node._next if e is not None and e[1] is not None)
    return sorted(nodes, key=lambda n: n._seq)


def _needed_nodes(root_edges, targets):
    """The nodes from which some target can be reached (only those need to run)."""
    target_keys = {_key(e) for e in targets}
    needed = set()
    for node in reachable_nodes(e[0] for e in root_edges if e[1] is not None):
        for e in node._next:
            if e is not None and (_key(e) in target_keys or
                                  (e[1] is not None and id(e[0]) in needed)):
                needed.add(id(node))
                break
    return needed


def _key(edge):
    """A hashable name for an edge's end: (id(node), output_nr) or (id(leaf), None)."""
    return (id(edge[0]), edge[1])


# ---- gradient adoption --------------------------------------------------------------------------
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


def _claim_fresh(leaf, g, adopted):
    """If g's array is fresh (mark_fresh), note it as the one the leaf may adopt."""
    if _fresh.pop(id(g._data), None) is g._data:
        adopted[id(leaf)] = g._data


def _adoptable(leaf, g, adopted):
    """True when g is exactly the fresh array sent to this leaf and no hook could have kept it."""
    return not leaf._hooks and adopted.get(id(leaf)) is g._data


# ---- setting up a pass --------------------------------------------------------------------------
def _as_tuple(x):
    """None, a Tensor or a sequence of them, as a tuple."""
    if x is None:
        return ()
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _edge_of(t):
    """The edge into tensor t: (its grad_fn, its output_nr), or (t, None) for a leaf."""
    return (t._fn, t._nr) if t._fn is not None else (t, None)


def _root_grads(outputs, grad_outputs, create_graph):
    """The gradient each root starts with: grad_outputs[i], or ones for a one-element output."""
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
