"""Random numbers: a `Generator` object and the process-wide default one.

Every random op (rand, randn, dropout masks, shuffling) draws from a Generator, by default the
global one that `manual_seed` reseeds. A Generator wraps numpy's PCG64 bit generator; its state
can be saved and restored (as a uint8 Tensor holding JSON, so checkpoints need no pickle).
"""
import json

import numpy as np

__all__ = ["Generator", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state",
           "default_generator"]


class Generator:
    """A source of random numbers (``minitorch_edge.Generator().manual_seed(0)``)."""

    def __init__(self, device="cpu"):
        from .tensor import device as _device
        device = _device(device)
        if device.type != "cpu":
            raise RuntimeError(f"Cannot get a {device.type} generator: minitorch_edge runs on "
                               f"the CPU only (use Generator() or Generator('cpu'))")
        self._seed = int(np.random.SeedSequence().entropy % (2 ** 63))
        self._np = np.random.Generator(np.random.PCG64(self._seed))
        self.device = device

    def manual_seed(self, seed):
        seed = int(seed)
        if seed < 0:
            seed += 2 ** 64
        self._seed = seed
        self._np = np.random.Generator(np.random.PCG64(seed))
        return self

    def seed(self):
        self.manual_seed(int(np.random.SeedSequence().entropy % (2 ** 63)))
        return self._seed

    def initial_seed(self):
        return self._seed

    def get_state(self):
        from .tensor import Tensor
        text = json.dumps({"seed": self._seed, "state": self._np.bit_generator.state})
        return Tensor._make(np.frombuffer(text.encode(), dtype=np.uint8).copy())

    def set_state(self, state):
        raw = state._data if hasattr(state, "_data") else np.asarray(state)
        try:
            blob = json.loads(bytes(np.asarray(raw, dtype=np.uint8)).decode())
            self._np.bit_generator.state = blob["state"]
            self._seed = blob["seed"]
        except (ValueError, KeyError, TypeError) as e:
            raise RuntimeError(f"Generator.set_state: not a state from get_state() ({e})") from None
        return self

    @property
    def numpy(self):
        """The numpy Generator that draws the numbers."""
        return self._np


default_generator = Generator()


def manual_seed(seed):
    """Reseed the default generator (and numpy's legacy global RNG, which some code uses)."""
    np.random.seed(int(seed) % (2 ** 32))
    return default_generator.manual_seed(seed)


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(state):
    default_generator.set_state(state)


def np_rng(generator=None):
    """The numpy Generator to draw from: the given Generator's, else the default one's."""
    return (generator or default_generator)._np
