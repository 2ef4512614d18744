"""ember.distributions, part A (the base and 18 distributions), differential against torch 2.13.

Each case builds the same distribution in ember and torch from the same parameters (Python numbers stay numbers,
lists become tensors of the case's dtype, float parameters requiring grad) and compares: shapes, log_prob, cdf, icdf,
entropy, mean, mode, variance, stddev, perplexity (values, or the same exception type and message), the gradients of
log_prob and of rsample in the parameters (and of those gradients again, where torch has them), the samples that
the same seed gives (sample and rsample, with a sample_shape), expand, enumerate_support and repr. Then the
validation errors, type and message.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

import ember


@pytest.fixture(autouse=True)
def _validation_on():
    """torch.cond/while_loop (tests/test_torch_names.py) switch torch's default argument validation off for the
    rest of the process (a torch quirk); every test here starts from the default, validation on."""
    import torch as _torch
    _torch.distributions.Distribution.set_default_validate_args(True)
    ember.distributions.Distribution.set_default_validate_args(True)

DTYPES = ["float64", "float32", "bfloat16"]
# values agree to float rounding: the formulas are PyTorch's, a few kernels (lgamma, digamma, erfinv, ...) are
# libm's rather than PyTorch's vectorised ones
TOL = {"float64": dict(rtol=1e-12, atol=1e-13), "float32": dict(rtol=4e-6, atol=1e-6),
       "bfloat16": dict(rtol=1.6e-2, atol=1e-5)}  # bfloat16: mostly bit for bit, else an ulp or two

F = [0.2, 0.5, 0.9]  # probabilities
P2 = [[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]]
ONEHOT = [[[1., 0., 0.], [0., 0., 1.]], [[0., 1., 0.], [0., 1., 0.]]]

# id -> (class, parameters, a value to score, probabilities for icdf or None)
CASES = {
    "Normal-scalar": ("Normal", dict(loc=0.3, scale=1.7), [0.1, -2., 3.], [0.1, 0.5, 0.9]),
    "Normal-batched": ("Normal", dict(loc=[0., 1., -2.], scale=[0.5, 1., 2.]), [[0.1, 0.2, 0.3], [1., -1., 2.]], F),
    "Normal-broadcast": ("Normal", dict(loc=[[0.], [1.]], scale=[0.5, 1., 2.]), [0.5, 1.5, -1.], F),
    "Normal-num-tensor": ("Normal", dict(loc=1.0, scale=[0.5, 2.]), [0.3, 0.4], [0.3, 0.8]),
    "Exponential-scalar": ("Exponential", dict(rate=2.0), [0.1, 1., 3.], F),
    "Exponential-batched": ("Exponential", dict(rate=[0.5, 1., 3.]), [[0.1, 0.2, 0.3], [1., 0., 2.]], F),
    "Laplace-scalar": ("Laplace", dict(loc=0.3, scale=1.7), [0.1, -2., 3.], F),
    "Laplace-broadcast": ("Laplace", dict(loc=[[0.], [1.]], scale=[0.5, 1., 2.]), [0.5, 1.5, -1.], F),
    "Cauchy-scalar": ("Cauchy", dict(loc=0.3, scale=1.7), [0.1, -2., 3.], F),
    "Cauchy-batched": ("Cauchy", dict(loc=[0., 1., -2.], scale=[0.5, 1., 2.]), [[0.1, 0.2, 0.3], [1., -1., 2.]], F),
    "Uniform-scalar": ("Uniform", dict(low=0., high=2.), [0.1, 1., 1.9], F),
    "Uniform-batched": ("Uniform", dict(low=[0., -1., 1.], high=[1., 1., 5.]), [[0.1, 0.2, 3.], [0.5, -0.5, 1.]], F),
    "Uniform-broadcast": ("Uniform", dict(low=[[-1.], [0.]], high=2.), [0.5, 1.5, 0.], F),
    "Gamma-scalar": ("Gamma", dict(concentration=2.5, rate=1.5), [0.1, 1., 3.], None),
    "Gamma-batched": ("Gamma", dict(concentration=[0.5, 1., 3.], rate=[1., 2., 0.5]), [[0.1, 0.2, 3.], [1., 2., 5.]],
                      None),
    "Gamma-broadcast": ("Gamma", dict(concentration=[[0.7], [4.]], rate=[1., 2., 0.5]), [0.5, 1.5, 3.], None),
    "Chi2-scalar": ("Chi2", dict(df=3.0), [0.1, 1., 3.], None),
    "Chi2-batched": ("Chi2", dict(df=[1., 2.5, 4.]), [[0.1, 0.2, 3.], [1., 2., 5.]], None),
    "Poisson-scalar": ("Poisson", dict(rate=2.0), [0., 1., 5.], None),
    "Poisson-batched": ("Poisson", dict(rate=[0.5, 3., 10.]), [[0., 1., 5.], [2., 3., 12.]], None),
    "Dirichlet-vector": ("Dirichlet", dict(concentration=[0.5, 1., 2.]), [0.2, 0.3, 0.5], None),
    "Dirichlet-batched": ("Dirichlet", dict(concentration=[[0.5, 1., 2.], [3., 3., 3.], [0.5, 0.3, 0.2]]),
                          [[0.2, 0.3, 0.5], [0.6, 0.2, 0.2], [0.1, 0.1, 0.8]], None),
    "Beta-scalar": ("Beta", dict(concentration1=2., concentration0=3.), [0.1, 0.5, 0.9], None),
    "Beta-batched": ("Beta", dict(concentration1=[0.5, 2., 3.], concentration0=[1., 2., 0.7]),
                     [[0.1, 0.5, 0.9], [0.3, 0.3, 0.3]], None),
    "Beta-broadcast": ("Beta", dict(concentration1=[[0.5], [2.]], concentration0=1.5), [0.1, 0.5, 0.9], None),
    "Bernoulli-probs": ("Bernoulli", dict(probs=F), [[0., 1., 1.], [1., 0., 0.]], None),
    "Bernoulli-logits": ("Bernoulli", dict(logits=[-1., 0., 2.]), [0., 1., 1.], None),
    "Bernoulli-scalar": ("Bernoulli", dict(probs=0.3), [0., 1.], None),
    "Categorical-probs": ("Categorical", dict(probs=P2), [[0., 2.], [1., 1.]], None),
    "Categorical-logits": ("Categorical", dict(logits=[-1., 0., 1., 2.]), [0., 3., 1.], None),
    "Categorical-unnormalised": ("Categorical", dict(probs=[[1., 2., 3.], [4., 4., 0.]]), [2., 0.], None),
    "OneHotCategorical-probs": ("OneHotCategorical", dict(probs=P2), ONEHOT, None),
    "OneHotCategorical-logits": ("OneHotCategorical", dict(logits=[-1., 0., 1.]), [[0., 0., 1.], [1., 0., 0.]],
                                 None),
    "OneHotCategoricalStraightThrough": ("OneHotCategoricalStraightThrough", dict(probs=P2), ONEHOT, None),
    "Binomial-probs": ("Binomial", dict(total_count=10, probs=F), [[0., 5., 10.], [3., 4., 9.]], None),
    "Binomial-logits": ("Binomial", dict(total_count=[5., 10., 10.], logits=[-1., 0., 2.]), [1., 10., 7.], None),
    "Binomial-homogeneous": ("Binomial", dict(total_count=[6., 6.], probs=[0.3, 0.7]), [2., 6.], None),
    "Multinomial-probs": ("Multinomial", dict(total_count=5, probs=P2), [[1., 1., 3.], [0., 0., 5.]], None),
    "Multinomial-logits": ("Multinomial", dict(total_count=4, logits=[-1., 0., 1.]), [[1., 1., 2.], [4., 0., 0.]],
                           None),
    "Geometric-probs": ("Geometric", dict(probs=F), [[0., 1., 5.], [2., 0., 0.]], None),
    "Geometric-logits": ("Geometric", dict(logits=[-1., 0., 2.]), [0., 3., 1.], None),
    "Geometric-scalar": ("Geometric", dict(probs=0.3), [0., 4.], None),
    "NegativeBinomial-probs": ("NegativeBinomial", dict(total_count=[2., 5., 0.5], probs=F),
                               [[0., 1., 5.], [2., 0., 0.]], None),
    "NegativeBinomial-logits": ("NegativeBinomial", dict(total_count=3., logits=[-1., 0., 2.]), [0., 3., 1.], None),
}
IDS = list(CASES)
GRAD_SKIP = {"total_count"}  # integer-valued parameters (torch would differentiate them too; values are not)


def _build(lib, case: str, dtype: str, grad: bool = True):
    cls_name, params, value, probs = CASES[case]
    dt = getattr(lib, dtype)
    made, leaves = {}, []
    for k, v in params.items():
        if isinstance(v, list):
            t = lib.tensor(v, dtype=dt, requires_grad=grad and k not in GRAD_SKIP)
            if t.requires_grad:
                leaves.append(t)
            v = t
        made[k] = v
    dist = getattr(lib.distributions, cls_name)(**made)
    return dist, leaves, lib.tensor(value, dtype=dt), (lib.tensor(probs, dtype=dt) if probs else None)


def _np(t):
    return np.asarray(t.detach().tolist() if hasattr(t, "detach") else t, dtype=float)


def _same(e, t, dtype: str, what: str = "") -> None:
    """ember's result ``e`` matches torch's ``t``: tensors (shape, dtype, values to rounding) or exceptions."""
    if isinstance(t, BaseException):
        assert isinstance(e, BaseException), f"{what}: torch raised {t!r}, ember gave {e!r}"
        assert type(e).__name__ == type(t).__name__, f"{what}: {e!r} vs {t!r}"
        assert str(e).replace("ember.", "torch.") == str(t), f"{what}: {e!r} vs {t!r}"
        return
    assert not isinstance(e, BaseException), f"{what}: ember raised {e!r}"
    if isinstance(t, (tuple, list)):
        assert len(e) == len(t)
        for a, b in zip(e, t):
            _same(a, b, dtype, what)
        return
    if isinstance(t, torch.Tensor):
        assert tuple(e.shape) == tuple(t.shape), f"{what}: shape {tuple(e.shape)} vs {tuple(t.shape)}"
        assert str(e.dtype) == str(t.dtype), f"{what}: dtype {e.dtype} vs {t.dtype}"
    if isinstance(t, torch.Tensor) and str(t.dtype) in ("torch.float32", "torch.float64") and dtype in TOL:
        # a float32 result (of Python-number parameters) to float32 rounding
        dtype = str(t.dtype)[6:] if dtype == "bfloat16" else min(dtype, str(t.dtype)[6:])
    a, b = _np(e), _np(t)
    tol = dict(TOL[dtype])
    if dtype == "bfloat16" and b.size and np.isfinite(b).any():  # sums that cancel: to the largest term's rounding
        tol["atol"] = max(tol["atol"], tol["rtol"] * float(np.nanmax(np.abs(b[np.isfinite(b)]))))
    np.testing.assert_allclose(a, b, equal_nan=True, err_msg=what, **tol)


def _call(f):
    try:
        return f()
    except Exception as exc:  # noqa: BLE001  (compared with torch's)
        return exc


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", IDS)
def test_values(case, dtype):
    (e, _, ev, ep), (t, _, tv, tp) = _build(ember, case, dtype), _build(torch, case, dtype)
    assert tuple(e.batch_shape) == tuple(t.batch_shape) and tuple(e.event_shape) == tuple(t.event_shape)
    assert type(e.batch_shape).__name__ == "Size"
    assert (e.has_rsample, e.has_enumerate_support) == (t.has_rsample, t.has_enumerate_support)
    for name in ("mean", "mode", "variance", "stddev"):
        _same(_call(lambda: getattr(e, name)), _call(lambda: getattr(t, name)), dtype, name)
    for name in ("entropy", "perplexity"):
        _same(_call(getattr(e, name)), _call(getattr(t, name)), dtype, name)
    _same(_call(lambda: e.log_prob(ev)), _call(lambda: t.log_prob(tv)), dtype, "log_prob")
    _same(_call(lambda: e.cdf(ev)), _call(lambda: t.cdf(tv)), dtype, "cdf")
    if tp is not None:
        _same(_call(lambda: e.icdf(ep)), _call(lambda: t.icdf(tp)), dtype, "icdf")
    assert repr(e) == repr(t)


def _grads(lib, case, dtype, fn, order2: bool):
    dist, leaves, value, _ = _build(lib, case, dtype)
    out = fn(lib, dist, value)
    g = lib.autograd.grad(out.sum(), leaves, create_graph=order2, allow_unused=True)
    if not order2:
        return g
    used = [(x, gi) for x, gi in zip(leaves, g) if gi is not None and gi.requires_grad]
    return g, _call(lambda: lib.autograd.grad(sum((gi * gi).sum() for _, gi in used), [x for x, _ in used],
                                              allow_unused=True)) if used else None


GRAD_IDS = [c for c in IDS if any(isinstance(v, list) and k not in GRAD_SKIP for k, v in CASES[c][1].items())]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", GRAD_IDS)
def test_log_prob_grad(case, dtype):
    def fn(lib, d, v):
        return d.log_prob(v)
    e, t = _grads(ember, case, dtype, fn, True), _grads(torch, case, dtype, fn, True)
    for a, b in zip(e[0], t[0]):
        assert (a is None) == (b is None)
        if b is not None:
            _same(a, b, dtype, "grad")
    if t[1] is None:
        return
    for a, b in zip(e[1], t[1]) if not isinstance(t[1], Exception) else [(e[1], t[1])]:
        if b is not None:
            _same(a, b, dtype, "second order")


RSAMPLE_IDS = [c for c in GRAD_IDS if getattr(torch.distributions, CASES[c][0]).has_rsample]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", RSAMPLE_IDS)
def test_rsample_grad(case, dtype):
    def fn(lib, d, v):
        lib.manual_seed(5)
        return d.rsample((4,)) ** 2 * lib.arange(4 * math.prod(d.batch_shape + d.event_shape), dtype=v.dtype).view(
            (4,) + tuple(d.batch_shape) + tuple(d.event_shape))  # a weighting, so the gradients are not symmetric
    # Dirichlet/Beta: PyTorch's backward is once_differentiable; both must refuse the second order alike
    e, t = _call(lambda: _grads(ember, case, dtype, fn, True)), _call(lambda: _grads(torch, case, dtype, fn, True))
    if isinstance(t, Exception):
        _same(e, t, dtype, "rsample grad")
        e, t = _call(lambda: _grads(ember, case, dtype, fn, False)), _call(lambda: _grads(torch, case, dtype, fn, False))
        _same(e, t, dtype, "rsample grad")  # values, or torch's error (no bfloat16 gamma/dirichlet kernels)
        return
    for a, b in zip(e[0], t[0]):
        assert (a is None) == (b is None)
        if b is not None:
            _same(a, b, dtype, "rsample grad")
    if t[1] is not None:
        _same(e[1], t[1], dtype, "rsample second order")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", IDS)
def test_same_samples(case, dtype):
    (e, *_), (t, *_) = _build(ember, case, dtype, grad=False), _build(torch, case, dtype, grad=False)
    for shape in [(), (3,), (2, 2)]:
        for seed in (0, 7):
            ember.manual_seed(seed)
            torch.manual_seed(seed)
            es, ts = _call(lambda: e.sample(shape)), _call(lambda: t.sample(shape))
            if isinstance(ts, Exception):  # torch's samplers without a bfloat16 kernel
                _same(es, ts, dtype, "sample")
                continue
            assert tuple(es.shape) == tuple(ts.shape) and str(es.dtype) == str(ts.dtype)
            if t.support.is_discrete:
                np.testing.assert_array_equal(_np(es), _np(ts), err_msg=f"sample {shape} seed {seed}")
            else:  # the same uniform/normal draws; the transform's float32 log1p/log may differ by an ulp
                _same(es, ts, dtype, f"sample {shape} seed {seed}")
            if t.has_rsample:
                ember.manual_seed(seed)
                torch.manual_seed(seed)
                _same(e.rsample(shape), t.rsample(shape), dtype, f"rsample {shape}")


@pytest.mark.parametrize("case", IDS)
def test_expand(case):
    (e, _, ev, _), (t, _, tv, _) = _build(ember, case, "float64"), _build(torch, case, "float64")
    n = tv.dim() - len(t.event_shape)
    shape = tuple(tv.shape[:n]) if not t.batch_shape else (2,) + tuple(t.batch_shape)
    e2, t2 = e.expand(shape), t.expand(shape)
    assert type(e2) is type(e) and tuple(e2.batch_shape) == tuple(t2.batch_shape)
    assert tuple(e2.event_shape) == tuple(t2.event_shape) and e2._validate_args == e._validate_args
    _same(e2.log_prob(ev), t2.log_prob(tv), "float64", "expanded log_prob")
    ember.manual_seed(1)
    torch.manual_seed(1)
    _same(e2.sample((2,)), t2.sample((2,)), "float64", "expanded sample")
    assert repr(e2) == repr(t2)


ENUM_IDS = [c for c in IDS if getattr(torch.distributions, CASES[c][0]).has_enumerate_support]


@pytest.mark.parametrize("case", ENUM_IDS)
def test_enumerate_support(case):
    (e, *_), (t, *_) = _build(ember, case, "float32"), _build(torch, case, "float32")
    for expand in (True, False):
        _same(_call(lambda: e.enumerate_support(expand)), _call(lambda: t.enumerate_support(expand)), "float32",
              f"enumerate_support({expand})")


def _err(lib, f):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            f(lib, lib.distributions)
        except Exception as exc:  # noqa: BLE001
            return type(exc).__name__, str(exc).replace("ember.", "torch.")
    return None


BAD = {
    "scale-negative": lambda L, D: D.Normal(0., -1.),
    "scale-negative-batched": lambda L, D: D.Normal(L.zeros(2), L.tensor([1., -1.])),
    "scale-nan": lambda L, D: D.Laplace(L.tensor([0., 1.]), L.tensor([1., float("nan")])),
    "probs-above-one": lambda L, D: D.Bernoulli(probs=1.5),
    "probs-and-logits": lambda L, D: D.Bernoulli(probs=0.5, logits=0.),
    "neither": lambda L, D: D.Geometric(),
    "categorical-0d": lambda L, D: D.Categorical(probs=L.tensor(0.5)),
    "categorical-logits-0d": lambda L, D: D.Categorical(logits=L.tensor(0.5)),
    "categorical-negative": lambda L, D: D.Categorical(probs=L.tensor([0.5, -0.1])),
    "categorical-nan-logits": lambda L, D: D.Categorical(logits=L.tensor([0.5, float("nan")])),
    "geometric-zero": lambda L, D: D.Geometric(probs=L.tensor([0., 0.5])),
    "uniform-reversed": lambda L, D: D.Uniform(2., 1.),
    "uniform-reversed-batched": lambda L, D: D.Uniform(L.tensor([0., 2.]), L.tensor([1., 1.])),
    "gamma-zero": lambda L, D: D.Gamma(L.tensor([1., 0.]), 1.),
    "chi2-negative": lambda L, D: D.Chi2(L.tensor([-1.])),
    "poisson-negative": lambda L, D: D.Poisson(L.tensor([-1., 2.])),
    "dirichlet-0d": lambda L, D: D.Dirichlet(L.tensor(1.)),
    "dirichlet-zero": lambda L, D: D.Dirichlet(L.tensor([1., 0.])),
    "beta-negative": lambda L, D: D.Beta(L.tensor([1.]), L.tensor([-1.])),
    "binomial-fractional-count": lambda L, D: D.Binomial(L.tensor([2.5]), probs=L.tensor([0.5])),
    "multinomial-tensor-count": lambda L, D: D.Multinomial(L.tensor(3), probs=L.tensor([0.5, 0.5])),
    "negbinomial-probs-one": lambda L, D: D.NegativeBinomial(2., probs=L.tensor([1.])),
    "cauchy-zero-scale": lambda L, D: D.Cauchy(L.tensor([0.]), L.tensor([0.])),
    "exponential-negative": lambda L, D: D.Exponential(L.tensor([-2.])),
    "onehot-negative": lambda L, D: D.OneHotCategorical(L.tensor([[0.5, -0.5]])),
    # values outside the support, of the wrong shape or type
    "value-outside": lambda L, D: D.Exponential(1.).log_prob(L.tensor(-1.)),
    "value-outside-batched": lambda L, D: D.Poisson(L.tensor([1., 2.])).log_prob(L.tensor([0.5, 1.])),
    "value-not-tensor": lambda L, D: D.Normal(0., 1.).log_prob(1.0),
    "value-event-shape": lambda L, D: D.Dirichlet(L.ones(3)).log_prob(L.ones(4) / 4),
    "value-batch-shape": lambda L, D: D.Normal(L.zeros(3), 1.).log_prob(L.zeros(4)),
    "value-categorical-range": lambda L, D: D.Categorical(L.ones(3)).log_prob(L.tensor([3])),
    "value-binomial-above": lambda L, D: D.Binomial(4, L.tensor([0.5])).log_prob(L.tensor([5.])),
    "value-multinomial": lambda L, D: D.Multinomial(3, L.tensor([0.5, 0.5])).log_prob(L.tensor([3., 2.])),
    "value-onehot": lambda L, D: D.OneHotCategorical(L.ones(3)).log_prob(L.tensor([1., 1., 0.])),
    "value-uniform": lambda L, D: D.Uniform(0., 1.).log_prob(L.tensor([1.5])),
    "value-beta": lambda L, D: D.Beta(2., 2.).log_prob(L.tensor([1.5])),
    "value-simplex": lambda L, D: D.Dirichlet(L.ones(2)).log_prob(L.tensor([0.7, 0.7])),
    "value-bernoulli": lambda L, D: D.Bernoulli(0.5).cdf(L.tensor([0.5])),
    "cdf-uniform-outside": lambda L, D: D.Uniform(0., 1.).cdf(L.tensor([2.])),
    "binomial-inhomogeneous": lambda L, D: D.Binomial(L.tensor([2., 3.]), L.tensor([0.5, 0.5])).entropy(),
    "binomial-inhomogeneous-enum": lambda L, D: D.Binomial(L.tensor([2., 3.]), L.tensor([.5, .5])).enumerate_support(),
    "mode-missing": lambda L, D: D.Multinomial(3, L.tensor([0.5, 0.5])).mode,
    "cdf-missing": lambda L, D: D.Beta(2., 2.).cdf(L.tensor(0.5)),
    "icdf-missing": lambda L, D: D.Poisson(2.).icdf(L.tensor(0.5)),
    "rsample-missing": lambda L, D: D.Bernoulli(0.5).rsample(),
    "poisson-entropy": lambda L, D: D.Poisson(2.).entropy(),
    "validate-default-bad": lambda L, D: D.Distribution.set_default_validate_args(2),
    "broadcast-bad-type": lambda L, D: D.Normal("a", 1.),
    "broadcast-bad-shapes": lambda L, D: D.Normal(L.zeros(2), L.ones(3)),
    "dirichlet-list": lambda L, D: D.Dirichlet([1., 2.]),
    "categorical-list": lambda L, D: D.Categorical(probs=[0.5, 0.5]),
    "expand-bad": lambda L, D: D.Normal(L.zeros(2), 1.).expand((3,)),
    "expand-event-bad": lambda L, D: D.Dirichlet(L.ones(2, 3)).expand((4,)),
    "multinomial-sample-shape": lambda L, D: D.Categorical(L.ones(3)).sample(3),
}


@pytest.mark.parametrize("case", list(BAD))
def test_errors(case):
    t, e = _err(torch, BAD[case]), _err(ember, BAD[case])
    assert t is not None, "torch accepts it"
    assert e == t


@pytest.mark.parametrize("case", ["scale-negative", "uniform-reversed", "value-outside", "geometric-zero"])
def test_validation_can_be_switched_off(case):
    ember.distributions.Distribution.set_default_validate_args(False)
    try:
        assert _err(ember, BAD[case]) is None
    finally:
        ember.distributions.Distribution.set_default_validate_args(True)
    assert _err(ember, BAD[case]) is not None
    D = ember.distributions
    assert D.Normal(0., -1., validate_args=False).scale.item() == -1.


def test_base_class():
    D, TD = ember.distributions, torch.distributions
    for name in ("stddev", "mean", "variance", "support", "arg_constraints"):
        assert _call(lambda: getattr(D.Distribution(validate_args=False), name)).__class__ is NotImplementedError
    e_mode, t_mode = (_call(lambda: M.Distribution(validate_args=False).mode) for M in (D, TD))
    assert str(e_mode) == str(t_mode).replace("torch.", "ember.")
    assert tuple(D.Distribution((2,), (3,), validate_args=False)._extended_shape((4,))) == (4, 2, 3)

    class Custom(D.Normal):
        def __init__(self, loc):
            super().__init__(loc, 1.)
    msg = str(_call(lambda: Custom(ember.zeros(2)).expand((3, 2))))
    assert msg == ("Subclass Custom of Normal that defines a custom __init__ method must also define a custom "
                   ".expand() method.")
    with pytest.warns(FutureWarning, match=r"sample_n\(n\)"):
        assert tuple(D.Normal(ember.zeros(2), 1.).sample_n(3).shape) == (3, 2)
    # a lazily derived parameter is not built by validation
    b = D.Bernoulli(logits=ember.tensor([0.]))
    assert "probs" not in b.__dict__ and "logits" in b.__dict__


def test_constraints():
    C, TC = ember.distributions.constraints, torch.distributions.constraints
    assert sorted(C.__all__) == sorted(TC.__all__)
    x = [[0.2, 0.8, 0.], [0.5, 0.6, -1.], [1., 0., 0.]]
    mats = [[[2., 0.], [1., 3.]], [[1., 2.], [2., 1.]], [[2., 1.], [1., 2.]], [[0.6, 0.], [0.8, 0.6]]]
    checks = ["boolean", "one_hot", "nonnegative_integer", "positive_integer", "real", "real_vector", "positive",
              "nonnegative", "unit_interval", "simplex"]
    for name in checks:
        e, t = getattr(C, name), getattr(TC, name)
        assert repr(e) == repr(t) and (e.is_discrete, e.event_dim) == (t.is_discrete, t.event_dim)
        assert e.check(ember.tensor(x)).tolist() == t.check(torch.tensor(x)).tolist(), name
    for name in ["lower_triangular", "lower_cholesky", "corr_cholesky", "square", "symmetric",
                 "positive_semidefinite", "positive_definite"]:
        e, t = getattr(C, name), getattr(TC, name)
        assert repr(e) == repr(t) and (e.is_discrete, e.event_dim) == (t.is_discrete, t.event_dim)
        assert e.check(ember.tensor(mats)).tolist() == t.check(torch.tensor(mats)).tolist(), name
    made = [lambda M: M.interval(0., 2.), lambda M: M.half_open_interval(-1, 1), lambda M: M.greater_than(0.5),
            lambda M: M.greater_than_eq(0.5), lambda M: M.less_than(0.5), lambda M: M.integer_interval(0, 1),
            lambda M: M.independent(M.positive, 1), lambda M: M.multinomial(1),
            lambda M: M.cat([M.positive, M.real], 1, [1, 2]), lambda M: M.stack([M.positive, M.real, M.boolean], 1),
            lambda M: M.MixtureSameFamilyConstraint(M.positive), lambda M: M.dependent(is_discrete=True, event_dim=1)]
    for mk in made:
        e, t = mk(C), mk(TC)
        assert repr(e) == repr(t) and (e.is_discrete, e.event_dim) == (t.is_discrete, t.event_dim)
        et, tt = _call(lambda: e.check(ember.tensor(x))), _call(lambda: t.check(torch.tensor(x)))
        if isinstance(tt, Exception):
            assert (type(et), str(et)) == (type(tt), str(tt))
        else:
            assert et.tolist() == tt.tolist(), repr(t)
    assert C.is_dependent(C.dependent) and not C.is_dependent(C.real)
    for attr in ("is_discrete", "event_dim"):
        assert str(_call(lambda: getattr(C.dependent, attr))) == str(_call(lambda: getattr(TC.dependent, attr)))
    assert C.is_dependent(ember.distributions.Uniform.support)
    assert ember.distributions.Uniform.support.event_dim == 0
    assert repr(ember.distributions.Uniform(0., 1.).support) == repr(torch.distributions.Uniform(0., 1.).support)
    for bad in [lambda M: M.independent(1, 1), lambda M: M.independent(M.real, -1), lambda M: M.cat([1])]:
        assert _err(ember, lambda L, D: bad(C)) == _err(torch, lambda L, D: bad(TC))


def test_utils():
    from ember.distributions import utils as EU
    from torch.distributions import utils as TU
    for diag in (-1, 0, 1):
        m = np.arange(16.).reshape(4, 4)
        ev, tv = EU.tril_matrix_to_vec(ember.tensor(m), diag), TU.tril_matrix_to_vec(torch.tensor(m), diag)
        assert ev.tolist() == tv.tolist()
        assert EU.vec_to_tril_matrix(ev, diag).tolist() == TU.vec_to_tril_matrix(tv, diag).tolist()
    assert _err(ember, lambda L, D: EU.tril_matrix_to_vec(L.ones(3, 3), 3)) == \
        _err(torch, lambda L, D: TU.tril_matrix_to_vec(L.ones(3, 3), 3))
    assert _err(ember, lambda L, D: EU.vec_to_tril_matrix(L.ones(4))) == \
        _err(torch, lambda L, D: TU.vec_to_tril_matrix(L.ones(4)))
    for f in ("logits_to_probs", "probs_to_logits", "clamp_probs"):
        for binary in (True, False):
            kw = {} if f == "clamp_probs" else {"is_binary": binary}
            v = [0., 0.3, 1.]
            _same(getattr(EU, f)(ember.tensor(v), **kw), getattr(TU, f)(torch.tensor(v), **kw), "float32", f)
    a, b, c = EU.broadcast_all(ember.tensor([1., 2.], dtype=ember.float64), 3, 0.5)
    assert a.dtype == b.dtype == c.dtype == ember.float64 and tuple(b.shape) == (2,)
    assert EU.broadcast_all(1, 2.)[0].dtype == ember.float32
    assert EU.euler_constant == TU.euler_constant


def test_lazy_namespace():
    D = ember.distributions
    assert set(D.__all__) <= set(torch.distributions.__all__)
    for name in ("Normal", "Bernoulli", "Categorical", "OneHotCategorical", "OneHotCategoricalStraightThrough",
                 "Binomial", "Multinomial", "Poisson", "Geometric", "NegativeBinomial", "Beta", "Gamma", "Chi2",
                 "Dirichlet", "Exponential", "Laplace", "Cauchy", "Uniform", "Distribution", "ExponentialFamily"):
        assert name in D.__all__ and getattr(D, name).__name__ == name
    assert D.normal.Normal is D.Normal and D.constraints.real is D.constraints.real
    with pytest.raises(AttributeError):
        D.NoSuchDistribution  # noqa: B018


def test_exponential_family_entropy():
    """The Bregman-divergence entropy of ExponentialFamily matches the closed forms (and torch's)."""
    D, TD = ember.distributions, torch.distributions
    for make in [lambda L, M: M.Normal(L.tensor([0., 1.]), L.tensor([0.5, 2.])),
                 lambda L, M: M.Exponential(L.tensor([0.5, 2.])),
                 lambda L, M: M.Gamma(L.tensor([0.5, 2.]), L.tensor([1.5, 2.])),
                 lambda L, M: M.Bernoulli(L.tensor([0.3, 0.6]))]:
        e, t = make(ember, D), make(torch, TD)
        _same(D.ExponentialFamily.entropy(e), TD.ExponentialFamily.entropy(t), "float32", type(e).__name__)
        _same(D.ExponentialFamily.entropy(e), e.entropy(), "float32", type(e).__name__)


def _warning_texts(lib, fn) -> list[str]:
    class Bare(lib.distributions.Distribution):
        pass

    class NoSupport(lib.distributions.Distribution):
        arg_constraints = {}

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn(lib, Bare, NoSupport)
    return [str(w.message).replace(str(Bare), "<Bare>").replace(str(NoSupport), "<NoSupport>") for w in caught]


@pytest.mark.parametrize("fn", [lambda L, B, N: B(validate_args=True),
                                lambda L, B, N: N(validate_args=True)._validate_sample(L.zeros(())),
                                lambda L, B, N: L.distributions.Normal(0., 1.).sample_n(2)])
def test_warnings(fn):
    expected = _warning_texts(torch, fn)
    assert expected and _warning_texts(ember, fn) == expected


@pytest.mark.parametrize("dtypes", [("float32", "float64"), ("float64", "float32")])
@pytest.mark.parametrize("reduction", ["none", "mean"])
@pytest.mark.parametrize("pos_weight", [False, True])
def test_bce_with_logits_mixed_dtypes(dtypes, reduction, pos_weight):
    """Bernoulli's log_prob of Python-number parameters (float32) at a float64 value: PyTorch's
    binary_cross_entropy_with_logits takes log_sigmoid in the input's dtype and the rest in the target's."""
    def run(L):
        a = L.tensor([-0.8472978603872037, 3.3, -20., 0.1], dtype=getattr(L, dtypes[0]), requires_grad=True)
        b = L.tensor([1., 0.3, 0., 0.7], dtype=getattr(L, dtypes[1]), requires_grad=True)
        kw = dict(pos_weight=L.tensor([2., 1., .5, 3.], dtype=b.dtype)) if pos_weight else {}
        r = L.nn.functional.binary_cross_entropy_with_logits(a, b, weight=L.tensor([1., 2., 3., .5], dtype=a.dtype),
                                                             reduction=reduction, **kw)
        return [r, *L.autograd.grad(r.sum(), [a, b])]
    for e, t in zip(run(ember), run(torch)):
        assert str(e.dtype) == str(t.dtype) and e.tolist() == t.tolist()
