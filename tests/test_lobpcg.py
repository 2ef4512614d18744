"""torch.lobpcg against PyTorch: the same inputs and seed (the random start X comes from PyTorch's stream) give the
same eigenpairs to rounding, the same number of iterations, and the same gradients (PyTorch's custom backward).

Not bit for bit: every step goes through LAPACK (eigh, cholesky, qr, triangular solves) and BLAS matmuls, whose
last bits differ between PyTorch's libraries (MKL/OpenBLAS) and NumPy's; LOBPCG then amplifies them by the
conditioning of the small Rayleigh-Ritz problems (eigenvectors of close eigenvalues most)."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import ember  # noqa: E402


def _spd(m: int, seed: int, spread: float = 1.5, batch: tuple = ()) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(int(np.prod(batch))):
        Q, _ = np.linalg.qr(rng.standard_normal((m, m)))
        A = (Q * np.linspace(1, 50, m) ** spread) @ Q.T
        out.append((A + A.T) / 2)
    return np.stack(out).reshape(batch + (m, m))


def _np(t) -> np.ndarray:
    return np.asarray(t.detach().tolist())


def _run(lib, A, dtype="float64", seed=0, X=None, B=None, **kw):
    lib.manual_seed(seed)
    steps = []
    args = {name: None if v is None else lib.tensor(v, dtype=getattr(lib, dtype)) for name, v in
            (("X", X), ("B", B))}
    E, U = lib.lobpcg(lib.tensor(A, dtype=getattr(lib, dtype)), tracker=lambda w: steps.append(w.ivars["istep"]),
                      **args, **kw)
    return _np(E), _np(U), steps


def _close(t, e, rtol):
    (Et, Ut, st), (Ee, Ue, se) = t, e
    assert st == se
    np.testing.assert_allclose(Ee, Et, rtol=rtol, atol=0)
    sign = np.sign((Ut * Ue).sum(-2, keepdims=True))     # eigenvectors are defined up to sign
    np.testing.assert_allclose(Ue * sign, Ut, atol=rtol ** 0.5 if rtol > 1e-9 else 1e-7)


@pytest.mark.parametrize("method", ["ortho", "basic"])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("m,k,seed", [(20, 1, 0), (30, 3, 1), (50, 4, 2), (40, 2, 3)])
def test_values(method, largest, m, k, seed):
    A = _spd(m, seed)
    kw = dict(k=k, largest=largest, method=method, niter=60, seed=seed)
    _close(_run(torch, A, **kw), _run(ember, A, **kw), 1e-12)


def test_float32_given_X_n_and_B():
    A = _spd(30, 5)
    X = np.random.default_rng(6).standard_normal((30, 4))
    B = _spd(30, 7, spread=0.3) / 10
    for kw in (dict(dtype="float32", k=2), dict(X=X, k=2), dict(k=2, n=4), dict(B=B, k=3)):
        rtol = 1e-4 if kw.get("dtype") == "float32" else 1e-10
        _close(_run(torch, A, **kw), _run(ember, A, **kw), rtol)


def test_batched_and_niter():
    A = _spd(24, 8, batch=(2, 2))
    _close(_run(torch, A, k=2), _run(ember, A, k=2), 1e-12)
    _close(_run(torch, A, k=2, niter=3), _run(ember, A, k=2, niter=3), 1e-8)   # stopped early: same 3 steps


def test_ortho_params():
    A = _spd(40, 9)
    kw = dict(k=3, ortho_iparams={"ortho_i_max": 2}, ortho_fparams={"ortho_tol": 1e-10},
              ortho_bparams={"ortho_use_drop": True})
    _close(_run(torch, A, **kw), _run(ember, A, **kw), 1e-12)


@pytest.mark.parametrize("largest", [True, False])
def test_gradients(largest):
    """PyTorch's LOBPCGAutogradFunction: A symmetrised, the partial-eigenspace adjoint (a fresh default
    generator for the orthogonal complement, so deterministic)."""
    A = _spd(12, 10) + np.random.default_rng(11).standard_normal((12, 12)) * 0.01   # not symmetric
    C = np.random.default_rng(12).standard_normal((12, 12))
    grads = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        At = lib.tensor(A, requires_grad=True)
        E, U = lib.lobpcg(At, k=2, largest=largest)
        assert type(E.grad_fn).__name__ == "LOBPCGAutogradFunctionBackward"
        loss = E.sum() + (U.matmul(U.mT) * lib.tensor(C)).sum()     # sign-free in U
        (g,) = lib.autograd.grad(loss, At)
        grads.append(_np(g))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6, atol=1e-8)


ERRORS = [
    (lambda T: T.lobpcg(T.eye(5, dtype=T.float64), k=2), ValueError),
    (lambda T: T.lobpcg(T.ones(5, 6), k=1), AssertionError),
    (lambda T: T.lobpcg(T.eye(9), k=1, B=T.eye(10)), AssertionError),
    (lambda T: T.lobpcg(T.eye(9), k=1, X=T.ones(8, 1)), AssertionError),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors(i):
    fn, exc = ERRORS[i]
    with pytest.raises(exc) as want:
        fn(torch)
    with pytest.raises(exc) as got:
        fn(ember)
    assert str(got.value) == str(want.value)


def test_backward_with_B_refused():
    for lib in (torch, ember):
        lib.manual_seed(0)
        A = lib.tensor(_spd(12, 3), requires_grad=True)
        E, _ = lib.lobpcg(A, k=1, B=lib.eye(12, dtype=lib.float64))
        with pytest.raises(ValueError, match="B != I"):
            E.sum().backward()
