"""ember.distributions, part C, against torch 2.13 on the same inputs: MultivariateNormal,
LowRankMultivariateNormal, Wishart, LKJCholesky, StudentT, VonMises, ContinuousBernoulli, FisherSnedecor, and
kl_divergence (its dispatch and every registered pair ember has both sides of)."""
from __future__ import annotations

import warnings
import zlib

import numpy as np
import pytest
import torch

import ember
import ember.distributions as ED
import torch.distributions as TD


@pytest.fixture(autouse=True)
def _validation_on():
    """torch.cond/while_loop (tests/test_torch_names.py) switch torch's default argument validation off for the
    rest of the process (a torch quirk); every test here starts from the default, validation on."""
    import torch as _torch
    _torch.distributions.Distribution.set_default_validate_args(True)
    ember.distributions.Distribution.set_default_validate_args(True)

_RTOL = {torch.float64: 1e-11, torch.float32: 2e-5}


def _np(t) -> np.ndarray:
    return np.asarray(t.detach().numpy())


def _close(e, t, rtol: float | None = None, what: str = "") -> None:
    """ember's tensor e equals torch's t: shape and dtype exactly, values to float rounding (nan where nan)."""
    assert isinstance(e, ember.Tensor), (what, type(e))
    assert tuple(e.shape) == tuple(t.shape), (what, tuple(e.shape), tuple(t.shape))
    assert str(e.dtype) == str(t.dtype), (what, e.dtype, t.dtype)
    a, b = _np(e), _np(t)
    if rtol is None:
        rtol = _RTOL.get(t.dtype, 0)
    if a.dtype.kind == "f":
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(a, b, err_msg=what)


def _ember_words(msg: str) -> str:
    """torch's message as ember words it (class paths name ember's modules)."""
    return msg.replace("<class 'torch.", "<class 'ember.")


def _same(f, de, dt, what: str) -> None:
    """f(de) matches f(dt): the same values, or the same exception (type and message) where torch raises."""
    try:
        want = f(dt)
    except Exception as e:   # noqa: BLE001  (compared below)
        with pytest.raises(type(e)) as got:
            f(de)
        assert str(got.value) == _ember_words(str(e)), what
        return
    _close(f(de), want, what=what)


def _pairs(params: dict, grad: bool = False) -> tuple[dict, dict]:
    """The same parameters as ember and torch tensors (numbers stay numbers), float ones requiring grad."""
    e, t = {}, {}
    for k, v in params.items():
        if isinstance(v, np.ndarray):
            rg = grad and v.dtype.kind == "f"
            e[k] = ember.tensor(v, requires_grad=rg)
            t[k] = torch.tensor(v, requires_grad=rg)
        else:
            e[k] = t[k] = v
    return e, t


def _spd(rng, batch, n, dtype=np.float64) -> np.ndarray:
    a = rng.standard_normal(batch + (n, n))
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(dtype)


def _mvn(kind, dtype=np.float64, loc_batch=(2,), mat_batch=(2,)):
    def make(rng):
        cov = _spd(rng, mat_batch, 3, dtype)
        mat = np.linalg.cholesky(cov) if kind == "scale_tril" else (np.linalg.inv(cov) if kind == "precision_matrix"
                                                                    else cov)
        return {"loc": rng.standard_normal(loc_batch + (3,)).astype(dtype), kind: mat.astype(dtype)}
    return make


def _lowrank(batch=(2,), rank=2):
    def make(rng):
        return {"loc": rng.standard_normal(batch + (3,)), "cov_factor": rng.standard_normal(batch + (3, rank)),
                "cov_diag": rng.random(batch + (3,)) + 0.5}
    return make


def _wishart(kind, df):
    def make(rng):
        cov = _spd(rng, (2,), 3)
        mat = np.linalg.cholesky(cov) if kind == "scale_tril" else (np.linalg.inv(cov) if kind == "precision_matrix"
                                                                    else cov)
        return {"df": np.array(df) if isinstance(df, list) else df, kind: mat}
    return make


# name -> (class name, parameters from an rng, sample shape)
CASES = {
    "mvn_cov": ("MultivariateNormal", _mvn("covariance_matrix"), (4,)),
    "mvn_prec": ("MultivariateNormal", _mvn("precision_matrix"), (4,)),
    "mvn_tril": ("MultivariateNormal", _mvn("scale_tril"), (4,)),
    "mvn_broadcast": ("MultivariateNormal", _mvn("scale_tril", loc_batch=(2, 1), mat_batch=(3,)), (2,)),
    "mvn_nobatch_f32": ("MultivariateNormal", _mvn("covariance_matrix", np.float32, (), ()), (5,)),
    "lowrank": ("LowRankMultivariateNormal", _lowrank(), (4,)),
    "lowrank_nobatch": ("LowRankMultivariateNormal", _lowrank((), 1), (3,)),
    "wishart_cov": ("Wishart", _wishart("covariance_matrix", [4.5, 7.0]), (3,)),
    "wishart_prec": ("Wishart", _wishart("precision_matrix", 5.0), (3,)),
    "wishart_tril": ("Wishart", _wishart("scale_tril", [3.5, 3.0]), (3,)),
    "lkj": ("LKJCholesky", lambda rng: {"dim": 4, "concentration": np.array([0.5, 1.0, 3.0])}, (2,)),
    "lkj_scalar": ("LKJCholesky", lambda rng: {"dim": 3, "concentration": 2.0}, (5,)),
    "studentt": ("StudentT", lambda rng: {"df": np.array([0.5, 1.0, 1.5, 2.0, 3.0, 30.0]),
                                          "loc": rng.standard_normal(6), "scale": rng.random(6) + 0.5}, (4,)),
    "studentt_f32": ("StudentT", lambda rng: {"df": np.array([2.5, 7.0], np.float32)}, (3,)),
    "vonmises": ("VonMises", lambda rng: {"loc": rng.standard_normal(5) * 3,
                                          "concentration": np.array([1e-6, 0.05, 1.0, 4.0, 50.0])}, (7,)),
    "vonmises_f32": ("VonMises", lambda rng: {"loc": np.float32([0.5, -2.0]), "concentration": np.float32([0.3, 8])},
                     (4,)),
    "cbern_probs": ("ContinuousBernoulli", lambda rng: {"probs": np.array([0.02, 0.3, 0.4995, 0.5, 0.5008, 0.9])},
                    (3,)),
    "cbern_logits": ("ContinuousBernoulli", lambda rng: {"logits": np.array([-3.0, -0.001, 0.0, 0.002, 2.0])}, (3,)),
    "fisher": ("FisherSnedecor", lambda rng: {"df1": np.array([1.0, 2.5, 3.0, 10.0]),
                                              "df2": np.array([1.5, 3.0, 4.5, 12.0])}, (4,)),
    "fisher_scalar": ("FisherSnedecor", lambda rng: {"df1": 3.0, "df2": 6.0}, (5,)),
    "lowrank_f32": ("LowRankMultivariateNormal", lambda rng: {k: v.astype(np.float32) for k, v in
                                                              _lowrank()(rng).items()}, (3,)),
    "wishart_f32": ("Wishart", lambda rng: {"df": np.float32([4.0, 6.5]),
                                            "covariance_matrix": _spd(rng, (2,), 3, np.float32)}, (2,)),
    "lkj_f32": ("LKJCholesky", lambda rng: {"dim": 3, "concentration": np.float32([0.7, 2.0])}, (2,)),
    "cbern_f32": ("ContinuousBernoulli", lambda rng: {"probs": np.float32([0.1, 0.4995, 0.7])}, (3,)),
    "fisher_f32": ("FisherSnedecor", lambda rng: {"df1": np.float32([1.5, 5.0]), "df2": np.float32([3.0, 9.0])},
                   (3,)),
}
_PROPS = ("mean", "mode", "variance", "stddev", "covariance_matrix", "precision_matrix", "scale_tril")


def _build(case: str, grad: bool = False, validate_args=None):
    cls, make, shape = CASES[case]
    pe, pt = _pairs(make(np.random.default_rng(zlib.crc32(case.encode()))), grad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # Wishart's low-df warning
        de = getattr(ED, cls)(**pe, validate_args=validate_args)
        dt = getattr(TD, cls)(**pt, validate_args=validate_args)
    return de, dt, pe, pt, shape


def _value(dt, shape):
    """A value in the support, drawn by torch."""
    torch.manual_seed(7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dt.sample(shape).detach()


def _grad_inputs(pe: dict, pt: dict) -> tuple[list, list]:
    keys = [k for k, v in pt.items() if isinstance(v, torch.Tensor) and v.requires_grad]
    return [pe[k] for k in keys], [pt[k] for k in keys]


@pytest.mark.parametrize("case", list(CASES))
def test_values(case):
    de, dt, _, _, shape = _build(case)
    assert de.batch_shape == dt.batch_shape and de.event_shape == dt.event_shape
    assert repr(de) == repr(dt) and repr(de.support) == repr(dt.support)
    assert de.has_rsample == dt.has_rsample and de.has_enumerate_support == dt.has_enumerate_support
    assert {k: repr(c) for k, c in de.arg_constraints.items()} == {k: repr(c) for k, c in dt.arg_constraints.items()}
    v = _value(dt, shape)
    _close(de.log_prob(ember.tensor(v.numpy())), dt.log_prob(v), what="log_prob")
    for name in _PROPS + ("entropy",):
        if name in _PROPS and not hasattr(type(dt), name):
            continue
        _same(lambda d: getattr(d, name)() if name == "entropy" else getattr(d, name), de, dt, name)
    if case.startswith("cbern"):
        u = torch.tensor(np.random.default_rng(1).random((3,) + tuple(dt.batch_shape)), dtype=v.dtype)
        for m in ("cdf", "icdf"):
            _close(getattr(de, m)(ember.tensor(u.numpy())), getattr(dt, m)(u), what=m)
        _close(de.cdf(ember.tensor([[0.0], [1.0]], dtype=ember.float64)),
               dt.cdf(torch.tensor([[0.0], [1.0]], dtype=torch.float64)), what="cdf ends")


@pytest.mark.parametrize("case", list(CASES))
def test_log_prob_grad(case):
    de, dt, pe, pt, shape = _build(case, grad=True)
    ie, it = _grad_inputs(pe, pt)
    if not it:
        pytest.skip("no tensor parameter")
    v = _value(dt, shape)
    ge = ember.autograd.grad(de.log_prob(ember.tensor(v.numpy())).sum(), ie)
    gt = torch.autograd.grad(dt.log_prob(v).sum(), it)
    for a, b in zip(ge, gt):
        _close(a, b, rtol=_RTOL[b.dtype] * 100, what="grad")


@pytest.mark.parametrize("case", ["mvn_cov", "mvn_prec", "lowrank", "wishart_cov", "lkj", "studentt", "vonmises",
                                  "cbern_probs", "cbern_logits", "fisher"])
def test_log_prob_second_order(case):
    """The gradient of log_prob's gradient (double backward through cholesky, triangular solves, lgamma, ...)."""
    de, dt, pe, pt, shape = _build(case, grad=True)
    ie, it = _grad_inputs(pe, pt)
    v = _value(dt, shape)
    ge = ember.autograd.grad(de.log_prob(ember.tensor(v.numpy())).sum(), ie, create_graph=True)
    gt = torch.autograd.grad(dt.log_prob(v).sum(), it, create_graph=True)
    hh = sum((g * g).sum() for g in ge), sum((g * g).sum() for g in gt)
    for a, b in zip(ember.autograd.grad(hh[0], ie), torch.autograd.grad(hh[1], it)):
        _close(a, b, rtol=1e-8, what="second order")


# sampled bit for bit as torch (their batched products take PyTorch's small-bmm loop, as ember's: see
# tests/test_small_bmm.py); the others go through LAPACK (cholesky, inverse) or float32 rounding that differs
_BIT_EXACT = {"mvn_cov", "mvn_tril", "mvn_broadcast", "mvn_nobatch_f32", "lowrank", "lowrank_nobatch",
              "wishart_prec", "wishart_tril"}


@pytest.mark.parametrize("case", list(CASES))
def test_same_samples(case):
    de, dt, _, _, shape = _build(case)
    for sample_shape in ((), shape):
        ember.manual_seed(123)
        torch.manual_seed(123)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a, b = de.sample(sample_shape), dt.sample(sample_shape)
        _close(a, b, rtol=0 if case in _BIT_EXACT else None, what=f"sample{sample_shape}")
        assert not a.requires_grad


@pytest.mark.parametrize("case", [c for c in CASES if getattr(TD, CASES[c][0]).has_rsample])
def test_rsample_grad(case):
    de, dt, pe, pt, shape = _build(case, grad=True)
    ie, it = _grad_inputs(pe, pt)
    if not it:
        pytest.skip("no tensor parameter")
    # Wishart: PyTorch's correction loop writes into its mask after indexing with it, so its rsample has a
    # gradient only for sample_shape=() (a 0-d mask); with a sample shape torch's backward raises
    sample_shape = () if case.startswith("wishart") else shape
    ember.manual_seed(5)
    torch.manual_seed(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b = de.rsample(sample_shape), dt.rsample(sample_shape)
    _close(a, b, what="rsample")
    w = np.random.default_rng(0).standard_normal(tuple(b.shape))
    ge = ember.autograd.grad((a * ember.tensor(w, dtype=a.dtype)).sum(), ie)
    gt = torch.autograd.grad((b * torch.tensor(w, dtype=b.dtype)).sum(), it)
    for x, y in zip(ge, gt):
        _close(x, y, rtol=_RTOL[y.dtype] * 100, what="rsample grad")


@pytest.mark.parametrize("case", ["mvn_tril", "mvn_cov", "lowrank", "cbern_probs", "cbern_logits"])
def test_rsample_second_order(case):
    """rsample is differentiable twice (the gradient of the gradient matches torch's)."""
    de, dt, pe, pt, shape = _build(case, grad=True)
    ie, it = _grad_inputs(pe, pt)
    ember.manual_seed(9)
    torch.manual_seed(9)
    a, b = de.rsample(shape), dt.rsample(shape)
    (ge,) = ember.autograd.grad(a.pow(2).sum(), ie[-1:], create_graph=True)
    (gt,) = torch.autograd.grad(b.pow(2).sum(), it[-1:], create_graph=True)
    _close(ember.autograd.grad(ge.sum(), ie[-1:])[0], torch.autograd.grad(gt.sum(), it[-1:])[0],
           rtol=1e-9, what="second order")


@pytest.mark.parametrize("case", ["studentt", "fisher"])
def test_rsample_second_order_gamma(case):
    """Through _standard_gamma the second derivative is not implemented, in torch as in ember."""
    de, dt, pe, pt, shape = _build(case, grad=True)
    ie, it = _grad_inputs(pe, pt)
    a, b = de.rsample(shape), dt.rsample(shape)
    (ge,) = ember.autograd.grad(a.pow(2).sum(), ie[:1], create_graph=True)
    (gt,) = torch.autograd.grad(b.pow(2).sum(), it[:1], create_graph=True)
    msg = "the derivative for '_standard_gamma_grad' is not implemented."
    with pytest.raises(NotImplementedError, match=msg):
        torch.autograd.grad(gt.sum(), it[:1])
    with pytest.raises(NotImplementedError, match=msg):
        ember.autograd.grad(ge.sum(), ie[:1])


@pytest.mark.parametrize("case", list(CASES))
def test_expand(case):
    de, dt, _, _, shape = _build(case)
    new = (2,) + tuple(dt.batch_shape)
    ee, et = de.expand(new), dt.expand(new)
    assert type(ee) is type(de)
    assert ee.batch_shape == et.batch_shape and ee.event_shape == et.event_shape
    v = _value(et, ())
    _close(ee.log_prob(ember.tensor(v.numpy())), et.log_prob(v), what="expanded log_prob")
    ember.manual_seed(3)
    torch.manual_seed(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _close(ee.sample((2,)), et.sample((2,)), what="expanded sample")


def test_wishart_warnings():
    cov = np.eye(3)
    with pytest.warns(UserWarning, match="Low df values detected"):
        ED.Wishart(ember.tensor(2.5), covariance_matrix=ember.tensor(cov))
    d = ED.Wishart(ember.tensor(5.0), covariance_matrix=ember.tensor(cov))
    with pytest.warns(UserWarning, match="Singular sample detected."):
        d.rsample((2,))


def _err(f):
    try:
        f()
    except Exception as e:   # noqa: BLE001  (the exception itself is what is compared)
        return type(e), str(e)
    return None


def _bad(name):
    """(the constructor call, the method call or None) for ember or torch (lib = ED or TD, tensor maker)."""
    def call(lib, T):
        eye, loc = T(np.eye(2)), T(np.zeros(2))
        return {
            "mvn_loc0": lambda: lib.MultivariateNormal(T(np.float64(0)), eye),
            "mvn_two": lambda: lib.MultivariateNormal(loc, eye, scale_tril=eye),
            "mvn_none": lambda: lib.MultivariateNormal(loc),
            "mvn_tril1d": lambda: lib.MultivariateNormal(loc, scale_tril=loc),
            "mvn_cov1d": lambda: lib.MultivariateNormal(loc, covariance_matrix=loc),
            "mvn_prec1d": lambda: lib.MultivariateNormal(loc, precision_matrix=loc),
            "mvn_notpd": lambda: lib.MultivariateNormal(loc, T(np.array([[1.0, 2.0], [2.0, 1.0]])),
                                                        validate_args=True),
            "mvn_value": lambda: lib.MultivariateNormal(loc, eye, validate_args=True).log_prob(T(np.zeros(3))),
            "lowrank_loc0": lambda: lib.LowRankMultivariateNormal(T(np.float64(0)), eye, loc),
            "lowrank_factor1d": lambda: lib.LowRankMultivariateNormal(loc, loc, loc),
            "lowrank_factor_shape": lambda: lib.LowRankMultivariateNormal(loc, T(np.ones((3, 1))), loc),
            "lowrank_diag_shape": lambda: lib.LowRankMultivariateNormal(loc, T(np.ones((2, 1))), T(np.ones(3))),
            "lowrank_batch": lambda: lib.LowRankMultivariateNormal(T(np.zeros((3, 2))), T(np.ones((4, 2, 1))),
                                                                   loc),
            "lowrank_diag_neg": lambda: lib.LowRankMultivariateNormal(loc, T(np.ones((2, 1))), T(np.array([1, -1.])),
                                                                      validate_args=True),
            "wishart_none": lambda: lib.Wishart(T(np.float64(3))),
            "wishart_1d": lambda: lib.Wishart(T(np.float64(3)), covariance_matrix=loc),
            "wishart_df": lambda: lib.Wishart(T(np.array([3.0, 0.5])), covariance_matrix=eye),
            "wishart_df_number": lambda: lib.Wishart(0.5, scale_tril=eye),
            "lkj_dim": lambda: lib.LKJCholesky(1, 1.0),
            "lkj_conc": lambda: lib.LKJCholesky(3, T(np.array([1.0, -1.0])), validate_args=True),
            "lkj_value": lambda: lib.LKJCholesky(2, 1.0, validate_args=True).log_prob(T(np.eye(2) * 2)),
            "studentt_df": lambda: lib.StudentT(T(np.array([1.0, -1.0])), validate_args=True),
            "vonmises_conc": lambda: lib.VonMises(loc, T(np.array([1.0, 0.0])), validate_args=True),
            "cbern_both": lambda: lib.ContinuousBernoulli(0.3, 0.1),
            "cbern_none": lambda: lib.ContinuousBernoulli(),
            "cbern_probs": lambda: lib.ContinuousBernoulli(T(np.array([0.3, 1.2])), validate_args=False),
            "cbern_value": lambda: lib.ContinuousBernoulli(0.3, validate_args=True).log_prob(T(np.array([1.5]))),
            "fisher_value": lambda: lib.FisherSnedecor(2.0, 3.0, validate_args=True).log_prob(T(np.array([-1.0]))),
            "fisher_df": lambda: lib.FisherSnedecor(T(np.array([2.0, 0.0])), 3.0, validate_args=True),
        }[name]
    return call


_BAD = ["mvn_loc0", "mvn_two", "mvn_none", "mvn_tril1d", "mvn_cov1d", "mvn_prec1d", "mvn_notpd", "mvn_value",
        "lowrank_loc0", "lowrank_factor1d", "lowrank_factor_shape", "lowrank_diag_shape", "lowrank_batch",
        "lowrank_diag_neg", "wishart_none", "wishart_1d", "wishart_df", "wishart_df_number", "lkj_dim", "lkj_conc",
        "lkj_value", "studentt_df", "vonmises_conc", "cbern_both", "cbern_none", "cbern_probs", "cbern_value",
        "fisher_value", "fisher_df"]


@pytest.mark.parametrize("name", _BAD)
def test_bad_input(name):
    call = _bad(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = _err(call(TD, torch.tensor))
        got = _err(call(ED, ember.tensor))
    assert want is not None
    assert got is not None and got[0] is want[0], (got, want)
    assert got[1] == _ember_words(want[1])


# ----- kl_divergence ------------------------------------------------------------------------------------------

def _kl_params(name: str, rng) -> dict:
    """Parameters (numpy; batch shape (3,)) of a distribution of class ``name`` for the KL pairs."""
    u = lambda lo, hi, *shape: rng.uniform(lo, hi, shape or (3,))   # noqa: E731
    return {
        "Bernoulli": lambda: {"probs": u(0.1, 0.9)},
        "Beta": lambda: {"concentration1": u(0.5, 3), "concentration0": u(0.5, 3)},
        "Binomial": lambda: {"total_count": np.array([5.0, 7.0, 9.0]), "probs": u(0.1, 0.9)},
        "Categorical": lambda: {"probs": u(0.1, 1, 3, 4)},
        "OneHotCategorical": lambda: {"probs": u(0.1, 1, 3, 4)},
        "ContinuousBernoulli": lambda: {"probs": np.array([0.2, 0.4996, 0.8])},
        "Dirichlet": lambda: {"concentration": u(0.5, 3, 3, 4)},
        "Exponential": lambda: {"rate": u(0.5, 2)},
        "Gamma": lambda: {"concentration": u(0.5, 3), "rate": u(0.5, 2)},
        "Geometric": lambda: {"probs": u(0.1, 0.9)},
        "Gumbel": lambda: {"loc": u(-1, 1), "scale": u(0.5, 2)},
        "HalfNormal": lambda: {"scale": u(0.5, 2)},
        "Laplace": lambda: {"loc": u(-1, 1), "scale": u(0.5, 2)},
        "Normal": lambda: {"loc": u(-1, 1), "scale": u(0.5, 2)},
        "Cauchy": lambda: {"loc": u(-1, 1), "scale": u(0.5, 2)},
        "Pareto": lambda: {"scale": u(0.5, 2), "alpha": np.array([0.8, 1.5, 3.0])},
        "Poisson": lambda: {"rate": u(0.5, 3)},
        "Uniform": lambda: {"low": u(0.05, 0.4), "high": u(0.6, 0.95)},
        "MultivariateNormal": lambda: {"loc": u(-1, 1, 3, 2), "scale_tril": np.linalg.cholesky(_spd(rng, (3,), 2))},
        "LowRankMultivariateNormal": lambda: {"loc": u(-1, 1, 3, 2), "cov_factor": u(-1, 1, 3, 2, 1),
                                              "cov_diag": u(0.5, 2, 3, 2)},
        "Wishart": lambda: {"df": u(3, 6), "scale_tril": np.linalg.cholesky(_spd(rng, (3,), 2))},
        "Independent": lambda: {"loc": u(-1, 1, 3, 2), "scale": u(0.5, 2, 3, 2)},
        "TransformedDistribution": lambda: {"loc": u(-1, 1), "scale": u(0.5, 2)},
    }[name]()


def _kl_dist(lib, name: str, params: dict):
    if name == "Independent":
        return lib.Independent(lib.Normal(params["loc"], params["scale"]), 1)
    if name == "TransformedDistribution":
        return lib.TransformedDistribution(lib.Normal(params["loc"], params["scale"]),
                                           [lib.transforms.ExpTransform()])
    return getattr(lib, name)(**params)


_KL_PAIRS = sorted((p.__name__, q.__name__) for p, q in TD.kl._KL_REGISTRY if p is not TD.ExponentialFamily)
_KL_PAIRS.append(("Wishart", "Wishart"))   # the ExponentialFamily pair: Bregman divergence of the log normaliser


def test_kl_registry_is_torchs():
    """Every pair torch registers is registered in ember, to a function of the same name."""
    want = {(p.__name__, q.__name__): f.__name__ for (p, q), f in TD.kl._KL_REGISTRY.items()}
    got = {(p.__name__, q.__name__): f.__name__ for (p, q), f in ED.kl._KL_REGISTRY.items()}
    assert got == want


@pytest.mark.parametrize("pair", _KL_PAIRS, ids="-".join)
def test_kl_pair(pair):
    rng = np.random.default_rng(zlib.crc32("-".join(pair).encode()))
    pp, qp = _kl_params(pair[0], rng), _kl_params(pair[1], rng)
    if pair == ("Binomial", "Binomial"):
        qp["total_count"] = np.array([5.0, 3.0, 9.0])    # q.total_count <= p.total_count, one infinite
    (pe, pt), (qe, qt) = _pairs(pp, grad=True), _pairs(qp, grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = TD.kl_divergence(_kl_dist(TD, pair[0], pt), _kl_dist(TD, pair[1], qt))
        got = ED.kl_divergence(_kl_dist(ED, pair[0], pe), _kl_dist(ED, pair[1], qe))
    _close(got, want, rtol=1e-10, what="kl")
    ie, it = _grad_inputs({**{"p" + k: v for k, v in pe.items()}, **{"q" + k: v for k, v in qe.items()}},
                          {**{"p" + k: v for k, v in pt.items()}, **{"q" + k: v for k, v in qt.items()}})
    if not want.requires_grad:
        assert not got.requires_grad
        return
    w = np.where(np.isfinite(_np(want)), 1.0, 0.0)
    gt = torch.autograd.grad((want * torch.tensor(w)).sum(), it, allow_unused=True)
    ge = ember.autograd.grad((got * ember.tensor(w)).sum(), ie, allow_unused=True)
    for a, b in zip(ge, gt):
        if b is None:
            assert a is None or not _np(a).any()
        else:
            _close(a, b, rtol=1e-9, what="kl grad")


def test_kl_not_implemented():
    loc, c = np.array([0.5]), np.array([2.0])
    for p, q in (("VonMises", "Normal"), ("StudentT", "StudentT"), ("Normal", "VonMises")):
        args = {"VonMises": (loc, c), "Normal": (loc, c), "StudentT": (c, loc, c)}
        want = _err(lambda: TD.kl_divergence(getattr(TD, p)(*map(torch.tensor, args[p])),
                                             getattr(TD, q)(*map(torch.tensor, args[q]))))
        got = _err(lambda: ED.kl_divergence(getattr(ED, p)(*map(ember.tensor, args[p])),
                                            getattr(ED, q)(*map(ember.tensor, args[q]))))
        assert want[0] is NotImplementedError and got == want
    # two exponential families of different types reach the Bregman pair, which refuses
    wish = {"df": np.array(4.0), "covariance_matrix": np.eye(2)}
    (we, wt), (ne, nt) = _pairs(wish), _pairs({"loc": loc, "scale": c})
    want = _err(lambda: TD.kl_divergence(TD.Wishart(**wt), TD.Normal(**nt)))
    got = _err(lambda: ED.kl_divergence(ED.Wishart(**we), ED.Normal(**ne)))
    assert want[0] is NotImplementedError and got == want
    # the Binomial pair refuses q.total_count > p.total_count
    (be, bt), (ce, ct) = _pairs({"total_count": 3.0, "probs": 0.5}), _pairs({"total_count": 5.0, "probs": 0.5})
    with pytest.raises(NotImplementedError, match="q.total_count > p.total_count"):
        TD.kl_divergence(TD.Binomial(**bt), TD.Binomial(**ct))
    with pytest.raises(NotImplementedError, match="q.total_count > p.total_count"):
        ED.kl_divergence(ED.Binomial(**be), ED.Binomial(**ce))


def _dispatch_case(lib, T):
    """A subclass picks its base's pair; two pairs of equal specificity warn and the left one wins."""
    class P(lib.Normal):
        pass

    class Q(lib.Normal):
        pass

    p, q = P(T([0.5]), T([1.5])), Q(T([0.0]), T([1.0]))
    out = [lib.kl_divergence(p, q)]
    left = lib.register_kl(P, lib.Normal)(lambda p, q: T([1.0]))
    lib.register_kl(lib.Normal, Q)(lambda p, q: T([2.0]))
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out.append(lib.kl_divergence(p, q))
            out.append(lib.kl_divergence(p, q))     # memoized: no second warning
        out.append([(x.category, str(x.message)) for x in w])
        out.append(lib.kl.kl_divergence(p, lib.Normal(T([0.0]), T([1.0]))))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out.append(lib.kl._dispatch_kl(P, Q) is left)
    finally:
        for key in ((P, lib.Normal), (lib.Normal, Q)):
            lib.kl._KL_REGISTRY.pop(key)
        lib.kl._KL_MEMOIZE.clear()
    return out


def test_kl_dispatch():
    want = _dispatch_case(TD, lambda v: torch.tensor(v, dtype=torch.float64))
    got = _dispatch_case(ED, lambda v: ember.tensor(v, dtype=ember.float64))
    for a, b in zip(got, want):
        if isinstance(b, torch.Tensor):
            _close(a, b)
        else:
            assert a == b
    assert want[3] == [(RuntimeWarning, "Ambiguous kl_divergence(P, Q). Please register_kl(P, Q)")]


def test_register_kl_type_error():
    want = _err(lambda: TD.register_kl(TD.Normal(0.0, 1.0), TD.Normal))
    got = _err(lambda: ED.register_kl(ED.Normal(0.0, 1.0), ED.Normal))
    assert want is not None and got == want


def test_kl_docstring_lists_pairs():
    rows = lambda doc: doc[doc.index("KL divergence is currently"):]   # noqa: E731
    assert rows(ED.kl_divergence.__doc__) == rows(TD.kl_divergence.__doc__)


@pytest.mark.parametrize("pair", [("MultivariateNormal", "MultivariateNormal"),
                                  ("MultivariateNormal", "LowRankMultivariateNormal"),
                                  ("LowRankMultivariateNormal", "MultivariateNormal"),
                                  ("LowRankMultivariateNormal", "LowRankMultivariateNormal")], ids="-".join)
def test_kl_mvn_broadcast(pair):
    """p and q of different batch shapes ((3,) and (2, 1)): the KL broadcasts, as torch's."""
    rng = np.random.default_rng(11)
    pp = _kl_params(pair[0], rng)
    qp = {k: v[:2][:, None] for k, v in _kl_params(pair[1], rng).items()}
    (pe, pt), (qe, qt) = _pairs(pp, grad=True), _pairs(qp, grad=True)
    want = TD.kl_divergence(getattr(TD, pair[0])(**pt), getattr(TD, pair[1])(**qt))
    got = ED.kl_divergence(getattr(ED, pair[0])(**pe), getattr(ED, pair[1])(**qe))
    _close(got, want, rtol=1e-10, what="kl")
    ie, it = _grad_inputs({**pe, **{"q" + k: v for k, v in qe.items()}}, {**pt, **{"q" + k: v for k, v in qt.items()}})
    for a, b in zip(ember.autograd.grad(got.sum(), ie), torch.autograd.grad(want.sum(), it)):
        _close(a, b, rtol=1e-9, what="kl grad")
    with pytest.raises(ValueError, match="different event shapes cannot be computed"):
        ED.kl_divergence(getattr(ED, pair[0])(**pe), ED.MultivariateNormal(ember.zeros(3), ember.eye(3)))
