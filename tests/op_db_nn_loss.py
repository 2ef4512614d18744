"""Op database entries of torch.nn.functional: losses.

Targets, weights and other non-differentiable arguments travel in the sample's kwargs as NumPy arrays and
become tensors inside the call (weights in the input's dtype, as PyTorch requires). Error samples (forward
only) check that ember raises PyTorch's exception type for the same bad call.
"""
from __future__ import annotations

import numpy as np

from op_db import FLOAT, OpInfo, Sample, draw

NO_GRAD = dict(supports_grad=False, supports_gradgrad=False, supports_fwd=False)
REDUCTIONS = ("mean", "sum", "none")


def _w(m, x, w):
    """A weight array as a tensor of the input's dtype (None stays None)."""
    return None if w is None else m.tensor(w).to(x.dtype)


# ----- nll_loss / cross_entropy ---------------------------------------------------------------------------

def _nll(m, x, target, weight=None, **kw):
    return m.nn.functional.nll_loss(x, m.tensor(target), _w(m, x, weight), **kw)


def _ce(m, x, target, weight=None, **kw):
    t = m.tensor(target)
    if t.dtype.is_floating_point:
        t = t.to(x.dtype)
    return m.nn.functional.cross_entropy(x, t, _w(m, x, weight), **kw)


def _ce_probs(m, x, p, weight=None, **kw):
    """Class probabilities that are themselves differentiable inputs."""
    return m.nn.functional.cross_entropy(x, p, _w(m, x, weight), **kw)


# (input shape, target shape): no batch, a batch, K-dimensional (3-d, 4-d: nll_loss2d, 5-d), empty batch
_CLASS_SHAPES = [((5,), ()), ((3, 5), (3,)), ((2, 3, 4), (2, 4)), ((2, 3, 2, 2), (2, 2, 2)),
                 ((2, 3, 2, 1, 2), (2, 2, 1, 2)), ((0, 4), (0,))]


def _class_samples(extra_kw=({},), ignore=True, weights=True):
    def make(rng):
        out = []
        for (xs, ts) in _CLASS_SHAPES:
            c = xs[0] if len(xs) == 1 else xs[1]
            for red in REDUCTIONS:
                if red == "mean" and 0 in xs:   # nan (forward only, in the error entries)
                    continue
                for kw in extra_kw:
                    t = rng.integers(0, c, ts) if c else np.zeros(ts, np.int64)
                    out.append(Sample((draw(rng, xs),), dict(kw, target=t, reduction=red)))
            if weights and c and ts != () and 0 not in ts:
                t = rng.integers(0, c, ts)
                t.flat[0] = c - 1
                out.append(Sample((draw(rng, xs),), {"target": t, "weight": rng.uniform(0.5, 2, c)}))
                if ignore:
                    t2 = t.copy()
                    t2.flat[-1] = -100
                    out.append(Sample((draw(rng, xs),), {"target": t2, "weight": rng.uniform(0.5, 2, c),
                                                          "reduction": "none"}))
                    out.append(Sample((draw(rng, xs),), {"target": t, "ignore_index": int(t.flat[0])}))
        return out
    return make


def _nll_error_samples(rng):
    x = draw(rng, (3, 5))
    cases = [{"target": np.array([1, 5, 0])}, {"target": np.array([1, -1, 0])},
             {"target": np.array([1, 0, 2], np.int32)}, {"target": np.array([1, 0])},
             {"target": np.array([[1], [0], [2]])}, {"target": np.array([1, 0, 2]), "reduction": "avg"},
             {"target": np.array([1, 0, 2]), "weight": np.ones(4)}, {"target": np.array([1, 0, 2]), "size_average": False},
             {"target": np.array([1, 0, 2]), "reduce": False}, {"target": np.array([1, 0, 2]),
                                                                "reduction": "elementwise_mean"},
             {"target": np.array([-100, -100, -100])}, {"target": np.array([-100, -100, -100]), "reduction": "sum"}]
    out = [Sample((x,), c) for c in cases]
    out += [Sample((draw(rng, ()),), {"target": np.array(0)}),
            Sample((draw(rng, (5,)),), {"target": np.array([1, 2])}),
            Sample((draw(rng, (5,)),), {"target": np.array([1])}),
            Sample((draw(rng, (2, 3, 4)),), {"target": np.zeros((2, 5), np.int64)}),
            Sample((draw(rng, (2, 3, 2, 2)),), {"target": np.zeros((2, 2, 3), np.int64)}),
            Sample((draw(rng, (2, 3, 2, 2)),), {"target": np.zeros((2, 2), np.int64)}),
            Sample((draw(rng, (2, 3, 2, 2)),), {"target": np.full((2, 2, 2), 3)}),
            Sample((draw(rng, (3, 0)),), {"target": np.zeros(3, np.int64)}),
            Sample((draw(rng, (3, 5)),), {"target": np.array([1, 0, 2], np.uint8)}),
            Sample((draw(rng, (0, 3)),), {"target": np.zeros(0, np.int64)}),
            Sample((draw(rng, (0, 3, 2)),), {"target": np.zeros((0, 2), np.int64)})]
    return out


def _ce_error_samples(rng):
    x = draw(rng, (3, 5))
    out = [Sample((x,), c) for c in [
        {"target": np.array([1, 5, 0])}, {"target": np.array([1.0, 0.0, 2.0])}, {"target": np.array([1, 0])},
        {"target": np.array([1, 0, 2]), "label_smoothing": 1.5}, {"target": np.array([1, 0, 2], np.int32)},
        {"target": rng.uniform(0, 1, (3, 5)), "ignore_index": 1}, {"target": np.ones((3, 5), np.int64)},
        {"target": np.array([1, 0, 2]), "reduction": "bad"}, {"target": np.array([1, 0, 2]), "size_average": False},
        {"target": rng.uniform(0, 1, (3, 5)), "weight": np.ones(4)}, {"target": np.array([1, 0, 2]),
                                                                      "weight": np.ones(4)}]]
    out += [Sample((draw(rng, ()),), {"target": np.array(0)}), Sample((draw(rng, ()),), {"target": np.array([0])}),
            Sample((draw(rng, ()),), {"target": np.array(0.5)}), Sample((draw(rng, (0, 3)),), {"target": np.zeros(0, np.int64)}),
            Sample((draw(rng, (0, 3)),), {"target": np.zeros((0, 3))})]
    return out


def _ce_prob_samples(rng):
    out = []
    for shape in ((3, 5), (5,), (2, 3, 2), (0, 3)):
        for red in REDUCTIONS[1:] if 0 in shape else REDUCTIONS:
            for kw in ({}, {"label_smoothing": 0.2}):
                out.append(Sample((draw(rng, shape), rng.uniform(0, 1, shape)), dict(kw, reduction=red)))
    out.append(Sample((draw(rng, (3, 5)), rng.uniform(0, 1, (3, 5))), {"weight": rng.uniform(0.5, 2, 5)}))
    out.append(Sample((draw(rng, (2, 3, 2)), rng.uniform(0, 1, (2, 3, 2))), {"weight": rng.uniform(0.5, 2, 3),
                                                                             "reduction": "none"}))
    out.append(Sample((draw(rng, (4,)), rng.uniform(0, 1, (4,))), {"weight": rng.uniform(0.5, 2, 4),
                                                                  "label_smoothing": 0.1}))
    return out


def _ce_big_samples(reduction):
    # logits of magnitude 1e4: log_softmax's form keeps the loss and its gradient finite. (float16 is
    # compared unreduced: PyTorch sums float16 losses in float16 in a cascade order of its own.)
    def make(rng):
        out = []
        for shape, ts in (((3, 5), (3,)), ((2, 3, 2), (2, 2))):
            x = draw(rng, shape) * 1e4
            out.append(Sample((x,), {"target": rng.integers(0, shape[1], ts), "reduction": reduction}))
            if reduction == "mean":   # (float16 composites round between ops as PyTorch's own order does)
                out.append(Sample((x,), {"target": rng.integers(0, shape[1], ts), "label_smoothing": 0.1,
                                         "reduction": reduction}))
        out.append(Sample((draw(rng, (3, 5)) * 1e4,), {"target": rng.uniform(0, 1, (3, 5)), "reduction": reduction}))
        return out
    return make


OPS: list = [
    OpInfo("nll_loss", _nll, _class_samples()),
    OpInfo("nll_loss_errors", _nll, _nll_error_samples, dtypes=FLOAT + ("float16",), **NO_GRAD),
    OpInfo("cross_entropy", _ce, _class_samples(({}, {"label_smoothing": 0.25}))),
    OpInfo("cross_entropy_ls_weight", _ce, (lambda rng: [Sample((draw(rng, (4, 3)),), {"target": np.array([0, 2, 1, -100]), "label_smoothing": 0.3,
                                                       "weight": rng.uniform(0.5, 2, 3), "reduction": r})
                         for r in REDUCTIONS] +
            [Sample((draw(rng, (2, 3, 2)),), {"target": np.array([[0, 2], [1, 1]]), "label_smoothing": 0.3,
                                               "weight": rng.uniform(0.5, 2, 3), "ignore_index": 1})])),
    OpInfo("cross_entropy_probs", _ce_probs, _ce_prob_samples),
    OpInfo("cross_entropy_big", _ce, _ce_big_samples("mean")),
    OpInfo("cross_entropy_big_none", _ce, _ce_big_samples("none"), dtypes=FLOAT + ("float16",)),
    OpInfo("cross_entropy_errors", _ce, _ce_error_samples, **NO_GRAD),
]
HYP_BINARY: list = []
HYP_UNARY: list = []
