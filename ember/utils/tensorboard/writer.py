"""``SummaryWriter``: logs a run for TensorBoard. Each ``add_*`` method builds a ``Summary`` proto with a builder
of summary.py and hands it, wrapped in an ``Event`` with the step and wall time, to a ``FileWriter``, which queues
it for TensorBoard's own event-file writer (written on a background thread, flushed every ``flush_secs``)."""
from __future__ import annotations

import os
import socket
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any, Sequence

from tensorboard.compat import tf
from tensorboard.compat.proto.event_pb2 import Event, SessionLog, TaggedRunMetadata
from tensorboard.plugins.projector.projector_config_pb2 import ProjectorConfig
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from . import summary as S
from ._convert_np import make_np
from ._embedding import get_embedding_info, make_mat, make_sprite, make_tsv, write_pbtxt
from ._ember_graph import graph
from ._onnx_graph import load_onnx_graph
from ._utils import figure_to_image

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from tensorboard.compat.proto.summary_pb2 import Summary

__all__ = ["FileWriter", "SummaryWriter"]


class FileWriter:
    """Writes events into one new event file in ``log_dir``; ``max_queue`` pending events or ``flush_secs``
    seconds, whichever comes first, trigger a write to disk."""

    def __init__(self, log_dir: str | os.PathLike, max_queue: int = 10, flush_secs: int = 120,
                 filename_suffix: str = "") -> None:
        log_dir = str(log_dir)   # EventFileWriter wants a str (a pathlib.Path is common)
        try:
            self.event_writer = EventFileWriter(log_dir, max_queue, flush_secs, filename_suffix)
        except OSError as e:   # the same exception type as PyTorch's, naming the directory and what to do
            raise type(e)(e.errno, f"SummaryWriter cannot write event files in log_dir {log_dir!r}: "
                                   f"{e.strerror}; pass a writable directory as log_dir") from e

    def get_logdir(self) -> str:
        """The directory of the event file."""
        return self.event_writer.get_logdir()

    def add_event(self, event: Event, step: int | None = None, walltime: float | None = None) -> None:
        """Queue ``event``, stamped with ``walltime`` (default: now) and ``step`` if given."""
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)   # a NumPy or tensor step: protobuf wants a Python int
        self.event_writer.add_event(event)

    def add_summary(self, summary: Summary, global_step: int | None = None, walltime: float | None = None) -> None:
        """Queue a ``Summary`` proto as an event."""
        self.add_event(Event(summary=summary), global_step, walltime)

    def add_graph(self, graph_profile: tuple, walltime: float | None = None) -> None:
        """Queue a (GraphDef, RunMetadata) pair: the graph, then its run metadata tagged "step1"."""
        graph_def, run_metadata = graph_profile
        self.add_event(Event(graph_def=graph_def.SerializeToString()), None, walltime)
        tagged = TaggedRunMetadata(tag="step1", run_metadata=run_metadata.SerializeToString())
        self.add_event(Event(tagged_run_metadata=tagged), None, walltime)

    def add_onnx_graph(self, graph: Any, walltime: float | None = None) -> None:
        """Queue a GraphDef (from an ONNX file) alone."""
        self.add_event(Event(graph_def=graph.SerializeToString()), None, walltime)

    def flush(self) -> None:
        """Write every pending event to disk."""
        self.event_writer.flush()

    def close(self) -> None:
        """Flush and close the event file."""
        self.event_writer.close()

    def reopen(self) -> None:
        """After ``close``: continue in a new event file of the same directory."""
        self.event_writer.reopen()


class SummaryWriter:
    """Logs scalars, histograms, images, text, graphs, embeddings, ... of a run into event files under
    ``log_dir`` (default ``runs/<date>_<host><comment>``). ``purge_step`` tells TensorBoard to hide the events
    of an earlier, crashed run from that step on. Usable as a context manager (closes on exit)."""

    def __init__(self, log_dir: str | os.PathLike | None = None, comment: str = "", purge_step: int | None = None,
                 max_queue: int = 10, flush_secs: int = 120, filename_suffix: str = "") -> None:
        if not log_dir:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = log_dir
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.default_bins = S._tensorflow_bins()
        # the main FileWriter and one per add_scalars series, by directory; None once closed
        self.file_writer: FileWriter | None = None
        self.all_writers: dict[str, FileWriter] | None = None
        self._get_file_writer()

    def _get_file_writer(self) -> FileWriter:
        """The main FileWriter, opened again (into a new file) if the writer was closed."""
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs, self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:   # a restart: TensorBoard drops the old events from this step on
                self.file_writer.add_event(Event(step=self.purge_step, file_version="brain.Event:2"))
                self.file_writer.add_event(Event(step=self.purge_step,
                                                 session_log=SessionLog(status=SessionLog.START)))
                self.purge_step = None
        return self.file_writer

    def _log(self, summary: Summary, global_step: int | None = None, walltime: float | None = None) -> None:
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def get_logdir(self) -> str:
        """The directory the event files go to."""
        return self.log_dir

    # ---- numbers

    def add_scalar(self, tag: str, scalar_value: Any, global_step: int | None = None, walltime: float | None = None,
                   new_style: bool = False, double_precision: bool = False) -> None:
        """Log one number (a Python number or a one-element tensor/array) under ``tag`` at ``global_step``;
        ``new_style`` stores it as a scalars-plugin tensor (float, or double with ``double_precision``)."""
        self._log(S.scalar(tag, scalar_value, new_style=new_style, double_precision=double_precision),
                  global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict[str, Any], global_step: int | None = None,
                    walltime: float | None = None) -> None:
        """Log several numbers on one chart: each key is a run of its own, ``<log_dir>/<main_tag>_<key>``, with
        the scalar tagged ``main_tag``."""
        walltime = time.time() if walltime is None else walltime   # one time for every series of the call
        base = self._get_file_writer().get_logdir()
        for key, value in tag_scalar_dict.items():
            run = f"{base}/{main_tag.replace('/', '_')}_{key}"
            if run not in self.all_writers:
                self.all_writers[run] = FileWriter(run, self.max_queue, self.flush_secs, self.filename_suffix)
            self.all_writers[run].add_summary(S.scalar(main_tag, value), global_step, walltime)

    def add_tensor(self, tag: str, tensor: Any, global_step: int | None = None,
                   walltime: float | None = None) -> None:
        """Log a whole tensor (values, dtype and shape)."""
        self._log(S.tensor_proto(tag, tensor), global_step, walltime)

    def add_histogram(self, tag: str, values: Any, global_step: int | None = None, bins: Any = "tensorflow",
                      walltime: float | None = None, max_bins: int | None = None) -> None:
        """Log the distribution of ``values``: ``bins`` is "tensorflow" (TensorBoard's default exponential
        buckets) or anything ``numpy.histogram`` takes ("auto", "fd", a count, edges)."""
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._log(S.histogram(tag, values, bins, max_bins=max_bins), global_step, walltime)

    def add_histogram_raw(self, tag: str, min: float, max: float, num: int, sum: float,   # noqa: A002
                          sum_squares: float, bucket_limits: Sequence[float], bucket_counts: Sequence[float],
                          global_step: int | None = None, walltime: float | None = None) -> None:
        """Log a histogram computed elsewhere: statistics, and each bucket's right edge and count."""
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError("len(bucket_limits) != len(bucket_counts), see the document.")
        self._log(S.histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts),
                  global_step, walltime)

    def add_pr_curve(self, tag: str, labels: Any, predictions: Any, global_step: int | None = None,
                     num_thresholds: int = 127, weights: Any = None, walltime: float | None = None) -> None:
        """Log a precision-recall curve of binary ``labels`` against ``predictions`` in [0, 1]."""
        self._log(S.pr_curve(tag, make_np(labels), make_np(predictions), num_thresholds, weights),
                  global_step, walltime)

    def add_pr_curve_raw(self, tag: str, true_positive_counts: Any, false_positive_counts: Any,
                         true_negative_counts: Any, false_negative_counts: Any, precision: Any, recall: Any,
                         global_step: int | None = None, num_thresholds: int = 127, weights: Any = None,
                         walltime: float | None = None) -> None:
        """Log a precision-recall curve from counts and rates computed elsewhere (one value per threshold)."""
        self._log(S.pr_curve_raw(tag, true_positive_counts, false_positive_counts, true_negative_counts,
                                 false_negative_counts, precision, recall, num_thresholds, weights),
                  global_step, walltime)

    def add_hparams(self, hparam_dict: dict[str, Any], metric_dict: dict[str, Any],
                    hparam_domain_discrete: dict[str, list] | None = None, run_name: str | None = None,
                    global_step: int | None = None) -> None:
        """Log a run's hyperparameters with its final metrics for the hparams plugin, in a run of their own,
        ``<log_dir>/<run_name>`` (default: the current time). ``hparam_domain_discrete`` lists the values a
        hyperparameter can take."""
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        summaries = S.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        run = os.path.join(self._get_file_writer().get_logdir(), run_name or str(time.time()))
        with SummaryWriter(log_dir=run) as w:
            for s in summaries:
                w.file_writer.add_summary(s, global_step)
            for name, value in metric_dict.items():
                w.add_scalar(name, value, global_step)

    # ---- pictures and media

    def add_image(self, tag: str, img_tensor: Any, global_step: int | None = None, walltime: float | None = None,
                  dataformats: str = "CHW") -> None:
        """Log an image (floats in [0, 1] or uint8) as PNG; ``dataformats`` names its axes (CHW, HWC, HW, ...)."""
        self._log(S.image(tag, img_tensor, dataformats=dataformats), global_step, walltime)

    def add_images(self, tag: str, img_tensor: Any, global_step: int | None = None, walltime: float | None = None,
                   dataformats: str = "NCHW") -> None:
        """Log a batch of images, tiled into one (8 to a row)."""
        self._log(S.image(tag, img_tensor, dataformats=dataformats), global_step, walltime)

    def add_image_with_boxes(self, tag: str, img_tensor: Any, box_tensor: Any, global_step: int | None = None,
                             walltime: float | None = None, rescale: float = 1, dataformats: str = "CHW",
                             labels: Sequence[str] | str | None = None) -> None:
        """Log an image with boxes drawn on it (rows of x1, y1, x2, y2); ``labels``, one per box, are written
        on them (a count that does not match the boxes drops the labels)."""
        if isinstance(labels, str):
            labels = [labels]
        if labels is not None and len(labels) != box_tensor.shape[0]:
            labels = None
        self._log(S.image_boxes(tag, img_tensor, box_tensor, rescale=rescale, dataformats=dataformats,
                                labels=labels), global_step, walltime)

    def add_figure(self, tag: str, figure: Figure | list[Figure], global_step: int | None = None,
                   close: bool = True, walltime: float | None = None) -> None:
        """Log a matplotlib figure (or a list, tiled) as an image; ``close`` closes the figures after."""
        self.add_image(tag, figure_to_image(figure, close), global_step, walltime,
                       dataformats="NCHW" if isinstance(figure, list) else "CHW")

    def add_video(self, tag: str, vid_tensor: Any, global_step: int | None = None, fps: float = 4,
                  walltime: float | None = None) -> None:
        """Log clips (N, T, C, H, W) as an animated GIF (needs moviepy)."""
        self._log(S.video(tag, vid_tensor, fps), global_step, walltime)

    def add_audio(self, tag: str, snd_tensor: Any, global_step: int | None = None, sample_rate: int = 44100,
                  walltime: float | None = None) -> None:
        """Log a mono sound (values in [-1, 1]) as WAV."""
        self._log(S.audio(tag, snd_tensor, sample_rate=sample_rate), global_step, walltime)

    def add_text(self, tag: str, text_string: str, global_step: int | None = None,
                 walltime: float | None = None) -> None:
        """Log a string (TensorBoard renders it as markdown)."""
        self._log(S.text(tag, text_string), global_step, walltime)

    def add_mesh(self, tag: str, vertices: Any, colors: Any = None, faces: Any = None,
                 config_dict: dict | None = None, global_step: int | None = None,
                 walltime: float | None = None) -> None:
        """Log a 3-D mesh or point cloud: ``vertices`` (B, N, 3), optional per-vertex ``colors`` and triangle
        ``faces`` (vertex indices); ``config_dict`` configures the three.js view."""
        self._log(S.mesh(tag, vertices, colors, faces, config_dict), global_step, walltime)

    # ---- graphs, layouts, embeddings

    def add_graph(self, model: Any, input_to_model: Any = None, verbose: bool = False,
                  use_strict_trace: bool = True) -> None:
        """Log the graph of one forward call of ``model`` on ``input_to_model`` (a tensor or a tuple), built
        from ember's autograd graph (see _ember_graph.py); ``verbose`` prints it."""
        self._get_file_writer().add_graph(graph(model, input_to_model, verbose, use_strict_trace))

    def add_onnx_graph(self, prototxt: str) -> None:
        """Log the graph of an ONNX model file (needs onnx)."""
        self._get_file_writer().add_onnx_graph(load_onnx_graph(prototxt))

    def add_custom_scalars(self, layout: dict) -> None:
        """Log a custom-scalars layout: {category: {chart title: ["Multiline" or "Margin", tags]}}."""
        self._log(S.custom_scalars(layout))

    def add_custom_scalars_multilinechart(self, tags: list[str], category: str = "default",
                                          title: str = "untitled") -> None:
        """A custom-scalars layout with one chart plotting ``tags`` together."""
        self.add_custom_scalars({category: {title: ["Multiline", tags]}})

    def add_custom_scalars_marginchart(self, tags: list[str], category: str = "default",
                                       title: str = "untitled") -> None:
        """A custom-scalars layout with one margin chart: ``tags`` are its value, lower and upper bounds."""
        if len(tags) != 3:
            raise AssertionError(f"Expected 3 tags, got {len(tags)}.")
        self.add_custom_scalars({category: {title: ["Margin", tags]}})

    @staticmethod
    def _encode(rawstr: str) -> str:
        """A tag made safe as one directory name ('%', '/' and '\\' percent-encoded)."""
        return "".join(f"%{ord(c):02x}" if c in "%/\\" else c for c in rawstr)

    def add_embedding(self, mat: Any, metadata: Sequence[Any] | None = None, label_img: Any = None,
                      global_step: int | None = None, tag: str = "default",
                      metadata_header: Sequence[str] | None = None) -> None:
        """Log points (``mat``: N x D) for the embedding projector, with optional labels (``metadata``: one per
        point, or rows under ``metadata_header``) and thumbnails (``label_img``: N x C x H x W)."""
        mat = make_np(mat)
        global_step = 0 if global_step is None else global_step
        subdir = f"{str(global_step).zfill(5)}/{self._encode(tag)}"
        log_dir = self._get_file_writer().get_logdir()
        save_path = os.path.join(log_dir, subdir)
        if not tf.io.gfile.exists(save_path):
            tf.io.gfile.makedirs(save_path)
        elif tf.io.gfile.isdir(save_path):
            print("warning: Embedding dir exists, did you set global_step for add_embedding()?")
        else:
            raise NotADirectoryError(f"Path: `{save_path}` exists, but is a file. Cannot proceed.")
        if metadata is not None:
            if mat.shape[0] != len(metadata):
                raise AssertionError("#labels should equal with #data points")
            make_tsv(metadata, save_path, metadata_header=metadata_header)
        if label_img is not None:
            if mat.shape[0] != label_img.shape[0]:
                raise AssertionError("#images should equal with #data points")
            make_sprite(label_img, save_path)
        if mat.ndim != 2:
            raise AssertionError("mat should be 2D, where mat.size(0) is the number of data points")
        make_mat(mat, save_path)
        # the config lists every embedding of this writer; it is kept here and the file rewritten each time
        from google.protobuf import text_format
        if not hasattr(self, "_projector_config"):
            self._projector_config = ProjectorConfig()
        self._projector_config.embeddings.append(get_embedding_info(metadata, label_img, subdir, global_step, tag))
        write_pbtxt(log_dir, text_format.MessageToString(self._projector_config))

    # ---- lifetime

    def flush(self) -> None:
        """Write every pending event of every run to disk."""
        for w in (self.all_writers or {}).values():
            w.flush()

    def close(self) -> None:
        """Flush and close the event files (a second close does nothing; a later add_* opens new files)."""
        if self.all_writers is None:
            return
        for w in self.all_writers.values():
            w.flush()
            w.close()
        self.file_writer = self.all_writers = None

    def __enter__(self) -> "SummaryWriter":
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        self.close()
