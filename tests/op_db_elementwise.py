"""Op database entries of the 'elementwise' family (collected into op_db.OP_DB).

Domains keep central differences valid: inputs stay away from poles, kinks and jumps (open intervals for
asin/atanh/erfinv/logit, quotients away from integers for fmod/remainder/div rounding modes, fractional
parts away from 0 and 1 for floor/ceil/trunc/frac). Samples with nan/inf values are forward-only entries.
"""
from __future__ import annotations

import numpy as np

from op_db import (ALL, BINARY, FLOAT, INT, UNARY, OpInfo, Sample, XFail, binary, draw,  # noqa: F401
                   scalar_samples, unary)

SHORT = [((),), ((5,),), ((2, 1, 3),), ((0,),)]                 # fewer shapes for the many simple ops
SHORT_BINARY = [((), ()), ((3, 4), (4,)), ((3, 1), (1, 4)), ((2, 3), ()), ((0, 3), (3,))]


def _in(lo, hi, shapes=SHORT, kwargs=None):
    """Samples drawn uniformly from the open interval (lo, hi)."""
    def gen(rng):
        return [Sample((np.asarray(rng.uniform(lo, hi, s[0])),), dict(kwargs or {})) for s in shapes]
    return gen


def _frac_domain(shapes=SHORT, scale=1.0, kwargs=None):
    """k + u with u in (0.15, 0.85): away from the jumps of floor/ceil/trunc/frac (scaled for round(d))."""
    def gen(rng):
        return [Sample((np.asarray((rng.integers(-3, 4, s[0]) + rng.uniform(0.15, 0.85, s[0])) * scale),),
                       dict(kwargs or {})) for s in shapes]
    return gen


def _round_domain(decimals):
    # round(x, d) jumps where x * 10^d is k + 1/2: draw x * 10^d = k + u, u in (-0.35, 0.35).
    def gen(rng):
        return [Sample((np.asarray((rng.integers(-3, 4, s[0]) + rng.uniform(-0.35, 0.35, s[0])) * 10.0 ** -decimals),),
                       {"decimals": decimals}) for s in SHORT]
    return gen


_QUOT_SHAPES = [((), ()), ((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 3), ()), ((0, 3), (3,)), ((2, 1, 3), (1, 3))]


def _quotient_samples(rng, kwargs=None):
    """(a, b) with a / b = k + u, u in (0.15, 0.85): away from the jumps of floor/trunc(a / b)."""
    out = []
    for sa, sb in _QUOT_SHAPES:
        b = np.asarray(rng.choice([-1.0, 1.0], sb) * rng.uniform(0.5, 2.0, sb))
        a = np.broadcast_to(b, sa) * (rng.integers(-3, 3, sa) + rng.uniform(0.15, 0.85, sa))
        out.append(Sample((np.array(a), b), dict(kwargs or {})))
    return out


def _quotient_scalar_samples(rng):
    out = []
    for s in [(), (5,), (2, 3), (0,)]:
        for d in (1.5, -2.0):
            a = d * (rng.integers(-3, 3, s) + rng.uniform(0.15, 0.85, s))
            out.append(Sample((np.array(a, dtype=np.float64),), {"s": d}))
    return out


def _special_values(rng):
    vals = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.5, 1e308])
    return [Sample((vals,)), Sample((vals.reshape(2, 4),)), Sample((np.zeros((0,)),))]


def _grid3(rng):
    # -1, 0, 1: heaviside's three cases
    return [Sample((np.asarray(rng.integers(-1, 2, sa), dtype=np.float64), np.asarray(rng.uniform(-2, 2, sb))))
            for sa, sb in [((3, 4), (3, 4)), ((3, 4), (4,)), ((), ()), ((0,), (1,))]]


def _gamma_grad_samples(rng):
    # concentrations and Gamma samples through the three regimes: x < 0.8 (series), alpha > 8 (saddle point,
    # inside and outside 10% of alpha), else the rational approximation
    a = np.array([[0.3, 2.0, 5.0, 9.0], [12.0, 20.0, 0.9, 7.5], [30.0, 50.0, 1.5, 100.0]])
    x = np.array([[0.1, 0.5, 3.0, 9.2], [8.0, 25.0, 1.7, 6.0], [31.0, 45.0, 0.79, 104.0]])
    return [Sample((a, x)), Sample((a, rng.uniform(0.05, 2, (4,)))), Sample((np.array(4.0), np.array(3.5))),
            Sample((np.ones((0,)), np.ones((0,))))]


def _dirichlet_grad_samples(rng):
    # Beta(alpha, total - alpha) samples x through the four regimes: near 0, near 1, alpha and beta > 6, the rest
    x = np.array([[0.01, 0.3, 0.5, 0.99], [0.45, 0.6, 0.98, 0.2], [0.5, 0.7, 0.05, 0.35]])
    alpha = np.array([[0.5, 2.0, 8.0, 3.0], [10.0, 12.0, 1.5, 0.8], [20.0, 9.0, 0.3, 4.0]])
    total = alpha + np.array([[1.0, 3.0, 9.0, 0.2], [12.0, 7.5, 0.1, 4.0], [20.0, 4.0, 2.0, 7.0]])
    return [Sample((x, alpha, total)), Sample((x[0], alpha, total)),
            Sample((np.array(0.4), np.array(2.0), np.array(5.0))),
            Sample((np.ones((0,)) / 2, np.ones((0,)), np.ones((0,)) * 2))]


def _standard_gamma(m, a, seed=0):
    m.manual_seed(seed)   # the same draws in torch and ember (ember reproduces torch's generator)
    return m._standard_gamma(a)


_GAMMA_REPARAM = "the implicit reparameterisation gradient (_standard_gamma_grad) is not the derivative of the " \
                 "sampler at a fixed seed, which central differences measure"


def _standard_gamma_samples(rng):
    # concentrations below 1 (boosted), near 1 and large
    return [Sample((np.array([[0.3, 0.9, 1.0, 2.5], [4.0, 7.5, 0.05, 12.0]]),)),
            Sample((rng.uniform(0.2, 5, (5,)),), {"seed": 3}), Sample((np.array(1.7),)), Sample((np.ones((0, 2)),))]


def _cond_samples(rng):
    return [Sample((np.asarray(rng.uniform(-2, 2, s)),)) for s in [(3, 4), (), (0, 2)]]


def _nograd(name, op, samples, domain="real", dtypes=ALL, **kw):
    return OpInfo(name, op, samples, domain, dtypes, supports_grad=False, supports_gradgrad=False,
                  supports_fwd=False, **kw)


# ----- unary ops (name, call, domain: an op_db domain or a sample generator) ------------------------------------

_UNARY = [
    ("exp2", lambda m, a: m.exp2(a), "real"),
    ("expm1", lambda m, a: a.expm1(), "real"),
    ("log2", lambda m, a: m.log2(a), "positive"),
    ("log10", lambda m, a: a.log10(), "positive"),
    ("log1p", lambda m, a: m.log1p(a), _in(-0.8, 2.0)),
    ("rsqrt", lambda m, a: m.rsqrt(a), "positive"),
    ("reciprocal", lambda m, a: a.reciprocal(), "nonzero"),
    ("square", lambda m, a: m.square(a), "real"),
    ("tan", lambda m, a: m.tan(a), _in(-1.2, 1.2)),
    ("asin", lambda m, a: m.asin(a), _in(-0.9, 0.9)),
    ("acos", lambda m, a: a.acos(), _in(-0.9, 0.9)),
    ("atan", lambda m, a: m.atan(a), "real"),
    ("sinh", lambda m, a: m.sinh(a), "real"),
    ("cosh", lambda m, a: a.cosh(), "real"),
    ("asinh", lambda m, a: m.asinh(a), "real"),
    ("acosh", lambda m, a: m.acosh(a), _in(1.2, 3.0)),
    ("atanh", lambda m, a: a.atanh(), _in(-0.9, 0.9)),
    ("erf", lambda m, a: m.erf(a), "real"),
    ("erfc", lambda m, a: a.erfc(), "real"),
    ("erfinv", lambda m, a: m.erfinv(a), _in(-0.9, 0.9)),
    ("lgamma", lambda m, a: m.lgamma(a), _in(0.3, 4.0)),
    ("lgamma_neg", lambda m, a: a.lgamma(), _in(-2.9, -2.1)),
    ("digamma", lambda m, a: m.digamma(a), _in(0.3, 4.0)),
    ("digamma_neg", lambda m, a: m.digamma(a), _in(-1.8, -1.2)),
    ("sinc", lambda m, a: m.sinc(a), "real"),
    ("sgn", lambda m, a: m.sgn(a), "nonzero"),
    ("deg2rad", lambda m, a: m.deg2rad(a), "real"),
    ("rad2deg", lambda m, a: a.rad2deg(), "real"),
    ("floor", lambda m, a: m.floor(a), _frac_domain()),
    ("ceil", lambda m, a: a.ceil(), _frac_domain()),
    ("trunc", lambda m, a: m.trunc(a), _frac_domain()),
    ("fix", lambda m, a: a.fix(), _frac_domain()),
    ("frac", lambda m, a: m.frac(a), _frac_domain()),
    ("logit", lambda m, a: m.logit(a), _in(0.05, 0.95)),
    ("nan_to_num", lambda m, a: m.nan_to_num(a), "real"),
]

OPS: list = []
for _name, _op, _dom in _UNARY:
    if callable(_dom):
        OPS.append(OpInfo(_name, _op, _dom, dtypes=ALL))
    else:
        OPS.append(OpInfo(_name, _op, UNARY if _name in ("erf", "lgamma") else SHORT, _dom, dtypes=ALL))

# In-place variants on a non-leaf clone; integral inputs of float ops raise as in PyTorch.
# asinh_/acosh_/atanh_ have no derivative in PyTorch (their backward raises): forward only.
OPS += [_nograd(n + "_", (lambda n: lambda m, a: getattr(a * 1, n + "_")())(n), d, dtypes=FLOAT + ("int64",))
        for n, d in [("asinh", SHORT), ("acosh", _in(1.2, 3.0)), ("atanh", _in(-0.9, 0.9))]]
_INPLACE = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal", "square", "sin",
            "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "sigmoid", "erf",
            "erfc", "erfinv", "lgamma", "digamma", "sinc", "sgn", "sign", "abs", "neg", "deg2rad", "rad2deg", "floor",
            "ceil", "trunc", "frac", "round", "logit", "nan_to_num", "relu"]
_DOMAIN_OF = {n: d for n, _, d in _UNARY}
_DOMAIN_OF.update({"log": "positive", "sqrt": "positive", "abs": "nonzero", "sign": "nonzero", "relu": "nonzero",
                   "round": "round"})
for _name in _INPLACE:
    _dom = _DOMAIN_OF.get(_name, "real")
    _shapes = [((3, 4),), ((),)]
    _call = (lambda n: lambda m, a: getattr(a * 1, n + "_")())(_name)
    if callable(_dom):
        OPS.append(OpInfo(_name + "_", _call, _dom if _name not in ("floor", "ceil", "trunc", "frac")
                          else _frac_domain(_shapes), dtypes=FLOAT + ("int64",)))
    else:
        OPS.append(OpInfo(_name + "_", _call, _shapes, _dom, dtypes=FLOAT + ("int64",)))

OPS += [
    OpInfo("round_decimals", lambda m, a, decimals: m.round(a, decimals=decimals), _round_domain(1), dtypes=ALL),
    OpInfo("round_decimals_neg", lambda m, a, decimals: a.round(decimals=decimals), _round_domain(-1), dtypes=FLOAT),
    OpInfo("round_decimals_", lambda m, a, decimals: (a * 1).round_(decimals=decimals), _round_domain(2)),
    OpInfo("logit_eps", lambda m, a, eps: m.logit(a, eps),
           lambda rng: [Sample((np.array([0.05, 0.1, 0.3, 0.5, 0.7, 0.9, 0.95]),), {"eps": 0.2}),
                        Sample((rng.uniform(0.25, 0.75, (2, 3)),), {"eps": 0.2}),
                        Sample((np.array([0.1, 0.5]),), {"eps": -1.0})]),
    OpInfo("logit_eps_", lambda m, a, eps: (a * 1).logit_(eps), _in(0.3, 0.7, [((3,),)], {"eps": 0.1})),
    OpInfo("polygamma", lambda m, a, n: m.polygamma(n, a), [(s, {"n": n}) for n in (0, 1, 2, 3) for s in SHORT[:3]],
           "positive", dtypes=ALL),
    OpInfo("polygamma_method", lambda m, a, n: a.polygamma(n), _in(-1.8, -1.2, SHORT[:2], {"n": 1})),
    OpInfo("polygamma_", lambda m, a, n: (a * 1).polygamma_(n), _in(0.5, 3.0, [((3,),)], {"n": 2})),
    OpInfo("nan_to_num_kw", lambda m, a: m.nan_to_num(a * 2, nan=1.5, posinf=3.0, neginf=-4.0), SHORT[:2]),
    _nograd("nan_to_num_values", lambda m, a: m.nan_to_num(a, nan=1.5, posinf=3.0, neginf=-4.0), _special_values),
    _nograd("nan_to_num_default", lambda m, a: a.nan_to_num(), _special_values, dtypes=("float32", "float64")),
    _nograd("special_values_unary", lambda m, a: (m.erf(a), m.erfc(a), m.erfinv(a), m.lgamma(a), m.digamma(a),
                                                  m.polygamma(1, a), m.polygamma(2, a), m.sinc(a), m.logit(a),
                                                  m.rsqrt(a), m.reciprocal(a), m.frac(a), m.sgn(a)),
            _special_values, dtypes=FLOAT),
    _nograd("predicates", lambda m, a: (m.isnan(a), m.isinf(a), a.isfinite(), m.isposinf(a), a.isneginf(),
                                        m.isreal(a), m.signbit(a)), _special_values),
    _nograd("logical_not", lambda m, a: (m.logical_not(a), (a * 1).logical_not_()), SHORT),
    # every alias and ember.special name, once (the aliases are the same functions)
    OpInfo("aliases", lambda m, a: (m.arcsin(a), m.arccos(a), a.arctan(), m.arcsinh(a), a.arctanh(),
                                    m.arccosh(a + 2), m.absolute(a), a.negative(), m.fix(a), m.clip(a, -0.5, 0.5),
                                    m.arctan2(a, a + 2), m.true_divide(a, 2), m.divide(a, 3), m.subtract(a, 1),
                                    m.multiply(a, 2), m.special.expit(a), m.special.erf(a), m.special.erfc(a),
                                    m.special.erfinv(a), m.special.gammaln(a + 2), m.special.digamma(a + 2),
                                    m.special.psi(a + 2), m.special.polygamma(1, a + 2), m.special.exp2(a),
                                    m.special.expm1(a), m.special.log1p(a), m.special.sinc(a),
                                    m.special.logit(a + 0.5), m.special.round(a), m.special.xlogy(a, a + 2)),
           lambda rng: [Sample((np.asarray(rng.uniform(-0.45, 0.45, s)),)) for s in [(2, 3), ()]]),
    _nograd("alias_inplace_nograd", lambda m, a: ((a * 1).arcsinh_(), (a * 1).arctanh_(), (a + 2).arccosh_(),
                                                  m.arcsinh_(a * 1), m.asinh_(a * 1)),
            lambda rng: [Sample((rng.uniform(-0.45, 0.45, (3,)),))], dtypes=FLOAT),
    OpInfo("alias_inplace", lambda m, a: ((a * 1).arcsin_(), (a * 1).arccos_(), (a * 1).arctan_(),
                                          (a * 1).absolute_(), (a * 1).negative_(), (a * 1).fix_(),
                                          (a * 1).clip_(-0.2, 0.2), (a * 1).subtract_(1), (a * 1).multiply_(2),
                                          (a * 1).divide_(2), (a * 1).true_divide_(4), (a * 1).arctan2_(a + 2),
                                          m.exp_(a * 1), m.arcsin_(a * 1), m.negative_(a * 1)),
           lambda rng: [Sample((rng.uniform(-0.45, 0.45, (3,)),))]),
]

# ----- binary math --------------------------------------------------------------------------------------------

OPS += [
    binary("atan2", lambda m, a, b: m.atan2(a, b), ("nonzero", "real"), shapes=SHORT_BINARY + [((3, 4), (3, 4))]),
    binary("hypot", lambda m, a, b: m.hypot(a, b), ("nonzero", "nonzero"), shapes=SHORT_BINARY),
    binary("logaddexp", lambda m, a, b: m.logaddexp(a, b), shapes=SHORT_BINARY),
    binary("logaddexp2", lambda m, a, b: a.logaddexp2(b), shapes=SHORT_BINARY),
    binary("xlogy", lambda m, a, b: m.xlogy(a, b), ("real", "positive"), shapes=SHORT_BINARY),
    OpInfo("xlogy_scalar", lambda m, a, s: m.xlogy(a, s), scalar_samples(SHORT, s=[2.5, 3]), dtypes=ALL),
    OpInfo("xlogy_rscalar", lambda m, b, s: m.xlogy(s, b), scalar_samples(SHORT, s=[2.5, 0.0]), "positive",
           dtypes=ALL),
    binary("xlogy_", lambda m, a, b: (a * 1).xlogy_(b), ("real", "positive"), shapes=[((3, 4), (4,)), ((), ())],
           dtypes=FLOAT),
    binary("copysign", lambda m, a, b: m.copysign(a, b), ("nonzero", "nonzero"), shapes=SHORT_BINARY),
    OpInfo("copysign_scalar", lambda m, a, s: a.copysign(s), scalar_samples(SHORT, s=[-1.0, 2]), "nonzero",
           dtypes=ALL),
    binary("copysign_", lambda m, a, b: (a * 1).copysign_(b), "nonzero", shapes=[((3, 4), (4,))], dtypes=FLOAT),
    binary("fmax", lambda m, a, b: m.fmax(a, b), ("grid_a", "grid_b"), shapes=SHORT_BINARY),
    binary("fmin", lambda m, a, b: a.fmin(b), ("grid_a", "grid_b"), shapes=SHORT_BINARY),
    _nograd("fmax_nan", lambda m, a, b: (m.fmax(a, b), m.fmin(a, b), m.maximum(a, b), m.minimum(a, b)),
            lambda rng: [Sample((np.array([np.nan, 1.0, np.nan, -np.inf]), np.array([2.0, np.nan, np.nan, 0.0])))],
            dtypes=FLOAT),
    binary("heaviside", lambda m, a, b: m.heaviside(a, b), shapes=SHORT_BINARY, supports_grad=False,
           supports_gradgrad=False, supports_fwd=False),
    OpInfo("heaviside_zeros", lambda m, a, b: a.heaviside(b), _grid3, dtypes=ALL, supports_grad=False,
           supports_gradgrad=False, supports_fwd=False),
    OpInfo("heaviside_", lambda m, a, b: (a * 1).heaviside_(b), _grid3, supports_grad=False, supports_gradgrad=False,
           supports_fwd=False),
    _nograd("_standard_gamma_grad", lambda m, a, x: m._standard_gamma_grad(a, x), _gamma_grad_samples,
            dtypes=FLOAT),
    _nograd("_dirichlet_grad", lambda m, x, a, t: m._dirichlet_grad(x, a, t), _dirichlet_grad_samples, dtypes=FLOAT),
    OpInfo("_standard_gamma", _standard_gamma, _standard_gamma_samples, dtypes=FLOAT, supports_gradgrad=False,
           supports_fwd=False, xfails=tuple(XFail("gradcheck", _GAMMA_REPARAM, f"{i}:") for i in range(3))),
    OpInfo("hypot_", lambda m, a, b: (a * 1).hypot_(b), [((3, 4), (4,))], "nonzero"),
    # lerp: scalar and tensor weight
    OpInfo("lerp", lambda m, a, b, w: m.lerp(a, b, w),
           [(s, {"w": w}) for w in (0.3, 0.8, 1.5) for s in [((), ()), ((3, 4), (4,)), ((2, 1), (1, 3))]],
           dtypes=ALL),
    binary("lerp_tensor", lambda m, a, b: m.lerp(a, b, a * b), shapes=SHORT_BINARY, dtypes=FLOAT),
    OpInfo("lerp_tensor3", lambda m, a, b, w: a.lerp(b, w),
           [((3, 4), (4,), (3, 1)), ((), (), ()), ((2, 3), (), (3,))], dtypes=ALL),
    OpInfo("lerp_", lambda m, a, b, w: (a * 1).lerp_(b, w), [((3, 4), (4,), (3, 1))]),
    OpInfo("lerp_scalar_", lambda m, a, b, w: (a * 1).lerp_(b, w), [(((3, 4), (4,)), {"w": 0.7})]),
    # addcmul / addcdiv
    OpInfo("addcmul", lambda m, a, b, c, **kw: m.addcmul(a, b, c, **kw),
           [(s, kw) for kw in ({}, {"value": 0.5}) for s in [((3, 4), (4,), (3, 1)), ((), (), ()), ((2, 3), (3,), ())]]
           + [(((2, 3), (2, 3), (2, 3)), {"value": 2})], dtypes=ALL),
    OpInfo("addcdiv", lambda m, a, b, c, **kw: a.addcdiv(b, c, **kw),
           [(s, kw) for kw in ({}, {"value": -0.5}) for s in [((3, 4), (4,), (3, 1)), ((), (), ()), ((2, 3), (3,), ())]],
           ("real", "real", "nonzero"), dtypes=ALL),
    OpInfo("addcmul_", lambda m, a, b, c: (a * 1).addcmul_(b, c, value=3), [((3, 4), (4,), (3, 1))]),
    OpInfo("addcdiv_", lambda m, a, b, c: (a * 1).addcdiv_(b, c), [((3, 4), (4,), (3, 1))], ("real", "real", "nonzero")),
    # float_power: double precision whatever the inputs
    binary("float_power", lambda m, a, b: m.float_power(a, b), ("positive", "real"), shapes=SHORT_BINARY),
    OpInfo("float_power_scalar", lambda m, a, p: a.float_power(p), scalar_samples(SHORT, p=[2, 0.5]), "positive",
           dtypes=ALL),
    OpInfo("float_power_rscalar", lambda m, a, s: m.float_power(s, a), scalar_samples(SHORT, s=[2.0, 3]),
           dtypes=ALL),
    OpInfo("float_power_", lambda m, a, p: (a * 1).double().float_power_(p), scalar_samples(SHORT[:2], p=[2.5]),
           "positive"),
    OpInfo("float_power_float_", lambda m, a, p: (a * 1).float_power_(p), scalar_samples(SHORT[:1], p=[2.5]),
           "positive"),
]

# ----- division variants, remainder, fmod ---------------------------------------------------------------------

OPS += [
    OpInfo("div_trunc", lambda m, a, b: m.div(a, b, rounding_mode="trunc"), _quotient_samples, dtypes=ALL),
    OpInfo("div_floor", lambda m, a, b: a.div(b, rounding_mode="floor"), _quotient_samples, dtypes=ALL),
    OpInfo("div_mode_scalar", lambda m, a, s: m.div(a, s, rounding_mode="trunc"), _quotient_scalar_samples,
           dtypes=ALL),
    OpInfo("div_floor_", lambda m, a, b: (a * 1).div_(b, rounding_mode="floor"), _quotient_samples, dtypes=FLOAT),
    OpInfo("true_divide", lambda m, a, b: m.true_divide(a, b), [((3, 4), (4,)), ((), ())], ("real", "nonzero"),
           dtypes=ALL),
    OpInfo("remainder", lambda m, a, b: m.remainder(a, b), _quotient_samples, dtypes=ALL),
    OpInfo("mod", lambda m, a, b: a % b, _quotient_samples, dtypes=FLOAT),
    OpInfo("remainder_scalar", lambda m, a, s: a % s, _quotient_scalar_samples, dtypes=ALL),
    OpInfo("rremainder_scalar", lambda m, a, s: s % a, scalar_samples(SHORT, s=[2.5, 3]), "nonzero",
           dtypes=ALL, supports_grad=False, supports_gradgrad=False, supports_fwd=False),
    OpInfo("remainder_", lambda m, a, b: (a * 1).remainder_(b), _quotient_samples),
    OpInfo("imod", lambda m, a, s: _iop(a * 1, s, "__imod__"), _quotient_scalar_samples),
    OpInfo("fmod", lambda m, a, b: m.fmod(a, b), _quotient_samples, dtypes=ALL),
    OpInfo("fmod_scalar", lambda m, a, s: a.fmod(s), _quotient_scalar_samples, dtypes=ALL),
    OpInfo("fmod_", lambda m, a, b: (a * 1).fmod_(b), _quotient_samples),
    binary("floor_divide", lambda m, a, b: m.floor_divide(a, b), ("real", "nonzero"), shapes=SHORT_BINARY,
           supports_grad=False, supports_gradgrad=False, supports_fwd=False),
    OpInfo("floordiv_ops", lambda m, a, s: (a // s, s // a, _iop(a * 1, s, "__ifloordiv__"), (a * 1).floor_divide_(s)),
           scalar_samples(SHORT, s=[2, -1.5]), "nonzero", supports_grad=False, supports_gradgrad=False,
           supports_fwd=False, dtypes=ALL),
]


def _iop(a, b, name):
    return getattr(a, name)(b)


def _int(m, a):
    """Float inputs (as the coverage run passes them) as int64; integral and bool inputs as they are."""
    return a.to(m.int64) if a.is_floating_point() else a


def _bitwise_all(m, a, b):
    return (a & b, a | b, a ^ b, ~a, m.bitwise_and(a, b), a.bitwise_or(b), m.bitwise_xor(a, b), m.bitwise_not(a),
            a.bitwise_and(b), m.bitwise_or(a, b), a.bitwise_xor(b), a.bitwise_not())


def _bitwise_scalar(a, s):
    return (a & s, s | a, a ^ s, s ^ a, s & a, a | s)


def _bitwise_inplace(a, b):
    return (_iop(a * 1, b, "__iand__"), _iop(a * 1, b, "__ior__"), _iop(a * 1, b, "__ixor__"),
            (a * 1).bitwise_and_(b), (a * 1).bitwise_or_(b), (a * 1).bitwise_xor_(b), (a * 1).bitwise_not_())


def _shifts(m, a, b):
    return (a << b, a >> b, m.bitwise_left_shift(a, b), a.bitwise_right_shift(b), a.bitwise_left_shift(b),
            m.bitwise_right_shift(a, b))


def _shifts_scalar(m, a, s):
    return (a << s, a >> s, s << a, s >> a, m.bitwise_left_shift(s, a))


def _shifts_inplace(a, s):
    return (_iop(a * 1, s, "__ilshift__"), _iop(a * 1, s, "__irshift__"), (a * 1).bitwise_left_shift_(s),
            (a * 1).bitwise_right_shift_(s))


# ----- integer wrap-around and scalar operands --------------------------------------------------------------------

_BIG = [2 ** 40, -2 ** 33, 2 ** 63, 300]
OPS += [
    _nograd("int_scalar_wrap", lambda m, a, s: (a + s, a - s, a * s, a == s, a & s),
            scalar_samples(SHORT[:2], s=_BIG), dtypes=("int32", "int64", "bool", "float32")),
    _nograd("int_scalar_wrap_refused", lambda m, a, s: a.clamp(0, s), scalar_samples(SHORT[:1], s=[2 ** 40, 2 ** 64]),
            dtypes=("int32", "int64", "float32")),
    _nograd("int8_wrap", lambda m, a, s: (a.to(m.int8) + s, a.to(m.uint8) * s, a.to(m.int16) - s),
            scalar_samples(SHORT[:2], s=[300, -200, 70000]), dtypes=INT),
    OpInfo("add_scalar_input", lambda m, a, s: (m.add(s, a), m.mul(s, a)), scalar_samples(SHORT, s=[2.5, 3]),
           dtypes=ALL),
    OpInfo("rsub_fn", lambda m, a, b: m.rsub(a, b, alpha=2), [((3, 4), (4,)), ((), ())], dtypes=FLOAT + INT),
    OpInfo("rsub_fn_plain", lambda m, a, b: m.rsub(a, b), [((3, 4), (4,)), ((4,), (3, 4)), ((), ())], dtypes=FLOAT + INT),
    # alpha=: one primitive, a + alpha*b rounded once (PyTorch's fused multiply-add)
    OpInfo("add_alpha", lambda m, a, b, **kw: m.add(a, b, **kw),
           [(s, {"alpha": al}) for al in (0.3, -1.7) for s in [((3, 4), (3, 4)), ((3, 4), (4,)), ((), ()), ((2, 1), (1, 3))]]
           + [(((3, 4), (3, 4)), {"alpha": 3})], dtypes=FLOAT),
    OpInfo("sub_alpha", lambda m, a, b, **kw: a.sub(b, **kw),
           [(s, {"alpha": al}) for al in (0.3, 2) for s in [((3, 4), (3, 4)), ((3, 4), (4,)), ((), ())]], dtypes=FLOAT),
    OpInfo("add_alpha_int", lambda m, a, b: (a.add(b, alpha=3), a.sub(b, alpha=-2)), [((3, 4), (3, 4)), ((3, 4), (4,))],
           dtypes=FLOAT + INT),
    OpInfo("add_alpha_number", lambda m, a, **kw: (a.add(0.7, **kw), m.sub(a, 2, **kw)),
           scalar_samples(SHORT[:2], alpha=[0.3, 3])),
    OpInfo("add_alpha_", lambda m, a, b: (a * 1).add_(b, alpha=0.3), [((3, 4), (3, 4)), ((3, 4), (4,)), ((), ())]),
    OpInfo("sub_alpha_", lambda m, a, b: (a * 1).sub_(b, alpha=-2.5), [((3, 4), (3, 4)), ((3, 4), (4,)), ((), ())]),
]

# ----- where, clamp variants -------------------------------------------------------------------------------------

OPS += [
    _nograd("where_scalars", lambda m, a: (m.where(a > 0, 1, 0), m.where(a > 0, 1.0, 0), m.where(a > 0, True, False),
                                           m.where(a > 0, 2.5, -1.5)), _cond_samples),
    OpInfo("where_lscalar", lambda m, a, cond: m.where(m.tensor(cond), 0.5, a),
           lambda rng: [Sample((np.asarray(rng.uniform(-2, 2, s)),), {"cond": rng.random(c) > 0.5})
                        for s, c in [((3, 4), (3, 4)), ((4,), (3, 4)), ((), ())]], dtypes=ALL),
    OpInfo("where_method", lambda m, a, b: a.where(a > 0, b), [((3, 4), (4,)), ((), ())], dtypes=ALL),
    OpInfo("clamp_min", lambda m, a, v: m.clamp_min(a, v), scalar_samples(SHORT, v=[-0.5, 1]), "clamp",
           dtypes=ALL),
    OpInfo("clamp_max", lambda m, a, v: a.clamp_max(v), scalar_samples(SHORT, v=[0.8, 0]), "clamp", dtypes=ALL),
    OpInfo("clamp_min_tensor", lambda m, a, b: a.clamp_min(b), [((3, 4), (4,)), ((), ()), ((3, 4), (3, 4))],
           ("grid_a", "grid_b")),
    OpInfo("clamp_max_tensor", lambda m, a, b: m.clamp_max(a, b), [((3, 4), (4,)), ((), ())], ("grid_a", "grid_b")),
    OpInfo("clamp_min_", lambda m, a, v: (a * 1).clamp_min_(v), scalar_samples(SHORT[:2], v=[-0.5]), "clamp"),
    OpInfo("clamp_max_", lambda m, a, b: (a * 1).clamp_max_(b), [((3, 4), (4,))], ("grid_a", "grid_b")),
    OpInfo("clamp_module_", lambda m, a: (m.clamp_(a * 1, -0.5, 0.8), m.clamp_min_(a * 1, -0.5),
                                          m.clamp_max_(a * 1, 0.8), m.clip_(a * 1, -0.5, 0.8)), SHORT[:2], "clamp"),
]

# ----- comparisons, logic, bitwise (no gradient) ----------------------------------------------------------------------

_CMP = lambda m, a, b: (a == b, a != b, a < b, a <= b, a > b, a >= b)  # noqa: E731
OPS += [
    _nograd("compare", _CMP, SHORT_BINARY + [((3, 4), (3, 4))], ("grid_a", "grid_a")),
    _nograd("compare_fn", lambda m, a, b: (m.eq(a, b), m.ne(a, b), m.lt(a, b), m.le(a, b), m.gt(a, b), m.ge(a, b),
                                           m.greater(a, b), m.greater_equal(a, b), m.less(a, b), m.less_equal(a, b),
                                           m.not_equal(a, b)), SHORT_BINARY, ("grid_a", "grid_a")),
    _nograd("compare_scalar", lambda m, a, s: _CMP(m, a, s) + (s == a, s < a, m.eq(a, s), a.ge(s)),
            scalar_samples(SHORT, s=[0.5, 1, True]), "grid_a"),
    _nograd("compare_inplace", lambda m, a, b: ((a * 1).eq_(b), (a * 1).ne_(b), (a * 1).lt_(b), (a * 1).le_(b),
                                                (a * 1).gt_(b), (a * 1).ge_(b), (a * 1).greater_(b),
                                                (a * 1).greater_equal_(b), (a * 1).less_(b), (a * 1).less_equal_(b),
                                                (a * 1).not_equal_(b)),
            [((3, 4), (4,)), ((), ())], ("grid_a", "grid_a")),
    _nograd("logical", lambda m, a, b: (m.logical_and(a, b), m.logical_or(a, b), a.logical_xor(b)), SHORT_BINARY),
    _nograd("logical_", lambda m, a, b: ((a * 1).logical_and_(b), (a * 1).logical_or_(b), (a * 1).logical_xor_(b)),
            [((3, 4), (4,))]),
    _nograd("bitwise", lambda m, a, b: _bitwise_all(m, _int(m, a), _int(m, b)), SHORT_BINARY, dtypes=INT + ("bool",)),
    _nograd("bitwise_float", lambda m, a, b: a & b, SHORT_BINARY[:2], dtypes=FLOAT + ("float16",)),
    _nograd("bitwise_not_float", lambda m, a: ~a, SHORT[:2], dtypes=FLOAT),
    _nograd("shift_float", lambda m, a, b: a << b, SHORT_BINARY[:2], dtypes=FLOAT + ("bool",)),
    _nograd("bitwise_scalar", lambda m, a, s: _bitwise_scalar(_int(m, a), s), scalar_samples(SHORT, s=[3, True]),
            dtypes=INT + ("bool",)),
    _nograd("bitwise_", lambda m, a, b: _bitwise_inplace(_int(m, a), _int(m, b)), [((3, 4), (4,))],
            dtypes=("int64", "int32", "bool")),
    _nograd("shift", lambda m, a, b: _shifts(m, _int(m, a), _int(m, b)),
            lambda rng: [Sample((np.asarray(rng.integers(-20, 20, sa), dtype=np.float64),
                                 np.asarray(rng.integers(-2, 70, sb), dtype=np.float64)))
                         for sa, sb in [((3, 4), (4,)), ((), ()), ((6,), (6,))]], dtypes=INT),
    _nograd("shift_scalar", lambda m, a, s: _shifts_scalar(m, _int(m, a), s),
            lambda rng: [Sample((np.asarray(rng.integers(0, 10, (5,)), dtype=np.float64),), {"s": s})
                         for s in (1, 3, 70)], dtypes=INT),
    _nograd("shift_", lambda m, a, s: _shifts_inplace(_int(m, a), s), scalar_samples(SHORT[:2], s=[2]),
            dtypes=("int64", "int32")),
    _nograd("isclose", lambda m, a, b: (m.isclose(a, b), a.isclose(b, rtol=0.1, atol=0.5),
                                        m.isclose(a, b, equal_nan=True), m.tensor(m.allclose(a, b)),
                                        m.tensor(a.allclose(b, 0.5, 1.0)), m.tensor(m.equal(a, b)),
                                        m.tensor(a.equal(a))), SHORT_BINARY),
    _nograd("isclose_nan", lambda m, a, b: (m.isclose(a, b), m.isclose(a, b, equal_nan=True)),
            lambda rng: [Sample((np.array([np.nan, 1.0, np.inf, -np.inf, 1.0]),
                                 np.array([np.nan, 1.0 + 1e-9, np.inf, np.inf, np.nan])))], dtypes=FLOAT),
]

# ----- operators and in-place operators ---------------------------------------------------------------------------------

OPS += [
    OpInfo("unary_operators", lambda m, a: (+a, abs(a), -a), SHORT, "nonzero", dtypes=FLOAT + INT),
    binary("inplace_operators", lambda m, a, b: (_iop(a * 1, b, "__iadd__"), _iop(a * 1, b, "__isub__"),
                                                 _iop(a * 1, b, "__imul__"), _iop(a * 1, b, "__itruediv__")),
           ("real", "nonzero"), shapes=[((3, 4), (4,)), ((), ())], dtypes=FLOAT),
    binary("ipow", lambda m, a, b: _iop(a * 1, b, "__ipow__"), ("positive", "real"), shapes=[((3, 4), (4,))],
           dtypes=FLOAT),
    OpInfo("rpow_tensor", lambda m, a, s: s ** a + a.__rpow__(s), scalar_samples(SHORT[:2], s=[2.0]), dtypes=FLOAT),
]

HYP_UNARY: list = ["exp2", "expm1", "log2", "rsqrt", "reciprocal", "square", "atan", "sinh", "asinh", "erf", "erfc",
                   "sgn", "deg2rad"]   # names of entries whose single input hypothesis draws shapes for
HYP_BINARY: list = ["hypot", "logaddexp", "xlogy", "copysign", "fmax", "fmin",
                    "atan2"]   # names of entries whose two broadcasting inputs hypothesis draws shapes for

# ----- torch.special: the Bessel family ------------------------------------------------------------------------------


def _bessel_samples(lo, hi):
    """Values across the formulas' branches ((lo, hi) drawn, |x| small and large), then the special points."""
    def gen(rng):
        edge = np.array([0.0, -0.0, 1e-6, -1e-6, 0.3, -0.3, 2.0, -2.0, 2.5, 5.0, -5.0, 7.5, 8.0, -8.0, 9.0, -12.0,
                         30.0, -30.0, 120.0, -120.0, 1e4, np.inf, -np.inf, np.nan])
        return [Sample((np.asarray(rng.uniform(lo, hi, s)),)) for s in [(), (7,), (2, 5)]] + \
            [Sample((edge,), desc="edges")]
    return gen


def _bessel_grad_samples(rng):   # away from 0 (i1's tiny-|x| branch) and the 8.0 seam; both signs, both branches
    return [Sample((np.asarray(rng.uniform(0.2, 7.5, s) * rng.choice([-1.0, 1.0], s)),)) for s in [(), (5,)]] + \
        [Sample((np.array([9.0, -10.5, 20.0]),))]


# PyTorch gives i0/i0e/i1/i1e derivatives (i0: I0Backward0 -> i1, the others their special_* formulas)
OPS += [OpInfo(f"special_{n}", (lambda n: lambda m, a: getattr(m.special, n)(a))(n), _bessel_grad_samples,
               dtypes=ALL) for n in ("i0", "i0e", "i1", "i1e")]
OPS += [
    OpInfo("i0_method", lambda m, a: (m.i0(a), a.i0()), _bessel_grad_samples),
    OpInfo("i0_", lambda m, a: ((a * 1).i0_(), m.i0_(a * 1)), _bessel_grad_samples, dtypes=FLOAT + ("int64",)),
    _nograd("special_i0_family_values", lambda m, a: (m.special.i0(a), m.special.i0e(a), m.special.i1(a),
                                                      m.special.i1e(a)), _bessel_samples(-40, 40), dtypes=FLOAT),
]
# the rest have no derivative in PyTorch (the result never requires grad): forward values only
_BESSEL_NONDIFF = [("modified_bessel_i0", (-40, 40)), ("modified_bessel_i1", (-40, 40)),
                   ("modified_bessel_k0", (0, 20)), ("modified_bessel_k1", (0, 20)),
                   ("scaled_modified_bessel_k0", (0, 20)), ("scaled_modified_bessel_k1", (0, 20)),
                   ("bessel_j0", (-30, 30)), ("bessel_j1", (-30, 30)), ("bessel_y0", (0, 30)), ("bessel_y1", (0, 30)),
                   ("spherical_bessel_j0", (-20, 20)), ("airy_ai", (-15, 15))]
OPS += [_nograd(f"special_{n}", (lambda n: lambda m, a: getattr(m.special, n)(a))(n), _bessel_samples(lo, hi),
                dtypes=ALL) for n, (lo, hi) in _BESSEL_NONDIFF]
# ----- torch.special, part B: ndtr, ndtri, log_ndtr, erfcx, entr, xlog1py, multigammaln, softmax aliases -----------


def _special_b_values(rng):
    """nan, infinities, zeros, the branch points of the kernels and large magnitudes (forward only)."""
    vals = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.3, -0.3, 0.46875, -0.5, 0.9, 0.99, 1e-20,
                     2.5, -2.5, 4.0, 4.5, -6.0, -6.2, 26.0, -26.0, -27.0, 40.0, 60.0, -40.0, 1e8, -1e8, 1e300])
    return [Sample((vals,)), Sample((vals[:28].reshape(4, 7),)), Sample((np.zeros((0,)),))]


def _probabilities(rng):
    vals = np.array([np.nan, 0.0, 1.0, -0.5, 1.5, 1e-300, 1e-20, 1e-15, 1e-5, 0.1, 0.135, 0.14, 0.5, 0.86, 0.865,
                     0.9, 0.999999, 1.0 - 1e-15])
    return [Sample((vals,)), Sample((vals[:16].reshape(4, 4),))]


OPS += [
    OpInfo("special_ndtr", lambda m, a: m.special.ndtr(a), SHORT, "real", dtypes=ALL),
    OpInfo("special_ndtri", lambda m, a: m.special.ndtri(a), _in(0.02, 0.98), dtypes=ALL),
    OpInfo("special_ndtri_tails", lambda m, a: m.special.ndtri(a), _in(1e-6, 0.1), dtypes=("float64",)),
    OpInfo("special_log_ndtr", lambda m, a: m.special.log_ndtr(a), _in(-4.0, 4.0), dtypes=ALL),
    OpInfo("special_log_ndtr_far", lambda m, a: m.special.log_ndtr(a), _in(-30.0, -5.0), dtypes=FLOAT),
    OpInfo("special_erfcx", lambda m, a: m.special.erfcx(a), _in(-3.0, 6.0), dtypes=ALL),
    OpInfo("special_erfcx_far", lambda m, a: m.special.erfcx(a), _in(5.0, 80.0), dtypes=FLOAT),
    OpInfo("special_entr", lambda m, a: m.special.entr(a), _in(0.05, 3.0), dtypes=ALL),
    binary("special_xlog1py", lambda m, a, b: m.special.xlog1py(a, b), ("real", "positive"), shapes=SHORT_BINARY),
    OpInfo("special_xlog1py_scalar", lambda m, a, s: m.special.xlog1py(a, s), scalar_samples(SHORT, s=[2.5, 3]),
           dtypes=ALL),
    OpInfo("special_xlog1py_rscalar", lambda m, b, s: m.special.xlog1py(s, b), scalar_samples(SHORT, s=[2.5, 0.0]),
           "positive", dtypes=FLOAT),
    _nograd("special_xlog1py_values", lambda m, a: (m.special.xlog1py(a, a), m.special.xlog1py(a * 0, a - 1),
                                                    m.special.xlog1py(a, -1.0), m.special.xlog1py(0.0, a)),
            _special_b_values, dtypes=FLOAT),
    OpInfo("special_multigammaln", lambda m, a, p: m.special.multigammaln(a + 2.5, p),
           [(s, {"p": p}) for p in (1, 2, 3, 5) for s in SHORT[:3]], "positive", dtypes=FLOAT),
    OpInfo("mvlgamma", lambda m, a, p: (m.mvlgamma(a + 1.5, p), (a + 2).mvlgamma(p)),
           [(s, {"p": p}) for p in (1, 2) for s in SHORT[:3]], "positive", dtypes=FLOAT),
    OpInfo("mvlgamma_", lambda m, a, p: (a + 2).mvlgamma_(p), _in(0.5, 3.0, [((3,),)], {"p": 3})),
    _nograd("mvlgamma_int", lambda m, a: m.mvlgamma(a, 2), lambda rng: [Sample((np.array([2.0, 3.0, 7.0]),))],
            dtypes=("int64",)),
    _nograd("special_b_values", lambda m, a: (m.special.ndtr(a), m.special.log_ndtr(a), m.special.erfcx(a),
                                              m.special.entr(a), m.special.ndtri(a), m.special.multigammaln(a, 3)),
            _special_b_values, dtypes=FLOAT),
    _nograd("special_ndtri_values", lambda m, a: m.special.ndtri(a), _probabilities, dtypes=FLOAT),
    _nograd("special_b_int", lambda m, a: (m.special.ndtr(a), m.special.log_ndtr(a), m.special.erfcx(a),
                                           m.special.entr(a), m.special.ndtri(a), m.special.xlog1py(a, a)),
            lambda rng: [Sample((np.array([-2.0, -1.0, 0.0, 1.0, 3.0]),))], dtypes=INT),
    OpInfo("special_softmax", lambda m, a: (m.special.softmax(a, 0), m.special.log_softmax(a, -1),
                                            m.special.softmax(a, 0, dtype=m.float64),
                                            m.special.logsumexp(a, 0), m.special.logsumexp(a, (0,), keepdim=True)),
           [((2, 3),), ((4,),)], dtypes=FLOAT),
]

# The orthogonal polynomials (no gradients in PyTorch). float32 stays at degrees up to 12: beyond, the closed forms
# cos(n acos x) amplify the last bit of PyTorch's vectorised acosf past the float32 tolerance. No nan x: PyTorch's
# kernels return an uninitialised value there for n >= 2 (the recurrence never runs).
_POLYNOMIALS = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
                "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
                "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
                "laguerre_polynomial_l", "legendre_polynomial_p")
_POLY_X = np.array([-1.5, -1.0, -0.999, -0.7, -0.31, 0.0, 1e-20, 0.2, 0.5, 0.83, 0.9999999, 1.0, 1.2, 2.0, -2.5,
                    np.inf, -np.inf])


def _poly_samples(degrees):
    def gen(rng):
        x = np.concatenate([_POLY_X, rng.uniform(-1.2, 1.2, 15)])
        n = np.asarray(degrees, dtype=np.float64)
        return [Sample((x[:, None], n[None, :])), Sample((rng.uniform(-1, 1, (3, 4)), np.float64(7.0)))]
    return gen


_POLY_SMALL = [-2.0, -1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 12.0, 2.7, np.nan, np.inf]
_POLY_LARGE = [15.0, 40.0, 129.0, 200.0, 513.0, 1000.0]
for _kind in _POLYNOMIALS:
    OPS += [
        _nograd("special_" + _kind, (lambda k: lambda m, x, n: getattr(m.special, k)(x, n))(_kind),
                _poly_samples(_POLY_SMALL), dtypes=ALL),
        _nograd("special_" + _kind + "_large_n", (lambda k: lambda m, x, n: getattr(m.special, k)(x, n))(_kind),
                _poly_samples(_POLY_LARGE), dtypes=("float64",)),
    ]
OPS += [
    _nograd("special_polynomial_scalars",
            lambda m, x, n: (m.special.chebyshev_polynomial_t(x, 5), m.special.legendre_polynomial_p(0.3, n),
                             m.special.hermite_polynomial_he(x, 3.0), m.special.laguerre_polynomial_l(x, True),
                             m.special.shifted_chebyshev_polynomial_u(-0.25, n)),
            lambda rng: [Sample((rng.uniform(-1, 1, (2, 3)), np.array([0.0, 3.0, 11.0])[:, None, None]))],
            dtypes=FLOAT + ("int64",)),
]


def _zeta_values(rng):
    x = np.array([-1.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.7, 10.0, 30.0, np.inf, np.nan, -2.0])
    q = np.array([-3.0, -2.5, -1.0, 0.0, 0.3, 1.0, 1.5, 2.0, 5.0, 10.0, 50.0, 1e5, np.inf, np.nan])
    return [Sample((x[:, None], q[None, :]))]


def _zeta_samples(rng):
    """(q,) with x = s in the keywords: zeta is differentiable in q only (PyTorch has no derivative in x)."""
    return [Sample((rng.uniform(0.3, 4.0, sb),), {"s": rng.uniform(1.5, 6.0, sa)}) for sa, sb in SHORT_BINARY]


OPS += [
    OpInfo("special_zeta", lambda m, b, s: m.special.zeta(m.tensor(s, dtype=b.dtype), b), _zeta_samples,
           dtypes=FLOAT),
    OpInfo("special_zeta_scalar", lambda m, b, s: m.special.zeta(s, b),
           lambda rng: [Sample((rng.uniform(0.5, 3.0, (2, 3)),), {"s": s}) for s in (2.5, 3)], dtypes=ALL),
    _nograd("special_zeta_forward", lambda m, a, b: (m.special.zeta(a, b), m.special.zeta(a + 2, 2)),
            lambda rng: [Sample((rng.uniform(1.5, 6.0, sa), rng.uniform(0.3, 4.0, sb))) for sa, sb in SHORT_BINARY],
            dtypes=ALL),
    _nograd("special_zeta_values", lambda m, a, b: m.special.zeta(a, b), _zeta_values, dtypes=FLOAT),
]


def _igamma_samples(rng):
    """(x,) with a in the keywords: igamma and igammac are differentiable in x only. a and x cover the series, the
    continued fraction and (a in (20, 200) near x, a > 200) the asymptotic expansion."""
    out = [Sample((rng.uniform(0.2, 4.0, sb),), {"a": rng.uniform(0.3, 5.0, sa)}) for sa, sb in SHORT_BINARY]
    out.append(Sample((np.array([22.0, 30.0, 45.0, 250.0, 270.0, 0.3, 0.7, 1.05, 12.0]),),
                      {"a": np.array([25.0, 28.0, 50.0, 260.0, 255.0, 2.0, 0.5, 3.0, 2.5])}))
    return out


def _igamma_values(rng):
    a = np.array([0.0, 1e-3, 0.1, 0.5, 1.0, 1.5, 5.0, 19.0, 25.0, 150.0, 199.0, 250.0, 1000.0, 1e4, np.inf, np.nan,
                  -1.0])
    x = np.array([0.0, 1e-3, 0.1, 0.4, 0.5, 0.7, 1.0, 1.05, 1.2, 2.0, 5.0, 9.0, 24.0, 28.0, 140.0, 240.0, 260.0,
                  980.0, 1100.0, 1e4, 1e5, np.inf, np.nan, -1.0])
    return [Sample((a[:, None], x[None, :]))]


OPS += [
    OpInfo("igamma", lambda m, x, a: (m.igamma(m.tensor(a, dtype=x.dtype), x),
                                      m.special.gammainc(m.tensor(a, dtype=x.dtype), x)), _igamma_samples,
           dtypes=FLOAT),
    OpInfo("igammac", lambda m, x, a: (m.igammac(m.tensor(a, dtype=x.dtype), x),
                                       m.special.gammaincc(m.tensor(a, dtype=x.dtype), x)), _igamma_samples,
           dtypes=FLOAT),
    _nograd("igamma_values", lambda m, a, x: (m.igamma(a, x), a.igammac(x), (a + x * 0).igamma_(x),
                                                  (a + x * 0).igammac_(x)),
            _igamma_values, dtypes=FLOAT),
    _nograd("igamma_int", lambda m, a, x: (m.igamma(a, x), m.special.gammaincc(a, x)),
            lambda rng: [Sample((np.array([1.0, 2.0]), np.array([3.0, 1.0])))], dtypes=FLOAT + INT),
]

# PyTorch has no derivative in a (igamma, igammac) nor in x (zeta): differentiated anyway (the coverage run reaches
# the rules raising its NotImplementedError), one op per entry.
_POSITIVE_PAIRS = lambda rng: [Sample((rng.uniform(1.5, 3.0, (3,)), rng.uniform(0.5, 2.0, (3,))))]  # noqa: E731
OPS += [
    _nograd("igamma_input", lambda m, a, x: m.igamma(a, x), _POSITIVE_PAIRS, dtypes=FLOAT),
    _nograd("igammac_input", lambda m, a, x: m.igammac(a, x), _POSITIVE_PAIRS, dtypes=FLOAT),
    _nograd("special_zeta_input", lambda m, a, x: m.special.zeta(a, 2.0) + m.special.zeta(a, x), _POSITIVE_PAIRS,
            dtypes=FLOAT),
]

# float16: PyTorch's CPU kernels of ndtri, log_ndtr, erfcx, zeta and the polynomials refuse it (the others run)
OPS += [
    _nograd("special_b_half", lambda m, a: (m.special.ndtr(a), m.special.entr(a), m.special.xlog1py(a, a),
                                            m.igamma(a, a + 1), m.mvlgamma(a + 2, 2)),
            lambda rng: [Sample((rng.uniform(0.2, 3.0, (2, 3)),))], dtypes=("float16",)),
    _nograd("special_b_half_refused", lambda m, a: m.special.ndtri(a * 0.3), lambda rng: [Sample((np.ones(2),))],
            dtypes=("float16",)),
    _nograd("special_b_half_refused_2", lambda m, a: m.special.zeta(2.0, a), lambda rng: [Sample((np.ones(2),))],
            dtypes=("float16",)),
    _nograd("special_b_half_refused_3", lambda m, a: m.special.hermite_polynomial_h(a, 2),
            lambda rng: [Sample((np.ones(2),))], dtypes=("float16",)),
]
# ----- issue 18: the modified Bessel functions i0 / special.i1, gcd, lcm, isin ------------------------------------------

def _ints(cases):
    """Integer-valued samples in [-12, 12] of the given (shape, shape) pairs."""
    def gen(rng):
        return [Sample(tuple(rng.integers(-12, 13, sh).astype(np.float64) for sh in shapes)) for shapes in cases]
    return gen


def _ZEROS(rng):
    return [Sample((np.array([0.0, 0, -4, 6, -9]), np.array([0.0, -5, 0, -4, 6])))]


# the modified Bessel functions i0 (torch.i0, Tensor.i0, i0_, special.i0) and special.i1 -------------

OPS += [
    _nograd("special_i1_zero", lambda m, a: m.special.i1(a), lambda rng: [Sample((np.array([0.0, -0.0, 1e-30]),))],
            dtypes=FLOAT),
    # gcd / lcm (not differentiable) and isin on integer-valued samples
    _nograd("gcd", lambda m, a, b: (m.gcd(a, b), a.gcd(b)), _ints(SHORT_BINARY), dtypes=INT),
    _nograd("lcm", lambda m, a, b: (m.lcm(a, b), a.lcm(b)), _ints(SHORT_BINARY), dtypes=INT),
    _nograd("gcd_", lambda m, a, b: (a * 1).gcd_(b), _ints([((3, 4), (4,))]), dtypes=INT),
    _nograd("lcm_", lambda m, a, b: (a * 1).lcm_(b), _ints([((3, 4), (4,))]), dtypes=INT),
    _nograd("gcd_zero", lambda m, a, b: m.gcd(a, b), _ZEROS, dtypes=INT),
    _nograd("lcm_zero", lambda m, a, b: m.lcm(a, b), _ZEROS, dtypes=INT),
    _nograd("isin", lambda m, a, b: (m.isin(a, b), m.isin(a, b, invert=True), m.isin(a, 3), m.isin(3, b),
                                     m.isin(a, b, assume_unique=True)),
            _ints([((3, 4), (5,)), ((), (2, 2)), ((0,), (3,)), ((4,), (0,))]), dtypes=FLOAT + INT),
]

