"""Gradient compressors with error feedback: what is not sent this step is sent later.

A compressor turns a flat float gradient into a small byte payload and back:

* `Quantizer(bits=8|4)`: rounds to 2**(bits-1) - 1 levels each side of zero, with one scale per
  payload (the largest magnitude) — the seed article's gradient quantization;
* `SignCompressor`: one bit per value (its sign) and a scale for each sign (the mean of the
  values of that sign) — 1-bit SGD;
* `TopK(ratio)`: the k largest magnitudes, as (int32 index, float32 value) pairs.

Error feedback (`Compressor.compress`): the residual of a key (a DDP bucket, a parameter
server's worker) is added to the next gradient of that key before compressing, and what the
payload does not carry becomes the new residual, so ``sent + residual == gradient + old residual``
exactly (to rounding): nothing is lost, only delayed. That is what makes 1-bit SGD converge.

`bytes_sent` counts the payload bytes this process produced. The DDP hooks
(algorithms/ddp_comm_hooks.py) all-gather the payloads; the parameter server sends them to rank 0.
"""
import numpy as np

__all__ = ["Compressor", "Quantizer", "SignCompressor", "TopK", "make_compressor"]


class Compressor:
    """Base: subclasses define ``encode(values) -> uint8 array`` and
    ``decode(payload, n, dtype) -> values``; this class adds error feedback and byte counts."""

    name = "none"

    def __init__(self, error_feedback=True):
        self.error_feedback = bool(error_feedback)
        self.residuals = {}       # key -> what earlier payloads of this key did not carry
        self.last_sent = {}       # key -> the values this process's last payload decodes to
        self.bytes_sent = 0

    def compress(self, key, values):
        """values (+ the key's residual) -> (payload, the values the payload decodes to)."""
        values = np.asarray(values).ravel()
        residual = self.residuals.get(key)
        wanted = values + residual if residual is not None else values.copy()
        payload = self.encode(wanted)
        sent = self.decode(payload, wanted.size, wanted.dtype)
        if self.error_feedback:
            self.residuals[key] = wanted - sent
        self.last_sent[key] = sent
        self.bytes_sent += payload.nbytes
        return payload, sent

    def payload_size(self, n):
        """The bytes of a payload for n values (every payload of n values has this size)."""
        return self.encode(np.zeros(n, np.float32)).nbytes

    def encode(self, values):
        raise NotImplementedError

    def decode(self, payload, n, dtype):
        raise NotImplementedError


def _scale_bytes(scale):
    return np.array([scale], np.float32).view(np.uint8)


def _scale_of(payload):
    return float(payload[:4].view(np.float32)[0])


class Quantizer(Compressor):
    """Uniform quantization to `bits` (8 or 4) with one float32 scale per payload."""

    def __init__(self, bits=8, error_feedback=True):
        if bits not in (4, 8):
            raise ValueError(f"Quantizer: bits must be 4 or 8, got {bits!r}")
        super().__init__(error_feedback)
        self.bits = bits
        self.levels = 2 ** (bits - 1) - 1         # 127 or 7 steps each side of zero
        self.name = f"int{bits}"

    def encode(self, values):
        peak = float(np.abs(values).max()) if values.size else 0.0
        scale = np.float32(peak / self.levels if peak > 0 else 1.0)
        q = np.clip(np.rint(values / scale), -self.levels, self.levels).astype(np.int8)
        if self.bits == 8:
            body = q.view(np.uint8)
        else:                                     # two values per byte: q + 8 in 1..15
            u = (q + 8).astype(np.uint8)
            if u.size % 2:
                u = np.append(u, np.uint8(8))
            body = (u[0::2] << 4) | u[1::2]
        return np.concatenate([_scale_bytes(scale), body])

    def decode(self, payload, n, dtype):
        scale, body = _scale_of(payload), payload[4:]
        if self.bits == 8:
            q = body.view(np.int8)[:n]
        else:
            q = np.empty(body.size * 2, np.int16)
            q[0::2], q[1::2] = body >> 4, body & 15
            q = q[:n] - 8
        return q.astype(dtype) * dtype.type(scale)


class SignCompressor(Compressor):
    """1-bit SGD (Seide et al. 2014): one bit per value (is it >= 0) and two float32 scales per
    payload, the mean of the values >= 0 and the mean of those < 0, which each bit decodes to."""

    name = "sign"

    def encode(self, values):
        up = values >= 0
        hi = values[up].mean() if up.any() else 0.0
        lo = values[~up].mean() if (~up).any() else 0.0
        return np.concatenate([np.array([hi, lo], np.float32).view(np.uint8), np.packbits(up)])

    def decode(self, payload, n, dtype):
        hi, lo = payload[:8].view(np.float32)
        up = np.unpackbits(payload[8:])[:n].astype(bool)
        return np.where(up, dtype.type(hi), dtype.type(lo))


class TopK(Compressor):
    """The ``ceil(ratio * n)`` largest magnitudes as (int32 index, float32 value) pairs."""

    def __init__(self, ratio=0.01, error_feedback=True):
        if not 0 < ratio <= 1:
            raise ValueError(f"TopK: ratio must be in (0, 1], got {ratio!r}")
        super().__init__(error_feedback)
        self.ratio = ratio
        self.name = f"top{ratio:g}"

    def k(self, n):
        return max(1, int(np.ceil(self.ratio * n))) if n else 0

    def encode(self, values):
        k = self.k(values.size)
        idx = np.argpartition(np.abs(values), values.size - k)[values.size - k:].astype(np.int32)
        idx.sort()
        return np.concatenate([idx.view(np.uint8), values[idx].astype(np.float32).view(np.uint8)])

    def decode(self, payload, n, dtype):
        k = self.k(n)
        idx = payload[:4 * k].view(np.int32)
        out = np.zeros(n, dtype)
        out[idx] = payload[4 * k:8 * k].view(np.float32)
        return out


def make_compressor(name, error_feedback=True):
    """'int8', 'int4', 'sign' (1-bit), 'topk' (1 %) or 'topk0.1' (a ratio) -> a Compressor."""
    if isinstance(name, Compressor):
        return name
    if name == "int8":
        return Quantizer(8, error_feedback)
    if name == "int4":
        return Quantizer(4, error_feedback)
    if name in ("sign", "1bit"):
        return SignCompressor(error_feedback)
    if isinstance(name, str) and name.startswith("topk"):
        return TopK(float(name[4:]) if name[4:] else 0.01, error_feedback)
    raise ValueError(f"make_compressor: unknown compressor {name!r}; use 'int8', 'int4', 'sign', "
                     f"'topk' or 'topk<ratio>' like 'topk0.05'")
