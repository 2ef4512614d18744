"""The boilerplate PyTorch scripts carry, against a CPU-only torch 2.13: device errors, torch.cuda,
torch.backends, thread and determinism settings, serialization's safe globals, Embedding's
scale_grad_by_freq, float16 add-products, error messages of the matmul family, BatchNorm and pooling,
memory formats and torch._foreach_*."""
import dataclasses
import io
import pickle
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def outcome(fn, lib):
    """("ok", value) or (exception type name, message)."""
    try:
        r = fn(lib)
    except Exception as e:  # noqa: BLE001 - compared by the caller
        return type(e).__name__, str(e)
    if isinstance(r, (torch.Tensor, ember.Tensor)):
        r = ("tensor", str(r.dtype), r.detach().numpy().tolist())
    return "ok", r


def both(fn):
    t, e = outcome(fn, torch), outcome(fn, ember)
    assert e == t, f"torch {t!r}\nember {e!r}"
    return t


# ----- devices --------------------------------------------------------------------------------------

DEVICE_CASES = {
    "to cuda": lambda L: L.ones(1).to("cuda"),
    "to device cuda:0": lambda L: L.ones(1).to(L.device("cuda:0")),
    "to kw device": lambda L: L.ones(1).to(device="cuda"),
    "zeros cuda": lambda L: L.zeros(1, device="cuda"),
    "tensor cuda": lambda L: L.tensor([1.0], device="cuda"),
    "randn cuda": lambda L: L.randn(2, device="cuda"),
    "arange cuda:1": lambda L: L.arange(2, device="cuda:1"),
    ".cuda()": lambda L: L.ones(1).cuda(),
    ".cuda(0)": lambda L: L.ones(1).cuda(0),
    "to mps": lambda L: L.ones(1).to("mps"),
    "module to cuda": lambda L: L.nn.Linear(1, 1).to("cuda"),
    "module cuda()": lambda L: L.nn.Linear(1, 1).cuda(),
    "module to mps": lambda L: L.nn.Linear(1, 1).to("mps"),
    "zeros device=0": lambda L: L.zeros(1, device=0),
    "to(0)": lambda L: L.ones(1).to(0),
    "device cuda:a": lambda L: L.device("cuda:a"),
    "device cuda:01": lambda L: L.device("cuda:01"),
    "device cuda:1:2": lambda L: L.device("cuda:1:2"),
    "device index -1": lambda L: L.device("cuda", -1),
    "is_cuda": lambda L: L.ones(1).is_cuda,
    "Generator mps": lambda L: L.Generator(device="mps"),
    "cpu:0": lambda L: L.ones(2).to("cpu:0").device.type,
}


def test_cuda_generator_refused():
    for L in (torch, ember):
        with pytest.raises(RuntimeError, match="Cannot get CUDA generator without ATen_cuda library"):
            L.Generator(device="cuda")


@pytest.mark.parametrize("name", DEVICE_CASES)
def test_device_errors_as_cpu_only_torch(name):
    both(DEVICE_CASES[name])


def test_mps_creation_is_not_implemented():
    # PyTorch's own message lists its dispatch keys; ember's names the missing backend
    for fn in (lambda L: L.empty(2, device="mps"), lambda L: L.zeros(2, device="mps")):
        assert outcome(fn, torch)[0] == outcome(fn, ember)[0] == "NotImplementedError"


# ----- torch.cuda, torch.backends ------------------------------------------------------------------

CUDA_CALLS = {
    "is_available": lambda L: L.cuda.is_available(),
    "device_count": lambda L: L.cuda.device_count(),
    "is_initialized": lambda L: L.cuda.is_initialized(),
    "manual_seed": lambda L: L.cuda.manual_seed(0),
    "manual_seed_all": lambda L: L.cuda.manual_seed_all(0),
    "seed": lambda L: L.cuda.seed(),
    "seed_all": lambda L: L.cuda.seed_all(),
    "empty_cache": lambda L: L.cuda.empty_cache(),
    "synchronize": lambda L: L.cuda.synchronize(),
    "get_rng_state": lambda L: L.cuda.get_rng_state(),
    "get_rng_state_all": lambda L: L.cuda.get_rng_state_all(),
    "set_rng_state": lambda L: L.cuda.set_rng_state(L.zeros(5, dtype=L.uint8)),
    "set_rng_state_all": lambda L: L.cuda.set_rng_state_all([]),
    "initial_seed": lambda L: L.cuda.initial_seed(),
    "current_device": lambda L: L.cuda.current_device(),
    "get_device_name": lambda L: L.cuda.get_device_name(),
    "get_device_capability": lambda L: L.cuda.get_device_capability(),
    "memory_allocated": lambda L: L.cuda.memory_allocated(),
    "max_memory_allocated": lambda L: L.cuda.max_memory_allocated(),
    "memory_reserved": lambda L: L.cuda.memory_reserved(),
    "is_bf16_supported": lambda L: L.cuda.is_bf16_supported(),
    "cudnn.is_available": lambda L: L.backends.cudnn.is_available(),
    "cudnn.version": lambda L: L.backends.cudnn.version(),
    "cudnn flags": lambda L: (L.backends.cudnn.enabled, L.backends.cudnn.benchmark,
                              L.backends.cudnn.deterministic, L.backends.cudnn.allow_tf32),
    "mps": lambda L: (L.backends.mps.is_available(), L.backends.mps.is_built()),
    "cuda.is_built": lambda L: L.backends.cuda.is_built(),
    "matmul flags": lambda L: (L.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
                               L.backends.cuda.matmul.allow_bf16_reduced_precision_reduction),
    "sdp": lambda L: (L.backends.cuda.flash_sdp_enabled(), L.backends.cuda.mem_efficient_sdp_enabled(),
                      L.backends.cuda.math_sdp_enabled()),
}


@pytest.mark.parametrize("name", CUDA_CALLS)
def test_cuda_calls_as_cpu_only_torch(name):
    both(CUDA_CALLS[name])


def test_seeding_boilerplate_runs_and_keeps_the_cpu_stream():
    def fn(L):
        L.manual_seed(0)
        L.cuda.manual_seed_all(0)
        L.backends.cudnn.deterministic = True
        L.backends.cudnn.benchmark = False
        return L.rand(3)
    try:
        both(fn)
    finally:
        for L in (torch, ember):
            L.backends.cudnn.deterministic = False


def test_backend_flags_are_settable():
    import ember.backends.cudnn as cudnn    # the import form scripts use
    try:
        cudnn.benchmark = True
        ember.backends.cuda.matmul.allow_tf32 = True
        assert ember.backends.cudnn.benchmark and ember.backends.cuda.matmul.allow_tf32
    finally:
        cudnn.benchmark = False
        ember.backends.cuda.matmul.allow_tf32 = False


# ----- threads, determinism, matmul precision ------------------------------------------------------

@pytest.mark.parametrize("arg", [0, -1, "a", 2.0, True])
def test_set_num_threads_refuses_as_torch(arg):
    both(lambda L: L.set_num_threads(arg))


def test_num_threads_roundtrip():
    before, before_interop = ember.get_num_threads(), ember.get_num_interop_threads()
    assert before >= 1 and before_interop >= 1
    try:
        ember.set_num_threads(1)
        assert ember.get_num_threads() == 1
        ember.set_num_interop_threads(3)
        assert ember.get_num_interop_threads() == 3
    finally:
        ember.set_num_threads(before)
        ember._settings._state["interop"] = None


@pytest.mark.parametrize("call", ["mode", "warn_only"])
def test_use_deterministic_algorithms_checks_types_as_torch(call):
    if call == "mode":
        both(lambda L: L.use_deterministic_algorithms(1))
    else:
        both(lambda L: L.use_deterministic_algorithms(True, warn_only=1))


def test_deterministic_and_precision_state():
    both(lambda L: (L.are_deterministic_algorithms_enabled(), L.is_deterministic_algorithms_warn_only_enabled(),
                    L.get_float32_matmul_precision()))
    try:
        ember.use_deterministic_algorithms(True, warn_only=True)
        assert ember.are_deterministic_algorithms_enabled() and ember.is_deterministic_algorithms_warn_only_enabled()
        ember.set_float32_matmul_precision("high")
        assert ember.get_float32_matmul_precision() == "high" and ember.backends.cuda.matmul.allow_tf32
        with pytest.warns(UserWarning, match="is not one of 'highest', 'high', or 'medium'"):
            ember.set_float32_matmul_precision("nonsense")     # ignored, as PyTorch
        assert ember.get_float32_matmul_precision() == "high"
    finally:
        ember.use_deterministic_algorithms(False)
        ember.set_float32_matmul_precision("highest")
    assert not ember.backends.cuda.matmul.allow_tf32


# ----- serialization: safe globals -----------------------------------------------------------------

@dataclasses.dataclass
class Config:
    lr: float
    name: str


class Slotted:
    __slots__ = ("a",)

    def __init__(self, a=None):
        self.a = a


def make_point(x, y):
    return {"x": x, "y": y}


class _CallsMakePoint:
    def __reduce__(self):
        return (make_point, (1, 2))


class _Hostile:
    def __reduce__(self):
        import os
        return (os.system, ("echo pwned",))


class _EvalReduce:
    def __reduce__(self):
        return (eval, ("1 + 1",))


def _torch_file(obj) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def _load(data: bytes):
    return ember.load(io.BytesIO(data), weights_only=True)


@pytest.fixture
def clean_globals():
    ember.serialization.clear_safe_globals()
    yield
    ember.serialization.clear_safe_globals()


def test_user_classes_need_the_allow_list(clean_globals):
    data = _torch_file({"cfg": Config(0.1, "adam"), "w": torch.arange(3.0), "s": Slotted(7)})
    with pytest.raises(pickle.UnpicklingError, match=r"add_safe_globals\(\[.*Config\]\)"):
        _load(data)
    with ember.serialization.safe_globals([Config, Slotted]):
        assert set(ember.serialization.get_safe_globals()) == {Config, Slotted}
        out = _load(data)
    assert ember.serialization.get_safe_globals() == []
    assert out["cfg"] == Config(0.1, "adam") and out["s"].a == 7
    assert out["w"].tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(pickle.UnpicklingError):
        _load(data)                             # the context manager removed them again
    ember.serialization.add_safe_globals([(Config, f"{Config.__module__}.Config"), Slotted])
    assert _load(data)["cfg"].name == "adam"
    ember.serialization.clear_safe_globals()
    assert ember.serialization.get_safe_globals() == []


def test_user_functions_can_be_called_once_allowed(clean_globals):
    data = _torch_file([_CallsMakePoint()])
    with pytest.raises(pickle.UnpicklingError, match="make_point"):
        _load(data)
    ember.serialization.add_safe_globals([make_point])
    assert _load(data) == [{"x": 1, "y": 2}]


@pytest.mark.parametrize("hostile", [_Hostile, _EvalReduce])
def test_hostile_files_still_refused_with_user_globals(clean_globals, hostile, capfd):
    ember.serialization.add_safe_globals([Config, Slotted, make_point])
    data = _torch_file({"cfg": Config(1.0, "x"), "bad": hostile()})
    with pytest.raises(pickle.UnpicklingError):
        _load(data)
    assert "pwned" not in capfd.readouterr().out


def test_only_the_exact_objects_allowed(clean_globals):
    # allowing one class of a module allows nothing else from it, and a blocked module stays blocked even
    # when the user names it
    import os
    ember.serialization.add_safe_globals([Config, (os.system, "os.system")])
    with pytest.raises(pickle.UnpicklingError, match="Slotted"):
        _load(_torch_file({"cfg": Config(1.0, "a"), "s": Slotted(1)}))
    with pytest.raises(pickle.UnpicklingError, match="blocked"):
        _load(_torch_file([_Hostile()]))


def test_safe_globals_tuple_errors(clean_globals):
    ember.serialization.add_safe_globals([(Config, "a", "b")])
    with pytest.raises(ValueError, match="length 2"):
        _load(_torch_file([1]))


# ----- Embedding(scale_grad_by_freq=True) ------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("padding_idx", [None, 0, -1])
def test_embedding_scale_grad_by_freq_bitwise(dtype, padding_idx):
    rng = np.random.default_rng(3)
    for _ in range(3):
        wn, gn = rng.standard_normal((6, 4)), rng.standard_normal((5, 7, 4))
        idx = rng.integers(0, 6, (5, 7))
        grads = []
        for L in (torch, ember):
            w = L.tensor(wn, dtype=getattr(L, dtype), requires_grad=True)
            out = L.nn.functional.embedding(L.tensor(idx), w, padding_idx=padding_idx, scale_grad_by_freq=True)
            assert out.grad_fn.name() == "EmbeddingBackward0"
            out.backward(L.tensor(gn, dtype=getattr(L, dtype)))
            grads.append(w.grad.numpy())
        np.testing.assert_array_equal(grads[1], grads[0])


def test_embedding_module_scale_grad_by_freq():
    def fn(L):
        L.manual_seed(0)
        m = L.nn.Embedding(5, 3, scale_grad_by_freq=True)
        (m(L.tensor([[1, 2, 1], [1, 0, 4]])) ** 2).sum().backward()
        return m.weight.grad
    both(fn)


def test_embedding_sparse_is_refused_clearly():
    with pytest.raises(NotImplementedError, match="no sparse tensors"):
        ember.nn.functional.embedding(ember.tensor([1]), ember.ones(3, 2), sparse=True)


# ----- float16 add-products ------------------------------------------------------------------------

# op, shapes, exact. ember follows the summation order of PyTorch's AVX2 CPU kernels; other builds (AVX-512, ARM)
# sum in another order, and addmv with alpha/beta other than 1 goes through a kernel ember does not copy: there
# a few entries may be one ulp apart.
HALF = {
    "addmm": (lambda L, c, a, b: L.addmm(c, a, b), [(32,), (16, 64), (64, 32)], True),
    "addmm_ab": (lambda L, c, a, b: L.addmm(c, a, b, beta=0.5, alpha=1.5), [(16, 32), (16, 64), (64, 32)], True),
    "addmm_beta0": (lambda L, c, a, b: L.addmm(c, a, b, beta=0, alpha=2.0), [(16, 32), (16, 64), (64, 32)], True),
    "linear": (lambda L, x, w, b: L.nn.functional.linear(x, w, b), [(16, 64), (32, 64), (32,)], True),
    "addmv": (lambda L, c, a, b: L.addmv(c, a, b), [(16,), (16, 77), (77,)], True),
    "addmv_ab": (lambda L, c, a, b: L.addmv(c, a, b, beta=0.5, alpha=1.5), [(16,), (16, 77), (77,)], False),
    "mv": (lambda L, a, b: L.mv(a, b), [(16, 77), (77,)], True),
    "dot": (lambda L, a, b: L.dot(a, b), [(77,), (77,)], True),
    "linear_K130": (lambda L, x, w: L.nn.functional.linear(x, w), [(7, 130), (9, 130)], True),
    "matmul_1d_3d": (lambda L, a, b: L.matmul(a, b), [(70,), (2, 70, 9)], True),
    "matmul_bcast": (lambda L, a, b: L.matmul(a, b), [(2, 1, 5, 70), (1, 3, 70, 9)], True),
    "mm_transposed": (lambda L, a, b: L.mm(a, b.t()), [(5, 70), (9, 70)], True),
    "addr": (lambda L, c, a, b: L.addr(c, a, b), [(16, 8), (16,), (8,)], True),
    "addr_ab": (lambda L, c, a, b: L.addr(c, a, b, beta=0.5, alpha=1.5), [(16, 8), (16,), (8,)], True),
    "addbmm": (lambda L, c, a, b: L.addbmm(c, a, b, beta=0.5, alpha=1.5), [(16, 32), (3, 16, 64), (3, 64, 32)],
               True),
    "baddbmm": (lambda L, c, a, b: L.baddbmm(c, a, b, beta=0.5, alpha=1.5), [(3, 16, 32), (3, 16, 77), (3, 77, 32)],
                True),
    "mm": (lambda L, a, b: L.mm(a, b), [(16, 64), (64, 32)], True),
    "matmul": (lambda L, a, b: L.matmul(a, b), [(16, 64), (64,)], True),
    "bmm": (lambda L, a, b: L.bmm(a, b), [(3, 16, 64), (3, 64, 32)], True),
}


@pytest.mark.parametrize("name", HALF)
def test_float16_products_round_as_torch(name):
    fn, shapes, exact = HALF[name]
    rng = np.random.default_rng(0)
    arrs = [rng.standard_normal(s).astype(np.float16) for s in shapes]
    t = fn(torch, *[torch.tensor(a) for a in arrs]).numpy()
    e = fn(ember, *[ember.tensor(a) for a in arrs]).numpy()
    assert e.dtype == np.float16
    if exact and torch.backends.cpu.get_cpu_capability() == "AVX2":
        np.testing.assert_array_equal(e, t)
    else:
        assert (e != t).mean() < 0.01
        np.testing.assert_allclose(e.astype(np.float32), t.astype(np.float32), rtol=2e-3, atol=2e-3)


def test_half_linear_module_matches_torch():
    # the reviewer's case: nn.Linear(64, 32).half()
    def fn(L):
        L.manual_seed(0)
        m = L.nn.Linear(64, 32).half()
        return m(L.randn(16, 64).half())
    t, e = outcome(fn, torch), outcome(fn, ember)
    assert e == t


# ----- messages ------------------------------------------------------------------------------------

F64 = "float64"
MESSAGES = {
    "mm": lambda L: L.mm(L.ones(2, 3, dtype=L.float64), L.ones(3, 2)),
    "matmul": lambda L: L.matmul(L.ones(2, 3, dtype=L.float64), L.ones(3, 2)),
    "matmul dot": lambda L: L.matmul(L.ones(3, dtype=L.float64), L.ones(3)),
    "matmul mv": lambda L: L.matmul(L.ones(2, 3, dtype=L.float64), L.ones(3)),
    "matmul 3d@2d": lambda L: L.matmul(L.ones(2, 2, 3, dtype=L.float64), L.ones(3, 2)),
    "matmul 3d@3d": lambda L: L.matmul(L.ones(2, 2, 3, dtype=L.float64), L.ones(2, 3, 2)),
    "matmul 1d@3d": lambda L: L.matmul(L.ones(3, dtype=L.float64), L.ones(2, 3, 4)),
    "matmul 2d@3d shapes": lambda L: L.matmul(L.ones(2, 3, dtype=L.float64), L.ones(2, 4, 4)),
    "matmul batch first": lambda L: L.matmul(L.ones(2, 2, 3, dtype=L.float64), L.ones(3, 2, 4)),
    "mm shapes first": lambda L: L.mm(L.ones(2, 3, dtype=L.float64), L.ones(4, 2)),
    "bmm": lambda L: L.bmm(L.ones(2, 2, 3, dtype=L.float64), L.ones(2, 3, 2)),
    "mv": lambda L: L.mv(L.ones(2, 3, dtype=L.float64), L.ones(3)),
    "addmm mat1": lambda L: L.addmm(L.ones(2), L.ones(2, 3, dtype=L.float64), L.ones(3, 2)),
    "addmm self": lambda L: L.addmm(L.ones(2, dtype=L.float64), L.ones(2, 3, dtype=L.float64), L.ones(3, 2)),
    "addmm dtype first": lambda L: L.addmm(L.ones(5), L.ones(2, 3, dtype=L.float64), L.ones(4, 2)),
    "linear bias": lambda L: L.nn.functional.linear(L.ones(2, 3, dtype=L.float64), L.ones(2, 3), L.ones(2)),
    "linear no bias": lambda L: L.nn.functional.linear(L.ones(2, 3, dtype=L.float64), L.ones(2, 3)),
    "linear 3d": lambda L: L.nn.functional.linear(L.ones(2, 2, 3, dtype=L.float64), L.ones(2, 3), L.ones(2)),
    "Linear": lambda L: L.nn.Linear(3, 2)(L.ones(2, 3, dtype=L.float64)),
    "addmv": lambda L: L.addmv(L.ones(2), L.ones(2, 3, dtype=L.float64), L.ones(3)),
    "addmv shapes first": lambda L: L.addmv(L.ones(2), L.ones(2, 3, dtype=L.float64), L.ones(4)),
    "baddbmm": lambda L: L.baddbmm(L.ones(2, 2, 2), L.ones(2, 2, 3, dtype=L.float64), L.ones(2, 4, 2)),
    "addbmm": lambda L: L.addbmm(L.ones(2, 2), L.ones(2, 2, 3, dtype=L.float64), L.ones(2, 3, 2)),
    "addbmm shapes": lambda L: L.addbmm(L.ones(2, 2), L.ones(2, 2, 3), L.ones(2, 4, 2)),
    "addbmm batches": lambda L: L.addbmm(L.ones(2, 2), L.ones(2, 2, 3), L.ones(3, 3, 2)),
    "addr promotes": lambda L: L.addr(L.ones(2, 2), L.ones(2, dtype=L.float64), L.ones(2)),
    "addr promotes int": lambda L: L.addr(L.ones(2, 2), L.ones(2, dtype=L.int64), L.ones(2)),
    "BatchNorm2d": lambda L: L.nn.BatchNorm2d(3)(L.ones(2, 4, 5, 5)),
    "BatchNorm1d eval": lambda L: L.nn.BatchNorm1d(3).eval()(L.ones(2, 4)),
    "batch_norm var": lambda L: L.nn.functional.batch_norm(L.ones(2, 4, 5), L.zeros(4), L.ones(3), L.ones(3)),
    "batch_norm weight": lambda L: L.nn.functional.batch_norm(L.ones(2, 4, 5), L.zeros(4), L.ones(4), L.ones(3)),
    "MaxPool2d": lambda L: L.nn.MaxPool2d(3)(L.ones(1, 1, 2, 2)),
    "MaxPool2d channels": lambda L: L.nn.functional.max_pool2d(L.ones(1, 3, 4, 2), 2, dilation=2),
    "MaxPool2d unbatched": lambda L: L.nn.MaxPool2d(3)(L.ones(1, 2, 2)),
    "MaxPool1d": lambda L: L.nn.MaxPool1d(3)(L.ones(1, 1, 2)),
    "max_pool1d dilation": lambda L: L.nn.functional.max_pool1d(L.ones(2, 3, 2), 2, stride=1, dilation=3),
    "max_pool1d indices": lambda L: L.nn.functional.max_pool1d(L.ones(1, 1, 2), 3, return_indices=True),
    "MaxPool3d": lambda L: L.nn.MaxPool3d(3)(L.ones(1, 1, 2, 2, 2)),
    "AvgPool2d": lambda L: L.nn.AvgPool2d(3)(L.ones(1, 1, 2, 2)),
    "AvgPool1d": lambda L: L.nn.AvgPool1d(3)(L.ones(1, 1, 2)),
}


@pytest.mark.parametrize("name", MESSAGES)
def test_messages_as_torch(name):
    both(MESSAGES[name])


# ----- memory formats ------------------------------------------------------------------------------

FORMATS = {
    "is_contiguous cl": lambda L: L.ones(2, 3, 4, 5).is_contiguous(memory_format=L.channels_last),
    "is_contiguous contiguous": lambda L: L.ones(2, 3, 4, 5).is_contiguous(memory_format=L.contiguous_format),
    "is_contiguous preserve": lambda L: L.ones(2, 3, 4, 5).is_contiguous(memory_format=L.preserve_format),
    "is_contiguous cl3d on 4d": lambda L: L.ones(2, 3, 4, 5).is_contiguous(memory_format=L.channels_last_3d),
    "is_contiguous cl on 3d": lambda L: L.ones(2, 3, 4).is_contiguous(memory_format=L.channels_last),
    "is_contiguous C=1": lambda L: L.ones(2, 1, 4, 5).is_contiguous(memory_format=L.channels_last),
    "is_contiguous permuted": lambda L: L.ones(2, 4, 5, 3).permute(0, 3, 1, 2).is_contiguous(
        memory_format=L.channels_last),
    "is_contiguous bad": lambda L: L.ones(2).is_contiguous(memory_format=3),
    "contiguous cl": lambda L: (lambda y: (y.stride(), y.is_contiguous(),
                                           y.is_contiguous(memory_format=L.channels_last)))(
        L.ones(2, 3, 4, 5).contiguous(memory_format=L.channels_last)),
    "to cl": lambda L: L.ones(2, 3, 4, 5).to(memory_format=L.channels_last).stride(),
    "to dtype cl": lambda L: L.ones(2, 3, 4, 5).to(L.float64, memory_format=L.channels_last).stride(),
    "clone cl": lambda L: L.ones(2, 3, 4, 5).clone(memory_format=L.channels_last).stride(),
    "cl3d": lambda L: L.ones(1, 2, 3, 4, 5).contiguous(memory_format=L.channels_last_3d).stride(),
    "cl elementwise keeps layout": lambda L: (L.ones(2, 3, 4, 5).contiguous(memory_format=L.channels_last)
                                              + 1).stride(),
    "cl back to contiguous": lambda L: L.ones(2, 3, 4, 5).contiguous(memory_format=L.channels_last)
    .contiguous().stride(),
    "cl view refused": lambda L: L.ones(2, 3, 4, 5).contiguous(memory_format=L.channels_last).view(2, -1),
    "to cl rank 3": lambda L: L.ones(2, 3, 4).to(memory_format=L.channels_last),
    "contiguous cl rank 3": lambda L: L.ones(2, 3, 4).contiguous(memory_format=L.channels_last),
}


@pytest.mark.parametrize("name", FORMATS)
def test_memory_formats_as_torch(name):
    both(FORMATS[name])


def test_channels_last_values_and_gradient():
    def fn(L):
        L.manual_seed(0)
        x = L.randn(2, 3, 4, 5, requires_grad=True)
        y = x.contiguous(memory_format=L.channels_last)
        z = x.to(memory_format=L.channels_last)
        w = L.arange(120.0).reshape(2, 3, 4, 5)
        (g,) = L.autograd.grad((y * w).sum() + (z * w).sum(), x)
        return y.grad_fn.name(), z.grad_fn.name(), bool((y == x).all()), g.tolist()
    t, e = outcome(fn, torch), outcome(fn, ember)
    assert t == e


# ----- torch._foreach_* ----------------------------------------------------------------------------

def _lists(L):
    return [L.arange(1.0, 3.0), L.arange(1.0, 4.0)]


FOREACH = {
    "add list alpha": lambda L: L._foreach_add(_lists(L), _lists(L), alpha=2),
    "add scalars": lambda L: L._foreach_add(_lists(L), [1, 2]),
    "add tensor": lambda L: L._foreach_add(_lists(L), L.tensor(3.0)),
    "sub": lambda L: L._foreach_sub(_lists(L), 1),
    "mul_": lambda L: L._foreach_mul_(_lists(L), 2.0),
    "div_": lambda L: L._foreach_div_(_lists(L), 2),
    "addcmul_": lambda L: (lambda a: L._foreach_addcmul_(a, a, a, value=2))(_lists(L)),
    "addcmul scalars": lambda L: (lambda a: L._foreach_addcmul(a, a, a, [1, 2]))(_lists(L)),
    "addcdiv": lambda L: (lambda a: L._foreach_addcdiv(a, a, a, 2))(_lists(L)),
    "lerp_": lambda L: L._foreach_lerp_(_lists(L), [L.zeros(2), L.zeros(3)], 0.25),
    "lerp tensor weights": lambda L: L._foreach_lerp([L.ones(2)], [L.zeros(2)], [L.tensor([0.5, 0.2])]),
    "sqrt": lambda L: L._foreach_sqrt(_lists(L)),
    "sqrt_": lambda L: L._foreach_sqrt_(_lists(L)),
    "neg": lambda L: L._foreach_neg(_lists(L)),
    "pow": lambda L: L._foreach_pow(_lists(L), 2),
    "maximum": lambda L: L._foreach_maximum(_lists(L), 1.5),
    "minimum tensors": lambda L: L._foreach_minimum(_lists(L), [L.zeros(2), L.ones(3) * 2]),
    "norm": lambda L: L._foreach_norm(_lists(L)),
    "norm inf": lambda L: L._foreach_norm(_lists(L), float("inf")),
    "zero_": lambda L: L._foreach_zero_(_lists(L)),
    "copy_": lambda L: L._foreach_copy_(_lists(L), [L.ones(2) * 5, L.ones(3) * 5]),
    "length mismatch": lambda L: L._foreach_add(_lists(L), [L.ones(2)]),
    "empty": lambda L: L._foreach_add([], 1),
    "shape mismatch": lambda L: L._foreach_add_([L.ones(2), L.ones(3)], [L.ones(3), L.ones(3)]),
    "int in place float": lambda L: L._foreach_add_([L.ones(2, dtype=L.int64)], 1.5),
}


def _plain(r):
    if isinstance(r, (list, tuple)):
        return type(r).__name__, [x.tolist() if hasattr(x, "tolist") else x for x in r]
    return r


@pytest.mark.parametrize("name", FOREACH)
def test_foreach_as_torch(name):
    both(lambda L: _plain(FOREACH[name](L)))


def test_foreach_in_place_is_the_list_and_bumps_versions():
    ps = [ember.ones(2), ember.ones(3)]
    v = [p._version for p in ps]
    assert ember._foreach_mul_(ps, 0.5) is ps
    assert [p._version for p in ps] == [x + 1 for x in v]


def test_ema_update_with_foreach():
    def fn(L):
        L.manual_seed(0)
        model, ema = L.nn.Linear(4, 2), L.nn.Linear(4, 2)
        with L.no_grad():
            e, m = list(ema.parameters()), list(model.parameters())
            L._foreach_mul_(e, 0.9)
            L._foreach_add_(e, m, alpha=0.1)
        return [p.detach().clone() for p in ema.parameters()]
    both(lambda L: _plain(fn(L)))


def test_save_user_objects_once_allowed(clean_globals):
    obj = {"cfg": Config(0.5, "sgd"), "s": Slotted(3), "w": ember.ones(2)}
    buf = io.BytesIO()
    ember.save(obj, buf)                   # saving needs no allow-list (torch.save pickles anything)
    with pytest.raises(pickle.UnpicklingError, match="add_safe_globals"):
        ember.load(io.BytesIO(buf.getvalue()))
    ember.serialization.add_safe_globals([Config, Slotted])
    back = ember.load(io.BytesIO(buf.getvalue()))
    assert back["cfg"] == Config(0.5, "sgd") and back["s"].a == 3 and back["w"].tolist() == [1.0, 1.0]
    with torch.serialization.safe_globals([Config, Slotted]):     # the same file, read by torch
        t = torch.load(io.BytesIO(buf.getvalue()), weights_only=True)
    assert t["cfg"] == Config(0.5, "sgd") and t["s"].a == 3 and t["w"].tolist() == [1.0, 1.0]
