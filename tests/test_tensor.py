"""Tensor creation, dtypes and promotion, properties, conversions and repr, compared with PyTorch.

Most tests are written once as ``fn(lib)`` and run with ``lib = torch`` and ``lib = ember``;
``same(fn)`` compares results (values, dtypes, shapes, Python types) or exception types.
"""
import itertools
import warnings

import numpy as np
import pytest

import ember
from parity import assert_same as _assert_same, raises_same, run as _run, same, torch


# ----- comparison helpers: tests/parity.py --------------------------------------------------

def warns_same(fn, category=UserWarning):
    """Both libraries emit a warning of ``category`` (or both none); results are compared too."""
    out = []
    for lib in (torch, ember):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = _run(fn, lib)
        out.append((r, [x for x in w if issubclass(x.category, category)]))
    (rt, wt), (re_, we) = out
    assert bool(wt) == bool(we), f"torch warnings {[str(x.message) for x in wt]}, ember {[str(x.message) for x in we]}"
    assert rt[0] == re_[0] == "ok", (rt, re_)
    _assert_same(rt[1], re_[1])
    return wt, we


# ----- creation ---------------------------------------------------------------------------------

@pytest.mark.parametrize("data", [
    "3", "3.0", "True", "-2.5", "[1, 2, 3]", "[1.0, 2, 3]", "[True, False]", "[1, True]", "[True, 2.5]",
    "[[1, 2], [3, 4]]", "[[1.5], [2.5]]", "[]", "[[]]", "()", "((1, 2), (3, 4))", "[[[1]], [[2]]]",
    "2 ** 62", "[1e40]", "np.array([1, 2], dtype=np.int32)", "np.array([1., 2.])",
    "np.array([1., 2.], dtype=np.float32)", "np.array([1, 2], dtype=np.float16)", "np.float64(1.5)",
    "np.int64(2)", "[np.float64(1.5)]", "[np.float64(1.5), 2.0]", "[2.0, np.float32(1.5)]", "[np.float16(1)]",
    "[np.int32(3)]", "[np.int32(3), 2]", "[[np.float64(1.0)], [2.0]]", "[1, np.float64(2)]", "[np.bool_(True)]",
    "[True, np.float32(2)]",
    "np.array(True)", "np.array([[1, 2]], dtype=np.int16)",
    "np.array([1, 2], dtype=np.uint8)", "np.array([1, 2], dtype=np.int8)", "np.arange(6).reshape(2, 3).T",
])
def test_tensor_from_data(data):
    same(lambda lib: lib.tensor(eval(data)))


def test_tensor_from_list_of_0d_tensors():
    def f(lib):
        x = lib.tensor(2.0, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = lib.tensor([x, x * 2, lib.tensor(1.0)])
        return t, t.requires_grad
    same(f)


@pytest.mark.parametrize("data,dtype", [
    ("3", "float32"), ("[1, 2]", "float64"), ("[1.7, -2.7]", "int64"), ("[0, 2]", "bool"),
    ("[1.5, 2.5]", "float16"), ("[1, 2]", "int32"), ("np.array([1.5, 2.5])", "float32"),
    ("[True, False]", "float32"),
])
def test_tensor_with_dtype(data, dtype):
    same(lambda lib: lib.tensor(eval(data), dtype=getattr(lib, dtype)))


def test_tensor_requires_grad():
    same(lambda lib: (lambda t: (t.requires_grad, t.is_leaf, t.grad, t.grad_fn))(
        lib.tensor([1.0, 2.0], requires_grad=True)))
    same(lambda lib: lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True).requires_grad)
    raises_same(lambda lib: lib.tensor([1, 2], requires_grad=True),
                msg="Only Tensors of floating point and complex dtype can require gradients", exact_msg=True)


def test_tensor_copies_and_warns_on_tensor_input():
    def f(lib):
        a = np.array([1.0, 2.0])
        t = lib.tensor(a)
        a[0] = 100
        return t
    same(f)
    wt, we = warns_same(lambda lib: lib.tensor(lib.tensor([1.0, 2.0], requires_grad=True)))
    assert "sourceTensor" in str(we[0].message)

    def from_nonleaf(lib):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = lib.tensor(lib.tensor([1.0, 2.0], requires_grad=True) * 2)
        return t, t.requires_grad, t.is_leaf
    same(from_nonleaf)


@pytest.mark.parametrize("data", ["'abc'", "None", "[1, None]", "[[1, 2], [3]]", "['a']", "[[1, 2], 3]",
                                  "2 ** 63", "[2 ** 63]", "-2 ** 63 - 1", "[1, 'a']", "[['a']]", "{1: 2}",
                                  "object()", "[[[1], [2]], [[3]]]", "[1, [2, 3]]"])
def test_tensor_bad_data(data):
    raises_same(lambda lib: lib.tensor(eval(data)), exact_msg="object" not in data)


def test_bad_data_errors_are_not_internal():
    # whatever the type, ember must not leak NumPy internals like KeyError
    for data in (["a"], [[1, 2], 3], 2 ** 63, [1, None], None):
        with pytest.raises((TypeError, ValueError, RuntimeError)):
            ember.tensor(data)


@pytest.mark.parametrize("fn", ["zeros", "ones", "empty"])
@pytest.mark.parametrize("args", ["(2, 3)", "((2, 3),)", "([2, 3],)", "(0,)", "((),)", "(4,)"])
def test_zeros_ones_empty(fn, args):
    def f(lib):
        t = getattr(lib, fn)(*eval(args))
        r = (t.dtype, t.shape, t.requires_grad)
        return r if fn == "empty" else r + (t,)
    same(f)


@pytest.mark.parametrize("fn", ["zeros", "ones", "empty", "rand", "randn"])
def test_creation_kwargs(fn):
    def f(lib):
        t = getattr(lib, fn)(2, 3, dtype=lib.float64, requires_grad=True)
        return t.dtype, t.shape, t.requires_grad, t.is_leaf, t.grad_fn
    same(f)


def test_creation_negative_size():
    raises_same(lambda lib: lib.zeros(-1, 2))
    raises_same(lambda lib: lib.ones(2, 2.5))


@pytest.mark.parametrize("expr", [
    "lib.full((2, 3), 3)", "lib.full((2,), 3.)", "lib.full((2,), True)", "lib.full([2, 2], -1.5)",
    "lib.full((2,), 3, dtype=lib.float64)", "lib.eye(3)", "lib.eye(2, 3)", "lib.eye(2, dtype=lib.int64)",
    "lib.arange(5)", "lib.arange(5.)", "lib.arange(1, 4)", "lib.arange(0., 1, 0.25)", "lib.arange(0, 1, 0.25)",
    "lib.arange(10, 0, -3)", "lib.arange(0, 5, dtype=lib.float64)", "lib.arange(1, 2.5, 0.5)",
    "lib.linspace(0, 1, 5)", "lib.linspace(-1, 1, 1)", "lib.linspace(0, 10, 4, dtype=lib.float64)",
    "lib.linspace(2, 2, 0)",
])
def test_full_eye_arange_linspace(expr):
    same(lambda lib: eval(expr))


def test_arange_errors():
    raises_same(lambda lib: lib.arange(0, 5, 0))
    raises_same(lambda lib: lib.arange(5, 0, 1))
    raises_same(lambda lib: lib.linspace(0, 1, -1))


@pytest.mark.parametrize("fn", ["zeros_like", "ones_like", "empty_like", "rand_like", "randn_like"])
@pytest.mark.parametrize("src", ["lib.ones(2, 3)", "lib.ones(2, dtype=lib.float64)"])
def test_like(fn, src):
    def f(lib):
        t = getattr(lib, fn)(eval(src))
        r = (t.dtype, t.shape, t.requires_grad)
        return r + (t,) if fn in ("zeros_like", "ones_like") else r
    same(f)


def test_like_dtype_and_errors():
    same(lambda lib: lib.zeros_like(lib.arange(3)))
    same(lambda lib: lib.ones_like(lib.arange(3), dtype=lib.float32))
    same(lambda lib: lib.full_like(lib.arange(3), 7))
    same(lambda lib: lib.full_like(lib.ones(2), 2.5, dtype=lib.float64))
    same(lambda lib: lib.zeros_like(lib.ones(2), requires_grad=True).requires_grad)
    raises_same(lambda lib: lib.zeros_like(lib.arange(3), requires_grad=True))


@pytest.mark.parametrize("expr", ["lib.randn(2, dtype=lib.int64)", "lib.rand(2, dtype=lib.int32)",
                                  "lib.randn(2, dtype=lib.bool)", "lib.randn_like(lib.arange(3))",
                                  "lib.rand_like(lib.arange(3))"])
def test_random_float_only(expr):
    raises_same(lambda lib: eval(expr), exact_msg=True)


def test_creation_needs_size():
    for fn in ("zeros", "ones", "empty", "rand", "randn"):
        same(lambda lib: type(getattr(lib, fn)(())).__name__)
    for fn in ("zeros", "ones", "empty"):
        raises_same(lambda lib: getattr(lib, fn)(), exact_msg=True)


def test_rand_randn_randint_ranges_and_dtypes():
    ember.manual_seed(0)
    r = ember.rand(1000)
    assert r.dtype is ember.float32 and r.shape == (1000,)
    assert 0 <= r.min().item() and r.max().item() < 1
    n = ember.randn(20000, dtype=ember.float64)
    assert n.dtype is ember.float64
    assert abs(n.mean().item()) < 0.05 and abs(n.std().item() - 1) < 0.05
    i = ember.randint(3, 7, (500,))
    assert i.dtype is ember.int64 and 3 <= i.min().item() and i.max().item() <= 6
    assert set(i.tolist()) == {3, 4, 5, 6}
    same(lambda lib: (lambda t: (t.dtype, t.shape))(lib.randint(5, (2, 3))))
    same(lambda lib: (lambda t: (t.dtype, t.shape))(lib.randint(0, 5, (3,), dtype=lib.int32)))
    same(lambda lib: (lambda t: (t.dtype, t.shape))(lib.rand((2, 2))))
    raises_same(lambda lib: lib.randint(5, 5, (2,)))


def test_manual_seed_reproducibility():
    ember.manual_seed(123)
    a = (ember.rand(5), ember.randn(3, 2), ember.randint(0, 100, (4,)))
    ember.manual_seed(123)
    b = (ember.rand(5), ember.randn(3, 2), ember.randint(0, 100, (4,)))
    for u, v in zip(a, b):
        assert ember.equal(u, v)
    ember.manual_seed(124)
    assert not ember.equal(ember.rand(5), a[0])
    assert ember.initial_seed() == 124
    g = ember.Generator().manual_seed(7)
    g2 = ember.Generator().manual_seed(7)
    assert ember.equal(ember.rand(4, generator=g), ember.rand(4, generator=g2))


def test_from_numpy_shares_memory():
    def f(lib):
        a = np.array([1.0, 2.0, 3.0])
        t = lib.from_numpy(a)
        a[0] = 10.0
        t[1] = 20.0
        return t, a.copy(), t.dtype
    same(f)

    def g(lib):
        a = np.arange(4, dtype=np.int32)
        t = lib.from_numpy(a)
        return t.dtype, t
    same(g)
    raises_same(lambda lib: lib.from_numpy([1, 2]))


def test_as_tensor():
    same(lambda lib: lib.as_tensor([1, 2]))
    same(lambda lib: (lambda x: lib.as_tensor(x) is x)(lib.ones(2)))

    def shares(lib):
        a = np.zeros(3)
        t = lib.as_tensor(a)
        a[0] = 5
        return t
    same(shares)


def test_legacy_constructors():
    same(lambda lib: lib.Tensor(3, 5).shape)
    same(lambda lib: lib.Tensor(3, 5).dtype)
    same(lambda lib: lib.Tensor([1, 2]))
    same(lambda lib: lib.Tensor([[1.5, 2], [3, 4]]))
    same(lambda lib: lib.Tensor())
    same(lambda lib: lib.FloatTensor(2, 2).shape)
    same(lambda lib: lib.FloatTensor(2, 2).dtype)
    same(lambda lib: lib.FloatTensor([1, 2]))
    same(lambda lib: lib.LongTensor([1, 2]))
    same(lambda lib: lib.DoubleTensor(3).dtype)
    same(lambda lib: lib.BoolTensor([True, False]))
    same(lambda lib: lib.IntTensor(2).dtype)
    same(lambda lib: isinstance(lib.FloatTensor(2), lib.Tensor))
    same(lambda lib: isinstance(lib.ones(2), lib.Tensor))


# ----- dtype promotion --------------------------------------------------------------------------

_OPERANDS = {
    "f32": lambda lib: lib.tensor([1.5, 2.0], dtype=lib.float32),
    "f64": lambda lib: lib.tensor([1.5, 2.0], dtype=lib.float64),
    "f16": lambda lib: lib.tensor([1.5, 2.0], dtype=lib.float16),
    "i64": lambda lib: lib.tensor([3, 4], dtype=lib.int64),
    "i32": lambda lib: lib.tensor([3, 4], dtype=lib.int32),
    "bool": lambda lib: lib.tensor([True, False]),
    "f32_0d": lambda lib: lib.tensor(2.5, dtype=lib.float32),
    "f64_0d": lambda lib: lib.tensor(2.5, dtype=lib.float64),
    "f16_0d": lambda lib: lib.tensor(2.5, dtype=lib.float16),
    "i64_0d": lambda lib: lib.tensor(3, dtype=lib.int64),
    "i32_0d": lambda lib: lib.tensor(3, dtype=lib.int32),
    "bool_0d": lambda lib: lib.tensor(True),
    "py_bool": lambda lib: True,
    "py_int": lambda lib: 3,
    "py_float": lambda lib: 2.5,
}
_TENSORS = [k for k in _OPERANDS if not k.startswith("py")]


def _pair_results(lib, a, op, values):
    """``a op b`` and ``b op a`` for every operand kind b: dtype (and shape and values) or the exception type."""
    out = []
    for b in _OPERANDS:
        for lhs, rhs in ((a, b), (b, a)):
            x, y = _OPERANDS[lhs](lib), _OPERANDS[rhs](lib)
            try:
                r = eval(f"x {op} y")
                out.append((lhs, rhs, str(r.dtype)) + ((tuple(r.shape), r.tolist()) if values else ()))
            except Exception as e:  # noqa: BLE001
                out.append((lhs, rhs, type(e).__name__))
    return out


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("op", ["+", "*", "/"])
@pytest.mark.parametrize("a", _TENSORS)
def test_promotion_table(a, op):
    rt, re_ = _pair_results(torch, a, op, True), _pair_results(ember, a, op, True)
    mismatches = [(u, v) for u, v in zip(rt, re_) if u[:3] != v[:3] or (len(u) > 3 and u[3] != v[3])]
    assert not mismatches, mismatches
    for u, v in zip(rt, re_):
        if len(u) > 3:
            np.testing.assert_allclose(np.array(v[4], dtype=np.float64), np.array(u[4], dtype=np.float64),
                                       rtol=2e-3, err_msg=str(u[:2]))


@pytest.mark.parametrize("op", ["-", "**", "//", "%"])
@pytest.mark.parametrize("a", ["f32", "i64", "i64_0d", "bool", "f16", "i32"])
def test_promotion_other_ops(a, op):
    rt, re_ = _pair_results(torch, a, op, False), _pair_results(ember, a, op, False)
    mismatches = [(u, v) for u, v in zip(rt, re_) if u != v]
    assert not mismatches, mismatches


def test_promote_types_and_result_type():
    names = ["float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8", "bool"]
    for a, b in itertools.product(names, names):
        assert str(ember.promote_types(getattr(ember, a), getattr(ember, b))) == \
            str(torch.promote_types(getattr(torch, a), getattr(torch, b))), (a, b)
    same(lambda lib: lib.result_type(lib.arange(2), 2.5))
    same(lambda lib: lib.result_type(lib.arange(2), lib.tensor(2.5, dtype=lib.float64)))
    same(lambda lib: lib.result_type(lib.ones(2, dtype=lib.float16), lib.tensor(2.5, dtype=lib.float64)))


def test_dtype_objects():
    same(lambda lib: (lib.float == lib.float32, lib.double is lib.float64, lib.long is lib.int64,
                      lib.half is lib.float16, lib.int is lib.int32))
    same(lambda lib: (str(lib.float32), repr(lib.int64), lib.float32.is_floating_point,
                      lib.int64.is_floating_point, lib.float32.itemsize, lib.float64.itemsize))
    same(lambda lib: lib.get_default_dtype())


def test_set_default_dtype():
    try:
        for lib in (torch, ember):
            lib.set_default_dtype(lib.float64)
        same(lambda lib: (lib.tensor([1.5]).dtype, lib.zeros(2).dtype, lib.arange(2.).dtype,
                          lib.tensor([1, 2]).dtype, (lib.arange(3) / 2).dtype, str(lib.tensor([1.5]))))
    finally:
        torch.set_default_dtype(torch.float32)
        ember.set_default_dtype(ember.float32)


def test_inplace_promotion_errors():
    raises_same(lambda lib: lib.arange(3).add_(1.5), msg="can't be cast to the desired output type")
    raises_same(lambda lib: lib.arange(3).mul_(lib.ones(3)))
    same(lambda lib: lib.ones(3).add_(lib.arange(3)))
    same(lambda lib: lib.ones(3, dtype=lib.float16).add_(lib.ones(3, dtype=lib.float64)))


# ----- properties --------------------------------------------------------------------------------

def test_shape_properties():
    def f(lib):
        x = lib.ones(2, 3)
        return (x.shape, x.size(), x.size(1), x.size(-1), x.dim(), x.ndim, x.numel(), x.nelement(),
                type(x.shape[0]).__name__, x.shape == (2, 3), isinstance(x.shape, tuple), str(x.shape),
                repr(x.shape), x.shape[1:], str(lib.Size([])), lib.ones(()).dim(), lib.ones(()).numel())
    same(f)
    raises_same(lambda lib: lib.ones(2, 3).size(2))
    raises_same(lambda lib: lib.ones(2, 3).size(-3))


def test_dtype_and_device():
    def f(lib):
        x = lib.ones(2)
        return (x.dtype, str(x.dtype), str(x.device), x.device.type, x.device == lib.device("cpu"),
                x.is_floating_point(), lib.arange(2).is_floating_point(), x.type(), x.is_cuda,
                x.element_size(), lib.arange(2).element_size())
    same(f)


@pytest.mark.parametrize("expr", [
    "lib.tensor(3.5).item()", "lib.tensor(3).item()", "lib.tensor(True).item()", "lib.ones(1, 1).item()",
    "lib.tensor([2], dtype=lib.int32).item()", "lib.tensor([1.5], dtype=lib.float16).item()",
    "lib.ones(2, 3).item()", "lib.tensor([]).item()",
])
def test_item(expr):
    r = same(lambda lib: (lambda v: (v, type(v).__name__))(eval(expr)))
    if "2, 3" in expr:
        raises_same(lambda lib: eval(expr), msg="a Tensor with 6 elements cannot be converted to Scalar")


@pytest.mark.parametrize("expr", ["lib.tensor(3.5)", "lib.tensor([[1, 2], [3, 4]])", "lib.tensor([True])",
                                  "lib.tensor([])", "lib.ones(2, 0, 3)", "lib.tensor([1.5, 2], dtype=lib.float16)"])
def test_tolist(expr):
    same(lambda lib: (lambda v: (v, type(v).__name__))(eval(expr).tolist()))


def test_tolist_element_types():
    same(lambda lib: [type(v).__name__ for v in lib.tensor([1.5, 2.0]).tolist()])
    same(lambda lib: [type(v).__name__ for v in lib.tensor([1, 2]).tolist()])
    same(lambda lib: (lib.tensor([1.0], requires_grad=True) * 2).tolist())


def test_numpy_shares_memory():
    def f(lib):
        t = lib.zeros(3)
        a = t.numpy()
        a[0] = 5
        t[1] = 7
        return t, a.copy(), a.dtype.name, type(a).__name__
    same(f)
    same(lambda lib: lib.tensor([1, 2], dtype=lib.int32).numpy())
    same(lambda lib: lib.tensor([1.0], requires_grad=True).detach().numpy())
    raises_same(lambda lib: lib.tensor([1.0], requires_grad=True).numpy(),
                msg="Can't call numpy() on Tensor that requires grad", exact_msg=True)
    raises_same(lambda lib: (lib.tensor([1.0], requires_grad=True) * 2).numpy(),
                msg="Can't call numpy() on Tensor that requires grad")
    same(lambda lib: lib.tensor([1.0], requires_grad=True).numpy(force=True))


@pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword")  # torch's own
def test_array_protocol():
    same(lambda lib: np.asarray(lib.tensor([1.5, 2.0])))
    same(lambda lib: np.asarray(lib.tensor([1, 2]), dtype=np.float64))
    same(lambda lib: np.array(lib.ones(2, 2)))
    same(lambda lib: np.add(lib.ones(2).numpy(), 1))

    def shares(lib):
        t = lib.zeros(2)
        np.asarray(t)[0] = 3
        return t
    same(shares)
    raises_same(lambda lib: np.asarray(lib.tensor([1.0], requires_grad=True)))


def test_len_iter():
    same(lambda lib: (len(lib.ones(2, 3)), len(lib.empty(0, 3))))
    raises_same(lambda lib: len(lib.tensor(3.0)), msg="len() of a 0-d tensor", exact_msg=True)
    raises_same(lambda lib: list(lib.tensor(3.0)), msg="iteration over a 0-d tensor", exact_msg=True)
    raises_same(lambda lib: iter(lib.tensor(3.0)))
    same(lambda lib: list(lib.tensor([[1, 2], [3, 4]])))
    same(lambda lib: [t * 2 for t in lib.tensor([[1.0, 2], [3, 4]], requires_grad=True)])


def test_iter_grad_fn_is_unbind():
    same(lambda lib: [t.grad_fn.name() for t in lib.tensor([[1.0, 2], [3, 4]], requires_grad=True)])
    same(lambda lib: [float(v) for v in lib.tensor([1.5, 2.5])])


def test_bool_and_scalar_conversions():
    same(lambda lib: (bool(lib.tensor([0.0])), bool(lib.tensor(0.5)), bool(lib.tensor([[True]]))))
    raises_same(lambda lib: bool(lib.tensor([1, 2])), msg="Boolean value of Tensor with more than one value is ambiguous")
    raises_same(lambda lib: bool(lib.tensor([])), msg="Boolean value of Tensor with no values is ambiguous")
    same(lambda lib: (int(lib.tensor([1.5])), float(lib.tensor([[2]])), int(lib.tensor(-2.7))))
    raises_same(lambda lib: int(lib.ones(2)))
    raises_same(lambda lib: float(lib.ones(2)))
    same(lambda lib: [10, 20, 30][lib.tensor(1)])
    same(lambda lib: lib.tensor([1, 2, 3])[lib.tensor(1)])
    raises_same(lambda lib: [10, 20][lib.tensor(1.0)])


def test_format():
    same(lambda lib: f"{lib.tensor(1.5):.2f}")
    same(lambda lib: f"{lib.tensor(3):d}")
    same(lambda lib: f"{lib.tensor(1.23456):.4f}")
    same(lambda lib: f"{lib.tensor(1.5, requires_grad=True):.3f}")
    same(lambda lib: format(lib.tensor(1.5)))
    same(lambda lib: format(lib.ones(2, 3)))
    raises_same(lambda lib: f"{lib.tensor([1.5]):.2f}", msg="unsupported format string passed to Tensor.__format__")


@pytest.mark.parametrize("op", ["<", "<=", ">", ">=", "==", "!="])
def test_comparison_ops_return_bool(op):
    def f(lib):
        a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        b = lib.tensor([3.0, 2.0, 1.0])
        r1 = eval(f"a {op} b")
        r2 = eval(f"a {op} 2")
        r3 = eval(f"lib.arange(3) {op} 1.5")
        return r1, r2, r3, r1.requires_grad, r1.grad_fn, r1.dtype
    same(f)


def test_comparison_with_non_tensors():
    same(lambda lib: lib.ones(2) == "a")
    same(lambda lib: lib.ones(2) == None)  # noqa: E711
    same(lambda lib: lib.ones(2) != None)  # noqa: E711
    same(lambda lib: (lib.ones(2).eq(1), lib.ones(2).ne(lib.zeros(2)), lib.ones(2).lt(2), lib.ones(2).ge(1)))


def test_allclose_equal_isnan_isinf_any_all():
    def f(lib):
        a = lib.tensor([1.0, float("nan"), float("inf"), -float("inf"), 0.0])
        b = lib.tensor([1.0, 2.0])
        return (lib.isnan(a), lib.isinf(a), a.isnan(), a.isinf(), lib.isfinite(a),
                lib.allclose(b, b + 1e-9), lib.allclose(b, b + 1), b.allclose(b * 1.00001),
                lib.equal(b, b.clone()), lib.equal(b, lib.tensor([1.0, 3.0])), b.equal(b),
                lib.equal(b, lib.tensor([1.0, 2.0, 3.0])),
                lib.tensor([0, 1]).any(), lib.tensor([0, 1]).all(), lib.tensor([True, True]).all(),
                lib.tensor([[0, 1], [0, 0]]).any(1), lib.tensor([[1, 1], [0, 1]]).all(0),
                lib.any(lib.tensor([False])), lib.all(lib.tensor([]).bool()))
    same(f)
    same(lambda lib: type(lib.allclose(lib.ones(2), lib.ones(2))).__name__)
    same(lambda lib: type(lib.equal(lib.ones(2), lib.ones(2))).__name__)
    same(lambda lib: lib.allclose(lib.tensor([float("nan")]), lib.tensor([float("nan")]), equal_nan=True))


# ----- repr ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("expr", [
    "lib.tensor([1., 2., 3.], requires_grad=True)",
    "lib.tensor([1., 2., 3.], requires_grad=True) * 2",
    "lib.tensor([1., 2., 3.], requires_grad=True).sum()",
    "lib.tensor([1., 2., 3.], requires_grad=True).mean()",
    "lib.tensor([[1., 2.], [3., 4.]], requires_grad=True) @ lib.tensor([[1., 2.], [3., 4.]])",
    "lib.tensor([1., 2., 3.], requires_grad=True).detach()",
    "lib.tensor([1., 2.], requires_grad=True)[0]",
    "lib.tensor([1., 2.], requires_grad=True).reshape(2, 1)",
    "lib.tensor([1., 2.], requires_grad=True).double()",
    "lib.tensor([1., 2.], dtype=lib.float64)",
    "lib.tensor([1., 2.], dtype=lib.float64, requires_grad=True)",
    "lib.tensor([1., 2.], dtype=lib.float16, requires_grad=True)",
    "lib.tensor([1, 2])", "lib.tensor([1, 2], dtype=lib.int32)", "lib.tensor([True, False])",
    "lib.tensor([1.5, 2], dtype=lib.float16)", "lib.tensor(3.5)", "lib.tensor(3)", "lib.tensor([])",
    "lib.empty(0, 3)", "lib.tensor([1e-5, 1.0])", "lib.tensor([1e10, 1.0])", "lib.tensor([0.1, 1234.5678])",
    "lib.tensor([float('nan'), float('inf'), -float('inf')])", "lib.arange(12.).reshape(3, 4)",
    "lib.arange(2000.)", "lib.arange(12).reshape(2, 2, 3)", "lib.tensor([-1.5, 0.0, 2.25])",
    "lib.tensor([[-1, 10], [100, -1000]])", "lib.zeros(2, 3, dtype=lib.int64)",
    "lib.tensor(2.5, requires_grad=True) * 2", "lib.tensor([1., 2.], requires_grad=True).exp()",
])
def test_str_repr_match_torch(expr):
    same(lambda lib: (str(eval(expr)), repr(eval(expr))))


def test_repr_grad_fn_and_dtype_suffixes():
    same(lambda lib: repr(lib.ones(2, dtype=lib.float64, requires_grad=True) * 2))
    same(lambda lib: repr(lib.tensor([1., 2.], requires_grad=True).exp()))

    def after_backward(lib):
        t = lib.tensor([1., 2.], requires_grad=True)
        (t * t).sum().backward()
        return str(t.grad), str(t)
    same(after_backward)


# ----- requires_grad errors, non-leaf .grad --------------------------------------------------------

def test_requires_grad_errors_for_integer_tensors():
    raises_same(lambda lib: lib.tensor([1, 2]).requires_grad_(),
                msg="only Tensors of floating point dtype can require gradients", exact_msg=True)
    raises_same(lambda lib: lib.tensor([True]).requires_grad_(),
                msg="only Tensors of floating point dtype can require gradients", exact_msg=True)

    def setter(lib):
        t = lib.tensor([1, 2])
        t.requires_grad = True
    raises_same(setter, msg="only Tensors of floating point and complex dtype can require gradients",
                exact_msg=True)
    raises_same(lambda lib: lib.ones(2, dtype=lib.int64, requires_grad=True),
                msg="Only Tensors of floating point and complex dtype can require gradients", exact_msg=True)
    same(lambda lib: lib.tensor([1, 2]).requires_grad_(False).requires_grad)


def test_requires_grad_on_non_leaf():
    def set_false(lib):
        t = lib.tensor([1.0], requires_grad=True) * 2
        t.requires_grad = False
    raises_same(set_false, msg="you can only change requires_grad flags of leaf variables.")

    def set_false_method(lib):
        (lib.tensor([1.0], requires_grad=True) * 2).requires_grad_(False)
    raises_same(set_false_method, msg="you can only change requires_grad flags of leaf variables.")

    def set_true(lib):
        t = lib.tensor([1.0], requires_grad=True) * 2
        t.requires_grad = True
        return t.requires_grad
    same(set_true)

    def toggle_leaf(lib):
        t = lib.ones(2)
        t.requires_grad_()
        a = t.requires_grad
        t.requires_grad = False
        return a, t.requires_grad, t.is_leaf
    same(toggle_leaf)


def test_non_leaf_grad_warns_and_is_none():
    def f(lib):
        t = lib.tensor([1.0, 2.0], requires_grad=True) * 2
        return t.grad
    wt, we = warns_same(f)
    assert "retain_grad" in str(we[0].message) and "is not a leaf Tensor" in str(we[0].message)

    def leaf_no_warning(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        return x.grad, lib.ones(2).grad
    wt, we = warns_same(leaf_no_warning)
    assert not we

    def retained(lib):
        t = lib.tensor([1.0, 2.0], requires_grad=True) * 2
        t.retain_grad()
        (t * t).sum().backward()
        return t.grad, t.retains_grad
    wt, we = warns_same(retained)
    assert not we


def test_retain_grad_on_leaf_and_no_grad_tensor():
    same(lambda lib: (lambda x: (x.retain_grad(), x.retains_grad))(lib.ones(2, requires_grad=True)))
    raises_same(lambda lib: lib.ones(2).retain_grad())


def test_is_leaf_and_detach():
    def f(lib):
        x = lib.ones(2, 3, requires_grad=True)
        d = x.detach()
        return (x.is_leaf, (x * 2).is_leaf, (x * 2).requires_grad, lib.randn(2).is_leaf, d.is_leaf,
                d.requires_grad, d is x, x.data.requires_grad, x.data is x, x.clone().is_leaf,
                x.clone().requires_grad, x.float() is x, x.to(lib.float32) is x, x.contiguous() is x)
    same(f)

    def detach_shares(lib):
        x = lib.zeros(3)
        x.detach()[0] = 4
        x.data[1] = 5
        return x
    same(detach_shares)


def test_data_setter():
    def f(lib):
        x = lib.ones(2, requires_grad=True)
        x.data = lib.tensor([3.0, 4.0])
        (x * x).sum().backward()
        return x.detach(), x.grad, x.requires_grad
    same(f)


def test_misc_methods():
    same(lambda lib: (lib.is_tensor(lib.ones(1)), lib.is_tensor(1), lib.numel(lib.ones(2, 3)),
                      lib.is_floating_point(lib.ones(1))))
    same(lambda lib: lib.ones(2, 3).t().is_contiguous())
    same(lambda lib: (lib.ones(2, 3).stride(), lib.ones(2, 3).t().stride()))
    same(lambda lib: (lib.ones(2).double().dtype, lib.ones(2).long().dtype, lib.ones(2).int().dtype,
                      lib.ones(2).bool().dtype, lib.ones(2).half().dtype, lib.ones(2).to("cpu").dtype,
                      lib.ones(2).type(lib.float64).dtype, lib.ones(2).to(lib.ones(1, dtype=lib.int32)).dtype))
    same(lambda lib: (lib.ones(2).new_zeros(3), lib.arange(2).new_ones((2, 2))))


def test_division_by_zero_is_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = ember.tensor([1.0, 0.0, -1.0]) / ember.tensor([0.0, 0.0, 0.0])
    assert r.tolist()[0] == float("inf")


@pytest.mark.parametrize("shape", [(0,), (0, 3), (3, 0), (2, 0, 3), (0, 0)])
@pytest.mark.parametrize("make", ["empty", "zeros", "ones"])
def test_empty_tensor_strides_as_torch(shape, make):
    """NumPy 2 gives a new empty array zero strides; ember reports PyTorch's (row-major, size 0 counted as 1)."""
    import torch
    assert getattr(ember, make)(*shape).stride() == getattr(torch, make)(*shape).stride()
    assert ember.empty(1, 3).expand(0, 3).stride() == torch.empty(1, 3).expand(0, 3).stride()


def test_uint8_index_is_deprecated_as_in_torch():
    """Indexing with a uint8 mask works as a bool mask, with PyTorch's deprecation warning (a UserWarning
    pointing at the caller); writing one value through one such mask is masked_fill_'s RuntimeError."""
    def get(L):
        return L.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])[L.tensor([1, 0, 1], dtype=L.uint8)]

    def put(L):
        return L.zeros(3, 2).index_put((L.tensor([0, 1, 1], dtype=L.uint8),), L.ones(2, 2))

    for fn in (get, put):
        wt, we = warns_same(fn)
        assert [str(w.message).split(" (Triggered internally")[0] for w in wt] == [str(w.message) for w in we]
        assert [w.filename for w in we] == [__file__]
    for lib in (torch, ember):
        x = lib.zeros(3, 2)
        with pytest.raises(RuntimeError, match="^masked_fill_ only supports boolean masks, but got mask with dtype "
                                               "unsigned char$"):
            x[lib.tensor([1, 0, 1], dtype=lib.uint8)] = 1.0


def test_float64_to_float16_rounds_through_float32_as_torch():
    """PyTorch converts double to Half through float (two roundings), in casts and in creation."""
    x = np.random.default_rng(0).standard_normal(100000)
    x[:2] = [1 + 2 ** -11 + 2 ** -40, -(2 ** -25) * (1 + 2 ** -30)]   # ties only the double rounding makes
    want = torch.tensor(x).to(torch.float16).numpy().view(np.uint16)
    assert np.array_equal(want, x.astype(np.float32).astype(np.float16).view(np.uint16))
    for got in (ember.tensor(x).to(ember.float16), ember.tensor(x).half(), ember.tensor(x, dtype=ember.float16),
                ember.tensor(x.tolist(), dtype=ember.float16)):
        assert np.array_equal(got.numpy().view(np.uint16), want)
