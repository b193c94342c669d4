"""A numpy array, list or number passed where a Tensor is needed: a TypeError naming the module
(or nn.functional form) and the fix, as in PyTorch, for every layer of the layer tables and every
public nn.functional function (nn/_inputs.py), never an AttributeError from deep inside."""
import inspect
import warnings

import numpy as np
import pytest
import test_nn_attention
import test_nn_conv
import test_nn_extra
import test_nn_layers
import test_nn_loss
import test_nn_rnn

import minitorch_edge as mte
import minitorch_edge.nn.functional as F
from minitorch_edge import models, nn

ROWS = (test_nn_layers.LAYERS + test_nn_conv.LAYERS + test_nn_extra.LAYERS + test_nn_loss.LAYERS
        + test_nn_rnn.TABLE + test_nn_attention.MHA_TABLE + test_nn_attention.TRANSFORMER_TABLE)
FIX = "wrap it with minitorch_edge.tensor(x)"


def _call(row, module, inputs):
    return (row.call or (lambda m, *xs: m(*xs)))(module, *inputs)


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_every_layer_refuses_numpy_inputs_by_name(row):
    module = row.build(nn)
    arrays = [np.asarray(a) for a in row.make_inputs(np.random.default_rng(0))]
    _call(row, module, [mte.tensor(a) for a in arrays])            # the row itself works
    with pytest.raises(TypeError) as info:
        _call(row, module, arrays)
    message = str(info.value)
    if row.call is None:          # (a row's own call may hand the arrays to a helper first)
        assert message.startswith(type(module).__name__ + ": "), message
        assert FIX in message and "from_numpy" in message, message
        assert "numpy.ndarray" in message, message


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_every_layer_refuses_a_list_with_a_type_error(row):
    module = row.build(nn)
    if isinstance(module, nn.Identity):
        pytest.skip("Identity returns whatever it gets, as PyTorch's does")
    arrays = [np.asarray(a) for a in row.make_inputs(np.random.default_rng(0))]
    inputs = [arrays[0].tolist()] + [mte.tensor(a) for a in arrays[1:]]
    with pytest.raises(TypeError, match=r"list|Tensor"):
        _call(row, module, inputs)


def test_the_message_names_the_module_the_user_called():
    model = models.SmallCNN(in_channels=1, num_classes=10, input_size=8)
    x = np.zeros((2, 1, 8, 8), np.float32)
    with pytest.raises(TypeError) as info:
        model(x)
    assert str(info.value) == (
        "SmallCNN: input 1 is a numpy.ndarray (float32, shape (2, 1, 8, 8)), not a Tensor; wrap "
        "it with minitorch_edge.tensor(x) (a copy) or minitorch_edge.from_numpy(x) (shares its "
        "memory)")
    with pytest.raises(TypeError, match=r"Conv2d: argument 'input' is a numpy.ndarray"):
        nn.Conv2d(1, 2, 3)(input=x)
    with pytest.raises(TypeError, match=r"Conv2d: input 1 is a float, not a Tensor"):
        nn.Conv2d(1, 2, 3)(3.0)
    assert model(mte.from_numpy(x)).shape == (2, 10)


def test_a_real_attribute_error_inside_forward_is_not_rewritten():
    class Broken(nn.Module):
        def forward(self, x):
            return x.no_such_method()

    with pytest.raises(AttributeError, match="no_such_method"):
        Broken()(mte.zeros(2))

    class UsesAConfig(nn.Module):
        def forward(self, x, config):
            return x * config.scale                # config is a dict: a bug of the caller

    with pytest.raises(TypeError, match=r"UsesAConfig: input 2 is a dict"):
        UsesAConfig()(mte.zeros(2), {"scale": 2})


def test_modules_that_take_arrays_still_do():
    from minitorch_edge.quant.observers import MinMaxObserver
    obs = MinMaxObserver()
    obs(np.array([-1.0, 3.0], np.float32))
    assert obs.calculate_qparams() is not None


def _functional():
    return [name for name in sorted(dir(F)) if not name.startswith("_")
            and inspect.isfunction(getattr(F, name))]


@pytest.mark.parametrize("name", _functional())
def test_no_functional_form_fails_with_attribute_error_on_numpy(name):
    """Every public F function, called with a numpy array in the first or second place (with
    Tensors and ints for the rest, as many arguments as it may take): whatever it raises, it is
    not an AttributeError."""
    fn = getattr(F, name)
    warnings.simplefilter("ignore")
    for shape in [(2, 3, 8, 8), (2, 8), (4,)]:
        x = np.random.default_rng(0).random(shape, dtype=np.float32)
        t = mte.tensor(x)
        for extra in [(), (t,), (t, t), (1,), (t, 1)]:
            for args in [(x, *extra), (t, x, *extra[1:])] if extra else [(x,)]:
                try:
                    fn(*args)
                except AttributeError as e:
                    pytest.fail(f"F.{name}{tuple(type(a).__name__ for a in args)}: "
                                f"AttributeError: {e}")
                except Exception:
                    pass


def test_functional_messages():
    x = np.zeros((1, 3, 8, 8), np.float32)
    w = mte.zeros(4, 3, 3, 3)
    with pytest.raises(TypeError) as info:
        F.conv2d(x, w)
    assert str(info.value).startswith("F.conv2d(): argument 'input' (position 1) is a "
                                      "numpy.ndarray (float32, shape (1, 3, 8, 8)), not a Tensor")
    with pytest.raises(TypeError, match=r"F.conv2d\(\): argument 'weight' \(position 2\) is a "
                                        r"list"):
        F.conv2d(mte.tensor(x), [[1.0]])
    with pytest.raises(TypeError, match=r"softm(in|ax)\(\): argument 'input' \(position 1\)"):
        F.softmin(x, 1)
    with pytest.raises(TypeError, match=r"softmax\(\): argument 'input' \(position 1\) must be "
                                        r"Tensor, not ndarray"):
        F.softmax(x, 1)
    assert F.tanh is mte.tanh and F.conv2d.__wrapped__.__name__ == "conv2d"
