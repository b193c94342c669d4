"""minitorch_edge.video's numpy half: the synthetic streams are deterministic and their ground
truth accounts for every pixel that differs from the empty scene; connected components equal a
brute-force flood fill (labels and their raster numbering); boxes, merging, padding, the area
resampler and motion energy against direct computations."""
import collections

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minitorch_edge.video import (BackgroundModel, SyntheticCamera, box_iou, component_boxes,
                                  connected_components, crop_resize, dilate, find_regions,
                                  merge_boxes, motion_energy, pad_box)


# ---- streams -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def camera():
    return SyntheticCamera(7, num_frames=120)


def test_same_seed_same_stream_other_seed_other_stream(camera):
    again = SyntheticCamera(7, num_frames=120)
    assert np.array_equal(camera.frames, again.frames)
    assert camera.truth == again.truth
    other = SyntheticCamera(8, num_frames=120)
    assert not np.array_equal(camera.frames, other.frames)


def test_frames_shape_range_and_quiet_spells(camera):
    assert camera.frames.shape == (120, 72, 96) and camera.frames.dtype == np.float32
    assert camera.frames.min() >= 0 and camera.frames.max() <= 1
    busy = [bool(objs) for objs in camera.truth]
    assert not any(busy[:6])                    # the still start the background model needs
    assert 0.2 < np.mean(busy) < 0.95           # both still and busy frames
    kinds = collections.Counter(o.kind for objs in camera.truth for o in objs)
    assert kinds["digit"] > 0


def test_truth_covers_every_changed_pixel(camera):
    """Outside the true boxes a frame is the background plus noise (< 6 sigma); inside each box
    the object stands out from the background."""
    six_sigma = 6 * camera.noise
    for frame, objects in zip(camera.frames, camera.truth):
        diff = np.abs(frame - camera.background)
        outside = np.ones(frame.shape, bool)
        for obj in objects:
            r0, c0, r1, c1 = obj.box
            assert 0 <= r0 < r1 <= frame.shape[0] and 0 <= c0 < c1 <= frame.shape[1]
            outside[r0:r1, c0:c1] = False
            assert diff[r0:r1, c0:c1].max() > 0.2
            assert (obj.kind == "digit") == (0 <= obj.label <= 9)
        assert diff[outside].max() < six_sigma


def test_truth_moves_with_the_objects(camera):
    """An object present in consecutive frames moves a few pixels at most per frame."""
    for before, after in zip(camera.truth, camera.truth[1:]):
        for a in after:
            near = [b for b in before if b.label == a.label and box_iou(a.box, b.box) > 0.3]
            if not near:
                continue                        # a new object
            shift = min(max(abs(a.box[0] - b.box[0]), abs(a.box[1] - b.box[1])) for b in near)
            assert shift <= 3


@pytest.mark.parametrize("kwargs", [dict(num_frames=0), dict(height=10), dict(max_objects=0),
                                    dict(quiet_fraction=1.0), dict(digit_split="val")])
def test_bad_camera_arguments(kwargs):
    with pytest.raises(ValueError, match="SyntheticCamera|digit_images"):
        SyntheticCamera(0, **kwargs)


# ---- connected components --------------------------------------------------------------------
def flood_fill(mask, connectivity):
    """The reference: raster scan, BFS from each unlabelled foreground pixel."""
    h, w = mask.shape
    labels = np.zeros((h, w), np.int32)
    steps = [(-1, 0), (1, 0), (0, -1), (0, 1)]
    if connectivity == 8:
        steps += [(-1, -1), (-1, 1), (1, -1), (1, 1)]
    count = 0
    for r in range(h):
        for c in range(w):
            if mask[r, c] and not labels[r, c]:
                count += 1
                labels[r, c] = count
                queue = collections.deque([(r, c)])
                while queue:
                    y, x = queue.popleft()
                    for dy, dx in steps:
                        v, u = y + dy, x + dx
                        if 0 <= v < h and 0 <= u < w and mask[v, u] and not labels[v, u]:
                            labels[v, u] = count
                            queue.append((v, u))
    return labels, count


masks = st.tuples(st.integers(1, 14), st.integers(1, 14), st.floats(0.05, 0.8),
                  st.integers(0, 2 ** 31 - 1)).map(
    lambda a: np.random.default_rng(a[3]).random((a[0], a[1])) < a[2])


@settings(max_examples=60, deadline=None)
@given(mask=masks, connectivity=st.sampled_from([4, 8]))
def test_components_equal_a_flood_fill(mask, connectivity):
    labels, count = connected_components(mask, connectivity)
    ref_labels, ref_count = flood_fill(mask, connectivity)
    assert count == ref_count
    assert np.array_equal(labels, ref_labels)


def test_components_of_known_shapes():
    mask = np.zeros((6, 8), bool)
    mask[0, 0] = mask[1, 1] = True            # diagonal neighbours
    mask[3:5, 4:7] = True                      # a block
    mask[0, 7] = True
    assert connected_components(mask, 4)[1] == 4
    labels, count = connected_components(mask, 8)
    assert count == 3 and labels[1, 1] == labels[0, 0] == 1 and labels[0, 7] == 2
    assert connected_components(np.zeros((3, 3)))[1] == 0


def test_components_bad_input():
    with pytest.raises(ValueError, match="connected_components: mask must be 2-D"):
        connected_components(np.zeros(4))
    with pytest.raises(ValueError, match="connectivity must be 4 or 8"):
        connected_components(np.zeros((2, 2)), 6)


@settings(max_examples=30, deadline=None)
@given(mask=masks)
def test_boxes_and_areas_of_the_components(mask):
    labels, count = connected_components(mask)
    boxes = component_boxes(labels, count)
    assert len(boxes) == count
    for k, (box, area) in enumerate(boxes, start=1):
        rr, cc = np.nonzero(labels == k)
        assert box == (rr.min(), cc.min(), rr.max() + 1, cc.max() + 1)
        assert area == len(rr)
    assert [b for b, a in component_boxes(labels, count, min_area=3)] == \
        [b for b, a in boxes if a >= 3]


# ---- boxes, crops, motion -----------------------------------------------------------------
def test_merge_pad_iou():
    assert merge_boxes([(0, 0, 4, 4), (0, 5, 4, 9), (20, 20, 22, 22)], gap=1) == \
        [(0, 0, 4, 9), (20, 20, 22, 22)]
    assert merge_boxes([(0, 0, 4, 4), (0, 6, 4, 9)], gap=1) == [(0, 0, 4, 4), (0, 6, 4, 9)]
    assert pad_box((1, 1, 5, 5), 2, (6, 10)) == (0, 0, 6, 7)
    assert box_iou((0, 0, 4, 4), (0, 2, 4, 6)) == pytest.approx(8 / 24)
    assert box_iou((0, 0, 2, 2), (5, 5, 6, 6)) == 0.0


def test_crop_resize_inverts_a_block_upscale():
    rng = np.random.default_rng(0)
    small = rng.random((8, 8)).astype(np.float32)
    image = np.zeros((40, 50), np.float32)
    image[5:29, 10:34] = np.kron(small, np.ones((3, 3), np.float32))
    np.testing.assert_allclose(crop_resize(image, (5, 10, 29, 34), 8), small, rtol=1e-6)
    # a non-square box is centred in a square of its longer side, zeros beyond the image
    out = crop_resize(image, (0, 0, 2, 8), 4)
    assert out.shape == (4, 4)


def test_motion_energy_and_dilate():
    rng = np.random.default_rng(1)
    a = rng.random((10, 12)).astype(np.float32)
    b = a.copy()
    assert motion_energy(a, b) == 0.0
    b[2, 3] += 0.5
    b[4, 4] += 0.05                            # under the pixel threshold
    assert motion_energy(a, b, 0.1) == pytest.approx(0.5 / 120, rel=1e-5)
    with pytest.raises(ValueError, match="motion_energy"):
        motion_energy(a, b[:5])
    mask = np.zeros((5, 5), bool)
    mask[2, 2] = True
    assert dilate(mask, 1).sum() == 9 and dilate(mask, 0).sum() == 1


def test_regions_of_a_stream_find_the_objects(camera):
    """Background subtraction + components find a region overlapping every isolated object."""
    bg = BackgroundModel()
    found = total = 0
    for frame, objects in zip(camera.frames, camera.truth):
        fg = bg.foreground(frame)
        boxes = find_regions(fg)
        bg.update(frame, fg)
        for obj in objects:
            if any(box_iou(obj.box, o.box) > 0 for o in objects if o is not obj):
                continue
            total += 1
            found += any(box_iou(obj.box, b) >= 0.5 for b in boxes)
    assert total > 20 and found / total > 0.9


# ---- scoring ----------------------------------------------------------------------------------
def test_score_and_agreement_count_by_hand():
    from minitorch_edge.video import Detection, GroundTruthObject, agreement, score
    d = lambda box, label: Detection(box, label, 1.0)                  # noqa: E731
    g = lambda box, label, kind="digit": GroundTruthObject(box, label, kind)  # noqa: E731
    truth = [[g((0, 0, 10, 10), 3), g((0, 11, 10, 21), 5), g((30, 30, 40, 40), -1, "shape"),
              g((50, 50, 60, 60), 7)],
             []]
    dets = [[d((0, 0, 10, 11), 3),            # right
             d((50, 51, 60, 61), 1),          # found, wrong digit
             d((30, 30, 40, 40), 4)],         # on the shape: a false positive
            [d((5, 5, 15, 15), 2)]]           # on an empty frame: a false positive
    s = score(dets, truth)
    assert (s.true_digits, s.detections, s.missed) == (3, 4, 1)
    assert s.missed_touching == 1             # the 5 sits 1 px from the 3
    assert s.precision == pytest.approx(2 / 4) and s.recall == pytest.approx(2 / 3)
    assert s.classification == pytest.approx(1 / 2) and s.accuracy == pytest.approx(1 / 3)
    assert agreement(dets, dets) == 1.0
    moved = [[d((0, 0, 10, 10), 3)], []]
    assert agreement([moved], [dets]) == pytest.approx(2 * (1 / 1) * (1 / 4) / (1 + 1 / 4))
    with pytest.raises(ValueError, match="score: 1 detection lists for 2"):
        score(dets[:1], truth)


@settings(max_examples=30, deadline=None)
@given(mask=masks, radius=st.integers(0, 3))
def test_dilate_equals_the_window_definition(mask, radius):
    h, w = mask.shape
    ref = np.array([[mask[max(r - radius, 0):r + radius + 1, max(c - radius, 0):c + radius + 1]
                     .any() for c in range(w)] for r in range(h)])
    assert np.array_equal(dilate(mask, radius), ref)
