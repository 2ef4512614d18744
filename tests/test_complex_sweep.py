"""Every op of the op database on complex inputs, against real torch.

Each op-database sample's float inputs become complex128 (``a + i b``, with a small imaginary part so that the
sample's domain stays valid near the real axis). Then:

  forward   torch raises: ember raises the same exception type (it refuses complex where PyTorch does);
            torch computes: ember computes the same values and dtypes.
  grad      the VJP with a random upstream gradient (complex for complex outputs) equals torch's: PyTorch's
            convention, the conjugate Wirtinger derivative.
  fwd_ad    the forward-mode tangent (complex tangents) equals torch's.
  gradgrad  the gradient of <grad, w> (create_graph=True) equals torch's.

Cases where ember does not yet do what PyTorch does on complex inputs are listed, one test id per line, in
complex_gaps.txt beside this file (strict xfails: a case that starts passing fails until its line is removed).
"""
from __future__ import annotations

import os
import sys
import warnings
import zlib

import numpy as np
import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, os.path.dirname(__file__))
import ember  # noqa: E402
from op_db import OP_DB, complex_args  # noqa: E402
from torch.autograd.gradcheck import GradcheckError as TorchGradcheckError  # noqa: E402

TOL = dict(rtol=1e-7, atol=1e-9)
EXHAUSTIVE = os.environ.get("EMBER_SLOW") == "1"

# Cases (test ids) where ember does not yet match PyTorch on complex inputs.
with open(os.path.join(os.path.dirname(__file__), "complex_gaps.txt")) as _f:
    GAPS = {line.strip() for line in _f if line.strip() and not line.startswith("#")}


def _rng(*keys):
    return np.random.default_rng(zlib.crc32("/".join(map(str, keys)).encode()))


def _cases(test, first=2):
    out = []
    for op in OP_DB:
        samples = op.sample_inputs()
        for s in (samples if EXHAUSTIVE else samples[:first]):
            pid = f"{op.name}-{s.desc}"
            marks = [pytest.mark.xfail(strict=True, reason="complex_gaps.txt")] \
                if f"test_complex_{test}[{pid}]" in GAPS else []
            out.append(pytest.param(op, s, id=pid, marks=marks))
    return out


def _mk(m, a, requires_grad=False):
    t = m.tensor(np.array(a))
    return t.requires_grad_() if requires_grad and a.dtype.kind in "fc" else t


def _call(m, op, arrays, kwargs, requires_grad=False):
    xs = [_mk(m, a, requires_grad) for a in arrays]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = op.op(m, *xs, **kwargs)
    return xs, list(res) if isinstance(res, tuple) else [res]


def _npy(t):
    if not hasattr(t, "numpy"):
        return np.asarray(t)
    t = t.detach()
    return (t.float() if str(t.dtype).endswith("bfloat16") else t).numpy(force=True)   # torch's has no NumPy twin


def _close(e, t, what, tol=TOL):
    if not isinstance(t, torch.Tensor):
        assert e == t or (isinstance(t, float) and np.isclose(e, t, equal_nan=True)), f"{what}: {e} != {t}"
        return
    assert isinstance(e, ember.Tensor), f"{what}: ember returned {type(e).__name__}"
    assert tuple(e.shape) == tuple(t.shape), f"{what}: shape {tuple(e.shape)} != torch {tuple(t.shape)}"
    assert str(e.dtype) == str(t.dtype), f"{what}: dtype {e.dtype} != torch {t.dtype}"
    a, b = _npy(e), _npy(t)
    if a.dtype.kind in "fc":
        np.testing.assert_allclose(a, b, equal_nan=True, err_msg=what, **tol)
    else:
        np.testing.assert_array_equal(a, b, err_msg=what)


def _forward(op, sample, single=False):
    """(torch outputs or exception, ember outputs or exception) on the complex inputs (complex64 if ``single``)."""
    arrays = complex_args(op, sample)
    if single:
        arrays = [a.astype(np.complex64) if a.dtype.kind == "c" else a for a in arrays]
    res = []
    for m in (torch, ember):
        try:
            res.append(_call(m, op, arrays, sample.kwargs)[1])
        except Exception as e:  # noqa: BLE001
            res.append(e)
    return arrays, res


@pytest.mark.parametrize("op,sample", _cases("forward"))
def test_complex_forward(op, sample):
    _check_forward(*_forward(op, sample)[1])


@pytest.mark.parametrize("op,sample", _cases("forward64"))
def test_complex_forward64(op, sample):
    """complex64 inputs: PyTorch's dtypes and exceptions, values to single precision."""
    _check_forward(*_forward(op, sample, single=True)[1], tol=dict(rtol=2e-5, atol=2e-5))


def _check_forward(t, e, tol=TOL):
    if isinstance(t, Exception):
        assert isinstance(e, Exception), f"torch raised {type(t).__name__}: {t}; ember returned a result"
        assert type(e) is type(t) or type(e).__name__ == type(t).__name__.lstrip("_"), \
            f"ember raised {type(e).__name__}: {e}; torch raised {type(t).__name__}: {t}"
        return
    assert not isinstance(e, Exception), f"ember raised {type(e).__name__}: {e}; torch did not"
    assert len(e) == len(t)
    for i, (eo, to) in enumerate(zip(e, t)):
        _close(eo, to, f"output {i}", tol)


def _diff_outs(outs):
    return [o for o in outs if isinstance(o, (torch.Tensor, ember.Tensor)) and o.requires_grad]


def _upstream(rng, outs):
    vs = []
    for o in outs:
        v = rng.standard_normal(tuple(o.shape))
        vs.append(v + 1j * rng.standard_normal(tuple(o.shape)) if o.dtype.is_complex else v)
    return vs


def _vjp(m, op, arrays, kwargs, vs, create_graph=False):
    xs, outs = _call(m, op, arrays, kwargs, requires_grad=True)
    outs = _diff_outs(outs)
    gos = [_mk(m, v.astype(np.complex128 if o.dtype.is_complex else np.float64) if o.dtype in
               (m.complex128, m.float64) else v.astype(np.complex64 if o.dtype.is_complex else np.float32),
               create_graph) for o, v in zip(outs, vs)]
    grads = m.autograd.grad(outs, [x for x in xs if x.requires_grad], gos, allow_unused=True,
                            create_graph=create_graph)
    return xs, gos, grads


def _grad_setup(op, sample):
    if not op.supports_grad:
        pytest.skip("not differentiable")
    arrays, (t, e) = _forward(op, sample)
    if isinstance(t, Exception):
        pytest.skip("torch refuses complex inputs")
    try:
        t_outs = _diff_outs(_call(torch, op, arrays, sample.kwargs, requires_grad=True)[1])
    except RuntimeError as err:   # "... does not support automatic differentiation for outputs with complex dtype"
        pytest.skip(f"torch has no complex autograd here: {err}")
    if not t_outs:
        pytest.skip("no differentiable output")
    return arrays, t_outs


@pytest.mark.parametrize("op,sample", _cases("grad"))
def test_complex_grad(op, sample):
    arrays, t_outs = _grad_setup(op, sample)
    vs = _upstream(_rng(op.name, sample.desc, "v"), t_outs)
    try:
        _, _, tg = _vjp(torch, op, arrays, sample.kwargs, vs)
    except RuntimeError as err:   # e.g. "the derivative for 'x' is not implemented" for complex
        with pytest.raises(RuntimeError):
            _vjp(ember, op, arrays, sample.kwargs, vs)
        return err
    _, _, eg = _vjp(ember, op, arrays, sample.kwargs, vs)
    assert len(eg) == len(tg)
    for i, (a, b) in enumerate(zip(eg, tg)):
        if b is None:
            assert a is None or not np.any(_npy(a)), f"grad of input {i}: torch's is None"
        else:
            _close(a, b, f"grad of input {i}")


@pytest.mark.parametrize("op,sample", _cases("gradgrad"))
def test_complex_gradgrad(op, sample):
    if not op.supports_gradgrad:
        pytest.skip("no second order")
    arrays, t_outs = _grad_setup(op, sample)
    rng = _rng(op.name, sample.desc, "gg")
    vs = _upstream(rng, t_outs)
    ws = [rng.standard_normal(a.shape) + 1j * rng.standard_normal(a.shape) for a in arrays if a.dtype.kind in "fc"]

    def second(m):
        xs, gos, grads = _vjp(m, op, arrays, sample.kwargs, vs, create_graph=True)
        s = 0
        for g, w in zip(grads, ws):
            if g is not None:
                s = s + (g * _mk(m, w if g.dtype.is_complex else w.real)).real.sum()
        if not isinstance(s, m.Tensor) or not s.requires_grad:
            return None
        return m.autograd.grad(s, [x for x in xs if x.requires_grad] + gos, allow_unused=True)

    try:
        tgg = second(torch)
    except RuntimeError:
        pytest.skip("torch has no complex double backward here")
    egg = second(ember)
    if tgg is None:
        assert egg is None or all(g is None or not np.any(_npy(g)) for g in egg)
        return
    assert egg is not None, "ember's gradient is not differentiable"
    for i, (a, b) in enumerate(zip(egg, tgg)):
        if b is None:
            assert a is None or not np.any(_npy(a)), f"second-order grad of input {i}: torch's is None"
        else:
            _close(a if a is not None else ember.zeros(tuple(b.shape), dtype=getattr(ember, str(b.dtype)[6:])),
                   b, f"second-order grad of input {i}")


@pytest.mark.parametrize("op,sample", _cases("fwd_ad"))
def test_complex_fwd_ad(op, sample):
    if not op.supports_fwd:
        pytest.skip("no forward mode")
    arrays, t_outs = _grad_setup(op, sample)
    rng = _rng(op.name, sample.desc, "fwd")
    us = [rng.standard_normal(a.shape) + 1j * rng.standard_normal(a.shape) for a in arrays]

    def tangents(m):
        fw = m.autograd.forward_ad
        with fw.dual_level():
            xs = [fw.make_dual(_mk(m, a), _mk(m, u)) if a.dtype.kind in "fc" else _mk(m, a)
                  for a, u in zip(arrays, us)]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = op.op(m, *xs, **sample.kwargs)
            outs = [o for o in (list(res) if isinstance(res, tuple) else [res])
                    if isinstance(o, m.Tensor) and (o.dtype.is_complex or o.dtype.is_floating_point)]
            return [fw.unpack_dual(o).tangent for o in outs]

    try:
        tt = tangents(torch)
    except (RuntimeError, NotImplementedError):
        pytest.skip("torch has no complex forward mode here")
    et = tangents(ember)
    assert len(et) == len(tt)
    for i, (a, b) in enumerate(zip(et, tt)):
        if b is None:
            assert a is None or not np.any(_npy(a)), f"tangent of output {i}: torch's is None"
        else:
            assert a is not None, f"tangent of output {i}: ember has none"
            _close(a, b, f"tangent of output {i}")


def _gradcheck_setup(m, op, sample):
    """(function of the complex inputs returning the differentiable outputs, inputs) for ``m``'s gradcheck."""
    arrays, _ = _grad_setup(op, sample)
    xs = [_mk(m, a, requires_grad=True) for a in arrays]
    pos = [i for i, x in enumerate(xs) if x.requires_grad]

    def call(*ins):
        full = list(xs)
        for i, t in zip(pos, ins):
            full[i] = t
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = op.op(m, *full, **sample.kwargs)
        return list(res) if isinstance(res, tuple) else [res]

    # the outputs that carry gradients (chosen once: under forward mode no output requires grad)
    outs = call(*(xs[i] for i in pos))
    keep = [j for j, o in enumerate(outs) if _diff_outs([o])]
    if any(outs[j].dtype not in (m.float64, m.complex128) for j in keep):
        pytest.skip("a single-precision output: central differences in it are not precise enough")
    if not all(np.all(np.isfinite(_npy(outs[j]))) for j in keep):
        pytest.skip("a non-finite output")
    return (lambda *ins: tuple(call(*ins)[j] for j in keep)), tuple(xs[i] for i in pos)


def _gradchecks(m, op, sample):
    f, inputs = _gradcheck_setup(m, op, sample)
    if not inputs:
        pytest.skip("no complex input")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.autograd.gradcheck(f, inputs, check_forward_ad=op.supports_fwd)
        if op.supports_gradgrad:
            m.autograd.gradgradcheck(f, inputs)


@pytest.mark.parametrize("op,sample", _cases("gradcheck", first=1))
def test_complex_gradcheck(op, sample):
    """ember's own gradcheck on complex inputs (both Jacobians against Wirtinger central differences, and forward
    mode where the entry has it), and gradgradcheck where it has second order. Where it fails, PyTorch's gradcheck
    runs on the same function: a case that fails PyTorch's own gradcheck too (central differences across a branch
    cut, or on a matrix that is not Hermitian where the op reads one triangle) is skipped, naming that."""
    try:
        _gradchecks(ember, op, sample)
    except Exception as err:  # noqa: BLE001 - compared with what PyTorch's gradcheck does on the same function
        try:
            _gradchecks(torch, op, sample)
        except TorchGradcheckError:
            if isinstance(err, ember.autograd.GradcheckError):
                pytest.skip("PyTorch's own gradcheck fails here too")
        except Exception as t_err:  # noqa: BLE001
            if type(t_err).__name__ == type(err).__name__:   # e.g. no derivative, as PyTorch
                pytest.skip(f"PyTorch's gradcheck raises {type(t_err).__name__} too: {t_err}")
        raise err
