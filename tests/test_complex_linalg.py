"""Complex linear algebra against torch where the op database cannot say it: losses that depend on the phase
of complex eigen/singular vectors (PyTorch raises), the removed ``torch.eig``, ``mH``/``H``, and eig's
eigenvectors up to their documented gauge (A V = V diag(L), unit columns)."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import ember  # noqa: E402


def _cx(rng, shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _raises_like(fn):
    """Run fn on torch and on ember; both must raise the same type with the same message."""
    errs = []
    for m in (torch, ember):
        with pytest.raises(Exception) as info:
            fn(m)
        errs.append(info.value)
    t, e = errs
    assert type(e).__name__ == type(t).__name__ and str(e) == str(t), (e, t)


def test_eigenvector_phase_dependent_loss_raises():
    rng = np.random.default_rng(0)
    a = _cx(rng, (3, 3))
    h = a + a.conj().T

    def eigh(m):
        x = m.tensor(h, requires_grad=True)
        m.linalg.eigh(x)[1].real.sum().backward()

    def eig(m):
        x = m.tensor(a, requires_grad=True)
        m.linalg.eig(x)[1].real.sum().backward()

    _raises_like(eigh)
    _raises_like(eig)


def test_eig_removed():
    a = np.eye(2)
    _raises_like(lambda m: m.eig(m.tensor(a)))
    _raises_like(lambda m: m.tensor(a).eig())


@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_eig_integer_refused(dtype):
    _raises_like(lambda m: m.linalg.eig(m.ones(2, 2, dtype=getattr(m, dtype))))
    _raises_like(lambda m: m.linalg.eigvals(m.ones(2, 2, dtype=getattr(m, dtype))))


def test_eig_nan_refused():
    a = np.array([[1.0, np.nan], [0.0, 1.0]])
    _raises_like(lambda m: m.linalg.eig(m.tensor(a)))


@pytest.mark.parametrize("cx", [False, True])
def test_eig_gauge(cx):
    rng = np.random.default_rng(1)
    a = _cx(rng, (2, 4, 4)) if cx else rng.standard_normal((2, 4, 4))
    lam, v = ember.linalg.eig(ember.tensor(a))
    tl, tv = torch.linalg.eig(torch.tensor(a))
    lam, v = lam.numpy(), v.numpy()
    np.testing.assert_allclose(np.sort_complex(lam.ravel()), np.sort_complex(tl.numpy().ravel()), rtol=1e-10)
    np.testing.assert_allclose(a.astype(complex) @ v, v * lam[..., None, :], atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1, rtol=1e-12)


def test_mH_conjugates():
    rng = np.random.default_rng(2)
    a = _cx(rng, (2, 3, 4))
    np.testing.assert_array_equal(ember.tensor(a).mH.numpy(), torch.tensor(a).mH.resolve_conj().numpy())
    np.testing.assert_array_equal(ember.tensor(a[0]).H.numpy(), torch.tensor(a[0]).H.resolve_conj().numpy())
    _raises_like(lambda m: m.tensor(a).H)
