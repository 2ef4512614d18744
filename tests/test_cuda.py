"""Device 'cuda' on a real GPU (CuPy): skipped unless ``cupy`` imports and sees a GPU.

The op database against the CPU (values and first derivatives of every sample; second derivatives and forward
mode of each entry's first sample), training steps of an MLP, a CNN, an LSTM and a transformer layer against the
same steps on the CPU (losses to float32 rounding), the device-mixing errors, and DLPack both ways with CuPy and
torch.cuda. ``tools/gpu_run.sh`` runs this file on the GPU machine.

Dry run on a CPU: ``EMBER_CUDA_STANDIN=1 python -m pytest tests/test_cuda.py`` runs it through
tests/cupy_standin.py (a NumPy stand-in for CuPy: it checks this file and ember's plumbing, not a GPU).
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import ember
import ember.nn as nn

STANDIN = bool(os.environ.get("EMBER_CUDA_STANDIN"))
if STANDIN:
    import cupy_standin
    cupy_standin.install()

cupy = pytest.importorskip("cupy")
if not ember.cuda.is_available():
    pytest.skip("no GPU: CuPy sees no CUDA device", allow_module_level=True)

import cuda_opdb  # noqa: E402
from op_db import OPS  # noqa: E402


# ----- the op database ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", cuda_opdb.params())
def test_op_database_on_cuda(name):
    cuda_opdb.check_entry(OPS[name])


@pytest.mark.parametrize("name", cuda_opdb.params())
def test_second_derivatives_and_forward_mode_on_cuda(name):
    cuda_opdb.check_entry(OPS[name], second=True, samples=1)
    cuda_opdb.forward_mode(OPS[name])


# ----- training steps against the CPU -------------------------------------------------------------------------------

class _CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 16, 3, stride=2)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(16 * 7 * 7, 10)

    def forward(self, x):
        x = nn.functional.relu(self.bn(self.c1(x)))
        x = nn.functional.max_pool2d(nn.functional.relu(self.c2(x)), 1)
        return self.fc(x.flatten(1))


class _LSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.rnn, self.out = nn.Embedding(50, 16), nn.LSTM(16, 32, num_layers=2, batch_first=True), \
            nn.Linear(32, 50)

    def forward(self, x):
        return self.out(self.rnn(self.emb(x))[0]).flatten(0, 1)


def _models():
    return {
        "mlp": (lambda: nn.Sequential(nn.Linear(20, 64), nn.GELU(), nn.LayerNorm(64), nn.Linear(64, 10)),
                lambda: ember.randn(16, 20), lambda: ember.randint(0, 10, (16,))),
        "cnn": (_CNN, lambda: ember.randn(4, 3, 16, 16), lambda: ember.randint(0, 10, (4,))),
        "lstm": (_LSTM, lambda: ember.randint(0, 50, (4, 12)), lambda: ember.randint(0, 50, (48,))),
        "transformer": (lambda: nn.Sequential(nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True),
                                              nn.Flatten(0, 1), nn.Linear(32, 7)),
                        lambda: ember.randn(3, 10, 32), lambda: ember.randint(0, 7, (30,))),
    }


@pytest.mark.parametrize("name", ["mlp", "cnn", "lstm", "transformer"])
def test_training_steps_match_the_cpu(name):
    make, xs, ys = _models()[name]
    ember.manual_seed(0)
    ref = make()
    x, y = xs(), ys()
    losses = {}
    for dev in ("cpu", "cuda"):
        m = make()
        m.load_state_dict(ref.state_dict())
        m.to(dev)
        opt = ember.optim.AdamW(m.parameters(), lr=1e-3)
        out = []
        for _ in range(3):
            loss = nn.functional.cross_entropy(m(x.to(dev)), y.to(dev))
            opt.zero_grad()
            loss.backward()
            opt.step()
            out.append(loss.item())
        losses[dev] = out
        assert all(p.grad.device.type == dev for p in m.parameters() if p.grad is not None)
    np.testing.assert_allclose(losses["cuda"], losses["cpu"], rtol=2e-4, atol=1e-5)


def test_a_training_step_makes_no_host_copies():
    from ember.devices import cuda as dev
    m = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 10)).cuda()
    opt = ember.optim.Adam(m.parameters(), lr=1e-3)
    x, y = ember.randn(16, 20, device="cuda"), ember.randint(0, 10, (16,), device="cuda")

    def step():
        loss = nn.functional.cross_entropy(m(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    step()
    before = dict(dev.COPIES)
    step()
    assert dev.COPIES == before


# ----- devices ------------------------------------------------------------------------------------------------------

def test_device_mixing_errors():
    g, c = ember.ones(2, device="cuda"), ember.ones(2)
    msg = "Expected all tensors to be on the same device, but found at least two devices, {} and {}!"
    with pytest.raises(RuntimeError) as e:
        g + c
    assert str(e.value) == msg.format("cuda:0", "cpu")
    with pytest.raises(RuntimeError) as e:
        c + g
    assert str(e.value) == msg.format("cpu", "cuda:0")
    assert (g * ember.tensor(2.0)).device.type == "cuda"   # a 0-d cpu tensor may join


def test_torch_cuda_reports_the_gpu():
    c = ember.cuda
    assert c.device_count() >= 1 and c.current_device() == 0 and c.get_device_name()
    props = c.get_device_properties(0)
    assert props.total_memory > 0 and props.major >= 3
    c.reset_peak_memory_stats()
    before = c.memory_allocated()
    x = ember.empty(2 ** 20, device="cuda")
    assert c.memory_allocated() >= before + 4 * 2 ** 20 and c.max_memory_allocated() >= c.memory_allocated()
    del x
    start, end = c.Event(enable_timing=True), c.Event(enable_timing=True)
    start.record()
    ember.randn(512, 512, device="cuda") @ ember.randn(512, 512, device="cuda")
    end.record()
    c.synchronize()
    assert start.elapsed_time(end) > 0


# ----- DLPack ---------------------------------------------------------------------------------------------------------

needs_dlpack = pytest.mark.skipif(STANDIN, reason="the stand-in has no DLPack (its arrays stand for GPU memory)")


@needs_dlpack
def test_dlpack_with_cupy_both_ways():
    a = cupy.arange(6, dtype=cupy.float32).reshape(2, 3)
    t = ember.from_dlpack(a)
    assert t.device.type == "cuda" and t.tolist() == [[0, 1, 2], [3, 4, 5]]
    a[0, 0] = 10   # shared memory, not a copy
    assert t[0, 0].item() == 10
    b = cupy.from_dlpack(ember.ones(3, device="cuda") * 2)
    assert isinstance(b, cupy.ndarray) and cupy.asnumpy(b).tolist() == [2, 2, 2]
    assert ember.utils.dlpack.from_dlpack(ember.utils.dlpack.to_dlpack(t)).device.type in ("cuda", "cpu")


@needs_dlpack
def test_dlpack_with_torch_cuda_both_ways():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("this torch has no CUDA")
    tt = torch.arange(4.0, device="cuda")
    e = ember.from_dlpack(tt)
    assert e.device.type == "cuda" and e.tolist() == [0.0, 1.0, 2.0, 3.0]
    back = torch.from_dlpack(ember.ones(2, 2, device="cuda") * 3)
    assert back.is_cuda and back.tolist() == [[3.0, 3.0], [3.0, 3.0]]


def test_dlpack_device():
    t = ember.ones(2, device="cuda")
    if STANDIN:
        assert t.__dlpack_device__() == (2, 0)
    else:
        assert tuple(t.__dlpack_device__())[0] == 2
