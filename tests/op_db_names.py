"""Op database entries of the rest of the tensor API (issue 18, tools/api_coverage.py): positive, ldexp, nextafter,
frexp, fill, renorm, histogram/histogramdd, cholesky_inverse, orgqr/ormqr, the byte/char casts, and the torch-level
spellings of nn.functional ops (ATen's signatures: integer reductions, positional arguments).

Ops composed of other differentiable ops have those ops' nodes where PyTorch has a fused one; each such entry says
so with an XFail of the grad_fn test.
"""
from __future__ import annotations

import numpy as np

from op_db import ALL, BINARY, FLOAT, INPLACE, INT, UNARY, OpInfo, XFail, binary, unary
from op_db_linalg import _shapes, _spd

NO_GRAD = dict(supports_grad=False, supports_gradgrad=False, supports_fwd=False)


def _composite(node: str, ember_node: str) -> tuple:
    why = f"composed of differentiable ops: ember's node is {ember_node}, PyTorch's {node}"
    return XFail("grad_fn", why), XFail("structure", why)


def _renorm_samples(rng):
    from op_db import Sample, draw
    cases = [((3, 4), dict(p=2, dim=0, maxnorm=1.0)), ((3, 4), dict(p=1, dim=1, maxnorm=0.5)),
             ((2, 3, 4), dict(p=3, dim=-1, maxnorm=2.0)), ((3, 4), dict(p=2, dim=0, maxnorm=100.0)),
             ((2, 0), dict(p=2, dim=1, maxnorm=1.0))]
    return [Sample((draw(rng, s),), kw) for s, kw in cases]


def _hist_samples(rng):
    from op_db import Sample, draw
    x = draw(rng, (20,))
    return [Sample((x,), {"bins": 5}), Sample((x,), {"bins": 3, "range": (-1.0, 1.0)}),
            Sample((x,), {"bins": 4, "weight": np.abs(draw(rng, (20,))), "density": True}),
            Sample((np.array([1.0, 2.0, 2.0, 3.5]),), {"bins": 3}), Sample((np.zeros(0),), {"bins": 2}),
            Sample((np.array([3.0, 3.0]),), {"bins": 2}),
            Sample((x,), {"edges": np.array([-2.0, -0.5, 0.0, 0.25, 2.0])})]


def _histogram(m, a, edges=None, weight=None, **kw):
    bins = m.tensor(edges).to(a.dtype) if edges is not None else kw.pop("bins")
    w = None if weight is None else m.tensor(weight).to(a.dtype)
    return tuple(m.histogram(a, bins, weight=w, **kw))


def _histdd_samples(rng):
    from op_db import Sample, draw
    x = draw(rng, (15, 2))
    return [Sample((x,), {"bins": [3, 4]}), Sample((x,), {"bins": 2, "range": [-1.0, 1.0, 0.0, 2.0]}),
            Sample((x,), {"bins": [2, 2], "weight": np.abs(draw(rng, (15,))), "density": True}),
            Sample((draw(rng, (4, 3, 3)),), {"bins": 2})]


def _histogramdd(m, a, weight=None, **kw):
    w = None if weight is None else m.tensor(weight).to(a.dtype)
    hist, edges = m.histogramdd(a, weight=w, **kw)
    return (hist, *edges)


def _ormqr(m, a, c, k=None, **kw):
    k = a.shape[-1] if k is None else k
    return m.ormqr(a, a[..., 0, :k] * 0.5, c, **kw)


OPS = [
    unary("positive", lambda m, a: m.positive(a), dtypes=ALL),
    binary("ldexp", lambda m, a, b: m.ldexp(a, b), dtypes=FLOAT + INT),
    OpInfo("ldexp_int_exponent", lambda m, a, e: m.ldexp(a, m.tensor(e)),
           [(((3, 4),), {"e": np.array([-3, 0, 2, 5])}), (((),), {"e": np.array(-1)})], dtypes=FLOAT + INT,
           xfails=tuple(XFail(t, "PyTorch's gradient grad * pow(2, other) is integer arithmetic for an integer "
                                 "exponent tensor: 0 where other < 0; ember's is 2**other") for t in ("grad", "gradgrad"))),
    binary("ldexp_", lambda m, a, b: a.clone().ldexp_(b), dtypes=FLOAT + INT, shapes=INPLACE),
    binary("nextafter", lambda m, a, b: m.nextafter(a, b), ("grid_a", "grid_b"), dtypes=ALL),
    OpInfo("nextafter_equal", lambda m, a: m.nextafter(a, a * 1), UNARY[:3],   # equal: no gradient to self
           xfails=tuple(XFail(t, "PyTorch's formula gives no gradient where input == other, where the function "
                                 "moves with its arguments") for t in ("gradcheck", "fwd_ad"))),
    binary("nextafter_", lambda m, a, b: a.clone().nextafter_(b), ("grid_a", "grid_b"), dtypes=FLOAT,
           shapes=INPLACE),
    unary("frexp", lambda m, a: tuple(m.frexp(a)), "nonzero", dtypes=ALL),
    OpInfo("frexp_special", lambda m, a: tuple(m.frexp(a * m.tensor([0.0, 1.0, float("inf"), -1e-30, 0.5],
                                                                    dtype=a.dtype))),
           [((5,),)], dtypes=FLOAT, **NO_GRAD),
    unary("fill", lambda m, a: m.fill(a, 3), dtypes=ALL),
    OpInfo("fill_tensor_value", lambda m, a: m.fill(a, m.tensor(2.5)), UNARY[:3], dtypes=FLOAT,
           xfails=tuple(XFail(t, "a tensor value is read as a number: the node is FillBackward0 (PyTorch's "
                                 "FillBackward1, which passes the value the gradient's sum)")
                        for t in ("grad_fn", "structure"))),
    OpInfo("renorm", lambda m, a, **kw: m.renorm(a, **kw), _renorm_samples, xfails=_composite(
        "RenormBackward0", "MulBackward0")),
    OpInfo("renorm_", lambda m, a, **kw: a.clone().renorm_(**kw), _renorm_samples, xfails=_composite(
        "RenormBackward1", "CopyBackwards")),
    OpInfo("renorm_errors", lambda m, a, **kw: m.renorm(a, **kw),
           [(((3,),), dict(p=2, dim=0, maxnorm=1.0)), (((2, 3),), dict(p=0, dim=0, maxnorm=1.0)),
            (((2, 3),), dict(p=2, dim=0, maxnorm=-1.0)), (((2, 3),), dict(p=2, dim=2, maxnorm=1.0))],
           dtypes=FLOAT + INT, **NO_GRAD),
    OpInfo("histogram", _histogram, _hist_samples, dtypes=FLOAT + INT, **NO_GRAD),
    OpInfo("histogramdd", _histogramdd, _histdd_samples, dtypes=FLOAT + INT, **NO_GRAD),
    OpInfo("casts_byte_char", lambda m, a: (a.byte(), a.char()), UNARY, "positive", dtypes=ALL, **NO_GRAD),
    OpInfo("cholesky_inverse", lambda m, a, upper=False: m.cholesky_inverse(
        m.linalg.cholesky(_spd(m, a), upper=upper), upper=upper),
        _shapes(((3, 3),), ((2, 4, 4),), (((3, 3),), {"upper": True}), ((1, 1),)),
        xfails=_composite("CholeskyInverseBackward0", "CholeskySolveBackward0")),
    OpInfo("cholesky_inverse_errors", lambda m, a: m.cholesky_inverse(a), _shapes(((3,),), ((2, 3),)),
           dtypes=FLOAT + INT, **NO_GRAD),
    OpInfo("orgqr", lambda m, a: m.orgqr(a, a[..., 0, :] * 0.5), _shapes(((4, 3),), ((3, 3),), ((2, 4, 2),))),
    OpInfo("ormqr", _ormqr, _shapes(((4, 3), (4, 2)), (((4, 3), (2, 4)), {"left": False}),
                                    (((4, 3), (4, 2)), {"transpose": True}),
                                    (((3, 3), (2, 3)), {"left": False, "transpose": True}),
                                    (((2, 4, 2), (2, 4, 3)), {}), (((3, 4), (3, 2)), {"k": 3})),
           xfails=_composite("OrmqrBackward0", "MmBackward0")),
    OpInfo("ormqr_errors", _ormqr, _shapes(((4, 3), (3, 2)), ((4, 3), (4,)), (((4, 3), (4, 2)), {"k": 2}),
                                           ((4, 3), (2, 4, 2))), **NO_GRAD),
]

HYP_BINARY: list = []
HYP_UNARY: list = []


# ----- the torch-level (ATen) spellings of nn.functional ops: integer reductions, ATen's argument order -------------

def _sign(shape, rng=None):
    return np.where(np.arange(int(np.prod(shape))).reshape(shape) % 3 == 0, -1.0, 1.0)


def _aten_loss_samples(rng):
    from op_db import Sample, draw
    out = []
    for red in (0, 1, 2):
        out.append(Sample((draw(rng, (3, 4)), draw(rng, (3, 4))), {"reduction": red}))
    return out


def _aten_losses():
    def bce(m, x, t, reduction):
        return m.binary_cross_entropy_with_logits(x, t.sigmoid(), None, None, reduction)

    def bce_w(m, x, t, reduction):
        w = m.linspace(0.5, 1.5, 4, dtype=x.dtype)
        return m.binary_cross_entropy_with_logits(x, t.sigmoid(), w, w * 2, reduction)

    def kl(m, x, t, reduction):
        return m.kl_div(x, t.softmax(-1), reduction)

    def kl_log(m, x, t, reduction):
        return m.kl_div(x, t.log_softmax(-1), reduction, log_target=True)

    def hinge(m, x, t, reduction):
        return m.hinge_embedding_loss(x, m.tensor(_sign(x.shape)).to(x.dtype), 0.5, reduction)

    def ranking(m, x, y, reduction):
        return m.margin_ranking_loss(x, y, m.tensor(_sign(x.shape)).to(x.dtype), 0.1, reduction)

    def cosine(m, x, y, reduction):
        return m.cosine_embedding_loss(x, y, m.tensor(_sign((x.shape[0],))).to(x.dtype), 0.2, reduction)

    def poisson(m, x, t, reduction):
        return m.poisson_nll_loss(x, t.abs(), True, False, 1e-8, reduction)

    def triplet(m, a, p, reduction):
        return m.triplet_margin_loss(a, p, p.flip(0), 1.0, 2.0, 1e-6, False, reduction)

    return [OpInfo(f"aten_{n}", fn, _aten_loss_samples) for n, fn in (
        ("bce_with_logits", bce), ("bce_with_logits_weights", bce_w), ("kl_div", kl), ("kl_div_log_target", kl_log),
        ("hinge_embedding_loss", hinge), ("margin_ranking_loss", ranking), ("cosine_embedding_loss", cosine),
        ("poisson_nll_loss", poisson), ("triplet_margin_loss", triplet))]


def _ctc(m, x, reduction=1):
    lp = x.log_softmax(-1)
    return m.ctc_loss(lp, m.tensor([[1, 2], [3, 3]]), [5, 4], [2, 2], 0, reduction)


_NORM_NODE = "torch.norm's node: ember's is LinalgVectorNormBackward0, PyTorch's NormBackward0/1"


def _conv(m, x, w, b=None, **kw):
    return m.convolution(x, w, b, **kw)


OPS += _aten_losses() + [
    OpInfo("aten_ctc_loss", _ctc, _shapes(((5, 2, 4),), (((5, 2, 4),), {"reduction": 2}),
                                          (((5, 2, 4),), {"reduction": 0})), supports_gradgrad=False,
           supports_fwd=False),
    OpInfo("aten_loss_other_reduction", lambda m, x, t: m.kl_div(x, t.softmax(-1), 3), _shapes(((3,), (3,)))),
    OpInfo("aten_embedding", lambda m, w, **kw: m.embedding(w, m.tensor([[0, 2], [4, 2]]), **kw),
           _shapes(((5, 3),), (((5, 3),), {"padding_idx": 2}), (((5, 3),), {"scale_grad_by_freq": True})),
           xfails=tuple(XFail(t, "PyTorch's definition of padding_idx and scale_grad_by_freq: see nn_embedding", smp)
                        for t in ("gradcheck", "fwd_ad") for smp in ("1:", "2:")) + (
               XFail("gradgrad", "see nn_embedding: torch's double backward leaves 1 / count out", "2:"),)),
    OpInfo("constant_pad_nd", lambda m, x, **kw: m.constant_pad_nd(x, **kw),
           _shapes((((3, 4),), {"pad": [1, 2]}), (((2, 3, 4),), {"pad": (0, 1, 2, 0), "value": 1.5}),
                   (((3, 4),), {"pad": [-1, 1]})), dtypes=FLOAT + INT),
    # (torch.convolution without a bias saves bias_sym_sizes_opt None, F.conv1d (0,), as ember's node always does)
    OpInfo("convolution", _conv, _shapes(
        (((2, 3, 7), (4, 3, 3), (4,)), dict(stride=[1], padding=[1], dilation=[1], transposed=False, output_padding=[0],
                                      groups=1)),
        (((2, 4, 5, 5), (4, 2, 3, 3), (4,)), dict(stride=[2, 1], padding=[0, 1], dilation=[1, 1], transposed=False,
                                                  output_padding=[0, 0], groups=2)),
        (((2, 3, 4), (3, 2, 3)), dict(stride=[2], padding=[1], dilation=[1], transposed=True, output_padding=[1],
                                      groups=1)),
        (((1, 2, 3, 3, 3), (2, 2, 2, 2, 2)), dict(stride=[1, 1, 1], padding=[0, 0, 0], dilation=[1, 1, 1],
                                                  transposed=False, output_padding=[0, 0, 0], groups=1)))),
    OpInfo("conv_tbc", lambda m, x, w, b, pad=0: m.conv_tbc(x, w, b, pad),
           _shapes(((7, 2, 3), (3, 3, 4), (4,)), (((5, 1, 2), (2, 2, 3), (3,)), {"pad": 1})),
           xfails=_composite("ConvTbcBackward0", "PermuteBackward0")),
    OpInfo("F_conv_tbc", lambda m, x, w, b: m.nn.functional.conv_tbc(x, w, b), _shapes(((4, 2, 3), (2, 3, 2), (2,))),
           xfails=_composite("ConvTbcBackward0", "PermuteBackward0")),
    # PyTorch has no derivative for it (its backward raises); ember's is channel_shuffle's
    OpInfo("native_channel_shuffle", lambda m, x: (m.native_channel_shuffle(x, 2),
                                                   m.nn.functional.native_channel_shuffle(x, 2)),
           _shapes(((1, 4, 3),), ((2, 6, 2, 2),)), dtypes=FLOAT + INT, **NO_GRAD),
    OpInfo("frobenius_norm", lambda m, x, **kw: m.frobenius_norm(x, **kw),
           _shapes((((3, 4),), {"dim": [0, 1]}), (((2, 3, 4),), {"dim": [2], "keepdim": True})),
           xfails=(XFail("grad_fn", _NORM_NODE),)),
    OpInfo("frobenius_norm_errors", lambda m, x, **kw: m.frobenius_norm(x, **kw), _shapes((((3, 4),), {"dim": [0, 1, 1]})),
           **NO_GRAD),
    OpInfo("nuclear_norm", lambda m, x, *a: m.nuclear_norm(x, *a),
           _shapes(((3, 4),), (((2, 3),), {}), ((3, 3),))),
    OpInfo("nuclear_norm_dim", lambda m, x: m.nuclear_norm(x, [1, 0], True), _shapes(((3, 4),), ((2, 4, 3),))),
    OpInfo("norm_except_dim", lambda m, x, **kw: m.norm_except_dim(x, **kw),
           _shapes((((3, 4),), {}), (((2, 3, 4),), {"pow": 3, "dim": 1}), (((2, 3, 4),), {"dim": 2}),
                   (((3, 4),), {"dim": -1}), (((2, 3, 4),), {"pow": 1, "dim": 0})),
           xfails=(XFail("grad_fn", _NORM_NODE, "3:"), XFail("structure", _NORM_NODE, "0:"),
                   XFail("structure", _NORM_NODE, "2:"), XFail("structure", _NORM_NODE, "4:"))),
]

OPS += [
    OpInfo("nonzero_static", lambda m, a, **kw: (m.nonzero_static(a, **kw), a.nonzero_static(**kw)),
           _shapes((((6,),), {"size": 8}), (((3, 4),), {"size": 2, "fill_value": -7}), (((),), {"size": 2}),
                   (((0, 2),), {"size": 1}), (((2, 3),), {"size": 0})), dtypes=ALL, **NO_GRAD),
    OpInfo("nonzero_static_errors", lambda m, a: m.nonzero_static(a, size=-1), _shapes(((3,),)), **NO_GRAD),
]


def _gradient(m, a, coords=None, **kw):
    if coords is not None:
        kw["spacing"] = [m.tensor(c).to(a.dtype) for c in coords]
    return m.gradient(a, **kw)


OPS += [
    OpInfo("gradient", _gradient, _shapes(((4, 5),), (((4, 5),), {"spacing": 2.0, "dim": 1, "edge_order": 2}),
                                         (((6,),), {"spacing": [0.5]}), (((3, 4),), {"spacing": [2.0, 3.0]}),
                                         (((4, 5),), {"coords": [[0.0, 1.0, 3.0, 4.0], [0.0, 0.5, 1.0, 2.0, 4.0]]}),
                                         (((4, 3),), {"coords": [[0.0, 1.0, 3.0, 4.5]], "dim": 0, "edge_order": 2}),
                                         (((2, 3, 4),), {"dim": [0, 2]})), dtypes=FLOAT + INT),
    OpInfo("gradient_errors", _gradient, _shapes((((2,),), {"edge_order": 2}), (((3, 4),), {"spacing": [2.0]}),
                                                (((3, 4),), {"dim": [0, 0]}), (((3, 4),), {"edge_order": 3})),
           **NO_GRAD),
]


def _affine(m, th, size, align_corners=False):
    return m.affine_grid_generator(th, size, align_corners)


def _sampler(m, x, th, fn="grid_sampler", modes=(0, 0), align_corners=False):
    size = list(x.shape)
    grid = m.nn.functional.affine_grid(th * 0.9, size, align_corners=align_corners)
    return getattr(m, fn)(x, grid, modes[0], modes[1], align_corners)


def _renorm_rows(m, w, idx, max_norm, norm_type=2.0):
    w = w.detach().clone()
    return m.embedding_renorm_(w, m.tensor(idx), max_norm, norm_type)


OPS += [
    OpInfo("affine_grid_generator", _affine, _shapes((((2, 2, 3),), {"size": [2, 3, 4, 5]}),
                                                     (((1, 3, 4),), {"size": [1, 1, 2, 3, 4], "align_corners": True}))),
    OpInfo("grid_sampler", _sampler, _shapes(((2, 3, 4, 5), (2, 2, 3)),
                                             (((1, 2, 4, 4), (1, 2, 3)), {"fn": "grid_sampler_2d", "modes": (1, 1)}),
                                             (((1, 2, 3, 4, 4), (1, 3, 4)), {"fn": "grid_sampler_3d", "modes": (0, 2),
                                                                              "align_corners": True})),
           supports_gradgrad=False, supports_fwd=False),
    OpInfo("grid_sampler_errors", _sampler, _shapes((((2, 3, 4, 5), (2, 2, 3)), {"fn": "grid_sampler_3d"})),
           **NO_GRAD),   # (an unknown mode number: PyTorch reads undefined memory, ember raises)
    OpInfo("embedding_renorm_", _renorm_rows, _shapes((((5, 3),), {"idx": [0, 2, 2], "max_norm": 1.0}),
                                                      (((4, 2),), {"idx": [3, 1], "max_norm": 0.5, "norm_type": 1.0})),
           **NO_GRAD),
]


def _lce(m, x, w, b=None, target=None, **kw):
    t = m.tensor(target)
    if t.dtype.is_floating_point:
        t = t.to(x.dtype)
    return m.nn.functional.linear_cross_entropy(x, w, t, linear_bias=b, **kw)


OPS += [
    OpInfo("linear_cross_entropy", _lce, _shapes(
        (((3, 4), (5, 4)), {"target": np.array([0, 4, 2])}),
        (((3, 4), (5, 4), (5,)), {"target": np.array([0, 4, 2]), "reduction": "sum", "label_smoothing": 0.1}),
        (((4,), (5, 4)), {"target": np.array(3)}),
        (((3, 4), (5, 4)), {"target": np.array([1, -100, 2]), "reduction": "none"}),
        (((2, 4), (3, 2, 4), (3, 2)), {"target": np.array([[0, 2], [1, 1]])}),
        (((3, 4), (5, 4)), {"target": np.full((3, 5), 0.2)}))),
    OpInfo("linear_cross_entropy_errors", _lce, _shapes(
        (((3, 4), (5, 3)), {"target": np.array([0, 4, 2])}), (((4,), (3, 2, 4)), {"target": np.array(1)}),
        (((3, 4), (5, 4)), {"target": np.full((3, 5), 0.2), "ignore_index": 1})), **NO_GRAD),
]
