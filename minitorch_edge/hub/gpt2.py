"""GPT-2 (Radford et al. 2019) built from a Hugging Face config: GPT2Model and GPT2LMHeadModel
with ``generate``, `transformers`' module names, and a key/value cache.

    input_ids (N, L) -> wte + wpe (positions after the cached ones) -> drop
      -> h[i]: x + attn(ln_1(x)) (causal), then x + mlp(ln_2(x)) (c_fc -> gelu_new -> c_proj)
      -> ln_f

GPT-2's projections are `transformers`' Conv1D, whose weight is (in, out); ours are Linear
(out, in), so those four keys are transposed on load and save (``_hf_transposed``). The LM head
is tied to wte (``lm_head.weight`` is not in the files).

The cache: ``past_key_values`` is a tuple, one (key, value) pair per layer, each (N, H, S, D)
for the S positions already seen; with ``use_cache=True`` forward returns the extended pairs
too, so each generated token costs one position's work instead of the whole prefix.
"""
from collections import namedtuple

import numpy as np

from .. import creation, nn
from ..autograd.grad_mode import no_grad
from ..ops.join import cat
from ._layers import HubModel, activation, attend, check_heads, merge_heads, split_heads

__all__ = ["GPT2Model", "GPT2LMHeadModel", "DecoderOutput"]

DecoderOutput = namedtuple("DecoderOutput", ["last_hidden_state", "past_key_values"])

GPT2_DEFAULTS = {
    "model_type": "gpt2", "vocab_size": 50257, "n_positions": 1024, "n_embd": 768,
    "n_layer": 12, "n_head": 12, "n_inner": None, "activation_function": "gelu_new",
    "resid_pdrop": 0.1, "embd_pdrop": 0.1, "attn_pdrop": 0.1, "layer_norm_epsilon": 1e-5,
    "initializer_range": 0.02, "scale_attn_weights": True, "use_cache": True,
    "bos_token_id": 50256, "eos_token_id": 50256, "scale_attn_by_inverse_layer_idx": False,
    "reorder_and_upcast_attn": False, "add_cross_attention": False, "tie_word_embeddings": True,
}


class GPT2Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        width = config.n_embd
        self.head_dim = check_heads(width, config.n_head, "GPT-2")
        self.num_heads = config.n_head
        self.c_attn = nn.Linear(width, 3 * width)
        self.c_proj = nn.Linear(width, width)
        self.attn_p = config.attn_pdrop
        self.resid_dropout = nn.Dropout(config.resid_pdrop)
        self.scale = None if config.scale_attn_weights else 1.0

    def forward(self, x, keep, past):
        q, k, v = (split_heads(t, self.num_heads) for t in self.c_attn(x).split(x.shape[-1], -1))
        if past is not None:
            k, v = cat([past[0], k], 2), cat([past[1], v], 2)
        out = attend(q, k, v, keep, self.attn_p, self.training, self.scale)
        return self.resid_dropout(self.c_proj(merge_heads(out))), (k, v)


class GPT2MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        inner = config.n_inner or 4 * config.n_embd
        self.c_fc = nn.Linear(config.n_embd, inner)
        self.c_proj = nn.Linear(inner, config.n_embd)
        self.act = activation(config.activation_function, "GPT-2")
        self.dropout = nn.Dropout(config.resid_pdrop)

    def forward(self, x):
        return self.dropout(self.c_proj(self.act(self.c_fc(x))))


class GPT2Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.attn = GPT2Attention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.mlp = GPT2MLP(config)

    def forward(self, x, keep, past):
        a, present = self.attn(self.ln_1(x), keep, past)
        x = x + a
        return x + self.mlp(self.ln_2(x)), present


def _causal_keep(length, past_length, attention_mask):
    """The bool mask (1 or N, 1, L, S): query i (at position past_length + i) sees keys
    0..past_length + i, and none that attention_mask (N, S) marks as padding."""
    total = past_length + length
    keep = np.arange(total)[None, :] <= (past_length + np.arange(length))[:, None]
    keep = creation.tensor(keep[None, None])
    if attention_mask is not None:
        if tuple(attention_mask.shape)[-1] != total:
            raise ValueError(f"GPT2Model: attention_mask must cover the {total} positions "
                             f"(cached + new), got shape {tuple(attention_mask.shape)}")
        keep = keep.logical_and((attention_mask != 0).unsqueeze(1).unsqueeze(2))
    return keep


class GPT2Model(HubModel):
    """The GPT-2 decoder. forward(input_ids, past_key_values=None, attention_mask=None,
    use_cache=False, position_ids=None) -> DecoderOutput(last_hidden_state (N, L, E),
    past_key_values or None). attention_mask (N, cached + L): 1 = token, 0 = padding;
    position_ids (N, L) default to the positions after the cached ones."""
    model_type = "gpt2"
    defaults = GPT2_DEFAULTS
    base_model_prefix = "transformer"
    _hf_transposed = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight",
                      "mlp.c_proj.weight")
    _hf_ignored = (".attn.bias", ".attn.masked_bias")   # old files hold the causal mask

    def __init__(self, config):
        super().__init__(config)
        if config.get("add_cross_attention") or config.get("scale_attn_by_inverse_layer_idx"):
            raise NotImplementedError("GPT-2: add_cross_attention and "
                                      "scale_attn_by_inverse_layer_idx are not supported")
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.n_positions, config.n_embd)
        self.drop = nn.Dropout(config.embd_pdrop)
        self.h = nn.ModuleList([GPT2Block(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self._init_weights()

    def forward(self, input_ids, past_key_values=None, attention_mask=None, use_cache=False,
                position_ids=None):
        if input_ids.dim() != 2 or input_ids.dtype.is_floating_point:
            raise ValueError(f"GPT2Model: expected integer input_ids of shape (N, L), got "
                             f"{input_ids.dtype} of shape {tuple(input_ids.shape)}")
        length = input_ids.shape[1]
        past_length = 0 if past_key_values is None else past_key_values[0][0].shape[2]
        if past_length + length > self.config.n_positions:
            raise ValueError(f"GPT2Model: {past_length + length} positions exceed "
                             f"n_positions={self.config.n_positions}")
        if position_ids is None:
            position_ids = creation.arange(past_length, past_length + length).unsqueeze(0)
        x = self.drop(self.wte(input_ids) + self.wpe(position_ids))
        keep = _causal_keep(length, past_length, attention_mask)
        presents = []
        for i, block in enumerate(self.h):
            x, present = block(x, keep, None if past_key_values is None else past_key_values[i])
            presents.append(present)
        return DecoderOutput(self.ln_f(x), tuple(presents) if use_cache else None)


class GPT2LMHeadModel(HubModel):
    """GPT-2 with the LM head tied to wte. forward(input_ids, past_key_values=None,
    attention_mask=None, use_cache=False, position_ids=None) -> logits (N, L, vocab_size), or
    (logits, past_key_values) with use_cache=True. ``generate`` continues prompts."""
    model_type = "gpt2"
    defaults = GPT2_DEFAULTS
    base_model_prefix = "transformer"
    _hf_transposed = GPT2Model._hf_transposed
    _hf_ignored = GPT2Model._hf_ignored

    def __init__(self, config):
        super().__init__(config)
        self.transformer = GPT2Model(config)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        if config.get("tie_word_embeddings", True):
            self.lm_head.weight = self.transformer.wte.weight
            self._hf_tied = ("lm_head.weight",)
        else:
            nn.init.normal_(self.lm_head.weight, 0.0, config.initializer_range)

    def forward(self, input_ids, past_key_values=None, attention_mask=None, use_cache=False,
                position_ids=None):
        out = self.transformer(input_ids, past_key_values, attention_mask, use_cache,
                               position_ids)
        logits = self.lm_head(out.last_hidden_state)
        return (logits, out.past_key_values) if use_cache else logits

    def generate(self, input_ids, max_new_tokens=20, do_sample=False, temperature=1.0,
                 top_k=None, eos_token_id=None, use_cache=True, generator=None,
                 attention_mask=None):
        """Continue each prompt of `input_ids` (N, L) by up to `max_new_tokens` tokens ->
        (N, L + new). Greedy (the most likely token) unless `do_sample`: then a draw from
        softmax(logits / temperature), restricted to the `top_k` most likely when given
        (`generator`: a minitorch_edge.Generator for reproducible draws). A sequence that emits
        `eos_token_id` is padded with it afterwards; generation stops once all have. With
        `use_cache` each step feeds only the new token and the cached keys/values.
        `attention_mask` (N, L), 0 = padding, lets prompts of different lengths share a batch
        when padded on the left (positions count the real tokens only, as in transformers)."""
        if max_new_tokens < 0:
            raise ValueError(f"generate: max_new_tokens must be >= 0, got {max_new_tokens}")
        if do_sample and not temperature > 0:
            raise ValueError(f"generate: temperature must be > 0 when sampling, got "
                             f"{temperature}")
        if top_k is not None and not (isinstance(top_k, int) and top_k >= 1):
            raise ValueError(f"generate: top_k must be a positive int or None, got {top_k!r}")
        was_training = self.training
        self.eval()
        try:
            with no_grad():
                return self._generate(input_ids, max_new_tokens, do_sample, temperature, top_k,
                                      eos_token_id, use_cache, generator, attention_mask)
        finally:
            self.train(was_training)

    def _generate(self, ids, max_new_tokens, do_sample, temperature, top_k, eos, use_cache,
                  generator, mask):
        from .. import multinomial
        tokens = ids
        done = creation.zeros(ids.shape[0], dtype=ids.dtype) != 0
        past, step_input, positions = None, ids, None
        if mask is not None:
            mask = mask if hasattr(mask, "_data") else creation.tensor(mask)
            if tuple(mask.shape) != tuple(ids.shape):
                raise ValueError(f"generate: attention_mask must have the shape of input_ids "
                                 f"{tuple(ids.shape)}, got {tuple(mask.shape)}")
            mask = (mask != 0).to(ids.dtype)
        for _ in range(max_new_tokens):
            if mask is not None:                 # real tokens count positions; pads sit at 1
                positions = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1)
            if use_cache:
                logits, past = self(step_input, past_key_values=past, attention_mask=mask,
                                    use_cache=True, position_ids=None if positions is None
                                    else positions[:, -step_input.shape[1]:])
            else:
                logits = self(tokens, attention_mask=mask, position_ids=positions)
            logits = logits[:, -1]
            if do_sample:
                logits = logits / temperature
                if top_k is not None and top_k < logits.shape[-1]:
                    kth = logits.topk(top_k, -1).values[:, -1:]
                    logits = logits.masked_fill(logits < kth, float("-inf"))
                nxt = multinomial(logits.softmax(-1), 1, generator=generator)[:, 0]
            else:
                nxt = logits.argmax(-1)
            nxt = nxt.to(ids.dtype)
            if eos is not None:
                nxt = nxt.masked_fill(done, eos)
                done = done.logical_or(nxt == eos)
            tokens = cat([tokens, nxt.unsqueeze(1)], 1)
            step_input = nxt.unsqueeze(1)
            if mask is not None:
                mask = cat([mask, creation.ones(mask.shape[0], 1, dtype=mask.dtype)], 1)
            if eos is not None and bool(done.all()):
                break
        return tokens
