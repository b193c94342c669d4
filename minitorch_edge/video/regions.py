"""From frames to regions of interest, in numpy only (what a device runs before any model):

* `motion_energy(a, b, pixel_threshold)`: how much changed between two frames -- the mean of
  |a - b| over the pixels where it exceeds `pixel_threshold` (sensor noise stays under it, so a
  still scene scores ~0 however noisy it is).
* `BackgroundModel`: a running average of the empty scene, updated only where nothing is in
  front of it; `foreground(frame)` is the thresholded difference |frame - background|.
* `connected_components(mask)`: two-pass labelling on runs, vectorised -- each row's runs of
  foreground pixels and the pairs of runs that touch across neighbouring rows are found with
  numpy, the pairs are joined by a union-find (min-label propagation with pointer jumping),
  and each run gets its root's label. Labels count 1.. in raster order of each
  component's first pixel (what a raster-scan flood fill gives), 0 is background.
* `component_boxes`, `merge_boxes`, `pad_box`: boxes of the components, nearby ones merged
  (the strokes of one digit can fall apart in the mask), padded and clipped to the frame.
* `crop_resize(image, box, size)`: a square crop around the box, area-resampled to size x size
  (the models' input).

Boxes are (row0, col0, row1, col1), half-open.
"""
import numpy as np

__all__ = ["motion_energy", "BackgroundModel", "connected_components", "component_boxes",
           "box_gap", "merge_boxes", "pad_box", "box_iou", "crop_resize", "find_regions",
           "dilate"]


def motion_energy(a, b, pixel_threshold=0.1):
    """Mean over the frame of |a - b| where it exceeds `pixel_threshold`, else 0."""
    if a.shape != b.shape:
        raise ValueError(f"motion_energy: frames of different shapes {a.shape} and {b.shape}")
    d = np.abs(a - b)
    return float(np.where(d > pixel_threshold, d, 0.0).mean())


def dilate(mask, radius=1):
    """Binary dilation of a 2-D mask by a (2r+1) square: shifted ORs along the rows, then
    along the columns (the square is separable; no scipy)."""
    if radius <= 0:
        return mask
    out = mask.copy()
    for axis in (0, 1):
        src, n = out.copy(), mask.shape[axis]
        for d in range(1, radius + 1):
            if d >= n:
                break
            lead = [slice(None)] * 2
            lag = [slice(None)] * 2
            lead[axis], lag[axis] = slice(d, None), slice(None, n - d)
            out[tuple(lead)] |= src[tuple(lag)]
            out[tuple(lag)] |= src[tuple(lead)]
    return out


class BackgroundModel:
    """A running estimate of the empty scene. Starts from the first frame it sees (streams
    begin still); `update(frame, foreground)` moves the estimate towards the frame by `rate`
    where the foreground mask is False (objects do not burn into the background)."""

    def __init__(self, threshold=0.12, rate=0.05):
        if not 0.0 < rate <= 1.0:
            raise ValueError(f"BackgroundModel: rate must be in (0, 1], got {rate!r}")
        self.threshold, self.rate, self.estimate = threshold, rate, None

    def foreground(self, frame):
        """The boolean mask |frame - background| > threshold (all False for the first frame,
        which becomes the background)."""
        if self.estimate is None:
            self.estimate = frame.astype(np.float32, copy=True)
        return np.abs(frame - self.estimate) > self.threshold

    def difference(self, frame):
        """frame - background (signed), what the models see inside a box."""
        return frame - self.estimate

    def update(self, frame, foreground):
        step = self.rate * (frame - self.estimate)
        step[dilate(foreground, 2)] = 0.0
        self.estimate += step


def _runs(mask):
    """Every row's runs of True: (row, start, stop) int arrays, in raster order."""
    h, w = mask.shape
    padded = np.zeros((h, w + 2), np.int8)
    padded[:, 1:-1] = mask
    edges = np.diff(padded, axis=1)
    rows_s, starts = np.nonzero(edges == 1)
    rows_e, stops = np.nonzero(edges == -1)     # same order: both scan row by row
    return rows_s, starts, stops


def _touching_runs(rows, starts, stops, reach):
    """(a, b): every pair of runs a in row r and b in row r + 1 that touch. Runs are in raster
    order, so keys row * K + column are sorted for both the starts and the stops; the runs of
    row r + 1 touching run a form one range [lo, hi), found by two searchsorted calls."""
    k = int(stops.max()) + reach + 2
    start_keys, stop_keys = rows * k + starts, rows * k + stops
    next_row = (rows + 1) * k
    # touch: start_b < stop_a + reach and stop_b + reach > start_a
    lo = np.searchsorted(stop_keys, next_row + starts - reach, side="right")
    hi = np.searchsorted(start_keys, next_row + stops + reach, side="left")
    count = np.maximum(hi - lo, 0)
    a = np.repeat(np.arange(len(rows)), count)
    b = np.repeat(lo, count) + (np.arange(count.sum()) - np.repeat(np.cumsum(count) - count,
                                                                   count))
    return a, b


def connected_components(mask, connectivity=8):
    """(labels int32 of mask's shape, count): 0 background, 1..count the components in raster
    order of their first pixel. `connectivity` 4 (edges) or 8 (edges and corners).

    Two passes over runs, all in numpy: (1) each row's runs of True, and the pairs of runs that
    touch across neighbouring rows; (2) union-find over those pairs as min-label propagation
    with pointer jumping (every run points at the smallest run index of its component: the
    component's first run in raster order), then each run's pixels painted with its component's
    number."""
    mask = np.asarray(mask)
    if mask.ndim != 2:
        raise ValueError(f"connected_components: mask must be 2-D, got shape {mask.shape}")
    if connectivity not in (4, 8):
        raise ValueError(f"connected_components: connectivity must be 4 or 8, got "
                         f"{connectivity!r}")
    mask = mask.astype(bool)
    rows, starts, stops = _runs(mask)
    n = len(rows)
    labels = np.zeros(mask.shape, np.int32)
    if n == 0:
        return labels, 0
    a, b = _touching_runs(rows, starts, stops, 1 if connectivity == 8 else 0)
    root = np.arange(n)
    while True:
        low = np.minimum(root[a], root[b])
        new = root.copy()
        np.minimum.at(new, a, low)
        np.minimum.at(new, b, low)
        new = new[new]                          # pointer jumping: root[x] <= x, same component
        if np.array_equal(new, root):
            break
        root = new
    unique_roots, component = np.unique(root, return_inverse=True)
    lengths = stops - starts
    run_of_pixel = np.repeat(np.arange(n), lengths)
    within = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    flat = rows[run_of_pixel] * mask.shape[1] + starts[run_of_pixel] + within
    labels.ravel()[flat] = component[run_of_pixel] + 1
    return labels, len(unique_roots)


def component_boxes(labels, count, min_area=1):
    """[(box, area)] for the components 1..count of `labels` with at least `min_area` pixels."""
    if count == 0:
        return []
    rr, cc = np.nonzero(labels)
    lab = labels[rr, cc] - 1
    area = np.bincount(lab, minlength=count)
    r0 = np.full(count, labels.shape[0]); c0 = np.full(count, labels.shape[1])
    r1 = np.zeros(count, np.int64); c1 = np.zeros(count, np.int64)
    np.minimum.at(r0, lab, rr); np.minimum.at(c0, lab, cc)
    np.maximum.at(r1, lab, rr + 1); np.maximum.at(c1, lab, cc + 1)
    return [((int(r0[k]), int(c0[k]), int(r1[k]), int(c1[k])), int(area[k]))
            for k in range(count) if area[k] >= min_area]


def box_gap(a, b):
    """The chessboard distance between two boxes (0 when they overlap or touch)."""
    dr = max(a[0] - b[2], b[0] - a[2], 0)
    dc = max(a[1] - b[3], b[1] - a[3], 0)
    return max(dr, dc)


def merge_boxes(boxes, gap=2):
    """Boxes merged while any two are within `gap` pixels of each other (repeated until none
    are): the union box replaces them."""
    boxes = [tuple(b) for b in boxes]
    merged = True
    while merged:
        merged = False
        for i in range(len(boxes)):
            for j in range(i + 1, len(boxes)):
                if box_gap(boxes[i], boxes[j]) <= gap:
                    a, b = boxes[i], boxes.pop(j)
                    boxes[i] = (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]),
                                max(a[3], b[3]))
                    merged = True
                    break
            if merged:
                break
    return boxes


def pad_box(box, pad, shape):
    """`box` grown by `pad` pixels on each side, clipped to an image of `shape` (H, W)."""
    return (max(box[0] - pad, 0), max(box[1] - pad, 0), min(box[2] + pad, shape[0]),
            min(box[3] + pad, shape[1]))


def box_iou(a, b):
    """Intersection over union of two boxes."""
    ir = max(0, min(a[2], b[2]) - max(a[0], b[0]))
    ic = max(0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ir * ic
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def crop_resize(image, box, size):
    """The square around `box`'s centre with the box's longer side (zero outside `image`),
    area-resampled to (size, size) float32: the source is repeated up to a multiple of `size`
    (nearest) and averaged in blocks."""
    r0, c0, r1, c1 = box
    side = max(r1 - r0, c1 - c0, 1)
    top = (r0 + r1 - side) // 2
    left = (c0 + c1 - side) // 2
    square = np.zeros((side, side), np.float32)
    h, w = image.shape
    sr0, sc0 = max(top, 0), max(left, 0)
    sr1, sc1 = min(top + side, h), min(left + side, w)
    square[sr0 - top:sr1 - top, sc0 - left:sc1 - left] = image[sr0:sr1, sc0:sc1]
    k = -(-side // size)                       # ceil(side / size)
    idx = (np.arange(size * k) * side) // (size * k)
    return square[np.ix_(idx, idx)].reshape(size, k, size, k).mean(axis=(1, 3))


def find_regions(foreground, min_area=12, gap=0):
    """Boxes of the regions of interest in a foreground mask: the mask dilated by 1 (joins the
    strokes of a digit), its connected components of at least `min_area` pixels, merged within
    `gap`, shrunk back by the dilation (so a box is the foreground's own extent)."""
    labels, count = connected_components(dilate(foreground, 1))
    boxes = [box for box, area in component_boxes(labels, count, min_area)]
    return [pad_box(b, -1, foreground.shape) for b in merge_boxes(boxes, gap)]
