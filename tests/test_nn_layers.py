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
    res += [b.numpy() for b in m.buffers()]
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


@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("case", CASES, ids=repr)
def test_forward_backward(case, train):
    _compare(case, _run(case, torch, train, False), _run(case, ember, train, False))


@pytest.mark.parametrize("case", [c for c in CASES if c.double], ids=repr)
def test_double_backward(case):
    try:
        t = _run(case, torch, True, True)
    except RuntimeError as exc:
        pytest.skip(f"torch has no double backward here: {exc}")
    _compare(case, t, _run(case, ember, True, True))
