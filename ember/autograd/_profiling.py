"""The profiler's recording machinery, at the autograd level: what runs per op and per backward node while a
profiler records, and nothing at all while none does.

How it hooks in without slowing the hot path: while at least one profiler records (``start``), the code of
``_primitive.apply`` and of every fast path (``fast_unary``/``fast_operator`` closures, listed in
``_primitive.FAST_PATHS``) is swapped for an entry that records a range around the original (the fast paths
fall back to their general case, which goes through the recorded ``apply``); the engine tests one module
attribute per ``backward`` call (``NODE_HOOK``) and, when it is set, sends every node through it. ``stop`` of
the last profiler swaps the original code back. So with no profiler, not one instruction more runs per op.

What is recorded (raw, cheap): one ``Range`` per op, backward node or ``record_function`` region, with its
name (PyTorch's: ``aten::addmm``, ``autograd::engine::evaluate_function: AddmmBackward0`` around
``AddmmBackward0``, ``torch::autograd::AccumulateGrad``), start and end (``time.perf_counter_ns``), thread,
input shapes (``record_shapes``), the Python stack (``with_stack``); and memory records ``(time, bytes)`` for
the arrays ops and nodes allocate and, when they are freed, release (``profile_memory``). The user-facing
classes (``ember.autograd.profiler``, ``ember.profiler``) turn them into PyTorch's ``FunctionEvent`` lists.
"""
from __future__ import annotations

import os
import re
import sys
import threading
import time
import types
import weakref

from .. import _dtype as D
from .._state import code_swaps
from .._tensor import Tensor
from . import _primitive

# ----- the sessions and what they record ---------------------------------------------------------------

FORWARD, BACKWARD, USER = 0, 1, 2   # PyTorch's RecordScope: FUNCTION, BACKWARD_FUNCTION, USER_SCOPE


class Range:
    """One recorded range (an op, a backward node, a record_function region)."""

    __slots__ = ("name", "start", "end", "thread", "shapes", "stack", "scope", "seq", "user", "flops")

    def __init__(self, name: str, scope: int, thread: int, shapes, stack, seq: int = -1):
        self.name, self.scope, self.thread, self.shapes, self.stack, self.seq = name, scope, thread, shapes, stack, seq
        self.user = scope == USER
        self.flops = 0
        self.end = None
        self.start = time.perf_counter_ns()


class Session:
    """What one profiler collects between its start and stop: ranges and memory records, in order."""

    def __init__(self, record_shapes: bool = False, profile_memory: bool = False, with_stack: bool = False,
                 with_flops: bool = False):
        self.record_shapes, self.profile_memory, self.with_stack = record_shapes, profile_memory, with_stack
        self.with_flops = with_flops
        self.ranges: list[Range] = []
        self.memory: list[tuple] = []   # (time_ns, bytes, thread): + allocated, - freed
        self.start_ns = self.end_ns = None


_SESSIONS: list[Session] = []
_LOCK = threading.Lock()
_shapes = _memory = _stack = _flops = False   # the union of the active sessions' options
_threads: dict[int, int] = {}        # threading ident -> PyTorch-style small thread number (1, 2, ...)
OP = threading.local()                # .name: the public op being recorded on this thread (autograd/profiler.py)
NODE_HOOK = None                      # set while recording: the engine sends each node through it
# the wall clock at perf_counter_ns() == 0, for traces (their timestamps are absolute, as PyTorch's)
WALL_BASE_NS = time.time_ns() - time.perf_counter_ns()


def thread_number() -> int:
    ident = threading.get_ident()
    n = _threads.get(ident)
    if n is None:
        n = _threads[ident] = len(_threads) + 1
    return n


def is_recording() -> bool:
    return bool(_SESSIONS)


def _options() -> None:
    global _shapes, _memory, _stack, _flops
    _shapes = any(s.record_shapes for s in _SESSIONS)
    _memory = any(s.profile_memory for s in _SESSIONS)
    _stack = any(s.with_stack for s in _SESSIONS)
    _flops = any(s.with_flops for s in _SESSIONS)


def start(session: Session) -> None:
    """Begin recording into ``session`` (several may record at once: each sees every range in its window)."""
    session.start_ns = time.perf_counter_ns()
    with _LOCK:
        if session in _SESSIONS:
            return
        _SESSIONS.append(session)
        _options()
        if len(_SESSIONS) == 1:
            try:
                _install()
            except BaseException:
                _uninstall()
                _SESSIONS.remove(session)
                _options()
                raise


def stop(session: Session) -> None:
    """Stop recording into ``session``; the last one to stop takes the hooks out."""
    with _LOCK:
        if session not in _SESSIONS:
            return
        _SESSIONS.remove(session)
        _options()
        if not _SESSIONS:
            _uninstall()
    session.end_ns = time.perf_counter_ns()


# ----- ranges ----------------------------------------------------------------------------------------------

def _python_stack() -> list:
    """The user's Python stack, innermost first, as PyTorch formats it ("file.py(12): forward"), without ember's
    own frames."""
    out = []
    f = sys._getframe(2)
    while f is not None:
        code = f.f_code
        if not _is_ember(code.co_filename):
            out.append(f"{code.co_filename}({f.f_lineno}): {code.co_name}")
        f = f.f_back
    return out


_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _is_ember(path: str) -> bool:
    return path.startswith(_EMBER_DIR) or path.startswith("<ember")   # (the swapped entries' code too)


def begin(name: str, scope: int = FORWARD, inputs=(), seq: int = -1) -> Range:
    """Open a range; ``inputs``: the op's arguments (their shapes are recorded with ``record_shapes``)."""
    r = Range(name, scope, thread_number(), [_shape_of(a) for a in inputs] if _shapes else None,
              _python_stack() if _stack else None, seq)
    for s in _SESSIONS:
        s.ranges.append(r)
    return r


def end(r: Range) -> None:
    r.end = time.perf_counter_ns()


def record_memory(arrays, inputs=None) -> None:
    """Count ``arrays`` (just made by the op or node being recorded) as allocated now, and as freed when they go.
    A view owns no memory; but a result may be an array view of a temporary the kernel made (a reshape of its
    result): ``inputs`` (the op's input arrays, the node's incoming gradients) are then the only arrays a view
    does not count for, with broadcast views (a zero stride), which take no memory."""
    if not _memory:
        return
    now = time.perf_counter_ns()
    th = thread_number()
    for a in arrays:
        n = getattr(a, "nbytes", 0)
        base = getattr(a, "base", None)
        if not n or (base is not None and (inputs is None or any(a is g or base is g for g in inputs)
                                           or 0 in getattr(a, "strides", ()))):
            continue
        for s in _SESSIONS:
            if s.profile_memory:
                s.memory.append((now, n, th))
        try:
            weakref.finalize(a, _freed, n, th)
        except TypeError:   # an array type without weak references: its free is not seen
            pass


def _freed(n: int, th: int) -> None:
    if _memory:
        now = time.perf_counter_ns()
        for s in _SESSIONS:
            if s.profile_memory:
                s.memory.append((now, -n, th))


# ----- PyTorch's names of ember's primitives -----------------------------------------------------------------

_ATEN: dict = {}
_CAMEL = r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])"   # AvgPool2DWithIndices: avg_pool2d_with_indices
# ATen's private ops behind these nodes
_UNDERSCORED = {n: "_" + n for n in ("to_copy", "unsafe_view", "softmax_backward_data", "log_softmax_backward_data",
                                     "standard_gamma", "standard_gamma_grad", "prelu_kernel", "prelu_kernel_backward",
                                     "safe_softmax", "trilinear", "unique2", "fft_c2c", "fft_r2c", "fft_c2r")}
_UNDERSCORED.update({"grid_sampler2d": "grid_sampler_2d", "grid_sampler2d_backward": "grid_sampler_2d_backward",
                     "grid_sampler3d": "grid_sampler_3d", "smooth_l1loss": "smooth_l1_loss",
                     "smooth_l1loss_backward": "smooth_l1_loss_backward"})


def aten_name(prim, node_cls=None) -> str:
    """``aten::<name>`` of a primitive, from PyTorch's name of its backward node (``AddmmBackward0`` ->
    ``aten::addmm``, ``MseLossBackward0`` -> ``aten::mse_loss``, a permute recorded as ``TBackward0`` ->
    ``aten::t``; ember's primitive names are its own)."""
    cls = node_cls or prim.node_cls
    name = _ATEN.get(cls)
    if name is None:
        name = _ATEN[cls] = node_aten_name(cls.__name__) or "aten::" + prim.name
    return name


def node_aten_name(node: str) -> str | None:
    """The ATen op whose backward node PyTorch names ``node`` (``AddmmBackward0`` -> ``aten::addmm``,
    ``Log1PBackward0`` -> ``aten::log1p``, ``ToCopyBackward0`` -> ``aten::_to_copy``); None for a node of no op."""
    m = re.fullmatch(r"(\w+?)Backward\d+", node)
    if m is None:
        return None
    op = re.sub(_CAMEL, "_", m.group(1)).lower()
    return "aten::" + _UNDERSCORED.get(op, op)


# ----- the swapped code ------------------------------------------------------------------------------------

# PyTorch's binary ops wrap a Python scalar as a 0-d tensor (float64, int64, bool, complex128) and, when its dtype
# is not the op's computation dtype (x * 2 on a float32 x), convert it: aten::mul records aten::to >
# aten::_to_copy > (aten::empty_strided, aten::copy_) inside itself.
_WRAPPING = frozenset("aten::" + n + s for n in ("add", "sub", "mul", "div") for s in ("", "_")) | frozenset(
    "aten::" + n for n in ("eq", "ne", "lt", "le", "gt", "ge"))
_TO = (("to", (("_to_copy", (("empty_strided", ()), ("copy_", ()))),)),)


def scalar_cast(name: str, args, params=None) -> None:
    """Record, inside the op's range, the conversion of its wrapped Python scalar, where PyTorch's makes one."""
    if name not in _WRAPPING or len(args) < 2 or not isinstance(args[0], Tensor):
        return
    other = args[1] if not params or "other" not in params else params["other"]
    if type(other) not in (bool, int, float, complex):
        return
    wrapped = {bool: D.bool, int: D.int64, float: D.float64, complex: D.complex128}[type(other)]
    if D.result_type(args[0], other) is not wrapped:
        for child, grand in _TO:
            instant(child, grand)


def instant(name: str, children: tuple = ()) -> None:
    """A range ``aten::<name>`` of no work, holding ``children`` (each (name, its children))."""
    span(name, children, (), None)


def span(name: str, children: tuple, inputs, work):
    """A range ``aten::<name>`` holding ``children`` (each (name, its children)) one after another; the last
    child (or this range itself, without children) runs ``work`` and returns its result; ``work`` None: no work."""
    r = begin("aten::" + name, FORWARD, inputs)
    try:
        for child, grand in children[:-1]:
            span(child, grand, (), None)
        if children:
            return span(*children[-1], (), work)
        return work() if work is not None else None
    finally:
        r.end = time.perf_counter_ns()


# backward()'s implicit gradient of a scalar output: PyTorch's torch.ones_like(output), recorded as such
ONES_LIKE = (("empty_like", (("empty_strided", ()),)), ("fill_", ()))


def _op(prim, args, params, node_cls, dtype):
    """``apply`` while recording: the original inside a range named after the primitive."""
    name = aten_name(prim, node_cls)
    public = getattr(OP, "name", None)
    # the primitive of the public op being recorded (F.mse_loss; Tensor.mul_ computing mul): once
    if public is not None and (public == name or public == name + "_"):
        out = _apply_orig(prim, args, params, node_cls, dtype)
        if _memory and out._base is None:
            record_memory((out._data,), _arrays(args))
        return out
    r = begin(name, FORWARD, tuple(args) + tuple(params.values()) if _shapes and params else args)
    try:
        if public is None:   # (a public op records its own)
            scalar_cast(name, args, params)
        out = _apply_orig(prim, args, params, node_cls, dtype)
        if _memory and out._base is None:
            record_memory((out._data,), _arrays(args))   # inside the range: the op's own allocation
    finally:
        r.end = time.perf_counter_ns()
    if _flops:
        r.flops = flops(name, args, out)
    if out.grad_fn is not None:
        r.seq = getattr(out.grad_fn, "_seq", -1)   # links the op to its backward node (as PyTorch's sequence_nr)
    return out


def flops(name: str, args, out) -> int:
    """PyTorch's FLOP estimate of an op (torch/csrc/profiler/util.cpp ``computeFlops``): 2*M*K*N for a matrix
    product, 2*N*OH*OW*O*C*KH*KW for a 2-d convolution, one per element for add and mul; 0 for the rest."""
    try:
        if name in ("aten::mm", "aten::addmm"):
            a, b = (args[0], args[1]) if name == "aten::mm" else (args[1], args[2])
            (m, k), n = a.shape, b.shape[1]
            return 2 * m * k * n
        if name in ("aten::bmm", "aten::baddbmm"):
            a, b = (args[0], args[1]) if name == "aten::bmm" else (args[1], args[2])
            bs, m, k = a.shape
            return 2 * bs * m * k * b.shape[2]
        if name == "aten::conv2d":
            x, w = args[0], args[1]
            n, o, oh, ow = out.shape
            return 2 * n * oh * ow * o * x.shape[1] * w.shape[2] * w.shape[3]
        if name in ("aten::add", "aten::mul", "aten::add_", "aten::mul_"):
            return out.numel() if isinstance(out, Tensor) else 0
    except (AttributeError, ValueError, TypeError, IndexError):   # another overload's arguments: no estimate
        return 0
    return 0


def _arrays(args) -> list:
    return [a._data for a in args if isinstance(a, Tensor)]


def _apply_entry(prim, args, params, node_cls, dtype, *, _ember_profiler_run):
    return _ember_profiler_run(prim, args, params, node_cls, dtype)


def _fast_entries():
    fwd = prim = slow = None   # the closure variables of fast_unary's fn and fast_operator's op

    def fn(input):
        (fwd, prim)
        return slow(input)   # the general case: its checks, then the recorded apply

    def op(self, other):
        (fwd, prim)
        return slow(self, other)
    return fn.__code__, op.__code__


_FN_ENTRY, _OP_ENTRY = _fast_entries()
_apply_orig = None
_saved: list = []   # (function, code, kwdefaults) to put back


def _install() -> None:
    global _apply_orig, NODE_HOOK
    code_swaps[0] += 1
    fn = _primitive.apply
    if _apply_orig is None:
        _apply_orig = types.FunctionType(fn.__code__, fn.__globals__, "apply", fn.__defaults__, fn.__closure__)
    _saved.append((fn, fn.__code__, fn.__kwdefaults__))
    fn.__code__ = _renamed(_apply_entry.__code__, fn.__code__)
    fn.__kwdefaults__ = {"_ember_profiler_run": _op}
    for f in _primitive.FAST_PATHS:
        entry = _FN_ENTRY if f.__code__.co_argcount == 1 else _OP_ENTRY
        if entry.co_freevars != f.__code__.co_freevars:
            continue
        _saved.append((f, f.__code__, f.__kwdefaults__))
        f.__code__ = _renamed(entry, f.__code__)
    NODE_HOOK = _node
    for hook in EXTRA:
        hook(_saved)


# Factory functions (ember/ops/creation.py, ops/random.py register theirs): (function, PyTorch's op, the ranges
# PyTorch's composite records inside it). A child is (name, its children); the last child of each level spans the
# function's work (torch.ones records aten::ones > aten::empty, aten::fill_: the allocation, then the fill).
FACTORIES: list = []


# Upper layers' swaps (ember/autograd/profiler.py: the public ops), each a function that swaps its functions' code,
# appending to the list it is given (function, code, kwdefaults) to put back, as it goes.
EXTRA: list = []


def _renamed(entry: types.CodeType, code: types.CodeType) -> types.CodeType:
    """``entry`` under ``code``'s name (a traceback through a swapped function names the function)."""
    names = {"co_name": code.co_name}
    if hasattr(code, "co_qualname"):   # Python 3.11+
        names["co_qualname"] = code.co_qualname
    return entry.replace(**names)


def _uninstall() -> None:
    global NODE_HOOK
    NODE_HOOK = None
    code_swaps[0] += 1
    while _saved:
        f, code, kw = _saved.pop()
        f.__code__, f.__kwdefaults__ = code, kw


def _node(run_node, node, grads, *rest):
    """The engine's ``_run_node`` for one node while recording: PyTorch's two ranges around it."""
    name = node.name()
    seq = getattr(node, "_seq", -1)
    outer = begin("autograd::engine::evaluate_function: " + name, BACKWARD, (), seq)
    inner = begin(name, BACKWARD, [g if isinstance(g, Tensor) else _Shaped(g) for g in grads] if _shapes else (), seq)
    try:
        out = run_node(node, grads, *rest)
        if _memory and out:   # the gradients the node made, inside its range
            record_memory([g._data if isinstance(g, Tensor) else g for g in out if g is not None],
                          [g._data if isinstance(g, Tensor) else g for g in grads if g is not None])
    finally:
        inner.end = time.perf_counter_ns()
        outer.end = inner.end
    return out


class _Shaped:
    """A raw gradient array seen as an input whose shape ``record_shapes`` records."""

    __slots__ = ("shape",)

    def __init__(self, g):
        self.shape = getattr(g, "shape", None)


def _shape_of(a) -> list:
    """An input's shape as ``record_shapes`` lists it ([] for a non-tensor argument)."""
    if isinstance(a, Tensor):
        return list(a.shape)
    if type(a) is _Shaped:
        return list(a.shape) if a.shape is not None else []
    return []
