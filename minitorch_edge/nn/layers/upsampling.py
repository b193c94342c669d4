"""Upsampling layers: Upsample (any interpolate mode), UpsamplingNearest2d,
UpsamplingBilinear2d (align_corners=True), PixelShuffle and PixelUnshuffle; thin Modules over
nn/functional/upsampling.py.
"""
from ..functional.upsampling import interpolate, pixel_shuffle, pixel_unshuffle
from ..module import Module

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle",
           "PixelUnshuffle"]


class Upsample(Module):
    """Resize the spatial dims (the dims after N, C) to `size`, or by `scale_factor`,
    by interpolation (see F.interpolate): "nearest" copies the nearest input pixel; "linear",
    "bilinear" (and "bicubic" where supported) interpolate between neighbours.

    Args:
        size: the output's spatial size (an int or a tuple), or None.
        scale_factor: multiplier of each spatial size (float or tuple), or None; give exactly
            one of size and scale_factor.
        mode: the interpolation: "nearest" (default), "linear", "bilinear", ...
        align_corners: for the linear modes, align the corner pixels' centres of input and
            output (True) or their edges (False, default None = False).
        recompute_scale_factor: compute the scale used from the output size (as PyTorch).

    Shape:
        - Input: (N, C, W_in), (N, C, H_in, W_in) or (N, C, D_in, H_in, W_in).
        - Output: (N, C, W_out), ..., with each out = floor(in * scale_factor) or `size`.
    """

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, (tuple, list)):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor is not None else None
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                           recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self):
        if self.scale_factor is not None:
            info = f"scale_factor={self.scale_factor!r}"
        else:
            info = f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour upsampling of images: Upsample(mode="nearest").

    Args:
        size: the output's (H_out, W_out) (or one int), or None.
        scale_factor: multiplier of H and W, or None (give exactly one).

    Shape:
        - Input: (N, C, H_in, W_in).
        - Output: (N, C, H_out, W_out), H_out = floor(H_in * scale_factor) or size.
    """

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear upsampling of images with align_corners=True:
    Upsample(mode="bilinear", align_corners=True).

    Args:
        size: the output's (H_out, W_out) (or one int), or None.
        scale_factor: multiplier of H and W, or None (give exactly one).

    Shape:
        - Input: (N, C, H_in, W_in).
        - Output: (N, C, H_out, W_out), H_out = floor(H_in * scale_factor) or size.
    """

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class PixelShuffle(Module):
    """Rearranges channels into space (sub-pixel convolution's upsampling): each
    group of r * r channels becomes an r x r block of pixels,
    y[c, h r + i, w r + j] = x[c r^2 + i r + j, h, w].

    Args:
        upscale_factor: r.

    Shape:
        - Input: (*, C r^2, H, W).
        - Output: (*, C, H r, W r).
    """

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """The inverse of PixelShuffle: each r x r block of pixels becomes r * r
    channels, y[c r^2 + i r + j, h, w] = x[c, h r + i, w r + j].

    Args:
        downscale_factor: r.

    Shape:
        - Input: (*, C, H r, W r).
        - Output: (*, C r^2, H, W).
    """

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"
