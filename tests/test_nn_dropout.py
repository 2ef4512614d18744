"""Dropout's random masks against PyTorch's: the same seed must give the same mask, values and gradients.

PyTorch's CPU dropout draws ``empty_like(input).bernoulli_(1 - p)`` (per (sample, channel) for the feature
variants, then alpha dropout's affine map); ember draws the same from its PyTorch-exact generator. The op
database covers the deterministic cases (p=0, eval, p=1); here the random ones.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as EF

torch = pytest.importorskip("torch")
TF = torch.nn.functional

CASES = [
    ("dropout", (4, 6), {"p": 0.5}), ("dropout", (3, 5, 7), {"p": 0.2}), ("dropout", (1000,), {"p": 0.9}),
    ("dropout", (2, 3), {"p": 0.5, "training": True}), ("dropout1d", (2, 5, 4), {"p": 0.4}),
    ("dropout1d", (5, 4), {"p": 0.4}), ("dropout2d", (2, 6, 3, 3), {"p": 0.5}),
    ("dropout2d", (2, 6, 3), {"p": 0.5}), ("dropout3d", (2, 4, 2, 2, 2), {"p": 0.3}),
    ("dropout3d", (4, 2, 2, 2), {"p": 0.3}), ("alpha_dropout", (5, 6), {"p": 0.5, "training": True}),
    ("alpha_dropout", (40,), {"p": 0.1, "training": True}),
    ("feature_alpha_dropout", (3, 4, 5), {"p": 0.5, "training": True}),
]


def _run(lib, F, name, x, kw, seed, inplace=False, dtype="float64"):
    lib.manual_seed(seed)
    t = lib.tensor(x.astype(dtype), requires_grad=True)
    inp = t * 1 if inplace else t
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = getattr(F, name)(inp, inplace=inplace, **kw)
    g = np.random.default_rng(seed).standard_normal(out.shape)
    (gx,) = lib.autograd.grad(out, t, lib.tensor(g.astype(dtype)))
    return out, gx


@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("name,shape,kw", CASES)
def test_same_seed_same_mask_values_and_grads(name, shape, kw, inplace):
    x = np.random.default_rng(1).standard_normal(shape)
    for seed in (0, 1234):
        t_out, t_g = _run(torch, TF, name, x, kw, seed, inplace)
        e_out, e_g = _run(ember, EF, name, x, kw, seed, inplace)
        np.testing.assert_array_equal(e_out.detach().numpy(), t_out.detach().numpy())
        np.testing.assert_array_equal(e_g.numpy(), t_g.numpy())
        assert type(e_out.grad_fn).__name__ == type(t_out.grad_fn).__name__
        assert [type(n).__name__ if n else None for n, _ in e_out.grad_fn.next_functions] == \
            [type(n).__name__ if n else None for n, _ in t_out.grad_fn.next_functions]


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("name", ["dropout", "alpha_dropout", "feature_alpha_dropout", "dropout2d"])
def test_masks_in_float32_and_float16(name, dtype):
    x = np.random.default_rng(2).standard_normal((8, 16, 2, 2)).astype(dtype)
    kw = {"p": 0.3, "training": True}
    torch.manual_seed(5)
    t = getattr(TF, name)(torch.tensor(x), **kw)
    ember.manual_seed(5)
    e = getattr(EF, name)(ember.tensor(x), **kw)
    assert str(e.dtype) == str(t.dtype)
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_the_generator_state_advances_as_torch():
    x = np.ones((10, 10))
    torch.manual_seed(9)
    TF.dropout(torch.tensor(x), 0.5)
    t_next = torch.rand(3)
    ember.manual_seed(9)
    EF.dropout(ember.tensor(x), 0.5)
    np.testing.assert_array_equal(ember.rand(3).numpy(), t_next.numpy())


@pytest.mark.parametrize("name", ["dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d", "dropout2d",
                                  "dropout3d"])
def test_eval_and_p0_return_the_input_itself(name):
    shape = {"dropout1d": (2, 3, 4), "dropout3d": (2, 3, 1, 2, 2)}.get(name, (2, 3, 2, 2))
    x = ember.randn(*shape, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name not in ("dropout1d", "dropout3d"):   # those unsqueeze/squeeze around the kernel
            assert getattr(EF, name)(x, 0.5, False) is x
            assert getattr(EF, name)(x, 0.0, True) is x
        z = getattr(EF, name)(x, 1.0, True)
    assert not z.detach().numpy().any()


def test_masks_differ_between_calls_and_keep_the_rate():
    ember.manual_seed(0)
    x = ember.ones(20000)
    a, b = EF.dropout(x, 0.25), EF.dropout(x, 0.25)
    assert not np.array_equal(a.numpy(), b.numpy())
    kept = (a.numpy() != 0).mean()
    assert abs(kept - 0.75) < 0.02
    np.testing.assert_allclose(a.numpy()[a.numpy() != 0], 1 / 0.75, rtol=1e-6)


def test_rrelu_training_draws_slopes_within_bounds_and_matches_its_gradient():
    ember.manual_seed(0)
    x = ember.tensor(np.linspace(-3, 3, 101), requires_grad=True)
    y = EF.rrelu(x, 0.1, 0.3, training=True)
    (g,) = ember.autograd.grad(y.sum(), x)
    xn, yn, gn = x.detach().numpy(), y.detach().numpy(), g.numpy()
    neg = xn < 0
    slopes = yn[neg] / xn[neg]
    assert ((slopes >= 0.1) & (slopes <= 0.3)).all()
    np.testing.assert_allclose(gn[neg], slopes)
    np.testing.assert_array_equal(gn[xn > 0], 1.0)
    assert type(y.grad_fn).__name__ == "RreluWithNoiseBackward0"


@pytest.mark.parametrize("kw", [{}, {"tau": 0.5}, {"hard": True}, {"hard": True, "dim": 0, "tau": 2.0}])
def test_gumbel_softmax_same_seed_same_sample_and_grads(kw):
    x = np.random.default_rng(3).standard_normal((4, 5))
    outs = []
    for lib, F in ((torch, TF), (ember, EF)):
        lib.manual_seed(11)
        t = lib.tensor(x, requires_grad=True)
        y = F.gumbel_softmax(t, **kw)
        g = np.random.default_rng(4).standard_normal(y.shape)
        (gx,) = lib.autograd.grad(y, t, lib.tensor(g))
        outs.append((y.detach().numpy(), gx.numpy(), type(y.grad_fn).__name__))
    (ty, tg, tn), (ey, eg, en) = outs
    np.testing.assert_allclose(ey, ty, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(eg, tg, rtol=1e-10, atol=1e-12)
    assert en == tn


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("inplace", [False, True])
def test_rrelu_training_same_seed_same_slopes_as_torch(dtype, inplace):
    # PyTorch draws one double per element <= 0, in order (bounds in the input's compute type)
    x = np.random.default_rng(6).standard_normal((30, 20)).astype(dtype)
    x[0, :3] = 0.0
    res = []
    for lib, F in ((torch, TF), (ember, EF)):
        lib.manual_seed(2)
        a = lib.tensor(x, requires_grad=True)
        y = F.rrelu(a * 1, 0.05, 0.45, training=True, inplace=inplace)
        (g,) = lib.autograd.grad(y, a, lib.tensor(np.full(x.shape, 0.3, dtype)))
        res.append((y.detach().numpy(), g.numpy(), type(y.grad_fn).__name__, lib.rand(2).numpy()))
    (ty, tg, tn, tr), (ey, eg, en, er) = res
    np.testing.assert_array_equal(ey, ty)
    np.testing.assert_array_equal(eg, tg)
    np.testing.assert_array_equal(er, tr)   # the generator advanced as PyTorch's
    assert en == tn


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("p", [0.3, 0.1, 0.77])
def test_native_dropout_same_seed_same_output_mask_and_grad(dtype, p):
    """torch.native_dropout: F.dropout's draws; the scale rounded to a float16/bfloat16 input's dtype (mul_)."""
    x = np.random.default_rng(3).standard_normal((300,)).astype(np.float32)
    res = []
    for m in (torch, ember):
        m.manual_seed(5)
        xt = m.tensor(x).to(getattr(m, dtype)).requires_grad_()
        out, mask = m.native_dropout(xt, p, True)
        out.sum().backward()
        res.append((out.detach().float().numpy(), mask.numpy(), xt.grad.float().numpy()))
    for a, b in zip(*res):
        np.testing.assert_array_equal(a, b)
