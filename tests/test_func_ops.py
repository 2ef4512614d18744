"""torch.func's transforms composed over every differentiable op of the op database (float64), each against an
ember reference computed without transforms and against torch.func on the same inputs:

  vmap_grad  vmap(grad(loss)): loss = the op's float outputs weighted by fixed random weights, summed; every input
             batched (B examples near the sample); vs autograd.grad per example, and torch.func.vmap(grad(...))
  vmap_jvp   vmap(jvp(f)) with batched primals and tangents; vs a loop of jvp over the examples, and torch.func
  jacrev     jacrev(f) (f: the op of input 0, the other inputs fixed); vs autograd.functional.jacobian, torch.func
  jacfwd     the same by forward mode
  hessian    hessian(loss of input 0) for ops with second order; vs autograd.functional.hessian, torch.func

Values (rtol 1e-7 in float64), shapes and dtypes. A case torch.func refuses (raises) is compared with the ember
reference only; a case ember's reference refuses is skipped. The default run takes the first samples of each op;
``EMBER_SLOW=1`` sweeps them all. Known failures are strict xfails in ``XFAIL`` (keyed by (op, transform)), so
that a fix makes them XPASS loudly.
"""
from __future__ import annotations

import os
import sys
import warnings
import zlib

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import ember  # noqa: E402
from op_db import OP_DB  # noqa: E402

try:
    import torch
    import torch.func
    torch.set_num_threads(1)
except ImportError:   # the comparisons with ember's own references need no PyTorch
    torch = None

SLOW = os.environ.get("EMBER_SLOW") == "1"
B = 3
PER_OP = 2

# Why ember fails a case, by cause: each a bug of the transforms (ember/func/_eager.py) or of vmap's machinery
# (ember/autograd/_batching.py), not of the op.

# (op name, transform) -> why ember fails it: a strict xfail (a fix XPASSes loudly). A value (reason, sample indices)
# limits it to those samples of the default run. With EMBER_SLOW=1 the xfails are not strict (the later samples
# were not triaged one by one).
XFAIL: dict[tuple[str, str], str | tuple[str, set]] = {
}

# Cases where torch.func computes a wrong value (ember's matches central differences and its own reference): only
# the comparison with torch is skipped.
TORCH_DIFFERS: dict[tuple[str, str], str] = {
    **{("logcumsumexp_large", tr): "torch's forward-mode formula for logcumsumexp overflows at large inputs (its "
       "jacfwd is off by 300 from central differences, ember's matches them)" for tr in ("vmap_jvp", "jacfwd",
                                                                                          "hessian")},
    ("cdist", "jacrev"): "torch.func.jacrev of cdist disagrees with torch.autograd.functional.jacobian (its batched "
                         "cdist backward); ember's matches central differences",
    **{(op, tr): "torch's forward-mode formula for scatter_reduce('prod') with zeros in the input differs from "
       "central differences; ember's matches them" for op in ("scatter_reduce_zeros", "scatter_reduce_two_zeros")
       for tr in ("vmap_jvp", "jacfwd", "hessian")},
    **{("ldexp_int_exponent", tr): "torch computes ldexp's derivative 2**other in integer arithmetic for an "
       "integer exponent (the op's 'grad' xfail in the op database); ember's matches central differences"
       for tr in ("vmap_grad", "vmap_jvp", "jacrev", "jacfwd")},
    **{("cholesky_inverse", tr): "torch's forward-mode formula for cholesky_inverse differs from central "
       "differences on these samples (its jacfwd; jacrev agrees); ember's matches them"
       for tr in ("vmap_jvp", "jacfwd", "hessian")},
    ("triangular_solve", "vmap_jvp"): "torch's jvp of triangular_solve differs from central differences (a loop "
                                      "of torch.func.jvp too); ember's matches them",
    **{("as_strided_inplace", tr): "torch 2.13's vmap runs as_strided_ in its per-example fallback on slices of the "
       "physical tensor, which leaves the batched tensor as it was (the result is the input unchanged); ember's "
       "example becomes the view, as a loop of torch.func.jvp gives" for tr in ("vmap_jvp", "jacfwd")},
    ("det_singular_grad_create_graph", "hessian"): "torch.func.hessian of det at a singular matrix has nans; "
                                                   "ember's equals autograd.functional.hessian",
}

# Cases where ember's reference computes another quantity than the transform (torch's reference does the same):
# only the comparison with torch.func is made.
REFERENCE_DIFFERS: dict[tuple[str, str], str] = {
    **{(op, "jacfwd"): "padding_idx zeroes only the backward: forward mode differentiates the padding rows "
       "(torch.func.jacfwd too), reverse mode (autograd.functional.jacobian) does not"
       for op in ("nn_embedding", "aten_embedding")},
    ("var_dof0_grad", "jacrev"): "zero degrees of freedom: jacrev's batched vjp gives nan where "
                                 "autograd.functional.jacobian's gives inf (torch's do the same)",
    ("nn_pdist_ties", "jacfwd"): "ties of the inf-norm: forward mode (a one-sided derivative) and reverse mode "
                                 "(PyTorch's subgradient) differ there; torch.func.jacfwd has no rule for pdist",
}

TRANSFORMS = {"vmap_grad": "supports_grad", "vmap_jvp": "supports_fwd", "jacrev": "supports_grad",
              "jacfwd": "supports_fwd", "hessian": "supports_gradgrad"}


def _cases():
    out = []
    for op in OP_DB:
        if "float64" not in op.dtypes or not op.supports_grad:
            continue
        for k, s in enumerate(op.sample_inputs()):
            if not (SLOW or k < PER_OP) or not s.args:
                continue
            for tr, flag in TRANSFORMS.items():
                if not getattr(op, flag):
                    continue
                marks = []
                why = XFAIL.get((op.name, tr))
                if isinstance(why, tuple):
                    why = why[0] if k in why[1] else None
                if why:
                    marks.append(pytest.mark.xfail(strict=not SLOW, reason=why))
                out.append(pytest.param(op, s, tr, id=f"{op.name}-{s.desc}-{tr}", marks=marks))
    return out


# ----- the functions the transforms see, written once for both libraries ---------------------------------

def _rng(*keys):
    return np.random.default_rng(zlib.crc32("/".join(map(str, keys)).encode()))


def _flat(res):
    if isinstance(res, (tuple, list)):
        return [x for r in res for x in _flat(r)]
    return [res]


def _float_outs(res):
    return [o for o in _flat(res) if hasattr(o, "is_floating_point") and o.is_floating_point()]


def _call(mod, op, sample, xs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _float_outs(op.op(mod, *xs, **sample.kwargs))


def _weights(op, sample):
    """Fixed random weights, one array per float output of one example (None: the op has no float output)."""
    with ember.no_grad():
        outs = _call(ember, op, sample, [ember.tensor(a) for a in sample.args])
    if not outs:
        return None
    rng = _rng(op.name, sample.desc, "w")
    return [rng.standard_normal(tuple(o.shape)) for o in outs]


def _loss(mod, op, sample, ws):
    """The weighted sum of the op's float outputs, a function of all its inputs."""
    def loss(*xs):
        total = None
        for o, w in zip(_call(mod, op, sample, xs), ws):
            t = (o * mod.tensor(w, dtype=o.dtype)).sum()
            total = t if total is None else total + t
        return total
    return loss


def _of_first(mod, f, sample):
    """``f`` as a function of input 0, the others fixed at the sample."""
    rest = [mod.tensor(a) for a in sample.args[1:]]
    return lambda x: f(x, *rest)


def _outs_fn(mod, op, sample):
    """The op's float outputs (one tensor, or a tuple of them)."""
    def f(*xs):
        outs = _call(mod, op, sample, xs)
        return outs[0] if len(outs) == 1 else tuple(outs)
    return f


def _batch(a: np.ndarray) -> np.ndarray:
    """B examples near ``a`` (scaled, so signs and zeros stay: most domains keep their samples)."""
    return np.stack([a * (1 + 0.05 * j) for j in range(B)])


# ----- one transform, by ember or torch, and ember's reference without transforms -------------------------

def _transformed(mod, op, sample, tr, ws):
    func = mod.func
    n = len(sample.args)
    if tr == "vmap_grad":
        xs = [mod.tensor(_batch(a)) for a in sample.args]
        return func.vmap(func.grad(_loss(mod, op, sample, ws), argnums=tuple(range(n))))(*xs)
    if tr == "vmap_jvp":
        xs = [mod.tensor(_batch(a)) for a in sample.args]
        ts = [mod.tensor(t) for t in _tangents(op, sample)]
        f = _outs_fn(mod, op, sample)
        return func.vmap(lambda *pt: func.jvp(f, tuple(pt[:n]), tuple(pt[n:])))(*xs, *ts)
    x = mod.tensor(sample.args[0])
    if tr in ("jacrev", "jacfwd"):
        return getattr(func, tr)(_of_first(mod, _outs_fn(mod, op, sample), sample))(x)
    return func.hessian(_of_first(mod, _loss(mod, op, sample, ws), sample))(x)


def _tangents(op, sample):
    rng = _rng(op.name, sample.desc, "t")
    return [rng.standard_normal((B,) + a.shape) for a in sample.args]


def _reference(op, sample, tr, ws):
    """What the transform computes, by ember without torch.func: per-example autograd.grad / jvp, or
    autograd.functional."""
    n = len(sample.args)
    if tr == "vmap_grad":
        loss = _loss(ember, op, sample, ws)
        rows = []
        for j in range(B):
            xs = [ember.tensor(_batch(a)[j]).requires_grad_() for a in sample.args]
            out = loss(*xs)
            gs = ember.autograd.grad(out, xs, allow_unused=True) if out.requires_grad else [None] * n
            rows.append([ember.zeros_like(x) if g is None else g for g, x in zip(gs, xs)])
        return [ember.stack([r[i] for r in rows]) for i in range(n)]
    if tr == "vmap_jvp":
        f = _outs_fn(ember, op, sample)
        ts = _tangents(op, sample)
        rows = []
        for j in range(B):
            xs = tuple(ember.tensor(_batch(a)[j]) for a in sample.args)
            rows.append(_flat(ember.func.jvp(f, xs, tuple(ember.tensor(t[j]) for t in ts))))
        return [ember.stack([r[i] for r in rows]) for i in range(len(rows[0]))]
    x = ember.tensor(sample.args[0])
    if tr in ("jacrev", "jacfwd"):
        return ember.autograd.functional.jacobian(_of_first(ember, _outs_fn(ember, op, sample), sample), x)
    return ember.autograd.functional.hessian(_of_first(ember, _loss(ember, op, sample, ws), sample), x)


def _outcome(fn):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _flat(fn()), None
    except Exception as e:   # noqa: BLE001  (compared by type below)
        return None, e


def _np(t):
    return t.detach().numpy(force=True) if hasattr(t, "detach") else np.asarray(t)


def _compare(got, want, what, dtypes=True):
    assert len(got) == len(want), f"{what}: {len(got)} results vs {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        if dtypes:
            assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1], \
                f"{what}, result {k}: dtype {g.dtype} vs {w.dtype}"
        a, b = _np(g), _np(w).astype(_np(g).dtype)
        assert a.shape == b.shape, f"{what}, result {k}: shape {a.shape} vs {b.shape}"
        tol = dict(rtol=1e-7, atol=1e-9) if a.dtype == np.float64 else dict(rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(a, b, equal_nan=True, err_msg=f"{what}, result {k}", **tol)


@pytest.mark.parametrize("op,sample,tr", _cases())
def test_func_op(op, sample, tr):
    ws = _weights(op, sample)
    if ws is None:
        pytest.skip("no floating output")
    want, err = _outcome(lambda: _reference(op, sample, tr, ws))
    if err is not None:
        pytest.skip(f"ember's reference refuses this sample: {type(err).__name__}: {err}")
    got, gerr = _outcome(lambda: _transformed(ember, op, sample, tr, ws))
    ref, terr = (None, None) if torch is None else _outcome(lambda: _transformed(torch, op, sample, tr, ws))
    if gerr is not None:
        if terr is not None and type(terr) is type(gerr):
            return   # torch.func refuses it too (e.g. an in-place write of a batched value into an unbatched one)
        raise gerr
    if (op.name, tr) not in REFERENCE_DIFFERS:
        # (jacfwd's Jacobian has the outputs' dtype, as torch's; autograd.functional.jacobian the input's)
        _compare(got, want, f"ember {tr} vs ember's reference", dtypes=tr != "jacfwd")
    if ref is not None and (op.name, tr) not in TORCH_DIFFERS:
        _compare(got, ref, f"ember {tr} vs torch.func")
