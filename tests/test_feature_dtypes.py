"""The README feature table's complex and bfloat16 columns: one small program per feature, run on torch and on
ember in complex64 and in bfloat16 (the same seed), must do the same: the same values (to the dtype's precision;
the op database checks the bits), or the same exception type where PyTorch refuses the dtype."""
from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import ember  # noqa: E402


def _run(m, f, dt):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.manual_seed(0)
        try:
            return "ok", f(m, getattr(m, dt))
        except Exception as e:  # noqa: BLE001 - the exception type is the outcome compared
            return "raised", e


def _flat(v):
    if isinstance(v, (list, tuple)):
        return np.concatenate([_flat(u) for u in v]) if v else np.zeros(0)
    v = v.detach()
    if str(v.dtype).endswith("bfloat16"):
        v = v.float()
    return np.ravel(np.asarray(v.numpy(), dtype=complex))


def lin(m, d):
    l = m.nn.Linear(3, 2).to(d); x = m.randn(4, 3).to(d); y = l(x); y.abs().sum().backward() if d.is_complex else y.sum().backward()
    return [y, l.weight.grad]
def conv(m, d):
    c = m.nn.Conv2d(2, 3, 3).to(d); x = m.randn(1, 2, 5, 5).to(d); y = c(x); (y.abs().sum() if d.is_complex else y.sum()).backward(); return [y, c.weight.grad]
def rnn(m, d):
    r = m.nn.LSTM(3, 4).to(d); x = m.randn(2, 1, 3).to(d); return r(x)[0]
def attn(m, d):
    a = m.nn.MultiheadAttention(4, 2).to(d); x = m.randn(3, 1, 4).to(d); return a(x, x, x)[0]
def opt(m, d):
    p = m.nn.Parameter(m.randn(3).to(d)); o = m.optim.Adam([p], lr=0.1)
    for _ in range(3):
        o.zero_grad(); (p.abs() ** 2).sum().backward(); o.step()
    return p
def sgd(m, d):
    p = m.nn.Parameter(m.randn(3).to(d)); o = m.optim.SGD([p], lr=0.1, momentum=0.9)
    for _ in range(3):
        o.zero_grad(); (p.abs() ** 2).sum().backward(); o.step()
    return p
def save(m, d):
    b = io.BytesIO(); m.save({"a": m.randn(3).to(d)}, b); b.seek(0); return m.load(b)["a"]
def loss_mse(m, d):
    x = m.randn(4).to(d).requires_grad_(); y = m.nn.functional.mse_loss(x, m.zeros(4).to(d)); return y
def ce(m, d):
    x = m.randn(4, 3).to(d); return m.nn.functional.cross_entropy(x, m.tensor([0, 1, 2, 0]))
def bn(m, d):
    return m.nn.functional.batch_norm(m.randn(4, 3).to(d), None, None, training=True)
def ln(m, d):
    return m.nn.functional.layer_norm(m.randn(4, 3).to(d), (3,))
def softmax(m, d):
    return m.softmax(m.randn(4, 3).to(d), -1)
def relu(m, d):
    return m.relu(m.randn(4).to(d))
def dropout(m, d):
    return m.nn.functional.dropout(m.ones(10).to(d), 0.5)
def init(m, d):
    w = m.empty(3, 4, dtype=d); m.nn.init.xavier_uniform_(w); return w
def clip(m, d):
    p = m.nn.Parameter(m.randn(3).to(d)); p.grad = m.randn(3).to(d); return m.nn.utils.clip_grad_norm_([p], 0.5)
def data(m, d):
    ds = m.utils.data.TensorDataset(m.randn(6, 2).to(d)); return [b[0] for b in m.utils.data.DataLoader(ds, batch_size=3)]
def jac(m, d):
    return m.autograd.functional.jacobian(lambda x: x * x, m.randn(3).to(d))
def gradcheck(m, d):
    x = m.randn(3, dtype=m.complex128 if d.is_complex else m.float64, requires_grad=True)
    return m.tensor(m.autograd.gradcheck(lambda x: (x * x.sin()), (x,)))
def fwd(m, d):
    fa = m.autograd.forward_ad
    x = m.randn(3).to(d)
    with fa.dual_level():
        y = fa.make_dual(x, m.ones(3).to(d)).exp()
        return fa.unpack_dual(y).tangent
def hook(m, d):
    x = m.randn(3).to(d).requires_grad_(); g = []
    x.register_hook(lambda t: g.append(t)); (x * 2).sum().abs().backward() if d.is_complex else (x * 2).sum().backward(); return g[0]
def ckpt(m, d):
    cp = m.utils.checkpoint
    x = m.randn(3).to(d).requires_grad_()
    y = cp.checkpoint(lambda t: t.exp() * 2, x, use_reentrant=False); (y.abs().sum() if d.is_complex else y.sum()).backward(); return x.grad
def repr_(m, d):
    return m.tensor(len(repr(m.randn(3).to(d))))
def fft(m, d):
    return m.fft.fft(m.randn(8).to(d))
def rfft(m, d):
    return m.fft.rfft(m.randn(8).to(d))
def windows(m, d):
    return m.hann_window(8, dtype=d)
def linalg(m, d):
    a = m.randn(3, 3).to(d); return m.linalg.inv(a)
def matmul(m, d):
    return m.randn(3, 4).to(d) @ m.randn(4, 2).to(d)
def special(m, d):
    return m.special.i0(m.randn(3).to(d))
def specialB(m, d):
    return m.special.ndtr(m.randn(3).to(d))
def creation(m, d):
    return [m.zeros(2, dtype=d), m.ones(2, dtype=d), m.full((2,), 3, dtype=d), m.arange(3, dtype=d), m.linspace(0, 1, 5, dtype=d), m.eye(2, dtype=d), m.tensor([1.5, 2], dtype=d)]
def random(m, d):
    return [m.rand(3, dtype=d), m.randn(3, dtype=d), m.empty(3, dtype=d).normal_(), m.empty(3, dtype=d).uniform_()]
def inplace(m, d):
    x = m.randn(4).to(d).requires_grad_(); y = x * 1; y[1:3] *= 2; y.add_(1); (y.abs().sum() if d.is_complex else y.sum()).backward(); return x.grad
def autocast(m, d):
    with m.autocast("cpu", dtype=m.bfloat16):
        return m.randn(3, 3).to(d) @ m.randn(3, 3).to(d)
def strided(m, d):
    return m.as_strided(m.arange(12.).to(d), (2, 2), (1, 2), 1)
def embed(m, d):
    e = m.nn.Embedding(5, 3).to(d); return e(m.tensor([1, 2]))
def pool(m, d):
    return m.nn.functional.max_pool2d(m.randn(1, 1, 4, 4).to(d), 2)
def avgpool(m, d):
    return m.nn.functional.avg_pool2d(m.randn(1, 1, 4, 4).to(d), 2)
def lazy(m, d):
    l = m.nn.LazyLinear(2).to(d); return l(m.randn(2, 3).to(d))
def sched(m, d):
    p = m.nn.Parameter(m.randn(3).to(d)); o = m.optim.SGD([p], lr=0.1); s = m.optim.lr_scheduler.StepLR(o, 1)
    o.step(); s.step(); return m.tensor(o.param_groups[0]["lr"])
def funcall(m, d):
    l = m.nn.Linear(2, 2).to(d); return m.func.functional_call(l, dict(l.named_parameters()), (m.ones(1, 2).to(d),))
def batched(m, d):
    x = m.randn(3).to(d).requires_grad_(); y = x * 2
    return m.autograd.grad(y, x, m.eye(3).to(d), is_grads_batched=True)[0]

def custom_fn(m, d):
    class Sq(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x); return x * x
        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors; return 2 * g * (x.conj() if x.is_complex() else x)
    x = m.randn(3).to(d).requires_grad_(); y = Sq.apply(x); (y.abs().sum() if d.is_complex else y.sum()).backward(); return x.grad
def anomaly(m, d):
    with m.autograd.detect_anomaly():
        x = m.randn(3).to(d).requires_grad_(); y = x.exp(); (y.abs().sum() if d.is_complex else y.sum()).backward(); return x.grad
def saved_hooks(m, d):
    with m.autograd.graph.saved_tensors_hooks(lambda t: t * 1, lambda t: t):
        x = m.randn(3).to(d).requires_grad_(); y = x.exp() * x; (y.abs().sum() if d.is_complex else y.sum()).backward(); return x.grad
def swa(m, d):
    l = m.nn.Linear(2, 2).to(d); a = m.optim.swa_utils.AveragedModel(l); a.update_parameters(l); return list(a.parameters())[0]
def tanh(m, d):
    return m.tanh(m.randn(3).to(d))
def l1(m, d):
    return m.nn.functional.l1_loss(m.randn(3).to(d), m.zeros(3).to(d))
def gru(m, d):
    r = m.nn.GRU(3, 4).to(d); x = m.randn(2, 1, 3).to(d); return r(x)[0]
def tel(m, d):
    t = m.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0).to(d); return t(m.randn(3, 1, 4).to(d))
def meta(m, d):
    return m.tensor(list(m.empty(2, 3, dtype=d, device="meta").exp().shape))
def vr(m, d):
    return m.view_as_real(m.randn(3, dtype=m.complex64)).to(d)
def cx_printing(m, d):
    return m.tensor(len(str(m.randn(3, 3).to(d) * 1e5)))


PROGRAMS = {f.__name__: f for f in (
    creation, random, repr_, windows, matmul, linalg, special, specialB, inplace, hook, fwd, jac, batched, gradcheck,
    ckpt, lin, conv, pool, avgpool, rnn, gru, attn, tel, embed, lazy, init, clip, funcall, opt, sgd, sched, data,
    save, relu, tanh, softmax, dropout, loss_mse, l1, ce, bn, ln, autocast, fft, rfft, custom_fn, anomaly,
    saved_hooks, swa, meta, cx_printing)}


DIFFERS = {("bn", "bfloat16"): "batch_norm's bfloat16 statistics: an element differs beyond rounding (tests/op_db_bf16.py)"}


@pytest.mark.parametrize("dt", ["complex64", "bfloat16"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_feature_in_dtype_as_torch(name, dt):
    if dt == "bfloat16":
        pytest.importorskip("ml_dtypes")
    if (name, dt) in DIFFERS:
        pytest.xfail(DIFFERS[name, dt])
    t, e = _run(torch, PROGRAMS[name], dt), _run(ember, PROGRAMS[name], dt)
    if t[0] == "raised":
        assert e[0] == "raised", f"torch raised {type(t[1]).__name__}: {t[1]}; ember computed"
        assert type(e[1]).__name__ == type(t[1]).__name__, f"ember raised {e[1]!r}; torch raised {t[1]!r}"
        return
    assert e[0] == "ok", f"ember raised {type(e[1]).__name__}: {e[1]}"
    np.testing.assert_allclose(_flat(e[1]), _flat(t[1]), rtol=2e-2, atol=1e-3)
