"""Device 'cuda' on the CPU, through tests/cupy_standin.py: a NumPy-backed stand-in for the CuPy calls ember makes.

NOT A GPU TEST: the stand-in checks ember's cuda plumbing (device strings and indices, moves, reprs, errors,
set_default_device, modules, optimizers, checkpoints, pinned memory, torch.cuda's API), differential against
PyTorch where a CPU-only PyTorch can tell (device parsing, messages it prints for another device). The kernels
are the common array-API ones, which tests/test_array_api_device.py checks op by op; tests/test_cuda.py runs all
of this on a real GPU.
"""
from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn

import cupy_standin

@pytest.fixture(autouse=True, scope="module")
def standin():
    cupy_standin.install()
    yield cupy_standin
    ember.set_default_device(None)
    cupy_standin.uninstall()


@pytest.fixture(autouse=True)
def _default_device_back():
    yield
    ember.set_default_device(None)


def _err(fn):
    try:
        fn()
    except Exception as e:   # noqa: BLE001
        return type(e).__name__, str(e).splitlines()[0]
    return None


# ----- devices ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec", [("cuda",), ("cuda:0",), ("cuda", 0), ("cuda:1",), ("cuda", 3)])
def test_device_objects_as_torch(spec):
    a, b = torch.device(*spec), ember.device(*spec)
    assert (repr(a), str(a), a.type, a.index) == (repr(b), str(b), b.type, b.index)
    assert (a == torch.device("cuda:0")) == (b == ember.device("cuda:0"))


@pytest.mark.parametrize("spec", ["cuda:01", "cuda:a", "cuda:-1", "cuda:0:0"])
def test_bad_device_strings_as_torch(spec):
    assert _err(lambda: ember.device(spec)) == _err(lambda: torch.device(spec))


def test_a_cuda_tensor_is_on_cuda_0():
    x = ember.ones(2, device="cuda")
    assert x.device == ember.device("cuda", 0) and repr(x.device) == "device(type='cuda', index=0)"
    assert x.is_cuda and not x.is_cpu and x.get_device() == 0 and ember.get_device(x) == 0
    assert ember.ones(2).get_device() == -1
    for d in ("cuda:0", ember.device("cuda", 0), ember.device("cuda"), 0):
        assert ember.zeros(1, device=d).device == x.device
    assert x.type() == "torch.cuda.FloatTensor"


def test_moves_keep_values_and_dtypes():
    a = ember.arange(12, dtype=ember.float64).reshape(3, 4)
    for to in (lambda t: t.cuda(), lambda t: t.to("cuda"), lambda t: t.to("cuda:0"), lambda t: t.to(0),
               lambda t: t.cuda(0), lambda t: t.to(ember.device("cuda", 0)), lambda t: t.to("cuda", non_blocking=True),
               lambda t: t.to(ember.ones(1, dtype=ember.float64, device="cuda"))):
        g = to(a)
        assert g.device.type == "cuda" and g.dtype == a.dtype and g.shape == a.shape
        back = g.cpu()
        assert back.device.type == "cpu" and ember.equal(back, a)
    g = a.cuda()
    assert g.cuda() is g and g.to("cuda") is g and a.cpu() is a
    assert g.to("cuda", ember.float32).dtype == ember.float32
    assert _err(lambda: a.cuda("cpu")) == _err(lambda: torch.ones(1).cuda("cpu"))   # 'Invalid device, must be cuda device'


def test_one_gpu_is_built():
    assert _err(lambda: ember.ones(1, device="cuda:1"))[0] == "RuntimeError"
    assert "invalid device ordinal" in _err(lambda: ember.ones(1, device="cuda:1"))[1]


def test_reprs_as_pytorch_prints_them():
    # PyTorch's documented forms: the device suffix first, then dtype, then requires_grad / grad_fn
    assert repr(ember.tensor([1.0, 2.0], device="cuda")) == "tensor([1., 2.], device='cuda:0')"
    assert repr(ember.tensor([1, 2], dtype=ember.int32, device="cuda")) == \
        "tensor([1, 2], device='cuda:0', dtype=torch.int32)"
    x = ember.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    assert repr(x) == "tensor([1., 2.], device='cuda:0', requires_grad=True)"
    assert repr(x * 2) == "tensor([2., 4.], device='cuda:0', grad_fn=<MulBackward0>)"
    assert repr(ember.tensor(3.5, device="cuda")) == "tensor(3.5000, device='cuda:0')"
    assert str(ember.zeros(0, device="cuda")) == "tensor([], device='cuda:0')"


def test_numpy_refused_item_and_tolist_work():
    x = ember.tensor([[1.5, 2.0]], device="cuda")
    want = _err(lambda: torch.ones(1, device="meta").numpy())   # torch's message, for another device
    assert _err(lambda: x.numpy()) == (want[0], want[1].replace("meta", "cuda:0"))
    assert x.sum().item() == 3.5 and x.tolist() == [[1.5, 2.0]] and float(x[0, 0]) == 1.5
    assert int(ember.tensor(7, device="cuda")) == 7 and bool(ember.tensor(True, device="cuda"))


# ----- mixing devices ----------------------------------------------------------------------------------------------

def test_mixing_devices_raises_pytorchs_error():
    g, c = ember.ones(2, device="cuda"), ember.ones(2)
    msg = "Expected all tensors to be on the same device, but found at least two devices, {} and {}!"
    assert _err(lambda: g + c) == ("RuntimeError", msg.format("cuda:0", "cpu"))
    assert _err(lambda: c + g) == ("RuntimeError", msg.format("cpu", "cuda:0"))
    assert _err(lambda: ember.mul(g, c)) == ("RuntimeError", msg.format("cuda:0", "cpu"))
    assert _err(lambda: ember.ones(2, 2, device="cuda") @ ember.ones(2, 2))[0] == "RuntimeError"
    lin = nn.Linear(2, 2).cuda()
    assert "same device" in _err(lambda: lin(c))[1]
    # a 0-d cpu tensor joins a cuda op, as in PyTorch
    r = g * ember.tensor(3.0)
    assert r.device.type == "cuda" and r.tolist() == [3.0, 3.0]


def test_the_seed_pitfall_snippet():
    # tests/seed_snippets/s000_16_pitfall_devices.py, with ember as torch: the bug raises, the fix works
    x = ember.tensor([1.0], device="cuda", requires_grad=True)
    y = ember.tensor([2.0], device="cpu", requires_grad=True)
    assert _err(lambda: x + y) == ("RuntimeError", "Expected all tensors to be on the same device, but found at "
                                   "least two devices, cuda:0 and cpu!")
    y = ember.tensor([2.0], device="cuda", requires_grad=True)
    z = x + y
    z.backward()
    assert z.device.type == "cuda" and x.grad.device.type == "cuda" and y.grad.tolist() == [1.0]


# ----- autograd ---------------------------------------------------------------------------------------------------

def _pair(*shape, seed=0):
    rng = np.random.default_rng(seed)
    a = ember.tensor(rng.standard_normal(shape), dtype=ember.float64)
    return a.clone().requires_grad_(), a.cuda().detach().requires_grad_()


def _close(g, c, tol=1e-10):
    assert g.device.type == "cuda"
    np.testing.assert_allclose(g.detach().cpu().numpy(), c.detach().numpy(), rtol=tol, atol=tol)


def test_backward_double_backward_and_forward_mode_on_cuda():
    c, g = _pair(3, 4)
    fn = lambda t: (t.sin() * t.exp()).softmax(-1).logsumexp(0).sum() + (t @ t.T).trace()   # noqa: E731
    (gc,) = ember.autograd.grad(fn(c), c, create_graph=True)
    (gg,) = ember.autograd.grad(fn(g), g, create_graph=True)
    _close(gg, gc)
    (hc,) = ember.autograd.grad(gc.sum(), c)
    (hg,) = ember.autograd.grad(gg.sum(), g)
    _close(hg, hc)
    import ember.autograd.forward_ad as fwAD
    tan = ember.ones(3, 4, dtype=ember.float64)
    outs = []
    for x, t in ((c.detach(), tan), (g.detach(), tan.cuda())):
        with fwAD.dual_level():
            outs.append(fwAD.unpack_dual(fn(fwAD.make_dual(x, t))).tangent)
    _close(outs[1], outs[0])


def test_gradients_stay_on_the_device_and_hooks_run():
    _, g = _pair(5)
    seen = []
    g.register_hook(lambda grad: seen.append(grad.device.type))
    (g.tanh() ** 2).sum().backward()
    assert g.grad.device.type == "cuda" and seen == ["cuda"]


# ----- modules, optimizers, training --------------------------------------------------------------------------------

def _mlp():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 3))


def test_module_to_cuda_and_back():
    m = _mlp()
    assert m.cuda() is m and all(p.device.type == "cuda" for p in m.parameters())
    assert m.to("cpu") is m and all(p.device.type == "cpu" for p in m.parameters())
    m.to(ember.device("cuda", 0))
    assert all(b.device.type == "cuda" for b in m.state_dict().values())
    m.cpu()
    assert all(p.device.type == "cpu" for p in m.parameters())


@pytest.mark.parametrize("opt", ["SGD", "Adam", "AdamW", "RMSprop"])
def test_training_steps_match_the_cpu_and_state_is_on_the_device(opt):
    kwargs = {"SGD": dict(lr=0.1, momentum=0.9), "Adam": dict(lr=1e-2), "AdamW": dict(lr=1e-2),
              "RMSprop": dict(lr=1e-3)}[opt]
    ember.manual_seed(1)
    x, y = ember.randn(8, 6), ember.randint(0, 3, (8,))
    losses = {}
    for dev in ("cpu", "cuda"):
        m = _mlp().to(dev)
        o = getattr(ember.optim, opt)(m.parameters(), **kwargs)
        sched = ember.optim.lr_scheduler.StepLR(o, 1, gamma=0.5)
        xs, ys = x.to(dev), y.to(dev)
        out = []
        for _ in range(3):
            loss = nn.functional.cross_entropy(m(xs), ys)
            o.zero_grad()
            loss.backward()
            o.step()
            sched.step()
            out.append(loss.item())
        losses[dev] = out
        for p in m.parameters():
            for k, v in o.state[p].items():
                if isinstance(v, ember.Tensor) and k != "step":   # 'step' stays a cpu tensor, as in PyTorch
                    assert v.device.type == dev, (k, v.device)
    np.testing.assert_allclose(losses["cuda"], losses["cpu"], rtol=1e-5)


def test_a_training_step_makes_no_host_copies():
    from ember.devices import cuda as dev
    m = _mlp().cuda()
    o = ember.optim.Adam(m.parameters(), lr=1e-2)
    x, y = ember.randn(8, 6).cuda(), ember.randint(0, 3, (8,)).cuda()

    def step():
        loss = nn.functional.cross_entropy(m(x), y)
        o.zero_grad()
        loss.backward()
        o.step()
        return loss
    step()
    before = dict(dev.COPIES)
    loss = step()
    assert dev.COPIES == before
    loss.item()   # reading the loss is one copy to the host, as in PyTorch
    assert dev.COPIES["d2h"] == before["d2h"] + 1


def test_set_default_device():
    ember.set_default_device("cuda")
    assert ember.get_default_device() == ember.device("cuda", 0)
    for t in (ember.zeros(2), ember.ones(2, 2), ember.randn(3), ember.tensor([1.0]), ember.arange(3),
              ember.empty(2), ember.full((2,), 3.0), nn.Linear(2, 2).weight):
        assert t.device.type == "cuda"
    assert ember.zeros(2, device="cpu").device.type == "cpu"
    ember.set_default_device(None)
    assert ember.zeros(2).device.type == "cpu" and ember.get_default_device() == ember.device("cpu")


# ----- checkpoints, pinned memory ---------------------------------------------------------------------------------

def test_save_and_load_between_devices(tmp_path):
    m = _mlp().cuda()
    path = tmp_path / "m.pt"
    ember.save(m.state_dict(), path)
    want = {k: v.detach().cpu() for k, v in m.state_dict().items()}
    # torch (CPU-only) reads the file, mapping the cuda storages to the cpu
    got = torch.load(path, map_location="cpu")
    assert {k: v.device.type for k, v in got.items()} == {k: "cpu" for k in want}
    for k in want:
        np.testing.assert_array_equal(got[k].numpy(), want[k].numpy())
    for ml, where in ((None, "cuda"), ("cpu", "cpu"), ("cuda", "cuda"), ("cuda:0", "cuda"), ({"cuda:0": "cpu"}, "cpu"),
                      (lambda s, loc: s, "cpu"), (lambda s, loc: s.cuda(), "cuda"), (ember.device("cpu"), "cpu")):
        sd = ember.load(path, map_location=ml)
        for k, v in sd.items():
            assert v.device.type == where and ember.equal(v.cpu(), want[k])
    # a torch file of cpu tensors onto the GPU
    torch.save({"w": torch.arange(4.0)}, tmp_path / "t.pt")
    w = ember.load(tmp_path / "t.pt", map_location="cuda")["w"]
    assert w.device.type == "cuda" and w.tolist() == [0.0, 1.0, 2.0, 3.0]
    m2 = _mlp().cuda()
    m2.load_state_dict(ember.load(path))
    assert all(p.device.type == "cuda" for p in m2.parameters())


def test_pinned_memory_and_the_dataloader():
    x = ember.arange(4.0)
    p = x.pin_memory()
    assert p.is_pinned() and not x.is_pinned() and p.pin_memory() is p and ember.equal(p, x)
    assert _err(lambda: x.cuda().pin_memory()) == \
        ("RuntimeError", "cannot pin 'torch.cuda.FloatTensor' only dense CPU tensors can be pinned")
    ds = ember.utils.data.TensorDataset(ember.arange(6.0), ember.arange(6))
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # no "no accelerator is found" warning with a GPU
        batches = list(ember.utils.data.DataLoader(ds, batch_size=4, pin_memory=True))
    assert all(t.is_pinned() for b in batches for t in b)
    assert batches[0][0].cuda(non_blocking=True).device.type == "cuda"


# ----- torch.cuda -------------------------------------------------------------------------------------------------

def test_torch_cuda_queries(standin):
    c = ember.cuda
    assert c.is_available() and c.device_count() == 1 and c.current_device() == 0 and c.is_initialized()
    assert c.get_device_name() == c.get_device_name(0) == "Stand-in GPU (NumPy)"
    p = c.get_device_properties(0)
    assert (p.name, p.major, p.minor, p.multi_processor_count, p.total_memory) == \
        ("Stand-in GPU (NumPy)", 9, 0, 132, 80 * 2 ** 30)
    assert c.get_device_capability() == (9, 0) and c.mem_get_info() == (70 * 2 ** 30, 80 * 2 ** 30)
    c.set_device(0)
    c.set_device("cuda:0")
    c.set_device(-1)
    with c.device(0):
        assert c.current_device() == 0
    c.synchronize()
    c.manual_seed(3)
    c.manual_seed_all(3)
    assert c.amp.autocast is not None and c.amp.GradScaler is not None


def test_torch_cuda_memory_counts_the_pool():
    c = ember.cuda
    c.empty_cache()
    c.reset_peak_memory_stats()
    base = c.memory_allocated()
    x = ember.zeros(1000, device="cuda")   # 4000 bytes
    assert c.memory_allocated() - base == 4000 and c.memory_reserved() >= c.memory_allocated()
    del x
    assert c.memory_allocated() == base and c.max_memory_allocated() >= base + 4000
    c.reset_peak_memory_stats()
    assert c.max_memory_allocated() == c.memory_allocated()


def test_streams_and_events():
    c = ember.cuda
    s = c.Stream()
    start, end = c.Event(enable_timing=True), c.Event(enable_timing=True)
    with c.stream(s):
        start.record()
        y = ember.ones(100, device="cuda") * 2
        end.record()
    end.synchronize()
    assert isinstance(start.elapsed_time(end), float) and start.elapsed_time(end) >= 0
    assert s.query() and end.query() and y.sum().item() == 200.0
    s.synchronize()
    s.wait_stream(c.current_stream())
    e = s.record_event()
    e.wait()
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        c.Event().elapsed_time(c.Event())


def test_taking_the_standin_out_restores_the_cpu_only_behaviour(standin):
    standin.uninstall()
    try:
        assert not ember.cuda.is_available() and ember.cuda.device_count() == 0
        assert _err(lambda: ember.ones(1, device="cuda")) == ("AssertionError", "Torch not compiled with CUDA enabled")
        assert _err(lambda: ember.ones(1).pin_memory()) == _err(lambda: torch.ones(1).pin_memory())
        assert _err(lambda: ember.cuda.Stream()) == _err(lambda: torch.cuda.Stream())
        assert _err(lambda: ember.cuda.Event()) == _err(lambda: torch.cuda.Event())
        assert _err(lambda: ember.cuda.current_device()) == _err(lambda: torch.cuda.current_device())
    finally:
        standin.install()
    assert ember.cuda.is_available()


# ----- the op database through the stand-in (checks ember's CuPy adapter, ember/devices/cuda/xp.py) --------------

import cuda_opdb  # noqa: E402
from op_db import OPS  # noqa: E402


@pytest.mark.parametrize("name", cuda_opdb.params())
def test_op_database_through_the_standin(name):
    cuda_opdb.check_entry(OPS[name], samples=1)


@pytest.mark.parametrize("name", ["exp", "matmul", "nn_softmax", "nn.functional.conv2d", "nn_layer_norm", "cross_entropy", "sum", "mul",
                                  "nn_gelu", "index_select"])
def test_second_derivatives_and_forward_mode_through_the_standin(name):
    if name not in OPS:
        pytest.skip(f"no op-database entry {name!r}")
    cuda_opdb.check_entry(OPS[name], second=True, samples=1)
    cuda_opdb.forward_mode(OPS[name])
