"""ember.utils.tensorboard against torch.utils.tensorboard 2.13: the same calls on both writers, the event files
read back with tensorboard's own EventAccumulator (tags, steps, values, histogram buckets, PNG images, text,
hparams, audio, meshes, PR curves) and the projector's files compared byte for byte; add_graph's GraphDef from
ember's autograd graph (inputs, outputs, module scopes as torch's); log_dir's default, errors."""
from __future__ import annotations

import os
import subprocess
import sys
from importlib import import_module

import numpy as np
import pytest
import torch

import ember

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402

_ALL = {"images": 0, "histograms": 0, "scalars": 0, "tensors": 0, "audio": 0}


def _writer(lib):
    return import_module(lib.__name__ + ".utils.tensorboard").SummaryWriter


def _read(run_dir: str) -> dict:
    """Everything the event files of one run hold, as comparable values."""
    ea = EventAccumulator(run_dir, size_guidance=_ALL)
    ea.Reload()
    tags, out = ea.Tags(), {}
    for t in tags["scalars"]:
        out["scalar:" + t] = [(e.step, e.value) for e in ea.Scalars(t)]
    for t in tags["histograms"]:
        out["histogram:" + t] = [(e.step, h.min, h.max, h.num, h.sum, h.sum_squares, tuple(h.bucket_limit),
                                  tuple(h.bucket)) for e in ea.Histograms(t) for h in [e.histogram_value]]
    for t in tags["images"]:
        out["image:" + t] = [(e.step, e.width, e.height, e.encoded_image_string) for e in ea.Images(t)]
    for t in tags["audio"]:
        out["audio:" + t] = [(e.step, e.sample_rate, e.encoded_audio_string) for e in ea.Audio(t)]
    for t in tags["tensors"]:
        out["tensor:" + t] = [(e.step, e.tensor_proto.SerializeToString()) for e in ea.Tensors(t)]
        out["metadata:" + t] = ea.SummaryMetadata(t).SerializeToString()
    return out


def _runs(log_dir: str) -> dict:
    """Each directory holding event files (add_scalars and add_hparams write runs below log_dir) -> _read."""
    return {os.path.relpath(root, log_dir): _read(root) for root, _, files in os.walk(log_dir)
            if any(f.startswith("events.out.tfevents") for f in files)}


def _other_files(log_dir: str) -> dict:
    return {os.path.relpath(os.path.join(root, f), log_dir): open(os.path.join(root, f), "rb").read()
            for root, _, files in os.walk(log_dir) for f in files if not f.startswith("events.out.tfevents")}


def _log_everything(lib, log_dir: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    r = np.random.RandomState(0)
    data = r.randn(1000).astype(np.float32)
    with _writer(lib)(log_dir) as w:
        for step in range(3):
            w.add_scalar("loss", 1.0 / (step + 1), step)
            w.add_scalar("tensor_scalar", lib.tensor(2.5 * step), step)
        w.add_scalar("new_style", 3.5, 0, new_style=True)
        w.add_scalar("double", 3.5, 0, new_style=True, double_precision=True)
        w.add_scalar("walltime", 1.0, 7, walltime=123.0)
        w.add_scalars("run", {"a": 1.0, "b": lib.tensor(2.0)}, 0)
        w.add_histogram("hist", lib.tensor(data), 0)
        w.add_histogram("hist_bf16", lib.tensor(data[:50], dtype=lib.bfloat16), 0)
        w.add_histogram("hist_auto", lib.tensor(data), 1, bins="auto")
        w.add_histogram("hist_max_bins", lib.tensor(data, dtype=lib.float64), 1, bins=10, max_bins=4)
        w.add_histogram("hist_int", lib.arange(10), 0)
        w.add_histogram("hist_np", data[:20], 0)
        w.add_histogram_raw("raw", 0., 10., 5, 20., 100., [1., 5., 10.], [1, 2, 2], 0)
        w.add_image("chw", lib.tensor(r.rand(3, 8, 5).astype(np.float32)), 0)
        w.add_image("hwc", lib.tensor(r.rand(8, 5, 3).astype(np.float32)), 0, dataformats="HWC")
        w.add_image("hw", lib.tensor(r.rand(8, 5).astype(np.float32)), 0, dataformats="HW")
        w.add_image("uint8", lib.tensor(r.randint(0, 255, (1, 4, 4)).astype(np.uint8)), 0)
        w.add_image("numpy", r.rand(3, 4, 4), 0)
        w.add_images("nchw", lib.tensor(r.rand(10, 3, 6, 7).astype(np.float32)), 0)
        w.add_images("nhwc", lib.tensor(r.rand(3, 6, 7, 1).astype(np.float32)), 0, dataformats="NHWC")
        w.add_image_with_boxes("boxes", lib.tensor(r.rand(3, 20, 20).astype(np.float32)),
                               lib.tensor([[1., 2., 10., 12.]]), 0, labels=["cat"])
        fig = plt.figure(figsize=(2, 2))
        plt.plot([1, 2, 3])
        w.add_figure("figure", fig, 0)
        figs = [plt.figure(figsize=(1, 1)) for _ in range(2)]
        w.add_figure("figures", figs, 0)
        w.add_text("note", "hello *world*", 0)
        w.add_tensor("tensor", lib.arange(6.).reshape(2, 3), 0)
        w.add_audio("audio", lib.tensor(np.sin(np.arange(100) / 5).astype(np.float32)), 0, sample_rate=8000)
        w.add_pr_curve("pr", lib.tensor(r.randint(0, 2, 100)), lib.tensor(r.rand(100).astype(np.float32)), 0)
        w.add_custom_scalars_multilinechart(["loss", "run"])
        w.add_mesh("mesh", lib.tensor([[[1., 1, 1], [-1, -1, 1], [1, -1, -1]]]),
                   faces=lib.tensor([[[0, 1, 2]]], dtype=lib.int32), global_step=0)
        mat, imgs = lib.tensor(r.randn(6, 4).astype(np.float32)), lib.tensor(r.rand(6, 3, 5, 5).astype(np.float32))
        w.add_embedding(mat, metadata=list("abcdef"), label_img=imgs, global_step=1, tag="emb")
        w.add_embedding(mat, metadata=[[i, c] for i, c in enumerate("uvwxyz")], metadata_header=["n", "s"])
        w.add_hparams({"lr": 0.1, "bs": 32, "opt": "sgd", "flag": True, "t": lib.tensor([0.5])}, {"hp/acc": 0.9},
                      hparam_domain_discrete={"opt": ["sgd", "adam"]}, run_name="hp")
        w.flush()


def test_event_files_as_torch(tmp_path):
    mine, theirs = str(tmp_path / "ember"), str(tmp_path / "torch")
    _log_everything(ember, mine)
    _log_everything(torch, theirs)
    a, b = _runs(mine), _runs(theirs)
    assert sorted(a) == sorted(b) == [".", "hp", "run_a", "run_b"]
    for run in b:
        assert sorted(a[run]) == sorted(b[run]), run
        for key in b[run]:
            assert a[run][key] == b[run][key], (run, key)
    assert a["."]["histogram:hist"][0][5:] == b["."]["histogram:hist"][0][5:]   # (PyTorch's default bins)
    assert _other_files(mine) == _other_files(theirs)   # projector: tensors.tsv, metadata.tsv, sprite.png, pbtxt


class Net(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = ember.nn.Linear(4, 8)
        self.act = ember.nn.ReLU()
        self.block = ember.nn.Sequential(ember.nn.Linear(8, 8), ember.nn.Tanh())
        self.fc2 = ember.nn.Linear(8, 2)

    def forward(self, x):
        return self.fc2(self.block(self.act(self.fc1(x)))) * 2 + x.sum()


class TorchNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.act = torch.nn.ReLU()
        self.block = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh())
        self.fc2 = torch.nn.Linear(8, 2)

    def forward(self, x):
        return self.fc2(self.block(self.act(self.fc1(x)))) * 2 + x.sum()


TorchNet.__name__ = "Net"


def _graph(lib, model, log_dir, x):
    with _writer(lib)(log_dir) as w:
        w.add_graph(model, x)
    ea = EventAccumulator(log_dir)
    ea.Reload()
    return ea.Graph(), ea.Tags()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")   # torch.jit.trace, which torch's add_graph calls
def test_add_graph(tmp_path):
    model = Net()
    model.train()
    g, tags = _graph(ember, model, str(tmp_path / "e"), ember.randn(3, 4))
    tg, ttags = _graph(torch, TorchNet(), str(tmp_path / "t"), torch.randn(3, 4))
    assert model.training and tags["graph"] and tags["run_metadata"] == ttags["run_metadata"] == ["step1"]
    nodes = {n.name: n for n in g.node}
    theirs = {n.name: n for n in tg.node}
    for io in ("input/x", "output/output.1"):   # the inputs and outputs, named and shaped as torch's
        assert nodes[io].op == theirs[io].op == "IO Node"
        assert nodes[io].attr["_output_shapes"] == theirs[io].attr["_output_shapes"]
    scopes = {n.name.rpartition("/")[0] for n in g.node if "/" in n.name}
    torch_scopes = {n.name.rpartition("/")[0] for n in tg.node if "/" in n.name and "[" in n.name}
    assert {s for s in torch_scopes if not s.endswith(("weight", "bias"))} <= scopes   # module scopes as torch's
    ops = {n.op for n in g.node}
    assert {"aten::addmm", "aten::relu", "aten::tanh", "aten::mul", "aten::sum", "aten::add", "prim::GetAttr",
            "prim::Constant"} <= ops
    assert nodes["Net/Sequential[block]/Linear[0]/weight"].op == "prim::GetAttr"
    # every edge points at a node of the graph; the output is fed by the last op
    for n in g.node:
        assert all(i in nodes for i in n.input), n.name
    assert nodes[nodes["output/output.1"].input[0]].op == "aten::add"
    relu = next(n for n in g.node if n.op == "aten::relu")
    assert relu.name.startswith("Net/ReLU[act]/")
    assert [d.size for d in relu.attr["_output_shapes"].list.shape[0].dim] == [3, 8]


def test_add_graph_convolution_and_tuple_inputs(tmp_path):
    class Two(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = ember.nn.Conv2d(1, 2, 3)
            self.pool = ember.nn.MaxPool2d(2)

        def forward(self, image, scale):
            return self.pool(self.conv(image)).flatten(1) * scale

    g, _ = _graph(ember, Two(), str(tmp_path), (ember.randn(1, 1, 6, 6), ember.tensor(3.)))
    names = {n.name: n for n in g.node}
    assert "input/image" in names and "input/scale" in names
    kinds = {n.op for n in g.node}
    assert {"aten::convolution", "aten::max_pool2d_with_indices", "aten::view", "aten::mul"} <= kinds
    assert any(n.name.startswith("Two/Conv2d[conv]/") for n in g.node)


def test_default_log_dir_and_comment(tmp_path, monkeypatch):
    import socket
    monkeypatch.chdir(tmp_path)
    w = _writer(ember)(comment="_lr0.1")
    try:
        head, name = os.path.split(w.log_dir)
        assert head == "runs" and name.endswith("_" + socket.gethostname() + "_lr0.1")
        assert w.get_logdir() == w.log_dir and os.path.isdir(w.log_dir)
    finally:
        w.close()
        w.close()   # a second close is ignored, as PyTorch's


def test_unwritable_log_dir(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    for lib in (torch, ember):
        with pytest.raises(NotADirectoryError) as info:
            _writer(lib)(str(blocker / "run"))
    assert "cannot write event files in log_dir" in str(info.value) and str(blocker / "run") in str(info.value)


def test_reopen_after_close_and_file_writer(tmp_path):
    from ember.utils.tensorboard import FileWriter
    w = _writer(ember)(str(tmp_path))
    w.add_scalar("a", 1.0, 0)
    w.close()
    w.add_scalar("a", 2.0, 1)   # writes again after close, into a new file, as PyTorch's
    w.close()
    assert [v for _, v in _read(str(tmp_path))["scalar:a"]] == [1.0, 2.0]
    fw = FileWriter(tmp_path / "fw")
    assert fw.get_logdir() == str(tmp_path / "fw")
    fw.close()


def test_errors_as_torch(tmp_path):
    cases = [
        lambda w, m: w.add_scalar("x", m.tensor([1., 2.])),
        lambda w, m: w.add_histogram("h", m.tensor([])),
        lambda w, m: w.add_hparams([1], {}),
        lambda w, m: w.add_hparams({"a": [1]}, {"m": 1.0}),
        lambda w, m: w.add_image("i", m.zeros(3, 4, 4), dataformats="CHWW"),
        lambda w, m: w.add_histogram_raw("r", 0, 1, 1, 1, 1, [1.0], [1, 2]),
    ]
    for i, case in enumerate(cases):
        got = []
        for lib in (torch, ember):
            with _writer(lib)(str(tmp_path / f"{lib.__name__}{i}")) as w:
                try:
                    case(w, lib)
                    got.append(None)
                except Exception as e:   # noqa: BLE001  (comparing exceptions is the point)
                    got.append((type(e).__name__, str(e)))
        assert got[0] == got[1], i


def test_missing_tensorboard_raises_torchs_import_error():
    code = ("import sys; sys.modules['tensorboard'] = None\n"
            "try:\n    import {}.utils.tensorboard\nexcept ImportError as e:\n    print(type(e).__name__, e)")
    out = [subprocess.run([sys.executable, "-c", code.format(name)], capture_output=True, text=True,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__)))).stdout
           for name in ("torch", "ember")]
    assert out[0] == out[1] and out[0].startswith("ModuleNotFoundError")
    import ember.utils   # noqa: F401  (ember.utils itself never needs the optional package)
    assert "tensorboard" not in ember.utils.__all__


def _log_more(lib, log_dir: str) -> None:
    """What _log_everything leaves out: every tensor dtype, raw PR curves, margin layouts, discrete string and
    number domains, coloured meshes, boxes with rescale and stray labels, grey batches, purge_step."""
    r = np.random.RandomState(1)
    with _writer(lib)(log_dir, purge_step=5) as w:
        for name in ("float16", "bfloat16", "float64", "int8", "uint8", "int16", "int32", "int64", "bool",
                     "complex64", "complex128"):
            dtype = getattr(lib, name)
            t = lib.tensor(r.randn(2, 3) * 3).to(dtype) if name != "bool" else lib.tensor([[True, False]])
            w.add_tensor("t_" + name, t, 0)
        tp, fp = lib.tensor([5., 3., 1.]), lib.tensor([4., 2., 0.])
        w.add_pr_curve_raw("raw_pr", tp, fp, 4 - fp, 5 - tp, tp / (tp + fp + 1e-7), tp / 5, 0, num_thresholds=3)
        w.add_pr_curve("pr_w", r.randint(0, 2, 50), r.rand(50), 0, num_thresholds=200, weights=r.rand(50))
        w.add_custom_scalars({"cat": {"m": ["Margin", ["a", "lo", "hi"]], "l": ["Multiline", ["a", "b"]]}})
        w.add_custom_scalars_marginchart(["x", "y", "z"], category="c2", title="t2")
        w.add_mesh("colored", lib.tensor(r.rand(1, 4, 3).astype(np.float32)),
                   colors=lib.tensor(r.randint(0, 255, (1, 4, 3)), dtype=lib.uint8),
                   config_dict={"camera": {"cls": "PerspectiveCamera", "fov": 75}}, global_step=1)
        w.add_image_with_boxes("boxes2", r.rand(20, 24, 3), lib.tensor([[1., 2., 10., 12.], [3., 3., 8., 9.]]), 0,
                               rescale=2, dataformats="HWC", labels="one label for two boxes")
        w.add_image_with_boxes("boxes3", lib.tensor(r.rand(3, 30, 30).astype(np.float32)),
                               np.array([[2., 2., 20., 25.]]), 0, labels="dog")
        w.add_images("grey", lib.tensor(r.rand(5, 1, 4, 6).astype(np.float32)), 0)
        w.add_image("wh", r.rand(5, 7), 0, dataformats="WH")
        w.add_image("rgba", r.randint(0, 255, (6, 6, 4)).astype(np.uint8), 0, dataformats="HWC")
        w.add_histogram("hist_fd", lib.tensor(r.randn(300)), 0, bins="fd")
        w.add_histogram("hist_max_bins_even", r.randn(100), 0, bins=12, max_bins=3)
        w.add_text("unicode", "héllo ✓", 2)
        w.add_scalar("np_step", np.float32(1.5), np.int64(4))
        w.add_hparams({"opt": "adam", "lr": 0.5, "none": None}, {"m/a": 1.0, "m/b": lib.tensor(2.0)},
                      hparam_domain_discrete={"opt": ["adam", "sgd"], "lr": [0.5, 0.1]}, run_name="hp2",
                      global_step=3)


def test_more_event_files_as_torch(tmp_path):
    mine, theirs = str(tmp_path / "ember"), str(tmp_path / "torch")
    _log_more(ember, mine)
    _log_more(torch, theirs)
    a, b = _runs(mine), _runs(theirs)
    assert sorted(a) == sorted(b) == [".", "hp2"]
    for run in b:
        assert sorted(a[run]) == sorted(b[run]), run
        for key in b[run]:
            assert a[run][key] == b[run][key], (run, key)


def test_helpers_as_torch():
    """The layout and statistics helpers on their own, against torch's, on shapes the writer tests miss."""
    from torch.utils.tensorboard import _utils as tu, summary as ts
    from ember.utils.tensorboard import _utils as eu, summary as es
    r = np.random.RandomState(2)
    for b in range(1, 8):   # clip counts padded to a power of two
        v = r.rand(b, 2, 3, 4, 5).astype(np.float32)
        np.testing.assert_array_equal(eu._prepare_video(v), tu._prepare_video(v))
    u8 = r.randint(0, 255, (3, 2, 3, 4, 5)).astype(np.uint8)
    np.testing.assert_array_equal(eu._prepare_video(u8), tu._prepare_video(u8))
    for n in (1, 3, 8, 9, 17):
        for ncols in (1, 3, 8):
            imgs = r.rand(n, 3, 4, 5)
            np.testing.assert_array_equal(eu.make_grid(imgs, ncols), tu.make_grid(imgs, ncols))
    for fmt, shape in (("HWC", (4, 5, 1)), ("CWH", (3, 5, 4)), ("NHWC", (2, 4, 5, 3)), ("hw", (4, 5)),
                       ("WCNH", (5, 1, 3, 4))):
        x = r.rand(*shape)
        np.testing.assert_array_equal(eu.convert_to_HWC(x, fmt), tu.convert_to_HWC(x, fmt))
    data = r.randn(200)
    for bins, max_bins in ((10, None), (10, 3), (7, 7), (30, 4), ([-1e9, -1e8, 1e8, 1e9], None), ([5, 6], None),
                           ("auto", 5)):
        try:
            theirs = ts.make_histogram(data, bins, max_bins)
        except ValueError as e:
            with pytest.raises(ValueError, match=str(e)):
                es.make_histogram(data, bins, max_bins)
            continue
        assert es.make_histogram(data, bins, max_bins) == theirs, (bins, max_bins)
    labels, preds = r.randint(0, 2, 40), r.rand(40)
    for n, w in ((2, None), (10, r.rand(40)), (127, 2.0)):
        np.testing.assert_array_equal(es.compute_curve(labels, preds, n, w), ts.compute_curve(labels, preds, n, w))
    for f in (0.1, -2.5, 1e30, 65504.0):
        assert es.half_to_int(f) == ts.half_to_int(f) and es.int_to_half(es.half_to_int(f)) == ts.int_to_half(
            ts.half_to_int(f))
    assert es.hparams({"x": 1}, {"y": 2}) == ts.hparams({"x": 1}, {"y": 2})
    for bad in ({"x": [1.5]}, {"x": 1}, {"q": ["a"]}):
        with pytest.raises(TypeError) as mine:
            es.hparams({"x": 1}, {}, bad)
        with pytest.raises(TypeError) as theirs:
            ts.hparams({"x": 1}, {}, bad)
        assert str(mine.value) == str(theirs.value)
    with pytest.raises(TypeError, match="hparam_domain_discrete should be a dictionary"):
        es.hparams({"x": 1}, {}, [1])


def test_onnx_graph_as_torch(capsys):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    from torch.utils.tensorboard._onnx_graph import parse as torch_parse
    from ember.utils.tensorboard._onnx_graph import parse
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    nodes = [helper.make_node("Relu", ["x"], ["h"]),
             helper.make_node("LeakyRelu", ["h"], ["y"], alpha=0.2)]
    g = helper.make_graph(nodes, "g", [x], [y])
    onnx.checker.check_model(helper.make_model(g))
    assert parse(g) == torch_parse(g)
    capsys.readouterr()   # (torch's prints each node's name)
