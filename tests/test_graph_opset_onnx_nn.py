"""The ONNX import ops of graph/opset_onnx_nn.py and opset_onnx_resize.py against
onnx.reference.ReferenceEvaluator and against torch (conv_transpose, interpolate, group_norm,
instance_norm, local_response_norm, normalize, pixel_shuffle), one node each, over several
shapes and attributes; and their infer rules' errors."""
import numpy as np
import pytest
from harness import import_torch
from hypothesis import given
from hypothesis import strategies as st
from onnx_op_harness import check, onnxruntime, ours, reference

from minitorch_edge.graph import GraphError

torch = import_torch()
F = torch.nn.functional
RNG = np.random.default_rng(1)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def t(x):
    return torch.from_numpy(np.ascontiguousarray(x))


def close(got, want, tol=2e-5):
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, np.abs(want).max()))


# ---- ConvTranspose ----------------------------------------------------------------------------
# (x shape, w shape, attrs, torch kwargs or None when torch has no such form)
DECONV = [
    ((1, 2, 5), (2, 3, 3), {}, {}),
    ((2, 3, 4, 5), (3, 2, 3, 3), {"strides": [2, 2]}, {"stride": 2}),
    ((1, 4, 5, 5), (4, 3, 3, 2), {"group": 2, "strides": [2, 1], "pads": [1, 0, 1, 1]}, None),
    ((1, 4, 5, 5), (4, 3, 3, 3), {"group": 2, "strides": [2, 2], "pads": [1, 1, 1, 1],
                                  "output_padding": [1, 1]},
     {"groups": 2, "stride": 2, "padding": 1, "output_padding": 1}),
    ((1, 2, 4, 4), (2, 2, 3, 3), {"dilations": [2, 2], "strides": [2, 2]},
     {"dilation": 2, "stride": 2}),
    ((1, 2, 4, 6), (2, 1, 3, 3), {"strides": [2, 2], "auto_pad": "SAME_UPPER"}, None),
    ((1, 2, 4, 6), (2, 1, 4, 4), {"strides": [2, 2], "auto_pad": "SAME_LOWER"}, None),
    ((1, 2, 3, 3), (2, 2, 3, 3), {"strides": [3, 2], "output_shape": [10, 8]}, None),
    ((1, 2, 3, 3, 3), (2, 2, 2, 2, 2), {"strides": [2, 2, 2]}, {"stride": 2}),
]


@pytest.mark.parametrize("row", DECONV, ids=[str(r[2]) for r in DECONV])
def test_conv_transpose(row):
    x_shape, w_shape, attrs, torch_kwargs = row
    x, w, b = f32(*x_shape), f32(*w_shape), f32(w_shape[1] * attrs.get("group", 1))
    if attrs.get("group", 1) == 1:   # ONNX 1.23's reference ConvTranspose mishandles groups
        y = check("ConvTranspose", [x, w, b], attrs, constant=(1, 2), rtol=1e-4, atol=1e-5)[0]
    else:
        y = ours("ConvTranspose", [x, w, b], attrs, constant=(1, 2))[0]
    fn = {3: F.conv_transpose1d, 4: F.conv_transpose2d, 5: F.conv_transpose3d}[len(x_shape)]
    if torch_kwargs is not None:
        close(y, fn(t(x), t(w), t(b), **torch_kwargs).numpy(), 1e-4)
    elif "pads" in attrs:            # asymmetric pads: torch's unpadded result, cropped
        full = fn(t(x), t(w), t(b), stride=attrs["strides"], groups=attrs["group"]).numpy()
        (pt, pl, pb, pr), (h, wd) = attrs["pads"], full.shape[2:]
        close(y, full[:, :, pt:h - pb, pl:wd - pr], 1e-4)


@given(st.data())
def test_conv_transpose_random_geometry_against_torch(data):
    group = data.draw(st.sampled_from([1, 2]))
    c, m = group * data.draw(st.integers(1, 2)), group * data.draw(st.integers(1, 3))
    k = data.draw(st.tuples(st.integers(1, 4), st.integers(1, 4)))
    s = data.draw(st.tuples(st.integers(1, 3), st.integers(1, 3)))
    d = data.draw(st.tuples(st.integers(1, 2), st.integers(1, 2)))
    p = tuple(data.draw(st.integers(0, (kk - 1) * dd // 2 + 0)) for kk, dd in zip(k, d))
    op = tuple(data.draw(st.integers(0, max(ss, dd) - 1)) for ss, dd in zip(s, d))
    h, w = data.draw(st.integers(1, 5)), data.draw(st.integers(1, 5))
    x, wt, b = f32(2, c, h, w), f32(c, m // group, *k), f32(m)
    attrs = {"group": group, "strides": list(s), "dilations": list(d), "pads": list(p + p),
             "output_padding": list(op)}
    want = F.conv_transpose2d(t(x), t(wt), t(b), stride=s, padding=p, output_padding=op,
                              groups=group, dilation=d).numpy()
    close(ours("ConvTranspose", [x, wt, b], attrs, constant=(1, 2))[0], want, 1e-4)


MODES = [("nearest", "asymmetric"), ("nearest", "half_pixel"), ("linear", "half_pixel"),
         ("linear", "align_corners"), ("linear", "pytorch_half_pixel"), ("cubic", "half_pixel"),
         ("cubic", "asymmetric")]


@given(st.data())
def test_resize_random_against_reference(data):
    mode, coords = data.draw(st.sampled_from(MODES))
    shape = (1, 2) + tuple(data.draw(st.integers(1, 6)) for _ in range(2))
    by_scale = data.draw(st.booleans())
    attrs = {"mode": mode, "coordinate_transformation_mode": coords}
    if by_scale:
        scales = _scales(1, 1, *[data.draw(st.sampled_from([0.5, 0.75, 1.0, 1.5, 2.0, 3.0]))
                                 for _ in range(2)])
        sizes = None
    else:
        scales, sizes = None, _sizes(*shape[:2], *[data.draw(st.integers(1, 9))
                                                   for _ in range(2)])
    x = f32(*shape)
    check("Resize", [x, None, scales, sizes], attrs, constant=(2, 3), rtol=1e-5, atol=1e-5)


def test_conv_transpose_without_bias():
    check("ConvTranspose", [f32(1, 3, 4, 4), f32(3, 5, 2, 2), None], {"strides": [2, 2]},
          constant=(1,), rtol=1e-4, atol=1e-5)


# ---- Resize -----------------------------------------------------------------------------------
def _scales(*s):
    return np.array(s, np.float32)


def _sizes(*s):
    return np.array(s, np.int64)


EMPTY = np.zeros(0, np.float32)
# (attrs, scales, sizes, x shape, opset)
RESIZE = [
    ({"mode": "nearest"}, _scales(1, 1, 2, 3), None, (1, 2, 3, 4), 17),
    ({"mode": "nearest", "nearest_mode": "floor",
      "coordinate_transformation_mode": "asymmetric"}, _scales(1, 1, 0.6, 1.7), None,
     (2, 1, 5, 4), 17),
    ({"mode": "nearest", "nearest_mode": "round_prefer_ceil",
      "coordinate_transformation_mode": "align_corners"}, None, _sizes(1, 2, 7, 3),
     (1, 2, 4, 5), 17),
    ({"mode": "nearest", "nearest_mode": "ceil"}, _scales(1, 1, 2.5, 0.5), None,
     (1, 1, 4, 6), 17),
    ({"mode": "linear"}, _scales(1, 1, 2, 2), None, (1, 2, 3, 4), 17),
    ({"mode": "linear", "coordinate_transformation_mode": "align_corners"}, None,
     _sizes(1, 1, 7, 9), (1, 1, 4, 5), 17),
    ({"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"}, None,
     _sizes(2, 1, 1, 5), (2, 1, 4, 3), 17),
    ({"mode": "linear", "coordinate_transformation_mode": "asymmetric"},
     _scales(1, 1, 0.5, 1.5), None, (1, 2, 6, 4), 17),
    ({"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric"},
     _scales(1, 1, 1.7, 0.6), None, (1, 1, 5, 5), 19),
    ({"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize",
      "extrapolation_value": 7.0}, None, _sizes(1, 1, 5, 4), (1, 1, 4, 4), 17),
    ({"mode": "cubic"}, _scales(1, 1, 2, 1.5), None, (1, 2, 4, 4), 17),
    ({"mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": 1},
     _scales(1, 1, 0.8, 1.8), None, (1, 1, 5, 5), 17),
    ({"mode": "cubic", "coordinate_transformation_mode": "align_corners"}, None,
     _sizes(1, 1, 8, 3), (1, 1, 4, 5), 17),
    ({"mode": "linear", "antialias": 1}, _scales(1, 1, 0.5, 0.35), None, (1, 2, 8, 9), 18),
    ({"mode": "cubic", "antialias": 1}, None, _sizes(1, 1, 3, 5), (1, 1, 7, 9), 18),
    ({"mode": "linear", "axes": [2, 3]}, _scales(2, 0.5), None, (1, 2, 3, 4), 18),
    ({"mode": "nearest", "axes": [2], "keep_aspect_ratio_policy": "stretch"}, None,
     _sizes(7), (2, 3, 4), 18),
    ({"mode": "linear", "axes": [2, 3], "keep_aspect_ratio_policy": "not_larger"}, None,
     _sizes(6, 12), (1, 1, 4, 5), 18),
    ({"mode": "linear", "axes": [2, 3], "keep_aspect_ratio_policy": "not_smaller"}, None,
     _sizes(6, 12), (1, 1, 4, 5), 18),
    ({"mode": "linear"}, _scales(2, 3), None, (3, 4), 17),
    ({"mode": "linear"}, _scales(1, 1, 2, 2, 1.5), None, (1, 2, 2, 3, 4), 17),
]


@pytest.mark.parametrize("row", RESIZE, ids=[str(r[0]) for r in RESIZE])
def test_resize_against_reference(row):
    attrs, scales, sizes, shape, opset = row
    x = f32(*shape)
    roi = None
    if attrs.get("coordinate_transformation_mode") == "tf_crop_and_resize":
        roi = np.array([0, 0, 0.2, 0.1, 1, 1, 1.3, 0.8], np.float32)
    check("Resize", [x, roi, scales, sizes], attrs, constant=(1, 2, 3), opset=opset,
          rtol=1e-5, atol=1e-5)


def test_resize_int_input_rounds_and_saturates():
    x = RNG.integers(0, 256, (1, 1, 4, 4)).astype(np.uint8)
    check("Resize", [x, None, _scales(1, 1, 1.5, 2), None], {"mode": "cubic"},
          constant=(2,), atol=0)


TORCH_RESIZE = [
    ({"mode": "nearest", "nearest_mode": "floor", "coordinate_transformation_mode": "asymmetric"},
     {"mode": "nearest"}),
    ({"mode": "linear"}, {"mode": "bilinear", "align_corners": False}),
    ({"mode": "linear", "coordinate_transformation_mode": "align_corners"},
     {"mode": "bilinear", "align_corners": True}),
    ({"mode": "cubic"}, {"mode": "bicubic", "align_corners": False}),
    # torch's antialias drops the taps outside the input: ONNX's exclude_outside
    ({"mode": "linear", "antialias": 1, "exclude_outside": 1},
     {"mode": "bilinear", "antialias": True, "align_corners": False}),
]


@pytest.mark.parametrize("size", [(9, 6), (3, 4)])
@pytest.mark.parametrize("pair", TORCH_RESIZE, ids=[p[1]["mode"] + str(p[0]) for p in
                                                   TORCH_RESIZE])
def test_resize_against_torch_interpolate(pair, size):
    attrs, kwargs = pair
    if attrs.get("antialias") and size[0] > 6:
        pytest.skip("torch antialias applies to downsampling; covered by the smaller size")
    x = f32(2, 3, 6, 7)
    y = ours("Resize", [x, None, None, _sizes(2, 3, *size)], attrs, constant=(3,))[0]
    close(y, F.interpolate(t(x), size=size, **kwargs).numpy(), 1e-4)


# ---- normalizations, LRN, pooling, depth/space -----------------------------------------------
@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 4, 3, 3), (1, 2, 2, 3, 2)])
def test_instance_norm(shape):
    x, s, b = f32(*shape) * 3 + 1, f32(shape[1]), f32(shape[1])
    y = check("InstanceNormalization", [x, s, b], {"epsilon": 1e-3}, constant=(1, 2),
              rtol=1e-4, atol=1e-5)[0]
    close(y, F.instance_norm(t(x), weight=t(s), bias=t(b), eps=1e-3).numpy(), 1e-4)


@pytest.mark.parametrize("groups", [1, 2, 6])
def test_group_norm_per_channel_and_per_group(groups):
    x = f32(2, 6, 3, 4) * 2 - 1
    s, b = f32(6), f32(6)
    y = check("GroupNormalization", [x, s, b], {"num_groups": groups, "epsilon": 1e-4},
              constant=(1, 2), opset=21, rtol=1e-4, atol=1e-5)[0]
    close(y, F.group_norm(t(x), groups, t(s), t(b), eps=1e-4).numpy(), 1e-4)
    gs, gb = f32(groups), f32(groups)                         # opset 18: one per group
    y18 = ours("GroupNormalization", [x, gs, gb], {"num_groups": groups}, constant=(1, 2))[0]
    want = F.group_norm(t(x), groups, t(np.repeat(gs, 6 // groups)),
                        t(np.repeat(gb, 6 // groups)), eps=1e-5).numpy()
    close(y18, want, 1e-4)


@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_lrn_against_torch(size):
    # N != C on purpose: ONNX 1.23's reference LRN loops over dim 0 instead of the channels
    x = f32(2, 7, 3, 3)
    attrs = {"size": size, "alpha": 1e-2, "beta": 0.6, "bias": 2.0}
    y = ours("LRN", [x], attrs)[0]
    if size % 2:     # for an even size torch puts the extra channel before c, ONNX after it
        want = F.local_response_norm(t(x), size, alpha=1e-2, beta=0.6, k=2.0).numpy()
        close(y, want, 1e-5)
    sq = f32(5, 5, 2, 2)
    check("LRN", [sq], attrs, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("axis", [-1, 1])
def test_lp_normalization(p, axis):
    x = f32(3, 4, 5)
    x[0, 0] = 0
    y = ours("LpNormalization", [x], {"p": p, "axis": axis})[0]
    close(y, F.normalize(t(x), p=p, dim=axis, eps=1e-30).numpy(), 1e-5)
    if p == 2:       # ONNX 1.23's reference sums x^p, not |x|^p: only p = 2 matches it
        check("LpNormalization", [x], {"p": p, "axis": axis})


@pytest.mark.parametrize("axes", [None, [1], [0, 1, 2, 3], [2, 3]])
def test_mean_variance_normalization(axes):
    attrs = {} if axes is None else {"axes": axes}
    check("MeanVarianceNormalization", [f32(2, 3, 4, 5) * 2 + 3], attrs, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape", [(2, 3, 4), (1, 2, 3, 4), (1, 2, 2, 3, 2)])
def test_global_max_pool(shape):
    x = f32(*shape)
    y = ours("GlobalMaxPool", [x], {})[0]
    dims = tuple(range(2, len(shape)))
    np.testing.assert_array_equal(y, torch.amax(t(x), dim=dims, keepdim=True).numpy())
    if len(shape) == 4:              # ONNX 1.23's reference handles 4-D inputs only
        check("GlobalMaxPool", [x], {})


LP_POOL = [
    ({"kernel_shape": [3, 3]}, (1, 2, 5, 6)),
    ({"kernel_shape": [2, 3], "strides": [2, 1], "pads": [1, 0, 0, 1], "p": 1}, (2, 1, 5, 6)),
    ({"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER", "p": 3},
     (1, 1, 5, 6)),
    ({"kernel_shape": [2, 2], "dilations": [2, 1]}, (1, 2, 5, 5)),
    ({"kernel_shape": [3], "strides": [2], "ceil_mode": 1}, (1, 2, 8)),
]


@pytest.mark.parametrize("row", LP_POOL, ids=[str(r[0]) for r in LP_POOL])
def test_lp_pool(row):
    attrs, shape = row
    x = f32(*shape)
    # a ceil_mode window reaching past the input: ONNX's reference (and torch) scale its sum
    # by kernel size / elements inside; the spec and onnxruntime sum what is there, as we do
    oracle = onnxruntime if attrs.get("ceil_mode") else reference
    y = check("LpPool", [x], attrs, opset=18, rtol=1e-5, atol=1e-5, oracle=oracle)[0]
    if len(shape) == 4 and set(attrs) <= {"kernel_shape", "strides"}:
        want = F.lp_pool2d(t(np.abs(x)), 2, attrs["kernel_shape"],
                           attrs.get("strides", 1)).numpy()
        close(y, want, 1e-4)


@pytest.mark.parametrize("p", [1, 2, 3])
def test_global_lp_pool(p):       # ONNX's reference has no GlobalLpPool: onnxruntime's
    check("GlobalLpPool", [f32(2, 3, 4, 5)], {"p": p}, rtol=1e-5, atol=1e-5,
          oracle=onnxruntime)


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space_and_back(mode):
    x = f32(2, 12, 3, 4)
    y = check("DepthToSpace", [x], {"blocksize": 2, "mode": mode})[0]
    if mode == "CRD":
        np.testing.assert_array_equal(y, F.pixel_shuffle(t(x), 2).numpy())
        np.testing.assert_array_equal(ours("SpaceToDepth", [y], {"blocksize": 2,
                                                                 "mode": "CRD"})[0], x)
    else:
        z = check("SpaceToDepth", [y], {"blocksize": 2})[0]
        np.testing.assert_array_equal(z, x)


# ---- infer errors ---------------------------------------------------------------------------
BAD = [
    ("ConvTranspose", [f32(1, 3, 4, 4), f32(2, 2, 3, 3)], {}, (1,), "X has 3 channels"),
    ("ConvTranspose", [f32(1, 2, 4, 4), f32(2, 2, 3, 3)], {"kernel_shape": [2, 2]}, (1,),
     "kernel_shape \\[2, 2\\] != W's \\[3, 3\\]"),
    ("ConvTranspose", [f32(1, 2, 4, 4), f32(2, 2, 3, 3), f32(3)], {}, (1, 2),
     "B must have shape \\[2\\]"),
    ("ConvTranspose", [f32(1, 2, 2, 2), f32(2, 2, 2, 2)], {"pads": [2, 2, 2, 2]}, (1,),
     "the output would be empty"),
    ("Resize", [f32(1, 1, 2, 2), None, _scales(1, 1, 2, 2), _sizes(1, 1, 4, 4)], {}, (2, 3),
     "exactly one of scales and sizes"),
    ("Resize", [f32(1, 1, 2, 2), None, _scales(2, 2), None], {}, (2,), "has 2 entries for 4"),
    ("Resize", [f32(1, 1, 2, 2), None, _scales(1, 1, 2, 2), None], {}, (),
     "must be constants"),
    ("Resize", [f32(1, 1, 2, 2), None, _scales(1, 1, 2, 2), None], {"mode": "area"}, (2,),
     "mode 'area' is not one of"),
    ("Resize", [f32(1, 1, 2, 2), None, _scales(1, 1, 2, 2), None], {"antialias": 1}, (2,),
     "antialias applies to linear and cubic"),
    ("InstanceNormalization", [f32(2, 3, 4), f32(4), f32(3)], {}, (), "scale must have shape"),
    ("GroupNormalization", [f32(2, 6, 4), f32(6), f32(6)], {"num_groups": 4}, (),
     "num_groups=4 must divide the 6 channels"),
    ("GroupNormalization", [f32(2, 6, 4), f32(4), f32(6)], {"num_groups": 2}, (),
     "scale must have shape \\[6\\]"),
    ("LRN", [f32(2, 3, 4)], {}, (), "size must be a positive int"),
    ("LpNormalization", [f32(2, 3)], {"p": 3}, (), "p must be 1 or 2"),
    ("DepthToSpace", [f32(1, 6, 2, 2)], {"blocksize": 2}, (), "not a multiple of blocksize"),
    ("SpaceToDepth", [f32(1, 2, 3, 4)], {"blocksize": 2}, (), "multiples of blocksize 2"),
    ("GlobalMaxPool", [f32(2, 3)], {}, (), "rank >= 3"),
    ("LpPool", [f32(1, 2, 4, 4)], {"kernel_shape": [3]}, (), "need 2 entries each"),
    ("LpPool", [f32(1, 2, 2, 2)], {"kernel_shape": [3, 3]}, (), "the output would be empty"),
]


@pytest.mark.parametrize("row", BAD, ids=[r[0] + "-" + r[4][:30] for r in BAD])
def test_bad_inputs_raise_naming_op_and_shapes(row):
    op_type, inputs, attrs, constant, message = row
    with pytest.raises(GraphError, match=message) as info:
        ours(op_type, inputs, attrs, constant=constant)
    text = str(info.value)
    assert f"({op_type})" in text and "(inputs: " in text, text
