"""ember.distributions, part B, against torch 2.13 on the same inputs: every transform (forward, inverse,
log_abs_det_jacobian, shapes, constraints, gradients to second order, caching, equality, repr), biject_to /
transform_to for every registered constraint, and TransformedDistribution with the distributions built on it or on
wrappers (LogNormal, HalfNormal, HalfCauchy, Gumbel, Pareto, Weibull, Kumaraswamy, LogisticNormal, RelaxedBernoulli,
RelaxedOneHotCategorical, GeneralizedPareto, InverseGamma, Independent, MixtureSameFamily): log_prob, cdf, icdf,
entropy, moments, gradients of log_prob and rsample, the same samples for the same seed, expand, validation errors.

Each case is written once as a function of the library (``lib`` is torch or ember) and run under both."""
from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

import ember


@pytest.fixture(autouse=True)
def _validation_on():
    """torch.cond/while_loop (tests/test_torch_names.py) switch torch's default argument validation off for the
    rest of the process (a torch quirk); every test here starts from the default, validation on."""
    import torch as _torch
    _torch.distributions.Distribution.set_default_validate_args(True)
    ember.distributions.Distribution.set_default_validate_args(True)

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(1234)


def _np(x):
    if isinstance(x, ember.Tensor):
        return x.detach().numpy()
    if isinstance(x, torch.Tensor):
        return x.detach().numpy(force=True)  # a ZeroTensor gradient too
    return np.asarray(x)


def _same(e, t, what: str, rtol: float, atol: float = 0.0) -> None:
    """ember's value e equals torch's t (shape, dtype kind, values within rtol; NaN/inf where torch's are)."""
    if isinstance(t, (tuple, list)):
        assert isinstance(e, (tuple, list)) and len(e) == len(t), what
        for i, (a, b) in enumerate(zip(e, t)):
            _same(a, b, f"{what}[{i}]", rtol, atol)
        return
    if isinstance(t, (torch.Size, int, float, bool, str)) or t is None:
        assert (tuple(e) if isinstance(e, ember.Size) else e) == (tuple(t) if isinstance(t, torch.Size) else t), \
            f"{what}: {e!r} != {t!r}"
        return
    a, b = _np(e), _np(t)
    assert a.shape == b.shape, f"{what}: shape {a.shape} != {b.shape}"
    assert a.dtype == b.dtype, f"{what}: dtype {a.dtype} != {b.dtype}"
    if a.dtype == np.float32:  # single-precision libm results may differ from torch's (SLEEF) in the last bit
        rtol, atol = max(rtol, 1e-5), max(atol, 1e-6)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


def _run_both(case, *args):
    """case(lib, *args) -> dict name -> value or exception, under ember and torch."""
    out = []
    for lib in (ember, torch):
        res = {}
        case(lib, res, *args)
        out.append(res)
    return out


def _compare(e: dict, t: dict, rtol: float, atol: float = 0.0) -> None:
    assert list(e) == list(t), f"different results: {list(e)} vs {list(t)}"
    for k in t:
        if isinstance(t[k], BaseException):
            assert type(e[k]) is type(t[k]), f"{k}: ember raised/returned {e[k]!r}, torch raised {t[k]!r}"
            assert _msg(e[k]) == str(t[k]), f"{k}: message {str(e[k])!r} != {str(t[k])!r}"
        else:
            assert not isinstance(e[k], BaseException), f"{k}: ember raised {e[k]!r}, torch gave {t[k]!r}"
            _same(e[k], t[k], k, rtol, atol)


def _msg(exc: BaseException) -> str:
    """ember's message with its module paths spelled as torch's (messages that name a class)."""
    return str(exc).replace("ember.", "torch.")


def _try(res: dict, key: str, fn):
    try:
        res[key] = fn()
    except (NotImplementedError, ValueError, RuntimeError, TypeError, AssertionError, IndexError) as exc:
        res[key] = exc
    return res[key]


def _tol(dtype: str) -> float:
    return 1e-5 if dtype == "float32" else 1e-11


# --------------------------------------------------------------------------------------------------------------
# Transforms
# --------------------------------------------------------------------------------------------------------------

def _T(lib):
    return lib.distributions.transforms


# name -> (builder(lib, dtype), input shape, domain of x: "real" | "positive")
TRANSFORMS = {
    "exp": (lambda lib, dt: _T(lib).ExpTransform(), (3, 4), "real"),
    "power": (lambda lib, dt: _T(lib).PowerTransform(2.5), (3, 4), "positive"),
    "power_tensor": (lambda lib, dt: _T(lib).PowerTransform(lib.tensor([0.5, -1.5, 2.0, 3.0], dtype=dt)),
                     (3, 4), "positive"),
    "sigmoid": (lambda lib, dt: _T(lib).SigmoidTransform(), (3, 4), "real"),
    "tanh": (lambda lib, dt: _T(lib).TanhTransform(), (3, 4), "real"),
    "softplus": (lambda lib, dt: _T(lib).SoftplusTransform(), (3, 4), "real"),
    "abs": (lambda lib, dt: _T(lib).AbsTransform(), (3, 4), "real"),
    "affine": (lambda lib, dt: _T(lib).AffineTransform(1.5, -2.0), (3, 4), "real"),
    "affine_tensor": (lambda lib, dt: _T(lib).AffineTransform(lib.tensor([0.5, 1.0, -1.0, 2.0], dtype=dt),
                                                              lib.tensor([3.0, -0.5, 2.0, 1.5], dtype=dt),
                                                              event_dim=1), (3, 4), "real"),
    "affine_event2": (lambda lib, dt: _T(lib).AffineTransform(0.5, 3.0, event_dim=2), (2, 3, 4), "real"),
    "softmax": (lambda lib, dt: _T(lib).SoftmaxTransform(), (3, 4), "real"),
    "stick_breaking": (lambda lib, dt: _T(lib).StickBreakingTransform(), (3, 4), "real"),
    "lower_cholesky": (lambda lib, dt: _T(lib).LowerCholeskyTransform(), (2, 3, 3), "real"),
    "positive_definite": (lambda lib, dt: _T(lib).PositiveDefiniteTransform(), (2, 3, 3), "real"),
    "corr_cholesky": (lambda lib, dt: _T(lib).CorrCholeskyTransform(), (2, 6), "real"),
    "reshape": (lambda lib, dt: _T(lib).ReshapeTransform((4,), (2, 2)), (3, 4), "real"),
    "independent": (lambda lib, dt: _T(lib).IndependentTransform(_T(lib).SigmoidTransform(), 1), (3, 4), "real"),
    "compose": (lambda lib, dt: _T(lib).ComposeTransform([_T(lib).ExpTransform(),
                                                          _T(lib).AffineTransform(1.0, 2.0)]), (3, 4), "real"),
    "compose_event": (lambda lib, dt: _T(lib).ComposeTransform([_T(lib).AffineTransform(0.5, 2.0),
                                                                _T(lib).StickBreakingTransform()]), (3, 4), "real"),
    "identity": (lambda lib, dt: _T(lib).identity_transform, (3, 4), "real"),
    "inverse_of_sigmoid": (lambda lib, dt: _T(lib).SigmoidTransform().inv, (3, 4), "unit"),
    "cat": (lambda lib, dt: _T(lib).CatTransform([_T(lib).ExpTransform(), _T(lib).SigmoidTransform()], dim=1,
                                                 lengths=[1, 3]), (3, 4), "real"),
    "cat_event": (lambda lib, dt: _T(lib).CatTransform(
        [_T(lib).IndependentTransform(_T(lib).ExpTransform(), 1), _T(lib).SigmoidTransform()], dim=0,
        lengths=[2, 1]), (3, 4), "real"),
    "stack": (lambda lib, dt: _T(lib).StackTransform([_T(lib).ExpTransform(), _T(lib).SigmoidTransform(),
                                                      _T(lib).TanhTransform(), _T(lib).identity_transform], dim=1),
              (3, 4), "real"),
    "cdf_normal": (lambda lib, dt: _T(lib).CumulativeDistributionTransform(
        lib.distributions.Normal(lib.tensor(0.5, dtype=dt), lib.tensor(2.0, dtype=dt))), (3, 4), "real"),
}


def _x_for(shape, kind, dtype):
    x = RNG.standard_normal(shape)
    if kind == "positive":
        x = np.abs(x) + 0.1
    elif kind == "unit":
        x = 1 / (1 + np.exp(-x))
    return x.astype(dtype)


def _transform_case(lib, res, name, x_np, dtype):
    dt = getattr(lib, dtype)
    t = TRANSFORMS[name][0](lib, dt)
    x = lib.tensor(x_np).requires_grad_()
    y = _try(res, "forward", lambda: t(x))
    xi = _try(res, "inverse", lambda: t.inv(y.detach()))
    ladj = _try(res, "ladj", lambda: t.log_abs_det_jacobian(x, y))
    w = lib.tensor(np.linspace(-1, 1, y.numel()).reshape(tuple(y.shape)).astype(dtype))
    total = (y * w).sum() + (ladj.sum() if not isinstance(ladj, BaseException) else 0)
    (g,) = lib.autograd.grad(total, x, create_graph=True)
    res["grad"] = g
    if g.requires_grad:
        (gg,) = lib.autograd.grad((g * g).sum(), x)
        res["gradgrad"] = gg
    res["inv_ladj"] = _try(res, "inv_ladj", lambda: t.inv.log_abs_det_jacobian(y.detach(), x.detach()))
    shape = tuple(x_np.shape)
    res["forward_shape"] = _try(res, "forward_shape", lambda: tuple(t.forward_shape(lib.Size(shape))))
    res["inverse_shape"] = _try(res, "inverse_shape", lambda: tuple(t.inverse_shape(lib.Size(tuple(y.shape)))))
    res["domain"] = repr(t.domain)
    res["codomain"] = repr(t.codomain)
    res["domain_event_dim"] = t.domain.event_dim
    res["codomain_event_dim"] = t.codomain.event_dim
    res["bijective"] = t.bijective
    res["event_dim"] = _try(res, "event_dim", lambda: t.event_dim)
    sign = _try(res, "sign", lambda: t.sign)
    if isinstance(sign, lib.Tensor):
        res["sign"] = sign.detach()
    res["repr"] = repr(t)
    res["inv_repr"] = repr(t.inv)
    res["codomain_check"] = _try(res, "codomain_check", lambda: t.codomain.check(y.detach()))
    res["inv_inv_is_t"] = t.inv.inv is t


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_transform(name, dtype):
    _, shape, kind = TRANSFORMS[name]
    x_np = _x_for(shape, kind, dtype)
    e, t = _run_both(_transform_case, name, x_np, dtype)
    _compare(e, t, _tol(dtype), atol=1e-12 if dtype == "float64" else 1e-5)


def test_transform_round_trip_and_cache():
    T = ember.distributions.transforms
    x = ember.randn(3, 4, dtype=ember.float64)
    for t in [T.ExpTransform(), T.SigmoidTransform(), T.TanhTransform(), T.SoftplusTransform(),
              T.AffineTransform(2.0, -3.0), T.StickBreakingTransform(), T.CorrCholeskyTransform(),
              T.ComposeTransform([T.ExpTransform(), T.PowerTransform(2.0)])]:
        xx = x[..., :3] if isinstance(t, T.CorrCholeskyTransform) else x
        np.testing.assert_allclose(t.inv(t(xx)).numpy(), xx.numpy(), rtol=1e-9, atol=1e-9)
        cached = t.with_cache(1)
        y = cached(xx)
        assert cached.inv(y) is xx  # the cache hands back the very input
        assert cached(xx) is y
        assert t.with_cache(0) is t
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        T.ExpTransform(cache_size=2)
    with pytest.raises(NotImplementedError, match="with_cache is not implemented"):
        class _My(T.Transform):
            def __init__(self, a, cache_size=0):
                super().__init__(cache_size=cache_size)
        _My(1).with_cache(1)


def test_transform_equality_and_errors():
    T, TT = ember.distributions.transforms, torch.distributions.transforms
    for mod in (T, TT):
        lib = ember if mod is T else torch
        assert mod.ExpTransform() == mod.ExpTransform()
        assert mod.ExpTransform() != mod.SigmoidTransform()
        assert mod.ExpTransform().inv == mod.ExpTransform().inv
        assert mod.AffineTransform(1.0, 2.0) == mod.AffineTransform(1.0, 2.0)
        assert mod.AffineTransform(1.0, 2.0) != mod.AffineTransform(1.0, 3.0)
        assert mod.AffineTransform(lib.tensor([1.0]), 2.0) == mod.AffineTransform(lib.tensor([1.0]), 2.0)
        assert mod.PowerTransform(2.0) == mod.PowerTransform(2.0)
        assert mod.ComposeTransform([mod.ExpTransform()]) == mod.ComposeTransform([mod.ExpTransform()])
        assert mod.AffineTransform(0.0, -2.0).sign == -1 and mod.ExpTransform().inv.sign == 1
        with pytest.raises(TypeError, match="unhashable"):
            hash(mod.ExpTransform())
        with pytest.raises(ValueError, match="Please use either .domain.event_dim or .codomain.event_dim"):
            mod.StickBreakingTransform().event_dim if False else mod.ReshapeTransform((4,), (2, 2)).event_dim
        with pytest.raises(ValueError, match="in_shape, out_shape have different numbers of elements"):
            mod.ReshapeTransform((4,), (3,))
        with pytest.raises(ValueError, match="Input is not a flattened lower-diagonal number"):
            mod.CorrCholeskyTransform().forward_shape((2, 4))
        with pytest.raises(AssertionError, match="must equal length 4"):
            mod.CatTransform([mod.ExpTransform()], dim=0, lengths=[4])(lib.zeros(3))
        with pytest.raises(NotImplementedError):
            mod.AbsTransform().log_abs_det_jacobian(lib.zeros(1), lib.zeros(1))
        # a pickled transform drops its inverse link and rebuilds it
        t = mod.ExpTransform()
        t.inv
        t2 = pickle.loads(pickle.dumps(t))
        assert t2._inv is None and t2.inv.inv is t2


# --------------------------------------------------------------------------------------------------------------
# biject_to / transform_to
# --------------------------------------------------------------------------------------------------------------

# name -> (constraint builder(constraints module, lib), unconstrained input shape)
CONSTRAINTS = {
    "real": (lambda C, lib: C.real, (3, 4)),
    "real_vector": (lambda C, lib: C.real_vector, (3, 4)),
    "independent_positive": (lambda C, lib: C.independent(C.positive, 2), (3, 4)),
    "positive": (lambda C, lib: C.positive, (3, 4)),
    "nonnegative": (lambda C, lib: C.nonnegative, (3, 4)),
    "greater_than": (lambda C, lib: C.greater_than(2.5), (3, 4)),
    "greater_than_tensor": (lambda C, lib: C.greater_than(lib.tensor([0.0, 1.0, 2.0, 3.0])), (3, 4)),
    "greater_than_eq": (lambda C, lib: C.greater_than_eq(-1.0), (3, 4)),
    "less_than": (lambda C, lib: C.less_than(3.0), (3, 4)),
    "interval": (lambda C, lib: C.interval(-2.0, 5.0), (3, 4)),
    "unit_interval": (lambda C, lib: C.unit_interval, (3, 4)),
    "half_open_interval": (lambda C, lib: C.half_open_interval(0.0, 3.0), (3, 4)),
    "simplex": (lambda C, lib: C.simplex, (3, 4)),
    "lower_cholesky": (lambda C, lib: C.lower_cholesky, (2, 3, 3)),
    "positive_definite": (lambda C, lib: C.positive_definite, (2, 3, 3)),
    "positive_semidefinite": (lambda C, lib: C.positive_semidefinite, (2, 3, 3)),
    "corr_cholesky": (lambda C, lib: C.corr_cholesky, (2, 3)),
    "cat": (lambda C, lib: C.cat([C.positive, C.real, C.unit_interval], dim=1, lengths=[1, 2, 1]), (3, 4)),
    "stack": (lambda C, lib: C.stack([C.positive, C.interval(-1.0, 1.0), C.real], dim=0), (3, 4)),
    "boolean": (lambda C, lib: C.boolean, (3, 4)),
    "integer_interval": (lambda C, lib: C.integer_interval(0, 3), (3, 4)),
}


def _registry_case(lib, res, name, x_np, registry):
    C = lib.distributions.constraints
    c = CONSTRAINTS[name][0](C, lib)
    t = _try(res, "transform", lambda: getattr(lib.distributions, registry)(c))
    if isinstance(t, BaseException):
        return
    res["transform"] = repr(t)
    x = lib.tensor(x_np).requires_grad_()
    y = t(x)
    res["y"] = y
    res["check"] = c.check(y.detach()).all().item()
    res["inv"] = t.inv(y.detach())
    res["ladj"] = _try(res, "ladj", lambda: t.log_abs_det_jacobian(x, y))
    res["grad"] = lib.autograd.grad(y.sum(), x)[0]


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
@pytest.mark.parametrize("name", list(CONSTRAINTS))
def test_constraint_registry(name, registry):
    x_np = RNG.standard_normal(CONSTRAINTS[name][1])
    e, t = _run_both(_registry_case, name, x_np, registry)
    _compare(e, t, 1e-10, atol=1e-12)


def test_registry_register_and_errors():
    from ember.distributions import constraint_registry as CR
    C = ember.distributions.constraints
    reg = CR.ConstraintRegistry()

    @reg.register(C.positive)
    def _f(constraint):
        return ember.distributions.transforms.SoftplusTransform()

    assert isinstance(reg(C.positive), ember.distributions.transforms.SoftplusTransform)
    assert isinstance(reg(C.greater_than(3.0)), ember.distributions.transforms.SoftplusTransform)
    with pytest.raises(NotImplementedError, match="Cannot transform _Real constraints"):
        reg(C.real)
    for mod in (CR, torch.distributions.constraint_registry):
        with pytest.raises(TypeError, match="Expected constraint to be either a Constraint subclass or instance"):
            mod.ConstraintRegistry().register(int, lambda c: None)


# --------------------------------------------------------------------------------------------------------------
# Distributions
# --------------------------------------------------------------------------------------------------------------

def _P(*shape, low=None, high=None, pos=False, simplex=False, dtype="float64"):
    """A numpy parameter of the given shape: normal, positive, in [low, high], or on the simplex."""
    if simplex:
        p = RNG.random(shape) + 0.1
        return (p / p.sum(-1, keepdims=True)).astype(dtype)
    if low is not None:
        return RNG.uniform(low, high, shape).astype(dtype)
    x = RNG.standard_normal(shape)
    return (np.abs(x) + 0.3 if pos else x).astype(dtype)


# name -> (builder(D, lib, params: dict of tensors) -> distribution, params (numpy, differentiable ones),
#          value (numpy, in the support), icdf probabilities or None)
def _tensors(lib, params, grad=True):
    return {k: lib.tensor(v).requires_grad_(grad and v.dtype.kind == "f") for k, v in params.items()}


DISTS = {
    "LogNormal": (lambda D, p: D.LogNormal(p["loc"], p["scale"]),
                  {"loc": _P(2, 3), "scale": _P(2, 3, pos=True)}, _P(2, 3, pos=True)),
    "LogNormal_scalar": (lambda D, p: D.LogNormal(0.5, 2.0), {}, _P(4, pos=True)),
    "HalfNormal": (lambda D, p: D.HalfNormal(p["scale"]), {"scale": _P(4, pos=True)}, _P(4, pos=True)),
    "HalfCauchy": (lambda D, p: D.HalfCauchy(p["scale"]), {"scale": _P(4, pos=True)}, _P(4, pos=True)),
    "Gumbel": (lambda D, p: D.Gumbel(p["loc"], p["scale"]), {"loc": _P(2, 3), "scale": _P(2, 3, pos=True)},
               _P(2, 3)),
    "Gumbel_scalar": (lambda D, p: D.Gumbel(1.0, 2.0), {}, _P(3)),
    "Pareto": (lambda D, p: D.Pareto(p["scale"], p["alpha"]),
               {"scale": _P(4, low=0.5, high=1.0), "alpha": _P(4, low=0.5, high=3.0)}, _P(4, low=1.0, high=4.0)),
    "Weibull": (lambda D, p: D.Weibull(p["scale"], p["concentration"]),
                {"scale": _P(4, pos=True), "concentration": _P(4, low=0.5, high=3.0)}, _P(4, pos=True)),
    "Kumaraswamy": (lambda D, p: D.Kumaraswamy(p["c1"], p["c0"]),
                    {"c1": _P(5, low=0.5, high=3.0), "c0": _P(5, low=0.5, high=3.0)}, _P(5, low=0.05, high=0.95)),
    "LogisticNormal": (lambda D, p: D.LogisticNormal(p["loc"], p["scale"]),
                       {"loc": _P(2, 3), "scale": _P(2, 3, pos=True)}, _P(2, 4, simplex=True)),
    "RelaxedBernoulli": (lambda D, p: D.RelaxedBernoulli(p["temperature"], probs=p["probs"]),
                         {"temperature": np.array(0.7), "probs": _P(4, low=0.1, high=0.9)},
                         _P(4, low=0.1, high=0.9)),
    "RelaxedBernoulli_logits": (lambda D, p: D.RelaxedBernoulli(p["temperature"], logits=p["logits"]),
                                {"temperature": np.array([0.5, 1.5, 2.0]), "logits": _P(3)},
                                _P(3, low=0.1, high=0.9)),
    "RelaxedOneHotCategorical": (lambda D, p: D.RelaxedOneHotCategorical(p["temperature"], probs=p["probs"]),
                                 {"temperature": np.array(0.8), "probs": _P(2, 4, simplex=True)},
                                 _P(2, 4, simplex=True)),
    "RelaxedOneHotCategorical_logits": (
        lambda D, p: D.RelaxedOneHotCategorical(p["temperature"], logits=p["logits"]),
        {"temperature": np.array(1.3), "logits": _P(3)}, _P(3, simplex=True)),
    "GeneralizedPareto": (lambda D, p: D.GeneralizedPareto(p["loc"], p["scale"], p["concentration"]),
                          {"loc": _P(4), "scale": _P(4, pos=True), "concentration": np.array([0.3, 0.0, -0.2, 0.6])},
                          None),
    "GeneralizedPareto_scalar": (lambda D, p: D.GeneralizedPareto(0.5, 2.0, 0.25), {}, _P(3, low=0.6, high=3.0)),
    "InverseGamma": (lambda D, p: D.InverseGamma(p["concentration"], p["rate"]),
                     {"concentration": _P(4, low=0.5, high=4.0), "rate": _P(4, pos=True)}, _P(4, pos=True)),
    "Independent": (lambda D, p: D.Independent(D.Normal(p["loc"], p["scale"]), 1),
                    {"loc": _P(2, 3), "scale": _P(2, 3, pos=True)}, _P(2, 3)),
    "Independent_2": (lambda D, p: D.Independent(D.Normal(p["loc"], p["scale"]), 2),
                      {"loc": _P(2, 3), "scale": _P(2, 3, pos=True)}, _P(2, 3)),
    "MixtureSameFamily": (lambda D, p: D.MixtureSameFamily(D.Categorical(probs=p["mix"]),
                                                           D.Normal(p["loc"], p["scale"])),
                          {"mix": _P(3, simplex=True), "loc": _P(3), "scale": _P(3, pos=True)}, _P(4)),
    "MixtureSameFamily_batched_2d": (
        lambda D, p: D.MixtureSameFamily(D.Categorical(logits=p["mix"]),
                                         D.Independent(D.Normal(p["loc"], p["scale"]), 1)),
        {"mix": _P(2, 3), "loc": _P(2, 3, 2), "scale": _P(2, 3, 2, pos=True)}, _P(2, 2)),
    "TransformedDistribution_logistic": (
        lambda D, p: D.TransformedDistribution(D.Uniform(p["low"], p["high"]),
                                               [D.SigmoidTransform().inv, D.AffineTransform(loc=p["a"], scale=2.0)]),
        {"low": np.zeros(3), "high": np.ones(3), "a": _P(3)}, _P(3)),
    "TransformedDistribution_event": (
        lambda D, p: D.TransformedDistribution(D.Normal(p["loc"], p["scale"]),
                                               [D.ReshapeTransform((4,), (2, 2)), D.ExpTransform()]),
        {"loc": _P(3, 4), "scale": _P(3, 4, pos=True)}, _P(3, 2, 2, pos=True)),
}
# GeneralizedPareto's value must lie above loc
DISTS["GeneralizedPareto"] = DISTS["GeneralizedPareto"][:2] + (DISTS["GeneralizedPareto"][1]["loc"] + 0.4,)

_ICDF_Q = np.array([0.1, 0.35, 0.6, 0.9, 0.05, 0.75])


def _dist_case(lib, res, name, kind, dtype="float64"):
    build, params, value_np = DISTS[name]
    params = {k: v.astype(dtype) for k, v in params.items()}
    value_np = value_np.astype(dtype)
    D = lib.distributions
    p = _tensors(lib, params)
    d = build(D, p)
    value = lib.tensor(value_np)
    res["batch_shape"] = tuple(d.batch_shape)
    res["event_shape"] = tuple(d.event_shape)
    res["repr"] = repr(d)
    res["has_rsample"] = d.has_rsample
    res["support"] = _try(res, "support", lambda: repr(d.support))
    grads = [v for v in p.values() if v.requires_grad]
    if kind == "values":
        lp = _try(res, "log_prob", lambda: d.log_prob(value))
        if grads and not isinstance(lp, BaseException):
            res["log_prob_grad"] = lib.autograd.grad(lp.sum(), grads, allow_unused=True)
        for m in ("mean", "mode", "variance", "stddev"):
            _try(res, m, lambda: getattr(d, m))
        _try(res, "entropy", lambda: d.entropy())
        _try(res, "cdf", lambda: d.cdf(value))
        q = lib.tensor(np.broadcast_to(_ICDF_Q[: value_np.shape[-1]], value_np.shape).astype(dtype))
        _try(res, "icdf", lambda: d.icdf(q))
    elif kind == "sample":
        lib.manual_seed(7)
        s = _try(res, "sample", lambda: d.sample((3,)))
        res["sample_requires_grad"] = getattr(s, "requires_grad", None)
        if d.has_rsample:
            lib.manual_seed(11)
            r = d.rsample((2,))
            res["rsample"] = r
            if grads:
                gs = lib.autograd.grad((r * r).sum(), grads, create_graph=True, allow_unused=True)
                res["rsample_grad"] = tuple(g for g in gs if g is not None)
                used = [(g, v) for g, v in zip(gs, grads) if g is not None and g.requires_grad]
                if used:
                    _try(res, "rsample_gradgrad", lambda: lib.autograd.grad(
                        sum(g.sum() for g, _ in used), [v for _, v in used], allow_unused=True))
            lp = _try(res, "log_prob_of_rsample", lambda: d.log_prob(r.detach()))
        res["after"] = lib.rand(2, dtype=lib.float64)  # the stream advanced by as much
    elif kind == "expand":
        new_batch = (2,) + tuple(d.batch_shape)
        de = d.expand(new_batch)
        res["type"] = type(de).__name__
        res["expanded_batch_shape"] = tuple(de.batch_shape)
        res["expanded_event_shape"] = tuple(de.event_shape)
        lib.manual_seed(3)
        res["expanded_sample"] = de.sample()
        res["expanded_log_prob"] = _try(res, "expanded_log_prob", lambda: de.log_prob(value))
        res["expanded_mean"] = _try(res, "expanded_mean", lambda: de.mean)


@pytest.mark.parametrize("kind", ["values", "values32", "sample", "expand"])
@pytest.mark.parametrize("name", list(DISTS))
def test_distribution(name, kind):
    dtype = "float32" if kind == "values32" else "float64"
    e, t = _run_both(_dist_case, name, kind.replace("32", ""), dtype)
    _compare(e, t, 1e-10, atol=1e-12)


def _seeded_samples(lib, dtype):
    D = lib.distributions
    dt = getattr(lib, dtype)

    def T(*v):
        return lib.tensor(v, dtype=dt)

    lib.manual_seed(5)
    dists = [D.LogNormal(T(0.3, -1.0), T(1.0, 0.5)), D.HalfNormal(T(2.0)), D.HalfCauchy(T(2.0)),
             D.Gumbel(T(0.0, 1.0), T(1.0, 3.0)), D.Pareto(T(1.0), T(2.0)), D.Weibull(T(1.0, 2.0), T(0.5, 3.0)),
             D.Kumaraswamy(T(0.5, 2.0), T(1.5, 3.0)), D.InverseGamma(T(2.0), T(3.0)),
             D.LogisticNormal(T(0.1, 0.2), T(1.0, 2.0)), D.RelaxedBernoulli(T(0.5)[0], probs=T(0.2, 0.7)),
             D.RelaxedOneHotCategorical(T(0.5)[0], probs=T(0.2, 0.7, 0.1)),
             D.GeneralizedPareto(T(0.1, 0.0), T(2.0, 1.0), T(0.4, -0.2)),
             D.MixtureSameFamily(D.Categorical(T(0.2, 0.3, 0.5)), D.Normal(T(0.0, 1.0, 2.0), T(1.0, 1.0, 1.0)))]
    return [d.sample((4,)).numpy() for d in dists]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_seeded_samples_as_torch(dtype):
    """The same seed gives PyTorch's samples, one distribution after another on one stream: bit for bit in double
    precision; in single precision within a few ulp (ember's float32 log/exp/pow may differ from torch's SLEEF
    in the last bit, and the transforms chain several of them)."""
    for a, b in zip(_seeded_samples(ember, dtype), _seeded_samples(torch, dtype)):
        if dtype == "float64":
            np.testing.assert_array_equal(a, b)
        else:
            assert np.abs(a.view(np.int32).astype(np.int64) - b.view(np.int32)).max() <= 8


# name -> (builder(D, lib), exception type, message) : PyTorch's validation errors
BAD = {
    "LogNormal_scale": lambda D, lib: D.LogNormal(lib.tensor([0.0]), lib.tensor([-1.0]), validate_args=True),
    "HalfNormal_scale": lambda D, lib: D.HalfNormal(lib.tensor([0.0]), validate_args=True),
    "Gumbel_scale": lambda D, lib: D.Gumbel(lib.tensor([0.0]), lib.tensor([-1.0]), validate_args=True),
    "Pareto_alpha": lambda D, lib: D.Pareto(lib.tensor([1.0]), lib.tensor([-1.0]), validate_args=True),
    "Weibull_conc": lambda D, lib: D.Weibull(lib.tensor([1.0]), lib.tensor([0.0]), validate_args=True),
    "Kumaraswamy": lambda D, lib: D.Kumaraswamy(lib.tensor([1.0]), lib.tensor([-1.0]), validate_args=True),
    "InverseGamma": lambda D, lib: D.InverseGamma(lib.tensor([-1.0]), lib.tensor([1.0]), validate_args=True),
    "GeneralizedPareto": lambda D, lib: D.GeneralizedPareto(lib.tensor([0.0]), lib.tensor([-1.0]),
                                                            lib.tensor([0.1]), validate_args=True),
    "RelaxedBernoulli_both": lambda D, lib: D.RelaxedBernoulli(lib.tensor(1.0), probs=lib.tensor([0.5]),
                                                               logits=lib.tensor([0.0])),
    "RelaxedBernoulli_probs": lambda D, lib: D.RelaxedBernoulli(lib.tensor(1.0), probs=lib.tensor([1.5]),
                                                                validate_args=True),
    "LogNormal_sample": lambda D, lib: D.LogNormal(lib.tensor([0.0]), lib.tensor([1.0]),
                                                   validate_args=True).log_prob(lib.tensor([-1.0])),
    "HalfNormal_sample": lambda D, lib: D.HalfNormal(lib.tensor([1.0]), validate_args=True).log_prob(
        lib.tensor([-1.0])),
    "Pareto_sample": lambda D, lib: D.Pareto(lib.tensor([1.0]), lib.tensor([1.0]), validate_args=True).log_prob(
        lib.tensor([0.5])),
    "LogisticNormal_sample": lambda D, lib: D.LogisticNormal(lib.tensor([0.0]), lib.tensor([1.0]),
                                                             validate_args=True).log_prob(lib.tensor([0.6, 0.6])),
    "Independent_ndims": lambda D, lib: D.Independent(D.Normal(lib.tensor([0.0]), lib.tensor([1.0])), 2),
    "Independent_enumerate": lambda D, lib: D.Independent(D.Bernoulli(lib.tensor([0.5])), 1).enumerate_support(),
    "Transformed_bad_list": lambda D, lib: D.TransformedDistribution(D.Normal(0.0, 1.0), [1]),
    "Transformed_bad_type": lambda D, lib: D.TransformedDistribution(D.Normal(0.0, 1.0), 3),
    "Transformed_event": lambda D, lib: D.TransformedDistribution(D.Normal(0.0, 1.0), D.StickBreakingTransform()),
    "Mixture_not_categorical": lambda D, lib: D.MixtureSameFamily(D.Normal(0.0, 1.0), D.Normal(0.0, 1.0)),
    "Mixture_not_distribution": lambda D, lib: D.MixtureSameFamily(D.Categorical(lib.ones(3)), 5),
    "Mixture_k": lambda D, lib: D.MixtureSameFamily(D.Categorical(lib.ones(3)), D.Normal(lib.zeros(4), 1.0)),
    "Mixture_batch": lambda D, lib: D.MixtureSameFamily(D.Categorical(lib.ones(2, 3)),
                                                        D.Normal(lib.zeros(4, 3), 1.0)),
    "Mixture_sample": lambda D, lib: D.MixtureSameFamily(
        D.Categorical(lib.ones(3)), D.HalfNormal(lib.ones(3)), validate_args=True).log_prob(lib.tensor([-1.0])),
    "Gumbel_no_rsample_support": lambda D, lib: D.Gumbel(0.0, 1.0).enumerate_support(),
}


@pytest.mark.parametrize("name", list(BAD))
def test_validation_errors(name):
    excs = []
    for lib in (ember, torch):
        with pytest.raises(Exception) as info:
            BAD[name](lib.distributions, lib)
        excs.append(info.value)
    e, t = excs
    assert type(e) is type(t), f"{type(e).__name__}: {e} vs {type(t).__name__}: {t}"
    es, ts = _msg(e), str(t)
    # tensor reprs inside the messages print the same; object addresses do not occur
    assert es == ts, f"\n{es}\n!=\n{ts}"


def test_mixture_same_family_moments_and_cdf():
    def case(lib, res):
        D = lib.distributions
        lib.manual_seed(0)
        mix = D.Categorical(probs=lib.tensor([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]], dtype=lib.float64))
        comp = D.Normal(lib.tensor([[-1.0, 0.0, 2.0], [1.0, 3.0, -2.0]], dtype=lib.float64),
                        lib.tensor([[1.0, 0.5, 2.0], [0.3, 1.0, 1.5]], dtype=lib.float64))
        m = D.MixtureSameFamily(mix, comp)
        v = lib.tensor([[0.3, -0.4], [1.0, 2.0]], dtype=lib.float64)
        res["cdf"] = m.cdf(v)
        res["mean"] = m.mean
        res["variance"] = m.variance
        res["log_prob"] = m.log_prob(v)
        res["support"] = repr(m.support)
        res["sample"] = m.sample((5,))
        res["mixture"] = repr(m.mixture_distribution)
        res["component_batch"] = tuple(m.component_distribution.batch_shape)
    e, t = _run_both(case)
    _compare(e, t, 1e-12, atol=1e-14)


def test_transformed_distribution_cdf_monotonised():
    """A decreasing transform flips the cdf (``_monotonize_cdf``), as PyTorch's."""
    def case(lib, res):
        D = lib.distributions
        base = D.Normal(lib.tensor([0.5, -0.2], dtype=lib.float64), lib.tensor([1.0, 2.0], dtype=lib.float64))
        d = D.TransformedDistribution(base, [D.AffineTransform(1.0, -2.0), D.ExpTransform()])
        v = lib.tensor([0.5, 3.0], dtype=lib.float64)
        res["cdf"] = d.cdf(v)
        res["icdf"] = d.icdf(lib.tensor([0.3, 0.8], dtype=lib.float64))
        res["log_prob"] = d.log_prob(v)
        res["support"] = repr(d.support)
        d2 = D.TransformedDistribution(base, [D.AffineTransform(lib.tensor([0.0, 1.0], dtype=lib.float64),
                                                                lib.tensor([2.0, -3.0], dtype=lib.float64))])
        res["cdf_tensor_sign"] = d2.cdf(v)
        res["copula"] = D.TransformedDistribution(base, [D.CumulativeDistributionTransform(
            D.Normal(lib.tensor(0.0, dtype=lib.float64), lib.tensor(1.0, dtype=lib.float64)))]).log_prob(
            lib.tensor([0.2, 0.7], dtype=lib.float64))
    e, t = _run_both(case)
    _compare(e, t, 1e-12, atol=1e-14)


def test_edge_cases_as_torch():
    """Values outside the support without validation, enumerate_support through Independent, rsample refused,
    float32 parameters, expanded scalars, sample shapes."""
    def case(lib, res):
        D = lib.distributions
        neg = lib.tensor([-1.0, 0.0, 2.0])
        res["half_normal_outside"] = D.HalfNormal(lib.tensor([1.0, 2.0, 0.5]), validate_args=False).log_prob(neg)
        res["half_cauchy_outside"] = D.HalfCauchy(lib.tensor([1.0, 2.0, 0.5]), validate_args=False).log_prob(neg)
        res["half_cauchy_number"] = D.HalfCauchy(lib.tensor(1.5), validate_args=False).log_prob(2.0)
        ind = D.Independent(D.Bernoulli(lib.tensor([0.3, 0.6])), 0)
        res["ind_enumerate"] = ind.enumerate_support()
        res["ind_has_enum"] = ind.has_enumerate_support
        res["ind1_has_enum"] = D.Independent(D.Bernoulli(lib.tensor([0.3, 0.6])), 1).has_enumerate_support
        mix = D.MixtureSameFamily(D.Categorical(lib.ones(3)), D.Normal(lib.zeros(3), lib.ones(3)))
        _try(res, "mixture_rsample", lambda: mix.rsample())
        res["mixture_has_rsample"] = mix.has_rsample
        lib.manual_seed(0)
        d = D.Kumaraswamy(lib.tensor([0.7, 2.0]), lib.tensor([1.5, 0.8]))
        res["kumaraswamy32_rsample"] = d.rsample((3,))
        res["kumaraswamy32_mode"] = d.mode
        res["kumaraswamy32_entropy"] = d.entropy()
        e = D.Gumbel(1.0, 2.0).expand((2, 3))
        res["gumbel_expand"] = (tuple(e.batch_shape), e.sample().shape == (2, 3), e.log_prob(lib.zeros(2, 3)))
        ln = D.LogisticNormal(lib.zeros(2), lib.ones(2))
        res["logistic_normal_shapes"] = (tuple(ln.batch_shape), tuple(ln.event_shape), tuple(ln.sample((5,)).shape))
        ln0 = D.LogisticNormal(0.0, 1.0)
        res["logistic_normal_scalar"] = (tuple(ln0.batch_shape), tuple(ln0.event_shape))
        res["pareto_support"] = repr(D.Pareto(lib.tensor([2.0]), lib.tensor([1.0])).support)
        gp = D.GeneralizedPareto(lib.tensor([0.0, 1.0]), lib.tensor([1.0, 2.0]), lib.tensor([-0.5, 0.5]))
        res["gp_support"] = (repr(gp.support), gp.support.lower_bound, gp.support.upper_bound)
        res["gp_moments"] = (gp.mean, gp.variance, gp.entropy(), gp.mode)
        res["gp_logs"] = (gp.log_survival_function(lib.tensor([0.5, 1.5])), gp.log_cdf(lib.tensor([0.5, 1.5])))
        ig = D.InverseGamma(lib.tensor([0.5, 1.5, 3.0]), lib.tensor([1.0, 2.0, 3.0]))
        res["inverse_gamma_moments"] = (ig.mean, ig.variance, ig.mode)
        lrb = D.RelaxedBernoulli(lib.tensor(0.5), logits=2.0)
        res["relaxed_scalar_logits"] = (tuple(lrb.batch_shape), lrb.probs, lrb.logits)
        w = D.Weibull(lib.tensor([1.0, 2.0]), lib.tensor([0.5, 3.0])).expand((3, 2))
        lib.manual_seed(1)
        res["weibull_expanded"] = (w.sample(), w.mean, w.concentration_reciprocal)
    e, t = _run_both(case)
    _compare(e, t, 1e-6, atol=1e-6)


def test_cache_inverse_graph():
    """With cache_size=1, inv(t(x)) hands back x itself, so gradients flow to x through it (PyTorch's caching)."""
    T = ember.distributions.transforms
    x = ember.randn(4, dtype=ember.float64, requires_grad=True)
    t = T.ComposeTransform([T.AffineTransform(1.0, 2.0), T.SigmoidTransform()], cache_size=1)
    y = t(x)
    assert t.inv(y) is x
    ladj = t.log_abs_det_jacobian(x, y)
    (g,) = ember.autograd.grad(ladj.sum(), x)
    xt = torch.tensor(x.detach().numpy(), requires_grad=True)
    tt = torch.distributions.transforms.ComposeTransform(
        [torch.distributions.transforms.AffineTransform(1.0, 2.0), torch.distributions.transforms.SigmoidTransform()])
    (gt,) = torch.autograd.grad(tt.log_abs_det_jacobian(xt, tt(xt)).sum(), xt)
    np.testing.assert_allclose(g.numpy(), gt.numpy(), rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "complex64", "float16", "float64"])
@pytest.mark.parametrize("op", ["cumsum", "cumprod", "logcumsumexp"])
def test_scans_accumulate_as_torch(op, dtype):
    """PyTorch's CPU scans carry float32/complex64 running values in double/complex128 (acc_type) and round each
    output once (StickBreaking and CorrCholesky rest on cumsum/cumprod): bit for bit, values and gradients."""
    x = np.random.default_rng(3).standard_normal((6, 300))
    if dtype == "complex64":
        x = x[:, :150] + 1j * x[:, 150:]
    if op == "cumprod":
        x = x[:, :40]  # keep the products finite
    x = x.astype(dtype)
    for dim in (0, -1):
        xe, xt = ember.tensor(x, requires_grad=dtype != "float16"), torch.tensor(x, requires_grad=dtype != "float16")
        ye, yt = getattr(xe, op)(dim), getattr(xt, op)(dim)
        np.testing.assert_array_equal(ye.detach().numpy(), yt.detach().numpy())
        if dtype != "float16" and op == "cumsum":
            (ge,) = ember.autograd.grad(ye, xe, ember.tensor(x))
            (gt,) = torch.autograd.grad(yt, xt, torch.tensor(x))
            np.testing.assert_array_equal(ge.numpy(), gt.numpy())


def test_transform_parameter_gradients():
    """Gradients reach the parameters of AffineTransform and PowerTransform (loc, scale, exponent), to second order."""
    def case(lib, res):
        T = lib.distributions.transforms
        x = lib.tensor(np.linspace(0.2, 2.0, 8).reshape(2, 4))
        loc = lib.tensor([0.5, -1.0, 2.0, 0.0], requires_grad=True)
        scale = lib.tensor([1.5, -0.5, 2.0, 3.0], requires_grad=True)
        expo = lib.tensor([0.5, 2.0, -1.5, 3.0], requires_grad=True)
        t = T.ComposeTransform([T.PowerTransform(expo), T.AffineTransform(loc, scale, event_dim=1)])
        y = t(x)
        out = y.sum() + t.log_abs_det_jacobian(x, y).sum() + t.inv(y).sum()
        gs = lib.autograd.grad(out, [loc, scale, expo], create_graph=True)
        res["grads"] = tuple(g.detach() for g in gs)
        res["gradgrad"] = lib.autograd.grad(sum((g * g).sum() for g in gs), [scale, expo])
        res["sign"] = t.sign
    e, t = _run_both(case)
    _compare(e, t, 1e-12, atol=1e-13)
