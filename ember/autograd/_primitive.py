"""The primitive machinery: how an op declared once runs forward, backward (VJP) and forward-mode (JVP).

A primitive is declared with ``defprim``:
  * ``forward(xp, *inputs, **params)`` on raw arrays (inputs are arrays or Python scalars);
  * one VJP rule per input, ``vjp_i(xp, g, out, *inputs, **params) -> gradient for input i``;
  * its JVP: one rule per input, ``jvp_i(xp, t_i, out, *inputs, **params) -> tangent contribution``,
    or the kind of op it is, from which the JVP follows:
      - ``"elementwise"``: the VJP rules with the tangent in place of the gradient;
      - ``"linear"``: the op is linear in all its inputs together: the op applied to the tangents;
      - ``"multilinear"``: linear in each input alone (mul, matmul): the op with one input's tangent in
        its place, summed over the inputs;
  * ``saves``: which inputs the rules read (by position), ``saves_out``: whether they read the output.
    A tuple saves those inputs whenever the node is recorded; a dict ``{input: (i, ...)}`` saves an input
    only when one of inputs ``i, ...`` needs a gradient (PyTorch's ``should_compute_output``: ``self * other``
    keeps ``other`` only for ``self``'s gradient, so ``h @ W_frozen`` then ``h.relu_()`` is no error).
    A rule sees every other tensor input as an ``Unsaved`` stand-in: its ``shape``, ``dtype`` and
    ``ndim`` only. Reading its values raises an error naming the op and the input, so a declaration
    that forgets to save what its rule reads fails in the tests (tests/test_conditional_saves.py runs every
    rule with only its own input requiring grad), not in a user's backward;
  * ``promote``: how tensor inputs of different dtypes are cast before the forward (``"standard"``:
    PyTorch's result type; ``"float"``: the same, integral results computing in the default float).

Rules are written against the namespace ``xp``. Plain ``backward()`` calls them with the raw
namespace of the tensors' device (``ember.devices.cpu.namespace`` for 'cpu', looked up in ``_device.NAMESPACES``) on
raw arrays: NumPy speed, no graph. ``create_graph=True`` and forward-mode AD call the very same rules
with ``graph_ns`` (ember's own differentiable functions) on Tensors, so every derivative is itself
differentiable.

Broadcasting is undone in one place (``sum_to`` in ``PrimNode.apply``), as is casting a
gradient back to its input's dtype. A rule returning ``None`` means a zero gradient.
"""
from __future__ import annotations

import types

from .._device import NAMESPACES, cpu_backend, fp_quiet as _fp_quiet, fp_restore as _fp_restore
from .._tensor import Tensor, _new, make
from .._state import track_tangent
from . import grad_mode as _gm
from .anomaly_mode import _anomaly, record_stack
from .graph import (
    FREED,
    FREED_MESSAGE,
    HOOKS_ON,
    NODE_OBSERVERS,
    Node,
    SavedTensor,
    _seq,
    current_hooks,
    grad_accumulator,
    modified_message,
    node_class,
    pack_saved)
from .._util import promote_float, promote_standard

# The CPU device's arrays are looked up without a dict lookup (the common case); every array operation goes
# through the namespace, xp.
_ndarray = cpu_backend().array_types[0]
_NP_NS = NAMESPACES[_ndarray]
# A Python number that meets bfloat16 tensors is made a bfloat16 scalar first, as PyTorch rounds it (NumPy would
# promote the pair to float32); float16 needs nothing (NumPy keeps Python numbers weak beside it). The primitives
# in KEEP_NUMBERS (mul, div) take a second operand's number as it is: their kernels compute with it in float32,
# as PyTorch's.
from .._dtype import bfloat16 as _bfloat16   # noqa: E402
from .. import _dtype as _dtype_mod   # noqa: E402
_BF16 = _bfloat16.np
KEEP_NUMBERS: set = set()
# _fp_quiet/_fp_restore: NumPy's floating-point exceptions are silent while an op computes, and the caller's error
# state is back when it returns (PyTorch never warns about overflow or 0/0).
_state = _gm._state
fwd_state = _gm.fwd_state
_EMPTY: dict = {}
KEEP_DTYPE = object()   # apply(..., dtype=KEEP_DTYPE): the caller knows no cast is needed (fast paths)

# ember's own namespace of differentiable functions, mirroring the raw namespaces name for name; filled by
# ember.ops from the registry once every family is imported.
graph_ns = types.SimpleNamespace()

_PROMOTE = {None: None, "standard": promote_standard, "float": promote_float}
_JVP_KINDS = ("elementwise", "linear", "multilinear")


class Primitive:
    """One differentiable op: forward, per-input VJP and JVP rules, and what backward must save."""

    __slots__ = ("name", "node_cls", "forward", "vjps", "jvps", "jvp_kind", "saves", "save_order", "saves_out",
                 "is_view", "promote", "edge_pos", "saved_names", "param_names", "batch", "_when", "cx", "cx_in", "vmap")

    def __init__(self, name, node_name, forward, vjp, jvp=None, saves=(), saves_out=False, is_view=False,
                 promote=None, scalar_args=(), saved_names=None):
        self.name = name
        self.node_cls = node_class(node_name, PrimNode)
        self.forward = forward
        self.vjps = vjp if isinstance(vjp, tuple) else (vjp,)
        self.jvp_kind = None
        if jvp == "elementwise":
            self.jvps = self.vjps
        elif jvp in _JVP_KINDS:
            self.jvp_kind, self.jvps = jvp, None
        elif isinstance(jvp, str):
            raise ValueError(f"defprim({name!r}): unknown JVP kind {jvp!r}; use one of {_JVP_KINDS}")
        else:
            self.jvps = jvp if isinstance(jvp, tuple) or jvp is None else (jvp,)
        self.saves = frozenset(saves)
        self.save_order = tuple(sorted(self.saves))   # the same, in order (what _record walks)
        self.saves_out = saves_out
        self.is_view = is_view  # output may alias input 0's memory (then it shares its version counter)
        self.promote = _PROMOTE[promote]
        # PyTorch gives a node no edge for a Scalar argument (pow(x, 2), clamp(x, 0, 1)): the inputs at
        # ``scalar_args`` (always Python scalars) get none, and edge k of a node is input edge_pos[k].
        self.edge_pos = tuple(j for j in range(len(self.vjps)) if j not in scalar_args) if scalar_args else None
        # PyTorch's names of the inputs (grad_fn._saved_<name>), by position; None: the generic ones
        self.saved_names = saved_names
        # the keyword parameters the forward takes (after xp and the inputs), for grad_fn._saved_<param>
        code = getattr(getattr(forward, "__wrapped__", forward), "__code__", None)   # (a wrapper: its kernel's)
        if code is None:
            self.param_names = ()
        elif type(self.vjps) is tuple:
            self.param_names = code.co_varnames[1 + len(self.vjps):code.co_argcount + code.co_kwonlyargcount]
        else:   # one rule per input, made on demand (cat, stack): any number of inputs, params keyword-only
            self.param_names = code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount]
        # per input: None to save it (if declared) whenever the node is recorded, else the inputs one of which
        # must need a gradient for it to be saved (from a dict ``saves``); None: every input always
        self._when = _save_when(name, self.vjps, self.edge_pos, saves) if isinstance(saves, dict) else None
        # autograd.grad(is_grads_batched=True): False (the default, safe): backward runs this primitive's
        # node once per row of the batch; True (defprim(..., batch=True)): its VJP rules broadcast over a leading
        # batch dimension of the gradient as written, so the node runs once for the whole batch
        # (tests/test_batched_grad.py checks each against row-by-row backward on every op-database sample);
        # a tuple: batched rules of its own (batch_rule).
        self.batch = False
        # complex inputs: None refuses them (PyTorch's NotImplementedError); else the primitive whose rules a
        # node with complex values runs (see ``complex_rules``); cx_in: whether a complex input (not only a
        # complex output) makes a node complex
        self.cx = None
        self.cx_in = False
        # vmap's batching rule (autograd/_batching.py, declared by the op families with ``batching``); None: the
        # primitive runs once per example, with PyTorch's performance warning
        self.vmap = None

    def __repr__(self) -> str:
        return f"<primitive {self.name}>"

    def __call__(self, xp, *inputs, **params):
        """This primitive inside another's rule (a first derivative PyTorch gives a node of its own, e.g.
        ``_softmax_backward_data``): its forward on raw arrays in plain backward; recorded on Tensors under
        ``create_graph`` and forward mode, so a second derivative goes through its node and its rules."""
        if xp is graph_ns:
            return apply(self, inputs, params)
        return self.forward(xp, *inputs, **params)


PRIMITIVES: list = []   # every primitive declared, in order (the op database's coverage test reads it)


def batch_rule(prim: Primitive, vjp) -> None:
    """Give ``prim`` batched VJP rules (one per input, or a per-input object as for cat): the same
    signature as its ``vjp``, but ``g`` has a leading batch dimension. For rules that need the batch
    dimension named (positive axes, reshapes to the input's shape, dot products)."""
    prim.batch = vjp if isinstance(vjp, tuple) or not callable(vjp) else (vjp,)


def default_node_name(name: str) -> str:
    """PyTorch's usual name of an op's backward node: ``mul`` -> ``MulBackward0``, ``log_softmax`` ->
    ``LogSoftmaxBackward0``. A primitive whose node PyTorch names otherwise declares ``node=``."""
    return "".join(p[:1].upper() + p[1:] for p in name.split("_")) + "Backward0"


def defprim(name, forward, vjp, jvp=None, *, node=None, saves=(), saves_out=False, is_view=False,
            promote=None, scalar_args=(), saved_names=None, batch: bool = False, complex=None) -> Primitive:
    """Declare a primitive (see the module docstring); ``node`` is PyTorch's name of its backward node when it is
    not ``default_node_name(name)``; ``scalar_args``: positions of inputs that are PyTorch ``Scalar`` arguments
    (no graph edge); ``saved_names``: PyTorch's name of each input, as ``grad_fn._saved_<name>`` shows it, where
    the generic ones (``self``, ``other``, ``input2``...) are wrong; ``batch=True``: the VJP rules, raw and graph,
    broadcast over a leading batch dimension of the gradient as written (see ``Primitive.batch``; rules that
    need the batch dimension named are given with ``batch_rule``); ``complex``: how it takes complex inputs
    (``complex_rules``; False: it refuses them, as PyTorch's kernels without a complex version; None, the default:
    True for the linear and multilinear ops, else False)."""
    p = Primitive(name, node or default_node_name(name), forward, vjp, jvp, saves, saves_out, is_view, promote,
                  scalar_args, saved_names)
    p.batch = bool(batch)
    if complex is None and jvp in ("linear", "multilinear"):
        complex = True   # linear in its inputs with real coefficients: its rules hold for complex values as written
    if complex:
        complex_rules(p, complex)
    install_saved_attrs(p)
    PRIMITIVES.append(p)
    return p


def reordered(prim: Primitive, edge_pos: tuple, node: str) -> Primitive:
    """A twin of ``prim`` (same forward and rules) whose node, named ``node``, lists its inputs' edges in another
    order: edge k is input ``edge_pos[k]``. ``torch.rsub(a, b)`` computes ``b - a`` with sub but records
    RsubBackward0 with a's edge first."""
    def twin_of(p):
        t = object.__new__(Primitive)
        for slot in Primitive.__slots__:
            setattr(t, slot, getattr(p, slot))
        t.edge_pos = edge_pos
        t.node_cls = node_class(node, PrimNode)
        return t
    twin = twin_of(prim)
    if prim.cx is prim:
        twin.cx = twin
    elif prim.cx is not None:   # the complex rules' twin, with the same order
        twin.cx = twin_of(prim.cx)
        twin.cx.cx = twin.cx
    install_saved_attrs(twin)
    PRIMITIVES.append(twin)
    return twin


# ----- complex numbers -----------------------------------------------------------------------------

def complex_rules(prim: Primitive, how) -> None:
    """Let ``prim`` take complex inputs. PyTorch's convention: the gradient of a real loss L with respect to a
    complex z is ``dL/dz*`` (conjugate Wirtinger), so gradient descent works; for a holomorphic f that is
    ``g * conj(f'(z))``. ``how``:

    * ``True``: the op is holomorphic (or linear) with real coefficients, so ``conj(f'(z)) = f'(conj(z))``:
      its real VJP rules hold when they read the conjugates of the saved inputs, the output and complex
      parameters (``mul``: ``g * conj(b)``; ``matmul``: ``g @ B^H``). Its JVP rules hold as written.
    * ``"own"``: its rules are written for complex values as they are (conj, view_as_real, angle).
    * ``(vjps, jvps)`` or ``(vjps, jvps, saves, saves_out)``: rules of its own for complex values (abs, sgn: not
      holomorphic), in defprim's form, and what they read if that differs; a node with a complex input or
      output runs them, and forward mode its JVPs.
    """
    if how == "own":   # its rules already hold for complex values
        prim.cx = prim
        prim.cx_in = True
        return
    twin = object.__new__(Primitive)
    for slot in Primitive.__slots__:
        setattr(twin, slot, getattr(prim, slot))
    twin.batch = False   # is_grads_batched: row by row
    if how is True:
        if type(prim.vjps) is tuple:
            twin.vjps = tuple(None if r is None else _conjugating(prim, i) for i, r in enumerate(prim.vjps))
    else:
        vjps, jvps, *more = how
        if more:   # what its complex rules read: (saves, saves_out)
            twin.saves, twin.saves_out = frozenset(more[0]), more[1]
            twin.save_order = tuple(sorted(twin.saves))
            twin._when = None
        twin.vjps = vjps if isinstance(vjps, tuple) else (vjps,)
        twin.jvp_kind = None
        if jvps in _JVP_KINDS:
            twin.jvp_kind, twin.jvps = jvps, None
        else:
            twin.jvps = jvps if isinstance(jvps, tuple) or jvps is None else (jvps,)
        prim.cx_in = True
    twin.cx = twin
    twin.cx_in = prim.cx_in
    prim.cx = twin


def _conj_of(xp, v):
    """The conjugate of a rule's argument when it is complex (a Tensor, an array or a Python complex)."""
    if type(v) is complex:
        return v.conjugate()
    if isinstance(v, Tensor):
        return graph_ns.conj(v) if v._data.dtype.kind == "c" else v
    if type(v) is Unsaved or not hasattr(v, "dtype") or getattr(v.dtype, "kind", None) != "c":
        return v
    return xp.conj(v)


def _conjugating(prim: Primitive, i: int):
    """Input ``i``'s VJP rule of ``prim`` on the conjugates (looked up at each call: the rule is prim's own)."""
    def conj_rule(xp, g, out, *args, **params):
        return prim.vjps[i](xp, g, _conj_of(xp, out), *[_conj_of(xp, a) for a in args],
                            **{k: _conj_of(xp, v) for k, v in params.items()})
    conj_rule.__name__ = getattr(prim.vjps[i], "__name__", "rule")
    return conj_rule


def _complex_refused(prim: Primitive, d) -> Exception:
    word = "ComplexFloat" if d.dtype.itemsize == 8 else "ComplexDouble"
    return NotImplementedError(f'"{prim.name}" not implemented for \'{word}\'')


# ----- dtypes with few kernels: float8 and uint16/32/64 (issue 18) --------------------------------------------
# PyTorch's CPU has kernels for these dtypes in a few ops only (copies, views, indexing, casts, mul; see
# tests/test_float8.py and tests/test_uint_dtypes.py); every other primitive refuses a tensor of them, as it
# refuses complex ones, with PyTorch's NotImplementedError. ``apply`` checks one string membership per tensor
# input (the dtype's character code), the cost the complex check had alone.
_COMMON_SHELL_OPS = frozenset(("to", "clone", "cat", "stack", "reshape", "permute", "expand", "slice", "select",
                               "diagonal", "diag_embed", "getitem", "fill", "where", "repeat", "roll", "mul",
                               "unfold"))
SHELL_OPS: dict = {}   # a dtype's character code -> the primitives that take it
_F8_EXTRA = ("abs", "index", "index_put", "matmul")
_U_EXTRA = ("index", "gather_along", "nan_to_num", "sum", "prod", "cumsum", "cumprod")
for _n, _extra in (("float8_e4m3fn", _F8_EXTRA), ("float8_e4m3fnuz", _F8_EXTRA), ("float8_e5m2", _F8_EXTRA),
                   ("float8_e5m2fnuz", _F8_EXTRA), ("float8_e8m0fnu", ("index",)),
                   ("uint16", _U_EXTRA), ("uint32", _U_EXTRA), ("uint64", _U_EXTRA)):
    _np = getattr(_dtype_mod, _n).np
    if not isinstance(_np, _dtype_mod._Missing):
        SHELL_OPS[_np.char] = _COMMON_SHELL_OPS.union(_extra)
SHELL_OPS["Q"] = SHELL_OPS["L"]   # NumPy's two names of uint64
GATED = "FD" + "".join(SHELL_OPS)   # complex64, complex128 and the dtypes above


def _gate_error(prim: Primitive, d, dtype, refuse_cx: bool, args: tuple) -> Exception | None:
    """The exception ``apply`` raises for array ``d`` (complex, float8 or uint16/32/64) meeting ``prim``, if any;
    ``dtype``: the NumPy dtype the op computes in (None: d's own)."""
    char = d.dtype.char
    if char in "FD":
        return _complex_refused(prim, d) if refuse_cx else None
    name = prim.name
    if name == "mul" and d.dtype.kind != "u" and any(not isinstance(a, Tensor) or not a._data.ndim for a in args):
        name = "mul_cpu_reduced_float"   # float8 times a number (or a 0-d tensor): PyTorch's kernel refuses
    elif name == "matmul" and "matmul" in SHELL_OPS[char]:   # float8 has PyTorch's addmm only: by a matrix
        na, nb = (a._data.ndim for a in args)
        if nb == 2:   # (a vector or a batch times a matrix: PyTorch folds them into one mm)
            return None
        name = "bmm" if nb > 2 else "dot" if na == 1 else "addmv_impl_cpu"
    elif (dtype is not None and dtype.char not in SHELL_OPS) or name in SHELL_OPS[char]:
        # computed in a dtype with kernels (exp of uint16 in float32, as PyTorch), or a primitive that takes it
        return None
    return NotImplementedError(f'"{name}" not implemented for \'{_dtype_mod.type_word(d.dtype)}\'')


_F32 = _dtype_mod.float32.np
_F64 = _dtype_mod.float64.np


def _is_complex_node(prim: Primitive, t: Tensor, args: tuple) -> bool:
    if t._data.dtype.kind == "c":
        return True
    return prim.cx_in and any(isinstance(a, Tensor) and a._data.dtype.kind == "c" for a in args)


# ----- what a rule sees of an input that was not saved -------------------------------------------

class _UnsavedRead(Exception):
    def __init__(self, stand_in):
        self.stand_in = stand_in


class Unsaved:
    """An input (or output) a primitive's declaration does not save: its shape and dtype, no values."""

    __slots__ = ("shape", "dtype")
    __hash__ = object.__hash__

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def _refuse(self, *args, **kwargs):
        raise _UnsavedRead(self)

    __array__ = __array_ufunc__ = __array_function__ = __getitem__ = __iter__ = __len__ = _refuse
    __bool__ = __float__ = __int__ = __index__ = __neg__ = __pos__ = __abs__ = __invert__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _refuse
    __pow__ = __rpow__ = __matmul__ = __rmatmul__ = __floordiv__ = __mod__ = _refuse
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __and__ = __or__ = __xor__ = _refuse

    def __repr__(self) -> str:
        return f"<input not saved: shape={self.shape}, dtype={self.dtype}>"


def _unsaved(shape, dtype) -> Unsaved:
    u = _new(Unsaved)
    u.shape = shape
    u.dtype = dtype
    return u


# Stand-ins are shared per (shape, dtype): a node's record of its inputs then allocates nothing the cyclic
# garbage collector must walk (a large live graph makes every full collection slower; bench/NOTES.md).
# _STAND_INS maps a shape to the stand-in of the dtype it met first (``_record`` compares the dtype by identity),
# _STAND_INS_BY_DTYPE maps (shape, dtype) to the others.
_STAND_INS: dict = {}
_STAND_INS_BY_DTYPE: dict = {}


def _stand_in(shape: tuple, dtype) -> Unsaved:
    u = _STAND_INS.get(shape)
    if u is None:
        if len(_STAND_INS) >= 4096:   # many distinct shapes (variable-length data): start again
            _STAND_INS.clear()
        u = _STAND_INS[shape] = _unsaved(shape, dtype)
        return u
    u = _STAND_INS_BY_DTYPE.get((shape, dtype))
    if u is None:
        if len(_STAND_INS_BY_DTYPE) >= 4096:
            _STAND_INS_BY_DTYPE.clear()
        u = _STAND_INS_BY_DTYPE[shape, dtype] = _unsaved(shape, dtype)
    return u


class _NoneSaved(tuple):
    """The saved entries of a node whose declaration saves inputs, none of which its gradients needed (``x * 2``:
    mul saves ``x`` for the other input's gradient only): all None, and no per-input unpacking in backward. Still
    freed by backward, as PyTorch frees the node's SavedVariables."""

    __slots__ = ()


_NONE_SAVED: dict = {}


def _none_saved(n: int) -> _NoneSaved:
    s = _NONE_SAVED.get(n)
    if s is None:
        s = _NONE_SAVED[n] = _NoneSaved((None,) * n)
    return s


_OUT_NOT_SAVED = _unsaved(None, None)


def _save_when(name: str, vjps, edge_pos, saves: dict) -> tuple:
    """``Primitive._when`` from a dict ``saves`` (see the module docstring); an entry naming every input that has a
    rule is the same as saving always (None: nothing to check when recording)."""
    if type(vjps) is not tuple:
        raise ValueError(f"defprim({name!r}): a dict saves= needs one VJP rule per input")
    n = len(vjps)
    ruled = {i for i in range(n) if vjps[i] is not None and (edge_pos is None or i in edge_pos)}
    when = []
    for j in range(n):
        readers = saves.get(j)
        if readers is not None and (not isinstance(readers, tuple) or not set(readers) <= set(range(n))):
            raise ValueError(f"defprim({name!r}): saves[{j}] must be a tuple of input positions, got {readers!r}")
        when.append(None if readers is None or ruled <= set(readers) else readers)
    if not set(saves) <= set(range(n)):
        raise ValueError(f"defprim({name!r}): saves= names inputs {sorted(saves)}, but it has {n}")
    return tuple(when) if any(w is not None for w in when) else None


def _rule_error(prim, kind, i, args, e) -> Exception | None:
    """The error for a rule that read an input its declaration does not save (None: not that case)."""
    if isinstance(e, _UnsavedRead):
        stand_in = e.stand_in
    elif isinstance(e, TypeError) and "Unsaved" in str(e):
        stand_in = next((a for a in args if type(a) is Unsaved), None)
    else:
        return None
    if stand_in is _OUT_NOT_SAVED:
        what = "the output, which its declaration does not save (add saves_out=True)"
    else:
        # stand-ins are shared per (shape, dtype): inputs alike in both are all candidates
        pos = [j for j, a in enumerate(args) if a is stand_in] or ["?"]
        which = " or ".join(map(str, pos))
        what = (f"input {which}, which its declaration does not save (add {which} to saves=)" if len(pos) == 1 else
                f"one of inputs {which} (the same shape and dtype), which its declaration does not save "
                f"(add the one it reads to saves=)")
    return RuntimeError(f"ember: the {kind} rule for input {i} of primitive '{prim.name}' reads {what}")


def _wrong_shape(prim, i, got, want) -> RuntimeError | None:
    """None if gradient shape ``got`` sums down to ``want`` (undoing broadcasting), else the error."""
    lead = len(got) - len(want)
    if lead >= 0 and all(w == 1 or w == s for w, s in zip(want, got[lead:])):
        return None
    return RuntimeError(f"ember: the VJP rule for input {i} of primitive '{prim.name}' returned a gradient of "
                        f"shape {list(got)}, but the input has shape {list(want)}")


def _unpack_checked(s: SavedTensor, graph: bool, node=None):
    """A saved-tensor hook's unpacked value for a rule: as in PyTorch's formulas, one whose shape does not
    broadcast with the saved tensor's fails with PyTorch's broadcast error (not NumPy's ValueError in the rule);
    one that broadcasts, or has another dtype, is computed with as PyTorch does."""
    v = s.unpack(node) if graph else s.unpack_data()
    got = (v._data if graph else v).shape
    if got != s._shape:
        err = broadcast_error((s._shape, got))
        if err is not None:
            raise err
    return v


class PrimNode(Node):
    """The backward node of a primitive; subclassed once per PyTorch name (``MulBackward0``).

    ``_in`` holds ``(shape, dtype)`` for each tensor input and the value of each Python scalar input;
    ``_saved`` holds ``(tensor, version)`` for each tensor input the declaration saves (None for the
    others), or None when it saves none. Rules see a saved input's value, an unsaved tensor input as an
    ``Unsaved`` stand-in (shape and dtype only), and a scalar input's value.
    """

    __slots__ = ("_prim", "_params", "_saved", "_in", "_out", "_out_vc", "_out_v")

    def _release(self) -> None:
        if self._saved is not None or self._out is not None:
            self._saved = FREED
            self._out = None

    def _args(self, graph: bool) -> list:
        """What the rules get for each input of a node that saved some (see the class docstring)."""
        saved = self._saved
        if type(saved) is not list:   # (a list subclass: saved through hooks, or with extra tensors)
            return self._args_hooked(graph)
        args = []
        for i, m in enumerate(self._in):
            sv = saved[i]
            if sv is not None:
                t, v = sv
                if t._vc[0] != v:
                    raise RuntimeError(modified_message(t, v, saver=self))
                args.append(t if graph else t._data)
            else:
                args.append(m)   # the stand-in of an unsaved tensor input, or a scalar input's value
        return args

    def _args_hooked(self, graph: bool) -> list:
        """_args for a node that saved through saved-tensor hooks, or saved extra tensors (``save_extra``): each
        entry packed by hooks comes from its unpack hook (as PyTorch, the version check is then the hooks'
        business, not autograd's); the others have their versions checked. The extra tensors, after the
        inputs' entries, are checked (or unpacked) only: the rules read them through the params."""
        saved = self._saved
        args = []
        in_ = self._in
        n = len(in_)
        for i, sv in enumerate(saved):
            if sv is not None:
                t, v = sv
                if type(t) is SavedTensor:
                    a = _unpack_checked(t, graph) if i < n else t.unpack(self) if graph else t.unpack_data()
                else:
                    if t._vc[0] != v:
                        raise RuntimeError(modified_message(t, v, saver=self))
                    a = t if graph else t._data
                if i < n:
                    args.append(a)
            elif i < n:
                args.append(in_[i])
        return args

    def _unpack_out(self, graph: bool):
        if type(self._out) is SavedTensor:
            if not graph:
                return _unpack_checked(self._out, False)
            t = _unpack_checked(self._out, True, self)
        else:
            vc = self._out_vc
            if vc[0] != self._out_v:
                raise RuntimeError(modified_message(None, self._out_v, self._out, vc[0], self))
            if not graph:
                return self._out
            t = make(self._out)
            t.grad_fn = self
            t._requires_grad = True
        if fwd_state.level:
            h = self.__dict__.get("_out_fw")
            if h is not None and h._fw_grad is not None:
                t._fw_grad = h._fw_grad
                track_tangent(t)
        return t

    def apply(self, grads, create_graph, needed, batch: int = 0):
        """The gradients of the node's inputs: the one loop that runs a primitive's VJP rules, three ways. Plain
        backward (the hot path): raw arrays and the device's namespace. ``create_graph``: Tensors and graph_ns,
        so the gradients are differentiable. ``batch`` rows (``is_grads_batched``, via ``apply_batched``):
        gradients with a leading batch dimension, all rows at once."""
        g = grads[0]
        prim = self._prim
        saved = self._saved
        if saved is None or type(saved) is _NoneSaved:   # no input saved: the rules get stand-ins and scalars
            args = self._in
        elif saved is FREED:
            raise RuntimeError(FREED_MESSAGE)
        else:
            args = self._args(create_graph)
        if create_graph:
            out = self._unpack_out(True) if prim.saves_out else _OUT_NOT_SAVED
            xp = graph_ns
        else:
            if prim.saves_out:
                out = self._out
                if type(out) is not _ndarray or self._out_vc[0] != self._out_v:
                    out = self._unpack_out(False)   # saved through hooks, another backend, or modified: the checks
            else:
                out = _OUT_NOT_SAVED
            xp = _NP_NS if type(g) is _ndarray else NAMESPACES[type(g)]
        params = self._params
        vjps = prim.vjps if not batch or prim.batch is True else prim.batch
        in_ = self._in
        res = []
        pos = prim.edge_pos
        # The rules' arguments spread by count (a call with *args, **params builds a tuple and a dict per rule)
        na = -1 if params else len(args)
        k = 0
        for node, _ in self.next_functions:
            if node is None or (needed is not None and not needed[k]):
                res.append(None)
            else:
                i = k if pos is None else pos[k]   # the input this edge belongs to
                try:
                    if na == 2:
                        gi = vjps[i](xp, g, out, args[0], args[1])
                    elif na == 1:
                        gi = vjps[i](xp, g, out, args[0])
                    else:
                        gi = vjps[i](xp, g, out, *args, **params)
                except (_UnsavedRead, TypeError) as e:
                    raise _rule_error(prim, "VJP", i, args, e) or e from None
                if gi is not None:
                    m = in_[i]
                    d = gi._data if create_graph else gi
                    if d.shape != (m.shape if not batch else (batch,) + tuple(m.shape)):
                        gi = self._fit(xp, i, gi, d.shape, m.shape, batch)
                    dt = d.dtype
                    if dt is not m.dtype and dt != m.dtype:
                        gi = xp.cast(gi, m.dtype)
                res.append(gi)
            k += 1
        return res

    _run_rules = apply   # the loop itself, for apply_batched (apply may be wrapped, e.g. by a test's spy)

    def apply_batched(self, grads, create_graph, needed):
        """``apply`` for gradients with a leading batch dimension (``autograd.grad(is_grads_batched=True)``),
        all rows at once; ``NotImplemented`` when the primitive is not declared batch-safe (or the node
        overrides ``apply``): the engine then runs ``apply`` row by row."""
        if not self._prim.batch or type(self).apply is not PrimNode.apply:
            return NotImplemented
        g = grads[0]
        if g is None:   # a multi-output primitive whose first output got no gradient: rows handle it
            return NotImplemented
        return self._run_rules(grads, create_graph, needed, (g._data if create_graph else g).shape[0])

    def _saved_attr(self, name: str):
        """``grad_fn._saved_<key>`` / ``_raw_saved_<key>`` (installed on each node class as properties:
        a ``__getattr__`` would slow every attribute access on nodes, the engine's hot path)."""
        raw = name.startswith("_raw_saved_")
        key = name[11:] if raw else name[7:]
        slots = saved_slots(self._prim, len(self._in))
        where = slots.get(key)
        if where is None and not raw:
            if key.endswith("_sym_sizes"):   # PyTorch keeps an unsaved input's sizes under this name
                i = slots.get(key[:-10])
                if type(i) is int and type(self._in[i]) is Unsaved:
                    return tuple(self._in[i].shape)
            params = self._params
            for k in params:
                if slots.get(("param", k), k) == key:
                    v = params[k]
                    return make(v) if type(v) is _ndarray else v   # index arrays: as tensors, as PyTorch
        if where is None or type(where) is tuple:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        if where == "out":
            if not self._prim.saves_out:
                raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
            if self._saved is FREED:
                raise RuntimeError(FREED_MESSAGE)
            return RawSaved(self, "out") if raw else self._unpack_out(True)
        m = self._in[where]
        if type(m) is not Unsaved:   # a Python scalar input (pow's exponent): its value
            if raw:
                raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
            return m
        if where not in self._prim.saves:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        if self._saved is FREED:
            raise RuntimeError(FREED_MESSAGE)
        return RawSaved(self, where) if raw else _saved_value(self, where)

    def _fit(self, xp, i, gi, got, shape, batch: int):
        """A rule's gradient ``gi`` of shape ``got`` brought to the input's ``shape`` (below the ``batch``
        dimension, if any) by undoing broadcasting; any other mismatch is an error naming the op."""
        prim = self._prim
        if not batch:
            err = _wrong_shape(prim, i, got, shape)
            if err is not None:
                raise err
            return xp.sum_to(gi, shape)
        want = (batch,) + tuple(shape)
        # Undo broadcasting below the batch dimension: (B, extra..., s...) -> (B, shape).
        lead = len(got) - len(want)
        if lead < 0 or got[0] != batch or _wrong_shape(prim, i, got[lead + 1:], shape) is not None:
            raise RuntimeError(f"ember: primitive '{prim.name}' is declared batch-safe, but its VJP rule for input "
                               f"{i} returned a gradient of shape {list(got)} for a batch of {batch} and an input "
                               f"of shape {list(shape)}")
        return xp.reshape(xp.sum_to(gi, (batch,) + (1,) * lead + tuple(shape)), want)


def _attr_property(name: str) -> property:
    return property(lambda node: node._saved_attr(name), doc=f"PyTorch's grad_fn.{name}")


def install_saved_attrs(prim: Primitive, cls: type | None = None) -> None:
    """Give the primitive's node class a property for each ``_saved_<name>`` / ``_raw_saved_<name>`` its
    nodes may show (inputs by their PyTorch names, ``result``, sizes, parameters); a node class shared by
    several primitives gets the union, and each property checks its own node's primitive. ``cls``: a node
    class an op passes to ``apply`` in place of the primitive's own."""
    cls = cls or prim.node_cls
    _INSTALLED.add((cls, prim))
    n = len(prim.vjps) if type(prim.vjps) is tuple else 2
    slots = saved_slots(prim, n)
    names = [k for k in slots if type(k) is str]
    names += [k + "_sym_sizes" for k in slots if type(k) is str and k != "result"]
    names += [slots.get(("param", p), p) for p in prim.param_names]
    for key in names:
        for attr in ("_saved_" + key, "_raw_saved_" + key):
            if attr not in cls.__dict__:
                setattr(cls, attr, _attr_property(attr))


_INSTALLED: set = set()   # (node class, primitive) pairs whose _saved_ properties are in place
_GENERIC_NAMES = {0: "self", 1: "other", "dims": "dim"}
_saved_slots_cache: dict = {}


def saved_slots(prim: Primitive, n_inputs: int) -> dict:
    """Where a primitive's ``_saved_<name>`` attributes come from: ``{name: input position}``, ``{"result":
    "out"}`` when it saves its output, and ``{("param", key): name}`` for keyword parameters PyTorch names
    differently (others keep their own name). Names: ``saved_names`` given to defprim (a tuple of input
    names, or a dict of positions and parameter keys), else ``self``, ``other``, ``input2``..., ``dim``."""
    key = (prim, n_inputs)
    slots = _saved_slots_cache.get(key)
    if slots is None:
        names = dict(_GENERIC_NAMES)
        given = prim.saved_names
        if given is not None:
            names.update(enumerate(given) if isinstance(given, tuple) else given)
        slots = {}
        for i in range(n_inputs):
            nm = names.get(i, f"input{i}")
            if nm is not None:
                slots[nm] = i
        for k, nm in names.items():
            if type(k) is str:
                slots[("param", k)] = nm
        if prim.saves_out:
            slots["result"] = "out"
        _saved_slots_cache[key] = slots
    return slots


def _saved_value(node: PrimNode, i: int):
    """What ``_saved_<input>`` shows: the saved tensor itself (PyTorch: the same object), or what the
    unpack hook gives back."""
    sv = node._saved[i]
    if sv is None:   # not saved: no input whose gradient reads it required grad (PyTorch: None)
        return None
    t, v = sv
    if type(t) is SavedTensor:
        return t.unpack()
    if t._vc[0] != v:
        raise RuntimeError(modified_message(t, v))
    return t


class RawSaved:
    """``grad_fn._raw_saved_<name>`` (``torch._C._autograd.SavedTensor``): the saved value, to unpack or to
    give a pair of pack/unpack hooks of its own."""

    __slots__ = ("_node", "_slot")

    def __init__(self, node: PrimNode, slot):
        self._node, self._slot = node, slot

    def _entry(self):
        node = self._node
        return node._out if self._slot == "out" else node._saved[self._slot][0]

    def unpack(self):
        node = self._node
        if node._saved is FREED:
            raise RuntimeError(FREED_MESSAGE)
        return node._unpack_out(True) if self._slot == "out" else _saved_value(node, self._slot)

    def register_hooks(self, pack_hook, unpack_hook) -> None:
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError("register_hooks(): incompatible function arguments: pack_hook and unpack_hook must "
                            "be callable")
        node = self._node
        if node._saved is FREED:
            raise RuntimeError(REGISTER_FREED_MESSAGE)
        if type(self._entry()) is SavedTensor:
            raise RuntimeError("Calling register_hooks on a saved tensor whose hooks have already been set. "
                               "Hint: only one pair of hooks is allowed at a time.")
        hooks = (pack_hook, unpack_hook)
        if self._slot == "out":
            node._out = pack_saved(node._unpack_out(True), True, hooks)
        else:
            saved = node._saved if type(node._saved) is _Hooked else _Hooked(node._saved)
            t, v = saved[self._slot]
            saved[self._slot] = (pack_saved(t, False, hooks), v)
            node._saved = saved


REGISTER_FREED_MESSAGE = (
    "Calling register_hooks on a saved tensor after it has been freed. Saved intermediate values of the graph are "
    "freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling backward.")

_NO_EDGE = (None, 0)
INFERENCE_SAVE_MESSAGE = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode in "
    "computation tracked by autograd. To work around this, you can make a clone to get a normal tensor and use it "
    "in autograd, or use `torch.no_grad()` instead of `torch.inference_mode()`.")


def apply(prim: Primitive, args: tuple, params: dict = _EMPTY, node_cls=None, dtype=None) -> Tensor:
    """Run ``prim`` on ``args`` (Tensors or Python scalars) and record it in the graph if needed: the one place
    an op's forward runs and its result is made and recorded.

    ``dtype`` (a NumPy dtype) is the computation dtype that array inputs of another dtype are cast to;
    by default the primitive's declared promotion decides it. ``KEEP_DTYPE``: cast nothing.
    The fast paths below (``fast_unary``, ``fast_operator``) are apply for the common case, with the
    preparation of its general cases (promotion, casts, stale views) skipped: they make their result with the
    same ``_result``.
    """
    if dtype is None:
        if prim.promote is not None:
            dtype = prim.promote(args)
    elif dtype is KEEP_DTYPE:
        dtype = None
    datas = []
    rg = False
    xp = None
    refuse_cx = prim.cx is None
    fp = _fp_quiet()
    try:
        for a in args:
            if isinstance(a, Tensor):
                if a._base is not None and a._vc[0] != a._view_v:
                    if _state.enabled:
                        VIEW_REFRESH.history(a)
                    elif fwd_state.level:
                        VIEW_REFRESH.tangent(a)
                    else:
                        VIEW_REFRESH.steps(a)   # its steps, for a view made of it
                d = a._data
                if xp is None:
                    xp = _NP_NS if type(d) is _ndarray else NAMESPACES[type(d)]
                if d.dtype.char in GATED:   # complex, float8, uint16/32/64: only some primitives take them
                    err = _gate_error(prim, d, dtype, refuse_cx, args)
                    if err is not None:
                        raise err
                if dtype is not None and d.dtype != dtype:
                    d = d.astype(dtype)   # float64 -> float16 may overflow: silently, as in PyTorch
                datas.append(d)
                if a._requires_grad:
                    rg = True
            elif dtype is _BF16 and (type(a) is float or type(a) is int) and (not datas or prim not in KEEP_NUMBERS):
                datas.append(_BF16.type(a))
            else:
                datas.append(a)
        try:
            out = prim.forward(xp, *datas, **params)
        except xp.backend.forward_errors as e:
            raise _forward_error(prim, args, e) from None
    finally:
        _fp_restore(fp)
    return _result(prim, args, params, node_cls, xp, out, datas, rg)


def _result(prim: Primitive, args: tuple, params: dict, node_cls, xp, out, datas, rg: bool) -> Tensor:
    """The tensor an op returns, made in this one place for apply and its fast paths: the forward's array ``out``
    wrapped, with its view bookkeeping, its graph record (or the flags of a result outside the graph) and its
    forward-mode tangent. ``rg``: whether some tensor input requires grad; ``datas``: the forward's inputs."""
    if type(out) is not _ndarray and type(out) not in xp.backend.array_types:
        # a NumPy scalar from a 0-d computation (or another device's array: a copy between devices)
        out = NAMESPACES.get(type(out), xp).backend.asarray(out)
    t = _new(Tensor)   # make() inlined: this runs once per op
    t._data = out
    t._output_nr = 0
    # reshape may have had to copy; an empty result shares no memory but is a view all the same, as PyTorch's
    if prim.is_view and (xp.backend.may_share_memory(out, datas[0]) or out.size == 0):
        base = args[0]
        if base._inference:
            t._inference = True   # a view of an inference tensor is one, inside the mode or not
        t._vc = base._vc
        t._view_v = base._vc[0]
        if base._base is None:
            t._base = base
            t._view_steps = ((prim, params),)
            t._view_nograd = not _state.enabled and base._requires_grad
        else:
            t._base = base._base
            t._view_steps = base._view_steps + ((prim, params),)
            t._view_nograd = base._view_nograd or (not _state.enabled and base._requires_grad)
    else:
        t._vc = [0]
        t._base = None
    if rg and _state.enabled:
        _record(t, prim, args, params, node_cls)
    else:
        t.grad_fn = None
        # PyTorch: a view made under no_grad of a tensor that requires grad requires grad too (with no
        # history: _record gives it no edge).
        t._requires_grad = rg and prim.is_view and t._base is not None
        if rg:
            t._origin = prim   # cut from the graph by no_grad: autograd.explain names the op
        if _state.inference and t._base is None:
            t._inference = True   # made inside inference_mode (a view shares its base's kind)
    if fwd_state.level:
        fp = _fp_quiet()
        try:
            _forward_tangent(t, prim, args, params)
        finally:
            _fp_restore(fp)
    return t


def observe_results(fn):
    """Context manager (ember.onnx's tracer): while it is active, every op result ``_result`` makes is also
    handed to ``fn(prim, args, params, t)``. It swaps this module's ``_result`` (which apply and the fast paths
    look up by name when they run), so the hot path pays nothing when no one observes."""
    return _Observing(fn)


class _Observing:
    def __init__(self, fn) -> None:
        self.fn = fn
        self.inner = None

    def __enter__(self):
        global _result
        inner = self.inner = _result
        fn = self.fn

        def observed(prim, args, params, node_cls, xp, out, datas, rg):
            t = inner(prim, args, params, node_cls, xp, out, datas, rg)
            fn(prim, args, params, t)
            return t
        _result = observed
        return self

    def __exit__(self, *exc) -> None:
        global _result
        _result = self.inner


# Every fast path made (fast_unary's and fast_operator's functions): the profiler swaps their code for their general
# case while it records (autograd/_profiling.py), so that they go through the recorded apply.
FAST_PATHS: list = []


def fast_unary(prim: Primitive, slow):
    """``ember.<op>(input)`` for a unary float op ``prim`` (not a view op): ``apply`` with its arrays prepared, for a
    float Tensor that is no view; ``slow(input)`` (its argument and dtype checks, then ``apply``) for anything else.
    ``fast_operator`` is its twin for binary operators."""

    fwd = prim.forward

    def fn(input: Tensor) -> Tensor:
        if type(input) is not Tensor or input._base is not None:
            return slow(input)
        d = input._data
        dt = d.dtype   # float16/32/64, bfloat16 (float32 and float64 by identity: .char costs more)
        if dt is not _F32 and dt is not _F64 and dt.char not in "efdE":
            return slow(input)
        xp = _NP_NS if type(d) is _ndarray else NAMESPACES[type(d)]
        fp = _fp_quiet()
        try:
            out = fwd(xp, d)
        except xp.backend.forward_errors:
            return apply(prim, (input,), _EMPTY, None, KEEP_DTYPE)   # raises with its message
        finally:
            _fp_restore(fp)
        return _result(prim, (input,), _EMPTY, None, xp, out, None, input._requires_grad)
    FAST_PATHS.append(fn)
    return fn


def fast_operator(prim: Primitive, slow):
    """The binary operator method (``Tensor.__mul__``) of ``prim`` (not a view op): ``apply`` with its arrays
    prepared, for a float tensor that is no view and a Python number or a tensor of its dtype that is no view; ``slow(self, other)``
    for everything else."""

    fwd = prim.forward

    def op(self, other):
        d = self._data
        dt = d.dtype   # float16/32/64, bfloat16 (float32 and float64 by identity: .char costs more)
        if (dt is not _F32 and dt is not _F64 and dt.char not in "efdE") or self._base is not None:
            return slow(self, other)
        to = type(other)
        if to is float or (to is int and -0x8000000000000000 <= other < 0x10000000000000000):
            od = other
            rg = self._requires_grad
        elif to is Tensor and other._base is None and ((od := other._data).dtype is dt or od.dtype == dt):
            rg = self._requires_grad or other._requires_grad
        else:
            return slow(self, other)
        xp = _NP_NS if type(d) is _ndarray else NAMESPACES[type(d)]
        fp = _fp_quiet()
        try:
            out = fwd(xp, d, od)
        except xp.backend.forward_errors:
            return apply(prim, (self, other), _EMPTY, None, KEEP_DTYPE)   # raises with its message
        finally:
            _fp_restore(fp)
        return _result(prim, (self, other), _EMPTY, None, xp, out, None, rg)
    FAST_PATHS.append(op)
    return op


def _record(t: Tensor, prim: Primitive, args: tuple, params: dict, node_cls) -> None:
    if node_cls is None:
        node = _new(prim.node_cls)
    else:
        if (node_cls, prim) not in _INSTALLED:
            install_saved_attrs(prim, node_cls)
        node = _new(node_cls)
    # Per input: its graph edge, and what backward knows of it unsaved (a stand-in with its shape and
    # dtype; a scalar input's value).
    edges = []
    meta = []
    for a in args:
        if isinstance(a, Tensor):
            fn = a.grad_fn
            if fn is not None:
                edges.append((fn, a._output_nr))
            elif a._requires_grad and not (a._base is not None and a._view_nograd):
                edges.append((grad_accumulator(a), 0))
            else:
                edges.append(_NO_EDGE)
            d = a._data
            shape = d.shape
            u = _STAND_INS.get(shape)   # (by shape, the dtype compared by identity: hashing a dtype is slow)
            meta.append(u if u is not None and u.dtype is d.dtype else _stand_in(shape, d.dtype))
        else:
            edges.append(_NO_EDGE)
            meta.append(a)
    pos = prim.edge_pos
    node.next_functions = tuple(edges) if pos is None else tuple(edges[j] for j in pos)
    node._seq = next(_seq)
    cx = prim.cx
    if cx is not prim and cx is not None:
        dt = t._data.dtype   # (the output first, inline; float32 and float64 by identity: .kind costs more)
        if dt is not _F32 and dt is not _F64 and dt.kind == "c" or prim.cx_in and _is_complex_node(prim, t, args):
            prim = cx   # the node of a complex computation runs its complex rules (and saves what they read)
    node._prim = prim
    node._params = params
    node._in = meta
    saves = prim.saves
    if saves:
        when = prim._when
        if when is not None and node_cls is not None and node_cls.apply is not PrimNode.apply:
            when = None   # a node of its own reads what it likes
        n = len(args)
        saved = None
        for i in prim.save_order:
            if i >= n:
                break
            a = args[i]
            if isinstance(a, Tensor):
                w = None if when is None else when[i]
                if w is not None:
                    for k in w:
                        if edges[k] is not _NO_EDGE:
                            break
                    else:   # no input whose gradient reads it needs a gradient
                        continue
                if a._inference:
                    raise RuntimeError(INFERENCE_SAVE_MESSAGE)
                if saved is None:
                    saved = [None] * n
                saved[i] = (a, a._vc[0])
        node._saved = saved if saved is not None else _NONE_SAVED.get(n) or _none_saved(n)
    else:
        node._saved = None
    t.grad_fn = node
    t._requires_grad = True
    if prim.saves_out:
        node._out = t._data
        node._out_vc = t._vc
        node._out_v = 0
    else:
        node._out = None
    if _anomaly.enabled:
        record_stack(node)   # the forward traceback (off: this one test is all it costs)
    if NODE_OBSERVERS:
        for observe in NODE_OBSERVERS:   # ember.viz.record(): the forward value of each new node
            observe(node, t)
    if HOOKS_ON and (saves or prim.saves_out):
        _pack_all(node, t, current_hooks())


class _Hooked(list):
    """A node's saved entries when some went through saved-tensor hooks (backward's cue to unpack), or when it
    saved extra tensors after its inputs' entries (``save_extra``): ``PrimNode._args_hooked`` reads them."""

    __slots__ = ()


def save_extra(node: PrimNode, tensors) -> None:
    """Save ``tensors`` for ``node``'s backward beside its inputs: tensors its rules read through its params, not
    as inputs (the index tensor of gather, x[idx], scatter...; a mask; the indices that sort and max return). As
    PyTorch's SavedVariables: backward refuses one changed in place since (PyTorch's message), an inference
    tensor cannot be saved, saved-tensor hooks pack them (the rules still read the params' arrays), and backward
    frees them. Called by ``apply_saving`` and ``apply_inplace`` right after the node is recorded."""
    saved = node._saved
    entries = _Hooked(saved if saved is not None else (None,) * len(node._in))
    hooks = current_hooks() if HOOKS_ON else None
    for k in tensors:
        if k._inference:
            raise RuntimeError(INFERENCE_SAVE_MESSAGE)
        entries.append((k, k._vc[0]) if hooks is None else (pack_saved(k, False, hooks), k._vc[0]))
    node._saved = entries


def apply_saving(prim: Primitive, args: tuple, params: dict, node_cls=None, saved: tuple = (), dtype=None) -> Tensor:
    """``apply``, and ``save_extra(node, saved)`` when the result is recorded: for ops whose params hold an index
    taken from a tensor (the index tensor is saved with its version, as PyTorch saves it)."""
    t = apply(prim, args, params, node_cls, dtype)
    if t.grad_fn is not None and saved:
        save_extra(t.grad_fn, saved)
    return t


def _pack_all(node, t: Tensor, hooks) -> None:
    """Saved-tensor hooks are active: keep pack(tensor) for each saved input, then the output."""
    if hooks is None:   # hooks pushed in another thread only
        return
    if node._saved is not None:
        node._saved = _Hooked(None if sv is None else (pack_saved(sv[0], False, hooks), sv[1])
                              for sv in node._saved)
    if node._out is not None:
        node._out = pack_saved(t, True, hooks)


def _forward_tangent(t: Tensor, prim: Primitive, args: tuple, params: dict) -> None:
    if not any(isinstance(a, Tensor) and a._fw_grad is not None for a in args):
        return
    cx = prim.cx
    if cx is not None and cx is not prim and _is_complex_node(prim, t, args):
        prim = cx   # its JVP rules for complex values
    # Tangent formulas run on the primals only: no tangents of tangents at this level.
    level, fwd_state.level = fwd_state.level, 0
    try:
        tangent = None
        kind = prim.jvp_kind
        if kind == "linear":
            tangent = apply(prim, tuple(_tangent_or_zero(a) for a in args), params)
        elif kind == "multilinear":
            for i, a in enumerate(args):
                if isinstance(a, Tensor) and a._fw_grad is not None:
                    c = apply(prim, args[:i] + (a._fw_grad,) + args[i + 1:], params)
                    tangent = c if tangent is None else tangent + c
        elif prim.jvps is None:
            # PyTorch's words (the few primitives without a JVP are those PyTorch has none for either)
            raise NotImplementedError(f"Trying to use forward AD with {prim.name} that does not support it because "
                                      "it has not been implemented yet.")
        else:
            # The rules read the output as a tensor: t itself when it is recorded, so that a gradient of the
            # tangent flows through the output to the inputs (reverse over forward: d/dx of tanh's tangent
            # t * (1 - y^2) reaches x through y too)
            primal_out = t if t.grad_fn is not None else make(t._data)
            for i, a in enumerate(args):
                if isinstance(a, Tensor) and a._fw_grad is not None:
                    try:
                        c = prim.jvps[i](graph_ns, a._fw_grad, primal_out, *args, **params)
                    except (_UnsavedRead, TypeError) as e:
                        err = _rule_error(prim, "JVP", i, args, e)
                        if err is None:
                            raise
                        raise err from None
                    if c is not None:
                        tangent = c if tangent is None else tangent + c
        if tangent is not None:
            if tangent._data.shape != t._data.shape:
                tangent = graph_ns.expand(tangent, t._data.shape)
            if tangent._data.dtype != t._data.dtype:
                tangent = graph_ns.cast(tangent, t._data.dtype)
            t._fw_grad = tangent
            track_tangent(t)
            if prim.saves_out and t.grad_fn is not None:
                # the saved output must come back with its tangent (forward-over-reverse: the tangent of
                # a gradient computed with create_graph uses it); held apart so that no cycle forms
                t.grad_fn.__dict__["_out_fw"] = _tangent_holder(t)
    finally:
        fwd_state.level = level


def _tangent_holder(t: Tensor) -> Tensor:
    h = make(t._data)
    h._fw_grad = t._fw_grad
    track_tangent(h)   # cleared with every other tangent when the level exits
    return h


def _tangent_or_zero(a):
    if not isinstance(a, Tensor):
        return 0   # a Python scalar input is a constant: its tangent is zero
    return a._fw_grad if a._fw_grad is not None else graph_ns.zeros_like(a)


def _describe(args) -> str:
    parts = []
    for a in args:
        if isinstance(a, Tensor):
            parts.append(f"Tensor(shape={list(a._data.shape)}, dtype={a.dtype})")
        else:
            parts.append(repr(a))
    return ", ".join(parts)


def broadcast_error(shapes) -> RuntimeError | None:
    """PyTorch's message for two shapes that do not broadcast, or None if they do."""
    a, b = shapes
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    for i in range(n - 1, -1, -1):
        if pa[i] != pb[i] and pa[i] != 1 and pb[i] != 1:
            return RuntimeError(f"The size of tensor a ({pa[i]}) must match the size of tensor b ({pb[i]}) "
                                f"at non-singleton dimension {i}")
    return None


def _forward_error(prim, args, e) -> Exception:
    shapes = [a._data.shape for a in args if isinstance(a, Tensor)]
    if len(shapes) == 2 and "broadcast" in str(e):
        err = broadcast_error(shapes)
        if err is not None:
            return err
    kind = IndexError if isinstance(e, IndexError) else RuntimeError
    return kind(f"{prim.name}(): {e} (arguments: {_describe(args)})")



class VIEW_REFRESH:
    """How ``apply`` brings a stale view (its base was changed in place since) up to date. The view machinery
    (``_views``) is built on ``apply`` and fills these slots when it is imported (``ember.autograd`` imports it):
    a slot instead of an import, so that the two modules form no cycle."""
    history = None   # refresh_view(v): rebuild the view's history from its base's
    tangent = None   # refresh_tangent(v): rebuild its forward-mode tangent
    steps = None     # current_steps(v): its view steps from its base's current layout
