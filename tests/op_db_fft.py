"""Op database entries of the 'fft' family (collected into op_db.OP_DB): every function of torch.fft.

A complex result is compared through ``view_as_real`` (the generated tests compare real outputs; the complex sweep,
tests/test_complex_sweep.py, runs the same entries on complex inputs). Samples cover the default arguments, ``n`` and
``s`` padding and trimming, every ``norm``, negative and non-last dims, odd and even lengths (the Nyquist entry of
the Hermitian transforms) and batch dims. Samples torch rejects live in ``fft_errors`` (forward test only: ember must
raise torch's exception type); their messages are checked in tests/test_fft.py.
"""
from __future__ import annotations

from op_db import FLOAT, OpInfo  # noqa: F401
from op_db_linalg import F_I, NO_GRAD, _shapes  # noqa: F401  (the same sample helpers)


def _real(m, r):
    # (r * 1: PyTorch's ifft/ihfft of a real signal is a lazily conjugated view, which view_as_real refuses)
    return m.view_as_real(r * 1) if r.is_complex() else r


def _fn(name):
    def op(m, a, **kw):
        return _real(m, getattr(m.fft, name)(a, **kw))
    op.__name__ = name
    return op


ONE_D = [(((8,),), {}), (((3, 5),), {"dim": 0}), (((2, 3, 4),), {"n": 6, "dim": 1}), (((2, 7),), {"n": 4}),
         (((6,),), {"norm": "ortho"}), (((3, 5),), {"norm": "forward", "dim": -2}), (((4, 5),), {"n": 7, "norm": "backward"})]
# irfft/hfft: the input is the onesided half (m points give 2 (m - 1) by default; n odd keeps the last entry)
C2R_1D = [(((5,),), {}), (((3, 4),), {"dim": 0}), (((2, 4, 3),), {"n": 7, "dim": 1}), (((2, 6),), {"n": 5}),
          (((4,),), {"norm": "ortho"}), (((3, 5),), {"norm": "forward", "n": 8}), (((4, 3),), {"n": 1})]
N_D = [(((4, 6),), {}), (((2, 3, 4),), {"dim": (0, 2)}), (((3, 4, 5),), {"s": (5, 3)}), (((4, 5),), {"s": (-1, 6)}),
       (((2, 3, 4),), {"s": (4, 2), "dim": (-1, 0), "norm": "ortho"}), (((3, 5),), {"norm": "forward"}),
       (((2, 3, 4),), {"dim": (1,)})]
TWO_D = [(((4, 6),), {}), (((2, 3, 4),), {"dim": (0, 2)}), (((3, 4, 5),), {"s": (5, 3)}),
         (((2, 3, 5),), {"s": (4, 2), "dim": (-1, 0), "norm": "ortho"}), (((3, 5),), {"norm": "forward"})]
C2R_N_D = [(((4, 5),), {}), (((2, 3, 4),), {"dim": (0, 2)}), (((3, 4, 5),), {"s": (5, 7)}), (((4, 3),), {"s": (-1, 5)}),
           (((2, 3, 4),), {"s": (4, 6), "dim": (-1, 0), "norm": "ortho"}), (((3, 4),), {"norm": "forward"}),
           (((2, 3, 4),), {"dim": (1,)})]
C2R_2D = [(((4, 5),), {}), (((2, 3, 4),), {"dim": (0, 2)}), (((3, 4, 5),), {"s": (5, 7)}),
          (((2, 3, 4),), {"s": (4, 6), "dim": (-1, 0), "norm": "ortho"}), (((3, 4),), {"norm": "forward"})]


def _freq(name):
    def op(m, a, n, d=1.0):
        return a * getattr(m.fft, name)(n, d, dtype=a.dtype, device=a.device)
    op.__name__ = name
    return op


def _errors(m, a, fn, **kw):
    return getattr(m.fft, fn)(a, **kw)


ERRORS = [
    (((4,),), {"fn": "fft", "norm": "bad"}), (((4,),), {"fn": "fft", "n": 0}), (((4,),), {"fn": "rfft", "dim": 1}),
    (((),), {"fn": "fft"}), (((),), {"fn": "rfftn"}), (((3, 4),), {"fn": "fftn", "dim": (0, 0)}),
    (((3, 4),), {"fn": "fftn", "s": (3,), "dim": (0, 1)}), (((3, 4),), {"fn": "fftn", "s": (3, 3, 3)}),
    (((1,),), {"fn": "irfft"}), (((3, 4),), {"fn": "irfftn", "s": (2, 0)}), (((0,),), {"fn": "fft"}),
    (((3, 4),), {"fn": "hfft2", "norm": "ortho_"}), (((4,),), {"fn": "fft2"}), (((),), {"fn": "fftshift"}),
    (((3, 4),), {"fn": "ifftshift", "dim": 2}), (((3,),), {"fn": "ihfft", "n": -1}),
]

def _stft(m, a, w, method=False, **kw):
    f = a.stft if method else (lambda *args, **k: m.stft(a, *args, **k))
    return _real(m, f(window=w, return_complex=True, **kw))


def _istft(m, a, w, method=False, **kw):
    ik = {k: v for k, v in kw.items() if k != "pad_mode"}
    X = m.stft(a, window=w, return_complex=True, **kw)
    return (X.istft if method else (lambda *args, **k: m.istft(X, *args, **k)))(window=w, **ik)


STFT = [(((2, 30), (8,)), {"n_fft": 8}), (((25,), (6,)), {"n_fft": 8, "hop_length": 3, "win_length": 6}),
        (((2, 30), (8,)), {"n_fft": 8, "center": False, "normalized": True, "onesided": False}),
        (((2, 30), (8,)), {"n_fft": 8, "pad_mode": "constant", "method": True})]
ISTFT = [(((2, 30), (8,)), {"n_fft": 8}), (((25,), (6,)), {"n_fft": 8, "hop_length": 3, "win_length": 6}),
         (((2, 30), (8,)), {"n_fft": 8, "normalized": True, "onesided": False, "method": True})]

OPS = [
    *[OpInfo(f"fft.{n}", _fn(n), _shapes(*ONE_D), dtypes=F_I) for n in ("fft", "ifft", "rfft", "ihfft")],
    *[OpInfo(f"fft.{n}", _fn(n), _shapes(*C2R_1D), dtypes=F_I) for n in ("irfft", "hfft")],
    *[OpInfo(f"fft.{n}", _fn(n), _shapes(*N_D), dtypes=F_I) for n in ("fftn", "ifftn", "rfftn", "ihfftn")],
    *[OpInfo(f"fft.{n}", _fn(n), _shapes(*TWO_D), dtypes=F_I) for n in ("fft2", "ifft2", "rfft2", "ihfft2")],
    *[OpInfo(f"fft.{n}", _fn(n), _shapes(*C2R_N_D), dtypes=F_I) for n in ("irfftn", "hfftn")],
    *[OpInfo(f"fft.{n}", _fn(n), _shapes(*C2R_2D), dtypes=F_I) for n in ("irfft2", "hfft2")],
    OpInfo("fft.fftfreq", _freq("fftfreq"), _shapes((((5,),), {"n": 5}), (((6,),), {"n": 6, "d": 0.1}),
                                                    (((1,),), {"n": 1, "d": 2.5}), (((0,),), {"n": 0}))),
    OpInfo("fft.rfftfreq", _freq("rfftfreq"), _shapes((((3,),), {"n": 5}), (((4,),), {"n": 6, "d": 0.1}),
                                                      (((1,),), {"n": 1, "d": 2.5}))),
    *[OpInfo(f"fft.{n}", _fn(n), _shapes(((5,),), ((3, 4),), (((2, 3, 5),), {"dim": (0, 2)}),
                                         (((3, 4),), {"dim": -1}), (((4,),), {"dim": (0,)})), dtypes=F_I)
      for n in ("fftshift", "ifftshift")],
    # the window (second input) from the positive domain: its overlap-added square never vanishes (istft's NOLA)
    OpInfo("stft", _stft, STFT, domain=("real", "positive")),
    OpInfo("istft", _istft, ISTFT, domain=("real", "positive")),
    OpInfo("fft_errors", _errors, _shapes(*ERRORS), dtypes=FLOAT, **NO_GRAD),
]

HYP_BINARY: list = []
HYP_UNARY: list = []
