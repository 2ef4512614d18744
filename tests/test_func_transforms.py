"""torch.func's transforms composed to depth two and three (vmap, grad, vjp, jvp, jacrev, jacfwd, hessian,
linearize, chunk_size), against torch.func on the same inputs and functions."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

def f(m):
    W = m.tensor(np.linspace(-1, 1, 12).reshape(3, 4))
    return lambda x: m.tanh(W @ x).sin()
def g(m):
    W = m.tensor(np.linspace(-1, 1, 12).reshape(3, 4))
    return lambda x: (m.tanh(W @ x) ** 2).sum()
XS = np.random.default_rng(0).standard_normal((5, 4))
X0 = XS[0]
cases = {
 "vmap(jacrev)": lambda m: m.func.vmap(m.func.jacrev(f(m)))(m.tensor(XS)),
 "vmap(jacfwd)": lambda m: m.func.vmap(m.func.jacfwd(f(m)))(m.tensor(XS)),
 "jacrev(jacrev)": lambda m: m.func.jacrev(m.func.jacrev(f(m)))(m.tensor(X0)),
 "jacfwd(jacfwd)": lambda m: m.func.jacfwd(m.func.jacfwd(f(m)))(m.tensor(X0)),
 "jacrev(jacfwd)": lambda m: m.func.jacrev(m.func.jacfwd(f(m)))(m.tensor(X0)),
 "vmap(hessian)": lambda m: m.func.vmap(m.func.hessian(g(m)))(m.tensor(XS)),
 "grad(grad(sum grad))": lambda m: m.func.grad(lambda x: m.func.grad(g(m))(x).sum())(m.tensor(X0)),
 "jvp(grad)": lambda m: m.func.jvp(m.func.grad(g(m)), (m.tensor(X0),), (m.ones(4, dtype=m.float64),))[1],
 "grad(jvp)": lambda m: m.func.grad(lambda x: m.func.jvp(g(m), (x,), (m.ones(4, dtype=m.float64),))[1])(m.tensor(X0)),
 "vmap(vjp)": lambda m: m.func.vmap(lambda x: m.func.vjp(f(m), x)[1](m.ones(3, dtype=m.float64))[0])(m.tensor(XS)),
 "vmap(vmap(grad))": lambda m: m.func.vmap(m.func.vmap(m.func.grad(g(m))))(m.tensor(XS.reshape(5, 1, 4).repeat(2, 1))),
 "jvp(jvp)": lambda m: m.func.jvp(lambda x: m.func.jvp(f(m), (x,), (m.ones(4, dtype=m.float64),))[1], (m.tensor(X0),), (m.ones(4, dtype=m.float64),))[1],
 "vmap(grad) in_dims None": lambda m: m.func.vmap(m.func.grad(lambda w, x: (w * x).sin().sum()), in_dims=(None, 0))(m.tensor(X0), m.tensor(XS)),
 "grad(vmap)": lambda m: m.func.grad(lambda x: m.func.vmap(g(m))(x).sum())(m.tensor(XS)),
 "jacrev chunk": lambda m: m.func.jacrev(f(m), chunk_size=2)(m.tensor(X0)),
 "vmap chunk": lambda m: m.func.vmap(f(m), chunk_size=2)(m.tensor(XS)),
 "linearize": lambda m: m.func.linearize(f(m), m.tensor(X0))[1](m.ones(4, dtype=m.float64)),
}


@pytest.mark.parametrize("name", sorted(cases))
def test_composition_matches_torch(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = cases[name](ember)
        ref = cases[name](torch)
    assert tuple(got.shape) == tuple(ref.shape)
    assert str(got.dtype) == str(ref.dtype)
    np.testing.assert_allclose(got.detach().numpy(), ref.detach().numpy(), rtol=1e-9, atol=1e-12)


def test_vmap_swap_around_autocast_and_profiler_regions():
    """vmap swaps the public ops' code in and out; autocast regions and the profiler swap some of the same functions
    between two vmap calls (and around one): each call still runs the public runners (here: randomness='same'
    and 'different' of torch.rand), and every function has its own code again afterwards."""
    from ember.autograd import _primitive
    watched = (ember.rand, ember.nn.functional.linear, ember.mm, _primitive.apply)
    codes = [f.__code__ for f in watched]
    x = ember.zeros(4, 3)

    def draw(randomness):
        before = [f.__code__ for f in watched]   # (autocast's or the profiler's inside their regions)
        out = ember.func.vmap(lambda r: ember.mm(r.unsqueeze(0), ember.eye(3)).squeeze(0) + ember.rand(3),
                             randomness=randomness)(x)
        assert [f.__code__ for f in watched] == before
        return out

    def check():
        same, diff = draw("same"), draw("different")
        assert all(ember.equal(same[0], row) for row in same)
        assert not ember.equal(diff[0], diff[1])

    check()
    with ember.autocast("cpu"):
        ember.mm(ember.ones(2, 2), ember.ones(2, 2))
        check()   # vmap inside an autocast region
    check()
    with ember.profiler.profile():
        check()   # vmap while the profiler records
    check()
    assert [f.__code__ for f in watched] == codes
