"""Gradients at ties and kinks, where PyTorch picks a convention: ember must pick the same one."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

DATA = [[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]]

CASES = {
    "max_all": lambda m, x: x.max(),
    "min_all": lambda m, x: x.min(),
    "amax_dim": lambda m, x: x.amax(1),
    "amin_dims": lambda m, x: x.amin((0, 1)),
    "max_dim": lambda m, x: x.max(1).values,
    "maximum": lambda m, x: m.maximum(x, m.full_like(x, 2.0)),
    "minimum": lambda m, x: m.minimum(x, m.full_like(x, 2.0)),
    "clamp": lambda m, x: x.clamp(2.0, 3.0),
    "relu": lambda m, x: (x - 2.0).relu(),
    "abs": lambda m, x: (x - 2.0).abs(),
    "norm_zero": lambda m, x: (x * 0).norm(),
}
# At the norm's singular point PyTorch's second derivative is nan (0/0); ember's rule masks it to 0.
FIRST_ORDER_ONLY = {"norm_zero"}


def _np(t):
    return None if t is None else np.array(t.detach().clone().tolist())


@pytest.mark.parametrize("name", sorted(CASES))
def test_first_and_second_order_at_ties(name):
    grads = []
    for m in (torch, ember):
        x = m.tensor(DATA, dtype=m.float64, requires_grad=True)
        y = CASES[name](m, x)
        w = m.tensor(np.linspace(0.5, 1.5, y.numel()).reshape(tuple(y.shape)).tolist(), dtype=m.float64)
        g, = m.autograd.grad((y * w).sum(), x, create_graph=True)
        gg = None
        if g.requires_grad and name not in FIRST_ORDER_ONLY:
            gg = m.autograd.grad((g * g).sum(), x, allow_unused=True)[0]
        grads.append((_np(g), g.requires_grad, _np(gg)))
    (tg, trg, tgg), (eg, erg, egg) = grads
    np.testing.assert_allclose(eg, tg, rtol=1e-12, atol=1e-12)
    if tgg is None or egg is None:
        # piecewise-linear ops: the gradient is constant in x, so no second derivative (or zero)
        assert tgg is None or not tgg.any()
        assert egg is None or not egg.any()
    else:
        np.testing.assert_allclose(egg, tgg, rtol=1e-12, atol=1e-12)
