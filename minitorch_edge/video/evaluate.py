"""Scoring detections: against the synthetic ground truth, and against another run's
detections (the reference: every frame, every region through the heavy model).

A detection matches a true digit when their boxes overlap with IoU >= `iou` (0.5), greedily,
best overlap first, each used once. Only digits count as truth (shapes are distractors: a
detection on a shape is a false positive).

`score(detections, truth)` -> Scores: precision, recall and F1 of the boxes, classification
accuracy (right digit among the matched), and `accuracy`: true digits found with the right
label / true digits (what a user of the counts sees); `missed` true digits, of which
`missed_touching` were within `TOUCH` pixels of another object (their regions merge into one
box, which matches neither). `agreement(detections, reference)`: the
F1 of matching one run's detections to the other's, boxes and labels both.
"""
import collections

from .regions import box_gap, box_iou

__all__ = ["Scores", "match", "score", "agreement", "TOUCH"]

TOUCH = 2       # pixels: objects this close come out of the region finder as one region

Scores = collections.namedtuple("Scores", "precision recall f1 classification accuracy "
                                          "true_digits detections missed missed_touching")


def match(boxes_a, boxes_b, iou=0.5):
    """[(i, j)] pairs of boxes_a[i] and boxes_b[j] with IoU >= `iou`, greedy best first."""
    pairs = sorted(((box_iou(a, b), i, j) for i, a in enumerate(boxes_a)
                    for j, b in enumerate(boxes_b)), reverse=True)
    used_a, used_b, out = set(), set(), []
    for overlap, i, j in pairs:
        if overlap < iou:
            break
        if i not in used_a and j not in used_b:
            used_a.add(i)
            used_b.add(j)
            out.append((i, j))
    return out


def _frames(nested):
    """Per-frame lists from either layout: one list per frame, or one such list per stream (a
    frame's list holds namedtuples, a stream's holds lists)."""
    if nested and isinstance(nested[0], list) and nested[0] and isinstance(nested[0][0], list):
        return [frame for stream in nested for frame in stream]
    return list(nested)


def _f1(p, r):
    return 2 * p * r / (p + r) if p + r else 0.0


def score(detections, truth, iou=0.5):
    """Scores of per-frame detections (a list per frame, or a list of those per stream) against
    per-frame ground truth of the same layout."""
    if len(detections) != len(truth):
        raise ValueError(f"score: {len(detections)} detection lists for {len(truth)} truth lists")
    pairs = list(zip(_frames(detections), _frames(truth)))
    n_true = n_det = matched = right = touching = 0
    for dets, objects in pairs:
        digits = [o for o in objects if o.kind == "digit"]
        n_true, n_det = n_true + len(digits), n_det + len(dets)
        found = set()
        for i, j in match([d.box for d in dets], [o.box for o in digits], iou):
            matched += 1
            right += dets[i].label == digits[j].label
            found.add(j)
        touching += sum(1 for j, d in enumerate(digits) if j not in found and any(
            o is not d and box_gap(o.box, d.box) <= TOUCH for o in objects))
    precision = matched / n_det if n_det else 1.0
    recall = matched / n_true if n_true else 1.0
    return Scores(precision, recall, _f1(precision, recall), right / matched if matched else 0.0,
                  right / n_true if n_true else 1.0, n_true, n_det, n_true - matched, touching)


def agreement(detections, reference, iou=0.5):
    """F1 of `detections` against `reference` (same layout), a match needing IoU >= `iou` and
    the same label."""
    if len(detections) != len(reference):
        raise ValueError(f"agreement: {len(detections)} detection lists for {len(reference)} "
                         f"reference lists")
    found = total_a = total_b = 0
    for a, b in zip(_frames(detections), _frames(reference)):
        total_a, total_b = total_a + len(a), total_b + len(b)
        found += sum(a[i].label == b[j].label for i, j in match([d.box for d in a],
                                                                [d.box for d in b], iou))
    p = found / total_a if total_a else 1.0
    r = found / total_b if total_b else 1.0
    return _f1(p, r)
