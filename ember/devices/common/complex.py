"""Complex-number kernels in array-API standard operations (the cpu's complex.py: views become copies where
the standard has none)."""
from __future__ import annotations

import math


def kernels(k) -> dict:
    xp = k.xp

    def _real_dtype(a):
        return xp.float32 if a.dtype == xp.complex64 else xp.float64

    def conj(a):
        return xp.conj(a) if k.kind(a) == "c" else a

    def real(a):
        return xp.real(a) if k.kind(a) == "c" else a

    def imag(a):
        return xp.imag(a)

    def angle(a):
        if k.kind(a) == "c":
            return xp.atan2(xp.imag(a), xp.real(a))
        zero = xp.zeros_like(a)
        return xp.where(a < 0, xp.full_like(a, math.pi), xp.where(a != a, a, zero))

    def view_as_real(a):
        return xp.stack([xp.real(a), xp.imag(a)], axis=-1)

    def make_complex(re, im):
        re, im = xp.broadcast_arrays(re, im)
        if bool(xp.any(xp.isinf(im))):   # the standard has no way to place i*inf without a nan real part
            raise NotImplementedError("ember: complex values with an infinite imaginary part are not supported on "
                                      "this device")
        cdt = xp.complex64 if re.dtype == xp.float32 else xp.complex128
        return xp.astype(re, cdt) + xp.astype(im, cdt) * xp.asarray(1j, dtype=cdt)

    def view_as_complex(a):
        return make_complex(a[..., 0], a[..., 1])

    def polar(r, theta):
        return make_complex(r * xp.cos(theta), r * xp.sin(theta))

    return {"conj": conj, "real": real, "imag": imag, "angle": angle, "view_as_real": view_as_real,
            "view_as_complex": view_as_complex, "make_complex": make_complex, "polar": polar}
