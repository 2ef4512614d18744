"""Op database entries of torch.nn.functional: activations and the softmax family."""
from __future__ import annotations

import numpy as np

from op_db import FLOAT, INT, UNARY, OpInfo, Sample, XFail, _away, draw

F16 = FLOAT + ("float16",)


def F(m):
    return m.nn.functional


def _kinked(kinks=(0.0,), kwargs_list=({},), shapes=UNARY, big=False):
    """Unary samples for each kwargs, values kept 0.05 away from the kinks (central differences stay exact);
    ``big``: a stability sample with entries of magnitude 1e4 as well."""
    def samples(rng):
        out = []
        for kw in kwargs_list:
            pts = tuple(k(kw) if callable(k) else k for k in kinks)
            for s in shapes:
                out.append(Sample((_away(rng.uniform(-3, 3, s[0]), pts, 0.05),), dict(kw)))
        if big:
            out.append(Sample((np.array([-1e4, -30.0, -0.7, 0.4, 30.0, 1e4]),), dict(kwargs_list[0]), "big"))
        return out
    return samples


def act(name, fn, kinks=(0.0,), kwargs_list=({},), dtypes=F16 + INT, big=False, **kw):
    return OpInfo(name, fn, _kinked(kinks, kwargs_list, big=big), dtypes=dtypes, **kw)


def _softmax_samples(rng):
    cases = [((3, 4), 1), ((3, 4), 0), ((3, 4), -1), ((2, 3, 4), 1), ((), 0), ((5,), 0), ((0, 3), 1), ((0, 3), 0),
             ((2, 1, 3), 1)]
    out = [Sample((draw(rng, s),), {"dim": d}) for s, d in cases]
    out.append(Sample((draw(rng, (2, 3)),), {"dim": None}, "implicit_dim"))
    out.append(Sample((np.array([[1e4, -1e4, 0.0], [3e4, 3e4 - 1.0, 2e4]]),), {"dim": 1}, "big"))
    return out


def _masked_samples(rng):
    mask = np.array([[False, True, False, True], [True, False, False, False], [False, False, False, True]])
    return [Sample((draw(rng, (3, 4)),), {"dim": 1, "mask": mask}),
            Sample((draw(rng, (3, 4)),), {"dim": 0, "mask": mask})]


def _fully_masked_samples(rng):
    mask = np.array([[True, True, True, True], [True, False, False, True]])
    return [Sample((draw(rng, (2, 4)),), {"dim": 1, "mask": mask})]


def _masked(fn, fill_out=None):
    """``fn`` of ``a`` with -inf where ``mask``; ``fill_out``: the -inf outputs of log_softmax replaced after
    (central differences of -inf are nan)."""
    def op(m, a, dim, mask):
        out = fn(m, a.masked_fill(m.tensor(mask), float("-inf")), dim)
        return out if fill_out is None else out.masked_fill(m.tensor(mask), fill_out)
    return op


def _dtype_samples(rng):
    return [Sample((draw(rng, (3, 4)),), {"dim": 1, "dtype": "float64"}),
            Sample((draw(rng, (2, 3)),), {"dim": 0, "dtype": "float64"})]


def _with_dtype(name):
    # the forward test's float32 inputs compute in float64 (ToCopyBackward0 below the softmax node, as PyTorch)
    def op(m, a, dim, dtype):
        return getattr(F(m), name)(a, dim, dtype=getattr(m, dtype))
    return op


def _glu_samples(rng):
    return [Sample((draw(rng, s),), {"dim": d}) for s, d in
            [((3, 4), -1), ((4, 3), 0), ((2, 4, 2), 1), ((2, 0, 4), -1), ((6,), 0)]]


def _prelu_samples(rng):
    cases = [((3, 4), (4,)), ((3, 4), (1,)), ((2, 3, 4), (3,)), ((2, 3, 4), (1,)), ((5,), (1,)), ((), (1,)),
             ((2, 3), ()), ((), ()), ((0, 3), (3,)), ((2, 3, 2, 2), (3,))]
    out = []
    for xs, ws in cases:
        out.append(Sample((_away(rng.uniform(-2, 2, xs), (0.0,)), rng.uniform(0.1, 0.5, ws))))
    return out


def _normalize_samples(rng):
    cases = [((3, 4), {}), ((3, 4), {"dim": 0}), ((2, 3, 4), {"p": 1.0, "dim": -1}), ((3, 4), {"p": 3, "dim": 1}),
             ((5,), {"dim": 0}), ((2, 3), {"eps": 10.0})]
    return [Sample((_away(rng.uniform(-2, 2, s), (0.0,)),), kw) for s, kw in cases]


def _rrelu_eval(m, a, **kw):
    return F(m).rrelu(a, **kw)


_NAN_DIFF = "a row of -inf gives nan values, whose central differences are nan (torch's gradient is compared)"


def _errors(rng):
    """Arguments PyTorch refuses (the forward test compares the exception types)."""
    return [Sample((draw(rng, s),), kw) for s, kw in [
        ((3, 5), {"case": "glu_odd"}), ((), {"case": "glu_0d"}), ((3, 4), {"case": "glu_dim"}),
        ((3, 4), {"case": "softshrink_neg"}), ((3, 4), {"case": "gelu_approx"}), ((3, 4), {"case": "hardtanh_bounds"}),
        ((3,), {"case": "prelu_1d"}), ((2, 3), {"case": "prelu_channels"}), ((2, 3), {"case": "prelu_2d_weight"}),
        ((), {"case": "prelu_0d"}), ((2, 3), {"case": "prelu_dtype"}), ((3, 4), {"case": "softmax_dim"}),
        ((3, 4), {"case": "log_softmax_dim"}), ((3, 4), {"case": "softmax_int_dtype"}),
        ((3, 4), {"case": "softmax_dim_str"}), ((3, 4), {"case": "rrelu_bounds"}),
        ((3, 4), {"case": "leaky_slope_str"}), ((3, 4), {"case": "elu_alpha_str"})]]


def _error_call(m, a, case):
    f = F(m)
    calls = {
        "glu_odd": lambda: f.glu(a, 1), "glu_0d": lambda: f.glu(a), "glu_dim": lambda: f.glu(a, 2),
        "softshrink_neg": lambda: f.softshrink(a, -1.0), "gelu_approx": lambda: f.gelu(a, approximate="x"),
        "hardtanh_bounds": lambda: f.hardtanh(a, 2.0, 1.0), "prelu_1d": lambda: f.prelu(a, m.ones(3)),
        "prelu_channels": lambda: f.prelu(a, m.ones(2)), "prelu_2d_weight": lambda: f.prelu(a, m.ones(3, 1)),
        "prelu_0d": lambda: f.prelu(a, m.ones(2)), "prelu_dtype": lambda: f.prelu(a, m.ones(3, dtype=m.float16)),
        "softmax_dim": lambda: f.softmax(a, 2), "log_softmax_dim": lambda: f.log_softmax(a, -3),
        "softmax_int_dtype": lambda: f.softmax(a, 1, dtype=m.int64), "softmax_dim_str": lambda: f.softmax(a, "1"),
        "rrelu_bounds": lambda: f.rrelu(a, 0.5, 0.1), "leaky_slope_str": lambda: f.leaky_relu(a, "x"),
        "elu_alpha_str": lambda: f.elu(a, "x")}
    return calls[case]()


OPS: list = [
    OpInfo("nn_activation_errors", _error_call, _errors, dtypes=FLOAT, supports_grad=False, supports_gradgrad=False,
           supports_fwd=False),
    # --- the softmax family -----------------------------------------------------------------------------------
    # float16: PyTorch's vectorised exp differs from NumPy's by an ulp of float16 now and then (not compared)
    OpInfo("nn_softmax", lambda m, a, dim: F(m).softmax(a, dim), _softmax_samples, dtypes=FLOAT + INT),
    OpInfo("nn_log_softmax", lambda m, a, dim: F(m).log_softmax(a, dim=dim), _softmax_samples, dtypes=FLOAT + INT),
    OpInfo("nn_softmin", lambda m, a, dim: F(m).softmin(a, dim), _softmax_samples),
    OpInfo("nn_softmax_masked", _masked(lambda m, a, dim: F(m).softmax(a, dim)), _masked_samples),
    OpInfo("nn_log_softmax_masked", _masked(lambda m, a, dim: F(m).log_softmax(a, dim), 0.0), _masked_samples),
    OpInfo("nn_log_softmax_masked_values", _masked(lambda m, a, dim: F(m).log_softmax(a, dim)), _masked_samples,
           supports_grad=False, supports_gradgrad=False, supports_fwd=False),
    # a row of -inf only: nan, as PyTorch (values and gradients compared with torch; no tangent check on nan)
    OpInfo("nn_softmax_fully_masked", _masked(lambda m, a, dim: F(m).softmax(a, dim)), _fully_masked_samples,
           supports_fwd=False, supports_gradgrad=False, xfails=(XFail("gradcheck", _NAN_DIFF),)),
    OpInfo("nn_log_softmax_fully_masked", _masked(lambda m, a, dim: F(m).log_softmax(a, dim)),
           _fully_masked_samples, supports_fwd=False, supports_gradgrad=False, xfails=(XFail("gradcheck", _NAN_DIFF),)),
    OpInfo("nn_softmax_dtype", _with_dtype("softmax"), _dtype_samples),
    OpInfo("nn_log_softmax_dtype", _with_dtype("log_softmax"), _dtype_samples),
    OpInfo("nn_softmin_dtype", _with_dtype("softmin"), _dtype_samples),
    OpInfo("torch_softmax", lambda m, a, dim: m.softmax(a, dim), [(((3, 4),), {"dim": 1}), (((),), {"dim": -1})]),
    OpInfo("Tensor_softmax", lambda m, a, dim: a.softmax(dim), [(((2, 3, 4),), {"dim": 2})]),
    OpInfo("torch_log_softmax", lambda m, a, dim: m.log_softmax(a, dim), [(((3, 4),), {"dim": 0})]),
    OpInfo("Tensor_log_softmax", lambda m, a, dim: a.log_softmax(dim), [(((2, 3, 4),), {"dim": -2})],
           dtypes=FLOAT + INT),
    # --- pointwise activations --------------------------------------------------------------------------------
    act("nn_relu", lambda m, a, **kw: F(m).relu(a, **kw)),
    act("nn_relu_inplace", lambda m, a: F(m).relu(a * 1, inplace=True), dtypes=FLOAT),
    act("nn_relu_", lambda m, a: F(m).relu_(a * 1), dtypes=FLOAT),
    act("nn_sigmoid", lambda m, a: F(m).sigmoid(a), big=True, dtypes=FLOAT),
    act("nn_tanh", lambda m, a: F(m).tanh(a), big=True, dtypes=FLOAT),
    act("nn_relu6", lambda m, a: F(m).relu6(a), (0.0, 6.0), dtypes=FLOAT + INT),
    act("nn_relu6_inplace", lambda m, a: F(m).relu6(a * 1, inplace=True), (0.0, 6.0), dtypes=FLOAT),
    act("nn_leaky_relu", lambda m, a, **kw: F(m).leaky_relu(a, **kw),
        kwargs_list=({}, {"negative_slope": 0.2}, {"negative_slope": -0.5})),
    act("nn_leaky_relu_inplace", lambda m, a, **kw: F(m).leaky_relu(a * 1, 0.1, True), dtypes=FLOAT),
    act("nn_leaky_relu_", lambda m, a: F(m).leaky_relu_(a * 1, 0.3), dtypes=FLOAT),
    act("nn_elu", lambda m, a, **kw: F(m).elu(a, **kw), kwargs_list=({}, {"alpha": 0.5}), big=True),
    act("nn_elu_inplace", lambda m, a: F(m).elu(a * 1, 2.0, inplace=True), dtypes=FLOAT),
    act("nn_elu_", lambda m, a: F(m).elu_(a * 1), dtypes=FLOAT),
    act("nn_selu", lambda m, a: F(m).selu(a), big=True),
    act("torch_selu", lambda m, a: m.selu(a), dtypes=FLOAT),
    act("nn_selu_inplace", lambda m, a: F(m).selu(a * 1, inplace=True), dtypes=FLOAT),
    act("nn_selu_", lambda m, a: F(m).selu_(a * 1), dtypes=FLOAT),
    act("nn_celu", lambda m, a, **kw: F(m).celu(a, **kw), kwargs_list=({}, {"alpha": 2.0}), big=True),
    act("torch_celu", lambda m, a: m.celu(a, 0.5), dtypes=FLOAT),
    act("nn_celu_inplace", lambda m, a: F(m).celu(a * 1, 1.5, True), dtypes=FLOAT),
    act("nn_celu_", lambda m, a: F(m).celu_(a * 1, 0.7), dtypes=FLOAT),
    act("nn_gelu", lambda m, a, **kw: F(m).gelu(a, **kw), (), ({}, {"approximate": "tanh"}), big=True),
    act("nn_silu", lambda m, a: F(m).silu(a), (), big=True),
    act("nn_silu_inplace", lambda m, a: F(m).silu(a * 1, inplace=True), (), dtypes=FLOAT),
    act("nn_mish", lambda m, a: F(m).mish(a), (), big=True,
        xfails=(XFail("gradgrad", "torch's double backward of mish is nan at x = 1e4 (exp overflows in its "
                                  "formula); ember's is the finite limit", "6:big"),)),
    act("nn_mish_inplace", lambda m, a: F(m).mish(a * 1, inplace=True), (), dtypes=FLOAT),
    act("nn_softplus", lambda m, a, **kw: F(m).softplus(a, **kw), (lambda kw: kw.get("threshold", 20.0) /
                                                                   kw.get("beta", 1.0),),
        ({}, {"beta": 2.0}, {"beta": 0.5, "threshold": 1.0}, {"beta": 3, "threshold": 3}), big=True),
    act("nn_softsign", lambda m, a: F(m).softsign(a), dtypes=FLOAT + INT),
    act("nn_hardtanh", lambda m, a, **kw: F(m).hardtanh(a, **kw),
        (lambda kw: kw.get("min_val", -1.0), lambda kw: kw.get("max_val", 1.0)),
        ({}, {"min_val": -2.0, "max_val": 0.5}), dtypes=FLOAT + INT),
    act("nn_hardtanh_inplace", lambda m, a: F(m).hardtanh(a * 1, inplace=True), (-1.0, 1.0), dtypes=FLOAT),
    act("nn_hardtanh_", lambda m, a: F(m).hardtanh_(a * 1, -0.5, 0.5), (-0.5, 0.5), dtypes=FLOAT),
    # torch has no double backward for hardsigmoid (ember's is zero almost everywhere, checked by gradcheck-free
    # forward mode only)
    act("nn_hardsigmoid", lambda m, a: F(m).hardsigmoid(a), (-3.0, 3.0), supports_gradgrad=False),
    act("nn_hardsigmoid_inplace", lambda m, a: F(m).hardsigmoid(a * 1, True), (-3.0, 3.0), dtypes=FLOAT,
        supports_gradgrad=False),
    act("nn_hardswish", lambda m, a: F(m).hardswish(a), (-3.0, 3.0)),
    act("nn_hardswish_inplace", lambda m, a: F(m).hardswish(a * 1, True), (-3.0, 3.0), dtypes=FLOAT),
    act("nn_hardshrink", lambda m, a, **kw: F(m).hardshrink(a, **kw), (lambda kw: -kw.get("lambd", 0.5),
                                                                       lambda kw: kw.get("lambd", 0.5)),
        ({}, {"lambd": 1.0})),
    act("torch_hardshrink", lambda m, a: m.hardshrink(a, 0.3), (-0.3, 0.3), dtypes=FLOAT),
    act("Tensor_hardshrink", lambda m, a: a.hardshrink(), (-0.5, 0.5), dtypes=FLOAT),
    act("nn_softshrink", lambda m, a, **kw: F(m).softshrink(a, **kw), (lambda kw: -kw.get("lambd", 0.5),
                                                                       lambda kw: kw.get("lambd", 0.5)),
        ({}, {"lambd": 1.5})),
    act("nn_tanhshrink", lambda m, a: F(m).tanhshrink(a), (), dtypes=FLOAT + INT),
    act("nn_logsigmoid", lambda m, a: F(m).logsigmoid(a), (), big=True),
    act("nn_threshold", lambda m, a, **kw: F(m).threshold(a, **kw), (lambda kw: kw["threshold"],),
        ({"threshold": 0.5, "value": -2.0}, {"threshold": -1.0, "value": 3})),
    act("torch_threshold", lambda m, a: m.threshold(a, 0.1, 20.0), (0.1,), dtypes=FLOAT + INT),
    act("nn_threshold_inplace", lambda m, a: F(m).threshold(a * 1, 0.3, 0.0, True), (0.3,), dtypes=FLOAT),
    act("nn_threshold_", lambda m, a: F(m).threshold_(a * 1, 0.3, 1.0), (0.3,), dtypes=FLOAT),
    act("torch_threshold_", lambda m, a: m.threshold_(a * 1, -0.3, 1.0), (-0.3,), dtypes=FLOAT),
    act("torch_selu_", lambda m, a: m.selu_(a * 1), dtypes=FLOAT),
    act("torch_celu_", lambda m, a: m.celu_(a * 1), dtypes=FLOAT),
    OpInfo("nn_glu", lambda m, a, dim: F(m).glu(a, dim), _glu_samples, dtypes=F16 + INT),
    OpInfo("nn_prelu", lambda m, a, w: F(m).prelu(a, w), _prelu_samples, dtypes=F16 + INT),
    OpInfo("torch_prelu", lambda m, a, w: m.prelu(a, w), _prelu_samples),
    OpInfo("Tensor_prelu", lambda m, a, w: a.prelu(w), _prelu_samples),
    # float16: PyTorch multiplies by the mean slope in float16, ember in float32 (an ulp apart now and then)
    act("nn_rrelu_eval", _rrelu_eval, kwargs_list=({}, {"lower": 0.2, "upper": 0.6}), dtypes=FLOAT + INT),
    act("torch_rrelu_eval", lambda m, a: m.rrelu(a, 0.1, 0.3), dtypes=FLOAT),
    # in place: forward mode where PyTorch has none (rrelu_with_noise_ has no JVP in its derivatives.yaml; ember's
    # is the out-of-place op's, tests/test_nn_kinks.py checks it against that and torch's error)
    act("nn_rrelu_eval_inplace", lambda m, a: F(m).rrelu(a * 1, inplace=True), dtypes=FLOAT),
    act("nn_rrelu_", lambda m, a: F(m).rrelu_(a * 1), dtypes=FLOAT),
    act("torch_rrelu_", lambda m, a: m.rrelu_(a * 1), dtypes=FLOAT),
    OpInfo("nn_normalize", lambda m, a, **kw: F(m).normalize(a, **kw), _normalize_samples),
]



def _linear_samples(rng):
    cases = [((3, 4), (5, 4), (5,)), ((3, 4), (5, 4), None), ((4,), (5, 4), None), ((4,), (5, 4), (5,)),
             ((2, 3, 4), (5, 4), None), ((2, 3, 4), (5, 4), (5,)), ((3, 4), (4,), None), ((4,), (4,), None),
             ((4,), (4,), ()), ((3, 4), (5, 4), (1,)), ((3, 4), (5, 4), ()), ((0, 4), (5, 4), (5,)),
             ((3, 0), (5, 0), (5,)), ((2, 1, 3, 4), (2, 4), (2,)),
             # an empty inner dimension on a 3-d/4-d input (folded to rows x 0), and no rows at all
             ((1, 4, 0), (2, 0), None), ((1, 4, 0), (2, 0), (2,)), ((2, 1, 3, 0), (2, 0), None),
             ((0,), (2, 0), (2,)), ((3, 0, 4), (2, 4), (2,))]
    return [Sample(tuple(draw(rng, x) for x in c if x is not None)) for c in cases]


def _linear(m, a, w, b=None):
    return F(m).linear(a, w, b) if b is not None else F(m).linear(a, w)


def _bilinear_samples(rng):
    cases = [((3, 4), (3, 2), (5, 4, 2), (5,)), ((3, 4), (3, 2), (5, 4, 2), None), ((4,), (2,), (3, 4, 2), None),
             ((2, 3, 4), (2, 3, 2), (5, 4, 2), (5,)), ((0, 4), (0, 2), (3, 4, 2), (3,))]
    return [Sample(tuple(draw(rng, x) for x in c if x is not None)) for c in cases]


def _bilinear(m, a, b, w, bias=None):
    return F(m).bilinear(a, b, w, bias) if bias is not None else F(m).bilinear(a, b, w)


def _embedding_samples(rng):
    cases = [((5, 3), np.array([[0, 2], [4, 2]]), {}), ((5, 3), np.array([1, 1, 3]), {"padding_idx": 1}),
             ((5, 3), np.array(3), {}), ((5, 3), np.array([0, 4, 4]), {"padding_idx": -1}),
             ((5, 3), np.zeros((0,), np.int64), {}), ((4, 2), np.array([[3, 0, 3]], np.int32), {}),
             ((5, 3), np.array([[0, 2], [4, 2]]), {"max_norm": 1.0}),
             ((5, 3), np.array([1, 2]), {"max_norm": 0.5, "norm_type": 1.0}),
             ((5, 3), np.array([[0, 2, 2], [4, 2, 0]]), {"scale_grad_by_freq": True}),
             ((5, 3), np.array([1, 1, 3, 3, 3]), {"scale_grad_by_freq": True, "padding_idx": 3})]
    return [Sample((draw(rng, ws),), dict(kw, idx=idx)) for ws, idx, kw in cases]


_PAD = ("the padding row gets no gradient although the output reads it (PyTorch's definition), so central "
        "differences and the forward-mode tangent (PyTorch's too: auto_linear) disagree with the gradient there")
_RENORM = ("max_norm renormalises the weight in place without recording (PyTorch's definition): the gradient "
           "ignores the renormalisation that central differences see")
_FREQ = ("scale_grad_by_freq divides each gradient row by its index's count in the batch (PyTorch's definition): "
         "the gradient is not the derivative that central differences and forward mode see")
_FREQ2 = ("torch's double backward of embedding leaves scale_grad_by_freq's 1 / count out; ember's is the "
          "derivative of the (scaled) gradient it computes")
_EMBEDDING_XFAILS = tuple(XFail(t, why, smp) for t in ("gradcheck", "fwd_ad")
                          for smp, why in (("1:", _PAD), ("3:", _PAD), ("6:", _RENORM), ("7:", _RENORM),
                                           ("8:", _FREQ), ("9:", _FREQ))) + (
    XFail("gradgrad", _FREQ2, "8:"), XFail("gradgrad", _FREQ2, "9:"),
    XFail("gradgrad", "torch's double backward of embedding fails on empty indices (a reshape of 0 elements to "
                      "[0, -1])", "4:"),)


def _embedding(m, w, idx, **kw):
    if "max_norm" in kw:
        # max_norm renormalises the weight in place, under no_grad: on a copy, so the leaf stays as it was
        w = w * 1
    return F(m).embedding(m.tensor(idx), w, **kw)


def _embedding_errors(rng):
    cases = [np.array([5]), np.array([-1]), np.array([1.0]), ("pad", np.array([1]))]
    return [Sample((draw(rng, (3, 2)),), {"idx": c}) for c in cases]


def _embedding_error_call(m, w, idx):
    if isinstance(idx, tuple):
        return F(m).embedding(m.tensor(idx[1]), w, padding_idx=3)
    return F(m).embedding(m.tensor(idx), w)


def _one_hot_samples(rng):
    cases = [(np.array([0, 2, 1]), {}), (np.array([[1, 3], [0, 0]]), {"num_classes": 5}), (np.array(2), {}),
             (np.zeros((0,), np.int64), {"num_classes": 3}), (np.zeros((0,), np.int64), {}),
             (np.array([-1]), {}), (np.array([3]), {"num_classes": 2}), (np.array([1.0]), {}),
             (np.array([1], np.int32), {})]
    return [Sample((draw(rng, (1,)),), {"idx": i, **kw}) for i, kw in cases]


def _one_hot(m, a, idx, **kw):
    # ``a`` only carries the dtype under test (one_hot takes no float input worth differentiating)
    return F(m).one_hot(m.tensor(idx), **kw)


OPS += [
    OpInfo("nn_linear", _linear, _linear_samples),
    OpInfo("nn_bilinear", _bilinear, _bilinear_samples),
    OpInfo("torch_bilinear", lambda m, a, b, w: m.bilinear(a, b, w), [((2, 3), (2, 4), (5, 3, 4))]),
    OpInfo("nn_embedding", _embedding, _embedding_samples, xfails=_EMBEDDING_XFAILS),
    OpInfo("nn_embedding_errors", _embedding_error_call, _embedding_errors, supports_grad=False,
           supports_gradgrad=False, supports_fwd=False),
    OpInfo("nn_one_hot", _one_hot, _one_hot_samples, dtypes=("float64",), supports_grad=False,
           supports_gradgrad=False, supports_fwd=False),
]



_DROPOUT_SHAPES = {"dropout1d": [(2, 3, 4), (3, 4)], "dropout2d": [(2, 3, 2, 2), (3, 2, 2)],
                   "dropout3d": [(2, 3, 1, 2, 2), (3, 1, 2, 2)]}


def _dropout_samples(name):
    """The deterministic cases (random masks are compared with torch's in tests/test_nn_dropout.py): p=0 and
    eval return the input itself, p=1 gives zeros (MulBackward0)."""
    def samples(rng):
        out = []
        for shape in _DROPOUT_SHAPES.get(name, [(2, 3, 4), (3,), (0, 2)]):
            for kw in ({"p": 0.0, "training": True}, {"p": 0.5, "training": False}, {"p": 1.0, "training": True}):
                out.append(Sample((draw(rng, shape),), dict(kw)))
        return out
    return samples


def _dropout_call(name, inplace=False):
    def op(m, a, p, training):
        x = a * 1 if inplace else a
        return getattr(F(m), name)(x, p, training, inplace) * 1   # * 1: eval returns the input itself
    return op


def _torch_dropout_call(name):
    def op(m, a, p, training):
        x = a * 1 if name.endswith("_") else a
        return getattr(m, name)(x, p, training) * 1
    return op


def _dropout_errors(rng):
    return [Sample((draw(rng, (2, 3)),), {"case": c}) for c in
            ("p_neg", "p_big", "d1_4d", "torch_p", "feature_1d")]


def _dropout_error_call(m, a, case):
    return {"p_neg": lambda: F(m).dropout(a, -0.1), "p_big": lambda: F(m).alpha_dropout(a, 1.5, True),
            "d1_4d": lambda: F(m).dropout1d(a.reshape(1, 1, 2, 3)), "torch_p": lambda: m.dropout(a, 2.0, True),
            "feature_1d": lambda: m.feature_dropout(a.reshape(6), 0.5, True)}[case]()


OPS += [OpInfo(f"nn_{n}" + ("_inplace" if ip else ""), _dropout_call(n, ip), _dropout_samples(n))
        for n in ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout")
        for ip in (False, True)]
OPS += [OpInfo(f"torch_{n}", _torch_dropout_call(n), _dropout_samples(n))
        for n in ("dropout", "dropout_", "alpha_dropout", "alpha_dropout_", "feature_dropout", "feature_dropout_",
                  "feature_alpha_dropout", "feature_alpha_dropout_")]
OPS.append(OpInfo("nn_dropout_errors", _dropout_error_call, _dropout_errors, supports_grad=False,
                  supports_gradgrad=False, supports_fwd=False))
# gumbel_softmax draws noise: its samples are compared with torch's (same seed) in tests/test_nn_dropout.py; here
# the sum over dim, which is 1 whatever the draw (and whose gradient is zero)
OPS.append(OpInfo("nn_gumbel_softmax_sum", lambda m, a, **kw: F(m).gumbel_softmax(a, **kw).sum(kw.get("dim", -1)),
                  [(((3, 4),), {}), (((3, 4),), {"hard": True}), (((2, 3),), {"dim": 0, "tau": 0.5})]))


def _bag_samples(rng):
    i1 = np.array([0, 2, 4, 5, 4, 1])
    cases = [(i1, np.array([0, 2, 2]), {"mode": "sum"}), (i1, np.array([0, 2, 2]), {}),
             (i1, np.array([0, 2, 2]), {"mode": "max"}), (i1, np.array([0, 3]), {"padding_idx": 4}),
             (i1, np.array([0, 3]), {"mode": "max", "padding_idx": -2}),
             (i1, np.array([0, 2, 2, 6]), {"include_last_offset": True, "mode": "sum"}),
             (np.array([[0, 3, 3], [5, 1, 0]]), None, {"mode": "mean"}),
             (np.array([[0, 3, 3], [5, 1, 0]]), None, {"mode": "max"}),
             (np.zeros((0,), np.int64), np.array([0, 0]), {}), (i1, np.array([0, 4]), {"max_norm": 1.0})]
    out = []
    for idx, off, kw in cases:
        w = rng.permutation(18).reshape(6, 3) * 0.3 - 2.5   # distinct values: the maxima are stable
        out.append(Sample((w,), dict(kw, idx=idx, off=off)))
    return out


def _bag(m, w, idx, off, **kw):
    if "max_norm" in kw:
        w = w * 1
    return F(m).embedding_bag(m.tensor(idx), w, None if off is None else m.tensor(off), **kw)


def _bag_psw_samples(rng):
    return [Sample((draw(rng, (6, 3)), draw(rng, (6,))), {"idx": np.array([0, 2, 4, 5, 4, 1]),
                                                          "off": np.array([0, 2, 2])}),
            Sample((draw(rng, (6, 3)), draw(rng, (2, 3))), {"idx": np.array([[0, 3, 3], [5, 1, 0]]), "off": None})]


def _bag_psw(m, w, psw, idx, off):
    return F(m).embedding_bag(m.tensor(idx), w, None if off is None else m.tensor(off), mode="sum",
                              per_sample_weights=psw)


def _bag_errors(rng):
    return [Sample((draw(rng, (6, 3)),), {"case": c}) for c in
            ("mode", "offsets_none", "offsets_2d_input", "offset0", "offset_last", "psw_mean", "psw_shape", "range")]


def _bag_error_call(m, w, case):
    f, t = F(m), m.tensor
    i = t([0, 2])
    return {"mode": lambda: f.embedding_bag(i, w, t([0]), mode="x"), "offsets_none": lambda: f.embedding_bag(i, w),
            "offsets_2d_input": lambda: f.embedding_bag(t([[0, 2]]), w, t([0])),
            "offset0": lambda: f.embedding_bag(i, w, t([1, 1])),
            "offset_last": lambda: f.embedding_bag(i, w, t([0, 3])),
            "psw_mean": lambda: f.embedding_bag(i, w, t([0]), per_sample_weights=m.ones(2, dtype=w.dtype)),
            "psw_shape": lambda: f.embedding_bag(i, w, t([0]), mode="sum", per_sample_weights=m.ones(3, dtype=w.dtype)),
            "range": lambda: f.embedding_bag(t([0, 7]), w, t([0]))}[case]()


OPS += [
    # torch has no double backward for embedding_bag (ember's rules are differentiable; not compared)
    OpInfo("nn_embedding_bag", _bag, _bag_samples, supports_gradgrad=False,
           xfails=(XFail("gradcheck", _RENORM, "9:"), XFail("fwd_ad", _RENORM, "9:"))),
    OpInfo("nn_embedding_bag_psw", _bag_psw, _bag_psw_samples, supports_gradgrad=False),
    OpInfo("nn_embedding_bag_errors", _bag_error_call, _bag_errors, supports_grad=False, supports_gradgrad=False,
           supports_fwd=False),
]


# torch.embedding_bag: ATen's (output, offset2bag, bag_size, max_indices)
def _aten_bag(m, w, *psw, idx, off, mode, ilo=False, pad=None, i32=False):
    it = m.int32 if i32 else m.int64
    return m.embedding_bag(w, m.tensor(idx).to(it), m.tensor(off).to(it), False, mode, False,
                           psw[0] if psw else None, ilo, pad)


def _aten_bag_samples(rng):
    idx, off = np.array([1, 2, 4, 5, 4, 3, 2, 0]), np.array([0, 2, 2, 5])
    cases = [{"mode": 0}, {"mode": 1}, {"mode": 2}, {"mode": 0, "pad": 4}, {"mode": 1, "pad": 4, "ilo": True},
             {"mode": 2, "pad": 4, "i32": True}, {"mode": 2, "ilo": True}, {"mode": 1, "i32": True},
             {"mode": 0, "pad": -2}]
    out = []
    for kw in cases:
        w = rng.permutation(18).reshape(6, 3) * 0.3 - 2.5   # distinct values: the maxima are stable
        out.append(Sample((w,), dict(kw, idx=idx, off=off)))
    out.append(Sample((draw(rng, (6, 3)), draw(rng, (8,))), {"idx": idx, "off": off, "mode": 0}))
    return out


def _aten_bag_errors(rng):
    return [Sample((draw(rng, (6, 3)),), {"case": c}) for c in ("psw_mean", "padding_range", "mode")]


def _aten_bag_error_call(m, w, case):
    i, o = m.tensor([1, 2, 4, 5]), m.tensor([0, 2])
    return {"psw_mean": lambda: m.embedding_bag(w, i, o, False, 1, False, m.ones(4, dtype=w.dtype)),
            "padding_range": lambda: m.embedding_bag(w, i, o, False, 0, False, None, False, 7),
            "mode": lambda: m.embedding_bag(w, i, o, False, 3)}[case]()


OPS += [OpInfo("embedding_bag_aten", _aten_bag, _aten_bag_samples, supports_gradgrad=False),
        OpInfo("embedding_bag_aten_errors", _aten_bag_error_call, _aten_bag_errors, supports_grad=False,
               supports_gradgrad=False, supports_fwd=False)]

HYP_BINARY: list = []
HYP_UNARY: list = []


def _native_dropout(m, a, p, train, seed=0):
    m.manual_seed(seed)   # the same draws in torch and ember (ember reproduces torch's generator)
    return m.native_dropout(a, p, train)


def _native_dropout_samples(rng):
    cases = [((2, 3, 4), {"p": 0.3, "train": True}), ((3, 5), {"p": 0.5, "train": None, "seed": 7}),
             ((2, 3), {"p": 0.5, "train": False}), ((4,), {"p": 1.0, "train": True}),
             ((3, 4), {"p": 0.0, "train": True})]
    return [Sample((draw(rng, s),), kw) for s, kw in cases]


def _native_dropout_errors(rng):
    return [Sample((draw(rng, (2, 3)),), {"case": c}) for c in ("p_big", "p_neg", "int", "int_eval", "empty")]


def _native_dropout_error_call(m, a, case):
    return {"p_big": lambda: m.native_dropout(a, 1.5, True), "p_neg": lambda: m.native_dropout(a, -0.5, True),
            "int": lambda: m.native_dropout(m.ones(2, 3, dtype=m.int64), 0.5, True),
            "int_eval": lambda: m.native_dropout(m.ones(2, 3, dtype=m.int64), 0.5, False),
            "empty": lambda: m.native_dropout(a[:0], 0.5, True)}[case]()   # the input itself, a mask of its dtype


_QUIRK = "PyTorch's backward scales by 1 when train is None (its formula), while its forward and forward mode scale by " \
         "1 / (1 - p): ember does the same, so the VJP is not the Jacobian's transpose"
OPS += [OpInfo("native_dropout", _native_dropout, _native_dropout_samples,
               xfails=(XFail("gradcheck", _QUIRK, "1:"), XFail("fwd_ad", _QUIRK, "1:"))),
        OpInfo("native_dropout_errors", _native_dropout_error_call, _native_dropout_errors, supports_grad=False,
               supports_gradgrad=False, supports_fwd=False)]
