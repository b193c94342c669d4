"""Video analytics on the edge: synthetic camera streams with ground truth (streams.py), motion
sampling and regions of interest in numpy (regions.py), a cascade of two int8 models on the C
runtime (models.py trains and exports them, pipeline.py runs them per stream on worker threads),
scoring (evaluate.py) and the report (report.py; `python -m minitorch_edge.video [--short]`).

It is a library module rather than an examples/ folder so that the tests, the tutorial
(tutorials/19_video_pipeline.py) and the CLI share one implementation, and so that it installs
with the package. Only models.py (training) needs the training stack; the pipeline imports
numpy and minitorch_edge.runtime.
"""
from .evaluate import Scores, agreement, match, score
from .pipeline import STAGES, CascadeModels, Detection, StreamProcessor, StreamStats, run_streams
from .regions import (BackgroundModel, box_iou, component_boxes, connected_components,
                      crop_resize, dilate, find_regions, merge_boxes, motion_energy, pad_box)
from .streams import GroundTruthObject, SyntheticCamera

__all__ = ["BackgroundModel", "CascadeModels", "Detection", "GroundTruthObject", "STAGES", "Scores",
           "StreamProcessor", "StreamStats", "SyntheticCamera", "agreement", "box_iou",
           "component_boxes", "connected_components", "crop_resize", "dilate", "find_regions",
           "match", "merge_boxes", "motion_energy", "pad_box", "run_streams", "score"]
