"""hub.from_pretrained / save_pretrained against `transformers`: tiny random BERT, GPT-2 and
ViT models saved by `transformers` load in ours with equal hidden states, logits and generated
tokens (float32 tolerance); ours saved load in `transformers` with equal outputs; sharded
folders both ways."""
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import minitorch_edge as mte  # noqa: E402
from minitorch_edge import hub  # noqa: E402

transformers.logging.set_verbosity_error()
VOCAB = 40
TOL = dict(rtol=1e-4, atol=1e-5)


def _bert_config(**kw):
    return transformers.BertConfig(vocab_size=VOCAB, hidden_size=16, num_hidden_layers=2,
                                   num_attention_heads=2, intermediate_size=24,
                                   max_position_embeddings=16, num_labels=3, **kw)


def _gpt2_config():
    return transformers.GPT2Config(vocab_size=VOCAB, n_embd=16, n_layer=2, n_head=2,
                                   n_positions=32, bos_token_id=1, eos_token_id=VOCAB - 1,
                                   pad_token_id=VOCAB - 1)


def _vit_config():
    return transformers.ViTConfig(image_size=8, patch_size=4, num_channels=2, hidden_size=16,
                                  num_hidden_layers=2, num_attention_heads=2,
                                  intermediate_size=24, num_labels=3)


CONFIGS = {"BertModel": _bert_config, "BertForMaskedLM": _bert_config,
           "BertForSequenceClassification": _bert_config, "GPT2Model": _gpt2_config,
           "GPT2LMHeadModel": _gpt2_config, "ViTModel": _vit_config,
           "ViTForImageClassification": _vit_config}


@pytest.fixture(scope="module")
def hf_folders(tmp_path_factory):
    """name -> (the transformers model, the folder it saved itself to)."""
    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("hf")
    out = {}
    for name, make_config in CONFIGS.items():
        model = getattr(transformers, name)(make_config()).eval()
        folder = root / name
        model.save_pretrained(folder)
        out[name] = (model, folder)
    return out


def _inputs(name, seed=0):
    """(torch kwargs, our kwargs) for a batch of two with a padded second row."""
    rng = np.random.default_rng(seed)
    if name.startswith("ViT"):
        x = rng.standard_normal((2, 2, 8, 8)).astype(np.float32)
        return {"pixel_values": torch.tensor(x)}, {"pixel_values": mte.tensor(x)}
    ids = rng.integers(1, VOCAB - 1, size=(2, 7))
    mask = np.ones((2, 7), dtype=np.int64)
    mask[1, 5:] = 0
    theirs = {"input_ids": torch.tensor(ids), "attention_mask": torch.tensor(mask)}
    ours = {"input_ids": mte.tensor(ids), "attention_mask": mte.tensor(mask)}
    if name.startswith("Bert"):
        types = (np.arange(7) >= 4).astype(np.int64)[None].repeat(2, 0)
        theirs["token_type_ids"], ours["token_type_ids"] = torch.tensor(types), mte.tensor(types)
    return theirs, ours


def _outputs_theirs(model, kwargs):
    with torch.no_grad():
        out = model(**kwargs)
    names = ("last_hidden_state", "pooler_output", "logits")
    return [getattr(out, n).numpy() for n in names if getattr(out, n, None) is not None]


def _outputs_ours(model, kwargs):
    with mte.no_grad():
        out = model(**kwargs)
    if isinstance(out, mte.Tensor):
        return [out.numpy()]
    return [t.numpy() for t in out if isinstance(t, mte.Tensor)]


def _compare(theirs, ours, mask=None):
    assert len(theirs) == len(ours)
    for a, b in zip(theirs, ours):
        assert a.shape == b.shape
        if mask is not None and a.ndim == 3:    # padded positions of a causal model: any value
            a, b = a[mask], b[mask]
        np.testing.assert_allclose(b, a, **TOL)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_transformers_folder_loads_with_equal_outputs(hf_folders, name):
    model_theirs, folder = hf_folders[name]
    ours = hub.from_pretrained(folder)
    assert type(ours).__name__ == name and not ours.training
    theirs_in, ours_in = _inputs(name)
    mask = None if name.startswith("ViT") else theirs_in["attention_mask"].numpy() == 1
    _compare(_outputs_theirs(model_theirs, theirs_in), _outputs_ours(ours, ours_in), mask)


@pytest.mark.parametrize("name", ["BertForMaskedLM", "BertForSequenceClassification",
                                  "GPT2LMHeadModel", "ViTForImageClassification", "GPT2Model"])
def test_our_save_loads_in_transformers(hf_folders, tmp_path, name):
    ours = hub.from_pretrained(hf_folders[name][1])
    with mte.no_grad():                      # change the weights so no old file could pass
        for p in ours.parameters():
            p.add_(mte.tensor(np.random.default_rng(1).standard_normal(p.shape)
                              .astype(np.float32) * 0.05))
    written = hub.save_pretrained(ours, tmp_path)
    assert written == ["config.json", "model.safetensors"]
    theirs = getattr(transformers, name).from_pretrained(tmp_path).eval()
    theirs_in, ours_in = _inputs(name, seed=3)
    mask = None if name.startswith("ViT") else theirs_in["attention_mask"].numpy() == 1
    _compare(_outputs_theirs(theirs, theirs_in), _outputs_ours(ours, ours_in), mask)
    again = hub.from_pretrained(tmp_path)    # and back into ours, bit for bit
    for (k, a), (_, b) in zip(ours.state_dict().items(), again.state_dict().items()):
        assert np.array_equal(a.numpy(), b.numpy()), k


def test_gpt2_generate_greedy_equals_transformers(hf_folders):
    theirs, folder = hf_folders["GPT2LMHeadModel"]
    ours = hub.from_pretrained(folder)
    prompt = np.array([[5, 9, 2, 7], [3, 3, 8, 1]])
    with torch.no_grad():
        expected = theirs.generate(torch.tensor(prompt), attention_mask=torch.ones(2, 4,
                                   dtype=torch.long), max_new_tokens=10, do_sample=False,
                                   eos_token_id=VOCAB - 1, pad_token_id=VOCAB - 1).numpy()
    for use_cache in (True, False):
        got = ours.generate(mte.tensor(prompt), max_new_tokens=10, eos_token_id=VOCAB - 1,
                            use_cache=use_cache).numpy()
        np.testing.assert_array_equal(got, expected)


def test_gpt2_cache_gives_the_full_forward_logits(hf_folders):
    ours = hub.from_pretrained(hf_folders["GPT2LMHeadModel"][1])
    ids = mte.tensor(np.random.default_rng(2).integers(0, VOCAB, size=(2, 9)))
    with mte.no_grad():
        full = ours(ids).numpy()
        logits, past = ours(ids[:, :5], use_cache=True)
        steps = [logits.numpy()]
        for i in range(5, 9):
            logits, past = ours(ids[:, i:i + 1], past_key_values=past, use_cache=True)
            steps.append(logits.numpy())
    assert past[0][0].shape == (2, 2, 9, 8)
    np.testing.assert_allclose(np.concatenate(steps, 1), full, **TOL)


def test_gpt2_sampling_top_k_temperature(hf_folders):
    ours = hub.from_pretrained(hf_folders["GPT2LMHeadModel"][1])
    prompt = mte.tensor(np.array([[5, 9, 2, 7]]))
    greedy = ours.generate(prompt, max_new_tokens=6).numpy()
    top1 = ours.generate(prompt, max_new_tokens=6, do_sample=True, top_k=1).numpy()
    np.testing.assert_array_equal(top1, greedy)
    draws = [ours.generate(prompt, max_new_tokens=6, do_sample=True, top_k=3, temperature=2.0,
                           generator=mte.Generator().manual_seed(s)).numpy() for s in (7, 7, 8)]
    np.testing.assert_array_equal(draws[0], draws[1])
    seq = draws[0]
    with mte.no_grad():
        logits = ours(mte.tensor(seq[:, :-1])).numpy()[0]
    for pos in range(3, seq.shape[1] - 1):   # each drawn token is among the 3 most likely
        assert seq[0, pos + 1] in np.argsort(logits[pos])[-3:]
    with pytest.raises(ValueError, match="temperature"):
        ours.generate(prompt, do_sample=True, temperature=0.0)


def test_sharded_folders_both_ways(hf_folders, tmp_path):
    theirs, _ = hf_folders["BertForSequenceClassification"]
    theirs.save_pretrained(tmp_path / "hf", max_shard_size="8KB")
    shards = sorted(os.listdir(tmp_path / "hf"))
    assert "model.safetensors.index.json" in shards and len(shards) > 3
    ours = hub.from_pretrained(tmp_path / "hf")
    theirs_in, ours_in = _inputs("BertForSequenceClassification")
    _compare(_outputs_theirs(theirs, theirs_in), _outputs_ours(ours, ours_in))
    written = hub.save_pretrained(ours, tmp_path / "ours", max_shard_size="8KB")
    assert written[-1] == "model.safetensors.index.json" and len(written) > 3
    back = transformers.BertForSequenceClassification.from_pretrained(tmp_path / "ours").eval()
    _compare(_outputs_theirs(back, theirs_in), _outputs_ours(ours, ours_in))
    hub.save_pretrained(ours, tmp_path / "ours")          # unsharded again: the shards go
    assert sorted(os.listdir(tmp_path / "ours")) == ["config.json", "model.safetensors"]


def test_backbone_and_head_checkpoints_cross_load(hf_folders):
    folder = hf_folders["BertModel"][1]
    with pytest.raises(hub.CheckpointMismatchError, match="classifier.weight"):
        hub.from_pretrained(folder, architecture="BertForSequenceClassification")
    model, info = hub.from_pretrained(folder, architecture="BertForSequenceClassification",
                                      strict=False, num_labels=2, output_loading_info=True)
    assert info.missing_keys == ["classifier.weight", "classifier.bias"]
    assert model.classifier.weight.shape == (2, 16)
    base = hf_folders["BertModel"][0].state_dict()
    np.testing.assert_array_equal(model.bert.encoder.layer[1].output.dense.weight.detach().numpy(),
                                  base["encoder.layer.1.output.dense.weight"].numpy())
    backbone, info = hub.from_pretrained(hf_folders["BertForSequenceClassification"][1],
                                         architecture="BertModel", output_loading_info=True)
    assert info.unused_keys == ["classifier.bias", "classifier.weight"]


def test_half_precision_folder_loads_as_float32_or_as_saved(hf_folders, tmp_path):
    theirs, _ = hf_folders["ViTForImageClassification"]
    half = getattr(transformers, "ViTForImageClassification")(theirs.config).eval()
    half.load_state_dict(theirs.state_dict())
    half.half().save_pretrained(tmp_path)
    ours = hub.from_pretrained(tmp_path)
    assert ours.classifier.weight.dtype == mte.float32
    expected = theirs.state_dict()["classifier.weight"].half().float().numpy()
    np.testing.assert_array_equal(ours.classifier.weight.detach().numpy(), expected)
    kept = hub.from_pretrained(tmp_path, dtype="auto")
    assert kept.classifier.weight.dtype == mte.float16


def test_gpt2_generate_left_padded_batch_equals_transformers(hf_folders):
    theirs, folder = hf_folders["GPT2LMHeadModel"]
    ours = hub.from_pretrained(folder)
    pad = VOCAB - 1
    prompt = np.array([[pad, pad, 5, 9, 2], [3, 3, 8, 1, 6]])
    mask = (np.arange(5)[None] >= np.array([[2], [0]])).astype(np.int64)
    with torch.no_grad():
        expected = theirs.generate(torch.tensor(prompt), attention_mask=torch.tensor(mask),
                                   max_new_tokens=8, do_sample=False, eos_token_id=None,
                                   pad_token_id=pad).numpy()
    for use_cache in (True, False):
        got = ours.generate(mte.tensor(prompt), attention_mask=mte.tensor(mask),
                            max_new_tokens=8, use_cache=use_cache).numpy()
        np.testing.assert_array_equal(got, expected)
    alone = ours.generate(mte.tensor(prompt[:1, 2:]), max_new_tokens=8).numpy()
    np.testing.assert_array_equal(alone[0], expected[0, 2:])      # padding changes nothing
