"""The numpy backend: the readable reference implementation of every kernel.

Each function takes numpy arrays and returns a numpy array. The native backend
(native_backend.py) offers the same names with the same results, computed by libmte; tests
compare the two. Keep this file the one a student reads to learn what a kernel computes.
"""
import numpy as np

NAME = "numpy"


def matmul(a, b):
    """np.matmul semantics: 1-D, 2-D and batched (broadcast) matrix products."""
    return np.matmul(a, b)
