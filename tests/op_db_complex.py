"""Op database entries of the 'complex' family (collected into op_db.OP_DB): complex, polar, conj, angle, real/imag,
view_as_real/view_as_complex, and abs/sgn of complex values.

The harness draws real float inputs, so each op builds its complex values from them (``complex(x, y)``) and
returns real tensors (``view_as_real``, ``abs``, ``real``) where its result is complex: values, gradients,
second order and forward mode then go through the complex rules and are compared with torch as usual.
tests/test_complex_sweep.py runs these ops (and every other) on complex inputs too.
"""
from __future__ import annotations

from op_db import ALL, BINARY, FLOAT, UNARY, OpInfo, binary, unary

# shapes that broadcast (complex(x, y) broadcasts its parts); no empty ones: torch's own backward of view_as_real
# fails on them ("Tensor must have a last dimension with stride 1": an empty gradient's strides)
_PAIRS = [s for s in BINARY if 0 not in s[0] + s[1]][:6]


def _z(m, x, y):
    return m.complex(x, y)


OPS = [
    binary("complex", lambda m, x, y: m.view_as_real(m.complex(x, y)), dtypes=FLOAT, shapes=_PAIRS),
    binary("polar", lambda m, r, t: m.view_as_real(m.polar(r, t)), domain=("positive", "real"), dtypes=FLOAT,
           shapes=_PAIRS),
    binary("conj", lambda m, x, y: m.view_as_real(_z(m, x, y).conj() * _z(m, y, x)), dtypes=FLOAT, shapes=_PAIRS),
    binary("conj_physical", lambda m, x, y: m.view_as_real(m.conj_physical(_z(m, x, y)) * _z(m, y, x)),
           dtypes=FLOAT, shapes=_PAIRS),
    binary("conj_physical_", lambda m, x, y: m.view_as_real((_z(m, x, y) * 1).conj_physical_()), dtypes=FLOAT,
           shapes=_PAIRS),
    binary("angle_complex", lambda m, x, y: _z(m, x, y).angle(), domain="nonzero", dtypes=FLOAT, shapes=_PAIRS),
    unary("angle", lambda m, x: m.angle(x), domain="nonzero", dtypes=ALL),
    binary("abs_complex", lambda m, x, y: _z(m, x, y).abs(), domain="nonzero", dtypes=FLOAT, shapes=_PAIRS),
    binary("sgn_complex", lambda m, x, y: m.view_as_real(_z(m, x, y).sgn()), domain="nonzero", dtypes=FLOAT,
           shapes=_PAIRS),
    binary("real_imag", lambda m, x, y: (lambda z: z.real * 2 + z.imag * z.real + m.real(z) - m.imag(z))(
        _z(m, x, y)), dtypes=FLOAT, shapes=_PAIRS),
    binary("view_as_real", lambda m, x, y: m.view_as_real(_z(m, x, y) * 2) ** 2, dtypes=FLOAT, shapes=_PAIRS),
    OpInfo("view_as_complex", lambda m, x: m.view_as_real(m.view_as_complex(x) * m.view_as_complex(x)),
           [((2,),), ((3, 2),), ((2, 4, 2),)], dtypes=FLOAT),
    binary("adjoint", lambda m, x, y: (m.view_as_real(m.adjoint(_z(m, x, y)) * 1), m.adjoint(x) * 2),
           dtypes=FLOAT, shapes=[((3, 4), (3, 4)), ((2, 3, 4), (3, 4))]),
    binary("view_as_real_copy", lambda m, x, y: m.view_as_real_copy(_z(m, x, y)) ** 2, dtypes=FLOAT, shapes=_PAIRS),
    # torch refuses autograd through view_as_complex_copy ("does not support automatic differentiation for outputs
    # with complex dtype"): forward only here
    OpInfo("view_as_complex_copy", lambda m, x: m.view_as_real(m.view_as_complex_copy(x) * 2),
           [((2,),), ((3, 2),)], dtypes=FLOAT, supports_grad=False, supports_gradgrad=False, supports_fwd=False),
    binary("cfloat_cdouble", lambda m, x, y: (m.view_as_real(x.cfloat()), m.view_as_real(y.cdouble() * 2)),
           dtypes=FLOAT, shapes=_PAIRS, eps=1e-2),   # x.cfloat() rounds to float32 (linear: a large step is exact)
    binary("complex_predicates", lambda m, x, y: x * (int(_z(m, x, y).is_complex()) + int(x.is_complex()) +
                                                       int(_z(m, x, y).is_conj()) + int(m.is_neg(x))) +
           _z(m, x, y).resolve_conj().resolve_neg().real, dtypes=FLOAT, shapes=_PAIRS),
]

# no hypothesis-drawn shapes: the sweep and the samples above cover broadcasting
HYP_BINARY: list = []
HYP_UNARY: list = []
