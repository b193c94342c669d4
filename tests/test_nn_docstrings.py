"""Every layer in nn/layers/ documents itself as PyTorch's do: what it computes, its arguments
(each constructor argument named, under "Args:") and the shapes it takes and gives ("Shape:"),
so that help(nn.Conv2d) is a page to read, not a pointer elsewhere."""
import importlib
import inspect

import pytest

from minitorch_edge import nn

LAYER_FILES = ["linear", "activation", "conv", "pooling", "normalization", "dropout", "sparse",
               "upsampling", "attention", "transformer", "loss", "rnn", "padding", "distance"]
UNDOCUMENTED_ARGS = {"self", "device", "dtype"}      # PyTorch's factory kwargs


def _layers():
    for file in LAYER_FILES:
        module = importlib.import_module(f"minitorch_edge.nn.layers.{file}")
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) and issubclass(obj, nn.Module):
                yield obj


LAYERS = sorted(set(_layers()), key=lambda c: c.__name__)


@pytest.mark.parametrize("cls", LAYERS, ids=lambda c: c.__name__)
def test_the_layer_says_what_it_computes_its_arguments_and_shapes(cls):
    doc = inspect.getdoc(cls) or ""
    assert len(doc.splitlines()) >= 4, f"{cls.__name__}: a one-line docstring"
    assert "Shape:" in doc, f"{cls.__name__}: no Shape: section"
    params = [p for p in inspect.signature(cls.__init__).parameters.values()
              if p.name not in UNDOCUMENTED_ARGS
              and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if params:
        assert "Args:" in doc, f"{cls.__name__}: no Args: section"
        missing = [p.name for p in params if p.name not in doc]
        assert not missing, f"{cls.__name__}: arguments not documented: {missing}"


def test_help_of_conv2d_is_more_than_a_pointer():
    doc = inspect.getdoc(nn.Conv2d)
    assert "see F.conv2d" not in doc.splitlines()[0]
    for words in ("out_channels", "kernel_size", "H_out", "groups", "padding_mode"):
        assert words in doc, words
