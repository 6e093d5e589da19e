"""Image transforms for datasets' transform_first: each takes one image (NumPy or braid array) and gives a
NumPy array, so that a DataLoader stacks a batch on the host and uploads it once."""
import numpy

from ..dataset import host

__all__ = ["Compose", "ToTensor", "Normalize", "Resize", "Cast"]


class Compose:
    def __init__(self, transforms):
        self._transforms = list(transforms)

    def __call__(self, x):
        for t in self._transforms:
            x = t(x)
        return x


class ToTensor:
    """(H, W, C) uint8 in [0, 255] to (C, H, W) float32 in [0, 1]; a batch (N, H, W, C) to (N, C, H, W)."""

    def __call__(self, x):
        x = host(x)
        if x.ndim not in (3, 4):
            raise ValueError(f"braid: ToTensor takes (H, W, C) images, not shape {x.shape}")
        axes = (2, 0, 1) if x.ndim == 3 else (0, 3, 1, 2)
        return numpy.ascontiguousarray(x.transpose(axes), dtype=numpy.float32) / numpy.float32(255)


class Normalize:
    """(x - mean) / std per channel of a (C, H, W) tensor."""

    def __init__(self, mean=0.0, std=1.0):
        self._mean = numpy.asarray(mean, dtype=numpy.float32).reshape(-1, 1, 1)
        self._std = numpy.asarray(std, dtype=numpy.float32).reshape(-1, 1, 1)

    def __call__(self, x):
        x = host(x)
        if x.ndim != 3:
            raise ValueError(f"braid: Normalize takes (C, H, W) tensors (after ToTensor), not shape {x.shape}")
        return ((x - self._mean) / self._std).astype(numpy.float32)


class Resize:
    """An (H, W, C) image resized to size (an int: size x size; or (width, height)) by bilinear
    interpolation with half-pixel centres (OpenCV's and MXNet's default)."""

    def __init__(self, size, keep_ratio=False, interpolation=1):
        if keep_ratio or interpolation != 1:
            raise ValueError("braid: Resize supports bilinear interpolation (1) without keep_ratio")
        self._w, self._h = (size, size) if isinstance(size, int) else tuple(size)

    def __call__(self, x):
        x = host(x)
        if x.ndim != 3:
            raise ValueError(f"braid: Resize takes (H, W, C) images, not shape {x.shape}")
        h, w = x.shape[:2]
        src = x.astype(numpy.float32)

        def coords(out, size):
            c = (numpy.arange(out, dtype=numpy.float32) + 0.5) * (size / out) - 0.5
            c = numpy.clip(c, 0, size - 1)
            lo = numpy.floor(c).astype(numpy.int64)
            hi = numpy.minimum(lo + 1, size - 1)
            return lo, hi, (c - lo).astype(numpy.float32)
        y0, y1, fy = coords(self._h, h)
        x0, x1, fx = coords(self._w, w)
        top = src[y0][:, x0] * (1 - fx)[None, :, None] + src[y0][:, x1] * fx[None, :, None]
        bottom = src[y1][:, x0] * (1 - fx)[None, :, None] + src[y1][:, x1] * fx[None, :, None]
        out = top * (1 - fy)[:, None, None] + bottom * fy[:, None, None]
        return numpy.rint(out).astype(x.dtype) if numpy.issubdtype(x.dtype, numpy.integer) else out.astype(x.dtype)


class Cast:
    def __init__(self, dtype="float32"):
        self._dtype = dtype

    def __call__(self, x):
        return host(x).astype(self._dtype)
