"""Every nn layer against PyTorch: seed-exact initialisation, repr, state_dict keys and shapes, and (with the
same weights) outputs, input and parameter gradients in train and eval mode, and double backward."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def R(*shape, lo=-1.0, hi=1.0, seed=0):
    """A float64 input: the same numbers for both libraries."""
    return np.random.default_rng(seed + len(shape)).uniform(lo, hi, shape)


def I(*shape, high, seed=1):
    return np.random.default_rng(seed).integers(0, high, shape)


class Case:
    def __init__(self, name, ctor, inputs, *, grad=None, double=True, train_only=False, seeded=False, atol=1e-7):
        self.name = name
        self.ctor = ctor          # lib -> module
        self.inputs = inputs      # () -> list of numpy arrays / python values
        self.grad = grad          # which inputs get requires_grad (default: every float array)
        self.double = double      # check double backward
        self.seeded = seeded      # the forward draws random numbers (dropout, rrelu): reseed before each run
        self.atol = atol

    def __repr__(self):
        return self.name


CASES = [
    Case("Identity", lambda nn: nn.Identity(3, foo=1), lambda: [R(2, 3)]),
    Case("Linear", lambda nn: nn.Linear(3, 2), lambda: [R(4, 3)]),
    Case("Linear_nobias", lambda nn: nn.Linear(3, 2, bias=False), lambda: [R(2, 5, 3)]),
    Case("Bilinear", lambda nn: nn.Bilinear(3, 2, 4), lambda: [R(5, 3), R(5, 2, seed=3)]),
    Case("Flatten", lambda nn: nn.Flatten(), lambda: [R(2, 3, 2, 2)]),
    Case("Flatten_dims", lambda nn: nn.Flatten(0, 1), lambda: [R(2, 3, 2)]),
    Case("Unflatten", lambda nn: nn.Unflatten(1, (2, 3)), lambda: [R(2, 6)]),
]

_ACT = [("ReLU", ()), ("ReLU6", ()), ("LeakyReLU", (0.2,)), ("ELU", (0.7,)), ("SELU", ()), ("CELU", (1.3,)),
        ("GELU", ()), ("SiLU", ()), ("Mish", ()), ("Softplus", (2.0, 5.0)), ("Softsign", ()), ("Hardtanh", (-0.5, 0.6)),
        ("Hardsigmoid", ()), ("Hardswish", ()), ("Hardshrink", (0.3,)), ("Softshrink", (0.3,)), ("Tanhshrink", ()),
        ("LogSigmoid", ()), ("Threshold", (0.1, 2.0)), ("GLU", ()), ("Sigmoid", ()), ("Tanh", ()),
        ("Softmax", (1,)), ("LogSoftmax", (-1,)), ("Softmin", (0,)), ("Softmax2d", ())]
for _n, _a in _ACT:
    CASES.append(Case(_n, (lambda n, a: lambda nn: getattr(nn, n)(*a))(_n, _a),
                      (lambda: [R(2, 4, 3, 2)]) if _n == "Softmax2d" else (lambda: [R(3, 4) * 3])))
CASES += [
    Case("GELU_tanh", lambda nn: nn.GELU(approximate="tanh"), lambda: [R(3, 4) * 3]),
    Case("ReLU_inplace_repr", lambda nn: nn.Sequential(nn.Linear(3, 3), nn.ReLU(inplace=True)), lambda: [R(2, 3)]),
    Case("PReLU", lambda nn: nn.PReLU(), lambda: [R(3, 4)]),
    Case("PReLU_channels", lambda nn: nn.PReLU(4, init=0.1), lambda: [R(2, 4, 3)]),
    Case("RReLU", lambda nn: nn.RReLU(0.1, 0.3), lambda: [R(3, 4)], seeded=True),
]

_LOSS2 = ["MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "SoftMarginLoss"]
for _n in _LOSS2:
    for _red in ("mean", "sum", "none"):
        CASES.append(Case(f"{_n}_{_red}", (lambda n, r: lambda nn: getattr(nn, n)(reduction=r))(_n, _red),
                          lambda: [R(3, 4), R(3, 4, seed=5)], grad=(0,) if _n == "SoftMarginLoss" else None))
CASES += [
    Case("SmoothL1Loss_beta", lambda nn: nn.SmoothL1Loss(beta=0.5), lambda: [R(3, 4), R(3, 4, seed=5)]),
    Case("HuberLoss_delta", lambda nn: nn.HuberLoss(delta=0.3), lambda: [R(3, 4), R(3, 4, seed=5)]),
    Case("CrossEntropyLoss", lambda nn: nn.CrossEntropyLoss(), lambda: [R(4, 5), I(4, high=5)]),
    Case("CrossEntropyLoss_w", lambda nn: nn.CrossEntropyLoss(weight=nn_t(nn, R(5, lo=0.1)), ignore_index=1,
                                                              label_smoothing=0.1), lambda: [R(4, 5), I(4, high=5)]),
    Case("CrossEntropyLoss_probs", lambda nn: nn.CrossEntropyLoss(reduction="sum"),
         lambda: [R(4, 5), np.abs(R(4, 5, seed=3))]),
    Case("NLLLoss", lambda nn: nn.NLLLoss(reduction="none"), lambda: [R(4, 5), I(4, high=5)]),
    Case("NLLLoss_2d", lambda nn: nn.NLLLoss(weight=nn_t(nn, R(3, lo=0.1))), lambda: [R(2, 3, 2, 2), I(2, 2, 2, high=3)]),
    Case("BCELoss", lambda nn: nn.BCELoss(weight=nn_t(nn, R(4, lo=0.1))), lambda: [R(3, 4, lo=0.05, hi=0.95),
                                                                              R(3, 4, lo=0, hi=1, seed=4)]),
    Case("BCEWithLogitsLoss", lambda nn: nn.BCEWithLogitsLoss(pos_weight=nn_t(nn, R(4, lo=0.5, hi=2))),
         lambda: [R(3, 4), R(3, 4, lo=0, hi=1, seed=4)]),
    Case("KLDivLoss", lambda nn: nn.KLDivLoss(reduction="batchmean"), lambda: [R(3, 4), R(3, 4, lo=0.1, seed=4)]),
    Case("KLDivLoss_log", lambda nn: nn.KLDivLoss(reduction="sum", log_target=True), lambda: [R(3, 4), R(3, 4, seed=4)]),
    Case("PoissonNLLLoss", lambda nn: nn.PoissonNLLLoss(), lambda: [R(3, 4), R(3, 4, lo=0, hi=3, seed=4)]),
    Case("PoissonNLLLoss_full", lambda nn: nn.PoissonNLLLoss(log_input=False, full=True),
         lambda: [R(3, 4, lo=0.2, hi=2), R(3, 4, lo=0, hi=3, seed=4)]),
    Case("GaussianNLLLoss", lambda nn: nn.GaussianNLLLoss(full=True),
         lambda: [R(3, 4), R(3, 4, seed=4), R(3, 4, lo=0.2, hi=1, seed=5)]),
    Case("CosineEmbeddingLoss", lambda nn: nn.CosineEmbeddingLoss(margin=0.2),
         lambda: [R(3, 4), R(3, 4, seed=4), np.array([1.0, -1.0, -1.0])], grad=(0, 1)),
    Case("MarginRankingLoss", lambda nn: nn.MarginRankingLoss(margin=0.1),
         lambda: [R(5), R(5, seed=4), np.array([1.0, -1, 1, -1, 1])], grad=(0, 1)),
    Case("HingeEmbeddingLoss", lambda nn: nn.HingeEmbeddingLoss(margin=0.5),
         lambda: [R(3, 4), np.sign(R(3, 4, seed=4))], grad=(0,)),
    Case("TripletMarginLoss", lambda nn: nn.TripletMarginLoss(margin=0.5, swap=True),
         lambda: [R(3, 4), R(3, 4, seed=4), R(3, 4, seed=5)]),
    Case("TripletMarginWithDistanceLoss", lambda nn: nn.TripletMarginWithDistanceLoss(margin=0.5),
         lambda: [R(3, 4), R(3, 4, seed=4), R(3, 4, seed=5)]),
    Case("MultiLabelSoftMarginLoss", lambda nn: nn.MultiLabelSoftMarginLoss(weight=nn_t(nn, R(4, lo=0.1))),
         lambda: [R(3, 4), (R(3, 4, seed=4) > 0).astype(np.float64)], grad=(0,)),
    Case("MultiLabelMarginLoss", lambda nn: nn.MultiLabelMarginLoss(),
         lambda: [R(2, 4), np.array([[3, 0, -1, 1], [1, 2, 3, -1]])], double=False),
    Case("MultiMarginLoss", lambda nn: nn.MultiMarginLoss(p=2, margin=0.7, weight=nn_t(nn, R(4, lo=0.1))),
         lambda: [R(3, 4), I(3, high=4)], double=False),
    Case("CTCLoss", lambda nn: nn.CTCLoss(), lambda: [np.log(np.random.default_rng(0).dirichlet(np.ones(4), (6, 2))),
                                                      np.array([[1, 2], [3, 3]]), np.array([6, 5]), np.array([2, 2])],
         grad=(0,), double=False),
]

for _n in ("Dropout", "AlphaDropout"):
    CASES.append(Case(_n, (lambda n: lambda nn: getattr(nn, n)(0.3))(_n), lambda: [R(4, 5)], seeded=True))
for _n, _shape in (("Dropout1d", (2, 4, 3)), ("Dropout2d", (2, 4, 3, 2)), ("Dropout3d", (2, 3, 2, 2, 2)),
                   ("FeatureAlphaDropout", (2, 4, 3, 2))):
    CASES.append(Case(_n, (lambda n: lambda nn: getattr(nn, n)(0.4))(_n), (lambda s: lambda: [R(*s)])(_shape),
                      seeded=True))

CASES += [
    Case("Conv1d", lambda nn: nn.Conv1d(2, 4, 3, stride=2, padding=1), lambda: [R(2, 2, 7)]),
    Case("Conv1d_same_reflect", lambda nn: nn.Conv1d(2, 2, 3, padding="same", padding_mode="reflect", bias=False),
         lambda: [R(2, 2, 6)]),
    Case("Conv2d", lambda nn: nn.Conv2d(2, 4, (3, 2), dilation=(1, 2), groups=2), lambda: [R(2, 2, 5, 6)]),
    Case("Conv2d_circular", lambda nn: nn.Conv2d(3, 2, 3, padding=1, padding_mode="circular"), lambda: [R(1, 3, 4, 4)]),
    Case("Conv2d_replicate_valid", lambda nn: nn.Conv2d(3, 2, 2, padding=(1, 0), padding_mode="replicate"),
         lambda: [R(1, 3, 4, 4)]),
    Case("Conv2d_unbatched", lambda nn: nn.Conv2d(2, 3, 2, padding="valid"), lambda: [R(2, 4, 4)]),
    Case("Conv3d", lambda nn: nn.Conv3d(2, 2, 2, stride=(1, 2, 1)), lambda: [R(1, 2, 3, 4, 3)]),
    Case("ConvTranspose1d", lambda nn: nn.ConvTranspose1d(2, 3, 3, stride=2, padding=1, output_padding=1),
         lambda: [R(2, 2, 4)]),
    Case("ConvTranspose2d", lambda nn: nn.ConvTranspose2d(4, 2, (2, 3), stride=(2, 1), groups=2, dilation=(1, 2)),
         lambda: [R(1, 4, 3, 3)]),
    Case("ConvTranspose3d", lambda nn: nn.ConvTranspose3d(2, 2, 2, bias=False), lambda: [R(1, 2, 2, 3, 2)]),
    Case("MaxPool1d", lambda nn: nn.MaxPool1d(3, 2, padding=1), lambda: [R(2, 3, 7)]),
    Case("MaxPool2d", lambda nn: nn.MaxPool2d(2, ceil_mode=True, return_indices=True), lambda: [R(2, 2, 5, 5)]),
    Case("MaxPool2d_dil", lambda nn: nn.MaxPool2d((2, 3), stride=1, dilation=(2, 1)), lambda: [R(1, 2, 5, 5)]),
    Case("MaxPool3d", lambda nn: nn.MaxPool3d(2), lambda: [R(1, 2, 4, 4, 4)]),
    Case("AvgPool1d", lambda nn: nn.AvgPool1d(3, 2, 1, count_include_pad=False), lambda: [R(2, 3, 7)]),
    Case("AvgPool2d", lambda nn: nn.AvgPool2d(2, ceil_mode=True, divisor_override=3), lambda: [R(2, 2, 5, 5)]),
    Case("AvgPool3d", lambda nn: nn.AvgPool3d((2, 1, 2), padding=(1, 0, 0)), lambda: [R(1, 2, 4, 3, 4)]),
    Case("AdaptiveAvgPool1d", lambda nn: nn.AdaptiveAvgPool1d(3), lambda: [R(2, 3, 7)]),
    Case("AdaptiveAvgPool2d", lambda nn: nn.AdaptiveAvgPool2d((2, None)), lambda: [R(2, 2, 5, 4)]),
    Case("AdaptiveAvgPool3d", lambda nn: nn.AdaptiveAvgPool3d(2), lambda: [R(1, 2, 3, 4, 5)]),
    Case("AdaptiveMaxPool1d", lambda nn: nn.AdaptiveMaxPool1d(3), lambda: [R(2, 3, 7)]),
    Case("AdaptiveMaxPool2d", lambda nn: nn.AdaptiveMaxPool2d((3, 2), return_indices=True), lambda: [R(2, 2, 5, 4)]),
    Case("AdaptiveMaxPool3d", lambda nn: nn.AdaptiveMaxPool3d(2), lambda: [R(1, 2, 3, 4, 5)]),
    Case("LPPool1d", lambda nn: nn.LPPool1d(2, 3, 2), lambda: [R(2, 3, 7, lo=0.1)]),
    Case("LPPool2d", lambda nn: nn.LPPool2d(3, 2), lambda: [R(2, 2, 4, 4, lo=0.1)]),
    Case("LPPool3d", lambda nn: nn.LPPool3d(2, 2), lambda: [R(1, 2, 4, 4, 4, lo=0.1)]),
    Case("BatchNorm1d", lambda nn: nn.BatchNorm1d(3), lambda: [R(4, 3)]),
    Case("BatchNorm1d_3d_cma", lambda nn: nn.BatchNorm1d(3, momentum=None), lambda: [R(4, 3, 2)]),
    Case("BatchNorm2d", lambda nn: nn.BatchNorm2d(3, momentum=0.3, eps=1e-3), lambda: [R(2, 3, 2, 2)]),
    Case("BatchNorm2d_noaffine_notrack", lambda nn: nn.BatchNorm2d(3, affine=False, track_running_stats=False),
         lambda: [R(2, 3, 2, 2)]),
    Case("BatchNorm3d_nobias", lambda nn: nn.BatchNorm3d(2, bias=False), lambda: [R(2, 2, 2, 2, 2)]),
    Case("InstanceNorm1d", lambda nn: nn.InstanceNorm1d(3), lambda: [R(2, 3, 5)]),
    Case("InstanceNorm2d_affine_track", lambda nn: nn.InstanceNorm2d(3, affine=True, track_running_stats=True),
         lambda: [R(2, 3, 3, 2)]),
    Case("InstanceNorm3d_unbatched", lambda nn: nn.InstanceNorm3d(2, affine=True), lambda: [R(2, 2, 3, 2)]),
    Case("LayerNorm", lambda nn: nn.LayerNorm((3, 2)), lambda: [R(4, 3, 2)]),
    Case("LayerNorm_nobias", lambda nn: nn.LayerNorm(3, bias=False, eps=1e-3), lambda: [R(4, 3)]),
    Case("LayerNorm_noaffine", lambda nn: nn.LayerNorm(3, elementwise_affine=False), lambda: [R(4, 3)]),
    Case("GroupNorm", lambda nn: nn.GroupNorm(2, 4), lambda: [R(2, 4, 3)]),
    Case("RMSNorm", lambda nn: nn.RMSNorm([2, 3], eps=1e-5), lambda: [R(4, 2, 3)]),
    Case("LocalResponseNorm", lambda nn: nn.LocalResponseNorm(3, alpha=0.1), lambda: [R(2, 5, 3)]),
    Case("Embedding", lambda nn: nn.Embedding(6, 3, padding_idx=-2), lambda: [I(2, 4, high=6)]),
    Case("Embedding_maxnorm", lambda nn: nn.Embedding(6, 3, max_norm=1.0, norm_type=1.5), lambda: [I(2, 4, high=6)]),
    Case("Embedding_pretrained", lambda nn: nn.Embedding.from_pretrained(nn_t(nn, R(5, 2)), freeze=False),
         lambda: [I(3, high=5)]),
    Case("EmbeddingBag", lambda nn: nn.EmbeddingBag(6, 3, mode="sum"),
         lambda: [I(7, high=6), np.array([0, 2, 2, 5])], double=False),
    Case("EmbeddingBag_max", lambda nn: nn.EmbeddingBag(6, 3, mode="max", padding_idx=1), lambda: [I(2, 4, high=6)],
         double=False),
    Case("CosineSimilarity", lambda nn: nn.CosineSimilarity(dim=0), lambda: [R(3, 4), R(3, 4, seed=4)]),
    Case("PairwiseDistance", lambda nn: nn.PairwiseDistance(p=3, keepdim=True), lambda: [R(3, 4), R(3, 4, seed=4)]),
    Case("PixelShuffle", lambda nn: nn.PixelShuffle(2), lambda: [R(1, 8, 2, 3)]),
    Case("PixelUnshuffle", lambda nn: nn.PixelUnshuffle(2), lambda: [R(1, 2, 4, 6)]),
    Case("ChannelShuffle", lambda nn: nn.ChannelShuffle(2), lambda: [R(1, 4, 2, 3)]),
    Case("Upsample_nearest", lambda nn: nn.Upsample(scale_factor=2), lambda: [R(1, 2, 3, 3)]),
    Case("Upsample_bilinear", lambda nn: nn.Upsample(size=(5, 4), mode="bilinear"), lambda: [R(1, 2, 3, 3)]),
    Case("UpsamplingBilinear2d", lambda nn: nn.UpsamplingBilinear2d(scale_factor=2), lambda: [R(1, 2, 3, 3)]),
    Case("UpsamplingNearest2d", lambda nn: nn.UpsamplingNearest2d(size=5), lambda: [R(1, 2, 3, 3)]),
    Case("Fold", lambda nn: nn.Fold((4, 5), 2, stride=(2, 1)), lambda: [R(2, 8, 8)]),
    Case("Unfold", lambda nn: nn.Unfold((2, 3), padding=1, dilation=(1, 2)), lambda: [R(2, 2, 4, 4)]),
]
for _n, _a, _shape in (("ZeroPad1d", (2,), (2, 3)), ("ZeroPad2d", ((1, 0, 2, 1),), (1, 2, 3)),
                       ("ZeroPad3d", (1,), (1, 2, 2, 2)), ("ConstantPad1d", ((1, 2), 0.5), (2, 2, 3)),
                       ("ConstantPad2d", (1, -1.0), (1, 2, 3)), ("ConstantPad3d", ((1, 0, 0, 1, 1, 0), 2.0), (1, 2, 2, 2)),
                       ("ReflectionPad1d", (2,), (2, 2, 4)), ("ReflectionPad2d", ((1, 0, 2, 1),), (1, 2, 3, 4)),
                       ("ReflectionPad3d", (1,), (1, 1, 2, 3, 3)), ("ReplicationPad1d", ((0, 2),), (2, 2, 3)),
                       ("ReplicationPad2d", (1,), (1, 2, 3, 3)), ("ReplicationPad3d", ((1, 0, 0, 1, 1, 0),), (1, 1, 2, 2, 2)),
                       ("CircularPad1d", (1,), (2, 2, 3)), ("CircularPad2d", ((1, 0, 2, 1),), (1, 2, 3, 3)),
                       ("CircularPad3d", (1,), (1, 1, 2, 2, 2))):
    CASES.append(Case(_n, (lambda n, a: lambda nn: getattr(nn, n)(*a))(_n, _a), (lambda s: lambda: [R(*s)])(_shape)))


def nn_t(nn, a):
    """A float32 tensor of ``a`` in the library ``nn`` belongs to."""
    lib = torch if nn is torch.nn else ember
    return lib.tensor(np.asarray(a, dtype=np.float32))


def _lib(nn):
    return torch if nn is torch.nn else ember


def _build(case, lib):
    lib.manual_seed(0)
    return case.ctor(lib.nn)


def _state(m):
    return [(k, tuple(v.shape), str(v.dtype), v.detach().numpy().copy()) for k, v in m.state_dict().items()]


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_init_repr_state_dict(case):
    tm, em = _build(case, torch), _build(case, ember)
    assert repr(em) == repr(tm)
    ts, es = _state(tm), _state(em)
    assert [s[:3] for s in es] == [s[:3] for s in ts]
    for (k, _, _, a), (_, _, _, b) in zip(ts, es):
        np.testing.assert_array_equal(b, a, err_msg=f"{case.name}.{k}: initial values differ from PyTorch's")
    assert [n for n, _ in em.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert [n for n, _ in em.named_buffers()] == [n for n, _ in tm.named_buffers()]


def _to_lib(lib, a, grad):
    if not isinstance(a, np.ndarray):
        return a
    t = lib.tensor(a)
    if grad:
        t.requires_grad_(True)
    return t


def _run(case, lib, train, double):
    m = _build(case, lib).double()
    m.train(train)
    arrays = case.inputs()
    grad_idx = case.grad if case.grad is not None else tuple(
        i for i, a in enumerate(arrays) if isinstance(a, np.ndarray) and a.dtype.kind == "f")
    ins = [_to_lib(lib, a, i in grad_idx) for i, a in enumerate(arrays)]
    if case.seeded:
        lib.manual_seed(123)
    out = m(*ins)
    extra = []
    if isinstance(out, tuple):   # (values, indices)
        out, extra = out[0], [o.numpy() for o in out[1:]]
    g_out = lib.tensor(np.random.default_rng(7).uniform(-1, 1, tuple(out.shape)))
    params = [p for p in m.parameters()]
    leaves = [ins[i] for i in grad_idx] + params
    if double:
        grads = lib.autograd.grad(out, leaves, g_out, create_graph=True, allow_unused=True)
        s = sum((g * g).sum() for g in grads if g is not None and g.requires_grad)
        # A gradient that is constant in the leaves (piecewise-linear layers) may come back as None (ember) or
        # zeros (PyTorch): both mean zero.
        if not isinstance(s, (torch.Tensor, ember.Tensor)):
            return [np.zeros(tuple(t.shape)) for t in leaves]
        gg = lib.autograd.grad(s, leaves, allow_unused=True)
        return [np.zeros(tuple(t.shape)) if g is None else g.detach().numpy() for g, t in zip(gg, leaves)]
    out.backward(g_out)
    res = [out.detach().numpy()]
    res += [None if t.grad is None else t.grad.numpy() for t in leaves]
    res += [b.numpy() for b in m.buffers()] + extra
    return res


def _compare(case, t, e):
    assert (t is None) == (e is None)
    if t is None:
        return
    assert len(t) == len(e)
    for i, (a, b) in enumerate(zip(t, e)):
        assert (a is None) == (b is None), f"{case.name}: result {i}: torch {a is None}, ember {b is None}"
        if a is not None:
            np.testing.assert_allclose(b, a, rtol=1e-7, atol=case.atol, err_msg=f"{case.name}: result {i}")


# Layers that behave differently in eval mode; the others are checked in training mode only.
_MODAL = ("Dropout", "BatchNorm", "InstanceNorm", "RReLU")


@pytest.mark.parametrize("case,train", [(c, True) for c in CASES]
                         + [(c, False) for c in CASES if any(k in c.name for k in _MODAL)],
                         ids=lambda v: "train" if v is True else "eval" if v is False else repr(v))
def test_forward_backward(case, train):
    _compare(case, _run(case, torch, train, False), _run(case, ember, train, False))


# Layers linear in their input have a zero second derivative: double backward is checked on the others.
_LINEAR = ("Pad", "MaxPool", "AvgPool", "Pixel", "ChannelShuffle", "Fold", "Unfold", "Upsampl", "Flatten", "Identity",
           "Dropout")


@pytest.mark.parametrize("case", [c for c in CASES if c.double and not any(k in c.name for k in _LINEAR)], ids=repr)
def test_double_backward(case):
    try:
        t = _run(case, torch, True, True)
    except RuntimeError as exc:
        pytest.skip(f"torch has no double backward here: {exc}")
    _compare(case, t, _run(case, ember, True, True))


def test_lazy_linear_becomes_linear_with_torchs_draws():
    def run(lib):
        lib.manual_seed(0)
        m = lib.nn.LazyLinear(3)
        before = repr(m)
        lib.manual_seed(1)
        y = m(lib.ones(2, 4))
        return before, repr(m), type(m).__name__, m.weight.detach().numpy(), m.bias.detach().numpy(), y.detach().numpy()
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # PyTorch warns that lazy modules are experimental
        t, e = run(torch), run(ember)
    assert t[:3] == e[:3]
    for a, b in zip(t[3:], e[3:]):
        np.testing.assert_array_equal(b, a)


def test_layer_errors_match_torch():
    from parity import raises_same
    for fn in (lambda lib: lib.nn.Conv2d(3, 2, 3, groups=2), lambda lib: lib.nn.Conv2d(2, 3, 3, groups=2),
               lambda lib: lib.nn.Conv2d(2, 2, 3, padding="full"), lambda lib: lib.nn.Conv2d(2, 2, 3, stride=2, padding="same"),
               lambda lib: lib.nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect"),
               lambda lib: lib.nn.ConvTranspose1d(2, 2, 3, stride=2)(lib.ones(1, 2, 4), output_size=[20]),
               lambda lib: lib.nn.Dropout(1.5), lambda lib: lib.nn.GroupNorm(3, 4),
               lambda lib: lib.nn.BatchNorm2d(3)(lib.ones(2, 3)), lambda lib: lib.nn.InstanceNorm1d(3, affine=True)(lib.ones(2, 4, 5)),
               lambda lib: lib.nn.Softmax2d()(lib.ones(2)), lambda lib: lib.nn.MultiMarginLoss(p=3),
               lambda lib: lib.nn.TripletMarginLoss(margin=0), lambda lib: lib.nn.HuberLoss(delta="x"),
               lambda lib: lib.nn.Embedding(3, 2, padding_idx=5), lambda lib: lib.nn.Embedding.from_pretrained(lib.ones(3)),
               lambda lib: lib.nn.CircularPad2d(1)(lib.ones(2)), lambda lib: lib.nn.Bilinear(0, 2, 2),
               lambda lib: lib.nn.Unflatten(1, (2, "a"))):
        raises_same(fn, exact_msg=True)
    # (PyTorch prints a set here, whose order varies between runs)
    raises_same(lambda lib: lib.nn.Conv1d(2, 2, 3, padding_mode="mirror"), msg="but got padding_mode='mirror'")


def test_linear_weight_grad_has_the_weights_layout():
    """PyTorch computes the gradient of ``weight.t()`` in that view's (column-major) layout, so the weight's
    ``.grad`` comes out C-contiguous like the weight (strides as PyTorch's; the optimizer reads it as is)."""
    torch = pytest.importorskip("torch")
    for lib in (ember, torch):
        lib.manual_seed(0)
    res = []
    for lib in (ember, torch):
        lin = lib.nn.Linear(5, 3)
        lin(lib.ones(4, 5)).sum().backward()
        res.append((lin.weight.grad.stride(), lin.weight.grad.is_contiguous(), lin.bias.grad.stride()))
    assert res[0] == res[1] == ((5, 1), True, (1,))


@pytest.mark.parametrize("contiguous", [True, False])
def test_linear_bias_folding_follows_contiguity(contiguous):
    """PyTorch's linear folds a 3-d input and the bias into one addmm only when the input is contiguous; a
    transposed (batch_first attention's) input goes through matmul and then the bias (AddBackward0, the product
    rounded first): nodes and bfloat16 values as PyTorch's."""
    x = np.random.default_rng(3).standard_normal((3, 4, 8))
    res = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        lin = lib.nn.Linear(8, 5).to(lib.bfloat16)
        t = lib.tensor(x, dtype=lib.bfloat16)
        t = t if contiguous else t.transpose(0, 1)
        y = lin(t)
        names = [type(y.grad_fn).__name__] + [type(f).__name__ for f, _ in y.grad_fn.next_functions]
        res.append((names, y.detach().float().numpy()))
    assert res[1][0] == res[0][0]
    np.testing.assert_array_equal(res[1][1], res[0][1])
