"""What the three architectures share: multi-head self-attention over separate (or packed)
projections, the activation names of Hugging Face configs, and the base class that holds the
config and the weight-name rules the loader reads.

Our modules carry Hugging Face's attribute names (``encoder.layer.0.attention.self.query``,
``h.0.attn.c_attn``), so a state_dict key *is* the checkpoint key. The few differences are
declared on each class and applied by hub/_weights.py:

* ``_hf_transposed``: key suffixes stored transposed (GPT-2's Conv1D holds (in, out); our
  Linear holds (out, in));
* ``_hf_tied``: keys whose Parameter is another one's (an LM head tied to the token
  embedding): not written, not required, accepted when present;
* ``_hf_ignored``: checkpoint keys that carry nothing we need (old buffers such as GPT-2's
  ``attn.bias`` causal mask), skipped when present;
* ``base_model_prefix``: the name of the backbone inside a head model (``bert``,
  ``transformer``, ``vit``), so a backbone checkpoint loads into a head model and back.
"""
import contextlib
import contextvars

from .. import creation, nn
from ..nn import functional as F

__all__ = ["ACTIVATIONS", "activation", "HubModel", "split_heads", "merge_heads", "attend",
           "padding_keep", "check_heads", "weights_to_come"]

ACTIVATIONS = {
    "gelu": lambda: nn.GELU(),
    "gelu_new": lambda: nn.GELU(approximate="tanh"),
    "gelu_pytorch_tanh": lambda: nn.GELU(approximate="tanh"),
    "gelu_fast": lambda: nn.GELU(approximate="tanh"),
    "relu": lambda: nn.ReLU(),
    "tanh": lambda: nn.Tanh(),
    "silu": lambda: nn.SiLU(),
    "swish": lambda: nn.SiLU(),
}


def activation(name, where):
    """The activation module a config names (``hidden_act``, ``activation_function``)."""
    try:
        return ACTIVATIONS[name]()
    except (KeyError, TypeError):
        raise ValueError(f"{where}: activation {name!r} is not supported; supported: "
                         f"{sorted(ACTIVATIONS)}") from None


def split_heads(x, num_heads):
    """(N, L, E) -> (N, H, L, E / H)."""
    n, length, width = x.shape
    return x.view(n, length, num_heads, width // num_heads).transpose(1, 2)


def merge_heads(x):
    """(N, H, L, D) -> (N, L, H * D)."""
    n, heads, length, d = x.shape
    return x.transpose(1, 2).reshape(n, length, heads * d)


def attend(q, k, v, keep, dropout, training, scale=None):
    """softmax(q k^T * scale + mask) v per head; `keep` a bool mask broadcast to (N, H, L, S),
    True = the pair takes part (None: all do)."""
    return F.scaled_dot_product_attention(q, k, v, attn_mask=keep,
                                          dropout_p=dropout if training else 0.0, scale=scale)


def padding_keep(attention_mask):
    """Hugging Face's attention_mask (N, S), 1 = a real token, 0 = padding, as the bool mask
    (N, 1, 1, S) `attend` takes; None stays None."""
    if attention_mask is None:
        return None
    mask = attention_mask if hasattr(attention_mask, "_data") else creation.tensor(attention_mask)
    return (mask != 0).unsqueeze(1).unsqueeze(2)


_LOADING = contextvars.ContextVar("minitorch_edge.hub.loading", default=False)


@contextlib.contextmanager
def weights_to_come():
    """Models built inside skip Hugging Face's initialisation (_init_weights): from_pretrained
    overwrites every weight right after (the layers' own default init still runs)."""
    token = _LOADING.set(True)
    try:
        yield
    finally:
        _LOADING.reset(token)


class HubModel(nn.Module):
    """A model built from a Hugging Face config: ``config`` (hub._config.Config), the weight
    name rules above, and ``save_pretrained`` / ``from_pretrained`` as methods too."""
    model_type = None
    base_model_prefix = None
    defaults = {}
    _hf_transposed = ()
    _hf_tied = ()
    _hf_ignored = ()

    def __init__(self, config):
        super().__init__()
        self.config = config

    def _init_weights(self):
        """Hugging Face's initialisation: N(0, initializer_range) for Linear, Embedding and
        Conv2d weights (biases zero), LayerNorm 1 / 0 (what a fresh `transformers` model holds;
        from_pretrained overwrites it, and skips this)."""
        if _LOADING.get():
            return
        std = self.config.get("initializer_range", 0.02)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding, nn.Conv2d)):
                nn.init.normal_(m.weight, 0.0, std)
                if getattr(m, "bias", None) is not None:
                    nn.init.zeros_(m.bias)
                if isinstance(m, nn.Embedding) and m.padding_idx is not None:
                    _zero_row(m.weight, m.padding_idx)
            elif isinstance(m, nn.LayerNorm) and m.weight is not None:
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def _init_keys(self, keys):
        """Hugging Face's initialisation for the parameters `keys` alone (those a checkpoint
        did not provide, after loading skipped _init_weights)."""
        std = self.config.get("initializer_range", 0.02)
        for key in keys:
            owner, _, name = key.rpartition(".")
            module = self.get_submodule(owner) if owner else self
            param = getattr(module, name)
            if name == "bias":
                nn.init.zeros_(param)
            elif isinstance(module, nn.LayerNorm):
                nn.init.ones_(param)
            elif isinstance(module, (nn.Linear, nn.Embedding, nn.Conv2d)):
                nn.init.normal_(param, 0.0, std)
            else:
                nn.init.trunc_normal_(param, std=std)

    def save_pretrained(self, path, max_shard_size=None):
        from . import save_pretrained
        return save_pretrained(self, path, max_shard_size=max_shard_size)

    @classmethod
    def from_pretrained(cls, path, **kwargs):
        from . import from_pretrained
        return from_pretrained(path, architecture=cls.__name__, **kwargs)


def _zero_row(weight, row):
    """An Embedding's padding row back to zeros after a random init."""
    weight._data[row] = 0


def check_heads(width, heads, where):
    if heads <= 0 or width % heads:
        raise ValueError(f"{where}: hidden size {width} is not a multiple of the number of "
                         f"attention heads {heads}")
    return width // heads
