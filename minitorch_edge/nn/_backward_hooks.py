"""Module backward hooks: ``Module.register_full_backward_hook`` and
``Module.register_full_backward_pre_hook``, with PyTorch's semantics.

The idea (PyTorch's BackwardHook): a call of a module that has backward hooks passes its
positional Tensor inputs, and then its Tensor outputs, through an identity Function,
`BackwardHookFunction`. In the backward pass

* the node behind the outputs is reached first, with the gradients w.r.t. the module's outputs
  (``grad_output``): the backward pre-hooks run there, ``hook(module, grad_output)``, and may
  return a replacement, which is what flows into the module;
* the node behind the inputs is reached once the module's own backward is done, with the
  gradients w.r.t. the module's inputs (``grad_input``): the backward hooks run there,
  ``hook(module, grad_input, grad_output)``, and may return a replacement for grad_input.

Both tuples have one entry per positional argument (per output), None where that is not a
Tensor or no gradient reached it. When no input requires grad, the backward hooks run at the
output node with ``grad_input`` all None (and a warning, as PyTorch).

The wrapping runs as a forward pre-hook and a forward hook of the module that are kept after
the ones registered before (see `_install`); registering a backward hook moves them to the end.
Differs from PyTorch: a forward (pre-)hook registered *after* the backward hook runs after the
wrapping (PyTorch always wraps after every forward hook).
"""
import warnings
from collections import OrderedDict

from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from ..tensor import Tensor

__all__ = ["register_full_backward_hook", "register_full_backward_pre_hook",
           "BackwardHookFunction"]

_NO_INPUT_GRAD_MSG = (
    "Full backward hook is firing when gradients are computed with respect to module outputs "
    "since no inputs require gradients. See the documentation of "
    "Module.register_full_backward_hook for more details.")


class BackwardHookFunction(Function):
    """The identity on its Tensor arguments (a Tensor that does not require grad comes back
    non-differentiable). Gradient: the identity (zeros for an output that got no gradient, as
    PyTorch: a hook sees zeros, not None, for an input that does not require grad while another
    does). It gives a module's inputs and outputs a node of their own, on which the hooks sit."""

    @staticmethod
    def forward(ctx, *args):
        ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
        return args

    @staticmethod
    def backward(ctx, *grads):
        return grads


def _hook_tables(module):
    """The module's (backward hooks, backward pre-hooks) tables, created on first use."""
    d = module.__dict__
    if "_backward_hooks" not in d:
        d["_backward_hooks"] = OrderedDict()
        d["_backward_pre_hooks"] = OrderedDict()
    return d["_backward_hooks"], d["_backward_pre_hooks"]


def _install(module):
    """Make sure the wrapping forward pre-hook / forward hook are registered, last."""
    d = module.__dict__
    if "_backward_hook_keys" not in d:
        pre = module.register_forward_pre_hook(_wrap_inputs)
        post = module.register_forward_hook(_wrap_outputs)
        d["_backward_hook_keys"] = (pre._key, post._key)
        d["_backward_hook_calls"] = []          # the BackwardHook of each call in progress
    pre_key, post_key = d["_backward_hook_keys"]
    module._forward_pre_hooks.move_to_end(pre_key)
    module._forward_hooks.move_to_end(post_key)


def _add(module, table, hook, prepend):
    from .module import Module, _RemovableHandle
    Module._next_hook_id += 1
    key = Module._next_hook_id
    table[key] = hook
    if prepend:
        table.move_to_end(key, last=False)
    _install(module)
    return _RemovableHandle(table, key)


def register_full_backward_hook(module, hook, prepend=False):
    """``hook(module, grad_input, grad_output) -> new grad_input or None``, called when the
    gradients w.r.t. the module's positional Tensor inputs have been computed (one entry per
    positional argument, None for non-Tensors and where no gradient flows). The hook must not
    change its arguments in place. prepend=True runs it before the hooks already registered.
    Returns a handle with ``remove()``."""
    hooks, _ = _hook_tables(module)
    return _add(module, hooks, hook, prepend)


def register_full_backward_pre_hook(module, hook, prepend=False):
    """``hook(module, grad_output) -> new grad_output or None``, called with the gradients
    w.r.t. the module's outputs before they flow into the module. Returns a handle with
    ``remove()``."""
    _, pre_hooks = _hook_tables(module)
    return _add(module, pre_hooks, hook, prepend)


# ---- one call of a hooked module ----------------------------------------------------------------
class _BackwardHook:
    """The state of one call: where the Tensors sit among the inputs / outputs, and the
    grad_output captured at the output node for the input node's hooks."""

    def __init__(self, module):
        self.module = module
        self.hooks = list(module.__dict__["_backward_hooks"].values())
        self.pre_hooks = list(module.__dict__["_backward_pre_hooks"].values())
        self.grad_outputs = None
        self.input_index = self.output_index = None
        self.n_inputs = self.n_outputs = 0

    @staticmethod
    def _pack(index, values, n):
        out = [None] * n
        for i, v in zip(index, values):
            out[i] = v
        return tuple(out)

    @staticmethod
    def _through_identity(args):
        """args with its Tensors passed through BackwardHookFunction: (new args, the Tensors'
        positions, the identity's node), or (args, None, None) when nothing needs a gradient."""
        index = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tensors = [args[i] for i in index]
        if not (is_grad_enabled() and any(t.requires_grad for t in tensors)):
            return args, None, None
        new = BackwardHookFunction.apply(*tensors)
        node = next(t.grad_fn for t in new if t.grad_fn is not None)
        out = list(args)
        for i, t in zip(index, new):
            out[i] = t
        return tuple(out), index, node

    def setup_inputs(self, args):
        self.n_inputs = len(args)
        args, self.input_index, node = self._through_identity(args)
        if node is not None:
            node.register_hook(self._input_hook)
        return args

    def setup_outputs(self, out):
        is_tuple = isinstance(out, tuple)
        outs = out if is_tuple else (out,)
        self.n_outputs = len(outs)
        outs, self.output_index, node = self._through_identity(outs)
        if node is not None:
            node.register_prehook(self._output_prehook)
        return outs if is_tuple else outs[0]

    def _output_prehook(self, grads):
        """At the output node: record grad_output, run the pre-hooks (which may replace it);
        with no input requiring grad, the backward hooks run here."""
        grad_outputs = self._pack(self.output_index, grads, self.n_outputs)
        for hook in self.pre_hooks:
            new = hook(self.module, grad_outputs)
            if new is None:
                continue
            new = tuple(new) if isinstance(new, (tuple, list)) else (new,)
            if len(new) != len(grad_outputs):
                raise RuntimeError(f"Backward pre hook returned an invalid number of "
                                   f"grad_output, got {len(new)}, but expected "
                                   f"{len(grad_outputs)} (one per output of "
                                   f"{type(self.module).__name__})")
            grad_outputs = new
        self.grad_outputs = grad_outputs
        if self.input_index is None:
            warnings.warn(_NO_INPUT_GRAD_MSG, stacklevel=2)
            grad_inputs = (None,) * self.n_inputs
            for hook in self.hooks:
                res = hook(self.module, grad_inputs, grad_outputs)
                if res is not None and not (isinstance(res, tuple)
                                            and all(r is None for r in res)):
                    raise RuntimeError("Backward hook for Modules where no input requires "
                                       "gradient should always return None or None for all "
                                       "gradients.")
            self.grad_outputs = None
        return tuple(grad_outputs[i] for i in self.output_index)

    def _input_hook(self, grad_inputs, _grad_outputs):
        """At the input node: run the backward hooks on (grad_input, grad_output)."""
        if self.grad_outputs is None:   # the gradient reached the inputs without passing
            return None                 # through the outputs (e.g. double backward)
        res = self._pack(self.input_index, grad_inputs, self.n_inputs)
        for hook in self.hooks:
            out = hook(self.module, res, self.grad_outputs)
            if out is None:
                continue
            out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
            if len(out) != len(res):
                raise RuntimeError(f"Backward hook returned an invalid number of grad_input, "
                                   f"got {len(out)}, but expected {len(res)} (one per "
                                   f"positional argument of {type(self.module).__name__})")
            res = out
        self.grad_outputs = None
        return tuple(res[i] for i in self.input_index)


def _active(module):
    d = module.__dict__
    return bool(d.get("_backward_hooks")) or bool(d.get("_backward_pre_hooks"))


def _wrap_inputs(module, args):
    """Forward pre-hook: pass the Tensor arguments through the identity node."""
    calls = module.__dict__["_backward_hook_calls"]
    if not _active(module):
        calls.append(None)
        return None
    bw = _BackwardHook(module)
    calls.append(bw)
    new = bw.setup_inputs(args)
    return new if bw.input_index is not None else None


def _wrap_outputs(module, args, out):
    """Forward hook: pass the Tensor outputs through the identity node."""
    calls = module.__dict__["_backward_hook_calls"]
    bw = calls.pop() if calls else None
    if bw is None:
        return None
    new = bw.setup_outputs(out)
    return new if bw.output_index is not None else None


def _attach():
    """Make these Module methods (unless nn/module.py defines them itself)."""
    from .module import Module
    for fn in (register_full_backward_hook, register_full_backward_pre_hook):
        if fn.__name__ not in Module.__dict__:
            setattr(Module, fn.__name__, fn)


_attach()
