"""Tensor repr/str text, matching PyTorch 2.13's default print options.

This module is deliberately standalone (NumPy and the standard library only)
so that it can be tested directly against ``torch._tensor_str``.  It mirrors
the rules of that file:

* A single ``_Formatter`` is built from all printed values (only the edge
  items when the tensor is summarised).  For floating dtypes it looks at the
  non-zero finite values and decides between

  - *int mode*   -- every value is integral: ``1.``, ``-0.``, ``nan``
  - *fixed mode* -- ``{:.4f}``
  - *sci mode*   -- ``{:.4e}``, chosen when max/min > 1000, max > 1e8 or
    min < 1e-4.

  Every element is right-aligned to the widest formatted value.
* 1-d rows are wrapped to ``linewidth`` (80) given the current indent;
  higher dimensions are joined with ``,`` plus ``dim - 1`` newlines.
* Tensors with more than ``threshold`` (1000) elements are summarised:
  every axis longer than ``2 * edgeitems`` shows only its first and last
  ``edgeitems`` (3) entries, separated by ``...``.
* ``dtype=``/``size=`` suffixes and caller-supplied suffixes are appended,
  moving onto a new line when the last line would exceed ``linewidth``.
"""

from __future__ import annotations

import math

import numpy as np

from ._device import quietly

__all__ = ["format_tensor"]

# torch's default print options (torch._tensor_str.PRINT_OPTS).
PRECISION = 4
THRESHOLD = 1000
EDGEITEMS = 3
LINEWIDTH = 80

_PREFIX = "tensor("

_NUMPY_DTYPES = {
    "float16": np.float16,
    "float32": np.float32,
    "float64": np.float64,
    "int64": np.int64,
    "int32": np.int32,
    "int16": np.int16,
    "int8": np.int8,
    "uint8": np.uint8,
    "bool": np.bool_,
    "complex64": np.complex64,
    "complex128": np.complex128,
}

_FLOATING = frozenset({"float16", "float32", "float64", "bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
                       "float8_e5m2fnuz", "float8_e8m0fnu"})

# dtypes whose name is never printed for a non-empty tensor (besides the
# default float dtype itself).
_IMPLICIT_DTYPES = frozenset({"int64", "bool"})

_SCI_FMT = "{:.%de}" % PRECISION
_FIXED_FMT = "{:.%df}" % PRECISION


class _Formatter:
    """Chooses a common number format and width for a set of values."""

    __slots__ = ("floating", "int_mode", "sci_mode", "max_width")

    def __init__(self, values: list, floating: bool, e8m0: bool = False) -> None:
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1

        if not floating:
            self.max_width = max(1, max(len(str(v)) for v in values)) if values else 1
            return

        isfinite = math.isfinite
        if e8m0:   # PyTorch's printing: e8m0's 0 is its smallest value 2**-127, and its isfinite is true for NaN
            finite = [v for v in values if v != 2.0 ** -127 and not math.isinf(v)]
        else:
            finite = [v for v in values if v != 0 and isfinite(v)]
        if not finite:
            return  # only zeros / nan / inf: int mode, width 1

        for v in finite:
            if v != v or v != math.ceil(v):
                self.int_mode = False
                break

        abs_vals = [abs(v) for v in finite]
        lo = min(abs_vals)
        hi = max(abs_vals)
        if e8m0 and any(v != v for v in abs_vals):
            lo = hi = math.nan   # a NaN min and max (never scientific), as PyTorch's
        self.sci_mode = (hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4) if SCI_MODE is None else SCI_MODE

        if self.sci_mode:
            fmt = _SCI_FMT.format
            self.max_width = max(len(fmt(v)) for v in finite)
        elif self.int_mode:
            # the trailing "." marks the value as floating point
            self.max_width = max(len(f"{v:.0f}") for v in finite) + 1
        else:
            fmt = _FIXED_FMT.format
            self.max_width = max(len(fmt(v)) for v in finite)

    def format(self, value) -> str:
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = _SCI_FMT.format(value)
        elif self.int_mode:
            text = f"{value:.0f}"
            if math.isfinite(value):
                text += "."
        else:
            text = _FIXED_FMT.format(value)
        return text.rjust(self.max_width)


def _summarize(data: np.ndarray) -> tuple[np.ndarray, tuple[bool, ...]]:
    """Keep the first/last EDGEITEMS entries of every long axis.

    Returns the reduced array and, per axis, whether ``...`` goes in it.
    """
    cut = []
    for axis, n in enumerate(data.shape):
        if n > 2 * EDGEITEMS:
            keep = np.r_[0:EDGEITEMS, n - EDGEITEMS : n]
            data = np.take(data, keep, axis=axis)
            cut.append(True)
        else:
            cut.append(False)
    return data, tuple(cut)


class _ComplexFormatter:
    """PyTorch's pair of formatters for complex values: one for the real parts (right-aligned), one for the
    imaginary parts (unpadded, signed, with a ``j``)."""

    __slots__ = ("real", "imag", "max_width")

    def __init__(self, values: list) -> None:
        self.real = _Formatter([v.real for v in values], True)
        self.imag = _Formatter([v.imag for v in values], True)
        self.max_width = self.real.max_width + 2 + self.imag.max_width + 1 - 2   # _vector_str adds the 2

    def format(self, value) -> str:
        imag = (self.imag.format(value.imag) + "j").lstrip()
        return self.real.format(value.real) + (imag if imag[0] in "+-" else "+" + imag)


def _vector_str(row: list, indent: int, elided: bool, fmt: _Formatter) -> str:
    per_line = max(1, (LINEWIDTH - indent) // (fmt.max_width + 2))
    items = [fmt.format(v) for v in row]
    if elided:
        items.insert(EDGEITEMS, " ..." if EDGEITEMS else "...")
    lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_str(nested: list, depth: int, ndim: int, indent: int, cut: tuple, fmt: _Formatter) -> str:
    if depth == ndim - 1:
        return _vector_str(nested, indent, cut[depth], fmt)
    parts = [_nested_str(sub, depth + 1, ndim, indent + 1, cut, fmt) for sub in nested]
    if cut[depth]:
        parts.insert(EDGEITEMS, "...")
    sep = "," + "\n" * (ndim - depth - 1) + " " * (indent + 1)
    return "[" + sep.join(parts) + "]"


def _tensor_str(data: np.ndarray, floating: bool, indent: int) -> str:
    """The bracketed contents of a non-empty tensor."""
    if data.size > THRESHOLD:
        data, cut = _summarize(data)
    else:
        cut = (False,) * data.ndim

    values = data.ravel().tolist()
    fmt = _ComplexFormatter(values) if data.dtype.kind == "c" else \
        _Formatter(values, floating, data.dtype.name == "float8_e8m0fnu")
    if data.ndim == 0:
        return fmt.format(data.item())
    return _nested_str(data.tolist(), 0, data.ndim, indent, cut, fmt)


def _add_suffixes(text: str, suffixes: list, indent: int) -> str:
    pieces = [text]
    # (sic) torch counts the last line this way; replicate it for identical wrapping
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > LINEWIDTH:
            pieces.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            pieces.append(", " + suffix)
            last_line_len += len(suffix) + 2
    pieces.append(")")
    return "".join(pieces)


@quietly   # printing inf, nan and float16 extremes computes with them: silently, as in PyTorch
def format_no_data(shape: tuple, dtype_name: str, default_float: str, suffixes: tuple[str, ...]) -> str:
    """``repr`` of a tensor without data ('meta'): ``tensor(..., device='meta', size=(3, 4))``, as PyTorch's.
    ``suffixes`` starts with the device item."""
    items = [*suffixes[:1], "size=" + str(tuple(int(n) for n in shape))]
    if dtype_name != default_float:
        items.append("dtype=torch." + dtype_name)
    return _add_suffixes(_PREFIX + "...", items + list(suffixes[1:]), len(_PREFIX))   # wrapped at LINEWIDTH too


_COMPLEX_OF = {"float32": "complex64", "float64": "complex128"}


def format_tensor(
    data: np.ndarray,
    dtype_name: str,
    default_float: str = "float32",
    suffixes: tuple[str, ...] = (),
) -> str:
    """Return the text ``repr(tensor)`` gives in PyTorch for these values.

    ``data`` holds the values (any shape), ``dtype_name`` the tensor's dtype
    (``"float32"``, ``"int64"``, ``"bool"``, ...), ``default_float`` the
    current default floating dtype, and ``suffixes`` extra items such as
    ``"requires_grad=True"`` or ``"grad_fn=<AddBackward0>"`` that follow the
    dtype item (a leading ``"device='...'"`` item goes before it).
    """
    data = np.asarray(data)
    np_dtype = _NUMPY_DTYPES.get(dtype_name)
    if np_dtype is not None and data.dtype != np_dtype:
        data = data.astype(np_dtype)

    indent = len(_PREFIX)
    # a device item leads, before size and dtype, as PyTorch orders them: tensor([1, 2], device='cuda:0', dtype=...)
    items = [s for s in suffixes[:1] if s.startswith("device=")]
    suffixes = suffixes[len(items):]
    if data.size == 0:
        # No values to infer the dtype from, so even int64/bool are named.
        if data.ndim != 1:
            items.append("size=" + str(tuple(int(n) for n in data.shape)))
        if dtype_name != default_float:
            items.append("dtype=torch." + dtype_name)
        body = "[]"
    else:
        if not EDGEITEMS:   # set_printoptions(edgeitems=0): PyTorch names the size
            items.append("size=" + str(tuple(int(n) for n in data.shape)))
        if dtype_name != default_float and dtype_name not in _IMPLICIT_DTYPES and \
                dtype_name != _COMPLEX_OF.get(default_float):
            items.append("dtype=torch." + dtype_name)
        body = _tensor_str(data, dtype_name in _FLOATING, indent)
    items.extend(suffixes)
    return _add_suffixes(_PREFIX + body, items, indent)


# ----- torch.set_printoptions: the options above are module globals that the printing functions read -----
SCI_MODE = None   # None: chosen from the values (above); True/False: forced, as PyTorch's PRINT_OPTS.sci_mode
_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, math.inf, 3, 80)}


def set_printoptions(precision: int | None = None, threshold: float | None = None, edgeitems: int | None = None,
                     linewidth: int | None = None, profile: str | None = None, sci_mode: bool | None = None) -> None:
    """PyTorch's ``torch.set_printoptions``: digits after the point, the element count above which tensors are
    summarised, the items kept at each end of a summarised dimension, the line width, a ``profile`` ('default',
    'short', 'full'; an unknown name changes nothing, as in PyTorch) that the other arguments override, and
    ``sci_mode`` (None: chosen from the values). As in PyTorch, ``sci_mode`` is reset whenever it is not given."""
    global PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH, SCI_MODE, _SCI_FMT, _FIXED_FMT
    if profile in _PROFILES:
        PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH = _PROFILES[profile]
    PRECISION = PRECISION if precision is None else precision
    THRESHOLD = THRESHOLD if threshold is None else threshold
    EDGEITEMS = EDGEITEMS if edgeitems is None else edgeitems
    LINEWIDTH = LINEWIDTH if linewidth is None else linewidth
    SCI_MODE = sci_mode
    _SCI_FMT, _FIXED_FMT = "{:.%de}" % PRECISION, "{:.%df}" % PRECISION
