"""nn.init against PyTorch: with the same seed every initialiser gives PyTorch's values (bit for bit, except
orthogonal_, whose QR may differ in the last bit), on 2-, 3- and 4-d tensors, with and without a generator;
and PyTorch's errors."""
import math
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

SHAPES = [(5, 3), (4, 3, 2), (3, 2, 3, 2)]

INITS = [
    ("uniform_", (), {"a": -0.5, "b": 2.0}),
    ("normal_", (), {"mean": 1.0, "std": 0.3}),
    ("trunc_normal_", (), {}),                                          # wide window: normal + redraws
    ("trunc_normal_", (), {"mean": 0.2, "std": 1.0, "a": -0.3, "b": 0.4}),   # narrow: uniform + acceptance
    ("constant_", (0.7,), {}),
    ("ones_", (), {}),
    ("zeros_", (), {}),
    ("xavier_uniform_", (), {"gain": 2.0}),
    ("xavier_normal_", (), {}),
    ("kaiming_uniform_", (), {"a": math.sqrt(5)}),
    ("kaiming_uniform_", (), {"mode": "fan_out", "nonlinearity": "relu"}),
    ("kaiming_normal_", (), {"a": 0.1, "nonlinearity": "leaky_relu"}),
    ("kaiming_normal_", (), {"mode": "fan_out", "nonlinearity": "tanh"}),
    ("orthogonal_", (), {"gain": 1.5}),
]


def _init(lib, name, shape, args, kwargs, use_gen, dtype="float32"):
    lib.manual_seed(0)
    t = lib.empty(*shape, dtype=getattr(lib, dtype))
    if use_gen:
        g = lib.Generator()
        g.manual_seed(7)
        kwargs = dict(kwargs, generator=g)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = getattr(lib.nn.init, name)(t, *args, **kwargs)
    assert out is t
    # the draw after init must match too: the generator advanced by the same amount
    return t.numpy().copy(), lib.rand(2).numpy()


@pytest.mark.parametrize("use_gen", [False, True], ids=["default_gen", "generator"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{len(s)}d")
@pytest.mark.parametrize("name,args,kwargs", INITS, ids=[f"{n}{i}" for i, (n, _, _) in enumerate(INITS)])
def test_same_values_as_torch(name, args, kwargs, shape, use_gen):
    if name in ("constant_", "ones_", "zeros_") and use_gen:
        pytest.skip("no generator argument")
    (et, en), (tt, tn) = (_init(lib, name, shape, args, kwargs, use_gen) for lib in (ember, torch))
    if name == "orthogonal_":
        np.testing.assert_allclose(et, tt, rtol=0, atol=1e-6)
    else:
        np.testing.assert_array_equal(et, tt)
    np.testing.assert_array_equal(en, tn)


def test_float64_same_values():
    for name in ("uniform_", "normal_", "kaiming_uniform_", "trunc_normal_"):
        (et, _), (tt, _) = (_init(lib, name, (6, 4), (), {}, False, "float64") for lib in (ember, torch))
        np.testing.assert_array_equal(et, tt)


@pytest.mark.parametrize("shape", [(4, 6), (6, 4)])
def test_eye_and_sparse(shape):
    for name, args in (("eye_", ()), ("sparse_", (0.4,)), ("sparse_", (0.1, 0.5))):
        (et, en), (tt, tn) = (_init(lib, name, shape, args, {}, False) for lib in (ember, torch))
        np.testing.assert_array_equal(et, tt)
        np.testing.assert_array_equal(en, tn)


@pytest.mark.parametrize("shape,groups", [((4, 2, 3), 1), ((6, 3, 3, 2), 2), ((4, 2, 3, 3, 3), 2), ((2, 4, 3), 1)])
def test_dirac(shape, groups):
    (et, _), (tt, _) = (_init(lib, "dirac_", shape, (groups,), {}, False) for lib in (ember, torch))
    np.testing.assert_array_equal(et, tt)


def test_orthogonal_is_orthogonal():
    t = ember.nn.init.orthogonal_(ember.empty(3, 5, dtype=ember.float64))
    np.testing.assert_allclose(t.numpy() @ t.numpy().T, np.eye(3), atol=1e-12)


def test_init_under_grad_does_not_record():
    w = ember.nn.Parameter(ember.empty(3, 4))
    for name in ("uniform_", "normal_", "xavier_uniform_", "kaiming_normal_", "trunc_normal_", "orthogonal_",
                 "zeros_", "ones_", "eye_"):
        getattr(ember.nn.init, name)(w)
        assert w.grad_fn is None and w.is_leaf and w.requires_grad


@pytest.mark.parametrize("nl,param", [("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None),
                                      ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2), ("leaky_relu", 3),
                                      ("selu", None), ("conv_transpose3d", None)])
def test_calculate_gain(nl, param):
    assert ember.nn.init.calculate_gain(nl, param) == torch.nn.init.calculate_gain(nl, param)


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4), (2, 3, 4, 5)])
def test_fans(shape):
    assert (ember.nn.init._calculate_fan_in_and_fan_out(ember.empty(*shape))
            == torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape)))
    for mode in ("fan_in", "fan_out", "FAN_IN"):
        assert (ember.nn.init._calculate_correct_fan(ember.empty(*shape), mode)
                == torch.nn.init._calculate_correct_fan(torch.empty(*shape), mode))


ERRORS = [
    (lambda lib: lib.nn.init.calculate_gain("foo"), "Unsupported nonlinearity foo"),
    (lambda lib: lib.nn.init.calculate_gain("leaky_relu", True), "negative_slope True not a valid number"),
    (lambda lib: lib.nn.init.calculate_gain("leaky_relu", "x"), "not a valid number"),
    (lambda lib: lib.nn.init.xavier_uniform_(lib.empty(3)), "fewer than 2 dimensions"),
    (lambda lib: lib.nn.init.kaiming_normal_(lib.empty(3, 2), mode="fan_x"), "Mode fan_x not supported"),
    (lambda lib: lib.nn.init.eye_(lib.empty(3, 2, 2)), "Only tensors with 2 dimensions are supported"),
    (lambda lib: lib.nn.init.sparse_(lib.empty(3), 0.1), "Only tensors with 2 dimensions are supported"),
    (lambda lib: lib.nn.init.dirac_(lib.empty(3, 2)), "Only tensors with 3, 4, or 5 dimensions are supported"),
    (lambda lib: lib.nn.init.dirac_(lib.empty(3, 2, 2), groups=2), "dim 0 must be divisible by groups"),
    (lambda lib: lib.nn.init.orthogonal_(lib.empty(3)), "Only tensors with 2 or more dimensions are supported"),
]


@pytest.mark.parametrize("fn,msg", ERRORS, ids=[m[:30] for _, m in ERRORS])
def test_errors(fn, msg):
    for lib in (torch, ember):
        with pytest.raises(ValueError, match=msg):
            fn(lib)


def test_warnings_and_deprecated_aliases():
    with pytest.warns(UserWarning, match="zero-element"):
        ember.nn.init.kaiming_uniform_(ember.empty(0, 3))
    with pytest.warns(UserWarning, match="mean is more than 2 std"):
        ember.nn.init.trunc_normal_(ember.empty(3), mean=5.0, a=-1, b=1)
    with pytest.warns(FutureWarning, match=r"nn.init.normal` is now deprecated in favor of `nn.init.normal_"):
        ember.nn.init.normal(ember.empty(3))
    assert set(torch.nn.init.__all__) <= set(dir(ember.nn.init))
