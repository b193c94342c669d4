# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # 07 · Attention, step by step
#
# Attention lets every position of a sequence look at every other: each query is compared with
# every key, the scores become weights with a softmax, and the output is the weighted sum of the
# values. Multi-head attention does this several times in parallel on smaller projections.
#
# Read alongside: `minitorch_edge/nn/functional/attention.py`, `nn/layers/attention.py`,
# `nn/layers/transformer.py`.

# %%
import os

import numpy as np

import minitorch_edge as mte
from minitorch_edge import nn, optim
from minitorch_edge.nn import functional as F

FAST = os.environ.get("MTE_TUTORIAL_FAST") == "1"
mte.manual_seed(0)

# %% [markdown]
# ## 1. One head by hand
# Q, K, V: (length, d). scores = Q Kᵀ / √d; weights = softmax over keys; out = weights V.

# %%
L, d = 4, 8
q, k, v = mte.randn(L, d), mte.randn(L, d), mte.randn(L, d)
scores = q @ k.T / d ** 0.5
weights = scores.softmax(dim=-1)
out = weights @ v
print("weights (each row sums to 1):\n", weights)
same = F.scaled_dot_product_attention(q[None], k[None], v[None])[0]
print("matches F.scaled_dot_product_attention:", np.allclose(out.numpy(), same.numpy(),
                                                             atol=1e-6))

# %% [markdown]
# ## 2. A causal mask
# In a language model position i may only look at positions ≤ i: masked scores become −∞
# before the softmax, so their weights are exactly 0.

# %%
causal = mte.ones(L, L, dtype=mte.bool).tril()
masked = scores.masked_fill(~causal, float("-inf")).softmax(dim=-1)
print(masked)
print("is_causal gives the same:",
      np.allclose((masked @ v).numpy(),
                  F.scaled_dot_product_attention(q[None], k[None], v[None],
                                                 is_causal=True)[0].numpy(), atol=1e-6))

# %% [markdown]
# ## 3. Multi-head attention
# Project to (heads × head_dim), attend per head, concatenate, project back. `nn.MultiheadAttention`
# keeps PyTorch's parameter names (in_proj_weight, out_proj.weight, ...).

# %%
mha = nn.MultiheadAttention(embed_dim=16, num_heads=4, batch_first=True)
x = mte.randn(2, 5, 16)
y, attn = mha(x, x, x)
print(y.shape, attn.shape, [name for name, _ in mha.named_parameters()])

# %% [markdown]
# ## 4. A Transformer encoder learns to sort
# Embedding + learned positions + 2 encoder layers + a linear head read the output token for
# each position. Sorting needs every position to see the whole sequence: attention does that.

# %%
vocab, length, d_model = 10, 6, 32


class Sorter(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(mte.randn(length, d_model) * 0.1)
        layer = nn.TransformerEncoderLayer(d_model, nhead=2, dim_feedforward=64, dropout=0.0,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens) + self.pos))


model = Sorter()
opt = optim.Adam(model.parameters(), lr=3e-3)
loss_fn = nn.CrossEntropyLoss()
steps = 40 if FAST else 400
for step in range(steps):
    seq = mte.randint(0, vocab, (64, length))
    target = seq.sort(dim=-1).values
    logits = model(seq)
    loss = loss_fn(logits.reshape(-1, vocab), target.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % (steps // 4) == 0 or step == steps - 1:
        acc = (logits.argmax(-1) == target).float().mean().item()
        print(f"step {step:4d}  loss {loss.item():.3f}  token accuracy {acc:.2%}")

test = mte.randint(0, vocab, (1, length))
print("input ", test.tolist()[0])
print("output", model(test).argmax(-1).tolist()[0])
