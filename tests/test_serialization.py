"""ember.save / ember.load in PyTorch's checkpoint format, and safetensors.

Files made by real torch load into ember; files made by ember load into real torch with
``weights_only=True``; hostile files fail with a clear error and never run code. Every torch-made file
is made here, in a tmp_path (no binary fixtures in the repository).
"""
import io
import os
import pickle
import struct
import warnings
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import ember


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def _np(t):
    return t.detach().numpy()


def _same_tensor(e, t):
    """An ember tensor equals a torch tensor: dtype, shape, strides, values, requires_grad."""
    assert str(e.dtype) == str(t.dtype)
    assert tuple(e.shape) == tuple(t.shape)
    if e.numel() > 1:
        assert e.stride() == t.stride()
    assert e.requires_grad == t.requires_grad
    np.testing.assert_array_equal(_np(e), t.detach().numpy())


def _saved(obj, **kw) -> io.BytesIO:
    b = io.BytesIO()
    ember.save(obj, b, **kw)
    b.seek(0)
    return b


# ----- hand-made archives and pickles, independent of ember's writer ---------------------------------
def _archive(records: dict, prefix: str = "archive") -> bytes:
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", zipfile.ZIP_STORED) as z:
        for name, data in records.items():
            z.writestr(f"{prefix}/{name}", data)
    return b.getvalue()


def _records(data: bytes) -> dict:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return {n.split("/", 1)[1]: z.read(n) for n in z.namelist()}


def _G(module, name):
    return b"c" + f"{module}\n{name}\n".encode()


def _S(s):
    raw = s.encode()
    return b"X" + struct.pack("<I", len(raw)) + raw


def _I(n):
    if -2**31 <= n < 2**31:
        return b"J" + struct.pack("<i", n)
    k = (n.bit_length() + 8) // 8
    return b"\x8a" + bytes([k]) + n.to_bytes(k, "little", signed=True)


def _T(*items):
    return b"(" + b"".join(items) + b"t"


def _tensor_pkl(numel, offset, size, stride, key="0", stype="FloatStorage"):
    pid = _T(_S("storage"), _G("torch", stype), _S(key), _S("cpu"), _I(numel)) + b"Q"
    hooks = _G("collections", "OrderedDict") + b")R"
    return (_G("torch._utils", "_rebuild_tensor_v2")
            + _T(pid, _I(offset), _T(*map(_I, size)), _T(*map(_I, stride)), b"\x89", hooks) + b"R")


def _pkl(body: bytes) -> bytes:
    return b"\x80\x02" + body + b"."


def _checkpoint(body: bytes, data=None, **extra) -> io.BytesIO:
    """An archive with data.pkl = body and data/0 = data (6 float32 by default)."""
    data = np.arange(6, dtype=np.float32).tobytes() if data is None else data
    recs = {"data.pkl": _pkl(body), "data/0": data, "version": b"3\n", **extra}
    return io.BytesIO(_archive({k: v for k, v in recs.items() if v is not None}))


# ======================================================================================================
# files made by real torch, loaded by ember
# ======================================================================================================
def test_torch_state_dict_loads_and_gives_the_same_outputs(torch, tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    model.train()
    model(torch.randn(16, 5))                  # move the running statistics away from their start
    model.eval()
    path = tmp_path / "model.pt"
    torch.save(model.state_dict(), path)
    sd = ember.load(path)
    ref = model.state_dict()
    assert type(sd) is OrderedDict and list(sd) == list(ref)
    assert sd._metadata == ref._metadata
    for k in ref:
        _same_tensor(sd[k], ref[k])
    x = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    F = ember.nn.functional
    h = F.linear(ember.tensor(x), sd["0.weight"], sd["0.bias"])
    h = F.batch_norm(h, sd["1.running_mean"], sd["1.running_var"], sd["1.weight"], sd["1.bias"], training=False)
    out = F.linear(F.relu(h), sd["3.weight"], sd["3.bias"])
    with torch.no_grad():
        np.testing.assert_allclose(_np(out), model(torch.tensor(x)).numpy(), rtol=1e-5, atol=1e-6)


DTYPES = ["float16", "float32", "float64", "uint8", "int8", "int16", "int32", "int64", "bool"]


def test_torch_tensors_of_each_dtype_and_layout(torch, tmp_path):
    g = torch.Generator().manual_seed(1)
    obj = {}
    for name in DTYPES:
        dt = getattr(torch, name)
        base = (torch.randn(3, 4, generator=g) * 50).to(dt)
        obj[name] = base
        obj[name + "_t"] = base.t()                       # non-contiguous
        obj[name + "_step"] = base[:, ::2]                # offset-free strided view
        obj[name + "_0d"] = base[1, 2]                    # 0-d, with a storage offset
        obj[name + "_empty"] = torch.empty(0, 3, dtype=dt)
    obj["expanded"] = torch.arange(3.).expand(4, 3)       # stride 0
    obj["grad"] = torch.ones(2, requires_grad=True)
    torch.save(obj, tmp_path / "t.pt")
    got = ember.load(str(tmp_path / "t.pt"))
    assert list(got) == list(obj)
    for k in obj:
        _same_tensor(got[k], obj[k])


def test_torch_views_share_storage_after_loading(torch, tmp_path):
    base = torch.arange(10.)
    torch.save({"a": base[2:5], "b": base[::2], "whole": base, "other": torch.zeros(2)}, tmp_path / "v.pt")
    got = ember.load(tmp_path / "v.pt")
    assert np.shares_memory(got["a"]._data, got["b"]._data)
    assert not np.shares_memory(got["a"]._data, got["other"]._data)
    got["whole"][4] = -1.0                                # as torch: a write shows through every view
    assert got["a"][2].item() == -1.0 and got["b"][2].item() == -1.0
    assert got["a"].is_leaf and got["b"].is_leaf


def test_torch_optimizer_state_and_parameters(torch, tmp_path):
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 2)
    opt = torch.optim.Adam(lin.parameters(), lr=0.01, betas=(0.8, 0.9))
    lin(torch.randn(4, 3)).sum().backward()
    opt.step()
    ckpt = {"model": lin.state_dict(), "optim": opt.state_dict(), "epoch": 3, "loss": 0.25, "tag": "run-1",
            "params": list(lin.parameters()), "frozen": torch.nn.Parameter(torch.ones(2), requires_grad=False)}
    torch.save(ckpt, tmp_path / "c.pt")
    got = ember.load(tmp_path / "c.pt")
    ref = opt.state_dict()
    assert got["optim"]["param_groups"] == ref["param_groups"]
    for i, st in ref["state"].items():
        assert set(got["optim"]["state"][i]) == set(st)
        for k, v in st.items():
            _same_tensor(got["optim"]["state"][i][k], v)
    assert (got["epoch"], got["loss"], got["tag"]) == (3, 0.25, "run-1")
    for p, q in zip(got["params"], lin.parameters()):
        assert isinstance(p, ember.nn.Parameter)
        _same_tensor(p, q)
    assert isinstance(got["frozen"], ember.nn.Parameter) and not got["frozen"].requires_grad
    # the parameters and the state dict's tensors are one storage each, as saved
    assert np.shares_memory(got["params"][0]._data, got["model"]["weight"]._data)


def test_torch_tensor_attributes_and_plain_values(torch, tmp_path):
    t = torch.ones(2)
    t.note = "hello"
    obj = {"t": t, "bytes": b"\x00\xffab", "set": {1, 2}, "complex": 1 + 2j, "size": torch.Size([2, 3]),
           "nested": [(1, [2.5, None]), {"k": True}], "big": 2**80, "neg": -(2**40), "dtype": torch.float64}
    for protocol in (2, 4, 5):          # 2 is torch.save's default; 4 and 5 bring FRAME, MEMOIZE, STACK_GLOBAL
        torch.save(obj, tmp_path / "p.pt", pickle_protocol=protocol)
        got = ember.load(tmp_path / "p.pt")
        assert got["t"].note == "hello" and got["t"].tolist() == [1.0, 1.0]
        for k in ("bytes", "set", "complex", "nested", "big", "neg"):
            assert got[k] == obj[k]
        assert isinstance(got["size"], ember.Size) and got["size"] == (2, 3)
        assert got["dtype"] is ember.float64


def test_torch_dtypes_ember_lacks_are_named(torch, tmp_path):
    for dt in (torch.complex32, torch.uint16):   # (bfloat16: tests/test_bfloat16.py)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # ComplexHalf support is experimental
            torch.save({"x": torch.zeros(2, dtype=dt)}, tmp_path / "d.pt")
        with pytest.raises(RuntimeError, match=str(dt).replace("torch.", "")):
            ember.load(tmp_path / "d.pt")


@pytest.mark.parametrize("dt", ["complex64", "complex128"])
def test_complex_both_ways(torch, tmp_path, dt):
    a = ember.randn(3, 2, dtype=getattr(ember, dt))
    ember.save({"a": a, "v": a[1:], "p": ember.nn.Parameter(a.clone())}, tmp_path / "e.pt")
    t = torch.load(tmp_path / "e.pt", weights_only=True)
    assert t["a"].dtype == getattr(torch, dt) and isinstance(t["p"], torch.nn.Parameter)
    np.testing.assert_array_equal(t["a"].numpy(), a.numpy())
    assert t["v"].untyped_storage().data_ptr() == t["a"].untyped_storage().data_ptr()
    torch.save(t, tmp_path / "t.pt")
    e = ember.load(tmp_path / "t.pt")
    assert e["a"].dtype is getattr(ember, dt) and isinstance(e["p"], ember.nn.Parameter)
    np.testing.assert_array_equal(e["v"].numpy(), a[1:].numpy())
    assert e["v"].untyped_storage().data_ptr() == e["a"].untyped_storage().data_ptr()


def test_mmap_both_ways(torch, tmp_path):
    base = torch.arange(12.).reshape(3, 4)
    torch.save({"a": base, "b": base[1]}, tmp_path / "m.pt")
    got = ember.load(tmp_path / "m.pt", mmap=True)
    _same_tensor(got["a"], base)
    got["a"][0, 0] = 5.0                    # copy-on-write: the file does not change
    assert np.shares_memory(got["a"]._data, got["b"]._data)
    assert ember.load(tmp_path / "m.pt")["a"][0, 0].item() == 0.0
    ember.save(got, tmp_path / "e.pt")
    back = torch.load(tmp_path / "e.pt", weights_only=True, mmap=True)
    assert back["a"][0, 0].item() == 5.0 and back["b"].tolist() == [4.0, 5.0, 6.0, 7.0]
    with pytest.raises(ValueError, match="file path"):
        ember.load(io.BytesIO((tmp_path / "m.pt").read_bytes()), mmap=True)


def test_torch_legacy_and_torchscript_files_are_refused(torch, tmp_path):
    torch.save(torch.ones(2), tmp_path / "legacy.pt", _use_new_zipfile_serialization=False)
    with pytest.raises(RuntimeError, match="legacy"):
        ember.load(tmp_path / "legacy.pt")
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), tmp_path / "ts.pt")
    with pytest.raises(RuntimeError, match="TorchScript"):
        ember.load(tmp_path / "ts.pt")


# ======================================================================================================
# files made by ember, loaded by real torch (weights_only=True)
# ======================================================================================================
def test_ember_file_loads_in_torch(torch, tmp_path):
    base = ember.arange(24.).reshape(2, 3, 4)
    obj = {name: (ember.arange(-6, 6) * 7).to(getattr(ember, name)).reshape(3, 4) for name in DTYPES}
    obj.update({
        "base": base, "view": base[1], "perm": base.permute(2, 0, 1), "step": base[:, ::2, 1:],
        "zero_d": ember.tensor(2.5), "empty": ember.zeros(0, 4), "expanded": ember.arange(3.).expand(2, 3),
        "param": ember.nn.Parameter(ember.ones(2, 2)), "frozen": ember.nn.Parameter(ember.ones(1), requires_grad=False),
        "leaf": ember.ones(3, requires_grad=True), "nonleaf": ember.ones(3, requires_grad=True) * 2,
        "od": OrderedDict([("w", base[0]), ("n", 1)]), "nested": [1, 2.5, "s", None, True, (1, (2,)), b"by"],
        "optim": {"state": {0: {"step": ember.tensor(3.0), "exp_avg": ember.zeros(2)}},
                  "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "params": [0]}]},
        "size": ember.Size([1, 2]), "set": {3, 4}, "dtype": ember.int16, "big": -(2**77), "c": 3 - 1j,
    })
    obj["od"]._metadata = OrderedDict([("", {"version": 1})])
    obj["noted"] = ember.ones(2)
    obj["noted"].note = "hi"
    obj["many"] = [{"i": i, "t": ember.tensor(i)} for i in range(300)]       # memo indices past 255
    obj["tagged"] = ember.nn.Parameter(ember.zeros(1))
    obj["tagged"].tag = 3
    path = tmp_path / "ember.pt"
    ember.save(obj, path)
    got = torch.load(path, weights_only=True)
    assert list(got) == list(obj)
    for k, v in obj.items():
        if isinstance(v, ember.Tensor):
            _same_tensor(v, got[k])
    assert isinstance(got["param"], torch.nn.Parameter) and got["param"].requires_grad
    assert isinstance(got["frozen"], torch.nn.Parameter) and not got["frozen"].requires_grad
    assert got["nonleaf"].requires_grad and got["nonleaf"].is_leaf        # as torch.save of a non-leaf
    ptr = got["base"].untyped_storage().data_ptr()
    for k in ("view", "perm", "step"):
        assert got[k].untyped_storage().data_ptr() == ptr
    assert got["view"].storage_offset() == 12
    got["base"][1, 0, 0] = 100.0
    assert got["view"][0, 0].item() == 100.0
    assert got["od"]._metadata == obj["od"]._metadata and got["od"]["n"] == 1
    assert got["nested"] == obj["nested"] and got["size"] == torch.Size([1, 2]) and got["dtype"] is torch.int16
    assert got["optim"]["param_groups"] == obj["optim"]["param_groups"]
    assert (got["set"], got["big"], got["c"]) == ({3, 4}, -(2**77), 3 - 1j)
    assert [(d["i"], d["t"].item()) for d in got["many"]] == [(i, i) for i in range(300)]
    assert got["noted"].note == "hi" and got["tagged"].tag == 3 and isinstance(got["tagged"], torch.nn.Parameter)
    # the same bytes from a buffer, and torch's own round trip of the loaded object
    assert torch.load(io.BytesIO(path.read_bytes()), weights_only=True)["view"].tolist() == obj["view"].tolist()


def test_archive_layout_matches_torch(torch, tmp_path):
    path = tmp_path / "layout.pt"
    ember.save({"a": ember.ones(3), "b": ember.zeros(5, dtype=ember.int64)}, path)
    (tmp_path / "torch").mkdir()
    ref = tmp_path / "torch" / "layout.pt"
    torch.save({"a": torch.ones(3), "b": torch.zeros(5, dtype=torch.int64)}, ref)
    with zipfile.ZipFile(path) as z, zipfile.ZipFile(ref) as r:
        assert z.namelist() == r.namelist()           # same folder name (the file's), same records, same order
        for name in ("layout/version", "layout/byteorder", "layout/.format_version", "layout/.storage_alignment",
                     "layout/data/0", "layout/data/1"):
            assert z.read(name) == r.read(name)
        raw = path.read_bytes()
        for info in z.infolist():
            assert info.compress_type == zipfile.ZIP_STORED
            n, m = struct.unpack("<HH", raw[info.header_offset + 26:info.header_offset + 30])
            if "/data/" in info.filename:
                assert (info.header_offset + 30 + n + m) % 64 == 0, info.filename
    # one object saves to one file, byte for byte
    (tmp_path / "again").mkdir()
    ember.save({"a": ember.ones(3), "b": ember.zeros(5, dtype=ember.int64)}, tmp_path / "again" / "layout.pt")
    assert (tmp_path / "again" / "layout.pt").read_bytes() == path.read_bytes()


def test_state_dict_through_ember_into_a_torch_model(torch, tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.Flatten(), torch.nn.Linear(8, 2))
    torch.save(model.state_dict(), tmp_path / "t.pt")
    sd = ember.load(tmp_path / "t.pt")
    ember.save(sd, tmp_path / "e.pt")
    torch.manual_seed(1)
    fresh = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.Flatten(), torch.nn.Linear(8, 2))
    fresh.load_state_dict(torch.load(tmp_path / "e.pt", weights_only=True))
    x = torch.randn(3, 1, 4, 4)
    with torch.no_grad():
        assert torch.equal(fresh(x), model(x))


# ======================================================================================================
# ember -> ember
# ======================================================================================================
def test_round_trip_paths_buffers_and_sharing(tmp_path):
    base = ember.arange(12.).reshape(3, 4)
    p = ember.nn.Parameter(ember.ones(2))
    shared = [1, 2]
    obj = {"base": base, "t": base.t(), "row": base[2], "p": p, "p_again": p,
           "i": ember.tensor([1, 2], dtype=ember.int32),
           "l": shared, "l_again": shared, 7: "int key", ("a", 1): ember.tensor(True), "noted": ember.ones(1)}
    obj["noted"].note = {"by": "user"}
    p.tag = "w"
    cyc = []
    cyc.append(cyc)
    obj["cycle"] = cyc
    for target in (tmp_path / "a.pt", str(tmp_path / "b.pt"), io.BytesIO()):
        ember.save(obj, target)
        if isinstance(target, io.BytesIO):
            target.seek(0)
        got = ember.load(target)
        assert got["t"].stride() == (1, 4) and got["t"].tolist() == base.t().tolist()
        assert got["p"] is got["p_again"] and isinstance(got["p"], ember.nn.Parameter) and got["p"].requires_grad
        assert got["l"] is got["l_again"] and got["cycle"][0] is got["cycle"]
        assert got[7] == "int key" and got[("a", 1)].item() is True and got["i"].dtype is ember.int32
        assert got["noted"].note == {"by": "user"} and got["p"].tag == "w"
        got["base"][2, 1] = -5.0
        assert got["row"][1].item() == -5.0 and got["t"][1, 2].item() == -5.0
        assert base[2, 1].item() == 9.0            # the saved tensor is untouched
    # an open file object, at a non-zero position
    with open(tmp_path / "c.pt", "wb") as fh:
        fh.write(b"header")
        ember.save([ember.ones(2)], fh)
    with open(tmp_path / "c.pt", "rb") as fh:
        fh.read(6)
        assert ember.load(fh)[0].tolist() == [1.0, 1.0]


def test_storages_of_numpy_memory(tmp_path):
    fortran = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    t = ember.from_numpy(fortran)
    got = ember.load(_saved({"t": t, "col": t[:, 1]}))
    assert got["t"].stride() == (1, 2) and got["t"].tolist() == t.tolist()
    assert got["col"].tolist() == [1.0, 4.0] and np.shares_memory(got["t"]._data, got["col"]._data)
    flipped = ember.from_numpy(np.arange(5.0)[::-1])          # negative strides: saved as a copy of its own
    assert ember.load(_saved(flipped)).tolist() == [4.0, 3.0, 2.0, 1.0, 0.0]


def test_one_storage_seen_as_two_dtypes_is_refused_as_torch_refuses(torch):
    for lib in (torch, ember):
        x = lib.zeros(4)
        with pytest.raises(RuntimeError, match="view the same data as different types"):
            lib.save([x, x.view(lib.int32)], io.BytesIO())


def test_save_pickles_any_object_and_refuses_what_pickle_refuses(tmp_path):
    path = tmp_path / "bad.pt"
    with pytest.raises(TypeError, match="Can't pickle"):         # a local function: pickle cannot name it
        ember.save({"f": lambda x: x}, path)
    assert not path.exists()                   # refused before the file is opened
    # what torch.save pickles, ember saves too; weights_only=False reads it back (a trusted file)
    obj = {"a": np.ones(2), "o": [1], "nt": os.stat_result(range(10)), "f": print}
    ember.save(obj, path)
    got = ember.load(path, weights_only=False)
    assert got["a"].tolist() == [1.0, 1.0] and got["nt"] == obj["nt"] and got["f"] is print
    with pytest.raises(pickle.UnpicklingError, match="numpy"):
        ember.load(path)
    with pytest.raises(NotImplementedError, match="legacy"):
        ember.save(ember.ones(1), io.BytesIO(), _use_new_zipfile_serialization=False)
    with pytest.raises(ValueError, match="pickle_protocol"):
        ember.save(ember.ones(1), io.BytesIO(), pickle_protocol=1)


def test_map_location_and_weights_only_false(tmp_path):
    b = _saved({"x": ember.ones(2)})
    data = b.getvalue()
    seen = []
    for ml in (None, "cpu", ember.device("cpu"), {"cpu": "cpu"}, lambda s, loc: seen.append(loc) or s,
               lambda s, loc: None):
        assert ember.load(io.BytesIO(data), map_location=ml)["x"].tolist() == [1.0, 1.0]
    assert seen == ["cpu"]
    with pytest.raises(RuntimeError, match="cpu"):
        ember.load(io.BytesIO(data), map_location="cuda:0")
    with pytest.raises(TypeError, match="map_location"):
        ember.load(io.BytesIO(data), map_location=lambda s, loc: "elsewhere")
    # a checkpoint saved on a GPU: refused as on a CPU-only PyTorch, loaded with map_location
    recs = _records(data)
    recs["data.pkl"] = recs["data.pkl"].replace(_S("cpu"), _S("cuda:0"))
    cuda = _archive(recs)
    with pytest.raises(RuntimeError, match="map_location"):
        ember.load(io.BytesIO(cuda))
    for ml in ("cpu", {"cuda:0": "cpu"}, lambda s, loc: s):
        assert ember.load(io.BytesIO(cuda), map_location=ml)["x"].tolist() == [1.0, 1.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")             # no warning: weights_only=False is the caller's choice
        assert ember.load(io.BytesIO(data), weights_only=False)["x"].tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="pickle_module"):
        ember.load(io.BytesIO(data), pickle_module=io, weights_only=True)
    with pytest.raises(AttributeError, match="Unpickler"):    # as torch: a pickle_module means weights_only=False
        ember.load(io.BytesIO(data), pickle_module=io)


# ======================================================================================================
# hostile and broken files
# ======================================================================================================
class _Payload:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


def _hostile_pickles(marker):
    yield "os.system", pickle.dumps(_Payload(marker), protocol=2)
    yield "os.system", pickle.dumps({"state": [_Payload(marker)]}, protocol=4)
    yield "GLOBAL eval ", _pkl(_G("builtins", "eval") + _T(_S(f"open({str(marker)!r}, 'w')")) + b"R")
    yield "GLOBAL exec ", _pkl(_G("__builtin__", "exec") + _T(_S(f"open({str(marker)!r}, 'w')")) + b"R")
    yield "GLOBAL getattr ", _pkl(_G("builtins", "getattr") + _T(_S("x"), _S("y")) + b"R")
    yield "subprocess.Popen", _pkl(_G("subprocess", "Popen") + _T(_S("true")) + b"R")
    yield "multiarray._reconstruct", pickle.dumps(np.ones(2), protocol=2)
    yield "collections.defaultdict", pickle.dumps(__import__("collections").defaultdict(int), protocol=2)
    yield "INST", _pkl(b"(" + _S("true") + b"iposix\nsystem\n")
    yield "Trying to call reduce", _pkl(_G("torch", "Tensor") + _T(_I(10**6)) + b"R")       # legacy ctor
    yield "bytearray", _pkl(_G("builtins", "bytearray") + _T(_I(2**40)) + b"R")            # memory bomb
    yield "Can only build", _pkl(_tensor_pkl(6, 0, (6,), (1,)) + b"}" + _S("_data") + _S("x") + b"sb")
    yield "refuses to set", _pkl(_G("torch._tensor", "_rebuild_from_type_v2") + _T(
        _G("torch._utils", "_rebuild_tensor_v2"), _G("torch", "Tensor"),
        _T(b"(" + _S("storage") + _G("torch", "FloatStorage") + _S("0") + _S("cpu") + _I(6) + b"tQ",
           _I(0), _T(_I(6)), _T(_I(1)), b"\x89", _G("collections", "OrderedDict") + b")R"),
        b"}" + _S("_data") + _I(1) + b"s") + b"R")
    yield "nests", _pkl(b"(" * 5000 + b"N" + b"t" * 5000)
    yield "unhashable", _pkl(b"}]Ns")
    yield "truncated", _pkl(_tensor_pkl(6, 0, (6,), (1,)))[:40]


def test_hostile_pickles_raise_and_run_nothing(tmp_path):
    marker = tmp_path / "pwned"
    for what, payload in _hostile_pickles(marker):
        buf = io.BytesIO(_archive({"data.pkl": payload, "data/0": np.zeros(6, np.float32).tobytes(),
                                   "version": b"3\n"}))
        with pytest.raises(pickle.UnpicklingError) as info:
            ember.load(buf)
        msg = str(info.value)
        assert what in msg or (what == "os.system" and "posix.system" in msg), (what, msg)
        assert not marker.exists(), what
    # TORCH_FORCE_WEIGHTS_ONLY_LOAD=1 refuses it even when the call asks for weights_only=False
    os.environ["TORCH_FORCE_WEIGHTS_ONLY_LOAD"] = "1"
    try:
        with pytest.raises(pickle.UnpicklingError, match="system"):
            ember.load(io.BytesIO(_archive({"data.pkl": pickle.dumps(_Payload(marker), protocol=2),
                                            "version": b"3\n"})), weights_only=False)
    finally:
        del os.environ["TORCH_FORCE_WEIGHTS_ONLY_LOAD"]
    # a bare pickle file (not a zip) with a payload
    raw = tmp_path / "raw.pkl"
    raw.write_bytes(pickle.dumps(_Payload(marker)))
    with pytest.raises(pickle.UnpicklingError):
        ember.load(raw)
    assert not marker.exists()


def test_storage_sizes_are_checked_before_allocating():
    ok = ember.load(_checkpoint(_tensor_pkl(6, 0, (2, 3), (3, 1))))
    assert ok.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    cases = [
        ("declares a storage of", _tensor_pkl(10**12, 0, (6,), (1,))),           # huge numel, 24-byte record
        ("declares a storage of", _tensor_pkl(7, 0, (6,), (1,))),                # off by one element
        ("out of bounds", _tensor_pkl(6, 0, (7,), (1,))),
        ("out of bounds", _tensor_pkl(6, 5, (2,), (1,))),
        ("out of bounds", _tensor_pkl(6, 0, (2, 3), (4, 1))),
        ("negative", _tensor_pkl(6, -1, (2,), (1,))),
        ("negative", _tensor_pkl(6, 0, (2,), (-1,))),
        ("cannot build", _tensor_pkl(6, 0, (2**40, 2**40, 2**40), (0, 0, 0))),    # stride-0 bomb
        ("mismatch in length", _tensor_pkl(6, 0, (2, 3), (1,))),
        ("qint8", _tensor_pkl(6, 0, (6,), (1,), stype="QInt8Storage")),
        ("data/1", _tensor_pkl(6, 0, (6,), (1,), key="1")),                      # record missing
    ]
    for match, body in cases:
        with pytest.raises(RuntimeError, match=match):
            ember.load(_checkpoint(body))


def test_broken_archives_raise_runtime_errors(tmp_path):
    good = _saved({"w": ember.arange(1000.), "b": ember.ones(3)}).getvalue()
    assert ember.load(io.BytesIO(good))["w"][999].item() == 999.0
    for cut in (len(good) - 10, len(good) // 2, 100):
        with pytest.raises(RuntimeError, match="zip archive"):
            ember.load(io.BytesIO(good[:cut]))
    recs = _records(good)
    for missing in ("data.pkl", "data/0", "version"):
        broken = _archive({k: v for k, v in recs.items() if k != missing})
        with pytest.raises(RuntimeError, match=missing):
            ember.load(io.BytesIO(broken))
    # one flipped byte in a tensor's record: the CRC catches it
    flipped = bytearray(good)
    start = good.index(np.arange(1000.0, dtype=np.float32)[500:502].tobytes())
    flipped[start] ^= 0x40
    with pytest.raises(RuntimeError, match="unreadable"):
        ember.load(io.BytesIO(bytes(flipped)))
    # a central directory entry declaring a huge record
    huge = bytearray(good)
    cd = good.index(b"archive/data/0", good.index(b"PK\x01\x02")) - 46     # its central directory entry
    huge[cd + 20:cd + 28] = struct.pack("<II", 2**31, 2**31)
    with pytest.raises(RuntimeError, match="cannot hold"):
        ember.load(io.BytesIO(bytes(huge)))
    # a record whose size disagrees with its storage
    recs2 = dict(recs, **{"data/1": recs["data/1"] + b"\0\0\0\0"})
    with pytest.raises(RuntimeError, match="storage of"):
        ember.load(io.BytesIO(_archive(recs2)))
    # not a checkpoint at all
    with pytest.raises(EOFError):
        ember.load(io.BytesIO(b""))
    with pytest.raises(pickle.UnpicklingError, match="not a PyTorch checkpoint"):
        ember.load(io.BytesIO(b"hello world"))
    with pytest.raises(pickle.UnpicklingError):
        ember.load(_checkpoint(b"garbage"))


# ======================================================================================================
# safetensors
# ======================================================================================================
def test_safetensors_round_trip_and_metadata(tmp_path):
    pytest.importorskip("safetensors")
    from safetensors import safe_open

    tensors = {name: (ember.arange(-3, 3) * 5).to(getattr(ember, name)).reshape(2, 3) for name in DTYPES}
    tensors["scalar"] = ember.tensor(1.5)
    tensors["empty"] = ember.zeros(0, 2)
    path = tmp_path / "t.safetensors"
    ember.save_safetensors(tensors, path, metadata={"format": "pt", "step": "3"})
    got = ember.load_safetensors(path)
    assert set(got) == set(tensors)
    for k, v in tensors.items():
        assert got[k].dtype is v.dtype and got[k].shape == v.shape and got[k].tolist() == v.tolist()
    got["float32"][0, 0] = 9.0                      # loaded tensors are writable and own their memory
    with safe_open(str(path), framework="np") as f:
        assert f.metadata() == {"format": "pt", "step": "3"}
    buf = io.BytesIO()
    ember.save_safetensors({"a": ember.ones(2)}, buf)
    assert ember.load_safetensors(io.BytesIO(buf.getvalue()))["a"].tolist() == [1.0, 1.0]
    assert ember.load_safetensors(buf.getvalue())["a"].tolist() == [1.0, 1.0]


def test_safetensors_refuses_shared_and_non_contiguous(tmp_path):
    pytest.importorskip("safetensors")
    base = ember.arange(10.)
    with pytest.raises(RuntimeError, match="Some tensors share memory"):
        ember.save_safetensors({"a": base, "b": base[2:4]}, tmp_path / "x.safetensors")
    with pytest.raises(RuntimeError, match="share memory"):
        ember.save_safetensors({"a": base, "a2": base}, tmp_path / "x.safetensors")
    # slices of one tensor that do not overlap are fine, as in safetensors.torch
    ember.save_safetensors({"lo": base[:5], "hi": base[5:]}, tmp_path / "ok.safetensors")
    assert ember.load_safetensors(tmp_path / "ok.safetensors")["hi"].tolist() == [5.0, 6.0, 7.0, 8.0, 9.0]
    with pytest.raises(ValueError, match="non contiguous"):
        ember.save_safetensors({"t": ember.ones(2, 3).t()}, tmp_path / "x.safetensors")
    with pytest.raises(ValueError, match="expected torch.Tensor"):
        ember.save_safetensors({"n": 3}, tmp_path / "x.safetensors")
    assert not (tmp_path / "x.safetensors").exists()


def test_safetensors_with_torch_both_ways(torch, tmp_path):
    st = pytest.importorskip("safetensors.torch")
    g = torch.Generator().manual_seed(0)
    ref = {name: (torch.randn(3, 2, generator=g) * 20).to(getattr(torch, name)) for name in DTYPES}
    st.save_file(ref, tmp_path / "t.safetensors")
    got = ember.load_safetensors(tmp_path / "t.safetensors")
    for k, v in ref.items():
        _same_tensor(got[k], v)
    ember.save_safetensors(got, tmp_path / "e.safetensors")
    back = st.load_file(tmp_path / "e.safetensors")
    for k, v in ref.items():
        assert back[k].dtype == v.dtype and torch.equal(back[k], v)
    # the same sharing refusal as safetensors.torch
    base = torch.arange(4.)
    with pytest.raises(RuntimeError, match="share memory"):
        st.save_file({"a": base, "b": base[1:]}, tmp_path / "s.safetensors")
    st.save_file({"a": torch.zeros(2, dtype=torch.float8_e5m2)}, tmp_path / "f8.safetensors")
    with pytest.raises(TypeError, match="F8_E5M2"):
        ember.load_safetensors(tmp_path / "f8.safetensors")


@pytest.mark.parametrize("dt", ["bfloat16", "complex64"])
def test_safetensors_bfloat16_and_complex_with_torch(torch, tmp_path, dt):
    st = pytest.importorskip("safetensors.torch")
    if dt == "bfloat16":
        pytest.importorskip("ml_dtypes")
    ref = {"a": torch.randn(3, 2, generator=torch.Generator().manual_seed(0)).to(getattr(torch, dt))}
    st.save_file(ref, tmp_path / "t.safetensors")
    for src in (tmp_path / "t.safetensors", (tmp_path / "t.safetensors").read_bytes()):
        got = ember.load_safetensors(src)
        assert str(got["a"].dtype) == str(ref["a"].dtype)
        assert got["a"].tolist() == ref["a"].tolist()
    ember.save_safetensors(got, tmp_path / "e.safetensors")
    assert torch.equal(st.load_file(tmp_path / "e.safetensors")["a"], ref["a"])


# ======================================================================================================
# archive records torch refuses: version, compression method, sizes; save/load argument rules
# ======================================================================================================
def _both_load(torch, data: bytes, tmp_path):
    """(ember's, torch's) outcome of loading the same bytes: ('ok', value) or (exception type, message)."""
    path = tmp_path / "f.pt"
    path.write_bytes(data)
    out = []
    for lib in (ember, torch):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out.append(("ok", lib.load(path)))
        except Exception as e:              # noqa: BLE001 - compared below
            out.append((type(e), str(e)))
    return out


def _with_record(good: bytes, name: str, data: bytes) -> bytes:
    return _archive({k: (data if k == name else v) for k, v in _records(good).items()})


@pytest.mark.parametrize("version", [b"99\n", b"abc\n", b"-1\n", b"0\n", b"11\n", b"", b"99999999999999999999\n",
                                     b"1\n", b"10\n", b" 3\n", b"+5", b"3abc"])
def test_version_record_is_checked_as_torch_checks_it(torch, tmp_path, version):
    good = _saved({"w": ember.arange(3.0)}).getvalue()
    e, t = _both_load(torch, _with_record(good, "version", version), tmp_path)
    if version.startswith(b"9999"):        # torch leaks C++'s out_of_range as IndexError('stoull')
        assert e[0] is RuntimeError and "Couldn't parse the version" in e[1]
        return
    assert e[0] is t[0], (e, t)
    if t[0] == "ok":
        assert e[1]["w"].tolist() == t[1]["w"].tolist()
    else:
        assert t[1].endswith(e[1]), (e[1], t[1])     # torch's text, less its "[enforce fail at ...] ." prefix
        assert "supported version" in e[1] or "Couldn't parse" in e[1]


def _set_method(data: bytes, suffix: str, method: int) -> bytes:
    """The archive with ``suffix``'s compression method changed in its local header and central directory."""
    b = bytearray(data)
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        for info in z.infolist():
            if info.filename.endswith(suffix):
                struct.pack_into("<H", b, info.header_offset + 8, method)
    i = b.find(b"PK\x01\x02")
    while i >= 0:
        n = struct.unpack_from("<H", b, i + 28)[0]
        if bytes(b[i + 46:i + 46 + n]).decode().endswith(suffix):
            struct.pack_into("<H", b, i + 10, method)
        i = b.find(b"PK\x01\x02", i + 4)
    return bytes(b)


@pytest.mark.parametrize("record", ["data.pkl", "data/0", "version", "byteorder"])
@pytest.mark.parametrize("method", [99, 12, 14])
def test_unsupported_compression_methods_raise_runtime_error(torch, tmp_path, record, method):
    good = _saved({"w": ember.arange(3.0)}).getvalue()
    e, t = _both_load(torch, _set_method(good, record, method), tmp_path)
    assert e[0] is t[0] is RuntimeError, (e, t)
    prefix = f"PytorchStreamReader failed retrieving file meta-data for {record}: unsupported method"
    assert t[1].startswith(prefix) and e[1].startswith(prefix)


def _deflated_pickle_archive(pkl_writer, pkl_size: int) -> bytes:
    """A checkpoint whose data.pkl is deflated, streamed by ``pkl_writer(write)`` (``pkl_size`` bytes)."""
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", zipfile.ZIP_STORED) as z:
        info = zipfile.ZipInfo("archive/data.pkl")
        info.compress_type = zipfile.ZIP_DEFLATED
        info.file_size = pkl_size
        with z.open(info, "w", force_zip64=pkl_size > 2**31) as w:
            pkl_writer(w.write)
        z.writestr("archive/version", b"3\n")
    return b.getvalue()


def test_a_deflated_pickle_bomb_is_refused_before_inflating(monkeypatch):
    import tracemalloc

    # the default limit, from the zip directory alone: a data.pkl of ~1 MB declaring 1 GiB (within deflate's
    # bound) is refused before a byte is inflated
    pkl = pickle.dumps(np.random.default_rng(0).bytes(1 << 20), protocol=2)
    data = bytearray(_deflated_pickle_archive(lambda w: w(pkl), len(pkl)))
    cd = data.index(b"archive/data.pkl", data.index(b"PK\x01\x02")) - 46
    struct.pack_into("<I", data, cd + 24, 1 << 30)
    tracemalloc.start()
    try:
        with pytest.raises(RuntimeError, match="would inflate to 1073741824 bytes, beyond ember.serialization."
                                               "MAX_PICKLE_BYTES"):
            ember.load(io.BytesIO(bytes(data)))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, peak
    # a real bomb (64 MiB of zeros in a ~64 KB record) against a lowered limit
    monkeypatch.setattr(ember.serialization, "MAX_PICKLE_BYTES", 16 << 20)
    chunk = bytes(1 << 22)

    def bomb(write):
        write(b"\x80\x02")
        for _ in range(16):
            write(chunk)
    with pytest.raises(RuntimeError, match="MAX_PICKLE_BYTES"):
        ember.load(io.BytesIO(_deflated_pickle_archive(bomb, 2 + 16 * len(chunk))))
    # the documented limit: a deflated data.pkl just over it is refused, and loads once it is raised
    payload = bytes(3 << 20)
    pkl = pickle.dumps(payload, protocol=2)
    small = _deflated_pickle_archive(lambda w: w(pkl), len(pkl))
    monkeypatch.setattr(ember.serialization, "MAX_PICKLE_BYTES", 1 << 20)
    with pytest.raises(RuntimeError, match="would inflate to"):
        ember.load(io.BytesIO(small))
    monkeypatch.setattr(ember.serialization, "MAX_PICKLE_BYTES", 256 << 20)
    assert ember.load(io.BytesIO(small)) == payload


def test_a_deflated_record_declaring_more_than_deflate_can_inflate_is_refused():
    payload = bytes(1 << 20)
    pkl = pickle.dumps(payload, protocol=2)
    data = bytearray(_deflated_pickle_archive(lambda w: w(pkl), len(pkl)))
    cd = data.index(b"archive/data.pkl", data.index(b"PK\x01\x02")) - 46
    csize = struct.unpack_from("<I", data, cd + 20)[0]
    assert len(pkl) < 1032 * csize            # a real deflate stream stays within deflate's bound
    struct.pack_into("<I", data, cd + 24, 1040 * csize + 2048)     # declares more than it could inflate to
    with pytest.raises(RuntimeError, match="cannot hold"):
        ember.load(io.BytesIO(bytes(data)))


def _torch_checkpoint_with_size(torch, size, stride):
    """A checkpoint made by torch.save whose tensor is rebuilt with the given size and stride objects."""
    t = torch.arange(3.0)

    class Fake:
        def __reduce__(self):
            return (torch._utils._rebuild_tensor_v2, (t.untyped_storage(), 0, size, stride, False, OrderedDict()))
    b = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.save({"a": Fake()}, b)
    return b.getvalue()


@pytest.mark.parametrize("size,stride", [([3], (1,)), ((3,), [1]), ([3], [1]), ((3,), None), ([3.0], (1,)),
                                         ([[3]], (1,)), ([True], (1,)), ((3,), [1.5])])
def test_tensor_size_and_stride_objects_as_torch_takes_them(torch, tmp_path, size, stride):
    e, t = _both_load(torch, _torch_checkpoint_with_size(torch, size, stride), tmp_path)
    assert e[0] is t[0], (e, t)
    if t[0] == "ok":
        assert e[1]["a"].tolist() == t[1]["a"].tolist()
    else:
        assert e[1].startswith("set_() received an invalid combination of arguments")


def test_explicit_pickle_module_with_weights_only(torch, tmp_path):
    path = tmp_path / "f.pt"
    ember.save({"w": ember.ones(2)}, path)
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match="Can not safely load weights when explicit pickle_module is "
                                               "specified"):
            lib.load(path, pickle_module=pickle, weights_only=True)
        assert lib.load(path, pickle_module=pickle)["w"].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("obj", [lambda x: x, {"f": lambda x: x}])
def test_saving_a_lambda_raises_pickling_error(torch, obj):
    for lib in (ember, torch):
        with pytest.raises(pickle.PicklingError):
            lib.save(obj, io.BytesIO())
    with pytest.raises(TypeError):        # what ember raised before, still caught
        ember.save(obj, io.BytesIO())
