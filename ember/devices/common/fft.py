"""The 'fft' family's kernels on the array API's ``fft`` extension (the cpu's fft.py: the same three primitives,
the same normalization modes)."""
from __future__ import annotations

# fft_norm_mode -> (the standard's norm for a forward transform, for an inverse one), as cpu/fft.py
_NORM = {0: ("backward", "forward"), 1: ("ortho", "ortho"), 2: ("forward", "backward")}


def kernels(k) -> dict:
    xp = k.xp

    def _fft():
        f = getattr(xp, "fft", None)
        if f is None:
            raise NotImplementedError(f"ember: device '{k.device_type}' has no FFT (its library {xp.__name__} lacks "
                                      "the array API's fft extension)")
        return f

    def fft_c2c(a, dim, normalization, forward):
        f = _fft()
        if forward:
            return f.fftn(a, axes=tuple(dim), norm=_NORM[normalization][0])
        return f.ifftn(a, axes=tuple(dim), norm=_NORM[normalization][1])

    def fft_r2c(a, dim, normalization, onesided):
        f = _fft()
        norm = _NORM[normalization][0]
        if onesided:
            return f.rfftn(a, axes=tuple(dim), norm=norm)
        cdt = xp.complex64 if a.dtype == xp.float32 else xp.complex128
        return f.fftn(xp.astype(a, cdt), axes=tuple(dim), norm=norm)

    def fft_c2r(a, dim, normalization, last_dim_size):
        s = tuple(a.shape[d] for d in dim[:-1]) + (last_dim_size,)
        return _fft().irfftn(a, s=s, axes=tuple(dim), norm=_NORM[normalization][1])

    return {"fft_c2c": fft_c2c, "fft_r2c": fft_r2c, "fft_c2r": fft_c2r}
