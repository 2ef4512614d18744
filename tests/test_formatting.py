"""ember._formatting.format_tensor must reproduce repr(torch.Tensor) exactly."""

import math
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

from ember._formatting import format_tensor  # noqa: E402


def _name(dtype):
    return str(dtype).removeprefix("torch.")


def ember_repr(t, suffixes=()):
    """format_tensor applied to the values/dtype of a torch tensor."""
    return format_tensor(
        t.detach().numpy(),
        _name(t.dtype),
        default_float=_name(torch.get_default_dtype()),
        suffixes=tuple(suffixes),
    )


def check(t, suffixes=()):
    expected = repr(t)
    assert str(t) == expected
    got = ember_repr(t, suffixes)
    assert got == expected, f"\n--- torch ---\n{expected}\n--- ember ---\n{got}"


nan, inf = math.nan, math.inf

CASES = {
    # 0-d
    "scalar_float": lambda: torch.tensor(3.5),
    "scalar_int_float": lambda: torch.tensor(25.0),
    "scalar_neg_zero": lambda: torch.tensor(-0.0),
    "scalar_nan": lambda: torch.tensor(nan),
    "scalar_inf": lambda: torch.tensor(-inf),
    "scalar_tiny": lambda: torch.tensor(1e-8),
    "scalar_huge": lambda: torch.tensor(1e10),
    "scalar_int": lambda: torch.tensor(-7),
    "scalar_bool": lambda: torch.tensor(True),
    "scalar_f64": lambda: torch.tensor(0.1, dtype=torch.float64),
    "scalar_f16": lambda: torch.tensor(2.5, dtype=torch.float16),
    "scalar_i32": lambda: torch.tensor(5, dtype=torch.int32),
    # 1-d
    "vec_float": lambda: torch.tensor([1.5, -2.25, 3.0]),
    "vec_intlike": lambda: torch.tensor([1.0, 2.0, -3.0]),
    "vec_zeros": lambda: torch.zeros(4),
    "vec_neg_zero": lambda: torch.tensor([-0.0, 0.0, 1.0]),
    "vec_nan_inf": lambda: torch.tensor([nan, inf, -inf, 1.0]),
    "vec_nan_inf_frac": lambda: torch.tensor([nan, inf, -inf, 1.5, -0.0]),
    "vec_only_nonfinite": lambda: torch.tensor([nan, inf, -inf]),
    "vec_sci_small": lambda: torch.tensor([1e-8, 2e-8]),
    "vec_sci_large": lambda: torch.tensor([1e10, 2.5e10]),
    "vec_sci_mixed": lambda: torch.tensor([1e-8, 1.0, 1e8]),
    "vec_ratio": lambda: torch.tensor([0.001, 2.0]),
    "vec_ratio_int": lambda: torch.tensor([1.0, 10000.0]),
    "vec_sci_nan": lambda: torch.tensor([1e-5, nan, 0.0, -inf]),
    "vec_long_wrap": lambda: torch.arange(40, dtype=torch.float32) / 3,
    "vec_int_wrap": lambda: torch.arange(-50, 50),
    "vec_rand": lambda: torch.randn(30, generator=torch.Generator().manual_seed(0)),
    "vec_bool": lambda: torch.tensor([True, False, True]),
    "vec_bool_true": lambda: torch.tensor([True, True]),
    "vec_int_neg": lambda: torch.tensor([-100, 2, 33]),
    "vec_i32": lambda: torch.tensor([1, -2], dtype=torch.int32),
    "vec_i16": lambda: torch.tensor([1, -2], dtype=torch.int16),
    "vec_i8": lambda: torch.tensor([1, -128], dtype=torch.int8),
    "vec_u8": lambda: torch.tensor([0, 255], dtype=torch.uint8),
    "vec_f64": lambda: torch.tensor([1.0, 2.0], dtype=torch.float64),
    "vec_f64_prec": lambda: torch.tensor([0.1, 1 / 3], dtype=torch.float64),
    "vec_f16": lambda: torch.tensor([0.1, 1000.0, -3.0], dtype=torch.float16),
    "vec_f16_sci": lambda: torch.tensor([1e-4, 60000.0], dtype=torch.float16),
    "vec_single": lambda: torch.tensor([7.0]),
    "vec_rounding": lambda: torch.tensor([0.99999, 1.00005, 12345.678]),
    "vec_big_ints_float": lambda: torch.tensor([123456789.0, 1.0]),
    # 2-d
    "mat": lambda: torch.tensor([[1.0, 2.0], [3.0, 4.0]]),
    "mat_frac": lambda: torch.tensor([[1.5, -2.0], [0.25, 100.0]]),
    "mat_int": lambda: torch.tensor([[1, -20], [300, 4]]),
    "mat_bool": lambda: torch.tensor([[True], [False]]),
    "mat_wide": lambda: torch.arange(60.0).reshape(2, 30) / 7,
    "mat_row": lambda: torch.ones(1, 5),
    "mat_col": lambda: torch.ones(5, 1),
    "mat_sci": lambda: torch.tensor([[1e-10, 1.0], [5.0, 1e12]]),
    "mat_transposed": lambda: torch.arange(12.0).reshape(3, 4).t(),
    # 3-d / 4-d
    "cube": lambda: torch.arange(24.0).reshape(2, 3, 4),
    "cube_int": lambda: torch.arange(24).reshape(2, 3, 4) - 10,
    "cube_frac": lambda: torch.arange(24.0).reshape(4, 3, 2) / 3,
    "hyper": lambda: torch.arange(48.0).reshape(2, 2, 3, 4) - 20,
    "hyper_bool": lambda: (torch.arange(16).reshape(2, 2, 2, 2) % 3) == 0,
    # empty
    "empty": lambda: torch.tensor([]),
    "empty_0x3": lambda: torch.zeros(0, 3),
    "empty_2x0x3": lambda: torch.zeros(2, 0, 3),
    "empty_int": lambda: torch.zeros(0, dtype=torch.int64),
    "empty_int_2d": lambda: torch.zeros(3, 0, dtype=torch.int64),
    "empty_bool": lambda: torch.zeros(0, dtype=torch.bool),
    "empty_f64": lambda: torch.zeros(0, 2, dtype=torch.float64),
    "empty_f16": lambda: torch.zeros(0, dtype=torch.float16),
    "empty_i32": lambda: torch.zeros(0, dtype=torch.int32),
    # summarised
    "big_vec": lambda: torch.arange(2000.0),
    "big_vec_frac": lambda: torch.arange(2000.0) / 7,
    "big_vec_int": lambda: torch.arange(1001),
    "big_mat": lambda: torch.arange(10000.0).reshape(100, 100),
    "big_mat_narrow": lambda: torch.arange(2000.0).reshape(1000, 2),
    "big_mat_short": lambda: torch.arange(2000.0).reshape(2, 1000),
    "big_cube": lambda: torch.arange(8000.0).reshape(20, 20, 20) * 1e-6,
    "big_4d": lambda: torch.arange(5 * 6 * 7 * 8).reshape(5, 6, 7, 8),
    "big_middle_outlier": lambda: torch.cat([torch.ones(1000), torch.tensor([1e20]), torch.ones(1000)]),
    "big_bool": lambda: torch.arange(3000) % 2 == 0,
    "big_f64": lambda: torch.linspace(0, 1, 1500, dtype=torch.float64),
    "big_rand": lambda: torch.randn(40, 50, generator=torch.Generator().manual_seed(1)),
    "exactly_threshold": lambda: torch.arange(1000.0),
    # non-contiguous
    "strided": lambda: torch.arange(20.0)[::3],
    "permuted": lambda: torch.arange(24.0).reshape(2, 3, 4).permute(2, 0, 1),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_repr_matches_torch(name):
    check(CASES[name]())


def _grad_fn(t):
    return f"grad_fn=<{type(t.grad_fn).__name__}>"


def test_requires_grad_suffix():
    for t in [
        torch.tensor([1.0, 2.0], requires_grad=True),
        torch.tensor(3.0, requires_grad=True),
        torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True),
        torch.zeros(0, 3, requires_grad=True),
        torch.zeros(0, dtype=torch.float64, requires_grad=True),
        torch.arange(12.0).reshape(3, 4).requires_grad_(),
        torch.arange(25.0).div(3).requires_grad_(),
        torch.arange(2000.0).requires_grad_(),
    ]:
        check(t, ["requires_grad=True"])


def test_grad_fn_suffix():
    x = torch.tensor(5.0, requires_grad=True)
    check(x**2, [_grad_fn(x**2)])
    assert repr(x**2) == "tensor(25., grad_fn=<PowBackward0>)"

    a = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    check(a + 1, ["grad_fn=<AddBackward0>"])

    m = torch.arange(12.0).reshape(3, 4).requires_grad_()
    y = m * 1.5
    check(y, [_grad_fn(y)])
    y = m.sum(0)
    check(y, [_grad_fn(y)])
    # suffix wraps onto its own line when the last line is long
    v = (torch.arange(16.0) / 3).requires_grad_()
    for t in [v * 2, v[:13] + 1, v[:12] - 1, v[:11].exp(), torch.arange(17.0).requires_grad_() * 1]:
        check(t, [_grad_fn(t)])


def test_suffix_wrapping_many_lengths():
    for n in range(1, 40):
        base = (torch.arange(float(n)) * 1.125).requires_grad_()
        check(base, ["requires_grad=True"])
        t = base * 1
        check(t, [_grad_fn(t)])
        t64 = (base.double() * 1)
        check(t64, [_grad_fn(t64)])


def test_default_dtype_float64():
    old = torch.get_default_dtype()
    try:
        torch.set_default_dtype(torch.float64)
        for t in [
            torch.tensor([1.0, 2.5]),
            torch.tensor(1.0),
            torch.tensor([1.0, 2.0], dtype=torch.float32),
            torch.tensor(1.5, dtype=torch.float32),
            torch.zeros(0),
            torch.zeros(0, 2),
            torch.zeros(0, dtype=torch.float32),
            torch.tensor([1, 2]),
            torch.tensor([True]),
            torch.tensor([], dtype=torch.int64),
        ]:
            check(t)
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        check(x, ["requires_grad=True"])
        y = x.float() * 2
        check(y, [_grad_fn(y)])
    finally:
        torch.set_default_dtype(old)


def test_accepts_mismatched_numpy_dtype_and_noncontiguous():
    # values given in a wider numpy dtype are rounded to the named dtype
    arr = np.array([0.1, 1 / 3])
    assert format_tensor(arr, "float32") == repr(torch.tensor([0.1, 1 / 3]))
    arr = np.arange(30.0).reshape(5, 6)[::2, ::-3]
    assert format_tensor(arr, "float64") == repr(torch.from_numpy(arr.copy()))
    assert format_tensor(arr, "float64", "float64") == repr(torch.from_numpy(arr.copy()))[:-22] + ")"


def test_one_element_is_fast():
    arr = np.array([1.5], dtype=np.float32)
    scalar = np.array(2.0, dtype=np.float32)
    format_tensor(arr, "float32")
    n = 2000
    start = time.perf_counter()
    for _ in range(n):
        format_tensor(arr, "float32", suffixes=("requires_grad=True",))
        format_tensor(scalar, "float32")
    per_call = (time.perf_counter() - start) / (2 * n)
    assert per_call < 100e-6, per_call


# ---------------------------------------------------------------- hypothesis

_SCALES = [1.0, 1e-3, 1e-6, 1e4, 1e9]

_values = st.one_of(
    st.integers(-1000, 1000).map(float),
    st.builds(lambda x, s: x * s, st.floats(-10, 10), st.sampled_from(_SCALES)),
    st.sampled_from([0.0, -0.0, nan, inf, -inf, 0.5, 1e-8]),
)


@st.composite
def _float_arrays(draw):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5))
    dtype = draw(st.sampled_from([np.float32, np.float64, np.float16]))
    # mostly a single scale per tensor, sometimes mixed
    if draw(st.booleans()):
        scale = draw(st.sampled_from(_SCALES))
        elements = st.floats(-10, 10).map(lambda x: x * scale)
    else:
        elements = _values
    arr = draw(hnp.arrays(np.float64, shape, elements=elements))
    with np.errstate(over="ignore"):
        return arr.astype(dtype)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_float_arrays(), st.booleans())
def test_random_float_tensors(arr, requires_grad):
    t = torch.from_numpy(arr.copy())
    if requires_grad:
        t.requires_grad_()
        check(t, ["requires_grad=True"])
    else:
        check(t)


@settings(max_examples=150, deadline=None)
@given(
    hnp.arrays(
        st.sampled_from([np.int64, np.int32, np.bool_, np.uint8, np.int8]),
        hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5),
    )
)
def test_random_int_bool_tensors(arr):
    check(torch.from_numpy(arr.copy()))
