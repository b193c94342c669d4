# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # 10 · A character-level LSTM language model
#
# A language model reads text one symbol at a time and predicts the next one. Here the symbols
# are characters and the model is Embedding → LSTM → Linear: the LSTM carries a hidden state
# h and a cell state c from character to character, so its prediction after "the keep" can
# depend on everything it has read so far. We train it on a few KB of short tales that ship
# with the package, watch the loss fall, and then let it write by sampling one character at a
# time.
#
# Read alongside: `minitorch_edge/nn/layers/rnn.py` (RNN, LSTM, GRU and the cells; the gate
# math is in the docstrings) and `nn/utils/rnn.py` (padding and packing variable-length
# sequences).

# %%
import math
import os
from importlib import resources

import numpy as np

import minitorch_edge as mte
from minitorch_edge import nn, optim
from minitorch_edge.nn import functional as F
from minitorch_edge.nn.utils.rnn import pack_sequence, pad_packed_sequence

FAST = os.environ.get("MTE_TUTORIAL_FAST") == "1"
mte.manual_seed(0)

# %% [markdown]
# ## 1. The text and its vocabulary
# The file's first line is a header (where the text comes from); the rest is the corpus. The
# vocabulary is every distinct character; each gets an integer id.

# %%
raw = (resources.files("minitorch_edge.data.datasets") / "tiny_tales.txt").read_text("utf-8")
text = "".join(line + "\n" for line in raw.splitlines() if not line.startswith("#"))
chars = sorted(set(text))
stoi = {ch: i for i, ch in enumerate(chars)}
itos = {i: ch for ch, i in stoi.items()}
data = np.array([stoi[ch] for ch in text], dtype=np.int64)
V = len(chars)
print(f"{len(text)} characters, vocabulary of {V}: {''.join(chars)!r}")
print("a uniform guess has loss ln(V) =", round(math.log(V), 3))

# %% [markdown]
# ## 2. Batches for truncated backpropagation through time
# The text is cut into `batch` parallel streams (one row each). A training batch is a window
# of `seq_len` characters from every stream, and the target is the same window moved one
# character on. Between consecutive windows we keep the LSTM's state (so it sees context
# across window boundaries) but *detach* it: gradients flow back through `seq_len` steps only.

# %%
batch, seq_len = 16, 48
n = len(data) // batch
streams = data[:n * batch].reshape(batch, n)          # (batch, n): row b is stream b


def get_window(i):
    """Inputs and targets (batch, seq_len) starting at column i of the streams."""
    x = streams[:, i:i + seq_len]
    y = streams[:, i + 1:i + 1 + seq_len]
    return mte.tensor(x), mte.tensor(y)


x, y = get_window(0)
print("window:", tuple(x.shape), "first stream reads", repr("".join(itos[int(i)] for i in
                                                                  x[0, :30].tolist())))

# %% [markdown]
# ## 3. The model
# `nn.LSTM(..., batch_first=True)` takes (batch, time, features) and returns the top layer's
# h at every step, (batch, time, hidden), plus the final (h_n, c_n) of every layer. Its
# parameters have PyTorch's names (`weight_ih_l0`, `weight_hh_l0`, `bias_ih_l0`, ...), so a
# state_dict saved from torch loads here and the other way round.

# %%
class CharLM(nn.Module):
    def __init__(self, vocab, embed=32, hidden=128, layers=2, dropout=0.1):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, num_layers=layers, dropout=dropout,
                            batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, x, state=None):
        out, state = self.lstm(self.embed(x), state)
        return self.head(out), state


model = CharLM(V)
print(model)
print(sum(p.numel() for p in model.parameters()), "parameters;",
      [name for name, _ in model.lstm.named_parameters()][:4], "...")

# %% [markdown]
# ## 4. Training
# Adam, cross-entropy on every position, and gradient-norm clipping (an RNN's gradient can
# grow quickly through many steps; clipping keeps one bad batch from wrecking the weights).
# 300 steps take a minute or two on a laptop CPU. The corpus is tiny (about 6.6 KB, 8
# windows per pass), so after a few dozen passes the model starts to memorise it: a low loss
# here means "has learned this text", not "writes English".

# %%
steps = 6 if FAST else 300
optimizer = optim.Adam(model.parameters(), lr=4e-3)
state, i, losses = None, 0, []
model.train()
for step in range(steps):
    if i + seq_len + 1 > n:                     # back to the start of the streams
        state, i = None, 0
    x, y = get_window(i)
    i += seq_len
    logits, state = model(x, state)
    state = tuple(s.detach() for s in state)    # truncate the backward at the window edge
    loss = F.cross_entropy(logits.reshape(-1, V), y.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    losses.append(loss.item())
    if step % max(1, steps // 8) == 0 or step == steps - 1:
        print(f"step {step:4d}  loss {loss.item():.3f}")
k = max(1, min(20, steps // 4))
print(f"mean loss of the first {k} steps {np.mean(losses[:k]):.3f}, of the last {k} "
      f"{np.mean(losses[-k:]):.3f}")

# %% [markdown]
# ## 5. Writing: sample one character at a time
# Start from a prompt, run it through the model, then repeatedly turn the last logits into
# probabilities (softmax, with a temperature: lower = more cautious), draw the next character,
# and feed it back in with the carried state. Only one character goes through the LSTM per
# step, since the state holds the rest.

# %%
rng = np.random.default_rng(0)


def sample_next(logits, temperature):
    probs = F.softmax(logits / temperature, dim=-1)
    if hasattr(mte, "multinomial"):
        return int(mte.multinomial(probs, 1).item())
    p = probs.numpy().astype(np.float64)
    return int(rng.choice(len(p), p=p / p.sum()))


def generate(prompt, length, temperature=0.8):
    model.eval()
    with mte.no_grad():
        x = mte.tensor([[stoi[ch] for ch in prompt]])
        logits, state = model(x)
        out = prompt
        for _ in range(length):
            nxt = sample_next(logits[0, -1], temperature)
            out += itos[nxt]
            logits, state = model(mte.tensor([[nxt]]), state)
    return out


print(generate("The keeper ", 60 if FAST else 400))

# %% [markdown]
# ## 6. Sequences of different lengths: packing
# To read whole lines (of different lengths) in one batch, pack them: `pack_sequence` sorts
# them by length and lays them out step by step, and the LSTM then runs step t only on the
# lines that are still going. Each line's final state is the one after its own last
# character, not after padding. `pad_packed_sequence` turns the packed output back into a
# padded (batch, time, hidden) tensor plus the lengths.

# %%
lines = [ln for ln in text.split("\n") if ln][:4]
lines = [ln[:40] for ln in lines]
seqs = [model.embed(mte.tensor([stoi[ch] for ch in ln])) for ln in lines]
with mte.no_grad():
    packed = pack_sequence(seqs, enforce_sorted=False)
    out, (h_n, c_n) = model.lstm(packed)
    padded, lengths = pad_packed_sequence(out, batch_first=True)
print("lengths", lengths.tolist(), "batch_sizes", packed.batch_sizes.tolist())
print("padded output", tuple(padded.shape), "final h of the top layer", tuple(h_n[-1].shape))
last = padded[mte.arange(len(lines)), lengths - 1]        # each line's output at its last char
print("the output at each line's end is its final state:",
      np.allclose(last.numpy(), h_n[-1].numpy(), atol=1e-6))
