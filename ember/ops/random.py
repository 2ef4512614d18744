"""Random numbers: PyTorch's CPU generator (torch.Generator) and the sampling functions, draw for draw.

``ember.manual_seed(s)`` followed by the same calls gives the very numbers PyTorch 2.13 gives on an
x86-64 CPU with AVX2 (the common build). The stream itself (mt19937, with PyTorch's state) and the
transforms from raw words to samples are the generator's device kernels (``backend.random``: for the CPU,
``ember/devices/cpu/random.py``, which describes them); this module holds the Generator and its state in
PyTorch's byte layout, the public functions, their argument checks, and the Tensor-level glue: samples come
back as host arrays in PyTorch's fill order and are written into a tensor through its device's backend.
"""
from __future__ import annotations

from ..autograd import _batching

import contextlib
import functools
import math
import os
import struct
import sys
import types
import warnings

from .. import _dtype as D
from .._device import backend_of, check_device, cpu, has_data, quietly
from .._tensor import Tensor, _sizes_from_args, make
from .._util import F8_CHARS, broadcast_shape, check_tensor, refuse_shell
from ..autograd import _primitive as P
from ..autograd import _profiling
from ..autograd import _views as V
from ._registry import method as _register_method
from .creation import _check_input, _finish, device_backend, empty_like

# The generator's device (the CPU, as PyTorch's default generator): its random stream and samplers.
_RNG = device_backend().random

_N = 624                    # mt19937 state words
_DEFAULT_SEED = 67280421310721   # what torch.Generator() starts from
_STATE_BYTES = 5056         # sizeof(CPUGeneratorImplState) in PyTorch: get_rng_state()'s length
_KEY = struct.Struct(f"={_N}Q")   # the state words as PyTorch stores them (uint64 each)


class Generator:
    """A CPU random generator with PyTorch's algorithm and state (mt19937 + a cached normal sample)."""

    def __init__(self, device="cpu") -> None:
        kind = getattr(device, "type", device.partition(":")[0] if isinstance(device, str) else None)
        if kind == "cuda":   # a CPU-only PyTorch's errors (ember has only the NumPy generator)
            raise RuntimeError("Cannot get CUDA generator without ATen_cuda library (ember has no CUDA backend)")
        if kind == "mps":
            raise RuntimeError("Cannot execute getNewGenerator() without MPS backend.")
        check_device(device)
        self._seed = _DEFAULT_SEED
        self._state = None    # the device's stream state (_RNG.State), made from the seed on first use

    def __repr__(self) -> str:
        return f"<torch._C.Generator object at {hex(id(self))}>"

    @property
    def device(self):
        return cpu

    # ----- seeding and state ---------------------------------------------------------------------
    def manual_seed(self, seed) -> Generator:
        """Seed with ``seed`` (an int; negative values wrap to 64 bits, as in PyTorch)."""
        seed = _check_seed(seed)
        self._seed = seed
        self._state = None
        return self

    def seed(self) -> int:
        """Seed from the OS's entropy; returns the seed."""
        s = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._seed

    def _st(self):
        """The stream state (seeded on first use: init_genrand costs a Python loop)."""
        st = self._state
        if st is None:
            st = self._state = _RNG.State(_RNG.mt_key(self._seed))
        return st

    def _words(self, n: int):
        """``n`` consecutive 32-bit draws, PyTorch's ``random()`` (RandomSampler skips draws with it)."""
        return self._st().words(n)

    def get_state(self) -> Tensor:
        """The state as a 5056-byte uint8 tensor, in PyTorch's byte layout (round-trips with torch)."""
        st = self._st()
        key, pos = st.key_pos()
        buf = bytearray(_STATE_BYTES)
        left = _N + 1 - pos
        nxt = 0 if (st.fresh and pos == _N) else pos
        struct.pack_into("=QiiQ", buf, 0, self._seed, left, 1, nxt)
        _KEY.pack_into(buf, 24, *key)
        if st.normal_double is not None:
            struct.pack_into("=d", buf, 5024, st.normal_double)
            struct.pack_into("=i", buf, 5040, 1)
        if st.normal_float is not None:
            struct.pack_into("=f", buf, 5048, st.normal_float)
            buf[5052] = 1
        be = device_backend()
        return make(be.copy(be.frombuffer(bytes(buf), D.uint8.np)))

    def set_state(self, new_state: Tensor) -> Generator:
        """Restore a state from get_state() (this library's or PyTorch's)."""
        raw = _state_bytes(new_state)
        if len(raw) != _STATE_BYTES:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {_STATE_BYTES} but found the input RNG "
                               f"state size to be {len(raw)}")
        seed, left, seeded, nxt = struct.unpack_from("=QiiQ", raw, 0)
        nxt &= 0xFFFFFFFF
        if not (seeded != 0 and 0 < left <= _N and nxt <= _N):
            raise RuntimeError("Invalid mt19937 state")
        key = [w & 0xFFFFFFFF for w in _KEY.unpack_from(raw, 24)]   # PyTorch keeps the low 32 bits
        nd_valid = struct.unpack_from("=i", raw, 5040)[0]
        self._seed = seed
        # left == 1: the next draw regenerates the words (NumPy: pos 624); else it reads word `next`.
        self._state = _RNG.State(
            key, _N if left == 1 else nxt, left == 1 and nxt == 0,
            struct.unpack_from("=d", raw, 5024)[0] if nd_valid else None,
            struct.unpack_from("=f", raw, 5048)[0] if raw[5052] else None)
        return self

    def clone_state(self) -> Generator:
        g = Generator()
        g.set_state(self.get_state())
        return g


def _check_seed(seed) -> int:
    if isinstance(seed, Tensor):
        seed = seed.item()
    seed = int(seed)
    if not -(1 << 63) <= seed < (1 << 64):
        raise ValueError("Overflow when unpacking long long")
    return seed & 0xFFFFFFFFFFFFFFFF


def _state_bytes(t) -> bytes:
    """A uint8 state tensor's bytes (ember's, or PyTorch's for states from PyTorch)."""
    if isinstance(t, Tensor):
        if t.dtype is not D.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        return backend_of(t._data).to_bytes(t._data)
    if hasattr(t, "numpy") and hasattr(t, "dtype"):   # a torch.ByteTensor: to the host, as PyTorch's
        arr = t.detach().cpu().numpy()
        if arr.dtype != D.uint8.np:
            raise TypeError("RNG state must be a torch.ByteTensor")
        return arr.tobytes()
    raise TypeError("RNG state must be a torch.ByteTensor")


class _DefaultGenerator(Generator):
    """The global generator: seeded from the OS's entropy at start, as PyTorch's (lazily, to stay cheap)."""

    def __init__(self) -> None:
        super().__init__()
        self._seed = None

    def __getattribute__(self, name):
        if name == "_seed" and object.__getattribute__(self, "__dict__").get("_seed", 0) is None:
            object.__setattr__(self, "_seed", int.from_bytes(os.urandom(8), "little"))
        return object.__getattribute__(self, name)


default_generator = _DefaultGenerator()


def _gen(generator) -> Generator:
    if generator is None:
        return default_generator
    if not isinstance(generator, Generator):
        raise TypeError(f"expected a torch.Generator, got {type(generator).__name__}")
    return generator


def manual_seed(seed) -> Generator:
    """Seed the default generator (``torch.manual_seed``); returns it."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Seed the default generator nondeterministically; returns the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    return default_generator.get_state()


def set_rng_state(new_state: Tensor) -> None:
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled: bool = True, _caller: str = "fork_rng", _devices_kw: str = "devices",
             device_type: str = "cuda"):
    """Restore the CPU generator's state when the block exits (``torch.random.fork_rng``)."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


# ----- argument checks -----------------------------------------------------------------------------------

class _BFloat16Pack:
    """struct.Struct's pack/unpack for bfloat16, which struct lacks: c10::BFloat16 is made from a float (a double
    is rounded to float first), rounded to nearest even on its top 16 bits."""
    _f = struct.Struct("=f")
    _u = struct.Struct("=I")

    def pack(self, v: float) -> bytes:
        u = self._u.unpack(self._f.pack(v))[0]   # OverflowError beyond float's range, as struct's own
        if u & 0x7F800000 != 0x7F800000:   # finite
            u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
        return self._u.pack(u)

    def unpack(self, b: bytes) -> tuple:
        return self._f.unpack(b)


_FLOAT_DIGITS = {D.float16: 11, D.float32: 24, D.float64: 53, D.bfloat16: 8}
_PACK = {D.float16: struct.Struct("=e"), D.float32: struct.Struct("=f"), D.float64: struct.Struct("=d"),
         D.bfloat16: _BFloat16Pack()}


def _int_bounds(dt: D.dtype) -> tuple:
    if dt is D.bool:
        return 0, 1
    if dt.is_floating_point:
        info = D.finfo(dt)
        return info.min, info.max
    info = D.iinfo(dt)
    return info.min, info.max


def _update_from(frm: int, dt: D.dtype) -> int:
    """Move ``from`` right to the first integer that stays >= from after the cast to the float type."""
    digits = _FLOAT_DIGITS[dt]
    fp1 = _cast_scalar(frm + 1, dt)
    if fp1 < frm:
        n = (abs(frm + 1)).bit_length() - 1
        frm = fp1 + (1 << (n - digits + 1))
    return frm


def _update_to(to: int, dt: D.dtype) -> int:
    digits = _FLOAT_DIGITS[dt]
    tm1 = _cast_scalar(to - 1, dt)
    if tm1 >= to:
        n = (abs(to - 1)).bit_length() - 1
        to = tm1 - (1 << (n - digits + 1))
    return to


def _cast_scalar(v: int, dt: D.dtype) -> int:
    """static_cast<int64_t>(static_cast<float type>(v)); ``v`` itself where the float type overflows."""
    pack = _PACK[dt]
    try:
        f = pack.unpack(pack.pack(float(v)))[0]   # rounded to the nearest, ties to even
    except OverflowError:
        return v
    return int(f) if math.isfinite(f) else v


def _check_from_to(frm: int, to_inc: int, dt: D.dtype) -> None:
    lo, hi = _int_bounds(dt)
    name = D.c_type_name(dt.np)
    if not lo <= frm <= hi:
        raise RuntimeError(f"from is out of bounds for {name}")
    if not lo <= to_inc <= hi:
        raise RuntimeError(f"to - 1 is out of bounds for {name}")
    if dt.is_floating_point:
        digits = _FLOAT_DIGITS[dt]
        for var, what in ((frm, "from"), (to_inc, "to - 1")):
            if var < -(1 << digits) or var > (1 << digits):
                warnings.warn(f"{what} is out of bounds [-(2^{digits}), 2^{digits}]. Due to precision limitations "
                              f"{name} can support discrete uniform distribution only within this range. This "
                              "warning will become an error in version 1.7 release, please fix the code in advance",
                              UserWarning, stacklevel=4)


def _random_range(dt: D.dtype, frm: int, to) -> tuple[int, int | None]:
    """Check and adjust (from, to) as PyTorch's random_from_to_impl; returns (from, to exclusive)."""
    if to is not None:
        if frm >= to:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={frm} >= to={to}")
        if dt.is_floating_point:
            frm = _update_from(frm, dt)
            to = _update_to(to, dt)
            if frm >= to:
                raise RuntimeError("random_ expects 'from' casted to dtype to be less than 'to' casted to dtype, "
                                   f"but got from={frm} >= to={to}")
        _check_from_to(frm, to - 1, dt)
        return frm, to
    if frm == -(1 << 63):
        return frm, None
    if dt.is_floating_point:
        to_inc = 1 << _FLOAT_DIGITS[dt]
        frm = _update_from(frm, dt)
        if frm >= to_inc:
            raise RuntimeError("random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' casted "
                               f"to dtype, but got from={frm} > to_inc={to_inc}")
    else:
        to_inc = _int_bounds(dt)[1]
    _check_from_to(frm, to_inc, dt)
    return frm, to_inc + 1


def _random_values(gen: Generator, n: int, dt: D.dtype, frm, to):
    """Samples of ``random_(from, to)`` (host array): ``frm is None`` means random_() without bounds."""
    if frm is not None and to is None and dt not in (D.int64, D.float64, D.float32):
        raise RuntimeError("random_full_64_bits_range_kernel_cpu handles only int64, double, float and bfloat16")
    return _RNG.random(gen._st(), n, dt.np, frm, to)


def _float_dtype(dtype, kernel: str) -> D.dtype:
    """A sampler's dtype: floating or complex (sampled through its real view, as PyTorch's)."""
    dt = D._default_float if dtype is None else _as_dtype(dtype)
    if not (dt.is_floating_point or dt.is_complex):
        raise NotImplementedError(f'"{kernel}" not implemented for \'{D.type_word(dt.np)}\'')
    refuse_shell(dt, kernel)
    return dt


def _no_complex(dt: D.dtype, kernel: str) -> None:
    """The samplers PyTorch has no complex kernel for (integers, bernoulli, geometric, log-normal)."""
    if dt.is_complex:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{D.type_word(dt.np)}\'')


_RANDOM_BOUNDS = "check_random_bounds handles only integral, floating-point and boolean types"


def _as_dtype(dtype) -> D.dtype:
    if not isinstance(dtype, D.dtype):
        raise TypeError(f"dtype must be an ember dtype (e.g. torch.float32), not {type(dtype).__name__}")
    return dtype


def _size(size, kw) -> tuple:
    if kw is not None:
        if size:
            raise TypeError("got multiple values for argument 'size'")
        size = (kw,)
    if not size:
        raise TypeError("missing 1 required positional arguments: \"size\"")
    return _sizes_from_args(size)


def _num(v) -> str:
    """A number as C++'s ostream prints a double (PyTorch's error messages): 1, 2.5, 1e+20."""
    v = float(v)
    s = f"{v:.6g}"
    if "e" in s:
        m, e = s.split("e")
        s = f"{m}e{e[0]}{e[1:].lstrip('0').rjust(2, '0')}"
    return s


# ----- tensors: results, out=, in-place fills ----------------------------------------------------------------

def _out(out, data) -> Tensor:
    """Write ``data`` (host samples) into the ``out=`` tensor (resized if its shape differs), as PyTorch's out
    variants."""
    be = backend_of(out._data)
    if out._data.shape != data.shape:
        out._data = be.zeros(data.shape, out._data.dtype)
    be.copyto(out._data, data)
    out._vc[0] += 1
    return out


def _no_data(device) -> bool:
    """Whether the creation argument ``device`` names a device without data ('meta'): nothing is drawn for it,
    and PyTorch's generator does not move either."""
    return device is not None and not has_data(device_backend(check_device(device, creation=True)))


def _shaped(shape, dt: D.dtype, requires_grad: bool, device) -> Tensor:
    """A new tensor of ``shape`` and ``dt`` on a device without data."""
    return _finish(device_backend(check_device(device)).zeros(shape, dt.np), requires_grad, device)


def _fill(fn):
    """An in-place random fill. On a tensor without data ('meta') it draws and checks nothing, as PyTorch's meta
    kernels: the version moves, the generator does not."""
    @functools.wraps(fn)
    def fill(self, *args, **kwargs):
        if not has_data(backend_of(self._data)):
            V.check_inplace(self, False)
            self._vc[0] += 1
            return self
        return fn(self, *args, **kwargs)
    return fill


def _result(data, requires_grad: bool = False, device=None) -> Tensor:
    """A new tensor of host samples ``data`` on the generator's device (the CPU)."""
    return _finish(device_backend().asarray(data), requires_grad, device)


def _host(t: Tensor):
    """``t``'s data as a host array (no copy on the CPU): the generator's kernels read layouts and weights there."""
    return backend_of(t._data).to_numpy(t._data)


def _laid_out(self: Tensor, values):
    """``self``'s new content: host samples ``values`` laid out in PyTorch's fill order for self's layout."""
    return _RNG.write(_host(self), values)


def _inplace(self: Tensor, values, node_name: str, others: tuple = ()) -> Tensor:
    """Overwrite ``self`` with ``values`` (already in self's layout) as PyTorch's in-place random ops:
    a leaf that requires grad refuses, the version counter moves, and under autograd the op is recorded
    as a node whose gradient is zero."""
    be = backend_of(self._data)
    values = be.asarray(values)   # onto self's device
    recording = P._state.enabled and (self._requires_grad or any(o._requires_grad for o in others))
    if recording or self._fw_grad is not None:
        prim = _fill_prim(node_name, len(others))
        return V.apply_inplace(prim, self, others, {"value": values})
    V.check_inplace(self, False)
    be.copyto(self._data, values)
    self._vc[0] += 1
    return self


_PRIMS: dict = {}


def _zero(xp, g, *_a, **_k):
    # a zero gradient (PyTorch gives zeros, not None, to the inputs of random ops); sum_to fits the shape
    return xp.zeros_like(g)


_RANDOM_RECORD = ("records a random function's draw (its value a parameter): vmap's randomness modes handle the public "
                  "random functions, which apply it to physical tensors")


def _fill_prim(node_name: str, n_others: int = 0):
    """A primitive that replaces its first input by ``value``: PyTorch's NormalBackward0 & co, zero gradients."""
    key = (node_name, n_others)
    prim = _PRIMS.get(key)
    if prim is None:
        n = 1 + n_others
        prim = _PRIMS[key] = P.defprim(
            "random_fill", lambda xp, a, *rest, value: xp.fill_index(a, Ellipsis, value),
            node=node_name, vjp=(_zero,) * n if n > 1 else _zero, jvp=(_zero,) * n if n > 1 else _zero)
        _batching.batching("fallback", prim, why=_RANDOM_RECORD)
    return prim


def _make_prim(node_name: str, n_in: int):
    """A primitive whose output is ``value`` and whose inputs get zero gradient (normal(mean, std) & co)."""
    key = ("make", node_name, n_in)
    prim = _PRIMS.get(key)
    if prim is None:
        prim = _PRIMS[key] = P.defprim("random_sample", lambda xp, *ins, value: value,
                                       node=node_name, vjp=(_zero,) * n_in if n_in > 1 else _zero,
                                       jvp=(_zero,) * n_in if n_in > 1 else _zero)
        _batching.batching("fallback", prim, why=_RANDOM_RECORD)
    return prim


def _sampled(inputs: tuple, value, node_name: str) -> Tensor:
    """A new tensor ``value`` (on the inputs' device) computed from ``inputs``, recorded (zero gradient) if any
    requires grad."""
    if P._state.enabled and any(isinstance(t, Tensor) and t._requires_grad for t in inputs):
        return P.apply(_make_prim(node_name, len(inputs)), inputs, {"value": value})
    return make(value)


def _float_self(self: Tensor, kernel: str) -> D.dtype:
    dt = self.dtype
    if not (dt.is_floating_point or dt.is_complex):
        raise NotImplementedError(f'"{kernel}" not implemented for \'{D.type_word(dt.np)}\'')
    return dt


# ----- creation ------------------------------------------------------------------------------------------

def rand(*size, generator: Generator | None = None, dtype=None, layout=None, device=None,
         requires_grad: bool = False, pin_memory: bool = False, out=None, **kw) -> Tensor:
    """Uniform samples in [0, 1) (PyTorch's stream)."""
    shape = _size(size, kw.pop("size", None))
    dt = _float_dtype(dtype if out is None or dtype is not None else out.dtype, "check_uniform_bounds")
    if out is None and _no_data(device):
        return _shaped(shape, dt, requires_grad, device)
    data = _RNG.uniform(_gen(generator)._st(), math.prod(shape), dt.np, 0.0, 1.0).reshape(shape)
    return _result(data, requires_grad, device) if out is None else _out(out, data)


def randn(*size, generator: Generator | None = None, dtype=None, layout=None, device=None,
          requires_grad: bool = False, pin_memory: bool = False, out=None, **kw) -> Tensor:
    """Standard normal samples (PyTorch's stream)."""
    shape = _size(size, kw.pop("size", None))
    dt = _float_dtype(dtype if out is None or dtype is not None else out.dtype, "normal_kernel_cpu")
    if out is None and _no_data(device):
        return _shaped(shape, dt, requires_grad, device)
    data = _RNG.normal(_gen(generator)._st(), math.prod(shape), dt.np, 0.0, 1.0).reshape(shape)
    return _result(data, requires_grad, device) if out is None else _out(out, data)


def _randint_args(args, kw):
    low = kw.pop("low", None)
    high = kw.pop("high", None)
    size = kw.pop("size", None)
    args = list(args)
    if size is None and args and isinstance(args[-1], (tuple, list)) or (size is None and args and
                                                                         type(args[-1]).__name__ == "Size"):
        size = args.pop()
    if len(args) == 2:
        low, high = args
    elif len(args) == 1:
        if high is None:
            high = args[0]
        else:
            low = args[0]
    elif len(args) > 2:
        raise TypeError("randint() takes at most 3 positional arguments")
    if high is None:
        raise TypeError("randint() missing required argument 'high'")
    if size is None:
        raise TypeError("randint() missing required argument 'size'")
    return (0 if low is None else int(low)), int(high), size


def randint(*args, generator: Generator | None = None, dtype=None, layout=None, device=None,
            requires_grad: bool = False, pin_memory: bool = False, out=None, **kw) -> Tensor:
    """``randint(high, size)`` / ``randint(low, high, size)``: integers in [low, high)."""
    low, high, size = _randint_args(args, kw)
    shape = _sizes_from_args((tuple(size),))
    dt = D.int64 if dtype is None else _as_dtype(dtype)
    if dt.is_complex:
        raise RuntimeError(_RANDOM_BOUNDS)
    refuse_shell(dt, "random_update_from_to", F8_CHARS)
    frm, to = _random_range(dt, low, high)
    if out is None and _no_data(device):
        return _shaped(shape, dt, requires_grad, device)
    data = _random_values(_gen(generator), math.prod(shape), dt, frm, to).reshape(shape)
    return _result(data, requires_grad, device) if out is None else _out(out, data)


def _laid_out_like(input: Tensor, dtype, device):
    """For a non-contiguous ``input`` (a transposed or expanded one), an empty tensor laid out as PyTorch's
    like-functions lay it out, which they fill in memory order; None for a contiguous one (drawn as by its shape)."""
    if device is not None or input.is_contiguous():
        return None
    return empty_like(input, dtype=dtype or input.dtype)


def _drawn(t: Tensor, requires_grad: bool) -> Tensor:
    return t.requires_grad_() if requires_grad else t


def rand_like(input: Tensor, *, generator: Generator | None = None, dtype=None, layout=None, device=None,
              requires_grad: bool = False, memory_format=None) -> Tensor:
    _check_input(input, "rand_like")
    laid = _laid_out_like(input, dtype, device)
    if laid is not None:
        return _drawn(laid.uniform_(generator=generator), requires_grad)
    return rand(input._data.shape, generator=generator, dtype=dtype or input.dtype,
                device=input.device if device is None else device, requires_grad=requires_grad)


def randn_like(input: Tensor, *, generator: Generator | None = None, dtype=None, layout=None, device=None,
               requires_grad: bool = False, memory_format=None) -> Tensor:
    _check_input(input, "randn_like")
    laid = _laid_out_like(input, dtype, device)
    if laid is not None:
        return _drawn(laid.normal_(generator=generator), requires_grad)
    return randn(input._data.shape, generator=generator, dtype=dtype or input.dtype,
                 device=input.device if device is None else device, requires_grad=requires_grad)


def randint_like(input: Tensor, *args, generator: Generator | None = None, dtype=None, layout=None,
                 device=None, requires_grad: bool = False, memory_format=None, **kw) -> Tensor:
    """``randint_like(input, high)`` / ``randint_like(input, low, high)``."""
    _check_input(input, "randint_like")
    low, high, _ = _randint_args(args + (input._data.shape,), kw)
    laid = _laid_out_like(input, dtype, device)
    if laid is not None:
        return _drawn(laid.random_(low, high, generator=generator), requires_grad)
    return randint(low, high, input._data.shape, generator=generator, dtype=dtype or input.dtype,
                   device=input.device if device is None else device, requires_grad=requires_grad)


def randperm(n: int, *, generator: Generator | None = None, dtype=None, layout=None, device=None,
             requires_grad: bool = False, pin_memory: bool = False, out=None) -> Tensor:
    """A random permutation of 0..n-1 (PyTorch's Fisher-Yates)."""
    n = int(n)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    dt = D.int64 if dtype is None else _as_dtype(dtype)
    _no_complex(dt, "randperm")
    refuse_shell(dt, "randperm")
    if dt.is_floating_point:
        limit = (1 << _FLOAT_DIGITS[dt]) + 1
        if n > limit:
            raise RuntimeError(f"n cannot be greater than {limit} for {D.type_word(dt.np)} type.")
    elif dt is not D.bool and n > D.iinfo(dt).max + 1:
        raise RuntimeError(f"n cannot be greater than {D.iinfo(dt).max + 1} for {D.type_word(dt.np)} type.")
    if out is None and _no_data(device):
        return _shaped((n,), dt, requires_grad, device)
    data = _RNG.randperm(_gen(generator)._st(), n, dt.np)
    return _result(data, requires_grad, device) if out is None else _out(out, data)


# ----- in-place fills --------------------------------------------------------------------------------------

@_fill
def uniform_(self: Tensor, from_: float = 0, to: float = 1, *, generator: Generator | None = None, **kw) -> Tensor:
    """Fill with uniform samples in [from, to)."""
    from_ = kw.pop("from", from_)
    dt = _float_self(self, "check_uniform_bounds")
    lo, hi = _int_bounds(dt.to_real())
    name = D.c_type_name(dt.np)
    if not lo <= from_ <= hi:
        raise RuntimeError(f"from is out of bounds for {name}")
    if not lo <= to <= hi:
        raise RuntimeError(f"to is out of bounds for {name}")
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={_num(from_)} > "
                           f"to={_num(to)}")
    if to - from_ > hi:
        raise RuntimeError(f"uniform_ expects to-from <= std::numeric_limits<{D.type_word(dt.np)}>::max(), "
                           f"but found to={_num(to)} and from={_num(from_)} which result in to-from to exceed the "
                           "limit")
    n = self._data.size
    like = _host(self)
    vals = _RNG.uniform(_gen(generator)._st(), n, dt.np, float(from_), float(to)) if n else like.reshape(-1)
    return _inplace(self, _RNG.write(like, vals), "UniformBackward0")


@_fill
def normal_(self: Tensor, mean: float = 0, std: float = 1, *, generator: Generator | None = None) -> Tensor:
    """Fill with normal samples."""
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_num(std)}")
    _float_self(self, "normal_kernel_cpu")
    vals = _RNG.normal_like(_gen(generator)._st(), _host(self), float(mean), float(std))
    return _inplace(self, vals, "NormalBackward0")


@_fill
def exponential_(self: Tensor, lambd: float = 1, *, generator: Generator | None = None) -> Tensor:
    """Fill with Exp(lambd) samples: -log1p(-u) / lambd in float64, then cast."""
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_num(lambd)}")
    dt = self.dtype
    if not dt.is_floating_point:
        raise RuntimeError("Exponential distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {D.type_word(dt.np)}")
    vals = _RNG.exponential(_gen(generator)._st(), self._data.size, float(lambd), dt.np)
    return _inplace(self, _laid_out(self, vals), "ExponentialBackward0")


@_fill
def geometric_(self: Tensor, p: float, *, generator: Generator | None = None) -> Tensor:
    """Fill with Geometric(p) samples (trials until the first success)."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_num(p)}")
    _no_complex(self.dtype, "geometric_cpu")
    vals = _RNG.geometric(_gen(generator)._st(), self._data.size, p, self.dtype.np)
    return _inplace(self, _laid_out(self, vals), "GeometricBackward0")


@_fill
def cauchy_(self: Tensor, median: float = 0, sigma: float = 1, *, generator: Generator | None = None) -> Tensor:
    """Fill with Cauchy(median, sigma) samples."""
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_num(sigma)}")
    dt = self.dtype
    if not dt.is_floating_point:
        raise RuntimeError("Cauchy distribution is a continuous probability distribution. dtype must be a floating "
                           f"point but you specified {(D.c_type_name if dt.is_complex else D.type_word)(dt.np)}")
    vals = _RNG.cauchy(_gen(generator)._st(), self._data.size, median, sigma, dt.np)
    return _inplace(self, _laid_out(self, vals), "CauchyBackward0")


@_fill
def log_normal_(self: Tensor, mean: float = 1, std: float = 2, *, generator: Generator | None = None) -> Tensor:
    """Fill with exp(Normal(mean, std)) samples (the scalar normal path, sharing its cached sample)."""
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_num(std)}")
    _no_complex(self.dtype, "log_normal_cpu")
    dt = _float_self(self, "log_normal_cpu")
    vals = _RNG.log_normal(_gen(generator)._st(), self._data.size, float(mean), float(std), dt.np)
    return _inplace(self, _laid_out(self, vals), "LogNormalBackward0")


@_fill
def random_(self: Tensor, *args, generator: Generator | None = None, **kw) -> Tensor:
    """``random_()``, ``random_(to)``, ``random_(from, to)`` (``to=None``: up to the dtype's maximum)."""
    has_from = "from" in kw or len(args) == 2 or (len(args) == 1 and "to" in kw)
    frm = kw.pop("from", 0)
    to = kw.pop("to", "unset")
    if kw:
        raise TypeError(f"random_() got an unexpected keyword argument '{next(iter(kw))}'")
    if len(args) == 2:
        frm, to = args
    elif len(args) == 1:
        if to == "unset":
            to = args[0]     # random_(to)
        else:
            frm = args[0]    # random_(from, to=...)
    dt = self.dtype
    n = self._data.size
    like = _host(self)
    if dt.is_complex:
        if not has_from and to == "unset":
            _no_complex(dt, "random_kernel_cpu")
        raise RuntimeError(_RANDOM_BOUNDS)
    if not has_from and to == "unset":
        node = "RandomBackward2"    # PyTorch's node names for its three overloads
        vals = _random_values(_gen(generator), n, dt, None, None)
    else:
        node = "RandomBackward0" if has_from else "RandomBackward1"
        to = None if to in ("unset", None) else int(to)
        frm, to = _random_range(dt, int(frm), to)
        vals = _random_values(_gen(generator), n, dt, frm, to) if n else like.reshape(-1)
    return _inplace(self, _RNG.write(like, vals), node)


@_fill
def bernoulli_(self: Tensor, p=0.5, *, generator: Generator | None = None) -> Tensor:
    """Fill with 0/1 samples: 1 where a uniform draw is < p (p a float or a tensor broadcast to self)."""
    gen = _gen(generator)
    _no_complex(self.dtype, "bernoulli_tensor_cpu_self_" if isinstance(p, Tensor) else "bernoulli_scalar_cpu_")
    if isinstance(p, Tensor):
        pd = p.dtype
        if pd is not D.float32 and pd is not D.float64:
            if pd is not D.float16 and pd is not getattr(D, "bfloat16", None):
                raise NotImplementedError(f'"bernoulli_tensor_cpu_p_" not implemented for \'{D.type_word(pd.np)}\'')
        # PyTorch draws half-precision p with bernoulli_distribution<float>
        probs = p if pd is D.float32 or pd is D.float64 else p.detach().to(D.float32)
        vals = _RNG.bernoulli_tensor(gen._st(), _host(self), _host(probs))
        others = (p,) if self._data.size == 0 or p._requires_grad else ()
        return _inplace(self, vals, "BernoulliBackward1", others)
    p = float(p)
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_num(p)}")
    vals = _RNG.bernoulli(gen._st(), self._data.size, p, self.dtype.np)
    return _inplace(self, _laid_out(self, vals), "BernoulliBackward2")


# ----- sampling functions ------------------------------------------------------------------------------------

def bernoulli(input: Tensor, p: float | None = None, *, generator: Generator | None = None, out=None) -> Tensor:
    """0/1 samples with probabilities ``input`` (or the float ``p``), in input's dtype."""
    res = make(backend_of(input._data).zeros(input._data.shape, input._data.dtype))   # every element overwritten
    if p is None:
        bernoulli_(res, input.detach(), generator=generator)
        node = "BernoulliBackward0"
    else:
        bernoulli_(res, p, generator=generator)
        node = "NotImplemented"
    if out is not None:
        return _out(out, _host(res))
    return _sampled((input,), res._data, node)


def normal(mean, std=1.0, size=None, *, generator: Generator | None = None, out=None, dtype=None, layout=None,
           device=None, pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """``normal(mean, std)`` with tensor and/or float mean and std, or ``normal(mean, std, size)`` for floats."""
    gen = _gen(generator)
    mt, st = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not mt and not st:
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments - got (float, float), but "
                            "expected one of: (Tensor mean, Tensor std), (Tensor mean, float std), "
                            "(float mean, Tensor std), (float mean, float std, tuple of ints size)")
        shape = _sizes_from_args((tuple(size),) if isinstance(size, (tuple, list)) else (size,))
        dt = D._default_float if dtype is None else _as_dtype(dtype)
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {_num(std)}")
        _float_dtype(dt, "normal_kernel_cpu")
        if out is None and _no_data(device):
            return _shaped(shape, dt, requires_grad, device)
        data = _RNG.normal(gen._st(), math.prod(shape), dt.np, float(mean), float(std)).reshape(shape)
        return _result(data, requires_grad, device) if out is None else _out(out, data)
    if size is not None:
        raise TypeError("normal() received an invalid combination of arguments - got (Tensor, float, size=tuple), "
                        "but expected one of: (Tensor mean, Tensor std), (Tensor mean, float std), "
                        "(float mean, Tensor std), (float mean, float std, tuple of ints size)")
    if st:
        _RNG.check_std(_host(std))
    if mt and not st:
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {_num(std)}")
        dt, inputs, node = mean.dtype, (mean,), "NormalBackward1"
    elif st and not mt:
        dt, inputs, node = std.dtype, (std,), "NormalBackward2"
    else:
        broadcast_shape((mean._data.shape, std._data.shape), "broadcast_tensors")   # PyTorch's RuntimeError
        dt, inputs, node = mean.dtype, (mean, std), "NormalBackward3"
    _float_dtype(dt, "normal_kernel_cpu")
    value = _RNG.normal_tensor(gen._st(), _host(mean) if mt else mean, _host(std) if st else float(std), dt.np)
    if out is not None:
        return _out(out, value)
    return _sampled(inputs, backend_of(inputs[0]._data).asarray(value), node)


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator: Generator | None = None, out=None) -> Tensor:
    """Indices sampled from the rows of ``input`` (non-negative weights), as PyTorch's CPU kernel."""
    gen = _gen(generator)
    shape = input._data.shape
    if not 1 <= len(shape) <= 2:
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{D.type_word(input.dtype.np)}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    n_cat = shape[-1]
    if not replacement and num_samples > n_cat:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if n_cat > 1 << 24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    idx = _RNG.multinomial(gen._st(), _host(input), num_samples, replacement)
    return make(backend_of(input._data).asarray(idx)) if out is None else _out(out, idx)


# ----- attach ------------------------------------------------------------------------------------------

def _t_bernoulli(self: Tensor, p=None, *, generator: Generator | None = None) -> Tensor:
    return bernoulli(self, p, generator=generator)


def _t_multinomial(self: Tensor, num_samples: int, replacement: bool = False, *,
                   generator: Generator | None = None) -> Tensor:
    return multinomial(self, num_samples, replacement, generator=generator)


# The samplers and fills compute on raw arrays outside apply, with the caller's numbers (inf means, huge
# weights, normal_(0, 1e5) of float16 overflowing in the cast): NumPy's warnings silent while they run, as
# PyTorch is. (The Tensor methods bernoulli and multinomial call the module functions.)
bernoulli, multinomial, normal = quietly(bernoulli), quietly(multinomial), quietly(normal)
TENSOR_METHODS = {
    "uniform_": uniform_, "normal_": normal_, "bernoulli_": bernoulli_, "exponential_": exponential_,
    "random_": random_, "geometric_": geometric_, "cauchy_": cauchy_, "log_normal_": log_normal_,
}
TENSOR_METHODS = {name: quietly(fn) for name, fn in TENSOR_METHODS.items()}
TENSOR_METHODS.update(bernoulli=_t_bernoulli, multinomial=_t_multinomial)

for _name, _fn in TENSOR_METHODS.items():
    _register_method(_name, _fn)


# ``torch.random``: the generator functions as a module (``import ember.random`` works too).
random = types.ModuleType("ember.random", "Random-number-generator state (PyTorch's torch.random).")
for _name in ("manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "fork_rng"):
    setattr(random, _name, globals()[_name])
random.default_generator = default_generator
random.Generator = Generator
sys.modules.setdefault("ember.random", random)


def poisson(input: Tensor, generator: Generator | None = None) -> Tensor:
    """Poisson samples with the rates ``input`` (non-negative), in input's dtype: PyTorch's algorithms and its
    random stream, so the same seed gives the same counts; the gradient is zero (PoissonBackward0)."""
    check_tensor(input, "poisson")
    if not input.dtype.is_floating_point:   # float16 and bfloat16 too (sampled in double, as the others)
        raise NotImplementedError(f"\"poisson_cpu\" not implemented for '{D.type_word(input.dtype.np)}'")
    gen = _check_generator("poisson", generator, 2)
    value = backend_of(input._data).asarray(_RNG.poisson(gen._st(), _host(input.detach())))
    return _sampled((input,), value, "PoissonBackward0")



def _refuse_grad(name: str):
    def rule(xp, g, *_a, **_k):
        raise RuntimeError(f"derivative for aten::{name} is not implemented")
    return rule


def _no_grad_prim(name: str, n_in: int):
    """A primitive whose output is ``value`` and whose backward raises, as PyTorch's nodes for samplers that
    declare no derivative (grad_fn NotImplemented: binomial, _sample_dirichlet)."""
    key = ("refuse", name, n_in)
    prim = _PRIMS.get(key)
    if prim is None:
        rule = _refuse_grad(name)
        prim = _PRIMS[key] = P.defprim(name, lambda xp, *ins, value: value, node="NotImplemented",
                                       vjp=(rule,) * n_in if n_in > 1 else rule,
                                       jvp=(rule,) * n_in if n_in > 1 else rule)
        _batching.batching("fallback", prim, why=_RANDOM_RECORD)
    return prim


def _unsampled(name: str, inputs: tuple, value) -> Tensor:
    if P._state.enabled and any(t._requires_grad for t in inputs):
        return P.apply(_no_grad_prim(name, len(inputs)), inputs, {"value": value})
    return make(value)


def _check_generator(op: str, generator, pos: int) -> Generator:
    if generator is not None and not isinstance(generator, Generator):
        raise TypeError(f"{op}(): argument 'generator' (position {pos}) must be torch.Generator, not "
                        f"{type(generator).__name__}")
    return _gen(generator)


def _float32_or_64(t: Tensor, kernel: str) -> None:
    """AT_DISPATCH_FLOATING_TYPES: float32 and float64 only."""
    if t.dtype not in (D.float32, D.float64):
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{D.type_word(t.dtype.np)}'")


def binomial(count: Tensor, prob: Tensor, generator: Generator | None = None) -> Tensor:
    """Binomial samples: ``count`` trials (float) with success probability ``prob`` (same dtype, broadcast), by
    PyTorch's algorithms (inversion for small means, BTRS rejection otherwise, prob > 0.5 mirrored) on its random
    stream, so the same seed gives the same counts. No derivative (backward raises, as PyTorch)."""
    check_tensor(count, "binomial", "count", 1)
    check_tensor(prob, "binomial", "prob", 2)
    gen = _check_generator("binomial", generator, 3)
    for t, name in ((count, "count"), (prob, "prob")):
        if not t.dtype.is_floating_point:
            raise ValueError(f"binomial only supports floating-point dtypes for {name}, got: "
                             f"{D.type_word(t.dtype.np)}")
    if prob.dtype != count.dtype:
        raise RuntimeError(f"Found dtype {D.type_word(prob.dtype.np)} but expected {D.type_word(count.dtype.np)}")
    _float32_or_64(count, "binomial_cpu")
    shape = broadcast_shape((tuple(count.shape), tuple(prob.shape)))
    if tuple(shape) != tuple(count.shape):
        warnings.warn(f"An output with one or more elements was resized since it had shape {list(count.shape)}, "
                      f"which does not match the required output shape {list(shape)}. This behavior is deprecated, "
                      "and in a future PyTorch release outputs will not be resized unless they have zero elements. "
                      "You can explicitly reuse an out tensor t by resizing it, inplace, to zero elements with "
                      "t.resize_(0).", UserWarning, stacklevel=2)
    value = _RNG.binomial(gen._st(), _host(count.detach()), _host(prob.detach()))
    return _unsampled("binomial", (count, prob), backend_of(count._data).asarray(value))


def _standard_gamma(input: Tensor, generator: Generator | None = None) -> Tensor:
    """Gamma(input, 1) samples by PyTorch's Marsaglia-Tsang sampler on its random stream (``torch._standard_gamma``);
    each at least the dtype's smallest normal number."""
    check_tensor(input, "_standard_gamma")
    gen = _check_generator("_standard_gamma", generator, 2)
    _float32_or_64(input, "gamma_cpu")
    value = backend_of(input._data).asarray(_RNG.standard_gamma(gen._st(), _host(input.detach())))
    if (P._state.enabled and input._requires_grad) or input._fw_grad is not None:
        return P.apply(_standard_gamma_p, (input,), {"value": value})
    return make(value)


def _standard_gamma_fw(xp, t, *_a, **_k):
    raise NotImplementedError(
        "Trying to use forward AD with _standard_gamma that does not support it because it has not been implemented "
        "yet.\nPlease file an issue to PyTorch at https://github.com/pytorch/pytorch/issues/new?template=feature-"
        "request.yml so that we can prioritize its implementation or submit a PR adding the implementation to "
        "derivatives.yaml")


# StandardGammaBackward0: grad * _standard_gamma_grad(self, result) (the reparameterisation gradient)
_standard_gamma_p = P.defprim("_standard_gamma", lambda xp, a, value: value, node="StandardGammaBackward0",
                              vjp=lambda xp, g, out, a, value: g * xp.standard_gamma_grad(a, out),
                              jvp=_standard_gamma_fw, saves=(0,), saves_out=True)


def _sample_dirichlet(input: Tensor, generator: Generator | None = None) -> Tensor:
    """Dirichlet samples with concentrations ``input`` along its last dimension (``torch._sample_dirichlet``): double
    gamma samples normalised by their sum, PyTorch's random stream. No derivative (backward raises, as PyTorch)."""
    check_tensor(input, "_sample_dirichlet")
    gen = _check_generator("_sample_dirichlet", generator, 2)
    _float32_or_64(input, "dirichlet")
    value = _RNG.dirichlet(gen._st(), _host(input.detach()))
    return _unsampled("_sample_dirichlet", (input,), backend_of(input._data).asarray(value))


# ----- what the profiler records for the random factories (see creation.py's table) ------------------------------
_EMPTY_LIKE = ("empty_like", (("empty_strided", ()),))
_profiling.FACTORIES += [
    (rand, "rand", (("empty", ()), ("uniform_", ()))), (randn, "randn", (("empty", ()), ("normal_", ()))),
    (randint, "randint", (("empty", ()), ("random_", ()))),
    (randperm, "randperm", (("empty", ()), ("randperm", (("scalar_tensor", ()), ("resize_", ()), ("resize_", ()))))),
    (rand_like, "rand_like", (_EMPTY_LIKE, ("uniform_", ()))), (randn_like, "randn_like", (_EMPTY_LIKE, ("normal_", ()))),
]


# ----- vmap -------------------------------------------------------------------------------------------------
_batching.by_name("fallback", "_standard_gamma", why="a random op: vmap's randomness modes are not built for it yet")
