"""Files of TensorBoard's embedding projector. Each ``add_embedding`` writes, under ``<log_dir>/<step>/<tag>/``,
the vectors (tensors.tsv), optional labels (metadata.tsv) and optional thumbnails (sprite.png, one square image);
projector_config.pbtxt in log_dir lists every embedding logged so far."""
from __future__ import annotations

import math
import os
from typing import Any, Sequence

import numpy as np   # host-side: the files are written from NumPy copies
from tensorboard.compat import tf
from tensorboard.plugins.projector.projector_config_pb2 import EmbeddingInfo

from ._convert_np import make_np
from ._utils import make_grid, png_bytes


def _write(directory: str, name: str, data: str | bytes) -> None:
    # through TensorBoard's gfile, so that remote log_dirs (s3://, gs://) work as for the event files
    with tf.io.gfile.GFile(os.path.join(directory, name), "wb") as f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)


def make_tsv(metadata: Sequence[Any], save_path: str, metadata_header: Sequence[str] | None = None) -> None:
    """metadata.tsv: one label per line, or (with a header) one tab-separated row per point under the header."""
    if metadata_header:
        if len(metadata_header) != len(metadata[0]):
            raise AssertionError("len of header must be equal to the number of columns in metadata")
        lines = ["\t".join(map(str, row)) for row in [metadata_header, *metadata]]
    else:
        lines = [str(label) for label in metadata]
    _write(save_path, "metadata.tsv", "\n".join(lines) + "\n")


def make_sprite(label_img: Any, save_path: str) -> None:
    """sprite.png: the thumbnails (N, C, H, W) on a square grid, ceil(sqrt(N)) a side, as the projector expects."""
    from PIL import Image

    side = math.ceil(label_img.shape[0] ** 0.5)
    grid = make_grid(make_np(label_img), ncols=side).transpose(1, 2, 0)
    square = np.zeros((grid.shape[1], grid.shape[1], 3))   # rows below the last full one stay black
    square[:grid.shape[0]] = grid
    _write(save_path, "sprite.png", png_bytes(Image.fromarray(np.uint8((square * 255).clip(0, 255)))))


def make_mat(matlist: np.ndarray, save_path: str) -> None:
    """tensors.tsv: one tab-separated row per point."""
    _write(save_path, "tensors.tsv", "".join("\t".join(map(str, row)) + "\n" for row in matlist.tolist()))


def get_embedding_info(metadata: Any, label_img: Any, subdir: str, global_step: int, tag: str) -> EmbeddingInfo:
    """The projector config's entry for one embedding; its paths are relative to log_dir."""
    info = EmbeddingInfo(tensor_name=f"{tag}:{str(global_step).zfill(5)}",
                         tensor_path=os.path.join(subdir, "tensors.tsv"))
    if metadata is not None:
        info.metadata_path = os.path.join(subdir, "metadata.tsv")
    if label_img is not None:
        info.sprite.image_path = os.path.join(subdir, "sprite.png")
        info.sprite.single_image_dim.extend([label_img.shape[3], label_img.shape[2]])   # width, height
    return info


def write_pbtxt(save_path: str, contents: str) -> None:
    """projector_config.pbtxt, rewritten whole each time (a remote filesystem may not append)."""
    _write(save_path, "projector_config.pbtxt", contents)
