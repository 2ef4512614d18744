"""``torch.testing.assert_close`` as PyTorch 2.13 has it (torch/testing/_comparison.py): the same pairing of the
inputs (None, booleans, numbers, tensor-likes; sequences and mappings elementwise), the same default tolerances per
dtype, exception types and messages. Quantized, sparse and DTensor inputs do not exist in ember."""
from __future__ import annotations

import abc
import cmath
import collections.abc
import contextlib
import warnings
from collections.abc import Callable, Collection, Sequence
from typing import Any, NoReturn

import numpy as np   # host-side: NumPy scalars and arrays are inputs assert_close accepts, as PyTorch's

from ..ops import public as torch

__all__ = ["assert_allclose", "assert_close"]


class ErrorMeta(Exception):
    """An error found while comparing: its exception type, message and the item's position (``id``)."""

    def __init__(self, type: type[Exception], msg: str, *, id: tuple[Any, ...] = ()) -> None:
        super().__init__("internal error of ember.testing: `raise ErrorMeta.to_error()` for user facing errors")
        self.type = type
        self.msg = msg
        self.id = id

    def to_error(self, msg: str | Callable[[str], str] | None = None) -> Exception:
        if not isinstance(msg, str):
            generated_msg = self.msg
            if self.id:
                generated_msg += f"\n\nThe failure occurred for item {''.join(str([item]) for item in self.id)}"
            msg = msg(generated_msg) if callable(msg) else generated_msg
        return self.type(msg)


# {dtype: (rtol, atol)}, PyTorch's defaults
_DTYPE_PRECISIONS = {
    torch.float16: (0.001, 1e-5),
    torch.bfloat16: (0.016, 1e-5),
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
    torch.complex32: (0.001, 1e-5),
    torch.complex64: (1.3e-6, 1e-5),
    torch.complex128: (1e-7, 1e-7),
}


def default_tolerances(*inputs, dtype_precisions: dict | None = None) -> tuple[float, float]:
    """The loosest default (rtol, atol) of the inputs' dtypes (0.0 for dtypes without a default)."""
    dtypes = []
    for input in inputs:
        if isinstance(input, torch.Tensor):
            dtypes.append(input.dtype)
        elif isinstance(input, torch.dtype):
            dtypes.append(input)
        else:
            raise TypeError(f"Expected a torch.Tensor or a torch.dtype, but got {type(input)} instead.")
    dtype_precisions = dtype_precisions or _DTYPE_PRECISIONS
    rtols, atols = zip(*[dtype_precisions.get(dtype, (0.0, 0.0)) for dtype in dtypes], strict=True)
    return max(rtols), max(atols)


def get_tolerances(*inputs, rtol: float | None, atol: float | None, id: tuple = ()) -> tuple[float, float]:
    """Both tolerances as given, or both defaults; one without the other is a ValueError (as PyTorch)."""
    if (rtol is None) ^ (atol is None):
        # both or neither: atol=0.0 alone would still let rtol > 0 pass values the caller meant to refuse
        raise ErrorMeta(ValueError, f"Both 'rtol' and 'atol' must be either specified or omitted, "
                                    f"but got no {'rtol' if rtol is None else 'atol'}.", id=id)
    if rtol is not None and atol is not None:
        return rtol, atol
    return default_tolerances(*inputs)


def _identify(default_identifier: str, identifier) -> str:
    if identifier is None:
        return default_identifier
    return identifier(default_identifier) if callable(identifier) else identifier


def _make_bitwise_mismatch_msg(*, default_identifier: str, identifier=None, extra: str | None = None,
                               first_mismatch_idx: tuple | None = None) -> str:
    msg = f"{_identify(default_identifier, identifier)} are not 'equal'!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    if first_mismatch_idx is not None:
        msg += f"The first mismatched element is at index {first_mismatch_idx}.\n"
    return msg.strip()


def _make_mismatch_msg(*, default_identifier: str, identifier=None, extra: str | None = None, abs_diff: float,
                       abs_diff_idx=None, atol: float, rel_diff: float, rel_diff_idx=None, rtol: float) -> str:
    equality = rtol == 0 and atol == 0

    def make_diff_msg(*, type: str, diff: float, idx, tol: float) -> str:
        msg = f"{type.title()} difference: {diff}" if idx is None else \
            f"Greatest {type} difference: {diff} at index {idx}"
        if not equality:
            msg += f" (up to {tol} allowed)"
        return msg + "\n"

    msg = f"{_identify(default_identifier, identifier)} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    msg += make_diff_msg(type="absolute", diff=abs_diff, idx=abs_diff_idx, tol=atol)
    msg += make_diff_msg(type="relative", diff=rel_diff, idx=rel_diff_idx, tol=rtol)
    return msg.strip()


def make_scalar_mismatch_msg(actual, expected, *, rtol: float, atol: float, identifier=None) -> str:
    """The message for two scalars that are not close."""
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _make_mismatch_msg(default_identifier="Scalars", identifier=identifier,
                              extra=f"Expected {expected} but got {actual}.", abs_diff=abs_diff, atol=atol,
                              rel_diff=rel_diff, rtol=rtol)


def make_tensor_mismatch_msg(actual, expected, matches, *, rtol: float, atol: float, identifier=None) -> str:
    """The message for two tensors that are not close: the count of mismatches and the greatest differences."""

    def unravel_flat_index(flat_index: int) -> tuple[int, ...]:
        if not matches.shape:
            return ()
        inverse_index = []
        for size in matches.shape[::-1]:
            flat_index, mod = divmod(flat_index, size)
            inverse_index.append(mod)
        return tuple(inverse_index[::-1])

    number_of_elements = matches.numel()
    total_mismatches = number_of_elements - int(torch.sum(matches))
    extra = (f"Mismatched elements: {total_mismatches} / {number_of_elements} "
             f"({total_mismatches / number_of_elements:.1%})")
    if actual.dtype.is_floating_point and actual.dtype.itemsize == 1:
        # float8: compared bitwise, no differences reported
        first_mismatch_idx = tuple(torch.nonzero(~matches, as_tuple=False)[0].tolist())
        return _make_bitwise_mismatch_msg(default_identifier="Tensor-likes", identifier=identifier, extra=extra,
                                          first_mismatch_idx=first_mismatch_idx)

    actual_flat, expected_flat, matches_flat = actual.flatten(), expected.flatten(), matches.flatten()
    if not actual.dtype.is_floating_point and not actual.dtype.is_complex:
        actual_flat = actual_flat.to(torch.int64)
        expected_flat = expected_flat.to(torch.int64)

    abs_diff = torch.abs(actual_flat - expected_flat)
    abs_diff[matches_flat] = 0   # only mismatches count for the greatest difference
    max_abs_diff, max_abs_diff_flat_idx = torch.max(abs_diff, 0)
    rel_diff = abs_diff / torch.abs(expected_flat)
    rel_diff[matches_flat] = 0
    max_rel_diff, max_rel_diff_flat_idx = torch.max(rel_diff, 0)
    return _make_mismatch_msg(default_identifier="Tensor-likes", identifier=identifier, extra=extra,
                              abs_diff=max_abs_diff.item(),
                              abs_diff_idx=unravel_flat_index(int(max_abs_diff_flat_idx)), atol=atol,
                              rel_diff=max_rel_diff.item(),
                              rel_diff_idx=unravel_flat_index(int(max_rel_diff_flat_idx)), rtol=rtol)


class UnsupportedInputs(Exception):
    """Raised while constructing a :class:`Pair` that cannot handle the inputs: the next pair type is tried."""


class Pair(abc.ABC):
    """Two inputs to compare; subclasses check in ``__init__`` that they can handle them and compare in ``compare``."""

    def __init__(self, actual: Any, expected: Any, *, id: tuple[Any, ...] = (), **unknown_parameters: Any) -> None:
        self.actual = actual
        self.expected = expected
        self.id = id
        self._unknown_parameters = unknown_parameters

    @staticmethod
    def _inputs_not_supported() -> NoReturn:
        raise UnsupportedInputs

    @staticmethod
    def _check_inputs_isinstance(*inputs: Any, cls) -> None:
        if not all(isinstance(input, cls) for input in inputs):
            Pair._inputs_not_supported()

    def _fail(self, type: type[Exception], msg: str, *, id: tuple[Any, ...] = ()) -> NoReturn:
        raise ErrorMeta(type, msg, id=self.id if not id and hasattr(self, "id") else id)

    @abc.abstractmethod
    def compare(self) -> None:
        """Compares the inputs and raises an :class:`ErrorMeta` when they mismatch."""

    def extra_repr(self) -> Sequence:
        return []

    def __repr__(self) -> str:
        body = [f"    {name}={value!s}," for name, value in
                [("id", self.id), ("actual", self.actual), ("expected", self.expected),
                 *[(extra, getattr(self, extra)) if isinstance(extra, str) else extra
                   for extra in self.extra_repr()]]]
        return "\n".join((f"{type(self).__name__}(", *body, ")"))


class ObjectPair(Pair):
    """Any inputs, compared with ``==`` (the fallback)."""

    def compare(self) -> None:
        try:
            equal = self.actual == self.expected
        except Exception as error:
            raise ErrorMeta(ValueError, f"{self.actual} == {self.expected} failed with:\n{error}.",
                            id=self.id) from error
        if not equal:
            self._fail(AssertionError, f"{self.actual} != {self.expected}")


class NonePair(Pair):
    """``None`` on either side."""

    def __init__(self, actual: Any, expected: Any, **other_parameters: Any) -> None:
        if not (actual is None or expected is None):
            self._inputs_not_supported()
        super().__init__(actual, expected, **other_parameters)

    def compare(self) -> None:
        if not (self.actual is None and self.expected is None):
            self._fail(AssertionError, f"None mismatch: {self.actual} is not {self.expected}")


class BooleanPair(Pair):
    """:class:`bool` (and ``numpy.bool_``) inputs."""

    def __init__(self, actual: Any, expected: Any, *, id: tuple[Any, ...], **other_parameters: Any) -> None:
        if not all(isinstance(b, (bool, np.bool_)) for b in (actual, expected)):
            self._inputs_not_supported()
        actual, expected = (bool(b) if isinstance(b, np.bool_) else b for b in (actual, expected))
        super().__init__(actual, expected, **other_parameters)

    def compare(self) -> None:
        if self.actual is not self.expected:
            self._fail(AssertionError, f"Booleans mismatch: {self.actual} is not {self.expected}")


class NumberPair(Pair):
    """Python numbers (and ``numpy.number``): int as int64, float as float64, complex as complex128."""

    _TYPE_TO_DTYPE = {int: torch.int64, float: torch.float64, complex: torch.complex128}
    _NUMBER_TYPES = tuple(_TYPE_TO_DTYPE)

    def __init__(self, actual: Any, expected: Any, *, id: tuple[Any, ...] = (), rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = False, check_dtype: bool = False,
                 **other_parameters: Any) -> None:
        if not all(isinstance(n, (int, float, complex, np.number)) for n in (actual, expected)):
            self._inputs_not_supported()
        actual, expected = (self._to_number(n, id=id) for n in (actual, expected))
        super().__init__(actual, expected, id=id, **other_parameters)
        self.rtol, self.atol = get_tolerances(*[self._TYPE_TO_DTYPE[type(input)] for input in (actual, expected)],
                                              rtol=rtol, atol=atol, id=id)
        self.equal_nan = equal_nan
        self.check_dtype = check_dtype

    def _to_number(self, number_like: Any, *, id: tuple[Any, ...]):
        if isinstance(number_like, np.number):
            return number_like.item()
        if isinstance(number_like, self._NUMBER_TYPES):
            return number_like
        raise ErrorMeta(TypeError, f"Unknown number type {type(number_like)}.", id=id)

    def compare(self) -> None:
        if self.check_dtype and type(self.actual) is not type(self.expected):
            self._fail(AssertionError,
                       f"The (d)types do not match: {type(self.actual)} != {type(self.expected)}.")
        if self.actual == self.expected:
            return
        if self.equal_nan and cmath.isnan(self.actual) and cmath.isnan(self.expected):
            return
        abs_diff = abs(self.actual - self.expected)
        tolerance = self.atol + self.rtol * abs(self.expected)
        if cmath.isfinite(abs_diff) and abs_diff <= tolerance:
            return
        self._fail(AssertionError, make_scalar_mismatch_msg(self.actual, self.expected, rtol=self.rtol,
                                                            atol=self.atol))

    def extra_repr(self) -> Sequence[str]:
        return ("rtol", "atol", "equal_nan", "check_dtype")


class TensorLikePair(Pair):
    """Tensors and what :func:`as_tensor` accepts (NumPy arrays, ...), of directly related types."""

    def __init__(self, actual: Any, expected: Any, *, id: tuple[Any, ...] = (), allow_subclasses: bool = True,
                 rtol: float | None = None, atol: float | None = None, equal_nan: bool = False,
                 check_device: bool = True, check_dtype: bool = True, check_layout: bool = True,
                 check_stride: bool = False, **other_parameters: Any) -> None:
        if not (isinstance(actual, type(expected)) or isinstance(expected, type(actual))):
            self._inputs_not_supported()
        if not allow_subclasses and type(actual) is not type(expected):
            self._inputs_not_supported()
        actual, expected = (self._to_tensor(input) for input in (actual, expected))
        for tensor in (actual, expected):
            if tensor.layout != torch.strided:
                raise ErrorMeta(ValueError, f"Unsupported tensor layout {tensor.layout}", id=id)
        super().__init__(actual, expected, id=id, **other_parameters)
        self.rtol, self.atol = get_tolerances(actual, expected, rtol=rtol, atol=atol, id=self.id)
        self.equal_nan = equal_nan
        self.check_device = check_device
        self.check_dtype = check_dtype
        self.check_layout = check_layout
        self.check_stride = check_stride

    def _to_tensor(self, tensor_like: Any):
        if isinstance(tensor_like, torch.Tensor):
            return tensor_like
        try:
            return torch.as_tensor(tensor_like)
        except Exception:
            self._inputs_not_supported()

    def compare(self) -> None:
        actual, expected = self.actual, self.expected
        self._compare_attributes(actual, expected)
        if any(input.device.type == "meta" for input in (actual, expected)):
            return
        actual, expected = self._equalize_attributes(actual, expected)
        self._compare_values(actual, expected)

    def _compare_attributes(self, actual, expected) -> None:
        """The shape always; layout, stride, device and dtype as their ``check_*`` flags say."""

        def raise_mismatch_error(attribute_name: str, actual_value: Any, expected_value: Any) -> NoReturn:
            self._fail(AssertionError, f"The values for attribute '{attribute_name}' do not match: "
                                       f"{actual_value} != {expected_value}.")

        if actual.shape != expected.shape:
            raise_mismatch_error("shape", actual.shape, expected.shape)
        if actual.layout != expected.layout:
            if self.check_layout:
                raise_mismatch_error("layout", actual.layout, expected.layout)
        elif actual.layout == torch.strided and self.check_stride and actual.stride() != expected.stride():
            raise_mismatch_error("stride()", actual.stride(), expected.stride())
        if self.check_device and actual.device != expected.device:
            raise_mismatch_error("device", actual.device, expected.device)
        if self.check_dtype and actual.dtype != expected.dtype:
            raise_mismatch_error("dtype", actual.dtype, expected.dtype)

    def _equalize_attributes(self, actual, expected):
        """Both on the CPU when their devices differ, both of the promoted dtype when their dtypes differ."""
        if actual.device != expected.device:
            actual, expected = actual.cpu(), expected.cpu()
        if actual.dtype != expected.dtype:
            # unsigned 16/32/64 compare as int64 (promote_types refuses uint64 with signed types)
            wide = (torch.uint64, torch.uint32, torch.uint16)
            dtype = torch.promote_types(torch.int64 if actual.dtype in wide else actual.dtype,
                                        torch.int64 if expected.dtype in wide else expected.dtype)
            actual, expected = actual.to(dtype), expected.to(dtype)
        return actual, expected

    def _compare_values(self, actual, expected) -> None:
        if actual.dtype.is_floating_point and actual.dtype.itemsize == 1 and (self.rtol != 0.0 or self.atol != 0.0):
            raise ErrorMeta(AssertionError, f"Rtol={self.rtol} and atol={self.atol} are not supported for bitwise "
                                            "comparison of low dimensional floats. Please use rtol=0.0 and atol=0.0.")
        self._compare_regular_values_close(actual, expected, rtol=self.rtol, atol=self.atol,
                                           equal_nan=self.equal_nan)

    def _compare_regular_values_close(self, actual, expected, *, rtol: float, atol: float, equal_nan: bool,
                                      identifier=None) -> None:
        matches = torch.isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan)
        if torch.all(matches):
            return
        if actual.shape == torch.Size([]):
            msg = make_scalar_mismatch_msg(actual.item(), expected.item(), rtol=rtol, atol=atol,
                                           identifier=identifier)
        else:
            msg = make_tensor_mismatch_msg(actual, expected, matches, rtol=rtol, atol=atol, identifier=identifier)
        self._fail(AssertionError, msg)

    def extra_repr(self) -> Sequence[str]:
        return ("rtol", "atol", "equal_nan", "check_device", "check_dtype", "check_layout", "check_stride")


def originate_pairs(actual: Any, expected: Any, *, pair_types: Sequence[type[Pair]],
                    sequence_types: tuple[type, ...] = (collections.abc.Sequence,),
                    mapping_types: tuple[type, ...] = (collections.abc.Mapping,), id: tuple[Any, ...] = (),
                    **options: Any) -> list[Pair]:
    """The pairs to compare, recursing through sequences (not strings) and mappings."""
    if isinstance(actual, sequence_types) and not isinstance(actual, str) and \
            isinstance(expected, sequence_types) and not isinstance(expected, str):
        actual_len, expected_len = len(actual), len(expected)
        if actual_len != expected_len:
            raise ErrorMeta(AssertionError,
                            f"The length of the sequences mismatch: {actual_len} != {expected_len}", id=id)
        pairs = []
        for idx in range(actual_len):
            pairs.extend(originate_pairs(actual[idx], expected[idx], pair_types=pair_types,
                                         sequence_types=sequence_types, mapping_types=mapping_types,
                                         id=(*id, idx), **options))
        return pairs

    if isinstance(actual, mapping_types) and isinstance(expected, mapping_types):
        actual_keys, expected_keys = set(actual.keys()), set(expected.keys())
        if actual_keys != expected_keys:
            raise ErrorMeta(AssertionError,
                            f"The keys of the mappings do not match:\n"
                            f"Missing keys in the actual mapping: {sorted(expected_keys - actual_keys)}\n"
                            f"Additional keys in the actual mapping: {sorted(actual_keys - expected_keys)}", id=id)
        keys: Collection = actual_keys
        with contextlib.suppress(Exception):   # sorted when possible: the first failure is then deterministic
            keys = sorted(keys)
        pairs = []
        for key in keys:
            pairs.extend(originate_pairs(actual[key], expected[key], pair_types=pair_types,
                                         sequence_types=sequence_types, mapping_types=mapping_types,
                                         id=(*id, key), **options))
        return pairs

    for pair_type in pair_types:
        try:
            return [pair_type(actual, expected, id=id, **options)]
        except UnsupportedInputs:
            continue
        except ErrorMeta:
            raise
        except Exception as error:
            raise RuntimeError(
                f"Originating a {pair_type.__name__}() at item {''.join(str([item]) for item in id)} with\n\n"
                f"{type(actual).__name__}(): {actual}\n\nand\n\n{type(expected).__name__}(): {expected}\n\n"
                f"resulted in the unexpected exception above.") from error
    raise ErrorMeta(TypeError,
                    f"No comparison pair was able to handle inputs of type {type(actual)} and {type(expected)}.",
                    id=id)


def not_close_error_metas(actual: Any, expected: Any, *, pair_types: Sequence[type[Pair]] = (ObjectPair,),
                          sequence_types: tuple[type, ...] = (collections.abc.Sequence,),
                          mapping_types: tuple[type, ...] = (collections.abc.Mapping,),
                          **options: Any) -> list[ErrorMeta]:
    """The errors of every pair of ``actual`` and ``expected`` (an input error is raised at once)."""
    __tracebackhide__ = True
    try:
        pairs = originate_pairs(actual, expected, pair_types=pair_types, sequence_types=sequence_types,
                                mapping_types=mapping_types, **options)
    except ErrorMeta as error_meta:
        raise error_meta.to_error() from None

    error_metas: list[ErrorMeta] = []
    for pair in pairs:
        try:
            pair.compare()
        except ErrorMeta as error_meta:
            error_metas.append(error_meta)
        except Exception as error:
            raise RuntimeError(f"Comparing\n\n{pair}\n\nresulted in the unexpected exception above.") from error
    return error_metas


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True, rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = False, check_device: bool = True,
                 check_dtype: bool = True, check_layout: bool = True, check_stride: bool = False,
                 msg: str | Callable[[str], str] | None = None) -> None:
    r"""PyTorch's ``torch.testing.assert_close``: ``|actual - expected| <= atol + rtol * |expected|`` elementwise,
    with the same shape (and device, dtype, layout, stride as the ``check_*`` flags say); default tolerances from
    the dtypes (float32: rtol 1.3e-6, atol 1e-5; float64: 1e-7, 1e-7; float16: 1e-3, 1e-5; bfloat16: 1.6e-2, 1e-5;
    other dtypes: exact). Sequences and mappings are compared elementwise; Python scalars and NumPy arrays as in
    PyTorch. ``msg`` replaces the message (a str) or rewrites it (a callable)."""
    __tracebackhide__ = True
    error_metas = not_close_error_metas(
        actual, expected, pair_types=(NonePair, BooleanPair, NumberPair, TensorLikePair),
        allow_subclasses=allow_subclasses, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device,
        check_dtype=check_dtype, check_layout=check_layout, check_stride=check_stride, msg=msg)
    if error_metas:
        raise error_metas[0].to_error(msg)


def assert_allclose(actual: Any, expected: Any, rtol: float | None = None, atol: float | None = None,
                    equal_nan: bool = True, msg: str = "") -> None:
    """Deprecated since PyTorch 1.12 (a FutureWarning, as PyTorch's): use :func:`assert_close`."""
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed in a future "
                  "release. Please use `torch.testing.assert_close()` instead. You can find detailed upgrade "
                  "instructions in https://github.com/pytorch/pytorch/issues/61844.", FutureWarning, stacklevel=2)
    if not isinstance(actual, torch.Tensor):
        actual = torch.tensor(actual)
    if not isinstance(expected, torch.Tensor):
        expected = torch.tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        rtol, atol = default_tolerances(actual, expected, dtype_precisions={
            torch.float16: (1e-3, 1e-3), torch.float32: (1e-4, 1e-5), torch.float64: (1e-5, 1e-8)})
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True,
                 check_dtype=False, check_stride=False, msg=msg or None)
