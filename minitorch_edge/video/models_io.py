"""What the pipeline and the training share about the models' inputs and outputs, without the
training stack: the crop sizes, the "not a digit" class, and `normalise_crop` (a region of the
difference image as a model input)."""
import numpy as np

from .regions import crop_resize

__all__ = ["NOT_A_DIGIT_CLASS", "FILTER_SIZE", "DIGIT_SIZE", "CROP_PAD", "normalise_crop"]

NOT_A_DIGIT_CLASS = 10      # DigitNet's 11th class
FILTER_SIZE, DIGIT_SIZE = 8, 16
CROP_PAD = 2                # pixels around a region's box in the crop


def normalise_crop(difference, box, size):
    """The model input for one region: the positive part of (frame - background) in the
    padded box, resampled to size x size and divided by its maximum (at least 0.1), float32
    (1, 1, size, size)."""
    padded = (box[0] - CROP_PAD, box[1] - CROP_PAD, box[2] + CROP_PAD, box[3] + CROP_PAD)
    crop = crop_resize(np.maximum(difference, 0.0), padded, size)
    return (crop / max(float(crop.max()), 0.1)).astype(np.float32)[None, None]
