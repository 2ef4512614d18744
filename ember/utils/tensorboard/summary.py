"""Builders of TensorBoard ``Summary`` protos, one per kind of data the writer logs. Each takes a tag and the
values (tensors, arrays or Python numbers; copied to NumPy on the host) and returns a proto ready for an event.
The encodings are PyTorch's, so that TensorBoard shows ember's runs exactly as PyTorch's: scalars as
``simple_value`` (or a scalars-plugin tensor), histograms bucketed as TensorFlow's, images as PNG, audio as WAV."""
from __future__ import annotations

import io
import json
import logging
import struct
from typing import Any, Sequence

import numpy as np   # host-side: summaries are built from NumPy copies of the values

from google.protobuf import struct_pb2
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.custom_scalar import layout_pb2
from tensorboard.plugins.pr_curve.plugin_data_pb2 import PrCurvePluginData
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

from ..._tensor import Tensor
from ...ops import public as torch
from ._convert_np import make_np
from ._utils import _prepare_video, _spaced, convert_to_HWC, png_bytes

__all__ = ["half_to_int", "int_to_half", "hparams", "scalar", "histogram_raw", "histogram", "make_histogram",
           "image", "image_boxes", "draw_boxes", "make_image", "video", "make_video", "audio", "custom_scalars",
           "text", "tensor_proto", "pr_curve_raw", "pr_curve", "compute_curve", "mesh"]

logger = logging.getLogger(__name__)


# ---- small proto pieces shared by the builders

def _meta(plugin: str, content: bytes = b"") -> SummaryMetadata:
    return SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name=plugin, content=content))


def _shape(dims: Sequence[int]) -> TensorShapeProto:
    return TensorShapeProto(dim=[TensorShapeProto.Dim(size=int(d)) for d in dims])


def _one(tag: str, **fields: Any) -> Summary:
    """A Summary holding one value."""
    return Summary(value=[Summary.Value(tag=tag, **fields)])


def _host(x: Any) -> np.ndarray:
    """A NumPy copy of a tensor, an array or a (nested) list of numbers."""
    return make_np(x) if isinstance(x, (Tensor, np.ndarray)) else np.asarray(x)


# ---- scalars and tensors

def scalar(name: str, tensor: Any, collections: Any = None, new_style: bool = False,
           double_precision: bool = False) -> Summary:
    """One number: the classic ``simple_value``, or (``new_style``) a float/double tensor for the scalars
    plugin. ``collections`` is TensorFlow's and ignored."""
    value = make_np(tensor).squeeze()
    if value.ndim != 0:
        raise AssertionError(_spaced("Tensor should contain one element (0 dimensions).",
                                     f"Was given size: {value.size} and {value.ndim} dimensions.", 12))
    number = float(value)
    if not new_style:
        return _one(name, simple_value=number)
    proto = TensorProto(double_val=[number], dtype="DT_DOUBLE") if double_precision else \
        TensorProto(float_val=[number], dtype="DT_FLOAT")
    return _one(name, tensor=proto, metadata=_meta("scalars"))


def half_to_int(f: float) -> int:
    """The bit pattern of ``f`` as a float32, read as an int (how half and bfloat16 values travel in
    ``TensorProto.half_val``, as PyTorch writes them)."""
    return struct.unpack("i", struct.pack("f", f))[0]


def int_to_half(i: int) -> float:
    """The inverse of :func:`half_to_int`."""
    return struct.unpack("f", struct.pack("i", i))[0]


def _halves(t: Tensor) -> list[int]:
    return [half_to_int(v) for v in t.flatten().tolist()]


def _plain(t: Tensor) -> list:
    return t.flatten().tolist()


def _complex(t: Tensor) -> list[float]:
    return torch.view_as_real(t).flatten().tolist()   # interleaved (real, imaginary) pairs


# dtype -> (TensorProto dtype, the repeated field holding the values, how to list them)
_PROTO_DTYPE = {
    torch.float16: ("DT_HALF", "half_val", _halves),
    torch.bfloat16: ("DT_BFLOAT16", "half_val", _halves),
    torch.float32: ("DT_FLOAT", "float_val", _plain),
    torch.float64: ("DT_DOUBLE", "double_val", _plain),
    torch.int8: ("DT_INT8", "int_val", _plain),
    torch.uint8: ("DT_UINT8", "uint32_val", _plain),   # (PyTorch's table lists uint8 twice; this entry is the one used)
    torch.int16: ("DT_INT16", "int_val", _plain),
    torch.int32: ("DT_INT32", "int_val", _plain),
    torch.int64: ("DT_INT64", "int64_val", _plain),
    torch.complex32: ("DT_COMPLEX32", "scomplex_val", _complex),
    torch.complex64: ("DT_COMPLEX64", "scomplex_val", _complex),
    torch.complex128: ("DT_COMPLEX128", "dcomplex_val", _complex),
    torch.bool: ("DT_BOOL", "bool_val", _plain),
}


def tensor_proto(tag: str, tensor: Tensor) -> Summary:
    """A whole tensor, values and shape, for the tensor plugin (a proto holds at most 2 GB)."""
    if tensor.numel() * tensor.itemsize >= 1 << 31:
        raise ValueError("tensor is bigger than protocol buffer's hard limit of 2GB in size")
    if tensor.dtype not in _PROTO_DTYPE:
        raise ValueError(f"{tag} has unsupported tensor dtype {tensor.dtype}")
    dtype, field, listed = _PROTO_DTYPE[tensor.dtype]
    proto = TensorProto(dtype=dtype, tensor_shape=_shape(tensor.shape), **{field: listed(tensor)})
    return _one(tag, metadata=_meta("tensor"), tensor=proto)


# ---- histograms

def _tensorflow_bins() -> list[float]:
    """TensorBoard's default bucket edges: +-1e-12 growing by 10 % up to 1e20, and 0 (built by repeated
    multiplication, as TensorFlow does, so the edges match to the last bit)."""
    edges, v = [], 1e-12
    while v < 1e20:
        edges.append(v)
        v *= 1.1
    return [-e for e in reversed(edges)] + [0] + edges


def histogram_raw(name: str, min: float, max: float, num: int, sum: float, sum_squares: float,   # noqa: A002
                  bucket_limits: Sequence[float], bucket_counts: Sequence[float]) -> Summary:
    """A histogram from precomputed statistics and buckets (each limit is its bucket's right edge)."""
    return _one(name, histo=HistogramProto(min=min, max=max, num=num, sum=sum, sum_squares=sum_squares,
                                           bucket_limit=bucket_limits, bucket=bucket_counts))


def histogram(name: str, values: Any, bins: Any, max_bins: int | None = None) -> Summary:
    """A histogram of ``values`` with NumPy's ``bins`` (edges, a count or a rule such as 'auto')."""
    return _one(name, histo=make_histogram(make_np(values).astype(float), bins, max_bins))


def make_histogram(values: np.ndarray, bins: Any, max_bins: int | None = None) -> HistogramProto:
    """Bucket ``values``; ``max_bins`` merges neighbouring buckets. Only the span from the first to the last
    non-empty bucket is kept, plus one empty bucket on its left: a proto stores right edges only, and that bucket
    carries the leftmost edge."""
    if values.size == 0:
        raise ValueError("The input has no element.")
    values = values.reshape(-1)
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        group = len(counts) // max_bins
        counts = np.pad(counts, (0, -len(counts) % group)).reshape(-1, group).sum(axis=-1)
        limits = np.append(limits[:-1:group], limits[-1])
    filled = np.flatnonzero(counts)
    # (when nothing falls in any bucket PyTorch's search lands on these bounds; kept for the same result)
    first, stop = (int(filled[0]), int(filled[-1]) + 1) if filled.size else (len(counts), 1)
    counts = np.concatenate([[0], counts])[first:stop + 1]
    limits = limits[first:stop + 1]
    if counts.size == 0 or limits.size == 0:
        raise ValueError("The histogram is empty, please file a bug report.")
    return HistogramProto(min=values.min(), max=values.max(), num=len(values), sum=values.sum(),
                          sum_squares=values.dot(values), bucket_limit=limits.tolist(), bucket=counts.tolist())


# ---- images

def _to_uint8(hwc: np.ndarray) -> np.ndarray:
    scale = 1 if hwc.dtype == np.uint8 else 255   # uint8 pixels are 0..255 already; any other dtype is 0..1
    return (hwc.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)


def image(tag: str, tensor: Any, rescale: float = 1, dataformats: str = "NCHW") -> Summary:
    """An image (or a batch, tiled on a grid) as PNG."""
    pixels = _to_uint8(convert_to_HWC(make_np(tensor), dataformats))
    return _one(tag, image=make_image(pixels, rescale=rescale))


def image_boxes(tag: str, tensor_image: Any, tensor_boxes: Any, rescale: float = 1, dataformats: str = "CHW",
                labels: Sequence[str] | None = None) -> Summary:
    """An image with boxes (rows of x1, y1, x2, y2 in pixels) drawn on it, each with its optional label."""
    pixels = _to_uint8(convert_to_HWC(make_np(tensor_image), dataformats))
    return _one(tag, image=make_image(pixels, rescale=rescale, rois=make_np(tensor_boxes), labels=labels))


def _draw_box(picture: Any, xmin: float, ymin: float, xmax: float, ymax: float, display_str: str | None,
              color: str = "black", color_text: str = "black", thickness: int = 2) -> Any:
    from PIL import ImageDraw, ImageFont

    pen = ImageDraw.Draw(picture)
    pen.line([(xmin, ymin), (xmin, ymax), (xmax, ymax), (xmax, ymin), (xmin, ymin)], width=thickness, fill=color)
    if display_str:   # the label sits on a filled strip above the box's bottom edge
        font = ImageFont.load_default()
        left, top, right, bottom = font.getbbox(display_str)
        width, height = right - left, bottom - top
        margin = np.ceil(0.05 * height)
        pen.rectangle([(xmin, ymax - height - 2 * margin), (xmin + width, ymax)], fill=color)
        pen.text((xmin + margin, ymax - height - margin), display_str, fill=color_text, font=font)
    return picture


def draw_boxes(disp_image: Any, boxes: np.ndarray, labels: Sequence[str] | None = None) -> Any:
    """Draw red boxes (x1, y1, x2, y2 rows) on a PIL image."""
    for i, box in enumerate(boxes):
        disp_image = _draw_box(disp_image, *box[:4], None if labels is None else labels[i], color="Red")
    return disp_image


def make_image(tensor: np.ndarray, rescale: float = 1, rois: np.ndarray | None = None,
               labels: Sequence[str] | None = None) -> Summary.Image:
    """An HWC uint8 array as a PNG ``Summary.Image`` (the recorded size is the array's, before ``rescale``)."""
    from PIL import Image

    height, width, channels = tensor.shape
    picture = Image.fromarray(tensor)
    if rois is not None:
        picture = draw_boxes(picture, rois, labels=labels)
    picture = picture.resize((int(width * rescale), int(height * rescale)), Image.Resampling.LANCZOS)
    return Summary.Image(height=height, width=width, colorspace=channels, encoded_image_string=png_bytes(picture))


def video(tag: str, tensor: Any, fps: float = 4) -> Summary:
    """A batch of clips (B, T, C, H, W) as one animated GIF (needs moviepy)."""
    frames = _to_uint8(_prepare_video(make_np(tensor)))
    return _one(tag, image=make_video(frames, fps))


def make_video(tensor: np.ndarray, fps: float) -> Summary.Image | None:
    """Frames (T, H, W, C) uint8 encoded as a GIF by moviepy; None (with a message) without moviepy."""
    import tempfile
    try:
        import moviepy   # noqa: F401
    except ImportError:
        print("add_video needs package moviepy")
        return None
    try:
        from moviepy import editor as mpy
    except ImportError:
        print("moviepy is installed, but can't import moviepy.editor.",
              "Some packages could be missing [imageio, requests]")
        return None
    _, height, width, channels = tensor.shape
    clip = mpy.ImageSequenceClip(list(tensor), fps=fps)
    with tempfile.NamedTemporaryFile(suffix=".gif") as f:
        # moviepy's quiet-mode argument changed across versions: try the newest spelling first
        for quiet in ({"logger": None}, {"progress_bar": False}, {}):
            try:
                clip.write_gif(f.name, verbose=False, **quiet)
                break
            except TypeError:
                if not quiet:
                    raise
        f.seek(0)
        return Summary.Image(height=height, width=width, colorspace=channels, encoded_image_string=f.read())


# ---- audio, text, layouts

def audio(tag: str, tensor: Any, sample_rate: int = 44100) -> Summary:
    """A mono clip (values in [-1, 1]; louder ones are clipped) as 16-bit WAV."""
    import wave

    samples = make_np(tensor).squeeze()
    if abs(samples).max() > 1:
        print("warning: audio amplitude out of range, auto clipped.")
        samples = samples.clip(-1, 1)
    if samples.ndim != 1:
        raise AssertionError("input tensor should be 1 dimensional.")
    pcm = (samples * np.iinfo(np.int16).max).astype("<i2")
    buf = io.BytesIO()
    with wave.open(buf, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(sample_rate)
        wav.writeframes(pcm.tobytes())
    clip = Summary.Audio(sample_rate=sample_rate, num_channels=1, length_frames=pcm.shape[-1],
                         encoded_audio_string=buf.getvalue(), content_type="audio/wav")
    return _one(tag, audio=clip)


def text(tag: str, text: str) -> Summary:
    """A (markdown) string for the text plugin."""
    proto = TensorProto(dtype="DT_STRING", string_val=[text.encode("utf_8")], tensor_shape=_shape([1]))
    return _one(tag + "/text_summary", metadata=_meta("text", TextPluginData(version=0).SerializeToString()),
                tensor=proto)


def custom_scalars(layout: dict) -> Summary:
    """The custom-scalars plugin's layout: {category: {chart title: ["Multiline" or "Margin", tags]}}; a margin
    chart's tags are its value, lower and upper series."""
    categories = []
    for category, charts in layout.items():
        built = []
        for title, spec in charts.items():
            kind, tags = spec[0], spec[1]
            if kind == "Margin":
                if len(tags) != 3:
                    raise AssertionError("len(tags) != 3")
                series = layout_pb2.MarginChartContent.Series(value=tags[0], lower=tags[1], upper=tags[2])
                built.append(layout_pb2.Chart(title=title, margin=layout_pb2.MarginChartContent(series=[series])))
            else:
                built.append(layout_pb2.Chart(title=title, multiline=layout_pb2.MultilineChartContent(tag=tags)))
        categories.append(layout_pb2.Category(title=category, chart=built))
    proto = TensorProto(dtype="DT_STRING", string_val=[layout_pb2.Layout(category=categories).SerializeToString()],
                        tensor_shape=TensorShapeProto())
    return _one("custom_scalars__config__", tensor=proto, metadata=_meta("custom_scalars"))


# ---- hyperparameters

def hparams(hparam_dict: dict | None = None, metric_dict: dict | None = None,
            hparam_domain_discrete: dict[str, list] | None = None) -> tuple[Summary, Summary, Summary]:
    """The hparams plugin's three summaries: the experiment (which hyperparameters and metrics exist), the
    session's start (this run's values) and its end (success). Numbers (bools included) and one-element tensors
    are logged as numbers, strings as strings; None values are skipped."""
    from tensorboard.plugins.hparams import api_pb2
    from tensorboard.plugins.hparams import metadata as hp
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData, SessionEndInfo, SessionStartInfo

    for arg, given in (("hparam_dict", hparam_dict), ("metric_dict", metric_dict)):
        if not isinstance(given, dict):
            message = f"parameter: {arg} should be a dictionary, nothing logged."
            logger.warning(message)
            raise TypeError(message)
    domains = hparam_domain_discrete or {}
    if not isinstance(domains, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing logged.")
    for k, choices in domains.items():
        if k not in hparam_dict or not isinstance(choices, list) or \
                not all(isinstance(c, type(hparam_dict[k])) for c in choices):
            raise TypeError(f"parameter: hparam_domain_discrete[{k}] should be a list of same type as "
                            f"hparam_dict[{k}].")

    start, infos = SessionStartInfo(), []
    for k, v in hparam_dict.items():
        if v is None:
            continue
        domain = domains.get(k)
        if isinstance(v, Tensor):
            v, domain = make_np(v)[0], None   # a tensor logs its first value, with no domain
            field, kind = "number_value", api_pb2.DATA_TYPE_FLOAT64
        elif isinstance(v, (int, float)):   # (bool is an int: PyTorch logs it as a number too)
            field, kind = "number_value", api_pb2.DATA_TYPE_FLOAT64
        elif isinstance(v, str):
            field, kind = "string_value", api_pb2.DATA_TYPE_STRING
        else:
            raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")
        setattr(start.hparams[k], field, v)
        listed = None if domain is None else struct_pb2.ListValue(values=[struct_pb2.Value(**{field: c})
                                                                          for c in domain])
        infos.append(api_pb2.HParamInfo(name=k, type=kind, domain_discrete=listed))

    def wrap(tag: str, **part: Any) -> Summary:
        content = HParamsPluginData(version=hp.PLUGIN_DATA_VERSION, **part).SerializeToString()
        return _one(tag, metadata=_meta(hp.PLUGIN_NAME, content))

    experiment = api_pb2.Experiment(hparam_infos=infos,
                                    metric_infos=[api_pb2.MetricInfo(name=api_pb2.MetricName(tag=m))
                                                  for m in metric_dict])
    return (wrap(hp.EXPERIMENT_TAG, experiment=experiment),
            wrap(hp.SESSION_START_INFO_TAG, session_start_info=start),
            wrap(hp.SESSION_END_INFO_TAG, session_end_info=SessionEndInfo(status=api_pb2.STATUS_SUCCESS)))


# ---- precision-recall curves

def _pr_summary(tag: str, data: np.ndarray, num_thresholds: int) -> Summary:
    """The PR-curve plugin's 6 x thresholds float tensor: TP, FP, TN, FN, precision, recall."""
    content = PrCurvePluginData(version=0, num_thresholds=num_thresholds).SerializeToString()
    proto = TensorProto(dtype="DT_FLOAT", float_val=data.reshape(-1).tolist(), tensor_shape=_shape(data.shape[:2]))
    return _one(tag, metadata=_meta("pr_curves", content), tensor=proto)


def pr_curve_raw(tag: str, tp: Any, fp: Any, tn: Any, fn: Any, precision: Any, recall: Any,
                 num_thresholds: int = 127, weights: Any = None) -> Summary:
    """A PR curve from precomputed counts and rates (one value per threshold each)."""
    data = np.stack([_host(x) for x in (tp, fp, tn, fn, precision, recall)])
    return _pr_summary(tag, data, min(num_thresholds, 127))   # (the plugin rejects more than 127 thresholds)


def pr_curve(tag: str, labels: np.ndarray, predictions: np.ndarray, num_thresholds: int = 127,
             weights: Any = None) -> Summary:
    """A PR curve of binary ``labels`` against ``predictions`` in [0, 1]."""
    num_thresholds = min(num_thresholds, 127)
    return _pr_summary(tag, compute_curve(labels, predictions, num_thresholds, weights), num_thresholds)


def compute_curve(labels: np.ndarray, predictions: np.ndarray, num_thresholds: int | None = None,
                  weights: Any = None) -> np.ndarray:
    """TP, FP, TN, FN, precision and recall at ``num_thresholds`` evenly spaced thresholds (TensorBoard's
    algorithm: bucket the predictions, then count from the top bucket down)."""
    weights = 1.0 if weights is None else weights
    bucket = np.int32(np.floor(predictions * (num_thresholds - 1)))
    positive = labels.astype(np.float64)

    def per_bucket(w: Any) -> np.ndarray:
        return np.histogram(bucket, bins=num_thresholds, range=(0, num_thresholds - 1), weights=w)[0]

    tp = np.cumsum(per_bucket(positive * weights)[::-1])[::-1]   # predicted positive at or above each threshold
    fp = np.cumsum(per_bucket((1.0 - positive) * weights)[::-1])[::-1]
    tn, fn = fp[0] - fp, tp[0] - tp
    tiny = 1e-7   # keeps an empty denominator from dividing by zero
    return np.stack((tp, fp, tn, fn, tp / np.maximum(tiny, tp + fp), tp / np.maximum(tiny, tp + fn)))


# ---- meshes

def mesh(tag: str, vertices: Any, colors: Any, faces: Any, config_dict: dict | None,
         display_name: str | None = None, description: str | None = None) -> Summary:
    """A mesh or point cloud for the mesh plugin: one value per part given (vertices, faces, colors), each a
    (batch, n, 3) float tensor; ``config_dict`` configures three.js (camera, lights, material)."""
    from tensorboard.plugins.mesh import metadata
    from tensorboard.plugins.mesh.plugin_data_pb2 import MeshPluginData

    config = "{}" if config_dict is None else json.dumps(config_dict, sort_keys=True)
    parts = [(x, kind) for x, kind in ((vertices, MeshPluginData.VERTEX), (faces, MeshPluginData.FACE),
                                       (colors, MeshPluginData.COLOR)) if x is not None]
    components = metadata.get_components_bitmask([kind for _, kind in parts])
    values = []
    for x, kind in parts:
        array = _host(x)
        meta = metadata.create_summary_metadata(tag, display_name, kind, components, array.shape, description,
                                                json_config=config)
        proto = TensorProto(dtype="DT_FLOAT", float_val=array.reshape(-1).tolist(),
                            tensor_shape=_shape(array.shape[:3]))
        values.append(Summary.Value(tag=metadata.get_instance_name(tag, kind), tensor=proto, metadata=meta))
    return Summary(value=values)
