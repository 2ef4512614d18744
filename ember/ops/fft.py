"""The op table, torch.fft: discrete Fourier transforms, their frequencies and shifts, and ``stft``/``istft``.

As PyTorch's, every transform is built from three primitives (tools/autograd/derivatives.yaml, FunctionsManual.cpp),
whose nodes carry PyTorch's names:

* ``fft_c2c`` (``_fft_c2c``, FftC2CBackward0): complex to complex, forward or inverse;
* ``fft_r2c`` (``_fft_r2c``, FftR2CBackward0): real to complex, forward, two-sided or onesided;
* ``fft_c2r`` (``_fft_c2r``, FftC2RBackward0): the inverse of a onesided Hermitian half, a real result.

``normalization`` is PyTorch's ``fft_norm_mode`` (0 none, 1 by 1/sqrt(n), 2 by 1/n). Each primitive is linear, so
its JVP is itself on the tangent; its VJP is the adjoint transform (PyTorch's formulas: the inverse c2c with the same
normalization; for r2c the onesided gradient zero-filled to the full length first; for c2r a onesided r2c with the
entries that stand for two conjugate frequencies doubled), rules that hold for complex values as written, so every
derivative is again an FFT and differentiable to any order. The public functions (fft, rfftn, hfft2, ...) follow
aten/src/ATen/native/SpectralOps.cpp step by step: dtype promotion, zero-padding or trimming to ``n``/``s``
(ConstantPadNdBackward0, SliceBackward0), the conjugations of hfft/ihfft, the c2c pass over the leading dims of the
n-dimensional Hermitian transforms. Kernels: ember/devices/cpu/fft.py (NumPy's pocketfft) and
ember/devices/common/fft.py (the array API's fft extension).
"""
from __future__ import annotations

from ..autograd import _batching

import math

import warnings

from .. import _dtype as D
from .._tensor import Tensor
from ..autograd._primitive import apply, defprim
from ._registry import graph, register
from ._schema import schema
from .complex import conj, conj_physical, resize_out, view_as_real
from .nn_pad import constant_pad_p
from .shape import narrow, roll, unfold_backward_p


# ----- the three primitives ----------------------------------------------------------------------------------

def _c2c_vjp(xp, g, out, a, dim, normalization, forward):
    return xp.fft_c2c(g, dim, normalization, not forward)


def _r2c_vjp(xp, g, out, a, dim, normalization, onesided):
    # PyTorch's fft_r2c_backward: a onesided gradient is zero-filled to the input's length, then the inverse c2c
    last = dim[-1]
    short = a.shape[last] - g.shape[last]
    if onesided and short > 0:
        g = xp.constant_pad(g, ((0, short),) + ((0, 0),) * (g.ndim - 1 - last), 0)
    return xp.real(xp.fft_c2c(g, dim, normalization, False))


def _c2r_vjp(xp, g, out, a, dim, normalization, last_dim_size):
    # PyTorch's fft_c2r_backward: a onesided r2c of the gradient, entries 1 .. n - (n // 2 + 1) doubled (each stands
    # for itself and its conjugate mirror); x + x is 2 x exactly
    last = dim[-1]
    gi = xp.fft_r2c(g, dim, normalization, True)
    double = g.shape[last] - gi.shape[last]
    if double > 0:
        twice = xp.slice_dim(gi, last, 1, 1 + double)
        gi = gi + xp.constant_pad(twice, ((1, gi.shape[last] - 1 - double),) + ((0, 0),) * (gi.ndim - 1 - last), 0)
    return gi


fft_c2c_p = defprim("fft_c2c", lambda xp, a, dim, normalization, forward: xp.fft_c2c(a, dim, normalization, forward),
                    vjp=_c2c_vjp, jvp="linear", node="FftC2CBackward0", complex="own")
fft_r2c_p = defprim("fft_r2c",
                    lambda xp, a, dim, normalization, onesided: xp.fft_r2c(a, dim, normalization, onesided),
                    vjp=_r2c_vjp, jvp="linear", node="FftR2CBackward0", complex="own")
fft_c2r_p = defprim("fft_c2r",
                    lambda xp, a, dim, normalization, last_dim_size: xp.fft_c2r(a, dim, normalization, last_dim_size),
                    vjp=_c2r_vjp, jvp="linear", node="FftC2RBackward0", complex="own")


def _c2c(x: Tensor, dim, normalization: int, forward: bool) -> Tensor:
    return apply(fft_c2c_p, (x,), {"dim": tuple(dim), "normalization": normalization, "forward": forward})


def _r2c(x: Tensor, dim, normalization: int, onesided: bool) -> Tensor:
    return apply(fft_r2c_p, (x,), {"dim": tuple(dim), "normalization": normalization, "onesided": onesided})


def _c2r(x: Tensor, dim, normalization: int, last_dim_size: int) -> Tensor:
    return apply(fft_c2r_p, (x,), {"dim": tuple(dim), "normalization": normalization,
                                   "last_dim_size": last_dim_size})


graph("fft_c2c", _c2c)
graph("fft_r2c", _r2c)
graph("fft_c2r", _c2r)


# ----- argument handling (SpectralOps.cpp's helpers) ---------------------------------------------------------

def _word(d: D.dtype) -> str:
    return D.type_word(d.np)


def _promote(x: Tensor, require_complex: bool) -> Tensor:
    """PyTorch's promote_tensor_fft: integers and bool compute in the default float dtype; only float32 and
    float64 (and their complex types) have a CPU FFT; ``require_complex``: real inputs become complex."""
    d = x.dtype
    if d.is_complex:
        return x
    t = d if d.is_floating_point else D.get_default_dtype()
    if t is not D.float32 and t is not D.float64:
        raise RuntimeError(f"Unsupported dtype {_word(t)}")
    if require_complex:
        t = t.to_complex()
    return x if t is d else x.to(t)


def _norm_mode(norm, forward: bool) -> int:
    """PyTorch's norm_from_string: NumPy's names, whose meaning depends on the direction."""
    if norm is None or norm == "backward":
        return 0 if forward else 2
    if norm == "forward":
        return 2 if forward else 0
    if norm == "ortho":
        return 1
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _wrap(dim: int, ndim: int) -> int:
    """A dim wrapped without PyTorch's allowance for 0-d tensors (``wrap_scalar=False``)."""
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if dim < -ndim or dim >= ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {dim})")
    return dim + ndim if dim < 0 else dim


def _check_n(n: int) -> None:
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _resize(x: Tensor, dims, sizes) -> Tensor:
    """PyTorch's resize_fft_input: each of ``dims`` trimmed (a slice) or zero-padded (one constant_pad_nd) to its
    size in ``sizes`` (-1: as it is)."""
    pads = [(0, 0)] * x.ndim
    must_pad = False
    for d, n in zip(dims, sizes):
        if n == -1:
            continue
        have = x.shape[d]
        if have < n:
            pads[d] = (0, n - have)
            must_pad = True
        elif have > n:
            x = narrow(x, d, 0, n)
    return apply(constant_pad_p, (x,), {"pads": tuple(pads), "value": 0}) if must_pad else x


def _shape_and_dims(x: Tensor, s, dim) -> tuple[list, list]:
    """PyTorch's canonicalize_fft_shape_and_dim_args: the signal sizes and the (wrapped, unique) dims."""
    nd = x.ndim
    dims = None
    if dim is not None:
        dims = [_wrap(int(d), nd) for d in dim]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        s = list(s)
        if dims is not None and len(dims) != len(s):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if len(s) > nd:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {nd} dimensions.")
        if dims is None:
            dims = list(range(nd - len(s), nd))
        shape = [x.shape[d] if n == -1 else int(n) for n, d in zip(s, dims)]
    elif dims is None:
        dims = list(range(nd))
        shape = list(x.shape)
    else:
        shape = [x.shape[d] for d in dims]
    for n in shape:
        _check_n(n)
    return shape, dims


def _c2r_shape_and_dims(fname: str, x: Tensor, s, dim) -> tuple[list, list, int]:
    """PyTorch's canonicalize_fft_c2r_shape_and_dim_args: also the output length of the last dim; the last signal
    size becomes that of its onesided half."""
    shape, dims = _shape_and_dims(x, s, dim)
    if not shape:
        raise RuntimeError(f"{fname} must transform at least one axis")
    s = None if s is None else list(s)
    last = 2 * (x.shape[dims[-1]] - 1) if s is None or s[-1] == -1 else shape[-1]
    _check_n(last)
    shape[-1] = last // 2 + 1
    return shape, dims, last


def _out(fname: str, out, result: Tensor, want_complex: bool, inputs: tuple = ()) -> Tensor:
    """``out=``: PyTorch's checks (a complex or a floating-point ``out``; no autograd), then the result written
    into it, cast to its dtype and resized as PyTorch resizes."""
    if out is None:
        return result
    if not isinstance(out, Tensor):
        raise TypeError(f"fft_{fname}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if want_complex and not out.dtype.is_complex:
        raise RuntimeError(f"{fname} expects a complex output tensor, but got {_word(out.dtype)}")
    if not want_complex and not out.dtype.is_floating_point:
        raise RuntimeError(f"{fname} expects a floating point output tensor, but got {_word(out.dtype)}")
    if result.requires_grad or any(isinstance(t, Tensor) and t.requires_grad for t in inputs):
        raise RuntimeError(f"{fname}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    return resize_out(out, result)


# ----- one-dimensional transforms -----------------------------------------------------------------------------

def _fft_c2r(fname: str, input: Tensor, n, dim: int, norm, forward: bool) -> Tensor:
    x = _promote(input, True)
    d = _wrap(dim, x.ndim)
    n = 2 * (x.shape[d] - 1) if n is None else n
    _check_n(n)
    mode = _norm_mode(norm, forward)
    x = _resize(x, (d,), (n // 2 + 1,))
    if forward:      # hfft: the inverse c2r of the conjugate
        x = conj(x)
    return _c2r(x, (d,), mode, n)


def _fft_r2c(fname: str, input: Tensor, n, dim: int, norm, forward: bool, onesided: bool) -> Tensor:
    if input.dtype.is_complex:
        raise RuntimeError(f"{fname} expects a real input tensor, but got {_word(input.dtype)}")
    x = _promote(input, False)
    d = _wrap(dim, x.ndim)
    n = x.shape[d] if n is None else n
    _check_n(n)
    x = _resize(x, (d,), (n,))
    r = _r2c(x, (d,), _norm_mode(norm, forward), onesided)
    return r if forward else conj(r)      # ifft, ihfft of a real signal: the conjugate of the forward one


def _fft_c2c(fname: str, input: Tensor, n, dim: int, norm, forward: bool) -> Tensor:
    d = _wrap(dim, input.ndim)
    n = input.shape[d] if n is None else n
    _check_n(n)
    x = _resize(input, (d,), (n,))
    return _c2c(x, (d,), _norm_mode(norm, forward), forward)


_SIG1 = "(Tensor input, int? n, int dim, str? norm, *, out)"
_SIGN = "(Tensor input, int[1]? s, int[1]? dim, str? norm, *, out)"
_SIG2 = "(Tensor input, int[1]? s, int[1] dim, str? norm, *, out)"


@register(module=False, submodule="fft")
@schema("fft_fft" + _SIG1)
def fft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None) -> Tensor:
    """The discrete Fourier transform along ``dim`` (``n`` points: trimmed or zero-padded); complex result."""
    if input.dtype.is_complex:
        r = _fft_c2c("fft", input, n, dim, norm, True)
    else:
        r = _fft_r2c("fft", input, n, dim, norm, True, False)
    return _out("fft", out, r, True, (input,))


@register(module=False, submodule="fft")
@schema("fft_ifft" + _SIG1)
def ifft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None) -> Tensor:
    """The inverse discrete Fourier transform along ``dim``."""
    if input.dtype.is_complex:
        r = _fft_c2c("ifft", input, n, dim, norm, False)
    else:
        r = _fft_r2c("ifft", input, n, dim, norm, False, False)
    return _out("ifft", out, r, True, (input,))


@register(module=False, submodule="fft")
@schema("fft_rfft" + _SIG1)
def rfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None) -> Tensor:
    """The transform of a real signal: its n // 2 + 1 non-negative frequencies."""
    return _out("rfft", out, _fft_r2c("rfft", input, n, dim, norm, True, True), True, (input,))


@register(module=False, submodule="fft")
@schema("fft_irfft" + _SIG1)
def irfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None) -> Tensor:
    """The inverse of ``rfft``: a real signal of ``n`` points (default 2 (m - 1)) from its onesided spectrum."""
    return _out("irfft", out, _fft_c2r("irfft", input, n, dim, norm, False), False, (input,))


@register(module=False, submodule="fft")
@schema("fft_hfft" + _SIG1)
def hfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None) -> Tensor:
    """The transform of a Hermitian-symmetric signal given by its onesided half: a real spectrum."""
    return _out("hfft", out, _fft_c2r("hfft", input, n, dim, norm, True), False, (input,))


@register(module=False, submodule="fft")
@schema("fft_ihfft" + _SIG1)
def ihfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None) -> Tensor:
    """The inverse of ``hfft``: the onesided half of the inverse transform of a real signal."""
    return _out("ihfft", out, _fft_r2c("ihfft", input, n, dim, norm, False, True), True, (input,))


# ----- n-dimensional transforms -------------------------------------------------------------------------------

def _fftn(fname: str, input: Tensor, s, dim, norm, forward: bool, out) -> Tensor:
    shape, dims = _shape_and_dims(input, s, dim)
    x = _resize(_promote(input, True), dims, shape)
    mode = _norm_mode(norm, forward)
    r = _c2c(x, dims, mode, forward) if dims else x
    return _out(fname, out, r, True, (input,))


def _rfftn(fname: str, input: Tensor, s, dim, norm, out) -> Tensor:
    if input.dtype.is_complex:
        raise RuntimeError(f"rfftn expects a real-valued input tensor, but got {_word(input.dtype)}")
    shape, dims = _shape_and_dims(input, s, dim)
    if not shape:
        raise RuntimeError("rfftn must transform at least one axis")
    x = _resize(_promote(input, False), dims, shape)
    return _out(fname, out, _r2c(x, dims, _norm_mode(norm, True), True), True, (input,))


def _irfftn(fname: str, input: Tensor, s, dim, norm, out) -> Tensor:
    shape, dims, last = _c2r_shape_and_dims("irfftn", input, s, dim)
    x = _resize(_promote(input, True), dims, shape)
    return _out(fname, out, _c2r(x, dims, _norm_mode(norm, False), last), False, (input,))


def _hfftn(fname: str, input: Tensor, s, dim, norm, out) -> Tensor:
    shape, dims, last = _c2r_shape_and_dims("hfftn", input, s, dim)
    x = _resize(_promote(input, True), dims, shape)
    mode = _norm_mode(norm, True)
    if len(dims) > 1:
        x = _c2c(x, dims[:-1], mode, True)
    return _out(fname, out, _c2r(conj(x), (dims[-1],), mode, last), False, (input,))


def _ihfftn(fname: str, input: Tensor, s, dim, norm, out) -> Tensor:
    shape, dims = _shape_and_dims(input, s, dim)
    if not shape:
        raise RuntimeError("ihfftn must transform at least one axis")
    if input.dtype.is_complex:   # (PyTorch refuses it in _fft_r2c's dtype check)
        raise RuntimeError(f"Only supports floating-point dtypes, but found: {_word(input.dtype)}")
    x = _resize(_promote(input, False), dims, shape)
    mode = _norm_mode(norm, False)
    r = _r2c(x, (dims[-1],), mode, True)
    if len(dims) == 1:
        return _out(fname, out, conj(r), True, (input,))
    return _out(fname, out, _c2c(conj_physical(r), dims[:-1], mode, False), True, (input,))


@register(module=False, submodule="fft")
@schema("fft_fftn" + _SIGN)
def fftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None) -> Tensor:
    """The n-dimensional transform over ``dim`` (default: all dims, or the last len(s)), signal sizes ``s``."""
    return _fftn("fftn", input, _ints(s), _ints(dim), norm, True, out)


@register(module=False, submodule="fft")
@schema("fft_ifftn" + _SIGN)
def ifftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None) -> Tensor:
    """The n-dimensional inverse transform."""
    return _fftn("ifftn", input, _ints(s), _ints(dim), norm, False, out)


@register(module=False, submodule="fft")
@schema("fft_rfftn" + _SIGN)
def rfftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None) -> Tensor:
    """The n-dimensional transform of a real signal, onesided in the last of ``dim``."""
    return _rfftn("rfftn", input, _ints(s), _ints(dim), norm, out)


@register(module=False, submodule="fft")
@schema("fft_irfftn" + _SIGN)
def irfftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None) -> Tensor:
    """The inverse of ``rfftn``: a real signal (last dim of ``s``, default 2 (m - 1) points)."""
    return _irfftn("irfftn", input, _ints(s), _ints(dim), norm, out)


@register(module=False, submodule="fft")
@schema("fft_hfftn" + _SIGN)
def hfftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None) -> Tensor:
    """The n-dimensional transform of a Hermitian-symmetric signal given by its onesided half: a real result."""
    return _hfftn("hfftn", input, _ints(s), _ints(dim), norm, out)


@register(module=False, submodule="fft")
@schema("fft_ihfftn" + _SIGN)
def ihfftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None) -> Tensor:
    """The inverse of ``hfftn``: the onesided half of the n-dimensional inverse transform of a real signal."""
    return _ihfftn("ihfftn", input, _ints(s), _ints(dim), norm, out)


@register(module=False, submodule="fft")
@schema("fft_fft2" + _SIG2)
def fft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *, out=None) -> Tensor:
    """``fftn`` over two dims (default the last two)."""
    return _fftn("fft2", input, _ints(s), _ints(dim), norm, True, out)


@register(module=False, submodule="fft")
@schema("fft_ifft2" + _SIG2)
def ifft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *, out=None) -> Tensor:
    """``ifftn`` over two dims (default the last two)."""
    return _fftn("ifft2", input, _ints(s), _ints(dim), norm, False, out)


@register(module=False, submodule="fft")
@schema("fft_rfft2" + _SIG2)
def rfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *, out=None) -> Tensor:
    """``rfftn`` over two dims (default the last two)."""
    return _rfftn("rfft2", input, _ints(s), _ints(dim), norm, out)


@register(module=False, submodule="fft")
@schema("fft_irfft2" + _SIG2)
def irfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *, out=None) -> Tensor:
    """``irfftn`` over two dims (default the last two)."""
    return _irfftn("irfft2", input, _ints(s), _ints(dim), norm, out)


@register(module=False, submodule="fft")
@schema("fft_hfft2" + _SIG2)
def hfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *, out=None) -> Tensor:
    """``hfftn`` over two dims (default the last two)."""
    return _hfftn("hfft2", input, _ints(s), _ints(dim), norm, out)


@register(module=False, submodule="fft")
@schema("fft_ihfft2" + _SIG2)
def ihfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *, out=None) -> Tensor:
    """``ihfftn`` over two dims (default the last two)."""
    return _ihfftn("ihfft2", input, _ints(s), _ints(dim), norm, out)


def _ints(v):
    """An ``int[1]?`` argument as a list (an int is a list of one)."""
    if v is None:
        return None
    return [int(v)] if not isinstance(v, (tuple, list)) else [int(i) for i in v]


# ----- frequencies and shifts ---------------------------------------------------------------------------------

def _freq_dtype(dtype, fname: str) -> D.dtype:
    dt = D.get_default_dtype() if dtype is None else dtype
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"{fname} requires a floating point or complex dtype")
    if dt.is_complex:
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{_word(dt)}'")
    return dt


@register(module=False, submodule="fft")
@schema("fft_fftfreq(int n, float d, *, out, ScalarType? dtype, layout, device, pin_memory, "
        "bool requires_grad)")
def fftfreq(n: int, d: float = 1.0, *, out=None, dtype=None, layout=None, device=None, pin_memory=False,
            requires_grad: bool = False) -> Tensor:
    """The sample frequencies of an ``n``-point transform with sample spacing ``d``: 0, 1, ..., -(n // 2), ...,
    -1, over n d."""
    from .creation import arange
    from .shape import cat
    dt = _freq_dtype(dtype, "fftfreq")
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    # PyTorch: arange, then the right half overwritten with arange(-(n // 2), 0), then times 1 / (n d)
    r = cat([arange((n + 1) // 2, dtype=dt, device=device), arange(-(n // 2), 0, dtype=dt, device=device)])
    r = (r * _reciprocal(n * d)).detach() if n else r
    return _freq_result(r, out, requires_grad)


@register(module=False, submodule="fft")
@schema("fft_rfftfreq(int n, float d, *, out, ScalarType? dtype, layout, device, pin_memory, "
        "bool requires_grad)")
def rfftfreq(n: int, d: float = 1.0, *, out=None, dtype=None, layout=None, device=None, pin_memory=False,
             requires_grad: bool = False) -> Tensor:
    """The non-negative sample frequencies of an ``n``-point real transform: 0, 1, ..., n // 2, over n d."""
    from .creation import arange
    dt = _freq_dtype(dtype, "rfftfreq")
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n // 2 + 1}: [{n // 2 + 1}]")
    r = arange(n // 2 + 1, dtype=dt, device=device) * _reciprocal(n * d)
    return _freq_result(r, out, requires_grad)


def _reciprocal(x: float) -> float:
    """1 / x as C++ computes it (PyTorch's 1.0 / (n * d)): a zero spacing gives an infinity, not an error."""
    return 1.0 / x if x else math.copysign(math.inf, x)


def _freq_result(r: Tensor, out, requires_grad: bool) -> Tensor:
    if out is not None:
        return _out("fftfreq", out, r, out.dtype.is_complex, ())
    return r._set_requires_grad(True) if requires_grad else r


def _shift(input: Tensor, dim, inverse: bool) -> Tensor:
    nd = input.ndim
    dims = list(range(nd)) if dim is None else [_wrap(int(d), nd) for d in _ints(dim)]
    if not dims:
        raise RuntimeError("`shifts` required")
    shifts = [(input.shape[d] + 1) // 2 if inverse else input.shape[d] // 2 for d in dims]
    return roll(input, shifts, dims)


@register(module=False, submodule="fft")
@schema("fft_fftshift(Tensor input, int[1]? dim)")
def fftshift(input: Tensor, dim=None) -> Tensor:
    """The zero frequency moved to the centre of ``dim`` (default all): a roll by size // 2."""
    return _shift(input, dim, False)


@register(module=False, submodule="fft")
@schema("fft_ifftshift(Tensor input, int[1]? dim)")
def ifftshift(input: Tensor, dim=None) -> Tensor:
    """The inverse of ``fftshift``: a roll by (size + 1) // 2."""
    return _shift(input, dim, True)


# ----- short-time Fourier transform ---------------------------------------------------------------------------

_LEGACY = ("Double", "Float", "Half", "Long", "Int", "Short", "Char", "Byte", "Bool", "BFloat16")


def _type_string(t: Tensor) -> str:
    """PyTorch's Tensor::toString() of a CPU tensor: 'torch.DoubleTensor'; complex ones 'CPUComplexDoubleType'."""
    w = _word(t.dtype)
    return f"torch.{w}Tensor" if w in _LEGACY else f"CPU{w}Type"


def _opt(v) -> str:
    return "None" if v is None else str(int(v)) if isinstance(v, bool) else str(v)


def _window_repr(window) -> str:
    return "None" if window is None else f"{_type_string(window)}{{{list(window.shape)}}}"


@register(method=True)
def stft(input: Tensor, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
         window: Tensor | None = None, center: bool = True, pad_mode: str = "reflect", normalized: bool = False,
         onesided: bool | None = None, return_complex: bool | None = None,
         align_to_window: bool | None = None) -> Tensor:
    """The short-time Fourier transform: ``input`` (1-D or batch x time) cut into frames of ``n_fft`` every
    ``hop_length`` (default n_fft // 4), each multiplied by ``window`` (zero-padded to n_fft at its centre) and
    transformed; result (batch x) frequencies x frames. ``center`` pads n_fft // 2 on both sides first
    (``pad_mode``). Real signals need ``return_complex`` (True; False, deprecated, gives view_as_real of it)."""
    from .nn_pad import pad
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    if center:   # torch.functional.stft's Python part
        signal_dim = input.dim()
        extended = [1] * (3 - signal_dim) + list(input.shape)
        p = int(n_fft // 2)
        input = pad(input.view(extended), [p, p], pad_mode)
        input = input.view(input.shape[-signal_dim:])
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied,which is known to cause "
                      "spectral leakage. Other windows such as torch.hann_window or torch.hamming_window are "
                      "recommended to reduce spectral leakage.To suppress this warning and use a rectangular window, "
                      "explicitly set `window=torch.ones(n_fft, device=<device>)`.", UserWarning, stacklevel=2)
    hop = n_fft >> 2 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length

    def fail(what):
        raise RuntimeError(f"stft({_type_string(input)}{list(input.shape)}, n_fft={n_fft}, hop_length={hop}, "
                           f"win_length={win}, window={_window_repr(window)}, normalized={int(normalized)}, "
                           f"onesided={_opt(onesided)}, return_complex={_opt(return_complex)}, "
                           f"align_to_window={_opt(align_to_window)}) {what}")

    complex_out = return_complex if return_complex is not None else (
        input.dtype.is_complex or (window is not None and window.dtype.is_complex))
    if not complex_out:
        if return_complex is None:
            raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will further "
                               "require that return_complex=True in a future PyTorch release.")
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch release, stft will return "
                      "complex tensors for all inputs, and return_complex=False will raise an error.\nNote: you can "
                      "still call torch.view_as_real on the complex output to recover the old return format.",
                      UserWarning, stacklevel=2)
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        fail(": expected a tensor of floating point or complex values")
    for t in (input, window):
        if t is not None and t.dtype in (D.float16, D.bfloat16):   # PyTorch's CPU FFT has no half types
            raise RuntimeError(f"MKL FFT doesn't support tensors of type: {_word(t.dtype)}")
    if input.dim() not in (1, 2):
        fail(": expected a 1D or 2D tensor")
    x = input.unsqueeze(0) if input.dim() == 1 else input
    length = x.shape[1]
    if n_fft <= 0 or n_fft > length:
        fail(f": expected 0 < n_fft < {length}, but got n_fft={win}")
    if hop <= 0:
        fail(f": expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        fail(f": expected 0 < win_length <= n_fft, but got win_length={win}")
    if window is not None and (window.dim() != 1 or window.shape[0] != win):
        fail(f": expected a 1D window tensor of size equal to win_length={win}, but got window with size "
             f"{list(window.shape)}")
    w = window
    if win < n_fft:   # the window at the centre of n_fft
        left = (n_fft - win) // 2
        w = x.new_ones(win) if w is None else w
        w = apply(constant_pad_p, (w,), {"pads": ((left, n_fft - win - left),), "value": 0})
    if align_to_window:
        n_frames = 1 + (length - win) // hop
        half = (n_fft - win) // 2
        x = pad(x, [half, half])
    else:
        n_frames = 1 + (length - n_fft) // hop
    frames = x.unfold(1, n_fft, hop)      # (batch, frames, n_fft): PyTorch's as_strided view
    if frames.shape[1] != n_frames:
        frames = narrow(frames, 1, 0, n_frames)
    if w is not None:
        frames = frames * w
    complex_fft = frames.dtype.is_complex
    sided = (not complex_fft) if onesided is None else onesided
    mode = 1 if normalized else 0
    if complex_fft:
        if sided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        out = _c2c(frames, (2,), mode, True)
    else:
        out = _r2c(frames, (2,), mode, sided)
    out = out.transpose(1, 2)
    if input.dim() == 1:
        out = out.squeeze(0)
    return out if complex_out else view_as_real(out)


@register(method=True)
@schema("istft(Tensor input, int n_fft, int? hop_length, int? win_length, Tensor? window, bool center, "
        "bool normalized, bool? onesided, int? length, bool return_complex)")
def istft(input: Tensor, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
          window: Tensor | None = None, center: bool = True, normalized: bool = False, onesided: bool | None = None,
          length: int | None = None, return_complex: bool = False) -> Tensor:
    """The inverse of ``stft``: each frame transformed back, windowed and overlap-added, divided by the overlap-added
    squared window (the least-squares estimate); ``length`` trims or zero-pads the result."""
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied.Please provide the same window "
                      "used by stft to make the inversion lossless.To suppress this warning and use a rectangular "
                      "window, explicitly set `window=torch.ones(n_fft, device=<device>)`.", UserWarning, stacklevel=2)
    hop = n_fft >> 2 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length

    def fail(what, sep=" "):
        raise RuntimeError(f"istft({_type_string(input)}{list(input.shape)}, n_fft={n_fft}, hop_length={hop}, "
                           f"win_length={win}, window={_window_repr(window)}, center={int(center)}, "
                           f"normalized={int(normalized)}, onesided={_opt(onesided)}, length={_opt(length)}, "
                           f"return_complex={int(return_complex)}){sep}{what}")

    if not input.dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                           "return_complex=True.")
    ndim = input.dim() + 1          # PyTorch counts the dims of view_as_real(input)
    if input.numel() == 0:
        fail(": input tensor cannot be empty.")
    if ndim not in (3, 4):
        fail(f": expected a tensor with 3 or 4 dimensions, but got {ndim}")
    n_frames, fft_size = input.shape[-1], input.shape[-2]
    expected = n_fft + hop * (n_frames - 1)
    sided = fft_size != n_fft if onesided is None else onesided
    if sided and n_fft // 2 + 1 != fft_size:
        fail(": expected the frequency dimension (3rd to the last) of the input tensor to match n_fft / 2 + 1 when "
             f"onesided=True, but got {fft_size}")
    if not sided and n_fft != fft_size:
        fail(": expected the frequency dimension (3rd to the last) of the input tensor to match n_fft when "
             f"onesided=False, but got {fft_size}")
    if not (0 < hop <= win):
        fail(": expected 0 < hop_length <= win_length")
    if not (0 < win <= n_fft):
        fail(": expected 0 < win_length <= n_fft")
    if window is not None and (window.dim() != 1 or window.shape[0] != win):
        fail(": Invalid window shape. window has to be 1D and length of `win_length`")
    w = window if window is not None else input.real.new_ones(win)
    if win != n_fft:
        left = (n_fft - win) // 2
        w = apply(constant_pad_p, (w,), {"pads": ((left, n_fft - win - left),), "value": 0})
    z = input.unsqueeze(0) if ndim == 3 else input
    z = z.transpose(1, 2)                                   # (channel, frames, frequencies)
    mode = 1 if normalized else 2
    if return_complex:
        if sided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        y = _c2c(z, (2,), mode, False)
    else:
        if window is not None and window.dtype.is_complex:
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not sided:
            z = narrow(z, -1, 0, n_fft // 2 + 1)
        y = _c2r(z, (2,), mode, n_fft)
    y = y * w.view(1, 1, n_fft)
    channels = y.shape[0]
    y = apply(unfold_backward_p, (y,), {"shape": (channels, expected), "dimension": 1, "size": n_fft, "step": hop})
    env = apply(unfold_backward_p, ((w * w).expand(1, n_frames, n_fft),),
                {"shape": (1, expected), "dimension": 1, "size": n_fft, "step": hop})
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else (-(n_fft // 2) if center else expected)
    y, env = y[:, start:end], env[:, start:end]
    if bool(env.abs().min() < 1e-11):
        fail("window overlap add min: 1\n[ CPUBoolType{} ]")
    y = y / env
    if ndim == 3:
        y = y.squeeze(0)
    if end > expected:
        warnings.warn("The length of signal is shorter than the length parameter. Result is being padded with zeros "
                      "in the tail. Please check your center and hop_length settings.", UserWarning, stacklevel=2)
        y = apply(constant_pad_p, (y,), {"pads": ((0, 0),) * (y.dim() - 1) + ((0, end - expected),), "value": 0})
    return y


# ----- vmap -------------------------------------------------------------------------------------------------
_batching.by_name(_batching.dims_rule("dim"), "fft_c2c", "fft_r2c", "fft_c2r")
