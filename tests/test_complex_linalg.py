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


# ----- the phase check of complex singular vectors (PyTorch's svd_backward) and of eigenvectors ---------------
# A loss of the SVD must be invariant under (U, V) -> (U L, V L), L = diag(e^{i theta}): PyTorch checks
# Im diag(U^H gU) + Im diag(V^H gV) = 0 on the gradients of U and Vh together (one node, LinalgSvdBackward0),
# so a loss that depends on U and Vh only through u_k v_k^H passes while each alone would not.

_SVD_LOSSES = {
    "S": lambda U, S, Vh: S.sum(),
    "U_abs": lambda U, S, Vh: U.abs().sum(),
    "U_real": lambda U, S, Vh: U.real.sum(),                       # phase-dependent: raises
    "Vh_real": lambda U, S, Vh: Vh.real.sum(),                     # phase-dependent: raises
    "U_and_Vh": lambda U, S, Vh: U.real.sum() + Vh.imag.sum(),     # phase-dependent: raises
    "outer": lambda U, S, Vh: (U[..., :, :1] @ Vh[..., :1, :]).real.sum(),   # invariant only as a whole
    "reconstruct": lambda U, S, Vh: ((U * S.to(U.dtype).unsqueeze(-2)) @ Vh).abs().sum(),
}


def _svd_grad(m, a, loss, full, create_graph=False, via="linalg"):
    x = m.tensor(a, requires_grad=True)
    if via == "linalg":
        U, S, Vh = m.linalg.svd(x, full_matrices=full)
    else:   # torch.svd: V, not Vh
        U, S, V = m.svd(x, some=not full)
        Vh = V.mH
    g, = m.autograd.grad(loss(U, S, Vh), x, create_graph=create_graph)
    if create_graph:   # a second derivative through the first: the check holds for the whole again
        g, = m.autograd.grad((g * g.conj()).real.sum(), x)
    return g.detach().numpy()


def _same_outcome(fn):
    """fn(m) on torch and ember: both raise the same error, or both give the same values."""
    res = []
    for m in (torch, ember):
        try:
            res.append(fn(m))
        except RuntimeError as e:
            res.append(e)
    t, e = res
    if isinstance(t, Exception):
        assert isinstance(e, Exception) and str(e) == str(t), (e, t)
    else:
        assert not isinstance(e, Exception), e
        np.testing.assert_allclose(e, t, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3), (2, 3, 2)])
@pytest.mark.parametrize("loss", sorted(_SVD_LOSSES))
def test_svd_phase_check(shape, loss):
    a = _cx(np.random.default_rng(len(shape) * 10 + shape[-1]), shape)
    for full in (False, True):
        _same_outcome(lambda m: _svd_grad(m, a, _SVD_LOSSES[loss], full))
    _same_outcome(lambda m: _svd_grad(m, a, _SVD_LOSSES[loss], False, create_graph=True))
    _same_outcome(lambda m: _svd_grad(m, a, _SVD_LOSSES[loss], False, via="legacy"))


def test_svd_one_node():
    x = ember.tensor(_cx(np.random.default_rng(1), (3, 2)), requires_grad=True)
    U, S, Vh = ember.linalg.svd(x)
    assert U.grad_fn is S.grad_fn is Vh.grad_fn and U.grad_fn.name() == "LinalgSvdBackward0"
    assert (U.output_nr, S.output_nr, Vh.output_nr) == (0, 1, 2)


def test_svd_saved_outputs_modified():
    # PyTorch's node saves U, S and Vh: changing one in place fails its backward (ember's message names the
    # node that saved it, after PyTorch's text)
    errs = []
    for m in (torch, ember):
        x = m.tensor(np.random.default_rng(2).standard_normal((3, 2)), requires_grad=True)
        U, S, Vh = m.linalg.svd(x, full_matrices=False)
        loss = U.sum()
        S.mul_(2)
        with pytest.raises(RuntimeError) as info:
            loss.backward()
        errs.append(str(info.value))
    assert errs[1].startswith(errs[0]), errs


@pytest.mark.parametrize("fn", ["svd_lowrank", "pca_lowrank"])
@pytest.mark.parametrize("loss", ["S", "U_abs", "U_real", "outer"])
def test_lowrank_complex(fn, loss):
    a = _cx(np.random.default_rng(3), (5, 4))

    def run(m):
        m.manual_seed(0)
        x = m.tensor(a, requires_grad=True)
        U, S, V = getattr(m, fn)(x, q=3)
        g, = m.autograd.grad(_SVD_LOSSES[loss](U, S, V.mH), x)
        return np.concatenate([U.detach().numpy().ravel(), g.numpy().ravel()])
    _same_outcome(run)


@pytest.mark.parametrize("which", ["eig", "eigh"])
@pytest.mark.parametrize("loss", ["V_abs", "V_real", "outer", "L_and_V_imag", "V_nan"])
def test_eigenvector_phase_check(which, loss):
    losses = {"V_abs": lambda L, V: V.abs().sum(), "V_real": lambda L, V: V.real.sum(),
              "outer": lambda L, V: (V[:, :1] @ V[:, :1].mH).real.sum(),
              "L_and_V_imag": lambda L, V: V.imag.sum() + L.real.sum(),
              "V_nan": lambda L, V: (V * float("nan")).real.sum()}   # a NaN fails PyTorch's allclose
    a = _cx(np.random.default_rng(4), (3, 3))
    if which == "eigh":
        a = a + a.conj().T

    def run(m, create_graph=False):
        x = m.tensor(a, requires_grad=True)
        L, V = getattr(m.linalg, which)(x)
        g, = m.autograd.grad(losses[loss](L, V), x, create_graph=create_graph)
        return g.detach().numpy()
    _same_outcome(run)
    _same_outcome(lambda m: run(m, True))


def test_solve_ex_device_solver_singular():
    # A's LU (its info) has no zero pivot, while the device's solver (NumPy's LAPACK) meets one for X A = B:
    # solve_ex returns what A's LU gives (as PyTorch's, nearly singular: huge values), it does not raise
    a = np.array([[1, 1, 1], [2, 2, 3], [1, 1, 2]], dtype=np.complex128) * np.array([[1 + 1j], [0.5 - 2j], [3j]])
    b = np.array([[1 + 2j, 3, 0.5], [0, -1j, 2]])
    x, info = ember.linalg.solve_ex(ember.tensor(a), ember.tensor(b), left=False)
    assert info.item() == torch.linalg.solve_ex(torch.tensor(a), torch.tensor(b), left=False)[1].item() == 0
    assert np.all(np.isfinite(x.numpy()))
