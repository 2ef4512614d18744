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


def _ce_ls_weight_samples(rng):
    out = [Sample((draw(rng, (4, 3)),), {"target": np.array([0, 2, 1, -100]), "label_smoothing": 0.3,
                                         "weight": rng.uniform(0.5, 2, 3), "reduction": r}) for r in REDUCTIONS]
    out.append(Sample((draw(rng, (2, 3, 2)),), {"target": np.array([[0, 2], [1, 1]]), "label_smoothing": 0.3,
                                                "weight": rng.uniform(0.5, 2, 3), "ignore_index": 1}))
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



# ----- pointwise regression losses ----------------------------------------------------------------------------

_PAIRS = [((3, 4), (3, 4)), ((), ()), ((3, 4), (4,)), ((2, 1, 3), (2, 3)), ((0, 3), (0, 3))]


def _pair_samples(doms=("grid_a", "grid_b"), kws=({},), reductions=REDUCTIONS, pairs=None, empty_mean=False):
    def make(rng):
        out = []
        for sa, sb in pairs or _PAIRS:
            for red in reductions:
                if 0 in sa and red == "mean" and not empty_mean:
                    continue
                for kw in kws:
                    out.append(Sample((draw(rng, sa, doms[0]), draw(rng, sb, doms[1])), dict(kw, reduction=red)))
        return out
    return make


def _loss(name):
    def op(m, a, b, weight=None, **kw):
        f = getattr(m.nn.functional, name)
        return f(a, b, **kw) if weight is None else f(a, b, weight=m.tensor(weight).to(a.dtype), **kw)
    return op


def _weighted_samples(rng):
    return [Sample((draw(rng, (3, 4), "grid_a"), draw(rng, (3, 4), "grid_b")),
                   {"weight": rng.uniform(0.5, 2, (3, 4)), "reduction": r}) for r in REDUCTIONS]


def _legacy_samples(rng):
    return [Sample((draw(rng, (3, 4), "grid_a"), draw(rng, (3, 4), "grid_b")), kw)
            for kw in ({"size_average": False}, {"reduce": False}, {"size_average": True, "reduce": True})]


def _pointwise_error_samples(rng):
    a, b = draw(rng, (3, 4)), draw(rng, (3, 4))
    return [Sample((a, b), {"reduction": "avg"}), Sample((a, b[:, :2].copy()), {}),
            Sample((a, b), {"weight": np.ones(4)}), Sample((a, b), {"reduction": "elementwise_mean"}),
            Sample((a, b), {"weight": np.ones((3, 4)), "reduction": "avg"}), Sample((a[:0], b[:0]), {})]


def _int_target(name, **kw):
    def op(m, a, b):
        return getattr(m.nn.functional, name)(a, (b > 0).to(m.int64), **kw)
    return op


def _int_both(name):
    def op(m, a, b):
        return getattr(m.nn.functional, name)((a > 0).to(m.int64), (b > 0).to(m.int64))
    return op


def _mixed_dtype(name):
    def op(m, a, b, **kw):
        return getattr(m.nn.functional, name)(a.float(), b.double(), **kw)
    return op


# ----- binary cross entropy ------------------------------------------------------------------------------

def _unit(rng, shape):
    return np.asarray(rng.uniform(0.05, 0.95, shape))


def _bce_samples(rng):
    out = []
    for shape in ((3, 4), (), (5,), (2, 1, 3), (0, 2)):
        for red in REDUCTIONS:
            if 0 in shape and red == "mean":
                continue
            out.append(Sample((_unit(rng, shape), _unit(rng, shape)), {"reduction": red}))
    out += [Sample((_unit(rng, (3, 4)), _unit(rng, (3, 4))), {"weight": rng.uniform(0.5, 2, w), "reduction": r})
            for w, r in (((3, 4), "mean"), ((4,), "sum"), ((1, 4), "none"))]
    return out


def _bce_edge_samples(rng):
    # probabilities of exactly 0 and 1: the clamped logs keep the loss finite (forward only: the gradient is
    # PyTorch's clamped one, with no central differences at the boundary)
    x = np.array([0.0, 1.0, 0.5, 1.0, 0.0])
    y = np.array([1.0, 0.0, 0.5, 1.0, 0.0])
    return [Sample((x, y), {"reduction": r}) for r in REDUCTIONS]


def _bce_error_samples(rng):
    x, y = _unit(rng, (3, 4)), _unit(rng, (3, 4))
    return [Sample((x + 1, y), {}), Sample((x, y + 1), {}), Sample((x, y[0].copy()), {}),
            Sample((x, y), {"reduction": "avg"}), Sample((x, y), {"weight": np.ones(5)}),
            Sample((x, y), {"size_average": False}), Sample((x, y), {"weight": np.ones((2, 3, 4))})]


def _bce_logits(m, a, b, weight=None, pos_weight=None, **kw):
    return m.nn.functional.binary_cross_entropy_with_logits(
        a, b, None if weight is None else m.tensor(weight).to(a.dtype), **kw,
        pos_weight=None if pos_weight is None else m.tensor(pos_weight).to(a.dtype))


def _bce_logits_samples(rng):
    out = []
    for shape in ((3, 4), (), (5,), (2, 1, 3), (0, 2)):
        for red in REDUCTIONS:
            if 0 in shape and red == "mean":
                continue
            out.append(Sample((np.asarray(draw(rng, shape) * 2), _unit(rng, shape)), {"reduction": red}))
    out += [Sample((draw(rng, (3, 4)) * 2, _unit(rng, (3, 4))), kw) for kw in (
        {"weight": rng.uniform(0.5, 2, (3, 4))}, {"weight": rng.uniform(0.5, 2, (4,)), "reduction": "sum"},
        {"pos_weight": rng.uniform(0.5, 3, (4,))}, {"pos_weight": rng.uniform(0.5, 3, (3, 4)), "reduction": "none"},
        {"pos_weight": rng.uniform(0.5, 3, ()), "weight": rng.uniform(0.5, 2, (3, 1)), "reduction": "sum"})]
    return out


def _bce_logits_big_samples(rng):
    # logits of magnitude 1e4 with 0/1 targets: finite losses, gradients sigmoid(x) - y
    x = rng.choice([-1.0, 1.0], (3, 4)) * rng.uniform(0.5, 1.0, (3, 4)) * 1e4
    y = (rng.random((3, 4)) > 0.5).astype(np.float64)
    return [Sample((x, y), {"reduction": "none"}), Sample((x, y), {"reduction": "none",
                                                                  "pos_weight": np.array([1.0, 2.0, 0.5, 4.0])})]


def _bce_logits_error_samples(rng):
    x, y = draw(rng, (3, 4)), _unit(rng, (3, 4))
    return [Sample((x, y[0].copy()), {}), Sample((x, y), {"reduction": "avg"}), Sample((x, y), {"weight": np.ones(5)}),
            Sample((x, y), {"pos_weight": np.ones((2, 3, 4))}), Sample((x, y), {"reduce": False})]


# ----- kl_div, poisson_nll_loss, gaussian_nll_loss ---------------------------------------------------------

def _kl(m, a, b, **kw):
    return m.nn.functional.kl_div(a, b, **kw)


def _kl_samples(rng):
    out = []
    for sa in ((3, 4), (5,), (), (2, 3, 2)):
        for red in REDUCTIONS + ("batchmean",):
            out.append(Sample((draw(rng, sa), draw(rng, sa, "positive")), {"reduction": red}))
            out.append(Sample((draw(rng, sa), draw(rng, sa)), {"reduction": red, "log_target": True}))
    out.append(Sample((draw(rng, (3, 4)), draw(rng, (4,), "positive")), {"reduction": "sum"}))
    out.append(Sample((draw(rng, (3, 4)), draw(rng, (3, 4), "positive")), {"size_average": False}))
    return out


def _poisson(m, a, b, **kw):
    return m.nn.functional.poisson_nll_loss(a, b, **kw)


def _poisson_samples(rng):
    out = []
    for shape in ((3, 4), (), (5,)):
        for red in REDUCTIONS:
            out.append(Sample((draw(rng, shape), draw(rng, shape, "positive")), {"reduction": red}))
            out.append(Sample((draw(rng, shape, "positive"), draw(rng, shape, "positive")),
                              {"reduction": red, "log_input": False, "full": True}))
    out.append(Sample((draw(rng, (3, 4)), draw(rng, (3, 4), "positive") * 2), {"full": True}))
    out.append(Sample((draw(rng, (3, 4), "positive"), draw(rng, (3, 4), "positive")), {"log_input": False, "eps": 0.1}))
    out.append(Sample((draw(rng, (3, 4)), draw(rng, (3, 4), "positive")), {"reduce": False}))
    return out


def _gauss(m, a, b, v=None, var=None, **kw):
    return m.nn.functional.gaussian_nll_loss(a, b, v if var is None else var, **kw)


def _gauss_samples(rng):
    out = []
    for sa, sv in (((3, 4), (3, 4)), ((3, 4), (3,)), ((3, 4), (3, 1)), ((2, 3, 2), (2, 1, 2)), ((5,), (5,))):
        for red in REDUCTIONS:
            out.append(Sample((draw(rng, sa), draw(rng, sa), draw(rng, sv, "positive")), {"reduction": red}))
    out.append(Sample((draw(rng, (3, 4)), draw(rng, (3, 4)), draw(rng, (3, 4), "positive")), {"full": True}))
    out.append(Sample((draw(rng, (3, 4)), draw(rng, (3, 4))), {"var": 0.7, "reduction": "sum"}))
    return out


def _gauss_error_samples(rng):
    a, b = draw(rng, (3, 4)), draw(rng, (3, 4))
    v = draw(rng, (3, 4), "positive")
    return [Sample((a, b, -v), {}), Sample((a, b, v[:2].copy()), {}), Sample((a, b, v), {"reduction": "avg"}),
            Sample((a, b), {"var": -1.0}), Sample((a, b, v), {"eps": 1.0}), Sample((a, b, v[:, :2].copy()), {})]


# ----- margin and embedding losses ---------------------------------------------------------------------------

PM = np.array([[1.0, -1.0, 1.0, -1.0], [-1.0, -1.0, 1.0, 1.0], [1.0, 1.0, -1.0, 1.0]])


def _soft_margin(m, a, target, **kw):
    return m.nn.functional.soft_margin_loss(a, m.tensor(target).to(a.dtype), **kw)


def _soft_margin_samples(rng):
    out = [Sample((draw(rng, (3, 4)),), {"target": PM, "reduction": r}) for r in REDUCTIONS]
    out += [Sample((draw(rng, (3, 4)),), {"target": PM[0], "reduction": "none"}),
            Sample((draw(rng, ()),), {"target": np.array(-1.0)}),
            Sample((draw(rng, (3, 4)),), {"target": rng.uniform(-1, 1, (3, 4))}),
            Sample((draw(rng, (3, 4)),), {"target": PM, "size_average": False})]
    return out


def _mlsm(m, a, b, weight=None, **kw):
    return m.nn.functional.multilabel_soft_margin_loss(a, b, None if weight is None else m.tensor(weight).to(a.dtype),
                                                       **kw)


def _mlsm_samples(rng):
    out = [Sample((draw(rng, (3, 4)), (rng.random((3, 4)) > 0.5) * 1.0), {"reduction": r}) for r in REDUCTIONS]
    out += [Sample((draw(rng, (3, 4)), rng.uniform(0, 1, (3, 4))), {"weight": rng.uniform(0.5, 2, (4,))}),
            Sample((draw(rng, (5,)), rng.uniform(0, 1, (5,))), {"reduction": "none"}),
            Sample((draw(rng, (3, 4)) * 1e4, (rng.random((3, 4)) > 0.5) * 1.0), {"reduction": "none"})]
    return out


def _mrl(m, a, b, target, **kw):
    return m.nn.functional.margin_ranking_loss(a, b, m.tensor(target).to(a.dtype), **kw)


def _mrl_samples(rng):
    out = [Sample((draw(rng, (4,)), draw(rng, (4,))), {"target": PM[0], "margin": mg, "reduction": r})
           for r in REDUCTIONS for mg in (0.0, 0.3)]
    out += [Sample((draw(rng, (3, 4)), draw(rng, (3, 4))), {"target": PM}), Sample((draw(rng, ()), draw(rng, ())),
                                                                                    {"target": np.array(-1.0)})]
    return out


def _hinge(m, a, target, **kw):
    return m.nn.functional.hinge_embedding_loss(a, m.tensor(target).to(a.dtype), **kw)


def _hinge_samples(rng):
    out = [Sample((draw(rng, (3, 4), "nonzero"),), {"target": PM, "margin": mg, "reduction": r})
           for r in REDUCTIONS for mg in (1.0, 0.5)]
    out.append(Sample((draw(rng, (3, 4), "nonzero"),), {"target": PM[0]}))
    return out


def _cos_emb(m, a, b, target, **kw):
    return m.nn.functional.cosine_embedding_loss(a, b, m.tensor(target), **kw)


def _cos_emb_samples(rng):
    out = [Sample((draw(rng, (3, 4)), draw(rng, (3, 4))), {"target": np.array([1, -1, -1]), "margin": mg,
                                                           "reduction": r})
           for r in REDUCTIONS for mg in (0.0, -0.5)]
    out += [Sample((draw(rng, (4,)), draw(rng, (4,))), {"target": np.array(t)}) for t in (1, -1)]
    return out


def _cos_emb_error_samples(rng):
    a, b = draw(rng, (3, 4)), draw(rng, (3, 4))
    return [Sample((a, b), {"target": np.ones((3, 4), np.int64)}), Sample((a[0], b[0]), {"target": np.ones(3, np.int64)}),
            Sample((a, b), {"target": np.array(1)}), Sample((a, b), {"target": np.ones(3, np.int64), "reduction": "x"})]


def _triplet(m, anchor, pos, neg, **kw):
    return m.nn.functional.triplet_margin_loss(anchor, pos, neg, **kw)


def _triplet_samples(rng):
    out = [Sample((draw(rng, (3, 4)), draw(rng, (3, 4)), draw(rng, (3, 4))), dict(kw, reduction=r))
           for r in REDUCTIONS for kw in ({}, {"margin": 2.0, "swap": True}, {"p": 1.0, "margin": 3.0})]
    out += [Sample((draw(rng, (4,)), draw(rng, (4,)), draw(rng, (4,))), {"margin": 3.0}),
            Sample((draw(rng, (3, 4)), draw(rng, (1, 4)), draw(rng, (3, 4))), {"margin": 3.0, "eps": 0.1})]
    return out


def _triplet_error_samples(rng):
    a = draw(rng, (3, 4))
    return [Sample((a, a, a[0]), {}), Sample((a, a, a), {"margin": 0.0}), Sample((a, a, a), {"reduction": "x"})]


def _triplet_dist(m, a, pos, neg, dist=None, **kw):
    fn = None if dist is None else lambda x, y: (x - y).abs().sum(-1)
    return m.nn.functional.triplet_margin_with_distance_loss(a, pos, neg, distance_function=fn, **kw)


def _triplet_dist_samples(rng):
    out = [Sample((draw(rng, (3, 4)), draw(rng, (3, 4)), draw(rng, (3, 4))), dict(kw, reduction=r))
           for r in REDUCTIONS for kw in ({}, {"margin": 2.0, "swap": True}, {"dist": "l1", "margin": 3.0})]
    out.append(Sample((draw(rng, (3, 4)), draw(rng, (3, 4)), draw(rng, (3, 4))), {"dist": "l1", "swap": True,
                                                                                   "margin": 2.5}))
    return out


def _mm(m, a, target, weight=None, **kw):
    return m.nn.functional.multi_margin_loss(a, m.tensor(target), weight=None if weight is None else
                                             m.tensor(weight).to(a.dtype), **kw)


def _mm_samples(rng):
    out = [Sample((draw(rng, (3, 4)),), dict(kw, target=np.array([3, 0, 1]), reduction=r)) for r in REDUCTIONS
           for kw in ({}, {"p": 2, "margin": 0.5}, {"weight": rng.uniform(0.5, 2, 4), "margin": 1.5})]
    out += [Sample((draw(rng, (5,)),), {"target": np.array(2)}), Sample((draw(rng, (5,)),), {"target": np.array([4]),
                                                                                            "reduction": "none"})]
    return out


def _mm_error_samples(rng):
    a = draw(rng, (3, 4))
    return [Sample((a,), {"target": np.array([4, 0, 1])}), Sample((a,), {"target": np.array([3, 0, 1]), "p": 3}),
            Sample((a,), {"target": np.array([3, 0])}), Sample((a,), {"target": np.array([3, 0, 1]), "weight": np.ones((2, 2))}),
            Sample((a,), {"target": np.array([3, 0, 1]), "weight": np.ones(5)}),
            Sample((a,), {"target": np.array([3, 0, 1]), "reduction": "x"}), Sample((a,), {"target": np.array([3.0, 0, 1])})]


def _mlm(m, a, target, **kw):
    return m.nn.functional.multilabel_margin_loss(a, m.tensor(target), **kw)


def _mlm_samples(rng):
    t = np.array([[3, 0, -1, 1], [0, 1, 2, 3], [-1, 0, 0, 0]])
    t2 = np.array([[3, 3, 1, -1], [2, -1, 0, 0], [1, 0, 2, -1]])
    out = [Sample((draw(rng, (3, 4)),), {"target": tt, "reduction": r}) for r in REDUCTIONS for tt in (t, t2)]
    out.append(Sample((draw(rng, (4,)),), {"target": np.array([2, 0, -1, 1]), "reduction": "none"}))
    return out


def _mlm_error_samples(rng):
    a = draw(rng, (3, 4))
    return [Sample((a,), {"target": np.array([[4, 0, -1, 1]] * 3)}), Sample((a,), {"target": np.array([0, 1, 2, 3])}),
            Sample((a,), {"target": np.zeros((3, 4)), "reduction": "sum"}),
            Sample((a,), {"target": np.array([[-1, 4, 0, 0]] * 3)})]


# ----- ctc_loss ------------------------------------------------------------------------------------------------
# PyTorch's gradient for log_probs is the one through an implied log_softmax (exp(lp) - ...), so the samples
# pass logits through log_softmax (written as x - logsumexp, which both libraries have): there it is the true
# derivative, and central differences agree.

_CTC_T = np.array([[1, 2, 2], [3, 0, 0], [1, 1, 3]])


def _ctc(m, x, targets, input_lengths, target_lengths, **kw):
    def arg(v):
        return m.tensor(v) if isinstance(v, np.ndarray) else v
    lp = x - x.logsumexp(-1, keepdim=True)
    return m.nn.functional.ctc_loss(lp, m.tensor(targets), arg(input_lengths), arg(target_lengths), **kw)


def _ctc_samples(rng):
    il, tl = np.array([6, 4, 5]), np.array([3, 1, 2])
    out = [Sample((draw(rng, (6, 3, 4)),), {"targets": _CTC_T, "input_lengths": il, "target_lengths": tl,
                                            "reduction": r}) for r in REDUCTIONS]
    out += [Sample((draw(rng, (6, 3, 4)),), kw) for kw in (
        {"targets": np.array([1, 2, 2, 3, 1, 1]), "input_lengths": (6, 4, 5), "target_lengths": (3, 1, 2)},
        {"targets": _CTC_T % 2, "input_lengths": il, "target_lengths": tl, "blank": 2, "reduction": "sum"},
        {"targets": _CTC_T, "input_lengths": il, "target_lengths": np.array([0, 1, 2])},
        {"targets": np.array([[1, 1, 1], [3, 0, 0], [1, 1, 3]]), "input_lengths": np.array([2, 2, 6]),
         "target_lengths": tl, "zero_infinity": True, "reduction": "none"})]
    out += [Sample((draw(rng, (5, 4)),), {"targets": np.array([1, 2, 2]), "input_lengths": np.array(5),
                                          "target_lengths": np.array(3), "reduction": r}) for r in ("mean", "none")]
    return out


def _ctc_error_samples(rng):
    x = draw(rng, (6, 3, 4))
    il, tl = np.array([6, 4, 5]), np.array([3, 1, 2])
    base = {"targets": _CTC_T, "input_lengths": il, "target_lengths": tl}
    return [Sample((x,), dict(base, **kw)) for kw in (
        {"target_lengths": np.array([4, 1, 1])}, {"input_lengths": np.array([7, 1, 1])},
        {"input_lengths": np.array([6, 1])}, {"blank": 4}, {"reduction": "x"},
        {"targets": np.array([[1, 1, 1], [3, 0, 0], [1, 1, 3]]), "input_lengths": np.array([2, 2, 6])})]


def _ctc_double(m, x, **kw):
    """The gradient taken with create_graph=True (its own backward is PyTorch's NotImplemented node)."""
    x = x.detach().requires_grad_()
    return m.autograd.grad(_ctc(m, x, **kw), x, create_graph=True)[0]


OPS: list = [
    OpInfo("nll_loss", _nll, _class_samples()),
    OpInfo("nll_loss_errors", _nll, _nll_error_samples, dtypes=FLOAT + ("float16",), **NO_GRAD),
    OpInfo("cross_entropy", _ce, _class_samples(({}, {"label_smoothing": 0.25}))),
    OpInfo("cross_entropy_ls_weight", _ce, _ce_ls_weight_samples),
    OpInfo("cross_entropy_probs", _ce_probs, _ce_prob_samples),
    OpInfo("cross_entropy_big", _ce, _ce_big_samples("mean")),
    OpInfo("cross_entropy_big_none", _ce, _ce_big_samples("none"), dtypes=FLOAT + ("float16",)),
    OpInfo("cross_entropy_errors", _ce, _ce_error_samples, **NO_GRAD),
    OpInfo("mse_loss", _loss("mse_loss"), _pair_samples()),
    OpInfo("mse_loss_weight", _loss("mse_loss"), _weighted_samples),
    OpInfo("mse_loss_legacy", _loss("mse_loss"), _legacy_samples),
    OpInfo("mse_loss_errors", _loss("mse_loss"), _pointwise_error_samples, **NO_GRAD),
    OpInfo("mse_loss_int_target", _int_target("mse_loss"), [((3, 4), (3, 4))]),
    OpInfo("mse_loss_int", _int_both("mse_loss"), [((3, 4), (3, 4))], **NO_GRAD),
    # float32 input, float64 target: computed in float64 (values and dtypes; float32 defeats central differences)
    OpInfo("mse_loss_mixed", _mixed_dtype("mse_loss"), [((3, 4), (3, 4)), ((3, 4), (4,))], **NO_GRAD),
    OpInfo("l1_loss", _loss("l1_loss"), _pair_samples()),
    OpInfo("l1_loss_weight", _loss("l1_loss"), _weighted_samples),
    OpInfo("l1_loss_legacy", _loss("l1_loss"), _legacy_samples),
    OpInfo("l1_loss_errors", _loss("l1_loss"), _pointwise_error_samples, **NO_GRAD),
    OpInfo("l1_loss_int", _int_both("l1_loss"), [((3, 4), (3, 4))], **NO_GRAD),
    OpInfo("smooth_l1_loss", _loss("smooth_l1_loss"), _pair_samples(kws=({}, {"beta": 0.4}, {"beta": 0.0}))),
    OpInfo("smooth_l1_loss_legacy", _loss("smooth_l1_loss"), _legacy_samples),
    OpInfo("smooth_l1_loss_errors", _loss("smooth_l1_loss"),
           lambda rng: _pointwise_error_samples(rng)[:2] + [Sample((draw(rng, (3,)), draw(rng, (3,))), {"beta": -1.0})],
           **NO_GRAD),
    OpInfo("smooth_l1_loss_mixed", _mixed_dtype("smooth_l1_loss"), [((3, 4), (3, 4))], **NO_GRAD),
    OpInfo("smooth_l1_loss_int", _int_both("smooth_l1_loss"), [((3, 4), (3, 4))], **NO_GRAD),
    OpInfo("huber_loss", _loss("huber_loss"), _pair_samples(kws=({}, {"delta": 0.4}, {"delta": 2.0}))),
    OpInfo("huber_loss_weight", _loss("huber_loss"),
           lambda rng: [Sample(s.args, dict(s.kwargs, delta=0.4)) for s in _weighted_samples(rng)]),
    OpInfo("huber_loss_errors", _loss("huber_loss"),
           lambda rng: _pointwise_error_samples(rng) + [Sample((draw(rng, (3,)), draw(rng, (3,))), {"delta": d})
                                                        for d in (0.0, -1.0)], **NO_GRAD),
    OpInfo("huber_loss_int", _int_both("huber_loss"), [((3, 4), (3, 4))], **NO_GRAD),
    OpInfo("binary_cross_entropy", _loss("binary_cross_entropy"), _bce_samples),
    OpInfo("binary_cross_entropy_edges", _loss("binary_cross_entropy"), _bce_edge_samples, **NO_GRAD),
    OpInfo("binary_cross_entropy_errors", _loss("binary_cross_entropy"), _bce_error_samples, **NO_GRAD),
    OpInfo("binary_cross_entropy_mixed", _mixed_dtype("binary_cross_entropy"),
           lambda rng: [Sample((_unit(rng, (3,)), _unit(rng, (3,))))], **NO_GRAD),
    OpInfo("binary_cross_entropy_with_logits", _bce_logits, _bce_logits_samples),
    OpInfo("binary_cross_entropy_with_logits_big", _bce_logits, _bce_logits_big_samples,
           dtypes=FLOAT + ("float16",)),
    OpInfo("binary_cross_entropy_with_logits_errors", _bce_logits, _bce_logits_error_samples, **NO_GRAD),
    OpInfo("kl_div", _kl, _kl_samples),
    OpInfo("kl_div_errors", _kl, lambda rng: [Sample((draw(rng, (3,)), draw(rng, (3,), "positive")),
                                                     {"reduction": "avg"})], **NO_GRAD),
    OpInfo("poisson_nll_loss", _poisson, _poisson_samples),
    OpInfo("poisson_nll_loss_errors", _poisson, lambda rng: [Sample((draw(rng, (3,)), draw(rng, (3,), "positive")),
                                                                    {"reduction": "avg"})], **NO_GRAD),
    OpInfo("gaussian_nll_loss", _gauss, _gauss_samples),
    OpInfo("gaussian_nll_loss_errors", _gauss, _gauss_error_samples, **NO_GRAD),
    OpInfo("soft_margin_loss", _soft_margin, _soft_margin_samples),
    OpInfo("soft_margin_loss_errors", _soft_margin, lambda rng: [
        Sample((draw(rng, (4,)),), {"target": PM, "reduction": "sum"}), Sample((draw(rng, (3,)),), {"target": PM}),
        Sample((draw(rng, (3, 4)),), {"target": PM, "reduction": "x"})], **NO_GRAD),
    OpInfo("multilabel_soft_margin_loss", _mlsm, _mlsm_samples),
    OpInfo("margin_ranking_loss", _mrl, _mrl_samples),
    OpInfo("margin_ranking_loss_errors", _mrl, lambda rng: [
        Sample((draw(rng, (4,)), draw(rng, (4,))), {"target": np.ones((1, 4))}),
        Sample((draw(rng, (4,)), draw(rng, (3,))), {"target": np.ones(4)})], **NO_GRAD),
    OpInfo("hinge_embedding_loss", _hinge, _hinge_samples),
    OpInfo("cosine_embedding_loss", _cos_emb, _cos_emb_samples),
    OpInfo("cosine_embedding_loss_errors", _cos_emb, _cos_emb_error_samples, **NO_GRAD),
    OpInfo("triplet_margin_loss", _triplet, _triplet_samples),
    OpInfo("triplet_margin_loss_errors", _triplet, _triplet_error_samples, **NO_GRAD),
    OpInfo("triplet_margin_with_distance_loss", _triplet_dist, _triplet_dist_samples),
    OpInfo("triplet_margin_with_distance_loss_errors", _triplet_dist, _triplet_error_samples, **NO_GRAD),
    # PyTorch has no double backward for these two (derivative for aten::*_backward is not implemented)
    OpInfo("multi_margin_loss", _mm, _mm_samples, supports_gradgrad=False),
    OpInfo("multi_margin_loss_errors", _mm, _mm_error_samples, **NO_GRAD),
    OpInfo("multilabel_margin_loss", _mlm, _mlm_samples, supports_gradgrad=False),
    OpInfo("multilabel_margin_loss_errors", _mlm, _mlm_error_samples, **NO_GRAD),
    OpInfo("ctc_loss", _ctc, _ctc_samples, supports_gradgrad=False, supports_fwd=False),
    OpInfo("ctc_loss_errors", _ctc, _ctc_error_samples, **NO_GRAD),
    OpInfo("ctc_loss_create_graph", _ctc_double, lambda rng: _ctc_samples(rng)[:1], **NO_GRAD),
]
HYP_BINARY: list = []
HYP_UNARY: list = []
