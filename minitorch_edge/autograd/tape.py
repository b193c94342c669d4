"""Looking at the tape: `record_tape()` lists the ops autograd records, in order, and
`detect_anomaly()` makes backward report which forward op produced a nan/inf gradient.

    with autograd.record_tape() as tape:
        y = (x * w).sum()
    print(tape)
    #0  MulBackward0   in: (2, 3) float32 [grad], (3,) float32      out: (2, 3) float32
    #1  SumBackward0   in: (2, 3) float32 [grad], (), False, None   out: () float32
"""
from .function import _Recording

__all__ = ["record_tape", "Tape", "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled"]


class Tape:
    """The nodes recorded inside a ``record_tape()`` block, in recording order."""

    def __init__(self):
        self.entries = []   # (node, input descriptions, output descriptions)

    @property
    def nodes(self):
        return [node for node, _, _ in self.entries]

    def __len__(self):
        return len(self.entries)

    def __iter__(self):
        return iter(self.nodes)

    def lines(self):
        width = max((len(n.name()) for n in self.nodes), default=0)
        rows = []
        for node, ins, outs in self.entries:
            rows.append(f"#{node._seq:<4} {node.name():<{width}}  in: {_fmt(ins):<40} "
                        f"out: {_fmt(outs)}")
        return rows

    def __str__(self):
        return "\n".join(self.lines()) if self.entries else "(empty tape)"

    __repr__ = __str__


def _fmt(items):
    parts = []
    for item in items:
        if isinstance(item, tuple) and len(item) == 3 and isinstance(item[0], tuple):
            shape, dtype, needs_grad = item
            parts.append(f"{shape} {dtype}" + (" [grad]" if needs_grad else ""))
        else:
            parts.append(str(item))
    return ", ".join(parts)


class record_tape:
    """Context manager: collect every node recorded inside the block (see module docstring)."""

    def __enter__(self):
        self._prev = _Recording.tape
        self.tape = Tape()
        _Recording.tape = self.tape.entries
        return self.tape

    def __exit__(self, *exc):
        _Recording.tape = self._prev
        return False


class detect_anomaly:
    """Inside this block each recorded node keeps the stack of the forward call that made it, and
    backward raises ``RuntimeError("Function 'XBackward0' returned nan values ...")`` with that
    stack as soon as a node produces a nan or inf gradient."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan

    def __enter__(self):
        self._prev = _Recording.anomaly
        _Recording.anomaly = self.check_nan
        return self

    def __exit__(self, *exc):
        _Recording.anomaly = self._prev
        return False

    def __call__(self, func):
        import functools

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return func(*args, **kwargs)
        return wrapper


class set_detect_anomaly(detect_anomaly):
    """``set_detect_anomaly(True)`` switches at once; as a context manager it restores on exit."""

    def __init__(self, mode, check_nan=True):
        self._prev = _Recording.anomaly
        _Recording.anomaly = bool(mode) and check_nan

    def __enter__(self):
        return self


def is_anomaly_enabled():
    return _Recording.anomaly
