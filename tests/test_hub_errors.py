"""hub's refusals and the transfer-learning helpers: damaged files (truncated, bad header, a
changed tensor, a broken index) name the file; mismatched checkpoints name every missing,
unexpected and mis-shaped key; freeze / param_groups train only what they say. Models are built
by our own classes (no transformers needed); the library never imports transformers."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import minitorch_edge as mte
from minitorch_edge import hub, nn, optim
from minitorch_edge.utils.serialization import load, save


def _tiny_bert(num_labels=2, **kw):
    config = hub.config_for("BertForSequenceClassification", vocab_size=30, hidden_size=8,
                            num_hidden_layers=1, num_attention_heads=2, intermediate_size=16,
                            max_position_embeddings=12, num_labels=num_labels, **kw)
    mte.manual_seed(0)
    return hub.BertForSequenceClassification(config)


@pytest.fixture
def folder(tmp_path):
    hub.save_pretrained(_tiny_bert(), tmp_path)
    return tmp_path


def test_round_trip_is_exact_and_the_file_is_plain_safetensors(folder):
    model = hub.from_pretrained(folder)
    assert isinstance(model, hub.BertForSequenceClassification)
    reference = _tiny_bert()
    for (k, a), (_, b) in zip(reference.state_dict().items(), model.state_dict().items()):
        assert np.array_equal(a.numpy(), b.numpy()), k
    with open(folder / "model.safetensors", "rb") as f:
        header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
    assert header["__metadata__"]["format"] == "pt"
    config = json.loads((folder / "config.json").read_text())
    assert config["architectures"] == ["BertForSequenceClassification"]
    assert config["model_type"] == "bert" and config["num_labels"] == 2


def test_truncated_file_names_the_file(folder):
    path = folder / "model.safetensors"
    data = path.read_bytes()
    path.write_bytes(data[:len(data) - 100])
    with pytest.raises(hub.ModelFormatError, match="model.safetensors"):
        hub.from_pretrained(folder)


def test_bad_header_names_the_file(folder):
    path = folder / "model.safetensors"
    data = bytearray(path.read_bytes())
    data[8:9] = b"["
    path.write_bytes(bytes(data))
    with pytest.raises(hub.ModelFormatError, match="model.safetensors"):
        hub.from_pretrained(folder)


def test_changed_bytes_name_the_tensor(folder):
    path = folder / "model.safetensors"
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF                          # inside the last tensor's bytes
    path.write_bytes(bytes(data))
    with pytest.raises(hub.ModelFormatError, match="sha256|digest|changed"):
        hub.from_pretrained(folder)


def test_bad_config_json_is_named(folder):
    (folder / "config.json").write_text('{"architectures": ["BertModel"], ')
    with pytest.raises(ValueError, match="config.json is not valid JSON"):
        hub.from_pretrained(folder)
    (folder / "config.json").write_text('{"architectures": ["LlamaForCausalLM"]}')
    with pytest.raises(ValueError, match="LlamaForCausalLM.*not supported"):
        hub.from_pretrained(folder)


def test_missing_unexpected_and_mismatched_keys_are_all_named(folder):
    state = dict(load(folder / "model.safetensors"))
    del state["bert.pooler.dense.bias"]
    state["bert.extra.weight"] = mte.zeros(3)
    state["classifier.weight"] = mte.zeros(5, 8)
    save(state, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(hub.CheckpointMismatchError) as caught:
        hub.from_pretrained(folder)
    text = str(caught.value)
    for needle in ("missing keys", "bert.pooler.dense.bias", "unexpected keys",
                   "bert.extra.weight", "shape mismatch for classifier.weight: checkpoint "
                   "[5, 8], model [2, 8]", str(folder), "strict=False"):
        assert needle in text, needle
    model, info = hub.from_pretrained(folder, strict=False, output_loading_info=True)
    assert info.missing_keys == ["bert.pooler.dense.bias"]
    assert info.unexpected_keys == ["bert.extra.weight"]
    assert info.mismatched_keys == [("classifier.weight", [5, 8], [2, 8])]
    np.testing.assert_array_equal(model.bert.embeddings.word_embeddings.weight.detach().numpy(),
                                  state["bert.embeddings.word_embeddings.weight"].numpy())


def test_sharded_index_errors(tmp_path):
    hub.save_pretrained(_tiny_bert(), tmp_path, max_shard_size=2000)
    index_path = tmp_path / "model.safetensors.index.json"
    index = json.loads(index_path.read_text())
    assert len(set(index["weight_map"].values())) > 1
    assert hub.from_pretrained(tmp_path).classifier.weight.shape == (2, 8)
    key, shard = next(iter(index["weight_map"].items()))
    other = next(s for s in index["weight_map"].values() if s != shard)
    index["weight_map"][key] = other
    index_path.write_text(json.dumps(index))
    with pytest.raises(ValueError, match=f"puts '{key}' in {other}"):
        hub.from_pretrained(tmp_path)
    index["weight_map"][key] = "../elsewhere.safetensors"
    index_path.write_text(json.dumps(index))
    with pytest.raises(ValueError, match="not a file name inside"):
        hub.from_pretrained(tmp_path)
    os.remove(index_path)
    with pytest.raises(FileNotFoundError, match="neither model.safetensors"):
        hub.from_pretrained(tmp_path)


def test_no_folder_and_pickles_are_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="no download"):
        hub.from_pretrained(tmp_path / "bert-base-uncased")
    (tmp_path / "config.json").write_text('{"architectures": ["BertModel"]}')
    (tmp_path / "pytorch_model.bin").write_bytes(b"\x80\x04")
    with pytest.raises(FileNotFoundError, match="pytorch_model.bin"):
        hub.from_pretrained(tmp_path)
    with pytest.raises(TypeError, match="save_pretrained"):
        hub.save_pretrained(nn.Linear(2, 2), tmp_path)


def test_dtype_cast(folder):
    model = hub.from_pretrained(folder, dtype=mte.float64)
    assert model.classifier.weight.dtype == mte.float64
    with pytest.raises(ValueError, match="dtype"):
        hub.from_pretrained(folder, dtype="int8")


def test_library_never_imports_transformers(folder):
    code = (f"import sys; from minitorch_edge import hub; m = hub.from_pretrained({str(folder)!r});"
            f" hub.save_pretrained(m, {str(folder)!r}); "
            f"assert 'transformers' not in sys.modules and 'torch' not in sys.modules, 'imported'")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(mte.__file__)))
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


# ---- transfer learning --------------------------------------------------------------------------

def _step(model, opt):
    ids = mte.tensor(np.random.default_rng(0).integers(0, 30, size=(4, 6)))
    loss = nn.functional.cross_entropy(model(ids), mte.tensor(np.array([0, 1, 0, 1])))
    opt.zero_grad()
    loss.backward()
    opt.step()


def test_freeze_trains_only_the_head():
    model = _tiny_bert()
    model.train()
    hub.freeze(model.bert)
    assert all(not p.requires_grad for p in model.bert.parameters())
    head = hub.trainable_parameters(model)
    assert len(head) == 2 and head[0] is model.classifier.weight
    before = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    _step(model, optim.SGD(head, lr=0.5))
    after = model.state_dict()
    changed = sorted(k for k in before if not np.array_equal(before[k], after[k].numpy()))
    assert changed == ["classifier.bias", "classifier.weight"]
    hub.unfreeze(model.bert)
    assert all(p.requires_grad for p in model.parameters())
    model.bert.requires_grad_(False)                      # the PyTorch idiom is the same
    assert hub.trainable_parameters(model) == head


def test_param_groups_give_each_prefix_its_learning_rate():
    model = _tiny_bert()
    groups = hub.param_groups(model, {"bert": 1e-4, "bert.encoder.layer.0": 1e-3,
                                      "classifier": 1e-2})
    assert [g["lr"] for g in groups] == [1e-4, 1e-3, 1e-2]
    layer0 = {id(p) for p in model.bert.encoder.layer[0].parameters()}
    assert {id(p) for p in groups[1]["params"]} == layer0
    assert sum(len(g["params"]) for g in groups) == len(list(model.parameters()))
    opt = optim.AdamW(groups)
    assert [g["lr"] for g in opt.param_groups] == [1e-4, 1e-3, 1e-2]
    model.train()
    before = model.classifier.weight.detach().numpy().copy()
    _step(model, opt)
    assert not np.array_equal(before, model.classifier.weight.detach().numpy())
    hub.freeze(model.bert.embeddings)
    frozen = hub.param_groups(model, {"bert": 1e-4}, default_lr=1e-2)
    assert sum(len(g["params"]) for g in frozen) == len(hub.trainable_parameters(model))
    with pytest.raises(ValueError, match="no parameter name starts with 'head'"):
        hub.param_groups(model, {"head": 1e-3})
    with pytest.raises(ValueError, match="match no prefix"):
        hub.param_groups(model, {"bert": 1e-4})


def test_keys_the_checkpoint_lacks_get_the_hugging_face_initialisation(folder):
    state = dict(load(folder / "model.safetensors"))
    for key in ("classifier.weight", "classifier.bias", "bert.pooler.dense.bias"):
        del state[key]
    save(state, folder / "model.safetensors", metadata={"format": "pt"})
    model = hub.from_pretrained(folder, strict=False)
    weight = model.classifier.weight.detach().numpy()
    assert 0.005 < weight.std() < 0.04                    # N(0, 0.02), not Linear's default
    assert not model.classifier.bias.detach().numpy().any()
    assert not model.bert.pooler.dense.bias.detach().numpy().any()
    np.testing.assert_array_equal(model.bert.pooler.dense.weight.detach().numpy(),
                                  state["bert.pooler.dense.weight"].numpy())
