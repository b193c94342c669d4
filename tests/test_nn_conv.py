"""Convolution and pooling: layers against torch.nn (layer harness), functional forms through the
op harness (torch comparison, gradcheck, gradgradcheck for the convolutions), the numpy conv
kernels against a naive loop, default initialisation, reprs and error messages."""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import minitorch_edge as mte
from minitorch_edge import backend, nn
from minitorch_edge.backend import numpy_backend as nb
from harness import Row, distinct, import_torch, make_tests
from layer_harness import LayerRow, make_layer_tests, randn

F = nn.functional
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel")


# ---- layers against torch.nn ------------------------------------------------------------------
LAYERS = [
    # Conv2d: strides, paddings, dilation, groups, bias, padding modes, kernel shapes
    LayerRow("conv2d_basic", lambda nn: nn.Conv2d(3, 4, 3), randn(2, 3, 8, 8)),
    LayerRow("conv2d_s2_p1", lambda nn: nn.Conv2d(3, 4, 3, stride=2, padding=1),
             randn(2, 3, 9, 8)),
    LayerRow("conv2d_s3_tuple", lambda nn: nn.Conv2d(2, 4, (3, 2), stride=(3, 2),
                                                     padding=(2, 1)), randn(2, 2, 10, 7)),
    LayerRow("conv2d_same_odd", lambda nn: nn.Conv2d(3, 5, 3, padding="same"),
             randn(2, 3, 6, 7)),
    LayerRow("conv2d_same_even", lambda nn: nn.Conv2d(3, 5, (4, 2), padding="same",
                                                      dilation=(1, 2)), randn(2, 3, 7, 6)),
    LayerRow("conv2d_valid", lambda nn: nn.Conv2d(3, 2, 2, padding="valid"), randn(1, 3, 5, 5)),
    LayerRow("conv2d_dilation", lambda nn: nn.Conv2d(2, 3, 3, dilation=2, padding=2),
             randn(2, 2, 7, 9)),
    LayerRow("conv2d_dil_stride", lambda nn: nn.Conv2d(2, 3, 3, stride=2, dilation=(2, 1)),
             randn(2, 2, 11, 8)),
    LayerRow("conv2d_groups", lambda nn: nn.Conv2d(4, 6, 3, groups=2, padding=1),
             randn(2, 4, 6, 6)),
    LayerRow("conv2d_depthwise", lambda nn: nn.Conv2d(4, 4, 3, groups=4, padding=1),
             randn(2, 4, 7, 7)),
    LayerRow("conv2d_depthwise_x2", lambda nn: nn.Conv2d(3, 6, (3, 2), groups=3, stride=2),
             randn(2, 3, 8, 8)),
    LayerRow("conv2d_nobias", lambda nn: nn.Conv2d(3, 4, 3, bias=False), randn(2, 3, 6, 6)),
    LayerRow("conv2d_1x1", lambda nn: nn.Conv2d(5, 3, 1), randn(2, 5, 4, 6)),
    LayerRow("conv2d_1x1_s2", lambda nn: nn.Conv2d(4, 8, 1, stride=2, bias=False),
             randn(2, 4, 7, 7)),
    LayerRow("conv2d_reflect", lambda nn: nn.Conv2d(3, 4, 3, padding=1, padding_mode="reflect"),
             randn(2, 3, 6, 5)),
    LayerRow("conv2d_replicate", lambda nn: nn.Conv2d(3, 4, 3, padding=(2, 1), stride=2,
                                                      padding_mode="replicate"),
             randn(2, 3, 7, 6)),
    LayerRow("conv2d_circular", lambda nn: nn.Conv2d(2, 4, 3, padding=1, padding_mode="circular"),
             randn(2, 2, 5, 6)),
    LayerRow("conv2d_reflect_same_even", lambda nn: nn.Conv2d(2, 3, (2, 4), padding="same",
                                                              padding_mode="reflect"),
             randn(2, 2, 6, 7)),
    LayerRow("conv2d_unbatched", lambda nn: nn.Conv2d(3, 4, 3, padding=1), randn(3, 6, 6)),
    LayerRow("conv2d_unbatched_circular", lambda nn: nn.Conv2d(3, 4, 3, padding=1,
                                                               padding_mode="circular"),
             randn(3, 5, 5)),
    LayerRow("conv2d_big", lambda nn: nn.Conv2d(16, 32, 3), randn(4, 16, 13, 13),
             rtol=1e-5, atol=1e-4),  # sums of 144-term products x 4*121 pixels: float32 order
    # Conv1d
    LayerRow("conv1d_basic", lambda nn: nn.Conv1d(3, 4, 3), randn(2, 3, 10)),
    LayerRow("conv1d_s2_p2_d2", lambda nn: nn.Conv1d(2, 4, 3, stride=2, padding=2, dilation=2),
             randn(2, 2, 11)),
    LayerRow("conv1d_same_even", lambda nn: nn.Conv1d(3, 2, 4, padding="same"), randn(2, 3, 9)),
    LayerRow("conv1d_groups", lambda nn: nn.Conv1d(4, 8, 3, groups=4, bias=False),
             randn(2, 4, 8)),
    LayerRow("conv1d_reflect", lambda nn: nn.Conv1d(2, 3, 3, padding=1, padding_mode="reflect"),
             randn(2, 2, 7)),
    LayerRow("conv1d_unbatched", lambda nn: nn.Conv1d(3, 4, 2), randn(3, 6)),
    # ConvTranspose2d / 1d
    LayerRow("convT2d_basic", lambda nn: nn.ConvTranspose2d(3, 4, 3), randn(2, 3, 5, 5)),
    LayerRow("convT2d_s2_op1", lambda nn: nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1,
                                                             output_padding=1),
             randn(2, 3, 4, 5)),
    LayerRow("convT2d_groups", lambda nn: nn.ConvTranspose2d(4, 6, (3, 2), stride=(2, 1),
                                                             groups=2, bias=False),
             randn(2, 4, 4, 4)),
    LayerRow("convT2d_dilation", lambda nn: nn.ConvTranspose2d(2, 3, 3, dilation=2, padding=1,
                                                               stride=3, output_padding=(2, 1)),
             randn(2, 2, 3, 4)),
    LayerRow("convT2d_op_via_dilation", lambda nn: nn.ConvTranspose2d(2, 2, 3, dilation=3,
                                                                      output_padding=2),
             randn(1, 2, 4, 4)),
    LayerRow("convT2d_output_size", lambda nn: nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1),
             randn(2, 3, 4, 4), call=lambda m, x: m(x, output_size=[8, 7])),
    LayerRow("convT2d_unbatched", lambda nn: nn.ConvTranspose2d(3, 2, 2, stride=2),
             randn(3, 3, 4)),
    LayerRow("convT1d", lambda nn: nn.ConvTranspose1d(3, 4, 3, stride=2, output_padding=1),
             randn(2, 3, 6)),
    # max pooling
    LayerRow("maxpool2d_k2", lambda nn: nn.MaxPool2d(2), randn(2, 3, 8, 8)),
    LayerRow("maxpool2d_k3_s2_p1_ceil", lambda nn: nn.MaxPool2d(3, 2, 1, ceil_mode=True),
             randn(2, 3, 8, 9)),
    LayerRow("maxpool2d_ceil_odd", lambda nn: nn.MaxPool2d(2, ceil_mode=True), randn(2, 2, 7, 5)),
    LayerRow("maxpool2d_indices", lambda nn: nn.MaxPool2d((2, 3), stride=(1, 2), padding=1,
                                                          return_indices=True),
             randn(2, 3, 6, 7)),
    LayerRow("maxpool2d_dilation", lambda nn: nn.MaxPool2d(3, stride=1, dilation=2, padding=1),
             randn(2, 2, 8, 8)),
    LayerRow("maxpool2d_overlap", lambda nn: nn.MaxPool2d(3, stride=1), randn(2, 2, 6, 6)),
    LayerRow("maxpool2d_unbatched", lambda nn: nn.MaxPool2d(2, return_indices=True),
             randn(3, 6, 4)),
    LayerRow("maxpool1d", lambda nn: nn.MaxPool1d(3, stride=2, padding=1, return_indices=True),
             randn(2, 3, 9)),
    LayerRow("maxpool1d_ceil_unbatched", lambda nn: nn.MaxPool1d(2, ceil_mode=True),
             randn(3, 7)),
    # average pooling
    LayerRow("avgpool2d_k2", lambda nn: nn.AvgPool2d(2), randn(2, 3, 8, 8)),
    LayerRow("avgpool2d_ceil_pad", lambda nn: nn.AvgPool2d(3, 2, 1, ceil_mode=True),
             randn(2, 2, 8, 7)),
    LayerRow("avgpool2d_no_count_pad", lambda nn: nn.AvgPool2d(3, 2, 1, ceil_mode=True,
                                                               count_include_pad=False),
             randn(2, 2, 8, 7)),
    LayerRow("avgpool2d_divisor", lambda nn: nn.AvgPool2d((2, 3), stride=(1, 2), padding=(1, 1),
                                                          divisor_override=4),
             randn(2, 2, 6, 7)),
    LayerRow("avgpool2d_unbatched", lambda nn: nn.AvgPool2d(2, stride=1), randn(3, 5, 4)),
    LayerRow("avgpool1d", lambda nn: nn.AvgPool1d(3, stride=2, padding=1,
                                                  count_include_pad=False), randn(2, 3, 10)),
    # adaptive pooling
    LayerRow("adaptive_avg_nondiv", lambda nn: nn.AdaptiveAvgPool2d((3, 4)), randn(2, 3, 7, 10)),
    LayerRow("adaptive_avg_global", lambda nn: nn.AdaptiveAvgPool2d(1), randn(2, 3, 5, 6)),
    LayerRow("adaptive_avg_div", lambda nn: nn.AdaptiveAvgPool2d((2, 3)), randn(2, 3, 6, 9)),
    LayerRow("adaptive_avg_none", lambda nn: nn.AdaptiveAvgPool2d((None, 3)), randn(2, 2, 5, 7)),
    LayerRow("adaptive_avg_upsample", lambda nn: nn.AdaptiveAvgPool2d((5, 7)), randn(1, 2, 3, 4)),
    LayerRow("adaptive_avg_unbatched", lambda nn: nn.AdaptiveAvgPool2d(3), randn(3, 7, 5)),
    LayerRow("adaptive_avg1d", lambda nn: nn.AdaptiveAvgPool1d(4), randn(2, 3, 10)),
    LayerRow("adaptive_max_nondiv", lambda nn: nn.AdaptiveMaxPool2d((3, 4), return_indices=True),
             randn(2, 3, 7, 10)),
    LayerRow("adaptive_max_global", lambda nn: nn.AdaptiveMaxPool2d(1), randn(2, 3, 5, 6)),
    LayerRow("adaptive_max_unbatched", lambda nn: nn.AdaptiveMaxPool2d((2, None)),
             randn(3, 5, 4)),
    LayerRow("adaptive_max1d", lambda nn: nn.AdaptiveMaxPool1d(3, return_indices=True),
             randn(2, 3, 8)),
]
make_layer_tests(LAYERS, globals())


# ---- functional forms through the op harness ---------------------------------------------------
@st.composite
def conv_shapes(draw, nd=2, groups=1, bias=True, kmin=1, kmax=3, smin=3, smax=6, nmax=2):
    """(input, weight[, bias]) shapes for a convolution with `groups` groups."""
    n = draw(st.integers(0, nmax))
    cg, og = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    sizes = tuple(draw(st.integers(smin, smax)) for _ in range(nd))
    kernel = tuple(draw(st.integers(kmin, kmax)) for _ in range(nd))
    shapes = ((n, cg * groups) + sizes, (og * groups, cg) + kernel)
    return shapes + (((og * groups,),) if bias else ())


@st.composite
def convT_shapes(draw, groups=1, kmin=1):
    n, cg, og = draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.integers(1, 2))
    h, w = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    kh, kw = draw(st.integers(kmin, 3)), draw(st.integers(kmin, 3))
    return (n, cg * groups, h, w), (cg * groups, og, kh, kw), (og * groups,)


@st.composite
def pool_shapes(draw, smin=3, smax=7):
    n, c = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    return ((n, c, draw(st.integers(smin, smax)), draw(st.integers(smin, smax))),)


BIG = 160   # gradcheck inputs of a conv (x + w + b) are larger than the default 40 elements

OPS = [
    Row("conv2d", lambda lib, x, w, b: lib.nn.functional.conv2d(x, w, b, padding=1),
        shapes=conv_shapes(), double=True, max_gradcheck_numel=BIG),
    Row("conv2d_s2_d2", lambda lib, x, w, b: lib.nn.functional.conv2d(
        x, w, b, stride=2, padding=(1, 2), dilation=2), shapes=conv_shapes(), double=True,
        max_gradcheck_numel=BIG),
    Row("conv2d_same", lambda lib, x, w: lib.nn.functional.conv2d(x, w, padding="same",
                                                                  dilation=(1, 2)),
        shapes=conv_shapes(bias=False, kmax=4), double=True, max_gradcheck_numel=BIG),
    Row("conv2d_groups", lambda lib, x, w, b: lib.nn.functional.conv2d(x, w, b, stride=(1, 2),
                                                                       groups=2),
        shapes=conv_shapes(groups=2), double=True, max_gradcheck_numel=BIG),
    Row("conv1d", lambda lib, x, w, b: lib.nn.functional.conv1d(x, w, b, stride=2, padding=1),
        shapes=conv_shapes(nd=1), double=True, max_gradcheck_numel=BIG),
    Row("conv_transpose2d", lambda lib, x, w, b: lib.nn.functional.conv_transpose2d(
        x, w, b, stride=2, padding=1, output_padding=1), shapes=convT_shapes(kmin=2), double=True,
        max_gradcheck_numel=BIG),
    Row("conv_transpose2d_groups", lambda lib, x, w, b: lib.nn.functional.conv_transpose2d(
        x, w, b, stride=(1, 2), groups=2, dilation=2), shapes=convT_shapes(groups=2),
        double=True, max_gradcheck_numel=BIG),
    Row("max_pool2d", lambda lib, x: lib.nn.functional.max_pool2d(x, 2), shapes=pool_shapes(),
        make=distinct, double=True, max_gradcheck_numel=BIG),
    Row("max_pool2d_ceil_indices", lambda lib, x: lib.nn.functional.max_pool2d(
        x, 3, stride=2, padding=1, ceil_mode=True, return_indices=True), shapes=pool_shapes(),
        make=distinct, max_gradcheck_numel=BIG),
    Row("max_pool2d_dilation", lambda lib, x: lib.nn.functional.max_pool2d(
        x, (2, 3), stride=1, dilation=(2, 1)), shapes=pool_shapes(), make=distinct,
        max_gradcheck_numel=BIG),
    Row("avg_pool2d", lambda lib, x: lib.nn.functional.avg_pool2d(x, 2), shapes=pool_shapes(),
        double=True, max_gradcheck_numel=BIG),
    Row("avg_pool2d_ceil_nopad", lambda lib, x: lib.nn.functional.avg_pool2d(
        x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
        shapes=pool_shapes(), max_gradcheck_numel=BIG),
    Row("avg_pool2d_divisor", lambda lib, x: lib.nn.functional.avg_pool2d(
        x, (3, 2), stride=(2, 1), padding=(1, 0), divisor_override=3), shapes=pool_shapes(),
        max_gradcheck_numel=BIG),
    Row("adaptive_avg_pool2d", lambda lib, x: lib.nn.functional.adaptive_avg_pool2d(x, (2, 3)),
        shapes=pool_shapes(), double=True, max_gradcheck_numel=BIG),
    Row("adaptive_max_pool2d", lambda lib, x: lib.nn.functional.adaptive_max_pool2d(
        x, (2, 3), return_indices=True), shapes=pool_shapes(), make=distinct,
        max_gradcheck_numel=BIG),
]
make_tests(OPS, globals())


# ---- the numpy kernels against a naive loop -----------------------------------------------------
def naive_conv2d(x, w, bias, stride, padding, dilation, groups):
    """The definition, one output element at a time."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    top, bottom, left, right = padding
    xp = np.zeros((n, c, h + top + bottom, wd + left + right))
    xp[:, :, top:top + h, left:left + wd] = x
    ho = (xp.shape[2] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    wo = (xp.shape[3] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    y = np.zeros((n, o, ho, wo))
    og = o // groups
    for b in range(n):
        for oc in range(o):
            g = oc // og
            for r in range(ho):
                for s in range(wo):
                    r0, s0 = r * stride[0], s * stride[1]
                    patch = xp[b, g * cg:(g + 1) * cg,
                               r0:r0 + dilation[0] * (kh - 1) + 1:dilation[0],
                               s0:s0 + dilation[1] * (kw - 1) + 1:dilation[1]]
                    y[b, oc, r, s] = (patch * w[oc]).sum() + (0 if bias is None else bias[oc])
    return y


@st.composite
def kernel_cases(draw):
    groups = draw(st.integers(1, 3))
    n, cg, og = draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.integers(1, 2))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = tuple(draw(st.integers(0, 2)) for _ in range(4))
    h = draw(st.integers(max(1, dilation[0] * (kh - 1) + 1 - padding[0] - padding[1]), 7))
    w = draw(st.integers(max(1, dilation[1] * (kw - 1) + 1 - padding[2] - padding[3]), 7))
    return ((n, cg * groups, h, w), (og * groups, cg, kh, kw), stride, padding, dilation,
            groups, draw(st.booleans()), draw(st.integers(0, 2 ** 31)))


@given(kernel_cases())
def test_numpy_conv2d_matches_naive_loop(case):
    """conv2d equals the definition; its two backward kernels are its adjoints:
    <conv(x, w), gy> = <x, backward_input(gy, w)> = <w, backward_weight(gy, x)>."""
    x_shape, w_shape, stride, padding, dilation, groups, with_bias, seed = case
    rng = np.random.default_rng(seed)
    x, w = rng.standard_normal(x_shape), rng.standard_normal(w_shape)
    bias = rng.standard_normal(w_shape[0]) if with_bias else None
    y = nb.conv2d(x, w, bias, stride, padding, dilation, groups)
    np.testing.assert_allclose(y, naive_conv2d(x, w, bias, stride, padding, dilation, groups),
                               rtol=1e-12, atol=1e-12)
    gy = rng.standard_normal(y.shape)
    y0 = nb.conv2d(x, w, None, stride, padding, dilation, groups)
    gx = nb.conv2d_backward_input(gy, w, x_shape, stride, padding, dilation, groups)
    gw = nb.conv2d_backward_weight(gy, x, w_shape, stride, padding, dilation, groups)
    assert gx.shape == x_shape and gw.shape == w_shape
    assert math.isclose((y0 * gy).sum(), (x * gx).sum(), rel_tol=1e-10, abs_tol=1e-10)
    assert math.isclose((y0 * gy).sum(), (w * gw).sum(), rel_tol=1e-10, abs_tol=1e-10)


def test_kernels_are_selected_through_the_backend():
    for name in ("conv2d", "conv2d_backward_input", "conv2d_backward_weight", "max_pool2d",
                 "max_pool2d_backward", "adaptive_max_pool2d", "avg_pool2d",
                 "avg_pool2d_backward"):
        assert name in backend.KERNELS
        assert callable(getattr(backend, name))


def test_float32_stays_float32():
    x = mte.randn(1, 2, 5, 5)
    assert F.conv2d(x, mte.randn(3, 2, 3, 3)).dtype == mte.float32
    assert F.max_pool2d(x, 2, return_indices=True)[1].dtype == mte.int64
    assert F.avg_pool2d(x, 2).dtype == mte.float32


# ---- initialisation, names, repr ----------------------------------------------------------------
def test_default_init_bounds_and_spread():
    mte.manual_seed(0)
    m = nn.Conv2d(8, 64, 3)
    bound = 1 / math.sqrt(8 * 9)
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.05 * bound    # U(-a, a): std a/sqrt(3)
    assert abs(w.mean()) < 0.05 * bound
    t = nn.ConvTranspose2d(4, 6, 3, groups=2)                       # fan_in = 6/2 * 9
    assert t.weight.shape == (4, 3, 3, 3)
    assert np.abs(t.weight.detach().numpy()).max() <= 1 / math.sqrt(27)
    mte.manual_seed(1)
    a = nn.Conv1d(2, 3, 3).weight.detach().numpy()
    mte.manual_seed(1)
    assert np.array_equal(a, nn.Conv1d(2, 3, 3).weight.detach().numpy())
    assert nn.Conv2d(2, 3, 3, dtype=mte.float64).weight.dtype == mte.float64


def test_parameter_names_match_torch():
    torch = import_torch()
    pairs = [(nn.Conv2d(3, 4, 3), torch.nn.Conv2d(3, 4, 3)),
             (nn.Conv1d(3, 4, 3, bias=False), torch.nn.Conv1d(3, 4, 3, bias=False)),
             (nn.ConvTranspose2d(4, 6, 3, groups=2), torch.nn.ConvTranspose2d(4, 6, 3, groups=2))]
    for ours, theirs in pairs:
        assert {k: tuple(v.shape) for k, v in ours.state_dict().items()} == \
            {k: tuple(v.shape) for k, v in theirs.state_dict().items()}


REPRS = [
    "Conv2d(3, 16, 3, padding=1)",
    "Conv2d(3, 16, (3, 2), padding='same', bias=False, padding_mode='reflect', dilation=2)",
    "Conv1d(2, 4, 3, stride=2, groups=2)",
    "ConvTranspose2d(4, 6, 3, stride=2, output_padding=1, groups=2)",
    "MaxPool2d(2)", "MaxPool2d((2, 3), stride=1, padding=1, return_indices=True)",
    "MaxPool1d(3)", "AvgPool2d(3, 2, 1, ceil_mode=True)", "AvgPool1d(2)",
    "AdaptiveAvgPool2d((3, None))", "AdaptiveMaxPool2d(3, return_indices=True)",
    "AdaptiveAvgPool1d(3)",
]


@pytest.mark.parametrize("expr", REPRS)
def test_repr_matches_torch(expr):
    torch = import_torch()
    assert repr(eval("nn." + expr)) == repr(eval("torch.nn." + expr))


# ---- errors: clear, naming the layer and the shapes, nothing changed ----------------------------
def _raises(fn, x, exc, *fragments):
    before, version = x.numpy().copy(), x._version
    with pytest.raises(exc) as info:
        fn(x)
    for f in fragments:
        assert f in str(info.value), f"{f!r} not in {info.value}"
    assert np.array_equal(x.numpy(), before) and x._version == version


def test_conv_errors():
    m = nn.Conv2d(3, 16, 3)
    w0 = m.weight.detach().numpy().copy()
    _raises(m, mte.randn(1, 4, 8, 8), RuntimeError, "Conv2d", "3 channels", "16x3x3x3",
            "(1, 4, 8, 8)")
    _raises(m, mte.randn(8, 8), RuntimeError, "Conv2d", "4-D", "(8, 8)")
    _raises(m, mte.randn(1, 3, 2, 2), RuntimeError, "Conv2d", "kernel 3x3", "padded input 2x2",
            "(1, 3, 2, 2)")
    _raises(nn.Conv2d(3, 4, 3, padding=1, padding_mode="reflect"), mte.randn(1, 4, 8, 8),
            RuntimeError, "Conv2d", "(1, 4, 8, 8)")
    _raises(nn.Conv1d(2, 4, 3), mte.randn(2, 3, 8), RuntimeError, "Conv1d", "2 channels")
    _raises(nn.ConvTranspose2d(4, 2, 3), mte.randn(1, 3, 4, 4), RuntimeError, "ConvTranspose2d",
            "4 channels", "(1, 3, 4, 4)")
    _raises(lambda x: F.conv2d(x, mte.randn(16, 3, 3, 3), groups=2), mte.randn(1, 4, 8, 8),
            RuntimeError, "conv2d", "6 channels", "groups=2")
    _raises(lambda x: F.conv2d(x, mte.randn(3, 2, 3, 3), groups=2), mte.randn(1, 4, 8, 8),
            RuntimeError, "conv2d", "not divisible by groups=2")
    _raises(lambda x: F.conv2d(x, mte.randn(4, 3, 3, 3), stride=2, padding="same"),
            mte.randn(1, 3, 8, 8), RuntimeError, "'same'", "strided")
    _raises(lambda x: F.conv2d(x, mte.randn(4, 3, 3, 3)), mte.randn(1, 3, 8, 8).double(),
            RuntimeError, "conv2d", "float64", "float32")
    assert np.array_equal(m.weight.detach().numpy(), w0) and m.weight.grad is None
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        nn.Conv2d(4, 3, 3, groups=2)
    with pytest.raises(ValueError, match="padding_mode"):
        nn.Conv2d(3, 4, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="padding string"):
        nn.Conv2d(3, 4, 3, padding="full")
    with pytest.raises(ValueError, match="valid sizes range from"):
        nn.ConvTranspose2d(3, 2, 3, stride=2)(mte.randn(1, 3, 4, 4), output_size=(12, 12))


def test_pool_errors():
    _raises(nn.MaxPool2d(2, padding=2), mte.randn(1, 1, 4, 4), RuntimeError, "MaxPool2d",
            "half of kernel_size")
    _raises(nn.MaxPool2d(3), mte.randn(1, 1, 2, 2), RuntimeError, "MaxPool2d", "(1, 1, 2, 2)",
            "too small")
    _raises(nn.AvgPool2d(2), mte.randn(4, 4), RuntimeError, "AvgPool2d", "(4, 4)")
    _raises(nn.MaxPool1d(2), mte.randn(1, 2, 3, 4), RuntimeError, "MaxPool1d", "(1, 2, 3, 4)")
    _raises(nn.AdaptiveAvgPool2d((2, 0)), mte.randn(1, 1, 4, 4), RuntimeError,
            "AdaptiveAvgPool2d", "output_size")
    _raises(lambda x: F.avg_pool2d(x, 2, divisor_override=0), mte.randn(1, 1, 4, 4),
            RuntimeError, "avg_pool2d", "divisor_override")


# ---- a small CNN trains end to end --------------------------------------------------------------
def test_small_cnn_gradients_match_torch():
    torch = import_torch()
    torch.manual_seed(0)

    def build(nn):
        return nn.Sequential(nn.Conv2d(1, 4, 3), nn.MaxPool2d(2), nn.Conv2d(4, 6, 3, padding=1),
                             nn.AvgPool2d(2), nn.AdaptiveAvgPool2d(1))
    theirs = build(torch.nn)
    ours = build(nn)
    ours.load_state_dict({k: mte.tensor(v.detach().numpy()) for k, v in
                          theirs.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((2, 1, 12, 12)).astype(np.float32)
    ours(mte.tensor(x)).sum().backward()
    theirs(torch.tensor(x)).sum().backward()
    for (name, p), tp in zip(ours.named_parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-5, atol=1e-5,
                                   err_msg=name)
