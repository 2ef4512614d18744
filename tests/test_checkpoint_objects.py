"""Checkpoints of whole objects (issue 19): ember.save pickles what torch.save pickles (modules, optimizers, NumPy
arrays, any Python object) under PyTorch's names, load(weights_only=False) unpickles as PyTorch, the default
weights_only=True stays an allow-list with PyTorch's errors, safe globals and environment variables; PyTorch's
module layout (ember.nn.modules.<file>); the single-process distributed imports. Everything against torch 2.13
in the same process."""
from __future__ import annotations

import copy
import importlib
import inspect
import io
import os
import pickle
import zipfile

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _bytes(lib, obj) -> bytes:
    buf = io.BytesIO()
    lib.save(obj, buf)
    return buf.getvalue()


def _load(lib, data: bytes, **kw):
    return lib.load(io.BytesIO(data), **kw)


def _model(nn):
    """The same layers in both libraries (built-in classes only: a user class is one library's or the other's)."""
    return nn.ModuleDict({
        "emb": nn.Embedding(10, 6), "drop": nn.Dropout(0.2), "lstm": nn.LSTM(6, 8, num_layers=2, batch_first=True),
        "gru": nn.GRU(8, 8), "head": nn.Sequential(nn.Linear(8, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 3)),
        "attn": nn.MultiheadAttention(8, 2, batch_first=True), "conv": nn.Conv1d(8, 4, 3, padding=1),
        "bn": nn.BatchNorm1d(4), "enc": nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True),
    })


def _forward(lib, m, idx):
    m.eval()
    x = m["emb"](lib.tensor(idx))
    x, _ = m["lstm"](m["drop"](x))
    x = x + m["gru"](x)[0]
    x = x + m["attn"](x, x, x)[0]
    x = m["enc"](x)
    y = m["bn"](m["conv"](x.transpose(1, 2)))
    return m["head"](x).detach().numpy(), y.detach().numpy()


def _pair():
    """An ember model and a torch model with the same weights."""
    ember.manual_seed(0)
    e = _model(ember.nn)
    t = _model(torch.nn)
    t.load_state_dict({k: torch.tensor(v.detach().numpy()) for k, v in e.state_dict().items()})
    return e, t


IDX = np.array([[1, 2, 3, 4], [5, 6, 7, 8]])


class Config:                                   # a user class, the same object in both libraries
    def __init__(self, lr, name):
        self.lr, self.name = lr, name

    def __eq__(self, other):
        return type(other) is Config and vars(self) == vars(other)


def _mixed(lib, model, opt):
    return {"model": model, "opt": opt, "np": np.arange(6.0).reshape(2, 3), "cfg": Config(0.1, "adam"),
            "misc": [1, "a", (2, 3.5), None, {4, 5}, b"by", 2 - 1j], "t": lib.arange(4.0), "dtype": lib.float16,
            "size": lib.Size([2, 3]), "dev": lib.device("cpu")}


def _trained_optimizer(lib, model):
    opt = lib.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    model["head"](lib.ones(2, 8)).sum().backward()
    opt.step()
    return opt


# ======================================================================================================
# round trips
# ======================================================================================================
def test_whole_objects_round_trip_in_ember():
    e, _ = _pair()
    opt = _trained_optimizer(ember, e)
    obj = _mixed(ember, e, opt)
    back = _load(ember, _bytes(ember, obj), weights_only=False)
    assert type(back["model"]) is ember.nn.ModuleDict and type(back["opt"]) is ember.optim.AdamW
    for a, b in zip(_forward(ember, e, IDX), _forward(ember, back["model"], IDX)):
        np.testing.assert_array_equal(a, b)
    # the optimizer's parameters are the loaded model's, its state came along, and it keeps training alike
    assert back["opt"].param_groups[0]["params"][0] is next(back["model"].parameters())
    assert str(back["opt"].state_dict()) == str(opt.state_dict())
    for m, o in ((e, opt), (back["model"], back["opt"])):
        m.train()
        o.zero_grad()
        m["head"](ember.ones(2, 8)).pow(2).sum().backward()
        o.step()
    for p, q in zip(e.parameters(), back["model"].parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    assert back["cfg"] == obj["cfg"] and back["misc"] == obj["misc"] and back["np"].tolist() == obj["np"].tolist()
    assert back["dtype"] is ember.float16 and back["size"] == ember.Size([2, 3]) and back["dev"] == ember.device("cpu")


def test_torch_files_load_in_ember():
    e, t = _pair()
    t_opt = _trained_optimizer(torch, t)
    data = _bytes(torch, _mixed(torch, t, t_opt))
    back = _load(ember, data, weights_only=False)
    assert type(back["model"]["lstm"]) is ember.nn.LSTM and type(back["opt"]) is ember.optim.AdamW
    for a, b in zip(_forward(torch, t, IDX), _forward(ember, back["model"], IDX)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    state = back["opt"].state_dict()
    ref = t_opt.state_dict()
    assert state["param_groups"] == ref["param_groups"]
    for k, v in ref["state"].items():
        for name, x in v.items():
            np.testing.assert_array_equal(state["state"][k][name].numpy(), x.numpy())
    assert back["cfg"] == Config(0.1, "adam") and back["np"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert back["dtype"] is ember.float16 and isinstance(back["t"], ember.Tensor)


def test_ember_files_load_in_torch():
    e, t = _pair()
    e_opt = _trained_optimizer(ember, e)
    data = _bytes(ember, _mixed(ember, e, e_opt))
    back = _load(torch, data, weights_only=False)
    assert type(back["model"]["lstm"]) is torch.nn.LSTM and type(back["opt"]) is torch.optim.AdamW
    assert type(back["model"]["attn"].out_proj) is torch.nn.modules.linear.NonDynamicallyQuantizableLinear
    for a, b in zip(_forward(ember, e, IDX), _forward(torch, back["model"], IDX)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert back["opt"].state_dict()["param_groups"] == e_opt.state_dict()["param_groups"]
    back["opt"].step()                                      # a working torch optimizer over the torch model's params
    assert back["cfg"] == Config(0.1, "adam") and back["misc"] == _mixed(ember, e, e_opt)["misc"]
    assert back["dtype"] is torch.float16 and back["size"] == torch.Size([2, 3]) and back["dev"] == torch.device("cpu")


@pytest.mark.parametrize("maker", ["torch", "ember"])
def test_weights_only_whole_module_with_safe_globals(maker):
    e, t = _pair()
    data = _bytes(ember, e) if maker == "ember" else _bytes(torch, t)
    unsafe = {}
    for lib in (ember, torch):
        M = lib.nn.modules
        classes = [M.container.ModuleDict, M.sparse.Embedding, M.dropout.Dropout, M.rnn.LSTM, M.rnn.GRU,
                   M.container.Sequential, M.linear.Linear, M.activation.GELU, M.normalization.LayerNorm,
                   M.activation.MultiheadAttention, M.linear.NonDynamicallyQuantizableLinear, M.conv.Conv1d,
                   M.batchnorm.BatchNorm1d, M.transformer.TransformerEncoderLayer, M.container.ModuleList,
                   lib.nn.functional.relu]
        with pytest.raises(pickle.UnpicklingError):
            _load(lib, data)
        before = set(map(id, lib.serialization.get_safe_globals()))    # torch.distributed adds some of its own
        with lib.serialization.safe_globals(classes):
            unsafe[lib] = sorted(lib.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(data)))
            got = _load(lib, data)
        assert type(got) is lib.nn.ModuleDict
        np.testing.assert_allclose(_forward(lib, got, IDX)[0], _forward(ember, e, IDX)[0], rtol=1e-5, atol=1e-6)
        assert set(map(id, lib.serialization.get_safe_globals())) == before
    assert unsafe[ember] == unsafe[torch]


def test_numpy_arrays_and_their_safe_globals():
    a = np.arange(6.0).reshape(2, 3)
    sg = [np._core.multiarray._reconstruct, np.ndarray, np.dtype, type(np.dtype(np.float64))]
    for data in (_bytes(torch, a), _bytes(ember, a)):
        for lib in (ember, torch):
            with pytest.raises(pickle.UnpicklingError) as info:
                _load(lib, data)
            if lib is ember:
                msg = str(info.value)
            else:
                assert str(info.value) == msg
            assert "numpy._core.multiarray._reconstruct" in msg
            with lib.serialization.safe_globals(sg):
                assert _load(lib, data).tolist() == a.tolist()
            assert _load(lib, data, weights_only=False).tolist() == a.tolist()


def test_torch_builtin_functions_resolve_to_ember_functions():
    import torch.nn.functional as F
    objs = [torch.relu, torch.tanh, F.gelu, F.relu, F.silu, F.softplus, torch.special.expit, torch.Tensor.add,
            torch.exp, torch.linalg.norm, torch.fft.fft]
    got = _load(ember, _bytes(torch, objs), weights_only=False)
    want = [ember.relu, ember.tanh, ember.nn.functional.gelu, ember.nn.functional.relu, ember.nn.functional.silu,
            ember.nn.functional.softplus, ember.special.expit, ember.Tensor.add, ember.exp, ember.linalg.norm,
            ember.fft.fft]
    assert all(g is w for g, w in zip(got, want)), got
    # a torch layer holding F.gelu (torch._C._nn.gelu), loaded weights-only with ember's F.gelu allowed
    data = _bytes(torch, torch.nn.TransformerEncoderLayer(8, 2, 16, activation="gelu"))
    M = ember.nn.modules
    with ember.serialization.safe_globals([M.transformer.TransformerEncoderLayer, M.activation.MultiheadAttention,
                                           M.linear.NonDynamicallyQuantizableLinear, M.linear.Linear,
                                           M.dropout.Dropout, M.normalization.LayerNorm, ember.nn.functional.gelu]):
        assert _load(ember, data).activation is ember.nn.functional.gelu


def test_meta_tensors_both_ways():
    t = torch.empty(2, 3, device="meta", requires_grad=True).t()
    got = _load(ember, _bytes(torch, {"m": t}))["m"]
    assert (got.device.type, tuple(got.shape), got.stride(), got.requires_grad) == ("meta", (3, 2), (1, 3), True)
    back = _load(torch, _bytes(ember, {"m": ember.empty(2, 3, device="meta", dtype=ember.float64).t()}))["m"]
    assert (back.device.type, tuple(back.shape), back.stride(), back.dtype) == ("meta", (3, 2), (1, 3), torch.float64)


def test_unsafe_globals_listed_as_torch_lists_them():
    e, t = _pair()
    for data in (_bytes(torch, {"m": t["head"], "a": np.ones(2)}), _bytes(ember, {"m": e["head"], "a": np.ones(2)})):
        got = ember.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(data))
        assert sorted(got) == sorted(torch.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(data)))
    with pytest.raises(ValueError, match="Expected input to be a checkpoint returned by torch.save"):
        ember.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(b"not a zip"))


# ======================================================================================================
# weights_only: errors, allow-lists, environment variables, hostile files
# ======================================================================================================
def _error(lib, data, **kw):
    with pytest.raises(Exception) as info:
        _load(lib, data, **kw)
    return type(info.value), str(info.value)


@pytest.mark.parametrize("obj", [Config(1, "x"), {"f": print}, [os.stat_result(range(10))],
                                 {"od": __import__("collections").defaultdict(list)}])
def test_weights_only_errors_match_torch(obj):
    for maker in (torch, ember):
        data = _bytes(maker, obj)
        assert _error(ember, data) == _error(torch, data)


def test_safe_globals_api():
    ser = ember.serialization
    ser.clear_safe_globals()
    data = _bytes(ember, {"cfg": Config(2, "b")})
    ser.add_safe_globals([Config])
    assert ser.get_safe_globals() == [Config]
    assert _load(ember, data)["cfg"] == Config(2, "b")
    ser.clear_safe_globals()
    assert ser.get_safe_globals() == []
    with ser.safe_globals([(Config, f"{__name__}.Config")]):
        assert _load(ember, data)["cfg"] == Config(2, "b")
    assert ser.get_safe_globals() == []
    for lib in (ember, torch):
        lib.serialization.add_safe_globals([(Config, "a", "b")])
        with pytest.raises(ValueError, match="Expected tuple of length 2"):
            _load(lib, data)
        lib.serialization.clear_safe_globals()


def test_environment_variables_as_torch(monkeypatch):
    data = _bytes(ember, {"cfg": Config(1, "a")})
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    for lib in (ember, torch):
        with pytest.warns(UserWarning) as rec:
            assert _load(lib, data)["cfg"] == Config(1, "a")
        msgs = [str(w.message) for w in rec if "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD" in str(w.message)]
        if lib is ember:
            ember_msgs = msgs
        else:
            assert msgs == ember_msgs and msgs
        with pytest.raises(pickle.UnpicklingError):       # an explicit weights_only=True is not overridden
            _load(lib, data, weights_only=True)
    monkeypatch.setenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "true")
    assert _error(ember, data) == _error(torch, data) and _error(ember, data)[0] is RuntimeError
    monkeypatch.delenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")
    assert _error(ember, data, weights_only=False) == _error(torch, data, weights_only=False)


class _System:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


class _Eval:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (eval, (f"open({str(self.path)!r}, 'w')",))


@pytest.mark.parametrize("payload", [_System, _Eval])
def test_hostile_pickles_fail_before_anything_runs(tmp_path, payload):
    marker = tmp_path / "pwned"
    for maker in (torch, ember):
        data = _bytes(maker, {"w": maker.ones(2), "x": [payload(marker)]})
        assert not marker.exists()
        assert _error(ember, data) == _error(torch, data)
        assert _error(ember, data)[0] is pickle.UnpicklingError
        assert not marker.exists()
        with ember.serialization.safe_globals([Config]):      # an unrelated allow-list changes nothing
            _error(ember, data)
        assert not marker.exists()
    # weights_only=False is the user's explicit trust in the file: it runs, as in PyTorch
    _load(ember, data, weights_only=False)
    assert marker.exists()


_LAMBDA = lambda x: x      # noqa: E731  (pickle cannot name a lambda)


def test_saving_what_pickle_cannot_pickle():
    for lib in (ember, torch):
        with pytest.raises(pickle.PicklingError):
            lib.save({"f": _LAMBDA}, io.BytesIO())
        with pytest.raises(TypeError):
            lib.save({"lock": __import__("threading").Lock()}, io.BytesIO())


def test_plain_pickle_and_deepcopy_of_ember_modules():
    e, _ = _pair()
    for clone in (pickle.loads(pickle.dumps(e)), copy.deepcopy(e)):
        assert str(clone.state_dict()) == str(e.state_dict())
        for a, b in zip(_forward(ember, e, IDX), _forward(ember, clone, IDX)):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)   # BLAS may round copies' matmuls differently
    # the pickle ember.save writes names PyTorch's classes: torch reads it with its own pickle machinery
    with zipfile.ZipFile(io.BytesIO(_bytes(ember, e["head"]))) as z:
        pkl = z.read(next(n for n in z.namelist() if n.endswith("data.pkl")))
    assert b"ctorch.nn.modules.container\nSequential\n" in pkl and b"ember" not in pkl


def test_serialization_helpers_as_torch(tmp_path):
    for lib in (ember, torch):
        ser = lib.serialization
        assert str(ser.StorageType("FloatStorage")) == "StorageType(dtype=torch.float32)"
        assert ser.check_module_version_greater_or_equal(np, (1, 20))
        assert not ser.check_module_version_greater_or_equal(np, (99,))
        with pytest.raises(TypeError, match="Invalid argument type in function set_default_load_endianness"):
            ser.set_default_load_endianness("little")
        with pytest.raises(ValueError, match="expected mmap.MAP_PRIVATE or mmap.MAP_SHARED"):
            ser.set_default_mmap_options(12345)
        assert ser.location_tag(lib.ones(1)) == "cpu"
        assert ser.get_default_load_endianness() is None and ser.get_crc32_options() is True
        with ser.mkdtemp() as d:
            assert os.path.isdir(d)
        assert issubclass(ser.SourceChangeWarning, Warning)
        with pytest.raises(RuntimeError, match="torch.cuda.is_available\\(\\) is False"):
            ser.validate_cuda_device("cuda:0")
    # skip_data: the records keep their sizes, the bytes are zeros; load leaves storages zero
    with ember.serialization.skip_data():
        ember.save({"w": ember.ones(3)}, tmp_path / "s.pt")
    assert ember.load(tmp_path / "s.pt")["w"].tolist() == [0.0, 0.0, 0.0]
    ember.save({"w": ember.ones(3)}, tmp_path / "o.pt")
    with ember.serialization.skip_data():
        assert ember.load(tmp_path / "o.pt")["w"].tolist() == [0.0, 0.0, 0.0]
    # a file without a byteorder record is read in the default load endianness
    ember.save({"w": ember.arange(3, dtype=ember.int32)}, tmp_path / "b.pt", _disable_byteorder_record=True)
    ember.serialization.set_default_load_endianness(ember.serialization.LoadEndianness.BIG)
    try:
        assert ember.load(tmp_path / "b.pt")["w"].tolist() == [0, 1 << 24, 2 << 24]
    finally:
        ember.serialization.set_default_load_endianness(None)


# ======================================================================================================
# PyTorch's module layout
# ======================================================================================================
FILES = ("activation", "adaptive", "batchnorm", "channelshuffle", "container", "conv", "distance", "dropout",
         "flatten", "fold", "instancenorm", "lazy", "linear", "loss", "module", "normalization", "padding",
         "pixelshuffle", "pooling", "rnn", "sparse", "transformer", "upsampling", "utils")
# Classes of PyTorch's files ember does not have (tools/api_coverage.py lists why), or private helpers.
NOT_BUILT = {"SyncBatchNorm", "FractionalMaxPool2d", "FractionalMaxPool3d", "LinearCrossEntropyLoss",
             "_ConvTransposeMixin", "_LazyProtocol"}


@pytest.mark.parametrize("name", FILES)
def test_every_class_of_torch_nn_modules_files(name):
    tm = importlib.import_module(f"torch.nn.modules.{name}")
    em = getattr(ember.nn.modules, name)          # an attribute after `import ember`
    classes = [n for n, v in vars(tm).items() if inspect.isclass(v) and v.__module__ == tm.__name__]
    for n in classes:
        if n in NOT_BUILT:
            continue
        c = getattr(em, n)
        assert (c.__module__, c.__qualname__) == (f"ember.nn.modules.{name}", n)
        if hasattr(ember.nn, n) and not n.startswith("_"):
            assert getattr(ember.nn, n) is c


def test_import_time_module_layout_is_lazy():
    import subprocess
    import sys
    code = ("import sys, ember; print('ember.nn.modules.rnn' in sys.modules, 'ember.nn.parallel' in sys.modules); "
            "print(ember.nn.modules.rnn.LSTM.__name__, 'ember.nn.modules.rnn' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__)))).stdout.split()
    assert out == ["False", "False", "LSTM", "True"]


def test_adaptive_log_softmax_with_loss_as_torch():
    ember.manual_seed(0)
    e = ember.nn.AdaptiveLogSoftmaxWithLoss(16, 50, [5, 20], div_value=2.0)
    t = torch.nn.AdaptiveLogSoftmaxWithLoss(16, 50, [5, 20], div_value=2.0)
    t.load_state_dict({k: torch.tensor(v.detach().numpy()) for k, v in e.state_dict().items()})
    x = np.random.RandomState(0).randn(7, 16).astype(np.float32)
    y = np.array([0, 4, 5, 19, 20, 49, 3])
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    eo, to = e(ex, ember.tensor(y)), t(tx, torch.tensor(y))
    np.testing.assert_allclose(eo.output.detach().numpy(), to.output.detach().numpy(), rtol=1e-6, atol=1e-6)
    eo.loss.backward()
    to.loss.backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(e.log_prob(ex).detach().numpy(), t.log_prob(tx).detach().numpy(), rtol=1e-6,
                               atol=1e-6)
    assert e.predict(ex).tolist() == t.predict(tx).tolist()
    for lib, m in ((ember, e), (torch, t)):
        with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 49\], but values in range \[0, 60\]"):
            m(lib.tensor(x), lib.tensor(np.array([0, 1, 2, 3, 4, 5, 60])))
        with pytest.raises(ValueError, match="cutoffs should be a sequence of unique"):
            lib.nn.AdaptiveLogSoftmaxWithLoss(16, 50, [20, 5])


@pytest.mark.parametrize("size", [1, 2, 5, 8])
def test_cross_map_lrn2d_as_torch(size):
    x = np.random.RandomState(0).randn(2, 7, 3, 4).astype(np.float32) * 3
    g = np.random.RandomState(1).randn(*x.shape).astype(np.float32)
    got = {}
    for lib in (ember, torch):
        m = lib.nn.CrossMapLRN2d(size, 0.1, 0.75, 2)
        xt = lib.tensor(x, requires_grad=True)
        out = m(xt)
        assert out.grad_fn.name() == "CrossMapLRN2dBackward"   # a Function named as PyTorch's nn._functions one
        try:
            out.backward(lib.tensor(g))
            grad = xt.grad.numpy()
        except RuntimeError as e:        # PyTorch's backward fails for size 1; ember's as well
            grad = str(e)
        got[lib] = (out.detach().numpy(), grad, repr(m))
    np.testing.assert_allclose(got[ember][0], got[torch][0], rtol=1e-6)
    if isinstance(got[torch][1], str):
        assert got[ember][1] == got[torch][1]
    else:
        np.testing.assert_allclose(got[ember][1], got[torch][1], rtol=1e-5, atol=1e-6)
    assert got[ember][2] == got[torch][2]
    with pytest.raises(ValueError, match="Expected input to be 4D, got 3D instead"):
        ember.nn.CrossMapLRN2d(3)(ember.ones(2, 3, 4))


# ======================================================================================================
# distributed imports of single-process scripts
# ======================================================================================================
def test_distributed_in_one_process():
    import ember.distributed as dist
    import torch.distributed as tdist
    import importlib.util
    assert dist.is_available() is (importlib.util.find_spec("mpi4py") is not None)
    assert dist.is_initialized() is tdist.is_initialized() is False
    for name in ("get_rank", "get_world_size", "barrier", "get_backend", "destroy_process_group"):
        with pytest.raises(Exception) as e_info:
            getattr(dist, name)()
        with pytest.raises(Exception) as t_info:
            getattr(tdist, name)()
        assert (type(e_info.value), str(e_info.value)) == (type(t_info.value), str(t_info.value)), name
    if "RANK" not in os.environ:   # torch's env:// error, before any MPI starts
        with pytest.raises(ValueError) as e_info:
            dist.init_process_group("gloo")
        with pytest.raises(ValueError) as t_info:
            tdist.init_process_group("gloo")
        assert str(e_info.value) == str(t_info.value)
    assert repr(dist.ReduceOp.SUM) == repr(tdist.ReduceOp.SUM) and dist.ReduceOp.SUM == dist.ReduceOp.RedOpType.SUM
    assert [n for n in dir(dist.ReduceOp) if n.isupper()] == [n for n in dir(tdist.ReduceOp) if n.isupper()]
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.all_reduce(ember.ones(1), op=dist.ReduceOp.SUM)
    from ember.nn.parallel import DistributedDataParallel as EDDP
    for ddp, lib in ((EDDP, ember), (torch.nn.parallel.DistributedDataParallel, torch)):
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            ddp(lib.nn.Linear(2, 2))


def test_data_parallel_on_cpu_as_torch():
    e, t = _pair()
    ed, td = ember.nn.DataParallel(e["head"]), torch.nn.DataParallel(t["head"])
    assert list(ed.state_dict()) == list(td.state_dict()) and ed.device_ids == td.device_ids == []
    assert repr(ed) == repr(td)
    x = np.ones((2, 8), np.float32)
    np.testing.assert_allclose(ed(ember.tensor(x)).detach().numpy(), td(torch.tensor(x)).detach().numpy(),
                               rtol=1e-6)
    np.testing.assert_allclose(ember.nn.parallel.data_parallel(e["head"], ember.tensor(x)).detach().numpy(),
                               td(torch.tensor(x)).detach().numpy(), rtol=1e-6)
    back = _load(torch, _bytes(ember, ed), weights_only=False)
    assert type(back) is torch.nn.DataParallel
