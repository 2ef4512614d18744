"""Random numbers: PyTorch's CPU generator (mt19937) and its sampling kernels, draw for draw.

``ember.manual_seed(s)`` followed by the same calls gives the very numbers PyTorch 2.13 gives on an
x86-64 CPU with AVX2 (the common build). The engine is NumPy's ``MT19937`` bit generator, whose
state (624 words and a position) is PyTorch's; every sampler below reads raw 32-bit words in bulk
and transforms them with array ops, consuming them in PyTorch's order.

How PyTorch turns words into numbers (reimplemented here):
  * float32 uniform: one word, its low 24 bits times 2^-24 (float16 is sampled so, then rounded);
    float64: two words (hi, lo) as one 64-bit value, its low 53 bits times 2^-53.
    ``uniform_(a, b)`` is ``fma(x, b - a, a)`` in the tensor's type (float32 for float16).
  * normal, >= 16 contiguous elements: fill with uniforms, then Box-Muller on blocks of 16 (8 cosines,
    8 sines); if the size is not a multiple of 16, the last 16 elements are redrawn and redone.
    float32 uses AVX2 code (Cephes polynomials for log and sincos, fused multiply-adds), emulated
    here operation by operation; float16 uses it too, block by block (16 fresh uniforms per block).
  * normal, fewer than 16 elements or non-contiguous: Box-Muller in float64, one pair at a time;
    the unused sine is cached on the generator (part of its state).
  * exponential, geometric, cauchy, log-normal, bernoulli(p float): float64 uniforms, then cast.
  * random_/randint: word % range (+ from); 64-bit draws when the range is >= 2^32.
  * randperm: Fisher-Yates with word % (n - i); multinomial: cumulative sums and a binary search
    (with replacement), or ``p / Exp(1)`` and top-k (without).
"""
from __future__ import annotations

import contextlib
import math
import os
import sys
import types
import warnings

import numpy as np

from .. import _dtype as D
from ..devices.cpu import libm  # the C library's log, sin, ...: what PyTorch's scalar transforms call
from .._device import check_device, quietly
from .._tensor import Tensor, _sizes_from_args, make
from ._registry import method as _register_method

_N = 624                    # mt19937 state words
_DEFAULT_SEED = 67280421310721   # what torch.Generator() starts from
_STATE_BYTES = 5056         # sizeof(CPUGeneratorImplState) in PyTorch: get_rng_state()'s length
_U64 = np.uint64
_M24 = _U64((1 << 24) - 1)
_M53 = _U64((1 << 53) - 1)
_M11 = _U64((1 << 11) - 1)

# PyTorch's C++ type names in its error messages (caffe2::TypeMeta::name()).
_META_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "int64": "long int",
               "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
               "bool": "bool"}
# ScalarType names, as in '"normal_kernel_cpu" not implemented for 'Long''.
_SCALAR_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
                 "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def _mt_key(seed: int) -> np.ndarray:
    """mt19937's init_genrand on the seed's low 32 bits, as PyTorch seeds its engine."""
    s = seed & 0xFFFFFFFF
    key = [s]
    for j in range(1, _N):
        s = (1812433253 * (s ^ (s >> 30)) + j) & 0xFFFFFFFF
        key.append(s)
    return np.array(key, dtype=np.uint32)


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
        self._bg = None       # NumPy's MT19937, made on first draw: importing numpy.random costs import time
        self._key = None      # pending state words (set_state) for when _bg is made
        self._pos = _N
        self._fresh = True    # seeded and not drawn from: PyTorch then reports next = 0, not 624
        self._normal_double = None   # PyTorch's next_double_normal_sample
        self._normal_float = None    # next_float_normal_sample (only carried through get/set_state)

    def __repr__(self) -> str:
        return f"<torch._C.Generator object at {hex(id(self))}>"

    @property
    def device(self):
        from .._device import device
        return device("cpu")

    # ----- seeding and state ---------------------------------------------------------------------
    def manual_seed(self, seed) -> Generator:
        """Seed with ``seed`` (an int; negative values wrap to 64 bits, as in PyTorch)."""
        seed = _check_seed(seed)
        self._seed = seed
        self._key = None
        self._bg = None
        self._pos = _N
        self._fresh = True
        self._normal_double = self._normal_float = None
        return self

    def seed(self) -> int:
        """Seed from the OS's entropy; returns the seed."""
        s = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self) -> Tensor:
        """The state as a 5056-byte uint8 tensor, in PyTorch's byte layout (round-trips with torch)."""
        if self._bg is not None:
            st = self._bg.state["state"]
            key, pos = st["key"], int(st["pos"])
        else:
            key, pos = (self._key if self._key is not None else _mt_key(self._seed)), self._pos
        buf = bytearray(_STATE_BYTES)
        mv = memoryview(buf)
        np.frombuffer(mv[0:8], np.uint64)[0] = self._seed
        left = _N + 1 - pos
        nxt = 0 if (self._fresh and pos == _N) else pos
        np.frombuffer(mv[8:16], np.int32)[:] = (left, 1)
        np.frombuffer(mv[16:24], np.uint64)[0] = nxt
        np.frombuffer(mv[24:24 + 8 * _N], np.uint64)[:] = key
        if self._normal_double is not None:
            np.frombuffer(mv[5024:5032], np.float64)[0] = self._normal_double
            np.frombuffer(mv[5040:5044], np.int32)[0] = 1
        if self._normal_float is not None:
            np.frombuffer(mv[5048:5052], np.float32)[0] = self._normal_float
            buf[5052] = 1
        return make(np.frombuffer(bytes(buf), np.uint8).copy())

    def set_state(self, new_state: Tensor) -> Generator:
        """Restore a state from get_state() (this library's or PyTorch's)."""
        data = _state_bytes(new_state)
        if data.size != _STATE_BYTES:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {_STATE_BYTES} but found the input RNG "
                               f"state size to be {data.size}")
        raw = data.tobytes()
        seed = int(np.frombuffer(raw, np.uint64, 1, 0)[0])
        left, seeded = (int(v) for v in np.frombuffer(raw, np.int32, 2, 8))
        nxt = int(np.frombuffer(raw, np.uint64, 1, 16)[0]) & 0xFFFFFFFF
        if not (seeded != 0 and 0 < left <= _N and nxt <= _N):
            raise RuntimeError("Invalid mt19937 state")
        key = np.frombuffer(raw, np.uint64, _N, 24).astype(np.uint32)   # PyTorch keeps the low 32 bits
        self._seed = seed
        # left == 1: the next draw regenerates the words (NumPy: pos 624); else it reads word `next`.
        self._pos = _N if left == 1 else nxt
        self._fresh = left == 1 and nxt == 0
        self._key = key
        self._bg = None
        nd_valid = int(np.frombuffer(raw, np.int32, 1, 5040)[0])
        self._normal_double = float(np.frombuffer(raw, np.float64, 1, 5024)[0]) if nd_valid else None
        self._normal_float = (float(np.frombuffer(raw, np.float32, 1, 5048)[0]) if raw[5052] else None)
        return self

    def clone_state(self) -> Generator:
        g = Generator()
        g.set_state(self.get_state())
        return g

    # ----- raw draws -----------------------------------------------------------------------------
    def _engine(self):
        bg = self._bg
        if bg is None:
            import numpy.random   # noqa: F401  (lazy: keeps `import ember` fast)
            bg = np.random.MT19937(0)
            key = self._key if self._key is not None else _mt_key(self._seed)
            bg.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": self._pos}}
            self._bg = bg
        return bg

    def _words(self, n: int) -> np.ndarray:
        """``n`` consecutive 32-bit draws (as uint64), PyTorch's ``random()``."""
        self._fresh = False
        if n <= 0:
            return np.empty(0, np.uint64)
        return self._engine().random_raw(n)

    def _words64(self, n: int) -> np.ndarray:
        """``n`` 64-bit draws, each two 32-bit draws (first = high half), PyTorch's ``random64()``."""
        w = self._words(2 * n)
        return (w[0::2] << _U64(32)) | w[1::2]


def _check_seed(seed) -> int:
    if isinstance(seed, Tensor):
        seed = seed.item()
    seed = int(seed)
    if not -(1 << 63) <= seed < (1 << 64):
        raise ValueError("Overflow when unpacking long long")
    return seed & 0xFFFFFFFFFFFFFFFF


def _state_bytes(t) -> np.ndarray:
    if isinstance(t, Tensor):
        arr = t._data
    elif hasattr(t, "numpy") and hasattr(t, "dtype"):   # a torch.ByteTensor, for states from PyTorch
        arr = t.detach().cpu().numpy()
    else:
        raise TypeError("RNG state must be a torch.ByteTensor")
    if arr.dtype != np.uint8:
        raise TypeError("RNG state must be a torch.ByteTensor")
    return np.ascontiguousarray(arr).reshape(-1)


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


# ----- uniforms --------------------------------------------------------------------------------------

def _uniform01(gen: Generator, n: int, np_dtype) -> np.ndarray:
    """PyTorch's uniform samples in [0, 1): float64 for float64, else float32 (float16 is sampled as float32)."""
    if np_dtype == np.float64:
        return (gen._words64(n) & _M53).astype(np.float64) * 2.0 ** -53
    return (gen._words(n) & _M24).astype(np.float32) * np.float32(2.0 ** -24)


def _uniform01_f64(gen: Generator, n: int) -> np.ndarray:
    return (gen._words64(n) & _M53).astype(np.float64) * 2.0 ** -53


_MID_MASK = np.uint64((1 << 29) - 1)   # the float64 bits below float32's last place
_MID = np.uint64(1 << 28)              # ... holding exactly half a float32 ulp


def _fma32(a, b, c) -> np.ndarray:
    """``a * b + c`` rounded once to float32, as the FMA instruction (float32 inputs).

    The float64 product is exact; the float64 sum is exact unless the exponents are far apart, and
    then rounding it to float32 can go wrong only if it landed exactly on a float32 midpoint: those
    rare elements are redone with the sum's rounding error (TwoSum) as a tie-breaker."""
    s = np.multiply(a, b, dtype=np.float64)
    s += c
    mid = (s.view(np.uint64) & _MID_MASK) == _MID
    if mid.any():
        idx = np.nonzero(mid)
        p = (np.broadcast_to(np.asarray(a, np.float64), s.shape)[idx] *
             np.broadcast_to(np.asarray(b, np.float64), s.shape)[idx])
        cc = np.broadcast_to(np.asarray(c, np.float64), s.shape)[idx]
        t = s[idx]
        bp = t - p
        err = (p - (t - bp)) + (cc - bp)
        s[idx] = np.where(err == 0, t, np.nextafter(t, np.where(err > 0, np.inf, -np.inf)))
    return s.astype(np.float32)


def _fma64(a, b, c) -> np.ndarray:
    """``a * b + c`` with one rounding (Dekker's exact product, then a compensated sum)."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    c = np.asarray(c, np.float64)
    p = a * b
    t = 134217729.0 * a
    ah = t - (t - a)
    al = a - ah
    t = 134217729.0 * b
    bh = t - (t - b)
    bl = b - bh
    perr = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c
    bp = s - p
    serr = (p - (s - bp)) + (c - bp)
    with np.errstate(invalid="ignore", over="ignore"):
        r = s + (serr + perr)
    return np.where(np.isfinite(r), r, p + c)


def _uniform_values(gen: Generator, n: int, np_dtype, a: float, b: float) -> np.ndarray:
    x = _uniform01(gen, n, np_dtype)
    if np_dtype == np.float64:
        return _fma64(x, b - a, a)
    if np_dtype == np.float16:
        # sampled in float32, rounded to half; a value that rounds up to `to` becomes `from`
        fa, fb = np.float32(a), np.float32(b)
        h = _fma32(x, fb - fa, fa).astype(np.float16)
        return np.where(h == np.float16(b), np.float16(a), h)
    fa, fb = np.float32(a), np.float32(b)
    return _fma32(x, np.float32(fb - fa), fa)


# ----- normals ---------------------------------------------------------------------------------------

def _normal_pairs(gen: Generator, n: int, mean: float, std: float) -> np.ndarray:
    """n samples of PyTorch's scalar normal_distribution<double>: Box-Muller one pair at a time, the
    sine cached on the generator for the next call."""
    out = np.empty(n, np.float64)
    if n == 0:
        return out
    i = 0
    if gen._normal_double is not None:
        out[0] = gen._normal_double
        gen._normal_double = None
        i = 1
    m = n - i
    pairs = (m + 1) // 2
    if pairs:
        u = _uniform01_f64(gen, 2 * pairs)
        r = np.sqrt(-2.0 * libm.log1p(-u[1::2]))
        theta = 2.0 * math.pi * u[0::2]
        z = np.empty(2 * pairs)
        z[0::2] = r * libm.cos(theta)
        z[1::2] = r * libm.sin(theta)
        out[i:] = z[:m]
        if m % 2:
            gen._normal_double = float(z[-1])
    return _fma64(out, std, mean)


# AVX2 log and sincos (Cephes polynomials, as in PyTorch's avx_mathfun.h), in float32, with the fused
# multiply-adds the compiler makes of them. Verified bit for bit against PyTorch's randn.
_F = np.float32
_LOG_P = [_F(v) for v in (7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1,
                          1.4249322787E-1, -1.6668057665E-1, 2.0000714765E-1, -2.4999993993E-1,
                          3.3333331174E-1)]


def _avx_log(x: np.ndarray) -> np.ndarray:
    xi = x.view(np.int32)    # (PyTorch clamps denormals first; inputs here are >= 2^-24)
    e = ((xi >> 23) - 0x7F).astype(_F) + _F(1)
    m = ((xi & ~np.int32(0x7F800000)) | np.int32(0x3F000000)).view(_F)   # mantissa in [0.5, 1)
    small = m < _F(0.707106781186547524)
    x = (m - _F(1)) + np.where(small, m, _F(0))
    e = e - np.where(small, _F(1), _F(0))
    z = x * x
    y = np.full_like(x, _LOG_P[0])
    for p in _LOG_P[1:]:
        y = _fma32(y, x, p)
    y = y * x
    y = _fma32(y, z, e * _F(-2.12194440e-4))
    y = _fma32(z, _F(-0.5), y)
    x = x + y
    return _fma32(e, _F(0.693359375), x)   # (inputs are in (0, 1]: no invalid-argument mask needed)


def _avx_sincos(x: np.ndarray):
    neg = np.signbit(x)
    x = np.abs(x)
    j = (x * _F(1.27323954473516)).astype(np.int32)
    j = (j + 1) & ~np.int32(1)
    y = j.astype(_F)
    sin_sign = neg ^ ((j & 4) != 0)
    poly = (j & 2) == 0
    cos_sign = (~(j - 2) & 4) != 0
    x = _fma32(y, _F(-0.78515625), x)
    x = _fma32(y, _F(-2.4187564849853515625e-4), x)
    x = _fma32(y, _F(-3.77489497744594108e-8), x)
    z = x * x
    yc = _fma32(np.full_like(x, _F(2.443315711809948E-005)), z, _F(-1.388731625493765E-003))
    yc = _fma32(yc, z, _F(4.166664568298827E-002))
    yc = yc * z
    yc = _fma32(yc, z, -(z * _F(0.5)))
    yc = yc + _F(1)
    ys = _fma32(np.full_like(x, _F(-1.9515295891E-4)), z, _F(8.3321608736E-3))
    ys = _fma32(ys, z, _F(-1.6666654611E-1))
    ys = ys * z
    ys = _fma32(ys, x, x)
    s = np.where(poly, ys, yc)
    c = np.where(poly, yc, ys)
    return np.where(sin_sign, -s, s), np.where(cos_sign, -c, c)


def _box_muller16(u: np.ndarray, np_dtype, mean: float, std: float) -> np.ndarray:
    """PyTorch's normal_fill_16 on rows of 16 uniforms: 8 cosines then 8 sines. Done in chunks of rows so
    the many temporaries stay in cache (about 1.6x faster on 10^6 samples)."""
    rows = 8192
    if len(u) <= rows:
        return _box_muller_block(u, np_dtype, mean, std)
    out = np.empty(u.shape, np_dtype)
    for i in range(0, len(u), rows):
        out[i:i + rows] = _box_muller_block(u[i:i + rows], np_dtype, mean, std)
    return out


def _box_muller_block(u: np.ndarray, np_dtype, mean: float, std: float) -> np.ndarray:
    if np_dtype == np.float32:
        u1 = _F(1) - u[:, :8]
        u2 = u[:, 8:]
        r = np.sqrt(_F(-2) * _avx_log(u1))
        s, c = _avx_sincos(_F(2.0 * math.pi) * u2)
        z = np.concatenate([r * c, r * s], axis=1)
        return _fma32(z, _F(std), _F(mean))
    if np_dtype == np.float64:   # PyTorch's scalar normal_fill_16 (libm log/cos/sin, FMA for std and mean)
        r = np.sqrt(-2.0 * libm.log(1.0 - u[:, :8]))
        theta = 2.0 * math.pi * u[:, 8:]
        return np.concatenate([_fma64(r * libm.cos(theta), std, mean), _fma64(r * libm.sin(theta), std, mean)], 1)
    raise AssertionError("float16 normals are computed as float32 blocks")   # see _normal_values


def _normal_values(gen: Generator, n: int, np_dtype, mean: float, std: float, contiguous: bool = True):
    """n normal samples in PyTorch's order for a tensor of n elements (the path depends on n)."""
    if n >= 16 and contiguous:
        full = n // 16 * 16
        out = np.empty(n, np_dtype)
        if np_dtype == np.float16:
            # float16 goes through float32 blocks: 16 fresh uniforms per block, the last (partial) block
            # computed whole and written over the last 16 elements
            nblocks = -(-n // 16)
            u = _uniform01(gen, nblocks * 16, np.float32).reshape(-1, 16)
            z = _box_muller16(u, np.float32, mean, std).astype(np.float16)
            out[:full] = z[:full // 16].reshape(-1)
            if n % 16:
                out[n - 16:] = z[-1]
            return out
        u = _uniform01(gen, n, np_dtype)
        out[:full] = _box_muller16(u[:full].reshape(-1, 16), np_dtype, mean, std).reshape(-1)
        if n % 16:
            # PyTorch redraws the last 16 uniforms and redoes them (overwriting some finished ones)
            tail = _uniform01(gen, 16, np_dtype)
            out[n - 16:] = _box_muller16(tail.reshape(1, 16), np_dtype, mean, std).reshape(-1)
        return out
    return _cast_from_double(_normal_pairs(gen, n, mean, std), np_dtype)


def _cast_from_double(x: np.ndarray, np_dtype) -> np.ndarray:
    if np_dtype == np.float16:   # c10::Half is built from a float: double -> float -> half
        return x.astype(np.float32).astype(np.float16)
    with np.errstate(invalid="ignore", over="ignore"):
        return x.astype(np_dtype)


# ----- integers --------------------------------------------------------------------------------------

def _ints_from_to(gen: Generator, n: int, np_dtype, rng: int, base: int) -> np.ndarray:
    """PyTorch's uniform_int_from_to: (draw % range) + from. PyTorch 2.13 takes 64-bit draws for ranges
    >= 2^28 (whatever the dtype), which keeps the modulo bias small; found by probing torch."""
    wide = rng >= (1 << 28)
    w = gen._words64(n) if wide else gen._words(n)
    v = (w % _U64(rng)) + _U64(base & 0xFFFFFFFFFFFFFFFF)   # uint64 wrap-around, as in C++
    return _int64_to(v.view(np.int64), np_dtype)


def _int64_to(v: np.ndarray, np_dtype) -> np.ndarray:
    if np_dtype == np.bool_:
        return v != 0
    if np_dtype == np.float16:
        return v.astype(np.float32).astype(np.float16)
    return v.astype(np_dtype)


_FLOAT_DIGITS = {np.dtype(np.float16): 11, np.dtype(np.float32): 24, np.dtype(np.float64): 53}


def _int_bounds(np_dtype) -> tuple[int, int]:
    if np_dtype == np.bool_:
        return 0, 1
    if np_dtype.kind == "f":
        info = np.finfo(np_dtype)
        return float(info.min), float(info.max)
    info = np.iinfo(np_dtype)
    return int(info.min), int(info.max)


def _update_from(frm: int, np_dtype) -> int:
    """Move ``from`` right to the first integer that stays >= from after the cast to the float type."""
    digits = _FLOAT_DIGITS[np_dtype]
    fp1 = _cast_scalar(frm + 1, np_dtype)
    if fp1 < frm:
        n = (abs(frm + 1)).bit_length() - 1
        frm = fp1 + (1 << (n - digits + 1))
    return frm


def _update_to(to: int, np_dtype) -> int:
    digits = _FLOAT_DIGITS[np_dtype]
    tm1 = _cast_scalar(to - 1, np_dtype)
    if tm1 >= to:
        n = (abs(to - 1)).bit_length() - 1
        to = tm1 - (1 << (n - digits + 1))
    return to


def _cast_scalar(v: int, np_dtype) -> int:
    """static_cast<int64_t>(static_cast<float type>(v))."""
    with np.errstate(over="ignore"):
        f = float(np.array(float(v)).astype(np_dtype))
    return int(f) if math.isfinite(f) else v


def _check_from_to(frm: int, to_inc: int, np_dtype) -> None:
    lo, hi = _int_bounds(np_dtype)
    name = _META_NAMES[np_dtype.name]
    if not lo <= frm <= hi:
        raise RuntimeError(f"from is out of bounds for {name}")
    if not lo <= to_inc <= hi:
        raise RuntimeError(f"to - 1 is out of bounds for {name}")
    if np_dtype.kind == "f":
        digits = _FLOAT_DIGITS[np_dtype]
        for var, what in ((frm, "from"), (to_inc, "to - 1")):
            if var < -(1 << digits) or var > (1 << digits):
                warnings.warn(f"{what} is out of bounds [-(2^{digits}), 2^{digits}]. Due to precision limitations "
                              f"{name} can support discrete uniform distribution only within this range. This "
                              "warning will become an error in version 1.7 release, please fix the code in advance",
                              UserWarning, stacklevel=4)


def _random_values(gen: Generator, n: int, np_dtype, frm, to) -> np.ndarray:
    """Samples of ``random_(from, to)``: ``frm is None`` means random_() without bounds."""
    if frm is None:
        if np_dtype == np.bool_:
            return (gen._words(n) & _U64(1)).astype(np.bool_)
        if np_dtype.kind == "f":
            digits = _FLOAT_DIGITS[np_dtype]
            w = gen._words64(n) if np_dtype == np.float64 else gen._words(n)
            return _int64_to((w % _U64((1 << digits) + 1)).view(np.int64), np_dtype)
        if np_dtype == np.int64:
            return (gen._words64(n) % _U64(1 << 63)).view(np.int64)
        hi = int(np.iinfo(np_dtype).max) + 1
        return (gen._words(n) % _U64(hi)).astype(np_dtype)
    if to is None and frm == -(1 << 63):
        if np_dtype not in (np.int64, np.float64, np.float32):
            raise RuntimeError("random_full_64_bits_range_kernel_cpu handles only int64, double, float and bfloat16")
        return _int64_to(gen._words64(n).view(np.int64), np_dtype)
    return _ints_from_to(gen, n, np_dtype, to - frm, frm)


def _random_range(np_dtype, frm: int, to) -> tuple[int, int | None]:
    """Check and adjust (from, to) as PyTorch's random_from_to_impl; returns (from, to exclusive)."""
    if to is not None:
        if frm >= to:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={frm} >= to={to}")
        if np_dtype.kind == "f":
            frm = _update_from(frm, np_dtype)
            to = _update_to(to, np_dtype)
            if frm >= to:
                raise RuntimeError("random_ expects 'from' casted to dtype to be less than 'to' casted to dtype, "
                                   f"but got from={frm} >= to={to}")
        _check_from_to(frm, to - 1, np_dtype)
        return frm, to
    if frm == -(1 << 63):
        return frm, None
    if np_dtype.kind == "f":
        to_inc = 1 << _FLOAT_DIGITS[np_dtype]
        frm = _update_from(frm, np_dtype)
        if frm >= to_inc:
            raise RuntimeError("random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' casted "
                               f"to dtype, but got from={frm} > to_inc={to_inc}")
    else:
        to_inc = _int_bounds(np_dtype)[1]
    _check_from_to(frm, to_inc, np_dtype)
    return frm, to_inc + 1


# ----- tensors: creation and in-place fills -------------------------------------------------------------

def _np_float_dtype(dtype, kernel: str):
    npd = D._default_float.np if dtype is None else _as_dtype(dtype).np
    if npd.kind != "f":
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_SCALAR_NAMES[npd.name]}\'')
    return npd


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


def _finish(data: np.ndarray, requires_grad: bool, device) -> Tensor:
    check_device(device, creation=True)
    t = make(data)
    if requires_grad:
        if data.dtype.kind != "f":
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        t._requires_grad = True
    return t


def _out(out, data: np.ndarray) -> Tensor:
    """Write ``data`` into the ``out=`` tensor (resized if its shape differs), as PyTorch's out variants."""
    if out._data.shape != data.shape:
        out._data = np.empty(data.shape, out._data.dtype)
    np.copyto(out._data, data, casting="unsafe")
    out._vc[0] += 1
    return out


def rand(*size, generator: Generator | None = None, dtype=None, layout=None, device=None,
         requires_grad: bool = False, pin_memory: bool = False, out=None, **kw) -> Tensor:
    """Uniform samples in [0, 1) (PyTorch's stream)."""
    shape = _size(size, kw.pop("size", None))
    npd = _np_float_dtype(dtype if out is None or dtype is not None else out.dtype, "check_uniform_bounds")
    data = _uniform_values(_gen(generator), math.prod(shape), npd, 0.0, 1.0).reshape(shape)
    return _finish(data, requires_grad, device) if out is None else _out(out, data)


def randn(*size, generator: Generator | None = None, dtype=None, layout=None, device=None,
          requires_grad: bool = False, pin_memory: bool = False, out=None, **kw) -> Tensor:
    """Standard normal samples (PyTorch's stream)."""
    shape = _size(size, kw.pop("size", None))
    npd = _np_float_dtype(dtype if out is None or dtype is not None else out.dtype, "normal_kernel_cpu")
    data = _normal_values(_gen(generator), math.prod(shape), npd, 0.0, 1.0).reshape(shape)
    return _finish(data, requires_grad, device) if out is None else _out(out, data)


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
    npd = np.dtype(np.int64) if dtype is None else _as_dtype(dtype).np
    frm, to = _random_range(npd, low, high)
    data = _random_values(_gen(generator), math.prod(shape), npd, frm, to).reshape(shape)
    return _finish(data, requires_grad, device) if out is None else _out(out, data)


def _check_input(input, op: str) -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")


def rand_like(input: Tensor, *, generator: Generator | None = None, dtype=None, layout=None, device=None,
              requires_grad: bool = False, memory_format=None) -> Tensor:
    _check_input(input, "rand_like")
    return rand(input._data.shape, generator=generator, dtype=dtype or input.dtype, device=device,
                requires_grad=requires_grad)


def randn_like(input: Tensor, *, generator: Generator | None = None, dtype=None, layout=None, device=None,
               requires_grad: bool = False, memory_format=None) -> Tensor:
    _check_input(input, "randn_like")
    return randn(input._data.shape, generator=generator, dtype=dtype or input.dtype, device=device,
                 requires_grad=requires_grad)


def randint_like(input: Tensor, *args, generator: Generator | None = None, dtype=None, layout=None,
                 device=None, requires_grad: bool = False, memory_format=None, **kw) -> Tensor:
    """``randint_like(input, high)`` / ``randint_like(input, low, high)``."""
    _check_input(input, "randint_like")
    low, high, _ = _randint_args(args + (input._data.shape,), kw)
    return randint(low, high, input._data.shape, generator=generator, dtype=dtype or input.dtype, device=device,
                   requires_grad=requires_grad)


def randperm(n: int, *, generator: Generator | None = None, dtype=None, layout=None, device=None,
             requires_grad: bool = False, pin_memory: bool = False, out=None) -> Tensor:
    """A random permutation of 0..n-1 (PyTorch's Fisher-Yates)."""
    n = int(n)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    npd = np.dtype(np.int64) if dtype is None else _as_dtype(dtype).np
    if npd.kind == "f":
        limit = (1 << _FLOAT_DIGITS[npd]) + 1
        if n > limit:
            raise RuntimeError(f"n cannot be greater than {limit} for {_SCALAR_NAMES[npd.name]} type.")
    elif npd != np.bool_ and n > int(np.iinfo(npd).max) + 1:
        raise RuntimeError(f"n cannot be greater than {int(np.iinfo(npd).max) + 1} for "
                           f"{_SCALAR_NAMES[npd.name]} type.")
    gen = _gen(generator)
    if n < (2 ** 32 - 1) // 20:
        # swap i with i + (draw % (n - i)): the draws are independent of the swaps, so draw them at once
        targets = ((gen._words(n - 1) % np.arange(n, 1, -1, dtype=np.uint64)).astype(np.int64)
                   + np.arange(n - 1)) if n > 1 else np.empty(0, np.int64)
        perm = _fisher_yates(targets, n)
    else:
        # PyTorch's large-n path (inside-out shuffle with 64-bit draws); a Python loop, slow
        w = gen._words64(n)
        perm = [0] * n
        for i in range(n):
            z = int(w[i]) % (i + 1)
            perm[i] = perm[z]
            perm[z] = i
    data = _int64_to(np.asarray(perm, dtype=np.int64), npd)
    return _finish(data, requires_grad, device) if out is None else _out(out, data)


def _fisher_yates(j: np.ndarray, n: int) -> np.ndarray:
    """The result of ``for k in range(n - 1): swap(perm[k], perm[j[k]])`` on 0..n-1 (j[k] >= k), without
    the sequential loop.

    Step k fixes position k. Let carry(p) be the value at position p just before step p: it is the original
    p, or, if earlier steps swapped with p, what the last of them (k < p) brought, which is carry(k). So
    carry follows "last step targeting p" pointers back to a root (pointer jumping). Step k's final value
    is carry(k) if j[k] == k; else what sits at j[k]: the original j[k], or carry(k') for the previous
    step k' that targeted j[k]."""
    res = np.arange(n, dtype=np.int64)
    if n < 2:
        return res
    k = np.arange(n - 1)
    swap = j != k
    ks, js = k[swap], j[swap]
    order = np.argsort(js, kind="stable")      # grouped by target, steps in order within a group
    sj, sk = js[order], ks[order]
    first = np.ones(len(sj), bool)
    first[1:] = sj[1:] != sj[:-1]
    last = np.ones(len(sj), bool)
    last[:-1] = sj[1:] != sj[:-1]
    carry = np.arange(n, dtype=np.int64)
    carry[sj[last]] = sk[last]                 # pointer to the last step that targeted p
    while True:
        nxt = carry[carry]
        if np.array_equal(nxt, carry):
            break
        carry = nxt
    stay = k[~swap]
    res[stay] = carry[stay]
    prev = np.empty(len(sj), np.int64)
    prev[first] = sj[first]
    later = np.nonzero(~first)[0]
    prev[later] = carry[sk[later - 1]]
    res[sk] = prev
    res[n - 1] = carry[n - 1]
    return res


def _fill_order(arr: np.ndarray):
    """Where PyTorch's serial kernels write sample k of a tensor: its elements in memory order
    (TensorIterator walks the smallest stride fastest), or None for C-contiguous arrays."""
    if arr.flags.c_contiguous:
        return None
    return np.transpose(arr, _axes_order(arr))


def _write(arr: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``arr``'s new content: ``values`` laid out in PyTorch's fill order."""
    out = np.empty_like(arr)
    view = _fill_order(out)
    if view is None:
        out.reshape(-1)[:] = values
    else:
        view[...] = values.reshape(view.shape)
    return out


def _inplace(self: Tensor, values: np.ndarray, node_name: str, others: tuple = ()) -> Tensor:
    """Overwrite ``self`` with ``values`` (already in self's layout) as PyTorch's in-place random ops:
    a leaf that requires grad refuses, the version counter moves, and under autograd the op is recorded
    as a node whose gradient is zero."""
    from ..autograd import _primitive as P
    V = _inplace_module()
    recording = P._state.enabled and (self._requires_grad or any(o._requires_grad for o in others))
    if recording or self._fw_grad is not None:
        prim = _fill_prim(node_name, len(others))
        return V.apply_inplace(prim, self, others, {"value": values})
    V.check_inplace(self, False)
    np.copyto(self._data, values, casting="unsafe")
    self._vc[0] += 1
    return self


def _inplace_module():
    from ..autograd import _views   # the in-place machinery
    return _views


_PRIMS: dict = {}


def _zero(xp, g, *_a, **_k):
    # a zero gradient (PyTorch gives zeros, not None, to the inputs of random ops); sum_to fits the shape
    return xp.zeros_like(g)


def _fill_prim(node_name: str, n_others: int = 0):
    """A primitive that replaces its first input by ``value``: PyTorch's NormalBackward0 & co, zero gradients."""
    key = (node_name, n_others)
    prim = _PRIMS.get(key)
    if prim is None:
        from ..autograd._primitive import defprim
        n = 1 + n_others
        prim = _PRIMS[key] = defprim(
            "random_fill", node_name, lambda xp, a, *rest, value: xp.fill_index(a, Ellipsis, value),
            vjp=(_zero,) * n if n > 1 else _zero, jvp=(_zero,) * n if n > 1 else _zero)
    return prim


def _make_prim(node_name: str, n_in: int):
    """A primitive whose output is ``value`` and whose inputs get zero gradient (normal(mean, std) & co)."""
    key = ("make", node_name, n_in)
    prim = _PRIMS.get(key)
    if prim is None:
        from ..autograd._primitive import defprim
        prim = _PRIMS[key] = defprim("random_sample", node_name, lambda xp, *ins, value: value,
                                     vjp=(_zero,) * n_in if n_in > 1 else _zero,
                                     jvp=(_zero,) * n_in if n_in > 1 else _zero)
    return prim


def _sampled(inputs: tuple, value: np.ndarray, node_name: str) -> Tensor:
    """A new tensor ``value`` computed from ``inputs``, recorded (zero gradient) if any requires grad."""
    from ..autograd import _primitive as P
    if P._state.enabled and any(isinstance(t, Tensor) and t._requires_grad for t in inputs):
        return P.apply(_make_prim(node_name, len(inputs)), inputs, {"value": value})
    return make(value)


def _float_self(self: Tensor, kernel: str) -> np.dtype:
    npd = self._data.dtype
    if npd.kind != "f":
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_SCALAR_NAMES[npd.name]}\'')
    return npd


def uniform_(self: Tensor, from_: float = 0, to: float = 1, *, generator: Generator | None = None, **kw) -> Tensor:
    """Fill with uniform samples in [from, to)."""
    from_ = kw.pop("from", from_)
    npd = _float_self(self, "check_uniform_bounds")
    lo, hi = _int_bounds(npd)
    name = _META_NAMES[npd.name]
    if not lo <= from_ <= hi:
        raise RuntimeError(f"from is out of bounds for {name}")
    if not lo <= to <= hi:
        raise RuntimeError(f"to is out of bounds for {name}")
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={_num(from_)} > "
                           f"to={_num(to)}")
    if to - from_ > hi:
        raise RuntimeError(f"uniform_ expects to-from <= std::numeric_limits<{_SCALAR_NAMES[npd.name]}>::max(), "
                           f"but found to={_num(to)} and from={_num(from_)} which result in to-from to exceed the "
                           "limit")
    n = self._data.size
    vals = _uniform_values(_gen(generator), n, npd, float(from_), float(to)) if n else np.empty(0, npd)
    return _inplace(self, _write(self._data, vals), "UniformBackward0")


def _num(v) -> str:
    """A number as C++'s ostream prints a double (PyTorch's error messages): 1, 2.5, 1e+20."""
    v = float(v)
    s = f"{v:.6g}"
    if "e" in s:
        m, e = s.split("e")
        s = f"{m}e{e[0]}{e[1:].lstrip('0').rjust(2, '0')}"
    return s


def normal_(self: Tensor, mean: float = 0, std: float = 1, *, generator: Generator | None = None) -> Tensor:
    """Fill with normal samples."""
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_num(std)}")
    npd = _float_self(self, "normal_kernel_cpu")
    n = self._data.size
    if n == 0:
        return _inplace(self, self._data.copy(), "NormalBackward0")
    contiguous = self._data.flags.c_contiguous
    vals = _normal_values(_gen(generator), n, npd, float(mean), float(std), contiguous)
    return _inplace(self, _write(self._data, vals), "NormalBackward0")


def exponential_(self: Tensor, lambd: float = 1, *, generator: Generator | None = None) -> Tensor:
    """Fill with Exp(lambd) samples: -log1p(-u) / lambd in float64, then cast."""
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_num(lambd)}")
    npd = self._data.dtype
    if npd.kind != "f":
        raise RuntimeError("Exponential distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {_SCALAR_NAMES[npd.name]}")
    vals = _exponential(_gen(generator), self._data.size, float(lambd), npd)
    return _inplace(self, _write(self._data, vals), "ExponentialBackward0")


def _exponential(gen: Generator, n: int, lambd: float, npd) -> np.ndarray:
    u = _uniform01_f64(gen, n)
    return _cast_from_double(-1.0 / lambd * libm.log1p(-u), npd)


def geometric_(self: Tensor, p: float, *, generator: Generator | None = None) -> Tensor:
    """Fill with Geometric(p) samples (trials until the first success)."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_num(p)}")
    u = _uniform01_f64(_gen(generator), self._data.size)
    with np.errstate(divide="ignore"):   # PyTorch: ceil(log(u) / log1p(-p)), with the C library's log and log1p
        vals = np.ceil(libm.log(u) / math.log1p(-p))
    return _inplace(self, _write(self._data, _cast_from_double(vals, self._data.dtype)), "GeometricBackward0")


def cauchy_(self: Tensor, median: float = 0, sigma: float = 1, *, generator: Generator | None = None) -> Tensor:
    """Fill with Cauchy(median, sigma) samples."""
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_num(sigma)}")
    npd = self._data.dtype
    if npd.kind != "f":
        raise RuntimeError("Cauchy distribution is a continuous probability distribution. dtype must be a floating "
                           f"point but you specified {_SCALAR_NAMES[npd.name]}")
    u = _uniform01_f64(_gen(generator), self._data.size)
    vals = _fma64(sigma, libm.tan(math.pi * (u - 0.5)), median)
    return _inplace(self, _write(self._data, _cast_from_double(vals, npd)), "CauchyBackward0")


def log_normal_(self: Tensor, mean: float = 1, std: float = 2, *, generator: Generator | None = None) -> Tensor:
    """Fill with exp(Normal(mean, std)) samples (the scalar normal path, sharing its cached sample)."""
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_num(std)}")
    npd = _float_self(self, "log_normal_cpu")
    with np.errstate(over="ignore"):
        vals = libm.exp(_normal_pairs(_gen(generator), self._data.size, float(mean), float(std)))
    return _inplace(self, _write(self._data, _cast_from_double(vals, npd)), "LogNormalBackward0")


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
    npd = self._data.dtype
    n = self._data.size
    if not has_from and to == "unset":
        node = "RandomBackward2"    # PyTorch's node names for its three overloads
        vals = _random_values(_gen(generator), n, npd, None, None)
    else:
        node = "RandomBackward0" if has_from else "RandomBackward1"
        to = None if to in ("unset", None) else int(to)
        frm, to = _random_range(npd, int(frm), to)
        vals = _random_values(_gen(generator), n, npd, frm, to) if n else np.empty(0, npd)
    return _inplace(self, _write(self._data, vals), node)


def bernoulli_(self: Tensor, p=0.5, *, generator: Generator | None = None) -> Tensor:
    """Fill with 0/1 samples: 1 where a uniform draw is < p (p a float or a tensor broadcast to self)."""
    gen = _gen(generator)
    n = self._data.size
    if isinstance(p, Tensor):
        pd = p._data.dtype
        if pd not in (np.float32, np.float64):
            raise NotImplementedError(f'"bernoulli_tensor_cpu_p_" not implemented for \'{_SCALAR_NAMES[pd.name]}\'')
        if n == 0:
            return _inplace(self, self._data.copy(), "BernoulliBackward1", (p,))
        pv = np.broadcast_to(p._data, self._data.shape)
        # p read in the order self is filled
        flat_p = (pv.reshape(-1) if self._data.flags.c_contiguous else
                  np.transpose(pv, _axes_order(self._data)).reshape(-1))
        if ((flat_p < 0) | (flat_p > 1)).any():
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error "
                               "message be improved?  If so, please report an enhancement request to PyTorch.)")
        u = _uniform01(gen, n, pd)   # float p: float uniforms (one word); double p: double uniforms
        vals = _int64_to((u < flat_p).astype(np.int64), self._data.dtype)
        return _inplace(self, _write(self._data, vals), "BernoulliBackward1", (p,) if p._requires_grad else ())
    p = float(p)
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_num(p)}")
    vals = _int64_to((_uniform01_f64(gen, n) < p).astype(np.int64), self._data.dtype)
    return _inplace(self, _write(self._data, vals), "BernoulliBackward2")


def _axes_order(arr: np.ndarray) -> list:
    return sorted(range(arr.ndim), key=lambda d: (-abs(arr.strides[d]), d))


def bernoulli(input: Tensor, p: float | None = None, *, generator: Generator | None = None, out=None) -> Tensor:
    """0/1 samples with probabilities ``input`` (or the float ``p``), in input's dtype."""
    res = make(np.empty(input._data.shape, input._data.dtype))
    if p is None:
        bernoulli_(res, input.detach(), generator=generator)
        value = res._data
        node = "BernoulliBackward0"
    else:
        bernoulli_(res, p, generator=generator)
        value = res._data
        node = "NotImplemented"
    if out is not None:
        return _out(out, value)
    return _sampled((input,), value, node)


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
        npd = D._default_float.np if dtype is None else _as_dtype(dtype).np
        res = make(np.empty(shape, npd))
        normal_(res, float(mean), float(std), generator=gen)
        return _finish(res._data, requires_grad, device) if out is None else _out(out, res._data)
    if size is not None:
        raise TypeError("normal() received an invalid combination of arguments - got (Tensor, float, size=tuple), "
                        "but expected one of: (Tensor mean, Tensor std), (Tensor mean, float std), "
                        "(float mean, Tensor std), (float mean, float std, tuple of ints size)")
    if st and std._data.size and not (std._data >= 0).all():
        raise RuntimeError("normal expects all elements of std >= 0.0")
    if mt and not st:
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {_num(std)}")
        res = make(np.empty(mean._data.shape, mean._data.dtype))
        normal_(res, 0.0, float(std), generator=gen)
        value = (res._data + mean._data).astype(res._data.dtype, copy=False)
        node, inputs = "NormalBackward1", (mean,)
    elif st and not mt:
        res = make(np.empty(std._data.shape, std._data.dtype))
        normal_(res, 0.0, 1.0, generator=gen)
        npd = res._data.dtype
        value = (res._data * std._data).astype(npd) + np.array(mean, npd)
        node, inputs = "NormalBackward2", (std,)
    else:
        shape = np.broadcast_shapes(mean._data.shape, std._data.shape)
        npd = mean._data.dtype
        res = make(np.empty(shape, npd))
        normal_(res, 0.0, 1.0, generator=gen)
        value = ((res._data * std._data).astype(npd) + mean._data).astype(npd, copy=False)
        node, inputs = "NormalBackward3", (mean, std)
    if out is not None:
        return _out(out, value)
    return _sampled(inputs, value, node)


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator: Generator | None = None, out=None) -> Tensor:
    """Indices sampled from the rows of ``input`` (non-negative weights), as PyTorch's CPU kernel."""
    gen = _gen(generator)
    probs = input._data
    if not 1 <= probs.ndim <= 2:
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if probs.dtype.kind != "f":
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{_SCALAR_NAMES[probs.dtype.name]}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    n_cat = probs.shape[-1]
    if not replacement and num_samples > n_cat:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if n_cat > 1 << 24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    rows = probs.reshape(-1, n_cat)
    shape = (num_samples,) if probs.ndim == 1 else (probs.shape[0], num_samples)
    if math.prod(shape) == 0:
        return make(np.empty(shape, np.int64)) if out is None else _out(out, np.empty(shape, np.int64))
    if probs.dtype == np.float16 and not replacement:
        raise RuntimeError("multinomial is not implemented for half on CPU")
    if not replacement or num_samples == 1:
        # PyTorch's fast path, also taken for a single sample with replacement
        if not (np.all(probs < np.inf) and np.all(probs >= 0)):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if np.any(rows.sum(axis=1) == 0):
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        # Gumbel-top-k in PyTorch's form: argmax / top-k of p / q with q ~ Exp(1)
        q = _exponential(gen, rows.size, 1.0, probs.dtype).reshape(rows.shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            key = (rows / q).astype(probs.dtype, copy=False)
        idx = np.argsort(-key, axis=1, kind="stable")[:, :num_samples]
        idx = np.ascontiguousarray(idx.reshape(shape), dtype=np.int64)
        return make(idx) if out is None else _out(out, idx)
    if (rows < 0).any():
        raise RuntimeError("invalid multinomial distribution (encountering probability entry < 0)")
    if not np.isfinite(rows).all():
        raise RuntimeError("invalid multinomial distribution (encountering probability entry = infinity or NaN)")
    cum = np.cumsum(rows, axis=1, dtype=rows.dtype)     # sequential sums in the input's type, as PyTorch
    total = cum[:, -1:]
    if not (total > 0).all():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    cum = (cum / total).astype(rows.dtype)
    cum[:, -1] = 1
    u = _uniform01_f64(gen, rows.shape[0] * num_samples).reshape(rows.shape[0], num_samples)
    # PyTorch's binary search finds the first bucket with cum >= u: on a non-decreasing cum, the number
    # of buckets with cum < u
    if cum.size * num_samples <= 1 << 22:
        result = (cum[:, None, :] < u[:, :, None]).sum(axis=2)
    else:
        result = np.stack([np.searchsorted(c.astype(np.float64), uu, side="left") for c, uu in zip(cum, u)])
    result = result.astype(np.int64)
    return make(result.reshape(shape)) if out is None else _out(out, result.reshape(shape))


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
