"""ember.testing against torch.testing 2.13: assert_close's outcome (exception type and exact message, or none) on
the same inputs, assert_allclose's warning, make_tensor's values for the same seed and its argument errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import ember


def _outcome(lib, case):
    """None, or the exception's type name and message with the library's class names made neutral."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            case(lib)
        return None
    except Exception as e:   # noqa: BLE001  (comparing exceptions is the point)
        msg = str(e)
        for old, new in (("ember._tensor.Tensor", "torch.Tensor"), ("ember.nn.parameter", "torch.nn.parameter"),
                         ("ember.", "torch.")):
            msg = msg.replace(old, new)
        return type(e).__name__, msg


def _t(m, *a, **k):
    return m.tensor(*a, **k)


ASSERT_CLOSE = [
    lambda m: m.testing.assert_close(_t(m, [1., 2., 3.]), _t(m, [1., 4., 5.])),
    lambda m: m.testing.assert_close(_t(m, [1., 2., 3.]), _t(m, [1., 2., 3.0000001])),
    lambda m: m.testing.assert_close(_t(m, float("nan")), _t(m, float("nan"))),
    lambda m: m.testing.assert_close(_t(m, [1., float("nan")]), _t(m, [1., float("nan")]), equal_nan=True),
    lambda m: m.testing.assert_close(_t(m, [[1, 2], [3, 4]]), _t(m, [[1, 2], [3, 5]])),
    lambda m: m.testing.assert_close(_t(m, [1., 2.]), _t(m, [1., 2.], dtype=m.float64)),
    lambda m: m.testing.assert_close(_t(m, [1., 2.]), _t(m, [1., 2.], dtype=m.float64), check_dtype=False),
    lambda m: m.testing.assert_close(_t(m, [1., 2.]), _t(m, [1., 2., 3.])),
    lambda m: m.testing.assert_close(1.0, 1),
    lambda m: m.testing.assert_close(1.0, 1, check_dtype=False),
    lambda m: m.testing.assert_close(1e-9, 1e-10, rtol=0, atol=0),
    lambda m: m.testing.assert_close(1 + 1j, 1 + 2j),
    lambda m: m.testing.assert_close(np.array([1., 2.]), np.array([1., 2.5])),
    lambda m: m.testing.assert_close(np.array([1., 2.]), np.array([1., 2.], dtype=np.float32)),
    lambda m: m.testing.assert_close(np.float32(1.0), np.float32(1.1)),
    lambda m: m.testing.assert_close(np.bool_(True), np.bool_(False)),
    lambda m: m.testing.assert_close(np.array([1., 2.]), m.tensor([1., 2.])),
    lambda m: m.testing.assert_close([m.tensor(1.), 2.0], (m.tensor(1.), 2.5)),
    lambda m: m.testing.assert_close([1, 2], [1]),
    lambda m: m.testing.assert_close({"a": m.tensor(1.)}, {"b": m.tensor(1.)}),
    lambda m: m.testing.assert_close({"a": m.tensor([1., 2.]), "b": 1}, {"a": m.tensor([1., 3.]), "b": 1},
                                     msg=lambda s: f"Header\n\n{s}\n\nFooter"),
    lambda m: m.testing.assert_close(m.tensor([1., 2.]), m.tensor([1., 3.]), msg="nope"),
    lambda m: m.testing.assert_close(m.tensor([1., 2.]), m.tensor([1., 3.]), rtol=0.1),
    lambda m: m.testing.assert_close(m.tensor([1., 2.]), m.tensor([1., 3.]), atol=0.1),
    lambda m: m.testing.assert_close(m.tensor([1., 2.]), m.tensor([1., 2.5]), rtol=0.3, atol=0),
    lambda m: m.testing.assert_close(m.ones(2, 3).t(), m.ones(3, 2), check_stride=True),
    lambda m: m.testing.assert_close(m.ones(2, 3).t(), m.ones(3, 2)),
    lambda m: m.testing.assert_close(True, False),
    lambda m: m.testing.assert_close(None, 1),
    lambda m: m.testing.assert_close(None, None),
    lambda m: m.testing.assert_close("a", "a"),
    lambda m: m.testing.assert_close(m.tensor([1 + 2j, 3j]), m.tensor([1 + 2j, 3.1j])),
    lambda m: m.testing.assert_close(m.tensor([1., 2.], dtype=m.bfloat16), m.tensor([1., 2.02], dtype=m.bfloat16)),
    lambda m: m.testing.assert_close(m.tensor([1., 2.], dtype=m.float16), m.tensor([1., 2.01], dtype=m.float16)),
    lambda m: m.testing.assert_close(m.tensor([True, False]), m.tensor([True, True])),
    lambda m: m.testing.assert_close(m.tensor([1., float("inf")]), m.tensor([1., 2.])),
    lambda m: m.testing.assert_close(m.tensor([1., float("inf")]), m.tensor([1., float("inf")])),
    lambda m: m.testing.assert_close(m.nn.Parameter(m.ones(2)), m.ones(2), allow_subclasses=False),
    lambda m: m.testing.assert_close(m.nn.Parameter(m.ones(2)), m.ones(2)),
    lambda m: m.testing.assert_close(m.ones(2, device="meta"), m.ones(2)),
    lambda m: m.testing.assert_close(m.ones(2, device="meta"), m.zeros(2, device="meta")),
    lambda m: m.testing.assert_close(m.tensor([1, 2], dtype=m.uint8), m.tensor([1, 3], dtype=m.int8),
                                     check_dtype=False),
    lambda m: m.testing.assert_close(m.tensor(1.), m.tensor(1.5)),
    lambda m: m.testing.assert_close(m.zeros(3), m.tensor([0., 1e-6, 0.])),
    lambda m: m.testing.assert_close(m.tensor([0., 1.]), m.tensor([0., 0.])),
    lambda m: m.testing.assert_close(m.arange(24.).reshape(2, 3, 4), m.arange(24.).reshape(2, 3, 4) * 1.01),
    lambda m: m.testing.assert_close(m.arange(6).reshape(2, 3), m.arange(6).reshape(2, 3).flip(1)),
    lambda m: m.testing.assert_close(m.tensor([1., 2.], dtype=m.float64), m.tensor([1., 2.], dtype=m.float16),
                                     check_dtype=False),
    lambda m: m.testing.assert_close(m.tensor([1., 2.]), m.tensor([1., 2.000001], dtype=m.float64),
                                     check_dtype=False),
    lambda m: m.testing.assert_close(m.tensor([1., 2.]), m.tensor([1., 2.])[None], check_dtype=False),
    lambda m: m.testing.assert_close(m.tensor([1., 2.]), [1., 2.]),
    lambda m: m.testing.assert_close(m.tensor([1., 2.]), 1.0),
]


@pytest.mark.parametrize("i", range(len(ASSERT_CLOSE)))
def test_assert_close_as_torch(i):
    case = ASSERT_CLOSE[i]
    assert _outcome(ember, case) == _outcome(torch, case)


def test_assert_close_message_text():
    with pytest.raises(AssertionError) as info:
        ember.testing.assert_close(ember.tensor([1., 2., 3.]), ember.tensor([1., 4., 5.]))
    assert str(info.value) == ("Tensor-likes are not close!\n\nMismatched elements: 2 / 3 (66.7%)\n"
                               "Greatest absolute difference: 2.0 at index (1,) (up to 1e-05 allowed)\n"
                               "Greatest relative difference: 0.5 at index (1,) (up to 1.3e-06 allowed)")


def test_assert_allclose_warns_and_compares():
    for lib in (torch, ember):
        with pytest.warns(FutureWarning, match=r"assert_allclose\(\)` is deprecated since 1.12"):
            lib.testing.assert_allclose(lib.tensor([1., 2.]), [1., 2.00001])
    for case in (lambda m: m.testing.assert_allclose(m.tensor([1., 2.]), [1., 2.1]),
                 lambda m: m.testing.assert_allclose([1, 2], [1, 3]),
                 lambda m: m.testing.assert_allclose(m.tensor([1., float("nan")]), [1., float("nan")]),
                 lambda m: m.testing.assert_allclose(m.tensor([1., 2.]), [1., 2.1], msg="custom"),
                 lambda m: m.testing.assert_allclose(m.tensor([1., 2.], dtype=m.float64), m.tensor([1., 2.0001]))):
        assert _outcome(ember, case) == _outcome(torch, case)


MAKE_TENSOR = [
    dict(dtype="float32"), dict(dtype="float64"), dict(dtype="float16"), dict(dtype="bfloat16"),
    dict(dtype="int64"), dict(dtype="int32"), dict(dtype="int16"), dict(dtype="uint8"), dict(dtype="int8"),
    dict(dtype="bool"), dict(dtype="complex64"), dict(dtype="complex128"), dict(dtype="uint16"),
    dict(dtype="float8_e4m3fn"),
    dict(dtype="float32", low=-1, high=1), dict(dtype="float32", low=0.5), dict(dtype="int64", low=2, high=5),
    dict(dtype="float32", requires_grad=True), dict(dtype="int64", requires_grad=True),
    dict(dtype="float32", noncontiguous=True), dict(dtype="int64", noncontiguous=True),
    dict(dtype="uint8", exclude_zero=True, low=0, high=2), dict(dtype="float32", exclude_zero=True, low=0, high=1e-40),
    dict(dtype="int64", exclude_zero=True), dict(dtype="complex64", exclude_zero=True, low=0, high=1e-40),
    dict(dtype="float32", low=3, high=3), dict(dtype="float32", low=3, high=2), dict(dtype="float32", low=float("nan")),
    dict(dtype="uint8", low=300, high=400), dict(dtype="float32", noncontiguous=True, memory_format="channels_last"),
    dict(dtype="float32", low=-1e39, high=1e39), dict(dtype="int16", low=-1e9, high=1e9),
]


def _make(lib, kw, shape):
    kw = {k: getattr(lib, v) if k in ("dtype", "memory_format") else v for k, v in kw.items()}
    lib.manual_seed(0)
    x = lib.testing.make_tensor(*shape, device="cpu", **kw)
    wide = lib.complex128 if x.dtype.is_complex else lib.float64
    return (str(x.dtype), tuple(x.shape), x.stride(), x.is_contiguous(), x.requires_grad,
            x.detach().to(wide).tolist())


@pytest.mark.parametrize("kw", MAKE_TENSOR, ids=[str(i) for i in range(len(MAKE_TENSOR))])
def test_make_tensor_as_torch(kw):
    """The same values for the same seed (torch draws with randint / uniform_), or the same error and warning."""
    got = []
    for lib in (torch, ember):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                out = _make(lib, kw, (3, 4))
            except Exception as e:   # noqa: BLE001
                out = (type(e).__name__, str(e).replace("ember.", "torch."))
        got.append((out, [str(w.message) for w in caught]))
    assert got[0] == got[1]


@pytest.mark.parametrize("shape", [((2, 3),), (5,), (), (2, 3, 4, 5)])
def test_make_tensor_shapes(shape):
    assert _make(ember, dict(dtype="float32"), shape) == _make(torch, dict(dtype="float32"), shape)
    kw = dict(dtype="float32", memory_format="channels_last")
    if len(shape) == 4:
        assert _make(ember, kw, shape) == _make(torch, kw, shape)


def test_make_tensor_unsupported_dtype():
    for lib in (torch, ember):
        with pytest.raises(TypeError, match="is not supported by torch.testing.make_tensor"):
            lib.testing.make_tensor(2, dtype=lib.float8_e8m0fnu, device="cpu")
