"""The video pipeline end to end in the short (CI) mode: the two int8 models trained on
pipeline-rendered crops and exported to .mte, run on the C runtime over synthetic test streams
(digits the models never saw). Stated accuracy in the short mode, against the ground truth:
box F1 >= 0.85 and found-with-the-right-digit >= 0.75 for every setting; sampling and the
cascade change the reference's (every frame, heavy model only) detections by under 5% (F1 >=
0.95); 1 and 2 worker threads give identical detections; `python -m minitorch_edge.video
--short` writes its report."""
import json
import os

import numpy as np
import pytest

from minitorch_edge import runtime
from minitorch_edge.video import (CascadeModels, StreamProcessor, SyntheticCamera, agreement,
                                  run_streams, score)
from minitorch_edge.video.models import FILTER_SIZE, build_models, training_crops
from minitorch_edge.video.report import CONFIGS

pytest.importorskip("cffi")


def _runtime_or_skip():
    try:
        runtime.library_path()
    except runtime.LibraryNotFoundError as exc:
        if os.environ.get("MTE_REQUIRE_NATIVE") == "1":
            raise
        pytest.skip(f"no C runtime: {exc}")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    _runtime_or_skip()
    cfg = CONFIGS["short"]
    return build_models(str(tmp_path_factory.mktemp("video_models")), num_train=cfg["num_train"],
                        epochs=cfg["epochs"], width=cfg["width"])


@pytest.fixture(scope="module")
def streams():
    cfg = CONFIGS["short"]
    return [SyntheticCamera(1000 + i, num_frames=cfg["frames"]) for i in range(cfg["streams"])]


def test_training_crops_are_deterministic_and_labelled():
    x8, x16, y = training_crops(300, seed=5)
    again = training_crops(300, seed=5)
    assert np.array_equal(x8, again[0]) and np.array_equal(y, again[2])
    assert x8.shape == (300, 1, 8, 8) and x16.shape == (300, 1, 16, 16)
    assert set(np.unique(y)) <= set(range(11)) and (y == 10).any() and (y < 10).sum() > 100
    assert x16.max() <= 1.0 + 1e-6 and x16.min() >= 0.0


def test_exported_models_are_int8_and_accurate(models):
    assert models["filter_accuracy"] > 0.9 and models["digit_accuracy"] > 0.85
    for key in ("filter", "digits"):
        with runtime.load(models[key]) as m:
            assert any("int8" in k.kernel or "Quant" in k.op for k in m.kernels), m.kernels
    cascade = CascadeModels(models["filter"], models["digits"])
    x8, x16, y = training_crops(200, seed=11, split="test")
    said_digit = np.array([cascade.is_digit(x[None], 0.5) for x in x8])
    labels = np.array([cascade.classify(x[None])[0] for x in x16])
    assert (said_digit == (y < 10)).mean() > 0.9          # the C runtime's int8 models
    assert (labels == y).mean() > 0.85
    cascade.close()


def test_pipeline_matches_ground_truth_in_short_mode(models, streams):
    frames, truth = [c.frames for c in streams], [c.truth for c in streams]
    paths = models["filter"], models["digits"]
    reference, ref_stats, _ = run_streams(frames, *paths, sampling=False, cascade=False)
    assert ref_stats.processed == ref_stats.frames == sum(len(c) for c in streams)
    assert ref_stats.classified == ref_stats.regions > 0
    for sampling in (False, True):
        for cascade in (False, True):
            dets, stats, _ = run_streams(frames, *paths, sampling=sampling, cascade=cascade)
            s = score(dets, truth)
            assert s.true_digits > 50
            assert s.f1 >= 0.85 and s.accuracy >= 0.75, (sampling, cascade, s)
            assert agreement(dets, reference) >= 0.95
            if sampling:      # the still spells are skipped
                assert stats.processed < 0.9 * stats.frames
            if cascade:       # the filter keeps shapes from the heavy model
                assert stats.classified < stats.regions


def test_two_threads_give_the_same_detections(models, streams):
    """Two stream workers, or two kernel threads, change nothing but the time."""
    frames = [c.frames for c in streams]
    one, s1, _ = run_streams(frames, models["filter"], models["digits"], workers=1)
    for layout in (dict(workers=2), dict(kernel_threads=2)):
        two, s2, _ = run_streams(frames, models["filter"], models["digits"], **layout)
        assert one == two
        assert (s1.frames, s1.processed, s1.regions, s1.classified) == \
            (s2.frames, s2.processed, s2.regions, s2.classified)
        assert set(s2.seconds) == set(s1.seconds) and all(v >= 0 for v in s2.seconds.values())


def test_an_unchanged_frame_is_not_processed(models, streams):
    cascade = CascadeModels(models["filter"], models["digits"])
    proc = StreamProcessor(cascade)
    frame = streams[0].frames[0]
    assert proc.process(frame) == [] and proc.stats.processed == 1
    proc.process(frame.copy())
    assert proc.stats.processed == 1 and proc.stats.frames == 2
    cascade.close()


def test_bad_arguments(models, tmp_path):
    with pytest.raises(ValueError, match="run_streams: workers"):
        run_streams([], models["filter"], models["digits"], workers=0)
    with pytest.raises(ValueError, match="CascadeModels: .* takes"):
        CascadeModels(models["digits"], models["digits"])      # a 16x16 model as the filter
    with pytest.raises(ValueError, match="motion_threshold"):
        StreamProcessor(None, motion_threshold=-1)
    assert FILTER_SIZE == 8


def test_cli_short_report(tmp_path, capsys):
    """`minitorch-edge video` hands its arguments to python -m minitorch_edge.video."""
    _runtime_or_skip()
    from minitorch_edge.cli import main
    assert main(["video", "--short", "--threads", "1", "2", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| motion sampling + cascade | 2x1 |" in out and "GIL" in out
    report = json.loads((tmp_path / "report.json").read_text())
    assert (tmp_path / "report.md").read_text().startswith("Video pipeline report")
    layouts = {(r["threads"], r["kernel_threads"]) for r in report["runs"]}
    assert layouts == {(1, 1), (2, 1), (1, 2)} and len(report["runs"]) == 12
    assert report["runs"][0]["agreement"] == 1.0
    gil = report["gil"]          # the C call releases the GIL; the pure-Python control does not
    assert gil["released"] and gil["control_stall_ms"] > 0.5 * gil["control_worker_ms"]
    assert sorted(os.listdir(tmp_path)) == ["digits.int8.mte", "filter.int8.mte", "report.json",
                                            "report.md", "wide96.mte"]


def test_cli_bad_threads(capsys):
    from minitorch_edge.video.__main__ import main
    with pytest.raises(SystemExit) as exc:
        main(["--threads", "0"])
    assert exc.value.code == 2 and "--threads must be positive" in capsys.readouterr().err
