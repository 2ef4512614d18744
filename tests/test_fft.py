"""torch.fft and stft/istft against real torch: graph nodes, PyTorch's errors and warnings, dtype rules, out=,
frequencies, and stft/istft values, round trips and gradients (the op database, tests/op_db_fft.py, checks the
values, gradients of first and second order and forward mode of every transform)."""
from __future__ import annotations

import os
import sys
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, os.path.dirname(__file__))
import ember  # noqa: E402
import op_db  # noqa: E402,F401  (first: op_db imports op_db_fft)
from op_db_fft import ERRORS  # noqa: E402

TRANSFORMS = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2",
              "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn"]
F64 = dict(rtol=1e-12, atol=1e-13)


def _both(a):
    return torch.tensor(a), ember.tensor(a)


def _run(m, fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(m), None
        except Exception as e:  # noqa: BLE001
            return None, e


def _chain(fn) -> list:
    """The node names of a graph, depth first (what autograd would walk)."""
    out, stack = [], [fn]
    while stack:
        f = stack.pop()
        if f is None:
            continue
        out.append(type(f).__name__)
        stack.extend(n for n, _ in f.next_functions)
    return out


def test_namespace():
    from ember import fft
    names = sorted(n for n in dir(torch.fft) if not n.startswith("_") and callable(getattr(torch.fft, n))
                   and n not in ("Tensor",))
    assert [n for n in names if not hasattr(fft, n)] == []
    assert ember.fft.fft is fft.fft


@pytest.mark.parametrize("name", TRANSFORMS)
@pytest.mark.parametrize("kind", ["real", "complex"])
@pytest.mark.parametrize("kw", [{}, {"n": 7}, {"n": 3}], ids=["default", "pad", "trim"])
def test_graph_nodes_are_pytorchs(name, kind, kw):
    """The primitives and the steps around them (ToCopy, Conj, ConjPhysical, ConstantPadNd, Slice) are torch's."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 6))
    if kind == "complex":
        a = a + 1j * rng.standard_normal((4, 6))
    if kw and not name.endswith(("fft", "ifft")) or (kw and name[-1] in "2n"):
        kw = {"s": (3, kw["n"])}
    t, e = _both(a)
    rt, et = _run(torch, lambda m: getattr(m.fft, name)(t.requires_grad_(), **kw))
    re, ee = _run(ember, lambda m: getattr(m.fft, name)(e.requires_grad_(), **kw))
    if et is not None:
        assert type(ee) is type(et) and str(ee) == str(et)
        return
    assert ee is None, ee
    assert _chain(re.grad_fn) == _chain(rt.grad_fn)
    assert re.dtype == getattr(ember, str(rt.dtype).split(".")[1])
    np.testing.assert_allclose(re.detach().numpy(), rt.detach().resolve_conj().numpy(), **F64)


@pytest.mark.parametrize("case", ERRORS, ids=lambda c: f"{c[1]['fn']}-{c[0][0]}-{sorted(c[1].items())}")
def test_errors_match_torch(case):
    (shape,), kw = case
    kw = dict(kw)
    fn = kw.pop("fn")
    a = np.ones(shape)
    t, e = _both(a)
    _, et = _run(torch, lambda m: getattr(m.fft, fn)(t, **kw))
    _, ee = _run(ember, lambda m: getattr(m.fft, fn)(e, **kw))
    assert et is not None and ee is not None, (et, ee)
    assert type(ee) is type(et)
    if "MKL" not in str(et):
        assert str(ee) == str(et)


@pytest.mark.parametrize("fn", ["fft", "rfft", "irfft", "fftn", "ihfft2"])
def test_dtypes(fn):
    for src in ("float16", "int64", "int32", "bool", "float32", "float64"):
        a = (np.arange(6) % 2).astype(src)
        t, e = _both(a)
        rt, et = _run(torch, lambda m: getattr(m.fft, fn)(t))
        re, ee = _run(ember, lambda m: getattr(m.fft, fn)(e))
        if et is not None:
            assert type(ee) is type(et) and str(ee) == str(et), (src, ee, et)
        else:
            assert str(re.dtype) == str(rt.dtype), src
            np.testing.assert_allclose(re.numpy(), rt.numpy(), rtol=1e-6, atol=1e-6)


def test_argument_types():
    t, e = _both(np.ones(4))
    for kw in ({"n": 2.5}, {"norm": 1}, {"dim": (0,)}):
        _, et = _run(torch, lambda m: m.fft.fft(t, **kw))
        _, ee = _run(ember, lambda m: m.fft.fft(e, **kw))
        assert type(ee) is type(et) is TypeError
        assert str(ee).startswith(str(et).split(" must be")[0])


def test_out():
    a = np.random.default_rng(1).standard_normal((4, 6))
    t, e = _both(a)
    for dt in ("complex128", "complex64"):
        ot, oe = torch.empty(4, 6, dtype=getattr(torch, dt)), ember.empty(4, 6, dtype=getattr(ember, dt))
        rt, re = torch.fft.fft(t, out=ot), ember.fft.fft(e, out=oe)
        assert re is oe and rt is ot and oe.dtype == getattr(ember, dt)
        np.testing.assert_allclose(oe.numpy(), ot.numpy(), rtol=1e-6)
    oe = ember.empty(2, dtype=ember.float64)
    with pytest.warns(UserWarning, match="was resized"):
        ember.fft.irfft(e.to(ember.complex128), out=oe)
    assert tuple(oe.shape) == (4, 10)
    np.testing.assert_allclose(oe.numpy(), torch.fft.irfft(t.to(torch.complex128)).numpy(), **F64)
    with pytest.raises(RuntimeError, match="fft expects a complex output tensor, but got Double"):
        ember.fft.fft(e, out=ember.empty(4, 6, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="irfft expects a floating point output tensor, but got ComplexDouble"):
        ember.fft.irfft(e, out=ember.empty(2, dtype=ember.complex128))
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        ember.fft.fft(e.clone().requires_grad_(), out=ember.empty(4, 6, dtype=ember.complex128))


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
def test_frequencies_bit_for_bit(name):
    for n, d in [(1, 1.0), (5, 1.0), (8, 0.1), (9, 2.5), (0, 1.0), (16, 1 / 3)]:
        for dt in ("float32", "float64"):
            if n == 0 and name == "rfftfreq":
                continue
            rt = getattr(torch.fft, name)(n, d, dtype=getattr(torch, dt))
            re = getattr(ember.fft, name)(n, d, dtype=getattr(ember, dt))
            assert str(re.dtype) == str(rt.dtype)
            np.testing.assert_array_equal(re.numpy(), rt.numpy())
    assert getattr(ember.fft, name)(4).dtype is ember.float32
    assert getattr(ember.fft, name)(4, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="requires a floating point or complex dtype"):
        getattr(ember.fft, name)(4, dtype=ember.int64)


def test_shifts():
    a = np.arange(30.0).reshape(5, 6)
    t, e = _both(a)
    for dim in (None, 0, -1, (0, 1), (1,)):
        for name in ("fftshift", "ifftshift"):
            np.testing.assert_array_equal(getattr(ember.fft, name)(e, dim).numpy(),
                                          getattr(torch.fft, name)(t, dim).numpy())
    np.testing.assert_array_equal(ember.fft.ifftshift(ember.fft.fftshift(e)).numpy(), a)


@pytest.mark.parametrize("norm", [None, "backward", "ortho", "forward"])
def test_round_trips(norm):
    a = np.random.default_rng(2).standard_normal((3, 8))
    e = ember.tensor(a)
    np.testing.assert_allclose(ember.fft.ifft(ember.fft.fft(e, norm=norm), norm=norm).real.numpy(), a, **F64)
    np.testing.assert_allclose(ember.fft.irfft(ember.fft.rfft(e, norm=norm), n=8, norm=norm).numpy(), a, **F64)
    np.testing.assert_allclose(ember.fft.hfft(ember.fft.ihfft(e, norm=norm), n=8, norm=norm).numpy(), a, **F64)
    np.testing.assert_allclose(ember.fft.irfftn(ember.fft.rfftn(e, norm=norm), s=(3, 8), norm=norm).numpy(), a,
                               **F64)


# ----- stft / istft -------------------------------------------------------------------------------------------

STFT_CASES = [dict(n_fft=8), dict(n_fft=8, hop_length=3, win_length=6), dict(n_fft=16, center=False),
              dict(n_fft=8, pad_mode="constant", normalized=True), dict(n_fft=8, onesided=False),
              dict(n_fft=10, hop_length=2, pad_mode="replicate"),
              dict(n_fft=8, win_length=5, center=False, align_to_window=True)]


def _stft(m, a, kw, window=True, cx=True):
    wl = kw.get("win_length", kw["n_fft"])
    w = m.hann_window(wl, dtype=a.real.dtype) if window else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return m.stft(a, window=w, return_complex=cx, **kw), w


@pytest.mark.parametrize("kw", STFT_CASES, ids=lambda k: ",".join(f"{a}={b}" for a, b in k.items()))
@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128"])
@pytest.mark.parametrize("window", [True, False], ids=["hann", "rect"])
def test_stft_istft_vs_torch(kw, dtype, window):
    """Values within 1e-6 relative (float64 and complex128: ~1e-15 measured; float32: ~2e-7 measured)."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 50))
    if dtype == "complex128":
        a = a + 1j * rng.standard_normal((2, 50))
        if kw.get("onesided") is None and "onesided" not in kw:
            kw = dict(kw, onesided=False)
    a = a.astype(dtype)
    tol = dict(rtol=1e-6 if dtype != "float32" else 1e-5, atol=1e-6 if dtype != "float32" else 1e-5)
    t, e = _both(a)
    xt, wt = _stft(torch, t, kw, window)
    xe, we = _stft(ember, e, kw, window)
    assert str(xe.dtype) == str(xt.dtype) and tuple(xe.shape) == tuple(xt.shape)
    np.testing.assert_allclose(xe.numpy(), xt.numpy(), **tol)
    if kw.get("align_to_window") or (kw.get("center") is False and window):
        return   # torch's istft has no align_to_window; a hann window's edges do not overlap-add (NOLA) uncentred
    ik = {k: v for k, v in kw.items() if k not in ("pad_mode",)}
    cx = dtype == "complex128"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yt = torch.istft(xt, window=wt, return_complex=cx, **ik)
        ye = ember.istft(xe, window=we, return_complex=cx, **ik)
        ye2 = xe.istft(window=we, return_complex=cx, length=45, **ik)
    np.testing.assert_allclose(ye.numpy(), yt.numpy(), **tol)
    np.testing.assert_allclose(ye.numpy(), a[:, :ye.shape[-1]], **tol)           # the round trip
    assert tuple(ye2.shape) == (2, 45)


def test_stft_1d_and_real_output():
    a = np.random.default_rng(4).standard_normal(37)
    t, e = _both(a)
    xt, _ = _stft(torch, t, dict(n_fft=8), cx=False)
    xe, _ = _stft(ember, e, dict(n_fft=8), cx=False)
    assert tuple(xe.shape) == tuple(xt.shape) == (5, 19, 2)
    np.testing.assert_allclose(xe.numpy(), xt.numpy(), **F64)


@pytest.mark.parametrize("kw", STFT_CASES[:5], ids=lambda k: ",".join(f"{a}={b}" for a, b in k.items()))
def test_stft_istft_gradients(kw):
    """First and second order through stft and istft (signal and window), vs torch."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((2, 40))
    res = []
    for m in (torch, ember):
        x = m.tensor(a, requires_grad=True)
        w = m.hann_window(kw.get("win_length", kw["n_fft"]), dtype=m.float64).requires_grad_()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            X = m.stft(x, window=w, return_complex=True, **kw)
            ik = {k: v for k, v in kw.items() if k != "pad_mode"}
            y = m.istft(X * (1 + 0.5j), window=w.detach() + 0.5, **ik) if kw.get("center", True) else X.abs()
        loss = (m.view_as_real(X) ** 2).sum() + (y ** 3).sum()
        gx, gw = m.autograd.grad(loss, (x, w), create_graph=True)
        hx, hw = m.autograd.grad((gx ** 2).sum() + gw.sum(), (x, w))
        res.append([v.detach().numpy() for v in (gx, gw, hx, hw)])
    for e, t in zip(res[1], res[0]):
        np.testing.assert_allclose(e, t, rtol=1e-9, atol=1e-9)


def test_stft_errors_and_warnings():
    a = np.random.default_rng(6).standard_normal((2, 40))
    t, e = _both(a)
    cases = [
        lambda m, x: m.stft(x, 8),
        lambda m, x: m.stft(x, 8, window=m.ones(8, dtype=m.float64), return_complex=True, align_to_window=True),
        lambda m, x: m.stft(x, 8, window=m.ones(6, dtype=m.float64), return_complex=True),
        lambda m, x: m.stft(x, 8, hop_length=0, window=m.ones(8, dtype=m.float64), return_complex=True),
        lambda m, x: m.stft(x.int(), 8, window=m.ones(8), return_complex=True),
        lambda m, x: m.stft(x[None], 8, window=m.ones(8, dtype=m.float64), return_complex=True),
        lambda m, x: m.stft(x.to(m.complex128), 8, window=m.ones(8, dtype=m.float64), onesided=True),
        lambda m, x: m.stft(x, 8, window=m.ones(8, dtype=m.float64), return_complex=True, pad_mode="bad"),
        lambda m, x: m.stft(x, 8, win_length=9, window=m.ones(9, dtype=m.float64), return_complex=True,
                            center=False),
        lambda m, x: m.istft(x, 8),
        lambda m, x: m.istft(m.stft(x, 8, window=m.ones(8, dtype=m.float64), return_complex=True), 6,
                             window=m.ones(8, dtype=m.float64)),
        lambda m, x: m.istft(m.stft(x, 8, window=m.ones(8, dtype=m.float64), return_complex=True), 8,
                             window=m.ones(7, dtype=m.float64)),
        lambda m, x: m.istft(m.stft(x, 8, window=m.ones(8, dtype=m.float64), return_complex=True)[:, :, :0], 8,
                             window=m.ones(8, dtype=m.float64)),
        lambda m, x: m.istft(m.stft(x, 8, window=m.ones(8, dtype=m.float64), return_complex=True), 8,
                             window=m.ones(8, dtype=m.float64), return_complex=True),
        lambda m, x: m.istft(m.stft(x, 16, window=m.hann_window(16, dtype=m.float64), return_complex=True,
                                    center=False), 16, window=m.hann_window(16, dtype=m.float64), center=False),
    ]
    for i, c in enumerate(cases):
        _, et = _run(torch, lambda m: c(m, t))
        _, ee = _run(ember, lambda m: c(m, e))
        assert et is not None and type(ee) is type(et), (i, ee, et)
        assert str(ee) == str(et).split(" (Triggered internally")[0], i
    # (PyTorch warns once per process, TORCH_WARN_ONCE: ember through Python's warnings, once per call site)
    for m, x in ((ember, e),):
        with pytest.warns(UserWarning, match="A window was not provided"):
            m.stft(x, 8, return_complex=True)
        with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
            m.stft(x, 8, window=m.ones(8, dtype=m.float64), return_complex=False)
        with pytest.warns(UserWarning, match="shorter than the length parameter"):
            m.istft(m.stft(x, 8, window=m.ones(8, dtype=m.float64), return_complex=True), 8,
                    window=m.ones(8, dtype=m.float64), length=60)
