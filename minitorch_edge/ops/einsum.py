"""einsum: one notation for every sum of products (matmul, batched matmul, transpose, trace,
diagonal, outer product, ...).

``einsum("ij,jk->ik", a, b)`` names each dim of each operand with a letter; letters shared
between operands are multiplied together, letters missing from the output are summed out.

The work is split in two:

* `einsum` parses the equation (spaces, implicit output, ``...``), checks it against the operand
  shapes and rewrites it into a plain form where every dim has a letter (``...`` becomes fresh
  letters, right-aligned as in broadcasting) and every operand already has the full size of each
  of its letters (size-1 dims are `expand`-ed, so broadcasting is undone by Expand's backward).
* `Einsum` computes that plain equation with ``np.einsum``. Its gradient for operand k is again
  an einsum: the output gradient times all the other operands, producing operand k's letters.
  Two cases need care. A letter repeated inside operand k (``"ii->i"``) means the gradient lives
  on a diagonal: the repeat is renamed to a fresh letter and an identity matrix ties the two
  letters together (``"i,ip->ip"``). A letter that appears only in operand k was summed out, so
  its gradient is the same along that dim: it is computed without the letter and expanded back.
  Since the backward is itself an einsum, gradients of gradients come for free.
"""
from .._autocast import autocast_op
import numpy as np

from .. import dtypes as _dt
from ..autograd.function import Function
from ..tensor import Tensor
from ._util import shape_str

__all__ = ["einsum"]

# ASCII order: the implicit output lists its letters in this order (as numpy and PyTorch do)
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _err(equation, msg):
    return RuntimeError(f"einsum('{equation}'): {msg}")


def _tokens(term, equation, where):
    """Split one term ("i...j") into letters and '...' tokens, rejecting anything else."""
    out, i = [], 0
    while i < len(term):
        c = term[i]
        if c == ".":
            if term[i:i + 3] != "...":
                raise _err(equation, f"found '.' in {where} that is not part of an ellipsis "
                                     f"'...'")
            if "..." in out:
                raise _err(equation, f"{where} has more than one ellipsis '...'")
            out.append("...")
            i += 3
            continue
        if c not in _LETTERS:
            raise _err(equation, f"invalid subscript {c!r} in {where}; subscripts must be "
                                 f"letters a-z or A-Z")
        out.append(c)
        i += 1
    return out


def _parse(equation, shapes):
    """Rewrite `equation` for operands of `shapes` into plain form.

    Returns (subs, out, sizes): one letter string per operand (ellipsis dims spelled with fresh
    letters), the output letters, and the size of every letter after broadcasting."""
    eq = equation.replace(" ", "")
    if eq.count("->") > 1:
        raise _err(equation, "more than one '->' in the equation")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        few = "fewer" if len(shapes) < len(terms) else "more"
        raise _err(equation, f"{few} operands were provided ({len(shapes)}) than the equation "
                             f"names ({len(terms)})")
    toks = [_tokens(t, equation, f"operand {k}") for k, t in enumerate(terms)]
    ell = []
    for k, (tk, shape) in enumerate(zip(toks, shapes)):
        n_letters = len(tk) - ("..." in tk)
        if "..." not in tk and n_letters != len(shape):
            raise _err(equation, f"operand {k} has {len(shape)} dims (shape "
                                 f"{shape_str(shape)}) but its subscripts name {n_letters}, and "
                                 f"no ellipsis '...' was given")
        if n_letters > len(shape):
            raise _err(equation, f"operand {k} has {len(shape)} dims (shape {shape_str(shape)}) "
                                 f"but its subscripts name {n_letters}")
        ell.append(len(shape) - n_letters if "..." in tk else 0)

    used = {c for tk in toks for c in tk if c != "..."}
    n_ell = max(ell, default=0)
    fresh = [c for c in _LETTERS if c not in used]
    if n_ell > len(fresh):
        raise _err(equation, f"the ellipsis covers {n_ell} dims, more than the letters left")
    ell_letters = "".join(fresh[:n_ell])

    subs = ["".join(ell_letters[n_ell - e:] if c == "..." else c for c in tk)
            for tk, e in zip(toks, ell)]
    if arrow:
        out_tok = _tokens(rhs, equation, "the output")
        for c in out_tok:
            if c != "..." and out_tok.count(c) > 1:
                raise _err(equation, f"output subscript {c} appears more than once")
            if c != "..." and c not in used:
                raise _err(equation, f"output subscript {c} does not appear in any operand")
        out = "".join(ell_letters if c == "..." else c for c in out_tok)
    else:
        counts = "".join(c for tk in toks for c in tk if c != "...")
        out = ell_letters + "".join(sorted(c for c in used if counts.count(c) == 1))

    sizes, first = {}, {}
    for k, (s, shape) in enumerate(zip(subs, shapes)):
        mine = {}
        for c, n in zip(s, shape):
            name = f"subscript {c}" if c not in ell_letters else "a dim covered by '...'"
            if c in mine and mine[c] != n:
                raise _err(equation, f"{name} is repeated for operand {k} but the sizes don't "
                                     f"match, {mine[c]} != {n}")
            mine[c] = n
            if c not in sizes or sizes[c] == 1:
                if c not in sizes or n != 1:
                    sizes[c], first[c] = n, k
            elif n != 1 and n != sizes[c]:
                raise _err(equation, f"{name} has size {n} in operand {k} (shape "
                                     f"{shape_str(shape)}), which does not broadcast with size "
                                     f"{sizes[c]} in operand {first[c]} (shape "
                                     f"{shape_str(shapes[first[c]])})")
    return subs, out, sizes


class Einsum(Function):
    """y = einsum(subs -> out) over operands whose letters already agree in size.

    Gradient for operand k: einsum(out, other operands' subs -> subs[k]), with an identity per
    repeated letter of operand k and an expand for letters found only in operand k."""
    _builtin = True

    @staticmethod
    def forward(ctx, spec, *ops):
        subs, out = spec
        arrays = [t._data for t in ops]
        if len(arrays) == 1 and arrays[0].dtype.kind in "biu" and set(subs[0]) - set(out):
            arrays[0] = arrays[0].astype(np.int64)   # a sum of integers is int64, as sum()
        eq = ",".join(subs) + "->" + out
        t = arrays[0].dtype                 # bfloat16: computed in float32, rounded once
        res = np.asarray(np.einsum(eq, *[_dt.compute_array(x) for x in arrays],
                                   optimize=len(arrays) >= 3))
        if len(arrays) == 1 and np.may_share_memory(res, arrays[0]):
            res = res.copy()   # np.einsum may return a view (transpose, diagonal): never share
        res = _dt.result_array(res, t)
        if ctx.needs_input_grad:
            ctx.spec = spec
            ctx.save_for_backward(*ops)
        return res

    @staticmethod
    def backward(ctx, grad):
        subs, out = ctx.spec
        ops = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (None,) + tuple(_operand_grad(grad, subs, out, ops, k) if need[k + 1] else None
                               for k in range(len(ops)))


def _operand_grad(grad, subs, out, ops, k):
    """d(loss)/d(operand k) as an einsum of `grad` with the other operands."""
    used = set(out).union(*subs)
    fresh = iter(c for c in _LETTERS if c not in used)
    terms = [out] + [s for j, s in enumerate(subs) if j != k]
    tensors = [grad] + [t for j, t in enumerate(ops) if j != k]
    shape = ops[k]._data.shape
    dtype = grad._data.dtype
    target, seen = [], set()
    for c, n in zip(subs[k], shape):
        if c in seen:          # a diagonal: rename the repeat, tie it to c with an identity
            f = next(fresh, None)
            if f is None:
                raise RuntimeError(f"einsum backward: no letters left for the diagonal of "
                                   f"'{subs[k]}'")
            target.append(f)
            terms.append(c + f)
            tensors.append(Tensor._make(np.eye(n, dtype=dtype)))
        else:
            seen.add(c)
            target.append(c)
    have = set("".join(terms))
    kept = "".join(c for c in target if c in have)
    g = _einsum(terms, kept, tensors)
    if len(kept) < len(target):   # letters only in operand k were summed out: broadcast back
        g = g.reshape(tuple(n if c in have else 1 for c, n in zip(target, shape)))
        g = g.expand(shape)
    return g


def _einsum(subs, out, tensors):
    """Run the plain form (no checks): each letter has one size across `tensors`."""
    if len(tensors) == 1 and subs[0] == out:
        return tensors[0]
    return Einsum.apply((tuple(subs), out), *tensors)


@autocast_op("einsum")
def einsum(equation, *operands):
    """Sum of products described by `equation`, e.g. ``einsum("bij,bjk->bik", a, b)``.

    As ``torch.einsum``: implicit output (``"ij,jk"`` gives ``"ik"``: letters used once, in
    alphabetical order, uppercase first), ``...`` for broadcast dims, repeated letters in one
    operand (``"ii->i"`` is the diagonal, ``"ii"`` the trace), spaces, operands as a list, and
    size-1 dims broadcasting against other operands. All operands need the same dtype.
    Differs from PyTorch: the result never shares memory with an operand (torch returns a view
    for a pure transpose or diagonal)."""
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): the equation must be a str, got {type(equation).__name__}")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise _err(equation, "at least one operand is needed")
    for k, t in enumerate(operands):
        if not isinstance(t, Tensor):
            raise TypeError(f"einsum('{equation}'): operand {k} must be a Tensor, got "
                            f"{type(t).__name__}")
    dt = operands[0]._data.dtype
    for k, t in enumerate(operands):
        if t._data.dtype != dt:
            raise _err(equation, f"all operands must have the same dtype, but operand 0 is "
                                 f"{dt.name} and operand {k} is {t._data.dtype.name}; cast "
                                 f"with .to()")
    subs, out, sizes = _parse(equation, [t._data.shape for t in operands])
    if dt == np.bool_ and len(operands) > 1 and set("".join(subs)) - set(out):
        raise NotImplementedError(f"einsum('{equation}'): sums of products of bool tensors are "
                                  f"not supported; cast with .int() or .float() first")
    ops = []
    for t, s in zip(operands, subs):
        full = tuple(sizes[c] for c in s)
        ops.append(t if full == t._data.shape else t.expand(full))
    return Einsum.apply((tuple(subs), out), *ops)
