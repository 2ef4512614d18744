"""Image layout helpers for the writer (host-side NumPy): matplotlib figures to pixels, a batch of images tiled
into one grid, any ``dataformats`` string to height-width-channel, a video batch to frames."""
from __future__ import annotations

import io
from typing import Any

import numpy as np   # host-side: pixels are arranged on NumPy copies before PNG encoding


def _spaced(first: str, rest: str, indent: int) -> str:
    # PyTorch's messages carry the indentation of a continued source line; programs may match them, so keep it
    return first + " " * (indent + 1) + rest


def png_bytes(picture: Any) -> bytes:
    """A PIL image encoded as PNG."""
    with io.BytesIO() as buf:
        picture.save(buf, format="PNG")
        return buf.getvalue()


def figure_to_image(figures: Any, close: bool = True) -> np.ndarray:
    """Render a matplotlib figure (CHW uint8) or a list of them (NCHW); ``close`` closes each figure after."""
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    def pixels(fig: Any) -> np.ndarray:
        canvas = FigureCanvasAgg(fig)   # attaches an Agg canvas whatever the figure's backend
        canvas.draw()
        width, height = fig.canvas.get_width_height()
        rgb = np.frombuffer(canvas.buffer_rgba(), dtype=np.uint8).reshape(height, width, 4)[..., :3]
        if close:
            plt.close(fig)
        return np.moveaxis(rgb, 2, 0)

    return np.stack([pixels(f) for f in figures]) if isinstance(figures, list) else pixels(figures)


def make_grid(I: np.ndarray, ncols: int = 8) -> np.ndarray:   # noqa: E741  (PyTorch's argument name)
    """Tile N images (N, 1 or 3, H, W) row by row into one (3, rows*H, cols*W) image; empty cells stay zero."""
    if not isinstance(I, np.ndarray):
        raise AssertionError("plugin error, should pass numpy array here")
    if I.shape[1] == 1:   # grey -> RGB
        I = np.repeat(I, 3, axis=1)   # noqa: E741
    if I.ndim != 4 or I.shape[1] != 3:
        raise AssertionError("Input should be a 4D numpy array with 3 channels")
    n, _, h, w = I.shape
    cols = min(n, ncols)
    rows = -(-n // cols)
    cells = np.zeros((rows * cols, 3, h, w), dtype=I.dtype)
    cells[:n] = I
    return cells.reshape(rows, cols, 3, h, w).transpose(2, 0, 3, 1, 4).reshape(3, rows * h, cols * w)


def convert_to_HWC(tensor: np.ndarray, input_format: str) -> np.ndarray:   # noqa: N802  (PyTorch's name)
    """An image laid out as ``input_format`` (NCHW, CHW, HWC, HW, ... in any order) as one HWC image: a batch is
    tiled with make_grid, one channel or none becomes three (grey)."""
    if len(set(input_format)) != len(input_format):
        raise AssertionError(_spaced("You can not use the same dimension shorthand twice.",
                                     f"input_format: {input_format}", 12))
    if tensor.ndim != len(input_format):
        raise AssertionError(_spaced("size of input tensor and input format are different.",
                                     f"tensor shape: {tensor.shape}, input_format: {input_format}", 8))
    fmt = input_format.upper()
    if len(fmt) == 4:
        grid = make_grid(tensor.transpose([fmt.find(c) for c in "NCHW"]))
        return grid.transpose(1, 2, 0)
    if len(fmt) == 3:
        hwc = tensor.transpose([fmt.find(c) for c in "HWC"])
        return np.repeat(hwc, 3, axis=2) if hwc.shape[2] == 1 else hwc
    if len(fmt) == 2:
        return np.repeat(tensor.transpose([fmt.find(c) for c in "HW"])[..., None], 3, axis=2)
    return tensor


def _prepare_video(V: np.ndarray) -> np.ndarray:   # noqa: N803
    """A video batch (B, T, C, H, W) as T frames (T, H', W', C): the B clips tiled on a grid, B padded with black
    clips to a power of two (rows = the largest power of two whose square is at most B)."""
    b, t, c, h, w = V.shape
    if V.dtype == np.uint8:
        V = np.float32(V) / 255.0   # noqa: N806
    padded = 1 << (b - 1).bit_length() if b else 0
    if padded != b:
        V = np.concatenate([V, np.zeros((padded - b, t, c, h, w))])   # noqa: N806
    rows = 2 ** ((b.bit_length() - 1) // 2)
    cols = V.shape[0] // rows
    frames = V.reshape(rows, cols, t, c, h, w).transpose(2, 0, 4, 1, 5, 3)
    return frames.reshape(t, rows * h, cols * w, c)
