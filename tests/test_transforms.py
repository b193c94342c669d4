"""minitorch_edge.data.transforms against torch (where torch has the operation: normalize,
crop, pad, flip, interpolate, grid_sample for rotation) and numpy references otherwise."""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import minitorch_edge as mt
from minitorch_edge.data import transforms as T


def _torch():
    return pytest.importorskip("torch")


def _image(c, h, w, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).random((c, h, w)).astype(dtype)


def _rng_after(seed):
    """The numpy Generator that the default generator is after manual_seed(seed)."""
    return np.random.Generator(np.random.PCG64(seed))


# ---- ToTensor / Normalize -----------------------------------------------------------------------
def test_to_tensor_uint8_hwc_and_2d():
    torch = _torch()
    arr = np.random.default_rng(0).integers(0, 256, (5, 7, 3)).astype(np.uint8)
    out = T.ToTensor()(arr)
    ref = torch.from_numpy(arr).permute(2, 0, 1).float().div(255)
    assert out.shape == (3, 5, 7) and out.dtype == mt.float32
    np.testing.assert_array_equal(out.numpy(), ref.numpy())
    gray = T.ToTensor()(arr[:, :, 0])
    assert gray.shape == (1, 5, 7)
    np.testing.assert_array_equal(gray.numpy()[0], ref.numpy()[0])
    floats = T.ToTensor()(np.full((2, 2, 1), 3.5))           # not uint8: values and dtype kept
    assert floats.dtype == mt.float64 and floats.shape == (1, 2, 2) and floats[0, 0, 0] == 3.5

    class PILLike:                                            # anything with __array__
        def __array__(self, dtype=None, copy=None):
            return arr
    np.testing.assert_array_equal(T.ToTensor()(PILLike()).numpy(), ref.numpy())
    with pytest.raises(TypeError, match="Tensor"):
        T.ToTensor()(mt.zeros(3, 2, 2))
    with pytest.raises(ValueError, match=r"\(H, W\) or \(H, W, C\)"):
        T.ToTensor()(np.zeros((1, 2, 2, 3), np.uint8))


def test_normalize_matches_torch():
    torch = _torch()
    x = _image(3, 4, 5)
    mean, std = (0.5, 0.4, 0.3), (0.2, 0.25, 0.5)
    out = T.Normalize(mean, std)(mt.from_numpy(x.copy()))
    ref = (torch.from_numpy(x) - torch.tensor(mean).view(-1, 1, 1)) / torch.tensor(std).view(
        -1, 1, 1)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-6, atol=1e-7)
    batch = mt.from_numpy(np.stack([x, x]))
    np.testing.assert_allclose(T.Normalize(mean, std)(batch).numpy()[1], ref.numpy(), rtol=1e-6)
    t = mt.from_numpy(x.copy())
    assert T.Normalize(mean, std, inplace=True)(t) is t
    np.testing.assert_allclose(t.numpy(), ref.numpy(), rtol=1e-6, atol=1e-7)
    g = mt.from_numpy(x.copy()).requires_grad_()
    T.Normalize(mean, std)(g).sum().backward()              # keeps the autograd graph
    np.testing.assert_allclose(g.grad.numpy()[:, 0, 0], 1 / np.array(std), rtol=1e-6)


def test_normalize_errors():
    with pytest.raises(TypeError, match="float tensor"):
        T.Normalize((0,), (1,))(mt.zeros(1, 2, 2, dtype=mt.int64))
    with pytest.raises(ValueError, match=r"\(\.\.\., C, H, W\)"):
        T.Normalize((0,), (1,))(mt.zeros(2, 2))
    with pytest.raises(ValueError, match="division by zero"):
        T.Normalize((0,), (0,))(mt.zeros(1, 2, 2))
    with pytest.raises(ValueError, match="2 values but the image has 3 channels"):
        T.Normalize((0, 0), (1, 1))(mt.zeros(3, 2, 2))
    with pytest.raises(TypeError, match="ToTensor"):
        T.Normalize((0,), (1,))(np.zeros((2, 2, 1)))


# ---- crops, pad, flips --------------------------------------------------------------------------
@given(h=st.integers(1, 9), w=st.integers(1, 9), th=st.integers(1, 12), tw=st.integers(1, 12))
def test_center_crop_matches_torchvision_rule(h, w, th, tw):
    torch = _torch()
    x = torch.arange(2 * h * w, dtype=torch.float32).reshape(2, h, w)
    if th > h or tw > w:        # torchvision pads with zeros first (extra pixel right/bottom)
        pl, pt = (tw - w) // 2 if tw > w else 0, (th - h) // 2 if th > h else 0
        pr, pb = (tw - w + 1) // 2 if tw > w else 0, (th - h + 1) // 2 if th > h else 0
        x = torch.nn.functional.pad(x, (pl, pr, pt, pb))
    hh, ww = x.shape[-2:]
    top, left = int(round((hh - th) / 2.0)), int(round((ww - tw) / 2.0))
    ref = x[..., top:top + th, left:left + tw]
    src = mt.arange(2 * h * w, dtype=mt.float32).reshape(2, h, w)
    np.testing.assert_array_equal(T.CenterCrop((th, tw))(src).numpy(), ref.numpy())


@pytest.mark.parametrize("mode,torch_mode", [("constant", "constant"), ("edge", "replicate"),
                                             ("reflect", "reflect"), ("symmetric", None)])
def test_pad_modes_match_torch(mode, torch_mode):
    torch = _torch()
    x = _image(2, 5, 6)
    out = T.Pad((1, 2, 3, 4), fill=0.5, padding_mode=mode)(mt.from_numpy(x)).numpy()
    if torch_mode is None:
        ref = np.pad(x, [(0, 0), (2, 4), (1, 3)], mode="symmetric")
    else:
        kw = {"value": 0.5} if mode == "constant" else {}
        ref = torch.nn.functional.pad(torch.from_numpy(x)[None], (1, 3, 2, 4), mode=torch_mode,
                                      **kw)[0].numpy()
    np.testing.assert_array_equal(out, ref)
    two = T.Pad((1, 2))(mt.from_numpy(x)).numpy()        # (left/right, top/bottom)
    assert two.shape == (2, 9, 8)
    per_channel = T.Pad(1, fill=(7, 9))(mt.from_numpy(x)).numpy()
    assert per_channel[0, 0, 0] == 7 and per_channel[1, -1, -1] == 9


@pytest.mark.parametrize("padding_mode", ["constant", "edge", "reflect"])
def test_random_crop_positions_follow_the_seed(padding_mode):
    torch = _torch()
    x = _image(3, 8, 10)
    crop = T.RandomCrop((6, 7), padding=2, fill=0.25, padding_mode=padding_mode)
    mt.manual_seed(11)
    outs = [crop(mt.from_numpy(x)).numpy() for _ in range(5)]
    rng = _rng_after(11)
    tmode = {"constant": "constant", "edge": "replicate", "reflect": "reflect"}[padding_mode]
    kw = {"value": 0.25} if padding_mode == "constant" else {}
    padded = torch.nn.functional.pad(torch.from_numpy(x)[None], (2, 2, 2, 2), mode=tmode,
                                     **kw)[0]
    for out in outs:
        i, j = int(rng.integers(0, 12 - 6 + 1)), int(rng.integers(0, 14 - 7 + 1))
        np.testing.assert_array_equal(out, padded[:, i:i + 6, j:j + 7].numpy())
    assert len({o.tobytes() for o in outs}) > 1


def test_random_crop_pad_if_needed_and_errors():
    x = mt.ones(1, 3, 4)
    out = T.RandomCrop((5, 6), pad_if_needed=True)(x)
    assert out.shape == (1, 5, 6) and out.numpy().sum() == 12   # all of the image kept
    with pytest.raises(ValueError, match="larger than input image size"):
        T.RandomCrop(5)(x)
    same = T.RandomCrop((3, 4))(x)
    np.testing.assert_array_equal(same.numpy(), x.numpy())


def test_flips_match_torch_and_p():
    torch = _torch()
    x = _image(3, 4, 5)
    h = T.RandomHorizontalFlip(p=1.0)(mt.from_numpy(x)).numpy()
    v = T.RandomVerticalFlip(p=1.0)(mt.from_numpy(x)).numpy()
    np.testing.assert_array_equal(h, torch.flip(torch.from_numpy(x), [-1]).numpy())
    np.testing.assert_array_equal(v, torch.flip(torch.from_numpy(x), [-2]).numpy())
    np.testing.assert_array_equal(T.RandomHorizontalFlip(p=0.0)(mt.from_numpy(x)).numpy(), x)
    mt.manual_seed(0)
    flips = [T.RandomHorizontalFlip()(mt.from_numpy(x)).numpy()[0, 0, 0] != x[0, 0, 0]
             for _ in range(400)]
    expected = _rng_after(0).random(400) < 0.5
    assert flips == list(expected) and 160 < sum(flips) < 240


def test_numpy_hwc_images_keep_their_kind():
    arr = np.random.default_rng(0).integers(0, 256, (6, 8, 3)).astype(np.uint8)
    out = T.Compose([T.RandomHorizontalFlip(1.0), T.CenterCrop((4, 5)), T.Pad(1)])(arr)
    assert isinstance(out, np.ndarray) and out.shape == (6, 7, 3) and out.dtype == np.uint8
    np.testing.assert_array_equal(out[1:-1, 1:-1], arr[:, ::-1][1:5, 2:7])
    via_tensor = T.ToTensor()(out)
    np.testing.assert_array_equal(via_tensor.numpy(), out.transpose(2, 0, 1) / np.float32(255))


# ---- rotation -----------------------------------------------------------------------------------
def torchvision_rotate(torch, img, angle, mode, fill):
    """torchvision's tensor rotate rebuilt from torch ops: inverse-rotation grid in normalized
    coordinates, grid_sample(align_corners=False), a ones channel for the fill mask."""
    c, h, w = img.shape
    r = math.radians(-angle)
    theta = torch.tensor([math.cos(r), math.sin(r), 0.0, -math.sin(r), math.cos(r), 0.0],
                         dtype=torch.float32).reshape(1, 2, 3)
    base = torch.empty(1, h, w, 3)
    base[..., 0].copy_(torch.linspace(-w * 0.5 + 0.5, w * 0.5 - 0.5, steps=w))
    base[..., 1].copy_(torch.linspace(-h * 0.5 + 0.5, h * 0.5 - 0.5, steps=h).unsqueeze(-1))
    base[..., 2].fill_(1)
    grid = base.view(1, h * w, 3).bmm(theta.transpose(1, 2) / torch.tensor([0.5 * w, 0.5 * h]))
    x = torch.cat([img[None], torch.ones(1, 1, h, w)], 1)
    y = torch.nn.functional.grid_sample(x, grid.view(1, h, w, 2), mode=mode,
                                        padding_mode="zeros", align_corners=False)
    mask, y = y[:, -1:].expand(1, c, h, w), y[:, :-1]
    f = torch.full_like(y, fill)
    y = torch.where(mask < 0.5, f, y) if mode == "nearest" else y * mask + (1 - mask) * f
    return y[0]


@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
@pytest.mark.parametrize("shape", [(3, 7, 7), (1, 8, 11), (2, 16, 9)])
def test_rotation_matches_torch_grid_sample(mode, shape):
    torch = _torch()
    x = _image(*shape, seed=sum(shape))
    for angle in (17.3, -8.1, 3.0, 44.0):
        mt.manual_seed(0)
        rot = T.RandomRotation((angle, angle), interpolation=mode, fill=0.25)
        out = rot(mt.from_numpy(x)).numpy()
        ref = torchvision_rotate(torch, torch.from_numpy(x), angle, mode, 0.25).numpy()
        np.testing.assert_allclose(out, ref, atol=2e-6)


def test_rotation_references_and_seed():
    x = _image(2, 7, 7)
    quarter = T.RandomRotation((90, 90))(mt.from_numpy(x)).numpy()
    np.testing.assert_array_equal(quarter, np.rot90(x, 1, axes=(1, 2)))    # counter-clockwise
    np.testing.assert_array_equal(T.RandomRotation(0)(mt.from_numpy(x)).numpy(), x)
    u8 = (x * 255).astype(np.uint8)
    out = T.RandomRotation((10, 10), interpolation="bilinear")(mt.from_numpy(u8))
    assert out.dtype == mt.uint8
    ref = T.RandomRotation((10, 10), interpolation="bilinear")(mt.from_numpy(u8.astype(
        np.float32))).numpy()
    np.testing.assert_array_equal(out.numpy(), np.rint(ref).astype(np.uint8))
    mt.manual_seed(4)
    a = [T.RandomRotation(20, interpolation="bilinear")(mt.from_numpy(x)).numpy()
         for _ in range(3)]
    mt.manual_seed(4)
    b = [T.RandomRotation(20, interpolation="bilinear")(mt.from_numpy(x)).numpy()
         for _ in range(3)]
    assert all(np.array_equal(p, q) for p, q in zip(a, b)) and not np.array_equal(a[0], a[1])
    with pytest.raises(ValueError, match="must be positive"):
        T.RandomRotation(-3)
    with pytest.raises(NotImplementedError, match="expand"):
        T.RandomRotation(3, expand=True)
    with pytest.raises(ValueError, match="interpolation"):
        T.RandomRotation(3, interpolation="bicubic")


# ---- resize -------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
def test_resize_matches_torch_interpolate(mode):
    torch = _torch()
    x = _image(3, 10, 6)
    kw = {"align_corners": False} if mode == "bilinear" else {}
    for size, expect in [((5, 9), (5, 9)), (12, (20, 12)), ([3], (5, 3))]:
        out = T.Resize(size, interpolation=mode)(mt.from_numpy(x)).numpy()
        ref = torch.nn.functional.interpolate(torch.from_numpy(x)[None], size=expect, mode=mode,
                                              **kw)[0].numpy()
        assert out.shape == (3,) + expect
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    capped = T.Resize(8, max_size=12, interpolation=mode)(mt.from_numpy(x))
    assert capped.shape == (3, 12, 7)                     # (8, 13) capped to a long side of 12
    u8 = (x * 255).astype(np.uint8)
    out = T.Resize((7, 4), interpolation=mode)(mt.from_numpy(u8))
    ref = torch.nn.functional.interpolate(torch.from_numpy(u8).float()[None], size=(7, 4),
                                          mode=mode, **kw)[0]
    assert out.dtype == mt.uint8
    np.testing.assert_array_equal(out.numpy(), torch.round(ref).to(torch.uint8).numpy())
    hwc = T.Resize((4, 3), interpolation=mode)(u8.transpose(1, 2, 0))
    assert hwc.shape == (4, 3, 3) and hwc.dtype == np.uint8


def test_resize_errors():
    with pytest.raises(ValueError, match="max_size"):
        T.Resize((3, 4), max_size=10)
    with pytest.raises(NotImplementedError, match="antialias"):
        T.Resize(3, antialias=True)
    with pytest.raises(ValueError, match="interpolation"):
        T.Resize(3, interpolation="lanczos")


# ---- Compose / Lambda ---------------------------------------------------------------------------
def test_compose_lambda_and_repr():
    pipeline = T.Compose([T.ToTensor(), T.Lambda(lambda t: t * 2),
                          T.Normalize((0.5,), (0.5,))])
    arr = np.full((2, 2), 255, np.uint8)
    np.testing.assert_allclose(pipeline(arr).numpy(), np.full((1, 2, 2), 3.0))
    text = repr(pipeline)
    assert text.startswith("Compose(\n    ToTensor()\n    Lambda()") and "Normalize" in text
    with pytest.raises(TypeError, match="callable"):
        T.Lambda(3)


def test_augmentation_pipeline_is_reproducible():
    aug = T.Compose([T.RandomCrop(6, padding=1), T.RandomHorizontalFlip(),
                     T.RandomRotation(10, interpolation="bilinear")])
    x = mt.from_numpy(_image(1, 6, 6))
    mt.manual_seed(123)
    a = [aug(x).numpy() for _ in range(4)]
    mt.manual_seed(123)
    b = [aug(x).numpy() for _ in range(4)]
    assert all(np.array_equal(p, q) for p, q in zip(a, b))
    assert len({o.tobytes() for o in a}) == 4
