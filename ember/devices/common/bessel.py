"""The Bessel-family special functions on an array-API device: the cpu file's kernels (written once against the
standard, ``cpu.bessel.build``) instantiated for the device's array library."""
from __future__ import annotations

from ..cpu import bessel as _b


def kernels(k) -> dict:
    return _b.build(k.xp)
