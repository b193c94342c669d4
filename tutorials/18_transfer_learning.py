# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # 18 · Transfer learning: a Hugging Face folder in, a fine-tuned int8 model out
#
# A pretrained model usually arrives as a Hugging Face folder: `config.json` (the architecture
# and its sizes) and `model.safetensors` (the weights, by name). `hub.from_pretrained(folder)`
# reads the architecture from the config (`"architectures": ["BertForMaskedLM"]`, as
# `transformers.AutoModel*` does), builds our modules with `transformers`' names and loads the
# weights; `hub.save_pretrained(model, folder)` writes a folder `transformers` loads. No
# network is involved: a directory in, a directory out.
#
# Fine-tuning then follows the usual recipe: keep the pretrained *backbone*, put a new *head*
# on it, train the head alone with the backbone frozen, then unfreeze and train everything
# with smaller learning rates for the backbone (discriminative learning rates). We do it twice:
#
# 1. a tiny BERT, pretrained here with masked-LM on a synthetic corpus (there is no download),
#    saved as a Hugging Face folder, then fine-tuned for a two-class text task;
# 2. a tiny ViT pretrained on the digits 0-4 and transferred to 5-9 with few labels, compared
#    with the same model trained from scratch, then exported int8 to the C runtime.
#
# Read alongside: `minitorch_edge/hub/` (`__init__.py` the loader, `bert.py`, `gpt2.py`,
# `vit.py` the architectures, `_weights.py` the name mapping and strict check, `transfer.py`).

# %%
import json
import os
import tempfile

import numpy as np

import minitorch_edge as mte
from minitorch_edge import hub, nn, optim
from minitorch_edge import runtime as rt
from minitorch_edge.data.datasets import Digits

FAST = os.environ.get("MTE_TUTORIAL_FAST") == "1"
_scratch = None if os.environ.get("MTE_TUTORIAL_OUT") else tempfile.TemporaryDirectory(
    prefix="mte_transfer_")
OUT = os.environ.get("MTE_TUTORIAL_OUT") or _scratch.name
os.makedirs(OUT, exist_ok=True)
mte.manual_seed(0)
rng = np.random.default_rng(0)

# %% [markdown]
# ## 1. A synthetic language and a "pretrained" BERT
# Tokens: 0 = [PAD], 1 = [CLS], 2 = [MASK]; 3-7 are "good" words, 8-12 "bad" words, 13-39
# neutral. A sentence of the pretraining corpus talks about one mood: its mood words are all
# good or all bad. Masked-LM (predict a hidden word from the others) therefore has to learn
# which words go together, which is what the fine-tuning task needs later.

# %%
PAD, CLS, MASK, VOCAB, MAX_LEN = 0, 1, 2, 40, 12
GOOD, BAD, NEUTRAL = np.arange(3, 8), np.arange(8, 13), np.arange(13, 40)


def sentences(n, mixed):
    """n sentences (ids, attention_mask, label): [CLS] + 8-11 words. label 1 = more good words
    than bad ones; `mixed` sentences hold 2-4 of the majority kind and fewer of the other (the
    fine-tuning task), else 4-6 words of one kind (the pretraining corpus)."""
    ids = np.full((n, MAX_LEN), PAD, dtype=np.int64)
    labels = rng.integers(0, 2, n)
    for i, label in enumerate(labels):
        length = int(rng.integers(8, MAX_LEN))
        words = rng.choice(NEUTRAL, length)
        major = rng.integers(2, 5) if mixed else rng.integers(4, 7)
        minor = rng.integers(0, major) if mixed else 0
        slots = rng.permutation(length)[:major + minor]
        words[slots[:major]] = rng.choice(GOOD if label else BAD, major)
        words[slots[major:]] = rng.choice(BAD if label else GOOD, minor)
        ids[i, 0], ids[i, 1:length + 1] = CLS, words
    return ids, (ids != PAD).astype(np.int64), labels


def mask_tokens(ids):
    """Masked-LM inputs and targets: 20% of the words become [MASK]; the loss looks at those
    alone (target -100 elsewhere, cross_entropy's ignore_index)."""
    chosen = (rng.random(ids.shape) < 0.2) & (ids > MASK)
    return np.where(chosen, MASK, ids), np.where(chosen, ids, -100)


config = hub.config_for("BertForMaskedLM", vocab_size=VOCAB, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                        max_position_embeddings=MAX_LEN, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)
mlm = hub.BertForMaskedLM(config)
corpus, corpus_mask, _ = sentences(1000 if FAST else 4000, mixed=False)
opt = optim.AdamW(mlm.parameters(), lr=5e-3)
mlm.train()
for epoch in range(2 if FAST else 8):
    losses = []
    for i in range(0, len(corpus), 50):
        inputs, targets = mask_tokens(corpus[i:i + 50])
        logits = mlm(mte.tensor(inputs), mte.tensor(corpus_mask[i:i + 50]))
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB),
                                           mte.tensor(targets.reshape(-1)))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    print(f"masked-LM pretraining epoch {epoch + 1}: loss {np.mean(losses):.3f}")

pretrained = os.path.join(OUT, "tiny-bert-mlm")
print("saved", hub.save_pretrained(mlm, pretrained))
print("config.json architectures:",
      json.load(open(os.path.join(pretrained, "config.json")))["architectures"])

# %% [markdown]
# The folder is what `transformers` writes, so `transformers.BertForMaskedLM.from_pretrained`
# reads it too (tests/test_hub.py checks the outputs agree), and a folder `transformers` wrote
# loads here. A damaged file or a config that does not fit the weights is refused, naming the
# file or every key that does not fit.

# %% [markdown]
# ## 2. A new head on the pretrained backbone
# `architecture=` overrides config.json's: a sequence classifier over the masked-LM
# checkpoint. Its `classifier` (and the pooler, which masked-LM does not train) are not in the
# file, so strict loading would refuse; `strict=False` loads what fits and
# `output_loading_info` says what was left as initialised and what went unused.

# %%
model, info = hub.from_pretrained(pretrained, architecture="BertForSequenceClassification",
                                  num_labels=2, strict=False, output_loading_info=True)
print("newly initialised:", info.missing_keys)
print("not used (the masked-LM head):", info.unexpected_keys[:3], "...")

train_ids, train_mask, train_y = sentences(96, mixed=True)     # few labels
test_ids, test_mask, test_y = sentences(400, mixed=True)


def run_epoch(model, opt, batches):
    """One pass: trains when `opt` is given; returns (mean loss, accuracy)."""
    model.train(opt is not None)
    losses, correct, count = [], 0, 0
    for inputs, y in batches:
        with mte.set_grad_enabled(opt is not None):
            logits = model(*inputs)
            loss = nn.functional.cross_entropy(logits, mte.tensor(y))
        if opt is not None:
            opt.zero_grad()
            loss.backward()
            opt.step()
        losses.append(loss.item() * len(y))
        correct += int((logits.detach().numpy().argmax(1) == y).sum())
        count += len(y)
    return sum(losses) / count, correct / count


def text_batches(ids, mask, y, size=32, shuffle=True):
    order = rng.permutation(len(y)) if shuffle else np.arange(len(y))
    return [((mte.tensor(ids[j]), mte.tensor(mask[j])), y[j])
            for j in (order[i:i + size] for i in range(0, len(y), size))]


def fine_tune(model, title, opt, epochs, batches_of, test_batches, curve):
    """`epochs` passes with `opt`, each followed by a test pass; appends to and prints
    `curve` (train loss, train accuracy, test loss, test accuracy per epoch)."""
    for _ in range(epochs):
        loss, acc = run_epoch(model, opt, batches_of())
        test_loss, test_acc = run_epoch(model, None, test_batches)
        curve.append((loss, acc, test_loss, test_acc))
        print(f"{title:34s} epoch {len(curve):2d}: train loss {loss:.3f} acc {acc:6.1%} | "
              f"test loss {test_loss:.3f} acc {test_acc:6.1%}")
    return curve


# %% [markdown]
# ## 3. Stage 1: the backbone frozen; stage 2: everything, at per-part learning rates
# `hub.freeze(model.bert)` is `model.bert.requires_grad_(False)`, the PyTorch idiom, which
# works the same. The optimizer of stage 1 holds the trainable parameters alone. Stage 2 uses
# parameter groups (`hub.param_groups`: name prefix -> learning rate, the longest prefix wins):
# the embeddings move least, the encoder more, the new pooler and classifier most.

# %%
text_train = lambda: text_batches(train_ids, train_mask, train_y)   # noqa: E731
text_test = text_batches(test_ids, test_mask, test_y, shuffle=False)
hub.freeze(model.bert)
print("trainable in stage 1:", sum(p.numel() for p in hub.trainable_parameters(model)),
      "of", sum(p.numel() for p in model.parameters()), "parameters")
bert_curve = fine_tune(model, "BERT, head only (backbone frozen)",
                       optim.AdamW(hub.trainable_parameters(model), lr=1e-2),
                       2 if FAST else 4, text_train, text_test, [])
hub.unfreeze(model.bert)
groups = hub.param_groups(model, {"bert.embeddings": 3e-4, "bert.encoder": 1e-3,
                                  "bert.pooler": 3e-3, "classifier": 3e-3})
print("stage 2 learning rates:", [g["lr"] for g in groups])
fine_tune(model, "BERT, all (discriminative lrs)", optim.AdamW(groups), 2 if FAST else 6,
          text_train, text_test, bert_curve)

# %% [markdown]
# The same classifier trained from a random BERT with the same budget, for comparison: the
# pretrained words already cluster by mood, so the pretrained model gets there sooner.

# %%
scratch = hub.BertForSequenceClassification(config)       # the same sizes, random weights
scratch_curve = fine_tune(scratch, "BERT from scratch", optim.AdamW(scratch.parameters(),
                                                                      lr=3e-3),
                          len(bert_curve), text_train, text_test, [])
print(f"final test accuracy: pretrained {bert_curve[-1][3]:.1%}, "
      f"from scratch {scratch_curve[-1][3]:.1%}")

# %% [markdown]
# ## 4. A tiny ViT: pretrained on the digits 0-4, transferred to 5-9 with few labels
# The 8x8 digits upsampled to 16x16 (nearest), cut into 4x4 patches: 16 patch tokens and the
# [CLS] token. Pretraining uses every training image of 0-4; the target task gets only
# 20 images per class of 5-9. Replacing the head is the PyTorch idiom: assign a new Linear.

# %%


def digits(train, classes, per_class=None):
    dataset = Digits(train=train)
    x = np.stack([dataset[i][0].numpy() for i in range(len(dataset))]).astype(np.float32)
    y = np.array([int(dataset[i][1]) for i in range(len(dataset))])
    keep = np.concatenate([np.flatnonzero(y == c)[:per_class] for c in classes])
    x = x[keep].repeat(2, axis=2).repeat(2, axis=3)       # 8x8 -> 16x16
    return (x - 0.3) / 0.35, y[keep] - min(classes)


def image_batches(x, y, size=32, shuffle=True):
    order = rng.permutation(len(y)) if shuffle else np.arange(len(y))
    return [((mte.tensor(x[j]),), y[j])
            for j in (order[i:i + size] for i in range(0, len(y), size))]


vit_config = dict(image_size=16, patch_size=4, num_channels=1, hidden_size=32,
                  num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                  num_labels=5)
source_x, source_y = digits(True, range(5))
vit = hub.ViTForImageClassification(hub.config_for("ViTForImageClassification", **vit_config))
fine_tune(vit, "ViT, pretraining on 0-4", optim.AdamW(vit.parameters(), lr=3e-3),
          2 if FAST else 12, lambda: image_batches(source_x, source_y),
          image_batches(*digits(False, range(5))), [])
vit_folder = os.path.join(OUT, "tiny-vit-digits04")
hub.save_pretrained(vit, vit_folder)

target_x, target_y = digits(True, range(5, 10), per_class=20)
test_x, test_yv = digits(False, range(5, 10))
test_images = image_batches(test_x, test_yv, shuffle=False)
epochs = (2, 3) if FAST else (5, 10)

mte.manual_seed(1)
vit = hub.from_pretrained(vit_folder)
vit.classifier = nn.Linear(32, 5)                          # the new head
hub.freeze(vit.vit)
image_train = lambda: image_batches(target_x, target_y)   # noqa: E731
vit_curve = fine_tune(vit, "ViT, head only (backbone frozen)",
                      optim.AdamW(hub.trainable_parameters(vit), lr=1e-2), epochs[0],
                      image_train, test_images, [])
hub.unfreeze(vit.vit)
fine_tune(vit, "ViT, all (discriminative lrs)",
          optim.AdamW(hub.param_groups(vit, {"vit": 5e-4, "classifier": 3e-3})), epochs[1],
          image_train, test_images, vit_curve)

mte.manual_seed(1)
vit_scratch = hub.ViTForImageClassification(hub.config_for("ViTForImageClassification",
                                                            **vit_config))
scratch_vit_curve = fine_tune(vit_scratch, "ViT from scratch",
                              optim.AdamW(vit_scratch.parameters(), lr=3e-3), sum(epochs),
                              image_train, test_images, [])
print(f"digits 5-9 from {len(target_y)} labels: pretrained backbone "
      f"{vit_curve[-1][3]:.1%}, from scratch {scratch_vit_curve[-1][3]:.1%}")

# %% [markdown]
# ## 5. Deploy: int8 to the C runtime
# As in chapter 13: `export_model` traces one eval forward; with `calibration_data` the file is
# int8 (weights per channel, activations with observed scales). The runtime loads the file
# with nothing but numpy and cffi.

# %%
vit.eval()
example = test_x[:1]
float_path, int8_path = (os.path.join(OUT, f"vit_digits59{s}.mte") for s in ("", ".int8"))
mte.export_model(vit, example, float_path)
mte.export_model(vit, example, int8_path,
                 calibration_data=[target_x[i:i + 1] for i in range(0, len(target_x), 2)])
with mte.no_grad():
    eager = vit(mte.tensor(test_x)).numpy()
for path in (float_path, int8_path):
    with rt.load(path, threads=1) as m:
        logits = np.concatenate([m(test_x[i:i + 1]) for i in range(len(test_x))])
    print(f"{os.path.basename(path):22s} {os.path.getsize(path):7,d} bytes, test accuracy "
          f"{(logits.argmax(1) == test_yv).mean():.1%}, agrees with eager on "
          f"{(logits.argmax(1) == eager.argmax(1)).mean():.1%}")

# %% [markdown]
# Every Linear of the transformer runs as an int8 GEMM here (a Linear on (N, tokens, width)
# inputs is traced as Reshape -> Gemm -> Reshape, so the quantizer sees it as it sees any
# Linear); print `rt.load(int8_path).kernels` to see them. The file is still not 4x smaller:
# in a model this tiny the position embeddings, the layer norms and the int32 biases, which
# stay as they are, weigh as much as the int8 weights. Attention, layer norm and GELU run in
# float between the int8 GEMMs (quantize / dequantize around them). A CNN such as MobileNetV2
# quantizes throughout (chapters 12 and 13).

# %% [markdown]
# ## Clean up

# %%
if _scratch is not None:
    _scratch.cleanup()
    print("removed the temporary folder", OUT, "(set MTE_TUTORIAL_OUT=<folder> to keep the files)")
